//! OVER aggregation (Flink's `OverAggregate` on event time): each input row
//! with aggregates over a frame of its partition's rows ordered by the
//! rowtime attribute, as `SUM(x) OVER (PARTITION BY k ORDER BY ts ROWS
//! BETWEEN 10 PRECEDING AND CURRENT ROW)`.
//!
//! Rows are keyed by the PARTITION BY columns and wait in keyed state until
//! the watermark passes their time (an event-time timer per pending time),
//! so each row sees exactly the rows before it whatever order they arrived
//! in; then, in time order:
//!
//! - `ROWS BETWEEN n PRECEDING AND CURRENT ROW`: each row's frame is the
//!   `n` rows before it and itself (rows of equal time in the order of
//!   their other columns, so the result does not depend on arrival order;
//!   Flink takes arrival order);
//! - `RANGE BETWEEN INTERVAL .. PRECEDING AND CURRENT ROW`: the rows of
//!   times within the interval up to the row's, its peers (rows of the
//!   same time) included: peers get the same aggregates;
//! - `UNBOUNDED PRECEDING` (either unit, and the default frame): a running
//!   accumulator per key.
//!
//! `LAG(x [, offset [, default]])` in the same SELECT reads the row
//! `offset` rows before in that order (the partition's last rows kept in
//! keyed state). `LEAD` reads the row `offset` rows after: a row with a
//! LEAD waits in keyed state, computed, until that many later rows of its
//! partition have passed the watermark, or the input ends (the default
//! then). A late row is dropped, as Flink drops it: with an unbounded
//! frame one at or behind the watermark, with a bounded one one at or
//! before the time of the key's last emitted row (Flink's bounded
//! functions keep a key's last triggering time, not the watermark, so a
//! row behind the watermark of a key with nothing emitted since is still
//! computed in order). The output is append-only. State per key: the pending rows, the
//! rows a bounded frame may still reach, the running accumulator — all
//! keyed state, checkpointed and rescaled with the key.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use weir_runtime::{
    BoxedStream, Collector, KeyContext, KeyHash, KeyedProcessFunction, KeyedStates,
    KeyedTimerService, KeyedValueState, SubtaskInfo, TimeDomain, TimerQueues,
};

use crate::agg::{Acc, Aggs};
use crate::distinct::NoDistinct;
use crate::value::{Key, Row, RowKind, RowList, Value};

/// The frame of an OVER window, always ending at the current row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverFrame {
    /// `ROWS BETWEEN n PRECEDING AND CURRENT ROW`.
    Rows(u64),
    /// `RANGE BETWEEN INTERVAL .. PRECEDING AND CURRENT ROW` (ms).
    Range(i64),
    /// `ROWS` or `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`; RANGE
    /// (`peers`) gives rows of equal time the same aggregates.
    Unbounded {
        /// RANGE units: peers share their aggregates.
        peers: bool,
    },
}

/// `LAG(x, offset, default)` OVER the window: the value of column `arg`
/// of the row `offset` rows before in the partition's order (rows of
/// equal time in the order of their other columns), `default` when there
/// is none; `LEAD` (`ahead`) the row `offset` rows after. Its frame does
/// not matter.
#[derive(Clone, Debug, PartialEq)]
pub struct Lag {
    /// The input column read.
    pub arg: usize,
    /// How many rows back (1 by default).
    pub offset: usize,
    /// The value when there is no such row.
    pub default: Value,
    /// LEAD: `offset` rows after rather than before.
    pub ahead: bool,
}

/// The OVER aggregation of one partition key (see the module docs).
pub struct OverAggregate {
    aggs: Aggs,
    lags: Arc<[Lag]>,
    time: usize,
    frame: OverFrame,
    /// LAG's rows: the partition's last rows, as many as the largest
    /// offset.
    recent: KeyedValueState<Key, RowList>,
    /// Rows waiting for the watermark.
    pending: KeyedValueState<Key, RowList>,
    /// Emitted rows a bounded frame may still reach, in order.
    history: KeyedValueState<Key, RowList>,
    /// The running accumulator of an unbounded frame.
    running: KeyedValueState<Key, Acc>,
    /// Computed rows waiting for their LEAD rows, in order.
    leading: KeyedValueState<Key, RowList>,
    timers: KeyedTimerService<Key>,
    /// The keys whose pending rows were fired at a watermark (not state:
    /// which keys a watermark's timers already reached).
    swept: (i64, HashSet<Swept>),
}

