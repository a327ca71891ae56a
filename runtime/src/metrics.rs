//! Metrics: per-worker counters, and per-subtask metrics named as in Flink
//! (`busyTimeMsPerSecond`, `backPressuredTimeMsPerSecond`,
//! `idleTimeMsPerSecond`, `numRecordsIn/Out`, `numBytesIn/Out`, in-flight
//! bytes per output channel), which the control thread reads for progress
//! lines and the final report.
//!
//! # Publishing
//!
//! Workers publish into shared atomics in batches, never per record: a sink
//! adds to its worker's record count every 1,024 records, and every task
//! stores its cumulative counters (plain relaxed stores by their single
//! writer, no read-modify-write) once per poll, which handles a bounded
//! batch of records. The control thread only reads. A subtask's three times
//! are published together under a sequence lock (atomics only), so that a
//! reader never sees a half-updated set.
//!
//! # How a subtask's wall time is split
//!
//! A worker runs several subtasks (tasks) on one core, polling them
//! round-robin. It reads the clock once after each task poll (the end of
//! one poll is the start of the next), and every instant of a subtask's
//! life, from the release of the workers to the poll in which it finishes,
//! counts in exactly one of three states, so the three add up to the
//! elapsed time (1000 ms per second):
//!
//! - **During its own poll**: *busy* if the poll made progress (moved
//!   records or events, flushed a buffer, took a snapshot); a poll that
//!   moved nothing only looked, and its time counts in the state the poll
//!   ends in.
//! - **From the end of a poll to the start of its next one**, what the poll
//!   ended waiting for:
//!   - *backpressured* if it stopped because its output could take no more:
//!     no free buffer in its pool, or a buffer (or, at the end, end-of-data
//!     or end-of-partition) waiting for credit on a channel. As in Flink,
//!     this is checked first: a subtask whose output is blocked is
//!     backpressured even if its input is empty too.
//!   - *idle* if its input had nothing more: empty input channels (or only
//!     channels blocked by barrier alignment), a paced source before its
//!     next record, or, after its input ended, waiting for upstream's
//!     end-of-partition or for the final checkpoint.
//!   - *busy* if it stopped only because it used up its per-poll budget:
//!     it is runnable and waits for its worker, which is running its other
//!     tasks (or glommio's, such as the snapshot writer). Flink counts a
//!     runnable task thread that the operating system does not run as busy
//!     too.
//!
//! Time in which the worker is parked or descheduled by the operating
//! system counts, likewise, as what each of its subtasks was last doing.
//! Rates are deltas of these cumulative times over the interval between
//! two readings (or over the subtask's life for the final summary),
//! scaled to milliseconds per second. The backpressure level follows
//! Flink's thresholds on the backpressured ratio: OK up to 10%, LOW up to
//! 50%, HIGH above.
//!
//! Two consequences worth knowing:
//!
//! - A reading taken while a poll runs counts the poll so far in the state
//!   before it; the poll's own accounting, published when it ends, moves
//!   that time into the next interval's figures. One interval's split can
//!   so be off by up to one poll (a few milliseconds; more for an operator
//!   that takes microseconds per record), never the whole run's.
//! - Budgets are counted in records, not time, so a subtask that shares its
//!   worker with a slow one (a sink spending 2 µs per record takes 16 ms
//!   per poll) gets the core rarely. It then spends its time runnable,
//!   which counts as busy, although with a core of its own it would fill
//!   its output and be backpressured. The slow subtask shows busy near
//!   1000 ms/s on the same worker: that one is the bottleneck.
//!
//! # Records, bytes and in-flight bytes
//!
//! `records_in` counts records a subtask read from its input gate (zero for
//! a source), `records_out` records its chain emitted at its end (into the
//! exchange, or into its sink). Bytes are counted per channel, per buffer:
//! the sender counts a buffer's bytes when it ships it (queued for credit
//! or sent), the receiver when it takes it from the channel. `bytes_out`
//! and `bytes_in` are their sums over a subtask's channels, and a
//! channel's *in-flight bytes* are shipped minus taken: full buffers
//! waiting for credit or in the channel's ring, not yet read. The partly
//! filled buffer a sender is still writing is not in flight.

