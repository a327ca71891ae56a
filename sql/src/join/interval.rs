//! The SQL interval join (Flink's `RowTimeIntervalJoin`, one operator for
//! INNER, LEFT, RIGHT and FULL joins): `a LEFT JOIN b ON a.k = b.k AND
//! b.ts BETWEEN a.ts AND a.ts + INTERVAL '1' HOUR`. Each pair of rows of
//! one key within the time bounds is emitted when its later row arrives;
//! a row of an outer side that found no match is emitted once with NULLs
//! for the other side's columns when the watermark passes the last time a
//! row of the other side could match it. The result is append-only:
//! every output row is `+I`.
//!
//! Keyed by the join key. Each side keeps its rows in keyed map state
//! under `(time, n)` with whether a pair was emitted for it, and a count
//! per time; a row is dropped by the event-time timer at its cleanup time
//! (left `tL + max(upper, 0)`, right `tR + max(-lower, 0)`; one timer per
//! key and time removes both sides' rows of that time), emitting it padded
//! first if it is of an outer side and never matched. A row whose key or
//! time is NULL can match nothing: one of an outer side is emitted padded
//! at once, one of an inner side is dropped. A row arriving when the
//! watermark has passed its cleanup time (a late row) is joined with the
//! other side's rows still kept and not kept itself (padded at once if it
//! found none and its side is outer), as Flink's SQL join does with such
//! rows, for an inner join too. (The DataStream API's interval join,
//! [`weir_runtime::IntervalJoinOperator`] as Flink's `IntervalJoinOperator`,
//! drops late rows instead.)
//!
//! Both inputs' time attributes stay event-time attributes of the output,
//! as in Flink, so the watermark passed on is held back by the larger
//! bound (Flink's `KeyedCoProcessOperatorWithWatermarkDelay`): a pair is
//! emitted when its later row arrives, and the earlier one may be that
//! far behind the watermark. A window downstream then finds no pair late.

use std::sync::Arc;
use std::time::Duration;

use weir_runtime::{
    Collector, JoinBounds, KeyContext, KeyedCoProcessFunction, KeyedMapState, KeyedStates,
    KeyedTimerService, Offset, TimeDomain, TimerQueues,
};

use crate::expr::{truth, Scalar};
use crate::join::{JoinKind, TimeBounds};
use crate::value::{Key, Row, RowKind, Value, Values};

/// Whether a row can join at all (its key and time are not NULL).
pub type Joinable = Arc<dyn Fn(&Row) -> bool + Send + Sync>;

/// One side's rows by `(time, n)`, each with whether it matched, and the
/// count per time.
struct Side {
    rows: KeyedMapState<Key, (i64, u32), (Row, bool)>,
    counts: KeyedMapState<Key, i64, u32>,
}

impl Side {
    fn new(side: &str) -> Self {
        // Named as when only outer joins ran here: their checkpoints
        // still restore.
        Self {
            rows: KeyedMapState::new(&format!("_outer_interval_join_{side}")),
            counts: KeyedMapState::new(&format!("_outer_interval_join_{side}_counts")),
        }
    }

    fn add(&mut self, ctx: &KeyContext<Key>, ts: i64, row: Row, matched: bool) {
        let n = self.counts.get(ctx, &ts).unwrap_or(0);
        self.rows.put(ctx, (ts, n), (row, matched));
        self.counts.put(ctx, ts, n + 1);
    }

    /// Removes the rows of time `ts`, handing back those that never
    /// matched.
    fn remove(&mut self, ctx: &KeyContext<Key>, ts: i64) -> Vec<Row> {
        let mut unmatched = Vec::new();
        if let Some(n) = self.counts.remove(ctx, &ts) {
            for i in 0..n {
                if let Some((row, false)) = self.rows.remove(ctx, &(ts, i)) {
                    unmatched.push(row);
                }
            }
        }
        unmatched
    }

    fn visit(&mut self, states: &mut KeyedStates<'_>) {
        states.map(&mut self.rows);
        states.map(&mut self.counts);
    }
}

/// The interval join of one key: see the module documentation.
pub struct IntervalJoin {
    bounds: TimeBounds,
    /// The interval of `tR - tL` and the rows' cleanup times.
    interval: JoinBounds,
    kind: JoinKind,
    residual: Option<Arc<Scalar>>,
    left_width: usize,
    right_width: usize,
    left_joinable: Joinable,
    right_joinable: Joinable,
    left: Side,
    right: Side,
    timers: KeyedTimerService<Key>,
}

impl IntervalJoin {
    /// The `kind` (INNER, LEFT, RIGHT or FULL) join within `bounds` of rows of
    /// `left_width` and `right_width` columns, keeping the pairs for which
    /// `residual` holds; `*_joinable` tell the rows that can match.
    pub fn new(
        bounds: TimeBounds,
        kind: JoinKind,
        residual: Option<Arc<Scalar>>,
        (left_width, right_width): (usize, usize),
        left_joinable: Joinable,
        right_joinable: Joinable,
    ) -> Self {
        Self {
            bounds,
            interval: join_bounds(&bounds),
            kind,
            residual,
            left_width,
            right_width,
            left_joinable,
            right_joinable,
            left: Side::new("left"),
            right: Side::new("right"),
            timers: KeyedTimerService::new(),
        }
    }

    /// The joined row of `left` and `right` if the residual condition
    /// holds for it.
    fn pair(&self, left: &Row, right: &Row) -> Option<Row> {
        let mut values: Values = left.values.clone();
        values.extend(right.values.iter().cloned());
        joined_row(self.residual.as_deref(), values)
    }

    /// `left` with NULLs for the right's columns.
    fn pad_left(&self, left: Row) -> Row {
        let mut values = left.values;
        values.extend(std::iter::repeat_n(Value::Null, self.right_width));
        Row {
            kind: RowKind::Insert,
            values,
        }
    }

