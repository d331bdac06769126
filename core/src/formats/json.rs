//! Bubblescope's own JSON schedule format, version 1 (the schema is in the
//! [module docs](super)).

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::params::{CostProfile, Costs, VocabCosts, MAX_DEVICES, MAX_PASSES};
use crate::schedule::{CopyKind, CopyOp, CopySlot, Op, Pass, PassKind, Placement, PlacementKind, Schedule, VocabSplit};
use crate::sim::PerOpTimes;

use super::check::{self, Draft};
use super::text::{quote, sanitize_to, warning, Diagnostics, Source};
use super::Imported;

/// The value of the `format` field.
pub const JSON_FORMAT: &str = "bubblescope-schedule";
/// The version this crate writes and reads.
pub const JSON_VERSION: u64 = 1;

/// The hint for a file that is not the shape of a Bubblescope schedule: what the shape is, and
/// how to see one.
pub(super) const SHAPE_HINT: &str = "a Bubblescope schedule is the object `simulate --export FILE.json` writes: format, version, placement, microbatches, slices, orders and costs (docs/formats.md has every field)";

const FIELDS: [&str; 10] =
    ["format", "version", "placement", "microbatches", "slices", "costs", "orders", "copies", "times", "vocab"];

/// A cost: written as a JSON number when every JSON reader gets it back bit for bit, else as a
/// string holding the number.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Number(f64);

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let exact = self.0.is_finite()
            && serde_json::to_string(&self.0)
                .ok()
                .and_then(|text| serde_json::from_str::<f64>(&text).ok())
                .is_some_and(|back| back.to_bits() == self.0.to_bits());
        if exact {
            serializer.serialize_f64(self.0)
        } else {
            // Rust prints the shortest text that parses back to the same bits.
            serializer.serialize_str(&self.0.to_string())
        }
    }
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Number, D::Error> {
        struct NumberVisitor;
        impl Visitor<'_> for NumberVisitor {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number, or a string holding a number")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Number, E> {
                // −0 reads as 0: a cost has no sign to keep.
                Ok(Number(v + 0.0))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Number, E> {
                Ok(Number(v as f64))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Number, E> {
                Ok(Number(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Number, E> {
                v.trim()
                    .parse::<f64>()
                    .map(|v| Number(v + 0.0))
                    .map_err(|_| E::custom(format!("expected a number, found the string {}", quote(v))))
            }
        }
        deserializer.deserialize_any(NumberVisitor)
    }
}

/// The `placement` object.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlacementJson {
    kind: String,
    devices: u32,
    stages_per_pipeline: u32,
    stage_device: Vec<u32>,
}

/// The `costs` object.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object with f, b, w, comm, overlap, mem_f and mem_w")]
struct CostsJson {
    f: Number,
    b: Number,
    w: Number,
    comm: Number,
    overlap: Option<Number>,
    mem_f: Number,
    mem_w: Option<Number>,
    /// Per-piece costs; left out when every piece costs the same (files stay as they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    profile: Option<ProfileJson>,
    /// The vocabulary shards' times; left out when the model has no vocabulary split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vocab: Option<VocabCostsJson>,
    /// The time one unit of memory (mem-f's; a byte with a model) takes to copy between device
    /// and host: what times the `copies` without a slot. Written only with copies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    copy_time: Option<Number>,
    /// How sends behave (`--p2p`): written only when blocking (`"blocking"`), so async files
    /// stay as they were; missing reads as async.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p2p: Option<P2pJson>,
}

/// The `costs.p2p` value: `--p2p`'s names.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum P2pJson {
    Async,
    Blocking,
}

/// The `costs.vocab` object: one shard's S, T, IF and IB times and one barrier's.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object with s, t, input_f, input_b and reduce")]
struct VocabCostsJson {
    s: Number,
    t: Number,
    input_f: Number,
    input_b: Number,
    reduce: Number,
}

/// The `vocab` object: how the schedule splits the vocabulary layers.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object with barriers (1 or 2) and side_stream (true or false)")]
struct VocabSplitJson {
    barriers: u32,
    side_stream: bool,
}

/// The `costs.profile` object: one list per cost, one number per piece of the model.
#[derive(Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an object of five lists, f, b, w, mem_f and mem_w, and optionally finer (more such objects)"
)]
struct ProfileJson {
    f: Vec<Number>,
    b: Vec<Number>,
    w: Vec<Number>,
    mem_f: Vec<Number>,
    mem_w: Vec<Number>,
    /// The all-to-all inside each piece's forward and input gradient ([`CostProfile::a2a_f`]);
    /// left out without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    a2a_f: Vec<Number>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    a2a_b: Vec<Number>,
    /// The same model cut at whole layers into more pieces ([`CostProfile::finer`]); left out
    /// when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    finer: Vec<ProfileJson>,
}

impl From<&CostProfile> for ProfileJson {
    fn from(p: &CostProfile) -> ProfileJson {
        let list = |v: &[f64]| v.iter().copied().map(Number).collect();
        ProfileJson {
            f: list(&p.f),
            b: list(&p.b),
            w: list(&p.w),
            mem_f: list(&p.mem_f),
            mem_w: list(&p.mem_w),
            // Both lists or neither: only an all-to-all that takes time is written (a dense
            // model's zeros are not).
            a2a_f: if p.has_a2a() { (0..p.pieces()).map(|i| Number(p.a2a_of(i)[0])).collect() } else { Vec::new() },
            a2a_b: if p.has_a2a() { (0..p.pieces()).map(|i| Number(p.a2a_of(i)[1])).collect() } else { Vec::new() },
            finer: p.finer.iter().map(|f| ProfileJson::from(&**f)).collect(),
        }
    }
}

impl From<ProfileJson> for CostProfile {
    fn from(p: ProfileJson) -> CostProfile {
        let list = |v: Vec<Number>| v.into_iter().map(|n| n.0).collect();
        CostProfile {
            f: list(p.f),
            b: list(p.b),
            w: list(p.w),
            mem_f: list(p.mem_f),
            mem_w: list(p.mem_w),
            a2a_f: list(p.a2a_f),
            a2a_b: list(p.a2a_b),
            finer: p.finer.into_iter().map(|f| Arc::new(CostProfile::from(f))).collect(),
        }
    }
}

