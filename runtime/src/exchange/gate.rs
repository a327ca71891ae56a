//! The receiving side of an exchange for one subtask: [`InputGate`] takes
//! events from its channels round-robin, lends each buffer's records to the
//! chain in place, returns the buffer to its owner's pool when done, and
//! handles checkpoint barriers, so that operators only ever see one
//! snapshot call per checkpoint.
//!
//! # Barriers
//!
//! How a gate treats barriers is its [`BarrierMode`]:
//!
//! - **At least once**: nothing is held back; the snapshot is taken when the
//!   barrier arrived on every input.
//! - **Aligned** (exactly once): an input whose barrier `n` arrived is
//!   blocked until barrier `n` arrived on every input, so the snapshot
//!   reflects exactly the records before the barrier on every input.
//! - **Unaligned** (exactly once): the first barrier `n` on any input — on
//!   the channel's priority path, ahead of the data, or in band — takes the
//!   snapshot at once. The data that precedes barrier `n` on each input but
//!   was not processed yet is then *captured*: the rest of the buffer being
//!   read, the events already taken out of the channel, and every event the
//!   channel delivers up to its barrier. The gate takes those events out of
//!   the channel's ring as soon as they are there (without waiting to
//!   process them) and keeps them in a per-channel queue that is processed
//!   before the ring, so the barrier of every input is found quickly even
//!   when processing is slow; a [`PriorityBarrier`] says at which position
//!   of the channel's sequence it stands and hands over the events its
//!   sender had not pushed yet. Once every input's pre-barrier data is
//!   captured, the gate offers the [`ChannelState`] to the task, which adds
//!   it to its snapshot. Captured data is processed normally too: it is
//!   what the operator state of checkpoint `n` does not reflect, and a
//!   restore replays it ([`InputGate::restore_channel_state`]) before
//!   anything else.
//! - **Aligned with a timeout**: aligned, but an alignment that lasts longer
//!   than the timeout switches to unaligned: the snapshot is taken then, the
//!   inputs whose barrier arrived are released and the others are captured
//!   up to their barrier. A priority barrier (its sender timed out waiting
//!   for credit) switches at once.
//!
//! # Watermarks
//!
//! Watermarks and watermark statuses are taken in their turn like records
//! (so a capture's queued events keep their order too) and go to the gate's
//! [`WatermarkValve`]: when the minimum over the active inputs advances, or
//! every input becomes idle or one becomes active again, the gate passes it
//! down the chain ([`crate::chain::control::ChainControl::on_watermark`]) before
//! the next record.

use crate::chain::control::Collector;
use crate::checkpoint::signals::CheckpointSignals;
use crate::core::barrier::BarrierMode;
use crate::exchange::debloat::BufferDebloater;
use crate::exchange::decoder::Decoded;
use crate::exchange::decoder::RecordDecoder;
use crate::exchange::decoder::WireDecoder;
use crate::exchange::valve::{ValveOutput, WatermarkValve};
use crate::metrics::counters::{ChannelBytes, ChannelCounters};
use crate::metrics::subtask::SubtaskMetrics;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use weir_net::{
    ChannelEvent, ChannelReceiver, CheckpointBarrier, NetworkBuffer, PriorityBarrier, Wire,
};

/// A barrier the task must snapshot now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlignedBarrier {
    /// The barrier.
    pub barrier: CheckpointBarrier,
    /// When its first copy arrived.
    pub first_at: Instant,
    /// From the first copy to the snapshot.
    pub alignment: Duration,
    /// The snapshot is unaligned: the gate is capturing the data the
    /// barrier overtook; the task completes its snapshot with
    /// [`InputGate::take_channel_state`].
    pub unaligned: bool,
}

/// The data an unaligned checkpoint's barrier overtook on each input of a
/// gate: per input channel, the serialized records, in order.
#[derive(Debug, PartialEq, Eq)]
pub struct ChannelState {
    /// The checkpoint.
    pub checkpoint: u64,
    /// Per input channel (sending subtask), its records' bytes.
    pub channels: Vec<Vec<u8>>,
}

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

/// Records to read: a buffer of a channel, or restored channel state.
enum Data {
    Net(NetworkBuffer),
    Restored(Vec<u8>),
}

impl Data {
    fn bytes(&self) -> &[u8] {
        match self {
            Data::Net(b) => b.as_bytes(),
            Data::Restored(v) => v,
        }
    }
}

