//! The attribution bar under the stats: `cost − ideal` of the main schedule (the GPU time a
//! step leaves idle, per device) split into communication, imbalance and schedule, every part
//! `≥ 0` (the numbers `simulate --json` prints as `attribution`), with the memory part beside
//! it when the core reports one.

use bubblescope::attribution::Parts;
use bubblescope::bounds::Standing;
use bubblescope::render::Cause;
use bubblescope::units::format_number;
use leptos::prelude::*;

use crate::state::AppState;

/// The split shown: which computation it belongs to, and its parts.
#[derive(Clone, Debug, PartialEq)]
struct Shown {
    id: u64,
    gap: f64,
    parts: Parts,
    /// The memory part (a memory-aware family against itself without a limit), reported
    /// beside the three, not inside them; `None` for families without a limit.
    memory: Option<f64>,
    /// The lower bound on any order of the same passes under the same limit, and how the
    /// cost stands against it.
    bound: Option<(f64, Standing)>,
}

/// The stacked bar of `cost − ideal` by cause.
#[component]
pub fn AttributionBar() -> impl IntoView {
    let state = expect_context::<AppState>();
    // Computed by the engine after the schedule: nothing runs here. While a result's extras
    // are on their way the bar keeps the last split (its `data-computation` says whose), so
    // the page below does not jump out and back on every slider step.
    let shown = Memo::new(move |last: Option<&Option<Shown>>| {
        let o = state.outcome.get();
        let a = o.main.result.as_ref().ok()?;
        let Some(extras) = o.main.extras.as_ref() else { return last.cloned().flatten() };
        let parts = extras.causes.as_ref()?.attribution.overall;
        let gap = a.stats.cost - a.stats.ideal;
        Some(Shown { id: o.id, gap, parts, memory: extras.memory, bound: extras.bound })
    });
    // In µs (ms, s) when the costs come from a model, as the tiles print them.
    let n = move |v: f64| state.units().time_detail(v);
    // Memory in GiB (MiB, …) with a model, as the memory tiles print it.
    let mem = move |v: f64| state.units().memory_detail(v);
    // Before the first split arrives, a placeholder of the bar's size holds its place, so the
    // chart below does not move under the pointer when the split lands.
    let waiting = move || state.outcome.with(|o| o.main.result.is_ok());
    let placeholder = move || {
        waiting().then(|| {
            view! {
                <section class="card attribution attr-waiting" aria-hidden="true" data-testid="attribution-waiting">
                    <div class="attr-head"><span class="attr-title">"Bubble by cause"</span><span class="muted">"…"</span></div>
                    <div class="attr-bar"></div>
                    <div class="attr-labels"><span class="attr-label">"\u{a0}"</span></div>
                </section>
            }
        })
    };
    view! {
        <Show when=move || shown.with(Option::is_some) fallback=placeholder>
            {move || shown.get().map(|s| {
                let positive: f64 = s.parts.total();
                let segments = Cause::STACK.iter().filter(|c| c.of(&s.parts) > 0.0).map(|c| {
                    let v = c.of(&s.parts);
                    let width = format!("{}%", v / positive.max(f64::MIN_POSITIVE) * 100.0);
                    view! {
                        <div class=format!("attr-seg cause-{}", c.name()) style:width=width
                            title=format!("{} {}", c.name(), n(v))></div>
                    }
                }).collect_view();
                let labels = Cause::STACK.iter().map(|c| {
                    let v = c.of(&s.parts);
                    view! {
                        <span class="attr-label" data-testid=format!("attribution-{}", c.name()) data-value=v.to_string()>
                            <span class=format!("attr-swatch cause-{}", c.name())></span>
                            {c.name()} " " <strong>{n(v)}</strong>
                        </span>
                    }
                }).collect_view();
                let memory = s.memory.map(|m| view! {
                    <span class="attr-label attr-memory" data-testid="attribution-memory" data-value=m.to_string()>
                        "memory limit " <strong>{n(m)}</strong> " (against no limit, beside the split)"
                    </span>
                });
                let summary = Cause::STACK
                    .iter()
                    .map(|c| format!("{} {}", c.name(), n(c.of(&s.parts))))
                    .collect::<Vec<_>>()
                    .join(", ");
                view! {
                    <section class="card attribution" data-testid="attribution-bar" data-computation=s.id.to_string()
                        aria-label="Bubble by cause">
                        <div class="attr-head">
                            <span class="attr-title">"Bubble by cause"</span>
                            <span class="muted" data-testid="attribution-total" data-value=s.gap.to_string()
                                title="the time each device idles in a step, on average (ideal is the mean device's work): communication is what the hops add, imbalance the busiest device's work over the mean's, schedule the rest">
                                "cost − ideal = " {n(s.gap)}
                            </span>
                            {s.bound.map(|(value, standing)| view! {
                                <span class="muted" data-testid="lower-bound" data-value=value.to_string()
                                    title="no order of the same passes under the same memory limit can finish sooner: the busiest device's work plus the fill its dependencies force">
                                    {match standing {
                                        Standing::Meets => format!("optimal: meets the lower bound {}", n(value)),
                                        Standing::Within(excess) => format!(
                                            "within {}% of the lower bound {}",
                                            format_number(excess * 100.0, 1),
                                            n(value)
                                        ),
                                        Standing::OverLimit { .. } => format!(
                                            "over the memory limit: orders within it take at least {}",
                                            n(value)
                                        ),
                                        Standing::NoneFits { least, .. } => format!(
                                            "no order fits the memory limit: a pass needs {} as it starts",
                                            mem(least)
                                        ),
                                    }}
                                </span>
                            })}
                        </div>
                        <div class="attr-bar" role="img" aria-label=summary>
                            {segments}
                        </div>
                        <div class="attr-labels">{labels}{memory}</div>
                    </section>
                }
            })}
        </Show>
    }
}
