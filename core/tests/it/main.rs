//! Integration tests of the public API.

mod formats;
mod golden;
mod properties;
mod stages;
