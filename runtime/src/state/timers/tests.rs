//! The timer service on its own: counts, deletes, and its snapshot per
//! key group.

use super::*;

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
