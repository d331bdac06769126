//! Integration tests of the public API.

mod animate;
mod architecture;
mod formats;
mod gaps;
mod golden;
mod measured;
mod optimal;
mod pareto;
mod properties;
mod pytorch;
mod stages;
