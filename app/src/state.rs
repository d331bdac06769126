//! The app's state: the settings (a permalink), what they compute to, and view settings.
//!
//! The app holds no schedule logic: every derivation calls a `bubblescope` function.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bubblescope::bounds::Standing;
use bubblescope::gaps::Causes;
use bubblescope::measured::MeasuredRun;
use bubblescope::permalink::Permalink;
use bubblescope::settings::Settings;
use bubblescope::sim::PerOpTimes;
use bubblescope::step::Step;
use bubblescope::units::Units;
use bubblescope::{
    family, Analysis, AnalyzeError, BubbleMeasure, Diagnostic, Family, Field, Schedule, ScheduleParams, BASELINE,
};
use leptos::prelude::*;

pub use bubblescope::live::{Place, MAX_LIVE_DEVICES, MAX_LIVE_MICROBATCHES, MAX_LIVE_PASSES};

/// An error shown in the page, next to the control that causes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UiError {
    /// The control to show it at (`None`: above the chart).
    pub field: Option<Field>,
    /// The message and its hints, one per line.
    pub message: String,
}

impl UiError {
    fn from_analyze(e: AnalyzeError) -> UiError {
        let field = match &e {
            AnalyzeError::Param(p) => Some(p.field),
            _ => None,
        };
        UiError { field, message: e.to_string() }
    }
}

/// One computed schedule.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Computed {
    /// Family name.
    pub name: String,
    /// Heading (family title and sizes).
    pub label: String,
    /// The analysis, or why there is none.
    pub result: Result<Arc<Analysis>, UiError>,
    /// What is shown beside the analysis: `None` until its follow-up has computed it
    /// ([`Outcome::follow_up`]), and without an analysis.
    pub extras: Option<Arc<Extras>>,
    /// The whole training step around it, when it is the chosen schedule and its costs come
    /// from a model (core's `step::whole`, computed with the analysis: the chart's axis and
    /// strips need it in the first frame), or why it cannot be composed.
    pub step: Option<Result<Step, String>>,
    /// What the extras are computed from, where the analysis was computed (it does not travel:
    /// the worker computes the extras of its own results).
    #[serde(skip)]
    pub inputs: Option<Arc<ExtrasInputs>>,
}

/// What a schedule's extras are computed from, beside its analysis.
#[derive(Clone, Debug)]
pub struct ExtrasInputs {
    /// Its family, if it has one.
    pub family: Option<&'static Family>,
    /// The parameters it ran at.
    pub params: ScheduleParams,
    /// Whether it is the chosen schedule: only that one gets the memory part and the bound.
    pub chosen: bool,
}

impl Computed {
    /// A schedule that could not be computed, and why.
    pub fn failed(name: String, label: String, error: UiError) -> Computed {
        Computed { name, label, result: Err(error), extras: None, step: None, inputs: None }
    }

    /// The analysis of `family` (if any) at `params`. Its extras (the gap causes, and for the
    /// chosen schedule, `chosen`, the memory part and the lower bound) follow it.
    fn analyzed(
        name: String,
        label: String,
        family: Option<&'static Family>,
        params: &ScheduleParams,
        analysis: Analysis,
        chosen: bool,
    ) -> Computed {
        let inputs = ExtrasInputs { family, params: params.clone(), chosen };
        Computed {
            name,
            label,
            result: Ok(Arc::new(analysis)),
            extras: None,
            step: None,
            inputs: Some(Arc::new(inputs)),
        }
    }

    /// Its extras, computed now (`None` without an analysis or what to compute them from).
    #[cfg(feature = "engine")]
    pub fn extras_now(&self) -> Option<Arc<Extras>> {
        let (Ok(analysis), Some(i)) = (&self.result, &self.inputs) else { return None };
        Some(Arc::new(Extras::of(i.family, &i.params, analysis, i.chosen)))
    }
}

