//! `bubblescope costs`: a transformer config's per-share costs on a GPU, each pass's terms,
//! the hops and the calibration, as a table or JSON; `--list` shows the model and GPU presets.

use std::io::Write as _;

use anyhow::{Context as _, Result};
use bubblescope::model::roofline::{B, F, FORWARD_MEMORY_SHARE, W};
use bubblescope::model::{self, Breakdown, Calibration, Derived, Model, Term, GPUS};
use bubblescope::units::{format_bytes, format_number};
use serde_json::{json, Value};

use clap::Args;

use crate::args::{devices, ModelArgs};

/// `bubblescope costs`: a model's per-share costs.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct CostsArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Number of devices (pipeline ranks), P.
    #[arg(long, short = 'p', value_name = "P", default_value_t = 4, value_parser = devices)]
    pub devices: u32,
    /// Print one JSON object instead of a table (with --list: the presets).
    #[arg(long)]
    pub json: bool,
    /// List the model presets instead.
    #[arg(long)]
    pub list: bool,
}

/// Runs `bubblescope costs`.
pub fn run(args: &CostsArgs, matches: Option<&clap::ArgMatches>) -> Result<()> {
    let out = if args.list {
        // The list is every preset as it is: flags that shape one model do not apply.
        let devices_given =
            matches.is_some_and(|m| m.value_source("devices") == Some(clap::parser::ValueSource::CommandLine));
        if args.model.given() || devices_given {
            return Err(crate::output::user_error(
                "--list prints every model preset, so it takes no model flags or --devices",
                &["leave out --list to derive costs, e.g. `bubblescope costs --model llama-3-8b --devices 8`"],
            ));
        }
        if args.json {
            crate::output::json_text(&presets_json())
        } else {
            presets_text()
        }
    } else {
        let (flags, calibration) = args.model.calibrated(args.devices)?;
        let m = flags.model(args.devices)?;
        let derived = m.derive(args.devices).map_err(crate::args::flag_error)?;
        for note in &derived.notes {
            eprintln!("note: {note}");
        }
        if args.json {
            crate::output::json_text(&json_report(&m, &derived, calibration.as_ref()))
        } else {
            table(&m, &derived, calibration.as_ref())
        }
    };
    std::io::stdout().write_all(out.as_bytes()).context("writing to standard output")
}

/// `costs --list --json`: every preset with its model's inputs.
fn presets_json() -> Value {
    let presets: Vec<Value> = model::presets::model_presets()
        .iter()
        .map(|p| {
            let m = &p.model;
            json!({
                "key": p.key, "title": p.title, "source": p.source,
                "devices": p.devices, "microbatches": p.microbatches,
                "model": {
                    "layers": m.layers, "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads(),
                    "seq": m.seq, "micro_batch": m.micro_batch, "vocab": m.vocab, "mlp": m.mlp.name(), "ffn": m.ffn(),
                    "gpu": m.gpu, "tflops": m.tflops, "bandwidth": m.bandwidth, "latency": m.latency,
                    "layout": m.layout, "flash_attention": m.flash_attention, "tp": m.tp,
                    "head_dim": m.head_dim(), "mtp": m.mtp, "dp": m.dp,
                    "experts": m.moe.experts, "top_k": m.is_moe().then(|| m.top_k()),
                    "shared_experts": m.moe.shared_experts, "expert_ffn": m.moe.expert_ffn,
                    "dense_layers": m.moe.dense_layers, "ep": m.moe.ep, "capacity_factor": m.moe.capacity_factor,
                    "kv_lora_rank": m.mla.kv_lora_rank, "q_lora_rank": m.mla.q_lora_rank,
                    "qk_rope_dim": m.mla.qk_rope_dim, "qk_nope_dim": m.mla.qk_nope_dim, "v_head_dim": m.mla.v_head_dim,
                },
            })
        })
        .collect();
    let gpus: Vec<Value> = GPUS
        .iter()
        .map(|g| {
            json!({
                "key": g.key, "name": g.name, "peak_tflops": g.peak_tflops, "hbm_gbps": g.hbm_gbps,
                "hbm_bytes": g.hbm_bytes, "link": g.link, "link_gbps": g.link_gbps,
                "network_gbps": g.network_gbps, "host_link": g.host_link, "host_gbps": g.host_gbps,
                "source": g.source,
            })
        })
        .collect();
    json!({ "presets": presets, "gpus": gpus })
}

