//! The roofline: every operator of a layer, the LM head and the embedding, each priced at its
//! own limit. An operator's time is `max(FLOPs / matmul rate, bytes / memory rate)`: matrix
//! multiplications run at an achieved fraction of the GPU's peak FLOP/s (`gemm_efficiency`),
//! everything else at an achieved fraction of its HBM bandwidth (`memory_efficiency`), using
//! the bytes it reads and writes. Forward kernels reach [`FORWARD_MEMORY_SHARE`] of the
//! backward's bandwidth share (measured, see `docs/cost-model.md`).
//!
//! Per layer and microbatch (`T = B·S` tokens, 16-bit tensors, `q = H·(1 + 2g/A)`):
//!
//! | term | F | B | W |
//! |---|---|---|---|
//! | matmuls | `Y = X·Wᵀ` of QKV, out-projection, MLP up and down | `dX = dY·W` | `dW = dYᵀ·X`, fp32-accumulated |
//! | attention | `QKᵀ`, `PV` (`2·T·S·H` FLOPs each); softmax 4, dropout 5 bytes per score; a permute `4TH` | four score matmuls; dropout 5, softmax 6 per score | — |
//! | norms | `8TH` | `12TH` | — |
//! | residual | `14TH` (two bias-dropout-adds) | `22TH` | — |
//! | activation | `4T·FFN` | `6T·FFN` | — |
//! | bias gradients | — | `2T·(q + 2H + FFN)` | — |
//!
//! FlashAttention fuses the attention row into one kernel that reads `Q, K, V` and writes `O`
//! (B reads them and `dO`, writes `dQ, dK, dV`). The LM head adds its matmul and a
//! cross-entropy of `10·T·V` bytes in F and `6·T·V` in B; the embedding `9TH` in F and `7TH`
//! plus its dense table gradient, `12·V·H` bytes, in B. Under tensor parallelism each GPU
//! takes `1/t` of everything. W takes only the weight-gradient matmuls.
//!
//! Uses only [`super::Model`]'s sizes; no IO, no GPU figures (the caller passes [`Rates`]).

use super::Model;

/// The forward pass, as an index into per-pass arrays.
pub const F: usize = 0;
/// The input-gradient pass.
pub const B: usize = 1;
/// The weight-gradient pass.
pub const W: usize = 2;

/// The share of the backward's memory bandwidth the forward's memory-bound kernels reach:
/// on every profiled row of the Zero Bubble paper (A100) the forward runs longer than its
/// FLOPs and bytes allow at the backward's rates; 0.62 fits all 21 rows (see
/// `docs/cost-model.md`).
pub const FORWARD_MEMORY_SHARE: f64 = 0.62;

/// What an operator is, for the per-term report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Term {
    /// Matrix multiplications with weights (and MTP's projection).
    Matmul,
    /// Attention scores: their matmuls, softmax, dropout (or FlashAttention's fused kernel).
    Attention,
    /// Layer norms.
    Norm,
    /// GeLU (or SwiGLU).
    Activation,
    /// Bias, dropout and residual adds, and the gradient sums of the residual paths.
    Residual,
    /// Bias gradients: sums over tokens.
    BiasGrad,
    /// The LM head's matmul, final norm and cross-entropy.
    Head,
    /// The embedding lookup and dropout, and its table gradient.
    Embedding,
    /// Tensor-parallel collectives, as far as the matmuls do not hide them (priced by
    /// [`super::parallel`], not here).
    TpCollectives,
}

impl Term {
    /// Every term, in report order.
    pub const ALL: [Term; 9] = [
        Term::Matmul,
        Term::Attention,
        Term::Norm,
        Term::Activation,
        Term::Residual,
        Term::BiasGrad,
        Term::Head,
        Term::Embedding,
        Term::TpCollectives,
    ];

    /// A short name (JSON keys and table rows).
    pub fn name(self) -> &'static str {
        match self {
            Term::Matmul => "matmuls",
            Term::Attention => "attention",
            Term::Norm => "norms",
            Term::Activation => "activation",
            Term::Residual => "residual",
            Term::BiasGrad => "bias_gradients",
            Term::Head => "lm_head",
            Term::Embedding => "embedding",
            Term::TpCollectives => "tp_collectives",
        }
    }
}

