//! Gantt layout: one row per device, time on x, one bar per pass. All level-of-detail
//! decisions are made here, so the canvas and the SVG show the same thing.

use std::sync::Arc;

use super::axis::{format_tick, ticks, TimeAxis};
use super::focus::Focus;
use super::scene::{text_width, Anchor, Item, Scene};
use super::theme::{Cause, Theme};
use crate::gaps::Causes;
use crate::schedule::{CopyKind, Op, Pass, PassKind, Schedule};
use crate::sim::Timeline;
use crate::step::Step;
use crate::units::Units;

/// One schedule to draw: a panel of device rows.
#[derive(Clone, Copy, Debug)]
pub struct GanttPanel<'a> {
    /// Heading above the rows (e.g. the family name).
    pub title: Option<&'a str>,
    /// A short line at the right of the heading (e.g. cost and bubble rate).
    pub note: Option<&'a str>,
    /// The orders.
    pub schedule: &'a Schedule,
    /// Their simulated times.
    pub timeline: &'a Timeline,
    /// Why each idle gap is there; drawn when [`GanttOptions::causes`] is set.
    pub causes: Option<&'a Causes>,
    /// The whole training step around the pipeline: each device's data-parallel reduction
    /// and the optimizer step are drawn after its passes, on the same time axis.
    pub step: Option<&'a Step>,
}

/// When the last of a step's strips ends (0 without any).
fn step_end(step: &Step) -> f64 {
    step.reductions.iter().map(|r| r.end).fold(step.optimizer_span.end, f64::max)
}

/// How much wider bold titles run than the width estimate.
const TITLE_BOLDNESS: f64 = 1.1;
/// Least space between a panel's title and its note.
const NOTE_GAP: f64 = 16.0;

/// Layout settings. Lengths are CSS pixels; `scale` turns them into device pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct GanttOptions {
    /// Width of the whole chart.
    pub width: f64,
    /// Device pixels per CSS pixel (the canvas' device pixel ratio; 1 for SVG).
    pub scale: f64,
    /// Height of one device row.
    pub row_height: f64,
    /// Visible time range; `None` shows everything.
    pub time_range: Option<(f64, f64)>,
    /// A microbatch whose passes are outlined while the others fade.
    pub highlight: Option<u32>,
    /// Passes of the first panel to pick out or leave out (a formula's term, a derivation's step).
    pub focus: Option<Arc<Focus>>,
    /// Draw the legend of pass kinds.
    pub legend: bool,
    /// What the times mean: the axis label and its ticks (`0.5 s` for a model).
    pub units: Units,
    /// Shade each idle gap by its causes (of panels that carry them), with a legend.
    pub causes: bool,
}

impl Default for GanttOptions {
    fn default() -> Self {
        GanttOptions {
            width: 960.0,
            scale: 1.0,
            row_height: 22.0,
            time_range: None,
            highlight: None,
            focus: None,
            legend: true,
            units: Units::Cost,
            causes: false,
        }
    }
}

/// Where things were drawn, in CSS pixels: what hovering and clicking need.
#[derive(Clone, Debug, PartialEq)]
pub struct GanttGeometry {
    /// The time axis of the plot area.
    pub axis: TimeAxis,
    /// Top of every panel's first row and its device count.
    pub panels: Vec<PanelGeometry>,
    /// Height of a row.
    pub row_height: f64,
    /// Vertical distance between row tops.
    pub row_pitch: f64,
    /// Total height.
    pub height: f64,
    /// The shaded idle gaps, for hit testing (empty unless gaps are shaded).
    pub gaps: Vec<GapRect>,
}

/// Where a shaded idle gap was drawn (CSS pixels, clipped to the plot).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GapRect {
    /// The panel.
    pub panel: usize,
    /// The device row.
    pub device: u32,
    /// The gap's index in its panel's [`Causes::devices`]`[device]`.
    pub index: usize,
    /// Left.
    pub x0: f64,
    /// Right.
    pub x1: f64,
    /// Top.
    pub y0: f64,
    /// Bottom.
    pub y1: f64,
}

/// Rows of one panel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PanelGeometry {
    /// y of the first row's top.
    pub rows_top: f64,
    /// Number of device rows.
    pub devices: u32,
}

