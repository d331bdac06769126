//! What `simulate` and `list` print: a JSON object or a short readable table.

use std::fmt::Write as _;

use bubblescope::bounds::Standing;
use bubblescope::optimal::{Budget, Optimum};
use bubblescope::units::short_number;
use bubblescope::units::{format_micros, format_number, Units};
use bubblescope::{Analysis, Family, ScheduleParams, StageCosts, FAMILIES};
use serde_json::{json, Value};

/// The `simulate --json` object. Numbers are exact; the output drops only their float noise
/// ([`crate::output::json_text`]). `name` is the family, or the
/// path of the file the schedule was read from.
pub fn json(name: &str, family: Option<&Family>, params: &ScheduleParams, a: &Analysis) -> Value {
    let s = &a.stats;
    let limit = params.mem_limit;
    let per_device: Vec<Value> = s
        .per_device
        .iter()
        .map(|d| {
            json!({
                "device": d.device,
                "start": d.start,
                "end": d.end,
                "span": d.span,
                "busy": d.busy,
                "idle": d.idle,
                "bubble_rate": d.bubble_rate,
                "idle_share": s.idle_share(d.device as usize),
                "peak_memory": d.peak_memory,
                "work": d.work,
                "over_limit": d.over_limit(limit),
            })
        })
        .collect();
    let prediction = family.and_then(|f| f.prediction(params)).map(|p| {
        json!({
            "bubble": p.bubble,
            "bubble_formula": p.bubble_formula,
            "bubble_quantity": p.bubble_quantity.label(),
            "simulated_bubble": p.bubble_quantity.of(s),
            "peak_memory": p.peak_memory,
            "memory_formula": p.memory_formula,
        })
    });
    let c = &params.costs;
    let table = StageCosts::for_schedule(c, &a.schedule);
    let per_stage: Vec<Value> = (0..a.schedule.placement.stages())
        .map(|g| {
            let i = g as usize;
            json!({
                "stage": g,
                "device": a.schedule.placement.device_of(g),
                "f": table.f[i], "b": table.b[i], "w": table.w[i],
                "mem_f": table.mem_f[i], "mem_w": table.mem_w[i],
            })
        })
        .collect();
    let attribution = bubblescope::attribution::attribute(a, c).ok().map(|at| {
        let parts = |p: &bubblescope::attribution::Parts| {
            json!({"communication": p.communication, "imbalance": p.imbalance, "schedule": p.schedule})
        };
        let mut v = parts(&at.overall);
        v["per_device"] = Value::Array(at.per_device.iter().map(parts).collect());
        v["memory"] = json!(bubblescope::findings::memory_part(family, params, s.cost));
        v
    });
    let bound = bubblescope::findings::bound(family, params, a);
    let (lower_bound, bound_memory) = (bound.lower, bound.limit);
    let standing = match bound.standing {
        Standing::Meets => "meets",
        Standing::Within(_) => "within",
        Standing::OverLimit { .. } => "over_limit",
        Standing::NoneFits { .. } => "none_fits",
    };
    let prediction_note = (!c.is_uniform()).then_some("closed forms assume equal stages: none applies to these costs");
    json!({
        "schedule": name,
        "devices": a.schedule.devices(),
        "microbatches": a.schedule.microbatches,
        "chunks": a.schedule.placement.chunks_per_device(),
        "placement": a.schedule.placement.kind().name(),
        "stages": a.schedule.placement.stages(),
        "passes": a.schedule.pass_count(),
        "pairs": a.schedule.orders.iter().flatten().filter(|op| op.is_pair()).count(),
        "costs": {
            "f": c.f, "b": c.b, "w": c.w, "comm": c.comm, "overlap": c.overlap,
            "mem_f": c.mem_f, "mem_w": c.mem_w(),
        },
        "mem_limit": limit,
        "cost": s.cost,
        "makespan": s.makespan,
        "ideal": s.ideal,
        "bubble_rate": s.bubble_rate,
        "bubble_over_ideal": s.bubble_over_ideal,
        "idle_over_makespan": s.idle_over_makespan,
        "busiest_work": s.busiest_work,
        "bubble_rate_paper": s.bubble_rate_paper,
        "peak_memory": s.peak_memory,
        "per_device": per_device,
        "per_stage": per_stage,
        "attribution": attribution,
        "lower_bound": lower_bound.value,
        "lower_bound_closed_form": lower_bound.closed_form.unwrap_or(lower_bound.value),
        "lower_bound_memory": bound_memory,
        "lower_bound_standing": standing,
        "least_memory": lower_bound.least_memory,
        "uniform_stages": c.is_uniform(),
        "prediction": prediction,
        "prediction_note": prediction_note,
        "trade": bubblescope::passes::report(&a.schedule, c).map(|t| json!({
            "time": t.time,
            "saved": t.saved,
            "stall": t.stall,
            "recompute": t.recompute,
            "offloaded": t.offloaded,
            "copying": t.copying,
        })),
    })
}

