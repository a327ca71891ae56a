//! The receiving side of an exchange for one subtask: [`InputGate`] takes
//! events from its channels round-robin, lends each buffer's records to the
//! chain in place, returns the buffer to its owner's pool when done, and
//! handles checkpoint barriers, so that operators only ever see one
//! snapshot call per checkpoint.
//!
//! # Barriers
//!
//! What a barrier means — block an input, snapshot now, drop a stale copy,
//! switch to unaligned — is decided by the gate's [`BarrierAligner`] (see
//! [`crate::exchange::alignment`] for the barrier modes); the gate tells it
//! what arrived and acts on its answer. In the modes where barriers may
//! overtake data (unaligned, and aligned with a timeout), the data that
//! precedes an unaligned checkpoint's barrier on each input but was not
//! processed yet is *captured*: the rest of the buffer being read, the
//! events already taken out of the channel, and every event the channel
//! delivers up to its barrier. The gate takes those events out of the
//! channel's ring as soon as they are there (without waiting to process
//! them) and keeps them in a per-channel queue that is processed before the
//! ring, so the barrier of every input is found quickly even when
//! processing is slow; a [`PriorityBarrier`] says at which position of the
//! channel's sequence it stands and hands over the events its sender had
//! not pushed yet. Once every input's pre-barrier data is captured, the
//! gate offers the [`ChannelState`] to the task, which adds it to its
//! snapshot. Captured data is processed normally too: it is what the
//! operator state of the checkpoint does not reflect, and a restore replays
//! it ([`InputGate::restore_channel_state`]) before anything else.
//!
//! # Watermarks
//!
//! Watermarks and watermark statuses are taken in their turn like records
//! (so a capture's queued events keep their order too) and go to the gate's
//! [`WatermarkValve`]: when the minimum over the active inputs advances, or
//! every input becomes idle or one becomes active again, the gate passes it
//! down the chain ([`crate::chain::control::ChainControl::on_watermark`]) before
//! the next record.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use held::{Data, Pending, Reading};
use weir_net::{
    ChannelEvent, ChannelReceiver, CheckpointBarrier, LatencyMarker, PriorityBarrier, Wire,
};

use crate::chain::control::Collector;
use crate::checkpoint::signals::CheckpointSignals;
use crate::core::barrier::BarrierMode;
use crate::exchange::alignment::{
    AlignedBarrier, BarrierAction, BarrierAligner, ChannelState, PriorityAction,
};
use crate::exchange::debloat::BufferDebloater;
use crate::exchange::decoder::{Decoded, RecordDecoder, WireDecoder};
use crate::exchange::throughput::Throughput;
use crate::exchange::valve::{ValveOutput, WatermarkValve};
use crate::metrics::counters::{ChannelBytes, ChannelCounters};
use crate::metrics::latency;
use crate::metrics::subtask::SubtaskMetrics;

/// What [`InputGate::pump`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateStatus {
    /// Moved this many records and events; more may be waiting.
    Moved(usize),
    /// Snapshot now, then call [`InputGate::barrier_done`].
    Barrier(AlignedBarrier),
    /// Every input delivered end-of-data (reported once).
    DataEnded,
    /// Every channel delivered end-of-partition.
    Ended,
}

/// What [`InputGate::refill`] did.
enum Refill {
    Empty,
    Moved,
    Snapshot(AlignedBarrier),
}

/// `a` comes before `b` in a channel's (wrapping) sequence.
#[inline]
fn before(a: usize, b: usize) -> bool {
    (b.wrapping_sub(a) as isize) > 0
}

enum Next {
    Nothing,
    Moved,
    /// A watermark event that changes the gate's event time or status.
    Watermark(ValveOutput),
    Snapshot(AlignedBarrier),
    DataEnded,
    /// A latency marker, to record and pass on.
    Latency(LatencyMarker),
}

impl Next {
    /// A watermark event's outcome: passed on if the valve emits anything.
    fn of(o: ValveOutput) -> Self {
        if o.is_empty() {
            Next::Moved
        } else {
            Next::Watermark(o)
        }
    }
}

