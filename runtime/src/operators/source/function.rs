//! What a source is: Flink's replayable source, polled for records by its
//! task.
//!
//! A [`Source`] emits records into its chain when polled, at most a budget
//! per poll, and stops early when the chain is unavailable (backpressure), so
//! that a worker never blocks inside a source while its own input channels
//! need draining. A bounded source returns [`SourcePoll::Finished`]; the task
//! then finishes the chain, which sends end-of-partition downstream.

use std::time::Instant;

use crate::chain::control::Collector;
pub use crate::core::wakeup::SourceWakeup;

/// What a [`Source::poll_next`] call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourcePoll {
    /// Emitted this many records (0 if the chain was unavailable).
    Emitted(usize),
    /// Nothing to emit before `until` (pacing), or until woken if `None`.
    Idle {
        /// When to poll again.
        until: Option<Instant>,
    },
    /// The source is exhausted: the partition ends.
    Finished,
}

/// A source subtask.
///
/// Sources are *replayable*, as exactly-once checkpoints need: at a
/// checkpoint barrier the runtime asks for the position after the last
/// emitted record ([`Source::snapshot_position`]); after a failure the
/// source is rewound to the position of the restored checkpoint
/// ([`Source::restore_position`]) and emits the same records again.
pub trait Source: 'static {
    /// Records produced.
    type Out;
    /// Emits up to `budget` records into `out`, checking
    /// `out.is_available()` before each one.
    fn poll_next<C: Collector<Self::Out>>(&mut self, out: &mut C, budget: usize) -> SourcePoll;

    /// The position just after the last record emitted, opaque to the
    /// runtime; stored in the checkpoint whose barrier follows that record.
    fn snapshot_position(&mut self) -> Vec<u8>;

    /// Rewinds to a position returned by [`Source::snapshot_position`] of
    /// the same subtask. Called once, before the first `poll_next`. An error
    /// (a position this source cannot resume from) fails the restore.
    fn restore_position(&mut self, position: &[u8]) -> Result<(), String>;

    /// Hands the source's operator states to `states`, for snapshots and
    /// restores (see [`crate::state::operator`]). A source whose position
    /// is a list of splits keeps them there: they are then redistributed
    /// when the parallelism changes (the source may rescale), and its
    /// `snapshot_position` returns no bytes (see
    /// [`NumberSequenceSource`](crate::operators::source::split::NumberSequenceSource)).
    /// A restore fills the states before `restore_position`.
    fn visit_state(&mut self, states: &mut crate::state::visitor::OperatorStates<'_>) {
        let _ = states;
    }

    /// A restore filled the states [`Source::visit_state`] lists: called
    /// once, after that and before [`Source::restore_position`] (never on
    /// a fresh start). A source whose splits are union list state gets
    /// every old subtask's splits there and takes its share here (see
    /// [`StridedSplits`](crate::operators::source::strided::StridedSplits),
    /// the way Flink's union list state is used). An error fails the
    /// restore ([`Source::is_retryable`] says whether a restart may help).
    ///
    /// A source that wraps another must forward this call (and
    /// `visit_state`) to it: with the default, the inner source would keep
    /// every old subtask's splits after a rescale and emit them again.
    fn initialize_restored_state(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// The source starts reading: called once on its worker, after any
    /// restore ([`Source::restore_position`]) and before the first
    /// `poll_next` (Flink's `SourceReader#start`). A source that reads
    /// through a thread of its own (a network client, say) starts it here,
    /// from the restored position, and has that thread call
    /// [`SourceWakeup::wake`] whenever it hands over records, so that a
    /// source that returned [`SourcePoll::Idle`] `{ until: None }` is
    /// polled again at once. The default does nothing.
    fn open(&mut self, wakeup: SourceWakeup) {
        let _ = wakeup;
    }

    /// Checkpoint `checkpoint_id` (and every earlier one) is complete: a
    /// source may tell its upstream how far it has read (a Kafka source
    /// commits its offsets to the consumer group, for monitoring only). The
    /// default does nothing.
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        let _ = checkpoint_id;
    }

    /// The error [`Source::poll_next`] met and could not return (an input
    /// that cannot be read), if any: a source that meets one returns
    /// [`SourcePoll::Idle`] and keeps it for this call, which its task makes
    /// whenever `poll_next` returns `Idle`; the task then fails with it, no
    /// panic. The default has none.
    fn check(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Whether `error`, just returned by [`Source::restore_position`] or
    /// [`Source::check`], may pass when the job restarts (an I/O error):
    /// the restart strategy then
    /// decides. `false` fails the job at once, without the restart
    /// strategy: for an error a restart would meet again (a position from
    /// another source, an input file that changed). The default says it
    /// may, as Flink restarts after any exception.
    fn is_retryable(&self, error: &str) -> bool {
        let _ = error;
        true
    }
}

/// Decodes the position of a source whose subtask emits records
/// `first, first + step, ...` (the partitioning of every WORKLOADS.md
/// source): the next record's index, which must be one of this subtask's.
pub fn decode_strided_position(position: &[u8], first: u64, step: u64) -> Result<u64, String> {
    let next = decode_u64_position(position)?;
    if next % step != first % step {
        return Err(format!(
            "position {next} is not a record of this subtask (records {} mod {step})",
            first % step
        ));
    }
    Ok(next)
}

/// Decodes a position made of one little-endian `u64` (the record index
/// most sources resume from); the error names what is wrong.
pub fn decode_u64_position(position: &[u8]) -> Result<u64, String> {
    let bytes: [u8; 8] = position.try_into().map_err(|_| {
        format!(
            "expected an 8-byte position, found {} bytes",
            position.len()
        )
    })?;
    Ok(u64::from_le_bytes(bytes))
}
