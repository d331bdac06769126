//! What the CLI reads and writes: input files (capped), output files and standard output,
//! user errors with `hint:` lines, and notes on standard error.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use bubblescope::error::with_hints;
use bubblescope::formats;

/// An error with `hint:` lines, formatted by core's one formatter.
pub fn user_error<H: AsRef<str>>(message: &str, hints: &[H]) -> anyhow::Error {
    anyhow::anyhow!(with_hints(message, hints))
}

/// Says `note` on standard error, once per process: a command that derives the same model
/// several times (a sweep over EP degrees) says each of its notes once.
pub fn note_once(note: &str) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !said.iter().any(|s| s == note) {
        eprintln!("note: {note}");
        said.push(note.to_string());
    }
}

/// A clap usage error in the shape of every other error (without the `error: ` its caller
/// adds): clap's message on one line (a list it gives below joined onto it), its tips and
/// hints as `hint:` lines, then the usage and where to find every flag.
pub fn usage_error(e: &clap::Error, cli: &clap::Command) -> String {
    use clap::error::ErrorKind;
    let rendered = e.render().to_string();
    let command = std::env::args().nth(1).filter(|a| cli.get_subcommands().any(|c| c.get_name() == a));
    let help = match &command {
        Some(c) => format!("`bubblescope {c} --help` lists every flag"),
        None => "`bubblescope --help` lists the commands".to_string(),
    };
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let names: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).filter(|n| *n != "help").collect();
        let commands = match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(", "),
        };
        return match &command {
            Some(c) => with_hints(&format!("`bubblescope {c}` needs more arguments"), &[help]),
            None => with_hints("no command given", &[format!("give one of {commands}; {help}")]),
        };
    }
    let mut message = String::new();
    let mut items: Vec<String> = Vec::new();
    let mut hints: Vec<String> = Vec::new();
    let mut usage = None;
    for line in rendered.lines() {
        let trimmed = line.trim();
        if let Some(rest) = line.strip_prefix("error: ") {
            message = rest.trim().to_string();
        } else if let Some(rest) = trimmed.strip_prefix("tip: ").or_else(|| trimmed.strip_prefix("hint: ")) {
            hints.push(rest.to_string());
        } else if let Some(rest) = trimmed.strip_prefix("Usage: ") {
            usage = Some(rest.to_string());
        } else if trimmed.is_empty() || trimmed.starts_with("For more information") {
            continue;
        } else if usage.is_none() && hints.is_empty() {
            // The list under a message such as "the following required arguments were not
            // provided:".
            items.push(trimmed.to_string());
        }
    }
    if message.is_empty() {
        message = "the command line cannot be read".to_string();
    }
    if !items.is_empty() {
        message = format!("{} {}", message.trim_end_matches(':').to_string() + ":", items.join(", "));
    }
    // Clap's usage line names the arguments missing; after other errors it names those
    // it suggests, which reads as advice to give them all.
    if let (Some(u), ErrorKind::MissingRequiredArgument) = (usage, e.kind()) {
        hints.push(format!("usage: {u}"));
    }
    if e.kind() == ErrorKind::ArgumentConflict {
        hints.push("give only one of the two".to_string());
    }
    hints.push(help);
    with_hints(&message, &hints)
}