/// What the page shows beside a schedule, derived from its analysis in the same computation
/// (in the worker when the schedule is computed there): the chart's gap shading and the
/// attribution bar never compute on the page after a result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Extras {
    /// Every idle gap with its cause, and the bubble split (`None` if a re-simulation failed,
    /// which it cannot when the analysis ran).
    pub causes: Option<Arc<Causes>>,
    /// The memory part (a memory-aware family against itself without a limit), for the chosen
    /// schedule.
    pub memory: Option<f64>,
    /// The lower bound of the chosen schedule's problem, and how the schedule stands against it.
    pub bound: Option<(f64, Standing)>,
}

impl Extras {
    /// The extras of `analysis`, a run of `family` (if any) at `params`; the memory part and the
    /// bound only when `chosen`.
    #[cfg(feature = "engine")]
    pub fn of(family: Option<&'static Family>, params: &ScheduleParams, analysis: &Analysis, chosen: bool) -> Extras {
        let causes = bubblescope::gaps::causes(analysis, &params.costs).ok().map(Arc::new);
        if !chosen {
            return Extras { causes, memory: None, bound: None };
        }
        let memory = bubblescope::findings::memory_part(family, params, analysis.stats.cost);
        let bound = bubblescope::findings::bound(family, params, analysis);
        Extras { causes, memory, bound: Some((bound.lower.value, bound.standing)) }
    }
}

/// 1F1B's cost at an outcome's settings: the speedup's denominator. Only the cost travels; the
/// baseline is never drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Baseline {
    /// None: a measured run (its costs are its own), or 1F1B did not run.
    #[default]
    Absent,
    /// Computed after the chart, in the worker's follow-up with the extras.
    Follows,
    /// Its cost.
    Cost(f64),
}

impl Baseline {
    /// Its cost, when known.
    pub fn cost(self) -> Option<f64> {
        match self {
            Baseline::Cost(c) => Some(c),
            Baseline::Absent | Baseline::Follows => None,
        }
    }
}

/// When the baseline is computed: with the schedules, or after the chart (in the worker's
/// follow-up, so the first frame does not wait for a second simulation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaselineWhen {
    /// With the schedules.
    Now,
    /// After them.
    Later,
}

/// What follows a result: each schedule's extras, and the baseline's cost when it was left for
/// later ([`BaselineWhen::Later`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FollowUp {
    /// The chosen schedule's extras, then each compared one's.
    pub extras: Vec<Option<Arc<Extras>>>,
    /// 1F1B's cost, when the result left it for later.
    pub baseline: Option<f64>,
}

/// What the settings compute to.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Which computation this is: computations are numbered from 1 in the order they run.
    pub id: u64,
    /// The main schedule.
    pub main: Computed,
    /// Schedules stacked below for comparison.
    pub compare: Vec<Computed>,
    /// 1F1B's cost at the same settings, for the speedup.
    pub baseline: Baseline,
    /// The effective parameters of the main schedule.
    pub params: ScheduleParams,
    /// Milliseconds spent generating and simulating.
    pub elapsed_ms: f64,
}

impl PartialEq for Outcome {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Outcome {
    /// What the page shows before its first result arrives from the worker: nothing computed
    /// yet (id 0), no error to report.
    pub fn waiting(settings: &Settings) -> Outcome {
        let label = family(&settings.schedule)
            .map_or_else(|| settings.schedule.clone(), |f| f.label(&f.own_params(&settings.params), settings.units()));
        let main = Computed::failed(
            settings.schedule.clone(),
            label,
            UiError { field: None, message: "computing".to_string() },
        );
        Outcome {
            id: 0,
            main,
            compare: Vec::new(),
            baseline: Baseline::Absent,
            params: effective_params(settings),
            elapsed_ms: 0.0,
        }
    }

    /// Whether nothing has been computed yet (the first result is still on its way).
    pub fn is_waiting(&self) -> bool {
        self.id == 0
    }

