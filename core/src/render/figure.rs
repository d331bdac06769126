//! Figures: the standard composition of Gantt chart, headings and memory chart that the CLI's
//! `render` and the app's SVG export share, so both produce the same bytes.

use super::axis::TimeAxis;
use super::gantt::{gantt, gutter_for, GanttGeometry, GanttOptions, GanttPanel};
use super::memory::{memory_chart, memory_plot_band, MemoryOptions};
use super::scene::Scene;
use super::theme::Theme;
use crate::analysis::Analysis;
use crate::gaps::Causes;
use crate::step::Step;
use crate::units::format_number;
use crate::units::Units;

/// One schedule in a figure.
#[derive(Clone, Copy, Debug)]
pub struct FigureItem<'a> {
    /// Heading of its panel.
    pub label: &'a str,
    /// The analysed schedule.
    pub analysis: &'a Analysis,
    /// Why its idle gaps are there ([`crate::gaps::causes`]); shaded when
    /// [`FigureOptions::causes`] is set.
    pub causes: Option<&'a Causes>,
    /// The whole training step around it, drawn as strips after its passes.
    pub step: Option<&'a Step>,
}

impl<'a> FigureItem<'a> {
    /// A schedule headed `label`, without gap causes or a step.
    pub fn new(label: &'a str, analysis: &'a Analysis) -> FigureItem<'a> {
        FigureItem { label, analysis, causes: None, step: None }
    }
}

/// Figure settings: everything the CLI's `render`, the app's export and the app's canvas
/// choose. Lengths are CSS pixels; `scale` turns them into device pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct FigureOptions {
    /// Width in pixels.
    pub width: f64,
    /// Device pixels per CSS pixel (the canvas' device pixel ratio; 1 for SVG).
    pub scale: f64,
    /// Height of a device row.
    pub row_height: f64,
    /// Add a memory chart under the Gantt chart (one per schedule).
    pub memory: bool,
    /// Height of each memory chart.
    pub memory_height: f64,
    /// Memory limit to draw in the memory chart.
    pub mem_limit: Option<f64>,
    /// Colours.
    pub theme: Theme,
    /// Visible time range; `None` shows everything.
    pub time_range: Option<(f64, f64)>,
    /// A microbatch whose passes are outlined while the others fade.
    pub highlight: Option<u32>,
    /// Passes of the first schedule to pick out or leave out.
    pub focus: Option<std::sync::Arc<super::focus::Focus>>,
    /// What the numbers mean: cost units, or µs and bytes from a model.
    pub units: Units,
    /// Shade idle gaps by cause (for items that carry [`FigureItem::causes`]), with a legend.
    pub causes: bool,
}

/// Height of a memory chart in figures.
pub const MEMORY_HEIGHT: f64 = 200.0;

impl Default for FigureOptions {
    fn default() -> Self {
        FigureOptions {
            width: 960.0,
            scale: 1.0,
            row_height: 22.0,
            memory: false,
            memory_height: MEMORY_HEIGHT,
            mem_limit: None,
            theme: Theme::light(),
            time_range: None,
            highlight: None,
            focus: None,
            units: Units::Cost,
            causes: false,
        }
    }
}

/// A laid-out figure: the Gantt chart (headings with their summary notes), the memory charts
/// stacked below it when asked, and where the Gantt rows are. The canvas draws the two parts
/// on its two canvases, the SVG export stacks them: one figure for every output.
#[derive(Clone, Debug)]
pub struct Figure {
    /// The Gantt chart of every schedule on one time axis.
    pub gantt: Scene,
    /// One memory chart per schedule, stacked, when [`FigureOptions::memory`] is set.
    pub memory: Option<Scene>,
    /// Where the Gantt chart's rows and time axis are (CSS pixels).
    pub geometry: GanttGeometry,
}

impl Figure {
    /// The whole figure as one scene: the Gantt chart with the memory charts below.
    pub fn scene(self) -> Scene {
        match self.memory {
            Some(memory) => self.gantt.stack(memory),
            None => self.gantt,
        }
    }
}

