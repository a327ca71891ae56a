//! Running a job: resolving parallelism, wiring the channel mesh, starting
//! one pinned glommio executor per worker, reporting progress and collecting
//! the result.
//!
//! The control thread (the caller's) builds every ring before any worker
//! starts, hands each worker its endpoints, waits until all workers have
//! built their tasks, releases them together and then only watches: it reads
//! the workers' counters for progress lines and waits for them to finish.

use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use glommio::{LocalExecutorBuilder, Placement};
use weir_net::channel;

use crate::checkpoint::segment_file::IoMode;
use crate::checkpoint::writer::{spawn_writer, WriterSetup};
use crate::checkpoint::{
    find_latest, CheckpointCoordinator, CheckpointRecord, CheckpointSignals, CheckpointStorage,
    CoordinatorOptions, RestoredCheckpoint, TaskCheckpointing,
};
use crate::config::{CheckpointingMode, Config};
use crate::debloat::DebloatOptions;
use crate::error::{JobError, Result};
use crate::gate::BarrierMode;
use crate::job::JobGraph;
use crate::metrics::{
    ChannelCounters, InFlightSampler, MetricsSnapshot, SubtaskEntry, SubtaskId, SubtaskMetrics,
    SubtaskSummary, TimeShares, WorkerMetrics,
};
use crate::restart::{RestartDecision, RestartStrategy, RestartTracker};
use crate::source::SubtaskInfo;
use crate::task::Task;
use crate::worker::{
    panic_message, run_worker, BuildContext, IdlePolicy, InputEndpoint, JobShared, OutputEndpoint,
    WorkerEndpoints,
};

/// Where a run starts from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RestoreFrom {
    /// A fresh start.
    #[default]
    Nothing,
    /// The newest complete and verified checkpoint in
    /// `state.checkpoints.dir` (a fresh start if there is none).
    Latest,
    /// This checkpoint (a `chk-<id>` directory or its `_metadata`).
    Path(PathBuf),
}

/// How checkpoints are taken.
#[derive(Clone, Debug)]
pub struct CheckpointingOptions {
    /// `state.checkpoints.dir`.
    pub dir: PathBuf,
    /// Triggering, timeouts, failures, retention.
    pub coordinator: CoordinatorOptions,
    /// `execution.checkpointing.mode` is exactly-once (else at-least-once).
    pub exactly_once: bool,
    /// `execution.checkpointing.unaligned.enabled` (only with exactly-once;
    /// the configuration rejects it with at-least-once).
    pub unaligned: bool,
    /// `execution.checkpointing.aligned-checkpoint-timeout`: with
    /// `unaligned`, how long a checkpoint stays aligned before switching;
    /// zero = unaligned from the start. Ignored without `unaligned`.
    pub aligned_checkpoint_timeout: Duration,
    /// How segment files are written.
    pub io_mode: IoMode,
}

impl CheckpointingOptions {
    /// How barriers are aligned and sent.
    pub fn barrier_mode(&self) -> BarrierMode {
        BarrierMode::of(
            self.exactly_once,
            self.unaligned,
            self.aligned_checkpoint_timeout,
        )
    }
}

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
    /// `pipeline.auto-watermark-interval` (zero: only final watermarks).
    pub auto_watermark_interval: Duration,
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
    /// Checkpointing, if `execution.checkpointing.interval` is set.
    pub checkpointing: Option<CheckpointingOptions>,
    /// Buffer debloating, if `taskmanager.network.memory.buffer-debloat.enabled`.
    pub debloat: Option<DebloatOptions>,
    /// Where the run starts from (`--restore`).
    pub restore: RestoreFrom,
    /// `restart-strategy.*`.
    pub restart: RestartStrategy,
}

