//! "Compare all": every family at the current settings on one Pareto chart of peak memory
//! against time per iteration; clicking a point opens that schedule.
//!
//! The runs are the CLI's `sweep` runs (`bubblescope::plan`), the chart is core's
//! `render::pareto_chart` drawn by the one drawing routine.

use bubblescope::render::{pareto_chart, AxisUnit, ParetoGeometry, ParetoOptions};
use bubblescope::units::{format_bytes, format_micros, format_number};
use bubblescope::Field;
use leptos::html::{Canvas, Div};
use leptos::prelude::*;

use crate::canvas::{device_pixel_ratio, draw_scene, use_width};
use std::sync::Arc;

use crate::compare::{is_open, set_open, AllState, VIEW_KEY};
use crate::state::AppState;

/// Height of the chart in CSS pixels.
const HEIGHT: f64 = 420.0;

/// The card: the chart, the front in words, and what could not run.
#[component]
pub fn CompareAllCard() -> impl IntoView {
    let state = expect_context::<AppState>();
    let open = Memo::new(move |_| is_open(state));
    view! {
        <Show when=move || open.get()>
            <CompareAllView/>
        </Show>
    }
}

#[component]
fn CompareAllView() -> impl IntoView {
    let state = expect_context::<AppState>();
    // Computed in the background worker whenever the settings change (not on theme or zoom);
    // the chart keeps the last result meanwhile.
    let all = RwSignal::new(AllState::default());
    crate::engine::run_all(state, all);
    let sweep = Signal::derive(move || all.with(|a| a.result.clone()).unwrap_or_else(|| Ok(Arc::default())));
    let computing = move || all.with(|a| a.pending || a.result.is_none());
    let container: NodeRef<Div> = NodeRef::new();
    let width = use_width(container);
    let canvas_ref: NodeRef<Canvas> = NodeRef::new();
    let geometry = StoredValue::new(None::<ParetoGeometry>);
    let hover = RwSignal::new(None::<(f64, f64, String)>);
    let units = move || {
        if state.link.with(|l| l.model.given()) {
            (AxisUnit::Bytes, AxisUnit::Micros)
        } else {
            (AxisUnit::Plain, AxisUnit::Plain)
        }
    };
    Effect::new(move |_| {
        let w = width.get();
        let theme = state.theme.get().theme();
        let Some(canvas) = canvas_ref.get() else { return };
        let Ok(sweep) = sweep.get() else { return };
        if w < 100.0 || sweep.runs.is_empty() {
            return;
        }
        let points = sweep.pareto_points();
        let (memory_unit, time_unit) = units();
        let opts = ParetoOptions {
            width: w,
            height: HEIGHT,
            scale: device_pixel_ratio(),
            theme,
            mem_limits: state.outcome.with_untracked(|o| o.params.mem_limit).into_iter().collect(),
            memory_unit,
            time_unit,
            title: "Every family at these settings: peak memory against time per iteration".to_string(),
        };
        let (scene, geo) = pareto_chart(&points, &opts);
        geometry.set_value(Some(geo));
        let _ = draw_scene(&canvas, &scene, w, HEIGHT);
    });
    let run_at = move |ev: &web_sys::MouseEvent| -> Option<usize> {
        let canvas = canvas_ref.get_untracked()?;
        let rect = canvas.get_bounding_client_rect();
        let (x, y) = (f64::from(ev.client_x()) - rect.left(), f64::from(ev.client_y()) - rect.top());
        geometry.with_value(|g| g.as_ref().and_then(|g| g.hit(x, y)))
    };
    let describe = move |i: usize| -> Option<String> {
        let sweep = sweep.get_untracked().ok()?;
        let r = sweep.runs.get(i)?;
        let (mem, time) = if state.link.with_untracked(|l| l.model.given()) {
            (format_bytes(r.peak_memory), format_micros(r.cost))
        } else {
            (format_number(r.peak_memory, 3), format_number(r.cost, 3))
        };
        Some(format!(
            "{} — time {time} · peak memory {mem} · bubble {}%{} · click to open",
            r.family.title,
            format_number(r.bubble_rate * 100.0, 2),
            if r.pareto { " · on the front" } else { "" }
        ))
    };
    let on_move = move |ev: web_sys::MouseEvent| {
        let tip =
            run_at(&ev).and_then(|i| describe(i).map(|t| (f64::from(ev.offset_x()), f64::from(ev.offset_y()), t)));
        hover.set(tip);
    };
    let on_click = move |ev: web_sys::MouseEvent| {
        let Some(i) = run_at(&ev) else { return };
        let Ok(sweep) = sweep.get_untracked() else { return };
        let Some(r) = sweep.runs.get(i) else { return };
        let (name, chunks) = (r.family.name.to_string(), r.family.uses(Field::Chunks).then_some(r.chunks));
        state.update(|l| {
            l.schedule = name;
            if chunks.is_some() {
                l.params.chunks = chunks;
            }
            l.set_extra(VIEW_KEY, None);
        });
    };
    let front = move || {
        sweep.with(|s| {
            let s = s.as_ref().ok()?;
            let mut on: Vec<_> = s.runs.iter().filter(|r| r.pareto).collect();
            bubblescope::units::sort::sort_by(&mut on, |a, b| a.peak_memory.total_cmp(&b.peak_memory));
            Some(
                on.into_iter()
                    .map(|r| {
                        let name = r.family.name;
                        let title = r.family.title;
                        view! {
                            <button type="button" class="chip" data-family=name
                                on:click=move |_| state.update(|l| { l.schedule = name.to_string(); l.set_extra(VIEW_KEY, None); })>
                                {title}
                            </button>
                        }
                    })
                    .collect_view(),
            )
        })
    };
    let counts = move || {
        if all.with(|a| a.result.is_none()) {
            return "Running every family in the background…".to_string();
        }
        let note = if computing() { " Updating…" } else { "" };
        sweep.with(|s| match s {
            Ok(s) => format!(
                "{} families ran, {} on the front; {} could not run at these settings.{note}",
                s.runs.len(),
                s.runs.iter().filter(|r| r.pareto).count(),
                s.invalid.len()
            ),
            Err(e) => e.clone(),
        })
    };
    let invalid = move || {
        sweep.with(|s| {
            s.as_ref().ok().map(|s| {
                s.invalid
                    .iter()
                    .map(|r| {
                        let reason = r.error.lines().next().unwrap_or_default().to_string();
                        view! { <li><b>{r.family.title}</b>": " {reason}</li> }
                    })
                    .collect_view()
            })
        })
    };
    view! {
        <section class="card pareto-card" data-testid="compare-all-view" aria-label="Compare all families"
            aria-busy=move || computing().to_string() data-computing=move || computing().to_string()>
            <div class="card-head">
                <h2 class="card-title">"Compare all"</h2>
                <button type="button" class="icon-button" aria-label="Close the comparison of all families"
                    data-testid="compare-all-close" on:click=move |_| set_open(state, false)>"×"</button>
            </div>
            <div class="pareto-wrap" node_ref=container>
                <canvas node_ref=canvas_ref data-testid="pareto-canvas" class="pareto-canvas"
                    role="img" aria-label="Pareto chart of peak memory against time per iteration, one point per family"
                    on:mousemove=on_move on:mouseleave=move |_| hover.set(None) on:click=on_click></canvas>
                {move || hover.get().map(|(x, y, t)| view! {
                    <div class="tooltip" data-testid="pareto-tip" style=format!("left:{}px;top:{}px", x + 14.0, y + 10.0)>{t}</div>
                })}
            </div>
            <p class="help">{counts}</p>
            <div class="chips" data-testid="pareto-front"><span class="muted">"Pareto front: "</span>{front}</div>
            <details class="invalid-runs">
                <summary>"Could not run"</summary>
                <ul>{invalid}</ul>
            </details>
        </section>
    }
}
