//! Permalinks in the address bar: every settings change updates the URL query, a gesture (a
//! drag, a burst of typing) makes one history entry, and back/forward restore the settings.
//!
//! The first change of a gesture pushes a history entry at once; the rest of the gesture
//! updates that entry at most every [`WRITE_DELAY_MS`]: `history.replaceState` is a
//! synchronous call into the browser that would otherwise cost milliseconds on every slider
//! step.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use bubblescope::permalink::{self, Permalink};
use leptos::prelude::*;
use wasm_bindgen::JsValue;

use crate::state::{now_ms, AppState};

/// How long the address bar lags behind the settings.
pub const WRITE_DELAY_MS: u64 = 150;
/// Changes closer together than this belong to one gesture and one history entry.
const GESTURE_GAP_MS: f64 = 800.0;

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

/// What the address bar shows and what is waiting to be written.
#[derive(Default)]
struct Bar {
    /// The query in the address bar.
    shown: String,
    /// The query to write next (replacing the current entry).
    pending: Option<String>,
    /// When the settings last changed.
    last_change: f64,
}

/// Keeps the address bar and the settings in step.
pub fn sync(state: AppState) {
    let bar = Rc::new(RefCell::new(Bar { shown: permalink::to_query(&state.link.get_untracked()), ..Bar::default() }));
    let restoring = Rc::new(Cell::new(false));
    // The opening URL becomes canonical (same keys, fixed order) without a new entry.
    write(&bar.borrow().shown, false);

    {
        let bar = bar.clone();
        let restoring = restoring.clone();
        Effect::new(move |_| {
            let query = permalink::to_query(&state.link.get());
            let now = now_ms();
            let mut b = bar.borrow_mut();
            if restoring.replace(false) {
                // Back/forward already moved the address bar.
                b.shown = query;
                b.pending = None;
                b.last_change = now;
                return;
            }
            if query == b.shown && b.pending.is_none() {
                return;
            }
            let gesture_start = now - b.last_change > GESTURE_GAP_MS;
            b.last_change = now;
            if gesture_start && b.pending.is_none() {
                // A new gesture gets its own history entry, right away, so back works at once.
                write(&query, true);
                b.shown = query;
                return;
            }
            // Within a gesture, the entry follows the settings, at most every WRITE_DELAY_MS.
            let scheduled = b.pending.is_some();
            b.pending = Some(query);
            drop(b);
            if !scheduled {
                let bar = bar.clone();
                set_timeout(
                    move || {
                        let mut b = bar.borrow_mut();
                        if let Some(query) = b.pending.take() {
                            if query != b.shown {
                                write(&query, false);
                                b.shown = query;
                            }
                        }
                    },
                    Duration::from_millis(WRITE_DELAY_MS),
                );
            }
        });
    }

    let handle = window_event_listener(leptos::ev::popstate, move |_| {
        // The browser moved the address bar: drop a write that would overwrite it.
        bar.borrow_mut().pending = None;
        let (link, warnings) = read_location();
        state.url_warnings.set(warnings);
        if state.link.with_untracked(|l| *l != link) {
            restoring.set(true);
            let zoom = crate::state::zoom_of(&link);
            state.link.set(link);
            state.view.update(|v| v.range = zoom);
        }
    });
    // The listener lives as long as the page.
    std::mem::forget(handle);
}

fn write(query: &str, push: bool) {
    let Some(history) = web_sys::window().and_then(|w| w.history().ok()) else { return };
    let url = format!("?{query}");
    let _ = if push {
        history.push_state_with_url(&JsValue::NULL, "", Some(&url))
    } else {
        history.replace_state_with_url(&JsValue::NULL, "", Some(&url))
    };
}
