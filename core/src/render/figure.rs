//! Figures: the standard composition of Gantt chart, headings and memory chart that the CLI's
//! `render` and the app's SVG export share, so both produce the same bytes.

use super::axis::{format_number, TimeAxis};
use super::gantt::{gantt, gutter_for, GanttOptions, GanttPanel};
use super::memory::{memory_chart, memory_plot_band, MemoryOptions};
use super::scene::Scene;
use super::theme::Theme;
use crate::Analysis;

/// One schedule in a figure.
#[derive(Clone, Copy, Debug)]
pub struct FigureItem<'a> {
    /// Heading of its panel.
    pub label: &'a str,
    /// The analysed schedule.
    pub analysis: &'a Analysis,
}

/// Figure settings.
#[derive(Clone, Debug, PartialEq)]
pub struct FigureOptions {
    /// Width in pixels.
    pub width: f64,
    /// Height of a device row.
    pub row_height: f64,
    /// Add a memory chart under the Gantt chart (one per schedule).
    pub memory: bool,
    /// Memory limit to draw in the memory chart.
    pub mem_limit: Option<f64>,
    /// Colours.
    pub theme: Theme,
    /// Visible time range; `None` shows everything.
    pub time_range: Option<(f64, f64)>,
}

impl Default for FigureOptions {
    fn default() -> Self {
        FigureOptions {
            width: 960.0,
            row_height: 22.0,
            memory: false,
            mem_limit: None,
            theme: Theme::light(),
            time_range: None,
        }
    }
}

/// The one-line summary shown next to a panel's heading.
pub fn summary_line(analysis: &Analysis) -> String {
    let s = &analysis.stats;
    format!(
        "cost {} · bubble rate {}% · peak memory {}",
        format_number(s.cost, 3),
        format_number(s.bubble_rate * 100.0, 2),
        format_number(s.peak_memory, 3)
    )
}

/// Where a figure's plots are, in pixels: what an animation over it needs.
#[derive(Clone, Debug, PartialEq)]
pub struct FigureGeometry {
    /// The shared time axis.
    pub axis: TimeAxis,
    /// Vertical spans (top, bottom) of every plot area: each Gantt panel's rows, then each
    /// memory chart's plot, top to bottom.
    pub bands: Vec<(f64, f64)>,
}

/// Lays out a figure: all schedules on one time axis, then their memory charts if asked.
pub fn figure(items: &[FigureItem<'_>], opts: &FigureOptions) -> Scene {
    figure_layout(items, opts).0
}

/// [`figure`] and where its plots are.
pub fn figure_layout(items: &[FigureItem<'_>], opts: &FigureOptions) -> (Scene, FigureGeometry) {
    let notes: Vec<String> = items.iter().map(|i| summary_line(i.analysis)).collect();
    let panels: Vec<GanttPanel<'_>> = items
        .iter()
        .zip(&notes)
        .map(|(i, note)| GanttPanel {
            title: Some(i.label),
            note: Some(note.as_str()),
            schedule: &i.analysis.schedule,
            timeline: &i.analysis.timeline,
        })
        .collect();
    let gantt_opts = GanttOptions {
        width: opts.width,
        scale: 1.0,
        row_height: opts.row_height,
        time_range: opts.time_range,
        highlight: None,
        legend: true,
        axis_label: "time (cost units)".to_string(),
    };
    let (mut scene, geometry) = gantt(&panels, &gantt_opts, &opts.theme);
    let mut bands: Vec<(f64, f64)> = geometry
        .panels
        .iter()
        .map(|p| {
            (
                p.rows_top,
                p.rows_top + f64::from(p.devices) * geometry.row_pitch - (geometry.row_pitch - geometry.row_height),
            )
        })
        .collect();
    if opts.memory {
        let devices = items.iter().map(|i| i.analysis.schedule.devices()).max().unwrap_or(1);
        let time_range = Some((geometry.axis.t0, geometry.axis.t1));
        for item in items {
            let title = if items.len() > 1 {
                format!("Activation memory per device — {} (unit of mem-f)", item.label)
            } else {
                "Activation memory per device (unit of mem-f)".to_string()
            };
            let memory = MemoryOptions {
                width: opts.width,
                height: 200.0,
                scale: 1.0,
                time_range,
                limit: opts.mem_limit,
                gutter: Some(gutter_for(devices, opts.width)),
                highlight_device: None,
                title,
            };
            let (top, bottom) = memory_plot_band(&memory);
            let dy = f64::from(scene.height);
            bands.push((dy + top, dy + bottom));
            scene = scene.stack(memory_chart(&item.analysis.timeline, &memory, &opts.theme));
        }
    }
    (scene, FigureGeometry { axis: geometry.axis, bands })
}

/// The figure as an SVG document.
pub fn figure_svg(items: &[FigureItem<'_>], opts: &FigureOptions) -> String {
    // The SVG backend writes into a String and cannot fail.
    super::to_svg(&figure(items, opts)).unwrap_or_default()
}
