//! Memory traded for time: which devices recompute their forwards before the backward, how
//! many microbatches each device offloads to host memory, and the sizes and rates that price
//! both. Inputs only: `passes` inserts the R passes and copies, `sim` times them.
//!
//! May use `units`, `error` and `schedule`.

use std::fmt;

use crate::error::{Field, ParamError};

/// How much of a forward a device recomputes before the backward.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum Recompute {
    /// Keep every activation (no R pass).
    #[default]
    None,
    /// Megatron's selective recompute: drop the attention scores, recompute them in R.
    Selective,
    /// Keep only the stage's input; R runs the whole forward again.
    Full,
}

impl Recompute {
    /// Every mode, in the order of the flag's help.
    pub const ALL: [Recompute; 3] = [Recompute::None, Recompute::Selective, Recompute::Full];

    /// The name in flags, URLs and JSON: `none`, `selective`, `full`.
    pub fn name(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }

    /// The mode called `name`.
    pub fn from_name(name: &str) -> Option<Recompute> {
        Recompute::ALL.into_iter().find(|r| r.name() == name.trim().to_ascii_lowercase())
    }
}

/// What a recompute mode keeps of a forward's activation and what its R pass costs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecomputeShape {
    /// The fraction of the forward's activation memory the forward keeps, `0..=1`.
    pub keep: f64,
    /// The R pass's time as a fraction of the forward's, `0..=1`.
    pub redo: f64,
}

impl RecomputeShape {
    /// Full recompute of a transformer layer with no model to size it: the layer keeps its
    /// input, 2·s·b·h bytes of the 34·s·b·h a FlashAttention layer stores (Korthikanti et al.),
    /// and R is the whole forward.
    pub const FULL: RecomputeShape = RecomputeShape { keep: 2.0 / 34.0, redo: 1.0 };

    /// Selective recompute where attention keeps no scores (FlashAttention): nothing to drop.
    pub const NOTHING: RecomputeShape = RecomputeShape { keep: 1.0, redo: 0.0 };
}

/// Which microbatches each device offloads.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum Offload {
    /// None.
    #[default]
    None,
    /// A fraction of each device's microbatches, `0..=1`: one for every device, or one per
    /// device.
    Fractions(Vec<f64>),
    /// Every microbatch whose wait between forward and backward hides both copies, as
    /// PipeOffload chooses.
    Auto,
    /// PipeOffload's own placement (`offloading.py`), for its grouped interleaved schedule:
    /// every forward of the chunks [`Trade::chunks`] covers whose wait hides three round trips,
    /// its copies at the positions the authors' slot grid gives them (devices in pairs sharing
    /// a host link). See `passes::pipeoffload_copies`.
    PipeOffload,
}

impl fmt::Display for Offload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Offload::None => f.write_str("none"),
            Offload::Auto => f.write_str("auto"),
            Offload::PipeOffload => f.write_str("pipeoffload"),
            Offload::Fractions(v) => f.write_str(&v.iter().map(|x| format!("{x}")).collect::<Vec<_>>().join(",")),
        }
    }
}

/// Recompute and offload settings for a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Trade {
    /// Recompute per device: one mode for every device, or one per device.
    pub recompute: Vec<Recompute>,
    /// Offload per device.
    pub offload: Offload,
    /// What full recompute keeps and costs.
    pub full: RecomputeShape,
    /// What selective recompute keeps and costs.
    pub selective: RecomputeShape,
    /// Time to copy one unit of memory between device and host; `None` when no rate is known
    /// (then offload is refused).
    pub copy_time: Option<f64>,
    /// Only each device's first `chunks` chunks recompute and offload (PipeOffload's
    /// `--recompute-num-layers` with `--recompute-method chunk`, and `--offload-chunk-num`);
    /// `None`: every chunk.
    pub chunks: Option<u32>,
}

