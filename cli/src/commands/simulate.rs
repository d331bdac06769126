//! `bubblescope simulate`: one schedule, generated or read, simulated; its cost, bubble and
//! memory as a table or JSON, optionally the best order of its passes (`--optimal`) and the
//! schedule written to a file (`--export`).

use std::io::Write as _;

use anyhow::{Context as _, Result};
use clap::{ArgMatches, Args};

use crate::args::{self, search_nodes, InputArgs};
use crate::export;
use crate::output::{is_std, note_proportional_cuts, refuse_overwrite, warn_over_limit};
use crate::report;
use crate::subject::{from_file, generated, reject_family_flags, reject_file_flags, required_schedule, Subject};

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Print one JSON object instead of a table.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Also search for the best order of the same passes.
    ///
    /// Also search for the best order of the same passes under the same memory limit (exact
    /// for small sizes, a bounded search beyond): adds `optimal` and `gap`.
    #[arg(long, help_heading = "Analysis")]
    pub optimal: bool,
    #[command(flatten)]
    pub step: crate::args::StepArgs,
    #[command(flatten)]
    pub export: crate::export::ExportArgs,
    /// Search nodes `--optimal` may spend (implies `--optimal`), plus a quarter more to prove
    /// a bound when the search does not finish. Without it the search stops after about a
    /// second natively whatever the family (a budget of work: about 330,000 nodes at P = 4,
    /// M = 8 with one chunk, 70,000 with two). A larger budget proves more problems optimal
    /// and narrows the interval of those it does not.
    #[arg(long, value_name = "N", value_parser = search_nodes, help_heading = "Analysis", hide_short_help = true)]
    pub optimal_nodes: Option<u64>,
}

/// What `simulate -h` ends with: the options it leaves out, by name.
pub const SIMULATE_MORE: &str = "\
More options (--group, --waves, --seq-splits, --overlap, --costs-from, --mem-w, the model's
--layers … --tp, the GPU's --gpus-per-node … --calibrate, --from-format, --dialect,
--merge-bw, --to-format, --torch, --to-dialect, --optimal-nodes) and examples: --help";

/// The examples `simulate --help` ends with.
pub const SIMULATE_EXAMPLES: &str = "\
Examples:
  bubblescope simulate -s zb-v -p 32 -m 256
  bubblescope simulate -s 1f1b -p 8 -m 32 --comm 0.1 --json
  bubblescope simulate -s zb-h1 --f 4,4,4,6 --mem-limit 4
  bubblescope simulate -s interleaved-1f1b --chunks 2 --model llama-3-8b --mem-limit 80GiB
  bubblescope simulate -s zb-h1 --optimal
  bubblescope simulate --from schedule.csv --json";

pub fn run(args: &SimulateArgs, matches: Option<&ArgMatches>) -> Result<()> {
    let InputArgs { family, costs, file } = &args.input;
    // The export's format and options are checked before any work.
    let target = match &args.export.export {
        Some(path) => {
            if let Some(from) = &file.from {
                refuse_overwrite(from, path)?;
            }
            costs.refuse_overwrite(path)?;
            Some(export::Target::export(&args.export, path)?)
        }
        None => None,
    };
    let subject = match &file.from {
        Some(path) => {
            reject_family_flags(matches, false)?;
            from_file(file, path, costs)?
        }
        None => {
            reject_file_flags(file)?;
            let mut params = args::params(family, costs)?;
            if let Some(m) = crate::step::microbatches(
                costs,
                &args.step,
                params.devices,
                crate::step::given_microbatches(matches, family.microbatches),
            )? {
                params.microbatches = m;
            }
            generated(required_schedule(family, true)?, params, costs.units())?
        }
    };
    // A given layout with more stages than the schedule runs is refused before anything is
    // written.
    if costs.model.given() && costs.model.layout.is_some() {
        let derived =
            costs.model.model(subject.params.devices)?.derive(subject.params.devices).map_err(args::flag_error)?;
        let stages = subject.analysis.schedule.placement.stages_per_pipeline();
        if let Some(e) = derived.layout_stage_error(true, stages) {
            return Err(args::flag_error(e));
        }
    }
    let step = crate::step::compute(costs, &args.step, &subject.analysis, subject.params.devices)?;
    costs.check_copy_rate(&subject.analysis.schedule)?;
    let offloads = subject.params.costs.trade.as_deref().is_some_and(bubblescope::trade::Trade::offloads);
    if offloads && !subject.analysis.schedule.has_copies() {
        let trade = subject.params.costs.trade.as_deref();
        if let Some(e) = trade.and_then(|t| bubblescope::passes::offload_rounds_to_none(t, &subject.analysis.schedule))
        {
            return Err(args::flag_error(e));
        }
        eprintln!("note: {}", bubblescope::passes::NOTHING_OFFLOADED);
    }
    if let Some(target) = &target {
        let a = &subject.analysis;
        target.write(&target.text(&a.schedule, &subject.params.costs, Some(a))?)?;
        if is_std(&target.path) {
            // Standard output holds the file alone, so it can be piped.
            return Ok(());
        }
    }
    warn_over_limit(&subject.analysis, subject.params.mem_limit, costs.units());
    if costs.model.given() {
        let derived =
            costs.model.model(subject.params.devices)?.derive(subject.params.devices).map_err(args::flag_error)?;
        note_proportional_cuts(
            &derived,
            [(subject.name.as_str(), subject.analysis.schedule.placement.stages_per_pipeline())],
        );
    }
    let searched = args.optimal || args.optimal_nodes.is_some();
    if let Some(e) =
        searched.then(|| bubblescope::optimal::unsearchable(&subject.analysis.schedule, &subject.params)).flatten()
    {
        return Err(args::flag_error(e));
    }
    let optimum = searched.then(|| optimum(&subject, args.optimal_nodes));
    let cost = subject.analysis.stats.cost;
    let out = if args.json {
        let mut value = report::json(&subject.name, subject.family, &subject.params, &subject.analysis);
        if let Some(run) = costs.measured()? {
            // The costs' source: medians, spread and the passes far from them.
            value["fitted"] = crate::commands::trace::fitted_json(&run.fitted());
        }
        if let (Some(s), Some(map)) = (&step, value.as_object_mut()) {
            map.insert("step".to_string(), crate::step::json(s));
        }
        if let Some(o) = &optimum {
            report::add_optimal(&mut value, cost, o.as_ref());
        }
        crate::output::json_text(&value)
    } else {
        // With costs from a model: figures in µs and bytes, and why the bottleneck is one.
        let derived = match costs.model.given() {
            true => Some(
                costs.model.model(subject.params.devices)?.derive(subject.params.devices).map_err(args::flag_error)?,
            ),
            false => None,
        };
        let mut s = report::table(&subject.label, subject.family, &subject.params, &subject.analysis, derived.as_ref());
        if let Some(o) = &optimum {
            // Under the summary rows, before the per-device table.
            let a = &subject.analysis;
            let limit = bubblescope::bounds::problem_limit(subject.family, &subject.params, &a.stats);
            let fits = a.stats.peak_memory <= limit + 1e-9 * limit.abs().max(1.0);
            let (limit, time): (String, &dyn Fn(f64) -> String) = match derived {
                Some(_) => (bubblescope::units::format_bytes(limit), &bubblescope::units::format_micros),
                None => (bubblescope::units::format_number(limit, 4), &|v| bubblescope::units::format_number(v, 4)),
            };
            let line = report::optimal_line(cost, o.as_ref(), &limit, a.schedule.op_count(), fits, time);
            match s.find("\n\n").and_then(|i| s[i + 2..].find("\n\n").map(|j| i + 2 + j + 1)) {
                Some(at) => s.insert_str(at, &line),
                None => s.push_str(&line),
            }
        }
        if let Some(step) = &step {
            s.insert_str(0, &crate::step::lead(step));
        }
        s
    };
    std::io::stdout().write_all(out.as_bytes()).context("writing to standard output")?;
    Ok(())
}

