//! The "Model" panel: costs by hand, or derived from a transformer config and a GPU.
//!
//! A model in the link (any of the CLI's model keys) drives the costs; the hand-set costs stay
//! in the link meanwhile, so switching back restores them. Every number comes from
//! `bubblescope::model`.

use bubblescope::model::calibrate::parse_times;
use bubblescope::model::presets::{model_preset, model_presets};
use bubblescope::model::{parse_bytes, Derived, Mlp, ModelSpec, PieceCosts, Precision, Term, DEFAULT_GPU, GPUS};
use bubblescope::settings::Settings;
use bubblescope::units::{format_bytes, format_micros, format_number, GIB};
use bubblescope::Field;
use leptos::prelude::*;

use super::inputs::{NumberField, NumberKind};
use crate::state::AppState;

/// The model's whole-number settings as the form shows them: label, setting, help. The MLP's
/// kind and size come between the first [`COUNTS_BEFORE_MLP`] and the rest.
const MODEL_COUNTS: [(&str, Field, &str); 8] = [
    ("Layers", Field::Layers, ""),
    ("Hidden size", Field::Hidden, ""),
    ("Heads", Field::Heads, ""),
    ("KV heads", Field::KvHeads, "grouped-query attention"),
    ("Sequence", Field::Seq, "tokens"),
    ("Microbatch", Field::MicroBatch, "sequences"),
    ("Vocabulary", Field::Vocab, ""),
    ("Tensor parallel", Field::Tp, "GPUs per stage; costs per GPU"),
];

/// How many of [`MODEL_COUNTS`] come before the MLP's kind and size.
const COUNTS_BEFORE_MLP: usize = 4;

/// The label of the MLP's size for its kind: as model cards name it.
fn mlp_size_label(mlp: Mlp) -> &'static str {
    match mlp {
        Mlp::Gelu => "MLP width",
        Mlp::Swiglu => "Intermediate size",
    }
}

/// The hardware's settings as the form shows them: label, setting, kind, help.
const MODEL_HARDWARE: [(&str, Field, NumberKind, &str); 6] = [
    ("GEMM efficiency", Field::GemmEfficiency, NumberKind::Amount, "of peak FLOP/s"),
    ("Memory efficiency", Field::MemoryEfficiency, NumberKind::Amount, "of HBM bandwidth"),
    ("GPUs per node", Field::GpusPerNode, NumberKind::Count, "hops between nodes cross the network"),
    ("TFLOP/s", Field::Tflops, NumberKind::Amount, "matmuls, achieved; overrides the efficiency"),
    ("Bandwidth", Field::Bandwidth, NumberKind::Amount, "GB/s per hop; overrides the links"),
    ("Latency", Field::Latency, NumberKind::Amount, "µs per hop"),
];

/// The preset a fresh switch to "From a model" starts from.
/// What each ZeRO stage shards, as the help under its menu says it.
const ZERO_STAGES: [&str; 4] =
    ["nothing sharded", "optimizer state sharded", "and the gradients", "and the weights (FSDP)"];

const FIRST_PRESET: &str = "llama-3-8b";

/// What a share holds, in words: `E + 4 layers`, `3 layers + LM head`.
fn holds(p: &PieceCosts) -> String {
    let mut parts = Vec::new();
    if p.piece.embedding {
        parts.push("E".to_string());
    }
    parts.push(format!("{} layer{}", p.piece.layers, if p.piece.layers == 1 { "" } else { "s" }));
    if p.piece.mtp > 0 {
        parts.push(format!("{} MTP", p.piece.mtp));
    }
    if p.piece.loss {
        parts.push("LM head".to_string());
    }
    parts.join(" + ")
}

