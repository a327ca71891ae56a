//! Aggregates over rows: the accumulator layout, accumulate and retract,
//! and the two operators that hold them in keyed state: a window
//! aggregation (an [`AggregateFunction`] for weir's window operator) and a
//! group aggregation (a [`KeyedProcessFunction`] emitting a changelog).
//!
//! An accumulator is an [`Acc`], slots of values: slot 0 counts the rows
//! folded in (net of retractions), then per aggregate one slot (COUNT,
//! MIN, MAX), two (SUM and AVG: the sum and the count of values in it, so
//! that a sum whose values were all retracted is NULL again, as Flink's
//! `SumWithRetractAggFunction`) or three (the variances: Welford's count,
//! mean and M2, or of an integer the exact count, sum and sum of squares,
//! see [`exact_moments`]), so it is checkpointed and rescaled as any keyed
//! state value. An aggregate
//! with `FILTER (WHERE ..)` folds only the rows whose filter column is
//! TRUE; a DISTINCT aggregate folds a value when its count in
//! [`crate::distinct`] rises from zero and takes it out when the count
//! falls back to zero (see there for where the counts live).

use std::cmp::Ordering;
use std::sync::Arc;

use smallvec::SmallVec;
use weir_runtime::{
    AggregateFunction, Collector, DecodeError, KeyContext, KeyedMapState, KeyedProcessFunction,
    KeyedStates, KeyedValueState, Wire,
};

use crate::distinct::{
    DistinctSet, DistinctState, DistinctStore, DistinctValues, NoDistinct, Ordered,
};
use crate::plan::{AggCall, AggFunc};
use crate::types::DataType;
use crate::value::{
    encoded_row_len, read_row, rescale, write_row, Key, Row, RowKind, Value, Values,
};

/// The aggregates of one grouping, with their accumulator layout.
#[derive(Clone, Debug)]
pub struct Aggs {
    calls: Arc<[AggCall]>,
    /// Accumulator slot of each call.
    slots: Arc<[usize]>,
    width: usize,
    /// The DISTINCT calls, by argument column.
    sets: Arc<[DistinctSet]>,
    /// The same fold as plain steps, when every call is one
    /// ([`Plain`]): no match on the function and types per call and row.
    plain: Option<Arc<[Plain]>>,
    /// The plain steps' slots (empty without them): the aggregates'
    /// values are these slots as they are.
    plain_slots: Arc<[usize]>,
    /// Whether a row folded in always changes the result: a COUNT(*)
    /// without FILTER counts it.
    counts_every_row: bool,
}

/// One aggregate's fold when it needs no types, filter or DISTINCT
/// store: most groupings (COUNT, SUM of BIGINT).
#[derive(Clone, Copy, Debug)]
enum Plain {
    /// COUNT(*): slot += sign.
    CountRows(usize),
    /// COUNT(col): slot += sign unless the column is NULL.
    CountValues { slot: usize, arg: usize },
    /// SUM of a BIGINT column as BIGINT, NULLs skipped.
    SumBigInt { slot: usize, arg: usize },
}

impl Plain {
    /// The accumulator slot the step folds into; the aggregate's value is
    /// that slot as it is (a plain SUM never retracts: NULL until a value).
    #[inline]
    fn slot(self) -> usize {
        match self {
            Plain::CountRows(slot)
            | Plain::CountValues { slot, .. }
            | Plain::SumBigInt { slot, .. } => slot,
        }
    }

    /// The plain step of call `c` at slot `slot`, if it has one.
    fn of(c: &AggCall, slot: usize) -> Option<Plain> {
        if c.distinct || c.filter.is_some() {
            return None;
        }
        Some(match (c.func, c.arg) {
            (AggFunc::Count, None) => Plain::CountRows(slot),
            (AggFunc::Count, Some(arg)) => Plain::CountValues { slot, arg },
            (AggFunc::Sum, Some(arg))
                if !c.retracts && c.arg_ty == DataType::BigInt && c.ty == DataType::BigInt =>
            {
                Plain::SumBigInt { slot, arg }
            }
            _ => return None,
        })
    }
}

impl Aggs {
    /// The layout of `calls`' accumulators.
    pub fn new(calls: &[AggCall]) -> Self {
        let mut slots = Vec::new();
        let mut sets: Vec<DistinctSet> = Vec::new();
        let mut w = 1;
        for (i, c) in calls.iter().enumerate() {
            slots.push(w);
            w += match c.func {
                // the sum and its count of values (a SUM only over an
                // input that retracts: otherwise a NULL sum already says
                // no value came, and the slot would cost every key)
                AggFunc::Sum if c.retracts => 2,
                AggFunc::Avg => 2,
                // n, mean, M2 (Welford's running sums)
                AggFunc::Variance { .. } => 3,
                _ => 1,
            };
            // (the planner gives every DISTINCT call an argument)
            if let (true, Some(arg)) = (c.distinct, c.arg) {
                match sets.iter_mut().find(|s| s.arg == arg) {
                    Some(s) => s.calls.push(i),
                    None => sets.push(DistinctSet {
                        arg,
                        calls: vec![i],
                    }),
                }
            }
        }
        let plain: Option<Vec<Plain>> = calls
            .iter()
            .zip(&slots)
            .map(|(c, &s)| Plain::of(c, s))
            .collect();
        let counts_every_row = calls.iter().any(|c| {
            c.func == AggFunc::Count && c.arg.is_none() && c.filter.is_none() && !c.distinct
        });
        let plain_slots = plain.iter().flatten().map(|p| p.slot()).collect();
        Self {
            calls: calls.into(),
            slots: slots.into(),
            width: w,
            sets: sets.into(),
            plain_slots,
            plain: plain.map(Into::into),
            counts_every_row,
        }
    }

