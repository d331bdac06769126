//! Inputs: costs, memory and the sizes a family is generated for.
//!
//! All times and memory are given for one microbatch through `1/P` of the model, a device's
//! share under plain 1F1B. A schedule that cuts the model finer runs each stage at its
//! fraction ([`crate::Placement::stage_scale`]), so every family is compared on the same model
//! and devices: the ideal busy time of a device is always `M * (F + B + W)`.

use crate::error::{Field, ParamError};
use crate::schedule::{Op, Pass, PassKind, Placement, Schedule};

/// Largest number of devices the engine accepts.
pub const MAX_DEVICES: u32 = 1024;
/// Largest number of microbatches the engine accepts.
pub const MAX_MICROBATCHES: u32 = 65_536;
/// Largest number of passes a generated schedule may have (a bound on memory and time).
pub const MAX_PASSES: u64 = 8_000_000;

/// Largest time or memory a cost may take.
pub const MAX_COST: f64 = 1e12;
/// Smallest positive time or memory a cost may take (0 itself is allowed): with at most 1e12
/// beside it, a smaller one would be below f64's precision and print as 0.
pub const MIN_POSITIVE_COST: f64 = 1e-9;

/// Pass times and memory, per microbatch on `1/P` of the model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    /// Forward time.
    pub f: f64,
    /// Input-gradient backward time. A fused backward takes `b + w`.
    pub b: f64,
    /// Weight-gradient backward time.
    pub w: f64,
    /// Communication time of one hop between devices.
    pub comm: f64,
    /// Time of an overlapped F&B pair; `None` means no overlap gain (the sum of the two).
    pub overlap: Option<f64>,
    /// Activation memory one forward leaves behind.
    pub mem_f: f64,
    /// Of that, what the weight-gradient pass still needs after B; `None` means `mem_f / 2`.
    pub mem_w: Option<f64>,
}

impl Default for Costs {
    fn default() -> Costs {
        Costs { f: 1.0, b: 1.0, w: 1.0, comm: 0.0, overlap: None, mem_f: 1.0, mem_w: None }
    }
}

impl Costs {
    /// Costs with the given F, B, W and defaults for the rest.
    pub fn fbw(f: f64, b: f64, w: f64) -> Costs {
        Costs { f, b, w, ..Costs::default() }
    }

    /// Whether F, B and W take the same time and nothing is spent communicating: then every
    /// pass fills one equal slot, and the slot-based closed forms and searches are exact.
    pub fn balanced(&self) -> bool {
        self.f == self.b && self.b == self.w && self.comm == 0.0
    }

    /// The memory W still needs after B: `mem_w`, or half of `mem_f` by default.
    pub fn mem_w(&self) -> f64 {
        self.mem_w.unwrap_or(self.mem_f / 2.0)
    }

    /// Checks every number is finite and in range.
    pub fn check(&self) -> Result<(), ParamError> {
        let non_negative = [
            (Field::F, self.f),
            (Field::B, self.b),
            (Field::W, self.w),
            (Field::Comm, self.comm),
            (Field::MemF, self.mem_f),
        ];
        for (field, value) in non_negative {
            check_number(field, value)?;
        }
        if let Some(o) = self.overlap {
            check_number(Field::Overlap, o)?;
        }
        if let Some(w) = self.mem_w {
            check_number(Field::MemW, w)?;
            if w > self.mem_f {
                return Err(ParamError::new(
                    Field::MemW,
                    format!(
                        "mem-w must be at most mem-f, found mem-w {} > mem-f {}",
                        crate::error::short_number(w),
                        crate::error::short_number(self.mem_f)
                    ),
                )
                .hint("mem-w is the part of a forward's activations the weight gradient still needs"));
            }
        }
        if self.f + self.b + self.w <= 0.0 {
            return Err(ParamError::new(Field::F, "f, b and w are all 0: there is no work to schedule")
                .hint("give at least one pass a positive time"));
        }
        Ok(())
    }
}

fn check_number(field: Field, value: f64) -> Result<(), ParamError> {
    let (name, shown) = (field.name(), crate::error::short_number(value));
    if !value.is_finite() {
        return Err(ParamError::new(field, format!("{name} must be a finite number, found {shown}")));
    }
    if value < 0.0 {
        return Err(ParamError::new(field, format!("{name} must not be negative, found {shown}")));
    }
    if value > MAX_COST {
        return Err(ParamError::new(field, format!("{name} must be at most 1e12, found {shown}"))
            .hint("use a coarser unit, e.g. milliseconds instead of nanoseconds"));
    }
    if value > 0.0 && value < MIN_POSITIVE_COST {
        return Err(ParamError::new(field, format!("{name} must be 0 or at least 1e-9, found {shown}"))
            .hint("a smaller value prints as 0 and is lost next to the other costs; use a finer unit, e.g. microseconds instead of seconds"));
    }
    Ok(())
}

