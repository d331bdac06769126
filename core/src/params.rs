//! Inputs: costs, memory and the sizes a family is generated for.
//!
//! All times and memory are given for one microbatch through `1/P` of the model, a device's
//! share under plain 1F1B. A schedule that cuts the model finer runs each stage at its
//! fraction ([`crate::Placement::stage_scale`]), so every family is compared on the same model
//! and devices: with equal shares the ideal busy time of a device is `M * (F + B + W)`.
//!
//! Real models are not uniform: a [`CostProfile`] gives each piece of the model its own costs
//! (the CLI's comma-separated lists, or costs derived from a transformer config). Pieces run
//! in pipeline order, `N` of them with `N` a multiple of `P`; a device's share under plain 1F1B
//! is `N / P` consecutive pieces. A family that cuts the model into `S` stages gives stage `j`
//! the part of the model from `j/S` to `(j+1)/S` and the costs of the pieces it covers, in
//! proportion ([`StageCosts`]).

use std::sync::Arc;

use crate::error::{Field, ParamError};
use crate::schedule::{Op, Pass, PassKind, Placement, Schedule};
use crate::trade::{RecomputeShape, Trade};
use crate::units::Units;

/// Largest number of devices the engine accepts.
pub const MAX_DEVICES: u32 = 1024;
/// Largest number of microbatches the engine accepts.
pub const MAX_MICROBATCHES: u32 = 65_536;
/// Largest number of model chunks per device the engine accepts (`simulate`, `sweep` and the
/// playground alike).
pub const MAX_CHUNKS: u32 = 1024;
/// Largest number of passes a generated schedule may have (a bound on memory and time).
pub const MAX_PASSES: u64 = 8_000_000;

pub use crate::units::MAX_COST;
/// Largest memory limit: 1 PiB, so that any limit a device has, in bytes, is taken as given
/// (`--mem-limit 1TiB` with a model).
pub const MAX_MEM_LIMIT: f64 = 1_125_899_906_842_624.0;
/// Smallest positive time or memory a cost may take (0 itself is allowed): with at most 1e12
/// beside it, a smaller one would be below f64's precision and print as 0.
pub const MIN_POSITIVE_COST: f64 = 1e-9;

/// Pass times and memory, per microbatch on `1/P` of the model.
///
/// With a [`CostProfile`] the scalar `f`, `b`, `w`, `mem_f` and `mem_w` hold the mean share's
/// value (what a uniform model of the same total would have), and the profile holds the truth.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Costs {
    /// Forward time.
    pub f: f64,
    /// Input-gradient backward time. A fused backward takes `b + w`.
    pub b: f64,
    /// Weight-gradient backward time.
    pub w: f64,
    /// Communication time of one hop between devices (the slowest, when `links` times each).
    pub comm: f64,
    /// Each hop at its own link: which node each device is on, and a hop's time within and
    /// across nodes; `None` times every hop at `comm`. Derived from a model, so it never
    /// travels (the worker derives it again).
    #[cfg_attr(feature = "wire", serde(skip))]
    pub links: Option<Arc<Links>>,
    /// Time of an overlapped F&B pair; `None` means no overlap gain (the sum of the two).
    pub overlap: Option<f64>,
    /// Activation memory one forward leaves behind.
    pub mem_f: f64,
    /// Of that, what the weight-gradient pass still needs after B; `None` means `mem_f / 2`.
    pub mem_w: Option<f64>,
    /// Per-piece costs when the model's pieces differ; `None` means every piece costs the same.
    pub profile: Option<Arc<CostProfile>>,
    /// Memory traded for time (recompute, offload); `None` trades nothing. Priced from the
    /// settings' trade wherever costs are resolved, so it never travels.
    #[cfg_attr(feature = "wire", serde(skip))]
    pub trade: Option<Arc<Trade>>,
    /// The vocabulary layers, split over the devices by vocabulary; `None` when the model has
    /// no vocabulary (the vocabulary-parallel families then refuse).
    pub vocab: Option<VocabCosts>,
    /// How the runtime's point-to-point sends between devices behave (`--p2p`). Always on the
    /// wire: the worker's format is positional, so a field left out shifts every one after it.
    pub p2p: P2p,
    /// When a model prices the vocabulary: the costs the vocabulary-parallel families run at,
    /// its stages without the embedding and the LM head (split over every device instead) and
    /// the shards' passes in `vocab` ([`Costs::vocabulary_parallel`]). `None` with costs set by
    /// hand, whose `vocab` (`--s`, `--t`) is the shards' own and whose stages hold no head.
    pub split_vocab: Option<Arc<Costs>>,
}

/// How a runtime sends a pass's result to the device that consumes it (`--p2p`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "wire", serde(rename_all = "lowercase"))]
pub enum P2p {
    /// The send is fire-and-forget: the result reaches the consumer one hop after the pass
    /// ends, and only the consumer waits for it.
    #[default]
    Async,
    /// Megatron-LM without `overlap_p2p_comm`: after each op a device exchanges with its
    /// neighbours and waits for all of it. A send completes only once the receiver has
    /// reached its own matching exchange (it has finished the op before the consumer), so
    /// the sender's next op and the consumer both start one hop after the later of the two.
    Blocking,
}

impl P2p {
    /// Every value, in the order `--p2p` lists them.
    pub const ALL: [P2p; 2] = [P2p::Async, P2p::Blocking];

    /// The name `--p2p` takes.
    pub fn name(self) -> &'static str {
        match self {
            P2p::Async => "async",
            P2p::Blocking => "blocking",
        }
    }

    /// The value `name` names, if any.
    pub fn from_name(name: &str) -> Option<P2p> {
        P2p::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether sends are fire-and-forget (the default).
    pub fn is_async(&self) -> bool {
        *self == P2p::Async
    }
}

impl Default for Costs {
    fn default() -> Costs {
        Costs {
            f: 1.0,
            b: 1.0,
            w: 1.0,
            comm: 0.0,
            links: None,
            overlap: None,
            mem_f: 1.0,
            mem_w: None,
            profile: None,
            trade: None,
            vocab: None,
            p2p: P2p::Async,
            split_vocab: None,
        }
    }
}

