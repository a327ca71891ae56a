//! DISTINCT and FILTER aggregates: a group aggregation fed inserts and
//! retractions ends at the aggregates of the rows left (computed here by
//! plain counting), also across a snapshot restored into two subtasks; a
//! window's accumulators merged equal one accumulator of all rows.

use std::collections::{BTreeMap, BTreeSet};

use weir_runtime::testing::{HarnessSetup, KeyedOperatorHarness};

use super::*;
use crate::plan::{AggCall, AggFunc};
use crate::value::RowKind;

/// Input rows `[key, user, cheap (BOOLEAN), amount]`: COUNT(DISTINCT
/// user), COUNT(DISTINCT user) FILTER (WHERE cheap), SUM(DISTINCT amount),
/// COUNT(*) FILTER (WHERE cheap), AVG(DISTINCT amount) FILTER (WHERE cheap).
fn calls() -> Vec<AggCall> {
    let call = |func, arg, distinct, filter, arg_ty| AggCall {
        func,
        arg,
        distinct,
        filter,
        arg_ty,
        ty: if func == AggFunc::Count {
            DataType::BigInt
        } else {
            arg_ty
        },
        text: String::new(),
        separator: None,
        retracts: true,
    };
    vec![
        call(AggFunc::Count, Some(1), true, None, DataType::BigInt),
        call(AggFunc::Count, Some(1), true, Some(2), DataType::BigInt),
        call(AggFunc::Sum, Some(3), true, None, DataType::BigInt),
        call(AggFunc::Count, None, false, Some(2), DataType::BigInt),
        call(AggFunc::Avg, Some(3), true, Some(2), DataType::BigInt),
    ]
}

fn row(kind: RowKind, key: i64, user: i64, cheap: bool, amount: i64) -> Row {
    Row {
        kind,
        values: [
            Value::BigInt(key),
            Value::BigInt(user),
            Value::Bool(cheap),
            Value::BigInt(amount),
        ]
        .into_iter()
        .collect(),
    }
}

/// A changelog: inserts, and now and then a retraction of an earlier row.
fn changes(n: u64) -> Vec<Row> {
    let mut live: Vec<Row> = Vec::new();
    let mut out = Vec::new();
    for i in 0..n {
        let h = (i + 3).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(23);
        if h % 4 == 0 && !live.is_empty() {
            let mut r = live.remove((h >> 8) as usize % live.len());
            r.kind = if h % 8 == 0 {
                RowKind::Delete
            } else {
                RowKind::UpdateBefore
            };
            out.push(r);
        } else {
            let r = row(
                RowKind::Insert,
                (h >> 4) as i64 % 4,
                (h >> 12) as i64 % 9,
                (h >> 20) % 3 == 0,
                (h >> 28) as i64 % 5,
            );
            live.push(r.clone());
            out.push(r);
        }
    }
    out
}

/// Per key the aggregates of the rows the changelog leaves.
fn reference(changes: &[Row]) -> BTreeMap<i64, Vec<Value>> {
    let live = live(changes);
    let mut out = BTreeMap::new();
    for key in 0..4 {
        let mine: Vec<&Row> = live
            .iter()
            .copied()
            .filter(|r| r.values[0] == Value::BigInt(key))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let get = |r: &Row, i: usize| r.values[i].as_i64().unwrap();
        let cheap = |r: &&&Row| r.values[2] == Value::Bool(true);
        let users: BTreeSet<i64> = mine.iter().map(|r| get(r, 1)).collect();
        let cheap_users: BTreeSet<i64> = mine.iter().filter(cheap).map(|r| get(r, 1)).collect();
        let amounts: BTreeSet<i64> = mine.iter().map(|r| get(r, 3)).collect();
        let cheap_amounts: BTreeSet<i64> = mine.iter().filter(cheap).map(|r| get(r, 3)).collect();
        let avg = if cheap_amounts.is_empty() {
            Value::Null
        } else {
            Value::BigInt(cheap_amounts.iter().sum::<i64>() / cheap_amounts.len() as i64)
        };
        out.insert(
            key,
            vec![
                Value::BigInt(users.len() as i64),
                Value::BigInt(cheap_users.len() as i64),
                Value::BigInt(amounts.iter().sum()),
                Value::BigInt(mine.iter().filter(cheap).count() as i64),
                avg,
            ],
        );
    }
    out
}

