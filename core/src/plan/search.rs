//! Plans: the fastest schedule for a model on `P` devices whose memory — activations plus what
//! a device holds besides them — fits a limit.
//!
//! The search covers families × microbatch counts × chunks × layouts:
//!
//! * microbatch counts: with a global batch `G`, every `M` that divides it (the micro-batch
//!   size is then `G / M`, so a model's costs change with `M`), up to
//!   [`MAX_PLAN_MICROBATCHES_PER_DEVICE`] · P, or only `G / b` when the micro-batch size `b` is
//!   kept; without one, `P`, `2P`, `4P` and `8P` at the model's micro-batch size;
//! * chunks 2, 3 and 4 for the families that read `chunks`; with an MoE model, the families
//!   that pair passes also run paired (`--a2a-overlap`, Megatron's combined 1F1B);
//! * layouts, for a model without `--layout`: the even split, and splits that move one or two
//!   layers off the last share (which also holds the LM head) and one off the first (the
//!   embedding) onto the middle shares with the fewest layers, and the split balanced by cost
//!   ([`layout_candidates`]); for the looping families (those that read `chunks`), also
//!   Megatron's layout with the embedding and the loss as stages of their own, cut for each
//!   chunk count ([`own_ends_layouts`]: `E|t*3|…|L`).
//!
//! **Static memory** is what a device holds besides activations: a fixed number of bytes, or
//! derived from the model at [`BYTES_PER_PARAMETER`] bytes per parameter of the stages the
//! device holds (mixed-precision Adam, Megatron-Core's count without a distributed optimizer).
//!
//! A plan fits when every device's peak activation memory plus its static memory is at most the
//! limit; families that plan under a limit get the limit less the largest static memory.

use std::sync::Arc;

use crate::attribution::{overall, Parts};
use crate::error::{Field, ParamError};
use crate::families::Family;
use crate::live::{slow_search, Refusal};
use crate::model::{Layout, Model};
use crate::params::{CostProfile, Costs, P2p, ScheduleParams, StageCosts, MAX_MICROBATCHES, MAX_PASSES};
use crate::registry::FAMILIES;
use crate::schedule::Placement;
use crate::stats::Stats;
use crate::step::{Step, StepSpec};

use super::balance::own_ends_layouts;
use super::sweep::{MAX_SWEEP_PASSES, MAX_SWEEP_RUNS};
use super::trade::{ladder, TradeChoice, TradeSearch, TradeSpec};
use crate::trade::Trade;

/// Bytes of static memory per parameter for mixed-precision Adam: 16-bit weights 2, fp32
/// gradients 4, fp32 master weights 4, Adam's two fp32 moments 8.
pub const BYTES_PER_PARAMETER: f64 = 18.0;
/// Largest microbatch count a plan tries, per device.
pub const MAX_PLAN_MICROBATCHES_PER_DEVICE: u32 = 32;
/// Chunk counts tried for the families that read `chunks`.
pub const PLAN_CHUNKS: [u32; 3] = [2, 3, 4];

/// Where the costs come from.
#[derive(Clone, Debug)]
pub enum CostSource {
    /// A transformer config: costs in µs and bytes, re-derived per micro-batch size and layout.
    Model(Model),
    /// Hand-set costs, fixed.
    Costs(Costs),
}

/// What a device holds besides activations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StaticMemory {
    /// The same amount on every device, in mem-f's unit (bytes with a model).
    Fixed(f64),
    /// [`BYTES_PER_PARAMETER`] per parameter of the device's share of the model.
    FromModel,
}

/// What to plan.
#[derive(Clone, Debug)]
pub struct PlanSpec {
    /// Devices `P`.
    pub devices: u32,
    /// Per-device memory limit: activations plus static memory.
    pub mem_limit: f64,
    /// The costs.
    pub source: CostSource,
    /// Samples per training step, when fixed (needs a model).
    pub global_batch: Option<u32>,
    /// With a global batch, keep the model's micro-batch size (one microbatch count, the
    /// global batch over it) instead of trying every divisor.
    pub keep_micro_batch: bool,
    /// Static memory per device.
    pub static_memory: StaticMemory,
    /// The families to try (every family by default).
    pub families: Vec<&'static Family>,
    /// Recompute and offload: none, one setting, or searched per candidate.
    pub trade: TradeSpec,
    /// With a model: the whole step's ZeRO stage and GPUs in all (its global batch is
    /// [`PlanSpec::global_batch`], over every replica). Plans then rank by the step's tokens
    /// per second per GPU, and static memory is sharded by the stage.
    pub step: StepSpec,
    /// How sends behave (`--p2p`): every candidate is simulated under it, and an order whose
    /// blocking exchanges never meet is [`Outcome::Deadlocks`].
    pub p2p: P2p,
}

/// One combination to try.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The family.
    pub family: &'static Family,
    /// Its parameters (the limit it plans under, for the memory-aware families).
    pub params: ScheduleParams,
    /// Sequences per microbatch, with a model.
    pub micro_batch: Option<u32>,
    /// Sequence length, with a model (for tokens per second).
    pub seq: Option<u32>,
    /// The layout given to the model (`None`: the even split or the model's own).
    pub layout: Option<String>,
    /// Parameters of each piece of the cost profile (in its `f` lists, with the finer cuts),
    /// when static memory comes from the model.
    pub piece_params: Option<Arc<CostProfile>>,
    /// Fixed static memory per device, otherwise.
    pub fixed_static: f64,
    /// The limit on activations plus static memory.
    pub limit: f64,
    /// The recompute and offload settings to try when it does not fit as it is.
    pub trade_search: Option<TradeSearch>,
    /// With a model: the model as this candidate runs it (its micro-batch and layout) and the
    /// step settings, for the whole step and the static memory by ZeRO stage.
    pub step: Option<Arc<(Model, StepSpec)>>,
}

