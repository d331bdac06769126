//! "Balance it": the bottleneck banner's fix. The planner ([`bubblescope::plan::plan`]) runs at
//! the page's devices, microbatches and micro-batch size, over every family and every layer
//! split it tries, with pairing for an MoE model; the fastest that fits the page's limit
//! replaces the current family, layout and pairing. What travels back from the worker, and the
//! one line that says what it did. Uses the state layer only: the button (`BalanceButton`, in
//! the components) asks the engine for it.

#[cfg(feature = "engine")]
use bubblescope::plan::{plan, CostSource, PlanSpec, StaticMemory, TradeSpec};
use bubblescope::settings::Settings;
use bubblescope::units::Units;
#[cfg(feature = "engine")]
use bubblescope::Field;
use serde::{Deserialize, Serialize};

#[cfg(feature = "engine")]
use crate::state::Place;
use crate::state::UiError;

/// A run's step time and idle share.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shares {
    /// The schedule's cost (longest device span).
    pub cost: f64,
    /// The share of GPU time idle: (cost − ideal) / cost, the page's bubble rate.
    pub idle: f64,
}

/// What the search chose to run instead.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// The family.
    pub schedule: String,
    /// Its chunks, for the families that take them.
    pub chunks: Option<u32>,
    /// The layer split (`None`: the even split).
    pub layout: Option<String>,
    /// Whether F and B pair over the all-to-all (Megatron's combined 1F1B, an MoE model).
    pub a2a_overlap: bool,
    /// The family's title, with its chunks and pairing.
    pub label: String,
}

/// The answer to one press of the button.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Balanced {
    /// The current run.
    pub before: Shares,
    /// The best plan found: what it runs and its numbers; `None` when nothing beats the
    /// current run.
    pub chosen: Option<(Choice, Shares)>,
    /// How many plans fit the limit.
    pub fitting: usize,
}

/// Searches families and layer splits for `settings`' model at their devices and
/// microbatches, at `place`'s live limits.
///
/// # Errors
/// A [`UiError`] at the setting to change: no model (a layer split needs layers), a model or
/// size the playground refuses, or a current run that cannot run.
#[cfg(feature = "engine")]
pub fn compute_balance(settings: &Settings, place: Place) -> Result<Balanced, UiError> {
    let at = |e: bubblescope::ParamError| UiError { field: Some(e.field), message: e.to_string() };
    if !settings.model.given() {
        return Err(UiError {
            field: Some(Field::Model),
            message: "balancing moves layers between devices, and hand-set costs have none\n  hint: take the costs from a model in the Costs panel".to_string(),
        });
    }
    let Some(fam) = bubblescope::family(&settings.schedule) else {
        let e = bubblescope::registry::unknown_family(&settings.schedule);
        return Err(UiError { field: Some(Field::Schedule), message: e.to_string() });
    };
    let params = fam.own_params(&settings.effective_params().map_err(at)?);
    let refused = |r: bubblescope::live::Refusal| UiError { field: Some(r.field()), message: r.message(fam, &params) };
    bubblescope::live::admit(fam, &params, place).map_err(refused)?;
    let current =
        bubblescope::registry::run(fam.name, &params).map_err(|e| UiError { field: None, message: e.to_string() })?;
    let before = Shares { cost: current.stats.cost, idle: current.stats.bubble_rate };
    // Every layer split the planner tries, from the model without the split the link gives.
    let mut model = settings.model.resolve().map_err(at)?;
    model.layout = None;
    let dp = settings.step.check(&model, params.devices).map_err(at)?.0;
    let global = u64::from(params.microbatches) * u64::from(model.micro_batch) * u64::from(dp);
    let spec = PlanSpec {
        devices: params.devices,
        mem_limit: params.mem_limit.unwrap_or(bubblescope::params::MAX_MEM_LIMIT),
        source: CostSource::Model(model),
        global_batch: Some(u32::try_from(global).map_err(|_| UiError {
            field: Some(Field::Microbatches),
            message: "the global batch is too large to count\n  hint: give fewer microbatches".to_string(),
        })?),
        keep_micro_batch: true,
        // The page's limit counts activations only, as `simulate` does.
        static_memory: StaticMemory::Fixed(0.0),
        families: bubblescope::plan::all_families()
            .into_iter()
            .filter(|f| bubblescope::live::admit(f, &f.own_params(&params), place).is_ok())
            .collect(),
        trade: match params.costs.trade.clone() {
            Some(t) => TradeSpec::Fixed(t),
            None => TradeSpec::None,
        },
        step: bubblescope::step::StepSpec { global_batch: None, ..settings.step.clone() },
        p2p: params.costs.p2p,
    };
    let found = plan(&spec).map_err(at)?;
    let chosen = found
        .plans
        .iter()
        .min_by(|a, b| a.stats.cost.total_cmp(&b.stats.cost))
        .filter(|p| p.stats.cost < before.cost * (1.0 - 1e-9))
        .map(|p| {
            let c = &p.candidate;
            let choice = Choice {
                schedule: c.family.name.to_string(),
                chunks: c.params.chunks,
                layout: c.layout.clone(),
                a2a_overlap: c.params.a2a_overlap,
                label: format!(
                    "{}{}{}",
                    c.family.title,
                    c.params
                        .chunks
                        .filter(|_| c.family.uses(Field::Chunks))
                        .map_or(String::new(), |k| format!(" with {k} chunks")),
                    if c.params.a2a_overlap { ", F and B paired" } else { "" }
                ),
            };
            (choice, Shares { cost: p.stats.cost, idle: p.stats.bubble_rate })
        });
    Ok(Balanced { before, chosen, fitting: found.plans.len() })
}

