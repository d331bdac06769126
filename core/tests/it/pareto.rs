//! The Pareto chart: a golden SVG and its XML structure (one marker per run, the front joined,
//! the limit drawn, axis labels in readable units).

use bubblescope::plan::{parse_schedules, sweep, SweepSpec};
use bubblescope::render::{pareto_chart, pareto_svg, AxisUnit, ParetoOptions, ParetoPoint, Theme};
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

/// `(cx, cy)` of every circle of radius `r` in the document.
fn circles(doc: &roxmltree::Document<'_>, r: &str) -> Vec<(f64, f64)> {
    doc.descendants()
        .filter(|n| n.has_tag_name("circle") && n.attribute("r") == Some(r))
        .map(|n| (n.attribute("cx").unwrap().parse().unwrap(), n.attribute("cy").unwrap().parse().unwrap()))
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
    // Markers: front runs get a ring (radius 7) under their dot (6, rounded from 5.5); other
    // runs a dot of 5 (from 4.5). The legend uses the small dot too.
    let families = s.runs.iter().map(|r| r.spec.family.name).collect::<std::collections::BTreeSet<_>>().len();
    assert_eq!(circles(&doc, "7").len(), front);
    assert_eq!(circles(&doc, "6").len(), front);
    assert_eq!(circles(&doc, "5").len(), s.runs.len() - front + families);
    // Every marker the geometry reports is a circle at that place.
    let all: Vec<(f64, f64)> = ["5", "6"].iter().flat_map(|r| circles(&doc, r)).collect();
    for m in &geometry.markers {
        assert!(all.iter().any(|&(x, y)| (x - m.x.round()).abs() < 0.5 && (y - m.y.round()).abs() < 0.5), "{m:?}");
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
        ParetoPoint { family: "1f1b", peak_memory: 40.0 * gib, cost: 2.5e6, pareto: true },
        ParetoPoint { family: "zb-v", peak_memory: 70.0 * gib, cost: 2.0e6, pareto: true },
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
