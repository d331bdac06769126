//! Page components, one per file.

mod attribution;
mod chart;
pub mod compare_all;
mod controls;
mod costs;
mod embed;
mod errors;
mod export;
mod header;
mod import;
mod inputs;
mod measured;
mod model;
mod playback;
mod progress;
mod screen;
mod stats;
mod trade;

pub use attribution::AttributionBar;
pub use chart::ChartCard;
pub use compare_all::CompareAllCard;
pub use controls::{Controls, SettingsPanel};
pub use costs::CostInputs;
pub use embed::EmbedView;
pub use errors::ErrorBanner;
pub use export::{current_svg, download, ExportMenu};
pub use header::Header;
pub use import::ImportPanel;
pub use inputs::{NumberField, NumberKind};
pub use model::{DerivedTable, ModelPanel, SizeLimitField};
pub use playback::{ChartFrame, Playback, BASE_SECONDS};
pub use progress::{EngineNote, Progress, SHOW_AFTER_MS};
pub use screen::{follow_system_theme, split_flags, FlagText};
pub use stats::{BottleneckVerdict, CompareTable, DeviceTable, StatTiles};
pub use trade::{FitButton, TradeInputs};
