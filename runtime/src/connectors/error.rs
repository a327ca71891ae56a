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
    /// A restored position of bytes: the format of checkpoints taken
    /// before byte ranges, which this source no longer reads.
    #[error(
        "file source {} (subtask {subtask}): the checkpoint holds a {len}-byte position, the \
         format of checkpoints taken before the source read byte ranges; start the job afresh",
        dir.display()
    )]
    OldPosition {
        /// The input directory.
        dir: PathBuf,
        /// The subtask restoring.
        subtask: usize,
        /// The position's length.
        len: usize,
    },
    /// A checkpoint of a bounded source of older weir, which kept no
    /// claims, restored in continuous mode while ranges were left: every
    /// file it had finished would be read again.
    #[error(
        "file source {} (subtask {subtask}): the checkpoint was taken by a bounded source of \
         older weir, which did not record the files it had read; watching the directory from \
         it would read them again. Restore it without a monitor interval (SQL: without \
         'source.monitor-interval'): it reads what is left and ends",
        dir.display()
    )]
    BoundedWithoutClaims {
        /// The input directory.
        dir: PathBuf,
        /// The subtask restoring.
        subtask: usize,
    },
    /// An input file is gone when its range is opened.
    #[error(
        "input file {} vanished before it was read (deleted while the source read the \
         directory?); input files must stay until the job has read them",
        path.display()
    )]
    InputVanished {
        /// The file.
        path: PathBuf,
    },
    /// A restored offset is not just after a newline.
    #[error(
        "cannot resume input file {} at byte offset {offset}: it is not the start of a line \
         (the file changed since the checkpoint?)",
        path.display()
    )]
    NotAtLineStart {
        /// The file.
        path: PathBuf,
        /// The restored offset.
        offset: u64,
    },
    /// The source's I/O thread could not start or ended.
    #[error("file source {}: its I/O thread {what}", dir.display())]
    Reader {
        /// The input directory.
        dir: PathBuf,
        /// What happened.
        what: String,
    },
    /// An input line is not UTF-8.
    #[error(
        "input file {}, {at}: invalid UTF-8 at byte offset {offset}; the file source reads \
         UTF-8 text lines",
        path.display()
    )]
    InvalidUtf8 {
        /// The file.
        path: PathBuf,
        /// The line.
        at: LineAt,
        /// The offset of the first byte that is not UTF-8.
        offset: u64,
    },
    /// An input line longer than the limit.
    #[error(
        "input file {}, {at}: the line is longer than {limit} bytes (the file source's line \
         length limit)",
        path.display()
    )]
    LineTooLong {
        /// The file.
        path: PathBuf,
        /// The line.
        at: LineAt,
        /// The limit.
        limit: usize,
    },
    /// A line the source's decoder (a format) refused.
    #[error("input file {}, {at}{}: {message}", path.display(), column.map(|c| format!(", column {c}")).unwrap_or_default())]
    BadLine {
        /// The file.
        path: PathBuf,
        /// The line.
        at: LineAt,
        /// The 1-based byte column, if known.
        column: Option<usize>,
        /// What is wrong.
        message: String,
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
    /// A transaction to commit, pre-committed by the same attempt, has
    /// neither its pending nor its committed file (at a restore's commit
    /// that is a part taken away since, a warning).
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
            Self::Io { source, .. } | Self::IoAt { source, .. } | Self::Rename { source, .. } => {
                io_retryable(source)
            }
            Self::Reader { .. } => true,
            _ => false,
        }
    }
}

/// Where a line is in its file: its line number when its range starts
/// the file (else its number within the range) and its byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineAt {
    /// The line's 1-based number: in the file if `range_start` is 0, else
    /// in the range.
    pub line: u64,
    /// The first byte of the range the line was read in.
    pub range_start: u64,
    /// The byte offset of the line's first byte.
    pub offset: u64,
}

impl fmt::Display for LineAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.range_start == 0 {
            write!(f, "line {} (byte offset {})", self.line, self.offset)
        } else {
            write!(
                f,
                "line {} of the byte range from {} (byte offset {})",
                self.line, self.range_start, self.offset
            )
        }
    }
}

/// What is wrong with the bytes of a file sink's restored state.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SinkStateDefect {
    /// No bytes.
    #[error("the state is empty (expected a version byte)")]
    Empty,
    /// Another version.
    #[error("unknown state version {found} (expected 1 to {expected})")]
    Version {
        /// The version found.
        found: u8,
        /// The newest this sink reads.
        expected: u8,
    },
    /// A writer name length of 0, or longer than the bytes that follow.
    #[error("its writer name is {len} bytes long but {left} bytes follow")]
    WriterLength {
        /// The length.
        len: u64,
        /// Bytes after it.
        left: usize,
    },
    /// A writer name that is not UTF-8 or cannot be part of a file name.
    #[error("its writer name is not a file name part")]
    WriterName,
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
    /// The length of the writer name.
    WriterLength,
    /// The number of transactions.
    Count,
    /// The `i`-th transaction id (from 0).
    Transaction(u64),
}

impl fmt::Display for SinkStateField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WriterLength => f.write_str("the writer name's length"),
            Self::Count => f.write_str("the transaction count"),
            Self::Transaction(i) => write!(f, "transaction {i}"),
        }
    }
}
