//! What the page and the background worker send each other: the settings one way, what they
//! compute to the other.
//!
//! Every message is serde over the core's own types (its `wire` feature) in postcard's compact
//! binary form: one byte buffer, moved between threads without copying (a transferred
//! `ArrayBuffer`). Reading checks the buffer is whole and holds nothing more, and what serde
//! cannot see ([`check`]: a gap's device and op exist in its schedule), so a damaged message
//! is an error, never a panic.

use std::sync::Arc;

use bubblescope::settings::Settings;
use bubblescope::Analysis;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::balance::Balanced;
use crate::compare::AllRuns;
use crate::fit::FitResult;
use crate::state::{Baseline, Computed, FollowUp, LoadedFile, Outcome, UiError};

/// The kinds of request the engine answers ([`crate::work::handle`]), each with its message.
pub mod kind {
    /// The settings' schedules: [`super::encode_settings`] → [`super::encode`]. The worker
    /// follows its answer with their extras (an [`EXTRAS`] answer with the same number).
    pub const SCHEDULES: &str = "schedules";
    /// The extras of schedules computed elsewhere: [`super::encode_extras_asks`] →
    /// [`super::encode_extras`].
    pub const EXTRAS: &str = "extras";
    /// Every family at the settings ("Compare all"): settings → [`super::encode_all`].
    pub const ALL: &str = "all";
    /// "Fit under the limit": settings → [`super::encode_fit`].
    pub const FIT: &str = "fit";
    /// "Balance it": settings → [`super::encode_balance`].
    pub const BALANCE: &str = "balance";
    /// Files to open: [`super::encode_import`] → [`super::encode_imported`].
    pub const IMPORT: &str = "import";
    /// A schedule to write in a data format: [`super::encode_export`] →
    /// [`super::encode_exported`].
    pub const EXPORT: &str = "export";
}

/// What the worker computed for one settings change (the page adds the id and parameters).
#[derive(Clone, Debug)]
pub struct Parts {
    /// The chosen schedule.
    pub main: Computed,
    /// The compared schedules.
    pub compare: Vec<Computed>,
    /// 1F1B's cost at the same settings (or that it follows).
    pub baseline: Baseline,
    /// Milliseconds the worker spent.
    pub elapsed_ms: f64,
}

/// One encoded message.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Wire {
    /// The postcard bytes.
    pub bytes: Vec<u8>,
}

