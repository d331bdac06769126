//! The Pareto chart: a golden SVG and its XML structure (one marker per run, the front joined,
//! the limit drawn, axis labels in readable units).

use bubblescope::plan::ParetoPoint;
use bubblescope::plan::{parse_schedules, sweep, SweepSpec};
use bubblescope::render::{pareto_chart, pareto_svg, AxisUnit, ParetoOptions, Theme};
use bubblescope::Costs;

use crate::golden::{assert_golden_matches, compare_golden};

fn spec() -> SweepSpec {
    SweepSpec {
        families: parse_schedules("1f1b,zb-h1,zb-h2,zb-2p,interleaved-1f1b,zb-v,v-half,dualpipe-v").unwrap(),
        devices: 4,
        microbatches: vec![8, 12],
        chunks: vec![2, 3],
        group: None,
        mem_limits: vec![6.0],
        costs: Costs { comm: 0.1, ..Costs::default() },
        bytes: false,
        trades: vec![],
        step: None,
        a2a: false,
    }
}

fn options() -> ParetoOptions {
    ParetoOptions { mem_limits: vec![6.0], ..ParetoOptions::default() }
}

#[test]
fn golden_pareto_chart() {
    let s = sweep(&spec()).unwrap();
    let svg = pareto_svg(&s.pareto_points(), &options());
    assert_eq!(svg, pareto_svg(&s.pareto_points(), &options()), "deterministic");
    let failures: Vec<String> = compare_golden("pareto-p4-m8-12-limit6", &svg).into_iter().collect();
    assert_golden_matches(&failures);
}

/// A marker drawn in the document: its centre and "radius" (a circle's `r`, a polygon's
/// farthest corner from the mean of its corners).
#[derive(Debug)]
struct Mark {
    x: f64,
    y: f64,
    r: f64,
}

/// Every circle and filled polygon: families of one group differ in shape, so a marker is
/// either.
fn marks(doc: &roxmltree::Document<'_>) -> Vec<Mark> {
    let num = |n: roxmltree::Node<'_, '_>, a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
    doc.descendants()
        .filter_map(|n| {
            if n.has_tag_name("circle") {
                return Some(Mark { x: num(n, "cx"), y: num(n, "cy"), r: num(n, "r") });
            }
            if !n.has_tag_name("polygon") {
                return None;
            }
            let corners: Vec<(f64, f64)> = n
                .attribute("points")?
                .split_whitespace()
                .filter_map(|p| p.split_once(','))
                .map(|(x, y)| (x.parse().unwrap(), y.parse().unwrap()))
                .collect();
            let k = corners.len() as f64;
            let (x, y) = corners.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x / k, b + y / k));
            let r = corners.iter().map(|(cx, cy)| (cx - x).hypot(cy - y)).fold(0.0, f64::max);
            Some(Mark { x, y, r })
        })
        .collect()
}

#[test]
fn the_svg_has_one_marker_per_run_and_the_front_joined() {
    let s = sweep(&spec()).unwrap();
    let pts = s.pareto_points();
    let (_, geometry) = pareto_chart(&pts, &options());
    let svg = pareto_svg(&pts, &options());
    let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
    let front = s.runs.iter().filter(|r| r.pareto).count();
    assert!(front >= 2 && front < s.runs.len());
    // Markers: one per run, front runs with a larger outline under them, and one per family in
    // the legend.
    let families = s.runs.iter().map(|r| r.spec.family.name).collect::<std::collections::BTreeSet<_>>().len();
    let all = marks(&doc);
    assert_eq!(all.len(), s.runs.len() + front + families, "{all:?}");
    // Every marker the geometry reports is drawn at that place; a front marker has an outline
    // larger than itself centred on it.
    let at = |x: f64, y: f64| -> Vec<&Mark> {
        all.iter().filter(|m| (m.x - x).abs() < 1.0 && (m.y - y).abs() < 1.0).collect()
    };
    for m in &geometry.markers {
        let here = at(m.x, m.y);
        let want = if s.runs[m.run].pareto { 2 } else { 1 };
        assert!(here.len() >= want, "{m:?}: {here:?}");
        if want == 2 {
            let (lo, hi) = here.iter().fold((f64::MAX, 0.0_f64), |(lo, hi), h| (lo.min(h.r), hi.max(h.r)));
            assert!(hi > lo + 0.5, "the front's outline is larger than its marker: {here:?}");
        }
    }
    assert_eq!(geometry.markers.len(), s.runs.len());
    // The front is one polyline through every front marker, left to right.
    let lines: Vec<Vec<(f64, f64)>> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .map(|n| {
            n.attribute("points")
                .unwrap()
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect()
        })
        .collect();
    let joined = lines.iter().find(|l| l.len() >= 3).expect("the front's polyline");
    assert!(joined.windows(2).all(|w| w[0].0 <= w[1].0), "{joined:?}");
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect();
    for label in [
        "peak activation memory per device (unit of mem-f)",
        "time per iteration (cost units)",
        "limit 6",
        "Pareto front",
        "memory limit",
        "zb-v",
    ] {
        assert!(texts.iter().any(|t| t == label), "missing {label}: {texts:?}");
    }
}

#[test]
fn model_numbers_get_readable_units() {
    let gib = 1_073_741_824.0;
    let pts = [
        ParetoPoint { family: "1f1b", peak_memory: 40.0 * gib, cost: 2.5e6, pareto: true, traded: false },
        ParetoPoint { family: "zb-v", peak_memory: 70.0 * gib, cost: 2.0e6, pareto: true, traded: false },
    ];
    let opts = ParetoOptions {
        mem_limits: vec![80.0 * gib],
        memory_unit: AxisUnit::Bytes,
        time_unit: AxisUnit::Micros,
        theme: Theme::dark(),
        ..ParetoOptions::default()
    };
    let svg = pareto_svg(&pts, &opts);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<&str> =
        doc.descendants().filter(|n| n.has_tag_name("text")).filter_map(|n| n.text().map(str::trim)).collect();
    assert!(texts.contains(&"peak activation memory per device (GiB)"), "{texts:?}");
    assert!(texts.contains(&"time per iteration (s)"), "{texts:?}");
    assert!(texts.contains(&"limit 80 GiB"), "{texts:?}");
    assert!(texts.contains(&"80"), "a tick at 80 GiB: {texts:?}");
}
