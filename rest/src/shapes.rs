//! The JSON of each view, with the field names of Flink's REST API
//! (docs/REST.md documents the subset and where weir adds to it). Every
//! function maps a [`JobView`] (or part of one) to a `serde_json::Value`;
//! nothing here reads the job itself.

use serde_json::{json, Map, Value};
use weir_runtime::checkpoint::stats::{CheckpointRecord, CheckpointStatus, TaskCheckpointStats};
use weir_runtime::exec::handle::{SubtaskView, VertexView};
use weir_runtime::{BackpressureLevel, JobState, JobView, SavepointStatus, TimeShares};

/// Flink's `{"errors": [...]}` body.
pub fn errors(message: &str) -> Value {
    json!({ "errors": [message] })
}

/// `-1` for a time that has not come, as Flink writes it.
fn time_or_minus_one(t: Option<u64>) -> i64 {
    t.map_or(-1, |t| t as i64)
}

fn duration_ms(view: &JobView) -> u64 {
    view.end_ms
        .unwrap_or(view.now_ms)
        .saturating_sub(view.start_ms)
}

/// Flink's status of a subtask: running until its end.
fn subtask_status(s: &SubtaskView, job: JobState) -> &'static str {
    match (s.now.started_ns, s.now.ended_ns) {
        (_, Some(_)) if job == JobState::Canceled => "CANCELED",
        (_, Some(_)) => "FINISHED",
        (Some(_), None) if job.is_terminal() => job.as_str(),
        (Some(_), None) => "RUNNING",
        (None, _) if job.is_terminal() => job.as_str(),
        (None, _) => "INITIALIZING",
    }
}

/// Every state Flink counts tasks in, with these counts.
fn status_counts(statuses: &[&str]) -> Value {
    let mut m = Map::new();
    for s in [
        "CREATED",
        "SCHEDULED",
        "DEPLOYING",
        "INITIALIZING",
        "RUNNING",
        "FINISHED",
        "CANCELING",
        "CANCELED",
        "FAILED",
        "RECONCILING",
    ] {
        let n = statuses.iter().filter(|x| **x == s).count();
        m.insert(s.to_owned(), json!(n));
    }
    Value::Object(m)
}

fn vertex_statuses(v: &VertexView, job: JobState) -> Vec<&'static str> {
    if v.subtasks.is_empty() {
        let s = if job.is_terminal() {
            job.as_str()
        } else {
            "CREATED"
        };
        return vec![s; v.parallelism];
    }
    v.subtasks.iter().map(|s| subtask_status(s, job)).collect()
}

/// A vertex's status: the least advanced of its subtasks'.
fn vertex_status(v: &VertexView, job: JobState) -> &'static str {
    let statuses = vertex_statuses(v, job);
    for s in [
        "FAILED",
        "CANCELED",
        "CREATED",
        "INITIALIZING",
        "RUNNING",
        "FINISHED",
    ] {
        if statuses.contains(&s) {
            return s;
        }
    }
    job.as_str()
}

/// Flink's I/O metrics of a subtask or (summed) of a vertex.
fn io_metrics(subtasks: &[&SubtaskView]) -> Value {
    let sum = |f: fn(&SubtaskView) -> u64| subtasks.iter().map(|s| f(s)).sum::<u64>();
    let ms = |ns: u64| ns / 1_000_000;
    json!({
        "read-bytes": sum(|s| s.now.bytes_in),
        "read-bytes-complete": true,
        "write-bytes": sum(|s| s.now.bytes_out),
        "write-bytes-complete": true,
        "read-records": sum(|s| s.now.records_in),
        "read-records-complete": true,
        "write-records": sum(|s| s.now.records_out),
        "write-records-complete": true,
        "accumulated-backpressured-time": ms(sum(|s| s.now.backpressured_ns)),
        "accumulated-idle-time": ms(sum(|s| s.now.idle_ns)),
        "accumulated-busy-time": ms(sum(|s| s.now.busy_ns)),
    })
}