/// Why a message could not be read.
#[derive(Clone, Debug, PartialEq)]
pub struct WireError(pub String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// [`Parts`] as they travel.
#[derive(Serialize, Deserialize)]
struct PartsOnWire {
    elapsed_ms: f64,
    main: Computed,
    compare: Vec<Computed>,
    baseline: Baseline,
}

fn write<T: Serialize>(value: &T) -> Wire {
    // Serialising into a vector fails only for types serde cannot describe (maps with
    // non-string keys and the like), none of which travel.
    Wire { bytes: postcard::to_allocvec(value).unwrap_or_default() }
}

fn read<T: DeserializeOwned>(wire: &Wire, what: &str) -> Result<T, WireError> {
    let (value, rest) = postcard::take_from_bytes::<T>(&wire.bytes)
        .map_err(|e| WireError(format!("the {what} could not be read ({e})")))?;
    if !rest.is_empty() {
        return Err(WireError(format!("the {what} holds {} bytes more than it should", rest.len())));
    }
    Ok(value)
}

/// Encodes what the worker computed.
pub fn encode(parts: &Parts) -> Wire {
    write(&PartsOnWire {
        elapsed_ms: parts.elapsed_ms,
        main: parts.main.clone(),
        compare: parts.compare.clone(),
        baseline: parts.baseline,
    })
}

/// Reads what [`encode`] wrote.
///
/// # Errors
/// A [`WireError`] when the buffer is cut, damaged or longer than its message, or when a
/// schedule's gaps name devices or ops it does not have.
pub fn decode(wire: &Wire) -> Result<Parts, WireError> {
    let p: PartsOnWire = read(wire, "result")?;
    for c in std::iter::once(&p.main).chain(&p.compare) {
        check(c)?;
    }
    if let Baseline::Cost(c) = p.baseline {
        if !c.is_finite() || c < 0.0 {
            return Err(WireError(format!("the baseline's cost is {c}, expected a finite time")));
        }
    }
    Ok(Parts { main: p.main, compare: p.compare, baseline: p.baseline, elapsed_ms: p.elapsed_ms })
}

/// Encodes what follows a result ([`Outcome::follow_up`]): the extras, and the baseline's
/// cost when it was left for later.
pub fn encode_extras(follow: &FollowUp) -> Wire {
    write(follow)
}

/// Reads what [`encode_extras`] wrote, for `outcome`: one entry per schedule, each about that
/// schedule's devices and ops, and a finite baseline cost if any.
///
/// # Errors
/// A [`WireError`] when the buffer is cut, damaged or longer than its message, or the extras
/// do not fit the schedules.
pub fn decode_extras(wire: &Wire, outcome: &Outcome) -> Result<FollowUp, WireError> {
    let follow: FollowUp = read(wire, "extras")?;
    let schedules = 1 + outcome.compare.len();
    if follow.extras.len() != schedules {
        return Err(WireError(format!("{} extras for {schedules} schedules", follow.extras.len())));
    }
    for (c, e) in std::iter::once(&outcome.main).chain(&outcome.compare).zip(&follow.extras) {
        check(&Computed { extras: e.clone(), ..c.clone() })?;
    }
    if let Some(c) = follow.baseline.filter(|c| !c.is_finite() || *c < 0.0) {
        return Err(WireError(format!("the baseline's cost is {c}, expected a finite time")));
    }
    Ok(follow)
}

/// One schedule's extras to compute: its analysis and what they are computed from.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExtrasAsk {
    /// Its family's name, if it has one.
    pub family: Option<String>,
    /// The parameters it ran at.
    pub params: bubblescope::ScheduleParams,
    /// Whether it is the chosen schedule.
    pub chosen: bool,
    /// Its analysis.
    pub analysis: Arc<Analysis>,
}

/// Encodes what the extras of `outcome`'s schedules are computed from (one entry per
/// schedule, `None` for one without an analysis).
pub fn encode_extras_asks(outcome: &Outcome) -> Wire {
    let asks: Vec<Option<ExtrasAsk>> = std::iter::once(&outcome.main)
        .chain(&outcome.compare)
        .map(|c| {
            let (Ok(analysis), Some(i)) = (&c.result, &c.inputs) else { return None };
            Some(ExtrasAsk {
                family: i.family.map(|f| f.name.to_string()),
                params: i.params.clone(),
                chosen: i.chosen,
                analysis: analysis.clone(),
            })
        })
        .collect();
    write(&asks)
}

/// Reads what [`encode_extras_asks`] wrote.
///
/// # Errors
/// A [`WireError`] when the buffer is cut, damaged or longer than its message.
pub fn decode_extras_asks(wire: &Wire) -> Result<Vec<Option<ExtrasAsk>>, WireError> {
    read(wire, "extras request")
}

/// Files to open: each file's name and bytes (one schedule file, or a run's traces).
pub fn encode_import(files: &[(String, Vec<u8>)]) -> Wire {
    write(&files)
}

/// Reads what [`encode_import`] wrote.
///
/// # Errors
/// A [`WireError`] when the buffer is cut, damaged or longer than its message.
pub fn decode_import(wire: &Wire) -> Result<Vec<(String, Vec<u8>)>, WireError> {
    read(wire, "files")
}

/// An opened file, with the costs a JSON file stores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    /// The file as the page shows it.
    pub file: LoadedFile,
    /// The costs it stores (Bubblescope JSON), which become the settings.
    pub costs: Option<bubblescope::Costs>,
}

/// Encodes an opened file, or why the files could not be read.
pub fn encode_imported(result: &Result<Imported, String>) -> Wire {
    write(result)
}