fn presets_text() -> String {
    let mut out = String::from("models (--model):\n");
    for p in model::presets::model_presets() {
        out.push_str(&format!(
            "{:<14} {}\n{:<14} {} · {} devices, {} microbatches\n",
            p.key, p.title, "", p.source, p.devices, p.microbatches
        ));
    }
    out.push_str("\ngpus (--gpu):\n");
    for g in GPUS {
        out.push_str(&format!(
            "{:<14} {}: {} TFLOP/s dense BF16, {} GB/s HBM, {} GB\n{:<14} within a node {} GB/s each way ({}); network {} GB/s per GPU; host {} GB/s each way ({})\n{:<14} {}\n",
            g.key,
            g.name,
            format_number(g.peak_tflops, 1),
            format_number(g.hbm_gbps, 0),
            format_number(g.hbm_bytes / 1e9, 0),
            "",
            format_number(g.link_gbps, 0),
            g.link,
            format_number(g.network_gbps, 0),
            format_number(g.host_gbps, 0),
            g.host_link,
            "",
            g.source
        ));
    }
    out
}

/// What was assumed beyond the formulas, said in every report.
const ASSUMPTIONS: [&str; 6] = [
    "matmul FLOPs per layer: the Zero Bubble paper's Table 1 (MLP terms scaled by ffn/4h, attention's projections by (1 + g/a)/2 with g key/value heads); LM head 2·b·s·h·v each for F, B and W",
    "time: each operator at the slower of its FLOPs at the achieved matmul rate and its bytes (16-bit tensors, fp32 weight gradients) at the achieved HBM bandwidth; forward kernels at 0.62 of the backward's bandwidth share; W is the weight-gradient matmuls alone",
    "embedding (first share): a lookup and its dropout; in B its dense table gradient (12·v·h bytes); LM head (last share): a final norm, its matmul and a cross-entropy with fp32 probabilities",
    "activations: 16-bit, no recompute (Korthikanti et al.), K and V scaled by g/a with grouped-query attention; with FlashAttention no score matrices (no 5·a·s/h term), its fused kernel at the matmul rate, and B recomputes the scores (+4·b·s²·h FLOPs)",
    "tensor parallelism t (--tp, with sequence parallelism): every number is one GPU's, 1/t of the stage's FLOPs, bytes, activations, hop bytes and parameters; the collectives inside a layer are not timed (lower --gemm-efficiency for them)",
    "hops: one microbatch's activation (2·b·s·h/t bytes per GPU) plus the latency; NCCL send/recv reach 0.16 of an NVLink switch's bandwidth, 0.7 of a direct link's, 0.8 of the network's; devices fill nodes in order; the simulator times every hop at the slowest",
];

fn terms_json(b: &Breakdown) -> Value {
    let mut map = serde_json::Map::new();
    for (term, t) in &b.terms {
        map.insert(term.name().to_string(), json!({"f": t[F], "b": t[B], "w": t[W]}));
    }
    let total = b.totals();
    map.insert("total".to_string(), json!({"f": total[F], "b": total[B], "w": total[W]}));
    Value::Object(map)
}

