//! The compact form in which the background worker sends what it computed to the page.
//!
//! A result is three flat buffers that move between threads without copying (transferred
//! `ArrayBuffer`s): numbers (`f64`: times, memory, stats), counts and indices (`u32`: the
//! schedule, table lengths, tags) and text (UTF-8: names, labels, error messages). Both sides
//! read and write them in the same order; [`decode`] checks every length, so a damaged
//! message is an error, never a panic.
//!
//! A pass takes three `u32`s (kind, pair flag and slice in one, stage, microbatch), an op's
//! times two `f64`s and the op it waited for two `u32`s: a 400,000-pass schedule travels in
//! about 16 MB, faster than the page could simulate it again.

use std::sync::Arc;

use bubblescope::attribution::{Attribution, Parts as AttributionParts};
use bubblescope::bounds::Standing;
use bubblescope::gaps::{Causes, Gap, Waited};
use bubblescope::model::ModelSpec;
use bubblescope::permalink::Settings;
use bubblescope::sim::{DeviceTimeline, MemPoint, OpRef, TimedOp};
use bubblescope::{
    Analysis, CopyKind, CopyOp, CopySlot, CostProfile, Costs, DeviceStats, Field, Op, Pass, PassKind, Placement,
    PlacementKind, Schedule, ScheduleParams, Stats, Timeline, Units,
};

use bubblescope::trade::{Offload, Recompute, TradeSettings};

use crate::compare::{AllRefused, AllRun, AllRuns};
use crate::fit::{Chosen, FitResult, Fitted};
use crate::state::{Computed, Extras, UiError};

/// What the worker computed for one settings change (the page adds the id and parameters).
#[derive(Clone, Debug)]
pub struct Parts {
    /// The chosen schedule.
    pub main: Computed,
    /// The compared schedules.
    pub compare: Vec<Computed>,
    /// 1F1B at the same settings.
    pub baseline: Option<Arc<Analysis>>,
    /// Milliseconds the worker spent.
    pub elapsed_ms: f64,
}

/// The three buffers of an encoded result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Wire {
    /// Times, memory and stats.
    pub numbers: Vec<f64>,
    /// The schedule, lengths and tags.
    pub words: Vec<u32>,
    /// Names, labels and messages, UTF-8.
    pub text: Vec<u8>,
}

