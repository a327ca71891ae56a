//! Aggregates over rows: the accumulator layout, accumulate and retract,
//! and the two operators that hold them in keyed state: a window
//! aggregation (an [`AggregateFunction`] for weir's window operator) and a
//! group aggregation (a [`KeyedProcessFunction`] emitting a changelog).
//!
//! An accumulator is a [`Row`]: slot 0 counts the rows folded in (net of
//! retractions), then per aggregate one slot (COUNT, SUM, MIN, MAX) or two
//! (AVG: sum and count), so it is checkpointed and rescaled as any keyed
//! state value.

use std::cmp::Ordering;
use std::sync::Arc;

use weir_runtime::{
    AggregateFunction, Collector, KeyContext, KeyedProcessFunction, KeyedStates, KeyedValueState,
};

use crate::plan::{AggCall, AggFunc};
use crate::types::DataType;
use crate::value::{rescale, Row, RowKind, Value, Values};

/// The aggregates of one grouping, with their accumulator layout.
#[derive(Clone, Debug)]
pub struct Aggs {
    calls: Arc<[AggCall]>,
    /// Accumulator slot of each call.
    slots: Arc<[usize]>,
    width: usize,
}

impl Aggs {
    /// The layout of `calls`' accumulators.
    pub fn new(calls: &[AggCall]) -> Self {
        let mut slots = Vec::new();
        let mut w = 1;
        for c in calls {
            slots.push(w);
            w += if c.func == AggFunc::Avg { 2 } else { 1 };
        }
        Self {
            calls: calls.into(),
            slots: slots.into(),
            width: w,
        }
    }

    /// An empty accumulator.
    pub fn create(&self) -> Row {
        let mut v = Values::with_capacity(self.width);
        v.push(Value::BigInt(0));
        for c in self.calls.iter() {
            match c.func {
                AggFunc::Count => v.push(Value::BigInt(0)),
                AggFunc::Avg => {
                    v.push(Value::Null);
                    v.push(Value::BigInt(0));
                }
                _ => v.push(Value::Null),
            }
        }
        Row::new(v)
    }

    /// Folds `row` in (or out, for update-before and delete rows).
    pub fn fold(&self, acc: &mut Row, row: &Row) {
        let sign: i64 = if row.kind.is_accumulate() { 1 } else { -1 };
        bump(&mut acc.values[0], sign);
        for (c, &s) in self.calls.iter().zip(self.slots.iter()) {
            let arg = c.arg.map(|i| &row.values[i]);
            if arg.is_some_and(Value::is_null) {
                continue; // aggregates skip NULLs
            }
            match c.func {
                AggFunc::Count => bump(&mut acc.values[s], sign),
                AggFunc::Sum => add(
                    &mut acc.values[s],
                    arg.expect("SUM has an argument"),
                    c.arg_ty,
                    c.ty,
                    sign,
                ),
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
    }

    /// Two accumulators as one (merging session windows).
    pub fn merge(&self, mut a: Row, b: &Row) -> Row {
        let n = b.values[0].as_i64().unwrap_or(0);
        bump(&mut a.values[0], n);
        for (c, &s) in self.calls.iter().zip(self.slots.iter()) {
            match c.func {
                AggFunc::Count => bump(&mut a.values[s], b.values[s].as_i64().unwrap_or(0)),
                AggFunc::Sum => {
                    if !b.values[s].is_null() {
                        add(&mut a.values[s], &b.values[s], c.ty, c.ty, 1)
                    }
                }
                AggFunc::Avg => {
                    if !b.values[s].is_null() {
                        let t = sum_type(c);
                        add(&mut a.values[s], &b.values[s], t, t, 1);
                    }
                    bump(&mut a.values[s + 1], b.values[s + 1].as_i64().unwrap_or(0));
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
            }
        }
        a
    }

    /// The rows folded in, net.
    pub fn rows(&self, acc: &Row) -> i64 {
        acc.values[0].as_i64().unwrap_or(0)
    }

    /// The aggregates' values.
    pub fn result(&self, acc: &Row) -> Values {
        let mut out = Values::with_capacity(self.calls.len());
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
                AggFunc::Sum if matches!(acc.values[s], Value::Null) => Value::Null,
                _ => acc.values[s].clone(),
            });
        }
        out
    }
}

