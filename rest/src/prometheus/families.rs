//! The metric families of one [`JobView`], named as Flink's Prometheus
//! reporter names them with `flink_` replaced by `weir_`.
//!
//! Flink's reporter turns a metric's scope into the name's prefix and the
//! scope's variables into labels. Two of Flink's default scopes apply:
//!
//! - the job on the job manager (`metrics.scope.jm-job`):
//!   `weir_jobmanager_job_<metric>{job_id, job_name}`;
//! - a subtask (`metrics.scope.task`):
//!   `weir_taskmanager_job_task_<metric>{job_id, job_name, task_id,
//!   task_name, subtask_index, tm_id}`, where a task is a stage (Flink's
//!   job vertex: `task_id` its 32-hex vertex id, `task_name` its operators'
//!   uids joined by ` -> `) and `tm_id` the worker that runs the subtask
//!   (`worker-0`, as REST's `taskmanager-id`).
//!
//! So a Grafana panel made for Flink works once `flink_` reads `weir_`.
//! Counters are OpenMetrics counters, exposed with the `_total` suffix the
//! format requires (`weir_taskmanager_job_task_numRecordsIn_total`); Flink
//! exposes its counters as gauges, without it.
//!
//! [`FAMILIES`] lists every family; each is one small function over
//! [`Families`], whose helpers write a job-scoped or a per-subtask family
//! of counters or gauges ([`Families::job_family`] and
//! [`Families::task_family`] take any value the encoder can write, a
//! histogram included; [`Families::subtask_family`] any scope and labels
//! of its own beside a subtask's).

use std::borrow::Cow;
use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeGaugeValue, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use weir_runtime::checkpoint::stats::{CheckpointRecord, CheckpointStatus};
use weir_runtime::exec::handle::{SubtaskView, VertexView};
use weir_runtime::metrics::LatencyStats;
use weir_runtime::{JobHandle, JobState, JobView};

use crate::shapes::time_shares;

/// What every name starts with (Flink's `flink`).
pub const PREFIX: &str = "weir";
/// The job's scope on the job manager, between the prefix and the metric.
pub const JOB_SCOPE: &str = "jobmanager_job";
/// A subtask's scope.
pub const TASK_SCOPE: &str = "taskmanager_job_task";

/// One family: writes its descriptor and samples.
pub type Family = fn(&mut Families<'_, '_>) -> fmt::Result;

/// Every family, in the order of the exposition.
pub const FAMILIES: &[Family] = &[
    uptime,
    num_restarts,
    number_of_completed_checkpoints,
    number_of_failed_checkpoints,
    number_of_in_progress_checkpoints,
    total_number_of_checkpoints,
    last_checkpoint_duration,
    last_checkpoint_size,
    last_checkpoint_persisted_data,
    last_checkpoint_restore_timestamp,
    num_records_in,
    num_records_out,
    num_bytes_in,
    num_bytes_out,
    num_records_in_per_second,
    num_records_out_per_second,
    num_bytes_in_per_second,
    num_bytes_out_per_second,
    busy_time_ms_per_second,
    back_pressured_time_ms_per_second,
    idle_time_ms_per_second,
    current_input_watermark,
    latency,
];

/// The collector registered with the endpoint's registry: on each scrape,
/// one view of the job, written as [`FAMILIES`]. Before the run started
/// (no view yet) the exposition is empty.
#[derive(Debug)]
pub struct JobCollector {
    handle: JobHandle,
}

impl JobCollector {
    /// Collects `handle`'s job.
    pub fn new(handle: JobHandle) -> Self {
        Self { handle }
    }
}

impl Collector for JobCollector {
    fn encode(&self, encoder: DescriptorEncoder) -> fmt::Result {
        match self.handle.view() {
            Some(view) => encode_view(&view, encoder),
            None => Ok(()),
        }
    }
}

