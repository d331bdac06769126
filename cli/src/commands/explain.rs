//! `bubblescope explain`: a family's closed forms for the bubble and the peak activation
//! memory, their terms and sources, the values they give at the settings, the simulated
//! values, and the assumptions each checked. Reads the formulas from core
//! (`families::formula`); holds none itself.

use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::{Context as _, Result};
use bubblescope::families::formula::{Assumption, Explanation, Formula, Needed};
use bubblescope::stats::Stats;
use bubblescope::units::Units;
use clap::Args;
use serde_json::{json, Value};

use crate::args::{self, CostArgs, FamilyArgs};
use crate::subject::{generated, required_schedule, Subject};

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub family: FamilyArgs,
    #[command(flatten)]
    pub costs: CostArgs,
    /// Also derive the schedule step by step: the passes each step places, with a caption.
    #[arg(long)]
    pub derive: bool,
    /// Print one JSON object instead of text.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// The examples `explain --help` ends with.
pub const EXPLAIN_EXAMPLES: &str = "\
Examples:
  bubblescope explain -s 1f1b -p 4 -m 8
  bubblescope explain -s zb-h1 -p 4 -m 8 --comm 0.1 --json
  bubblescope explain -s zb-v -p 4 -m 8 --derive";

pub fn run(args: &ExplainArgs) -> Result<()> {
    let params = args::params(&args.family, &args.costs)?;
    let units = args.costs.units();
    let subject = generated(required_schedule(&args.family, false)?, params, units)?;
    // --copy-time or --host-gbps with nothing copied is refused, as simulate refuses it.
    args.costs.check_copy_rate(&subject.analysis.schedule)?;
    // The model flags that change nothing here are said, as simulate says them.
    if args.costs.model.given() {
        let model = args.costs.model.model(subject.params.devices)?;
        let dp = model.dp.max(1);
        crate::step::note_without_effect(&args.costs, &model, &Default::default(), subject.params.devices, dp);
    }
    // As simulate: a family that reads the limit plans to it (its assumptions say when it
    // binds); for the others it is a check of the simulated peak.
    crate::output::warn_over_limit(&subject.analysis, subject.params.mem_limit, units);
    let explanation = subject.family.and_then(|f| f.explanation(&subject.params));
    if explanation.is_none() && args.json {
        eprintln!("note: {} has no closed form here; only the simulated values are given", subject.name);
    }
    let steps = args.derive.then(|| bubblescope::derive::derive(&subject.analysis, units));
    let out = match (args.json, &steps) {
        (true, steps) => {
            let mut value = json(explanation.as_ref(), &subject.analysis.stats);
            if let Some(steps) = steps {
                value["derive"] = steps
                    .iter()
                    .map(|s| json!({ "title": s.title, "caption": s.caption, "passes": s.passes.len() }))
                    .collect();
            }
            crate::output::json_text(&value)
        }
        (false, steps) => {
            let mut out = text(&subject, explanation.as_ref(), units);
            if let Some(steps) = steps {
                out.push_str(&derive_text(steps));
            }
            out
        }
    };
    std::io::stdout().write_all(out.as_bytes()).context("writing to standard output")?;
    Ok(())
}

/// The simulated bubble a formula of `e` predicts (`cost − ideal` without one), without float
/// noise either way ([`bubblescope::BubbleQuantity::of`]).
fn simulated_bubble(e: Option<&Explanation>, stats: &Stats) -> f64 {
    e.map_or(bubblescope::BubbleQuantity::CostMinusIdeal, |e| e.quantity).of(stats)
}

/// `{bubble, memory, assumptions, assumptions_hold}`.
fn json(e: Option<&Explanation>, stats: &Stats) -> Value {
    let part = |f: Option<&Formula>, simulated: f64| match (e, f) {
        (Some(e), Some(f)) => json!({
            "formula": f.text(),
            "value": f.value(&e.vars),
            "simulated": simulated,
            "source": f.source,
            "terms": f.terms.iter().zip(f.term_values(&e.vars)).map(|(t, v)| json!({
                "name": t.name,
                "formula": t.expr.text(),
                "value": v,
            })).collect::<Vec<_>>(),
        }),
        _ => json!({ "formula": null, "value": null, "simulated": simulated }),
    };
    let mut bubble = part(e.and_then(|e| e.bubble.as_ref()), simulated_bubble(e, stats));
    bubble["quantity"] = json!(e.map_or("cost − ideal", |e| e.quantity.label()));
    let assumptions: Vec<Value> = e.map_or(&[][..], |e| &e.assumptions[..]).iter().map(assumption_json).collect();
    json!({
        "bubble": bubble,
        "memory": part(e.and_then(|e| e.memory.as_ref()), stats.peak_memory),
        "assumptions": assumptions,
        "assumptions_hold": e.is_none_or(Explanation::all_hold),
    })
}

