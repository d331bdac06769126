//! `?embed=1`: only the chart first (and the key numbers on one line below it with `stats=1`),
//! sized to its iframe: rows shrink to fit its height.

use leptos::prelude::*;

use super::{ChartCard, ErrorBanner, LessonBar, StatTiles};
use crate::state::AppState;
use crate::url::url_for;

/// The embedded view.
#[component]
pub fn EmbedView() -> impl IntoView {
    let state = expect_context::<AppState>();
    let with_stats = state.link.with_untracked(|l| l.extra("stats") == Some("1"));
    let full = move || {
        let mut link = state.link.get();
        link.set_extra("embed", None);
        link.set_extra("stats", None);
        link.set_extra(bubblescope::lessons::LESSON_KEY, None);
        link.set_extra(bubblescope::lessons::LESSON_STEP_KEY, None);
        url_for(&link)
    };
    view! {
        <div class="embed" data-testid="embed">
            <ErrorBanner/>
            <LessonBar compact=true/>
            <ChartCard compact=true/>
            <div class="embed-foot">
                {with_stats.then(|| view! { <StatTiles/> })}
                <a class="embed-credit" href=full target="_blank" rel="noopener">"Open in Bubblescope ↗"</a>
            </div>
        </div>
    }
}
