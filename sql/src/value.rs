//! Rows and the values in them.
//!
//! A [`Row`] holds its values inline (up to four columns without a heap
//! allocation; strings of up to 24 bytes inline too), typed by the plan's
//! schema rather than by a map of names: column `i` is `values[i]`. Rows
//! carry a [`RowKind`] so an updating query's changelog (insert,
//! update-before, update-after, delete) travels as rows, as in Flink.
//!
//! A row's wire form (network buffers and state) is self-describing: the
//! kind, the column count, then per value a tag byte and its payload.

use std::cmp::Ordering;

use compact_str::CompactString;
use smallvec::SmallVec;
use weir_runtime::{DecodeError, KeyHash, Wire};

use crate::time::{format_date, format_timestamp};
use crate::types::DataType;

/// One value of a row. Its SQL type comes from the schema: a DECIMAL's
/// scale is the column's, a TIMESTAMP and a TIMESTAMP_LTZ are both epoch
/// milliseconds.
#[derive(Clone, Debug, Default)]
pub enum Value {
    /// SQL NULL.
    #[default]
    Null,
    /// BOOLEAN.
    Bool(bool),
    /// INT.
    Int(i32),
    /// BIGINT.
    BigInt(i64),
    /// DOUBLE.
    Double(f64),
    /// DECIMAL: the unscaled value ([`Value::decimal`] builds one).
    Decimal(Unscaled),
    /// STRING.
    Str(CompactString),
    /// TIMESTAMP(3) or TIMESTAMP_LTZ(3): epoch milliseconds.
    Timestamp(i64),
    /// DATE: days since 1970-01-01.
    Date(i32),
    /// INTERVAL: milliseconds.
    Interval(i64),
}

/// A DECIMAL's unscaled 128 bits as two `u64` halves: aligned to 8 bytes
/// rather than an `i128`'s 16, so that [`Value`] is 24 bytes (the
/// string's niche holds the tag) instead of 32, and a row's inline
/// values 96 bytes instead of 128.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Unscaled([u64; 2]);

impl Unscaled {
    /// `v`'s halves.
    #[inline]
    pub fn new(v: i128) -> Self {
        Self([v as u64, (v >> 64) as u64])
    }

    /// The value.
    #[inline]
    pub fn get(self) -> i128 {
        (i128::from(self.0[1] as i64) << 64) | i128::from(self.0[0])
    }
}

impl Value {
    /// A DECIMAL of unscaled value `v`.
    #[inline]
    pub fn decimal(v: i128) -> Self {
        Value::Decimal(Unscaled::new(v))
    }

    /// A FLOAT: held as the `f64` of the `f32`.
    #[inline]
    pub fn float(v: f32) -> Self {
        Value::Double(f64::from(v))
    }

    /// Whether this is NULL.
    #[inline]
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as an `i64` (INT, BIGINT, TIMESTAMP, DATE, INTERVAL).
    #[inline]
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int(v) => Some(i64::from(v)),
            Value::BigInt(v) | Value::Timestamp(v) | Value::Interval(v) => Some(v),
            Value::Date(v) => Some(i64::from(v)),
            _ => None,
        }
    }

    /// The value as text, as Flink prints it (`print` sink, CSV): `ty`
    /// gives a DECIMAL's scale; NULL prints as `NULL`.
    pub fn display(&self, ty: DataType) -> String {
        let mut s = String::new();
        self.write_text(ty, &mut s, "NULL");
        s
    }

    /// Appends the value's text to `out` (`null` for NULL).
    pub fn write_text(&self, ty: DataType, out: &mut String, null: &str) {
        use std::fmt::Write;
        match self {
            Value::Null => out.push_str(null),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(v) => {
                let _ = write!(out, "{v}");
            }
            Value::BigInt(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Double(v) if ty == DataType::Float => write_float(*v as f32, out),
            Value::Double(v) => write_double(*v, out),
            Value::Decimal(v) => out.push_str(&format_decimal(v.get(), ty.scale())),
            Value::Str(s) => out.push_str(s),
            Value::Timestamp(ms) => out.push_str(&format_timestamp(*ms)),
            Value::Date(d) => out.push_str(&format_date(*d)),
            Value::Interval(ms) => out.push_str(&format_interval(*ms)),
        }
    }

    /// SQL comparison of two non-NULL values of comparable types (numbers
    /// across INT, BIGINT, DOUBLE and DECIMAL with scales `sa`/`sb`);
    /// `None` if either is NULL or they do not compare.
    pub fn sql_cmp(&self, other: &Value, sa: u8, sb: u8) -> Option<Ordering> {
        use Value::*;
        match (self, other) {
            (Null, _) | (_, Null) => None,
            (Bool(a), Bool(b)) => Some(a.cmp(b)),
            (Str(a), Str(b)) => Some(a.as_str().cmp(b.as_str())),
            (Timestamp(a), Timestamp(b)) | (Interval(a), Interval(b)) => Some(a.cmp(b)),
            (Date(a), Date(b)) => Some(a.cmp(b)),
            (Double(_), _) | (_, Double(_)) => {
                let (a, b) = (self.to_f64(sa)?, other.to_f64(sb)?);
                a.partial_cmp(&b)
            }
            (Decimal(_), _) | (_, Decimal(_)) => {
                let s = sa.max(sb);
                Some(self.to_scaled(sa, s)?.cmp(&other.to_scaled(sb, s)?))
            }
            _ => Some(self.as_i64()?.cmp(&other.as_i64()?)),
        }
    }

    /// A number as a double (`scale`: a DECIMAL's).
    pub fn to_f64(&self, scale: u8) -> Option<f64> {
        match *self {
            Value::Int(v) => Some(f64::from(v)),
            Value::BigInt(v) => Some(v as f64),
            Value::Double(v) => Some(v),
            Value::Decimal(v) => Some(v.get() as f64 / 10f64.powi(i32::from(scale))),
            _ => None,
        }
    }

    /// An integer or decimal as an unscaled `i128` of scale `to` (from a
    /// DECIMAL of scale `from`); `None` on overflow or for other types.
    pub fn to_scaled(&self, from: u8, to: u8) -> Option<i128> {
        let (v, s) = match *self {
            Value::Int(v) => (i128::from(v), 0),
            Value::BigInt(v) => (i128::from(v), 0),
            Value::Decimal(v) => (v.get(), from),
            _ => return None,
        };
        rescale(v, s, to)
    }
}

