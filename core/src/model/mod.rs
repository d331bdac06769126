//! Costs from a transformer config and a GPU: what a real pipeline's stages cost.
//!
//! Per transformer layer and microbatch of `B` sequences of `S` tokens, hidden size `H`,
//! `A` heads, MLP width `FFN` (the Zero Bubble paper's Table 1, generalised to any FFN):
//!
//! | pass | FLOPs |
//! |---|---|
//! | F | `B·S·H·(8H + 4·FFN + 4S)` (= `B·S·H·(24H + 4S)` at FFN = 4H) |
//! | B | `B·S·H·(8H + 4·FFN + 8S)` (= `B·S·H·(24H + 8S)`) |
//! | W | `B·S·H·(8H + 4·FFN)` (= `24·B·S·H²`) |
//!
//! The `8H` is attention's four H×H projections, `4·FFN` the MLP's two H×FFN matmuls (16H of
//! the paper's 24H at FFN = 4H: that part scales with FFN/4H), the `S` terms attention's scores,
//! which have no weights and so no W.
//!
//! Activations in bytes (Korthikanti et al., 16-bit, no recompute), per layer:
//! `mem-f = B·S·H·(18 + 4·FFN/H + 5·A·S/H)` (the paper's `34 + 5AS/H` at FFN = 4H, the MLP's
//! 16 of the 34 scaling with FFN/4H), of which `mem-w = B·S·H·(16 + 4·FFN/H)` (the paper's 32:
//! every matmul's input) stays after B until W.
//!
//! With FlashAttention (`flash_attention`, on for the Llama presets) the forward keeps no
//! `A·S×S` score matrices: the `5·A·S/H` term of mem-f is gone, and B recomputes the scores,
//! adding the forward's `4·B·S²·H` attention FLOPs to B (Dao et al.; Megatron's selective
//! recompute has the same effect on both numbers).
//!
//! A multi-token-prediction layer (`m` in a layout, DeepSeek-V3's MTP module, not one of
//! `layers`) costs a transformer layer plus its `2H → H` projection (`4·B·S·H²` FLOPs per
//! pass) and its own pass through the shared LM head and loss (see `Model::mtp_extra`).
//!
//! The LM head (vocabulary `V`) on the last stage: `2·B·S·H·V` FLOPs for each of F, B and W;
//! it holds its input, `2·B·S·H` bytes, until W, and the loss's fp32 logits, `4·B·S·V` bytes,
//! until B. The embedding on the first stage: no FLOPs (a lookup), and `B·S·H` bytes (its
//! dropout mask) until B.
//!
//! Time is FLOPs / (T · 10¹²) seconds, `T` the achieved TFLOP/s per device (default 400, an
//! H100 at about 40% of its dense BF16 peak), reported in µs. A hop between devices sends one
//! microbatch's activation, `2·B·S·H` bytes, at the link bandwidth (default 50 GB/s, one
//! 400 Gb/s InfiniBand link) plus a latency (default 5 µs).
//!
//! Tensor parallelism (`tp` = t, Megatron's with sequence parallelism, default 1): each of a
//! stage's t GPUs does `1/t` of every matmul and keeps `1/t` of the activations (Korthikanti
//! et al.: `S·B·H·(34 + 5·A·S/H)/t` per layer; the LM head and the embedding split by the
//! vocabulary and the sequence alike), a hop sends `2·B·S·H/t` bytes per GPU, and each GPU
//! holds `1/t` of the parameters. Costs are per GPU of a stage. The tensor-parallel
//! collectives inside a layer are not modelled (assumed overlapped, or on NVLink): lower
//! `tflops` to account for them. `heads` and `hidden` must be multiples of t.
//!
//! Parameters (for static memory): per layer `4H² + 2·H·FFN` weights and `9H + FFN` biases and
//! layer norms (`12H² + 13H` at FFN = 4H), `V·H` for the embedding and `V·H` for the LM head
//! (untied).
//!
//! Grouped-query attention (`kv_heads` = g key/value heads for the A query heads, 8 for the
//! Llama 3 presets): the K and V projections are `H × H·g/A`, so attention's weights are
//! `(2 + 2g/A)·H²` instead of `4H²` (and its biases `(2 + 2g/A)·H`), the F, B and W weight
//! terms `(4 + 4g/A)·H` instead of `8H` (Megatron's FLOP count: `12·B·S·H²·(1 + g/A)` for
//! attention's projections over the whole step), and the K and V activations, 4 of attention's
//! 11 bytes per token and hidden unit, scale by `g/A` in mem-f and in mem-w alike (W needs
//! their gradients as B leaves them). The scores are per query head and do not change. At
//! g = A every formula above is unchanged.

