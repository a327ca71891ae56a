//! Event-time tumbling windows with incremental aggregation (Flink's
//! `TumblingEventTimeWindows` with `reduce` / `aggregate`).
//!
//! `keyed.window(TumblingEventTimeWindows::of(size_ms, timestamp_fn))`
//! gives a [`WindowedStream`](crate::job::WindowedStream); its
//! `aggregate(uid, AggregateFunction)` or `reduce(uid, fn)` becomes a keyed
//! process operator ([`WindowOperator`]) that emits `(key, window_start,
//! result)` for every window of every key once the watermark passes the
//! window's end.
//!
//! Records carry no timestamp field, so the assigner takes the timestamp
//! extractor (the same `Fn(&T) -> i64` as the stream's
//! [`WatermarkStrategy`](crate::WatermarkStrategy)). A record with
//! timestamp `ts` belongs to the window `[start, start + size)` with
//! `start = ts - (ts - offset) mod size` (Flink's
//! `TimeWindow::getWindowStartWithOffset`).
//!
//! **State.** One accumulator per `(key, window start)` in a
//! [`KeyedMapState`] named [`WINDOW_CONTENTS_STATE`], and one event-time
//! timer per `(key, window)` at `end - 1` (Flink's `maxTimestamp`) in a
//! [`KeyedTimerService`]. A record of an open window folds into the
//! accumulator (two map lookups); only the first record of a window
//! registers its timer (a window's entry and its timer are created and
//! removed together). Both are checkpointed per key group by the keyed
//! operator, so windows survive failover and rescaling.
//!
//! **Firing.** When the timer at `end - 1` fires (the watermark reached
//! it), the window's result is emitted and its accumulator removed. At the
//! end of the input every remaining window fires (Flink's final `i64::MAX`
//! watermark).
//!
//! **Late records.** A record whose window already fired (`end - 1 <=
//! watermark`) is dropped, as with Flink's default allowed lateness of 0;
//! [`WindowOperator::late_records`] counts them.

use std::marker::PhantomData;

use weir_net::Wire;
use weir_state::KeyHash;

use crate::checkpoint::KeyedStates;
use crate::keyed::{KeyContext, KeyedProcessFunction};
use crate::keyed_state::{AggregateFunction, KeyedMapState};
use crate::operator::Collector;
use crate::timers::{KeyedTimerService, TimeDomain, TimerQueues};

/// State name of a window operator's accumulators in checkpoints.
pub const WINDOW_CONTENTS_STATE: &str = "_window_contents";

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

    /// The window size (ms).
    pub fn size(&self) -> i64 {
        self.size
    }

    /// The start of the window holding timestamp `ts`.
    #[inline]
    pub fn window_start(&self, ts: i64) -> i64 {
        ts - (ts - self.offset).rem_euclid(self.size)
    }

    /// The timestamp of `record`.
    #[inline]
    pub fn timestamp_of<T>(&self, record: &T) -> i64
    where
        TF: Fn(&T) -> i64,
    {
        (self.timestamp)(record)
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

/// The keyed process function behind a tumbling event-time window: one
/// accumulator per `(key, window start)`, fired by an event-time timer at
/// the window's end - 1. Emits `(key, window_start, result)`.
pub struct WindowOperator<K, W, TF>
where
    K: Copy + Eq + KeyHash,
    W: WindowFold,
{
    assigner: TumblingEventTimeWindows<TF>,
    fold: W,
    contents: KeyedMapState<K, i64, W::Acc>,
    timers: KeyedTimerService<K>,
    late: u64,
}

impl<K, W, TF> WindowOperator<K, W, TF>
where
    K: Copy + Eq + KeyHash,
    W: WindowFold,
{
    /// The operator of windows `assigner` folding records with `fold`.
    pub fn new(assigner: TumblingEventTimeWindows<TF>, fold: W) -> Self {
        Self {
            assigner,
            fold,
            contents: KeyedMapState::new(WINDOW_CONTENTS_STATE),
            timers: KeyedTimerService::new(),
            late: 0,
        }
    }

    /// Records dropped because their window had already fired.
    pub fn late_records(&self) -> u64 {
        self.late
    }

    /// Windows open (not fired yet) on this subtask, over all keys.
    pub fn open_windows(&self) -> usize {
        self.contents.total_len()
    }
}

impl<K, W, TF> KeyedProcessFunction for WindowOperator<K, W, TF>
where
    K: Copy + Eq + KeyHash + Wire + 'static,
    W: WindowFold,
    W::Acc: Wire,
    TF: Fn(&W::In) -> i64 + 'static,
{
    type Key = K;
    type In = W::In;
    type Out = (K, i64, W::Out);

    #[inline]
    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        value: W::In,
        _out: &mut C,
    ) {
        let ts = self.assigner.timestamp_of(&value);
        let start = self.assigner.window_start(ts);
        let max_ts = start.saturating_add(self.assigner.size - 1);
        if max_ts <= ctx.current_watermark() {
            self.late += 1;
            return;
        }
        let acc = self.contents.get(ctx, &start);
        if acc.is_none() {
            self.timers.register_event_time_timer(ctx, max_ts);
        }
        let acc = self.fold.fold(acc, value);
        self.contents.put(ctx, start, acc);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.map(&mut self.contents);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<K>> {
        Some(&mut self.timers)
    }

    fn on_timer<C: Collector<Self::Out>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<K>,
        domain: TimeDomain,
        out: &mut C,
    ) {
        if domain != TimeDomain::EventTime {
            return;
        }
        let start = timestamp - (self.assigner.size - 1);
        if let Some(acc) = self.contents.remove(ctx, &start) {
            out.collect((*ctx.key(), start, self.fold.result(&acc)));
        }
    }
}

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
    type Op<W> = KeyedProcessOp<
        WindowOperator<u64, W, Ts>,
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
        KeyedProcessOp::new(
            WindowOperator::new(assigner, fold),
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

    /// splitmix64's finalizer, as a small deterministic generator.
    fn mix(x: u64) -> u64 {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
