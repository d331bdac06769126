//! One rank's profiler trace, read as a stream: the pipeline's spans and when work started in
//! each, never the whole file.
//!
//! `torch.profiler` writes Chrome-trace JSON (`*.pt.trace.json`, often gzipped). The reader
//! keeps the `PP:<action>` ranges `_PipelineScheduleRuntime` records (on the CPU, and on the
//! device timeline as `gpu_user_annotation` when a GPU ran), `ScheduleGPipe`'s `Forward i` and
//! `Backward i`, the `ProfilerStep#N` ranges, and of every operator or kernel only its start
//! and end, to find where work began inside each span. Memory grows with the operators of one
//! rank (16 bytes each), not with the file.

use std::fmt;
use std::io::{BufReader, Read};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer as _;

use super::TraceError;
use crate::formats::perfetto::GENERATOR;

/// The most bytes one rank's trace may hold once decompressed: 8 GiB. Real GPU runs write
/// hundreds of MB per rank; the reader streams, so the cap only stops a runaway input.
pub const MAX_TRACE_BYTES: u64 = 8 << 30;

/// Where a span was recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum Track {
    /// The CPU thread that ran the schedule (`user_annotation`).
    Cpu,
    /// The device timeline (`gpu_user_annotation`).
    Gpu,
}

/// One labelled range of a rank's trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    /// The label: `PP:0F3` without `PP:`, `Forward 3`, `Backward 3`.
    pub label: String,
    /// Start, µs.
    pub start: f64,
    /// End, µs.
    pub end: f64,
    /// Where it was recorded.
    pub track: Track,
    /// When the first operator (or kernel) inside it started, if any ran.
    pub first_work: Option<f64>,
}

/// A rank's time window for the step read: from, to (µs, its own clock).
pub(super) type Window = (f64, f64);

/// One profiler step (`ProfilerStep#N`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// N.
    pub number: u64,
    /// Start, µs.
    pub start: f64,
    /// End, µs.
    pub end: f64,
}

/// What one rank's trace holds of the pipeline.
#[derive(Clone, Debug, PartialEq)]
pub struct RankTrace {
    /// The file, as named to the reader.
    pub source: String,
    /// `distributedInfo.rank`.
    pub rank: Option<u32>,
    /// `distributedInfo.world_size`.
    pub world_size: Option<u32>,
    /// `host_name`, where the rank ran.
    pub host: Option<String>,
    /// The pipeline's spans, by start.
    pub spans: Vec<Span>,
    /// Profiler steps, by start.
    pub steps: Vec<Step>,
    /// Events read (every kind).
    pub events: u64,
}

/// Reads one rank's trace from `reader` (JSON, or gzipped JSON: the magic bytes decide).
/// `source` names the file in errors.
///
/// # Errors
/// A [`TraceError`] naming the file: not JSON, cut off, over [`MAX_TRACE_BYTES`], or with no
/// `traceEvents`.
pub fn read_rank(source: &str, reader: impl Read) -> Result<RankTrace, TraceError> {
    read_rank_capped(source, reader, MAX_TRACE_BYTES)
}

/// [`read_rank`] with another cap on the decompressed bytes.
///
/// # Errors
/// As [`read_rank`].
pub fn read_rank_capped(source: &str, reader: impl Read, cap: u64) -> Result<RankTrace, TraceError> {
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let gz = {
        use std::io::BufRead as _;
        let head = reader.fill_buf().map_err(|e| TraceError::file(source, format!("cannot read it: {e}")))?;
        head.starts_with(&[0x1f, 0x8b])
    };
    if gz {
        let inner = flate2::bufread::MultiGzDecoder::new(reader);
        read_json(source, BufReader::with_capacity(1 << 16, inner), cap, true)
    } else {
        read_json(source, reader, cap, false)
    }
}

