//! Costs set by hand: F, B, W, communication and memory per microbatch, with the per-device
//! lists a link or the CLI gave (inside the "Costs" panel).

use leptos::prelude::*;

use super::inputs::{NumberField, NumberKind};
use bubblescope::permalink::Permalink;
use bubblescope::Field;

use crate::state::AppState;

/// F, B, W and communication, set by hand (inside the "Costs" panel).
#[component]
pub fn CostInputs() -> impl IntoView {
    let state = expect_context::<AppState>();
    let costs =
        move |f: fn(&bubblescope::Costs) -> f64| Signal::derive(move || Some(state.link.with(|l| f(&l.params.costs))));
    let range = cost_range(state);
    let lists = move || {
        state.link.with(|l| {
            let lists = bubblescope::CostLists::of(&l.params.costs, l.params.devices);
            let shown: Vec<String> = bubblescope::cost_lists::LIST_FIELDS
                .iter()
                .filter_map(|f| {
                    lists
                        .get(*f)
                        .filter(|v| v.windows(2).any(|w| w[0] != w[1]))
                        .map(|v| format!("{} = {}", f.name(), bubblescope::cost_lists::format_list(v)))
                })
                .collect();
            (!shown.is_empty()).then(|| {
                let finer = if bubblescope::CostLists::exact(&l.params.costs, l.params.devices) {
                    String::new()
                } else {
                    let pieces = l.params.costs.profile.as_ref().map_or(0, |p| p.pieces());
                    let cut = if pieces == l.params.devices as usize {
                        "also cuts the model at whole layers into more stages".to_string()
                    } else {
                        format!("cuts the model into {pieces} pieces")
                    };
                    format!(
                        " The opened file {cut}; a link carries each device's share, so a schedule with more stages than devices, opened from the link, cuts the shares in proportion instead."
                    )
                };
                format!(
                    "Per device: {} (the boxes show the mean; editing one sets every device).{finer}",
                    shown.join(" · ")
                )
            })
        })
    };
    view! {
        <p class="help">"Times of one microbatch on 1/P of the model. Finer schedules run each piece at its fraction."</p>
        {move || lists().map(|t| view! { <p class="help" data-testid="cost-lists">{t}</p> })}
        <div class="grid-1">
            <NumberField label="F · forward" id="f" value=costs(|c| c.f) kind=NumberKind::Amount slider=range
                on_change=set(state, |l, v| set_cost(l, Field::F, v)) error=error_signal(state, Field::F)/>
            <NumberField label="B · input gradient" id="b" value=costs(|c| c.b) kind=NumberKind::Amount slider=range
                on_change=set(state, |l, v| set_cost(l, Field::B, v)) error=error_signal(state, Field::B)/>
            <NumberField label="W · weight gradient" id="w" value=costs(|c| c.w) kind=NumberKind::Amount slider=range
                on_change=set(state, |l, v| set_cost(l, Field::W, v)) error=error_signal(state, Field::W)/>
            <NumberField label="Communication per hop" id="comm" value=costs(|c| c.comm) kind=NumberKind::Amount slider=range
                on_change=set(state, set_comm) error=error_signal(state, Field::Comm)/>
        </div>
        <Show when=move || splits_vocabulary(state)>
            <VocabularyInputs/>
        </Show>
    }
}

/// Whether the chosen family splits the output layer by vocabulary, or the costs hold shard
/// times (a family that does not read them refuses them: the boxes show where).
fn splits_vocabulary(state: AppState) -> bool {
    state.link.with(|l| {
        l.params.costs.vocab.is_some()
            || bubblescope::family(&l.schedule).is_some_and(|f| f.group == bubblescope::FamilyGroup::Vocabulary)
    })
}

