//! Event-time windows with incremental aggregation (Flink's
//! `TumblingEventTimeWindows` and `SlidingEventTimeWindows` with `reduce` /
//! `aggregate`, allowed lateness and a side output for late data).
//!
//! `keyed.window(TumblingEventTimeWindows::of(size_ms, timestamp_fn))` (or
//! `SlidingEventTimeWindows::of(size_ms, slide_ms, timestamp_fn)`) gives a
//! [`WindowedStream`](crate::job::WindowedStream); its
//! `aggregate(uid, AggregateFunction)` or `reduce(uid, fn)` becomes a keyed
//! process operator ([`WindowOperator`]) that emits `(key, window_start,
//! result)` for every window of every key once the watermark passes the
//! window's end.
//!
//! Records carry no timestamp field, so the assigner takes the timestamp
//! extractor (the same `Fn(&T) -> i64` as the stream's
//! [`WatermarkStrategy`](crate::WatermarkStrategy)). A record with
//! timestamp `ts` belongs to the tumbling window `[start, start + size)`
//! with `start = ts - (ts - offset) mod size` (Flink's
//! `TimeWindow::getWindowStartWithOffset`), or to the `size / slide`
//! sliding windows starting at `ts - (ts - offset) mod slide` and every
//! `slide` before it while they still hold `ts`.
//!
//! **State.** The accumulators are kept by window: one arena table per
//! open window start (a *pane*, [`panes`]) from key to accumulator, all
//! checkpointed as one keyed state named [`WINDOW_CONTENTS_STATE`], per key
//! group of the key, so windows survive failover and rescaling. A record
//! folds into its window's pane with one probe by the key's hash.
//!
//! **Firing.** When the watermark reaches a window's `end - 1` (Flink's
//! `maxTimestamp`) its pane fires as a whole: every key's result is
//! emitted, windows in start order (the order Flink's per-`(key, window)`
//! timers fire in). Without lateness the pane is then dropped, with an
//! allowed lateness `L > 0` at `end - 1 + L`. At the end of the input every
//! remaining window fires (Flink's final `i64::MAX` watermark).
//!
//! **Late records.** A record is late for a window once `end - 1 + L <=
//! watermark` (Flink's `isWindowLate`). A record for a window that fired
//! but is still within its lateness is added and fires the window again at
//! once, with the updated result (a *late firing*). A record late for all
//! its windows is dropped, counted by [`WindowOperator::late_records`] and
//! handed to the late-data side output if the job set one
//! (`side_output_late_data`).
//!
//! **Other windows and functions.** Session windows
//! ([`EventTimeSessionWindows`], [`ProcessingTimeSessionWindows`], with a
//! static or dynamic gap), processing-time tumbling and sliding windows
//! ([`TumblingProcessingTimeWindows`], [`SlidingProcessingTimeWindows`]),
//! and full-window functions (`process`, and `aggregate_with` /
//! `reduce_with`, which hand the window function the pre-aggregated result
//! and the [`TimeWindow`]) for every kind run on the general window
//! operator of [`general`]; [`assign`] has the assigners and the
//! [`Windowing`] trait `KeyedStream::window` takes, [`contents`] the
//! window contents and functions, [`api`] the `WindowedStream` methods of
//! the full-window functions.

use std::marker::PhantomData;

use weir_net::Wire;
use weir_state::KeyHash;

use crate::checkpoint::snapshot::restore_entries;
use crate::checkpoint::KeyedStates;
use crate::keyed::{KeyContext, KeyedProcessFunction};
use crate::keyed_state::AggregateFunction;
use crate::operator::Collector;

mod panes;

use panes::WindowPanes;

/// State name of a window operator's accumulators in checkpoints.
pub const WINDOW_CONTENTS_STATE: &str = "_window_contents";

