use super::*;
use crate::{run, ScheduleParams};
use std::sync::Arc;

/// `a`'s schedule as a panel without title, note, causes or step.
fn plain(a: &crate::Analysis) -> GanttPanel<'_> {
    GanttPanel { title: None, note: None, schedule: &a.schedule, timeline: &a.timeline, causes: None, step: None }
}

fn one_f_one_b(devices: u32, microbatches: u32) -> crate::Analysis {
    run("1f1b", &ScheduleParams::new(devices, microbatches)).unwrap()
}

#[test]
fn every_pass_is_drawn_merged_or_culled() {
    for (devices, mbs, width) in [(4, 8, 960.0), (8, 64, 600.0), (16, 512, 300.0)] {
        let a = one_f_one_b(devices, mbs);
        let panel = plain(&a);
        let opts = GanttOptions { width, ..GanttOptions::default() };
        let (scene, _) = gantt(&[panel], &opts, &Theme::light());
        let c = scene.counts;
        assert_eq!(c.drawn + c.merged + c.culled, a.schedule.pass_count(), "{devices}x{mbs}");
    }
}

#[test]
fn small_schedules_get_labels_and_big_ones_merge() {
    let a = one_f_one_b(4, 8);
    let panel = plain(&a);
    let (scene, _) = gantt(&[panel], &GanttOptions::default(), &Theme::light());
    assert_eq!(scene.counts.labelled, 64);
    assert_eq!(scene.counts.merged, 0);

    let a = one_f_one_b(8, 2000);
    let panel = plain(&a);
    let (scene, _) = gantt(&[panel], &GanttOptions { width: 400.0, ..GanttOptions::default() }, &Theme::light());
    assert!(scene.counts.merged > 30_000, "{:?}", scene.counts);
    assert!(scene.items.len() < 10_000, "{}", scene.items.len());
}

#[test]
fn zooming_culls_passes_outside_the_range() {
    let a = one_f_one_b(4, 8);
    let panel = plain(&a);
    let opts = GanttOptions { time_range: Some((10.0, 20.0)), ..GanttOptions::default() };
    let (scene, geometry) = gantt(&[panel], &opts, &Theme::light());
    assert!(scene.counts.culled > 20);
    assert_eq!(geometry.axis.t(geometry.axis.x0), 10.0);
}

#[test]
fn geometry_finds_rows_under_the_pointer() {
    let a = one_f_one_b(4, 8);
    let panel = GanttPanel {
        title: Some("1F1B"),
        note: None,
        schedule: &a.schedule,
        timeline: &a.timeline,
        causes: None,
        step: None,
    };
    let (_, g) = gantt(&[panel, panel], &GanttOptions::default(), &Theme::light());
    let top = g.panels[1].rows_top;
    assert_eq!(g.row_at(top + 1.0), Some((1, 0)));
    assert_eq!(g.row_at(top + 2.0 * g.row_pitch + 1.0), Some((1, 2)));
    assert_eq!(g.row_at(top - 1.0), None);
}

#[test]
fn svg_is_well_formed_and_deterministic() {
    let a = one_f_one_b(4, 8);
    let panel = GanttPanel {
        title: Some("1F1B <p=4>"),
        note: Some("cost 33"),
        schedule: &a.schedule,
        timeline: &a.timeline,
        causes: None,
        step: None,
    };
    let (scene, _) = gantt(&[panel], &GanttOptions::default(), &Theme::light());
    let svg = to_svg(&scene).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..60]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("1F1B &lt;p=4&gt;"));
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    assert_eq!(svg, to_svg(&gantt(&[panel], &GanttOptions::default(), &Theme::light()).0).unwrap());
}