/// Costs by hand or from a model, and the model's settings and derived costs.
#[component]
pub fn ModelPanel() -> impl IntoView {
    let state = expect_context::<AppState>();
    let given = Memo::new(move |_| state.link.with(|l| l.model.given()));
    // What the other mode had, so switching back and forth loses nothing.
    let stashed_model = StoredValue::new(ModelSpec::default());
    let stashed_limit = StoredValue::new(None::<f64>);
    let switch = move |to_model: bool| {
        if to_model == given.get_untracked() {
            return;
        }
        state.update(|l| {
            let other_limit = stashed_limit.get_value();
            stashed_limit.set_value(l.params.mem_limit);
            l.params.mem_limit = other_limit;
            if to_model {
                let spec = stashed_model.get_value();
                l.model = if spec.given() { spec } else { ModelSpec::preset(FIRST_PRESET) };
            } else {
                stashed_model.set_value(std::mem::take(&mut l.model));
            }
        });
    };
    view! {
        <section class="panel" data-testid="model-panel">
            <h2 class="panel-title">"Costs"</h2>
            <div class="segmented" role="group" aria-label="Where the costs come from">
                <button type="button" class="seg" data-testid="costs-by-hand" aria-pressed=move || (!given.get()).to_string()
                    on:click=move |_| switch(false)>"By hand"</button>
                <button type="button" class="seg" data-testid="costs-from-model" aria-pressed=move || given.get().to_string()
                    on:click=move |_| switch(true)>"From a model"</button>
            </div>
            <Show when=move || given.get() fallback=|| view! { <super::costs::CostInputs/> }>
                <ModelForm/>
            </Show>
        </section>
    }
}