/// Decides which event-time windows hold a record (Flink's
/// `WindowAssigner` for time windows).
pub trait WindowAssigner<T>: Clone + Send + Sync + 'static {
    /// The record's event time (ms).
    fn timestamp(&self, record: &T) -> i64;

    /// The windows' size (ms): window `start` is `[start, start + size)`.
    fn size(&self) -> i64;

    /// The starts of the windows holding timestamp `ts`.
    fn window_starts(&self, ts: i64) -> WindowStarts;

    /// [`window_starts`](Self::window_starts) of `ts` and the timestamps
    /// `lo..hi` (holding `ts`) that have the very same windows, so that
    /// the operator assigns consecutive records of one window without
    /// dividing again. By default only `ts` itself.
    #[inline]
    fn window_starts_range(&self, ts: i64) -> (WindowStarts, i64, i64) {
        (self.window_starts(ts), ts, ts.saturating_add(1))
    }
}

/// The starts of the windows holding a timestamp, latest first.
#[derive(Clone, Copy, Debug)]
pub struct WindowStarts {
    next: i64,
    left: u32,
    step: i64,
}

impl Iterator for WindowStarts {
    type Item = i64;

    #[inline]
    fn next(&mut self) -> Option<i64> {
        if self.left == 0 {
            return None;
        }
        let start = self.next;
        self.left -= 1;
        self.next = self.next.wrapping_sub(self.step);
        Some(start)
    }
}

/// The start of the window of `size` and `offset` holding `ts`.
#[inline]
fn start_with_offset(ts: i64, offset: i64, size: i64) -> i64 {
    ts - (ts - offset).rem_euclid(size)
}

/// Flink's `TumblingEventTimeWindows`: fixed-size, non-overlapping
/// event-time windows, with the record timestamp extractor.
#[derive(Clone, Debug)]
pub struct TumblingEventTimeWindows<TF> {
    size: i64,
    offset: i64,
    timestamp: TF,
}

impl<TF> TumblingEventTimeWindows<TF> {
    /// Windows of `size_ms` milliseconds aligned to the epoch; `timestamp`
    /// gives a record's event time (ms).
    ///
    /// # Panics
    ///
    /// If `size_ms` is not positive.
    pub fn of(size_ms: i64, timestamp: TF) -> Self {
        assert!(
            size_ms > 0,
            "TumblingEventTimeWindows: window size must be positive, got {size_ms} ms"
        );
        Self {
            size: size_ms,
            offset: 0,
            timestamp,
        }
    }

    /// The same windows shifted by `offset_ms` (e.g. to align daily windows
    /// to a time zone); taken modulo the size.
    pub fn with_offset(mut self, offset_ms: i64) -> Self {
        self.offset = offset_ms.rem_euclid(self.size);
        self
    }

    /// The start of the window holding timestamp `ts`.
    #[inline]
    pub fn window_start(&self, ts: i64) -> i64 {
        start_with_offset(ts, self.offset, self.size)
    }
}

impl<T, TF> WindowAssigner<T> for TumblingEventTimeWindows<TF>
where
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
{
    #[inline]
    fn timestamp(&self, record: &T) -> i64 {
        (self.timestamp)(record)
    }

    fn size(&self) -> i64 {
        self.size
    }

    #[inline]
    fn window_starts(&self, ts: i64) -> WindowStarts {
        WindowStarts {
            next: self.window_start(ts),
            left: 1,
            step: self.size,
        }
    }

    #[inline]
    fn window_starts_range(&self, ts: i64) -> (WindowStarts, i64, i64) {
        let starts = self.window_starts(ts);
        (starts, starts.next, starts.next.saturating_add(self.size))
    }
}

/// Flink's `SlidingEventTimeWindows`: windows of `size` starting every
/// `slide`, so a record is in `size / slide` of them (rounded up).
#[derive(Clone, Debug)]
pub struct SlidingEventTimeWindows<TF> {
    size: i64,
    slide: i64,
    offset: i64,
    timestamp: TF,
}

impl<TF> SlidingEventTimeWindows<TF> {
    /// Windows of `size_ms` starting every `slide_ms`, aligned to the
    /// epoch; `timestamp` gives a record's event time (ms).
    ///
    /// # Panics
    ///
    /// If the size or the slide is not positive.
    pub fn of(size_ms: i64, slide_ms: i64, timestamp: TF) -> Self {
        assert!(
            size_ms > 0 && slide_ms > 0,
            "SlidingEventTimeWindows: size and slide must be positive, got {size_ms} ms and {slide_ms} ms"
        );
        Self {
            size: size_ms,
            slide: slide_ms,
            offset: 0,
            timestamp,
        }
    }

