//! The compiled row maker makes exactly the reference's rows.

use super::RowGen;
use crate::connectors::{Datagen, FieldGen};
use crate::types::DataType;

const TYPES: [DataType; 11] = [
    DataType::Boolean,
    DataType::Int,
    DataType::BigInt,
    DataType::Double,
    DataType::Float,
    DataType::Decimal {
        precision: 10,
        scale: 2,
    },
    DataType::String,
    DataType::Timestamp,
    DataType::TimestampLtz,
    DataType::Date,
    DataType::Interval,
];

fn random(min: i64, max: i64, null_rate: f64) -> FieldGen {
    FieldGen::Random {
        min,
        max,
        real: (-2.5, 7.25),
        unscaled: (-12_345, 99_999),
        length: 5,
        null_rate,
    }
}

/// Generators of every kind the connector makes: sequences, random
/// numbers over small, negative and whole ranges, with and without NULLs.
fn generators() -> Vec<FieldGen> {
    vec![
        FieldGen::Sequence { start: 0, end: 99 },
        FieldGen::Sequence {
            start: -7,
            end: 1_000,
        },
        FieldGen::Sequence {
            start: i64::MAX - 3,
            end: i64::MAX,
        },
        random(0, 99_999, 0.0),
        random(-50, 50, 0.0),
        random(5, 5, 0.0),
        random(i64::MIN, i64::MAX, 0.0),
        random(i64::MIN, -1, 0.0),
        random(i64::from(i32::MIN), i64::from(i32::MAX), 0.0),
        random(-3_600_000, 0, 0.0),
        random(0, 1_000, 0.3),
        random(0, 9, f64::NAN),
        random(i64::MIN, i64::MAX, 1.0),
    ]
}

fn rows_agree(gen: &Datagen, types: &[DataType]) {
    let base_ms = 1_700_000_000_123;
    let compiled = RowGen::new(gen, types, base_ms);
    for i in (0..300).chain([1 << 20, u64::from(u32::MAX) + 7, u64::MAX - 1]) {
        assert_eq!(
            compiled.row(i),
            gen.row(i, types, base_ms),
            "row {i} of {:?} as {types:?}",
            gen.fields
        );
    }
}

#[test]
fn every_type_and_kind_makes_the_reference_rows() {
    for ty in TYPES {
        for g in generators() {
            let gen = Datagen {
                rows: None,
                rows_per_second: 0,
                fields: vec![g],
                read: None,
            };
            rows_agree(&gen, &[ty]);
        }
    }
}

#[test]
fn rows_of_several_columns_inline_or_not_with_unread_ones_are_the_reference_rows() {
    let all = generators();
    for width in [2, 3, 4, 5, 7] {
        for shift in 0..all.len() {
            let fields: Vec<FieldGen> = (0..width)
                .map(|c| all[(shift + c) % all.len()].clone())
                .collect();
            let types: Vec<DataType> = (0..width)
                .map(|c| TYPES[(shift * 3 + c) % TYPES.len()])
                .collect();
            let mut gen = Datagen {
                rows: None,
                rows_per_second: 0,
                fields,
                read: None,
            };
            rows_agree(&gen, &types);
            gen.read = Some((0..width).map(|c| (c + shift) % 3 != 0).collect());
            rows_agree(&gen, &types);
        }
    }
}

/// W1 in SQL's source: a random key and a sequence, both BIGINT.
#[test]
fn w1s_columns_take_their_own_steps() {
    let gen = Datagen {
        rows: Some(1000),
        rows_per_second: 0,
        fields: vec![
            random(0, 99_999, 0.0),
            FieldGen::Sequence {
                start: 0,
                end: 19_999_999,
            },
        ],
        read: None,
    };
    let types = [DataType::BigInt, DataType::BigInt];
    let compiled = RowGen::new(&gen, &types, 0);
    assert!(matches!(
        &compiled.columns[..],
        [
            super::Column::RandomInteger { .. },
            super::Column::SequenceBigInt { .. }
        ]
    ));
    rows_agree(&gen, &types);
}

/// A sequence over the whole BIGINT range has 2^64 values: its count is
/// held at `u64::MAX` (it panicked subtracting the bounds).
#[test]
fn a_sequence_of_the_whole_bigint_range_counts_without_overflow() {
    let gen = Datagen {
        rows: Some(3),
        rows_per_second: 0,
        fields: vec![FieldGen::Sequence {
            start: i64::MIN,
            end: i64::MAX,
        }],
        read: None,
    };
    assert_eq!(gen.count(), Some(3));
    let unbounded = Datagen { rows: None, ..gen };
    assert_eq!(unbounded.count(), Some(u64::MAX));
}
