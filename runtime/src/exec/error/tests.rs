//! The classification of failures: which a restart may cure (and so go to
//! the restart strategy, and make the `weir` command exit 1) and which
//! fail the job at once (exit 2).

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use weir_state::snapshot::SnapshotError;

use crate::build::error::{BuildError, Restoring};
use crate::chain::error::TaskError;
use crate::checkpoint::error::{CheckpointError, RestoreError};
use crate::core::fault::Fault;
use crate::core::snapshot::Redistribution;
use crate::exec::error::{JobError, TaskFailure};
use crate::state::error::{StateError, StateKind};

fn task_failed(cause: impl Into<TaskFailure>) -> JobError {
    JobError::TaskFailed {
        worker: 0,
        task: "events -> totals (1/1)".into(),
        cause: cause.into(),
    }
}

fn restore(source: RestoreError) -> BuildError {
    BuildError::Restore {
        task: "events -> totals (1/1)".into(),
        kind: "source",
        uid: "events".into(),
        checkpoint: 3,
        part: Restoring::Inline,
        source: Box::new(source),
    }
}

fn rescale() -> RestoreError {
    RestoreError::Rescale {
        uid: "events".into(),
        checkpoint: 3,
        was: 2,
        now: 1,
    }
}

fn sink_error(retryable: bool) -> TaskError {
    TaskError::Sink {
        task: "totals (1/1)".into(),
        uid: "out".into(),
        action: "pre-commit for checkpoint 4".into(),
        message: "cannot write out/.inprogress-0000-1: No space left on device".into(),
        retryable,
    }
}

fn checkpoint_io(kind: io::ErrorKind) -> CheckpointError {
    CheckpointError::io("create checkpoint directory", "ck", io::Error::from(kind))
}

#[test]
fn a_refused_rescale_fails_at_once_with_its_message() {
    let e = task_failed(restore(rescale()));
    assert!(!e.retryable());
    assert_eq!(e.fault(), Fault::User);
    let message = e.to_string();
    assert!(
        message.starts_with("job failed: events -> totals (1/1) on worker 0: source `events`: ")
            && message.contains("operator `events` had parallelism 2 in checkpoint 3, now 1")
            && message.contains("cannot be redistributed"),
        "{message}"
    );
}

#[test]
fn checkpoints_that_do_not_fit_the_job_are_not_retryable() {
    let other_job = RestoreError::OtherJob {
        manifest: PathBuf::from("ck/chk-3/_metadata"),
        found: "w2".into(),
        expected: "w1".into(),
    };
    let redistribution = RestoreError::Redistribution {
        state: "kept".into(),
        stored: Redistribution::EvenSplit,
        declared: Redistribution::Union,
    };
    for source in [rescale(), other_job.clone(), redistribution] {
        assert!(
            !task_failed(restore(source.clone())).retryable(),
            "{source}"
        );
    }
    let restore_path = JobError::Restore {
        path: PathBuf::from("ck/chk-3"),
        source: Box::new(other_job),
    };
    assert!(!restore_path.retryable());
    assert_eq!(restore_path.fault(), Fault::User);
    let corrupt = JobError::RestoreCorrupt {
        checkpoint: 3,
        message: "bad checksum".into(),
    };
    assert!(
        !corrupt.retryable(),
        "an explicit checkpoint is not replaced"
    );
}

#[test]
fn a_state_name_error_is_not_retryable() {
    let e = task_failed(BuildError::StateNames {
        task: "forgets (1/1)".into(),
        kind: "keyed operator",
        uid: "forgets".into(),
        source: StateError::NotVisited {
            kind: StateKind::Keyed,
            name: "remembered".into(),
        },
    });
    assert!(!e.retryable());
    assert!(
        e.to_string().contains(
            "keyed operator `forgets` creates state `remembered` but its visit_state does not \
             visit it"
        ),
        "{e}"
    );
}

#[test]
fn an_io_error_while_restoring_is_retryable_unless_it_stays() {
    let read = |kind| {
        RestoreError::Snapshot(Arc::new(SnapshotError::Io {
            op: "open segment",
            path: PathBuf::from("ck/chk-3/w0.seg"),
            source: io::Error::from(kind),
        }))
    };
    assert!(task_failed(restore(read(io::ErrorKind::Other))).retryable());
    assert!(!task_failed(restore(read(io::ErrorKind::PermissionDenied))).retryable());
}