/// The one-line summary shown next to a panel's heading.
pub fn summary_line(analysis: &Analysis, units: Units) -> String {
    let s = &analysis.stats;
    format!(
        "cost {} · bubble rate {}% · peak memory {}",
        units.time(s.cost),
        format_number(s.bubble_rate * 100.0, 2),
        units.memory(s.peak_memory)
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
pub fn figure(items: &[FigureItem<'_>], opts: &FigureOptions) -> Figure {
    let notes: Vec<String> = items.iter().map(|i| summary_line(i.analysis, opts.units)).collect();
    let panels: Vec<GanttPanel<'_>> = items
        .iter()
        .zip(&notes)
        .map(|(i, note)| GanttPanel {
            title: Some(i.label),
            note: Some(note.as_str()),
            schedule: &i.analysis.schedule,
            timeline: &i.analysis.timeline,
            causes: i.causes,
            step: i.step,
        })
        .collect();
    let gantt_opts = GanttOptions {
        width: opts.width,
        scale: opts.scale,
        row_height: opts.row_height,
        time_range: opts.time_range,
        highlight: opts.highlight,
        focus: opts.focus.clone(),
        legend: true,
        units: opts.units,
        causes: opts.causes,
    };
    let (gantt_scene, geometry) = gantt(&panels, &gantt_opts, &opts.theme);
    let memory = opts.memory.then(|| memory_charts(items, opts, (geometry.axis.t0, geometry.axis.t1)).0);
    Figure { gantt: gantt_scene, memory, geometry }
}

/// [`figure`] as one scene, and where its plots are (for animations over it).
pub fn figure_layout(items: &[FigureItem<'_>], opts: &FigureOptions) -> (Scene, FigureGeometry) {
    let fig = figure(items, opts);
    let g = &fig.geometry;
    let mut bands: Vec<(f64, f64)> = g
        .panels
        .iter()
        .map(|p| (p.rows_top, p.rows_top + f64::from(p.devices) * g.row_pitch - (g.row_pitch - g.row_height)))
        .collect();
    let axis = g.axis;
    if opts.memory {
        let dy = f64::from(fig.gantt.height) / opts.scale.max(1e-9);
        let (_, memory_bands) = memory_charts(items, opts, (axis.t0, axis.t1));
        bands.extend(memory_bands.into_iter().map(|(top, bottom)| (dy + top, dy + bottom)));
    }
    (fig.scene(), FigureGeometry { axis, bands })
}

/// The options of schedule `item`'s memory chart in a figure.
fn memory_options(
    items: &[FigureItem<'_>],
    item: &FigureItem<'_>,
    opts: &FigureOptions,
    time_range: (f64, f64),
) -> MemoryOptions {
    let devices = items.iter().map(|i| i.analysis.schedule.devices()).max().unwrap_or(1);
    let unit = opts.units.memory_unit();
    let title = if items.len() > 1 {
        format!("Activation memory per device — {} ({unit})", item.label)
    } else {
        format!("Activation memory per device ({unit})")
    };
    MemoryOptions {
        width: opts.width,
        height: opts.memory_height,
        scale: opts.scale,
        time_range: Some(time_range),
        limit: opts.mem_limit,
        before: item.analysis.stats.peak_without_trade,
        gutter: Some(gutter_for(devices, opts.width)),
        highlight_device: None,
        title,
        units: opts.units,
    }
}

/// One memory chart per schedule over `time_range`, stacked, their axes aligned with the
/// Gantt chart's; with each chart's plot band (CSS pixels from the top of the stack).
fn memory_charts(items: &[FigureItem<'_>], opts: &FigureOptions, time_range: (f64, f64)) -> (Scene, Vec<(f64, f64)>) {
    let mut stacked: Option<Scene> = None;
    let mut bands = Vec::new();
    let mut offset = 0.0;
    for item in items {
        let memory = memory_options(items, item, opts, time_range);
        let (top, bottom) = memory_plot_band(&memory);
        bands.push((offset + top, offset + bottom));
        offset += memory.height;
        let chart = memory_chart(&item.analysis.timeline, &memory, &opts.theme);
        stacked = Some(match stacked {
            Some(above) => above.stack(chart),
            None => chart,
        });
    }
    (stacked.unwrap_or_else(|| Scene::new(0, 0, opts.theme.background, opts.theme.font)), bands)
}

/// The figure as an SVG document.
pub fn figure_svg(items: &[FigureItem<'_>], opts: &FigureOptions) -> String {
    // The SVG backend writes into a String: it has no error to report.
    super::to_svg(&figure(items, opts).scene()).unwrap_or_default()
}