    /// The extras of every schedule, computed now: the chosen one's, then each compared one's.
    /// They follow the schedules, so the chart is drawn before they are computed.
    #[cfg(feature = "engine")]
    pub fn extras_now(&self) -> Vec<Option<Arc<Extras>>> {
        std::iter::once(&self.main).chain(&self.compare).map(Computed::extras_now).collect()
    }

    /// What follows the result: the extras, and 1F1B's cost at `baseline` (the parameters it
    /// runs at) when the result left it for later.
    #[cfg(feature = "engine")]
    pub fn follow_up(&self, baseline: Option<&ScheduleParams>) -> FollowUp {
        let baseline = match (self.baseline, baseline) {
            (Baseline::Follows, Some(p)) => baseline_cost_later(p),
            _ => None,
        };
        FollowUp { extras: self.extras_now(), baseline }
    }

    /// Takes what [`Outcome::follow_up`] computed: the extras (in the same order), and the
    /// baseline's cost if it was still to come.
    pub fn set_follow_up(&mut self, follow: FollowUp) {
        for (c, e) in std::iter::once(&mut self.main).chain(&mut self.compare).zip(follow.extras) {
            c.extras = e;
        }
        if self.baseline == Baseline::Follows {
            self.baseline = follow.baseline.map_or(Baseline::Absent, Baseline::Cost);
        }
    }
}

/// View settings that do not change the schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    /// Visible time range (zoom); `None` shows everything.
    pub range: Option<(f64, f64)>,
    /// Highlighted microbatch.
    pub highlight: Option<u32>,
}

/// Light or dark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThemeChoice {
    /// Light theme.
    Light,
    /// Dark theme.
    Dark,
}

impl ThemeChoice {
    /// The core theme.
    pub fn theme(self) -> bubblescope::render::Theme {
        match self {
            ThemeChoice::Light => bubblescope::render::Theme::light(),
            ThemeChoice::Dark => bubblescope::render::Theme::dark(),
        }
    }

    /// `light` or `dark`.
    pub fn name(self) -> &'static str {
        match self {
            ThemeChoice::Light => "light",
            ThemeChoice::Dark => "dark",
        }
    }
}

/// A schedule file the user opened (PyTorch CSV or Bubblescope JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadedFile {
    /// The file's name (sanitised).
    pub name: String,
    /// The schedule the file allows, if any.
    pub schedule: Option<Arc<Schedule>>,
    /// Everything the import found wrong or noteworthy, with rows and columns.
    pub diagnostics: Vec<Diagnostic>,
    /// Times measured per op, when the file is a measured run (a profiler trace, or
    /// Bubblescope JSON with times): the schedule replays at them.
    pub times: Option<PerOpTimes>,
    /// The run read from profiler traces: its fitted costs and how they predict it.
    pub measured: Option<Arc<MeasuredRun>>,
}

impl LoadedFile {
    /// The costs a measured run's times come with (memory, and the predicted replay).
    pub fn measured_costs(&self) -> Option<bubblescope::Costs> {
        let run = self.measured.as_ref()?;
        Some(run.fitted().costs(run.schedule.devices()))
    }
}

