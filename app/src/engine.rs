//! Where computations run: on the page for small schedules, in a background Web Worker for
//! everything else, so heavy work never blocks the page.
//!
//! * **One wasm.** The worker runs the page's own module: the page hands it the compiled
//!   `WebAssembly.Module` and the URL of its JS glue, the worker instantiates them, and
//!   `main` sees no window and serves requests ([`serve`]) instead of mounting the app.
//! * **One message per settings change.** A request is the settings, typed, in the
//!   [`crate::wire`] encoding ([`wire::encode_settings`]): nothing is parsed a second time.
//!   The worker answers in the same encoding, in transferred buffers.
//! * **Only the latest result is applied.** Every settings change takes the next sequence
//!   number; a result whose number is not the latest is dropped. While the worker is busy,
//!   a newer request waits in a one-place queue (it replaces the waiting one, which is never
//!   sent); when the running request is stale and has run for [`RESTART_AFTER_MS`], the
//!   worker is replaced instead of waited for.
//! * **Small schedules stay on the page** ([`runs_on_page`]): under [`bubblescope::live::PAGE_MAX_PASSES`]
//!   passes a worker round trip costs more than it saves (see the constant), so the slider
//!   redraws as fast as before.
//! * **The chart keeps the last result** while the worker computes; [`AppState::pending`]
//!   drives the progress bar.
//! * **"Compare all" has its own worker** ([`run_all`]), started while the view is open: its
//!   twenty-odd runs (an exact search among them) never wait behind, or delay, the chart's.
//! * **"Fit under the limit" has one too** ([`run_fit`]), started on the first press: the
//!   search runs the chosen family once per rung of the recompute/offload ladder.
//! * **Fallback.** When the worker cannot start (no `Worker`, a failed load, no answer in
//!   [`START_TIMEOUT_MS`]), every computation runs on the page under the page's budget and
//!   [`AppState::engine_note`] says so.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use bubblescope::family;
use bubblescope::permalink::Settings;
use js_sys::{Array, Float64Array, Object, Reflect, Uint32Array, Uint8Array};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker, WorkerOptions, WorkerType};

use crate::compare::{compute_all, AllState};
use crate::fit::{compute_fit, FitResult, FitState};
use crate::state::{
    compute, effective_params, next_id, now_ms, planned, AppState, Computed, LoadedFile, Outcome, Place, UiError,
};
use crate::wire::{self, Parts, Wire};

/// How long the worker may take to start before the page computes on its own.
pub const START_TIMEOUT_MS: i32 = 10_000;

/// A stale request that has run this long is abandoned (the worker is replaced) when a new one
/// arrives, rather than waited for.
pub const RESTART_AFTER_MS: f64 = 250.0;

/// Whether the settings are cheap enough to compute on the page ([`bubblescope::live::place`];
/// always with a file: its schedule is already here and simulating it is linear).
pub fn runs_on_page(settings: &Settings, file: bool) -> bool {
    file || bubblescope::live::place(planned(settings).filter_map(family).map(|f| (f, f.own_params(&settings.params))))
        == Place::Page
}

/// The worker's start-up script: it loads the page's glue with the page's compiled module; the
/// module's `main` then calls [`serve`].
const BOOTSTRAP: &str = r#"self.onmessage = async (event) => {
  self.onmessage = null;
  try {
    const glue = await import(event.data.glue);
    await glue.default({ module_or_path: event.data.module });
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

/// A request on its way to, or waiting for, the worker.
struct Job {
    seq: u64,
    settings: Settings,
    /// When the worker got it.
    sent: f64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    Starting,
    Ready,
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
}

impl Sink {
    /// The request's kind, as the worker reads it.
    fn kind(self) -> &'static str {
        match self {
            Sink::Outcome => "schedules",
            Sink::All(_) => ALL,
            Sink::Fit(_) => FIT,
        }
    }
}

/// The kind of a "Compare all" request.
const ALL: &str = "all";

/// The kind of a "Fit under the limit" request.
const FIT: &str = "fit";

/// The page's side of the worker.
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
    queued: Option<Job>,
    /// How many workers were started (for messages and tests).
    started: u32,
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
}

/// Computes every settings change of `state`: the current settings at once (on the page, or
/// sent to the worker), then each change.
pub fn run(state: AppState) {
    let client = new_client(state, Sink::Outcome);
    let first = state.settings.get_untracked();
    request(&client, &first, None);
    spawn(&client);
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
            let first = {
                let c = client.borrow();
                c.started == 0 && c.status == Status::Starting
            };
            if first {
                spawn(&client);
            }
            request(&client, &state.settings.get_untracked(), None);
        }
        n
    });
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
        queued: None,
        started: 0,
    }))
}