impl GanttGeometry {
    /// The (panel, device) row at `y`, if `y` is on a row.
    pub fn row_at(&self, y: f64) -> Option<(usize, u32)> {
        for (i, p) in self.panels.iter().enumerate() {
            let rel = y - p.rows_top;
            if rel < 0.0 {
                continue;
            }
            let row = (rel / self.row_pitch).floor();
            if row < f64::from(p.devices) && rel - row * self.row_pitch <= self.row_height {
                return Some((i, row as u32));
            }
        }
        None
    }

    /// The shaded gap at (`x`, `y`), if any.
    pub fn gap_at(&self, x: f64, y: f64) -> Option<&GapRect> {
        self.gaps.iter().find(|g| g.x0 <= x && x < g.x1 && g.y0 <= y && y < g.y1)
    }
}

const LEGEND_H: f64 = 30.0;
const TITLE_H: f64 = 24.0;
const ROW_GAP: f64 = 4.0;
const PANEL_GAP: f64 = 14.0;
const AXIS_H: f64 = 44.0;

/// Width of the device-label gutter for `devices` rows, in CSS pixels.
pub fn gutter_width(devices: u32) -> f64 {
    let label = format!("Device {}", devices.saturating_sub(1));
    (text_width(&label, 12.0) + 28.0).max(64.0)
}

/// Charts narrower than this (CSS pixels: phones) label rows `D3` instead of `Device 3`.
pub const NARROW_CHART: f64 = 600.0;

/// The label of device row `device` on a chart `width` pixels wide.
pub fn device_label(device: u32, width: f64) -> String {
    if width < NARROW_CHART {
        format!("D{device}")
    } else {
        format!("Device {device}")
    }
}

/// Width of the device-label gutter for `devices` rows on a chart `width` pixels wide: narrow
/// charts get abbreviated labels and a narrow gutter. Pass it to the memory chart too, so the
/// time axes line up.
pub fn gutter_for(devices: u32, width: f64) -> f64 {
    if width < NARROW_CHART {
        text_width(&device_label(devices.saturating_sub(1), width), 12.0) + 16.0
    } else {
        gutter_width(devices)
    }
}