/// The best order of the subject's passes under its problem's memory limit (`None` when no
/// order within the limit is known), searching `nodes` nodes at most (the default budget
/// without). Its cost is the simulator's: the order is re-simulated.
///
/// A search that runs long says on stderr, every few seconds, how far it has come.
fn optimum(subject: &Subject, nodes: Option<u64>) -> Option<bubblescope::optimal::Optimum> {
    use bubblescope::optimal::{Budget, Progress};
    use bubblescope::registry::optimize_run_with_progress;
    let a = &subject.analysis;
    let limit = bubblescope::bounds::problem_limit(subject.family, &subject.params, &a.stats);
    let budget = nodes.map_or(Budget::default(), Budget::of_nodes);
    let start = std::time::Instant::now();
    let mut shown = start;
    let mut report = |p: &Progress| {
        let now = std::time::Instant::now();
        if now.duration_since(shown).as_secs_f64() >= PROGRESS_SECONDS {
            shown = now;
            eprintln!("{}", progress_line(now.duration_since(start).as_secs_f64(), p));
        }
    };
    optimize_run_with_progress(subject.family, &subject.params, &a.schedule, limit, budget, &mut report).ok()
}

/// Seconds between two progress lines of a long search.
const PROGRESS_SECONDS: f64 = 5.0;

/// One progress line of the search: time, nodes, the best order and the proven bound.
fn progress_line(seconds: f64, p: &bubblescope::optimal::Progress) -> String {
    use bubblescope::units::format_number;
    let best = if p.best.is_finite() { format_number(p.best, 4) } else { "none yet".to_string() };
    let mut line = format!(
        "note: searching for --optimal: {} s, {} nodes, best order {best}, every order at least {}",
        format_number(seconds, 0),
        p.nodes,
        format_number(p.bound, 4)
    );
    line.push_str(&format!(", {} MiB of states remembered", p.memo_bytes >> 20));
    if p.memo_dropped > 0 {
        line.push_str(&format!(" (the cap: {} more not kept)", p.memo_dropped));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_search_reports_time_nodes_best_and_bound() {
        let p = bubblescope::optimal::Progress {
            nodes: 1_234_567,
            work: 0,
            best: 31.0,
            bound: 28.5,
            memo_bytes: 256 << 20,
            memo_dropped: 42,
        };
        assert_eq!(
            progress_line(12.4, &p),
            "note: searching for --optimal: 12 s, 1234567 nodes, best order 31, every order at least 28.5, 256 MiB of states remembered (the cap: 42 more not kept)"
        );
        let early = bubblescope::optimal::Progress { best: f64::INFINITY, memo_dropped: 0, ..p };
        assert!(progress_line(5.0, &early).contains("best order none yet, every order at least 28.5"));
    }
}