impl Default for Trade {
    fn default() -> Trade {
        Trade {
            recompute: vec![Recompute::None],
            offload: Offload::None,
            full: RecomputeShape::FULL,
            selective: RecomputeShape::NOTHING,
            copy_time: None,
            chunks: None,
        }
    }
}

impl Trade {
    /// Whether this trades nothing: no recompute and no offload anywhere.
    pub fn is_none(&self) -> bool {
        self.recompute.iter().all(|r| *r == Recompute::None)
            && match &self.offload {
                Offload::None => true,
                Offload::Fractions(v) => v.iter().all(|f| *f == 0.0),
                Offload::Auto | Offload::PipeOffload => false,
            }
    }

    /// The recompute mode of `device`.
    pub fn recompute_of(&self, device: u32) -> Recompute {
        per_device(&self.recompute, device).unwrap_or_default()
    }

    /// What `device`'s recompute keeps and costs, when it recomputes anything.
    pub fn shape_of(&self, device: u32) -> Option<RecomputeShape> {
        match self.recompute_of(device) {
            Recompute::None => None,
            Recompute::Selective if self.selective.keep >= 1.0 => None,
            Recompute::Selective => Some(self.selective),
            Recompute::Full => Some(self.full),
        }
    }

    /// The fraction of `device`'s microbatches it offloads: `None` for [`Offload::Auto`] and
    /// [`Offload::PipeOffload`].
    pub fn offload_of(&self, device: u32) -> Option<f64> {
        match &self.offload {
            Offload::None => Some(0.0),
            Offload::Fractions(v) => Some(per_device(v, device).unwrap_or(0.0)),
            Offload::Auto | Offload::PipeOffload => None,
        }
    }

    /// Whether the trade reaches chunk `chunk` of a device (see [`Trade::chunks`]).
    pub fn covers_chunk(&self, chunk: u32) -> bool {
        self.chunks.is_none_or(|k| chunk < k)
    }

    /// When every device recomputes every chunk: the largest share of a forward's activation
    /// any of them keeps (below 1), what a memory-aware family plans with
    /// ([`crate::passes::planning_params`]). `None` otherwise.
    pub fn recompute_keep(&self, devices: u32) -> Option<f64> {
        if self.chunks.is_some() {
            return None;
        }
        let keeps = (0..devices).map(|d| self.shape_of(d).map(|s| s.keep)).collect::<Option<Vec<f64>>>()?;
        Some(keeps.into_iter().fold(0.0, f64::max)).filter(|&keep| keep < 1.0)
    }

    /// Whether any device offloads.
    pub fn offloads(&self) -> bool {
        match &self.offload {
            Offload::None => false,
            Offload::Fractions(v) => v.iter().any(|f| *f > 0.0),
            Offload::Auto | Offload::PipeOffload => true,
        }
    }

    /// Checks the lists against `devices` and every number against its range.
    ///
    /// # Errors
    /// A [`ParamError`] on `recompute`, `offload` or `copy-time`, with a hint.
    pub fn check(&self, devices: u32) -> Result<(), ParamError> {
        check_length(Field::Recompute, self.recompute.len(), devices, ("full", "none"))?;
        if let Offload::Fractions(v) = &self.offload {
            check_length(Field::Offload, v.len(), devices, ("0.5", "0"))?;
            if let Some(bad) = v.iter().find(|f| !(0.0..=1.0).contains(*f)) {
                return Err(ParamError::new(
                    Field::Offload,
                    format!("offload takes a fraction of the microbatches from 0 to 1, found {bad}"),
                )
                .hint("0 offloads none, 1 every microbatch, 0.5 half of them; `auto` lets the planner choose"));
            }
        }
        if let Some(t) = self.copy_time {
            check_copy_time(t)?;
        } else if self.offloads() {
            return Err(ParamError::new(Field::CopyTime, "offload needs the time a copy to the host takes")
                .hint("with a model, the GPU preset's host link sets it (--gpu, or --host-gbps)")
                .hint("with plain costs, give --copy-time: the time one forward's activation takes to copy, e.g. --copy-time 2"));
        }
        if self.chunks == Some(0) {
            return Err(ParamError::new(
                Field::Recompute,
                "a trade limited to chunks must cover at least 1 chunk, found 0",
            )
            .hint("give the number of each device's first chunks that recompute or offload, from 1 to its chunks"));
        }
        for shape in [self.full, self.selective] {
            if !(0.0..=1.0).contains(&shape.keep) || !(0.0..=1.0).contains(&shape.redo) {
                return Err(ParamError::new(Field::Recompute, "a recompute shape's fractions must lie from 0 to 1")
                    .hint("this comes from the model's sizes; report it as a bug"));
            }
        }
        Ok(())
    }
}

