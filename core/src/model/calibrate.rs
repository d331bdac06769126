//! Calibration: the efficiencies under which the roofline reproduces measured F, B and W.
//!
//! The measured times are one microbatch through `n` transformer layers (no embedding, no LM
//! head), `n` the median device's layers, as the Zero Bubble runtime reports its median rank.
//! The fit is the least squares of the three passes' relative errors over efficiencies in
//! (0, 1] (W is matmuls, so it pins the gemm efficiency; F and B the memory efficiency); times
//! the model itself produced come back exactly.
//! [`ModelSpec::calibrated`] writes the fitted efficiencies into the spec, rounded to 4
//! decimals, so the CLI, the permalink and the playground carry them as `gemm-efficiency` and
//! `memory-efficiency`: costs of other microbatch sizes, sequence lengths and layouts of the
//! same model and GPU then follow from them. Uses [`super::roofline`] and [`super::hardware`].

use super::hardware::Efficiency;
use super::roofline::{Op, Rates, B, F, W};
use super::{Model, ModelSpec};
use crate::error::{Field, ParamError};
use crate::units::short_number;

/// The pass names, for messages.
const PASSES: [&str; 3] = ["F", "B", "W"];

/// A calibration: the measured times and what they gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// Measured F, B and W, µs.
    pub measured: [f64; 3],
    /// Transformer layers they cover.
    pub layers: u32,
    /// The fitted efficiencies.
    pub efficiency: Efficiency,
    /// What the model then gives for each pass, relative to the measurement (`+0.05`: 5% more).
    pub residuals: [f64; 3],
    /// Whether the times determine both efficiencies: false when the passes' compute-bound
    /// and memory-bound parts are proportional (every operator memory-bound, say), so other
    /// efficiencies give the same times and other microbatch sizes may not follow.
    pub determined: bool,
}

/// Reads `F,B,W`: three times, each µs, or with a unit (`18.5ms`, `18522us`, `18522µs`).
///
/// # Errors
/// A [`ParamError`] on [`Field::Calibrate`] for anything else, and for times that are not
/// positive.
pub fn parse_times(text: &str) -> Result<[f64; 3], ParamError> {
    let bad = |what: String| {
        ParamError::new(Field::Calibrate, what)
            .hint("write F,B,W of one microbatch through the median device's layers, in µs or with a unit: 18.5ms,18.1ms,9.3ms")
    };
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    if items.len() != 3 {
        return Err(bad(format!("calibrate takes 3 times (F, B and W), found {}", items.len())));
    }
    let mut out = [0.0; 3];
    for ((slot, item), pass) in out.iter_mut().zip(&items).zip(PASSES) {
        let lower = item.to_lowercase();
        let (number, scale) = if let Some(n) = lower.strip_suffix("ms") {
            (n, 1000.0)
        } else if let Some(n) = lower.strip_suffix("us").or_else(|| lower.strip_suffix("µs")) {
            (n, 1.0)
        } else {
            (lower.as_str(), 1.0)
        };
        let value = number.trim().parse::<f64>().ok().map(|v| v * scale);
        match value {
            Some(v) if v > crate::params::MAX_COST => {
                return Err(bad(format!(
                    "calibrate's {pass} of {} µs is more than the {:e} µs supported",
                    short_number(v),
                    crate::params::MAX_COST
                )));
            }
            Some(v) if v.is_finite() && v > 0.0 => *slot = v,
            _ => {
                let shown: String = crate::units::clean_text(item).chars().take(40).collect();
                return Err(bad(format!("calibrate's {pass} must be a positive time, found `{shown}`")));
            }
        }
    }
    Ok(out)
}

/// `µs` as calibration text reads it back: `18522,18086,9337`.
pub fn times_text(times: &[f64; 3]) -> String {
    times.iter().map(|t| short_number(*t)).collect::<Vec<_>>().join(",")
}

