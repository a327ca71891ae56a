//! Interval join of two keyed streams (Flink's
//! `KeyedStream.intervalJoin(other).between(lower, upper).process(..)`).
//!
//! For each key, a left record at `tL` joins a right record at `tR` when
//! `tL + lower <= tR <= tL + upper` (bounds inclusive unless made
//! exclusive, which moves them by 1 ms inward as in Flink). Records carry
//! no timestamp: each side has a timestamp extractor.
//!
//! The [`IntervalJoinOperator`] is a [`KeyedCoProcessFunction`] following
//! Flink's `IntervalJoinOperator`:
//!
//! - A record is **late** when the operator's watermark is set and the
//!   record's timestamp is below it; it is dropped and counted, and
//!   handed to the side's late-data output if there is one (Flink's
//!   `sideOutputLeftLateData` / `sideOutputRightLateData`).
//! - Otherwise it is **buffered** in its side's keyed map state under
//!   `(timestamp, n)` (the `n`-th record of that timestamp; a second map
//!   holds the count per timestamp), then joined with every buffered record
//!   of the other side of the key whose timestamp is in range, in the
//!   buffer's order. Records are fixed-size (`Copy`), like all keyed state
//!   in weir, so buffers live in the arena and need no allocation per
//!   record.
//! - It registers an event-time **cleanup timer**: left at
//!   `tL + max(upper, 0)`, right at `tR + max(-lower, 0)`, the first
//!   watermark at which no record that is not late can match it any more.
//!   When timer `T` fires, the left bucket `T - max(upper, 0)` and the right
//!   bucket `T - max(-lower, 0)` are removed: both hold exactly the records
//!   whose cleanup time is `T` (Flink keeps one timer namespace per side;
//!   one shared timer per `(key, T)` removes the same buckets).
//!
//! The buffers and timers are keyed state, so they are checkpointed per key
//! group, restored, and follow their keys when the stage rescales.

use weir_net::Wire;
use weir_state::{StateKey, StateValue};

use crate::chain::control::Collector;
use crate::core::duration::Offset;
use crate::operators::error::OperatorError;
use crate::operators::late_data::LateOutput;
use crate::operators::side_output::{SideOutput, SideOutputs};
use crate::operators::two_input::KeyedCoProcessFunction;
use crate::state::key_context::KeyContext;
use crate::state::map::KeyedMapState;
use crate::state::timers::{KeyedTimerService, TimeDomain, TimerQueues};
use crate::state::visitor::KeyedStates;

/// The timestamps of a joined pair (Flink's `ProcessJoinFunction.Context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinContext {
    left: i64,
    right: i64,
}

impl JoinContext {
    /// The left record's timestamp (ms).
    pub fn left_timestamp(&self) -> i64 {
        self.left
    }

    /// The right record's timestamp (ms).
    pub fn right_timestamp(&self) -> i64 {
        self.right
    }

    /// The pair's timestamp: the larger of the two, as in Flink.
    pub fn timestamp(&self) -> i64 {
        self.left.max(self.right)
    }
}

/// User logic of an interval join (Flink's `ProcessJoinFunction`): called
/// once per joined pair.
pub trait ProcessJoinFunction<L, R>: 'static {
    /// Records out.
    type Out;

    /// Handles the pair `(left, right)` of one key whose timestamps are in
    /// `ctx`.
    fn process_element<C: Collector<Self::Out>>(
        &mut self,
        left: L,
        right: R,
        ctx: &JoinContext,
        out: &mut C,
    );
}

/// The join interval with Flink's exclusive bounds applied: inclusive
/// `lower..=upper` of `tR - tL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinBounds {
    pub(crate) lower: i64,
    pub(crate) upper: i64,
}

impl JoinBounds {
    /// Bounds `lower..upper` of `tR - tL`, each inclusive unless marked
    /// exclusive; an error names the problem when no difference is left.
    /// A bound before the left record's timestamp is
    /// [`Offset::before`]; a plain [`Duration`](std::time::Duration) is
    /// one after.
    ///
    /// # Panics
    ///
    /// If a bound is not a whole number of milliseconds.
    pub fn new(
        lower: impl Into<Offset>,
        upper: impl Into<Offset>,
        lower_exclusive: bool,
        upper_exclusive: bool,
    ) -> Result<Self, OperatorError> {
        Self::from_millis(
            lower.into().millis("interval join: lower bound"),
            upper.into().millis("interval join: upper bound"),
            lower_exclusive,
            upper_exclusive,
        )
    }

