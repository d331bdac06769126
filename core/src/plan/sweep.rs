//! Sweeps: every combination of families, microbatch counts, chunks and memory limits, each
//! run through the same path `simulate` uses ([`crate::registry::run`] and [`crate::attribution`]).
//!
//! The pieces are pure so the CLI can run them on all cores and the app in a worker:
//! [`SweepSpec::expand`] turns the lists into [`RunSpec`]s (the family registry decides which
//! options a family reads and its exact pass count), [`run_one`] runs one, and
//! [`Sweep::collect`] gathers the outcomes and marks the memory/time Pareto front.
//!
//! Memory limits: a family that reads `mem-limit` (the registry says which) plans under it; for
//! every other family the limit is a check, and a run whose peak activation memory is above it
//! is listed as invalid with that reason, so every listed run fits its limit.

use std::sync::Arc;

use super::pareto::ParetoPoint;
use crate::attribution::{overall, Parts};
use crate::error::{Field, ParamError};
use crate::families::Family;
use crate::model::Model;
use crate::params::{check_mem_limit, Costs, ScheduleParams, MAX_MICROBATCHES, MAX_PASSES};
use crate::registry::{family, unknown_family, FAMILIES};
use crate::schedule::CopyKind;
use crate::stats::Stats;
use crate::step::{Step, StepSpec};
use crate::trade::Trade;

/// Most runs one sweep may expand to.
pub const MAX_SWEEP_RUNS: usize = 10_000;
/// Most passes all runs of one sweep may have together (each run also stays within
/// [`MAX_PASSES`]).
pub const MAX_SWEEP_PASSES: u64 = 4 * MAX_PASSES;

/// What to sweep: the product of every list.
#[derive(Clone, Debug)]
pub struct SweepSpec {
    /// Families, in the order runs are listed.
    pub families: Vec<&'static Family>,
    /// Devices `P` (one value: a sweep compares schedules for one pipeline).
    pub devices: u32,
    /// Microbatch counts.
    pub microbatches: Vec<u32>,
    /// Chunk counts for the families that read `chunks`; empty: each family's default.
    pub chunks: Vec<u32>,
    /// Microbatches per chunk round for the families that read `group` (interleaved 1F1B);
    /// `None`: each family's default.
    pub group: Option<u32>,
    /// Per-device activation memory limits; empty: none (memory-aware families use their
    /// default limit).
    pub mem_limits: Vec<f64>,
    /// Pass costs, shared by every run.
    pub costs: Costs,
    /// Whether memory is in bytes (costs derived from a model): messages then show sizes in
    /// KiB to TiB.
    pub bytes: bool,
    /// Recompute and offload settings to sweep (`None`: none); empty: the costs' own.
    pub trades: Vec<Option<Arc<Trade>>>,
    /// With costs from a model: what each run's whole training step is composed from (runs
    /// then rank by step time).
    pub step: Option<Arc<StepInputs>>,
    /// Also run the families that can pair F and B (Megatron's combined 1F1B,
    /// [`Field::A2aOverlap`]) paired, beside their plain runs.
    pub a2a: bool,
}

/// What a run's whole training step is composed from ([`crate::step::whole`]): the model its
/// costs came from and the step settings (the ZeRO stage, the GPUs; never a global batch,
/// which would fix the microbatches a sweep varies).
#[derive(Clone, Debug)]
pub struct StepInputs {
    /// The model.
    pub model: Model,
    /// The step settings.
    pub spec: StepSpec,
}

/// One run of a sweep: a family and the parameters it runs with (only the options it reads).
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The family.
    pub family: &'static Family,
    /// What its whole step is composed from, with a model.
    pub step: Option<Arc<StepInputs>>,
    /// Its parameters, as `simulate` would get them from the same flags (their `units` say
    /// whether memory is in bytes, from [`SweepSpec::bytes`]).
    pub params: ScheduleParams,
}

impl RunSpec {
    /// The chunks the family runs with, when it reads `chunks` (the given value or its
    /// default); `None` for families without the option.
    pub fn chunks(&self) -> Option<u32> {
        self.family.uses(Field::Chunks).then(|| self.family.with_defaults(&self.params).chunks).flatten()
    }

