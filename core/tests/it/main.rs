//! Integration tests of the public API.

mod animate;
mod formats;
mod golden;
mod optimal;
mod properties;
mod stages;
