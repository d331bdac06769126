//! Stats: headline tiles, the per-device table and the comparison table.

use bubblescope::model::{verdict, Holding};
use bubblescope::units::format_bytes;
use bubblescope::units::{format_micros, format_number};
use bubblescope::{family, BubbleMeasure};
use leptos::prelude::*;

use crate::balance::BalanceState;
use crate::state::{AppState, Baseline, UiError};

/// What each device of the main schedule holds of the model, when costs come from one.
fn holdings(state: AppState) -> Memo<Option<Vec<Holding>>> {
    let derived = Memo::new(move |_| state.settings.with(|s| s.derived().and_then(Result::ok)));
    Memo::new(move |_| {
        let d = derived.get()?;
        state.outcome.with(|o| o.main.result.as_ref().ok().map(|a| d.holdings(&a.schedule.placement)))
    })
}

/// Times and memory in the model's units (µs, bytes) when costs come from a model, else as
/// the CLI prints them.
fn time_text(state: AppState, v: f64) -> String {
    let units = state.units();
    if units.micros() {
        format_micros(v)
    } else {
        n(v)
    }
}

fn memory_text(state: AppState, v: f64) -> String {
    if state.units().bytes() {
        format_bytes(v)
    } else {
        n(v)
    }
}

/// One line naming the busiest device and why: "device 7 does 23% more work than the mean:
/// the LM head".
#[component]
pub fn BottleneckVerdict() -> impl IntoView {
    let state = expect_context::<AppState>();
    let holdings = holdings(state);
    let line = move || {
        let b = state.outcome.with(|o| o.main.result.as_ref().ok().and_then(|a| a.stats.bottleneck()))?;
        Some(holdings.with(|h| verdict(&b, h.as_deref())))
    };
    let balance = RwSignal::new(BalanceState::default());
    let has_model = move || state.link.with(|l| l.model.given());
    let pending = move || balance.with(|b| b.pending);
    // The answer shows while the settings are the ones it is about.
    let answer = move || {
        let current = state.settings.get();
        balance.with(|b| b.result.as_ref().filter(|(_, about)| *about == current).map(|(r, _)| r.clone()))
    };
    view! {
        {move || line().map(|l| view! {
            <p class="verdict" data-testid="bottleneck-verdict" role="status">
                <span class="verdict-tag">"Bottleneck"</span><span class="verdict-text">{l}</span>
                {move || has_model().then(|| view! {
                    <button type="button" class="button small" data-testid="balance-it"
                        aria-disabled=move || pending().to_string()
                        title="Search every family and layer split at these devices and microbatches, and run the fastest that fits the limit"
                        on:click=move |_| ask_balance(state, balance)>
                        {move || if pending() { "Balancing…" } else { "Balance it" }}
                    </button>
                })}
            </p>
        })}
        {move || answer().map(|r| {
            let (text, error) = match r {
                Ok(b) => (b.summary(state.units()), false),
                Err(e) => (e.message, true),
            };
            view! { <p class="fit-result balance-result" class:field-error=error data-testid="balance-result" role="status">{text}</p> }
        })}
    }
}

/// Asks the engine to balance the current settings; applies its choice when the settings have
/// not changed since, and keeps its answer, about the settings that result.
fn ask_balance(state: AppState, balance: RwSignal<BalanceState>) {
    if balance.with_untracked(|b| b.pending) {
        return;
    }
    balance.update(|b| b.pending = true);
    let asked = state.settings.get_untracked();
    let request = crate::wire::encode_settings(&asked);
    crate::engine::ask(state, crate::wire::kind::BALANCE, request, move |wire| {
        if state.settings.get_untracked() != asked {
            balance.update(|b| b.pending = false);
            return;
        }
        let result = crate::wire::decode_balance(&wire)
            .map_err(|e| UiError { field: None, message: format!("the worker's answer could not be read: {e}") })
            .and_then(|r| r);
        if let Ok(b) = &result {
            if b.chosen.is_some() {
                state.update(|l| b.apply_to(l));
            }
        }
        let about = state.settings.get_untracked();
        balance.set(BalanceState { result: Some((result, about)), pending: false });
    });
}

/// The number as the CLI prints it.
fn n(v: f64) -> String {
    format_number(v, 4)
}