/// `simulate --optimal`: the best order of the same passes, as `optimal` and `gap` in JSON.
pub fn add_optimal(value: &mut Value, cost: f64, optimum: Option<&Optimum>) {
    value["optimal"] = match optimum {
        Some(o) => {
            json!({"cost": o.cost, "proven": o.proven, "nodes": o.nodes, "bound": o.bound, "searched": o.searched})
        }
        None => Value::Null,
    };
    value["gap"] = json!(optimum.map(|o| gap(cost, o.cost)));
}

/// `simulate --optimal` as a text line; `limit` is the problem's memory limit as printed (the
/// one given, the family's, or else the schedule's own peak), `passes` its size and `fits`
/// whether this schedule keeps the limit (a run over it is no order of the problem, and its
/// cost is not compared). `time` prints a cost (µs for a model).
pub fn optimal_line(
    cost: f64,
    optimum: Option<&Optimum>,
    limit: &str,
    passes: usize,
    fits: bool,
    time: &dyn Fn(f64) -> String,
) -> String {
    let within = format!("within memory {limit}");
    let Some(o) = optimum else {
        return format!("{:<12} {:<12} no order of these passes {within} was found\n", "optimal", "—");
    };
    let pct = |v: f64| format_number(100.0 * v, 1);
    let over = format!("this schedule peaks over memory {limit}, so it is no order of this problem");
    let what = if o.proven {
        let versus = if fits { format!("this schedule is {}% above it", pct(gap(cost, o.cost))) } else { over };
        format!("proven: no order of these passes {within} is cheaper ({} search nodes); {versus}", o.nodes)
    } else {
        let searched = if o.searched {
            format!("best order found, not proven ({} search nodes)", o.nodes)
        } else {
            format!(
                "not searched: {passes} passes, more than the {} the search takes; the best order known",
                Budget::default().max_ops
            )
        };
        // A longer search may prove it or narrow the interval: say how to ask for one.
        let longer = if o.searched {
            format!(" (--optimal-nodes {} searches longer)", o.nodes.max(1000).saturating_mul(8))
        } else {
            String::new()
        };
        let versus = if fits {
            format!(
                "this schedule is {}% above the best order and at most {}% above the optimum",
                pct(gap(cost, o.cost)),
                pct(gap(cost, o.bound))
            )
        } else {
            over
        };
        format!("{searched}: every order {within} costs at least {}; {versus}{longer}", time(o.bound))
    };
    format!("{:<12} {:<12} {what}\n", "optimal", time(o.cost))
}

/// How far `cost` is above the optimum, as a fraction.
fn gap(cost: f64, optimum: f64) -> f64 {
    if optimum > 0.0 {
        cost / optimum - 1.0
    } else {
        0.0
    }
}