/// Reads what [`encode_imported`] wrote.
///
/// # Errors
/// A [`WireError`] when the buffer is cut, damaged or longer than its message.
pub fn decode_imported(wire: &Wire) -> Result<Result<Imported, String>, WireError> {
    read(wire, "opened file")
}

/// A schedule to write in a data format (a menu item's `format`), with its costs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExportAsk {
    /// The format's menu name: `json`, `csv`, `csv-comms`, `csv-comms-2.14`, `perfetto`.
    pub format: String,
    /// The analysis written (its schedule; its timeline for Perfetto).
    pub analysis: Arc<Analysis>,
    /// The costs a JSON file keeps.
    pub costs: bubblescope::Costs,
}

/// Encodes an export request.
pub fn encode_export(ask: &ExportAsk) -> Wire {
    write(ask)
}

/// Reads what [`encode_export`] wrote.
///
/// # Errors
/// A [`WireError`] when the buffer is cut, damaged or longer than its message.
pub fn decode_export(wire: &Wire) -> Result<ExportAsk, WireError> {
    read(wire, "export request")
}

/// A written file: what its name ends with, its media type and its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exported {
    /// The end of the file's name after its stem (`.json`, `-comms.csv`).
    pub suffix: String,
    /// Its media type.
    pub mime: String,
    /// Its content.
    pub text: String,
}

/// Encodes a written file, or why it could not be written.
pub fn encode_exported(result: &Result<Exported, String>) -> Wire {
    write(result)
}

/// Reads what [`encode_exported`] wrote.
///
/// # Errors
/// A [`WireError`] when the buffer is cut, damaged or longer than its message.
pub fn decode_exported(wire: &Wire) -> Result<Result<Exported, String>, WireError> {
    read(wire, "exported file")
}

/// What serde cannot check of a computed schedule: its gap causes describe its own devices
/// and ops.
fn check(c: &Computed) -> Result<(), WireError> {
    let (Ok(a), Some(causes)) = (&c.result, c.extras.as_ref().and_then(|e| e.causes.as_ref())) else {
        return Ok(());
    };
    let devices = a.timeline.devices.len();
    if causes.attribution.per_device.len() != a.stats.per_device.len() {
        return Err(WireError(format!(
            "the attribution splits {} devices, the schedule has {}",
            causes.attribution.per_device.len(),
            a.stats.per_device.len()
        )));
    }
    if causes.devices.len() != devices {
        return Err(WireError(format!("the causes list {} devices, the schedule has {devices}", causes.devices.len())));
    }
    for (d, gaps) in causes.devices.iter().enumerate() {
        let ops = a.timeline.devices[d].ops.len();
        if gaps.iter().any(|g| g.device as usize != d || g.before.is_some_and(|b| b as usize >= ops)) {
            return Err(WireError(format!("a gap on device {d} precedes an op it does not have")));
        }
    }
    Ok(())
}

/// Encodes the "Compare all" result: every run, or the settings' error.
pub fn encode_all(result: &Result<AllRuns, String>) -> Wire {
    write(result)
}

/// Reads what [`encode_all`] wrote.
///
/// # Errors
/// A [`WireError`] when the buffer is cut, damaged or longer than its message, or a family is
/// not in the registry.
pub fn decode_all(wire: &Wire) -> Result<Result<AllRuns, String>, WireError> {
    read(wire, "comparison")
}

/// Encodes the settings a request computes.
pub fn encode_settings(settings: &Settings) -> Wire {
    write(settings)
}

/// Reads what [`encode_settings`] wrote.
///
/// # Errors
/// A [`WireError`] when the buffer is cut, damaged or longer than its message.
pub fn decode_settings(wire: &Wire) -> Result<Settings, WireError> {
    read(wire, "settings")
}

/// Encodes what "fit under the limit" found, or why it could not look.
pub fn encode_fit(result: &Result<FitResult, UiError>) -> Wire {
    write(result)
}

