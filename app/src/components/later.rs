//! Parts of the page built after the first chart: what lies below the first screen (the
//! tables under the chart, the lower settings) would otherwise be built, laid out and styled
//! before the chart is drawn. Uses the app state only.

use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use crate::state::AppState;

/// How long the rest of the page waits for a first chart that does not come (an error, a file
/// still opening) before it is built anyway, in milliseconds.
const AT_THE_LATEST_MS: i32 = 400;

/// Its children, once the rest of the page is shown ([`show_rest`]).
#[component]
pub fn Later(children: ChildrenFn) -> impl IntoView {
    let state = expect_context::<AppState>();
    view! { <Show when=move || state.rest_shown.get()>{children()}</Show> }
}

/// Builds the rest of the page after the next paint: a frame, then a task, so the chart that
/// asked is on the screen first. Only the first call does anything.
pub fn show_rest(state: AppState) {
    if state.rest_shown.get_untracked() {
        return;
    }
    let Some(window) = web_sys::window() else {
        state.rest_shown.set(true);
        return;
    };
    let after_paint = Closure::once_into_js(move || {
        let show = Closure::once_into_js(move || {
            if state.rest_shown.try_get_untracked() == Some(false) {
                state.rest_shown.set(true);
            }
        });
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(show.unchecked_ref(), 0);
        }
    });
    let _ = window.request_animation_frame(after_paint.unchecked_ref());
}

/// Shows the rest of the page after [`AT_THE_LATEST_MS`] whatever happens.
pub fn show_rest_at_the_latest(state: AppState) {
    let show = Closure::once_into_js(move || {
        if state.rest_shown.try_get_untracked() == Some(false) {
            state.rest_shown.set(true);
        }
    });
    if let Some(w) = web_sys::window() {
        let _ = w.set_timeout_with_callback_and_timeout_and_arguments_1(
            show.unchecked_ref(),
            AT_THE_LATEST_MS,
            &wasm_bindgen::JsValue::NULL,
        );
    }
}