/// Starts computing `settings` (and `file`) as the latest request.
fn request(client: &Shared, settings: &Settings, file: Option<&LoadedFile>) {
    let (state, sink) = {
        let mut c = client.borrow_mut();
        c.latest += 1;
        let on_page = c.status == Status::Failed
            || match c.sink {
                Sink::Outcome => runs_on_page(settings, file.is_some()),
                // Every family at once, or the family once per rung: always worth a round trip.
                Sink::All(_) | Sink::Fit(_) => false,
            };
        if !on_page {
            let job = Job { seq: c.latest, settings: settings.clone(), sent: 0.0 };
            let stale_and_long = c.in_flight.as_ref().is_some_and(|j| now_ms() - j.sent > RESTART_AFTER_MS);
            c.queued = Some(job);
            let (state, sink) = (c.state, c.sink);
            drop(c);
            match sink {
                Sink::Outcome => state.pending.set(Some(now_ms())),
                Sink::All(all) => all.update(|a| a.pending = true),
                Sink::Fit(fit) => fit.update(|f| f.pending = true),
            }
            if stale_and_long {
                restart(client);
            } else {
                send_next(client);
            }
            return;
        }
        c.queued = None;
        (c.state, c.sink)
    };
    compute_on_page(state, sink, settings, file);
}

/// Computes on the page (small schedules, or no worker) and applies the result.
fn compute_on_page(state: AppState, sink: Sink, settings: &Settings, file: Option<&LoadedFile>) {
    match sink {
        Sink::Outcome => {
            let outcome = compute(settings, file, Place::Page);
            report(&format!("page {:.1}", outcome.elapsed_ms));
            state.pending.set(None);
            state.outcome.set(outcome);
        }
        Sink::All(all) => {
            let result = compute_all(settings).map(Arc::new);
            all.set(AllState { result: Some(result), pending: false });
        }
        Sink::Fit(fit) => finish_fit(state, fit, settings, compute_fit(settings, Place::Page)),
    }
}

/// Where and how fast the last result was computed, for the browser benchmark:
/// `page <compute ms>` or `worker <compute ms> <round trip ms> <decode ms>` on the root
/// element's `data-engine`.
fn report(text: &str) {
    if let Some(root) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.document_element()) {
        let _ = root.set_attribute("data-engine", text);
    }
}