/// Writes every family of `view`.
pub fn encode_view(view: &JobView, encoder: DescriptorEncoder<'_>) -> fmt::Result {
    with_families(view, encoder, |families| {
        FAMILIES.iter().try_for_each(|family| family(families))
    })
}

/// Runs `write` over the families of `view` (what a collector of other
/// families, or a test of one, starts from).
pub fn with_families(
    view: &JobView,
    encoder: DescriptorEncoder<'_>,
    write: impl FnOnce(&mut Families<'_, '_>) -> fmt::Result,
) -> fmt::Result {
    write(&mut Families { view, encoder })
}

/// The labels of a job-scoped sample.
pub fn job_labels(view: &JobView) -> [(&'static str, &str); 2] {
    [("job_id", &view.job_id), ("job_name", &view.name)]
}

/// The labels of a subtask's sample.
pub fn task_labels<'a>(
    view: &'a JobView,
    v: &'a VertexView,
    s: &SubtaskView,
) -> [(&'static str, Cow<'a, str>); 6] {
    [
        ("job_id", Cow::Borrowed(&view.job_id)),
        ("job_name", Cow::Borrowed(&view.name)),
        ("task_id", Cow::Borrowed(&v.id)),
        ("task_name", Cow::Borrowed(&v.name)),
        ("subtask_index", Cow::Owned(s.index.to_string())),
        ("tm_id", Cow::Owned(format!("worker-{}", s.worker))),
    ]
}

/// The families of one view being written.
pub struct Families<'v, 'e> {
    view: &'v JobView,
    encoder: DescriptorEncoder<'e>,
}

impl Families<'_, '_> {
    /// The view being written.
    pub fn view(&self) -> &JobView {
        self.view
    }

