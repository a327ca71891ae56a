//! One attempt of a job: wires its channels, starts one pinned glommio
//! executor per worker, coordinates checkpoints and waits for the end or the
//! first failure.

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use glommio::{ExecutorJoinHandle, LocalExecutorBuilder, Placement};

use crate::api::graph::JobPlan;
use crate::build::context::WorkerEndpoints;
use crate::checkpoint::coordinator::{CheckpointCoordinator, CoordinatorMsg, Stopped};
use crate::checkpoint::restore::RestoredCheckpoint;
use crate::checkpoint::signals::CheckpointSignals;
use crate::checkpoint::stats::CheckpointRecord;
use crate::checkpoint::storage::CheckpointStorage;
use crate::checkpoint::task::TaskCheckpointing;
use crate::checkpoint::writer::{spawn_writer, WriterSetup};
use crate::core::barrier::BarrierMode;
use crate::core::log::{CHECKPOINT, WORKERS};
use crate::exchange::watermark_alignment::WatermarkAlignmentGroups;
use crate::exec::error::{JobError, Result, TaskFailure};
use crate::exec::handle::{JobHandle, RestoredView};
use crate::exec::identity::RunIdentity;
use crate::exec::options::{CheckpointingOptions, ExecutionOptions};
use crate::exec::progress::Progress;
use crate::exec::rescue::Rescuer;
use crate::exec::stop::StopRequest;
use crate::exec::wiring::{
    build_tasks, tasks_on_worker, wire_channels, ResolvedStage, WorkerSettings,
};
use crate::exec::worker::{run_worker, IdlePolicy, JobShared};
use crate::metrics::report::{InFlightSampler, MetricsSnapshot, SubtaskSummary};
use crate::metrics::worker::WorkerMetrics;

/// How long a worker's glommio executor, with no task runnable, keeps
/// polling for I/O completions and timers before it blocks in the kernel
/// (at most `weir.worker.spin-before-park`: 0 there keeps it from
/// spinning). The worker loop's I/O turns, its 1 µs sleeps while the
/// snapshot writer works, then end in a poll instead of putting the core
/// to sleep and waking it: W3 at 1 M records/s with 1 s checkpoints, p99.99
/// 66-140 µs (median 103) against 80-210 (118) without, lower in 9 of 11
/// alternating pairs (bench/RESULTS.md).
const REACTOR_SPIN: Duration = Duration::from_micros(20);