use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A shared, monotonically increasing count.
#[derive(Clone, Debug, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    /// Adds `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        if n != 0 {
            self.0.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counters of one worker.
#[derive(Clone, Debug, Default)]
pub struct WorkerMetrics {
    /// Records emitted by the worker's source subtasks.
    pub source_records: Counter,
    /// Records that reached the worker's sink subtasks.
    pub sink_records: Counter,
    /// Times the worker parked because it had nothing to do.
    pub parks: Counter,
    /// The worker's subtasks, registered once it has built them.
    pub(crate) subtasks: Arc<OnceLock<Vec<SubtaskEntry>>>,
}

/// The instant every metric time is measured from (nanoseconds since it):
/// fixed at its first use in the process.
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// `t` in nanoseconds since `epoch` (0 if earlier).
#[inline]
fn ns_since(epoch: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(epoch).as_nanos() as u64
}

/// A `u64` alone on its cache lines (two, against adjacent-line prefetch),
/// so that writers on different cores do not slow each other down.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Padded(AtomicU64);

/// Bytes through one channel: the sending subtask publishes what it
/// shipped, the receiving one what it took, each once per poll; the
/// control thread reads both.
#[derive(Debug, Default)]
pub struct ChannelCounters {
    shipped: Padded,
    taken: Padded,
}

impl ChannelCounters {
    /// The sender shipped `bytes` in total.
    #[inline]
    pub(crate) fn publish_shipped(&self, bytes: u64) {
        self.shipped.0.store(bytes, Ordering::Relaxed);
    }

    /// The receiver took `bytes` in total.
    #[inline]
    pub(crate) fn publish_taken(&self, bytes: u64) {
        self.taken.0.store(bytes, Ordering::Relaxed);
    }

    /// Bytes the sender shipped (as of its last poll).
    pub fn shipped(&self) -> u64 {
        self.shipped.0.load(Ordering::Relaxed)
    }

    /// Bytes the receiver took (as of its last poll).
    pub fn taken(&self) -> u64 {
        self.taken.0.load(Ordering::Relaxed)
    }

    /// Bytes shipped and not yet taken: waiting for credit or in the ring.
    /// (Each side publishes once per poll, so a reading may lag by a poll;
    /// it never goes below zero.)
    pub fn in_flight(&self) -> u64 {
        let taken = self.taken();
        self.shipped().saturating_sub(taken)
    }
}

/// Per-channel byte counts kept by the side that owns the channel's end,
/// published once per poll into the shared [`ChannelCounters`].
#[derive(Debug)]
pub(crate) struct ChannelBytes {
    counters: Box<[Arc<ChannelCounters>]>,
    local: Box<[u64]>,
    published: Box<[u64]>,
}

impl ChannelBytes {
    /// Counts for `counters`, one per channel.
    pub fn new(counters: Vec<Arc<ChannelCounters>>) -> Self {
        let n = counters.len();
        Self {
            counters: counters.into_boxed_slice(),
            local: vec![0; n].into_boxed_slice(),
            published: vec![0; n].into_boxed_slice(),
        }
    }

    /// Unshared counts for `n` channels (a component built outside a job).
    pub fn unshared(n: usize) -> Self {
        Self::new((0..n).map(|_| Arc::default()).collect())
    }

    /// `bytes` more through channel `c`.
    #[inline]
    pub fn add(&mut self, c: usize, bytes: usize) {
        self.local[c] += bytes as u64;
    }

    /// Publishes the channels that changed as shipped (sender) or taken
    /// (receiver) bytes.
    pub fn publish(&mut self, shipped: bool) {
        for ((counters, local), published) in self
            .counters
            .iter()
            .zip(self.local.iter())
            .zip(self.published.iter_mut())
        {
            if *local != *published {
                *published = *local;
                if shipped {
                    counters.publish_shipped(*local);
                } else {
                    counters.publish_taken(*local);
                }
            }
        }
    }
}

/// What a subtask is doing, for the split of its wall time (see the module
/// documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeState {
    /// Working, or runnable and waiting for its worker.
    Busy,
    /// Blocked on output: no buffer, or no credit downstream.
    BackPressured,
    /// Waiting for input.
    #[default]
    Idle,
}