fn vertex(v: &VertexView, view: &JobView) -> Value {
    let subtasks: Vec<&SubtaskView> = v.subtasks.iter().collect();
    let status = vertex_status(v, view.state);
    json!({
        "id": v.id,
        "name": v.name,
        "maxParallelism": view.max_parallelism,
        "parallelism": v.parallelism,
        "status": status,
        "start-time": view.start_ms,
        "end-time": time_or_minus_one(if status == "RUNNING" { None } else { view.end_ms }),
        "duration": duration_ms(view),
        "tasks": status_counts(&vertex_statuses(v, view.state)),
        "metrics": io_metrics(&subtasks),
        "low-watermark": low_watermark(v),
    })
}

/// The lowest input watermark of a vertex's subtasks (what Flink's web UI
/// shows as its low watermark); `None` if one has none yet, or the vertex
/// reads no exchange (a source's stage).
fn low_watermark(v: &VertexView) -> Option<i64> {
    if v.subtasks.is_empty() {
        return None;
    }
    v.subtasks
        .iter()
        .map(|s| s.now.input_watermark)
        .collect::<Option<Vec<i64>>>()?
        .into_iter()
        .min()
}

/// `GET /jobs/:id/vertices/:vid/watermarks`: each subtask's
/// `currentInputWatermark`, as Flink's metric list (values are strings;
/// `i64::MIN` for none yet, as Flink reports `Long.MIN_VALUE`).
pub fn watermarks(v: &VertexView) -> Value {
    Value::Array(
        v.subtasks
            .iter()
            .map(|s| {
                json!({
                    "id": format!("{}.currentInputWatermark", s.index),
                    "value": s.now.input_watermark.unwrap_or(i64::MIN).to_string(),
                })
            })
            .collect(),
    )
}

/// `GET /jobs/:id`.
pub fn job_details(view: &JobView) -> Value {
    let statuses: Vec<&str> = view
        .vertices
        .iter()
        .map(|v| vertex_status(v, view.state))
        .collect();
    let mut timestamps = Map::new();
    timestamps.insert("INITIALIZING".into(), json!(view.start_ms));
    timestamps.insert("CREATED".into(), json!(view.start_ms));
    timestamps.insert("RUNNING".into(), json!(view.start_ms));
    if let Some(end) = view.end_ms {
        timestamps.insert(view.state.as_str().into(), json!(end));
    }
    json!({
        "jid": view.job_id,
        "name": view.name,
        "isStoppable": false,
        "state": view.state.as_str(),
        "job-type": "STREAMING",
        "start-time": view.start_ms,
        "end-time": time_or_minus_one(view.end_ms),
        "duration": duration_ms(view),
        "maxParallelism": view.max_parallelism,
        "now": view.now_ms,
        "timestamps": timestamps,
        "vertices": view.vertices.iter().map(|v| vertex(v, view)).collect::<Vec<_>>(),
        "status-counts": status_counts(&statuses),
        "plan": {
            "jid": view.job_id,
            "name": view.name,
            "type": "STREAMING",
            "nodes": view.vertices.iter().map(plan_node).collect::<Vec<_>>(),
        },
    })
}

/// A vertex in the plan of `GET /jobs/:id`, with the edges into it as
/// Flink gives them (none for a source's vertex).
fn plan_node(v: &VertexView) -> Value {
    let mut node = json!({
        "id": v.id,
        "parallelism": v.parallelism,
        "operator": "",
        "operator_strategy": "",
        "description": v.name,
    });
    if !v.inputs.is_empty() {
        node["inputs"] = v
            .inputs
            .iter()
            .enumerate()
            .map(|(num, i)| {
                json!({
                    "num": num,
                    "id": i.vertex,
                    "ship_strategy": i.ship_strategy,
                    "exchange": "pipelined_bounded",
                })
            })
            .collect();
    }
    node
}

/// `GET /jobs/:id/vertices/:vid`: the vertex and each subtask's metrics.
pub fn vertex_details(view: &JobView, v: &VertexView) -> Value {
    let subtasks: Vec<Value> = v
        .subtasks
        .iter()
        .map(|s| {
            json!({
                "subtask": s.index,
                "status": subtask_status(s, view.state),
                "attempt": 0,
                "endpoint": format!("worker-{}", s.worker),
                "start-time": view.start_ms,
                "end-time": -1,
                "duration": s.now.running_time().as_millis() as u64,
                "metrics": io_metrics(&[s]),
                "taskmanager-id": format!("worker-{}", s.worker),
                "currentInputWatermark": s.now.input_watermark,
            })
        })
        .collect();
    json!({
        "id": v.id,
        "name": v.name,
        "parallelism": v.parallelism,
        "maxParallelism": view.max_parallelism,
        "now": view.now_ms,
        "subtasks": subtasks,
    })
}