/// Refuses a copy rate (time per unit of memory) that is not above 0 and finite.
///
/// # Errors
/// A [`ParamError`] on `copy-time`, with the hint to give the host link's speed.
pub fn check_copy_time(t: f64) -> Result<(), ParamError> {
    if t.is_finite() && t > 0.0 {
        return Ok(());
    }
    Err(ParamError::new(Field::CopyTime, format!("a copy to the host must take some time, found {t}"))
        .hint("give the host link's speed: a GPU preset's, or --host-gbps above 0 (PCIe Gen4 x16 moves about 25 GB/s)"))
}

/// The slowest host link a trade takes, GB/s: at it the largest memory a cost may hold
/// ([`crate::units::MAX_COST`] bytes) copies in [`crate::units::MAX_COST`] µs, the longest time
/// a cost may take.
pub const MIN_HOST_GBPS: f64 = 1e-3;

/// What the user asked for, before it is priced: the flags, URL keys and playground fields
/// `recompute`, `offload`, `copy-time` and `host-gbps`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct TradeSettings {
    /// Recompute per device (empty or `none`: none).
    pub recompute: Vec<Recompute>,
    /// Offload per device.
    pub offload: Offload,
    /// With plain costs: the time one forward's activation (mem-f) takes to copy.
    pub copy_time: Option<f64>,
    /// With a model: the host link, GB/s each way (the GPU's when not given).
    pub host_gbps: Option<f64>,
}

/// What prices a trade: the model's recompute shapes and host link, or plain costs' mem-f.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pricing {
    /// Costs from a model, in µs and bytes.
    Model {
        /// Full and selective recompute of its layers.
        shapes: (RecomputeShape, RecomputeShape),
        /// Its GPU's host link, GB/s each way.
        host_gbps: f64,
    },
    /// Plain costs: activation memory in mem-f's unit.
    Plain {
        /// The activation one forward leaves on 1/P of the model.
        mem_f: f64,
    },
}

impl TradeSettings {
    /// Whether any recompute or offload is asked for.
    pub fn asks(&self) -> bool {
        self.recompute.iter().any(|r| *r != Recompute::None) || self.offload != Offload::None
    }

    /// The error for a copy time or host link given to a run that neither offloads nor copies.
    pub fn unused_rate(&self, schedule: &crate::schedule::Schedule) -> Option<ParamError> {
        self.unused_rate_unless(schedule.has_copies())
    }

    /// The error for a copy time or host link given where nothing offloads: these settings
    /// offload nothing, and `copies` (a file's own copies, or another setting that offloads,
    /// such as a sweep's list) is false.
    pub fn unused_rate_unless(&self, copies: bool) -> Option<ParamError> {
        if self.offload != Offload::None {
            return None;
        }
        let field = [(Field::CopyTime, self.copy_time.is_some()), (Field::HostGbps, self.host_gbps.is_some())]
            .into_iter()
            .find_map(|(f, given)| given.then_some(f))?;
        (!copies).then(|| {
            ParamError::new(field, format!("{} prices copies to the host, but nothing is offloaded", field.name()))
                .hint(format!("offload some activations (offload 0.5, or auto), or drop {}", field.name()))
        })
    }

