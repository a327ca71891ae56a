//! Tests of [`BarrierAligner`] without channels or a clock: what each mode
//! blocks, when it snapshots, what an unaligned snapshot captures, and when
//! an aligned checkpoint times out.

use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use weir_net::{ChannelEvent, CheckpointBarrier, NetworkBuffer};

use super::*;
use crate::checkpoint::signals::CheckpointSignals;
use crate::exchange::throughput::Throughput;

/// The wall clock of these tests, in ms since the epoch.
const WALL_MS: u64 = 1_700_000_000_000;

fn wall() -> u64 {
    WALL_MS
}

/// Barrier `id`, triggered now on the tests' wall clock.
fn barrier(id: u64) -> CheckpointBarrier {
    CheckpointBarrier::checkpoint(id, WALL_MS)
}

/// A savepoint's barrier `id`, triggered now on the tests' wall clock.
fn savepoint(id: u64) -> CheckpointBarrier {
    CheckpointBarrier {
        kind: weir_net::BarrierKind::Savepoint,
        ..barrier(id)
    }
}

fn aligner(inputs: usize, mode: BarrierMode) -> BarrierAligner {
    BarrierAligner::new(inputs, mode).with_wall_clock(wall)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A buffer of these records, and its bytes.
fn buffer(records: &[u64]) -> (ChannelEvent, Vec<u8>) {
    let mut b = NetworkBuffer::with_capacity(1024);
    for r in records {
        assert!(b.try_append(r));
    }
    let bytes = b.as_bytes().to_vec();
    (ChannelEvent::Buffer(b), bytes)
}

fn blocked(a: &BarrierAligner, inputs: usize) -> Vec<bool> {
    (0..inputs).map(|i| a.is_blocked(i)).collect()
}

fn capturing(a: &BarrierAligner, inputs: usize) -> Vec<bool> {
    (0..inputs).map(|i| a.is_capturing(i)).collect()
}

fn snapshot(action: BarrierAction) -> AlignedBarrier {
    match action {
        BarrierAction::Snapshot(b) | BarrierAction::StartCapture(b) => b,
        other => panic!("expected a snapshot, got {other:?}"),
    }
}

#[test]
fn aligned_blocks_each_input_until_every_input_delivered_the_barrier() {
    let t0 = Instant::now();
    let mut a = aligner(3, BarrierMode::Aligned);
    assert_eq!(a.on_barrier(0, barrier(1), t0), BarrierAction::Wait);
    assert_eq!(blocked(&a, 3), [true, false, false]);
    assert_eq!(a.on_barrier(2, barrier(1), t0 + ms(1)), BarrierAction::Wait);
    assert_eq!(blocked(&a, 3), [true, false, true]);
    let b = snapshot(a.on_barrier(1, barrier(1), t0 + ms(3)));
    assert_eq!(
        b,
        AlignedBarrier {
            barrier: barrier(1),
            first_at: t0,
            alignment: ms(3),
            unaligned: false,
        }
    );
    // Held until the task has snapshotted, then every input is read again.
    assert_eq!(blocked(&a, 3), [true, true, true]);
    a.snapshot_taken();
    assert_eq!(blocked(&a, 3), [false, false, false]);
    // A late copy of barrier 1 is dropped: no second snapshot.
    assert_eq!(a.on_barrier(0, barrier(1), t0), BarrierAction::Stale);
    assert_eq!(blocked(&a, 3), [false, false, false]);
    assert!(
        a.take_channel_state().is_none(),
        "aligned: no channel state"
    );
    // The next checkpoint aligns the same way.
    assert_eq!(a.on_barrier(1, barrier(2), t0), BarrierAction::Wait);
    assert_eq!(a.on_barrier(0, barrier(2), t0), BarrierAction::Wait);
    assert_eq!(snapshot(a.on_barrier(2, barrier(2), t0)).barrier.id, 2);
}

#[test]
fn a_newer_barrier_abandons_an_older_alignment() {
    let t0 = Instant::now();
    let mut a = aligner(2, BarrierMode::Aligned);
    assert_eq!(a.on_barrier(0, barrier(1), t0), BarrierAction::Wait);
    // Input 1's source skipped checkpoint 1: barrier 2 comes first.
    assert_eq!(a.on_barrier(1, barrier(2), t0 + ms(1)), BarrierAction::Wait);
    assert_eq!(blocked(&a, 2), [false, true], "input 0 is released");
    let b = snapshot(a.on_barrier(0, barrier(2), t0 + ms(2)));
    assert_eq!((b.barrier.id, b.first_at), (2, t0 + ms(1)));
    a.snapshot_taken();
    // Checkpoint 1 never snapshots here: its late barrier is stale.
    assert_eq!(a.on_barrier(1, barrier(1), t0), BarrierAction::Stale);
    assert_eq!(blocked(&a, 2), [false, false]);
}

#[test]
fn an_ended_input_counts_as_aligned() {
    let t0 = Instant::now();
    let mut a = aligner(3, BarrierMode::Aligned);
    assert_eq!(a.on_end_of_partition(2, t0), None, "nothing to align yet");
    assert_eq!(a.on_barrier(0, barrier(1), t0), BarrierAction::Wait);
    // The last input still owing the barrier ends: the alignment is done.
    let b = a.on_end_of_partition(1, t0 + ms(4)).expect("aligned");
    assert_eq!((b.barrier.id, b.alignment, b.unaligned), (1, ms(4), false));
    a.snapshot_taken();
    // From now on input 0 alone makes a checkpoint.
    assert_eq!(snapshot(a.on_barrier(0, barrier(2), t0)).barrier.id, 2);
}

#[test]
fn at_least_once_blocks_nothing_and_snapshots_once_at_the_last_barrier() {
    let t0 = Instant::now();
    let mut a = aligner(2, BarrierMode::AtLeastOnce);
    for id in 1..=3 {
        assert_eq!(a.on_barrier(1, barrier(id), t0), BarrierAction::Wait);
        assert_eq!(blocked(&a, 2), [false, false], "input 1 is read on");
        let b = snapshot(a.on_barrier(0, barrier(id), t0 + ms(1)));
        assert_eq!((b.barrier.id, b.unaligned), (id, false));
        a.snapshot_taken();
        assert_eq!(a.on_barrier(0, barrier(id), t0), BarrierAction::Stale);
    }
}

#[test]
fn unaligned_snapshots_at_the_first_barrier_and_captures_the_rest_up_to_theirs() {
    let t0 = Instant::now();
    let mut a = aligner(3, BarrierMode::Unaligned);
    let BarrierAction::StartCapture(b) = a.on_barrier(1, barrier(1), t0) else {
        panic!("the first barrier starts an unaligned snapshot");
    };
    assert_eq!((b.barrier.id, b.unaligned), (1, true));
    assert_eq!(blocked(&a, 3), [false, false, false], "nothing is held");
    assert_eq!(capturing(&a, 3), [true, true, true]);
    // The gate hands over what it held (of input 0), then input 1, whose
    // barrier this was, owes nothing more.
    a.capture_records(0, b"held");
    a.input_captured(1);
    assert_eq!(capturing(&a, 3), [true, false, true]);
    // What inputs 0 and 2 deliver before their barriers is captured.
    let (ten, ten_bytes) = buffer(&[10]);
    assert!(a.on_early_event(2, &ten), "queued to be processed too");
    let (one, one_bytes) = buffer(&[1]);
    assert!(a.on_early_event(0, &one));
    assert!(
        !a.on_early_event(0, &ChannelEvent::Barrier(barrier(1))),
        "the barrier that ends a capture is not processed again"
    );
    assert_eq!(capturing(&a, 3), [false, false, true]);
    assert!(a.take_channel_state().is_none(), "input 2 still owes data");
    // After its barrier, an input's data is not captured.
    assert_eq!(
        a.on_barrier(2, barrier(1), t0 + ms(2)),
        BarrierAction::Captured
    );
    let (late, _) = buffer(&[11]);
    assert!(a.on_early_event(2, &late));
    let state = a
        .take_channel_state()
        .expect("complete")
        .expect("not abandoned");
    let mut zero = b"held".to_vec();
    zero.extend_from_slice(&one_bytes);
    assert_eq!(
        state,
        ChannelState {
            checkpoint: 1,
            channels: vec![zero, Vec::new(), ten_bytes],
        }
    );
    assert!(a.take_channel_state().is_none(), "offered once");
    assert_eq!(a.on_barrier(0, barrier(1), t0), BarrierAction::Stale);
}

#[test]
fn a_priority_barrier_starts_a_capture_and_its_copies_join_it() {
    let t0 = Instant::now();
    let mut a = aligner(2, BarrierMode::Unaligned);
    let PriorityAction::StartCapture(b) = a.on_priority_barrier(barrier(1), t0) else {
        panic!("the first barrier starts the snapshot");
    };
    assert_eq!((b.barrier.id, b.unaligned, b.first_at), (1, true, t0));
    a.input_captured(0);
    assert_eq!(
        a.on_priority_barrier(barrier(1), t0),
        PriorityAction::Capture
    );
    a.input_captured(1);
    let state = a.take_channel_state().unwrap().unwrap();
    assert_eq!(state.checkpoint, 1);
    assert_eq!(
        a.on_priority_barrier(barrier(1), t0),
        PriorityAction::Stale,
        "a late copy"
    );
}

#[test]
fn a_newer_barrier_abandons_an_unfinished_capture() {
    let t0 = Instant::now();
    let mut a = aligner(2, BarrierMode::Unaligned);
    assert!(matches!(
        a.on_priority_barrier(barrier(1), t0),
        PriorityAction::StartCapture(_)
    ));
    a.input_captured(0);
    // Checkpoint 1 never reaches input 1: checkpoint 2 overtakes it.
    assert!(a.on_early_event(1, &ChannelEvent::Barrier(barrier(2))));
    assert_eq!(a.take_channel_state(), Some(Err(1)), "1 cannot complete");
    let b = snapshot(a.on_barrier(1, barrier(2), t0));
    assert_eq!((b.barrier.id, b.unaligned), (2, true));
    assert_eq!(a.on_priority_barrier(barrier(1), t0), PriorityAction::Stale);
}

#[test]
fn a_barrier_behind_the_end_of_data_stays_aligned_when_unaligned() {
    let t0 = Instant::now();
    let mut a = aligner(2, BarrierMode::Unaligned);
    a.on_end_of_data(0);
    a.on_end_of_data(1);
    // The final checkpoint: aligned, so everything before it is processed.
    assert_eq!(a.on_barrier(0, barrier(1), t0), BarrierAction::Wait);
    assert_eq!(blocked(&a, 2), [true, false]);
    let b = snapshot(a.on_barrier(1, barrier(1), t0));
    assert!(!b.unaligned);
}

const TIMEOUT: Duration = Duration::from_millis(50);

fn no_drain() -> Duration {
    Duration::ZERO
}

#[test]
fn the_timeout_switches_an_alignment_to_unaligned_at_the_deadline() {
    let t0 = Instant::now();
    let mut a = aligner(2, BarrierMode::AlignedWithTimeout(TIMEOUT));
    assert_eq!(a.on_barrier(0, barrier(1), t0), BarrierAction::Wait);
    assert_eq!(
        a.deadline(|| t0),
        Some(t0 + TIMEOUT),
        "50 ms after the trigger"
    );
    assert_eq!(a.check_timeout(t0, || t0 + ms(49), no_drain), None);
    assert_eq!(blocked(&a, 2), [true, false]);
    let b = a
        .check_timeout(t0 + ms(50), || t0 + ms(50), no_drain)
        .expect("switches at the deadline");
    assert_eq!((b.barrier.id, b.unaligned), (1, true));
    assert_eq!((b.first_at, b.alignment), (t0, ms(50)));
    // Input 0 is released; input 1 is captured up to its barrier.
    assert_eq!(blocked(&a, 2), [false, false]);
    assert_eq!(capturing(&a, 2), [false, true]);
    assert_eq!(a.deadline(|| t0), None);
    assert!(!a.on_early_event(1, &ChannelEvent::Barrier(barrier(1))));
    assert_eq!(
        a.take_channel_state(),
        Some(Ok(ChannelState {
            checkpoint: 1,
            channels: vec![Vec::new(), Vec::new()],
        }))
    );
}

/// A rate measured from 100 buffers of 1000 bytes in 10 ms: 10 MB/s.
fn ten_mb_per_s(t0: Instant) -> Throughput {
    let mut rate = Throughput::new(t0);
    for _ in 0..100 {
        rate.add(1000);
    }
    rate.sample(t0 + Throughput::PERIOD);
    rate
}

#[test]
fn the_timeout_switches_early_when_the_waiting_data_cannot_drain_in_time() {
    let t0 = Instant::now();
    let rate = ten_mb_per_s(t0);
    let mut a = aligner(2, BarrierMode::AlignedWithTimeout(TIMEOUT));
    assert_eq!(a.on_barrier(0, barrier(1), t0), BarrierAction::Wait);
    // 40 ms left; 450 buffers of 1000 bytes take 45 ms at 10 MB/s.
    let drain = rate.drain_time(450, 0);
    assert!(drain > ms(44) && drain < ms(46), "{drain:?}");
    let b = a
        .check_timeout(t0, || t0 + ms(10), || drain)
        .expect("waiting could only end in the same switch, later");
    assert!(b.unaligned);
    assert_eq!(b.alignment, ms(10));
}

#[test]
fn no_switch_when_the_waiting_data_drains_within_the_timeout() {
    let t0 = Instant::now();
    let rate = ten_mb_per_s(t0);
    let mut a = aligner(2, BarrierMode::AlignedWithTimeout(TIMEOUT));
    assert_eq!(a.on_barrier(0, barrier(1), t0), BarrierAction::Wait);
    // 40 ms left; 300 buffers and 50 000 bytes queued take 35 ms.
    let drain = rate.drain_time(300, 50_000);
    assert!(drain > ms(34) && drain < ms(36), "{drain:?}");
    assert_eq!(a.check_timeout(t0, || t0 + ms(10), || drain), None);
    // The alignment finishes in time: an aligned snapshot.
    let b = snapshot(a.on_barrier(1, barrier(1), t0 + ms(30)));
    assert!(!b.unaligned);
    assert!(a.take_channel_state().is_none());
}

#[test]
fn a_triggered_checkpoint_times_out_before_any_barrier_arrives() {
    let t0 = Instant::now();
    let timed_out = || {
        let signals = Arc::new(CheckpointSignals::new(0));
        let a = aligner(2, BarrierMode::AlignedWithTimeout(TIMEOUT))
            .with_trigger_signals(signals.clone());
        // Triggered 60 ms ago: its barriers are still behind data upstream.
        (a, signals, WALL_MS - 60)
    };
    let (mut a, signals, at) = timed_out();
    assert_eq!(a.deadline(|| t0), None, "nothing triggered");
    signals.trigger(1, at);
    assert_eq!(a.deadline(|| t0), Some(t0), "overdue");
    let b = a
        .check_timeout(t0, || t0 + ms(1), no_drain)
        .expect("snapshot without waiting for a barrier");
    assert_eq!((b.barrier.id, b.unaligned, b.first_at), (1, true, t0));
    assert_eq!(
        capturing(&a, 2),
        [true, true],
        "every input up to its barrier"
    );
    assert_eq!(a.check_timeout(t0, || t0 + ms(2), no_drain), None, "once");

    // Not the final checkpoint, nor once an input's data ended: those
    // barriers stay aligned.
    let (mut a, signals, at) = timed_out();
    signals.trigger_final(1, at);
    assert_eq!(a.check_timeout(t0, || t0, no_drain), None);
    let (mut a, signals, at) = timed_out();
    a.on_end_of_data(1);
    signals.trigger(1, at);
    assert_eq!(a.check_timeout(t0, || t0, no_drain), None);
}

#[test]
fn other_modes_never_time_out() {
    let t0 = Instant::now();
    for mode in [BarrierMode::Aligned, BarrierMode::AtLeastOnce] {
        let mut a = aligner(2, mode);
        assert_eq!(a.on_barrier(0, barrier(1), t0), BarrierAction::Wait);
        assert_eq!(a.deadline(|| t0), None);
        let late = t0 + Duration::from_secs(3600);
        assert_eq!(a.check_timeout(t0, || late, no_drain), None, "{mode:?}");
    }
}

#[test]
fn a_savepoint_aligns_under_unaligned_checkpoints_and_records_no_channel_state() {
    let t0 = Instant::now();
    let mut a = aligner(3, BarrierMode::Unaligned);
    assert_eq!(a.on_barrier(1, savepoint(1), t0), BarrierAction::Wait);
    assert_eq!(blocked(&a, 3), [false, true, false], "held back as aligned");
    assert!(!a.capture_in_progress(), "nothing is captured");
    assert_eq!(capturing(&a, 3), [false, false, false]);
    assert_eq!(
        a.on_barrier(0, savepoint(1), t0 + ms(1)),
        BarrierAction::Wait
    );
    assert_eq!(blocked(&a, 3), [true, true, false]);
    let b = snapshot(a.on_barrier(2, savepoint(1), t0 + ms(4)));
    assert_eq!(
        b,
        AlignedBarrier {
            barrier: savepoint(1),
            first_at: t0,
            alignment: ms(4),
            unaligned: false,
        }
    );
    a.snapshot_taken();
    assert_eq!(blocked(&a, 3), [false, false, false]);
    assert_eq!(a.take_channel_state(), None, "no channel state, ever");
    assert_eq!(a.on_barrier(0, savepoint(1), t0), BarrierAction::Stale);

    // An ordinary checkpoint after it is unaligned as configured.
    let BarrierAction::StartCapture(b) = a.on_barrier(2, barrier(2), t0 + ms(5)) else {
        panic!("a checkpoint's barrier still starts an unaligned snapshot");
    };
    assert!(b.unaligned);
}

#[test]
fn a_savepoint_abandons_an_older_capture_and_aligns() {
    let t0 = Instant::now();
    let mut a = aligner(2, BarrierMode::Unaligned);
    assert!(matches!(
        a.on_barrier(0, barrier(1), t0),
        BarrierAction::StartCapture(_)
    ));
    a.input_captured(0);
    // Input 0's savepoint barrier comes while input 1 still owes data of
    // checkpoint 1: that capture cannot complete, the savepoint aligns.
    assert_eq!(
        a.on_barrier(0, savepoint(2), t0 + ms(1)),
        BarrierAction::Wait
    );
    assert_eq!(a.take_channel_state(), Some(Err(1)));
    assert!(!a.capture_in_progress());
    assert_eq!(blocked(&a, 2), [true, false]);
    // Input 1's late copy of barrier 1 is stale; its savepoint barrier
    // completes the alignment.
    assert_eq!(
        a.on_barrier(1, barrier(1), t0 + ms(2)),
        BarrierAction::Stale
    );
    let b = snapshot(a.on_barrier(1, savepoint(2), t0 + ms(3)));
    assert_eq!((b.barrier.id, b.unaligned), (2, false));
    assert_eq!(a.take_channel_state(), None);
}

#[test]
fn a_savepoint_never_times_out_to_unaligned() {
    let t0 = Instant::now();
    let mut a = aligner(2, BarrierMode::AlignedWithTimeout(TIMEOUT));
    assert_eq!(a.on_barrier(0, savepoint(1), t0), BarrierAction::Wait);
    assert_eq!(a.deadline(|| t0), None, "no deadline to wake for");
    let late = t0 + Duration::from_secs(3600);
    let slow = || Duration::from_secs(3600);
    assert_eq!(a.check_timeout(t0, || late, slow), None);
    assert_eq!(blocked(&a, 2), [true, false]);
    let b = snapshot(a.on_barrier(1, savepoint(1), late));
    assert_eq!(
        (b.unaligned, b.alignment),
        (false, Duration::from_secs(3600))
    );

    // Nor before its first barrier arrives, though it was triggered long
    // ago: the stop's trigger is a savepoint's.
    let signals = Arc::new(CheckpointSignals::new(0));
    let mut a =
        aligner(2, BarrierMode::AlignedWithTimeout(TIMEOUT)).with_trigger_signals(signals.clone());
    signals.trigger_stop(1, WALL_MS - 60);
    assert_eq!(
        signals.triggered_barrier(),
        CheckpointBarrier {
            timestamp_ms: WALL_MS - 60,
            ..savepoint(1)
        }
    );
    assert_eq!(a.deadline(|| t0), None);
    assert_eq!(a.check_timeout(t0, || late, no_drain), None);
    // A stop that failed is withdrawn: the next checkpoint times out again.
    signals.cancel_stop();
    signals.trigger(2, WALL_MS - 60);
    assert_eq!(a.deadline(|| t0), Some(t0));
    let b = a
        .check_timeout(t0, || t0, no_drain)
        .expect("an ordinary checkpoint switches");
    assert_eq!(
        (b.barrier, b.unaligned),
        (CheckpointBarrier::checkpoint(2, WALL_MS - 60), true)
    );
}

proptest! {
    /// Aligned exactly-once: however the barriers of the inputs interleave
    /// (and whenever inputs end), every checkpoint is snapshotted exactly
    /// once, in order, when every input delivered its barrier or ended, and
    /// no input was read past its barrier before that. The same holds for
    /// savepoints' barriers in every exactly-once mode (unaligned, aligned
    /// with a timeout long past), which never leave channel state.
    #[test]
    fn any_interleaving_snapshots_each_checkpoint_once(
        inputs in prop::collection::vec((0u64..5, any::<bool>()), 1..5),
        schedule in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
        mode in 0usize..3,
        savepoints in any::<bool>(),
    ) {
        let t0 = Instant::now();
        let late = t0 + Duration::from_secs(3600);
        let (mode, kind) = match mode {
            0 if !savepoints => (BarrierMode::Aligned, weir_net::BarrierKind::Checkpoint),
            0 => (BarrierMode::Aligned, weir_net::BarrierKind::Savepoint),
            1 => (BarrierMode::Unaligned, weir_net::BarrierKind::Savepoint),
            _ => (BarrierMode::AlignedWithTimeout(TIMEOUT), weir_net::BarrierKind::Savepoint),
        };
        let barrier = |id| CheckpointBarrier { kind, ..barrier(id) };
        let n = inputs.len();
        let last = inputs.iter().map(|&(len, _)| len).max().unwrap_or(0);
        // Input i delivers barriers 1..=len, then ends if it has fewer than
        // the others (it would hold them up for ever) or if asked to.
        let mut events: Vec<Vec<Option<u64>>> = inputs
            .iter()
            .map(|&(len, end)| {
                let mut e: Vec<Option<u64>> = (1..=len).map(Some).collect();
                if len < last || end {
                    e.push(None);
                }
                e.reverse();
                e
            })
            .collect();
        let mut a = aligner(n, mode);
        let mut delivered = vec![0u64; n];
        let mut ended = vec![false; n];
        let mut snapshots = Vec::new();
        let mut choices = schedule.into_iter();
        loop {
            let ready: Vec<usize> =
                (0..n).filter(|&i| !events[i].is_empty() && !a.is_blocked(i)).collect();
            if ready.is_empty() {
                break;
            }
            let i = match choices.next() {
                Some(pick) => ready[pick.index(ready.len())],
                None => ready[0],
            };
            let snapshot = match events[i].pop().expect("ready") {
                Some(id) => {
                    delivered[i] = id;
                    match a.on_barrier(i, barrier(id), t0) {
                        BarrierAction::Wait => {
                            prop_assert!(a.is_blocked(i));
                            None
                        }
                        BarrierAction::Snapshot(b) => Some(b),
                        other => {
                            prop_assert!(false, "unexpected {:?}", other);
                            None
                        }
                    }
                }
                None => {
                    ended[i] = true;
                    a.on_end_of_partition(i, t0)
                }
            };
            prop_assert_eq!(a.check_timeout(t0, || late, no_drain), None);
            prop_assert!(!a.capture_in_progress());
            prop_assert!(a.take_channel_state().is_none());
            if let Some(b) = snapshot {
                let id = b.barrier.id;
                prop_assert!(!b.unaligned);
                for j in 0..n {
                    prop_assert!(ended[j] || delivered[j] == id, "input {} at {}", j, delivered[j]);
                }
                snapshots.push(id);
                a.snapshot_taken();
                prop_assert!((0..n).all(|j| !a.is_blocked(j)));
            }
        }
        prop_assert!(events.iter().all(Vec::is_empty), "stalled");
        prop_assert_eq!(snapshots, (1..=last).collect::<Vec<_>>());
    }
}