pub(crate) struct AttemptResult {
    pub(crate) workers: usize,
    pub(crate) elapsed: Duration,
    pub(crate) metrics: MetricsSnapshot,
    pub(crate) subtasks: Vec<SubtaskSummary>,
    pub(crate) released_at: SystemTime,
    /// The snapshot a stop took (the attempt ended on request).
    pub(crate) stopped: Option<Stopped>,
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

/// One attempt: wires channels, starts the workers (restoring `restore`),
/// coordinates checkpoints and waits for the end or the first failure.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_attempt(
    job: &Arc<JobPlan>,
    stages: &Arc<Vec<ResolvedStage>>,
    options: &ExecutionOptions,
    storage: Option<&Arc<CheckpointStorage>>,
    restore: Option<(Arc<RestoredCheckpoint>, Duration)>,
    run: &RunIdentity,
    on_progress: &mut dyn FnMut(&Progress),
    records: &mut Vec<CheckpointRecord>,
) -> Result<(AttemptResult, Option<RestoreInfo>)> {
    let workers = options.workers;
    // Fix the metrics' time origin before any time is taken.
    let _ = crate::metrics::counters::epoch();
    let shared = Arc::new(JobShared::new(workers));
    let metrics: Vec<WorkerMetrics> = (0..workers).map(|_| WorkerMetrics::default()).collect();
    let endpoints = wire_channels(job, stages, options, &shared);
    let restored_id = restore.as_ref().map_or(0, |(r, _)| r.id());
    let signals = Arc::new(CheckpointSignals::new(restored_id));
    let (ack_tx, ack_rx) = std::sync::mpsc::channel();
    let mut coordinator = match (&options.checkpointing, storage) {
        (Some(c), Some(storage)) => Some(
            CheckpointCoordinator::new(
                c.coordinator.clone(),
                storage.clone(),
                signals.clone(),
                ack_rx,
                job.name().to_owned(),
                options.max_parallelism,
                stages.iter().map(|s| s.parallelism).sum(),
                source_subtasks(job, stages),
                storage.next_id(restored_id)?,
            )
            .with_lineage(
                &run.job_id,
                (restored_id > 0).then_some(restored_id),
                &run.fingerprint,
            )
            .with_outputs(&run.outputs)
            .with_inputs(job.input_directories()),
        ),
        _ => None,
    };
    let restore_arc = restore.as_ref().map(|(r, _)| r.clone());
    let spawn_start = Instant::now();
    let spawn = Spawn {
        job,
        stages,
        options,
        storage,
        signals: &signals,
        shared: &shared,
        restore: &restore_arc,
    };
    let handles = spawn.workers(&metrics, endpoints, ack_tx)?;

    // Release the workers together once all have built their tasks.
    while shared.ready.load(Ordering::Acquire) < workers && !shared.has_failed() {
        std::thread::sleep(Duration::from_micros(200));
    }
    let start = Instant::now();
    let released_at = SystemTime::now();
    let _ = shared.released.set(start);
    shared.go.store(true, Ordering::Release);
    options.handle.attempt_started(
        &metrics,
        restore.as_ref().map(|(r, _)| RestoredView {
            id: r.id(),
            path: r.dir().to_path_buf(),
            restore_ms: crate::core::time::wall_ms(),
        }),
    );
    let restored = restore.map(|(r, verify)| RestoreInfo {
        checkpoint_id: r.id(),
        dir: r.dir().to_path_buf(),
        state_bytes: r.state_bytes(),
        verify,
        load: start.duration_since(spawn_start),
    });

    let stop = StopWatch {
        request: &options.stop,
        signals: &signals,
        tasks: stages.iter().map(|s| s.parallelism).sum(),
        handle: &options.handle,
    };
    let (in_flight, stopped) = watch(
        &shared,
        &metrics,
        coordinator.as_mut(),
        &stop,
        options.progress_interval,
        start,
        on_progress,
    );
    for (w, h) in handles.into_iter().enumerate() {
        if let Err(e) = h.join() {
            shared.fail(w, "worker".into(), TaskFailure::Panic(e.to_string()));
        }
    }
    if let Some(c) = coordinator.as_mut() {
        // Acknowledgements that arrived while the workers ended.
        let _ = c.tick(Instant::now(), &|| ring_all(&shared));
        options.handle.checkpoints_ended(&c.take_fresh());
        for (id, outcome) in c.take_savepoint_outcomes() {
            options.handle.savepoint_ended(id, outcome);
        }
        records.extend(c.records().iter().cloned());
    }
    if options.handle.cancel_requested() {
        return Err(JobError::Cancelled);
    }
    if let Some(corrupt) = restore_arc
        .as_ref()
        .and_then(|r| r.corrupt().map(|e| (r.id(), e)))
    {
        return Err(JobError::RestoreCorrupt {
            checkpoint: corrupt.0,
            message: corrupt.1.to_string(),
        });
    }
    if let Some((worker, task, cause)) = shared.take_failure() {
        return Err(JobError::TaskFailed {
            worker,
            task,
            cause,
        });
    }
    let stopped = match stopped {
        StopOutcome::Running => None,
        StopOutcome::Stopped(s) => Some(s),
        StopOutcome::WithoutSnapshot => return Err(JobError::StoppedWithoutSnapshot),
    };
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
            subtasks: SubtaskSummary::of_run(&last, &in_flight, &metrics),
            metrics: last,
            released_at,
            stopped,
        },
        restored,
    ))
}

/// Subtasks of the stages that start at a source.
fn source_subtasks(job: &JobPlan, stages: &[ResolvedStage]) -> usize {
    job.stages
        .iter()
        .zip(stages)
        .filter(|(n, _)| n.input.is_none())
        .map(|(_, s)| s.parallelism)
        .sum()
}

/// Rings every worker's doorbell (a checkpoint was triggered or completed).
fn ring_all(shared: &JobShared) {
    for bell in &shared.bells {
        bell.ring();
    }
}

/// What every worker of an attempt is started with.
struct Spawn<'a> {
    job: &'a Arc<JobPlan>,
    stages: &'a Arc<Vec<ResolvedStage>>,
    options: &'a ExecutionOptions,
    storage: Option<&'a Arc<CheckpointStorage>>,
    signals: &'a Arc<CheckpointSignals>,
    shared: &'a Arc<JobShared>,
    restore: &'a Option<Arc<RestoredCheckpoint>>,
}

