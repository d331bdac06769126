//! What a family is: its registry entry ([`Family`]: names, options with their defaults,
//! constraints, pass count, generator, closed form) and the checks every generator shares.
//! Uses params, schedule, error and the formulas' types.

use super::formula::{Assumption, BubbleQuantity, Explanation, Needed, Sym};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::{counted, Schedule};

/// How the picker groups families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FamilyGroup {
    /// GPipe, 1F1B and Megatron's interleaving.
    Classic,
    /// Split backward (B and W) on a linear pipeline.
    ZeroBubble,
    /// Two or more chunks per device in a V (or wave) placement.
    VShape,
    /// Two model replicas running in opposite directions.
    TwoDirectional,
    /// Microbatches split along the sequence.
    SequenceSplit,
    /// The output and input layers split by vocabulary over every device.
    Vocabulary,
}

impl FamilyGroup {
    /// Every group, in picker order.
    pub const ALL: [FamilyGroup; 6] = [
        FamilyGroup::Classic,
        FamilyGroup::ZeroBubble,
        FamilyGroup::VShape,
        FamilyGroup::TwoDirectional,
        FamilyGroup::SequenceSplit,
        FamilyGroup::Vocabulary,
    ];

    /// The group's heading.
    pub fn title(self) -> &'static str {
        match self {
            FamilyGroup::Classic => "Classic",
            FamilyGroup::ZeroBubble => "Zero Bubble",
            FamilyGroup::VShape => "V-shape",
            FamilyGroup::TwoDirectional => "Two-directional",
            FamilyGroup::SequenceSplit => "Sequence-split",
            FamilyGroup::Vocabulary => "Vocabulary-parallel",
        }
    }
}

/// A closed-form prediction for a family, shown next to the simulated value.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// Predicted bubble (the quantity `bubble_quantity` names), when the family has a formula
    /// for these parameters.
    pub bubble: Option<f64>,
    /// The bubble formula as written in its paper.
    pub bubble_formula: &'static str,
    /// What `bubble` predicts.
    pub bubble_quantity: BubbleQuantity,
    /// Predicted peak activation memory per device, in the unit of mem-f.
    pub peak_memory: Option<Vec<f64>>,
    /// The memory formula as written in its paper.
    pub memory_formula: &'static str,
}

/// What an option is when it is not given.
#[derive(Clone, Copy, Debug)]
pub enum OptionDefault {
    /// A fixed count (chunks, waves, sequence splits).
    Count(u32),
    /// The number of devices (interleaved 1F1B's group).
    Devices,
    /// Computed from the other parameters (a family's default memory limit).
    Derived(fn(&ScheduleParams) -> f64),
    /// No value: leaving the option unset has its own meaning (no overlap gain).
    Unset,
}

/// A setting a family reads beyond devices, microbatches, costs and memory, with the value its
/// generator uses when the setting is not given.
#[derive(Clone, Copy, Debug)]
pub struct FamilyOption {
    /// The setting.
    pub field: Field,
    /// Its value when not given.
    pub default: OptionDefault,
}

impl FamilyOption {
    /// A count option with a fixed default.
    pub const fn count(field: Field, default: u32) -> FamilyOption {
        FamilyOption { field, default: OptionDefault::Count(default) }
    }

    /// The setting's name (CLI flag without `--`, URL key).
    pub fn name(&self) -> &'static str {
        self.field.name()
    }

    /// The value the generator uses for `params` when the option is not given (`None`: unset
    /// has its own meaning).
    pub fn default_value(&self, params: &ScheduleParams) -> Option<f64> {
        match self.default {
            OptionDefault::Count(n) => Some(f64::from(n)),
            OptionDefault::Devices => Some(f64::from(params.devices)),
            OptionDefault::Derived(f) => Some(f(params)),
            OptionDefault::Unset => None,
        }
    }
}

