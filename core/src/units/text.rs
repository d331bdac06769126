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

/// Indices in words, ascending: `0`, `0 and 3`, `0, 3 and 5`; a run of three or more in a row
/// as `2 to 4` (`0, 2 to 4 and 7`). Empty for none.
pub fn index_list(items: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let mut j = i;
        while j + 1 < items.len() && items[j + 1] == items[j] + 1 {
            j += 1;
        }
        if j >= i + 2 {
            parts.push(format!("{} to {}", items[i], items[j]));
        } else {
            parts.extend(items[i..=j].iter().map(usize::to_string));
        }
        i = j + 1;
    }
    match parts.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_read_as_a_list_and_only_runs_as_ranges() {
        assert_eq!(index_list(&[]), "");
        assert_eq!(index_list(&[2]), "2");
        assert_eq!(index_list(&[0, 3]), "0 and 3");
        assert_eq!(index_list(&[0, 1]), "0 and 1");
        assert_eq!(index_list(&[0, 3, 5]), "0, 3 and 5");
        assert_eq!(index_list(&[2, 3, 4]), "2 to 4");
        assert_eq!(index_list(&[0, 2, 3, 4, 7]), "0, 2 to 4 and 7");
    }
}