impl Value {
    /// A total order of values of one column: NULL first, then the
    /// values of a type in their SQL order (doubles by `f64::total_cmp`,
    /// so that the order agrees with grouping equality, which compares
    /// them by bits; a DECIMAL column's values share their scale). Values
    /// of different types (never in one column) order by type. Sets of
    /// distinct values and Top-N's tie rule sort by it.
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        use Value::*;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Bool(a), Bool(b)) => a.cmp(b),
            (Int(a), Int(b)) => a.cmp(b),
            (BigInt(a), BigInt(b)) | (Timestamp(a), Timestamp(b)) | (Interval(a), Interval(b)) => {
                a.cmp(b)
            }
            (Double(a), Double(b)) => a.total_cmp(b),
            (Decimal(a), Decimal(b)) => a.get().cmp(&b.get()),
            (Str(a), Str(b)) => a.as_str().cmp(b.as_str()),
            (Date(a), Date(b)) => a.cmp(b),
            _ => self.tag().cmp(&other.tag()),
        }
    }

    fn tag(&self) -> u8 {
        match self {
            Value::Null => TAG_NULL,
            Value::Bool(_) => TAG_BOOL,
            Value::Int(_) => TAG_INT,
            Value::BigInt(_) => TAG_BIGINT,
            Value::Double(_) => TAG_DOUBLE,
            Value::Decimal(_) => TAG_DECIMAL,
            Value::Str(_) => TAG_STR,
            Value::Timestamp(_) => TAG_TIMESTAMP,
            Value::Date(_) => TAG_DATE,
            Value::Interval(_) => TAG_INTERVAL,
        }
    }
}

/// `v` of scale `from` at scale `to` (rounding half away from zero when
/// digits are dropped).
pub fn rescale(v: i128, from: u8, to: u8) -> Option<i128> {
    match from.cmp(&to) {
        Ordering::Equal => Some(v),
        Ordering::Less => v.checked_mul(10i128.checked_pow(u32::from(to - from))?),
        Ordering::Greater => {
            let d = 10i128.checked_pow(u32::from(from - to))?;
            let q = v / d;
            let r = v % d;
            Some(if r.abs() * 2 >= d { q + v.signum() } else { q })
        }
    }
}

/// The product of unscaled `x` and `y`, whose scale is `from`, at scale
/// `to`, rounded half up; `None` past 38 digits. A product too wide for
/// an `i128` is computed in 256 bits before it is scaled down, as Flink's
/// BigDecimal product is exact before its rounding: `DECIMAL(38, 18)`
/// values 125 and 125 make 15625.000000 at Flink's scale 6, not an
/// overflow.
pub fn mul_rescale(x: i128, y: i128, from: u8, to: u8) -> Option<i128> {
    if let Some(p) = x.checked_mul(y) {
        return rescale(p, from, to).filter(|v| v.unsigned_abs() < 10u128.pow(38));
    }
    if to >= from {
        return None; // (wider than an i128 before it is even scaled up)
    }
    // |x| * |y| in four 64-bit limbs, least significant first.
    let (a, b) = (x.unsigned_abs(), y.unsigned_abs());
    let (a, b) = ([a as u64, (a >> 64) as u64], [b as u64, (b >> 64) as u64]);
    let mut limbs = [0u64; 4];
    for (i, &ai) in a.iter().enumerate() {
        let mut carry = 0u128;
        for (j, &bj) in b.iter().enumerate() {
            let t = u128::from(ai) * u128::from(bj) + u128::from(limbs[i + j]) + carry;
            limbs[i + j] = t as u64;
            carry = t >> 64;
        }
        limbs[i + 2] = carry as u64;
    }
    // Divided by 10^(from - to - 1), in steps of at most 10^19, then the
    // last digit rounded half up.
    let mut shift = u32::from(from - to) - 1;
    while shift > 0 {
        let step = shift.min(19);
        let d = 10u64.pow(step);
        let mut rem = 0u128;
        for limb in limbs.iter_mut().rev() {
            let cur = (rem << 64) | u128::from(*limb);
            *limb = (cur / u128::from(d)) as u64;
            rem = cur % u128::from(d);
        }
        shift -= step;
    }
    if limbs[2] != 0 || limbs[3] != 0 {
        return None;
    }
    let tenths = (u128::from(limbs[1]) << 64) | u128::from(limbs[0]);
    let v = (tenths / 10) + u128::from(tenths % 10 >= 5);
    if v >= 10u128.pow(38) {
        return None;
    }
    let v = v as i128;
    Some(if (x < 0) != (y < 0) { -v } else { v })
}

