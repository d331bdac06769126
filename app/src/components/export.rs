//! Export: SVG (the CLI's `render`, byte for byte), PNG, and the embed snippet.

use bubblescope::render::{figure_animated_svg, figure_svg, AnimateOptions, FigureItem, FigureOptions};
use leptos::prelude::*;
use wasm_bindgen::JsCast as _;

use crate::state::AppState;
use crate::url::url_for;
use crate::wire::{self, kind, ExportAsk};

/// The schedule-data exports: the `export_data` format (also the `export-…` test id), the
/// menu label and a note.
const DATA_FORMATS: [(&str, &str, &str); 5] = [
    ("json", "Bubblescope JSON", "orders, placement, costs"),
    ("csv", "PyTorch schedule CSV", "compute only, for _PipelineScheduleRuntime._load_csv"),
    ("csv-comms", "PyTorch CSV with communication", "compute_comms, torch 2.15"),
    ("csv-comms-2.14", "PyTorch CSV with communication", "compute_comms, torch 2.14"),
    ("perfetto", "Perfetto trace", "open in ui.perfetto.dev"),
];

/// Offers a file for download.
pub fn download(filename: &str, mime: &str, content: &str) -> Result<(), String> {
    let window = web_sys::window().ok_or("no window")?;
    let document = window.document().ok_or("no document")?;
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(content));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let blob =
        web_sys::Blob::new_with_str_sequence_and_options(&parts, &options).map_err(|_| "cannot create the file")?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(|_| "cannot create a download link")?;
    download_url(&document, filename, &url)?;
    let _ = web_sys::Url::revoke_object_url(&url);
    Ok(())
}

fn download_url(document: &web_sys::Document, filename: &str, url: &str) -> Result<(), String> {
    let a: web_sys::HtmlAnchorElement =
        document.create_element("a").map_err(|_| "cannot create a link")?.unchecked_into();
    a.set_href(url);
    a.set_download(filename);
    a.click();
    Ok(())
}

/// The SVG figure of the current settings: what `bubblescope render` writes for the same
/// flags (`--compare` for the stacked schedules, `--memory` when asked, `--theme`, `--causes`
/// with the "Bubble causes" view on).
pub fn current_svg(state: AppState, memory: bool) -> Option<String> {
    with_figure(state, memory, figure_svg)
}

/// The animated SVG figure of the current settings, with its memory chart, looping: what
/// `bubblescope render --memory --animate --loop` writes.
pub fn current_animated_svg(state: AppState) -> Option<String> {
    let anim = AnimateOptions { looping: true, ..AnimateOptions::default() };
    with_figure(state, true, |items, opts| figure_animated_svg(items, opts, &anim))
}

