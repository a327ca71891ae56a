//! Flink's `ReplicateRows` under `INTERSECT ALL` and `EXCEPT ALL`: each
//! row of the counting aggregation's changelog as many times as its last
//! column says (none below 1), that column dropped, with the row's kind.
//!
//! A count that changes arrives as a `-U` of the old count right before
//! the `+U` of the new one (the aggregation emits both for one input
//! row, and the calc between them is chained). Replicated as they come,
//! a count growing one by one to `n` would emit `n²` rows; so a `-U` is
//! held until the next row, and when that is the `+U` of the same row
//! only the difference goes out: the copies added as `+I`, the copies
//! removed as `-D`, nothing when the count did not change. Any other row
//! after a held `-U` (an aggregation that emits no `-U` never holds one)
//! lets it out whole first. A held row never waits across records of
//! the aggregation's input, so no state is kept between them.

use weir_runtime::{Collector, ProcessContext, ProcessFunction};

use crate::value::{Row, RowKind};

/// The replicating function of one subtask.
#[derive(Debug, Default)]
pub struct ReplicateRows {
    /// A `-U` waiting for its `+U`: the row without its count, and the count.
    held: Option<(Row, usize)>,
}

/// The count in `row`'s last column, removed (0 for NULL or below 1).
fn take_count(row: &mut Row) -> usize {
    let n = row.values.pop().and_then(|n| n.as_i64()).unwrap_or(0);
    usize::try_from(n).unwrap_or(0)
}

fn emit(row: Row, kind: RowKind, n: usize, out: &mut impl FnMut(Row)) {
    for _ in 0..n {
        out(Row {
            kind,
            values: row.values.clone(),
        });
    }
}

impl ReplicateRows {
    /// Takes one changelog row with its count; emits into `out`.
    pub fn step(&mut self, mut row: Row, out: &mut impl FnMut(Row)) {
        let n = take_count(&mut row);
        match (self.held.take(), row.kind) {
            (held, RowKind::UpdateBefore) if n > 0 => {
                // (a `-U` after a held one: the first goes out whole)
                if let Some((before, was)) = held {
                    emit(before, RowKind::UpdateBefore, was, out);
                }
                self.held = Some((row, n));
            }
            (Some((before, was)), RowKind::UpdateAfter) if before.values == row.values => {
                if n > was {
                    emit(row, RowKind::Insert, n - was, out);
                } else {
                    emit(row, RowKind::Delete, was - n, out);
                }
            }
            (held, kind) => {
                if let Some((before, was)) = held {
                    emit(before, RowKind::UpdateBefore, was, out);
                }
                emit(row, kind, n, out);
            }
        }
    }

    /// Lets a held `-U` out whole.
    pub fn flush_into(&mut self, out: &mut impl FnMut(Row)) {
        if let Some((before, was)) = self.held.take() {
            emit(before, RowKind::UpdateBefore, was, out);
        }
    }
}

impl ProcessFunction for ReplicateRows {
    type In = Row;
    type Out = Row;

    fn process<C: Collector<Row>>(&mut self, _: &ProcessContext, row: Row, out: &mut C) {
        self.step(row, &mut |r| out.collect(r));
    }

    fn on_end_of_input<C: Collector<Row>>(&mut self, out: &mut C) {
        self.flush_into(&mut |r| out.collect(r));
    }
}

#[cfg(test)]
mod tests;
