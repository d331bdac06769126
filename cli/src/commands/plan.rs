//! `bubblescope plan`: the fastest plans under a memory limit, and the winner as a PyTorch
//! schedule CSV.

use std::fmt::Write as _;

use anyhow::Result;
use bubblescope::formats;
use bubblescope::model::parse_memory;
use bubblescope::model::Model;
use bubblescope::plan::{
    all_families, attribute_plan, describe_trade, evaluate, export_best, CostSource, Mesh, MeshPins, Meshes, Plan,
    PlanSearch, PlanSpec, StaticMemory, TradeSpec, BYTES_PER_PARAMETER, MAX_PLAN_MICROBATCHES_PER_DEVICE,
};
use bubblescope::units::format_bytes;
use bubblescope::units::format_number;
use bubblescope::Field;
use serde_json::{json, Value};

use clap::Args;

use crate::args::{devices, positive, CostArgs};

/// `bubblescope plan`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct PlanArgs {
    /// Number of devices (pipeline ranks), P; without it, --gpus searches every split.
    #[arg(long, short = 'p', value_name = "P", value_parser = devices, required_unless_present = "gpus")]
    pub devices: Option<u32>,
    #[command(flatten)]
    pub costs: CostArgs,
    /// Samples per training step over every replica; microbatch counts that divide each
    /// replica's share are tried (needs a model).
    #[arg(long = "global-batch", value_name = "N", value_parser = positive)]
    pub global_batch: Option<u32>,
    /// ZeRO stage of the whole step: 0 replicated, 1 distributed optimizer, 2 sharded
    /// gradients, 3 fully sharded (FSDP) [default: 0]; static memory is sharded by it.
    #[arg(long, value_name = "Z", value_parser = crate::args::zero_stage, hide_short_help = true)]
    pub zero: Option<u32>,
    /// GPUs in all: tp · pp · dp. With -p it is checked against --tp, -p and --dp; without
    /// -p every split of them is searched (--tp, --dp and --zero, when given, are kept).
    #[arg(long, value_name = "N", hide_short_help = true, value_parser = positive)]
    pub gpus: Option<u32>,
    /// What a device holds besides activations: a size per device (`20GiB`; a number in mem-f's
    /// unit without a model), or `auto`: 18 bytes per parameter of the device's share
    /// [default: auto with a model, else 0].
    #[arg(long = "static-memory", value_name = "BYTES|auto")]
    pub static_memory: Option<String>,
    #[command(flatten)]
    pub export: crate::export::ExportArgs,
    /// How many plans to print.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = positive)]
    pub top: u32,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &PlanArgs) -> Result<()> {
    let Some(limit) = mem_limit(args)? else {
        return Err(crate::output::user_error(
            "--mem-limit is required: plans are searched under a per-device memory limit",
            &["give e.g. --mem-limit 80GiB with a model (or --gpu, whose memory it then is), or a number in mem-f's unit"],
        ));
    };
    let target = match &args.export.export {
        Some(path) => {
            args.costs.refuse_overwrite(path)?;
            Some(crate::export::Target::export(&args.export, path)?)
        }
        None => None,
    };
    // One search per EP degree (`--ep 1,2,4`), their plans ranked together: the costs follow
    // EP. What is said once (notes, hints) is said of the first degree.
    let eps = args.costs.model.ep_sizes();
    if eps.len() > 1 && args.devices.is_none() {
        return Err(crate::output::user_error(
            "plan without -p searches the splits of --gpus at one EP degree, but --ep lists several",
            &["give -p to compare EP degrees on one pipeline, or one --ep with --gpus"],
        ));
    }
    // With a global batch the micro-batch size follows from each microbatch count, unless the
    // user fixes it.
    let mut costs = args.costs.clone();
    costs.model = costs.model.with_ep(eps[0]);
    // A calibration fits the model as the flags give it, before plans vary the micro-batch.
    if let Some(p) = args.devices {
        let (calibrated, calibration) = costs.model.calibrated(p)?;
        if let Some(c) = &calibration {
            eprintln!("note: {}", crate::args::calibration_note(c));
        }
        costs.model = calibrated;
    } else if costs.model.calibrate.is_some() {
        return Err(crate::output::user_error(
            "--calibrate needs -p: a calibration fits the model on one pipeline, and --gpus without -p searches many",
            &["give -p (and --tp, --dp) of the profiled run, or leave --calibrate out"],
        ));
    }
    let keep_micro_batch = args.global_batch.is_some() && costs.model.micro_batch.is_some();
    if args.global_batch.is_some() && costs.model.given() {
        costs.model.micro_batch.get_or_insert(1);
    }
    let model = match costs.model()? {
        Some(spec) => Some(spec.resolve().map_err(crate::args::flag_error)?),
        None => None,
    };
    let static_memory = static_memory(args, model.is_some())?;
    let source = match &model {
        Some(m) => CostSource::Model(m.clone()),
        None => CostSource::Costs(args.costs.hand_costs(None, args.devices.unwrap_or(1))?),
    };
    let base = PlanSpec {
        devices: args.devices.unwrap_or(1),
        mem_limit: limit,
        source,
        global_batch: args.global_batch,
        keep_micro_batch,
        static_memory,
        families: all_families(),
        trade: TradeSpec::None,
        step: bubblescope::step::StepSpec { zero: args.zero, gpus: args.gpus, global_batch: None },
        p2p: args.costs.p2p.unwrap_or_default(),
    };
    let (searches, meshes) = match args.devices {
        Some(p) => {
            let mut specs = Vec::new();
            for &ep in &eps[1..] {
                let mut at = costs.clone();
                at.model = at.model.with_ep(ep);
                let Some(m) = at.model()?.map(|spec| spec.resolve().map_err(crate::args::flag_error)).transpose()?
                else {
                    continue;
                };
                let trade = at.plan_trade(Some(&m), p)?;
                specs.push(PlanSpec { source: CostSource::Model(m), trade, ..base.clone() });
            }
            let first = PlanSpec { trade: costs.plan_trade(model.as_ref(), p)?, ..base };
            specs.insert(0, first);
            (specs, None)
        }
        None => {
            let (specs, meshes) = mesh_searches(args, &costs, model.as_ref(), base)?;
            (specs, Some(meshes))
        }
    };
    let mut candidates = Vec::new();
    for spec in &searches {
        match (spec.candidates(), &meshes) {
            (Ok(c), _) => candidates.extend(c),
            (Err(e), None) => return Err(crate::args::flag_error(e)),
            // One split the search cannot run (its replicas leave no microbatch count, say)
            // does not stop the others.
            (Err(e), Some(_)) => eprintln!("note: {} is left out: {}", mesh_of(spec).describe(), e.message),
        }
    }
    let spec = &searches[0];
    // What the search leaves out, said once its candidates are known and before it runs.
    if let Some(p) = args.devices {
        note_one_pipeline(args, model.as_ref(), p, keep_micro_batch);
        // On one pipeline the flags that change nothing there are said, as simulate says them.
        if let Some(m) = &model {
            if let Ok((dp, _)) = spec.step.check(m, p) {
                crate::step::note_without_effect(&costs, m, &spec.step, p, dp);
            }
        }
    }
    let total = candidates.len();
    let mut found = PlanSearch::collect(crate::parallel::run_parallel(candidates, evaluate));
    let searched = total - found.not_tried;
    // The export looks past --top: the best plan one CSV can hold may rank lower.
    let export = match (&target, found.plans.is_empty()) {
        (Some(t), false) => {
            Some(export_best(&found.plans, &t.what(), |s, c| t.text(s, c, None)).map_err(|e| anyhow::anyhow!("{e}"))?)
        }
        _ => None,
    };
    let exported = export.as_ref().map(|e| found.plans[e.index].clone());
    // What balancing removed, from every plan that fits (before the list is cut to --top).
    let balance = balance(&found.plans);
    found.plans.truncate(args.top as usize);
    for p in &mut found.plans {
        attribute_plan(p);
    }
    if meshes.is_some() {
        note_shown_without_effect(args, &costs, &found.plans);
    }
    if let (Some(m), Some(p)) = (&model, args.devices) {
        note_plan_cuts(m, p, &found.plans);
        if let Ok(derived) = m.derive(p) {
            crate::args::note_unplaced_mtp(&costs.model.spec(), &derived);
        }
    }
    let bytes = model.is_some();
    if found.plans.is_empty() {
        let mut hints = Vec::new();
        // Whether some allowed limit would hold the least need (unknown: assume so).
        let fits_some = found.least_memory.is_none_or(bubblescope::params::some_limit_fits);
        if let Some(least) = found.least_memory {
            let searched = match &spec.trade {
                TradeSpec::Search(_) => "even with the most recompute and offload tried, ",
                _ => "",
            };
            // Rounded up: the need shown is a limit that holds it.
            let least_text = if bytes {
                bubblescope::units::format_bytes_up(least)
            } else {
                format_number(bubblescope::units::round_up(least, 4), 4)
            };
            hints.push(if fits_some {
                format!("{searched}the least memory a candidate needs is {least_text} per device: a limit from there on fits")
            } else {
                format!(
                    "{searched}the least memory a candidate needs is {least_text} ({}) per device, above the largest limit, {}: no allowed limit fits",
                    if bytes { format!("{:.0} bytes", least.ceil()) } else { bubblescope::units::short_number(least) },
                    bubblescope::params::MAX_MEM_LIMIT_TEXT
                )
            });
        }
        // A larger limit helps only when an allowed one holds the need.
        let raise = if fits_some { "raise --mem-limit, or " } else { "" };
        if meshes.is_some() {
            hints.push(format!("{raise}give more --gpus (each holds less of the model)"));
        } else {
            hints.push(format!("{raise}use more devices (each holds less of the model)"));
        }
        hints.push("with a model, lower --static-memory, or a smaller --micro-batch or --global-batch".to_string());
        // Replicas can shard what each holds (every stage is searched without -p).
        if let Some(m) = model.as_ref().filter(|m| meshes.is_none() && m.dp > 1 && args.zero.unwrap_or(0) < 3) {
            hints.insert(
                0,
                format!(
                    "shard the optimizer state over the {} data-parallel replicas with --zero {} (2 also the gradients, 3 also the weights)",
                    m.dp,
                    args.zero.unwrap_or(0) + 1
                ),
            );
        }
        // When the weights and optimizer state alone leave no room, say so and name --tp.
        if let (Some(m), StaticMemory::FromModel, Some(p)) = (&model, &spec.static_memory, args.devices) {
            if let Ok(d) = m.derive(p) {
                let per = bytes_per_parameter(spec);
                let least = d.shares().iter().map(|s| s.params).fold(f64::INFINITY, f64::min) * per;
                if least >= limit {
                    hints.insert(
                        0,
                        format!(
                            "weights and optimizer state alone take {} or more per device ({} bytes per parameter of a share): split each stage over more GPUs with --tp (currently {}), shard them with --dp and --zero, or use more devices",
                            format_bytes(least),
                            format_number(per, 2),
                            m.tp
                        ),
                    );
                }
            }
        }
        return Err(crate::output::user_error(
            &format!(
                "no plan fits under the limit of {} per device ({searched} candidates: {} above it, {} invalid{})",
                if bytes { format_bytes(limit) } else { format_number(limit, 4) },
                found.over_limit,
                found.invalid,
                deadlocked(&found)
            ),
            &hints,
        ));
    }
    if let (Some(target), Some(export), Some(plan)) = (&target, &export, &exported) {
        let path = &target.path;
        let c = &plan.candidate;
        if export.index > 0 {
            eprintln!(
                "note: plan 1 ({}) cannot be written as {}: {}; --export wrote plan {} ({}), the best that can",
                found.plans[0].candidate.family.name,
                target.what(),
                export.skipped.as_deref().unwrap_or_default(),
                export.index + 1,
                describe(plan)
            );
        }
        target.write(&export.text)?;
        if crate::output::is_std(path) {
            // Standard output holds the CSV alone, so it can be piped.
            return Ok(());
        }
        if !target.format.can_import() {
            // A Perfetto trace is written to be viewed: nothing reads it back.
            let shown = bubblescope::units::shell_word(&path.display().to_string());
            eprintln!(
                "note: {shown} is a Perfetto trace, to view (ui.perfetto.dev), not to read back: --to-format json or pytorch-csv writes a file simulate --from reads"
            );
        } else {
            // The CSV holds the orders, not the costs: say how to read it back at the plan's.
            let flags = match model.is_some() {
                true => {
                    let mut m = costs.model.spec();
                    if let Some(b) = c.micro_batch {
                        let _ = m.set(Field::MicroBatch, &b.to_string());
                    }
                    if let Some(layout) = &c.layout {
                        let _ = m.set(Field::Layout, layout);
                    }
                    // The plan's own EP degree, one of several searched.
                    if let Some(ep) = plan_ep(plan).filter(|_| eps.len() > 1) {
                        let _ = m.set(Field::Ep, &ep.to_string());
                    }
                    // A split the search chose: its TP and replicas.
                    if meshes.is_some() {
                        let mesh = plan_mesh(plan);
                        let _ = m.set(Field::Tp, &mesh.tp.to_string());
                        let _ = m.set(Field::Dp, &mesh.dp.to_string());
                    }
                    m.cli_flags()
                }
                false => bubblescope::cost_lists::cost_flags(
                    &c.params.costs,
                    c.params.devices,
                    c.family.uses(Field::Overlap),
                ),
            };
            // A JSON file holds the plan's R passes and copies (and its send mode): flags for
            // them would be refused as a second trade. A CSV holds the compute orders only.
            let json_file = target.format == formats::Format::Json;
            let mut flags = match json_file {
                true => flags,
                false => format!("{flags} {}", trade_flags(plan, args)),
            };
            if !c.params.costs.p2p.is_async() && !json_file {
                flags = format!("{} --p2p {}", flags.trim_end(), c.params.costs.p2p.name());
            }
            let shown = bubblescope::units::shell_word(&path.display().to_string());
            // A name whose extension says another format is read as the format written.
            let named = formats::Format::from_extension(&path.display().to_string());
            let from_format = match named.is_some_and(|f| f.extension() != target.format.extension()) {
                true => format!(" --from-format {}", target.format.name()),
                false => String::new(),
            };
            let command = format!("bubblescope simulate --from {shown}{from_format} {}", flags.trim());
            eprintln!("wrote {shown}; read it back at the plan's costs with: {}", command.trim_end());
        }
    }
    let out = if args.json {
        let mut value = json(spec, &found, searched, meshes.as_ref());
        value["balance"] = balance_json(&balance, &found);
        crate::output::json_text(&value)
    } else {
        let mut text = table(spec, &found, searched, bytes, meshes.as_ref());
        let lines = balance_lines(&balance, &found, bytes);
        if let Some(at) = text.rfind("\nsearched ") {
            text.insert_str(at, &lines);
        }
        text
    };
    crate::output::print(&out)
}