impl Spawn<'_> {
    /// Starts one executor per worker, pinned round-robin to the cores
    /// when pinning is on; each builds its tasks (and its snapshot writer)
    /// and runs them. If one cannot be started, the others are cancelled
    /// and joined.
    fn workers(
        &self,
        metrics: &[WorkerMetrics],
        mut endpoints: Vec<WorkerEndpoints>,
        acks: Sender<CoordinatorMsg>,
    ) -> Result<Vec<ExecutorJoinHandle<()>>> {
        let options = self.options;
        let workers = options.workers;
        let cores = core_affinity::get_core_ids().unwrap_or_default();
        if options.pin_cores && !cores.is_empty() && workers > cores.len() {
            tracing::warn!(
                target: WORKERS,
                workers,
                cores = cores.len(),
                "{workers} workers on {} cores: workers share cores (pinned round-robin); \
                 throughput and latency suffer",
                cores.len()
            );
        }
        let idle = IdlePolicy {
            spin_before_park: options.spin_before_park,
        };
        let mut handles = Vec::with_capacity(workers);
        // One set of alignment groups per attempt: a restart starts them
        // afresh, as the watermarks do.
        let watermark_alignment = Arc::new(WatermarkAlignmentGroups::default());
        // Checked by `validate` before the first attempt.
        let exchange_buffer_timeouts = Arc::new(
            self.job
                .exchange_buffer_timeouts(&options.buffer_timeout_operators)
                .map_err(JobError::InvalidJob)?,
        );
        for (w, worker_metrics) in metrics.iter().enumerate() {
            let placement = if options.pin_cores && !cores.is_empty() {
                Placement::Fixed(cores[w % cores.len()].id)
            } else {
                Placement::Unbound
            };
            let mut eps = std::mem::take(&mut endpoints[w]);
            let job = self.job.clone();
            let stages = self.stages.clone();
            let shared = self.shared.clone();
            let worker_metrics = worker_metrics.clone();
            let settings = WorkerSettings {
                buffer_timeout: options.buffer_timeout,
                exchange_buffer_timeouts: exchange_buffer_timeouts.clone(),
                auto_watermark_interval: options.auto_watermark_interval,
                latency: options.latency,
                max_parallelism: options.max_parallelism,
                barrier_mode: options
                    .checkpointing
                    .as_ref()
                    .map_or(BarrierMode::Aligned, CheckpointingOptions::barrier_mode),
                debloat: options
                    .debloat
                    .clone()
                    .map(|d| (d, options.buffers_per_channel, options.segment_size)),
                restore: self.restore.clone(),
                watermark_alignment: watermark_alignment.clone(),
            };
            let writer_setup = match (&options.checkpointing, self.storage) {
                (Some(c), Some(storage)) => Some((
                    self.signals.clone(),
                    WriterSetup {
                        worker: w,
                        storage: storage.clone(),
                        tasks: tasks_on_worker(stages.as_slice(), w, workers),
                        io_mode: c.io_mode,
                        acks: acks.clone(),
                        incremental: c.incremental,
                        signals: self.signals.clone(),
                    },
                )),
                _ => None,
            };
            let builder = LocalExecutorBuilder::new(placement)
                .name(&format!("weir-worker-{w}"))
                // Little registered I/O memory: keeps many workers under the
                // default locked-memory limit (ulimit -l) of unprivileged users.
                .io_memory(1 << 20)
                .spin_before_park(options.spin_before_park.min(REACTOR_SPIN));
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
                    shared.bells[w].clone(),
                    &job,
                    &stages,
                    &mut eps,
                    &worker_metrics,
                    &settings,
                    checkpointing,
                );
                match tasks {
                    Ok(tasks) => run_worker(w, tasks, shared, worker_metrics, idle, writer).await,
                    Err((task, cause)) => shared.fail(w, task, cause),
                }
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    self.shared.cancel();
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
        Ok(handles)
    }
}

/// What the watch needs to stop the attempt on request.
struct StopWatch<'a> {
    request: &'a StopRequest,
    signals: &'a CheckpointSignals,
    /// Tasks of the attempt: each reports the stop's completion.
    tasks: usize,
    /// Told how a stop asked for through it went.
    handle: &'a JobHandle,
}

/// How a watch ended as far as a stop goes.
enum StopOutcome {
    /// No stop (the job ended, failed, or was cancelled).
    Running,
    /// Stopped with this snapshot, every sink committed.
    Stopped(Stopped),
    /// Stopped on request without a snapshot: checkpointing is off.
    WithoutSnapshot,
}