mod fields;
pub(crate) use fields::model_size_limit;
mod holding;
mod layout;
pub mod presets;
mod spec;
mod units;

pub use holding::{verdict, Holding};
pub use layout::{Layout, Piece, MAX_LAYOUT_STAGES};
pub use spec::{model_field, unknown_preset, ModelSpec, MODEL_FIELDS};
pub use units::parse_bytes;

use crate::error::{Field, ParamError};
use std::sync::Arc;

use crate::params::{CostProfile, Costs};

/// Default achieved TFLOP/s per device.
pub const DEFAULT_TFLOPS: f64 = 400.0;
/// Up to how many stages per device a model without a layout is also cut at whole layers
/// ([`Derived::finer`]); families with more chunks share pieces in proportion.
pub const MAX_CHUNKS_CUT: u32 = 8;
/// Default link bandwidth between neighbouring devices, GB/s.
pub const DEFAULT_BANDWIDTH_GBPS: f64 = 50.0;
/// Default latency of one hop, µs.
pub const DEFAULT_LATENCY_US: f64 = 5.0;

/// A transformer and the hardware it runs on.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    /// Transformer layers `L`.
    pub layers: u32,
    /// Hidden size `H`.
    pub hidden: u32,
    /// Attention heads `A`.
    pub heads: u32,
    /// Key/value heads `g` (query groups of grouped-query attention); `None` means `A`.
    pub kv_heads: Option<u32>,
    /// Sequence length `S`.
    pub seq: u32,
    /// Sequences per microbatch `B`.
    pub micro_batch: u32,
    /// Vocabulary size `V`.
    pub vocab: u32,
    /// MLP width; `None` means `4H`.
    pub ffn: Option<u32>,
    /// Achieved TFLOP/s per device.
    pub tflops: f64,
    /// Link bandwidth, GB/s.
    pub bandwidth: f64,
    /// Hop latency, µs.
    pub latency: f64,
    /// How layers are cut into stages; `None` splits them evenly.
    pub layout: Option<String>,
    /// FlashAttention: no score matrices kept, scores recomputed in B.
    pub flash_attention: bool,
    /// Tensor-parallel size (with sequence parallelism) of each stage: costs are per GPU.
    pub tp: u32,
}

impl Model {
    /// A model with the default hardware figures and an even split.
    pub fn new(layers: u32, hidden: u32, heads: u32, seq: u32, micro_batch: u32, vocab: u32) -> Model {
        Model {
            layers,
            hidden,
            heads,
            kv_heads: None,
            seq,
            micro_batch,
            vocab,
            ffn: None,
            tflops: DEFAULT_TFLOPS,
            bandwidth: DEFAULT_BANDWIDTH_GBPS,
            latency: DEFAULT_LATENCY_US,
            layout: None,
            flash_attention: false,
            tp: 1,
        }
    }

    /// The MLP width (default `4H`).
    pub fn ffn(&self) -> u32 {
        self.ffn.unwrap_or(self.hidden.saturating_mul(4))
    }

    /// Key/value heads `g` (default `A`: multi-head attention).
    pub fn kv_heads(&self) -> u32 {
        self.kv_heads.unwrap_or(self.heads)
    }

    /// `g/A`: the size of the K and V projections against Q's (1 without grouped-query
    /// attention).
    fn kv_ratio(&self) -> f64 {
        f64::from(self.kv_heads()) / f64::from(self.heads.max(1))
    }