/// A stage's operators as the fit sees them: each op's µs at full matmul rate (`compute`) and
/// at full memory rate (`memory`), times the stage's layers. At efficiencies `(1/u, 1/v)` an
/// op takes `max(compute·u, memory·v)`: linear in `(u, v)` while each op keeps its bound.
struct Stage {
    ops: Vec<(usize, f64, f64)>,
}

impl Stage {
    fn new(ops: &[Op], layers: f64, peak: f64, hbm: f64) -> Stage {
        let full = Rates::new(peak, hbm);
        let ops = ops
            .iter()
            .map(|op| (op.pass, op.flops / full.flops * 1e6 * layers, op.bytes / full.bytes[op.pass] * 1e6 * layers))
            .collect();
        Stage { ops }
    }

    /// F, B and W µs at efficiencies `e`.
    fn times(&self, e: Efficiency) -> [f64; 3] {
        let mut t = [0.0; 3];
        for &(pass, compute, memory) in &self.ops {
            t[pass] += (compute / e.gemm).max(memory / e.memory);
        }
        t
    }

    /// Whether both efficiencies show in the times at `e`: no two passes' compute-bound and
    /// memory-bound µs are proportional (a 2×2 minor of at least 5% of the passes' product).
    /// An op whose two limits tie (within 10⁻⁶) counts as memory-bound: at the edge of a range
    /// of efficiencies that all give the same times, it does not pin the gemm efficiency.
    fn determines(&self, e: Efficiency) -> bool {
        let mut parts = [(0.0, 0.0); 3];
        for &(pass, compute, memory) in &self.ops {
            let (c, m) = (compute / e.gemm, memory / e.memory);
            if c > m * (1.0 + 1e-6) {
                parts[pass].0 += c;
            } else {
                parts[pass].1 += m;
            }
        }
        let minor = |a: (f64, f64), b: (f64, f64)| (a.0 * b.1 - a.1 * b.0).abs() / ((a.0 + a.1) * (b.0 + b.1));
        [(0, 1), (0, 2), (1, 2)].into_iter().any(|(i, j)| minor(parts[i], parts[j]) > 0.05)
    }

    /// Per pass, the compute part and the memory part of the ops bound as they are at `e`.
    fn split(&self, e: Efficiency) -> [(f64, f64); 3] {
        let mut parts = [(0.0, 0.0); 3];
        for &(pass, compute, memory) in &self.ops {
            if compute / e.gemm >= memory / e.memory {
                parts[pass].0 += compute;
            } else {
                parts[pass].1 += memory;
            }
        }
        parts
    }
}