impl From<&Costs> for CostsJson {
    fn from(c: &Costs) -> CostsJson {
        CostsJson {
            f: Number(c.f),
            b: Number(c.b),
            w: Number(c.w),
            comm: Number(c.comm),
            overlap: c.overlap.map(Number),
            mem_f: Number(c.mem_f),
            mem_w: c.mem_w.map(Number),
            profile: c.profile.as_deref().map(ProfileJson::from),
            vocab: c.vocab.map(|v| VocabCostsJson {
                s: Number(v.s),
                t: Number(v.t),
                input_f: Number(v.input_f),
                input_b: Number(v.input_b),
                reduce: Number(v.reduce),
            }),
            copy_time: c.trade.as_deref().and_then(|t| t.copy_time).map(Number),
            p2p: (!c.p2p.is_async()).then_some(P2pJson::Blocking),
        }
    }
}

impl From<CostsJson> for Costs {
    fn from(c: CostsJson) -> Costs {
        // A file's copy rate alone: its copies hold their R passes and copies already.
        let trade = c.copy_time.map(|t| Arc::new(crate::trade::Trade { copy_time: Some(t.0), ..Default::default() }));
        Costs {
            trade,
            f: c.f.0,
            b: c.b.0,
            w: c.w.0,
            comm: c.comm.0,
            links: None,
            overlap: c.overlap.map(|n| n.0),
            mem_f: c.mem_f.0,
            mem_w: c.mem_w.map(|n| n.0),
            profile: c.profile.map(|p| Arc::new(CostProfile::from(p))),
            vocab: c.vocab.map(|v| VocabCosts {
                s: v.s.0,
                t: v.t.0,
                input_f: v.input_f.0,
                input_b: v.input_b.0,
                reduce: v.reduce.0,
            }),
            p2p: match c.p2p {
                Some(P2pJson::Blocking) => crate::params::P2p::Blocking,
                Some(P2pJson::Async) | None => crate::params::P2p::Async,
            },
            split_vocab: None,
        }
    }
}

/// Writes `schedule` (and the costs it was made for, if any) as Bubblescope JSON.
///
/// The layout is fixed and diff-friendly: one line per top-level field and one line per
/// device's order.
pub fn export_json(schedule: &Schedule, costs: Option<&Costs>) -> String {
    export_json_timed(schedule, costs, None)
}

/// [`export_json`] with the times a measured run took per op (`times`, one list per device
/// parallel to its order: `lead`, `duration`, `hop`), so the file reads back to the same run.
pub fn export_json_timed(schedule: &Schedule, costs: Option<&Costs>, times: Option<&PerOpTimes>) -> String {
    let placement = &schedule.placement;
    let placement = PlacementJson {
        kind: placement.kind().name().to_string(),
        devices: placement.devices(),
        stages_per_pipeline: placement.stages_per_pipeline(),
        stage_device: placement.stage_devices().to_vec(),
    };
    let mut out = String::new();
    out.push_str("{\n");
    out.push_str(&format!("  \"format\": {},\n", json(&JSON_FORMAT)));
    out.push_str(&format!("  \"version\": {JSON_VERSION},\n"));
    out.push_str(&format!("  \"placement\": {},\n", json(&placement)));
    out.push_str(&format!("  \"microbatches\": {},\n", schedule.microbatches));
    out.push_str(&format!("  \"slices\": {},\n", schedule.slices.max(1)));
    let costs = costs.map(|c| CostsJson {
        // The copy rate times the copies, so it goes with them (and only with them).
        copy_time: CostsJson::from(c).copy_time.filter(|_| schedule.has_copies()),
        ..CostsJson::from(c)
    });
    out.push_str(&format!("  \"costs\": {},\n", json(&costs)));
    out.push_str("  \"orders\": [");
    for (device, order) in schedule.orders.iter().enumerate() {
        out.push_str(if device == 0 { "\n    [" } else { ",\n    [" });
        for (i, op) in order.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push('"');
            out.push_str(&op_text(op, schedule.slices));
            out.push('"');
        }
        out.push(']');
    }
    out.push_str(if schedule.orders.is_empty() { "]" } else { "\n  ]" });
    if let Some(v) = schedule.vocab {
        let split = VocabSplitJson { barriers: v.barriers, side_stream: v.side_stream };
        out.push_str(&format!(",\n  \"vocab\": {}", json(&split)));
    }
    if schedule.has_copies() {
        out.push_str(",\n  \"copies\": [");
        for (device, copies) in schedule.copies.iter().enumerate() {
            out.push_str(if device == 0 { "\n    [" } else { ",\n    [" });
            for (i, c) in copies.iter().enumerate() {
                let mut text = format!("{} {} @{}", c.kind.name(), pass_text(c.pass, schedule.slices), c.at);
                if let Some(slot) = c.slot {
                    // Rust's shortest form: reads back to the same f64.
                    text.push_str(&format!(" from {} for {}", slot.start, slot.time));
                }
                out.push_str(if i == 0 { "\"" } else { ", \"" });
                out.push_str(&text);
                out.push('"');
            }
            out.push(']');
        }
        out.push_str("\n  ]");
    }
    if let Some(times) = times {
        out.push_str(",\n  \"times\": {");
        let lists = [("lead", &times.leads), ("duration", &times.durations), ("hop", &times.hops)];
        for (i, (name, lists)) in lists.into_iter().enumerate() {
            out.push_str(if i == 0 { "\n    " } else { ",\n    " });
            out.push_str(&format!("\"{name}\": ["));
            for (device, list) in lists.iter().enumerate() {
                let numbers: Vec<Number> = list.iter().copied().map(Number).collect();
                out.push_str(if device == 0 { "\n      " } else { ",\n      " });
                out.push_str(&json(&numbers));
            }
            out.push_str(if lists.is_empty() { "]" } else { "\n    ]" });
        }
        if !times.starts.is_empty() {
            let numbers: Vec<Number> = times.starts.iter().copied().map(Number).collect();
            out.push_str(&format!(",\n    \"start\": {}", json(&numbers)));
        }
        out.push_str("\n  }");
    }
    out.push_str("\n}\n");
    out
}