fn level(l: BackpressureLevel) -> &'static str {
    match l {
        BackpressureLevel::Ok => "ok",
        BackpressureLevel::Low => "low",
        BackpressureLevel::High => "high",
    }
}

/// A subtask's busy, backpressured and idle ms per second over the last
/// one to two seconds (over its whole run once it ended), scaled to add
/// up to 1000: the three partition the subtask's time, but a reading
/// taken during a poll may leave part of that poll to the next interval.
/// All zero before it started.
pub fn time_shares(s: &SubtaskView) -> TimeShares {
    let shares = s
        .recent
        .or_else(|| s.now.shares_since(None))
        .unwrap_or_default();
    let total = shares.total();
    if total > 0.0 {
        TimeShares {
            busy: shares.busy * 1000.0 / total,
            backpressured: shares.backpressured * 1000.0 / total,
            idle: shares.idle * 1000.0 / total,
        }
    } else {
        shares
    }
}

/// `GET /jobs/:id/vertices/:vid/backpressure`: per subtask, the level and
/// the busy, backpressured and idle ratios over the last one to two
/// seconds (over its whole run once it ended).
pub fn backpressure(view: &JobView, v: &VertexView) -> Value {
    let mut worst = BackpressureLevel::Ok;
    let subtasks: Vec<Value> = v
        .subtasks
        .iter()
        .map(|s| {
            let shares = time_shares(s);
            let l = shares.level();
            worst = worst.max(l);
            json!({
                "subtask": s.index,
                "attempt-number": 0,
                "backpressure-level": level(l),
                "ratio": shares.backpressured / 1000.0,
                "busyRatio": shares.busy / 1000.0,
                "idleRatio": shares.idle / 1000.0,
            })
        })
        .collect();
    json!({
        "status": "ok",
        "backpressure-level": level(worst),
        "end-timestamp": view.now_ms,
        "subtasks": subtasks,
    })
}

/// `GET /jobs` (Flink's `JobIdsWithStatusOverview`).
pub fn jobs(view: Option<&JobView>) -> Value {
    let jobs: Vec<Value> = view
        .iter()
        .map(|v| json!({ "id": v.job_id, "status": v.state.as_str() }))
        .collect();
    json!({ "jobs": jobs })
}

/// `GET /jobs/overview`.
pub fn jobs_overview(view: Option<&JobView>) -> Value {
    let jobs: Vec<Value> = view
        .iter()
        .map(|v| {
            let statuses: Vec<&str> = v
                .vertices
                .iter()
                .flat_map(|x| vertex_statuses(x, v.state))
                .collect();
            json!({
                "jid": v.job_id,
                "name": v.name,
                "state": v.state.as_str(),
                "start-time": v.start_ms,
                "end-time": time_or_minus_one(v.end_ms),
                "duration": duration_ms(v),
                "last-modification": v.end_ms.unwrap_or(v.start_ms),
                "tasks": {
                    "total": statuses.len(),
                    "created": statuses.iter().filter(|s| **s == "CREATED").count(),
                    "scheduled": 0,
                    "deploying": 0,
                    "initializing": statuses.iter().filter(|s| **s == "INITIALIZING").count(),
                    "running": statuses.iter().filter(|s| **s == "RUNNING").count(),
                    "finished": statuses.iter().filter(|s| **s == "FINISHED").count(),
                    "canceling": 0,
                    "canceled": statuses.iter().filter(|s| **s == "CANCELED").count(),
                    "failed": statuses.iter().filter(|s| **s == "FAILED").count(),
                    "reconciling": 0,
                },
            })
        })
        .collect();
    json!({ "jobs": jobs })
}

/// `GET /overview`: one process, one "task manager" per worker.
pub fn overview(view: Option<&JobView>) -> Value {
    let count = |f: fn(JobState) -> bool| view.filter(|v| f(v.state)).map_or(0, |_| 1);
    let workers = view.map_or(0, |v| v.workers);
    json!({
        "taskmanagers": workers,
        "slots-total": workers,
        "slots-available": 0,
        "jobs-running": count(|s| !s.is_terminal()),
        "jobs-finished": count(|s| s == JobState::Finished),
        "jobs-cancelled": count(|s| s == JobState::Canceled),
        "jobs-failed": count(|s| s == JobState::Failed),
        "flink-version": format!("weir {}", env!("CARGO_PKG_VERSION")),
        "flink-commit": "",
    })
}