/// A plan that fits.
#[derive(Clone, Debug)]
pub struct Plan {
    /// What ran.
    pub candidate: Candidate,
    /// The simulated numbers.
    pub stats: Stats,
    /// Static memory per device.
    pub static_memory: Vec<f64>,
    /// The largest activation peak plus static memory of any device.
    pub memory: f64,
    /// Samples per step (`M` × micro-batch size; `M` without a model).
    pub samples: f64,
    /// Samples per second with a model (cost in µs); microbatches per cost unit otherwise.
    pub throughput: f64,
    /// Tokens per second, with a model.
    pub tokens_per_second: Option<f64>,
    /// The bubble split, for the plans shown ([`attribute_plan`]).
    pub attribution: Option<Parts>,
    /// Stages per pipeline of its schedule (the model is cut into this many).
    pub stages: u32,
    /// The recompute or offload it needs to fit, when the search chose one.
    pub trade: Option<TradeChoice>,
    /// The whole training step, with a model.
    pub step: Option<Step>,
}

impl Plan {
    /// What plans rank by, highest first: the whole step's tokens per second per GPU with a
    /// model, else the pipeline's throughput.
    pub fn rate(&self) -> f64 {
        self.step.as_ref().map_or(self.throughput, |s| s.tokens_per_gpu_s)
    }
}

/// The outcome of a search: fitting plans, fastest first, and what did not fit.
#[derive(Clone, Debug, Default)]
pub struct PlanSearch {
    /// Every plan that fits, by throughput (then memory) from the best.
    pub plans: Vec<Plan>,
    /// Candidates that ran but did not fit the limit.
    pub over_limit: usize,
    /// Candidates the family could not take (or refused as too slow to search).
    pub invalid: usize,
    /// Candidates whose order deadlocks under blocking sends (`--p2p blocking`): not run.
    pub deadlocked: usize,
    /// Candidates left out on running: a moved-layer layout with a family that cuts more
    /// stages than it describes ([`Outcome::NotTried`]).
    pub not_tried: usize,
    /// The least memory a candidate above the limit needed, with the most recompute and
    /// offload searched: what a limit must allow for anything to fit.
    pub least_memory: Option<f64>,
}

/// Layer counts per share to try for `model` on `devices` devices: the model's own layout if
/// it has one (`None`), else the even split (`None`) and, with three or more devices, splits
/// with layers moved off the last share (LM head) and the first (embedding), and the split that
/// balances the work by cost.
pub fn layout_candidates(model: &Model, devices: u32) -> Vec<Option<String>> {
    if model.layout.is_some() || devices < 3 {
        return vec![None];
    }
    let even: Vec<u32> = Layout::even(model.layers, devices).pieces.iter().map(|p| p.layers).collect();
    let mut out: Vec<Option<String>> = vec![None];
    let mut seen = vec![even.clone()];
    for (off_last, off_first) in [(1, 0), (2, 0), (0, 1), (1, 1)] {
        let last = even.len() - 1;
        if even[last] <= off_last || even[0] <= off_first {
            continue;
        }
        let mut counts = even.clone();
        counts[last] -= off_last;
        counts[0] -= off_first;
        for _ in 0..off_last + off_first {
            // The middle share with the fewest layers, the earliest on a tie.
            let k = (1..last).min_by_key(|&k| (counts[k], k)).unwrap_or(1);
            counts[k] += 1;
        }
        if !seen.contains(&counts) {
            out.push(Some(counts.iter().map(u32::to_string).collect::<Vec<_>>().join(",")));
            seen.push(counts);
        }
    }
    // The split that balances the work, any number of layers moved ([`super::balance`]).
    if let Some(layout) = super::balance::balanced_layout(model, devices) {
        let counts: Vec<u32> = layout.split(',').filter_map(|c| c.parse().ok()).collect();
        if !seen.contains(&counts) {
            out.push(Some(layout));
        }
    }
    out
}

/// The microbatch counts to try (see the module docs).
pub fn microbatch_candidates(devices: u32, global_batch: Option<u32>) -> Vec<u32> {
    let top = devices.saturating_mul(MAX_PLAN_MICROBATCHES_PER_DEVICE).min(MAX_MICROBATCHES);
    match global_batch {
        Some(g) => (1..=g.min(top)).filter(|m| g % m == 0).collect(),
        None => [1, 2, 4, 8].iter().map(|k| devices.saturating_mul(*k)).filter(|&m| m <= MAX_MICROBATCHES).collect(),
    }
}

/// Parameters each device holds under `placement`, from the parameters of each piece of the
/// model: every stage takes the pieces it covers in proportion, the rule the simulator's cost
/// table uses ([`StageCosts`]).
pub fn device_params(piece_params: &CostProfile, placement: &Placement) -> Vec<f64> {
    let costs = Costs { profile: Some(Arc::new(piece_params.clone())), ..Costs::default() };
    let table = StageCosts::new(&costs, placement);
    let mut out = vec![0.0; placement.devices() as usize];
    for (g, &p) in table.f.iter().enumerate() {
        if let Some(slot) = placement.device_of(g as u32).and_then(|d| out.get_mut(d as usize)) {
            *slot += p;
        }
    }
    out
}