/// The result table a GroupAggregate's changelog leaves, by key.
fn result(out: &[Row]) -> BTreeMap<i64, Vec<Value>> {
    let mut table = BTreeMap::new();
    for r in out {
        let key = r.values[0].as_i64().unwrap();
        match r.kind {
            RowKind::Insert | RowKind::UpdateAfter => {
                table.insert(key, r.values[1..].to_vec());
            }
            RowKind::UpdateBefore | RowKind::Delete => {
                assert_eq!(table.remove(&key).as_deref(), Some(&r.values[1..]));
            }
        }
    }
    table
}

fn key(r: &Row) -> Key {
    Key::of([r.values[0].clone()])
}

fn group() -> GroupAggregate {
    GroupAggregate::new(Aggs::new(&calls()), 1)
}

#[test]
fn group_distinct_and_filter_aggregates_follow_inserts_and_retractions() {
    let input = changes(2_000);
    let mut h = KeyedOperatorHarness::new(|_| group(), key as fn(&Row) -> Key).unwrap();
    h.process_elements(input.iter().cloned());
    let want = reference(&input);
    assert_eq!(result(&h.take_output()), want);
    // a value is forgotten when its last row is gone: the map state holds
    // each live key's distinct users and amounts, nothing else
    let entries: BTreeSet<(i64, usize, i64)> = live(&input)
        .iter()
        .flat_map(|r| {
            let key = r.values[0].as_i64().unwrap();
            [
                (key, 0, r.values[1].as_i64().unwrap()),
                (key, 1, r.values[3].as_i64().unwrap()),
            ]
        })
        .collect();
    let state = h.function().distinct.as_ref().expect("distinct state");
    assert_eq!(state.total_len(), entries.len());
}

#[test]
fn without_update_before_a_change_is_its_update_after_alone() {
    let input = changes(2_000);
    let mut with = KeyedOperatorHarness::new(|_| group(), key as fn(&Row) -> Key).unwrap();
    with.process_elements(input.iter().cloned());
    let with = with.take_output();
    let mut h = KeyedOperatorHarness::new(
        |_| group().with_update_before(false),
        key as fn(&Row) -> Key,
    )
    .unwrap();
    h.process_elements(input.iter().cloned());
    let out = h.take_output();
    // The same rows but the -U ones, in the same order.
    let kept: Vec<Row> = with
        .iter()
        .filter(|r| r.kind != RowKind::UpdateBefore)
        .cloned()
        .collect();
    assert!(kept.len() < with.len(), "the input updates keys");
    assert_eq!(out, kept);
    // Read as upserts (a +U replaces the key's row, a -D removes it),
    // they leave the reference's table.
    let mut table = BTreeMap::new();
    for r in &out {
        let key = r.values[0].as_i64().unwrap();
        match r.kind {
            RowKind::Insert | RowKind::UpdateAfter => {
                table.insert(key, r.values[1..].to_vec());
            }
            RowKind::Delete => {
                assert_eq!(table.remove(&key).as_deref(), Some(&r.values[1..]));
            }
            RowKind::UpdateBefore => unreachable!("checked above"),
        }
    }
    assert_eq!(table, reference(&input));
}

/// The rows a changelog leaves.
fn live(changes: &[Row]) -> Vec<&Row> {
    let mut live: Vec<&Row> = Vec::new();
    for r in changes {
        if r.kind.is_accumulate() {
            live.push(r);
        } else {
            let i = live.iter().position(|l| l.values == r.values).unwrap();
            live.remove(i);
        }
    }
    live
}

#[test]
fn group_distinct_values_are_restored_and_rescaled_with_their_keys() {
    let input = changes(3_000);
    let mut h = KeyedOperatorHarness::new(|_| group(), key as fn(&Row) -> Key).unwrap();
    h.process_elements(input[..1_200].iter().cloned());
    let snapshot = h.snapshot().unwrap();
    let mut out = h.take_output();
    for i in 0..2 {
        let mut h = KeyedOperatorHarness::with_setup(
            HarnessSetup::new().subtask(i, 2).restore(&snapshot),
            |_| group(),
            key as fn(&Row) -> Key,
        )
        .unwrap();
        let mine: Vec<Row> = input[1_200..]
            .iter()
            .filter(|r| h.owns_key(&key(r)))
            .cloned()
            .collect();
        h.process_elements(mine);
        out.extend(h.take_output());
    }
    assert_eq!(result(&out), reference(&input));
}

