//! A random valid schedule, for tests of readers and writers that must take any valid order.
//!
//! Shared by the PyTorch format's unit tests and the integration tests, each including this
//! file with `#[path]`: it names its types through the including module.

use super::{Pass, Placement, Schedule};

/// A random valid schedule: every microbatch's passes (forwards down, backwards up, split for
/// even microbatches) in a random interleaving of the microbatches that keeps each
/// microbatch's chain in order. The same `seed` gives the same schedule.
pub(super) fn shuffled(placement: Placement, microbatches: u32, seed: u64) -> Schedule {
    let stages = placement.stages();
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    // xorshift64: small, fast and the same on every platform.
    let mut random = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let chain = |m: u32| -> std::collections::VecDeque<Pass> {
        let mut passes: Vec<Pass> = (0..stages).map(|st| Pass::f(st, m)).collect();
        for st in (0..stages).rev() {
            if m % 2 == 0 {
                passes.extend([Pass::b(st, m), Pass::w(st, m)]);
            } else {
                passes.push(Pass::bw(st, m));
            }
        }
        passes.into()
    };
    let mut chains: Vec<_> = (0..microbatches).map(chain).collect();
    let mut s = Schedule::new(placement, microbatches);
    loop {
        let open: Vec<usize> = (0..chains.len()).filter(|&m| !chains[m].is_empty()).collect();
        if open.is_empty() {
            break;
        }
        let m = open[random(open.len())];
        if let Some(pass) = chains[m].pop_front() {
            s.push_placed(pass);
        }
    }
    s
}
