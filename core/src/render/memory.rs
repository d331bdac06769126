//! Memory chart layout: activation memory over time per device, with the limit and peaks.

use super::axis::{format_tick, ticks, TimeAxis};
use super::gantt::gutter_for;
use super::scene::{fit_text, text_width, Anchor, Item, Scene};
use super::theme::Theme;
use crate::sim::Timeline;
use crate::units::Units;

/// Layout settings. Lengths are CSS pixels; `scale` turns them into device pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryOptions {
    /// Width of the whole chart.
    pub width: f64,
    /// Height of the whole chart.
    pub height: f64,
    /// Device pixels per CSS pixel.
    pub scale: f64,
    /// Visible time range; `None` shows everything (keep it equal to the Gantt chart's).
    pub time_range: Option<(f64, f64)>,
    /// The per-device memory limit, drawn as a dashed line.
    pub limit: Option<f64>,
    /// The peak of the same compute orders without recompute and offload
    /// ([`crate::stats::Stats::peak_without_trade`]): a dotted line with what the trade saves.
    pub before: Option<f64>,
    /// Width of the left gutter; pass the Gantt chart's so the time axes line up.
    pub gutter: Option<f64>,
    /// A device to draw on top, thicker.
    pub highlight_device: Option<u32>,
    /// Title above the plot.
    pub title: String,
    /// What the numbers mean (ticks in GiB for bytes).
    pub units: Units,
}

impl Default for MemoryOptions {
    fn default() -> Self {
        MemoryOptions {
            width: 960.0,
            height: 220.0,
            scale: 1.0,
            time_range: None,
            limit: None,
            before: None,
            gutter: None,
            highlight_device: None,
            title: "Activation memory per device (unit of mem-f)".to_string(),
            units: Units::Cost,
        }
    }
}

const TOP: f64 = 40.0;
const BOTTOM: f64 = 26.0;

/// Lays out the memory curves of `timeline`.
pub fn memory_chart(timeline: &Timeline, opts: &MemoryOptions, theme: &Theme) -> Scene {
    let s = opts.scale.max(0.1);
    let devices = timeline.devices.len() as u32;
    let gutter = opts.gutter.unwrap_or_else(|| gutter_for(devices, opts.width));
    let mut scene = Scene::for_chart(opts.width, opts.height, s, theme);
    let axis = TimeAxis::for_chart(opts.time_range, timeline.end(), gutter, opts.width).scaled(s);
    let TimeAxis { t0, t1, .. } = axis;
    let (plot_top, plot_bottom) = memory_plot_band(opts);
    let (plot_top, plot_bottom) = (plot_top * s, plot_bottom * s);

    let peak = timeline.devices.iter().map(|d| d.peak_memory).fold(0.0, f64::max);
    let y_max = {
        let m = peak.max(opts.limit.unwrap_or(0.0)).max(opts.before.unwrap_or(0.0)).max(1e-9);
        m * 1.08
    };
    let y_of = |v: f64| plot_bottom - v / y_max * (plot_bottom - plot_top);

    // Background and y grid.
    scene.rect(axis.x0, plot_top, axis.x1, plot_bottom, theme.track);
    let (unit, suffix) = opts.units.memory_ticks(y_max);
    let (ys, ystep) = ticks(0.0, y_max / unit, 4);
    for &v in &ys {
        let y = y_of(v * unit);
        scene.line((axis.x0, y), (axis.x1, y), theme.grid, s);
        let label = format!("{}{suffix}", format_tick(v, ystep));
        scene.text(axis.x0 - 8.0 * s, y, &label, 11.0 * s, theme.muted, Anchor::End);
    }
    let (tunit, tsuffix) = opts.units.time_ticks(t1 - t0);
    let (ts, tstep) = ticks(t0 / tunit, t1 / tunit, ((opts.width - gutter) / 90.0).max(2.0) as usize);
    for &t in &ts {
        let x = axis.x(t * tunit);
        scene.line((x, plot_bottom), (x, plot_bottom + 4.0 * s), theme.muted, s);
        let label = format!("{}{tsuffix}", format_tick(t, tstep));
        scene.text(x, plot_bottom + 14.0 * s, &label, 11.0 * s, theme.muted, Anchor::Middle);
    }

    // Limit: a tinted band above it and a dashed line.
    if let Some(limit) = opts.limit.filter(|l| l.is_finite() && *l >= 0.0) {
        let y = y_of(limit);
        scene.items.push(Item::Rect {
            x0: axis.x0,
            y0: plot_top,
            x1: axis.x1,
            y1: y.max(plot_top),
            fill: theme.alert,
            alpha: 0.07,
            stroke: None,
        });
        scene.dashed_line((axis.x0, y), (axis.x1, y), theme.alert, 1.5 * s, 6.0 * s);
        let label = format!("limit {}", opts.units.memory(limit));
        scene.text(axis.x1 - 4.0 * s, y - 8.0 * s, &label, 11.0 * s, theme.alert, Anchor::End);
    }

    // What the trade saves: the peak without it, dotted, with the saving.
    if let Some(before) = opts.before.filter(|b| b.is_finite() && *b > peak) {
        let y = y_of(before);
        scene.dashed_line((axis.x0, y), (axis.x1, y), theme.muted, s, 2.0 * s);
        let label = format!(
            "peak without the trade {} · saves {}",
            opts.units.memory(before),
            opts.units.memory(before - peak)
        );
        // Left of the limit's label, which sits at the right end.
        let label = fit_text(&label, 11.0 * s, (axis.x1 - axis.x0) - 90.0 * s);
        scene.text(axis.x0 + 6.0 * s, y - 7.0 * s, &label, 11.0 * s, theme.muted, Anchor::Start);
    }

    // Curves: per pixel column keep the first, lowest, highest and last value (min/max
    // decimation), so a 400,000-pass timeline draws as fast as a small one.
    let order: Vec<u32> = {
        let mut v: Vec<u32> = (0..devices).filter(|d| Some(*d) != opts.highlight_device).collect();
        v.extend(opts.highlight_device.filter(|d| *d < devices));
        v
    };
    for d in order {
        let dt = &timeline.devices[d as usize];
        let color = theme.device_color(d, devices);
        let width = if Some(d) == opts.highlight_device { 2.5 * s } else { 1.5 * s };
        // Many overlapping curves need less horizontal detail: wider columns.
        let column = (f64::from(devices) / 16.0).clamp(1.0, 4.0) * s;
        let points = step_points(&dt.memory, &axis, &y_of, t0, t1, column);
        if points.len() >= 2 {
            scene.items.push(Item::Line { points, color, width });
        }
        // Peak marker at the first time the peak is reached.
        if let Some(p) = dt.memory.iter().find(|p| p.value >= dt.peak_memory && dt.peak_memory > 0.0) {
            if p.time >= t0 && p.time <= t1 {
                scene.items.push(Item::Dot { x: axis.x(p.time), y: y_of(p.value), r: 3.0 * s, color });
            }
        }
    }

    // Device legend: swatches for few devices, a ramp for many.
    let ly = 14.0 * s;
    let mut x = axis.x1;
    if devices <= 8 {
        for d in (0..devices).rev() {
            let label = format!("D{d}");
            let w = text_width(&label, 11.0 * s);
            scene.text(x, ly, &label, 11.0 * s, theme.muted, Anchor::End);
            x -= w + 4.0 * s;
            scene.rect(x - 10.0 * s, ly - 2.0 * s, x, ly + 2.0 * s, theme.device_color(d, devices));
            x -= 20.0 * s;
        }
    } else {
        let label = format!("device 0 → {}", devices - 1);
        scene.text(x, ly, &label, 11.0 * s, theme.muted, Anchor::End);
        x -= text_width(&label, 11.0 * s) + 8.0 * s;
        let steps = 24;
        let w = 60.0 * s / f64::from(steps);
        for i in 0..steps {
            let d = (f64::from(i) / f64::from(steps - 1) * f64::from(devices - 1)).round() as u32;
            let x0 = x - 60.0 * s + f64::from(i) * w;
            scene.rect(x0, ly - 3.0 * s, x0 + w, ly + 3.0 * s, theme.device_color(d, devices));
        }
        x -= 60.0 * s;
    }
    // The title, cut short where it would run into the legend (bold runs wider than the
    // estimate by up to a tenth).
    let room = (x - 12.0 * s - gutter * s) / TITLE_BOLDNESS;
    let title = fit_text(&opts.title, 13.0 * s, room);
    scene.bold_text(gutter * s, 14.0 * s, &title, 13.0 * s, theme.text, Anchor::Start);
    scene
}