/// Lays out `panels` on one shared time axis.
pub fn gantt(panels: &[GanttPanel<'_>], opts: &GanttOptions, theme: &Theme) -> (Scene, GanttGeometry) {
    let s = opts.scale.max(0.1);
    let max_devices = panels.iter().map(|p| p.schedule.devices()).max().unwrap_or(1);
    let gutter = gutter_for(max_devices, opts.width);
    let row_h = opts.row_height.clamp(4.0, 80.0);
    let row_pitch = row_h + if row_h >= 10.0 { ROW_GAP } else { 1.0 };

    let end = panels.iter().map(|p| p.timeline.end().max(p.step.map_or(0.0, step_end))).fold(0.0, f64::max);
    let axis = TimeAxis::for_chart(opts.time_range, end, gutter, opts.width);
    let shade = opts.causes && panels.iter().any(|p| p.causes.is_some());
    let narrow = opts.width < NARROW_CHART;
    // The legend's rows: what does not fit in one goes on to the next.
    let legend_rows = if opts.legend {
        let mut scratch = Scene::for_chart(opts.width, 0.0, s, theme);
        legend(&mut scratch, panels, theme, s, (gutter, axis.x1), narrow, shade)
    } else {
        0
    };

    // Vertical layout in CSS pixels.
    let mut y = if opts.legend { f64::from(legend_rows) * LEGEND_H + 6.0 } else { 8.0 };
    let mut geometry_panels = Vec::with_capacity(panels.len());
    for (i, p) in panels.iter().enumerate() {
        if i > 0 {
            y += PANEL_GAP;
        }
        if p.title.is_some() || p.note.is_some() {
            y += TITLE_H;
        }
        geometry_panels.push(PanelGeometry { rows_top: y, devices: p.schedule.devices() });
        y += f64::from(p.schedule.devices()) * row_pitch - (row_pitch - row_h);
    }
    let plot_bottom = y;
    let height = plot_bottom + AXIS_H;

    let TimeAxis { t0, t1, .. } = axis;
    let mut geometry =
        GanttGeometry { axis, panels: geometry_panels, row_height: row_h, row_pitch, height, gaps: Vec::new() };

    let mut scene = Scene::for_chart(opts.width, height, s, theme);
    let dev_axis = axis.scaled(s);

    if opts.legend {
        legend(&mut scene, panels, theme, s, (gutter, axis.x1), narrow, shade);
    }

    // Tracks, device labels, titles.
    let label_size = 12.0 * s;
    for (p, g) in panels.iter().zip(&geometry.panels) {
        if p.title.is_some() || p.note.is_some() {
            let ty = (g.rows_top - TITLE_H / 2.0 - 2.0) * s;
            // The note goes right of the title only where both fit (narrow charts drop it);
            // the title is cut with "…" rather than run past the plot.
            let room = axis.x1 - gutter;
            let title_width = p.title.map_or(0.0, |t| super::scene::text_width(t, 13.0) * TITLE_BOLDNESS);
            let note = p.note.filter(|n| title_width + NOTE_GAP + super::scene::text_width(n, 12.0) <= room);
            if let Some(title) = p.title {
                let title = super::scene::fit_text(title, 13.0, room / TITLE_BOLDNESS);
                scene.bold_text(gutter * s, ty, &title, 13.0 * s, theme.text, Anchor::Start);
            }
            if let Some(note) = note {
                scene.text(axis.x1 * s, ty, note, 12.0 * s, theme.muted, Anchor::End);
            }
        }
        for d in 0..g.devices {
            let top = (g.rows_top + f64::from(d) * row_pitch) * s;
            scene.rect(dev_axis.x0, top, dev_axis.x1, top + row_h * s, theme.track);
            if row_h >= 9.0 {
                scene.text(
                    (gutter - 10.0) * s,
                    top + row_h * s / 2.0,
                    &device_label(d, opts.width),
                    label_size.min(row_h * 0.7 * s),
                    theme.muted,
                    Anchor::End,
                );
            }
        }
    }

    // Grid and ticks.
    let target = ((axis.x1 - axis.x0) / 90.0).max(2.0) as usize;
    let (unit, suffix) = opts.units.time_ticks(t1 - t0);
    let (ts, step) = ticks(t0 / unit, t1 / unit, target);
    let top = geometry.panels.first().map_or(0.0, |g| g.rows_top) * s;
    for &t in &ts {
        let x = dev_axis.x(t * unit);
        scene.line((x, top), (x, plot_bottom * s + 4.0 * s), theme.grid, s);
        let label = format!("{}{suffix}", format_tick(t, step));
        scene.text(x, (plot_bottom + 14.0) * s, &label, 11.0 * s, theme.muted, Anchor::Middle);
    }
    scene.text(
        (axis.x0 + axis.x1) / 2.0 * s,
        (plot_bottom + 33.0) * s,
        opts.units.time_axis(),
        12.0 * s,
        theme.muted,
        Anchor::Middle,
    );

    // Idle gaps, tinted by cause, under the bars.
    if shade {
        for (i, p) in panels.iter().enumerate() {
            let (Some(causes), Some(g)) = (p.causes, geometry.panels.get(i).copied()) else { continue };
            for d in 0..g.devices {
                let top = g.rows_top + f64::from(d) * row_pitch;
                let rects = shade_gaps(&mut scene, causes, d, (top, top + row_h), &axis, s, theme);
                geometry.gaps.extend(rects.map(|(index, x0, x1)| GapRect {
                    panel: i,
                    device: d,
                    index,
                    x0,
                    x1,
                    y0: top,
                    y1: top + row_h,
                }));
            }
        }
    }

    // The focus's bands, under the bars of the first panel.
    if let (Some(focus), Some(g)) = (opts.focus.as_deref(), geometry.panels.first()) {
        for band in focus.bands.iter().filter(|b| b.device < g.devices) {
            if let Some((x0, x1)) = span_x(&dev_axis, band.start, band.end) {
                let top = (g.rows_top + f64::from(band.device) * row_pitch) * s;
                scene.items.push(Item::Rect {
                    x0,
                    y0: top - 2.0 * s,
                    x1,
                    y1: top + (row_h + 2.0) * s,
                    fill: theme.outline,
                    alpha: 0.16,
                    stroke: Some((theme.outline, s)),
                });
            }
        }
    }

    // Bars.
    for (i, (p, g)) in panels.iter().zip(&geometry.panels).enumerate() {
        let chunks = p.schedule.placement.chunk_table();
        let focus = if i == 0 { opts.focus.as_deref() } else { None };
        for d in 0..g.devices {
            let top = (g.rows_top + f64::from(d) * row_pitch) * s;
            draw_row(&mut scene, p, &chunks, d, (top, row_h * s), &dev_axis, opts, focus, theme);
        }
    }
    (scene, geometry)
}

/// Draws `device`'s idle gaps as tinted segments, one per cause in [`Cause::STACK`] order
/// (the hop last, next to the pass it delays), over the row spanning `rows` (CSS pixels).
/// Gaps narrower than half a CSS pixel are left out. Returns the drawn gaps: index and
/// horizontal extent in CSS pixels.
fn shade_gaps<'a>(
    scene: &'a mut Scene,
    causes: &'a Causes,
    device: u32,
    (top, bottom): (f64, f64),
    axis: &'a TimeAxis,
    s: f64,
    theme: &'a Theme,
) -> impl Iterator<Item = (usize, f64, f64)> + 'a {
    let gaps = causes.devices.get(device as usize).map_or(&[][..], Vec::as_slice);
    // Only the gaps that reach into the visible range.
    let first = gaps.partition_point(|g| g.end <= axis.t0);
    gaps[first..].iter().enumerate().take_while(|(_, g)| g.start < axis.t1).filter_map(move |(k, g)| {
        let (x0, x1) = (axis.x(g.start).max(axis.x0), axis.x(g.end).min(axis.x1));
        if x1 - x0 < 0.5 {
            return None;
        }
        let mut t = g.start;
        for cause in Cause::STACK {
            let part = cause.of(&g.parts);
            if part <= 0.0 {
                continue;
            }
            // A measured runtime's overhead opens the schedule part, in its own tint.
            let overhead = if cause == Cause::Schedule { g.overhead.min(part) } else { 0.0 };
            let pieces = [(overhead, theme.overhead), (part - overhead, theme.causes[cause.index()])];
            for (len, fill) in pieces {
                let (a, b) = (axis.x(t).max(x0), axis.x(t + len).min(x1));
                t += len;
                if b > a {
                    scene.items.push(Item::Rect {
                        x0: a * s,
                        y0: top * s,
                        x1: b * s,
                        y1: bottom * s,
                        fill,
                        alpha: 1.0,
                        stroke: None,
                    });
                }
            }
        }
        Some((first + k, x0, x1))
    })
}