/// The headline numbers of the main schedule.
#[component]
pub fn StatTiles() -> impl IntoView {
    let state = expect_context::<AppState>();
    let outcome = state.outcome;
    let stats = move || outcome.with(|o| o.main.result.as_ref().ok().map(|a| a.stats.clone()));
    // A measured run's numbers are labelled so, with the prediction at the fitted costs beside.
    let measured = move || outcome.with(|o| o.main.result.as_ref().is_ok_and(|a| a.times.is_some()));
    let predicted = move || {
        outcome.with(|o| {
            let p = o.compare.iter().find(|c| c.name == crate::state::PREDICTED)?;
            p.result.as_ref().ok().map(|a| a.stats.clone())
        })
    };
    let badge = move || {
        measured().then(|| view! { <span class="badge measured" data-testid="stat-measured">"measured"</span> })
    };
    let bubble = move || {
        let m = state.measure.get();
        stats().map(|s| m.of(&s))
    };
    // The speedup, and whether its baseline is still on its way (the worker sends 1F1B's cost
    // after the chart): meanwhile the last speedup shown stays, dimmed, so a drag does not
    // flicker.
    let shown_speedup = StoredValue::new(None::<f64>);
    let speedup = move || {
        outcome.with(|o| match (&o.main.result, o.baseline) {
            (Ok(a), Baseline::Cost(base)) => {
                let s = a.stats.speedup_over_cost(base);
                shown_speedup.set_value(s);
                (s, false)
            }
            (Ok(_), Baseline::Follows) => (shown_speedup.get_value(), true),
            _ => {
                shown_speedup.set_value(None);
                (None, false)
            }
        })
    };
    let prediction = move || {
        outcome.with(|o| {
            let f = family(&o.main.name)?;
            let p = f.prediction(&o.params)?;
            let a = o.main.result.as_ref().ok()?;
            Some((p.bubble_formula, p.bubble, p.bubble_quantity.of(&a.stats), p.bubble_quantity.label()))
        })
    };
    // Whether the run trades memory for time (the closed forms know neither).
    let traded = move || outcome.with(|o| o.params.costs.trade.as_ref().is_some_and(|t| !t.is_none()));
    // The peak as a count of forwards' activations, when mem-f is not the unit.
    let peak_in_forwards = move || {
        outcome.with(|o| {
            let mem_f = o.params.costs.mem_f;
            match o.main.result.as_ref() {
                Ok(a) if mem_f > 0.0 && mem_f != 1.0 => {
                    format!("{} × mem-f held at once", format_number(a.stats.peak_memory / mem_f, 2))
                }
                _ => "forwards' activations held at once".to_string(),
            }
        })
    };
    let over_limit = move || {
        outcome.with(|o| {
            let limit = o.params.mem_limit?;
            let a = o.main.result.as_ref().ok()?;
            let over: Vec<String> =
                a.stats.per_device.iter().filter(|d| d.over_limit(Some(limit))).map(|d| d.device.to_string()).collect();
            (!over.is_empty())
                .then(|| format!("above the limit {} on device {}", memory_text(state, limit), over.join(", ")))
        })
    };
    view! {
        <section class="tiles" aria-label="Key numbers">
            <div class="tile">
                <div class="tile-label">"Cost"{badge}<span class="tile-sub" title="longest device span">" longest device span"</span></div>
                <div class="tile-value" data-testid="stat-cost">{move || stats().map(|s| time_text(state, s.cost)).unwrap_or_else(|| "—".into())}</div>
                {move || predicted().map(|p| view! { <div class="tile-foot predicted" data-testid="stat-cost-predicted">"predicted " {time_text(state, p.cost)} " at the fitted costs"</div> })}
                <div class="tile-foot" title="ideal: the mean device's work — the sum of its passes, an overlapped F&B pair at its overlap time; busiest: the busiest device's, which no order can beat">"ideal " {move || stats().map(|s| time_text(state, s.ideal)).unwrap_or_default()}
                    {move || stats().filter(|s| s.busiest_work != s.ideal).map(|s| format!(" · busiest {}", time_text(state, s.busiest_work)))}
                    " · makespan " {move || stats().map(|s| time_text(state, s.makespan)).unwrap_or_default()}</div>
            </div>
            <div class="tile">
                <div class="tile-label">
                    "Bubble rate"
                    {badge}
                    <select class="measure" aria-label="Bubble normalisation" data-testid="bubble-measure"
                        on:change=move |ev| {
                            let m = BubbleMeasure::from_key(&event_target_value(&ev)).unwrap_or(BubbleMeasure::OverCost);
                            state.set_measure(m);
                        }>
                        {BubbleMeasure::ALL.iter().map(|m| {
                            let m = *m;
                            view! { <option value=m.key() selected=move || state.measure.get() == m>{m.label()}</option> }
                        }).collect_view()}
                    </select>
                </div>
                <div class="tile-value" data-testid="stat-bubble-rate">{move || bubble().map(n).unwrap_or_else(|| "—".into())}</div>
                {move || predicted().map(|p| view! { <div class="tile-foot predicted" data-testid="stat-bubble-predicted">"predicted " {n(state.measure.get().of(&p))}</div> })}
                <div class="tile-foot" data-testid="stat-bubble-foot">
                    {move || bubble().map(|b| format!("{}% · ", format_number(b * 100.0, 2))).unwrap_or_default()}
                    {move || state.measure.get().origin()}
                </div>
            </div>
            <div class="tile" class:alert=move || over_limit().is_some()>
                <div class="tile-label">"Peak memory"<span class="tile-sub">{move || if state.link.with(|l| l.model.given()) { " worst device, activations" } else { " worst device, unit of mem-f" }}</span></div>
                <div class="tile-value" data-testid="stat-peak-memory">{move || stats().map(|s| memory_text(state, s.peak_memory)).unwrap_or_else(|| "—".into())}</div>
                <div class="tile-foot">{move || over_limit().unwrap_or_else(peak_in_forwards)}</div>
            </div>
            <div class="tile">
                // A measured run's costs are its own: no 1F1B ran on them, so no speedup over it.
                {move || if measured() {
                    view! {
                        <div class="tile-label">"Measured run"<span class="tile-sub">" its own orders and times"</span></div>
                        <div class="tile-value" data-testid="stat-no-speedup">"—"</div>
                    }.into_any()
                } else {
                    view! {
                        <div class="tile-label">"Speedup"<span class="tile-sub" title="over 1F1B, same settings">" over 1F1B, same settings"</span></div>
                        <div class="tile-value" data-testid="stat-speedup" class:stale=move || speedup().1 aria-busy=move || speedup().1.to_string()>{move || speedup().0.map(|s| format!("{}×", format_number(s, 3))).unwrap_or_else(|| "—".into())}</div>
                    }.into_any()
                }}
                <div class="tile-foot">{move || outcome.with(|o| if o.is_waiting() { "computing…".to_string() } else { format!("computed in {} ms", format_number(o.elapsed_ms, 1)) })}</div>
            </div>
            <div class="tile">
                <div class="tile-label">"Closed form"<span class="tile-sub" title=move || prediction().map_or("cost − ideal", |p| p.3)>{move || format!(" {}", prediction().map_or("cost − ideal", |p| p.3))}</span></div>
                {move || match prediction() {
                    Some((formula, Some(predicted), simulated, _)) => view! {
                        <div class="tile-value" data-testid="stat-closed-form">{n(predicted)}</div>
                        <div class="tile-foot">{formula} " · simulated " {n(simulated)}
                            {if (predicted - simulated).abs() < 1e-6 * simulated.abs().max(1.0) { " ✓" } else { " (differs)" }}</div>
                    }.into_any(),
                    Some((formula, None, simulated, _)) => view! {
                        <div class="tile-value muted">"n/a"</div>
                        <div class="tile-foot">{formula} " does not hold at these settings · simulated " {n(simulated)}</div>
                    }.into_any(),
                    None => view! {
                        <div class="tile-value muted">"—"</div>
                        <div class="tile-foot">{move || if traded() { "no closed form with recompute or offload" } else { "no closed form for this family" }}</div>
                    }.into_any(),
                }}
            </div>
        </section>
    }
}

