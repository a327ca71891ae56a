//! Tests of watermark generation by [`TimestampsOp`], and of watermarks
//! crossing a key_by exchange behind the records before them.

use std::time::{Duration, Instant};

use weir_net::WatermarkStatus::{Active, Idle};

use super::*;
use crate::chain::testing::VecTail;

mod alignment;
mod generators;
mod log;
fn strategy(bound_ms: u64) -> WatermarkStrategy<fn(&i64) -> i64> {
    WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(bound_ms))
        .with_timestamp_assigner(|r: &i64| *r)
}

/// The link of a strategy with generators of type `G` into `C`.
type Link<G, C> = TimestampsOp<i64, fn(&i64) -> i64, G, C>;

/// The link of subtask 0 of 1 for `strategy`, emitting every `interval`.
fn link<G: WatermarkGeneratorSupplier<i64>, C>(
    strategy: &WatermarkStrategy<fn(&i64) -> i64, G>,
    interval: Duration,
    out: C,
) -> Link<G::Generator, C> {
    let info = crate::core::subtask::SubtaskInfo {
        index: 0,
        parallelism: 1,
        worker: 0,
        max_parallelism: 128,
    };
    TimestampsOp::new(
        *strategy.timestamp_assigner(),
        strategy.generator().create_watermark_generator(&info),
        interval,
        out,
    )
}

#[test]
fn watermarks_are_periodic_and_trail_the_largest_timestamp() {
    let interval = Duration::from_millis(200);
    let mut op = link(&strategy(10), interval, VecTail::<i64>::default());
    let t0 = Instant::now();
    let first = op.flush(t0);
    assert_eq!(first.next_deadline, Some(t0 + interval));
    for ts in [100, 50, 120, 90] {
        op.collect(ts);
    }
    // Not per record: nothing before the interval is over.
    assert!(op.out.watermarks.is_empty());
    op.flush(t0 + Duration::from_millis(100));
    assert!(op.out.watermarks.is_empty());
    let out = op.flush(t0 + interval);
    assert!(out.progressed);
    assert_eq!(op.out.watermarks, vec![120 - 10 - 1]);
    // No new record: no new watermark.
    op.flush(t0 + interval * 2);
    assert_eq!(op.out.watermarks, vec![109]);
    op.end_input();
    assert_eq!(op.out.watermarks, vec![109, i64::MAX]);
    assert_eq!(op.out.items, vec![100, 50, 120, 90]);
}

#[test]
fn a_quiet_subtask_marks_itself_idle_and_its_next_record_active() {
    let interval = Duration::from_millis(10);
    let s = strategy(0).with_idleness(Duration::from_millis(25));
    let mut op = link(&s, interval, VecTail::<i64>::default());
    let t0 = Instant::now();
    op.flush(t0);
    op.collect(5);
    op.flush(t0 + interval);
    assert_eq!(op.out.watermarks, vec![4]);
    // The check at 10ms saw the record; 20 and 30ms are within 25ms of it.
    for k in 2..=3 {
        op.flush(t0 + interval * k);
    }
    assert!(op.out.statuses.is_empty(), "idle only after the timeout");
    op.flush(t0 + interval * 4);
    assert_eq!(op.out.statuses, vec![Idle]);
    assert!(op.is_idle());
    op.collect(7);
    assert_eq!(op.out.statuses, vec![Idle, Active]);
    op.flush(t0 + interval * 5);
    assert_eq!(op.out.watermarks, vec![4, 6]);
}

#[test]
fn an_idle_subtask_at_end_of_input_becomes_active_for_the_final_watermark() {
    let s = strategy(0).with_idleness(Duration::from_millis(1));
    let mut op = link(&s, Duration::from_millis(1), VecTail::<i64>::default());
    let t0 = Instant::now();
    op.flush(t0);
    op.flush(t0 + Duration::from_millis(5));
    assert_eq!(op.out.statuses, vec![Idle]);
    op.end_input();
    assert_eq!(op.out.statuses, vec![Idle, Active]);
    assert_eq!(op.out.watermarks, vec![i64::MAX]);
}