    /// The recompute and offload it runs with, when it trades anything.
    pub fn trade(&self) -> Option<&Trade> {
        self.params.costs.trade.as_deref().filter(|t| !t.is_none())
    }

    /// The exact number of passes (from the registry, before any work).
    pub fn passes(&self) -> u64 {
        self.family.pass_count(&self.family.with_defaults(&self.params))
    }
}

/// A run that produced a schedule within its memory limit.
#[derive(Clone, Debug)]
pub struct SweepRun {
    /// What ran.
    pub spec: RunSpec,
    /// Chunks per device of the generated schedule (what `simulate --json` reports).
    pub chunks: u32,
    /// Stages per pipeline of the generated schedule (the model is cut into this many).
    pub stages: u32,
    /// Activations the run offloads to the host (0 when its trade offloads none, or asks
    /// for offload where no wait hides a copy).
    pub offloaded: usize,
    /// Its numbers.
    pub stats: Stats,
    /// `cost − ideal` split into communication, imbalance and schedule, as `simulate` reports
    /// it (`None` if a re-simulation failed, which it cannot when the first one finished).
    pub attribution: Option<Parts>,
    /// The memory part beside it, as `simulate` reports it ([`crate::attribution::memory_part`]):
    /// the cost over the same family with no memory limit, for families that schedule to the
    /// run's limit (`None` otherwise).
    pub memory: Option<f64>,
    /// Whether no other run of the sweep has both lower-or-equal peak memory and cost, one of
    /// them strictly lower.
    pub pareto: bool,
    /// The whole training step, with a model.
    pub step: Option<Step>,
}

impl SweepRun {
    /// What runs rank by: the whole step's time with a model, else the pipeline's cost.
    pub fn time(&self) -> f64 {
        self.step.as_ref().map_or(self.stats.cost, |s| s.time)
    }
}

/// A combination that cannot run, and why.
#[derive(Clone, Debug)]
pub struct InvalidRun {
    /// What was asked.
    pub spec: RunSpec,
    /// Why it cannot run: the message and its hints, as the CLI prints errors.
    pub error: String,
}

/// A finished sweep: the runs in the order they were expanded, and the invalid combinations.
#[derive(Clone, Debug, Default)]
pub struct Sweep {
    /// Runs that fit, with the Pareto front marked.
    pub runs: Vec<SweepRun>,
    /// Combinations that could not run, with their reasons.
    pub invalid: Vec<InvalidRun>,
}

/// The families a `--schedules` value names: `all`, or a comma-separated list in any spelling
/// [`family`] accepts, each family once, in the order given.
///
/// # Errors
/// A [`ParamError`] on `schedule` for an unknown or empty name.
pub fn parse_schedules(text: &str) -> Result<Vec<&'static Family>, ParamError> {
    if text.trim().eq_ignore_ascii_case("all") {
        return Ok(FAMILIES.iter().collect());
    }
    let mut out: Vec<&'static Family> = Vec::new();
    for (i, name) in text.split(',').map(str::trim).enumerate() {
        if name.is_empty() {
            return Err(ParamError::new(
                Field::Schedule,
                format!("item {} of the schedule list is empty, expected a family name", i + 1),
            )
            .hint("write e.g. 1f1b,zb-h1,zb-v, or all"));
        }
        if name.eq_ignore_ascii_case("all") {
            return Err(ParamError::new(
                Field::Schedule,
                format!(
                    "`all` stands alone in the schedule list, found it beside other names in `{}`",
                    crate::formats::sanitize(text.trim())
                ),
            )
            .hint("give --schedules all (every family, the others included), or list the families without all"));
        }
        let f = family(name).ok_or_else(|| unknown_family(name))?;
        if !out.iter().any(|g| g.name == f.name) {
            out.push(f);
        }
    }
    Ok(out)
}