    /// [`new`](Self::new) of bounds already in signed milliseconds.
    pub(crate) fn from_millis(
        lower: i64,
        upper: i64,
        lower_exclusive: bool,
        upper_exclusive: bool,
    ) -> Result<Self, OperatorError> {
        let l = if lower_exclusive {
            lower.saturating_add(1)
        } else {
            lower
        };
        let u = if upper_exclusive {
            upper.saturating_sub(1)
        } else {
            upper
        };
        if l > u {
            return Err(OperatorError::EmptyJoinInterval {
                lower,
                upper,
                lower_exclusive,
                upper_exclusive,
            });
        }
        Ok(Self { lower: l, upper: u })
    }

    /// Whether a left record at `tl` and a right at `tr` join.
    #[inline]
    pub fn contains(&self, tl: i64, tr: i64) -> bool {
        let d = i128::from(tr) - i128::from(tl);
        d >= i128::from(self.lower) && d <= i128::from(self.upper)
    }

    /// When a left record at `tl` can be dropped: the first watermark at
    /// which no right record that is not late can match it.
    pub fn left_cleanup(&self, tl: i64) -> i64 {
        tl.saturating_add(self.upper.max(0))
    }

    /// When a right record at `tr` can be dropped (as
    /// [`left_cleanup`](Self::left_cleanup)).
    pub fn right_cleanup(&self, tr: i64) -> i64 {
        tr.saturating_add(self.lower.saturating_neg().max(0))
    }
}

/// One side's buffer: records by `(timestamp, n)` and the count per
/// timestamp.
struct SideBuffer<K, T>
where
    K: StateKey,
    T: StateValue,
{
    records: KeyedMapState<K, (i64, u32), T>,
    counts: KeyedMapState<K, i64, u32>,
}

impl<K, T> SideBuffer<K, T>
where
    K: StateKey + Wire,
    T: StateValue + Wire,
{
    fn new(side: &str) -> Self {
        Self {
            records: KeyedMapState::new(&format!("_interval_join_{side}")),
            counts: KeyedMapState::new(&format!("_interval_join_{side}_counts")),
        }
    }

    fn add(&mut self, ctx: &KeyContext<K>, ts: i64, record: T) {
        let n = self.counts.get(ctx, &ts).unwrap_or(0);
        self.records.put(ctx, (ts, n), record);
        self.counts.put(ctx, ts, n + 1);
    }

    fn remove_bucket(&mut self, ctx: &KeyContext<K>, ts: i64) {
        if let Some(n) = self.counts.remove(ctx, &ts) {
            for i in 0..n {
                self.records.remove(ctx, &(ts, i));
            }
        }
    }

    fn visit(&mut self, states: &mut KeyedStates<'_>) {
        states.map(&mut self.records);
        states.map(&mut self.counts);
    }
}

/// Flink's `IntervalJoinOperator` as a keyed two-input function: see the
/// module documentation.
pub struct IntervalJoinOperator<K, L, R, TL, TR, F>
where
    K: StateKey,
    L: StateValue,
    R: StateValue,
{
    bounds: JoinBounds,
    left_ts: TL,
    right_ts: TR,
    func: F,
    left: SideBuffer<K, L>,
    right: SideBuffer<K, R>,
    timers: KeyedTimerService<K>,
    late: [u64; 2],
    late_left: Option<LateOutput<L>>,
    late_right: Option<LateOutput<R>>,
    /// The side outputs the late outputs emit to, to be connected.
    late_sides: (Option<SideOutput<L>>, Option<SideOutput<R>>),
}

impl<K, L, R, TL, TR, F> IntervalJoinOperator<K, L, R, TL, TR, F>
where
    K: StateKey + Wire,
    L: StateValue + Wire,
    R: StateValue + Wire,
    TL: Fn(&L) -> i64,
    TR: Fn(&R) -> i64,
    F: ProcessJoinFunction<L, R>,
{
    /// A join within `bounds` whose records' timestamps come from
    /// `left_ts` and `right_ts`, handing pairs to `func`.
    pub fn new(bounds: JoinBounds, left_ts: TL, right_ts: TR, func: F) -> Self {
        Self {
            bounds,
            left_ts,
            right_ts,
            func,
            left: SideBuffer::new("left"),
            right: SideBuffer::new("right"),
            timers: KeyedTimerService::new(),
            late: [0, 0],
            late_left: None,
            late_right: None,
            late_sides: (None, None),
        }
    }

    /// Emits the records dropped as late to the side outputs `left` and
    /// `right` (Flink's `sideOutputLeftLateData` / `sideOutputRightLateData`
    /// with a tag).
    pub fn with_late_side_outputs(
        mut self,
        left: Option<SideOutput<L>>,
        right: Option<SideOutput<R>>,
    ) -> Self {
        if let Some(out) = &left {
            let out = out.clone();
            self.late_left = Some(Box::new(move |r| out.emit(r)));
        }
        if let Some(out) = &right {
            let out = out.clone();
            self.late_right = Some(Box::new(move |r| out.emit(r)));
        }
        self.late_sides = (left, right);
        self
    }

    /// Hands the left records dropped as late to `late` (Flink's
    /// `sideOutputLeftLateData`).
    pub fn with_left_late_output(mut self, late: LateOutput<L>) -> Self {
        self.late_left = Some(late);
        self
    }

    /// Hands the right records dropped as late to `late` (Flink's
    /// `sideOutputRightLateData`).
    pub fn with_right_late_output(mut self, late: LateOutput<R>) -> Self {
        self.late_right = Some(late);
        self
    }

    /// Records buffered on this subtask: (left, right).
    pub fn buffered(&self) -> (usize, usize) {
        (
            self.left.records.total_len(),
            self.right.records.total_len(),
        )
    }

    /// Records dropped as late: (left, right).
    pub fn late_records(&self) -> (u64, u64) {
        (self.late[0], self.late[1])
    }

    /// The user's join function.
    pub fn function(&self) -> &F {
        &self.func
    }
}

