//! Names as users type them: the normal form names are compared in, and the closest of a
//! list to a name that matches none (the `did you mean` of every unknown-name error).

/// `name` lower-cased without separators (`-`, `_`, `.`, spaces): the form names are
/// compared in.
pub fn normal(name: &str) -> String {
    name.chars().filter(|c| !matches!(c, '-' | '_' | '.' | ' ')).flat_map(char::to_lowercase).collect()
}

/// The name of `names` closest to `typed`, compared in [`normal`] form: one that contains what
/// was typed (the shortest), then one that what was typed contains (the longest), then the
/// closest by edit distance (at most 3).
pub fn closest<'a>(typed: &str, names: &[&'a str]) -> Option<&'a str> {
    let typed = normal(typed);
    let containing = names.iter().filter(|n| typed.len() >= 2 && normal(n).contains(&typed)).min_by_key(|n| n.len());
    let contained = || names.iter().filter(|n| typed.contains(&normal(n))).max_by_key(|n| n.len());
    let nearest = || {
        names
            .iter()
            .map(|n| (strsim::levenshtein(&typed, &normal(n)), n))
            .filter(|(d, _)| *d <= 3)
            .min_by_key(|(d, _)| *d)
    };
    containing.or_else(contained).or_else(|| nearest().map(|(_, n)| n)).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_name_prefers_containment_then_edit_distance() {
        let names = ["zb-v", "zb-v-handcrafted", "hanayo", "1f1b"];
        assert_eq!(closest("zb-v-hand", &names), Some("zb-v-handcrafted"));
        assert_eq!(closest("hanay", &names), Some("hanayo"));
        assert_eq!(closest("1f1v", &names), Some("1f1b"));
        assert_eq!(closest("zzzzzzzz", &names), None);
        // Edit distance counts characters, not bytes, and stops at 3.
        assert_eq!(closest("hänayö", &names), Some("hanayo"));
        assert_eq!(closest("1fxyzw", &["1f1b"]), None, "4 edits away");
    }
}