/// Sends the queued request when the worker is ready and idle.
fn send_next(client: &Shared) {
    let mut c = client.borrow_mut();
    if c.status != Status::Ready || c.in_flight.is_some() {
        return;
    }
    let Some(mut job) = c.queued.take() else { return };
    let Some(worker) = c.worker.clone() else { return };
    let kind = JsValue::from_str(c.sink.kind());
    let (msg, transfer) = message(&JsValue::from_f64(job.seq as f64), &wire::encode_settings(&job.settings));
    msg.push(&kind);
    job.sent = now_ms();
    c.in_flight = Some(job);
    drop(c);
    if let Err(e) = worker.post_message_with_transfer(&msg, &transfer) {
        fail(client, &format!("it refused a message ({})", describe(&e)));
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

/// Starts a worker on this page's module.
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
    opts.set_name("bubblescope-compute");
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
    let glue = GLUE_URL.with(Clone::clone);
    let _ = Reflect::set(&init, &"glue".into(), &glue.into());
    let _ = Reflect::set(&init, &"module".into(), &wasm_bindgen::module());
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
    let (job, latest, state, sink) = {
        let mut c = client.borrow_mut();
        let job = c.in_flight.take();
        (job, c.latest, c.state, c.sink)
    };
    if let Some(job) = job.filter(|j| j.seq == seq && seq == latest) {
        let received = now_ms();
        let wire = read_wire(&parts);
        match sink {
            Sink::Outcome => {
                let outcome = match wire.and_then(|w| wire::decode(&w).map_err(|e| e.to_string())) {
                    Ok(p) => outcome_of(p, &job.settings),
                    Err(e) => failed_outcome(&job.settings, &format!("the worker's result could not be read: {e}")),
                };
                let decoded = now_ms();
                report(&format!(
                    "worker {:.1} {:.1} {:.1}",
                    outcome.elapsed_ms,
                    received - job.sent,
                    decoded - received
                ));
                state.pending.set(None);
                state.outcome.set(outcome);
            }
            Sink::All(all) => {
                let result = wire
                    .and_then(|w| wire::decode_all(&w).map_err(|e| e.to_string()))
                    .map_err(|e| format!("the worker's result could not be read: {e}"))
                    .and_then(|r| r.map(Arc::new));
                all.set(AllState { result: Some(result), pending: false });
            }
            Sink::Fit(fit) => {
                let result = wire
                    .and_then(|w| wire::decode_fit(&w).map_err(|e| e.to_string()))
                    .map_err(|e| UiError {
                        field: None,
                        message: format!("the worker's result could not be read: {e}"),
                    })
                    .and_then(|r| r);
                finish_fit(state, fit, &job.settings, result);
            }
        }
    }
    send_next(client);
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
    if let Some(job) = job.filter(|j| j.seq == client.borrow().latest) {
        let msg = format!(
            "the computation stopped: {message}\n  hint: change a setting to try again, or use the CLI for this size"
        );
        match sink {
            Sink::Outcome => {
                state.pending.set(None);
                state.outcome.set(failed_outcome(&job.settings, &msg));
            }
            Sink::All(all) => all.set(AllState { result: Some(Err(msg)), pending: false }),
            Sink::Fit(fit) => finish_fit(state, fit, &job.settings, Err(UiError { field: None, message: msg })),
        }
    }
    restart(client);
}

/// Gives up on the worker: every computation runs on the page from now on, the page says
/// why, and a request waiting for the worker is computed here.
fn fail(client: &Shared, reason: &str) {
    let (state, sink, waiting) = {
        let mut c = client.borrow_mut();
        c.stop_worker();
        c.status = Status::Failed;
        let latest = c.latest;
        let waiting = c.in_flight.take().into_iter().chain(c.queued.take()).find(|j| j.seq == latest);
        (c.state, c.sink, waiting)
    };
    state.engine_note.set(Some(format!(
        "Computing on this page: the background worker could not start ({reason}). Large schedules pause the page while they compute, and the slowest searches are limited."
    )));
    if let Some(job) = waiting {
        compute_on_page(state, sink, &job.settings, None);
    }
}

fn describe(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

/// A message of `wire`'s three buffers after `seq` (`[seq, numbers, words, text]`), and the
/// buffers to transfer with it.
fn message(seq: &JsValue, w: &Wire) -> (Array, Array) {
    let numbers = Float64Array::from(w.numbers.as_slice());
    let words = Uint32Array::from(w.words.as_slice());
    let text = Uint8Array::from(w.text.as_slice());
    let transfer = Array::of3(&numbers.buffer(), &words.buffer(), &text.buffer());
    (Array::of4(seq, &numbers, &words, &text), transfer)
}

/// The buffers of a message: `[seq, numbers, words, text, …]`.
fn read_wire(parts: &Array) -> Result<Wire, String> {
    let numbers = parts.get(1).dyn_into::<Float64Array>().map_err(|_| "no numbers".to_string())?;
    let words = parts.get(2).dyn_into::<Uint32Array>().map_err(|_| "no words".to_string())?;
    let text = parts.get(3).dyn_into::<Uint8Array>().map_err(|_| "no text".to_string())?;
    Ok(Wire { numbers: numbers.to_vec(), words: words.to_vec(), text: text.to_vec() })
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

/// The worker's side: answers every request with the encoded result. Called by `main` when
/// the module runs in a worker.
pub fn serve() {
    let scope: web_sys::DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let reply_to = scope.clone();
    let handler = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        let data: Array = ev.data().unchecked_into();
        let seq = data.get(0);
        let settings = read_wire(&data)
            .and_then(|w| wire::decode_settings(&w).map_err(|e| e.to_string()))
            .map_err(|e| format!("the worker could not read the settings: {e}"));
        // A damaged request cannot come from the page's own module; it is answered all the same.
        let kind = data.get(4).as_string();
        let w = if kind.as_deref() == Some(ALL) {
            wire::encode_all(&settings.and_then(|s| compute_all(&s)))
        } else if kind.as_deref() == Some(FIT) {
            let settings = settings.map_err(|message| UiError { field: None, message });
            wire::encode_fit(&settings.and_then(|s| compute_fit(&s, Place::Worker)))
        } else {
            let parts = match settings {
                Ok(settings) => {
                    let outcome = compute(&settings, None, Place::Worker);
                    Parts {
                        main: outcome.main,
                        compare: outcome.compare,
                        baseline: outcome.baseline,
                        elapsed_ms: outcome.elapsed_ms,
                    }
                }
                Err(message) => Parts {
                    main: Computed::failed(String::new(), String::new(), UiError { field: None, message }),
                    compare: Vec::new(),
                    baseline: None,
                    elapsed_ms: 0.0,
                },
            };
            wire::encode(&parts)
        };
        let (msg, transfer) = message(&seq, &w);
        let _ = reply_to.post_message_with_transfer(&msg, &transfer);
    });
    scope.set_onmessage(Some(handler.as_ref().unchecked_ref()));
    handler.forget();
    let _ = scope.post_message(&JsValue::from_str(READY));
}

/// Whether this module runs in a worker (no window).
pub fn in_worker() -> bool {
    web_sys::window().is_none()
}
