//! Integration tests of the public API.

mod animate;
mod architecture;
mod docs;
mod formats;
mod gaps;
mod golden;
mod headline;
mod measured;
mod optimal;
mod pareto;
mod properties;
mod pytorch;
mod stages;
mod step;

/// The cases a proptest runs: `PROPTEST_CASES` when set to a number (so a long soak or a
/// quick check can change it), else `default`. `ProptestConfig::with_cases(n)` alone ignores
/// the variable.
fn proptest_cases(default: u32) -> proptest::prelude::ProptestConfig {
    let env = std::env::var("PROPTEST_CASES").ok();
    proptest::prelude::ProptestConfig::with_cases(env.and_then(|v| v.trim().parse().ok()).unwrap_or(default))
}