impl Costs {
    /// The costs a vocabulary-parallel family runs at: with a model's vocabulary priced
    /// ([`Costs::split_vocab`]), its stages without the embedding and the LM head and its
    /// shards' S, T, IF, IB and barrier; the hop times, send mode, F&B time and trade stay
    /// these costs'. Costs set by hand come back as they are.
    pub fn vocabulary_parallel(&self) -> Costs {
        match &self.split_vocab {
            None => self.clone(),
            Some(v) => Costs {
                f: v.f,
                b: v.b,
                w: v.w,
                mem_f: v.mem_f,
                mem_w: v.mem_w,
                profile: v.profile.clone(),
                vocab: v.vocab,
                split_vocab: None,
                ..self.clone()
            },
        }
    }
}

/// The vocabulary layers split into one shard per device (Vocabulary Parallelism): the times
/// of one shard's passes for one microbatch, and of one barrier. Never scaled by a placement:
/// there is always one shard per device.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct VocabCosts {
    /// S: the output layer's forward on one shard (its GEMM and softmax statistics).
    pub s: f64,
    /// T: the output layer's backward on one shard.
    pub t: f64,
    /// IF: the input layer's forward on one shard.
    pub input_f: f64,
    /// IB: the input layer's backward on one shard.
    pub input_b: f64,
    /// One barrier: the all-reduces over every shard after S (or after T).
    pub reduce: f64,
}

impl VocabCosts {
    /// Output-layer passes of `s` and `t`, a free input layer and barriers of `reduce`.
    pub fn output(s: f64, t: f64, reduce: f64) -> VocabCosts {
        VocabCosts { s, t, input_f: 0.0, input_b: 0.0, reduce }
    }

    /// The shards' times as the CLI's `--s`/`--t` and a link's `s`/`t` give them: `None` when
    /// neither is given (the costs keep `previous`); else S is `s` (or `previous`'s, or 0), T is
    /// `t` or twice S (the output layer's backward, input and weight gradients), the input
    /// layer is free and a barrier takes `comm`, one hop.
    pub fn from_shards(s: Option<f64>, t: Option<f64>, previous: Option<VocabCosts>, comm: f64) -> Option<VocabCosts> {
        if s.is_none() && t.is_none() {
            return previous;
        }
        let s = s.or(previous.map(|v| v.s)).unwrap_or(0.0);
        let t = t.unwrap_or(2.0 * s);
        Some(VocabCosts::output(s, t, comm))
    }

    /// Checks every time is finite and in range.
    ///
    /// # Errors
    /// A [`ParamError`] naming `s` or `t` (the input layer's and the barrier's times are
    /// checked under those names too: they come with them).
    pub fn check(&self) -> Result<(), ParamError> {
        check_number(Field::S, self.s)?;
        // T left out is twice S: an S above half the cap is what breaks it, not a T never given.
        if self.t == 2.0 * self.s && check_number(Field::T, self.t).is_err() {
            return Err(ParamError::new(
                Field::S,
                format!(
                    "s must be at most 5e11 while t is left to its default (twice s), found {}",
                    crate::units::short_number(self.s)
                ),
            )
            .hint("give a smaller --s (a coarser unit), or --t itself"));
        }
        check_number(Field::T, self.t)?;
        check_number(Field::S, self.input_f)?;
        check_number(Field::T, self.input_b)?;
        check_number(Field::Comm, self.reduce)
    }
}

/// Costs of each piece of the model, in pipeline order: what `--f 4,4,4,6` says, or what a
/// transformer config derives. Every list has one number per piece.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct CostProfile {
    /// Forward time per piece.
    pub f: Vec<f64>,
    /// Input-gradient time per piece.
    pub b: Vec<f64>,
    /// Weight-gradient time per piece.
    pub w: Vec<f64>,
    /// Activation memory of one forward per piece.
    pub mem_f: Vec<f64>,
    /// Memory the weight gradient still needs after B, per piece.
    pub mem_w: Vec<f64>,
    /// Of each piece's forward and input gradient, the µs of its expert-parallel all-to-all
    /// (dispatch and combine): the communication phases an overlapped F&B pair runs while the
    /// other pass computes. Empty: no all-to-all.
    pub a2a_f: Vec<f64>,
    /// The same for the input gradient (empty: none).
    pub a2a_b: Vec<f64>,
    /// The same model cut at whole layers into more pieces (a transformer's even split into
    /// `P × chunks` stages, the embedding on the first and the LM head on the last): a
    /// placement with exactly as many stages per pipeline as one of these has pieces runs
    /// each stage at that piece's costs instead of a proportional part of the pieces above
    /// (which would cut layers and the LM head in fractions). Empty for hand-set lists.
    pub finer: Vec<Arc<CostProfile>>,
}

impl CostProfile {
    /// A profile with `pieces` pieces, all at `costs`' scalar values spread evenly over `per_share`
    /// pieces per device share.
    pub fn uniform(costs: &Costs, pieces: usize) -> CostProfile {
        CostProfile {
            f: vec![costs.f; pieces],
            b: vec![costs.b; pieces],
            w: vec![costs.w; pieces],
            mem_f: vec![costs.mem_f; pieces],
            mem_w: vec![costs.mem_w(); pieces],
            a2a_f: Vec::new(),
            a2a_b: Vec::new(),
            finer: Vec::new(),
        }
    }

    /// Number of pieces.
    pub fn pieces(&self) -> usize {
        self.f.len()
    }

    /// Whether every piece costs the same in every list.
    pub fn is_uniform(&self) -> bool {
        let same = |v: &[f64]| v.windows(2).all(|p| p[0] == p[1]);
        same(&self.f) && same(&self.b) && same(&self.w) && same(&self.mem_f) && same(&self.mem_w)
    }

    /// Whether a pass holds an all-to-all that takes time: the one rule that says whether
    /// `a2a_f`/`a2a_b` count (a missing list is zeros).
    pub fn has_a2a(&self) -> bool {
        self.a2a_f.iter().chain(&self.a2a_b).any(|&a| a > 0.0)
    }

    /// The all-to-all of piece `i`'s forward and input gradient (zeros where a list is missing).
    pub fn a2a_of(&self, i: usize) -> [f64; 2] {
        [self.a2a_f.get(i).copied().unwrap_or(0.0), self.a2a_b.get(i).copied().unwrap_or(0.0)]
    }

