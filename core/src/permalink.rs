//! Permalinks: every setting of the playground in a URL query string, a codec over
//! [`Settings`] and the app's view keys.
//!
//! The keys are the CLI's flag names:
//! * the schedule's: `schedule`, `devices`, `microbatches`, `chunks`, `group`, `waves`,
//!   `seq-splits`, `a2a-overlap` (`true` or `false`), `f`, `b`, `w`, `comm`, `overlap`, `mem-f`,
//!   `mem-w`, `mem-limit`, `p2p` (`async` or `blocking`, the CLI's `--p2p`). `f`, `b`,
//!   `w`, `mem-f` and `mem-w` take one number or one per device; `mem-limit` takes a size
//!   (`80GiB`) with a model;
//! * the model's, every key of [`crate::model::MODEL_FIELDS`] (`model`, `layers`, `hidden`,
//!   `tp`, `gpu`, `dp`, `precision`, the experts' `experts`, `top-k`, `ep`, …, MLA's
//!   `kv-lora-rank`, …): costs then come from the model while the hand-set ones stay in the
//!   link; a calibration is carried as the efficiencies it fitted;
//! * the memory trade's: `recompute`, `offload`, `copy-time`, `host-gbps`, priced as the CLI
//!   prices its flags ([`Settings::effective_params`]);
//! * the whole step's: `zero`; `gpus` and `global-batch` are read as the replicas and the
//!   microbatches they make ([`settle_step`]) and written as those;
//! * `compare` (comma-separated family names) and `v`, the format version.
//!
//! Once links are shared this format is stable: new keys may be added, none renamed. Keys the
//! engine does not know (the app's view settings such as `theme` or `embed`) are kept in
//! `extra` in their order.

use std::fmt::Write as _;

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::cost_lists::{format_list, parse_list, CostLists, LIST_FIELDS};
use crate::error::Field;
use crate::model::{model_field, parse_limit, ModelSpec};
use crate::params::{Costs, P2p, ScheduleParams, VocabCosts};
use crate::settings::{trade_pairs, Settings};
use crate::step::StepSpec;
use crate::trade::{parse_offload, parse_recompute, Offload, Recompute, TradeSettings};

/// The key that holds a lesson (read by [`crate::lessons`]).
pub const LESSON_KEY: &str = "lesson";
/// The longest lesson text a link may carry (bytes).
pub const MAX_LESSON_TEXT: usize = 16 * 1024;

/// The current permalink format version.
pub const VERSION: u32 = 1;

/// Everything a permalink holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Permalink {
    /// The family name.
    pub schedule: String,
    /// Sizes, options, costs and memory limit.
    pub params: ScheduleParams,
    /// Families stacked below for comparison.
    pub compare: Vec<String>,
    /// The model the costs come from; empty: `params.costs` as set by hand.
    pub model: ModelSpec,
    /// Recompute and offload, as the user set them (priced in [`Settings::effective_params`]).
    pub trade: TradeSettings,
    /// The whole step: the ZeRO stage (`gpus` and `global-batch` are settled into the model's
    /// replicas and the microbatches as a link is read).
    pub step: StepSpec,
    /// Other keys, in order (view settings of the app).
    pub extra: Vec<(String, String)>,
}

impl Default for Permalink {
    fn default() -> Self {
        Permalink {
            schedule: crate::registry::BASELINE.name.to_string(),
            params: ScheduleParams::new(4, 8),
            compare: Vec::new(),
            model: ModelSpec::default(),
            trade: TradeSettings::default(),
            step: StepSpec::default(),
            extra: Vec::new(),
        }
    }
}

impl Permalink {
    /// What changes the schedule: everything but the view keys.
    pub fn settings(&self) -> Settings {
        Settings {
            schedule: self.schedule.clone(),
            params: self.params.clone(),
            compare: self.compare.clone(),
            model: self.model.clone(),
            trade: self.trade.clone(),
            step: self.step.clone(),
        }
    }

