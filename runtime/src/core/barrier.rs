//! How checkpoint barriers are aligned and sent: the mode every task,
//! gate and output of a job shares.

use std::time::Duration;

/// How a gate (and the outputs of its task) treat checkpoint barriers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierMode {
    /// `AT_LEAST_ONCE`: inputs are never held back.
    AtLeastOnce,
    /// `EXACTLY_ONCE`, aligned checkpoints.
    Aligned,
    /// `EXACTLY_ONCE`, unaligned checkpoints from the start.
    Unaligned,
    /// `EXACTLY_ONCE`, aligned until alignment (or a barrier waiting for
    /// credit in an output queue) takes longer than this, then unaligned.
    AlignedWithTimeout(Duration),
}

impl BarrierMode {
    /// The mode for `execution.checkpointing.mode` (exactly-once or not),
    /// `execution.checkpointing.unaligned.enabled` and
    /// `execution.checkpointing.aligned-checkpoint-timeout`.
    pub fn of(exactly_once: bool, unaligned: bool, aligned_timeout: Duration) -> Self {
        match (exactly_once, unaligned) {
            (false, _) => Self::AtLeastOnce,
            (true, false) => Self::Aligned,
            (true, true) if aligned_timeout.is_zero() => Self::Unaligned,
            (true, true) => Self::AlignedWithTimeout(aligned_timeout),
        }
    }

    /// Whether barriers may overtake data in this mode.
    pub fn may_overtake(self) -> bool {
        matches!(self, Self::Unaligned | Self::AlignedWithTimeout(_))
    }
}