/// The least-squares efficiencies in `[1e-4, 1]²`: the `e` that minimises the squared
/// relative errors of `stage`'s passes against `measured`. A log grid over the range picks
/// the best few starting points; from each, the errors are solved as linear least squares in
/// `(1/gemm, 1/memory)` with the ops' bounds held, the bounds updated and solved again until
/// they settle; the lowest wins.
fn least_squares(stage: &Stage, measured: [f64; 3]) -> Efficiency {
    const LOWEST: f64 = 1e-4;
    const GRID: i32 = 60;
    const STARTS: usize = 8;
    let error = |e: Efficiency| {
        let t = stage.times(e);
        (0..3).map(|p| (t[p] / measured[p] - 1.0).powi(2)).sum::<f64>()
    };
    let clamp = |x: f64| x.clamp(LOWEST, 1.0);
    let mut grid: Vec<(Efficiency, f64)> = (0..=GRID)
        .flat_map(|i| (0..=GRID).map(move |j| (i, j)))
        .map(|(i, j)| {
            let at = |k: i32| (LOWEST.ln() * (1.0 - f64::from(k) / f64::from(GRID))).exp();
            let e = Efficiency { gemm: at(i), memory: at(j) };
            (e, error(e))
        })
        .collect();
    crate::units::sort::sort_by(&mut grid, |a, b| a.1.total_cmp(&b.1));
    let settle = |mut best: (Efficiency, f64)| {
        for _ in 0..100 {
            // With each op's bound held, the times are `compute·u + memory·v` per pass.
            let parts = stage.split(best.0);
            let (mut xx, mut xy, mut yy, mut x1, mut y1) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for (p, (c, m)) in parts.iter().enumerate() {
                let (x, y) = (c / measured[p], m / measured[p]);
                (xx, xy, yy, x1, y1) = (xx + x * x, xy + x * y, yy + y * y, x1 + x, y1 + y);
            }
            let det = xx * yy - xy * xy;
            let (u, v) = if det.abs() > 1e-12 * (xx * yy).max(1e-300) {
                ((x1 * yy - y1 * xy) / det, (y1 * xx - x1 * xy) / det)
            } else if xx > 0.0 {
                (x1 / xx, 1.0 / best.0.memory)
            } else {
                (1.0 / best.0.gemm, y1 / yy.max(1e-300))
            };
            let target = Efficiency { gemm: clamp(1.0 / u.max(1.0)), memory: clamp(1.0 / v.max(1.0)) };
            // Step toward the solution while it lowers the error.
            let mut step = 1.0;
            let mut moved = false;
            while step > 1e-6 {
                let mix = |a: f64, b: f64| (a.ln() + step * (b.ln() - a.ln())).exp();
                let e = Efficiency { gemm: mix(best.0.gemm, target.gemm), memory: mix(best.0.memory, target.memory) };
                let err = error(e);
                if err < best.1 {
                    best = (e, err);
                    moved = true;
                    break;
                }
                step /= 2.0;
            }
            if !moved {
                break;
            }
        }
        best
    };
    grid.iter()
        .take(STARTS)
        .map(|&start| settle(start))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(super::hardware::DEFAULT_EFFICIENCY, |(e, _)| e)
}

/// How far off a fitted pass may be before the measurement counts as out of the model's
/// reach.
pub const REACH: f64 = 0.2;

/// `3 layers`, `1 layer`.
fn layers_text(layers: u32) -> String {
    format!("{layers} layer{}", if layers == 1 { "" } else { "s" })
}

impl Model {
    /// The efficiencies in (0, 1] under which `layers` transformer layers come closest to
    /// `measured` F, B and W µs (least squares of the relative errors; exact when the times
    /// come from the model).
    ///
    /// # Errors
    /// A [`ParamError`] on [`Field::Calibrate`] naming the pass the model cannot reach at any
    /// efficiency in (0, 1] (faster than the GPU's ceilings allow, or more than [`REACH`] off
    /// at the best fit), and why.
    pub fn calibrate_to(&self, measured: [f64; 3], layers: u32) -> Result<Calibration, ParamError> {
        let g = self.gpu()?;
        let (peak, hbm) = (g.peak_tflops * 1e12, g.hbm_gbps * 1e9);
        let stage = Stage::new(&self.layer_ops(), f64::from(layers.max(1)), peak, hbm);
        let at = |e: Efficiency| stage.times(e);
        let time = crate::units::format_micros;
        let error = |p: usize, message: String| {
            ParamError::new(Field::Calibrate, format!("calibrate's {} of {}: {message}", PASSES[p], time(measured[p])))
                .hint(format!(
                    "the times are one microbatch through {} (the median device's), without embedding or LM head; \
                     check --gpu ({}), the model's shape, --tp and --micro-batch, or measure {} again",
                    layers_text(layers),
                    g.key,
                    PASSES[p]
                ))
        };
        // A pass faster than its time at every ceiling reached is out of reach.
        let fastest = at(Efficiency { gemm: 1.0, memory: 1.0 });
        for p in [W, F, B] {
            if measured[p] < fastest[p] {
                return Err(error(
                    p,
                    format!(
                        "faster than {} can run on {}: {} at its peak FLOP/s and full HBM bandwidth",
                        layers_text(layers),
                        g.name,
                        time(fastest[p])
                    ),
                ));
            }
        }
        let relative = |e: Efficiency| {
            let t = at(e);
            [F, B, W].map(|p| t[p] / measured[p] - 1.0)
        };
        let efficiency = least_squares(&stage, measured);
        let residuals = relative(efficiency);
        let p = [F, B, W].into_iter().fold(F, |a, b| if residuals[b].abs() > residuals[a].abs() { b } else { a });
        let worst = residuals[p];
        if worst.abs() > REACH {
            let model = at(efficiency)[p];
            let bound = efficiency.gemm > 0.999 || efficiency.memory > 0.999;
            let why = if bound && worst > 0.0 {
                "the GPU's peak FLOP/s and HBM bandwidth do not allow it together with the other passes"
            } else {
                "the passes' ratios do not match this model's shape"
            };
            return Err(error(
                p,
                format!(
                    "the closest the model comes is {} ({:+.0}%), at gemm-efficiency {} and memory-efficiency {}: {why}",
                    time(model),
                    worst * 100.0,
                    crate::units::format_significant(efficiency.gemm, 3),
                    crate::units::format_significant(efficiency.memory, 3),
                ),
            ));
        }
        Ok(Calibration { measured, layers, efficiency, residuals, determined: stage.determines(efficiency) })
    }
}

