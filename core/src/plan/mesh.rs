//! The ways to lay a fixed number of GPUs out: every tensor × pipeline × data-parallel split,
//! with its ZeRO stage, that `plan --gpus N` searches. A split is kept when the model takes it
//! (TP divides the heads and stays in a node, a layer per stage, a given layout describes its
//! pipeline, the replicas divide the global batch) and its weights and optimizer state alone
//! leave room under the limit; the others are said with their reason. Uses model, step and
//! error only.

use crate::error::{Field, ParamError};
use crate::model::Model;

/// One split of the GPUs: `tp · pp · dp` of them, with a ZeRO stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mesh {
    /// Tensor-parallel degree: GPUs per stage.
    pub tp: u32,
    /// Pipeline stages: devices per pipeline.
    pub pp: u32,
    /// Data-parallel replicas.
    pub dp: u32,
    /// ZeRO stage, 0 to 3.
    pub zero: u32,
}

impl Mesh {
    /// The model as this split runs it: its TP and DP degrees. A layout stays: splits whose
    /// pipelines it does not describe are left out ([`meshes`]).
    pub fn apply(&self, model: &Model) -> Model {
        Model { tp: self.tp, dp: self.dp, ..model.clone() }
    }

    /// `tp 2 · pp 4 · dp 8 · zero 1`.
    pub fn describe(&self) -> String {
        format!("tp {} · pp {} · dp {} · zero {}", self.tp, self.pp, self.dp, self.zero)
    }
}

/// The degrees the user fixed; the others are searched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MeshPins {
    /// `--tp`.
    pub tp: Option<u32>,
    /// `-p`.
    pub pp: Option<u32>,
    /// `--dp`.
    pub dp: Option<u32>,
    /// `--zero`.
    pub zero: Option<u32>,
}

/// A split the search leaves out, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshSkip {
    /// The split (its ZeRO stage is the one that was checked).
    pub mesh: Mesh,
    /// Why, in words.
    pub why: String,
    /// Whether the memory limit is why (a higher limit would keep it).
    pub over_limit: bool,
}

/// The splits to search, and those left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meshes {
    /// Splits the model takes and whose static memory leaves room, in order of TP, then PP,
    /// then ZeRO stage.
    pub kept: Vec<Mesh>,
    /// Splits left out, with the reason.
    pub skipped: Vec<MeshSkip>,
}

/// Most splits one search runs: each runs a whole plan search.
pub const MAX_MESHES: usize = 256;

/// Every split of `gpus` GPUs for `model` under `limit` bytes per device, with `pins` fixed and
/// `global_batch` (over every replica) divided evenly.
///
/// # Errors
/// A [`ParamError`] when the pins do not divide the GPUs, or more than [`MAX_MESHES`] splits are
/// left to search.
pub fn meshes(
    model: &Model,
    gpus: u32,
    pins: MeshPins,
    global_batch: Option<u32>,
    limit: f64,
) -> Result<Meshes, ParamError> {
    if gpus == 0 {
        return Err(ParamError::new(Field::Gpus, "gpus must be at least 1, found 0")
            .hint("give the GPUs of the whole run, e.g. --gpus 64"));
    }
    check_pins(gpus, pins)?;
    // A layout's own faults (no `E` or `L`, layers that do not add up) hold on every split:
    // said once, with their hint, not as a reason on each split.
    if let Some(spec) = &model.layout {
        crate::model::Layout::parse(spec, model.layers, 1)?;
    }
    let mut out = Meshes::default();
    for tp in divisors(gpus).filter(|t| pins.tp.is_none_or(|p| p == *t)) {
        for pp in divisors(gpus / tp).filter(|p| pins.pp.is_none_or(|q| q == *p)) {
            let dp = gpus / tp / pp;
            if pins.dp.is_some_and(|d| d != dp) {
                continue;
            }
            // One replica shards nothing: every ZeRO stage is stage 0 there.
            let zeros: Vec<u32> = match pins.zero {
                _ if dp == 1 => vec![0],
                Some(z) => vec![z],
                None => (0..=3).collect(),
            };
            for zero in zeros {
                let mesh = Mesh { tp, pp, dp, zero };
                match why_not(model, mesh, global_batch, limit) {
                    None => out.kept.push(mesh),
                    Some((why, over_limit)) => out.skipped.push(MeshSkip { mesh, why, over_limit }),
                }
            }
        }
    }
    if out.kept.len() > MAX_MESHES {
        return Err(ParamError::new(
            Field::Gpus,
            format!("{gpus} GPUs split {} ways that fit, more than the {MAX_MESHES} one search runs", out.kept.len()),
        )
        .hint("fix one degree: --tp, -p, --dp or --zero"));
    }
    Ok(out)
}