    /// Checks every size is positive and every rate finite and positive.
    pub fn check(&self) -> Result<(), ParamError> {
        let sizes = [
            (Field::Layers, self.layers),
            (Field::Hidden, self.hidden),
            (Field::Heads, self.heads),
            (Field::KvHeads, self.kv_heads()),
            (Field::Seq, self.seq),
            (Field::MicroBatch, self.micro_batch),
            (Field::Vocab, self.vocab),
            (Field::Ffn, self.ffn()),
            (Field::Tp, self.tp),
        ];
        for (field, v) in sizes {
            let max = fields::model_size_limit(field);
            if v == 0 || v > max {
                return Err(ParamError::new(field, format!("{} must be between 1 and {max}, found {v}", field.name()))
                    .hint(fields::field_hint(field)));
            }
        }
        for (field, v) in [(Field::Heads, self.heads), (Field::Hidden, self.hidden)] {
            if v % self.tp != 0 {
                return Err(ParamError::new(
                    Field::Tp,
                    format!(
                        "tp {} does not divide {} {v}: each GPU of a stage takes an equal part",
                        self.tp,
                        field.name()
                    ),
                )
                .hint(format!(
                    "pick a tp that divides heads, kv-heads and hidden, e.g. {}",
                    divisors_hint(&[self.heads, self.hidden, self.kv_heads()], 1)
                )));
            }
        }
        let g = self.kv_heads();
        if g > self.heads || self.heads % g != 0 {
            return Err(ParamError::new(
                Field::KvHeads,
                format!(
                    "kv-heads {g} does not divide heads {}: each key/value head serves an equal group of query heads",
                    self.heads
                ),
            )
            .hint(format!(
                "pick kv-heads among the divisors of heads{}, e.g. {} (a preset sets its own: the Llama presets 8)",
                if self.tp > 1 { " that tp divides" } else { "" },
                divisors_hint(&[self.heads], self.tp)
            )));
        }
        if g % self.tp != 0 {
            return Err(ParamError::new(
                Field::Tp,
                format!("tp {} does not divide kv-heads {g}: each GPU of a stage takes whole key/value heads", self.tp),
            )
            .hint(format!(
                "pick a tp that divides kv-heads, heads and hidden, e.g. {}",
                divisors_hint(&[g, self.heads, self.hidden], 1)
            )));
        }
        let rates = [(Field::Tflops, self.tflops), (Field::Bandwidth, self.bandwidth)];
        for (field, v) in rates {
            if !v.is_finite() || v <= 0.0 || v > 1e9 {
                return Err(ParamError::new(
                    field,
                    format!("{} must be a positive number up to 1e9, found {}", field.name(), crate::units::short_number(v)),
                )
                .hint("--tflops is the achieved TFLOP/s per device (default 400), --bandwidth the link's GB/s (default 50)"));
            }
        }
        if !self.latency.is_finite() || self.latency < 0.0 || self.latency > 1e9 {
            return Err(ParamError::new(
                Field::Latency,
                format!("latency must be between 0 and 1e9 µs, found {}", crate::units::short_number(self.latency)),
            )
            .hint("--latency is the time of one hop in µs (default 5)"));
        }
        Ok(())
    }

    /// `B·S·H` as a float.
    fn tokens_hidden(&self) -> f64 {
        f64::from(self.micro_batch) * f64::from(self.seq) * f64::from(self.hidden)
    }

    /// One GPU's part of a stage under tensor parallelism: `1/t`.
    fn per_gpu(&self) -> f64 {
        1.0 / f64::from(self.tp.max(1))
    }

    /// FLOPs of one transformer layer's F, B and W for one microbatch.
    pub fn layer_flops(&self) -> [f64; 3] {
        let (h, s, ffn) = (f64::from(self.hidden), f64::from(self.seq), f64::from(self.ffn()));
        let bsh = self.tokens_hidden();
        let weights = (4.0 + 4.0 * self.kv_ratio()) * h + 4.0 * ffn;
        let recompute = if self.flash_attention { 4.0 * s } else { 0.0 };
        let t = self.per_gpu();
        [bsh * (weights + 4.0 * s) * t, bsh * (weights + 8.0 * s + recompute) * t, bsh * weights * t]
    }

