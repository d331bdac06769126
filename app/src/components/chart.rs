//! The chart card: the Gantt canvas, the memory canvas, hover, click, zoom and pan.

use std::sync::Arc;

use bubblescope::gaps::Causes;
use bubblescope::render::{
    figure, memory_plot_band, FigureItem, FigureOptions, Focus, GanttGeometry, MemoryOptions, MEMORY_HEIGHT,
};
use bubblescope::step::Step;
use bubblescope::units::format_number;
use bubblescope::{Analysis, Op, Pass};
use leptos::html::{Canvas, Div};
use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use super::playback::{ChartFrame, Layer, Playback, PlaybackBar, PlaybackOverlay};
use super::progress::{EngineNote, Progress};
use crate::canvas::{device_pixel_ratio, draw_scene, use_width};
use crate::causes::CAUSES_KEY;
use crate::engine::runs_on_page;
use crate::state::{compute, now_ms, AppState, Computed, FocusSource, Place, ThemeChoice, MAX_LIVE_MICROBATCHES};

/// One drawn schedule.
#[derive(Clone)]
struct Shown {
    label: String,
    analysis: Arc<Analysis>,
    /// Why its idle gaps are there, while the gaps are shaded.
    causes: Option<Arc<Causes>>,
    /// The whole training step around it (the main schedule, with a model): its strips.
    step: Option<Arc<Step>>,
}

/// The same drawing: the same label, analysis and causes (the same computations, not equal
/// values: comparing timelines would cost what redrawing saves).
impl PartialEq for Shown {
    fn eq(&self, other: &Shown) -> bool {
        let same_causes = match (&self.causes, &other.causes) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        // The step is composed with the analysis: the same analysis, the same step.
        self.label == other.label
            && Arc::ptr_eq(&self.analysis, &other.analysis)
            && same_causes
            && self.step.is_some() == other.step.is_some()
    }
}

/// What a redraw draws from the outcome: the schedules, whether they are stale, whether the
/// first result is still on its way, and the memory limit line. Extras that arrive after the
/// chart change none of it unless the gaps are shaded, so they redraw nothing.
#[derive(Clone, PartialEq)]
struct Drawn {
    panels: Vec<Shown>,
    stale: bool,
    waiting: bool,
    mem_limit: Option<f64>,
}

impl Drawn {
    fn of(state: AppState, with_causes: bool) -> Drawn {
        let (panels, stale) = shown(state, with_causes);
        let (waiting, mem_limit) = state.outcome.with(|o| (o.is_waiting(), o.params.mem_limit));
        Drawn { panels, stale, waiting, mem_limit }
    }
}

/// What the pointer is over.
#[derive(Clone, Debug, PartialEq)]
struct Tip {
    x: f64,
    y: f64,
    title: String,
    lines: Vec<String>,
    microbatch: u32,
}

/// The schedules to draw: the main one (or the last good one while the settings are
/// invalid), then the comparisons that computed.
fn shown(state: AppState, with_causes: bool) -> (Vec<Shown>, bool) {
    let outcome = state.outcome.get();
    let mut stale = false;
    let main: Option<Computed> = match &outcome.main.result {
        Ok(_) => Some(outcome.main.clone()),
        Err(_) => {
            stale = true;
            state.last_good.get()
        }
    };
    // Gap shading: every schedule computed at the outcome's costs, with its causes (the last
    // good one shown while the settings are invalid ran at other costs, so it stays plain).
    let shade = |c: &Computed| c.extras.as_ref().and_then(|e| e.causes.clone()).filter(|_| with_causes && !stale);
    let mut out: Vec<Shown> = main
        .into_iter()
        .filter_map(|c| {
            let step = c.step.as_ref().and_then(|s| s.as_ref().ok()).map(|s| Arc::new(s.clone()));
            c.result.clone().ok().map(|a| Shown { label: c.label.clone(), analysis: a, causes: shade(&c), step })
        })
        .collect();
    if !stale {
        for c in &outcome.compare {
            if let Ok(a) = &c.result {
                out.push(Shown { label: c.label.clone(), analysis: a.clone(), causes: shade(c), step: None });
            }
        }
    }
    (out, stale)
}

/// Height an embed keeps for everything but the chart's rows: the legend, title and axis of the
/// figure (104 px), its padding, the playback bar and the line of numbers.
const EMBED_CHROME: f64 = 216.0;

/// The space between rows that core's Gantt chart leaves: 4 px under rows of 10 px or more,
/// 1 px under thinner ones.
fn row_gap(row: f64) -> f64 {
    if row >= 10.0 {
        4.0
    } else {
        1.0
    }
}

