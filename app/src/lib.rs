//! The Bubblescope playground: live pipeline schedules in the browser.
//!
//! State lives in [`state::AppState`] (the settings are a permalink); components read it from
//! context. Every number and picture comes from the `bubblescope` core.

pub mod balance;
pub mod canvas;
pub mod causes;
pub mod compare;
pub mod components;
pub mod engine;
pub mod fit;
pub mod state;
pub mod url;
pub mod wire;
#[cfg(feature = "engine")]
pub mod work;

use leptos::prelude::*;

use components::{
    AttributionBar, BottleneckVerdict, ChartCard, CompareAllCard, CompareTable, DerivedTable, DeviceTable, EmbedView,
    ErrorBanner, ExplainCard, Header, Later, LessonBar, LessonCard, SettingsPanel, StatTiles, StepTiles,
};
use state::AppState;

/// The whole page. Reads its settings from the URL.
#[component]
pub fn App() -> impl IntoView {
    let (link, warnings) = url::read_location();
    // A lesson in the link shows its step's settings.
    let (link, warnings) = url::lesson_step(link, warnings);
    let embed = link.extra("embed") == Some("1");
    let state = AppState::new(link, warnings, embed);
    // Every change of the settings or the file is computed, on the page or in the worker.
    engine::run(state);
    provide_context(state);
    url::sync(state);
    components::follow_system_theme(state);

    // The theme follows the state on the root element, for the CSS.
    Effect::new(move |_| {
        let name = state.theme.get().name();
        if let Some(root) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.document_element()) {
            let _ = root.set_attribute("data-theme", name);
        }
    });

    if embed {
        return view! { <EmbedView/> }.into_any();
    }
    components::show_rest_at_the_latest(state);
    view! {
        <div class="app" data-computations=move || state.outcome.with(|o| o.id.to_string())>
            <Header/>
            // The chart comes first in the page: phones show it (and the headline stats) before
            // the settings; wide screens place the settings on the left (style/main.css).
            <div class="layout">
                <main class="content">
                    <ErrorBanner/>
                    <StatTiles/>
                    <StepTiles/>
                    <BottleneckVerdict/>
                    <AttributionBar/>
                    <CompareAllCard/>
                    <LessonBar/>
                    <ChartCard/>
                    // Below the first screen: built once the chart is painted.
                    <Later>
                        <ExplainCard/>
                        <LessonCard/>
                        <CompareTable/>
                        <DerivedTable/>
                        <DeviceTable/>
                    </Later>
                </main>
                <SettingsPanel/>
            </div>
            <footer class="footer">
                "Bubblescope simulates pipeline schedules exactly in your browser; nothing leaves this page. "
                "Cost is the longest device span (the Zero Bubble papers' definition); the bubble rate is (cost − ideal) / cost with ideal the mean device's work: the share of GPU time idle, the papers' rate whenever stages are equal."
            </footer>
        </div>
    }
    .into_any()
}