    /// Whether folding a row in always changes the aggregates' values
    /// (a COUNT(*) counts it), so no comparison is needed to know.
    pub fn counts_every_row(&self) -> bool {
        self.counts_every_row
    }

    /// Whether an aggregate is DISTINCT (its values need a store).
    pub fn has_distinct(&self) -> bool {
        !self.sets.is_empty()
    }

    /// Empty distinct sets for a window's accumulator.
    pub fn create_distinct(&self) -> DistinctValues {
        DistinctValues::new(self.sets.len())
    }

    /// An empty accumulator.
    pub fn create(&self) -> Acc {
        let mut v = AccValues::with_capacity(self.width);
        v.push(Value::BigInt(0));
        for c in self.calls.iter() {
            match c.func {
                AggFunc::Count => v.push(Value::BigInt(0)),
                AggFunc::Sum if !c.retracts => v.push(Value::Null),
                AggFunc::Sum | AggFunc::Avg => {
                    v.push(Value::Null);
                    v.push(Value::BigInt(0));
                }
                AggFunc::Variance { .. } if exact_moments(c) => {
                    v.push(Value::BigInt(0));
                    v.push(Value::decimal(0));
                    v.push(Value::decimal(0));
                }
                AggFunc::Variance { .. } => {
                    v.push(Value::BigInt(0));
                    v.push(Value::Double(0.0));
                    v.push(Value::Double(0.0));
                }
                _ => v.push(Value::Null),
            }
        }
        Acc { values: v }
    }

    /// Folds `row` in (or out, for update-before and delete rows); the
    /// DISTINCT aggregates' values are counted in `distinct`.
    pub fn fold<D: DistinctStore>(&self, acc: &mut Acc, row: &Row, distinct: &mut D) {
        let sign: i64 = if row.kind.is_accumulate() { 1 } else { -1 };
        if let Some(plain) = &self.plain {
            // The slots and the row's values as slices once: indexing a
            // small vector asks each time whether it spilled.
            let (slots, values) = (&mut acc.values[..], &row.values[..]);
            bump(&mut slots[0], sign);
            for step in plain.iter() {
                match *step {
                    Plain::CountRows(s) => bump(&mut slots[s], sign),
                    Plain::CountValues { slot, arg } => {
                        if !values[arg].is_null() {
                            bump(&mut slots[slot], sign)
                        }
                    }
                    Plain::SumBigInt { slot, arg } => match (&mut slots[slot], &values[arg]) {
                        (_, Value::Null) => {}
                        (Value::BigInt(cur), Value::BigInt(x)) => {
                            *cur = cur.wrapping_add(x.wrapping_mul(sign))
                        }
                        (cur, x) => add(cur, x, DataType::BigInt, DataType::BigInt, sign),
                    },
                }
            }
            return;
        }
        bump(&mut acc.values[0], sign);
        for (i, c) in self.calls.iter().enumerate() {
            if c.distinct || !passes(c, row) {
                continue;
            }
            let arg = c.arg.map(|i| &row.values[i]);
            if arg.is_some_and(Value::is_null) {
                continue; // aggregates skip NULLs
            }
            self.apply(acc, i, arg, sign);
        }
        for (j, set) in self.sets.iter().enumerate() {
            let v = &row.values[set.arg];
            if v.is_null() {
                continue;
            }
            // Which of the set's aggregates the value enters or leaves.
            let mut crossed: SmallVec<[bool; 8]> = SmallVec::from_elem(false, set.calls.len());
            distinct.update(j, v, set.calls.len(), &mut |counts| {
                for (k, &ci) in set.calls.iter().enumerate() {
                    if !passes(&self.calls[ci], row) {
                        continue;
                    }
                    let before = counts[k];
                    if sign > 0 {
                        counts[k] += 1;
                        crossed[k] = before == 0;
                    } else if before > 0 {
                        // (a retraction of a value never counted is ignored)
                        counts[k] -= 1;
                        crossed[k] = before == 1;
                    }
                }
            });
            for (k, &ci) in set.calls.iter().enumerate() {
                if !crossed[k] {
                    continue;
                }
                let func = self.calls[ci].func;
                if sign < 0 && matches!(func, AggFunc::Min | AggFunc::Max) {
                    // The value's last row left: if it was the extreme,
                    // the next one of the values still counted is.
                    let s = self.slots[ci];
                    if acc.values[s].total_cmp(v) == Ordering::Equal {
                        acc.values[s] = distinct.extreme(j, k, func == AggFunc::Max);
                    }
                } else {
                    self.apply(acc, ci, Some(v), sign);
                }
            }
        }
    }