impl PlanSpec {
    /// Every candidate of the search.
    ///
    /// # Errors
    /// A [`ParamError`] when the model or limits are wrong, a global batch is given without a
    /// model, static memory from the model is asked without one, or the search is too big.
    pub fn candidates(&self) -> Result<Vec<Candidate>, ParamError> {
        crate::params::check_mem_limit(self.mem_limit)?;
        if let StaticMemory::Fixed(s) = self.static_memory {
            // The memory limit's own cap: static memory above it fits under no limit.
            let max = crate::params::MAX_MEM_LIMIT;
            if !s.is_finite() || s < 0.0 || s > max {
                return Err(crate::params::memory_range_error("static-memory", &crate::units::short_number(s)));
            }
            // Activations come on top: static memory at the cap leaves no limit that fits.
            if s >= max {
                return Err(ParamError::new(
                    Field::MemLimit,
                    format!(
                        "no allowed limit fits: static memory of {} alone fills the largest limit, {}",
                        match self.source {
                            CostSource::Model(_) => crate::units::size_text(s),
                            CostSource::Costs(_) => crate::units::short_number(s),
                        },
                        crate::params::MAX_MEM_LIMIT_TEXT
                    ),
                )
                .hint("give --static-memory below 1PiB, leaving room for the activations"));
            }
        }
        let model = match &self.source {
            CostSource::Model(m) => Some(m),
            CostSource::Costs(_) => None,
        };
        if model.is_none() && self.global_batch.is_some() {
            return Err(ParamError::new(Field::MicroBatch, "--global-batch needs costs from a model")
                .hint("the micro-batch size is the global batch over the microbatches, and only a model's costs scale with it: give --model or --layers …"));
        }
        if model.is_none() && self.static_memory == StaticMemory::FromModel {
            return Err(ParamError::new(Field::MemLimit, "static memory from the model needs a model")
                .hint("give --model or --layers …, or the bytes per device: --static-memory 20GiB"));
        }
        if self.global_batch == Some(0) {
            return Err(ParamError::new(Field::MicroBatch, "the global batch must be at least 1, found 0"));
        }
        // The step's settings, checked once: the replicas the GPUs make, and the global batch
        // over them (each replica runs its share).
        let dp = match model {
            Some(md) => self.step.check(md, self.devices)?.0,
            None if self.step.given() => {
                return Err(ParamError::new(Field::Zero, "--zero and --gpus need costs from a model")
                    .hint("give --model or --layers …"))
            }
            None => 1,
        };
        let global_batch = match self.global_batch {
            Some(g) if g % dp != 0 => {
                return Err(ParamError::new(
                    Field::GlobalBatch,
                    format!("the global batch {g} is not a multiple of the {dp} data-parallel replicas"),
                )
                .hint(format!("give --global-batch as a multiple of {dp}, e.g. {}", (g / dp).max(1) * dp)))
            }
            Some(g) => Some(g / dp),
            None => None,
        };
        let ms = match (global_batch, model) {
            (Some(g), Some(md)) if self.keep_micro_batch => {
                if md.micro_batch == 0 || g % md.micro_batch != 0 {
                    return Err(ParamError::new(
                        Field::MicroBatch,
                        format!("the global batch {g} is not a multiple of the micro-batch size {}", md.micro_batch),
                    )
                    .hint("leave --micro-batch out to try every size that divides the global batch"));
                }
                vec![g / md.micro_batch]
            }
            (Some(g), Some(_)) => {
                // Each count's micro-batch is the global batch over it: counts that leave one
                // above what a model takes cannot run.
                let most = crate::model::model_size_limit(Field::MicroBatch);
                let all = microbatch_candidates(self.devices, global_batch);
                let ms: Vec<u32> = all.iter().copied().filter(|&m| g / m <= most).collect();
                if ms.is_empty() {
                    let top = all.last().copied().unwrap_or(1);
                    return Err(ParamError::new(
                        Field::MicroBatch,
                        format!(
                            "--global-batch {g} over at most {top} microbatches leaves micro-batches of {} samples or more, above the {most} a model takes",
                            g / top
                        ),
                    )
                    .hint("give a smaller --global-batch (samples per training step)"));
                }
                ms
            }
            _ => microbatch_candidates(self.devices, global_batch),
        };
        let mut out = Vec::new();
        let mut passes: u64 = 0;
        let mut skipped: Option<ParamError> = None;
        for &m in &ms {
            let micro_batch = match (global_batch, model) {
                (Some(g), _) => Some(g / m),
                (None, Some(model)) => Some(model.micro_batch),
                _ => None,
            };
            // Each layout, and the chunks it is cut for: Megatron's layouts with the embedding
            // and the loss as stages of their own are cut for one chunk count of the looping
            // families ([`own_ends_layouts`]); the rest name one piece per device share.
            let mut layouts: Vec<(Option<String>, Option<u32>)> = model.map_or_else(
                || vec![(None, None)],
                |md| layout_candidates(md, self.devices).into_iter().map(|l| (l, None)).collect(),
            );
            if let Some(md) = model.filter(|_| self.families.iter().any(|f| f.uses(Field::Chunks))) {
                for c in PLAN_CHUNKS {
                    layouts.extend(own_ends_layouts(md, self.devices, c).into_iter().map(|l| (Some(l), Some(c))));
                }
            }
            for (layout, cut_for) in layouts {
                let mut step = None;
                // The vocabulary-parallel families' parameters per piece: the embedding and
                // the LM head spread over every device.
                let mut split_params = None;
                let (costs, piece_params) = match &self.source {
                    CostSource::Model(md) => {
                        let mut md = md.clone();
                        if let Some(b) = micro_batch {
                            md.micro_batch = b;
                        }
                        if layout.is_some() {
                            md.layout = layout.clone();
                        }
                        // A micro-batch this large may take more memory than a model can
                        // hold: that count is skipped, and said only when nothing is left.
                        let derived = match md.derive(self.devices) {
                            Ok(d) => d,
                            Err(e) if global_batch.is_some() && !self.keep_micro_batch => {
                                skipped.get_or_insert(e);
                                continue;
                            }
                            Err(e) => return Err(e),
                        };
                        let spec = StepSpec { global_batch: None, ..self.step.clone() };
                        step = Some(Arc::new((md, spec)));
                        split_params = Some(Arc::new(derived.split_vocab_quantity_profile(|p| p.params)));
                        (derived.costs(), Some(Arc::new(derived.quantity_profile(|p| p.params))))
                    }
                    CostSource::Costs(c) => (c.clone(), None),
                };
                let mut costs = costs;
                costs.p2p = self.p2p;
                if let TradeSpec::Fixed(t) = &self.trade {
                    costs.trade = Some(Arc::clone(t));
                }
                let trade_search = match &self.trade {
                    TradeSpec::Search(s) => Some(*s),
                    _ => None,
                };
                let (fixed_static, piece_params, split_params) = match self.static_memory {
                    StaticMemory::Fixed(s) => (s, None, None),
                    StaticMemory::FromModel => (0.0, piece_params, split_params),
                };
                for &family in &self.families {
                    // A family that splits the vocabulary runs a model's stages without the
                    // embedding and the LM head: the ends are balanced already, so it tries the
                    // even split (or the model's own layout) only.
                    let splits = family.group == crate::families::FamilyGroup::Vocabulary;
                    if splits && layout.is_some() && costs.split_vocab.is_some() {
                        continue;
                    }
                    let chunks: Vec<Option<u32>> = match cut_for {
                        Some(_) if splits || !family.uses(Field::Chunks) => continue,
                        Some(c) => vec![Some(c)],
                        None if family.uses(Field::Chunks) => PLAN_CHUNKS.iter().copied().map(Some).collect(),
                        None => vec![None],
                    };
                    // An MoE model's all-to-all can hide under Megatron's combined 1F1B: the
                    // families that pair passes run plain and paired.
                    let pairs = family.uses(Field::A2aOverlap) && costs.profile.as_ref().is_some_and(|p| p.has_a2a());
                    let pairing: &[bool] = if pairs { &[false, true] } else { &[false] };
                    for (c, &a2a) in chunks.into_iter().flat_map(|c| pairing.iter().map(move |a| (c, a))) {
                        let costs = if splits { costs.vocabulary_parallel() } else { costs.clone() };
                        let mut params = ScheduleParams::new(self.devices, m).with_costs(costs);
                        params.a2a_overlap = a2a;
                        // The F&B time goes to the families that overlap F and B.
                        if !family.uses(Field::Overlap) {
                            params.costs.overlap = None;
                        }
                        params.chunks = c;
                        if model.is_some() {
                            params.units = crate::units::Units::Model;
                        }
                        let candidate = Candidate {
                            family,
                            params,
                            micro_batch,
                            seq: model.map(|md| md.seq),
                            layout: layout.clone(),
                            piece_params: if splits && split_params.is_some() {
                                split_params.clone()
                            } else {
                                piece_params.clone()
                            },
                            fixed_static,
                            limit: self.mem_limit,
                            trade_search,
                            step: step.clone(),
                        };
                        let n = family.pass_count(&family.with_defaults(&candidate.params));
                        passes = passes.saturating_add(if n > MAX_PASSES { 0 } else { n });
                        out.push(candidate);
                    }
                }
            }
        }
        if let (true, Some(e)) = (out.is_empty(), skipped) {
            return Err(e);
        }
        if out.len() > MAX_SWEEP_RUNS {
            return Err(ParamError::new(
                Field::Devices,
                format!("the plan search has {} candidates, more than the {MAX_SWEEP_RUNS} supported", out.len()),
            )
            .hint("use a smaller --global-batch (fewer microbatch counts divide it), or fewer devices"));
        }
        if passes > MAX_SWEEP_PASSES {
            return Err(ParamError::new(
                Field::Devices,
                format!("the plan search's candidates have {passes} passes together, more than the {MAX_SWEEP_PASSES} supported"),
            )
            .hint("use a smaller --global-batch (fewer and smaller microbatch counts), or fewer devices"));
        }
        Ok(out)
    }
}