/// A key_by exchange (128 key groups, buffer timeout 60 s) into `channels`
/// new channels, drawing on a pool of `buffers` buffers of `buffer_size`
/// bytes; and the channels' receiving ends.
fn exchange<T, K, KF>(
    key_fn: KF,
    channels: usize,
    buffers: usize,
    buffer_size: usize,
) -> (
    crate::exchange::output::ExchangeOutput<T, K, KF>,
    Vec<weir_net::ChannelReceiver>,
)
where
    T: weir_net::Wire,
    K: weir_state::KeyHash,
    KF: Fn(&T) -> K,
{
    use std::sync::Arc;

    use weir_net::{channel, BufferPool, Doorbell};

    let mut pool = BufferPool::new(buffers, buffer_size);
    let (mut senders, mut receivers) = (Vec::new(), Vec::new());
    for _ in 0..channels {
        let bell = Arc::new(Doorbell::new());
        let (tx, rx, ret) = channel(16, 16, bell.clone(), bell);
        pool.add_return_path(ret);
        senders.push(tx);
        receivers.push(rx);
    }
    let out = crate::exchange::output::ExchangeOutput::new(
        key_fn,
        128,
        senders,
        pool,
        16,
        Duration::from_secs(60),
        crate::core::barrier::BarrierMode::Aligned,
    );
    (out, receivers)
}

#[test]
fn an_exchange_output_broadcasts_watermarks_behind_its_buffers() {
    use weir_net::ChannelEvent;

    let (mut out, mut receivers) = exchange(|r: &u64| *r, 2, 8, 1024);
    for r in 0..20u64 {
        out.collect(r);
    }
    out.on_watermark(42);
    out.on_watermark_status(Idle);
    for (c, rx) in receivers.iter_mut().enumerate() {
        // The partly filled buffer goes first, then the watermark events.
        let first = rx.recv();
        assert!(
            matches!(first, Some(ChannelEvent::Buffer(ref b)) if b.records() > 0),
            "channel {c}: {first:?}"
        );
        assert!(matches!(rx.recv(), Some(ChannelEvent::Watermark(42))));
        assert!(matches!(
            rx.recv(),
            Some(ChannelEvent::WatermarkStatus(Idle))
        ));
        assert!(rx.recv().is_none());
    }
}

#[test]
fn an_exchange_output_sends_a_latency_marker_into_one_channel_behind_its_buffer() {
    use weir_net::{ChannelEvent, LatencyMarker};

    let marker = |source_subtask| LatencyMarker {
        marked_ns: 7,
        source_stage: 0,
        source_subtask,
    };
    let (mut out, mut receivers) = exchange(|r: &u64| *r, 2, 8, 1024);
    // Channel 0 holds a partly filled buffer; channel 1 none.
    let on_0 = (0..100u64)
        .find(|r| {
            weir_state::KeyGroupAssigner::new(128, 2)
                .subtask_for_hash(weir_state::KeyHash::key_hash(r))
                == 0
        })
        .expect("a key of channel 0");
    out.collect(on_0);
    // Markers go to channel 0, 1, 0: those of channel 0 wait behind its
    // buffer (for its timeout, as the records do); channel 1's goes at once.
    for m in 0..3 {
        out.on_latency_marker(marker(m));
    }
    assert!(receivers[0].recv().is_none(), "nothing shipped yet");
    assert!(matches!(
        receivers[1].recv(),
        Some(ChannelEvent::LatencyMarker(m)) if m == marker(1)
    ));
    out.on_watermark(42);
    let rx = &mut receivers[0];
    assert!(matches!(rx.recv(), Some(ChannelEvent::Buffer(b)) if b.records() == 1));
    for m in [0, 2] {
        assert!(matches!(rx.recv(), Some(ChannelEvent::LatencyMarker(x)) if x == marker(m)));
    }
    assert!(matches!(rx.recv(), Some(ChannelEvent::Watermark(42))));
    assert!(rx.recv().is_none());
    // Once data ended, markers are dropped.
    out.end_input();
    out.on_latency_marker(marker(9));
    while let Some(e) = receivers[1].recv() {
        assert!(!matches!(e, ChannelEvent::LatencyMarker(_)), "{e:?}");
    }
}

