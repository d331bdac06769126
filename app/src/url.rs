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

/// The URL keys the page reads itself (view settings, kept in the link's extras): any other
/// key a link has is one no one reads, and the page says so.
pub const VIEW_KEYS: &[&str] = &[
    crate::state::THEME_KEY,
    crate::state::ZOOM_KEY,
    crate::state::MEASURE_KEY,
    crate::causes::CAUSES_KEY,
    crate::compare::VIEW_KEY,
    "embed",
    crate::state::EXPLAIN_KEY,
    bubblescope::lessons::LESSON_KEY,
    bubblescope::lessons::LESSON_STEP_KEY,
    "loop",
    "memory",
    "play",
    "speed",
    "stats",
    "t",
];

/// Reads the settings from the page's query string: what did not parse, and every key
/// neither the settings nor the page's view read, with the keys most likely meant.
pub fn read_location() -> (Permalink, Vec<String>) {
    let search = web_sys::window().and_then(|w| w.location().search().ok()).unwrap_or_default();
    read_query(&search)
}

/// [`read_location`] on a query string.
pub fn read_query(search: &str) -> (Permalink, Vec<String>) {
    let (link, mut warnings) = permalink::parse(search);
    warnings.extend(permalink::unknown_keys(&link, VIEW_KEYS));
    (link, warnings)
}

/// A link with a lesson shows the lesson's step: its settings replace the link's (the view keys
/// stay). A lesson that does not read is left for the lesson bar to explain.
pub fn lesson_step(link: Permalink, mut warnings: Vec<String>) -> (Permalink, Vec<String>) {
    use bubblescope::lessons::{step_of, Lesson, LESSON_KEY};
    let Some(Ok(lesson)) = link.extra(LESSON_KEY).map(Lesson::parse) else { return (link, warnings) };
    match lesson.link_for(step_of(&link, lesson.steps.len()), &link) {
        Some((stepped, more)) => {
            warnings.extend(more);
            (stepped, warnings)
        }
        None => (link, warnings),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 43 item 16: `?p=8&microbatch=16` ran the defaults without a word.
    #[test]
    fn keys_no_one_reads_are_named_and_the_pages_own_are_not() {
        let (link, warnings) = read_query("?p=8&microbatch=16");
        assert_eq!(link.params.devices, 4, "the defaults run");
        assert_eq!(
            warnings,
            [
                "ignored p=8: no such key; did you mean devices?",
                "ignored microbatch=16: no such key; did you mean microbatches or micro-batch?",
            ]
        );
        let views =
            "theme=dark&zoom=0,5&measure=paper&causes=1&view=all&embed=1&loop=1&memory=0&play=1&speed=2&stats=0&t=3";
        let (_, warnings) = read_query(views);
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    /// Every key the page reads from a link's extras (`extra("…")` in its sources, or a
    /// `*_KEY` constant) is in [`VIEW_KEYS`], so no key the page uses is warned about.
    #[test]
    fn every_key_the_page_reads_is_a_view_key() {
        fn sources(dir: &std::path::Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).expect("app/src") {
                let path = entry.expect("an entry").path();
                if path.is_dir() {
                    sources(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(std::fs::read_to_string(&path).expect("a source"));
                }
            }
        }
        let mut texts = Vec::new();
        sources(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut texts);
        let mut read = Vec::new();
        for text in &texts {
            for (i, _) in text.match_indices("extra(\"") {
                let rest = &text[i + 7..];
                read.extend(rest.split('"').next().map(str::to_string));
            }
            for line in
                text.lines().filter(|l| l.trim_start().starts_with("pub const ") && l.contains("_KEY: &str = \""))
            {
                read.extend(line.split('"').nth(1).map(str::to_string));
            }
        }
        // Keys are lowercase words (this test's own `extra("…")` in prose is none).
        read.retain(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
        assert!(read.len() >= 10, "found the keys: {read:?}");
        for key in read {
            assert!(VIEW_KEYS.contains(&key.as_str()), "`{key}` is read by the page but not in VIEW_KEYS");
        }
    }
}