/// Per-device numbers of the main schedule.
#[component]
pub fn DeviceTable() -> impl IntoView {
    let state = expect_context::<AppState>();
    let holdings = holdings(state);
    let rows = move || {
        state.outcome.with(|o| {
            let a = o.main.result.as_ref().ok()?;
            let limit = o.params.mem_limit;
            let slowest = a.stats.per_device.iter().map(|d| d.work).fold(0.0, f64::max);
            // Marked only when one device really does more work (0.5% over the mean).
            let uneven = a.stats.bottleneck().is_some();
            let layers = holdings.get();
            let predicted = family(&o.main.name).and_then(|f| f.prediction(&o.params)).and_then(|p| p.peak_memory);
            Some(
                a.stats
                    .per_device
                    .iter()
                    .map(|d| {
                        let over = d.over_limit(limit);
                        let expected = predicted
                            .as_ref()
                            .and_then(|p| p.get(d.device as usize))
                            .map(|v| n(*v))
                            .unwrap_or_else(|| "—".into());
                        let held = layers
                            .as_ref()
                            .and_then(|h| h.get(d.device as usize))
                            .map_or_else(|| "—".to_string(), |h| format_number(h.layers, 2));
                        let share = if slowest > 0.0 { d.work / slowest } else { 0.0 };
                        let slowest_row = uneven && d.work == slowest;
                        view! {
                            <tr class:over=over class:slowest=slowest_row>
                                <td>{d.device}</td>
                                <td>{time_text(state, d.start)}</td>
                                <td>{time_text(state, d.end)}</td>
                                <td>{time_text(state, d.work)}</td>
                                <td>{held}</td>
                                <td>{format!("{}%", format_number(share * 100.0, 1))}</td>
                                <td>{time_text(state, d.idle)}</td>
                                <td>{format!("{}%", format_number(d.bubble_rate * 100.0, 2))}</td>
                                <td data-testid="idle-share">{format!("{}%", format_number(a.stats.idle_share(d.device as usize) * 100.0, 2))}</td>
                                <td>{memory_text(state, d.peak_memory)}{over.then_some(" ⚠")}</td>
                                <td class="muted">{expected}</td>
                            </tr>
                        }
                    })
                    .collect_view(),
            )
        })
    };
    let formula = move || {
        state.outcome.with(|o| family(&o.main.name).and_then(|f| f.prediction(&o.params)).map(|p| p.memory_formula))
    };
    view! {
        <section class="card" aria-label="Per-device numbers">
            <details open=move || state.outcome.with(|o| o.params.devices <= 16)>
                <summary class="card-title">"Per device"</summary>
                <div class="table-wrap">
                    <table class="table" data-testid="device-table">
                        <thead>
                            <tr>
                                <th>"device"</th><th>"start"</th><th>"end"</th>
                                <th title="the sum of its passes">"work"</th>
                                <th title="transformer layers it holds (costs from a model)">"layers"</th>
                                <th title="its work as a share of the slowest device's">"of slowest"</th>
                                <th>"idle"</th>
                                <th title="idle / span: between its own first and last pass">"bubble"</th>
                                <th title="(cost − work) / cost: the share of the step it does no work; their mean is the bubble rate">"idle share"</th>
                                <th>"peak memory"</th>
                                <th title=move || formula().unwrap_or("")>"formula"</th>
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
                <p class="help">{move || formula().map(|f| format!("Memory formula: {f}.")).unwrap_or_default()}</p>
            </details>
        </section>
    }
}