/// Why a message could not be read.
#[derive(Clone, Debug, PartialEq)]
pub struct WireError(pub String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Placement kinds travel as their index here.
const PLACEMENT_KINDS: [PlacementKind; 6] = PlacementKind::ALL;

/// The bits of a pass's first word that hold its kind.
const KIND_BITS: u32 = 0b111;
/// Bit set in a pass's first word when it opens an overlapped pair (its partner follows).
const PAIR: u32 = 1 << 3;
/// A pass's slice sits above the kind and pair bits.
const SLICE_SHIFT: u32 = 4;

/// Encodes what the worker computed.
pub fn encode(parts: &Parts) -> Wire {
    let mut w = Wire::default();
    w.numbers.push(parts.elapsed_ms);
    w.words.push(parts.compare.len() as u32);
    for c in std::iter::once(&parts.main).chain(&parts.compare) {
        w.computed(c);
    }
    let main = parts.main.result.as_ref().ok();
    match &parts.baseline {
        None => w.words.push(0),
        Some(b) if main.is_some_and(|m| Arc::ptr_eq(m, b)) => w.words.push(1),
        Some(b) => {
            w.words.push(2);
            w.analysis(b);
        }
    }
    w
}

/// Reads what [`encode`] wrote.
///
/// # Errors
/// A [`WireError`] when a buffer ends early, a tag is unknown or the text is not UTF-8.
pub fn decode(wire: &Wire) -> Result<Parts, WireError> {
    let mut r = Reader { wire, numbers: 0, words: 0, text: 0 };
    let elapsed_ms = r.number()?;
    let compared = r.word()? as usize;
    let main = r.computed()?;
    let compare = (0..compared).map(|_| r.computed()).collect::<Result<Vec<_>, _>>()?;
    let baseline = match r.word()? {
        0 => None,
        1 => main.result.as_ref().ok().cloned(),
        2 => Some(Arc::new(r.analysis()?)),
        t => return Err(WireError(format!("unknown baseline tag {t}, expected 0, 1 or 2"))),
    };
    r.finished()?;
    Ok(Parts { main, compare, baseline, elapsed_ms })
}

/// Encodes the "Compare all" result: the settings' error, or per run its family's name,
/// chunks, cost, peak memory, bubble rate and front flag and per refused run its family's
/// name and the reason.
pub fn encode_all(result: &Result<AllRuns, String>) -> Wire {
    let mut w = Wire::default();
    let all = match result {
        Ok(all) => {
            w.words.push(0);
            all
        }
        Err(e) => {
            w.words.push(1);
            w.text(e);
            return w;
        }
    };
    w.words.push(all.runs.len() as u32);
    for r in &all.runs {
        w.text(r.family.name);
        w.words.extend([r.chunks, u32::from(r.pareto)]);
        w.numbers.extend([r.cost, r.peak_memory, r.bubble_rate]);
    }
    w.words.push(all.invalid.len() as u32);
    for r in &all.invalid {
        w.text(r.family.name);
        w.text(&r.error);
    }
    w
}

/// Reads what [`encode_all`] wrote.
///
/// # Errors
/// A [`WireError`] when a buffer ends early or has data left over, the text is not UTF-8, or
/// a family is not in the registry.
pub fn decode_all(wire: &Wire) -> Result<Result<AllRuns, String>, WireError> {
    let mut r = Reader { wire, numbers: 0, words: 0, text: 0 };
    match r.word()? {
        0 => {}
        1 => {
            let e = r.text()?;
            r.finished()?;
            return Ok(Err(e));
        }
        t => return Err(WireError(format!("unknown comparison tag {t}, expected 0 or 1"))),
    }
    let family = |r: &mut Reader| {
        let name = r.text()?;
        bubblescope::family(&name).ok_or_else(|| WireError(format!("unknown family {name:?} in the comparison")))
    };
    let mut all = AllRuns::default();
    for _ in 0..r.count(3)? {
        let family = family(&mut r)?;
        let (chunks, pareto) = (r.word()?, r.word()? != 0);
        let [cost, peak_memory, bubble_rate] = r.numbers()?;
        all.runs.push(AllRun { family, chunks, cost, peak_memory, bubble_rate, pareto });
    }
    for _ in 0..r.count(2)? {
        let family = family(&mut r)?;
        all.invalid.push(AllRefused { family, error: r.text()? });
    }
    r.finished()?;
    Ok(Ok(all))
}

/// Encodes the settings a request computes: the family, its parameters (sizes, options, costs
/// with their per-piece profile, memory limit, units), the compared families and the model.
pub fn encode_settings(settings: &Settings) -> Wire {
    let mut w = Wire::default();
    w.text(&settings.schedule);
    let p = &settings.params;
    w.words.extend([p.devices, p.microbatches]);
    for v in [p.chunks, p.group, p.waves, p.seq_splits] {
        w.opt_word(v);
    }
    w.costs(&p.costs);
    w.opt_number(p.mem_limit);
    w.words.push(UNITS.iter().position(|u| *u == p.units).unwrap_or(0) as u32);
    w.words.push(settings.compare.len() as u32);
    for name in &settings.compare {
        w.text(name);
    }
    let m = &settings.model;
    w.opt_text(m.preset.as_deref());
    for v in [m.layers, m.hidden, m.heads, m.kv_heads, m.seq, m.micro_batch, m.vocab, m.ffn] {
        w.opt_word(v);
    }
    for v in [m.tflops, m.bandwidth, m.latency] {
        w.opt_number(v);
    }
    w.opt_text(m.layout.as_deref());
    w.opt_word(m.flash_attention.map(u32::from));
    w.opt_word(m.tp);
    w.opt_text(m.gpu.as_deref());
    w.opt_word(m.gpus_per_node);
    w.opt_number(m.gemm_efficiency);
    w.opt_number(m.memory_efficiency);
    w.trade(&settings.trade);
    w
}

/// Reads what [`encode_settings`] wrote.
///
/// # Errors
/// A [`WireError`] when a buffer ends early or has data left over, a tag is unknown or the
/// text is not UTF-8.
pub fn decode_settings(wire: &Wire) -> Result<Settings, WireError> {
    let mut r = Reader { wire, numbers: 0, words: 0, text: 0 };
    let schedule = r.text()?;
    let (devices, microbatches) = (r.word()?, r.word()?);
    let [chunks, group, waves, seq_splits] = [r.opt_word()?, r.opt_word()?, r.opt_word()?, r.opt_word()?];
    let costs = r.costs()?;
    let mem_limit = r.opt_number()?;
    let units = r.word()? as usize;
    let units = *UNITS.get(units).ok_or_else(|| WireError(format!("unknown units {units}")))?;
    let params = ScheduleParams { devices, microbatches, chunks, group, waves, seq_splits, costs, mem_limit, units };
    let compare = (0..r.count(1)?).map(|_| r.text()).collect::<Result<Vec<_>, _>>()?;
    let preset = r.opt_text()?;
    let [layers, hidden, heads, kv_heads, seq, micro_batch, vocab, ffn] = [
        r.opt_word()?,
        r.opt_word()?,
        r.opt_word()?,
        r.opt_word()?,
        r.opt_word()?,
        r.opt_word()?,
        r.opt_word()?,
        r.opt_word()?,
    ];
    let [tflops, bandwidth, latency] = [r.opt_number()?, r.opt_number()?, r.opt_number()?];
    let layout = r.opt_text()?;
    let flash_attention = r.opt_word()?.map(|v| v != 0);
    let tp = r.opt_word()?;
    let gpu = r.opt_text()?;
    let gpus_per_node = r.opt_word()?;
    let [gemm_efficiency, memory_efficiency] = [r.opt_number()?, r.opt_number()?];
    let model = ModelSpec {
        preset,
        layers,
        hidden,
        heads,
        kv_heads,
        seq,
        micro_batch,
        vocab,
        ffn,
        tflops,
        bandwidth,
        latency,
        layout,
        flash_attention,
        tp,
        gpu,
        gpus_per_node,
        gemm_efficiency,
        memory_efficiency,
    };
    let trade = r.trade()?;
    r.finished()?;
    Ok(Settings { schedule, params, compare, model, trade })
}

/// Encodes what "fit under the limit" found, or why it could not look.
pub fn encode_fit(result: &Result<FitResult, UiError>) -> Wire {
    let mut w = Wire::default();
    match result {
        Err(e) => {
            w.words.push(0);
            w.error(e);
        }
        Ok(fit) => {
            w.numbers.push(fit.limit);
            match &fit.fitted {
                Fitted::Over { least } => {
                    w.words.push(1);
                    w.numbers.push(*least);
                }
                Fitted::Fits { chosen, peak, cost } => {
                    w.words.push(2);
                    w.numbers.extend([*peak, *cost]);
                    match chosen {
                        None => w.words.push(0),
                        Some(c) => {
                            w.words.push(1);
                            w.trade(&c.settings);
                            w.text(&c.description);
                            w.numbers.extend([c.time, c.saved]);
                        }
                    }
                }
            }
        }
    }
    w
}

/// Reads what [`encode_fit`] wrote.
///
/// # Errors
/// A [`WireError`] when a buffer ends early or has data left over, or a tag is unknown.
pub fn decode_fit(wire: &Wire) -> Result<Result<FitResult, UiError>, WireError> {
    let mut r = Reader { wire, numbers: 0, words: 0, text: 0 };
    let result = match r.word()? {
        0 => Err(r.error()?),
        tag => {
            let limit = r.number()?;
            let fitted = match tag {
                1 => Fitted::Over { least: r.number()? },
                2 => {
                    let [peak, cost] = r.numbers()?;
                    let chosen = if r.flag()? {
                        let settings = r.trade()?;
                        let description = r.text()?;
                        let [time, saved] = r.numbers()?;
                        Some(Chosen { settings, description, time, saved })
                    } else {
                        None
                    };
                    Fitted::Fits { chosen, peak, cost }
                }
                other => return Err(WireError(format!("unknown fit outcome {other}"))),
            };
            Ok(FitResult { limit, fitted })
        }
    };
    r.finished()?;
    Ok(result)
}

/// Units travel as their index here.
const UNITS: [Units; 3] = [Units::Cost, Units::Model, Units::Measured];

impl Wire {
    fn opt_word(&mut self, v: Option<u32>) {
        match v {
            Some(v) => self.words.extend([1, v]),
            None => self.words.push(0),
        }
    }

    fn opt_number(&mut self, v: Option<f64>) {
        match v {
            Some(v) => {
                self.words.push(1);
                self.numbers.push(v);
            }
            None => self.words.push(0),
        }
    }

    fn opt_text(&mut self, v: Option<&str>) {
        match v {
            Some(v) => {
                self.words.push(1);
                self.text(v);
            }
            None => self.words.push(0),
        }
    }

    /// Recompute and offload as set: modes by index, the offload's kind and fractions, the
    /// copy time and host link.
    fn trade(&mut self, t: &TradeSettings) {
        self.words.push(t.recompute.len() as u32);
        self.words.extend(t.recompute.iter().map(|r| Recompute::ALL.iter().position(|a| a == r).unwrap_or(0) as u32));
        match &t.offload {
            Offload::None => self.words.push(0),
            Offload::Auto => self.words.push(1),
            Offload::PipeOffload => self.words.push(3),
            Offload::Fractions(v) => {
                self.words.extend([2, v.len() as u32]);
                self.numbers.extend_from_slice(v);
            }
        }
        self.opt_number(t.copy_time);
        self.opt_number(t.host_gbps);
    }

    fn error(&mut self, e: &UiError) {
        self.opt_word(e.field.map(|f| Field::ALL.iter().position(|a| *a == f).unwrap_or(0) as u32));
        self.text(&e.message);
    }

    fn costs(&mut self, c: &Costs) {
        self.numbers.extend([c.f, c.b, c.w, c.comm, c.mem_f]);
        self.opt_number(c.overlap);
        self.opt_number(c.mem_w);
        match &c.profile {
            Some(p) => {
                self.words.push(1);
                self.profile(p);
            }
            None => self.words.push(0),
        }
    }

    fn profile(&mut self, p: &CostProfile) {
        for list in [&p.f, &p.b, &p.w, &p.mem_f, &p.mem_w] {
            self.words.push(list.len() as u32);
            self.numbers.extend_from_slice(list);
        }
        self.words.push(p.finer.len() as u32);
        for f in &p.finer {
            self.profile(f);
        }
    }

    fn text(&mut self, s: &str) {
        self.words.push(s.len() as u32);
        self.text.extend_from_slice(s.as_bytes());
    }

    fn computed(&mut self, c: &Computed) {
        self.text(&c.name);
        self.text(&c.label);
        match &c.result {
            Ok(a) => {
                self.words.push(0);
                self.analysis(a);
                self.extras(c.extras.as_deref());
            }
            Err(e) => {
                let field = e.field.and_then(|f| Field::ALL.iter().position(|g| *g == f)).map_or(0, |i| i as u32 + 1);
                self.words.extend([1, field]);
                self.text(&e.message);
            }
        }
    }

    fn parts(&mut self, p: &AttributionParts) {
        self.numbers.extend([p.communication, p.imbalance, p.schedule]);
    }

    fn extras(&mut self, e: Option<&Extras>) {
        let Some(e) = e else {
            self.words.push(0);
            return;
        };
        self.words.push(1);
        match &e.causes {
            Some(c) => {
                self.words.push(1);
                self.causes(c);
            }
            None => self.words.push(0),
        }
        self.opt_number(e.memory);
        match e.bound {
            None => self.words.push(0),
            Some((value, standing)) => {
                self.numbers.push(value);
                match standing {
                    Standing::Meets => self.words.push(1),
                    Standing::Within(excess) => {
                        self.words.push(2);
                        self.numbers.push(excess);
                    }
                    Standing::OverLimit { peak, limit } => {
                        self.words.push(3);
                        self.numbers.extend([peak, limit]);
                    }
                    Standing::NoneFits { least, limit } => {
                        self.words.push(4);
                        self.numbers.extend([least, limit]);
                    }
                }
            }
        }
    }

    /// A schedule's gap causes: the attribution, then per device its gaps (each with the op
    /// it precedes and what that op waited for, or none: the tail).
    fn causes(&mut self, c: &Causes) {
        let a = &c.attribution;
        self.parts(&a.overall);
        self.words.push(a.per_device.len() as u32);
        for p in &a.per_device {
            self.parts(p);
        }
        self.words.extend([c.clamped as u32, c.devices.len() as u32]);
        for gaps in &c.devices {
            self.words.push(gaps.len() as u32);
            for g in gaps {
                self.numbers.extend([g.start, g.end, g.overhead]);
                self.parts(&g.parts);
                match (g.before, g.waited) {
                    (None, _) => self.words.push(0),
                    (Some(before), None) => self.words.extend([1, before]),
                    (Some(before), Some(w)) => {
                        self.words.extend([2, before, w.op.device, w.op.position]);
                        self.pass(w.pass, false);
                        self.pass(w.by, false);
                        self.numbers.push(w.communication);
                    }
                }
            }
        }
    }

    fn analysis(&mut self, a: &Analysis) {
        self.schedule(&a.schedule);
        self.timeline(&a.timeline);
        self.stats(&a.stats);
    }

    fn pass(&mut self, p: Pass, pair: bool) {
        let head = p.kind.index() as u32 | if pair { PAIR } else { 0 } | (p.slice << SLICE_SHIFT);
        self.words.extend([head, p.stage, p.microbatch]);
    }

    fn schedule(&mut self, s: &Schedule) {
        let pl = &s.placement;
        let kind = PLACEMENT_KINDS.iter().position(|k| *k == pl.kind()).unwrap_or(PLACEMENT_KINDS.len() - 1);
        self.words.extend([kind as u32, pl.devices(), pl.stages_per_pipeline(), pl.stages()]);
        self.words.extend_from_slice(pl.stage_devices());
        self.words.extend([s.microbatches, s.slices, s.orders.len() as u32]);
        for order in &s.orders {
            self.words.push(order.len() as u32);
            for op in order {
                match *op {
                    Op::One(p) => self.pass(p, false),
                    Op::Pair(f, b) => {
                        self.pass(f, true);
                        self.pass(b, false);
                    }
                }
            }
        }
        self.words.push(s.copies.len() as u32);
        for copies in &s.copies {
            self.words.push(copies.len() as u32);
            for c in copies {
                // The kind, 2 more when a slot (its start and time) follows in the numbers.
                self.words.extend([c.kind as u32 + if c.slot.is_some() { 2 } else { 0 }, c.at]);
                self.pass(c.pass, false);
                if let Some(slot) = c.slot {
                    self.numbers.extend([slot.start, slot.time]);
                }
            }
        }
    }

    fn timeline(&mut self, t: &Timeline) {
        self.words.push(t.devices.len() as u32);
        for d in &t.devices {
            self.words.extend([d.ops.len() as u32, d.memory.len() as u32]);
            for op in &d.ops {
                self.numbers.extend([op.start, op.end]);
                match op.waited_for {
                    Some(r) => self.words.extend([r.device + 1, r.position]),
                    None => self.words.extend([0, 0]),
                }
            }
            for m in &d.memory {
                self.numbers.extend([m.time, m.value]);
            }
            self.numbers.push(d.peak_memory);
            self.words.push(d.copies.len() as u32);
            for c in &d.copies {
                self.numbers.extend([c.start, c.end]);
            }
        }
    }

    fn stats(&mut self, s: &Stats) {
        self.numbers.extend([
            s.cost,
            s.makespan,
            s.ideal,
            s.bubble_rate,
            s.bubble_over_ideal,
            s.idle_over_makespan,
            s.busiest_work,
            s.bubble_rate_paper,
            s.peak_memory,
            s.peak_without_trade.unwrap_or(f64::NAN),
        ]);
        self.words.push(s.per_device.len() as u32);
        for d in &s.per_device {
            self.words.push(d.device);
            self.numbers.extend([d.start, d.end, d.span, d.busy, d.idle, d.bubble_rate, d.peak_memory, d.work]);
        }
    }
}

/// Reads a [`Wire`] front to back.
struct Reader<'a> {
    wire: &'a Wire,
    numbers: usize,
    words: usize,
    text: usize,
}

