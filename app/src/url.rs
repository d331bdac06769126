//! Permalinks in the address bar: every settings change updates the URL query, a drag makes
//! one history entry, and back/forward restore the settings.

use std::cell::Cell;
use std::rc::Rc;

use bubblescope::permalink::{self, Permalink};
use leptos::prelude::*;
use wasm_bindgen::JsValue;

use crate::state::AppState;

/// Reads the settings from the page's query string.
pub fn read_location() -> (Permalink, Vec<String>) {
    let search = web_sys::window().and_then(|w| w.location().search().ok()).unwrap_or_default();
    permalink::parse(&search)
}

/// The full URL for `link` (the current page with its query replaced).
pub fn url_for(link: &Permalink) -> String {
    let base = web_sys::window()
        .and_then(|w| {
            let l = w.location();
            Some(format!("{}{}", l.origin().ok()?, l.pathname().ok()?))
        })
        .unwrap_or_default();
    format!("{base}?{}", permalink::to_query(link))
}

/// Keeps the address bar and the settings in step.
pub fn sync(state: AppState) {
    let Some(window) = web_sys::window() else { return };
    let restoring = Rc::new(Cell::new(false));
    let last_push = Rc::new(Cell::new(f64::NEG_INFINITY));

    {
        let restoring = restoring.clone();
        Effect::new(move |prev: Option<String>| {
            let query = permalink::to_query(&state.link.get());
            if prev.as_deref() == Some(query.as_str()) {
                return query;
            }
            let Some(history) = web_sys::window().and_then(|w| w.history().ok()) else { return query };
            let url = format!("?{query}");
            if prev.is_none() || restoring.get() {
                restoring.set(false);
                let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
            } else {
                // One history entry per gesture: changes within 800 ms replace the entry.
                let now = crate::state::now_ms();
                if now - last_push.get() > 800.0 {
                    let _ = history.push_state_with_url(&JsValue::NULL, "", Some(&url));
                } else {
                    let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
                }
                last_push.set(now);
            }
            query
        });
    }

    let handle = window_event_listener(leptos::ev::popstate, move |_| {
        let (link, warnings) = read_location();
        restoring.set(true);
        state.url_warnings.set(warnings);
        state.update(|l| *l = link);
    });
    // The listener lives as long as the page.
    std::mem::forget(handle);
    let _ = window;
}
