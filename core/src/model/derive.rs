//! A model's costs on a pipeline: each piece's F, B, W, memory and parameters, the finer
//! cuts chunked families run, the hops, and the notes for the user. Uses the model's sizes,
//! its layout, the roofline and the hardware; nothing here prices an operator itself.

use std::sync::Arc;

use super::gpu::Gpu;
use super::hardware::{Efficiency, Hops};
use super::roofline::{self, Breakdown};
use super::{Layout, Model, Piece, MAX_CHUNKS_CUT};
use crate::error::{Field, ParamError};
use crate::params::{CostProfile, Costs};

impl Model {
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
        let efficiency = self.efficiency()?;
        let rates = self.rates(efficiency)?;
        let mut layer = Breakdown::of(&self.layer_ops(), &rates);
        let tp = self.tp_collectives()?;
        let hidden = if self.tp_overlap { layer.term(roofline::Term::Matmul) } else { [0.0; 3] };
        let exposed = [0, 1, 2].map(|p| (tp[p] - hidden[p]).max(0.0));
        if exposed.iter().any(|&t| t > 0.0) {
            layer.terms.push((roofline::Term::TpCollectives, exposed));
        }
        let moe_layer = if self.is_moe() {
            let mut b = Breakdown::of(&self.moe_layer_ops(), &rates);
            if exposed.iter().any(|&t| t > 0.0) {
                b.terms.push((roofline::Term::TpCollectives, exposed));
            }
            Some(b)
        } else {
            None
        };
        let a2a = self.a2a_micros(devices)?;
        let head = Breakdown::of(&self.head_ops(), &rates);
        let embedding = Breakdown::of(&self.embedding_ops(), &rates);
        let mtp = Breakdown::of(&self.mtp_ops(), &rates);
        let [lmf, lmw] = self.layer_memory();
        let [hmf, hmw] = self.head_memory();
        let [_, mtp_mf, mtp_mw, mtp_params] = self.mtp_extra();
        let (lt, ht, et, mt) = (layer.totals(), head.totals(), embedding.totals(), mtp.totals());
        let moe = MoeCosts {
            time: moe_layer.as_ref().map_or([0.0; 3], Breakdown::totals),
            a2a,
            memory: self.moe_layer_memory(),
            params: self.moe_layer_params(),
        };
        // A piece of `p.layers` layers from layer `first`: its dense layers at the layer's
        // costs, its MoE layers at the MoE layer's (an MTP layer is one like the last layer).
        // `split` of `n` pieces: the vocabulary split over every device (Vocabulary
        // Parallelism), the embedding and the LM head priced as the shards' passes instead,
        // their parameters spread evenly over the `n` pieces.
        let piece_costs = |split: Option<usize>, (p, first): (&Piece, u32)| {
            let mtp_moe = if self.mtp_is_moe() { p.mtp } else { 0 };
            let x = f64::from(self.moe_layers_in(first, p.layers) + mtp_moe);
            let (n, m) = (f64::from(p.layers), f64::from(p.mtp));
            let dense = n + m - x;
            let (has_loss, has_embedding) = (p.loss && split.is_none(), p.embedding && split.is_none());
            let (loss, emb) = (f64::from(u8::from(has_loss)), f64::from(u8::from(has_embedding)));
            // An MTP layer: a transformer layer, plus its projection, embedding and head pass.
            let time = |pass: usize| {
                dense * lt[pass]
                    + x * (moe.time[pass] + moe.a2a[pass])
                    + m * mt[pass]
                    + loss * ht[pass]
                    + emb * et[pass]
            };
            let mem_f = dense * lmf
                + x * moe.memory[0]
                + m * mtp_mf
                + if has_loss { hmf } else { 0.0 }
                + if has_embedding { self.embedding_memory() } else { 0.0 };
            let mem_w = dense * lmw + x * moe.memory[1] + m * mtp_mw + if has_loss { hmw } else { 0.0 };
            let vh = f64::from(self.vocab) * f64::from(self.hidden) * self.per_gpu();
            // A stage running MTP builds its own embedding and output layer when it has not
            // got them already (Megatron-Core: `pre_process or mtp_process`, and
            // `post_process or mtp_process`).
            let with_mtp = p.mtp > 0;
            let shards = split.map_or(0.0, |n| 2.0 * vh / n.max(1) as f64);
            let params = dense * self.layer_params()
                + x * moe.params
                + m * mtp_params
                + if has_embedding || with_mtp { vh } else { 0.0 }
                + if has_loss || with_mtp { vh } else { 0.0 }
                + shards;
            PieceCosts {
                piece: *p,
                f: time(roofline::F),
                b: time(roofline::B),
                w: time(roofline::W),
                mem_f,
                mem_w,
                params,
                a2a: [x * moe.a2a[roofline::F], x * moe.a2a[roofline::B]],
            }
        };
        let cut = |pieces: &[Piece], split: bool| -> Vec<PieceCosts> {
            let split = split.then_some(pieces.len());
            with_first_layers(pieces).map(|p| piece_costs(split, p)).collect()
        };
        let pieces = cut(&layout.pieces, false);
        // Without a layout, the even split at whole layers for 2 to MAX_CHUNKS_CUT stages per
        // device too, where the layers divide evenly into them: families with chunks run
        // those stages, never fractions of a layer. (An uneven whole-layer cut makes some
        // stages heavier than the next, which zb-v's heuristic cannot schedule; those stay
        // proportional, as a layout of P pieces does.)
        let finer_cuts: Vec<Layout> = match self.layout {
            Some(_) => Vec::new(),
            None => (2..=MAX_CHUNKS_CUT)
                .map(|v| devices.saturating_mul(v))
                .filter(|&stages| self.layers % stages == 0)
                .map(|stages| Layout::even(self.layers, stages))
                .collect(),
        };
        let finer: Vec<Vec<PieceCosts>> = finer_cuts.iter().map(|l| cut(&l.pieces, false)).collect();
        let split_vocab = SplitVocab {
            shards: self.vocab_costs(devices)?,
            pieces: cut(&layout.pieces, true),
            finer: finer_cuts.iter().map(|l| cut(&l.pieces, true)).collect(),
        };
        let hops = self.hops(devices)?;
        check_derived(self, &rates_note(self, efficiency)?, &pieces, &finer, &hops)?;
        let mut notes = shares_notes(self, &layout, &pieces, devices)?;
        notes.extend(hops_note(&hops, self.gpus_per_node, devices));
        Ok(Derived {
            devices,
            layout,
            pieces,
            finer,
            comm: hops.slowest(),
            hops,
            gpu: self.gpu()?,
            efficiency,
            layer,
            moe_layer,
            a2a,
            head,
            embedding,
            split_vocab,
            notes,
        })
    }
}

