//! The SQL interval join on the keyed operator harness: pairs in bounds,
//! late rows joined with what the other side still keeps (as Flink's SQL
//! join does, for an inner join too), rows that cannot match, padding.

use std::sync::Arc;

use weir_runtime::exchange::CoInput;
use weir_runtime::operators::two_input::CoProcessAdapter;
use weir_runtime::testing::KeyedOperatorHarness;

use super::*;

type In = CoInput<Row, Row>;
type Harness = KeyedOperatorHarness<CoProcessAdapter<IntervalJoin>, fn(&In) -> Key>;

/// Rows `[key, time (ms), id]` on both sides.
fn row(key: Option<i64>, ts: i64, id: &str) -> Row {
    Row::of([
        key.map_or(Value::Null, Value::BigInt),
        Value::Timestamp(ts),
        Value::Str(id.into()),
    ])
}

fn key_of(r: &In) -> Key {
    let (CoInput::First(r) | CoInput::Second(r)) = r;
    Key::of([r.values[0].clone()])
}

fn joinable() -> Joinable {
    Arc::new(|r: &Row| !r.values[0].is_null() && !r.values[1].is_null())
}

/// The `kind` join of `right.ts - left.ts` in `[lower, upper]` ms.
fn join(kind: JoinKind, lower: i64, upper: i64) -> Harness {
    let bounds = TimeBounds {
        left_time: 1,
        right_time: 1,
        lower,
        upper,
    };
    KeyedOperatorHarness::new(
        |_| {
            CoProcessAdapter(IntervalJoin::new(
                bounds,
                kind,
                None,
                (3, 3),
                joinable(),
                joinable(),
            ))
        },
        key_of as fn(&In) -> Key,
    )
    .unwrap()
}

/// Each output row as `left id|right id`, NULL ids as `-`, sorted.
fn pairs(h: &mut Harness) -> Vec<String> {
    let id = |v: &Value| match v {
        Value::Str(s) => s.to_string(),
        Value::Null => "-".into(),
        other => panic!("an id column holds {other:?}"),
    };
    let mut out: Vec<String> = h
        .take_output()
        .iter()
        .map(|r| {
            assert_eq!(r.kind, RowKind::Insert, "append-only");
            assert_eq!(r.values.len(), 6);
            format!("{}|{}", id(&r.values[2]), id(&r.values[5]))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_pair_in_bounds_whatever_side_comes_first() {
    let mut h = join(JoinKind::Inner, -2_000, 1_000);
    h.process_element(CoInput::First(row(Some(1), 10_000, "a10")));
    h.process_element(CoInput::Second(row(Some(1), 8_000, "b8")));
    h.process_element(CoInput::Second(row(Some(1), 11_000, "b11")));
    h.process_element(CoInput::Second(row(Some(1), 11_001, "b11+")));
    h.process_element(CoInput::Second(row(Some(2), 10_000, "other key")));
    h.process_element(CoInput::First(row(Some(1), 9_000, "a9")));
    assert_eq!(pairs(&mut h), ["a10|b11", "a10|b8", "a9|b8"]);
}

/// Flink's `RowTimeIntervalJoin` joins a row that arrives behind the
/// watermark with the other side's rows still kept, and does not keep it
/// (weir's INNER join once dropped it: fewer pairs than the LEFT join of
/// the same rows).
#[test]
fn a_late_row_joins_what_the_other_side_still_keeps_inner_or_left() {
    for kind in [JoinKind::Inner, JoinKind::Left] {
        // right within [left - 1 s, left + 60 s]: a right row is kept until
        // the watermark passes its time + 1 s, a left row its time + 60 s.
        let mut h = join(kind, -1_000, 60_000);
        h.process_element(CoInput::Second(row(Some(1), 99_500, "b99.5")));
        h.process_watermark(100_000);
        // Late: its cleanup time (40 s + 60 s) is not after the watermark.
        h.process_element(CoInput::First(row(Some(1), 40_000, "a40")));
        assert_eq!(pairs(&mut h), ["a40|b99.5"], "{kind}");
        // Not kept: a right row in its bounds that comes later finds it
        // gone (b99.5 is cleaned up by the watermark first).
        h.process_watermark(100_600);
        h.process_element(CoInput::Second(row(Some(1), 100_200, "b100.2")));
        h.process_element(CoInput::First(row(Some(1), 41_000, "a41")));
        assert_eq!(pairs(&mut h), ["a41|b100.2"], "{kind}");
        // A late left row without a match: padded at once by a LEFT join,
        // dropped by an INNER one.
        h.process_element(CoInput::First(row(Some(1), 1_000, "a1")));
        let want: &[&str] = if kind == JoinKind::Left {
            &["a1|-"]
        } else {
            &[]
        };
        assert_eq!(pairs(&mut h), want, "{kind}");
        h.end_input();
        // b99.5 and b100.2 had their pairs; a right row is never padded
        // by a LEFT join.
        assert_eq!(pairs(&mut h), Vec::<String>::new(), "{kind}");
    }
}

#[test]
fn rows_without_a_key_or_time_match_nothing_and_an_outer_side_pads_them() {
    for kind in [JoinKind::Inner, JoinKind::Right] {
        let mut h = join(kind, -1_000, 1_000);
        h.process_element(CoInput::First(row(None, 5_000, "a-null")));
        h.process_element(CoInput::Second(row(None, 5_000, "b-null")));
        let mut no_time = row(Some(1), 0, "b-no-time");
        no_time.values[1] = Value::Null;
        h.process_element(CoInput::Second(no_time));
        h.process_element(CoInput::First(row(Some(1), 5_000, "a5")));
        h.process_element(CoInput::Second(row(Some(1), 5_500, "b5.5")));
        h.end_input();
        let want: &[&str] = if kind == JoinKind::Right {
            &["-|b-no-time", "-|b-null", "a5|b5.5"]
        } else {
            &["a5|b5.5"]
        };
        assert_eq!(pairs(&mut h), want, "{kind}");
    }
}
