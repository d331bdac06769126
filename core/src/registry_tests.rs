//! Registry-level tests; each family's own numbers are tested in its file.

use super::*;
use crate::families::{ZERO_BUBBLE, ZERO_BUBBLE_V};
use crate::units::Units;
use crate::{run, Costs};

#[test]
fn names_are_unique_and_kebab_case() {
    let mut names: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
    for n in &names {
        assert!(n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'), "{n}");
    }
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), FAMILIES.len());
}

#[test]
fn unknown_names_get_a_suggestion() {
    let err = generate("1f1v", &ScheduleParams::new(4, 8)).unwrap_err();
    assert_eq!(err.field, Field::Schedule);
    let text = err.to_string();
    assert!(text.starts_with("unknown schedule `1f1v`\n  hint: did you mean `1f1b`?"), "{text}");
}

#[test]
fn one_f_one_b_matches_the_paper_for_p4_m8() {
    let a = run("1f1b", &ScheduleParams::new(4, 8)).unwrap();
    assert_eq!(a.stats.cost, 33.0);
    assert_eq!(a.stats.ideal, 24.0);
    assert_eq!(format!("{:.4}", a.stats.bubble_rate), "0.2727");
    let peaks: Vec<f64> = a.stats.per_device.iter().map(|d| d.peak_memory).collect();
    assert_eq!(peaks, vec![4.0, 3.0, 2.0, 1.0]);
    assert_eq!(a.schedule.notation(0), "F0 F1 F2 F3 X0 F4 X1 F5 X2 F6 X3 F7 X4 X5 X6 X7");
    assert_eq!(a.schedule.notation(3), "F0 X0 F1 X1 F2 X2 F3 X3 F4 X4 F5 X5 F6 X6 F7 X7");
}

#[test]
fn one_f_one_b_with_unequal_costs_and_comm() {
    // zero-bubble.md §9.2: p=4 m=8 F,B,W=5,6,4 → 165; p=4 m=12 with comm 1 → 247.
    let p = ScheduleParams::new(4, 8).with_costs(Costs::fbw(5.0, 6.0, 4.0));
    assert_eq!(run("1f1b", &p).unwrap().stats.cost, 165.0);
    let p = ScheduleParams::new(4, 12).with_costs(Costs { comm: 1.0, ..Costs::fbw(5.0, 6.0, 4.0) });
    assert_eq!(run("1f1b", &p).unwrap().stats.cost, 247.0);
}

#[test]
fn every_family_rejects_the_options_it_does_not_read_by_name() {
    let given = |field: Field| {
        let mut p = ScheduleParams::new(4, 8);
        match field {
            Field::Chunks => p.chunks = Some(2),
            Field::Group => p.group = Some(4),
            Field::Waves => p.waves = Some(2),
            Field::SeqSplits => p.seq_splits = Some(2),
            _ => p.costs.overlap = Some(3.0),
        }
        p
    };
    let mut rejected = 0;
    for family in FAMILIES {
        for field in [Field::Chunks, Field::Group, Field::Waves, Field::SeqSplits, Field::Overlap] {
            if family.uses(field) {
                continue;
            }
            let err = generate(family.name, &given(field)).unwrap_err();
            assert_eq!(err.field, field, "{}: {err}", family.name);
            let expected = format!("{} does not take --{}", family.name, field.name());
            assert!(err.to_string().starts_with(&expected), "{err}");
            rejected += 1;
        }
    }
    assert!(rejected > 4 * FAMILIES.len(), "{rejected}");
    assert!(generate("dualpipe", &given(Field::Overlap)).is_ok());
    assert!(generate("looped-bfs", &given(Field::Chunks)).is_ok());
}

