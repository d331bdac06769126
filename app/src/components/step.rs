//! The whole training step, when costs come from a model: step time, tokens per second per
//! GPU and MFU, as `simulate --json` prints them under `step` (core's `bubblescope::step`,
//! composed with the schedule's analysis wherever that ran; nothing is computed here).

use bubblescope::step::Step;
use bubblescope::units::{format_bytes, format_micros, format_number};
use leptos::prelude::*;

use crate::state::AppState;

/// What the tiles show: the step, or why there is none.
#[derive(Clone, Debug, PartialEq)]
enum Shown {
    Step(Box<Step>),
    Error(String),
}

/// A percentage with one decimal.
fn percent(v: f64) -> String {
    format!("{}%", format_number(v * 100.0, 1))
}

/// Step time, tokens/s/GPU and MFU, and what the step is made of.
#[component]
pub fn StepTiles() -> impl IntoView {
    let state = expect_context::<AppState>();
    let shown = Memo::new(move |_| {
        state.outcome.with(|o| {
            o.main.step.as_ref().map(|s| match s {
                Ok(step) => Shown::Step(Box::new(step.clone())),
                Err(message) => Shown::Error(message.clone()),
            })
        })
    });
    let step = move || shown.with(|s| if let Some(Shown::Step(s)) = s { Some((**s).clone()) } else { None });
    let value = move |f: fn(&Step) -> String| {
        move || shown.with(|s| if let Some(Shown::Step(s)) = s { f(s) } else { "—".to_string() })
    };
    let error = move || shown.with(|s| if let Some(Shown::Error(e)) = s { Some(e.clone()) } else { None });
    let made_of = move || {
        step().map(|s| {
            format!(
                "pipeline {} + TP {} + DP {} + optimizer {}",
                format_micros(s.pipeline),
                format_micros(s.tp),
                format_micros(s.dp),
                format_micros(s.optimizer)
            )
        })
    };
    let gathers = move || {
        step().and_then(|s| {
            let count: u32 = s.gathers.iter().map(|g| g.count).sum();
            (count > 0).then(|| format!(" · ZeRO-3 gathers {count}"))
        })
    };
    let scale = move || {
        step().map(|s| {
            format!(
                "{} samples/s/GPU · {} GPUs (dp {}) · global batch {}",
                format_number(s.samples_per_gpu_s, 2),
                s.gpus,
                s.dp_degree,
                s.global_batch
            )
        })
    };
    let held = move || {
        step().map(|s| {
            let most = s.static_memory.iter().copied().fold(0.0, f64::max);
            format!(
                "HFU {} · weights, gradients and optimizer {} per GPU (ZeRO {})",
                percent(s.hfu),
                format_bytes(most),
                s.zero
            )
        })
    };
    view! {
        <Show when=move || shown.with(Option::is_some)>
            <section class="tiles step-tiles" aria-label="The whole training step" data-testid="step-tiles">
                <div class="tile">
                    <div class="tile-label">"Step time"<span class="tile-sub" title="one training step over every replica: the pipeline with its exposed tensor-parallel time, the data-parallel reduction that sticks out past it, and the optimizer">" whole training step"</span></div>
                    <div class="tile-value" data-testid="stat-step-time">{value(|s| format_micros(s.time))}</div>
                    <div class="tile-foot" data-testid="stat-step-parts">{made_of}{gathers}</div>
                </div>
                <div class="tile">
                    <div class="tile-label">"Tokens/s"<span class="tile-sub">" per GPU"</span></div>
                    <div class="tile-value" data-testid="stat-tokens-per-gpu">{value(|s| format_number(s.tokens_per_gpu_s, 1))}</div>
                    <div class="tile-foot">{scale}</div>
                </div>
                <div class="tile">
                    <div class="tile-label">"MFU"<span class="tile-sub" title="model FLOPs per second over the GPUs' peak, as Megatron counts it: recompute not included (HFU includes it)">" model FLOPs utilisation"</span></div>
                    <div class="tile-value" data-testid="stat-mfu">{value(|s| percent(s.mfu))}</div>
                    <div class="tile-foot">{held}</div>
                </div>
                {move || error().map(|e| view! { <p class="field-error step-error" role="alert" data-testid="step-error">{e}</p> })}
            </section>
        </Show>
    }
}
