//! What travels in a channel's ring, in order: data buffers, checkpoint
//! barriers, watermarks, the end of data and the end of a partition.
//!
//! Barriers and watermarks ride in the same FIFO as data, which is what makes
//! an aligned snapshot consistent and event time monotone per channel. An
//! unaligned checkpoint's barrier takes the channel's priority path instead
//! ([`PriorityBarrier`]) and overtakes the data.

use crate::buffer::NetworkBuffer;

/// A checkpoint barrier: everything before it on a channel belongs to
/// checkpoint `id`, everything after it to later ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointBarrier {
    /// Checkpoint id, increasing from 1.
    pub id: u64,
    /// Wall-clock milliseconds when the coordinator triggered it.
    pub timestamp_ms: u64,
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