/// Reads a list of counts: comma-separated items, each a number `N`, an inclusive range `A..B`
/// (every whole number from A to B) or a stepped range `A..B:S` (A, A+S, … up to B); e.g.
/// `8,16,32`, `8..64:8`, `4..8,16`. Values are sorted and each kept once; each must be between
/// 1 and `max`, and the list may hold at most [`MAX_SWEEP_RUNS`] values.
///
/// # Errors
/// A [`ParamError`] on `field` naming the item that is wrong.
pub fn parse_counts(text: &str, field: Field, max: u32) -> Result<Vec<u32>, ParamError> {
    let name = field.name();
    let syntax = format!("write e.g. --{name} 8,16,32, --{name} 8..64 (every value) or --{name} 8..64:8 (a step of 8)");
    let bad = |msg: String| ParamError::new(field, msg).hint(syntax.clone());
    let number = |s: &str, what: &str| -> Result<u32, ParamError> {
        let v: i64 = s.trim().parse().map_err(|_| {
            bad(format!("{what} in --{name} must be a whole number, found `{}`", crate::formats::sanitize(s.trim())))
        })?;
        if v < 1 || v > i64::from(max) {
            return Err(bad(format!("{what} in --{name} must be between 1 and {max}, found {v}")));
        }
        Ok(v as u32)
    };
    let mut out: Vec<u32> = Vec::new();
    for (i, item) in text.split(',').enumerate() {
        let item = item.trim();
        if item.is_empty() {
            return Err(bad(format!("item {} of --{name} is empty", i + 1)));
        }
        let Some((from, rest)) = item.split_once("..") else {
            out.push(number(item, "a value")?);
            continue;
        };
        let (to, step) = match rest.split_once(':') {
            Some((to, step)) => (to, number(step, "the step")?),
            None => (rest, 1),
        };
        let (from, to) = (number(from, "a range's start")?, number(to.trim_start_matches('='), "a range's end")?);
        if from > to {
            return Err(bad(format!("the range {item} in --{name} is empty: its start {from} is above its end {to}")));
        }
        let count = (to - from) / step + 1;
        if out.len() + count as usize > MAX_SWEEP_RUNS {
            return Err(bad(format!("--{name} lists more than {MAX_SWEEP_RUNS} values")));
        }
        out.extend((0..count).map(|k| from + k * step));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// [`parse_counts`] for `--microbatches`.
///
/// # Errors
/// As [`parse_counts`].
pub fn parse_microbatches(text: &str) -> Result<Vec<u32>, ParamError> {
    parse_counts(text, Field::Microbatches, MAX_MICROBATCHES)
}

impl SweepSpec {
    /// Every run of the sweep, in the order families, microbatches, chunks, memory limits.
    ///
    /// # Errors
    /// A [`ParamError`] when a setting shared by every run is wrong (devices, costs, a limit,
    /// an empty list, `chunks`, `group` or an overlap time that no family reads) or the sweep is too big (more than
    /// [`MAX_SWEEP_RUNS`] runs or [`MAX_SWEEP_PASSES`] passes). A combination that does not
    /// fit its family is not an error here: [`run_one`] reports it.
    pub fn expand(&self) -> Result<Vec<RunSpec>, ParamError> {
        if self.families.is_empty() {
            return Err(ParamError::new(Field::Schedule, "no schedule to sweep")
                .hint("give --schedules all, or a list such as 1f1b,zb-h1,zb-v"));
        }
        if self.microbatches.is_empty() {
            return Err(ParamError::new(Field::Microbatches, "no microbatch count to sweep")
                .hint("give --microbatches 8,16,32 or a range such as 8..64:8"));
        }
        ScheduleParams::new(self.devices, 1).with_costs(self.costs.clone()).check_common()?;
        for &limit in &self.mem_limits {
            check_mem_limit(limit)?;
        }
        if !self.chunks.is_empty() && !self.families.iter().any(|f| f.uses(Field::Chunks)) {
            let readers: Vec<&str> = FAMILIES.iter().filter(|f| f.uses(Field::Chunks)).map(|f| f.name).collect();
            return Err(ParamError::new(Field::Chunks, "none of the swept schedules reads --chunks")
                .hint(format!("add a family that does ({}), or remove --chunks", readers.join(", "))));
        }
        if self.group.is_some() && !self.families.iter().any(|f| f.uses(Field::Group)) {
            let readers: Vec<&str> = FAMILIES.iter().filter(|f| f.uses(Field::Group)).map(|f| f.name).collect();
            return Err(ParamError::new(Field::Group, "none of the swept schedules reads --group")
                .hint(format!("add a family that does ({}), or remove --group", readers.join(", "))));
        }
        if self.a2a && !self.families.iter().any(|f| f.uses(Field::A2aOverlap)) {
            let readers: Vec<&str> = FAMILIES.iter().filter(|f| f.uses(Field::A2aOverlap)).map(|f| f.name).collect();
            return Err(ParamError::new(
                Field::A2aOverlap,
                "none of the swept schedules pairs F and B as combined 1F1B",
            )
            .hint(format!("add a family that does ({}), or remove --a2a-overlap", readers.join(", "))));
        }
        if self.costs.overlap.is_some() && !self.families.iter().any(|f| f.uses(Field::Overlap)) {
            let readers: Vec<&str> = FAMILIES.iter().filter(|f| f.uses(Field::Overlap)).map(|f| f.name).collect();
            return Err(ParamError::new(Field::Overlap, "none of the swept schedules reads --overlap")
                .hint(format!("add a family that overlaps F and B ({}), or remove --overlap", readers.join(", "))));
        }
        // Shard costs no swept family reads: refused as simulate refuses them (one rule).
        if let Some(e) = crate::families::unused_vocabulary(&self.families, &self.costs) {
            return Err(e);
        }
        // A setting listed twice runs once, in the place it was first listed; trades compare
        // by what they do (`full` and `full,full,full,full` are one setting).
        let chunk_choices: Vec<Option<u32>> =
            if self.chunks.is_empty() { vec![None] } else { first_of_each(&self.chunks, |c| *c).map(Some).collect() };
        let limit_choices: Vec<Option<f64>> = if self.mem_limits.is_empty() {
            vec![None]
        } else {
            first_of_each(&self.mem_limits, |l| l.to_bits()).map(Some).collect()
        };
        let trade_choices: Vec<Option<Arc<Trade>>> = if self.trades.is_empty() {
            vec![self.costs.trade.clone()]
        } else {
            let does = |t: &Option<Arc<Trade>>| {
                t.as_deref()
                    .filter(|t| !t.is_none())
                    .map(|t| (super::describe_trade(t, self.devices), t.copy_time.map(f64::to_bits)))
            };
            first_of_each(&self.trades, does).collect()
        };
        let mut runs = Vec::new();
        let mut passes: u64 = 0;
        for &f in &self.families {
            let chunks: &[Option<u32>] = if f.uses(Field::Chunks) { &chunk_choices } else { &[None] };
            for &m in &self.microbatches {
                for &c in chunks {
                    for (&limit, trade) in limit_choices.iter().flat_map(|l| trade_choices.iter().map(move |t| (l, t)))
                    {
                        // A vocabulary-parallel family runs, and is reported, at a model's split
                        // costs ([`Family::at_its_costs`]).
                        let plain = ScheduleParams::new(self.devices, m).with_costs(self.costs.clone());
                        let mut params = f.at_its_costs(&plain).into_owned();
                        params.costs.trade = trade.clone();
                        // As --group: the F&B time goes to the families that overlap.
                        if !f.uses(Field::Overlap) {
                            params.costs.overlap = None;
                        }
                        params.chunks = c;
                        params.group = self.group.filter(|_| f.uses(Field::Group));
                        params.mem_limit = limit;
                        if self.bytes {
                            params.units = crate::units::Units::Model;
                        }
                        let paired = self.a2a && f.uses(Field::A2aOverlap);
                        let pairing: &[bool] = if paired { &[false, true] } else { &[false] };
                        for &a2a in pairing {
                            let mut params = params.clone();
                            params.a2a_overlap = a2a;
                            let run = RunSpec { family: f, params, step: self.step.clone() };
                            let n = run.passes();
                            // A run over the per-run cap is refused by its generator before any work.
                            passes = passes.saturating_add(if n > MAX_PASSES { 0 } else { n });
                            runs.push(run);
                        }
                        if runs.len() > MAX_SWEEP_RUNS {
                            return Err(ParamError::new(
                                Field::Microbatches,
                                format!("the sweep has more than {MAX_SWEEP_RUNS} runs"),
                            )
                            .hint("sweep fewer schedules, microbatch counts, chunks or memory limits"));
                        }
                    }
                }
            }
        }
        if passes > MAX_SWEEP_PASSES {
            return Err(ParamError::new(
                Field::Microbatches,
                format!("the sweep's runs have {passes} passes together, more than the {MAX_SWEEP_PASSES} supported"),
            )
            .hint("sweep fewer or smaller microbatch counts, fewer schedules, or use a step (8..64:8)"));
        }
        Ok(runs)
    }
}

/// The items of `list` whose `key` no earlier item has, in order.
fn first_of_each<'a, T: Clone, K: PartialEq>(
    list: &'a [T],
    key: impl Fn(&T) -> K + 'a,
) -> impl Iterator<Item = T> + 'a {
    list.iter().enumerate().filter(move |(i, t)| !list[..*i].iter().any(|u| key(u) == key(t))).map(|(_, t)| t.clone())
}

