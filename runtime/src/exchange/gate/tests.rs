//! Tests of [`InputGate`]: alignment, at-least-once, the end of data, and
//! unaligned checkpoints' capture of overtaken data.

use std::sync::Arc;

use weir_net::{channel, ChannelSender, Consumer, Doorbell, NetworkBuffer};

use super::*;
use crate::chain::testing::VecTail;

fn buffer(records: &[u64]) -> ChannelEvent {
    let mut b = NetworkBuffer::with_capacity(1024);
    for r in records {
        assert!(b.try_append(r));
    }
    ChannelEvent::Buffer(b)
}

/// Barrier `id`, triggered now.
fn barrier(id: u64) -> ChannelEvent {
    ChannelEvent::Barrier(CheckpointBarrier::checkpoint(id, now_ms()))
}

/// A savepoint's barrier `id`, triggered now.
fn savepoint_barrier(id: u64) -> ChannelEvent {
    ChannelEvent::Barrier(CheckpointBarrier {
        kind: weir_net::BarrierKind::Savepoint,
        ..CheckpointBarrier::checkpoint(id, now_ms())
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A gate over two channels, with the events of each already sent.
fn gate(
    mode: BarrierMode,
    inputs: [Vec<ChannelEvent>; 2],
) -> (InputGate, Vec<ChannelSender>, Vec<Consumer<NetworkBuffer>>) {
    let (mut senders, mut receivers, mut returns) = (Vec::new(), Vec::new(), Vec::new());
    for events in inputs {
        let bell = Arc::new(Doorbell::new());
        let (mut tx, rx, ret) = channel(16, 16, bell.clone(), bell);
        for e in events {
            assert!(tx.send(e).is_ok());
        }
        senders.push(tx);
        receivers.push(rx);
        returns.push(ret);
    }
    (InputGate::new(receivers, mode), senders, returns)
}

/// Pumps until the gate reports something other than progress.
fn pump_until_status(g: &mut InputGate, out: &mut VecTail<u64>) -> GateStatus {
    loop {
        match g.pump(out, 1) {
            GateStatus::Moved(0) => return GateStatus::Moved(0),
            GateStatus::Moved(_) => continue,
            other => return other,
        }
    }
}

#[test]
fn exactly_once_holds_an_input_back_until_the_barrier_is_aligned() {
    let (mut g, _tx, _ret) = gate(
        BarrierMode::Aligned,
        [
            vec![buffer(&[1, 2]), barrier(1), buffer(&[3, 4])],
            vec![buffer(&[10]), buffer(&[11]), barrier(1), buffer(&[12])],
        ],
    );
    let mut out = VecTail::default();
    let status = pump_until_status(&mut g, &mut out);
    let GateStatus::Barrier(aligned) = status else {
        panic!("expected the aligned barrier, got {status:?}");
    };
    assert_eq!(aligned.barrier.id, 1);
    // Exactly the records before the barrier on each input: none after.
    assert_eq!(sorted(out.items.clone()), vec![1, 2, 10, 11]);
    g.barrier_done();
    assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
    assert_eq!(sorted(out.items), vec![1, 2, 3, 4, 10, 11, 12]);
}

#[test]
fn at_least_once_does_not_hold_inputs_back() {
    let (mut g, _tx, _ret) = gate(
        BarrierMode::AtLeastOnce,
        [
            vec![barrier(1), buffer(&[3, 4])],
            vec![buffer(&[10]), buffer(&[11]), buffer(&[12]), barrier(1)],
        ],
    );
    let mut out = VecTail::default();
    let status = pump_until_status(&mut g, &mut out);
    assert!(matches!(status, GateStatus::Barrier(_)), "{status:?}");
    // Input 0's records after its barrier went ahead of the snapshot.
    assert!(out.items.contains(&3), "{:?}", out.items);
}

#[test]
fn end_of_data_and_partitions_and_stale_barriers() {
    let (mut g, _tx, _ret) = gate(
        BarrierMode::Aligned,
        [
            vec![
                buffer(&[1]),
                ChannelEvent::EndOfData,
                barrier(2),
                ChannelEvent::EndOfPartition,
            ],
            vec![
                barrier(2),
                ChannelEvent::EndOfData,
                barrier(2),
                ChannelEvent::EndOfPartition,
            ],
        ],
    );
    let mut out = VecTail::default();
    let mut seen = Vec::new();
    loop {
        match pump_until_status(&mut g, &mut out) {
            GateStatus::Barrier(b) => {
                seen.push(format!("barrier {}", b.barrier.id));
                g.barrier_done();
            }
            GateStatus::DataEnded => seen.push("data ended".into()),
            GateStatus::Ended => {
                seen.push("ended".into());
                break;
            }
            GateStatus::Moved(_) => panic!("stalled after {seen:?}"),
        }
    }
    // The second copy of barrier 2 on input 1 is stale and ignored.
    assert_eq!(seen, vec!["barrier 2", "data ended", "ended"]);
    assert_eq!(out.items, vec![1]);
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

/// The u64 records of a channel state.
fn records_of(bytes: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let (r, n) = u64::read(&bytes[pos..]).unwrap();
        out.push(r);
        pos += n;
    }
    out
}

fn encoded(records: &[u64]) -> Vec<u8> {
    let ChannelEvent::Buffer(b) = buffer(records) else {
        unreachable!()
    };
    b.as_bytes().to_vec()
}

fn priority(tx: &mut ChannelSender, id: u64, overtaken: Vec<ChannelEvent>) {
    let position = tx.position();
    tx.send_priority(PriorityBarrier {
        barrier: CheckpointBarrier::checkpoint(id, 0),
        position,
        overtaken,
    })
    .unwrap();
}

/// Records in the order each input delivered them.
fn per_input(out: &[u64]) -> (Vec<u64>, Vec<u64>) {
    out.iter().partition(|&&r| r < 10)
}

#[test]
fn unaligned_snapshots_at_the_first_barrier_and_captures_what_it_overtook() {
    let (mut g, mut tx, _ret) = gate(
        BarrierMode::Unaligned,
        [
            vec![buffer(&[1, 2]), buffer(&[3])],
            vec![buffer(&[10]), buffer(&[11])],
        ],
    );
    // Input 0's barrier overtakes two buffers in the ring and one its
    // sender still had queued.
    priority(&mut tx[0], 1, vec![buffer(&[4])]);
    tx[0].send(buffer(&[5])).unwrap(); // after the barrier
    let mut out = VecTail::default();
    let GateStatus::Barrier(b) = g.pump(&mut out, 100) else {
        panic!("expected a snapshot first");
    };
    assert!(b.unaligned && b.barrier.id == 1);
    assert!(out.items.is_empty(), "the snapshot comes before any record");
    g.barrier_done();
    assert!(
        g.take_channel_state().is_none(),
        "input 1's barrier is still to come"
    );
    // Input 1's data before its (in-band) barrier is captured as it comes.
    tx[1].send(buffer(&[12])).unwrap();
    tx[1].send(barrier(1)).unwrap();
    tx[1].send(buffer(&[13])).unwrap();
    assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
    let state = g.take_channel_state().expect("captured").unwrap();
    assert_eq!(state.checkpoint, 1);
    assert_eq!(records_of(&state.channels[0]), vec![1, 2, 3, 4]);
    assert_eq!(records_of(&state.channels[1]), vec![10, 11, 12]);
    // Everything is processed too, in each input's order.
    let (zero, one) = per_input(&out.items);
    assert_eq!((zero, one), (vec![1, 2, 3, 4, 5], vec![10, 11, 12, 13]));
}

#[test]
fn a_savepoint_is_aligned_under_unaligned_checkpoints() {
    for mode in [
        BarrierMode::Unaligned,
        BarrierMode::AlignedWithTimeout(Duration::from_millis(1)),
    ] {
        let (mut g, mut tx, _ret) = gate(
            mode,
            [
                vec![buffer(&[1, 2]), savepoint_barrier(1), buffer(&[3, 4])],
                vec![buffer(&[10]), buffer(&[11])],
            ],
        );
        let mut out = VecTail::default();
        assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
        // Input 1's barrier is late, well past the alignment timeout.
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
        assert_eq!(sorted(out.items.clone()), vec![1, 2, 10, 11], "{mode:?}");
        tx[1].send(savepoint_barrier(1)).unwrap();
        tx[1].send(buffer(&[12])).unwrap();
        let status = pump_until_status(&mut g, &mut out);
        let GateStatus::Barrier(b) = status else {
            panic!("expected the aligned savepoint, got {status:?}");
        };
        assert_eq!((b.barrier.id, b.unaligned), (1, false), "{mode:?}");
        // Exactly the records before the barrier on each input, and no
        // channel state.
        assert_eq!(sorted(out.items.clone()), vec![1, 2, 10, 11]);
        g.barrier_done();
        assert!(g.take_channel_state().is_none(), "{mode:?}");
        assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
        assert_eq!(sorted(out.items), vec![1, 2, 3, 4, 10, 11, 12]);
        assert!(g.take_channel_state().is_none());
    }
}

#[test]
fn a_barrier_interrupts_a_buffer_and_captures_its_rest() {
    let many: Vec<u64> = (100..100 + 3 * CHECK_EVERY as u64).collect();
    let (mut g, mut tx, _ret) = gate(BarrierMode::Unaligned, [vec![], vec![]]);
    let mut b = NetworkBuffer::with_capacity(64 * 1024);
    for r in &many {
        assert!(b.try_append(r));
    }
    tx[1].send(ChannelEvent::Buffer(b)).unwrap();
    let mut out = VecTail::default();
    // A collector that lets the barrier in after the first records.
    struct Trigger<'a> {
        out: &'a mut VecTail<u64>,
        tx: &'a mut ChannelSender,
        sent: bool,
    }
    impl Collector<u64> for Trigger<'_> {
        fn collect(&mut self, r: u64) {
            self.out.items.push(r);
            if !self.sent {
                self.sent = true;
                priority(self.tx, 1, vec![]);
            }
        }
    }
    impl crate::chain::control::ChainControl for Trigger<'_> {
        fn is_available(&self) -> bool {
            true
        }
        fn flush(&mut self, now: Instant) -> crate::chain::control::FlushOutcome {
            self.out.flush(now)
        }
        fn end_input(&mut self) {}
        fn snapshot(&mut self, _s: &mut crate::core::snapshot::TaskSnapshot) {}
        fn notify_checkpoint_complete(&mut self, _id: u64) {}
        fn finish(&mut self) -> bool {
            true
        }
        fn publish_metrics(&mut self) {}
        fn output_pending(&self) -> bool {
            false
        }
        fn on_watermark(&mut self, watermark: i64) {
            self.out.on_watermark(watermark);
        }
        fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus) {
            self.out.on_watermark_status(status);
        }
        fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
            self.out.on_latency_marker(marker);
        }
        fn failure(&self) -> Option<&crate::chain::error::TaskError> {
            self.out.failure()
        }
    }
    let (first, second) = tx.split_at_mut(1);
    let _ = first;
    let mut trigger = Trigger {
        out: &mut out,
        tx: &mut second[0],
        sent: false,
    };
    let GateStatus::Barrier(b) = g.pump(&mut trigger, usize::MAX) else {
        panic!("the barrier interrupts the buffer");
    };
    assert!(b.unaligned);
    let done = out.items.len();
    assert_eq!(
        done, CHECK_EVERY,
        "stopped at the first look at the priority path"
    );
    g.barrier_done();
    // Input 0 has delivered nothing: it still owes its barrier.
    tx[0].send(barrier(1)).unwrap();
    assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
    let state = g.take_channel_state().unwrap().unwrap();
    assert_eq!(records_of(&state.channels[1]), many[done..].to_vec());
    assert!(state.channels[0].is_empty());
    assert_eq!(out.items, many);
}