/// Everything components share, provided once as context.
#[derive(Clone, Copy)]
pub struct AppState {
    /// The permalink: the settings (schedule, sizes, costs, comparison) and the view keys in
    /// `extra` (theme, measure, embed), all in the URL.
    pub link: RwSignal<Permalink>,
    /// The part of the permalink that changes the schedule; the only input of `outcome`, so
    /// view preferences never re-run a schedule.
    pub settings: Memo<Settings>,
    /// An opened schedule file, shown instead of the family while set.
    pub file: RwSignal<Option<LoadedFile>>,
    /// What they compute to: set by [`crate::engine`] when a computation finishes, on the
    /// page or in the background worker.
    pub outcome: RwSignal<Outcome>,
    /// When the page started waiting for the background worker's result (milliseconds,
    /// [`now_ms`]); `None` while the outcome is up to date.
    pub pending: RwSignal<Option<f64>>,
    /// Why every computation runs on the page (the worker could not start), if it does.
    pub engine_note: RwSignal<Option<String>>,
    /// The last successful main analysis: the chart keeps it while the settings are invalid.
    pub last_good: RwSignal<Option<Computed>>,
    /// Zoom and highlight.
    pub view: RwSignal<View>,
    /// Colour theme.
    pub theme: RwSignal<ThemeChoice>,
    /// Bubble normalisation shown.
    pub measure: RwSignal<BubbleMeasure>,
    /// Problems found in the URL when the page opened.
    pub url_warnings: RwSignal<Vec<String>>,
    /// `?embed=1`: only the chart.
    pub embed: bool,
    /// Whether the parts of the page below the first screen are built: after the first chart
    /// has been drawn and painted ([`crate::components::Later`]), so they do not delay it.
    pub rest_shown: RwSignal<bool>,
    /// What the chart picks out of the main schedule: a formula's term, or a derivation's step.
    pub focus: RwSignal<FocusSource>,
}

/// What the chart picks out of the main schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FocusSource {
    /// Nothing: every pass as it is.
    #[default]
    None,
    /// The passes a term of the closed form stands for: the bubble's (`false`) or the peak
    /// memory's (`true`) formula, and the term's index.
    Term {
        /// The memory formula's term rather than the bubble's.
        memory: bool,
        /// The term's index in its formula.
        index: usize,
    },
    /// A derivation, at this step (0-based): the passes placed so far.
    Derive(usize),
}

/// The URL key that opens the explain card (`explain=1`).
pub const EXPLAIN_KEY: &str = "explain";

/// The URL key of the theme (`theme=dark`).
pub const THEME_KEY: &str = "theme";
/// The URL key of the zoom (`zoom=t0,t1`, the visible time range).
pub const ZOOM_KEY: &str = "zoom";

/// The zoom a permalink holds: two finite times, the second after the first.
pub fn zoom_of(link: &Permalink) -> Option<(f64, f64)> {
    let (a, b) = link.extra(ZOOM_KEY)?.split_once(',')?;
    let (a, b) = (a.trim().parse::<f64>().ok()?, b.trim().parse::<f64>().ok()?);
    (a.is_finite() && b.is_finite() && a >= 0.0 && b > a).then_some((a, b))
}