/// The preset menu and every model setting.
#[component]
fn ModelForm() -> impl IntoView {
    let state = expect_context::<AppState>();
    let spec = Memo::new(move |_| state.link.with(|l| l.model.clone()));
    // The model the settings resolve to (the preset under the overrides), for the boxes.
    let resolved = Memo::new(move |_| spec.with(|s| s.resolve().ok()));
    let preset = move || spec.with(|s| s.preset.clone().unwrap_or_default());
    let pick = move |key: String| {
        state.update(|l| {
            if key.is_empty() {
                // Custom: the current model's values, written out, so nothing changes yet.
                if let Ok(m) = l.model.resolve() {
                    l.model = ModelSpec {
                        preset: None,
                        layers: Some(m.layers),
                        hidden: Some(m.hidden),
                        heads: Some(m.heads),
                        kv_heads: m.kv_heads,
                        seq: Some(m.seq),
                        micro_batch: Some(m.micro_batch),
                        vocab: Some(m.vocab),
                        ffn: m.ffn,
                        mlp: Some(m.mlp),
                        tflops: m.tflops,
                        bandwidth: m.bandwidth,
                        latency: Some(m.latency),
                        layout: m.layout,
                        flash_attention: Some(m.flash_attention),
                        tp: (m.tp > 1).then_some(m.tp),
                        gpu: m.gpu,
                        gpus_per_node: Some(m.gpus_per_node),
                        gemm_efficiency: m.gemm_efficiency,
                        memory_efficiency: m.memory_efficiency,
                        sequence_parallel: (!m.sequence_parallel).then_some(false),
                        tp_overlap: m.tp_overlap.then_some(true),
                        precision: (m.precision != bubblescope::model::Precision::Bf16).then_some(m.precision),
                        dp: (m.dp > 1).then_some(m.dp),
                        rank_order: (m.rank_order != bubblescope::model::RankOrder::TpDpPp).then_some(m.rank_order),
                    };
                } else {
                    l.model.preset = None;
                }
            } else {
                l.model = ModelSpec::preset(&key);
            }
        });
    };
    let source = move || spec.with(|s| s.preset.as_deref().and_then(model_preset).map(|p| p.source));
    let field = move |label: &'static str, field: Field, kind: NumberKind, help: &'static str| {
        let value = Signal::derive(move || {
            spec.with(|s| s.get(field)).and_then(|t| t.parse::<f64>().ok()).or_else(|| {
                resolved.with(|m| {
                    m.as_ref().and_then(|m| match field {
                        Field::Layers => Some(f64::from(m.layers)),
                        Field::Hidden => Some(f64::from(m.hidden)),
                        Field::Heads => Some(f64::from(m.heads)),
                        Field::KvHeads => Some(f64::from(m.kv_heads())),
                        Field::Seq => Some(f64::from(m.seq)),
                        Field::MicroBatch => Some(f64::from(m.micro_batch)),
                        Field::Vocab => Some(f64::from(m.vocab)),
                        Field::Ffn => Some(f64::from(m.ffn())),
                        // Overrides: empty while the GPU's figures set them.
                        Field::Tflops => m.tflops,
                        Field::Bandwidth => m.bandwidth,
                        Field::Tp => Some(f64::from(m.tp)),
                        Field::Dp => Some(f64::from(m.dp)),
                        Field::GpusPerNode => Some(f64::from(m.gpus_per_node)),
                        Field::GemmEfficiency => m.efficiency().ok().map(|e| e.gemm),
                        Field::MemoryEfficiency => m.efficiency().ok().map(|e| e.memory),
                        _ => Some(m.latency),
                    })
                })
            })
        });
        let optional = matches!(field, Field::Tflops | Field::Bandwidth);
        let on_change = Callback::new(move |v: Option<f64>| {
            let text = v.map(|v| v.to_string()).unwrap_or_default();
            state.update(|l| {
                // A value the box accepts is always one the spec takes; keep the link if not.
                let mut next = l.model.clone();
                if next.set(field, &text).is_ok() {
                    l.model = next;
                }
            });
        });
        let error = Signal::derive(move || state.error_for(field));
        view! {
            <NumberField label=label id=field.name() value=value kind=kind help=help on_change=on_change error=error
                optional=optional placeholder=if optional { "from the GPU" } else { "" }/>
        }
    };
    // The GPU: the link's, or the preset's, or the default.
    let gpu =
        move || resolved.with(|m| m.as_ref().and_then(|m| m.gpu.clone()).unwrap_or_else(|| DEFAULT_GPU.to_string()));
    let set_gpu = move |key: String| {
        state.update(|l| {
            let _ = l.model.set(Field::Gpu, &key);
        });
    };
    let gpu_source = move || GPUS.iter().find(|g| g.key == gpu()).map(|g| g.source);
    let gpu_error = move || state.error_for(Field::Gpu);
    let flash = move || resolved.with(|m| m.as_ref().is_some_and(|m| m.flash_attention));
    // The MLP's kind: the link's, or the preset's; the size box is labelled for it.
    let mlp = Memo::new(move |_| resolved.with(|m| m.as_ref().map_or(Mlp::Gelu, |m| m.mlp)));
    let set_mlp = move |name: String| {
        state.update(|l| {
            let _ = l.model.set(Field::Mlp, &name);
        });
    };
    let mlp_help = move |m: Mlp| match m {
        Mlp::Gelu => "two matrices, as the model card gives it",
        Mlp::Swiglu => "three matrices, as the model card gives it",
    };
    let set_flash = move |on: bool| state.update(|l| l.model.flash_attention = Some(on));
    let layout_error = move || state.error_for(Field::Layout);
    // The whole step: the ZeRO stage (the link's), the matmuls' precision and the tensor
    // parallelism's collectives (the model's).
    let zero = move || state.link.with(|l| l.step.zero.unwrap_or(0));
    let set_zero =
        move |text: String| state.update(|l| l.step.zero = text.parse::<u32>().ok().filter(|z| (1..=3).contains(z)));
    let precision = move || resolved.with(|m| m.as_ref().map_or(Precision::Bf16, |m| m.precision));
    let set_precision = move |name: String| {
        state.update(|l| {
            let _ = l.model.set(Field::Precision, &name);
        });
    };
    let sequence_parallel = move || resolved.with(|m| m.as_ref().is_some_and(|m| m.sequence_parallel));
    let tp_overlap = move || resolved.with(|m| m.as_ref().is_some_and(|m| m.tp_overlap));
    let model_error = move || state.error_for(Field::Model);
    view! {
        <div class="field">
            <label for="model">"Model"</label>
            <select id="model" class="select" data-testid="model-preset" prop:value=preset
                on:change=move |ev| pick(event_target_value(&ev))>
                {model_presets().into_iter().map(|p| {
                    let key = p.key;
                    view! { <option value=key selected=move || preset() == key>{p.title}</option> }
                }).collect_view()}
                <option value="" selected=move || preset().is_empty()>"Custom"</option>
            </select>
            {move || source().map(|s| view! { <p class="help">{s}</p> })}
            <p class="field-error" role="alert" data-testid="error-message" hidden=move || model_error().is_none()>{model_error}</p>
        </div>
        <div class="field">
            <label for="gpu">"GPU"</label>
            <select id="gpu" class="select" data-testid="model-gpu" prop:value=gpu
                on:change=move |ev| set_gpu(event_target_value(&ev))>
                {GPUS.iter().map(|g| {
                    let key = g.key;
                    view! { <option value=key selected=move || gpu() == key>{g.name}</option> }
                }).collect_view()}
            </select>
            {move || gpu_source().map(|s| view! { <p class="help">{s}</p> })}
            <p class="field-error" role="alert" data-testid="error-message" hidden=move || gpu_error().is_none()>{gpu_error}</p>
        </div>
        <div class="model-grid">
            {MODEL_COUNTS[..COUNTS_BEFORE_MLP].iter().map(|&(label, f, help)| field(label, f, NumberKind::Count, help)).collect_view()}
            <div class="field">
                <label for="mlp">"MLP"</label>
                <select id="mlp" class="select" data-testid="model-mlp" prop:value=move || mlp.get().name()
                    on:change=move |ev| set_mlp(event_target_value(&ev))>
                    {Mlp::ALL.into_iter().map(|m| view! {
                        <option value=m.name()>{match m { Mlp::Gelu => "GELU", Mlp::Swiglu => "SwiGLU" }}</option>
                    }).collect_view()}
                </select>
            </div>
            {move || { let m = mlp.get(); field(mlp_size_label(m), Field::Ffn, NumberKind::Count, mlp_help(m)) }}
            {MODEL_COUNTS[COUNTS_BEFORE_MLP..].iter().map(|&(label, f, help)| field(label, f, NumberKind::Count, help)).collect_view()}
            {MODEL_HARDWARE.into_iter().map(|(label, f, kind, help)| field(label, f, kind, help)).collect_view()}
        </div>
        <div class="model-grid step-settings">
            {field("Data parallel", Field::Dp, NumberKind::Count, "replicas of the pipeline")}
            <div class="field">
                <label for="zero">"ZeRO"</label>
                <select id="zero" class="select" data-testid="model-zero" prop:value=move || zero().to_string()
                    on:change=move |ev| set_zero(event_target_value(&ev))>
                    {(0..=3u32).map(|z| view! { <option value=z.to_string() selected=move || zero() == z>{z.to_string()}</option> }).collect_view()}
                </select>
                <p class="help">{move || ZERO_STAGES[zero().min(3) as usize]}</p>
            </div>
            <div class="field">
                <label for="precision">"Precision"</label>
                <select id="precision" class="select" data-testid="model-precision" prop:value=move || precision().name()
                    on:change=move |ev| set_precision(event_target_value(&ev))>
                    {Precision::ALL.into_iter().map(|p| view! { <option value=p.name() selected=move || precision() == p>{p.name()}</option> }).collect_view()}
                </select>
                <p class="help">"of the matmuls"</p>
            </div>
        </div>
        <label class="check">
            <input type="checkbox" data-testid="sequence-parallel" prop:checked=sequence_parallel
                on:change=move |ev| state.update(|l| l.model.sequence_parallel = Some(event_target_checked(&ev)))/>
            "Sequence parallel"
            <span class="help">" with tensor parallelism: reduce-scatter and all-gather in place of all-reduce"</span>
        </label>
        <label class="check">
            <input type="checkbox" data-testid="tp-overlap" prop:checked=tp_overlap
                on:change=move |ev| state.update(|l| l.model.tp_overlap = Some(event_target_checked(&ev)))/>
            "Overlap TP collectives"
            <span class="help">" with the matmuls, as Megatron's --tp-comm-overlap"</span>
        </label>
        <Calibrate/>
        <label class="check">
            <input type="checkbox" data-testid="flash-attention" prop:checked=flash
                on:change=move |ev| set_flash(event_target_checked(&ev))/>
            "FlashAttention"
            <span class="help">" no score matrices kept; B recomputes them"</span>
        </label>
        <div class="field" class:invalid=move || layout_error().is_some()>
            <label for="layout">"Layout"</label>
            <input id="layout" class="num text" type="text" spellcheck="false" autocomplete="off"
                data-testid="layout-input" placeholder="even split · Et*3|t*4|t*4|t*3L · 3,4,4,3"
                prop:value=move || spec.with(|s| s.layout.clone().unwrap_or_default())
                on:change=move |ev| {
                    let text = event_target_value(&ev);
                    state.update(|l| { let _ = l.model.set(Field::Layout, &text); });
                }/>
            <p class="help">"Megatron's --pipeline-model-parallel-layout (E embedding, t layer, L LM head, | between stages) or layers per device."</p>
            <p class="field-error" role="alert" data-testid="error-message" hidden=move || layout_error().is_none()>{layout_error}</p>
        </div>
    }
}

