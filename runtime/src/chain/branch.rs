//! Where a chain forks: one record to several downstream chains in the same
//! task (a stream used more than once, an operator's side outputs).
//!
//! A chain is monomorphised end to end, so each downstream chain of a fork
//! has a type of its own; a fork holds them as [`BoxedCollector`]s, one
//! virtual call per record and branch. Chains without a fork keep their
//! direct calls, but for a chain whose builder was boxed
//! ([`crate::build::boxed`]): its two halves meet at a [`BoxedCollector`]
//! too, which takes runs of records in one call
//! ([`DynCollector::collect_run`]).
//!
//! A [`Tee`] hands every record to each branch (a clone to all but the
//! last) and every control call to each: the chain can take a record when
//! every branch can (a backpressured branch holds back the others, as one
//! slow consumer of a Flink operator's output does), a barrier is
//! snapshotted in each branch in turn, and the chain has finished when
//! every branch has.

use std::time::Instant;

use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
use crate::core::snapshot::TaskSnapshot;
use crate::core::time::earliest;
use crate::core::timestamp::{current_record_timestamp, set_record_timestamp};

/// A [`Collector`] usable as a trait object (its `collect_many` is generic,
/// so `Collector` itself is not).
pub trait DynCollector<T>: ChainControl {
    /// Takes one record ([`Collector::collect`]).
    fn collect_dyn(&mut self, record: T);

    /// Takes a run of records ([`Collector::collect_many`]): the chain's
    /// own loop over them (an exchange's, a keyed operator's) with the
    /// iterator behind one virtual call per record, instead of a virtual
    /// availability check and a virtual `collect` per record.
    fn collect_run(&mut self, records: &mut dyn Iterator<Item = T>, limit: usize) -> usize;
}

impl<T, C: Collector<T>> DynCollector<T> for C {
    #[inline]
    fn collect_dyn(&mut self, record: T) {
        self.collect(record)
    }

    #[inline]
    fn collect_run(&mut self, mut records: &mut dyn Iterator<Item = T>, limit: usize) -> usize {
        self.collect_many(&mut records, limit)
    }
}

/// A downstream chain of any type taking `T`.
pub struct BoxedCollector<T>(Box<dyn DynCollector<T>>);

impl<T: 'static> BoxedCollector<T> {
    /// Boxes `chain`; a chain that is a `BoxedCollector` already is taken
    /// as it is (a boxed chain built into another is not boxed twice).
    pub fn new<C: Collector<T> + 'static>(chain: C) -> Self {
        let mut chain = Some(chain);
        if let Some(boxed) = (&mut chain as &mut dyn std::any::Any).downcast_mut::<Option<Self>>() {
            return boxed.take().expect("just set");
        }
        Self(Box::new(chain.expect("not taken")))
    }
}

impl<T> Collector<T> for BoxedCollector<T> {
    #[inline]
    fn collect(&mut self, record: T) {
        self.0.collect_dyn(record)
    }

    /// The run goes to the boxed chain in one call
    /// ([`DynCollector::collect_run`]).
    #[inline]
    fn collect_many<I: Iterator<Item = T>>(&mut self, records: &mut I, limit: usize) -> usize {
        self.0.collect_run(records, limit)
    }
}

impl<T> ChainControl for BoxedCollector<T> {
    fn is_available(&self) -> bool {
        self.0.is_available()
    }
    fn is_available_for(&self, records: usize) -> bool {
        self.0.is_available_for(records)
    }
    fn flush(&mut self, now: Instant) -> FlushOutcome {
        self.0.flush(now)
    }
    fn end_input(&mut self) {
        self.0.end_input()
    }
    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        self.0.snapshot(snapshot)
    }
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.0.notify_checkpoint_complete(checkpoint_id)
    }
    fn finish(&mut self) -> bool {
        self.0.finish()
    }
    fn publish_metrics(&mut self) {
        self.0.publish_metrics()
    }
    fn output_pending(&self) -> bool {
        self.0.output_pending()
    }
    fn on_watermark(&mut self, watermark: i64) {
        self.0.on_watermark(watermark)
    }
    fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus) {
        self.0.on_watermark_status(status)
    }
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
        self.0.on_latency_marker(marker)
    }
    fn failure(&self) -> Option<&TaskError> {
        self.0.failure()
    }
}

/// Several downstream chains fed the same records and control calls.
pub struct Tee<T> {
    branches: Vec<BoxedCollector<T>>,
    /// Which branches' [`ChainControl::finish`] returned true.
    finished: Vec<bool>,
    /// Markers passed on so far: the next goes down branch
    /// `next_marker % len`.
    next_marker: usize,
}