fn json_report(m: &Model, d: &Derived, calibration: Option<&Calibration>) -> Value {
    let shares: Vec<Value> = d
        .shares()
        .iter()
        .enumerate()
        .map(|(k, s)| {
            json!({
                "share": k, "layers": s.piece.layers, "mtp": s.piece.mtp, "embedding": s.piece.embedding, "lm_head": s.piece.loss,
                "f": s.f, "b": s.b, "w": s.w, "mem_f": s.mem_f, "mem_w": s.mem_w, "params": s.params,
                "a2a": {"f": s.a2a[0], "b": s.a2a[1]},
            })
        })
        .collect();
    let pieces: Vec<Value> = d
        .pieces
        .iter()
        .enumerate()
        .map(|(i, p)| json!({"stage": i, "layers": p.piece.layers, "mtp": p.piece.mtp, "f": p.f, "b": p.b, "w": p.w, "mem_f": p.mem_f, "mem_w": p.mem_w, "a2a": {"f": p.a2a[0], "b": p.a2a[1]}}))
        .collect();
    let g = d.gpu;
    let count = m.param_count();
    let flops = m.flops_per_token();
    let mut terms =
        json!({"layer": terms_json(&d.layer), "lm_head": terms_json(&d.head), "embedding": terms_json(&d.embedding)});
    if let (Some(b), Some(map)) = (&d.moe_layer, terms.as_object_mut()) {
        map.insert("moe_layer".to_string(), terms_json(b));
    }
    json!({
        "inputs": {
            "layers": m.layers, "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads(), "seq": m.seq,
            "micro_batch": m.micro_batch, "vocab": m.vocab, "mlp": m.mlp.name(), "ffn": m.ffn(), "tflops": m.tflops,
            "bandwidth": m.bandwidth, "latency": m.latency, "devices": d.devices,
            "layout": d.layout.to_megatron(), "flash_attention": m.flash_attention, "tp": m.tp,
            "gpu": g.key, "gpus_per_node": m.gpus_per_node,
            "gemm_efficiency": m.gemm_efficiency, "memory_efficiency": m.memory_efficiency,
        },
        "gpu": {
            "key": g.key, "name": g.name, "peak_tflops": g.peak_tflops, "hbm_gbps": g.hbm_gbps, "hbm_bytes": g.hbm_bytes,
            "link": g.link, "link_gbps": g.link_gbps, "network_gbps": g.network_gbps,
            "host_link": g.host_link, "host_gbps": g.host_gbps, "source": g.source,
        },
        "efficiency": {
            "gemm": d.efficiency.gemm, "memory": d.efficiency.memory,
            "forward_memory": d.efficiency.memory * FORWARD_MEMORY_SHARE,
            "calibration": calibration.map(|c| json!({
                "measured": {"f": c.measured[F], "b": c.measured[B], "w": c.measured[W]},
                "layers": c.layers,
                "residuals": {"f": c.residuals[F], "b": c.residuals[B], "w": c.residuals[W]},
                "determined": c.determined,
            })),
        },
        "units": {"time": "µs", "memory": "bytes"},
        "shares": shares,
        "stages": pieces,
        "terms": terms,
        "params_total": count.total,
        "params_active": count.active,
        "mtp": {"layers": m.mtp, "params_total": count.mtp_total, "params_active": count.mtp_active},
        "flops_per_token": {"forward": flops.forward, "matmuls": flops.matmuls},
        "moe": moe_json(m, d),
        "a2a": {"f": d.a2a[F], "b": d.a2a[B], "w": d.a2a[W]},
        "comm": d.comm,
        "hops": {
            "within_node": d.hops.within, "across_nodes": d.hops.across, "nodes": d.hops.nodes,
            "crossings": d.hops.crossings, "simulated": d.comm,
        },
        "notes": d.notes,
        "assumptions": ASSUMPTIONS,
    })
}

/// The MoE and MLA settings the costs used (`null` for a dense model with plain attention).
fn moe_json(m: &Model, d: &Derived) -> Value {
    let mla = m.is_mla().then(|| {
        json!({
            "q_lora_rank": m.mla.q_lora_rank, "kv_lora_rank": m.mla.kv_lora_rank, "qk_rope_dim": m.mla.qk_rope_dim,
            "qk_nope_dim": m.mla.qk_nope_dim, "v_head_dim": m.mla.v_head_dim,
        })
    });
    if !m.is_moe() {
        return json!({"experts": 0, "mla": mla});
    }
    let e = &m.moe;
    json!({
        "experts": e.experts, "top_k": m.top_k(), "shared_experts": e.shared_experts,
        "expert_ffn": e.expert_ffn.unwrap_or_else(|| m.ffn()), "dense_layers": e.dense_layers, "ep": e.ep,
        "capacity_factor": e.capacity_factor, "ep_crosses_nodes": m.ep_crosses_nodes(d.devices),
        "moe_layers": m.moe_layers_in(0, m.layers), "mla": mla,
    })
}

