//! PyTorch's schedule CSV: cell grammar, dialects, placement inference, SEND/RECV checks and
//! the `_add_send_recv` lowering. The rules are in the [module docs](super).

/// The two shapes of a PyTorch schedule file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CsvForm {
    /// Compute actions only (PyTorch's `compute_only`), lowered by PyTorch before running.
    ComputeOnly,
    /// Compute and SEND/RECV actions (PyTorch's `compute_comms`), run as written.
    ComputeComms,
}

mod comms;
mod export;
mod grammar;
mod import;
mod placement;

pub use export::export_pytorch_csv;
pub(super) use import::import;

#[cfg(test)]
mod tests;