    /// Activation bytes one layer's forward stores, and what W still needs after B.
    pub fn layer_memory(&self) -> [f64; 2] {
        let (h, s, a, ffn) =
            (f64::from(self.hidden), f64::from(self.seq), f64::from(self.heads), f64::from(self.ffn()));
        let bsh = self.tokens_hidden();
        let scores = if self.flash_attention { 0.0 } else { 5.0 * a * s / h };
        let t = self.per_gpu();
        // K and V take 4 of attention's 11 bytes per token and hidden unit, scaled by g/A.
        let kv = 4.0 * (1.0 - self.kv_ratio());
        [bsh * (18.0 - kv + 4.0 * ffn / h + scores) * t, bsh * (16.0 - kv + 4.0 * ffn / h) * t]
    }

    /// FLOPs of the LM head's F (and of its B, and of its W).
    pub fn head_flops(&self) -> f64 {
        2.0 * self.tokens_hidden() * f64::from(self.vocab) * self.per_gpu()
    }

    /// Bytes the LM head and loss store in F, and what W still needs after B.
    pub fn head_memory(&self) -> [f64; 2] {
        let tokens = f64::from(self.micro_batch) * f64::from(self.seq);
        let input = 2.0 * self.tokens_hidden();
        let t = self.per_gpu();
        [(input + 4.0 * tokens * f64::from(self.vocab)) * t, input * t]
    }

    /// Bytes the embedding stores in F (freed by B).
    pub fn embedding_memory(&self) -> f64 {
        self.tokens_hidden() * self.per_gpu()
    }

    /// Parameters of one transformer layer one GPU holds (`1/t` of them with tensor parallelism).
    pub fn layer_params(&self) -> f64 {
        let (h, ffn) = (f64::from(self.hidden), f64::from(self.ffn()));
        let attention = 2.0 + 2.0 * self.kv_ratio();
        (attention * h * h + 2.0 * h * ffn + attention * h + ffn + h + 4.0 * h) * self.per_gpu()
    }

    /// What one MTP layer adds to a transformer layer: FLOPs of each of its F, B and W (its
    /// `2H → H` projection, `4·B·S·H²`, and its pass through the shared LM head, `2·B·S·H·V`),
    /// the bytes its F stores (the head's, the projection's `2H`-wide input, `4·B·S·H`, and
    /// its embedding lookup's `B·S·H`), those W still needs (the head's input and the
    /// projection's), and its parameters (the `2H²` projection and two norms). The embedding
    /// and head weights are shared with `E` and `L`, but a stage that runs MTP holds its own
    /// copy of the embedding, and of the head when it has no `L`, as Megatron-Core builds them
    /// there (`pre_process or mtp_process`, `post_process or mtp_process`; counted in
    /// [`Model::derive`]).
    fn mtp_extra(&self) -> [f64; 4] {
        let h = f64::from(self.hidden);
        let bsh = self.tokens_hidden();
        let t = self.per_gpu();
        let [hmf, hmw] = self.head_memory();
        let flops = 4.0 * bsh * h * t + self.head_flops();
        [flops, hmf + (4.0 + 1.0) * bsh * t, hmw + 4.0 * bsh * t, (2.0 * h * h + 2.0 * h) * t]
    }

    /// µs for `flops` at the device's achieved rate.
    fn micros(&self, flops: f64) -> f64 {
        flops / (self.tflops * 1e12) * 1e6
    }

    /// µs to send one microbatch's activation to the next device.
    pub fn comm(&self) -> f64 {
        2.0 * self.tokens_hidden() * self.per_gpu() / (self.bandwidth * 1e9) * 1e6 + self.latency
    }

    /// The layout: parsed from `layout`, or the even split.
    pub fn layout(&self, devices: u32) -> Result<Layout, ParamError> {
        match &self.layout {
            Some(spec) => Layout::parse(spec, self.layers, devices),
            None => Ok(Layout::even(self.layers, devices)),
        }
    }

