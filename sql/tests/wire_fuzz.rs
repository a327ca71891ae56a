//! Fuzzing of the SQL state's wire forms, which a restore reads from
//! checkpoint files (and an unaligned checkpoint's channel state from the
//! rings): rows, keys, accumulators, row lists, packed rows and DISTINCT
//! values. Whatever the bytes (random, or a valid encoding cut, flipped or
//! spliced), a decoder returns a value or an error, never panics, never
//! claims more bytes than it was given, and what it returns encodes to the
//! bytes it read (or, for DISTINCT values, whose maps sort what they read,
//! and accumulators, which ignore the row kind they are read with, to bytes
//! that decode to the same value).

use proptest::prelude::*;
use weir_runtime::Wire;
use weir_sql::agg::{Acc, WindowAcc};
use weir_sql::distinct::DistinctValues;
use weir_sql::value::{Key, PackedRow, Row, RowKind, RowList, Value};

/// Any value of every SQL type, strings inline and on the heap.
fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::Int),
        any::<i64>().prop_map(Value::BigInt),
        any::<f64>().prop_map(Value::Double),
        any::<i128>().prop_map(Value::decimal),
        "\\PC{0,40}".prop_map(|s| Value::Str(s.into())),
        any::<i64>().prop_map(Value::Timestamp),
        any::<i32>().prop_map(Value::Date),
        any::<i64>().prop_map(Value::Interval),
    ]
}

fn row() -> impl Strategy<Value = Row> {
    (0u8..4, prop::collection::vec(value(), 0..7)).prop_map(|(kind, values)| Row {
        kind: match kind {
            0 => RowKind::Insert,
            1 => RowKind::UpdateBefore,
            2 => RowKind::UpdateAfter,
            _ => RowKind::Delete,
        },
        values: values.into_iter().collect(),
    })
}

fn encode<T: Wire>(v: &T) -> Vec<u8> {
    let mut out = vec![0u8; v.encoded_len()];
    v.write(&mut out);
    out
}

/// Decodes `bytes` as a `T`; on success checks the length it claims and
/// that the value encodes to exactly the bytes it was read from.
fn check_canonical<T: Wire + PartialEq + std::fmt::Debug>(bytes: &[u8]) {
    if let Ok((v, n)) = T::read(bytes) {
        assert!(n <= bytes.len(), "read {n} of {} bytes", bytes.len());
        assert_eq!(v.encoded_len(), n, "{v:?}");
        assert_eq!(encode(&v), bytes[..n], "{v:?} re-encoded");
    }
}

/// Decodes `bytes` as a `T`; on success checks the length it claims and
/// that the value survives its own encoding.
fn check_round_trip<T: Wire + PartialEq + std::fmt::Debug>(bytes: &[u8]) {
    if let Ok((v, n)) = T::read(bytes) {
        assert!(n <= bytes.len(), "read {n} of {} bytes", bytes.len());
        let again = encode(&v);
        assert_eq!(T::read(&again), Ok((v, again.len())));
    }
}

/// Every decoder of the SQL state, on the same bytes.
fn check_all(bytes: &[u8]) {
    check_canonical::<Value>(bytes);
    check_canonical::<Row>(bytes);
    check_canonical::<Key>(bytes);
    // An accumulator is written as an insert row and read from a row of
    // any kind.
    check_round_trip::<Acc>(bytes);
    check_canonical::<PackedRow>(bytes);
    check_round_trip::<RowList>(bytes);
    check_round_trip::<DistinctValues>(bytes);
    check_round_trip::<WindowAcc>(bytes);
}

/// What a damaged encoding looks like: cut, a byte changed, or a run of
/// bytes put in.
#[derive(Clone, Debug)]
enum Damage {
    Cut(usize),
    Set(usize, u8),
    Insert(usize, Vec<u8>),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        any::<usize>().prop_map(Damage::Cut),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Damage::Set(at, b)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..6))
            .prop_map(|(at, bytes)| Damage::Insert(at, bytes)),
    ]
}

fn apply(mut bytes: Vec<u8>, damages: &[Damage]) -> Vec<u8> {
    for d in damages {
        let len = bytes.len();
        match d {
            Damage::Cut(at) => bytes.truncate(at % (len + 1)),
            Damage::Set(at, b) if len > 0 => bytes[at % len] = *b,
            Damage::Set(..) => {}
            Damage::Insert(at, more) => {
                let at = at % (len + 1);
                bytes.splice(at..at, more.iter().copied());
            }
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn random_bytes_decode_or_are_refused(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        check_all(&bytes);
    }

    #[test]
    fn damaged_rows_decode_or_are_refused(
        r in row(),
        damages in prop::collection::vec(damage(), 1..4),
    ) {
        check_all(&apply(encode(&r), &damages));
    }

    #[test]
    fn damaged_row_lists_decode_or_are_refused(
        rows in prop::collection::vec(row(), 0..4),
        damages in prop::collection::vec(damage(), 1..4),
    ) {
        check_all(&apply(encode(&RowList(rows)), &damages));
    }

    #[test]
    fn rows_keys_and_lists_round_trip(rows in prop::collection::vec(row(), 0..4)) {
        for r in &rows {
            let bytes = encode(r);
            prop_assert_eq!(Row::read(&bytes), Ok((r.clone(), bytes.len())));
            let key = Key::of(r.values.iter().cloned());
            let bytes = encode(&key);
            prop_assert_eq!(Key::read(&bytes), Ok((key, bytes.len())));
        }
        let list = RowList(rows);
        let bytes = encode(&list);
        let (back, n) = RowList::read(&bytes).unwrap();
        prop_assert_eq!(n, bytes.len());
        prop_assert_eq!(back, list);
    }
}
