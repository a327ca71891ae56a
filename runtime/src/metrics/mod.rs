//! Metrics: hot-path counters, per-subtask time accounting, and the
//! readings and reports made of them.

pub mod counters;
pub mod report;
pub mod subtask;

pub use counters::{ChannelCounters, Counter, WorkerMetrics};
pub use report::{
    BackpressureLevel, GaugeSummary, MetricsSnapshot, SubtaskSnapshot, SubtaskSummary, TimeShares,
};
pub use subtask::{SubtaskId, SubtaskMetrics, TimeState};

#[cfg(test)]
mod tests;