/// Most records between two looks at the priority path and the clock
/// while a buffer is read; fewer when records are slow to process (see
/// [`InputGate::pump`]).
const CHECK_EVERY: usize = 128;

/// Aim for a look at the priority path and the clock about this often.
const CHECK_PERIOD: Duration = Duration::from_micros(20);

/// Longest a pump reads before it returns, so the worker's other tasks
/// (a source injecting a barrier, say) get their turn even when records are
/// slow to process.
const PUMP_SLICE: Duration = Duration::from_micros(500);

/// The receiving side of an exchange for one subtask (see the module doc).
pub struct InputGate {
    receivers: Box<[ChannelReceiver]>,
    ended: Box<[bool]>,
    open: usize,
    data_ended: Box<[bool]>,
    data_open: usize,
    data_end_reported: bool,
    /// What barriers mean: blocked inputs, snapshots, the capture.
    aligner: BarrierAligner,
    next: usize,
    reading: Option<Reading>,
    pending: Box<[VecDeque<Pending>]>,
    /// Records between two looks at the priority path and the clock:
    /// [`CHECK_EVERY`] for fast records, down to 1 for slow ones.
    check_every: usize,
    /// The last pump stopped because no input was waiting.
    drained: bool,
    /// The pump in progress stopped for its budget (or its time slice).
    budget_stop: bool,
    /// Records read, and as last published.
    records: u64,
    published_records: u64,
    /// The watermark last published into the subtask's metrics.
    published_watermark: i64,
    bytes: ChannelBytes,
    /// What the gate reads: bytes of buffers taken, and its recent rate.
    throughput: Throughput,
    /// Buffer debloating: sizes the credit and buffers of the inputs.
    debloater: Option<BufferDebloater>,
    /// The event time over the inputs.
    valve: WatermarkValve,
    /// Latency markers taken since the last publish, with when (ns on the
    /// metrics clock).
    markers: Vec<(LatencyMarker, u64)>,
}

impl InputGate {
    /// A gate over `receivers` (one per sending subtask).
    pub fn new(receivers: Vec<ChannelReceiver>, mode: BarrierMode) -> Self {
        let n = receivers.len();
        Self {
            receivers: receivers.into_boxed_slice(),
            ended: vec![false; n].into_boxed_slice(),
            open: n,
            data_ended: vec![false; n].into_boxed_slice(),
            data_open: n,
            data_end_reported: false,
            aligner: BarrierAligner::new(n, mode),
            next: 0,
            reading: None,
            pending: (0..n).map(|_| VecDeque::new()).collect(),
            check_every: CHECK_EVERY,
            drained: false,
            budget_stop: false,
            records: 0,
            published_records: 0,
            published_watermark: i64::MIN,
            bytes: ChannelBytes::unshared(n),
            throughput: Throughput::new(Instant::now()),
            debloater: None,
            valve: WatermarkValve::new(n),
            markers: Vec::new(),
        }
    }

    /// Sizes the data in flight on the inputs to what the gate reads in
    /// the debloater's target time (buffer debloating, see
    /// [`crate::exchange::debloat`]): the gate tells it what it read and
    /// when it was idle, and announces each new target to its senders.
    pub fn with_debloater(mut self, debloater: BufferDebloater) -> Self {
        self.debloater = Some(debloater);
        self
    }

    /// What the debloater last announced, if the gate debloats.
    pub fn debloat_target(&self) -> Option<crate::exchange::debloat::DebloatTarget> {
        self.debloater.as_ref().map(BufferDebloater::current)
    }

    /// Lets the gate see checkpoint triggers (with an aligned checkpoint
    /// timeout): a checkpoint whose alignment cannot finish within the
    /// timeout switches to unaligned without waiting for a barrier.
    pub fn with_trigger_signals(mut self, signals: Arc<CheckpointSignals>) -> Self {
        self.aligner = self.aligner.with_trigger_signals(signals);
        self
    }

    /// Reports the bytes taken from each channel into `channels` (one per
    /// sending subtask, in the order of the receivers).
    pub fn with_channel_counters(mut self, channels: Vec<Arc<ChannelCounters>>) -> Self {
        assert_eq!(
            channels.len(),
            self.receivers.len(),
            "one channel counter per input channel"
        );
        self.bytes = ChannelBytes::new(channels);
        self
    }

