//! Barrier alignment of one input gate: [`BarrierAligner`] decides what
//! each checkpoint barrier, end of input and passing moment means for the
//! gate, so that the operators behind it see one snapshot call per
//! checkpoint. It follows Flink's `SingleCheckpointBarrierHandler` and its
//! `BarrierHandlerState`s (waiting for the first barrier, collecting
//! barriers, aligned or unaligned, and the alternating states of the
//! aligned checkpoint timeout); at-least-once snapshots at the last barrier
//! as Flink's `CheckpointBarrierTracker` does, but tracks one checkpoint at
//! a time. Like RisingWave's `barrier_align` and Arroyo's
//! `CheckpointCounter`, it is one small type beside the reading loop, not
//! fields inside it.
//!
//! The aligner is a pure state machine: it never touches a channel or a
//! buffer, and it is handed the time (`Instant` arguments; the wall clock,
//! read only to place a trigger's timestamp on the monotonic clock, can be
//! replaced in tests). The gate tells it what arrived on which input and
//! when, and asks it what to do: whether an input is blocked, whether a
//! barrier starts a snapshot, is waited on or is stale, whether an
//! alignment switches to unaligned. The data itself stays in the gate,
//! which hands the aligner the records an unaligned barrier overtook.
//!
//! # Modes
//!
//! How barriers are treated is the gate's [`BarrierMode`]:
//!
//! - **At least once**: nothing is held back; the snapshot is taken when the
//!   barrier arrived on every input.
//! - **Aligned** (exactly once): an input whose barrier `n` arrived is
//!   blocked until barrier `n` arrived on every input, so the snapshot
//!   reflects exactly the records before the barrier on every input.
//! - **Unaligned** (exactly once): the first barrier `n` on any input — on
//!   the channel's priority path, ahead of the data, or in band — takes the
//!   snapshot at once. The data that precedes barrier `n` on each input but
//!   was not processed yet is then *captured*, input by input, until every
//!   input's barrier arrived (or the input ended); the aligner keeps which
//!   inputs still owe data and the captured records, and offers the
//!   finished [`ChannelState`] once. A barrier behind the end of its
//!   input's data (the final checkpoint's) stays aligned: nothing can
//!   overtake it.
//! - **Aligned with a timeout**: aligned, but an alignment that lasts longer
//!   than the timeout switches to unaligned: the snapshot is taken then, the
//!   inputs whose barrier arrived are released and the others are captured
//!   up to their barrier. The timeout runs from the checkpoint's trigger
//!   (Flink measures a checkpoint's start delay against it), and the switch
//!   comes early when the data waiting on the inputs would take longer
//!   than the rest of the timeout to drain at the gate's measured rate
//!   ([`crate::exchange::throughput`]): waiting could only end in the same
//!   switch, later. A priority barrier (its sender timed out waiting for
//!   credit) switches at once.
//!
//! The mode is the job's, but a savepoint's barrier
//! ([`weir_net::BarrierKind::Savepoint`]) is aligned in every exactly-once
//! mode ([`BarrierMode::for_barrier`]): it blocks the inputs it arrived on,
//! never starts a capture and never times out, so a savepoint holds no
//! channel state. Its senders never send it overtaking either.
//!
//! In every mode a newer barrier abandons an older alignment or capture (a
//! source skipped that checkpoint, so it cannot complete here), late copies
//! of older barriers are dropped, and an input that ended its partition
//! counts as aligned and has nothing to capture.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use weir_net::{ChannelEvent, CheckpointBarrier};

use crate::checkpoint::signals::CheckpointSignals;
use crate::core::barrier::BarrierMode;

/// A barrier the task must snapshot now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlignedBarrier {
    /// The barrier.
    pub barrier: CheckpointBarrier,
    /// When its first copy arrived.
    pub first_at: Instant,
    /// From the first copy to the snapshot.
    pub alignment: Duration,
    /// The snapshot is unaligned: the gate is capturing the data the
    /// barrier overtook; the task completes its snapshot with the
    /// [`ChannelState`] of
    /// [`InputGate::take_channel_state`](crate::exchange::gate::InputGate::take_channel_state).
    pub unaligned: bool,
}

/// The data an unaligned checkpoint's barrier overtook on each input of a
/// gate: per input channel, the serialized records, in order.
#[derive(Debug, PartialEq, Eq)]
pub struct ChannelState {
    /// The checkpoint.
    pub checkpoint: u64,
    /// Per input channel (sending subtask), its records' bytes.
    pub channels: Vec<Vec<u8>>,
}

