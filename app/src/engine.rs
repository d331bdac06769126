//! Where computations run: on the page for small schedules, in the engine for everything
//! else, so heavy work never blocks the page. `docs/internals.md` has the whole story.
//!
//! * **Two modules.** The page's own module draws and computes small schedules
//!   ([`runs_on_page`]); the engine module (`src/bin/engine.rs`, built for speed) has
//!   everything and runs in a background Web Worker, started a task after a first chart
//!   computed here. They speak [`crate::wire`]; the engine answers in [`crate::work`].
//! * **Only the latest result is applied.** Every settings change takes the next sequence
//!   number; a stale result is dropped. A busy worker keeps a one-place queue, and a stale
//!   request running past [`RESTART_AFTER_MS`] is abandoned by replacing the worker.
//! * **Extras follow** the result (gap causes, memory part, lower bound), so the chart is
//!   drawn first; for a result computed here the page asks the engine for them.
//! * **Workers of their own** for "Compare all" ([`run_all`]), "Fit under the limit"
//!   ([`run_fit`]) and opening and exporting files ([`ask`]).
//! * **Fallback.** When no worker starts within [`START_TIMEOUT_MS`], the engine module is
//!   loaded on the page and answers there, and [`AppState::engine_note`] says so.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::{Rc, Weak};
use std::sync::Arc;

use bubblescope::settings::Settings;
use bubblescope::{family, registry::computes_here};
use js_sys::{Array, Object, Reflect, Uint8Array};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker, WorkerOptions, WorkerType};

use crate::compare::AllState;
use crate::fit::{FitResult, FitState};
use crate::state::{
    compute, effective_params, next_id, now_ms, planned, AppState, Computed, LoadedFile, Outcome, Place, UiError,
};
use crate::wire::{self, kind, Parts, Wire};

/// How long the worker may take to start before the engine is loaded on the page instead.
pub const START_TIMEOUT_MS: i32 = 10_000;

/// How long the settings must rest before a result's follow-up (extras, the baseline) is
/// computed. During a drag a move comes every frame: the follow-up of each would hold up the
/// next move's result (the worker computes one thing at a time) and take a core from the
/// page, for numbers the next result replaces at once.
pub const FOLLOW_UP_AFTER_MS: i32 = 100;

/// A stale request that has run this long is abandoned (the worker is replaced) when a new one
/// arrives, rather than waited for.
pub const RESTART_AFTER_MS: f64 = 250.0;

/// The engine module's JS glue, beside the page's (trunk names a worker's files by its binary).
const ENGINE_GLUE: &str = "bubblescope-engine.js";

/// Whether the settings are cheap enough to compute on the page ([`bubblescope::live::place`];
/// always with a file: its schedule is already here and simulating it is linear), and the
/// page's module computes every family they name.
pub fn runs_on_page(settings: &Settings, file: bool) -> bool {
    let families: Vec<_> = planned(settings).filter_map(family).collect();
    families.iter().all(|f| computes_here(f))
        && (file
            || bubblescope::live::place(families.iter().map(|f| (*f, f.own_params(&settings.params)))) == Place::Page)
}

/// The worker's start-up script: it loads the engine's glue, whose module's `main` then calls
/// [`serve`].
const BOOTSTRAP: &str = r#"self.onmessage = async (event) => {
  self.onmessage = null;
  try {
    const glue = await import(event.data.glue);
    await glue.default();
  } catch (e) {
    self.postMessage({ failed: String(e && e.message || e) });
  }
};"#;

/// The message a worker sends once it serves requests.
const READY: &str = "ready";

#[wasm_bindgen]
extern "C" {
    /// The URL of this module's JS glue (`import.meta.url` of the glue).
    #[wasm_bindgen(thread_local_v2, js_namespace = ["import", "meta"], js_name = url)]
    static GLUE_URL: String;
}

#[wasm_bindgen(inline_js = "export function import_module(url) { return import(url); }")]
extern "C" {
    /// `import(url)`: a module, loaded once per page.
    fn import_module(url: &str) -> js_sys::Promise;
}

/// The URL of the engine's glue, beside this module's.
fn engine_url() -> String {
    let here = GLUE_URL.with(Clone::clone);
    match here.rfind('/') {
        Some(i) => format!("{}{ENGINE_GLUE}", &here[..=i]),
        None => ENGINE_GLUE.to_string(),
    }
}

/// A request on its way to, or waiting for, the engine.
struct Job {
    seq: u64,
    /// Its kind ([`kind`]).
    kind: &'static str,
    /// Its message.
    request: Wire,
    /// What its answer is for.
    reply: Reply,
    /// When the worker got it.
    sent: f64,
}

