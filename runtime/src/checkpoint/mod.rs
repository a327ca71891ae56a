//! Checkpointing: Flink's asynchronous barrier snapshots on weir's
//! thread-per-core workers.
//!
//! - [`signals`]: the atomics through which the coordinator triggers
//!   checkpoints and announces their completion;
//! - [`coordinator`]: triggers, collects acknowledgements, writes manifests;
//! - [`snapshot`]: what a task hands over at an aligned barrier (frozen,
//!   copy-on-write views of its state) and the keyed-state visitor;
//! - [`writer`]: each worker's asynchronous snapshot writer;
//! - [`segment_file`]: segment files written through io_uring;
//! - [`table_block`]: the format of a keyed table written in slot order;
//! - [`storage`]: the checkpoint directory's layout and retention;
//! - [`restore`]: finding, verifying and reading a checkpoint;
//! - [`stats`]: per-checkpoint statistics and their history.
//!
//! Barrier injection lives in the source task, alignment in the input gate
//! ([`crate::gate::InputGate`]), the chain walk in
//! [`crate::operator::ChainControl::snapshot`].

use std::sync::Arc;

/// `WEIR_TRACE_CHECKPOINTS=1` prints every trigger, barrier, snapshot,
/// acknowledgement, completion and failure to stderr (for diagnosing a
/// stuck checkpoint).
pub(crate) fn trace_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("WEIR_TRACE_CHECKPOINTS").is_some_and(|v| v != "0"))
}

/// Milliseconds since the first trace line, to put on each line.
pub(crate) fn trace_ms() -> f64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
        * 1e3
}

macro_rules! trace {
    ($($arg:tt)*) => {
        if $crate::checkpoint::trace_enabled() {
            eprintln!("[checkpoint {:9.3} ms] {}", $crate::checkpoint::trace_ms(), format!($($arg)*));
        }
    };
}
pub(crate) use trace;

pub mod coordinator;
pub mod restore;
pub mod segment_file;
pub mod signals;
pub mod snapshot;
pub mod stats;
pub mod storage;
pub mod table_block;
pub mod writer;

pub use coordinator::{CheckpointCoordinator, CoordinatorMsg, CoordinatorOptions};
pub use restore::{find_latest, RestoredCheckpoint};
pub use signals::CheckpointSignals;
pub use snapshot::{KeyedStates, TaskSnapshot};
pub use stats::{CheckpointRecord, CheckpointSummary};
pub use storage::CheckpointStorage;

/// What a task needs to take part in checkpoints.
pub struct TaskCheckpointing {
    /// Triggers and completions.
    pub signals: Arc<CheckpointSignals>,
    /// The worker's snapshot writer.
    pub writer: writer::SnapshotWriter,
    /// How barriers are aligned and sent: a source's snapshot is unaligned
    /// from the start in [`BarrierMode::Unaligned`](crate::gate::BarrierMode::Unaligned).
    pub barrier_mode: crate::gate::BarrierMode,
}
