//! "Fit under the limit": the cheapest recompute or offload setting under which the chosen
//! family fits the memory limit ([`bubblescope::plan::fit_trade`], the ladder `plan` tries),
//! what travels back from the worker, and the one line that says what it chose. The button
//! that asks is [`crate::components::FitButton`]; [`crate::engine::run_fit`] runs it.

#[cfg(feature = "engine")]
use bubblescope::plan::{describe_trade, fit_trade, Outcome, TradeSearch};
use bubblescope::settings::Settings;
use bubblescope::trade::TradeSettings;
use bubblescope::units::Units;
#[cfg(feature = "engine")]
use bubblescope::{family, Field};
use serde::{Deserialize, Serialize};

#[cfg(feature = "engine")]
use crate::state::Place;
use crate::state::UiError;

/// A setting the search chose, and what it costs and saves against the same run without it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chosen {
    /// The settings with it applied (the copy time and host link kept when it offloads).
    pub settings: TradeSettings,
    /// The setting in a few words (`recompute full on devices 0–1`).
    pub description: String,
    /// Step time it adds.
    pub time: f64,
    /// Memory it saves on the worst device.
    pub saved: f64,
}

/// What the search found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Fitted {
    /// It fits: with the chosen setting, or as it is (`None`).
    Fits {
        /// The setting, when one is needed.
        chosen: Option<Chosen>,
        /// The worst device's peak memory with it.
        peak: f64,
        /// The step time with it.
        cost: f64,
    },
    /// No setting fits: the least memory any of them reaches.
    Over {
        /// That memory (infinite when none ran).
        least: f64,
    },
}

/// The answer to one press of the button.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitResult {
    /// The limit it fitted under.
    pub limit: f64,
    /// What it found.
    pub fitted: Fitted,
}

/// The button's state: the last answer and whether a newer one is on its way.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FitState {
    /// The last answer, and the settings it is about (after its setting was applied).
    pub result: Option<(Result<FitResult, UiError>, Settings)>,
    /// Whether a search is running.
    pub pending: bool,
}

/// Runs the search for `settings` at `place` (the worker, or the page when it cannot start):
/// the chosen family at its own parameters, under the settings' memory limit, with the ladder
/// priced as the settings price a trade ([`TradeSearch::priced`]).
///
/// # Errors
/// A [`UiError`] at the setting to change: no memory limit, a model or trade setting that is
/// wrong, a size the playground refuses live, or a family that cannot run at all.
#[cfg(feature = "engine")]
pub fn compute_fit(settings: &Settings, place: Place) -> Result<FitResult, UiError> {
    let at = |e: bubblescope::ParamError| UiError { field: Some(e.field), message: e.to_string() };
    let Some(fam) = family(&settings.schedule) else {
        let e = bubblescope::registry::unknown_family(&settings.schedule);
        return Err(UiError { field: Some(Field::Schedule), message: e.to_string() });
    };
    let params = fam.own_params(&settings.effective_params().map_err(at)?);
    let Some(limit) = params.mem_limit else {
        return Err(UiError {
            field: Some(Field::MemLimit),
            message: "fitting under the limit needs a memory limit\n  hint: set the memory limit per device first"
                .to_string(),
        });
    };
    let refused = |r: bubblescope::live::Refusal| UiError { field: Some(r.field()), message: r.message(fam, &params) };
    let passes = bubblescope::live::admit(fam, &params, place).map_err(refused)?;
    // Every rung of the ladder is a run: a slow search would hold all of them up.
    if let Some(r) = bubblescope::live::refuse_in_batch(fam, &params, passes) {
        return Err(refused(r));
    }
    let search = TradeSearch::priced(&settings.trade, &settings.pricing(&params.costs).map_err(at)?).map_err(at)?;
    let fitted = match fit_trade(fam, &params, limit, search) {
        Outcome::Fits(plan) => Fitted::Fits {
            chosen: plan.trade.map(|c| Chosen {
                settings: settings.trade.choosing(&c.trade),
                description: describe_trade(&c.trade, params.devices),
                time: c.time,
                saved: c.saved,
            }),
            peak: plan.memory,
            cost: plan.stats.cost,
        },
        Outcome::OverLimit(least) => Fitted::Over { least },
        Outcome::Invalid(message) | Outcome::Deadlocks(message) => return Err(UiError { field: None, message }),
        Outcome::NotTried => {
            return Err(UiError { field: None, message: "the search did not try this schedule".to_string() })
        }
    };
    Ok(FitResult { limit, fitted })
}

