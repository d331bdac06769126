//! A measured run's card: the step it took, its time split per device, the costs fitted from
//! it, how far the plan's prediction lands, and the button that plans every family at those
//! costs.

use std::sync::Arc;

use bubblescope::measured::MeasuredRun;
use bubblescope::units::{format_micros, format_number};
use leptos::prelude::*;

use crate::state::AppState;

/// The card under the import panel while a measured run is open.
#[component]
pub fn MeasuredCard(run: Arc<MeasuredRun>) -> impl IntoView {
    let state = expect_context::<AppState>();
    let fitted = run.fitted();
    let replay = run.replay_fitted().ok();
    let (stages, microbatches, passes) = run.sizes();
    let step = run.step.map_or_else(String::new, |n| format!(", profiler step {n}"));
    let devices = run.schedule.devices();
    // One unit for the whole per-device table, named in its head, so every cell is a short
    // number that fits the card.
    let (unit, per_unit) = if run.step_time >= 1000.0 { ("ms", 1000.0) } else { ("µs", 1.0) };
    let cell = move |v: f64| format_number(v / per_unit, 2);
    let rows = run
        .devices
        .iter()
        .map(|d| {
            view! {
                <tr>
                    <td>{d.device}</td>
                    <td>{cell(d.compute)}</td>
                    <td>{cell(d.communication)}</td>
                    <td>{cell(d.wait)}</td>
                    <td>{cell(d.overhead)}</td>
                </tr>
            }
        })
        .collect_view();
    let costs = (0..fitted.f.len())
        .map(|s| {
            view! {
                <tr>
                    <td>{s}</td>
                    <td>{format_micros(fitted.f[s])}</td>
                    <td>{format_micros(fitted.b[s])}</td>
                    <td>{format_micros(fitted.w[s])}</td>
                </tr>
            }
        })
        .collect_view();
    let prediction = replay.map(|r| {
        format!(
            "predicted {} at the fitted costs ({}{}% of the measured step)",
            format_micros(r.step_time),
            if r.error >= 0.0 { "+" } else { "" },
            format_number(100.0 * r.error, 1)
        )
    });
    let notes: Vec<String> = run.notes.iter().chain(&fitted.notes).cloned().collect();
    let use_fitted = {
        let costs = fitted.costs(devices);
        move |_| {
            let costs = costs.clone();
            state.update(|l| {
                l.params.devices = devices;
                l.params.microbatches = microbatches;
                l.params.costs = costs;
            });
        }
    };
    view! {
        <div class="measured-card" data-testid="measured-run">
            <p class="help">
                <strong>"measured "</strong>
                {format!("{devices} devices, {stages} stages, {microbatches} microbatches, {passes} passes{step}")}
            </p>
            <p class="measured-step" data-testid="measured-step">"step " {format_micros(run.step_time)}</p>
            <p class="help" data-testid="measured-prediction">{prediction}</p>
            <table class="table compact measured-split" data-testid="measured-split">
                <caption class="help">{format!("each device's time, {unit}")}</caption>
                <thead><tr><th>"dev"</th><th>"compute"</th><th>"comm"</th><th>"wait"</th><th title="the runtime's own time between passes">"other"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
            <p class="help">
                {format!(
                    "fitted per stage, the runtime's {} per pass included; hop {}",
                    format_micros(fitted.overhead),
                    format_micros(fitted.comm)
                )}
            </p>
            <table class="table compact measured-costs" data-testid="fitted-costs">
                <thead><tr><th>"stage"</th><th>"F"</th><th>"B"</th><th>"W"</th></tr></thead>
                <tbody>{costs}</tbody>
            </table>
            {notes.into_iter().map(|n| view! { <p class="help note">{n}</p> }).collect_view()}
            <button type="button" class="button wide" data-testid="use-fitted-costs" on:click=use_fitted
                title="set devices, microbatches and F, B, W, comm to this run's, to compare every family on it">
                "Plan with these costs"
            </button>
        </div>
    }
}
