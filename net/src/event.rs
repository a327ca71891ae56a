//! What travels in a channel's ring, in order: data buffers, checkpoint
//! barriers, watermarks, latency markers, the end of data and the end of a
//! partition.
//!
//! Barriers and watermarks ride in the same FIFO as data, which is what makes
//! an aligned snapshot consistent and event time monotone per channel. An
//! unaligned checkpoint's barrier takes the channel's priority path instead
//! ([`PriorityBarrier`]) and overtakes the data.

use crate::buffer::NetworkBuffer;

/// A checkpoint barrier: everything before it on a channel belongs to
/// checkpoint `id`, everything after it to later ones.
///
/// It carries what its snapshot is (Flink's barrier carries its
/// `CheckpointOptions`), so that every gate treats one snapshot alike
/// whatever its own configuration says: a savepoint's barrier is always
/// aligned. The kind is one byte: a barrier is 24 bytes, still smaller
/// than a buffer, so a [`ChannelEvent`] in the rings stays 40 bytes (a
/// test below holds it there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointBarrier {
    /// Checkpoint id, increasing from 1.
    pub id: u64,
    /// Wall-clock milliseconds when the coordinator triggered it.
    pub timestamp_ms: u64,
    /// A checkpoint's or a savepoint's barrier.
    pub kind: BarrierKind,
}

impl CheckpointBarrier {
    /// The barrier of ordinary checkpoint `id`, triggered at
    /// `timestamp_ms`.
    pub fn checkpoint(id: u64, timestamp_ms: u64) -> Self {
        Self {
            id,
            timestamp_ms,
            kind: BarrierKind::Checkpoint,
        }
    }
}

/// What a barrier's snapshot is, as far as moving the barrier goes
/// (Flink's `SnapshotType`): it decides whether the barrier may overtake
/// data and whether a gate may stop aligning it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BarrierKind {
    /// An ordinary checkpoint: aligned or unaligned, as the job is
    /// configured.
    #[default]
    Checkpoint,
    /// A savepoint (a stop's snapshot): always aligned, never overtaking
    /// data and never switching to unaligned on a timeout, so it holds no
    /// in-flight data and restores at any parallelism (Flink aligns every
    /// savepoint).
    Savepoint,
}

impl BarrierKind {
    /// True if every gate must align this barrier, whatever the job's
    /// barrier mode.
    #[inline]
    pub fn must_align(self) -> bool {
        self == Self::Savepoint
    }
}

/// Whether a stream currently produces watermarks (Flink's
/// `WatermarkStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatermarkStatus {
    /// The stream produces records and watermarks: it takes part in the
    /// minimum that is its receivers' event time.
    Active,
    /// The stream has nothing for now: its receivers' event time ignores it
    /// until it is active again.
    Idle,
}

/// A latency marker (Flink's `LatencyMarker`): stamped by a source subtask
/// when it was emitted, it travels in band behind the records before it,
/// so the time it took to reach a task is the time those records took.
/// 16 bytes: a [`ChannelEvent`] stays 40 (the buffer's unpooled flag holds its tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatencyMarker {
    /// When the source emitted it: nanoseconds on the process's monotonic
    /// metrics clock (every core of one process reads the same clock).
    pub marked_ns: u64,
    /// The source's stage (its position in the job's stages).
    pub source_stage: u32,
    /// The source subtask that emitted it.
    pub source_subtask: u32,
}

/// One event in a channel.
#[derive(Debug)]
pub enum ChannelEvent {
    /// A buffer of serialized records, owned by the receiver until it is
    /// returned to the sender's pool.
    Buffer(NetworkBuffer),
    /// No record with an event time at or below this (ms) follows on this
    /// channel.
    Watermark(i64),
    /// The sender stopped (idle) or resumed (active) producing watermarks;
    /// an idle channel does not hold back its receiver's event time.
    WatermarkStatus(WatermarkStatus),
    /// A checkpoint barrier.
    Barrier(CheckpointBarrier),
    /// A latency marker, on one channel of the sender's (it exists once in
    /// the job, as Flink's).
    LatencyMarker(LatencyMarker),
    /// The sender's input has ended: no record follows on this channel, but
    /// checkpoint barriers still may (the final checkpoint, which commits
    /// the last output of a bounded job, is taken after end of data).
    EndOfData,
    /// The sender's partition is finished: nothing follows.
    EndOfPartition,
}

/// A checkpoint barrier that overtakes the data of its channel (unaligned
/// checkpoints): it travels on the channel's priority path and says where
/// in the channel's sequence of events it stands.
#[derive(Debug)]
pub struct PriorityBarrier {
    /// The barrier.
    pub barrier: CheckpointBarrier,
    /// Events the sender had pushed into the data ring when it sent the
    /// barrier ([`crate::ChannelReceiver::received`] counts the receiver's
    /// side): those before this position precede the barrier.
    pub position: usize,
    /// Events the sender had queued for the channel but not yet pushed
    /// (no credit): they precede the barrier too and are handed over with
    /// it, by ownership, after the events before `position`.
    pub overtaken: Vec<ChannelEvent>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_barrier_kind_does_not_grow_ring_slots() {
        assert_eq!(std::mem::size_of::<CheckpointBarrier>(), 24);
        assert_eq!(
            std::mem::size_of::<ChannelEvent>(),
            40,
            "a barrier must stay smaller than a buffer event"
        );
    }
}