/// The vertical span (top, bottom) of the memory chart's plot area in CSS pixels.
pub fn memory_plot_band(opts: &MemoryOptions) -> (f64, f64) {
    (TOP, (opts.height - BOTTOM).max(TOP + 20.0))
}

/// How much wider bold text runs than [`text_width`] estimates.
const TITLE_BOLDNESS: f64 = 1.1;

/// The step curve of `memory` in pixels, decimated to at most four points per column of
/// `column` pixels.
fn step_points(
    memory: &[crate::sim::MemPoint],
    axis: &TimeAxis,
    y_of: &dyn Fn(f64) -> f64,
    t0: f64,
    t1: f64,
    col_width: f64,
) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut column: Option<(i64, f64, f64, f64)> = None; // (column, min, max, last)
    let mut prev_value = 0.0;
    let push_column = |out: &mut Vec<(f64, f64)>, c: (i64, f64, f64, f64), entry: f64| {
        let x = c.0 as f64 * col_width;
        out.push((x, y_of(entry)));
        out.push((x, y_of(c.1)));
        out.push((x, y_of(c.2)));
        out.push((x, y_of(c.3)));
    };
    let mut entry = 0.0;
    for p in memory {
        let time = p.time.clamp(t0, t1);
        let col = (axis.x(time) / col_width).round() as i64;
        match &mut column {
            Some(c) if c.0 == col => {
                c.1 = c.1.min(p.value);
                c.2 = c.2.max(p.value);
                c.3 = p.value;
            }
            _ => {
                if let Some(c) = column.take() {
                    push_column(&mut out, c, entry);
                }
                entry = prev_value;
                column = Some((col, p.value.min(prev_value), p.value.max(prev_value), p.value));
            }
        }
        prev_value = p.value;
    }
    if let Some(c) = column {
        push_column(&mut out, c, entry);
    }
    out.push((axis.x(t1), y_of(prev_value)));
    out
}
