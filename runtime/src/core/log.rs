//! The targets of weir's log events. The library logs through `tracing`
//! and never writes to stderr itself: whoever runs it installs a
//! subscriber (the `weir` command line does; a test or an embedding
//! program that installs none sees nothing).
//!
//! Targets are named here rather than taken from module paths so that a
//! filter such as `RUST_LOG=weir::checkpoint=trace` keeps working when
//! modules move. Levels:
//!
//! - `warn`: something the user should fix or know degrades the run
//!   (workers sharing cores, checkpoint files that cannot be written or
//!   deleted);
//! - `info`: what a run starts from and how it recovers (the checkpoint it
//!   restores, a fresh start, a restart and its delay, a sink's cleanup),
//!   a fail point killing the process, and `execute()`'s progress lines;
//! - `debug`: about one event per checkpoint and task (triggered,
//!   acknowledged, declined, completed, failed; a writer's snapshots,
//!   states and segments; restored state);
//! - `trace`: every barrier at every source and gate, a writer receiving
//!   each snapshot, alignment timeouts, unaligned snapshots and channel
//!   state, buffer debloating.
//!
//! Events of `info` and above carry a message a user can read as it is;
//! their fields (`checkpoint`, `task`, `worker`) repeat what it says for
//! subscribers that keep fields. The `debug` and `trace` events put the
//! ids in fields. No event is logged per record.

/// The checkpoint protocol: triggers, barriers at sources and gates,
/// snapshots, the writers, acknowledgements, completion and failure,
/// restored state; and warnings about checkpoint files. Debugging a stuck
/// or slow checkpoint starts with `weir::checkpoint=trace` (what the
/// command line's `WEIR_TRACE_CHECKPOINTS=1` turns on).
pub const CHECKPOINT: &str = "weir::checkpoint";

/// What a run starts from: the checkpoint it restores, the newer ones it
/// skipped as unusable, a fresh start, incomplete checkpoints removed.
pub const RESTORE: &str = "weir::restore";

/// Restarts by the restart strategy after a task failed.
pub const RESTART: &str = "weir::restart";

/// Placing workers on cores.
pub const WORKERS: &str = "weir::workers";

/// Sinks' recovery actions (the transactional file sink removing files a
/// replay writes again).
pub const SINK: &str = "weir::sink";

/// The file source's skipped lines (`*.ignore-parse-errors`), once per
/// byte range.
pub const SOURCE: &str = "weir::source";

/// Fail points of the crash tests (see [`crate::core::failpoint`]).
pub const FAILPOINT: &str = "weir::failpoint";

/// The progress lines of `exec::execute()`, every
/// `weir.progress.interval` (`execute_with_progress` hands them to its
/// caller instead).
pub const PROGRESS: &str = "weir::progress";