/// What an in-band barrier, taken in its turn, means for the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierAction {
    /// A late copy of a checkpoint already snapshotted or given up, or one
    /// older than the checkpoint in progress: drop it.
    Stale,
    /// The barrier of the checkpoint being captured: its input's data before
    /// it is now all captured.
    Captured,
    /// Barrier `n` is still due on other inputs. In exactly-once mode its
    /// input is blocked until then.
    Wait,
    /// Every input delivered the barrier or ended: snapshot now, then call
    /// [`BarrierAligner::snapshot_taken`].
    Snapshot(AlignedBarrier),
    /// An unaligned snapshot starts: snapshot now; first hand over what the
    /// gate holds of the inputs being captured
    /// ([`BarrierAligner::capture_records`]), then mark the barrier's input
    /// captured ([`BarrierAligner::input_captured`]).
    StartCapture(AlignedBarrier),
}

/// What a priority barrier (one that overtook its input's data) means for
/// the gate. In every case the gate queues the events before the barrier's
/// position and those it overtook, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriorityAction {
    /// A late copy: the queued events are not captured.
    Stale,
    /// Of the checkpoint being captured: capture the queued events
    /// ([`BarrierAligner::capture_records`]), then mark the input captured.
    Capture,
    /// An unaligned snapshot starts: snapshot now; hand over what the gate
    /// already holds of the inputs being captured, then proceed as for
    /// [`PriorityAction::Capture`].
    StartCapture(AlignedBarrier),
}

/// Barrier `barrier` being aligned: which inputs delivered it.
#[derive(Debug)]
struct Alignment {
    barrier: CheckpointBarrier,
    first_at: Instant,
    arrived: Box<[bool]>,
    /// With an aligned checkpoint timeout: when it switches to unaligned.
    deadline: Option<Instant>,
}

/// The channel state of an unaligned checkpoint being captured.
#[derive(Debug)]
struct Capture {
    barrier: CheckpointBarrier,
    /// Per input: everything before the barrier is processed or captured.
    done: Box<[bool]>,
    open: usize,
    bytes: Box<[Vec<u8>]>,
}

/// The barrier alignment of one gate (see the module doc): a state machine
/// over the gate's inputs, told of barriers and ends of input, asked what
/// to do.
#[derive(Debug)]
pub struct BarrierAligner {
    mode: BarrierMode,
    /// The newest checkpoint snapshotted here: barriers up to it are stale.
    last_barrier: u64,
    aligning: Option<Alignment>,
    capture: Option<Capture>,
    /// A finished capture (`Ok`) or the id of an abandoned one (`Err`).
    outcome: Option<Result<ChannelState, u64>>,
    blocked: Box<[bool]>,
    /// Inputs that ended their partition: aligned, nothing to capture.
    ended: Box<[bool]>,
    /// Inputs that delivered their end of data.
    data_ended: Box<[bool]>,
    /// With an aligned checkpoint timeout: the triggers, so a checkpoint
    /// can time out before any of its barriers arrived.
    signals: Option<Arc<CheckpointSignals>>,
    /// Milliseconds since the Unix epoch, the clock of a barrier's trigger
    /// time.
    wall_clock: fn() -> u64,
}

impl BarrierAligner {
    /// The alignment of `inputs` inputs in `mode`.
    pub fn new(inputs: usize, mode: BarrierMode) -> Self {
        Self {
            mode,
            last_barrier: 0,
            aligning: None,
            capture: None,
            outcome: None,
            blocked: vec![false; inputs].into_boxed_slice(),
            ended: vec![false; inputs].into_boxed_slice(),
            data_ended: vec![false; inputs].into_boxed_slice(),
            signals: None,
            wall_clock: unix_now_ms,
        }
    }

    /// Lets the aligner see checkpoint triggers (with an aligned checkpoint
    /// timeout): a checkpoint whose alignment cannot finish within the
    /// timeout switches to unaligned without waiting for a barrier.
    pub fn with_trigger_signals(mut self, signals: Arc<CheckpointSignals>) -> Self {
        self.signals = Some(signals);
        self
    }

    /// Reads trigger times against `unix_ms` (milliseconds since the Unix
    /// epoch) instead of the system clock.
    #[cfg(test)]
    pub(crate) fn with_wall_clock(mut self, unix_ms: fn() -> u64) -> Self {
        self.wall_clock = unix_ms;
        self
    }

    /// The barrier mode.
    pub fn mode(&self) -> BarrierMode {
        self.mode
    }