#[test]
fn restored_channel_state_is_replayed_before_new_data() {
    let (mut g, _tx, _ret) = gate(
        BarrierMode::Unaligned,
        [vec![buffer(&[3])], vec![buffer(&[12])]],
    );
    g.restore_channel_state(0, encoded(&[1, 2]));
    g.restore_channel_state(1, encoded(&[10, 11]));
    g.restore_channel_state(1, Vec::new());
    let mut out = VecTail::default();
    assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
    let (zero, one) = per_input(&out.items);
    assert_eq!((zero, one), (vec![1, 2, 3], vec![10, 11, 12]));
}

#[test]
fn a_long_alignment_switches_to_unaligned() {
    let t = Duration::from_millis(5);
    let (mut g, mut tx, _ret) = gate(
        BarrierMode::AlignedWithTimeout(t),
        [
            vec![buffer(&[1]), barrier(1), buffer(&[2])],
            vec![buffer(&[10])],
        ],
    );
    let mut out = VecTail::default();
    assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
    assert_eq!(
        sorted(out.items.clone()),
        vec![1, 10],
        "input 0 is held back"
    );
    let deadline = g.deadline().expect("the timeout is a deadline");
    std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
    let GateStatus::Barrier(b) = g.pump(&mut out, 100) else {
        panic!("the timeout switches to unaligned");
    };
    assert!(b.unaligned, "{b:?}");
    g.barrier_done();
    assert!(g.deadline().is_none());
    tx[1].send(buffer(&[11])).unwrap();
    tx[1].send(barrier(1)).unwrap();
    assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
    let state = g.take_channel_state().unwrap().unwrap();
    assert!(state.channels[0].is_empty(), "input 0 was aligned");
    assert_eq!(records_of(&state.channels[1]), vec![11]);
    assert_eq!(sorted(out.items), vec![1, 2, 10, 11]);
}

