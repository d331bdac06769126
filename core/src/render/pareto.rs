//! The Pareto chart of a sweep: peak memory (x) against time per iteration (y), one marker per
//! run, the memory/time front joined, families by colour, the memory limits as dashed lines.
//!
//! Like every figure it is laid out as a [`Scene`] and drawn by the one routine generic over
//! plotters' backends ([`super::draw()`]): SVG from the CLI, a canvas in the app. The layout
//! returns where each marker is ([`ParetoGeometry`]) so the app can hit-test clicks.

use super::axis::{format_tick, ticks};
use super::scene::{fit_text, text_width, Anchor, Item, Scene};
use super::theme::{Rgb, Theme};
use crate::plan::ParetoPoint;

/// What the numbers on an axis measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisUnit {
    /// The user's own unit (mem-f's, or the cost unit).
    Plain,
    /// Bytes (derived from a model): shown in KiB, MiB, GiB or TiB.
    Bytes,
    /// Microseconds (derived from a model): shown in µs, ms or s.
    Micros,
}

impl AxisUnit {
    /// The divisor and its name for values up to `max`.
    fn scale(self, max: f64) -> (f64, &'static str) {
        match self {
            AxisUnit::Plain => (1.0, ""),
            AxisUnit::Bytes => {
                let (name, size) = crate::units::byte_unit(max);
                (size, name)
            }
            AxisUnit::Micros => {
                if max >= 1e6 {
                    (1e6, "s")
                } else if max >= 1e3 {
                    (1e3, "ms")
                } else {
                    (1.0, "µs")
                }
            }
        }
    }
}

/// Chart settings. Lengths are CSS pixels; `scale` turns them into device pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct ParetoOptions {
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
    /// Device pixels per CSS pixel (1 for SVG).
    pub scale: f64,
    /// Colours.
    pub theme: Theme,
    /// Memory limits to draw as vertical lines.
    pub mem_limits: Vec<f64>,
    /// Unit of the memory axis.
    pub memory_unit: AxisUnit,
    /// Unit of the time axis.
    pub time_unit: AxisUnit,
    /// Heading.
    pub title: String,
}

impl Default for ParetoOptions {
    fn default() -> Self {
        ParetoOptions {
            width: 960.0,
            height: 540.0,
            scale: 1.0,
            theme: Theme::light(),
            mem_limits: Vec::new(),
            memory_unit: AxisUnit::Plain,
            time_unit: AxisUnit::Plain,
            title: "Peak memory against time per iteration".to_string(),
        }
    }
}

/// Where one run's marker is, in CSS pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParetoMarker {
    /// Index of the run in the points given.
    pub run: usize,
    /// Centre x.
    pub x: f64,
    /// Centre y.
    pub y: f64,
    /// Radius.
    pub r: f64,
}

/// Where the chart put things, in CSS pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct ParetoGeometry {
    /// The plot area: left, top, right, bottom.
    pub plot: (f64, f64, f64, f64),
    /// One marker per drawn run (runs with non-finite numbers are left out).
    pub markers: Vec<ParetoMarker>,
}

impl ParetoGeometry {
    /// The run whose marker is nearest to `(x, y)` within its radius plus 3 pixels.
    pub fn hit(&self, x: f64, y: f64) -> Option<usize> {
        self.markers
            .iter()
            .map(|m| (((m.x - x).powi(2) + (m.y - y).powi(2)).sqrt(), m))
            .filter(|(d, m)| *d <= m.r + 3.0)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, m)| m.run)
    }
}

/// A linear mapping from values to pixels.
#[derive(Clone, Copy)]
struct Map {
    v0: f64,
    v1: f64,
    p0: f64,
    p1: f64,
}

impl Map {
    fn at(&self, v: f64) -> f64 {
        let span = self.v1 - self.v0;
        if span <= 0.0 {
            return (self.p0 + self.p1) / 2.0;
        }
        self.p0 + (v - self.v0) / span * (self.p1 - self.p0)
    }
}