#[test]
fn merged_window_accumulators_count_a_value_once() {
    let f = WindowAggregate(Aggs::new(&calls()));
    let input: Vec<Row> = changes(600)
        .into_iter()
        .filter(|r| r.kind == RowKind::Insert && r.values[0] == Value::BigInt(1))
        .collect();
    let all = input
        .iter()
        .fold(f.create_accumulator(), |acc, r| f.add(r.clone(), acc));
    let (left, right) = input.split_at(input.len() / 3);
    let a = left
        .iter()
        .fold(f.create_accumulator(), |acc, r| f.add(r.clone(), acc));
    let b = right
        .iter()
        .fold(f.create_accumulator(), |acc, r| f.add(r.clone(), acc));
    let merged = f.merge(a, b);
    assert_eq!(f.get_result(&merged), f.get_result(&all));
    assert_eq!(
        f.get_result(&all).values.to_vec(),
        reference(&input)[&1],
        "a window's aggregates are those of its rows"
    );
    // the accumulator round-trips through its wire form
    let mut buf = vec![0u8; merged.encoded_len()];
    merged.write(&mut buf);
    assert_eq!(WindowAcc::read(&buf).unwrap(), (merged, buf.len()));
}

/// A window aggregation merges exactly (its HOP windows then fold each
/// row into one slice and merge the slices of a window) only when every
/// call does, whatever order rows come in: COUNT, SUM and AVG of integers
/// and DECIMALs, MIN and MAX of all but DOUBLE, DISTINCT or not; not a
/// DOUBLE sum (rounding), FIRST_VALUE or LISTAGG (arrival order), nor
/// over a retracting input. Its `merge_ref` merges as `merge`.
#[test]
fn window_aggregates_merge_exactly_only_where_the_order_cannot_show() {
    let call = |func, arg_ty, ty| AggCall {
        func,
        arg: Some(3),
        distinct: false,
        filter: None,
        arg_ty,
        ty,
        text: String::new(),
        separator: None,
        retracts: false,
    };
    let exact = |calls: &[AggCall]| WindowAggregate(Aggs::new(calls)).merges_exactly();
    let dec = DataType::Decimal {
        precision: 10,
        scale: 2,
    };
    use DataType::{BigInt, Double, Int, String as Str, Timestamp};
    assert!(exact(&[
        call(AggFunc::Count, BigInt, BigInt),
        call(AggFunc::Sum, Int, Int),
        call(AggFunc::Sum, dec, dec),
        call(AggFunc::Avg, BigInt, BigInt),
        call(AggFunc::Min, Str, Str),
        call(AggFunc::Max, Timestamp, Timestamp),
    ]));
    for inexact in [
        call(AggFunc::Sum, Double, Double),
        call(AggFunc::Avg, Double, Double),
        call(AggFunc::Max, Double, Double),
        call(
            AggFunc::Variance {
                sample: true,
                root: false,
            },
            BigInt,
            BigInt,
        ),
        call(AggFunc::FirstValue, BigInt, BigInt),
        call(AggFunc::LastValue, BigInt, BigInt),
        call(AggFunc::ListAgg, Str, Str),
        AggCall {
            retracts: true,
            ..call(AggFunc::Count, BigInt, BigInt)
        },
    ] {
        let all = [call(AggFunc::Count, BigInt, BigInt), inexact];
        assert!(!exact(&all), "{:?}", all[1]);
    }
    // DISTINCT and FILTER calls over an append-only input.
    let calls: Vec<AggCall> = calls()
        .into_iter()
        .map(|c| AggCall {
            retracts: false,
            ..c
        })
        .collect();
    let f = WindowAggregate(Aggs::new(&calls));
    assert!(f.merges_exactly());
    let input: Vec<Row> = changes(600)
        .into_iter()
        .filter(|r| r.kind == RowKind::Insert && r.values[0] == Value::BigInt(2))
        .collect();
    let (left, right) = input.split_at(input.len() / 2);
    let fold = |rows: &[Row]| {
        rows.iter()
            .fold(f.create_accumulator(), |acc, r| f.add(r.clone(), acc))
    };
    let (a, b) = (fold(left), fold(right));
    let merged = f.merge_ref(a.clone(), &b);
    assert_eq!(merged, f.merge(a, b));
    assert_eq!(f.get_result(&merged), f.get_result(&fold(&input)));
}