fn read_json(source: &str, reader: impl Read, cap: u64, gz: bool) -> Result<RankTrace, TraceError> {
    let capped = reader.take(cap + 1);
    let mut counting = Counting { inner: capped, read: 0, content: false };
    let mut collect = Collect::default();
    let result = {
        let mut de = serde_json::Deserializer::from_reader(&mut counting);
        (&mut de).deserialize_map(TopVisitor { collect: &mut collect }).and_then(|()| de.end())
    };
    if counting.read > cap {
        return Err(TraceError::file(
            source,
            format!("it holds more than {} of trace once decompressed", crate::units::format_bytes(cap as f64)),
        )
        .hint("profile fewer steps (torch.profiler's schedule: wait, warmup, active=1), or record without stacks and shapes"));
    }
    if let Err(e) = result {
        if e.is_eof() && !counting.content {
            return Err(TraceError::file(source, "it is empty: it holds no trace").hint(
                "torch.profiler writes a rank's trace when its profiled steps end (prof.export_chrome_trace, or the tensorboard handler): check that the run got there",
            ));
        }
        let what = if e.is_eof() {
            "it ends in the middle of the JSON: the file is cut off".to_string()
        } else if e.is_io() && gz {
            format!("its gzip stream is cut off or damaged ({})", e.to_string().split(" at line").next().unwrap_or(""))
        } else if e.is_io() {
            format!("cannot read it: {e}")
        } else {
            format!("it is not a profiler trace: {e}")
        };
        return Err(TraceError::file(source, what).hint(
            "give the Chrome-trace JSON torch.profiler writes per rank (prof.export_chrome_trace, or the tensorboard handler's .pt.trace.json.gz)",
        ));
    }
    if collect.ours {
        return Err(TraceError::file(
            source,
            "it is a Perfetto trace Bubblescope wrote: a picture of a simulated schedule, not a profiled run",
        )
        .hint("Perfetto files are written to be viewed, never read back: read the schedule from a JSON or CSV export (--export FILE.json)")
        .hint("or give the traces torch.profiler wrote, one per rank"));
    }
    if let Some(bad) = collect.bad_info {
        return Err(TraceError::file(source, bad).hint(
            "torch.profiler writes the rank (from 0) and the world size (the ranks in all) of torch.distributed: give the trace as the profiler wrote it",
        ));
    }
    if let Some(bad) = collect.bad {
        return Err(TraceError::file(source, bad).hint(
            "a pipeline span (`PP:` range) or profiler step is one complete event (ph \"X\") with its start (ts) and a positive duration (dur) in µs, as torch.profiler writes it: give the trace as the profiler wrote it",
        ));
    }
    if !collect.saw_events {
        return Err(TraceError::file(source, "it has no `traceEvents`: it is JSON, but not a profiler trace")
            .hint("give the Chrome-trace JSON torch.profiler writes per rank"));
    }
    Ok(collect.finish(source))
}

/// Counts the bytes read, for the cap, and whether any is more than white space (an empty
/// file is not a cut-off one).
struct Counting<R> {
    inner: R,
    read: u64,
    content: bool,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        self.content = self.content || buf[..n].iter().any(|b| !b.is_ascii_whitespace());
        Ok(n)
    }
}

/// The latest start a trace may give, µs: far past any clock a profiler reads (the Unix epoch
/// in µs is about 1.7e15).
const MAX_TS: f64 = 1e18;

/// What the reader keeps while it streams.
#[derive(Default)]
struct Collect {
    rank: Option<u32>,
    world_size: Option<u32>,
    host: Option<String>,
    saw_events: bool,
    spans: Vec<Span>,
    steps: Vec<Step>,
    /// Operators and kernels: (start, end, on the device).
    work: Vec<(f64, f64, bool)>,
    events: u64,
    /// The first pipeline span or profiler step that cannot be read, said.
    bad: Option<String>,
    /// A `distributedInfo.rank` or `world_size` that is there but no count, said.
    bad_info: Option<String>,
    /// Whether Bubblescope wrote it (`otherData.generator`): a Perfetto export, not a profile.
    ours: bool,
}

impl Collect {
    fn event(&mut self, e: Event) {
        self.events += 1;
        if self.bad.is_none() {
            self.bad = event_problem(&e).map(|problem| format!("event {} of traceEvents, {problem}", self.events));
        }
        if e.ph != Ph::Complete {
            return;
        }
        let (Some(start), Some(dur)) = (e.ts, e.dur) else { return };
        if !start.is_finite() || !dur.is_finite() || dur < 0.0 {
            return;
        }
        let end = start + dur;
        match (e.cat, e.name) {
            (Cat::Annotation(track), Name::Label(label)) => {
                self.spans.push(Span { label, start, end, track, first_work: None });
            }
            (Cat::Annotation(Track::Cpu), Name::Step(number)) => self.steps.push(Step { number, start, end }),
            (Cat::CpuOp, Name::Step(number)) => self.steps.push(Step { number, start, end }),
            (Cat::CpuOp, Name::Other) => self.work.push((start, end, false)),
            (Cat::Kernel, Name::Communication) => {}
            (Cat::Kernel, _) => self.work.push((start, end, true)),
            _ => {}
        }
    }