/// A zoom as its URL value, to six decimals.
fn zoom_value((a, b): (f64, f64)) -> String {
    let short = |v: f64| {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    format!("{},{}", short(a), short(b))
}

/// The URL key of the bubble measure (`measure=ideal`, see [`BubbleMeasure::key`]).
pub const MEASURE_KEY: &str = "measure";

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The next computation number (from 1, in the order results are applied).
pub fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Generates, validates and simulates family `name` under `params`, within `budget`, with its
/// extras (the memory part and the bound too when it is the `chosen` schedule).
pub fn compute_one(name: &str, params: &ScheduleParams, budget: Place, units: Units, chosen: bool) -> Computed {
    let Some(fam) = family(name) else {
        let e = bubblescope::registry::unknown_family(name);
        let error = UiError { field: Some(Field::Schedule), message: e.to_string() };
        return Computed::failed(name.to_string(), name.to_string(), error);
    };
    let p = fam.own_params(params);
    let label = fam.label(&p, units);
    if let Err(error) = admit(fam, &p, budget) {
        return Computed::failed(name.to_string(), label, error);
    }
    match bubblescope::run(name, &p) {
        Ok(a) => Computed::analyzed(name.to_string(), label, Some(fam), &p, a, chosen),
        Err(e) => Computed::failed(name.to_string(), label, UiError::from_analyze(e)),
    }
}

/// The passes `fam` generates under its own parameters `p`, or why the playground refuses to
/// compute it live at `budget` ([`bubblescope::live::admit`]). Decides before any work is done.
fn admit(fam: &bubblescope::Family, p: &ScheduleParams, budget: Place) -> Result<u64, UiError> {
    bubblescope::live::admit(fam, p, budget).map_err(|r| UiError { field: Some(r.field()), message: r.message(fam, p) })
}

/// Simulates an opened file under the settings' costs.
fn compute_file(file: &LoadedFile, params: &ScheduleParams) -> (Computed, ScheduleParams) {
    let Some(schedule) = &file.schedule else {
        let message = file.diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
        let computed = Computed::failed("file".into(), file.name.clone(), UiError { field: None, message });
        return (computed, params.clone());
    };
    let costs = file.measured_costs().unwrap_or_else(|| params.costs.clone());
    let run = bubblescope::formats::analyze_file_timed(
        &file.name,
        (**schedule).clone(),
        costs,
        params.mem_limit,
        file.times.as_ref(),
    );
    let label = file.measured.as_ref().map_or(run.label, |m| m.label());
    let mut run_params = run.params;
    if file.times.is_some() {
        run_params.units = bubblescope::units::Units::Measured;
    }
    let computed = match run.analysis {
        Ok(a) => Computed::analyzed("file".into(), label, None, &run_params, a, true),
        Err(e) => Computed::failed("file".into(), label, UiError::from_analyze(e)),
    };
    (computed, run_params)
}

/// A measured run's orders at the costs fitted from it (`params` the run's, their costs
/// replaced): the plan's prediction, drawn below the run.
fn compute_predicted(file: &LoadedFile, params: &ScheduleParams) -> Option<Computed> {
    let (schedule, costs) = (file.schedule.as_ref()?, file.measured_costs()?);
    let label = "predicted: the same orders at the fitted costs".to_string();
    Some(match bubblescope::analyze((**schedule).clone(), &costs) {
        Ok(a) => {
            let p = ScheduleParams { costs, ..params.clone() };
            Computed::analyzed(PREDICTED.into(), label, None, &p, a, false)
        }
        Err(e) => Computed::failed(PREDICTED.into(), label, UiError::from_analyze(e)),
    })
}

/// The name of the predicted replay in an outcome's compared schedules.
pub const PREDICTED: &str = "predicted";

/// The families the settings compute without a file, each with its own parameters: the
/// chosen one, the compared ones and the baseline (1F1B, unless it is the chosen one).
pub fn planned(settings: &Settings) -> impl Iterator<Item = &str> {
    let baseline = (settings.schedule != BASELINE.name).then_some(BASELINE.name);
    std::iter::once(settings.schedule.as_str())
        .chain(settings.compare.iter().map(String::as_str).filter(|n| *n != settings.schedule))
        .chain(baseline)
}

/// The effective parameters of the chosen family (its own options only), with the costs the
/// settings derive (a model's, and the recompute and offload they ask for) when those are
/// valid.
pub fn effective_params(settings: &Settings) -> ScheduleParams {
    let params = settings.effective_params().unwrap_or_else(|_| settings.params.clone());
    own_params(&settings.schedule, &params)
}

/// `params` as family `name` reads them (its own options only).
fn own_params(name: &str, params: &ScheduleParams) -> ScheduleParams {
    family(name).map_or_else(|| params.clone(), |f| f.own_params(params))
}

/// Computes everything the settings ask for: an opened file or the chosen family, the
/// compared families and the baseline (1F1B), all at the same settings, within `budget`.
pub fn compute(settings: &Settings, file: Option<&LoadedFile>, budget: Place) -> Outcome {
    compute_with(settings, file, budget, BaselineWhen::Now).0
}

/// [`compute`], with the baseline computed `when` asked; when it is left for later, the
/// parameters it will run at come with the outcome.
pub fn compute_with(
    settings: &Settings,
    file: Option<&LoadedFile>,
    budget: Place,
    when: BaselineWhen,
) -> (Outcome, Option<ScheduleParams>) {
    let start = now_ms();
    // Costs from the model, when one is given; its errors stop every schedule.
    let effective = match settings.effective_params() {
        Ok(p) => p,
        Err(e) => return (model_error(settings, e, start), None),
    };
    let baseline = |params: &ScheduleParams| match when {
        BaselineWhen::Now => (baseline_cost(params, budget).map_or(Baseline::Absent, Baseline::Cost), None),
        BaselineWhen::Later => (Baseline::Follows, Some(params.clone())),
    };
    let settings = &Settings { params: effective, ..settings.clone() };
    let (main, params, compare, baseline) = match file {
        Some(file) => {
            let (main, params) = compute_file(file, &settings.params);
            let compare = compute_predicted(file, &params)
                .into_iter()
                .chain(settings.compare.iter().map(|n| compute_one(n, &params, budget, settings.units(), false)))
                .collect();
            let baseline = baseline(&params);
            (main, params, compare, baseline)
        }
        None => {
            let mut main = compute_one(&settings.schedule, &settings.params, budget, settings.units(), true);
            if let Ok(a) = &main.result {
                main.step = settings.whole_step(a).map(|r| r.map_err(|e| e.to_string()));
            }
            let compare = settings
                .compare
                .iter()
                .filter(|n| **n != settings.schedule)
                .map(|n| compute_one(n, &settings.params, budget, settings.units(), false))
                .collect();
            let baseline = if settings.schedule == BASELINE.name {
                (main.result.as_ref().map_or(Baseline::Absent, |a| Baseline::Cost(a.stats.cost)), None)
            } else {
                baseline(&settings.params)
            };
            (main, own_params(&settings.schedule, &settings.params), compare, baseline)
        }
    };
    let (baseline, later) = baseline;
    (Outcome { id: next_id(), main, compare, baseline, params, elapsed_ms: now_ms() - start }, later)
}

/// 1F1B's cost at `params` when the result left it for later (in the worker).
pub fn baseline_cost_later(params: &ScheduleParams) -> Option<f64> {
    baseline_cost(params, Place::Worker)
}

/// 1F1B's cost at `params`, for the speedup (no extras: it is not drawn).
fn baseline_cost(params: &ScheduleParams, budget: Place) -> Option<f64> {
    let p = BASELINE.own_params(params);
    admit(BASELINE, &p, budget).ok()?;
    bubblescope::run(BASELINE.name, &p).ok().map(|a| a.stats.cost)
}

/// The outcome when the model the costs come from is wrong: the error at the model setting.
fn model_error(settings: &Settings, e: bubblescope::ParamError, start: f64) -> Outcome {
    let error = UiError { field: Some(e.field), message: e.to_string() };
    let label = family(&settings.schedule).map_or_else(|| settings.schedule.clone(), |f| f.title.to_string());
    Outcome {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        main: Computed::failed(settings.schedule.clone(), label, error),
        compare: Vec::new(),
        baseline: Baseline::Absent,
        params: settings.params.clone(),
        elapsed_ms: now_ms() - start,
    }
}

/// Milliseconds from the time origin of the page or of the worker (0 outside a browser).
pub fn now_ms() -> f64 {
    #[cfg(target_arch = "wasm32")]
    {
        use wasm_bindgen::JsCast;
        thread_local! {
            // `performance` of the window or of the worker (`window()` is `None` in a worker).
            static PERFORMANCE: Option<web_sys::Performance> =
                js_sys::Reflect::get(&js_sys::global(), &"performance".into()).ok().and_then(|p| p.dyn_into().ok());
        }
        PERFORMANCE.with(|p| p.as_ref().map_or(0.0, web_sys::Performance::now))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0.0
    }
}

/// Whether the system asks for a dark colour scheme (`prefers-color-scheme: dark`).
pub fn prefers_dark() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .is_some_and(|m| m.matches())
}

