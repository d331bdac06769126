//! The chart card: the Gantt canvas, the memory canvas, hover, click, zoom and pan.

use std::sync::Arc;

use bubblescope::gaps::Causes;
use bubblescope::render::{
    figure, memory_plot_band, FigureItem, FigureOptions, GanttGeometry, MemoryOptions, MEMORY_HEIGHT,
};
use bubblescope::units::format_number;
use bubblescope::{Analysis, Op, Pass};
use leptos::html::{Canvas, Div};
use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use super::playback::{ChartFrame, Layer, Playback, PlaybackBar, PlaybackOverlay};
use super::progress::{EngineNote, Progress};
use crate::canvas::{device_pixel_ratio, draw_scene, use_width};
use crate::causes::{causes_of, CAUSES_KEY};
use crate::engine::runs_on_page;
use crate::state::{compute, now_ms, AppState, Budget, Computed, MAX_LIVE_MICROBATCHES};

/// One drawn schedule.
#[derive(Clone)]
struct Shown {
    label: String,
    analysis: Arc<Analysis>,
    /// Why its idle gaps are there, while the gaps are shaded.
    causes: Option<Arc<Causes>>,
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
    let mut out: Vec<Shown> = main
        .into_iter()
        .filter_map(|c| c.result.ok().map(|a| Shown { label: c.label, analysis: a, causes: None }))
        .collect();
    if !stale {
        for c in &outcome.compare {
            if let Ok(a) = &c.result {
                out.push(Shown { label: c.label.clone(), analysis: a.clone(), causes: None });
            }
        }
        // Gap shading: every schedule computed at the outcome's costs (the last good one
        // shown while the settings are invalid ran at other costs, so it stays plain).
        if with_causes {
            for s in &mut out {
                s.causes = causes_of(&s.analysis, &outcome.params.costs);
            }
        }
    }
    (out, stale)
}

/// Whether idle gaps are shaded by cause (`causes=1`, a view preference).
fn causes_shown(state: AppState) -> bool {
    state.link.with(|l| l.extra(CAUSES_KEY) == Some("1"))
}

