//! Failures: a panicking operator fails the job promptly with its message;
//! a sink's error fails it without a panic, through the restart strategy
//! only if the sink calls it retryable; malformed jobs are rejected before
//! anything runs.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use weir_runtime::exec::restart::FixedDelay;
use weir_runtime::{
    Collector, JobError, JobGraph, KeyContext, KeyedProcessFunction, RestartStrategy,
    SequenceSource, Sink, SubtaskInfo, TaskError, TaskFailure,
};

use crate::{collect_into, options, run_job, temp_dir, Collected};

/// Panics on the record whose value is `at`; passes everything else on.
struct PanicAt {
    at: u64,
}

impl KeyedProcessFunction for PanicAt {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, u64);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        _ctx: &KeyContext<u64>,
        record: (u64, u64),
        out: &mut C,
    ) {
        if record.1 == self.at {
            panic!("poisoned record {} reached the keyed operator", self.at);
        }
        out.collect(record);
    }
}

fn panicking_job(n: u64, at: u64) -> JobGraph {
    let job = JobGraph::new("panics");
    job.source("numbers", move |info: &SubtaskInfo| {
        SequenceSource::new(info, n, |i| (i % 113, i))
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("explode", move |_: &SubtaskInfo| PanicAt { at })
    .sink("collect", collect_into(&Collected::new()));
    job
}

fn expect_task_failure(workers: usize) {
    let result = run_job(panicking_job(500_000, 4_242), &options(workers));
    match result {
        Err(JobError::TaskFailed {
            worker,
            task,
            cause,
        }) => {
            assert!(
                matches!(&cause, TaskFailure::Panic(message)
                    if message.contains("poisoned record 4242 reached the keyed operator")),
                "the panic message is reported, got {cause:?}"
            );
            assert!(
                cause.retryable(),
                "a panicking function is for the restart strategy"
            );
            assert!(
                task.contains("explode"),
                "the failing task is named, got {task:?}"
            );
            assert!(worker < workers, "worker {worker} of {workers}");
        }
        Err(other) => panic!("expected TaskFailed, got {other:?}"),
        Ok(r) => panic!("a job whose operator panicked succeeded: {r:?}"),
    }
}

#[test]
fn panic_in_keyed_operator_fails_the_job_one_worker() {
    expect_task_failure(1);
}

#[test]
fn panic_in_keyed_operator_fails_the_job_two_workers() {
    expect_task_failure(2);
}

#[test]
fn panic_in_a_source_fails_the_job() {
    let job = JobGraph::new("source-panics");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 100_000, |i| {
            assert!(i != 777, "source gave up at 777");
            (i % 5, i)
        })
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("pass", |_: &SubtaskInfo| PanicAt { at: u64::MAX })
    .sink("collect", collect_into(&Collected::new()));
    match run_job(job, &options(2)) {
        Err(e @ JobError::TaskFailed { .. }) => {
            assert!(e.to_string().contains("source gave up at 777"), "{e}")
        }
        other => panic!("expected TaskFailed, got {other:?}"),
    }
}

/// A sink whose `invoke` fails after `fail_after` records (reported by
/// `check`, as the file sink does with a write error), or whose end-of-input
/// commit fails; `retryable` is what it says of its errors. It counts its
/// `initialize_state` calls: one per attempt.
struct FailingSink {
    seen: u64,
    fail_after: Option<u64>,
    retryable: bool,
    attempts: Arc<AtomicUsize>,
}

impl Sink for FailingSink {
    type In = (u64, u64);
    fn invoke(&mut self, _record: (u64, u64)) {
        self.seen += 1;
    }
    fn check(&mut self) -> Result<(), String> {
        match self.fail_after {
            Some(n) if self.seen >= n => Err(format!("disk full after {n} records")),
            _ => Ok(()),
        }
    }
    fn initialize_state(&mut self, _restored: Option<(u64, &[u8])>) -> Result<(), String> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> Result<(), String> {
        Err("the commit was refused".into())
    }
    fn is_retryable(&self, _error: &str) -> bool {
        self.retryable
    }
}

fn failing_sink_job(
    fail_after: Option<u64>,
    retryable: bool,
    attempts: &Arc<AtomicUsize>,
) -> JobGraph {
    let attempts = attempts.clone();
    let job = JobGraph::new("failing-sink");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 100_000, |i| (i % 7, i))
    })
    .sink("out", move |_: &SubtaskInfo| FailingSink {
        seen: 0,
        fail_after,
        retryable,
        attempts: attempts.clone(),
    });
    job
}