#[test]
fn highlight_outlines_one_microbatch() {
    let a = one_f_one_b(4, 8);
    let panel = plain(&a);
    let opts = GanttOptions { highlight: Some(3), ..GanttOptions::default() };
    let (scene, _) = gantt(&[panel], &opts, &Theme::light());
    let outlined = scene.items.iter().filter(|i| matches!(i, Item::Rect { stroke: Some(_), .. })).count();
    assert_eq!(outlined, 8); // F and BW of microbatch 3 on 4 devices
}

#[test]
fn memory_chart_draws_one_curve_per_device_and_the_limit() {
    let a = one_f_one_b(4, 8);
    let opts = MemoryOptions { limit: Some(3.0), ..MemoryOptions::default() };
    let scene = memory_chart(&a.timeline, &opts, &Theme::light());
    let curves = scene.items.iter().filter(|i| matches!(i, Item::Line { points, .. } if points.len() > 2)).count();
    assert_eq!(curves, 4);
    let texts: Vec<&str> = scene
        .items
        .iter()
        .filter_map(|i| if let Item::Text { text, .. } = i { Some(text.as_str()) } else { None })
        .collect();
    assert!(texts.contains(&"limit 3"), "{texts:?}");
    let dots = scene.items.iter().filter(|i| matches!(i, Item::Dot { .. })).count();
    assert_eq!(dots, 4);
}

proptest::proptest! {
    /// Cut text fits its width, keeps a prefix of the original and marks the cut.
    #[test]
    fn fit_text_fits_and_keeps_a_prefix(text in "[ a-zA-Z0-9·—()×]{0,80}", max in 0.0f64..600.0) {
        let fitted = scene::fit_text(&text, 13.0, max);
        if fitted == text {
            proptest::prop_assert!(scene::text_width(&text, 13.0) <= max);
        } else if !fitted.is_empty() {
            proptest::prop_assert!(scene::text_width(&fitted, 13.0) <= max + 1e-9, "{fitted:?} wider than {max}");
            let kept = fitted.strip_suffix('…').expect("a cut ends in …");
            proptest::prop_assert!(text.starts_with(kept));
        } else {
            proptest::prop_assert!(scene::text_width("…", 13.0) > max);
        }
    }
}

fn texts(scene: &Scene) -> Vec<&str> {
    scene
        .items
        .iter()
        .filter_map(|i| if let Item::Text { text, .. } = i { Some(text.as_str()) } else { None })
        .collect()
}

#[test]
fn memory_chart_shows_what_a_trade_saves() {
    // 1F1B on 4 devices, 8 microbatches, full recompute everywhere: device 0 held 4 forwards
    // without it; the chart draws that peak and the saving, and nothing for the plain run.
    let trade = crate::trade::Trade { recompute: vec![crate::trade::Recompute::Full], ..Default::default() };
    let costs = crate::params::Costs { trade: Some(std::sync::Arc::new(trade)), ..Default::default() };
    let traded = run("1f1b", &ScheduleParams::new(4, 8).with_costs(costs)).expect("runs");
    assert_eq!(traded.stats.peak_without_trade, Some(4.0));
    let opts = MemoryOptions { before: traded.stats.peak_without_trade, ..MemoryOptions::default() };
    let scene = memory_chart(&traded.timeline, &opts, &Theme::light());
    let saved = 4.0 - traded.stats.peak_memory;
    let label = format!("peak without the trade 4 · saves {}", crate::units::Units::Cost.memory(saved));
    assert!(texts(&scene).contains(&label.as_str()), "{:?}", texts(&scene));
    let plain = one_f_one_b(4, 8);
    assert_eq!(plain.stats.peak_without_trade, None);
    let scene = memory_chart(&plain.timeline, &MemoryOptions::default(), &Theme::light());
    assert!(!texts(&scene).iter().any(|t| t.contains("saves")), "{:?}", texts(&scene));
}