/// A value range with a margin, never empty.
fn padded(lo: f64, hi: f64, from_zero: bool) -> (f64, f64) {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let lo = if from_zero { 0.0f64.min(lo) } else { lo };
    let span = hi - lo;
    let pad = if span > 0.0 { span * 0.08 } else { hi.abs().max(1.0) * 0.1 };
    let lo = if from_zero && lo >= 0.0 { lo } else { lo - pad };
    (lo, hi + pad)
}

const MARGIN_LEFT: f64 = 76.0;
const MARGIN_TOP: f64 = 54.0;
const MARGIN_BOTTOM: f64 = 52.0;
const LEGEND_WIDTH: f64 = 170.0;
const FONT: f64 = 12.0;
/// The closest legend entries may stand (CSS pixels between baselines).
const LEGEND_MIN_STEP: f64 = 12.0;
const RADIUS: f64 = 4.5;
const FRONT_RADIUS: f64 = 5.5;

/// A marker's shape: families of one group share a hue and differ in shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
    Hexagon,
    Plus,
}

impl Shape {
    /// The shapes in the order a group's members take them.
    const ORDER: [Shape; 7] = [
        Shape::Circle,
        Shape::Square,
        Shape::TriangleUp,
        Shape::Diamond,
        Shape::TriangleDown,
        Shape::Hexagon,
        Shape::Plus,
    ];

    /// Adds the shape centred at `(x, y)` with "radius" `r` (device pixels), scaled so every
    /// shape covers about the circle's area.
    fn add(self, scene: &mut Scene, (x, y): (f64, f64), r: f64, color: Rgb) {
        let polygon = |corners: &[(f64, f64)], k: f64| Item::Polygon {
            points: corners.iter().map(|&(dx, dy)| (x + dx * r * k, y + dy * r * k)).collect(),
            color,
        };
        let item = match self {
            Shape::Circle => Item::Dot { x, y, r, color },
            Shape::Square => polygon(&[(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)], 0.89),
            Shape::TriangleUp => polygon(&[(0.0, -1.0), (0.866, 0.5), (-0.866, 0.5)], 1.35),
            Shape::TriangleDown => polygon(&[(0.0, 1.0), (0.866, -0.5), (-0.866, -0.5)], 1.35),
            Shape::Diamond => polygon(&[(0.0, -1.0), (1.0, 0.0), (0.0, 1.0), (-1.0, 0.0)], 1.25),
            Shape::Hexagon => {
                let corners: Vec<(f64, f64)> = (0..6)
                    .map(|i| {
                        let a = std::f64::consts::FRAC_PI_3 * f64::from(i);
                        (a.cos(), a.sin())
                    })
                    .collect();
                polygon(&corners, 1.1)
            }
            Shape::Plus => {
                let (a, b) = (0.38, 1.0);
                polygon(
                    &[
                        (-a, -b),
                        (a, -b),
                        (a, -a),
                        (b, -a),
                        (b, a),
                        (a, a),
                        (a, b),
                        (-a, b),
                        (-a, a),
                        (-b, a),
                        (-b, -a),
                        (-a, -a),
                    ],
                    1.2,
                )
            }
        };
        scene.items.push(item);
    }
}

/// How family `name` among `families` is marked on the chart: a hue per family group
/// (classic, Zero Bubble, V-shape, two-directional, sequence-split), and within a group each
/// family a shape of its own ([`Shape::ORDER`]) and a step lighter (paler on light themes,
/// brighter on dark ones), so groups read at a glance and members stay apart without relying
/// on colour alone.
fn family_style(theme: &Theme, name: &str, families: &[&str]) -> (Rgb, Shape) {
    // Categorical hues, dark enough for markers on both themes' plot backgrounds.
    const HUES: [Rgb; 6] =
        [Rgb(37, 99, 235), Rgb(217, 119, 6), Rgb(5, 150, 105), Rgb(147, 51, 234), Rgb(219, 39, 119), Rgb(101, 84, 40)];
    let group = |n: &str| crate::registry::family(n).map(|f| f.group);
    let Some(g) = group(name) else {
        let i = families.iter().position(|f| *f == name).unwrap_or(0);
        return (theme.device_color(i as u32, families.len() as u32), Shape::ORDER[i % Shape::ORDER.len()]);
    };
    let hue = HUES[crate::families::FamilyGroup::ALL.iter().position(|x| *x == g).unwrap_or(0) % HUES.len()];
    let members: Vec<&&str> = families.iter().filter(|f| group(f) == Some(g)).collect();
    let k = members.iter().position(|f| **f == name).unwrap_or(0);
    let t = if members.len() <= 1 { 0.0 } else { 0.55 * k as f64 / (members.len() - 1) as f64 };
    (hue.mix(Rgb(255, 255, 255), t), Shape::ORDER[k % Shape::ORDER.len()])
}