/// One assumption: its text, whether it holds, and which formula needs it.
fn assumption_json(a: &Assumption) -> Value {
    json!({ "text": a.text, "holds": a.holds, "needed_by": needed_name(a.needed) })
}

fn needed_name(n: Needed) -> &'static str {
    match n {
        Needed::Bubble => "bubble",
        Needed::Memory => "memory",
        Needed::Both => "both",
    }
}

/// The text report: each formula with its terms, value, simulated value and source, then the
/// assumptions.
fn text(subject: &Subject, e: Option<&Explanation>, units: Units) -> String {
    let stats = &subject.analysis.stats;
    let mut out = format!("{}\n\n", subject.label);
    let quantity = e.map_or("cost − ideal", |e| e.quantity.label());
    let bubble = Shown {
        formula: e.and_then(|e| e.bubble.as_ref()),
        simulated: simulated_bubble(e, stats),
        show: Units::time_detail,
    };
    bubble.write(&mut out, &format!("bubble ({quantity})"), e, units);
    let memory =
        Shown { formula: e.and_then(|e| e.memory.as_ref()), simulated: stats.peak_memory, show: Units::memory_detail };
    memory.write(&mut out, "peak activation memory", e, units);
    match e {
        Some(e) => {
            let verdict = if e.all_hold() { "all hold" } else { "some break: the formulas need not match" };
            let _ = writeln!(out, "assumptions ({verdict})");
            for a in &e.assumptions {
                let mark = if a.holds { "holds " } else { "BREAKS" };
                let _ = writeln!(out, "  {mark}  {} (for {})", a.text, needed_text(a.needed));
            }
        }
        None => {
            let _ = writeln!(out, "{} has no closed form at these settings: only the simulated values", subject.name);
        }
    }
    out
}

/// One formula of the text report, with the simulated value it is compared with and how its
/// numbers print.
struct Shown<'a> {
    formula: Option<&'a Formula>,
    simulated: f64,
    show: fn(Units, f64) -> String,
}

impl Shown<'_> {
    /// Its section under `title`: formula, terms, value, simulated value and source.
    fn write(&self, out: &mut String, title: &str, e: Option<&Explanation>, units: Units) {
        let show = |v: f64| (self.show)(units, v);
        let _ = writeln!(out, "{title}");
        match (e, self.formula) {
            (Some(e), Some(f)) => {
                let value = f.value(&e.vars);
                let _ = writeln!(out, "  formula    {}", f.text());
                for (i, (term, v)) in f.terms.iter().zip(f.term_values(&e.vars)).enumerate() {
                    let label = if i == 0 { "terms" } else { "" };
                    let sign = if term.negative { "− " } else { "" };
                    let _ =
                        writeln!(out, "  {label:<10} {sign}{} = {}: {}", term.expr.text(), show(v.abs()), term.name);
                }
                let at = f.peak_device(&e.vars).map_or(String::new(), |d| format!(" (device {d})"));
                let _ = writeln!(out, "  value      {}{at}", show(value));
                let _ =
                    writeln!(out, "  simulated  {}{}", show(self.simulated), difference(value, self.simulated, &show));
                let _ = writeln!(out, "  source     {}", f.source);
            }
            _ => {
                let _ = writeln!(out, "  formula    none for this family and settings");
                let _ = writeln!(out, "  simulated  {}", show(self.simulated));
            }
        }
        let _ = writeln!(out);
    }
}

/// Which formula needs an assumption, in words.
fn needed_text(n: Needed) -> &'static str {
    match n {
        Needed::Bubble => "the bubble",
        Needed::Memory => "the memory",
        Needed::Both => "both formulas",
    }
}

/// ` (+X against the formula)` when the simulated value differs from the formula's (beyond rounding).
/// A difference below the shown precision prints in its own digits (`−1e-9`, never `−0`).
fn difference(value: f64, simulated: f64, show: &dyn Fn(f64) -> String) -> String {
    let off = bubblescope::units::difference(simulated, value);
    if off.abs() <= 1e-9 * value.abs().max(simulated.abs()).max(1.0) {
        return String::new();
    }
    let sign = if off > 0.0 { "+" } else { "−" };
    let mut shown = show(off.abs());
    if shown.chars().filter(char::is_ascii_digit).all(|c| c == '0') {
        shown = bubblescope::units::short_number(off.abs());
    }
    format!(" ({sign}{shown} against the formula)")
}

/// The derivation as text: each step's title, the passes it places and its caption.
fn derive_text(steps: &[bubblescope::derive::DeriveStep]) -> String {
    let mut out = String::from("\nderived step by step\n");
    for (i, s) in steps.iter().enumerate() {
        let _ = writeln!(out, "  {}. {} ({} passes)", i + 1, s.title, s.passes.len());
        let _ = writeln!(out, "     {}", s.caption);
    }
    out
}
