//! The timer service on its own: counts, deletes, and its snapshot per
//! key group.

use super::*;
use weir_state::KeyHash;

#[test]
fn the_service_reports_its_timers_and_clock() {
    let mut s: KeyedTimerService<u64> = KeyedTimerService::with_clock(|| 42);
    let a = KeyContext::new(1u64);
    let b = KeyContext::new(2u64);
    s.register_event_time_timer(&a, 5);
    s.register_event_time_timer(&a, 5);
    s.register_event_time_timer(&b, 3);
    s.register_processing_time_timer(&b, 9);
    assert_eq!(s.event_time_timers(), 2);
    assert_eq!(s.processing_time_timers(), 1);
    assert_eq!(s.next_timer(TimeDomain::EventTime), Some(3));
    s.delete_event_time_timer(&b, 3);
    assert_eq!(s.next_timer(TimeDomain::EventTime), Some(5));
    assert_eq!(s.current_processing_time(), 42);
    assert_eq!(s.current_watermark(), i64::MIN);
    assert_eq!(s.pop_due(TimeDomain::ProcessingTime, 8), None);
    assert_eq!(s.pop_due(TimeDomain::ProcessingTime, 9), Some((9, 2)));
}

#[test]
fn many_deletes_do_not_grow_the_heap_without_bound() {
    let mut s: KeyedTimerService<u64> = KeyedTimerService::with_clock(|| 0);
    for i in 0..10_000u64 {
        let ctx = KeyContext::new(i);
        s.register_event_time_timer(&ctx, i as i64);
        s.delete_event_time_timer(&ctx, i as i64);
    }
    assert_eq!(s.event_time_timers(), 0);
    assert!(
        s.event.heap.len() <= 1024 + 1,
        "heap kept {}",
        s.event.heap.len()
    );
    assert_eq!(s.next_timer(TimeDomain::EventTime), None);
}

#[test]
fn a_snapshot_serializes_each_timer_in_its_key_group() {
    let mut s: KeyedTimerService<u64> = KeyedTimerService::with_clock(|| 0);
    for k in 0..100u64 {
        s.register_event_time_timer(&KeyContext::new(k), k as i64 * 10);
    }
    s.register_processing_time_timer(&KeyContext::new(3u64), 77);
    let mut states = Vec::new();
    s.snapshot(&mut states);
    let names: Vec<&str> = states.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, vec![EVENT_TIMERS_STATE, PROCESSING_TIMERS_STATE]);
    let range = KeyGroupRange::new(0, 128);
    let mut out = Vec::new();
    let event = &states[0].1;
    assert_eq!(event.len(), 100);
    event.serialize_part(128, range, 0..event.chunk_count(), &mut out);
    let groups = KeyGroupAssigner::new(128, 1);
    let mut seen = Vec::new();
    for (kg, buf) in out.iter().enumerate() {
        let mut at = 0;
        while at < buf.len() {
            let (k, n) = u64::read(&buf[at..]).unwrap();
            let (ts, m) = i64::read(&buf[at + n..]).unwrap();
            assert_eq!(groups.key_group(k.key_hash()) as usize, kg);
            seen.push((k, ts));
            at += n + m;
        }
    }
    seen.sort();
    let expected: Vec<(u64, i64)> = (0..100u64).map(|k| (k, k as i64 * 10)).collect();
    assert_eq!(seen, expected);
}

/// A checkpoint of operator `timed` (parallelism 1, 128 key groups) in a
/// fresh directory named after `test`, whose event-time timers block
/// holds `payload`.
fn checkpoint_with_timers(test: &str, payload: &[u8]) -> crate::checkpoint::RestoredCheckpoint {
    use weir_state::snapshot::{
        BlockKind, InlineState, Manifest, OperatorSnapshot, SegmentWriter, SubtaskSnapshot,
    };
    let dir = std::env::temp_dir().join(format!("weir-timers-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let all = KeyGroupRange::new(0, 128);
    let mut segment = SegmentWriter::create(dir.join("w000.seg")).unwrap();
    let extent = segment
        .append_block(BlockKind::KeyedState, all, EVENT_TIMERS_STATE, payload)
        .unwrap();
    segment.finish().unwrap();
    let manifest = Manifest {
        job_name: "timers".into(),
        checkpoint_id: 7,
        timestamp_ms: 0,
        max_parallelism: 128,
        lineage: None,
        kind: weir_state::snapshot::SnapshotKind::Checkpoint,
        operators: vec![OperatorSnapshot {
            uid: "timed".into(),
            parallelism: 1,
            subtasks: vec![SubtaskSnapshot {
                index: 0,
                key_groups: all,
                extents: vec![extent],
                inline_state: vec![InlineState {
                    name: "flag".into(),
                    bytes: vec![1],
                }],
            }],
        }],
    };
    manifest.write(&dir, "_metadata").unwrap();
    let restored = crate::checkpoint::RestoredCheckpoint::open(&dir, "timers", 128).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    restored
}

fn subtask(index: usize, parallelism: usize) -> crate::core::SubtaskInfo {
    crate::core::SubtaskInfo {
        index,
        parallelism,
        worker: 0,
        max_parallelism: 128,
    }
}

/// A timers block that does not decode makes the checkpoint unusable (an
/// older one is then restored): the error is the outside world's and
/// names the operator, the state, the segment and the offset.
#[test]
fn a_malformed_timers_block_makes_the_checkpoint_unusable() {
    let restored = checkpoint_with_timers("malformed", &[1, 2, 3]);
    let scope = restored.scope("timed", &subtask(0, 1));
    let mut s: KeyedTimerService<u64> = KeyedTimerService::with_clock(|| 0);
    let e = TimerQueues::restore(&mut s, &scope).unwrap_err();
    assert!(e.unusable(), "{e}");
    assert_eq!(e.fault(), crate::core::Fault::Outside);
    let corrupt = restored
        .corrupt()
        .expect("recorded as unusable")
        .to_string();
    for part in [
        "operator `timed` subtask 0",
        "state `_timers_event`",
        "w000.seg",
        "offset 0",
    ] {
        assert!(corrupt.contains(part), "{part}: {corrupt}");
    }
}

/// Per-subtask state asked to rescale is refused as the user's mistake:
/// the checkpoint stays usable, so no older one replaces it.
#[test]
fn a_refused_rescale_leaves_the_checkpoint_usable() {
    let restored = checkpoint_with_timers("rescale", &[]);
    let e = restored
        .scope("timed", &subtask(1, 2))
        .inline("flag")
        .unwrap_err();
    assert!(!e.unusable(), "{e}");
    assert_eq!(e.fault(), crate::core::Fault::User);
    assert!(e
        .to_string()
        .contains("had parallelism 1 in checkpoint 7, now 2"));
    assert!(restored.corrupt().is_none());
}