/// A search that grows faster than the passes it outputs, so a live view should refuse it
/// beyond a size (the passes bound is not enough).
#[derive(Clone, Copy, Debug)]
pub struct SlowSearch {
    /// What runs slowly, for messages ("the adaptive V search at unequal costs").
    pub what: &'static str,
    /// The search's size for these parameters, in the unit of `live_limit`; `None` when it
    /// stays fast whatever the size.
    pub size: fn(&ScheduleParams) -> Option<u64>,
    /// The size that takes about half a second in a browser.
    pub live_limit: u64,
    /// What the size counts, for messages ("devices × microbatches").
    pub unit: &'static str,
    /// How to stay under the limit.
    pub hint: &'static str,
}

/// A schedule family: its names, documentation, options, size and generator. The only place
/// a family's facts live: the CLI, the app and the tests read them from here.
#[derive(Clone, Copy, Debug)]
pub struct Family {
    /// The name used by the CLI (`--schedule`) and the URL (`schedule=`).
    pub name: &'static str,
    /// The display name.
    pub title: &'static str,
    /// Picker group.
    pub group: FamilyGroup,
    /// One line: what the schedule does.
    pub summary: &'static str,
    /// The paper or code it comes from.
    pub reference: &'static str,
    /// A link to that reference.
    pub url: &'static str,
    /// The settings this family reads beyond devices, microbatches, costs and memory, with
    /// their defaults.
    pub options: &'static [FamilyOption],
    /// The constraints on its parameters, in words.
    pub constraints: &'static str,
    /// The exact number of passes the family generates for these parameters (options not
    /// given take their defaults); saturates instead of overflowing. Bounds the size before
    /// any work is done.
    pub passes: fn(&ScheduleParams) -> u64,
    /// A search that needs a tighter live bound than its passes, if any.
    pub slow_search: Option<SlowSearch>,
    /// What one of its passes costs to generate and simulate, in plain passes (1 for most
    /// families): [`crate::live::place`] weighs a search-heavy generator by it when it decides
    /// whether a run is small enough for the page.
    pub page_weight: u64,
    /// Generates the per-device orders from parameters already checked by [`generate`]
    /// (common checks, unused options, size).
    pub generate: fn(&ScheduleParams) -> Result<Schedule, ParamError>,
    /// The closed-form prediction, when the family has one for these parameters.
    pub predict: fn(&ScheduleParams) -> Option<Prediction>,
    /// The closed forms as formulas with their terms, sources and assumptions, when the
    /// family has them (its `predict` reads its numbers from them).
    pub explain: fn(&ScheduleParams) -> Option<Explanation>,
    /// Whether PipeOffload's own copy placement (`--offload pipeoffload`, written for its
    /// grouped interleaved schedule) runs on this family's schedule.
    pub pipeoffload: bool,
}

/// A paper or code that families come from: how it is cited and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paper {
    /// The citation ([`Family::reference`]).
    pub reference: &'static str,
    /// A link to it ([`Family::url`]).
    pub url: &'static str,
}

/// Qi et al.'s Zero Bubble paper, the source of ZB-H1, ZB-H2 and ZB-1p/2p.
pub const ZERO_BUBBLE: Paper = Paper {
    reference: "Qi et al., Zero Bubble Pipeline Parallelism (ICLR 2024)",
    url: "https://arxiv.org/abs/2401.10241",
};

/// The Zero Bubble paper's V schedules (its arXiv v2, §6): ZB-V and its handcrafted pattern.
pub const ZERO_BUBBLE_V: Paper =
    Paper { reference: "Qi et al., Zero Bubble Pipeline Parallelism (arXiv v2, §6)", ..ZERO_BUBBLE };

impl Family {
    /// What an entry that does not say otherwise has: no options, no constraints beyond the
    /// device and microbatch counts, no slow search and no closed form. The facts every family
    /// must state (names, group, summary, reference, passes, generator) are blank here; an
    /// entry states them and takes the rest with `..Family::DEFAULTS` (the registry tests check
    /// that none is left blank).
    pub const DEFAULTS: Family = Family {
        name: "",
        title: "",
        group: FamilyGroup::Classic,
        summary: "",
        reference: "",
        url: "",
        options: &[],
        constraints: "any devices and microbatches",
        passes: no_passes,
        slow_search: None,
        page_weight: 1,
        generate: no_generator,
        predict: no_prediction,
        explain: no_explanation,
        pipeoffload: false,
    };