/// A row's height for `devices` rows: 24 px up to 16 devices, then 14, then 12, so rows stay
/// readable on every screen. Embedded in a frame `frame_height` high, rows shrink (to 6 px at
/// least) until the chart and its playback bar fit it.
fn row_height(devices: u32, frame_height: Option<f64>) -> f64 {
    let full = match devices {
        0..=16 => 24.0,
        17..=40 => 14.0,
        _ => 12.0,
    };
    let Some(h) = frame_height.filter(|_| devices > 0) else { return full };
    let pitch = ((h - EMBED_CHROME) / f64::from(devices)).floor();
    // Under a 14 px pitch the row is thinner than 10 px, so its gap is 1 px.
    let row = if pitch >= 14.0 { pitch - 4.0 } else { (pitch - 1.0).min(9.5) };
    row.clamp(6.0, full)
}

/// The frame height the Export menu's embed snippet asks for: every row at full height and the
/// embed's chrome, rounded up to 10 px, between 320 and 720 px (taller charts shrink their rows).
pub(crate) fn embed_frame_height(devices: u32) -> u32 {
    let row = row_height(devices, None);
    let rows = (row + row_gap(row)) * f64::from(devices);
    ((rows + EMBED_CHROME) / 10.0).ceil().clamp(32.0, 72.0) as u32 * 10
}

/// Whether idle gaps are shaded by cause (`causes=1`, a view preference).
fn causes_shown(state: AppState) -> bool {
    state.link.with(|l| l.extra(CAUSES_KEY) == Some("1"))
}

/// What the chart's parts share: the state, the last drawn figure's geometry and schedules,
/// the tooltip and the toggles.
#[derive(Clone, Copy)]
struct Chart {
    state: AppState,
    /// The Gantt chart's geometry as last drawn (hit testing, zoom, pan).
    geometry: StoredValue<Option<GanttGeometry>>,
    /// The schedules as last drawn.
    drawn: StoredValue<Vec<Shown>>,
    /// The tooltip under the pointer.
    tip: RwSignal<Option<Tip>>,
    /// Whether the memory chart is shown.
    show_memory: RwSignal<bool>,
    /// Only the shading toggle's value, so other changes of the link (the cursor's `t=`) never
    /// redraw.
    with_causes: Memo<bool>,
    /// Embedded: rows shrink so the whole chart fits the frame's height.
    compact: bool,
    /// What the memory chart on its canvas was drawn from: a redraw that changes none of it
    /// (the extras arriving, a highlight) leaves the canvas as it is.
    memory_drawn: StoredValue<Option<MemoryKey>>,
}

/// What the memory chart depends on: the analyses (by identity), the width and pixel ratio,
/// the theme, the visible range, the limit and the units.
#[derive(Clone, PartialEq)]
struct MemoryKey {
    analyses: Vec<usize>,
    width: f64,
    scale: f64,
    theme: ThemeChoice,
    range: Option<(f64, f64)>,
    mem_limit: Option<f64>,
    units: bubblescope::units::Units,
}

impl Chart {
    fn new(state: AppState, compact: bool) -> Chart {
        Chart {
            state,
            geometry: StoredValue::new(None),
            drawn: StoredValue::new(Vec::new()),
            tip: RwSignal::new(None),
            show_memory: RwSignal::new(!compact || state.link.with_untracked(|l| l.extra("memory") == Some("1"))),
            with_causes: Memo::new(move |_| causes_shown(state)),
            compact,
            memory_drawn: StoredValue::new(None),
        }
    }

    /// Shows the time range `(a, b)`, kept inside the schedule.
    fn show_range(self, a: f64, b: f64) {
        let (a, b) = clamp_range(a, b, full_end(self.state));
        self.state.view.update(|v| v.range = Some((a, b)));
    }

    /// Zooms around the middle of the visible range by `factor` (below 1: in).
    fn zoom(self, factor: f64) {
        let Some(geo) = self.geometry.get_value() else { return };
        let (t0, t1) = (geo.axis.t0, geo.axis.t1);
        let mid = (t0 + t1) / 2.0;
        self.show_range(mid - (mid - t0) * factor, mid + (t1 - mid) * factor);
    }

    /// Moves the visible range by `fraction` of its width.
    fn pan(self, fraction: f64) {
        let Some(geo) = self.geometry.get_value() else { return };
        let (t0, t1) = (geo.axis.t0, geo.axis.t1);
        let dt = (t1 - t0) * fraction;
        self.show_range(t0 + dt, t1 + dt);
    }