    /// The value of an extra key.
    pub fn extra(&self, key: &str) -> Option<&str> {
        self.extra.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Sets (or removes, with `None`) an extra key.
    pub fn set_extra(&mut self, key: &str, value: Option<String>) {
        self.extra.retain(|(k, _)| k != key);
        if let Some(v) = value {
            self.extra.push((key.to_string(), v));
        }
    }
}

/// Reads a query string (with or without the leading `?`). Values that do not parse keep
/// their default and produce a warning naming the key, the value and what was expected, so
/// a damaged link still opens.
pub fn parse(query: &str) -> (Permalink, Vec<String>) {
    let mut link = Permalink::default();
    let mut warnings = Vec::new();
    let query = query.strip_prefix('?').unwrap_or(query);
    let mut lists = CostLists::default();
    let mut sized_limit: Option<String> = None;
    let mut shards: (Option<f64>, Option<f64>) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()).take(200) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (key, value) = (decode(key), decode(value));
        let p = &mut link.params;
        let c = &mut p.costs;
        let mut bad = |expected: &str| {
            warnings.push(format!("ignored {key}={}: expected {expected}", short(&value)));
        };
        match key.as_str() {
            "v" => match value.parse::<u32>() {
                Ok(v) if v <= VERSION => {}
                _ => bad(&format!("a format version up to {VERSION}")),
            },
            "schedule" if !value.is_empty() && value.len() <= 64 => link.schedule = value.clone(),
            "schedule" => bad("a schedule name"),
            "devices" => int(&value).map_or_else(|| bad("a positive integer"), |v| p.devices = v),
            "microbatches" => int(&value).map_or_else(|| bad("a positive integer"), |v| p.microbatches = v),
            "chunks" => int(&value).map_or_else(|| bad("a positive integer"), |v| p.chunks = Some(v)),
            "group" => int(&value).map_or_else(|| bad("a positive integer"), |v| p.group = Some(v)),
            "waves" => int(&value).map_or_else(|| bad("a positive integer"), |v| p.waves = Some(v)),
            "seq-splits" => int(&value).map_or_else(|| bad("a positive integer"), |v| p.seq_splits = Some(v)),
            "a2a-overlap" => match value.trim() {
                "true" | "1" | "" => p.a2a_overlap = true,
                "false" | "0" => p.a2a_overlap = false,
                _ => bad("true or false"),
            },
            "comm" => num(&value).map_or_else(|| bad("a number ≥ 0"), |v| c.comm = v),
            "overlap" => num(&value).map_or_else(|| bad("a number ≥ 0"), |v| c.overlap = Some(v)),
            "vocab-s" => num(&value).map_or_else(|| bad("a number ≥ 0"), |v| shards.0 = Some(v)),
            "vocab-t" => num(&value).map_or_else(|| bad("a number ≥ 0"), |v| shards.1 = Some(v)),
            "p2p" => P2p::from_name(value.trim()).map_or_else(|| bad("async or blocking"), |v| c.p2p = v),
            "f" | "b" | "w" | "mem-f" | "mem-w" => {
                let field = LIST_FIELDS.into_iter().find(|f| f.name() == key).unwrap_or(Field::F);
                match parse_list(&value, field) {
                    Ok(v) if v.iter().all(|x| x.is_finite() && *x >= 0.0) => lists.set(field, Some(v)),
                    _ => bad("a number ≥ 0, or one per device (4,4,4,6)"),
                }
            }
            "mem-limit" => match num(&value) {
                Some(v) => p.mem_limit = Some(v),
                None if crate::model::parse_bytes(&value, Field::MemLimit).is_ok() => sized_limit = Some(value.clone()),
                None => bad("a number ≥ 0, or a size like 80GiB with a model"),
            },
            _ if model_field(&key).is_some() => {
                if let Some(field) = model_field(&key) {
                    if let Err(e) = link.model.set(field, &value) {
                        warnings.push(format!("ignored {key}={}: {}", short(&value), e.message));
                    }
                }
            }
            "recompute" => match parse_recompute(&value) {
                Ok(list) if list.iter().all(|r| *r == Recompute::None) => link.trade.recompute = Vec::new(),
                Ok(list) => link.trade.recompute = list,
                Err(e) => warnings.push(format!("ignored recompute={}: {}", short(&value), e.message)),
            },
            "offload" => match parse_offload(&value) {
                Ok(Offload::Fractions(v)) if v.iter().all(|f| *f == 0.0) => link.trade.offload = Offload::None,
                Ok(offload) => link.trade.offload = offload,
                Err(e) => warnings.push(format!("ignored offload={}: {}", short(&value), e.message)),
            },
            "zero" => match value.trim().parse::<u32>() {
                Ok(v) if v <= 3 => link.step.zero = (v > 0).then_some(v),
                _ => bad("a ZeRO stage: 0, 1, 2 or 3"),
            },
            "gpus" => int(&value).map_or_else(|| bad("a positive integer"), |v| link.step.gpus = Some(v)),
            "global-batch" => match int(&value) {
                Some(v) => link.step.global_batch = Some(v),
                None => bad("a positive integer"),
            },
            "copy-time" => num(&value).map_or_else(|| bad("a time ≥ 0"), |v| link.trade.copy_time = Some(v)),
            "host-gbps" => num(&value).map_or_else(|| bad("a bandwidth in GB/s"), |v| link.trade.host_gbps = Some(v)),
            "compare" => {
                link.compare = value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty() && s.len() <= 64)
                    .take(8)
                    .map(str::to_string)
                    .collect();
            }
            LESSON_KEY if value.len() <= MAX_LESSON_TEXT => {
                link.extra.push((key, value));
            }
            LESSON_KEY => {
                bad(&format!("a lesson of at most {MAX_LESSON_TEXT} bytes"));
            }
            _ if key.len() <= 32 && value.len() <= 256 => link.extra.push((key, value)),
            _ => {}
        }
    }
    // The vocabulary shards' barrier takes a hop, whichever key came first.
    let c = &mut link.params.costs;
    c.vocab = VocabCosts::from_shards(shards.0, shards.1, c.vocab, c.comm);
    match lists.apply(&link.params.costs, link.params.devices) {
        Ok(costs) => link.params.costs = costs,
        Err(e) => warnings.push(format!("ignored the cost lists: {}", e.message)),
    }
    // Links written before `mlp` existed gave `ffn` as the MLP's width (SwiGLU's as 1.5 × its
    // intermediate size): with no `mlp` key, `ffn` keeps that meaning, a GELU width.
    let keys = || query.split('&').map(|p| decode(p.split_once('=').map_or(p, |(k, _)| k)));
    if link.model.ffn.is_some() && link.model.mlp.is_none() && !keys().any(|k| k == "mlp") {
        link.model.mlp = Some(crate::model::Mlp::Gelu);
    }
    warnings.extend(settle_step(&mut link));
    if let Some(text) = sized_limit {
        match parse_limit(&text, link.model.units()) {
            Ok(bytes) => link.params.mem_limit = Some(bytes),
            _ => warnings.push(format!(
                "ignored mem-limit={}: sizes with units need a model (model=…), where memory is in bytes",
                short(&text)
            )),
        }
    }
    (link, warnings)
}