/// Checks a per-device memory limit is a finite number in the range every cost has.
///
/// # Errors
/// A [`ParamError`] on `mem-limit` otherwise.
pub fn check_mem_limit(limit: f64) -> Result<(), ParamError> {
    check_number(Field::MemLimit, limit)
}

/// Everything a family is generated from.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleParams {
    /// Number of devices `P`.
    pub devices: u32,
    /// Number of microbatches `M`.
    pub microbatches: u32,
    /// Chunks per device (interleaved families); `None` uses the family's default.
    pub chunks: Option<u32>,
    /// Microbatches per chunk round (interleaved 1F1B); `None` uses the family's default.
    pub group: Option<u32>,
    /// Waves (Hanayo); `None` uses the family's default.
    pub waves: Option<u32>,
    /// Sequence slices per microbatch (Seq1F1B); `None` uses the family's default.
    pub seq_splits: Option<u32>,
    /// Times and memory.
    pub costs: Costs,
    /// Per-device activation memory limit, in the unit of `mem_f`.
    pub mem_limit: Option<f64>,
}

impl ScheduleParams {
    /// `devices` and `microbatches` with default costs and no options.
    pub fn new(devices: u32, microbatches: u32) -> ScheduleParams {
        ScheduleParams {
            devices,
            microbatches,
            chunks: None,
            group: None,
            waves: None,
            seq_splits: None,
            costs: Costs::default(),
            mem_limit: None,
        }
    }

    /// The same parameters with other costs.
    pub fn with_costs(mut self, costs: Costs) -> ScheduleParams {
        self.costs = costs;
        self
    }

    /// The same parameters with a memory limit.
    pub fn with_mem_limit(mut self, limit: f64) -> ScheduleParams {
        self.mem_limit = Some(limit);
        self
    }

    /// The same parameters with `chunks` chunks per device.
    pub fn with_chunks(mut self, chunks: u32) -> ScheduleParams {
        self.chunks = Some(chunks);
        self
    }

    /// Checks what every family needs: sizes in range and valid costs.
    pub fn check_common(&self) -> Result<(), ParamError> {
        if self.devices == 0 || self.devices > MAX_DEVICES {
            return Err(ParamError::new(
                Field::Devices,
                format!("devices must be between 1 and {MAX_DEVICES}, found {}", self.devices),
            ));
        }
        if self.microbatches == 0 || self.microbatches > MAX_MICROBATCHES {
            return Err(ParamError::new(
                Field::Microbatches,
                format!("microbatches must be between 1 and {MAX_MICROBATCHES}, found {}", self.microbatches),
            ));
        }
        self.costs.check()?;
        self.mem_limit.map_or(Ok(()), check_mem_limit)
    }

    /// Checks that a schedule of `passes_per_device_microbatch` passes per device and
    /// microbatch stays within [`MAX_PASSES`].
    pub fn check_size(&self, passes_per_device_microbatch: u64) -> Result<(), ParamError> {
        let total = u64::from(self.devices) * u64::from(self.microbatches) * passes_per_device_microbatch;
        if total > MAX_PASSES {
            return Err(ParamError::new(
                Field::Microbatches,
                format!("this schedule would have {total} passes, more than the {MAX_PASSES} supported"),
            )
            .hint("use fewer devices, microbatches, chunks or sequence splits"));
        }
        Ok(())
    }
}

/// Per-stage times and memory: the table the simulator reads.
#[derive(Clone, Debug, PartialEq)]
pub struct StageCosts {
    /// Forward time per stage.
    pub f: Vec<f64>,
    /// Input-gradient time per stage.
    pub b: Vec<f64>,
    /// Weight-gradient time per stage.
    pub w: Vec<f64>,
    /// Overlapped pair time per stage of the pair's forward; `None` means the sum.
    pub overlap: Option<Vec<f64>>,
    /// Activation memory of one forward, per stage.
    pub mem_f: Vec<f64>,
    /// Memory the weight gradient still needs after B, per stage.
    pub mem_w: Vec<f64>,
    /// Communication time between devices.
    pub comm: f64,
}

