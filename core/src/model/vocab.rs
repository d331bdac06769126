//! The vocabulary layers split over the devices (Vocabulary Parallelism, Yeung et al., MLSys
//! 2025): what one shard's S, T, IF and IB cost on this model and what a barrier costs, and the
//! per-stage FLOPs the authors' artifact counts (`artifact/exp_one_host.csv`). Uses the
//! model's sizes, the roofline and the hardware.

use super::roofline::{self, Breakdown};
use super::Model;
use crate::error::{Field, ParamError};
use crate::params::VocabCosts;

/// How a run of the artifact places the output layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadPlacement {
    /// On the last stage, layers split evenly (the artifact's `base`).
    LastStage,
    /// On the last stage, which holds `last` layers (`--final-stage-num-layers`; `redis`).
    Redistributed {
        /// Layers of the last stage.
        last: u32,
    },
    /// Split by vocabulary over every stage (`vocab`, `synctwice`, `interlaced`).
    Sharded,
}

/// Per-stage FLOPs of one training step, as the artifact counts them: matrix multiplications
/// only (no softmax, layer norm or embedding lookup), backward twice the forward.
#[derive(Clone, Debug, PartialEq)]
pub struct StageFlops {
    /// Layers per stage.
    pub layers: Vec<u32>,
    /// Forward FLOPs per stage: its layers, and the output layer on the last stage unless
    /// sharded.
    pub forward: Vec<f64>,
    /// Backward FLOPs per stage.
    pub backward: Vec<f64>,
    /// The vocabulary shard's S and T per stage (three times a shard's forward GEMM).
    pub vocab: Vec<f64>,
}

/// Megatron's split of `layers` over `stages` (`transformer_block.py`): `last` layers on the
/// final stage when given, the rest evenly over the others, the remainder on the stages just
/// before the final one.
pub fn megatron_split(layers: u32, stages: u32, last: Option<u32>) -> Vec<u32> {
    let n = stages as usize;
    if n == 0 {
        return Vec::new();
    }
    let (mut counts, extra) = match last {
        None => (vec![layers / stages; n], layers % stages),
        Some(last) => {
            let others = (stages - 1).max(1);
            let rest = layers.saturating_sub(last);
            let mut c = vec![rest / others; n];
            c[n - 1] = last;
            (c, rest % others)
        }
    };
    for i in 0..extra as usize {
        if let Some(c) = (n as i64 - 2 - i as i64).try_into().ok().and_then(|k: usize| counts.get_mut(k)) {
            *c += 1;
        }
    }
    counts
}

impl Model {
    /// One vocabulary shard's pass times on `devices` shards, µs: S the output layer's forward
    /// (its GEMM, and the softmax statistics over its `V/P` logits), T its backward (input and
    /// weight gradients), IF and IB the input layer's, each `1/P` of the whole layer's roofline
    /// time; and one barrier: a ring all-reduce over the `P` devices of the largest payload a
    /// barrier carries, the output layer's input gradient (one activation, `tokens × hidden`):
    /// `2(P − 1)` steps of a hop's latency and of `1/P` of the activation over the slowest link.
    /// Every barrier is priced so (those of the softmax statistics alone carry less).
    ///
    /// # Errors
    /// A [`ParamError`] when the model's settings are out of range.
    pub fn vocab_costs(&self, devices: u32) -> Result<VocabCosts, ParamError> {
        self.check()?;
        if devices == 0 {
            return Err(ParamError::new(Field::Devices, "devices must be at least 1, found 0")
                .hint("--devices is the number of pipeline ranks, one vocabulary shard each"));
        }
        let rates = self.rates(self.efficiency()?)?;
        let head = Breakdown::of(&self.head_ops(), &rates).totals();
        let embedding = Breakdown::of(&self.embedding_ops(), &rates).totals();
        let p = f64::from(devices);
        let hops = self.hops(devices)?;
        let activation = (hops.slowest() - self.latency).max(0.0);
        Ok(VocabCosts {
            s: head[roofline::F] / p,
            t: (head[roofline::B] + head[roofline::W]) / p,
            input_f: embedding[roofline::F] / p,
            input_b: (embedding[roofline::B] + embedding[roofline::W]) / p,
            reduce: 2.0 * (p - 1.0) * (self.latency + activation / p),
        })
    }

