//! Running a benchmark: build the workload's job from a [`Config`], run it,
//! verify the result against the independent reference and report it as a
//! readable summary plus one JSON object.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use weir_runtime::exec::progress::human_rate;
use weir_runtime::metrics::{MetricsSnapshot, SubtaskSnapshot};
use weir_runtime::{
    execute_with_progress, CheckpointSummary, Config, ExecutionOptions, JobError, JobHandle,
    JobResult, Progress, RestoreFrom, RestoreInfo, StopRequest, Stopped, SubtaskSummary,
};

use crate::output::{self, OutputCheck};
use crate::params::JobParams;
use crate::w2::{WindowResults, W2_DEFAULT_KEYS, W2_DEFAULT_RECORDS};
use crate::workload::{SinkResults, SourceCounts};
use crate::{jobs, reference};

/// A workload of WORKLOADS.md that `weir bench` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// W1 keyed-count (throughput).
    W1,
    /// W2 event-time tumbling window.
    W2,
    /// W3 end-to-end latency at a fixed rate.
    W3,
}

impl Workload {
    /// The workload's name as WORKLOADS.md writes it, lowercase.
    pub fn name(self) -> &'static str {
        match self {
            Workload::W1 => "w1",
            Workload::W2 => "w2",
            Workload::W3 => "w3",
        }
    }
}

/// W1's default N (WORKLOADS.md).
pub const W1_DEFAULT_RECORDS: u64 = 50_000_000;
/// The default K of W1 and W3 (WORKLOADS.md; W2's is
/// [`W2_DEFAULT_KEYS`]).
pub const DEFAULT_KEYS: u64 = 100_000;
/// W3's default rate: the heaviest point of its sweep.
pub const W3_DEFAULT_RATE: u64 = 1_000_000;

/// Latency percentiles in microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// 99.99th percentile.
    pub p9999: f64,
    /// Largest.
    pub max: f64,
}

/// The outcome of one benchmark run.
#[derive(Clone, Debug)]
pub struct BenchReport {
    /// Which workload.
    pub workload: Workload,
    /// Workers used.
    pub workers: usize,
    /// Records that reached the sinks (W2: records in the fired windows).
    pub records: u64,
    /// W2: windows fired, and how many the reference fires.
    pub windows: Option<(u64, u64)>,
    /// The sinks' combined checksum.
    pub checksum: u64,
    /// The independent reference's checksum for the same records.
    pub expected_checksum: u64,
    /// Records the reference expects.
    pub expected_records: u64,
    /// Whole job, first record in to last record out.
    pub elapsed: Duration,
    /// Keys (K).
    pub keys: u64,
    /// Requested rate, if paced.
    pub rate: Option<u64>,
    /// `execution.buffer-timeout.*`.
    pub buffer_timeout: weir_runtime::exchange::flush::BufferTimeout,
    /// W3: records per second inside the recorded window.
    pub achieved_rate: Option<f64>,
    /// W3: latency of the recorded records.
    pub latency: Option<Latency>,
    /// Per worker: times it ran out of work and parked.
    pub parks: Vec<u64>,
    /// Per worker: parks without a spin because its core was shared (it
    /// waited for a CPU).
    pub contended_parks: Vec<u64>,
    /// Per worker: sleeps that outlasted their wake-up and were interrupted.
    pub rescues: Vec<u64>,
    /// Checkpoints taken, if checkpointing was on.
    pub checkpoints: Option<CheckpointSummary>,
    /// What the run restored.
    pub restored: Option<RestoreInfo>,
    /// In-process restarts.
    pub restarts: u32,
    /// The check of the committed output (`--output`).
    pub output: Option<OutputCheck>,
    /// Wall-clock ms (since the epoch) when the workers started processing.
    pub released_unix_ms: f64,
    /// Every subtask over the run: time split, backpressure, records,
    /// bytes, in-flight bytes.
    pub subtasks: Vec<SubtaskSummary>,
    /// The snapshot of a stop (SIGTERM, SIGINT): the run ended early, so
    /// its results are not compared with the reference.
    pub stopped: Option<Stopped>,
}

