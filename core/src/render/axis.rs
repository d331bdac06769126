//! The time axis: the only mapping between time and pixels, and its ticks.

/// Maps times in `t0..t1` to x in `x0..x1` (either unit: device or CSS pixels).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeAxis {
    /// First visible time.
    pub t0: f64,
    /// Last visible time.
    pub t1: f64,
    /// x of `t0`.
    pub x0: f64,
    /// x of `t1`.
    pub x1: f64,
}

/// Room right of the plot on the charts with a time axis (CSS pixels).
const RIGHT: f64 = 18.0;

impl TimeAxis {
    /// The time axis of a chart `width` CSS pixels wide whose plot starts at `gutter`: it shows
    /// `range` when that is finite and not empty, else everything from 0 to `end` (to 1 when
    /// nothing ends after 0).
    pub(crate) fn for_chart(range: Option<(f64, f64)>, end: f64, gutter: f64, width: f64) -> TimeAxis {
        let (t0, t1) = match range {
            Some((a, b)) if b > a && a.is_finite() && b.is_finite() => (a, b),
            _ => (0.0, if end > 0.0 { end } else { 1.0 }),
        };
        TimeAxis { t0, t1, x0: gutter, x1: (width - RIGHT).max(gutter + 10.0) }
    }

    /// x of time `t`.
    pub fn x(&self, t: f64) -> f64 {
        let span = self.t1 - self.t0;
        if span <= 0.0 {
            return self.x0;
        }
        self.x0 + (t - self.t0) / span * (self.x1 - self.x0)
    }

    /// Time at x (the inverse of [`TimeAxis::x`]), for hovering.
    pub fn t(&self, x: f64) -> f64 {
        let width = self.x1 - self.x0;
        if width <= 0.0 {
            return self.t0;
        }
        self.t0 + (x - self.x0) / width * (self.t1 - self.t0)
    }

    /// The same axis in another pixel unit (`factor` = new pixels per old pixel).
    pub fn scaled(&self, factor: f64) -> TimeAxis {
        TimeAxis { x0: self.x0 * factor, x1: self.x1 * factor, ..*self }
    }
}

/// "Nice" tick positions covering `lo..=hi` with about `target` intervals: steps of 1, 2 or 5
/// times a power of ten. Returns the ticks and the step.
pub fn ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, f64) {
    if !lo.is_finite() || !hi.is_finite() || hi <= lo {
        return (vec![lo], 1.0);
    }
    let raw = (hi - lo) / target.max(1) as f64;
    // Find the power of ten at or below `raw` without transcendental functions, so every
    // platform picks the same step.
    let mut pow = 1.0f64;
    while pow > raw && pow > 1e-12 {
        pow /= 10.0;
    }
    while pow * 10.0 <= raw && pow < 1e15 {
        pow *= 10.0;
    }
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * pow).find(|s| *s >= raw).unwrap_or(10.0 * pow);
    let first = (lo / step).ceil();
    let mut out = Vec::new();
    let mut i = 0.0;
    loop {
        let t = (first + i) * step;
        if t > hi + step * 1e-9 || out.len() > 1000 {
            break;
        }
        out.push(t);
        i += 1.0;
    }
    (out, step)
}

/// Formats a tick value for a given step: no more decimals than the step needs, and
/// thousands as `k` / millions as `M` when the step allows.
pub fn format_tick(value: f64, step: f64) -> String {
    let value = if value.abs() < step * 1e-9 { 0.0 } else { value };
    if step >= 1e5 && value.abs() >= 1e6 {
        return format!("{}M", trim(value / 1e6, step / 1e6));
    }
    if step >= 1e2 && value.abs() >= 1e3 {
        return format!("{}k", trim(value / 1e3, step / 1e3));
    }
    trim(value, step)
}

fn trim(value: f64, step: f64) -> String {
    let mut decimals = 0;
    let mut s = step;
    while decimals < 9 && (s - s.round()).abs() > 1e-9 * s.abs().max(1.0) {
        s *= 10.0;
        decimals += 1;
    }
    crate::units::format_fixed(value, decimals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_use_one_two_five_steps() {
        assert_eq!(ticks(0.0, 33.0, 6), (vec![0.0, 10.0, 20.0, 30.0], 10.0));
        let (t, step) = ticks(0.0, 1.0, 4);
        assert_eq!(step, 0.5);
        assert_eq!(t, vec![0.0, 0.5, 1.0]);
        let (t, step) = ticks(0.0, 1_310_405.0, 6);
        assert_eq!(step, 500_000.0);
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn tick_labels_are_short_and_exact() {
        let cases =
            [(20.0, 10.0, "20"), (0.5, 0.5, "0.5"), (1e6, 5e5, "1.0M"), (1.5e6, 5e5, "1.5M"), (2e4, 5e3, "20k")];
        for (value, step, label) in cases {
            assert_eq!(format_tick(value, step), label, "{value} in steps of {step}");
        }
    }

    #[test]
    fn the_axis_inverts() {
        let a = TimeAxis { t0: 10.0, t1: 30.0, x0: 100.0, x1: 500.0 };
        assert_eq!(a.x(20.0), 300.0);
        assert_eq!(a.t(300.0), 20.0);
    }
}
