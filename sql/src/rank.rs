//! `ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..)` bounded by the outer
//! `WHERE rn <= N`: the Top-N rows per partition (Flink's
//! `AppendOnlyTopNFunction`) and its special case, deduplication (Flink's
//! `RowTimeDeduplicateFunction`): keyed by the partition columns, state
//! per key in keyed state, so checkpointed, restored and rescaled with the
//! key's key group. Over an updating input a Top-N is [`RetractTopN`]
//! (Flink's `RetractableTopNFunction`), which keeps all the key's rows;
//! deduplication and window Top-N take append-only input. `RANK()` and
//! `DENSE_RANK()` bounded the same way are a [`RetractTopN`] with
//! [`Ties`]: a range of ranks, peers sharing one.
//!
//! **Top-N** keeps the N best rows of each key, sorted, in one
//! [`KeyedValueState`] value ([`RowList`]); a row that falls out of the
//! top N is forgotten (no retraction can bring it back into an
//! append-only input's top). Its output is a changelog:
//!
//! - without the row number in the result: `-D` of the row pushed out of
//!   the top N, then `+I` of the row that entered;
//! - with it: for every rank from the new row's down to the last, `-U` of
//!   the row that had the rank and `+U` of the row that has it now (or `+I`
//!   for a rank that was empty), as Flink's Rank operator does; a pair of
//!   equal rows is left out.
//!
//! **Ties.** Rows equal on the ORDER BY keys rank by their other columns,
//! in column order, ascending (then, for rows equal in every column, by
//! arrival): the result does not depend on the order rows arrive in, so a
//! restored or rescaled job gives the result of an uninterrupted one.
//! Flink ranks ties by arrival order instead. NULLs sort as the smallest
//! value (first for ASC, last for DESC) unless NULLS FIRST/LAST says
//! otherwise, as Flink's default null collation.
//!
//! **Deduplication** (`ORDER BY` a time attribute, `rn = 1`): keeping the
//! first row per key emits the key's earliest row when the watermark
//! passes it and drops the key's other rows (append-only output: a
//! filesystem sink takes it); keeping the last row emits `+I` for the
//! key's first row and `-U`/`+U` whenever a row with a time at least the
//! kept one's arrives. On a processing-time attribute the order is
//! arrival: the first row is emitted as it arrives, and every row
//! replaces the last one kept. See [`Deduplicate`].

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use weir_runtime::{
    BoxedStream, Collector, KeyContext, KeyedProcessFunction, KeyedStates, KeyedTimerService,
    KeyedValueState, SubtaskInfo, TimeDomain, TimerQueues,
};

use crate::value::{Key, Row, RowKind, RowList, Value};

/// One ORDER BY key of a Top-N.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortKey {
    /// The column.
    pub col: usize,
    /// DESC.
    pub desc: bool,
    /// NULLs before the other values.
    pub nulls_first: bool,
}

/// How a Top-N numbers rows equal on the ORDER BY columns (peers), for
/// `RANK()` and `DENSE_RANK()` (ROW_NUMBER numbers each row apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ties {
    /// `RANK()`: peers share a rank, and the next rank skips the numbers
    /// they used (1, 1, 3).
    Rank,
    /// `DENSE_RANK()`: peers share a rank, and the next rank is one more
    /// (1, 1, 2).
    Dense,
}