/// How `weir bench` runs a workload beyond its configuration.
#[derive(Clone, Debug, Default)]
pub struct BenchOptions {
    /// No progress lines.
    pub quiet: bool,
    /// `--restore`.
    pub restore: RestoreFrom,
    /// `--output DIR` (W1): write records exactly once into DIR.
    pub output: Option<PathBuf>,
    /// `--allow-non-restored-state`.
    pub allow_non_restored_state: bool,
    /// Stops the run with a savepoint when requested.
    pub stop: StopRequest,
    /// What the control plane (the REST endpoint) sees of the run.
    pub handle: JobHandle,
}

/// The latency markers' end-to-end latency (`metrics.latency.interval`,
/// Flink's latency tracking), over every marker the `subtasks` without
/// output channels (the sinks' chains) kept
/// (`metrics.latency.history-size` per source): how many, and their
/// percentiles in µs. `None` without markers.
pub fn marker_latency(subtasks: &[SubtaskSummary]) -> Option<(usize, Latency)> {
    let mut h = hdrhistogram::Histogram::<u64>::new(3).ok()?;
    for s in subtasks.iter().filter(|s| s.in_flight_bytes.is_empty()) {
        for &ns in &s.latency_ns {
            // Auto-resizing: no value is out of range.
            h.record(ns.max(1)).ok()?;
        }
    }
    if h.is_empty() {
        return None;
    }
    let us = |ns: u64| ns as f64 / 1e3;
    Some((
        h.len() as usize,
        Latency {
            p50: us(h.value_at_quantile(0.5)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            p9999: us(h.value_at_quantile(0.9999)),
            max: us(h.max()),
        },
    ))
}

/// `marker_latency_us` of a run's JSON line: the markers and their
/// percentiles in µs.
pub fn marker_latency_json(markers: usize, l: &Latency) -> Value {
    json!({"markers": markers, "p50": l.p50, "p99": l.p99, "p999": l.p999,
        "p9999": l.p9999, "max": l.max})
}

/// The sources a run paced: each at `rate` records/s over all its
/// subtasks (`job.rate`), named by their operator uids.
#[derive(Clone, Copy, Debug)]
pub struct Paced<'a> {
    /// Records/s asked of each source.
    pub rate: u64,
    /// The paced sources' uids.
    pub sources: &'a [String],
}

/// The subtasks of the sources named `uids` (each subtask's stage begins
/// with its source's uid).
fn source_subtasks<'m>(
    metrics: &'m MetricsSnapshot,
    uids: &'m [String],
) -> impl Iterator<Item = &'m SubtaskSnapshot> {
    metrics.subtasks.iter().filter(|s| {
        uids.iter()
            .any(|u| s.id.stage.split(" -> ").next() == Some(u))
    })
}

/// The rate the sources named `uids` emitted at together: the records
/// their own subtasks emitted (not the job's other sources', nor what the
/// operators chained after them passed on) over the time from the first
/// of those subtasks' start to the last one's end, so the drain after
/// them (the last buffers waiting out their timeout) does not count.
/// What a paced run's `achieved_rate` is: whether the sources kept the
/// asked-for rate. `None` if none of them ran or one has not ended.
pub fn source_rate(metrics: &MetricsSnapshot, uids: &[String]) -> Option<f64> {
    let (mut first, mut last, mut records) = (u64::MAX, None::<u64>, 0);
    for s in source_subtasks(metrics, uids) {
        first = first.min(s.started_ns?);
        last = Some(last.unwrap_or(0).max(s.ended_ns?));
        records += s.source_records;
    }
    let ns = last?.checked_sub(first)?;
    Some(records as f64 / (ns.max(1) as f64 / 1e9))
}

