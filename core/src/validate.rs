//! Structural validation of a schedule, reported like a compiler.
//!
//! Every (stage, microbatch, slice) must have exactly one F and either one BW or one B and
//! one W, on the device its placement names; on that device F comes before the backward and B
//! before W; an overlapped pair is a forward and a backward. A recompute (R) runs between
//! its F and its backward; a copy to the host is issued after its forward, and its reload
//! after the offload and before the activation is needed again; a copy's slot starts at 0 or
//! later and lasts a positive time.

use crate::error::Diagnostic;
use crate::schedule::{CopyKind, CopyOp, Op, Pass, PassKind, Schedule};

/// At most this many diagnostics are listed; the rest are summarised.
pub const MAX_DIAGNOSTICS: usize = 50;

/// Checks `schedule` and returns what is wrong with it (empty when it is valid).
pub fn validate(schedule: &Schedule) -> Vec<Diagnostic> {
    let mut out = Diagnostics::default();
    let placement = &schedule.placement;
    let (stages, mbs, slices) = (placement.stages(), schedule.microbatches, schedule.slices.max(1));
    if schedule.orders.len() != placement.devices() as usize {
        out.push(Diagnostic::error(
            None,
            None,
            format!(
                "the schedule has {} device rows but its placement has {} devices",
                schedule.orders.len(),
                placement.devices()
            ),
        ));
        return out.finish();
    }
    let n = stages as usize * mbs as usize * slices as usize;
    // Position of each kind per key: (device, position) of the first occurrence.
    let mut seen: [Vec<Option<(u32, usize)>>; PassKind::ALL.len()] = std::array::from_fn(|_| vec![None; n]);
    let index =
        |p: Pass| (p.stage as usize * mbs as usize + p.microbatch as usize) * slices as usize + p.slice as usize;

    for (device, order) in schedule.orders.iter().enumerate() {
        let device = device as u32;
        for (position, op) in order.iter().enumerate() {
            if let Op::Pair(f, b) = op {
                if f.kind != PassKind::F || !b.kind.is_input_grad() {
                    out.push(
                        Diagnostic::error(
                            Some(device),
                            Some(position),
                            format!("an overlapped pair must be a forward and a backward (B or BW), found {f} and {b}"),
                        )
                        .hint("write the forward first, e.g. (0F7;7B3)OVERLAP_F_B"),
                    );
                }
            }
            for pass in op.passes() {
                if pass.stage >= stages || pass.microbatch >= mbs || pass.slice >= slices {
                    out.push(Diagnostic::error(
                        Some(device),
                        Some(position),
                        format!(
                            "{pass} is out of range: expected stage < {stages}, microbatch < {mbs}{}",
                            if slices > 1 { format!(", slice < {slices}") } else { String::new() }
                        ),
                    ));
                    continue;
                }
                let share = placement.pipeline_microbatches(placement.pipeline_of(pass.stage), mbs);
                if !share.contains(&pass.microbatch) {
                    out.push(Diagnostic::error(
                        Some(device),
                        Some(position),
                        format!(
                            "{pass} is not in its pipeline's share: pipeline {} runs microbatches {}..{}",
                            placement.pipeline_of(pass.stage),
                            share.start,
                            share.end
                        ),
                    ));
                    continue;
                }
                let expected = placement.device_of(pass.stage).unwrap_or(device);
                if expected != device {
                    out.push(
                        Diagnostic::error(
                            Some(device),
                            Some(position),
                            format!(
                                "{pass} runs on device {device}, but stage {} is placed on device {expected}",
                                pass.stage
                            ),
                        )
                        .hint("every pass of a stage must run on the stage's device"),
                    );
                }
                let slot = &mut seen[pass.kind.index()][index(pass)];
                match slot {
                    Some((d, p)) => out.push(Diagnostic::error(
                        Some(device),
                        Some(position),
                        format!("{pass} appears twice: first at device {d}, position {p}"),
                    )),
                    None => *slot = Some((device, position)),
                }
            }
        }
    }

    // Counts and order per key.
    for stage in 0..stages {
        for microbatch in placement.pipeline_microbatches(placement.pipeline_of(stage), mbs) {
            for slice in 0..slices {
                let key = Pass { kind: PassKind::F, stage, microbatch, slice };
                let i = index(key);
                let [f, b, w, bw, r] = [0, 1, 2, 3, 4].map(|k| seen[k][i]);
                let home = placement.device_of(stage);
                let with = |kind| Pass { kind, ..key };
                if f.is_none() {
                    out.push(Diagnostic::error(home, None, format!("{} is missing", with(PassKind::F))));
                }
                match (b, w, bw) {
                    (None, None, None) => out.push(
                        Diagnostic::error(
                            home,
                            None,
                            format!("the backward of stage {stage}, mb {microbatch} is missing"),
                        )
                        .hint("add a BW pass, or a B pass and a W pass"),
                    ),
                    (Some(_), _, Some(at)) | (_, Some(_), Some(at)) => out.push(Diagnostic::error(
                        Some(at.0),
                        Some(at.1),
                        format!("{} is given both fused (BW) and split (B/W)", with(PassKind::BW)),
                    )),
                    (Some(_), None, None) => out.push(
                        Diagnostic::error(home, None, format!("{} is missing its W", with(PassKind::B)))
                            .hint("a split backward needs a W pass after its B"),
                    ),
                    (None, Some(at), None) => out.push(Diagnostic::error(
                        Some(at.0),
                        Some(at.1),
                        format!("{} has no B before it", with(PassKind::W)),
                    )),
                    _ => {}
                }
                // Order on the same device.
                let back = b.or(bw);
                if let (Some(fa), Some(ba)) = (f, back) {
                    if fa.0 == ba.0 && ba.1 < fa.1 {
                        out.push(Diagnostic::error(
                            Some(ba.0),
                            Some(ba.1),
                            format!(
                                "the backward of stage {stage}, mb {microbatch} comes before its forward (position {})",
                                fa.1
                            ),
                        ));
                    }
                }
                if let Some(ra) = r {
                    let after_forward = f.is_some_and(|fa| fa.0 == ra.0 && fa.1 < ra.1);
                    let before_backward = back.is_some_and(|ba| ba.0 == ra.0 && ra.1 <= ba.1);
                    if !after_forward || !before_backward {
                        out.push(
                            Diagnostic::error(
                                Some(ra.0),
                                Some(ra.1),
                                format!("{} must run after its F and before its backward", with(PassKind::R)),
                            )
                            .hint("a recompute rebuilds the activation its backward needs: place it between the two"),
                        );
                    }
                }
                if let (Some(ba), Some(wa)) = (b, w) {
                    if ba.0 == wa.0 && wa.1 < ba.1 {
                        out.push(Diagnostic::error(
                            Some(wa.0),
                            Some(wa.1),
                            format!("{} comes before its B (position {})", with(PassKind::W), ba.1),
                        ));
                    }
                }
            }
        }
    }
    recompute_whole_stages(schedule, &seen, &index, &mut out);
    copies(schedule, &seen, &index, &mut out);
    out.finish()
}