    /// True if the last [`InputGate::pump`] stopped because no input was
    /// waiting (on the channels it may read), rather than for its budget,
    /// its time slice, an unavailable output or an event.
    pub fn drained(&self) -> bool {
        self.drained
    }

    /// Publishes the bytes taken per channel, and the records read into
    /// `metrics` (once per poll).
    pub(crate) fn publish(&mut self, metrics: &SubtaskMetrics) {
        self.bytes.publish(false);
        if self.records != self.published_records {
            self.published_records = self.records;
            metrics.publish_records_in(self.records);
        }
        let w = self.valve.current_watermark();
        if w != self.published_watermark {
            self.published_watermark = w;
            metrics.publish_input_watermark(w);
        }
        if !self.markers.is_empty() {
            metrics.record_latency(&self.markers);
            self.markers.clear();
        }
    }

    /// Number of input channels.
    pub fn channels(&self) -> usize {
        self.receivers.len()
    }

    /// Queues restored channel state (records of input `channel` that a
    /// checkpoint's barrier had overtaken) ahead of everything the channel
    /// delivers. Call before the first pump.
    pub fn restore_channel_state(&mut self, channel: usize, records: Vec<u8>) {
        if !records.is_empty() {
            self.pending[channel].push_back(Pending::Restored(records));
        }
    }

    /// When the gate must be pumped even without input: the end of an
    /// alignment's timeout.
    pub fn deadline(&self) -> Option<Instant> {
        self.aligner.deadline(Instant::now)
    }

    /// The channel state of an unaligned snapshot, once every input's data
    /// before the barrier has been captured (`Ok`), or the id of a
    /// checkpoint whose capture was abandoned for a newer one (`Err`): its
    /// snapshot cannot complete.
    pub fn take_channel_state(&mut self) -> Option<Result<ChannelState, u64>> {
        self.aligner.take_channel_state()
    }

    /// Moves up to about `budget` records into `out`, stopping early when
    /// `out` is unavailable (backpressure), nothing is waiting, a snapshot
    /// is due, or it has read for a while.
    #[inline]
    pub fn pump<T: Wire, C: Collector<T>>(&mut self, out: &mut C, budget: usize) -> GateStatus {
        self.pump_decoded(&WireDecoder::<T>::default(), out, budget)
    }

    /// [`pump`](Self::pump) with records decoded by `decoder`, which knows
    /// the channel each comes from (two-input stages, whose channels carry
    /// two record types).
    #[inline]
    pub fn pump_decoded<D: RecordDecoder, C: Collector<D::Record>>(
        &mut self,
        decoder: &D,
        out: &mut C,
        budget: usize,
    ) -> GateStatus {
        // Records are what moved minus the events (counted per event, so
        // the per-record loop does no extra work).
        let bytes_before = self.throughput.bytes();
        let (status, moved, events) = self.pump_counting(decoder, out, budget);
        self.records += (moved - events) as u64;
        self.drained =
            matches!(status, GateStatus::Moved(_)) && self.reading.is_none() && !self.budget_stop;
        if self.debloater.is_some() {
            self.debloat(moved > 0, self.throughput.bytes() - bytes_before);
        }
        status
    }

    /// Feeds the debloater what the last pump read and whether it ran dry;
    /// announces a new target to every input when there is one.
    #[cold]
    fn debloat(&mut self, moved: bool, bytes: u64) {
        let Some(d) = self.debloater.as_mut() else {
            return;
        };
        let now = Instant::now();
        if moved {
            d.on_data(now);
        }
        d.on_consumed(bytes);
        if self.drained {
            d.on_idle(now);
        }
        if let Some(t) = d.recalculate(now) {
            // In the checkpoint trace: debloating exists to shorten the
            // time barriers wait behind data.
            tracing::trace!(
                target: crate::core::log::CHECKPOINT,
                buffers = t.buffers,
                buffer_size = t.buffer_size,
                throughput_bytes_per_s = d.throughput_bytes_per_s().round(),
                "gate: debloat"
            );
            for r in self.receivers.iter() {
                r.announce(t.buffers, t.buffer_size);
            }
        }
    }

