//! The whole step as the user sets it: ZeRO stage, GPUs in all and the global batch, beside
//! the model's data-parallel replicas and rank order (which decide the links, so the model
//! holds them); checked against the model and the pipeline, each rule here once.

use crate::error::{Field, ParamError};
use crate::model::{Model, RankOrder};

/// The largest data-parallel degree taken.
pub const MAX_DP: u32 = 1_000_000;

/// The step settings as given; every one optional.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct StepSpec {
    /// ZeRO stage (`--zero`); `None` is 0.
    pub zero: Option<u32>,
    /// GPUs in all (`--gpus`); `None` is tp · pp · dp.
    pub gpus: Option<u32>,
    /// Sequences per step over every replica (`--global-batch`); `None` is microbatches ·
    /// micro-batch · dp.
    pub global_batch: Option<u32>,
}

/// The step settings resolved against a model and a pipeline.
#[derive(Clone, Debug, PartialEq)]
pub struct StepPlan {
    /// Data-parallel replicas.
    pub dp: u32,
    /// ZeRO stage, 0 to 3.
    pub zero: u32,
    /// GPUs in all: tp · pp · dp.
    pub gpus: u32,
    /// Pipeline devices.
    pub pp: u32,
    /// Microbatches per replica and step.
    pub microbatches: u32,
    /// Sequences per step over every replica.
    pub global_batch: u32,
    /// How ranks fill nodes.
    pub rank_order: RankOrder,
}

impl StepSpec {
    /// Whether any step setting is given.
    pub fn given(&self) -> bool {
        *self != StepSpec::default()
    }

    /// The microbatches per replica the global batch asks for, if one is given: `global
    /// batch / (dp · micro-batch)`.
    ///
    /// # Errors
    /// A [`ParamError`] when `dp · micro-batch` does not divide the global batch, or the
    /// replicas do not fit the GPUs.
    pub fn microbatches(&self, model: &Model, pp: u32) -> Result<Option<u32>, ParamError> {
        let Some(gb) = self.global_batch else { return Ok(None) };
        let dp = self.dp(model, pp)?;
        let per = u64::from(dp) * u64::from(model.micro_batch);
        if gb == 0 {
            return Err(ParamError::new(Field::GlobalBatch, "global-batch must be at least 1, found 0").hint(format!(
                "give the sequences of one step over every replica, a multiple of dp · micro-batch = {per}"
            )));
        }
        if u64::from(gb) % per != 0 {
            let below = u64::from(gb) / per * per;
            return Err(ParamError::new(
                Field::GlobalBatch,
                format!(
                    "global-batch {gb} is not a multiple of dp · micro-batch = {dp} · {} = {per}: every replica runs whole microbatches",
                    model.micro_batch
                ),
            )
            .hint(format!(
                "give a global batch that {per} divides, e.g. {} or {}; or change --dp or --micro-batch",
                below.max(per),
                below + per
            )));
        }
        let m = u64::from(gb) / per;
        u32::try_from(m).map(Some).map_err(|_| {
            ParamError::new(Field::GlobalBatch, format!("global-batch {gb} makes {m} microbatches, too many"))
                .hint("give a smaller --global-batch")
        })
    }

    /// [`StepSpec::microbatches`], where the user also gave the microbatches (`given`, from
    /// `-m`): the two must agree, since the global batch would otherwise override them.
    ///
    /// # Errors
    /// As [`StepSpec::microbatches`], and a [`ParamError`] naming both when they disagree.
    pub fn microbatches_given(&self, model: &Model, pp: u32, given: Option<u32>) -> Result<Option<u32>, ParamError> {
        let set = self.microbatches(model, pp)?;
        let (Some(m), Some(given), Some(gb)) = (set, given, self.global_batch) else { return Ok(set) };
        if m == given {
            return Ok(set);
        }
        let dp = self.dp(model, pp)?;
        let agreeing = u64::from(given) * u64::from(dp) * u64::from(model.micro_batch);
        Err(ParamError::new(
            Field::GlobalBatch,
            format!(
                "global-batch {gb} sets {m} microbatches (global batch / (dp · micro-batch) = {gb} / ({dp} · {})), but --microbatches (-m) {given} was given",
                model.micro_batch
            ),
        )
        .hint(format!("give one of the two: drop -m, or give --global-batch {agreeing} for {given} microbatches")))
    }

    /// The data-parallel degree: the model's, checked against `--gpus`.
    ///
    /// # Errors
    /// A [`ParamError`] when `--gpus` is not tp · pp · dp.
    pub fn dp(&self, model: &Model, pp: u32) -> Result<u32, ParamError> {
        let tp_pp = u64::from(model.tp.max(1)) * u64::from(pp.max(1));
        let dp = model.dp.max(1);
        if let Some(g) = self.gpus {
            let want = tp_pp * u64::from(dp);
            if u64::from(g) != want {
                let fits = u64::from(g) % tp_pp == 0 && u64::from(g) >= tp_pp;
                let hint = if fits {
                    format!("give --dp {} for {g} GPUs, or --gpus {want}", u64::from(g) / tp_pp)
                } else {
                    format!("give --gpus as a multiple of tp · pp = {tp_pp} (e.g. {want}), or change --tp, -p or --dp")
                };
                return Err(ParamError::new(
                    Field::Gpus,
                    format!("gpus {g} is not tp · pp · dp = {} · {} · {dp} = {want}", model.tp, pp),
                )
                .hint(hint));
            }
        }
        Ok(dp)
    }

