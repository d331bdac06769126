//! Integration tests of the public API.

mod animate;
mod formats;
mod gaps;
mod golden;
mod pareto;
mod optimal;
mod properties;
mod stages;