    /// True while `input` must not be read: its barrier of the checkpoint
    /// being aligned arrived (exactly-once, aligned).
    #[inline]
    pub fn is_blocked(&self, input: usize) -> bool {
        self.blocked[input]
    }

    /// True while an unaligned checkpoint's channel state is being captured.
    #[inline]
    pub fn capture_in_progress(&self) -> bool {
        self.capture.is_some()
    }

    /// True while `input`'s data before the barrier being captured is still
    /// coming: what the gate takes from it is overtaken data.
    pub fn is_capturing(&self, input: usize) -> bool {
        self.capture.as_ref().is_some_and(|k| !k.done[input])
    }

    /// An in-band barrier on `input`, in its turn, at `now`.
    pub fn on_barrier(
        &mut self,
        input: usize,
        barrier: CheckpointBarrier,
        now: Instant,
    ) -> BarrierAction {
        if self
            .capture
            .as_ref()
            .is_some_and(|k| k.barrier.id == barrier.id)
        {
            self.input_captured(input);
            return BarrierAction::Captured;
        }
        if barrier.id <= self.last_barrier || self.is_older_than_current(barrier.id) {
            return BarrierAction::Stale; // an aborted checkpoint's late copy
        }
        // A barrier behind the end of its input's data (the final
        // checkpoint's) is aligned: nothing can overtake it, and everything
        // before it is processed before the snapshot. So is a savepoint's.
        let mode = self.mode.for_barrier(barrier.kind);
        if mode == BarrierMode::Unaligned && !self.data_ended[input] {
            self.abandon_older(barrier.id);
            return BarrierAction::StartCapture(self.start_capture(barrier, now, now));
        }
        if self
            .aligning
            .as_ref()
            .is_some_and(|a| barrier.id > a.barrier.id)
        {
            // A newer checkpoint overtook one that cannot complete here any
            // more (a source skipped it): give the older one up.
            self.blocked.fill(false);
            self.aligning = None;
        }
        self.abandon_older(barrier.id);
        let n = self.blocked.len();
        let wall_clock = self.wall_clock;
        let a = self.aligning.get_or_insert_with(|| Alignment {
            barrier,
            first_at: now,
            arrived: vec![false; n].into_boxed_slice(),
            deadline: match mode {
                BarrierMode::AlignedWithTimeout(t) => {
                    Some(alignment_deadline_at(&barrier, t, now, wall_clock()))
                }
                _ => None,
            },
        });
        a.arrived[input] = true;
        if mode != BarrierMode::AtLeastOnce {
            self.blocked[input] = true;
        }
        match self.aligned(now) {
            Some(b) => BarrierAction::Snapshot(b),
            None => BarrierAction::Wait,
        }
    }

    /// A priority barrier, taken at `now` (from any input: which one does
    /// not change the decision; the gate marks it captured).
    pub fn on_priority_barrier(
        &mut self,
        barrier: CheckpointBarrier,
        now: Instant,
    ) -> PriorityAction {
        let id = barrier.id;
        debug_assert!(
            !barrier.kind.must_align(),
            "a savepoint's barrier never overtakes: {barrier:?}"
        );
        if self.capture.as_ref().is_some_and(|k| k.barrier.id == id) {
            return PriorityAction::Capture;
        }
        if id <= self.last_barrier || self.is_older_than_current(id) {
            return PriorityAction::Stale;
        }
        self.abandon_older(id);
        let first_at = match &self.aligning {
            Some(a) if a.barrier.id == id => a.first_at,
            _ => now,
        };
        PriorityAction::StartCapture(self.start_capture(barrier, first_at, now))
    }

    /// An event the gate took out of `input`'s ring ahead of its turn, to
    /// find the input's barrier sooner (barrier modes that may overtake).
    /// Captures its records while the input's data before the barrier
    /// being captured is still coming; that checkpoint's in-band barrier
    /// ends it. Returns whether the gate queues the event (all but that
    /// barrier).
    pub fn on_early_event(&mut self, input: usize, event: &ChannelEvent) -> bool {
        let waiting = self
            .capture
            .as_ref()
            .filter(|k| !k.done[input])
            .map(|k| k.barrier.id);
        let Some(id) = waiting else {
            return true;
        };
        match event {
            ChannelEvent::Barrier(b) if b.id == id => {
                self.input_captured(input);
                false
            }
            ChannelEvent::Barrier(b) if b.id > id => {
                // A newer checkpoint's barrier before this one's: this
                // checkpoint cannot complete here.
                self.abandon_older(b.id);
                true
            }
            ChannelEvent::EndOfPartition => {
                self.input_captured(input);
                true
            }
            ChannelEvent::Buffer(b) => {
                self.capture_records(input, b.as_bytes());
                true
            }
            _ => true,
        }
    }

