//! Numbers as Bubblescope prints them: labels and stats ([`format_number`]), a fixed count of
//! significant digits, messages ([`short_number`]), and µs as people read them.

/// Formats a number for labels and stats: integers without decimals, others with up to
/// `max_decimals`, trailing zeros removed; from 10^15 on, in exponent form (`1e300`), never
/// hundreds of digits.
pub fn format_number(value: f64, max_decimals: usize) -> String {
    if !value.is_finite() || value.abs() >= 1e15 {
        return short_number(value);
    }
    if value == value.round() {
        // `+ 0.0` makes −0 (a product or sum that reached zero from below) print as 0.
        return format!("{:.0}", value + 0.0);
    }
    // The shortest form that reads back exactly, when it has at most `max_decimals` decimals
    // and those decimals are far coarser than the value's precision: then it is the value
    // rounded to them, as the exact formatting below would print it, and costs a fraction
    // (the exact path falls back to bignum arithmetic for many values).
    if max_decimals < 16 && value.abs() * f64::EPSILON < 0.25 * 10f64.powi(-(max_decimals as i32)) {
        let shortest = value.to_string();
        if !shortest.contains(['e', 'E']) && shortest.split_once('.').is_none_or(|(_, d)| d.len() <= max_decimals) {
            return if shortest == "-0" { "0".to_string() } else { shortest };
        }
    }
    let s = format!("{value:.max_decimals$}");
    // Only a fraction's zeros go: 8500.6 at no decimals is 8501, never 851.
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { s.as_str() };
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// `value` with exactly `decimals` decimals (`2.50`), never `-0` or `-0.00`: a value that
/// rounds to zero prints unsigned.
pub fn format_fixed(value: f64, decimals: usize) -> String {
    let s = format!("{value:.decimals$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => rest.to_string(),
        _ => s,
    }
}

/// `value` with exactly `decimals` decimals and its sign (`+0.6`, `-0.6`), and no sign when
/// it rounds to zero (`0.0`, never `-0.0` or `+0.0`).
pub fn format_signed(value: f64, decimals: usize) -> String {
    let s = format_fixed(value, decimals);
    if s.starts_with('-') || s.bytes().all(|b| b == b'0' || b == b'.') {
        s
    } else {
        format!("+{s}")
    }
}

/// The decimals that give `value` `digits` significant digits (0 when its integer part has
/// that many already; at most 12).
pub fn significant_decimals(value: f64, digits: u32) -> usize {
    if value == 0.0 || !value.is_finite() {
        return 0;
    }
    let magnitude = value.abs().log10().floor() as i64;
    (i64::from(digits) - 1 - magnitude).clamp(0, 12) as usize
}

/// `value` without float noise: the decimal of at most 12 significant digits nearest it, when
/// that lies within 128 rounding steps of `value` (the steps a sum or a running total of up
/// to about a hundred terms takes:
/// `2.8` for 2.800000000000004, `2` for 2.0000000000000004, `0.3` for 0.1 + 0.2), or else a
/// whole number of thirds, quarters … 128ths ([`nearest_fraction`]) as near (`4/3` for
/// 1.3333333333333375, the times of passes split in three chunks); else `value` itself,
/// exactly. A number that needs its digits (9/33, a fitted time) stays bit for bit.
/// The CLI's JSON output passes every number through it.
pub fn without_noise(value: f64) -> f64 {
    if !value.is_finite() || value == 0.0 {
        return value;
    }
    let near = NOISE_STEPS * f64::EPSILON * value.abs();
    match format!("{value:.11e}").parse::<f64>() {
        Ok(decimal) if (decimal - value).abs() <= near => decimal,
        _ => nearest_fraction(value, near).unwrap_or(value),
    }
}

/// The whole number of `1/d` (d from 2 to 128) within `near` of `value`, if one is: float noise
/// in runs whose costs are thirds, sixths … of a pass, which no short decimal holds. Only
/// where `near` is a tiny share of the step `1/d` (never at 10^14, where 128 rounding steps
/// span whole halves).
fn nearest_fraction(value: f64, near: f64) -> Option<f64> {
    (2..=FRACTION_DENOMINATORS).map(f64::from).find_map(|d| {
        let whole = (value * d).round();
        let fraction = whole / d;
        (near * d <= 1e-6 && (fraction - value).abs() <= near).then_some(fraction + 0.0)
    })
}

/// The largest denominator [`nearest_fraction`] tries: recompute's 17ths meet quarters and
/// fifths (57/68, 114/85), and tenths meet twelfths (29/120), within it.
const FRACTION_DENOMINATORS: u8 = 128;

/// `value`, one of a running total's values or a difference whose terms are about `scale` in
/// size, without float noise: 0 when it lies within the same 128 rounding steps of `scale` (a
/// total that returns to empty as `-2.220446049250313e-16`); the decimal of 12 significant
/// digits at `scale` (or a whole number of thirds … 128ths) when that lies as near (`0.2` for
/// 100.2 − 100, `4/3` for 1.3333333333333375 at 50); else [`without_noise`]'s
/// value; never `-0`. Exports of memory curves and durations pass their points through it.
pub fn without_noise_in(value: f64, scale: f64) -> f64 {
    let near = NOISE_STEPS * f64::EPSILON * scale.abs();
    if is_noise_at(value, scale) {
        return 0.0;
    }
    if scale.is_finite() && scale != 0.0 && value.is_finite() {
        let decimals = (11 - scale.abs().log10().floor() as i64).clamp(0, 300) as usize;
        if let Ok(grid) = format!("{value:.decimals$}").parse::<f64>() {
            if (grid - value).abs() <= near {
                return grid + 0.0;
            }
        }
        if let Some(fraction) = nearest_fraction(value, near) {
            return fraction;
        }
    }
    without_noise(value) + 0.0
}

/// `a − b` as reports give it: [`without_noise_in`] at the terms' scale, so a difference
/// that is float noise is exactly 0 (never `-8.9e-16`) and one a few rounding steps from a
/// round value is that value (`0.15` for 0.14999999999999325 between terms near 16).
pub fn difference(a: f64, b: f64) -> f64 {
    without_noise_in(a - b, a.abs().max(b.abs()))
}

/// `num / den` as reports give it (a rate, a share): when both are whole numbers of `1/q`
/// (q a short decimal step times 1 to 12: `4.55 / 21.35`, `(4/3) / (148/3)`) but for float
/// noise at their scale, the quotient of those whole numbers (exactly the f64 of 13/61 or
/// 1/37, not 0.21311475409836067 or 0.027027027027027025); else `num / den`.
pub fn quotient(num: f64, den: f64) -> f64 {
    let scale = num.abs().max(den.abs());
    if scale.is_finite() {
        for step in [1.0, 10.0, 100.0, 1e3, 1e4] {
            for d in (1..=12u8).map(|d| f64::from(d) * step) {
                if NOISE_STEPS * f64::EPSILON * scale * d > 1e-6 {
                    break;
                }
                let (n, m) = ((num * d).round(), (den * d).round());
                let whole = |x: f64, w: f64| is_noise_at(x * d - w, scale * d);
                if m != 0.0 && whole(num, n) && whole(den, m) {
                    return n / m + 0.0;
                }
            }
        }
    }
    num / den
}

/// Whether `value`, a difference whose terms are about `scale` in size, is float noise: within
/// the same rounding steps of `scale` that [`without_noise_in`] takes as noise.
pub fn is_noise_at(value: f64, scale: f64) -> bool {
    value.abs() <= NOISE_STEPS * f64::EPSILON * scale.abs()
}

/// `value` rounded up to `decimals` decimals, for a need shown as a limit that holds it
/// (`1023.99` TiB plus some GiB shows as `1024`, never as the `1023.99` that fails); a value on
/// the grid up to float noise ([`is_noise_at`]) stays there (`102.24`, not `102.25`).
pub fn round_up(value: f64, decimals: usize) -> f64 {
    if !value.is_finite() {
        return value;
    }
    let factor = 10f64.powi(decimals.min(300) as i32);
    let scaled = value * factor;
    let near = scaled.round();
    let grid = if is_noise_at(scaled - near, scaled) { near } else { scaled.ceil() };
    grid / factor + 0.0
}

/// The rounding steps (relative, in units of `f64::EPSILON`) [`without_noise`] takes as noise.
const NOISE_STEPS: f64 = 128.0;

/// `value` with `digits` significant digits, trailing zeros of a fraction dropped.
pub fn format_significant(value: f64, digits: u32) -> String {
    format_number(value, significant_decimals(value, digits))
}

/// A number as messages print it: as short as it reads back exactly, never hundreds of
/// digits. Whole numbers below 10^15 print plainly (`8000000`), other numbers below 10^15 and
/// at least 10^-4 in Rust's shortest form (`0.1`, `-2.5`), everything else in exponent form
/// (`1e308`, `1e-300`, `1.5e20`); `inf`, `-inf` and `NaN` as Rust names them.
pub fn short_number(value: f64) -> String {
    let magnitude = value.abs();
    if !value.is_finite() || value == 0.0 {
        return if value == 0.0 { "0".to_string() } else { value.to_string() };
    }
    if (1e-4..1e15).contains(&magnitude) {
        value.to_string()
    } else {
        format!("{value:e}")
    }
}

/// A value of a run whose values are about `scale` in size, for tables: to 4 decimals
/// ([`format_number`]), or when the run's scale is itself below 10^-4 (costs given in
/// seconds of a tiny model, say) to 4 significant digits (`3.3e-8`), never all `0`; a value
/// below 10^-9 of the scale is float noise and prints as 0.
pub fn format_at_scale(value: f64, scale: f64) -> String {
    if !scale.is_finite() || scale.abs() >= 1e-4 || !value.is_finite() {
        return format_number(value, 4);
    }
    if value.abs() <= 1e-9 * scale.abs() {
        return "0".to_string();
    }
    let rounded = format!("{value:.3e}").parse::<f64>().unwrap_or(value);
    short_number(rounded)
}

/// A time in µs as people read it: `850 µs`, `12.4 ms`, `1.2 s`.
pub fn format_micros(us: f64) -> String {
    if us.abs() >= 1e6 {
        format!("{} s", format_number(us / 1e6, 2))
    } else if us.abs() >= 1e3 {
        format!("{} ms", format_number(us / 1e3, 2))
    } else {
        format!("{} µs", format_number(us, 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hostile pass 5, items 15 to 23: differences that are float noise are exact (0, or the
    /// round value), signed numbers never print a negative zero.
    /// A need rounded up for a limit never shows below itself, and a round need stays as it
    /// is (issue 43, pass 6, item 7).
    #[test]
    fn needs_round_up_past_the_grid_and_not_past_noise() {
        assert_eq!(round_up(1023.9912, 2), 1024.0);
        assert_eq!(round_up(1023.99, 2), 1023.99);
        assert_eq!(round_up(102.24 * 1_073_741_824.0 / 1_073_741_824.0, 2), 102.24);
        assert_eq!(round_up(0.1 + 0.2, 1), 0.3);
        assert_eq!(round_up(2.00001, 4), 2.0001);
        assert_eq!(round_up(-0.0, 2).to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn differences_and_signs_carry_no_float_noise() {
        assert_eq!(format_signed(-0.0004, 1), "0.0");
        assert_eq!(format_signed(-0.04, 1), "0.0");
        assert_eq!(format_signed(0.6, 1), "+0.6");
        assert_eq!(format_signed(-0.6, 1), "-0.6");
        assert_eq!(difference(16.15, 16.0), 0.15);
        assert_eq!(difference(0.1 + 0.2, 0.3), 0.0);
        assert!(difference(0.3, 0.1 + 0.2).is_sign_positive());
        assert_eq!(difference(1.0, 1.000000001), -1e-9, "a real difference stays");
        assert_eq!(difference(3.0, 1.0), 2.0);
        assert_eq!(without_noise(8.462800000000001e-8), 8.4628e-8);
    }
    use proptest::prelude::*;

    #[test]
    fn float_noise_goes_and_real_digits_stay() {
        assert_eq!(without_noise(2.0000000000000004), 2.0);
        assert_eq!(without_noise(2.800000000000004), 2.8);
        assert_eq!(without_noise(0.1 + 0.2), 0.3);
        assert_eq!(without_noise(-(0.1 + 0.2)), -0.3);
        let kept = [9.0 / 33.0, 1.0 / 3.0, 2.0 / 3.0, 4708.0107421875, 12345.678901234567, 1e-300, 5e-324, f64::MAX];
        for v in kept {
            assert_eq!(without_noise(v).to_bits(), v.to_bits(), "{v}");
        }
        assert!(without_noise(f64::NAN).is_nan());
    }

    #[test]
    fn a_total_back_at_empty_is_zero_at_its_terms_scale() {
        let back = 0.5 + 0.1 + 0.2 - 0.5 - 0.3;
        assert!(back != 0.0);
        assert_eq!(without_noise_in(back, 0.5).to_bits(), 0.0f64.to_bits());
        assert_eq!(without_noise_in(-2.220446049250313e-16, 2.5).to_bits(), 0.0f64.to_bits());
        assert_eq!(without_noise_in(2.0000000000000004, 2.5), 2.0);
        assert_eq!(without_noise_in(1e-9, 2.5), 1e-9);
        assert_eq!(without_noise_in(9.0 / 33.0, 2.5).to_bits(), (9.0f64 / 33.0).to_bits());
        // A short difference of long times: the noise is the times'.
        assert_eq!(without_noise_in(100.2 - 100.0, 100.2), 0.2);
        assert_eq!(without_noise_in(1734785.3827074657 - 1734785.3827074655, 1734785.3827074657), 0.0);
    }

    /// Issue 43, pass 6, item 12: runs whose passes last thirds of a unit (`--chunks 3`) give
    /// times like 1.3333333333333375 that no short decimal holds; they are thirds, exactly as
    /// near as f64 holds them, and a number that needs its digits stays.
    #[test]
    fn thirds_of_a_pass_lose_their_noise_too() {
        assert_eq!(without_noise(1.3333333333333375), 4.0 / 3.0);
        assert_eq!(without_noise(0.6666666666666687), 2.0 / 3.0);
        assert_eq!(without_noise(-0.6666666666666687), -2.0 / 3.0);
        assert_eq!(without_noise_in(1.3333333333333375, 50.0), 4.0 / 3.0);
        assert_eq!(without_noise_in(0.0400000000000015, 50.0), 0.04);
        assert_eq!(without_noise_in(0.6666666666666852, 4.0), 2.0 / 3.0);
        assert_eq!(without_noise(5.0 / 7.0 + 1e-12), 5.0 / 7.0 + 1e-12, "1e-12 off a seventh is real");
        assert_eq!(quotient(1.3333333333333375, 49.33333333333334), 1.0 / 37.0);
        assert_eq!(quotient(3.0, 50.99999999999997), 3.0 / 51.0);
        // Seventh hostile pass: 4.55 / 21.35 printed 0.21311475409836067; 6/17 of a
        // recomputed activation summed to 0.3529411764705883.
        assert_eq!(quotient(4.550000000000001, 21.35), 13.0 / 61.0);
        assert_eq!(without_noise(0.3529411764705883), 6.0 / 17.0);
        assert_eq!(without_noise(2.8235294117647056), 48.0 / 17.0);
        assert_eq!(quotient(0.1, 0.7), 1.0 / 7.0, "whole tenths");
        assert_eq!(quotient(0.123, 0.7), 0.123 / 0.7, "not whole numbers of a small 1/d");
        // Eighth hostile pass: recompute's 17ths with quarters and fifths (zb-v's peak 57/68,
        // v-min's saved 114/85) and tenths with twelfths (an imbalance of 29/120).
        assert_eq!(without_noise(0.838235294117647), 57.0 / 68.0);
        assert_eq!(without_noise(1.3411764705882354), 114.0 / 85.0);
        assert_eq!(without_noise(0.2416666666666667), 29.0 / 120.0);
        assert_eq!(without_noise_in(1.9916666666666663, 4.0), 239.0 / 120.0);
        for v in [1.0 / 13.0, 0.1234567890123, 161578.54, 1e9 + 1.0 / 3.0, 1.0 / 131.0] {
            assert_eq!(without_noise(v).to_bits(), v.to_bits(), "{v}");
        }
    }

    #[test]
    fn a_running_total_of_many_terms_loses_its_noise() {
        assert_eq!(without_noise(2.500000000000038), 2.5);
        assert_eq!(without_noise(23.99999999999966), 24.0);
        assert_eq!(without_noise(1.6000000000000063), 1.6);
        assert_eq!(without_noise(0.6499999999999932), 0.65);
    }

    #[test]
    fn a_run_of_tiny_values_prints_their_digits_not_zeros() {
        assert_eq!(format_at_scale(3.3e-8, 3.3e-8), "3.3e-8");
        assert_eq!(format_at_scale(1.23456e-9, 3.3e-8), "1.235e-9");
        assert_eq!(format_at_scale(1e-20, 3.3e-8), "0");
        assert_eq!(format_at_scale(0.0, 3.3e-8), "0");
        assert_eq!(format_at_scale(0.27272727, 33.0), "0.2727");
        assert_eq!(format_at_scale(1e-9, 33.0), "0");
    }

    #[test]
    fn negative_zero_prints_as_zero() {
        assert_eq!(format_number(-0.0, 4), "0");
        assert_eq!(format_number(-0.0, 0), "0");
        assert_eq!(format_micros(-0.0), "0 µs");
        assert_eq!(format_significant(-0.0, 4), "0");
        assert_eq!(short_number(-0.0), "0");
        assert_eq!(format_fixed(-0.0, 3), "0.000");
        assert_eq!(format_fixed(-0.0001, 3), "0.000");
        assert_eq!(format_fixed(-1e-12, 0), "0");
        assert_eq!(format_fixed(-0.5, 2), "-0.50");
        assert_eq!(format_fixed(2.5, 2), "2.50");
    }

    /// What `format_number` prints by the exact formatting alone.
    fn exact(value: f64, max_decimals: usize) -> String {
        if value.abs() >= 1e15 {
            return short_number(value);
        }
        if value == value.round() {
            return format!("{value:.0}");
        }
        let s = format!("{value:.max_decimals$}");
        let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { s.as_str() };
        if s == "-0" {
            "0".to_string()
        } else {
            s.to_string()
        }
    }

    proptest! {
        #![proptest_config(crate::proptest_cases(4096))]
        #[test]
        fn the_shortest_form_shortcut_prints_what_exact_formatting_prints(
            bits in any::<u64>(),
            short in -1e6f64..1e6,
            cents in -100_000_000i64..100_000_000,
            decimals in 0usize..13,
        ) {
            // Any double, plain doubles, and decimal values (ties at every digit included).
            for v in [f64::from_bits(bits), short, cents as f64 / 100.0, cents as f64 / 1000.0, cents as f64 * 1e-9] {
                if v.is_finite() {
                    prop_assert_eq!(format_number(v, decimals), exact(v, decimals), "{} at {} decimals", v, decimals);
                }
            }
        }
    }

    #[test]
    fn huge_numbers_print_in_exponent_form_never_in_hundreds_of_digits() {
        assert_eq!(format_number(1e300, 4), "1e300");
        assert_eq!(format_number(-2.5e20, 2), "-2.5e20");
        assert_eq!(format_number(123_456_789_012_345_680.0, 1), "1.2345678901234568e17");
        assert_eq!(format_micros(1e300), "1e294 s");
        // Up to 10^15 numbers print plainly.
        assert_eq!(format_number(999_999_999_999_999.0, 0), "999999999999999");
        assert_eq!(format_number(123_456_789.26, 1), "123456789.3");
    }

    #[test]
    fn labels_drop_a_fractions_zeros_only() {
        assert_eq!(format_number(0.27272727, 4), "0.2727");
        assert_eq!(format_number(33.0, 4), "33");
        // Regression: rounding to no decimals kept the integer's own zeros.
        assert_eq!(format_number(8500.4, 0), "8500");
        assert_eq!(format_number(99.7, 0), "100");
        assert_eq!(format_number(1.50, 2), "1.5");
        assert_eq!(format_number(-0.0001, 2), "0");
    }

    #[test]
    fn significant_digits_count_from_the_first_nonzero_digit() {
        assert_eq!(format_significant(488_810.227_958, 6), "488810");
        assert_eq!(format_significant(3335.654, 6), "3335.65");
        assert_eq!(format_significant(0.001_234_567, 3), "0.00123");
        assert_eq!(format_significant(-12.345_67, 4), "-12.35");
        assert_eq!((significant_decimals(677.34, 4), significant_decimals(0.13, 4)), (1, 4));
        assert_eq!((significant_decimals(0.0, 4), significant_decimals(1e20, 4)), (0, 0));
    }

    #[test]
    fn numbers_in_messages_are_short() {
        assert_eq!(short_number(1e308), "1e308");
        assert_eq!(short_number(-1e-300), "-1e-300");
        assert_eq!(short_number(8_000_000.0), "8000000");
        assert_eq!(short_number(0.1), "0.1");
        assert_eq!(short_number(1.5e20), "1.5e20");
        assert_eq!(short_number(f64::NEG_INFINITY), "-inf");
        assert_eq!(short_number(-0.0), "0");
        for v in [1e308, 3.3e-7, 123.456, 1e15, 0.000_123_4] {
            let s = short_number(v);
            assert!(s.len() <= 24, "{s}");
            assert_eq!(s.parse::<f64>().unwrap(), v, "{s} reads back");
        }
    }
}
