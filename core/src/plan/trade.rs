//! The recompute and offload settings a plan tries when a candidate does not fit its limit
//! ([`ladder`]), and how a chosen one is reported ([`TradeChoice`], [`describe`]).
//!
//! Early stages hold the most activations, so the ladder recomputes or offloads on the first
//! devices first: devices `0..k` for every `k`, then everything at once.

use std::sync::Arc;

use crate::error::ParamError;
use crate::trade::{Offload, Pricing, Recompute, RecomputeShape, Trade, TradeSettings};

/// How a plan treats recompute and offload.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum TradeSpec {
    /// Never (the candidates run as they are).
    #[default]
    None,
    /// One setting for every candidate (the user's `--recompute` / `--offload`).
    Fixed(Arc<Trade>),
    /// A candidate that does not fit tries the [`ladder`] and keeps its fastest setting that
    /// fits.
    Search(TradeSearch),
}

/// What the ladder's settings are priced with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TradeSearch {
    /// What full recompute keeps and costs.
    pub full: RecomputeShape,
    /// What selective recompute keeps and costs ([`RecomputeShape::NOTHING`]: not tried).
    pub selective: RecomputeShape,
    /// Time to copy one unit of memory to the host; `None`: offload is not tried.
    pub copy_time: Option<f64>,
}

impl Default for TradeSearch {
    fn default() -> TradeSearch {
        TradeSearch { full: RecomputeShape::FULL, selective: RecomputeShape::NOTHING, copy_time: None }
    }
}

impl TradeSearch {
    /// The search `settings` price under `pricing`, as `plan` and the playground's "fit under
    /// the limit" run it: the model's recompute shapes, and offload when a copy rate is known
    /// (a model's host link, or a copy time with plain costs).
    ///
    /// # Errors
    /// A [`ParamError`] on `copy-time` or `host-gbps` when the one given does not fit the
    /// costs ([`TradeSettings::copy_rate`]).
    pub fn priced(settings: &TradeSettings, pricing: &Pricing) -> Result<TradeSearch, ParamError> {
        let mut search = TradeSearch::default();
        if let Pricing::Model { shapes, .. } = pricing {
            (search.full, search.selective) = *shapes;
        }
        search.copy_time = settings.copy_rate(pricing)?;
        Ok(search)
    }
}

/// The recompute or offload setting a plan runs with, and what it costs and saves against
/// the same candidate without it.
#[derive(Clone, Debug, PartialEq)]
pub struct TradeChoice {
    /// The setting.
    pub trade: Arc<Trade>,
    /// Step time it adds (cost with it less cost without); negative when a memory-aware
    /// family, planning with the memory the trade frees, runs faster.
    pub time: f64,
    /// Memory it saves (the worst device's memory without it less with it).
    pub saved: f64,
}

/// The settings to try on `devices` devices, roughly from the cheapest: selective recompute
/// everywhere (when it drops anything), full recompute on the first `k` devices for every
/// `k`, offload of every microbatch whose wait hides the copies on the first `k` devices
/// (when copies have a rate), and last full recompute with that offload everywhere: the
/// least memory the ladder reaches.
pub fn ladder(search: &TradeSearch, devices: u32) -> Vec<Trade> {
    let n = devices as usize;
    let base =
        Trade { full: search.full, selective: search.selective, copy_time: search.copy_time, ..Trade::default() };
    let first = |k: usize, on: Recompute| -> Vec<Recompute> {
        (0..n).map(|d| if d < k { on } else { Recompute::None }).collect()
    };
    let mut out = Vec::new();
    if search.selective.keep < 1.0 {
        out.push(Trade { recompute: vec![Recompute::Selective], ..base.clone() });
    }
    for k in 1..=n {
        out.push(Trade { recompute: first(k, Recompute::Full), ..base.clone() });
    }
    if search.copy_time.is_some() {
        for k in 1..=n {
            let fractions = (0..n).map(|d| if d < k { 1.0 } else { 0.0 }).collect();
            out.push(Trade { offload: Offload::Fractions(fractions), ..base.clone() });
        }
        out.push(Trade { recompute: vec![Recompute::Full], offload: Offload::Auto, ..base });
    }
    out
}

/// What a trade does to a step, signed: `+5 per step`, or `−12 per step` when a memory-aware
/// family runs faster with it; `text` writes the magnitude in the caller's units.
pub fn per_step(time: f64, text: impl Fn(f64) -> String) -> String {
    let sign = if time < 0.0 { '−' } else { '+' };
    format!("{sign}{} per step", text(time.abs()))
}

/// A setting in a few words: `recompute full on devices 0–1 · offload on device 0`.
pub fn describe(trade: &Trade, devices: u32) -> String {
    let mut parts = Vec::new();
    for mode in [Recompute::Selective, Recompute::Full] {
        let on: Vec<u32> = (0..devices).filter(|&d| trade.recompute_of(d) == mode).collect();
        if !on.is_empty() {
            parts.push(format!("recompute {} {}", mode.name(), on_devices(&on, devices)));
        }
    }
    match &trade.offload {
        Offload::None => {}
        Offload::Auto => parts.push("offload auto on every device".to_string()),
        Offload::PipeOffload => parts.push("offload as PipeOffload on every device".to_string()),
        Offload::Fractions(_) => {
            let on: Vec<u32> = (0..devices).filter(|&d| trade.offload_of(d).unwrap_or(0.0) > 0.0).collect();
            let all_full = on.iter().all(|&d| trade.offload_of(d) == Some(1.0));
            if !on.is_empty() {
                let what = if all_full { "offload".to_string() } else { format!("offload {}", trade.offload) };
                parts.push(format!("{what} {}", on_devices(&on, devices)));
            }
        }
    }
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join(" · ")
    }
}

/// `on every device`, `on device 0`, `on devices 0–2` or `on devices 0, 2`.
fn on_devices(on: &[u32], devices: u32) -> String {
    match on {
        _ if on.len() == devices as usize && devices > 1 => "on every device".to_string(),
        [one] => format!("on device {one}"),
        [first, .., last] if (last - first) as usize + 1 == on.len() => format!("on devices {first}–{last}"),
        _ => format!("on devices {}", on.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_grows_from_the_first_devices_and_ends_at_everything() {
        let search = TradeSearch { copy_time: Some(0.1), ..TradeSearch::default() };
        let rungs = ladder(&search, 3);
        assert_eq!(rungs.len(), 3 + 3 + 1, "no selective rung without a model's scores");
        let names: Vec<String> = rungs.iter().map(|t| describe(t, 3)).collect();
        assert_eq!(names[0], "recompute full on device 0");
        assert_eq!(names[1], "recompute full on devices 0–1");
        assert_eq!(names[2], "recompute full on every device");
        assert_eq!(names[3], "offload on device 0");
        assert_eq!(names[6], "recompute full on every device · offload auto on every device");
        assert!(rungs.iter().all(|t| t.check(3).is_ok()));
        assert_eq!(ladder(&TradeSearch::default(), 2).len(), 2, "no offload rungs without a copy rate");
    }
}
