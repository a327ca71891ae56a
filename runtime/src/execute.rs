//! Running a job: resolving parallelism, wiring the channel mesh, starting
//! one pinned glommio executor per worker, reporting progress and collecting
//! the result.
//!
//! The control thread (the caller's) builds every ring before any worker
//! starts, hands each worker its endpoints, waits until all workers have
//! built their tasks, releases them together and then only watches: it reads
//! the workers' counters for progress lines and waits for them to finish.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use glommio::{LocalExecutorBuilder, Placement};
use weir_net::channel;

use crate::config::Config;
use crate::error::{JobError, Result};
use crate::job::JobGraph;
use crate::metrics::{MetricsSnapshot, WorkerMetrics};
use crate::source::SubtaskInfo;
use crate::task::Task;
use crate::worker::{
    run_worker, BuildContext, IdlePolicy, JobShared, OutputEndpoint, WorkerEndpoints,
};

/// How a job is executed (from [`Config`], or set directly in tests).
#[derive(Clone, Debug)]
pub struct ExecutionOptions {
    /// Workers (one executor each).
    pub workers: usize,
    /// Pin each worker to a core.
    pub pin_cores: bool,
    /// `pipeline.max-parallelism`: number of key groups.
    pub max_parallelism: u32,
    /// `execution.buffer-timeout`.
    pub buffer_timeout: Duration,
    /// `taskmanager.memory.segment-size`: bytes per network buffer.
    pub segment_size: usize,
    /// `taskmanager.network.memory.buffers-per-channel`: credit per channel.
    pub buffers_per_channel: usize,
    /// `taskmanager.network.memory.floating-buffers-per-gate`.
    pub floating_buffers: usize,
    /// `weir.worker.spin-before-park`.
    pub spin_before_park: Duration,
    /// `weir.progress.interval` (zero: no progress reports).
    pub progress_interval: Duration,
}

impl ExecutionOptions {
    /// Options from a configuration; workers default to every usable core.
    pub fn from_config(config: &Config) -> Self {
        Self {
            workers: config.parallelism.unwrap_or_else(available_cores),
            pin_cores: config.pin_cores,
            max_parallelism: config.max_parallelism,
            buffer_timeout: config.buffer_timeout,
            segment_size: config.segment_size,
            buffers_per_channel: config.buffers_per_channel as usize,
            floating_buffers: config.floating_buffers_per_gate as usize,
            spin_before_park: config.spin_before_park,
            progress_interval: config.progress_interval,
        }
    }

    /// The defaults of [`Config`] with `workers` workers and no progress
    /// reports (handy in tests).
    pub fn with_workers(workers: usize) -> Self {
        let mut options = Self::from_config(&Config::default());
        options.workers = workers;
        options.progress_interval = Duration::ZERO;
        options
    }
}

/// Cores this process may run on (its affinity mask), at least 1.
pub fn available_cores() -> usize {
    core_affinity::get_core_ids()
        .map(|ids| ids.len())
        .filter(|&n| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}

/// A progress report, handed to the progress callback every interval.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Time since the workers started.
    pub elapsed: Duration,
    /// Length of the interval this report covers.
    pub interval: Duration,
    /// Counters now.
    pub now: MetricsSnapshot,
    /// Counters at the previous report.
    pub before: MetricsSnapshot,
}

impl Progress {
    /// Per worker: sink records per second over the interval.
    pub fn sink_rates(&self) -> Vec<f64> {
        let secs = self.interval.as_secs_f64().max(1e-9);
        self.now
            .sink_records
            .iter()
            .zip(&self.before.sink_records)
            .map(|(n, b)| (n - b) as f64 / secs)
            .collect()
    }

    /// A one-line summary: total and per-worker sink throughput.
    pub fn line(&self) -> String {
        let rates = self.sink_rates();
        let total: f64 = rates.iter().sum();
        let per_worker: Vec<String> = rates
            .iter()
            .enumerate()
            .map(|(i, r)| format!("w{i} {}", human_rate(*r)))
            .collect();
        format!(
            "[{:>6.1}s] {} records/s into sinks ({} total) | {}",
            self.elapsed.as_secs_f64(),
            human_rate(total),
            self.now.total_sink_records(),
            per_worker.join(", ")
        )
    }
}

/// "12.3 M" style rendering of a rate.
pub fn human_rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1} k", r / 1e3)
    } else {
        format!("{r:.0}")
    }
}

/// What a finished job reports.
#[derive(Clone, Debug)]
pub struct JobResult {
    /// Workers that ran it.
    pub workers: usize,
    /// From the release of the workers to the last one finishing.
    pub elapsed: Duration,
    /// Final counters.
    pub metrics: MetricsSnapshot,
}

/// Buffers a pool may borrow beyond its size when a single record's output
/// exceeds it (see `ExchangeOutput`); bounds the return rings' capacity.
const OVERDRAFT_BUFFERS: usize = 1024;