/// The JSON line of a job run outside the workloads' harness (`weir bench
/// quickstart`, `weir bench sql`): what every such line has. `job` names
/// it; `records` went into the sinks, `source_records` out of the
/// sources; with `paced` (`job.rate`, and the sources it paced),
/// `achieved_rate` is the rate each paced source kept while it ran, on
/// average ([`source_rate`] over their number); `marker_latency_us` with
/// latency markers; `stopped` after a stop. The caller adds its own
/// fields (`verified` among them).
pub fn job_json(job: &str, result: &JobResult, paced: Option<Paced<'_>>) -> Value {
    let secs = result.elapsed.as_secs_f64().max(1e-9);
    let (sourced, sunk) = (
        result.metrics.total_source_records(),
        result.metrics.total_sink_records(),
    );
    let mut v = json!({
        "job": job,
        "workers": result.workers,
        "source_records": sourced,
        "records": sunk,
        "elapsed_s": secs,
        "source_records_per_s": sourced as f64 / secs,
        "records_per_s": sunk as f64 / secs,
        "rate": paced.map(|p| p.rate),
        "restarts": result.restarts,
    });
    if let Some(p) = paced {
        // Sources that did not end (a stopped run): over the whole run.
        let all = source_rate(&result.metrics, p.sources).unwrap_or_else(|| {
            let records: u64 = source_subtasks(&result.metrics, p.sources)
                .map(|s| s.source_records)
                .sum();
            records as f64 / secs
        });
        v["achieved_rate"] = json!(all / p.sources.len().max(1) as f64);
    }
    if let Some((markers, l)) = marker_latency(&result.subtasks) {
        v["marker_latency_us"] = marker_latency_json(markers, &l);
    }
    if let Some(stopped) = &result.stopped {
        v["stopped"] = stopped_json(stopped);
    }
    v
}

/// `stopped` of a run's JSON line: the savepoint (or final checkpoint)
/// a stop took.
pub fn stopped_json(stopped: &Stopped) -> Value {
    json!({
        "id": stopped.id,
        "kind": stopped.kind.as_str(),
        "path": stopped.dir.display().to_string(),
    })
}

impl BenchReport {
    /// The latency markers' end-to-end latency: [`marker_latency`] of
    /// this run's subtasks.
    pub fn marker_latency(&self) -> Option<(usize, Latency)> {
        marker_latency(&self.subtasks)
    }

    /// True if the engine's answer matches the reference exactly; a run
    /// that was stopped has nothing to compare and passes.
    pub fn verified(&self) -> bool {
        if self.stopped.is_some() {
            return true;
        }
        self.records == self.expected_records
            && self.checksum == self.expected_checksum
            && self.windows.is_none_or(|(got, expected)| got == expected)
            && self.output.as_ref().is_none_or(|o| o.exactly_once())
    }