/// Each pinned degree divides the GPUs, and so do they together.
fn check_pins(gpus: u32, pins: MeshPins) -> Result<(), ParamError> {
    let pinned = [(Field::Tp, pins.tp), (Field::Devices, pins.pp), (Field::Dp, pins.dp)];
    let mut product = 1u64;
    for (field, v) in pinned {
        if let Some(v) = v {
            product *= u64::from(v.max(1));
            if v == 0 || gpus % v != 0 {
                return Err(ParamError::new(field, format!("{} {v} does not divide the {gpus} GPUs", field.name()))
                    .hint("give --gpus as a multiple of each degree you fix, or leave the degree out to search it"));
            }
        }
    }
    if u64::from(gpus) % product != 0 {
        return Err(ParamError::new(
            Field::Gpus,
            format!("the degrees fixed multiply to {product}, which does not divide the {gpus} GPUs"),
        )
        .hint("leave one of --tp, -p or --dp out to search it, or change --gpus"));
    }
    if let Some(z) = pins.zero {
        crate::step::check_zero(i128::from(z)).map_err(|e| e.hint("leave --zero out to search every stage"))?;
    }
    Ok(())
}

/// Why `model` cannot run on `mesh` (and whether the limit is why), or `None` when it can and
/// its static memory leaves room.
fn why_not(model: &Model, mesh: Mesh, global_batch: Option<u32>, limit: f64) -> Option<(String, bool)> {
    if mesh.pp > model.layers {
        return Some((format!("{} stages for {} layers leave stages without a layer", mesh.pp, model.layers), false));
    }
    if let Some(g) = global_batch.filter(|g| g % mesh.dp != 0) {
        return Some((format!("the global batch {g} does not divide over {} replicas", mesh.dp), false));
    }
    let m = mesh.apply(model);
    if let Err(e) = m.check() {
        return Some((e.message.clone(), false));
    }
    let derived = match m.derive(mesh.pp) {
        Ok(d) => d,
        Err(e) => return Some((e.message.clone(), false)),
    };
    let least = derived.shares().iter().map(|s| s.params).fold(f64::INFINITY, f64::min);
    // A lower bound: ZeRO-3's gathered chunk left out (a family with many chunks gathers little).
    let statics = crate::step::static_bytes(&m, mesh.zero, mesh.dp, least, f64::INFINITY);
    (least.is_finite() && statics >= limit).then(|| {
        let why = format!(
            "weights and optimizer state alone take {} per device, over the limit of {}",
            crate::units::format_bytes(statics),
            crate::units::format_bytes(limit)
        );
        (why, true)
    })
}

