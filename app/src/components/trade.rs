//! Memory traded for time, in the Memory panel: recompute, offload and the price of a copy to
//! the host, and "Fit under the limit", which picks the cheapest setting that fits. Every rule
//! is core's: the settings are priced in [`bubblescope::settings::Settings::effective_params`]
//! and searched in [`crate::fit`].

use bubblescope::permalink::Permalink;
use bubblescope::trade::{parse_offload, parse_recompute, recompute_text, Offload, Pricing, Recompute};
use bubblescope::Field;
use leptos::prelude::*;

use super::costs::error_signal;
use super::inputs::{show, NumberField, NumberKind};
use crate::fit::{FitResult, FitState};
use crate::state::{AppState, UiError};

/// Recompute, offload and the copy price, then the fit button.
#[component]
pub fn TradeInputs() -> impl IntoView {
    let state = expect_context::<AppState>();
    // Memos: the copy price's box is rebuilt when the costs or the GPU change, not on every
    // keystroke. With a model, the GPU's host link (GB/s), shown while the box is empty.
    let gpu_link = Memo::new(move |_| {
        state.link.with(|l| l.model.given().then(|| l.model.resolve().map(|m| show(m.host_gbps())).unwrap_or_default()))
    });
    view! {
        <div class="trade" data-testid="trade">
            <h3 class="panel-subtitle">"Trade time for memory"</h3>
            <p class="help">"Recompute forwards in the backward (R, pink), or copy activations to the host and back (the strip under each row)."</p>
            <RecomputeSelect/>
            <OffloadSelect/>
            {move || match gpu_link.get() {
                Some(link) => host_link(link).into_any(),
                None => copy_time().into_any(),
            }}
            <FitButton/>
        </div>
    }
}

/// Why selective recompute is off for these settings, if it is, in a few words and in full:
/// plain costs cannot size it, and FlashAttention keeps no scores for it to drop.
fn selective_off(link: &Permalink) -> Option<(&'static str, &'static str)> {
    if !link.model.given() {
        return Some((
            "Selective recompute needs a model.",
            "What selective recompute drops (the attention scores) depends on heads, sequence and hidden size: choose costs from a model.",
        ));
    }
    match link.model.resolve().map(|m| m.trade_pricing()) {
        Ok(Pricing::Model { shapes: (_, selective), .. }) if selective.keep >= 1.0 => Some((
            "Selective saves nothing with FlashAttention.",
            "FlashAttention never stores the attention scores, so selective recompute has nothing to drop.",
        )),
        _ => None,
    }
}

/// None, selective or full on every device; a per-device list from a link shows as its own
/// choice.
#[component]
fn RecomputeSelect() -> impl IntoView {
    let state = expect_context::<AppState>();
    let current = Memo::new(move |_| state.link.with(|l| recompute_text(&l.trade.recompute)));
    let selective = Memo::new(move |_| state.link.with(selective_off));
    let pick = move |value: String| {
        let list = parse_recompute(&value).unwrap_or_default();
        set_trade(state, |l| {
            l.trade.recompute = if list.iter().all(|r| *r == Recompute::None) { Vec::new() } else { list };
        });
    };
    let error = error_signal(state, Field::Recompute);
    view! {
        <div class="field" class:invalid=move || error.get().is_some()>
            <label for="recompute">"Recompute"</label>
            <select id="recompute" class="select" data-testid="recompute"
                prop:value=move || current.get()
                on:change=move |ev| pick(event_target_value(&ev))>
                <option value="none" selected=move || current.get() == "none">"none"</option>
                <option value="selective" disabled=move || selective.get().is_some()
                    title=move || selective.get().map_or("Drop the attention scores and recompute them (Megatron's selective recompute).", |(_, why)| why)
                    selected=move || current.get() == "selective">"selective"</option>
                <option value="full" title="Keep each stage's input only; R runs the forward again."
                    selected=move || current.get() == "full">"full"</option>
                {per_device_option(current)}
            </select>
            {move || selective.get().map(|(short, why)| view! { <p class="help" data-testid="selective-off" title=why>{short}</p> })}
            <p class="field-error" role="alert" data-testid="error-message" hidden=move || error.get().is_none()>{move || error.get()}</p>
        </div>
    }
}

/// The chosen option of a select whose value `current` is a per-device list (it holds a
/// comma), as a link can set it: shown as its own choice. Nothing for the other values.
fn per_device_option(current: Memo<String>) -> impl IntoView {
    move || {
        current.with(|c| c.contains(',')).then(|| {
            let value = current.get();
            let label = format!("per device: {value}");
            view! { <option value=value.clone() selected=true>{label}</option> }
        })
    }
}

/// What a select's choice does: changes the trade with `set`; then, with no recompute and no
/// offload left, the copy time and host link go too: nothing reads them, and core refuses
/// them alone.
fn set_trade(state: AppState, set: impl FnOnce(&mut Permalink)) {
    state.update(|l| {
        set(l);
        if !l.trade.asks() {
            (l.trade.copy_time, l.trade.host_gbps) = (None, None);
        }
    });
}

/// The select's value for an offload setting: `none`, `auto`, `fraction`, or a per-device list.
fn offload_choice(offload: &Offload) -> String {
    match offload {
        Offload::Fractions(v) if v.len() > 1 => offload.to_string(),
        Offload::Fractions(_) => "fraction".to_string(),
        other => other.to_string(),
    }
}

