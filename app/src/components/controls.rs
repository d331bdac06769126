//! The settings sidebar: family picker, sizes, family options, costs, memory (with recompute
//! and offload), comparison.

use bubblescope::permalink::Permalink;
use bubblescope::{family, FamilyGroup, FamilyOption, Field, FAMILIES};
use leptos::prelude::*;

use super::costs::{error_signal, nice_ceiling, set, set_cost, set_mem_w};
use super::inputs::{NumberField, NumberKind};
use crate::state::{AppState, MAX_LIVE_DEVICES, MAX_LIVE_MICROBATCHES};

/// The whole sidebar. While a file is open, the family settings give way to it.
#[component]
pub fn Controls() -> impl IntoView {
    let state = expect_context::<AppState>();
    let no_file = move || state.file.with(Option::is_none);
    view! {
        <Show when=no_file>
            <SchedulePicker/>
            <Sizes/>
            <FamilyOptions/>
        </Show>
        <Show when=move || !no_file()>
            <super::ImportPanel/>
        </Show>
        <super::ModelPanel/>
        <MemoryInputs/>
        // Below the first screen: built once the chart is painted.
        <super::Later>
            <CompareInputs/>
            <Show when=no_file>
                <super::ImportPanel/>
            </Show>
            <ResetButton/>
        </super::Later>
    }
}

fn section(title: &'static str, children: impl IntoView) -> impl IntoView {
    view! {
        <section class="panel">
            <h2 class="panel-title">{title}</h2>
            {children}
        </section>
    }
}

/// The family `<select>`, grouped, with its summary and paper link.
#[component]
pub fn SchedulePicker() -> impl IntoView {
    let state = expect_context::<AppState>();
    let current = move || state.link.with(|l| l.schedule.clone());
    let info = move || family(&current());
    let error = move || state.error_for(Field::Schedule);
    let groups = FamilyGroup::ALL.iter().map(|g| {
        let options = FAMILIES
            .iter()
            .filter(|f| f.group == *g)
            .map(|f| {
                let name = f.name;
                view! { <option value=name selected=move || current() == name>{f.title}</option> }
            })
            .collect_view();
        view! { <optgroup label=g.title()>{options}</optgroup> }
    });
    let body = view! {
        <div class="field">
            <label for="schedule">"Schedule family"</label>
            <select
                id="schedule"
                class="select"
                data-testid="schedule-select"
                prop:value=current
                on:change=move |ev| {
                    let name = event_target_value(&ev);
                    state.update(|l| l.schedule = name);
                }
            >
                {groups.collect_view()}
            </select>
            {move || info().map(|f| view! {
                <p class="family-summary" data-testid="family-summary"><super::FlagText text=f.summary/></p>
                <p class="family-ref">
                    <a href=f.url target="_blank" rel="noopener noreferrer">{f.reference}</a>
                </p>
                <p class="help">"Constraints: " <super::FlagText text=f.constraints/></p>
            })}
            <p class="field-error" role="alert" data-testid="error-message" hidden=move || error().is_none()>{error}</p>
        </div>
    };
    section("Schedule", body)
}

/// Devices and microbatches.
#[component]
pub fn Sizes() -> impl IntoView {
    let state = expect_context::<AppState>();
    let devices = size_control(state, "Devices (P)", Field::Devices, MAX_LIVE_DEVICES);
    let microbatches = size_control(state, "Microbatches (M)", Field::Microbatches, MAX_LIVE_MICROBATCHES);
    section("Pipeline", view! { {devices} {microbatches} })
}

/// The control of a pipeline size (`field`: devices or microbatches): a count whose slider
/// goes up to `live_max`, what the page computes live.
fn size_control(state: AppState, label: &'static str, field: Field, live_max: u32) -> impl IntoView {
    view! {
        <NumberField
            label=label
            id=field.name()
            value=Signal::derive(move || state.link.with(|l| setting_value(l, field)))
            kind=NumberKind::Count
            slider=Signal::derive(move || (1.0, f64::from(live_max), 1.0))
            on_change=set(state, move |l, v| set_setting(l, field, Some(v)))
            error=error_signal(state, field)
        />
    }
}