    /// The lists with their fields, for checks and tables.
    pub fn lists(&self) -> [(Field, &[f64]); 5] {
        [
            (Field::F, &self.f),
            (Field::B, &self.b),
            (Field::W, &self.w),
            (Field::MemF, &self.mem_f),
            (Field::MemW, &self.mem_w),
        ]
    }

    /// The costs of device share `k` of `devices`: the pieces it covers, in proportion, as
    /// the simulator cuts stages (so a piece count that does not divide by the devices is
    /// shared, not dropped).
    pub fn share(&self, k: usize, devices: usize) -> [f64; 5] {
        let (n, d) = (self.pieces(), devices.max(1));
        let cut = |v: &[f64]| stage_share(v, k, d, n);
        [cut(&self.f), cut(&self.b), cut(&self.w), cut(&self.mem_f), cut(&self.mem_w)]
    }

    /// The same model as one piece per device share (what `--f 4,4,4,6` writes).
    pub fn per_device(&self, devices: usize) -> CostProfile {
        if self.pieces() == devices {
            return self.clone();
        }
        let shares: Vec<[f64; 5]> = (0..devices).map(|k| self.share(k, devices)).collect();
        let list = |i: usize| shares.iter().map(|s| s[i]).collect();
        let cut = |i: usize| match self.has_a2a() {
            true => {
                let v: Vec<f64> = (0..self.pieces()).map(|k| self.a2a_of(k)[i]).collect();
                (0..devices).map(|k| stage_share(&v, k, devices, self.pieces())).collect()
            }
            false => Vec::new(),
        };
        CostProfile {
            f: list(0),
            b: list(1),
            w: list(2),
            mem_f: list(3),
            mem_w: list(4),
            a2a_f: cut(0),
            a2a_b: cut(1),
            finer: Vec::new(),
        }
    }

    /// The all-to-all lists: each empty or one number per piece, finite, not negative, and
    /// inside its pass (a forward's all-to-all at most its F, a backward's at most its B).
    fn check_a2a(&self) -> Result<(), ParamError> {
        let n = self.pieces();
        let hint = "a2a_f and a2a_b give each piece's expert all-to-all inside its F and B: leave them out, or give one number per piece";
        for (name, list, pass, field) in
            [("a2a_f", &self.a2a_f, &self.f, Field::F), ("a2a_b", &self.a2a_b, &self.b, Field::B)]
        {
            if !list.is_empty() && list.len() != n {
                return Err(ParamError::new(
                    field,
                    format!("the profile's {name} list has {} numbers, but its f list has {n}", list.len()),
                )
                .hint(hint));
            }
            for (i, (&a, &t)) in list.iter().zip(pass).enumerate() {
                if !a.is_finite() || a < 0.0 || a > t {
                    return Err(ParamError::new(
                        field,
                        format!(
                            "{name} of piece {i} must be between 0 and its pass's {}, found {}",
                            fmt_num(t),
                            fmt_num(a)
                        ),
                    )
                    .hint(hint));
                }
            }
        }
        Ok(())
    }

    /// Checks the lists have equal, non-zero lengths, finite non-negative numbers and mem-w at
    /// most mem-f in every piece.
    pub fn check(&self) -> Result<(), ParamError> {
        let n = self.pieces();
        let hint = "every list of a profile has one number per piece of the model, in pipeline order";
        if n == 0 {
            return Err(ParamError::new(Field::F, "the profile's f list is empty").hint(hint));
        }
        for (field, list) in self.lists() {
            if list.len() != n {
                return Err(ParamError::new(
                    field,
                    format!(
                        "the profile's {} list has {} number{}, but its f list has {n}",
                        field.name(),
                        list.len(),
                        if list.len() == 1 { "" } else { "s" }
                    ),
                )
                .hint(hint));
            }
            for &v in list {
                check_number(field, v)?;
            }
        }
        for (i, (&mf, &mw)) in self.mem_f.iter().zip(&self.mem_w).enumerate() {
            if mw > mf {
                return Err(ParamError::new(
                    Field::MemW,
                    format!(
                        "mem-w must be at most mem-f, found mem-w {} > mem-f {} in piece {i}",
                        fmt_num(mw),
                        fmt_num(mf)
                    ),
                )
                .hint("mem-w is the part of a forward's activations the weight gradient still needs: at most that piece's mem-f"));
            }
        }
        self.check_a2a()?;
        for finer in &self.finer {
            finer.check()?;
        }
        Ok(())
    }

    /// Why each finer cut is not this profile's model cut into more pieces, if it is not
    /// (`None` for a cut that is): it must be a valid profile itself ([`CostProfile::check`]),
    /// have more pieces than the profile, another count
    /// than the valid cuts before it (a repeat of a dropped cut's count is no repeat), and the
    /// same total of every list (the same passes of the same model, only cut elsewhere; a
    /// relative 1e-6, so numbers rounded for a file still match). A hand-edited file can
    /// break any of these.
    pub fn finer_mismatches(&self) -> Vec<Option<String>> {
        let n = self.pieces();
        let mut kept: Vec<usize> = Vec::new();
        let total = |v: &[f64]| v.iter().sum::<f64>();
        self.finer
            .iter()
            .map(|finer| {
                if let Err(e) = finer.check() {
                    return Some(format!("it is no valid profile: {}", e.message.replace("the profile's ", "its ")));
                }
                let m = finer.pieces();
                if m <= n {
                    let noun = if m == 1 { "piece" } else { "pieces" };
                    return Some(format!("it has {m} {noun}, not more than the profile's {n}"));
                }
                if kept.contains(&m) {
                    return Some(format!("an earlier finer cut has {m} pieces too"));
                }
                for ((field, base), (_, cut)) in self.lists().into_iter().zip(finer.lists()) {
                    let (a, b) = (total(base), total(cut));
                    if (a - b).abs() > 1e-6 * a.abs().max(b.abs()).max(1.0) {
                        return Some(format!(
                            "its {} adds up to {}, the profile's to {}",
                            field.name(),
                            crate::units::format_significant(b, 6),
                            crate::units::format_significant(a, 6)
                        ));
                    }
                }
                kept.push(m);
                None
            })
            .collect()
    }