    /// Every piece's costs on `devices` devices.
    ///
    /// # Errors
    /// A [`ParamError`] naming the model setting or the layout that is wrong.
    pub fn derive(&self, devices: u32) -> Result<Derived, ParamError> {
        self.check()?;
        if devices == 0 {
            return Err(ParamError::new(Field::Devices, "devices must be at least 1, found 0")
                .hint("--devices is the number of pipeline ranks"));
        }
        let layout = self.layout(devices)?;
        let [lf, lb, lw] = self.layer_flops();
        let [lmf, lmw] = self.layer_memory();
        let [hmf, hmw] = self.head_memory();
        let head = self.head_flops();
        let [mtp_flops, mtp_mf, mtp_mw, mtp_params] = self.mtp_extra();
        let piece_costs = |p: &Piece| {
            let (n, m) = (f64::from(p.layers), f64::from(p.mtp));
            // An MTP layer: a transformer layer, plus its projection, embedding and head pass.
            let h = if p.loss { head } else { 0.0 } + m * mtp_flops;
            let mem_f = (n + m) * lmf
                + m * mtp_mf
                + if p.loss { hmf } else { 0.0 }
                + if p.embedding { self.embedding_memory() } else { 0.0 };
            let mem_w = (n + m) * lmw + m * mtp_mw + if p.loss { hmw } else { 0.0 };
            let vh = f64::from(self.vocab) * f64::from(self.hidden) * self.per_gpu();
            // A stage running MTP builds its own embedding and output layer when it has not
            // got them already (Megatron-Core: `pre_process or mtp_process`, and
            // `post_process or mtp_process`).
            let with_mtp = p.mtp > 0;
            let params = (n + m) * self.layer_params()
                + m * mtp_params
                + if p.embedding || with_mtp { vh } else { 0.0 }
                + if p.loss || with_mtp { vh } else { 0.0 };
            PieceCosts {
                piece: *p,
                f: self.micros((n + m) * lf + h),
                b: self.micros((n + m) * lb + h),
                w: self.micros((n + m) * lw + h),
                mem_f,
                mem_w,
                params,
            }
        };
        let pieces: Vec<PieceCosts> = layout.pieces.iter().map(piece_costs).collect();
        // Without a layout, the even split at whole layers for 2 to MAX_CHUNKS_CUT stages per
        // device too, where the layers divide evenly into them: families with chunks run
        // those stages, never fractions of a layer. (An uneven whole-layer cut makes some
        // stages heavier than the next, which zb-v's heuristic cannot schedule; those stay
        // proportional, as a layout of P pieces does.)
        let finer = match self.layout {
            Some(_) => Vec::new(),
            None => (2..=MAX_CHUNKS_CUT)
                .map(|v| devices.saturating_mul(v))
                .filter(|&stages| self.layers % stages == 0)
                .map(|stages| Layout::even(self.layers, stages).pieces.iter().map(piece_costs).collect())
                .collect(),
        };
        let mut notes = Vec::new();
        let derived_pieces: &[PieceCosts] = &pieces;
        check_derived(self, derived_pieces, &finer)?;
        // Every share holds something: a layer, an MTP layer, the embedding or the LM head.
        let per = (layout.pieces.len() / devices.max(1) as usize).max(1);
        let shares: Vec<PieceCosts> = derived_pieces.chunks(per).map(PieceCosts::sum).collect();
        let holds_nothing =
            |s: &&PieceCosts| s.piece.layers == 0 && s.piece.mtp == 0 && !s.piece.embedding && !s.piece.loss;
        let empty: Vec<usize> = shares.iter().enumerate().filter(|(_, s)| holds_nothing(s)).map(|(k, _)| k).collect();
        if let Some(&first) = empty.first() {
            let which = match empty.as_slice() {
                [_] => format!("share {first} would hold"),
                [.., last] => format!("{} shares ({first} to {last}) would hold", empty.len()),
                [] => String::new(),
            };
            let e = match self.layout {
                None => ParamError::new(
                    Field::Devices,
                    format!(
                        "{} layers cannot fill {devices} devices: {which} no layer, embedding or LM head",
                        self.layers
                    ),
                )
                .hint(format!("use at most {} devices, or a model of at least {devices} layers", self.layers.max(1)))
                .hint("or give a --layout that puts something on every device"),
                Some(_) => ParamError::new(
                    Field::Layout,
                    format!("the layout leaves devices empty: {which} no layer, embedding or LM head"),
                )
                .hint("give every device's stages at least one `t`, `m`, `E` or `L`"),
            };
            return Err(e);
        }
        let bare: Vec<usize> = shares.iter().enumerate().filter(|(_, s)| s.piece.layers == 0).map(|(k, _)| k).collect();
        if let (Some(first), Some(last)) = (bare.first(), bare.last()) {
            let which =
                if first == last { format!("share {first} holds") } else { format!("shares {first} to {last} hold") };
            notes.push(format!(
                "{} layers on {devices} devices: {which} no transformer layer, only the embedding or the LM head",
                self.layers
            ));
        } else if self.layout.is_none() && self.layers % devices != 0 {
            notes.push(format!(
                "{} layers do not divide over {devices} devices: the first {} shares hold one layer more",
                self.layers,
                self.layers % devices
            ));
        }
        Ok(Derived { devices, layout, pieces, finer, comm: self.comm(), notes })
    }
}

