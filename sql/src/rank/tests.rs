//! Top-N and deduplication on the keyed operator harness: the changelog
//! applied gives the top rows a plain sort gives, whatever the arrival
//! order of ties; a snapshot restored (also into two subtasks) continues
//! as an uninterrupted run.

use std::sync::Arc;

use weir_runtime::testing::{HarnessSetup, KeyedOperatorHarness, OperatorSnapshot};
use weir_runtime::Wire;

use super::*;

/// Rows `[key, score, name, row number placeholder]`.
fn row(key: i64, score: i32, name: &str) -> Row {
    Row::of([
        Value::BigInt(key),
        Value::Int(score),
        Value::Str(name.into()),
        Value::BigInt(0),
    ])
}

fn key(r: &Row) -> Key {
    Key::of([r.values[0].clone()])
}

fn rows(n: u64, seed: u64) -> Vec<Row> {
    (0..n)
        .map(|i| {
            let h = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ seed;
            // few scores and names: many ties, some duplicate rows
            row(
                (h % 5) as i64,
                ((h >> 8) % 6) as i32,
                ["ann", "bob", "cy"][((h >> 16) % 3) as usize],
            )
        })
        .collect()
}

/// The rows a changelog leaves, sorted.
fn apply(changes: &[Row]) -> Vec<Row> {
    let mut live: Vec<Row> = Vec::new();
    for r in changes {
        let mut plain = r.clone();
        plain.kind = RowKind::Insert;
        if r.kind.is_accumulate() {
            live.push(plain);
        } else {
            let i = live
                .iter()
                .position(|l| *l == plain)
                .unwrap_or_else(|| panic!("{r:?} retracts a row never emitted"));
            live.remove(i);
        }
    }
    live.sort_by(|a, b| compare(&[], a, b));
    live
}

/// The first `n` rows per key by score DESC, ties by name (the rule:
/// other columns ascending), with their row numbers if `numbered`.
fn reference(input: &[Row], n: usize, numbered: bool) -> Vec<Row> {
    reference_range(input, (1, n), numbered)
}

/// The rows numbered `start..=n` per key, as [`reference`].
fn reference_range(input: &[Row], (start, n): (usize, usize), numbered: bool) -> Vec<Row> {
    let mut out = Vec::new();
    for k in 0..5 {
        let mut mine: Vec<&Row> = input
            .iter()
            .filter(|r| r.values[0] == Value::BigInt(k))
            .collect();
        mine.sort_by(|a, b| {
            let score = |r: &Row| r.values[1].as_i64().unwrap();
            let name = |r: &Row| match &r.values[2] {
                Value::Str(s) => s.to_string(),
                _ => unreachable!(),
            };
            score(b).cmp(&score(a)).then(name(a).cmp(&name(b)))
        });
        for (i, r) in mine.into_iter().enumerate().take(n).skip(start - 1) {
            let mut r = r.clone();
            if numbered {
                r.values[3] = Value::BigInt(i as i64 + 1);
            }
            out.push(r);
        }
    }
    out.sort_by(|a, b| compare(&[], a, b));
    out
}

fn order() -> Arc<[SortKey]> {
    Arc::from(vec![SortKey {
        col: 1,
        desc: true,
        nulls_first: false,
    }])
}

fn top_n(row_number: Option<usize>) -> KeyedOperatorHarness<AppendTopN, fn(&Row) -> Key> {
    KeyedOperatorHarness::new(
        |_| AppendTopN::new(order(), 3, row_number),
        key as fn(&Row) -> Key,
    )
    .unwrap()
}

#[test]
fn top_3_per_key_equals_a_sort_whatever_the_arrival_order() {
    let input = rows(300, 7);
    for numbered in [false, true] {
        let col = numbered.then_some(3);
        let want = reference(&input, 3, numbered);
        for permutation in 0..4u64 {
            let mut shuffled = input.clone();
            // a deterministic shuffle per permutation
            shuffled.sort_by_key(|r| {
                let mut buf = vec![0u8; r.encoded_len()];
                r.write(&mut buf);
                buf.iter().fold(permutation, |h, &b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                })
            });
            let mut h = top_n(col);
            h.process_elements(shuffled);
            assert_eq!(
                apply(&h.take_output()),
                want,
                "numbered {numbered}, permutation {permutation}"
            );
        }
    }
}