/// Runs one combination as `simulate` would: generate, validate, simulate, measure
/// ([`crate::registry::run`]), then split the bubble ([`overall`], as `simulate` splits it).
///
/// # Errors
/// An [`InvalidRun`] with the reason when the family cannot take the parameters, the schedule
/// cannot run, or its peak memory is above the run's limit.
// Both outcomes are kept whole (a sweep lists them), so the error is as large as the run.
#[allow(clippy::result_large_err)]
pub fn run_one(spec: RunSpec) -> Result<SweepRun, InvalidRun> {
    let analysis = match crate::registry::run(spec.family.name, &spec.params) {
        Ok(a) => a,
        Err(e) => return Err(InvalidRun { error: e.to_string(), spec }),
    };
    if let Some(limit) = spec.params.mem_limit {
        if let Some(d) = analysis.stats.per_device.iter().find(|d| d.over_limit(Some(limit))) {
            let aware: Vec<&str> = FAMILIES.iter().filter(|f| f.uses(Field::MemLimit)).map(|f| f.name).collect();
            // Nearest, not rounded up as in the families' errors: a peak just above the limit
            // must not print as the limit rounded up.
            let size = |v: f64| {
                if spec.params.units.bytes() {
                    crate::units::format_bytes(v)
                } else {
                    crate::units::short_number(v)
                }
            };
            let error = crate::error::with_hints(
                &format!(
                    "peak memory {} on device {} is above the memory limit {}",
                    size(d.peak_memory),
                    d.device,
                    size(limit)
                ),
                &[format!("raise the limit, or use a family that plans under it ({})", aware.join(", "))],
            );
            return Err(InvalidRun { spec, error });
        }
    }
    let attribution = overall(&analysis.schedule, &spec.params.costs, &analysis.stats).ok();
    let chunks = analysis.schedule.placement.chunks_per_device();
    let stages = analysis.schedule.placement.stages_per_pipeline();
    let memory = crate::attribution::memory_part(spec.family, &spec.params, analysis.stats.cost).and_then(Result::ok);
    let offloaded = analysis.schedule.copies.iter().flatten().filter(|c| c.kind == CopyKind::Offload).count();
    let recompute = spec.params.costs.trade.as_ref().map(|t| t.recompute.clone()).unwrap_or_default();
    let step = match spec.step.as_ref().map(|s| crate::step::whole(&s.model, &s.spec, &analysis, &recompute)) {
        Some(Err(e)) => return Err(InvalidRun { error: e.to_string(), spec }),
        Some(Ok(step)) => Some(step),
        None => None,
    };
    Ok(SweepRun { spec, chunks, stages, offloaded, stats: analysis.stats, attribution, memory, pareto: false, step })
}