impl TimeState {
    fn index(self) -> usize {
        match self {
            TimeState::Busy => 0,
            TimeState::BackPressured => 1,
            TimeState::Idle => 2,
        }
    }

    fn from_index(i: u64) -> Self {
        match i {
            0 => TimeState::Busy,
            1 => TimeState::BackPressured,
            _ => TimeState::Idle,
        }
    }
}

/// Marks a time that has not happened (not started, not ended).
const NEVER: u64 = u64::MAX;

/// Where a subtask runs and what it is called.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubtaskId {
    /// The stage: its operators' uids joined by " -> ".
    pub stage: String,
    /// The subtask's index in `0..parallelism`.
    pub index: usize,
    /// The stage's parallelism.
    pub parallelism: usize,
    /// The worker that runs it.
    pub worker: usize,
}

impl SubtaskId {
    /// Flink's task name: "stage (i/P)".
    pub fn task_name(&self) -> String {
        format!("{} ({}/{})", self.stage, self.index + 1, self.parallelism)
    }

    /// A compact name for progress lines: the stage's first operator and
    /// the subtask index, as in `w1-keyed-count#0`.
    pub fn short_name(&self) -> String {
        let head = self.stage.split(" -> ").next().unwrap_or(&self.stage);
        format!("{head}#{}", self.index)
    }
}

/// The shared side of one subtask's metrics.
#[derive(Debug)]
struct SubtaskShared {
    id: SubtaskId,
    /// Sequence lock over the time fields below: odd while being written.
    seq: AtomicU64,
    state: AtomicU64,
    since: AtomicU64,
    busy: AtomicU64,
    backpressured: AtomicU64,
    idle: AtomicU64,
    started: AtomicU64,
    ended: AtomicU64,
    records_in: AtomicU64,
    records_out: AtomicU64,
}

/// One subtask's metrics, shared by the components that write them (its
/// task, its chain's tail, its worker's loop) and the control thread.
#[derive(Clone, Debug)]
pub struct SubtaskMetrics(Arc<SubtaskShared>);

/// A consistent reading of a subtask's times (nanoseconds since
/// [`epoch`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct TimeReading {
    state: TimeState,
    since: u64,
    totals: [u64; 3],
    started: Option<u64>,
    ended: Option<u64>,
}

impl SubtaskMetrics {
    /// Metrics of subtask `id`, not started yet.
    pub fn new(id: SubtaskId) -> Self {
        Self(Arc::new(SubtaskShared {
            id,
            seq: AtomicU64::new(0),
            state: AtomicU64::new(TimeState::Idle.index() as u64),
            since: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            backpressured: AtomicU64::new(0),
            idle: AtomicU64::new(0),
            started: AtomicU64::new(NEVER),
            ended: AtomicU64::new(NEVER),
            records_in: AtomicU64::new(0),
            records_out: AtomicU64::new(0),
        }))
    }

    /// Who this is.
    pub fn id(&self) -> &SubtaskId {
        &self.0.id
    }

    /// Publishes the records read from the input so far.
    #[inline]
    pub(crate) fn publish_records_in(&self, n: u64) {
        self.0.records_in.store(n, Ordering::Relaxed);
    }

    /// Publishes the records emitted at the chain's end so far.
    #[inline]
    pub(crate) fn publish_records_out(&self, n: u64) {
        self.0.records_out.store(n, Ordering::Relaxed);
    }

    /// Records read from the input (as of the last poll).
    pub fn records_in(&self) -> u64 {
        self.0.records_in.load(Ordering::Relaxed)
    }

    /// Records emitted at the chain's end (as of the last poll).
    pub fn records_out(&self) -> u64 {
        self.0.records_out.load(Ordering::Relaxed)
    }