impl AppState {
    /// Creates the state from a permalink; [`crate::engine::run`] then computes every change.
    pub fn new(link: Permalink, warnings: Vec<String>, embed: bool) -> AppState {
        // `theme=` overrides the system's colour scheme.
        let theme = match link.extra(THEME_KEY) {
            Some("dark") => ThemeChoice::Dark,
            Some("light") => ThemeChoice::Light,
            _ if prefers_dark() => ThemeChoice::Dark,
            _ => ThemeChoice::Light,
        };
        let measure = link.extra(MEASURE_KEY).and_then(BubbleMeasure::from_key).unwrap_or(BubbleMeasure::OverCost);
        let view = RwSignal::new(View { range: zoom_of(&link), highlight: None });
        let link = RwSignal::new(link);
        // The zoom follows into the URL (a view preference: the settings memo ignores it).
        Effect::new(move |_| {
            let value = view.with(|v| v.range).map(zoom_value);
            if link.with_untracked(|l| l.extra(ZOOM_KEY).map(str::to_string)) != value {
                link.update(|l| l.set_extra(ZOOM_KEY, value));
            }
        });
        let settings = Memo::new(move |_| link.with(Permalink::settings));
        let file = RwSignal::new(None::<LoadedFile>);
        let outcome = RwSignal::new(settings.with_untracked(Outcome::waiting));
        let last_good = RwSignal::new(None);
        Effect::new(move |_| {
            let o = outcome.get();
            if o.main.result.is_ok() {
                last_good.set(Some(o.main.clone()));
            }
        });
        AppState {
            link,
            settings,
            file,
            outcome,
            pending: RwSignal::new(None),
            engine_note: RwSignal::new(None),
            last_good,
            view,
            theme: RwSignal::new(theme),
            measure: RwSignal::new(measure),
            url_warnings: RwSignal::new(warnings),
            embed,
            rest_shown: RwSignal::new(false),
            focus: RwSignal::new(FocusSource::None),
        }
    }

