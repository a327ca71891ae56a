//! SQL data types and table schemas: what a column holds, as Flink SQL
//! names it (BOOLEAN, INT, BIGINT, DOUBLE, DECIMAL(p, s), STRING,
//! TIMESTAMP(3), TIMESTAMP_LTZ(3), DATE, INTERVAL).

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
    /// `DOUBLE` (also FLOAT and REAL, widened).
    Double,
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
            DataType::Int | DataType::BigInt | DataType::Double | DataType::Decimal { .. }
        )
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
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Boolean => f.write_str("BOOLEAN"),
            DataType::Int => f.write_str("INT"),
            DataType::BigInt => f.write_str("BIGINT"),
            DataType::Double => f.write_str("DOUBLE"),
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
