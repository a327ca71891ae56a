//! How checkpoint barriers are aligned and sent: the mode every task,
//! gate and output of a job shares, and the mode one barrier is treated
//! in (a savepoint's is always aligned).

use std::time::Duration;

use weir_net::BarrierKind;

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

    /// The mode a barrier of `kind` is sent and aligned in under this
    /// job-wide mode: a savepoint's barrier is aligned without a timeout
    /// in exactly-once mode (and at least once otherwise, holding no
    /// in-flight data either way), as Flink's
    /// `CheckpointOptions.forConfig` gives savepoints `alignedNoTimeout`.
    #[inline]
    pub fn for_barrier(self, kind: BarrierKind) -> Self {
        match self {
            Self::AtLeastOnce => Self::AtLeastOnce,
            _ if kind.must_align() => Self::Aligned,
            mode => mode,
        }
    }

    /// Whether barriers may overtake data in this mode.
    pub fn may_overtake(self) -> bool {
        matches!(self, Self::Unaligned | Self::AlignedWithTimeout(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_savepoint_barrier_is_aligned_in_every_exactly_once_mode() {
        let timeout = BarrierMode::AlignedWithTimeout(Duration::from_millis(5));
        for mode in [BarrierMode::Aligned, BarrierMode::Unaligned, timeout] {
            assert_eq!(
                mode.for_barrier(BarrierKind::Savepoint),
                BarrierMode::Aligned
            );
            assert_eq!(mode.for_barrier(BarrierKind::Checkpoint), mode);
        }
        let alo = BarrierMode::AtLeastOnce;
        assert_eq!(alo.for_barrier(BarrierKind::Savepoint), alo);
    }
}
