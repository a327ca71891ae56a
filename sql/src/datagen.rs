//! A `datagen` table's rows as its source makes them: each column's
//! generator picked once, when the source is built, from the column's
//! kind, type and options, rather than matched on them for every value
//! ([`Datagen::row`] is the reference, and the rows are the same: the
//! tests compare them over every type and kind).
//!
//! The common columns (a BIGINT or INT sequence, random integers without
//! NULLs) have a step of their own; any other column asks
//! [`FieldGen::value`], as the reference does.

use crate::connectors::{splitmix64, Datagen, FieldGen};
use crate::types::DataType;
use crate::value::{Row, Value, Values};

/// A datagen table's row maker (see the module documentation).
#[derive(Clone, Debug)]
pub struct RowGen {
    columns: Box<[Column]>,
}

/// One column's generator.
#[derive(Clone, Debug)]
enum Column {
    /// A column the job does not read ([`Datagen::read`]).
    Null,
    /// `start + i` as a BIGINT (saturating).
    SequenceBigInt { start: i64 },
    /// A random BIGINT or INT of `min..=max`, never NULL.
    RandomInteger {
        /// The seed's column term (`c * 0x1234_5677`).
        salt: u64,
        min: i64,
        /// `max - min + 1`, or 0 for the whole `i64` range.
        span: u64,
        /// An INT (else a BIGINT).
        int: bool,
    },
    /// Anything else: the reference's own code.
    Other {
        gen: FieldGen,
        column: usize,
        ty: DataType,
        base_ms: i64,
    },
}

impl RowGen {
    /// The rows of `gen` (columns of `types`; random times before
    /// `base_ms`).
    pub fn new(gen: &Datagen, types: &[DataType], base_ms: i64) -> Self {
        let columns = gen
            .fields
            .iter()
            .zip(types)
            .enumerate()
            .map(|(c, (g, &ty))| {
                if gen.read.as_ref().is_some_and(|r| !r[c]) {
                    return Column::Null;
                }
                match (g, ty) {
                    (FieldGen::Sequence { start, .. }, DataType::BigInt) => {
                        Column::SequenceBigInt { start: *start }
                    }
                    (
                        FieldGen::Random {
                            min,
                            max,
                            null_rate,
                            ..
                        },
                        DataType::BigInt | DataType::Int,
                        // (the reference draws NULLs only at a rate above
                        // 0: not at a NaN one either)
                    ) if *null_rate <= 0.0 || null_rate.is_nan() => Column::RandomInteger {
                        salt: c as u64 * 0x1234_5677,
                        min: *min,
                        // (0 when the span is 2^64: the whole range)
                        span: (*max as i128 - *min as i128 + 1) as u64,
                        int: ty == DataType::Int,
                    },
                    _ => Column::Other {
                        gen: g.clone(),
                        column: c,
                        ty,
                        base_ms,
                    },
                }
            })
            .collect();
        Self { columns }
    }

    /// Row `i`: each column's value written straight into the row (the
    /// inline buffer for up to four columns).
    #[inline]
    pub fn row(&self, i: u64) -> Row {
        let mut values = Values::with_capacity(self.columns.len());
        for col in &self.columns {
            col.push(i, &mut values);
        }
        Row::new(values)
    }
}

impl Column {
    /// Pushes row `i`'s value, each type made in the push itself: a value
    /// returned first is made on the stack in pieces (payload, tag byte)
    /// and copied into the row by whole words, which wait for those
    /// stores (perf: most of datagen's time).
    #[inline(always)]
    fn push(&self, i: u64, values: &mut Values) {
        match *self {
            Column::SequenceBigInt { start } => {
                values.push(Value::BigInt(start.saturating_add(i as i64)))
            }
            Column::RandomInteger {
                salt,
                min,
                span,
                int,
            } => {
                let n = random_integer(salt, min, span, i);
                if int {
                    values.push(Value::Int(n as i32))
                } else {
                    values.push(Value::BigInt(n))
                }
            }
            Column::Null => values.push(Value::Null),
            Column::Other {
                ref gen,
                column,
                ty,
                base_ms,
            } => values.push(gen.value(column, i, ty, base_ms)),
        }
    }
}

/// A `RandomInteger` column's value of row `i`.
#[inline(always)]
fn random_integer(salt: u64, min: i64, span: u64, i: u64) -> i64 {
    // As `FieldGen::value`: the seed's hash, hashed again.
    let h = splitmix64(splitmix64(i.wrapping_mul(0x9E37_79B9).wrapping_add(salt)));
    let offset = if span == 0 { h } else { h % span };
    // (`min + offset` in 128 bits cut to 64 is this sum)
    min.wrapping_add(offset as i64)
}

#[cfg(test)]
mod tests;