    /// The artifact's per-stage FLOPs for `microbatches` microbatches on `stages` stages with
    /// the output layer placed by `head`.
    pub fn artifact_flops(&self, stages: u32, microbatches: u32, head: HeadPlacement) -> StageFlops {
        let last = match head {
            HeadPlacement::Redistributed { last } => Some(last),
            _ => None,
        };
        let layers = megatron_split(self.layers, stages, last);
        let layer = self.layer_flops()[0];
        let output = self.head_flops();
        let m = f64::from(microbatches);
        let sharded = head == HeadPlacement::Sharded;
        let n = layers.len();
        let forward: Vec<f64> = layers
            .iter()
            .enumerate()
            .map(|(i, &l)| m * (f64::from(l) * layer + if i + 1 == n && !sharded { output } else { 0.0 }))
            .collect();
        let backward = forward.iter().map(|f| 2.0 * f).collect();
        let shard = if sharded { 3.0 * m * output / f64::from(stages.max(1)) } else { 0.0 };
        StageFlops { layers, forward, backward, vocab: vec![shard; n] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PieceCosts;
    use serde_json::Value;

    const FIXTURE: &str =
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/published/vocab_exp_one_host.json"));

    /// Whether `computed` is the CSV's `value`: exactly, or at the printed precision of a cell
    /// the CSV wrote in E-notation (`rounded`, e.g. `1.3524E+15`).
    fn agrees(value: f64, computed: f64, rounded: Option<&str>) -> bool {
        match rounded {
            None => value == computed,
            Some(text) => {
                let digits = text.split('E').next().unwrap_or("").replace('.', "").len();
                let printed: f64 = format!("{:.*e}", digits.saturating_sub(1), computed).parse().unwrap_or(f64::NAN);
                printed == value
            }
        }
    }

    /// Every per-stage FLOP count of the artifact's 40 runs (8 A100s, PP 8, 32 layers, hidden
    /// 3072, FFN 12288, 128 microbatches, vocabulary 32k to 256k, sequence 2k and 4k), from this
    /// model's own layer and head FLOPs: the rows `tools/vocab_flops.py check` reproduces.
    #[test]
    fn per_stage_flops_equal_the_artifact_rows() {
        let data: Value = serde_json::from_str(FIXTURE).expect("fixture");
        let rows = data["rows"].as_array().expect("rows");
        assert_eq!(rows.len(), 40);
        for row in rows {
            let n = |k: &str| row[k].as_u64().unwrap_or_else(|| panic!("{k}")) as u32;
            let mut model = Model::new(n("layers"), n("hidden"), n("heads"), n("seq"), n("micro_batch"), n("vocab"));
            model.ffn = Some(n("ffn"));
            let head = match row["method"].as_str() {
                Some("base") => HeadPlacement::LastStage,
                Some("redis") => HeadPlacement::Redistributed { last: n("layers_last") },
                _ => HeadPlacement::Sharded,
            };
            let got = model.artifact_flops(n("pp"), n("microbatches"), head);
            let name = row["name"].as_str().unwrap_or("?");
            let split: Vec<u32> = row["layers_per_stage"]
                .as_array()
                .expect("split")
                .iter()
                .map(|v| v.as_u64().unwrap_or(0) as u32)
                .collect();
            assert_eq!(got.layers, split, "{name}");
            for (key, values) in
                [("forward_flops", &got.forward), ("backward_flops", &got.backward), ("vocab_flops", &got.vocab)]
            {
                let want = row[key].as_array().expect("values");
                for (i, (w, g)) in want.iter().zip(values).enumerate() {
                    let rounded = row["rounded_cells"].get(format!("{key}[{i}]")).and_then(Value::as_str);
                    assert!(
                        agrees(w.as_f64().unwrap_or(f64::NAN), *g, rounded),
                        "{name} {key}[{i}]: csv {w}, computed {g}"
                    );
                }
            }
        }
    }

    /// The redistribution baseline of the 256k runs: 4,4,4,5,5,5,5 layers, then 0 and the head.
    #[test]
    fn redistribution_split_is_the_artifacts() {
        assert_eq!(megatron_split(32, 8, Some(0)), [4, 4, 4, 5, 5, 5, 5, 0]);
        assert_eq!(megatron_split(32, 8, None), [4; 8]);
    }

    /// Llama 3 8B at a fixed 400 TFLOP/s: S's GEMM is `2·tokens·hidden·vocab / P` FLOPs at that
    /// rate, counted by hand; the rest of S (the softmax statistics over its logits) is small.
    #[test]
    fn a_shards_gemm_is_its_share_of_the_heads_flops_by_hand() {
        let mut m = Model::new(32, 4096, 32, 8192, 1, 128_256);
        m.ffn = Some(14336);
        m.tflops = Some(400.0);
        let d = m.derive(8).unwrap();
        let flops = 2.0 * 8192.0 * 4096.0 * 128_256.0 / 8.0;
        let gemm_us = flops / 400e12 * 1e6;
        let s = d.split_vocab.shards.s;
        assert!(s >= gemm_us && s < 1.5 * gemm_us, "S {s} µs against its GEMM {gemm_us} µs");
        // T: the input and weight gradients, two GEMMs of the same size.
        let t = d.split_vocab.shards.t;
        assert!(t >= 2.0 * gemm_us && t < 2.5 * gemm_us, "T {t} µs against 2 × {gemm_us} µs");
    }

    /// With the vocabulary split, the last stage no longer holds the LM head nor the first the
    /// embedding: every stage costs its layers alone, and the work moved to the shards is the
    /// work taken off the ends (P shards of S, T, IF, IB per microbatch).
    #[test]
    fn the_split_moves_the_ends_work_to_the_shards_and_keeps_the_total() {
        let m = crate::model::ModelSpec::preset("llama-3-8b").resolve().unwrap();
        let d = m.derive(8).unwrap();
        let per = d.pieces.len() / 8;
        let split: Vec<PieceCosts> = d.split_vocab.pieces.chunks(per).map(PieceCosts::sum).collect();
        let whole = d.shares();
        let layer = |p: &PieceCosts| p.f + p.b + p.w;
        for p in &split {
            assert!((layer(p) - layer(&split[1])).abs() < 1e-9 * layer(p), "{p:?}");
        }
        assert!(layer(&whole[7]) > 1.4 * layer(&split[7]), "the head sat on the last stage");
        let v = d.split_vocab.shards;
        let moved = 8.0 * (v.s + v.t + v.input_f + v.input_b);
        let taken: f64 = whole.iter().zip(&split).map(|(a, b)| layer(a) - layer(b)).sum();
        assert!((moved - taken).abs() < 1e-9 * taken, "moved {moved}, taken {taken}");
        // The head's parameters are spread: every stage holds 2·V·H/P of them.
        let vh = 128_256.0 * 4096.0;
        assert_eq!((split[0].params, split[7].params), (split[3].params, split[3].params));
        assert!((whole[7].params - split[7].params - (vh - 2.0 * vh / 8.0)).abs() < 1.0);
        // A barrier: a ring all-reduce of one activation, more than its latencies alone.
        assert!(v.reduce > 14.0 * m.latency);
    }

    #[test]
    fn shards_split_the_head_and_the_barrier_grows_with_the_ring() {
        let mut m = Model::new(32, 4096, 32, 4096, 1, 128_256);
        m.ffn = Some(14336);
        let (two, eight) = (m.vocab_costs(2).unwrap(), m.vocab_costs(8).unwrap());
        assert!((two.s / eight.s - 4.0).abs() < 1e-9 && (two.t / eight.t - 4.0).abs() < 1e-9);
        assert!(eight.t > eight.s && eight.reduce > two.reduce);
    }
}