/// What an answer is for.
enum Reply {
    /// The settings' schedules: the outcome.
    Schedules(Settings),
    /// The extras of the outcome with this id.
    Extras(u64),
    /// "Compare all" at these settings.
    All,
    /// "Fit under the limit" at these settings.
    Fit(Settings),
    /// An answer a caller waits for ([`ask`]).
    Callback(Box<dyn FnOnce(Wire)>),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    Starting,
    Ready,
    /// No worker: the engine module answers on the page ([`Engine`]).
    Failed,
}

/// What a client computes, and where its results go.
#[derive(Clone, Copy)]
enum Sink {
    /// The settings' schedules: [`AppState::outcome`], with [`AppState::pending`].
    Outcome,
    /// Every family at the settings, for "Compare all".
    All(RwSignal<AllState>),
    /// The recompute/offload setting that fits the limit, for "Fit under the limit".
    Fit(RwSignal<FitState>),
    /// Files opened and written, one request after another, none dropped.
    Files,
}

/// The page's side of a worker.
struct Client {
    state: AppState,
    sink: Sink,
    worker: Option<Worker>,
    /// Keeps the worker's event handlers alive while it lives.
    handlers: Vec<Closure<dyn FnMut(JsValue)>>,
    status: Status,
    /// The sequence number of the latest settings change.
    latest: u64,
    in_flight: Option<Job>,
    /// What waits: one request (a newer one replaces it), or for [`Sink::Files`] every one.
    queued: VecDeque<Job>,
    /// How many workers were started (for messages and tests).
    started: u32,
    /// The request whose result was applied last, and its outcome's id: its extras follow.
    applied: Option<(u64, u64)>,
}

type Shared = Rc<RefCell<Client>>;

impl Drop for Client {
    fn drop(&mut self) {
        self.stop_worker();
    }
}

impl Client {
    /// Stops the worker; its late messages go nowhere (its handlers are detached first).
    fn stop_worker(&mut self) {
        if let Some(w) = self.worker.take() {
            w.set_onmessage(None);
            w.set_onerror(None);
            w.terminate();
        }
        self.handlers.clear();
    }

    /// Queues `job`: behind the others for files, else in place of the one waiting.
    fn queue(&mut self, job: Job) {
        if !matches!(self.sink, Sink::Files) {
            self.queued.clear();
        }
        self.queued.push_back(job);
    }
}

/// Computes every settings change of `state`: the current settings at once (on the page, or
/// sent to the worker), then each change.
pub fn run(state: AppState) {
    let client = new_client(state, Sink::Outcome);
    let first = state.settings.get_untracked();
    let on_page = runs_on_page(&first, false);
    request(&client, &first, None);
    if on_page {
        // The first chart needs no worker: start it once that chart is drawn (a task later),
        // so starting it takes no core from the first chart.
        let later = client.clone();
        leptos::prelude::set_timeout(move || spawn(&later), std::time::Duration::ZERO);
    } else {
        spawn(&client);
    }
    Effect::new(move |prev: Option<()>| {
        let settings = state.settings.get();
        let file = state.file.get();
        // The first run sees what was just requested.
        if prev.is_some() || file.is_some() || settings != first {
            request(&client, &settings, file.as_ref());
        }
    });
}

/// Computes every family at each settings change into `all`, in a worker of its own that
/// lives as long as the calling component (the "Compare all" view).
pub fn run_all(state: AppState, all: RwSignal<AllState>) {
    let client = new_client(state, Sink::All(all));
    spawn(&client);
    // The effect holds the only strong reference: when the view goes, the effect is
    // disposed, the client dropped and its worker stopped (`Drop for Client`).
    Effect::new(move |_| {
        let settings = state.settings.get();
        request(&client, &settings, None);
    });
}

/// Runs "Fit under the limit" at the current settings each time `asks` changes, in a worker of
/// its own started on the first press and kept while the calling component lives; applies the
/// setting it chose to the settings (so the charts follow) and keeps its answer in `fit`.
pub fn run_fit(state: AppState, fit: RwSignal<FitState>, asks: ReadSignal<u64>) {
    let client = new_client(state, Sink::Fit(fit));
    Effect::new(move |prev: Option<u64>| {
        let n = asks.get();
        if n > 0 && prev != Some(n) {
            start_once(&client);
            request(&client, &state.settings.get_untracked(), None);
        }
        n
    });
}

thread_local! {
    /// The client that opens and writes files, started on first use and kept.
    static FILES: RefCell<Option<Shared>> = const { RefCell::new(None) };
}