    /// Sorts the spans and finds the first operator (kernel on the device) inside each.
    fn finish(mut self, source: &str) -> RankTrace {
        self.spans.sort_by(|a, b| a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end)));
        self.steps.sort_by(|a, b| a.start.total_cmp(&b.start));
        self.steps.dedup_by_key(|s| s.number);
        self.work.sort_by(|a, b| a.0.total_cmp(&b.0));
        for span in &mut self.spans {
            let on_device = span.track == Track::Gpu;
            let from = self.work.partition_point(|w| w.0 < span.start);
            span.first_work =
                self.work[from..].iter().take_while(|w| w.0 < span.end).find(|w| w.2 == on_device).map(|w| w.0);
        }
        RankTrace {
            source: source.to_string(),
            rank: self.rank,
            world_size: self.world_size,
            host: self.host,
            spans: self.spans,
            steps: self.steps,
            events: self.events,
        }
    }
}

/// What is wrong with an event the reader keeps, if anything: a pipeline span (its phase,
/// start, duration or action) or a complete profiler step (its start or duration). A damaged
/// step is named rather than dropped, so `--step N` never reports a step as absent that is
/// there but unreadable.
fn event_problem(e: &Event) -> Option<String> {
    match (&e.cat, &e.name) {
        (Cat::Annotation(_), Name::Label(label)) => span_problem(label, e).map(|p| format!("the pipeline span {p}")),
        (Cat::Annotation(Track::Cpu) | Cat::CpuOp, Name::Step(n)) if e.ph == Ph::Complete => {
            timing_problem(&format!("`ProfilerStep#{n}`"), e).map(|p| format!("the profiler step {p}"))
        }
        _ => None,
    }
}

/// A pipeline span's event name as the trace writes it, in backquotes, from `label` as kept
/// (`PP:` taken off): `` `PP:0F3` ``, `` `Forward 3` ``.
pub(super) fn event_name(label: &str) -> String {
    let name = if label.starts_with("Forward ") || label.starts_with("Backward ") {
        label.to_string()
    } else {
        format!("PP:{label}")
    };
    format!("`{}`", crate::units::clean_text(&name))
}

/// What is wrong with a pipeline span (`label` as kept: `PP:` taken off), if anything: its
/// phase, its action, its start or its duration. Its name comes first, in backquotes.
fn span_problem(label: &str, e: &Event) -> Option<String> {
    let name = event_name(label);
    if e.ph != Ph::Complete {
        return Some(format!(
            "{name} is not one complete event: its ph is not \"X\" (begin and end pairs are not read)"
        ));
    }
    if label.trim().is_empty() {
        return Some(format!("{name} has no action after `PP:`"));
    }
    timing_problem(&name, e)
}

/// What is wrong with a complete event's start (`ts`) or duration (`dur`), if anything: the
/// one rule for pipeline spans and profiler steps alike. `name` opens the message.
fn timing_problem(name: &str, e: &Event) -> Option<String> {
    use crate::units::format_number;
    let readable = |v: f64| v == 0.0 || (1e-3..1e15).contains(&v.abs());
    // A file's noise (84.628 × 1e-9 written as 8.462800000000001e-8) is not repeated.
    let shown =
        |v: f64| if readable(v) { format_number(v, 3) } else { format!("{:e}", crate::units::without_noise(v)) };
    match e.ts {
        None => return Some(format!("{name} has no ts (its start in µs), or one that is not a number")),
        Some(ts) if !(ts.is_finite() && (0.0..=MAX_TS).contains(&ts)) => {
            return Some(format!("{name} starts at ts {}, expected a time from 0 to {MAX_TS:e} µs", shown(ts)));
        }
        _ => {}
    }
    match e.dur {
        None => Some(format!("{name} has no dur (its duration in µs), or one that is not a number")),
        Some(dur) if !(dur.is_finite() && (MIN_DUR..=crate::params::MAX_COST).contains(&dur)) => Some(format!(
            "{name} lasts dur {}, expected a duration from {MIN_DUR:e} to {:e} µs",
            shown(dur),
            crate::params::MAX_COST
        )),
        _ => None,
    }
}

/// The shortest duration a span or step may last, µs: a picosecond, far below the
/// profiler's nanosecond clock (a zero, negative or subnormal duration is damage).
const MIN_DUR: f64 = 1e-6;

/// The top-level object: `distributedInfo` and `traceEvents` matter.
struct TopVisitor<'c> {
    collect: &'c mut Collect,
}

