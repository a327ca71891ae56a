//! The collecting sink's slots across a restart in the process, a restore
//! in a new one and a rescale, and the changelog of several slots applied
//! in any order.

use weir_runtime::{Sink, SubtaskInfo};

use super::Collected;
use crate::plan::Presentation;
use crate::session::format_table;
use crate::types::{DataType, Field, Schema};
use crate::value::{Row, RowKind, Value};

fn row(n: i64) -> Row {
    Row::new([Value::BigInt(n)].into_iter().collect())
}

fn info(index: usize, parallelism: usize) -> SubtaskInfo {
    SubtaskInfo {
        index,
        parallelism,
        worker: index,
        max_parallelism: 128,
    }
}

fn numbers(rows: &[Row]) -> Vec<i64> {
    let mut n: Vec<i64> = rows
        .iter()
        .map(|r| r.values[0].as_i64().expect("a number"))
        .collect();
    n.sort_unstable();
    n
}

/// A restart in the process restores the checkpoint into the same
/// collection: the rows the failed attempt took after it are replaced,
/// not kept beside the replay's.
#[test]
fn a_restart_replaces_the_rows_taken_after_the_checkpoint() {
    let out = Collected::new();
    let mut sink = out.sink(&info(0, 1));
    sink.initialize_state(None).unwrap();
    sink.invoke(row(1));
    sink.invoke(row(2));
    let state = sink.snapshot_state(1).unwrap();
    sink.invoke(row(3));
    // the attempt fails; the next restores checkpoint 1 and replays row 3
    let mut again = out.sink(&info(0, 1));
    again.initialize_state(Some((1, &state))).unwrap();
    again.invoke(row(3));
    assert_eq!(numbers(&out.rows()), [1, 2, 3]);
}

/// A restore in a new process starts from an empty collection: the rows
/// taken before the checkpoint come back from it.
#[test]
fn a_restore_brings_back_the_rows_taken_before_the_checkpoint() {
    let first = Collected::new();
    let mut sink = first.sink(&info(1, 2));
    sink.initialize_state(None).unwrap();
    sink.invoke(row(7));
    let state = sink.snapshot_state(4).unwrap();
    let second = Collected::new();
    let mut sink = second.sink(&info(1, 2));
    sink.initialize_state(Some((4, &state))).unwrap();
    sink.invoke(row(8));
    assert_eq!(numbers(&second.rows()), [7, 8]);
    // an empty state (a collecting sink of older weir kept none) is no rows
    let third = Collected::new();
    third
        .sink(&info(0, 1))
        .initialize_state(Some((4, &[])))
        .unwrap();
    assert!(third.rows().is_empty());
}

/// At another parallelism every old subtask's rows go to exactly one new
/// subtask.
#[test]
fn a_rescale_hands_every_old_subtasks_rows_to_one_new_subtask() {
    let old = Collected::new();
    let mut states = Vec::new();
    for i in 0..3 {
        let mut sink = old.sink(&info(i, 3));
        sink.initialize_state(None).unwrap();
        for n in 0..=i as i64 {
            sink.invoke(row(10 * i as i64 + n));
        }
        states.push(sink.snapshot_state(2).unwrap());
    }
    let states: Vec<&[u8]> = states.iter().map(Vec::as_slice).collect();
    for parallelism in [1, 2, 5] {
        let new = Collected::new();
        for i in 0..parallelism {
            let mut sink = new.sink(&info(i, parallelism));
            sink.initialize_rescaled_state(2, &states)
                .expect("the sink rescales")
                .unwrap();
        }
        assert_eq!(
            numbers(&new.rows()),
            [0, 10, 11, 20, 21, 22],
            "at parallelism {parallelism}"
        );
    }
    // a state that does not decode fails, and no restart cures it
    let sink = Collected::new().sink(&info(0, 1));
    let mut sink = sink;
    let error = sink.initialize_state(Some((2, &[1, 2]))).unwrap_err();
    assert!(error.contains("bare SELECT"), "{error}");
    assert!(!sink.is_retryable(&error));
}

/// After a rescale a key's update may be in another slot than the row it
/// retracts, and come first: the table is the multiset the changelog
/// leaves whatever the order.
#[test]
fn a_retraction_before_its_row_still_takes_it_out() {
    let schema = Schema::new(vec![Field::new("n", DataType::BigInt)]);
    let kind = |kind, n| Row { kind, ..row(n) };
    let rows = [
        kind(RowKind::UpdateBefore, 1),
        kind(RowKind::UpdateAfter, 2),
        kind(RowKind::Insert, 5),
        kind(RowKind::Insert, 1),
        kind(RowKind::Delete, 5),
    ];
    let table = format_table(&schema, &rows, &Presentation::default());
    let body: Vec<&str> = table.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(body, ["| n |", "| 2 |"], "{table}");
}