/// A run of sub-pixel passes being merged into one bar: how much time each pass kind takes
/// in it. It is drawn as stacked bands (forward on top), so a zoomed-out chart still shows the
/// warm-up, the steady state and the cool-down.
struct Run {
    x0: f64,
    x1: f64,
    time: [f64; PassKind::ALL.len()],
    count: usize,
}

/// Widest merged run, in device pixels per unit of scale: short enough to show where the
/// composition changes along the row.
const MAX_RUN: f64 = 5.0;

#[allow(clippy::too_many_arguments)]
fn draw_row(
    scene: &mut Scene,
    panel: &GanttPanel<'_>,
    chunks: &[u32],
    device: u32,
    (top, height): (f64, f64),
    axis: &TimeAxis,
    opts: &GanttOptions,
    focus: Option<&Focus>,
    theme: &Theme,
) {
    let (Some(order), Some(times)) =
        (panel.schedule.orders.get(device as usize), panel.timeline.devices.get(device as usize))
    else {
        return;
    };
    let s = opts.scale.max(0.1);
    let font = (11.0 * s).min(height * 0.62);
    let mut run: Option<Run> = None;
    // A finished run waits here: the next one joins it when their mixes of kinds are alike, so a
    // steady state of thousands of sub-pixel passes becomes one bar of stacked bands.
    let mut pending: Option<Run> = None;
    let emit = |scene: &mut Scene, run: Run| {
        let total: f64 = run.time.iter().sum();
        let x1 = run.x1.max(run.x0 + 1.0);
        let mut y = top;
        for (i, t) in run.time.iter().enumerate() {
            if *t <= 0.0 || total <= 0.0 {
                continue;
            }
            let h = height * t / total;
            scene.items.push(Item::Rect {
                x0: run.x0,
                y0: y,
                x1,
                y1: y + h,
                fill: theme.kinds[i],
                alpha: 1.0,
                stroke: None,
            });
            y += h;
        }
        scene.counts.merged += run.count;
    };
    let flush = |scene: &mut Scene, run: &mut Option<Run>, pending: &mut Option<Run>| {
        let Some(r) = run.take() else { return };
        match pending {
            Some(p) if r.x0 <= p.x1 + 1.0 && similar(&p.time, &r.time) => {
                p.x1 = p.x1.max(r.x1);
                for (a, b) in p.time.iter_mut().zip(r.time) {
                    *a += b;
                }
                p.count += r.count;
            }
            _ => {
                if let Some(p) = pending.replace(r) {
                    emit(scene, p);
                }
            }
        }
    };
    for (op, t) in order.iter().zip(&times.ops) {
        if focus.is_some_and(|f| op.passes().all(|p| f.hidden.contains(&p))) {
            continue;
        }
        let passes = if op.is_pair() { 2 } else { 1 };
        let (x0, x1) = (axis.x(t.start), axis.x(t.end));
        if x1 < axis.x0 || x0 > axis.x1 || t.end < axis.t0 || t.start > axis.t1 {
            scene.counts.culled += passes;
            continue;
        }
        let (x0, x1) = (x0.max(axis.x0), x1.min(axis.x1));
        if x1 - x0 < 1.0 {
            let w = (x1 - x0).max(0.01);
            let fits = run.as_ref().is_some_and(|r| x0 <= r.x1 + 1.0 && x1 - r.x0 <= MAX_RUN * s);
            if !fits {
                flush(scene, &mut run, &mut pending);
                run = Some(Run { x0, x1, time: [0.0; PassKind::ALL.len()], count: 0 });
            }
            if let Some(r) = &mut run {
                r.x1 = r.x1.max(x1);
                let share = w / passes as f64;
                for pass in op.passes() {
                    r.time[pass.kind.index()] += share;
                }
                r.count += passes;
            }
            continue;
        }
        flush(scene, &mut run, &mut pending);
        if let Some(p) = pending.take() {
            emit(scene, p);
        }
        // Leave a hairline between neighbouring bars when there is room.
        let gap = if x1 - x0 >= 4.0 * s { s } else { 0.0 };
        match *op {
            Op::One(pass) => {
                bar(scene, pass, chunks, (x0, x1 - gap, top, top + height), font, panel, opts, focus, theme);
            }
            Op::Pair(f, b) => {
                let mid = top + height / 2.0;
                bar(scene, f, chunks, (x0, x1 - gap, top, mid), font * 0.85, panel, opts, focus, theme);
                bar(scene, b, chunks, (x0, x1 - gap, mid, top + height), font * 0.85, panel, opts, focus, theme);
                scene.items.push(Item::Rect {
                    x0,
                    y0: top,
                    x1: x1 - gap,
                    y1: top + height,
                    fill: theme.outline,
                    alpha: 0.0,
                    stroke: Some((theme.outline, s)),
                });
            }
        }
    }
    flush(scene, &mut run, &mut pending);
    if let Some(p) = pending.take() {
        emit(scene, p);
    }
    // A derivation under way shows passes only: no copies, collectives or step strips yet.
    if focus.is_some_and(|f| !f.hidden.is_empty()) {
        return;
    }
    draw_copies(scene, panel, device, top, height, axis, theme);
    draw_comms(scene, panel, device, top, height, axis, theme);
    if let Some(step) = panel.step {
        draw_step(scene, step, device, (top, height, font), axis, theme);
    }
}