#[test]
fn an_alignment_within_the_timeout_stays_aligned() {
    let (mut g, _tx, _ret) = gate(
        BarrierMode::AlignedWithTimeout(Duration::from_secs(60)),
        [
            vec![barrier(1), buffer(&[2])],
            vec![buffer(&[10]), barrier(1)],
        ],
    );
    let mut out = VecTail::default();
    let GateStatus::Barrier(b) = pump_until_status(&mut g, &mut out) else {
        panic!("aligned");
    };
    assert!(!b.unaligned);
    assert!(g.take_channel_state().is_none());
}

#[test]
fn a_newer_barrier_abandons_an_unfinished_capture() {
    let (mut g, mut tx, _ret) = gate(BarrierMode::Unaligned, [vec![], vec![]]);
    priority(&mut tx[0], 1, vec![buffer(&[1])]);
    let mut out = VecTail::default();
    assert!(matches!(g.pump(&mut out, 100), GateStatus::Barrier(b) if b.barrier.id == 1));
    g.barrier_done();
    // Checkpoint 1 never reaches input 1 (its source skipped it).
    priority(&mut tx[0], 2, vec![]);
    priority(&mut tx[1], 2, vec![]);
    assert!(matches!(g.pump(&mut out, 100), GateStatus::Barrier(b) if b.barrier.id == 2));
    g.barrier_done();
    // The newest outcome wins: checkpoint 2 is captured (with nothing in
    // flight; record 1 is before barrier 1, so before 2 as well, and was
    // captured for 2 when it started).
    let state = g.take_channel_state().unwrap().unwrap();
    assert_eq!(state.checkpoint, 2);
    assert_eq!(records_of(&state.channels[0]), vec![1]);
    assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
    assert_eq!(out.items, vec![1]);
}