impl FitResult {
    /// The trade settings to apply: the chosen setting's, or none when it fits as it is (`None`
    /// when nothing fits).
    pub fn apply_to(&self, current: &TradeSettings) -> Option<TradeSettings> {
        match &self.fitted {
            Fitted::Fits { chosen: Some(c), .. } => Some(c.settings.clone()),
            Fitted::Fits { chosen: None, .. } => Some(current.choosing(&bubblescope::trade::Trade::default())),
            Fitted::Over { .. } => None,
        }
    }

    /// The one line the page shows, in `units`: what was chosen, what it costs in time and
    /// saves in memory, or the least memory that would fit.
    pub fn summary(&self, units: Units) -> String {
        let limit = units.memory(self.limit);
        match &self.fitted {
            Fitted::Fits { chosen: Some(c), peak, cost } => {
                let before = cost - c.time;
                let share = if before > 0.0 { format!(" ({:+.1}%)", 100.0 * c.time / before) } else { String::new() };
                format!(
                    "Chose {}: {}{share}, saves {}; peak {} under the {limit} limit.",
                    c.description,
                    bubblescope::plan::per_step(c.time, |v| units.time(v)),
                    units.memory(c.saved),
                    units.memory(*peak),
                )
            }
            Fitted::Fits { chosen: None, peak, .. } => {
                format!(
                    "Fits as it is: peak {} under the {limit} limit, no recompute or offload needed.",
                    units.memory(*peak)
                )
            }
            Fitted::Over { least } if least.is_finite() => format!(
                "Nothing fits under {limit}: the least memory any recompute or offload setting reaches is {}.",
                units.memory(*least)
            ),
            Fitted::Over { .. } => format!("Nothing fits under {limit}: no recompute or offload setting could run."),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(query: &str) -> Settings {
        let (link, warnings) = bubblescope::permalink::parse(query);
        assert!(warnings.is_empty(), "{warnings:?}");
        link.settings()
    }

    #[test]
    fn a_tight_limit_chooses_a_setting_that_fits_and_says_what_it_costs() {
        // 1F1B on 4 devices holds 4 · mem-f on device 0: a limit of 3 needs a trade.
        let fit = compute_fit(&settings("devices=4&microbatches=8&mem-limit=3"), Place::Worker).unwrap();
        let Fitted::Fits { chosen: Some(c), peak, .. } = &fit.fitted else { panic!("{fit:?}") };
        assert!(*peak <= 3.0 && c.saved > 0.0 && c.time >= 0.0, "{fit:?}");
        assert!(c.description.starts_with("recompute full"), "{}", c.description);
        let line = fit.summary(Units::Cost);
        assert!(line.starts_with("Chose recompute full"), "{line}");
        // Applied, the settings run under the limit.
        let mut applied = settings("devices=4&microbatches=8&mem-limit=3");
        applied.trade = fit.apply_to(&applied.trade).unwrap();
        let run = bubblescope::run("1f1b", &applied.effective_params().unwrap()).unwrap();
        assert!((run.stats.peak_memory - peak).abs() < 1e-9, "{} vs {peak}", run.stats.peak_memory);
    }

    #[test]
    fn a_loose_limit_fits_as_it_is_and_an_impossible_one_names_the_least_memory() {
        let fit = compute_fit(&settings("devices=4&mem-limit=100&recompute=full"), Place::Worker).unwrap();
        assert!(matches!(fit.fitted, Fitted::Fits { chosen: None, .. }), "{fit:?}");
        assert_eq!(fit.apply_to(&settings("recompute=full").trade), Some(TradeSettings::default()));
        let fit = compute_fit(&settings("devices=4&mem-limit=0.01"), Place::Worker).unwrap();
        let Fitted::Over { least } = fit.fitted else { panic!("{fit:?}") };
        assert!(least.is_finite() && least > 0.01);
        assert!(fit.summary(Units::Cost).starts_with("Nothing fits under"));
    }

    #[test]
    fn without_a_limit_the_error_is_at_the_limit() {
        let e = compute_fit(&settings("devices=4"), Place::Worker).unwrap_err();
        assert_eq!(e.field, Some(Field::MemLimit));
        assert!(e.message.contains("hint:"));
    }
}
