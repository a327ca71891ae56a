//! Event-time temporal join (Flink's `TemporalRowTimeJoinOperator`): `FROM
//! o JOIN r FOR SYSTEM_TIME AS OF o.ts ON o.k = r.k`, each left row joined
//! with the version of its key's right row valid at its time — the right
//! row of the greatest time at or before it.
//!
//! Keyed by the join key. Right rows are versions, kept sorted by their
//! time; left rows wait until the watermark (the smaller of both inputs')
//! passes their time — then every version up to that time has arrived.
//! As Flink's operator, a key has one timer, at the earliest time of its
//! waiting rows: when it fires, every row at or before the watermark is
//! joined, in time order, and the timer is set again for the earliest row
//! left (a timer per row, each looking over the key's waiting rows, made
//! a bounded input's final watermark quadratic in the rows of a key). An
//! inner join emits only left rows that found a version (and pass the
//! residual condition), a LEFT join emits the others with NULLs (a row
//! with a NULL key or time at once: it can match no version). Versions
//! older than the one valid at the watermark are dropped then, as no later
//! left row can reach them (a late left row may find its version gone).
//! Output append-only; the left input must be append-only, the right one
//! too (each row a new version of its key).

use std::sync::Arc;

use weir_runtime::{
    Collector, KeyContext, KeyedCoProcessFunction, KeyedStates, KeyedTimerService, KeyedValueState,
    TimeDomain, TimerQueues,
};

use crate::expr::{truth, Scalar};
use crate::value::{Key, Row, RowKind, RowList, Value};

/// The temporal join of one key (see the module docs).
pub struct TemporalJoin {
    left_time: usize,
    right_time: usize,
    right_width: usize,
    outer: bool,
    residual: Option<Arc<Scalar>>,
    pending: KeyedValueState<Key, RowList>,
    versions: KeyedValueState<Key, RowList>,
    /// The earliest timer registered for the key and not fired yet.
    next_timer: KeyedValueState<Key, i64>,
    timers: KeyedTimerService<Key>,
}

impl TemporalJoin {
    /// Left rows timed by column `left_time`, right versions by
    /// `right_time` (rows `right_width` wide); `outer` for LEFT JOIN.
    pub fn new(
        left_time: usize,
        right_time: usize,
        right_width: usize,
        outer: bool,
        residual: Option<Arc<Scalar>>,
    ) -> Self {
        Self {
            left_time,
            right_time,
            right_width,
            outer,
            residual,
            pending: KeyedValueState::new("temporal-join-left-rows"),
            versions: KeyedValueState::new("temporal-join-versions"),
            next_timer: KeyedValueState::new("temporal-join-next-timer"),
            timers: KeyedTimerService::new(),
        }
    }

    fn time(row: &Row, col: usize) -> Option<i64> {
        row.values[col].as_i64()
    }

    /// `left` with NULLs for the right side's columns, as an insert.
    fn padded(&self, mut left: Row) -> Row {
        left.kind = RowKind::Insert;
        left.values
            .extend(std::iter::repeat_n(Value::Null, self.right_width));
        left
    }

    /// Makes sure the key has a timer at or before `at`.
    fn timer_by(&mut self, ctx: &KeyContext<Key>, at: i64) {
        if self.next_timer.value(ctx).is_none_or(|next| at < next) {
            self.timers.register_event_time_timer(ctx, at);
            self.next_timer.update(ctx, at);
        }
    }
}

impl KeyedCoProcessFunction for TemporalJoin {
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
        // A NULL key equals no version's key (`NULL = NULL` is not true),
        // and no version is valid at no time: a LEFT join pads such a row
        // at once, an inner one drops it.
        let t = match Self::time(&row, self.left_time) {
            Some(t) if !ctx.key().values.iter().any(Value::is_null) => t,
            _ => {
                if self.outer {
                    out.collect(self.padded(row));
                }
                return;
            }
        };
        self.pending
            .value_mut_or_insert_with(ctx, RowList::default)
            .0
            .push(row);
        let at = t.max(self.timers.current_watermark().saturating_add(1));
        self.timer_by(ctx, at);
    }

    fn process_element2<C: Collector<Row>>(&mut self, ctx: &KeyContext<Key>, row: Row, _: &mut C) {
        // A version of a NULL key is valid for no left row.
        let Some(t) = Self::time(&row, self.right_time) else {
            return;
        };
        if ctx.key().values.iter().any(Value::is_null) {
            return;
        }
        let rt = self.right_time;
        let v = self
            .versions
            .value_mut_or_insert_with(ctx, RowList::default);
        // After the versions of the same or an earlier time: a later row
        // of one time replaces an earlier one.
        let at =
            v.0.partition_point(|x| Self::time(x, rt).unwrap_or(i64::MIN) <= t);
        v.0.insert(at, row);
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
        if self.next_timer.value(ctx) == Some(timestamp) {
            self.next_timer.clear(ctx);
        }
        // Every row the watermark passed is ready, not only those of this
        // timer's time (a checkpoint of an earlier version holds a timer
        // per row: those still fire, and find their rows done).
        let watermark = ctx.current_watermark().max(timestamp);
        if self.pending.value_ref(ctx).is_none() {
            return;
        }
        let lt = self.left_time;
        let list = &mut self
            .pending
            .value_mut_or_insert_with(ctx, RowList::default)
            .0;
        let (mut ready, rest): (Vec<Row>, Vec<Row>) = std::mem::take(list)
            .into_iter()
            .partition(|r| Self::time(r, lt).is_some_and(|t| t <= watermark));
        let earliest_left = rest.iter().filter_map(|r| Self::time(r, lt)).min();
        if rest.is_empty() {
            self.pending.clear(ctx);
        } else {
            *list = rest;
        }
        // In time order, as one timer per time emitted them (stable: rows
        // of one time in their arrival order).
        ready.sort_by_key(|r| Self::time(r, lt));
        let versions: &[Row] = self.versions.value_ref(ctx).map_or(&[], |v| &v.0);
        let rt = self.right_time;
        for left in ready {
            let t = Self::time(&left, lt).expect("timed");
            let valid = versions.partition_point(|v| Self::time(v, rt).unwrap_or(i64::MIN) <= t);
            let mut joined = left.clone();
            joined.kind = RowKind::Insert;
            let matched = match valid.checked_sub(1).map(|i| &versions[i]) {
                Some(v) => {
                    joined.values.extend(v.values.iter().cloned());
                    self.residual
                        .as_ref()
                        .is_none_or(|c| truth(&c.eval(&joined)) == Some(true))
                }
                None => false,
            };
            if matched {
                out.collect(joined);
            } else if self.outer {
                out.collect(self.padded(left));
            }
        }
        // Versions before the one valid at the watermark are unreachable:
        // every row at or before it is done, and the rows left are later.
        let valid =
            versions.partition_point(|v| Self::time(v, rt).unwrap_or(i64::MIN) <= watermark);
        if valid > 1 {
            self.versions
                .value_mut_or_insert_with(ctx, RowList::default)
                .0
                .drain(..valid - 1);
        }
        if let Some(t) = earliest_left {
            self.timer_by(ctx, t.max(watermark.saturating_add(1)));
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.pending);
        states.value(&mut self.versions);
        states.value(&mut self.next_timer);
    }
}