/// One operator (or a group priced alike): its pass, what it is, its FLOPs and the bytes it
/// reads and writes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Op {
    /// [`F`], [`B`] or [`W`].
    pub pass: usize,
    /// What it is.
    pub term: Term,
    /// Floating-point operations (matrix multiplications only; elementwise work is 0).
    pub flops: f64,
    /// Bytes read and written.
    pub bytes: f64,
}

/// Achieved rates: matrix-multiplication FLOP/s, and memory bytes/s per pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    /// FLOP/s of matrix multiplications.
    pub flops: f64,
    /// How much faster the weight matmuls ([`Term::Matmul`]) run than `flops`: the FP8 peak
    /// over the 16-bit peak under `--precision fp8`, else 1.
    pub matmul_speedup: f64,
    /// Bytes/s of memory-bound work in F, B and W.
    pub bytes: [f64; 3],
}

impl Rates {
    /// Rates from achieved matmul FLOP/s and the backward's achieved memory bytes/s; the
    /// forward's is [`FORWARD_MEMORY_SHARE`] of it.
    pub fn new(flops: f64, memory: f64) -> Rates {
        Rates { flops, matmul_speedup: 1.0, bytes: [memory * FORWARD_MEMORY_SHARE, memory, memory] }
    }

    /// µs of `op`: the slower of its compute and its memory traffic.
    pub fn micros(&self, op: &Op) -> f64 {
        let flops = if op.term == Term::Matmul { self.flops * self.matmul_speedup } else { self.flops };
        (op.flops / flops).max(op.bytes / self.bytes[op.pass]) * 1e6
    }
}

/// µs per pass, by term, of a list of operators.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Breakdown {
    /// `(term, [F, B, W] µs)` in [`Term::ALL`] order, terms with no work left out.
    pub terms: Vec<(Term, [f64; 3])>,
}

impl Breakdown {
    /// Prices `ops` at `rates`.
    pub fn of(ops: &[Op], rates: &Rates) -> Breakdown {
        let terms = Term::ALL
            .into_iter()
            .filter_map(|term| {
                let mut t = [0.0; 3];
                for op in ops.iter().filter(|op| op.term == term) {
                    t[op.pass] += rates.micros(op);
                }
                (t != [0.0; 3]).then_some((term, t))
            })
            .collect();
        Breakdown { terms }
    }

    /// F, B and W µs in all.
    pub fn totals(&self) -> [f64; 3] {
        let mut sum = [0.0; 3];
        for (_, t) in &self.terms {
            for (s, x) in sum.iter_mut().zip(t) {
                *s += x;
            }
        }
        sum
    }

    /// µs of `term` per pass (zero when it has none).
    pub fn term(&self, term: Term) -> [f64; 3] {
        self.terms.iter().find(|(t, _)| *t == term).map_or([0.0; 3], |(_, v)| *v)
    }
}

/// Collects operators, each scaled by one GPU's share under tensor parallelism.
struct Ops {
    per_gpu: f64,
    ops: Vec<Op>,
}

impl Ops {
    fn new(per_gpu: f64) -> Ops {
        Ops { per_gpu, ops: Vec::new() }
    }

    fn add(&mut self, pass: usize, term: Term, flops: f64, bytes: f64) {
        self.ops.push(Op { pass, term, flops: flops * self.per_gpu, bytes: bytes * self.per_gpu });
    }

    /// `C[m×n] = A[m×k]·B[k×n]` in 16-bit: `2mnk` FLOPs, reading A and B, writing C.
    fn matmul(&mut self, pass: usize, term: Term, m: f64, n: f64, k: f64) {
        self.add(pass, term, 2.0 * m * n * k, 2.0 * (m * k + k * n + m * n));
    }

