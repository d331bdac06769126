//! The closed form taken apart: the family's bubble and peak-memory formulas in MathML, their
//! terms (hovering or focusing one picks its passes out of the chart), the values at these
//! settings against the simulated ones, the assumptions, and the schedule derived step by
//! step on the chart. Uses the state; the formulas and the steps come from core.

use bubblescope::derive::derive;
use bubblescope::families::formula::{Explanation, Formula};
use bubblescope::family;
use bubblescope::units::{format_bytes, format_micros, format_number};
use std::time::Duration;

use leptos::leptos_dom::helpers::TimeoutHandle;
use leptos::prelude::*;

use crate::state::{AppState, FocusSource, EXPLAIN_KEY};

/// How long the card waits for the schedule to settle before it follows (milliseconds).
const SETTLE_MS: u64 = 120;

/// What the card shows: the family's explanation at the settings and the simulated values.
#[derive(Clone, PartialEq)]
struct Explained {
    family: String,
    explanation: Option<Explanation>,
    bubble: f64,
    memory: f64,
}

/// A value in the run's units (µs and bytes from a model, cost units otherwise).
fn shown(state: AppState, memory: bool, v: f64) -> String {
    let units = state.units();
    match (memory, units.bytes(), units.micros()) {
        (true, true, _) => format_bytes(v),
        (false, _, true) => format_micros(v),
        _ => format_number(v, 4),
    }
}

/// The card.
#[component]
pub fn ExplainCard() -> impl IntoView {
    let state = expect_context::<AppState>();
    // Built a moment after the schedule settles, not on every step of a drag: the chart comes
    // first, and a card below it need not follow each slider value.
    let explained = RwSignal::new(None::<Explained>);
    // The derivation's step, while one is shown.
    let derive_at = RwSignal::new(None::<usize>);
    let timer = StoredValue::new(None::<TimeoutHandle>);
    let explain_now = move || {
        state.outcome.with_untracked(|o| {
            let a = o.main.result.as_ref().ok()?;
            let explanation = family(&o.main.name).and_then(|f| f.explanation(&o.params));
            let quantity = explanation.as_ref().map(|e| e.quantity);
            let bubble = quantity.map_or(a.stats.cost - a.stats.ideal, |q| q.of(&a.stats));
            Some(Explained { family: o.main.name.clone(), explanation, bubble, memory: a.stats.peak_memory })
        })
    };
    // Open (`explain=1` in the link) or folded; folded, it costs a moving slider nothing.
    let open = Memo::new(move |_| state.link.with(|l| l.extra(EXPLAIN_KEY) == Some("1")));
    let toggle = move |_| {
        let value = (!open.get_untracked()).then(|| "1".to_string());
        if value.is_none() {
            derive_at.set(None);
            state.focus.set(FocusSource::None);
        }
        state.link.update(|l| l.set_extra(EXPLAIN_KEY, value));
    };
    Effect::new(move |was_open: Option<bool>| {
        if !open.get() {
            return false;
        }
        state.outcome.track();
        if let Some(Some(t)) = timer.try_get_value() {
            t.clear();
        }
        if was_open != Some(true) {
            explained.set(explain_now());
            return true;
        }
        let handle = set_timeout_with_handle(
            move || {
                let now = explain_now();
                if explained.try_with_untracked(|e| *e != now) == Some(true) {
                    explained.set(now);
                }
            },
            Duration::from_millis(SETTLE_MS),
        )
        .ok();
        timer.set_value(handle);
        true
    });
    let steps = Memo::new(move |_| {
        derive_at.get()?;
        let units = state.units();
        state.outcome.with(|o| o.main.result.as_ref().ok().map(|a| derive(a, units)))
    });
    // Back to the derivation's step (or nothing) when the pointer leaves a term.
    let rest = move || derive_at.get_untracked().map_or(FocusSource::None, FocusSource::Derive);
    let go = move |at: Option<usize>| {
        derive_at.set(at);
        state.focus.set(at.map_or(FocusSource::None, FocusSource::Derive));
    };
    let count = move || steps.with(|s| s.as_ref().map_or(0, Vec::len));
    let formulas = move || {
        explained.get().map(|ex| match &ex.explanation {
            None => view! {
                <p class="muted" data-testid="explain-none">{format!("{} has no closed form at these settings: only the simulated values. The derivation below still shows how it is built.", ex.family)}</p>
            }
            .into_any(),
            Some(e) => {
                let bubble = e.bubble.clone().map(|f| formula_view(state, &f, e, false, ex.bubble, rest));
                let memory = e.memory.clone().map(|f| formula_view(state, &f, e, true, ex.memory, rest));
                let assumptions = e
                    .assumptions
                    .iter()
                    .map(|a| {
                        let mark = if a.holds { "✓" } else { "✗" };
                        view! { <li class:broken=!a.holds><span class="mark" aria-hidden="true">{mark}</span>{a.text.clone()}{(!a.holds).then_some(" (does not hold)")}</li> }
                    })
                    .collect_view();
                view! {
                    {bubble}
                    {memory}
                    <div class="assumptions" data-testid="explain-assumptions">
                        <div class="formula-label">"Assumptions"</div>
                        <ul>{assumptions}</ul>
                    </div>
                }
                .into_any()
            }
        })
    };
    // The step's parts, each its own reactive text, so the buttons (and the keyboard focus on
    // them) stay put while the steps change.
    let step = move || derive_at.get().and_then(|at| steps.with(|s| s.as_ref().and_then(|s| s.get(at).cloned())));
    let at_first = move || derive_at.get().is_none_or(|at| at == 0);
    let at_last = move || derive_at.get().is_none_or(|at| at + 1 >= count());
    let back = move || {
        if let Some(at) = derive_at.get_untracked() {
            go(Some(at.saturating_sub(1)));
        }
    };
    let next = move || {
        if let Some(at) = derive_at.get_untracked() {
            go(Some((at + 1).min(count().saturating_sub(1))));
        }
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        let Some(at) = derive_at.get_untracked() else { return };
        match ev.key().as_str() {
            "ArrowRight" => next(),
            "ArrowLeft" => back(),
            "Escape" => {
                let _ = at;
                go(None);
            }
            _ => return,
        }
        ev.prevent_default();
    };
    view! {
        <section class="card explain-card" class:open=move || open.get() data-testid="explain-card" aria-label="Why this bubble">
            <div class="card-head">
                <button type="button" class="card-title disclosure" data-testid="explain-toggle"
                    aria-expanded=move || open.get().to_string() on:click=toggle>
                    {move || if open.get() { "▾ Why this bubble" } else { "▸ Why this bubble" }}
                </button>
                <span class="muted small">{move || if open.get() { "hover a term to see its passes" } else { "the closed form term by term, and the schedule derived step by step" }}</span>
            </div>
            <Show when=move || open.get()>
            {formulas}
            <div class="derive" on:keydown=on_key>
                <Show when=move || derive_at.get().is_none()>
                    <button type="button" class="button" data-testid="derive-start" on:click=move |_| go(Some(0))>"Derive it step by step"</button>
                </Show>
                <Show when=move || derive_at.get().is_some()>
                    <div class="derive-step" data-testid="derive-step">
                        <div class="derive-head">
                            <button type="button" class="button small" data-testid="derive-prev" aria-label="Previous step"
                                aria-disabled=move || at_first().to_string() on:click=move |_| back()>"‹ Back"</button>
                            <span class="derive-count" aria-live="polite">
                                <strong>{move || format!("Step {} of {}", derive_at.get().unwrap_or(0) + 1, count())}</strong>
                                {move || step().map(|s| format!(" · {}", s.title))}
                            </span>
                            <button type="button" class="button small" data-testid="derive-next" aria-label="Next step"
                                aria-disabled=move || at_last().to_string() on:click=move |_| next()>"Next ›"</button>
                            <button type="button" class="button small ghost" data-testid="derive-done" on:click=move |_| go(None)>"Done"</button>
                        </div>
                        <p class="derive-caption" data-testid="derive-caption">{move || step().map(|s| s.caption)}</p>
                    </div>
                </Show>
            </div>
            </Show>
        </section>
    }
}