    #[inline]
    fn pump_counting<D: RecordDecoder, C: Collector<D::Record>>(
        &mut self,
        decoder: &D,
        out: &mut C,
        budget: usize,
    ) -> (GateStatus, usize, usize) {
        self.budget_stop = false;
        let started = Instant::now();
        self.throughput.sample(started);
        let mut last_check = started;
        let (mut moved, mut events) = (0, 0);
        // Records until the next look at the clock and the priority path,
        // across buffers (small buffers of slow records must not escape it).
        let mut left = self.check_every;
        let overtaking = self.aligner.mode().may_overtake();
        loop {
            if overtaking {
                if let Some(b) = self
                    .poll_priority()
                    .or_else(|| self.check_timeout(started))
                    .or_else(|| self.drain_capture())
                {
                    return (GateStatus::Barrier(b), moved, events);
                }
            }
            if let Some(reading) = self.reading.as_mut() {
                let bytes = reading.data.bytes();
                let channel = reading.channel;
                let mut pos = reading.pos;
                let mut interrupted = false;
                let check_every = &mut self.check_every;
                while pos < bytes.len() {
                    if !out.is_available() {
                        reading.pos = pos;
                        return (GateStatus::Moved(moved), moved, events);
                    }
                    // Up to `left` records in one call, so that the chain
                    // can run through them in one loop.
                    let mut records = Decoded {
                        decoder,
                        channel,
                        bytes,
                        pos,
                    };
                    let read = out.collect_many(&mut records, left);
                    pos = records.pos;
                    moved += read;
                    left -= read;
                    if left == 0 {
                        // Look about every CHECK_PERIOD: fewer records
                        // between looks when they are slow.
                        let now = Instant::now();
                        let took = now - last_check;
                        last_check = now;
                        if took > CHECK_PERIOD * 2 {
                            *check_every = (*check_every / 2).max(1);
                        } else if took < CHECK_PERIOD / 2 {
                            *check_every = (*check_every * 2).min(CHECK_EVERY);
                        }
                        left = *check_every;
                        if now - started >= PUMP_SLICE {
                            reading.pos = pos;
                            self.budget_stop = true;
                            return (GateStatus::Moved(moved), moved, events);
                        }
                        if overtaking && self.receivers.iter_mut().any(|r| r.has_priority()) {
                            interrupted = true;
                            break;
                        }
                    }
                }
                if interrupted {
                    self.reading.as_mut().expect("reading is set").pos = pos;
                    continue;
                }
                let Reading { channel, data, .. } = self.reading.take().expect("reading is set");
                if let Data::Net(buffer) = data {
                    self.receivers[channel].recycle(buffer);
                }
                if moved >= budget {
                    self.budget_stop = true;
                    return (GateStatus::Moved(moved), moved, events);
                }
            }
            if self.open == 0 {
                return (GateStatus::Ended, moved, events);
            }
            match self.next_event() {
                Next::Nothing => return (GateStatus::Moved(moved), moved, events),
                Next::Moved => {
                    moved += 1;
                    events += 1;
                }
                Next::Watermark(o) => {
                    moved += 1;
                    events += 1;
                    if let Some(w) = o.watermark {
                        out.on_watermark(w);
                    }
                    if let Some(s) = o.status {
                        out.on_watermark_status(s);
                    }
                }
                Next::Snapshot(b) => return (GateStatus::Barrier(b), moved, events),
                Next::DataEnded => return (GateStatus::DataEnded, moved, events),
                Next::Latency(m) => {
                    moved += 1;
                    events += 1;
                    self.markers.push((m, latency::now_ns()));
                    out.on_latency_marker(m);
                }
            }
        }
    }

    /// The combined watermark (`i64::MIN` before the first).
    pub fn current_watermark(&self) -> i64 {
        self.valve.current_watermark()
    }

    /// True if every input is idle.
    pub fn is_idle(&self) -> bool {
        self.valve.is_idle()
    }

    /// The snapshot of the barrier is taken: unblock every input.
    pub fn barrier_done(&mut self) {
        self.aligner.snapshot_taken();
    }