    /// A weight of `k × n` used by `t` tokens: the forward, the input gradient and the weight
    /// gradient, which reads and writes its fp32 gradient (8 bytes per weight).
    fn weight(&mut self, term: Term, t: f64, k: f64, n: f64) {
        self.matmul(F, term, t, n, k);
        self.matmul(B, term, t, k, n);
        self.add(W, term, 2.0 * t * k * n, 2.0 * t * (k + n) + 8.0 * k * n);
    }
}

impl Ops {
    /// `count` weights of `k × n` sharing `tokens` tokens (the routed experts of one GPU as
    /// one grouped GEMM): the FLOPs of one weight used by all the tokens, every weight read.
    fn grouped_weight(&mut self, term: Term, tokens: f64, k: f64, n: f64, count: f64) {
        let (flops, weights) = (2.0 * tokens * k * n, count * k * n);
        self.add(F, term, flops, 2.0 * (tokens * k + weights + tokens * n));
        self.add(B, term, flops, 2.0 * (tokens * n + weights + tokens * k));
        self.add(W, term, flops, 2.0 * tokens * (k + n) + 8.0 * weights);
    }
}

impl Model {
    /// Tokens `T = B·S` and the hidden size, as floats.
    fn tokens_and_hidden(&self) -> (f64, f64) {
        (f64::from(self.micro_batch) * f64::from(self.seq), f64::from(self.hidden))
    }

    /// Every operator of one dense transformer layer for one microbatch, per GPU.
    pub fn layer_ops(&self) -> Vec<Op> {
        self.layer_ops_of(false)
    }

    /// Every operator of one MoE layer for one microbatch, per GPU: attention as a dense
    /// layer's, the router, the routed experts' grouped GEMMs over `c·k·T` tokens with `E/EP`
    /// experts' weights, and the shared experts ([`super::Moe`]). The all-to-all is priced
    /// apart ([`Model::a2a_micros`]).
    pub fn moe_layer_ops(&self) -> Vec<Op> {
        self.layer_ops_of(true)
    }

    /// One layer's operators: an MoE layer's MLP when `moe`, else the dense MLP.
    fn layer_ops_of(&self, moe: bool) -> Vec<Op> {
        let (t, h) = self.tokens_and_hidden();
        let (s, a) = (f64::from(self.seq), f64::from(self.heads));
        let r = self.kv_ratio();
        let (qk, v) = self.score_widths();
        // Q, K and V as attention reads them (MLA's after their up-projections).
        let q = if self.is_mla() { 2.0 * qk + v } else { self.attention_width() * (1.0 + 2.0 * r) };
        let ffn = if moe { self.moe_active_width() } else { self.mlp_width() };
        let mut o = Ops::new(self.per_gpu());
        for (k, n) in self.attention_shapes() {
            o.weight(Term::Matmul, t, k, n);
        }
        if moe {
            self.moe_mlp_ops(&mut o, t, h);
        } else {
            for (k, n) in [(h, ffn), (ffn, h)] {
                o.weight(Term::Matmul, t, k, n);
            }
        }
        let scores = f64::from(self.micro_batch) * a * s * s;
        let qkv_bytes = 2.0 * t * q;
        if self.flash_attention {
            let lse = 4.0 * f64::from(self.micro_batch) * a * s;
            o.add(F, Term::Attention, 2.0 * t * s * (qk + v), qkv_bytes + 2.0 * t * v + lse);
            o.add(B, Term::Attention, 6.0 * t * s * (qk + v), 2.0 * qkv_bytes + 4.0 * t * v + lse);
        } else {
            // Each score matmul reads or writes the `B·A·S²` scores and two `T × H` operands
            // (K and V at g/A of the size): `QKᵀ` over the query/key width, `PV` over the
            // value width, and in B two of each.
            let operands = if self.is_mla() { (qk + v) * t } else { (1.0 + r) * t * self.attention_width() };
            let score_matmul = |o: &mut Ops, pass, width: f64| {
                o.add(pass, Term::Attention, 2.0 * t * s * width, 2.0 * (scores + operands));
            };
            for (pass, width) in [(F, qk), (F, v), (B, qk), (B, qk), (B, v), (B, v)] {
                score_matmul(&mut o, pass, width);
            }
            o.add(F, Term::Attention, 0.0, (4.0 + 5.0) * scores);
            o.add(B, Term::Attention, 0.0, (5.0 + 6.0) * scores);
        }
        o.add(F, Term::Attention, 0.0, 4.0 * t * h);
        o.add(B, Term::Attention, 0.0, 4.0 * t * h);
        o.add(F, Term::Norm, 0.0, 8.0 * t * h);
        o.add(B, Term::Norm, 0.0, 12.0 * t * h);
        o.add(F, Term::Residual, 0.0, 14.0 * t * h);
        o.add(B, Term::Residual, 0.0, 22.0 * t * h);
        o.add(F, Term::Activation, 0.0, 4.0 * t * ffn);
        o.add(B, Term::Activation, 0.0, 6.0 * t * ffn);
        o.add(B, Term::BiasGrad, 0.0, 2.0 * t * (q + 2.0 * h + ffn));
        o.ops
    }

