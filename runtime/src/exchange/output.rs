//! The key_by exchange: partitioning records by key group into one channel
//! per receiving subtask, and reading them back on the other side.
//!
//! [`ExchangeOutput`] is the tail of a sending chain. It hashes each record's
//! key with the stable key hash, maps the key group to the subtask that owns
//! it, and appends the record to that channel's current buffer. A buffer is
//! sent when it is full (or holds the size the receiver asked for, when it
//! debloats), or when `execution.buffer-timeout` has passed since its first
//! record (immediately with a timeout of zero). A buffer that finds no
//! credit waits in a per-channel queue. While one waits, or when the pool is
//! empty, the output reports itself unavailable and the chain's head stops
//! taking input: backpressure.
//!
//! At a checkpoint the output sends the barrier behind every record before
//! it (aligned), or, for an unaligned snapshot, on each channel's priority
//! path together with the events still queued for lack of credit, which the
//! barrier overtakes ([`weir_net::PriorityBarrier`]). With an aligned
//! checkpoint timeout, a barrier still queued after the timeout is sent
//! that way too.
//!
//! [`InputTask`](crate::exchange::input_task::InputTask) drives the
//! receiving side: an [`InputGate`](crate::exchange::gate::InputGate)
//! pumping records into the chain.
//!
//! Both sides count what they move for the subtask metrics (see
//! [`crate::metrics`]) in plain fields: the output the records it takes and
//! the bytes of every buffer it ships, per channel; the gate the records it
//! reads and the bytes of every buffer it takes, per channel. They publish
//! once per poll.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_net::{
    BufferPool, ChannelEvent, ChannelSender, CheckpointBarrier, LatencyMarker, NetworkBuffer,
    PriorityBarrier, WatermarkStatus, Wire,
};
use weir_state::{KeyGroupAssigner, KeyHash};

use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
use crate::core::barrier::BarrierMode;
use crate::core::snapshot::TaskSnapshot;
use crate::exchange::alignment::alignment_deadline;
use crate::exchange::flush::{AdaptiveDeadline, BufferTimeout};
use crate::metrics::counters::ChannelCounters;
use crate::metrics::subtask::{SubtaskId, SubtaskMetrics};

struct OutChannel {
    sender: ChannelSender,
    current: Option<NetworkBuffer>,
    /// When the first record went into `current`.
    since: Option<Instant>,
    /// Events that found no credit, in order.
    queued: VecDeque<ChannelEvent>,
    /// A barrier sent in band that was still queued, and when it is to
    /// overtake (only with an aligned checkpoint timeout).
    barrier_queued: Option<(CheckpointBarrier, Instant)>,
    /// Ship the current buffer once it holds this many bytes (what the
    /// receiver announced; refreshed at every flush).
    fill: usize,
    /// Bytes of the buffers shipped, and as last published.
    shipped: u64,
    published: u64,
    counters: Arc<ChannelCounters>,
    /// Records in the buffers shipped (counted per buffer).
    records: u64,
    /// Latency markers behind the records of `current`: they go out right
    /// after that buffer does, so they wait for the buffer timeout as the
    /// records do (Flink serializes a marker into the buffer). At most
    /// [`MARKERS_PER_BUFFER`].
    markers: Vec<LatencyMarker>,
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
            self.records += u64::from(buf.records());
            self.enqueue(ChannelEvent::Buffer(buf));
        }
        for i in 0..self.markers.len() {
            self.enqueue(ChannelEvent::LatencyMarker(self.markers[i]));
        }
        self.markers.clear();
    }

    fn publish(&mut self) {
        if self.shipped != self.published {
            self.published = self.shipped;
            self.counters.publish_shipped(self.shipped);
        }
    }

    /// Sends `barrier` on the priority path, handing over the queued events
    /// it overtakes; in band if the priority path is full.
    fn send_overtaking(&mut self, barrier: CheckpointBarrier) {
        let overtaken: Vec<ChannelEvent> = self.queued.drain(..).collect();
        let position = self.sender.position();
        if let Err(back) = self.sender.send_priority(PriorityBarrier {
            barrier,
            position,
            overtaken,
        }) {
            self.queued.extend(back.overtaken);
            self.enqueue(ChannelEvent::Barrier(barrier));
        }
    }

    /// With an aligned checkpoint timeout: a barrier still queued when its
    /// checkpoint's alignment times out is sent overtaking the events queued
    /// before it. Returns when to look again, if it is still queued.
    fn convert_late_barrier(&mut self, now: Instant) -> Option<Instant> {
        let (barrier, due) = self.barrier_queued?;
        let Some(at) = self
            .queued
            .iter()
            .position(|e| matches!(e, ChannelEvent::Barrier(b) if *b == barrier))
        else {
            self.barrier_queued = None; // it went out in band
            return None;
        };
        if now < due {
            return Some(due);
        }
        self.barrier_queued = None;
        let after: VecDeque<ChannelEvent> = self.queued.split_off(at + 1);
        self.queued.pop_back(); // the barrier itself
        tracing::trace!(
            target: crate::core::log::CHECKPOINT,
            checkpoint = barrier.id,
            "output: barrier overtakes (alignment timeout)"
        );
        self.send_overtaking(barrier);
        self.queued.extend(after);
        None
    }
}