#[test]
fn a_triggered_checkpoint_past_its_timeout_snapshots_before_any_barrier() {
    use crate::checkpoint::signals::CheckpointSignals;
    let t = Duration::from_millis(50);
    let signals = Arc::new(CheckpointSignals::new(0));
    let (g, mut tx, _ret) = gate(
        BarrierMode::AlignedWithTimeout(t),
        [vec![buffer(&[1])], vec![buffer(&[10])]],
    );
    let mut g = g.with_trigger_signals(signals.clone());
    let mut out = VecTail::default();
    assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
    // Triggered 60 ms ago: its barriers are still behind data upstream.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    signals.trigger(1, now_ms - 60);
    tx[0].send(buffer(&[2])).unwrap();
    let GateStatus::Barrier(b) = g.pump(&mut out, 100) else {
        panic!("the timeout has passed: snapshot without waiting for a barrier");
    };
    assert!(b.unaligned && b.barrier.id == 1);
    g.barrier_done();
    tx[0].send(barrier(1)).unwrap();
    tx[1].send(buffer(&[11])).unwrap();
    tx[1].send(barrier(1)).unwrap();
    assert_eq!(pump_until_status(&mut g, &mut out), GateStatus::Moved(0));
    let state = g.take_channel_state().unwrap().unwrap();
    assert_eq!(records_of(&state.channels[0]), vec![2]);
    assert_eq!(records_of(&state.channels[1]), vec![11]);
    assert_eq!(sorted(out.items), vec![1, 2, 10, 11]);
}

