//! Animated figures: well-formed XML, an animation in it, and a last frame that is the still
//! figure.

use bubblescope::render::{figure_animated_svg, figure_svg, AnimateOptions, FigureItem, FigureOptions, Theme};
use bubblescope::{family, run, ScheduleParams};

fn figures(families: &[&str], memory: bool, anim: &AnimateOptions) -> (String, String) {
    let params = ScheduleParams::new(4, 8);
    let analyses: Vec<(String, bubblescope::Analysis)> = families
        .iter()
        .map(|name| {
            (family(name).unwrap().label(&params, bubblescope::units::Units::Cost), run(name, &params).unwrap())
        })
        .collect();
    let items: Vec<FigureItem<'_>> = analyses.iter().map(|(label, a)| FigureItem::new(label, a)).collect();
    let opts = FigureOptions { memory, theme: Theme::dark(), ..FigureOptions::default() };
    (figure_svg(&items, &opts), figure_animated_svg(&items, &opts, anim))
}

/// An element as comparable text: name, attributes in order, and its text.
fn describe(node: roxmltree::Node<'_, '_>) -> String {
    let attrs: Vec<String> = node.attributes().map(|a| format!("{}={}", a.name(), a.value())).collect();
    format!("{} {} {}", node.tag_name().name(), attrs.join(" "), node.text().unwrap_or("").trim())
}

/// Whether an element belongs to the animated layer.
fn is_overlay(node: roxmltree::Node<'_, '_>) -> bool {
    matches!(node.tag_name().name(), "style" | "clipPath")
        || node.attribute("clip-path").is_some()
        || node.attribute("class").is_some_and(|c| c.starts_with("bs-"))
}

/// The value in `css` right after `key` up to `end`, for the last keyframe of an animation.
fn last_keyframe<'a>(css: &'a str, name: &str) -> &'a str {
    let rule = css.split("@keyframes ").find(|r| r.starts_with(name)).expect("keyframes present");
    let last = rule.rfind("100%{").expect("a 100% keyframe");
    &rule[last..]
}

const ONCE: AnimateOptions = AnimateOptions { duration: 6.0, looping: false };
const LOOP: AnimateOptions = AnimateOptions { duration: 3.0, looping: true };

#[test]
fn parses_as_xml_and_contains_an_animation_without_script() {
    for anim in [ONCE, LOOP] {
        let (_, svg) = figures(&["zb-h1"], true, &anim);
        let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let style = doc.descendants().find(|n| n.has_tag_name("style")).expect("a style element");
        let css = style.text().unwrap_or("");
        assert!(css.contains("@keyframes bs-veil") && css.contains("@keyframes bs-cursor"), "{css}");
        let iterations = if anim.looping { "infinite" } else { " 1 " };
        assert!(css.contains(iterations), "{css}");
        assert!(doc.descendants().any(|n| n.attribute("class") == Some("bs-veil")));
        assert!(doc.descendants().any(|n| n.attribute("class") == Some("bs-cursor")));
        assert!(!svg.contains("<script"));
    }
}

#[test]
fn last_frame_is_the_still_figure() {
    for (families, memory) in [(&["1f1b"][..], false), (&["zb-2p"][..], true), (&["1f1b", "zb-v"][..], true)] {
        for anim in [ONCE, LOOP] {
            let (still, svg) = figures(families, memory, &anim);
            let still_doc = roxmltree::Document::parse(&still).unwrap();
            let doc = roxmltree::Document::parse(&svg).unwrap();
            let base: Vec<String> =
                still_doc.root_element().children().filter(|n| n.is_element()).map(describe).collect();
            let kept: Vec<String> =
                doc.root_element().children().filter(|n| n.is_element() && !is_overlay(*n)).map(describe).collect();
            assert_eq!(kept, base, "{families:?}: the animated figure draws the still figure's elements");
            let rects = base.iter().filter(|d| d.starts_with("rect ")).count();
            assert!(rects > 8 * 3, "{families:?}: {rects} rectangles");

            // The veil ends translated by at least its clip's width, so it covers nothing; the
            // cursor ends hidden.
            let css = doc.descendants().find(|n| n.has_tag_name("style")).and_then(|n| n.text()).unwrap();
            let veil_end = last_keyframe(css, "bs-veil");
            let shift: f64 = veil_end
                .split("translateX(")
                .nth(1)
                .and_then(|r| r.split("px").next())
                .and_then(|v| v.parse().ok())
                .expect("a translateX in the last veil keyframe");
            let clip = doc.descendants().find(|n| n.has_tag_name("clipPath")).unwrap();
            for r in clip.children().filter(|n| n.is_element()) {
                let w: f64 = r.attribute("width").unwrap().parse().unwrap();
                assert!(shift >= w, "{families:?}: the veil moves {shift} px, its clip is {w} px wide");
            }
            assert!(last_keyframe(css, "bs-cursor").contains("opacity:0"), "{css}");
            // Static viewers see the still figure too: the veil rests outside its clip and the
            // cursor is transparent.
            for v in doc.descendants().filter(|n| n.attribute("class") == Some("bs-veil")) {
                assert_eq!(v.attribute("transform"), Some(format!("translate({shift},0)").as_str()));
            }
            let cursor = doc.descendants().find(|n| n.attribute("class") == Some("bs-cursor")).unwrap();
            assert_eq!(cursor.attribute("opacity"), Some("0"));
            // One veil and one cursor segment per plot: each panel's rows and each memory chart.
            let plots = families.len() * if memory { 2 } else { 1 };
            assert_eq!(clip.children().filter(|n| n.is_element()).count(), plots);
        }
    }
}

#[test]
fn durations_out_of_range_are_clamped() {
    for (d, expected) in [(f64::NAN, "6s"), (-1.0, "0.5s"), (1e9, "600s"), (2.25, "2.25s")] {
        let (_, svg) = figures(&["1f1b"], false, &AnimateOptions { duration: d, looping: false });
        assert!(svg.contains(&format!("bs-veil {expected} linear")), "{d}: {svg}");
    }
}