/// Asks the engine for `kind` with `request` (opening or writing a file) and hands its answer
/// to `done`, in order and without dropping any. The engine's worker starts on the first ask.
pub fn ask(state: AppState, kind: &'static str, request: Wire, done: impl FnOnce(Wire) + 'static) {
    let client = FILES.with(|f| f.borrow_mut().get_or_insert_with(|| new_client(state, Sink::Files)).clone());
    start_once(&client);
    let seq = {
        let mut c = client.borrow_mut();
        c.latest += 1;
        c.latest
    };
    client.borrow_mut().queue(Job { seq, kind, request, reply: Reply::Callback(Box::new(done)), sent: 0.0 });
    send_next(&client);
}

/// Starts the client's worker unless one was started before.
fn start_once(client: &Shared) {
    let first = {
        let c = client.borrow();
        c.started == 0 && c.status == Status::Starting
    };
    if first {
        spawn(client);
    }
}

/// Applies a finished fit of `asked` (the settings it ran at): its setting when the settings
/// have not changed since, and its answer, about the settings that result.
fn finish_fit(state: AppState, fit: RwSignal<FitState>, asked: &Settings, result: Result<FitResult, UiError>) {
    if state.settings.get_untracked() != *asked {
        fit.update(|f| f.pending = false);
        return;
    }
    if let Some(trade) = result.as_ref().ok().and_then(|r| r.apply_to(&asked.trade)) {
        if trade != asked.trade {
            state.update(|l| l.trade = trade);
        }
    }
    let about = state.settings.get_untracked();
    fit.set(FitState { result: Some((result, about)), pending: false });
}

fn new_client(state: AppState, sink: Sink) -> Shared {
    Rc::new(RefCell::new(Client {
        state,
        sink,
        worker: None,
        handlers: Vec::new(),
        status: Status::Starting,
        latest: 0,
        in_flight: None,
        queued: VecDeque::new(),
        started: 0,
        applied: None,
    }))
}

/// Starts computing `settings` (and `file`) as the latest request.
fn request(client: &Shared, settings: &Settings, file: Option<&LoadedFile>) {
    let (state, sink, seq) = {
        let mut c = client.borrow_mut();
        c.latest += 1;
        (c.state, c.sink, c.latest)
    };
    let on_page = match sink {
        Sink::Outcome => runs_on_page(settings, file.is_some()) || fallback_here(client, settings),
        // Every family at once, or the family once per rung: always worth a round trip.
        Sink::All(_) | Sink::Fit(_) | Sink::Files => false,
    };
    if on_page {
        compute_here(client, seq, settings, file);
        return;
    }
    let (kind, reply) = match sink {
        Sink::Outcome => {
            state.pending.set(Some(now_ms()));
            (kind::SCHEDULES, Reply::Schedules(settings.clone()))
        }
        Sink::All(all) => {
            all.update(|a| a.pending = true);
            (kind::ALL, Reply::All)
        }
        Sink::Fit(fit) => {
            fit.update(|f| f.pending = true);
            (kind::FIT, Reply::Fit(settings.clone()))
        }
        Sink::Files => return,
    };
    let job = Job { seq, kind, request: wire::encode_settings(settings), reply, sent: 0.0 };
    let stale_and_long = {
        let mut c = client.borrow_mut();
        c.queue(job);
        c.status == Status::Ready && c.in_flight.as_ref().is_some_and(|j| now_ms() - j.sent > RESTART_AFTER_MS)
    };
    if stale_and_long {
        restart(client);
    } else {
        send_next(client);
    }
}

/// Computes request `seq` on the page and applies it; its extras are asked for once the
/// settings have rested [`FOLLOW_UP_AFTER_MS`].
fn compute_here(client: &Shared, seq: u64, settings: &Settings, file: Option<&LoadedFile>) {
    let state = client.borrow().state;
    client.borrow_mut().queued.clear();
    let outcome = compute(settings, file, Place::Page);
    report(&format!("page {:.1}", outcome.elapsed_ms));
    state.pending.set(None);
    let extras = follow_up(seq, &outcome);
    state.outcome.set(outcome);
    if let Some(job) = extras {
        let weak = Rc::downgrade(client);
        leptos::prelude::set_timeout(
            move || {
                if let Some(client) = weak.upgrade() {
                    if client.borrow().latest == job.seq {
                        client.borrow_mut().queue(job);
                        send_next(&client);
                    }
                }
            },
            std::time::Duration::from_millis(FOLLOW_UP_AFTER_MS.unsigned_abs().into()),
        );
    }
}