/// What a ROW_NUMBER() bounded by `rn <= N` is run as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RankKind {
    /// The N first rows by `order` per key.
    TopN {
        /// ORDER BY.
        order: Vec<SortKey>,
        /// N.
        limit: usize,
    },
    /// Window Top-N (Flink's `WindowRankOperator`): the N first rows by
    /// `order` per key of a window's results (the key holds the window's
    /// end, column `end`), emitted once when the watermark passes the
    /// window: append-only, and the key's state freed then.
    WindowTopN {
        /// ORDER BY.
        order: Vec<SortKey>,
        /// N.
        limit: usize,
        /// The `window_end` column (in the key).
        end: usize,
    },
    /// The rows numbered `start..=limit` by `order` per key, of an
    /// updating input (Flink's `RetractableTopNFunction`: every row of the
    /// key is kept, so that when a row of the top N is retracted the next
    /// one moves up) or from a later row than the first.
    RetractTopN {
        /// ORDER BY.
        order: Vec<SortKey>,
        /// The first row number kept (1-based).
        start: usize,
        /// N, the last row number kept.
        limit: usize,
        /// Keep every row (an updating input); else the first N only.
        keep_all: bool,
    },
    /// `RANK()` or `DENSE_RANK()` bounded by `rk <= N`: the rows ranked
    /// `start..=limit` by `order` per key, peers sharing a rank, so more
    /// than N rows may be kept. Run as [`RetractTopN`] with `ties`.
    TiedTopN {
        /// RANK or DENSE_RANK.
        ties: Ties,
        /// ORDER BY.
        order: Vec<SortKey>,
        /// The first rank kept (1-based).
        start: usize,
        /// N, the last rank kept.
        limit: usize,
        /// Keep every row (an updating input); else those ranked up to N.
        keep_all: bool,
    },
    /// Not a rank: a mini-batch of an updating input's changes (see
    /// [`MiniBatch`]), as the planner puts it on the updating side of a
    /// join without keys, whose every change re-joins all the other
    /// side's rows.
    MiniBatch {
        /// How long changes wait at most (processing time, ms).
        interval_ms: i64,
    },
    /// `ORDER BY time ASC`, `rn = 1`: the first row per key.
    KeepFirst {
        /// The time attribute column.
        time: usize,
    },
    /// `ORDER BY time DESC`, `rn = 1`: the last row per key.
    KeepLast {
        /// The time attribute column.
        time: usize,
    },
    /// `ORDER BY` a processing-time attribute, `rn = 1`: the first row to
    /// arrive per key (ASC: append-only, Flink's
    /// `ProcTimeDeduplicateKeepFirstRowFunction`) or the last (DESC: each
    /// row replaces the kept one, `ProcTimeDeduplicateKeepLastRowFunction`).
    ProcTimeDeduplicate {
        /// DESC: keep the last row.
        keep_last: bool,
    },
}

/// A planned Top-N or deduplication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rank {
    /// PARTITION BY columns (the key; none: one partition).
    pub partition: Vec<usize>,
    /// The column the row number is written to (BIGINT), when the query
    /// reads it.
    pub row_number: Option<usize>,
    /// Top-N or deduplication.
    pub kind: RankKind,
}

impl Rank {
    /// Whether the output is a changelog: all but keep-first-row and a
    /// window Top-N.
    pub fn updating(&self) -> bool {
        !matches!(
            self.kind,
            RankKind::KeepFirst { .. }
                | RankKind::WindowTopN { .. }
                | RankKind::ProcTimeDeduplicate { keep_last: false }
        )
    }

    /// The key of a row: its partition columns.
    pub fn key(&self, row: &Row) -> Key {
        Key::of(self.partition.iter().map(|&c| row.values[c].clone()))
    }
}

/// EXPLAIN's words, with the input's column names.
pub struct Explain<'a>(pub &'a Rank, pub &'a [String]);

impl fmt::Display for Explain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Explain(r, names) = self;
        let name = |c: usize| names.get(c).map_or("?", String::as_str);
        let partition = r
            .partition
            .iter()
            .map(|&c| name(c))
            .collect::<Vec<_>>()
            .join(", ");
        match &r.kind {
            RankKind::TopN { order, limit }
            | RankKind::RetractTopN { order, limit, .. }
            | RankKind::WindowTopN { order, limit, .. } => {
                let start = match r.kind {
                    RankKind::RetractTopN { start, .. } => start,
                    _ => 1,
                };
                let order = order_text(order, &name);
                write!(
                    f,
                    "{}rankType=[ROW_NUMBER], rankRange=[rankStart={start}, rankEnd={limit}], partitionBy=[{partition}], orderBy=[{order}], outputRankNumber=[{}])",
                    match r.kind {
                        RankKind::WindowTopN { .. } => "WindowRank(",
                        RankKind::RetractTopN { keep_all: true, .. } => {
                            "Rank(strategy=[RetractStrategy], "
                        }
                        _ => "Rank(strategy=[AppendFastStrategy], ",
                    },
                    r.row_number.is_some()
                )
            }
            RankKind::TiedTopN {
                ties,
                order,
                start,
                limit,
                keep_all,
            } => write!(
                f,
                "Rank(strategy=[{}], rankType=[{}], rankRange=[rankStart={start}, rankEnd={limit}], partitionBy=[{partition}], orderBy=[{}], outputRankNumber=[{}])",
                if *keep_all {
                    "RetractStrategy"
                } else {
                    "AppendFastStrategy"
                },
                match ties {
                    Ties::Rank => "RANK",
                    Ties::Dense => "DENSE_RANK",
                },
                order_text(order, &name),
                r.row_number.is_some()
            ),
            RankKind::MiniBatch { interval_ms } if *interval_ms == i64::MAX => write!(
                f,
                "MiniBatch(key=[{partition}], until=[end of input])"
            ),
            RankKind::MiniBatch { interval_ms } => write!(
                f,
                "MiniBatch(key=[{partition}], interval=[{interval_ms} ms])"
            ),
            RankKind::KeepFirst { time } | RankKind::KeepLast { time } => write!(
                f,
                "Deduplicate(keep=[{}], key=[{partition}], order=[ROWTIME {}])",
                if matches!(r.kind, RankKind::KeepFirst { .. }) {
                    "FirstRow"
                } else {
                    "LastRow"
                },
                name(*time)
            ),
            RankKind::ProcTimeDeduplicate { keep_last } => write!(
                f,
                "Deduplicate(keep=[{}], key=[{partition}], order=[PROCTIME])",
                if *keep_last { "LastRow" } else { "FirstRow" }
            ),
        }
    }
}

