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
//! open window start (a *pane*, `window::panes`) from key to accumulator, all
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
/// per `(key, window start)` in the window's pane (`window::panes`), fired as a
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

/// The records that follow a run's first, while their timestamps fall
/// in `lo..hi` (the run's window), as `(key, hash, record)`: at most
/// `left`; the first record outside the range ends the run and is kept in
/// `stopped`.
struct WindowRun<'a, I: Iterator, KF, A> {
    records: &'a mut I,
    key_of: &'a KF,
    assigner: &'a A,
    lo: i64,
    hi: i64,
    left: usize,
    /// Records taken from `records` (the one in `stopped` too).
    pulled: usize,
    stopped: Option<I::Item>,
}

impl<I, K, KF, A> Iterator for WindowRun<'_, I, KF, A>
where
    I: Iterator,
    K: KeyHash,
    KF: Fn(&I::Item) -> K,
    A: WindowAssigner<I::Item>,
{
    type Item = (K, u64, I::Item);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let record = self.records.next()?;
        self.pulled += 1;
        self.left -= 1;
        let ts = self.assigner.timestamp(&record);
        if !(self.lo <= ts && ts < self.hi) {
            self.stopped = Some(record);
            self.left = 0;
            return None;
        }
        let key = (self.key_of)(&record);
        let hash = key.key_hash();
        Some((key, hash, record))
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

    /// Runs of records that share the window last assigned, which is open
    /// and has not fired (every in-order record of a tumbling window), are
    /// folded into its table in one loop (`WindowPanes::fold_run`); any
    /// other record goes through [`process`](Self::process).
    #[inline]
    fn process_many<I, KF, C>(
        &mut self,
        records: &mut I,
        key_of: &KF,
        watermark: i64,
        limit: usize,
        out: &mut C,
    ) -> usize
    where
        I: Iterator<Item = W::In>,
        KF: Fn(&W::In) -> K,
        C: Collector<Self::Out>,
    {
        let mut taken = 0;
        while taken < limit && out.is_available() {
            let Some(first) = records.next() else {
                break;
            };
            taken += 1;
            let ts = self.assigner.timestamp(&first);
            let a = self.assigned;
            if !(a.lo <= ts && ts < a.hi && watermark < a.open_below && a.starts.left == 1) {
                let ctx = KeyContext::with_watermark(key_of(&first), watermark);
                self.process(&ctx, first, out);
                continue;
            }
            // Folding emits nothing, so the chain stays available.
            let key = key_of(&first);
            let mut run = WindowRun {
                records: &mut *records,
                key_of,
                assigner: &self.assigner,
                lo: a.lo,
                hi: a.hi,
                left: limit - taken,
                pulled: 0,
                stopped: None,
            };
            let fold = &self.fold;
            let head = (key, key.key_hash(), first);
            let refused = self
                .contents
                .fold_run(a.starts.next, head, &mut run, |acc, v| fold.fold(acc, v));
            let (pulled, stopped) = (run.pulled, run.stopped.take());
            taken += pulled;
            if let Err((key, _, first)) = refused {
                let ctx = KeyContext::with_watermark(key, watermark);
                self.process(&ctx, first, out);
            }
            if let Some(record) = stopped {
                let ctx = KeyContext::with_watermark(key_of(&record), watermark);
                self.process(&ctx, record, out);
            }
        }
        taken
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
mod tests;