/// The `times` object of a measured run.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object of three lists of lists (lead, duration and hop) and a list start")]
struct TimesJson {
    lead: Vec<Vec<Number>>,
    duration: Vec<Vec<Number>>,
    hop: Vec<Vec<Number>>,
    /// When each device began its first pass (files written before it have none).
    #[serde(default)]
    start: Vec<Number>,
}

/// Reads `times`, checked against the schedule it times: one number per op, finite, and
/// durations and leads not negative. A problem drops the times with a warning (the schedule
/// still reads, at its costs).
fn take_times(
    map: &mut Map<String, Value>,
    schedule: &Schedule,
    source: &Source,
    out: &mut Diagnostics,
) -> Option<PerOpTimes> {
    let value = map.remove("times")?;
    let times: TimesJson = match serde_json::from_value(value) {
        Ok(t) => t,
        Err(e) => {
            out.push(warning(
                source
                    .error(format!("times: {}", sanitize_long(&e.to_string())))
                    .hint("the times are ignored: the schedule runs at its costs"),
            ));
            return None;
        }
    };
    let list = |v: Vec<Vec<Number>>| v.into_iter().map(|l| l.into_iter().map(|n| n.0).collect()).collect();
    let times = PerOpTimes {
        leads: list(times.lead),
        durations: list(times.duration),
        hops: list(times.hop),
        starts: times.start.into_iter().map(|n| n.0).collect(),
    };
    let problem = if !times.fits(schedule) {
        Some(
            "lead, duration and hop must each have one number per op of every device's order, and start one per device"
                .to_string(),
        )
    } else if times
        .durations
        .iter()
        .chain(&times.leads)
        .chain([&times.starts])
        .flatten()
        .any(|v| !(v.is_finite() && *v >= 0.0))
    {
        Some("durations, leads and starts must be finite and not negative".to_string())
    } else if times.hops.iter().flatten().any(|v| !v.is_finite()) {
        Some("hops must be finite".to_string())
    } else {
        None
    };
    if let Some(problem) = problem {
        out.push(warning(
            source.error(format!("times: {problem}")).hint("the times are ignored: the schedule runs at its costs"),
        ));
        return None;
    }
    Some(times)
}

/// Compact JSON for the plain field types above, whose serialisation cannot fail.
fn json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}

/// An op in the JSON grammar: `0F1`, `3BW2`, `0F1.2` (slice 2), `(3F1;3BW0)`.
pub(super) fn op_text(op: &Op, slices: u32) -> String {
    match op {
        Op::One(p) => pass_text(*p, slices),
        Op::Pair(f, b) => format!("({};{})", pass_text(*f, slices), pass_text(*b, slices)),
    }
}

/// A pass in the JSON grammar: `0F1`, or `0F1.2` (slice 2) when the schedule has slices.
pub(super) fn pass_text(pass: Pass, slices: u32) -> String {
    if slices > 1 {
        format!("{}{}{}.{}", pass.stage, pass.kind.name(), pass.microbatch, pass.slice)
    } else {
        format!("{}{}{}", pass.stage, pass.kind.name(), pass.microbatch)
    }
}

const OP_HINT: &str = "an op is `<stage><kind><microbatch>` with kind F, B, W, BW or R, e.g. `0F1` or `3BW2`, \
                       `.<slice>` after it for split sequences, or a pair `(3F1;3BW0)`; S, T, IF and IB take \
                       a vocabulary shard (the device's number) for the stage, e.g. `2S0`";

const COPY_HINT: &str = "a copy is `offload <forward> @<position>` or `reload <forward> @<position>`, e.g. \
                         `offload 0F3 @4`: the forward whose activation moves, and where in the device's order \
                         it is issued; `from <start> for <time>` after it gives its slot, e.g. \
                         `offload 0F3 @4 from 12.5 for 0.7`";

/// Reads one copy: `offload 0F3 @4`, or with its slot `offload 0F3 @4 from 12.5 for 0.7`.
fn parse_copy(text: &str) -> Result<CopyOp, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let (kind, pass, at, slot) = match words.as_slice() {
        [kind, pass, at] => (kind, pass, at, None),
        [kind, pass, at, from, start, word, time] => {
            let number = |keyword: &str, found: &str, value: &str| {
                if found != keyword {
                    return Err(format!("expected {} in the slot, found {}", quote(keyword), quote(found)));
                }
                value.parse::<f64>().map_err(|_| format!("expected a number after {keyword}, found {}", quote(value)))
            };
            let slot = CopySlot { start: number("from", from, start)?, time: number("for", word, time)? };
            (kind, pass, at, Some(slot))
        }
        _ => return Err(format!("expected three words, or seven with a slot, found {}", words.len())),
    };
    let kind = CopyKind::ALL
        .into_iter()
        .find(|k| k.name() == *kind)
        .ok_or_else(|| format!("unknown copy {}, expected offload or reload", quote(kind)))?;
    let pass = parse_pass(pass)?;
    if pass.kind != PassKind::F {
        return Err(format!("a copy moves a forward's activation, found a {}", pass.kind.long_name()));
    }
    let at = at
        .strip_prefix('@')
        .and_then(|n| n.parse::<u32>().ok())
        .ok_or_else(|| format!("expected a position such as @4, found {}", quote(at)))?;
    Ok(CopyOp { kind, pass, at, slot })
}

/// Removes `copies` from `map` and reads it: one list per device (none when missing).
fn take_copies(
    map: &mut Map<String, Value>,
    schedule: &Schedule,
    source: &Source,
    out: &mut Diagnostics,
) -> Vec<Vec<CopyOp>> {
    let Some(value) = map.remove("copies") else { return Vec::new() };
    let lists: Vec<Vec<String>> = match serde_json::from_value(value) {
        Ok(v) => v,
        Err(e) => {
            out.push(source.error(format!("copies: {}", sanitize_long(&e.to_string()))).hint(COPY_HINT));
            return Vec::new();
        }
    };
    if lists.len() != schedule.orders.len() {
        out.push(
            source
                .error(format!("copies has {} devices, but the schedule has {}", lists.len(), schedule.orders.len()))
                .hint("give one list of copies per device, empty where a device copies nothing"),
        );
        return Vec::new();
    }
    let mut copies = Vec::with_capacity(lists.len());
    for (device, list) in lists.into_iter().enumerate() {
        let mut row = Vec::with_capacity(list.len());
        for (i, text) in list.iter().enumerate() {
            match parse_copy(text) {
                Ok(c) => row.push(c),
                Err(why) => out.push(
                    source
                        .error(format!("device {device}, copy {i}: cannot read {}: {why}", quote(text)))
                        .hint(COPY_HINT)
                        .hint("the copy is skipped"),
                ),
            }
        }
        copies.push(row);
    }
    copies
}