    /// An in-band barrier on input `c`, in its turn.
    fn on_barrier(&mut self, c: usize, barrier: CheckpointBarrier) -> Next {
        tracing::trace!(target: crate::core::log::CHECKPOINT, checkpoint = barrier.id, input = c, "gate: barrier");
        match self.aligner.on_barrier(c, barrier, Instant::now()) {
            BarrierAction::Stale | BarrierAction::Captured | BarrierAction::Wait => Next::Moved,
            BarrierAction::Snapshot(b) => Next::Snapshot(b),
            BarrierAction::StartCapture(b) => {
                self.capture_held();
                self.aligner.input_captured(c);
                Next::Snapshot(b)
            }
        }
    }

    /// Takes every priority barrier waiting; returns the snapshot one of
    /// them starts.
    fn poll_priority(&mut self) -> Option<AlignedBarrier> {
        let mut start = None;
        for c in 0..self.receivers.len() {
            while let Some(p) = self.receivers[c].recv_priority() {
                if let Some(b) = self.on_priority(c, p) {
                    start = Some(b);
                }
            }
        }
        start
    }

    /// A priority barrier on input `c`: the events before its position and
    /// those it overtook go to the input's queue, in order (captured if
    /// they belong to the checkpoint being captured).
    fn on_priority(&mut self, c: usize, p: PriorityBarrier) -> Option<AlignedBarrier> {
        tracing::trace!(target: crate::core::log::CHECKPOINT, checkpoint = p.barrier.id, input = c, "gate: priority barrier");
        let (capturing, start) = match self.aligner.on_priority_barrier(p.barrier, Instant::now()) {
            PriorityAction::Stale => (false, None),
            PriorityAction::Capture => (true, None),
            PriorityAction::StartCapture(b) => {
                self.capture_held();
                (true, Some(b))
            }
        };
        while before(self.receivers[c].received(), p.position) {
            let Some(event) = self.receivers[c].recv() else {
                break; // cannot happen: the sender pushed them before
            };
            self.queue(c, Pending::Event(event), capturing);
        }
        for event in p.overtaken {
            self.queue(c, Pending::Event(event), capturing);
        }
        if capturing {
            self.aligner.input_captured(c);
        }
        start
    }

    /// Queues `item` for input `c`, capturing its records if asked.
    fn queue(&mut self, c: usize, item: Pending, capture: bool) {
        if capture {
            self.aligner.capture_records(c, item.records());
        }
        self.pending[c].push_back(item);
    }

    /// With an aligned checkpoint timeout, asks the aligner whether the
    /// newest triggered checkpoint switches to unaligned now (see
    /// [`BarrierAligner::check_timeout`]); if it does, captures what the
    /// gate holds and returns the snapshot.
    fn check_timeout(&mut self, started: Instant) -> Option<AlignedBarrier> {
        let (receivers, pending, throughput) = (&self.receivers, &self.pending, &self.throughput);
        let b = self.aligner.check_timeout(started, Instant::now, || {
            held::expected_drain(receivers, pending, throughput)
        })?;
        self.capture_held();
        Some(b)
    }

    /// An unaligned snapshot just started: capture what the gate holds.
    fn capture_held(&mut self) {
        held::capture_held(self.reading.as_ref(), &self.pending, &mut self.aligner);
    }

    /// Takes everything the inputs still being captured have delivered out
    /// of their rings, capturing it, up to each one's barrier. Returns the
    /// snapshot a priority barrier found on the way starts.
    fn drain_capture(&mut self) -> Option<AlignedBarrier> {
        if !self.aligner.capture_in_progress() {
            return None;
        }
        let n = self.receivers.len();
        let waiting: Vec<usize> = (0..n).filter(|&c| self.aligner.is_capturing(c)).collect();
        let mut start = None;
        for c in waiting {
            while self.aligner.is_capturing(c) {
                match self.refill(c) {
                    Refill::Empty => break,
                    Refill::Moved => {}
                    Refill::Snapshot(b) => start = Some(b),
                }
            }
        }
        start
    }