/// Refuses derived numbers past what the engine takes ([`crate::params::MAX_COST`]), naming
/// the setting that made them so: a time through the rates, memory through the sizes.
fn check_derived(m: &Model, pieces: &[PieceCosts], finer: &[Vec<PieceCosts>]) -> Result<(), ParamError> {
    use crate::params::MAX_COST;
    use crate::units::short_number;
    // Three significant digits for a number far out of range.
    let big = |v: f64| if v.abs() >= 1e6 { format!("{v:.2e}") } else { short_number(v) };
    let all = pieces.iter().chain(finer.iter().flatten());
    let slowest = all.clone().map(|p| p.f.max(p.b).max(p.w)).fold(0.0, f64::max);
    if slowest.is_nan() || slowest > MAX_COST {
        return Err(ParamError::new(
            Field::Tflops,
            format!(
                "at {} TFLOP/s a stage's pass takes {} µs, more than the {MAX_COST:e} µs supported",
                short_number(m.tflops),
                big(slowest),
            ),
        )
        .hint("tflops is the achieved TFLOP/s per device, e.g. 400 (the default); raise it, or use a smaller model"));
    }
    let comm = m.comm();
    if comm.is_nan() || comm > MAX_COST {
        return Err(ParamError::new(
            Field::Bandwidth,
            format!(
                "at {} GB/s and {} µs latency a hop takes {} µs, more than the {MAX_COST:e} µs supported",
                short_number(m.bandwidth),
                short_number(m.latency),
                big(comm),
            ),
        )
        .hint("bandwidth is the link's GB/s between neighbouring devices, e.g. 50 (the default); raise it"));
    }
    let most = all.map(|p| p.mem_f.max(p.mem_w)).fold(0.0, f64::max);
    if most.is_nan() || most > MAX_COST {
        return Err(ParamError::new(
            Field::MicroBatch,
            format!(
                "a stage holds {} of activations per microbatch, more than the {} supported",
                crate::units::format_bytes(most),
                crate::units::format_bytes(MAX_COST)
            ),
        )
        .hint("use a smaller --micro-batch or --seq, or more devices"));
    }
    Ok(())
}

/// Up to four tensor-parallel sizes that divide both `heads` and `hidden`, for a hint.
/// The largest few numbers that divide every one of `values` and are multiples of
/// `multiple_of`, largest first ("none" when there is none).
fn divisors_hint(values: &[u32], multiple_of: u32) -> String {
    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let g = values.iter().fold(0, |a, &v| gcd(a, v));
    let step = multiple_of.max(1);
    let fits: Vec<String> =
        (1..=g).rev().filter(|d| g % d == 0 && d % step == 0).take(4).map(|d| d.to_string()).collect();
    if fits.is_empty() {
        "none: change tp first".to_string()
    } else {
        fits.join(", ")
    }
}