/// `x * 10^shift / y` rounded half up (`y` not zero), computed in 256
/// bits; `None` past 38 digits. The slow path of a DECIMAL quotient
/// whose scaled dividend passes an i128.
pub fn div_rescale(x: i128, y: i128, shift: u32) -> Option<i128> {
    // |x| * 10^(shift + 1) in four 64-bit limbs, least significant first.
    let a = x.unsigned_abs();
    let mut limbs = [a as u64, (a >> 64) as u64, 0, 0];
    let mut left = shift + 1;
    while left > 0 {
        let step = left.min(19);
        let m = u128::from(10u64.pow(step));
        let mut carry = 0u128;
        for limb in &mut limbs {
            let t = u128::from(*limb) * m + carry;
            *limb = t as u64;
            carry = t >> 64;
        }
        if carry != 0 {
            return None;
        }
        left -= step;
    }
    // Long division by |y| (at most 2^127, so twice a remainder fits).
    let d = y.unsigned_abs();
    let (mut q, mut r) = ([0u64; 4], 0u128);
    for bit in (0..256).rev() {
        r = (r << 1) | u128::from(limbs[bit / 64] >> (bit % 64) & 1);
        if r >= d {
            r -= d;
            q[bit / 64] |= 1 << (bit % 64);
        }
    }
    if q[2] != 0 || q[3] != 0 {
        return None;
    }
    let tenths = (u128::from(q[1]) << 64) | u128::from(q[0]);
    let v = tenths / 10 + u128::from(tenths % 10 >= 5);
    if v >= 10u128.pow(38) {
        return None;
    }
    let v = v as i128;
    Some(if (x < 0) != (y < 0) { -v } else { v })
}

/// A decimal's text: `12.50` for 1250 at scale 2.
pub fn format_decimal(v: i128, scale: u8) -> String {
    if scale == 0 {
        return v.to_string();
    }
    let neg = v < 0;
    let digits = v.unsigned_abs().to_string();
    let s = usize::from(scale);
    let padded = if digits.len() <= s {
        format!("{}{digits}", "0".repeat(s + 1 - digits.len()))
    } else {
        digits
    };
    let (int, frac) = padded.split_at(padded.len() - s);
    format!("{}{int}.{frac}", if neg { "-" } else { "" })
}

/// A decimal's text as Java's `BigDecimal.toString` writes it, which
/// Flink's CSV and JSON formats write by default: as [`format_decimal`]
/// unless its first digit is more than six places after the point, then
/// in scientific notation (`2.7E-8` for 0.000000027, `0E-8` for zero at
/// scale 8).
pub fn format_decimal_java(v: i128, scale: u8) -> String {
    let digits = v.unsigned_abs().to_string();
    let adjusted = digits.len() as i64 - 1 - i64::from(scale);
    if scale == 0 || adjusted >= -6 {
        return format_decimal(v, scale);
    }
    let (first, rest) = digits.split_at(1);
    format!(
        "{}{first}{}{rest}E{adjusted}",
        if v < 0 { "-" } else { "" },
        if rest.is_empty() { "" } else { "." }
    )
}

/// A double as Java prints it in Flink's output (`1.0`, `0.25`,
/// `1.0E10`): integral values keep a `.0`.
/// A FLOAT as Java's `Float.toString`: the shortest digits that read
/// back as the same `f32` (`0.1`, not the double's `0.10000000149011612`).
fn write_float(v: f32, out: &mut String) {
    if !v.is_finite() || v == 0.0 {
        return write_double(f64::from(v), out);
    }
    // The f32's shortest text, then laid out as a double of that value.
    write_double(v.to_string().parse().unwrap_or(f64::from(v)), out);
}

fn write_double(v: f64, out: &mut String) {
    use std::fmt::Write;
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else if v != 0.0 && (v.abs() >= 1e7 || v.abs() < 1e-3) {
        let s = format!("{v:E}");
        // Rust writes `1E10`; Java `1.0E10`.
        match s.split_once('E') {
            Some((m, e)) if !m.contains('.') => {
                let _ = write!(out, "{m}.0E{e}");
            }
            _ => out.push_str(&s),
        }
    } else if v.fract() == 0.0 {
        let _ = write!(out, "{v:.1}");
    } else {
        let _ = write!(out, "{v}");
    }
}

