//! Schedule families: one generator per file, each returning per-device pass orders only.
//!
//! [`Family`] is a family's entry; [`crate::registry`] lists them all. A generator uses the
//! layers below it (params, schedule, sim's builder) and other generators; never the
//! registry, the search, formats or drawing.

pub(crate) mod chimera;
pub(crate) mod dualpipe;
pub(crate) mod dualpipe_recipe;
pub(crate) mod dualpipe_v;
mod family;
pub mod formula;
pub(crate) mod gpipe;
pub(crate) mod group_interleaved;
pub(crate) mod hanayo;
pub(crate) mod interlaced_vocab;
pub(crate) mod interleaved;
pub(crate) mod interleaved_zb;
pub(crate) mod one_f_one_b;
pub(crate) mod one_f_one_b_v;
pub(crate) mod seq1f1b;
pub(crate) mod v_auto;
pub(crate) mod v_blocks;
pub(crate) mod v_common;
pub(crate) mod v_half_min;
pub(crate) mod v_half_vocab;
pub(crate) mod vocab_1;
pub(crate) mod vocab_1f1b;
pub(crate) mod vocab_2;
pub(crate) mod vocab_common;
pub(crate) mod zb_auto;
pub(crate) mod zb_h1;
pub(crate) mod zb_h2;
pub(crate) mod zb_v;
pub(crate) mod zb_v_handcrafted;

pub(crate) use family::{count_option, per_chunk, per_device_microbatch};
pub use family::{
    unused_vocabulary, Family, FamilyGroup, FamilyOption, OptionDefault, Paper, Prediction, SlowSearch, ZERO_BUBBLE,
    ZERO_BUBBLE_V,
};
#[cfg(test)]
pub(crate) use family::{A2A_OVERLAP_FAMILIES, VOCABULARY_FAMILIES};
pub use formula::BubbleQuantity;

#[cfg(test)]
mod appendix_a;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod v_half_vocab_tests;
#[cfg(test)]
mod vocab_tests;