    /// The time one piece's `kind` pass takes.
    fn values(&self, kind: Cost) -> &[f64] {
        match kind {
            Cost::F => &self.f,
            Cost::B => &self.b,
            Cost::W => &self.w,
            Cost::MemF => &self.mem_f,
            Cost::MemW => &self.mem_w,
        }
    }
}

/// Which per-piece number [`StageCosts`] is filling.
#[derive(Clone, Copy)]
enum Cost {
    F,
    B,
    W,
    MemF,
    MemW,
}

fn fmt_num(v: f64) -> String {
    crate::units::format_number(v, 6)
}

impl Costs {
    /// Costs with the given F, B, W and defaults for the rest.
    pub fn fbw(f: f64, b: f64, w: f64) -> Costs {
        Costs { f, b, w, ..Costs::default() }
    }

    /// Whether F, B and W take the same time, every stage costs the same and nothing is spent
    /// communicating: then every pass fills one equal slot, and the slot-based closed forms and
    /// searches are exact.
    pub fn balanced(&self) -> bool {
        self.f == self.b && self.b == self.w && self.comm == 0.0 && self.is_uniform()
    }

    /// Whether every piece of the model costs the same (no [`CostProfile`]).
    pub fn is_uniform(&self) -> bool {
        self.profile.is_none()
    }

    /// These costs with per-piece lists: the scalars become the mean share (`devices` shares),
    /// and a profile whose pieces all cost the same collapses to plain scalars, so a uniform
    /// list gives exactly what the single number gives.
    pub fn with_profile(mut self, profile: CostProfile, devices: u32) -> Costs {
        let n = profile.pieces();
        if n == 0 {
            return self;
        }
        let per_share = n as f64 / f64::from(devices.max(1));
        // An all-to-all has no scalar to go to: a profile that holds one stays a profile.
        if profile.is_uniform() && !profile.has_a2a() {
            let scale = |v: f64| if n == devices as usize { v } else { v * per_share };
            self.f = scale(profile.f[0]);
            self.b = scale(profile.b[0]);
            self.w = scale(profile.w[0]);
            self.mem_f = scale(profile.mem_f[0]);
            self.mem_w = Some(scale(profile.mem_w[0]));
            self.profile = None;
            return self;
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / f64::from(devices.max(1));
        self.f = mean(&profile.f);
        self.b = mean(&profile.b);
        self.w = mean(&profile.w);
        self.mem_f = mean(&profile.mem_f);
        self.mem_w = Some(mean(&profile.mem_w));
        self.profile = Some(Arc::new(profile));
        self
    }

    /// The profile, or a uniform one of `devices` pieces.
    pub fn profile_or_uniform(&self, devices: u32) -> CostProfile {
        match &self.profile {
            Some(p) => (**p).clone(),
            None => CostProfile::uniform(self, devices as usize),
        }
    }

    /// The memory W still needs after B: `mem_w`, or half of `mem_f` by default.
    pub fn mem_w(&self) -> f64 {
        self.mem_w.unwrap_or(self.mem_f / 2.0)
    }

    /// Checks every number is finite and in range.
    pub fn check(&self) -> Result<(), ParamError> {
        // Per-piece values first: an error names the number the user wrote, not a mean.
        if let Some(profile) = &self.profile {
            profile.check()?;
        }
        check_number(Field::F, self.f)?;
        check_number(Field::B, self.b)?;
        check_number(Field::W, self.w)?;
        check_number(Field::Comm, self.comm)?;
        check_number(Field::MemF, self.mem_f)?;
        if let Some(v) = &self.vocab {
            v.check()?;
        }
        if let Some(o) = self.overlap {
            check_number(Field::Overlap, o)?;
            if o == 0.0 {
                return Err(ParamError::new(Field::Overlap, "overlap must be positive, found 0")
                    .hint("the F&B time is how long an overlapped forward and backward pair takes together")
                    .hint("leave --overlap out for no overlap gain (the pair takes F + B + W)"));
            }
        }
        if let Some(w) = self.mem_w {
            check_number(Field::MemW, w)?;
            if w > self.mem_f {
                return Err(ParamError::new(
                    Field::MemW,
                    format!(
                        "mem-w must be at most mem-f, found mem-w {} > mem-f {}",
                        crate::units::short_number(w),
                        crate::units::short_number(self.mem_f)
                    ),
                )
                .hint("mem-w is the part of a forward's activations the weight gradient still needs"));
            }
        }
        if let Some(t) = self.trade.as_deref().and_then(|t| t.copy_time) {
            crate::trade::check_copy_time(t)?;
        }
        if self.f + self.b + self.w <= 0.0 {
            return Err(ParamError::new(Field::F, "f, b and w are all 0: there is no work to schedule")
                .hint("give at least one pass a positive time"));
        }
        Ok(())
    }
}

fn check_number(field: Field, value: f64) -> Result<(), ParamError> {
    let (name, shown) = (field.name(), crate::units::short_number(value));
    if !value.is_finite() {
        let hint = match field {
            Field::MemLimit => "give a limit in mem-f's unit, e.g. 8, or with a model a size, e.g. 80GiB",
            _ => "give a time or size in the cost unit, e.g. 1 or 2.5",
        };
        return Err(ParamError::new(field, format!("{name} must be a finite number, found {shown}")).hint(hint));
    }
    if value < 0.0 {
        let hint = match field {
            Field::MemLimit => {
                "a limit is a size: in mem-f's unit, e.g. 8, or with a model e.g. 80GiB; leave it out for no limit"
            }
            Field::MemF | Field::MemW => "memory is a size: 0 or more, e.g. 1 or 0.5",
            Field::Comm => "communication is the time of one hop between devices: 0 for none, e.g. 0.25",
            Field::Overlap => "the overlapped F&B pair takes a positive time, e.g. 1.5; leave it out for no gain",
            _ => "times are durations: 0 or more, e.g. 1 or 2.5",
        };
        return Err(ParamError::new(field, format!("{name} must not be negative, found {shown}")).hint(hint));
    }
    if value > MAX_COST {
        let hint = match field {
            Field::MemLimit => "a limit this large is no limit: leave mem-limit out (1e12 bytes is about 931 GiB)",
            Field::MemF | Field::MemW => "use a coarser unit, e.g. GiB instead of bytes (1e12 bytes is about 931 GiB)",
            _ => "use a coarser unit, e.g. milliseconds instead of nanoseconds",
        };
        return Err(ParamError::new(field, format!("{name} must be at most 1e12, found {shown}")).hint(hint));
    }
    if value > 0.0 && value < MIN_POSITIVE_COST {
        return Err(ParamError::new(field, format!("{name} must be 0 or at least 1e-9, found {shown}"))
            .hint("a smaller value prints as 0 and is lost next to the other costs; use a finer unit, e.g. microseconds instead of seconds"));
    }
    Ok(())
}

/// Checks a per-device memory limit is a finite number from 0 to [`MAX_MEM_LIMIT`].
///
/// # Errors
/// A [`ParamError`] on `mem-limit` otherwise.
pub fn check_mem_limit(limit: f64) -> Result<(), ParamError> {
    if limit.is_finite() && limit > MAX_COST {
        if limit <= MAX_MEM_LIMIT {
            return Ok(());
        }
        return Err(memory_range_error("mem-limit", &crate::units::short_number(limit)));
    }
    check_number(Field::MemLimit, limit)
}

/// The cap on a memory amount in bytes, in forms the size parser reads back.
pub const MAX_MEM_LIMIT_TEXT: &str = "1PiB (1125899906842624 bytes)";

/// The one error for a memory amount in bytes (`what`: mem-limit or static-memory) that is no
/// finite size from 0 to [`MAX_MEM_LIMIT`]: `shown` is the value as the user gave it.
pub fn memory_range_error(what: &str, shown: &str) -> ParamError {
    let hint = if what == "mem-limit" {
        "write e.g. 80GiB for an 80 GB GPU's memory; a limit above 1PiB is no limit: leave mem-limit out"
    } else {
        "give what a device holds besides activations, e.g. 20GiB, or auto with a model"
    };
    ParamError::new(
        Field::MemLimit,
        format!("{what} must be a finite size from 0 to {MAX_MEM_LIMIT_TEXT}, found {shown}"),
    )
    .hint(hint)
}

/// Whether some allowed memory limit (at most [`MAX_MEM_LIMIT`]) holds `need` per device.
pub fn some_limit_fits(need: f64) -> bool {
    need <= MAX_MEM_LIMIT
}

/// Everything a family is generated from.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct ScheduleParams {
    /// Number of devices `P`.
    pub devices: u32,
    /// Number of microbatches `M`.
    pub microbatches: u32,
    /// Chunks per device (interleaved families); `None` uses the family's default.
    pub chunks: Option<u32>,
    /// Microbatches per chunk round (interleaved 1F1B); `None` uses the family's default.
    pub group: Option<u32>,
    /// Waves (Hanayo); `None` uses the family's default.
    pub waves: Option<u32>,
    /// Sequence slices per microbatch (Seq1F1B); `None` uses the family's default.
    pub seq_splits: Option<u32>,
    /// Megatron's combined 1F1B (`--a2a-overlap`, families that pair passes): one more
    /// warm-up forward, then each steady-state forward overlapped with the backward of an
    /// earlier microbatch, hiding the expert all-to-all.
    #[cfg_attr(feature = "wire", serde(default))]
    pub a2a_overlap: bool,
    /// Times and memory.
    pub costs: Costs,
    /// Per-device activation memory limit, in the unit of `mem_f`.
    pub mem_limit: Option<f64>,
    /// How messages write memory ([`ScheduleParams::memory_text`]); changes no schedule.
    pub units: crate::units::Units,
}

