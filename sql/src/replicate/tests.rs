//! The replicated changelog applied as a multiset equals each row's last
//! count; a count's change goes out as its difference only.

use super::ReplicateRows;
use crate::value::{Row, RowKind, Value};

fn row(kind: RowKind, v: i32, n: i64) -> Row {
    Row {
        kind,
        values: [Value::Int(v), Value::BigInt(n)].into_iter().collect(),
    }
}

fn run(input: Vec<Row>) -> Vec<(RowKind, i32)> {
    let mut f = ReplicateRows::default();
    let mut out = Vec::new();
    for r in input {
        f.step(r, &mut |r: Row| out.push(r));
    }
    f.flush_into(&mut |r: Row| out.push(r));
    out.iter()
        .map(|r| match r.values.as_slice() {
            [Value::Int(v)] => (r.kind, *v),
            other => panic!("the count column is dropped: {other:?}"),
        })
        .collect()
}

use RowKind::{Delete as D, Insert as I, UpdateAfter as UA, UpdateBefore as UB};

#[test]
fn a_row_is_copied_by_its_count_with_its_kind() {
    assert_eq!(run(vec![row(I, 7, 3)]), [(I, 7), (I, 7), (I, 7)]);
    assert_eq!(run(vec![row(D, 7, 2)]), [(D, 7), (D, 7)]);
    for n in [0, -2] {
        assert!(run(vec![row(I, 7, n)]).is_empty());
    }
    let mut null = row(I, 7, 1);
    null.values[1] = Value::Null;
    assert!(run(vec![null]).is_empty());
}

/// A count growing one by one to n emits n rows, not n²: each -U/+U pair
/// of one row is its difference.
#[test]
fn a_changed_count_emits_its_difference() {
    let mut input = vec![row(I, 7, 1)];
    for n in 1..100 {
        input.push(row(UB, 7, n));
        input.push(row(UA, 7, n + 1));
    }
    let out = run(input);
    assert_eq!(out.len(), 100);
    assert!(out.iter().all(|&r| r == (I, 7)));
    assert_eq!(run(vec![row(UB, 7, 3), row(UA, 7, 1)]), [(D, 7), (D, 7)]);
    assert!(run(vec![row(UB, 7, 2), row(UA, 7, 2)]).is_empty());
    // From or to no copies (EXCEPT ALL's count may drop below 1).
    assert_eq!(run(vec![row(UB, 7, 0), row(UA, 7, 2)]), [(UA, 7), (UA, 7)]);
    assert_eq!(run(vec![row(UB, 7, 2), row(UA, 7, -1)]), [(D, 7), (D, 7)]);
}

/// A held -U not followed by its row's +U goes out whole, before what
/// follows it, and at the end of the input.
#[test]
fn a_held_update_before_goes_out_whole_otherwise() {
    assert_eq!(
        run(vec![row(UB, 7, 2), row(UA, 8, 1)]),
        [(UB, 7), (UB, 7), (UA, 8)]
    );
    assert_eq!(
        run(vec![row(UB, 7, 1), row(UB, 8, 1), row(UA, 8, 2)]),
        [(UB, 7), (I, 8)]
    );
    assert_eq!(run(vec![row(UB, 7, 2)]), [(UB, 7), (UB, 7)]);
}