    /// The tooltip for the point `(x, y)` of the Gantt canvas: a pass, or a shaded gap.
    fn hit(self, x: f64, y: f64) -> Option<Tip> {
        let geo = self.geometry.get_value()?;
        let (panel, device) = geo.row_at(y)?;
        if x < geo.axis.x0 || x > geo.axis.x1 {
            return None;
        }
        let t = geo.axis.t(x);
        self.drawn.with_value(|panels| {
            let s = panels.get(panel)?;
            let a = &s.analysis;
            let Some(pos) = a.timeline.op_at(device, t) else {
                // An idle gap, when shaded: what it waited for and why.
                let r = geo.gap_at(x, y)?;
                let gap = s.causes.as_ref()?.devices.get(r.device as usize)?.get(r.index)?;
                return Some(describe_gap(a, gap, x, y));
            };
            let op = a.schedule.orders[device as usize][pos];
            let timed = a.timeline.devices[device as usize].ops[pos];
            let mut tip = describe(a, device, op, timed, x, y);
            // A measured run and its prediction: the same op in the other panel.
            let measured = self.state.file.with_untracked(|f| f.as_ref().is_some_and(|f| f.measured.is_some()));
            if measured && panel < 2 && panels.len() >= 2 {
                let took = |s: &Shown| {
                    let o = s.analysis.timeline.devices.get(device as usize)?.ops.get(pos)?;
                    Some(o.end - o.start)
                };
                if let (Some(m), Some(p)) = (took(&panels[0]), took(&panels[1])) {
                    let u = self.state.units_untracked();
                    let sign = if m >= p { "+" } else { "−" };
                    tip.lines.push(format!(
                        "measured {} · predicted {} · measured − predicted {sign}{}",
                        u.time_detail(m),
                        u.time_detail(p),
                        u.time_detail((m - p).abs())
                    ));
                }
            }
            Some(tip)
        })
    }
}

/// The canvases a redraw draws on, and what it reports.
#[derive(Clone, Copy)]
struct Canvases {
    container: NodeRef<Div>,
    gantt: NodeRef<Canvas>,
    memory: NodeRef<Canvas>,
    width: ReadSignal<f64>,
    /// A drawing error to show.
    error: RwSignal<Option<String>>,
    /// The last valid schedule is shown while the settings are invalid.
    stale: RwSignal<bool>,
    /// Nothing valid to show.
    nothing: RwSignal<bool>,
    /// Redraws so far (`data-redraws`).
    redraws: RwSignal<u64>,
}