/// A BIGINT aggregate call of `func` over column `arg` (`None`: `*`), as
/// the plain fold and result take them: no DISTINCT, no FILTER, and no
/// count of values beside a SUM (`retracts: false`).
fn bigint_call(func: AggFunc, arg: Option<usize>) -> AggCall {
    AggCall {
        func,
        arg,
        distinct: false,
        filter: None,
        arg_ty: DataType::BigInt,
        ty: DataType::BigInt,
        text: String::new(),
        separator: None,
        retracts: false,
    }
}

/// COUNT(*), COUNT(amount), SUM(amount): the plain fold (no match per
/// call on function and types), and the same calls folded the general
/// way (an AVG beside them takes the plain fold away), give the same
/// changelog, with and without update-before rows, NULL amounts skipped.
#[test]
fn the_plain_fold_gives_what_the_general_fold_gives() {
    let plain = vec![
        bigint_call(AggFunc::Count, None),
        bigint_call(AggFunc::Count, Some(3)),
        bigint_call(AggFunc::Sum, Some(3)),
    ];
    let mut general = plain.clone();
    general.push(bigint_call(AggFunc::Avg, Some(3)));
    assert!(Aggs::new(&plain).plain.is_some());
    assert!(Aggs::new(&general).plain.is_none());
    let input: Vec<Row> = changes(3_000)
        .into_iter()
        .map(|mut r| {
            if r.values[1].as_i64() == Some(4) {
                r.values[3] = Value::Null;
            }
            r
        })
        .collect();
    for update_before in [true, false] {
        let run = |calls: &[AggCall]| {
            let aggs = Aggs::new(calls);
            let mut h = KeyedOperatorHarness::new(
                move |_| GroupAggregate::new(aggs.clone(), 1).with_update_before(update_before),
                key as fn(&Row) -> Key,
            )
            .unwrap();
            h.process_elements(input.iter().cloned());
            h.take_output()
                .into_iter()
                .map(|mut r| {
                    r.values.truncate(4);
                    r
                })
                .collect::<Vec<Row>>()
        };
        let (p, g) = (run(&plain), run(&general));
        assert!(
            input.iter().any(|r| !r.kind.is_accumulate()),
            "the input retracts rows"
        );
        assert_eq!(p, g, "update_before = {update_before}");
    }
    // And the table they leave is the live rows' counts and sums.
    let mut h = KeyedOperatorHarness::new(
        |_| GroupAggregate::new(Aggs::new(&plain), 1),
        key as fn(&Row) -> Key,
    )
    .unwrap();
    h.process_elements(input.iter().cloned());
    let table = result(&h.take_output());
    for (key, values) in &table {
        let mine: Vec<&Row> = live(&input)
            .into_iter()
            .filter(|r| r.values[0] == Value::BigInt(*key))
            .collect();
        let amounts: Vec<i64> = mine.iter().filter_map(|r| r.values[3].as_i64()).collect();
        assert_eq!(values[0], Value::BigInt(mine.len() as i64));
        assert_eq!(values[1], Value::BigInt(amounts.len() as i64));
        assert_eq!(values[2], Value::BigInt(amounts.iter().sum()));
    }
}

/// SUM as Flink's `SumWithRetractAggFunction`: when every value in the
/// sum has been retracted while rows of the group remain (rows whose
/// value is NULL), the sum is NULL again, not 0; AVG likewise.
#[test]
fn a_sum_whose_values_are_all_retracted_is_null() {
    let call = |func| AggCall {
        func,
        arg: Some(1),
        distinct: false,
        filter: None,
        arg_ty: DataType::Int,
        ty: DataType::Int,
        text: String::new(),
        separator: None,
        retracts: true,
    };
    let aggs = Aggs::new(&[call(AggFunc::Sum), call(AggFunc::Avg)]);
    let row = |kind, v: Option<i32>| Row {
        kind,
        values: [Value::BigInt(1), v.map_or(Value::Null, Value::Int)]
            .into_iter()
            .collect(),
    };
    let mut acc = aggs.create();
    let mut fold = |r: Row| aggs.fold(&mut acc, &r, &mut NoDistinct);
    fold(row(RowKind::Insert, None));
    fold(row(RowKind::Insert, Some(10)));
    fold(row(RowKind::UpdateBefore, Some(10)));
    fold(row(RowKind::UpdateAfter, None));
    assert_eq!(aggs.rows(&acc), 2);
    assert_eq!(aggs.result(&acc).to_vec(), vec![Value::Null, Value::Null]);
    aggs.fold(&mut acc, &row(RowKind::Insert, Some(-4)), &mut NoDistinct);
    assert_eq!(
        aggs.result(&acc).to_vec(),
        vec![Value::Int(-4), Value::Int(-4)]
    );
}