/// Reads what [`encode_fit`] wrote.
///
/// # Errors
/// A [`WireError`] when the buffer is cut, damaged or longer than its message.
pub fn decode_fit(wire: &Wire) -> Result<Result<FitResult, UiError>, WireError> {
    read(wire, "fit")
}

/// Encodes what "balance it" found, or why it could not look.
pub fn encode_balance(result: &Result<Balanced, UiError>) -> Wire {
    write(result)
}

/// Reads what [`encode_balance`] wrote.
///
/// # Errors
/// A [`WireError`] when the buffer is cut, damaged or longer than its message.
pub fn decode_balance(wire: &Wire) -> Result<Result<Balanced, UiError>, WireError> {
    read(wire, "balance")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::AllRefused;
    use crate::fit::{Chosen, Fitted};
    use bubblescope::trade::Offload;
    use bubblescope::units::Units;
    use bubblescope::{Costs, Field, ScheduleParams, FAMILIES};

    /// A schedule computed as the worker computes it, with its extras followed up.
    fn computed(name: &str, params: &ScheduleParams) -> Computed {
        with_extras(crate::state::compute_one(name, params, crate::state::Place::Worker, Units::Cost, true))
    }

    fn with_extras(mut c: Computed) -> Computed {
        c.extras = c.extras_now();
        c
    }

    fn same(a: &Computed, b: &Computed) {
        assert_eq!((&a.name, &a.label), (&b.name, &b.label));
        match (&a.result, &b.result) {
            (Ok(x), Ok(y)) => {
                assert_eq!(x.schedule, y.schedule, "{}", a.name);
                assert_eq!(x.timeline, y.timeline, "{}", a.name);
                assert_eq!(x.stats, y.stats, "{}", a.name);
            }
            (Err(x), Err(y)) => assert_eq!(x, y),
            _ => panic!("{}: one side failed", a.name),
        }
        assert_eq!(a.extras, b.extras, "{}", a.name);
    }

    /// Every `step`-th cut of `wire`, and a byte too many, fail to decode.
    fn damage_is_an_error<T>(wire: &Wire, step: usize, decode: impl Fn(&Wire) -> Result<T, WireError>) {
        for cut in (0..wire.bytes.len()).step_by(step) {
            let damaged = Wire { bytes: wire.bytes[..cut].to_vec() };
            assert!(decode(&damaged).is_err(), "cut at {cut}");
        }
        let longer = Wire { bytes: wire.bytes.iter().copied().chain([7]).collect() };
        assert!(decode(&longer).is_err(), "a byte too many");
    }

    #[test]
    fn extras_travel_with_their_schedule() {
        // Communication and unequal stages: every part of the split, gaps that waited for a
        // hop, a memory part (zb-v under a limit) and a bound.
        let (link, warnings) =
            bubblescope::permalink::parse("schedule=zb-v&devices=4&microbatches=8&f=1,1,2,1&comm=0.5&mem-limit=4.5");
        assert!(warnings.is_empty(), "{warnings:?}");
        let main = computed("zb-v", &link.params);
        let extras = main.extras.clone().unwrap();
        let causes = extras.causes.clone().unwrap();
        assert!(causes.gaps().any(|g| g.waited.is_some_and(|w| w.communication > 0.0)));
        assert!(extras.memory.is_some() && extras.bound.is_some());
        let compared = with_extras(crate::state::compute_one(
            "1f1b",
            &link.params,
            crate::state::Place::Worker,
            Units::Cost,
            false,
        ));
        let c = compared.extras.clone().unwrap();
        assert!(
            c.causes.is_some() && c.memory.is_none() && c.bound.is_none(),
            "compared schedules carry their causes only"
        );
        let parts = Parts { main, compare: vec![compared], baseline: Baseline::Absent, elapsed_ms: 1.0 };
        let wire = encode(&parts);
        let back = decode(&wire).unwrap();
        same(&back.main, &parts.main);
        same(&back.compare[0], &parts.compare[0]);
        damage_is_an_error(&wire, wire.bytes.len() / 40 + 1, decode);
    }

    #[test]
    fn every_send_mode_crosses_to_the_worker_and_back() {
        // The format is positional: a field left out on one side shifts every field after it.
        for mode in ["async", "blocking"] {
            let (link, warnings) =
                bubblescope::permalink::parse(&format!("schedule=1f1b&devices=4&microbatches=8&comm=0.5&p2p={mode}"));
            assert!(warnings.is_empty(), "{warnings:?}");
            let settings = link.settings();
            assert_eq!(decode_settings(&encode_settings(&settings)).unwrap(), settings, "{mode}");
            let outcome = crate::state::compute(&settings, None, crate::state::Place::Worker);
            let asks = decode_extras_asks(&encode_extras_asks(&outcome)).unwrap();
            let ask = asks[0].as_ref().expect("the chosen schedule asks for its extras");
            assert_eq!(ask.params, outcome.params, "{mode}");
            assert_eq!(ask.params.costs.p2p.name(), mode);
        }
    }

    #[test]
    fn extras_follow_their_outcome_and_must_fit_it() {
        let (link, _) = bubblescope::permalink::parse("schedule=zb-h1&devices=4&microbatches=8&comm=0.5&compare=1f1b");
        let outcome = crate::state::compute(&link.settings(), None, crate::state::Place::Worker);
        assert!(outcome.main.extras.is_none(), "a result arrives without its extras");
        assert!(matches!(outcome.baseline, Baseline::Cost(_)), "computed now, the baseline comes with the result");
        let follow = outcome.follow_up(None);
        let extras = &follow.extras;
        assert_eq!(extras.len(), 2);
        assert!(extras.iter().all(|e| e.as_ref().is_some_and(|e| e.causes.is_some())));
        assert!(extras[0].as_ref().is_some_and(|e| e.bound.is_some()), "the chosen schedule's bound");
        assert_eq!(follow.baseline, None, "a baseline already known is not sent again");
        let wire = encode_extras(&follow);
        assert_eq!(decode_extras(&wire, &outcome).unwrap(), follow);
        damage_is_an_error(&wire, 7, |w| decode_extras(w, &outcome));
        // Extras of another outcome (one schedule fewer) are refused.
        let other = crate::state::Outcome { compare: Vec::new(), ..outcome.clone() };
        assert!(decode_extras(&wire, &other).is_err());
        let mut applied = outcome.clone();
        applied.set_follow_up(follow.clone());
        assert_eq!(applied.main.extras, extras[0]);
        assert_eq!(applied.baseline, outcome.baseline, "a known baseline stays");
        // A non-finite baseline cost is refused on arrival.
        let bad = FollowUp { baseline: Some(f64::NAN), ..follow };
        assert!(decode_extras(&encode_extras(&bad), &outcome).unwrap_err().0.contains("baseline"));
    }

    #[test]
    fn a_baseline_left_for_later_follows_with_the_extras_and_equals_one_computed_now() {
        let (link, _) = bubblescope::permalink::parse("schedule=zb-h1&devices=4&microbatches=8&comm=0.5&f=1,2,1,1");
        let settings = link.settings();
        let now = crate::state::compute(&settings, None, crate::state::Place::Worker);
        let (later, params) =
            crate::state::compute_with(&settings, None, crate::state::Place::Worker, crate::state::BaselineWhen::Later);
        assert_eq!(later.baseline, Baseline::Follows);
        let parts = Parts { main: later.main.clone(), compare: Vec::new(), baseline: later.baseline, elapsed_ms: 1.0 };
        assert_eq!(decode(&encode(&parts)).unwrap().baseline, Baseline::Follows);
        let follow = later.follow_up(params.as_ref());
        let wire = encode_extras(&follow);
        let mut applied = later.clone();
        applied.set_follow_up(decode_extras(&wire, &later).unwrap());
        assert_eq!(applied.baseline, now.baseline, "the same 1F1B cost, later");
        let Baseline::Cost(cost) = applied.baseline else { panic!("no baseline: {:?}", applied.baseline) };
        let own = bubblescope::run("1f1b", &bubblescope::BASELINE.own_params(&settings.params)).unwrap();
        assert_eq!(cost, own.stats.cost);
        // The main schedule being 1F1B, its own cost is the baseline at once.
        let (link, _) = bubblescope::permalink::parse("schedule=1f1b&devices=4&microbatches=8");
        let (one, params) = crate::state::compute_with(
            &link.settings(),
            None,
            crate::state::Place::Worker,
            crate::state::BaselineWhen::Later,
        );
        assert!(params.is_none());
        let main_cost = one.main.result.as_ref().unwrap().stats.cost;
        assert_eq!(one.baseline, Baseline::Cost(main_cost));
    }

    #[test]
    fn gaps_that_name_ops_their_schedule_lacks_are_refused() {
        let (link, _) = bubblescope::permalink::parse("schedule=1f1b&devices=4&microbatches=8&comm=0.5");
        let mut main = computed("1f1b", &link.params);
        let mut extras = (**main.extras.as_ref().unwrap()).clone();
        let mut causes = (**extras.causes.as_ref().unwrap()).clone();
        let gap = causes.devices.iter_mut().flatten().find(|g| g.before.is_some()).unwrap();
        gap.before = Some(10_000);
        extras.causes = Some(Arc::new(causes));
        main.extras = Some(Arc::new(extras));
        let parts = Parts { main, compare: Vec::new(), baseline: Baseline::Absent, elapsed_ms: 1.0 };
        let e = decode(&encode(&parts)).unwrap_err();
        assert!(e.0.contains("precedes an op it does not have"), "{e}");
    }

    #[test]
    fn settings_travel_typed() {
        let query = "schedule=zb-v&devices=6&microbatches=12&chunks=2&group=3&waves=2&seq-splits=2&f=1,2,3,4,5,6&b=2&comm=0.5&overlap=2.5&mem-w=0.25&mem-limit=7.5&compare=1f1b,zb-h1";
        let (link, warnings) = bubblescope::permalink::parse(query);
        assert!(warnings.is_empty(), "{warnings:?}");
        let hand = link.settings();
        assert!(hand.params.costs.profile.is_some());
        assert_eq!(decode_settings(&encode_settings(&hand)).unwrap(), hand);
        // A model's settings, and costs with finer cuts (what a model derives).
        let (link, warnings) = bubblescope::permalink::parse(
            "schedule=interleaved-1f1b&devices=4&model=llama-3-8b&seq=2048&micro-batch=2&tflops=300&bandwidth=100&latency=3&flash-attention=false&tp=2&layout=8,8,8,8&mem-limit=80GiB",
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let model = link.settings();
        assert!(model.model.given());
        assert_eq!(decode_settings(&encode_settings(&model)).unwrap(), model);
        let (link, _) = bubblescope::permalink::parse("schedule=interleaved-1f1b&devices=4&model=llama-3-8b");
        let mut model = link.settings();
        model.params = model.effective_params().unwrap();
        assert!(model.params.costs.profile.as_ref().is_some_and(|p| !p.finer.is_empty()));
        let wire = encode_settings(&model);
        assert_eq!(decode_settings(&wire).unwrap(), model);
        damage_is_an_error(&wire, 1, decode_settings);
    }

    #[test]
    fn trade_settings_and_fit_results_travel_typed() {
        let (link, warnings) = bubblescope::permalink::parse(
            "devices=4&mem-limit=5&recompute=full,none,selective,none&offload=0.5,1,0,0&copy-time=0.25",
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let settings = link.settings();
        let wire = encode_settings(&settings);
        assert_eq!(decode_settings(&wire).unwrap(), settings);
        damage_is_an_error(&wire, 1, decode_settings);

        let chosen = Chosen {
            settings: settings.trade.clone(),
            description: "recompute full on device 0".into(),
            time: 1.5,
            saved: 2.0,
        };
        let results = [
            Ok(FitResult { limit: 5.0, fitted: Fitted::Fits { chosen: Some(chosen), peak: 4.5, cost: 30.0 } }),
            Ok(FitResult { limit: 5.0, fitted: Fitted::Fits { chosen: None, peak: 4.0, cost: 28.0 } }),
            Ok(FitResult { limit: 1.0, fitted: Fitted::Over { least: 1.25 } }),
            Err(UiError { field: Some(Field::MemLimit), message: "no limit\n  hint: set one".into() }),
        ];
        for result in results {
            let wire = encode_fit(&result);
            assert_eq!(decode_fit(&wire).unwrap(), result);
            damage_is_an_error(&wire, 1, decode_fit);
        }
    }

    #[test]
    fn balance_results_travel_typed() {
        use crate::balance::{Balanced, Choice, Shares};
        let choice = Choice {
            schedule: "dualpipe".into(),
            chunks: None,
            layout: Some("4,5,5,4,4,4,4,2".into()),
            a2a_overlap: true,
            label: "DualPipe".into(),
        };
        let before = Shares { cost: 4.3e6, idle: 0.3135 };
        let results = [
            Ok(Balanced { before, chosen: Some((choice, Shares { cost: 3.3e6, idle: 0.1163 })), fitting: 40 }),
            Ok(Balanced { before, chosen: None, fitting: 0 }),
            Err(UiError { field: Some(Field::Model), message: "no model\n  hint: choose one".into() }),
        ];
        for result in results {
            let wire = encode_balance(&result);
            assert_eq!(decode_balance(&wire).unwrap(), result);
            damage_is_an_error(&wire, 1, decode_balance);
        }
    }

    #[test]
    fn copy_slots_round_trip() {
        // PipeOffload gives every copy a slot: its start and time travel with it.
        let trade = bubblescope::Trade {
            offload: Offload::PipeOffload,
            chunks: Some(1),
            copy_time: Some(0.6),
            ..bubblescope::Trade::default()
        };
        let mut params = ScheduleParams { chunks: Some(2), group: Some(4), ..ScheduleParams::new(4, 8) };
        params.costs = Costs { mem_f: 2.0, trade: Some(Arc::new(trade)), ..Costs::fbw(2.0, 2.0, 2.0) };
        let main = computed("group-interleaved", &params);
        let slotted = main.result.as_ref().map(|a| a.schedule.copies.iter().flatten().all(|c| c.slot.is_some()));
        assert_eq!(slotted.ok(), Some(true), "{:?}", main.result.as_ref().err());
        let parts = Parts { main: main.clone(), compare: Vec::new(), baseline: Baseline::Absent, elapsed_ms: 1.0 };
        same(&decode(&encode(&parts)).unwrap().main, &parts.main);
    }

    #[test]
    fn every_family_round_trips() {
        let mut params = ScheduleParams::new(4, 8);
        params.costs.f = 1.5;
        params.costs.comm = 0.25;
        params.costs.mem_w = Some(0.5);
        // The vocabulary-parallel families need the output layer's shard times.
        params.costs.vocab = Some(bubblescope::params::VocabCosts::output(0.5, 1.0, 0.1));
        for fam in FAMILIES {
            let main = computed(fam.name, &params);
            assert!(main.result.is_ok(), "{}: {:?}", fam.name, main.result.err());
            let compare = vec![computed("zb-h1", &params), computed("nope", &params)];
            let cost = main.result.as_ref().unwrap().stats.cost;
            let parts = Parts { main: main.clone(), compare, baseline: Baseline::Cost(cost), elapsed_ms: 3.5 };
            let back = decode(&encode(&parts)).unwrap();
            same(&back.main, &parts.main);
            assert_eq!(back.compare.len(), 2);
            same(&back.compare[0], &parts.compare[0]);
            same(&back.compare[1], &parts.compare[1]);
            assert_eq!(back.baseline, Baseline::Cost(cost));
            assert_eq!(back.elapsed_ms, 3.5);
        }
    }

    #[test]
    fn errors_keep_their_field_and_a_separate_baseline_travels() {
        let params = ScheduleParams::new(4, 8);
        let mut bad = params.clone();
        bad.devices = 500;
        let main = computed("1f1b", &bad);
        assert_eq!(main.result.as_ref().unwrap_err().field, Some(Field::Devices));
        let base = computed("1f1b", &params).result.unwrap().stats.cost;
        let parts = Parts { main, compare: Vec::new(), baseline: Baseline::Cost(base), elapsed_ms: 0.0 };
        let back = decode(&encode(&parts)).unwrap();
        same(&back.main, &parts.main);
        assert_eq!(back.baseline, Baseline::Cost(base));
        // A cost that is no time is refused.
        let bad = Parts { baseline: Baseline::Cost(f64::INFINITY), ..parts };
        assert!(decode(&encode(&bad)).unwrap_err().0.contains("baseline"));
    }

    #[test]
    fn a_damaged_result_is_an_error_not_a_panic() {
        let params = ScheduleParams::new(3, 4);
        let parts =
            Parts { main: computed("zb-v", &params), compare: Vec::new(), baseline: Baseline::Absent, elapsed_ms: 1.0 };
        let wire = encode(&parts);
        damage_is_an_error(&wire, 1, decode);
        // A length that claims more than the buffer holds reserves nothing and fails.
        let mut huge = wire.clone();
        huge.bytes.truncate(9);
        huge.bytes.extend([0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(decode(&huge).is_err());
        // A placement travels as its kind, sizes and table; a table its kind does not build is
        // refused on arrival.
        use bubblescope::PlacementKind;
        let placement = |table: Vec<u32>| {
            let wire = write(&(PlacementKind::V, 3u32, 6u32, table));
            read::<bubblescope::Placement>(&wire, "placement")
        };
        assert_eq!(placement(vec![0, 1, 2, 2, 1, 0]), Ok(bubblescope::Placement::v_shape(3)));
        assert!(placement(vec![0, 1, 2, 0, 1, 2]).is_err());
        assert!(placement(vec![0, 1, 2]).is_err());
    }

    #[test]
    fn every_family_compared_at_once_round_trips_and_damage_is_an_error() {
        let mut params = ScheduleParams::new(4, 8);
        params.costs.comm = 0.5;
        let link = bubblescope::permalink::Permalink { params, ..Default::default() };
        let all = crate::compare::compute_all(&link.settings()).unwrap();
        assert!(all.runs.len() >= 15 && all.runs.iter().any(|r| r.pareto), "{} runs", all.runs.len());
        let key = |a: &AllRuns| {
            let runs: Vec<_> = a
                .runs
                .iter()
                .map(|r| (r.family.name, r.chunks, r.cost, r.peak_memory, r.bubble_rate, r.pareto))
                .collect();
            let invalid: Vec<_> = a.invalid.iter().map(|r| (r.family.name, r.error.clone())).collect();
            (runs, invalid)
        };
        let wire = encode_all(&Ok(all.clone()));
        let back = decode_all(&wire).unwrap().unwrap();
        assert_eq!(key(&back), key(&all));
        let refused = AllRuns {
            runs: Vec::new(),
            invalid: vec![AllRefused { family: &FAMILIES[0], error: "too big\n  hint: fewer".into() }],
        };
        assert_eq!(key(&decode_all(&encode_all(&Ok(refused.clone()))).unwrap().unwrap()), key(&refused));
        let err = decode_all(&encode_all(&Err("bad layout".into()))).unwrap();
        assert_eq!(err.unwrap_err(), "bad layout");
        damage_is_an_error(&wire, 1, decode_all);
        let name = all.runs[0].family.name.as_bytes();
        let mut renamed = wire.clone();
        let at = renamed.bytes.windows(name.len()).position(|w| w == name).unwrap();
        renamed.bytes[at..at + name.len()].fill(b'x');
        // postcard keeps no custom message: the registry's refusal shows as a damaged message.
        assert!(decode_all(&renamed).is_err(), "a family the registry lacks");
    }
}