    /// Publishes the times (single writer: the subtask's worker).
    fn publish_time(&self, state: TimeState, since: u64, totals: [u64; 3], ended: u64) {
        let s = &self.0;
        let seq = s.seq.load(Ordering::Relaxed);
        s.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        s.state.store(state.index() as u64, Ordering::Relaxed);
        s.since.store(since, Ordering::Relaxed);
        s.busy.store(totals[0], Ordering::Relaxed);
        s.backpressured.store(totals[1], Ordering::Relaxed);
        s.idle.store(totals[2], Ordering::Relaxed);
        s.ended.store(ended, Ordering::Relaxed);
        s.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// Reads the times consistently (retries while the worker writes).
    fn read_time(&self) -> TimeReading {
        let s = &self.0;
        loop {
            let before = s.seq.load(Ordering::Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let state = s.state.load(Ordering::Relaxed);
            let since = s.since.load(Ordering::Relaxed);
            let totals = [
                s.busy.load(Ordering::Relaxed),
                s.backpressured.load(Ordering::Relaxed),
                s.idle.load(Ordering::Relaxed),
            ];
            let started = s.started.load(Ordering::Relaxed);
            let ended = s.ended.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            if s.seq.load(Ordering::Relaxed) == before {
                return TimeReading {
                    state: TimeState::from_index(state),
                    since,
                    totals,
                    started: (started != NEVER).then_some(started),
                    ended: (ended != NEVER).then_some(ended),
                };
            }
        }
    }
}

/// The worker's side of a subtask's time: which state it is in since when,
/// and the time spent in each state before that. It is told about every
/// poll of the subtask and publishes after each one.
#[derive(Debug)]
pub(crate) struct TaskClock {
    metrics: SubtaskMetrics,
    epoch: Instant,
    state: TimeState,
    since: u64,
    totals: [u64; 3],
}

impl TaskClock {
    /// Starts accounting at `started`: the subtask is idle until its first
    /// poll.
    pub fn start(metrics: SubtaskMetrics, epoch: Instant, started: Instant) -> Self {
        Self::start_at(metrics, epoch, ns_since(epoch, started))
    }

    /// As [`TaskClock::start`], at `started` nanoseconds since `epoch`.
    fn start_at(metrics: SubtaskMetrics, epoch: Instant, started: u64) -> Self {
        let clock = Self {
            metrics,
            epoch,
            state: TimeState::Idle,
            since: started,
            totals: [0; 3],
        };
        let s = &clock.metrics.0;
        let seq = s.seq.load(Ordering::Relaxed);
        s.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        s.started.store(started, Ordering::Relaxed);
        s.since.store(started, Ordering::Relaxed);
        s.seq.store(seq.wrapping_add(2), Ordering::Release);
        clock
    }

    /// A poll ran from `start` to `end`; it `progressed` or not, and ended
    /// waiting in state `next` (ignored if `finished`: the subtask's time
    /// stops at `end`).
    #[inline]
    pub fn on_poll(
        &mut self,
        start: Instant,
        end: Instant,
        progressed: bool,
        next: TimeState,
        finished: bool,
    ) {
        let (start, end) = (ns_since(self.epoch, start), ns_since(self.epoch, end));
        self.record(start, end, progressed, next, finished);
    }

    fn record(&mut self, start: u64, end: u64, progressed: bool, next: TimeState, finished: bool) {
        let start = start.clamp(self.since, end.max(self.since));
        let end = end.max(start);
        self.totals[self.state.index()] += start - self.since;
        let during = if progressed { TimeState::Busy } else { next };
        self.totals[during.index()] += end - start;
        self.state = next;
        self.since = end;
        let ended = if finished { end } else { NEVER };
        self.metrics
            .publish_time(self.state, self.since, self.totals, ended);
    }
}

/// A subtask as registered by its worker: its metrics and the counters of
/// its input and output channels.
#[derive(Clone, Debug)]
pub(crate) struct SubtaskEntry {
    pub metrics: SubtaskMetrics,
    /// One per sending subtask of its input exchange.
    pub inputs: Vec<Arc<ChannelCounters>>,
    /// One per receiving subtask of its output exchange.
    pub outputs: Vec<Arc<ChannelCounters>>,
}

impl SubtaskEntry {
    fn read(&self, at: u64) -> SubtaskSnapshot {
        let t = self.metrics.read_time();
        let mut totals = t.totals;
        if t.started.is_none() {
            // Not released yet: nothing to count.
            totals = [0; 3];
        } else if t.ended.is_none() {
            // The current state lasts until now.
            totals[t.state.index()] += at.saturating_sub(t.since);
        }
        SubtaskSnapshot {
            id: self.metrics.id().clone(),
            at_ns: at,
            started_ns: t.started,
            ended_ns: t.ended,
            busy_ns: totals[0],
            backpressured_ns: totals[1],
            idle_ns: totals[2],
            records_in: self.metrics.records_in(),
            records_out: self.metrics.records_out(),
            bytes_in: self.inputs.iter().map(|c| c.taken()).sum(),
            bytes_out: self.outputs.iter().map(|c| c.shipped()).sum(),
            in_flight_bytes: self.outputs.iter().map(|c| c.in_flight()).collect(),
        }
    }
}

/// A point-in-time copy of one subtask's metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubtaskSnapshot {
    /// Which subtask.
    pub id: SubtaskId,
    /// When it was read (nanoseconds since [`epoch`]).
    pub at_ns: u64,
    /// When its time started counting (the workers' release), if it has.
    pub started_ns: Option<u64>,
    /// When it finished, if it has.
    pub ended_ns: Option<u64>,
    /// Time busy (see the module documentation), up to `at_ns` or its end.
    pub busy_ns: u64,
    /// Time backpressured.
    pub backpressured_ns: u64,
    /// Time idle.
    pub idle_ns: u64,
    /// Records read from its input gate (`numRecordsIn`).
    pub records_in: u64,
    /// Records its chain emitted at its end (`numRecordsOut`).
    pub records_out: u64,
    /// Bytes of the buffers it took from its input channels (`numBytesIn`).
    pub bytes_in: u64,
    /// Bytes of the buffers it shipped into its output channels
    /// (`numBytesOut`).
    pub bytes_out: u64,
    /// Per output channel (indexed by receiving subtask): bytes shipped and
    /// not yet taken by the receiver.
    pub in_flight_bytes: Vec<u64>,
}

/// Milliseconds per second in each state over some interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TimeShares {
    /// `busyTimeMsPerSecond`.
    pub busy: f64,
    /// `backPressuredTimeMsPerSecond`.
    pub backpressured: f64,
    /// `idleTimeMsPerSecond`.
    pub idle: f64,
}