/// The horizontal extent of `start..end` on `axis` (device pixels), clipped to the plot and
/// at least a pixel wide; `None` when it lies outside the visible range.
fn span_x(axis: &TimeAxis, start: f64, end: f64) -> Option<(f64, f64)> {
    if end < axis.t0 || start > axis.t1 {
        return None;
    }
    let x0 = axis.x(start).max(axis.x0);
    Some((x0, axis.x(end).min(axis.x1).max(x0 + 1.0)))
}

/// Draws the whole step's work after `device`'s passes: its data-parallel gradient reduction
/// (what of it runs past the pipeline is the step's exposed DP time) and the optimizer step,
/// each labelled where it is wide enough.
/// `row` is the row's top, height and label font size (device pixels).
fn draw_step(scene: &mut Scene, step: &Step, device: u32, row: (f64, f64, f64), axis: &TimeAxis, theme: &Theme) {
    let (top, height, font) = row;
    let reduction = step.reductions.get(device as usize).map(|r| (r, theme.reduction, "DP"));
    let optimizer = Some((&step.optimizer_span, theme.optimizer, "opt"));
    for (span, fill, label) in reduction.into_iter().chain(optimizer) {
        if span.end <= span.start {
            continue;
        }
        let Some((x0, x1)) = span_x(axis, span.start, span.end) else { continue };
        scene.items.push(Item::Rect {
            x0,
            y0: top,
            x1,
            y1: top + height,
            fill,
            alpha: 0.9,
            stroke: Some((theme.background, 0.5)),
        });
        if x1 - x0 >= text_width(label, font) + 6.0 && font >= 7.0 {
            scene.text((x0 + x1) / 2.0, top + height / 2.0, label, font, theme.background, Anchor::Middle);
        }
    }
}