/// What became of one candidate.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// It fits.
    Fits(Box<Plan>),
    /// It ran, but above the limit: the least memory it took (infinite when it could not
    /// run at all).
    OverLimit(f64),
    /// The family could not take it (the reason), or its search is too slow to try.
    Invalid(String),
    /// Under blocking sends (`--p2p blocking`) its order deadlocks (the stuck sends).
    Deadlocks(String),
    /// Not a candidate after all: the layout tried names one piece per device and the family
    /// cuts more stages (it runs with the even split only).
    NotTried,
}

/// Runs one candidate: the static memory its placement holds, the activation limit a
/// memory-aware family plans under, the simulation, and the check against the limit.
pub fn evaluate(candidate: Candidate) -> Outcome {
    let family = candidate.family;
    if let Some(Refusal::Search(slow, _)) = slow_search(family, &family.with_defaults(&candidate.params), 1) {
        return Outcome::Invalid(format!("{} is too slow to search at this size", slow.what));
    }
    // The static memory depends on the placement only; a placement of the family's own shape
    // at these sizes is what the generator will build.
    let schedule = match crate::registry::generate(family.name, &candidate.params) {
        Ok(s) => s,
        Err(e) => return Outcome::Invalid(e.to_string()),
    };
    // A layout tried for the model names one piece per device: a family that cuts more
    // stages would take fractions of its layers, so it runs with the even split only.
    if let (Some(_), Some(profile)) = (&candidate.layout, &candidate.params.costs.profile) {
        let stages = schedule.placement.stages_per_pipeline() as usize;
        if profile.pieces() != stages && profile.finer.iter().all(|f| f.pieces() != stages) {
            return Outcome::NotTried;
        }
    }
    let chunks = f64::from(schedule.placement.chunks_per_device().max(1));
    let statics = match (&candidate.piece_params, &candidate.step) {
        (Some(p), Some(step)) => {
            let (model, spec) = &**step;
            let zero = spec.zero.unwrap_or(0);
            let dp = model.dp.max(1);
            device_params(p, &schedule.placement)
                .iter()
                .map(|n| crate::step::static_bytes(model, zero, dp, *n, chunks))
                .collect()
        }
        (Some(p), None) => device_params(p, &schedule.placement).iter().map(|n| n * BYTES_PER_PARAMETER).collect(),
        (None, _) => vec![candidate.fixed_static; schedule.devices() as usize],
    };
    let most = statics.iter().copied().fold(0.0, f64::max);
    let plain = match run_at(&candidate, None, Some(most), &statics) {
        Ok(run) if run.memory <= candidate.limit && candidate.params.costs.trade.is_some() => {
            // The user's own trade: priced against the same candidate without it.
            let choice = given_trade(&candidate, &run, most, &statics);
            return fits(candidate, run, choice, statics);
        }
        Ok(run) if run.memory <= candidate.limit => {
            let faster =
                candidate.trade_search.as_ref().and_then(|s| faster_with_trade(&candidate, &run, s, most, &statics));
            return match faster {
                Some((traded, choice)) => fits(candidate, traded, Some(choice), statics),
                None => fits(candidate, run, None, statics),
            };
        }
        Ok(run) => Some(run),
        Err(Failed::Invalid(e)) => return Outcome::Invalid(e),
        Err(Failed::Deadlocks(e)) => return Outcome::Deadlocks(e),
        Err(Failed::NoPlan) => None,
    };
    let Some(search) = candidate.trade_search else {
        return Outcome::OverLimit(plain.map_or(f64::INFINITY, |r| r.memory));
    };
    // The same candidate without a trade, to price one: as it ran, or for a family that could
    // not plan under the limit, at its own default.
    let reference = plain.or_else(|| run_at(&candidate, None, None, &statics).ok());
    let mut best: Option<(Run, Arc<Trade>)> = None;
    let mut least = reference.as_ref().map_or(f64::INFINITY, |r| r.memory);
    let memory_aware = candidate.family.uses(Field::MemLimit);
    for trade in ladder(&search, candidate.params.devices) {
        let trade = Arc::new(trade);
        // A memory-aware family plans with the trade under the limit's activation budget
        // (`passes::generate_with_trade`); at its own default when that does not fit.
        let budgeted = memory_aware.then(|| run_at(&candidate, Some(&trade), Some(most), &statics).ok()).flatten();
        let run = match budgeted.filter(|r| r.memory <= candidate.limit) {
            Some(run) => run,
            None => match run_at(&candidate, Some(&trade), None, &statics) {
                Ok(run) => run,
                Err(_) => continue,
            },
        };
        least = least.min(run.memory);
        let better = |b: &Run| {
            run.analysis.stats.cost < b.analysis.stats.cost
                || (run.analysis.stats.cost == b.analysis.stats.cost && run.memory < b.memory)
        };
        if run.memory <= candidate.limit && best.as_ref().is_none_or(|(b, _)| better(b)) {
            best = Some((run, trade));
        }
    }
    let Some((run, trade)) = best else { return Outcome::OverLimit(least) };
    let choice = match &reference {
        Some(r) => price(trade, &run, r),
        None => TradeChoice { trade, time: 0.0, saved: 0.0 },
    };
    fits(candidate, run, Some(choice), statics)
}

