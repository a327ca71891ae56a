//! The rows of an interval join: weir's [`IntervalJoinOperator`]
//! (Flink's `IntervalJoinOperator`, reached through
//! [`weir_runtime::KeyedStream::interval_join`]) hands each pair of rows
//! of one key within the time bounds to [`RowPairs`], which emits the
//! concatenated row (left columns, then right) if the residual condition
//! holds. The result is append-only: every output row is `+I`.
//!
//! [`IntervalJoinOperator`]: weir_runtime::IntervalJoinOperator

use std::sync::Arc;

use weir_runtime::{Collector, JoinContext, ProcessJoinFunction};

use crate::expr::{truth, Scalar};
use crate::value::{Row, RowKind, Values};

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
        let row = Row {
            kind: RowKind::Insert,
            values,
        };
        if self
            .residual
            .as_ref()
            .is_none_or(|c| truth(&c.eval(&row)) == Some(true))
        {
            out.collect(row);
        }
    }
}