/// Lays the chart out: the scene (device pixels) and where every marker is (CSS pixels).
pub fn pareto_chart(points: &[ParetoPoint<'_>], opts: &ParetoOptions) -> (Scene, ParetoGeometry) {
    let k = opts.scale.max(1e-9);
    let t = &opts.theme;
    let (w, h) = (opts.width.max(240.0), opts.height.max(200.0));
    let mut scene = Scene::for_chart(w, h, k, t);
    let legend = w >= 480.0;
    let plot = (MARGIN_LEFT, MARGIN_TOP, w - if legend { LEGEND_WIDTH } else { 16.0 }, h - MARGIN_BOTTOM);

    let finite: Vec<(usize, &ParetoPoint<'_>)> =
        points.iter().enumerate().filter(|(_, p)| p.peak_memory.is_finite() && p.cost.is_finite()).collect();
    let limits: Vec<f64> = opts.mem_limits.iter().copied().filter(|l| l.is_finite()).collect();
    let max_of = |v: &mut dyn Iterator<Item = f64>| v.fold(f64::NEG_INFINITY, f64::max);
    let min_of = |v: &mut dyn Iterator<Item = f64>| v.fold(f64::INFINITY, f64::min);
    let mem_hi = max_of(&mut finite.iter().map(|(_, p)| p.peak_memory).chain(limits.iter().copied()));
    let mem_lo = min_of(&mut finite.iter().map(|(_, p)| p.peak_memory).chain(limits.iter().copied()));
    let cost_hi = max_of(&mut finite.iter().map(|(_, p)| p.cost));
    let cost_lo = min_of(&mut finite.iter().map(|(_, p)| p.cost));
    let (mem_div, mem_unit) = opts.memory_unit.scale(if mem_hi.is_finite() { mem_hi } else { 0.0 });
    let (time_div, time_unit) = opts.time_unit.scale(if cost_hi.is_finite() { cost_hi } else { 0.0 });
    let (x0, x1) = padded(mem_lo / mem_div, mem_hi / mem_div, true);
    let (y0, y1) = padded(cost_lo / time_div, cost_hi / time_div, false);
    let xm = Map { v0: x0, v1: x1, p0: plot.0, p1: plot.2 };
    let ym = Map { v0: y0, v1: y1, p0: plot.3, p1: plot.1 };
    let px = |v: f64| v * k;

    // Title, plot background, grid and ticks.
    let title = fit_text(&opts.title, FONT + 2.0, w - 24.0);
    scene.bold_text(px(12.0), px(18.0), &title, px(FONT + 2.0), t.text, Anchor::Start);
    scene.rect(px(plot.0), px(plot.1), px(plot.2), px(plot.3), t.track);
    let (xt, xstep) = ticks(x0, x1, ((plot.2 - plot.0) / 90.0).max(2.0) as usize);
    for v in xt {
        let x = xm.at(v);
        scene.line((px(x), px(plot.1)), (px(x), px(plot.3)), t.grid, px(1.0));
        scene.text(px(x), px(plot.3 + 12.0), &format_tick(v, xstep), px(FONT - 1.0), t.muted, Anchor::Middle);
    }
    let (yt, ystep) = ticks(y0, y1, ((plot.3 - plot.1) / 60.0).max(2.0) as usize);
    for v in yt {
        let y = ym.at(v);
        scene.line((px(plot.0), px(y)), (px(plot.2), px(y)), t.grid, px(1.0));
        scene.text(px(plot.0 - 6.0), px(y), &format_tick(v, ystep), px(FONT - 1.0), t.muted, Anchor::End);
    }
    let unit = |name: &str| if name.is_empty() { String::new() } else { format!(" ({name})") };
    let x_label = match opts.memory_unit {
        AxisUnit::Plain => "peak activation memory per device (unit of mem-f)".to_string(),
        _ => format!("peak activation memory per device{}", unit(mem_unit)),
    };
    let y_label = match opts.time_unit {
        AxisUnit::Plain => "time per iteration (cost units)".to_string(),
        _ => format!("time per iteration{}", unit(time_unit)),
    };
    scene.text(px((plot.0 + plot.2) / 2.0), px(h - 16.0), &x_label, px(FONT), t.text, Anchor::Middle);
    // No rotated text in scenes: the time label heads the axis.
    scene.text(px(plot.0 - 6.0), px(plot.1 - 12.0), &y_label, px(FONT), t.text, Anchor::Start);

    // Memory limits.
    for &limit in &limits {
        let x = xm.at(limit / mem_div);
        scene.dashed_line((px(x), px(plot.1)), (px(x), px(plot.3)), t.alert, px(1.5), px(5.0));
        let label = format!(
            "limit {}{}",
            crate::units::format_number(limit / mem_div, 2),
            unit(mem_unit).replace(['(', ')'], "")
        );
        let anchor = if x + text_width(&label, FONT - 1.0) + 4.0 > plot.2 { Anchor::End } else { Anchor::Start };
        let lx = if anchor == Anchor::End { x - 4.0 } else { x + 4.0 };
        scene.text(px(lx), px(plot.1 + 10.0), &label, px(FONT - 1.0), t.alert, anchor);
    }

    // Families in order of first appearance.
    let mut families: Vec<&str> = Vec::new();
    for (_, p) in &finite {
        if !families.contains(&p.family) {
            families.push(p.family);
        }
    }
    let style_of = |name: &str| family_style(t, name, &families);

    // The front, joined in order of memory.
    let mut front: Vec<(f64, f64)> = finite
        .iter()
        .filter(|(_, p)| p.pareto)
        .map(|(_, p)| (xm.at(p.peak_memory / mem_div), ym.at(p.cost / time_div)))
        .collect();
    crate::units::sort::sort_by(&mut front, |a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
    front.dedup();
    if front.len() > 1 {
        scene.items.push(Item::Line {
            points: front.iter().map(|&(x, y)| (px(x), px(y))).collect(),
            color: t.text,
            width: px(1.5),
        });
    }

    // Markers: dominated runs first, the front on top with a ring.
    let mut markers = Vec::new();
    for on_front in [false, true] {
        for (i, p) in finite.iter().filter(|(_, p)| p.pareto == on_front) {
            let (x, y) = (xm.at(p.peak_memory / mem_div), ym.at(p.cost / time_div));
            let r = if on_front { FRONT_RADIUS } else { RADIUS };
            let (color, shape) = style_of(p.family);
            if on_front {
                shape.add(&mut scene, (px(x), px(y)), px(r + 1.5), t.text);
            }
            shape.add(&mut scene, (px(x), px(y)), px(r), color);
            if p.traded {
                shape.add(&mut scene, (px(x), px(y)), px(r * 0.45), t.track);
            }
            markers.push(ParetoMarker { run: *i, x, y, r });
        }
    }
    crate::units::sort::sort_by_key(&mut markers, |m| m.run);

    // Legend: one entry per family, then the front and the limit. Entries close up (down to
    // LEGEND_MIN_STEP) to fit the plot's height; families that still do not fit are counted
    // in a last "+N more" line, so the legend never runs past the plot or silently stops.
    if legend {
        let lx = plot.2 + 16.0;
        let room = LEGEND_WIDTH - 36.0;
        let traded = finite.iter().any(|(_, p)| p.traded);
        let extras = usize::from(front.len() > 1) + usize::from(!limits.is_empty()) + usize::from(traded);
        let height = (plot.3 - plot.1 - 6.0).max(0.0);
        let slots = |step: f64| (height / step).floor() as usize + 1;
        let step = (height / (families.len() + extras).saturating_sub(1).max(1) as f64).clamp(LEGEND_MIN_STEP, 18.0);
        let font = (FONT - 1.0).min(step - 2.0);
        let shown = if families.len() + extras <= slots(step) {
            families.len()
        } else {
            slots(step).saturating_sub(extras + 1).min(families.len())
        };
        let mut y = plot.1 + 6.0;
        for name in &families[..shown] {
            let (color, shape) = style_of(name);
            shape.add(&mut scene, (px(lx + 5.0), px(y)), px(RADIUS), color);
            scene.text(px(lx + 16.0), px(y), &fit_text(name, font, room), px(font), t.text, Anchor::Start);
            y += step;
        }
        if shown < families.len() {
            let more = format!("+{} more", families.len() - shown);
            scene.text(px(lx + 16.0), px(y), &more, px(font), t.muted, Anchor::Start);
            y += step;
        }
        if front.len() > 1 {
            scene.line((px(lx), px(y)), (px(lx + 10.0), px(y)), t.text, px(1.5));
            scene.text(px(lx + 16.0), px(y), "Pareto front", px(font), t.text, Anchor::Start);
            y += step;
        }
        if traded {
            Shape::ORDER[0].add(&mut scene, (px(lx + 5.0), px(y)), px(RADIUS), t.muted);
            Shape::ORDER[0].add(&mut scene, (px(lx + 5.0), px(y)), px(RADIUS * 0.45), t.background);
            scene.text(
                px(lx + 16.0),
                px(y),
                &fit_text("recompute/offload", font, room),
                px(font),
                t.text,
                Anchor::Start,
            );
            y += step;
        }
        if !limits.is_empty() {
            scene.dashed_line((px(lx), px(y)), (px(lx + 10.0), px(y)), t.alert, px(1.5), px(3.0));
            scene.text(px(lx + 16.0), px(y), "memory limit", px(font), t.text, Anchor::Start);
        }
    }
    (scene, ParetoGeometry { plot, markers })
}

/// The chart as an SVG document.
pub fn pareto_svg(points: &[ParetoPoint<'_>], opts: &ParetoOptions) -> String {
    // The SVG backend writes into a String: it has no error to report.
    super::to_svg(&pareto_chart(points, opts).0).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An untraded point.
    fn point(family: &str, peak_memory: f64, cost: f64, pareto: bool) -> ParetoPoint<'_> {
        ParetoPoint { family, peak_memory, cost, pareto, traded: false }
    }

    fn pts() -> Vec<ParetoPoint<'static>> {
        vec![
            ParetoPoint { family: "1f1b", peak_memory: 4.0, cost: 33.0, pareto: false, traded: false },
            ParetoPoint { family: "zb-h1", peak_memory: 4.0, cost: 27.0, pareto: true, traded: false },
            ParetoPoint { family: "zb-h2", peak_memory: 7.0, cost: 24.0, pareto: true, traded: false },
            ParetoPoint { family: "gpipe", peak_memory: f64::NAN, cost: 40.0, pareto: false, traded: false },
        ]
    }

    #[test]
    fn markers_sit_in_the_plot_and_hit_tests_find_them() {
        let (_, g) = pareto_chart(&pts(), &ParetoOptions::default());
        assert_eq!(g.markers.iter().map(|m| m.run).collect::<Vec<_>>(), vec![0, 1, 2], "NaN left out");
        let (l, top, r, b) = g.plot;
        for m in &g.markers {
            assert!(m.x >= l && m.x <= r && m.y >= top && m.y <= b, "{m:?}");
            assert_eq!(g.hit(m.x + 1.0, m.y - 1.0), Some(m.run));
        }
        // Less memory is left, less time is down.
        assert!(g.markers[0].x < g.markers[2].x);
        assert!(g.markers[2].y > g.markers[1].y);
        assert!(g.markers[0].y < g.markers[1].y);
        assert_eq!(g.hit(0.0, 0.0), None);
    }

    #[test]
    fn units_follow_the_size_of_the_numbers() {
        assert_eq!(AxisUnit::Bytes.scale(80.0 * 1_073_741_824.0), (1_073_741_824.0, "GiB"));
        assert_eq!(AxisUnit::Bytes.scale(3e8), (1_048_576.0, "MiB"));
        assert_eq!(AxisUnit::Micros.scale(2.5e4), (1e3, "ms"));
        assert_eq!(AxisUnit::Micros.scale(900.0), (1.0, "µs"));
        assert_eq!(AxisUnit::Plain.scale(1e9), (1.0, ""));
    }

    #[test]
    fn the_legend_fits_the_plot_and_names_or_counts_every_family() {
        let names: Vec<String> = (0..30).map(|i| format!("family-{i}")).collect();
        for (count, height) in [(3, 300.0), (21, 420.0), (21, 300.0), (30, 240.0)] {
            let points: Vec<ParetoPoint<'_>> =
                names[..count].iter().enumerate().map(|(i, n)| point(n, i as f64, 100.0 - i as f64, i < 3)).collect();
            let opts = ParetoOptions { height, mem_limits: vec![5.0], ..ParetoOptions::default() };
            let (scene, g) = pareto_chart(&points, &opts);
            let legend: Vec<(f64, &str)> = scene
                .items
                .iter()
                .filter_map(|i| match i {
                    Item::Text { x, y, text, .. } if *x > g.plot.2 => Some((*y, text.as_str())),
                    _ => None,
                })
                .collect();
            assert!(legend.iter().all(|(y, _)| *y <= g.plot.3 + 1e-9), "{count} in {height}: {legend:?}");
            let named = legend.iter().filter(|(_, t)| t.starts_with("family-")).count();
            let more: usize = legend
                .iter()
                .find_map(|(_, t)| t.strip_prefix('+'))
                .map_or(0, |t| t.trim_end_matches(" more").parse().unwrap());
            assert_eq!(named + more, count, "{count} in {height}: {legend:?}");
            assert!(
                legend.iter().any(|(_, t)| *t == "Pareto front") && legend.iter().any(|(_, t)| *t == "memory limit")
            );
            if count == 21 && height >= 420.0 {
                assert_eq!(more, 0, "21 families fit a 420 px chart");
            }
        }
    }

    #[test]
    fn every_family_has_its_own_colour_and_shape_and_groups_share_a_hue() {
        let names: Vec<&str> = crate::FAMILIES.iter().map(|f| f.name).collect();
        let styles: Vec<(Rgb, Shape)> = names.iter().map(|n| family_style(&Theme::light(), n, &names)).collect();
        for (i, a) in styles.iter().enumerate() {
            for (j, b) in styles.iter().enumerate().skip(i + 1) {
                let group = |k: usize| crate::registry::family(names[k]).map(|f| f.group);
                // Within a group the shape alone tells members apart (colour-blind readers).
                if group(i) == group(j) && names.len() > 1 {
                    assert_ne!(a.1, b.1, "{} and {}", names[i], names[j]);
                }
                assert_ne!(a, b, "{} and {}", names[i], names[j]);
            }
        }
        // The chart draws the shapes: polygons for the non-circles, in the SVG too.
        let points: Vec<ParetoPoint<'_>> =
            names.iter().enumerate().map(|(i, n)| point(n, i as f64, 50.0 - i as f64, false)).collect();
        let (scene, _) = pareto_chart(&points, &ParetoOptions::default());
        assert!(scene.items.iter().filter(|i| matches!(i, Item::Polygon { .. })).count() >= names.len());
        assert!(pareto_svg(&points, &ParetoOptions::default()).contains("<polygon"));
    }

    #[test]
    fn scaled_charts_keep_css_geometry() {
        let opts = ParetoOptions { scale: 2.0, ..ParetoOptions::default() };
        let (scene, g) = pareto_chart(&pts(), &opts);
        let (_, g1) = pareto_chart(&pts(), &ParetoOptions::default());
        assert_eq!(scene.width, 1920);
        assert_eq!(g, g1);
        assert!(pareto_chart(&[], &opts).1.markers.is_empty());
    }
}