/// The options the current family reads (chunks, group, waves, sequence splits, F&B time),
/// one control each, in its registry entry's order; a control shows the family's default
/// while the option is not set. The memory limit has its own section.
#[component]
pub fn FamilyOptions() -> impl IntoView {
    let state = expect_context::<AppState>();
    // Only a change of family rebuilds the controls, not every slider step.
    let current = Memo::new(move |_| state.link.with(|l| family(&l.schedule).map(|f| f.name)));
    move || {
        let fam = current.get().and_then(family)?;
        let controls: Vec<AnyView> = fam
            .options
            .iter()
            .filter(|o| o.field != Field::MemLimit)
            .map(|o| match o.field {
                Field::A2aOverlap => a2a_overlap_control(state),
                _ => option_control(state, *o),
            })
            .collect();
        (!controls.is_empty()).then(|| {
            view! {
                <section class="panel">
                    <h2 class="panel-title">"Family options"</h2>
                    {controls}
                </section>
            }
        })
    }
}

/// Megatron's combined 1F1B (`--a2a-overlap`, link key `a2a-overlap`): steady-state F and B
/// of different microbatches run as overlapped pairs, at the F&B pair time.
fn a2a_overlap_control(state: AppState) -> AnyView {
    let on = move || state.link.with(|l| l.params.a2a_overlap);
    let error = error_signal(state, Field::A2aOverlap);
    view! {
        <div class="field" class:invalid=move || error.get().is_some()>
            <label class="check">
                <input type="checkbox" data-testid="a2a-overlap" prop:checked=on
                    on:change=move |ev| state.update(|l| l.params.a2a_overlap = event_target_checked(&ev))/>
                "Pair F and B (combined 1F1B)"
            </label>
            <p class="help">"Megatron's --overlap-moe-expert-parallel-comm: each steady-state forward runs beside another microbatch's backward, hiding one's expert all-to-all under the other's compute (interleaved adds one warm-up microbatch). Needs a mixture-of-experts model split over expert-parallel ranks."</p>
            <p class="field-error" role="alert" data-testid="error-message" hidden=move || error.get().is_none()>{move || error.get()}</p>
        </div>
    }
    .into_any()
}

/// The value of size or option `field` in `link`, if set.
fn setting_value(link: &Permalink, field: Field) -> Option<f64> {
    let p = &link.params;
    match field {
        Field::Devices => Some(f64::from(p.devices)),
        Field::Microbatches => Some(f64::from(p.microbatches)),
        Field::Chunks => p.chunks.map(f64::from),
        Field::Group => p.group.map(f64::from),
        Field::Waves => p.waves.map(f64::from),
        Field::SeqSplits => p.seq_splits.map(f64::from),
        Field::Overlap => p.costs.overlap,
        _ => None,
    }
}

/// Sets size or option `field` in `link` (`None` unsets an option and leaves a size).
fn set_setting(link: &mut Permalink, field: Field, value: Option<f64>) {
    let p = &mut link.params;
    let count = value.map(|v| v as u32);
    match field {
        Field::Devices => p.devices = count.unwrap_or(p.devices),
        Field::Microbatches => p.microbatches = count.unwrap_or(p.microbatches),
        Field::Chunks => p.chunks = count,
        Field::Group => p.group = count,
        Field::Waves => p.waves = count,
        Field::SeqSplits => p.seq_splits = count,
        Field::Overlap => p.costs.overlap = value,
        _ => {}
    }
}