/// `GET /jobs/:id/config`: Flink's execution config, and every weir key
/// (secrets left out) under `user-config`.
pub fn job_config(view: &JobView) -> Value {
    let mut user = Map::new();
    for (k, v) in &view.config {
        user.insert(k.clone(), json!(v));
    }
    json!({
        "jid": view.job_id,
        "name": view.name,
        "execution-config": {
            "execution-mode": "PIPELINED",
            "restart-strategy": view.restart_strategy,
            "job-parallelism": view.workers,
            "object-reuse-mode": true,
            "user-config": user,
        },
    })
}

/// `GET /jobs/:id/exceptions`.
pub fn exceptions(view: &JobView) -> Value {
    let entries: Vec<Value> = view
        .exceptions
        .iter()
        .rev()
        .map(|e| {
            json!({
                "exceptionName": "JobError",
                "stacktrace": e.message,
                "timestamp": e.timestamp_ms,
                "taskName": e.task,
                "endpoint": null,
                "taskManagerId": null,
                "failureLabels": {},
                "concurrentExceptions": [],
                "restarted": e.restarted,
            })
        })
        .collect();
    let root = view.exceptions.last();
    json!({
        "root-exception": root.map(|e| e.message.clone()),
        "timestamp": root.map(|e| e.timestamp_ms),
        "all-exceptions": [],
        "truncated": false,
        "exceptionHistory": { "entries": entries, "truncated": false },
    })
}

/// Min, max, average and percentiles of `values`, as Flink's summaries.
fn stats(values: &[f64]) -> Value {
    if values.is_empty() {
        return json!({"min": 0, "max": 0, "avg": 0, "p50": 0, "p90": 0, "p95": 0, "p99": 0, "p999": 0});
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize].round() as u64;
    json!({
        "min": v[0].round() as u64,
        "max": v[v.len() - 1].round() as u64,
        "avg": (v.iter().sum::<f64>() / v.len() as f64).round() as u64,
        "p50": q(0.5), "p90": q(0.9), "p95": q(0.95), "p99": q(0.99), "p999": q(0.999),
    })
}

fn checkpoint_type(r: &CheckpointRecord) -> &'static str {
    if r.is_savepoint {
        "SAVEPOINT"
    } else if r.inflight_bytes > 0 {
        "UNALIGNED_CHECKPOINT"
    } else {
        "CHECKPOINT"
    }
}

/// The stage of a task named "stage (i/P)".
fn stage_of(task: &str) -> &str {
    task.rsplit_once(" (").map_or(task, |(s, _)| s)
}

/// The index of a task named "stage (i/P)" (from 0).
fn index_of(task: &str) -> usize {
    task.rsplit_once(" (")
        .and_then(|(_, r)| r.split('/').next())
        .and_then(|i| i.parse::<usize>().ok())
        .map_or(0, |i| i.saturating_sub(1))
}

fn ack_ms(r: &CheckpointRecord) -> u64 {
    if r.status == CheckpointStatus::InProgress {
        // The latest acknowledgement so far (none yet: the trigger).
        let acked = |t: &TaskCheckpointStats| {
            (t.first_barrier_ms + t.alignment_ms + t.sync_ms + t.async_ms).round() as u64
        };
        return r.tasks.iter().map(acked).fold(r.trigger_ms, u64::max);
    }
    r.trigger_ms + r.duration_ms.round() as u64
}

/// Flink's status of a checkpoint (`COMPLETED`, `FAILED`, `IN_PROGRESS`)
/// and the `className` of its statistics.
fn status_of(r: &CheckpointRecord) -> (&'static str, &'static str) {
    match r.status {
        CheckpointStatus::Completed => ("COMPLETED", "completed"),
        CheckpointStatus::Failed => ("FAILED", "failed"),
        CheckpointStatus::InProgress => ("IN_PROGRESS", "in_progress"),
    }
}

