//! Where a subtask runs: the one fact every factory of sources, operators
//! and sinks is given.

/// Where a subtask runs: passed to every factory of sources, operators and
/// sinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubtaskInfo {
    /// This subtask's index in `0..parallelism`.
    pub index: usize,
    /// The operator's parallelism.
    pub parallelism: usize,
    /// The worker (core) it runs on.
    pub worker: usize,
    /// Number of key groups of the job.
    pub max_parallelism: u32,
}
