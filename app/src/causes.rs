//! Why the bubble is there: the chart's gap shading is a view preference kept in the link. The
//! causes themselves ([`bubblescope::gaps::causes`]) are computed with each schedule, in the
//! worker for large ones, and arrive with it ([`crate::state::Extras`]): redrawing, zooming
//! or toggling the shading never re-simulates.

/// The URL key of the gap shading (`causes=1`), a view preference.
pub const CAUSES_KEY: &str = "causes";