#[test]
fn memory_title_stops_before_the_legend() {
    let a = one_f_one_b(8, 16);
    for width in [520.0, 760.0, 1600.0] {
        let title = format!(
            "Activation memory per device — {} (unit of mem-f)",
            "a long file name.csv · 8 devices · 16 microbatches"
        );
        let opts = MemoryOptions { width, title: title.clone(), ..MemoryOptions::default() };
        let scene = memory_chart(&a.timeline, &opts, &Theme::light());
        let texts: Vec<(f64, &str, f64, Anchor, bool)> = scene
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Text { x, text, size, anchor, bold, .. } => Some((*x, text.as_str(), *size, *anchor, *bold)),
                _ => None,
            })
            .collect();
        let (x, shown, size, _, _) = *texts.iter().find(|t| t.4).expect("a bold title");
        let right = x + scene::text_width(shown, size) * 1.1;
        // The legend's first swatch label, D0, is its leftmost text.
        let legend = texts.iter().find(|t| t.1 == "D0").expect("a legend");
        let legend_left = legend.0 - scene::text_width("D0", legend.2) - 4.0 - 10.0;
        assert!(right < legend_left, "width {width}: title {shown:?} ends at {right}, legend starts at {legend_left}");
        if width >= 1600.0 {
            assert_eq!(shown, title, "room enough for the whole title");
        } else {
            assert!(shown.ends_with('…'), "{shown}");
        }
    }
}

#[test]
fn narrow_charts_abbreviate_device_labels_and_keep_the_plot_wide() {
    let a = one_f_one_b(8, 16);
    let panel = plain(&a);
    let texts = |scene: &Scene| -> Vec<String> {
        scene
            .items
            .iter()
            .filter_map(|i| if let Item::Text { text, .. } = i { Some(text.clone()) } else { None })
            .collect()
    };
    let (phone, geo) =
        gantt(&[panel], &GanttOptions { width: 340.0, row_height: 12.0, ..GanttOptions::default() }, &Theme::light());
    let labels = texts(&phone);
    assert!(labels.iter().any(|t| t == "D7") && !labels.iter().any(|t| t.starts_with("Device")), "{labels:?}");
    assert!(geo.axis.x0 <= 40.0, "gutter {} px on a phone", geo.axis.x0);
    assert!(geo.row_height >= 12.0);
    let (wide, geo) = gantt(&[panel], &GanttOptions::default(), &Theme::light());
    assert!(texts(&wide).iter().any(|t| t == "Device 7"));
    assert_eq!(geo.axis.x0, gutter_width(8));
    // The memory chart lines up with the Gantt chart at either width.
    assert_eq!(gutter_for(8, 340.0), device_label_gutter(8, 340.0));
}

fn device_label_gutter(devices: u32, width: f64) -> f64 {
    let a = one_f_one_b(devices, 4);
    let panel = plain(&a);
    gantt(&[panel], &GanttOptions { width, ..GanttOptions::default() }, &Theme::light()).1.axis.x0
}

proptest::proptest! {
    #[test]
    fn a_panel_title_and_its_note_never_overlap(width in 240.0f64..1400.0) {
        let a = one_f_one_b(4, 8);
        let note = "cost 27 · bubble rate 11.11% · peak memory 4";
        let panel = GanttPanel { title: Some("ZB-H1 · 4 devices · 8 microbatches"), note: Some(note), schedule: &a.schedule, timeline: &a.timeline, causes: None, step: None };
        let (scene, _) = gantt(&[panel], &GanttOptions { width, ..GanttOptions::default() }, &Theme::light());
        let texts: Vec<(f64, &str, f64, bool)> = scene.items.iter().filter_map(|i| match i {
            scene::Item::Text { x, text, size, bold, .. } => Some((*x, text.as_str(), *size, *bold)),
            _ => None,
        }).collect();
        let title = texts.iter().find(|t| t.3 && t.1.starts_with("ZB-H1")).copied();
        let drawn_note = texts.iter().find(|t| t.1 == note).copied();
        if let (Some((tx, tt, ts, _)), Some((nx, nt, ns, _))) = (title, drawn_note) {
            // The title runs right from its anchor, the note left from its own.
            let title_end = tx + scene::text_width(tt, ts) * 1.1;
            let note_start = nx - scene::text_width(nt, ns);
            proptest::prop_assert!(title_end <= note_start, "width {width}: title ends at {title_end}, note starts at {note_start}");
        }
        proptest::prop_assert!(width < 700.0 || drawn_note.is_some(), "a wide chart keeps its note");
    }
}

