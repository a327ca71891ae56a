//! Readings of the counters: snapshots, shares over an interval, Flink's
//! backpressure levels and the run's summaries.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::metrics::counters::{epoch, ns_since, ChannelCounters};
use crate::metrics::subtask::{SubtaskEntry, SubtaskId};
use crate::metrics::worker::WorkerMetrics;

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
    /// Records its source emitted, before the operators chained after it
    /// (0 for a subtask without a source): what a paced source kept to.
    pub source_records: u64,
    /// Bytes of the buffers it took from its input channels (`numBytesIn`).
    pub bytes_in: u64,
    /// Bytes of the buffers it shipped into its output channels
    /// (`numBytesOut`).
    pub bytes_out: u64,
    /// Per output channel (indexed by receiving subtask): bytes shipped and
    /// not yet taken by the receiver.
    pub in_flight_bytes: Vec<u64>,
    /// The combined watermark of its inputs (Flink's
    /// `currentInputWatermark`), if it has an input gate and saw one.
    pub input_watermark: Option<i64>,
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

/// Records and bytes per second over some interval (Flink's
/// `numRecordsInPerSecond`, `numRecordsOutPerSecond`,
/// `numBytesInPerSecond`, `numBytesOutPerSecond`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IoRates {
    /// Records read from the input gate per second.
    pub records_in: f64,
    /// Records emitted at the chain's end per second.
    pub records_out: f64,
    /// Bytes taken from the input channels per second.
    pub bytes_in: f64,
    /// Bytes shipped into the output channels per second.
    pub bytes_out: f64,
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

/// Reading a registered subtask.
impl SubtaskEntry {
    pub(crate) fn read(&self, at: u64) -> SubtaskSnapshot {
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
            source_records: self.metrics.source_records(),
            bytes_in: self.inputs.iter().map(|c| c.taken()).sum(),
            bytes_out: self.outputs.iter().map(|c| c.shipped()).sum(),
            in_flight_bytes: self.outputs.iter().map(|c| c.in_flight()).collect(),
            input_watermark: self.metrics.input_watermark(),
        }
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

    /// Records and bytes per second between `before` (as for
    /// [`shares_since`](Self::shares_since)) and this reading, over the
    /// time it ran; `None` if it did not run in between.
    pub fn rates_since(&self, before: Option<&SubtaskSnapshot>) -> Option<IoRates> {
        let started = self.started_ns?;
        let (from, base) = match before {
            Some(b) => (
                b.until().max(started),
                [b.records_in, b.records_out, b.bytes_in, b.bytes_out],
            ),
            None => (started, [0; 4]),
        };
        let until = self.until();
        if until <= from {
            return None;
        }
        let seconds = (until - from) as f64 / 1e9;
        let per_s = |now: u64, then: u64| now.saturating_sub(then) as f64 / seconds;
        Some(IoRates {
            records_in: per_s(self.records_in, base[0]),
            records_out: per_s(self.records_out, base[1]),
            bytes_in: per_s(self.bytes_in, base[2]),
            bytes_out: per_s(self.bytes_out, base[3]),
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
    /// Per worker: parks without a spin, its core shared (see
    /// `exec::spin_gate`).
    pub contended_parks: Vec<u64>,
    /// Per worker: sleeps that outlasted their wake-up and were
    /// interrupted (see `exec::rescue`).
    pub rescues: Vec<u64>,
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
            contended_parks: workers.iter().map(|w| w.contended_parks.get()).collect(),
            rescues: workers.iter().map(|w| w.rescues.get()).collect(),
            subtasks: entries.iter().map(|e| e.read(at)).collect(),
        }
    }

    /// Records out of all sources.
    pub fn total_source_records(&self) -> u64 {
        self.source_records.iter().sum()
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
    /// The latency markers' latencies (ns) it kept at the end
    /// (`metrics.latency.interval`; empty without): the time from each
    /// marker's source to this subtask. For a subtask without output
    /// channels (a sink's chain) that is end to end.
    pub latency_ns: Vec<u64>,
}

impl SubtaskSummary {
    /// Summaries of every subtask of `last` (the final reading of
    /// `workers`), with the in-flight samples of `sampler`.
    pub(crate) fn of_run(
        last: &MetricsSnapshot,
        sampler: &InFlightSampler,
        workers: &[WorkerMetrics],
    ) -> Vec<Self> {
        let in_flight = sampler.summaries();
        // In the order of `MetricsSnapshot::read`: worker by worker.
        let mut latency: Vec<Vec<u64>> = workers
            .iter()
            .filter_map(|w| w.subtasks.get())
            .flatten()
            .map(|e| e.metrics.latency_samples_ns())
            .collect();
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
                    latency_ns: latency.get_mut(i).map(std::mem::take).unwrap_or_default(),
                }
            })
            .collect()
    }
}
