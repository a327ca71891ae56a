//! What an operator test harness fails with.

use crate::build::error::BuildError;
use crate::checkpoint::error::{CheckpointError, RestoreError};

/// Why an operator harness could not make, snapshot or restore its
/// operator.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// Making the function failed as a job's task would fail to build: a
    /// state created but not listed by `visit_state`, two states of one
    /// name, or a restore that did not fit or did not decode.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// Writing the snapshot failed.
    #[error("cannot write the operator snapshot: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// Reading a written snapshot back failed.
    #[error("cannot read the operator snapshot back: {0}")]
    Restore(#[from] RestoreError),
    /// An I/O error on the harness's own files.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// To which file or directory.
        path: std::path::PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Snapshots that cannot be merged into one (see
    /// [`OperatorSnapshot::merge`](crate::testing::OperatorSnapshot::merge)).
    #[error("cannot merge operator snapshots: {0}")]
    Merge(String),
}