#[test]
fn labels_count_in_the_right_number() {
    let one = family("1f1b").unwrap();
    assert_eq!(one.label(&ScheduleParams::new(1, 1), Units::Cost), "1F1B · 1 device · 1 microbatch");
    assert_eq!(one.label(&ScheduleParams::new(4, 8), Units::Cost), "1F1B · 4 devices · 8 microbatches");
    let interleaved = family("interleaved-1f1b").unwrap();
    assert!(interleaved.label(&ScheduleParams::new(2, 4).with_chunks(1), Units::Cost).ends_with(" · 1 chunk"));
    // A memory limit in the units of the costs: 80 GiB for a model, not 85899345920.
    let zb = family("zb-auto").unwrap();
    let limited = ScheduleParams::new(4, 8).with_mem_limit(80.0 * 1024.0 * 1024.0 * 1024.0);
    assert!(zb.label(&limited, Units::Model).ends_with(" · limit 80 GiB"), "{}", zb.label(&limited, Units::Model));
    assert!(zb.label(&ScheduleParams::new(4, 8).with_mem_limit(4.5), Units::Cost).ends_with(" · limit 4.5"));
}

/// Sizes, options and costs every registry fact is checked over.
fn grid() -> Vec<ScheduleParams> {
    let mut out = Vec::new();
    for devices in 1..=6u32 {
        for microbatches in [1, 2, 3, 5, 8, 12, 13] {
            let vocab = Some(crate::params::VocabCosts::output(0.5, 1.0, 0.1));
            for costs in [Costs::default(), Costs { comm: 0.5, vocab, ..Costs::fbw(1.0, 2.0, 1.5) }] {
                for option in [None, Some(1), Some(3)] {
                    let mut p = ScheduleParams::new(devices, microbatches).with_costs(costs.clone());
                    p.chunks = option;
                    p.waves = option;
                    p.seq_splits = option;
                    out.push(p);
                }
            }
        }
    }
    out
}

#[test]
fn every_entry_states_its_own_facts_over_the_defaults() {
    for family in FAMILIES {
        let stated = [family.name, family.title, family.summary, family.reference, family.url, family.constraints];
        assert!(stated.iter().all(|fact| !fact.is_empty()), "{} leaves a fact blank: {stated:?}", family.name);
        let generated = grid().iter().map(|p| family.own_params(p)).find_map(|p| generate(family.name, &p).ok());
        let schedule = generated.unwrap_or_else(|| panic!("{} generates nothing over the grid", family.name));
        assert!(schedule.pass_count() > 0, "{}", family.name);
    }
    let blank = Family::DEFAULTS;
    assert!((blank.generate)(&ScheduleParams::new(4, 8)).is_err());
    assert_eq!(blank.pass_count(&ScheduleParams::new(4, 8)), 0);
    assert_eq!(Family::citing(ZERO_BUBBLE_V).url, ZERO_BUBBLE.url);
}

#[test]
fn pass_counts_equal_the_generated_schedules() {
    let mut checked = 0;
    for family in FAMILIES {
        for params in grid() {
            let p = family.own_params(&params);
            if let Ok(schedule) = generate(family.name, &p) {
                assert_eq!(family.pass_count(&p), schedule.pass_count() as u64, "{} {p:?}", family.name);
                checked += 1;
            }
        }
    }
    assert!(checked > 1500, "only {checked} schedules generated");
}

#[test]
fn defaults_are_what_the_generators_use() {
    for family in FAMILIES {
        for params in grid() {
            let mut p = family.own_params(&params);
            p.chunks = None;
            p.waves = None;
            p.seq_splits = None;
            let explicit = family.with_defaults(&p);
            let (a, b) = (generate(family.name, &p), generate(family.name, &explicit));
            assert_eq!(a.is_ok(), b.is_ok(), "{} {p:?}: {a:?} vs {b:?}", family.name);
            if let (Ok(a), Ok(b)) = (a, b) {
                assert_eq!(a, b, "{} {p:?}", family.name);
            }
        }
    }
}

#[test]
fn hanayo_defaults_to_two_waves() {
    let hanayo = family("hanayo").unwrap();
    let waves = hanayo.option(Field::Waves).unwrap();
    assert_eq!(waves.default_value(&ScheduleParams::new(4, 8)), Some(2.0));
    let p = ScheduleParams::new(4, 8);
    assert_eq!(generate("hanayo", &p).unwrap().placement.chunks_per_device(), 4);
}