    /// The same windows shifted by `offset_ms`; taken modulo the slide.
    pub fn with_offset(mut self, offset_ms: i64) -> Self {
        self.offset = offset_ms.rem_euclid(self.slide);
        self
    }
}

impl<T, TF> WindowAssigner<T> for SlidingEventTimeWindows<TF>
where
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
{
    #[inline]
    fn timestamp(&self, record: &T) -> i64 {
        (self.timestamp)(record)
    }

    fn size(&self) -> i64 {
        self.size
    }

    #[inline]
    fn window_starts(&self, ts: i64) -> WindowStarts {
        let last = start_with_offset(ts, self.offset, self.slide);
        // Windows starting at last, last - slide, ... while start > ts - size.
        let span = last - (ts - self.size);
        let count = if span > 0 {
            (span - 1) / self.slide + 1
        } else {
            0
        };
        WindowStarts {
            next: last,
            left: u32::try_from(count).unwrap_or(u32::MAX),
            step: self.slide,
        }
    }

    #[inline]
    fn window_starts_range(&self, ts: i64) -> (WindowStarts, i64, i64) {
        // The same windows hold the timestamps from the latest start (and
        // past the end of the window before the oldest) up to the next
        // start or the oldest window's end, whichever comes first.
        let starts = self.window_starts(ts);
        if starts.left == 0 {
            return (starts, ts, ts.saturating_add(1));
        }
        let last = starts.next;
        let oldest = last.saturating_sub(i64::from(starts.left - 1).saturating_mul(self.slide));
        let lo = last.max(oldest.saturating_sub(self.slide).saturating_add(self.size));
        let hi = last
            .saturating_add(self.slide)
            .min(oldest.saturating_add(self.size));
        (starts, lo, hi)
    }
}

/// How a window's accumulator takes a record and yields its result: the
/// common part of `aggregate` and `reduce`.
pub trait WindowFold: 'static {
    /// Records in.
    type In;
    /// The accumulator stored per `(key, window)`.
    type Acc: Copy;
    /// The window's result.
    type Out;

    /// `acc` (none for the window's first record) with `value` folded in.
    fn fold(&self, acc: Option<Self::Acc>, value: Self::In) -> Self::Acc;

    /// The result of a window whose accumulator is `acc`.
    fn result(&self, acc: &Self::Acc) -> Self::Out;
}

/// [`WindowFold`] by an [`AggregateFunction`] (Flink's
/// `WindowedStream::aggregate`).
#[derive(Clone, Debug)]
pub struct AggregateFold<A>(pub A);

impl<A: AggregateFunction> WindowFold for AggregateFold<A> {
    type In = A::In;
    type Acc = A::Acc;
    type Out = A::Out;

    #[inline]
    fn fold(&self, acc: Option<A::Acc>, value: A::In) -> A::Acc {
        let acc = acc.unwrap_or_else(|| self.0.create_accumulator());
        self.0.add(value, acc)
    }

    fn result(&self, acc: &A::Acc) -> A::Out {
        self.0.get_result(acc)
    }
}

/// [`WindowFold`] by a reduce function (Flink's `WindowedStream::reduce`):
/// the window's result is its records combined pairwise.
pub struct ReduceFold<T, F> {
    reduce: F,
    _record: PhantomData<fn(T) -> T>,
}

impl<T, F: Clone> Clone for ReduceFold<T, F> {
    fn clone(&self) -> Self {
        Self::new(self.reduce.clone())
    }
}

impl<T, F> ReduceFold<T, F> {
    /// The fold combining records with `reduce`.
    pub fn new(reduce: F) -> Self {
        Self {
            reduce,
            _record: PhantomData,
        }
    }
}

impl<T, F> WindowFold for ReduceFold<T, F>
where
    T: Copy + 'static,
    F: Fn(T, T) -> T + 'static,
{
    type In = T;
    type Acc = T;
    type Out = T;

    #[inline]
    fn fold(&self, acc: Option<T>, value: T) -> T {
        match acc {
            Some(a) => (self.reduce)(a, value),
            None => value,
        }
    }

    fn result(&self, acc: &T) -> T {
        *acc
    }
}

