//! What the engine does with a request ([`handle`]), wherever it runs: in the background
//! worker, or on the page when no worker can start. Each kind of request ([`kind`]) reads its
//! message and answers with one. Only the engine module has it (feature `engine`): the page's
//! own module sends these requests and never runs them.

use std::sync::Arc;

use bubblescope::formats::{self, CsvForm, Dialect, ExportOptions, Format, ImportOptions, TorchVersion};
use bubblescope::settings::Settings;
use bubblescope::{Costs, ScheduleParams};

use crate::balance::compute_balance;
use crate::compare::compute_all;
use crate::fit::compute_fit;
use crate::state::{compute_with, Baseline, BaselineWhen, Extras, FollowUp, LoadedFile, Outcome, Place, UiError};
use crate::wire::{self, kind, ExportAsk, Exported, Imported, Parts, Wire};

/// Answers a request of kind `kind` (one of [`kind`]).
pub fn handle(kind: &str, request: &Wire) -> Wire {
    match kind {
        kind::EXTRAS => wire::encode_extras(&FollowUp { extras: extras(request), baseline: None }),
        kind::ALL => wire::encode_all(&settings(request).and_then(|s| compute_all(&s))),
        kind::FIT => {
            let settings = settings(request).map_err(|message| UiError { field: None, message });
            wire::encode_fit(&settings.and_then(|s| compute_fit(&s, Place::Worker)))
        }
        kind::BALANCE => {
            let settings = settings(request).map_err(|message| UiError { field: None, message });
            wire::encode_balance(&settings.and_then(|s| compute_balance(&s, Place::Worker)))
        }
        kind::IMPORT => {
            let files = wire::decode_import(request).map_err(|e| format!("the engine could not read the files: {e}"));
            wire::encode_imported(&files.and_then(|f| import(&f)))
        }
        kind::EXPORT => {
            let ask = wire::decode_export(request).map_err(|e| format!("the engine could not read the request: {e}"));
            wire::encode_exported(&ask.and_then(|a| export(&a)))
        }
        _ => wire::encode(&schedules(request, BaselineWhen::Now).0),
    }
}

/// What a schedules request leaves to its follow-up: the outcome (its extras follow it) and
/// the parameters of a baseline left for later.
pub type Followed = Option<(Outcome, Option<ScheduleParams>)>;

/// The settings' schedules, with the baseline computed `when` asked, and what their follow-up
/// needs.
pub fn schedules(request: &Wire, when: BaselineWhen) -> (Parts, Followed) {
    match settings(request) {
        Ok(settings) => {
            let (outcome, later) = compute_with(&settings, None, Place::Worker, when);
            let parts = Parts {
                main: outcome.main.clone(),
                compare: outcome.compare.clone(),
                baseline: outcome.baseline,
                elapsed_ms: outcome.elapsed_ms,
            };
            (parts, Some((outcome, later)))
        }
        Err(message) => {
            let main = crate::state::Computed::failed(String::new(), String::new(), UiError { field: None, message });
            (Parts { main, compare: Vec::new(), baseline: Baseline::Absent, elapsed_ms: 0.0 }, None)
        }
    }
}

/// A request's settings. A damaged request cannot come from the page's own module; it is
/// answered all the same.
fn settings(request: &Wire) -> Result<Settings, String> {
    wire::decode_settings(request).map_err(|e| format!("the engine could not read the settings: {e}"))
}

/// The extras the request asks for, in its order (none for an entry it could not read).
fn extras(request: &Wire) -> Vec<Option<Arc<Extras>>> {
    let Ok(asks) = wire::decode_extras_asks(request) else { return Vec::new() };
    asks.into_iter()
        .map(|ask| {
            let ask = ask?;
            let family = ask.family.as_deref().and_then(bubblescope::family);
            Some(Arc::new(Extras::of(family, &ask.params, &ask.analysis, ask.chosen)))
        })
        .collect()
}

/// Opens `files`: several, or any trace, as one measured run; else one schedule file.
///
/// # Errors
/// What the reader says: the file (and rank), and a hint.
pub fn import(files: &[(String, Vec<u8>)]) -> Result<Imported, String> {
    match files {
        [] => Err("no file to open".to_string()),
        [(name, bytes)] if !is_trace(name, bytes) => {
            let text = String::from_utf8_lossy(bytes);
            let (file, costs) = load(name, &text);
            Ok(Imported { file, costs })
        }
        _ => Ok(Imported { file: load_traces(files)?, costs: None }),
    }
}

/// Reads `text` named `name` as a schedule file; also returns the costs a JSON file stores.
pub fn load(name: &str, text: &str) -> (LoadedFile, Option<Costs>) {
    let name = formats::sanitize(name);
    // The name, else the content; a file that tells neither is read as CSV, whose errors say why.
    let format = formats::detect(&name, text, None).unwrap_or(Format::PytorchCsv);
    let imported =
        formats::import(text, format, &ImportOptions { dialect: None, merge_bw: false, source: Some(name.clone()) });
    let file = LoadedFile {
        name,
        schedule: imported.schedule.map(Arc::new),
        diagnostics: imported.diagnostics,
        times: imported.times,
        measured: None,
    };
    (file, imported.costs)
}

