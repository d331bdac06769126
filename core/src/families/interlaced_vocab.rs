//! The interlaced schedule (Yeung et al., MLSys 2025, the authors' `interlaced_schedule.py`):
//! 1F1B with the output layer's S and T run back to back on every device, synchronously, and
//! the input layer's IF and IB fused where both are due. Every rank warms up with `⌊3p/2⌋ − r`
//! forwards: rank 0 holds 1.5p microbatches of activation. The barriers block the compute
//! stream (synchronous collectives), two per microbatch: after S and after T.

use super::vocab_common::{check_microbatches, vocab_costs};
use super::{per_device_microbatch, BubbleQuantity, Family, FamilyGroup, Prediction};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::{Pass, Placement, Schedule, VocabSplit};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "interlaced-vocab",
    title: "Interlaced (vocabulary)",
    group: FamilyGroup::Vocabulary,
    summary: "1F1B with S and T interlaced on every device, synchronously; 1.5P microbatches of memory",
    reference: "Yeung, Qi, Lin, Wan, Balancing Pipeline Parallelism with Vocabulary Parallelism (MLSys 2025)",
    url: "https://arxiv.org/abs/2411.05288",
    constraints: "a vocabulary (--s, --t or a model); an even number of devices; at least 1.5P + 1 microbatches",
    passes: per_device_microbatch::<6>,
    generate,
    predict,
    ..Family::DEFAULTS
};

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    vocab_costs(params, FAMILY.name)?;
    let p = params.devices;
    if p % 2 == 1 {
        return Err(ParamError::new(
            Field::Devices,
            format!("{} needs an even number of devices, found {p}", FAMILY.name),
        )
        .hint("the authors' loop pairs ranks by parity; with an odd count it fails before its first backward")
        .hint(format!("use --devices {} or {}", p - 1, p + 1)));
    }
    check_microbatches(
        params,
        p * 3 / 2 + 1,
        FAMILY.name,
        "the authors' loop warms up with 1.5P forwards; with 1.5P microbatches or fewer it runs an input layer past the last microbatch",
    )?;
    Ok(interlaced(p, params.microbatches))
}

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    let p = params.devices;
    Some(Prediction {
        bubble: None,
        bubble_formula: "none published in closed form",
        bubble_quantity: BubbleQuantity::CostMinusIdeal,
        peak_memory: Some((0..p).map(|d| f64::from(p * 3 / 2 - d) * params.costs.mem_f).collect()),
        memory_formula: "(⌊3P/2⌋ − d)·mem-f on device d",
    })
}

/// The interlaced orders for `devices` (even) and `microbatches`.
pub(crate) fn interlaced(devices: u32, microbatches: u32) -> Schedule {
    let mut schedule = Schedule::new(Placement::linear(devices), microbatches);
    for rank in 0..devices {
        for pass in Rank::new(rank, devices, microbatches).run() {
            schedule.push(rank, pass);
        }
    }
    schedule.vocab = Some(VocabSplit { barriers: 2, side_stream: false });
    schedule
}

struct Rank {
    rank: u32,
    p: u32,
    m: u32,
    if_left: u32,
    ib_left: u32,
    backwards: u32,
    out: Vec<Pass>,
}

impl Rank {
    fn new(rank: u32, p: u32, m: u32) -> Rank {
        Rank { rank, p, m, if_left: m, ib_left: m, backwards: 0, out: Vec::new() }
    }

    fn input_f(&mut self) {
        self.out.push(Pass::input_f(self.rank, self.m - self.if_left));
        self.if_left -= 1;
    }

    fn input_b(&mut self) {
        self.out.push(Pass::input_b(self.rank, self.m - self.ib_left));
        self.ib_left -= 1;
    }

    /// The output layer of microbatch `i`: S, then T at once.
    fn step(&mut self, i: u32) {
        self.out.push(Pass::s(self.rank, i));
        self.out.push(Pass::t(self.rank, i));
    }

    fn f(&mut self, i: u32) {
        self.out.push(Pass::f(self.rank, i));
    }

    /// The next backward: it runs the oldest saved forward (the authors' loop keeps a queue;
    /// the index it passes only gates the gradient sync).
    fn b(&mut self) {
        self.out.push(Pass::bw(self.rank, self.backwards));
        self.backwards += 1;
    }

    /// The input-layer passes due after the output-layer step of microbatch `i`: an IF from
    /// the first stage's cool-down count on, an IB from two after it (one after it when the
    /// first stage runs B before F); both fused, forward first.
    fn embedding(&mut self, i: u32, first_cooldown: u32, first_fbs: bool) {
        let forward = i + 1 >= first_cooldown && self.if_left > 0;
        let backward = i > first_cooldown || (!first_fbs && i == first_cooldown);
        if forward {
            self.input_f();
        }
        if backward {
            self.input_b();
        }
    }

    fn run(mut self) -> Vec<Pass> {
        let (p, m, r) = (self.p, self.m, self.rank);
        let warmup = (p * 3 / 2 - r).min(m);
        let first_warmup = (p * 3 / 2).min(m);
        let cooldown = (p - r).min(m);
        let first_cooldown = p.min(m);
        let waiting = warmup.saturating_sub(cooldown).saturating_sub((p - r - 1) / 2);
        let remaining = m - warmup;
        let fbs = r % 2 == p % 2;
        let first_fbs = p % 2 == 0;

        for _ in 0..(first_warmup - warmup + 1) {
            self.input_f();
        }
        for i in 0..warmup {
            self.input_f();
            self.f(i);
        }
        for i in 0..cooldown {
            self.step(i);
            if i + 1 >= first_cooldown && self.if_left > 0 {
                self.input_f();
            }
        }
        for i in 0..waiting {
            self.b();
            self.step(i + cooldown);
            self.embedding(i + cooldown, first_cooldown, first_fbs);
        }
        for i in 0..remaining {
            if fbs {
                self.f(i + warmup);
                self.b();
            } else {
                self.b();
                self.f(i + warmup);
            }
            self.step(i + cooldown + waiting);
            self.embedding(i + cooldown + waiting, first_cooldown, first_fbs);
        }
        for i in 0..warmup.saturating_sub(cooldown + waiting) {
            self.b();
            self.step(i + cooldown + waiting + remaining);
            if self.ib_left > 0 {
                self.input_b();
            }
        }
        for _ in 0..cooldown {
            self.b();
            if self.ib_left > 0 {
                self.input_b();
            }
        }
        while self.ib_left > 0 {
            self.input_b();
        }
        self.out
    }
}