/// Where a window operator hands the records it drops as late.
pub type LateOutput<T> = Box<dyn FnMut(T)>;

/// The keyed process function behind event-time windows: one accumulator
/// per `(key, window start)` in the window's pane ([`panes`]), fired as a
/// whole when the watermark reaches the window's end - 1 and retired after
/// the allowed lateness. Emits `(key, window_start, result)`.
pub struct WindowOperator<K, W, A>
where
    K: Copy + Eq + KeyHash,
    W: WindowFold,
{
    assigner: A,
    size: i64,
    lateness: i64,
    fold: W,
    contents: WindowPanes<K, W::Acc>,
    /// The windows last assigned, for the timestamps that have them.
    assigned: Assigned,
    late: u64,
    late_output: Option<LateOutput<W::In>>,
}

impl<K, W, A> WindowOperator<K, W, A>
where
    K: Copy + Eq + KeyHash,
    W: WindowFold,
    A: WindowAssigner<W::In>,
{
    /// The operator of windows `assigner` folding records with `fold`,
    /// without allowed lateness or late-data output.
    pub fn new(assigner: A, fold: W) -> Self {
        Self {
            size: assigner.size(),
            assigner,
            lateness: 0,
            fold,
            contents: WindowPanes::new(WINDOW_CONTENTS_STATE),
            assigned: Assigned::NONE,
            late: 0,
            late_output: None,
        }
    }

    /// The same operator keeping windows `lateness_ms` after they fired:
    /// records arriving meanwhile update them and fire them again.
    ///
    /// # Panics
    ///
    /// If `lateness_ms` is negative.
    pub fn with_allowed_lateness(mut self, lateness_ms: i64) -> Self {
        assert!(
            lateness_ms >= 0,
            "window allowed lateness must not be negative, got {lateness_ms} ms"
        );
        self.lateness = lateness_ms;
        self
    }

    /// The same operator handing records late for all their windows to
    /// `late` (Flink's `sideOutputLateData`).
    pub fn with_late_output(mut self, late: LateOutput<W::In>) -> Self {
        self.late_output = Some(late);
        self
    }

    /// Records dropped because all their windows were past their lateness.
    pub fn late_records(&self) -> u64 {
        self.late
    }

    /// Windows kept (not cleaned up yet) on this subtask, over all keys.
    pub fn open_windows(&self) -> usize {
        self.contents.len()
    }

    /// Fires the windows the watermark `watermark` completed.
    fn fire<C: Collector<(K, i64, W::Out)>>(&mut self, watermark: i64, out: &mut C) {
        let fold = &self.fold;
        self.contents
            .fire(watermark, self.size, self.lateness, |key, start, acc| {
                out.collect((key, start, fold.result(acc)));
            });
    }

    /// Assigns the windows of timestamp `ts` (and of the timestamps that
    /// share them).
    #[cold]
    #[inline(never)]
    fn assign(&mut self, ts: i64) {
        let (starts, lo, hi) = self.assigner.window_starts_range(ts);
        // The oldest window ends first.
        let open_below = starts
            .last()
            .map_or(i64::MIN, |oldest| oldest.saturating_add(self.size - 1));
        self.assigned = Assigned {
            starts,
            lo,
            hi,
            open_below,
        };
    }

    /// Emits the current result of the current key's window `start`: a
    /// late firing.
    #[cold]
    #[inline(never)]
    fn late_firing<C: Collector<(K, i64, W::Out)>>(
        &mut self,
        ctx: &KeyContext<K>,
        start: i64,
        out: &mut C,
    ) {
        if let Some(acc) = self.contents.get(ctx, start) {
            out.collect((*ctx.key(), start, self.fold.result(&acc)));
        }
    }

    /// A record some of whose windows reached their end: windows past
    /// their lateness skip it, the others take it (and fire again if they
    /// fired); a record no window takes is late.
    #[cold]
    #[inline(never)]
    fn process_late<C: Collector<(K, i64, W::Out)>>(
        &mut self,
        ctx: &KeyContext<K>,
        value: W::In,
        watermark: i64,
        out: &mut C,
    ) where
        W::In: Clone,
    {
        let mut taken = false;
        for start in self.assigned.starts {
            let max_ts = start.saturating_add(self.size - 1);
            let cleanup = max_ts.saturating_add(self.lateness);
            if cleanup <= watermark {
                continue;
            }
            taken = true;
            let fold = &self.fold;
            let fired = self
                .contents
                .fold_or_fire(ctx, start, max_ts <= watermark, |acc| {
                    fold.fold(acc, value.clone())
                });
            if fired {
                // Within the allowed lateness: a late firing.
                self.late_firing(ctx, start, out);
            }
        }
        if !taken {
            self.late += 1;
            if let Some(late) = &mut self.late_output {
                late(value);
            }
        }
    }
}

