//! The live admission policy: whether a run is computed on the page, in a background worker,
//! or refused. One rule for the playground's chart, its "Compare all" view and the plan search.
//!
//! * A run is refused beyond the live sizes ([`MAX_LIVE_DEVICES`], [`MAX_LIVE_MICROBATCHES`],
//!   [`MAX_LIVE_PASSES`]), before any work (the registry's exact pass count).
//! * A slow search ([`SlowSearch`]) past its live limit (about half a second) is refused where
//!   nothing may block that long: on the page, and in views that run every family at once.
//! * Runs go to the page when they are small: at most [`PAGE_MAX_PASSES`] passes together
//!   (each family's passes weighed by its [`Family::page_weight`]) and no slow search past
//!   `1/`[`PAGE_SEARCH_SHARE`] of its live limit (about a frame).

use crate::error::Field;
use crate::families::{Family, SlowSearch};
use crate::params::ScheduleParams;

/// The most passes the playground simulates and draws live; larger settings get a message
/// instead of a frozen tab.
pub const MAX_LIVE_PASSES: u64 = 1_500_000;

/// The most devices the playground draws live (the slider's range; the engine's own bound is
/// [`crate::params::MAX_DEVICES`]).
pub const MAX_LIVE_DEVICES: u32 = 64;

/// The most microbatches the playground draws live (the slider's range).
pub const MAX_LIVE_MICROBATCHES: u32 = 512;

/// The most passes (chosen, compared and baseline schedules together) computed on the page.
///
/// Measured in Chromium on the release build, warm, with the machine under a load of 10 to 13
/// (`BENCH_ONLY='round trip' node tests/e2e/bench.mjs dist`): zb-h1 32 × 256 (40,960 passes)
/// computes on the page in 5.1 ms, while the worker's round trip takes 107 ms (36 ms of it
/// computing, 2.6 ms decoding on the page); at 81,920 passes 12.7 ms against 291 ms. Below
/// this size a round trip only adds latency; the bound is kept well under a frame of page
/// work (about 2.5 ms) so slower devices stay fluid too.
pub const PAGE_MAX_PASSES: u64 = 20_000;

/// A slow search runs on the page up to this fraction of its live limit (the size that takes
/// about half a second, [`SlowSearch::live_limit`]): about one frame.
pub const PAGE_SEARCH_SHARE: u64 = 32;

/// Where a run is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// On the page's thread: a slow search beyond its live limit is refused (it would freeze
    /// the tab).
    Page,
    /// In a background worker: every family runs up to the pass cap, slow searches too.
    Worker,
}

/// Why a run is not computed live.
#[derive(Clone, Copy, Debug)]
pub enum Refusal {
    /// More devices than [`MAX_LIVE_DEVICES`].
    Devices(u32),
    /// More microbatches than [`MAX_LIVE_MICROBATCHES`].
    Microbatches(u32),
    /// More passes than [`MAX_LIVE_PASSES`].
    Passes(u64),
    /// A slow search past its live limit: the search and its size.
    Search(SlowSearch, u64),
}

impl Refusal {
    /// The setting to change.
    pub fn field(&self) -> Field {
        match self {
            Refusal::Devices(_) => Field::Devices,
            Refusal::Microbatches(_) | Refusal::Passes(_) | Refusal::Search(..) => Field::Microbatches,
        }
    }

    /// The message with its hint, as the chart shows it (`family` at `params` was refused).
    pub fn message(&self, family: &Family, params: &ScheduleParams) -> String {
        match *self {
            Refusal::Devices(found) => format!(
                "the playground draws up to {MAX_LIVE_DEVICES} devices, found {found}\n  hint: use the CLI for bigger runs"
            ),
            Refusal::Microbatches(found) => format!(
                "the playground draws up to {MAX_LIVE_MICROBATCHES} microbatches, found {found}\n  hint: use the CLI for bigger runs"
            ),
            Refusal::Passes(passes) => format!(
                "this would be {passes} passes, more than the {MAX_LIVE_PASSES} the playground draws live\n  hint: use fewer devices, microbatches, chunks or sequence splits, or the CLI"
            ),
            Refusal::Search(search, size) => format!(
                "{} runs live up to {} = {}, found {} × {} = {size}\n  hint: {}, or the CLI: bubblescope simulate -s {} -p {} -m {}",
                search.what,
                search.unit,
                search.live_limit,
                params.devices,
                params.microbatches,
                search.hint,
                family.name,
                params.devices,
                params.microbatches
            ),
        }
    }