    /// Records per second over the whole job.
    pub fn records_per_s(&self) -> f64 {
        self.records as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The JSON object printed as the last line of `weir bench`.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "workload": self.workload.name(),
            "workers": self.workers,
            "records": self.records,
            "checksum": self.checksum.to_string(),
            "expected_checksum": self.expected_checksum.to_string(),
            "verified": self.verified(),
            "elapsed_s": self.elapsed.as_secs_f64(),
            "records_per_s": self.records_per_s(),
            "keys": self.keys,
            "rate": self.rate,
            // -1 when only full buffers ship (Flink's -1).
            "buffer_timeout_ms": self.buffer_timeout.interval().map_or(-1.0, |d| d.as_secs_f64() * 1e3),
            "parks": self.parks,
            "contended_parks": self.contended_parks,
            "rescues": self.rescues,
        });
        if let Some((windows, expected)) = self.windows {
            v["windows"] = json!(windows);
            v["expected_windows"] = json!(expected);
        }
        if let Some(rate) = self.achieved_rate {
            v["achieved_rate"] = json!(rate);
        }
        if let Some(l) = self.latency {
            v["latency_us"] =
                json!({"p50": l.p50, "p99": l.p99, "p999": l.p999, "p9999": l.p9999, "max": l.max});
        }
        if let Some((markers, l)) = self.marker_latency() {
            v["marker_latency_us"] = marker_latency_json(markers, &l);
        }
        if let Some(c) = &self.checkpoints {
            v["checkpoints"] = checkpoints_json(c);
        }
        if let Some(r) = &self.restored {
            let secs = (r.verify + r.load).as_secs_f64().max(1e-9);
            v["restored"] = json!({
                "checkpoint": r.checkpoint_id,
                "state_bytes": r.state_bytes,
                "verify_s": r.verify.as_secs_f64(),
                "load_s": r.load.as_secs_f64(),
                "bytes_per_s": r.state_bytes as f64 / secs,
            });
        }
        v["restarts"] = json!(self.restarts);
        if let Some(stopped) = &self.stopped {
            v["stopped"] = stopped_json(stopped);
        }
        v["released_unix_ms"] = json!(self.released_unix_ms);
        v["subtasks"] = self.subtasks.iter().map(subtask_json).collect();
        if let Some(o) = &self.output {
            v["output"] = json!({
                "files": o.files,
                "lines": o.lines,
                "exactly_once": o.exactly_once(),
                "problems": o.problems,
            });
        }
        v
    }

    /// A few readable lines.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "weir bench {}: {} records through {} workers in {:.3} s = {} records/s\n",
            self.workload.name(),
            self.records,
            self.workers,
            self.elapsed.as_secs_f64(),
            human_rate(self.records_per_s()),
        );
        if let Some((windows, expected)) = self.windows {
            s += &format!("windows fired {windows} (reference {expected})\n");
        }
        if self.stopped.is_some() {
            s += "stopped before the end of the input: results not compared with the reference\n";
        } else {
            s += &format!(
                "checksum {} (reference {}): {}\n",
                self.checksum,
                self.expected_checksum,
                if self.verified() {
                    "verified"
                } else {
                    "MISMATCH"
                }
            );
        }
        if !self.subtasks.is_empty() {
            let parts: Vec<String> = self
                .subtasks
                .iter()
                .map(|t| format!("{} {}", t.id.short_name(), t.shares.compact()))
                .collect();
            s += &format!("subtasks (ms/s over the run): {}\n", parts.join(" | "));
        }
        if let Some(r) = &self.restored {
            s += &format!(
                "restored checkpoint {} ({} of state): verified in {:.3} s, loaded in {:.3} s\n",
                r.checkpoint_id,
                weir_runtime::checkpoint::stats::human_bytes(r.state_bytes),
                r.verify.as_secs_f64(),
                r.load.as_secs_f64()
            );
        }
        if let Some(c) = &self.checkpoints {
            s += &format!(
                "checkpoints: {} completed, {} failed; duration p50 {:.0} ms max {:.0} ms; \
                 alignment p50 {:.1} ms max {:.1} ms; {} written\n",
                c.completed,
                c.failed,
                c.duration_ms.p50,
                c.duration_ms.max,
                c.alignment_ms.p50,
                c.alignment_ms.max,
                weir_runtime::checkpoint::stats::human_bytes(c.bytes)
            );
        }
        if let Some(o) = &self.output {
            s += &format!(
                "output: {} lines in {} committed part files: {}\n",
                o.lines,
                o.files,
                if o.exactly_once() {
                    "every record exactly once".to_owned()
                } else {
                    format!("WRONG: {}", o.problems.join("; "))
                }
            );
        }
        if let (Some(rate), Some(l)) = (self.achieved_rate, self.latency) {
            s += &format!(
                "latency at {} records/s (buffer timeout {}): p50 {:.0} us, p99 {:.0} us, p99.9 {:.0} us, p99.99 {:.0} us, max {:.0} us\n",
                human_rate(rate),
                self.buffer_timeout,
                l.p50,
                l.p99,
                l.p999,
                l.p9999,
                l.max
            );
        }
        if let Some((markers, l)) = self.marker_latency() {
            s += &format!(
                "latency markers at the sinks ({markers}, buffer timeout {}): p50 {:.0} us, p99 {:.0} us, p99.9 {:.0} us, max {:.0} us\n",
                self.buffer_timeout, l.p50, l.p99, l.p999, l.max
            );
        }
        s
    }
}

