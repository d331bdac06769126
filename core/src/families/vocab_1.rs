//! Vocab-1 (Yeung et al., MLSys 2025): 1F1B with the output and input layers split over the
//! devices by vocabulary, two barriers per microbatch (after S and after T). The artifact
//! calls it `synctwice`; the authors' code runs it with `--disable-backward-fusion`.
//!
//! The last stage's B waits for the T barrier, a microbatch after its F, so every rank runs one
//! more warm-up forward than Vocab-2: rank `r` holds `p + 2 − r` microbatches of activation.

use super::vocab_1f1b::{vocab_1f1b, Barriers};
use super::vocab_common::{check_fsm_costs, check_microbatches, check_stage_backwards, vocab_costs};
use super::{per_device_microbatch, BubbleQuantity, Family, FamilyGroup, Prediction};
use crate::error::ParamError;
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "vocab-1",
    title: "Vocab-1",
    group: FamilyGroup::Vocabulary,
    summary: "1F1B with the output and input layers split by vocabulary over every device; two barriers per microbatch",
    reference: "Yeung, Qi, Lin, Wan, Balancing Pipeline Parallelism with Vocabulary Parallelism (MLSys 2025)",
    url: "https://arxiv.org/abs/2411.05288",
    constraints:
        "a vocabulary (--s, --t or a model); at least P + 2 microbatches; b + w ≥ f ≥ the input layer's forward",
    passes: per_device_microbatch::<6>,
    generate,
    predict,
    ..Family::DEFAULTS
};

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    let vocab = vocab_costs(params, FAMILY.name)?;
    let (f, b) = (params.costs.f, params.costs.b + params.costs.w);
    check_stage_backwards(&params.costs, params.devices, FAMILY.name)?;
    check_fsm_costs(f, b, &vocab, FAMILY.name)?;
    check_microbatches(
        params,
        params.devices + 2,
        FAMILY.name,
        "the authors' loop runs P + 2 forwards before its first backward; with fewer microbatches it sends a forward twice and hangs",
    )?;
    Ok(vocab_1f1b(params.devices, params.microbatches, f, b, Barriers::Two))
}

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    let p = params.devices;
    Some(Prediction {
        bubble: None,
        bubble_formula: "none published in closed form",
        bubble_quantity: BubbleQuantity::CostMinusIdeal,
        peak_memory: Some((0..p).map(|d| f64::from(p + 2 - d) * params.costs.mem_f).collect()),
        memory_formula: "(P + 2 − d)·mem-f on device d",
    })
}