impl<'de> Visitor<'de> for TopVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Chrome-trace object with `traceEvents`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::TraceEvents => {
                    map.next_value_seed(Events { collect: self.collect })?;
                    self.collect.saw_events = true;
                }
                Key::DistributedInfo => {
                    let info: DistributedInfo = map.next_value()?;
                    let rank = info_count("rank", info.rank.as_ref(), 0);
                    let world_size = info_count("world_size", info.world_size.as_ref(), 1);
                    self.collect.rank = rank.clone().ok().flatten();
                    self.collect.world_size = world_size.clone().ok().flatten();
                    self.collect.bad_info = rank.err().or(world_size.err());
                }
                Key::HostName => {
                    let host: serde_json::Value = map.next_value()?;
                    self.collect.host = host.as_str().map(|h| h.chars().take(MAX_LABEL).collect());
                }
                Key::OtherData => {
                    let other: serde_json::Value = map.next_value()?;
                    self.collect.ours = other.get("generator").and_then(|g| g.as_str()) == Some(GENERATOR);
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The keys of a JSON object the reader looks for, as an enum (`Other` for the rest) read
/// without keeping the key's text.
macro_rules! keys {
    ($name:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        enum $name {
            $($variant,)*
            Other,
        }

        impl<'de> de::Deserialize<'de> for $name {
            fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                key(d, |v| match v {
                    $($text => $name::$variant,)*
                    _ => $name::Other,
                })
            }
        }
    };
}

keys!(Key {
    TraceEvents = "traceEvents",
    DistributedInfo = "distributedInfo",
    HostName = "host_name",
    OtherData = "otherData",
});

/// Reads a map key as `name` names it, without keeping the text.
fn key<'de, D: de::Deserializer<'de>, K>(d: D, name: fn(&str) -> K) -> Result<K, D::Error> {
    struct V<K>(fn(&str) -> K);
    impl<K> Visitor<'_> for V<K> {
        type Value = K;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a key")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<K, E> {
            Ok((self.0)(v))
        }
    }
    d.deserialize_str(V(name))
}

#[derive(serde::Deserialize)]
struct DistributedInfo {
    #[serde(default)]
    rank: Option<serde_json::Value>,
    #[serde(default)]
    world_size: Option<serde_json::Value>,
}

/// A count of `distributedInfo` (`key`), written as a number or as a string of digits, of at
/// least `least`: `None` when missing (or null), the message when it is there but no such
/// count (`-1`, `1e20`, `"two"`), so a damaged value is named, never taken for a missing one.
fn info_count(key: &str, value: Option<&serde_json::Value>, least: u32) -> Result<Option<u32>, String> {
    let read = match value {
        None | Some(serde_json::Value::Null) => return Ok(None),
        // A whole number written as 1.0 is still a count.
        Some(serde_json::Value::Number(n)) => n.as_u64().and_then(|n| u32::try_from(n).ok()).or_else(|| {
            n.as_f64().filter(|v| v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(v)).map(|v| v as u32)
        }),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        Some(_) => None,
    };
    match read {
        Some(n) if n >= least => Ok(Some(n)),
        _ => {
            let text = match value {
                Some(serde_json::Value::Number(n)) => {
                    n.as_f64().map_or_else(|| n.to_string(), crate::units::short_number)
                }
                other => other.map(ToString::to_string).unwrap_or_default(),
            };
            let shown: String = crate::units::clean_text(&text).chars().take(40).collect();
            Err(format!("its `distributedInfo.{key}` is {shown}, expected a whole number of at least {least}"))
        }
    }
}

/// The `traceEvents` array, each event handed to the collector as it is read.
struct Events<'c> {
    collect: &'c mut Collect,
}

impl<'de> DeserializeSeed<'de> for Events<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Events<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of trace events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(event) = seq.next_element::<Event>()? {
            self.collect.event(event);
        }
        Ok(())
    }
}

/// An event's phase: only complete events (`X`) are spans.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ph {
    Complete,
    Other,
}

/// An event's category, as far as the reader cares.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cat {
    Annotation(Track),
    CpuOp,
    Kernel,
    Other,
}

/// An event's name: a pipeline label, a profiler step, a communication operator (never the
/// work of a pass), or anything else (not kept).
enum Name {
    Label(String),
    Step(u64),
    Communication,
    Other,
}

