//! Fitting every screen: the system colour scheme, and text that must not break inside
//! command-line flags.

use leptos::prelude::*;

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
            state.theme.set(if crate::state::prefers_dark() { ThemeChoice::Dark } else { ThemeChoice::Light });
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