/// The model's costs with its vocabulary split over every device (Vocabulary Parallelism):
/// one shard's passes and barrier, and the pieces without the embedding and the LM head.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitVocab {
    /// One shard's S, T, IF, IB and one barrier, µs.
    pub shards: crate::params::VocabCosts,
    /// The pieces' costs without the embedding and the LM head (their parameters spread over
    /// the pieces).
    pub pieces: Vec<PieceCosts>,
    /// The finer cuts, likewise (see [`Derived::finer`]).
    pub finer: Vec<Vec<PieceCosts>>,
}

/// What one MoE layer costs per microbatch: its F, B, W µs without the all-to-all, the
/// all-to-all's, its activation bytes (F, kept for W) and the parameters one GPU holds.
struct MoeCosts {
    time: [f64; 3],
    a2a: [f64; 3],
    memory: [f64; 2],
    params: f64,
}

/// Each piece with the index of its first transformer layer.
fn with_first_layers(pieces: &[Piece]) -> impl Iterator<Item = (&Piece, u32)> {
    pieces.iter().scan(0u32, |first, p| {
        let at = *first;
        *first = first.saturating_add(p.layers);
        Some((p, at))
    })
}

/// The matmul rate a pass is priced at, as the user set it: `400 TFLOP/s` with `--tflops`,
/// else `a100-80gb at 0.8 of 312 TFLOP/s`.
fn rates_note(m: &Model, e: Efficiency) -> Result<String, ParamError> {
    use crate::units::short_number;
    let gpu = m.gpu()?;
    let mut note = match m.tflops {
        Some(t) => format!("{} TFLOP/s", short_number(t)),
        None => format!("{} at {} of {} TFLOP/s", gpu.key, short_number(e.gemm), short_number(gpu.peak_tflops)),
    };
    if m.memory_efficiency.is_some() {
        note.push_str(&format!(" and {} of {} GB/s HBM", short_number(e.memory), short_number(gpu.hbm_gbps)));
    }
    Ok(note)
}

