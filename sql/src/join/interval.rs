//! The SQL interval join: weir's [`IntervalJoinOperator`] (Flink's
//! `IntervalJoinOperator`, the operator of
//! [`weir_runtime::KeyedStream::interval_join`]) hands each pair of rows
//! of one key within the time bounds to [`RowPairs`], which emits the
//! concatenated row (left columns, then right) if the residual condition
//! holds. The result is append-only: every output row is `+I`.
//!
//! Both inputs' time attributes stay event-time attributes of the output,
//! as in Flink, so the watermark passed on is held back by the larger
//! bound ([`SqlIntervalJoin`], Flink's
//! `KeyedCoProcessOperatorWithWatermarkDelay`): a pair is emitted when
//! its later row arrives, and the earlier one may be that far behind the
//! watermark. A window downstream then finds no pair late.

use std::sync::Arc;
use std::time::Duration;

use weir_runtime::operators::side_output::SideOutputs;
use weir_runtime::{
    Collector, IntervalJoinOperator, JoinBounds, JoinContext, KeyContext, KeyedCoProcessFunction,
    KeyedStates, Offset, ProcessJoinFunction, TimeDomain, TimerQueues,
};

use crate::expr::{truth, Scalar};
use crate::join::TimeBounds;
use crate::value::{Key, Row, RowKind, Values};

/// The interval join of rows, its output watermark held back: see the
/// module documentation.
pub struct SqlIntervalJoin<TL, TR> {
    join: IntervalJoinOperator<Key, Row, Row, TL, TR, RowPairs>,
    delay: i64,
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

/// A row's event time (ms) in column `c`.
fn time_of(c: usize) -> impl Fn(&Row) -> i64 + Clone + 'static {
    move |r: &Row| r.values[c].as_i64().unwrap_or(i64::MIN)
}

/// The interval join of `bounds` keeping the pairs for which `residual`
/// holds. Its rows must have a time (weir's interval join refuses a row
/// without one): the lowering filters out rows with a NULL time.
///
/// # Panics
///
/// If the bounds leave no interval (the planner refuses them).
pub fn sql_interval_join(
    bounds: TimeBounds,
    residual: Option<Arc<Scalar>>,
) -> SqlIntervalJoin<impl Fn(&Row) -> i64 + 'static, impl Fn(&Row) -> i64 + 'static> {
    SqlIntervalJoin {
        join: IntervalJoinOperator::new(
            join_bounds(&bounds),
            time_of(bounds.left_time),
            time_of(bounds.right_time),
            RowPairs { residual },
        ),
        delay: watermark_delay(&bounds),
    }
}

/// The runtime's join interval of SQL `bounds` (inclusive).
///
/// # Panics
///
/// If the bounds leave no interval (the planner refuses them).
pub(crate) fn join_bounds(bounds: &TimeBounds) -> JoinBounds {
    JoinBounds::new(offset(bounds.lower), offset(bounds.upper), false, false)
        .expect("the planner checked the bounds")
}

/// How far an interval join of `bounds` holds its output watermark back:
/// a pair goes out when its later row arrives, the earlier up to the
/// larger bound behind it.
pub(crate) fn watermark_delay(bounds: &TimeBounds) -> i64 {
    bounds.upper.max(bounds.lower.saturating_neg()).max(0)
}

/// The row of `values` (a left row's, then a right row's) if `residual`
/// holds for it.
pub(crate) fn joined_row(residual: Option<&Scalar>, values: Values) -> Option<Row> {
    let row = Row {
        kind: RowKind::Insert,
        values,
    };
    residual
        .is_none_or(|c| truth(&c.eval(&row)) == Some(true))
        .then_some(row)
}

impl<TL, TR> KeyedCoProcessFunction for SqlIntervalJoin<TL, TR>
where
    TL: Fn(&Row) -> i64 + 'static,
    TR: Fn(&Row) -> i64 + 'static,
{
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
        self.join.process_element1(ctx, row, out);
    }

    fn process_element2<C: Collector<Row>>(
        &mut self,
        ctx: &KeyContext<Key>,
        row: Row,
        out: &mut C,
    ) {
        self.join.process_element2(ctx, row, out);
    }

    fn on_watermark<C: Collector<Row>>(&mut self, watermark: i64, out: &mut C) {
        self.join.on_watermark(watermark, out);
    }

    fn watermark_delay(&self) -> i64 {
        self.delay
    }

    fn on_end_of_input<C: Collector<Row>>(&mut self, out: &mut C) {
        self.join.on_end_of_input(out);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        self.join.visit_state(states);
    }

    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        self.join.side_outputs(outputs);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<Key>> {
        self.join.timer_service()
    }

    fn on_timer<C: Collector<Row>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<Key>,
        domain: TimeDomain,
        out: &mut C,
    ) {
        self.join.on_timer(timestamp, ctx, domain, out);
    }
}

/// Concatenates the pairs of an interval join, keeping those for which
/// the residual condition holds.
pub struct RowPairs {
    /// Over the joined row.
    pub residual: Option<Arc<Scalar>>,
}

impl ProcessJoinFunction<Row, Row> for RowPairs {
    type Out = Row;

    fn process_element<C: Collector<Row>>(
        &mut self,
        left: Row,
        right: Row,
        _ctx: &JoinContext,
        out: &mut C,
    ) {
        let mut values: Values = left.values;
        values.extend(right.values);
        if let Some(row) = joined_row(self.residual.as_deref(), values) {
            out.collect(row);
        }
    }
}