/// Turns a link's `gpus` and `global-batch` into what the playground sets: the model's
/// data-parallel replicas (`gpus / (tp · devices)`) and the microbatches (`global batch / (dp ·
/// micro-batch)`), as the CLI checks them ([`StepSpec::resolve`]). Each that cannot be settled
/// is dropped with a warning saying why.
pub fn settle_step(link: &mut Permalink) -> Vec<String> {
    let (gpus, global_batch) = (link.step.gpus.take(), link.step.global_batch.take());
    if gpus.is_none() && global_batch.is_none() {
        return Vec::new();
    }
    let mut warnings = Vec::new();
    let model = match link.model.given().then(|| link.model.resolve()) {
        Some(Ok(m)) => m,
        _ => {
            for (key, v) in [("gpus", gpus), ("global-batch", global_batch)] {
                if let Some(v) = v {
                    warnings.push(format!("ignored {key}={v}: the whole step needs costs from a model (model=…)"));
                }
            }
            return warnings;
        }
    };
    let devices = link.params.devices;
    let mut dp = model.dp.max(1);
    if let Some(g) = gpus {
        let per = u64::from(model.tp.max(1)) * u64::from(devices);
        if u64::from(g) % per == 0 {
            dp = u32::try_from(u64::from(g) / per).unwrap_or(u32::MAX).clamp(1, crate::step::MAX_DP);
            link.model.dp = (dp > 1).then_some(dp);
        } else {
            warnings.push(format!("ignored gpus={g}: not a multiple of tp · devices = {per}"));
        }
    }
    if let Some(gb) = global_batch {
        let per = u64::from(dp) * u64::from(model.micro_batch.max(1));
        match u32::try_from(u64::from(gb) / per) {
            Ok(m) if m > 0 && u64::from(gb) % per == 0 => link.params.microbatches = m,
            _ => warnings.push(format!("ignored global-batch={gb}: not a multiple of dp · micro-batch = {per}")),
        }
    }
    warnings
}

/// The step's keys and values as a link writes them: the ZeRO stage when it is not 0.
fn step_pairs(step: &StepSpec) -> Vec<(&'static str, u32)> {
    step.zero.filter(|z| *z > 0).map(|z| ("zero", z)).into_iter().collect()
}

/// The keys [`parse`] reads itself, in the order [`to_query`] writes them.
pub fn keys() -> Vec<&'static str> {
    let mut keys =
        vec!["v", "schedule", "devices", "microbatches", "chunks", "group", "waves", "seq-splits", "a2a-overlap"];
    keys.extend(["f", "b", "w", "comm", "overlap", "vocab-s", "vocab-t", "mem-f", "mem-w", "mem-limit", "p2p"]);
    keys.extend(crate::model::MODEL_FIELDS.iter().map(|f| f.name()));
    keys.extend(["recompute", "offload", "copy-time", "host-gbps", "zero", "gpus", "global-batch", "compare"]);
    keys
}

/// The CLI's short flags, which a link does not take, and the key each stands for.
// (The CLI's `--s` and `--t`, the vocabulary shards' times, are `vocab-s` and `vocab-t` in a
// link: `t` is the playback cursor's time.)
const SHORT_FLAGS: &[(&str, &str)] = &[("p", "devices"), ("m", "microbatches"), ("s", "schedule")];

/// A warning for each key of `link` that neither [`parse`] nor the app (`view_keys`) reads:
/// it names the key and value, and the nearest known keys (`?p=8&microbatch=16` runs the
/// defaults, so the reader should hear why).
pub fn unknown_keys(link: &Permalink, view_keys: &[&str]) -> Vec<String> {
    let mut known = keys();
    known.extend(view_keys);
    let mut warnings = Vec::new();
    for (key, value) in &link.extra {
        if view_keys.contains(&key.as_str()) {
            continue;
        }
        let suggestions = nearest_keys(key.trim(), &known);
        let shown = format!("{}={}", short(key), short(value));
        if key.trim().is_empty() {
            warnings.push(format!("ignored {shown}: a value without a key"));
            continue;
        }
        warnings.push(match suggestions.as_slice() {
            [] => format!("ignored {shown}: no such key; the keys are {}", keys().join(", ")),
            [one] => format!("ignored {shown}: no such key; did you mean {one}?"),
            many => format!("ignored {shown}: no such key; did you mean {}?", many.join(" or ")),
        });
    }
    warnings
}