/// Without a worker, the page's module computes what it can of the settings itself, as it
/// did with a worker for small schedules (the engine on the page computes the rest).
fn fallback_here(client: &Shared, settings: &Settings) -> bool {
    client.borrow().status == Status::Failed && planned(settings).filter_map(family).all(computes_here)
}

/// The request for the extras of `outcome`, computed on the page as request `seq`, when it has
/// any analysis.
fn follow_up(seq: u64, outcome: &Outcome) -> Option<Job> {
    let any = std::iter::once(&outcome.main).chain(&outcome.compare).any(|c| c.result.is_ok());
    any.then(|| Job {
        seq,
        kind: kind::EXTRAS,
        request: wire::encode_extras_asks(outcome),
        reply: Reply::Extras(outcome.id),
        sent: 0.0,
    })
}

/// Where and how fast the last result was computed, for the browser benchmark:
/// `page <compute ms>` or `worker <compute ms> <round trip ms> <decode ms> <received at ms>`
/// on the root element's `data-engine`.
fn report(text: &str) {
    if let Some(root) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.document_element()) {
        let _ = root.set_attribute("data-engine", text);
    }
}

/// Sends the next queued request when the engine is free: to the worker, or to the engine on
/// the page (loading it first).
fn send_next(client: &Shared) {
    let status = client.borrow().status;
    match status {
        Status::Starting => {}
        Status::Ready => send_to_worker(client),
        Status::Failed => {
            if let Some(engine) = Engine::get(client) {
                answer_on_page(client, &engine);
            }
        }
    }
}

fn send_to_worker(client: &Shared) {
    let mut c = client.borrow_mut();
    if c.in_flight.is_some() {
        return;
    }
    let Some(mut job) = c.queued.pop_front() else { return };
    let Some(worker) = c.worker.clone() else { return };
    let (msg, transfer) = message(&JsValue::from_f64(job.seq as f64), &job.request);
    msg.push(&JsValue::from_str(job.kind));
    job.sent = now_ms();
    c.in_flight = Some(job);
    drop(c);
    if let Err(e) = worker.post_message_with_transfer(&msg, &transfer) {
        fail(client, &format!("it refused a message ({})", describe(&e)));
    }
}

/// Answers every queued request with the engine on the page, one task each.
fn answer_on_page(client: &Shared, engine: &Engine) {
    let Some(job) = client.borrow_mut().queued.pop_front() else { return };
    let start = now_ms();
    let answer = engine.handle(job.kind, &job.request);
    let took = now_ms() - start;
    let seq = job.seq;
    if job.kind == kind::SCHEDULES {
        report(&format!("page {took:.1}"));
    }
    // Its schedules' extras are asked for as the page's own are.
    let follow = matches!(job.reply, Reply::Schedules(_));
    apply(client, job, answer, 0.0);
    if follow {
        let outcome = client.borrow().state.outcome.get_untracked();
        if let Some(extras) = follow_up(seq, &outcome) {
            client.borrow_mut().queued.push_back(extras);
        }
    }
    if !client.borrow().queued.is_empty() {
        let weak = Rc::downgrade(client);
        leptos::prelude::set_timeout(
            move || {
                if let Some(client) = weak.upgrade() {
                    send_next(&client);
                }
            },
            std::time::Duration::ZERO,
        );
    }
}

/// Replaces the worker (abandoning what it runs) and sends the queued request to the new one.
fn restart(client: &Shared) {
    {
        let mut c = client.borrow_mut();
        c.stop_worker();
        c.in_flight = None;
        c.status = Status::Starting;
    }
    spawn(client);
}

/// Starts a worker on the engine's module.
fn spawn(client: &Shared) {
    match new_worker(client) {
        Ok(()) => {
            let weak = Rc::downgrade(client);
            let started = client.borrow().started;
            let timeout = Closure::once_into_js(move || {
                let Some(client) = weak.upgrade() else { return };
                let late = {
                    let c = client.borrow();
                    c.status == Status::Starting && c.started == started
                };
                if late {
                    fail(&client, &format!("it did not answer within {} s", START_TIMEOUT_MS / 1000));
                }
            });
            if let Some(w) = web_sys::window() {
                let _ =
                    w.set_timeout_with_callback_and_timeout_and_arguments_0(timeout.unchecked_ref(), START_TIMEOUT_MS);
            }
        }
        Err(reason) => fail(client, &reason),
    }
}