    /// [`Family::DEFAULTS`] citing `paper`.
    pub const fn citing(paper: Paper) -> Family {
        Family { reference: paper.reference, url: paper.url, ..Family::DEFAULTS }
    }

    /// `params` at the costs this family runs at: a vocabulary-parallel family's with a
    /// model's vocabulary split over every device ([`crate::Costs::vocabulary_parallel`]: the
    /// stages without the embedding and the LM head, the shards priced); any other family's as
    /// they are.
    pub fn at_its_costs<'a>(&self, params: &'a ScheduleParams) -> std::borrow::Cow<'a, ScheduleParams> {
        if self.group == FamilyGroup::Vocabulary && params.costs.split_vocab.is_some() {
            let mut p = params.clone();
            p.costs = params.costs.vocabulary_parallel();
            std::borrow::Cow::Owned(p)
        } else {
            std::borrow::Cow::Borrowed(params)
        }
    }

    /// What the family does with these costs that the user should know, when it runs them
    /// otherwise than they might expect: an output-layer shard longer than a stage's forward
    /// for a vocabulary-parallel family ([`super::vocab_common::long_output_layer_note`]).
    pub fn notes(&self, params: &ScheduleParams) -> Vec<String> {
        if self.group != FamilyGroup::Vocabulary {
            return Vec::new();
        }
        super::vocab_common::long_output_layer_note(&self.at_its_costs(params), self.name).into_iter().collect()
    }

    /// `params` without the options this family does not read (chunks, group, waves,
    /// sequence splits, F&B time), at the costs it runs at ([`Family::at_its_costs`]), so settings carried over from another family — a
    /// playground's sliders, a permalink — never trip [`reject_unused`].
    pub fn own_params(&self, params: &ScheduleParams) -> ScheduleParams {
        let mut p = self.at_its_costs(params).into_owned();
        let keep = |f: Field| self.uses(f);
        if !keep(Field::Chunks) {
            p.chunks = None;
        }
        if !keep(Field::Group) {
            p.group = None;
        }
        if !keep(Field::Waves) {
            p.waves = None;
        }
        if !keep(Field::SeqSplits) {
            p.seq_splits = None;
        }
        if !keep(Field::Overlap) {
            p.costs.overlap = None;
        }
        if !keep(Field::A2aOverlap) {
            p.a2a_overlap = false;
        }
        p
    }

    /// The closed-form prediction for `params`, or `None` when the family has none there — in
    /// particular when stages cost different amounts, or recompute or offload is on, where no
    /// published formula applies.
    pub fn prediction(&self, params: &ScheduleParams) -> Option<Prediction> {
        let params = &*self.at_its_costs(params);
        // The closed forms know equal stages only, and no recompute or offload.
        if !params.costs.is_uniform() || params.costs.trade.as_ref().is_some_and(|t| !t.is_none()) {
            return None;
        }
        (self.predict)(params)
    }

    /// The closed forms at `params` (options not given take their defaults), with the
    /// conditions every closed form needs first: equal stages, no recompute or offload.
    /// `None` when the family has no formula.
    pub fn explanation(&self, params: &ScheduleParams) -> Option<Explanation> {
        let mut e = (self.explain)(&self.own_params(params))?;
        let traded = params.costs.trade.as_ref().is_some_and(|t| !t.is_none());
        let profile = params.costs.profile.as_deref();
        let common = [
            Assumption::new("equal stages (one cost per pass kind)", profile.is_none_or(|p| p.is_uniform())),
            Assumption::new("no recompute or offload", !traded),
            // An overlapped pair hides its all-to-all (StageCosts::pair_in_phases); no formula does.
            Assumption::new("no expert all-to-all inside the passes", !profile.is_some_and(|p| p.has_a2a())),
        ];
        e.assumptions.splice(0..0, common);
        // Every family's closed forms time asynchronous sends; said only when it breaks, so
        // the async explanations stay as they were.
        let sends = Assumption::async_sends(params);
        if !sends.holds {
            e.assumptions.push(sends);
        }
        if self.uses(Field::A2aOverlap) && params.a2a_overlap {
            // The closed forms are the plain orders': combined 1F1B warms up one more forward
            // and holds one more microbatch (or chunk) in flight.
            e.assumptions.push(Assumption::new("no --a2a-overlap (the formulas are the unpaired 1F1B orders')", false));
        }
        Some(e)
    }

    /// Whether the family reads `field`.
    pub fn uses(&self, field: Field) -> bool {
        self.options.iter().any(|o| o.field == field)
    }

    /// The option for `field`, if the family reads it.
    pub fn option(&self, field: Field) -> Option<&'static FamilyOption> {
        self.options.iter().find(|o| o.field == field)
    }

    /// `params` with every option the family reads and that is not given set to its default
    /// (options with no default value stay unset): the parameters the generator really uses.
    pub fn with_defaults(&self, params: &ScheduleParams) -> ScheduleParams {
        let mut p = params.clone();
        for option in self.options {
            let Some(value) = option.default_value(params) else { continue };
            let count = value as u32;
            match option.field {
                Field::Chunks => p.chunks = p.chunks.or(Some(count)),
                Field::Group => p.group = p.group.or(Some(count)),
                Field::Waves => p.waves = p.waves.or(Some(count)),
                Field::SeqSplits => p.seq_splits = p.seq_splits.or(Some(count)),
                Field::Overlap => p.costs.overlap = p.costs.overlap.or(Some(value)),
                Field::MemLimit => p.mem_limit = p.mem_limit.or(Some(value)),
                _ => {}
            }
        }
        p
    }

    /// The exact number of passes of this family's schedule for `params`.
    pub fn pass_count(&self, params: &ScheduleParams) -> u64 {
        (self.passes)(params)
    }

    /// Checks and generates: the common checks, options the family does not read, the size
    /// (from [`Family::passes`], before any work), the generator, then the recompute and
    /// offload passes the costs' trade asks for ([`crate::passes::apply`]); a memory-aware family
    /// plans with what a recomputing forward holds ([`crate::passes::generate_with_trade`]).
    ///
    /// # Errors
    /// A [`ParamError`] naming the setting to change.
    pub fn generate(&self, params: &ScheduleParams) -> Result<Schedule, ParamError> {
        let params = &*self.at_its_costs(params);
        params.check_common()?;
        reject_unused(params, self)?;
        reject_a2a_overlap(params, self)?;
        reject_pipeoffload(params, self)?;
        params.check_passes(self.pass_count(params))?;
        crate::passes::generate_with_trade(params, self.generate, self.uses(Field::MemLimit))
    }

    /// A heading for a schedule of this family: its title and the sizes that shape it, with
    /// the memory limit in `units` (`limit 80 GiB` for a model).
    pub fn label(&self, params: &ScheduleParams, units: crate::units::Units) -> String {
        let mut out = format!(
            "{} · {} · {}",
            self.title,
            counted(params.devices, "device", "devices"),
            counted(params.microbatches, "microbatch", "microbatches")
        );
        let options = [
            (Field::Chunks, params.chunks, "chunk", "chunks"),
            (Field::Group, params.group, "group", "group"),
            (Field::Waves, params.waves, "wave", "waves"),
            (Field::SeqSplits, params.seq_splits, "sequence split", "sequence splits"),
        ];
        for (field, value, one, many) in options {
            if let (true, Some(v)) = (self.uses(field), value) {
                out.push_str(&format!(" · {}", counted(v, one, many)));
            }
        }
        if let (true, Some(limit)) = (self.uses(Field::MemLimit), params.mem_limit) {
            out.push_str(&format!(" · limit {}", units.memory(limit)));
        }
        if self.uses(Field::A2aOverlap) && params.a2a_overlap {
            out.push_str(" · a2a overlap");
        }
        out
    }
}

