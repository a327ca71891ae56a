//! Running a job to its end: attempts, restarts by the restart strategy
//! and the restores between them.
//!
//! The control thread (the caller's) builds every ring before any worker
//! starts, hands each worker its endpoints, waits until all workers have
//! built their tasks, releases them together and then only watches: it reads
//! the workers' counters for progress lines and waits for them to finish.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::api::graph::JobGraph;
use crate::checkpoint::stats::CheckpointRecord;
use crate::checkpoint::storage::CheckpointStorage;
use crate::core::log::{PROGRESS, RESTART, RESTORE};
use crate::exec::attempt::{run_attempt, RestoreInfo};
use crate::exec::error::{JobError, Result};
use crate::exec::handle::{CheckpointingView, JobState};
use crate::exec::identity::RunIdentity;
use crate::exec::lock::{expect_kind, lock_dir};
use crate::exec::options::{ExecutionOptions, RestoreFrom};
use crate::exec::outputs::{
    check_nothing_to_resume, check_output_paths, check_outputs, check_restored_outputs,
    check_savepoints_dir, check_savepoints_outside_inputs, lock_outputs, mark_outputs,
};
use crate::exec::progress::Progress;
use crate::exec::restart::{RestartDecision, RestartStrategy, RestartTracker};
use crate::exec::restore::{log_unusable, RestoreContext};
use crate::exec::wiring::validate;
use crate::metrics::report::{MetricsSnapshot, SubtaskSummary};

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
    /// The snapshot of a stop ([`ExecutionOptions::stop`]): the job was
    /// stopped with it instead of running to its end.
    pub stopped: Option<crate::exec::stop::Stopped>,
}

/// Runs `job` to completion, logging progress lines (`info`, target
/// `weir::progress`): printed if the caller installed a `tracing`
/// subscriber that lets them through, dropped otherwise. To print them
/// unconditionally, or otherwise, use [`execute_with_progress`].
pub fn execute(job: JobGraph, options: &ExecutionOptions) -> Result<JobResult> {
    execute_with_progress(job, options, &mut |p: &Progress| {
        tracing::info!(target: PROGRESS, "{}", p.lines());
    })
}

