//! Benchmarks of the schedule generators (filled in by the families' authors).
fn main() {}
