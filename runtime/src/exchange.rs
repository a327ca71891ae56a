//! The key_by exchange: partitioning records by key group into one channel
//! per receiving subtask, and reading them back on the other side.
//!
//! [`ExchangeOutput`] is the tail of a sending chain. It hashes each record's
//! key with the stable key hash, maps the key group to the subtask that owns
//! it, and appends the record to that channel's current buffer. A buffer is
//! sent when it is full, or when `execution.buffer-timeout` has passed since
//! its first record (immediately with a timeout of zero). A buffer that finds
//! no credit waits in a per-channel queue. While one waits, or when the pool
//! is empty, the output reports itself unavailable and the chain's head stops
//! taking input: backpressure.
//!
//! [`InputGate`] is the receiving side: it takes events from its channels
//! round-robin, lends each buffer's records to the chain in place, and returns
//! the buffer to its owner's pool when done. It also aligns checkpoint
//! barriers across its channels: alignment lives here, in the runtime, so
//! operators only ever see one aligned snapshot call per checkpoint.
//!
//! Both sides count what they move for the subtask metrics (see
//! [`crate::metrics`]) in plain fields: the output the records it takes and
//! the bytes of every buffer it ships, per channel; the gate the records it
//! reads and the bytes of every buffer it takes, per channel. They publish
//! once per poll.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

use std::rc::Rc;
use std::sync::Arc;

use weir_net::{
    BufferPool, ChannelEvent, ChannelReceiver, ChannelSender, CheckpointBarrier, NetworkBuffer,
    Wire,
};
use weir_state::{KeyGroupAssigner, KeyHash};

use crate::checkpoint::snapshot::TaskSnapshot;
use crate::checkpoint::TaskCheckpointing;
use crate::metrics::{ChannelBytes, ChannelCounters, SubtaskId, SubtaskMetrics};
use crate::operator::{ChainControl, Collector, FlushOutcome};
use crate::task::{ChainHead, InputStep, Task, TaskPoll};

struct OutChannel {
    sender: ChannelSender,
    current: Option<NetworkBuffer>,
    /// When the first record went into `current`.
    since: Option<Instant>,
    /// Events that found no credit, in order.
    queued: VecDeque<ChannelEvent>,
    /// Bytes of the buffers shipped, and as last published.
    shipped: u64,
    published: u64,
    counters: Arc<ChannelCounters>,
}

impl OutChannel {
    /// Sends `event` after everything queued before it.
    #[inline]
    fn enqueue(&mut self, event: ChannelEvent) {
        if self.queued.is_empty() {
            if let Err(back) = self.sender.send(event) {
                self.queued.push_back(back);
            }
        } else {
            self.queued.push_back(event);
        }
    }

    /// Sends queued events while credit lasts; true if any moved.
    fn drain_queue(&mut self) -> bool {
        let mut moved = false;
        while let Some(event) = self.queued.pop_front() {
            match self.sender.send(event) {
                Ok(()) => moved = true,
                Err(back) => {
                    self.queued.push_front(back);
                    break;
                }
            }
        }
        moved
    }

    fn ship_current(&mut self) {
        if let Some(buf) = self.current.take() {
            self.since = None;
            self.shipped += buf.len() as u64;
            self.enqueue(ChannelEvent::Buffer(buf));
        }
    }

    fn publish(&mut self) {
        if self.shipped != self.published {
            self.published = self.shipped;
            self.counters.publish_shipped(self.shipped);
        }
    }
}

/// Metrics of a component built outside a job: counted, never reported.
fn unregistered_metrics() -> SubtaskMetrics {
    SubtaskMetrics::new(SubtaskId {
        stage: "unregistered".into(),
        index: 0,
        parallelism: 1,
        worker: 0,
    })
}

/// The sending side of a key_by exchange for one subtask.
pub struct ExchangeOutput<T, K, KF> {
    key_fn: KF,
    assigner: KeyGroupAssigner,
    channels: Box<[OutChannel]>,
    pool: BufferPool,
    timeout: Duration,
    flush_every_record: bool,
    available: bool,
    finishing: bool,
    /// Most buffers the pool may own after overdrafts: what a return ring
    /// holds, so a return can never overflow.
    max_pool: usize,
    /// Records taken (`records_out` of the subtask).
    records: u64,
    metrics: SubtaskMetrics,
    _types: PhantomData<fn(T) -> K>,
}