    /// Folds one value (`None`: COUNT(*)'s row) of call `i` in or out.
    fn apply(&self, acc: &mut Acc, i: usize, arg: Option<&Value>, sign: i64) {
        let c = &self.calls[i];
        let s = self.slots[i];
        match c.func {
            AggFunc::Count => bump(&mut acc.values[s], sign),
            AggFunc::Sum => {
                add(
                    &mut acc.values[s],
                    arg.expect("SUM has an argument"),
                    c.arg_ty,
                    c.ty,
                    sign,
                );
                if c.retracts {
                    bump(&mut acc.values[s + 1], sign);
                }
            }
            AggFunc::Avg => {
                add(
                    &mut acc.values[s],
                    arg.expect("AVG has an argument"),
                    c.arg_ty,
                    sum_type(c),
                    sign,
                );
                bump(&mut acc.values[s + 1], sign);
            }
            AggFunc::Variance { .. } => {
                if let Some(m) = moments(acc, s) {
                    let x = arg.and_then(Value::as_i64).map(i128::from);
                    if let Some((n, sx, sxx)) = x.and_then(|x| fold_moment(m, x, i128::from(sign)))
                    {
                        set_moments(acc, s, n, sx, sxx);
                        return;
                    }
                    // Past an i128: Welford's doubles from here on (read
                    // from the sums by `welford`).
                }
                let x = arg
                    .and_then(|v| v.to_f64(c.arg_ty.scale()))
                    .expect("a variance has a numeric argument");
                let (n, mean, m2) = welford(acc, s);
                let (n, mean, m2) = if sign > 0 {
                    let n = n + 1.0;
                    let d = x - mean;
                    let mean = mean + d / n;
                    (n, mean, m2 + d * (x - mean))
                } else if n <= 1.0 {
                    (0.0, 0.0, 0.0)
                } else {
                    let k = n - 1.0;
                    let prev = (n * mean - x) / k;
                    (k, prev, (m2 - (x - prev) * (x - mean)).max(0.0))
                };
                set_welford(acc, s, n, mean, m2);
            }
            // Append-only aggregates (the planner refuses them over an
            // updating input): a retraction does not reach them.
            AggFunc::FirstValue => {
                if acc.values[s].is_null() {
                    acc.values[s] = arg.expect("FIRST_VALUE has an argument").clone();
                }
            }
            AggFunc::LastValue => acc.values[s] = arg.expect("LAST_VALUE has an argument").clone(),
            AggFunc::ListAgg => {
                let v = arg.expect("LISTAGG has an argument");
                let sep = c.separator.as_deref().unwrap_or(",");
                list_append(&mut acc.values[s], v, sep);
            }
            AggFunc::Min | AggFunc::Max => {
                let v = arg.expect("MIN/MAX have an argument");
                let cur = &mut acc.values[s];
                let better = match cur {
                    Value::Null => true,
                    _ => {
                        let o = v.sql_cmp(cur, c.arg_ty.scale(), c.arg_ty.scale());
                        if c.func == AggFunc::Min {
                            o == Some(Ordering::Less)
                        } else {
                            o == Some(Ordering::Greater)
                        }
                    }
                };
                if better {
                    *cur = v.clone();
                }
            }
        }
    }

    /// Two accumulators as one (merging session windows): the DISTINCT
    /// aggregates are merged by [`merge_distinct`](Self::merge_distinct).
    pub fn merge(&self, mut a: Acc, b: &Acc) -> Acc {
        let n = b.values[0].as_i64().unwrap_or(0);
        bump(&mut a.values[0], n);
        for (c, &s) in self.calls.iter().zip(self.slots.iter()) {
            if c.distinct {
                continue;
            }
            match c.func {
                AggFunc::Count => bump(&mut a.values[s], b.values[s].as_i64().unwrap_or(0)),
                AggFunc::Sum => {
                    if !b.values[s].is_null() {
                        add(&mut a.values[s], &b.values[s], c.ty, c.ty, 1)
                    }
                    if c.retracts {
                        bump(&mut a.values[s + 1], b.values[s + 1].as_i64().unwrap_or(0));
                    }
                }
                AggFunc::Avg => {
                    if !b.values[s].is_null() {
                        let t = sum_type(c);
                        add(&mut a.values[s], &b.values[s], t, t, 1);
                    }
                    bump(&mut a.values[s + 1], b.values[s + 1].as_i64().unwrap_or(0));
                }
                AggFunc::Variance { .. } => {
                    let sums = moments(&a, s).zip(moments(b, s)).and_then(|(x, y)| {
                        Some((
                            x.0.checked_add(y.0)?,
                            x.1.checked_add(y.1)?,
                            x.2.checked_add(y.2)?,
                        ))
                    });
                    if let Some((n, sx, sxx)) = sums {
                        set_moments(&mut a, s, n, sx, sxx);
                        continue;
                    }
                    let (na, ma, qa) = welford(&a, s);
                    let (nb, mb, qb) = welford(b, s);
                    let n = na + nb;
                    if n > 0.0 {
                        let d = mb - ma;
                        set_welford(&mut a, s, n, ma + d * nb / n, qa + qb + d * d * na * nb / n);
                    }
                }
                AggFunc::Min | AggFunc::Max => {
                    let v = b.values[s].clone();
                    if v.is_null() {
                        continue;
                    }
                    let cur = &mut a.values[s];
                    let o = v.sql_cmp(cur, c.ty.scale(), c.ty.scale());
                    if cur.is_null()
                        || (c.func == AggFunc::Min && o == Some(Ordering::Less))
                        || (c.func == AggFunc::Max && o == Some(Ordering::Greater))
                    {
                        *cur = v;
                    }
                }
                // Sessions merge as `a` (the earlier) then `b`.
                AggFunc::FirstValue => {
                    if a.values[s].is_null() {
                        a.values[s] = b.values[s].clone();
                    }
                }
                AggFunc::LastValue => {
                    if !b.values[s].is_null() {
                        a.values[s] = b.values[s].clone();
                    }
                }
                AggFunc::ListAgg => {
                    let sep = c.separator.as_deref().unwrap_or(",");
                    list_append(&mut a.values[s], &b.values[s], sep);
                }
            }
        }
        a
    }