fn short(what: &str) -> WireError {
    WireError(format!("the result ends inside its {what}"))
}

impl Reader<'_> {
    fn flag(&mut self) -> Result<bool, WireError> {
        match self.word()? {
            0 => Ok(false),
            1 => Ok(true),
            t => Err(WireError(format!("unknown option tag {t}, expected 0 or 1"))),
        }
    }

    fn opt_word(&mut self) -> Result<Option<u32>, WireError> {
        Ok(if self.flag()? { Some(self.word()?) } else { None })
    }

    fn opt_number(&mut self) -> Result<Option<f64>, WireError> {
        Ok(if self.flag()? { Some(self.number()?) } else { None })
    }

    fn opt_text(&mut self) -> Result<Option<String>, WireError> {
        Ok(if self.flag()? { Some(self.text()?) } else { None })
    }

    fn trade(&mut self) -> Result<TradeSettings, WireError> {
        let n = self.count(1)?;
        let recompute = (0..n)
            .map(|_| {
                let i = self.word()? as usize;
                Recompute::ALL.get(i).copied().ok_or_else(|| WireError(format!("unknown recompute {i}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let offload = match self.word()? {
            0 => Offload::None,
            1 => Offload::Auto,
            3 => Offload::PipeOffload,
            2 => {
                let n = self.word()? as usize;
                let slice = self.wire.numbers.get(self.numbers..).unwrap_or_default();
                let v = slice.get(..n).ok_or_else(|| short("numbers"))?.to_vec();
                self.numbers += n;
                Offload::Fractions(v)
            }
            other => return Err(WireError(format!("unknown offload {other}"))),
        };
        let copy_time = self.opt_number()?;
        let host_gbps = self.opt_number()?;
        Ok(TradeSettings { recompute, offload, copy_time, host_gbps })
    }

    fn error(&mut self) -> Result<UiError, WireError> {
        let field = match self.opt_word()? {
            Some(i) => Some(*Field::ALL.get(i as usize).ok_or_else(|| WireError(format!("unknown field {i}")))?),
            None => None,
        };
        Ok(UiError { field, message: self.text()? })
    }

    fn costs(&mut self) -> Result<Costs, WireError> {
        let [f, b, w, comm, mem_f] = self.numbers()?;
        let overlap = self.opt_number()?;
        let mem_w = self.opt_number()?;
        let profile = if self.flag()? { Some(Arc::new(self.profile(0)?)) } else { None };
        Ok(Costs { f, b, w, comm, overlap, mem_f, mem_w, profile, trade: None })
    }

    /// A cost profile, `depth` levels of finer cuts down (a damaged message cannot recurse
    /// without end: finer cuts have no finer cuts of their own).
    fn profile(&mut self, depth: u32) -> Result<CostProfile, WireError> {
        let mut lists: [Vec<f64>; 5] = Default::default();
        for list in &mut lists {
            let n = self.word()? as usize;
            let slice = self.wire.numbers.get(self.numbers..).unwrap_or_default();
            *list = slice.get(..n).ok_or_else(|| short("numbers"))?.to_vec();
            self.numbers += n;
        }
        let finer = self.count(6)?;
        if finer > 0 && depth > 0 {
            return Err(WireError("a finer cut of a cost profile has finer cuts of its own".into()));
        }
        let finer = (0..finer).map(|_| self.profile(depth + 1).map(Arc::new)).collect::<Result<Vec<_>, _>>()?;
        let [f, b, w, mem_f, mem_w] = lists;
        Ok(CostProfile { f, b, w, mem_f, mem_w, finer })
    }

    /// Checks that every buffer was read to its end.
    fn finished(&self) -> Result<(), WireError> {
        let wire = self.wire;
        if (self.numbers, self.words, self.text) != (wire.numbers.len(), wire.words.len(), wire.text.len()) {
            return Err(WireError("the result has data left over after its end".into()));
        }
        Ok(())
    }

    fn number(&mut self) -> Result<f64, WireError> {
        let v = *self.wire.numbers.get(self.numbers).ok_or_else(|| short("numbers"))?;
        self.numbers += 1;
        Ok(v)
    }

    fn numbers<const N: usize>(&mut self) -> Result<[f64; N], WireError> {
        let slice = self.wire.numbers.get(self.numbers..self.numbers + N).ok_or_else(|| short("numbers"))?;
        self.numbers += N;
        let mut out = [0.0; N];
        out.copy_from_slice(slice);
        Ok(out)
    }

    fn word(&mut self) -> Result<u32, WireError> {
        let v = *self.wire.words.get(self.words).ok_or_else(|| short("words"))?;
        self.words += 1;
        Ok(v)
    }

    fn words(&mut self, n: usize) -> Result<&[u32], WireError> {
        let end = self.words.checked_add(n).ok_or_else(|| short("words"))?;
        let slice = self.wire.words.get(self.words..end).ok_or_else(|| short("words"))?;
        self.words = end;
        Ok(slice)
    }

    /// A count of items that take at least `min_words` words each: never more than the words
    /// left, so a damaged count cannot reserve huge vectors.
    fn count(&mut self, min_words: usize) -> Result<usize, WireError> {
        let n = self.word()? as usize;
        let left = self.wire.words.len() - self.words;
        if n.saturating_mul(min_words) > left {
            return Err(WireError(format!("the result counts {n} items but holds words for fewer")));
        }
        Ok(n)
    }

    fn text(&mut self) -> Result<String, WireError> {
        let n = self.word()? as usize;
        let end = self.text.checked_add(n).ok_or_else(|| short("text"))?;
        let bytes = self.wire.text.get(self.text..end).ok_or_else(|| short("text"))?;
        self.text = end;
        String::from_utf8(bytes.to_vec()).map_err(|_| WireError("the result's text is not UTF-8".into()))
    }

    fn computed(&mut self) -> Result<Computed, WireError> {
        let name = self.text()?;
        let label = self.text()?;
        let mut extras = None;
        let result = match self.word()? {
            0 => {
                let analysis = self.analysis()?;
                extras = self.extras(&analysis)?.map(Arc::new);
                Ok(Arc::new(analysis))
            }
            1 => {
                let field =
                    match self.word()? {
                        0 => None,
                        i => Some(*Field::ALL.get(i as usize - 1).ok_or_else(|| {
                            WireError(format!("unknown field {i}, expected 0 to {}", Field::ALL.len()))
                        })?),
                    };
                Err(UiError { field, message: self.text()? })
            }
            t => return Err(WireError(format!("unknown result tag {t}, expected 0 or 1"))),
        };
        Ok(Computed { name, label, result, extras })
    }

    fn parts(&mut self) -> Result<AttributionParts, WireError> {
        let [communication, imbalance, schedule] = self.numbers()?;
        Ok(AttributionParts { communication, imbalance, schedule })
    }

    /// The extras of `analysis` (its devices bound the gaps' devices).
    fn extras(&mut self, analysis: &Analysis) -> Result<Option<Extras>, WireError> {
        if !self.flag()? {
            return Ok(None);
        }
        let causes = if self.flag()? { Some(Arc::new(self.causes(analysis)?)) } else { None };
        let memory = self.opt_number()?;
        let bound = match self.word()? {
            0 => None,
            tag => {
                let value = self.number()?;
                let standing = match tag {
                    1 => Standing::Meets,
                    2 => Standing::Within(self.number()?),
                    3 => {
                        let [peak, limit] = self.numbers()?;
                        Standing::OverLimit { peak, limit }
                    }
                    4 => {
                        let [least, limit] = self.numbers()?;
                        Standing::NoneFits { least, limit }
                    }
                    t => return Err(WireError(format!("unknown standing tag {t}, expected 0 to 4"))),
                };
                Some((value, standing))
            }
        };
        Ok(Some(Extras { causes, memory, bound }))
    }

    fn causes(&mut self, analysis: &Analysis) -> Result<Causes, WireError> {
        let overall = self.parts()?;
        let n = self.word()? as usize;
        if n != analysis.stats.per_device.len() {
            return Err(WireError(format!(
                "the attribution splits {n} devices, the schedule has {}",
                analysis.stats.per_device.len()
            )));
        }
        let per_device = (0..n).map(|_| self.parts()).collect::<Result<Vec<_>, _>>()?;
        let attribution = Attribution { overall, per_device };
        let clamped = self.word()? as usize;
        let n = self.count(1)?;
        if n != analysis.timeline.devices.len() {
            return Err(WireError(format!(
                "the causes list {n} devices, the schedule has {}",
                analysis.timeline.devices.len()
            )));
        }
        let mut devices = Vec::with_capacity(n);
        for d in 0..n {
            let count = self.count(1)?;
            let ops = &analysis.timeline.devices[d].ops;
            let mut gaps = Vec::with_capacity(count);
            for _ in 0..count {
                let [start, end, overhead] = self.numbers()?;
                let parts = self.parts()?;
                let (before, waited) = match self.word()? {
                    0 => (None, None),
                    1 => (Some(self.word()?), None),
                    2 => {
                        let [before, device, position] = [self.word()?, self.word()?, self.word()?];
                        let (pass, _) = self.pass()?;
                        let (by, _) = self.pass()?;
                        let communication = self.number()?;
                        let op = OpRef { device, position };
                        (Some(before), Some(Waited { op, pass, by, communication }))
                    }
                    t => return Err(WireError(format!("unknown gap tag {t}, expected 0, 1 or 2"))),
                };
                if before.is_some_and(|b| b as usize >= ops.len()) {
                    return Err(WireError(format!("a gap on device {d} precedes an op it does not have")));
                }
                gaps.push(Gap { device: d as u32, start, end, before, waited, parts, overhead });
            }
            devices.push(gaps);
        }
        Ok(Causes { attribution, devices, clamped })
    }

    fn analysis(&mut self) -> Result<Analysis, WireError> {
        let schedule = self.schedule()?;
        let timeline = self.timeline()?;
        let stats = self.stats()?;
        Ok(Analysis { schedule, timeline, stats, times: None })
    }

    fn pass(&mut self) -> Result<(Pass, bool), WireError> {
        let w = self.words(3)?;
        let kind = *PassKind::ALL
            .get((w[0] & KIND_BITS) as usize)
            .ok_or_else(|| WireError(format!("unknown pass kind {}", w[0] & KIND_BITS)))?;
        let pass = Pass { kind, stage: w[1], microbatch: w[2], slice: w[0] >> SLICE_SHIFT };
        Ok((pass, w[0] & PAIR != 0))
    }

    fn schedule(&mut self) -> Result<Schedule, WireError> {
        let kind = self.word()? as usize;
        let kind = *PLACEMENT_KINDS.get(kind).ok_or_else(|| WireError(format!("unknown placement kind {kind}")))?;
        let devices = self.word()?;
        let per_pipeline = self.word()?;
        let stages = self.count(1)?;
        let stage_device = self.words(stages)?.to_vec();
        let placement = placement(kind, devices, per_pipeline, stage_device)?;
        let microbatches = self.word()?;
        let slices = self.word()?;
        let n = self.count(1)?;
        let mut orders = Vec::with_capacity(n);
        for _ in 0..n {
            let len = self.count(3)?;
            let mut order = Vec::with_capacity(len);
            for _ in 0..len {
                let (p, pair) = self.pass()?;
                order.push(if pair { Op::Pair(p, self.pass()?.0) } else { Op::One(p) });
            }
            orders.push(order);
        }
        let n = self.count(1)?;
        let mut copies = Vec::with_capacity(n);
        for _ in 0..n {
            let len = self.count(5)?;
            let mut list = Vec::with_capacity(len);
            for _ in 0..len {
                let [tag, at] = [self.word()?, self.word()?];
                let kind = *CopyKind::ALL
                    .get(tag as usize % 2)
                    .filter(|_| tag < 4)
                    .ok_or_else(|| WireError(format!("unknown copy kind {tag}")))?;
                let pass = self.pass()?.0;
                let slot = if tag >= 2 {
                    let [start, time] = self.numbers()?;
                    Some(CopySlot { start, time })
                } else {
                    None
                };
                list.push(CopyOp { kind, pass, at, slot });
            }
            copies.push(list);
        }
        Ok(Schedule { placement, microbatches, slices, orders, copies })
    }

    fn timeline(&mut self) -> Result<Timeline, WireError> {
        let n = self.count(2)?;
        let mut devices = Vec::with_capacity(n);
        for _ in 0..n {
            let ops = self.count(2)?;
            let points = self.word()? as usize;
            let times = self.wire.numbers.get(self.numbers..).unwrap_or_default();
            if times.len() < ops.saturating_mul(2).saturating_add(points.saturating_mul(2)).saturating_add(1) {
                return Err(short("timeline"));
            }
            let waits = self.words(ops.saturating_mul(2))?;
            let mut timed = Vec::with_capacity(ops);
            for (t, w) in times.chunks_exact(2).zip(waits.chunks_exact(2)).take(ops) {
                let waited_for = (w[0] > 0).then(|| OpRef { device: w[0] - 1, position: w[1] });
                timed.push(TimedOp { start: t[0], end: t[1], waited_for });
            }
            self.numbers += 2 * ops;
            let memory = self.wire.numbers[self.numbers..self.numbers + 2 * points]
                .chunks_exact(2)
                .map(|m| MemPoint { time: m[0], value: m[1] })
                .collect();
            self.numbers += 2 * points;
            let peak_memory = self.number()?;
            let n = self.count(0)?;
            let times = self.wire.numbers.get(self.numbers..).unwrap_or_default();
            if times.len() < n.saturating_mul(2) {
                return Err(short("copy times"));
            }
            let copies =
                times.chunks_exact(2).take(n).map(|t| TimedOp { start: t[0], end: t[1], waited_for: None }).collect();
            self.numbers += 2 * n;
            devices.push(DeviceTimeline { ops: timed, memory, peak_memory, copies });
        }
        Ok(Timeline { devices })
    }

    fn stats(&mut self) -> Result<Stats, WireError> {
        let [cost, makespan, ideal, bubble_rate, bubble_over_ideal, idle_over_makespan, busiest_work, bubble_rate_paper, peak_memory, without] =
            self.numbers()?;
        let n = self.count(1)?;
        let mut per_device = Vec::with_capacity(n);
        for _ in 0..n {
            let device = self.word()?;
            let [start, end, span, busy, idle, bubble_rate, peak_memory, work] = self.numbers()?;
            per_device.push(DeviceStats { device, start, end, span, busy, idle, bubble_rate, peak_memory, work });
        }
        Ok(Stats {
            cost,
            makespan,
            ideal,
            bubble_rate,
            bubble_over_ideal,
            idle_over_makespan,
            busiest_work,
            bubble_rate_paper,
            peak_memory,
            peak_without_trade: Some(without).filter(|v| !v.is_nan()),
            per_device,
        })
    }
}

/// The placement of `kind` with this stage table, built by its constructor (the table must be
/// the one the constructor builds, so nothing can arrive that the core could not make).
fn placement(
    kind: PlacementKind,
    devices: u32,
    per_pipeline: u32,
    stage_device: Vec<u32>,
) -> Result<Placement, WireError> {
    let stages = stage_device.len() as u32;
    let built = match kind {
        PlacementKind::Linear => Placement::linear(devices),
        PlacementKind::Interleaved => Placement::interleaved(devices, per_pipeline.checked_div(devices).unwrap_or(0)),
        PlacementKind::V => Placement::v_shape(devices),
        PlacementKind::Wave => Placement::wave(devices, stages.checked_div(2 * devices).unwrap_or(0)),
        PlacementKind::TwoDirectional => Placement::two_directional(devices),
        PlacementKind::Custom => Placement::custom(devices, stage_device.clone()),
    };
    if built.stage_devices() != stage_device || built.stages_per_pipeline() != per_pipeline {
        return Err(WireError(format!(
            "the {} placement of {devices} devices does not match its stage table",
            kind.name()
        )));
    }
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bubblescope::{ScheduleParams, FAMILIES};

    fn computed(name: &str, params: &ScheduleParams) -> Computed {
        crate::state::compute_one(name, params, crate::state::Place::Worker, bubblescope::units::Units::Cost, true)
    }

    fn same(a: &Computed, b: &Computed) {
        assert_eq!((&a.name, &a.label), (&b.name, &b.label));
        match (&a.result, &b.result) {
            (Ok(x), Ok(y)) => {
                assert_eq!(x.schedule, y.schedule, "{}", a.name);
                assert_eq!(x.timeline, y.timeline, "{}", a.name);
                assert_eq!(x.stats, y.stats, "{}", a.name);
            }
            (Err(x), Err(y)) => assert_eq!(x, y),
            _ => panic!("{}: one side failed", a.name),
        }
        assert_eq!(a.extras, b.extras, "{}", a.name);
    }

    #[test]
    fn extras_travel_with_their_schedule() {
        // Communication and unequal stages: every part of the split, gaps that waited for a
        // hop, a memory part (zb-v under a limit) and a bound.
        let (link, warnings) =
            bubblescope::permalink::parse("schedule=zb-v&devices=4&microbatches=8&f=1,1,2,1&comm=0.5&mem-limit=4.5");
        assert!(warnings.is_empty(), "{warnings:?}");
        let main = computed("zb-v", &link.params);
        let extras = main.extras.clone().unwrap();
        let causes = extras.causes.clone().unwrap();
        assert!(causes.gaps().any(|g| g.waited.is_some_and(|w| w.communication > 0.0)));
        assert!(extras.memory.is_some() && extras.bound.is_some());
        let compared = crate::state::compute_one("1f1b", &link.params, crate::state::Place::Worker, Units::Cost, false);
        let c = compared.extras.clone().unwrap();
        assert!(
            c.causes.is_some() && c.memory.is_none() && c.bound.is_none(),
            "compared schedules carry their causes only"
        );
        let parts = Parts { main, compare: vec![compared], baseline: None, elapsed_ms: 1.0 };
        let wire = encode(&parts);
        let back = decode(&wire).unwrap();
        same(&back.main, &parts.main);
        same(&back.compare[0], &parts.compare[0]);
        damage_is_an_error(&wire, wire.words.len() / 40 + 1, decode);
    }

    #[test]
    fn settings_travel_typed() {
        let query = "schedule=zb-v&devices=6&microbatches=12&chunks=2&group=3&waves=2&seq-splits=2&f=1,2,3,4,5,6&b=2&comm=0.5&overlap=2.5&mem-w=0.25&mem-limit=7.5&compare=1f1b,zb-h1";
        let (link, warnings) = bubblescope::permalink::parse(query);
        assert!(warnings.is_empty(), "{warnings:?}");
        let hand = link.settings();
        assert!(hand.params.costs.profile.is_some());
        assert_eq!(decode_settings(&encode_settings(&hand)).unwrap(), hand);
        // A model's settings, and costs with finer cuts (what a model derives).
        let (link, warnings) = bubblescope::permalink::parse(
            "schedule=interleaved-1f1b&devices=4&model=llama-3-8b&seq=2048&micro-batch=2&tflops=300&bandwidth=100&latency=3&flash-attention=false&tp=2&layout=8,8,8,8&mem-limit=80GiB",
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let model = link.settings();
        assert!(model.model.given());
        assert_eq!(decode_settings(&encode_settings(&model)).unwrap(), model);
        let (link, _) = bubblescope::permalink::parse("schedule=interleaved-1f1b&devices=4&model=llama-3-8b");
        let mut model = link.settings();
        model.params = model.effective_params().unwrap();
        assert!(model.params.costs.profile.as_ref().is_some_and(|p| !p.finer.is_empty()));
        let wire = encode_settings(&model);
        assert_eq!(decode_settings(&wire).unwrap(), model);
        damage_is_an_error(&wire, 1, decode_settings);
    }

    #[test]
    fn trade_settings_and_fit_results_travel_typed() {
        let (link, warnings) = bubblescope::permalink::parse(
            "devices=4&mem-limit=5&recompute=full,none,selective,none&offload=0.5,1,0,0&copy-time=0.25",
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let settings = link.settings();
        let wire = encode_settings(&settings);
        assert_eq!(decode_settings(&wire).unwrap(), settings);
        damage_is_an_error(&wire, 1, decode_settings);

        let chosen = Chosen {
            settings: settings.trade.clone(),
            description: "recompute full on device 0".into(),
            time: 1.5,
            saved: 2.0,
        };
        let results = [
            Ok(FitResult { limit: 5.0, fitted: Fitted::Fits { chosen: Some(chosen), peak: 4.5, cost: 30.0 } }),
            Ok(FitResult { limit: 5.0, fitted: Fitted::Fits { chosen: None, peak: 4.0, cost: 28.0 } }),
            Ok(FitResult { limit: 1.0, fitted: Fitted::Over { least: 1.25 } }),
            Err(UiError { field: Some(Field::MemLimit), message: "no limit\n  hint: set one".into() }),
        ];
        for result in results {
            let wire = encode_fit(&result);
            assert_eq!(decode_fit(&wire).unwrap(), result);
            damage_is_an_error(&wire, 1, decode_fit);
        }
    }

    /// Every `step`-th cut of `wire`'s words, and a word too many, fail to decode.
    fn damage_is_an_error<T>(wire: &Wire, step: usize, decode: impl Fn(&Wire) -> Result<T, WireError>) {
        for cut in (0..wire.words.len()).step_by(step) {
            let damaged = Wire { words: wire.words[..cut].to_vec(), ..wire.clone() };
            assert!(decode(&damaged).is_err(), "cut at {cut}");
        }
        let longer = Wire { words: wire.words.iter().copied().chain([7]).collect(), ..wire.clone() };
        assert!(decode(&longer).is_err(), "a word too many");
    }

    #[test]
    fn copy_slots_round_trip() {
        // PipeOffload gives every copy a slot: its start and time travel with it.
        let trade = bubblescope::Trade {
            offload: Offload::PipeOffload,
            chunks: Some(1),
            copy_time: Some(0.6),
            ..bubblescope::Trade::default()
        };
        let mut params = ScheduleParams { chunks: Some(2), group: Some(4), ..ScheduleParams::new(4, 8) };
        params.costs = Costs { mem_f: 2.0, trade: Some(Arc::new(trade)), ..Costs::fbw(2.0, 2.0, 2.0) };
        let main = computed("group-interleaved", &params);
        let slotted = main.result.as_ref().map(|a| a.schedule.copies.iter().flatten().all(|c| c.slot.is_some()));
        assert_eq!(slotted.ok(), Some(true), "{:?}", main.result.as_ref().err());
        let parts = Parts { main: main.clone(), compare: Vec::new(), baseline: None, elapsed_ms: 1.0 };
        same(&decode(&encode(&parts)).unwrap().main, &parts.main);
    }

    #[test]
    fn every_family_round_trips() {
        let mut params = ScheduleParams::new(4, 8);
        params.costs.f = 1.5;
        params.costs.comm = 0.25;
        params.costs.mem_w = Some(0.5);
        for fam in FAMILIES {
            let main = computed(fam.name, &params);
            assert!(main.result.is_ok(), "{}: {:?}", fam.name, main.result.err());
            let compare = vec![computed("zb-h1", &params), computed("nope", &params)];
            let parts = Parts { main: main.clone(), compare, baseline: main.result.clone().ok(), elapsed_ms: 3.5 };
            let back = decode(&encode(&parts)).unwrap();
            same(&back.main, &parts.main);
            assert_eq!(back.compare.len(), 2);
            same(&back.compare[0], &parts.compare[0]);
            same(&back.compare[1], &parts.compare[1]);
            assert!(Arc::ptr_eq(back.baseline.as_ref().unwrap(), back.main.result.as_ref().unwrap()));
            assert_eq!(back.elapsed_ms, 3.5);
        }
    }

    #[test]
    fn errors_keep_their_field_and_a_separate_baseline_travels() {
        let params = ScheduleParams::new(4, 8);
        let mut bad = params.clone();
        bad.devices = 500;
        let main = computed("1f1b", &bad);
        assert_eq!(main.result.as_ref().unwrap_err().field, Some(Field::Devices));
        let base = computed("1f1b", &params).result.ok();
        let parts = Parts { main, compare: Vec::new(), baseline: base.clone(), elapsed_ms: 0.0 };
        let back = decode(&encode(&parts)).unwrap();
        same(&back.main, &parts.main);
        assert_eq!(back.baseline.unwrap().stats, base.unwrap().stats);
    }

    #[test]
    fn a_damaged_result_is_an_error_not_a_panic() {
        let params = ScheduleParams::new(3, 4);
        let parts = Parts { main: computed("zb-v", &params), compare: Vec::new(), baseline: None, elapsed_ms: 1.0 };
        let wire = encode(&parts);
        for cut in [0, 1, wire.words.len() / 2, wire.words.len() - 1] {
            let damaged = Wire { words: wire.words[..cut].to_vec(), ..wire.clone() };
            assert!(decode(&damaged).is_err(), "cut at {cut}");
        }
        for cut in [0, wire.numbers.len() / 2, wire.numbers.len() - 1] {
            let damaged = Wire { numbers: wire.numbers[..cut].to_vec(), ..wire.clone() };
            assert!(decode(&damaged).is_err(), "numbers cut at {cut}");
        }
        let mut huge = wire.clone();
        huge.words[0] = u32::MAX;
        assert!(decode(&huge).is_err());
        let mut longer = wire;
        longer.words.push(7);
        assert!(decode(&longer).is_err());
    }

    #[test]
    fn every_family_compared_at_once_round_trips_and_damage_is_an_error() {
        let mut params = ScheduleParams::new(4, 8);
        params.costs.comm = 0.5;
        let link = bubblescope::permalink::Permalink { params, ..Default::default() };
        let all = crate::compare::compute_all(&link.settings()).unwrap();
        assert!(all.runs.len() >= 15 && all.runs.iter().any(|r| r.pareto), "{} runs", all.runs.len());
        let key = |a: &AllRuns| {
            let runs: Vec<_> = a
                .runs
                .iter()
                .map(|r| (r.family.name, r.chunks, r.cost, r.peak_memory, r.bubble_rate, r.pareto))
                .collect();
            let invalid: Vec<_> = a.invalid.iter().map(|r| (r.family.name, r.error.clone())).collect();
            (runs, invalid)
        };
        let wire = encode_all(&Ok(all.clone()));
        let back = decode_all(&wire).unwrap().unwrap();
        assert_eq!(key(&back), key(&all));
        let refused = AllRuns {
            runs: Vec::new(),
            invalid: vec![AllRefused { family: &FAMILIES[0], error: "too big\n  hint: fewer".into() }],
        };
        assert_eq!(key(&decode_all(&encode_all(&Ok(refused.clone()))).unwrap().unwrap()), key(&refused));
        let err = decode_all(&encode_all(&Err("bad layout".into()))).unwrap();
        assert_eq!(err.unwrap_err(), "bad layout");
        for cut in 0..wire.words.len() {
            let damaged = Wire { words: wire.words[..cut].to_vec(), ..wire.clone() };
            assert!(decode_all(&damaged).is_err(), "cut at {cut}");
        }
        let mut renamed = wire.clone();
        let first = renamed.words[2] as usize;
        renamed.text[..first].fill(b'x');
        assert!(decode_all(&renamed).unwrap_err().0.contains("unknown family"));
    }
}