impl Sweep {
    /// Gathers outcomes (in expansion order) and marks the Pareto front over (peak memory,
    /// cost) across all runs.
    pub fn collect(outcomes: impl IntoIterator<Item = Result<SweepRun, InvalidRun>>) -> Sweep {
        let mut sweep = Sweep::default();
        for outcome in outcomes {
            match outcome {
                Ok(run) => sweep.runs.push(run),
                Err(invalid) => sweep.invalid.push(invalid),
            }
        }
        let points: Vec<(f64, f64)> = sweep.runs.iter().map(|r| (r.stats.peak_memory, r.stats.cost)).collect();
        for (run, on) in sweep.runs.iter_mut().zip(super::pareto::front(&points)) {
            run.pareto = on;
        }
        sweep
    }

    /// Every run as a point of the Pareto chart (peak memory, cost, front membership).
    pub fn pareto_points(&self) -> Vec<ParetoPoint<'static>> {
        self.runs
            .iter()
            .map(|r| ParetoPoint {
                family: r.spec.family.name,
                peak_memory: r.stats.peak_memory,
                cost: r.stats.cost,
                pareto: r.pareto,
                traded: r.spec.trade().is_some(),
            })
            .collect()
    }
}

/// Expands and runs a whole sweep on one thread (the CLI spreads [`run_one`] over its cores).
///
/// # Errors
/// As [`SweepSpec::expand`].
pub fn sweep(spec: &SweepSpec) -> Result<Sweep, ParamError> {
    Ok(Sweep::collect(spec.expand()?.into_iter().map(run_one)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_lists_and_ranges() {
        let p = |s: &str| parse_counts(s, Field::Microbatches, 100);
        assert_eq!(p("8,16,32").unwrap(), vec![8, 16, 32]);
        assert_eq!(p("8..12").unwrap(), vec![8, 9, 10, 11, 12]);
        assert_eq!(p("8..64:8").unwrap(), vec![8, 16, 24, 32, 40, 48, 56, 64]);
        assert_eq!(p("8..20:5").unwrap(), vec![8, 13, 18]);
        assert_eq!(p("16, 4..8:4 ,16").unwrap(), vec![4, 8, 16]);
        assert_eq!(p("7..7").unwrap(), vec![7]);
        for (bad, says) in [
            ("", "item 1 of --microbatches is empty"),
            ("8,", "item 2"),
            ("x", "must be a whole number, found `x`"),
            ("0", "between 1 and 100, found 0"),
            ("8..101", "between 1 and 100, found 101"),
            ("64..8", "is empty: its start 64 is above its end 8"),
            ("8..64:0", "the step in --microbatches must be between 1 and 100, found 0"),
            ("8..", "must be a whole number, found ``"),
            ("-4", "found -4"),
        ] {
            let e = p(bad).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {e}");
            assert!(e.hints[0].contains("8..64:8"), "{bad}: {e}");
        }
    }

    #[test]
    fn schedules_read_all_and_any_spelling() {
        assert_eq!(parse_schedules("all").unwrap().len(), FAMILIES.len());
        let names: Vec<&str> = parse_schedules("1F1B, ZBV,zb-v").unwrap().iter().map(|f| f.name).collect();
        assert_eq!(names, vec!["1f1b", "zb-v"]);
        assert!(parse_schedules("1f1b,,zb-v").unwrap_err().message.contains("item 2"));
        assert!(parse_schedules("nope").unwrap_err().message.contains("unknown schedule"));
    }

    fn spec(families: &str, microbatches: &[u32]) -> SweepSpec {
        SweepSpec {
            families: parse_schedules(families).unwrap(),
            devices: 4,
            microbatches: microbatches.to_vec(),
            chunks: vec![],
            group: None,
            mem_limits: vec![],
            costs: Costs::default(),
            bytes: false,
            trades: vec![],
            step: None,
            a2a: false,
        }
    }

    /// Combined 1F1B is a dimension of its own: the families that pair F and B run both ways,
    /// the others once; a sweep with no such family is refused.
    #[test]
    fn a2a_pairs_only_the_families_that_can_pair() {
        let s = SweepSpec { a2a: true, ..spec("1f1b,interleaved-1f1b,zb-v", &[8]) };
        let runs = s.expand().unwrap();
        let shown: Vec<(&str, bool)> = runs.iter().map(|r| (r.family.name, r.params.a2a_overlap)).collect();
        assert_eq!(
            shown,
            [("1f1b", false), ("1f1b", true), ("interleaved-1f1b", false), ("interleaved-1f1b", true), ("zb-v", false)]
        );
        let e = SweepSpec { a2a: true, ..spec("zb-v,dualpipe-v", &[8]) }.expand().unwrap_err();
        assert!(e.message.contains("pairs F and B") && e.hints[0].contains("1f1b"), "{e}");
    }

    #[test]
    fn options_expand_only_for_the_families_that_read_them() {
        let s = SweepSpec { chunks: vec![2, 3], mem_limits: vec![4.0, 8.0], ..spec("1f1b,interleaved-1f1b", &[8, 16]) };
        let runs = s.expand().unwrap();
        // 1f1b: 2 microbatch counts × 2 limits; interleaved: × 2 chunks as well.
        assert_eq!(runs.len(), 4 + 8);
        assert!(runs
            .iter()
            .filter(|r| r.family.name == "1f1b")
            .all(|r| r.params.chunks.is_none() && r.chunks().is_none()));
        let chunked: Vec<Option<u32>> =
            runs.iter().filter(|r| r.family.name == "interleaved-1f1b").map(RunSpec::chunks).collect();
        assert_eq!(chunked.iter().filter(|c| **c == Some(3)).count(), 4);
        // Without --chunks the family's registry default is what it runs with.
        let runs = spec("interleaved-1f1b", &[8]).expand().unwrap();
        assert_eq!(runs[0].chunks(), crate::family("interleaved-1f1b").unwrap().with_defaults(&runs[0].params).chunks);
        assert!(SweepSpec { chunks: vec![2], ..spec("1f1b", &[8]) }.expand().unwrap_err().message.contains("--chunks"));
        assert!(SweepSpec { group: Some(5), ..spec("1f1b", &[8]) }.expand().unwrap_err().message.contains("--group"));
        // A group goes to the families that read it only: interleaved at M = 9 runs with 5.
        let runs = SweepSpec { group: Some(5), ..spec("1f1b,interleaved-1f1b", &[9]) }.expand().unwrap();
        assert_eq!(runs.iter().map(|r| r.params.group).collect::<Vec<_>>(), [None, Some(5)]);
        assert!(runs.iter().all(|r| run_one(r.clone()).is_ok()), "{runs:?}");
    }

    #[test]
    fn shared_settings_and_size_are_checked_before_any_run() {
        assert_eq!(SweepSpec { devices: 0, ..spec("1f1b", &[8]) }.expand().unwrap_err().field, Field::Devices);
        assert_eq!(
            SweepSpec { mem_limits: vec![-1.0], ..spec("1f1b", &[8]) }.expand().unwrap_err().field,
            Field::MemLimit
        );
        let big = SweepSpec { devices: 64, ..spec("all", &[16384, 32768]) };
        assert!(big.expand().err().is_some_and(|e| e.message.contains("passes together")));
        assert!(spec("1f1b", &[]).expand().is_err());
    }

    #[test]
    fn invalid_combinations_are_listed_with_their_reason() {
        let s = SweepSpec { devices: 3, mem_limits: vec![3.0], ..spec("1f1b,dualpipe,gpipe,zb-2p", &[6]) };
        let sweep = sweep(&s).unwrap();
        let reason = |name: &str| sweep.invalid.iter().find(|i| i.spec.family.name == name).map(|i| i.error.clone());
        assert!(reason("dualpipe").unwrap().contains("even"), "{:?}", reason("dualpipe"));
        // GPipe holds all 6 microbatches on device 0: above the limit of 3.
        assert!(reason("gpipe").unwrap().contains("peak memory 6 on device 0 is above the memory limit 3"));
        assert!(reason("1f1b").is_none());
        assert!(sweep.runs.iter().all(|r| r.stats.peak_memory <= 3.0));
        // With a model's bytes, sizes read in binary units.
        let gib = 1_073_741_824.0;
        let costs = Costs { mem_f: gib, ..Costs::default() };
        let s = SweepSpec { devices: 3, mem_limits: vec![3.0 * gib], costs, bytes: true, ..spec("gpipe", &[6]) };
        let err = &super::sweep(&s).unwrap().invalid[0].error;
        assert!(err.starts_with("peak memory 6 GiB on device 0 is above the memory limit 3 GiB"), "{err}");
    }

    #[test]
    fn runs_equal_single_runs_and_the_front_is_marked() {
        let sweep = sweep(&spec("1f1b,zb-h1,zb-h2,gpipe", &[8])).unwrap();
        assert_eq!(sweep.runs.len(), 4);
        for r in &sweep.runs {
            let single = crate::registry::run(r.spec.family.name, &r.spec.params).unwrap();
            assert_eq!(r.stats, single.stats);
        }
        let on: Vec<(&str, bool)> = sweep.runs.iter().map(|r| (r.spec.family.name, r.pareto)).collect();
        // ZB-H1 has 1F1B's memory and less bubble; ZB-H2 has no bubble at more memory; GPipe
        // is beaten on both.
        assert_eq!(on, vec![("1f1b", false), ("zb-h1", true), ("zb-h2", true), ("gpipe", false)]);
    }
}
