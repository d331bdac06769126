//! Fitting every screen: the settings panel that collapses below the chart on phones, the
//! system colour scheme, and text that must not break inside command-line flags.

use leptos::prelude::*;

use super::Controls;

/// The settings: beside the chart on wide screens; on phones and narrow windows below the
/// chart and the headline stats, behind a toggle (closed at first, so a shared link opens on
/// the picture).
#[component]
pub fn SettingsPanel() -> impl IntoView {
    let open = RwSignal::new(false);
    view! {
        <aside class="sidebar" class:open=move || open.get() aria-label="Schedule settings">
            <button type="button" class="button wide settings-toggle" data-testid="settings-toggle"
                aria-controls="settings-body" aria-expanded=move || open.get().to_string()
                on:click=move |_| open.update(|o| *o = !*o)>
                {move || if open.get() { "Hide settings ▴" } else { "Schedule settings ▾" }}
            </button>
            <div class="sidebar-body" id="settings-body">
                <Controls/>
            </div>
        </aside>
    }
}

/// Whether the system asks for a dark colour scheme (`prefers-color-scheme: dark`).
pub fn prefers_dark() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .is_some_and(|m| m.matches())
}

/// Follows changes of the system's colour scheme while the link has no `theme=` override.
pub fn follow_system_theme(state: crate::state::AppState) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast as _;

    use crate::state::ThemeChoice;
    let Some(query) = web_sys::window().and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
    else {
        return;
    };
    let on_change = Closure::<dyn FnMut(web_sys::Event)>::new(move |_: web_sys::Event| {
        if state.link.with_untracked(|l| l.extra("theme").is_none()) {
            state.theme.set(if prefers_dark() { ThemeChoice::Dark } else { ThemeChoice::Light });
        }
    });
    let _ = query.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
    // The listener lives as long as the page.
    on_change.forget();
}

/// `text` split into plain runs and command-line flags (`--mem-limit`), in order; flags are
/// `true`.
pub fn split_flags(text: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("--") {
        let end =
            rest[i + 2..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).map_or(rest.len(), |j| i + 2 + j);
        if i > 0 {
            out.push((&rest[..i], false));
        }
        out.push((&rest[i..end], true));
        rest = &rest[end..];
    }
    if !rest.is_empty() {
        out.push((rest, false));
    }
    out
}

/// Text whose command-line flags never break across lines.
#[component]
pub fn FlagText(text: &'static str) -> impl IntoView {
    split_flags(text)
        .into_iter()
        .map(|(run, flag)| if flag { view! { <span class="nowrap">{run}</span> }.into_any() } else { run.into_any() })
        .collect_view()
}