/// One event, with only the fields the reader uses.
struct Event {
    ph: Ph,
    cat: Cat,
    name: Name,
    ts: Option<f64>,
    dur: Option<f64>,
}

impl<'de> de::Deserialize<'de> for Event {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
        d.deserialize_map(EventVisitor)
    }
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = Event;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        let mut event = Event { ph: Ph::Other, cat: Cat::Other, name: Name::Other, ts: None, dur: None };
        while let Some(key) = map.next_key::<EventKey>()? {
            match key {
                EventKey::Ph => event.ph = map.next_value_seed(Classify(classify_ph))?,
                EventKey::Cat => event.cat = map.next_value_seed(Classify(classify_cat))?,
                EventKey::Name => event.name = map.next_value_seed(NameSeed)?,
                EventKey::Ts => event.ts = map.next_value_seed(Number)?,
                EventKey::Dur => event.dur = map.next_value_seed(Number)?,
                EventKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(event)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Event, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Event { ph: Ph::Other, cat: Cat::Other, name: Name::Other, ts: None, dur: None })
    }
}

keys!(EventKey { Ph = "ph", Cat = "cat", Name = "name", Ts = "ts", Dur = "dur" });

fn classify_ph(v: &str) -> Ph {
    if v == "X" {
        Ph::Complete
    } else {
        Ph::Other
    }
}

fn classify_cat(v: &str) -> Cat {
    match v {
        "user_annotation" => Cat::Annotation(Track::Cpu),
        "gpu_user_annotation" => Cat::Annotation(Track::Gpu),
        "cpu_op" => Cat::CpuOp,
        "kernel" | "gpu_memcpy" | "gpu_memset" => Cat::Kernel,
        _ => Cat::Other,
    }
}

/// A string field mapped to a small value without keeping the string.
struct Classify<T>(fn(&str) -> T);

impl<'de, T> DeserializeSeed<'de> for Classify<T> {
    type Value = T;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        struct V<T>(fn(&str) -> T);
        impl<T> Visitor<'_> for V<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
                Ok((self.0)(v))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<T, E> {
                Ok((self.0)(""))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<T, E> {
                Ok((self.0)(""))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<T, E> {
                Ok((self.0)(""))
            }
            fn visit_unit<E: de::Error>(self) -> Result<T, E> {
                Ok((self.0)(""))
            }
        }
        d.deserialize_any(V(self.0))
    }
}

/// A name: kept only when it is a pipeline label or a profiler step.
struct NameSeed;

impl<'de> DeserializeSeed<'de> for NameSeed {
    type Value = Name;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Name, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an event name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Name, E> {
                Ok(name_of(v))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Name, E> {
                Ok(Name::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Name, E> {
                Ok(Name::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Name, E> {
                Ok(Name::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Name, E> {
                Ok(Name::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// The longest label kept (anything longer is no pipeline action).
const MAX_LABEL: usize = 200;

fn name_of(v: &str) -> Name {
    if let Some(n) = v.strip_prefix("ProfilerStep#").and_then(|n| n.parse().ok()) {
        return Name::Step(n);
    }
    let keep = v.len() <= MAX_LABEL
        && (v.starts_with("PP:")
            || v.strip_prefix("Forward ").is_some_and(is_number)
            || v.strip_prefix("Backward ").is_some_and(is_number));
    if keep {
        Name::Label(v.strip_prefix("PP:").unwrap_or(v).to_string())
    } else if is_communication(v) || v.starts_with("aten::empty") {
        // A buffer allocated for a receive comes before the wait: no work either.
        Name::Communication
    } else {
        Name::Other
    }
}

/// Operators and kernels that move data between ranks (`c10d::send`, `c10d::recv_`, NCCL's
/// kernels): a pass that runs one is waiting or sending, not computing.
fn is_communication(name: &str) -> bool {
    name.starts_with("c10d::")
        || name.starts_with("nccl")
        || name.starts_with("gloo")
        || name.contains("record_param_comms")
        || name.contains("SendRecv")
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// A time: a JSON number, or a string holding one.
struct Number;

impl<'de> DeserializeSeed<'de> for Number {
    type Value = Option<f64>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<f64>, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Option<f64>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<f64>, E> {
                Ok(Some(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<f64>, E> {
                Ok(Some(v as f64))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<f64>, E> {
                Ok(Some(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<f64>, E> {
                Ok(v.trim().parse().ok())
            }
            fn visit_unit<E: de::Error>(self) -> Result<Option<f64>, E> {
                Ok(None)
            }
        }
        d.deserialize_any(V)
    }
}