fn new_worker(client: &Shared) -> Result<(), String> {
    let blob_parts = Array::of1(&JsValue::from_str(BOOTSTRAP));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("text/javascript");
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&blob_parts, &options).map_err(|e| describe(&e))?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(|e| describe(&e))?;
    let opts = WorkerOptions::new();
    opts.set_type(WorkerType::Module);
    opts.set_name("bubblescope-engine");
    let worker = Worker::new_with_options(&url, &opts).map_err(|e| describe(&e));
    let _ = web_sys::Url::revoke_object_url(&url);
    let worker = worker?;

    let weak = Rc::downgrade(client);
    let on_message = Closure::<dyn FnMut(JsValue)>::new(move |ev: JsValue| {
        if let Some(client) = weak.upgrade() {
            on_message(&client, ev.unchecked_into());
        }
    });
    let weak = Rc::downgrade(client);
    let on_error = Closure::<dyn FnMut(JsValue)>::new(move |ev: JsValue| {
        let ev: ErrorEvent = ev.unchecked_into();
        // Handled here: not an uncaught error of the page.
        ev.prevent_default();
        if let Some(client) = weak.upgrade() {
            on_error(&client, &ev.message());
        }
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));

    let init = Object::new();
    let _ = Reflect::set(&init, &"glue".into(), &engine_url().into());
    worker.post_message(&init).map_err(|e| describe(&e))?;

    let mut c = client.borrow_mut();
    c.worker = Some(worker);
    c.handlers = vec![on_message, on_error];
    c.status = Status::Starting;
    c.started += 1;
    Ok(())
}

fn on_message(client: &Shared, ev: MessageEvent) {
    let data = ev.data();
    if data.as_string().as_deref() == Some(READY) {
        client.borrow_mut().status = Status::Ready;
        send_next(client);
        return;
    }
    if let Some(reason) = Reflect::get(&data, &"failed".into()).ok().and_then(|v| v.as_string()) {
        fail(client, &format!("it could not load ({reason})"));
        return;
    }
    let Ok(parts) = data.dyn_into::<Array>() else { return };
    let seq = parts.get(0).as_f64().unwrap_or(-1.0) as u64;
    let received = now_ms();
    let wire = read_wire(&parts);
    if parts.get(2).as_string().as_deref() == Some(kind::EXTRAS) && !in_flight_is(client, seq, kind::EXTRAS) {
        // The extras the worker sends after a result of its own.
        if let Ok(wire) = wire {
            apply_pushed_extras(client, seq, &wire);
        }
        return;
    }
    let job = client.borrow_mut().in_flight.take();
    if let (Some(job), Ok(wire)) = (job.filter(|j| j.seq == seq), wire) {
        let round_trip = received - job.sent;
        apply(client, job, wire, round_trip);
    }
    send_next(client);
}

/// Whether the request in flight is request `seq` of kind `kind`.
fn in_flight_is(client: &Shared, seq: u64, kind: &str) -> bool {
    client.borrow().in_flight.as_ref().is_some_and(|j| j.seq == seq && j.kind == kind)
}

/// Applies the answer to `job` when it is still wanted: results of the latest request, extras
/// of the outcome still shown, and every answer a caller waits for.
fn apply(client: &Shared, job: Job, wire: Wire, round_trip: f64) {
    let (latest, state, sink) = {
        let c = client.borrow();
        (c.latest, c.state, c.sink)
    };
    let current = job.seq == latest;
    match job.reply {
        Reply::Callback(done) => done(wire),
        Reply::Extras(id) => {
            if current {
                apply_extras(state, id, &wire);
            }
        }
        Reply::Schedules(settings) if current => {
            let start = now_ms();
            let outcome = match wire::decode(&wire) {
                Ok(p) => outcome_of(p, &settings),
                Err(e) => failed_outcome(&settings, &format!("the worker's result could not be read: {e}")),
            };
            if round_trip > 0.0 {
                let received = start;
                report(&format!(
                    "worker {:.1} {:.1} {:.1} {received:.1}",
                    outcome.elapsed_ms,
                    round_trip,
                    now_ms() - start
                ));
            }
            client.borrow_mut().applied = Some((job.seq, outcome.id));
            state.pending.set(None);
            state.outcome.set(outcome);
        }
        Reply::All if current => {
            if let Sink::All(all) = sink {
                let result = wire::decode_all(&wire)
                    .map_err(|e| format!("the worker's result could not be read: {e}"))
                    .and_then(|r| r.map(Arc::new));
                all.set(AllState { result: Some(result), pending: false });
            }
        }
        Reply::Fit(settings) if current => {
            if let Sink::Fit(fit) = sink {
                let result = wire::decode_fit(&wire)
                    .map_err(|e| UiError {
                        field: None,
                        message: format!("the worker's result could not be read: {e}"),
                    })
                    .and_then(|r| r);
                finish_fit(state, fit, &settings, result);
            }
        }
        Reply::Schedules(_) | Reply::All | Reply::Fit(_) => {}
    }
}