/// Draws the schedules on the canvases: the figure the SVG export draws, at the canvas' width
/// and pixel ratio.
fn redraw(
    chart: Chart,
    canvases: Canvases,
    drawn: Memo<Drawn>,
    units: Memo<bubblescope::units::Units>,
    focus: Memo<Option<Arc<Focus>>>,
    playback: Playback,
) {
    let state = chart.state;
    let effect_start = now_ms();
    let Drawn { panels, stale: is_stale, waiting, mem_limit } = drawn.get();
    canvases.stale.set(is_stale && !waiting && !panels.is_empty());
    canvases.nothing.set(is_stale && !waiting && panels.is_empty());
    let w = canvases.width.get();
    let theme = state.theme.get().theme();
    let view = state.view.get();
    let with_memory = chart.show_memory.get();
    let Some(canvas) = canvases.gantt.get() else { return };
    if w < 50.0 || panels.is_empty() {
        return;
    }
    let items: Vec<FigureItem<'_>> = panels
        .iter()
        .map(|s| FigureItem {
            label: s.label.as_str(),
            analysis: &s.analysis,
            causes: s.causes.as_deref(),
            step: s.step.as_deref(),
        })
        .collect();
    let devices: u32 = panels.iter().map(|s| s.analysis.schedule.devices()).sum();
    // Embedded: the frame's height, less the memory chart's when it is shown.
    let memory_shown = if with_memory { MEMORY_HEIGHT * panels.len() as f64 + 8.0 } else { 0.0 };
    let frame_height = chart
        .compact
        .then(|| web_sys::window().and_then(|w| w.inner_height().ok()?.as_f64()))
        .flatten()
        .map(|h| h - memory_shown - lesson_bar_height());
    let row_height = row_height(devices, frame_height);
    let scale = device_pixel_ratio();
    let memory_key = with_memory.then(|| MemoryKey {
        analyses: panels.iter().map(|s| Arc::as_ptr(&s.analysis) as usize).collect(),
        width: w,
        scale,
        theme: state.theme.get_untracked(),
        range: view.range,
        mem_limit,
        units: units.get_untracked(),
    });
    // The memory chart on its canvas already shows these analyses at this size.
    let memory_current = memory_key.is_some() && chart.memory_drawn.with_value(|k| *k == memory_key);
    let opts = FigureOptions {
        width: w,
        scale,
        row_height,
        memory: with_memory && !memory_current,
        memory_height: MEMORY_HEIGHT,
        mem_limit,
        theme,
        time_range: view.range,
        highlight: view.highlight,
        focus: focus.get(),
        units: units.get(),
        causes: panels.iter().any(|s| s.causes.is_some()),
    };
    let t0 = now_ms();
    let fig = figure(&items, &opts);
    let t1 = now_ms();
    let result = draw_scene(&canvas, &fig.gantt, w, fig.geometry.height);
    let t2 = now_ms();
    let scene = &fig.gantt;
    let _ = canvas.set_attribute("data-drawn", &scene.counts.drawn.to_string());
    let _ = canvas.set_attribute("data-merged", &scene.counts.merged.to_string());
    let _ = canvas.set_attribute("data-culled", &scene.counts.culled.to_string());
    // What each stacked panel is, for assistive technology and tests.
    let labels: Vec<&str> = panels.iter().map(|s| s.label.as_str()).collect();
    let _ = canvas.set_attribute("data-panels", &labels.join(" | "));
    // What memory the schedules trade for time: their recompute passes and host copies.
    let (recomputes, copies) =
        panels.iter().map(|s| trade_counts(&s.analysis.schedule)).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let _ = canvas.set_attribute("data-recomputes", &recomputes.to_string());
    let _ = canvas.set_attribute("data-copies", &copies.to_string());
    // What the focus picks out: passes outlined and passes shown, for tests.
    let picked = opts.focus.as_deref().zip(panels.first()).map(|(f, s)| f.counts(&s.analysis));
    let _ = canvas.set_attribute("data-focus", &picked.map_or_else(String::new, |(o, n)| format!("{o} {n}")));
    canvases.error.set(result.err());
    let mut frame = ChartFrame {
        geometry: fig.geometry.clone(),
        analyses: panels.iter().map(|s| s.analysis.clone()).collect(),
        width: w,
        memory: None,
    };
    let mem_canvas = canvases.memory.get();
    if with_memory && mem_canvas.is_some() {
        let css_height = MEMORY_HEIGHT * items.len() as f64;
        // The cursor runs over the first schedule's memory chart, the top of the stack.
        let (top, bottom) = memory_plot_band(&MemoryOptions { height: MEMORY_HEIGHT, ..MemoryOptions::default() });
        frame.memory = Some((top, bottom, css_height));
    }
    if let (Some(memory), Some(mem_canvas)) = (&fig.memory, mem_canvas) {
        let css_height = MEMORY_HEIGHT * items.len() as f64;
        let drawn = draw_scene(&mem_canvas, memory, w, css_height);
        chart.memory_drawn.set_value(if drawn.is_ok() { memory_key } else { None });
        if let Err(e) = drawn {
            canvases.error.set(Some(e));
        }
    } else if !with_memory {
        chart.memory_drawn.set_value(None);
    }
    let items_drawn = scene.items.len();
    chart.geometry.set_value(Some(fig.geometry));
    playback.frame.set(Some(frame));
    let t3 = now_ms();
    // Timings for the browser benchmark: layout, canvas drawing, memory chart (ms), items
    // drawn, when the redraw started, how long before the layout, and when it ended.
    let timings = format!(
        "{:.1} {:.1} {:.1} {} {:.1} {:.1} {:.1}",
        t1 - t0,
        t2 - t1,
        t3 - t2,
        items_drawn,
        effect_start,
        t0 - effect_start,
        t3
    );
    let _ = canvas.set_attribute("data-timings", &timings);
    chart.drawn.set_value(panels);
    if canvases.redraws.get_untracked() == 0 {
        // Right after the first chart, before anyone can touch a control: the rest of the
        // page, then the warm-up.
        super::show_rest(state);
        schedule_warm_up(state, opts, WARM_UP_ROUNDS);
        mark_first_frame(canvases.container);
    }
    canvases.redraws.update(|n| *n += 1);
    if let Some(el) = canvases.container.get() {
        let _ = el.set_attribute("data-redraws", &canvases.redraws.get_untracked().to_string());
    }
}