impl ModelSpec {
    /// This spec with the efficiencies under which its model, on `devices` devices, takes
    /// `measured` F, B and W µs through the median device's layers; and the calibration.
    ///
    /// # Errors
    /// A [`ParamError`] when the spec already sets a rate (`tflops`, `gemm-efficiency`,
    /// `memory-efficiency`), when the model is wrong, or when no efficiency in (0, 1] reaches
    /// the measured times (naming the pass).
    pub fn calibrated(&self, devices: u32, measured: [f64; 3]) -> Result<(ModelSpec, Calibration), ParamError> {
        let model = self.resolve()?;
        model.derive(devices)?;
        let layers = super::derive::median_layers(&model.layout(devices)?, devices);
        self.calibrated_layers(layers, measured)
    }

    /// This spec with the efficiencies under which `layers` of its transformer layers take
    /// `measured` F, B and W µs; and the calibration. What [`ModelSpec::calibrated`] does once
    /// it knows the layers (a measured run's stage gives them itself).
    ///
    /// # Errors
    /// As [`ModelSpec::calibrated`].
    pub fn calibrated_layers(&self, layers: u32, measured: [f64; 3]) -> Result<(ModelSpec, Calibration), ParamError> {
        let set = [
            (Field::Tflops, self.tflops.is_some()),
            (Field::GemmEfficiency, self.gemm_efficiency.is_some()),
            (Field::MemoryEfficiency, self.memory_efficiency.is_some()),
        ];
        if let Some((field, _)) = set.into_iter().find(|(_, given)| *given) {
            return Err(ParamError::new(
                Field::Calibrate,
                format!("calibrate fits the efficiencies, so {} cannot be given with it", field.name()),
            )
            .hint(format!("give --calibrate or --{}, not both", field.name())));
        }
        let model = self.resolve()?;
        let fit = model.calibrate_to(measured, layers)?;
        let round = |x: f64| ((x * 1e4).round() / 1e4).max(1e-4);
        let spec = ModelSpec {
            gemm_efficiency: Some(round(fit.efficiency.gemm)),
            memory_efficiency: Some(round(fit.efficiency.memory)),
            ..self.clone()
        };
        // The residuals at the efficiencies the spec now carries.
        let rounded = spec.resolve()?;
        let e = rounded.efficiency()?;
        let g = rounded.gpu()?;
        let stage = Stage::new(&rounded.layer_ops(), f64::from(layers), g.peak_tflops * 1e12, g.hbm_gbps * 1e9);
        let model_times = stage.times(e);
        let residuals = [F, B, W].map(|p| model_times[p] / measured[p] - 1.0);
        Ok((spec, Calibration { efficiency: e, residuals, determined: stage.determines(e), ..fit }))
    }
}