/// The known keys a mistyped `key` most likely meant: the key a CLI short flag stands for,
/// else those that contain it or that it contains (in normal form, three letters or more:
/// `microbatch` is in both `microbatches` and `micro-batch`), else the closest by edit
/// distance (a swap of two letters is one edit; at most 3).
fn nearest_keys(key: &str, known: &[&str]) -> Vec<String> {
    use crate::units::names::normal;
    if let Some((_, long)) = SHORT_FLAGS.iter().find(|(s, _)| *s == key) {
        return vec![(*long).to_string()];
    }
    let typed = normal(key);
    let overlaps = |k: &str| {
        let k = normal(k);
        typed.len() >= 3 && k.len() >= 3 && (k.contains(&typed) || typed.contains(&k))
    };
    let overlapping: Vec<String> = known.iter().filter(|k| overlaps(k)).map(|k| (*k).to_string()).collect();
    if !overlapping.is_empty() {
        return overlapping;
    }
    known
        .iter()
        .map(|k| (strsim::osa_distance(&typed, &normal(k)), *k))
        .filter(|(d, _)| *d <= 3)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.to_string())
        .into_iter()
        .collect()
}

/// A value as shown in a warning: cleaned and cut.
fn short(value: &str) -> String {
    crate::units::clean_text(value).chars().take(40).collect()
}

/// Writes a permalink as a query string (without `?`). Only values that differ from the
/// defaults are written, in a fixed order, so equal settings give equal links.
pub fn to_query(link: &Permalink) -> String {
    let mut out = format!("v={VERSION}&schedule={}", encode(&link.schedule));
    let p = &link.params;
    let d = Costs::default();
    let _ = write!(out, "&devices={}&microbatches={}", p.devices, p.microbatches);
    let opts = [("chunks", p.chunks), ("group", p.group), ("waves", p.waves), ("seq-splits", p.seq_splits)];
    for (key, value) in opts {
        if let Some(v) = value {
            let _ = write!(out, "&{key}={v}");
        }
    }
    if p.a2a_overlap {
        out.push_str("&a2a-overlap=true");
    }
    let c = &p.costs;
    let lists = CostLists::of(c, p.devices);
    let nums = [
        ("f", Some(c.f), d.f),
        ("b", Some(c.b), d.b),
        ("w", Some(c.w), d.w),
        ("comm", Some(c.comm), d.comm),
        ("overlap", c.overlap, f64::NAN),
        ("vocab-s", c.vocab.map(|v| v.s), f64::NAN),
        ("vocab-t", c.vocab.map(|v| v.t), f64::NAN),
        ("mem-f", Some(c.mem_f), d.mem_f),
        ("mem-w", c.mem_w, f64::NAN),
        ("mem-limit", p.mem_limit, f64::NAN),
    ];
    for (key, value, default) in nums {
        let list = LIST_FIELDS.iter().find(|f| f.name() == key).and_then(|f| lists.get(*f));
        if let Some(list) = list {
            let _ = write!(out, "&{key}={}", format_list(list));
        } else if let Some(v) = value {
            if v != default {
                let _ = write!(out, "&{key}={v}");
            }
        }
    }
    if !c.p2p.is_async() {
        let _ = write!(out, "&p2p={}", c.p2p.name());
    }
    for (key, value) in link.model.query_pairs() {
        let _ = write!(out, "&{key}={}", encode(&value));
    }
    for (key, value) in trade_pairs(&link.trade) {
        let _ = write!(out, "&{key}={}", encode(&value));
    }
    for (key, value) in step_pairs(&link.step) {
        let _ = write!(out, "&{key}={value}");
    }
    if !link.compare.is_empty() {
        let names: Vec<String> = link.compare.iter().map(|n| encode(n)).collect();
        let _ = write!(out, "&compare={}", names.join(","));
    }
    for (k, v) in &link.extra {
        let _ = write!(out, "&{}={}", encode(k), encode(v));
    }
    out
}

fn int(s: &str) -> Option<u32> {
    s.trim().parse::<u32>().ok().filter(|v| *v > 0)
}

fn num(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
}

/// What the query leaves as it is: unreserved characters (RFC 3986) and commas, which
/// separate list items.
const KEPT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~').remove(b',');

/// Percent-encodes everything but unreserved characters and commas.
fn encode(s: &str) -> String {
    utf8_percent_encode(s, KEPT).to_string()
}

