//! The header: title, presets, theme, sharing and export.

use bubblescope::permalink::Permalink;
use bubblescope::presets::{preset, presets};
use leptos::prelude::*;
use wasm_bindgen::JsCast as _;

use crate::state::{AppState, ThemeChoice};
use crate::url::url_for;

use super::export::ExportMenu;

/// The top bar.
#[component]
pub fn Header() -> impl IntoView {
    let state = expect_context::<AppState>();
    let apply_preset = move |key: String| {
        let Some(p) = preset(&key) else { return };
        state.update(|l| {
            let extra = std::mem::take(&mut l.extra);
            *l = Permalink {
                schedule: p.schedule.to_string(),
                params: p.params.clone(),
                compare: p.compare.iter().map(|s| s.to_string()).collect(),
                model: Default::default(),
                trade: Default::default(),
                step: Default::default(),
                extra,
            };
        });
    };
    let toggle_theme = move |_| {
        let next = match state.theme.get_untracked() {
            ThemeChoice::Light => ThemeChoice::Dark,
            ThemeChoice::Dark => ThemeChoice::Light,
        };
        state.set_theme(next);
    };
    view! {
        <header class="header">
            <a class="brand" href="?" aria-label="Bubblescope home">
                <svg class="logo" viewBox="0 0 32 32" aria-hidden="true">
                    <rect x="2" y="6" width="11" height="7" rx="2" fill="#3b82f6"/>
                    <rect x="15" y="6" width="15" height="7" rx="2" fill="#f59e0b"/>
                    <rect x="8" y="19" width="11" height="7" rx="2" fill="#14b8a6"/>
                    <rect x="21" y="19" width="9" height="7" rx="2" fill="#84cc16"/>
                </svg>
                <span class="brand-name">"Bubblescope"</span>
                <span class="brand-tag">"pipeline parallelism, exact"</span>
            </a>
            <div class="header-actions">
                <label class="sr-only" for="preset">"Presets"</label>
                <select id="preset" class="select compact" data-testid="preset-select" prop:value=""
                    on:change=move |ev| {
                        apply_preset(event_target_value(&ev));
                        if let Some(el) = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlSelectElement>().ok()) {
                            el.set_value("");
                        }
                    }>
                    <option value="">"Presets: published setups…"</option>
                    {presets().into_iter().map(|p| view! { <option value=p.key title=p.source>{p.title}</option> }).collect_view()}
                </select>
                <CopyLink/>
                <ExportMenu/>
                <button type="button" class="icon-button" data-testid="theme-toggle"
                    aria-label=move || if state.theme.get() == ThemeChoice::Dark { "Switch to the light theme" } else { "Switch to the dark theme" }
                    title="Light / dark"
                    on:click=toggle_theme>
                    {move || if state.theme.get() == ThemeChoice::Dark { "☀" } else { "☾" }}
                </button>
            </div>
        </header>
    }
}

/// Copies the permalink of the current settings.
#[component]
pub fn CopyLink() -> impl IntoView {
    let state = expect_context::<AppState>();
    let copied = RwSignal::new(false);
    let url = move || url_for(&state.link.get());
    view! {
        <button type="button" class="button" data-testid="copy-link" title="Copy a link to exactly these settings"
            on:click=move |_| {
                let text = url();
                if let Some(w) = web_sys::window() {
                    let _ = w.navigator().clipboard().write_text(&text);
                }
                copied.set(true);
                set_timeout(move || copied.set(false), std::time::Duration::from_millis(1800));
            }>
            {move || if copied.get() { "Link copied ✓" } else { "Copy link" }}
        </button>
        <input type="hidden" data-testid="permalink" prop:value=url />
    }
}