/// The height of the lesson bar above an embedded chart (0 without a lesson).
fn lesson_bar_height() -> f64 {
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("lesson-bar"))
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
        .map_or(0.0, |e| f64::from(e.offset_height()) + 6.0)
}

/// What the chart picks out of the main schedule ([`FocusSource`]), on the schedule now shown
/// (nothing while the settings are invalid and an older schedule is shown).
fn focus_of(state: AppState) -> Option<Arc<Focus>> {
    let source = state.focus.get();
    if source == FocusSource::None {
        return None;
    }
    state.outcome.with(|o| {
        let analysis = o.main.result.as_ref().ok()?;
        let focus = match source {
            FocusSource::None => return None,
            FocusSource::Term { memory, index } => {
                let explanation = bubblescope::registry::family(&o.main.name)?.explanation(&o.params)?;
                let formula = if memory { explanation.memory } else { explanation.bubble }?;
                Focus::of_marks(&formula.terms.get(index)?.marks, analysis)
            }
            FocusSource::Derive(at) => {
                let steps = bubblescope::derive::derive(analysis, state.units_untracked());
                Focus::placing(&steps, at.min(steps.len().saturating_sub(1)))
            }
        };
        Some(Arc::new(focus))
    })
}

/// Writes when the frame that shows the first chart runs (`data-first-frame`, milliseconds
/// from navigation), for the browser benchmark: the next animation frame after the first
/// redraw is the one that paints it.
fn mark_first_frame(container: NodeRef<Div>) {
    // The time the callback runs, not the frame's own timestamp, which can precede tasks that
    // held the frame back.
    let mark = Closure::once_into_js(move || {
        let at = crate::state::now_ms();
        if let Some(el) = container.get_untracked() {
            let _ = el.set_attribute("data-first-frame", &format!("{at:.1}"));
        }
    });
    if let Some(w) = web_sys::window() {
        let _ = w.request_animation_frame(mark.unchecked_ref());
    }
}

/// A schedule's recompute passes and its copies to and from the host.
fn trade_counts(schedule: &bubblescope::Schedule) -> (usize, usize) {
    let recomputes = schedule
        .orders
        .iter()
        .flatten()
        .flat_map(bubblescope::Op::passes)
        .filter(|p| p.kind == bubblescope::PassKind::R)
        .count();
    (recomputes, schedule.copies.iter().map(Vec::len).sum())
}

/// The Gantt and memory charts with their toolbar.
#[component]
pub fn ChartCard(
    /// Embedded: no toolbar, no memory chart unless the link asks for `memory=1`.
    #[prop(optional)]
    compact: bool,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    let chart = Chart::new(state, compact);
    let container: NodeRef<Div> = NodeRef::new();
    let canvases = Canvases {
        container,
        gantt: NodeRef::new(),
        memory: NodeRef::new(),
        width: use_width(container),
        error: RwSignal::new(None),
        stale: RwSignal::new(false),
        nothing: RwSignal::new(false),
        redraws: RwSignal::new(0),
    };
    let playback = Playback::provide(state);
    // The units, read from the link, would make every change of it redraw.
    let units = Memo::new(move |_| state.units());
    let with_causes = chart.with_causes;
    let drawn = Memo::new(move |_| Drawn::of(state, with_causes.get()));
    let focus = Memo::new(move |_| focus_of(state));
    // Draw whenever the schedules, the size, the theme or the view change.
    Effect::new(move |_| redraw(chart, canvases, drawn, units, focus, playback));
    let (show_memory, error) = (chart.show_memory, canvases.error);
    view! {
        <section class="card chart-card" class:compact=compact aria-label="Schedule chart">
            <ChartToolbar chart=chart compact=compact/>
            <div class="chart-wrap" node_ref=container>
                <Progress/>
                <EngineNote/>
                <ChartNotes stale=canvases.stale nothing=canvases.nothing/>
                <div class="layer">
                    <GanttCanvas chart=chart canvas=canvases.gantt/>
                    <PlaybackOverlay layer=Layer::Gantt/>
                </div>
                <ChartTooltip tip=chart.tip/>
                <PlaybackBar/>
                <Show when=move || show_memory.get()>
                    <div class="layer">
                    <canvas class="memory" node_ref=canvases.memory data-testid="memory-chart" role="img"
                        aria-label="Activation memory over time per device"></canvas>
                    <PlaybackOverlay layer=Layer::Memory/>
                    </div>
                </Show>
                <Show when=move || error.get().is_some()>
                    <p class="field-error" role="alert">{move || error.get()}</p>
                </Show>
            </div>
        </section>
    }
}