/// [`Family::DEFAULTS`]' pass count, for an entry that does not state one: none.
fn no_passes(_: &ScheduleParams) -> u64 {
    0
}

/// [`Family::DEFAULTS`]' generator, for an entry that does not state one: an error.
fn no_generator(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family has no generator"))
}

impl Explanation {
    /// The prediction `simulate` shows: each value only where its assumptions hold, memory per
    /// device; `bubble_formula` and `memory_formula` as the papers write them.
    pub fn prediction(&self, bubble_formula: &'static str, memory_formula: &'static str) -> Prediction {
        let bubble = self.bubble_value().filter(|_| self.holds(Needed::Bubble));
        let peak_memory = match &self.memory {
            Some(f) if self.holds(Needed::Memory) => Some(if f.per_device {
                f.per_device_values(&self.vars)
            } else {
                vec![f.eval(&self.vars); self.vars.get(Sym::P) as usize]
            }),
            _ => None,
        };
        Prediction { bubble, bubble_formula, bubble_quantity: self.quantity, peak_memory, memory_formula }
    }
}

/// A family with no formulas.
pub(crate) fn no_explanation(_: &ScheduleParams) -> Option<Explanation> {
    None
}

/// A family with no closed form.
pub(crate) fn no_prediction(_: &ScheduleParams) -> Option<Prediction> {
    None
}