impl Balanced {
    /// The settings with the choice applied to `link`: its family, chunks and layer split.
    pub fn apply_to(&self, link: &mut bubblescope::permalink::Permalink) {
        if let Some((c, _)) = &self.chosen {
            link.schedule.clone_from(&c.schedule);
            link.params.chunks = c.chunks;
            link.model.layout.clone_from(&c.layout);
            link.params.a2a_overlap = c.a2a_overlap;
        }
    }

    /// The one line the page shows, in `units`.
    pub fn summary(&self, units: Units) -> String {
        let pct = |v: f64| format!("{}%", bubblescope::units::format_number(v * 100.0, 2));
        match &self.chosen {
            Some((c, after)) => format!(
                "Balanced: {}{}. Idle {} → {}, step {} → {}.",
                c.label,
                c.layout.as_ref().map_or_else(|| ", layers split evenly".to_string(), |l| format!(", layers {l}")),
                pct(self.before.idle),
                pct(after.idle),
                units.time(self.before.cost),
                units.time(after.cost),
            ),
            None => format!(
                "Already the fastest: none of the {} plans that fit (every family and layer split the planner tries) beats this run's idle {}.",
                self.fitting,
                pct(self.before.idle)
            ),
        }
    }
}

/// The button's state: the last answer and the settings it is about (after its choice was
/// applied), and whether a search is running.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BalanceState {
    /// The last answer, and the settings it is about.
    pub result: Option<(Result<Balanced, UiError>, Settings)>,
    /// Whether a search is running.
    pub pending: bool,
}

#[cfg(all(test, feature = "engine"))]
mod tests {
    use super::*;

    fn link(query: &str) -> bubblescope::permalink::Permalink {
        let (link, warnings) = bubblescope::permalink::parse(query);
        assert!(warnings.is_empty(), "{warnings:?}");
        link
    }

    /// The README's headline: Llama 3 8B with ZB-V on 8 devices idles 31% of the time, device 0
    /// holding the embedding and the LM head. Balanced, the page's own run at the new settings
    /// gives the numbers the search promised, with far less idle time.
    #[test]
    fn the_llama_headline_balances_and_the_applied_settings_run_as_promised() {
        let mut l = link("schedule=zb-v&devices=8&microbatches=32&model=llama-3-8b&mem-limit=80GiB");
        let b = compute_balance(&l.settings(), Place::Worker).unwrap();
        assert!((b.before.idle - 0.3135).abs() < 1e-3, "{b:?}");
        let (choice, after) = b.chosen.clone().expect("a better plan");
        assert!(after.idle < 0.8 * b.before.idle && after.cost < b.before.cost, "{b:?}");
        b.apply_to(&mut l);
        let s = l.settings();
        let run = bubblescope::registry::run(&s.schedule, &s.effective_params().unwrap()).unwrap();
        assert_eq!(s.schedule, choice.schedule);
        assert!((run.stats.cost - after.cost).abs() <= 1e-9 * after.cost, "{} vs {}", run.stats.cost, after.cost);
        assert!((run.stats.bubble_rate - after.idle).abs() < 1e-9);
        assert!(run.stats.peak_memory <= s.params.mem_limit.unwrap(), "it fits the limit");
        let line = b.summary(Units::Model);
        assert!(
            line.starts_with(&format!("Balanced: {}, layers ", bubblescope::family(&choice.schedule).unwrap().title)),
            "{line}"
        );
        assert!(line.contains("Idle 31.3"), "{line}");
        // Balancing again finds nothing better.
        let again = compute_balance(&s, Place::Worker).unwrap();
        assert!(again.chosen.is_none(), "{again:?}");
        assert!(again.summary(Units::Model).starts_with("Already the fastest"));
    }

    /// An MoE model whose all-to-all can hide under combined 1F1B: whatever the search
    /// chooses (paired or not), the page's own run at the applied settings gives its numbers.
    #[test]
    fn an_moe_run_balances_to_what_the_search_promised() {
        let mut l = link("schedule=1f1b&devices=4&microbatches=8&model=olmoe-1b-7b&dp=2&ep=2&mem-limit=80GiB");
        let b = compute_balance(&l.settings(), Place::Worker).unwrap();
        let (choice, after) = b.chosen.clone().expect("a better plan than 1F1B");
        b.apply_to(&mut l);
        let s = l.settings();
        assert_eq!((s.schedule.as_str(), s.params.a2a_overlap), (choice.schedule.as_str(), choice.a2a_overlap));
        let run = bubblescope::registry::run(&s.schedule, &s.effective_params().unwrap()).unwrap();
        assert!((run.stats.cost - after.cost).abs() <= 1e-9 * after.cost, "{} vs {}", run.stats.cost, after.cost);
        assert_eq!(b.summary(Units::Model).contains("F and B paired"), choice.a2a_overlap);
    }

    #[test]
    fn hand_set_costs_have_no_layers_to_move() {
        let e = compute_balance(&link("schedule=1f1b&devices=4&f=1,1,1,2").settings(), Place::Worker).unwrap_err();
        assert_eq!(e.field, Some(Field::Model));
        assert!(e.message.contains("hint:"), "{}", e.message);
    }
}