#[test]
fn hooks_and_sinks_say_whether_their_errors_are_retryable() {
    for retryable in [true, false] {
        let hook = task_failed(BuildError::InitializeState {
            task: "out (1/1)".into(),
            uid: "out".into(),
            message: "cannot create sink directory out: File exists".into(),
            retryable,
        });
        assert_eq!(hook.retryable(), retryable);
        let run = task_failed(sink_error(retryable));
        assert_eq!(run.retryable(), retryable);
        assert_eq!(
            run.fault(),
            if retryable {
                Fault::Outside
            } else {
                Fault::User
            }
        );
    }
    assert!(task_failed(sink_error(true))
        .to_string()
        .contains("sink `out` (totals (1/1)) failed to pre-commit for checkpoint 4: cannot write"));
}

#[test]
fn a_user_functions_failure_is_retryable_and_the_users() {
    let e = task_failed(TaskFailure::User("CAST('x' AS INT) failed".into()));
    assert!(e.retryable());
    assert_eq!(e.fault(), Fault::User);
    assert!(e.to_string().ends_with(": CAST('x' AS INT) failed"), "{e}");
}

#[test]
fn a_panic_is_retryable_and_ours() {
    let e = task_failed(TaskFailure::Panic("poisoned record".into()));
    assert!(
        e.retryable(),
        "a user function's panic goes to the restart strategy"
    );
    assert_eq!(e.fault(), Fault::Ours);
    assert_eq!(
        e.to_string(),
        "job failed: events -> totals (1/1) on worker 0: poisoned record"
    );
}

#[test]
fn checkpoint_directory_errors_split_by_what_the_disk_said() {
    assert!(!JobError::Checkpoint(checkpoint_io(io::ErrorKind::AlreadyExists)).retryable());
    assert!(!JobError::Checkpoint(checkpoint_io(io::ErrorKind::NotADirectory)).retryable());
    assert!(!JobError::Checkpoint(checkpoint_io(io::ErrorKind::PermissionDenied)).retryable());
    assert!(JobError::Checkpoint(checkpoint_io(io::ErrorKind::StorageFull)).retryable());
    let too_many = CheckpointError::TooManyFailures {
        failed: 3,
        tolerable: 2,
        last: 9,
        reason: "timed out".into(),
    };
    assert!(task_failed(too_many).retryable());
}

#[test]
fn mistakes_in_the_job_or_options_are_not_retryable() {
    assert!(!JobError::InvalidJob("a job needs at least one worker".into()).retryable());
    assert!(!JobError::RestoreLatestWithoutStorage.retryable());
    assert_eq!(JobError::RestoreLatestWithoutStorage.fault(), Fault::User);
}

#[test]
fn a_job_whose_restart_strategy_gave_up_is_retryable() {
    let e = JobError::RestartsExhausted {
        failure: Box::new(task_failed(sink_error(true))),
        reason: "restart-strategy fixed-delay: 2 attempts used".into(),
    };
    assert!(e.retryable(), "the `weir` command exits 1");
    assert_eq!(e.fault(), Fault::Outside);
}

#[test]
fn shared_foreign_or_unusable_directories_are_not_retryable() {
    let locked = JobError::Locked {
        what: "state.checkpoints.dir",
        dir: PathBuf::from("ck"),
        lock: PathBuf::from("ck/.weir-lock"),
        holder: Some(42),
    };
    let all_unusable = JobError::AllUnusable {
        dir: PathBuf::from("ck"),
        reasons: vec![(3, "bad checksum".into())],
    };
    let foreign = JobError::ForeignOutput {
        dir: PathBuf::from("out"),
        what: "another fingerprint".into(),
    };
    for e in [locked, all_unusable, foreign] {
        assert!(!e.retryable(), "{e}");
    }
    let directory = |kind| JobError::Directory {
        what: "output directory",
        dir: PathBuf::from("out"),
        source: io::Error::from(kind),
    };
    assert!(!directory(io::ErrorKind::AlreadyExists).retryable());
    assert_eq!(directory(io::ErrorKind::AlreadyExists).fault(), Fault::User);
    assert!(directory(io::ErrorKind::Other).retryable());
    let not_a_dir = CheckpointError::NotADirectory {
        what: "state.checkpoints.dir",
        path: PathBuf::from("ck"),
    };
    assert!(!JobError::Checkpoint(not_a_dir).retryable());
}
