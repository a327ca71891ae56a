//! [`SnapshotError`]: every way writing or reading snapshot files fails,
//! each naming the file (and, for corruption, the offset) involved.

use std::io;
use std::path::PathBuf;

/// Result of the snapshot functions.
pub type Result<T, E = SnapshotError> = std::result::Result<T, E>;

/// An error writing or reading snapshot files.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// An I/O operation failed; says what was done to which file.
    #[error("snapshot I/O: cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. `"open segment"` or `"fsync"`.
        op: &'static str,
        /// The file (or directory) it was done to.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A segment's bytes do not match the format or the extent that named
    /// them (bad magic, checksum mismatch, truncation, ...).
    #[error("snapshot segment {} offset {offset}: {what}", path.display())]
    Corrupt {
        /// The segment file.
        path: PathBuf,
        /// Offset of the block in the file.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// A manifest's bytes are not a valid manifest.
    #[error("snapshot manifest: {what}")]
    Manifest {
        /// What is wrong (and which file, when known).
        what: String,
    },
}

impl SnapshotError {
    /// An [`SnapshotError::Io`].
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// A [`SnapshotError::Manifest`].
    pub(crate) fn manifest(what: impl Into<String>) -> Self {
        Self::Manifest { what: what.into() }
    }
}