fn restarting(workers: usize, attempts: u32) -> weir_runtime::ExecutionOptions {
    let mut o = options(workers);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts,
        delay: Duration::from_millis(5),
    });
    o
}

/// The sink's error fails its task as a typed error naming the sink and
/// what it was doing: no panic.
fn expect_sink_failure(e: &JobError, action: &str, message: &str) {
    let JobError::TaskFailed { cause, task, .. } = e else {
        panic!("expected the sink's task to fail, got {e:?}");
    };
    let TaskFailure::Run(error) = cause else {
        panic!("expected the sink's own error, not a panic: {cause:?}");
    };
    let TaskError::Sink {
        uid,
        action: a,
        message: m,
        ..
    } = &**error
    else {
        panic!("expected the sink's error, got {error:?}");
    };
    assert_eq!((uid.as_str(), a.as_str()), ("out", action), "{e}");
    assert!(m.contains(message), "{e}");
    assert!(task.contains("out"), "{task}");
}

#[test]
fn a_sink_error_in_invoke_fails_the_job_without_a_panic() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let e = run_job(failing_sink_job(Some(5_000), true, &attempts), &options(2)).unwrap_err();
    expect_sink_failure(&e, "write its records", "disk full after 5000 records");
    let message = e.to_string();
    assert!(
        message.contains("sink `out` (numbers -> out (")
            && message.contains("failed to write its records: disk full after 5000 records"),
        "{message}"
    );
}

#[test]
fn a_sink_error_at_the_end_of_input_fails_the_job_without_a_panic() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let e = run_job(failing_sink_job(None, true, &attempts), &options(1)).unwrap_err();
    expect_sink_failure(&e, "commit at the end of input", "the commit was refused");
}

/// A retryable sink error goes through the restart strategy, which gives
/// up after its attempts.
#[test]
fn a_retryable_sink_error_is_restarted() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let e = run_job(
        failing_sink_job(Some(5_000), true, &attempts),
        &restarting(1, 2),
    )
    .unwrap_err();
    let JobError::RestartsExhausted { failure, .. } = &e else {
        panic!("expected the restart strategy to give up, got {e:?}");
    };
    expect_sink_failure(failure, "write its records", "disk full");
    assert!(e.retryable());
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        3,
        "the first run and two restarts"
    );
}

/// A sink error the sink calls permanent fails the job at once, whatever
/// the restart strategy allows.
#[test]
fn a_permanent_sink_error_is_not_restarted() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let e = run_job(
        failing_sink_job(Some(5_000), false, &attempts),
        &restarting(1, 5),
    )
    .unwrap_err();
    expect_sink_failure(&e, "write its records", "disk full");
    assert!(!e.retryable());
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "no restart");
}

/// A sink that refuses to pre-commit from checkpoint 2 on, noting the
/// first checkpoint it refused.
struct RefusingSink {
    refused: Arc<AtomicU64>,
}

impl Sink for RefusingSink {
    type In = (u64, u64);
    fn invoke(&mut self, _record: (u64, u64)) {}
    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<Vec<u8>, String> {
        if checkpoint_id < 2 {
            return Ok(Vec::new());
        }
        let _ = self
            .refused
            .compare_exchange(0, checkpoint_id, Ordering::SeqCst, Ordering::SeqCst);
        Err("no space left for the transaction".into())
    }
}