/// The divisors of `n`, ascending: found up to √n, so a count of 4 billion GPUs takes 65,536
/// steps, not 4 billion.
fn divisors(n: u32) -> impl Iterator<Item = u32> {
    let n = u64::from(n);
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut d = 1u64;
    while d * d <= n {
        if n % d == 0 {
            small.push(d as u32);
            if d * d != n {
                large.push((n / d) as u32);
            }
        }
        d += 1;
    }
    small.into_iter().chain(large.into_iter().rev())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        Model { gpu: Some("a100-80gb".into()), ..Model::new(32, 4096, 32, 2048, 1, 32_000) }
    }

    #[test]
    fn every_kept_split_multiplies_to_the_gpus_and_nothing_is_both_kept_and_skipped() {
        for gpus in [1, 6, 8, 24, 64] {
            let found = meshes(&model(), gpus, MeshPins::default(), None, f64::INFINITY).unwrap();
            for m in &found.kept {
                assert_eq!(m.tp * m.pp * m.dp, gpus, "{m:?}");
                assert!(m.zero <= 3 && (m.dp > 1 || m.zero == 0), "{m:?}");
                assert!(!found.skipped.iter().any(|s| s.mesh == *m), "{m:?}");
            }
            // Every factorisation is either kept or said.
            let all: usize = divisors(gpus)
                .map(|t| divisors(gpus / t).map(|p| if gpus / t / p > 1 { 4 } else { 1 }).sum::<usize>())
                .sum();
            assert_eq!(found.kept.len() + found.skipped.len(), all, "gpus {gpus}");
        }
    }

    #[test]
    fn splits_the_model_cannot_take_are_skipped_with_their_reason() {
        let found = meshes(&model(), 64, MeshPins::default(), Some(8), f64::INFINITY).unwrap();
        let why =
            |tp: u32, pp: u32| found.skipped.iter().find(|s| s.mesh.tp == tp && s.mesh.pp == pp).map(|s| s.why.clone());
        // TP 16 is wider than a node of 8.
        assert!(why(16, 1).unwrap().contains("wider than a node"), "{:?}", why(16, 1));
        // 64 stages for 32 layers.
        assert!(why(1, 64).unwrap().contains("without a layer"));
        // dp 16 does not divide a global batch of 8.
        assert!(why(1, 4).unwrap().contains("global batch 8"));
        assert!(found.kept.iter().all(|m| m.tp <= 8 && m.pp <= 32 && 8 % m.dp == 0));
    }

    #[test]
    fn static_memory_over_the_limit_is_skipped_and_zero_3_shards_it_back_in() {
        // 6.7B parameters: 18 bytes each is ~121 GB on one GPU. Over 8 replicas ZeRO 1 keeps
        // 2 + 4 + 12/8 = 7.5 bytes (~50 GB), ZeRO 2 2 + 16/8 = 4 (~27 GB), ZeRO 3 18/8 (~15 GB).
        let found =
            meshes(&model(), 8, MeshPins { tp: Some(1), pp: Some(1), ..MeshPins::default() }, None, 20e9).unwrap();
        let kept: Vec<u32> = found.kept.iter().map(|m| m.zero).collect();
        assert_eq!(kept, vec![3], "{found:?}");
        assert!(found.skipped.iter().all(|s| s.why.contains("optimizer state alone")));
    }

    #[test]
    fn a_pinned_zero_stage_is_stage_0_on_one_replica_and_a_layout_keeps_its_pipeline() {
        let found = meshes(&model(), 4, MeshPins { zero: Some(3), ..MeshPins::default() }, None, 1e12).unwrap();
        assert!(found.kept.iter().all(|m| (m.dp == 1) == (m.zero == 0)), "{:?}", found.kept);
        let laid = Model { layout: Some("10,12,10".into()), ..model() };
        let found = meshes(&laid, 6, MeshPins::default(), None, 1e12).unwrap();
        // Three pieces: a pipeline of 3, or one device running them as chunks; never 2 or 6.
        assert!(found.kept.iter().any(|m| m.pp == 3), "{:?}", found.kept);
        assert!(found.kept.iter().all(|m| 3 % m.pp == 0), "{:?}", found.kept);
        assert!(found.skipped.iter().any(|s| s.mesh.pp == 2) && found.skipped.iter().any(|s| s.mesh.pp == 6));
    }

    #[test]
    fn divisors_are_every_divisor_once_ascending_and_fast_at_the_largest_count() {
        for n in 1..200u32 {
            let want: Vec<u32> = (1..=n).filter(|d| n % d == 0).collect();
            assert_eq!(divisors(n).collect::<Vec<_>>(), want, "{n}");
        }
        // 3 · 5 · 17 · 257 · 65537: 32 divisors.
        assert_eq!(divisors(u32::MAX).count(), 32);
        let found = meshes(&model(), u32::MAX, MeshPins::default(), None, 1e12).unwrap();
        assert!(found.kept.iter().all(|m| u64::from(m.tp) * u64::from(m.pp) * u64::from(m.dp) == u64::from(u32::MAX)));
    }

    #[test]
    fn pins_fix_their_degree_and_must_divide_the_gpus() {
        let pins = MeshPins { tp: Some(2), zero: Some(1), ..MeshPins::default() };
        let found = meshes(&model(), 16, pins, None, f64::INFINITY).unwrap();
        assert!(!found.kept.is_empty());
        assert!(found.kept.iter().all(|m| m.tp == 2 && (m.zero == 1 || m.dp == 1)));
        let e = meshes(&model(), 16, MeshPins { pp: Some(3), ..MeshPins::default() }, None, 1e12).unwrap_err();
        assert!(e.to_string().contains("does not divide the 16 GPUs"), "{e}");
        let e =
            meshes(&model(), 16, MeshPins { tp: Some(8), dp: Some(4), ..MeshPins::default() }, None, 1e12).unwrap_err();
        assert!(e.to_string().contains("multiply to 32"), "{e}");
    }
}
