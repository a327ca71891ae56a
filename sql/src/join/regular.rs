//! The regular (unbounded) join of two keyed inputs, Flink's
//! `StreamingJoinOperator` as a [`KeyedCoProcessFunction`].
//!
//! Both inputs are keyed by their equi-join keys. Per key, each side's
//! rows live in a keyed map state from the row to `(count, associations)`:
//! how many times the row is there (its duplicates), and, for the side
//! whose unmatched rows are kept (the left of a LEFT JOIN), how many rows
//! of the other side it matches now. A row is joined with every row of
//! the other side under its key for which the residual condition holds.
//!
//! - An inserted row (`+I`, `+U`) is added to its side and emits `+I` of
//!   each joined pair. A kept side's row that matches nothing emits `+I`
//!   of itself with NULLs for the other side; when the first match
//!   arrives for such a row, its NULL-padded row is retracted (`-D`)
//!   before the joined rows go out.
//! - A retracted row (`-U`, `-D`) is removed from its side and emits `-D`
//!   of each pair it made; a kept row losing its last match gets its
//!   NULL-padded row back (`+I`).
//! - A row whose key has a NULL never matches (SQL's `NULL = NULL` is not
//!   true): it is not stored, and only a kept side's row emits (padded).
//!
//! A side whose input is append-only (no retractions) and whose unmatched
//! rows are not kept needs neither counts nor associations: its rows are
//! a keyed list of rows packed in their wire form ([`PackedRow`]). (Flink's
//! `JoinRecordStateViews.InputSideHasNoUniqueKey` keeps a map there too;
//! a list stores each row once, not as map key, entry key and two
//! neighbour links.)
//!
//! Output rows are `+I` and `-D` only, as Flink's join emits them. With
//! `table.exec.state.ttl` set, each stored row expires that long after it
//! was last written (processing time, weir's state TTL): an expired row
//! no longer joins, and its memory is freed by the state's cleanup.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use weir_runtime::{
    Collector, KeyContext, KeyedCoProcessFunction, KeyedListState, KeyedMapState, KeyedStates,
    StateTtlConfig, TtlClock,
};

use crate::expr::{truth, Scalar};
use crate::join::JoinKind;
use crate::value::{Key, PackedRow, Row, RowKind, Value, Values};

/// A stored row's `(count, associations)`.
type Counts = (i64, i64);

/// One input's rows of the current key.
enum Side {
    /// Each distinct row with its `(count, associations)`.
    Counted(KeyedMapState<Key, Row, Counts>),
    /// An append-only input's rows, one entry per row (duplicates too),
    /// packed: such a side keeps every row it ever saw.
    Appended(KeyedListState<Key, PackedRow>),
}

impl Side {
    fn new(name: &str, append_only: bool, ttl: Option<StateTtlConfig>) -> Self {
        if append_only {
            let s = KeyedListState::new(name);
            Side::Appended(match ttl {
                Some(ttl) => s.with_ttl(ttl),
                None => s,
            })
        } else {
            let s = KeyedMapState::new(name);
            Side::Counted(match ttl {
                Some(ttl) => s.with_ttl(ttl),
                None => s,
            })
        }
    }

    fn with_ttl_clock(self, ttl: Duration, clock: Rc<dyn TtlClock>) -> Self {
        let config = StateTtlConfig::new(ttl);
        match self {
            Side::Counted(s) => Side::Counted(s.with_ttl_clock(config, clock)),
            Side::Appended(s) => Side::Appended(s.with_ttl_clock(config, clock)),
        }
    }

    /// The key's rows with their `(count, associations)`.
    fn entries(&mut self, ctx: &KeyContext<Key>) -> Vec<(Row, Counts)> {
        match self {
            Side::Counted(s) => s.entries(ctx).collect(),
            Side::Appended(s) => s.iter(ctx).map(|r| (r.unpack(), (1, 0))).collect(),
        }
    }
}

/// The regular join operator: see the module documentation.
pub struct RegularJoin {
    kind: JoinKind,
    residual: Option<Arc<Scalar>>,
    widths: [usize; 2],
    /// The left and right inputs' rows of the current key.
    sides: [Side; 2],
    ttl: Option<StateTtlConfig>,
}

impl RegularJoin {
    /// A `kind` join of rows `left_width` and `right_width` wide keeping
    /// the pairs for which `residual` holds; its rows expire `ttl` after
    /// they were written, if set.
    pub fn new(
        kind: JoinKind,
        residual: Option<Arc<Scalar>>,
        left_width: usize,
        right_width: usize,
        ttl: Option<Duration>,
    ) -> Self {
        let ttl = ttl.map(StateTtlConfig::new);
        Self {
            kind,
            residual,
            widths: [left_width, right_width],
            sides: [
                Side::new("join-left", false, ttl),
                Side::new("join-right", false, ttl),
            ],
            ttl,
        }
    }

    /// The same join knowing which inputs are append-only (`[left,
    /// right]`): such a side whose unmatched rows are not kept holds its
    /// rows in a list. Its input must then never retract.
    pub fn with_append_only(mut self, append_only: [bool; 2]) -> Self {
        let names = ["join-left", "join-right"];
        for s in 0..2 {
            if append_only[s] && !self.outer(s) {
                self.sides[s] = Side::new(names[s], true, self.ttl);
            }
        }
        self
    }

