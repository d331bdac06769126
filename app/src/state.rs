//! The app's state: the settings (a permalink), what they compute to, and view settings.
//!
//! The app holds no schedule logic: every derivation calls a `bubblescope` function.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bubblescope::permalink::Permalink;
use bubblescope::{
    analyze, family, Analysis, AnalyzeError, BubbleMeasure, Diagnostic, Family, Field, Schedule, ScheduleParams,
};
use leptos::prelude::*;

/// The most passes the app simulates and draws live; larger settings get a message instead
/// of a frozen tab.
pub const MAX_LIVE_PASSES: u64 = 1_500_000;

/// The largest devices × microbatches the adaptive V search (`v-auto`) runs live at unequal
/// costs, where it simulates every near-best block: about half a second in the browser at
/// this size (P = 32, M = 192), and it grows with both.
pub const MAX_LIVE_V_AUTO_SIZE: u32 = 6144;

/// Slider ranges (number boxes accept the same).
pub const MAX_DEVICES: u32 = 64;
/// Largest microbatch count the sliders offer.
pub const MAX_MICROBATCHES: u32 = 512;

/// An error shown in the page, next to the control that causes it.
#[derive(Clone, Debug, PartialEq)]
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
#[derive(Clone, Debug)]
pub struct Computed {
    /// Family name.
    pub name: String,
    /// Heading (family title and sizes).
    pub label: String,
    /// The analysis, or why there is none.
    pub result: Result<Arc<Analysis>, UiError>,
}