/// An interval as Flink prints a day-time interval: `+1 02:03:04.005`.
pub fn format_interval(ms: i64) -> String {
    let sign = if ms < 0 { '-' } else { '+' };
    let a = ms.unsigned_abs();
    let days = a / 86_400_000;
    let rem = a % 86_400_000;
    format!(
        "{sign}{days} {:02}:{:02}:{:02}.{:03}",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// Grouping equality: NULL equals NULL and doubles compare by bits, so a
/// value can be a key (SQL's GROUP BY puts all NULLs in one group).
impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (BigInt(a), BigInt(b)) | (Timestamp(a), Timestamp(b)) | (Interval(a), Interval(b)) => {
                a == b
            }
            (Double(a), Double(b)) => a.to_bits() == b.to_bits(),
            (Decimal(a), Decimal(b)) => a == b,
            (Str(a), Str(b)) => a == b,
            (Date(a), Date(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl KeyHash for Value {
    /// As the Rust type holding it hashes, so a BIGINT key falls into the
    /// key group an `i64` key of the Rust API would. A BIGINT (most keys)
    /// by a test of its tag, the rest out of line: the jump table over
    /// every type, which the compiler made of the inline match, waited on
    /// the tag's load for its indirect jump (perf: half the hash's
    /// samples).
    #[inline(always)]
    fn key_hash(&self) -> u64 {
        match *self {
            Value::BigInt(v) => v.key_hash(),
            _ => self.key_hash_other(),
        }
    }
}

impl Value {
    /// [`KeyHash::key_hash`] of a value of any type.
    #[inline(never)]
    fn key_hash_other(&self) -> u64 {
        match self {
            Value::Null => 0x9e37_79b9_7f4a_7c15,
            Value::Bool(b) => b.key_hash(),
            Value::Int(v) => v.key_hash(),
            Value::BigInt(v) | Value::Timestamp(v) | Value::Interval(v) => v.key_hash(),
            Value::Double(v) => v.to_bits().key_hash(),
            Value::Decimal(v) => (v.0[0] ^ v.0[1].rotate_left(32)).key_hash(),
            Value::Str(s) => s.key_hash(),
            Value::Date(v) => v.key_hash(),
        }
    }
}

/// What a row means in a changelog (Flink's `RowKind`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RowKind {
    /// `+I`: a new row.
    #[default]
    Insert,
    /// `-U`: the previous version of an updated row.
    UpdateBefore,
    /// `+U`: the new version of an updated row.
    UpdateAfter,
    /// `-D`: a removed row.
    Delete,
}

impl RowKind {
    /// Flink's short form: `+I`, `-U`, `+U`, `-D`.
    pub fn short(self) -> &'static str {
        match self {
            RowKind::Insert => "+I",
            RowKind::UpdateBefore => "-U",
            RowKind::UpdateAfter => "+U",
            RowKind::Delete => "-D",
        }
    }

    /// Whether the row adds (insert, update-after) rather than retracts.
    pub fn is_accumulate(self) -> bool {
        matches!(self, RowKind::Insert | RowKind::UpdateAfter)
    }
}

/// The values of one row, inline up to four: a row is 112 bytes, moved
/// whole at each step of its way (source, exchange, operators, sink).
/// Eight inline (208 bytes) measured slower on W1 in SQL, q0 and q5 even
/// though wider rows (q0's bids) then take the heap (bench/RESULTS.md).
pub type Values = SmallVec<[Value; 4]>;

/// A row: its changelog kind and its values, column `i` at `values[i]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Row {
    /// Insert, update-before/after or delete.
    pub kind: RowKind,
    /// The column values.
    pub values: Values,
}

impl Row {
    /// An insert row of `values`.
    pub fn new(values: Values) -> Self {
        Self {
            kind: RowKind::Insert,
            values,
        }
    }

    /// An insert row of the values of `it`.
    pub fn of<I: IntoIterator<Item = Value>>(it: I) -> Self {
        Self::new(it.into_iter().collect())
    }

    /// Column `i`.
    #[inline]
    pub fn get(&self, i: usize) -> &Value {
        &self.values[i]
    }

    /// The number of columns.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the row has no columns.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The row as Flink's `print` writes it: `+I[a, b, c]`.
    pub fn display(&self, types: &[DataType]) -> String {
        let mut s = String::from(self.kind.short());
        s.push('[');
        for (i, v) in self.values.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            v.write_text(
                types.get(i).copied().unwrap_or(DataType::String),
                &mut s,
                "NULL",
            );
        }
        s.push(']');
        s
    }
}

/// The values of a key, inline up to two.
pub type KeyValues = SmallVec<[Value; 2]>;

/// A key: the values of the key columns of a grouping, a join or a
/// rank's partition. Apart from a [`Row`] (no kind, two values inline
/// rather than eight) because every keyed state slot and timer holds one
/// and every record carries one across an exchange: 56 bytes, not 200.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Key {
    /// The key columns' values.
    pub values: KeyValues,
}

impl Key {
    /// The key of the values of `it`.
    pub fn of<I: IntoIterator<Item = Value>>(it: I) -> Self {
        Self {
            values: it.into_iter().collect(),
        }
    }

    /// The key of copies of `values`: one or two written straight into
    /// the inline buffer (every record's key is made so on both sides of
    /// its exchange; collecting an iterator costs several times more).
    #[inline]
    pub fn from_slice(values: &[Value]) -> Self {
        // A one-BIGINT key is made from its payload, the rest out of line:
        // `Value`'s clone copies any value without a heap string as 23
        // bytes, whose loads straddle the payload and tag stores of a value
        // just decoded and wait for them, and inline, the compiler merged
        // this case into a jump table over every type, whose indirect jump
        // waited on the tag's load (perf: a third of this function's
        // samples each).
        if let [Value::BigInt(v)] = values {
            return Self {
                values: KeyValues::from_buf_and_len([Value::BigInt(*v), Value::Null], 1),
            };
        }
        Self::from_slice_any(values)
    }

