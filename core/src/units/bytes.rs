//! Byte sizes with units: `80GiB`, `512 MiB`, `1.5e9`, read and printed.

/// One GiB in bytes.
pub const GIB: f64 = 1_073_741_824.0;
/// One MiB in bytes.
pub const MIB: f64 = 1_048_576.0;

const UNITS: [(&str, f64); 13] = [
    ("pib", 1_125_899_906_842_624.0),
    ("tib", 1_099_511_627_776.0),
    ("gib", 1_073_741_824.0),
    ("mib", 1_048_576.0),
    ("kib", 1024.0),
    ("pb", 1e15),
    ("tb", 1e12),
    ("gb", 1e9),
    ("mb", 1e6),
    ("kb", 1e3),
    ("t", 1_099_511_627_776.0),
    ("g", 1_073_741_824.0),
    ("b", 1.0),
];

/// The binary size units people write, largest first (the ones sizes are shown in).
pub const BYTE_UNITS: [(&str, f64); 4] =
    [("TiB", 1_099_511_627_776.0), ("GiB", 1_073_741_824.0), ("MiB", 1_048_576.0), ("KiB", 1024.0)];

/// The largest of [`BYTE_UNITS`] that `bytes` reaches, or `("B", 1)`.
pub fn byte_unit(bytes: f64) -> (&'static str, f64) {
    BYTE_UNITS.iter().copied().find(|&(_, size)| bytes.abs() >= size).unwrap_or(("B", 1.0))
}

/// Why a text is not a byte size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadSize {
    /// Not a number with an optional unit.
    NotASize,
    /// Negative or not finite.
    OutOfRange,
}

/// Reads a byte size: a number, optionally followed by a unit (`B`, `KB`/`MB`/`GB`/`TB`/`PB` in
/// powers of 1000, `KiB`/`MiB`/`GiB`/`TiB`/`PiB` in powers of 1024, `G`/`T` as GiB/TiB), any
/// case.
///
/// # Errors
/// [`BadSize`] for anything else, negative or non-finite sizes.
pub fn parse_size(text: &str) -> Result<f64, BadSize> {
    let lower = text.trim().to_ascii_lowercase();
    let (number, factor) = UNITS
        .iter()
        .find_map(|(unit, factor)| lower.strip_suffix(unit).map(|n| (n.trim().to_string(), *factor)))
        .unwrap_or((lower.clone(), 1.0));
    let value: f64 = number.parse().map_err(|_| BadSize::NotASize)?;
    let bytes = value * factor;
    if !bytes.is_finite() || bytes < 0.0 {
        return Err(BadSize::OutOfRange);
    }
    Ok(bytes)
}

/// A byte size as [`parse_size`] reads it back exactly: `80GiB` or `512MiB` when it is a whole
/// number of them, else the number of bytes.
pub fn size_text(bytes: f64) -> String {
    for (name, size) in &BYTE_UNITS[..3] {
        let n = bytes / size;
        if n >= 1.0 && n.fract() == 0.0 {
            return format!("{n}{name}");
        }
    }
    bytes.to_string()
}

/// A byte size for people: `80 GiB`, `1.5 MiB`, `512 B`.
pub fn format_bytes(bytes: f64) -> String {
    let (name, size) = byte_unit(bytes);
    format!("{} {name}", super::number::format_number(bytes / size, if size > 1.0 { 2 } else { 0 }))
}

/// [`format_bytes`] rounded up at its precision: a need shown as a limit that holds it.
pub fn format_bytes_up(bytes: f64) -> String {
    let (name, size) = byte_unit(bytes);
    let decimals = if size > 1.0 { 2 } else { 0 };
    format!("{} {name}", super::number::format_number(super::number::round_up(bytes / size, decimals), decimals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_both_unit_systems() {
        let b = |s: &str| parse_size(s).unwrap();
        assert_eq!(b("80GiB"), 80.0 * GIB);
        assert_eq!(b("80 gib"), b("80G"));
        assert_eq!(b("512MiB"), 512.0 * MIB);
        assert_eq!(b("1.5GB"), 1.5e9);
        assert_eq!(b("1000"), 1000.0);
        assert_eq!(b("7B"), 7.0);
        // The cap messages name 1PiB: it reads back.
        assert_eq!(b("1PiB"), 1024.0 * b("1TiB"));
        assert_eq!(b("2 pb"), 2e15);
        for bad in ["", "GiB", "80 parsecs"] {
            assert_eq!(parse_size(bad), Err(BadSize::NotASize), "{bad}");
        }
        for bad in ["-1GiB", "inf", "1e400"] {
            assert_eq!(parse_size(bad), Err(BadSize::OutOfRange), "{bad}");
        }
    }

    #[test]
    fn sizes_print_in_binary_units() {
        assert_eq!(format_bytes(80.0 * GIB), "80 GiB");
        assert_eq!(format_bytes(1536.0), "1.5 KiB");
        assert_eq!(format_bytes(12.0), "12 B");
        for v in [80.0 * GIB, 512.0 * MIB, 3.0, 1.5e9] {
            assert_eq!(parse_size(&size_text(v)), Ok(v), "{v}");
        }
    }
}