/// An event taken out of its channel ahead of its turn, or restored
/// channel state, waiting to be processed.
enum Pending {
    Event(ChannelEvent),
    Restored(Vec<u8>),
}

impl Pending {
    /// The records it carries.
    fn records(&self) -> &[u8] {
        match self {
            Pending::Event(ChannelEvent::Buffer(b)) => b.as_bytes(),
            Pending::Event(_) => &[],
            Pending::Restored(v) => v,
        }
    }
}

/// A buffer being read, and where.
struct Reading {
    channel: usize,
    data: Data,
    pos: usize,
}

/// Barrier `barrier` being aligned: which inputs delivered it.
struct Alignment {
    barrier: CheckpointBarrier,
    first_at: Instant,
    arrived: Box<[bool]>,
    /// With an aligned checkpoint timeout: when it switches to unaligned.
    deadline: Option<Instant>,
}

/// When the alignment of `barrier`'s checkpoint times out: `timeout` after
/// the checkpoint was triggered (Flink measures the checkpoint's start
/// delay, from the trigger to the barrier's arrival, against the timeout).
pub fn alignment_deadline(barrier: &CheckpointBarrier, timeout: Duration) -> Instant {
    let now = Instant::now();
    let wall_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let due_ms = barrier
        .timestamp_ms
        .saturating_add(timeout.as_millis() as u64);
    now + Duration::from_millis(due_ms.saturating_sub(wall_ms))
}

/// The channel state of an unaligned checkpoint being captured.
struct Capture {
    barrier: CheckpointBarrier,
    /// Per channel: everything before the barrier is processed or captured.
    done: Box<[bool]>,
    open: usize,
    bytes: Box<[Vec<u8>]>,
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
    blocked: Box<[bool]>,
    mode: BarrierMode,
    aligning: Option<Alignment>,
    capture: Option<Capture>,
    /// A finished capture (`Ok`) or the id of an abandoned one (`Err`).
    outcome: Option<Result<ChannelState, u64>>,
    last_barrier: u64,
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
    bytes: ChannelBytes,
    /// With an aligned checkpoint timeout: the triggers, so the gate knows
    /// a checkpoint started before any of its barriers arrived.
    signals: Option<Arc<CheckpointSignals>>,
    /// What the gate reads: bytes of buffers taken, and its recent rate.
    throughput: Throughput,
    /// Buffer debloating: sizes the credit and buffers of the inputs.
    debloater: Option<BufferDebloater>,
    /// The event time over the inputs.
    valve: WatermarkValve,
}

/// The rate at which a gate takes bytes in, smoothed, to estimate how long
/// the data in flight ahead of a barrier takes to drain.
#[derive(Debug)]
struct Throughput {
    bytes: u64,
    at_last: (Instant, u64),
    bytes_per_s: f64,
    buffers: u64,
}

impl Throughput {
    /// Sampling period of the rate.
    const PERIOD: Duration = Duration::from_millis(10);

    fn new() -> Self {
        Self {
            bytes: 0,
            at_last: (Instant::now(), 0),
            bytes_per_s: 0.0,
            buffers: 0,
        }
    }

    #[inline]
    fn add(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
        self.buffers += 1;
    }

    fn sample(&mut self, now: Instant) {
        let (then, bytes) = self.at_last;
        let dt = now.saturating_duration_since(then);
        if dt >= Self::PERIOD {
            let rate = (self.bytes - bytes) as f64 / dt.as_secs_f64();
            self.bytes_per_s = if self.bytes_per_s == 0.0 {
                rate
            } else {
                0.7 * self.bytes_per_s + 0.3 * rate
            };
            self.at_last = (now, self.bytes);
        }
    }