    /// Appends `records`, data of `input` that the barrier being captured
    /// overtook, to its channel state (if a capture is running).
    pub fn capture_records(&mut self, input: usize, records: &[u8]) {
        if let Some(k) = self.capture.as_mut() {
            k.bytes[input].extend_from_slice(records);
        }
    }

    /// `input` has no more data before the captured barrier; once no input
    /// has, the channel state is complete.
    pub fn input_captured(&mut self, input: usize) {
        if let Some(k) = self.capture.as_mut() {
            if !k.done[input] {
                k.done[input] = true;
                k.open -= 1;
            }
        }
        self.finish_capture_if_done();
    }

    /// `input` delivered its end of data: a barrier behind it stays aligned,
    /// and no checkpoint switches to unaligned before its barriers arrive.
    pub fn on_end_of_data(&mut self, input: usize) {
        self.data_ended[input] = true;
    }

    /// `input` ended its partition at `now`: it counts as aligned from now
    /// on and has nothing more to capture. Returns the snapshot this
    /// completes, if any.
    pub fn on_end_of_partition(&mut self, input: usize, now: Instant) -> Option<AlignedBarrier> {
        self.ended[input] = true;
        self.data_ended[input] = true;
        self.input_captured(input);
        self.aligned(now)
    }

    /// With an aligned checkpoint timeout, switches the newest triggered
    /// checkpoint to unaligned once its alignment has taken, or is bound to
    /// take, longer than the timeout; returns the snapshot to take then
    /// (the gate hands over what it holds of the inputs being captured, as
    /// for [`BarrierAction::StartCapture`]).
    ///
    /// The timeout runs from the trigger. The aligner switches when it is
    /// over, or as soon as the data in flight on its inputs would take
    /// longer than the rest of the timeout to drain at the rate the gate
    /// reads (`drain`, see [`crate::exchange::throughput`]): waiting could
    /// only end in the same switch, later. A checkpoint may switch before any of
    /// its barriers arrived, then as if they had arrived at `started`: the
    /// gate snapshots at once and captures every input up to its barrier,
    /// which is Chandy and Lamport's spontaneous recording of state.
    ///
    /// `now` and `drain` are asked only when a checkpoint could switch, so
    /// that a gate can look every few buffers without reading the clock or
    /// counting its queues.
    pub fn check_timeout(
        &mut self,
        started: Instant,
        now: impl FnOnce() -> Instant,
        drain: impl FnOnce() -> Duration,
    ) -> Option<AlignedBarrier> {
        let BarrierMode::AlignedWithTimeout(t) = self.mode else {
            return None;
        };
        let (barrier, first_at, due, now) = match (&self.aligning, &self.signals) {
            (Some(a), _) => (a.barrier, a.first_at, a.deadline?, now()),
            (None, Some(s)) => {
                let b = s.triggered_barrier();
                if b.id <= self.last_barrier
                    || b.id == s.final_id()
                    || b.kind.must_align()
                    || self.capture.is_some()
                    || self.data_ended.iter().any(|&d| d)
                {
                    return None;
                }
                let now = now();
                let due = alignment_deadline_at(&b, t, now, (self.wall_clock)());
                (b, started, due, now)
            }
            (None, None) => return None,
        };
        let drained_at = now.checked_add(drain());
        if now < due && drained_at.is_some_and(|at| at < due) {
            return None;
        }
        tracing::trace!(
            target: crate::core::log::CHECKPOINT,
            checkpoint = barrier.id,
            "gate: alignment {}",
            if now < due {
                "would time out"
            } else {
                "timed out"
            }
        );
        Some(self.start_capture(barrier, first_at, now))
    }

    /// When the gate must be pumped even without input: the end of an
    /// alignment's timeout, or of a triggered checkpoint's before any of its
    /// barriers arrived. `now` is asked only for the latter.
    pub fn deadline(&self, now: impl FnOnce() -> Instant) -> Option<Instant> {
        if let Some(a) = &self.aligning {
            return a.deadline;
        }
        let (BarrierMode::AlignedWithTimeout(t), Some(s)) = (self.mode, &self.signals) else {
            return None;
        };
        let b = s.triggered_barrier();
        (b.id > self.last_barrier && !b.kind.must_align() && self.capture.is_none())
            .then(|| alignment_deadline_at(&b, t, now(), (self.wall_clock)()))
    }