/// The readable `simulate` output, headed by `title`.
pub fn table(
    title: &str,
    family: Option<&Family>,
    params: &ScheduleParams,
    a: &Analysis,
    derived: Option<&bubblescope::model::Derived>,
) -> String {
    let s = &a.stats;
    let c = &params.costs;
    // Times at the run's scale, memory at its peak's: tiny costs print their digits, never 0.
    let n = |v: f64| bubblescope::units::format_at_scale(v, s.cost);
    let nm = |v: f64| bubblescope::units::format_at_scale(v, s.peak_memory);
    // A cost too small for 4 decimals prints in exponent form, never as 0.
    let cn = |v: f64| if v != 0.0 && v.abs() < 1e-4 { short_number(v) } else { format_number(v, 4) };
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    // Per-device shares when they differ (`F 1,1,1,3`), in µs and bytes for a model.
    let units = if derived.is_some() { Units::Model } else { params.units };
    let devices = params.devices as usize;
    let share = |i: usize, scalar: f64| -> String {
        let show = |v: f64| match (units, i >= 3) {
            (Units::Model | Units::Measured, false) => format_micros(v),
            (Units::Model, true) => bubblescope::units::format_bytes(v),
            (Units::Cost, _) | (Units::Measured, true) => cn(v),
        };
        let values: Vec<f64> = match &c.profile {
            Some(p) if !p.is_uniform() => (0..devices).map(|k| p.share(k, devices)[i]).collect(),
            _ => vec![scalar],
        };
        if values.windows(2).all(|w| w[0] == w[1]) {
            show(values[0])
        } else {
            values.into_iter().map(show).collect::<Vec<_>>().join(",")
        }
    };
    let _ = writeln!(
        out,
        "costs: F {} · B {} · W {} · comm {}{} · mem-f {} · mem-w {}",
        share(0, c.f),
        share(1, c.b),
        share(2, c.w),
        if units.micros() { format_micros(c.comm) } else { cn(c.comm) },
        c.overlap.map(|o| format!(" · F&B {}", cn(o))).unwrap_or_default(),
        share(3, c.mem_f),
        share(4, c.mem_w())
    );
    if let Some(v) = c.vocab {
        // The vocabulary shards' passes (one per device) and a barrier.
        let time = |t: f64| if units.micros() { format_micros(t) } else { cn(t) };
        let input = if v.input_f > 0.0 || v.input_b > 0.0 {
            format!(" · IF {} · IB {}", time(v.input_f), time(v.input_b))
        } else {
            String::new()
        };
        let _ =
            writeln!(out, "vocabulary shard: S {} · T {}{input} · barrier {}", time(v.s), time(v.t), time(v.reduce));
    }
    let _ = writeln!(out);
    // The busiest device's work only when it is not the mean's (unequal stages, or pairs).
    let busiest = (s.busiest_work != s.ideal).then_some((
        "busiest",
        s.busiest_work,
        "busiest device's work: no order of these passes costs less",
    ));
    let rows: Vec<(&str, f64, &str)> = [
        Some(("cost", s.cost, "longest device span")),
        Some(("makespan", s.makespan, "first start to last end")),
        Some(("ideal", s.ideal, "mean device's work (M·(F+B+W) with equal stages; F&B pairs at their overlap time)")),
        busiest,
        Some(("bubble rate", s.bubble_rate, "(cost − ideal) / cost: the share of GPU time idle")),
        Some((
            "",
            s.bubble_rate_paper,
            "(cost − busiest work) / cost: the Zero Bubble papers' (M·(F+B+W) with equal stages)",
        )),
        Some(("", s.bubble_over_ideal, "(cost − ideal) / ideal")),
        Some(("", s.idle_over_makespan, "idle / (devices × makespan)")),
        Some(("peak memory", s.peak_memory, "unit of mem-f, worst device")),
    ]
    .into_iter()
    .flatten()
    .collect();
    for (label, value, note) in rows {
        // From a model: times in µs, memory in bytes, each also as people read it.
        let note = match (derived, label) {
            (Some(_), "peak memory") => format!("bytes ({}), worst device", bubblescope::units::format_bytes(value)),
            (Some(_), "cost" | "makespan" | "ideal" | "busiest") => {
                format!("µs ({}): {note}", bubblescope::units::format_micros(value))
            }
            _ => note.to_string(),
        };
        let shown = match label {
            "peak memory" => nm(value),
            "bubble rate" | "" => format_number(value, 4),
            _ => n(value),
        };
        let _ = writeln!(out, "{label:<12} {shown:<12} {note}");
    }
    // A measured run re-simulates at its own times; a planned one needs only the overall part.
    let overall = if a.times.is_some() {
        bubblescope::attribution::attribute(a, c).map(|at| at.overall)
    } else {
        bubblescope::attribution::overall(&a.schedule, c, s)
    };
    if let Ok(p) = overall {
        let _ = writeln!(
            out,
            "{:<12} {:<12} cost − ideal = communication {} + imbalance {} + schedule {}",
            "bubble",
            n(p.total()),
            n(p.communication),
            n(p.imbalance),
            n(p.schedule)
        );
    }
    if let Some(t) = bubblescope::passes::report(&a.schedule, c) {
        let size = |v: f64| if derived.is_some() { bubblescope::units::format_bytes(v) } else { nm(v) };
        let most = t.recompute.iter().copied().fold(0.0, f64::max);
        let offloaded: usize = t.offloaded.iter().sum();
        let _ = writeln!(
            out,
            "{:<12} {:<12} step time recompute and offload add, and they save {} of peak memory (against the same orders without them): R passes {} on the busiest device, {offloaded} activations offloaded, copies stall {}",
            "trade",
            n(t.time),
            size(t.saved),
            n(most),
            n(t.stall)
        );
    }
    if let Some(m) = bubblescope::findings::memory_part(family, params, s.cost) {
        let _ = writeln!(
            out,
            "{:<12} {:<12} over the same family with no memory limit (compares two schedules; not in cost − ideal)",
            "memory",
            n(m)
        );
    }
    let bound = bubblescope::findings::bound(family, params, a);
    let lb = bound.lower;
    let closed =
        format!("device {}'s work {} + forced fill {} before, {} after", lb.device, n(lb.work), n(lb.head), n(lb.tail));
    let why = match lb.closed_form {
        None => format!("{closed} (any order, same memory)"),
        Some(c) => format!(
            "the device relaxation — each device, and each pair of devices, sequenced alone with the rest of the pipeline as time lags and memory exact (any order, same memory); closed form {}: {closed}",
            n(c)
        ),
    };
    let mem = |v: f64| if derived.is_some() { bubblescope::units::format_bytes(v) } else { nm(v) };
    let (value, standing) = match bound.standing {
        Standing::Meets => (n(lb.value), format!("met: no order is cheaper: {why}")),
        Standing::Within(excess) => (n(lb.value), format!("within {}% of it: {why}", format_number(100.0 * excess, 1))),
        Standing::OverLimit { peak, limit } => (
            n(lb.value),
            format!("for orders within memory {}; this one peaks at {}, over it: {why}", mem(limit), mem(peak)),
        ),
        Standing::NoneFits { least, limit } => (
            "—".to_string(),
            format!(
                "none: no order fits memory {}: an op needs {} as it starts, with what its microbatch holds on its device then (raise --mem-limit to at least {})",
                mem(limit),
                mem(least),
                mem(least)
            ),
        ),
    };
    let _ = writeln!(out, "{:<12} {value:<12} {standing}", "lower bound");
    if !c.is_uniform() {
        let _ = writeln!(out, "{:<12} {:<12} does not apply: stages cost different amounts", "closed form", "—");
    }
    if let Some(b) = s.bottleneck() {
        let holdings = derived.map(|d| d.holdings(&a.schedule.placement));
        let _ = writeln!(out, "bottleneck   {}", bubblescope::model::verdict(&b, holdings.as_deref()));
    }
    if let Some(p) = family.and_then(|f| f.prediction(params)) {
        if let Some(b) = p.bubble {
            let q = p.bubble_quantity;
            let _ = writeln!(
                out,
                "{:<12} {:<12} bubble {} (simulated {}: {})",
                "closed form",
                n(b),
                p.bubble_formula,
                q.label(),
                n(q.of(s))
            );
        }
    }
    let _ = writeln!(out);
    // Each column as wide as its widest cell: a run in µs of a model (2146450.5546) pushed the
    // fixed widths out of line with the header.
    let header = ["device", "start", "end", "work", "busy", "idle", "bubble", "idle share", "peak mem"];
    let rows: Vec<(Vec<String>, &str)> = s
        .per_device
        .iter()
        .map(|d| {
            let flag = if d.over_limit(params.mem_limit) { "  over limit" } else { "" };
            let cells = vec![
                d.device.to_string(),
                n(d.start),
                n(d.end),
                n(d.work),
                n(d.busy),
                n(d.idle),
                format_number(d.bubble_rate, 4),
                format_number(s.idle_share(d.device as usize), 4),
                nm(d.peak_memory),
            ];
            (cells, flag)
        })
        .collect();
    let least = [6, 10, 10, 10, 10, 10, 8, 10, 8];
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|(c, _)| c[i].chars().count()).chain([least[i]]).max().unwrap_or(least[i]))
        .collect();
    let line = |cells: &[&str]| -> String {
        cells.iter().zip(&widths).map(|(c, w)| format!("{c:>w$}")).collect::<Vec<_>>().join("  ")
    };
    let _ = writeln!(out, "{}", line(&header));
    for (cells, flag) in &rows {
        let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
        let _ = writeln!(out, "{}{flag}", line(&cells));
    }
    let _ = writeln!(
        out,
        "(idle: between the device's first and last pass; bubble: idle / its span; idle share: (cost − work) / cost, whose mean over devices is the bubble rate)"
    );
    out
}