/// Measured F, B and W of the median device's layers: fits the GEMM and memory efficiencies
/// (core's [`ModelSpec::calibrated`]) and writes them into the link, so other microbatch
/// sizes, sequence lengths and layouts follow. The times themselves are not kept.
#[component]
fn Calibrate() -> impl IntoView {
    let state = expect_context::<AppState>();
    let said = RwSignal::new(None::<Result<String, String>>);
    let apply = move |text: String| {
        if text.trim().is_empty() {
            said.set(None);
            return;
        }
        let outcome = parse_times(&text).and_then(|times| {
            let (spec, devices) = state.link.with_untracked(|l| (l.model.clone(), l.params.devices));
            // The fit replaces whatever set the rates before.
            let free = ModelSpec { tflops: None, gemm_efficiency: None, memory_efficiency: None, ..spec };
            free.calibrated(devices, times)
        });
        match outcome {
            Ok((spec, c)) => {
                let pct = |r: f64| format!("{:+.1}%", r * 100.0);
                said.set(Some(Ok(format!(
                    "Fitted to {} layer{}: GEMM {}, memory {} (the model then gives F {}, B {}, W {}){}",
                    c.layers,
                    if c.layers == 1 { "" } else { "s" },
                    spec.gemm_efficiency.unwrap_or_default(),
                    spec.memory_efficiency.unwrap_or_default(),
                    pct(c.residuals[0]),
                    pct(c.residuals[1]),
                    pct(c.residuals[2]),
                    if c.determined {
                        ""
                    } else {
                        "; every operator is memory-bound here, so the GEMM efficiency is not determined"
                    }
                ))));
                state.update(|l| l.model = spec);
            }
            Err(e) => said.set(Some(Err(e.to_string()))),
        }
    };
    let error = move || said.with(|s| s.as_ref().and_then(|r| r.as_ref().err().cloned()));
    let done = move || said.with(|s| s.as_ref().and_then(|r| r.as_ref().ok().cloned()));
    view! {
        <div class="field" class:invalid=move || error().is_some()>
            <label for="calibrate">"Calibrate"</label>
            <input id="calibrate" class="num text" type="text" spellcheck="false" autocomplete="off"
                data-testid="calibrate-input" placeholder="F,B,W measured · 18.5ms,18.1ms,9.3ms"
                on:change=move |ev| apply(event_target_value(&ev))/>
            <p class="help">"One microbatch through the median device's layers, in µs or with a unit; fits the efficiencies above."</p>
            <p class="help" data-testid="calibrate-result" hidden=move || done().is_none()>{done}</p>
            <p class="field-error" role="alert" data-testid="error-message" hidden=move || error().is_none()>{error}</p>
        </div>
    }
}