    /// [`Key::from_slice`] of any values.
    #[inline(never)]
    fn from_slice_any(values: &[Value]) -> Self {
        let values = match values {
            [a] => KeyValues::from_buf_and_len([a.clone(), Value::Null], 1),
            [a, b] => KeyValues::from_buf([a.clone(), b.clone()]),
            more => more.iter().cloned().collect(),
        };
        Self { values }
    }
}

impl Key {
    /// The hash of `Key::from_slice(values)`, without making the key (a
    /// `key_by` routes by it).
    #[inline]
    pub fn hash_of_slice(values: &[Value]) -> u64 {
        hash_values(values)
    }
}

/// A key hashes as its values fold, as weir's tuples do; a one-column key
/// as that column, so `GROUP BY user_id` spreads keys like the Rust API's
/// `key_by(|r| r.user_id)`.
impl KeyHash for Key {
    #[inline]
    fn key_hash(&self) -> u64 {
        hash_values(&self.values)
    }
}

/// A row hashes as a key of its values.
impl KeyHash for Row {
    #[inline]
    fn key_hash(&self) -> u64 {
        hash_values(&self.values)
    }
}

#[inline]
fn hash_values(values: &[Value]) -> u64 {
    let mut it = values.iter();
    let Some(first) = it.next() else { return 0 };
    let mut h = first.key_hash();
    for v in it {
        h = fmix64(h ^ v.key_hash().rotate_left(32));
    }
    h
}

#[inline]
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

const TAG_NULL: u8 = 0;
const TAG_BOOL: u8 = 1;
const TAG_INT: u8 = 2;
const TAG_BIGINT: u8 = 3;
const TAG_DOUBLE: u8 = 4;
const TAG_DECIMAL: u8 = 5;
const TAG_STR: u8 = 6;
const TAG_TIMESTAMP: u8 = 7;
const TAG_DATE: u8 = 8;
const TAG_INTERVAL: u8 = 9;

impl Value {
    #[inline]
    fn wire_len(&self) -> usize {
        1 + match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Date(_) => 4,
            Value::BigInt(_) | Value::Double(_) | Value::Timestamp(_) | Value::Interval(_) => 8,
            Value::Decimal(_) => 16,
            Value::Str(s) => 4 + s.len(),
        }
    }

    /// Writes the value's tag and bytes; returns how many. A BIGINT (keys,
    /// counts, sums: most values of most rows) inline, the rest in
    /// [`write_wire_any`](Self::write_wire_any).
    #[inline]
    fn write_wire(&self, out: &mut [u8]) -> usize {
        match self {
            Value::BigInt(v) => {
                let out = &mut out[..9];
                out[0] = TAG_BIGINT;
                out[1..].copy_from_slice(&v.to_le_bytes());
                9
            }
            _ => self.write_wire_any(out),
        }
    }

    fn write_wire_any(&self, out: &mut [u8]) -> usize {
        let (tag, n) = match self {
            Value::Null => (TAG_NULL, 0),
            Value::Bool(b) => {
                out[1] = u8::from(*b);
                (TAG_BOOL, 1)
            }
            Value::Int(v) => {
                out[1..5].copy_from_slice(&v.to_le_bytes());
                (TAG_INT, 4)
            }
            Value::Date(v) => {
                out[1..5].copy_from_slice(&v.to_le_bytes());
                (TAG_DATE, 4)
            }
            Value::BigInt(v) => {
                out[1..9].copy_from_slice(&v.to_le_bytes());
                (TAG_BIGINT, 8)
            }
            Value::Timestamp(v) => {
                out[1..9].copy_from_slice(&v.to_le_bytes());
                (TAG_TIMESTAMP, 8)
            }
            Value::Interval(v) => {
                out[1..9].copy_from_slice(&v.to_le_bytes());
                (TAG_INTERVAL, 8)
            }
            Value::Double(v) => {
                out[1..9].copy_from_slice(&v.to_le_bytes());
                (TAG_DOUBLE, 8)
            }
            Value::Decimal(v) => {
                out[1..17].copy_from_slice(&v.get().to_le_bytes());
                (TAG_DECIMAL, 16)
            }
            Value::Str(s) => {
                let len = u32::try_from(s.len()).expect("string longer than 4 GiB");
                out[1..5].copy_from_slice(&len.to_le_bytes());
                out[5..5 + s.len()].copy_from_slice(s.as_bytes());
                (TAG_STR, 4 + s.len())
            }
        };
        out[0] = tag;
        1 + n
    }

    /// Reads a value written by [`write_wire`](Self::write_wire), and
    /// its length: a BIGINT or NULL inline, the rest in
    /// [`read_wire_any`](Self::read_wire_any). Always inlined: called, it
    /// returned the value through memory, written in pieces (payload, tag)
    /// and read back whole, a load the processor cannot forward from the
    /// stores that had just written it (perf: half the row decode's time).
    #[inline(always)]
    fn read_wire(input: &[u8]) -> Result<(Value, usize), DecodeError> {
        match input {
            [TAG_BIGINT, b0, b1, b2, b3, b4, b5, b6, b7, ..] => Ok((
                Value::BigInt(i64::from_le_bytes([*b0, *b1, *b2, *b3, *b4, *b5, *b6, *b7])),
                9,
            )),
            [TAG_NULL, ..] => Ok((Value::Null, 1)),
            _ => Self::read_wire_any(input),
        }
    }

    fn read_wire_any(input: &[u8]) -> Result<(Value, usize), DecodeError> {
        fn need(input: &[u8], n: usize) -> Result<(), DecodeError> {
            if input.len() < n {
                Err(DecodeError {
                    what: "SQL value",
                    needed: n,
                    available: input.len(),
                })
            } else {
                Ok(())
            }
        }
        fn arr<const N: usize>(input: &[u8]) -> Result<[u8; N], DecodeError> {
            need(input, 1 + N)?;
            let mut a = [0u8; N];
            a.copy_from_slice(&input[1..1 + N]);
            Ok(a)
        }
        need(input, 1)?;
        Ok(match input[0] {
            TAG_NULL => (Value::Null, 1),
            TAG_BOOL => {
                let [b] = arr::<1>(input)?;
                match b {
                    0 | 1 => (Value::Bool(b == 1), 2),
                    _ => {
                        return Err(DecodeError {
                            what: "SQL BOOLEAN (byte is neither 0 nor 1)",
                            needed: 2,
                            available: input.len(),
                        })
                    }
                }
            }
            TAG_INT => (Value::Int(i32::from_le_bytes(arr(input)?)), 5),
            TAG_DATE => (Value::Date(i32::from_le_bytes(arr(input)?)), 5),
            TAG_BIGINT => (Value::BigInt(i64::from_le_bytes(arr(input)?)), 9),
            TAG_TIMESTAMP => (Value::Timestamp(i64::from_le_bytes(arr(input)?)), 9),
            TAG_INTERVAL => (Value::Interval(i64::from_le_bytes(arr(input)?)), 9),
            TAG_DOUBLE => (Value::Double(f64::from_le_bytes(arr(input)?)), 9),
            TAG_DECIMAL => (Value::decimal(i128::from_le_bytes(arr(input)?)), 17),
            TAG_STR => {
                let len = u32::from_le_bytes(arr(input)?) as usize;
                need(input, 5 + len)?;
                let s = std::str::from_utf8(&input[5..5 + len]).map_err(|_| DecodeError {
                    what: "SQL STRING (not UTF-8)",
                    needed: 5 + len,
                    available: input.len(),
                })?;
                (Value::Str(CompactString::from(s)), 5 + len)
            }
            _ => {
                return Err(DecodeError {
                    what: "SQL value (unknown type tag)",
                    needed: 1,
                    available: input.len(),
                })
            }
        })
    }
}