/// A vertex's part of checkpoint `r` (Flink's `TaskCheckpointStatistics`).
fn task_summary(r: &CheckpointRecord, v: &VertexView, tasks: &[&TaskCheckpointStats]) -> Value {
    json!({
        "id": r.id,
        "status": status_of(r).0,
        "latest_ack_timestamp": ack_ms(r),
        "checkpointed_size": tasks.iter().map(|t| t.bytes).sum::<u64>(),
        "state_size": tasks.iter().map(|t| t.bytes).sum::<u64>(),
        "end_to_end_duration": r.duration_ms.round() as u64,
        "alignment_buffered": 0,
        "processed_data": 0,
        "persisted_data": tasks.iter().map(|t| t.inflight_bytes).sum::<u64>(),
        "num_subtasks": v.parallelism,
        "num_acknowledged_subtasks": tasks.len(),
    })
}

fn tasks_of<'a>(r: &'a CheckpointRecord, v: &VertexView) -> Vec<&'a TaskCheckpointStats> {
    r.tasks
        .iter()
        .filter(|t| stage_of(&t.task) == v.name)
        .collect()
}

/// One checkpoint of the history (Flink's `CheckpointStatistics`).
pub fn checkpoint(r: &CheckpointRecord, view: &JobView) -> Value {
    let mut tasks = Map::new();
    for v in &view.vertices {
        tasks.insert(v.id.clone(), task_summary(r, v, &tasks_of(r, v)));
    }
    let (status, class) = status_of(r);
    let mut out = json!({
        "className": class,
        "id": r.id,
        "status": status,
        "is_savepoint": r.is_savepoint,
        "savepointFormat": if r.is_savepoint { json!("CANONICAL") } else { Value::Null },
        "trigger_timestamp": r.trigger_ms,
        "latest_ack_timestamp": ack_ms(r),
        "checkpointed_size": r.bytes,
        "state_size": r.bytes,
        "end_to_end_duration": r.duration_ms.round() as u64,
        "alignment_buffered": 0,
        "processed_data": 0,
        "persisted_data": r.inflight_bytes,
        "num_subtasks": view.vertices.iter().map(|v| v.parallelism).sum::<usize>(),
        "num_acknowledged_subtasks": r.tasks.len(),
        "checkpoint_type": checkpoint_type(r),
        "is_final": r.is_final,
        "tasks": tasks,
    });
    let m = out.as_object_mut().expect("an object");
    match r.status {
        CheckpointStatus::Completed => {
            m.insert("external_path".into(), json!(""));
            m.insert("discarded".into(), json!(false));
        }
        CheckpointStatus::Failed => {
            m.insert("failure_timestamp".into(), json!(ack_ms(r)));
            m.insert("failure_message".into(), json!(r.failure));
        }
        CheckpointStatus::InProgress => {}
    }
    out
}

/// The job's metrics of `GET /jobs/:id/metrics`, by Flink's names: the
/// job's uptime, restarts and checkpoints, and the latency histograms of
/// the markers (`metrics.latency.interval`), each as Flink's metric store
/// lists a histogram (`<name>_min`, `_max`, `_mean`, `_median`, `_stddev`,
/// `_p75` .. `_p999`, in ms). A histogram's name is Flink's:
/// `latency.source_id.<vertex>[.source_subtask_index.<i>].operator_id.<vertex>.operator_subtask_index.<j>.latency`,
/// with weir's vertex ids (a task records on arrival, for every operator
/// chained in it).
pub fn job_metrics(view: &JobView) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let uptime = view
        .end_ms
        .unwrap_or(view.now_ms)
        .saturating_sub(view.start_ms);
    out.push(("uptime".to_owned(), uptime as f64));
    out.push(("numRestarts".to_owned(), f64::from(view.restarts)));
    out.push((
        "numberOfCompletedCheckpoints".to_owned(),
        view.checkpoints_completed as f64,
    ));
    out.push((
        "numberOfFailedCheckpoints".to_owned(),
        view.checkpoints_failed as f64,
    ));
    out.push((
        "numberOfInProgressCheckpoints".to_owned(),
        view.checkpoints_in_progress as f64,
    ));
    if let Some(r) = view
        .checkpoints
        .iter()
        .rev()
        .find(|r| r.status == CheckpointStatus::Completed)
    {
        out.push(("lastCheckpointDuration".to_owned(), r.duration_ms.round()));
        out.push(("lastCheckpointSize".to_owned(), r.bytes as f64));
    }
    for v in &view.vertices {
        for t in &v.subtasks {
            for l in &t.latency {
                let mut name = String::from("latency.");
                if let Some(source) = &l.source_vertex {
                    name.push_str(&format!("source_id.{source}."));
                }
                if let Some(i) = l.source_subtask {
                    name.push_str(&format!("source_subtask_index.{i}."));
                }
                name.push_str(&format!(
                    "operator_id.{}.operator_subtask_index.{}.latency",
                    v.id, t.index
                ));
                let s = &l.stats;
                for (suffix, value) in [
                    ("count", s.count as f64),
                    ("min", s.min),
                    ("max", s.max),
                    ("mean", s.mean),
                    ("median", s.p50),
                    ("stddev", s.stddev),
                    ("p75", s.p75),
                    ("p90", s.p90),
                    ("p95", s.p95),
                    ("p98", s.p98),
                    ("p99", s.p99),
                    ("p999", s.p999),
                ] {
                    out.push((format!("{name}_{suffix}"), value));
                }
            }
        }
    }
    out
}

