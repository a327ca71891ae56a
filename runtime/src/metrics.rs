//! Per-worker counters that the control thread reads for progress lines and
//! the final report.
//!
//! Workers publish into shared atomics in batches (a sink every 1,024
//! records, a source once per poll), never per record, so the hot path has
//! no atomic read-modify-write; the control thread only reads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A shared, monotonically increasing count.
#[derive(Clone, Debug, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    /// Adds `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        if n != 0 {
            self.0.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counters of one worker.
#[derive(Clone, Debug, Default)]
pub struct WorkerMetrics {
    /// Records emitted by the worker's source subtasks.
    pub source_records: Counter,
    /// Records that reached the worker's sink subtasks.
    pub sink_records: Counter,
    /// Times the worker parked because it had nothing to do.
    pub parks: Counter,
}

/// A point-in-time copy of every worker's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// Per worker: records out of its sources.
    pub source_records: Vec<u64>,
    /// Per worker: records into its sinks.
    pub sink_records: Vec<u64>,
    /// Per worker: parks.
    pub parks: Vec<u64>,
}

impl MetricsSnapshot {
    /// Reads all workers' counters.
    pub fn read(workers: &[WorkerMetrics]) -> Self {
        Self {
            source_records: workers.iter().map(|w| w.source_records.get()).collect(),
            sink_records: workers.iter().map(|w| w.sink_records.get()).collect(),
            parks: workers.iter().map(|w| w.parks.get()).collect(),
        }
    }

    /// Records into all sinks.
    pub fn total_sink_records(&self) -> u64 {
        self.sink_records.iter().sum()
    }
}