/// Applies the extras the worker sent after request `seq`'s result, when that result was
/// applied last and is still shown.
fn apply_pushed_extras(client: &Shared, seq: u64, wire: &Wire) {
    let (applied, state) = {
        let c = client.borrow();
        (c.applied, c.state)
    };
    if let Some((_, id)) = applied.filter(|(s, _)| *s == seq) {
        apply_extras(state, id, wire);
    }
}

/// Applies extras to the outcome with `id`, when it is still shown. A damaged message leaves
/// it without them.
fn apply_extras(state: AppState, id: u64, wire: &Wire) {
    let follow = state.outcome.with_untracked(|o| (o.id == id).then(|| wire::decode_extras(wire, o)));
    if let Some(Ok(follow)) = follow {
        state.outcome.update(|o| o.set_follow_up(follow));
    }
}

fn on_error(client: &Shared, message: &str) {
    let (status, job, state, sink) = {
        let mut c = client.borrow_mut();
        (c.status, c.in_flight.take(), c.state, c.sink)
    };
    if status == Status::Starting {
        fail(client, &format!("it could not load ({message})"));
        return;
    }
    // It stopped while computing: report it for that request and start a fresh worker.
    if let Some(job) = job.filter(|j| j.seq == client.borrow().latest || matches!(j.reply, Reply::Callback(_))) {
        let msg = format!(
            "the computation stopped: {message}\n  hint: change a setting to try again, or use the CLI for this size"
        );
        match (sink, job.reply) {
            (Sink::Outcome, Reply::Schedules(settings)) => {
                state.pending.set(None);
                state.outcome.set(failed_outcome(&settings, &msg));
            }
            (Sink::All(all), _) => all.set(AllState { result: Some(Err(msg)), pending: false }),
            (Sink::Fit(fit), Reply::Fit(settings)) => {
                finish_fit(state, fit, &settings, Err(UiError { field: None, message: msg }));
            }
            (_, Reply::Callback(done)) => done(failed_answer(job.kind, &msg)),
            _ => {}
        }
    }
    restart(client);
}

/// The answer of kind `kind` that says the engine failed with `message`.
fn failed_answer(kind: &str, message: &str) -> Wire {
    match kind {
        kind::IMPORT => wire::encode_imported(&Err(message.to_string())),
        _ => wire::encode_exported(&Err(message.to_string())),
    }
}

/// Gives up on the worker: the engine answers on the page from now on (loaded first), the
/// page says why, and a request the worker had is answered there.
fn fail(client: &Shared, reason: &str) {
    let state = {
        let mut c = client.borrow_mut();
        c.stop_worker();
        c.status = Status::Failed;
        if let Some(job) = c.in_flight.take() {
            c.queued.push_front(job);
        }
        c.state
    };
    state.engine_note.set(Some(format!(
        "Computing on this page: the background worker could not start ({reason}). Large schedules pause the page while they compute, and the slowest searches are limited."
    )));
    // What the page's module computes itself it computes now; the engine, loaded on the page,
    // answers the rest.
    let here = |j: &Job| matches!(&j.reply, Reply::Schedules(s) if planned(s).filter_map(family).all(computes_here));
    let waiting = {
        let mut c = client.borrow_mut();
        let latest = c.latest;
        let at = c.queued.iter().position(|j| j.seq == latest && here(j));
        at.and_then(|i| c.queued.remove(i))
    };
    match waiting {
        Some(Job { seq, reply: Reply::Schedules(settings), .. }) => compute_here(client, seq, &settings, None),
        _ => send_next(client),
    }
}

