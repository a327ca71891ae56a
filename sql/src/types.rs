//! SQL data types and table schemas: what a column holds, as Flink SQL
//! names it (BOOLEAN, INT, BIGINT, DOUBLE, DECIMAL(p, s), STRING,
//! TIMESTAMP(3), TIMESTAMP_LTZ(3), DATE, INTERVAL), and how types meet:
//! the least common type of two (what UNION, VALUES, CASE and IN widen
//! to) and which types a value is cast to without a CAST (INSERT).

use std::fmt;

/// A column's type. Every type admits NULL unless the column says
/// `NOT NULL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// `BOOLEAN`.
    Boolean,
    /// `INT` (32-bit; also TINYINT and SMALLINT, widened).
    Int,
    /// `BIGINT` (64-bit).
    BigInt,
    /// `DOUBLE` (8 bytes).
    Double,
    /// `FLOAT` / `REAL`: Flink's 4-byte float, held as the `f64` of an
    /// `f32` (every value rounded to `f32` when made).
    Float,
    /// `DECIMAL(precision, scale)`, precision at most 38: the unscaled
    /// value in an `i128`.
    Decimal {
        /// Digits in all.
        precision: u8,
        /// Digits after the point.
        scale: u8,
    },
    /// `STRING` / `VARCHAR(n)` / `CHAR(n)` (lengths are not enforced).
    String,
    /// `TIMESTAMP(3)`: a wall-clock time without zone, milliseconds.
    Timestamp,
    /// `TIMESTAMP_LTZ(3)`: an instant, epoch milliseconds; shown in UTC
    /// (weir's session time zone is always UTC).
    TimestampLtz,
    /// `DATE`: days since 1970-01-01.
    Date,
    /// `INTERVAL ... TO ...` of days and time: milliseconds.
    Interval,
}

impl DataType {
    /// Whether values of this type are numbers (arithmetic applies).
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            DataType::Int
                | DataType::BigInt
                | DataType::Double
                | DataType::Float
                | DataType::Decimal { .. }
        )
    }

    /// Whether this is an integer type (INT, BIGINT; TINYINT and SMALLINT
    /// are INT).
    pub fn is_integer(self) -> bool {
        matches!(self, DataType::Int | DataType::BigInt)
    }

    /// Whether values of this type are points in time (TIMESTAMP, LTZ).
    pub fn is_timestamp(self) -> bool {
        matches!(self, DataType::Timestamp | DataType::TimestampLtz)
    }

    /// The decimal scale, 0 for other types.
    pub fn scale(self) -> u8 {
        match self {
            DataType::Decimal { scale, .. } => scale,
            _ => 0,
        }
    }

    /// An exact number's precision and scale as a DECIMAL (Flink's: an
    /// INT holds 10 digits, a BIGINT 19; weir's TINYINT and SMALLINT are
    /// INTs); `None` for other types.
    fn exact_shape(self) -> Option<(u8, u8)> {
        match self {
            DataType::Int => Some((10, 0)),
            DataType::BigInt => Some((19, 0)),
            DataType::Decimal { precision, scale } => Some((precision, scale)),
            _ => None,
        }
    }
}

/// The least common type of two types, as Flink's
/// `LogicalTypeMerging.findCommonType`: what the columns of a UNION, a
/// VALUES column, CASE branches, COALESCE's arguments and an IN list
/// widen to. Numbers widen INT < BIGINT < DECIMAL < DOUBLE; exact
/// numbers meet in a DECIMAL with the most integer digits and the largest
/// scale of the two (an INT counting as `DECIMAL(10, 0)`, a BIGINT as
/// `DECIMAL(19, 0)`), where beyond 38 digits the scale gives way; a
/// DOUBLE with any number is DOUBLE. TIMESTAMP and TIMESTAMP_LTZ meet
/// as TIMESTAMP. Other types meet only themselves; `None`: they do not
/// mix. (A NULL literal takes the other side's type: its callers skip
/// it.)
pub fn least_common_type(a: DataType, b: DataType) -> Option<DataType> {
    use DataType::*;
    if a == b {
        return Some(a);
    }
    Some(match (a, b) {
        (Double, x) | (x, Double) if x.is_numeric() => Double,
        // Calcite's: a FLOAT with an integer stays FLOAT, with a DECIMAL
        // is DOUBLE.
        (Float, Int | BigInt) | (Int | BigInt, Float) => Float,
        (Float, Decimal { .. }) | (Decimal { .. }, Float) => Double,
        (Int, BigInt) | (BigInt, Int) => BigInt,
        (Decimal { .. }, _) | (_, Decimal { .. }) => {
            let ((p1, s1), (p2, s2)) = (a.exact_shape()?, b.exact_shape()?);
            let int = (p1 - s1).max(p2 - s2).min(MAX_PRECISION);
            let scale = s1.max(s2).min(MAX_PRECISION - int);
            Decimal {
                precision: int + scale,
                scale,
            }
        }
        (Timestamp, TimestampLtz) | (TimestampLtz, Timestamp) => Timestamp,
        _ => return None,
    })
}