    /// Merges `b`'s distinct values into `a`'s (of accumulator `acc`):
    /// a value new to `a` for an aggregate folds into it.
    pub fn merge_distinct(&self, acc: &mut Acc, a: &mut DistinctValues, b: DistinctValues) {
        for (j, (set, values)) in self.sets.iter().zip(b.0).enumerate() {
            for (Ordered(v), counts) in values {
                let mut crossed: SmallVec<[bool; 8]> = SmallVec::from_elem(false, set.calls.len());
                a.update(j, &v, set.calls.len(), &mut |mine| {
                    for (k, (m, &c)) in mine.iter_mut().zip(counts.iter()).enumerate() {
                        crossed[k] = *m == 0 && c > 0;
                        *m += c;
                    }
                });
                for (k, &ci) in set.calls.iter().enumerate() {
                    if crossed[k] {
                        self.apply(acc, ci, Some(&v), 1);
                    }
                }
            }
        }
    }

    /// Whether [`merge`](Self::merge) (with
    /// [`merge_distinct`](Self::merge_distinct)) gives exactly the
    /// accumulator of folding the rows of both, whatever their order:
    /// COUNT, SUM and AVG of integers and DECIMALs, MIN and MAX of all but
    /// DOUBLE (DISTINCT or not, filtered or not). Not a DOUBLE sum (its
    /// rounding follows the order), nor the variances, FIRST_VALUE,
    /// LAST_VALUE or LISTAGG (the order rows came in decides them), nor
    /// an input that retracts. HOP windows of such aggregates fold each
    /// row into one slice (see `weir_runtime`'s `window::slices`).
    pub fn merges_exactly(&self) -> bool {
        let exact = |t: DataType| {
            matches!(
                t,
                DataType::Int | DataType::BigInt | DataType::Decimal { .. }
            )
        };
        self.calls.iter().all(|c| {
            !c.retracts
                && match c.func {
                    AggFunc::Count => true,
                    AggFunc::Sum => exact(c.ty),
                    AggFunc::Avg => exact(sum_type(c)),
                    AggFunc::Min | AggFunc::Max => c.arg_ty != DataType::Double,
                    _ => false,
                }
        })
    }

    /// The rows folded in, net.
    pub fn rows(&self, acc: &Acc) -> i64 {
        acc.values[0].as_i64().unwrap_or(0)
    }

    /// The aggregates' values.
    pub fn result(&self, acc: &Acc) -> Values {
        let mut out = Values::with_capacity(self.calls.len());
        self.result_into(acc, &mut out);
        out
    }

    /// A result row's values: `key`'s, then the aggregates' (what
    /// [`result_into`](Self::result_into) appends). Plain aggregates'
    /// values are their slots as they are: a row of up to four columns is
    /// then written straight into the row's inline buffer.
    pub fn result_row(&self, key: &[Value], acc: &Acc) -> Values {
        if self.plain.is_some() {
            // The shapes of up to four columns, each as one array (a loop
            // filling an array measured dearer than the values it copies).
            let s = &acc.values[..];
            let null = || Value::Null;
            let (buf, n) = match (key, &self.plain_slots[..]) {
                ([k], [a]) => ([k.clone(), s[*a].clone(), null(), null()], 2),
                ([k], [a, b]) => ([k.clone(), s[*a].clone(), s[*b].clone(), null()], 3),
                ([k], [a, b, c]) => ([k.clone(), s[*a].clone(), s[*b].clone(), s[*c].clone()], 4),
                ([k, l], [a]) => ([k.clone(), l.clone(), s[*a].clone(), null()], 3),
                ([k, l], [a, b]) => ([k.clone(), l.clone(), s[*a].clone(), s[*b].clone()], 4),
                ([k, l, m], [a]) => ([k.clone(), l.clone(), m.clone(), s[*a].clone()], 4),
                _ => ([null(), null(), null(), null()], usize::MAX),
            };
            if n != usize::MAX {
                return Values::from_buf_and_len(buf, n);
            }
        }
        let mut out = Values::with_capacity(key.len() + self.calls.len());
        out.extend(key.iter().cloned());
        self.result_into(acc, &mut out);
        out
    }

