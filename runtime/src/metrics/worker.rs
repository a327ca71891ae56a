//! A worker's counters, and the subtasks it registered: what the control
//! thread reads for progress lines and the run's summary.

use std::sync::{Arc, OnceLock};

use crate::metrics::counters::Counter;
use crate::metrics::subtask::SubtaskEntry;

/// Counters of one worker.
#[derive(Clone, Debug, Default)]
pub struct WorkerMetrics {
    /// Records emitted by the worker's source subtasks.
    pub source_records: Counter,
    /// Records that reached the worker's sink subtasks.
    pub sink_records: Counter,
    /// Times the worker parked because it had nothing to do.
    pub parks: Counter,
    /// Parks while the worker's core was shared (it waited for a CPU; see
    /// `exec::spin_gate`): it parked without spinning first.
    pub contended_parks: Counter,
    /// Times the control thread interrupted the worker's sleep because it
    /// slept past its wake-up (see `exec::rescue`).
    pub rescues: Counter,
    /// The worker's subtasks, registered once it has built them.
    pub(crate) subtasks: Arc<OnceLock<Vec<SubtaskEntry>>>,
}