    /// The time one unit of memory takes to copy to the host under `pricing`: with a model, a
    /// byte at the host link's speed; with plain costs, `copy_time` over mem-f. `None` when
    /// plain costs give no copy time.
    ///
    /// # Errors
    /// A [`ParamError`] on `copy-time` or `host-gbps` when the one given does not fit the
    /// costs, or is not above 0.
    pub fn copy_rate(&self, pricing: &Pricing) -> Result<Option<f64>, ParamError> {
        match *pricing {
            Pricing::Plain { mem_f } => {
                if self.host_gbps.is_some() {
                    return Err(ParamError::new(
                        Field::HostGbps,
                        "host-gbps needs costs from a model, where memory is in bytes",
                    )
                    .hint("with plain costs give copy-time: the time one forward's activation (mem-f) takes to copy"));
                }
                let Some(t) = self.copy_time else { return Ok(None) };
                if !(t > 0.0 && t <= crate::units::MAX_COST) {
                    return Err(ParamError::new(
                        Field::CopyTime,
                        format!(
                            "copy-time must be above 0 and at most {:e}, found {}",
                            crate::units::MAX_COST,
                            crate::units::short_number(t)
                        ),
                    )
                    .hint("the time one forward's activation takes to copy to the host, in the costs' time unit, e.g. 0.5"));
                }
                Ok(Some(t / mem_f.max(f64::MIN_POSITIVE)))
            }
            Pricing::Model { host_gbps, .. } => {
                if self.copy_time.is_some() {
                    return Err(ParamError::new(
                        Field::CopyTime,
                        "copy-time is for plain costs; with a model the host link sets it",
                    )
                    .hint("give host-gbps instead (the GPU preset's host link is the default)"));
                }
                let gbps = self.host_gbps.unwrap_or(host_gbps);
                if !(gbps.is_finite() && gbps >= MIN_HOST_GBPS) {
                    return Err(ParamError::new(
                        Field::HostGbps,
                        format!(
                            "host-gbps must be at least {MIN_HOST_GBPS} GB/s (below it a copy could take more than {:e} µs), found {}",
                            crate::units::MAX_COST,
                            crate::units::short_number(gbps)
                        ),
                    )
                    .hint("the host link's bandwidth each way in GB/s: PCIe Gen4 x16 moves about 25, Gen5 about 50"));
                }
                // Costs are in µs and bytes: one byte takes 1e-3 / (GB/s) µs.
                Ok(Some(1e-3 / gbps))
            }
        }
    }

    /// The trade these settings ask for on `devices` devices, priced by `pricing` (`None` when
    /// they ask for nothing). A copy time or host link alone gives a trade that only prices
    /// the copies a schedule read from a file has: callers refuse it for a schedule without
    /// copies ([`TradeSettings::unused_rate`]). A copy time or host link alone gives a trade that only prices
    /// the copies a schedule read from a file has: the caller refuses it for a schedule
    /// without copies ([`TradeSettings::unused_rate`]).
    ///
    /// # Errors
    /// A [`ParamError`] naming the setting: a list of the wrong length, a fraction outside 0 to
    /// 1, selective recompute without a model, offload without a copy time, a copy time or host
    /// link that is not above 0, or one that does not fit the costs.
    pub fn trade(&self, pricing: &Pricing, devices: u32) -> Result<Option<Trade>, ParamError> {
        if !self.asks() {
            // A rate given alone prices the copies a file has; the model's default alone
            // prices nothing.
            if self.copy_time.is_none() && self.host_gbps.is_none() {
                return Ok(None);
            }
            let copy_time = self.copy_rate(pricing)?;
            return Ok(copy_time.map(|t| Trade { copy_time: Some(t), ..Trade::default() }));
        }
        let mut trade = Trade { offload: self.offload.clone(), ..Trade::default() };
        if !self.recompute.is_empty() {
            trade.recompute = self.recompute.clone();
        }
        match pricing {
            Pricing::Model { shapes: (_, selective), .. }
                if selective.keep >= 1.0 && trade.recompute.contains(&Recompute::Selective) =>
            {
                return Err(ParamError::new(
                    Field::Recompute,
                    "recompute selective drops the attention scores, but this model's FlashAttention never stores them: it would recompute nothing",
                )
                .hint("recompute full to keep only each layer's input, or turn FlashAttention off (flash-attention false) to store the scores selective drops"));
            }
            Pricing::Model { shapes, .. } => (trade.full, trade.selective) = *shapes,
            Pricing::Plain { .. } if trade.recompute.contains(&Recompute::Selective) => {
                return Err(ParamError::new(
                    Field::Recompute,
                    "selective recompute needs a model: what it drops (the attention scores) depends on heads, sequence and hidden size",
                )
                .hint("add a model (a preset, or layers, hidden size …), or recompute full"));
            }
            Pricing::Plain { .. } => {}
        }
        trade.copy_time = self.copy_rate(pricing)?;
        trade.check(devices)?;
        Ok(Some(trade))
    }
}