impl ScheduleParams {
    /// 1F1B's activation memory with equal stages, `P·mem-f`: device 0 holds `P` forwards. The
    /// unit memory limits are quoted in ("2× 1F1B").
    pub fn one_f_one_b_memory(&self) -> f64 {
        f64::from(self.devices) * self.costs.mem_f
    }

    /// `devices` and `microbatches` with default costs and no options.
    pub fn new(devices: u32, microbatches: u32) -> ScheduleParams {
        ScheduleParams {
            devices,
            microbatches,
            chunks: None,
            group: None,
            waves: None,
            seq_splits: None,
            a2a_overlap: false,
            costs: Costs::default(),
            mem_limit: None,
            units: Units::Cost,
        }
    }

    /// A memory amount as messages write it: the number in mem-f's unit, or `27.69 GiB`
    /// when the costs come from a model.
    pub fn memory_text(&self, memory: f64) -> String {
        self.units.memory_in_message(memory)
    }

    /// The same parameters with other costs.
    pub fn with_costs(mut self, costs: Costs) -> ScheduleParams {
        self.costs = costs;
        self
    }

    /// The same parameters with a memory limit.
    pub fn with_mem_limit(mut self, limit: f64) -> ScheduleParams {
        self.mem_limit = Some(limit);
        self
    }

    /// The same parameters with `chunks` chunks per device.
    pub fn with_chunks(mut self, chunks: u32) -> ScheduleParams {
        self.chunks = Some(chunks);
        self
    }

    /// Checks what every family needs: sizes in range and valid costs.
    pub fn check_common(&self) -> Result<(), ParamError> {
        if self.devices == 0 || self.devices > MAX_DEVICES {
            return Err(ParamError::new(
                Field::Devices,
                format!("devices must be between 1 and {MAX_DEVICES}, found {}", self.devices),
            )
            .hint("devices is the number of pipeline ranks, e.g. 8"));
        }
        if self.microbatches == 0 || self.microbatches > MAX_MICROBATCHES {
            return Err(ParamError::new(
                Field::Microbatches,
                format!("microbatches must be between 1 and {MAX_MICROBATCHES}, found {}", self.microbatches),
            )
            .hint("microbatches is how many microbatches one iteration runs, e.g. 32"));
        }
        if let Some(chunks) = self.chunks.filter(|&c| c > MAX_CHUNKS) {
            return Err(ParamError::new(
                Field::Chunks,
                format!("chunks must be between 1 and {MAX_CHUNKS}, found {chunks}"),
            )
            .hint(format!("a device holds at most {MAX_CHUNKS} chunks of the model; use fewer chunks")));
        }
        self.costs.check()?;
        if let Some(profile) = &self.costs.profile {
            let n = profile.pieces();
            if n % self.devices as usize != 0 {
                return Err(ParamError::new(
                    Field::F,
                    format!("the cost lists have {n} pieces, expected a multiple of the {} devices", self.devices),
                )
                .hint("give one number per device (its share of the model), or change --devices"));
            }
        }
        self.mem_limit.map_or(Ok(()), check_mem_limit)
    }