/// Runs `workload` as configured by `params` (`job.records`, `job.keys`,
/// `job.rate`, `job.warmup`, `job.duration`) and `config` (the engine keys).
pub fn run(
    workload: Workload,
    config: &Config,
    params: &JobParams,
    bench: &BenchOptions,
) -> Result<BenchReport, JobError> {
    let mut options = ExecutionOptions::from_config(config);
    if bench.quiet {
        options.progress_interval = Duration::ZERO;
    }
    options.restore = bench.restore.clone();
    options.allow_non_restored_state = bench.allow_non_restored_state;
    options.stop = bench.stop.clone();
    options.handle = bench.handle.clone();
    if bench.output.is_some() && workload != Workload::W1 {
        return Err(JobError::InvalidJob(
            "--output is supported by w1 only".into(),
        ));
    }
    let workers = options.workers;
    let default_keys = match workload {
        Workload::W2 => W2_DEFAULT_KEYS,
        Workload::W1 | Workload::W3 => DEFAULT_KEYS,
    };
    let keys = params.keys.unwrap_or(default_keys);
    let results = SinkResults::new(workers);
    let mut progress = |p: &Progress| eprintln!("{}", p.lines());
    match workload {
        Workload::W1 => {
            let records = params.records.unwrap_or(W1_DEFAULT_RECORDS);
            let job = jobs::w1(
                records,
                keys,
                params.rate,
                results.clone(),
                bench.output.clone(),
            );
            let result = execute_with_progress(job, &options, &mut progress)?;
            let sinks = results.collected();
            let output = match &bench.output {
                // A stopped run committed a prefix of the output: the
                // restored run completes it, and is checked then.
                Some(_) if result.stopped.is_some() => None,
                Some(dir) => {
                    Some(output::verify_output(dir, records, keys).map_err(JobError::InvalidJob)?)
                }
                None => None,
            };
            Ok(BenchReport {
                records: sinks.iter().map(|r| r.records).sum(),
                checksum: sinks.iter().fold(0u64, |a, r| a.wrapping_add(r.checksum)),
                expected_checksum: reference::w1_checksum(records, keys),
                expected_records: records,
                rate: params.rate,
                output,
                ..BenchReport::of_run(workload, workers, keys, &options, &result)
            })
        }
        Workload::W2 => {
            let records = params.records.unwrap_or(W2_DEFAULT_RECORDS);
            let windows = WindowResults::new(workers);
            let job = jobs::w2(records, keys, params.rate, windows.clone());
            let result = execute_with_progress(job, &options, &mut progress)?;
            let got = windows.total();
            let (expected_windows, expected_checksum) =
                reference::w2_windows_and_checksum(records, keys);
            Ok(BenchReport {
                records: got.records,
                windows: Some((got.windows, expected_windows)),
                checksum: got.checksum,
                expected_checksum,
                expected_records: records,
                rate: params.rate,
                ..BenchReport::of_run(workload, workers, keys, &options, &result)
            })
        }
        Workload::W3 => {
            let rate = params.rate.unwrap_or(W3_DEFAULT_RATE);
            let counts = SourceCounts::new(workers);
            let job = jobs::w3(
                keys,
                rate,
                params.warmup,
                params.duration,
                results.clone(),
                counts.clone(),
            );
            let result = execute_with_progress(job, &options, &mut progress)?;
            let sinks = results.collected();
            let (expected_checksum, expected_records) =
                reference::checksum_of_partitions(&counts.get(), keys);
            let mut histogram =
                hdrhistogram::Histogram::<u64>::new_with_bounds(1_000, 60_000_000_000, 3)
                    .expect("valid histogram bounds");
            let mut recorded = 0;
            for r in &sinks {
                if let Some(h) = &r.latency_ns {
                    histogram.add(h).expect("same bounds");
                }
                recorded += r.recorded;
            }
            let us = |q: f64| histogram.value_at_quantile(q) as f64 / 1e3;
            Ok(BenchReport {
                records: sinks.iter().map(|r| r.records).sum(),
                checksum: sinks.iter().fold(0u64, |a, r| a.wrapping_add(r.checksum)),
                expected_checksum,
                expected_records,
                rate: Some(rate),
                achieved_rate: Some(recorded as f64 / params.duration.as_secs_f64().max(1e-9)),
                latency: Some(Latency {
                    p50: us(0.5),
                    p99: us(0.99),
                    p999: us(0.999),
                    p9999: us(0.9999),
                    max: histogram.max() as f64 / 1e3,
                }),
                ..BenchReport::of_run(workload, workers, keys, &options, &result)
            })
        }
    }
}

