//! Window join (Flink's `WindowJoinOperator`): two windowing TVFs' rows
//! joined on their keys and on `window_start` and `window_end`, emitted
//! when the window ends.
//!
//! Keyed by the join key (which holds the window's bounds). Both sides'
//! rows of a key are kept until the watermark passes the window's end (an
//! event-time timer at `window_end - 1`, registered by the key's first
//! row); then every pair that passes the residual condition is emitted,
//! and for an outer join each row of the outer side(s) that matched none,
//! padded with NULLs — all as inserts: append-only, also for outer joins
//! (a regular join's outer rows would be retracted when a match came) —
//! and the key's state is freed. A row of a window already fired (late)
//! is dropped, as Flink drops it. A row whose key has a NULL matches
//! nothing (`NULL = NULL` is not true).

use std::sync::Arc;

use weir_runtime::{
    Collector, KeyContext, KeyedCoProcessFunction, KeyedStates, KeyedTimerService, KeyedValueState,
    TimeDomain, TimerQueues,
};

use crate::expr::{truth, Scalar};
use crate::join::JoinKind;
use crate::value::{Key, Row, RowKind, RowList, Value};

/// The window join of one key (see the module docs).
pub struct WindowJoin {
    kind: JoinKind,
    residual: Option<Arc<Scalar>>,
    /// The `window_end` column of each side.
    ends: [usize; 2],
    widths: [usize; 2],
    sides: [KeyedValueState<Key, RowList>; 2],
    timers: KeyedTimerService<Key>,
}

impl WindowJoin {
    /// A `kind` join whose sides' window ends are columns `ends`, rows
    /// `widths` wide.
    pub fn new(
        kind: JoinKind,
        residual: Option<Arc<Scalar>>,
        ends: [usize; 2],
        widths: [usize; 2],
    ) -> Self {
        Self {
            kind,
            residual,
            ends,
            widths,
            sides: [
                KeyedValueState::new("window-join-left-rows"),
                KeyedValueState::new("window-join-right-rows"),
            ],
            timers: KeyedTimerService::new(),
        }
    }

    fn add(&mut self, side: usize, ctx: &KeyContext<Key>, mut row: Row) {
        let Some(end) = row.values[self.ends[side]].as_i64() else {
            return;
        };
        let fire = end - 1;
        if fire <= self.timers.current_watermark() {
            return; // its window already fired
        }
        row.kind = RowKind::Insert;
        self.sides[side]
            .value_mut_or_insert_with(ctx, RowList::default)
            .0
            .push(row);
        // One timer per key and window (a timer registered twice fires once).
        self.timers.register_event_time_timer(ctx, fire);
    }
}

impl KeyedCoProcessFunction for WindowJoin {
    type Key = Key;
    type In1 = Row;
    type In2 = Row;
    type Out = Row;

    fn process_element1<C: Collector<Row>>(&mut self, ctx: &KeyContext<Key>, row: Row, _: &mut C) {
        self.add(0, ctx, row);
    }

    fn process_element2<C: Collector<Row>>(&mut self, ctx: &KeyContext<Key>, row: Row, _: &mut C) {
        self.add(1, ctx, row);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<Key>> {
        Some(&mut self.timers)
    }

    fn on_timer<C: Collector<Row>>(
        &mut self,
        _timestamp: i64,
        ctx: &KeyContext<Key>,
        _: TimeDomain,
        out: &mut C,
    ) {
        let left = self.sides[0].value(ctx).unwrap_or_default().0;
        let right = self.sides[1].value(ctx).unwrap_or_default().0;
        self.sides[0].clear(ctx);
        self.sides[1].clear(ctx);
        let mut right_matched = vec![false; right.len()];
        // SQL's `NULL = NULL` is not true: rows whose key has a NULL match
        // nothing (an outer side's come out padded), as Flink filters
        // them out of an equi-join's keys.
        let pairs = !ctx.key().values.iter().any(Value::is_null);
        for l in &left {
            let mut matched = false;
            for (j, r) in right.iter().enumerate().filter(|_| pairs) {
                let mut joined = l.clone();
                joined.values.extend(r.values.iter().cloned());
                if self
                    .residual
                    .as_ref()
                    .is_none_or(|c| truth(&c.eval(&joined)) == Some(true))
                {
                    matched = true;
                    right_matched[j] = true;
                    out.collect(joined);
                }
            }
            if !matched && self.kind.left_outer() {
                let mut padded = l.clone();
                padded
                    .values
                    .extend(std::iter::repeat_n(Value::Null, self.widths[1]));
                out.collect(padded);
            }
        }
        if self.kind.right_outer() {
            for (r, m) in right.iter().zip(right_matched) {
                if !m {
                    let mut padded =
                        Row::new(std::iter::repeat_n(Value::Null, self.widths[0]).collect());
                    padded.values.extend(r.values.iter().cloned());
                    out.collect(padded);
                }
            }
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        let [a, b] = &mut self.sides;
        states.value(a);
        states.value(b);
    }
}
