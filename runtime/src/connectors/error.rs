//! [`ConnectorError`]: what goes wrong in the file source and the
//! transactional file sink, naming the file or directory, the subtask and,
//! for a restore, the offset or checkpoint and what was expected.
//!
//! The [`Source`](crate::operators::source::function::Source) and
//! [`Sink`](crate::operators::sink::Sink) traits take `String` errors (users
//! implement them); the connectors' implementations hand over this error's
//! message.

use std::path::PathBuf;
use std::{fmt, io};

use crate::core::fault::{io_retryable, Fault};

/// Result of the connectors.
pub type Result<T, E = ConnectorError> = std::result::Result<T, E>;

/// An error of the file source or the transactional file sink.
#[derive(Debug, thiserror::Error)]
pub enum ConnectorError {
    /// An operation on a file or directory failed.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. `"open input file"`.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An operation at an offset of a file failed.
    #[error("cannot {op} {} at byte offset {offset}: {source}", path.display())]
    IoAt {
        /// What was being done, e.g. `"read input file"`.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// Where.
        offset: u64,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Renaming a transaction's file failed.
    #[error("cannot {op} {} as {}: {source}", from.display(), to.display())]
    Rename {
        /// `"commit"` or `"pre-commit"`.
        op: &'static str,
        /// The file renamed.
        from: PathBuf,
        /// Its new name.
        to: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    // The file source.
    /// A source built for a subtask its parallelism does not have.
    #[error("file source {}: subtask {index} of a parallelism of {parallelism}", dir.display())]
    SubtaskOutOfRange {
        /// The input directory.
        dir: PathBuf,
        /// The subtask.
        index: usize,
        /// The parallelism.
        parallelism: usize,
    },
    /// A restored position's bytes are not a position.
    #[error("malformed position of file source {} (subtask {subtask}): {defect}", dir.display())]
    MalformedPosition {
        /// The input directory.
        dir: PathBuf,
        /// The subtask restoring.
        subtask: usize,
        /// What is wrong.
        #[source]
        defect: PositionDefect,
    },
    /// A restored position names another subtask's file.
    #[error(
        "cannot restore file source position: input file {} belongs to subtask {owner} of \
         {parallelism}, not to subtask {subtask}",
        path.display()
    )]
    ForeignFile {
        /// The file.
        path: PathBuf,
        /// The subtask it belongs to.
        owner: usize,
        /// The parallelism.
        parallelism: usize,
        /// The subtask restoring.
        subtask: usize,
    },
    /// A restored position names a file the source did not list.
    #[error(
        "cannot restore file source position: {} is not an input file (hidden, or not a \
         regular file, or created after the source listed {})",
        path.display(),
        dir.display()
    )]
    NotAnInput {
        /// The file.
        path: PathBuf,
        /// The input directory.
        dir: PathBuf,
    },
    /// A restored position names a file that is gone.
    #[error("cannot restore file source position: input file {} is missing", path.display())]
    MissingInput {
        /// The file.
        path: PathBuf,
    },
    /// The file of a restored position cannot be opened.
    #[error(
        "cannot restore file source position: cannot open input file {} to resume at byte \
         offset {offset}: {source}",
        path.display()
    )]
    Resume {
        /// The file.
        path: PathBuf,
        /// The restored offset.
        offset: u64,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The file of a restored position is shorter than its offset.
    #[error(
        "cannot restore file source position: input file {} has {len} bytes, fewer than the \
         restored offset {offset}",
        path.display()
    )]
    ShortInput {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// The restored offset.
        offset: u64,
    },
    /// A restored offset is not just after a newline.
    #[error(
        "cannot restore file source position: byte offset {offset} of input file {} is not at \
         the start of a line (the file changed?)",
        path.display()
    )]
    NotAtLineStart {
        /// The file.
        path: PathBuf,
        /// The restored offset.
        offset: u64,
    },

    /// An input line is not UTF-8.
    #[error(
        "input file {}: invalid UTF-8 at byte offset {offset}; the file source reads UTF-8 text \
         lines",
        path.display()
    )]
    InvalidUtf8 {
        /// The file.
        path: PathBuf,
        /// The offset of the first byte that is not UTF-8.
        offset: u64,
    },

    // The transactional file sink.
    /// The sink was used before `initialize_state`.
    #[error("file sink {} (subtask {subtask}): {call} before initialize_state", dir.display())]
    NotInitialized {
        /// The sink's directory.
        dir: PathBuf,
        /// The subtask.
        subtask: usize,
        /// The call made too early.
        call: &'static str,
    },
    /// `initialize_state` was called a second time.
    #[error("file sink {} (subtask {subtask}): initialize_state called twice", dir.display())]
    InitializedTwice {
        /// The sink's directory.
        dir: PathBuf,
        /// The subtask.
        subtask: usize,
    },
    /// Records arrived before `initialize_state`.
    #[error(
        "file sink {} (subtask {subtask}): records arrived before initialize_state",
        dir.display()
    )]
    RecordsBeforeInitialize {
        /// The sink's directory.
        dir: PathBuf,
        /// The subtask.
        subtask: usize,
    },
    /// A checkpoint id not above the previous one.
    #[error(
        "file sink {} (subtask {subtask}): checkpoint id {id} is not above the previous one, \
         {last}",
        dir.display()
    )]
    CheckpointIdNotIncreasing {
        /// The sink's directory.
        dir: PathBuf,
        /// The subtask.
        subtask: usize,
        /// The id given.
        id: u64,
        /// The previous one.
        last: u64,
    },
    /// A restored state's bytes are not a sink state.
    #[error(
        "malformed state of file sink {} (subtask {subtask}, checkpoint {checkpoint}): {defect}",
        dir.display()
    )]
    MalformedSinkState {
        /// The sink's directory.
        dir: PathBuf,
        /// The subtask.
        subtask: usize,
        /// The checkpoint restored.
        checkpoint: u64,
        /// What is wrong.
        #[source]
        defect: SinkStateDefect,
    },
    /// The pending file of a transaction already exists at pre-commit.
    #[error(
        "cannot pre-commit {}: the pending file {} already exists",
        in_progress.display(),
        pending.display()
    )]
    PendingExists {
        /// The in-progress file.
        in_progress: PathBuf,
        /// The pending file in the way.
        pending: PathBuf,
    },
    /// A transaction to commit has both its pending and its committed file.
    #[error(
        "cannot commit transaction {id} of subtask {subtask}: both the pending file {} and the \
         committed file {} exist, and committed output is never overwritten",
        pending.display(),
        part.display()
    )]
    CommitConflict {
        /// The transaction.
        id: u64,
        /// The subtask.
        subtask: usize,
        /// Its pending file.
        pending: PathBuf,
        /// Its committed file.
        part: PathBuf,
    },
    /// A transaction to commit has neither its pending nor its committed
    /// file.
    #[error(
        "cannot commit transaction {id} of subtask {subtask}: neither the pending file {} nor \
         the committed file {} exists (pre-committed output was lost)",
        pending.display(),
        part.display()
    )]
    CommitLost {
        /// The transaction.
        id: u64,
        /// The subtask.
        subtask: usize,
        /// Its pending file.
        pending: PathBuf,
        /// Its committed file.
        part: PathBuf,
    },
}