/// The Gantt and memory charts with their toolbar.
#[component]
pub fn ChartCard(
    /// Embedded: no toolbar, no memory chart unless the link asks for `memory=1`.
    #[prop(optional)]
    compact: bool,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    let container: NodeRef<Div> = NodeRef::new();
    let width = use_width(container);
    let gantt_ref: NodeRef<Canvas> = NodeRef::new();
    let memory_ref: NodeRef<Canvas> = NodeRef::new();
    let geometry = StoredValue::new(None::<GanttGeometry>);
    let drawn = StoredValue::new(Vec::<Shown>::new());
    let tip = RwSignal::new(None::<Tip>);
    let show_memory = RwSignal::new(!compact || state.link.with_untracked(|l| l.extra("memory") == Some("1")));
    let draw_error = RwSignal::new(None::<String>);
    let stale = RwSignal::new(false);
    let nothing = RwSignal::new(false);
    let drag = StoredValue::new(None::<(f64, (f64, f64))>);
    let redraws = RwSignal::new(0u64);
    let playback = Playback::provide(state);
    // Only the toggle's value, so other changes of the link (the cursor's `t=`) never redraw.
    let with_causes = Memo::new(move |_| causes_shown(state));
    // Likewise the units: read from the link, they would make every change of it redraw.
    let units = Memo::new(move |_| state.units());

    // Draw whenever the schedules, the size, the theme or the view change.
    Effect::new(move |_| {
        let effect_start = now_ms();
        let (panels, is_stale) = shown(state, with_causes.get());
        let waiting = state.outcome.with(|o| o.is_waiting());
        stale.set(is_stale && !waiting && !panels.is_empty());
        nothing.set(is_stale && !waiting && panels.is_empty());
        let w = width.get();
        let theme = state.theme.get().theme();
        let view = state.view.get();
        let with_memory = show_memory.get();
        let Some(canvas) = gantt_ref.get() else { return };
        if w < 50.0 || panels.is_empty() {
            return;
        }
        let dpr = device_pixel_ratio();
        let items: Vec<FigureItem<'_>> = panels
            .iter()
            .map(|s| FigureItem { label: s.label.as_str(), analysis: &s.analysis, causes: s.causes.as_deref() })
            .collect();
        let devices: u32 = panels.iter().map(|s| s.analysis.schedule.devices()).sum();
        let row_height = if devices <= 16 {
            24.0
        } else if devices <= 40 {
            14.0
        } else {
            // Never below 12 px: rows stay readable on every screen.
            12.0
        };
        // The same figure the SVG export draws, at this width and pixel ratio.
        let opts = FigureOptions {
            width: w,
            scale: dpr,
            row_height,
            memory: with_memory,
            memory_height: MEMORY_HEIGHT,
            mem_limit: state.outcome.with(|o| o.params.mem_limit),
            theme,
            time_range: view.range,
            highlight: view.highlight,
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
        draw_error.set(result.err());
        let mut frame = ChartFrame {
            geometry: fig.geometry.clone(),
            analyses: panels.iter().map(|s| s.analysis.clone()).collect(),
            width: w,
            memory: None,
        };
        if let (Some(memory), Some(mem_canvas)) = (&fig.memory, memory_ref.get()) {
            let css_height = MEMORY_HEIGHT * items.len() as f64;
            // The cursor runs over the first schedule's memory chart, the top of the stack.
            let (top, bottom) = memory_plot_band(&MemoryOptions { height: MEMORY_HEIGHT, ..MemoryOptions::default() });
            frame.memory = Some((top, bottom, css_height));
            if let Err(e) = draw_scene(&mem_canvas, memory, w, css_height) {
                draw_error.set(Some(e));
            }
        }
        let items_drawn = scene.items.len();
        geometry.set_value(Some(fig.geometry));
        playback.frame.set(Some(frame));
        let t3 = now_ms();
        // Timings for the browser benchmark: layout, canvas drawing, memory chart (ms).
        let _ = canvas.set_attribute(
            "data-timings",
            &format!(
                "{:.1} {:.1} {:.1} {} {:.1} {:.1}",
                t1 - t0,
                t2 - t1,
                t3 - t2,
                items_drawn,
                effect_start,
                t0 - effect_start
            ),
        );
        drawn.set_value(panels);
        if redraws.get_untracked() == 0 {
            // Right after the first chart, before anyone can touch a control.
            schedule_warm_up(state, opts, WARM_UP_ROUNDS);
        }
        redraws.update(|n| *n += 1);
        if let Some(el) = container.get() {
            let _ = el.set_attribute("data-redraws", &redraws.get_untracked().to_string());
        }
    });

    let hit = move |x: f64, y: f64| -> Option<Tip> {
        let geo = geometry.get_value()?;
        let (panel, device) = geo.row_at(y)?;
        if x < geo.axis.x0 || x > geo.axis.x1 {
            return None;
        }
        let t = geo.axis.t(x);
        drawn.with_value(|panels| {
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
            let measured = state.file.with_untracked(|f| f.as_ref().is_some_and(|f| f.measured.is_some()));
            if measured && panel < 2 && panels.len() >= 2 {
                let took = |s: &Shown| {
                    let o = s.analysis.timeline.devices.get(device as usize)?.ops.get(pos)?;
                    Some(o.end - o.start)
                };
                if let (Some(m), Some(p)) = (took(&panels[0]), took(&panels[1])) {
                    let u = units.get_untracked();
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
    };

    let on_move = move |ev: web_sys::PointerEvent| {
        let (x, y) = (f64::from(ev.offset_x()), f64::from(ev.offset_y()));
        if let Some((x0, (t0, t1))) = drag.get_value() {
            if ev.buttons() & 1 == 1 {
                if let Some(geo) = geometry.get_value() {
                    let per_px = (t1 - t0) / (geo.axis.x1 - geo.axis.x0).max(1.0);
                    let dt = (x - x0) * per_px;
                    let end = full_end(state);
                    let (a, b) = clamp_range(t0 - dt, t1 - dt, end);
                    state.view.update(|v| v.range = Some((a, b)));
                }
                tip.set(None);
                return;
            }
            drag.set_value(None);
        }
        tip.set(hit(x, y));
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
            let t = hit(f64::from(ev.offset_x()), f64::from(ev.offset_y()));
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
        let end = full_end(state);
        let (t0, t1) = (geo.axis.t0, geo.axis.t1);
        if ev.ctrl_key() || ev.meta_key() {
            ev.prevent_default();
            let at = geo.axis.t(f64::from(ev.offset_x()));
            let factor = if ev.delta_y() > 0.0 { 1.25 } else { 0.8 };
            let (a, b) = clamp_range(at - (at - t0) * factor, at + (t1 - at) * factor, end);
            state.view.update(|v| v.range = Some((a, b)));
        } else if ev.shift_key() || ev.delta_x().abs() > ev.delta_y().abs() {
            ev.prevent_default();
            let delta = if ev.shift_key() { ev.delta_y() } else { ev.delta_x() };
            let dt = delta / (geo.axis.x1 - geo.axis.x0).max(1.0) * (t1 - t0);
            let (a, b) = clamp_range(t0 + dt, t1 + dt, end);
            state.view.update(|v| v.range = Some((a, b)));
        }
    };
    let zoom = move |factor: f64| {
        let Some(geo) = geometry.get_value() else { return };
        let (t0, t1) = (geo.axis.t0, geo.axis.t1);
        let mid = (t0 + t1) / 2.0;
        let (a, b) = clamp_range(mid - (mid - t0) * factor, mid + (t1 - mid) * factor, full_end(state));
        state.view.update(|v| v.range = Some((a, b)));
    };
    let pan = move |fraction: f64| {
        let Some(geo) = geometry.get_value() else { return };
        let (t0, t1) = (geo.axis.t0, geo.axis.t1);
        let dt = (t1 - t0) * fraction;
        let (a, b) = clamp_range(t0 + dt, t1 + dt, full_end(state));
        state.view.update(|v| v.range = Some((a, b)));
    };
    let on_key = move |ev: web_sys::KeyboardEvent| {
        match ev.key().as_str() {
            "+" | "=" => zoom(0.5),
            "-" | "_" => zoom(2.0),
            "ArrowLeft" => pan(-0.2),
            "ArrowRight" => pan(0.2),
            "0" => state.view.update(|v| v.range = None),
            "Escape" => state.view.update(|v| v.highlight = None),
            _ => return,
        }
        ev.prevent_default();
    };
    let zoomed = move || state.view.with(|v| v.range.is_some());
    let highlight = move || state.view.with(|v| v.highlight);

    view! {
        <section class="card chart-card" class:compact=compact aria-label="Schedule chart">
            <div class="toolbar" hidden=compact>
                <div class="toolbar-left">
                    <button type="button" class="icon-button" title="Zoom in (+, or Ctrl + wheel)" aria-label="Zoom in" on:click=move |_| zoom(0.5)>"+"</button>
                    <button type="button" class="icon-button" title="Zoom out (−)" aria-label="Zoom out" on:click=move |_| zoom(2.0)>"−"</button>
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
            <div class="chart-wrap" node_ref=container>
                <Progress/>
                <EngineNote/>
                <Show when=move || stale.get()>
                    <div class="stale-note" role="status">"Showing the last valid schedule — fix the highlighted setting to update."</div>
                </Show>
                <Show when=move || nothing.get()>
                    <div class="stale-note" role="status" data-testid="nothing-note">"Nothing to draw yet — fix the highlighted setting."</div>
                </Show>
                <div class="layer">
                <canvas
                    class="gantt"
                    node_ref=gantt_ref
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
                <PlaybackOverlay layer=Layer::Gantt/>
                </div>
                {move || tip.get().map(|t| {
                    let left = format!("{}px", t.x + 14.0);
                    let top = format!("{}px", t.y + 14.0);
                    view! {
                        <div class="tooltip" role="tooltip" data-testid="tooltip" style:left=left style:top=top>
                            <div class="tooltip-title">{t.title}</div>
                            {t.lines.into_iter().map(|l| view! { <div>{l}</div> }).collect_view()}
                        </div>
                    }
                })}
                <PlaybackBar/>
                <Show when=move || show_memory.get()>
                    <div class="layer">
                    <canvas class="memory" node_ref=memory_ref data-testid="memory-chart" role="img"
                        aria-label="Activation memory over time per device"></canvas>
                    <PlaybackOverlay layer=Layer::Memory/>
                    </div>
                </Show>
                <Show when=move || draw_error.get().is_some()>
                    <p class="field-error" role="alert">{move || draw_error.get()}</p>
                </Show>
            </div>
        </section>
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
    let outcome = compute(&next, None, Budget::Page);
    let analyses: Vec<(String, Arc<Analysis>)> = std::iter::once(&outcome.main)
        .chain(&outcome.compare)
        .filter_map(|c| c.result.as_ref().ok().map(|a| (c.label.clone(), a.clone())))
        .collect();
    let items: Vec<FigureItem<'_>> =
        analyses.iter().map(|(label, a)| FigureItem { label, analysis: a, causes: None }).collect();
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
