//! Opening a schedule file: drop or pick a PyTorch CSV or Bubblescope JSON, see it with its
//! validation messages.

use std::sync::Arc;

use bubblescope::formats::{self, Format, ImportOptions};
use bubblescope::{Diagnostic, Severity};
use leptos::prelude::*;
use wasm_bindgen::JsCast as _;

use crate::state::{AppState, LoadedFile};

/// Reads `text` named `name` as a schedule file; also returns the costs a JSON file stores.
pub fn load(name: &str, text: &str) -> (LoadedFile, Option<bubblescope::Costs>) {
    let name = formats::sanitize(name);
    // The name, else the content; a file that tells neither is read as CSV, whose errors say why.
    let format = formats::detect(&name, text, None).unwrap_or(Format::PytorchCsv);
    let imported =
        formats::import(text, format, &ImportOptions { dialect: None, merge_bw: false, source: Some(name.clone()) });
    let file = LoadedFile { name, schedule: imported.schedule.map(Arc::new), diagnostics: imported.diagnostics };
    (file, imported.costs)
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
        match wasm_bindgen_futures::JsFuture::from(file.text()).await {
            Ok(text) => {
                let text = text.as_string().unwrap_or_default();
                let (loaded, costs) = load(&name, &text);
                // Costs stored in a JSON file become the settings, so the sliders show them.
                if let Some(costs) = costs {
                    state.link.update(|l| l.params.costs = costs);
                }
                state.view.update(|v| {
                    v.range = None;
                    v.highlight = None;
                });
                state.file.set(Some(loaded));
            }
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
        if let Some(file) = input.as_ref().and_then(|i| i.files()).and_then(|f| f.get(0)) {
            read_file(state, file, error);
        }
        if let Some(i) = input {
            i.set_value("");
        }
    };
    let on_drop = move |ev: web_sys::DragEvent| {
        ev.prevent_default();
        dragging.set(false);
        if let Some(file) = ev.data_transfer().and_then(|d| d.files()).and_then(|f| f.get(0)) {
            read_file(state, file, error);
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
                <input type="file" class="sr-only" accept=".csv,.json,text/csv,application/json" data-testid="import-file" on:change=on_pick/>
                <span class="dropzone-main">"Drop a file or click to open"</span>
                <span class="help">"PyTorch schedule CSV (either dialect, with or without SEND/RECV) or Bubblescope JSON"</span>
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
