//! Opening a schedule file: drop or pick a PyTorch CSV or Bubblescope JSON, see it with its
//! validation messages; or a measured run: the per-rank profiler traces of a PyTorch run,
//! several files at once.

use bubblescope::formats;
use bubblescope::{Diagnostic, Severity};
use leptos::prelude::*;
use wasm_bindgen::JsCast as _;

use crate::state::{AppState, LoadedFile};
use crate::wire::{self, kind};

/// The most bytes one trace file may have for the playground to read it (compressed or
/// not): larger runs read with the CLI (`bubblescope convert DIR run.json`, then open it).
pub const MAX_TRACE_FILE_BYTES: f64 = 64.0 * 1_048_576.0;

/// Opens `files` (name, bytes) in the engine: several, or any trace, as one measured run,
/// else one schedule file, whose stored costs become the settings.
fn open_files(state: AppState, files: Vec<(String, Vec<u8>)>, error: RwSignal<Option<String>>) {
    crate::engine::ask(state, kind::IMPORT, wire::encode_import(&files), move |answer| {
        let opened = wire::decode_imported(&answer)
            .map_err(|e| format!("the engine's answer could not be read: {e}"))
            .and_then(|r| r);
        match opened {
            Ok(opened) => {
                // Costs stored in a JSON file become the settings, so the sliders show them.
                if let Some(costs) = opened.costs {
                    state.link.update(|l| l.params.costs = costs);
                }
                open(state, opened.file);
            }
            Err(e) => error.set(Some(e)),
        }
    });
}

/// Reads every picked or dropped file: several, or any trace, as one measured run; else one
/// schedule file.
fn read_files(state: AppState, files: web_sys::FileList, error: RwSignal<Option<String>>) {
    let list: Vec<web_sys::File> = (0..files.length()).filter_map(|i| files.get(i)).collect();
    let Some(first) = list.first().cloned() else { return };
    let traces = list.len() > 1 || first.name().to_ascii_lowercase().ends_with(".gz");
    if !traces {
        // One file: a schedule, unless its content says trace (read_file decides).
        read_file(state, first, error);
        return;
    }
    read_trace_files(state, list, error);
}

fn read_trace_files(state: AppState, list: Vec<web_sys::File>, error: RwSignal<Option<String>>) {
    if let Some(big) = list.iter().find(|f| f.size() > MAX_TRACE_FILE_BYTES) {
        error.set(Some(format!(
            "{} has {} bytes, more than the {} the playground reads from a trace file\nhint: read the run with the CLI and open its JSON: bubblescope convert DIR run.json",
            formats::sanitize(&big.name()),
            big.size(),
            MAX_TRACE_FILE_BYTES
        )));
        return;
    }
    error.set(None);
    leptos::task::spawn_local(async move {
        let mut files = Vec::new();
        for file in list {
            match wasm_bindgen_futures::JsFuture::from(file.array_buffer()).await {
                Ok(buffer) => files.push((file.name(), js_sys::Uint8Array::new(&buffer).to_vec())),
                Err(_) => {
                    error.set(Some(format!("cannot read {}", formats::sanitize(&file.name()))));
                    return;
                }
            }
        }
        open_files(state, files, error);
    });
}

/// Shows `loaded` instead of the families, zoomed out.
fn open(state: AppState, loaded: LoadedFile) {
    state.view.update(|v| {
        v.range = None;
        v.highlight = None;
    });
    state.file.set(Some(loaded));
}

fn read_file(state: AppState, file: web_sys::File, error: RwSignal<Option<String>>) {
    let name = file.name();
    let size = file.size();
    if size > formats::MAX_FILE_BYTES as f64 {
        error.set(Some(format!(
            "{} has {size} bytes, more than the {} an import reads\nhint: cut the schedule into smaller files",
            formats::sanitize(&name),
            formats::MAX_FILE_BYTES
        )));
        return;
    }
    error.set(None);
    leptos::task::spawn_local(async move {
        match wasm_bindgen_futures::JsFuture::from(file.array_buffer()).await {
            Ok(buffer) => open_files(state, vec![(name, js_sys::Uint8Array::new(&buffer).to_vec())], error),
            Err(_) => error.set(Some(format!("cannot read {}", formats::sanitize(&name)))),
        }
    });
}

/// The import panel: a drop zone with a file picker, and the open file's messages.
#[component]
pub fn ImportPanel() -> impl IntoView {
    let state = expect_context::<AppState>();
    let error = RwSignal::new(None::<String>);
    let dragging = RwSignal::new(false);
    let on_pick = move |ev: web_sys::Event| {
        let input = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok());
        if let Some(files) = input.as_ref().and_then(|i| i.files()) {
            read_files(state, files, error);
        }
        if let Some(i) = input {
            i.set_value("");
        }
    };
    let on_drop = move |ev: web_sys::DragEvent| {
        ev.prevent_default();
        dragging.set(false);
        if let Some(files) = ev.data_transfer().and_then(|d| d.files()) {
            read_files(state, files, error);
        }
    };
    let open = move || state.file.get();
    view! {
        <section class="panel">
            <h2 class="panel-title">"Import a schedule"</h2>
            <label
                class="dropzone"
                class:dragging=move || dragging.get()
                on:dragover=move |ev: web_sys::DragEvent| { ev.prevent_default(); dragging.set(true); }
                on:dragleave=move |_| dragging.set(false)
                on:drop=on_drop
            >
                <input type="file" multiple class="sr-only" accept=".csv,.json,.gz,text/csv,application/json,application/gzip" data-testid="import-file" on:change=on_pick/>
                <span class="dropzone-main">"Drop files or click to open"</span>
                <span class="help">"PyTorch schedule CSV (either dialect, with or without SEND/RECV), Bubblescope JSON, or a measured run: every rank's profiler trace (.json or .json.gz) at once"</span>
            </label>
            <Show when=move || error.get().is_some()>
                <p class="field-error" role="alert" data-testid="error-message">{move || error.get()}</p>
            </Show>
            {move || open().map(|f| {
                let errors = f.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
                let warnings = f.diagnostics.len() - errors;
                view! {
                    <div class="file-card" data-testid="import-status">
                        <div class="file-head">
                            <span class="file-name">{f.name.clone()}</span>
                            <button type="button" class="button ghost small" data-testid="close-file"
                                on:click=move |_| state.file.set(None)>"Back to families"</button>
                        </div>
                        <p class="help">
                            {match (errors, warnings) {
                                (0, 0) => "valid: no problems found".to_string(),
                                (0, w) => format!("valid, {w} warning{}", if w == 1 { "" } else { "s" }),
                                (e, _) => format!("{e} error{} — showing what can be shown", if e == 1 { "" } else { "s" }),
                            }}
                        </p>
                        <Diagnostics list=f.diagnostics.clone()/>
                        {f.measured.clone().map(|run| view! { <super::measured::MeasuredCard run=run/> })}
                    </div>
                }
            })}
        </section>
    }
}

/// A file's diagnostics, like a compiler's.
#[component]
fn Diagnostics(list: Vec<Diagnostic>) -> impl IntoView {
    let shown = list.len().min(40);
    let more = list.len() - shown;
    view! {
        <ul class="diagnostics" data-testid="import-diagnostics">
            {list.into_iter().take(shown).map(|d| {
                let class = if d.severity == Severity::Error { "diag error" } else { "diag warn" };
                view! { <li class=class><pre>{d.to_string()}</pre></li> }
            }).collect_view()}
            {(more > 0).then(|| view! { <li class="diag"><pre>{format!("and {more} more")}</pre></li> })}
        </ul>
    }
}