/// Draws the collectives `device` takes part in (the vocabulary shards' barriers) as a strip
/// along the top of its row: its side stream, beside compute. A barrier on the compute
/// stream (interlaced) is drawn the same way, hatched by a full-height outline.
fn draw_comms(
    scene: &mut Scene,
    panel: &GanttPanel<'_>,
    device: u32,
    top: f64,
    height: f64,
    axis: &TimeAxis,
    theme: &Theme,
) {
    let Some(times) = panel.timeline.devices.get(device as usize) else { return };
    let strip = (height * 0.22).max(2.0);
    for c in &times.comms {
        let Some((x0, x1)) = span_x(axis, c.start, c.end) else { continue };
        let bottom = if c.side { top + strip } else { top + height };
        scene.items.push(Item::Rect {
            x0,
            y0: top,
            x1,
            y1: bottom,
            fill: theme.comms,
            alpha: if c.side { 0.95 } else { 0.35 },
            stroke: Some((theme.background, 0.5)),
        });
    }
}

/// Draws `device`'s copies to and from the host as a strip along the bottom of its row: its
/// copy stream, which runs beside its compute.
fn draw_copies(
    scene: &mut Scene,
    panel: &GanttPanel<'_>,
    device: u32,
    top: f64,
    height: f64,
    axis: &TimeAxis,
    theme: &Theme,
) {
    let Some(times) = panel.timeline.devices.get(device as usize) else { return };
    let strip = (height * 0.3).max(2.0);
    for (copy, t) in panel.schedule.copies_of(device).iter().zip(&times.copies) {
        let Some((x0, x1)) = span_x(axis, t.start, t.end) else { continue };
        scene.items.push(Item::Rect {
            x0,
            y0: top + height - strip,
            x1,
            y1: top + height,
            fill: theme.copies[copy.kind as usize],
            alpha: 0.95,
            stroke: Some((theme.background, 0.5)),
        });
    }
}

/// Whether two runs mix pass kinds alike (L1 distance of their shares below 0.25).
fn similar(a: &[f64; PassKind::ALL.len()], b: &[f64; PassKind::ALL.len()]) -> bool {
    let (ta, tb): (f64, f64) = (a.iter().sum(), b.iter().sum());
    if ta <= 0.0 || tb <= 0.0 {
        return false;
    }
    a.iter().zip(b).map(|(x, y)| (x / ta - y / tb).abs()).sum::<f64>() < 0.25
}

#[allow(clippy::too_many_arguments)]
fn bar(
    scene: &mut Scene,
    pass: Pass,
    chunks: &[u32],
    (x0, x1, y0, y1): (f64, f64, f64, f64),
    font: f64,
    panel: &GanttPanel<'_>,
    opts: &GanttOptions,
    focus: Option<&Focus>,
    theme: &Theme,
) {
    let chunk = chunks.get(pass.stage as usize).copied().unwrap_or(0);
    let fill = theme.pass_color(pass.kind, chunk);
    let picked = focus.filter(|f| !f.outlined.is_empty());
    let highlighted = opts.highlight == Some(pass.microbatch) || picked.is_some_and(|f| f.outlined.contains(&pass));
    let faded = (opts.highlight.is_some() || picked.is_some()) && !highlighted;
    let stroke = highlighted.then_some((theme.outline, 2.0 * opts.scale));
    scene.items.push(Item::Rect { x0, y0, x1, y1, fill, alpha: if faded { 0.22 } else { 1.0 }, stroke });
    scene.counts.drawn += 1;
    let label = if pass.slice > 0 || panel.schedule.slices > 1 {
        format!("{}.{}", pass.microbatch, pass.slice)
    } else {
        pass.microbatch.to_string()
    };
    // Fit the label as if every digit were as wide as the widest, so bars of one width are all
    // labelled or none is (a narrow `1` would otherwise fit where `2` does not).
    let widest = label.replace('1', "0");
    if font >= 6.0 && text_width(&widest, font) + 4.0 * opts.scale <= x1 - x0 && y1 - y0 >= font * 1.05 {
        let color = if faded { theme.muted } else { theme.label_on(fill) };
        scene.text((x0 + x1) / 2.0, (y0 + y1) / 2.0, &label, font, color, Anchor::Middle);
        scene.counts.labelled += 1;
    }
}