/// Zoom buttons, the hint, and the toggles of the gap shading and the memory chart.
#[component]
fn ChartToolbar(chart: Chart, compact: bool) -> impl IntoView {
    let state = chart.state;
    let zoomed = move || state.view.with(|v| v.range.is_some());
    let highlight = move || state.view.with(|v| v.highlight);
    let (with_causes, show_memory) = (chart.with_causes, chart.show_memory);
    view! {
        <div class="toolbar" hidden=compact>
            <div class="toolbar-left">
                <button type="button" class="icon-button" title="Zoom in (+, or Ctrl + wheel)" aria-label="Zoom in" on:click=move |_| chart.zoom(0.5)>"+"</button>
                <button type="button" class="icon-button" title="Zoom out (−)" aria-label="Zoom out" on:click=move |_| chart.zoom(2.0)>"−"</button>
                <button type="button" class="button ghost small" title="Show the whole schedule (0, or double-click)" disabled=move || !zoomed()
                    on:click=move |_| state.view.update(|v| v.range = None)>"Fit"</button>
                <span class="hint">
                    {move || match highlight() {
                        Some(mb) => format!("Microbatch {mb} highlighted · click it again or press Esc to clear"),
                        None => "Hover a pass for details · click to follow its microbatch · drag to pan · Ctrl+wheel to zoom".to_string(),
                    }}
                </span>
            </div>
            <div class="toolbar-right">
            <label class="toggle" title="Shade idle time by why it is there: communication, unequal stages, or the schedule itself">
                <input type="checkbox" data-testid="causes-toggle" prop:checked=move || with_causes.get()
                    on:change=move |ev| {
                        let on = event_target_checked(&ev);
                        state.link.update(|l| l.set_extra(CAUSES_KEY, on.then(|| "1".to_string())));
                    } />
                " Bubble causes"
            </label>
            <label class="toggle">
                <input type="checkbox" prop:checked=move || show_memory.get() on:change=move |ev| show_memory.set(event_target_checked(&ev)) />
                " Memory chart"
            </label>
            </div>
        </div>
    }
}

/// Why the chart shows an older schedule, or nothing.
#[component]
fn ChartNotes(stale: RwSignal<bool>, nothing: RwSignal<bool>) -> impl IntoView {
    view! {
        <Show when=move || stale.get()>
            <div class="stale-note" role="status">"Showing the last valid schedule — fix the highlighted setting to update."</div>
        </Show>
        <Show when=move || nothing.get()>
            <div class="stale-note" role="status" data-testid="nothing-note">"Nothing to draw yet — fix the highlighted setting."</div>
        </Show>
    }
}