/// A key in [`OverAggregate`]'s swept set: hashed by its key hash (a
/// [`Key`]'s values hold doubles, so it has no `Hash` of its own).
#[derive(PartialEq, Eq)]
struct Swept(Key);

impl std::hash::Hash for Swept {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.key_hash());
    }
}

impl OverAggregate {
    /// Aggregates `aggs` over `frame`, rows ordered by column `time`.
    pub fn new(aggs: Aggs, time: usize, frame: OverFrame) -> Self {
        Self::with_lags(aggs, Arc::from(Vec::new()), time, frame)
    }

    /// The same with `lags`, whose values follow the aggregates'.
    pub fn with_lags(aggs: Aggs, lags: Arc<[Lag]>, time: usize, frame: OverFrame) -> Self {
        Self {
            aggs,
            lags,
            recent: KeyedValueState::new("over-lag-rows"),
            time,
            frame,
            pending: KeyedValueState::new("over-pending-rows"),
            history: KeyedValueState::new("over-frame-rows"),
            running: KeyedValueState::new("over-accumulator"),
            leading: KeyedValueState::new("over-lead-rows"),
            timers: KeyedTimerService::new(),
            swept: (i64::MIN, HashSet::new()),
        }
    }

    fn time_of(&self, row: &Row) -> i64 {
        time_of(self.time, row)
    }

    /// Whether a row of time `t` of the current key comes too late, as
    /// Flink's functions decide: for an unbounded frame when the
    /// watermark has passed it (`AbstractRowTimeUnboundedPrecedingOver`);
    /// for a bounded one only when the key has emitted a row of its time
    /// or later (`RowTime{Rows,Range}BoundedPrecedingFunction`'s last
    /// triggering time: the frame rows' last, which `history` keeps). A
    /// row behind the watermark whose key emitted nothing since is
    /// computed as if in order, at the next watermark.
    fn is_late(&self, ctx: &KeyContext<Key>, t: i64) -> bool {
        match self.frame {
            OverFrame::Unbounded { .. } => t <= self.timers.current_watermark(),
            OverFrame::Rows(_) | OverFrame::Range(_) => self
                .history
                .value_ref(ctx)
                .and_then(|RowList(rows)| rows.last())
                .is_some_and(|last| t <= self.time_of(last)),
        }
    }

    /// Time order, ties by the other columns.
    fn order(&self, a: &Row, b: &Row) -> Ordering {
        self.time_of(a).cmp(&self.time_of(b)).then_with(|| {
            a.values
                .iter()
                .zip(&b.values)
                .map(|(x, y)| x.total_cmp(y))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        })
    }

    /// Each row of `ready` (in order)'s LAG values, the partition's last
    /// rows moved on past them.
    fn lag_values(&mut self, ctx: &KeyContext<Key>, ready: &[Row]) -> Vec<Vec<Value>> {
        if self.lags.is_empty() {
            return vec![Vec::new(); ready.len()];
        }
        let keep = self
            .lags
            .iter()
            .filter(|l| !l.ahead)
            .map(|l| l.offset)
            .max()
            .unwrap_or(0);
        let mut recent = self.recent.value(ctx).unwrap_or_default().0;
        let mut out = Vec::with_capacity(ready.len());
        for r in ready {
            out.push(
                self.lags
                    .iter()
                    .map(|l| match recent.len().checked_sub(l.offset) {
                        // (a LEAD's value comes with the later rows)
                        _ if l.ahead => Value::Null,
                        Some(i) if l.offset > 0 => recent[i].values[l.arg].clone(),
                        _ if l.offset == 0 => r.values[l.arg].clone(),
                        _ => l.default.clone(),
                    })
                    .collect(),
            );
            recent.push(r.clone());
            if recent.len() > keep {
                recent.drain(..recent.len() - keep);
            }
        }
        self.recent.update(ctx, RowList(recent));
        out
    }

