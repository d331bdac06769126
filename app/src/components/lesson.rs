//! Lessons on the page: the bar that steps through a lesson in the link (in the playground and
//! in an embed), and the card where a teacher starts a built-in lesson or writes one by adding
//! the current view as a step. Uses the state and the URL helpers; lessons come from core.

use bubblescope::lessons::{self, Lesson, BUILT_IN, LESSON_KEY, LESSON_STEP_KEY};
use leptos::prelude::*;

use crate::state::{AppState, FocusSource};
use crate::url::url_for;

/// The lesson in the link, if any: read, or why not.
fn lesson_in(state: AppState) -> Option<Result<Lesson, String>> {
    state.link.with(|l| l.extra(LESSON_KEY).map(Lesson::parse))
}

/// Shows step `index` of `lesson`: its settings, this lesson and the step in the link.
pub fn show_step(state: AppState, lesson: &Lesson, index: usize) {
    let keep = state.link.get_untracked();
    if let Some((link, _)) = lesson.link_for(index, &keep) {
        state.focus.set(FocusSource::None);
        state.update(|l| *l = link);
    }
}

/// The lesson bar: the step's caption, where it is in the lesson, back and next (also with the
/// arrow keys). Nothing without a lesson in the link.
#[component]
pub fn LessonBar(
    /// Embedded: no way out of the lesson.
    #[prop(optional)]
    compact: bool,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    let lesson = Memo::new(move |_| lesson_in(state));
    let at = Memo::new(move |_| {
        let n = lesson.with(|l| l.as_ref().and_then(|l| l.as_ref().ok()).map_or(0, |l| l.steps.len()));
        state.link.with(|l| lessons::step_of(l, n))
    });
    let step = move |delta: isize| {
        let Some(Ok(l)) = lesson.get_untracked() else { return };
        let next = at.get_untracked().saturating_add_signed(delta).min(l.steps.len().saturating_sub(1));
        if next != at.get_untracked() {
            show_step(state, &l, next);
        }
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        match ev.key().as_str() {
            "ArrowRight" => step(1),
            "ArrowLeft" => step(-1),
            _ => return,
        }
        ev.prevent_default();
    };
    let leave = move |_| {
        state.link.update(|l| {
            l.set_extra(LESSON_KEY, None);
            l.set_extra(LESSON_STEP_KEY, None);
        });
    };
    let read = Memo::new(move |_| {
        lesson.with(|l| l.as_ref().map(|l| l.as_ref().map(|l| (l.title.clone(), l.steps.len())).map_err(Clone::clone)))
    });
    let caption = move || {
        let i = at.get();
        lesson
            .with(|l| l.as_ref().and_then(|l| l.as_ref().ok()).and_then(|l| l.steps.get(i)).map(|s| s.caption.clone()))
    };
    let count = move || read.with(|r| r.as_ref().and_then(|r| r.as_ref().ok()).map_or(0, |r| r.1));
    // The buttons stay put while the steps change (the keyboard focus stays on them): only the
    // texts and states follow the step.
    move || {
        Some(match read.get()? {
            Err(e) => view! {
                <div class="lesson-bar error" id="lesson-bar" data-testid="lesson-bar" role="alert">
                    <p class="field-error">{e}</p>
                </div>
            }
            .into_any(),
            Ok((title, _)) => view! {
                <div class="lesson-bar" id="lesson-bar" data-testid="lesson-bar" on:keydown=on_key
                    role="group" aria-label=format!("Lesson: {title}")>
                    <div class="lesson-head">
                        <button type="button" class="button small" data-testid="lesson-prev" aria-label="Previous step"
                            aria-disabled=move || (at.get() == 0).to_string() on:click=move |_| step(-1)>"‹"</button>
                        <span class="lesson-count" data-testid="lesson-count" aria-label=move || format!("step {} of {}", at.get() + 1, count())>
                            {move || format!("{} / {}", at.get() + 1, count())}</span>
                        <button type="button" class="button small" data-testid="lesson-next" aria-label="Next step"
                            aria-disabled=move || { at.get() + 1 >= count() }.to_string() on:click=move |_| step(1)>"›"</button>
                        <strong class="lesson-title" title=title.clone()>{title.clone()}</strong>
                        {(!compact).then(|| view! {
                            <button type="button" class="button small ghost" data-testid="lesson-leave" on:click=leave>"Leave the lesson"</button>
                        })}
                    </div>
                    <p class="lesson-caption" data-testid="lesson-caption" aria-live="polite">{caption}</p>
                </div>
            }
            .into_any(),
        })
    }
}