#[test]
fn idle_gaps_are_shaded_by_cause_only_when_asked_and_reported_for_hit_testing() {
    let base = crate::Costs { comm: 0.3, ..crate::Costs::default() };
    let mut profile = crate::CostProfile::uniform(&base, 4);
    profile.f = vec![1.0, 1.0, 1.0, 3.0];
    let costs = base.with_profile(profile, 4);
    let a = crate::run("1f1b", &crate::ScheduleParams::new(4, 8).with_costs(costs.clone())).unwrap();
    let causes = crate::gaps::causes(&a, &costs).unwrap();
    let panel = GanttPanel {
        title: None,
        note: None,
        schedule: &a.schedule,
        timeline: &a.timeline,
        causes: Some(&causes),
        step: None,
    };
    let tints = |scene: &Scene, t: &Theme| {
        scene.items.iter().filter(|i| matches!(i, Item::Rect { fill, .. } if t.causes.contains(fill))).count()
    };
    let theme = Theme::light();
    let (plain, plain_geo) = gantt(&[panel], &GanttOptions::default(), &theme);
    assert_eq!(tints(&plain, &theme), 0);
    assert!(plain_geo.gaps.is_empty());
    let (shaded, geo) = gantt(&[panel], &GanttOptions { causes: true, ..GanttOptions::default() }, &theme);
    // Every gap is wide enough at 960 px: one rectangle each, with a tint per positive part
    // (and three legend swatches).
    assert_eq!(geo.gaps.len(), causes.gaps().count());
    let parts: usize = causes
        .gaps()
        .map(|g| [g.parts.communication, g.parts.imbalance, g.parts.schedule].iter().filter(|p| **p > 0.0).count())
        .sum();
    assert_eq!(tints(&shaded, &theme), parts + 3);
    // Hit testing: the middle of every gap rectangle finds that gap, on its row and in time.
    for r in &geo.gaps {
        let (x, y) = ((r.x0 + r.x1) / 2.0, (r.y0 + r.y1) / 2.0);
        assert_eq!(geo.gap_at(x, y), Some(r));
        assert_eq!(geo.row_at(y), Some((0, r.device)));
        let gap = &causes.devices[r.device as usize][r.index];
        assert_eq!(causes.gap_at(r.device, geo.axis.t(x)), Some(gap));
    }
    // Zoomed in, only the visible gaps are reported, clipped to the plot.
    let opts = GanttOptions { causes: true, time_range: Some((10.0, 20.0)), ..GanttOptions::default() };
    let (_, zoomed) = gantt(&[panel], &opts, &theme);
    assert!(!zoomed.gaps.is_empty() && zoomed.gaps.len() < geo.gaps.len());
    assert!(zoomed.gaps.iter().all(|r| r.x0 >= zoomed.axis.x0 && r.x1 <= zoomed.axis.x1));
}

#[test]
fn the_cause_legend_stays_inside_the_chart() {
    let a = crate::run("zb-v", &crate::ScheduleParams::new(4, 8)).unwrap();
    let causes = crate::gaps::causes(&a, &crate::Costs::default()).unwrap();
    let panel = GanttPanel {
        title: None,
        note: None,
        schedule: &a.schedule,
        timeline: &a.timeline,
        causes: Some(&causes),
        step: None,
    };
    for width in [360.0, 600.0, 760.0, 960.0] {
        let (scene, geo) =
            gantt(&[panel], &GanttOptions { width, causes: true, ..GanttOptions::default() }, &Theme::light());
        let legend_right = scene
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Text { x, y, text, size, .. } if *y < 30.0 => Some(x + text_width(text, *size)),
                _ => None,
            })
            .fold(0.0, f64::max);
        assert!(
            legend_right <= geo.axis.x1 + 1e-9,
            "legend runs to {legend_right} past {} at width {width}",
            geo.axis.x1
        );
    }
}