/// Decodes `+` (space) and `%XX` escapes; invalid escapes are kept as text, invalid UTF-8
/// becomes U+FFFD.
fn decode(s: &str) -> String {
    percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trade::recompute_text;
    use crate::units::shell_word;

    /// Issue 38: the whole step's settings ride in the link. `zero` round-trips; `gpus` and
    /// `global-batch` (as the CLI takes them) become the replicas and the microbatches, which
    /// the CLI computes the same step from.
    #[test]
    fn step_keys_round_trip_and_settle_into_replicas_and_microbatches() {
        let (link, warnings) = parse("schedule=interleaved-1f1b&devices=8&chunks=2&model=llama-3-8b&micro-batch=2&tp=8&zero=1&gpus=1536&global-batch=2304");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(link.step.zero, Some(1));
        assert_eq!((link.step.gpus, link.step.global_batch), (None, None), "settled, not kept");
        assert_eq!(link.model.dp, Some(24), "1536 GPUs / (tp 8 · 8 devices)");
        assert_eq!(link.params.microbatches, 48, "global batch 2304 / (dp 24 · micro-batch 2)");
        let query = to_query(&link);
        assert!(query.contains("&zero=1") && query.contains("dp=24") && !query.contains("gpus="), "{query}");
        assert_eq!(parse(&query).0, link);
        // The settled link computes what the CLI's flags compute.
        let spec = crate::step::StepSpec { zero: Some(1), gpus: Some(1536), global_batch: Some(2304) };
        let model = link.model.resolve().unwrap();
        let plan = spec.resolve(&model, 8, link.params.microbatches).unwrap();
        assert_eq!((plan.dp, plan.gpus, plan.global_batch, plan.zero), (24, 1536, 2304, 1));
        // Zero stage 0 is the default and is left out; beyond 3, and what cannot settle, warn.
        assert!(!to_query(&parse("model=llama-3-8b&zero=0").0).contains("zero"));
        for (query, says) in [
            ("model=llama-3-8b&zero=4", "ZeRO stage"),
            ("model=llama-3-8b&devices=4&gpus=6", "multiple of tp · devices"),
            ("model=llama-3-8b&global-batch=3&micro-batch=2", "multiple of dp · micro-batch"),
            ("gpus=64", "needs costs from a model"),
        ] {
            let (_, warnings) = parse(query);
            assert!(warnings.iter().any(|w| w.contains(says)), "{query}: {warnings:?}");
        }
    }

    /// Issue 43 item 15: a link says the MLP's kind with its size, and an old link's `ffn` (a
    /// width, SwiGLU's given as 1.5 × its intermediate size) keeps its meaning.
    #[test]
    fn an_old_links_ffn_keeps_its_meaning_and_a_new_link_names_the_mlp() {
        use crate::model::Mlp;
        let costs = |spec: &ModelSpec| spec.resolve().unwrap().derive(8).unwrap().costs();
        let preset = ModelSpec::preset("llama-3-8b");
        let model = preset.resolve().unwrap();
        assert_eq!((model.mlp, model.ffn()), (Mlp::Swiglu, 14_336), "the model card's numbers");
        // Written before `mlp`: Llama 3 8B with its MLP as a width.
        let (old, warnings) = parse("v=1&schedule=zb-v&devices=8&microbatches=32&model=llama-3-8b&ffn=21504");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(old.model.mlp, Some(Mlp::Gelu));
        assert_eq!(costs(&old.model), costs(&preset), "the same model, read the old way");
        // A new link names the kind beside the size, and reads back to the same model.
        let mut spec = preset.clone();
        spec.set(Field::Ffn, "14000").unwrap();
        let link = Permalink { model: spec.clone(), ..Permalink::default() };
        let query = to_query(&link);
        assert!(query.contains("&mlp=swiglu&ffn=14000"), "{query}");
        let (back, _) = parse(&query);
        assert_eq!(back.model.resolve().unwrap(), spec.resolve().unwrap());
        assert_eq!(back.model.resolve().unwrap().mlp_width(), 21_000.0);
        // Given explicitly, in either order.
        let (gelu, _) = parse("model=llama-3-8b&ffn=14336&mlp=gelu");
        assert_eq!(gelu.model.resolve().unwrap().mlp_width(), 14_336.0);
        let (bad, warnings) = parse("model=llama-3-8b&mlp=relu");
        assert_eq!(bad.model.mlp, None);
        assert!(warnings.iter().any(|w| w.contains("mlp must be gelu or swiglu")), "{warnings:?}");
    }

    /// Issue 43 item 16: a key no one reads is named, with the key most likely meant.
    #[test]
    fn unknown_keys_are_named_with_the_nearest_known_ones() {
        let (link, warnings) = parse("?p=8&microbatch=16&theme=dark&devcies=4&qxqxqxqx=1");
        assert!(warnings.is_empty(), "{warnings:?}");
        let said = unknown_keys(&link, &["theme", "embed"]);
        assert_eq!(said.len(), 4, "{said:?}");
        assert_eq!(said[0], "ignored p=8: no such key; did you mean devices?");
        assert_eq!(said[1], "ignored microbatch=16: no such key; did you mean microbatches or micro-batch?");
        assert_eq!(said[2], "ignored devcies=4: no such key; did you mean devices?");
        assert!(
            said[3].starts_with("ignored qxqxqxqx=1: no such key; the keys are v, schedule, devices, microbatches,"),
            "{}",
            said[3]
        );
        // Every key the codec writes is known, and view keys are the app's to read.
        let full = to_query(&Permalink { model: ModelSpec::preset("llama-3-8b"), ..Permalink::default() });
        let (link, _) = parse(&format!("{full}&theme=dark"));
        assert!(unknown_keys(&link, &["theme"]).is_empty());
        for key in keys() {
            assert!(nearest_keys(key, &keys()).contains(&key.to_string()), "{key}");
        }
    }

    #[test]
    fn round_trips_every_setting() {
        let mut link = Permalink { schedule: "interleaved-1f1b".into(), ..Permalink::default() };
        link.params = ScheduleParams {
            devices: 8,
            microbatches: 24,
            chunks: Some(3),
            group: Some(8),
            waves: Some(2),
            seq_splits: Some(4),
            a2a_overlap: true,
            costs: Costs {
                f: 18522.0,
                b: 0.1,
                w: 1e-7,
                comm: 601.0,
                links: None,
                overlap: Some(3.5),
                mem_f: 201216.0,
                mem_w: Some(73728.0),
                profile: None,
                trade: None,
                vocab: None,
                p2p: crate::params::P2p::Blocking,
                split_vocab: None,
            },
            mem_limit: Some(1609728.0),
            units: crate::units::Units::Cost,
        };
        link.compare = vec!["1f1b".into(), "zb-h1".into()];
        link.extra = vec![("theme".into(), "dark".into()), ("note".into(), "a&b c/d".into())];
        let q = to_query(&link);
        let (back, warnings) = parse(&format!("?{q}"));
        assert_eq!(warnings, Vec::<String>::new());
        assert_eq!(back, link);
    }

    #[test]
    fn vocabulary_shard_keys_round_trip_as_the_cli_reads_its_flags() {
        // `s` alone: T twice S, a barrier of one hop, whichever key comes first.
        let (link, warnings) = parse("schedule=vocab-1&vocab-s=0.5&comm=0.25");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(link.params.costs.vocab, Some(VocabCosts::output(0.5, 1.0, 0.25)));
        assert_eq!(
            link.params.costs.vocab,
            VocabCosts::from_shards(Some(0.5), None, None, 0.25),
            "the CLI's --s 0.5 --comm 0.25"
        );
        let (back, _) = parse(&to_query(&link));
        assert_eq!(back, link);
        let (link, _) = parse("schedule=v-half-vocab&vocab-t=3&vocab-s=1");
        assert_eq!(link.params.costs.vocab, Some(VocabCosts::output(1.0, 3.0, 0.0)));
        assert!(to_query(&link).contains("&vocab-s=1&vocab-t=3"), "{}", to_query(&link));
        let (_, warnings) = parse("vocab-s=-1&vocab-t=x");
        assert_eq!(
            warnings,
            vec!["ignored vocab-s=-1: expected a number ≥ 0", "ignored vocab-t=x: expected a number ≥ 0"]
        );
        // `t` stays the playback cursor's: a view key the app reads.
        let (link, _) = parse("schedule=v-half-vocab&t=12");
        assert_eq!((link.params.costs.vocab, link.extra("t")), (None, Some("12")));
        // Without either, no vocabulary layer.
        assert_eq!(parse("schedule=vocab-1").0.params.costs.vocab, None);
    }

    #[test]
    fn send_mode_key_round_trips_as_the_cli_reads_p2p() {
        let (link, warnings) = parse("schedule=1f1b&p2p=blocking");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(link.params.costs.p2p, P2p::Blocking);
        assert!(to_query(&link).ends_with("&p2p=blocking"), "{}", to_query(&link));
        assert_eq!(parse(&to_query(&link)).0, link);
        // async is the default and is left out; either name is read.
        let (link, _) = parse("schedule=1f1b&p2p=async");
        assert_eq!(link.params.costs.p2p, P2p::Async);
        assert!(!to_query(&link).contains("p2p"), "{}", to_query(&link));
        let (link, warnings) = parse("p2p=sync");
        assert_eq!(link.params.costs.p2p, P2p::Async);
        assert_eq!(warnings, vec!["ignored p2p=sync: expected async or blocking"]);
        // With a model the costs come from it, and the send mode stays the link's.
        let (link, warnings) = parse("schedule=1f1b&devices=4&model=zb-1.5b&p2p=blocking");
        assert!(warnings.is_empty(), "{warnings:?}");
        let params = link.settings().effective_params().expect("model costs");
        assert_eq!(params.costs.p2p, P2p::Blocking);
    }

    #[test]
    fn defaults_are_left_out_and_order_is_fixed() {
        assert_eq!(to_query(&Permalink::default()), "v=1&schedule=1f1b&devices=4&microbatches=8");
    }

    #[test]
    fn bad_values_warn_and_keep_defaults() {
        let (link, warnings) = parse("devices=0&microbatches=lots&f=-1&mem-limit=NaN&v=99&schedule=zb-h1&%zz=1");
        assert_eq!(link.params.devices, 4);
        assert_eq!(link.params.microbatches, 8);
        assert_eq!(link.params.costs.f, 1.0);
        assert_eq!(link.params.mem_limit, None);
        assert_eq!(link.schedule, "zb-h1");
        assert_eq!(
            warnings,
            vec![
                "ignored devices=0: expected a positive integer",
                "ignored microbatches=lots: expected a positive integer",
                "ignored f=-1: expected a number ≥ 0, or one per device (4,4,4,6)",
                "ignored mem-limit=NaN: expected a number ≥ 0, or a size like 80GiB with a model",
                "ignored v=99: expected a format version up to 1",
            ]
        );
    }

    #[test]
    fn shell_words_survive_any_text() {
        // Text no shell reads stays as it is; anything else (the empty word too) is
        // single-quoted, a quote inside closed, escaped and reopened.
        let cases = [
            ("zb-1.5b", "zb-1.5b"),
            ("Et|tL", "'Et|tL'"),
            ("x;touch /tmp/pwned;", "'x;touch /tmp/pwned;'"),
            ("it's", "'it'\\''s'"),
            ("", "''"),
        ];
        for (text, word) in cases {
            assert_eq!(shell_word(text), word, "{text}");
        }
        let (link, _) = parse("schedule=x%3Btouch%20%2Ftmp%2Fp%3B&devices=2");
        assert!(link.settings().cli_command().starts_with("bubblescope simulate -s 'x;touch /tmp/p;' -p 2"));
    }

    #[test]
    fn gpu_and_efficiency_keys_round_trip_and_drive_the_costs() {
        let q = "schedule=zb-h1&devices=16&microbatches=32&model=zb-14.6b&gpu=h100-sxm&gpus-per-node=4&gemm-efficiency=0.7&memory-efficiency=0.55";
        let (link, warnings) = parse(q);
        assert_eq!(warnings, Vec::<String>::new());
        let m = &link.model;
        assert_eq!((m.gpu.as_deref(), m.gpus_per_node), (Some("h100-sxm"), Some(4)));
        assert_eq!((m.gemm_efficiency, m.memory_efficiency), (Some(0.7), Some(0.55)));
        let (back, _) = parse(&to_query(&link));
        assert_eq!(back, link);
        assert!(to_query(&link).contains("&gpu=h100-sxm&gpus-per-node=4&gemm-efficiency=0.7&memory-efficiency=0.55"));
        let d = link.settings().derived().unwrap().unwrap();
        assert_eq!((d.gpu.key, d.efficiency.gemm, d.hops.nodes), ("h100-sxm", 0.7, 4));
        // Bad values warn and keep the rest: an unknown GPU names the closest, an efficiency
        // outside (0, 1] is refused.
        let (link, warnings) = parse("model=zb-1.5b&gpu=a100&gemm-efficiency=1.5&memory-efficiency=0.6");
        assert_eq!(link.model.gpu, None);
        assert_eq!((link.model.gemm_efficiency, link.model.memory_efficiency), (None, Some(0.6)));
        assert_eq!(
            warnings,
            vec![
                "ignored gpu=a100: unknown gpu `a100`",
                "ignored gemm-efficiency=1.5: gemm-efficiency must be above 0 and at most 1, found 1.5"
            ]
        );
        assert!(!parse("calibrate=1,2,3").0.model.given(), "a calibration is not a link key");
    }

    #[test]
    fn cost_lists_and_model_keys_round_trip_and_drive_the_costs() {
        let (link, warnings) = parse("schedule=1f1b&devices=4&f=1,1,1,3&mem-f=2&comm=0.5");
        assert_eq!(warnings, Vec::<String>::new());
        let profile = link.params.costs.profile.clone().unwrap();
        assert_eq!(profile.f, vec![1.0, 1.0, 1.0, 3.0]);
        assert_eq!(profile.mem_w, vec![1.0; 4]);
        let (back, _) = parse(&to_query(&link));
        assert_eq!(back, link);

        let q = "devices=8&model=llama-3-8b&seq=4096&layout=Et*3%7Ct*4%7Ct*4%7Ct*4%7Ct*4%7Ct*4%7Ct*4%7Ct*5L&mem-limit=80GiB";
        let (link, warnings) = parse(q);
        assert_eq!(warnings, Vec::<String>::new());
        assert_eq!(link.model.seq, Some(4096));
        assert_eq!(link.params.mem_limit, Some(80.0 * 1_073_741_824.0));
        let (back, _) = parse(&to_query(&link));
        assert_eq!(back, link);
        // The model drives the costs; the hand-set ones stay in the link.
        let settings = link.settings();
        let derived = settings.model.resolve().unwrap().derive(8).unwrap();
        assert_eq!(settings.effective_params().unwrap().costs, derived.costs());
        assert_eq!(settings.params.costs, Costs::default());
    }

    #[test]
    fn a_files_per_layer_costs_survive_a_link_as_per_device_lists() {
        // Costs read from a model-exported file, set by hand: 18 pieces (16 layers, the
        // embedding and the LM head) and finer cuts; the link writes each device's share.
        let costs = crate::model::ModelSpec::preset("llama-3.2-1b").resolve().unwrap().derive(8).unwrap().costs();
        assert!(!CostLists::exact(&costs, 8));
        let link = Permalink {
            schedule: "1f1b".into(),
            params: ScheduleParams::new(8, 16).with_costs(costs.clone()),
            ..Permalink::default()
        };
        let (back, warnings) = parse(&to_query(&link));
        assert_eq!(warnings, Vec::<String>::new());
        assert!(CostLists::exact(&back.params.costs, 8), "per-device lists say all of themselves");
        // One stage per device: the same run, up to the order of floating sums.
        let cost =
            |c: &Costs| crate::run("1f1b", &ScheduleParams::new(8, 16).with_costs(c.clone())).unwrap().stats.cost;
        let (a, b) = (cost(&costs), cost(&back.params.costs));
        assert!((a - b).abs() <= 1e-9 * a, "{a} vs {b}");
        // The LM head's share stays the heaviest (a link of scalars would spread it evenly).
        let f = &back.params.costs.profile.as_ref().unwrap().f;
        assert!(f[7] > 2.0 * f[1], "{f:?}");
        assert!(link.settings().cli_command().contains(" --f "), "{}", link.settings().cli_command());
    }

    #[test]
    fn bad_lists_and_model_values_warn_and_keep_the_rest() {
        let (link, warnings) = parse("devices=4&f=1,2,3&layers=0&model=gpt-17&mem-limit=80GiB&w=1,,2");
        assert_eq!(link.params.costs, Costs::default());
        assert!(!link.model.given());
        assert_eq!(link.params.mem_limit, None);
        assert_eq!(warnings.len(), 5, "{warnings:?}");
        assert!(warnings[0].starts_with("ignored layers=0"), "{warnings:?}");
        assert!(warnings[1].contains("unknown model preset"), "{warnings:?}");
        assert!(warnings[2].starts_with("ignored w=1,,2"), "{warnings:?}");
        assert!(warnings[3].contains("f lists 3 numbers, expected 4"), "{warnings:?}");
        assert!(warnings[4].contains("sizes with units need a model"), "{warnings:?}");
    }

    #[test]
    fn trade_keys_round_trip_and_are_priced_as_the_cli_prices_its_flags() {
        let q =
            "schedule=1f1b&devices=4&microbatches=8&mem-f=2&recompute=full,none,none,none&offload=auto&copy-time=0.5";
        let (link, warnings) = parse(q);
        assert_eq!(warnings, Vec::<String>::new());
        let t = &link.trade;
        assert_eq!(recompute_text(&t.recompute), "full,none,none,none");
        assert_eq!((t.offload.clone(), t.copy_time, t.host_gbps), (Offload::Auto, Some(0.5), None));
        let query = to_query(&link);
        assert!(query.ends_with("&recompute=full,none,none,none&offload=auto&copy-time=0.5"), "{query}");
        assert_eq!(parse(&query).0, link);
        let command = link.settings().cli_command();
        assert!(
            command.ends_with(" --mem-f 2 --recompute full,none,none,none --offload auto --copy-time 0.5"),
            "{command}"
        );
        // Plain costs: the copy time over mem-f is the time one unit takes.
        let trade = link.settings().effective_params().unwrap().costs.trade.unwrap();
        assert_eq!(
            (trade.copy_time, trade.recompute_of(0), trade.recompute_of(1)),
            (Some(0.25), Recompute::Full, Recompute::None)
        );

        // One mode, fractions, a model's host link; `none` is the default and left out.
        let q = "devices=4&model=zb-1.5b&recompute=selective&offload=0.5&host-gbps=25";
        let (link, warnings) = parse(q);
        assert_eq!(warnings, Vec::<String>::new());
        assert_eq!(parse(&to_query(&link)).0, link);
        assert!(to_query(&link).contains("&recompute=selective&offload=0.5&host-gbps=25"));
        let trade = link.settings().effective_params().unwrap().costs.trade.unwrap();
        assert_eq!(trade.copy_time, Some(1e-3 / 25.0));
        assert_eq!(parse("recompute=none&offload=none").0, Permalink::default());
    }

    #[test]
    fn bad_trade_values_warn_or_fail_at_their_setting() {
        let (link, warnings) = parse("recompute=most&offload=half&copy-time=-1");
        assert_eq!(link.trade, TradeSettings::default());
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].starts_with("ignored recompute=most: unknown recompute `most`"), "{warnings:?}");
        assert!(warnings[1].starts_with("ignored offload=half"), "{warnings:?}");
        // Values that parse but do not fit the settings fail where the CLI fails, with its hint.
        let cases = [
            ("recompute=selective", Field::Recompute),
            ("recompute=full,none", Field::Recompute),
            ("offload=auto", Field::CopyTime),
            ("offload=auto&host-gbps=20", Field::HostGbps),
            ("model=zb-1.5b&offload=auto&copy-time=1", Field::CopyTime),
        ];
        // A copy time alone prices the copies of a schedule read from a file, and trades nothing.
        let priced = parse("copy-time=1").0.settings().effective_params().unwrap();
        let trade = priced.costs.trade.expect("a rate");
        assert!(trade.is_none() && trade.copy_time == Some(1.0));
        for (q, field) in cases {
            let e = parse(q).0.settings().effective_params().unwrap_err();
            assert_eq!(e.field, field, "{q}: {e}");
            assert!(e.to_string().contains("hint:"), "{q}: {e}");
        }
    }

    #[test]
    fn decoding_never_panics_on_truncated_escapes() {
        for q in ["%", "%4", "a=%", "a=%4", "a=%%%", "compare=,,,", "=", "&&&"] {
            let _ = parse(q);
        }
        assert_eq!(decode("a%20b+c%2"), "a b c%2");
    }

    proptest::proptest! {
        /// Any text survives a link: encoded, it holds no character a query reads (`&`, `=`,
        /// `+`, `#`, space), and it decodes back to itself.
        #[test]
        fn any_text_encodes_and_decodes_back(text in "\\PC*") {
            let encoded = encode(&text);
            proptest::prop_assert!(!encoded.contains(['&', '=', '+', '#', ' ', '?']), "{}", encoded);
            proptest::prop_assert_eq!(decode(&encoded), text);
        }
    }
}