    /// Emits `ready` (the rows of one time, in order); with a LEAD, each
    /// once its later rows are there.
    fn fire<C: Collector<Row>>(&mut self, ctx: &KeyContext<Key>, ready: Vec<Row>, out: &mut C) {
        if !self.lags.iter().any(|l| l.ahead) {
            return self.compute(ctx, ready, &mut |r| out.collect(r));
        }
        let mut done = Vec::new();
        self.compute(ctx, ready, &mut |r| done.push(r));
        let mut waiting = self.leading.value(ctx).unwrap_or_default().0;
        waiting.extend(done);
        let reach = self
            .lags
            .iter()
            .filter(|l| l.ahead)
            .map(|l| l.offset)
            .max()
            .unwrap_or(0);
        let complete = waiting.len().saturating_sub(reach);
        self.release(&mut waiting, complete, out);
        if waiting.is_empty() {
            self.leading.clear(ctx);
        } else {
            self.leading.update(ctx, RowList(waiting));
            // The input's end lets the last rows go with their defaults.
            self.timers.register_event_time_timer(ctx, i64::MAX);
        }
    }

    /// Emits the first `n` rows of `waiting` (computed rows in order),
    /// each LEAD's value the row `offset` places later, or its default.
    fn release<C: Collector<Row>>(&self, waiting: &mut Vec<Row>, n: usize, out: &mut C) {
        let first = self.lags.len();
        for i in 0..n {
            let mut r = waiting[i].clone();
            let at = r.values.len() - first;
            for (j, l) in self.lags.iter().enumerate().filter(|(_, l)| l.ahead) {
                r.values[at + j] = match waiting.get(i + l.offset) {
                    Some(later) => later.values[l.arg].clone(),
                    None => l.default.clone(),
                };
            }
            out.collect(r);
        }
        waiting.drain(..n);
    }

    /// The rows of `ready` with their aggregates and LAGs.
    fn compute(&mut self, ctx: &KeyContext<Key>, ready: Vec<Row>, out: &mut impl FnMut(Row)) {
        let t = self.time_of(&ready[0]);
        let lags = self.lag_values(ctx, &ready);
        match self.frame {
            OverFrame::Unbounded { peers } => {
                let mut acc = self
                    .running
                    .value(ctx)
                    .unwrap_or_else(|| self.aggs.create());
                if peers {
                    for r in &ready {
                        self.aggs.fold(&mut acc, r, &mut NoDistinct);
                    }
                    for (r, l) in ready.iter().zip(&lags) {
                        emit(&self.aggs, r, &acc, l, out);
                    }
                } else {
                    for (r, l) in ready.iter().zip(&lags) {
                        self.aggs.fold(&mut acc, r, &mut NoDistinct);
                        emit(&self.aggs, r, &acc, l, out);
                    }
                }
                self.running.update(ctx, acc);
            }
            OverFrame::Rows(n) => {
                // The frame rows, updated in place (not copied out of the
                // state and back for every time).
                let n = n as usize;
                let hist = &mut self
                    .history
                    .value_mut_or_insert_with(ctx, RowList::default)
                    .0;
                for (r, l) in ready.into_iter().zip(&lags) {
                    hist.push(r);
                    let from = hist.len().saturating_sub(n + 1);
                    let acc = fold_all(&self.aggs, hist[from..].iter());
                    emit(&self.aggs, hist.last().expect("just pushed"), &acc, l, out);
                }
                // (at least the last: the key's last emitted time)
                let keep = n.max(1);
                if hist.len() > keep {
                    hist.drain(..hist.len() - keep);
                }
            }
            OverFrame::Range(range) => {
                let low = t.saturating_sub(range);
                let time = self.time;
                let hist = &mut self
                    .history
                    .value_mut_or_insert_with(ctx, RowList::default)
                    .0;
                // The frame rows are in time order: those before the range
                // are a prefix.
                let gone = hist.partition_point(|r| time_of(time, r) < low);
                hist.drain(..gone);
                let acc = fold_all(&self.aggs, hist.iter().chain(ready.iter()));
                for (r, l) in ready.iter().zip(&lags) {
                    emit(&self.aggs, r, &acc, l, out);
                }
                hist.extend(ready);
            }
        }
    }
}

/// Row `row`'s time (ms) in column `time`.
fn time_of(time: usize, row: &Row) -> i64 {
    row.values[time].as_i64().unwrap_or(i64::MIN)
}

/// `rows` folded into a new accumulator of `aggs`.
fn fold_all<'r>(aggs: &Aggs, rows: impl Iterator<Item = &'r Row>) -> Acc {
    let mut acc = aggs.create();
    for r in rows {
        aggs.fold(&mut acc, r, &mut NoDistinct);
    }
    acc
}

