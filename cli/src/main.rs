//! `bubblescope`: the same schedules and stats as the playground, as JSON and SVG figures.

mod args;
mod commands;
mod export;
mod input;
mod output;
mod parallel;
mod report;
mod step;
mod subject;

use std::io::Write as _;

/// A short-lived process that allocates many small vectors: mimalloc asks the OS for less
/// and faults in fewer pages than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _};

use commands::Cli;

fn main() -> ExitCode {
    let matches = match Cli::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => return clap_failure(&e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return clap_failure(&e),
    };
    let sub = matches.subcommand().map(|(_, m)| m);
    match commands::run(cli, sub) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => fail(&format!("{err:#}")),
    }
}

/// Bad input of any kind: one `error:` line, hints on their own lines (a generic one when
/// the message has none), exit status 2, nothing on standard output.
fn fail(message: &str) -> ExitCode {
    let mut text = message.trim_end().to_string();
    if !text.lines().any(|l| l.trim_start().starts_with("hint:")) {
        text.push_str("\n  hint: `bubblescope help` lists the commands, `bubblescope <command> --help` every flag");
    }
    let _ = writeln!(std::io::stderr(), "error: {text}");
    ExitCode::from(2)
}

/// A clap error: help and version print as clap prints them; usage errors take the shape of
/// every other error ([`output::usage_error`]).
fn clap_failure(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => e.exit(),
        _ => fail(&output::usage_error(e, &<Cli as clap::CommandFactory>::command())),
    }
}