/// The Gantt canvas and its pointer, wheel and keyboard handling: hover for a tooltip, click
/// to follow a microbatch, drag to pan, Ctrl + wheel to zoom.
#[component]
fn GanttCanvas(chart: Chart, canvas: NodeRef<Canvas>) -> impl IntoView {
    let state = chart.state;
    let (geometry, tip) = (chart.geometry, chart.tip);
    // Where a drag started (x) and the range it started from.
    let drag = StoredValue::new(None::<(f64, (f64, f64))>);
    let on_move = move |ev: web_sys::PointerEvent| {
        let (x, y) = (f64::from(ev.offset_x()), f64::from(ev.offset_y()));
        if let Some((x0, (t0, t1))) = drag.get_value() {
            if ev.buttons() & 1 == 1 {
                if let Some(geo) = geometry.get_value() {
                    let per_px = (t1 - t0) / (geo.axis.x1 - geo.axis.x0).max(1.0);
                    let dt = (x - x0) * per_px;
                    chart.show_range(t0 - dt, t1 - dt);
                }
                tip.set(None);
                return;
            }
            drag.set_value(None);
        }
        tip.set(chart.hit(x, y));
    };
    let on_down = move |ev: web_sys::PointerEvent| {
        if let Some(geo) = geometry.get_value() {
            drag.set_value(Some((f64::from(ev.offset_x()), (geo.axis.t0, geo.axis.t1))));
        }
    };
    let on_up = move |ev: web_sys::PointerEvent| {
        let moved = drag.get_value().is_some_and(|(x0, _)| (f64::from(ev.offset_x()) - x0).abs() > 3.0);
        drag.set_value(None);
        if !moved {
            // A click: highlight that microbatch's path, or clear it.
            let t = chart.hit(f64::from(ev.offset_x()), f64::from(ev.offset_y()));
            state.view.update(|v| {
                v.highlight = match (t, v.highlight) {
                    (Some(t), Some(h)) if t.microbatch == h => None,
                    (Some(t), _) => Some(t.microbatch),
                    (None, _) => None,
                };
            });
        }
    };
    let on_wheel = move |ev: web_sys::WheelEvent| {
        let Some(geo) = geometry.get_value() else { return };
        let (t0, t1) = (geo.axis.t0, geo.axis.t1);
        if ev.ctrl_key() || ev.meta_key() {
            ev.prevent_default();
            let at = geo.axis.t(f64::from(ev.offset_x()));
            let factor = if ev.delta_y() > 0.0 { 1.25 } else { 0.8 };
            chart.show_range(at - (at - t0) * factor, at + (t1 - at) * factor);
        } else if ev.shift_key() || ev.delta_x().abs() > ev.delta_y().abs() {
            ev.prevent_default();
            let delta = if ev.shift_key() { ev.delta_y() } else { ev.delta_x() };
            let dt = delta / (geo.axis.x1 - geo.axis.x0).max(1.0) * (t1 - t0);
            chart.show_range(t0 + dt, t1 + dt);
        }
    };
    let on_key = move |ev: web_sys::KeyboardEvent| {
        match ev.key().as_str() {
            "+" | "=" => chart.zoom(0.5),
            "-" | "_" => chart.zoom(2.0),
            "ArrowLeft" => chart.pan(-0.2),
            "ArrowRight" => chart.pan(0.2),
            "0" => state.view.update(|v| v.range = None),
            "Escape" => state.view.update(|v| v.highlight = None),
            _ => return,
        }
        ev.prevent_default();
    };
    view! {
        <canvas
            class="gantt"
            node_ref=canvas
            data-testid="gantt-canvas"
            tabindex="0"
            role="img"
            aria-label=move || {
                let o = state.outcome.get();
                format!("Gantt chart of {}", o.main.label)
            }
            on:pointermove=on_move
            on:pointerdown=on_down
            on:pointerup=on_up
            on:pointerleave=move |_| { tip.set(None); drag.set_value(None); }
            on:wheel=on_wheel
            on:dblclick=move |_| state.view.update(|v| v.range = None)
            on:keydown=on_key
        ></canvas>
    }
}

/// The tooltip of what the pointer is over.
#[component]
fn ChartTooltip(tip: RwSignal<Option<Tip>>) -> impl IntoView {
    move || {
        tip.get().map(|t| {
            let left = format!("{}px", t.x + 14.0);
            let top = format!("{}px", t.y + 14.0);
            view! {
                <div class="tooltip" role="tooltip" data-testid="tooltip" style:left=left style:top=top>
                    <div class="tooltip-title">{t.title}</div>
                    {t.lines.into_iter().map(|l| view! { <div>{l}</div> }).collect_view()}
                </div>
            }
        })
    }
}

/// How many off-screen redraws [`warm_up`] does after the first chart, one task each.
const WARM_UP_ROUNDS: u32 = 6;

/// Runs [`warm_up`] `rounds` times, each in its own task so input is never held up.
fn schedule_warm_up(state: AppState, opts: FigureOptions, rounds: u32) {
    if rounds == 0 {
        return;
    }
    let task = Closure::once_into_js(move || {
        warm_up(state, &opts);
        schedule_warm_up(state, opts, rounds - 1);
    });
    if let Some(w) = web_sys::window() {
        let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(task.unchecked_ref(), 0);
    }
}