impl TimeShares {
    /// The three together (about 1000).
    pub fn total(&self) -> f64 {
        self.busy + self.backpressured + self.idle
    }

    /// The backpressure level of these shares.
    pub fn level(&self) -> BackpressureLevel {
        BackpressureLevel::of(self.backpressured / 1000.0)
    }

    /// The compact progress-line form: `busy 812 bp 0 idle 188 OK`.
    pub fn compact(&self) -> String {
        format!(
            "busy {:.0} bp {:.0} idle {:.0} {}",
            self.busy,
            self.backpressured,
            self.idle,
            self.level()
        )
    }
}

/// Flink's backpressure level of a subtask, from its backpressured ratio.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum BackpressureLevel {
    /// Backpressured at most 10% of the time.
    Ok,
    /// More than 10%, at most 50%.
    Low,
    /// More than 50%.
    High,
}

impl BackpressureLevel {
    /// The level of a backpressured ratio in `[0, 1]`.
    pub fn of(ratio: f64) -> Self {
        if ratio <= 0.10 {
            BackpressureLevel::Ok
        } else if ratio <= 0.50 {
            BackpressureLevel::Low
        } else {
            BackpressureLevel::High
        }
    }

    /// "OK", "LOW" or "HIGH", as Flink's web UI writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            BackpressureLevel::Ok => "OK",
            BackpressureLevel::Low => "LOW",
            BackpressureLevel::High => "HIGH",
        }
    }
}

impl std::fmt::Display for BackpressureLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl SubtaskSnapshot {
    /// When its counted time ends in this reading: its end, or the reading.
    fn until(&self) -> u64 {
        self.ended_ns.map_or(self.at_ns, |e| e.min(self.at_ns))
    }