    /// Shows bubble rates under `measure` and keeps it in the URL (a view preference: no
    /// schedule is recomputed).
    pub fn set_measure(&self, measure: BubbleMeasure) {
        self.measure.set(measure);
        let key = (measure != BubbleMeasure::OverCost).then(|| measure.key().to_string());
        self.link.update(|l| l.set_extra(MEASURE_KEY, key));
    }

    /// Switches to `theme` and keeps it in the URL (a view preference).
    pub fn set_theme(&self, theme: ThemeChoice) {
        self.theme.set(theme);
        // Remembered in the link either way: it overrides the system's colour scheme.
        self.link.update(|l| l.set_extra(THEME_KEY, Some(theme.name().to_string())));
    }

    /// Changes the settings with `f`; resets zoom when the schedule's shape changes.
    pub fn update(&self, f: impl FnOnce(&mut Permalink)) {
        self.link.update(f);
        // Only a zoom to reset is a change of the view: anything else would redraw the old
        // schedule before the new one is computed.
        if self.view.with_untracked(|v| v.range.is_some()) {
            self.view.update(|v| v.range = None);
        }
    }

    /// What the numbers mean: µs and bytes when the costs come from a model, µs for a
    /// measured run.
    pub fn units(&self) -> bubblescope::units::Units {
        if self.file.with(|f| f.as_ref().is_some_and(|f| f.times.is_some())) {
            bubblescope::units::Units::Measured
        } else {
            self.link.with(|l| l.model.units())
        }
    }

    /// [`AppState::units`] outside a reactive context.
    pub fn units_untracked(&self) -> bubblescope::units::Units {
        if self.file.with_untracked(|f| f.as_ref().is_some_and(|f| f.times.is_some())) {
            bubblescope::units::Units::Measured
        } else {
            self.link.with_untracked(|l| l.model.units())
        }
    }

    /// The error for `field` in the current outcome, if any.
    pub fn error_for(&self, field: Field) -> Option<String> {
        let o = self.outcome.get();
        match &o.main.result {
            Err(e) if e.field == Some(field) => Some(e.message.clone()),
            _ => None,
        }
    }
}