#[test]
fn without_row_numbers_a_row_entering_pushes_one_out() {
    let mut h = top_n(None);
    h.process_elements([row(1, 5, "a"), row(1, 7, "b"), row(1, 6, "c")]);
    assert_eq!(h.take_output().len(), 3, "three +I");
    h.process_element(row(1, 1, "d"));
    assert!(h.take_output().is_empty(), "not in the top 3: nothing");
    h.process_element(row(1, 9, "e"));
    let out = h.take_output();
    assert_eq!(out.len(), 2);
    assert_eq!(
        (out[0].kind, &out[0].values[2]),
        (RowKind::Delete, &Value::Str("a".into()))
    );
    assert_eq!(
        (out[1].kind, &out[1].values[2]),
        (RowKind::Insert, &Value::Str("e".into()))
    );
}

#[test]
fn with_row_numbers_every_rank_below_the_new_row_is_updated() {
    let mut h = top_n(Some(3));
    h.process_elements([row(1, 5, "a"), row(1, 3, "b")]);
    h.take_output();
    h.process_element(row(1, 9, "c"));
    let got: Vec<(RowKind, String, i64)> = h
        .take_output()
        .iter()
        .map(|r| {
            (
                r.kind,
                r.values[2].display(crate::types::DataType::String),
                r.values[3].as_i64().unwrap(),
            )
        })
        .collect();
    use RowKind::*;
    assert_eq!(
        got,
        [
            (UpdateBefore, "a".into(), 1),
            (UpdateAfter, "c".into(), 1),
            (UpdateBefore, "b".into(), 2),
            (UpdateAfter, "a".into(), 2),
            (Insert, "b".into(), 3),
        ]
    );
}

fn split_run(input: &[Row], at: usize, numbered: bool) -> (Vec<Row>, OperatorSnapshot) {
    let mut h = top_n(numbered.then_some(3));
    h.process_elements(input[..at].iter().cloned());
    let snapshot = h.snapshot().unwrap();
    (h.take_output(), snapshot)
}

#[test]
fn a_restored_top_n_continues_as_an_uninterrupted_run_also_rescaled() {
    let input = rows(400, 11);
    for numbered in [false, true] {
        let want = reference(&input, 3, numbered);
        let (mut changes, snapshot) = split_run(&input, 150, numbered);
        // restored at parallelism 1
        let mut h = KeyedOperatorHarness::restore(
            |_| AppendTopN::new(order(), 3, numbered.then_some(3)),
            key as fn(&Row) -> Key,
            &snapshot,
        )
        .unwrap();
        h.process_elements(input[150..].iter().cloned());
        let mut one = changes.clone();
        one.extend(h.take_output());
        assert_eq!(apply(&one), want, "restored, numbered {numbered}");
        // and into two subtasks, each taking its keys
        for i in 0..2 {
            let mut h = KeyedOperatorHarness::with_setup(
                HarnessSetup::new().subtask(i, 2).restore(&snapshot),
                |_| AppendTopN::new(order(), 3, numbered.then_some(3)),
                key as fn(&Row) -> Key,
            )
            .unwrap();
            let mine: Vec<Row> = input[150..]
                .iter()
                .filter(|r| h.owns_key(&key(r)))
                .cloned()
                .collect();
            h.process_elements(mine);
            changes.extend(h.take_output());
        }
        assert_eq!(apply(&changes), want, "rescaled, numbered {numbered}");
    }
}