impl TradeSettings {
    /// These settings with `trade`'s recompute and offload (a setting the planner chose); the
    /// copy time and host link stay unless `trade` asks for nothing (where they are refused).
    pub fn choosing(&self, trade: &Trade) -> TradeSettings {
        let recompute =
            if trade.recompute.iter().all(|r| *r == Recompute::None) { Vec::new() } else { compact(&trade.recompute) };
        let offload = match &trade.offload {
            Offload::Fractions(v) if v.iter().all(|f| *f == 0.0) => Offload::None,
            Offload::Fractions(v) => Offload::Fractions(compact(v)),
            other => other.clone(),
        };
        let mut out = TradeSettings { recompute, offload, ..self.clone() };
        if !out.asks() {
            (out.copy_time, out.host_gbps) = (None, None);
        }
        out
    }
}

/// A per-device list as it is written: one entry when every device has the same.
fn compact<T: Clone + PartialEq>(list: &[T]) -> Vec<T> {
    match list {
        [first, rest @ ..] if rest.iter().all(|x| x == first) => vec![first.clone()],
        _ => list.to_vec(),
    }
}

/// A recompute list as `--recompute` takes it: `none` when empty, `full`, or `full,none,none`.
pub fn recompute_text(list: &[Recompute]) -> String {
    if list.is_empty() {
        return Recompute::None.name().to_string();
    }
    list.iter().map(|r| r.name()).collect::<Vec<_>>().join(",")
}

/// The entry of a per-device list for `device`: the only entry, or the device's.
fn per_device<T: Clone>(list: &[T], device: u32) -> Option<T> {
    match list {
        [one] => Some(one.clone()),
        many => many.get(device as usize).cloned(),
    }
}

fn check_length(field: Field, len: usize, devices: u32, (first, rest): (&str, &str)) -> Result<(), ParamError> {
    if len == 1 || len == devices as usize {
        return Ok(());
    }
    // An example of the right length: the first device's value, then the others'.
    let example: Vec<&str> = (0..devices.min(16)).map(|d| if d == 0 { first } else { rest }).collect();
    let example = if devices > 16 { format!("{},…", example.join(",")) } else { example.join(",") };
    Err(ParamError::new(
        field,
        format!("{} takes one value for all devices or one per device, {devices} in all, found {len}", field.name()),
    )
    .hint(format!("for {devices} devices, e.g. --{} {example}", field.name())))
}

/// Parses a `--recompute` value: one mode, or a comma-separated list with one per device.
///
/// # Errors
/// A [`ParamError`] on `recompute` naming the value that is not a mode.
pub fn parse_recompute(text: &str) -> Result<Vec<Recompute>, ParamError> {
    text.split(',')
        .map(|part| {
            Recompute::from_name(part).ok_or_else(|| {
                ParamError::new(Field::Recompute, format!("unknown recompute `{}`", part.trim()))
                    .hint("expected none, selective or full, or one per device: full,full,none,none")
            })
        })
        .collect()
}