    /// Milliseconds per second busy, backpressured and idle between
    /// `before` (an earlier reading of the same subtask; `None`: its start)
    /// and this reading, counting only the time it ran. `None` if it did
    /// not run in between (not started yet, or finished before `before`).
    pub fn shares_since(&self, before: Option<&SubtaskSnapshot>) -> Option<TimeShares> {
        let started = self.started_ns?;
        let (from, base) = match before {
            Some(b) => (
                b.until().max(started),
                [b.busy_ns, b.backpressured_ns, b.idle_ns],
            ),
            None => (started, [0; 3]),
        };
        let until = self.until();
        if until <= from {
            return None;
        }
        let span = (until - from) as f64;
        let per_s = |now: u64, then: u64| now.saturating_sub(then) as f64 / span * 1000.0;
        Some(TimeShares {
            busy: per_s(self.busy_ns, base[0]),
            backpressured: per_s(self.backpressured_ns, base[1]),
            idle: per_s(self.idle_ns, base[2]),
        })
    }

    /// The time it ran up to this reading.
    pub fn running_time(&self) -> Duration {
        Duration::from_nanos(
            self.started_ns
                .map_or(0, |s| self.until().saturating_sub(s)),
        )
    }
}

/// A point-in-time copy of every worker's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// Per worker: records out of its sources.
    pub source_records: Vec<u64>,
    /// Per worker: records into its sinks.
    pub sink_records: Vec<u64>,
    /// Per worker: parks.
    pub parks: Vec<u64>,
    /// Every registered subtask, worker by worker.
    pub subtasks: Vec<SubtaskSnapshot>,
}

impl MetricsSnapshot {
    /// Reads all workers' counters.
    pub fn read(workers: &[WorkerMetrics]) -> Self {
        let entries: Vec<&SubtaskEntry> = workers
            .iter()
            .filter_map(|w| w.subtasks.get())
            .flatten()
            .collect();
        // Read after every time was published, so no subtask's current
        // state started after `at`.
        let at = ns_since(epoch(), Instant::now());
        Self {
            source_records: workers.iter().map(|w| w.source_records.get()).collect(),
            sink_records: workers.iter().map(|w| w.sink_records.get()).collect(),
            parks: workers.iter().map(|w| w.parks.get()).collect(),
            subtasks: entries.iter().map(|e| e.read(at)).collect(),
        }
    }

    /// Records into all sinks.
    pub fn total_sink_records(&self) -> u64 {
        self.sink_records.iter().sum()
    }
}

/// Mean and largest value of a gauge sampled over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GaugeSummary {
    /// Mean of the samples.
    pub mean: f64,
    /// Largest sample.
    pub max: u64,
}

/// Samples every output channel's in-flight bytes now and then (the
/// control thread, about every [`InFlightSampler::EVERY`]).
#[derive(Debug, Default)]
pub(crate) struct InFlightSampler {
    channels: Vec<Vec<Arc<ChannelCounters>>>,
    sums: Vec<Vec<u128>>,
    maxima: Vec<Vec<u64>>,
    samples: u64,
    last: Option<Instant>,
}

impl InFlightSampler {
    /// How often the control thread samples.
    pub const EVERY: Duration = Duration::from_millis(25);

    /// A sampler over the subtasks the workers registered (in the order
    /// of [`MetricsSnapshot::subtasks`]).
    pub fn new(workers: &[WorkerMetrics]) -> Self {
        let channels: Vec<Vec<Arc<ChannelCounters>>> = workers
            .iter()
            .filter_map(|w| w.subtasks.get())
            .flatten()
            .map(|e| e.outputs.clone())
            .collect();
        Self {
            sums: channels.iter().map(|c| vec![0; c.len()]).collect(),
            maxima: channels.iter().map(|c| vec![0; c.len()]).collect(),
            channels,
            samples: 0,
            last: None,
        }
    }

    /// Samples if the last sample is at least [`Self::EVERY`] old.
    pub fn tick(&mut self, now: Instant) {
        if self
            .last
            .is_some_and(|l| now.duration_since(l) < Self::EVERY)
        {
            return;
        }
        self.last = Some(now);
        self.samples += 1;
        for ((channels, sums), maxima) in self
            .channels
            .iter()
            .zip(self.sums.iter_mut())
            .zip(self.maxima.iter_mut())
        {
            for ((c, sum), max) in channels.iter().zip(sums.iter_mut()).zip(maxima.iter_mut()) {
                let v = c.in_flight();
                *sum += u128::from(v);
                *max = (*max).max(v);
            }
        }
    }