    /// Appends the aggregates' values to `out`.
    pub fn result_into<A: smallvec::Array<Item = Value>>(&self, acc: &Acc, out: &mut SmallVec<A>) {
        if self.plain.is_some() {
            let slots = &acc.values[..];
            for &s in self.plain_slots.iter() {
                out.push(slots[s].clone());
            }
            return;
        }
        for (c, &s) in self.calls.iter().zip(self.slots.iter()) {
            out.push(match c.func {
                AggFunc::Avg => {
                    let n = acc.values[s + 1].as_i64().unwrap_or(0);
                    if n == 0 {
                        Value::Null
                    } else {
                        avg(&acc.values[s], sum_type(c), n, c.ty)
                    }
                }
                // No values in the sum (none yet, or all retracted): NULL.
                AggFunc::Sum if c.retracts && acc.values[s + 1].as_i64().unwrap_or(0) <= 0 => {
                    Value::Null
                }
                AggFunc::Sum if matches!(acc.values[s], Value::Null) => Value::Null,
                AggFunc::Variance { sample, root } if moments(acc, s).is_some() => {
                    let (n, sx, sxx) = moments(acc, s).expect("checked just above");
                    exact_variance(n, sx, sxx, sample, root, c.ty)
                }
                AggFunc::Variance { sample, root } => {
                    let (n, _, m2) = welford(acc, s);
                    let d = if sample { n - 1.0 } else { n };
                    if d <= 0.0 {
                        Value::Null
                    } else {
                        let v = m2 / d;
                        as_type(if root { v.sqrt() } else { v }, c.ty)
                    }
                }
                _ => acc.values[s].clone(),
            });
        }
    }
}

/// Whether a variance keeps its argument's exact moments, the count, sum
/// and sum of squares as integers, instead of Welford's doubles: an INT's
/// or a BIGINT's (TINYINT and SMALLINT are INTs here), typed as the
/// argument. Its result is the variance (or its root) truncated, and a
/// double's rounding, which retractions add to, would put a whole value
/// one below (`VAR_SAMP` of 12, 4 and 11 is 19, and was 18.99999999999998
/// after an 82 came and went): exact sums give the true value whatever
/// came and went. An i128 sums an INT's squares (below 2^62) for more
/// rows than an i64 counts; a BIGINT's (below 2^126) may pass it, and
/// that accumulator goes on with Welford's doubles (see [`welford`]).
fn exact_moments(c: &AggCall) -> bool {
    matches!(c.arg_ty, DataType::Int | DataType::BigInt) && c.ty == c.arg_ty
}

/// An integer variance's count, sum and sum of squares (slots `s..s +
/// 3`), while it holds them (`None`: Welford's doubles are there).
fn moments(acc: &Acc, s: usize) -> Option<(i128, i128, i128)> {
    match (&acc.values[s + 1], &acc.values[s + 2]) {
        (Value::Decimal(sx), Value::Decimal(sxx)) => Some((
            i128::from(acc.values[s].as_i64().unwrap_or(0)),
            sx.get(),
            sxx.get(),
        )),
        _ => None,
    }
}

/// The moments with `x` folded in (`sign` 1) or out (-1); `None` past an
/// i128.
fn fold_moment(
    (n, sx, sxx): (i128, i128, i128),
    x: i128,
    sign: i128,
) -> Option<(i128, i128, i128)> {
    Some((
        n + sign,
        sx.checked_add(sign * x)?,
        sxx.checked_add(sign * x.checked_mul(x)?)?,
    ))
}

fn set_moments(acc: &mut Acc, s: usize, n: i128, sx: i128, sxx: i128) {
    acc.values[s] = Value::BigInt(n as i64);
    acc.values[s + 1] = Value::decimal(sx);
    acc.values[s + 2] = Value::decimal(sxx);
}

/// The sum of squared deviations (M2) of `n` > 0 values of sum `sx` and
/// sum of squares `sxx`, in integers: with Σx = q·n + r (q truncated),
/// M2 = Σx² − (Σx)²/n = `m2` − r²/n, where `m2` = Σx² − q²·n − 2·q·r;
/// returns `(m2, r)`. The terms are within an i128 (q²·n ≤ (Σx)²/n ≤
/// Σx², |2·q·r| < 2^127; wrapping, so that sums a stray retraction left
/// inconsistent cannot panic), and `m2` is about n times the variance,
/// not Σx²: no digits cancel when it is made a double.
fn deviations(n: i128, sx: i128, sxx: i128) -> (i128, i128) {
    let (q, r) = (sx / n, sx % n);
    let m2 = sxx
        .wrapping_sub(q.wrapping_mul(q).wrapping_mul(n))
        .wrapping_sub(q.wrapping_mul(r).wrapping_mul(2));
    (m2, r)
}