impl<T, K, KF> ExchangeOutput<T, K, KF>
where
    T: Wire,
    K: KeyHash,
    KF: Fn(&T) -> K,
{
    /// An output over `senders` (indexed by receiving subtask) drawing
    /// buffers from `pool`; the pool may grow to `max_pool` buffers (the
    /// capacity of each channel's return ring).
    pub fn new(
        key_fn: KF,
        max_parallelism: u32,
        senders: Vec<ChannelSender>,
        pool: BufferPool,
        max_pool: usize,
        buffer_timeout: Duration,
    ) -> Self {
        let assigner = KeyGroupAssigner::new(max_parallelism, senders.len() as u32);
        let capacity = pool.total() + 4;
        let channels = senders
            .into_iter()
            .map(|sender| OutChannel {
                sender,
                current: None,
                since: None,
                queued: VecDeque::with_capacity(capacity),
                shipped: 0,
                published: 0,
                counters: Arc::default(),
            })
            .collect();
        Self {
            key_fn,
            assigner,
            channels,
            available: pool.available() > 0,
            pool,
            timeout: buffer_timeout,
            flush_every_record: buffer_timeout.is_zero(),
            finishing: false,
            max_pool,
            records: 0,
            metrics: unregistered_metrics(),
            _types: PhantomData,
        }
    }

    /// Reports into `metrics` (records out) and `channels` (bytes shipped,
    /// one per receiving subtask, in the order of the senders).
    pub fn with_metrics(
        mut self,
        metrics: SubtaskMetrics,
        channels: Vec<Arc<ChannelCounters>>,
    ) -> Self {
        assert_eq!(
            channels.len(),
            self.channels.len(),
            "one channel counter per output channel"
        );
        self.metrics = metrics;
        for (ch, counters) in self.channels.iter_mut().zip(channels) {
            ch.counters = counters;
        }
        self
    }

    #[inline]
    fn fresh_buffer(&mut self) -> NetworkBuffer {
        match self.pool.request() {
            Some(b) => b,
            None => self.overdraft(),
        }
    }

    /// Only reachable when one input record produced more output than the
    /// whole pool holds (a large flat_map): the head checks availability
    /// before every record, but cannot stop in the middle of one. Grow the
    /// pool rather than deadlock a worker that must also drain its own
    /// input channels.
    #[cold]
    fn overdraft(&mut self) -> NetworkBuffer {
        // Ship what is ready first: returns may follow before the next record.
        for ch in self.channels.iter_mut() {
            ch.drain_queue();
        }
        if let Some(b) = self.pool.request() {
            return b;
        }
        assert!(
            self.pool.total() < self.max_pool,
            "one record's output filled the whole buffer pool ({} buffers of {} bytes); \
             raise taskmanager.memory.segment-size or \
             taskmanager.network.memory.floating-buffers-per-gate",
            self.max_pool,
            self.pool.buffer_size()
        );
        self.pool.grow()
    }

    #[cold]
    fn record_too_large(&self, len: usize) -> ! {
        panic!(
            "a record of {len} bytes does not fit in a network buffer of {} bytes; \
             raise taskmanager.memory.segment-size",
            self.pool.buffer_size()
        )
    }
}

impl<T, K, KF> Collector<T> for ExchangeOutput<T, K, KF>
where
    T: Wire,
    K: KeyHash,
    KF: Fn(&T) -> K,
{
    #[inline]
    fn collect(&mut self, record: T) {
        self.records += 1;
        let key = (self.key_fn)(&record);
        let target = self.assigner.subtask_for_hash(key.key_hash()) as usize;
        let ch = &mut self.channels[target];
        if let Some(buf) = ch.current.as_mut() {
            if buf.try_append(&record) {
                if self.flush_every_record {
                    ch.ship_current();
                    self.available &= ch.queued.is_empty();
                }
                return;
            }
            ch.ship_current();
        }
        let mut buf = self.fresh_buffer();
        if !buf.try_append(&record) {
            self.record_too_large(record.encoded_len());
        }
        let ch = &mut self.channels[target];
        ch.current = Some(buf);
        if self.flush_every_record {
            ch.ship_current();
        } else {
            ch.since = Some(Instant::now());
        }
        // Available again only if nothing waits for credit on this channel
        // (else the head would keep filling buffers the receiver cannot take
        // yet) and a buffer is free for the next record.
        self.available =
            ch.queued.is_empty() && (self.pool.available() > 0 || self.pool.reclaim() > 0);
    }
}