/// The lessons card: start a built-in lesson, add this view as a step of your own, copy the
/// lesson's links.
#[component]
pub fn LessonCard() -> impl IntoView {
    let state = expect_context::<AppState>();
    let caption = RwSignal::new(String::new());
    let copied = RwSignal::new(None::<&'static str>);
    let current = move || lesson_in(state).and_then(Result::ok);
    let start = move |name: String| {
        if let Some(b) = BUILT_IN.iter().find(|b| b.name == name) {
            show_step(state, &b.lesson(), 0);
        }
    };
    let add = move |_| {
        let text = caption.get_untracked();
        let text = if text.trim().is_empty() { "This view.".to_string() } else { text };
        let base = current().unwrap_or(Lesson { title: "My lesson".into(), steps: Vec::new() });
        let link = state.link.get_untracked();
        let lesson = base.with_step(&text, &link);
        let last = lesson.steps.len() - 1;
        show_step(state, &lesson, last);
        caption.set(String::new());
    };
    let copy = move |embed: bool| {
        let mut link = state.link.get_untracked();
        if embed {
            link.set_extra("embed", Some("1".into()));
        }
        let url = url_for(&link);
        if let Some(w) = web_sys::window() {
            let _ = w.navigator().clipboard().write_text(&url);
        }
        copied.set(Some(if embed { "Embed link copied" } else { "Link copied" }));
    };
    let steps = move || current().map_or(0, |l| l.steps.len());
    view! {
        <section class="card lesson-card" data-testid="lesson-card" aria-label="Lessons">
            <div class="card-head">
                <h2 class="card-title">"Lessons"</h2>
                <span class="muted small">"a few settings, a caption each: for a lecture or a post"</span>
            </div>
            <div class="lesson-row">
                <label class="sr-only" for="lesson-pick">"Start a lesson"</label>
                <select id="lesson-pick" class="select" data-testid="lesson-pick"
                    on:change=move |ev| start(event_target_value(&ev))>
                    <option value="" selected=true>"Start a lesson…"</option>
                    {BUILT_IN.iter().map(|b| view! { <option value=b.name>{b.title}</option> }).collect_view()}
                </select>
            </div>
            <div class="lesson-row">
                <label class="sr-only" for="lesson-caption-input">"Caption of the new step"</label>
                <input id="lesson-caption-input" class="input" type="text" data-testid="lesson-caption-input"
                    placeholder="Caption for this view" maxlength="400"
                    prop:value=move || caption.get() on:input=move |ev| caption.set(event_target_value(&ev))/>
                <button type="button" class="button" data-testid="lesson-add" on:click=add>
                    {move || if steps() == 0 { "Start a lesson with this view".to_string() } else { format!("Add as step {}", steps() + 1) }}
                </button>
            </div>
            <Show when=move || { steps() >= 1 }>
                <div class="lesson-row">
                    <button type="button" class="button small" data-testid="lesson-copy" on:click=move |_| copy(false)>"Copy lesson link"</button>
                    <button type="button" class="button small" data-testid="lesson-copy-embed" on:click=move |_| copy(true)>"Copy embed link"</button>
                    <span class="muted small" role="status">{move || copied.get()}</span>
                </div>
            </Show>
        </section>
    }
}