    /// Checks that a schedule of `passes` passes (a family's exact count, see
    /// [`crate::Family::passes`]) stays within [`MAX_PASSES`].
    pub fn check_passes(&self, passes: u64) -> Result<(), ParamError> {
        if passes > MAX_PASSES {
            return Err(ParamError::new(
                Field::Microbatches,
                format!("this schedule would have {passes} passes, more than the {MAX_PASSES} supported"),
            )
            .hint("use fewer devices, microbatches, chunks or sequence splits"));
        }
        Ok(())
    }
}

/// The value of stage `j` of `stages` over a model of `values.len()` pieces: the pieces it
/// covers, in proportion. When the stage lies inside one piece this is that piece's value times
/// `pieces / stages` — the same expression as a uniform model's `value * stage_scale`.
fn stage_share(values: &[f64], j: usize, stages: usize, pieces: usize) -> f64 {
    if stages == 0 || pieces == 0 {
        return 0.0;
    }
    if stages % pieces == 0 {
        let per_piece = stages / pieces;
        return values[j / per_piece] * (pieces as f64 / stages as f64);
    }
    // In units of 1/(stages·pieces): stage j is [j·pieces, (j+1)·pieces), piece i is
    // [i·stages, (i+1)·stages).
    let (lo, hi) = (j * pieces, (j + 1) * pieces);
    let mut total = 0.0;
    let last = hi.div_ceil(stages).min(pieces);
    for (i, value) in values.iter().enumerate().take(last).skip(lo / stages) {
        let overlap = hi.min((i + 1) * stages) - lo.max(i * stages);
        total += value * (overlap as f64 / stages as f64);
    }
    total
}

/// Which node each device is on and what a hop takes within a node and across nodes: each hop
/// at its own link.
#[derive(Clone, Debug, PartialEq)]
pub struct Links {
    /// The node of each device.
    pub node: Vec<u32>,
    /// A hop between two devices of one node.
    pub within: f64,
    /// A hop between nodes.
    pub across: f64,
}

impl Links {
    /// The time of a hop from device `from` to device `to` (the slower link when either is
    /// unknown).
    pub fn hop(&self, from: u32, to: u32) -> f64 {
        match (self.node.get(from as usize), self.node.get(to as usize)) {
            (Some(a), Some(b)) if a == b => self.within,
            _ => self.across,
        }
    }
}

/// Per-stage times and memory: the table the simulator reads.
#[derive(Clone, Debug, PartialEq)]
pub struct StageCosts {
    /// Forward time per stage.
    pub f: Vec<f64>,
    /// Input-gradient time per stage.
    pub b: Vec<f64>,
    /// Weight-gradient time per stage.
    pub w: Vec<f64>,
    /// Overlapped pair time per stage of the pair's forward; `None` means the sum, or with
    /// `a2a` the time its phases take on two streams.
    pub overlap: Option<Vec<f64>>,
    /// The all-to-all µs inside each stage's forward and input gradient (empty: none).
    pub a2a: Vec<[f64; 2]>,
    /// Activation memory of one forward, per stage.
    pub mem_f: Vec<f64>,
    /// Memory the weight gradient still needs after B, per stage.
    pub mem_w: Vec<f64>,
    /// Communication time between devices.
    pub comm: f64,
    /// Each hop at its own link; `None` times every hop at `comm`.
    pub links: Option<Arc<Links>>,
    /// The fraction of its activation a forward keeps, per stage: 1, or less on a stage that
    /// recomputes (its R pass allocates the rest). Empty means 1 everywhere.
    pub keep: Vec<f64>,
    /// The R pass's time as a fraction of the forward's, per stage (empty: 1).
    pub redo: Vec<f64>,
    /// Time to copy one unit of memory between device and host.
    pub copy_time: f64,
    /// The vocabulary shards' pass times and the barrier time (zeros without a vocabulary).
    pub vocab: VocabCosts,
    /// How sends between devices behave.
    pub p2p: P2p,
}

impl StageCosts {
    /// The time of a hop from device `from` to device `to`: at its own link when the links are
    /// known, else `comm`.
    pub fn hop_time(&self, from: u32, to: u32) -> f64 {
        match &self.links {
            Some(l) => l.hop(from, to),
            None => self.comm,
        }
    }

    /// Uniform costs scaled to the placement's stage size (see the module docs).
    pub fn new(costs: &Costs, placement: &Placement) -> StageCosts {
        StageCosts::scaled(costs, placement, 1)
    }

    /// Uniform costs for `schedule`: scaled to its stage size, and divided among its sequence
    /// slices when it splits sequences.
    pub fn for_schedule(costs: &Costs, schedule: &Schedule) -> StageCosts {
        let mut out = StageCosts::scaled(costs, &schedule.placement, schedule.slices.max(1));
        out.trade(costs.trade.as_deref(), schedule);
        out
    }

    /// Sets what a forward keeps and what R costs on every stage that has an R pass in
    /// `schedule` (the trade's shape for its device; full recompute's without a trade), and
    /// the copy time per unit of memory.
    fn trade(&mut self, trade: Option<&Trade>, schedule: &Schedule) {
        let stages = schedule.placement.stages() as usize;
        let mut recomputed = vec![false; stages];
        for pass in schedule.orders.iter().flatten().flat_map(Op::passes) {
            if let (PassKind::R, Some(r)) = (pass.kind, recomputed.get_mut(pass.stage as usize)) {
                *r = true;
            }
        }
        if recomputed.iter().any(|r| *r) {
            let shape = |stage: usize| {
                let device = schedule.placement.device_of(stage as u32).unwrap_or(0);
                trade.and_then(|t| t.shape_of(device)).unwrap_or(RecomputeShape::FULL)
            };
            let shapes: Vec<RecomputeShape> =
                (0..stages).map(|s| if recomputed[s] { shape(s) } else { RecomputeShape::NOTHING }).collect();
            self.keep = shapes.iter().map(|s| s.keep).collect();
            self.redo = shapes.iter().map(|s| s.redo).collect();
        }
        if let Some(t) = trade.and_then(|t| t.copy_time) {
            self.copy_time = t;
        }
    }