/// A DECIMAL(38, 0) sum past 38 digits is NULL, as Flink's `adjustedPlus`
/// makes it (it was the 39-digit value, or past an i128 a wrapped one),
/// and the next value starts the sum again, as Flink's SUM takes the
/// operand when its sum is NULL.
#[test]
fn a_decimal_sum_past_38_digits_is_null_and_starts_again() {
    let ty = DataType::Decimal {
        precision: 38,
        scale: 0,
    };
    let aggs = Aggs::new(&[AggCall {
        func: AggFunc::Sum,
        arg: Some(1),
        distinct: false,
        filter: None,
        arg_ty: ty,
        ty,
        text: String::new(),
        separator: None,
        retracts: false,
    }]);
    let nines = 10i128.pow(38) - 1;
    let row = |v: i128| Row::of([Value::BigInt(1), Value::decimal(v)]);
    let mut acc = aggs.create();
    aggs.fold(&mut acc, &row(nines), &mut NoDistinct);
    assert_eq!(aggs.result(&acc).to_vec(), vec![Value::decimal(nines)]);
    aggs.fold(&mut acc, &row(nines), &mut NoDistinct);
    assert_eq!(aggs.result(&acc).to_vec(), vec![Value::Null]);
    aggs.fold(&mut acc, &row(7), &mut NoDistinct);
    assert_eq!(aggs.result(&acc).to_vec(), vec![Value::decimal(7)]);
    aggs.fold(&mut acc, &row(-nines), &mut NoDistinct);
    aggs.fold(&mut acc, &row(-8), &mut NoDistinct);
    assert_eq!(aggs.result(&acc).to_vec(), vec![Value::Null]);
}

/// A result row of plain aggregates built straight into its inline
/// buffer (keys of one to three columns, one to four aggregates: every
/// shape of up to four columns and some beyond) is the keys followed by
/// the general result: NULL sums before any value, wrapped sums after an
/// overflow, counts after retractions.
#[test]
fn a_plain_result_row_is_the_keys_and_the_aggregates_values() {
    let pool = [
        bigint_call(AggFunc::Count, None),
        bigint_call(AggFunc::Sum, Some(1)),
        bigint_call(AggFunc::Count, Some(1)),
        bigint_call(AggFunc::Sum, Some(2)),
    ];
    let rows = [
        Row::of([Value::BigInt(1), Value::Null, Value::BigInt(i64::MAX)]),
        Row::of([Value::BigInt(1), Value::BigInt(5), Value::BigInt(1)]),
        Row {
            kind: RowKind::UpdateBefore,
            values: [Value::BigInt(1), Value::BigInt(5), Value::Null]
                .into_iter()
                .collect(),
        },
    ];
    let keys = [
        vec![Value::BigInt(7)],
        vec![
            Value::Null,
            Value::Str("a string longer than twenty-four bytes".into()),
        ],
        vec![Value::Int(1), Value::Double(0.5), Value::Date(2)],
    ];
    for n in 1..=pool.len() {
        let aggs = Aggs::new(&pool[..n]);
        assert!(aggs.plain.is_some());
        // The same calls the general way (an AVG after them takes the
        // plain steps away; their slots stay where they were).
        let mut calls = pool[..n].to_vec();
        calls.push(bigint_call(AggFunc::Avg, Some(1)));
        let general = Aggs::new(&calls);
        assert!(general.plain.is_none());
        let (mut acc, mut general_acc) = (aggs.create(), general.create());
        for step in 0..=rows.len() {
            for key in &keys {
                let want: Values = key
                    .iter()
                    .cloned()
                    .chain(general.result(&general_acc).into_iter().take(n))
                    .collect();
                assert_eq!(
                    aggs.result_row(key, &acc),
                    want,
                    "{n} aggregates, step {step}"
                );
                let mut appended: Values = key.iter().cloned().collect();
                aggs.result_into(&acc, &mut appended);
                assert_eq!(appended, want);
            }
            if let Some(r) = rows.get(step) {
                aggs.fold(&mut acc, r, &mut NoDistinct);
                general.fold(&mut general_acc, r, &mut NoDistinct);
            }
        }
    }
}