/// A sink whose pre-commit fails fails its task without a panic, and the
/// snapshot it could not complete is dropped: that checkpoint never
/// completes.
#[test]
fn a_failed_pre_commit_fails_the_job_and_its_checkpoint_never_completes() {
    let dir = temp_dir("failed-pre-commit");
    let refused = Arc::new(AtomicU64::new(0));
    let job = JobGraph::new("refusing-sink");
    let r = refused.clone();
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, u64::MAX, |i| (i % 7, i))
    })
    .sink("out", move |_: &SubtaskInfo| RefusingSink {
        refused: r.clone(),
    });
    let mut o = options(2).with_checkpointing(Duration::from_millis(10), &dir);
    o.restart = RestartStrategy::None;
    let e = run_job(job, &o).unwrap_err();
    let id = refused.load(Ordering::SeqCst);
    assert!(id >= 2, "{e}");
    expect_sink_failure(
        &e,
        &format!("pre-commit for checkpoint {id}"),
        "no space left for the transaction",
    );
    assert!(
        !dir.join(format!("chk-{id}")).join("_metadata").exists(),
        "checkpoint {id} completed without the sink's state"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn invalid_job_message(job: JobGraph, options: &weir_runtime::ExecutionOptions) -> String {
    match run_job(job, options) {
        Err(JobError::InvalidJob(message)) => message,
        other => panic!("expected InvalidJob, got {other:?}"),
    }
}

#[test]
fn duplicate_uids_are_rejected() {
    let job = JobGraph::new("dup");
    job.source("twin", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| (i, i))
    })
    .map("twin", |r: (u64, u64)| r)
    .sink("collect", collect_into(&Collected::new()));
    let message = invalid_job_message(job, &options(1));
    assert!(
        message.contains("twin") && message.contains("twice"),
        "names the duplicated uid: {message:?}"
    );
}

#[test]
fn parallelism_zero_is_rejected() {
    let job = JobGraph::new("zero");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| (i, i))
    })
    .parallelism(0)
    .sink("collect", collect_into(&Collected::new()));
    let message = invalid_job_message(job, &options(1));
    assert!(
        message.contains("parallelism 0") && message.contains("numbers"),
        "names the stage and the zero parallelism: {message:?}"
    );
}

#[test]
fn parallelism_above_max_parallelism_is_rejected() {
    let job = JobGraph::new("too-wide");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| (i, i))
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("pass", |_: &SubtaskInfo| PanicAt { at: u64::MAX })
    .parallelism(5)
    .sink("collect", collect_into(&Collected::new()));
    let mut o = options(1);
    o.max_parallelism = 4;
    let message = invalid_job_message(job, &o);
    assert!(
        message.contains("parallelism 5") && message.contains("max-parallelism 4"),
        "names both numbers: {message:?}"
    );
}

#[test]
fn more_workers_than_key_groups_is_rejected() {
    // The default parallelism is the worker count: 3 workers, 2 key groups.
    let job = JobGraph::new("too-many-workers");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| (i, i))
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("pass", |_: &SubtaskInfo| PanicAt { at: u64::MAX })
    .sink("collect", collect_into(&Collected::new()));
    let mut o = options(3);
    o.max_parallelism = 2;
    let message = invalid_job_message(job, &o);
    assert!(message.contains("max-parallelism"), "{message:?}");
}

#[test]
fn zero_workers_and_empty_jobs_are_rejected() {
    let job = JobGraph::new("no-workers");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| i)
    })
    .sink("collect", collect_into(&Collected::new()));
    let message = invalid_job_message(job, &options(0));
    assert!(message.contains("worker"), "{message:?}");

    let job = JobGraph::new("no-sink");
    let _ = job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| i)
    });
    let message = invalid_job_message(job, &options(1));
    assert!(message.contains("no sink"), "{message:?}");
}