/// Computes and draws, off-screen, the schedule one microbatch away from the current settings,
/// and throws it away.
///
/// The first slider moves after loading took 5 to 20 times longer than the ones after them (the
/// browser benchmark's p95), as a trace shows: V8 compiles wasm functions lazily, on their first
/// call (about 30 functions, 35 ms here), the module's memory grows the first time a second
/// schedule is alive beside the first (6 grows, 34 ms), and the hot functions then run
/// unoptimised while their optimised code compiles in the background (about 250 ms of
/// compiling on the machine's other core). Doing a few such redraws right after the first
/// chart, on a canvas that is never shown, pays all three before anyone moves a control.
/// Settings the page would not compute itself (they go to the worker) are left alone.
fn warm_up(state: AppState, opts: &FigureOptions) {
    let mut next = state.settings.get_untracked();
    let m = next.params.microbatches;
    next.params.microbatches = if m < MAX_LIVE_MICROBATCHES { m + 1 } else { m.saturating_sub(1).max(1) };
    if state.file.with_untracked(Option::is_some) || !runs_on_page(&next, false) {
        return;
    }
    let outcome = compute(&next, None, Place::Page);
    let analyses: Vec<(String, Arc<Analysis>)> = std::iter::once(&outcome.main)
        .chain(&outcome.compare)
        .filter_map(|c| c.result.as_ref().ok().map(|a| (c.label.clone(), a.clone())))
        .collect();
    let items: Vec<FigureItem<'_>> = analyses.iter().map(|(label, a)| FigureItem::new(label, a)).collect();
    if items.is_empty() {
        return;
    }
    let fig = figure(&items, opts);
    let Some(canvas) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.create_element("canvas").ok())
        .and_then(|c| c.dyn_into::<web_sys::HtmlCanvasElement>().ok())
    else {
        return;
    };
    let _ = draw_scene(&canvas, &fig.gantt, opts.width, fig.geometry.height);
    if let Some(memory) = &fig.memory {
        let _ = draw_scene(&canvas, memory, opts.width, MEMORY_HEIGHT * items.len() as f64);
    }
}

/// The time the whole schedule ends (the zoom bound).
fn full_end(state: AppState) -> f64 {
    let (panels, _) = shown(state, false);
    panels.iter().map(|s| s.analysis.timeline.end()).fold(0.0, f64::max).max(1e-9)
}

/// Keeps a zoom range inside the schedule and not narrower than a millionth of it.
fn clamp_range(a: f64, b: f64, end: f64) -> (f64, f64) {
    let width = (b - a).clamp(end * 1e-6, end);
    let start = a.clamp(0.0, (end - width).max(0.0));
    (start, start + width)
}

/// The tooltip for an idle gap: how long, before which pass, what it waited for, its split.
fn describe_gap(a: &Analysis, gap: &bubblescope::gaps::Gap, x: f64, y: f64) -> Tip {
    let text = gap.describe(&a.schedule, |v| format_number(v, 4));
    // "idle … on device d — waited for …; schedule … · imbalance … · communication …"
    let (head, split) = text.split_once("; ").unwrap_or((text.as_str(), ""));
    let (title, waited) = head.split_once(" — ").unwrap_or((head, ""));
    let lines = [waited, split].into_iter().filter(|l| !l.is_empty()).map(str::to_string).collect();
    let microbatch = gap.waited.map_or(0, |w| w.pass.microbatch);
    Tip { x, y, title: title.to_string(), lines, microbatch }
}

/// The tooltip for op `op` on `device`.
fn describe(a: &Analysis, device: u32, op: Op, timed: bubblescope::sim::TimedOp, x: f64, y: f64) -> Tip {
    let n = |v: f64| format_number(v, 4);
    let pass_line = |p: Pass| {
        let chunk = a.schedule.placement.chunk_of(p.stage);
        let mut s = format!("{} · microbatch {} · stage {} (chunk {chunk})", p.kind.long_name(), p.microbatch, p.stage);
        if a.schedule.slices > 1 {
            s.push_str(&format!(" · slice {}", p.slice));
        }
        s
    };
    let (title, mut lines, microbatch) = match op {
        Op::One(p) => {
            (format!("{}{} on device {device}", p.kind.name(), p.microbatch), vec![pass_line(p)], p.microbatch)
        }
        Op::Pair(f, b) => (
            format!("F{} & {}{} overlapped on device {device}", f.microbatch, b.kind.name(), b.microbatch),
            vec![pass_line(f), pass_line(b)],
            f.microbatch,
        ),
    };
    lines.push(format!("start {} → end {} (takes {})", n(timed.start), n(timed.end), n(timed.end - timed.start)));
    match timed.waited_for {
        Some(r) => {
            let waited = a.schedule.orders[r.device as usize][r.position as usize];
            let end = a.timeline.devices[r.device as usize].ops[r.position as usize].end;
            let what = match waited {
                Op::One(p) => format!("{}{} (stage {})", p.kind.name(), p.microbatch, p.stage),
                Op::Pair(f, b) => format!("F{}&{}{}", f.microbatch, b.kind.name(), b.microbatch),
            };
            let via = if r.device == device { String::new() } else { format!(" + comm, from device {}", r.device) };
            lines.push(format!("waited for {what}, done at {}{via}", n(end)));
        }
        None => lines.push("started as soon as its device was free".to_string()),
    }
    Tip { x, y, title, lines, microbatch }
}
