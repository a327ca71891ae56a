//! What an input gate holds of its inputs' data before processing it: the
//! buffer being read, the events taken out of a channel ahead of their turn
//! (in the barrier modes that may overtake) and restored channel state; and
//! what an unaligned checkpoint asks of it: the data a barrier overtook,
//! and how long the waiting data takes to drain. Flink keeps the like in
//! its input channels' receive queues (a `RemoteInputChannel`'s, whose
//! `ChannelStatePersister` records them up to the barrier) and replays
//! restored channel state through `RecoveredInputChannel`s.

use std::collections::VecDeque;
use std::time::Duration;

use weir_net::{ChannelEvent, ChannelReceiver, NetworkBuffer};

use crate::exchange::alignment::BarrierAligner;
use crate::exchange::throughput::Throughput;

/// Records to read: a buffer of a channel, or restored channel state.
pub(super) enum Data {
    Net(NetworkBuffer),
    Restored(Vec<u8>),
}

impl Data {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Data::Net(b) => b.as_bytes(),
            Data::Restored(v) => v,
        }
    }
}

/// An event taken out of its channel ahead of its turn, or restored
/// channel state, waiting to be processed.
pub(super) enum Pending {
    Event(ChannelEvent),
    Restored(Vec<u8>),
}

impl Pending {
    /// The records it carries.
    pub(super) fn records(&self) -> &[u8] {
        match self {
            Pending::Event(ChannelEvent::Buffer(b)) => b.as_bytes(),
            Pending::Event(_) => &[],
            Pending::Restored(v) => v,
        }
    }
}

/// A buffer being read, and where.
pub(super) struct Reading {
    pub(super) channel: usize,
    pub(super) data: Data,
    pub(super) pos: usize,
}

/// An unaligned snapshot just started: the rest of the buffer being read
/// and the events queued are data its barrier overtook, on the inputs
/// whose barrier is still to come; hands them to `aligner`'s capture.
pub(super) fn capture_held(
    reading: Option<&Reading>,
    pending: &[VecDeque<Pending>],
    aligner: &mut BarrierAligner,
) {
    if let Some(r) = reading {
        if aligner.is_capturing(r.channel) {
            aligner.capture_records(r.channel, &r.data.bytes()[r.pos..]);
        }
    }
    for (c, queue) in pending.iter().enumerate() {
        if aligner.is_capturing(c) {
            for item in queue {
                aligner.capture_records(c, item.records());
            }
        }
    }
}

/// How long the data waiting on a gate's inputs — the buffers in their
/// rings and the records in their queues — would take to drain at the
/// gate's recent rate.
pub(super) fn expected_drain(
    receivers: &[ChannelReceiver],
    pending: &[VecDeque<Pending>],
    throughput: &Throughput,
) -> Duration {
    let buffers: usize = receivers.iter().map(ChannelReceiver::queued).sum();
    let bytes: usize = pending.iter().flatten().map(|p| p.records().len()).sum();
    throughput.drain_time(buffers, bytes)
}