/// What `trade`, as `run` ran it, adds to a step and saves against `reference`, the same
/// candidate without it.
fn price(trade: Arc<Trade>, run: &Run, reference: &Run) -> TradeChoice {
    TradeChoice {
        trade,
        time: run.analysis.stats.cost - reference.analysis.stats.cost,
        saved: reference.memory - run.memory,
    }
}

/// The trade a candidate was given ([`TradeSpec::Fixed`]), as `run` ran it, priced against
/// the same candidate without it (planned under the same budget, or at the family's own
/// default when that does not fit); `None` when the trade does nothing.
fn given_trade(candidate: &Candidate, run: &Run, most: f64, statics: &[f64]) -> Option<TradeChoice> {
    let trade = candidate.params.costs.trade.clone().filter(|t| !t.is_none())?;
    let mut bare = candidate.clone();
    bare.params.costs.trade = None;
    let reference = run_at(&bare, None, Some(most), statics).or_else(|_| run_at(&bare, None, None, statics));
    Some(match reference {
        Ok(r) => price(trade, run, &r),
        Err(_) => TradeChoice { trade, time: 0.0, saved: 0.0 },
    })
}

/// For a memory-aware family that fits without a trade: the fastest setting of the ladder
/// that recomputes on every device (what it plans with, [`Trade::recompute_keep`]),
/// when it fits and makes the step shorter than `plain`: the memory recompute frees holds
/// more forwards in flight.
fn faster_with_trade(
    candidate: &Candidate,
    plain: &Run,
    search: &TradeSearch,
    most: f64,
    statics: &[f64],
) -> Option<(Run, TradeChoice)> {
    if !candidate.family.uses(Field::MemLimit) {
        return None;
    }
    let mut best: Option<(Run, Arc<Trade>)> = None;
    for trade in ladder(search, candidate.params.devices) {
        if trade.recompute_keep(candidate.params.devices).is_none() {
            continue;
        }
        let trade = Arc::new(trade);
        let Ok(run) = run_at(candidate, Some(&trade), Some(most), statics) else { continue };
        let fastest = best.as_ref().map_or(plain.analysis.stats.cost * (1.0 - 1e-9), |(b, _)| b.analysis.stats.cost);
        if run.memory <= candidate.limit && run.analysis.stats.cost < fastest {
            best = Some((run, trade));
        }
    }
    let (run, trade) = best?;
    let choice = price(trade, &run, plain);
    Some((run, choice))
}

/// Why a run did not happen.
enum Failed {
    /// The family cannot plan under the memory it was given.
    NoPlan,
    /// The schedule is wrong (a bug, or parameters the family refuses).
    Invalid(String),
    /// The order deadlocks under blocking sends.
    Deadlocks(String),
}