/// `list` as text.
pub fn families_text(families: &[Family]) -> String {
    let mut out = String::new();
    let mut group = None;
    for f in families {
        if group != Some(f.group) {
            if group.is_some() {
                let _ = writeln!(out);
            }
            let _ = writeln!(out, "{}", f.group.title());
            group = Some(f.group);
        }
        let _ = writeln!(out, "  {:<18} {}", f.name, f.summary);
        let options: Vec<String> = f.options.iter().map(|o| format!("--{}", o.name())).collect();
        if !options.is_empty() {
            let _ = writeln!(out, "  {:<18} options: {}", "", options.join(", "));
        }
        let _ = writeln!(out, "  {:<18} constraints: {}", "", f.constraints);
        let _ = writeln!(out, "  {:<18} {} <{}>", "", f.reference, f.url);
    }
    out
}

/// `list --json`.
pub fn families_json() -> Value {
    Value::Array(
        FAMILIES
            .iter()
            .map(|f| {
                json!({
                    "name": f.name,
                    "title": f.title,
                    "group": f.group.title(),
                    "summary": f.summary,
                    "options": f.options.iter().map(|o| o.name()).collect::<Vec<_>>(),
                    "constraints": f.constraints,
                    "reference": f.reference,
                    "url": f.url,
                })
            })
            .collect(),
    )
}