/// The flags that give a plan's recompute and offload (empty when it trades nothing): what a
/// PyTorch file of its compute orders needs to read back at the plan's numbers.
fn trade_flags(plan: &Plan, args: &PlanArgs) -> String {
    let Some(t) = &plan.trade else { return String::new() };
    let devices = plan.candidate.params.devices;
    let recompute: Vec<&str> = (0..devices).map(|d| t.trade.recompute_of(d).name()).collect();
    let mut out = format!("--recompute {}", recompute.join(","));
    if t.trade.offloads() {
        out.push_str(&format!(" --offload {}", t.trade.offload));
        if let Some(c) = args.costs.copy_time {
            out.push_str(&format!(" --copy-time {c}"));
        }
        if let Some(g) = args.costs.host_gbps {
            out.push_str(&format!(" --host-gbps {g}"));
        }
    }
    out
}

/// The EP degree of a plan's MoE model (`None` for a dense model or hand-set costs).
fn plan_ep(p: &Plan) -> Option<u32> {
    p.candidate.step.as_ref().map(|s| &s.0.moe).filter(|m| m.experts > 0).map(|m| m.ep.max(1))
}

/// A plan in one line: family, EP degree (MoE), microbatches, chunks, micro-batch, layout and
/// whether F and B pair over the all-to-all (`a2a-overlap`).
fn describe(p: &Plan) -> String {
    let c = &p.candidate;
    let mut out = c.family.name.to_string();
    if let Some(ep) = plan_ep(p) {
        let _ = write!(out, " · ep {ep}");
    }
    let _ = write!(out, " · M {}", c.params.microbatches);
    if let Some(v) = chunks(p) {
        let _ = write!(out, " · chunks {v}");
    }
    if let Some(b) = c.micro_batch {
        let _ = write!(out, " · micro-batch {b}");
    }
    let _ = write!(out, " · layout {}", c.layout.as_deref().unwrap_or("default"));
    if c.params.a2a_overlap {
        out.push_str(" · a2a-overlap");
    }
    out
}

