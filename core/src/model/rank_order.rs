//! How ranks fill nodes: tensor parallelism innermost, then the data-parallel replicas of a
//! stage or the devices of a pipeline. The order decides which hops and which gradient
//! reductions cross the network. Uses only errors and units.

use crate::error::{Field, ParamError};

/// How ranks fill nodes after tensor parallelism, which is always innermost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum RankOrder {
    /// TP, then data parallelism, then pipeline stages outermost (Megatron's default order).
    #[default]
    TpDpPp,
    /// TP, then pipeline stages, then data parallelism outermost.
    TpPpDp,
}

impl RankOrder {
    /// Every order.
    pub const ALL: [RankOrder; 2] = [RankOrder::TpDpPp, RankOrder::TpPpDp];

    /// The name the CLI and the URL use.
    pub fn name(self) -> &'static str {
        match self {
            RankOrder::TpDpPp => "tp-dp-pp",
            RankOrder::TpPpDp => "tp-pp-dp",
        }
    }

    /// The order called `text`.
    ///
    /// # Errors
    /// A [`ParamError`] naming the orders there are.
    pub fn parse(text: &str) -> Result<RankOrder, ParamError> {
        let t = text.trim().to_ascii_lowercase();
        RankOrder::ALL.into_iter().find(|o| o.name() == t).ok_or_else(|| {
            let shown: String = crate::units::clean_text(text).chars().take(20).collect();
            ParamError::new(Field::RankOrder, format!("unknown rank order `{shown}`"))
                .hint("expected tp-dp-pp (Megatron's: replicas of a stage side by side) or tp-pp-dp (a whole pipeline side by side)")
        })
    }
}
