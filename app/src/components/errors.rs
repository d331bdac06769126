//! The banner for errors that belong to no single control (deadlocks, invalid schedules) and
//! for problems found in the URL.

use leptos::prelude::*;

use crate::state::AppState;

/// Shows what is wrong with the current settings, above the chart.
#[component]
pub fn ErrorBanner() -> impl IntoView {
    let state = expect_context::<AppState>();
    let problems = move || {
        state.outcome.with(|o| {
            let mut out: Vec<(String, String)> = Vec::new();
            if o.is_waiting() {
                return out;
            }
            if let Err(e) = &o.main.result {
                let head = match e.field {
                    Some(f) => format!("{} cannot run with these settings (see {}):", o.main.label, f.name()),
                    None => format!("{} cannot run:", o.main.label),
                };
                out.push((head, e.message.clone()));
            }
            for c in &o.compare {
                if let Err(e) = &c.result {
                    out.push((format!("{} (compared) cannot run:", c.label), e.message.clone()));
                }
            }
            out
        })
    };
    let warnings = move || state.url_warnings.get();
    view! {
        <Show when=move || !problems().is_empty()>
            <div class="banner error" role="alert" data-testid="error-message">
                {move || problems().into_iter().map(|(head, body)| view! {
                    <p class="banner-head">{head}</p>
                    <pre class="banner-body">{body}</pre>
                }).collect_view()}
            </div>
        </Show>
        <Show when=move || !warnings().is_empty()>
            <div class="banner warn" role="status" data-testid="url-warnings">
                <p class="banner-head">"Some settings in the link were not understood and kept their defaults:"</p>
                <ul>{move || warnings().into_iter().map(|w| view! { <li>{w}</li> }).collect_view()}</ul>
                <button type="button" class="button ghost small" on:click=move |_| state.url_warnings.set(Vec::new())>"Dismiss"</button>
            </div>
        </Show>
    }
}