    /// The fraction of its activation the forward of `stage` keeps.
    #[inline]
    pub fn keep(&self, stage: u32) -> f64 {
        self.keep.get(stage as usize).copied().unwrap_or(1.0)
    }

    /// The memory a forward of `stage` holds when it ends: what an offload moves.
    #[inline]
    pub fn held(&self, stage: u32) -> f64 {
        self.mem_f.get(stage as usize).copied().unwrap_or(0.0) * self.keep(stage)
    }

    /// The time one copy of `stage`'s forward activation takes, either way.
    #[inline]
    pub fn copy(&self, stage: u32) -> f64 {
        self.held(stage) * self.copy_time
    }

    fn scaled(costs: &Costs, placement: &Placement, slices: u32) -> StageCosts {
        let n = placement.stages() as usize;
        if let Some(profile) = &costs.profile {
            return StageCosts::profiled(costs, profile, placement, f64::from(slices));
        }
        let scale = placement.stage_scale() / f64::from(slices);
        StageCosts {
            f: vec![costs.f * scale; n],
            b: vec![costs.b * scale; n],
            w: vec![costs.w * scale; n],
            overlap: costs.overlap.map(|o| vec![o * scale; n]),
            a2a: Vec::new(),
            mem_f: vec![costs.mem_f * scale; n],
            mem_w: vec![costs.mem_w() * scale; n],
            comm: costs.comm,
            links: costs.links.clone(),
            keep: Vec::new(),
            redo: Vec::new(),
            copy_time: 0.0,
            vocab: costs.vocab.unwrap_or_default(),
            p2p: costs.p2p,
        }
    }

    /// Per-stage costs from a profile: stage `j` of `S` covers the model from `j/S` to
    /// `(j+1)/S` and takes each piece it covers in proportion; `slices` divides further
    /// (sequence slices). The overlapped pair time scales with the stage's work.
    fn profiled(costs: &Costs, profile: &CostProfile, placement: &Placement, slices: f64) -> StageCosts {
        let stages = placement.stages_per_pipeline() as usize;
        // The model cut at whole layers into exactly these stages, when the profile has it.
        let profile = profile.finer.iter().find(|p| p.pieces() == stages).map_or(profile, |p| &**p);
        let pieces = profile.pieces();
        let fill = |kind: Cost| -> Vec<f64> {
            let values = profile.values(kind);
            (0..placement.stages())
                .map(|g| stage_share(values, placement.local_stage(g) as usize, stages, pieces) / slices)
                .collect()
        };
        let (f, b, w) = (fill(Cost::F), fill(Cost::B), fill(Cost::W));
        let mean_work = costs.f + costs.b + costs.w;
        let overlap = costs.overlap.map(|o| {
            (0..f.len())
                .map(|s| {
                    let work = f[s] + b[s] + w[s];
                    if mean_work > 0.0 {
                        o * (work / mean_work)
                    } else {
                        0.0
                    }
                })
                .collect()
        });
        let a2a = match profile.has_a2a() {
            true => {
                let list = |i: usize| (0..pieces).map(|k| profile.a2a_of(k)[i]).collect::<Vec<f64>>();
                let (af, ab) = (list(0), list(1));
                let cut =
                    |v: &[f64], g: u32| stage_share(v, placement.local_stage(g) as usize, stages, pieces) / slices;
                (0..placement.stages()).map(|g| [cut(&af, g), cut(&ab, g)]).collect()
            }
            false => Vec::new(),
        };
        StageCosts {
            f,
            b,
            w,
            overlap,
            a2a,
            mem_f: fill(Cost::MemF),
            mem_w: fill(Cost::MemW),
            comm: costs.comm,
            links: costs.links.clone(),
            keep: Vec::new(),
            redo: Vec::new(),
            copy_time: 0.0,
            vocab: costs.vocab.unwrap_or_default(),
            p2p: costs.p2p,
        }
    }

    /// Duration of one pass.
    #[inline]
    pub fn pass(&self, pass: Pass) -> f64 {
        let s = pass.stage as usize;
        let get = |v: &Vec<f64>| v.get(s).copied().unwrap_or(0.0);
        match pass.kind {
            PassKind::F => get(&self.f),
            PassKind::B => get(&self.b),
            PassKind::W => get(&self.w),
            PassKind::BW => get(&self.b) + get(&self.w),
            PassKind::R => get(&self.f) * self.redo.get(s).copied().unwrap_or(1.0),
            PassKind::S => self.vocab.s,
            PassKind::T => self.vocab.t,
            PassKind::IF => self.vocab.input_f,
            PassKind::IB => self.vocab.input_b,
        }
    }

    /// Duration of one op: a pass, or an overlapped pair.
    #[inline]
    pub fn op(&self, op: &Op) -> f64 {
        match *op {
            Op::One(p) => self.pass(p),
            Op::Pair(f, b) => match &self.overlap {
                Some(o) => o.get(f.stage as usize).copied().unwrap_or(0.0),
                None => self.pair_in_phases(f, b),
            },
        }
    }

    /// An overlapped pair without a given time: the sum of its passes, or, when they hold an
    /// all-to-all, its phases on two streams, DualPipe's overlap: one pass's compute runs while
    /// the other's dispatch and combine are in flight, so the pair takes the longer of its
    /// compute and its communication.
    pub fn pair_in_phases(&self, f: Pass, b: Pass) -> f64 {
        let sum = self.pass(f) + self.pass(b);
        let comm = |p: Pass, i: usize| self.a2a.get(p.stage as usize).map_or(0.0, |a| a[i]);
        let a2a = comm(f, 0) + if matches!(b.kind, PassKind::B | PassKind::BW) { comm(b, 1) } else { 0.0 };
        // With no all-to-all this is the sum.
        (sum - a2a).max(a2a)
    }