/// One simulated run of a candidate: the parameters it ran with, its analysis and the worst
/// device's activations plus static memory.
struct Run {
    params: ScheduleParams,
    analysis: crate::analysis::Analysis,
    memory: f64,
}

/// Runs `candidate` with `trade` (none: as it is). With `most` (the largest static memory), a
/// memory-aware family plans under the limit less it; without, at the family's own default,
/// for the trade to bring it under.
fn run_at(
    candidate: &Candidate,
    trade: Option<&Arc<Trade>>,
    most: Option<f64>,
    statics: &[f64],
) -> Result<Run, Failed> {
    let family = candidate.family;
    let mut params = candidate.params.clone();
    if let Some(t) = trade {
        params.costs.trade = Some(Arc::clone(t));
    }
    if let (true, Some(most)) = (family.uses(Field::MemLimit), most) {
        let budget = candidate.limit - most;
        if budget <= 0.0 {
            return Err(Failed::NoPlan);
        }
        params.mem_limit = Some(budget);
    }
    let schedule = crate::registry::generate(family.name, &params).map_err(|_| Failed::NoPlan)?;
    let analysis = crate::analysis::analyze(schedule, &params.costs).map_err(|e| match e {
        crate::analysis::AnalyzeError::Sim(crate::error::SimError::Deadlock(_)) => Failed::Deadlocks(e.to_string()),
        e => Failed::Invalid(e.to_string()),
    })?;
    let memory = analysis.stats.per_device.iter().zip(statics).map(|(d, s)| d.peak_memory + s).fold(0.0, f64::max);
    Ok(Run { params, analysis, memory })
}

/// The plan of a candidate that fits (`run` is its run).
fn fits(mut candidate: Candidate, run: Run, trade: Option<TradeChoice>, statics: Vec<f64>) -> Outcome {
    candidate.params = run.params;
    let analysis = run.analysis;
    let memory = run.memory;
    let stages = analysis.schedule.placement.stages_per_pipeline();
    let m = f64::from(candidate.params.microbatches);
    let samples = m * f64::from(candidate.micro_batch.unwrap_or(1));
    let cost = analysis.stats.cost;
    let step = match &candidate.step {
        Some(inputs) => {
            let (model, spec) = &**inputs;
            let recompute = candidate.params.costs.trade.as_ref().map(|t| t.recompute.clone()).unwrap_or_default();
            match crate::step::whole(model, spec, &analysis, &recompute) {
                Ok(step) => Some(step),
                Err(e) => return Outcome::Invalid(e.to_string()),
            }
        }
        None => None,
    };
    let (throughput, tokens) = match candidate.micro_batch {
        Some(_) if cost > 0.0 => {
            let per_second = samples / (cost * 1e-6);
            (per_second, candidate.seq.map(|s| per_second * f64::from(s)))
        }
        _ if cost > 0.0 => (crate::units::quotient(m, cost), None),
        _ => (0.0, None),
    };
    Outcome::Fits(Box::new(Plan {
        candidate,
        stats: analysis.stats,
        static_memory: statics,
        memory,
        samples,
        throughput,
        tokens_per_second: tokens,
        attribution: None,
        stages,
        trade,
        step,
    }))
}

/// The fastest recompute/offload setting from the [`ladder`] under which `family` at `params`
/// fits `limit` (activations only), or none when it fits as it is: what the playground's "fit
/// under the limit" asks. [`Outcome::OverLimit`] names the least memory the ladder reaches.
pub fn fit_trade(family: &'static Family, params: &ScheduleParams, limit: f64, search: TradeSearch) -> Outcome {
    let mut params = params.clone();
    params.mem_limit = None;
    params.costs.trade = None;
    evaluate(Candidate {
        family,
        params,
        micro_batch: None,
        seq: None,
        layout: None,
        piece_params: None,
        fixed_static: 0.0,
        limit,
        trade_search: Some(search),
        step: None,
    })
}

/// Splits a plan's bubble (generated again and simulated without communication: done for the plans shown only).
pub fn attribute_plan(plan: &mut Plan) {
    let c = &plan.candidate;
    if let Ok(schedule) = crate::registry::generate(c.family.name, &c.params) {
        plan.attribution = overall(&schedule, &c.params.costs, &plan.stats).ok();
    }
}

impl PlanSearch {
    /// Gathers outcomes and ranks the plans: highest [`Plan::rate`] first (the whole step's
    /// tokens/s/GPU with a model), then least memory.
    pub fn collect(outcomes: impl IntoIterator<Item = Outcome>) -> PlanSearch {
        let mut out = PlanSearch::default();
        for o in outcomes {
            match o {
                Outcome::Fits(p) => out.plans.push(*p),
                Outcome::OverLimit(least) => {
                    out.over_limit += 1;
                    if least.is_finite() {
                        out.least_memory = Some(out.least_memory.map_or(least, |l: f64| l.min(least)));
                    }
                }
                Outcome::Invalid(_) => out.invalid += 1,
                Outcome::Deadlocks(_) => out.deadlocked += 1,
                Outcome::NotTried => out.not_tried += 1,
            }
        }
        crate::units::sort::sort_by(&mut out.plans, |a, b| {
            b.rate().total_cmp(&a.rate()).then(a.memory.total_cmp(&b.memory))
        });
        out
    }
}

/// The whole search on one thread (the CLI spreads [`evaluate`] over its cores).
///
/// # Errors
/// As [`PlanSpec::candidates`].
pub fn plan(spec: &PlanSpec) -> Result<PlanSearch, ParamError> {
    Ok(PlanSearch::collect(spec.candidates()?.into_iter().map(evaluate)))
}

