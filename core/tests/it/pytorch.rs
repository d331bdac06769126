//! The PyTorch bridge against PyTorch itself: its own dumps of every schedule class (both
//! formats, torch 2.15.0 and 2.14.1) read and simulated, and the compute+comms form written
//! exactly as PyTorch lowers a compute order. Every oracle here was written by PyTorch (see
//! the READMEs of `tests/fixtures/pytorch-dumps/` and `tests/fixtures/pytorch-lowering/`); the
//! tests only read files, never torch.

use bubblescope::formats::{self, import, CsvForm, ExportOptions, Format, ImportOptions, Imported, TorchVersion};
use bubblescope::{analyze, Costs, Schedule, ScheduleParams};

const DUMPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/pytorch-dumps/");

/// The dump folders: the newest torch's at the top, older ones in `torch-X.Y.Z/`.
fn dump_dirs() -> Vec<(String, TorchVersion)> {
    vec![(DUMPS.to_string(), TorchVersion::V2_15), (format!("{DUMPS}torch-2.14.1/"), TorchVersion::V2_14)]
}

/// The entries of a folder's `index.json` that name a file.
fn dumps(dir: &str) -> Vec<serde_json::Value> {
    let index = std::fs::read_to_string(format!("{dir}index.json")).expect("index.json");
    let index: serde_json::Value = serde_json::from_str(&index).expect("index.json is JSON");
    index["dumps"].as_array().expect("dumps").iter().filter(|e| e.get("file").is_some()).cloned().collect()
}

fn read_dump(dir: &str, entry: &serde_json::Value) -> (String, Imported) {
    let file = entry["file"].as_str().unwrap();
    let text = std::fs::read_to_string(format!("{dir}{file}")).unwrap();
    let format = match entry["format"].as_str().unwrap() {
        "compute_only" => Format::PytorchCsv,
        _ => Format::PytorchCsvComms,
    };
    let imported = import(&text, format, &ImportOptions { source: Some(file.into()), ..Default::default() });
    (text, imported)
}

fn no_errors(what: &str, imported: Imported) -> Schedule {
    assert!(!imported.has_errors(), "{what}:\n{}", imported.report());
    imported.schedule.expect("a schedule")
}

/// Rows of cells, line ends and empty cells aside (PyTorch writes `\r\n` and idle cells).
fn cells(text: &str) -> Vec<Vec<&str>> {
    text.lines().map(|line| line.split(',').map(str::trim).filter(|c| !c.is_empty()).collect()).collect()
}

#[test]
fn every_pytorch_dump_reads_and_simulates_at_its_sizes() {
    let mut read = 0;
    for (dir, _) in dump_dirs() {
        for entry in dumps(&dir) {
            let file = entry["file"].as_str().unwrap().to_string();
            let (_, imported) = read_dump(&dir, &entry);
            let s = no_errors(&file, imported);
            let (p, v, m) = (
                entry["devices"].as_u64().unwrap() as u32,
                entry["stages_per_rank"].as_u64().unwrap() as u32,
                entry["microbatches"].as_u64().unwrap() as u32,
            );
            assert_eq!((s.devices(), s.placement.stages(), s.microbatches), (p, p * v, m), "{file}");
            analyze(s, &Costs::default()).unwrap_or_else(|e| panic!("{file}: {e}"));
            read += 1;
        }
    }
    assert_eq!(read, 40 + 40, "every dump of both versions");
}

#[test]
fn our_lowering_of_pytorchs_orders_is_pytorchs() {
    // PyTorch's compute_comms dump of a class is its lowering of the class's compute order (for
    // GPipe, of its order without the trailing REDUCE_GRAD): written from the compute-only
    // dump, ours must be the same cell for cell.
    let mut compared = 0;
    for (dir, torch) in dump_dirs() {
        let entries = dumps(&dir);
        for entry in entries.iter().filter(|e| e["format"] == "compute_only") {
            let comms_name = entry["file"].as_str().unwrap().replace("compute_only", "compute_comms");
            let Some(comms) = entries.iter().find(|e| e["file"] == comms_name.as_str()) else { continue };
            let (_, imported) = read_dump(&dir, entry);
            let s = no_errors(&comms_name, imported);
            let (expected, _) = read_dump(&dir, comms);
            let ours = formats::export_pytorch_csv_with(&s, CsvForm::ComputeComms, &ExportOptions::torch(torch))
                .unwrap_or_else(|e| panic!("{comms_name}: {e}"));
            assert_eq!(cells(&ours), cells(&expected), "{dir}{comms_name}");
            compared += 1;
        }
    }
    assert!(compared >= 2 * 17, "{compared}");
}