/// AVG's running sum: BIGINT for integers (no overflow of an INT sum),
/// the argument's type otherwise.
fn sum_type(c: &AggCall) -> DataType {
    match c.arg_ty {
        DataType::Int | DataType::BigInt => DataType::BigInt,
        DataType::Decimal { scale, .. } => DataType::Decimal {
            precision: 38,
            scale,
        },
        t => t,
    }
}

fn bump(v: &mut Value, by: i64) {
    let n = v.as_i64().unwrap_or(0);
    *v = Value::BigInt(n.wrapping_add(by));
}

/// `acc += sign * v` in type `ty` (`v` of type `vt`).
fn add(acc: &mut Value, v: &Value, vt: DataType, ty: DataType, sign: i64) {
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
        DataType::Decimal { scale, .. } => {
            let x = v.to_scaled(vt.scale(), scale).unwrap_or(0);
            let cur = match acc {
                Value::Decimal(c) => *c,
                _ => 0,
            };
            Value::Decimal(cur.wrapping_add(x * i128::from(sign)))
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
        DataType::Decimal { scale, .. } => {
            let Value::Decimal(s) = sum else {
                return Value::Null;
            };
            // sum at `scale + 1` digits, divided, rounded half away from zero.
            match rescale(*s, st.scale(), scale + 1) {
                Some(x) => {
                    let q = x / i128::from(n);
                    Value::Decimal((q + q.signum() * 5) / 10)
                }
                None => Value::Null,
            }
        }
        _ => Value::Null,
    }
}

/// The window aggregation's fold: rows in, the aggregates' values out.
#[derive(Clone, Debug)]
pub struct WindowAggregate(pub Aggs);

impl AggregateFunction for WindowAggregate {
    type In = Row;
    type Acc = Row;
    type Out = Row;

    fn create_accumulator(&self) -> Row {
        self.0.create()
    }

    fn add(&self, value: Row, mut acc: Row) -> Row {
        self.0.fold(&mut acc, &value);
        acc
    }

    fn get_result(&self, acc: &Row) -> Row {
        Row::new(self.0.result(acc))
    }

    fn merge(&self, a: Row, b: Row) -> Row {
        self.0.merge(a, &b)
    }
}

/// GROUP BY without a window: per key an accumulator in keyed state; each
/// input row updates it and emits the change of the key's result row
/// (`+I` first, then `-U`/`+U`; `-D` when no row is left), the key's
/// columns first, as Flink's GroupAggregate does.
pub struct GroupAggregate {
    aggs: Aggs,
    keys: usize,
    accs: KeyedValueState<Row, Row>,
}

impl GroupAggregate {
    /// The operator of `aggs` grouped by the first `keys` columns.
    pub fn new(aggs: Aggs, keys: usize) -> Self {
        Self {
            aggs,
            keys,
            accs: KeyedValueState::new("group-accumulators"),
        }
    }
}

impl KeyedProcessFunction for GroupAggregate {
    type Key = Row;
    type In = Row;
    type Out = Row;

    fn process<C: Collector<Row>>(&mut self, ctx: &KeyContext<Row>, row: Row, out: &mut C) {
        // One lookup; the accumulator is updated in place.
        let aggs = &self.aggs;
        let keys = self.keys;
        let acc = self.accs.value_mut_or_insert_with(ctx, || aggs.create());
        let before = (aggs.rows(acc) > 0).then(|| aggs.result(acc));
        aggs.fold(acc, &row);
        let left = aggs.rows(acc);
        let key = ctx.key();
        let emit = |kind: RowKind, results: Values| {
            let mut v = Values::with_capacity(keys + results.len());
            v.extend(key.values.iter().take(keys).cloned());
            v.extend(results);
            Row { kind, values: v }
        };
        if left <= 0 {
            // The key's last row was retracted (or a retraction of nothing).
            if let Some(old) = before {
                out.collect(emit(RowKind::Delete, old));
            }
            self.accs.clear(ctx);
            return;
        }
        let now = aggs.result(acc);
        match before {
            None => out.collect(emit(RowKind::Insert, now)),
            Some(old) if old != now => {
                out.collect(emit(RowKind::UpdateBefore, old));
                out.collect(emit(RowKind::UpdateAfter, now));
            }
            Some(_) => {} // unchanged: nothing to say, as Flink
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.accs);
    }
}
