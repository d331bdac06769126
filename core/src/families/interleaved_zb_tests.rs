//! Tests of interleaved-zb against PyTorch's own `ScheduleInterleavedZeroBubble`.

use std::io::Read as _;

use super::super::test_support::assert_sizes_validate_and_simulate;
use super::*;
use crate::formats::{export_pytorch_csv, CsvForm, Dialect};
use crate::params::Costs;
use crate::registry::{family, generate};

/// PyTorch 2.15.0's dumps of the class (2.14.1's are identical), read in place.
const GRID: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/pytorch-dumps/interleaved-zero-bubble-grid.jsonl.gz");

fn params(devices: u32, microbatches: u32, chunks: u32) -> ScheduleParams {
    ScheduleParams::new(devices, microbatches).with_chunks(chunks)
}

#[test]
fn orders_are_pytorchs_over_its_whole_grid() {
    let mut text = String::new();
    let file = std::fs::File::open(GRID).expect("the grid fixture");
    flate2::read::GzDecoder::new(file).read_to_string(&mut text).expect("gzip");
    let (mut accepted, mut refused) = (0, 0);
    for line in text.lines() {
        let case: serde_json::Value = serde_json::from_str(line).expect("one JSON object a line");
        let (p, v, m) = (
            case["p"].as_u64().unwrap() as u32,
            case["v"].as_u64().unwrap() as u32,
            case["m"].as_u64().unwrap() as u32,
        );
        let ours = generate("interleaved-zb", &params(p, m, v));
        if let Some(error) = case["error"].as_str() {
            let err = ours.expect_err(&format!("PyTorch refuses P={p} V={v} M={m}: {error}"));
            assert_eq!(err.field, Field::Microbatches);
            let r = (m / p).max(1);
            assert!(error.contains(&format!("multiple of the number of rounds ({r}), but got {m}")), "{error}");
            assert!(err.hints[0].contains(error.trim_start_matches("ValueError: ")), "{err}");
            refused += 1;
            continue;
        }
        let s = ours.unwrap_or_else(|e| panic!("P={p} V={v} M={m}: {e}"));
        // PyTorch's rows without their idle cells, against ours in its grammar.
        let theirs: Vec<String> = case["csv"]
            .as_str()
            .unwrap()
            .lines()
            .map(|row| row.split(',').filter(|c| !c.is_empty()).collect::<Vec<_>>().join(","))
            .collect();
        let ours = export_pytorch_csv(&s, CsvForm::ComputeOnly, Dialect::Current).unwrap();
        let ours: Vec<&str> = ours.lines().collect();
        assert_eq!(ours, theirs, "P={p} V={v} M={m}");
        accepted += 1;
    }
    assert_eq!((accepted, refused), (441, 504));
}

#[test]
fn pytorchs_class_name_and_other_spellings_resolve() {
    for name in ["interleaved-zb", "ScheduleInterleavedZeroBubble", "InterleavedZeroBubble", "zb1p-interleaved"] {
        assert_eq!(family(name).map(|f| f.name), Some("interleaved-zb"), "{name}");
    }
    // PyTorch's tests call it ZB1P, but `zb1p` is the Zero Bubble paper's automatic ZB-1p.
    assert_eq!(family("ZB1P").map(|f| f.name), Some("zb-1p"));
}

#[test]
fn microbatches_that_are_not_a_multiple_of_the_rounds_are_refused_with_the_nearest_that_are() {
    let err = generate("interleaved-zb", &params(4, 9, 2)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "interleaved-zb needs microbatches to be a multiple of its rounds, max(1, ⌊microbatches/devices⌋) = 2, \
         found 9\n  hint: PyTorch refuses it too (\"Zero bubble requires the number of microbatches to be a multiple \
         of the number of rounds (2), but got 9.\"); use --microbatches 8 or 10"
    );
    let err = generate("interleaved-zb", &params(2, 4, 0)).unwrap_err();
    assert_eq!(err.field, Field::Chunks);
    // Fewer microbatches than devices is one round, as PyTorch accepts.
    assert!(generate("interleaved-zb", &params(4, 3, 2)).is_ok());
}

#[test]
fn one_chunk_is_a_linear_pipeline() {
    let s = generate("interleaved-zb", &params(4, 8, 1)).unwrap();
    assert_eq!(s.placement, Placement::linear(4));
    assert_eq!(crate::validate(&s), vec![]);
}

#[test]
fn sizes_validate_and_simulate() {
    assert_sizes_validate_and_simulate(
        &["interleaved-zb"],
        (Field::Chunks, 1..=4),
        &Costs::fbw(1.0, 2.0, 1.0),
        1..=5,
        |d| 1..=3 * d,
        false,
    );
}