/// The memory limit: --mem-limit, or with --gpu (and no --mem-limit) the GPU's HBM, said in a
/// note. Without --gpu nothing is assumed.
fn mem_limit(args: &PlanArgs) -> Result<Option<f64>> {
    if let Some(limit) = args.costs.mem_limit()? {
        return Ok(Some(limit));
    }
    let Some(key) = &args.costs.model.gpu else { return Ok(None) };
    let gpu = bubblescope::model::gpu::gpu(key)
        .ok_or_else(|| crate::args::flag_error(bubblescope::model::gpu::unknown_gpu(key)))?;
    eprintln!(
        "note: --mem-limit is {}'s memory, {} ({} GB): weights, optimizer state and activations must fit in it",
        gpu.key,
        format_bytes(gpu.hbm_bytes),
        format_number(gpu.hbm_bytes / 1e9, 0)
    );
    Ok(Some(gpu.hbm_bytes))
}

/// Says which of the plans shown cut the model's pieces in proportion (a family with more
/// stages than devices on layers that do not divide into them). Only plans without a layout
/// of their own can: `evaluate` leaves out a layout that describes other stages than the
/// family cuts.
fn note_plan_cuts(model: &bubblescope::model::Model, devices: u32, plans: &[Plan]) {
    let Ok(derived) = model.derive(devices) else { return };
    let runs = plans.iter().filter(|p| p.candidate.layout.is_none()).map(|p| (p.candidate.family.name, p.stages));
    crate::output::note_proportional_cuts(&derived, runs);
}