    /// The replicas and the ZeRO stage on `model` over `pp` devices: what every run of a sweep
    /// or a plan shares, checked once.
    ///
    /// # Errors
    /// A [`ParamError`] when the GPUs are not `tp · pp · dp` or the stage is not 0 to 3.
    pub fn check(&self, model: &Model, pp: u32) -> Result<(u32, u32), ParamError> {
        let dp = self.dp(model, pp)?;
        let zero = check_zero(i128::from(self.zero.unwrap_or(0)))?;
        Ok((dp, zero))
    }

    /// The settings resolved on `model` over `pp` devices and `microbatches` microbatches.
    ///
    /// # Errors
    /// A [`ParamError`] naming the setting that is wrong.
    pub fn resolve(&self, model: &Model, pp: u32, microbatches: u32) -> Result<StepPlan, ParamError> {
        let (dp, zero) = self.check(model, pp)?;
        if let Some(m) = self.microbatches(model, pp)? {
            if m != microbatches {
                return Err(ParamError::new(
                    Field::Microbatches,
                    format!("microbatches {microbatches} differ from the {m} the global batch makes"),
                )
                .hint("give --global-batch or -m, not both; or make them agree"));
            }
        }
        let gpus = u64::from(model.tp.max(1)) * u64::from(pp) * u64::from(dp);
        let global_batch = u64::from(microbatches) * u64::from(model.micro_batch) * u64::from(dp);
        let too_many = |what: &str| {
            ParamError::new(Field::Dp, format!("{what} is too large to count")).hint("give a smaller --dp")
        };
        Ok(StepPlan {
            dp,
            zero,
            gpus: u32::try_from(gpus).map_err(|_| too_many("tp · pp · dp"))?,
            pp,
            microbatches,
            global_batch: u32::try_from(global_batch).map_err(|_| too_many("the global batch"))?,
            rank_order: model.rank_order,
        })
    }
}

impl StepPlan {
    /// GPUs between two neighbouring ranks of a data-parallel group, and of a pipeline.
    pub fn strides(&self, tp: u32) -> (u64, u64) {
        let (tp, pp, dp) = (u64::from(tp.max(1)), u64::from(self.pp), u64::from(self.dp));
        match self.rank_order {
            RankOrder::TpDpPp => (tp, tp * dp),
            RankOrder::TpPpDp => (tp * pp, tp),
        }
    }

    /// Whether a data-parallel group spans more than one node.
    pub fn dp_crosses_nodes(&self, tp: u32, gpus_per_node: u32) -> bool {
        let (stride, _) = self.strides(tp);
        self.dp > 1 && stride * u64::from(self.dp) > u64::from(gpus_per_node.max(1))
    }

    /// The node of pipeline device `k` of replica 0, TP rank 0.
    pub fn node_of_device(&self, tp: u32, gpus_per_node: u32, k: u32) -> u64 {
        let (_, stride) = self.strides(tp);
        stride * u64::from(k) / u64::from(gpus_per_node.max(1))
    }
}

/// The flags given that change nothing at their setting, each a note that opens with its
/// name (the CLI prefixes `--`) and ends with a hint: `rank-order` and ZeRO with one
/// data-parallel replica (`dp`), `rank-order` also when the whole job (tp · `pp` · dp GPUs)
/// sits in one node without expert parallelism (both orders then place every group alike),
/// `gpus` that leave one replica (not given `--dp`), and sequence parallelism or TP overlap
/// without tensor parallelism (`model.tp`). `spec` says which flags were given.
pub fn without_effect(spec: &crate::model::ModelSpec, model: &Model, step: &StepSpec, pp: u32, dp: u32) -> Vec<String> {
    let mut notes = Vec::new();
    let tp = model.tp;
    let gpus = u64::from(tp.max(1)) * u64::from(pp.max(1)) * u64::from(dp.max(1));
    let per_node = model.gpus_per_node.max(1);
    if let (Some(order), true) = (spec.rank_order, dp > 1 && gpus <= u64::from(per_node) && model.moe.ep <= 1) {
        notes.push(format!(
            "rank-order {} has no effect when all {gpus} GPUs sit in one node ({per_node} per node): both orders place every group alike\n  hint: give more GPUs than a node holds, or drop --rank-order",
            order.name()
        ));
    }
    if dp <= 1 {
        if let Some(order) = spec.rank_order {
            notes.push(format!(
                "rank-order {} has no effect with one data-parallel replica (dp 1): both orders fill the nodes alike\n  hint: give --dp above 1, or drop --rank-order",
                order.name()
            ));
        }
        if let Some(z) = step.zero.filter(|z| *z > 0) {
            notes.push(format!(
                "zero {z} has no effect with one data-parallel replica (dp 1): ZeRO shards over the replicas\n  hint: give --dp (or --gpus) for more replicas, or drop --zero"
            ));
        }
        if let (Some(g), None) = (step.gpus, spec.dp) {
            notes.push(format!(
                "gpus {g} are one pipeline's GPUs (tp · pp): one replica, as without it\n  hint: give more GPUs for data-parallel replicas, or drop --gpus"
            ));
        }
    }
    if tp <= 1 {
        let flags = [("sequence-parallel", spec.sequence_parallel), ("tp-overlap", spec.tp_overlap)];
        for (name, value) in flags {
            if let Some(v) = value {
                notes.push(format!(
                    "{name} {v} has no effect at tp 1: it changes how a tensor-parallel group splits its work\n  hint: give --tp above 1, or drop --{name}"
                ));
            }
        }
    }
    notes
}