impl Wire for Value {
    fn encoded_len(&self) -> usize {
        self.wire_len()
    }
    fn write(&self, out: &mut [u8]) {
        self.write_wire(out);
    }
    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        Value::read_wire(input)
    }
}

/// A key's wire form: the column count, then the values.
impl Wire for Key {
    fn encoded_len(&self) -> usize {
        2 + self.values.iter().map(Value::wire_len).sum::<usize>()
    }

    fn write(&self, out: &mut [u8]) {
        let n = u16::try_from(self.values.len()).expect("a key of more than 65535 columns");
        out[..2].copy_from_slice(&n.to_le_bytes());
        let mut at = 2;
        for v in &self.values {
            at += v.write_wire(&mut out[at..]);
        }
    }

    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        if input.len() < 2 {
            return Err(DecodeError {
                what: "SQL key header",
                needed: 2,
                available: input.len(),
            });
        }
        let n = usize::from(u16::from_le_bytes([input[0], input[1]]));
        let mut values = KeyValues::with_capacity(n);
        let mut at = 2;
        for _ in 0..n {
            let (v, used) = Value::read_wire(&input[at..])?;
            values.push(v);
            at += used;
        }
        Ok((Key { values }, at))
    }
}

/// A list of rows as one state value (a Top-N's rows, rows waiting for
/// the watermark): the number of rows (`u32`), then each row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowList(pub Vec<Row>);

impl Wire for RowList {
    fn encoded_len(&self) -> usize {
        4 + self.0.iter().map(Wire::encoded_len).sum::<usize>()
    }

    fn write(&self, out: &mut [u8]) {
        let n = u32::try_from(self.0.len()).expect("fewer than 2^32 rows in a list");
        out[..4].copy_from_slice(&n.to_le_bytes());
        let mut at = 4;
        for r in &self.0 {
            let len = r.encoded_len();
            r.write(&mut out[at..at + len]);
            at += len;
        }
    }

    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        let (n, mut at) = u32::read(input)?;
        let mut rows = Vec::with_capacity((n as usize).min(1024));
        for _ in 0..n {
            let (r, used) = Row::read(&input[at..])?;
            rows.push(r);
            at += used;
        }
        Ok((RowList(rows), at))
    }
}

impl Wire for Row {
    fn encoded_len(&self) -> usize {
        encoded_row_len(&self.values)
    }

    fn write(&self, out: &mut [u8]) {
        write_row(self.kind, &self.values, out);
    }

    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        let (kind, values, at) = read_row(input)?;
        Ok((Row { kind, values }, at))
    }
}

/// A row kept in its wire form (exactly [`Row`]'s encoding): what a state
/// that holds many rows and reads them back rarely stores, such as a
/// regular join's append-only side. A few narrow columns take tens of
/// bytes instead of a [`Row`]'s 200 inline ones, which a table of millions
/// of rows pays for in memory first touched (and zeroed) by the kernel.
/// Its checkpoint bytes are those of the row, so state written when the
/// rows were kept whole restores as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackedRow(Box<[u8]>);

