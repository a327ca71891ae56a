//! The regular join's changelog, row by row, in weir's keyed operator
//! test harness: inner and outer joins, retractions, duplicates, NULL
//! keys, the residual condition and state TTL on a manual clock.

use std::rc::Rc;
use std::time::Duration;

use weir_runtime::operators::two_input::CoProcessAdapter;
use weir_runtime::testing::KeyedOperatorHarness;
use weir_runtime::{CoInput, ManualClock};

use super::*;
use crate::expr::Cmp;
use crate::types::DataType;

type KeyFn = fn(&CoInput<Row, Row>) -> Key;
type Harness = KeyedOperatorHarness<CoProcessAdapter<RegularJoin>, KeyFn>;

/// Rows are `(key BIGINT, name STRING)` on both sides.
fn key_of(r: &CoInput<Row, Row>) -> Key {
    let row = match r {
        CoInput::First(l) => l,
        CoInput::Second(r) => r,
    };
    Key::of([row.values[0].clone()])
}

fn harness(kind: JoinKind, residual: Option<Scalar>) -> Harness {
    harness_with(RegularJoin::new(kind, residual.map(Arc::new), 2, 2, None))
}

fn harness_with(join: RegularJoin) -> Harness {
    KeyedOperatorHarness::new(|_| CoProcessAdapter(join), key_of as KeyFn).expect("a harness")
}

fn row(kind: RowKind, k: Option<i64>, name: &str) -> Row {
    Row {
        kind,
        values: [
            k.map_or(Value::Null, Value::BigInt),
            Value::Str(name.into()),
        ]
        .into_iter()
        .collect(),
    }
}

fn left(kind: RowKind, k: i64, name: &str) -> CoInput<Row, Row> {
    CoInput::First(row(kind, Some(k), name))
}

fn right(kind: RowKind, k: i64, name: &str) -> CoInput<Row, Row> {
    CoInput::Second(row(kind, Some(k), name))
}

/// The output as `+I[1, a, 1, x]` lines.
fn out(h: &mut Harness) -> Vec<String> {
    let types = [
        DataType::BigInt,
        DataType::String,
        DataType::BigInt,
        DataType::String,
    ];
    h.take_output().iter().map(|r| r.display(&types)).collect()
}

use RowKind::{Delete as D, Insert as I, UpdateAfter as UA, UpdateBefore as UB};

#[test]
fn an_inner_join_emits_pairs_and_retracts_them() {
    let mut h = harness(JoinKind::Inner, None);
    h.process_element(left(I, 1, "a"));
    assert!(out(&mut h).is_empty());
    h.process_element(right(I, 1, "x"));
    h.process_element(right(I, 2, "y"));
    assert_eq!(out(&mut h), ["+I[1, a, 1, x]"]);
    h.process_element(left(I, 1, "b"));
    assert_eq!(out(&mut h), ["+I[1, b, 1, x]"]);
    // An update of the right row: its pairs go, the new ones come.
    h.process_element(right(UB, 1, "x"));
    let mut got = out(&mut h);
    got.sort();
    assert_eq!(got, ["-D[1, a, 1, x]", "-D[1, b, 1, x]"]);
    h.process_element(right(UA, 1, "z"));
    let mut got = out(&mut h);
    got.sort();
    assert_eq!(got, ["+I[1, a, 1, z]", "+I[1, b, 1, z]"]);
}

#[test]
fn duplicates_join_as_often_as_they_occur() {
    let mut h = harness(JoinKind::Inner, None);
    h.process_element(left(I, 1, "a"));
    h.process_element(left(I, 1, "a"));
    h.process_element(right(I, 1, "x"));
    assert_eq!(out(&mut h), ["+I[1, a, 1, x]", "+I[1, a, 1, x]"]);
    h.process_element(left(D, 1, "a"));
    assert_eq!(out(&mut h), ["-D[1, a, 1, x]"]);
    h.process_element(right(I, 1, "y"));
    assert_eq!(out(&mut h), ["+I[1, a, 1, y]"]);
}