    /// The short reason a list of refused runs gives ("Compare all").
    pub fn short(&self) -> String {
        match self {
            Refusal::Search(search, _) => {
                format!("{} runs live up to {} = {}", search.what, search.unit, search.live_limit)
            }
            Refusal::Passes(passes) => format!("{passes} passes: more than the playground runs live"),
            Refusal::Devices(found) => format!("{found} devices: more than the playground runs live"),
            Refusal::Microbatches(found) => format!("{found} microbatches: more than the playground runs live"),
        }
    }
}

/// The size of `family`'s slow search at `params` when it is past `1/share` of its live limit
/// (`share` 1: the live limit itself), with the search.
pub fn slow_search(family: &Family, params: &ScheduleParams, share: u64) -> Option<Refusal> {
    let search = family.slow_search?;
    let size = (search.size)(params)?;
    (size.saturating_mul(share) > search.live_limit).then_some(Refusal::Search(search, size))
}

/// The passes `family` generates at its own parameters `params`, or why a live view refuses
/// it at `place`: sizes beyond the sliders, the pass cap, and on the page a slow search past
/// its live limit. Decides before any work is done.
///
/// # Errors
/// The [`Refusal`].
pub fn admit(family: &Family, params: &ScheduleParams, place: Place) -> Result<u64, Refusal> {
    if params.devices > MAX_LIVE_DEVICES {
        return Err(Refusal::Devices(params.devices));
    }
    if params.microbatches > MAX_LIVE_MICROBATCHES {
        return Err(Refusal::Microbatches(params.microbatches));
    }
    let passes = family.pass_count(params);
    if passes > MAX_LIVE_PASSES {
        return Err(Refusal::Passes(passes));
    }
    match place {
        Place::Page => slow_search(family, params, 1).map_or(Ok(passes), Err),
        Place::Worker => Ok(passes),
    }
}

/// Why a run of a view that runs every family at once ("Compare all") is refused: the pass
/// cap, or a slow search past its live limit (it would hold up every other run).
pub fn refuse_in_batch(family: &Family, params: &ScheduleParams, passes: u64) -> Option<Refusal> {
    if passes > MAX_LIVE_PASSES {
        return Some(Refusal::Passes(passes));
    }
    slow_search(family, params, 1)
}

/// Where runs of `families`, each at its own parameters, are computed together: on the page
/// when they are small (refused runs cost nothing: their message comes at once), in a worker
/// otherwise.
pub fn place<'a>(runs: impl IntoIterator<Item = (&'a Family, ScheduleParams)>) -> Place {
    let mut passes = 0u64;
    for (family, p) in runs {
        let Ok(n) = admit(family, &p, Place::Worker) else { continue };
        if slow_search(family, &p, PAGE_SEARCH_SHARE).is_some() {
            return Place::Worker;
        }
        passes = passes.saturating_add(n.saturating_mul(family.page_weight.max(1)));
    }
    if passes <= PAGE_MAX_PASSES {
        Place::Page
    } else {
        Place::Worker
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::family;

    #[test]
    fn small_runs_stay_on_the_page_and_large_ones_go_to_the_worker() {
        let f = family("1f1b").unwrap();
        assert_eq!(place([(f, ScheduleParams::new(4, 8))]), Place::Page);
        assert_eq!(place([(f, ScheduleParams::new(32, 256))]), Place::Page, "16,384 passes");
        assert_eq!(place([(f, ScheduleParams::new(64, 256))]), Place::Worker, "32,768 passes");
        let refused = ScheduleParams::new(65, 8);
        assert!(matches!(admit(f, &refused, Place::Worker), Err(Refusal::Devices(65))));
        assert_eq!(place([(f, refused)]), Place::Page, "a refusal costs nothing");
    }

    #[test]
    fn a_search_heavy_generator_weighs_more_than_its_passes() {
        let (v, h1) = (family("v-auto").unwrap(), family("zb-h1").unwrap());
        // 1,920 passes: a plain family stays on the page, the adaptive V search goes to the
        // worker; at the playground's default size both stay.
        let p = ScheduleParams::new(16, 20);
        assert!(v.pass_count(&p) <= PAGE_MAX_PASSES && h1.pass_count(&p) <= PAGE_MAX_PASSES);
        assert_eq!(place([(h1, p.clone())]), Place::Page);
        assert_eq!(place([(v, p)]), Place::Worker);
        assert_eq!(place([(v, ScheduleParams::new(4, 8))]), Place::Page);
    }

    #[test]
    fn slow_searches_are_refused_on_the_page_only() {
        let f = family("v-auto").unwrap();
        let p = ScheduleParams::new(32, 256).with_costs(crate::Costs::fbw(1.0, 2.0, 3.0));
        assert!(matches!(admit(f, &p, Place::Page), Err(Refusal::Search(_, 8192))));
        assert!(admit(f, &p, Place::Worker).is_ok());
        assert!(refuse_in_batch(f, &p, 10).is_some());
        assert_eq!(place([(f, p)]), Place::Worker);
    }
}