/// What a chain saw, in order: records, watermarks and statuses.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Record(u64),
    Watermark(i64),
    Status(weir_net::WatermarkStatus),
    Marker(weir_net::LatencyMarker),
}

#[derive(Default)]
struct Log(Vec<Seen>);

impl crate::chain::control::ChainControl for Log {
    fn is_available(&self) -> bool {
        true
    }
    fn flush(&mut self, _now: Instant) -> crate::chain::control::FlushOutcome {
        crate::chain::control::FlushOutcome::default()
    }
    fn end_input(&mut self) {}
    fn snapshot(&mut self, _s: &mut crate::core::snapshot::TaskSnapshot) {}
    fn notify_checkpoint_complete(&mut self, _id: u64) {}
    fn finish(&mut self) -> bool {
        true
    }
    fn publish_metrics(&mut self) {}
    fn output_pending(&self) -> bool {
        false
    }
    fn on_watermark(&mut self, watermark: i64) {
        self.0.push(Seen::Watermark(watermark));
    }
    fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus) {
        self.0.push(Seen::Status(status));
    }
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
        self.0.push(Seen::Marker(marker));
    }

    #[inline]
    fn failure(&self) -> Option<&crate::chain::error::TaskError> {
        None
    }
}

impl Collector<u64> for Log {
    fn collect(&mut self, record: u64) {
        self.0.push(Seen::Record(record));
    }
}

#[test]
fn watermarks_reach_the_chain_in_order_with_records_in_every_mode() {
    use weir_net::WatermarkStatus::{Active, Idle};
    for mode in [BarrierMode::Aligned, BarrierMode::Unaligned] {
        let (mut g, _tx, _ret) = gate(
            mode,
            [
                vec![
                    buffer(&[1]),
                    ChannelEvent::Watermark(10),
                    buffer(&[2]),
                    ChannelEvent::WatermarkStatus(Idle),
                ],
                vec![
                    ChannelEvent::Watermark(5),
                    buffer(&[3]),
                    ChannelEvent::Watermark(20),
                    ChannelEvent::WatermarkStatus(Idle),
                    ChannelEvent::WatermarkStatus(Active),
                    ChannelEvent::Watermark(30),
                ],
            ],
        );
        let mut out = Log::default();
        while g.pump(&mut out, 1) != GateStatus::Moved(0) {}
        // Round-robin: input 0's event, then input 1's, and so on.
        assert_eq!(
            out.0,
            vec![
                Seen::Record(1),
                Seen::Watermark(5), // min(10, 5)
                Seen::Record(3),
                Seen::Record(2),
                Seen::Watermark(10), // min(10, 20)
                Seen::Watermark(20), // input 0 idle: input 1 alone
                Seen::Status(Idle),  // both idle
                Seen::Status(Active),
                Seen::Watermark(30),
            ],
            "{mode:?}"
        );
        assert_eq!(g.current_watermark(), 30);
        assert!(!g.is_idle());
    }
}