/// Runs `job` to completion, calling `on_progress` every
/// `options.progress_interval` (never if zero). A failure restarts the job
/// from the latest complete checkpoint of its timeline as the restart
/// strategy allows.
///
/// Before anything is changed, the run takes its checkpoint directory and
/// its declared output directories for itself (a second process is
/// refused), chooses the checkpoint to restore and checks that its state
/// means what this job's does, and that the outputs hold no other job's
/// committed output. Only then does it start its timeline (abandoning the
/// checkpoints newer than where it starts) and mark its outputs.
pub fn execute_with_progress(
    job: JobGraph,
    options: &ExecutionOptions,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<JobResult> {
    let handle = &options.handle;
    let result = run_job(job, options, on_progress);
    match &result {
        Ok(_) => handle.ended(JobState::Finished),
        Err(JobError::Cancelled) => handle.ended(JobState::Canceled),
        Err(e) => {
            handle.failed(e.to_string(), failed_task(e), false);
            handle.ended(JobState::Failed);
        }
    }
    result
}

/// The task a failure names, if one.
fn failed_task(e: &JobError) -> Option<String> {
    match e {
        JobError::TaskFailed { task, .. } => Some(task.clone()),
        JobError::RestartsExhausted { failure, .. } => failed_task(failure),
        _ => None,
    }
}

fn run_job(
    job: JobGraph,
    options: &ExecutionOptions,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<JobResult> {
    let job = job.into_plan();
    let stages = validate(&job, options)?;
    let run = RunIdentity::of_plan(&job, options);
    options.handle.started(
        &run.job_id,
        job.name(),
        options.workers,
        options.max_parallelism,
        job.stages
            .iter()
            .zip(stages.iter())
            .enumerate()
            .map(|(i, (n, s))| (n.name.clone(), s.parallelism, job.stage_inputs(i)))
            .collect(),
        options.checkpointing.as_ref().map(|c| CheckpointingView {
            dir: c.dir.clone(),
            savepoints_dir: c.savepoints_dir.clone(),
            coordinator: c.coordinator.clone(),
            exactly_once: c.exactly_once,
            unaligned: c.unaligned,
            aligned_checkpoint_timeout: c.aligned_checkpoint_timeout,
            incremental: c.incremental,
        }),
        format!("{:?}", options.restart),
        &options.stop,
    );
    let storage = match &options.checkpointing {
        Some(c) => Some(Arc::new(
            CheckpointStorage::open(&c.dir)?.with_savepoints(c.savepoints_dir.clone(), &run.job_id),
        )),
        None => None,
    };
    let _checkpoints_lock = storage
        .as_ref()
        .map(|s| lock_dir(s.root(), "state.checkpoints.dir"))
        .transpose()?;
    let _output_locks = lock_outputs(&run)?;
    check_output_paths(&run)?;
    if let Some(savepoints) = options
        .checkpointing
        .as_ref()
        .and_then(|c| c.savepoints_dir.as_ref())
    {
        check_savepoints_dir(&run, savepoints)?;
        check_savepoints_outside_inputs(job.input_directories(), savepoints)?;
    }
    if let Some(storage) = &storage {
        check_checkpoint_paths(storage)?;
    }
    let job_name = job.name().to_owned();
    let context = RestoreContext {
        job_name: &job_name,
        max_parallelism: options.max_parallelism,
        storage: storage.as_deref(),
        run: &run,
        allow_non_restored_state: options.allow_non_restored_state,
    };
    let mut restore = context.choose(&options.restore, None)?;
    check_outputs(&run, restore.is_none())?;
    if let (None, RestoreFrom::Latest, Some(storage)) = (&restore, &options.restore, &storage) {
        check_nothing_to_resume(&run, storage.root())?;
        tracing::info!(
            target: RESTORE,
            "no complete checkpoint in {}: starting fresh",
            storage.root().display()
        );
    }
    if let Some((r, _)) = &restore {
        check_restored_outputs(&run, r.id(), r.manifest().timestamp_ms)?;
    }
    // Checked: from here on the run changes things.
    clean_incomplete(storage.as_deref())?;
    context.start_timeline(&restore)?;
    mark_outputs(&run)?;
    // Where a restart starts when the timeline has no checkpoint yet: the
    // checkpoint the run was told to restore (never another), or nothing.
    let first = restore.as_ref().map(|(r, _)| r.dir().to_path_buf());
    let explicit = matches!(options.restore, RestoreFrom::Path(_));
    let job = Arc::new(job);
    let stages = Arc::new(stages);
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
            &run,
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
                log_unusable(checkpoint, &message);
                restore = match context.choose(&RestoreFrom::Latest, Some(checkpoint)) {
                    Err(JobError::AllUnusable { dir, mut reasons }) => {
                        reasons.insert(0, (checkpoint, message));
                        return Err(JobError::AllUnusable { dir, reasons });
                    }
                    chosen => chosen?,
                };
                context.start_timeline(&restore)?;
                continue;
            }
            // A failure a restart cannot cure (a refused rescale, a state
            // name, ...) fails the job at once, below.
            Err(e @ JobError::TaskFailed { .. }) if e.retryable() => {
                let decision = tracker.on_failure(Instant::now(), running_since);
                match decision {
                    RestartDecision::Restart { delay, attempt } => {
                        tracing::info!(
                            target: RESTART,
                            attempt,
                            ?delay,
                            "{e}; restarting (attempt {attempt}) in {delay:?}"
                        );
                        options.handle.failed(e.to_string(), failed_task(&e), true);
                        options.handle.set_state(JobState::Restarting);
                        // A cancel asked for while the job waits to restart
                        // ends it now, not after the delay and an attempt; a
                        // stop restarts it now, to take the stop's savepoint.
                        if options.handle.cancelled_within(delay, &options.stop) {
                            return Err(JobError::Cancelled);
                        }
                        restarts += 1;
                        // The newest checkpoint of this run's timeline, or
                        // where the run started.
                        restore = match &storage {
                            Some(_) => context.choose(&RestoreFrom::Latest, None)?,
                            None => None,
                        };
                        if restore.is_none() {
                            if let Some(dir) = &first {
                                restore = context.choose(&RestoreFrom::Path(dir.clone()), None)?;
                            }
                        }
                        // What the failed attempt left half written.
                        clean_incomplete(storage.as_deref())?;
                        context.start_timeline(&restore)?;
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
            stopped: result.stopped,
        });
    }
}

/// Checks, before anything is changed, that what weir keeps in the
/// checkpoint directory is of the right kind: `_timeline` a file,
/// `abandoned` (where abandoned checkpoints go) a directory. A file
/// `abandoned` made the run fail after it had recorded the abandonment in
/// `_timeline`, with the checkpoints still in place.
fn check_checkpoint_paths(storage: &CheckpointStorage) -> Result<()> {
    use crate::checkpoint::storage::{ABANDONED_DIR, TIMELINE_FILE};
    let root = storage.root();
    expect_kind(
        &root.join(TIMELINE_FILE),
        "the checkpoint directory's timeline",
        false,
    )?;
    expect_kind(
        &root.join(ABANDONED_DIR),
        "where abandoned checkpoints are moved",
        true,
    )
}

/// Deletes the incomplete checkpoints of the directory (a crashed run's, or
/// a failed attempt's): nobody will complete them, and their ids are not
/// used again.
fn clean_incomplete(storage: Option<&CheckpointStorage>) -> Result<()> {
    if let Some(storage) = storage {
        let removed = storage.clean_incomplete()?;
        if !removed.is_empty() {
            tracing::info!(target: RESTORE, "removed incomplete checkpoints {removed:?}");
        }
    }
    Ok(())
}