    /// Mean bytes per buffer so far.
    fn mean_buffer(&self) -> f64 {
        if self.buffers == 0 {
            0.0
        } else {
            self.bytes as f64 / self.buffers as f64
        }
    }
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
            blocked: vec![false; n].into_boxed_slice(),
            mode,
            aligning: None,
            capture: None,
            outcome: None,
            last_barrier: 0,
            next: 0,
            reading: None,
            pending: (0..n).map(|_| VecDeque::new()).collect(),
            check_every: CHECK_EVERY,
            drained: false,
            budget_stop: false,
            records: 0,
            published_records: 0,
            bytes: ChannelBytes::unshared(n),
            signals: None,
            throughput: Throughput::new(),
            debloater: None,
            valve: WatermarkValve::new(n),
        }
    }

    /// Sizes the data in flight on the inputs to what the gate reads in
    /// the debloater's target time (buffer debloating, see
    /// [`crate::debloat`]): the gate tells it what it read and when it was
    /// idle, and announces each new target to its senders.
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
        self.signals = Some(signals);
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
        if let Some(a) = &self.aligning {
            return a.deadline;
        }
        let (BarrierMode::AlignedWithTimeout(t), Some(s)) = (self.mode, &self.signals) else {
            return None;
        };
        let (id, timestamp_ms) = s.triggered();
        (id > self.last_barrier && self.capture.is_none())
            .then(|| alignment_deadline(&CheckpointBarrier { id, timestamp_ms }, t))
    }

    /// The channel state of an unaligned snapshot, once every input's data
    /// before the barrier has been captured (`Ok`), or the id of a
    /// checkpoint whose capture was abandoned for a newer one (`Err`): its
    /// snapshot cannot complete.
    pub fn take_channel_state(&mut self) -> Option<Result<ChannelState, u64>> {
        self.outcome.take()
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
        let bytes_before = self.throughput.bytes;
        let (status, moved, events) = self.pump_counting(decoder, out, budget);
        self.records += (moved - events) as u64;
        self.drained =
            matches!(status, GateStatus::Moved(_)) && self.reading.is_none() && !self.budget_stop;
        if self.debloater.is_some() {
            self.debloat(moved > 0, self.throughput.bytes - bytes_before);
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
        let overtaking = self.mode.may_overtake();
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
        if let Some(a) = self.aligning.take() {
            self.last_barrier = self.last_barrier.max(a.barrier.id);
        }
        self.blocked.fill(false);
    }

    /// The current alignment, if every input delivered its barrier or
    /// ended its partition.
    fn aligned(&self) -> Option<AlignedBarrier> {
        let a = self.aligning.as_ref()?;
        let all = a
            .arrived
            .iter()
            .zip(self.ended.iter())
            .all(|(&arrived, &ended)| arrived || ended);
        all.then(|| AlignedBarrier {
            barrier: a.barrier,
            first_at: a.first_at,
            alignment: a.first_at.elapsed(),
            unaligned: false,
        })
    }

    /// An in-band barrier on input `c`, in its turn.
    fn on_barrier(&mut self, c: usize, barrier: CheckpointBarrier) -> Next {
        tracing::trace!(target: crate::core::log::CHECKPOINT, checkpoint = barrier.id, input = c, "gate: barrier");
        if self
            .capture
            .as_ref()
            .is_some_and(|k| k.barrier.id == barrier.id)
        {
            self.mark_captured(c);
            return Next::Moved;
        }
        if barrier.id <= self.last_barrier || self.is_older_than_current(barrier.id) {
            return Next::Moved; // stale: an aborted checkpoint's late copy
        }
        // A barrier behind the end of its input's data (the final
        // checkpoint's) is aligned: nothing can overtake it, and everything
        // before it is processed before the snapshot.
        if self.mode == BarrierMode::Unaligned && !self.data_ended[c] {
            self.abandon_older(barrier.id);
            let b = self.start_capture(barrier, Instant::now());
            self.mark_captured(c);
            return Next::Snapshot(b);
        }
        if self
            .aligning
            .as_ref()
            .is_some_and(|a| barrier.id > a.barrier.id)
        {
            // A newer checkpoint overtook one that cannot complete here any
            // more (a source skipped it): give the older one up.
            self.blocked.fill(false);
            self.aligning = None;
        }
        self.abandon_older(barrier.id);
        let n = self.receivers.len();
        let mode = self.mode;
        let a = self.aligning.get_or_insert_with(|| Alignment {
            barrier,
            first_at: Instant::now(),
            arrived: vec![false; n].into_boxed_slice(),
            deadline: match mode {
                BarrierMode::AlignedWithTimeout(t) => Some(alignment_deadline(&barrier, t)),
                _ => None,
            },
        });
        a.arrived[c] = true;
        if self.mode != BarrierMode::AtLeastOnce {
            self.blocked[c] = true;
        }
        match self.aligned() {
            Some(b) => Next::Snapshot(b),
            None => Next::Moved,
        }
    }

    /// True if a newer checkpoint than `id` is being aligned or captured.
    fn is_older_than_current(&self, id: u64) -> bool {
        self.aligning.as_ref().is_some_and(|a| id < a.barrier.id)
            || self.capture.as_ref().is_some_and(|k| id < k.barrier.id)
    }

    /// Gives up a capture older than checkpoint `id`.
    fn abandon_older(&mut self, id: u64) {
        if let Some(k) = self.capture.as_ref().filter(|k| k.barrier.id < id) {
            self.outcome = Some(Err(k.barrier.id));
            self.capture = None;
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
        let id = p.barrier.id;
        tracing::trace!(target: crate::core::log::CHECKPOINT, checkpoint = id, input = c, "gate: priority barrier");
        let current = self.capture.as_ref().is_some_and(|k| k.barrier.id == id);
        let stale = !current && (id <= self.last_barrier || self.is_older_than_current(id));
        let start = if current || stale {
            None
        } else {
            self.abandon_older(id);
            let first_at = match &self.aligning {
                Some(a) if a.barrier.id == id => a.first_at,
                _ => Instant::now(),
            };
            Some(self.start_capture(p.barrier, first_at))
        };
        let capturing = !stale;
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
            self.mark_captured(c);
        }
        start
    }

    /// Queues `item` for input `c`, capturing its records if asked.
    fn queue(&mut self, c: usize, item: Pending, capture: bool) {
        if capture {
            if let Some(k) = self.capture.as_mut() {
                k.bytes[c].extend_from_slice(item.records());
            }
        }
        self.pending[c].push_back(item);
    }

    /// With an aligned checkpoint timeout, switches the newest triggered
    /// checkpoint to unaligned once its alignment has taken, or is bound to
    /// take, longer than the timeout.
    ///
    /// The timeout runs from the trigger (Flink measures a checkpoint's
    /// start delay against it). The gate switches when it is over, or as
    /// soon as the data in flight on its inputs would take longer than the
    /// rest of the timeout to drain at the rate the gate reads: waiting
    /// could only end in the same switch, later. A checkpoint may switch
    /// before any of its barriers arrived: the gate then snapshots at once
    /// and captures every input up to its barrier, which is Chandy and
    /// Lamport's spontaneous recording of state.
    fn check_timeout(&mut self, started: Instant) -> Option<AlignedBarrier> {
        let BarrierMode::AlignedWithTimeout(t) = self.mode else {
            return None;
        };
        let (barrier, first_at, due) = match (&self.aligning, &self.signals) {
            (Some(a), _) => (a.barrier, a.first_at, a.deadline?),
            (None, Some(s)) => {
                let (id, timestamp_ms) = s.triggered();
                if id <= self.last_barrier
                    || id == s.final_id()
                    || self.capture.is_some()
                    || self.data_ended.iter().any(|&d| d)
                {
                    return None;
                }
                let b = CheckpointBarrier { id, timestamp_ms };
                (b, started, alignment_deadline(&b, t))
            }
            (None, None) => return None,
        };
        let now = Instant::now();
        let drained_at = now.checked_add(self.expected_drain());
        if now < due && drained_at.is_some_and(|at| at < due) {
            return None;
        }
        tracing::trace!(
            target: crate::core::log::CHECKPOINT,
            checkpoint = barrier.id,
            "gate: alignment {}",
            if now < due {
                "would time out"
            } else {
                "timed out"
            }
        );
        Some(self.start_capture(barrier, first_at))
    }

    /// How long the data waiting on the inputs would take to drain at the
    /// gate's recent rate.
    fn expected_drain(&self) -> Duration {
        let waiting: f64 = self
            .receivers
            .iter()
            .map(|r| r.queued() as f64)
            .sum::<f64>()
            * self.throughput.mean_buffer()
            + self
                .pending
                .iter()
                .flatten()
                .map(|p| p.records().len() as f64)
                .sum::<f64>();
        if waiting == 0.0 || self.throughput.bytes_per_s <= 0.0 {
            // Nothing waiting, or no rate measured yet: no prediction, the
            // timeout decides.
            return Duration::ZERO;
        }
        Duration::from_secs_f64((waiting / self.throughput.bytes_per_s).min(3600.0))
    }

    /// Starts capturing the channel state of `barrier`'s checkpoint and
    /// returns the snapshot to take now. Inputs that ended, and those whose
    /// barrier already arrived in an alignment of the same checkpoint, have
    /// nothing to capture; for the others, the rest of the buffer being read
    /// and their queued events are captured now.
    fn start_capture(&mut self, barrier: CheckpointBarrier, first_at: Instant) -> AlignedBarrier {
        let n = self.receivers.len();
        let mut done: Box<[bool]> = self.ended.clone();
        if let Some(a) = self.aligning.take() {
            if a.barrier.id == barrier.id {
                for (d, arrived) in done.iter_mut().zip(a.arrived.iter()) {
                    *d |= arrived;
                }
            }
        }
        self.blocked.fill(false);
        let mut bytes: Box<[Vec<u8>]> = (0..n).map(|_| Vec::new()).collect();
        if let Some(r) = &self.reading {
            if !done[r.channel] {
                bytes[r.channel].extend_from_slice(&r.data.bytes()[r.pos..]);
            }
        }
        for c in (0..n).filter(|&c| !done[c]) {
            for item in &self.pending[c] {
                bytes[c].extend_from_slice(item.records());
            }
        }
        let open = done.iter().filter(|d| !**d).count();
        self.last_barrier = self.last_barrier.max(barrier.id);
        self.capture = Some(Capture {
            barrier,
            done,
            open,
            bytes,
        });
        self.finish_capture_if_done();
        AlignedBarrier {
            barrier,
            first_at,
            alignment: first_at.elapsed(),
            unaligned: true,
        }
    }

    /// Input `c` has no more data before the captured barrier.
    fn mark_captured(&mut self, c: usize) {
        if let Some(k) = self.capture.as_mut() {
            if !k.done[c] {
                k.done[c] = true;
                k.open -= 1;
            }
        }
        self.finish_capture_if_done();
    }

    fn finish_capture_if_done(&mut self) {
        if self.capture.as_ref().is_some_and(|k| k.open == 0) {
            let k = self.capture.take().expect("checked");
            tracing::trace!(
                target: crate::core::log::CHECKPOINT,
                checkpoint = k.barrier.id,
                bytes = k.bytes.iter().map(Vec::len).sum::<usize>(),
                "gate: channel state captured"
            );
            self.outcome = Some(Ok(ChannelState {
                checkpoint: k.barrier.id,
                channels: k.bytes.into_vec(),
            }));
        }
    }

    /// Takes everything the inputs still being captured have delivered out
    /// of their rings, capturing it, up to each one's barrier. Returns the
    /// snapshot a priority barrier found on the way starts.
    fn drain_capture(&mut self) -> Option<AlignedBarrier> {
        let k = self.capture.as_ref()?;
        let waiting: Vec<usize> = (0..k.done.len()).filter(|&c| !k.done[c]).collect();
        let mut start = None;
        for c in waiting {
            while self.capture.as_ref().is_some_and(|k| !k.done[c]) {
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
        let waiting = self
            .capture
            .as_ref()
            .filter(|k| !k.done[c])
            .map(|k| k.barrier.id);
        let barrier = match &event {
            ChannelEvent::Barrier(b) => Some(b.id),
            _ => None,
        };
        match (barrier, &event, waiting) {
            (Some(b), _, Some(id)) if b == id => self.mark_captured(c),
            (Some(b), _, Some(id)) if b > id => {
                // A newer checkpoint's barrier before this one's: this
                // checkpoint cannot complete here.
                self.pending[c].push_back(Pending::Event(event));
                self.abandon_older(b);
            }
            (_, ChannelEvent::EndOfPartition, Some(_)) => {
                self.pending[c].push_back(Pending::Event(event));
                self.mark_captured(c);
            }
            _ => self.queue(c, Pending::Event(event), waiting.is_some()),
        }
    }

    /// Takes the next event from the unblocked inputs round-robin (an
    /// input's queue before its ring).
    fn next_event(&mut self) -> Next {
        let n = self.receivers.len();
        let overtaking = self.mode.may_overtake();
        for _ in 0..n {
            let c = self.next;
            self.next = if c + 1 == n { 0 } else { c + 1 };
            if self.ended[c] || self.blocked[c] {
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
                self.mark_captured(c);
                match self.aligned() {
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
        }
    }
}

#[cfg(test)]
mod tests;