/// The settings a sweep's `--trades` list names, one per item: `none`, `selective`, `full`,
/// `offload` (automatic), `selective+offload` or `full+offload`, on every device.
///
/// # Errors
/// A [`ParamError`] on `recompute` naming the item that is not one of these.
pub fn parse_trade_list(text: &str) -> Result<Vec<TradeSettings>, ParamError> {
    text.split(',')
        .map(|item| {
            let item = item.trim().to_ascii_lowercase();
            let (mode, offload) = match item.strip_suffix("+offload") {
                Some(mode) => (mode, true),
                None if item == "offload" => ("none", true),
                None => (item.as_str(), false),
            };
            let recompute = Recompute::from_name(mode).ok_or_else(|| {
                ParamError::new(Field::Recompute, format!("unknown trade `{item}` in --trades"))
                    .hint("expected none, selective, full, offload, selective+offload or full+offload, e.g. --trades none,full,offload")
            })?;
            let offload = if offload { Offload::Auto } else { Offload::None };
            Ok(TradeSettings { recompute: vec![recompute], offload, ..TradeSettings::default() })
        })
        .collect()
}

/// Parses an `--offload` value: `auto`, `none`, one fraction, or one per device.
///
/// # Errors
/// A [`ParamError`] on `offload` naming the value that is not a fraction.
pub fn parse_offload(text: &str) -> Result<Offload, ParamError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "auto" => return Ok(Offload::Auto),
        "pipeoffload" => return Ok(Offload::PipeOffload),
        "none" => return Ok(Offload::None),
        _ => {}
    }
    let values = text
        .split(',')
        .map(|part| {
            let part = part.trim();
            let value = match part.strip_suffix('%') {
                Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0),
                None => part.parse::<f64>(),
            };
            value.ok().filter(|v| v.is_finite()).ok_or_else(|| {
                let word = ["auto", "pipeoffload", "none"].into_iter().find(|w| part.eq_ignore_ascii_case(w));
                match word {
                    // A mode inside a per-device list: it is a setting for every device at once.
                    Some(word) => ParamError::new(
                        Field::Offload,
                        format!(
                            "offload {word} stands alone: a list gives one fraction per device, found `{}`",
                            text.trim()
                        ),
                    )
                    .hint(format!("give --offload {word} alone, or one fraction per device, e.g. 1,0.5,0,0")),
                    None => {
                        ParamError::new(Field::Offload, format!("offload takes a fraction from 0 to 1, found `{part}`"))
                            .hint("e.g. --offload 0.5, --offload 50%, one per device 1,0.5,0,0, or --offload auto")
                    }
                }
            })
        })
        .collect::<Result<Vec<f64>, ParamError>>()?;
    Ok(Offload::Fractions(values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recompute_keep_is_the_most_any_device_keeps_only_when_every_device_recomputes() {
        let full = RecomputeShape { keep: 0.1, redo: 1.0 };
        let selective = RecomputeShape { keep: 0.6, redo: 0.2 };
        let t = |text: &str| Trade { recompute: parse_recompute(text).unwrap(), full, selective, ..Trade::default() };
        assert_eq!(t("full").recompute_keep(4), Some(0.1));
        assert_eq!(t("full,selective,full,full").recompute_keep(4), Some(0.6));
        assert_eq!(t("full,none,full,full").recompute_keep(4), None);
        assert_eq!(Trade { chunks: Some(1), ..t("full") }.recompute_keep(4), None);
        let nothing = Trade { selective: RecomputeShape::NOTHING, ..t("selective") };
        assert_eq!(nothing.recompute_keep(4), None, "selective under FlashAttention drops nothing");
    }

    #[test]
    fn a_single_mode_applies_to_every_device_and_a_list_to_each() {
        let mut t = Trade { recompute: parse_recompute("full").unwrap(), ..Trade::default() };
        assert_eq!(t.recompute_of(3), Recompute::Full);
        t.recompute = parse_recompute("full, none").unwrap();
        assert_eq!((t.recompute_of(0), t.recompute_of(1)), (Recompute::Full, Recompute::None));
        assert!(t.check(2).is_ok());
        let e = t.check(4).unwrap_err();
        assert_eq!(e.field, Field::Recompute);
        assert!(e.message.contains("one per device, 4 in all, found 2"), "{e}");
        // Eighth hostile pass: the hint's example had 4 values whatever the devices.
        let e = t.check(8).unwrap_err();
        assert_eq!(e.hints, ["for 8 devices, e.g. --recompute full,none,none,none,none,none,none,none"]);
    }

    #[test]
    fn offload_reads_fractions_percentages_and_auto_and_refuses_the_rest() {
        assert_eq!(parse_offload("auto").unwrap(), Offload::Auto);
        assert_eq!(parse_offload("PipeOffload").unwrap(), Offload::PipeOffload);
        assert_eq!(parse_offload("50%,1").unwrap(), Offload::Fractions(vec![0.5, 1.0]));
        assert!(parse_offload("half").unwrap_err().message.contains("`half`"));
        let t = Trade { offload: parse_offload("1.5").unwrap(), copy_time: Some(1.0), ..Trade::default() };
        assert!(t.check(4).unwrap_err().message.contains("from 0 to 1, found 1.5"));
        let t = Trade { offload: Offload::Auto, ..Trade::default() };
        assert_eq!(t.check(4).unwrap_err().field, Field::CopyTime);
        let t = Trade { offload: Offload::Auto, copy_time: Some(0.0), ..Trade::default() };
        assert!(t.check(4).unwrap_err().to_string().contains("hint:"));
    }

    #[test]
    fn a_trade_list_names_each_setting_once() {
        let list = parse_trade_list("none, full, offload, full+offload").unwrap();
        assert_eq!(list.len(), 4);
        assert!(!list[0].asks());
        assert_eq!((list[1].recompute[0], &list[1].offload), (Recompute::Full, &Offload::None));
        assert_eq!((list[2].recompute[0], &list[2].offload), (Recompute::None, &Offload::Auto));
        assert_eq!((list[3].recompute[0], &list[3].offload), (Recompute::Full, &Offload::Auto));
        let e = parse_trade_list("full,sometimes").unwrap_err();
        assert!(e.to_string().contains("unknown trade `sometimes`") && e.to_string().contains("hint:"), "{e}");
    }

    #[test]
    fn a_chosen_setting_replaces_the_modes_and_keeps_the_copy_price_unless_it_asks_nothing() {
        let user = TradeSettings { copy_time: Some(2.0), ..TradeSettings::default() };
        let full_first = Trade { recompute: parse_recompute("full,none,none").unwrap(), ..Trade::default() };
        let chosen = user.choosing(&full_first);
        assert_eq!(recompute_text(&chosen.recompute), "full,none,none");
        assert_eq!((chosen.offload.clone(), chosen.copy_time), (Offload::None, Some(2.0)));
        let everywhere = Trade {
            recompute: vec![Recompute::Full; 3],
            offload: Offload::Fractions(vec![1.0; 3]),
            ..Trade::default()
        };
        let chosen = user.choosing(&everywhere);
        assert_eq!(recompute_text(&chosen.recompute), "full");
        assert_eq!((chosen.offload.to_string(), chosen.copy_time), ("1".to_string(), Some(2.0)));
        let nothing = user.choosing(&Trade::default());
        assert_eq!((recompute_text(&nothing.recompute), nothing.copy_time), ("none".to_string(), None));
    }

    #[test]
    fn selective_that_drops_nothing_recomputes_nothing() {
        let t = Trade { recompute: vec![Recompute::Selective], ..Trade::default() };
        assert_eq!(t.shape_of(0), None);
        assert!(!Trade::default().offloads() && Trade::default().is_none());
    }
}