struct ResolvedStage {
    parallelism: usize,
}

/// Runs `job` to completion, printing progress lines to stderr.
pub fn execute(job: JobGraph, options: &ExecutionOptions) -> Result<JobResult> {
    execute_with_progress(job, options, &mut |p: &Progress| eprintln!("{}", p.line()))
}

/// Runs `job` to completion, calling `on_progress` every
/// `options.progress_interval` (never if zero).
pub fn execute_with_progress(
    job: JobGraph,
    options: &ExecutionOptions,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<JobResult> {
    let workers = options.workers;
    let stages = validate(&job, options)?;
    let shared = Arc::new(JobShared::new(workers));
    let metrics: Vec<WorkerMetrics> = (0..workers).map(|_| WorkerMetrics::default()).collect();
    let mut endpoints = wire_channels(&job, &stages, options, &shared);

    let cores = core_affinity::get_core_ids().unwrap_or_default();
    if options.pin_cores && !cores.is_empty() && workers > cores.len() {
        eprintln!(
            "warning: {workers} workers on {} cores: workers share cores (pinned round-robin); \
             throughput and latency suffer",
            cores.len()
        );
    }
    let job = Arc::new(job);
    let stages = Arc::new(stages);
    let idle = IdlePolicy {
        spin_before_park: options.spin_before_park,
    };
    let mut handles = Vec::with_capacity(workers);
    for (w, worker_metrics) in metrics.iter().enumerate() {
        let placement = if options.pin_cores && !cores.is_empty() {
            Placement::Fixed(cores[w % cores.len()].id)
        } else {
            Placement::Unbound
        };
        let mut eps = std::mem::take(&mut endpoints[w]);
        let job = job.clone();
        let stages = stages.clone();
        let shared2 = shared.clone();
        let worker_metrics = worker_metrics.clone();
        let timeout = options.buffer_timeout;
        let max_parallelism = options.max_parallelism;
        let spawned = LocalExecutorBuilder::new(placement)
            .name(&format!("weir-worker-{w}"))
            // Little registered I/O memory: keeps many workers under the
            // default locked-memory limit (ulimit -l) of unprivileged users.
            .io_memory(1 << 20)
            .spawn(move || async move {
                let tasks = build_tasks(
                    w,
                    workers,
                    &job,
                    &stages,
                    &mut eps,
                    &worker_metrics,
                    timeout,
                    max_parallelism,
                );
                match tasks {
                    Ok(tasks) => run_worker(w, tasks, shared2, worker_metrics, idle).await,
                    Err((task, message)) => shared2.fail(w, task, message),
                }
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                shared.cancel();
                for h in handles {
                    let _ = h.join();
                }
                return Err(JobError::Spawn {
                    worker: w,
                    message: e.to_string(),
                });
            }
        }
    }

    // Release the workers together once all have built their tasks.
    while shared.ready.load(Ordering::Acquire) < workers && shared.failure.get().is_none() {
        std::thread::sleep(Duration::from_micros(200));
    }
    let start = Instant::now();
    shared.go.store(true, Ordering::Release);

    let mut last_report = start;
    let mut before = MetricsSnapshot::read(&metrics);
    let tick = if options.progress_interval.is_zero() {
        Duration::from_millis(5)
    } else {
        options.progress_interval.min(Duration::from_millis(5))
    };
    while shared.finished.load(Ordering::Acquire) < workers
        && !shared.cancelled.load(Ordering::Acquire)
    {
        std::thread::sleep(tick);
        let now = Instant::now();
        if !options.progress_interval.is_zero()
            && now.duration_since(last_report) >= options.progress_interval
        {
            let snapshot = MetricsSnapshot::read(&metrics);
            on_progress(&Progress {
                elapsed: now.duration_since(start),
                interval: now.duration_since(last_report),
                now: snapshot.clone(),
                before: std::mem::replace(&mut before, snapshot),
            });
            last_report = now;
        }
    }
    for (w, h) in handles.into_iter().enumerate() {
        if let Err(e) = h.join() {
            let _ = shared.failure.set((w, "worker".into(), e.to_string()));
        }
    }
    if let Some((worker, task, message)) = shared.failure.get() {
        return Err(JobError::TaskFailed {
            worker: *worker,
            task: task.clone(),
            message: message.clone(),
        });
    }
    let end = shared
        .finished_at
        .iter()
        .filter_map(|t| t.get().copied())
        .max()
        .unwrap_or_else(Instant::now);
    Ok(JobResult {
        workers,
        elapsed: end.duration_since(start),
        metrics: MetricsSnapshot::read(&metrics),
    })
}

/// Checks the graph and options; returns each stage's parallelism.
fn validate(job: &JobGraph, options: &ExecutionOptions) -> Result<Vec<ResolvedStage>> {
    if let Some(e) = job.errors.first() {
        return Err(JobError::InvalidJob(e.clone()));
    }
    if options.workers == 0 {
        return Err(JobError::InvalidJob(
            "a job needs at least one worker".into(),
        ));
    }
    if job.stages.is_empty() {
        return Err(JobError::InvalidJob(format!(
            "job `{}` has no sink: nothing would run",
            job.name()
        )));
    }
    let mut resolved = Vec::with_capacity(job.stages.len());
    for stage in &job.stages {
        let p = stage.parallelism.unwrap_or(options.workers);
        if p as u64 > u64::from(options.max_parallelism) {
            return Err(JobError::InvalidJob(format!(
                "stage `{}` has parallelism {p}, above pipeline.max-parallelism {}",
                stage.name, options.max_parallelism
            )));
        }
        resolved.push(ResolvedStage { parallelism: p });
    }
    for e in 0..job.exchanges {
        let senders = job.stages.iter().filter(|s| s.output == Some(e)).count();
        let receivers = job.stages.iter().filter(|s| s.input == Some(e)).count();
        if senders != 1 || receivers != 1 {
            return Err(JobError::InvalidJob(format!(
                "a key_by is not followed by a keyed operator ending in a sink \
                 (exchange {e} has {senders} sending and {receivers} receiving stages)"
            )));
        }
    }
    Ok(resolved)
}

/// Builds every channel of every exchange: one SPSC channel per (sending
/// subtask, receiving subtask) pair, and hands the endpoints to the workers
/// that run those subtasks.
fn wire_channels(
    job: &JobGraph,
    stages: &[ResolvedStage],
    options: &ExecutionOptions,
    shared: &JobShared,
) -> Vec<WorkerEndpoints> {
    let workers = options.workers;
    let mut endpoints: Vec<WorkerEndpoints> =
        (0..workers).map(|_| WorkerEndpoints::default()).collect();
    let credit = options.buffers_per_channel.max(1);
    for e in 0..job.exchanges {
        let from = job
            .stages
            .iter()
            .position(|s| s.output == Some(e))
            .expect("validated");
        let to = job
            .stages
            .iter()
            .position(|s| s.input == Some(e))
            .expect("validated");
        let (ps, pr) = (stages[from].parallelism, stages[to].parallelism);
        // Every channel keeps one buffer being filled; one more guarantees
        // that a full buffer can always be replaced while it travels (as
        // Flink requires subpartitions + 1 buffers), whatever the config.
        let pool_size = (pr * credit + options.floating_buffers).max(pr + 1);
        let max_pool = pool_size + OVERDRAFT_BUFFERS;
        let mut receivers: HashMap<usize, Vec<_>> = HashMap::new();
        for s in 0..ps {
            let ws = s % workers;
            let mut senders = Vec::with_capacity(pr);
            let mut returns = Vec::with_capacity(pr);
            for r in 0..pr {
                let wr = r % workers;
                // The return ring holds every buffer the pool may ever own,
                // so a return never fails.
                let (tx, rx, ret) = channel(
                    credit,
                    max_pool,
                    shared.bells[ws].clone(),
                    shared.bells[wr].clone(),
                );
                senders.push(tx);
                returns.push(ret);
                receivers.entry(r).or_default().push(rx);
            }
            endpoints[ws].outputs.insert(
                (e, s),
                OutputEndpoint {
                    senders,
                    returns,
                    pool_size,
                    max_pool,
                    buffer_size: options.segment_size,
                },
            );
        }
        for (r, rx) in receivers {
            endpoints[r % workers].inputs.insert((e, r), rx);
        }
    }
    endpoints
}

/// Builds the tasks of every subtask that runs on worker `w`.
#[allow(clippy::too_many_arguments)]
fn build_tasks(
    w: usize,
    workers: usize,
    job: &JobGraph,
    stages: &[ResolvedStage],
    endpoints: &mut WorkerEndpoints,
    metrics: &WorkerMetrics,
    buffer_timeout: Duration,
    max_parallelism: u32,
) -> std::result::Result<Vec<Box<dyn Task>>, (String, String)> {
    let mut tasks = Vec::new();
    for (node, resolved) in job.stages.iter().zip(stages) {
        for index in (w..resolved.parallelism).step_by(workers) {
            let mut ctx = BuildContext {
                info: SubtaskInfo {
                    index,
                    parallelism: resolved.parallelism,
                    worker: w,
                    max_parallelism,
                },
                buffer_timeout,
                metrics,
                stage_name: &node.name,
                endpoints,
            };
            let name = ctx.task_name();
            let task = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                node.spec.build(&mut ctx)
            }))
            .map_err(|_| (name, "building the subtask panicked".to_owned()))?;
            tasks.push(task);
        }
    }
    Ok(tasks)
}
