//! The errors of checkpointing: [`CheckpointError`] for taking checkpoints
//! (the checkpoint directory, the writer, the coordinator) and
//! [`RestoreError`] for reading one back.
//!
//! I/O errors say what was being done to which file, as glommio's
//! `EnhancedIoError` does; restore errors name the file, the offset, the
//! state, the key groups or the operator involved and what was expected.
//! Every error says whose fault it is ([`Fault`]) and whether a retry can
//! help; a restore error also says whether it makes the checkpoint unusable
//! ([`RestoreError::unusable`]), which decides whether an older checkpoint
//! is tried.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use weir_state::snapshot::{BlockKind, SnapshotError};
use weir_state::KeyGroupRange;

use crate::core::fault::{io_retryable, Fault};
use crate::core::snapshot::Redistribution;

/// Result of taking checkpoints.
pub type Result<T, E = CheckpointError> = std::result::Result<T, E>;

/// The largest checkpoint id weir numbers (`i64::MAX`: a checkpoint a
/// millisecond would take 292 million years to reach it); a directory
/// holding a larger one is refused ([`CheckpointError::IdsExhausted`])
/// rather than numbering past `u64::MAX`.
pub const MAX_CHECKPOINT_ID: u64 = i64::MAX as u64;

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
    /// A sink's pre-commit, finished by its own thread, failed (a flush to
    /// a broker).
    #[error("a sink's pre-commit failed: {0}")]
    Precommit(String),
    /// The checkpoint directory (or a path weir keeps in it) is not a
    /// directory.
    #[error("{what} {} is a file, not a directory", path.display())]
    NotADirectory {
        /// What the path is, e.g. `"state.checkpoints.dir"`.
        what: &'static str,
        /// The path.
        path: PathBuf,
    },
    /// The checkpoint directory's `_timeline` cannot be read: weir does not
    /// guess which checkpoints belong to the current timeline.
    #[error(
        "{} is not a timeline weir wrote ({what}): move it away only if no checkpoint of this \
         directory is abandoned",
        path.display()
    )]
    Timeline {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// The checkpoint directory holds an id (a `chk-<id>` name, here or in
    /// `abandoned/`, or in `_timeline`) so large that new checkpoints,
    /// numbered above it, would run out of ids: no run of weir wrote it.
    #[error(
        "{} holds checkpoint id {id}, past the largest weir numbers ({max}): new checkpoints are \
         numbered above every id the directory held; move what holds it away, or give this job \
         another state.checkpoints.dir",
        dir.display(),
        max = MAX_CHECKPOINT_ID
    )]
    IdsExhausted {
        /// The checkpoint directory.
        dir: PathBuf,
        /// The id found.
        id: u64,
    },
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

/// [`RestoreError::Incomplete`]'s message: a savepoint's directory
/// without its manifest is a stop whose savepoint never completed (a
/// second signal, a crash), and is named as a savepoint.
fn incomplete(manifest: &std::path::Path, savepoint: bool) -> String {
    if savepoint {
        format!(
            "{} is missing: the savepoint is incomplete (the stop or trigger that took it ended \
             before it completed, e.g. aborted by a second signal) and cannot be restored; name a \
             complete savepoint, or use --restore latest for the last checkpoint",
            manifest.display()
        )
    } else {
        format!(
            "{} is missing: the checkpoint is incomplete (its run ended before it completed); \
             name a complete chk-<id>, or use --restore latest",
            manifest.display()
        )
    }
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
            Self::NotADirectory { .. } | Self::Timeline { .. } | Self::IdsExhausted { .. } => {
                Fault::User
            }
            Self::Io { source, .. } if source.kind() == io::ErrorKind::PermissionDenied => {
                Fault::User
            }
            _ => Fault::Outside,
        }
    }

    /// Whether trying again can help: every checkpoint is a fresh attempt,
    /// and a job failed by too many failed checkpoints restarts as its
    /// restart strategy allows. Not after an I/O error that stays
    /// ([`io_retryable`]: permission denied, a checkpoint directory that is
    /// a regular file, ...), nor for a block the format cannot hold, a
    /// checkpoint directory that is not one or a timeline weir did not
    /// write.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Io { source, .. } | Self::Segment(SnapshotError::Io { source, .. }) => {
                io_retryable(source)
            }
            Self::NotADirectory { .. } | Self::Timeline { .. } | Self::IdsExhausted { .. } => false,
            Self::Segment(_) | Self::Precommit(_) | Self::TooManyFailures { .. } => true,
        }
    }
}