/// The windows a window operator assigned last.
#[derive(Clone, Copy, Debug)]
struct Assigned {
    starts: WindowStarts,
    /// The timestamps `lo..hi` have these windows.
    lo: i64,
    hi: i64,
    /// The last timestamp of the window that ends first: while the
    /// watermark is below it, every window is open.
    open_below: i64,
}

impl Assigned {
    /// Before the first record: no timestamp has these windows.
    const NONE: Self = Self {
        starts: WindowStarts {
            next: 0,
            left: 0,
            step: 1,
        },
        lo: 0,
        hi: 0,
        open_below: i64::MIN,
    };
}

impl<K, W, A> KeyedProcessFunction for WindowOperator<K, W, A>
where
    K: Copy + Eq + KeyHash + Wire + 'static,
    W: WindowFold,
    W::In: Clone,
    W::Acc: Wire,
    A: WindowAssigner<W::In>,
{
    type Key = K;
    type In = W::In;
    type Out = (K, i64, W::Out);

    #[inline]
    fn process<C: Collector<Self::Out>>(&mut self, ctx: &KeyContext<K>, value: W::In, out: &mut C) {
        let ts = self.assigner.timestamp(&value);
        let watermark = ctx.current_watermark();
        if !(self.assigned.lo <= ts && ts < self.assigned.hi) {
            self.assign(ts);
        }
        if watermark >= self.assigned.open_below {
            return self.process_late(ctx, value, watermark, out);
        }
        // Every window of the record is before its end: fold, and emit
        // only for a window restored as fired (a late firing). Tumbling
        // windows have one, without the loop.
        let starts = self.assigned.starts;
        if starts.left == 1 {
            let fold = &self.fold;
            if self
                .contents
                .fold(ctx, starts.next, |acc| fold.fold(acc, value))
            {
                self.late_firing(ctx, starts.next, out);
            }
            return;
        }
        for start in starts {
            let fold = &self.fold;
            let fired = self
                .contents
                .fold(ctx, start, |acc| fold.fold(acc, value.clone()));
            if fired {
                self.late_firing(ctx, start, out);
            }
        }
    }

    fn on_watermark<C: Collector<Self::Out>>(&mut self, watermark: i64, out: &mut C) {
        self.fire(watermark, out);
    }

    fn on_end_of_input<C: Collector<Self::Out>>(&mut self, out: &mut C) {
        // Flink's final watermark: every window fires.
        self.fire(i64::MAX, out);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        let name = self.contents.name().to_owned();
        states.visit(
            &name,
            &mut self.contents,
            |c| Box::new(c.freeze()),
            |scope, c| restore_entries(scope, &name, c),
        );
    }
}

pub mod api;
pub mod assign;
pub mod contents;
pub mod general;
pub mod processing_time;

