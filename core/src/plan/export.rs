//! The best plan a file format can hold: `plan --export`.

use crate::error::{Field, ParamError};
use crate::params::Costs;
use crate::schedule::Schedule;

use super::search::Plan;

/// The plan [`export_best`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanExport {
    /// Its rank among the plans (0: the best).
    pub index: usize,
    /// The CSV.
    pub text: String,
    /// Why the better plans could not be written (the best plan's reason), when `index > 0`.
    pub skipped: Option<String>,
}

/// The first of `plans` (best first: all of them, not only those shown) whose schedule
/// `write` can write, as its text. `what` names the file (`a PyTorch schedule CSV`): a PyTorch
/// CSV cannot hold two-directional schedules, which run two pipelines.
///
/// # Errors
/// When no plan can be written: the best plan's reason, with a hint.
pub fn export_best<E: std::fmt::Display>(
    plans: &[Plan],
    what: &str,
    write: impl Fn(&Schedule, &Costs) -> Result<String, E>,
) -> Result<PlanExport, ParamError> {
    let mut skipped: Option<String> = None;
    for (index, plan) in plans.iter().enumerate() {
        let c = &plan.candidate;
        let exported = crate::registry::generate(c.family.name, &c.params)
            .map_err(|e| e.message)
            .and_then(|s| write(&s, &c.params.costs).map_err(|e| e.to_string()));
        match exported {
            Ok(text) => return Ok(PlanExport { index, text, skipped }),
            Err(e) => {
                // The reason alone: its hints speak of other commands' flags.
                let reason = e.lines().next().unwrap_or_default().to_string();
                skipped.get_or_insert(reason);
            }
        }
    }
    let reason = skipped.unwrap_or_else(|| "no plan fits".to_string());
    Err(ParamError::new(Field::Schedule, format!("no plan that fits can be written as {what}: {reason}"))
        .hint("leave out --export, or raise --mem-limit so that plans with one pipeline fit"))
}