impl ExecutionOptions {
    /// Options from a configuration; workers default to every usable core.
    pub fn from_config(config: &Config) -> Self {
        let checkpointing = match (config.checkpoint_interval, &config.checkpoints_dir) {
            (Some(interval), Some(dir)) => Some(CheckpointingOptions {
                dir: dir.clone(),
                coordinator: CoordinatorOptions {
                    interval,
                    min_pause: config.checkpoint_min_pause,
                    timeout: config.checkpoint_timeout,
                    max_concurrent: config.max_concurrent_checkpoints as usize,
                    tolerable_failures: config.tolerable_failed_checkpoints,
                    num_retained: config.checkpoints_num_retained as usize,
                },
                exactly_once: config.checkpointing_mode == CheckpointingMode::ExactlyOnce,
                unaligned: config.unaligned_checkpoints,
                aligned_checkpoint_timeout: config.aligned_checkpoint_timeout,
                io_mode: IoMode::Auto,
            }),
            _ => None,
        };
        Self {
            workers: config.parallelism.unwrap_or_else(available_cores),
            pin_cores: config.pin_cores,
            max_parallelism: config.max_parallelism,
            buffer_timeout: config.buffer_timeout,
            auto_watermark_interval: config.auto_watermark_interval,
            segment_size: config.segment_size,
            buffers_per_channel: config.buffers_per_channel as usize,
            floating_buffers: config.floating_buffers_per_gate as usize,
            spin_before_park: config.spin_before_park,
            progress_interval: config.progress_interval,
            checkpointing,
            debloat: config
                .debloat_enabled
                .then(|| DebloatOptions::from_config(config)),
            restore: RestoreFrom::Nothing,
            restart: config.effective_restart_strategy(),
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

    /// Turns checkpointing on with the given interval and directory, other
    /// options at their defaults (handy in tests).
    pub fn with_checkpointing(mut self, interval: Duration, dir: impl Into<PathBuf>) -> Self {
        let defaults = Config::default();
        self.checkpointing = Some(CheckpointingOptions {
            dir: dir.into(),
            coordinator: CoordinatorOptions {
                interval,
                min_pause: defaults.checkpoint_min_pause,
                timeout: defaults.checkpoint_timeout,
                max_concurrent: defaults.max_concurrent_checkpoints as usize,
                tolerable_failures: defaults.tolerable_failed_checkpoints,
                num_retained: defaults.checkpoints_num_retained as usize,
            },
            exactly_once: true,
            unaligned: defaults.unaligned_checkpoints,
            aligned_checkpoint_timeout: defaults.aligned_checkpoint_timeout,
            io_mode: IoMode::Auto,
        });
        self
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
    /// Checkpoints that ended during the interval.
    pub checkpoints: Vec<CheckpointRecord>,
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

    /// Per subtask that ran during the interval: busy, backpressured and
    /// idle milliseconds per second over it (subtasks that had finished
    /// before it are left out).
    pub fn subtask_shares(&self) -> Vec<(SubtaskId, TimeShares)> {
        self.now
            .subtasks
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let before = self.before.subtasks.get(i).filter(|b| b.id == s.id);
                s.shares_since(before).map(|shares| (s.id.clone(), shares))
            })
            .collect()
    }

    /// The subtasks' line: each as `w1-keyed-count#0 busy 812 bp 0 idle
    /// 188 OK`. With more than [`Progress::MAX_SUBTASKS_SHOWN`] subtasks,
    /// the most backpressured and then busiest ones, and how many more.
    pub fn subtask_line(&self) -> Option<String> {
        let mut shares = self.subtask_shares();
        if shares.is_empty() {
            return None;
        }
        let hidden = shares.len().saturating_sub(Self::MAX_SUBTASKS_SHOWN);
        if hidden > 0 {
            shares.sort_by(|a, b| {
                b.1.backpressured
                    .total_cmp(&a.1.backpressured)
                    .then(b.1.busy.total_cmp(&a.1.busy))
            });
            shares.truncate(Self::MAX_SUBTASKS_SHOWN);
        }
        // Under the main line, past its "[   1.0s] " prefix.
        let mut line = String::from("          ");
        let parts: Vec<String> = shares
            .iter()
            .map(|(id, s)| format!("{} {}", id.short_name(), s.compact()))
            .collect();
        line.push_str(&parts.join(" | "));
        if hidden > 0 {
            line.push_str(&format!(" | {hidden} more"));
        }
        Some(line)
    }

    /// Most subtasks [`Progress::subtask_line`] shows.
    pub const MAX_SUBTASKS_SHOWN: usize = 8;

    /// What `weir run` and `weir bench` print: [`Progress::line`], then
    /// [`Progress::subtask_line`] on a line of its own.
    pub fn lines(&self) -> String {
        match self.subtask_line() {
            Some(subtasks) => format!("{}\n{subtasks}", self.line()),
            None => self.line(),
        }
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
        let mut line = format!(
            "[{:>6.1}s] {} records/s into sinks ({} total) | {}",
            self.elapsed.as_secs_f64(),
            human_rate(total),
            self.now.total_sink_records(),
            per_worker.join(", ")
        );
        for c in &self.checkpoints {
            line.push_str(" | ");
            line.push_str(&c.line());
        }
        line
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

/// What a run restored from.
#[derive(Clone, Debug)]
pub struct RestoreInfo {
    /// The checkpoint.
    pub checkpoint_id: u64,
    /// Its directory.
    pub dir: PathBuf,
    /// Bytes of state payload it holds.
    pub state_bytes: u64,
    /// Time to find and verify it (every block's checksum).
    pub verify: Duration,
    /// Time from starting the workers to all of them having restored their
    /// state and being ready to process records.
    pub load: Duration,
}

/// What a finished job reports.
#[derive(Clone, Debug)]
pub struct JobResult {
    /// Workers that ran it.
    pub workers: usize,
    /// From the release of the workers to the last one finishing (of the
    /// last attempt).
    pub elapsed: Duration,
    /// Final counters (of the last attempt).
    pub metrics: MetricsSnapshot,
    /// Every subtask of the last attempt over its whole run: busy,
    /// backpressured and idle time per second, backpressure level,
    /// records and bytes, in-flight bytes per output channel.
    pub subtasks: Vec<SubtaskSummary>,
    /// Every checkpoint of every attempt.
    pub checkpoints: Vec<CheckpointRecord>,
    /// Restarts by the restart strategy.
    pub restarts: u32,
    /// What the last attempt restored (from `--restore`, or after a
    /// restart).
    pub restored: Option<RestoreInfo>,
    /// Wall-clock time when the last attempt's workers were released to
    /// process records.
    pub released_at: SystemTime,
}

/// Buffers a pool may borrow beyond its size when a single record's output
/// exceeds it (see `ExchangeOutput`); bounds the return rings' capacity.
const OVERDRAFT_BUFFERS: usize = 1024;

struct ResolvedStage {
    parallelism: usize,
}

/// Runs `job` to completion, printing progress lines to stderr.
pub fn execute(job: JobGraph, options: &ExecutionOptions) -> Result<JobResult> {
    execute_with_progress(job, options, &mut |p: &Progress| eprintln!("{}", p.lines()))
}

/// Finds the checkpoint `from` names, verifying it. Prints why newer
/// checkpoints were skipped and when there is none.
fn select_restore(
    from: &RestoreFrom,
    storage: Option<&CheckpointStorage>,
    job_name: &str,
    max_parallelism: u32,
    below: Option<u64>,
) -> Result<Option<(Arc<RestoredCheckpoint>, Duration)>> {
    let started = Instant::now();
    match from {
        RestoreFrom::Nothing => Ok(None),
        RestoreFrom::Path(path) => {
            let r = RestoredCheckpoint::open(path, job_name, max_parallelism).map_err(|e| {
                JobError::Checkpoint(format!("cannot restore {}: {e}", path.display()))
            })?;
            eprintln!("restoring checkpoint {} from {}", r.id(), r.dir().display());
            Ok(Some((Arc::new(r), started.elapsed())))
        }
        RestoreFrom::Latest => {
            let Some(storage) = storage else {
                return Err(JobError::Checkpoint(
                    "--restore latest needs state.checkpoints.dir".into(),
                ));
            };
            let search = find_latest(storage, job_name, max_parallelism, below)
                .map_err(JobError::Checkpoint)?;
            for (id, why) in &search.skipped {
                eprintln!("checkpoint {id} is unusable, trying an older one: {why}");
            }
            match search.found {
                Some(r) => {
                    eprintln!("restoring checkpoint {} from {}", r.id(), r.dir().display());
                    Ok(Some((Arc::new(r), started.elapsed())))
                }
                None => {
                    eprintln!(
                        "no complete checkpoint in {}: starting fresh",
                        storage.root().display()
                    );
                    Ok(None)
                }
            }
        }
    }
}

/// Runs `job` to completion, calling `on_progress` every
/// `options.progress_interval` (never if zero). A failure restarts the job
/// from the latest complete checkpoint as the restart strategy allows.
pub fn execute_with_progress(
    job: JobGraph,
    options: &ExecutionOptions,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<JobResult> {
    let stages = validate(&job, options)?;
    let storage = match &options.checkpointing {
        Some(c) => {
            let storage =
                CheckpointStorage::open(&c.dir).map_err(|e| JobError::Checkpoint(e.to_string()))?;
            let removed = storage
                .clean_incomplete()
                .map_err(|e| JobError::Checkpoint(e.to_string()))?;
            if !removed.is_empty() {
                eprintln!("removed incomplete checkpoints {removed:?}");
            }
            Some(Arc::new(storage))
        }
        None => None,
    };
    let job = Arc::new(job);
    let stages = Arc::new(stages);
    let mut restore = select_restore(
        &options.restore,
        storage.as_deref(),
        job.name(),
        options.max_parallelism,
        None,
    )?;
    let mut explicit = matches!(options.restore, RestoreFrom::Path(_));
    let mut tracker = RestartTracker::new(options.restart);
    let mut records = Vec::new();
    let mut restarts = 0;
    loop {
        let running_since = Instant::now();
        let outcome = run_attempt(
            &job,
            &stages,
            options,
            storage.as_ref(),
            restore.take(),
            on_progress,
            &mut records,
        );
        let (result, restored) = match outcome {
            Ok(r) => r,
            Err(JobError::RestoreCorrupt {
                checkpoint,
                message,
            }) if !explicit => {
                // Found while loading, before any record was processed:
                // fall back as if it had failed verification up front.
                eprintln!("checkpoint {checkpoint} is unusable, trying an older one: {message}");
                restore = select_restore(
                    &RestoreFrom::Latest,
                    storage.as_deref(),
                    job.name(),
                    options.max_parallelism,
                    Some(checkpoint),
                )?;
                continue;
            }
            Err(e @ JobError::TaskFailed { .. }) => {
                let decision = tracker.on_failure(Instant::now(), running_since);
                match decision {
                    RestartDecision::Restart { delay, attempt } => {
                        eprintln!("{e}; restarting (attempt {attempt}) in {delay:?}");
                        std::thread::sleep(delay);
                        restarts += 1;
                        let from = if storage.is_some() {
                            RestoreFrom::Latest
                        } else {
                            RestoreFrom::Nothing
                        };
                        restore = select_restore(
                            &from,
                            storage.as_deref(),
                            job.name(),
                            options.max_parallelism,
                            None,
                        )?;
                        explicit = false;
                        continue;
                    }
                    RestartDecision::GiveUp { .. } if options.restart == RestartStrategy::None => {
                        return Err(e)
                    }
                    RestartDecision::GiveUp { reason } => {
                        return Err(JobError::RestartsExhausted {
                            failure: Box::new(e),
                            reason,
                        })
                    }
                }
            }
            Err(e) => return Err(e),
        };
        return Ok(JobResult {
            workers: result.workers,
            elapsed: result.elapsed,
            metrics: result.metrics,
            subtasks: result.subtasks,
            checkpoints: records,
            restarts,
            restored,
            released_at: result.released_at,
        });
    }
}

struct AttemptResult {
    workers: usize,
    elapsed: Duration,
    metrics: MetricsSnapshot,
    subtasks: Vec<SubtaskSummary>,
    released_at: SystemTime,
}

/// One attempt: wires channels, starts the workers (restoring `restore`),
/// coordinates checkpoints and waits for the end or the first failure.
fn run_attempt(
    job: &Arc<JobGraph>,
    stages: &Arc<Vec<ResolvedStage>>,
    options: &ExecutionOptions,
    storage: Option<&Arc<CheckpointStorage>>,
    restore: Option<(Arc<RestoredCheckpoint>, Duration)>,
    on_progress: &mut dyn FnMut(&Progress),
    records: &mut Vec<CheckpointRecord>,
) -> Result<(AttemptResult, Option<RestoreInfo>)> {
    let workers = options.workers;
    // Fix the metrics' time origin before any time is taken.
    let _ = crate::metrics::epoch();
    let shared = Arc::new(JobShared::new(workers));
    let metrics: Vec<WorkerMetrics> = (0..workers).map(|_| WorkerMetrics::default()).collect();
    let mut endpoints = wire_channels(job, stages, options, &shared);
    let restored_id = restore.as_ref().map_or(0, |(r, _)| r.id());
    let signals = Arc::new(CheckpointSignals::new(restored_id));
    let (ack_tx, ack_rx) = std::sync::mpsc::channel();
    let mut coordinator = match (&options.checkpointing, storage) {
        (Some(c), Some(storage)) => {
            let tasks: usize = stages.iter().map(|s| s.parallelism).sum();
            let sources: usize = job
                .stages
                .iter()
                .zip(stages.iter())
                .filter(|(n, _)| n.input.is_none())
                .map(|(_, s)| s.parallelism)
                .sum();
            let first_id = storage
                .max_id()
                .map_err(|e| JobError::Checkpoint(e.to_string()))?
                .max(restored_id)
                + 1;
            Some(CheckpointCoordinator::new(
                c.coordinator.clone(),
                storage.clone(),
                signals.clone(),
                ack_rx,
                job.name().to_owned(),
                options.max_parallelism,
                tasks,
                sources,
                first_id,
            ))
        }
        _ => None,
    };

    let cores = core_affinity::get_core_ids().unwrap_or_default();
    if options.pin_cores && !cores.is_empty() && workers > cores.len() {
        eprintln!(
            "warning: {workers} workers on {} cores: workers share cores (pinned round-robin); \
             throughput and latency suffer",
            cores.len()
        );
    }
    let idle = IdlePolicy {
        spin_before_park: options.spin_before_park,
    };
    let restore_arc = restore.as_ref().map(|(r, _)| r.clone());
    let spawn_start = Instant::now();
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
        let settings = WorkerSettings {
            buffer_timeout: options.buffer_timeout,
            auto_watermark_interval: options.auto_watermark_interval,
            max_parallelism: options.max_parallelism,
            barrier_mode: options
                .checkpointing
                .as_ref()
                .map_or(BarrierMode::Aligned, CheckpointingOptions::barrier_mode),
            debloat: options
                .debloat
                .clone()
                .map(|d| (d, options.buffers_per_channel, options.segment_size)),
            restore: restore_arc.clone(),
        };
        let writer_setup = match (&options.checkpointing, storage) {
            (Some(c), Some(storage)) => Some((
                signals.clone(),
                WriterSetup {
                    worker: w,
                    storage: storage.clone(),
                    tasks: tasks_on_worker(stages.as_slice(), w, workers),
                    io_mode: c.io_mode,
                    acks: ack_tx.clone(),
                },
            )),
            _ => None,
        };
        let builder = LocalExecutorBuilder::new(placement)
            .name(&format!("weir-worker-{w}"))
            // Little registered I/O memory: keeps many workers under the
            // default locked-memory limit (ulimit -l) of unprivileged users.
            .io_memory(1 << 20);
        let spawned = builder.spawn(move || async move {
            let checkpointing = writer_setup.map(|(signals, setup)| {
                Rc::new(TaskCheckpointing {
                    signals,
                    writer: spawn_writer(setup),
                    barrier_mode: settings.barrier_mode,
                })
            });
            let writer = checkpointing.as_ref().map(|c| c.writer.clone());
            let tasks = build_tasks(
                w,
                workers,
                &job,
                &stages,
                &mut eps,
                &worker_metrics,
                &settings,
                checkpointing,
            );
            match tasks {
                Ok(tasks) => run_worker(w, tasks, shared2, worker_metrics, idle, writer).await,
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
    drop(ack_tx);

    // Release the workers together once all have built their tasks.
    while shared.ready.load(Ordering::Acquire) < workers && shared.failure.get().is_none() {
        std::thread::sleep(Duration::from_micros(200));
    }
    let start = Instant::now();
    let released_at = SystemTime::now();
    let _ = shared.released.set(start);
    shared.go.store(true, Ordering::Release);
    let restored = restore.map(|(r, verify)| RestoreInfo {
        checkpoint_id: r.id(),
        dir: r.dir().to_path_buf(),
        state_bytes: r.state_bytes(),
        verify,
        load: start.duration_since(spawn_start),
    });

    let mut last_report = start;
    let mut before = MetricsSnapshot::read(&metrics);
    let mut in_flight = InFlightSampler::new(&metrics);
    let mut fresh_checkpoints = Vec::new();
    let idle_tick = if options.progress_interval.is_zero() {
        Duration::from_millis(5)
    } else {
        options.progress_interval.min(Duration::from_millis(5))
    };
    let ring = || {
        for bell in &shared.bells {
            bell.ring();
        }
    };
    while shared.finished.load(Ordering::Acquire) < workers
        && !shared.cancelled.load(Ordering::Acquire)
    {
        // Acknowledgements are collected promptly while a checkpoint is
        // pending; otherwise the control thread stays out of the workers'
        // way.
        let tick = match &coordinator {
            Some(c) if c.has_pending() => Duration::from_millis(1),
            _ => idle_tick,
        };
        std::thread::sleep(tick);
        let now = Instant::now();
        in_flight.tick(now);
        if let Some(c) = coordinator.as_mut() {
            if let Err(message) = c.tick(now, &ring) {
                shared.fail(usize::MAX, "checkpoint coordinator".into(), message);
            }
            fresh_checkpoints.extend(c.take_fresh());
        }
        if !options.progress_interval.is_zero()
            && now.duration_since(last_report) >= options.progress_interval
        {
            let snapshot = MetricsSnapshot::read(&metrics);
            on_progress(&Progress {
                elapsed: now.duration_since(start),
                interval: now.duration_since(last_report),
                now: snapshot.clone(),
                before: std::mem::replace(&mut before, snapshot),
                checkpoints: std::mem::take(&mut fresh_checkpoints),
            });
            last_report = now;
        }
    }
    for (w, h) in handles.into_iter().enumerate() {
        if let Err(e) = h.join() {
            let _ = shared.failure.set((w, "worker".into(), e.to_string()));
        }
    }
    if let Some(c) = coordinator.as_mut() {
        // Acknowledgements that arrived while the workers ended.
        let _ = c.tick(Instant::now(), &ring);
        records.extend(c.records().iter().cloned());
    }
    if let Some(corrupt) = restore_arc
        .as_ref()
        .and_then(|r| r.corrupt().map(|m| (r.id(), m)))
    {
        return Err(JobError::RestoreCorrupt {
            checkpoint: corrupt.0,
            message: corrupt.1,
        });
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
    let last = MetricsSnapshot::read(&metrics);
    Ok((
        AttemptResult {
            workers,
            elapsed: end.duration_since(start),
            subtasks: SubtaskSummary::of_run(&last, &in_flight),
            metrics: last,
            released_at,
        },
        restored,
    ))
}

/// Subtasks (tasks) that run on worker `w`.
fn tasks_on_worker(stages: &[ResolvedStage], w: usize, workers: usize) -> usize {
    stages
        .iter()
        .map(|s| (w..s.parallelism).step_by(workers).count())
        .sum()
}

/// What every subtask of a worker is built with.
struct WorkerSettings {
    buffer_timeout: Duration,
    auto_watermark_interval: Duration,
    max_parallelism: u32,
    barrier_mode: BarrierMode,
    /// Buffer debloating: options, credit per channel, segment size.
    debloat: Option<(DebloatOptions, usize, usize)>,
    restore: Option<Arc<RestoredCheckpoint>>,
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
        let receivers = (0..job.stages.len())
            .filter(|&s| job.stage_receives(s, e))
            .count();
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
        let to = (0..job.stages.len())
            .find(|&s| job.stage_receives(s, e))
            .expect("validated");
        let (ps, pr) = (stages[from].parallelism, stages[to].parallelism);
        // Every channel keeps one buffer being filled; one more guarantees
        // that a full buffer can always be replaced while it travels (as
        // Flink requires subpartitions + 1 buffers), whatever the config.
        let pool_size = (pr * credit + options.floating_buffers).max(pr + 1);
        let max_pool = pool_size + OVERDRAFT_BUFFERS;
        let mut receivers: HashMap<usize, InputEndpoint> = HashMap::new();
        for s in 0..ps {
            let ws = s % workers;
            let mut senders = Vec::with_capacity(pr);
            let mut returns = Vec::with_capacity(pr);
            let mut counters = Vec::with_capacity(pr);
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
                let bytes = Arc::new(ChannelCounters::default());
                senders.push(tx);
                returns.push(ret);
                counters.push(bytes.clone());
                let input = receivers.entry(r).or_default();
                input.receivers.push(rx);
                input.counters.push(bytes);
            }
            endpoints[ws].outputs.insert(
                (e, s),
                OutputEndpoint {
                    senders,
                    counters,
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

/// A subtask's task and its registry entry (metrics, channel counters).
type BuiltTask = (Box<dyn Task>, SubtaskEntry);

/// Builds the tasks of every subtask that runs on worker `w`.
#[allow(clippy::too_many_arguments)]
fn build_tasks(
    w: usize,
    workers: usize,
    job: &JobGraph,
    stages: &[ResolvedStage],
    endpoints: &mut WorkerEndpoints,
    metrics: &WorkerMetrics,
    settings: &WorkerSettings,
    checkpointing: Option<Rc<TaskCheckpointing>>,
) -> std::result::Result<Vec<BuiltTask>, (String, String)> {
    let mut tasks = Vec::new();
    for (node, resolved) in job.stages.iter().zip(stages) {
        for index in (w..resolved.parallelism).step_by(workers) {
            let subtask = SubtaskMetrics::new(SubtaskId {
                stage: node.name.clone(),
                index,
                parallelism: resolved.parallelism,
                worker: w,
            });
            let mut ctx = BuildContext {
                info: SubtaskInfo {
                    index,
                    parallelism: resolved.parallelism,
                    worker: w,
                    max_parallelism: settings.max_parallelism,
                },
                buffer_timeout: settings.buffer_timeout,
                auto_watermark_interval: settings.auto_watermark_interval,
                metrics,
                stage_name: &node.name,
                endpoints,
                checkpointing: checkpointing.clone(),
                barrier_mode: settings.barrier_mode,
                debloat: settings.debloat.clone(),
                restore: settings.restore.clone(),
                subtask,
                input_channels: Vec::new(),
                output_channels: Vec::new(),
            };
            let name = ctx.task_name();
            let task = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                node.spec.build(&mut ctx)
            }))
            .map_err(|panic| (name, panic_message(panic)))?;
            let entry = SubtaskEntry {
                metrics: ctx.subtask,
                inputs: ctx.input_channels,
                outputs: ctx.output_channels,
            };
            tasks.push((task, entry));
        }
    }
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(sets: &[&str]) -> ExecutionOptions {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        ExecutionOptions::from_config(&Config::load(None, &sets).expect("valid config"))
    }

    /// The keys of checkpointing under backpressure reach the options the
    /// runtime is built from, and the alignment timeout means what
    /// configs/README.md says.
    #[test]
    fn unaligned_and_debloat_options_come_from_the_config() {
        let on = [
            "execution.checkpointing.interval=1s",
            "state.checkpoints.dir=/tmp/c",
        ];
        let defaults = load(&on);
        let c = defaults.checkpointing.as_ref().expect("checkpointing on");
        assert!(!c.unaligned);
        assert_eq!(c.aligned_checkpoint_timeout, Duration::ZERO);
        assert_eq!(c.barrier_mode(), BarrierMode::Aligned, "aligned by default");
        assert_eq!(defaults.debloat, None, "debloating off by default");

        let unaligned =
            load(&[&on[..], &["execution.checkpointing.unaligned.enabled=true"]].concat());
        let c = unaligned.checkpointing.expect("checkpointing on");
        assert_eq!(
            c.barrier_mode(),
            BarrierMode::Unaligned,
            "unaligned from the start"
        );

        let timeout = [
            "execution.checkpointing.unaligned.enabled=true",
            "execution.checkpointing.aligned-checkpoint-timeout=100ms",
        ];
        let c = load(&[&on[..], &timeout].concat())
            .checkpointing
            .expect("on");
        assert_eq!(
            c.barrier_mode(),
            BarrierMode::AlignedWithTimeout(Duration::from_millis(100))
        );
        // A timeout alone changes nothing.
        let c = load(&[&on[..], &timeout[1..]].concat())
            .checkpointing
            .expect("on");
        assert_eq!(c.barrier_mode(), BarrierMode::Aligned);
        // Set directly (tests), at-least-once never unaligns.
        let mut c = ExecutionOptions::with_workers(1)
            .with_checkpointing(Duration::from_secs(1), "/tmp/c")
            .checkpointing
            .expect("on");
        c.unaligned = true;
        assert_eq!(c.barrier_mode(), BarrierMode::Unaligned);
        c.exactly_once = false;
        assert_eq!(c.barrier_mode(), BarrierMode::AtLeastOnce);

        let debloat = load(&[
            "taskmanager.network.memory.buffer-debloat.enabled=true",
            "taskmanager.network.memory.buffer-debloat.target=30ms",
            "taskmanager.memory.min-segment-size=512b",
        ]);
        let d = debloat.debloat.expect("debloating on");
        assert_eq!(
            (
                d.target,
                d.period,
                d.samples,
                d.threshold_percentages,
                d.min_buffer_size
            ),
            (
                Duration::from_millis(30),
                Duration::from_millis(50),
                20,
                25,
                512
            )
        );
    }
}