/// Issue 38: the whole step's strips. Each device's reduction and the optimizer step are drawn
/// after its passes in their own colours, the axis reaches the step's last strip, and the
/// legend names them; without a step nothing of the kind is drawn.
#[test]
fn the_whole_steps_strips_follow_the_passes_and_the_axis_reaches_them() {
    use crate::step::{Span, Step};
    let a = one_f_one_b(4, 8);
    let end = a.timeline.end();
    let reductions: Vec<Span> =
        (0..4).map(|d| Span { start: end - 10.0 + f64::from(d), end: end + 5.0 + f64::from(d) }).collect();
    let optimizer_span = Span { start: end + 8.0, end: end + 20.0 };
    let step = Step {
        time: end + 20.0,
        pipeline: end,
        tp: 0.0,
        dp: 8.0,
        optimizer: 12.0,
        tokens_per_gpu_s: 1.0,
        samples_per_gpu_s: 1.0,
        mfu: 0.5,
        hfu: 0.5,
        dp_degree: 2,
        zero: 0,
        gpus: 8,
        global_batch: 16,
        reductions,
        gathers: Vec::new(),
        optimizer_span,
        static_memory: vec![0.0; 4],
    };
    let theme = Theme::light();
    let panel =
        |step| GanttPanel { title: None, note: None, schedule: &a.schedule, timeline: &a.timeline, causes: None, step };
    let fills = |scene: &Scene, fill: Rgb| {
        scene.items.iter().filter(|i| matches!(i, Item::Rect { fill: f, .. } if *f == fill)).count()
    };
    let (plain, plain_geo) = gantt(&[panel(None)], &GanttOptions::default(), &theme);
    let (with, geo) = gantt(&[panel(Some(&step))], &GanttOptions::default(), &theme);
    assert_eq!((fills(&plain, theme.reduction), fills(&plain, theme.optimizer)), (0, 0));
    // One strip per device for each, and a legend swatch each.
    assert_eq!(fills(&with, theme.reduction), 4 + 1);
    assert_eq!(fills(&with, theme.optimizer), 4 + 1);
    assert!(geo.axis.t1 >= end + 20.0 && plain_geo.axis.t1 < end + 20.0, "{} vs {}", geo.axis.t1, plain_geo.axis.t1);
    // Each reduction starts where its device's span says, on its own row.
    let rects: Vec<(f64, f64)> = with
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Rect { x0, y0, fill, .. } if *fill == theme.reduction && *y0 > geo.panels[0].rows_top - 1.0 => {
                Some((*x0, *y0))
            }
            _ => None,
        })
        .collect();
    for (d, (x0, y0)) in rects.iter().enumerate() {
        assert!((x0 - geo.axis.x(step.reductions[d].start)).abs() < 1e-6, "device {d}: x {x0}");
        let (_, device) = geo.row_at(*y0 + 1.0).unwrap();
        assert_eq!(device as usize, d);
    }
    let svg = to_svg(&with).unwrap();
    assert!(svg.contains("DP reduction") && svg.contains("optimizer step"), "the legend names the strips");
}

/// The rectangles drawn with an outline (outlined passes and pair frames, and focus bands).
fn outlined_rects(scene: &Scene) -> usize {
    scene.items.iter().filter(|i| matches!(i, Item::Rect { stroke: Some(_), .. })).count()
}