/// Reads one op.
fn parse_op(text: &str) -> Result<Op, String> {
    if let Some(inner) = text.strip_prefix('(') {
        let Some(inner) = inner.strip_suffix(')') else {
            return Err("the `(` is never closed".to_string());
        };
        let parts: Vec<&str> = inner.split(';').collect();
        let [f, b] = parts.as_slice() else {
            return Err(format!("a pair holds two passes, found {}", parts.len()));
        };
        let (f, b) = (parse_pass(f)?, parse_pass(b)?);
        if f.kind != PassKind::F || !b.kind.is_input_grad() {
            return Err(format!(
                "a pair is a forward and then a backward (B or BW), found {} and {}",
                f.kind.name(),
                b.kind.name()
            ));
        }
        return Ok(Op::Pair(f, b));
    }
    parse_pass(text).map(Op::One)
}

/// Reads one pass: `<stage><kind><microbatch>[.<slice>]`.
fn parse_pass(text: &str) -> Result<Pass, String> {
    let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let number = |s: &str| s.parse::<u32>().map_err(|_| format!("the number {} is too large", quote(s)));
    let n = digits(text);
    if n == 0 {
        return Err(format!("expected a stage number at {}", quote(text)));
    }
    let stage = number(&text[..n])?;
    let rest = &text[n..];
    let k = rest.find(|c: char| !c.is_ascii_uppercase()).unwrap_or(rest.len());
    let kind = match &rest[..k] {
        "F" => PassKind::F,
        "B" => PassKind::B,
        "W" => PassKind::W,
        "BW" => PassKind::BW,
        "R" => PassKind::R,
        "S" => PassKind::S,
        "T" => PassKind::T,
        "IF" => PassKind::IF,
        "IB" => PassKind::IB,
        "" => return Err(format!("expected a kind (F, B, W, BW, R, S, T, IF or IB) after the stage number {stage}")),
        other => return Err(format!("unknown kind {}, expected F, B, W, BW, R, S, T, IF or IB", quote(other))),
    };
    let rest = &rest[k..];
    let n = digits(rest);
    if n == 0 {
        return Err(format!("expected a microbatch number after `{stage}{}`", kind.name()));
    }
    let microbatch = number(&rest[..n])?;
    let rest = &rest[n..];
    let slice = match rest.strip_prefix('.') {
        None if rest.is_empty() => 0,
        Some(s) if !s.is_empty() && digits(s) == s.len() => number(s)?,
        _ => return Err(format!("unexpected {} after `{stage}{}{microbatch}`", quote(rest), kind.name())),
    };
    Ok(Pass { kind, stage, microbatch, slice })
}

/// Parses `text` as serde_json does, refusing an object that gives a key twice (serde_json
/// keeps the last silently) at any depth: the error names the key and where it is (`costs`,
/// `orders[2]`), with serde_json's line and column.
pub(crate) fn parse_unique(text: &str) -> Result<Value, serde_json::Error> {
    use serde::de::DeserializeSeed as _;
    let mut reader = serde_json::Deserializer::from_str(text);
    let value = At { step: None, up: None }.deserialize(&mut reader)?;
    reader.end()?;
    Ok(value)
}

/// A value at a place in the document, read with unique keys: its step from the value
/// holding it (none at the top level), and that value.
#[derive(Clone, Copy)]
struct At<'a> {
    step: Option<Step<'a>>,
    up: Option<&'a At<'a>>,
}

#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

impl At<'_> {
    /// Where the value is, for messages: `in the top-level object`, `in costs.profile`.
    fn place(&self) -> String {
        let mut steps = Vec::new();
        let mut at = Some(self);
        while let Some(a) = at {
            if let Some(step) = a.step {
                steps.push(step);
            }
            at = a.up;
        }
        if steps.is_empty() {
            return "in the top-level object".to_string();
        }
        let mut path = String::new();
        for step in steps.iter().rev() {
            match step {
                Step::Key(k) if path.is_empty() => path.push_str(&sanitize_to(k, 40)),
                Step::Key(k) => {
                    path.push('.');
                    path.push_str(&sanitize_to(k, 40));
                }
                Step::Index(i) => path.push_str(&format!("[{i}]")),
            }
        }
        format!("in {path}")
    }
}

impl<'de> de::DeserializeSeed<'de> for At<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for At<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(At { step: Some(Step::Index(items.len())), up: Some(&self) })? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("the key {} appears twice {}", quote(&key), self.place())));
            }
            let value = map.next_value_seed(At { step: Some(Step::Key(&key)), up: Some(&self) })?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// Reads Bubblescope JSON.