/// The count option `field` as the generator reads it: `value` when given, else `default`; it
/// must be at least 1, and `hint` says what the smallest counts mean.
pub(crate) fn count_option(field: Field, value: Option<u32>, default: u32, hint: &str) -> Result<u32, ParamError> {
    match value.unwrap_or(default) {
        0 => Err(ParamError::new(field, format!("{} must be at least 1, found 0", field.name())).hint(hint)),
        count => Ok(count),
    }
}

/// Passes of a family with `K` passes per device and microbatch (`P·M·K`).
pub(crate) fn per_device_microbatch<const K: u64>(params: &ScheduleParams) -> u64 {
    u64::from(params.devices).saturating_mul(u64::from(params.microbatches)).saturating_mul(K)
}

/// Passes of a family with `per_chunk` passes per device, microbatch and one of `chunks` chunks
/// per device (`P·M·chunks·per_chunk`).
pub(crate) fn per_chunk(params: &ScheduleParams, chunks: u32, per_chunk: u64) -> u64 {
    per_device_microbatch::<1>(params).saturating_mul(u64::from(chunks)).saturating_mul(per_chunk)
}

/// Rejects the options (`chunks`, `group`, `waves`, `seq-splits`, `overlap`) a family does not
/// read, so a user who sets one learns it has no effect.
/// The family PipeOffload's placement was written for (the one entry with `pipeoffload: true`).
pub(crate) const PIPEOFFLOAD_FAMILY: &str = "group-interleaved";

/// Refuses PipeOffload's placement for a family it was not written for: its slot grid follows
/// the grouped interleaved schedule's waits, so on another schedule it finds nothing to copy.
fn reject_pipeoffload(params: &ScheduleParams, family: &Family) -> Result<(), ParamError> {
    let asked = params.costs.trade.as_deref().is_some_and(|t| t.offload == crate::trade::Offload::PipeOffload);
    if !asked || family.pipeoffload {
        return Ok(());
    }
    let own = PIPEOFFLOAD_FAMILY;
    Err(ParamError::new(
        Field::Offload,
        format!("{} cannot take --offload pipeoffload: it is PipeOffload's own placement for {own}", family.name),
    )
    .hint("use --offload auto (every activation whose wait hides the copies) or a fraction, which suit any family")
    .hint(format!("or run -s {own} for PipeOffload's schedule")))
}

