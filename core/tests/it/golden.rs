//! Golden SVG figures: the CLI's and the app's export output, byte for byte.
//!
//! References live in `tests/golden/<case>.svg` at the workspace root. A mismatch writes
//! `<case>.new.svg` next to the reference (git-ignored) and fails; after checking the new
//! pictures, accept them with `UPDATE_GOLDEN=1 cargo test -p bubblescope --test it golden`.

use std::path::PathBuf;

use bubblescope::gaps::{causes, Causes};
use bubblescope::render::{figure_animated_svg, figure_svg, AnimateOptions, FigureItem, FigureOptions, Theme};
use bubblescope::units::Units;
use bubblescope::{family, run, Costs, ScheduleParams};

/// Largest reference file, to keep the repository small.
const MAX_BYTES: usize = 96 * 1024;

struct Case {
    name: &'static str,
    families: &'static [&'static str],
    params: ScheduleParams,
    memory: bool,
    dark: bool,
    /// Shade idle gaps by cause (`render --causes`).
    causes: bool,
}

/// F = 1, 1, 1, 3 per device share, communication 0.3: every cause of idle time at once.
fn unequal_with_comm() -> Costs {
    let base = Costs { comm: 0.3, ..Costs::default() };
    let mut profile = bubblescope::CostProfile::uniform(&base, 4);
    profile.f = vec![1.0, 1.0, 1.0, 3.0];
    base.with_profile(profile, 4)
}

fn cases() -> Vec<Case> {
    let p48 = ScheduleParams::new(4, 8);
    vec![
        Case {
            name: "one-f-one-b-p4-m8",
            families: &["1f1b"],
            params: p48.clone(),
            memory: false,
            dark: false,
            causes: false,
        },
        Case {
            name: "zb-h1-p4-m8",
            families: &["zb-h1"],
            params: p48.clone(),
            memory: false,
            dark: false,
            causes: false,
        },
        Case {
            name: "zb-2p-p4-m8-memory",
            families: &["zb-2p"],
            params: p48.clone(),
            memory: true,
            dark: false,
            causes: false,
        },
        Case {
            name: "zb-v-p4-m8-chunk-costs",
            families: &["zb-v"],
            params: p48.clone().with_costs(Costs::fbw(2.0, 2.0, 2.0)),
            memory: false,
            dark: false,
            causes: false,
        },
        Case {
            name: "interleaved-1f1b-p4-m8-v2",
            families: &["interleaved-1f1b"],
            params: p48.clone().with_chunks(2),
            memory: false,
            dark: false,
            causes: false,
        },
        Case {
            name: "dualpipe-p8-m20-paper",
            families: &["dualpipe"],
            params: ScheduleParams::new(8, 20).with_costs(Costs { overlap: Some(3.0), ..Costs::default() }),
            memory: false,
            dark: false,
            causes: false,
        },
        Case {
            name: "compare-1f1b-zb-h1-v-half-p4-m8",
            families: &["1f1b", "zb-h1", "v-half"],
            params: p48.clone(),
            memory: false,
            dark: false,
            causes: false,
        },
        Case {
            // `bubblescope render -s 1f1b -p 4 -m 8 --f 1,1,1,3 --comm 0.3 --causes`
            name: "one-f-one-b-p4-m8-unequal-comm-causes",
            families: &["1f1b"],
            params: ScheduleParams::new(4, 8).with_costs(unequal_with_comm()),
            memory: false,
            dark: false,
            causes: true,
        },
        Case {
            name: "seq1f1b-p4-m8-dark",
            families: &["seq1f1b"],
            params: p48,
            memory: true,
            dark: true,
            causes: false,
        },
    ]
}

/// Animated figures: a case of [`cases`] by name, and how it plays.
fn animated_cases() -> Vec<(&'static str, &'static str, AnimateOptions)> {
    vec![
        ("zb-h1-p4-m8-animated", "zb-h1-p4-m8", AnimateOptions { duration: 6.0, looping: false }),
        ("zb-2p-p4-m8-memory-animated-loop", "zb-2p-p4-m8-memory", AnimateOptions { duration: 4.5, looping: true }),
    ]
}

/// Every golden figure: its name and its bytes.
fn outputs() -> Vec<(String, String)> {
    let cases = cases();
    let mut out: Vec<(String, String)> = cases.iter().map(|c| (c.name.to_string(), render(c, None))).collect();
    for (name, base, anim) in animated_cases() {
        let case = cases.iter().find(|c| c.name == base).expect("animated case names a still case");
        out.push((name.to_string(), render(case, Some(&anim))));
    }
    out
}

fn render(case: &Case, anim: Option<&AnimateOptions>) -> String {
    let analyses: Vec<(String, bubblescope::Analysis)> = case
        .families
        .iter()
        .map(|name| (family(name).unwrap().label(&case.params, Units::Cost), run(name, &case.params).unwrap()))
        .collect();
    let causes: Vec<Option<Causes>> =
        analyses.iter().map(|(_, a)| case.causes.then(|| causes(a, &case.params.costs).unwrap())).collect();
    let items: Vec<FigureItem<'_>> = analyses
        .iter()
        .zip(&causes)
        .map(|((label, a), c)| FigureItem { label, analysis: a, causes: c.as_ref(), step: None })
        .collect();
    let theme = if case.dark { Theme::dark() } else { Theme::light() };
    let opts = FigureOptions { memory: case.memory, theme, causes: case.causes, ..FigureOptions::default() };
    match anim {
        Some(anim) => figure_animated_svg(&items, &opts, anim),
        None => figure_svg(&items, &opts),
    }
}

#[test]
fn golden_svg_figures() {
    let mut failures = Vec::new();
    let again = outputs();
    for (i, (name, svg)) in outputs().into_iter().enumerate() {
        assert_eq!(svg, again[i].1, "{name}: rendering is not deterministic");
        assert!(svg.len() <= MAX_BYTES, "{name}: {} bytes, over the {MAX_BYTES}-byte cap", svg.len());
        failures.extend(compare_golden(&name, &svg));
    }
    assert_golden_matches(&failures);
}

/// Compares `svg` with the reference `tests/golden/<name>.svg`: `None` when they match, else
/// what differs, with the live output written beside the reference as `<name>.new.svg`. With
/// `UPDATE_GOLDEN` set, the output becomes the reference.
pub(crate) fn compare_golden(name: &str, svg: &str) -> Option<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/golden");
    let reference = dir.join(format!("{name}.svg"));
    let fresh = dir.join(format!("{name}.new.svg"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&reference, svg).unwrap();
        let _ = std::fs::remove_file(&fresh);
        return None;
    }
    let expected = std::fs::read_to_string(&reference);
    if expected.as_deref().is_ok_and(|e| e == svg) {
        let _ = std::fs::remove_file(&fresh);
        return None;
    }
    std::fs::write(&fresh, svg).unwrap();
    Some(match expected {
        Ok(_) => format!("mismatched output: {} (live) | {} (reference)", fresh.display(), reference.display()),
        Err(_) => format!("missing reference output {} (live output in {})", reference.display(), fresh.display()),
    })
}

/// Fails with every golden mismatch and how to accept the new pictures.
pub(crate) fn assert_golden_matches(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{}\nafter checking the pictures, accept them with: UPDATE_GOLDEN=1 cargo test -p bubblescope --test it golden",
        failures.join("\n")
    );
}
