//! Why the bubble is there, for the attribution bar and the chart's gap shading: the core's
//! [`bubblescope::gaps::causes`] of an analysis, computed once per analysis and kept while it
//! is shown (redrawing, zooming or toggling the shading again never re-simulates).

use std::cell::RefCell;
use std::sync::Arc;

use bubblescope::attribution::Parts;
use bubblescope::gaps::Causes;
use bubblescope::{Analysis, Costs};

/// The URL key of the gap shading (`causes=1`), a view preference.
pub const CAUSES_KEY: &str = "causes";

/// How many analyses keep their causes: the main schedule, the compared ones, the last good one.
const KEEP: usize = 12;

thread_local! {
    static CACHE: RefCell<Vec<(Arc<Analysis>, Arc<Causes>)>> = const { RefCell::new(Vec::new()) };
}

/// The split of `analysis`'s `cost − ideal`: from its causes when they are kept, otherwise
/// from one re-simulation without communication, without listing gaps (the bar under the
/// stats needs no more, so a large schedule is not paid for twice).
pub fn attribution_of(analysis: &Arc<Analysis>, costs: &Costs) -> Option<Parts> {
    let kept = CACHE.with(|c| c.borrow().iter().find(|(a, _)| Arc::ptr_eq(a, analysis)).map(|(_, c)| c.clone()));
    match kept {
        Some(causes) => Some(causes.attribution.overall),
        None => bubblescope::attribution::overall(&analysis.schedule, costs, &analysis.stats).ok(),
    }
}

/// The causes of `analysis`, simulated under `costs`; `None` if a re-simulation fails (it
/// cannot when the analysis ran). Cached by the analysis (the same `Arc`, so the same costs).
pub fn causes_of(analysis: &Arc<Analysis>, costs: &Costs) -> Option<Arc<Causes>> {
    if let Some(hit) = CACHE.with(|c| c.borrow().iter().find(|(a, _)| Arc::ptr_eq(a, analysis)).map(|(_, c)| c.clone()))
    {
        return Some(hit);
    }
    let causes = Arc::new(bubblescope::gaps::causes(analysis, costs).ok()?);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= KEEP {
            c.remove(0);
        }
        c.push((analysis.clone(), causes.clone()));
    });
    Some(causes)
}