pub(super) fn import(text: &str, source: &Source) -> Imported {
    let mut out = Diagnostics::default();
    let fail = |out: Diagnostics| Imported { schedule: None, costs: None, times: None, diagnostics: out.finish() };
    // A UTF-8 byte-order mark is allowed, as in CSV files (editors on Windows write one).
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        out.push(source.error("the file is empty: it holds no schedule").hint(SHAPE_HINT));
        return fail(out);
    }
    let value: Value = match parse_unique(text) {
        Ok(v) => v,
        // A key given twice: valid JSON syntax, but one of the two values would be lost.
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            out.push(source.error(sanitize_long(&e.to_string())).hint(
                "keep one of the two: readers differ in which they take (serde_json the last, others the first)",
            ));
            return fail(out);
        }
        Err(e) => {
            out.push(
                source.error(format!("the file is not valid JSON: {}", sanitize_long(&e.to_string()))).hint(SHAPE_HINT),
            );
            return fail(out);
        }
    };
    let Value::Object(mut map) = value else {
        out.push(
            source
                .error(format!("expected a JSON object with \"format\": \"{JSON_FORMAT}\", found {}", kind_of(&value)))
                .hint(SHAPE_HINT),
        );
        return fail(out);
    };
    match map.get("format") {
        Some(Value::String(f)) if f == JSON_FORMAT => {}
        Some(other) => {
            let found = other.as_str().map_or_else(|| kind_of(other).to_string(), quote);
            out.push(
                source
                    .error(format!("the format is {found}, expected \"{JSON_FORMAT}\""))
                    .hint("this importer reads Bubblescope schedules; Perfetto traces cannot be imported"),
            );
            return fail(out);
        }
        None => {
            out.push(
                source
                    .error(format!("the file has no \"format\" field: expected \"format\": \"{JSON_FORMAT}\""))
                    .hint("this importer reads Bubblescope schedules; Perfetto traces cannot be imported"),
            );
            return fail(out);
        }
    }
    match map.get("version").and_then(Value::as_u64) {
        Some(JSON_VERSION) => {}
        Some(v) if v > JSON_VERSION => {
            out.push(
                source
                    .error(format!(
                        "the file is version {v}, newer than the version {JSON_VERSION} this Bubblescope reads"
                    ))
                    .hint("update Bubblescope"),
            );
            return fail(out);
        }
        _ => {
            let found = map.get("version").map_or_else(|| "nothing".to_string(), |v| sanitize_long(&v.to_string()));
            out.push(source.error(format!("expected \"version\": {JSON_VERSION}, found {found}")).hint(SHAPE_HINT));
            return fail(out);
        }
    }
    let mut unknown: Vec<&String> = map.keys().filter(|k| !FIELDS.contains(&k.as_str())).collect();
    unknown.sort();
    for key in unknown {
        out.push(warning(source.error(format!("unknown field {} is ignored", quote(key)))));
    }

    let costs = match take_costs(&mut map, source, &mut out) {
        Some(Some(c)) => {
            // A bad finer cut is dropped with a warning naming it, not the whole costs block.
            let costs = drop_foreign_finer(Costs::from(c), source, &mut out);
            match costs.check() {
                Ok(()) => Some(costs),
                Err(e) => {
                    let error = e.hints.iter().fold(source.error(format!("costs: {}", e.message)), |d, h| d.hint(h));
                    out.push(error.hint("the costs are not loaded"));
                    None
                }
            }
        }
        _ => None,
    };
    let placement = take::<PlacementJson>(&mut map, "placement", None, source, &mut out);
    let microbatches = take::<u32>(&mut map, "microbatches", None, source, &mut out);
    let slices = take::<u32>(&mut map, "slices", Some(Value::from(1)), source, &mut out);
    let orders = take::<Vec<Vec<Value>>>(&mut map, "orders", None, source, &mut out);
    let (Some(placement), Some(microbatches), Some(slices), Some(orders)) = (placement, microbatches, slices, orders)
    else {
        return Imported { schedule: None, costs, times: None, diagnostics: out.finish() };
    };
    let placement = match build_placement(placement) {
        Ok(p) => p,
        Err(message) => {
            out.push(source.error(format!("placement: {message}")).hint(SHAPE_HINT));
            return Imported { schedule: None, costs, times: None, diagnostics: out.finish() };
        }
    };
    let costs = costs.map(|c| reconcile_costs(c, placement.devices(), source, &mut out));
    let ops: usize = orders.iter().map(Vec::len).sum();
    let problem = if orders.len() != placement.devices() as usize {
        Some(format!("orders has {} devices, but the placement has {}", orders.len(), placement.devices()))
    } else if slices == 0 || microbatches == 0 {
        Some(format!("microbatches and slices must be at least 1, found {microbatches} and {slices}"))
    } else if ops as u64 > MAX_PASSES {
        Some(format!("the schedule has {ops} ops, more than the {MAX_PASSES} the engine simulates"))
    } else {
        None
    };
    if let Some(problem) = problem {
        out.push(source.error(problem).hint(SHAPE_HINT));
        return Imported { schedule: None, costs, times: None, diagnostics: out.finish() };
    }

    let mut rows: Vec<Vec<(Op, usize)>> = Vec::with_capacity(orders.len());
    for (device, order) in orders.into_iter().enumerate() {
        let mut row = Vec::with_capacity(order.len());
        for (position, value) in order.into_iter().enumerate() {
            let parsed = match &value {
                Value::String(text) => parse_op(text).map_err(|why| format!("cannot read op {}: {why}", quote(text))),
                other => Err(format!("expected an op string such as \"0F1\", found {}", kind_of(other))),
            };
            match parsed {
                Ok(op) => row.push((op, position)),
                Err(message) => {
                    out.push(source.error_at(device as u32, position, message).hint(OP_HINT).hint("the op is skipped"));
                }
            }
        }
        rows.push(row);
    }

    // Every (stage, microbatch, slice) of a pipeline's share needs a forward and a backward: a
    // file with fewer passes than that is not a schedule, and its tables would be needlessly
    // large.
    let passes: usize = rows.iter().flatten().map(|(op, _)| op.passes().count()).sum();
    let needed = u64::from(placement.stages_per_pipeline()) * u64::from(microbatches) * u64::from(slices);
    if needed > passes as u64 {
        out.push(source.error(format!(
            "{} stages per pipeline × {microbatches} microbatches × {slices} slices need a forward and a backward \
             each, at least {} passes, but orders has only {passes}",
            placement.stages_per_pipeline(),
            2 * needed
        )));
        return Imported { schedule: None, costs, times: None, diagnostics: out.finish() };
    }
    let draft = Draft { placement, microbatches, slices, rows };
    let checked = check::check(draft, source, &|p| pass_text(p, slices), &costs.clone().unwrap_or_default(), &mut out);
    let mut schedule = checked.schedule;
    schedule.vocab = take_vocab(&mut map, source, &mut out);
    schedule.copies = take_copies(&mut map, &schedule, source, &mut out);
    for d in crate::validate::validate(&schedule).into_iter().filter(|_| schedule.has_copies()) {
        if d.message.starts_with("copy ") || d.message.contains("is never reloaded") {
            out.push(d);
        }
    }
    let times = take_times(&mut map, &schedule, source, &mut out);
    Imported { schedule: Some(schedule), costs, times, diagnostics: out.finish() }
}

