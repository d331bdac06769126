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