/// A timestamps link in front of a key_by exchange takes runs of records
/// (`collect_many`, how sources hand them over) exactly as it takes them
/// one by one: the same records on every channel in the same order, the
/// same buffers, the same largest timestamp, and it stops where the pool
/// runs out of buffers.
#[test]
fn a_timestamps_link_and_an_exchange_take_runs_as_they_take_single_records() {
    use weir_net::{ChannelEvent, ChannelReceiver};

    // Small buffers (4 records), few of them: buffers fill, ship, run out.
    let chain = || {
        let (out, receivers) = exchange(|r: &i64| *r % 7, 3, 4, 32);
        let op = link(&strategy(0), Duration::from_secs(60), out);
        (op, receivers)
    };
    // Every event so far, per channel: a buffer's records, or a watermark.
    fn drain(receivers: &mut [ChannelReceiver], got: &mut [Vec<Vec<i64>>]) {
        for (rx, got) in receivers.iter_mut().zip(got.iter_mut()) {
            while let Some(event) = rx.recv() {
                match event {
                    ChannelEvent::Buffer(b) => {
                        got.push(b.read_records::<i64>().map(|r| r.unwrap()).collect());
                        rx.recycle(b);
                    }
                    ChannelEvent::Watermark(w) => got.push(vec![i64::MIN, w]),
                    ChannelEvent::EndOfData => {}
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
    }
    let mut rng = 0x7157_u64;
    let mut next = move || {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        rng >> 33
    };
    let records: Vec<i64> = (0..300).map(|_| (next() % 1000) as i64).collect();
    let (mut one, mut rx_one) = chain();
    let (mut many, mut rx_many) = chain();
    let (mut got_one, mut got_many) = (vec![Vec::new(); 3], vec![Vec::new(); 3]);
    let mut stops = 0;
    let (mut a, mut b) = (0, 0);
    while a < records.len() || b < records.len() {
        while a < records.len() && one.is_available() {
            one.collect(records[a]);
            a += 1;
        }
        let mut rest = records[b..].iter().copied();
        let limit = 1 + (next() % 40) as usize;
        let taken = many.collect_many(&mut rest, limit);
        assert!(taken <= limit);
        b += taken;
        if taken < limit.min(records.len() - b + taken) {
            stops += 1;
            assert!(!many.is_available(), "stops only when out of buffers");
        }
        if !one.is_available() || a == records.len() {
            one.flush(Instant::now());
            drain(&mut rx_one, &mut got_one);
        }
        if !many.is_available() || b == records.len() {
            many.flush(Instant::now());
            drain(&mut rx_many, &mut got_many);
        }
    }
    assert!(stops > 0, "the pool ran out of buffers");
    one.end_input();
    many.end_input();
    drain(&mut rx_one, &mut got_one);
    drain(&mut rx_many, &mut got_many);
    assert_eq!(
        got_one, got_many,
        "the same buffers and watermarks per channel"
    );
    let flat = |got: &[Vec<Vec<i64>>]| -> Vec<Vec<i64>> {
        got.iter()
            .map(|c| {
                c.iter()
                    .filter(|e| e.first() != Some(&i64::MIN))
                    .flatten()
                    .copied()
                    .collect()
            })
            .collect()
    };
    assert_eq!(one.current_watermark(), many.current_watermark());
    assert_eq!(one.current_watermark(), i64::MAX, "the final watermark");
    let want: Vec<Vec<i64>> = (0..3)
        .map(|c| {
            let assigner = weir_state::KeyGroupAssigner::new(128, 3);
            records
                .iter()
                .copied()
                .filter(|r| {
                    assigner.subtask_for_hash(weir_state::KeyHash::key_hash(&(*r % 7))) == c
                })
                .collect()
        })
        .collect();
    assert_eq!(flat(&got_many), want, "every record on its key's channel");
}