/// Whether a file looks like a profiler trace: gzipped, or JSON that starts like one.
pub fn is_trace(name: &str, head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b]) || name.to_ascii_lowercase().ends_with(".json.gz") || {
        let text = String::from_utf8_lossy(&head[..head.len().min(64 << 10)]);
        text.contains("\"traceEvents\"") || text.contains("\"schemaVersion\"")
    }
}

/// Reads the per-rank traces `files` (name, bytes) as one measured run.
///
/// # Errors
/// What [`bubblescope::measured`] says: the file and rank, and a hint.
pub fn load_traces(files: &[(String, Vec<u8>)]) -> Result<LoadedFile, String> {
    let mut ranks = Vec::new();
    for (name, bytes) in files {
        ranks.push(
            bubblescope::measured::read_rank(&formats::sanitize(name), bytes.as_slice()).map_err(|e| e.to_string())?,
        );
    }
    let run = bubblescope::measured::assemble(ranks, None).map_err(|e| e.to_string())?;
    let name = match files {
        [(one, _)] => formats::sanitize(one),
        _ => format!("{} trace files", files.len()),
    };
    Ok(LoadedFile {
        name,
        schedule: Some(Arc::new(run.schedule.clone())),
        diagnostics: Vec::new(),
        times: Some(run.op_times()),
        measured: Some(Arc::new(run)),
    })
}

/// Writes the schedule of `ask` in its format.
///
/// # Errors
/// Why the format cannot hold this schedule, or an unknown format.
pub fn export(ask: &ExportAsk) -> Result<Exported, String> {
    let a = &ask.analysis;
    let file =
        |suffix: &str, mime: &str, text: String| Exported { suffix: suffix.to_string(), mime: mime.to_string(), text };
    Ok(match ask.format.as_str() {
        "json" => file(".json", "application/json", formats::export_json(&a.schedule, Some(&ask.costs))),
        "csv" => file(
            ".csv",
            "text/csv",
            formats::export_pytorch_csv(&a.schedule, CsvForm::ComputeOnly, Dialect::Current)
                .map_err(|e| e.to_string())?,
        ),
        "csv-comms" | "csv-comms-2.14" => {
            let (torch, suffix) = match ask.format.as_str() {
                "csv-comms" => (TorchVersion::V2_15, "-comms.csv"),
                _ => (TorchVersion::V2_14, "-comms-torch2.14.csv"),
            };
            let options = ExportOptions::torch(torch);
            let text = formats::export_pytorch_csv_with(&a.schedule, CsvForm::ComputeComms, &options)
                .map_err(|e| e.to_string())?;
            file(suffix, "text/csv", text)
        }
        "perfetto" => file(
            ".trace.json",
            "application/json",
            formats::export_perfetto(&a.schedule, &a.timeline).map_err(|e| e.to_string())?,
        ),
        other => return Err(format!("unknown export format {other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::compute;

    #[test]
    fn an_export_request_writes_what_the_formats_write() {
        let a = Arc::new(bubblescope::run("zb-h1", &bubblescope::ScheduleParams::new(4, 8)).unwrap());
        let costs = Costs::default();
        let ask = |format: &str| ExportAsk { format: format.to_string(), analysis: a.clone(), costs: costs.clone() };
        let json = export(&ask("json")).unwrap();
        assert_eq!((json.suffix.as_str(), json.mime.as_str()), (".json", "application/json"));
        assert_eq!(json.text, formats::export_json(&a.schedule, Some(&costs)));
        let back = wire::decode_exported(&handle(kind::EXPORT, &wire::encode_export(&ask("csv")))).unwrap().unwrap();
        assert_eq!(back.suffix, ".csv");
        assert!(back.text.contains("0F0"), "{}", back.text);
        assert!(export(&ask("bmp")).unwrap_err().contains("unknown export format"));
    }

    #[test]
    fn an_import_request_opens_a_schedule_file_and_its_costs() {
        let a = bubblescope::run("1f1b", &bubblescope::ScheduleParams::new(2, 4)).unwrap();
        let costs = Costs { f: 2.0, ..Costs::default() };
        let json = formats::export_json(&a.schedule, Some(&costs));
        let files = vec![("run.json".to_string(), json.into_bytes())];
        let opened = wire::decode_imported(&handle(kind::IMPORT, &wire::encode_import(&files))).unwrap().unwrap();
        assert_eq!(opened.file.schedule.as_deref(), Some(&a.schedule));
        assert_eq!(opened.costs.map(|c| c.f), Some(2.0));
        let bad = vec![("x.csv".to_string(), b"0Q0\n".to_vec())];
        let opened = import(&bad).unwrap();
        assert!(!opened.file.diagnostics.is_empty(), "a bad file opens with its diagnostics");
        assert!(import(&[]).is_err());
    }

    #[test]
    fn extras_asked_for_are_the_extras_computed_beside_the_schedules() {
        let (link, _) = bubblescope::permalink::parse("schedule=zb-h1&devices=4&microbatches=8&comm=0.5&compare=1f1b");
        let outcome = compute(&link.settings(), None, Place::Page);
        let asked = wire::decode_extras(&handle(kind::EXTRAS, &wire::encode_extras_asks(&outcome)), &outcome).unwrap();
        assert_eq!(asked, outcome.follow_up(None));
        assert!(asked.extras[0].as_ref().is_some_and(|e| e.bound.is_some()));
    }
}
