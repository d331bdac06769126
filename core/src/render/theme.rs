//! Colours and fonts, shared by the canvas, the SVG export and the app's CSS legend.

use crate::schedule::PassKind;

/// An opaque colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// `#rrggbb`.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }

    /// Mixes `self` with `other`: `t = 0` is `self`, `t = 1` is `other`.
    pub fn mix(self, other: Rgb, t: f64) -> Rgb {
        let m = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round().clamp(0.0, 255.0) as u8;
        Rgb(m(self.0, other.0), m(self.1, other.1), m(self.2, other.2))
    }

    /// Relative luminance in `0..=1` (sRGB weights, no gamma: enough to pick a label colour).
    pub fn luminance(self) -> f64 {
        (0.2126 * f64::from(self.0) + 0.7152 * f64::from(self.1) + 0.0722 * f64::from(self.2)) / 255.0
    }

    /// Relative luminance as WCAG 2 defines it (linearised sRGB).
    pub fn wcag_luminance(self) -> f64 {
        let lin = |c: u8| {
            let c = f64::from(c) / 255.0;
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * lin(self.0) + 0.7152 * lin(self.1) + 0.0722 * lin(self.2)
    }

    /// WCAG 2 contrast ratio between two colours, `1..=21` (AA asks 4.5 for text).
    pub fn contrast(self, other: Rgb) -> f64 {
        let (a, b) = (self.wcag_luminance(), other.wcag_luminance());
        (a.max(b) + 0.05) / (a.min(b) + 0.05)
    }
}

/// Label colours on pass bars: black or white, whichever contrasts more. One of the two always
/// reaches 4.58:1, above WCAG AA's 4.5 for text.
const LABEL_DARK: Rgb = Rgb(0, 0, 0);
const LABEL_LIGHT: Rgb = Rgb(255, 255, 255);

/// What a bar shows, for colours and the legend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BarKind {
    /// A pass of this kind.
    Pass(PassKind),
    /// Many passes narrower than a pixel, merged.
    Merged,
}

/// Why a device sits idle (see [`crate::gaps`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cause {
    /// Waiting for a hop between devices.
    Communication,
    /// Waiting for a heavier stage.
    Imbalance,
    /// Warm-up, cool-down and the waits the order itself creates.
    Schedule,
}

impl Cause {
    /// Every cause, in the order of [`crate::attribution::Parts`] and [`Theme::causes`].
    pub const ALL: [Cause; 3] = [Cause::Communication, Cause::Imbalance, Cause::Schedule];
    /// The order a gap's segments run in time: the hop comes last, right before the pass it
    /// delays.
    pub const STACK: [Cause; 3] = [Cause::Schedule, Cause::Imbalance, Cause::Communication];

    /// Its name, lowercase (`communication`), as in labels and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Communication => "communication",
            Cause::Imbalance => "imbalance",
            Cause::Schedule => "schedule",
        }
    }

    /// Its index in [`Cause::ALL`] and [`Theme::causes`].
    pub fn index(self) -> usize {
        match self {
            Cause::Communication => 0,
            Cause::Imbalance => 1,
            Cause::Schedule => 2,
        }
    }

    /// Its share of `parts`.
    pub fn of(self, parts: &crate::attribution::Parts) -> f64 {
        match self {
            Cause::Communication => parts.communication,
            Cause::Imbalance => parts.imbalance,
            Cause::Schedule => parts.schedule,
        }
    }
}