fn describe(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

/// A message of `wire`'s bytes after `seq` (`[seq, bytes]`), and the buffer to transfer with it.
fn message(seq: &JsValue, w: &Wire) -> (Array, Array) {
    let bytes = Uint8Array::from(w.bytes.as_slice());
    (Array::of2(seq, &bytes), Array::of1(&bytes.buffer()))
}

/// The bytes of a message: `[seq, bytes, …]`.
fn read_wire(parts: &Array) -> Result<Wire, String> {
    let bytes = parts.get(1).dyn_into::<Uint8Array>().map_err(|_| "no bytes".to_string())?;
    Ok(Wire { bytes: bytes.to_vec() })
}

/// The outcome of a worker's result for `settings`.
fn outcome_of(parts: Parts, settings: &Settings) -> Outcome {
    Outcome {
        id: next_id(),
        main: parts.main,
        compare: parts.compare,
        baseline: parts.baseline,
        params: effective_params(settings),
        elapsed_ms: parts.elapsed_ms,
    }
}

/// An outcome whose main schedule failed with `message`.
fn failed_outcome(settings: &Settings, message: &str) -> Outcome {
    let mut o = Outcome::waiting(settings);
    o.id = next_id();
    o.main = Computed::failed(o.main.name, o.main.label, UiError { field: None, message: message.to_string() });
    o
}

/// The engine module on the page, when no worker can start: loaded once, shared by every
/// client, answering synchronously.
struct Engine {
    /// The module's `answer(kind, bytes)`.
    answer: js_sys::Function,
}

thread_local! {
    static ENGINE: RefCell<EngineState> = const { RefCell::new(EngineState::Unloaded) };
}

enum EngineState {
    Unloaded,
    /// Loading; these clients wait for it.
    Loading(Vec<Weak<RefCell<Client>>>),
    Loaded(Rc<Engine>),
    Broken(String),
}

impl Engine {
    /// The engine, when loaded; else starts loading it (once) and lets `client` know when it is.
    fn get(client: &Shared) -> Option<Rc<Engine>> {
        let start = ENGINE.with(|e| {
            let mut e = e.borrow_mut();
            match &mut *e {
                EngineState::Loaded(engine) => return Err(Some(engine.clone())),
                EngineState::Broken(_) => return Err(None),
                EngineState::Loading(waiting) => {
                    waiting.push(Rc::downgrade(client));
                    return Err(None);
                }
                EngineState::Unloaded => *e = EngineState::Loading(vec![Rc::downgrade(client)]),
            }
            Ok(())
        });
        match start {
            Err(found) => {
                if found.is_none() {
                    broken_answers(client);
                }
                found
            }
            Ok(()) => {
                leptos::task::spawn_local(load_engine());
                None
            }
        }
    }

    fn handle(&self, kind: &str, request: &Wire) -> Wire {
        let bytes = Uint8Array::from(request.bytes.as_slice());
        match self.answer.call2(&JsValue::NULL, &JsValue::from_str(kind), &bytes) {
            Ok(v) => Wire { bytes: v.dyn_into::<Uint8Array>().map(|a| a.to_vec()).unwrap_or_default() },
            Err(e) => failed_answer(kind, &format!("the engine failed on this page: {}", describe(&e))),
        }
    }
}

/// Loads the engine module on the page and hands it to every client that waits.
async fn load_engine() {
    let loaded = async {
        let module =
            wasm_bindgen_futures::JsFuture::from(import_module(&engine_url())).await.map_err(|e| describe(&e))?;
        let init: js_sys::Function =
            Reflect::get(&module, &"default".into()).ok().and_then(|f| f.dyn_into().ok()).ok_or("no init")?;
        let started = init.call0(&JsValue::NULL).map_err(|e| describe(&e))?;
        if let Ok(p) = started.dyn_into::<js_sys::Promise>() {
            wasm_bindgen_futures::JsFuture::from(p).await.map_err(|e| describe(&e))?;
        }
        let answer: js_sys::Function =
            Reflect::get(&module, &"answer".into()).ok().and_then(|f| f.dyn_into().ok()).ok_or("no answer")?;
        Ok::<_, String>(Engine { answer })
    }
    .await;
    let waiting = ENGINE.with(|e| {
        let next = match loaded {
            Ok(engine) => EngineState::Loaded(Rc::new(engine)),
            Err(reason) => EngineState::Broken(reason),
        };
        match std::mem::replace(&mut *e.borrow_mut(), next) {
            EngineState::Loading(waiting) => waiting,
            _ => Vec::new(),
        }
    });
    for client in waiting.iter().filter_map(Weak::upgrade) {
        send_next(&client);
    }
}

/// Answers everything `client` waits for with why the engine is missing.
fn broken_answers(client: &Shared) {
    let reason = ENGINE.with(|e| match &*e.borrow() {
        EngineState::Broken(r) => r.clone(),
        _ => String::new(),
    });
    let message =
        format!("this needs the engine, which could not load on this page ({reason})\n  hint: reload the page");
    let jobs: Vec<Job> = client.borrow_mut().queued.drain(..).collect();
    let state = client.borrow().state;
    let sink = client.borrow().sink;
    for job in jobs {
        match (job.reply, sink) {
            (Reply::Callback(done), _) => done(failed_answer(job.kind, &message)),
            (Reply::Schedules(settings), _) => {
                state.pending.set(None);
                state.outcome.set(failed_outcome(&settings, &message));
            }
            (Reply::All, Sink::All(all)) => all.set(AllState { result: Some(Err(message.clone())), pending: false }),
            (Reply::Fit(settings), Sink::Fit(fit)) => {
                finish_fit(state, fit, &settings, Err(UiError { field: None, message: message.clone() }));
            }
            _ => {}
        }
    }
}

/// The worker's side: answers every request ([`crate::work::handle`]), then, unless a newer
/// request has arrived by then, follows a schedules request with the extras of its result.
/// Called by the engine module's `main` in a worker.
#[cfg(feature = "engine")]
pub fn serve() {
    let scope: web_sys::DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let reply_to = scope.clone();
    // The sequence number of the latest request: a follow-up of an older one is dropped.
    let latest = Rc::new(std::cell::Cell::new(f64::NAN));
    let handler = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        let data: Array = ev.data().unchecked_into();
        let seq = data.get(0);
        latest.set(seq.as_f64().unwrap_or(f64::NAN));
        let request = read_wire(&data).unwrap_or_default();
        let kind = data.get(2).as_string().unwrap_or_default();
        // The baseline (1F1B, for the speedup) is left to the follow-up: the chart does not
        // wait for a second simulation.
        let (answer, follow) = if kind == kind::SCHEDULES {
            let (parts, followed) = crate::work::schedules(&request, crate::state::BaselineWhen::Later);
            (wire::encode(&parts), followed)
        } else {
            (crate::work::handle(&kind, &request), None)
        };
        let (msg, transfer) = message(&seq, &answer);
        msg.push(&JsValue::from_str(&kind));
        let _ = reply_to.post_message_with_transfer(&msg, &transfer);
        if let Some((outcome, baseline)) = follow {
            push_follow_up(&reply_to, &latest, seq, outcome, baseline);
        }
    });
    scope.set_onmessage(Some(handler.as_ref().unchecked_ref()));
    handler.forget();
    let _ = scope.post_message(&JsValue::from_str(READY));
}

