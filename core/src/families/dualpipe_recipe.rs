//! DeepSeek's 8-step DualPipe recipe, shared by `dualpipe` and `dualpipe-v`.
//!
//! Both schedules hold two stages on every device and run the same per-device program
//! (deepseek-ai/DualPipe, `dualpipe.py` and `dualpipev.py`, `step()`; peers.md §2.2). The
//! program speaks of two *phases*: phase 0 is the device's stage nearer the input of its
//! direction, phase 1 the other one. With `H` half ranks, half rank `h` and `N` microbatches
//! per phase (DualPipe: `H = P/2`, `h = min(d, P−1−d)`, `N = M/2`; DualPipeV: `H = P`,
//! `h = d`, `N = M`), the device of half rank `h` runs:
//!
//! | step | pattern          | count          |
//! |------|------------------|----------------|
//! | 1    | `F0`             | `2(H−h−1)`     |
//! | 2    | `F0 F1`          | `h+1`          |
//! | 3    | `B1 W F1`        | `H−h−1`        |
//! | 4    | `F0&B1  F1&B0`   | `N−2H+h+1`     |
//! | 5    | `B1  F1&B0`      | `H−h−1`        |
//! | 6    | `B1 B0`          | `h+1`          |
//! | 7    | `W B0`           | `H−h−1`        |
//! | 8    | `W`              | `h+1`          |
//!
//! The details are in `docs/schedule-families.md`, under `families/dualpipe_recipe.rs`.

use std::collections::VecDeque;

use super::formula::{sym, Assumption, Explanation, Expr, Formula, Sym, Term};
use super::BubbleQuantity;
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::{Op, Pass};

/// The two stages one device runs, in the recipe's phase order, and the first microbatch
/// each of them sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Phases {
    /// Global stage of phase 0 and phase 1.
    pub stages: [u32; 2],
    /// The microbatch of the first forward of phase 0 and phase 1.
    pub first_microbatch: [u32; 2],
}

/// The sizes the recipe is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    /// `H`: DualPipe's `num_half_ranks`, DualPipeV's `num_ranks`.
    pub half_ranks: u32,
    /// `N`: microbatches each phase runs. At least `2 * half_ranks`.
    pub microbatches_per_phase: u32,
}

impl Shape {
    /// The number of iterations of each of the 8 steps for half rank `half_rank`.
    pub fn step_counts(self, half_rank: u32) -> [u32; 8] {
        let (big_h, h, n) = (self.half_ranks, half_rank, self.microbatches_per_phase);
        let outer = big_h.saturating_sub(h + 1);
        let inner = h + 1;
        [2 * outer, inner, outer, (n + h + 1).saturating_sub(2 * big_h), outer, inner, outer, inner]
    }
}

/// The order of the device of half rank `half_rank`, its passes named through `phases`.
///
/// Requires `half_rank < shape.half_ranks` and `shape.microbatches_per_phase >= 2 *
/// shape.half_ranks`; the families check both before calling.
pub(super) fn device_order(shape: Shape, half_rank: u32, phases: Phases) -> Vec<Op> {
    let [step_1, step_2, step_3, step_4, step_5, step_6, step_7, step_8] = shape.step_counts(half_rank);
    let is_middle = half_rank + 1 == shape.half_ranks;
    let mut program = Program::new(phases, 4 * shape.microbatches_per_phase as usize);

    for _ in 0..step_1 {
        program.forward(0);
    }
    for _ in 0..step_2 {
        program.forward(0);
        program.forward(1);
    }
    for _ in 0..step_3 {
        program.backward(1, Backward::Split);
        program.weight();
        program.forward(1);
    }
    for i in 0..step_4 {
        if i == 0 && is_middle {
            program.forward(0);
            program.backward(1, Backward::Full);
        } else {
            program.pair(0, 1);
        }
        program.pair(1, 0);
    }
    for _ in 0..step_5 {
        program.backward(1, Backward::Full);
        program.pair(1, 0);
    }
    let mut split = Backward::Full;
    for i in 0..step_6 {
        if i == step_6 / 2 && half_rank % 2 == 1 {
            split = Backward::Split;
        }
        program.backward(1, split);
        if i == step_6 / 2 && half_rank % 2 == 0 {
            split = Backward::Split;
        }
        program.backward(0, split);
    }
    for _ in 0..step_7 {
        program.weight();
        program.backward(0, Backward::Split);
    }
    for _ in 0..step_8 {
        program.weight();
    }
    program.ops
}

