//! Metrics: hot-path counters, per-subtask time accounting, and the
//! readings and reports made of them.

pub mod counters;
pub mod latency;
pub mod report;
pub mod subtask;
pub mod worker;

pub use counters::{ChannelCounters, Counter};
pub use latency::{LatencyGranularity, LatencyOptions, LatencySource, LatencyStats};
pub use report::{
    BackpressureLevel, GaugeSummary, IoRates, MetricsSnapshot, SubtaskSnapshot, SubtaskSummary,
    TimeShares,
};
pub use subtask::{SubtaskId, SubtaskMetrics, TimeState};
pub use worker::WorkerMetrics;

#[cfg(test)]
mod tests;