/// A stage recomputes every microbatch or none: what its forwards keep is set per stage.
fn recompute_whole_stages(
    schedule: &Schedule,
    seen: &[Vec<Option<(u32, usize)>>; PassKind::ALL.len()],
    index: &dyn Fn(Pass) -> usize,
    out: &mut Diagnostics,
) {
    let placement = &schedule.placement;
    let r = PassKind::R.index();
    for stage in 0..placement.stages() {
        let share = placement.pipeline_microbatches(placement.pipeline_of(stage), schedule.microbatches);
        let keys: Vec<Pass> = share
            .flat_map(|microbatch| {
                (0..schedule.slices.max(1)).map(move |slice| Pass { kind: PassKind::F, stage, microbatch, slice })
            })
            .collect();
        let with = keys.iter().filter(|&&p| seen[r].get(index(p)).is_some_and(Option::is_some)).count();
        if with == 0 || with == keys.len() {
            continue;
        }
        let Some(missing) = keys.iter().find(|&&p| seen[r].get(index(p)).is_some_and(Option::is_none)) else {
            continue;
        };
        out.push(
            Diagnostic::error(
                placement.device_of(stage),
                None,
                format!(
                    "stage {stage} recomputes {with} of its {} microbatches: {} has no R",
                    keys.len(),
                    Pass { kind: PassKind::R, ..*missing }
                ),
            )
            .hint("a stage recomputes all its microbatches or none: add an R before each of its backwards, or remove them"),
        );
    }
}