impl<T, K, KF> ChainControl for ExchangeOutput<T, K, KF> {
    #[inline(always)]
    fn is_available(&self) -> bool {
        self.available
    }

    fn flush(&mut self, now: Instant) -> FlushOutcome {
        let mut progressed = false;
        let mut next_deadline: Option<Instant> = None;
        let mut waiting = false;
        for ch in self.channels.iter_mut() {
            progressed |= ch.drain_queue();
            if let Some(since) = ch.since {
                let due = since + self.timeout;
                if due <= now {
                    ch.ship_current();
                    progressed = true;
                } else {
                    next_deadline = Some(next_deadline.map_or(due, |d| d.min(due)));
                }
            }
            waiting |= !ch.queued.is_empty();
        }
        progressed |= self.pool.reclaim() > 0;
        self.available = !waiting && self.pool.available() > 0;
        FlushOutcome {
            progressed,
            next_deadline,
        }
    }

    fn end_input(&mut self) {
        for ch in self.channels.iter_mut() {
            ch.ship_current();
            ch.enqueue(ChannelEvent::EndOfData);
        }
        self.available = false;
    }

    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        // The barrier goes behind every record before it, without waiting
        // for the buffer timeout.
        for ch in self.channels.iter_mut() {
            ch.ship_current();
            ch.enqueue(ChannelEvent::Barrier(snapshot.barrier));
        }
        self.available = self.channels.iter().all(|c| c.queued.is_empty())
            && (self.pool.available() > 0 || self.pool.reclaim() > 0);
    }

    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) {}

    fn finish(&mut self) -> bool {
        if !self.finishing {
            self.finishing = true;
            for ch in self.channels.iter_mut() {
                ch.ship_current();
                ch.enqueue(ChannelEvent::EndOfPartition);
            }
        }
        let mut done = true;
        for ch in self.channels.iter_mut() {
            ch.drain_queue();
            done &= ch.queued.is_empty();
        }
        self.pool.reclaim();
        done
    }

    fn publish_metrics(&mut self) {
        self.metrics.publish_records_out(self.records);
        for ch in self.channels.iter_mut() {
            ch.publish();
        }
    }

    fn output_pending(&self) -> bool {
        self.channels.iter().any(|c| !c.queued.is_empty())
    }
}

/// A buffer being read, and where.
struct Reading {
    channel: usize,
    buffer: NetworkBuffer,
    pos: usize,
}

/// Barrier `barrier` being aligned: which inputs delivered it.
struct Alignment {
    barrier: CheckpointBarrier,
    first_at: Instant,
    arrived: Box<[bool]>,
}

/// A barrier that arrived on every input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlignedBarrier {
    /// The barrier.
    pub barrier: CheckpointBarrier,
    /// When its first copy arrived.
    pub first_at: Instant,
    /// From the first to the last copy.
    pub alignment: Duration,
}

/// The receiving side of an exchange for one subtask: its input channels,
/// and the alignment of checkpoint barriers across them.
///
/// In exactly-once mode an input whose barrier `n` arrived is *blocked*:
/// the gate reads nothing more from it until barrier `n` arrived on every
/// input, so the snapshot taken then reflects exactly the records before
/// the barrier on every input (Flink's aligned checkpoints). In
/// at-least-once mode inputs are never blocked: records after the barrier
/// on early inputs may be processed before the snapshot, and are then
/// replayed after a restore.
pub struct InputGate {
    receivers: Box<[ChannelReceiver]>,
    ended: Box<[bool]>,
    open: usize,
    data_ended: Box<[bool]>,
    data_open: usize,
    data_end_reported: bool,
    blocked: Box<[bool]>,
    exactly_once: bool,
    aligning: Option<Alignment>,
    last_barrier: u64,
    next: usize,
    reading: Option<Reading>,
    /// The last pump stopped because no input was waiting.
    drained: bool,
    /// The pump in progress stopped for its budget.
    budget_stop: bool,
    /// Records read, and as last published.
    records: u64,
    published_records: u64,
    bytes: ChannelBytes,
}