/// Why a checkpoint cannot be restored.
///
/// [`unusable`](Self::unusable) splits the variants in two. Either the
/// checkpoint itself is bad (incomplete, truncated, corrupt): an older
/// checkpoint may do, and a restore of the latest checkpoint falls back to
/// it, also when a worker finds the damage while loading. Or the checkpoint
/// is sound but does not fit the job as it now runs (per-subtask state
/// asked to rescale, a state declared another way, fewer inputs): the user
/// must change the job or pick another checkpoint, and the restore fails.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RestoreError {
    // The checkpoint is unusable.
    /// The checkpoint has no manifest: it never completed.
    #[error("{}", incomplete(manifest, *savepoint))]
    Incomplete {
        /// The missing manifest.
        manifest: PathBuf,
        /// Whether the directory is a savepoint's (`savepoint-*`): a stop
        /// or trigger whose savepoint never completed (a second signal, a
        /// crash).
        savepoint: bool,
    },
    /// The manifest or a segment cannot be read or fails its checks (the
    /// error names the file, and for a block its offset).
    #[error(transparent)]
    Snapshot(Arc<SnapshotError>),
    /// The manifest names a segment outside the checkpoint's directory.
    #[error(
        "{} names segment `{segment}` outside the checkpoint directory",
        manifest.display()
    )]
    SegmentOutside {
        /// The manifest.
        manifest: PathBuf,
        /// The segment it names.
        segment: String,
    },
    /// A segment is shorter than a block the manifest places in it.
    #[error(
        "{} is truncated: {len} bytes, but the block at offset {offset} needs {needed}",
        segment.display()
    )]
    Truncated {
        /// The segment file.
        segment: PathBuf,
        /// Its length.
        len: u64,
        /// Offset of the block.
        offset: u64,
        /// The block's length.
        needed: u64,
    },
    /// A block of state `state` fails its checks: header, padding or
    /// payload checksum (the error names the segment and the offset).
    #[error("state `{state}`: {source}")]
    Block {
        /// The state (or channel) the block belongs to.
        state: String,
        /// What failed.
        #[source]
        source: Arc<SnapshotError>,
    },
    /// A keyed block's payload does not hold what its format says (an
    /// entry that does not decode, bytes after the last entry, a bad table
    /// header).
    #[error(
        "state `{state}`: {kind} block of key groups {key_groups:?} at offset {offset} in \
         {segment} is malformed at payload byte {pos}: {what}"
    )]
    MalformedBlock {
        /// The state.
        state: String,
        /// The block's kind.
        kind: BlockKind,
        /// The key groups the block holds.
        key_groups: KeyGroupRange,
        /// The segment.
        segment: String,
        /// The block's offset in the segment.
        offset: u64,
        /// Where in the payload the problem is.
        pos: usize,
        /// What is wrong.
        what: String,
    },
    /// A keyed block holds an entry of a key group outside its own.
    #[error(
        "state `{state}`: a {entry} of key group {key_group} is stored in the {kind} block of \
         key groups {key_groups:?} at offset {offset} in {segment}"
    )]
    MisplacedEntry {
        /// The state.
        state: String,
        /// What the entry is (`"key"`, `"timer"`).
        entry: &'static str,
        /// The entry's key group.
        key_group: u32,
        /// The block's kind.
        kind: BlockKind,
        /// The key groups the block holds.
        key_groups: KeyGroupRange,
        /// The segment.
        segment: String,
        /// The block's offset in the segment.
        offset: u64,
    },
    /// An operator list state's block does not hold what its header says.
    #[error(
        "operator state `{state}`: block at offset {offset} of {segment} is malformed: {what}"
    )]
    MalformedListBlock {
        /// The state.
        state: String,
        /// The segment.
        segment: String,
        /// The block's offset in the segment.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// The manifest gives an operator list state a subtask its operator
    /// did not have.
    #[error(
        "operator state `{state}`: the checkpoint names subtask {index} of parallelism \
         {parallelism}"
    )]
    UnknownSubtask {
        /// The state.
        state: String,
        /// The subtask named.
        index: u32,
        /// The operator's parallelism in the checkpoint.
        parallelism: u32,
    },
    /// The manifest's checkpoint id is not the one its directory is named
    /// after (a copied or renamed checkpoint).
    #[error(
        "{} holds checkpoint {found}, but its directory is named for checkpoint {expected}: a \
         copied or renamed checkpoint cannot be trusted; restore it under its own name \
         (chk-{found})",
        manifest.display()
    )]
    IdMismatch {
        /// The manifest.
        manifest: PathBuf,
        /// The id in the manifest.
        found: u64,
        /// The id in the directory's name.
        expected: u64,
    },

    // The checkpoint does not fit the job: the user's to fix.
    /// The path `--restore` (or `weir checkpoints`) names is no
    /// checkpoint: missing, a file other than a manifest, or the checkpoint
    /// directory's root. The message names the path, not `--restore`: the
    /// inspector shows it too, where no `--restore` was given.
    #[error("{}: {what}", path.display())]
    NotACheckpoint {
        /// The path given.
        path: PathBuf,
        /// What it is instead, and what to name.
        what: String,
    },
    /// The checkpoint's state means something else than this job's: another
    /// job, other parameters, other outputs, operators this job lacks.
    #[error(
        "{} was written by another job ({what}): restore a checkpoint of this job, or start \
         fresh",
        manifest.display()
    )]
    Foreign {
        /// The manifest.
        manifest: PathBuf,
        /// What differs.
        what: String,
    },
    /// The checkpoint holds state of operators this job does not have
    /// (Flink's "non-restored state"): refused unless
    /// `--allow-non-restored-state` says to skip it.
    #[error(
        "{} holds state of operator{} {} that this job does not have: add {} back, or restore \
         with --allow-non-restored-state to skip that state",
        manifest.display(),
        if uids.len() == 1 { "" } else { "s" },
        uids.iter().map(|u| format!("`{u}`")).collect::<Vec<_>>().join(", "),
        if uids.len() == 1 { "it" } else { "them" }
    )]
    NonRestoredState {
        /// The manifest.
        manifest: PathBuf,
        /// The operators' uids.
        uids: Vec<String>,
    },
    /// The checkpoint belongs to another job.
    #[error("{} belongs to job `{found}`, not `{expected}`", manifest.display())]
    OtherJob {
        /// The manifest.
        manifest: PathBuf,
        /// The checkpoint's job.
        found: String,
        /// The job restoring.
        expected: String,
    },
    /// The checkpoint was taken with another number of key groups.
    #[error(
        "{} was taken with pipeline.max-parallelism {found}, the job runs with {expected} \
         (key groups cannot be remapped)",
        manifest.display()
    )]
    MaxParallelism {
        /// The manifest.
        manifest: PathBuf,
        /// The checkpoint's max parallelism.
        found: u32,
        /// The job's.
        expected: u32,
    },
    /// An operator with per-subtask state runs at another parallelism.
    #[error(
        "operator `{uid}` had parallelism {was} in checkpoint {checkpoint}, now {now}: its \
         per-subtask state cannot be redistributed (a source whose position is not splits in \
         operator state, or a sink without `Sink::initialize_rescaled_state`): run it with \
         parallelism {was}"
    )]
    Rescale {
        /// The operator.
        uid: String,
        /// The checkpoint.
        checkpoint: u64,
        /// Its parallelism in the checkpoint.
        was: u32,
        /// Its parallelism now.
        now: usize,
    },
    /// The checkpoint holds channel state (in-flight records of an
    /// unaligned checkpoint) of a two-input stage's input, taken at
    /// another parallelism, without the number of channels of each input
    /// (written by a weir before that was recorded): which records belong
    /// to which input is unknown, so they cannot be redistributed.
    #[error(
        "checkpoint {checkpoint} holds in-flight records (unaligned channel state) of `{uid}`, \
         the input of a two-input stage, taken with parallelism {was} but without the number \
         of channels of each input (written by an older weir): they cannot be redistributed to \
         {now} subtasks; restore it with parallelism {was}, or rescale from a checkpoint \
         without them (an aligned one, or a savepoint)"
    )]
    ChannelStateRescale {
        /// The exchange's input.
        uid: String,
        /// The checkpoint.
        checkpoint: u64,
        /// The receiving stage's parallelism in the checkpoint.
        was: u32,
        /// Its parallelism now.
        now: usize,
    },
    /// The checkpoint holds channel state of an input the subtask no
    /// longer has.
    #[error(
        "checkpoint {checkpoint} holds channel state `{channel}` of operator `{uid}` subtask \
         {subtask}, which has only {inputs} inputs now"
    )]
    ChannelInputs {
        /// The checkpoint.
        checkpoint: u64,
        /// The channel state's name.
        channel: String,
        /// The operator (the exchange's input).
        uid: String,
        /// The subtask.
        subtask: usize,
        /// Its inputs now.
        inputs: usize,
    },
    /// An operator list state was checkpointed with another redistribution
    /// mode than it is declared with now.
    #[error(
        "operator state `{state}` was checkpointed as {stored} and is now declared as \
         {declared}: the redistribution mode of a state cannot change"
    )]
    Redistribution {
        /// The state.
        state: String,
        /// The mode in the checkpoint.
        stored: Redistribution,
        /// The mode declared now.
        declared: Redistribution,
    },

    // Ours.
    /// A block of a segment that was not opened with the checkpoint.
    #[error("segment {segment} was not opened with the checkpoint")]
    SegmentNotOpened {
        /// The segment.
        segment: String,
    },
    /// Verifying a segment panicked.
    #[error("verifying segment {} panicked", segment.display())]
    VerifyPanicked {
        /// The segment.
        segment: PathBuf,
    },

    // Context.
    /// An error of one operator subtask's restore, naming the operator.
    #[error("operator `{uid}` subtask {subtask}: {source}")]
    Operator {
        /// The operator.
        uid: String,
        /// The restoring subtask.
        subtask: usize,
        /// What failed.
        #[source]
        source: Box<RestoreError>,
    },
}

