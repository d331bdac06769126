//! Planning: which schedule for a run. Sweeps over families and sizes ([`sweep`]), the
//! memory/time Pareto front ([`pareto`]), and the search for the fastest plan under a memory
//! limit ([`search`]) on one split of the GPUs or on every split ([`mesh`]), trading recompute and offload for memory where it must ([`trade`]). Pure: the CLI runs the pieces on its cores, the app in a worker.

pub mod balance;
pub mod export;
pub mod mesh;
pub mod pareto;
pub mod search;
pub mod sweep;
pub mod trade;

pub use balance::{balanced_counts, balanced_layout, own_ends_layouts};
pub use export::{export_best, PlanExport};
pub use mesh::{meshes, Mesh, MeshPins, MeshSkip, Meshes, MAX_MESHES};
pub use pareto::{dominates, front, ParetoPoint};
pub use search::{
    all_families, attribute_plan, device_params, evaluate, fit_trade, layout_candidates, microbatch_candidates, plan,
    Candidate, CostSource, Outcome, Plan, PlanSearch, PlanSpec, StaticMemory, BYTES_PER_PARAMETER,
    MAX_PLAN_MICROBATCHES_PER_DEVICE,
};
pub use sweep::{
    parse_counts, parse_microbatches, parse_schedules, run_one, sweep, InvalidRun, RunSpec, StepInputs, Sweep,
    SweepRun, SweepSpec, MAX_SWEEP_PASSES, MAX_SWEEP_RUNS,
};
pub use trade::{describe as describe_trade, ladder, per_step, TradeChoice, TradeSearch, TradeSpec};