/// Whether a value of type `from` goes into a column of type `to` without
/// a CAST, by Flink's implicit casts (`LogicalTypeCasts.supportsImplicitCast`,
/// which an INSERT's sink columns are checked with): an INT into a
/// BIGINT, any number into a DOUBLE or a DECIMAL (a value with more
/// digits than the DECIMAL holds is NULL there, as a CAST gives), a
/// TIMESTAMP into a TIMESTAMP_LTZ and back, a TIMESTAMP into a DATE.
/// Narrowing an integer (BIGINT into INT), a DOUBLE or DECIMAL into an
/// integer, and text into anything else need a CAST.
pub fn casts_implicitly(from: DataType, to: DataType) -> bool {
    use DataType::*;
    from == to
        || matches!(
            (from, to),
            (Int, BigInt)
                | (Timestamp, TimestampLtz)
                | (TimestampLtz, Timestamp)
                | (Timestamp, Date)
        )
        || (from.is_numeric() && matches!(to, Double | Decimal { .. }))
        || (from.is_numeric() && from != Double && to == Float)
}

/// Whether `CAST(x AS to)` of an `x` of type `from` is a cast Flink's
/// planner takes (its cast rules, `CastRuleProvider`): `Err` is the
/// reason it refuses one, worded as Flink's. Text casts to and from
/// anything; numbers and BOOLEAN cast among themselves, but only an
/// integer to BOOLEAN (not zero: Flink's rules take BOOLEAN from the
/// integer family alone, not from DECIMAL or floating point); DATE,
/// TIMESTAMP and TIMESTAMP_LTZ among
/// themselves. A timestamp and a number do not cast either way (Flink
/// points to UNIX_TIMESTAMP, FROM_UNIXTIME and TO_TIMESTAMP_LTZ), nor a
/// DATE and a number, a BOOLEAN and a time, or an INTERVAL and anything
/// but text.
pub fn casts_explicitly(from: DataType, to: DataType) -> Result<(), String> {
    use DataType::*;
    let number_like = |t: DataType| t.is_numeric() || t == Boolean;
    let time = |t: DataType| matches!(t, Date | Timestamp | TimestampLtz);
    let ok = from == to
        || from == String
        || to == String
        || (number_like(from) && number_like(to) && (to != Boolean || from.is_integer()))
        || (time(from) && time(to));
    if ok {
        return Ok(());
    }
    Err(match (from, to) {
        (Timestamp, t) if t.is_numeric() => "the cast from TIMESTAMP type to NUMERIC type is not \
             allowed (as in Flink): use UNIX_TIMESTAMP(CAST(timestamp_col AS STRING))"
            .into(),
        (TimestampLtz, t) if t.is_numeric() => {
            "the cast from TIMESTAMP_LTZ type to NUMERIC type is not allowed (as in Flink)".into()
        }
        (f, Timestamp) if f.is_numeric() => "the cast from NUMERIC type to TIMESTAMP type is not \
             allowed (as in Flink): use TO_TIMESTAMP(FROM_UNIXTIME(numeric_col)), the number \
             in seconds"
            .into(),
        (f, TimestampLtz) if f.is_numeric() => "the cast from NUMERIC type to TIMESTAMP_LTZ type \
             is not allowed (as in Flink): use TO_TIMESTAMP_LTZ(numeric_col, precision)"
            .into(),
        _ => format!("CAST cannot convert a value of type {from} to type {to} (nor can Flink's)"),
    })
}

/// A DECIMAL's largest precision.
pub const MAX_PRECISION: u8 = 38;

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Boolean => f.write_str("BOOLEAN"),
            DataType::Int => f.write_str("INT"),
            DataType::BigInt => f.write_str("BIGINT"),
            DataType::Double => f.write_str("DOUBLE"),
            DataType::Float => f.write_str("FLOAT"),
            DataType::Decimal { precision, scale } => write!(f, "DECIMAL({precision}, {scale})"),
            DataType::String => f.write_str("STRING"),
            DataType::Timestamp => f.write_str("TIMESTAMP(3)"),
            DataType::TimestampLtz => f.write_str("TIMESTAMP_LTZ(3)"),
            DataType::Date => f.write_str("DATE"),
            DataType::Interval => f.write_str("INTERVAL SECOND(3)"),
        }
    }
}