/// The chunks of a plan's family, when it reads the option.
fn chunks(p: &Plan) -> Option<u32> {
    let c = &p.candidate;
    c.family.with_defaults(&c.params).chunks.filter(|_| c.family.uses(Field::Chunks))
}

fn plan_json(p: &Plan) -> Value {
    let c = &p.candidate;
    let mesh = plan_mesh(p);
    json!({
        "schedule": c.family.name,
        "devices": c.params.devices,
        "tp": mesh.tp,
        "pp": mesh.pp,
        "dp": mesh.dp,
        "zero": mesh.zero,
        "microbatches": c.params.microbatches,
        "chunks": chunks(p),
        "micro_batch": c.micro_batch,
        "layout": c.layout,
        "ep": plan_ep(p),
        "a2a_overlap": c.params.a2a_overlap,
        "activation_limit": c.params.mem_limit,
        "cost": p.stats.cost,
        "bubble_rate": p.stats.bubble_rate,
        "bubble_rate_paper": p.stats.bubble_rate_paper,
        "peak_memory": p.stats.peak_memory,
        "static_memory": p.static_memory,
        "memory": p.memory,
        "samples": p.samples,
        "throughput": p.throughput,
        "tokens_per_second": p.tokens_per_second,
        "attribution": p.attribution.map(|a| json!({"communication": a.communication, "imbalance": a.imbalance, "schedule": a.schedule})),
        "step": p.step.as_ref().map(crate::step::json),
        "trade": p.trade.as_ref().map(|t| json!({
            "recompute": (0..c.params.devices).map(|d| t.trade.recompute_of(d).name()).collect::<Vec<_>>(),
            "offload": t.trade.offload.to_string(),
            "describe": describe_trade(&t.trade, c.params.devices),
            "time": t.time,
            "saved": t.saved,
        })),
    })
}

