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
        return Ok(v);
    }
    if !units.bytes() {
        return Err(LimitError::NeedsModel);
    }
    parse_bytes(text, Field::MemLimit).map_err(LimitError::Bad)
}

/// Reads a byte size for `field` (see [`parse_size`] for the units).
///
/// # Errors
/// A [`ParamError`] on `field` for anything else, negative or non-finite sizes.
pub fn parse_bytes(text: &str, field: Field) -> Result<f64, ParamError> {
    let t = text.trim();
    parse_size(t).map_err(|bad| match bad {
        BadSize::NotASize => {
            ParamError::new(field, format!("{} must be a size like 80GiB or 512MiB, found `{t}`", field.name()))
                .hint("units: B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)")
        }
        BadSize::OutOfRange => {
            ParamError::new(field, format!("{} must be a non-negative size, found `{t}`", field.name()))
                .hint("write e.g. 80GiB for an 80 GB GPU's memory")
        }
    })
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
    }
}