impl StageCosts {
    /// Uniform costs scaled to the placement's stage size (see the module docs).
    pub fn new(costs: &Costs, placement: &Placement) -> StageCosts {
        StageCosts::scaled(costs, placement, placement.stage_scale())
    }

    /// Uniform costs for `schedule`: scaled to its stage size, and divided among its sequence
    /// slices when it splits sequences.
    pub fn for_schedule(costs: &Costs, schedule: &Schedule) -> StageCosts {
        let scale = schedule.placement.stage_scale() / f64::from(schedule.slices.max(1));
        StageCosts::scaled(costs, &schedule.placement, scale)
    }

    fn scaled(costs: &Costs, placement: &Placement, scale: f64) -> StageCosts {
        let n = placement.stages() as usize;
        StageCosts {
            f: vec![costs.f * scale; n],
            b: vec![costs.b * scale; n],
            w: vec![costs.w * scale; n],
            overlap: costs.overlap.map(|o| vec![o * scale; n]),
            mem_f: vec![costs.mem_f * scale; n],
            mem_w: vec![costs.mem_w() * scale; n],
            comm: costs.comm,
        }
    }

    /// Duration of one pass.
    pub fn pass(&self, pass: Pass) -> f64 {
        let s = pass.stage as usize;
        let get = |v: &Vec<f64>| v.get(s).copied().unwrap_or(0.0);
        match pass.kind {
            PassKind::F => get(&self.f),
            PassKind::B => get(&self.b),
            PassKind::W => get(&self.w),
            PassKind::BW => get(&self.b) + get(&self.w),
        }
    }

    /// Duration of one op: a pass, or an overlapped pair.
    pub fn op(&self, op: &Op) -> f64 {
        match *op {
            Op::One(p) => self.pass(p),
            Op::Pair(f, b) => match &self.overlap {
                Some(o) => o.get(f.stage as usize).copied().unwrap_or(0.0),
                None => self.pass(f) + self.pass(b),
            },
        }
    }

    /// Memory a pass allocates when it starts.
    pub fn alloc(&self, pass: Pass) -> f64 {
        match pass.kind {
            PassKind::F => self.mem_f.get(pass.stage as usize).copied().unwrap_or(0.0),
            _ => 0.0,
        }
    }

    /// Memory a pass releases when it ends.
    pub fn release(&self, pass: Pass) -> f64 {
        let s = pass.stage as usize;
        let mf = self.mem_f.get(s).copied().unwrap_or(0.0);
        let mw = self.mem_w.get(s).copied().unwrap_or(0.0);
        match pass.kind {
            PassKind::F => 0.0,
            PassKind::B => mf - mw,
            PassKind::W => mw,
            PassKind::BW => mf,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v_shape_runs_each_chunk_at_half_the_cost() {
        let costs = StageCosts::new(&Costs::fbw(2.0, 4.0, 6.0), &Placement::v_shape(4));
        assert_eq!(costs.pass(Pass::f(5, 0)), 1.0);
        assert_eq!(costs.pass(Pass::bw(5, 0)), 5.0);
        assert_eq!(costs.alloc(Pass::f(0, 0)), 0.5);
        assert_eq!(costs.release(Pass::b(0, 0)), 0.25);
    }

    #[test]
    fn pair_defaults_to_the_sum_and_honours_overlap() {
        let p = Placement::linear(2);
        let pair = Op::Pair(Pass::f(0, 1), Pass::bw(1, 0));
        let mut c = Costs::fbw(1.0, 2.0, 1.0);
        assert_eq!(StageCosts::new(&c, &p).op(&pair), 4.0);
        c.overlap = Some(3.0);
        assert_eq!(StageCosts::new(&c, &p).op(&pair), 3.0);
    }

    #[test]
    fn rejects_bad_numbers_with_the_field_named() {
        let mut c = Costs { f: f64::NAN, ..Costs::default() };
        assert_eq!(c.check().unwrap_err().field, Field::F);
        c.f = -1.0;
        assert_eq!(c.check().unwrap_err().to_string(), "f must not be negative, found -1");
        c = Costs { mem_w: Some(2.0), ..Costs::default() };
        assert_eq!(c.check().unwrap_err().field, Field::MemW);
        let p = ScheduleParams::new(0, 8);
        assert_eq!(p.check_common().unwrap_err().field, Field::Devices);
    }
}