/// The main and compared schedules side by side.
#[component]
pub fn CompareTable() -> impl IntoView {
    let state = expect_context::<AppState>();
    let any = move || state.outcome.with(|o| !o.compare.is_empty());
    let rows = move || {
        state.outcome.with(|o| {
            let base = o.baseline.cost();
            std::iter::once(&o.main)
                .chain(o.compare.iter())
                .map(|c| match &c.result {
                    Ok(a) => {
                        let s = &a.stats;
                        let speed = base.and_then(|b| s.speedup_over_cost(b)).map(|x| format!("{}×", format_number(x, 3))).unwrap_or_default();
                        view! {
                            <tr>
                                <td class="name">{c.label.clone()}</td>
                                <td>{time_text(state, s.cost)}</td>
                                <td>{n(s.bubble_rate)}</td>
                                <td>{memory_text(state, s.peak_memory)}</td>
                                <td>{speed}</td>
                            </tr>
                        }
                        .into_any()
                    }
                    Err(e) => view! {
                        <tr class="over"><td class="name">{c.label.clone()}</td><td colspan="4">{e.message.lines().next().unwrap_or_default().to_string()}</td></tr>
                    }
                    .into_any(),
                })
                .collect_view()
        })
    };
    view! {
        <Show when=any>
            <section class="card" aria-label="Comparison">
                <h2 class="card-title">"Comparison at the same settings"</h2>
                <div class="table-wrap">
                    <table class="table" data-testid="compare-table">
                        <thead><tr><th>"schedule"</th><th>"cost"</th><th>"bubble rate"</th><th>"peak memory"</th><th>"vs 1F1B"</th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
            </section>
        </Show>
    }
}