/// Most latency markers that wait behind one partly filled buffer.
const MARKERS_PER_BUFFER: usize = 64;

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
    /// How long a partly filled buffer may wait (`None`: until full).
    timeout: Option<Duration>,
    /// With `execution.buffer-timeout.interval = auto`: each channel's own
    /// deadline, adapted in [`ChainControl::flush`].
    adaptive: Option<Box<[AdaptiveDeadline]>>,
    flush_every_record: bool,
    available: bool,
    finishing: bool,
    /// Most buffers the pool may own after overdrafts: what a return ring
    /// holds, so a return can never overflow.
    max_pool: usize,
    /// How barriers are sent.
    barrier_mode: BarrierMode,
    /// End of data was sent: later barriers (the final checkpoint's) go in
    /// band, behind all data, never overtaking it.
    data_ended: bool,
    metrics: SubtaskMetrics,
    /// Latency markers passed on so far: the next goes into channel
    /// `next_marker % channels`.
    next_marker: usize,
    /// An unpooled buffer was lent (warned once).
    lent_unpooled: bool,
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
        buffer_timeout: impl Into<BufferTimeout>,
        barrier_mode: BarrierMode,
    ) -> Self {
        let buffer_timeout = buffer_timeout.into();
        let n = senders.len();
        let assigner = KeyGroupAssigner::new(max_parallelism, n as u32);
        let capacity = pool.total() + 4;
        let channels = senders
            .into_iter()
            .map(|sender| OutChannel {
                sender,
                current: None,
                since: None,
                queued: VecDeque::with_capacity(capacity),
                barrier_queued: None,
                fill: usize::MAX,
                shipped: 0,
                published: 0,
                counters: Arc::default(),
                records: 0,
                markers: Vec::new(),
            })
            .collect();
        Self {
            key_fn,
            assigner,
            channels,
            available: pool.available() > 0,
            pool,
            timeout: buffer_timeout.interval(),
            adaptive: match buffer_timeout {
                BufferTimeout::Auto { target } => {
                    Some(vec![AdaptiveDeadline::new(target); n].into_boxed_slice())
                }
                _ => None,
            },
            flush_every_record: buffer_timeout.flushes_every_record(),
            finishing: false,
            max_pool,
            barrier_mode,
            data_ended: false,
            metrics: unregistered_metrics(),
            next_marker: 0,
            lent_unpooled: false,
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

    /// Only reachable when one input record, or one watermark's firing,
    /// produced more output than the whole pool holds (a large flat_map;
    /// every window of a bounded input firing at its end): the head checks
    /// availability before every record, but cannot stop in the middle of
    /// one, and the consumer may be this very worker, which cannot drain
    /// its input before the record is done. Grow the pool up to what its
    /// return rings hold, then lend unpooled buffers, freed by the
    /// consumer: the excess lives in memory until consumed, where Flink
    /// would block the firing on a consumer of another thread.
    #[cold]
    fn overdraft(&mut self) -> NetworkBuffer {
        // Ship what is ready first: returns may follow before the next record.
        for ch in self.channels.iter_mut() {
            ch.drain_queue();
        }
        if let Some(b) = self.pool.request() {
            return b;
        }
        if self.pool.total() < self.max_pool {
            return self.pool.grow();
        }
        if !self.lent_unpooled {
            self.lent_unpooled = true;
            tracing::warn!(
                buffers = self.max_pool,
                buffer_bytes = self.pool.buffer_size(),
                "one record's output (or one firing's) filled the whole buffer pool; \
                 the rest is held in memory until consumed"
            );
        }
        NetworkBuffer::unpooled(self.pool.buffer_size())
    }

    /// An unpooled buffer holding `record` alone: for a record larger
    /// than a network buffer (a long text or document), which Flink would
    /// split across buffers. Shipped like any other and freed by the
    /// consumer; the next record starts a pooled buffer again.
    #[cold]
    #[inline(never)]
    fn oversized(record: &T) -> NetworkBuffer {
        let mut buf = NetworkBuffer::unpooled(record.encoded_len());
        let fits = buf.try_append(record);
        assert!(fits, "a buffer of a record's encoded length holds it");
        buf
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
        let key = (self.key_fn)(&record);
        let target = self.assigner.subtask_for_hash(key.key_hash()) as usize;
        self.send_to(target, &record);
    }

    /// Appends records to their channels' current buffers in one loop
    /// that holds the exchange's own fields (key routing, channels) in
    /// locals: the per-record path re-reads them after every write into a
    /// buffer. A record that needs a new buffer, or a flush per record,
    /// goes through `send_to`.
    #[inline]
    fn collect_many<I: Iterator<Item = T>>(&mut self, records: &mut I, limit: usize) -> usize {
        let mut taken = 0;
        if self.flush_every_record {
            // A buffer per record (buffer timeout 0): one by one.
            while taken < limit && self.available {
                let Some(record) = records.next() else {
                    break;
                };
                self.collect(record);
                taken += 1;
            }
            return taken;
        }
        while taken < limit && self.available {
            // Branch on the key-group mask once per run, not per record.
            let stopped = match self.assigner.masked() {
                Some(masked) => append_run(
                    &self.key_fn,
                    |hash| masked.subtask_for_hash(hash),
                    &mut self.channels,
                    records,
                    limit,
                    &mut taken,
                ),
                None => {
                    let assigner = &self.assigner;
                    append_run(
                        &self.key_fn,
                        |hash| assigner.subtask_for_hash(hash),
                        &mut self.channels,
                        records,
                        limit,
                        &mut taken,
                    )
                }
            };
            let Some((target, record)) = stopped else {
                return taken;
            };
            self.send_to(target, &record);
        }
        taken
    }
}

/// The loop of [`ExchangeOutput::collect_many`]: appends records to their
/// channels' current buffers until `limit` records are taken, the
/// records end (`None`), or one does not fit its channel's current buffer
/// (it is returned, taken but not written, with its channel).
#[inline(always)]
fn append_run<T: Wire, K: KeyHash>(
    key_fn: &impl Fn(&T) -> K,
    route: impl Fn(u64) -> u32,
    channels: &mut [OutChannel],
    records: &mut impl Iterator<Item = T>,
    limit: usize,
    taken: &mut usize,
) -> Option<(usize, T)> {
    let mut n = *taken;
    let stopped = loop {
        if n == limit {
            break None;
        }
        let Some(record) = records.next() else {
            break None;
        };
        n += 1;
        let target = route(key_fn(&record).key_hash()) as usize;
        let appended = match channels[target].current.as_mut() {
            Some(buf) => buf.try_append(&record),
            None => false,
        };
        if !appended {
            break Some((target, record));
        }
    };
    *taken = n;
    stopped
}

impl<T, K, KF> ExchangeOutput<T, K, KF>
where
    T: Wire,
    K: KeyHash,
    KF: Fn(&T) -> K,
{
    /// Appends `record` to every channel's buffer (a broadcast edge).
    #[inline]
    pub(crate) fn send_to_all(&mut self, record: &T) {
        for target in 0..self.channels.len() {
            self.send_to(target, record);
        }
        self.available = self.channels.iter().all(|c| c.queued.is_empty())
            && (self.pool.available() > 0 || self.pool.reclaim() > 0);
    }

    /// Number of receiving subtasks.
    pub(crate) fn channel_count(&self) -> usize {
        self.channels.len()
    }

    /// Appends `record` to the buffer of channel `target` (the per-record
    /// path of every partitioning: by key, to all, round-robin).
    #[inline(always)]
    pub(crate) fn send_to(&mut self, target: usize, record: &T) {
        let ch = &mut self.channels[target];
        if let Some(buf) = ch.current.as_mut() {
            if buf.try_append(record) {
                if self.flush_every_record {
                    ch.ship_current();
                    self.available &= ch.queued.is_empty();
                }
                return;
            }
            ch.ship_current();
        }
        let mut buf = self.fresh_buffer();
        // Filled up to the size the receiver asked for (debloating); a
        // record larger than that still gets the whole buffer.
        buf.limit_to(self.channels[target].fill);
        if !buf.try_append(record) {
            buf.limit_to(usize::MAX);
            if !buf.try_append(record) {
                self.pool.recycle(buf);
                buf = Self::oversized(record);
            }
        }
        let ch = &mut self.channels[target];
        ch.current = Some(buf);
        if self.flush_every_record {
            ch.ship_current();
        } else if self.timeout.is_some() {
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
    /// Each record needs at most one fresh buffer (when the one it goes
    /// into is full), so `records` free buffers take them without an
    /// overdraft.
    #[inline(always)]
    fn is_available_for(&self, records: usize) -> bool {
        self.available && self.pool.available() >= records
    }

    fn flush(&mut self, now: Instant) -> FlushOutcome {
        let mut progressed = false;
        let mut next_deadline: Option<Instant> = None;
        let mut waiting = false;
        for (c, ch) in self.channels.iter_mut().enumerate() {
            let timeout = match self.adaptive.as_mut() {
                Some(a) => {
                    let backlog = ch.shipped.saturating_sub(ch.counters.taken());
                    Some(a[c].adapt(now, ch.shipped, backlog))
                }
                None => self.timeout,
            };
            if let Some(at) = ch.convert_late_barrier(now) {
                next_deadline = Some(next_deadline.map_or(at, |d| d.min(at)));
            }
            progressed |= ch.drain_queue();
            ch.fill = ch.sender.buffer_size();
            if let (Some(since), Some(timeout)) = (ch.since, timeout) {
                let due = since + timeout;
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
        self.data_ended = true;
        self.available = false;
    }

    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        // The barrier goes behind every record before it, without waiting
        // for the buffer timeout; an unaligned one overtakes them (never a
        // savepoint's).
        let barrier = snapshot.barrier;
        let overtake = snapshot.unaligned && !barrier.kind.must_align() && !self.data_ended;
        for ch in self.channels.iter_mut() {
            ch.ship_current();
            if overtake {
                ch.send_overtaking(barrier);
            } else {
                ch.enqueue(ChannelEvent::Barrier(barrier));
                // A savepoint's barrier waits its turn however long.
                if let BarrierMode::AlignedWithTimeout(t) =
                    self.barrier_mode.for_barrier(barrier.kind)
                {
                    if !ch.queued.is_empty() {
                        ch.barrier_queued = Some((barrier, alignment_deadline(&barrier, t)));
                    }
                }
            }
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
        // Records out as shipped: those still in a current buffer follow
        // when it is shipped.
        let records = self.channels.iter().map(|c| c.records).sum();
        self.metrics.publish_records_out(records);
        for ch in self.channels.iter_mut() {
            ch.publish();
        }
    }

    fn output_pending(&self) -> bool {
        self.channels.iter().any(|c| !c.queued.is_empty())
    }

    fn on_watermark(&mut self, watermark: i64) {
        self.broadcast(|| ChannelEvent::Watermark(watermark));
    }

    fn on_watermark_status(&mut self, status: WatermarkStatus) {
        self.broadcast(|| ChannelEvent::WatermarkStatus(status));
    }

    /// Into one channel, the next in turn (Flink picks one at random), behind
    /// the records before it: after the partly filled buffer once that is
    /// shipped, at once if there is none. Past [`MARKERS_PER_BUFFER`]
    /// waiting behind one buffer (a long buffer timeout, a short marker
    /// interval), newer ones are dropped.
    fn on_latency_marker(&mut self, marker: LatencyMarker) {
        if self.data_ended || self.channels.is_empty() {
            return;
        }
        let c = self.next_marker % self.channels.len();
        self.next_marker = self.next_marker.wrapping_add(1);
        let ch = &mut self.channels[c];
        if ch.current.is_some() {
            if ch.markers.len() < MARKERS_PER_BUFFER {
                ch.markers.push(marker);
            }
        } else {
            ch.enqueue(ChannelEvent::LatencyMarker(marker));
            self.available = self.channels.iter().all(|c| c.queued.is_empty())
                && (self.pool.available() > 0 || self.pool.reclaim() > 0);
        }
    }

    /// An exchange output does not fail: a record too large for a buffer
    /// gets one of its own (see `oversized`).
    #[inline]
    fn failure(&self) -> Option<&TaskError> {
        None
    }
}

impl<T, K, KF> ExchangeOutput<T, K, KF> {
    /// Sends a watermark or watermark status into every channel, behind
    /// the records before it (the partly filled buffers are shipped
    /// first). Nothing follows the end of data.
    fn broadcast(&mut self, event: impl Fn() -> ChannelEvent) {
        if self.data_ended {
            return;
        }
        for ch in self.channels.iter_mut() {
            ch.ship_current();
            ch.enqueue(event());
        }
        self.available = self.channels.iter().all(|c| c.queued.is_empty())
            && (self.pool.available() > 0 || self.pool.reclaim() > 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use weir_net::{channel, ChannelEvent, ChannelReceiver, Doorbell};

    /// One firing's output far beyond every buffer the pool may own, with
    /// the consumer unable to run before it ends (as on one worker): every
    /// record arrives in order, the excess buffers are freed rather than
    /// returned, and the pool is reused afterwards at its bounded size.
    #[test]
    fn output_beyond_the_whole_pool_is_lent_unpooled_buffers() {
        let (size, max_pool) = (4, 6);
        let mut pool = BufferPool::new(size, 64);
        let bell = Arc::new(Doorbell::new());
        let (tx, mut rx, ret) = channel(2, max_pool, bell.clone(), bell);
        pool.add_return_path(ret);
        let mut out = ExchangeOutput::new(
            |r: &(u64, u64)| r.0,
            128,
            vec![tx],
            pool,
            max_pool,
            Duration::from_secs(60),
            BarrierMode::Aligned,
        );
        let drain = |rx: &mut ChannelReceiver, got: &mut Vec<u64>| {
            while let Some(event) = rx.recv() {
                if let ChannelEvent::Buffer(b) = event {
                    got.extend(
                        b.read_records::<(u64, u64)>()
                            .map(|r| r.expect("decodes").1),
                    );
                    rx.recycle(b);
                }
            }
        };
        let mut got = Vec::new();
        for round in 0..2u64 {
            // 500 records of 16 bytes into 64-byte buffers: ~125 buffers
            // against a pool of at most 6, nothing consumed meanwhile.
            for i in 0..500 {
                out.collect((7, round * 1000 + i));
            }
            assert!(out.lent_unpooled);
            for _ in 0..10_000 {
                // Past the buffer timeout: the last, partly filled buffer ships too.
                out.flush(Instant::now() + Duration::from_secs(120));
                drain(&mut rx, &mut got);
                if got.len() == 500 * (round as usize + 1) {
                    break;
                }
            }
            let want: Vec<u64> = (0..500).map(|i| round * 1000 + i).collect();
            assert_eq!(got[500 * round as usize..], want[..], "round {round}");
            out.pool.reclaim();
            assert!(out.pool.total() <= max_pool);
            assert_eq!(
                out.pool.available(),
                out.pool.total(),
                "every pooled buffer came back"
            );
        }
    }

    /// Records larger than a network buffer (a long text) ship alone in
    /// buffers of their own size, in order with the small ones around
    /// them; the pool's buffers all come back.
    #[test]
    fn a_record_larger_than_a_buffer_ships_in_its_own() {
        let mut pool = BufferPool::new(4, 64);
        let bell = Arc::new(Doorbell::new());
        let (tx, mut rx, ret) = channel(8, 6, bell.clone(), bell);
        pool.add_return_path(ret);
        let mut out = ExchangeOutput::new(
            |r: &(u64, String)| r.0,
            128,
            vec![tx],
            pool,
            6,
            Duration::from_secs(60),
            BarrierMode::Aligned,
        );
        let sent: Vec<(u64, String)> = (0..40u64)
            .map(|i| {
                let len = if i % 7 == 3 { 1000 + i as usize } else { 3 };
                (7, "x".repeat(len))
            })
            .collect();
        let mut got = Vec::new();
        for r in &sent {
            out.collect(r.clone());
            out.flush(Instant::now() + Duration::from_secs(120));
            while let Some(event) = rx.recv() {
                if let ChannelEvent::Buffer(b) = event {
                    got.extend(
                        b.read_records::<(u64, String)>()
                            .map(|r| r.expect("decodes")),
                    );
                    rx.recycle(b);
                }
            }
        }
        assert_eq!(got, sent);
        out.pool.reclaim();
        assert_eq!(out.pool.available(), out.pool.total());
        assert!(out.pool.total() <= 6);
    }
}