/// Every family, for [`PlanSpec::families`].
pub fn all_families() -> Vec<&'static Family> {
    FAMILIES.iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        Model::new(32, 4096, 32, 2048, 1, 50_000)
    }

    #[test]
    fn layouts_move_layers_off_the_ends() {
        let l = layout_candidates(&model(), 8);
        assert_eq!(l[0], None);
        assert_eq!(l[1].as_deref(), Some("4,5,4,4,4,4,4,3"));
        assert_eq!(l[2].as_deref(), Some("4,5,5,4,4,4,4,2"));
        assert_eq!(l[3].as_deref(), Some("3,5,4,4,4,4,4,4"));
        assert_eq!(l[4].as_deref(), Some("3,5,5,4,4,4,4,3"));
        let given = Model { layout: Some("4,4,4,4,4,4,4,4".into()), ..model() };
        assert_eq!(layout_candidates(&given, 8), vec![None]);
        for spec in l.into_iter().flatten() {
            assert_eq!(Layout::parse(&spec, 32, 8).unwrap().layers(), 32, "{spec}");
        }
    }

    #[test]
    fn microbatches_divide_the_global_batch() {
        assert_eq!(microbatch_candidates(4, Some(24)), vec![1, 2, 3, 4, 6, 8, 12, 24]);
        assert_eq!(microbatch_candidates(2, Some(1024)), vec![1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(microbatch_candidates(4, None), vec![4, 8, 16, 32]);
    }

    #[test]
    fn device_params_follow_the_placement() {
        let values = [10.0, 20.0, 30.0, 40.0];
        let pieces = CostProfile { f: values.to_vec(), ..CostProfile::uniform(&Costs::default(), 4) };
        assert_eq!(device_params(&pieces, &Placement::linear(4)), values.to_vec());
        // V: device 0 holds the first half of share 0 and the second half of share 3.
        assert_eq!(device_params(&pieces, &Placement::v_shape(4)), vec![25.0, 25.0, 25.0, 25.0]);
        // Two replicas: every device holds share k and share P-1-k.
        assert_eq!(device_params(&pieces, &Placement::two_directional(4)), vec![50.0; 4]);
        let total: f64 = device_params(&pieces, &Placement::interleaved(4, 3)).iter().sum();
        assert!((total - 100.0).abs() < 1e-9);
    }

    #[test]
    fn every_plan_fits_its_limit_with_static_memory() {
        let gib = 1_073_741_824.0;
        let spec = PlanSpec {
            devices: 4,
            mem_limit: 40.0 * gib,
            source: CostSource::Model(Model::new(16, 2048, 16, 2048, 1, 32_000)),
            global_batch: Some(32),
            keep_micro_batch: false,
            static_memory: StaticMemory::FromModel,
            families: all_families(),
            trade: TradeSpec::None,
            step: StepSpec::default(),
            p2p: P2p::Async,
        };
        let found = plan(&spec).unwrap();
        assert!(!found.plans.is_empty());
        assert!(found.over_limit > 0, "the limit binds for some candidates");
        for p in &found.plans {
            assert!(p.memory <= spec.mem_limit);
            assert_eq!(p.samples, 32.0);
            // Re-simulated from scratch, the activation peak plus static memory still fits.
            let again = crate::run(p.candidate.family.name, &p.candidate.params).unwrap();
            for (d, s) in again.stats.per_device.iter().zip(&p.static_memory) {
                assert!(d.peak_memory + s <= spec.mem_limit);
            }
        }
        // With a model, plans rank by the whole step's tokens/s/GPU.
        assert!(found.plans.iter().all(|p| p.step.as_ref().is_some_and(|s| s.tokens_per_gpu_s == p.rate())));
        assert!(found.plans.windows(2).all(|w| w[0].rate() >= w[1].rate()));
        // 18 bytes per parameter: the linear families' device 0 holds the embedding.
        let model = Model::new(16, 2048, 16, 2048, 1, 32_000);
        let d = model.derive(4).unwrap();
        let onef = found.plans.iter().find(|p| p.candidate.family.name == "1f1b" && p.candidate.layout.is_none());
        if let Some(p) = onef {
            assert!((p.static_memory[0] - 18.0 * d.shares()[0].params).abs() < 1.0);
        }
    }

    /// Under a limit 1F1B's first device cannot meet, the search recomputes or offloads:
    /// every traded plan, generated again from its parameters and simulated, fits, and its
    /// reported time and saving equal the difference to the same run without the trade.
    #[test]
    fn a_plan_that_does_not_fit_trades_recompute_or_offload_and_reports_its_price() {
        let costs = Costs { comm: 0.1, ..Costs::fbw(1.0, 1.0, 1.0) };
        let spec = |limit: f64, trade: TradeSpec| PlanSpec {
            devices: 4,
            mem_limit: limit,
            source: CostSource::Costs(costs.clone()),
            global_batch: None,
            keep_micro_batch: false,
            static_memory: StaticMemory::Fixed(0.0),
            families: vec![crate::family("1f1b").unwrap(), crate::family("gpipe").unwrap()],
            trade,
            step: StepSpec::default(),
            p2p: P2p::Async,
        };
        let search = TradeSpec::Search(TradeSearch { copy_time: Some(0.02), ..TradeSearch::default() });
        assert!(plan(&spec(2.0, TradeSpec::None)).unwrap().plans.is_empty(), "1F1B holds 4 forwards on device 0");
        let found = plan(&spec(2.0, search.clone())).unwrap();
        assert!(!found.plans.is_empty());
        for p in &found.plans {
            let choice = p.trade.as_ref().expect("only a trade fits");
            let traded = crate::run(p.candidate.family.name, &p.candidate.params).unwrap();
            assert!(traded.stats.peak_memory <= 2.0 + 1e-12);
            assert_eq!(traded.stats.cost, p.stats.cost);
            let plain_params = ScheduleParams { costs: costs.clone(), ..p.candidate.params.clone() };
            let plain = crate::run(p.candidate.family.name, &plain_params).unwrap();
            assert!((choice.time - (traded.stats.cost - plain.stats.cost)).abs() < 1e-9);
            assert!((choice.saved - (plain.stats.peak_memory - traded.stats.peak_memory)).abs() < 1e-9);
            assert!(choice.time >= -1e-9 && choice.saved > 0.0);
        }
        // Below what full recompute and offload everywhere reach, nothing fits and the search
        // names the least memory that would.
        let found = plan(&spec(0.01, search.clone())).unwrap();
        assert!(found.plans.is_empty());
        let least = found.least_memory.expect("candidates ran");
        assert!(least < 2.0, "{least}");
        assert!(!plan(&spec(least, search.clone())).unwrap().plans.is_empty(), "the least memory named fits");
        assert!(plan(&spec(least * 0.999, search.clone())).unwrap().plans.is_empty());
        // One run, as the playground asks: the same choice as the plan of the same candidate.
        let one = found_plan(&spec(2.0, search.clone()), "1f1b", 8);
        let params = ScheduleParams::new(4, 8).with_costs(costs.clone());
        let TradeSpec::Search(s) = search else { unreachable!() };
        let Outcome::Fits(fit) = fit_trade(crate::family("1f1b").unwrap(), &params, 2.0, s) else { panic!("fits") };
        assert_eq!(fit.trade, one.trade);
        assert_eq!(fit.stats.cost, one.stats.cost);
    }

    /// A memory-aware family that fits without a trade still tries recompute everywhere: at
    /// half of 1F1B's memory zb-auto with full recompute holds more forwards in flight and
    /// runs faster, so the fit chooses it, priced against the plain plan (a negative time).
    #[test]
    fn a_memory_aware_family_takes_recompute_when_it_runs_faster() {
        let params = ScheduleParams::new(4, 12).with_costs(Costs { comm: 0.1, ..Costs::fbw(1.0, 1.0, 1.0) });
        let search = TradeSearch { copy_time: None, ..TradeSearch::default() };
        let Outcome::Fits(fit) = fit_trade(crate::family("zb-auto").unwrap(), &params, 2.0, search) else {
            panic!("fits")
        };
        let choice = fit.trade.as_ref().expect("recompute is faster");
        let plain = crate::run("zb-auto", &params.clone().with_mem_limit(2.0)).expect("plans");
        let again = crate::run("zb-auto", &fit.candidate.params).expect("plans");
        assert_eq!(again.stats.cost, fit.stats.cost);
        assert!(again.stats.peak_memory <= 2.0 + 1e-12);
        assert!((choice.time - (again.stats.cost - plain.stats.cost)).abs() < 1e-9);
        assert!(choice.time < 0.0, "{}", choice.time);
        assert!((choice.saved - (plain.stats.peak_memory - again.stats.peak_memory)).abs() < 1e-9);
        assert_eq!(crate::plan::per_step(choice.time, |v| format!("{v}")), format!("−{} per step", -choice.time));
    }

    /// Under blocking sends every candidate is simulated blocking: zb-v's order deadlocks and
    /// is counted apart, and 1F1B with communication costs what `simulate --p2p blocking` gives.
    #[test]
    fn plans_are_searched_under_the_send_mode() {
        let costs = Costs { comm: 0.3, ..Costs::default() };
        let spec = |p2p: P2p| PlanSpec {
            devices: 4,
            mem_limit: 100.0,
            source: CostSource::Costs(costs.clone()),
            global_batch: None,
            keep_micro_batch: false,
            static_memory: StaticMemory::Fixed(0.0),
            families: vec![crate::family("1f1b").unwrap(), crate::family("zb-v").unwrap()],
            trade: TradeSpec::None,
            step: StepSpec::default(),
            p2p,
        };
        let asynchronous = plan(&spec(P2p::Async)).unwrap();
        assert_eq!(asynchronous.deadlocked, 0);
        assert!(asynchronous.plans.iter().any(|p| p.candidate.family.name == "zb-v"));
        let blocking = plan(&spec(P2p::Blocking)).unwrap();
        assert!(blocking.deadlocked > 0, "zb-v's order deadlocks under blocking sends");
        assert!(blocking.plans.iter().all(|p| p.candidate.family.name != "zb-v"));
        let cost = |found: &PlanSearch| {
            let p =
                found.plans.iter().find(|p| p.candidate.family.name == "1f1b" && p.candidate.params.microbatches == 32);
            p.expect("1f1b at M 32").stats.cost
        };
        let mut params = ScheduleParams::new(4, 32).with_costs(Costs { p2p: P2p::Blocking, ..costs.clone() });
        params.mem_limit = None;
        let schedule = crate::registry::generate("1f1b", &params).unwrap();
        let simulated = crate::analysis::analyze(schedule, &params.costs).unwrap().stats.cost;
        assert!(cost(&blocking) > cost(&asynchronous));
        assert_eq!(cost(&blocking), simulated);
    }

    fn found_plan(spec: &PlanSpec, family: &str, microbatches: u32) -> Plan {
        let found = plan(spec).unwrap();
        let p = found
            .plans
            .iter()
            .find(|p| p.candidate.family.name == family && p.candidate.params.microbatches == microbatches);
        p.expect("the plan").clone()
    }

    #[test]
    fn bad_requests_are_refused() {
        let spec = PlanSpec {
            devices: 4,
            mem_limit: 10.0,
            source: CostSource::Costs(Costs::default()),
            global_batch: Some(8),
            keep_micro_batch: false,
            static_memory: StaticMemory::Fixed(0.0),
            families: all_families(),
            trade: TradeSpec::None,
            step: StepSpec::default(),
            p2p: P2p::Async,
        };
        assert!(spec.candidates().unwrap_err().message.contains("--global-batch needs costs from a model"));
        let spec = PlanSpec { global_batch: None, static_memory: StaticMemory::FromModel, ..spec };
        assert!(spec.candidates().unwrap_err().message.contains("needs a model"));
    }
}