/// One piece's costs, per microbatch: µs and bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct PieceCosts {
    /// What it holds.
    pub piece: Piece,
    /// Forward µs.
    pub f: f64,
    /// Input-gradient µs.
    pub b: f64,
    /// Weight-gradient µs.
    pub w: f64,
    /// Activation bytes a forward stores.
    pub mem_f: f64,
    /// Of those, bytes W still needs after B.
    pub mem_w: f64,
    /// Parameters it holds.
    pub params: f64,
}

/// A model's costs on a pipeline: its pieces, the communication per hop and notes for the user.
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    /// Devices.
    pub devices: u32,
    /// How the layers are cut.
    pub layout: Layout,
    /// Costs of each piece, in pipeline order.
    pub pieces: Vec<PieceCosts>,
    /// Without a given layout: the even split at whole layers into `k × devices` pieces for
    /// `k` = 2 to [`MAX_CHUNKS_CUT`] where the layers divide evenly into them (the stages of
    /// families with chunks); empty otherwise.
    pub finer: Vec<Vec<PieceCosts>>,
    /// µs per hop.
    pub comm: f64,
    /// Things to tell the user (uneven splits).
    pub notes: Vec<String>,
}

impl Derived {
    /// The per-piece cost profile the simulator reads.
    pub fn profile(&self) -> CostProfile {
        let of = |pieces: &[PieceCosts]| {
            let list = |g: fn(&PieceCosts) -> f64| pieces.iter().map(g).collect();
            CostProfile {
                f: list(|p| p.f),
                b: list(|p| p.b),
                w: list(|p| p.w),
                mem_f: list(|p| p.mem_f),
                mem_w: list(|p| p.mem_w),
                finer: Vec::new(),
            }
        };
        CostProfile { finer: self.finer.iter().map(|f| Arc::new(of(f))).collect(), ..of(&self.pieces) }
    }

    /// One number of each piece (`value`) as a profile's `f` list, the other lists 0, with the
    /// finer cuts: per-stage tables of any quantity cut as the simulator cuts costs.
    pub fn quantity_profile(&self, value: fn(&PieceCosts) -> f64) -> CostProfile {
        let of = |pieces: &[PieceCosts]| {
            let zeros = vec![0.0; pieces.len()];
            CostProfile {
                f: pieces.iter().map(value).collect(),
                b: zeros.clone(),
                w: zeros.clone(),
                mem_f: zeros.clone(),
                mem_w: zeros,
                finer: Vec::new(),
            }
        };
        CostProfile { finer: self.finer.iter().map(|f| Arc::new(of(f))).collect(), ..of(&self.pieces) }
    }

    /// Costs for the schedule families: the profile, the communication time, and the mean
    /// share's scalars.
    pub fn costs(&self) -> Costs {
        Costs { comm: self.comm, ..Costs::default() }.with_profile(self.profile(), self.devices)
    }

    /// The device shares (the pieces a device holds under plain 1F1B), each summed into one
    /// piece: share `k` is entry `k`.
    pub fn shares(&self) -> Vec<PieceCosts> {
        let per = (self.pieces.len() / self.devices.max(1) as usize).max(1);
        self.pieces.chunks(per).map(PieceCosts::sum).collect()
    }
}

impl PieceCosts {
    /// Consecutive pieces as one: their layers and costs added, holding the embedding or the
    /// LM head if any of them does.
    pub fn sum(pieces: &[PieceCosts]) -> PieceCosts {
        let add = |g: fn(&PieceCosts) -> f64| pieces.iter().map(g).sum();
        PieceCosts {
            piece: Piece {
                embedding: pieces.iter().any(|p| p.piece.embedding),
                layers: pieces.iter().map(|p| p.piece.layers).sum(),
                mtp: pieces.iter().map(|p| p.piece.mtp).sum(),
                loss: pieces.iter().any(|p| p.piece.loss),
            },
            f: add(|p| p.f),
            b: add(|p| p.b),
            w: add(|p| p.w),
            mem_f: add(|p| p.mem_f),
            mem_w: add(|p| p.mem_w),
            params: add(|p| p.params),
        }
    }
}

#[cfg(test)]
mod tests;