/// A colour theme.
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    /// Name: `light` or `dark`.
    pub name: &'static str,
    /// Page background.
    pub background: Rgb,
    /// The track behind each device row (idle time shows as this).
    pub track: Rgb,
    /// Main text.
    pub text: Rgb,
    /// Secondary text: axis labels, ticks.
    pub muted: Rgb,
    /// Grid lines.
    pub grid: Rgb,
    /// Memory limit and errors.
    pub alert: Rgb,
    /// Outline of highlighted passes.
    pub outline: Rgb,
    /// Base colours per pass kind, chunk 0: F, B, W, BW, R.
    pub kinds: [Rgb; 9],
    /// Colour of collectives on a side stream (the vocabulary shards' barriers).
    pub comms: Rgb,
    /// Colour of a device's data-parallel gradient reduction (the whole step's strips).
    pub reduction: Rgb,
    /// Colour of the optimizer step (the whole step's strips).
    pub optimizer: Rgb,
    /// Colours of copies to and from the host, in [`crate::schedule::CopyKind::ALL`] order: offload, reload.
    pub copies: [Rgb; 2],
    /// Colour of merged sub-pixel runs.
    pub merged: Rgb,
    /// Tints of idle gaps by cause, in [`Cause::ALL`] order: communication, imbalance,
    /// schedule. Pale next to the pass colours (the passes stay the focus); the app's CSS
    /// holds the same values as `--cause-*`.
    pub causes: [Rgb; 3],
    /// Tint of a measured runtime's own overhead inside an idle gap (part of the schedule
    /// cause; [`crate::gaps::Gap::overhead`]); `--cause-overhead` in the app's CSS.
    pub overhead: Rgb,
    /// Font family (a CSS font stack).
    pub font: &'static str,
}

impl Theme {
    /// The light theme.
    pub fn light() -> Theme {
        Theme {
            name: "light",
            background: Rgb(255, 255, 255),
            track: Rgb(241, 243, 246),
            text: Rgb(17, 24, 39),
            muted: Rgb(100, 110, 125),
            grid: Rgb(226, 229, 235),
            alert: Rgb(185, 28, 28),
            outline: Rgb(17, 24, 39),
            kinds: [
                Rgb(59, 130, 246),
                Rgb(20, 184, 166),
                Rgb(132, 204, 22),
                Rgb(245, 158, 11),
                Rgb(236, 72, 153),
                Rgb(79, 70, 229),
                Rgb(192, 38, 211),
                Rgb(2, 132, 199),
                Rgb(194, 65, 12),
            ],
            comms: Rgb(71, 85, 105),
            reduction: Rgb(13, 148, 136),
            optimizer: Rgb(100, 116, 139),
            copies: [Rgb(124, 58, 237), Rgb(192, 132, 252)],
            merged: Rgb(148, 163, 184),
            causes: [Rgb(218, 200, 250), Rgb(251, 207, 213), Rgb(213, 219, 228)],
            overhead: Rgb(250, 222, 170),
            font: "Inter, ui-sans-serif, system-ui, sans-serif",
        }
    }

    /// The dark theme.
    pub fn dark() -> Theme {
        Theme {
            name: "dark",
            background: Rgb(15, 18, 25),
            track: Rgb(29, 34, 45),
            text: Rgb(229, 231, 235),
            muted: Rgb(148, 156, 170),
            grid: Rgb(45, 52, 66),
            alert: Rgb(248, 113, 113),
            outline: Rgb(250, 250, 250),
            kinds: [
                Rgb(96, 165, 250),
                Rgb(45, 212, 191),
                Rgb(163, 230, 53),
                Rgb(251, 191, 36),
                Rgb(244, 114, 182),
                Rgb(129, 140, 248),
                Rgb(232, 121, 249),
                Rgb(56, 189, 248),
                Rgb(251, 146, 60),
            ],
            comms: Rgb(203, 213, 225),
            reduction: Rgb(45, 212, 191),
            optimizer: Rgb(148, 163, 184),
            copies: [Rgb(167, 139, 250), Rgb(216, 180, 254)],
            merged: Rgb(100, 116, 139),
            causes: [Rgb(71, 54, 110), Rgb(100, 44, 58), Rgb(54, 62, 80)],
            overhead: Rgb(80, 60, 28),
            font: "Inter, ui-sans-serif, system-ui, sans-serif",
        }
    }

    /// The theme called `name` (`light` or `dark`).
    pub fn named(name: &str) -> Option<Theme> {
        match name {
            "light" => Some(Theme::light()),
            "dark" => Some(Theme::dark()),
            _ => None,
        }
    }