#[test]
fn a_left_join_pads_then_retracts_the_padding() {
    let mut h = harness(JoinKind::Left, None);
    h.process_element(left(I, 1, "a"));
    assert_eq!(out(&mut h), ["+I[1, a, NULL, NULL]"]);
    h.process_element(right(I, 1, "x"));
    assert_eq!(out(&mut h), ["-D[1, a, NULL, NULL]", "+I[1, a, 1, x]"]);
    h.process_element(right(I, 1, "y"));
    assert_eq!(out(&mut h), ["+I[1, a, 1, y]"]);
    h.process_element(right(D, 1, "x"));
    assert_eq!(out(&mut h), ["-D[1, a, 1, x]"]);
    // The last match goes: the padded row comes back.
    h.process_element(right(D, 1, "y"));
    assert_eq!(out(&mut h), ["-D[1, a, 1, y]", "+I[1, a, NULL, NULL]"]);
    h.process_element(left(D, 1, "a"));
    assert_eq!(out(&mut h), ["-D[1, a, NULL, NULL]"]);
    // A right row without a left one is no output of a LEFT JOIN.
    h.process_element(right(I, 2, "z"));
    assert!(out(&mut h).is_empty());
}

#[test]
fn a_full_join_pads_both_sides() {
    let mut h = harness(JoinKind::Full, None);
    h.process_element(right(I, 1, "x"));
    assert_eq!(out(&mut h), ["+I[NULL, NULL, 1, x]"]);
    h.process_element(left(I, 1, "a"));
    assert_eq!(out(&mut h), ["-D[NULL, NULL, 1, x]", "+I[1, a, 1, x]"]);
    h.process_element(left(I, 1, "b"));
    assert_eq!(out(&mut h), ["+I[1, b, 1, x]"]);
    h.process_element(right(D, 1, "x"));
    let mut got = out(&mut h);
    got.sort();
    assert_eq!(
        got,
        [
            "+I[1, a, NULL, NULL]",
            "+I[1, b, NULL, NULL]",
            "-D[1, a, 1, x]",
            "-D[1, b, 1, x]"
        ]
    );
}

#[test]
fn a_null_key_matches_nothing() {
    let mut h = harness(JoinKind::Left, None);
    h.process_element(CoInput::Second(row(I, None, "x")));
    h.process_element(CoInput::First(row(I, None, "a")));
    assert_eq!(out(&mut h), ["+I[NULL, a, NULL, NULL]"]);
    h.process_element(CoInput::First(row(D, None, "a")));
    assert_eq!(out(&mut h), ["-D[NULL, a, NULL, NULL]"]);
}

#[test]
fn the_residual_condition_decides_what_matches() {
    // a.name < b.name
    let residual = Scalar::Cmp(
        Cmp::Lt,
        Box::new(Scalar::Column(1, DataType::String)),
        Box::new(Scalar::Column(3, DataType::String)),
    );
    let mut h = harness(JoinKind::Left, Some(residual));
    h.process_element(left(I, 1, "m"));
    h.process_element(right(I, 1, "a"));
    assert_eq!(out(&mut h), ["+I[1, m, NULL, NULL]"]);
    h.process_element(right(I, 1, "z"));
    assert_eq!(out(&mut h), ["-D[1, m, NULL, NULL]", "+I[1, m, 1, z]"]);
}

#[test]
fn rows_older_than_the_ttl_no_longer_join() {
    let clock = ManualClock::new(1_000);
    let join = RegularJoin::new(JoinKind::Inner, None, 2, 2, None)
        .with_ttl_clock(Duration::from_millis(500), Rc::new(clock.clone()));
    let mut h = harness_with(join);
    h.process_element(left(I, 1, "a"));
    clock.advance(Duration::from_millis(499));
    h.process_element(right(I, 1, "x"));
    assert_eq!(out(&mut h), ["+I[1, a, 1, x]"]);
    clock.advance(Duration::from_millis(1));
    // `a` was written 500 ms ago: expired; `x` 1 ms ago.
    h.process_element(right(I, 1, "y"));
    assert!(out(&mut h).is_empty());
    h.process_element(left(I, 1, "b"));
    assert_eq!(out(&mut h), ["+I[1, b, 1, y]", "+I[1, b, 1, x]"]);
    clock.advance(Duration::from_secs(10));
    h.process_element(left(I, 1, "c"));
    assert!(out(&mut h).is_empty());
}

#[test]
fn append_only_sides_in_lists_join_as_counted_ones_do() {
    let input = [
        left(I, 1, "a"),
        right(I, 1, "x"),
        left(I, 1, "a"),
        right(I, 2, "y"),
        right(I, 1, "z"),
        left(I, 2, "b"),
        left(I, 3, "c"),
    ];
    for kind in [JoinKind::Inner, JoinKind::Left, JoinKind::Full] {
        let mut counted = harness(kind, None);
        let mut listed =
            harness_with(RegularJoin::new(kind, None, 2, 2, None).with_append_only([true, true]));
        for r in &input {
            counted.process_element(r.clone());
            listed.process_element(r.clone());
        }
        assert_eq!(out(&mut listed), out(&mut counted), "{kind:?}");
    }
}