/// The derived per-share costs, the communication per hop and the same run in the CLI (a
/// card beside the per-device table while costs come from a model).
#[component]
pub fn DerivedTable() -> impl IntoView {
    let state = expect_context::<AppState>();
    let derived = Memo::new(move |_| state.settings.with(|s| s.derived().and_then(Result::ok)));
    let rows = move || {
        derived.with(|d| {
            let d: &Derived = d.as_ref()?;
            let shares = d.shares();
            Some(
                shares
                    .iter()
                    .enumerate()
                    .map(|(k, p)| {
                        view! {
                            <tr>
                                <td>{k}</td>
                                <td class="name">{holds(p)}</td>
                                <td>{format_micros(p.f)}</td>
                                <td>{format_micros(p.b)}</td>
                                <td>{format_micros(p.w)}</td>
                                <td>{format_bytes(p.mem_f)}</td>
                                <td>{format_bytes(p.mem_w)}</td>
                            </tr>
                        }
                    })
                    .collect_view(),
            )
        })
    };
    // The stages the schedule cuts, when more than one per device, and where the head runs.
    let cut = move || {
        state.outcome.with(|o| {
            let placement = &o.main.result.as_ref().ok()?.schedule.placement;
            let stages = placement.stages_per_pipeline();
            (stages > placement.devices()).then(|| (stages, placement.device_of(stages - 1).unwrap_or(0)))
        })
    };
    let foot = move || {
        derived.with(|d| {
            d.as_ref().map(|d| {
                let layer = d.layer.totals();
                let matmuls = d.layer.term(Term::Matmul);
                let mut s = format!(
                    "{}: matmuls at {} of peak, memory-bound kernels at {} of HBM bandwidth. One layer: F {} ({} matmuls), B {}, W {} (matmuls alone). Communication {} per hop.",
                    d.gpu.name,
                    format_number(d.efficiency.gemm, 3),
                    format_number(d.efficiency.memory, 3),
                    format_micros(layer[0]),
                    format_micros(matmuls[0]),
                    format_micros(layer[1]),
                    format_micros(layer[2]),
                    format_micros(d.comm)
                );
                for note in &d.notes {
                    s.push(' ');
                    s.push_str(&capitalise(note));
                    s.push('.');
                }
                if let Some((stages, head)) = cut() {
                    let how = if d.finer.iter().any(|f| f.len() == stages as usize) {
                        "the model cut at whole layers into its stages"
                    } else {
                        "each share cut in proportion (give a layout of that many stages to place every layer)"
                    };
                    s.push_str(&format!(
                        " This schedule runs {stages} stages: {how}, the LM head on the last, on device {head}."
                    ));
                }
                s
            })
        })
    };
    let cli = move || state.settings.with(Settings::cli_command);
    view! {
        <Show when=move || derived.with(Option::is_some)>
            <section class="card" aria-label="Costs from the model">
            <h2 class="card-title">"From the model: each device's share, per microbatch"</h2>
            <div class="table-wrap">
                <table class="table" data-testid="derived-costs">
                    <thead><tr>
                        <th>"share"</th><th>"holds"</th><th title="forward">"F"</th><th title="input gradient">"B"</th>
                        <th title="weight gradient">"W"</th><th title="activations one forward stores">"mem-f"</th>
                        <th title="of those, kept after B until W">"mem-w"</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
            <p class="help">{foot}</p>
            <p class="help">"Same in the CLI: " <code class="cli" data-testid="model-cli">{cli}</code></p>
            </section>
        </Show>
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

/// The memory limit as a size (`80GiB`) when costs come from a model, where memory is in
/// bytes.
#[component]
pub fn SizeLimitField() -> impl IntoView {
    let state = expect_context::<AppState>();
    let text = RwSignal::new(String::new());
    let local_error = RwSignal::new(None::<String>);
    // Follow the link unless the box already says the same size.
    Effect::new(move |_| {
        let limit = state.link.with(|l| l.params.mem_limit);
        let current = text.get_untracked();
        let same = match (limit, parse_bytes(&current, Field::MemLimit)) {
            (Some(v), Ok(t)) => (v - t).abs() <= 1e-9 * v.abs().max(1.0),
            (None, _) => current.trim().is_empty(),
            _ => false,
        };
        if !same {
            text.set(limit.map(format_bytes).unwrap_or_default().replace(' ', ""));
            local_error.set(None);
        }
    });
    let commit = move |raw: String| {
        text.set(raw.clone());
        if raw.trim().is_empty() {
            local_error.set(None);
            state.update(|l| l.params.mem_limit = None);
            return;
        }
        match parse_bytes(&raw, Field::MemLimit) {
            Ok(bytes) => {
                local_error.set(None);
                state.update(|l| l.params.mem_limit = Some(bytes));
            }
            Err(e) => local_error.set(Some(e.to_string())),
        }
    };
    let error = move || local_error.get().or_else(|| state.error_for(Field::MemLimit));
    let set = move |gib: Option<f64>| state.update(|l| l.params.mem_limit = gib.map(|g| g * GIB));
    view! {
        <div class="field" class:invalid=move || error().is_some()>
            <div class="field-head">
                <label for="mem-limit">"Memory limit per device"</label>
                <input id="mem-limit" class="num" type="text" inputmode="decimal" placeholder="none"
                    data-testid="mem-limit-input" prop:value=move || text.get()
                    on:input=move |ev| commit(event_target_value(&ev))/>
            </div>
            <p class="help">"Activations only (e.g. 80GiB, 512MiB); weights and optimizer state are not counted."</p>
            <p class="field-error" role="alert" data-testid="error-message" hidden=move || error().is_none()>{error}</p>
        </div>
        <div class="chips">
            <button type="button" class="chip" on:click=move |_| set(Some(40.0))>"40 GiB"</button>
            <button type="button" class="chip" on:click=move |_| set(Some(64.0))>"64 GiB"</button>
            <button type="button" class="chip" on:click=move |_| set(Some(80.0))>"80 GiB"</button>
            <button type="button" class="chip" on:click=move |_| set(None)>"none"</button>
        </div>
    }
}