/// The report's `checkpoints` object (the fields WORKLOADS.md asks for).
pub(crate) fn checkpoints_json(c: &CheckpointSummary) -> Value {
    json!({
        "completed": c.completed,
        "failed": c.failed,
        "duration_ms": {"p50": c.duration_ms.p50, "max": c.duration_ms.max},
        "alignment_ms": {"p50": c.alignment_ms.p50, "max": c.alignment_ms.max},
        "bytes": c.bytes,
        "inflight_bytes": c.inflight_bytes,
    })
}

/// One subtask in the report's `subtasks` list.
pub(crate) fn subtask_json(t: &SubtaskSummary) -> Value {
    json!({
        "name": t.id.task_name(),
        "worker": t.id.worker,
        "busy_ms_per_s": t.shares.busy,
        "backpressured_ms_per_s": t.shares.backpressured,
        "idle_ms_per_s": t.shares.idle,
        "backpressure": t.backpressure.as_str(),
        "records_in": t.records_in,
        "records_out": t.records_out,
        "bytes_in": t.bytes_in,
        "bytes_out": t.bytes_out,
        "in_flight_bytes": t
            .in_flight_bytes
            .iter()
            .map(|g| json!({"mean": g.mean, "max": g.max}))
            .collect::<Vec<_>>(),
    })
}

impl BenchReport {
    /// What every workload's report takes from the run itself; the
    /// workload fills in its results (records, checksums, rates).
    fn of_run(
        workload: Workload,
        workers: usize,
        keys: u64,
        options: &ExecutionOptions,
        result: &JobResult,
    ) -> Self {
        Self {
            workload,
            workers,
            records: 0,
            windows: None,
            checksum: 0,
            expected_checksum: 0,
            expected_records: 0,
            elapsed: result.elapsed,
            keys,
            rate: None,
            buffer_timeout: options.buffer_timeout,
            achieved_rate: None,
            latency: None,
            parks: result.metrics.parks.clone(),
            contended_parks: result.metrics.contended_parks.clone(),
            rescues: result.metrics.rescues.clone(),
            checkpoints: summary(options, result),
            restored: result.restored.clone(),
            restarts: result.restarts,
            output: None,
            released_unix_ms: unix_ms(result.released_at),
            subtasks: result.subtasks.clone(),
            stopped: result.stopped.clone(),
        }
    }
}

fn summary(options: &ExecutionOptions, result: &JobResult) -> Option<CheckpointSummary> {
    options
        .checkpointing
        .as_ref()
        .map(|_| CheckpointSummary::of(&result.checkpoints))
}

fn unix_ms(t: std::time::SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}
