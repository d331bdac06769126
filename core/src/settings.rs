//! The request the playground computes and its worker runs: which family, at which sizes
//! and costs, compared with which others, with costs from a model or set by hand, and the
//! memory trade asked for ([`Settings`]). It prices them as the CLI prices its flags
//! ([`Settings::effective_params`]) and writes the same run as a `bubblescope simulate` line
//! ([`Settings::cli_command`]). The permalink is its URL codec. Uses the registry, the model,
//! the cost lists, the trade and the layers below; no IO.

use std::fmt::Write as _;

use crate::analysis::Analysis;
use crate::error::{Field, ParamError};
use crate::model::{Derived, Model, ModelSpec};
use crate::params::{Costs, ScheduleParams};
use crate::step::{Step, StepSpec};
use crate::trade::{recompute_text, Offload, Pricing, Recompute, TradeSettings};
use crate::units::{shell_word, Units};

/// What changes the schedule: what the computation reads. View preferences (theme, bubble
/// measure, embed) live beside it in a permalink's `extra` and never feed the computation.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Settings {
    /// The family name.
    pub schedule: String,
    /// Sizes, options, costs and memory limit.
    pub params: ScheduleParams,
    /// Families stacked below for comparison.
    pub compare: Vec<String>,
    /// The model the costs come from, if any.
    pub model: ModelSpec,
    /// Recompute and offload, as set (not yet priced).
    pub trade: TradeSettings,
    /// The whole step around the pipeline: the ZeRO stage (the replicas are the model's).
    pub step: StepSpec,
}

impl Settings {
    /// What the numbers mean: µs and bytes when the costs come from a model.
    pub fn units(&self) -> Units {
        self.model.units()
    }

    /// The same run as a `bubblescope simulate` command: the family, its sizes, the options
    /// and memory limit it reads, and the model flags or the hand-set costs that differ from
    /// the defaults (per-device lists as lists).
    pub fn cli_command(&self) -> String {
        let p = &self.params;
        let family = crate::registry::family(&self.schedule);
        // The family's own name (links may spell it another way); anything else, quoted.
        let name = family.map_or_else(|| shell_word(&self.schedule), |f| f.name.to_string());
        let mut out = format!("bubblescope simulate -s {name} -p {} -m {}", p.devices, p.microbatches);
        let reads = |field: Field| family.is_some_and(|f| f.uses(field));
        let opts = [
            (Field::Chunks, p.chunks),
            (Field::Group, p.group),
            (Field::Waves, p.waves),
            (Field::SeqSplits, p.seq_splits),
        ];
        for (field, value) in opts {
            if let (true, Some(v)) = (reads(field), value) {
                let _ = write!(out, " --{} {v}", field.name());
            }
        }
        if reads(Field::A2aOverlap) && p.a2a_overlap {
            out.push_str(" --a2a-overlap");
        }
        if self.model.given() {
            let _ = write!(out, " {}", self.model.cli_flags());
            // The F&B time stays hand-set with a model (see `effective_params`).
            if let (true, Some(o)) = (reads(Field::Overlap), p.costs.overlap) {
                let _ = write!(out, " --overlap {o}");
            }
        } else {
            let flags = crate::cost_lists::cost_flags(&p.costs, p.devices, reads(Field::Overlap));
            if !flags.is_empty() {
                let _ = write!(out, " {flags}");
            }
        }
        // Every family is checked against a limit (the chart draws it), not only those that
        // schedule to one.
        if let Some(limit) = p.mem_limit {
            let text = if self.units().bytes() { crate::units::size_text(limit) } else { limit.to_string() };
            let _ = write!(out, " --mem-limit {text}");
        }
        for (key, value) in trade_pairs(&self.trade) {
            let _ = write!(out, " --{key} {}", shell_word(&value));
        }
        if let (true, Some(z)) = (self.model.given(), self.step.zero.filter(|z| *z > 0)) {
            let _ = write!(out, " --zero {z}");
        }
        out
    }

    /// The whole training step around `analysis` (a run of these settings), when the costs
    /// come from a model ([`crate::step::whole`]).
    pub fn whole_step(&self, analysis: &Analysis) -> Option<Result<Step, ParamError>> {
        self.model.given().then(|| {
            let model = self.model.resolve()?;
            crate::step::whole(&model, &self.step, analysis, &self.trade.recompute)
        })
    }

    /// What prices the settings' recompute and offload, as the CLI prices its flags: the model
    /// (its layers and host link) when the costs come from one, else the plain costs' mem-f
    /// (`costs`: the settings' costs before any trade).
    ///
    /// # Errors
    /// A [`ParamError`] naming the model setting that is wrong.
    pub fn pricing(&self, costs: &Costs) -> Result<Pricing, ParamError> {
        let model = self.model.given().then(|| self.model.resolve()).transpose()?;
        Ok(pricing(model.as_ref(), costs))
    }

    /// The model's costs on these settings' devices, when costs come from a model.
    pub fn derived(&self) -> Option<Result<Derived, ParamError>> {
        self.model.given().then(|| self.model.resolve().and_then(|m| m.derive(self.params.devices)))
    }