/// Flink rejects `i64::MIN`, the "no timestamp" value: the extractor is
/// wrong.
#[inline]
fn check_timestamp(ts: i64, side: &str) {
    if ts == i64::MIN {
        missing_timestamp(side);
    }
}

#[cold]
fn missing_timestamp(side: &str) -> ! {
    panic!(
        "interval join: a {side} record has timestamp i64::MIN; records of an interval join \
         need meaningful timestamps (check the {side} timestamp extractor)"
    )
}

/// Flink drops a record below a set watermark (`i64::MIN`: none yet).
#[inline]
fn is_late(ts: i64, watermark: i64) -> bool {
    watermark != i64::MIN && ts < watermark
}

impl<K, L, R, TL, TR, F> KeyedCoProcessFunction for IntervalJoinOperator<K, L, R, TL, TR, F>
where
    K: StateKey + Wire,
    L: StateValue + Wire,
    R: StateValue + Wire,
    TL: Fn(&L) -> i64 + 'static,
    TR: Fn(&R) -> i64 + 'static,
    F: ProcessJoinFunction<L, R>,
{
    type Key = K;
    type In1 = L;
    type In2 = R;
    type Out = F::Out;

    fn process_element1<C: Collector<F::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        value: L,
        out: &mut C,
    ) {
        let tl = (self.left_ts)(&value);
        check_timestamp(tl, "left");
        if is_late(tl, ctx.current_watermark()) {
            self.late[0] += 1;
            if let Some(late) = self.late_left.as_mut() {
                late(value);
            }
            return;
        }
        self.left.add(ctx, tl, value.clone());
        // The other side's buffer by reference: only the records in range
        // are copied, for the pair.
        let (bounds, func) = (&self.bounds, &mut self.func);
        self.right.records.for_each_entry(ctx, |&(tr, _), right| {
            if bounds.contains(tl, tr) {
                let jc = JoinContext {
                    left: tl,
                    right: tr,
                };
                func.process_element(value.clone(), right.clone(), &jc, out);
            }
        });
        self.timers
            .register_event_time_timer(ctx, self.bounds.left_cleanup(tl));
    }

    fn process_element2<C: Collector<F::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        value: R,
        out: &mut C,
    ) {
        let tr = (self.right_ts)(&value);
        check_timestamp(tr, "right");
        if is_late(tr, ctx.current_watermark()) {
            self.late[1] += 1;
            if let Some(late) = self.late_right.as_mut() {
                late(value);
            }
            return;
        }
        self.right.add(ctx, tr, value.clone());
        let (bounds, func) = (&self.bounds, &mut self.func);
        self.left.records.for_each_entry(ctx, |&(tl, _), left| {
            if bounds.contains(tl, tr) {
                let jc = JoinContext {
                    left: tl,
                    right: tr,
                };
                func.process_element(left.clone(), value.clone(), &jc, out);
            }
        });
        self.timers
            .register_event_time_timer(ctx, self.bounds.right_cleanup(tr));
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        self.left.visit(states);
        self.right.visit(states);
    }

    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        if let Some(out) = &self.late_sides.0 {
            outputs.connect(out);
        }
        if let Some(out) = &self.late_sides.1 {
            outputs.connect(out);
        }
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<K>> {
        Some(&mut self.timers)
    }

    fn on_timer<C: Collector<F::Out>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<K>,
        _domain: TimeDomain,
        _out: &mut C,
    ) {
        // The buckets whose cleanup time is exactly `timestamp`.
        let left = timestamp.saturating_sub(self.bounds.upper.max(0));
        let right = timestamp.saturating_sub(self.bounds.lower.saturating_neg().max(0));
        self.left.remove_bucket(ctx, left);
        self.right.remove_bucket(ctx, right);
    }
}

#[cfg(test)]
mod tests;