/// The metrics of each subtask of `v`, by Flink's task metric names:
/// (subtask, name, value).
pub fn subtask_metrics(v: &VertexView) -> Vec<(usize, &'static str, f64)> {
    let mut out = Vec::new();
    for s in &v.subtasks {
        let n = &s.now;
        let mut push = |name, value: f64| out.push((s.index, name, value));
        push("numRecordsIn", n.records_in as f64);
        push("numRecordsOut", n.records_out as f64);
        push("numBytesIn", n.bytes_in as f64);
        push("numBytesOut", n.bytes_out as f64);
        if let Some(r) = &s.recent {
            push("busyTimeMsPerSecond", r.busy.round());
            push("backPressuredTimeMsPerSecond", r.backpressured.round());
            push("idleTimeMsPerSecond", r.idle.round());
        }
        if let Some(w) = n.input_watermark {
            push("currentInputWatermark", w as f64);
        }
    }
    out
}

/// `GET /jobs/:id/vertices/:vid/metrics`: each subtask's metrics as
/// `<subtask>.<name>`, as Flink's vertex metrics.
pub fn vertex_metrics(v: &VertexView) -> Vec<(String, f64)> {
    subtask_metrics(v)
        .into_iter()
        .map(|(i, name, value)| (format!("{i}.{name}"), value))
        .collect()
}

/// `GET /jobs/:id/vertices/:vid/subtasks/metrics`: without `get`, the
/// names the subtasks have; with `get`, each asked-for metric aggregated
/// over the subtasks by `aggs` (`min`, `max`, `avg`, `sum`; all four when
/// empty), as Flink's aggregated subtask metrics.
pub fn aggregated_subtask_metrics(v: &VertexView, get: Option<&[&str]>, aggs: &[&str]) -> Value {
    let all = subtask_metrics(v);
    let mut names: Vec<&str> = Vec::new();
    for (_, name, _) in &all {
        if !names.contains(name) {
            names.push(name);
        }
    }
    let Some(wanted) = get else {
        return Value::Array(names.iter().map(|n| json!({ "id": n })).collect());
    };
    let aggs: &[&str] = if aggs.is_empty() {
        &["min", "max", "avg", "sum"]
    } else {
        aggs
    };
    Value::Array(
        wanted
            .iter()
            .filter(|w| names.contains(w))
            .map(|w| {
                let values: Vec<f64> = all
                    .iter()
                    .filter(|(_, n, _)| n == w)
                    .map(|(_, _, v)| *v)
                    .collect();
                let mut m = Map::new();
                m.insert("id".into(), json!(w));
                for a in aggs {
                    let v = match *a {
                        "min" => values.iter().copied().fold(f64::INFINITY, f64::min),
                        "max" => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                        "sum" => values.iter().sum(),
                        _ => values.iter().sum::<f64>() / values.len() as f64,
                    };
                    m.insert((*a).into(), json!(v));
                }
                Value::Object(m)
            })
            .collect(),
    )
}