/// Static bytes per parameter of a device's share: weights, gradients and optimizer state as
/// the ZeRO stage shards them over the model's replicas (core's `step::static_bytes`; 18 at
/// ZeRO 0 in bf16), without ZeRO-3's gathered chunk.
fn bytes_per_parameter(spec: &PlanSpec) -> f64 {
    match &spec.source {
        CostSource::Model(m) => {
            bubblescope::step::static_bytes(m, spec.step.zero.unwrap_or(0), m.dp.max(1), 1.0, f64::INFINITY)
        }
        CostSource::Costs(_) => BYTES_PER_PARAMETER,
    }
}

/// `plan --json`. Without -p, `devices` is null (each plan has its own `pp`) and `meshes` says
/// which splits were searched and which left out.
fn json(spec: &PlanSpec, found: &PlanSearch, searched: usize, meshes: Option<&Meshes>) -> Value {
    let mut out = json!({
        "devices": meshes.is_none().then_some(spec.devices),
        "gpus": spec.step.gpus,
        "meshes": meshes.map(|m| json!({
            "searched": m.kept.iter().map(|k| mesh_json(k, None)).collect::<Vec<_>>(),
            "skipped": m.skipped.iter().map(|k| mesh_json(&k.mesh, Some(&k.why))).collect::<Vec<_>>(),
        })),
        "mem_limit": spec.mem_limit,
        "global_batch": spec.global_batch,
        "static_memory": match spec.static_memory {
            StaticMemory::FromModel if meshes.is_some() => json!({"bytes_per_parameter": null}),
            StaticMemory::FromModel => json!({"bytes_per_parameter": bytes_per_parameter(spec)}),
            StaticMemory::Fixed(v) => json!(v),
        },
        "searched": searched,
        "over_limit": found.over_limit,
        "invalid": found.invalid,
        "least_memory": found.least_memory,
        "plans": found.plans.iter().map(plan_json).collect::<Vec<_>>(),
    });
    // Under blocking sends only: the orders skipped as deadlocks (async output is unchanged).
    if !spec.p2p.is_async() {
        out["deadlocked"] = json!(found.deadlocked);
    }
    out
}

/// Beside the best plan, the imbalance balancing removed: the best plan on the even split
/// without vocabulary parallelism (the ends as the model puts them) and the best plan that
/// splits the vocabulary over every device, each with its rank among the plans that fit
/// (1 is the best) and its bubble split.
struct Balance {
    even: Option<(usize, Plan)>,
    vocabulary: Option<(usize, Plan)>,
}

fn balance(plans: &[Plan]) -> Balance {
    let vocabulary = |p: &Plan| p.candidate.family.group == bubblescope::FamilyGroup::Vocabulary;
    let pick = |keep: &dyn Fn(&Plan) -> bool| {
        plans.iter().position(keep).map(|i| {
            let mut p = plans[i].clone();
            attribute_plan(&mut p);
            (i + 1, p)
        })
    };
    Balance {
        even: pick(&|p: &Plan| p.candidate.layout.is_none() && !vocabulary(p)),
        vocabulary: pick(&|p: &Plan| vocabulary(p)),
    }
}

/// One plan's idle share and imbalance, as the balance lines say them.
fn idle_and_imbalance(p: &Plan, bytes: bool) -> String {
    let imbalance = match p.attribution {
        Some(a) if bytes => format!(" (imbalance {} ms)", format_number(a.imbalance / 1e3, 2)),
        Some(a) => format!(" (imbalance {})", format_number(a.imbalance, 4)),
        None => String::new(),
    };
    format!("{}% of GPU time{imbalance}", format_number(p.stats.bubble_rate * 100.0, 2))
}