/// What the settings compute to.
#[derive(Clone, Debug)]
pub struct Outcome {
    id: u64,
    /// The main schedule.
    pub main: Computed,
    /// Schedules stacked below for comparison.
    pub compare: Vec<Computed>,
    /// 1F1B at the same settings, for the speedup.
    pub baseline: Option<Arc<Analysis>>,
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
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedFile {
    /// The file's name (sanitised).
    pub name: String,
    /// The schedule the file allows, if any.
    pub schedule: Option<Arc<Schedule>>,
    /// Everything the import found wrong or noteworthy, with rows and columns.
    pub diagnostics: Vec<Diagnostic>,
}

/// Everything components share, provided once as context.
#[derive(Clone, Copy)]
pub struct AppState {
    /// The settings: schedule, sizes, costs, comparison (and view keys in `extra`).
    pub link: RwSignal<Permalink>,
    /// An opened schedule file, shown instead of the family while set.
    pub file: RwSignal<Option<LoadedFile>>,
    /// What they compute to.
    pub outcome: Memo<Outcome>,
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
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// An upper bound on the passes `family` generates for `params` (F, B and W for every stage and
/// microbatch), to refuse sizes that would freeze the tab before any work is done.
fn estimated_passes(family: &Family, params: &ScheduleParams) -> u64 {
    use bubblescope::FamilyGroup;
    let chunks = if family.options.contains(&Field::Chunks) {
        u64::from(params.chunks.unwrap_or(2))
    } else if family.options.contains(&Field::Waves) {
        2 * u64::from(params.waves.unwrap_or(2))
    } else if matches!(family.group, FamilyGroup::VShape | FamilyGroup::TwoDirectional) {
        2
    } else {
        1
    };
    let slices =
        u64::from(params.seq_splits.unwrap_or(2).max(1)) * u64::from(family.options.contains(&Field::SeqSplits));
    u64::from(params.devices) * u64::from(params.microbatches) * 3 * chunks * slices.max(1)
}

/// Refuses searches too slow to run live: `v-auto` at unequal costs beyond
/// [`MAX_LIVE_V_AUTO_SIZE`] (with F = B = W and no communication it stops at the first block
/// that reaches its bound, and stays fast).
fn slow_search(name: &str, params: &ScheduleParams) -> Option<UiError> {
    let size = params.devices.saturating_mul(params.microbatches);
    if name != "v-auto" || params.costs.balanced() || size <= MAX_LIVE_V_AUTO_SIZE {
        return None;
    }
    let message = format!(
        "the adaptive V search at unequal costs runs live up to devices × microbatches = {MAX_LIVE_V_AUTO_SIZE}, found {} × {} = {size}\n  hint: use fewer microbatches (past 2 × devices the steady state only repeats), equal F, B and W, or the CLI: bubblescope simulate -s v-auto -p {} -m {}",
        params.devices, params.microbatches, params.devices, params.microbatches
    );
    Some(UiError { field: Some(Field::Microbatches), message })
}

/// Generates, validates and simulates family `name` under `params`.
pub fn compute_one(name: &str, params: &ScheduleParams) -> Computed {
    let Some(fam) = family(name) else {
        let e = bubblescope::families::unknown_family(name);
        return Computed {
            name: name.to_string(),
            label: name.to_string(),
            result: Err(UiError { field: Some(Field::Schedule), message: e.to_string() }),
        };
    };
    let p = fam.own_params(params);
    let label = fam.label(&p);
    if p.devices > MAX_DEVICES || p.microbatches > MAX_MICROBATCHES {
        let (field, message) = if p.devices > MAX_DEVICES {
            (
                Field::Devices,
                format!(
                    "the playground draws up to {MAX_DEVICES} devices, found {}\n  hint: use the CLI for bigger runs",
                    p.devices
                ),
            )
        } else {
            (Field::Microbatches, format!("the playground draws up to {MAX_MICROBATCHES} microbatches, found {}\n  hint: use the CLI for bigger runs", p.microbatches))
        };
        return Computed { name: name.to_string(), label, result: Err(UiError { field: Some(field), message }) };
    }
    let passes = estimated_passes(fam, &p);
    if passes > MAX_LIVE_PASSES {
        let message = format!(
            "this would be about {passes} passes, more than the {MAX_LIVE_PASSES} the playground draws live\n  hint: use fewer devices, microbatches, chunks or sequence splits, or the CLI"
        );
        return Computed {
            name: name.to_string(),
            label,
            result: Err(UiError { field: Some(Field::Microbatches), message }),
        };
    }
    if let Some(error) = slow_search(name, &p) {
        return Computed { name: name.to_string(), label, result: Err(error) };
    }
    let result = bubblescope::run(name, &p).map(Arc::new).map_err(UiError::from_analyze);
    Computed { name: name.to_string(), label, result }
}

/// Simulates an opened file under the settings' costs.
fn compute_file(file: &LoadedFile, params: &ScheduleParams) -> (Computed, ScheduleParams) {
    let Some(schedule) = &file.schedule else {
        let message = file.diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
        let computed =
            Computed { name: "file".into(), label: file.name.clone(), result: Err(UiError { field: None, message }) };
        return (computed, params.clone());
    };
    let mut p = ScheduleParams::new(schedule.devices(), schedule.microbatches).with_costs(params.costs);
    p.mem_limit = params.mem_limit;
    let label = schedule.file_label(&file.name);
    let result = p
        .costs
        .check()
        .map_err(AnalyzeError::Param)
        .and_then(|()| analyze((**schedule).clone(), &p.costs))
        .map(Arc::new)
        .map_err(UiError::from_analyze);
    (Computed { name: "file".into(), label, result }, p)
}

/// Computes everything the settings ask for: an opened file or the chosen family, the
/// compared families and the 1F1B baseline, all at the same settings.
pub fn compute(link: &Permalink, file: Option<&LoadedFile>) -> Outcome {
    let start = now_ms();
    let (main, params, compare, baseline) = match file {
        Some(file) => {
            let (main, params) = compute_file(file, &link.params);
            let compare = link.compare.iter().map(|n| compute_one(n, &params)).collect();
            let baseline = compute_one("1f1b", &params).result.ok();
            (main, params, compare, baseline)
        }
        None => {
            let main = compute_one(&link.schedule, &link.params);
            let compare =
                link.compare.iter().filter(|n| **n != link.schedule).map(|n| compute_one(n, &link.params)).collect();
            let baseline = if link.schedule == "1f1b" {
                main.result.as_ref().ok().cloned()
            } else {
                compute_one("1f1b", &link.params).result.ok()
            };
            let params = family(&link.schedule).map_or_else(|| link.params.clone(), |f| f.own_params(&link.params));
            (main, params, compare, baseline)
        }
    };
    Outcome {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        main,
        compare,
        baseline,
        params,
        elapsed_ms: now_ms() - start,
    }
}

/// Milliseconds from the page's time origin (0 outside a browser).
pub fn now_ms() -> f64 {
    #[cfg(target_arch = "wasm32")]
    {
        web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0.0
    }
}

impl AppState {
    /// Creates the state from a permalink.
    pub fn new(link: Permalink, warnings: Vec<String>, embed: bool) -> AppState {
        // `theme=` overrides the system's colour scheme.
        let theme = match link.extra("theme") {
            Some("dark") => ThemeChoice::Dark,
            Some("light") => ThemeChoice::Light,
            _ if crate::components::prefers_dark() => ThemeChoice::Dark,
            _ => ThemeChoice::Light,
        };
        let measure = match link.extra("measure") {
            Some("ideal") => BubbleMeasure::OverIdeal,
            Some("idle") => BubbleMeasure::IdleOverMakespan,
            _ => BubbleMeasure::OverCost,
        };
        let link = RwSignal::new(link);
        let file = RwSignal::new(None::<LoadedFile>);
        let outcome = Memo::new(move |_| compute(&link.get(), file.get().as_ref()));
        let last_good = RwSignal::new(None);
        Effect::new(move |_| {
            let o = outcome.get();
            if o.main.result.is_ok() {
                last_good.set(Some(o.main.clone()));
            }
        });
        AppState {
            link,
            file,
            outcome,
            last_good,
            view: RwSignal::new(View { range: None, highlight: None }),
            theme: RwSignal::new(theme),
            measure: RwSignal::new(measure),
            url_warnings: RwSignal::new(warnings),
            embed,
        }
    }

    /// Changes the settings with `f`; resets zoom when the schedule's shape changes.
    pub fn update(&self, f: impl FnOnce(&mut Permalink)) {
        self.link.update(f);
        self.view.update(|v| v.range = None);
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
