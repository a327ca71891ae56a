//! Watermark alignment at the timestamps link: a source ahead of its
//! group by more than the drift pauses (its chain reports unavailable)
//! until an update finds the group caught up; an idle member holds nobody
//! back; a paused source does not turn idle; a link that does not follow a
//! source never pauses.

use std::time::{Duration, Instant};

use super::log::{ts, Event, LogTail, Punctuated, Rec, PLAIN};
use crate::chain::control::{ChainControl, Collector};
use crate::exchange::watermark_alignment::WatermarkAlignmentGroups;
use crate::operators::timestamps::alignment::{AlignedSource, WatermarkAlignment};
use crate::operators::timestamps::generator::{WatermarkGenerator, WatermarksWithIdleness};
use crate::operators::timestamps::TimestampsOp;

type Link<G> = TimestampsOp<Rec, fn(&Rec) -> i64, G, LogTail, AlignedSource>;

const UPDATE: Duration = Duration::from_millis(10);

fn aligned<G: WatermarkGenerator<Rec>>(
    groups: &WatermarkAlignmentGroups,
    generator: G,
    interval: Duration,
) -> Link<G> {
    let params = WatermarkAlignment::new("g", Duration::from_millis(50), UPDATE);
    TimestampsOp::new(
        ts as fn(&Rec) -> i64,
        generator,
        interval,
        LogTail::default(),
    )
    .with_alignment(AlignedSource::new(Some(groups.join("g")), &params))
}

#[test]
fn a_source_ahead_by_more_than_the_drift_pauses_until_the_group_catches_up() {
    let groups = WatermarkAlignmentGroups::default();
    let other = groups.join("g");
    let mut op = aligned(&groups, Punctuated::default(), Duration::from_secs(3600));
    let t0 = Instant::now();
    other.publish(100);
    // The first update: the group's minimum is the other's 100 (this one
    // has no watermark yet), the limit 150.
    let first = op.flush(t0);
    assert_eq!(op.alignment().max_allowed_watermark(), 150);
    assert_eq!(first.next_deadline, Some(t0 + UPDATE));
    op.collect((120, 120));
    assert!(op.is_available());
    // A run: 140 is within the limit, 160 is not: the source pauses behind
    // its watermark.
    let records = [(140, 140), (160, 160), (170, 170)];
    let mut it = records.iter().copied();
    assert_eq!(op.collect_many(&mut it, 10), 2);
    assert!(!op.is_available(), "paused");
    assert_eq!(op.out.watermarks(), vec![120, 140, 160]);
    // Before the next update nothing changes, whatever the others do.
    other.publish(115);
    op.flush(t0 + UPDATE / 2);
    assert!(!op.is_available());
    // The update finds the minimum at 115: 160 is within 165.
    let outcome = op.flush(t0 + UPDATE);
    assert!(op.is_available(), "resumed");
    assert_eq!(outcome.next_deadline, Some(t0 + 2 * UPDATE));
    assert_eq!(op.collect_many(&mut it, 10), 1);
    // 170 passes 165: paused again.
    assert!(!op.is_available());
    // The other ends (it publishes i64::MAX): the minimum is this one's
    // 170, within its own drift.
    other.publish(i64::MAX);
    op.flush(t0 + 2 * UPDATE);
    assert!(op.is_available());
}

#[test]
fn an_idle_member_holds_nobody_back() {
    let groups = WatermarkAlignmentGroups::default();
    let quiet_generator = WatermarksWithIdleness::new(
        crate::operators::timestamps::generator::BoundedOutOfOrderness::new(Duration::ZERO),
        Duration::from_millis(20),
    );
    let mut quiet = aligned(&groups, quiet_generator, UPDATE);
    let mut fast = aligned(&groups, Punctuated::default(), Duration::from_secs(3600));
    let t0 = Instant::now();
    let at = |ms| t0 + Duration::from_millis(ms);
    quiet.flush(at(0));
    quiet.collect((10, PLAIN));
    quiet.flush(at(10)); // watermark 9
    fast.flush(at(10)); // limit 59
    fast.collect((60, 60));
    assert!(!fast.is_available(), "60 is ahead of 9 by more than 50");
    quiet.flush(at(20));
    fast.flush(at(20));
    assert!(!fast.is_available(), "the quiet one still counts");
    quiet.flush(at(30));
    assert!(
        quiet.is_idle(),
        "20 ms without records since the check at 10"
    );
    fast.flush(at(30));
    assert!(fast.is_available(), "an idle member does not hold it back");
    // Its own watermark is the minimum now.
    assert_eq!(fast.alignment().max_allowed_watermark(), 60 + 50);
}

#[test]
fn a_paused_source_does_not_turn_idle() {
    let groups = WatermarkAlignmentGroups::default();
    let slow = groups.join("g");
    slow.publish(0);
    let generator = WatermarksWithIdleness::new(Punctuated::default(), Duration::from_millis(20));
    let mut op = aligned(&groups, generator, UPDATE);
    let t0 = Instant::now();
    let at = |ms| t0 + Duration::from_millis(ms);
    op.flush(at(0));
    op.collect((100, 100));
    assert!(!op.is_available());
    // Paused for 100 ms: its input activity clock stands still.
    for ms in (10..=100).step_by(10) {
        op.flush(at(ms));
        assert!(!op.is_idle(), "paused, not idle, at {ms} ms");
    }
    slow.publish(60);
    op.flush(at(110));
    assert!(op.is_available(), "resumed");
    // Resumed without records: idle 20 ms of activity later (the check
    // at 110 ms saw the record of 0 ms).
    op.flush(at(120));
    assert!(!op.is_idle());
    op.flush(at(130));
    assert!(op.is_idle());
    assert!(op
        .out
        .events
        .contains(&Event::Status(weir_net::WatermarkStatus::Idle)));
}

#[test]
fn a_link_that_does_not_follow_a_source_never_pauses() {
    let params = WatermarkAlignment::new("g", Duration::ZERO, UPDATE);
    let groups = WatermarkAlignmentGroups::default();
    let other = groups.join("g");
    other.publish(0);
    let mut op = TimestampsOp::new(
        ts as fn(&Rec) -> i64,
        Punctuated::default(),
        Duration::from_secs(3600),
        LogTail::default(),
    )
    .with_alignment(AlignedSource::new(None, &params));
    op.flush(Instant::now());
    op.collect((1_000, 1_000));
    assert!(op.is_available());
    assert_eq!(op.flush(Instant::now()).next_deadline.map(|_| ()), Some(()));
}