/// EXPLAIN's ORDER BY: `col DESC, col ASC NULLS LAST`.
fn order_text<'a>(order: &[SortKey], name: &dyn Fn(usize) -> &'a str) -> String {
    order
        .iter()
        .map(|k| {
            format!(
                "{} {}{}",
                name(k.col),
                if k.desc { "DESC" } else { "ASC" },
                if k.nulls_first == k.desc {
                    if k.nulls_first {
                        " NULLS FIRST"
                    } else {
                        " NULLS LAST"
                    }
                } else {
                    ""
                }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `a` before `b` in the Top-N's order (see the module doc for ties).
pub fn compare(order: &[SortKey], a: &Row, b: &Row) -> Ordering {
    let o = compare_keys(order, a, b);
    if o != Ordering::Equal {
        return o;
    }
    for (x, y) in a.values.iter().zip(&b.values) {
        let o = x.total_cmp(y);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// `a` and `b` by the ORDER BY columns alone: `Equal` for peers.
fn compare_keys(order: &[SortKey], a: &Row, b: &Row) -> Ordering {
    for k in order {
        let (x, y) = (&a.values[k.col], &b.values[k.col]);
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) if k.nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if k.nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) if k.desc => y.total_cmp(x),
            (false, false) => x.total_cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The ranks of `rows` (sorted by `order`) as `ties` numbers them.
fn ranks(order: &[SortKey], ties: Ties, rows: &[Row]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let rank = match out.last() {
            None => 1,
            Some(&prev) if compare_keys(order, &rows[i - 1], row) == Ordering::Equal => prev,
            Some(&prev) => match ties {
                Ties::Rank => i + 1,
                Ties::Dense => prev + 1,
            },
        };
        out.push(rank);
    }
    out
}

/// The row with its row number written to `col`, as `kind`.
fn numbered(row: &Row, col: Option<usize>, rank: usize, kind: RowKind) -> Row {
    let mut r = row.clone();
    r.kind = kind;
    if let Some(c) = col {
        r.values[c] = Value::BigInt(rank as i64);
    }
    r
}

/// Top-N over an append-only input (Flink's `AppendOnlyTopNFunction`).
pub struct AppendTopN {
    order: Arc<[SortKey]>,
    limit: usize,
    row_number: Option<usize>,
    top: KeyedValueState<Key, RowList>,
}

impl AppendTopN {
    /// The first `limit` rows by `order` per key; the row number written
    /// to column `row_number` if any.
    pub fn new(order: Arc<[SortKey]>, limit: usize, row_number: Option<usize>) -> Self {
        Self {
            order,
            limit,
            row_number,
            top: KeyedValueState::new("top-n-rows"),
        }
    }
}

impl KeyedProcessFunction for AppendTopN {
    type Key = Key;
    type In = Row;
    type Out = Row;

    fn process<C: Collector<Row>>(&mut self, ctx: &KeyContext<Key>, mut row: Row, out: &mut C) {
        row.kind = RowKind::Insert;
        let order = &self.order;
        let top = &mut self.top.value_mut_or_insert_with(ctx, RowList::default).0;
        // After every row not after it: equal rows rank by arrival.
        let at = top.partition_point(|r| compare(order, r, &row) != Ordering::Greater);
        if at >= self.limit {
            return;
        }
        let before = top.len();
        top.insert(at, row);
        let out_of_top = (top.len() > self.limit).then(|| top.pop().expect("more than N rows"));
        match self.row_number {
            None => {
                if let Some(gone) = out_of_top {
                    out.collect(numbered(&gone, None, 0, RowKind::Delete));
                }
                out.collect(numbered(&top[at], None, 0, RowKind::Insert));
            }
            Some(col) => {
                // Ranks at..: each was held by the row now one further down
                // (the last one's by the row pushed out).
                for r in at..top.len() {
                    let now = &top[r];
                    if r < before {
                        let was = top
                            .get(r + 1)
                            .or(out_of_top.as_ref())
                            .expect("a row had it");
                        if was.values == now.values {
                            continue;
                        }
                        out.collect(numbered(was, Some(col), r + 1, RowKind::UpdateBefore));
                        out.collect(numbered(now, Some(col), r + 1, RowKind::UpdateAfter));
                    } else {
                        out.collect(numbered(now, Some(col), r + 1, RowKind::Insert));
                    }
                }
            }
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.top);
    }
}

/// Top-N over an updating input (Flink's `RetractableTopNFunction`):
/// all the key's rows, sorted, in one [`KeyedValueState`] value; each
/// input row (an insert or update-after) enters it or (an update-before
/// or delete) leaves it, and the output is the change of the first N:
///
/// - without the row number, `-D` of the rows that left the top N and
///   `+I` of those that entered it;
/// - with it, per rank whose row changed `-U` of the row that had it and
///   `+U` of the row that has it (`+I` for a rank that was empty, `-D` for
///   one that is empty now).
///
/// A retraction of a row the key does not hold is ignored. With a first
/// row number `start` above 1 (`rn > 1`, `BETWEEN`, `OFFSET`) the same
/// goes for the ranks `start..=N`; over an append-only input the rows
/// after the N-th are dropped then, as nothing can bring them back.
///
/// With `ties` (RANK, DENSE_RANK) the range is of ranks, peers sharing
/// one, so it may hold more than N rows; the output is the change of the
/// rows in it: `-D`/`+I` of the rows that left or entered it and, with the
/// rank in the result, `-U`/`+U` of a row whose rank changed (a row
/// entering above it pushes it down). Over an append-only input the rows
/// ranked past N are dropped: a row's rank only grows as rows arrive.
pub struct RetractTopN {
    order: Arc<[SortKey]>,
    start: usize,
    limit: usize,
    keep_all: bool,
    ties: Option<Ties>,
    row_number: Option<usize>,
    rows: KeyedValueState<Key, RowList>,
}

impl RetractTopN {
    /// The rows numbered `start..=limit` by `order` per key (all rows
    /// kept with `keep_all`, for an updating input); the row number
    /// written to column `row_number` if any.
    pub fn new(
        order: Arc<[SortKey]>,
        (start, limit): (usize, usize),
        keep_all: bool,
        row_number: Option<usize>,
    ) -> Self {
        Self {
            order,
            start: start.max(1),
            limit,
            keep_all,
            ties: None,
            row_number,
            rows: KeyedValueState::new("top-n-all-rows"),
        }
    }

    /// The same, the range `start..=limit` of ranks numbered as `ties`.
    pub fn ranked(
        order: Arc<[SortKey]>,
        range: (usize, usize),
        ties: Ties,
        keep_all: bool,
        row_number: Option<usize>,
    ) -> Self {
        Self {
            ties: Some(ties),
            ..Self::new(order, range, keep_all, row_number)
        }
    }

    /// The rows of `rows` (sorted) ranked `start..=limit` as `ties`, each
    /// with its rank.
    fn tied_range(&self, ties: Ties, rows: &[Row]) -> Vec<(Row, usize)> {
        let ranks = ranks(&self.order, ties, rows);
        rows.iter()
            .zip(ranks)
            .skip_while(|(_, r)| *r < self.start)
            .take_while(|(_, r)| *r <= self.limit)
            .map(|(row, r)| (row.clone(), r))
            .collect()
    }

    /// [`process`](KeyedProcessFunction::process) with `ties`: the rows
    /// and ranks before and after the change, merged (both sorted) into
    /// the changes of the output.
    fn process_tied<C: Collector<Row>>(
        &mut self,
        ctx: &KeyContext<Key>,
        row: Row,
        accumulate: bool,
        ties: Ties,
        out: &mut C,
    ) {
        let held = |s: &Self| -> Vec<(Row, usize)> {
            s.rows
                .value_ref(ctx)
                .map_or_else(Vec::new, |l| s.tied_range(ties, &l.0))
        };
        let before = held(self);
        let order = self.order.clone();
        let rows = &mut self.rows.value_mut_or_insert_with(ctx, RowList::default).0;
        if accumulate {
            let at = rows.partition_point(|r| compare(&order, r, &row) != Ordering::Greater);
            rows.insert(at, row);
        } else {
            let at = rows.partition_point(|r| compare(&order, r, &row) == Ordering::Less);
            match rows.get(at) {
                Some(r) if r.values == row.values => {
                    rows.remove(at);
                }
                _ => return,
            }
        }
        if !self.keep_all {
            // Ranks only grow as rows arrive: past N is past for good.
            let ranks = ranks(&order, ties, rows);
            let kept = ranks.partition_point(|&r| r <= self.limit);
            rows.truncate(kept);
        }
        let after = held(self);
        let col = self.row_number;
        let (mut retract, mut add) = (Vec::new(), Vec::new());
        let (mut i, mut j) = (0, 0);
        while i < before.len() || j < after.len() {
            let o = match (before.get(i), after.get(j)) {
                (Some((b, _)), Some((a, _))) => compare(&order, b, a),
                (Some(_), None) => Ordering::Less,
                _ => Ordering::Greater,
            };
            match o {
                Ordering::Equal => {
                    let ((was, r0), (now, r1)) = (&before[i], &after[j]);
                    if col.is_some() && r0 != r1 {
                        retract.push(numbered(was, col, *r0, RowKind::UpdateBefore));
                        add.push(numbered(now, col, *r1, RowKind::UpdateAfter));
                    }
                    (i, j) = (i + 1, j + 1);
                }
                Ordering::Less => {
                    let (was, r) = &before[i];
                    retract.push(numbered(was, col, *r, RowKind::Delete));
                    i += 1;
                }
                Ordering::Greater => {
                    let (now, r) = &after[j];
                    add.push(numbered(now, col, *r, RowKind::Insert));
                    j += 1;
                }
            }
        }
        for r in retract.into_iter().chain(add) {
            out.collect(r);
        }
        if self.rows.value_ref(ctx).is_some_and(|l| l.0.is_empty()) {
            self.rows.clear(ctx);
        }
    }
}

impl KeyedProcessFunction for RetractTopN {
    type Key = Key;
    type In = Row;
    type Out = Row;

    fn process<C: Collector<Row>>(&mut self, ctx: &KeyContext<Key>, mut row: Row, out: &mut C) {
        let accumulate = row.kind.is_accumulate();
        row.kind = RowKind::Insert;
        if let Some(ties) = self.ties {
            return self.process_tied(ctx, row, accumulate, ties, out);
        }
        let order = &self.order;
        let (start, limit, keep_all) = (self.start, self.limit, self.keep_all);
        let range = |rows: &[Row]| -> std::ops::Range<usize> {
            let end = rows.len().min(limit);
            (start - 1).min(end)..end
        };
        let rows = &mut self.rows.value_mut_or_insert_with(ctx, RowList::default).0;
        let before: Vec<Row> = rows[range(rows)].to_vec();
        if accumulate {
            let at = rows.partition_point(|r| compare(order, r, &row) != Ordering::Greater);
            rows.insert(at, row);
        } else {
            // Rows equal in every column are adjacent: the first of them.
            let at = rows.partition_point(|r| compare(order, r, &row) == Ordering::Less);
            match rows.get(at) {
                Some(r) if r.values == row.values => {
                    rows.remove(at);
                }
                _ => return,
            }
        }
        if !keep_all {
            rows.truncate(limit);
        }
        let after = &rows[range(rows)];
        match self.row_number {
            None => {
                // Both lists are sorted: a merge finds the rows in one only.
                let (mut i, mut j) = (0, 0);
                let mut inserted = Vec::new();
                while i < before.len() || j < after.len() {
                    let o = match (before.get(i), after.get(j)) {
                        (Some(b), Some(a)) => compare(order, b, a),
                        (Some(_), None) => Ordering::Less,
                        _ => Ordering::Greater,
                    };
                    match o {
                        Ordering::Equal => (i, j) = (i + 1, j + 1),
                        Ordering::Less => {
                            out.collect(numbered(&before[i], None, 0, RowKind::Delete));
                            i += 1;
                        }
                        Ordering::Greater => {
                            inserted.push(j);
                            j += 1;
                        }
                    }
                }
                for j in inserted {
                    out.collect(numbered(&after[j], None, 0, RowKind::Insert));
                }
            }
            Some(col) => {
                for r in 0..before.len().max(after.len()) {
                    match (before.get(r), after.get(r)) {
                        (Some(was), Some(now)) if was.values != now.values => {
                            out.collect(numbered(was, Some(col), start + r, RowKind::UpdateBefore));
                            out.collect(numbered(now, Some(col), start + r, RowKind::UpdateAfter));
                        }
                        (Some(was), None) => {
                            out.collect(numbered(was, Some(col), start + r, RowKind::Delete));
                        }
                        (None, Some(now)) => {
                            out.collect(numbered(now, Some(col), start + r, RowKind::Insert));
                        }
                        _ => {}
                    }
                }
            }
        }
        if rows.is_empty() {
            self.rows.clear(ctx);
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.rows);
    }
}

/// Deduplication on a time attribute: the first or the last row per key.
///
/// Keeping the first row waits for the watermark: the key's earliest row
/// so far is pending, with an event-time timer at its time; a row with an
/// earlier time replaces it; when the watermark reaches it, it is emitted
/// (`+I`) and the key's later rows are dropped. The output is append-only
/// and the same whatever the order rows arrive in (rows from several
/// source subtasks interleave arbitrarily), as a window's. A key's first
/// row arriving behind the watermark (late) is emitted at once.
///
/// Keeping the last row emits at once: `+I` for a key's first row, then
/// `-U`/`+U` for each row at least as late as the kept one.
///
/// Rows of equal time order as Top-N's ties (by their other columns): the
/// first row is the smallest, the last the largest. A row without a time
/// is dropped.
///
/// On processing time ([`Deduplicate::on_arrival`]) rows are ordered by
/// arrival, as Flink's: the key's first row is emitted at once and its
/// later rows dropped (append-only), or each row replaces the kept one.
pub struct Deduplicate {
    time: usize,
    keep_last: bool,
    /// By arrival (processing time), not by column `time`.
    arrival: bool,
    row_number: Option<usize>,
    /// Keep-last: the kept row. Keep-first: the pending row, or an empty
    /// row once the key's first row went out.
    kept: KeyedValueState<Key, Row>,
    timers: KeyedTimerService<Key>,
}

impl Deduplicate {
    /// Keeps the first (or, `keep_last`, the last) row per key by column
    /// `time`; a row number (1) written to column `row_number` if any.
    pub fn new(time: usize, keep_last: bool, row_number: Option<usize>) -> Self {
        Self {
            time,
            keep_last,
            arrival: false,
            row_number,
            kept: KeyedValueState::new("deduplicate-kept-row"),
            timers: KeyedTimerService::new(),
        }
    }

    /// Keeps the first (or, `keep_last`, the last) row per key to arrive:
    /// ordered by a processing-time attribute.
    pub fn on_arrival(keep_last: bool, row_number: Option<usize>) -> Self {
        Self {
            arrival: true,
            ..Self::new(0, keep_last, row_number)
        }
    }

    fn time_of(&self, row: &Row) -> i64 {
        row.values[self.time].as_i64().unwrap_or(i64::MIN)
    }

    /// `a` before `b`: by time, then by the other columns.
    fn before(&self, a: &Row, b: &Row) -> bool {
        let order = [SortKey {
            col: self.time,
            desc: false,
            nulls_first: true,
        }];
        compare(&order, a, b) == Ordering::Less
    }
}

impl KeyedProcessFunction for Deduplicate {
    type Key = Key;
    type In = Row;
    type Out = Row;

    fn process<C: Collector<Row>>(&mut self, ctx: &KeyContext<Key>, mut row: Row, out: &mut C) {
        if !self.arrival && row.values[self.time].is_null() {
            // No event time: neither first nor last (Flink's watermark
            // assigner fails on it; weir's windows and OVER drop it too).
            return;
        }
        row.kind = RowKind::Insert;
        let col = self.row_number;
        if self.keep_last {
            match self.kept.value_ref(ctx) {
                None => out.collect(numbered(&row, col, 1, RowKind::Insert)),
                Some(prev) if !self.arrival && self.before(&row, prev) => return,
                Some(prev) => {
                    if prev.values != row.values {
                        out.collect(numbered(prev, col, 1, RowKind::UpdateBefore));
                        out.collect(numbered(&row, col, 1, RowKind::UpdateAfter));
                    }
                }
            }
            self.kept.update(ctx, row);
            return;
        }
        if self.arrival {
            if self.kept.value_ref(ctx).is_none() {
                out.collect(numbered(&row, col, 1, RowKind::Insert));
                self.kept.update(ctx, Row::default());
            }
            return;
        }
        let t = self.time_of(&row);
        match self.kept.value_ref(ctx) {
            Some(done) if done.is_empty() => {}
            Some(pending) => {
                if self.before(&row, pending) {
                    let old = self.time_of(pending);
                    self.timers.delete_event_time_timer(ctx, old);
                    self.timers.register_event_time_timer(ctx, t);
                    self.kept.update(ctx, row);
                }
            }
            None if t <= self.timers.current_watermark() => {
                out.collect(numbered(&row, col, 1, RowKind::Insert));
                self.kept.update(ctx, Row::default());
            }
            None => {
                self.timers.register_event_time_timer(ctx, t);
                self.kept.update(ctx, row);
            }
        }
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
        let Some(pending) = self.kept.value_ref(ctx) else {
            return;
        };
        if pending.is_empty() || self.time_of(pending) != timestamp {
            return;
        }
        out.collect(numbered(pending, self.row_number, 1, RowKind::Insert));
        self.kept.update(ctx, Row::default());
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.kept);
    }
}

/// A mini-batch of an updating input (Flink's `table.exec.mini-batch`,
/// for one place): per key, the rows the input holds now (its changes
/// applied) and the rows emitted; the difference goes out (`-D` of rows
/// gone, `+I` of rows new) when a processing-time timer `interval` after
/// the first change fires (none for an `interval` of `i64::MAX`: a
/// bounded input's one batch), or at the end of the input (an event-time
/// timer at the end of time). Changes that cancel out within a batch (an
/// aggregate's `-U`/`+U` per input row) are never emitted: the join after
/// it re-joins the other side once per batch, not once per change.
pub struct MiniBatch {
    interval: i64,
    /// The input's rows now.
    live: KeyedValueState<Key, RowList>,
    /// The rows emitted (downstream holds them).
    emitted: KeyedValueState<Key, RowList>,
    /// The processing time a flush is due at, while changes wait.
    due: KeyedValueState<Key, i64>,
    timers: KeyedTimerService<Key>,
}

impl MiniBatch {
    /// Batches of at most `interval` ms of processing time.
    pub fn new(interval: i64) -> Self {
        Self {
            interval,
            live: KeyedValueState::new("mini-batch-live-rows"),
            emitted: KeyedValueState::new("mini-batch-emitted-rows"),
            due: KeyedValueState::new("mini-batch-due"),
            timers: KeyedTimerService::new(),
        }
    }
}

impl KeyedProcessFunction for MiniBatch {
    type Key = Key;
    type In = Row;
    type Out = Row;

    fn process<C: Collector<Row>>(&mut self, ctx: &KeyContext<Key>, mut row: Row, _: &mut C) {
        let accumulate = row.kind.is_accumulate();
        row.kind = RowKind::Insert;
        let live = &mut self.live.value_mut_or_insert_with(ctx, RowList::default).0;
        if accumulate {
            live.push(row);
        } else if let Some(i) = live.iter().position(|r| r.values == row.values) {
            live.swap_remove(i);
        }
        if self.due.value_ref(ctx).is_none() {
            // (`i64::MAX`: only at the end of the input.)
            let at = self
                .timers
                .current_processing_time()
                .saturating_add(self.interval);
            if self.interval < i64::MAX {
                self.timers.register_processing_time_timer(ctx, at);
            }
            self.timers.register_event_time_timer(ctx, i64::MAX);
            self.due.update(ctx, at);
        }
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
        let Some(&due) = self.due.value_ref(ctx) else {
            return;
        };
        self.due.clear(ctx);
        if self.interval < i64::MAX {
            self.timers.delete_processing_time_timer(ctx, due);
        }
        let mut live = self.live.value(ctx).map_or_else(Vec::new, |l| l.0);
        let mut emitted = self.emitted.value(ctx).map_or_else(Vec::new, |l| l.0);
        live.sort_by(|a, b| compare(&[], a, b));
        emitted.sort_by(|a, b| compare(&[], a, b));
        // Both sorted: a merge finds the rows in one only.
        let (mut gone, mut new) = (Vec::new(), Vec::new());
        let (mut i, mut j) = (0, 0);
        loop {
            match (emitted.get(i), live.get(j)) {
                (Some(e), Some(l)) if e.values == l.values => (i, j) = (i + 1, j + 1),
                (Some(e), Some(l)) if compare(&[], e, l) == Ordering::Less => {
                    gone.push(e);
                    i += 1;
                }
                (Some(e), None) => {
                    gone.push(e);
                    i += 1;
                }
                (_, Some(l)) => {
                    new.push(l);
                    j += 1;
                }
                (None, None) => break,
            }
        }
        for r in gone {
            out.collect(numbered(r, None, 0, RowKind::Delete));
        }
        for r in new {
            out.collect(numbered(r, None, 0, RowKind::Insert));
        }
        if live.is_empty() {
            self.live.clear(ctx);
            self.emitted.clear(ctx);
        } else {
            self.emitted.update(ctx, RowList(live));
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.live);
        states.value(&mut self.emitted);
        states.value(&mut self.due);
    }
}

/// Window Top-N: a window's rows per key, buffered until the watermark
/// passes the window's end (an event-time timer at `window_end - 1`, when
/// every result of that window has arrived), then the first N by the
/// order (ties as [`compare`]) emitted as inserts and the key's state
/// cleared. A row of a window already fired (late) is dropped.
pub struct WindowTopN {
    order: Arc<[SortKey]>,
    limit: usize,
    end: usize,
    row_number: Option<usize>,
    rows: KeyedValueState<Key, RowList>,
    timers: KeyedTimerService<Key>,
}

impl WindowTopN {
    /// The first `limit` rows by `order` of each window ending at column
    /// `end`; the row number written to column `row_number` if any.
    pub fn new(order: Arc<[SortKey]>, limit: usize, end: usize, row_number: Option<usize>) -> Self {
        Self {
            order,
            limit,
            end,
            row_number,
            rows: KeyedValueState::new("window-top-n-rows"),
            timers: KeyedTimerService::new(),
        }
    }
}

impl KeyedProcessFunction for WindowTopN {
    type Key = Key;
    type In = Row;
    type Out = Row;

    fn process<C: Collector<Row>>(&mut self, ctx: &KeyContext<Key>, mut row: Row, _: &mut C) {
        let Some(end) = row.values[self.end].as_i64() else {
            return;
        };
        let fire = end - 1;
        if fire <= self.timers.current_watermark() {
            return; // its window already fired
        }
        row.kind = RowKind::Insert;
        let (order, limit) = (&self.order, self.limit);
        let rows = &mut self.rows.value_mut_or_insert_with(ctx, RowList::default).0;
        let first = rows.is_empty();
        rows.push(row);
        // Keep no more than the N best (rows beyond can never enter).
        if rows.len() > 2 * limit.max(8) {
            rows.sort_by(|a, b| compare(order, a, b));
            rows.truncate(limit);
        }
        if first {
            self.timers.register_event_time_timer(ctx, fire);
        }
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
        let Some(RowList(mut rows)) = self.rows.value(ctx) else {
            return;
        };
        self.rows.clear(ctx);
        rows.sort_by(|a, b| compare(&self.order, a, b));
        for (i, r) in rows.iter().take(self.limit).enumerate() {
            out.collect(numbered(r, self.row_number, i + 1, RowKind::Insert));
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.rows);
    }
}

/// `rows` keyed by the partition columns through the operator of `rank`
/// (uid `uid`).
pub fn lower<'j>(rows: BoxedStream<'j, Row>, uid: &str, rank: &Rank) -> BoxedStream<'j, Row> {
    let key = rank.clone();
    let keyed = rows.key_by(move |r: &Row| key.key(r));
    let row_number = rank.row_number;
    match &rank.kind {
        RankKind::TopN { order, limit } => {
            let order: Arc<[SortKey]> = order.clone().into();
            let limit = *limit;
            keyed
                .process(uid, move |_: &SubtaskInfo| {
                    AppendTopN::new(order.clone(), limit, row_number)
                })
                .boxed()
        }
        RankKind::RetractTopN {
            order,
            start,
            limit,
            keep_all,
        } => {
            let order: Arc<[SortKey]> = order.clone().into();
            let (range, keep_all) = ((*start, *limit), *keep_all);
            keyed
                .process(uid, move |_: &SubtaskInfo| {
                    RetractTopN::new(order.clone(), range, keep_all, row_number)
                })
                .boxed()
        }
        RankKind::TiedTopN {
            ties,
            order,
            start,
            limit,
            keep_all,
        } => {
            let order: Arc<[SortKey]> = order.clone().into();
            let (range, ties, keep_all) = ((*start, *limit), *ties, *keep_all);
            keyed
                .process(uid, move |_: &SubtaskInfo| {
                    RetractTopN::ranked(order.clone(), range, ties, keep_all, row_number)
                })
                .boxed()
        }
        RankKind::MiniBatch { interval_ms } => {
            let interval = *interval_ms;
            keyed
                .process(uid, move |_: &SubtaskInfo| MiniBatch::new(interval))
                .boxed()
        }
        RankKind::WindowTopN { order, limit, end } => {
            let order: Arc<[SortKey]> = order.clone().into();
            let (limit, end) = (*limit, *end);
            keyed
                .process(uid, move |_: &SubtaskInfo| {
                    WindowTopN::new(order.clone(), limit, end, row_number)
                })
                .boxed()
        }
        RankKind::KeepFirst { time } | RankKind::KeepLast { time } => {
            let (time, keep_last) = (*time, matches!(rank.kind, RankKind::KeepLast { .. }));
            keyed
                .process(uid, move |_: &SubtaskInfo| {
                    Deduplicate::new(time, keep_last, row_number)
                })
                .boxed()
        }
        RankKind::ProcTimeDeduplicate { keep_last } => {
            let keep_last = *keep_last;
            keyed
                .process(uid, move |_: &SubtaskInfo| {
                    Deduplicate::on_arrival(keep_last, row_number)
                })
                .boxed()
        }
    }
}

#[cfg(test)]
mod tests;