/// DeepSeek's bubble `(PP/2−1)(F&B+B−3W)` for `half_ranks = PP/2` (an expression in P), with
/// per-chunk times the user's costs divided by `per_chunk` (the chunks per device), and the
/// conditions under which it holds exactly; no memory formula (each family states its own).
///
/// DeepSeek's bubble is the time a device spends outside its own passes during the step:
/// `makespan − busy` on the device with the least work (the one running the most overlapped
/// pairs), [`BubbleQuantity::LeastBusyIdle`]. In our dependency-only simulator it is exact when
/// `F = B−W` (forward as long as the input-gradient pass, DeepSeek's setting F=1, B=2, W=1),
/// `W ≤ F` and `B ≤ F&B ≤ F+B`, with no communication time; outside that region our timing
/// differs from the formula (we follow the simulator: the formula assumes the figure's
/// setting). It equals `cost − ideal` only when the pairs gain nothing (`F&B = F+B`, the
/// default): with a gain every device's busy time drops below the ideal by its own number of
/// pairs times the gain. With one half rank (DualPipe on 2 devices, DualPipeV on 1) the bubble
/// is 0 for any F, B and W.
pub(super) fn deepseek_explanation(params: &ScheduleParams, half_ranks: Expr, per_chunk: i64) -> Explanation {
    let c = &params.costs;
    let full_backward = c.b + c.w;
    let sum = c.f + full_backward;
    let overlap = c.overlap.unwrap_or(sum);
    let one_half_rank = match per_chunk {
        1 => params.devices <= 2,
        _ => params.devices <= 1,
    };
    let pair = sym(Sym::Overlap) + sym(Sym::B) + sym(Sym::W) - 3 * sym(Sym::W);
    let scaled = if per_chunk == 1 { (half_ranks - 1) * pair } else { (half_ranks - 1) * pair / per_chunk };
    let bubble = Formula::new(
        DEEPSEEK_BUBBLE,
        vec![Term::new(
            "the least busy device's idle time: the half ranks' fill and drain, less what the overlapped pairs and \
             deferred Ws hide",
            scaled,
        )],
    );
    let assumptions = vec![
        Assumption::no_comm(params),
        Assumption::bubble("B+W ≤ F&B ≤ F+B+W", full_backward <= overlap && overlap <= sum),
        Assumption::bubble(
            "F = B (DeepSeek's F = B−W, its B the full backward), or one half rank",
            one_half_rank || c.f == c.b,
        ),
        Assumption::bubble("W ≤ F, or one half rank", one_half_rank || c.w <= c.f),
    ];
    let mut e = Explanation::new(params, Some(bubble), None, assumptions);
    e.quantity = BubbleQuantity::LeastBusyIdle;
    e
}

/// Where DeepSeek states the bubble and memory.
pub(super) const DEEPSEEK_BUBBLE: &str =
    "DeepSeek-AI, DeepSeek-V3 Technical Report (2024), §3.2.1, Table 2: (PP/2−1)(F&B+B−3W), B the full backward";

/// Where DeepSeek states the memory.
pub(super) const DEEPSEEK_MEMORY: &str =
    "DeepSeek-AI, DeepSeek-V3 Technical Report (2024), §3.2.1, Table 2: PP+1 activations per device";

/// Whether a backward runs whole (BW) or as B with its W deferred to a later `W` step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backward {
    Full,
    Split,
}

/// One device's program being written: the ops so far, the next microbatch of each phase's
/// forward and backward, and the queue of deferred weight gradients.
struct Program {
    phases: Phases,
    next_forward: [u32; 2],
    next_backward: [u32; 2],
    deferred: VecDeque<Pass>,
    ops: Vec<Op>,
}

impl Program {
    fn new(phases: Phases, capacity: usize) -> Program {
        Program {
            phases,
            next_forward: phases.first_microbatch,
            next_backward: phases.first_microbatch,
            deferred: VecDeque::new(),
            ops: Vec::with_capacity(capacity),
        }
    }

    /// The next forward of `phase`.
    fn take_forward(&mut self, phase: usize) -> Pass {
        let microbatch = self.next_forward[phase];
        self.next_forward[phase] += 1;
        Pass::f(self.phases.stages[phase], microbatch)
    }

    /// The next backward of `phase`, queueing its W when it is split.
    fn take_backward(&mut self, phase: usize, backward: Backward) -> Pass {
        let microbatch = self.next_backward[phase];
        self.next_backward[phase] += 1;
        let stage = self.phases.stages[phase];
        match backward {
            Backward::Full => Pass::bw(stage, microbatch),
            Backward::Split => {
                self.deferred.push_back(Pass::w(stage, microbatch));
                Pass::b(stage, microbatch)
            }
        }
    }

    fn forward(&mut self, phase: usize) {
        let pass = self.take_forward(phase);
        self.ops.push(Op::One(pass));
    }

    fn backward(&mut self, phase: usize, backward: Backward) {
        let pass = self.take_backward(phase, backward);
        self.ops.push(Op::One(pass));
    }

    /// The forward of `forward_phase` overlapped with the full backward of `backward_phase`.
    fn pair(&mut self, forward_phase: usize, backward_phase: usize) {
        let forward = self.take_forward(forward_phase);
        let backward = self.take_backward(backward_phase, Backward::Full);
        self.ops.push(Op::Pair(forward, backward));
    }

    /// The oldest deferred weight gradient. The recipe never pops an empty queue (each `W`
    /// step follows a split backward that has not been popped yet); if it did, the W would be
    /// missing and validation would report it.
    fn weight(&mut self) {
        if let Some(pass) = self.deferred.pop_front() {
            self.ops.push(Op::One(pass));
        }
    }
}

/// Checks the reference's rule that both schedules share: at least `2·devices` microbatches.
/// `most_devices` is the most devices `microbatches` can feed, for the hint.
pub(super) fn check_microbatches(family: &str, params: &ScheduleParams, most_devices: u32) -> Result<(), ParamError> {
    let (devices, microbatches) = (params.devices, params.microbatches);
    let least = 2 * u64::from(devices);
    if u64::from(microbatches) >= least {
        return Ok(());
    }
    let mut hint = format!("use {least} or more microbatches");
    if most_devices > 0 {
        hint.push_str(&format!(", or at most {most_devices} device{}", if most_devices == 1 { "" } else { "s" }));
    }
    Err(ParamError::new(
        Field::Microbatches,
        format!("{family} needs at least 2·devices = {least} microbatches, found {microbatches}"),
    )
    .hint(hint))
}