pub use assign::{
    DynamicEventTimeSessionWindows, EventTimeSessionWindows, ProcessingClock, TimeWindow,
    WindowSpec, Windowing,
};
pub use contents::{
    Accumulated, Buffered, FnProcessWindowFunction, FnWindowFunction, KeyStartResult, MergeFold,
    ProcessWindowFunction, WindowCollector, WindowContents, WindowFunction, WINDOW_ELEMENTS_STATE,
};
pub use general::{GeneralWindowOperator, WINDOWS_STATE};
pub use processing_time::{
    DynamicProcessingTimeSessionWindows, ProcessingTimeSessionWindows,
    SlidingProcessingTimeWindows, TumblingProcessingTimeWindows,
};

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::keyed::KeyedProcessOp;
    use crate::operator::tests::VecTail;
    use crate::operator::ChainControl;
    use crate::source::SubtaskInfo;

    /// Count and sum of the second field.
    #[derive(Clone)]
    struct CountSum;

    impl AggregateFunction for CountSum {
        type In = (u64, i64, u64);
        type Acc = (u64, u64);
        type Out = (u64, u64);
        fn create_accumulator(&self) -> (u64, u64) {
            (0, 0)
        }
        fn add(&self, v: (u64, i64, u64), (c, s): (u64, u64)) -> (u64, u64) {
            (c + 1, s + v.2)
        }
        fn get_result(&self, acc: &(u64, u64)) -> (u64, u64) {
            *acc
        }
        fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
            (a.0 + b.0, a.1 + b.1)
        }
    }

    type Rec = (u64, i64, u64);
    type Ts = fn(&Rec) -> i64;
    type Op<W, A = TumblingEventTimeWindows<Ts>> = KeyedProcessOp<
        WindowOperator<u64, W, A>,
        fn(&Rec) -> u64,
        VecTail<(u64, i64, <W as WindowFold>::Out)>,
    >;

    fn info() -> SubtaskInfo {
        SubtaskInfo {
            index: 0,
            parallelism: 1,
            worker: 0,
            max_parallelism: 128,
        }
    }

    fn op<W: WindowFold<In = Rec>>(size: i64, fold: W) -> Op<W>
    where
        W::Acc: Wire,
    {
        let assigner = TumblingEventTimeWindows::of(size, (|r: &Rec| r.1) as Ts);
        op_with(WindowOperator::new(assigner, fold))
    }

    fn op_with<W: WindowFold<In = Rec>, A: WindowAssigner<Rec>>(
        window: WindowOperator<u64, W, A>,
    ) -> Op<W, A>
    where
        W::Acc: Wire,
    {
        KeyedProcessOp::new(
            window,
            (|r: &Rec| r.0) as fn(&Rec) -> u64,
            VecTail {
                items: Vec::new(),
                finished: false,
                watermarks: Vec::new(),
                statuses: Vec::new(),
            },
            "window",
            &info(),
            false,
        )
    }

    #[test]
    fn window_start_follows_flink_also_for_negative_times_and_offsets() {
        let w = TumblingEventTimeWindows::of(1000, |_: &()| 0);
        assert_eq!(w.window_start(0), 0);
        assert_eq!(w.window_start(999), 0);
        assert_eq!(w.window_start(1000), 1000);
        assert_eq!(w.window_start(-1), -1000);
        let w = w.with_offset(250);
        assert_eq!(w.window_start(249), -750);
        assert_eq!(w.window_start(250), 250);
    }

    #[test]
    fn windows_fire_when_the_watermark_passes_their_end_and_late_records_are_dropped() {
        let mut op = op(10, AggregateFold(CountSum));
        op.collect((1, 0, 5));
        op.collect((1, 9, 7));
        op.collect((2, 3, 1));
        op.collect((1, 10, 100));
        op.on_watermark(8);
        assert!(op.output_mut().items.is_empty(), "no window ended yet");
        op.on_watermark(9);
        let mut fired = std::mem::take(&mut op.output_mut().items);
        fired.sort();
        assert_eq!(fired, vec![(1, 0, (2, 12)), (2, 0, (1, 1))]);
        // Window [0, 10) fired: a record for it is late and dropped.
        op.collect((2, 5, 1000));
        op.collect((2, 15, 3));
        op.end_input();
        let mut fired = std::mem::take(&mut op.output_mut().items);
        fired.sort();
        assert_eq!(fired, vec![(1, 10, (1, 100)), (2, 10, (1, 3))]);
        // The watermark reached the chain after the windows it fired.
        assert_eq!(op.output_mut().watermarks, vec![8, 9]);
    }

    #[test]
    fn reduce_keeps_one_value_per_window() {
        let mut op = op(
            5,
            ReduceFold::new(|a: Rec, b: Rec| (a.0, a.1.max(b.1), a.2.max(b.2))),
        );
        for (k, ts, v) in [(7, 1, 3), (7, 4, 9), (7, 2, 4), (7, 6, 1)] {
            op.collect((k, ts, v));
        }
        op.on_watermark(4);
        assert_eq!(op.output_mut().items, vec![(7, 0, (7, 4, 9))]);
    }

    /// Brute force: every record of a window that had not fired when it
    /// arrived counts; a window fires once, with what it had.
    #[test]
    fn random_out_of_order_inputs_match_a_brute_force_reference() {
        let mut rng = 0x1234_5678_u64;
        let mut next = move || {
            rng = crate::window::tests::mix(rng);
            rng
        };
        for round in 0..50 {
            let size = 1 + (next() % 20) as i64;
            let mut op = op(size, AggregateFold(CountSum));
            let mut expected: BTreeMap<(u64, i64), (u64, u64)> = BTreeMap::new();
            let mut watermark = i64::MIN;
            let mut late = 0u64;
            for i in 0..400u64 {
                if next() % 10 == 0 {
                    let w = (i as i64) / 2 - (next() % 30) as i64;
                    if w > watermark {
                        watermark = w;
                        op.on_watermark(w);
                    }
                }
                let key = next() % 4;
                let ts = (i as i64) / 2 - (next() % 40) as i64;
                let start = ts - ts.rem_euclid(size);
                op.collect((key, ts, i));
                if start + size - 1 <= watermark {
                    late += 1;
                    continue;
                }
                let e = expected.entry((key, start)).or_default();
                e.0 += 1;
                e.1 += i;
            }
            op.end_input();
            let mut got: Vec<_> = std::mem::take(&mut op.output_mut().items);
            got.sort();
            let want: Vec<_> = expected.into_iter().map(|((k, s), r)| (k, s, r)).collect();
            assert_eq!(got, want, "round {round}, size {size}");
            assert_eq!(op.function_mut().late_records(), late, "round {round}");
            assert_eq!(op.function_mut().open_windows(), 0, "round {round}");
        }
    }

    /// Brute force of sliding windows with allowed lateness over random
    /// out-of-order input: replays the input keeping, per `(key, window)`,
    /// its records; a window fires when the watermark reaches its end - 1
    /// and again on every record accepted after that; a record goes to the
    /// side output when all its windows are past their lateness.
    #[test]
    fn sliding_windows_with_lateness_match_a_brute_force_reference() {
        use std::cell::RefCell;
        use std::rc::Rc;

        let mut rng = 0xABCD_u64;
        let mut next = move || {
            rng = mix(rng);
            rng
        };
        for round in 0..60 {
            let slide = 1 + (next() % 7) as i64;
            let size = slide * (1 + (next() % 4) as i64)
                + if round % 3 == 0 {
                    0
                } else {
                    (next() % 3) as i64
                };
            let lateness = [0, 0, 3, 10][(next() % 4) as usize];
            let late_seen = Rc::new(RefCell::new(Vec::new()));
            let sink = late_seen.clone();
            let assigner = SlidingEventTimeWindows::of(size, slide, (|r: &Rec| r.1) as Ts);
            let mut op = op_with(
                WindowOperator::new(assigner, AggregateFold(CountSum))
                    .with_allowed_lateness(lateness)
                    .with_late_output(Box::new(move |r: Rec| sink.borrow_mut().push(r))),
            );
            // Per window: (count, sum), fired yet.
            let mut windows: BTreeMap<(u64, i64), ((u64, u64), bool)> = BTreeMap::new();
            let mut want = Vec::new();
            let mut want_late = Vec::new();
            let mut watermark = i64::MIN;
            for i in 0..300u64 {
                if next() % 8 == 0 {
                    let w = (i as i64) / 2 - (next() % 25) as i64;
                    if w > watermark {
                        watermark = w;
                        op.on_watermark(w);
                        for (&(k, s), (acc, fired)) in windows.iter_mut() {
                            if !*fired && s + size - 1 <= w {
                                *fired = true;
                                want.push((k, s, *acc));
                            }
                        }
                    }
                }
                let key = next() % 3;
                let ts = (i as i64) / 2 - (next() % 30) as i64;
                op.collect((key, ts, i));
                let mut taken = false;
                // Every window start s with s <= ts < s + size, s = k * slide.
                let mut s = ts - ts.rem_euclid(slide);
                while s > ts - size {
                    if s + size - 1 + lateness > watermark {
                        taken = true;
                        let (acc, fired) = windows.entry((key, s)).or_insert(((0, 0), false));
                        acc.0 += 1;
                        acc.1 += i;
                        if s + size - 1 <= watermark {
                            *fired = true;
                            want.push((key, s, *acc));
                        }
                    }
                    s -= slide;
                }
                if !taken {
                    want_late.push((key, ts, i));
                }
            }
            op.end_input();
            for (&(k, s), (acc, fired)) in windows.iter() {
                if !*fired {
                    want.push((k, s, *acc));
                }
            }
            let mut got = std::mem::take(&mut op.output_mut().items);
            got.sort();
            want.sort();
            let what = format!("round {round}: size {size}, slide {slide}, lateness {lateness}");
            assert_eq!(got, want, "{what}");
            assert_eq!(*late_seen.borrow(), want_late, "{what}");
            assert_eq!(
                op.function_mut().late_records(),
                want_late.len() as u64,
                "{what}"
            );
            assert_eq!(op.function_mut().open_windows(), 0, "{what}");
        }
    }

    #[test]
    fn sliding_windows_assign_every_window_holding_a_timestamp() {
        let w = SlidingEventTimeWindows::of(10, 3, |_: &()| 0);
        assert_eq!(
            WindowAssigner::<()>::window_starts(&w, 7).collect::<Vec<_>>(),
            vec![6, 3, 0]
        );
        assert_eq!(
            WindowAssigner::<()>::window_starts(&w, -1).collect::<Vec<_>>(),
            vec![-3, -6, -9]
        );
        // Windows shorter than the slide leave gaps: no window there.
        let gaps = SlidingEventTimeWindows::of(2, 5, |_: &()| 0);
        assert_eq!(
            WindowAssigner::<()>::window_starts(&gaps, 6).collect::<Vec<_>>(),
            vec![5]
        );
        assert_eq!(WindowAssigner::<()>::window_starts(&gaps, 7).count(), 0);
    }

    /// The range an assigner reports holds exactly the timestamps with the
    /// same windows: the operator reuses them there without re-assigning.
    #[test]
    fn window_starts_range_covers_exactly_the_timestamps_with_the_same_windows() {
        fn check<A: WindowAssigner<()>>(a: &A, ts: i64) {
            let (starts, lo, hi) = a.window_starts_range(ts);
            let want: Vec<i64> = a.window_starts(ts).collect();
            assert_eq!(starts.collect::<Vec<_>>(), want);
            assert!(lo <= ts && ts < hi, "{ts} outside {lo}..{hi}");
            for t in lo..hi {
                assert_eq!(a.window_starts(t).collect::<Vec<_>>(), want, "ts {t}");
            }
            assert_ne!(a.window_starts(lo - 1).collect::<Vec<_>>(), want);
            assert_ne!(a.window_starts(hi).collect::<Vec<_>>(), want);
        }
        let mut rng = 99_u64;
        for _ in 0..200 {
            rng = mix(rng);
            let size = 1 + (rng % 17) as i64;
            let slide = 1 + (rng >> 8) as i64 % 9;
            let offset = (rng >> 16) as i64 % 50;
            let ts = (rng >> 24) as i64 % 1000 - 500;
            check(
                &TumblingEventTimeWindows::of(size, |_: &()| 0).with_offset(offset),
                ts,
            );
            // Windows shorter than their slide leave gaps with no window.
            let sliding = SlidingEventTimeWindows::of(size.max(slide), slide, |_: &()| 0);
            check(&sliding.with_offset(offset), ts);
        }
    }

    /// splitmix64's finalizer, as a small deterministic generator.
    fn mix(x: u64) -> u64 {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