/// None, auto (what hides both copies), or a fraction of each device's microbatches; a
/// per-device list from a link shows as its own choice.
#[component]
fn OffloadSelect() -> impl IntoView {
    let state = expect_context::<AppState>();
    let current = Memo::new(move |_| state.link.with(|l| offload_choice(&l.trade.offload)));
    let pick = move |value: String| {
        set_trade(state, |l| {
            l.trade.offload = match value.as_str() {
                "fraction" => Offload::Fractions(vec![0.5]),
                other => parse_offload(other).unwrap_or_default(),
            };
        });
    };
    let fraction = Signal::derive(move || {
        state.link.with(|l| match &l.trade.offload {
            Offload::Fractions(v) if v.len() == 1 => v.first().copied(),
            _ => None,
        })
    });
    let error = error_signal(state, Field::Offload);
    view! {
        <div class="field" class:invalid=move || error.get().is_some()>
            <label for="offload">"Offload"</label>
            <select id="offload" class="select" data-testid="offload"
                prop:value=move || current.get()
                on:change=move |ev| pick(event_target_value(&ev))>
                <option value="none" selected=move || current.get() == "none">"none"</option>
                <option value="auto" title="Every microbatch whose wait between forward and backward hides both copies (PipeOffload)"
                    selected=move || current.get() == "auto">"auto"</option>
                <option value="fraction" selected=move || current.get() == "fraction">"a share of the microbatches"</option>
                <option value="pipeoffload" title="PipeOffload's own slot grid, for its grouped interleaved schedule (group-interleaved)"
                    selected=move || current.get() == "pipeoffload">"as PipeOffload"</option>
                {per_device_option(current)}
            </select>
            <p class="field-error" role="alert" data-testid="error-message" hidden=move || error.get().is_none()>{move || error.get()}</p>
        </div>
        <Show when=move || fraction.get().is_some()>
            <NumberField label="Share offloaded" id="offload-fraction" value=fraction kind=NumberKind::Amount
                slider=Signal::derive(|| (0.0, 1.0, 0.05))
                help="of each device's microbatches, 0 to 1"
                on_change=Callback::new(move |v: Option<f64>| {
                    if let Some(v) = v {
                        state.update(|l| l.trade.offload = Offload::Fractions(vec![v]));
                    }
                })/>
        </Show>
    }
}

/// The copy time with plain costs: what one forward's activation (mem-f) takes to copy.
fn copy_time() -> impl IntoView {
    let state = expect_context::<AppState>();
    view! {
        <NumberField label="Copy time" id="copy-time" testid="copy-time" optional=true placeholder="none"
            kind=NumberKind::Amount
            value=Signal::derive(move || state.link.with(|l| l.trade.copy_time))
            help="time one forward's activation (mem-f) takes to copy to the host"
            on_change=Callback::new(move |v: Option<f64>| state.update(|l| l.trade.copy_time = v))
            error=error_signal(state, Field::CopyTime)/>
    }
}

/// The host link with a model: GB/s each way, the GPU's (`gpu`) when empty.
fn host_link(gpu: String) -> impl IntoView {
    let state = expect_context::<AppState>();
    let help = if gpu.is_empty() {
        "each way, for offload copies; empty: the GPU's".to_string()
    } else {
        format!("each way, for offload copies; empty: the GPU's {gpu}")
    };
    view! {
        <NumberField label="Host link, GB/s" id="host-gbps" testid="host-gbps" optional=true placeholder=gpu
            kind=NumberKind::Amount
            value=Signal::derive(move || state.link.with(|l| l.trade.host_gbps))
            help=help
            on_change=Callback::new(move |v: Option<f64>| state.update(|l| l.trade.host_gbps = v))
            error=error_signal(state, Field::HostGbps)/>
    }
}

/// "Fit under the limit": runs the search in the worker, applies the setting it chose and says
/// in one line what it chose, what it costs and saves, or the least memory that would fit.
#[component]
pub fn FitButton() -> impl IntoView {
    let state = expect_context::<AppState>();
    let fit = RwSignal::new(FitState::default());
    let (asks, set_asks) = signal(0u64);
    crate::engine::run_fit(state, fit, asks);
    let has_limit = move || state.link.with(|l| l.params.mem_limit.is_some());
    let pending = move || fit.with(|f| f.pending);
    // The answer shows while the settings are the ones it is about.
    let answer = move || {
        let current = state.settings.get();
        fit.with(|f| f.result.as_ref().filter(|(_, about)| *about == current).map(|(r, _)| r.clone()))
    };
    let line = move || {
        answer().map(|r: Result<FitResult, UiError>| match r {
            Ok(fit) => (fit.summary(state.units()), false),
            Err(e) => (e.message, true),
        })
    };
    view! {
        <button type="button" class="button primary wide" data-testid="fit-limit"
            disabled=move || !has_limit() || pending()
            title=move || if has_limit() { "The cheapest recompute or offload under which this schedule fits the limit" } else { "Set a memory limit first" }
            on:click=move |_| set_asks.update(|n| *n += 1)>
            {move || if pending() { "Fitting…" } else { "Fit under the limit" }}
        </button>
        {move || line().map(|(text, error)| view! {
            <p class="fit-result" class:field-error=error data-testid="fit-result" role="status">{text}</p>
        })}
    }
}
