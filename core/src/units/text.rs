//! Text that came from a user or a file, made safe to show or to paste into a shell.

/// Removes control characters and caps the length, so file text is safe to draw.
pub fn clean_text(text: &str) -> String {
    const MAX: usize = 200;
    let mut out: String = text.chars().filter(|c| !c.is_control()).take(MAX).collect();
    if text.chars().filter(|c| !c.is_control()).nth(MAX).is_some() {
        out.push('…');
    }
    out
}

/// `text` as one shell word: as it is when it holds only characters no shell reads, else in
/// single quotes (a quote inside closed, escaped and reopened).
pub fn shell_word(text: &str) -> String {
    let plain = !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,:/=+@%".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