/// What [`InputGate::pump`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateStatus {
    /// Moved this many records and events; more may be waiting.
    Moved(usize),
    /// A barrier arrived on every input: snapshot now, then call
    /// [`InputGate::barrier_done`].
    Barrier(AlignedBarrier),
    /// Every input delivered end-of-data (reported once).
    DataEnded,
    /// Every channel delivered end-of-partition.
    Ended,
}

enum Next {
    Nothing,
    Moved,
    Aligned(AlignedBarrier),
    DataEnded,
}

impl InputGate {
    /// A gate over `receivers` (one per sending subtask); `exactly_once`
    /// blocks inputs during alignment.
    pub fn new(receivers: Vec<ChannelReceiver>, exactly_once: bool) -> Self {
        let n = receivers.len();
        Self {
            receivers: receivers.into_boxed_slice(),
            ended: vec![false; n].into_boxed_slice(),
            open: n,
            data_ended: vec![false; n].into_boxed_slice(),
            data_open: n,
            data_end_reported: false,
            blocked: vec![false; n].into_boxed_slice(),
            exactly_once,
            aligning: None,
            last_barrier: 0,
            next: 0,
            reading: None,
            drained: false,
            budget_stop: false,
            records: 0,
            published_records: 0,
            bytes: ChannelBytes::unshared(n),
        }
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
    /// an unavailable output or an event.
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

    /// Moves up to about `budget` records into `out`, stopping early when
    /// `out` is unavailable (backpressure), nothing is waiting, or a
    /// barrier is aligned.
    #[inline]
    pub fn pump<T: Wire, C: Collector<T>>(&mut self, out: &mut C, budget: usize) -> GateStatus {
        // Records are what moved minus the events (counted per event, so
        // the per-record loop does no extra work).
        let (mut moved, mut events) = (0, 0);
        let status = self.pump_counting(out, budget, &mut moved, &mut events);
        self.records += (moved - events) as u64;
        self.drained =
            matches!(status, GateStatus::Moved(_)) && self.reading.is_none() && !self.budget_stop;
        status
    }

    #[inline]
    fn pump_counting<T: Wire, C: Collector<T>>(
        &mut self,
        out: &mut C,
        budget: usize,
        moved: &mut usize,
        events: &mut usize,
    ) -> GateStatus {
        self.budget_stop = false;
        loop {
            if let Some(reading) = self.reading.as_mut() {
                let bytes = reading.buffer.as_bytes();
                let mut pos = reading.pos;
                while pos < bytes.len() {
                    if !out.is_available() {
                        reading.pos = pos;
                        return GateStatus::Moved(*moved);
                    }
                    match T::read(&bytes[pos..]) {
                        Ok((record, n)) => {
                            pos += n;
                            *moved += 1;
                            out.collect(record);
                        }
                        Err(e) => panic!(
                            "channel {} delivered a corrupt buffer: {e}",
                            reading.channel
                        ),
                    }
                }
                let Reading {
                    channel, buffer, ..
                } = self.reading.take().expect("reading is set");
                self.receivers[channel].recycle(buffer);
                if *moved >= budget {
                    self.budget_stop = true;
                    return GateStatus::Moved(*moved);
                }
            }
            if self.open == 0 {
                return GateStatus::Ended;
            }
            match self.next_event() {
                Next::Nothing => return GateStatus::Moved(*moved),
                Next::Moved => {
                    *moved += 1;
                    *events += 1;
                }
                Next::Aligned(b) => return GateStatus::Barrier(b),
                Next::DataEnded => return GateStatus::DataEnded,
            }
        }
    }

    /// The snapshot of the aligned barrier is taken: unblock every input.
    pub fn barrier_done(&mut self) {
        if let Some(a) = self.aligning.take() {
            self.last_barrier = a.barrier.id;
        }
        self.blocked.fill(false);
    }

    /// True if the current alignment is complete: every input delivered
    /// the barrier or ended its partition.
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
        })
    }

    fn on_barrier(&mut self, c: usize, barrier: CheckpointBarrier) -> Next {
        crate::checkpoint::trace!("gate: barrier {} on input {c}", barrier.id);
        if barrier.id <= self.last_barrier {
            return Next::Moved; // stale: an aborted alignment's late copy
        }
        match &self.aligning {
            Some(a) if barrier.id < a.barrier.id => return Next::Moved,
            Some(a) if barrier.id > a.barrier.id => {
                // A newer checkpoint overtook one that cannot complete here
                // any more (a source skipped it): give the older one up.
                self.blocked.fill(false);
                self.aligning = None;
            }
            _ => {}
        }
        let n = self.receivers.len();
        let a = self.aligning.get_or_insert_with(|| Alignment {
            barrier,
            first_at: Instant::now(),
            arrived: vec![false; n].into_boxed_slice(),
        });
        a.arrived[c] = true;
        if self.exactly_once {
            self.blocked[c] = true;
        }
        match self.aligned() {
            Some(b) => Next::Aligned(b),
            None => Next::Moved,
        }
    }

    /// Takes the next event from the unblocked channels round-robin.
    fn next_event(&mut self) -> Next {
        let n = self.receivers.len();
        for _ in 0..n {
            let c = self.next;
            self.next = if c + 1 == n { 0 } else { c + 1 };
            if self.ended[c] || self.blocked[c] {
                continue;
            }
            let Some(event) = self.receivers[c].recv() else {
                continue;
            };
            return match event {
                ChannelEvent::Buffer(buffer) => {
                    self.bytes.add(c, buffer.len());
                    self.reading = Some(Reading {
                        channel: c,
                        buffer,
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
                    match self.aligned() {
                        Some(b) => Next::Aligned(b),
                        None if self.data_open == 0 && !self.data_end_reported => {
                            self.data_end_reported = true;
                            Next::DataEnded
                        }
                        None => Next::Moved,
                    }
                }
                ChannelEvent::Watermark(w) => panic!(
                    "channel {c} delivered watermark {w} but this job has no event-time operators"
                ),
            };
        }
        Next::Nothing
    }
}

/// Records and events an input task moves per poll before the worker looks
/// at its other tasks.
const INPUT_BUDGET: usize = 8192;

/// Drives one subtask of a stage fed by an exchange.
pub struct InputTask<T, C> {
    name: String,
    gate: InputGate,
    head: ChainHead<C>,
    checkpointing: Option<Rc<TaskCheckpointing>>,
    metrics: SubtaskMetrics,
    _record: PhantomData<fn(T)>,
}

impl<T, C> InputTask<T, C> {
    /// A task pumping `gate` into `out`, counting the records it reads
    /// into `metrics`.
    pub fn new(
        name: String,
        gate: InputGate,
        out: C,
        checkpointing: Option<Rc<TaskCheckpointing>>,
        metrics: SubtaskMetrics,
    ) -> Self {
        Self {
            name,
            gate,
            head: ChainHead::new(out, checkpointing.clone()),
            checkpointing,
            metrics,
            _record: PhantomData,
        }
    }
}

impl<T: Wire, C: Collector<T>> Task for InputTask<T, C> {
    fn poll(&mut self, now: Instant) -> TaskPoll {
        let (gate, name, cp) = (&mut self.gate, &self.name, &self.checkpointing);
        let polled = self
            .head
            .poll(now, |out| match gate.pump(out, INPUT_BUDGET) {
                GateStatus::Moved(n) => InputStep {
                    progressed: n > 0,
                    more: !gate.drained(),
                    ..InputStep::default()
                },
                GateStatus::Barrier(aligned) => {
                    let mut snapshot = TaskSnapshot::new(
                        aligned.barrier,
                        name.clone(),
                        aligned.first_at,
                        aligned.alignment,
                    );
                    out.snapshot(&mut snapshot);
                    snapshot.end_sync();
                    match cp {
                        Some(cp) => cp.writer.submit(snapshot),
                        None => panic!(
                            "{name} received checkpoint barrier {} but checkpointing is off",
                            aligned.barrier.id
                        ),
                    }
                    gate.barrier_done();
                    InputStep {
                        progressed: true,
                        more: true,
                        ..InputStep::default()
                    }
                }
                GateStatus::DataEnded => InputStep {
                    progressed: true,
                    data_ended: true,
                    more: true,
                    ..InputStep::default()
                },
                GateStatus::Ended => InputStep {
                    progressed: true,
                    data_ended: true,
                    ended: true,
                    ..InputStep::default()
                },
            });
        self.gate.publish(&self.metrics);
        polled
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use weir_net::{channel, ChannelSender, Consumer, Doorbell};

    use super::*;
    use crate::operator::tests::VecTail;

    fn buffer(records: &[u64]) -> ChannelEvent {
        let mut b = NetworkBuffer::with_capacity(1024);
        for r in records {
            assert!(b.try_append(r));
        }
        ChannelEvent::Buffer(b)
    }

    fn barrier(id: u64) -> ChannelEvent {
        ChannelEvent::Barrier(CheckpointBarrier {
            id,
            timestamp_ms: 0,
        })
    }

    /// A gate over two channels, with the events of each already sent.
    fn gate(
        exactly_once: bool,
        inputs: [Vec<ChannelEvent>; 2],
    ) -> (InputGate, Vec<ChannelSender>, Vec<Consumer<NetworkBuffer>>) {
        let (mut senders, mut receivers, mut returns) = (Vec::new(), Vec::new(), Vec::new());
        for events in inputs {
            let bell = Arc::new(Doorbell::new());
            let (mut tx, rx, ret) = channel(16, 16, bell.clone(), bell);
            for e in events {
                assert!(tx.send(e).is_ok());
            }
            senders.push(tx);
            receivers.push(rx);
            returns.push(ret);
        }
        (InputGate::new(receivers, exactly_once), senders, returns)
    }

    /// Pumps until the gate reports something other than progress.
    fn pump_until_status(g: &mut InputGate, out: &mut VecTail<u64>) -> GateStatus {
        loop {
            match g.pump(out, 1) {
                GateStatus::Moved(0) => return GateStatus::Moved(0),
                GateStatus::Moved(_) => continue,
                other => return other,
            }
        }
    }

    #[test]
    fn exactly_once_holds_an_input_back_until_the_barrier_is_aligned() {
        let (mut g, _tx, _ret) = gate(
            true,
            [
                vec![buffer(&[1, 2]), barrier(1), buffer(&[3, 4])],
                vec![buffer(&[10]), buffer(&[11]), barrier(1), buffer(&[12])],
            ],
        );
        let mut out = VecTail::default();
        let status = pump_until_status(&mut g, &mut out);
        let GateStatus::Barrier(aligned) = status else {
            panic!("expected the aligned barrier, got {status:?}");
        };
        assert_eq!(aligned.barrier.id, 1);
        // Exactly the records before the barrier on each input: none after.
        assert_eq!(sorted(out.items.clone()), vec![1, 2, 10, 11]);
        g.barrier_done();
        assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
        assert_eq!(sorted(out.items), vec![1, 2, 3, 4, 10, 11, 12]);
    }

    #[test]
    fn at_least_once_does_not_hold_inputs_back() {
        let (mut g, _tx, _ret) = gate(
            false,
            [
                vec![barrier(1), buffer(&[3, 4])],
                vec![buffer(&[10]), buffer(&[11]), buffer(&[12]), barrier(1)],
            ],
        );
        let mut out = VecTail::default();
        let status = pump_until_status(&mut g, &mut out);
        assert!(matches!(status, GateStatus::Barrier(_)), "{status:?}");
        // Input 0's records after its barrier went ahead of the snapshot.
        assert!(out.items.contains(&3), "{:?}", out.items);
    }

    #[test]
    fn end_of_data_and_partitions_and_stale_barriers() {
        let (mut g, _tx, _ret) = gate(
            true,
            [
                vec![
                    buffer(&[1]),
                    ChannelEvent::EndOfData,
                    barrier(2),
                    ChannelEvent::EndOfPartition,
                ],
                vec![
                    barrier(2),
                    ChannelEvent::EndOfData,
                    barrier(2),
                    ChannelEvent::EndOfPartition,
                ],
            ],
        );
        let mut out = VecTail::default();
        let mut seen = Vec::new();
        loop {
            match pump_until_status(&mut g, &mut out) {
                GateStatus::Barrier(b) => {
                    seen.push(format!("barrier {}", b.barrier.id));
                    g.barrier_done();
                }
                GateStatus::DataEnded => seen.push("data ended".into()),
                GateStatus::Ended => {
                    seen.push("ended".into());
                    break;
                }
                GateStatus::Moved(_) => panic!("stalled after {seen:?}"),
            }
        }
        // The second copy of barrier 2 on input 1 is stale and ignored.
        assert_eq!(seen, vec!["barrier 2", "data ended", "ended"]);
        assert_eq!(out.items, vec![1]);
    }

    fn sorted(mut v: Vec<u64>) -> Vec<u64> {
        v.sort_unstable();
        v
    }
}
