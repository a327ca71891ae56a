//! Executing a job: options, the restart loop, one attempt, the wiring of
//! channels and tasks, the workers' loop, waking a worker that sleeps past
//! its wake-up, progress reports, restart strategies, stopping with a
//! savepoint, the control plane's handle and the job's errors.

pub mod attempt;
pub mod error;
pub mod execute;
pub mod handle;
pub mod identity;
pub mod lock;
pub mod options;
pub mod outputs;
pub mod progress;
pub(crate) mod rescue;
pub mod restart;
pub mod restore;
pub(crate) mod spin_gate;
pub mod stop;
pub mod wiring;
pub mod worker;

pub use attempt::RestoreInfo;
pub use error::{JobError, Result, TaskFailure};
pub use execute::{execute, execute_with_progress, JobResult};
pub use handle::{JobHandle, JobState, JobView, SavepointStatus};
pub use identity::RunIdentity;
pub use options::{available_cores, CheckpointingOptions, ExecutionOptions, RestoreFrom};
pub use progress::Progress;
pub use restart::{
    RestartDecision, RestartStrategy, RestartStrategyConfig, RestartStrategyType, RestartTracker,
};
pub use stop::{StopRequest, Stopped};
