//! Byte sizes typed into a setting: [`crate::units::parse_size`] with the setting's name in
//! the error.

use crate::error::{Field, ParamError};
use crate::units::{parse_size, BadSize, Units};

/// Why a memory limit as written cannot be read.
#[derive(Clone, Debug, PartialEq)]
pub enum LimitError {
    /// A size with a unit where memory is not bytes (costs do not come from a model).
    NeedsModel,
    /// Not a size.
    Bad(ParamError),
}

/// A memory limit as written: a number in mem-f's unit, or, where memory is bytes (costs from
/// a model, `units`), also a size with a unit (`80GiB`, `512MiB`). The rule the CLI's
/// `--mem-limit`, the permalink's `mem-limit` and the playground's size field share.
///
/// # Errors
/// [`LimitError::NeedsModel`] for a size without a model, [`LimitError::Bad`] for text that is
/// no size.
pub fn parse_limit(text: &str, units: Units) -> Result<f64, LimitError> {
    if let Ok(v) = text.trim().parse::<f64>() {
        // Above the cap: named as typed (9007199254740993 reads as …992).
        if v.is_finite() && v > crate::params::MAX_MEM_LIMIT {
            return Err(LimitError::Bad(crate::params::memory_range_error("mem-limit", &format!("`{}`", text.trim()))));
        }
        return Ok(v);
    }
    if !units.bytes() {
        return Err(LimitError::NeedsModel);
    }
    parse_bytes(text, Field::MemLimit).map_err(LimitError::Bad)
}

/// Reads a byte size for `field` (see [`parse_size`] for the units), at most
/// [`crate::params::MAX_MEM_LIMIT`].
///
/// # Errors
/// A [`ParamError`] on `field` for anything else, negative, non-finite or too large sizes.
pub fn parse_bytes(text: &str, field: Field) -> Result<f64, ParamError> {
    parse_memory(text, field, field.name())
}

/// [`parse_bytes`] for a setting named `what` in messages (`static-memory`), which echo the
/// text as given.
///
/// # Errors
/// As [`parse_bytes`].
pub fn parse_memory(text: &str, field: Field, what: &str) -> Result<f64, ParamError> {
    let t = text.trim();
    match parse_size(t) {
        Ok(v) if v <= crate::params::MAX_MEM_LIMIT => Ok(v),
        Ok(_) | Err(BadSize::OutOfRange) => Err(crate::params::memory_range_error(what, &format!("`{t}`"))),
        Err(BadSize::NotASize) => {
            Err(ParamError::new(field, format!("{what} must be a size like 80GiB or 512MiB, found `{t}`"))
                .hint("units: B, KB, MB, GB, TB, PB (powers of 1000) or KiB, MiB, GiB, TiB, PiB (powers of 1024)"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_errors_name_the_setting() {
        assert_eq!(parse_bytes(" 80GiB ", Field::MemLimit), Ok(80.0 * crate::units::GIB));
        for bad in ["", "GiB", "80 parsecs", "-1GiB", "inf"] {
            let e = parse_bytes(bad, Field::MemLimit).unwrap_err();
            assert!(e.to_string().starts_with("mem-limit must be"), "{bad}: {e}");
        }
        // Not finite or above the cap: one message, the text as typed, the cap as it reads back.
        assert_eq!(parse_bytes("1PiB", Field::MemLimit), Ok(crate::params::MAX_MEM_LIMIT));
        for bad in ["nan", "inf", "1e309", "-1GiB", "1025TiB", "9007199254740993"] {
            let e = parse_memory(bad, Field::MemLimit, "static-memory").unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "static-memory must be a finite size from 0 to 1PiB (1125899906842624 bytes), found `{bad}`"
                )),
                "{bad}: {e}"
            );
            assert!(!e.contains("non-negative"), "{e}");
        }
        let e = parse_limit("9007199254740993", Units::Model).unwrap_err();
        assert!(format!("{e:?}").contains("found `9007199254740993`"), "{e:?}");
    }
}