impl StopWatch<'_> {
    /// One look at the stop: asks the coordinator for the stop's
    /// snapshot once requested, re-arms the request if that failed (the
    /// job goes on), and cancels the workers once the snapshot is
    /// complete and every task passed the completion on (sinks
    /// committed).
    fn look(
        &self,
        shared: &JobShared,
        coordinator: Option<&mut CheckpointCoordinator>,
        now: Instant,
    ) -> Option<StopOutcome> {
        if !self.request.is_requested() {
            return None;
        }
        let Some(c) = coordinator else {
            self.handle
                .stop_ended(Err(JobError::StoppedWithoutSnapshot.to_string()));
            shared.cancel();
            return Some(StopOutcome::WithoutSnapshot);
        };
        if let Err(e) = c.request_stop(now, self.request.asked_parent(), &|| ring_all(shared)) {
            shared.fail(
                usize::MAX,
                "checkpoint coordinator".into(),
                TaskFailure::Checkpoint(e),
            );
            return None;
        }
        self.request.set_target(c.stop_target());
        if let Some(why) = c.take_stop_failure() {
            tracing::warn!(
                target: CHECKPOINT,
                "the stop's {why}; the job goes on (stop it again to retry)"
            );
            self.request.rearm();
            self.handle.stop_ended(Err(why));
            return None;
        }
        let stopped = c.stopped()?;
        self.handle.stop_ended(Ok(stopped.dir.clone()));
        if self.signals.stopped_tasks() < self.tasks {
            return None;
        }
        shared.cancel();
        Some(StopOutcome::Stopped(stopped.clone()))
    }
}

/// Acts on what the control plane asked through `handle`: triggers the
/// savepoints asked for and reports those that ended.
fn control(handle: &JobHandle, c: &mut CheckpointCoordinator, now: Instant, ring: &dyn Fn()) {
    for r in handle.take_requests() {
        match c.trigger_savepoint(now, r.dir, ring) {
            Ok(id) => handle.savepoint_triggered(r.trigger, id),
            Err(why) => handle.savepoint_refused(r.trigger, why),
        }
    }
    for (id, outcome) in c.take_savepoint_outcomes() {
        handle.savepoint_ended(id, outcome);
    }
}

/// The control thread's watch over a running attempt, until every worker
/// finished or the job was cancelled: it ticks the checkpoint coordinator
/// (promptly while a checkpoint is pending, otherwise staying out of the
/// workers' way), interrupts a worker that sleeps past its wake-up
/// ([`Rescuer`]), stops the job when asked ([`StopWatch`]), samples the
/// in-flight bytes and reports progress every `progress_interval` (never
/// if zero). Returns the in-flight samples and whether it stopped the job.
fn watch(
    shared: &JobShared,
    metrics: &[WorkerMetrics],
    mut coordinator: Option<&mut CheckpointCoordinator>,
    stop: &StopWatch<'_>,
    progress_interval: Duration,
    start: Instant,
    on_progress: &mut dyn FnMut(&Progress),
) -> (InFlightSampler, StopOutcome) {
    let mut stopped = StopOutcome::Running;
    let workers = metrics.len();
    let mut last_report = start;
    let mut before = MetricsSnapshot::read(metrics);
    let mut in_flight = InFlightSampler::new(metrics);
    let mut fresh_checkpoints = Vec::new();
    let idle_tick = if progress_interval.is_zero() {
        Duration::from_millis(5)
    } else {
        progress_interval.min(Duration::from_millis(5))
    };
    let ring = || ring_all(shared);
    let mut last_pending = None;
    let mut rescuer = Rescuer::new(workers);
    while shared.finished.load(Ordering::Acquire) < workers
        && !shared.cancelled.load(Ordering::Acquire)
    {
        let tick = match &coordinator {
            Some(c) if c.has_pending() => Duration::from_millis(1),
            _ => idle_tick,
        };
        std::thread::sleep(tick);
        let now = Instant::now();
        rescuer.look(now, &shared.sleeps, &shared.bells, metrics);
        in_flight.tick(now);
        if let Some(c) = coordinator.as_deref_mut() {
            if let Err(e) = c.tick(now, &ring) {
                shared.fail(
                    usize::MAX,
                    "checkpoint coordinator".into(),
                    TaskFailure::Checkpoint(e),
                );
            }
            let fresh = c.take_fresh();
            stop.handle.checkpoints_ended(&fresh);
            fresh_checkpoints.extend(fresh);
            control(stop.handle, c, now, &ring);
            // Rebuilt only when a checkpoint was triggered, acknowledged
            // or ended (the view ages their durations).
            let progress = c.pending_progress();
            let changed = last_pending != Some(progress);
            last_pending = Some(progress);
            stop.handle.tick(changed.then(|| c.in_progress()));
        } else {
            for r in stop.handle.take_requests() {
                stop.handle
                    .savepoint_refused(r.trigger, "checkpointing is off".into());
            }
            stop.handle.tick(Some(Vec::new()));
        }
        if stop.handle.cancel_requested() {
            shared.cancel();
        }
        if let Some(outcome) = stop.look(shared, coordinator.as_deref_mut(), now) {
            stopped = outcome;
        }
        if !progress_interval.is_zero() && now.duration_since(last_report) >= progress_interval {
            let snapshot = MetricsSnapshot::read(metrics);
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
    (in_flight, stopped)
}