/// The control of one family option: its label, slider range and help by setting, its value
/// (or the family's default) from the settings.
fn option_control(state: AppState, option: FamilyOption) -> AnyView {
    let field = option.field;
    let value = Signal::derive(move || {
        state.link.with(|l| setting_value(l, field).or_else(|| option.default_value(&l.params)))
    });
    let on_change = Callback::new(move |v: Option<f64>| state.update(|l| set_setting(l, field, v)));
    let error = error_signal(state, field);
    let id = field.name();
    let count = |label: &'static str, max: Signal<f64>, help: &'static str| {
        let slider = Signal::derive(move || (1.0, max.get(), 1.0));
        view! {
            <NumberField label=label id=id value=value kind=NumberKind::Count slider=slider help=help
                on_change=on_change error=error/>
        }
        .into_any()
    };
    let fixed = |max: f64| Signal::derive(move || max);
    match field {
        Field::Chunks => count("Chunks per device (V)", fixed(8.0), ""),
        Field::Group => count(
            "Microbatch group (G)",
            Signal::derive(move || state.link.with(|l| f64::from(l.params.microbatches.max(l.params.devices)))),
            "Microbatches per chunk round: P is Megatron's default, M is breadth-first.",
        ),
        Field::Waves => count("Waves (W)", fixed(4.0), ""),
        Field::SeqSplits => count("Sequence splits (K)", fixed(8.0), ""),
        _ => view! {
            <NumberField
                label="F&B pair time"
                id=id
                value=value
                kind=NumberKind::Amount
                optional=true
                placeholder="F+B+W"
                slider=Signal::derive(move || {
                    let sum = state.link.with(|l| l.params.costs.f + l.params.costs.b + l.params.costs.w).max(1e-9);
                    (0.0, sum, sum / 100.0)
                })
                help="Time of one overlapped forward + backward pair (DeepSeek's F&B); empty: F+B+W, no gain."
                on_change=on_change
                error=error
            />
        }
        .into_any(),
    }
}

/// mem-f, mem-w and the memory limit.
#[component]
pub fn MemoryInputs() -> impl IntoView {
    let state = expect_context::<AppState>();
    let drives = move || state.link.with(|l| family(&l.schedule).is_some_and(|f| f.uses(Field::MemLimit)));
    let limit_help = move || {
        if drives() {
            "This family schedules to fit the limit."
        } else {
            "Drawn as a cap in the memory chart; devices above it are flagged."
        }
    };
    let set_limit = move |k: f64| {
        state.update(|l| {
            l.params.mem_limit = Some(k * l.params.one_f_one_b_memory());
        });
    };
    let from_model = move || state.link.with(|l| l.model.given());
    let by_hand = move || {
        view! {
            <div class="grid-2">
                <NumberField label="mem-f" id="mem-f" value=Signal::derive(move || Some(state.link.with(|l| l.params.costs.mem_f)))
                    kind=NumberKind::Amount help="activations one forward leaves"
                    slider=Signal::derive(move || { let m = nice_ceiling(state.link.with(|l| l.params.costs.mem_f) * 1.5); (0.0, m, m / 100.0) })
                    on_change=set(state, |l, v| set_cost(l, Field::MemF, v)) error=error_signal(state, Field::MemF)/>
                <NumberField label="mem-w" id="mem-w" value=Signal::derive(move || state.link.with(|l| l.params.costs.mem_w))
                    kind=NumberKind::Amount optional=true placeholder="auto" help="kept after B until W; auto: mem-f/2"
                    slider=Signal::derive(move || { let m = state.link.with(|l| l.params.costs.mem_f).max(1e-9); (0.0, m, m / 20.0) })
                    on_change=Callback::new(move |v| state.update(|l| set_mem_w(l, v))) error=error_signal(state, Field::MemW)/>
            </div>
            <NumberField label="Memory limit per device" id="mem-limit"
                value=Signal::derive(move || state.link.with(|l| l.params.mem_limit))
                kind=NumberKind::Amount optional=true placeholder="none"
                slider=Signal::derive(move || {
                    let (p, mf) = state.link.with(|l| (f64::from(l.params.devices), l.params.costs.mem_f.max(1e-9)));
                    (0.0, 3.0 * p * mf, mf / 4.0)
                })
                on_change=Callback::new(move |v| state.update(|l| l.params.mem_limit = v))
                error=error_signal(state, Field::MemLimit)/>
            <p class="help">{limit_help}</p>
            <div class="chips">
                <button type="button" class="chip" on:click=move |_| set_limit(1.0) title="P · mem-f: what 1F1B holds on device 0">"1F1B (P·mem-f)"</button>
                <button type="button" class="chip" on:click=move |_| set_limit(2.0) title="2P · mem-f">"2× 1F1B"</button>
                <button type="button" class="chip" on:click=move |_| set_limit(0.5) title="P/2 · mem-f">"½× 1F1B"</button>
                <button type="button" class="chip" on:click=move |_| state.update(|l| l.params.mem_limit = None)>"none"</button>
            </div>
        }
    };
    let body = view! {
        <Show when=from_model fallback=by_hand>
            <super::SizeLimitField/>
            <p class="help">{limit_help}</p>
        </Show>
        <super::TradeInputs/>
    };
    section("Memory", body)
}

