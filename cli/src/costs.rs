//! `bubblescope costs`: a transformer config's per-share costs, as a table or JSON.

use std::io::Write as _;

use anyhow::{Context as _, Result};
use bubblescope::model::{self, Derived, Model};
use bubblescope::units::format_bytes;
use bubblescope::units::format_number;
use serde_json::{json, Value};

use crate::args::CostsArgs;

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
            let mut s = serde_json::to_string_pretty(&presets_json())?;
            s.push('\n');
            s
        } else {
            presets_text()
        }
    } else {
        let m = args.model.model()?;
        let derived = m.derive(args.devices).map_err(crate::args::flag_error)?;
        for note in &derived.notes {
            eprintln!("note: {note}");
        }
        if args.json {
            let mut s = serde_json::to_string_pretty(&json_report(&m, &derived))?;
            s.push('\n');
            s
        } else {
            table(&m, &derived)
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
                    "seq": m.seq, "micro_batch": m.micro_batch, "vocab": m.vocab, "ffn": m.ffn(),
                    "tflops": m.tflops, "bandwidth": m.bandwidth, "latency": m.latency,
                    "layout": m.layout, "flash_attention": m.flash_attention, "tp": m.tp,
                },
            })
        })
        .collect();
    json!({ "presets": presets })
}

fn presets_text() -> String {
    let mut out = String::new();
    for p in model::presets::model_presets() {
        out.push_str(&format!(
            "{:<14} {}\n{:<14} {} · {} devices, {} microbatches\n",
            p.key, p.title, "", p.source, p.devices, p.microbatches
        ));
    }
    out
}

/// What was assumed beyond the formulas, said in every report.
const ASSUMPTIONS: [&str; 5] = [
    "F, B, W per layer: the Zero Bubble paper's Table 1 FLOPs (MLP terms scaled by ffn/4h, attention's projections by (1 + g/a)/2 with g key/value heads); time = FLOPs / achieved TFLOP/s",
    "LM head (last share): 2·b·s·h·v FLOPs each for F, B and W; holds its input (2·b·s·h bytes) until W and fp32 logits (4·b·s·v bytes) until B",
    "embedding (first share): no FLOPs; holds its dropout mask (b·s·h bytes) until B",
    "activations: 16-bit, no recompute (Korthikanti et al.), K and V scaled by g/a with grouped-query attention; with FlashAttention no score matrices (no 5·a·s/h term) and B recomputes the scores (+4·b·s²·h FLOPs)",
    "tensor parallelism t (--tp, with sequence parallelism): every number is one GPU's, 1/t of the stage's FLOPs, activations, hop bytes and parameters; the collectives inside a layer are not timed (lower --tflops for them)",
];

fn json_report(m: &Model, d: &Derived) -> Value {
    let shares: Vec<Value> = d
        .shares()
        .iter()
        .enumerate()
        .map(|(k, s)| {
            json!({
                "share": k, "layers": s.piece.layers, "mtp": s.piece.mtp, "embedding": s.piece.embedding, "lm_head": s.piece.loss,
                "f": s.f, "b": s.b, "w": s.w, "mem_f": s.mem_f, "mem_w": s.mem_w, "params": s.params,
            })
        })
        .collect();
    let pieces: Vec<Value> = d
        .pieces
        .iter()
        .enumerate()
        .map(|(i, p)| json!({"stage": i, "layers": p.piece.layers, "mtp": p.piece.mtp, "f": p.f, "b": p.b, "w": p.w, "mem_f": p.mem_f, "mem_w": p.mem_w}))
        .collect();
    json!({
        "inputs": {
            "layers": m.layers, "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads(), "seq": m.seq,
            "micro_batch": m.micro_batch, "vocab": m.vocab, "ffn": m.ffn(), "tflops": m.tflops,
            "bandwidth": m.bandwidth, "latency": m.latency, "devices": d.devices,
            "layout": d.layout.to_megatron(), "flash_attention": m.flash_attention, "tp": m.tp,
        },
        "units": {"time": "µs", "memory": "bytes"},
        "shares": shares,
        "stages": pieces,
        "comm": d.comm,
        "notes": d.notes,
        "assumptions": ASSUMPTIONS,
    })
}

fn table(m: &Model, d: &Derived) -> String {
    let n = |v: f64| format_number(v, 1);
    let mut out = format!(
        "{} layers · hidden {} · {} heads{} · ffn {} · sequence {} · microbatch {} · vocabulary {}\n{} TFLOP/s per device · {} GB/s · {} µs latency · layout {}{}\n\n",
        m.layers,
        m.hidden,
        m.heads,
        if m.kv_heads() == m.heads { String::new() } else { format!(" ({} key/value)", m.kv_heads()) },
        m.ffn(),
        m.seq,
        m.micro_batch,
        m.vocab,
        bubblescope::units::short_number(m.tflops),
        bubblescope::units::short_number(m.bandwidth),
        bubblescope::units::short_number(m.latency),
        d.layout.to_megatron(),
        if m.tp > 1 { format!(" · tensor parallel {} (numbers per GPU)", m.tp) } else { String::new() }
    );
    out.push_str(&format!(
        "{:>5}  {:>6}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  holds\n",
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
    out.push_str(&format!("\ncommunication per hop: {} µs\n", format_number(d.comm, 3)));
    for a in ASSUMPTIONS {
        out.push_str(&format!("assumes: {a}\n"));
    }
    out
}
