//! Per-subtask metrics: how a subtask's wall time splits into busy,
//! backpressured and idle, records and bytes in and out, and the latency
//! of the markers reaching it ([`crate::metrics::latency`]).

use std::sync::atomic::{fence, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use weir_net::LatencyMarker;

use crate::metrics::counters::{ns_since, ChannelCounters};
use crate::metrics::latency::{LatencyOptions, LatencySource, LatencyStats, LatencyWindows};

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
    pub(crate) fn index(self) -> usize {
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
    /// Records its source emitted (a source subtask's stage only).
    source_records: AtomicU64,
    /// The combined watermark of its inputs (`i64::MIN`: none yet, or
    /// no input gate).
    input_watermark: AtomicI64,
    /// The latency of the markers that reached it, per source (written
    /// once per marker, by its input gate).
    latency: Mutex<LatencyWindows>,
}

/// One subtask's metrics, shared by the components that write them (its
/// task, its chain's tail, its worker's loop) and the control thread.
#[derive(Clone, Debug)]
pub struct SubtaskMetrics(Arc<SubtaskShared>);

/// A consistent reading of a subtask's times (nanoseconds since
/// [`epoch`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TimeReading {
    pub(crate) state: TimeState,
    pub(crate) since: u64,
    pub(crate) totals: [u64; 3],
    pub(crate) started: Option<u64>,
    pub(crate) ended: Option<u64>,
}

impl SubtaskMetrics {
    /// Metrics of subtask `id`, not started yet.
    pub fn new(id: SubtaskId) -> Self {
        Self::with_latency(id, &LatencyOptions::default())
    }

    /// Metrics of subtask `id`, keeping marker latencies as `latency` says.
    pub fn with_latency(id: SubtaskId, latency: &LatencyOptions) -> Self {
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
            source_records: AtomicU64::new(0),
            input_watermark: AtomicI64::new(i64::MIN),
            latency: Mutex::new(LatencyWindows::new(latency)),
        }))
    }

    /// Records the latency of markers that arrived: (marker, arrival in ns
    /// on the metrics clock).
    pub(crate) fn record_latency(&self, arrived: &[(LatencyMarker, u64)]) {
        let mut windows = self.0.latency.lock().unwrap_or_else(|e| e.into_inner());
        for (marker, at) in arrived {
            windows.record(marker, *at);
        }
    }

    /// The latency from each source to this subtask, over the last markers.
    pub fn latency(&self) -> Vec<(LatencySource, LatencyStats)> {
        self.0
            .latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stats()
    }

    /// Every marker latency (ns) this subtask keeps
    /// (`metrics.latency.history-size` per source), all sources together.
    pub fn latency_samples_ns(&self) -> Vec<u64> {
        self.0
            .latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .samples_ns()
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

    /// Counts `n` more records its source emitted (once per poll, by its
    /// source task).
    #[inline]
    pub(crate) fn add_source_records(&self, n: u64) {
        if n != 0 {
            self.0.source_records.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Publishes the combined watermark of its inputs (once per poll, by
    /// its input gate).
    #[inline]
    pub(crate) fn publish_input_watermark(&self, w: i64) {
        self.0.input_watermark.store(w, Ordering::Relaxed);
    }

    /// The combined watermark of its inputs as of the last poll; `None`
    /// before the first (or without an input gate: a source's stage).
    pub fn input_watermark(&self) -> Option<i64> {
        let w = self.0.input_watermark.load(Ordering::Relaxed);
        (w != i64::MIN).then_some(w)
    }

    /// Records read from the input (as of the last poll).
    pub fn records_in(&self) -> u64 {
        self.0.records_in.load(Ordering::Relaxed)
    }

    /// Records emitted at the chain's end (as of the last poll).
    pub fn records_out(&self) -> u64 {
        self.0.records_out.load(Ordering::Relaxed)
    }

    /// Records its source emitted, before the operators chained after it
    /// (0 for a subtask without a source).
    pub fn source_records(&self) -> u64 {
        self.0.source_records.load(Ordering::Relaxed)
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
    pub(crate) fn read_time(&self) -> TimeReading {
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
    pub(crate) fn start_at(metrics: SubtaskMetrics, epoch: Instant, started: u64) -> Self {
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

    pub(crate) fn record(
        &mut self,
        start: u64,
        end: u64,
        progressed: bool,
        next: TimeState,
        finished: bool,
    ) {
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