/// The variance (or standard deviation) of `n` values of sum `sx` and sum
/// of squares `sxx`, truncated to `ty`: (n·Σx² − (Σx)²) / (n·d), with `d`
/// = `n` (population) or `n − 1` (sample), is (n·`m2` − r²) / (n·d) (see
/// [`deviations`]), in integers, so truncating division is exact; the
/// root of a whole number truncated is the root of the number truncated.
/// Past an i128 (billions of rows) the doubles' quotient.
fn exact_variance(n: i128, sx: i128, sxx: i128, sample: bool, root: bool, ty: DataType) -> Value {
    let d = if sample { n - 1 } else { n };
    if d <= 0 {
        return Value::Null;
    }
    let (m2, r) = deviations(n, sx, sxx);
    let exact = n
        .checked_mul(m2)
        .and_then(|a| a.checked_sub(r.wrapping_mul(r)))
        .zip(n.checked_mul(d))
        .map(|(num, den)| num.max(0) / den);
    match (exact, ty) {
        (Some(v), DataType::Int | DataType::BigInt) => {
            let v = if root { v.isqrt() } else { v };
            // (a result past the type saturates, as a double's cast does)
            match ty {
                DataType::Int => Value::Int(v.min(i128::from(i32::MAX)) as i32),
                _ => Value::BigInt(v.min(i128::from(i64::MAX)) as i64),
            }
        }
        _ => {
            let m2 = (m2 as f64 - (r as f64) * (r as f64) / n as f64).max(0.0);
            let v = m2 / d as f64;
            as_type(if root { v.sqrt() } else { v }, ty)
        }
    }
}

/// A variance's running count, mean and sum of squared deviations
/// (slots `s..s + 3`).
fn welford(acc: &Acc, s: usize) -> (f64, f64, f64) {
    if let Some((n, sx, sxx)) = moments(acc, s) {
        // An integer variance's sums, about to pass an i128 (or merged
        // with Welford's): the same count, mean and M2.
        if n <= 0 {
            return (0.0, 0.0, 0.0);
        }
        let (m2, r) = deviations(n, sx, sxx);
        let m2 = (m2 as f64 - (r as f64) * (r as f64) / n as f64).max(0.0);
        return (n as f64, sx as f64 / n as f64, m2);
    }
    (
        acc.values[s].as_i64().unwrap_or(0) as f64,
        acc.values[s + 1].to_f64(0).unwrap_or(0.0),
        acc.values[s + 2].to_f64(0).unwrap_or(0.0),
    )
}

fn set_welford(acc: &mut Acc, s: usize, n: f64, mean: f64, m2: f64) {
    acc.values[s] = Value::BigInt(n as i64);
    acc.values[s + 1] = Value::Double(mean);
    acc.values[s + 2] = Value::Double(m2);
}

/// A double as a value of `ty` (the argument's type: an integer truncated
/// toward zero, a DECIMAL rounded half up at its scale).
fn as_type(x: f64, ty: DataType) -> Value {
    match ty {
        DataType::Int => Value::Int(x.trunc() as i32),
        DataType::BigInt => Value::BigInt(x.trunc() as i64),
        DataType::Decimal { scale, .. } => {
            Value::decimal((x * 10f64.powi(i32::from(scale))).round() as i128)
        }
        DataType::Float => Value::float(x as f32),
        _ => Value::Double(x),
    }
}

/// AVG's running sum: BIGINT for integers (no overflow of an INT sum),
/// DOUBLE for a FLOAT (Flink's FloatAvgAggFunction), the argument's type
/// otherwise.
fn sum_type(c: &AggCall) -> DataType {
    match c.arg_ty {
        DataType::Int | DataType::BigInt => DataType::BigInt,
        DataType::Float => DataType::Double,
        DataType::Decimal { scale, .. } => DataType::Decimal {
            precision: 38,
            scale,
        },
        t => t,
    }
}

/// Whether `row` passes `c`'s FILTER (WHERE ..) (TRUE; no filter: all).
#[inline]
fn passes(c: &AggCall, row: &Row) -> bool {
    c.filter
        .is_none_or(|f| matches!(row.values[f], Value::Bool(true)))
}

#[inline]
fn bump(v: &mut Value, by: i64) {
    match v {
        Value::BigInt(n) => *n = n.wrapping_add(by),
        _ => {
            let n = v.as_i64().unwrap_or(0);
            *v = Value::BigInt(n.wrapping_add(by));
        }
    }
}

/// LISTAGG's `acc` with `v` appended (after `sep` unless it is the first).
fn list_append(acc: &mut Value, v: &Value, sep: &str) {
    let Value::Str(text) = v else {
        return; // (the planner takes STRINGs only)
    };
    match acc {
        Value::Str(list) => {
            list.push_str(sep);
            list.push_str(text);
        }
        _ => *acc = Value::Str(text.clone()),
    }
}

/// `acc += sign * v` in type `ty` (`v` of type `vt`).
fn add(acc: &mut Value, v: &Value, vt: DataType, ty: DataType, sign: i64) {
    // A BIGINT sum of BIGINTs (the common case) in place.
    if let (Value::BigInt(cur), Value::BigInt(x)) = (&mut *acc, v) {
        if ty == DataType::BigInt {
            *cur = cur.wrapping_add(x.wrapping_mul(sign));
            return;
        }
    }
    let next = match ty {
        DataType::Int => {
            let x = v.as_i64().unwrap_or(0) as i32;
            let cur = acc.as_i64().unwrap_or(0) as i32;
            Value::Int(cur.wrapping_add(x.wrapping_mul(sign as i32)))
        }
        DataType::BigInt => {
            let x = v.as_i64().unwrap_or(0);
            Value::BigInt(acc.as_i64().unwrap_or(0).wrapping_add(x.wrapping_mul(sign)))
        }
        DataType::Double => {
            let x = v.to_f64(vt.scale()).unwrap_or(0.0);
            Value::Double(acc.to_f64(0).unwrap_or(0.0) + x * sign as f64)
        }
        // SUM of a FLOAT adds floats, as Flink's FloatSumAggFunction.
        DataType::Float => {
            let x = v.to_f64(vt.scale()).unwrap_or(0.0) as f32;
            Value::float(acc.to_f64(0).unwrap_or(0.0) as f32 + x * sign as f32)
        }
        DataType::Decimal { precision, scale } => {
            let x = v.to_scaled(vt.scale(), scale).unwrap_or(0);
            let cur = match acc {
                Value::Decimal(c) => c.get(),
                _ => 0,
            };
            // A sum past the type's 38 digits is NULL, as Flink's
            // `adjustedPlus` (`DecimalData.fromBigDecimal`) makes it; the
            // next value starts the sum again, as Flink's SUM takes the
            // operand when its sum is NULL.
            match cur.checked_add(x * i128::from(sign)) {
                Some(r) if crate::expr::fits(r, precision) => Value::decimal(r),
                _ => Value::Null,
            }
        }
        _ => return,
    };
    *acc = next;
}