    /// Per subtask, per output channel: mean and largest sample.
    pub fn summaries(&self) -> Vec<Vec<GaugeSummary>> {
        let n = self.samples.max(1) as f64;
        self.sums
            .iter()
            .zip(&self.maxima)
            .map(|(sums, maxima)| {
                sums.iter()
                    .zip(maxima)
                    .map(|(&s, &max)| GaugeSummary {
                        mean: s as f64 / n,
                        max,
                    })
                    .collect()
            })
            .collect()
    }
}

/// One subtask over a whole run (the last attempt's), for reports.
#[derive(Clone, Debug, PartialEq)]
pub struct SubtaskSummary {
    /// Which subtask.
    pub id: SubtaskId,
    /// Busy, backpressured and idle milliseconds per second over its life
    /// (zero if it never ran).
    pub shares: TimeShares,
    /// The level of `shares.backpressured`.
    pub backpressure: BackpressureLevel,
    /// Records read from its input.
    pub records_in: u64,
    /// Records emitted at its chain's end.
    pub records_out: u64,
    /// Bytes taken from its input channels.
    pub bytes_in: u64,
    /// Bytes shipped into its output channels.
    pub bytes_out: u64,
    /// Per output channel (by receiving subtask): in-flight bytes sampled
    /// over the run.
    pub in_flight_bytes: Vec<GaugeSummary>,
}

