//! `bubblescope explain` (issue 42): its simulated values are `simulate --json`'s, its
//! formulas' values equal them where every assumption holds, and a broken assumption is named
//! with the values apart.

mod common;

use serde_json::Value;

use common::ok;

/// `bubblescope ARGS --json`, parsed.
fn json(command: &str, args: &[&str]) -> Value {
    let dir = std::env::temp_dir();
    let text = ok(&dir, &[&[command], args, &["--json"]].concat());
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{command} {args:?}: {e}\n{text}"))
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number, found {v}"))
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Settings under which each family's assumptions hold (and the value is checked), and some
/// under which they need not.
const CASES: &[&[&str]] = &[
    &["-s", "gpipe", "-p", "4", "-m", "8", "--f", "1.5", "--b", "2", "--w", "0.5"],
    &["-s", "1f1b", "-p", "6", "-m", "12", "--mem-f", "2", "--mem-w", "1.5"],
    &["-s", "interleaved-1f1b", "-p", "4", "-m", "8", "--chunks", "3"],
    &["-s", "zb-h1", "-p", "4", "-m", "9", "--f", "2", "--b", "1.5", "--w", "1"],
    &["-s", "zb-h2", "-p", "4", "-m", "9", "--comm", "0.2"],
    &["-s", "zb-v", "-p", "4", "-m", "8", "--mem-w", "1"],
    &["-s", "v-half", "-p", "4", "-m", "8"],
    &["-s", "v-min", "-p", "5", "-m", "10", "--mem-w", "1"],
    &["-s", "dualpipe", "-p", "4", "-m", "10"],
    &["-s", "dualpipe-v", "-p", "4", "-m", "10"],
    &["-s", "chimera", "-p", "4", "-m", "8", "--f", "2", "--b", "1", "--w", "0.5"],
    &["-s", "hanayo", "-p", "4", "-m", "8", "--f", "2", "--waves", "3"],
    &["-s", "seq1f1b", "-p", "4", "-m", "8", "--seq-splits", "3"],
];

#[test]
fn simulated_values_are_simulates_and_the_formulas_equal_them_when_assumptions_hold() {
    for args in CASES {
        let explained = json("explain", args);
        let simulated = json("simulate", args);
        let bubble = num(&simulated["cost"]) - num(&simulated["ideal"]);
        assert!(near(num(&explained["bubble"]["simulated"]), bubble), "{args:?}: {explained}");
        assert!(near(num(&explained["memory"]["simulated"]), num(&simulated["peak_memory"])), "{args:?}");
        assert_eq!(explained["assumptions_hold"], Value::Bool(true), "{args:?}: {explained}");
        for part in ["bubble", "memory"] {
            let p = &explained[part];
            assert!(p["formula"].is_string(), "{args:?}: {part}");
            assert!(near(num(&p["value"]), num(&p["simulated"])), "{args:?}: {part} {p}");
        }
    }
}

#[test]
fn the_json_has_the_issues_shape() {
    let v = json("explain", &["-s", "1f1b"]);
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["bubble", "memory", "assumptions", "assumptions_hold"]);
    for part in ["bubble", "memory"] {
        for key in ["formula", "value", "simulated"] {
            assert!(v[part].get(key).is_some(), "{part}.{key}: {v}");
        }
    }
    let first = &v["assumptions"][0];
    assert!(first["text"].is_string() && first["holds"].is_boolean(), "{first}");
}

/// The assumption whose text contains `says`.
fn assumption<'a>(v: &'a Value, says: &str) -> &'a Value {
    let all = v["assumptions"].as_array().unwrap();
    all.iter().find(|a| a["text"].as_str().unwrap().contains(says)).unwrap_or_else(|| panic!("{says}: {v}"))
}

#[test]
fn communication_breaks_1f1b_s_bubble_formula_and_explain_says_so() {
    let v = json("explain", &["-s", "1f1b", "-p", "4", "-m", "8", "--comm", "0.5"]);
    assert_eq!(v["assumptions_hold"], Value::Bool(false));
    assert_eq!(assumption(&v, "comm = 0")["holds"], Value::Bool(false));
    let (value, simulated) = (num(&v["bubble"]["value"]), num(&v["bubble"]["simulated"]));
    assert_eq!(value, 9.0);
    assert!(simulated > value + 1.0, "{v}");
    // Memory does not need it: its formula still holds.
    assert!(near(num(&v["memory"]["value"]), num(&v["memory"]["simulated"])));
}

#[test]
fn unequal_stages_break_every_formula() {
    let v = json("explain", &["-s", "1f1b", "-p", "4", "-m", "8", "--f", "1,1,1,3"]);
    assert_eq!(v["assumptions_hold"], Value::Bool(false));
    assert_eq!(assumption(&v, "equal stages")["holds"], Value::Bool(false));
    assert!(!near(num(&v["bubble"]["value"]), num(&v["bubble"]["simulated"])), "{v}");
    let text = ok(&std::env::temp_dir(), &["explain", "-s", "1f1b", "-p", "4", "-m", "8", "--f", "1,1,1,3"]);
    assert!(text.contains("BREAKS  equal stages"), "{text}");
    assert!(text.contains("against the formula"), "{text}");
}