/// Where the legend's next entry goes: along a row, and on to the next row when an entry would
/// run past the plot's right edge (all in scaled pixels).
struct Flow {
    x: f64,
    left: f64,
    right: f64,
    row: u32,
    s: f64,
}

impl Flow {
    /// The middle of the current row.
    fn y(&self) -> f64 {
        (LEGEND_H / 2.0 + f64::from(self.row) * LEGEND_H) * self.s
    }

    /// Whether an entry `width` wide fits on the current row.
    fn fits(&self, width: f64) -> bool {
        self.x + width <= self.right
    }

    /// Goes on to the next row when an entry `width` wide does not fit on this one (and this
    /// one holds something).
    fn make_room(&mut self, width: f64) {
        if !self.fits(width) && self.x > self.left {
            self.x = self.left;
            self.row += 1;
        }
    }
}

/// The legend of pass kinds; `short` (narrow charts) names them by letter only. An entry that
/// would run past the plot goes on to a new row; the rows drawn are returned.
fn legend(
    scene: &mut Scene,
    panels: &[GanttPanel<'_>],
    theme: &Theme,
    s: f64,
    (left, right): (f64, f64),
    short: bool,
    causes: bool,
) -> u32 {
    let mut kinds = [false; PassKind::ALL.len()];
    let mut pairs = false;
    let mut chunks = 1;
    for p in panels {
        chunks = chunks.max(p.schedule.placement.chunks_per_device());
        for op in p.schedule.orders.iter().flatten() {
            pairs |= op.is_pair();
            for pass in op.passes() {
                kinds[PassKind::ALL.iter().position(|k| *k == pass.kind).unwrap_or(0)] = true;
            }
        }
    }
    let size = 12.0 * s;
    let sw = 12.0 * s;
    let mut flow = Flow { x: left * s, left: left * s, right: right * s, row: 0, s };
    for (i, kind) in PassKind::ALL.iter().enumerate() {
        if !kinds[i] {
            continue;
        }
        let label = match (kind, short) {
            (_, true) => kind.name(),
            (PassKind::F, _) => "F forward",
            (PassKind::B, _) => "B input grad",
            (PassKind::W, _) => "W weight grad",
            (PassKind::BW, _) => "BW full backward",
            (PassKind::R, _) => "R recompute",
            (PassKind::S, _) => "S output layer",
            (PassKind::T, _) => "T output grad",
            (PassKind::IF, _) => "IF input layer",
            (PassKind::IB, _) => "IB input grad",
        };
        let swatches = f64::from(chunks.min(2));
        flow.make_room(swatches * (sw + 2.0 * s) + 4.0 * s + text_width(label, size));
        let y = flow.y();
        for c in 0..chunks.min(2) {
            scene.rect(flow.x, y - sw / 2.0, flow.x + sw, y + sw / 2.0, theme.pass_color(*kind, c));
            flow.x += sw + 2.0 * s;
        }
        flow.x += 4.0 * s;
        scene.text(flow.x, y, label, size, theme.text, Anchor::Start);
        flow.x += text_width(label, size) + 18.0 * s;
    }
    if pairs {
        let label = if short { "F&B" } else { "F&B overlapped" };
        flow.make_room(sw + 6.0 * s + text_width(label, size));
        let (x, y) = (flow.x, flow.y());
        scene.rect(x, y - sw / 2.0, x + sw, y, theme.kinds[0]);
        scene.rect(x, y, x + sw, y + sw / 2.0, theme.kinds[3]);
        scene.items.push(Item::Rect {
            x0: x,
            y0: y - sw / 2.0,
            x1: x + sw,
            y1: y + sw / 2.0,
            fill: theme.outline,
            alpha: 0.0,
            stroke: Some((theme.outline, s)),
        });
        flow.x += sw + 6.0 * s;
        scene.text(flow.x, y, label, size, theme.text, Anchor::Start);
        flow.x += text_width(label, size) + 18.0 * s;
    }
    if panels.iter().any(|p| p.schedule.has_copies()) {
        for kind in CopyKind::ALL {
            let label = match (short, kind) {
                (true, _) => kind.name(),
                (false, CopyKind::Offload) => "offload to host",
                (false, CopyKind::Reload) => "reload",
            };
            flow.make_room(sw + 4.0 * s + text_width(label, size));
            let y = flow.y();
            scene.rect(flow.x, y + sw / 4.0, flow.x + sw, y + sw / 2.0, theme.copies[kind as usize]);
            flow.x += sw + 4.0 * s;
            scene.text(flow.x, y, label, size, theme.text, Anchor::Start);
            flow.x += text_width(label, size) + 18.0 * s;
        }
    }
    if panels.iter().any(|p| p.timeline.devices.iter().any(|d| !d.comms.is_empty())) {
        let label = if short { "barrier" } else { "barrier (all-reduce over shards)" };
        flow.make_room(sw + 4.0 * s + text_width(label, size));
        let y = flow.y();
        scene.rect(flow.x, y - sw / 2.0, flow.x + sw, y - sw / 4.0, theme.comms);
        flow.x += sw + 4.0 * s;
        scene.text(flow.x, y, label, size, theme.text, Anchor::Start);
        flow.x += text_width(label, size) + 18.0 * s;
    }
    if panels.iter().any(|p| p.step.is_some()) {
        let whole = [(theme.reduction, "DP reduction", "DP"), (theme.optimizer, "optimizer step", "opt")];
        for (fill, long, brief) in whole {
            let label = if short { brief } else { long };
            flow.make_room(sw + 4.0 * s + text_width(label, size));
            let y = flow.y();
            scene.rect(flow.x, y - sw / 2.0, flow.x + sw, y + sw / 2.0, fill);
            flow.x += sw + 4.0 * s;
            scene.text(flow.x, y, label, size, theme.text, Anchor::Start);
            flow.x += text_width(label, size) + 18.0 * s;
        }
    }
    let short_chart = short;
    if causes {
        // Idle tints, outlined in the grid colour (they are pale); short labels when the full
        // ones would run past the plot.
        let label = |cause: Cause, short: bool| match (short, cause) {
            (false, _) => cause.name(),
            (true, Cause::Communication) => "comm",
            (true, Cause::Imbalance) => "imbal",
            (true, Cause::Schedule) => "sched",
        };
        let head = |short: bool| if short { "idle:" } else { "idle by cause:" };
        let needed = |short: bool| {
            text_width(head(short), size)
                + 6.0 * s
                + Cause::STACK.iter().map(|c| sw + 18.0 * s + text_width(label(*c, short), size)).sum::<f64>()
        };
        let mut short = short || !flow.fits(needed(false));
        // Where not even the short legend fits, a row of its own; where it does not fit there
        // either (phones), the app's attribution bar, in the same tints, names the colours.
        if !flow.fits(needed(short)) {
            flow.make_room(needed(short));
            short = short_chart || !flow.fits(needed(false));
            if !flow.fits(needed(short)) {
                return flow.row + 1;
            }
        }
        let y = flow.y();
        let mut x = flow.x;
        scene.text(x, y, head(short), size, theme.muted, Anchor::Start);
        x += text_width(head(short), size) + 8.0 * s;
        let overhead = panels.iter().filter_map(|p| p.causes).flat_map(Causes::gaps).any(|g| g.overhead > 0.0);
        let overhead_label = if short { "ovh" } else { "runtime overhead" };
        let entries = Cause::STACK
            .iter()
            .map(|&c| (theme.causes[c.index()], label(c, short)))
            .chain(overhead.then_some((theme.overhead, overhead_label)));
        for (fill, text) in entries {
            if x + sw + 4.0 * s + text_width(text, size) > flow.right {
                break;
            }
            scene.items.push(Item::Rect {
                x0: x,
                y0: y - sw / 2.0,
                x1: x + sw,
                y1: y + sw / 2.0,
                fill,
                alpha: 1.0,
                stroke: Some((theme.grid, s)),
            });
            x += sw + 4.0 * s;
            scene.text(x, y, text, size, theme.text, Anchor::Start);
            x += text_width(text, size) + 14.0 * s;
        }
        flow.x = x + 4.0 * s;
    }
    if chunks > 1 && !short {
        let note = if chunks == 2 {
            "left swatch chunk 0, right chunk 1".to_string()
        } else {
            format!("shades: chunks 0–{}", chunks - 1)
        };
        // After the rest, on a row of its own when it does not fit beside it.
        flow.make_room(text_width(&note, size));
        scene.text(flow.x, flow.y(), &note, size, theme.muted, Anchor::Start);
    }
    flow.row + 1
}