#[test]
fn deduplication_keeps_the_first_or_the_last_row_per_key() {
    // [key, time, payload]
    let r = |k: i64, t: i64, p: &str| {
        Row::of([Value::BigInt(k), Value::Timestamp(t), Value::Str(p.into())])
    };
    let input = [
        r(1, 10, "a"),
        r(2, 11, "d"),
        r(1, 12, "c"),
        r(1, 9, "earlier"),
        r(2, 11, "b"),
    ];
    let mut first =
        KeyedOperatorHarness::new(|_| Deduplicate::new(1, false, None), key as fn(&Row) -> Key)
            .unwrap();
    first.process_elements(input.iter().cloned());
    assert!(
        first.take_output().is_empty(),
        "the first rows wait for the watermark"
    );
    first.process_watermark(10);
    assert_eq!(first.take_output(), [r(1, 9, "earlier")]);
    first.process_element(r(3, 4, "late first"));
    assert_eq!(
        first.take_output(),
        [r(3, 4, "late first")],
        "a key's first row behind the watermark goes out at once"
    );
    // a snapshot keeps what is pending and what went out
    let snapshot = first.snapshot().unwrap();
    let mut first = KeyedOperatorHarness::restore(
        |_| Deduplicate::new(1, false, None),
        key as fn(&Row) -> Key,
        &snapshot,
    )
    .unwrap();
    first.process_elements([r(1, 5, "after"), r(3, 1, "after")]);
    first.end_input();
    // equal times: the smaller row is the first
    assert_eq!(first.take_output(), [r(2, 11, "b")]);

    let mut last =
        KeyedOperatorHarness::new(|_| Deduplicate::new(1, true, None), key as fn(&Row) -> Key)
            .unwrap();
    last.process_elements(input.iter().cloned());
    let out = last.take_output();
    // equal times: the larger row is the last
    assert_eq!(apply(&out), apply(&[r(1, 12, "c"), r(2, 11, "d")]));
    assert_eq!(out.len(), 4, "+I a, +I d, -U a, +U c: {out:?}");
}

/// On processing time the order is arrival, whatever the time column
/// holds (rows of one millisecond are common): the first row goes out at
/// once, as an insert, and the key's later rows are dropped; keeping the
/// last, each row replaces the kept one. Before, both were a Top-1 by the
/// column's value with ties by the other columns, so the last row of a
/// millisecond was often the first.
#[test]
fn deduplication_on_processing_time_keeps_the_first_or_last_to_arrive() {
    // [key, processing time, payload]
    let r = |k: i64, t: i64, p: &str| {
        Row::of([Value::BigInt(k), Value::Timestamp(t), Value::Str(p.into())])
    };
    let input = [
        r(1, 7, "z"),
        r(2, 7, "d"),
        r(1, 7, "a"),
        r(1, 8, "b"),
        r(2, 8, "c"),
    ];
    let mut first = KeyedOperatorHarness::new(
        |_| Deduplicate::on_arrival(false, None),
        key as fn(&Row) -> Key,
    )
    .unwrap();
    first.process_elements(input[..2].iter().cloned());
    assert_eq!(first.take_output(), [r(1, 7, "z"), r(2, 7, "d")]);
    let snapshot = first.snapshot().unwrap();
    let mut first = KeyedOperatorHarness::restore(
        |_| Deduplicate::on_arrival(false, None),
        key as fn(&Row) -> Key,
        &snapshot,
    )
    .unwrap();
    first.process_elements(input[2..].iter().cloned());
    first.end_input();
    assert!(first.take_output().is_empty(), "later rows are dropped");

    let mut last = KeyedOperatorHarness::new(
        |_| Deduplicate::on_arrival(true, None),
        key as fn(&Row) -> Key,
    )
    .unwrap();
    last.process_elements(input.iter().cloned());
    let out = last.take_output();
    assert_eq!(apply(&out), apply(&[r(1, 8, "b"), r(2, 8, "c")]));
    assert_eq!(
        out.len(),
        8,
        "+I z, +I d, -U z, +U a, -U a, +U b, -U d, +U c"
    );
    assert_eq!(out[3], {
        let mut a = r(1, 7, "a");
        a.kind = RowKind::UpdateAfter;
        a
    });
}

/// A row without a time is neither a key's first nor its last: it is
/// dropped. (Keeping the first row, its time read as the smallest went
/// out at once and the key's real first row was dropped.)
#[test]
fn deduplication_drops_a_row_without_a_time() {
    let r = |k: i64, t: Option<i64>, p: &str| {
        Row::of([
            Value::BigInt(k),
            t.map_or(Value::Null, Value::Timestamp),
            Value::Str(p.into()),
        ])
    };
    let input = [
        r(1, None, "no time"),
        r(1, Some(10), "a"),
        r(2, None, "none"),
    ];
    for keep_last in [false, true] {
        let mut h = KeyedOperatorHarness::new(
            move |_| Deduplicate::new(1, keep_last, None),
            key as fn(&Row) -> Key,
        )
        .unwrap();
        h.process_elements(input.iter().cloned());
        h.end_input();
        assert_eq!(
            h.take_output(),
            [r(1, Some(10), "a")],
            "keep_last {keep_last}"
        );
    }
}