/// Whether `path` means standard input or output.
pub fn is_std(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Reads a schedule file, or standard input for `-`: at most [`formats::MAX_FILE_BYTES`] plus
/// one byte from any source (a pipe or a device never ends), then refuses.
pub fn read_input(path: &Path) -> Result<String> {
    let cap = formats::MAX_FILE_BYTES;
    let mut bytes = Vec::new();
    let read = if is_std(path) {
        std::io::stdin().lock().take(cap as u64 + 1).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(cap as u64 + 1).read_to_end(&mut bytes))
    };
    let shown = if is_std(path) { "standard input".to_string() } else { path.display().to_string() };
    read.map_err(|e| file_error("read", &shown, &e))?;
    if bytes.len() > cap {
        return Err(user_error(
            &format!("{shown} has more than the {cap} bytes ({} MiB) an import reads", cap >> 20),
            &["cut the schedule into smaller files"],
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        user_error(
            &format!("{shown} is not UTF-8 text (byte {} is invalid)", e.utf8_error().valid_up_to()),
            &["schedule files are PyTorch CSV or Bubblescope JSON"],
        )
    })
}

/// Refuses to write `output` when it is a file `input` reads (also through links): the file
/// `input` names, or for a folder of traces any file it holds (its traces, and the run's
/// metadata beside them). The write would destroy the schedule or the run it reads.
pub fn refuse_overwrite(input: &Path, output: &Path) -> Result<()> {
    if is_std(input) || is_std(output) {
        return Ok(());
    }
    if input.is_dir() {
        let traces = trace_files(&[input.to_path_buf()]).unwrap_or_default();
        let held: Vec<PathBuf> = std::fs::read_dir(input)
            .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect())
            .unwrap_or_default();
        let name =
            |f: &Path| f.file_name().map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into_owned());
        return match held.iter().find(|f| same_file(f, output)) {
            Some(file) => {
                let what = if traces.iter().any(|t| same_file(t, file)) { "the trace" } else { "the file" };
                Err(user_error(
                    &format!(
                        "the output {} is {what} {} that the input folder {} holds: writing it would destroy the run",
                        output.display(),
                        name(file),
                        input.display()
                    ),
                    &["write to a new file (outside the folder, or named unlike every file in it), or to `-` for standard output"],
                ))
            }
            None => Ok(()),
        };
    }
    if !same_file(input, output) {
        return Ok(());
    }
    Err(user_error(
        &format!(
            "the output {} is the input file {}: writing it would destroy the schedule",
            output.display(),
            input.display()
        ),
        &["write to another file, or to `-` for standard output"],
    ))
}

/// The trace files `paths` name: files as given, and in a folder its `*.pt.trace.json[.gz]`
/// files (every `.json[.gz]` when it has none of those), by name.
pub fn trace_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let entries = std::fs::read_dir(path).map_err(|e| file_error("read", &path.display().to_string(), &e))?;
        let mut files: Vec<PathBuf> =
            entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
        files.sort();
        let name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
        let traces: Vec<PathBuf> = files
            .iter()
            .filter(|p| name(p).ends_with(".pt.trace.json") || name(p).ends_with(".pt.trace.json.gz"))
            .cloned()
            .collect();
        let chosen = if traces.is_empty() {
            files.into_iter().filter(|p| name(p).ends_with(".json") || name(p).ends_with(".json.gz")).collect()
        } else {
            traces
        };
        if chosen.is_empty() {
            return Err(user_error(
                &format!("{} holds no trace files (.json or .json.gz)", path.display()),
                &["give the folder torch.profiler wrote, with one trace per rank, or a schedule file (.csv or .json)"],
            ));
        }
        out.extend(chosen);
    }
    Ok(out)
}

/// Whether `a` and `b` name the same existing file (same device and inode on Unix, the same
/// canonical path elsewhere).
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
    }
}

/// Refuses an output name that is not SVG: `command` (render, sweep) writes SVG only, to a
/// name ending in `.svg` or without an extension (or `-`).
pub fn check_svg_output(path: &Path, command: &str) -> Result<()> {
    if is_std(path) {
        return Ok(());
    }
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        None | Some("svg") => Ok(()),
        Some(ext @ ("png" | "jpg" | "jpeg" | "gif" | "webp" | "bmp" | "tif" | "tiff" | "pdf")) => Err(user_error(
            &format!("{command} writes SVG, but {} asks for {}", path.display(), ext.to_ascii_uppercase()),
            &[
                format!("name the output .svg, then convert it, e.g. `rsvg-convert -o figure.{ext} figure.svg`"),
                "or open the schedule in the app, whose export saves the figure".to_string(),
            ],
        )),
        Some(ext) => Err(user_error(
            &format!(
                "{command} writes SVG, but {} ends in .{}, expected .svg or no extension",
                formats::sanitize(&path.display().to_string()),
                formats::sanitize(ext)
            ),
            &["name the output e.g. figure.svg, or `-` for standard output"],
        )),
    }
}

