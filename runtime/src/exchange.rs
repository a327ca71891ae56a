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
//! the buffer to its owner's pool when done.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

use weir_net::{BufferPool, ChannelEvent, ChannelReceiver, ChannelSender, NetworkBuffer, Wire};
use weir_state::{KeyGroupAssigner, KeyHash};

use crate::operator::{ChainControl, Collector, FlushOutcome};
use crate::task::{ChainHead, InputStep, Task, TaskPoll};

struct OutChannel {
    sender: ChannelSender,
    current: Option<NetworkBuffer>,
    /// When the first record went into `current`.
    since: Option<Instant>,
    /// Events that found no credit, in order.
    queued: VecDeque<ChannelEvent>,
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
            self.enqueue(ChannelEvent::Buffer(buf));
        }
    }
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
            _types: PhantomData,
        }
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
}

/// A buffer being read, and where.
struct Reading {
    channel: usize,
    buffer: NetworkBuffer,
    pos: usize,
}

/// The receiving side of an exchange for one subtask: its input channels.
pub struct InputGate {
    receivers: Box<[ChannelReceiver]>,
    ended: Box<[bool]>,
    open: usize,
    next: usize,
    reading: Option<Reading>,
}

/// What [`InputGate::pump`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateStatus {
    /// Moved this many records and events; more may be waiting.
    Moved(usize),
    /// Every channel delivered end-of-partition.
    Ended,
}

impl InputGate {
    /// A gate over `receivers` (one per sending subtask).
    pub fn new(receivers: Vec<ChannelReceiver>) -> Self {
        let n = receivers.len();
        Self {
            receivers: receivers.into_boxed_slice(),
            ended: vec![false; n].into_boxed_slice(),
            open: n,
            next: 0,
            reading: None,
        }
    }

    /// Moves up to about `budget` records into `out`, stopping early when
    /// `out` is unavailable (backpressure) or nothing is waiting.
    #[inline]
    pub fn pump<T: Wire, C: Collector<T>>(&mut self, out: &mut C, budget: usize) -> GateStatus {
        let mut moved = 0;
        loop {
            if let Some(reading) = self.reading.as_mut() {
                let bytes = reading.buffer.as_bytes();
                let mut pos = reading.pos;
                while pos < bytes.len() {
                    if !out.is_available() {
                        reading.pos = pos;
                        return GateStatus::Moved(moved);
                    }
                    match T::read(&bytes[pos..]) {
                        Ok((record, n)) => {
                            pos += n;
                            moved += 1;
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
                if moved >= budget {
                    return GateStatus::Moved(moved);
                }
            }
            if self.open == 0 {
                return GateStatus::Ended;
            }
            if !self.next_event() {
                return GateStatus::Moved(moved);
            }
            moved += 1;
        }
    }

    /// Takes the next event from the channels round-robin; false if none.
    fn next_event(&mut self) -> bool {
        let n = self.receivers.len();
        for _ in 0..n {
            let c = self.next;
            self.next = if c + 1 == n { 0 } else { c + 1 };
            if self.ended[c] {
                continue;
            }
            let Some(event) = self.receivers[c].recv() else {
                continue;
            };
            match event {
                ChannelEvent::Buffer(buffer) => {
                    self.reading = Some(Reading {
                        channel: c,
                        buffer,
                        pos: 0,
                    });
                }
                ChannelEvent::EndOfPartition => {
                    self.ended[c] = true;
                    self.open -= 1;
                }
                ChannelEvent::Barrier(b) => panic!(
                    "channel {c} delivered checkpoint barrier {} but this job runs without checkpointing",
                    b.id
                ),
                ChannelEvent::Watermark(w) => panic!(
                    "channel {c} delivered watermark {w} but this job has no event-time operators"
                ),
            }
            return true;
        }
        false
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
    _record: PhantomData<fn(T)>,
}

impl<T, C> InputTask<T, C> {
    /// A task pumping `gate` into `out`.
    pub fn new(name: String, gate: InputGate, out: C) -> Self {
        Self {
            name,
            gate,
            head: ChainHead::new(out),
            _record: PhantomData,
        }
    }
}

impl<T: Wire, C: Collector<T>> Task for InputTask<T, C> {
    fn poll(&mut self, now: Instant) -> TaskPoll {
        let gate = &mut self.gate;
        self.head
            .poll(now, |out| match gate.pump(out, INPUT_BUDGET) {
                GateStatus::Moved(n) => InputStep {
                    progressed: n > 0,
                    ..InputStep::default()
                },
                GateStatus::Ended => InputStep {
                    ended: true,
                    ..InputStep::default()
                },
            })
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}