    /// Memory a pass allocates when it starts. Vocabulary passes hold none: the authors'
    /// accounting counts the transformer layers' activations.
    #[inline]
    pub fn alloc(&self, pass: Pass) -> f64 {
        let mf = self.mem_f.get(pass.stage as usize).copied().unwrap_or(0.0);
        match pass.kind {
            PassKind::F => mf * self.keep(pass.stage),
            PassKind::R => mf * (1.0 - self.keep(pass.stage)),
            _ => 0.0,
        }
    }

    /// Memory a pass releases when it ends.
    #[inline]
    pub fn release(&self, pass: Pass) -> f64 {
        let s = pass.stage as usize;
        let mf = self.mem_f.get(s).copied().unwrap_or(0.0);
        let mw = self.mem_w.get(s).copied().unwrap_or(0.0);
        match pass.kind {
            PassKind::F | PassKind::R | PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => 0.0,
            PassKind::B => mf - mw,
            PassKind::W => mw,
            PassKind::BW => mf,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v_shape_runs_each_chunk_at_half_the_cost() {
        let costs = StageCosts::new(&Costs::fbw(2.0, 4.0, 6.0), &Placement::v_shape(4));
        assert_eq!(costs.pass(Pass::f(5, 0)), 1.0);
        assert_eq!(costs.pass(Pass::bw(5, 0)), 5.0);
        assert_eq!(costs.alloc(Pass::f(0, 0)), 0.5);
        assert_eq!(costs.release(Pass::b(0, 0)), 0.25);
    }

    #[test]
    fn pair_defaults_to_the_sum_and_honours_overlap() {
        let p = Placement::linear(2);
        let pair = Op::Pair(Pass::f(0, 1), Pass::bw(1, 0));
        let mut c = Costs::fbw(1.0, 2.0, 1.0);
        assert_eq!(StageCosts::new(&c, &p).op(&pair), 4.0);
        c.overlap = Some(3.0);
        assert_eq!(StageCosts::new(&c, &p).op(&pair), 3.0);
    }

    #[test]
    fn a_pair_with_an_all_to_all_takes_the_longer_of_its_compute_and_its_communication() {
        let p = Placement::linear(2);
        let profiled = |a2a_f: f64, a2a_b: f64| {
            let mut profile = CostProfile::uniform(&Costs::fbw(4.0, 5.0, 2.0), 2);
            profile.a2a_f = vec![a2a_f; 2];
            profile.a2a_b = vec![a2a_b; 2];
            let costs = Costs { profile: Some(Arc::new(profile)), ..Costs::fbw(4.0, 5.0, 2.0) };
            StageCosts::new(&costs, &p)
        };
        let (f, b, bw, w) = (Pass::f(0, 1), Pass::b(1, 0), Pass::bw(1, 0), Pass::w(1, 0));
        // No all-to-all: the sum, as without phases.
        assert_eq!(profiled(0.0, 0.0).op(&Op::Pair(f, bw)), 11.0);
        // 1 + 1.5 of communication hides behind 11 − 2.5 of compute.
        assert_eq!(profiled(1.0, 1.5).op(&Op::Pair(f, bw)), 8.5);
        assert_eq!(profiled(1.0, 1.5).op(&Op::Pair(f, b)), 6.5);
        // Communication longer than the compute left: the pair waits for it.
        assert_eq!(profiled(3.5, 4.0).op(&Op::Pair(f, b)), 7.5);
        // A weight gradient holds no all-to-all: only F's is counted.
        assert_eq!(profiled(1.0, 1.5).op(&Op::Pair(f, w)), 5.0);
        // A given --overlap still wins.
        let mut c = profiled(1.0, 1.5);
        c.overlap = Some(vec![9.0; 2]);
        assert_eq!(c.op(&Op::Pair(f, bw)), 9.0);
        // Never more than the sum, never less than either pass.
        for (af, ab) in [(0.5, 0.5), (2.0, 4.0), (4.0, 5.0)] {
            let t = profiled(af, ab).op(&Op::Pair(f, b));
            assert!((5.0..=9.0).contains(&t), "{af} {ab}: {t}");
        }
    }

    #[test]
    fn an_all_to_all_must_fit_inside_its_pass_and_one_list_alone_counts() {
        let base = CostProfile::uniform(&Costs::fbw(4.0, 5.0, 2.0), 2);
        let with = |f: Vec<f64>, b: Vec<f64>| CostProfile { a2a_f: f, a2a_b: b, ..base.clone() };
        assert!(with(vec![1.0, 1.0], vec![2.0, 2.0]).check().is_ok());
        assert!(with(Vec::new(), Vec::new()).check().is_ok());
        for (f, b) in [
            (vec![f64::NAN, 1.0], Vec::new()),
            (vec![-1.0, 1.0], Vec::new()),
            (vec![4.5, 1.0], Vec::new()),
            (Vec::new(), vec![1.0, 6.0]),
            (vec![1.0], Vec::new()),
        ] {
            let e = with(f.clone(), b.clone()).check().unwrap_err().to_string();
            assert!(e.contains("a2a_") && e.contains("hint:"), "{f:?} {b:?}: {e}");
        }
        // A forward's all-to-all alone is an all-to-all: the backward's reads as zeros.
        let only_f = with(vec![1.0, 1.0], Vec::new());
        assert!(only_f.has_a2a() && only_f.a2a_of(1) == [1.0, 0.0]);
        let costs = Costs::fbw(4.0, 5.0, 2.0).with_profile(only_f, 2);
        assert!(costs.profile.is_some(), "an all-to-all keeps the profile");
        let stages = StageCosts::new(&costs, &Placement::linear(2));
        assert_eq!(stages.op(&Op::Pair(Pass::f(0, 1), Pass::b(1, 0))), 8.0);
    }

    #[test]
    fn rejects_bad_numbers_with_the_field_named() {
        let mut c = Costs { f: f64::NAN, ..Costs::default() };
        assert_eq!(c.check().unwrap_err().field, Field::F);
        c.f = -1.0;
        assert_eq!(
            c.check().unwrap_err().to_string(),
            "f must not be negative, found -1\n  hint: times are durations: 0 or more, e.g. 1 or 2.5"
        );
        c = Costs { mem_w: Some(2.0), ..Costs::default() };
        assert_eq!(c.check().unwrap_err().field, Field::MemW);
        let p = ScheduleParams::new(0, 8);
        assert_eq!(p.check_common().unwrap_err().field, Field::Devices);
    }
}