fn avg(sum: &Value, st: DataType, n: i64, ty: DataType) -> Value {
    match ty {
        DataType::Int => Value::Int((sum.as_i64().unwrap_or(0) / n) as i32),
        DataType::BigInt => Value::BigInt(sum.as_i64().unwrap_or(0) / n),
        DataType::Double => Value::Double(sum.to_f64(0).unwrap_or(0.0) / n as f64),
        DataType::Float => Value::float((sum.to_f64(0).unwrap_or(0.0) / n as f64) as f32),
        DataType::Decimal { scale, .. } => {
            let Value::Decimal(s) = sum else {
                return Value::Null;
            };
            // sum at `scale + 1` digits, divided, rounded half away from zero.
            match rescale(s.get(), st.scale(), scale + 1) {
                Some(x) => {
                    let q = x / i128::from(n);
                    Value::decimal((q + q.signum() * 5) / 10)
                }
                None => Value::Null,
            }
        }
        _ => Value::Null,
    }
}

/// An accumulator's slots, inline up to three: the row count and two
/// aggregates (COUNT and SUM, or one AVG) take no heap, and a state entry
/// stays small (a [`Values`] row inlines eight, 200 bytes, for any
/// aggregate).
pub type AccValues = SmallVec<[Value; 3]>;

/// An accumulator (see the module documentation for its slots). Its wire
/// form is that of an insert [`Row`] of its slots, so state written when
/// accumulators were rows restores as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acc {
    /// The slots.
    pub values: AccValues,
}

impl Wire for Acc {
    fn encoded_len(&self) -> usize {
        encoded_row_len(&self.values)
    }

    fn write(&self, out: &mut [u8]) {
        write_row(RowKind::Insert, &self.values, out);
    }

    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        let (_, values, n) = read_row(input)?;
        Ok((Acc { values }, n))
    }
}

/// A window's accumulator: the aggregates' slots and the values of its
/// DISTINCT aggregates (empty without them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowAcc {
    /// The slots ([`Aggs`]).
    pub row: Acc,
    /// The distinct values.
    pub distinct: DistinctValues,
}

/// Wire form: the row, then the distinct values.
impl Wire for WindowAcc {
    fn encoded_len(&self) -> usize {
        self.row.encoded_len() + self.distinct.encoded_len()
    }

    fn write(&self, out: &mut [u8]) {
        let n = self.row.encoded_len();
        self.row.write(&mut out[..n]);
        self.distinct.write(&mut out[n..]);
    }

    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        let (row, n) = Acc::read(input)?;
        let (distinct, m) = DistinctValues::read(&input[n..])?;
        Ok((WindowAcc { row, distinct }, n + m))
    }
}

/// The window aggregation's fold: rows in, the aggregates' values out.
#[derive(Clone, Debug)]
pub struct WindowAggregate(pub Aggs);

impl AggregateFunction for WindowAggregate {
    type In = Row;
    type Acc = WindowAcc;
    type Out = Row;

    fn create_accumulator(&self) -> WindowAcc {
        WindowAcc {
            row: self.0.create(),
            distinct: self.0.create_distinct(),
        }
    }

    #[inline]
    fn add(&self, value: Row, acc: WindowAcc) -> WindowAcc {
        self.add_ref(&value, acc)
    }

    /// The fold only reads the row: a row in several windows (HOP,
    /// CUMULATE) is folded into each without a clone.
    fn add_ref(&self, value: &Row, mut acc: WindowAcc) -> WindowAcc {
        if self.0.has_distinct() {
            self.0.fold(&mut acc.row, value, &mut acc.distinct);
        } else {
            self.0.fold(&mut acc.row, value, &mut NoDistinct);
        }
        acc
    }

    fn get_result(&self, acc: &WindowAcc) -> Row {
        Row::new(self.0.result(&acc.row))
    }

    fn merge(&self, a: WindowAcc, b: WindowAcc) -> WindowAcc {
        let mut row = self.0.merge(a.row, &b.row);
        let mut distinct = a.distinct;
        self.0.merge_distinct(&mut row, &mut distinct, b.distinct);
        WindowAcc { row, distinct }
    }