impl SubtaskSummary {
    /// Summaries of every subtask of `last` (the final reading), with the
    /// in-flight samples of `sampler`.
    pub(crate) fn of_run(last: &MetricsSnapshot, sampler: &InFlightSampler) -> Vec<Self> {
        let in_flight = sampler.summaries();
        last.subtasks
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let shares = s.shares_since(None).unwrap_or_default();
                SubtaskSummary {
                    id: s.id.clone(),
                    shares,
                    backpressure: shares.level(),
                    records_in: s.records_in,
                    records_out: s.records_out,
                    bytes_in: s.bytes_in,
                    bytes_out: s.bytes_out,
                    in_flight_bytes: in_flight
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| vec![GaugeSummary::default(); s.in_flight_bytes.len()]),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn id() -> SubtaskId {
        SubtaskId {
            stage: "count -> sink".into(),
            index: 1,
            parallelism: 2,
            worker: 1,
        }
    }

    fn entry(metrics: &SubtaskMetrics) -> SubtaskEntry {
        SubtaskEntry {
            metrics: metrics.clone(),
            inputs: Vec::new(),
            outputs: Vec::new(),
        }
    }

    #[test]
    fn every_instant_counts_in_exactly_one_state() {
        let metrics = SubtaskMetrics::new(id());
        let mut clock = TaskClock::start_at(metrics.clone(), epoch(), 1000 * MS);
        // Idle until its first poll at +5 ms, busy in it until +8 ms, and
        // it ran out of budget: busy until its next poll.
        clock.record(1005 * MS, 1008 * MS, true, TimeState::Busy, false);
        // Next poll at +10 ms stops on a full output at +12 ms.
        clock.record(1010 * MS, 1012 * MS, true, TimeState::BackPressured, false);
        // A poll at +30 ms that moves nothing (1 ms): still backpressured.
        clock.record(1030 * MS, 1031 * MS, false, TimeState::BackPressured, false);
        // At +50 ms it moves records until +60 ms and finds no input.
        clock.record(1050 * MS, 1060 * MS, true, TimeState::Idle, false);
        let snap = entry(&metrics).read(1100 * MS);
        assert_eq!(snap.busy_ns, (3 + 2 + 2 + 10) * MS);
        assert_eq!(snap.backpressured_ns, (18 + 1 + 19) * MS);
        assert_eq!(snap.idle_ns, (5 + 40) * MS);
        assert_eq!(
            snap.busy_ns + snap.backpressured_ns + snap.idle_ns,
            100 * MS,
            "the three add up to the elapsed time"
        );
        let shares = snap.shares_since(None).unwrap();
        assert!((shares.busy - 170.0).abs() < 1e-9, "{shares:?}");
        assert!((shares.backpressured - 380.0).abs() < 1e-9, "{shares:?}");
        assert!((shares.idle - 450.0).abs() < 1e-9, "{shares:?}");
        assert_eq!(shares.level(), BackpressureLevel::Low);
    }

    #[test]
    fn a_finished_subtask_stops_counting_and_intervals_use_deltas() {
        let metrics = SubtaskMetrics::new(id());
        let e = entry(&metrics);
        assert_eq!(
            e.read(10 * MS).started_ns,
            None,
            "not started before its worker starts it"
        );
        assert!(e.read(10 * MS).shares_since(None).is_none());
        let mut clock = TaskClock::start_at(metrics.clone(), epoch(), 0);
        clock.record(0, 400 * MS, true, TimeState::BackPressured, false);
        let first = e.read(500 * MS);
        assert_eq!(first.busy_ns, 400 * MS);
        assert_eq!(first.backpressured_ns, 100 * MS);
        // The next 500 ms: backpressured until a poll at 800 ms that
        // finishes the subtask at 900 ms.
        clock.record(800 * MS, 900 * MS, true, TimeState::Idle, true);
        let second = e.read(1000 * MS);
        assert_eq!(second.ended_ns, Some(900 * MS));
        assert_eq!(second.idle_ns, 0, "no time counts after the end");
        let shares = second.shares_since(Some(&first)).unwrap();
        // 400 ms over 300 ms backpressured and 100 ms busy.
        assert!((shares.backpressured - 750.0).abs() < 1e-9, "{shares:?}");
        assert!((shares.busy - 250.0).abs() < 1e-9, "{shares:?}");
        assert!((shares.total() - 1000.0).abs() < 1e-9);
        let later = e.read(2000 * MS);
        assert!(later.shares_since(Some(&second)).is_none());
        assert_eq!(later.running_time(), Duration::from_millis(900));
    }

    #[test]
    fn levels_follow_flinks_thresholds() {
        assert_eq!(BackpressureLevel::of(0.0), BackpressureLevel::Ok);
        assert_eq!(BackpressureLevel::of(0.10), BackpressureLevel::Ok);
        assert_eq!(BackpressureLevel::of(0.11), BackpressureLevel::Low);
        assert_eq!(BackpressureLevel::of(0.50), BackpressureLevel::Low);
        assert_eq!(BackpressureLevel::of(0.51), BackpressureLevel::High);
        assert_eq!(BackpressureLevel::of(1.0), BackpressureLevel::High);
        let s = TimeShares {
            busy: 811.6,
            backpressured: 0.0,
            idle: 188.4,
        };
        assert_eq!(s.compact(), "busy 812 bp 0 idle 188 OK");
    }

    #[test]
    fn channel_bytes_publish_in_flight_as_shipped_minus_taken() {
        let counters = Arc::new(ChannelCounters::default());
        let mut sender = ChannelBytes::new(vec![counters.clone()]);
        let mut receiver = ChannelBytes::new(vec![counters.clone()]);
        sender.add(0, 3000);
        assert_eq!(counters.in_flight(), 0, "nothing before a publication");
        sender.publish(true);
        receiver.add(0, 1000);
        receiver.publish(false);
        assert_eq!((counters.shipped(), counters.taken()), (3000, 1000));
        assert_eq!(counters.in_flight(), 2000);
        receiver.add(0, 2500);
        receiver.publish(false);
        assert_eq!(
            counters.in_flight(),
            0,
            "a reading that lags never goes negative"
        );
    }

    #[test]
    fn concurrent_readers_see_consistent_times() {
        let metrics = SubtaskMetrics::new(id());
        let e = entry(&metrics);
        let writer = {
            let metrics = metrics.clone();
            std::thread::spawn(move || {
                let mut clock = TaskClock::start_at(metrics, epoch(), 0);
                for i in 1..=200_000u64 {
                    let state = match i % 3 {
                        0 => TimeState::Busy,
                        1 => TimeState::BackPressured,
                        _ => TimeState::Idle,
                    };
                    clock.record(i * 10, i * 10 + 5, i % 2 == 0, state, false);
                }
            })
        };
        let mut last = 0;
        while !writer.is_finished() {
            let t = e.metrics.read_time();
            let sum: u64 = t.totals.iter().sum();
            if t.started.is_some() {
                // Published totals always cover exactly [start, since].
                assert_eq!(sum, t.since, "{t:?}");
                assert!(t.since >= last);
                last = t.since;
            }
        }
        writer.join().unwrap();
    }
}