/// Top-N over an updating input: inserts and, now and then, retractions
/// of live rows; the changelog applied is the top 3 of the rows left
/// (a retracted top row lets the next one up), with and without row
/// numbers, and each emitted retraction retracts a row emitted before.
#[test]
fn retracting_top_3_per_key_equals_a_sort_of_the_rows_left() {
    let input = rows(400, 11);
    let mut changes = Vec::new();
    let mut live: Vec<Row> = Vec::new();
    for (i, r) in input.into_iter().enumerate() {
        if i % 3 == 2 && !live.is_empty() {
            let mut gone = live.remove((i * 7) % live.len());
            gone.kind = if i % 2 == 0 {
                RowKind::Delete
            } else {
                RowKind::UpdateBefore
            };
            changes.push(gone);
        }
        live.push(r.clone());
        changes.push(r);
    }
    // A retraction of a row never inserted is ignored.
    let mut stray = row(2, 99, "zed");
    stray.kind = RowKind::Delete;
    changes.push(stray);
    for numbered in [false, true] {
        let col = numbered.then_some(3);
        let mut h = KeyedOperatorHarness::new(
            move |_| RetractTopN::new(order(), (1, 3), true, col),
            key as fn(&Row) -> Key,
        )
        .unwrap();
        h.process_elements(changes.iter().cloned());
        assert_eq!(
            apply(&h.take_output()),
            reference(&live, 3, numbered),
            "numbered {numbered}"
        );
    }
}

/// Rows from a later row number than the first (`rn BETWEEN 2 AND 4`,
/// OFFSET): the changelog applied is that range of a sort, over an
/// append-only input (rows past N dropped) and an updating one.
#[test]
fn a_range_from_a_later_row_equals_that_range_of_a_sort() {
    let input = rows(300, 5);
    for numbered in [false, true] {
        let col = numbered.then_some(3);
        let mut h = KeyedOperatorHarness::new(
            move |_| RetractTopN::new(order(), (2, 4), false, col),
            key as fn(&Row) -> Key,
        )
        .unwrap();
        h.process_elements(input.iter().cloned());
        assert_eq!(
            apply(&h.take_output()),
            reference_range(&input, (2, 4), numbered),
            "numbered {numbered}"
        );
    }
}

/// The rows ranked `start..=n` per key by score DESC as `ties` ranks them
/// (peers: equal scores), with their ranks if `numbered`.
fn reference_ranked(
    input: &[Row],
    (start, n): (usize, usize),
    ties: Ties,
    numbered: bool,
) -> Vec<Row> {
    let score = |r: &Row| r.values[1].as_i64().unwrap();
    let mut out = Vec::new();
    for k in 0..5 {
        let mine: Vec<&Row> = input
            .iter()
            .filter(|r| r.values[0] == Value::BigInt(k))
            .collect();
        for r in &mine {
            let better: Vec<i64> = mine
                .iter()
                .map(|o| score(o))
                .filter(|&s| s > score(r))
                .collect();
            let rank = match ties {
                Ties::Rank => better.len() + 1,
                Ties::Dense => {
                    let mut distinct = better.clone();
                    distinct.sort_unstable();
                    distinct.dedup();
                    distinct.len() + 1
                }
            };
            if (start..=n).contains(&rank) {
                let mut r = (*r).clone();
                if numbered {
                    r.values[3] = Value::BigInt(rank as i64);
                }
                out.push(r);
            }
        }
    }
    out.sort_by(|a, b| compare(&[], a, b));
    out
}