/// The balance lines under the plans: said only when the best plan is not itself the even
/// split's best (something was balanced) or a vocabulary-parallel plan fits.
fn balance_lines(balance: &Balance, found: &PlanSearch, bytes: bool) -> String {
    let Some(best) = found.plans.first() else { return String::new() };
    let mut out = String::new();
    if let Some((rank, even)) = balance.even.as_ref().filter(|(rank, _)| *rank > 1) {
        let fixed = if best.candidate.family.group == bubblescope::FamilyGroup::Vocabulary {
            "the vocabulary split over every device".to_string()
        } else {
            match &best.candidate.layout {
                Some(l) => format!("layout {l}"),
                None => format!("{}'s order", best.candidate.family.name),
            }
        };
        let points = (even.stats.bubble_rate - best.stats.bubble_rate) * 100.0;
        // Plans rank by their step's rate: plan 1 may idle more than a slower one.
        let change = if points >= 0.0 {
            format!("{} points less", format_number(points, 2))
        } else {
            format!("{} points more, and still the faster step", format_number(-points, 2))
        };
        let _ = write!(
            out,
            "\nbalanced: on the even split the best plan is {} (rank {rank}), idle {}; plan 1 ({fixed}) is idle {}: {change}",
            describe(even),
            idle_and_imbalance(even, bytes),
            idle_and_imbalance(best, bytes),
        );
    }
    if let Some((rank, v)) = &balance.vocabulary {
        if out.is_empty() {
            out.push('\n');
        }
        let _ = write!(
            out,
            "\nvocabulary parallelism: the best plan that splits the vocabulary over every device is {} (rank {rank}), idle {}",
            describe(v),
            idle_and_imbalance(v, bytes)
        );
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// The balance as JSON: each reference plan's rank, family, layout, idle share and imbalance.
fn balance_json(balance: &Balance, found: &PlanSearch) -> Value {
    let one = |p: Option<&(usize, Plan)>| {
        p.map(|(rank, p)| {
            json!({
                "rank": rank,
                "schedule": p.candidate.family.name,
                "microbatches": p.candidate.params.microbatches,
                "layout": p.candidate.layout,
                "bubble_rate": p.stats.bubble_rate,
                "imbalance": p.attribution.map(|a| a.imbalance),
            })
        })
    };
    let best = found.plans.first().map(|p| (1, p.clone()));
    json!({"even": one(balance.even.as_ref()), "vocabulary": one(balance.vocabulary.as_ref()), "best": one(best.as_ref())})
}

/// The readable plans, best first.
fn table(spec: &PlanSpec, found: &PlanSearch, searched: usize, bytes: bool, meshes: Option<&Meshes>) -> String {
    let memory = |v: f64| if bytes { format_bytes(v) } else { format_number(v, 4) };
    let time = |v: f64| if bytes { format!("{} ms", format_number(v / 1e3, 2)) } else { format_number(v, 4) };
    let statics = match spec.static_memory {
        StaticMemory::FromModel => {
            format!("{} bytes per parameter of each device's share", format_number(bytes_per_parameter(spec), 2))
        }
        StaticMemory::Fixed(v) => format!("{} per device", memory(v)),
    };
    let mut out = String::new();
    let on = match (meshes, spec.step.gpus) {
        (Some(m), Some(g)) => format!("{g} GPUs ({} splits of tp · pp · dp and ZeRO searched)", m.kept.len()),
        _ => format!("{} devices", spec.devices),
    };
    let statics = match (meshes, spec.static_memory) {
        (Some(_), StaticMemory::FromModel) => "weights, gradients and optimizer state as each split shards them".into(),
        _ => statics,
    };
    let _ = writeln!(
        out,
        "best plans on {on} under {} per device (activations + static memory: {statics})",
        memory(spec.mem_limit)
    );
    let _ = writeln!(out);
    for (i, p) in found.plans.iter().enumerate() {
        let c = &p.candidate;
        match meshes {
            Some(_) => {
                let _ = writeln!(out, "{}. {} · {}", i + 1, plan_mesh(p).describe(), describe(p));
            }
            None => {
                let _ = writeln!(out, "{}. {}", i + 1, describe(p));
            }
        }
        if let Some(step) = &p.step {
            let _ = writeln!(
                out,
                "   step {} · {} tokens/s/GPU · MFU {}% · {} GPUs, dp {}, zero {}, global batch {}",
                bubblescope::units::format_micros(step.time),
                format_number(step.tokens_per_gpu_s, 1),
                format_number(step.mfu * 100.0, 1),
                step.gpus,
                step.dp_degree,
                step.zero,
                step.global_batch
            );
        }
        let speed = match (c.micro_batch, p.tokens_per_second) {
            (Some(_), Some(t)) => {
                format!("{} samples/s, {} tokens/s", format_number(p.throughput, 2), format_number(t, 0))
            }
            (Some(_), None) => format!("{} samples/s", format_number(p.throughput, 2)),
            _ => format!("{} microbatches per unit time", format_number(p.throughput, 4)),
        };
        // With replicas, these are one pipeline's numbers; the step line above is the run's.
        let replica = match p.step.as_ref().filter(|s| s.dp_degree > 1) {
            Some(_) => "one replica: ",
            None => "",
        };
        let _ = writeln!(
            out,
            "   {replica}throughput {speed} · {} per step of {} samples · bubble {}% of GPU time",
            time(p.stats.cost),
            format_number(p.samples, 0),
            format_number(p.stats.bubble_rate * 100.0, 2)
        );
        let most_static = p.static_memory.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "   memory {} (activations up to {} + static up to {})",
            memory(p.memory),
            memory(p.stats.peak_memory),
            memory(most_static)
        );
        if let Some(t) = &p.trade {
            let _ = writeln!(
                out,
                "   trades {}: {}, saves {}",
                describe_trade(&t.trade, c.params.devices),
                bubblescope::plan::per_step(t.time, time),
                memory(t.saved)
            );
        }
        if let Some(a) = p.attribution {
            let _ = writeln!(
                out,
                "   bubble = communication {} + imbalance {} + schedule {}",
                time(a.communication),
                time(a.imbalance),
                time(a.schedule)
            );
        }
    }
    if let Some(m) = meshes.filter(|m| !m.skipped.is_empty()) {
        let _ = writeln!(out, "\nsplits left out: {}", m.skipped.len());
        for k in m.skipped.iter().take(5) {
            let _ = writeln!(out, "  {}: {}", k.mesh.describe(), k.why);
        }
        if m.skipped.len() > 5 {
            let _ = writeln!(out, "  … and {} more (--json lists them all)", m.skipped.len() - 5);
        }
    }
    let _ = writeln!(
        out,
        "\nsearched {searched} candidates: {} fit, {} above the limit, {} invalid{}",
        searched - found.over_limit - found.invalid - found.deadlocked,
        found.over_limit,
        found.invalid,
        deadlocked(found)
    );
    out
}

/// The candidates skipped because their order deadlocks under `--p2p blocking`, as the count
/// lines end (empty when none).
fn deadlocked(found: &PlanSearch) -> String {
    match found.deadlocked {
        0 => String::new(),
        n => format!(", {n} deadlocked under --p2p blocking (their sends never meet)"),
    }
}

/// With --gpus, the flags that change none of the plans shown: core's rule for each plan's
/// split, said when it holds for them all (`--gpus 1 --zero 1` runs dp 1, zero 0).
fn note_shown_without_effect(args: &PlanArgs, costs: &crate::args::CostArgs, plans: &[Plan]) {
    let step = bubblescope::step::StepSpec { zero: args.zero, gpus: None, global_batch: None };
    let mut shared: Option<Vec<String>> = None;
    for p in plans {
        let Some(model) = p.candidate.step.as_ref().map(|s| &s.0) else { return };
        let mesh = plan_mesh(p);
        let notes = bubblescope::step::without_effect(&costs.model.spec(), model, &step, mesh.pp, mesh.dp);
        shared = Some(match shared {
            None => notes,
            Some(before) => before.into_iter().filter(|n| notes.contains(n)).collect(),
        });
    }
    for note in shared.unwrap_or_default() {
        eprintln!("note: in the plans shown, --{note}");
    }
}

/// What a device holds besides activations: `--static-memory`, or from the model.
fn static_memory(args: &PlanArgs, with_model: bool) -> Result<StaticMemory> {
    Ok(match args.static_memory.as_deref().map(str::trim) {
        Some("auto") => StaticMemory::FromModel,
        Some(text) if with_model => StaticMemory::Fixed(
            parse_memory(text, Field::MemLimit, "static-memory").map_err(|e| anyhow::anyhow!("{e}"))?,
        ),
        Some(text) => StaticMemory::Fixed(text.parse().map_err(|_| {
            crate::output::user_error(
                &format!(
                    "--static-memory must be a number in mem-f's unit or auto, found `{}`",
                    formats::sanitize(text)
                ),
                &["sizes with units (20GiB) and auto need costs from a model (--model or --layers …)"],
            )
        })?),
        None if with_model => StaticMemory::FromModel,
        None => StaticMemory::Fixed(0.0),
    })
}

/// What a search on one pipeline of `devices` leaves out, said before it runs: microbatch
/// counts above the cap, and devices without a layer.
fn note_one_pipeline(args: &PlanArgs, model: Option<&Model>, devices: u32, keep_micro_batch: bool) {
    // Each replica runs its share of the global batch.
    let replicas = model.map_or(1, |m| m.dp.max(1));
    if let (Some(g), false) = (args.global_batch.map(|g| g / replicas), keep_micro_batch) {
        let tried = bubblescope::plan::microbatch_candidates(devices, Some(g));
        let cap = devices.saturating_mul(MAX_PLAN_MICROBATCHES_PER_DEVICE);
        if let Some(&most) = tried.last().filter(|_| g > cap) {
            eprintln!(
                "note: microbatch counts above {cap} ({MAX_PLAN_MICROBATCHES_PER_DEVICE} per device) are not tried, so micro-batches are {} samples or more; --micro-batch fixes one",
                g / most
            );
        }
    }
    if let Some(m) = model.filter(|m| m.layers < devices) {
        let bare = devices - m.layers;
        eprintln!(
            "note: {} layers on {devices} devices: with one stage per device, {bare} device{} hold{} no layer",
            m.layers,
            if bare == 1 { "" } else { "s" },
            if bare == 1 { "s" } else { "" }
        );
    }
}

/// `--gpus N` without -p: one plan search per split of the GPUs that the model takes and
/// whose weights leave room, each with the model at its TP and replicas.
fn mesh_searches(
    args: &PlanArgs,
    costs: &crate::args::CostArgs,
    model: Option<&Model>,
    base: PlanSpec,
) -> Result<(Vec<PlanSpec>, Meshes)> {
    let (Some(model), Some(gpus)) = (model, args.gpus) else {
        return Err(crate::output::user_error(
            "--gpus without -p searches tensor × pipeline × data splits, and needs costs from a model",
            &["give --model (or --layers …), or give -p with hand-set costs"],
        ));
    };
    let pins = MeshPins { tp: costs.model.tp, pp: None, dp: costs.model.dp, zero: args.zero };
    let found = bubblescope::plan::meshes(model, gpus, pins, args.global_batch, base.mem_limit)
        .map_err(crate::args::flag_error)?;
    if found.kept.is_empty() {
        let reasons: Vec<String> =
            found.skipped.iter().take(3).map(|k| format!("{}: {}", k.mesh.describe(), k.why)).collect();
        // The limit is named only when it is why some split is left out.
        let (under, hint) = match found.skipped.iter().any(|k| k.over_limit) {
            true => (" under the limit", "raise --mem-limit, give more --gpus, or leave --tp, --dp or --zero out to search them"),
            false => ("", "change what the reasons name: another --gpus, --layout or --global-batch, or leave --tp, --dp or --zero out to search them"),
        };
        return Err(crate::output::user_error(
            &format!(
                "no split of {gpus} GPUs can run this model{under} ({} left out; {}{})",
                found.skipped.len(),
                reasons.join("; "),
                if found.skipped.len() > 3 { "; …" } else { "" }
            ),
            &[hint],
        ));
    }
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    eprintln!(
        "note: searching {} of {} (tp · pp · dp, ZeRO stage); {} left out",
        plural(found.kept.len(), "split", "splits"),
        plural(gpus as usize, "GPU", "GPUs"),
        found.skipped.len()
    );
    let mut specs = Vec::with_capacity(found.kept.len());
    for mesh in &found.kept {
        let m = mesh.apply(model);
        // On one stage every family runs the same passes: 1F1B stands for them all, and
        // interleaved 1F1B for the model cut into chunks (under ZeRO-3, one gather each).
        let families = match mesh.pp {
            1 => ["1f1b", "interleaved-1f1b"].into_iter().filter_map(bubblescope::family).collect(),
            _ => base.families.clone(),
        };
        specs.push(PlanSpec {
            devices: mesh.pp,
            families,
            source: CostSource::Model(m.clone()),
            trade: args.costs.plan_trade(Some(&m), mesh.pp)?,
            step: bubblescope::step::StepSpec { zero: Some(mesh.zero), gpus: Some(gpus), global_batch: None },
            ..base.clone()
        });
    }
    Ok((specs, found))
}

/// The split a search runs on.
fn mesh_of(spec: &PlanSpec) -> Mesh {
    let (tp, dp) = match &spec.source {
        CostSource::Model(m) => (m.tp.max(1), m.dp.max(1)),
        CostSource::Costs(_) => (1, 1),
    };
    Mesh { tp, pp: spec.devices, dp, zero: spec.step.zero.unwrap_or(0) }
}

/// The split a plan ran on: its model's TP and replicas, its devices and ZeRO stage.
fn plan_mesh(p: &Plan) -> Mesh {
    let c = &p.candidate;
    let (tp, dp, zero) = match &c.step {
        Some(s) => (s.0.tp.max(1), s.0.dp.max(1), s.1.zero.unwrap_or(0)),
        None => (1, 1, 0),
    };
    Mesh { tp, pp: c.params.devices, dp, zero }
}

fn mesh_json(m: &Mesh, why: Option<&String>) -> Value {
    json!({"tp": m.tp, "pp": m.pp, "dp": m.dp, "zero": m.zero, "why": why})
}