/// Checks every device's copies: each forward offloaded at most once, after it runs, and
/// reloaded once, after its offload and before the pass that needs it (R or the backward).
fn copies(
    schedule: &Schedule,
    seen: &[Vec<Option<(u32, usize)>>; PassKind::ALL.len()],
    index: &dyn Fn(Pass) -> usize,
    out: &mut Diagnostics,
) {
    if !schedule.has_copies() {
        return;
    }
    let n = seen[0].len();
    for (device, copies) in schedule.copies.iter().enumerate() {
        let device = device as u32;
        let len = schedule.orders.get(device as usize).map_or(0, Vec::len);
        // Per key: the issue position of its offload, and whether it was reloaded.
        let mut offloaded: Vec<Option<usize>> = vec![None; n];
        let mut reloaded = vec![false; n];
        let mut last_at = 0;
        for (i, copy) in copies.iter().enumerate() {
            let mut problem = |message: String, hint: &str| {
                out.push(Diagnostic::error(Some(device), None, format!("copy {i}, {copy}: {message}")).hint(hint));
            };
            let pass = Pass { kind: PassKind::F, ..copy.pass };
            let at = copy.at as usize;
            if at > len || at < last_at {
                problem(
                    format!("is issued at position {at}, after position {last_at} and within 0..={len}"),
                    "list a device's copies in the order its compute reaches them",
                );
                continue;
            }
            last_at = at;
            if let Some(slot) = copy.slot {
                let (start, time) = (slot.start, slot.time);
                let max = crate::params::MAX_COST;
                if !((0.0..=max).contains(&start) && time > 0.0 && time <= max) {
                    let (start, time) = (crate::units::short_number(start), crate::units::short_number(time));
                    problem(
                        format!("has a slot from {start} for {time}, but a slot starts at 0 or later and lasts a positive time, each up to {max:e}"),
                        "give the slot a finite start of 0 or more and a finite positive time, or no slot",
                    );
                }
            }
            let in_range = pass.stage < schedule.placement.stages()
                && pass.microbatch < schedule.microbatches
                && pass.slice < schedule.slices.max(1);
            let k = index(pass);
            let Some(Some((fd, fp))) = (in_range && k < n).then(|| seen[0][k]) else {
                problem("copies a forward the schedule does not run".into(), "copy only forwards of this schedule");
                continue;
            };
            if fd != device {
                problem(format!("its forward runs on device {fd}"), "a device copies only its own activations");
                continue;
            }
            let needed = [4, 1, 3].into_iter().find_map(|kind| seen[kind][k]).map_or(len, |(_, p)| p);
            match copy.kind {
                CopyKind::Offload if offloaded[k].is_some() => {
                    problem("is offloaded twice".into(), "offload each activation once");
                }
                CopyKind::Offload if at <= fp => problem(
                    format!("is issued before its forward ends (position {fp})"),
                    "issue the offload after its forward",
                ),
                CopyKind::Offload => offloaded[k] = Some(at),
                CopyKind::Reload if offloaded[k].is_none() || reloaded[k] => problem(
                    "has no offload before it, or is reloaded twice".into(),
                    "reload each offloaded activation once, after its offload",
                ),
                CopyKind::Reload if at > needed => problem(
                    format!("is issued after the pass that needs it (position {needed})"),
                    "issue the reload before the recompute or backward",
                ),
                CopyKind::Reload => reloaded[k] = true,
            }
        }
        let never_reloaded = |c: &&CopyOp| {
            let k = index(Pass { kind: PassKind::F, ..c.pass });
            c.kind == CopyKind::Offload && k < n && offloaded[k].is_some() && !reloaded[k]
        };
        if let Some(copy) = copies.iter().find(never_reloaded) {
            out.push(
                Diagnostic::error(Some(device), None, format!("{copy} is never reloaded"))
                    .hint("every offload needs a reload before its backward"),
            );
        }
    }
}

#[derive(Default)]
struct Diagnostics {
    list: Vec<Diagnostic>,
    dropped: usize,
}

impl Diagnostics {
    fn push(&mut self, d: Diagnostic) {
        if self.list.len() < MAX_DIAGNOSTICS {
            self.list.push(d);
        } else {
            self.dropped += 1;
        }
    }

    fn finish(mut self) -> Vec<Diagnostic> {
        if self.dropped > 0 {
            self.list.push(Diagnostic::error(None, None, format!("and {} more problems", self.dropped)));
        }
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::fixtures::two_stage;

    #[test]
    fn a_complete_schedule_is_valid() {
        assert_eq!(validate(&two_stage()), vec![]);
    }

    #[test]
    fn reports_missing_duplicate_misplaced_and_misordered_passes() {
        let mut s = two_stage();
        s.orders[1].swap(1, 2); // W before B
        s.orders[0].push(Op::One(Pass::f(0, 0))); // duplicate
        s.orders.push(Vec::new());
        s.orders.pop();
        let text: Vec<String> = validate(&s).iter().map(|d| d.to_string()).collect();
        let all = text.join("\n");
        assert!(all.contains("W(stage 1, mb 0) comes before its B"), "{all}");
        assert!(all.contains("F(stage 0, mb 0) appears twice: first at device 0, position 0"), "{all}");

        let mut s = two_stage();
        s.orders[1].pop();
        s.orders[0].insert(1, Op::One(Pass::w(1, 0))); // wrong device
        let all: Vec<String> = validate(&s).iter().map(|d| d.to_string()).collect();
        assert_eq!(all, vec!["error: W(stage 1, mb 0) runs on device 0, but stage 1 is placed on device 1\n  at: device 0, position 1\n  hint: every pass of a stage must run on the stage's device"]);

        let mut s = two_stage();
        s.orders[0].pop();
        let all: Vec<String> = validate(&s).iter().map(|d| d.to_string()).collect();
        assert_eq!(all, vec!["error: the backward of stage 0, mb 0 is missing\n  at: device 0\n  hint: add a BW pass, or a B pass and a W pass"]);
    }
}