/// RANK and DENSE_RANK Top-N: peers share a rank (so more than N rows
/// may be kept), over an append-only input (rows ranked past N dropped)
/// and over an updating one (retracted rows let others move up); the
/// changelog applied is the range of ranks a sort gives, with and without
/// the rank in the rows.
#[test]
fn rank_and_dense_rank_keep_the_rows_of_a_range_of_ranks() {
    let input = rows(300, 5);
    let mut changes = Vec::new();
    let mut live: Vec<Row> = Vec::new();
    for (i, r) in input.iter().enumerate() {
        if i % 4 == 3 && !live.is_empty() {
            let mut gone = live.remove((i * 7) % live.len());
            gone.kind = RowKind::Delete;
            changes.push(gone);
        }
        live.push(r.clone());
        changes.push(r.clone());
    }
    for ties in [Ties::Rank, Ties::Dense] {
        for range in [(1, 1), (1, 3), (2, 4)] {
            for numbered in [false, true] {
                let col = numbered.then_some(3);
                let what = format!("{ties:?} {range:?} numbered {numbered}");
                let mut h = KeyedOperatorHarness::new(
                    move |_| RetractTopN::ranked(order(), range, ties, false, col),
                    key as fn(&Row) -> Key,
                )
                .unwrap();
                h.process_elements(input.iter().cloned());
                assert_eq!(
                    apply(&h.take_output()),
                    reference_ranked(&input, range, ties, numbered),
                    "append-only, {what}"
                );
                let mut h = KeyedOperatorHarness::new(
                    move |_| RetractTopN::ranked(order(), range, ties, true, col),
                    key as fn(&Row) -> Key,
                )
                .unwrap();
                h.process_elements(changes.iter().cloned());
                assert_eq!(
                    apply(&h.take_output()),
                    reference_ranked(&live, range, ties, numbered),
                    "updating, {what}"
                );
            }
        }
    }
}

#[test]
fn rank_gives_peers_one_rank_and_skips_after_them() {
    let mut h = KeyedOperatorHarness::new(
        |_| RetractTopN::ranked(order(), (1, 2), Ties::Rank, false, Some(3)),
        key as fn(&Row) -> Key,
    )
    .unwrap();
    h.process_elements([row(1, 5, "a"), row(1, 5, "b"), row(1, 3, "c")]);
    let ranked = |out: &[Row]| -> Vec<(String, i64)> {
        apply(out)
            .iter()
            .map(|r| {
                (
                    r.values[2].display(crate::types::DataType::String),
                    r.values[3].as_i64().unwrap(),
                )
            })
            .collect()
    };
    let mut out = h.take_output();
    assert_eq!(ranked(&out), [("a".into(), 1), ("b".into(), 1)], "c is 3rd");
    h.process_element(row(1, 9, "d"));
    out.extend(h.take_output());
    assert_eq!(
        ranked(&out),
        [("a".into(), 2), ("b".into(), 2), ("d".into(), 1)]
    );
}

/// A mini-batch emits the change of a batch, not each change: an
/// aggregate's `-U`/`+U` per row become one `-D`/`+I` when the
/// processing-time timer fires, changes that cancel out emit nothing, and
/// the end of the input flushes what waits. A snapshot keeps what waits.
#[test]
fn a_mini_batch_emits_the_change_of_each_batch() {
    let h = |snapshot: Option<&OperatorSnapshot>| {
        let setup = match snapshot {
            Some(s) => HarnessSetup::new().restore(s),
            None => HarnessSetup::new(),
        };
        let mut h = KeyedOperatorHarness::with_setup(
            setup,
            |_| MiniBatch::new(100),
            (|_: &Row| Key::of([])) as fn(&Row) -> Key,
        )
        .unwrap();
        h.set_processing_time(1_000);
        h
    };
    let change = |kind: RowKind, v: i32| {
        let mut r = row(1, v, "avg");
        r.kind = kind;
        r
    };
    let mut mb = h(None);
    mb.process_element(change(RowKind::Insert, 1));
    for v in 1..50 {
        mb.process_element(change(RowKind::UpdateBefore, v));
        mb.process_element(change(RowKind::UpdateAfter, v + 1));
    }
    assert!(mb.take_output().is_empty(), "held until the timer");
    mb.set_processing_time(1_100);
    assert_eq!(mb.take_output(), [change(RowKind::Insert, 50)]);
    // Changes that come back to the emitted row: nothing.
    mb.process_element(change(RowKind::UpdateBefore, 50));
    mb.process_element(change(RowKind::UpdateAfter, 7));
    mb.process_element(change(RowKind::UpdateBefore, 7));
    mb.process_element(change(RowKind::UpdateAfter, 50));
    mb.set_processing_time(1_300);
    assert!(mb.take_output().is_empty());
    // A change waits in the snapshot; the end of the input flushes it.
    mb.process_element(change(RowKind::UpdateBefore, 50));
    mb.process_element(change(RowKind::UpdateAfter, 51));
    let snapshot = mb.snapshot().unwrap();
    let mut restored = h(Some(&snapshot));
    restored.end_input();
    assert_eq!(
        restored.take_output(),
        [change(RowKind::Delete, 50), change(RowKind::Insert, 51)]
    );
}