#[test]
fn sizes_are_refused_from_the_pass_count_before_any_work() {
    for family in FAMILIES {
        let p = ScheduleParams::new(1024, 65_536);
        let err = generate(family.name, &p).unwrap_err();
        let passes = family.pass_count(&p);
        assert!(passes > crate::params::MAX_PASSES, "{}", family.name);
        assert!(err.to_string().contains(&format!("would have {passes} passes")), "{}: {err}", family.name);
    }
}

#[test]
fn papers_and_pytorch_spellings_resolve_and_typos_suggest_the_containing_name() {
    let resolves = |typed: &str, name: &str| assert_eq!(family(typed).map(|f| f.name), Some(name), "{typed}");
    for (typed, name) in [
        ("dualpipev", "dualpipe-v"),
        ("DualPipeV", "dualpipe-v"),
        ("ScheduleDualPipeV", "dualpipe-v"),
        ("ZBV", "zb-v"),
        ("v-zb", "zb-v"),
        ("ZBVZeroBubble", "zb-v"),
        ("ScheduleZBVZeroBubble", "zb-v"),
        ("interleaved", "interleaved-1f1b"),
        ("Interleaved1F1B", "interleaved-1f1b"),
        ("1f1bv", "1f1b-v"),
        ("ScheduleGPipe", "gpipe"),
        ("LoopedBFS", "looped-bfs"),
        ("zb_h1", "zb-h1"),
    ] {
        resolves(typed, name);
    }
    // Normal forms do not collide, and no alias shadows a registry name.
    let normals: std::collections::HashSet<String> = FAMILIES.iter().map(|f| normal(f.name)).collect();
    assert_eq!(normals.len(), FAMILIES.len());
    assert!(ALIASES.iter().all(|(alias, _)| !normals.contains(*alias)));
    let hint = |typed: &str| unknown_family(typed).hints[0].clone();
    assert_eq!(hint("dualpipevv"), "did you mean `dualpipe-v`?");
    assert_eq!(hint("hanay"), "did you mean `hanayo`?");
    assert_eq!(hint("1f1v"), "did you mean `1f1b`?");
    assert_eq!(hint("zb-v-hand"), "did you mean `zb-v-handcrafted`?");
    assert!(hint("zzzzzzzz").starts_with("expected one of"));
}

#[test]
fn issue_42_s_families_explain_their_bubble_and_memory() {
    let names = [
        "gpipe",
        "1f1b",
        "interleaved-1f1b",
        "zb-h1",
        "zb-h2",
        "zb-v",
        "v-half",
        "v-min",
        "dualpipe",
        "dualpipe-v",
        "chimera",
        "hanayo",
        "seq1f1b",
    ];
    for name in names {
        let f = family(name).unwrap();
        let e = f.explanation(&ScheduleParams::new(4, 8)).unwrap_or_else(|| panic!("{name} explains nothing"));
        assert!(e.bubble.is_some() && e.memory.is_some(), "{name}");
        let sources = [&e.bubble, &e.memory].map(|f| f.as_ref().map_or("", |f| f.source));
        assert!(sources.iter().all(|s| !s.is_empty()), "{name}: a formula without a source");
        for formula in [&e.bubble, &e.memory].into_iter().flatten() {
            // Well-formed MathML whose text alternative is the plain text, for screen readers.
            let mathml = formula.mathml();
            let doc = roxmltree::Document::parse(&mathml).unwrap_or_else(|err| panic!("{name}: {err}\n{mathml}"));
            assert_eq!(doc.root_element().tag_name().name(), "math", "{name}");
            assert_eq!(doc.root_element().attribute("alttext"), Some(formula.text().as_str()), "{name}");
        }
    }
}

#[test]
fn the_a2a_overlap_hint_names_every_family_that_pairs() {
    let reading: Vec<&str> = FAMILIES.iter().filter(|f| f.uses(Field::A2aOverlap)).map(|f| f.name).collect();
    assert_eq!(reading, crate::families::A2A_OVERLAP_FAMILIES.to_vec());
}

#[test]
fn the_vocabulary_hint_names_every_vocabulary_family() {
    let vocabulary: Vec<&str> =
        FAMILIES.iter().filter(|f| f.group == crate::families::FamilyGroup::Vocabulary).map(|f| f.name).collect();
    assert_eq!(vocabulary, crate::families::VOCABULARY_FAMILIES.to_vec());
}