/// Removes `vocab` from `map` and reads it (missing: none; a schedule with vocabulary passes
/// then gets the default split).
fn take_vocab(map: &mut Map<String, Value>, source: &Source, out: &mut Diagnostics) -> Option<VocabSplit> {
    let value = map.remove("vocab")?;
    match serde_json::from_value::<VocabSplitJson>(value) {
        Ok(v) if (1..=2).contains(&v.barriers) => Some(VocabSplit { barriers: v.barriers, side_stream: v.side_stream }),
        Ok(v) => {
            out.push(
                source
                    .error(format!("vocab.barriers must be 1 or 2, found {}", v.barriers))
                    .hint("1: one barrier after S (Vocab-2); 2: after S and after T (Vocab-1)"),
            );
            None
        }
        Err(e) => {
            out.push(
                source
                    .error(format!("vocab: {}", sanitize_long(&e.to_string())))
                    .hint("vocab holds barriers (1 or 2) and side_stream (true or false)"),
            );
            None
        }
    }
}

/// Removes `costs` from `map` and reads it (`null` or missing: no costs); a malformed object
/// is an error that says what the object holds.
fn take_costs(map: &mut Map<String, Value>, source: &Source, out: &mut Diagnostics) -> Option<Option<CostsJson>> {
    let value = map.remove("costs").unwrap_or(Value::Null);
    match serde_json::from_value(value) {
        Ok(v) => Some(v),
        Err(e) => {
            out.push(
                source
                    .error(format!("costs: {}", sanitize_long(&e.to_string())))
                    .hint(
                        "costs holds f, b, w, comm, mem_f (numbers), overlap and mem_w (numbers or null) and, \
                         optionally, profile: lists f, b, w, mem_f and mem_w with one number per piece of the model, \
                         and p2p: \"async\" or \"blocking\"",
                    )
                    .hint("the costs are not loaded"),
            );
            None
        }
    }
}

/// The file's costs without the finer cuts (`costs.profile.finer`) that are not the
/// profile's model cut into more pieces ([`CostProfile::finer_mismatches`]), each with a
/// warning: chunked families would otherwise run other costs than the profile says.
fn drop_foreign_finer(mut costs: Costs, source: &Source, out: &mut Diagnostics) -> Costs {
    let Some(profile) = costs.profile.as_deref() else { return costs };
    let mismatches: Vec<(usize, String)> =
        profile.finer_mismatches().into_iter().enumerate().filter_map(|(i, why)| why.map(|w| (i, w))).collect();
    if mismatches.is_empty() {
        return costs;
    }
    for (i, why) in &mismatches {
        out.push(warning(
            source
                .error(format!("costs.profile.finer[{i}] is not the profile cut finer ({why}): it is ignored"))
                .hint("finer holds the same model cut at whole layers into more pieces; without it, chunked schedules cut the profile's pieces in proportion"),
        ));
    }
    let mut kept = profile.clone();
    kept.finer = profile
        .finer
        .iter()
        .enumerate()
        .filter(|(i, _)| !mismatches.iter().any(|(j, _)| j == i))
        .map(|(_, p)| p.clone())
        .collect();
    costs.profile = Some(Arc::new(kept));
    costs
}

/// The file's costs made consistent with their per-piece profile on `devices` devices: the
/// profile is what the simulator cuts stages from, so the per-device numbers (used for the
/// ideal and the stats) are the profile's means; a file whose numbers say otherwise gets a
/// warning naming the first that differs.
fn reconcile_costs(costs: Costs, devices: u32, source: &Source, out: &mut Diagnostics) -> Costs {
    let Some(profile) = costs.profile.clone() else { return costs };
    let from_profile = costs.clone().with_profile((*profile).clone(), devices);
    let pairs = [
        ("f", costs.f, from_profile.f),
        ("b", costs.b, from_profile.b),
        ("w", costs.w, from_profile.w),
        ("mem_f", costs.mem_f, from_profile.mem_f),
        ("mem_w", costs.mem_w(), from_profile.mem_w()),
    ];
    let differs = |a: f64, b: f64| (a - b).abs() > 1e-9 * a.abs().max(b.abs()).max(1.0);
    let Some((name, given, derived)) = pairs.into_iter().find(|&(_, a, b)| differs(a, b)) else {
        // Consistent: kept as written, bit for bit.
        return costs;
    };
    {
        out.push(warning(
            source
                .error(format!(
                    "costs.{name} is {}, but its profile gives {} per device: the profile's numbers are used",
                    crate::units::short_number(given),
                    crate::units::short_number(derived)
                ))
                .hint("the per-device numbers are the means of the profile's pieces over the devices"),
        ));
    }
    from_profile
}

/// Removes `field` from `map` and reads it as `T`; `default` stands in when it is missing (or
/// it is an error).
fn take<T: for<'de> Deserialize<'de>>(
    map: &mut Map<String, Value>,
    field: &str,
    default: Option<Value>,
    source: &Source,
    out: &mut Diagnostics,
) -> Option<T> {
    let Some(value) = map.remove(field).or(default) else {
        out.push(source.error(format!("the file has no \"{field}\" field")).hint(SHAPE_HINT));
        return None;
    };
    match serde_json::from_value(value) {
        Ok(v) => Some(v),
        Err(e) => {
            out.push(source.error(format!("{field}: {}", sanitize_long(&e.to_string()))).hint(SHAPE_HINT));
            None
        }
    }
}

