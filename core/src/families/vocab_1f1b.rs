//! The 1F1B loop with the vocabulary layers split over the devices, shared by Vocab-1 (two
//! barriers) and Vocab-2 (one barrier): the order each rank runs its passes in, as the
//! authors' loop runs them (`forward_backward_pipelining_with_vocab_parallel`).
//!
//! Each rank runs, besides its stage's F and fused backward: the input layer's forward IF of
//! its vocabulary shard (all of them ahead of the first stage's F), the output layer's step
//! (the backward T of the previous microbatch, then the forward S of this one), and the input
//! layer's backward IB (after the first stage's B). The S steps are placed by
//! [`SPlacement`]; Vocab-1 runs one more warm-up forward (its B waits for the T barrier, one
//! microbatch later). The loss on the last stage is part of its B here.

use super::vocab_common::SPlacement;
use crate::schedule::{Pass, Placement, Schedule, VocabSplit};

/// Which of the two loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Barriers {
    /// Vocab-1 (`--disable-backward-fusion`): barriers after S and after T.
    Two,
    /// Vocab-2 (the default): one barrier after S.
    One,
}

/// The orders of `devices` ranks and `microbatches` microbatches, the S steps placed for a
/// stage's forward `f` and backward `b`.
pub(crate) fn vocab_1f1b(devices: u32, microbatches: u32, f: f64, b: f64, barriers: Barriers) -> Schedule {
    let placement = SPlacement::new(devices, f, b);
    let mut schedule = Schedule::new(Placement::linear(devices), microbatches);
    for rank in 0..devices {
        let order = Rank::new(rank, devices, microbatches, &placement, barriers).run();
        for pass in order {
            schedule.push(rank, pass);
        }
    }
    schedule.vocab = Some(VocabSplit {
        barriers: match barriers {
            Barriers::Two => 2,
            Barriers::One => 1,
        },
        side_stream: true,
    });
    schedule
}

/// One rank's loop state.
struct Rank<'a> {
    rank: u32,
    devices: u32,
    m: u32,
    s: &'a SPlacement,
    two: bool,
    /// Input-layer forwards and backwards not yet created, S steps not yet run (the
    /// authors' `num_remaining_s_pass`; it goes below zero under Vocab-1).
    if_left: u32,
    ib_left: u32,
    s_left: i64,
    /// The IB created and not yet run (its callback).
    ib_pending: Option<u32>,
    out: Vec<Pass>,
}

impl<'a> Rank<'a> {
    fn new(rank: u32, devices: u32, m: u32, s: &'a SPlacement, barriers: Barriers) -> Rank<'a> {
        Rank {
            rank,
            devices,
            m,
            s,
            two: barriers == Barriers::Two,
            if_left: m,
            ib_left: m,
            s_left: i64::from(m),
            ib_pending: None,
            out: Vec::new(),
        }
    }

    fn f(&mut self, mb: u32) {
        self.out.push(Pass::f(self.rank, mb));
    }

    fn b(&mut self, mb: u32) {
        self.out.push(Pass::bw(self.rank, mb));
    }

    /// Creates the next input-layer forward: it runs at once.
    fn input_f(&mut self) {
        let mb = self.m - self.if_left;
        self.out.push(Pass::input_f(self.rank, mb));
        self.if_left -= 1;
    }

    /// The output-layer step of microbatch `i`: T of `i − 1`, then S of `i`.
    fn step(&mut self, i: u32) {
        if i > 0 {
            self.out.push(Pass::t(self.rank, i - 1));
        }
        if i < self.m {
            self.out.push(Pass::s(self.rank, i));
        }
    }

    /// The microbatch of the next S step.
    fn next_s(&self) -> u32 {
        (i64::from(self.m) - self.s_left) as u32
    }

    /// Creates the next input-layer backward when enough S steps have run; it runs later.
    fn create_ib(&mut self, warmup_offset: u32) {
        let first = i64::from(self.s.warmup_s[0] + 2 + warmup_offset);
        self.ib_pending = if i64::from(self.m) - self.s_left >= first {
            let mb = self.m - self.ib_left;
            self.ib_left -= 1;
            Some(mb)
        } else {
            None
        };
    }

    fn run_ib(&mut self) {
        if let Some(mb) = self.ib_pending.take() {
            self.out.push(Pass::input_b(self.rank, mb));
        }
    }

    /// The S step of the steady state, with the input-layer forward it creates and the
    /// pending IB.
    fn steady_s(&mut self, warmup_offset: u32) {
        let i = self.next_s();
        self.step(i);
        if i64::from(i) >= i64::from(self.s.warmup_s[0] + warmup_offset) && self.if_left > 0 {
            self.input_f();
        }
        self.run_ib();
        self.s_left -= 1;
    }

    fn run(mut self) -> Vec<Pass> {
        let (p, m, r) = (self.devices, self.m, self.rank as usize);
        let warmup = (p - self.rank).min(m);
        let first_warmup = p.min(m);
        let mut remaining = m.saturating_sub(warmup + 1);
        if self.two {
            remaining = remaining.saturating_sub(1);
        }
        let wo = u32::from(self.two);
        let (bsf, offset) = (self.s.bsf[r], self.s.offsets[r]);
        let (f, b) = (self.s.f, self.s.b);

        // Warm-up: the input layer runs ahead of the first stage's forwards.
        for _ in 0..(first_warmup - warmup + 1) {
            self.input_f();
        }
        for i in 0..warmup {
            self.input_f();
            self.f(i);
        }
        self.step(0);
        self.s_left -= 1;
        if self.two {
            self.input_f();
        }
        if warmup < m {
            self.f(warmup);
        }
        if self.two {
            self.step(1);
            self.s_left -= 1;
            if warmup + 2 <= m {
                self.f(warmup + 1);
            }
        }
        for i in 0..self.s.warmup_s[r] {
            if self.s_left >= 1 - i64::from(wo) {
                self.step(i + 1 + wo);
                if i + 1 >= self.s.warmup_s[0] && self.if_left > 0 {
                    self.input_f();
                }
                self.s_left -= 1;
            }
        }

        // Steady state: one B and one F, the S step between them (BSF) or after F (BFS).
        let early_ib = bsf || offset - f > -b;
        for i in 0..remaining {
            if early_ib {
                self.create_ib(wo);
            }
            self.b(i);
            if bsf {
                self.steady_s(wo);
            }
            if !early_ib {
                self.create_ib(wo);
            }
            self.f(i + warmup + 1 + wo);
            if !bsf {
                self.steady_s(wo);
            }
        }

        // Cool-down: the remaining backwards, each with its S step.
        for i in 0..(m - remaining) {
            if early_ib {
                self.create_ib(wo);
            }
            self.b(i + remaining);
            if bsf {
                self.cooldown_s(wo);
            }
            if !early_ib {
                self.create_ib(wo);
            }
            if !bsf {
                self.cooldown_s(wo);
            }
        }
        while self.ib_left > 0 {
            let mb = m - self.ib_left;
            self.out.push(Pass::input_b(self.rank, mb));
            self.ib_left -= 1;
        }
        if !self.two {
            self.step(m);
        }
        self.out
    }

    /// The S step of the cool-down (while S steps remain) and the pending IB.
    fn cooldown_s(&mut self, warmup_offset: u32) {
        if self.s_left >= 1 - i64::from(warmup_offset) {
            let i = self.next_s();
            self.step(i);
            self.s_left -= 1;
        }
        self.run_ib();
    }
}