    /// An MoE layer's MLP GEMMs: the router over every token, the routed experts over the
    /// `c·k·T` routed tokens (one grouped GEMM each way, `E/EP` experts' weights read), the
    /// shared experts over every token.
    fn moe_mlp_ops(&self, o: &mut Ops, t: f64, h: f64) {
        let w = self.expert_width();
        let local = f64::from(self.moe.experts) / f64::from(self.moe.ep.max(1));
        let routed = self.routed_share() * t;
        o.weight(Term::Matmul, t, h, f64::from(self.moe.experts));
        for (k, n) in [(h, w), (w, h)] {
            o.grouped_weight(Term::Matmul, routed, k, n, local);
        }
        let shared = f64::from(self.moe.shared_experts) * w;
        if shared > 0.0 {
            for (k, n) in [(h, shared), (shared, h)] {
                o.weight(Term::Matmul, t, k, n);
            }
        }
    }

    /// The LM head's operators: its final norm, its matmul with the `V × H` weight and the
    /// cross-entropy (fp32 probabilities kept until B), per GPU.
    pub fn head_ops(&self) -> Vec<Op> {
        let (t, h) = self.tokens_and_hidden();
        let v = f64::from(self.vocab);
        let mut o = Ops::new(self.per_gpu());
        o.weight(Term::Head, t, h, v);
        o.add(F, Term::Head, 0.0, 4.0 * t * h + 10.0 * t * v);
        o.add(B, Term::Head, 0.0, 6.0 * t * h + 6.0 * t * v);
        o.ops
    }

    /// The embedding's operators: the lookup and its dropout, and in B the dropout's gradient
    /// and the table's dense gradient (written, then added to an fp32 gradient), per GPU.
    pub fn embedding_ops(&self) -> Vec<Op> {
        let (t, h) = self.tokens_and_hidden();
        let v = f64::from(self.vocab);
        let mut o = Ops::new(self.per_gpu());
        o.add(F, Term::Embedding, 0.0, 9.0 * t * h);
        o.add(B, Term::Embedding, 0.0, 7.0 * t * h + 12.0 * v * h);
        o.ops
    }

    /// What an MTP layer adds to a transformer layer: its `2H → H` projection, two norms, an
    /// embedding lookup and its own pass through the LM head (see [`Model::mtp_extra`]).
    pub fn mtp_ops(&self) -> Vec<Op> {
        let (t, h) = self.tokens_and_hidden();
        let mut o = Ops::new(self.per_gpu());
        o.weight(Term::Matmul, t, 2.0 * h, h);
        o.add(F, Term::Norm, 0.0, 8.0 * t * h);
        o.add(B, Term::Norm, 0.0, 12.0 * t * h);
        o.add(F, Term::Embedding, 0.0, 4.0 * t * h);
        o.add(B, Term::Embedding, 0.0, 2.0 * t * h);
        let mut ops = o.ops;
        ops.extend(self.head_ops());
        ops
    }
}

/// The FLOPs per pass of `ops`.
pub fn flops(ops: &[Op]) -> [f64; 3] {
    let mut sum = [0.0; 3];
    for op in ops {
        sum[op.pass] += op.flops;
    }
    sum
}