/// The placement a `placement` object describes, checked against its kind.
fn build_placement(p: PlacementJson) -> Result<Placement, String> {
    let PlacementJson { kind, devices, stages_per_pipeline: per, stage_device } = p;
    if devices == 0 || devices > MAX_DEVICES {
        return Err(format!("devices must be between 1 and {MAX_DEVICES}, found {devices}"));
    }
    if per == 0 || stage_device.is_empty() {
        return Err("a placement needs at least one stage".to_string());
    }
    if let Some((stage, device)) = stage_device.iter().enumerate().find(|(_, &d)| d >= devices) {
        return Err(format!("stage_device[{stage}] is {device}, but devices are 0 to {}", devices - 1));
    }
    let kinds = PlacementKind::ALL;
    let Some(kind) = kinds.into_iter().find(|k| k.name() == kind) else {
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        return Err(format!("unknown kind {}, expected one of: {}", quote(&kind), names.join(", ")));
    };
    let stages = stage_device.len() as u32;
    if per > stages {
        // Checked before building a table of `per` entries for the kind.
        return Err(format!("stages_per_pipeline is {per}, but stage_device has only {stages} entries"));
    }
    let expected = match kind {
        PlacementKind::Custom if per == stages => return Ok(Placement::custom(devices, stage_device)),
        PlacementKind::Custom => {
            return Err(format!(
                "a custom placement has one pipeline: stages_per_pipeline must be {stages}, found {per}"
            ))
        }
        PlacementKind::Linear => Placement::linear(devices),
        PlacementKind::Interleaved if per % devices == 0 => Placement::interleaved(devices, per / devices),
        PlacementKind::V => Placement::v_shape(devices),
        PlacementKind::Wave if per % (2 * devices) == 0 => Placement::wave(devices, per / (2 * devices)),
        PlacementKind::TwoDirectional => Placement::two_directional(devices),
        _ => {
            return Err(format!("{} stages per pipeline do not fit the {} kind on {devices} devices", per, kind.name()))
        }
    };
    if expected.stages_per_pipeline() != per || expected.stage_devices() != stage_device.as_slice() {
        return Err(format!(
            "the {} kind on {devices} devices has stages_per_pipeline {} and stage_device {}, found {per} and {}",
            kind.name(),
            expected.stages_per_pipeline(),
            list(expected.stage_devices()),
            list(&stage_device)
        ));
    }
    Ok(expected)
}

