//! Animated figures: the still figure with a layer that plays the schedule filling and
//! draining, as one self-contained SVG (CSS keyframes, no script).
//!
//! The still figure's bytes come first, unchanged; the animated layer is appended after them.
//! It holds a veil over the part of every plot (Gantt rows and memory curves) that is still in
//! the future, so passes not yet started show faint and appear as simulated time reaches them,
//! and a cursor line at the current time. Both slide with time at a constant speed (the time
//! axis is linear). At the end the veil has slid out of its clip and the cursor is hidden, so the
//! last frame is the still figure. Viewers without CSS animations, and users who ask for reduced
//! motion, see the still figure.

use std::fmt::Write as _;

use super::figure::{figure_layout, FigureItem, FigureOptions};
use super::theme::Rgb;

/// How an animated figure plays.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AnimateOptions {
    /// Seconds from the first pass to the last.
    pub duration: f64,
    /// Play again and again (holding the finished figure for a quarter of the duration between
    /// runs) instead of once.
    pub looping: bool,
}

impl Default for AnimateOptions {
    fn default() -> Self {
        AnimateOptions { duration: 6.0, looping: false }
    }
}

/// Shortest and longest accepted durations, in seconds.
pub const DURATION_RANGE: (f64, f64) = (0.5, 600.0);

/// Opacity of the veil over the future: what is not yet started shows faint.
const VEIL_OPACITY: f64 = 0.82;

/// Share of one loop spent playing; the rest holds the finished figure.
const LOOP_PLAY_SHARE: f64 = 0.8;

/// The figure of `items` as an animated SVG document. `anim.duration` is clamped to
/// [`DURATION_RANGE`].
pub fn figure_animated_svg(items: &[FigureItem<'_>], opts: &FigureOptions, anim: &AnimateOptions) -> String {
    let (scene, geometry) = figure_layout(items, opts);
    // The SVG backend writes into a String and cannot fail.
    let still = super::to_svg(&scene).unwrap_or_default();
    let body = still.trim_end().strip_suffix("</svg>").unwrap_or(&still);
    let (x0, x1) = (px(geometry.axis.x0), px(geometry.axis.x1));
    let travel = (x1 - x0).max(1);
    let duration = if anim.duration.is_finite() { anim.duration } else { AnimateOptions::default().duration };
    let duration = duration.clamp(DURATION_RANGE.0, DURATION_RANGE.1);
    let (cycle, play_end, count) = if anim.looping {
        (duration / LOOP_PLAY_SHARE, LOOP_PLAY_SHARE * 100.0, "infinite")
    } else {
        (duration, 100.0, "1")
    };
    let veil = opts.theme.background;
    let cursor = opts.theme.text;

    let mut out = String::with_capacity(still.len() + 2048);
    out.push_str(body);
    out.push_str("<style>\n");
    let _ = writeln!(
        out,
        "@keyframes bs-veil{{0%{{transform:translateX(0px)}}{p}%{{transform:translateX({travel}px)}}100%{{transform:translateX({travel}px)}}}}",
        p = fmt(play_end)
    );
    // The cursor disappears as the run ends (and stays hidden while a loop holds).
    let hold = if play_end < 100.0 { format!("{}%{{opacity:0}}", fmt(play_end)) } else { String::new() };
    let _ = writeln!(
        out,
        "@keyframes bs-cursor{{0%{{transform:translateX(0px);opacity:1}}{p}%{{transform:translateX({travel}px);opacity:1}}{hold}100%{{transform:translateX({travel}px);opacity:0}}}}",
        p = fmt(play_end * 0.9999),
    );
    let _ = writeln!(
        out,
        ".bs-veil{{animation:bs-veil {d}s linear 0s {count} both}}\n.bs-cursor{{animation:bs-cursor {d}s linear 0s {count} both}}",
        d = fmt(cycle)
    );
    out.push_str("@media (prefers-reduced-motion:reduce){.bs-veil,.bs-cursor{animation:none}}\n</style>\n");
    out.push_str("<clipPath id=\"bs-plots\">\n");
    band_rects(&mut out, &geometry.bands, (x0, travel), "", "");
    out.push_str("</clipPath>\n<g clip-path=\"url(#bs-plots)\">\n");
    // Without an animation (static viewers, reduced motion) the veil rests outside its clip.
    let veil_style = format!(" fill=\"{}\" opacity=\"{}\"", hex(veil), fmt(VEIL_OPACITY));
    band_rects(
        &mut out,
        &geometry.bands,
        (x0, travel),
        &format!(" class=\"bs-veil\" transform=\"translate({travel},0)\""),
        &veil_style,
    );
    out.push_str("</g>\n");
    let _ = writeln!(out, "<g class=\"bs-cursor\" opacity=\"0\" stroke=\"{}\" stroke-width=\"2\">", hex(cursor));
    for &(top, bottom) in &geometry.bands {
        let _ = writeln!(out, "<line x1=\"{x0}\" y1=\"{}\" x2=\"{x0}\" y2=\"{}\"/>", px(top), px(bottom));
    }
    out.push_str("</g>\n</svg>\n");
    out
}

/// A rectangle over every band, `width` wide from `x` (`(x, width)`), with the attributes
/// `before` and `after` its geometry.
fn band_rects(out: &mut String, bands: &[(f64, f64)], (x, width): (i64, i64), before: &str, after: &str) {
    for &(top, bottom) in bands {
        let (y, height) = (px(top), (px(bottom) - px(top)).max(1));
        let _ = writeln!(out, "<rect{before} x=\"{x}\" y=\"{y}\" width=\"{width}\" height=\"{height}\"{after}/>");
    }
}

fn px(v: f64) -> i64 {
    if v.is_finite() {
        v.round().clamp(-1e7, 1e7) as i64
    } else {
        0
    }
}

/// A number with at most three decimals and no trailing zeros: fixed, platform-independent.
fn fmt(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

fn hex(c: Rgb) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

#[cfg(test)]
mod tests {
    use super::fmt;

    #[test]
    fn numbers_are_short_and_fixed() {
        assert_eq!(fmt(6.0), "6");
        assert_eq!(fmt(7.5), "7.5");
        assert_eq!(fmt(79.992), "79.992");
        assert_eq!(fmt(1.0 / 3.0), "0.333");
    }
}