/// The parameter counts and, for an MoE model, its experts and all-to-all, as text.
fn moe_text(m: &Model, d: &Derived) -> String {
    let b = |v: f64| format!("{}B", format_number(v / 1e9, 2));
    let c = m.param_count();
    let mut out = format!("parameters: {} total, {} active per token", b(c.total), b(c.active));
    if m.mtp > 0 {
        out.push_str(&format!(
            " · {} MTP layer{} apart: {}, {} active (embedding and head shared)",
            m.mtp,
            if m.mtp == 1 { "" } else { "s" },
            b(c.mtp_total),
            b(c.mtp_active)
        ));
    }
    out.push_str(&format!(" · forward {} GFLOP per token\n", format_number(m.flops_per_token().forward / 1e9, 2)));
    if m.is_moe() {
        let e = &m.moe;
        out.push_str(&format!(
            "experts: {} routed, top-{}{} of intermediate {} · {} MoE layer{}{} · EP {}",
            e.experts,
            m.top_k(),
            if e.shared_experts > 0 { format!(" + {} shared", e.shared_experts) } else { String::new() },
            e.expert_ffn.unwrap_or_else(|| m.ffn()),
            m.moe_layers_in(0, m.layers),
            if m.moe_layers_in(0, m.layers) == 1 { "" } else { "s" },
            if e.dense_layers > 0 { format!(" after {} dense", e.dense_layers) } else { String::new() },
            e.ep,
        ));
        if let Some(cf) = e.capacity_factor {
            out.push_str(&format!(" · capacity factor {}", format_number(cf, 2)));
        }
        if e.ep > 1 {
            out.push_str(&format!(
                " · all-to-all {} µs in F, {} µs in B per MoE layer ({}), in the pass times",
                format_number(d.a2a[F], 1),
                format_number(d.a2a[B], 1),
                if m.ep_crosses_nodes(d.devices) { "across nodes" } else { "within a node" }
            ));
        }
        out.push('\n');
    }
    out
}

fn table(m: &Model, d: &Derived, calibration: Option<&Calibration>) -> String {
    let n = |v: f64| format_number(v, 1);
    let mut out = format!(
        "{} layers · hidden {} · {} heads{} · {} {} {} · sequence {} · microbatch {} · vocabulary {} · layout {}{}\n",
        m.layers,
        m.hidden,
        m.heads,
        if m.kv_heads() == m.heads { String::new() } else { format!(" ({} key/value)", m.kv_heads()) },
        m.mlp.name(),
        m.mlp.size_name(),
        m.ffn(),
        m.seq,
        m.micro_batch,
        m.vocab,
        d.layout.to_megatron(),
        if m.tp > 1 { format!(" · tensor parallel {} (numbers per GPU)", m.tp) } else { String::new() }
    );
    out.push_str(&hardware_text(m, d));
    out.push_str(&moe_text(m, d));
    if let Some(c) = calibration {
        out.push_str(&format!("{}\n", crate::args::calibration_note(c)));
    }
    out.push_str(&format!(
        "\n{:>5}  {:>6}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  holds\n",
        "share", "layers", "F µs", "B µs", "W µs", "mem-f", "mem-w"
    ));
    for (k, s) in d.shares().iter().enumerate() {
        let mut holds = Vec::new();
        if s.piece.embedding {
            holds.push("embedding".to_string());
        }
        if s.piece.mtp > 0 {
            holds.push(format!("{} MTP layer{}", s.piece.mtp, if s.piece.mtp == 1 { "" } else { "s" }));
        }
        if s.piece.loss {
            holds.push("LM head + loss".to_string());
        }
        out.push_str(&format!(
            "{:>5}  {:>6}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {}\n",
            k,
            s.piece.layers,
            n(s.f),
            n(s.b),
            n(s.w),
            format_bytes(s.mem_f),
            format_bytes(s.mem_w),
            holds.join(", ")
        ));
    }
    out.push_str(&terms_text(d));
    out.push_str(&hops_text(d));
    for a in ASSUMPTIONS {
        out.push_str(&format!("assumes: {a}\n"));
    }
    out
}