impl From<SnapshotError> for RestoreError {
    fn from(e: SnapshotError) -> Self {
        Self::Snapshot(Arc::new(e))
    }
}

impl RestoreError {
    /// Whether the checkpoint itself is bad (missing, truncated or corrupt
    /// data): an older checkpoint may do. A worker that finds such an error
    /// while loading marks the checkpoint unusable
    /// ([`RestoredCheckpoint::corrupt`](crate::checkpoint::restore::RestoredCheckpoint::corrupt)):
    /// the attempt is abandoned before any record is processed and, unless
    /// the checkpoint was named explicitly, the next older one is restored.
    /// False for a checkpoint that does not fit the job (the user's to fix:
    /// the restore fails) and for weir's own faults.
    pub fn unusable(&self) -> bool {
        match self {
            Self::Incomplete { .. }
            | Self::Snapshot(_)
            | Self::SegmentOutside { .. }
            | Self::Truncated { .. }
            | Self::Block { .. }
            | Self::MalformedBlock { .. }
            | Self::MisplacedEntry { .. }
            | Self::MalformedListBlock { .. }
            | Self::UnknownSubtask { .. }
            | Self::IdMismatch { .. } => true,
            Self::NotACheckpoint { .. }
            | Self::Foreign { .. }
            | Self::NonRestoredState { .. }
            | Self::OtherJob { .. }
            | Self::MaxParallelism { .. }
            | Self::Rescale { .. }
            | Self::ChannelStateRescale { .. }
            | Self::ChannelInputs { .. }
            | Self::Redistribution { .. }
            | Self::SegmentNotOpened { .. }
            | Self::VerifyPanicked { .. } => false,
            Self::Operator { source, .. } => source.unusable(),
        }
    }

    /// Whose fault it is: the outside world's for an unusable checkpoint,
    /// the user's for one that does not fit the job, ours for a broken
    /// invariant.
    pub fn fault(&self) -> Fault {
        match self {
            Self::Operator { source, .. } => source.fault(),
            Self::SegmentNotOpened { .. } | Self::VerifyPanicked { .. } => Fault::Ours,
            e if e.unusable() => Fault::Outside,
            _ => Fault::User,
        }
    }

    /// Whether restoring the same checkpoint again can help: only after an
    /// I/O error (a file that could not be opened or read) that may pass
    /// ([`io_retryable`]).
    pub fn retryable(&self) -> bool {
        match self {
            Self::Snapshot(e) | Self::Block { source: e, .. } => {
                matches!(&**e, SnapshotError::Io { source, .. } if io_retryable(source))
            }
            Self::Operator { source, .. } => source.retryable(),
            _ => false,
        }
    }
}
