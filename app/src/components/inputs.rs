//! Labelled numeric inputs: a slider with a number box, or a number box alone.

use leptos::prelude::*;

/// How a number box parses what the user types.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NumberKind {
    /// Whole numbers ≥ 1.
    Count,
    /// Real numbers ≥ 0.
    Amount,
}

fn parse(kind: NumberKind, text: &str) -> Result<f64, String> {
    let t = text.trim();
    match kind {
        NumberKind::Count => match t.parse::<u32>() {
            Ok(v) if v >= 1 => Ok(f64::from(v)),
            _ => Err(format!("expected a whole number ≥ 1, found `{}`", short(t))),
        },
        NumberKind::Amount => match t.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(format!("expected a number ≥ 0, found `{}`", short(t))),
        },
    }
}

fn short(t: &str) -> String {
    let s: String = t.chars().filter(|c| !c.is_control()).take(24).collect();
    if t.chars().count() > 24 {
        format!("{s}…")
    } else {
        s
    }
}

/// Formats a value for a number box: integers without decimals, others in full.
pub fn show(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// A number with a label, an optional slider, a number box and an error line.
///
/// The box keeps what the user typed while it does not parse (and says why below), and
/// follows the value when it changes from elsewhere (slider, preset, back button).
#[component]
pub fn NumberField(
    /// Visible label.
    #[prop(into)]
    label: String,
    /// Element id (for the label) and the base of the test ids.
    #[prop(into)]
    id: String,
    /// The current value; `None` shows the placeholder.
    #[prop(into)]
    value: Signal<Option<f64>>,
    /// Called with a new valid value (`None` when an optional box is cleared).
    on_change: Callback<Option<f64>>,
    /// Whole numbers or amounts.
    kind: NumberKind,
    /// Slider range and step, if a slider is shown.
    #[prop(optional, into)]
    slider: Option<Signal<(f64, f64, f64)>>,
    /// Whether the box may be empty.
    #[prop(optional)]
    optional: bool,
    /// Placeholder for an empty optional box.
    #[prop(optional, into)]
    placeholder: String,
    /// A short explanation under the label.
    #[prop(optional, into)]
    help: String,
    /// An error from the engine about this setting.
    #[prop(optional, into)]
    error: Option<Signal<Option<String>>>,
    /// The number box's test id (default `{id}-input`).
    #[prop(optional, into)]
    testid: Option<String>,
) -> impl IntoView {
    let text = RwSignal::new(value.get_untracked().map(show).unwrap_or_default());
    let local_error = RwSignal::new(None::<String>);
    // Follow outside changes unless the box already says the same number.
    Effect::new(move |_| {
        let v = value.get();
        let current = text.get_untracked();
        let same = match (v, parse(kind, &current)) {
            (Some(v), Ok(t)) => (v - t).abs() <= f64::EPSILON * v.abs().max(1.0),
            (None, _) => current.trim().is_empty(),
            _ => false,
        };
        if !same {
            text.set(v.map(show).unwrap_or_default());
            local_error.set(None);
        }
    });
    let commit = move |raw: String| {
        text.set(raw.clone());
        if optional && raw.trim().is_empty() {
            local_error.set(None);
            on_change.run(None);
            return;
        }
        match parse(kind, &raw) {
            Ok(v) => {
                local_error.set(None);
                on_change.run(Some(v));
            }
            Err(e) => local_error.set(Some(e)),
        }
    };
    let box_id = id.clone();
    let input_testid = testid.unwrap_or_else(|| format!("{id}-input"));
    let slider_testid = format!("{id}-slider");
    let error_id = format!("{id}-error");
    let shown_error = move || local_error.get().or_else(|| error.and_then(|e| e.get()));
    let has_error = move || shown_error().is_some();
    let step = move || slider.map(|s| s.get().2).unwrap_or(if kind == NumberKind::Count { 1.0 } else { 0.1 });
    view! {
        <div class="field" class:invalid=has_error>
            <div class="field-head">
                <label for=box_id.clone()>{label.clone()}</label>
                <input
                    id=box_id
                    class="num"
                    type="number"
                    inputmode=if kind == NumberKind::Count { "numeric" } else { "decimal" }
                    min="0"
                    step=move || show(step())
                    placeholder=placeholder.clone()
                    data-testid=input_testid
                    aria-invalid=move || if has_error() { "true" } else { "false" }
                    aria-describedby=error_id.clone()
                    prop:value=move || text.get()
                    on:input=move |ev| commit(event_target_value(&ev))
                />
            </div>
            {slider.map(|range| {
                let label = label.clone();
                view! {
                    <input
                        type="range"
                        class="slider"
                        aria-label=label
                        data-testid=slider_testid
                        min=move || show(range.get().0)
                        max=move || show(range.get().1)
                        step=move || show(range.get().2)
                        prop:value=move || value.get().map(show).unwrap_or_default()
                        on:input=move |ev| commit(event_target_value(&ev))
                    />
                }
            })}
            {(!help.is_empty()).then(|| view! { <p class="help">{help.clone()}</p> })}
            <p class="field-error" id=error_id role="alert" data-testid="error-message" hidden=move || !has_error()>
                {shown_error}
            </p>
        </div>
    }
}