    /// [`merge`](Self::merge) cloning only `b`'s distinct values, if any.
    fn merge_ref(&self, a: WindowAcc, b: &WindowAcc) -> WindowAcc {
        let mut row = self.0.merge(a.row, &b.row);
        let mut distinct = a.distinct;
        if self.0.has_distinct() {
            self.0
                .merge_distinct(&mut row, &mut distinct, b.distinct.clone());
        }
        WindowAcc { row, distinct }
    }

    fn merges_exactly(&self) -> bool {
        self.0.merges_exactly()
    }
}

/// GROUP BY without a window: per key an accumulator in keyed state; each
/// input row updates it and emits the change of the key's result row
/// (`+I` first, then `-U`/`+U`; `-D` when no row is left), the key's
/// columns first, as Flink's GroupAggregate does. Without update-before
/// ([`GroupAggregate::with_update_before`], when no consumer needs the
/// old row, see [`crate::changelog`]) a change is its `+U` alone.
pub struct GroupAggregate {
    aggs: Aggs,
    keys: usize,
    accs: KeyedValueState<Key, Acc>,
    /// The DISTINCT aggregates' values (only when there are some, so that
    /// a job without them keeps the state it always had).
    distinct: Option<KeyedMapState<Key, Row, Row>>,
    /// Whether a change emits the old row (`-U`) before the new.
    update_before: bool,
}

/// A key's aggregate values (its result row without the key columns).
type AggResult = SmallVec<[Value; 4]>;

impl GroupAggregate {
    /// The operator of `aggs` grouped by the first `keys` columns,
    /// emitting update-before rows.
    pub fn new(aggs: Aggs, keys: usize) -> Self {
        let distinct = aggs
            .has_distinct()
            .then(|| KeyedMapState::new("group-distinct-values"));
        Self {
            aggs,
            keys,
            accs: KeyedValueState::new("group-accumulators"),
            distinct,
            update_before: true,
        }
    }

    /// The same operator emitting update-before rows or not (the state
    /// is the same either way).
    pub fn with_update_before(mut self, update_before: bool) -> Self {
        self.update_before = update_before;
        self
    }
}

/// The result row of `key`'s first `keys` columns and `aggs`' values.
fn result_row(kind: RowKind, key: &Key, keys: usize, aggs: &[Value]) -> Row {
    let mut values = Values::with_capacity(keys + aggs.len());
    values.extend(key.values.iter().take(keys).cloned());
    values.extend(aggs.iter().cloned());
    Row { kind, values }
}

impl KeyedProcessFunction for GroupAggregate {
    type Key = Key;
    type In = Row;
    type Out = Row;

    fn process<C: Collector<Row>>(&mut self, ctx: &KeyContext<Key>, row: Row, out: &mut C) {
        // One lookup; the accumulator is updated in place.
        let aggs = &self.aggs;
        let keys = self.keys;
        let key = ctx.key();
        let acc = self.accs.value_mut_or_insert_with(ctx, || aggs.create());
        // The key's aggregate values before this row (none if it had no
        // row): the key columns stay the same, so only these can differ.
        let existed = aggs.rows(acc) > 0;
        // The values before the row are needed for an update-before row,
        // a delete, or to see whether anything changed; a row folded into
        // a COUNT(*) changes it, and an insert cannot delete.
        let surely_changes = row.kind.is_accumulate() && aggs.counts_every_row();
        let keep_before = existed && (self.update_before || !surely_changes);
        let mut before = AggResult::new();
        if keep_before {
            aggs.result_into(acc, &mut before);
        }
        match &mut self.distinct {
            Some(state) => aggs.fold(acc, &row, &mut DistinctState { state, ctx }),
            None => aggs.fold(acc, &row, &mut NoDistinct),
        }
        if aggs.rows(acc) <= 0 {
            // The key's last row was retracted (or a retraction of nothing).
            debug_assert!(
                keep_before || !existed,
                "a retraction keeps the values before"
            );
            if existed {
                out.collect(result_row(RowKind::Delete, key, keys, &before));
            }
            self.accs.clear(ctx);
            if let Some(d) = &mut self.distinct {
                d.clear(ctx);
            }
            return;
        }
        // The new result row is built whole (keys, then the aggregates'
        // values), not from an intermediate vector.
        let now = aggs.result_row(&key.values[..keys.min(key.values.len())], acc);
        if !existed {
            out.collect(Row {
                kind: RowKind::Insert,
                values: now,
            });
        } else if !keep_before || before[..] != now[keys..] {
            if self.update_before {
                out.collect(result_row(RowKind::UpdateBefore, key, keys, &before));
            }
            out.collect(Row {
                kind: RowKind::UpdateAfter,
                values: now,
            });
        }
        // (unchanged: nothing to say, as Flink)
    }

    /// As the hand-written W1's count: once the accumulators outgrow the
    /// caches (`PREFETCH_MIN_BYTES`), a record's slot is prefetched a few
    /// records ahead. Dearer in instructions (a row and its key moved
    /// through the look-ahead ring), cheaper in time: see bench/RESULTS.md.
    fn prefetch_pays(&self) -> bool {
        self.accs.prefetch_pays()
    }

    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        self.accs.prefetch(hash);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.accs);
        if let Some(d) = &mut self.distinct {
            states.map(d);
        }
    }
}

#[cfg(test)]
mod tests;