/// One formula: its MathML, its terms (each picks its passes out of the chart), and its value
/// against the simulated one.
fn formula_view(
    state: AppState,
    f: &Formula,
    e: &Explanation,
    memory: bool,
    simulated: f64,
    rest: impl Fn() -> FocusSource + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let value = f.value(&e.vars);
    let values = f.term_values(&e.vars);
    let holds = e.holds(if memory {
        bubblescope::families::formula::Needed::Memory
    } else {
        bubblescope::families::formula::Needed::Bubble
    });
    let agree = (value - simulated).abs() <= 1e-9 * simulated.abs().max(1.0);
    let label = if memory { "Peak activation memory" } else { "Bubble" };
    let sub = if memory { "the largest device's".to_string() } else { e.quantity.label().to_string() };
    let which = if memory { "memory" } else { "bubble" };
    let terms = f
        .terms
        .iter()
        .enumerate()
        .map(|(index, t)| {
            let located = !t.marks.is_empty();
            let pick = move || {
                if located {
                    state.focus.set(FocusSource::Term { memory, index });
                }
            };
            let expr = t.expr.math_element();
            let v = values.get(index).copied().unwrap_or(0.0);
            let sign = if t.negative { "−" } else { "+" };
            view! {
                <li>
                    <button type="button" class="term" class:located=located data-testid="explain-term" data-formula=which data-index=index.to_string()
                        title=if located { "Picks its passes out of the chart" } else { "Not located on the chart" }
                        on:mouseenter=move |_| pick() on:focus=move |_| pick()
                        on:mouseleave=move |_| state.focus.set(rest()) on:blur=move |_| state.focus.set(rest())>
                        <span class="term-sign" aria-hidden="true">{sign}</span>
                        <span class="term-expr" inner_html=expr></span>
                        <span class="term-name">{t.name}</span>
                        <span class="term-value">{shown(state, memory, v.abs())}</span>
                    </button>
                </li>
            }
        })
        .collect_view();
    let check = if !holds && agree {
        format!(
            "= {} at these settings · simulated {}: equal, though an assumption below does not hold",
            shown(state, memory, value),
            shown(state, memory, simulated)
        )
    } else if !holds {
        format!(
            "= {} at these settings, but an assumption below does not hold: simulated {}, {} {}",
            shown(state, memory, value),
            shown(state, memory, simulated),
            shown(state, memory, (simulated - value).abs()),
            if simulated >= value { "more" } else { "less" }
        )
    } else if agree {
        format!("= {} at these settings · simulated {} ✓", shown(state, memory, value), shown(state, memory, simulated))
    } else {
        format!(
            "= {} at these settings · simulated {} (differs by {})",
            shown(state, memory, value),
            shown(state, memory, simulated),
            shown(state, memory, (simulated - value).abs())
        )
    };
    view! {
        <div class="formula-block" data-testid=format!("explain-{which}")>
            <div class="formula-label">{label}<span class="muted">{format!(" · {sub}")}</span></div>
            <div class="formula" inner_html=f.mathml()></div>
            <ul class="terms">{terms}</ul>
            <div class="formula-check" class:broken=!holds data-testid=format!("explain-{which}-check")>{check}</div>
            <div class="formula-source muted">{f.source}</div>
        </div>
    }
}
