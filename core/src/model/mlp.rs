//! The MLP's kind, and the size a model card gives for it: a GELU MLP's width, or a SwiGLU
//! MLP's intermediate size. The cost formulas take one number, the width of the equivalent
//! two-matrix MLP, from [`Mlp::width`]. Uses nothing but the error type.

use crate::error::{Field, ParamError};

/// The kind of a transformer layer's MLP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum Mlp {
    /// Two matrices, `H × ffn` and `ffn × H`, with GELU between (GPT-2, the Zero Bubble
    /// paper's models); the default, of width `4H`.
    #[default]
    Gelu,
    /// Three matrices of intermediate size `ffn` (gate, up, down), SiLU-gated (Llama). Its
    /// FLOPs, weights and the bytes its elementwise work reads, writes and keeps are those of
    /// a two-matrix MLP of width `1.5 × ffn` (Megatron's FLOP count does the same).
    Swiglu,
}

impl Mlp {
    /// Both kinds, in menu order.
    pub const ALL: [Mlp; 2] = [Mlp::Gelu, Mlp::Swiglu];

    /// The name the CLI and the URL take: `gelu`, `swiglu`.
    pub fn name(self) -> &'static str {
        match self {
            Mlp::Gelu => "gelu",
            Mlp::Swiglu => "swiglu",
        }
    }

    /// What the size `ffn` means for this kind, for labels: `MLP width`, `intermediate size`.
    pub fn size_name(self) -> &'static str {
        match self {
            Mlp::Gelu => "MLP width",
            Mlp::Swiglu => "intermediate size",
        }
    }

    /// Reads a kind by name (any case).
    ///
    /// # Errors
    /// A [`ParamError`] on [`Field::Mlp`] naming the kinds.
    pub fn parse(text: &str) -> Result<Mlp, ParamError> {
        let t = text.trim();
        Mlp::ALL.into_iter().find(|m| m.name().eq_ignore_ascii_case(t)).ok_or_else(|| {
            ParamError::new(
                Field::Mlp,
                format!(
                    "mlp must be gelu or swiglu, found `{}`",
                    crate::units::clean_text(t).chars().take(40).collect::<String>()
                ),
            )
            .hint("gelu: two matrices of width ffn (GPT-2); swiglu: three of intermediate size ffn (Llama)")
        })
    }

    /// The size a model card gives when it gives none: `4H` for GELU, and for SwiGLU the
    /// intermediate size of the same width, `8H/3` (rounded down).
    pub fn default_size(self, hidden: u32) -> u32 {
        match self {
            Mlp::Gelu => hidden.saturating_mul(4),
            Mlp::Swiglu => u32::try_from(u64::from(hidden) * 8 / 3).unwrap_or(u32::MAX),
        }
    }

    /// The width of the two-matrix MLP with the same cost as this kind at size `ffn`.
    pub fn width(self, ffn: u32) -> f64 {
        match self {
            Mlp::Gelu => f64::from(ffn),
            Mlp::Swiglu => 1.5 * f64::from(ffn),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swiglu_at_its_intermediate_size_is_the_width_the_presets_used() {
        // Llama 3 8B's model card: SwiGLU, intermediate size 14336; as a two-matrix MLP, 21504.
        assert_eq!(Mlp::Swiglu.width(14_336), 21_504.0);
        assert_eq!(Mlp::Gelu.width(21_504), 21_504.0);
        assert_eq!(Mlp::Gelu.default_size(1024), 4096);
        assert!((Mlp::Swiglu.width(Mlp::Swiglu.default_size(3072)) - 4.0 * 3072.0).abs() < 2.0);
    }

    #[test]
    fn kinds_read_by_name_and_refuse_others_with_a_hint() {
        assert_eq!(Mlp::parse("SwiGLU"), Ok(Mlp::Swiglu));
        assert_eq!(Mlp::parse(" gelu "), Ok(Mlp::Gelu));
        let e = Mlp::parse("relu").unwrap_err();
        assert_eq!(e.field, Field::Mlp);
        assert!(e.message.contains("mlp must be gelu or swiglu, found `relu`"), "{}", e.message);
        assert!(e.hints.iter().any(|h| h.contains("swiglu")));
    }
}
