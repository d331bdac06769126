//! The progress bar of a background computation, and the note when there is no background.

use std::time::Duration;

use leptos::prelude::*;

use crate::state::{now_ms, AppState};

/// A computation shows its progress once it has taken this long.
pub const SHOW_AFTER_MS: f64 = 100.0;

/// An indeterminate progress bar with the elapsed time, over the chart (which keeps the last
/// result) while the worker computes for more than [`SHOW_AFTER_MS`].
#[component]
pub fn Progress() -> impl IntoView {
    let state = expect_context::<AppState>();
    let now = RwSignal::new(now_ms());
    // A clock that ticks only while something is computing.
    Effect::new(move |previous: Option<Option<IntervalHandle>>| {
        if let Some(Some(handle)) = previous {
            handle.clear();
        }
        state.pending.get()?;
        now.set(now_ms());
        set_interval_with_handle(move || now.set(now_ms()), Duration::from_millis(50)).ok()
    });
    let elapsed = move || state.pending.get().map(|start| now.get() - start).filter(|ms| *ms >= SHOW_AFTER_MS);
    view! {
        <Show when=move || elapsed().is_some()>
            <div class="progress" data-testid="progress" role="status" aria-live="polite">
                <div class="progress-track" role="progressbar" aria-label="Computing the schedule"><div class="progress-bar"></div></div>
                <span class="progress-text">
                    {move || format!("Computing in the background · {:.1} s", elapsed().unwrap_or(0.0) / 1000.0)}
                </span>
            </div>
        </Show>
    }
}

/// Says that every computation runs on the page, when the worker could not start.
#[component]
pub fn EngineNote() -> impl IntoView {
    let state = expect_context::<AppState>();
    view! {
        <Show when=move || state.engine_note.with(Option::is_some)>
            <p class="engine-note" role="status" data-testid="engine-note">{move || state.engine_note.get()}</p>
        </Show>
    }
}
