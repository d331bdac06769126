//! "Compare all families": what the view computes (every family at the settings, the CLI's
//! sweep runs) and what travels back from its worker. The card that draws it is
//! [`crate::components::CompareAllCard`].

use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[cfg(feature = "engine")]
use bubblescope::plan::{run_one, InvalidRun, RunSpec, SweepSpec};
use bubblescope::plan::{ParetoPoint, Sweep};
#[cfg(feature = "engine")]
use bubblescope::settings::Settings;
use bubblescope::Family;
use leptos::prelude::*;

use crate::state::AppState;

/// The URL key of the view (`view=all`), a view preference.
pub const VIEW_KEY: &str = "view";

/// One family's run as the view shows it: what travels from the worker ([`crate::wire`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AllRun {
    /// Its family.
    #[serde(with = "family_name")]
    pub family: &'static Family,
    /// Chunks per device it ran with.
    pub chunks: u32,
    /// Time per iteration.
    pub cost: f64,
    /// Peak activation memory per device.
    pub peak_memory: f64,
    /// The papers' bubble rate.
    pub bubble_rate: f64,
    /// Whether it is on the memory/time Pareto front.
    pub pareto: bool,
}

/// A family that could not run at the settings, and why.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AllRefused {
    /// Its family.
    #[serde(with = "family_name")]
    pub family: &'static Family,
    /// The reason, as the CLI's `sweep` gives it.
    pub error: String,
}

/// A family travels by its name and is looked up in the registry on arrival.
mod family_name {
    use bubblescope::Family;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(family: &&'static Family, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(family.name)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<&'static Family, D::Error> {
        let name = String::deserialize(d)?;
        bubblescope::family(&name).ok_or_else(|| D::Error::custom(format!("unknown family {name:?} in the comparison")))
    }
}

/// Every family at the settings: the runs and the refusals.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct AllRuns {
    /// What ran, in registry order, the front marked.
    pub runs: Vec<AllRun>,
    /// What could not run.
    pub invalid: Vec<AllRefused>,
}

impl AllRuns {
    /// What the view needs of a finished sweep.
    pub fn of(sweep: &Sweep) -> AllRuns {
        AllRuns {
            runs: sweep
                .runs
                .iter()
                .map(|r| AllRun {
                    family: r.spec.family,
                    chunks: r.chunks,
                    cost: r.stats.cost,
                    peak_memory: r.stats.peak_memory,
                    bubble_rate: r.stats.bubble_rate,
                    pareto: r.pareto,
                })
                .collect(),
            invalid: sweep
                .invalid
                .iter()
                .map(|r| AllRefused { family: r.spec.family, error: r.error.clone() })
                .collect(),
        }
    }

    /// Every run as a point of the Pareto chart.
    pub fn pareto_points(&self) -> Vec<ParetoPoint<'static>> {
        self.runs
            .iter()
            .map(|r| ParetoPoint {
                family: r.family.name,
                peak_memory: r.peak_memory,
                cost: r.cost,
                pareto: r.pareto,
                traded: false,
            })
            .collect()
    }
}

/// Every family at `settings`, the way `bubblescope sweep --schedules all` runs them, but
/// leaving out runs too big to compute live (they are listed as refused with the reason).
/// Runs in the background worker ([`crate::engine::run_all`]); on the page only when the
/// worker cannot start.
///
/// # Errors
/// The settings' own error (a bad model, a bad cost list), as text.
// The outcomes are the sweep's own type, as `plan::run_one` returns them.
#[allow(clippy::result_large_err)]
#[cfg(feature = "engine")]
pub fn compute_all(settings: &Settings) -> Result<AllRuns, String> {
    let params = settings.effective_params().map_err(|e| e.to_string())?;
    let spec = SweepSpec {
        families: bubblescope::FAMILIES.iter().collect(),
        devices: params.devices,
        microbatches: vec![params.microbatches],
        chunks: Vec::new(),
        group: params.group,
        mem_limits: params.mem_limit.into_iter().collect(),
        costs: params.costs.clone(),
        bytes: settings.model.given(),
        trades: Vec::new(),
        step: None,
        a2a: false,
    };
    let specs = spec.expand().map_err(|e| e.to_string())?;
    let outcomes = specs.into_iter().map(|spec: RunSpec| {
        match bubblescope::live::refuse_in_batch(spec.family, &spec.params, spec.passes()) {
            Some(refusal) => Err(InvalidRun { spec, error: refusal.short() }),
            None => run_one(spec),
        }
    });
    Ok(AllRuns::of(&Sweep::collect(outcomes)))
}

/// The view's data: the last runs computed (kept while newer ones compute) and whether newer
/// ones are on their way.
#[derive(Clone, Default)]
pub struct AllState {
    /// The latest finished result.
    pub result: Option<Result<Arc<AllRuns>, String>>,
    /// Whether the settings changed since (a computation is running).
    pub pending: bool,
}

/// Opens or closes the view (kept in the URL as `view=all`).
pub fn set_open(state: AppState, open: bool) {
    state.link.update(|l| l.set_extra(VIEW_KEY, open.then(|| "all".to_string())));
}

/// Whether the view is open.
pub fn is_open(state: AppState) -> bool {
    state.link.with(|l| l.extra(VIEW_KEY) == Some("all"))
}
