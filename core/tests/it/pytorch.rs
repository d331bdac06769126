//! The PyTorch bridge against PyTorch itself: its own dumps of every schedule class (both
//! formats, torch 2.15.0 and 2.14.1) read and simulated, and the compute+comms form written
//! exactly as PyTorch lowers a compute order. Every oracle here was written by PyTorch (see
//! the READMEs of `tests/fixtures/pytorch-dumps/` and `tests/fixtures/pytorch-lowering/`); the
//! tests only read files, never torch.

use bubblescope::formats::{self, import, CsvForm, ExportOptions, Format, ImportOptions, Imported, TorchVersion};
use bubblescope::{analyze, Costs, Schedule};

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