    /// NULLs for the left's columns, then `right`.
    fn pad_right(&self, right: Row) -> Row {
        let mut values: Values = std::iter::repeat_n(Value::Null, self.left_width).collect();
        values.extend(right.values);
        Row {
            kind: RowKind::Insert,
            values,
        }
    }
}

/// A signed length of ms as weir's offset.
fn offset(ms: i64) -> Offset {
    let span = Duration::from_millis(ms.unsigned_abs());
    if ms < 0 {
        Offset::before(span)
    } else {
        Offset::after(span)
    }
}

/// The runtime's join interval of SQL `bounds` (inclusive).
///
/// # Panics
///
/// If the bounds leave no interval (the planner refuses them).
fn join_bounds(bounds: &TimeBounds) -> JoinBounds {
    JoinBounds::new(offset(bounds.lower), offset(bounds.upper), false, false)
        .expect("the planner checked the bounds")
}

/// How far an interval join of `bounds` holds its output watermark back:
/// a pair goes out when its later row arrives, the earlier up to the
/// larger bound behind it.
fn watermark_delay(bounds: &TimeBounds) -> i64 {
    bounds.upper.max(bounds.lower.saturating_neg()).max(0)
}

/// The row of `values` (a left row's, then a right row's) if `residual`
/// holds for it.
fn joined_row(residual: Option<&Scalar>, values: Values) -> Option<Row> {
    let row = Row {
        kind: RowKind::Insert,
        values,
    };
    residual
        .is_none_or(|c| truth(&c.eval(&row)) == Some(true))
        .then_some(row)
}

/// A row's time in column `c` (a joinable row has one).
fn time_of(r: &Row, c: usize) -> i64 {
    r.values[c].as_i64().unwrap_or(i64::MIN)
}

/// Whether the watermark has passed `cleanup` (`i64::MIN`: none yet).
fn passed(cleanup: i64, watermark: i64) -> bool {
    watermark != i64::MIN && cleanup <= watermark
}

impl KeyedCoProcessFunction for IntervalJoin {
    type Key = Key;
    type In1 = Row;
    type In2 = Row;
    type Out = Row;

    fn process_element1<C: Collector<Row>>(
        &mut self,
        ctx: &KeyContext<Key>,
        row: Row,
        out: &mut C,
    ) {
        if !(self.left_joinable)(&row) {
            if self.kind.left_outer() {
                out.collect(self.pad_left(row));
            }
            return;
        }
        let tl = time_of(&row, self.bounds.left_time);
        let b = self.interval;
        // The other side's rows by reference: only those in range are
        // copied.
        let mut hits = Vec::new();
        self.right.rows.for_each_entry(ctx, |&at, kept| {
            if b.contains(tl, at.0) {
                hits.push((at, kept.clone()));
            }
        });
        let mut matched = false;
        for (at, (right, was)) in hits {
            if let Some(joined) = self.pair(&row, &right) {
                out.collect(joined);
                matched = true;
                if !was && self.kind.right_outer() {
                    self.right.rows.put(ctx, at, (right, true));
                }
            }
        }
        let cleanup = self.interval.left_cleanup(tl);
        if passed(cleanup, ctx.current_watermark()) {
            if !matched && self.kind.left_outer() {
                out.collect(self.pad_left(row));
            }
            return;
        }
        self.left.add(ctx, tl, row, matched);
        self.timers.register_event_time_timer(ctx, cleanup);
    }

    fn process_element2<C: Collector<Row>>(
        &mut self,
        ctx: &KeyContext<Key>,
        row: Row,
        out: &mut C,
    ) {
        if !(self.right_joinable)(&row) {
            if self.kind.right_outer() {
                out.collect(self.pad_right(row));
            }
            return;
        }
        let tr = time_of(&row, self.bounds.right_time);
        let b = self.interval;
        // The other side's rows by reference: only those in range are
        // copied.
        let mut hits = Vec::new();
        self.left.rows.for_each_entry(ctx, |&at, kept| {
            if b.contains(at.0, tr) {
                hits.push((at, kept.clone()));
            }
        });
        let mut matched = false;
        for (at, (left, was)) in hits {
            if let Some(joined) = self.pair(&left, &row) {
                out.collect(joined);
                matched = true;
                if !was && self.kind.left_outer() {
                    self.left.rows.put(ctx, at, (left, true));
                }
            }
        }
        let cleanup = self.interval.right_cleanup(tr);
        if passed(cleanup, ctx.current_watermark()) {
            if !matched && self.kind.right_outer() {
                out.collect(self.pad_right(row));
            }
            return;
        }
        self.right.add(ctx, tr, row, matched);
        self.timers.register_event_time_timer(ctx, cleanup);
    }

    fn watermark_delay(&self) -> i64 {
        // Pairs are emitted as late as the inner join emits them.
        watermark_delay(&self.bounds)
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        self.left.visit(states);
        self.right.visit(states);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<Key>> {
        Some(&mut self.timers)
    }

    fn on_timer<C: Collector<Row>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<Key>,
        _domain: TimeDomain,
        out: &mut C,
    ) {
        // The rows whose cleanup time is exactly `timestamp`.
        let left = timestamp.saturating_sub(self.bounds.upper.max(0));
        let right = timestamp.saturating_sub(self.bounds.lower.saturating_neg().max(0));
        for row in self.left.remove(ctx, left) {
            if self.kind.left_outer() {
                out.collect(self.pad_left(row));
            }
        }
        for row in self.right.remove(ctx, right) {
            if self.kind.right_outer() {
                out.collect(self.pad_right(row));
            }
        }
    }
}

#[cfg(test)]
mod tests;