impl ConnectorError {
    /// A [`ConnectorError::Io`].
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Whose fault it is: the user's for a connector used out of order,
    /// the outside world's for I/O errors and for files or restored bytes
    /// that are not what the connector wrote or listed.
    pub fn fault(&self) -> Fault {
        match self {
            Self::SubtaskOutOfRange { .. }
            | Self::NotInitialized { .. }
            | Self::InitializedTwice { .. }
            | Self::RecordsBeforeInitialize { .. }
            | Self::CheckpointIdNotIncreasing { .. } => Fault::User,
            _ => Fault::Outside,
        }
    }

    /// Whether a retry can help: after an I/O error that may pass (a full
    /// disk, a failing device; not permission denied or a directory that
    /// is a regular file: [`io_retryable`]). Files that changed behind the
    /// connector's back and malformed restored bytes stay as they are.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Io { source, .. }
            | Self::IoAt { source, .. }
            | Self::Rename { source, .. }
            | Self::Resume { source, .. } => io_retryable(source),
            _ => false,
        }
    }
}

/// What is wrong with the bytes of a file source's restored position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PositionDefect {
    /// No bytes.
    #[error("the position is empty (expected a version byte)")]
    Empty,
    /// Another version.
    #[error("unknown position version {found} (expected {expected})")]
    Version {
        /// The version found.
        found: u8,
        /// The one this source writes.
        expected: u8,
    },
    /// The file name's length is cut short.
    #[error("the file name's length is truncated")]
    NameLength,
    /// The bytes after the length are not the name and the offset.
    #[error("expected a {name}-byte file name and an 8-byte offset, found {found} bytes")]
    Length {
        /// The name's length.
        name: usize,
        /// Bytes found after the length.
        found: usize,
    },
    /// An offset without a file name.
    #[error("offset {0} without a file")]
    OffsetWithoutFile(u64),
}

/// What is wrong with the bytes of a file sink's restored state.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SinkStateDefect {
    /// No bytes.
    #[error("the state is empty (expected a version byte)")]
    Empty,
    /// Another version.
    #[error("unknown state version {found} (expected {expected})")]
    Version {
        /// The version found.
        found: u8,
        /// The one this sink writes.
        expected: u8,
    },
    /// A varint longer than 64 bits.
    #[error("{0} does not fit in 64 bits")]
    TooLong(SinkStateField),
    /// A varint cut short.
    #[error("{0} is truncated")]
    Truncated(SinkStateField),
    /// A count larger than the bytes that follow could hold.
    #[error("it lists {count} transactions but only {left} bytes follow")]
    Count {
        /// The count.
        count: u64,
        /// Bytes after it.
        left: usize,
    },
    /// An id repeated.
    #[error("transaction ids are not increasing (a repeat of {0})")]
    NotIncreasing(u64),
    /// An id beyond `u64`.
    #[error("transaction id {prev} + {delta} overflows")]
    Overflow {
        /// The previous id.
        prev: u64,
        /// The difference to the next.
        delta: u64,
    },
    /// A transaction newer than the checkpoint holding the state.
    #[error("it lists transaction {0}, newer than the checkpoint it belongs to")]
    NewerThanCheckpoint(u64),
    /// Bytes after the list.
    #[error("{0} unexpected bytes after the transaction list")]
    TrailingBytes(usize),
}

/// A field of a file sink's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SinkStateField {
    /// The number of transactions.
    Count,
    /// The `i`-th transaction id (from 0).
    Transaction(u64),
}

impl fmt::Display for SinkStateField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Count => f.write_str("the transaction count"),
            Self::Transaction(i) => write!(f, "transaction {i}"),
        }
    }
}