/// The GPU and the rates the work is priced at.
fn hardware_text(m: &Model, d: &Derived) -> String {
    let g = d.gpu;
    let e = d.efficiency;
    let matmuls = match m.tflops {
        Some(t) => {
            // Any positive rate reads as given, never as 0 (`1e-300 TFLOP/s, 1.01e-303 of peak`).
            let small = |v: f64| {
                if v.abs() >= 1e-4 {
                    bubblescope::units::format_significant(v, 4)
                } else {
                    format!("{v:.2e}")
                }
            };
            format!("matmuls at {} TFLOP/s (--tflops, {} of peak)", small(t), small(e.gemm))
        }
        None => format!(
            "matmuls at {} of peak ({} TFLOP/s)",
            format_number(e.gemm, 4),
            format_number(g.peak_tflops * e.gemm, 1)
        ),
    };
    format!(
        "{}: {} TFLOP/s peak BF16, {} GB/s HBM, {} GB · {matmuls} · memory-bound kernels at {} of HBM bandwidth ({} GB/s; the forward's at {} of that, {} GB/s)\n",
        g.name,
        format_number(g.peak_tflops, 1),
        format_number(g.hbm_gbps, 0),
        format_number(g.hbm_bytes / 1e9, 0),
        format_number(e.memory, 4),
        format_number(g.hbm_gbps * e.memory, 0),
        format_number(FORWARD_MEMORY_SHARE, 2),
        format_number(g.hbm_gbps * e.memory * FORWARD_MEMORY_SHARE, 0),
    )
}

/// One layer's terms per pass, the LM head's and the embedding's, and why W is what it is.
fn terms_text(d: &Derived) -> String {
    let n = |v: f64| format_number(v, 1);
    let which = if d.moe_layer.is_some() { "one dense layer" } else { "one layer" };
    let mut out = format!("\n{which}, one microbatch (µs):\n{:<16}  {:>10}  {:>10}  {:>10}\n", "term", "F", "B", "W");
    for (term, t) in &d.layer.terms {
        out.push_str(&format!("{:<16}  {:>10}  {:>10}  {:>10}\n", label(*term), n(t[F]), n(t[B]), n(t[W])));
    }
    let total = d.layer.totals();
    out.push_str(&format!("{:<16}  {:>10}  {:>10}  {:>10}\n", "total", n(total[F]), n(total[B]), n(total[W])));
    if let Some(b) = &d.moe_layer {
        let t = b.totals();
        out.push_str(&format!("{:<16}  {:>10}  {:>10}  {:>10}\n", "MoE layer", n(t[F]), n(t[B]), n(t[W])));
        if d.a2a != [0.0; 3] {
            out.push_str(&format!(
                "{:<16}  {:>10}  {:>10}  {:>10}\n",
                "+ all-to-all",
                n(d.a2a[F]),
                n(d.a2a[B]),
                n(d.a2a[W])
            ));
        }
    }
    for (name, b) in [("LM head + loss", &d.head), ("embedding", &d.embedding)] {
        let t = b.totals();
        out.push_str(&format!("{:<16}  {:>10}  {:>10}  {:>10}\n", name, n(t[F]), n(t[B]), n(t[W])));
    }
    let matmul = d.layer.term(Term::Matmul);
    if total[F] > 0.0 {
        out.push_str(&format!(
            "W/F = {}: W is the weight-gradient matmuls alone; F adds {} µs of attention scores, norms, activations and residuals ({}% of F) beside its own matmuls\n",
            format_number(total[W] / total[F], 2),
            n(total[F] - matmul[F]),
            format_number(100.0 * (total[F] - matmul[F]) / total[F], 0),
        ));
    }
    out
}

fn label(term: Term) -> &'static str {
    match term {
        Term::Matmul => "matmuls",
        Term::Attention => "attention scores",
        Term::Norm => "layer norms",
        Term::Activation => "activation",
        Term::Residual => "residual+dropout",
        Term::BiasGrad => "bias gradients",
        Term::Head => "LM head + loss",
        Term::Embedding => "embedding",
        Term::TpCollectives => "TP collectives",
    }
}

/// The hops: within and across nodes, and the one time the simulator uses.
fn hops_text(d: &Derived) -> String {
    let h = &d.hops;
    let mut out = format!(
        "\nhop within a node: {} µs · across nodes: {} µs · {} device{} on {} node{}",
        format_number(h.within, 3),
        format_number(h.across, 3),
        d.devices,
        if d.devices == 1 { "" } else { "s" },
        h.nodes,
        if h.nodes == 1 { "" } else { "s" },
    );
    if !h.crossings.is_empty() {
        let k: Vec<String> = h.crossings.iter().map(|k| format!("{k}→{}", k + 1)).collect();
        out.push_str(&format!(" (crossing at {})", k.join(", ")));
    }
    out.push_str(&format!("\ncommunication per hop: {} µs\n", format_number(d.comm, 3)));
    out
}