/// S and T, one vocabulary shard's output-layer forward and backward (the CLI's `--s`, `--t`;
/// the link's `vocab-s`, `vocab-t`), for the vocabulary-parallel families.
#[component]
fn VocabularyInputs() -> impl IntoView {
    let state = expect_context::<AppState>();
    let shard = move |f: fn(&bubblescope::VocabCosts) -> f64| {
        Signal::derive(move || state.link.with(|l| l.params.costs.vocab.as_ref().map(f)))
    };
    let range = cost_range(state);
    view! {
        <p class="help">"One vocabulary shard (1/P of the output layer) per microbatch; T defaults to twice S, and each barrier takes one hop."</p>
        <div class="grid-1" data-testid="vocabulary-inputs">
            <NumberField label="S · output layer forward, one shard" id="s" value=shard(|v| v.s) kind=NumberKind::Amount slider=range
                placeholder="needed" optional=true
                on_change=shard_setter(state, true) error=error_signal(state, Field::S)/>
            <NumberField label="T · output layer backward, one shard" id="t" value=shard(|v| v.t) kind=NumberKind::Amount slider=range
                placeholder="2 × S" optional=true
                on_change=shard_setter(state, false) error=error_signal(state, Field::T)/>
        </div>
    }
}

/// Sets S (`forward`) or T from a box, as the CLI's `--s`/`--t` would ([`VocabCosts::from_shards`]);
/// clearing S removes the shards.
fn shard_setter(state: AppState, forward: bool) -> Callback<Option<f64>> {
    Callback::new(move |v: Option<f64>| {
        state.update(|l| {
            let c = &mut l.params.costs;
            let old = c.vocab;
            c.vocab = match (forward, v) {
                (true, None) => None,
                (true, Some(s)) => bubblescope::VocabCosts::from_shards(Some(s), old.map(|o| o.t), old, c.comm),
                (false, t) => bubblescope::VocabCosts::from_shards(old.map(|o| o.s), t, None, c.comm),
            };
        });
    })
}

/// Sets the hop time; the vocabulary shards' barrier, one hop, follows it.
fn set_comm(link: &mut Permalink, v: f64) {
    let c = &mut link.params.costs;
    c.comm = v;
    c.vocab = c.vocab.and_then(|o| bubblescope::VocabCosts::from_shards(Some(o.s), Some(o.t), None, v));
}

/// A slider range shared by F, B and W that grows with the values.
fn cost_range(state: AppState) -> Signal<(f64, f64, f64)> {
    Signal::derive(move || {
        let top = state.link.with(|l| l.params.costs.f.max(l.params.costs.b).max(l.params.costs.w));
        let max = nice_ceiling(top * 1.5);
        (0.0, max, max / 100.0)
    })
}

/// The smallest of 10, 20, 50, 100, 200, 500, … at or above `value`.
pub(super) fn nice_ceiling(value: f64) -> f64 {
    let mut max = 10.0f64;
    let mut k = 0;
    while max < value && max < 1e12 {
        max *= [2.0, 2.5, 2.0][k % 3];
        k += 1;
    }
    max
}

pub(super) fn set(
    state: AppState,
    f: impl Fn(&mut Permalink, f64) + Copy + Send + Sync + 'static,
) -> Callback<Option<f64>> {
    Callback::new(move |v: Option<f64>| {
        if let Some(v) = v {
            state.update(|l| f(l, v));
        }
    })
}

pub(super) fn error_signal(state: AppState, field: Field) -> Signal<Option<String>> {
    Signal::derive(move || state.error_for(field))
}

/// Sets one hand-set cost to `v` on every device: a per-device list from the link gives way
/// to the single number, the other lists stay.
pub(super) fn set_cost(link: &mut Permalink, field: Field, v: f64) {
    let p = &mut link.params;
    let mut lists = bubblescope::CostLists::of(&p.costs, p.devices);
    lists.set(field, Some(vec![v]));
    let base = bubblescope::Costs { profile: None, ..p.costs.clone() };
    match lists.apply(&base, p.devices) {
        Ok(costs) => p.costs = costs,
        Err(_) => match field {
            Field::F => p.costs.f = v,
            Field::B => p.costs.b = v,
            Field::W => p.costs.w = v,
            _ => p.costs.mem_f = v,
        },
    }
}

/// Sets mem-w (`None`: half of mem-f) on every device.
pub(super) fn set_mem_w(link: &mut Permalink, v: Option<f64>) {
    match v {
        Some(v) => set_cost(link, Field::MemW, v),
        None => {
            let p = &mut link.params;
            let mut lists = bubblescope::CostLists::of(&p.costs, p.devices);
            lists.set(Field::MemW, None);
            let base = bubblescope::Costs { profile: None, mem_w: None, ..p.costs.clone() };
            p.costs = lists.apply(&base, p.devices).unwrap_or(base);
        }
    }
}
