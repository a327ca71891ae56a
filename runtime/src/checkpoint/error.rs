//! The errors of checkpointing: [`CheckpointError`] for taking checkpoints
//! (the checkpoint directory, the writer, the coordinator).
//!
//! I/O errors say what was being done to which file, as glommio's
//! `EnhancedIoError` does. Every error says whose fault it is ([`Fault`])
//! and whether a retry can help.

use std::io;
use std::path::PathBuf;

use weir_state::snapshot::SnapshotError;

use crate::core::fault::Fault;

/// Result of taking checkpoints.
pub type Result<T, E = CheckpointError> = std::result::Result<T, E>;

/// Why a checkpoint could not be taken, or the checkpoint directory not
/// read or changed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// An operation on the checkpoint directory or a file the checkpoint
    /// syncs failed.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. `"list checkpoint directory"`.
        op: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Writing, syncing or closing a segment file failed (the error names
    /// the segment and the operation).
    #[error(transparent)]
    Segment(#[from] SnapshotError),
    /// More consecutive checkpoints failed than
    /// `execution.checkpointing.tolerable-failed-checkpoints` allows: the
    /// job fails.
    #[error(
        "{failed} consecutive checkpoints failed, more than \
         execution.checkpointing.tolerable-failed-checkpoints = {tolerable} \
         (last: checkpoint {last} {reason})"
    )]
    TooManyFailures {
        /// Consecutive failed checkpoints.
        failed: u32,
        /// The tolerated number.
        tolerable: u32,
        /// The last failed checkpoint.
        last: u64,
        /// Why it failed.
        reason: String,
    },
}

impl CheckpointError {
    /// A [`CheckpointError::Io`].
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Whose fault it is: the outside world's (the disk, or checkpoints
    /// failing one after the other because of it), except a block the
    /// segment format cannot hold (a payload or state name too large),
    /// which is the user's.
    pub fn fault(&self) -> Fault {
        match self {
            Self::Segment(SnapshotError::Io { source, .. })
                if source.kind() == io::ErrorKind::InvalidInput =>
            {
                Fault::User
            }
            _ => Fault::Outside,
        }
    }

    /// Whether trying again can help: every checkpoint is a fresh attempt,
    /// and a job failed by too many failed checkpoints restarts as its
    /// restart strategy allows; a block the format cannot hold stays so.
    pub fn retryable(&self) -> bool {
        self.fault() != Fault::User
    }
}
