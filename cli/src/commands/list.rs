//! `bubblescope list`: every schedule family with its summary, options and constraints.

use std::io::Write as _;

use anyhow::{Context as _, Result};
use bubblescope::FAMILIES;
use clap::Args;

use crate::report;

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &ListArgs) -> Result<()> {
    let out =
        if args.json { crate::output::json_text(&report::families_json()) } else { report::families_text(FAMILIES) };
    std::io::stdout().write_all(out.as_bytes()).context("writing to standard output")?;
    Ok(())
}