impl PackedRow {
    /// `row`, packed.
    pub fn pack(row: &Row) -> Self {
        let mut bytes = vec![0; row.encoded_len()].into_boxed_slice();
        row.write(&mut bytes);
        PackedRow(bytes)
    }

    /// The row again.
    pub fn unpack(&self) -> Row {
        let (row, _) = Row::read(&self.0).expect("a packed row decodes: it was encoded here");
        row
    }
}

impl Wire for PackedRow {
    fn encoded_len(&self) -> usize {
        self.0.len()
    }

    fn write(&self, out: &mut [u8]) {
        out[..self.0.len()].copy_from_slice(&self.0);
    }

    /// Checks the row as [`Row::read`] does, and keeps its bytes.
    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        let (_, n) = Row::read(input)?;
        Ok((PackedRow(input[..n].into()), n))
    }
}

/// The wire length of a row of `values`: a kind byte, a `u16` count,
/// then each value (tag and bytes).
#[inline]
pub(crate) fn encoded_row_len(values: &[Value]) -> usize {
    3 + values.iter().map(Value::wire_len).sum::<usize>()
}

/// Writes a row of `kind` and `values` ([`encoded_row_len`] bytes).
#[inline]
pub(crate) fn write_row(kind: RowKind, values: &[Value], out: &mut [u8]) {
    out[0] = kind as u8;
    let n = u16::try_from(values.len()).expect("a row of more than 65535 columns");
    out[1..3].copy_from_slice(&n.to_le_bytes());
    let mut at = 3;
    for v in values {
        at += v.write_wire(&mut out[at..]);
    }
}