/// `value` as the CLI prints JSON: pretty, ending in a newline, with no negative zero (a sum
/// of nothing, or the difference of equal numbers, prints as 0) and no float noise (a number a
/// few rounding steps from a short decimal prints as that decimal, `2` for 2.0000000000000004;
/// every other number exactly: [`bubblescope::units::without_noise`]).
pub fn json_text(value: &serde_json::Value) -> String {
    fn tidy(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => {
                if let Some(x) = n.as_f64() {
                    *v = serde_json::json!(bubblescope::units::without_noise(x) + 0.0);
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(tidy),
            serde_json::Value::Object(map) => map.values_mut().for_each(tidy),
            _ => {}
        }
    }
    let mut value = value.clone();
    tidy(&mut value);
    format!("{value:#}\n")
}

/// Writes `text` to standard output.
pub fn print(text: &str) -> Result<()> {
    std::io::stdout().write_all(text.as_bytes()).context("writing to standard output")
}

pub fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    if is_std(path) {
        std::io::stdout().write_all(bytes).context("writing to standard output")?;
        return Ok(());
    }
    std::fs::write(path, bytes).map_err(|e| file_error("write", &path.display().to_string(), &e))
}

/// A file that could not be read or written (`action`: "read" or "write"), said in the
/// CLI's own words with a hint, instead of the system's capitalised text.
pub fn file_error(action: &str, shown: &str, e: &std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind;
    let shown = formats::sanitize(shown);
    let (message, hint) = match (action, e.kind()) {
        ("read", ErrorKind::NotFound) => {
            (format!("cannot read {shown}: no such file"), "check the path; `-` reads standard input".to_string())
        }
        (_, ErrorKind::NotFound) => (
            format!("cannot write {shown}: its folder does not exist"),
            "create the folder first, or give another path; `-` writes standard output".to_string(),
        ),
        (_, ErrorKind::PermissionDenied) => {
            (format!("cannot {action} {shown}: permission denied"), "pick a path you may use".to_string())
        }
        (_, ErrorKind::IsADirectory) => {
            (format!("cannot {action} {shown}: it is a folder"), "give a file's path".to_string())
        }
        _ => {
            let text = e.to_string();
            let text = text.split(" (os error").next().unwrap_or(&text).to_lowercase();
            (format!("cannot {action} {shown}: {text}"), "check the path and try again".to_string())
        }
    };
    user_error(&message, &[hint])
}

/// Says on stderr, once per stage count, which schedules cut the model's pieces in proportion
/// ([`bubblescope::model::Derived::proportional_cut_note`]): `runs` pairs a schedule's name
/// with its stages per pipeline. `simulate`, `render`, `sweep` and `plan` all cut this way.
pub fn note_proportional_cuts<'a>(
    derived: &bubblescope::model::Derived,
    runs: impl IntoIterator<Item = (&'a str, u32)>,
) {
    let mut by_stages: std::collections::BTreeMap<u32, Vec<&str>> = std::collections::BTreeMap::new();
    for (name, stages) in runs {
        let names = by_stages.entry(stages).or_default();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let mut said = false;
    for (stages, names) in by_stages {
        if let Some(note) = derived.proportional_cut_note(stages) {
            let who: Vec<String> = names.iter().map(|n| format!("`{}`", formats::sanitize(n))).collect();
            let verb = if who.len() == 1 { "runs" } else { "run" };
            // The reason once; further stage counts only with their own fix.
            let note = if said {
                format!(
                    "{stages} stages, cut in proportion as well; give a layout of {stages} stages to place every layer"
                )
            } else {
                note
            };
            eprintln!("note: {} {verb} {note}", who.join(", "));
            said = true;
        }
    }
}

/// Says on stderr when a device's peak activation memory is above `--mem-limit` (in GiB and
/// the like when costs come from a model).
pub fn warn_over_limit(analysis: &bubblescope::Analysis, limit: Option<f64>, units: bubblescope::units::Units) {
    let Some(shown) = limit else { return };
    let memory = |v: f64| units.memory_detail(v);
    for d in analysis.stats.per_device.iter().filter(|d| d.over_limit(limit)) {
        let _ = writeln!(
            std::io::stderr(),
            "warning: device {} peaks at {} activation memory, above the limit {}",
            d.device,
            memory(d.peak_memory),
            memory(shown)
        );
    }
}
