//! What went wrong reading a measured run: the file and rank it concerns, and hints.

use std::fmt;

/// An error reading or assembling traces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// The file it concerns, if one.
    pub file: Option<String>,
    /// The rank it concerns, if one.
    pub rank: Option<u32>,
    /// What was wrong (lowercase, no trailing period).
    pub message: String,
    /// What to do about it.
    pub hints: Vec<String>,
}

impl TraceError {
    /// An error about the whole run.
    pub fn run(message: impl Into<String>) -> TraceError {
        TraceError { file: None, rank: None, message: message.into(), hints: Vec::new() }
    }

    /// An error about one file.
    pub fn file(file: &str, message: impl Into<String>) -> TraceError {
        TraceError { file: Some(file.to_string()), ..TraceError::run(message) }
    }

    /// An error about one rank (and its file).
    pub fn rank(file: &str, rank: u32, message: impl Into<String>) -> TraceError {
        TraceError { rank: Some(rank), ..TraceError::file(file, message) }
    }

    /// Adds a hint.
    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> TraceError {
        self.hints.push(hint.into());
        self
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.as_deref().map(crate::units::clean_text);
        let message = match (&file, self.rank) {
            (Some(file), Some(rank)) => format!("{file} (rank {rank}): {}", self.message),
            (Some(file), None) => format!("{file}: {}", self.message),
            (None, Some(rank)) => format!("rank {rank}: {}", self.message),
            (None, None) => self.message.clone(),
        };
        crate::error::write_with_hints(f, &message, &self.hints)
    }
}

impl std::error::Error for TraceError {}