/// One column of a schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The column's name as written (compared case-insensitively).
    pub name: String,
    /// Its type.
    pub ty: DataType,
    /// Whether NULL may occur.
    pub nullable: bool,
    /// Whether this is an event-time attribute (a rowtime column with a
    /// watermark, or a window's `window_time`): windows may use it.
    pub rowtime: bool,
    /// Whether this is a processing-time attribute (`PROCTIME()`):
    /// windows on it follow the wall clock.
    pub proctime: bool,
}

impl Field {
    /// A nullable, non-time column.
    pub fn new(name: impl Into<String>, ty: DataType) -> Self {
        Self {
            name: name.into(),
            ty,
            nullable: true,
            rowtime: false,
            proctime: false,
        }
    }
}

/// The columns of a table or of an intermediate result, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schema {
    /// The columns.
    pub fields: Vec<Field>,
}

impl Schema {
    /// A schema of these columns.
    pub fn new(fields: Vec<Field>) -> Self {
        Self { fields }
    }

    /// The number of columns.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether there are no columns.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The index of the column named `name` (case-insensitive).
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.fields
            .iter()
            .position(|f| f.name.eq_ignore_ascii_case(name))
    }

    /// The columns' types, in order.
    pub fn types(&self) -> Vec<DataType> {
        self.fields.iter().map(|f| f.ty).collect()
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, c) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} {}", c.name, c.ty)?;
            if c.rowtime {
                f.write_str(" *ROWTIME*")?;
            }
            if !c.nullable {
                f.write_str(" NOT NULL")?;
            }
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    fn d(precision: u8, scale: u8) -> DataType {
        Decimal { precision, scale }
    }

    #[test]
    fn least_common_types_are_flinks() {
        let cases = [
            (Int, Int, Some(Int)),
            (Int, BigInt, Some(BigInt)),
            (Int, Double, Some(Double)),
            (d(10, 2), Double, Some(Double)),
            (Int, Float, Some(Float)),
            (BigInt, Float, Some(Float)),
            (Float, Double, Some(Double)),
            (d(10, 2), Float, Some(Double)),
            (d(10, 2), d(5, 1), Some(d(10, 2))),
            (d(10, 2), d(5, 3), Some(d(11, 3))),
            (Int, d(5, 2), Some(d(12, 2))),
            (BigInt, d(5, 2), Some(d(21, 2))),
            (BigInt, d(20, 0), Some(d(20, 0))),
            // 38 digits at most: the scale gives way to integer digits
            (d(38, 0), d(10, 5), Some(d(38, 0))),
            (d(30, 10), d(38, 2), Some(d(38, 2))),
            (Timestamp, TimestampLtz, Some(Timestamp)),
            (Int, String, None),
            (Boolean, Int, None),
            (Date, Timestamp, None),
            (String, String, Some(String)),
        ];
        for (a, b, want) in cases {
            assert_eq!(least_common_type(a, b), want, "{a} and {b}");
            assert_eq!(least_common_type(b, a), want, "{b} and {a}");
        }
    }

    #[test]
    fn implicit_casts_are_flinks() {
        for (from, to) in [
            (Int, BigInt),
            (Int, Double),
            (BigInt, Double),
            (d(10, 2), Double),
            (Int, d(10, 0)),
            (Int, d(12, 2)),
            (BigInt, d(19, 0)),
            (d(10, 2), d(12, 2)),
            // Flink's implicit casts go by the type, not the precision:
            // a value too wide for the DECIMAL is NULL.
            (d(38, 2), d(10, 2)),
            (Double, d(38, 10)),
            (Timestamp, TimestampLtz),
            (TimestampLtz, Timestamp),
            (Timestamp, Date),
            (String, String),
        ] {
            assert!(casts_implicitly(from, to), "{from} into {to}");
        }
        for (from, to) in [
            (BigInt, Int),
            (Double, Int),
            (Double, BigInt),
            (d(10, 2), Int),
            (d(10, 0), BigInt),
            (String, Int),
            (String, d(10, 2)),
            (Int, String),
            (Boolean, Int),
            (Int, Boolean),
            (Date, Timestamp),
            (Interval, BigInt),
        ] {
            assert!(!casts_implicitly(from, to), "{from} into {to}");
        }
    }
}
