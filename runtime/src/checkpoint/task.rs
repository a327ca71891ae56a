//! What a task needs to take part in checkpoints.

use std::sync::Arc;

use crate::checkpoint::signals::CheckpointSignals;

/// What a task needs to take part in checkpoints.
pub struct TaskCheckpointing {
    /// Triggers and completions.
    pub signals: Arc<CheckpointSignals>,
    /// The worker's snapshot writer.
    pub writer: crate::checkpoint::writer::SnapshotWriter,
    /// How barriers are aligned and sent: a source's snapshot is unaligned
    /// from the start in [`BarrierMode::Unaligned`](crate::core::barrier::BarrierMode::Unaligned).
    pub barrier_mode: crate::core::barrier::BarrierMode,
}