#[test]
fn a_terms_focus_outlines_its_passes_and_shades_its_devices() {
    // Every located term of every family with a formula, on a small run whose bars are wide.
    let mut checked = 0;
    for family in crate::registry::FAMILIES {
        let params = family.own_params(&ScheduleParams::new(4, 8));
        let (Some(explanation), Ok(a)) = (family.explanation(&params), run(family.name, &params)) else { continue };
        if a.schedule.orders.iter().flatten().any(|o| o.is_pair()) {
            continue; // pairs draw a frame of their own
        }
        let terms = explanation.bubble.iter().chain(&explanation.memory).flat_map(|f| &f.terms);
        for term in terms.filter(|t| !t.marks.is_empty()) {
            let focus = Focus::of_marks(&term.marks, &a);
            let distinct: std::collections::HashSet<_> = term.marks.iter().flat_map(|m| &m.passes).collect();
            assert_eq!(focus.counts(&a).0, distinct.len(), "{}: {}", family.name, term.name);
            let panel = plain(&a);
            let opts = GanttOptions { width: 2400.0, focus: Some(Arc::new(focus.clone())), ..GanttOptions::default() };
            let (scene, _) = gantt(&[panel], &opts, &Theme::light());
            assert_eq!(outlined_rects(&scene), distinct.len() + focus.bands.len(), "{}: {}", family.name, term.name);
            checked += 1;
        }
    }
    assert!(checked >= 12, "only {checked} located terms");
}

#[test]
fn a_derivation_shows_the_passes_placed_so_far() {
    let a = run("zb-h1", &ScheduleParams::new(4, 8)).unwrap();
    let steps = crate::derive::derive(&a, crate::units::Units::Cost);
    let mut shown_before = 0;
    for at in 0..steps.len() {
        let focus = Focus::placing(&steps, at);
        let panel = plain(&a);
        let opts = GanttOptions { width: 2400.0, focus: Some(Arc::new(focus)), ..GanttOptions::default() };
        let (scene, _) = gantt(&[panel], &opts, &Theme::light());
        let shown = scene.counts.drawn + scene.counts.merged + scene.counts.culled;
        assert_eq!(shown, shown_before + steps[at].passes.len(), "step {at}");
        assert_eq!(outlined_rects(&scene), steps[at].passes.len(), "step {at}: its own passes outlined");
        shown_before = shown;
    }
    assert_eq!(shown_before, a.schedule.pass_count());
}

/// The vocabulary families' legend (F, B, W, S, T, IF, IB, the barrier) wraps to a second row
/// rather than run past the figure: no legend text ends past the plot's right edge at the
/// default width or at 600 px, and the rows start below the legend.
#[test]
fn the_vocabulary_legend_wraps_inside_the_figure() {
    let costs = crate::Costs { vocab: Some(crate::VocabCosts::output(0.5, 1.0, 0.1)), ..crate::Costs::default() };
    for family in ["vocab-1", "v-half-vocab", "v-half-vocab-1"] {
        let a = run(family, &ScheduleParams::new(4, 16).with_costs(costs.clone())).unwrap();
        for width in [GanttOptions::default().width, 600.0] {
            let opts = GanttOptions { width, ..GanttOptions::default() };
            let (scene, geo) = gantt(&[plain(&a)], &opts, &Theme::light());
            let top = geo.panels[0].rows_top;
            let legend: Vec<(f64, f64, &str)> = scene
                .items
                .iter()
                .filter_map(|i| match i {
                    Item::Text { x, y, text, size, .. } if *y < top => {
                        Some((*x + text_width(text, *size), *y, text.as_str()))
                    }
                    _ => None,
                })
                .collect();
            assert!(legend.iter().any(|(_, _, t)| t.starts_with("barrier")), "{family} at {width}: {legend:?}");
            for (right, _, text) in &legend {
                assert!(*right <= opts.width, "{family} at {width}: `{text}` runs to {right}");
                assert!(*right <= geo.axis.x1 + 1e-9, "{family} at {width}: `{text}` runs past the plot");
            }
        }
    }
}