/// Refuses derived numbers past what the engine takes ([`crate::params::MAX_COST`]), naming
/// the setting that made them so: a time through the rates, memory through the sizes.
fn check_derived(
    m: &Model,
    rate: &str,
    pieces: &[PieceCosts],
    finer: &[Vec<PieceCosts>],
    hops: &Hops,
) -> Result<(), ParamError> {
    use crate::params::MAX_COST;
    use crate::units::short_number;
    // How long, against the cap: three significant digits for a number far out of range;
    // past any float, the cap alone.
    let past_cap = |v: f64| match v {
        v if !v.is_finite() => format!("longer than the {MAX_COST:e} µs supported"),
        v if v.abs() >= 1e6 => format!("{v:.2e} µs, more than the {MAX_COST:e} µs supported"),
        v => format!("{} µs, more than the {MAX_COST:e} µs supported", short_number(v)),
    };
    // The largest of `values`, infinite when one is not a number (a rate so small that its
    // reciprocal overflows gives inf · 0): `f64::max` would skip it.
    let worst = |values: &mut dyn Iterator<Item = f64>| {
        values.fold(0.0, |most: f64, v| if v.is_nan() { f64::INFINITY } else { most.max(v) })
    };
    let all = pieces.iter().chain(finer.iter().flatten());
    let slowest = worst(&mut all.clone().flat_map(|p| [p.f, p.b, p.w]));
    if slowest > MAX_COST {
        let field = if m.tflops.is_some() {
            Field::Tflops
        } else if m.memory_efficiency.is_some() && m.gemm_efficiency.is_none() {
            Field::MemoryEfficiency
        } else {
            Field::GemmEfficiency
        };
        return Err(ParamError::new(field, format!("at {rate} a stage's pass takes {}", past_cap(slowest))).hint(
            "raise --tflops or the efficiencies (a GPU reaches 0.3 to 0.9 of its peak), or use a smaller model",
        ));
    }
    let comm = worst(&mut std::iter::once(hops.slowest()));
    if comm > MAX_COST {
        let link = match m.bandwidth {
            Some(bw) => format!("{} GB/s", short_number(bw)),
            None => "the GPU's links".to_string(),
        };
        return Err(ParamError::new(
            if m.bandwidth.is_some() { Field::Bandwidth } else { Field::Latency },
            format!("at {link} and {} µs latency a hop takes {}", short_number(m.latency), past_cap(comm),),
        )
        .hint("--bandwidth is the link's GB/s between neighbouring devices (a GPU preset sets it); raise it"));
    }
    let most = worst(&mut all.flat_map(|p| [p.mem_f, p.mem_w]));
    if most > MAX_COST {
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

/// Every share holds something (a layer, an MTP layer, the embedding or the LM head), or the
/// model is refused; the notes for shares with only the embedding or the head, and for layers
/// that do not divide evenly.
fn shares_notes(m: &Model, layout: &Layout, pieces: &[PieceCosts], devices: u32) -> Result<Vec<String>, ParamError> {
    let per = (layout.pieces.len() / devices.max(1) as usize).max(1);
    let shares: Vec<PieceCosts> = pieces.chunks(per).map(PieceCosts::sum).collect();
    let holds_nothing = |s: &PieceCosts| s.piece.layers == 0 && s.piece.mtp == 0 && !s.piece.embedding && !s.piece.loss;
    let empty: Vec<usize> = shares.iter().enumerate().filter(|(_, s)| holds_nothing(s)).map(|(k, _)| k).collect();
    if let Some(&first) = empty.first() {
        let which = match empty.len() {
            1 => format!("share {first} would hold"),
            n => format!("{n} shares ({}) would hold", crate::units::text::index_list(&empty)),
        };
        return Err(match m.layout {
            None => ParamError::new(
                Field::Devices,
                format!("{} layers cannot fill {devices} devices: {which} no layer, embedding or LM head", m.layers),
            )
            .hint(format!("use at most {} devices, or a model of at least {devices} layers", m.layers.max(1)))
            .hint("or give a --layout that puts something on every device"),
            Some(_) => ParamError::new(
                Field::Layout,
                format!("the layout leaves devices empty: {which} no layer, embedding or LM head"),
            )
            .hint("give every device's stages at least one `t`, `m`, `E` or `L`"),
        });
    }
    let mut notes = Vec::new();
    let bare: Vec<usize> = shares.iter().enumerate().filter(|(_, s)| s.piece.layers == 0).map(|(k, _)| k).collect();
    if let Some(first) = bare.first() {
        let which = match bare.len() {
            1 => format!("share {first} holds"),
            _ => format!("shares {} hold", crate::units::text::index_list(&bare)),
        };
        notes.push(format!(
            "{} layers on {devices} devices: {which} no transformer layer, only the embedding or the LM head",
            m.layers
        ));
    } else if m.layout.is_none() && m.layers % devices != 0 {
        notes.push(format!(
            "{} layers do not divide over {devices} devices: {} one layer more",
            m.layers,
            match m.layers % devices {
                1 => "the first share holds".to_string(),
                n => format!("the first {n} shares hold"),
            }
        ));
    }
    Ok(notes)
}

/// The transformer layers of the median device (the upper median, as the Zero Bubble runtime
/// picks its median rank): what a calibration's measured times cover.
pub(crate) fn median_layers(layout: &Layout, devices: u32) -> u32 {
    let per = (layout.pieces.len() / devices.max(1) as usize).max(1);
    let mut layers: Vec<u32> = layout.pieces.chunks(per).map(|c| c.iter().map(|p| p.layers).sum()).collect();
    layers.sort_unstable();
    layers.get(layers.len() / 2).copied().unwrap_or(0).max(1)
}

/// The note for a pipeline whose hops differ: which cross nodes, and that every hop is timed
/// at the slowest; or, when every hop between the `devices` crosses nodes, that one.
fn hops_note(hops: &Hops, per_node: u32, devices: u32) -> Option<String> {
    let time = crate::units::format_micros;
    if devices < 2 {
        // One device: no hop at all.
        return None;
    }
    if hops.differ() && hops.crossings.len() as u32 == devices - 1 {
        return Some(format!(
            "the devices span {} nodes of {per_node} GPUs: every hop crosses nodes, at {} each",
            hops.nodes,
            time(hops.across)
        ));
    }
    hops.differ().then(|| {
        let crossing: Vec<String> = hops.crossings.iter().map(|k| format!("{k}→{}", k + 1)).collect();
        // One hop crosses at its time; several cross at that time each.
        let which = match crossing.len() {
            0 => "only the hop from the last device back to the first (interleaved and wave placements) crosses nodes, at"
                .to_string(),
            1 => format!("1 hop ({}) crosses nodes, at", crossing[0]),
            n => format!("{n} hops ({}) cross nodes at", crossing.join(", ")),
        };
        let each = if crossing.len() > 1 { " each" } else { "" };
        format!(
            "the devices span {} nodes of {per_node} GPUs: {which} {}{each}, the others take {}; the simulator times each hop at its own link",
            hops.nodes,
            time(hops.across),
            time(hops.within),
        )
    })
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
    /// Of `f` and `b`, the µs of its MoE layers' expert-parallel all-to-all (dispatch and
    /// combine), exposed in the pass for now.
    pub a2a: [f64; 2],
}

/// A model's costs on a pipeline: its pieces, the communication per hop, what the hardware
/// achieves, and notes for the user.
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
    /// µs per hop: the slowest hop ([`Hops::slowest`]), the one time the simulator uses.
    pub comm: f64,
    /// The hops within and across nodes.
    pub hops: Hops,
    /// The GPU.
    pub gpu: &'static Gpu,
    /// The efficiencies the times are priced at (given or default).
    pub efficiency: Efficiency,
    /// One transformer layer's µs per pass, by term.
    pub layer: Breakdown,
    /// One MoE layer's µs per pass, by term (without the all-to-all); `None` for a dense model.
    pub moe_layer: Option<Breakdown>,
    /// One MoE layer's expert-parallel all-to-all µs in F, B and W (0 for EP 1).
    pub a2a: [f64; 3],
    /// The LM head's µs per pass, by term.
    pub head: Breakdown,
    /// The embedding's µs per pass, by term.
    pub embedding: Breakdown,
    /// The costs with the vocabulary split over every device, which the vocabulary-parallel
    /// families run at.
    pub split_vocab: SplitVocab,
    /// Things to tell the user (uneven splits, hops that differ).
    pub notes: Vec<String>,
}

impl Derived {
    /// The per-piece cost profile the simulator reads.
    pub fn profile(&self) -> CostProfile {
        profile_of(&self.pieces, &self.finer)
    }

    /// The profile the vocabulary-parallel families read: the pieces without the embedding
    /// and the LM head.
    pub fn split_vocab_profile(&self) -> CostProfile {
        profile_of(&self.split_vocab.pieces, &self.split_vocab.finer)
    }

    /// One number of each piece (`value`) as a profile's `f` list, the other lists 0, with the
    /// finer cuts: per-stage tables of any quantity cut as the simulator cuts costs.
    pub fn quantity_profile(&self, value: fn(&PieceCosts) -> f64) -> CostProfile {
        quantity_profile_of(&self.pieces, &self.finer, value)
    }

    /// [`Derived::quantity_profile`] with the vocabulary split over every device (the pieces
    /// the vocabulary-parallel families run).
    pub fn split_vocab_quantity_profile(&self, value: fn(&PieceCosts) -> f64) -> CostProfile {
        quantity_profile_of(&self.split_vocab.pieces, &self.split_vocab.finer, value)
    }

    /// Costs for the schedule families: the profile, the communication time, and the mean
    /// share's scalars.
    pub fn costs(&self) -> Costs {
        let base = Costs { comm: self.comm, links: self.hops.links(), ..Costs::default() };
        let split = Costs { vocab: Some(self.split_vocab.shards), ..base.clone() }
            .with_profile(self.split_vocab_profile(), self.devices);
        Costs { split_vocab: Some(Arc::new(split)), ..base.with_profile(self.profile(), self.devices) }
    }

    /// The device shares (the pieces a device holds under plain 1F1B), each summed into one
    /// piece: share `k` is entry `k`.
    pub fn shares(&self) -> Vec<PieceCosts> {
        let per = (self.pieces.len() / self.devices.max(1) as usize).max(1);
        self.pieces.chunks(per).map(PieceCosts::sum).collect()
    }
}

/// One number of each of `pieces` (`value`) as a profile's `f` list, with the finer cuts.
fn quantity_profile_of(pieces: &[PieceCosts], finer: &[Vec<PieceCosts>], value: fn(&PieceCosts) -> f64) -> CostProfile {
    let of = |pieces: &[PieceCosts]| {
        let zeros = vec![0.0; pieces.len()];
        CostProfile {
            f: pieces.iter().map(value).collect(),
            b: zeros.clone(),
            w: zeros.clone(),
            mem_f: zeros.clone(),
            mem_w: zeros,
            a2a_f: Vec::new(),
            a2a_b: Vec::new(),
            finer: Vec::new(),
        }
    };
    CostProfile { finer: finer.iter().map(|f| Arc::new(of(f))).collect(), ..of(pieces) }
}

/// The per-piece cost profile of `pieces` and the finer cuts `finer`.
fn profile_of(pieces: &[PieceCosts], finer: &[Vec<PieceCosts>]) -> CostProfile {
    let of = |pieces: &[PieceCosts]| {
        let list = |g: fn(&PieceCosts) -> f64| pieces.iter().map(g).collect();
        let a2a = pieces.iter().any(|p| p.a2a[0] > 0.0 || p.a2a[1] > 0.0);
        CostProfile {
            f: list(|p| p.f),
            b: list(|p| p.b),
            w: list(|p| p.w),
            mem_f: list(|p| p.mem_f),
            mem_w: list(|p| p.mem_w),
            // A dense model's passes hold no all-to-all: no lists, both or neither (as a
            // file writes and reads them back).
            a2a_f: if a2a { list(|p| p.a2a[0]) } else { Vec::new() },
            a2a_b: if a2a { list(|p| p.a2a[1]) } else { Vec::new() },
            finer: Vec::new(),
        }
    };
    CostProfile { finer: finer.iter().map(|f| Arc::new(of(f))).collect(), ..of(pieces) }
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
            a2a: [add(|p| p.a2a[0]), add(|p| p.a2a[1])],
        }
    }
}
