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

use bubblescope::sim::{DeviceTimeline, MemPoint, OpRef, TimedOp};
use bubblescope::{
    Analysis, DeviceStats, Field, Op, Pass, PassKind, Placement, PlacementKind, Schedule, Stats, Timeline,
};

use crate::compare::{AllRefused, AllRun, AllRuns};
use crate::state::{Computed, UiError};

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

/// Bit set in a pass's first word when it opens an overlapped pair (its partner follows).
const PAIR: u32 = 1 << 2;
/// A pass's slice sits above the kind and pair bits.
const SLICE_SHIFT: u32 = 3;

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

impl Wire {
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
            }
            Err(e) => {
                let field = e.field.and_then(|f| Field::ALL.iter().position(|g| *g == f)).map_or(0, |i| i as u32 + 1);
                self.words.extend([1, field]);
                self.text(&e.message);
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
        let result = match self.word()? {
            0 => Ok(Arc::new(self.analysis()?)),
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
        Ok(Computed { name, label, result })
    }

    fn analysis(&mut self) -> Result<Analysis, WireError> {
        let schedule = self.schedule()?;
        let timeline = self.timeline()?;
        let stats = self.stats()?;
        Ok(Analysis { schedule, timeline, stats })
    }

    fn pass(&mut self) -> Result<(Pass, bool), WireError> {
        let w = self.words(3)?;
        let kind = PassKind::ALL[(w[0] & 3) as usize];
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
        Ok(Schedule { placement, microbatches, slices, orders })
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
            devices.push(DeviceTimeline { ops: timed, memory, peak_memory });
        }
        Ok(Timeline { devices })
    }

    fn stats(&mut self) -> Result<Stats, WireError> {
        let [cost, makespan, ideal, bubble_rate, bubble_over_ideal, idle_over_makespan, busiest_work, bubble_rate_paper, peak_memory] =
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
        crate::state::compute_one(name, params, crate::state::Budget::Background, bubblescope::units::Units::Cost)
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