    /// Moves input `c`'s next event from its ring to its queue, in the
    /// input's order (barrier modes that may overtake only).
    ///
    /// A priority barrier is pushed before any event its sender sends after
    /// it, so once an event is taken, every priority barrier that precedes
    /// it is visible: each is handled before the event when the event stands
    /// at or after its position (its overtaken events go first), and after
    /// it otherwise.
    fn refill(&mut self, c: usize) -> Refill {
        let seq = self.receivers[c].received();
        let Some(event) = self.receivers[c].recv() else {
            return Refill::Empty;
        };
        let mut start = None;
        while let Some(p) = self.receivers[c].recv_priority() {
            if before(seq, p.position) {
                // The event precedes this barrier (and any later one).
                self.push_event(c, event);
                if let Some(b) = self.on_priority(c, p) {
                    start = Some(b);
                }
                return start.map_or(Refill::Moved, Refill::Snapshot);
            }
            if let Some(b) = self.on_priority(c, p) {
                start = Some(b);
            }
        }
        self.push_event(c, event);
        start.map_or(Refill::Moved, Refill::Snapshot)
    }

    /// Queues an event taken from input `c`'s ring: captured while the
    /// input's data before the barrier being captured is still coming; the
    /// in-band barrier of that checkpoint ends it (and is not queued).
    fn push_event(&mut self, c: usize, event: ChannelEvent) {
        if self.aligner.on_early_event(c, &event) {
            self.pending[c].push_back(Pending::Event(event));
        }
    }

    /// Takes the next event from the unblocked inputs round-robin (an
    /// input's queue before its ring).
    fn next_event(&mut self) -> Next {
        let n = self.receivers.len();
        let overtaking = self.aligner.mode().may_overtake();
        for _ in 0..n {
            let c = self.next;
            self.next = if c + 1 == n { 0 } else { c + 1 };
            if self.ended[c] || self.aligner.is_blocked(c) {
                continue;
            }
            if overtaking && self.pending[c].is_empty() {
                match self.refill(c) {
                    Refill::Empty => continue,
                    Refill::Moved => {}
                    Refill::Snapshot(b) => return Next::Snapshot(b),
                }
            }
            let event = match self.pending[c].pop_front() {
                Some(Pending::Restored(records)) => {
                    self.reading = Some(Reading {
                        channel: c,
                        data: Data::Restored(records),
                        pos: 0,
                    });
                    return Next::Moved;
                }
                Some(Pending::Event(event)) => event,
                None if overtaking => continue,
                None => match self.receivers[c].recv() {
                    Some(event) => event,
                    None => continue,
                },
            };
            return self.on_event(c, event);
        }
        Next::Nothing
    }

    fn on_event(&mut self, c: usize, event: ChannelEvent) -> Next {
        match event {
            ChannelEvent::Buffer(buffer) => {
                self.bytes.add(c, buffer.len());
                self.throughput.add(buffer.len());
                self.reading = Some(Reading {
                    channel: c,
                    data: Data::Net(buffer),
                    pos: 0,
                });
                Next::Moved
            }
            ChannelEvent::Barrier(b) => self.on_barrier(c, b),
            ChannelEvent::EndOfData => {
                if !self.data_ended[c] {
                    self.data_ended[c] = true;
                    self.data_open -= 1;
                }
                self.aligner.on_end_of_data(c);
                if self.data_open == 0 && !self.data_end_reported {
                    self.data_end_reported = true;
                    Next::DataEnded
                } else {
                    Next::Moved
                }
            }
            ChannelEvent::EndOfPartition => {
                self.ended[c] = true;
                self.open -= 1;
                if !self.data_ended[c] {
                    self.data_ended[c] = true;
                    self.data_open -= 1;
                }
                match self.aligner.on_end_of_partition(c, Instant::now()) {
                    Some(b) => Next::Snapshot(b),
                    None if self.data_open == 0 && !self.data_end_reported => {
                        self.data_end_reported = true;
                        Next::DataEnded
                    }
                    None => Next::Moved,
                }
            }
            ChannelEvent::Watermark(w) => Next::of(self.valve.input_watermark(c, w)),
            ChannelEvent::WatermarkStatus(s) => Next::of(self.valve.input_status(c, s)),
            ChannelEvent::LatencyMarker(m) => Next::Latency(m),
        }
    }
}

mod held;
#[cfg(test)]
mod tests;
