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
use crate::exec::options::{ExecutionOptions, RestoreFrom};
use crate::exec::progress::Progress;
use crate::exec::restart::{RestartDecision, RestartStrategy, RestartTracker};
use crate::exec::restore::{log_unusable, select_restore};
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
/// from the latest complete checkpoint as the restart strategy allows.
pub fn execute_with_progress(
    job: JobGraph,
    options: &ExecutionOptions,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<JobResult> {
    let stages = validate(&job, options)?;
    let storage = match &options.checkpointing {
        Some(c) => {
            let storage = CheckpointStorage::open(&c.dir)?;
            let removed = storage.clean_incomplete()?;
            if !removed.is_empty() {
                tracing::info!(target: RESTORE, "removed incomplete checkpoints {removed:?}");
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
                log_unusable(checkpoint, &message);
                restore = select_restore(
                    &RestoreFrom::Latest,
                    storage.as_deref(),
                    job.name(),
                    options.max_parallelism,
                    Some(checkpoint),
                )?;
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