/// A ZeRO stage: 0, 1, 2 or 3 (read wide, so `-1` gets the real range).
///
/// # Errors
/// A [`ParamError`] on [`Field::Zero`] otherwise.
pub fn check_zero(zero: i128) -> Result<u32, ParamError> {
    match u32::try_from(zero) {
        Ok(z) if z <= 3 => Ok(z),
        _ => Err(ParamError::new(Field::Zero, format!("zero must be 0, 1, 2 or 3, found {zero}")).hint(
            "0 replicates everything, 1 shards the optimizer state, 2 also the gradients, 3 also the parameters (FSDP)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(tp: u32, mb: u32, dp: u32) -> Model {
        Model { tp, dp, ..Model::new(8, 4096, 32, 2048, mb, 51_200) }
    }

    #[test]
    fn gpus_must_be_tp_pp_dp() {
        let m = model(8, 2, 24);
        assert_eq!(StepSpec { gpus: Some(1536), ..StepSpec::default() }.dp(&m, 8).unwrap(), 24);
        let e = StepSpec { gpus: Some(1000), ..StepSpec::default() }.dp(&m, 8).unwrap_err();
        assert_eq!(e.field, Field::Gpus);
        assert!(e.message.contains("is not tp · pp · dp = 8 · 8 · 24 = 1536"), "{e}");
        assert!(!e.hints.is_empty());
        let e = StepSpec { gpus: Some(1536), ..StepSpec::default() }.dp(&model(8, 2, 4), 8).unwrap_err();
        assert!(e.hints[0].contains("--dp 24"), "{e}");
    }

    #[test]
    fn the_global_batch_gives_the_microbatches_or_an_error() {
        let m = model(8, 2, 24);
        let spec = StepSpec { global_batch: Some(2304), ..StepSpec::default() };
        assert_eq!(spec.microbatches(&m, 8).unwrap(), Some(48));
        let e = StepSpec { global_batch: Some(2300), ..StepSpec::default() }.microbatches(&m, 8).unwrap_err();
        assert_eq!(e.field, Field::GlobalBatch);
        assert!(e.hints[0].contains("2256") && e.hints[0].contains("2304"), "{e}");
        assert!(spec.resolve(&m, 8, 47).is_err());
        let plan = spec.resolve(&m, 8, 48).unwrap();
        assert_eq!((plan.gpus, plan.global_batch), (1536, 2304));
    }

    /// Hostile pass 5, item 14: a rank order is a note, not a silent no-op, when the whole job
    /// sits in one node, and stays unnoted where it moves a group across nodes.
    #[test]
    fn a_rank_order_inside_one_node_is_noted() {
        let spec = crate::model::ModelSpec { rank_order: Some(RankOrder::TpPpDp), ..Default::default() };
        let step = StepSpec::default();
        let notes = without_effect(&spec, &model(1, 1, 2), &step, 2, 2);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("rank-order tp-pp-dp has no effect when all 4 GPUs sit in one node"), "{notes:?}");
        // 16 GPUs on nodes of 8: the order decides which groups cross.
        assert!(without_effect(&spec, &model(2, 1, 2), &step, 4, 2).is_empty());
        let moe = Model { moe: crate::model::Moe { ep: 2, ..model(1, 1, 2).moe }, ..model(1, 1, 2) };
        assert!(without_effect(&spec, &moe, &step, 2, 2).is_empty(), "EP groups may still cross");
    }

    #[test]
    fn zero_is_0_to_3_and_groups_cross_nodes_by_the_order() {
        let e = StepSpec { zero: Some(4), ..StepSpec::default() }.resolve(&model(8, 1, 1), 4, 8).unwrap_err();
        assert_eq!(e.field, Field::Zero);
        assert!(!e.hints.is_empty());
        let plan = StepSpec::default().resolve(&model(2, 1, 2), 4, 8).unwrap();
        // TP 2, DP 2 inside: a replica group of 4 GPUs fits a node of 8.
        assert!(!plan.dp_crosses_nodes(2, 8));
        let outer = StepPlan { rank_order: RankOrder::TpPpDp, ..plan };
        assert!(outer.dp_crosses_nodes(2, 8));
        assert_eq!(RankOrder::parse("TP-PP-DP").unwrap(), RankOrder::TpPpDp);
        assert!(RankOrder::parse("dp-tp").is_err());
    }
}