#[test]
fn a_family_without_a_formula_gets_a_note_not_an_error() {
    let dir = std::env::temp_dir();
    let v = json("explain", &["-s", "zb-auto", "-p", "4", "-m", "8"]);
    assert!(v["bubble"]["formula"].is_null() && v["bubble"]["value"].is_null(), "{v}");
    assert!(v["memory"]["simulated"].is_number(), "{v}");
    let said = common::ok_stderr(&dir, &["explain", "-s", "zb-auto", "--json"]);
    assert!(said.contains("note: zb-auto has no closed form"), "{said}");
    let text = ok(&dir, &["explain", "-s", "zb-auto"]);
    assert!(text.contains("no closed form"), "{text}");
}

#[test]
fn bad_settings_are_errors_with_a_hint() {
    common::fails_with_hint(&std::env::temp_dir(), &["explain", "-s", "zb-h1", "-p", "8", "-m", "2"], "zb-h1 needs");
    common::fails_with_hint(&std::env::temp_dir(), &["explain", "-p", "4"], "--schedule");
}

#[test]
fn no_schedule_names_only_the_flags_explain_takes() {
    // explain reads no file: its error must not offer --from FILE.
    let e = common::fails_with_hint(&std::env::temp_dir(), &["explain", "-p", "4"], "--schedule is required");
    assert!(!e.contains("--from"), "{e}");
}

#[test]
fn a_memory_limit_is_checked_as_simulate_checks_it_and_named_where_it_binds() {
    let dir = std::env::temp_dir();
    // 1F1B does not plan to a limit: explain warns of a peak above it, as simulate does.
    let said = common::ok_stderr(&dir, &["explain", "-s", "1f1b", "-p", "4", "-m", "8", "--mem-limit", "0.5"]);
    assert!(said.contains("warning: device 0 peaks at 4 activation memory, above the limit 0.5"), "{said}");
    let said = common::ok_stderr(&dir, &["simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--mem-limit", "0.5"]);
    assert!(said.contains("warning: device 0 peaks at 4 activation memory, above the limit 0.5"), "{said}");
    // ZB-V plans to it: a limit off 1F1B's memory breaks the memory formula's assumption.
    let v = json("explain", &["-s", "zb-v", "-p", "4", "-m", "8", "--mem-limit", "6"]);
    assert_eq!(assumption(&v, "mem-limit = P·mem-f")["holds"], Value::Bool(false), "{v}");
}

/// Hostile pass 5, items 20 and 22: explain's simulated bubble carries no float noise (0.15,
/// not 0.14999999999999325), and a difference below the shown precision never prints `−0`.
#[test]
fn explain_prints_no_float_noise_and_no_negative_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out: Value = serde_json::from_str(&ok(
        dir.path(),
        &["explain", "-s", "zb-v", "--f", "0.1", "--b", "0.2", "--w", "0.7", "--json"],
    ))
    .unwrap();
    assert_eq!(out["bubble"]["simulated"].as_f64(), Some(0.15), "{out}");
    let text = ok(dir.path(), &["explain", "-s", "dualpipe", "--f", "1e-9"]);
    assert!(!text.contains("−0 ") && !text.contains("-0 "), "{text}");
}

/// Under `--p2p blocking` the closed forms' async sends break, and explain says so instead of
/// "all hold" beside a simulated bubble 6 above the formula (issue 43, pass 6, item 5).
#[test]
fn blocking_sends_break_the_formulas_assumption() {
    let args = ["-s", "zb-h1", "-p", "4", "-m", "8"];
    let plain = json("explain", &args);
    assert_eq!(plain["assumptions_hold"], Value::Bool(true), "{plain}");
    let blocking = json("explain", &[&args[..], &["--p2p", "blocking"]].concat());
    assert_eq!(blocking["assumptions_hold"], Value::Bool(false), "{blocking}");
    let sends =
        blocking["assumptions"].as_array().unwrap().iter().find(|a| a["text"] == "sends do not block (--p2p async)");
    assert_eq!(sends.expect("the send assumption")["holds"], Value::Bool(false), "{blocking}");
    let text = ok(&std::env::temp_dir(), &["explain", "-s", "zb-h1", "-p", "4", "-m", "8", "--p2p", "blocking"]);
    assert!(text.contains("BREAKS  sends do not block (--p2p async) (for the bubble)"), "{text}");
}

/// A family without a formula gives its simulated bubble without float noise too: zb-2p at
/// thirds-free costs 1.1 has cost = ideal, and said 1.0658141036401503e-14 (issue 43, pass 6,
/// item 13).
#[test]
fn the_simulated_bubble_without_a_formula_has_no_float_noise() {
    for s in ["zb-2p", "zb-auto", "v-auto"] {
        let e = json("explain", &["-s", s, "-p", "4", "-m", "8", "--f", "1.1", "--b", "1.1", "--w", "1.1"]);
        assert_eq!(e["bubble"]["simulated"].as_f64(), Some(0.0), "{s}: {}", e["bubble"]);
    }
}

/// Sixth hostile pass: `explain --host-gbps 5` on a run that offloads nothing printed the
/// same as without it; simulate refuses it, and so does explain now.
#[test]
fn explain_refuses_a_copy_rate_when_nothing_is_offloaded() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["explain", "-s", "1f1b", "--model", "llama-3.2-1b", "--host-gbps", "5"][..],
        &["explain", "-s", "1f1b", "-p", "4", "-m", "8", "--copy-time", "0.2"][..],
    ] {
        let err = common::fails_with_hint(dir.path(), args, "nothing is offloaded");
        assert!(err.contains("hint:"), "{err}");
    }
    common::ok(dir.path(), &["explain", "-s", "1f1b", "-p", "4", "-m", "8", "--offload", "auto", "--copy-time", "0.2"]);
}