/// `row` with the aggregates of `acc` and its `lags` values appended.
fn emit(aggs: &Aggs, row: &Row, acc: &Acc, lags: &[Value], out: &mut impl FnMut(Row)) {
    let mut r = row.clone();
    r.kind = RowKind::Insert;
    aggs.result_into(acc, &mut r.values);
    r.values.extend(lags.iter().cloned());
    out(r);
}

impl KeyedProcessFunction for OverAggregate {
    type Key = Key;
    type In = Row;
    type Out = Row;

    fn process<C: Collector<Row>>(&mut self, ctx: &KeyContext<Key>, row: Row, _out: &mut C) {
        let t = self.time_of(&row);
        if row.values[self.time].is_null() || self.is_late(ctx, t) {
            return; // late (or without a time): dropped, as Flink drops it
        }
        // In place: no copy of the key's pending rows per row.
        self.pending
            .value_mut_or_insert_with(ctx, RowList::default)
            .0
            .push(row);
        self.timers.register_event_time_timer(ctx, t);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<Key>> {
        Some(&mut self.timers)
    }

    fn on_timer<C: Collector<Row>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<Key>,
        _: TimeDomain,
        out: &mut C,
    ) {
        self.fire_pending(timestamp, ctx, out);
        // The end of the input: rows still waiting for LEAD rows go with
        // the defaults.
        if timestamp == i64::MAX {
            if let Some(RowList(mut waiting)) = self.leading.value(ctx) {
                let n = waiting.len();
                self.release(&mut waiting, n, out);
                self.leading.clear(ctx);
            }
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.pending);
        states.value(&mut self.history);
        states.value(&mut self.running);
        // Every state made in `with_lags`, used or not: the runtime fails
        // a checkpoint of a state made and not visited.
        states.value(&mut self.recent);
        states.value(&mut self.leading);
    }
}

impl OverAggregate {
    /// Fires the key's pending rows the watermark has passed (those of
    /// `timestamp` and of any later time up to the watermark, whose own
    /// timers are due in the same advance), in order, one time at a time.
    /// Once per key and watermark: a key's later timers of the same
    /// advance find nothing and return at once. (Each timer used to copy
    /// and split the key's whole pending list: with thousands of rows
    /// pending out of order, a time each, that was quadratic, ~1 k rows/s.)
    fn fire_pending<C: Collector<Row>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<Key>,
        out: &mut C,
    ) {
        let watermark = self.timers.current_watermark().max(timestamp);
        if self.swept.0 != watermark {
            self.swept = (watermark, HashSet::new());
        }
        if !self.swept.1.insert(Swept(ctx.key().clone())) {
            return;
        }
        let time = self.time;
        let due = |r: &Row| r.values[time].as_i64().unwrap_or(i64::MIN) <= watermark;
        if !self
            .pending
            .value_ref(ctx)
            .is_some_and(|RowList(rows)| rows.iter().any(due))
        {
            return;
        }
        let list = self.pending.value_mut_or_insert_with(ctx, RowList::default);
        let (mut ready, rest): (Vec<Row>, Vec<Row>) =
            std::mem::take(&mut list.0).into_iter().partition(due);
        if rest.is_empty() {
            self.pending.clear(ctx);
        } else {
            list.0 = rest;
        }
        ready.sort_by(|a, b| self.order(a, b));
        // One time at a time: peers together.
        while !ready.is_empty() {
            let t = self.time_of(&ready[0]);
            let n = ready.iter().take_while(|r| self.time_of(r) == t).count();
            let group: Vec<Row> = ready.drain(..n).collect();
            self.fire(ctx, group, out);
        }
    }
}

/// `rows` keyed by columns `partition`, each with its aggregates over the
/// frame (operator uid `uid`).
pub fn lower<'j>(
    rows: BoxedStream<'j, Row>,
    uid: &str,
    partition: &[usize],
    time: usize,
    frame: OverFrame,
    aggs: Aggs,
    lags: &[Lag],
) -> BoxedStream<'j, Row> {
    let cols: Arc<[usize]> = partition.into();
    let lags: Arc<[Lag]> = lags.into();
    rows.key_by(move |r: &Row| Key::of(cols.iter().map(|&c| r.values[c].clone())))
        .process(uid, move |_: &SubtaskInfo| {
            OverAggregate::with_lags(aggs.clone(), lags.clone(), time, frame)
        })
        .boxed()
}