impl<T> Tee<T> {
    /// Feeds `branches`, in order.
    pub fn new(branches: Vec<BoxedCollector<T>>) -> Self {
        let finished = vec![false; branches.len()];
        Self {
            branches,
            finished,
            next_marker: 0,
        }
    }

    /// The number of branches.
    pub fn len(&self) -> usize {
        self.branches.len()
    }

    /// Whether there is no branch (its records go nowhere).
    pub fn is_empty(&self) -> bool {
        self.branches.is_empty()
    }
}

impl<T: Clone> Collector<T> for Tee<T> {
    #[inline]
    fn collect(&mut self, record: T) {
        if let Some((last, others)) = self.branches.split_last_mut() {
            // Each branch gets the record with its timestamp, whatever an
            // earlier branch set (a window firing on it).
            let ts = current_record_timestamp();
            for b in others {
                b.collect(record.clone());
                set_record_timestamp(ts);
            }
            last.collect(record);
        }
    }
}

impl<T> ChainControl for Tee<T> {
    fn is_available(&self) -> bool {
        self.branches.iter().all(|b| b.is_available())
    }
    fn is_available_for(&self, records: usize) -> bool {
        self.branches.iter().all(|b| b.is_available_for(records))
    }
    fn flush(&mut self, now: Instant) -> FlushOutcome {
        let mut outcome = FlushOutcome::default();
        for b in &mut self.branches {
            let o = b.flush(now);
            outcome.progressed |= o.progressed;
            outcome.next_deadline = earliest(outcome.next_deadline, o.next_deadline);
        }
        outcome
    }
    fn end_input(&mut self) {
        for b in &mut self.branches {
            b.end_input();
        }
    }
    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        for b in &mut self.branches {
            b.snapshot(snapshot);
        }
    }
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        for b in &mut self.branches {
            b.notify_checkpoint_complete(checkpoint_id);
        }
    }
    fn finish(&mut self) -> bool {
        for (b, done) in self.branches.iter_mut().zip(&mut self.finished) {
            if !*done {
                *done = b.finish();
            }
        }
        self.finished.iter().all(|&d| d)
    }
    fn publish_metrics(&mut self) {
        for b in &mut self.branches {
            b.publish_metrics();
        }
    }
    fn output_pending(&self) -> bool {
        self.branches.iter().any(|b| b.output_pending())
    }
    fn on_watermark(&mut self, watermark: i64) {
        for b in &mut self.branches {
            b.on_watermark(watermark);
        }
    }
    fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus) {
        for b in &mut self.branches {
            b.on_watermark_status(status);
        }
    }
    /// Down one branch, the next in turn: a marker exists once in the job
    /// (Flink picks one output at random).
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
        let n = self.branches.len();
        if n > 0 {
            let b = self.next_marker % n;
            self.next_marker = self.next_marker.wrapping_add(1);
            self.branches[b].on_latency_marker(marker);
        }
    }
    fn failure(&self) -> Option<&TaskError> {
        self.branches.iter().find_map(|b| b.failure())
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;
    use crate::chain::ops::{FilterOp, MapOp};
    use crate::chain::testing::RoomTail;

    /// The records and watermarks a branch saw, whether `finish` was
    /// called, and the source subtasks of the latency markers it saw.
    type Log = (Vec<u64>, Vec<i64>, bool, Vec<u32>);

    /// Records and watermarks a branch saw, readable after boxing; busy if
    /// its flag is set.
    #[derive(Default, Clone)]
    struct Seen(Rc<RefCell<Log>>, bool);

    impl Collector<u64> for Seen {
        fn collect(&mut self, record: u64) {
            self.0.borrow_mut().0.push(record);
        }
    }

    impl ChainControl for Seen {
        fn is_available(&self) -> bool {
            !self.1
        }
        fn flush(&mut self, _: Instant) -> FlushOutcome {
            FlushOutcome::default()
        }
        fn end_input(&mut self) {}
        fn snapshot(&mut self, _: &mut TaskSnapshot) {}
        fn notify_checkpoint_complete(&mut self, _: u64) {}
        fn finish(&mut self) -> bool {
            let mut s = self.0.borrow_mut();
            // Finishes on the second call: a tail waiting for credit.
            let done = s.2;
            s.2 = true;
            done
        }
        fn publish_metrics(&mut self) {}
        fn output_pending(&self) -> bool {
            false
        }
        fn on_watermark(&mut self, watermark: i64) {
            self.0.borrow_mut().1.push(watermark);
        }
        fn on_watermark_status(&mut self, _: weir_net::WatermarkStatus) {}
        fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
            self.0.borrow_mut().3.push(marker.source_subtask);
        }
        fn failure(&self) -> Option<&TaskError> {
            None
        }
    }

    #[test]
    fn a_latency_marker_goes_down_one_branch_in_turn() {
        let (a, b) = (Seen::default(), Seen::default());
        let mut tee = Tee::new(vec![
            BoxedCollector::new(a.clone()),
            BoxedCollector::new(b.clone()),
        ]);
        for subtask in 0..5 {
            tee.on_latency_marker(weir_net::LatencyMarker {
                marked_ns: 0,
                source_stage: 0,
                source_subtask: subtask,
            });
        }
        assert_eq!(a.0.borrow().3, [0, 2, 4]);
        assert_eq!(b.0.borrow().3, [1, 3]);
    }

    #[test]
    fn every_branch_gets_every_record_and_watermark_in_order() {
        let (a, b) = (Seen::default(), Seen::default());
        let mut tee = Tee::new(vec![
            BoxedCollector::new(a.clone()),
            BoxedCollector::new(MapOp {
                f: |x: u64| x * 10,
                out: b.clone(),
            }),
        ]);
        for x in 1..=3 {
            tee.collect(x);
        }
        tee.on_watermark(7);
        tee.collect(4);
        assert_eq!(a.0.borrow().0, [1, 2, 3, 4]);
        assert_eq!(b.0.borrow().0, [10, 20, 30, 40]);
        assert_eq!(a.0.borrow().1, [7]);
        assert_eq!(b.0.borrow().1, [7]);
        assert!(!tee.finish(), "the branches finish on their second call");
        assert!(tee.finish());
    }

    /// A [`RoomTail`] readable after boxing, counting the runs handed to
    /// it.
    #[derive(Clone)]
    struct Room(Rc<RefCell<(RoomTail<u64>, usize)>>);

    impl ChainControl for Room {
        fn is_available(&self) -> bool {
            self.0.borrow().0.is_available()
        }
        fn flush(&mut self, _: Instant) -> FlushOutcome {
            FlushOutcome::default()
        }
        fn end_input(&mut self) {}
        fn snapshot(&mut self, _: &mut TaskSnapshot) {}
        fn notify_checkpoint_complete(&mut self, _: u64) {}
        fn finish(&mut self) -> bool {
            true
        }
        fn publish_metrics(&mut self) {}
        fn output_pending(&self) -> bool {
            false
        }
        fn on_watermark(&mut self, _: i64) {}
        fn on_watermark_status(&mut self, _: weir_net::WatermarkStatus) {}
        fn on_latency_marker(&mut self, _: weir_net::LatencyMarker) {}
        fn failure(&self) -> Option<&TaskError> {
            None
        }
    }

    impl Collector<u64> for Room {
        fn collect(&mut self, record: u64) {
            self.0.borrow_mut().0.collect(record);
        }
        fn collect_many<I: Iterator<Item = u64>>(
            &mut self,
            records: &mut I,
            limit: usize,
        ) -> usize {
            self.0.borrow_mut().1 += 1;
            let mut taken = 0;
            while taken < limit && self.is_available() {
                let Some(r) = records.next() else { break };
                self.collect(r);
                taken += 1;
            }
            taken
        }
    }

    #[test]
    fn a_run_crosses_a_box_in_one_call_and_stops_where_the_chain_does() {
        let room = Room(Rc::new(RefCell::new((RoomTail::new(3), 0))));
        // Boxed twice (a boxed chain built into another): one box.
        let mut boxed = BoxedCollector::new(BoxedCollector::new(FilterOp {
            f: |x: &u64| x.is_multiple_of(2),
            out: room.clone(),
        }));
        let mut records = 0..10u64;
        // 0, 2 and 4 fill the room; 1 and 3 were taken and dropped.
        assert_eq!(boxed.collect_many(&mut records, 8), 5);
        assert_eq!(records.next(), Some(5));
        let (tail, runs) = &*room.0.borrow();
        assert_eq!(tail.items, [0, 2, 4]);
        assert_eq!(tail.overdrafts, 0);
        assert_eq!(*runs, 1, "the run went on as a run");
        assert!(!boxed.is_available());
    }

    #[test]
    fn one_unavailable_branch_holds_back_the_fork() {
        let busy = Seen(Rc::default(), true);
        let tee = Tee::new(vec![
            BoxedCollector::new(Seen::default()),
            BoxedCollector::new(busy),
        ]);
        assert!(!tee.is_available());
    }
}
