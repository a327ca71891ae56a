//! Running a whole job in a test: options that suit tests, and a time
//! limit that turns a hang into a failure that says what the job was
//! doing (see `hang.rs`) and cancels it.

use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::Duration;

use crate::api::graph::JobGraph;
use crate::exec::error::JobError;
use crate::exec::execute::{execute, JobResult};
use crate::exec::options::ExecutionOptions;
use crate::testing::hang::hang_report;

/// The longest [`run_job`] lets a test job take before it calls it a hang.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(30);

/// Options for `workers` workers that suit tests: workers not pinned to
/// cores (tests running in parallel would fight over them; more workers
/// than cores is fine), no progress reports, everything else at
/// [`Config`](crate::config::Config)'s defaults (no checkpointing: turn it
/// on with [`ExecutionOptions::with_checkpointing`]).
pub fn test_options(workers: usize) -> ExecutionOptions {
    let mut options = ExecutionOptions::with_workers(workers);
    options.pin_cores = false;
    options
}

/// `options` with small network buffers: 1 KiB segments (records must be
/// smaller), 2 buffers of credit per channel and 1 floating buffer per
/// gate, so that buffers fill, credit runs out and backpressure happens
/// with a few thousand records instead of millions.
pub fn small_buffers(mut options: ExecutionOptions) -> ExecutionOptions {
    options.segment_size = 1024;
    options.buffers_per_channel = 2;
    options.floating_buffers = 1;
    options
}

/// Runs `job` on a thread of its own and returns what
/// [`execute`] returned; panics (failing the test) if the job has not
/// finished after [`JOB_TIMEOUT`] (with what its subtasks and worker
/// threads were doing, and cancels it), or if `execute` panicked.
pub fn run_job(job: JobGraph, options: &ExecutionOptions) -> Result<JobResult, JobError> {
    run_job_within(job, options, JOB_TIMEOUT)
}

/// [`run_job`] with another time limit.
pub fn run_job_within(
    job: JobGraph,
    options: &ExecutionOptions,
    limit: Duration,
) -> Result<JobResult, JobError> {
    let name = job.name().to_owned();
    let options = options.clone();
    let handle = options.handle.clone();
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name(format!("run-{name}"))
        .spawn(move || {
            let _ = tx.send(execute(job, &options));
        })
        .expect("spawn the job's control thread");
    match rx.recv_timeout(limit) {
        Ok(result) => result,
        Err(RecvTimeoutError::Timeout) => {
            // What it was doing, then stop it: a hung job must not keep
            // the other tests' cores busy.
            let report = hang_report(&handle);
            let _ = handle.cancel();
            panic!(
                "job `{name}` did not finish within {limit:?}: the engine hangs on a bounded job\n{report}"
            )
        }
        Err(RecvTimeoutError::Disconnected) => {
            panic!("execute() panicked while running job `{name}` instead of returning")
        }
    }
}

/// Runs `job` with [`run_job`] and expects it to succeed: panics with the
/// job's error otherwise.
pub fn run_ok(job: JobGraph, options: &ExecutionOptions) -> JobResult {
    match run_job(job, options) {
        Ok(result) => result,
        Err(e) => panic!("the job failed: {e}"),
    }
}