/// Draws the current schedules with `draw`, under the current figure options.
fn with_figure(
    state: AppState,
    memory: bool,
    draw: impl FnOnce(&[FigureItem<'_>], &FigureOptions) -> String,
) -> Option<String> {
    let o = state.outcome.get_untracked();
    // With the "Bubble causes" view on, the figure shades gaps as `render --causes` does.
    let shade = state.link.with_untracked(|l| l.extra(crate::causes::CAUSES_KEY) == Some("1"));
    let mut analyses = Vec::new();
    let mut causes = Vec::new();
    let mut steps = Vec::new();
    for c in std::iter::once(&o.main).chain(o.compare.iter()) {
        if let Ok(a) = &c.result {
            analyses.push((c.label.clone(), a.clone()));
            causes.push(c.extras.as_ref().and_then(|e| e.causes.clone()).filter(|_| shade));
            steps.push(c.step.as_ref().and_then(|s| s.as_ref().ok()).cloned());
        }
    }
    if analyses.is_empty() {
        return None;
    }
    let items: Vec<FigureItem<'_>> = analyses
        .iter()
        .zip(&causes)
        .zip(&steps)
        .map(|(((label, a), c), step)| FigureItem { label, analysis: a, causes: c.as_deref(), step: step.as_ref() })
        .collect();
    let opts = FigureOptions {
        memory,
        causes: shade,
        mem_limit: o.params.mem_limit,
        theme: state.theme.get_untracked().theme(),
        units: state.units_untracked(),
        ..FigureOptions::default()
    };
    Some(draw(&items, &opts))
}

/// Writes the main schedule in a data format (the engine writes it) and offers it for
/// download; says in `message` why not.
fn export_data(state: AppState, format: &str, message: RwSignal<Option<String>>) {
    let o = state.outcome.get_untracked();
    let Ok(analysis) = o.main.result.clone() else {
        message.set(Some("nothing to export: the settings are invalid".to_string()));
        return;
    };
    let stem = file_stem(state);
    let ask = ExportAsk { format: format.to_string(), analysis, costs: o.params.costs.clone() };
    crate::engine::ask(state, kind::EXPORT, wire::encode_export(&ask), move |answer| {
        let written = wire::decode_exported(&answer)
            .map_err(|e| format!("the engine's answer could not be read: {e}"))
            .and_then(|r| r);
        message.set(written.and_then(|f| download(&format!("{stem}{}", f.suffix), &f.mime, &f.text)).err());
    });
}

fn file_stem(state: AppState) -> String {
    if let Some(f) = state.file.get_untracked() {
        let stem = f.name.rsplit_once('.').map_or(f.name.as_str(), |(s, _)| s).to_string();
        return stem.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
    }
    state.link.with_untracked(|l| format!("{}-p{}-m{}", l.schedule, l.params.devices, l.params.microbatches))
}

/// The export dropdown.
#[component]
pub fn ExportMenu() -> impl IntoView {
    let state = expect_context::<AppState>();
    let message = RwSignal::new(None::<String>);
    let snippet = move || {
        let mut link = state.link.get();
        link.set_extra("embed", Some("1".to_string()));
        // A lesson's bar above the chart: its controls and up to three lines of caption.
        let lesson = if link.extra(bubblescope::lessons::LESSON_KEY).is_some() { 80 } else { 0 };
        let height = super::chart::embed_frame_height(link.params.devices) + lesson;
        format!(
            "<iframe src=\"{}\" width=\"100%\" height=\"{height}\" style=\"border:0\" loading=\"lazy\" title=\"Pipeline schedule (Bubblescope)\"></iframe>",
            url_for(&link)
        )
    };
    let svg = move |memory: bool| match current_svg(state, memory) {
        Some(s) => {
            let name = format!("{}{}.svg", file_stem(state), if memory { "-memory" } else { "" });
            message.set(download(&name, "image/svg+xml", &s).err());
        }
        None => message.set(Some("nothing to export: the settings are invalid".into())),
    };
    let png = move |_| {
        let canvas = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.query_selector("canvas.gantt").ok().flatten())
            .and_then(|e| e.dyn_into::<web_sys::HtmlCanvasElement>().ok());
        let Some(canvas) = canvas else {
            message.set(Some("no chart to export".into()));
            return;
        };
        let name = format!("{}.png", file_stem(state));
        let done = wasm_bindgen::closure::Closure::once_into_js(move |blob: Option<web_sys::Blob>| {
            let result = blob.ok_or_else(|| "cannot encode the PNG".to_string()).and_then(|blob| {
                let url =
                    web_sys::Url::create_object_url_with_blob(&blob).map_err(|_| "cannot create a download link")?;
                let doc = web_sys::window().and_then(|w| w.document()).ok_or("no document")?;
                download_url(&doc, &name, &url)?;
                let _ = web_sys::Url::revoke_object_url(&url);
                Ok(())
            });
            message.set(result.err());
        });
        if canvas.to_blob(done.unchecked_ref()).is_err() {
            message.set(Some("cannot encode the PNG".into()));
        }
    };
    // Choosing an item closes the menu.
    let close = move |ev: web_sys::MouseEvent| {
        let details = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|e| e.closest("details").ok().flatten());
        if let Some(d) = details {
            let _ = d.remove_attribute("open");
        }
    };
    view! {
        <details class="menu">
            <summary class="button primary" data-testid="export-menu">"Export"</summary>
            <div class="menu-body" role="menu" on:click=move |ev| {
                let on_item = ev.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()).and_then(|e| e.closest(".menu-item").ok().flatten()).is_some();
                if on_item { close(ev); }
            }>
                <button type="button" role="menuitem" class="menu-item" data-testid="export-svg" on:click=move |_| svg(false)>
                    "SVG figure" <span class="muted">" same as bubblescope render"</span>
                </button>
                <button type="button" role="menuitem" class="menu-item" data-testid="export-svg-memory" on:click=move |_| svg(true)>
                    "SVG with memory chart" <span class="muted">" … --memory"</span>
                </button>
                <button type="button" role="menuitem" class="menu-item" data-testid="export-svg-animated" on:click=move |_| {
                    match current_animated_svg(state) {
                        Some(s) => message.set(download(&format!("{}-animated.svg", file_stem(state)), "image/svg+xml", &s).err()),
                        None => message.set(Some("nothing to export: the settings are invalid".into())),
                    }
                }>
                    "Animated SVG" <span class="muted">" fills and drains, loops; … --animate --loop"</span>
                </button>
                <button type="button" role="menuitem" class="menu-item" data-testid="export-png" on:click=png>
                    "PNG image" <span class="muted">" the chart as shown"</span>
                </button>
                <div class="menu-sep"></div>
                {DATA_FORMATS.iter().map(|&(format, label, note)| view! {
                    <button type="button" role="menuitem" class="menu-item" data-testid=format!("export-{format}")
                        on:click=move |_| export_data(state, format, message)>
                        {label} <span class="muted">{format!(" {note}")}</span>
                    </button>
                }).collect_view()}
                <div class="menu-sep"></div>
                <label class="menu-label" for="embed-snippet">"Embed in a page"</label>
                <textarea id="embed-snippet" class="snippet" readonly rows="4" data-testid="embed-snippet" prop:value=snippet
                    on:focus=move |ev| {
                        if let Some(t) = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlTextAreaElement>().ok()) { t.select(); }
                    }></textarea>
                <Show when=move || message.get().is_some()>
                    <p class="field-error" role="alert">{move || message.get()}</p>
                </Show>
            </div>
        </details>
    }
}