    /// The parameters the schedule is computed from: the settings', with the costs resolved
    /// ([`resolve_costs`]: derived from the model when one is given, the hand-set costs staying
    /// in the settings so switching back restores them, the overlap time kept; the recompute
    /// and offload priced).
    ///
    /// # Errors
    /// A [`ParamError`] naming the model or trade setting that is wrong.
    pub fn effective_params(&self) -> Result<ScheduleParams, ParamError> {
        let mut params = self.params.clone();
        let resolved = resolve_costs(&params.costs, &self.model, &self.trade, params.devices)?;
        if resolved.derived.is_some() {
            params.units = Units::Model;
        }
        params.costs = resolved.costs;
        Ok(params)
    }
}

/// Costs as a run takes them, and the model they came from.
#[derive(Clone, Debug)]
pub struct ResolvedCosts {
    /// The costs, the trade priced in them.
    pub costs: Costs,
    /// The model's costs, when a model gave them (its notes say what it assumed).
    pub derived: Option<Derived>,
}

/// The one path from costs as set to costs as run, for the CLI's flags, the playground and
/// its worker alike: `hand` (costs set by hand, read from a file or fitted to a measured run)
/// unless `model` is given, whose derived costs then replace them on `devices` devices (the
/// hand-set overlap time and send mode kept); then `trade`'s recompute and offload, priced by the model or
/// by the plain costs' mem-f ([`pricing`]). A bare copy rate in `hand` (a JSON file's
/// `copy_time`, which times its copies) is kept when `trade` prices no copies and no model is
/// given.
///
/// # Errors
/// A [`ParamError`] naming the model or trade setting that is wrong.
pub fn resolve_costs(
    hand: &Costs,
    model: &ModelSpec,
    trade: &TradeSettings,
    devices: u32,
) -> Result<ResolvedCosts, ParamError> {
    let model = model.given().then(|| model.resolve()).transpose()?;
    let derived = model.as_ref().map(|m| m.derive(devices)).transpose()?;
    let mut costs = match &derived {
        Some(d) => Costs { overlap: hand.overlap, p2p: hand.p2p, ..d.costs() },
        None => Costs { trade: None, ..hand.clone() },
    };
    // A file's copy rate (its copies' time, and nothing else) stays unless a setting prices
    // the copies anew; a model prices them by its host link.
    let file_rate = hand.trade.clone().filter(|t| derived.is_none() && t.is_none() && t.copy_time.is_some());
    costs.trade = trade.trade(&pricing(model.as_ref(), &costs), devices)?.map(std::sync::Arc::new).or(file_rate);
    Ok(ResolvedCosts { costs, derived })
}

/// What prices recompute and offload: `model` (its layers and host link) when the costs come
/// from one, else the plain `costs`' mem-f.
pub fn pricing(model: Option<&Model>, costs: &Costs) -> Pricing {
    match model {
        Some(m) => m.trade_pricing(),
        None => Pricing::Plain { mem_f: costs.mem_f },
    }
}

/// The trade settings that are set, as keys and values (the CLI's flags and the URL's keys).
pub(crate) fn trade_pairs(trade: &TradeSettings) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if trade.recompute.iter().any(|r| *r != Recompute::None) {
        out.push((Field::Recompute.name(), recompute_text(&trade.recompute)));
    }
    if trade.offload != Offload::None {
        out.push((Field::Offload.name(), trade.offload.to_string()));
    }
    let numbers = [(Field::CopyTime, trade.copy_time), (Field::HostGbps, trade.host_gbps)];
    out.extend(numbers.into_iter().filter_map(|(f, v)| v.map(|v| (f.name(), v.to_string()))));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_carries_a2a_overlap_for_the_families_that_read_it() {
        let mut settings =
            crate::permalink::parse("schedule=interleaved-1f1b&a2a-overlap=true&model=mixtral-8x7b&ep=2&dp=2")
                .0
                .settings();
        assert!(settings.params.a2a_overlap);
        assert!(settings
            .cli_command()
            .starts_with("bubblescope simulate -s interleaved-1f1b -p 4 -m 8 --a2a-overlap "));
        settings.schedule = "zb-h1".into();
        assert!(!settings.cli_command().contains("a2a"));
    }

    #[test]
    fn a_model_replaces_the_hand_set_costs_but_their_overlap_and_prices_the_trade() {
        let hand = Costs { f: 7.0, overlap: Some(2.5), mem_f: 4.0, ..Costs::default() };
        let trade = TradeSettings { offload: Offload::Auto, copy_time: Some(2.0), ..TradeSettings::default() };
        let plain = resolve_costs(&hand, &ModelSpec::default(), &trade, 4).unwrap();
        assert!(plain.derived.is_none());
        assert_eq!((plain.costs.f, plain.costs.overlap), (7.0, Some(2.5)));
        // Plain costs: the copy time is per mem-f, so one unit of memory takes 2 / 4.
        assert_eq!(plain.costs.trade.as_ref().unwrap().copy_time, Some(0.5));
        let model = ModelSpec::preset("zb-1.5b");
        let trade = TradeSettings { offload: Offload::Auto, ..TradeSettings::default() };
        let derived = resolve_costs(&hand, &model, &trade, 4).unwrap();
        let d = derived.derived.as_ref().expect("the model's costs");
        assert_eq!(
            Costs { overlap: Some(2.5), trade: None, ..derived.costs.clone() },
            Costs { overlap: Some(2.5), ..d.costs() }
        );
        // The model prices the copies with its GPU's host link.
        assert!(derived.costs.trade.as_ref().unwrap().copy_time.is_some_and(|t| t > 0.0));
    }
}