/// `GET /jobs/:id/metrics`: without `get`, the ids of the job's metrics;
/// with `get=a,b`, those of them that exist with their values (as strings,
/// as Flink gives them).
pub fn metrics_reply(metrics: &[(String, f64)], get: Option<&[&str]>) -> Value {
    match get {
        None => Value::Array(metrics.iter().map(|(id, _)| json!({ "id": id })).collect()),
        Some(wanted) => Value::Array(
            wanted
                .iter()
                .filter_map(|w| metrics.iter().find(|(id, _)| id == w))
                .map(|(id, v)| json!({ "id": id, "value": v.to_string() }))
                .collect(),
        ),
    }
}

/// `GET /jobs/:id/checkpoints`.
pub fn checkpoints(view: &JobView) -> Value {
    let completed: Vec<&CheckpointRecord> = view
        .checkpoints
        .iter()
        .filter(|r| r.status == CheckpointStatus::Completed)
        .collect();
    let latest = |f: &dyn Fn(&CheckpointRecord) -> bool| {
        view.checkpoints
            .iter()
            .rev()
            .find(|r| f(r))
            .map_or(Value::Null, |r| checkpoint(r, view))
    };
    let sizes: Vec<f64> = completed.iter().map(|r| r.bytes as f64).collect();
    let durations: Vec<f64> = completed.iter().map(|r| r.duration_ms).collect();
    let persisted: Vec<f64> = completed.iter().map(|r| r.inflight_bytes as f64).collect();
    json!({
        "counts": {
            "restored": u64::from(view.restored.is_some()),
            "total": view.checkpoints_completed + view.checkpoints_failed + view.checkpoints_in_progress,
            "in_progress": view.checkpoints_in_progress,
            "completed": view.checkpoints_completed,
            "failed": view.checkpoints_failed,
        },
        "summary": {
            "checkpointed_size": stats(&sizes),
            "state_size": stats(&sizes),
            "end_to_end_duration": stats(&durations),
            "alignment_buffered": stats(&[]),
            "processed_data": stats(&[]),
            "persisted_data": stats(&persisted),
        },
        "latest": {
            "completed": latest(&|r| r.status == CheckpointStatus::Completed && !r.is_savepoint),
            "savepoint": latest(&|r| r.status == CheckpointStatus::Completed && r.is_savepoint),
            "failed": latest(&|r| r.status == CheckpointStatus::Failed),
            "restored": view.restored.as_ref().map(|r| json!({
                "id": r.id,
                "restore_timestamp": r.restore_ms,
                "is_savepoint": r.path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("savepoint-")),
                "external_path": r.path.display().to_string(),
            })),
        },
        // Newest first, those in progress before those that ended, as Flink's.
        "history": view
            .checkpoints_pending
            .iter()
            .rev()
            .chain(view.checkpoints.iter().rev())
            .map(|r| checkpoint(r, view))
            .collect::<Vec<_>>(),
    })
}

/// `GET /jobs/:id/checkpoints/details/:cid/subtasks/:vid`: each subtask's
/// barrier arrival (`start_delay` after the trigger), alignment, sync and
/// async parts, bytes and in-flight bytes.
pub fn checkpoint_subtasks(r: &CheckpointRecord, v: &VertexView) -> Value {
    let tasks = tasks_of(r, v);
    let mut subtasks: Vec<(usize, Value)> = tasks
        .iter()
        .map(|t| {
            let index = index_of(&t.task);
            let delay = (t.first_barrier_ms - r.trigger_ms as f64).max(0.0);
            (
                index,
                json!({
                    "index": index,
                    "status": "completed",
                    "ack_timestamp": ack_ms(r),
                    "end_to_end_duration": r.duration_ms.round() as u64,
                    "state_size": t.bytes,
                    "checkpointed_size": t.bytes,
                    "checkpoint": {
                        "sync": t.sync_ms.round() as u64,
                        "async": t.async_ms.round() as u64,
                    },
                    "alignment": {
                        "buffered": 0,
                        "processed": 0,
                        "persisted": t.inflight_bytes,
                        "duration": t.alignment_ms.round() as u64,
                    },
                    "start_delay": delay.round() as u64,
                    "unaligned_checkpoint": t.inflight_bytes > 0,
                    "aborted": false,
                    "worker": t.worker,
                }),
            )
        })
        .collect();
    // Subtasks that have not acknowledged (a checkpoint in progress or
    // one that failed), as Flink lists them.
    for index in 0..v.parallelism {
        if !subtasks.iter().any(|(i, _)| *i == index) {
            let pending = json!({ "index": index, "status": "pending_or_failed" });
            subtasks.push((index, pending));
        }
    }
    subtasks.sort_by_key(|(i, _)| *i);
    let mut out = task_summary(r, v, &tasks);
    out.as_object_mut().expect("an object").insert(
        "subtasks".into(),
        Value::Array(subtasks.into_iter().map(|(_, s)| s).collect()),
    );
    out
}