    /// The same join with its rows' time-to-live `ttl` measured by
    /// `clock` instead of processing time (tests move a manual clock).
    pub fn with_ttl_clock(mut self, ttl: Duration, clock: Rc<dyn TtlClock>) -> Self {
        self.sides = self.sides.map(|s| s.with_ttl_clock(ttl, clock.clone()));
        self
    }

    /// Whether side `s`'s unmatched rows are kept (padded with NULLs).
    fn outer(&self, s: usize) -> bool {
        if s == 0 {
            self.kind.left_outer()
        } else {
            self.kind.right_outer()
        }
    }

    /// The joined row of side `s`'s row `this` and the other side's
    /// `other` (NULLs if none), left columns first.
    fn joined(&self, s: usize, this: &Row, other: Option<&Row>, kind: RowKind) -> Row {
        let mut values = Values::with_capacity(self.widths[0] + self.widths[1]);
        let nulls = |n: usize| std::iter::repeat_n(Value::Null, n);
        let (left, right) = if s == 0 {
            (Some(this), other)
        } else {
            (other, Some(this))
        };
        match left {
            Some(l) => values.extend(l.values.iter().cloned()),
            None => values.extend(nulls(self.widths[0])),
        }
        match right {
            Some(r) => values.extend(r.values.iter().cloned()),
            None => values.extend(nulls(self.widths[1])),
        }
        Row { kind, values }
    }

    fn process<C: Collector<Row>>(
        &mut self,
        s: usize,
        ctx: &KeyContext<Key>,
        row: Row,
        out: &mut C,
    ) {
        let o = 1 - s;
        let accumulate = row.kind.is_accumulate();
        let mut this = row;
        this.kind = RowKind::Insert;
        let (this_outer, other_outer) = (self.outer(s), self.outer(o));
        if ctx.key().values.iter().any(Value::is_null) {
            if this_outer {
                let kind = if accumulate {
                    RowKind::Insert
                } else {
                    RowKind::Delete
                };
                out.collect(self.joined(s, &this, None, kind));
            }
            return;
        }
        // The other side's rows this one joins: (row, counts, joined row).
        let mut matches: Vec<(Row, Counts, Row)> = Vec::new();
        let candidates = self.sides[o].entries(ctx);
        for (other, counts) in candidates {
            let joined = self.joined(s, &this, Some(&other), RowKind::Insert);
            let holds = self
                .residual
                .as_ref()
                .is_none_or(|c| truth(&c.eval(&joined)) == Some(true));
            if holds {
                matches.push((other, counts, joined));
            }
        }
        if accumulate {
            let mut associations = 0;
            for (other, (count, assoc), joined) in matches.iter_mut() {
                if other_outer && *assoc == 0 {
                    let padded = self.joined(o, other, None, RowKind::Delete);
                    emit_n(out, padded, *count);
                }
                emit_n(out, std::mem::take(joined), *count);
                if other_outer {
                    if let Side::Counted(side) = &mut self.sides[o] {
                        side.put(ctx, other.clone(), (*count, *assoc + 1));
                    }
                }
                associations += *count;
            }
            if matches.is_empty() && this_outer {
                out.collect(self.joined(s, &this, None, RowKind::Insert));
            }
            match &mut self.sides[s] {
                Side::Counted(side) => {
                    let count = side.get(ctx, &this).map_or(0, |(c, _)| c);
                    side.put(ctx, this, (count + 1, associations));
                }
                Side::Appended(side) => side.add(ctx, PackedRow::pack(&this)),
            }
        } else {
            // An append-only side never sees a retraction (the planner
            // says so); were one to come, its pairs are retracted still.
            if let Side::Counted(side) = &mut self.sides[s] {
                match side.get(ctx, &this) {
                    Some((c, a)) if c > 1 => side.put(ctx, this.clone(), (c - 1, a)),
                    Some(_) => {
                        side.remove(ctx, &this);
                    }
                    // Expired, or never seen: its pairs are retracted
                    // still, as Flink does.
                    None => {}
                }
            }
            for (other, (count, assoc), joined) in matches.iter_mut() {
                joined.kind = RowKind::Delete;
                emit_n(out, std::mem::take(joined), *count);
                if other_outer {
                    let left = (*assoc - 1).max(0);
                    if left == 0 {
                        let padded = self.joined(o, other, None, RowKind::Insert);
                        emit_n(out, padded, *count);
                    }
                    if let Side::Counted(side) = &mut self.sides[o] {
                        side.put(ctx, other.clone(), (*count, left));
                    }
                }
            }
            if matches.is_empty() && this_outer {
                out.collect(self.joined(s, &this, None, RowKind::Delete));
            }
        }
    }
}

/// Emits `row` `n` times (a stored row's duplicates).
fn emit_n<C: Collector<Row>>(out: &mut C, row: Row, n: i64) {
    for _ in 1..n {
        out.collect(row.clone());
    }
    if n >= 1 {
        out.collect(row);
    }
}

impl KeyedCoProcessFunction for RegularJoin {
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
        self.process(0, ctx, row, out);
    }

    fn process_element2<C: Collector<Row>>(
        &mut self,
        ctx: &KeyContext<Key>,
        row: Row,
        out: &mut C,
    ) {
        self.process(1, ctx, row, out);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        for side in &mut self.sides {
            match side {
                Side::Counted(s) => states.map(s),
                Side::Appended(s) => states.list(s),
            }
        }
    }
}

#[cfg(test)]
mod tests;