/// The vocabulary-parallel families ([`FamilyGroup::Vocabulary`]; the registry's tests hold
/// the two lists equal).
pub(crate) const VOCABULARY_FAMILIES: [&str; 5] =
    ["vocab-1", "vocab-2", "interlaced-vocab", "v-half-vocab", "v-half-vocab-1"];

/// The families that pair passes for `--a2a-overlap`: those whose entry reads it (the
/// registry's tests hold the two lists equal; the registry sits above this module).
pub(crate) const A2A_OVERLAP_FAMILIES: [&str; 2] = ["1f1b", "interleaved-1f1b"];

/// Refuses `--a2a-overlap` where it cannot work: on a family that cannot pair its steady-state
/// passes (it is Megatron's combined 1F1B, written for the 1F1B orders), and on costs with no
/// expert all-to-all inside the passes (a dense model, or experts not split over ranks): the
/// pairs would hide nothing and the extra warm-up forward would only cost memory.
fn reject_a2a_overlap(params: &ScheduleParams, family: &Family) -> Result<(), ParamError> {
    if !params.a2a_overlap {
        return Ok(());
    }
    if !family.uses(Field::A2aOverlap) {
        let pairing = A2A_OVERLAP_FAMILIES.join(" or -s ");
        return Err(ParamError::new(
            Field::A2aOverlap,
            format!("{} cannot take --a2a-overlap: it pairs the steady-state F and B of 1F1B's orders", family.name),
        )
        .hint(format!("use -s {pairing}, or remove --a2a-overlap"))
        .hint(
            "dualpipe and dualpipe-v pair their passes already (their F&B pairs hide the all-to-all without the flag)",
        ));
    }
    if !params.costs.profile.as_deref().is_some_and(|p| p.has_a2a()) {
        return Err(ParamError::new(
            Field::A2aOverlap,
            "--a2a-overlap hides the expert all-to-all inside the passes, but these costs have none: \
             a dense model, or experts not split over ranks (--ep 1)",
        )
        .hint("give a mixture-of-experts model split over expert-parallel ranks: e.g. --model qwen3-235b-a22b (EP 8), or --experts E with --ep 2 or more")
        .hint("or remove --a2a-overlap"));
    }
    Ok(())
}

fn reject_unused(params: &ScheduleParams, family: &Family) -> Result<(), ParamError> {
    let given = [
        (Field::Chunks, params.chunks.is_some()),
        (Field::Group, params.group.is_some()),
        (Field::Waves, params.waves.is_some()),
        (Field::SeqSplits, params.seq_splits.is_some()),
        (Field::Overlap, params.costs.overlap.is_some()),
    ];
    for (field, set) in given {
        if set && !family.uses(field) {
            return Err(ParamError::new(field, format!("{} does not take --{}", family.name, field.name()))
                .hint(format!("remove --{}, or pick a family that uses it (see `bubblescope list`)", field.name())));
        }
    }
    Ok(())
}

/// The error for vocabulary-shard costs (s, t) when none of `families` splits the output
/// layer by vocabulary: they would change nothing. `None` when no such cost is set, or a
/// family uses them.
pub fn unused_vocabulary(families: &[&Family], costs: &crate::params::Costs) -> Option<ParamError> {
    if costs.vocab.is_none() || families.is_empty() || families.iter().any(|f| f.group == FamilyGroup::Vocabulary) {
        return None;
    }
    let names: Vec<&str> = families.iter().map(|f| f.name).collect();
    let (who, verb) = match names.as_slice() {
        [one] => ((*one).to_string(), "does"),
        [rest @ .., last] => (format!("{} and {last}", rest.join(", ")), "do"),
        [] => return None,
    };
    Some(
        ParamError::new(
            Field::S,
            format!("{who} {verb} not split the output layer by vocabulary, so s and t (its shards' times) would change nothing"),
        )
        .hint(format!(
            "remove --s and --t, or pick a vocabulary-parallel family: {}",
            VOCABULARY_FAMILIES.join(", ")
        )),
    )
}