// -------------------------------------------------------------------------------------------
// Golden lowerings: every family, lowered by PyTorch (tools/pytorch-lowering.sh)

const LOWERING: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/pytorch-lowering/");

/// The golden cases: (compute-only file, family, its CLI size flags).
fn golden_cases() -> Vec<(String, String, String)> {
    let index = std::fs::read_to_string(format!("{LOWERING}index.json")).expect("pytorch-lowering/index.json");
    let index: serde_json::Value = serde_json::from_str(&index).expect("index.json is JSON");
    index["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap().to_string();
            (s("file"), s("family"), s("flags"))
        })
        .collect()
}

/// The parameters the CLI's size flags (`-p 4 -m 8 --chunks 4`) give.
fn params_of(flags: &str) -> ScheduleParams {
    let words: Vec<&str> = flags.split_whitespace().collect();
    let mut p = ScheduleParams::new(2, 4);
    for pair in words.chunks(2) {
        let value: u32 = pair[1].parse().unwrap();
        match pair[0] {
            "-p" => p.devices = value,
            "-m" => p.microbatches = value,
            "--chunks" => p.chunks = Some(value),
            "--waves" => p.waves = Some(value),
            other => panic!("unknown flag {other} in pytorch-lowering/index.json"),
        }
    }
    p
}

#[test]
fn our_comms_export_of_every_family_is_pytorchs_lowering() {
    let cases = golden_cases();
    let mut compared = 0;
    for (dir, torch) in [("torch-2.15.0", TorchVersion::V2_15), ("torch-2.14.1", TorchVersion::V2_14)] {
        let dir = format!("{LOWERING}{dir}/");
        if std::fs::metadata(&dir).is_err() {
            assert_eq!(torch, TorchVersion::V2_14, "the newest torch's lowerings are required");
            eprintln!("note: {dir} is not there (tools/pytorch-lowering.sh writes it when torch 2.14.1 is installed)");
            continue;
        }
        for (file, family, flags) in &cases {
            let text = std::fs::read_to_string(format!("{LOWERING}compute_only/{file}")).unwrap();
            let imported = import(&text, Format::PytorchCsv, &ImportOptions::default());
            assert!(imported.diagnostics.is_empty(), "{file}:\n{}", imported.report());
            let s = imported.schedule.unwrap();
            let theirs = std::fs::read_to_string(format!("{dir}{file}")).unwrap();
            let ours = formats::export_pytorch_csv_with(&s, CsvForm::ComputeComms, &ExportOptions::torch(torch))
                .unwrap_or_else(|e| panic!("{family} {flags}: {e}"));
            assert_eq!(cells(&ours), cells(&theirs), "{family} {flags}, torch {torch}: {dir}{file}");
            // And it reads back clean, as the same schedule.
            let back = import(&ours, Format::PytorchCsvComms, &ImportOptions::default());
            assert!(back.diagnostics.is_empty(), "{family} {flags}, torch {torch}:\n{}", back.report());
            assert_eq!(back.schedule.as_ref(), Some(&s));
            compared += 1;
        }
    }
    assert!(compared >= cases.len());
}

#[test]
fn the_golden_compute_orders_are_what_the_families_generate_today() {
    for (file, family, flags) in golden_cases() {
        let s = bubblescope::generate(&family, &params_of(&flags)).unwrap();
        let ours = formats::export_pytorch_csv(&s, CsvForm::ComputeOnly, formats::Dialect::Current).unwrap();
        let golden = std::fs::read_to_string(format!("{LOWERING}compute_only/{file}")).unwrap();
        assert_eq!(
            ours, golden,
            "`{family} {flags}` generates another order than when its golden lowering was written: \
             check the change, then run tools/pytorch-lowering.sh (it needs torch: see its header)"
        );
    }
}

#[test]
fn every_family_pytorch_can_run_has_golden_lowerings() {
    let cases = golden_cases();
    for f in bubblescope::FAMILIES {
        let Ok(s) = f.generate(&ScheduleParams::new(2, 4)) else { continue };
        if formats::export_pytorch_csv(&s, CsvForm::ComputeOnly, formats::Dialect::Current).is_err() {
            continue; // Two pipelines or sequence slices: not a PyTorch schedule.
        }
        assert!(
            cases.iter().any(|(_, family, _)| family == f.name),
            "{} has no golden lowering: run tools/pytorch-lowering.sh",
            f.name
        );
    }
}