/// Sends what follows result `seq`: the baseline's cost (when it was left for later) and
/// the extras, computed in two tasks once the settings have rested [`FOLLOW_UP_AFTER_MS`],
/// each dropped when a newer request has come in by then. During a drag no follow-up runs;
/// when one has started, the next result waits for one piece of it at most.
#[cfg(feature = "engine")]
fn push_follow_up(
    scope: &web_sys::DedicatedWorkerGlobalScope,
    latest: &Rc<std::cell::Cell<f64>>,
    seq: JsValue,
    outcome: crate::state::Outcome,
    baseline: Option<bubblescope::ScheduleParams>,
) {
    let n = seq.as_f64().unwrap_or(f64::NAN);
    let current = {
        let latest = latest.clone();
        move || latest.get() == n
    };
    let later = |scope: &web_sys::DedicatedWorkerGlobalScope, task: &JsValue, after: i32| {
        let _ = scope.set_timeout_with_callback_and_timeout_and_arguments_0(task.unchecked_ref(), after);
    };
    let (post, still) = (scope.clone(), current.clone());
    let extras = Closure::once_into_js(move |cost: JsValue| {
        if !still() {
            return;
        }
        let follow = crate::state::FollowUp { extras: outcome.extras_now(), baseline: cost.as_f64() };
        let (msg, transfer) = message(&seq, &wire::encode_extras(&follow));
        msg.push(&JsValue::from_str(kind::EXTRAS));
        let _ = post.post_message_with_transfer(&msg, &transfer);
    });
    let again = scope.clone();
    let first = Closure::once_into_js(move || {
        if !current() {
            return;
        }
        let cost = baseline.as_ref().and_then(crate::state::baseline_cost_later);
        let extras: &js_sys::Function = extras.unchecked_ref();
        let task = extras.bind1(&JsValue::NULL, &cost.map_or(JsValue::UNDEFINED, JsValue::from_f64));
        later(&again, &task.into(), 0);
    });
    later(scope, &first, FOLLOW_UP_AFTER_MS);
}

/// The engine on the page: answers a request as its worker would (the follow-up extras aside,
/// which the page asks for).
#[cfg(feature = "engine")]
#[wasm_bindgen]
pub fn answer(kind: &str, request: &[u8]) -> Vec<u8> {
    crate::work::handle(kind, &Wire { bytes: request.to_vec() }).bytes
}

/// Whether this module runs in a worker (no window).
pub fn in_worker() -> bool {
    web_sys::window().is_none()
}