/// A short rendering of a table for messages.
fn list(values: &[u32]) -> String {
    const SHOWN: usize = 16;
    let shown: Vec<String> = values.iter().take(SHOWN).map(u32::to_string).collect();
    let more = if values.len() > SHOWN { format!(", … ({} in all)", values.len()) } else { String::new() };
    format!("[{}{more}]", shown.join(", "))
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A parser's message (which may quote the file) made safe.
fn sanitize_long(text: &str) -> String {
    sanitize_to(text, 200)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-z\\\"é ]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::btree_map("[a-c]{1,2}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Writes `v` as JSON text; the `target`-th object (in pre-order) gives its first key
    /// again (or `x` twice when empty), which is returned.
    fn write_with_duplicate(v: &Value, target: usize, seen: &mut usize, out: &mut String) -> Option<String> {
        match v {
            Value::Array(items) => {
                out.push('[');
                let mut dup = None;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    dup = dup.or(write_with_duplicate(item, target, seen, out));
                }
                out.push(']');
                dup
            }
            Value::Object(map) => {
                let mine = *seen == target;
                *seen += 1;
                out.push('{');
                let mut dup = None;
                for (i, (k, item)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push(':');
                    dup = dup.or(write_with_duplicate(item, target, seen, out));
                }
                if mine {
                    let key = map.keys().next().cloned().unwrap_or_else(|| "x".to_string());
                    if map.is_empty() {
                        out.push_str("\"x\":1,");
                    } else {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(&key).unwrap());
                    out.push_str(":null");
                    dup = Some(key);
                }
                out.push('}');
                dup
            }
            other => {
                out.push_str(&serde_json::to_string(other).unwrap());
                None
            }
        }
    }

    proptest! {
        /// Without a repeated key the reader gives serde_json's value; with one, at any depth,
        /// it refuses the text and names the key.
        #[test]
        fn duplicate_json_keys_are_refused_at_any_depth(v in json_value(), pick in 0usize..64) {
            let text = serde_json::to_string(&v).unwrap();
            prop_assert_eq!(parse_unique(&text).unwrap(), serde_json::from_str::<Value>(&text).unwrap());
            let objects = {
                let mut n = 0;
                let _ = write_with_duplicate(&v, usize::MAX, &mut n, &mut String::new());
                n
            };
            prop_assume!(objects > 0);
            let mut doubled = String::new();
            let key = write_with_duplicate(&v, pick % objects, &mut 0, &mut doubled).unwrap();
            let e = parse_unique(&doubled).unwrap_err();
            prop_assert_eq!(e.classify(), serde_json::error::Category::Data);
            let named = format!("the key {} appears twice", quote(&key));
            prop_assert!(e.to_string().starts_with(&named), "{} in {}", e, doubled);
        }
    }

    #[test]
    fn a_duplicate_key_is_named_with_its_place() {
        let e = |t: &str| parse_unique(t).unwrap_err().to_string();
        assert_eq!(
            e(r#"{"microbatches": 2, "microbatches": 3}"#),
            "the key `microbatches` appears twice in the top-level object at line 1 column 34"
        );
        assert!(e(r#"{"costs": {"profile": {"f": [1], "f": [2]}}}"#)
            .starts_with("the key `f` appears twice in costs.profile "));
        assert!(e(r#"{"orders": [[], [{"a": 1, "a": 1}]]}"#).starts_with("the key `a` appears twice in orders[1][0] "));
        let imported = super::import(
            r#"{"format": "bubblescope-schedule", "version": 1, "version": 1}"#,
            &Source { name: None, grid: super::super::text::Grid::Json },
        );
        assert!(imported.report().starts_with("error: the key `version` appears twice"), "{}", imported.report());
        assert!(imported.report().contains("hint: keep one of the two"), "{}", imported.report());
    }

    #[test]
    fn ops_read_as_written() {
        assert_eq!(parse_op("0F1"), Ok(Op::One(Pass::f(0, 1))));
        assert_eq!(parse_op("3BW2"), Ok(Op::One(Pass::bw(3, 2))));
        assert_eq!(parse_op("0F1.2"), Ok(Op::One(Pass::f(0, 1).with_slice(2))));
        assert_eq!(parse_op("(3F1;3BW0)"), Ok(Op::Pair(Pass::f(3, 1), Pass::bw(3, 0))));
        assert_eq!(parse_op("0I1"), Err("unknown kind `I`, expected F, B, W, BW, R, S, T, IF or IB".to_string()));
        assert_eq!(parse_op("2S5"), Ok(Op::One(Pass::s(2, 5))));
        assert_eq!(parse_op("1IB0"), Ok(Op::One(Pass::input_b(1, 0))));
        assert_eq!(parse_op("2R5"), Ok(Op::One(Pass::r(2, 5))));
        assert_eq!(parse_op("0F1."), Err("unexpected `.` after `0F1`".to_string()));
        assert_eq!(
            parse_op("(3BW0;3F1)"),
            Err("a pair is a forward and then a backward (B or BW), found BW and F".to_string())
        );
    }

    #[test]
    fn numbers_that_json_readers_round_off_are_written_as_strings() {
        let text = serde_json::to_string(&Number(1.5)).unwrap();
        assert_eq!(text, "1.5");
        let hard = 0.1 + 0.2;
        let text = serde_json::to_string(&Number(hard)).unwrap();
        let back: Number = serde_json::from_str(&text).unwrap();
        assert_eq!(back.0.to_bits(), hard.to_bits(), "{text}");
        assert_eq!(serde_json::from_str::<Number>("\"2.5\"").unwrap(), Number(2.5));
        assert_eq!(serde_json::from_str::<Number>("3").unwrap(), Number(3.0));
    }

    /// A PipeOffload schedule (every copy slotted), simulated.
    fn slotted() -> crate::Analysis {
        let trade = crate::Trade {
            offload: crate::Offload::PipeOffload,
            chunks: Some(1),
            copy_time: Some(0.6),
            ..crate::Trade::default()
        };
        let costs =
            crate::Costs { mem_f: 2.0, trade: Some(std::sync::Arc::new(trade)), ..crate::Costs::fbw(2.0, 2.0, 2.0) };
        let params = crate::ScheduleParams {
            chunks: Some(2),
            group: Some(4),
            ..crate::ScheduleParams::new(4, 8).with_costs(costs)
        };
        crate::run("group-interleaved", &params).expect("runs")
    }

    fn read(text: &str) -> Imported {
        super::import(text, &Source { name: None, grid: super::super::text::Grid::Json })
    }

    /// The send mode crosses the file (issue 43, pass 6, item 2): blocking is written and read
    /// back; async writes nothing (files stay as they were) and a missing key reads as async.
    #[test]
    fn the_send_mode_reads_back() {
        let params = crate::ScheduleParams::new(4, 8);
        let schedule = crate::registry::generate("1f1b", &params).unwrap();
        let blocking = Costs { comm: 0.5, p2p: crate::params::P2p::Blocking, ..Costs::default() };
        let text = export_json(&schedule, Some(&blocking));
        assert!(text.contains(r#""p2p":"blocking""#), "{text}");
        let back = read(&text).costs.expect("costs");
        assert_eq!(back.p2p, crate::params::P2p::Blocking);
        let text = export_json(&schedule, Some(&Costs { p2p: crate::params::P2p::Async, ..blocking }));
        assert!(!text.contains("p2p"), "{text}");
        assert_eq!(read(&text).costs.expect("costs").p2p, crate::params::P2p::Async);
        let bad = read(&text.replace(r#""mem_w":null"#, r#""mem_w":null,"p2p":"sync""#));
        assert!(bad.report().contains("unknown variant `sync`"), "{}", bad.report());
        assert!(bad.report().contains("\"async\" or \"blocking\""), "{}", bad.report());
    }

    #[test]
    fn copy_slots_read_back_exactly() {
        let mut schedule = slotted().schedule;
        assert!(schedule.has_copies() && schedule.copies.iter().flatten().all(|c| c.slot.is_some()));
        // Times whose shortest forms are long or small.
        schedule.copies[0][0].slot = Some(CopySlot { start: 0.1 + 0.2, time: 1e-7 });
        let text = export_json(&schedule, None);
        let first = format!(
            "\"offload {} @{} from 0.30000000000000004 for 0.0000001\"",
            pass_text(schedule.copies[0][0].pass, 1),
            schedule.copies[0][0].at
        );
        assert!(text.contains(&first), "{text}");
        let imported = read(&text);
        assert!(imported.diagnostics.is_empty(), "{}", imported.report());
        let back = imported.schedule.expect("a schedule");
        let bits = |s: &Schedule| -> Vec<(u64, u64)> {
            s.copies.iter().flatten().filter_map(|c| c.slot).map(|t| (t.start.to_bits(), t.time.to_bits())).collect()
        };
        assert_eq!(back.copies, schedule.copies);
        assert_eq!(bits(&back), bits(&schedule));
        // A copy without a slot reads as before.
        assert_eq!(parse_copy("reload 0F3 @4"), Ok(CopyOp::new(CopyKind::Reload, Pass::f(0, 3), 4)));
    }

    #[test]
    fn bad_copy_slots_are_refused_with_hints() {
        assert_eq!(
            parse_copy("offload 0F3 @4 from x for 0.7"),
            Err("expected a number after from, found `x`".to_string())
        );
        assert_eq!(
            parse_copy("offload 0F3 @4 at 1 for 0.7"),
            Err("expected `from` in the slot, found `at`".to_string())
        );
        assert_eq!(
            parse_copy("offload 0F3 @4 from 1"),
            Err("expected three words, or seven with a slot, found 5".to_string())
        );
        let schedule = slotted().schedule;
        let c = schedule.copies[0][0];
        let written = |slot: &str| format!("\"offload {} @{}{slot}\"", pass_text(c.pass, 1), c.at);
        let slot = c.slot.expect("a slot");
        let text = export_json(&schedule, None);
        let good = written(&format!(" from {} for {}", slot.start, slot.time));
        assert!(text.contains(&good), "{text}");
        let unreadable = read(&text.replacen(&good, &written(" from 1 during 2"), 1)).report();
        assert!(unreadable.contains("error: device 0, copy 0: cannot read"), "{unreadable}");
        assert!(unreadable.contains("hint: a copy is `offload <forward> @<position>`"), "{unreadable}");
        assert!(unreadable.contains("`from <start> for <time>` after it gives its slot"), "{unreadable}");
        for bad in [
            " from -1 for 0.6",
            " from NaN for 0.6",
            " from 1 for 0",
            " from 1 for NaN",
            " from 1 for -2",
            " from 1e300 for 0.6",
            " from 1 for 2e12",
        ] {
            let report = read(&text.replacen(&good, &written(bad), 1)).report();
            assert!(report.contains("but a slot starts at 0 or later"), "{bad}: {report}");
            assert!(report.contains("up to 1e12"), "{bad}: {report}");
            assert!(report.len() < 600, "no number of hundreds of digits: {report}");
            assert!(report.contains("hint: give the slot a finite start of 0 or more"), "{bad}: {report}");
            assert!(report.starts_with("error: copy 0, offload"), "{report}");
        }
    }
}