/// VAR_SAMP, VAR_POP, STDDEV_SAMP and STDDEV_POP of an INT or a BIGINT
/// are the true values truncated, whatever came and went before: of 12, 4
/// and 11 (an 82 inserted and retracted between, as a GROUP BY's sum that
/// changed sends it) 19, 12, 4 and 3. Welford's doubles made the sample
/// variance 18.99999999999998, truncated to 18. Two accumulators merged
/// (a window's slices) give the same.
#[test]
fn an_integer_variance_is_exact_after_retractions() {
    for ty in [DataType::Int, DataType::BigInt] {
        integer_variance_is_exact_after_retractions(ty);
    }
}

fn integer_variance_is_exact_after_retractions(ty: DataType) {
    let call = |sample, root| AggCall {
        func: AggFunc::Variance { sample, root },
        arg: Some(1),
        distinct: false,
        filter: None,
        arg_ty: ty,
        ty,
        text: String::new(),
        separator: None,
        retracts: true,
    };
    let aggs = Aggs::new(&[
        call(true, false),
        call(false, false),
        call(true, true),
        call(false, true),
    ]);
    let value = |v: i64| match ty {
        DataType::Int => Value::Int(v as i32),
        _ => Value::BigInt(v),
    };
    let row = |kind, v: i64| Row {
        kind,
        values: [Value::BigInt(1), value(v)].into_iter().collect(),
    };
    let fold = |rows: &[(RowKind, i64)]| {
        let mut acc = aggs.create();
        for &(kind, v) in rows {
            aggs.fold(&mut acc, &row(kind, v), &mut NoDistinct);
        }
        acc
    };
    use RowKind::{Insert, UpdateAfter, UpdateBefore};
    let want: Vec<Value> = [19, 12, 4, 3].into_iter().map(value).collect();
    let acc = fold(&[
        (Insert, 12),
        (Insert, 4),
        (Insert, 82),
        (UpdateBefore, 82),
        (UpdateAfter, 11),
    ]);
    assert_eq!(aggs.result(&acc).to_vec(), want);
    let merged = aggs.merge(fold(&[(Insert, 12), (Insert, 4)]), &fold(&[(Insert, 11)]));
    assert_eq!(aggs.result(&merged).to_vec(), want);
    // Retracted to one row: no sample variance; to none: no variance.
    let acc = fold(&[(Insert, 5), (Insert, 7), (UpdateBefore, 7)]);
    assert_eq!(
        aggs.result(&acc).to_vec(),
        vec![Value::Null, value(0), Value::Null, value(0)]
    );
    let acc = fold(&[(Insert, 5), (UpdateBefore, 5)]);
    assert_eq!(aggs.result(&acc).to_vec(), vec![Value::Null; 4]);
    if ty == DataType::BigInt {
        // Squares past an i128 go on as Welford's doubles: ±(2^63 - 1)
        // four times each, one retracted, has variances and a sample
        // deviation past a BIGINT (saturated, as a double's cast) and a
        // population deviation of 0.9897 times i64::MAX.
        let big = |kind| [(kind, i64::MAX), (kind, -i64::MAX)];
        let rows: Vec<(RowKind, i64)> = (0..4)
            .flat_map(|_| big(Insert))
            .chain([(UpdateBefore, i64::MAX)])
            .collect();
        let out = aggs.result(&fold(&rows)).to_vec();
        assert_eq!(out[..3], vec![Value::BigInt(i64::MAX); 3], "{out:?}");
        let pop = out[3].as_i64().unwrap() as f64 / i64::MAX as f64;
        assert!((pop - 0.9897).abs() < 0.0001, "{out:?}");
    }
}