/// Families stacked under the main one on a shared time axis.
#[component]
pub fn CompareInputs() -> impl IntoView {
    let state = expect_context::<AppState>();
    let chosen = move || state.link.with(|l| l.compare.clone());
    let add = move |name: String| {
        if name.is_empty() {
            return;
        }
        state.update(|l| {
            if !l.compare.contains(&name) && l.compare.len() < 6 {
                l.compare.push(name);
            }
        });
    };
    let options = move || {
        let chosen = chosen();
        let main = state.link.with(|l| l.schedule.clone());
        FAMILIES
            .iter()
            .filter(|f| !chosen.iter().any(|c| c == f.name) && f.name != main)
            .map(|f| view! { <option value=f.name>{f.title}</option> })
            .collect_view()
    };
    let all_open = move || crate::compare::is_open(state);
    let body = view! {
        <button type="button" class="button wide" data-testid="compare-all"
            aria-pressed=move || all_open().to_string()
            on:click=move |_| crate::compare::set_open(state, !all_open())>
            {move || if all_open() { "Hide the comparison of all families" } else { "Compare all families (Pareto chart)" }}
        </button>
        <p class="help">"Stack other families below on one time axis, at the same settings."</p>
        <div class="chips">
            <For each=chosen key=|n| n.clone() let:name>
                {
                    let title = family(&name).map_or(name.clone(), |f| f.title.to_string());
                    let remove = name.clone();
                    view! {
                        <span class="chip chip-on">
                            {title}
                            <button type="button" class="chip-x" aria-label=format!("remove {name} from the comparison")
                                on:click=move |_| { let r = remove.clone(); state.update(|l| l.compare.retain(|c| *c != r)); }>"×"</button>
                        </span>
                    }
                }
            </For>
        </div>
        <label class="sr-only" for="compare-add">"Add a schedule to compare"</label>
        <select id="compare-add" class="select" data-testid="compare-add"
            prop:value=""
            on:change=move |ev| { add(event_target_value(&ev)); }>
            <option value="">"+ add a schedule to compare…"</option>
            {options}
        </select>
    };
    section("Compare", body)
}

/// Back to the defaults (the theme stays).
#[component]
pub fn ResetButton() -> impl IntoView {
    let state = expect_context::<AppState>();
    view! {
        <button type="button" class="button ghost wide" data-testid="reset"
            on:click=move |_| {
                let extra = state.link.with_untracked(|l| l.extra.clone());
                state.file.set(None);
                state.update(|l| *l = Permalink { extra, ..Permalink::default() });
            }>
            "Reset all settings"
        </button>
    }
}

/// The settings: beside the chart on wide screens; on phones and narrow windows below the
/// chart and the headline stats, behind a toggle (closed at first, so a shared link opens on
/// the picture).
#[component]
pub fn SettingsPanel() -> impl IntoView {
    let open = RwSignal::new(false);
    view! {
        <aside class="sidebar" class:open=move || open.get() aria-label="Schedule settings">
            <button type="button" class="button wide settings-toggle" data-testid="settings-toggle"
                aria-controls="settings-body" aria-expanded=move || open.get().to_string()
                on:click=move |_| open.update(|o| *o = !*o)>
                {move || if open.get() { "Hide settings ▴" } else { "Schedule settings ▾" }}
            </button>
            <div class="sidebar-body" id="settings-body">
                <Controls/>
            </div>
        </aside>
    }
}