    /// A family of one sample of the job, `weir_jobmanager_job_<name>`:
    /// `sample` writes its value into an encoder that carries the job's
    /// labels (or writes nothing, for no sample).
    pub fn job_family(
        &mut self,
        name: &str,
        help: &str,
        kind: MetricType,
        sample: impl FnOnce(&JobView, &mut MetricEncoder<'_>) -> fmt::Result,
    ) -> fmt::Result {
        let full = format!("{PREFIX}_{JOB_SCOPE}_{name}");
        let mut family = self.encoder.encode_descriptor(&full, help, None, kind)?;
        let labels = job_labels(self.view);
        sample(self.view, &mut family.encode_family(&labels)?)
    }

    /// A family of one sample per subtask,
    /// `weir_taskmanager_job_task_<name>`: `sample` writes each subtask's
    /// value into an encoder that carries its labels (or writes nothing,
    /// to leave the subtask out).
    pub fn task_family(
        &mut self,
        name: &str,
        help: &str,
        kind: MetricType,
        mut sample: impl FnMut(&SubtaskView, &mut MetricEncoder<'_>) -> fmt::Result,
    ) -> fmt::Result {
        self.subtask_family(TASK_SCOPE, name, help, kind, |_, s, labels, family| {
            sample(s, &mut family.encode_family(&labels)?)
        })
    }

    /// The general per-subtask family, `weir_<scope>_<name>`: `sample`
    /// gets each subtask with its labels ([`task_labels`]) and the
    /// family's encoder, and writes any number of samples, each through
    /// `family.encode_family(&labels)` with labels of its own added (a
    /// latency histogram's source, say, as Flink's
    /// `taskmanager_job_latency_...` families have).
    pub fn subtask_family(
        &mut self,
        scope: &str,
        name: &str,
        help: &str,
        kind: MetricType,
        mut sample: impl FnMut(
            &VertexView,
            &SubtaskView,
            Vec<(&'static str, Cow<'_, str>)>,
            &mut MetricEncoder<'_>,
        ) -> fmt::Result,
    ) -> fmt::Result {
        let full = format!("{PREFIX}_{scope}_{name}");
        let mut family = self.encoder.encode_descriptor(&full, help, None, kind)?;
        for v in &self.view.vertices {
            for s in &v.subtasks {
                let labels = task_labels(self.view, v, s).to_vec();
                sample(v, s, labels, &mut family)?;
            }
        }
        Ok(())
    }

    /// A job-scoped counter.
    pub fn job_counter(&mut self, name: &str, help: &str, value: u64) -> fmt::Result {
        self.job_family(name, help, MetricType::Counter, |_, m| counter(m, value))
    }

    /// A job-scoped gauge.
    pub fn job_gauge(
        &mut self,
        name: &str,
        help: &str,
        value: impl EncodeGaugeValue,
    ) -> fmt::Result {
        self.job_family(name, help, MetricType::Gauge, |_, m| m.encode_gauge(&value))
    }

    /// A counter per subtask.
    pub fn task_counter(
        &mut self,
        name: &str,
        help: &str,
        value: impl Fn(&SubtaskView) -> u64,
    ) -> fmt::Result {
        self.task_family(name, help, MetricType::Counter, |s, m| counter(m, value(s)))
    }

    /// A gauge per subtask; a subtask whose `value` is `None` has no
    /// sample.
    pub fn task_gauge<V: EncodeGaugeValue>(
        &mut self,
        name: &str,
        help: &str,
        value: impl Fn(&SubtaskView) -> Option<V>,
    ) -> fmt::Result {
        self.task_family(name, help, MetricType::Gauge, |s, m| match value(s) {
            Some(v) => m.encode_gauge(&v),
            None => Ok(()),
        })
    }
}

fn counter(m: &mut MetricEncoder<'_>, value: u64) -> fmt::Result {
    m.encode_counter::<NoLabelSet, u64, u64>(&value, None)
}

/// The newest completed checkpoint or savepoint.
fn last_completed(view: &JobView) -> Option<&CheckpointRecord> {
    view.checkpoints
        .iter()
        .rev()
        .find(|r| r.status == CheckpointStatus::Completed)
}

/// Flink's `uptime`: ms the job has run since it started or last
/// restarted (the time of the failure it restarted from); `0` while not
/// running, `-1` once it ended.
fn uptime_ms(view: &JobView) -> i64 {
    match view.state {
        JobState::Running => {
            let since = view
                .exceptions
                .iter()
                .filter(|e| e.restarted)
                .map(|e| e.timestamp_ms)
                .fold(view.start_ms, u64::max);
            view.now_ms.saturating_sub(since) as i64
        }
        s if s.is_terminal() => -1,
        _ => 0,
    }
}

// ---- the job ----

fn uptime(f: &mut Families<'_, '_>) -> fmt::Result {
    let ms = uptime_ms(f.view());
    f.job_gauge(
        "uptime",
        "Milliseconds the job has run since it started or last restarted; 0 while not running, -1 once it ended.",
        ms,
    )
}

fn num_restarts(f: &mut Families<'_, '_>) -> fmt::Result {
    let n = u64::from(f.view().restarts);
    f.job_counter("numRestarts", "Restarts after failures.", n)
}

fn number_of_completed_checkpoints(f: &mut Families<'_, '_>) -> fmt::Result {
    let n = f.view().checkpoints_completed;
    f.job_counter(
        "numberOfCompletedCheckpoints",
        "Completed checkpoints and savepoints.",
        n,
    )
}

fn number_of_failed_checkpoints(f: &mut Families<'_, '_>) -> fmt::Result {
    let n = f.view().checkpoints_failed;
    f.job_counter("numberOfFailedCheckpoints", "Failed checkpoints.", n)
}

fn number_of_in_progress_checkpoints(f: &mut Families<'_, '_>) -> fmt::Result {
    let n = f.view().checkpoints_in_progress;
    f.job_gauge(
        "numberOfInProgressCheckpoints",
        "Checkpoints in progress now.",
        n,
    )
}

fn total_number_of_checkpoints(f: &mut Families<'_, '_>) -> fmt::Result {
    let v = f.view();
    let n = v.checkpoints_completed + v.checkpoints_failed + v.checkpoints_in_progress;
    f.job_counter(
        "totalNumberOfCheckpoints",
        "Checkpoints triggered: completed, failed and in progress.",
        n,
    )
}

fn last_checkpoint_duration(f: &mut Families<'_, '_>) -> fmt::Result {
    let ms = last_completed(f.view()).map_or(-1.0, |r| r.duration_ms);
    f.job_gauge(
        "lastCheckpointDuration",
        "Milliseconds from trigger to completion of the newest completed checkpoint; -1 before one.",
        ms,
    )
}

fn last_checkpoint_size(f: &mut Families<'_, '_>) -> fmt::Result {
    let bytes = last_completed(f.view()).map_or(-1, |r| r.bytes as i64);
    f.job_gauge(
        "lastCheckpointSize",
        "Bytes the newest completed checkpoint wrote; -1 before one.",
        bytes,
    )
}

fn last_checkpoint_persisted_data(f: &mut Families<'_, '_>) -> fmt::Result {
    let bytes = last_completed(f.view()).map_or(-1, |r| r.inflight_bytes as i64);
    f.job_gauge(
        "lastCheckpointPersistedData",
        "In-flight bytes the newest completed checkpoint persisted (unaligned checkpoints); -1 before one.",
        bytes,
    )
}

fn last_checkpoint_restore_timestamp(f: &mut Families<'_, '_>) -> fmt::Result {
    let ms = f
        .view()
        .restored
        .as_ref()
        .map_or(-1, |r| r.restore_ms as i64);
    f.job_gauge(
        "lastCheckpointRestoreTimestamp",
        "Epoch milliseconds the running attempt restored its checkpoint or savepoint; -1 if it restored none.",
        ms,
    )
}

// ---- each subtask ----

fn num_records_in(f: &mut Families<'_, '_>) -> fmt::Result {
    f.task_counter(
        "numRecordsIn",
        "Records read from the subtask's input channels (0 for a source's stage).",
        |s| s.now.records_in,
    )
}

fn num_records_out(f: &mut Families<'_, '_>) -> fmt::Result {
    f.task_counter(
        "numRecordsOut",
        "Records the subtask's chain emitted at its end.",
        |s| s.now.records_out,
    )
}

fn num_bytes_in(f: &mut Families<'_, '_>) -> fmt::Result {
    f.task_counter(
        "numBytesIn",
        "Bytes of the buffers the subtask took from its input channels.",
        |s| s.now.bytes_in,
    )
}

fn num_bytes_out(f: &mut Families<'_, '_>) -> fmt::Result {
    f.task_counter(
        "numBytesOut",
        "Bytes of the buffers the subtask shipped into its output channels.",
        |s| s.now.bytes_out,
    )
}

fn num_records_in_per_second(f: &mut Families<'_, '_>) -> fmt::Result {
    f.task_gauge(
        "numRecordsInPerSecond",
        "Records read per second over the last one to two seconds.",
        |s| Some(s.rates.unwrap_or_default().records_in),
    )
}

fn num_records_out_per_second(f: &mut Families<'_, '_>) -> fmt::Result {
    f.task_gauge(
        "numRecordsOutPerSecond",
        "Records emitted per second over the last one to two seconds.",
        |s| Some(s.rates.unwrap_or_default().records_out),
    )
}

fn num_bytes_in_per_second(f: &mut Families<'_, '_>) -> fmt::Result {
    f.task_gauge(
        "numBytesInPerSecond",
        "Bytes taken from the input channels per second over the last one to two seconds.",
        |s| Some(s.rates.unwrap_or_default().bytes_in),
    )
}

fn num_bytes_out_per_second(f: &mut Families<'_, '_>) -> fmt::Result {
    f.task_gauge(
        "numBytesOutPerSecond",
        "Bytes shipped into the output channels per second over the last one to two seconds.",
        |s| Some(s.rates.unwrap_or_default().bytes_out),
    )
}

fn busy_time_ms_per_second(f: &mut Families<'_, '_>) -> fmt::Result {
    f.task_gauge(
        "busyTimeMsPerSecond",
        "Milliseconds per second the subtask was busy, over the last one to two seconds.",
        |s| Some(time_shares(s).busy),
    )
}

fn back_pressured_time_ms_per_second(f: &mut Families<'_, '_>) -> fmt::Result {
    f.task_gauge(
        "backPressuredTimeMsPerSecond",
        "Milliseconds per second the subtask waited for output buffers or credit, over the last one to two seconds.",
        |s| Some(time_shares(s).backpressured),
    )
}

fn idle_time_ms_per_second(f: &mut Families<'_, '_>) -> fmt::Result {
    f.task_gauge(
        "idleTimeMsPerSecond",
        "Milliseconds per second the subtask had no input, over the last one to two seconds.",
        |s| Some(time_shares(s).idle),
    )
}

fn current_input_watermark(f: &mut Families<'_, '_>) -> fmt::Result {
    f.task_gauge(
        "currentInputWatermark",
        "The combined watermark of the subtask's inputs, epoch milliseconds; no sample until it has one.",
        |s| s.now.input_watermark,
    )
}

// ---- latency markers ----

/// Reads one quantile of a latency histogram.
type Quantile = fn(&LatencyStats) -> f64;

/// The quantiles of a latency family, as Flink's reporter exports a
/// histogram (a summary's quantiles).
const LATENCY_QUANTILES: [(&str, Quantile); 6] = [
    ("0.5", |s| s.p50),
    ("0.75", |s| s.p75),
    ("0.95", |s| s.p95),
    ("0.98", |s| s.p98),
    ("0.99", |s| s.p99),
    ("0.999", |s| s.p999),
];

/// `metrics.latency.interval`'s histograms in Flink's latency scope:
/// `weir_taskmanager_job_latency_source_id_operator_id_operator_subtask_index_latency`
/// (`..._source_id_source_subtask_index_operator_id_...` with granularity
/// `subtask`, `..._latency_operator_id_...` with `single`), one gauge per
/// quantile (`quantile` label, in ms, over the last
/// `metrics.latency.history-size` markers) with the source's and the
/// receiving subtask's labels. No family without latency tracking.
fn latency(f: &mut Families<'_, '_>) -> fmt::Result {
    let Some(first) = f
        .view()
        .vertices
        .iter()
        .flat_map(|v| &v.subtasks)
        .find_map(|s| s.latency.first())
    else {
        return Ok(());
    };
    let scope = match (&first.source_vertex, first.source_subtask) {
        (None, _) => "taskmanager_job_latency_operator_id_operator_subtask_index",
        (Some(_), None) => "taskmanager_job_latency_source_id_operator_id_operator_subtask_index",
        (Some(_), Some(_)) => {
            "taskmanager_job_latency_source_id_source_subtask_index_operator_id_operator_subtask_index"
        }
    };
    f.subtask_family(
        scope,
        "latency",
        "Milliseconds latency markers took from a source to this subtask, by quantile over the last markers.",
        MetricType::Gauge,
        |v, s, labels, family| {
            for l in &s.latency {
                let mut base = labels.clone();
                if let Some(source) = &l.source_vertex {
                    base.push(("source_id", Cow::Owned(source.clone())));
                }
                if let Some(i) = l.source_subtask {
                    base.push(("source_subtask_index", Cow::Owned(i.to_string())));
                }
                base.push(("operator_id", Cow::Owned(v.id.clone())));
                base.push(("operator_subtask_index", Cow::Owned(s.index.to_string())));
                for (q, value) in LATENCY_QUANTILES {
                    let mut with_q = base.clone();
                    with_q.push(("quantile", Cow::Borrowed(q)));
                    family.encode_family(&with_q)?.encode_gauge(&value(&l.stats))?;
                }
            }
            Ok(())
        },
    )
}