/// `GET /jobs/:id/checkpoints/config`.
pub fn checkpoint_config(view: &JobView) -> Value {
    let Some(c) = &view.checkpointing else {
        return json!({
            "mode": "exactly_once",
            "interval": i64::MAX,
            "timeout": 0,
            "min_pause": 0,
            "max_concurrent": 0,
            "externalization": { "enabled": false, "delete_on_cancellation": true },
            "state_backend": "weir",
            "checkpoint_storage": "none",
            "unaligned_checkpoints": false,
            "tolerable_failed_checkpoints": 0,
            "aligned_checkpoint_timeout": 0,
            "checkpoints_after_tasks_finish": true,
            "state_changelog_enabled": false,
        });
    };
    let o = &c.coordinator;
    json!({
        "mode": if c.exactly_once { "exactly_once" } else { "at_least_once" },
        "interval": o.interval.as_millis() as u64,
        "timeout": o.timeout.as_millis() as u64,
        "min_pause": o.min_pause.as_millis() as u64,
        "max_concurrent": o.max_concurrent,
        "externalization": { "enabled": true, "delete_on_cancellation": false },
        "state_backend": "weir",
        "checkpoint_storage": format!("file://{}", weir_path(&c.dir)),
        "savepoints_dir": c.savepoints_dir.as_ref().map(|d| weir_path(d)),
        "unaligned_checkpoints": c.unaligned,
        "tolerable_failed_checkpoints": o.tolerable_failures,
        "aligned_checkpoint_timeout": c.aligned_checkpoint_timeout.as_millis() as u64,
        "checkpoints_after_tasks_finish": true,
        "state_changelog_enabled": false,
        "incremental": c.incremental,
        "num_retained": o.num_retained,
    })
}

fn weir_path(p: &std::path::Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// `GET /jobs/:id/savepoints/:triggerid`: Flink's asynchronous operation
/// status.
pub fn savepoint_status(status: &SavepointStatus) -> Value {
    match status {
        SavepointStatus::InProgress => json!({ "status": { "id": "IN_PROGRESS" } }),
        SavepointStatus::Completed(dir) => json!({
            "status": { "id": "COMPLETED" },
            "operation": { "location": dir.display().to_string() },
        }),
        SavepointStatus::Failed(why) => json!({
            "status": { "id": "COMPLETED" },
            "operation": { "failure-cause": { "class": "SavepointError", "stack-trace": why } },
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn task_names_split_into_stage_and_index() {
        assert_eq!(stage_of("a -> b (2/4)"), "a -> b");
        assert_eq!(index_of("a -> b (2/4)"), 1);
        assert_eq!(stage_of("odd"), "odd");
        assert_eq!(index_of("odd"), 0);
    }

    #[test]
    fn summaries_take_min_max_avg_and_percentiles() {
        let s = stats(&[10.0, 20.0, 30.0, 40.0]);
        assert_eq!((s["min"].as_u64(), s["max"].as_u64()), (Some(10), Some(40)));
        assert_eq!(s["avg"], 25);
        assert_eq!(stats(&[])["p99"], 0);
    }

    #[test]
    fn savepoint_statuses_are_flinks_asynchronous_operations() {
        assert_eq!(
            savepoint_status(&SavepointStatus::InProgress),
            json!({"status": {"id": "IN_PROGRESS"}})
        );
        let done = savepoint_status(&SavepointStatus::Completed(PathBuf::from("/sp/x")));
        assert_eq!(done["operation"]["location"], "/sp/x");
        let failed = savepoint_status(&SavepointStatus::Failed("disk full".into()));
        assert_eq!(failed["status"]["id"], "COMPLETED");
        assert_eq!(
            failed["operation"]["failure-cause"]["stack-trace"],
            "disk full"
        );
    }
}