    /// The task took the snapshot the aligner asked for: unblock every input.
    pub fn snapshot_taken(&mut self) {
        if let Some(a) = self.aligning.take() {
            self.last_barrier = self.last_barrier.max(a.barrier.id);
        }
        self.blocked.fill(false);
    }

    /// The channel state of an unaligned snapshot, once every input's data
    /// before the barrier has been captured (`Ok`), or the id of a
    /// checkpoint whose capture was abandoned for a newer one (`Err`): its
    /// snapshot cannot complete. Only the newest outcome is kept.
    pub fn take_channel_state(&mut self) -> Option<Result<ChannelState, u64>> {
        self.outcome.take()
    }

    /// The current alignment, if every input delivered its barrier or
    /// ended its partition.
    fn aligned(&self, now: Instant) -> Option<AlignedBarrier> {
        let a = self.aligning.as_ref()?;
        let all = a
            .arrived
            .iter()
            .zip(self.ended.iter())
            .all(|(&arrived, &ended)| arrived || ended);
        all.then(|| AlignedBarrier {
            barrier: a.barrier,
            first_at: a.first_at,
            alignment: now.saturating_duration_since(a.first_at),
            unaligned: false,
        })
    }

    /// True if a newer checkpoint than `id` is being aligned or captured.
    fn is_older_than_current(&self, id: u64) -> bool {
        self.aligning.as_ref().is_some_and(|a| id < a.barrier.id)
            || self.capture.as_ref().is_some_and(|k| id < k.barrier.id)
    }

    /// Gives up a capture older than checkpoint `id`.
    fn abandon_older(&mut self, id: u64) {
        if let Some(k) = self.capture.as_ref().filter(|k| k.barrier.id < id) {
            self.outcome = Some(Err(k.barrier.id));
            self.capture = None;
        }
    }

    /// Starts capturing the channel state of `barrier`'s checkpoint and
    /// returns the snapshot to take now. Inputs that ended, and those whose
    /// barrier already arrived in an alignment of the same checkpoint, have
    /// nothing to capture; every input is released.
    fn start_capture(
        &mut self,
        barrier: CheckpointBarrier,
        first_at: Instant,
        now: Instant,
    ) -> AlignedBarrier {
        let mut done: Box<[bool]> = self.ended.clone();
        if let Some(a) = self.aligning.take() {
            if a.barrier.id == barrier.id {
                for (d, arrived) in done.iter_mut().zip(a.arrived.iter()) {
                    *d |= arrived;
                }
            }
        }
        self.blocked.fill(false);
        let bytes: Box<[Vec<u8>]> = done.iter().map(|_| Vec::new()).collect();
        let open = done.iter().filter(|d| !**d).count();
        self.last_barrier = self.last_barrier.max(barrier.id);
        self.capture = Some(Capture {
            barrier,
            done,
            open,
            bytes,
        });
        self.finish_capture_if_done();
        AlignedBarrier {
            barrier,
            first_at,
            alignment: now.saturating_duration_since(first_at),
            unaligned: true,
        }
    }

    fn finish_capture_if_done(&mut self) {
        if self.capture.as_ref().is_some_and(|k| k.open == 0) {
            let k = self.capture.take().expect("checked");
            tracing::trace!(
                target: crate::core::log::CHECKPOINT,
                checkpoint = k.barrier.id,
                bytes = k.bytes.iter().map(Vec::len).sum::<usize>(),
                "gate: channel state captured"
            );
            self.outcome = Some(Ok(ChannelState {
                checkpoint: k.barrier.id,
                channels: k.bytes.into_vec(),
            }));
        }
    }
}

/// When the alignment of `barrier`'s checkpoint times out: `timeout` after
/// the checkpoint was triggered (Flink measures the checkpoint's start
/// delay, from the trigger to the barrier's arrival, against the timeout).
pub fn alignment_deadline(barrier: &CheckpointBarrier, timeout: Duration) -> Instant {
    alignment_deadline_at(barrier, timeout, Instant::now(), unix_now_ms())
}

/// [`alignment_deadline`] seen at `now`, when the wall clock reads `unix_ms`
/// (milliseconds since the Unix epoch, the clock of the barrier's trigger
/// time).
pub fn alignment_deadline_at(
    barrier: &CheckpointBarrier,
    timeout: Duration,
    now: Instant,
    unix_ms: u64,
) -> Instant {
    let due_ms = barrier
        .timestamp_ms
        .saturating_add(timeout.as_millis() as u64);
    now + Duration::from_millis(due_ms.saturating_sub(unix_ms))
}

/// Milliseconds since the Unix epoch, 0 before it.
fn unix_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests;