/// Reads a row written by [`write_row`] into any small vector of values:
/// its kind, values and length.
#[inline]
pub(crate) fn read_row<A: smallvec::Array<Item = Value>>(
    input: &[u8],
) -> Result<(RowKind, SmallVec<A>, usize), DecodeError> {
    if input.len() < 3 {
        return Err(DecodeError {
            what: "SQL row header",
            needed: 3,
            available: input.len(),
        });
    }
    let kind = match input[0] {
        0 => RowKind::Insert,
        1 => RowKind::UpdateBefore,
        2 => RowKind::UpdateAfter,
        3 => RowKind::Delete,
        _ => {
            return Err(DecodeError {
                what: "SQL row kind (unknown)",
                needed: 1,
                available: input.len(),
            })
        }
    };
    let n = usize::from(u16::from_le_bytes([input[1], input[2]]));
    let mut values = SmallVec::with_capacity(n.min(256));
    let mut at = 3;
    for _ in 0..n {
        // A BIGINT is pushed as it is made, not through `read_wire`'s
        // result: the value written into that result in pieces (payload,
        // then the tag byte) and copied out by whole words waited for the
        // tag's store (perf: half the row decode's time).
        if let [TAG_BIGINT, b0, b1, b2, b3, b4, b5, b6, b7, ..] = input[at..] {
            values.push(Value::BigInt(i64::from_le_bytes([
                b0, b1, b2, b3, b4, b5, b6, b7,
            ])));
            at += 9;
            continue;
        }
        let (v, used) = Value::read_wire(&input[at..])?;
        values.push(v);
        at += used;
    }
    Ok((kind, values, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_as_javas_big_decimal_to_string() {
        for (v, scale, want) in [
            (27, 9, "2.7E-8"),
            (-27, 9, "-2.7E-8"),
            (1, 7, "1E-7"),
            (1, 6, "0.000001"),
            (100, 8, "0.00000100"),
            (0, 8, "0E-8"),
            (0, 6, "0.000000"),
            (123_456, 13, "1.23456E-8"),
            (1250, 2, "12.50"),
            (42, 0, "42"),
        ] {
            assert_eq!(format_decimal_java(v, scale), want, "{v} at scale {scale}");
        }
    }

    #[test]
    fn a_packed_row_is_the_row_and_writes_the_rows_bytes() {
        let row = Row::new(
            [Value::BigInt(7), Value::Null, Value::Str("extra".into())]
                .into_iter()
                .collect(),
        );
        let packed = PackedRow::pack(&row);
        assert_eq!(packed.unpack(), row);
        let mut as_row = vec![0; row.encoded_len()];
        row.write(&mut as_row);
        let mut as_packed = vec![0; packed.encoded_len()];
        packed.write(&mut as_packed);
        assert_eq!(as_packed, as_row, "the checkpoint bytes are the row's");
        let mut long = as_row.clone();
        long.extend_from_slice(b"next");
        assert_eq!(PackedRow::read(&long), Ok((packed, as_row.len())));
        assert!(PackedRow::read(&as_row[..as_row.len() - 1]).is_err());
    }

    #[test]
    fn a_row_list_round_trips_and_a_cut_one_is_refused() {
        let rows = RowList(vec![
            Row::new([Value::BigInt(1), Value::Null].into_iter().collect()),
            Row::new([Value::Str("x".into())].into_iter().collect()),
        ]);
        let mut buf = vec![0; rows.encoded_len()];
        rows.write(&mut buf);
        let (back, used) = RowList::read(&buf).unwrap();
        assert_eq!((back, used), (rows, buf.len()));
        assert!(RowList::read(&buf[..buf.len() - 1]).is_err());
    }

    fn round_trip(row: &Row) -> Row {
        let mut buf = vec![0u8; row.encoded_len()];
        row.write(&mut buf);
        let (back, used) = Row::read(&buf).unwrap();
        assert_eq!(used, buf.len());
        back
    }

    #[test]
    fn rows_round_trip_through_the_wire_form() {
        let mut row = Row::of([
            Value::Null,
            Value::Bool(true),
            Value::Int(-3),
            Value::BigInt(1 << 40),
            Value::Double(2.5),
            Value::decimal(-12_345),
            Value::Str("a string longer than twenty-four bytes".into()),
            Value::Timestamp(1_700_000_000_123),
            Value::Date(19_000),
            Value::Interval(5_000),
        ]);
        row.kind = RowKind::UpdateBefore;
        assert_eq!(round_trip(&row), row);
    }

    /// The inline BIGINT and NULL steps write and read what the general
    /// ones do, and refuse what they refuse (cut values included).
    #[test]
    fn the_inline_wire_steps_agree_with_the_general_ones() {
        let values = [
            Value::Null,
            Value::Bool(false),
            Value::Int(i32::MIN),
            Value::BigInt(0),
            Value::BigInt(-1),
            Value::BigInt(i64::MIN),
            Value::BigInt(i64::MAX),
            Value::Double(-0.0),
            Value::decimal(i128::MIN),
            Value::Str("s".into()),
            Value::Timestamp(-5),
            Value::Date(3),
            Value::Interval(i64::MAX),
        ];
        for v in &values {
            let n = v.wire_len();
            let (mut fast, mut any) = (vec![0xAA; n + 2], vec![0xAA; n + 2]);
            assert_eq!(v.write_wire(&mut fast), n);
            assert_eq!(v.write_wire_any(&mut any), n);
            assert_eq!(fast, any, "{v:?}");
            for cut in 0..=n + 2 {
                let bytes = &fast[..cut];
                assert_eq!(
                    Value::read_wire(bytes),
                    Value::read_wire_any(bytes),
                    "{v:?} cut at {cut}"
                );
            }
            assert_eq!(Value::read_wire(&fast), Ok((v.clone(), n)));
        }
    }

    #[test]
    fn truncated_or_foreign_bytes_are_errors() {
        let row = Row::of([Value::Str("abc".into()), Value::BigInt(7)]);
        let mut buf = vec![0u8; row.encoded_len()];
        row.write(&mut buf);
        for cut in 0..buf.len() {
            assert!(Row::read(&buf[..cut]).is_err(), "cut at {cut}");
        }
        buf[3] = 200;
        assert!(Row::read(&buf).is_err());
    }

    #[test]
    fn a_one_column_key_hashes_as_its_value() {
        let k = Key::of([Value::BigInt(42)]);
        assert_eq!(k.key_hash(), 42i64.key_hash());
        let two = Key::of([Value::BigInt(42), Value::Str("x".into())]);
        assert_eq!(two.key_hash(), Row::of(two.values.clone()).key_hash());
        let mut buf = vec![0u8; two.encoded_len()];
        two.write(&mut buf);
        assert_eq!(Key::read(&buf).unwrap(), (two, buf.len()));
    }

    #[test]
    fn a_key_from_a_slice_is_the_key_of_its_values() {
        let values = [
            Value::BigInt(7),
            Value::Str("a string longer than twenty-four bytes".into()),
            Value::Null,
            Value::Str("x".into()),
        ];
        for n in 0..=values.len() {
            let k = Key::from_slice(&values[..n]);
            let want = Key::of(values[..n].iter().cloned());
            assert_eq!(k, want);
            assert_eq!(k.values.len(), n);
            assert_eq!(k.key_hash(), want.key_hash());
        }
    }

    #[test]
    fn values_are_24_bytes_and_decimals_keep_their_128_bits() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::size_of::<Row>(), 112);
        for v in [0, -1, 1, i128::MIN, i128::MAX, -(1 << 70) + 3] {
            assert_eq!(Unscaled::new(v).get(), v);
        }
    }

    #[test]
    fn values_print_as_flink_does() {
        assert_eq!(Value::Double(1.0).display(DataType::Double), "1.0");
        assert_eq!(Value::Double(0.25).display(DataType::Double), "0.25");
        assert_eq!(Value::Double(1e10).display(DataType::Double), "1.0E10");
        let d = DataType::Decimal {
            precision: 10,
            scale: 2,
        };
        assert_eq!(Value::decimal(-5).display(d), "-0.05");
        assert_eq!(Value::decimal(1250).display(d), "12.50");
        assert_eq!(
            Value::Timestamp(0).display(DataType::Timestamp),
            "1970-01-01 00:00:00.000"
        );
    }

    #[test]
    fn numbers_compare_across_types() {
        assert_eq!(
            Value::Int(3).sql_cmp(&Value::decimal(250), 0, 2),
            Some(Ordering::Greater)
        );
        assert_eq!(
            Value::Int(3).sql_cmp(&Value::Double(3.0), 0, 0),
            Some(Ordering::Equal)
        );
        assert_eq!(Value::Null.sql_cmp(&Value::Int(1), 0, 0), None);
        assert_eq!(rescale(125, 2, 1), Some(13));
        assert_eq!(rescale(-125, 2, 1), Some(-13));
    }
}