    /// The fill of a pass of `kind` on `chunk`: chunk 0 is the base colour, later chunks
    /// alternate darker and lighter shades.
    pub fn pass_color(&self, kind: PassKind, chunk: u32) -> Rgb {
        let base = self.kinds[kind.index()];
        match chunk {
            0 => base,
            c => {
                let step = f64::from(c.div_ceil(2)).min(3.0);
                if c % 2 == 1 {
                    base.mix(Rgb(0, 0, 0), 0.28 * step)
                } else {
                    base.mix(Rgb(255, 255, 255), 0.3 * step)
                }
            }
        }
    }

    /// A readable label colour on `fill`: black or white, whichever contrasts more (WCAG AA).
    pub fn label_on(&self, fill: Rgb) -> Rgb {
        if fill.contrast(LABEL_DARK) >= fill.contrast(LABEL_LIGHT) {
            LABEL_DARK
        } else {
            LABEL_LIGHT
        }
    }

    /// Colour of device `device` out of `devices` in line charts.
    pub fn device_color(&self, device: u32, devices: u32) -> Rgb {
        // A perceptually ordered ramp (viridis-like), dark to light on light themes.
        const RAMP: [Rgb; 6] = [
            Rgb(68, 1, 84),
            Rgb(65, 68, 135),
            Rgb(42, 120, 142),
            Rgb(34, 168, 132),
            Rgb(122, 209, 81),
            Rgb(253, 231, 37),
        ];
        let t = if devices <= 1 { 0.0 } else { f64::from(device) / f64::from(devices - 1) };
        // On white, stop before the palest yellow; on black, start after the darkest purple.
        let t = if self.name == "light" { t * 0.82 } else { 0.3 + t * 0.7 };
        let x = t * (RAMP.len() - 1) as f64;
        let i = (x.floor() as usize).min(RAMP.len() - 2);
        RAMP[i].mix(RAMP[i + 1], x - i as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_get_distinct_shades_of_their_kind() {
        let t = Theme::light();
        let shades: Vec<Rgb> = (0..4).map(|c| t.pass_color(PassKind::F, c)).collect();
        for i in 0..shades.len() {
            for j in i + 1..shades.len() {
                assert_ne!(shades[i], shades[j]);
            }
        }
        assert_eq!(shades[0], t.kinds[0]);
    }

    #[test]
    fn labels_contrast_with_their_fill() {
        let t = Theme::light();
        assert_eq!(t.label_on(Rgb(255, 255, 255)), LABEL_DARK);
        assert_eq!(t.label_on(Rgb(30, 64, 175)), LABEL_LIGHT);
    }

    #[test]
    fn contrast_ratios_match_wcag_examples() {
        // Reference values from the WCAG definition: black on white 21:1, equal colours 1:1,
        // #767676 on white 4.54:1 (the lightest grey that passes AA).
        assert!((Rgb(0, 0, 0).contrast(Rgb(255, 255, 255)) - 21.0).abs() < 1e-9);
        assert!((Rgb(9, 9, 9).contrast(Rgb(9, 9, 9)) - 1.0).abs() < 1e-12);
        assert!((Rgb(118, 118, 118).contrast(Rgb(255, 255, 255)) - 4.54).abs() < 0.01);
    }

    /// WCAG AA for normal-size text.
    const AA: f64 = 4.5;

    #[test]
    fn both_themes_meet_wcag_aa_for_text_and_pass_labels() {
        for t in [Theme::light(), Theme::dark()] {
            for (what, fg) in [("text", t.text), ("muted", t.muted), ("alert", t.alert)] {
                for (on, bg) in [("background", t.background), ("track", t.track)] {
                    let c = fg.contrast(bg);
                    assert!(c >= AA, "{}: {what} on {on} is {c:.2}:1, below {AA}:1", t.name);
                }
            }
            // Every pass colour, every chunk shade, and merged runs carry readable labels.
            for kind in PassKind::ALL {
                for chunk in 0..6 {
                    let fill = t.pass_color(kind, chunk);
                    let c = t.label_on(fill).contrast(fill);
                    assert!(c >= AA, "{}: label on {kind:?} chunk {chunk} ({}) is {c:.2}:1", t.name, fill.hex());
                }
            }
            let c = t.label_on(t.merged).contrast(t.merged);
            assert!(c >= AA, "{}: label on merged runs is {c:.2}:1", t.name);
        }
    }

    #[test]
    fn cause_tints_are_subtle_distinct_and_carry_text() {
        for t in [Theme::light(), Theme::dark()] {
            // Passes stand out more from the background than any idle tint does.
            let weakest_pass = t.kinds.iter().map(|k| k.contrast(t.background)).fold(f64::INFINITY, f64::min);
            let tints: Vec<Rgb> = t.causes.iter().copied().chain([t.overhead]).collect();
            for (i, tint) in tints.iter().enumerate() {
                let c = tint.contrast(t.background);
                assert!(
                    c < weakest_pass && c < 2.0,
                    "{}: tint {i} ({}) is {c:.2}:1 on the background",
                    t.name,
                    tint.hex()
                );
                // Text on a tint (the app's attribution bar labels) meets AA.
                let text = t.text.contrast(*tint);
                assert!(text >= AA, "{}: text on tint {i} is {text:.2}:1", t.name);
                // Tints differ from the empty track and from each other.
                assert_ne!(*tint, t.track);
                for other in &tints[i + 1..] {
                    let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).abs();
                    let dist = d(tint.0, other.0) + d(tint.1, other.1) + d(tint.2, other.2);
                    assert!(dist >= 40, "{}: tints {} and {} are too alike", t.name, tint.hex(), other.hex());
                }
            }
        }
    }

    #[test]
    fn the_app_css_holds_the_cause_tints() {
        const CSS: &str = include_str!("../../../style/main.css");
        for (t, selector) in [(Theme::light(), ":root {"), (Theme::dark(), ":root[data-theme=\"dark\"] {")] {
            let vars = css_colors(CSS, selector);
            for cause in Cause::ALL {
                let name = format!("cause-{}", cause.name());
                let css = vars.iter().find(|(n, _)| *n == name).map(|(_, c)| *c);
                assert_eq!(css, Some(t.causes[cause.index()]), "{}: --{name}", t.name);
            }
            let css = vars.iter().find(|(n, _)| n == "cause-overhead").map(|(_, c)| *c);
            assert_eq!(css, Some(t.overhead), "{}: --cause-overhead", t.name);
        }
    }

    /// The app's CSS colours: `--name: #rrggbb;` inside the block that starts with `selector`.
    fn css_colors(css: &str, selector: &str) -> Vec<(String, Rgb)> {
        let start = css.find(selector).expect("selector in main.css");
        let block = &css[start..start + css[start..].find('}').expect("closed block")];
        block
            .lines()
            .filter_map(|l| {
                let (name, value) = l.trim().strip_prefix("--")?.split_once(':')?;
                let hex = value.trim().strip_prefix('#')?.strip_suffix(';')?;
                let n = u32::from_str_radix(hex, 16).ok().filter(|_| hex.len() == 6)?;
                Some((name.to_string(), Rgb((n >> 16) as u8, (n >> 8) as u8, n as u8)))
            })
            .collect()
    }

    #[test]
    fn the_app_css_meets_wcag_aa_in_both_themes() {
        const CSS: &str = include_str!("../../../style/main.css");
        let light = css_colors(CSS, ":root {");
        let mut dark = light.clone();
        for (name, c) in css_colors(CSS, ":root[data-theme=\"dark\"] {") {
            match dark.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = c,
                None => dark.push((name, c)),
            }
        }
        for (theme, vars) in [("light", &light), ("dark", &dark)] {
            let get = |n: &str| vars.iter().find(|(v, _)| v == n).map(|(_, c)| *c).unwrap_or_else(|| panic!("--{n}"));
            let pairs = [
                ("text", "bg"),
                ("text", "surface"),
                ("text", "surface-2"),
                ("muted", "bg"),
                ("muted", "surface"),
                ("muted", "surface-2"),
                ("accent", "surface"),
                ("accent-ink", "accent"),
                ("alert", "alert-soft"),
                ("alert", "surface"),
                ("warn", "warn-soft"),
                ("text", "accent-soft"),
            ];
            for (fg, bg) in pairs {
                let c = get(fg).contrast(get(bg));
                assert!(c >= AA, "{theme}: --{fg} on --{bg} is {c:.2}:1, below {AA}:1");
            }
        }
    }
}
