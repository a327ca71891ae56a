//! Scalar expressions: sqlparser's expressions resolved against a scope
//! of typed columns into a [`Scalar`] tree, type-checked once when the
//! query is planned and evaluated per row with SQL's three-valued logic.

use std::cmp::Ordering;
use std::sync::Arc;

use compact_str::CompactString;
use sqlparser::ast::{
    self, BinaryOperator as B, CastKind, DateTimeField, Expr, UnaryOperator as U,
};

use crate::error::{Result, SqlError};
use crate::functions::{self, TimeUnit};
use crate::json;
use crate::time::{parse_date, parse_timestamp, DAY_MS};
use crate::types::{least_common_type, DataType, Field, Schema};
use crate::value::{div_rescale, mul_rescale, rescale, Row, Value};

/// The function a scalar subquery that does not aggregate is planned
/// with, `SINGLE_VALUE(COUNT(*), MAX(x))` (see `plan/subquery.rs`).
pub const SINGLE_VALUE: &str = "__WEIR_SINGLE_VALUE";

/// The columns an expression may name: each with the table or alias it
/// came from.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// The columns, in row order.
    pub cols: Vec<ScopeCol>,
}

/// One column in scope.
#[derive(Clone, Debug)]
pub struct ScopeCol {
    /// The table name or alias that qualifies it (`t.col`).
    pub qualifier: Option<String>,
    /// The column.
    pub field: Field,
    /// Reached only qualified (`t.k`): a column a `JOIN .. USING` merged
    /// into one unqualified column, which `*` and a bare `k` name.
    pub hidden: bool,
}

impl Scope {
    /// A scope of `schema`'s columns, all qualified by `qualifier`.
    pub fn of(schema: &Schema, qualifier: Option<&str>) -> Self {
        Self {
            cols: schema
                .fields
                .iter()
                .map(|f| ScopeCol {
                    qualifier: qualifier.map(str::to_owned),
                    field: f.clone(),
                    hidden: false,
                })
                .collect(),
        }
    }

    /// The columns as a schema.
    pub fn schema(&self) -> Schema {
        Schema::new(self.cols.iter().map(|c| c.field.clone()).collect())
    }

    /// This scope followed by `other`'s columns (a join's).
    pub fn concat(&self, other: &Scope) -> Scope {
        let mut cols = self.cols.clone();
        cols.extend(other.cols.iter().cloned());
        Scope { cols }
    }

    fn names(&self) -> String {
        self.cols
            .iter()
            .map(|c| match &c.qualifier {
                Some(q) => format!("{q}.{}", c.field.name),
                None => c.field.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The index of the column `parts` names (`col` or `qualifier.col`).
    pub fn resolve(&self, parts: &[ast::Ident]) -> Result<usize> {
        let (qual, name) = match parts {
            [c] => (None, &c.value),
            [.., q, c] => (Some(&q.value), &c.value),
            [] => return Err(SqlError::Plan("an empty column name".into())),
        };
        let hits: Vec<usize> = self
            .cols
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.field.name.eq_ignore_ascii_case(name)
                    && (qual.is_some() || !c.hidden)
                    && qual.is_none_or(|q| {
                        c.qualifier
                            .as_deref()
                            .is_some_and(|cq| cq.eq_ignore_ascii_case(q))
                    })
            })
            .map(|(i, _)| i)
            .collect();
        match hits.as_slice() {
            [i] => Ok(*i),
            [] => Err(SqlError::UnknownColumn {
                column: parts
                    .iter()
                    .map(|p| p.value.as_str())
                    .collect::<Vec<_>>()
                    .join("."),
                in_scope: self.names(),
            }),
            _ => Err(SqlError::Plan(format!(
                "column `{name}` is ambiguous: qualify it with its table ({})",
                self.names()
            ))),
        }
    }
}

/// Binary arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%` / MOD
    Mod,
}

/// Comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `=`
    Eq,
    /// `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Cmp {
    fn test(self, o: Ordering) -> bool {
        match self {
            Cmp::Eq => o == Ordering::Equal,
            Cmp::Ne => o != Ordering::Equal,
            Cmp::Lt => o == Ordering::Less,
            Cmp::Le => o != Ordering::Greater,
            Cmp::Gt => o == Ordering::Greater,
            Cmp::Ge => o != Ordering::Less,
        }
    }
}

/// Built-in functions of one or more arguments.
#[derive(Clone, Debug)]
pub enum Func {
    /// UPPER
    Upper,
    /// LOWER
    Lower,
    /// CHAR_LENGTH / CHARACTER_LENGTH
    CharLength,
    /// CONCAT (NULL if any argument is)
    Concat,
    /// SUBSTRING(s FROM a [FOR b]), 1-based
    Substring,
    /// TRIM (both sides, spaces)
    Trim,
    /// ABS
    Abs,
    /// COALESCE
    Coalesce,
    /// DATE_FORMAT(ts, pattern)
    DateFormat(Arc<str>),
    /// TO_TIMESTAMP(string)
    ToTimestamp,
    /// EXTRACT(unit FROM ts)
    Extract(TimeUnit),
    /// FLOOR(ts TO unit) / CEIL(ts TO unit), a unit of a day or less
    TimeFloor(i64, bool),
    /// A scalar subquery's value, `(count of its rows, value)`: the value,
    /// or the task fails for more than one row (Flink's SINGLE_VALUE)
    SingleValue,
    /// A timestamp cut to a coarser precision than milliseconds (`CAST(ts
    /// AS TIMESTAMP(0))`): its epoch milliseconds truncated toward zero to
    /// a multiple of this, as Flink's `DateTimeUtils.truncate`
    TruncateMillis(i64),
    /// FLOOR / CEIL of a timestamp or date TO WEEK, MONTH, QUARTER or YEAR
    CalendarFloor(functions::CalendarUnit, bool),
    /// FLOOR / CEIL of a number
    NumFloor(bool),
    /// POSITION(a IN b), 1-based, 0 if absent
    Position,
    /// PROCTIME(): the wall clock (epoch ms) when the row is computed
    ProcTime,
    /// REPLACE(s, from, to)
    Replace,
    /// ROUND(x [, d]) / TRUNCATE(x [, d]) (`trunc`): `d` digits after the
    /// point, negative before it; `None`: the second argument's per row
    /// (not for DECIMALs, whose result type depends on it).
    Round {
        /// The digits, when a literal.
        digits: Option<i32>,
        /// TRUNCATE: toward zero rather than half away from it.
        trunc: bool,
    },
    /// A DOUBLE function of numbers (SQRT, LN, POWER, SIN, ...).
    Math(MathFn),
    /// SIGN: -1, 0 or 1 in the argument's type.
    Sign,
    /// GREATEST (`false`) / LEAST (`true`): NULL if any argument is.
    Greatest(bool),
    /// IS DISTINCT FROM (`false`) / IS NOT DISTINCT FROM (`true`).
    Distinct(bool),
    /// LPAD (`true`) / RPAD (`false`).
    Pad(bool),
    /// LTRIM / RTRIM / TRIM with characters: (leading, trailing); the
    /// characters are the second argument, or a space.
    TrimChars(bool, bool),
    /// MD5, SHA1, SHA224, SHA256, SHA384, SHA512 and SHA2(s, bits): the
    /// digest of the string's UTF-8 bytes in lower-case hex.
    Digest(functions::Digest),
    /// TO_BASE64 (`true`) / FROM_BASE64 (`false`).
    Base64(bool),
    /// INITCAP
    InitCap,
    /// REVERSE
    Reverse,
    /// REPEAT(s, n)
    Repeat,
    /// LEFT (`true`) / RIGHT (`false`) (s, n)
    LeftRight(bool),
    /// LOCATE(needle, haystack [, from]), 1-based, 0 if absent
    Locate,
    /// INSTR(s, sub [, start [, nth]])
    Instr,
    /// CONCAT_WS(sep, ...): NULL arguments skipped
    ConcatWs,
    /// SPLIT_INDEX(s, sep, i), 0-based
    SplitIndex,
    /// REGEXP(s, pattern): whether any substring matches. The pattern
    /// compiled when the query is planned, if it is a literal.
    RegexpMatch(Option<regex::Regex>),
    /// REGEXP_EXTRACT(s, pattern [, group])
    RegexpExtract(Option<regex::Regex>),
    /// JSON_VALUE (`true`) / JSON_EXISTS (`false`) (json, path): the path
    /// parsed when planned if it is a literal.
    Json(bool, Option<Vec<json::JsonStep>>),
    /// `s IS [NOT] JSON kind` (`true`: NOT): FALSE (TRUE) for NULL.
    IsJson(json::JsonKind, bool),
    /// JSON_OBJECT (`keys`: one per value) / JSON_ARRAY (`keys` `None`):
    /// the values' JSON text, `raw` ones (another JSON_OBJECT or
    /// JSON_ARRAY) inserted as JSON; `absent`: ABSENT ON NULL.
    JsonBuild {
        /// The members' names (JSON_OBJECT).
        keys: Option<Vec<String>>,
        /// Per value: JSON text already.
        raw: Vec<bool>,
        /// ABSENT ON NULL (else NULL ON NULL).
        absent: bool,
    },
    /// JSON_STRING(v): the value as JSON text, NULL for NULL.
    JsonString,
    /// JSON_QUERY(json, path): the path parsed when planned if a literal
    /// (lax mode, steps), the wrapper, ON EMPTY and ON ERROR.
    JsonQuery(
        Option<(bool, Vec<json::JsonStep>)>,
        json::JsonWrapper,
        json::JsonBehavior,
        json::JsonBehavior,
    ),
    /// REGEXP_REPLACE(s, pattern, replacement): the replacement literal
    RegexpReplace(Option<regex::Regex>),
    /// OVERLAY(s PLACING r FROM a [FOR n])
    Overlay,
    /// BIN: an integer's two's complement bits
    Bin,
    /// HEX: an integer's two's complement in hex digits, or a string's
    /// UTF-8 bytes
    Hex,
    /// ASCII: the first UTF-8 byte, signed
    Ascii,
    /// CHR: the character of a code (modulo 256)
    Chr,
    /// The wall clock when the row is computed: CURRENT_TIMESTAMP, NOW,
    /// LOCALTIMESTAMP, CURRENT_DATE, UNIX_TIMESTAMP().
    Now(NowKind),
    /// UNIX_TIMESTAMP(s [, pattern]): epoch seconds of a text, Long.MIN
    /// when it does not parse (as Flink's).
    UnixTimestamp(Arc<str>),
    /// TO_TIMESTAMP(s, pattern) (`false`) / TO_DATE(s [, pattern])
    /// (`true`; an empty pattern: TO_DATE(s))
    ParseTime(Arc<str>, bool),
    /// FROM_UNIXTIME(seconds [, pattern])
    FromUnixtime(Arc<str>),
    /// TIMESTAMPADD(unit, n, t)
    TimestampAdd(CalUnit),
    /// TIMESTAMPDIFF(unit, a, b)
    TimestampDiff(CalUnit),
    /// HASH_CODE(s): Java's `Math.abs(s.hashCode())`
    HashCode,
    /// IS_DIGIT(x): text of decimal digits, or any integer
    IsDigit,
    /// IS_ALPHA(x): text of letters (FALSE for a number)
    IsAlpha,
    /// IS_DECIMAL(x): text Java reads as a number, or any number
    IsDecimal,
    /// TRANSLATE(s, from, to)
    Translate,
    /// ELT(n, a, b, ..): the n-th of the values after `n`, 1-based
    Elt,
    /// REGEXP_SUBSTR(s, pattern): the first match
    RegexpSubstr(Option<regex::Regex>),
    /// PARSE_URL(url, part [, key])
    ParseUrl,
    /// `s SIMILAR TO pattern`: the pattern's regular expression (see
    /// [`crate::similar`])
    Similar(regex::Regex),
    /// REGEXP_COUNT(s, pattern): how many times it matches
    RegexpCount(Option<regex::Regex>),
    /// REGEXP_INSTR(s, pattern): the first match's 1-based position, 0
    /// for none
    RegexpInstr(Option<regex::Regex>),
    /// STARTSWITH(s, prefix) (`false`) / ENDSWITH(s, suffix) (`true`)
    EndsWith(bool),
    /// URL_ENCODE(s) (`true`) / URL_DECODE(s) (`false`)
    Url(bool),
    /// CONVERT_TZ(s, from, to): `yyyy-MM-dd HH:mm:ss` text from one zone
    /// to another
    ConvertTz,
}

/// The DOUBLE functions of numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathFn {
    /// SQRT
    Sqrt,
    /// EXP
    Exp,
    /// LN, LOG(x)
    Ln,
    /// LOG10
    Log10,
    /// LOG2
    Log2,
    /// LOG(base, x)
    Log,
    /// POWER(x, y)
    Power,
    /// SIN
    Sin,
    /// COS
    Cos,
    /// TAN
    Tan,
    /// COT
    Cot,
    /// ASIN
    Asin,
    /// ACOS
    Acos,
    /// ATAN
    Atan,
    /// ATAN2(y, x)
    Atan2,
    /// SINH
    Sinh,
    /// COSH
    Cosh,
    /// TANH
    Tanh,
    /// DEGREES
    Degrees,
    /// RADIANS
    Radians,
}

impl MathFn {
    fn apply(self, x: f64, y: f64) -> f64 {
        match self {
            MathFn::Sqrt => x.sqrt(),
            MathFn::Exp => x.exp(),
            MathFn::Ln => x.ln(),
            MathFn::Log10 => x.log10(),
            MathFn::Log2 => x.ln() / std::f64::consts::LN_2,
            MathFn::Log => y.ln() / x.ln(),
            MathFn::Power => x.powf(y),
            MathFn::Sin => x.sin(),
            MathFn::Cos => x.cos(),
            MathFn::Tan => x.tan(),
            MathFn::Cot => 1.0 / x.tan(),
            MathFn::Asin => x.asin(),
            MathFn::Acos => x.acos(),
            MathFn::Atan => x.atan(),
            MathFn::Atan2 => x.atan2(y),
            MathFn::Sinh => x.sinh(),
            MathFn::Cosh => x.cosh(),
            MathFn::Tanh => x.tanh(),
            MathFn::Degrees => x.to_degrees(),
            MathFn::Radians => x.to_radians(),
        }
    }
}

/// What a wall-clock function gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NowKind {
    /// CURRENT_TIMESTAMP, NOW() (TIMESTAMP_LTZ), LOCALTIMESTAMP (TIMESTAMP).
    Timestamp,
    /// CURRENT_DATE.
    Date,
    /// UNIX_TIMESTAMP(): epoch seconds.
    UnixSeconds,
}

/// A unit of TIMESTAMPADD and TIMESTAMPDIFF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CalUnit {
    /// A fixed length: milliseconds (SECOND .. WEEK).
    Fixed(i64),
    /// Calendar months (MONTH 1, QUARTER 3, YEAR 12).
    Months(i64),
}

impl CalUnit {
    fn of(name: &str) -> Option<CalUnit> {
        let n = name.to_ascii_uppercase();
        let n = n.strip_prefix("SQL_TSI_").unwrap_or(&n);
        Some(match n {
            "MILLISECOND" => CalUnit::Fixed(1),
            "SECOND" => CalUnit::Fixed(1000),
            "MINUTE" => CalUnit::Fixed(60_000),
            "HOUR" => CalUnit::Fixed(3_600_000),
            "DAY" => CalUnit::Fixed(DAY_MS),
            "WEEK" => CalUnit::Fixed(7 * DAY_MS),
            "MONTH" => CalUnit::Months(1),
            "QUARTER" => CalUnit::Months(3),
            "YEAR" => CalUnit::Months(12),
            _ => return None,
        })
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A compiled expression.
#[derive(Clone, Debug)]
pub enum Scalar {
    /// Column `i` of the input row.
    Column(usize, DataType),
    /// A constant.
    Literal(Value, DataType),
    /// Arithmetic of two operands; the result has type `ty`.
    Arith(Arith, Box<Scalar>, Box<Scalar>, DataType),
    /// Unary minus.
    Neg(Box<Scalar>, DataType),
    /// Comparison.
    Cmp(Cmp, Box<Scalar>, Box<Scalar>),
    /// AND (three-valued).
    And(Box<Scalar>, Box<Scalar>),
    /// OR (three-valued).
    Or(Box<Scalar>, Box<Scalar>),
    /// NOT.
    Not(Box<Scalar>),
    /// IS [NOT] NULL.
    IsNull(Box<Scalar>, bool),
    /// IS [NOT] TRUE / FALSE: (expr, value tested, negated).
    IsBool(Box<Scalar>, bool, bool),
    /// [NOT] LIKE: (text, pattern, escape, negated).
    Like(Box<Scalar>, Box<Scalar>, Option<char>, bool),
    /// [NOT] IN (list).
    InList(Box<Scalar>, Vec<Scalar>, bool),
    /// CASE WHEN .. THEN .. ELSE .. END (searched form; the simple form is
    /// rewritten to it).
    Case(Vec<(Scalar, Scalar)>, Option<Box<Scalar>>, DataType),
    /// CAST(expr AS ty) (`true`: text that does not parse fails the job)
    /// or TRY_CAST (`false`: NULL instead).
    Cast(Box<Scalar>, DataType, bool),
    /// A function call.
    Call(Func, Vec<Scalar>, DataType),
}

impl Scalar {
    /// The type of the values this expression gives.
    pub fn ty(&self) -> DataType {
        match self {
            Scalar::Column(_, t)
            | Scalar::Literal(_, t)
            | Scalar::Arith(_, _, _, t)
            | Scalar::Neg(_, t)
            | Scalar::Case(_, _, t)
            | Scalar::Cast(_, t, _)
            | Scalar::Call(_, _, t) => *t,
            _ => DataType::Boolean,
        }
    }

    /// Whether this is `PROCTIME()`: the column it makes is a
    /// processing-time attribute.
    pub fn is_proctime(&self) -> bool {
        matches!(self, Scalar::Call(Func::ProcTime, _, _))
    }

    /// The column this is, if it is a bare column.
    pub fn as_column(&self) -> Option<usize> {
        match self {
            Scalar::Column(i, _) => Some(*i),
            _ => None,
        }
    }

    /// Evaluates on `row`.
    pub fn eval(&self, row: &Row) -> Value {
        match self {
            Scalar::Column(i, _) => row.values[*i].clone(),
            Scalar::Literal(v, _) => v.clone(),
            Scalar::Arith(op, a, b, ty) => {
                arith(*op, &a.eval(row), a.ty(), &b.eval(row), b.ty(), *ty)
            }
            Scalar::Neg(a, _) => match a.eval(row) {
                Value::Int(v) => Value::Int(v.wrapping_neg()),
                Value::BigInt(v) => Value::BigInt(v.wrapping_neg()),
                Value::Double(v) => Value::Double(-v),
                Value::Decimal(v) => Value::decimal(-v.get()),
                Value::Interval(v) => Value::Interval(-v),
                _ => Value::Null,
            },
            Scalar::Cmp(op, a, b) => {
                let (x, y) = (a.eval(row), b.eval(row));
                match x.sql_cmp(&y, a.ty().scale(), b.ty().scale()) {
                    Some(o) => Value::Bool(op.test(o)),
                    None => Value::Null,
                }
            }
            Scalar::And(a, b) => match truth(&a.eval(row)) {
                Some(false) => Value::Bool(false),
                l => match (l, truth(&b.eval(row))) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                },
            },
            Scalar::Or(a, b) => match truth(&a.eval(row)) {
                Some(true) => Value::Bool(true),
                l => match (l, truth(&b.eval(row))) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                },
            },
            Scalar::Not(a) => match truth(&a.eval(row)) {
                Some(b) => Value::Bool(!b),
                None => Value::Null,
            },
            Scalar::IsNull(a, negated) => Value::Bool(a.eval(row).is_null() != *negated),
            Scalar::IsBool(a, want, negated) => {
                Value::Bool((truth(&a.eval(row)) == Some(*want)) != *negated)
            }
            Scalar::Like(t, p, esc, negated) => match (t.eval(row), p.eval(row)) {
                (Value::Str(t), Value::Str(p)) => {
                    if let Some(at) = esc.and_then(|e| functions::like_bad_escape(&p, e)) {
                        weir_runtime::fail_task(bad_like_escape(&p, at));
                    }
                    Value::Bool(functions::like(&t, &p, *esc) != *negated)
                }
                _ => Value::Null,
            },
            Scalar::InList(e, list, negated) => {
                let v = e.eval(row);
                if v.is_null() {
                    return Value::Null;
                }
                let mut saw_null = false;
                for item in list {
                    let w = item.eval(row);
                    match v.sql_cmp(&w, e.ty().scale(), item.ty().scale()) {
                        Some(Ordering::Equal) => return Value::Bool(!*negated),
                        None => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::Bool(*negated)
                }
            }
            Scalar::Case(whens, otherwise, ty) => {
                for (c, r) in whens {
                    if truth(&c.eval(row)) == Some(true) {
                        return coerce(r.eval(row), r.ty(), *ty);
                    }
                }
                match otherwise {
                    Some(e) => coerce(e.eval(row), e.ty(), *ty),
                    None => Value::Null,
                }
            }
            Scalar::Cast(a, to, true) => strict_cast(a.eval(row), a.ty(), *to),
            Scalar::Cast(a, to, false) => cast(a.eval(row), a.ty(), *to),
            Scalar::Call(f, args, ty) => call(f, args, *ty, row),
        }
    }
}

/// The columns an expression reads, and the same expression over another
/// row layout (a join's condition split between its two inputs).
impl Scalar {
    /// Calls `f` with every column index this expression reads.
    pub fn for_each_column(&self, f: &mut dyn FnMut(usize)) {
        match self {
            Scalar::Column(i, _) => f(*i),
            Scalar::Literal(..) => {}
            Scalar::Arith(_, a, b, _)
            | Scalar::Cmp(_, a, b)
            | Scalar::And(a, b)
            | Scalar::Or(a, b)
            | Scalar::Like(a, b, _, _) => {
                a.for_each_column(f);
                b.for_each_column(f);
            }
            Scalar::Neg(a, _)
            | Scalar::Not(a)
            | Scalar::IsNull(a, _)
            | Scalar::IsBool(a, _, _)
            | Scalar::Cast(a, _, _) => a.for_each_column(f),
            Scalar::InList(a, list, _) => {
                a.for_each_column(f);
                list.iter().for_each(|x| x.for_each_column(f));
            }
            Scalar::Case(whens, otherwise, _) => {
                for (c, r) in whens {
                    c.for_each_column(f);
                    r.for_each_column(f);
                }
                if let Some(e) = otherwise {
                    e.for_each_column(f);
                }
            }
            Scalar::Call(_, args, _) => args.iter().for_each(|x| x.for_each_column(f)),
        }
    }

    /// The smallest and largest column this expression reads (`None`: it
    /// reads none).
    pub fn column_range(&self) -> Option<(usize, usize)> {
        let mut range: Option<(usize, usize)> = None;
        self.for_each_column(&mut |i| {
            range = Some(range.map_or((i, i), |(lo, hi)| (lo.min(i), hi.max(i))));
        });
        range
    }

    /// The same expression with column `i` read from column `i - by`
    /// (every column it reads must be at `by` or after).
    pub fn shift_columns(&self, by: usize) -> Scalar {
        let sh = |x: &Scalar| Box::new(x.shift_columns(by));
        match self {
            Scalar::Column(i, t) => Scalar::Column(i - by, *t),
            Scalar::Literal(..) => self.clone(),
            Scalar::Arith(o, a, b, t) => Scalar::Arith(*o, sh(a), sh(b), *t),
            Scalar::Neg(a, t) => Scalar::Neg(sh(a), *t),
            Scalar::Cmp(c, a, b) => Scalar::Cmp(*c, sh(a), sh(b)),
            Scalar::And(a, b) => Scalar::And(sh(a), sh(b)),
            Scalar::Or(a, b) => Scalar::Or(sh(a), sh(b)),
            Scalar::Not(a) => Scalar::Not(sh(a)),
            Scalar::IsNull(a, n) => Scalar::IsNull(sh(a), *n),
            Scalar::IsBool(a, v, n) => Scalar::IsBool(sh(a), *v, *n),
            Scalar::Like(a, b, e, n) => Scalar::Like(sh(a), sh(b), *e, *n),
            Scalar::InList(a, list, n) => Scalar::InList(
                sh(a),
                list.iter().map(|x| x.shift_columns(by)).collect(),
                *n,
            ),
            Scalar::Case(whens, otherwise, t) => Scalar::Case(
                whens
                    .iter()
                    .map(|(c, r)| (c.shift_columns(by), r.shift_columns(by)))
                    .collect(),
                otherwise.as_ref().map(|e| sh(e)),
                *t,
            ),
            Scalar::Cast(a, t, strict) => Scalar::Cast(sh(a), *t, *strict),
            Scalar::Call(f, args, t) => Scalar::Call(
                f.clone(),
                args.iter().map(|x| x.shift_columns(by)).collect(),
                *t,
            ),
        }
    }
}

/// A boolean value's truth: `None` for NULL (or a non-boolean).
#[inline]
pub fn truth(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        _ => None,
    }
}

fn call(f: &Func, args: &[Scalar], ty: DataType, row: &Row) -> Value {
    let arg = |i: usize| args[i].eval(row);
    let text = |v: &Value| match v {
        Value::Str(s) => Some(s.clone()),
        _ => None,
    };
    match f {
        Func::Upper => match arg(0) {
            Value::Str(s) => Value::Str(s.to_uppercase()),
            _ => Value::Null,
        },
        Func::Lower => match arg(0) {
            Value::Str(s) => Value::Str(s.to_lowercase()),
            _ => Value::Null,
        },
        Func::CharLength => match arg(0) {
            Value::Str(s) => Value::Int(s.chars().count() as i32),
            _ => Value::Null,
        },
        Func::Trim => match arg(0) {
            Value::Str(s) => Value::Str(s.trim_matches(' ').into()),
            _ => Value::Null,
        },
        Func::Concat => {
            let mut out = CompactString::default();
            for a in args {
                let v = a.eval(row);
                if v.is_null() {
                    return Value::Null;
                }
                match v {
                    Value::Str(s) => {
                        functions::check_length("CONCAT", out.len() + s.len());
                        out.push_str(&s)
                    }
                    other => out.push_str(&other.display(a.ty())),
                }
            }
            Value::Str(out)
        }
        Func::Substring => {
            let Some(s) = text(&arg(0)) else {
                return Value::Null;
            };
            let Some(from) = arg(1).as_i64() else {
                return Value::Null;
            };
            let len = match args.get(2) {
                Some(l) => match l.eval(row).as_i64() {
                    Some(l) => Some(l),
                    None => return Value::Null,
                },
                None => None,
            };
            if len.is_some_and(|l| l < 0) {
                return Value::Null;
            }
            Value::Str(substring(&s, from, len).into())
        }
        Func::Position => match (arg(0), arg(1)) {
            (Value::Str(needle), Value::Str(hay)) => Value::Int(match hay.find(needle.as_str()) {
                Some(b) => hay[..b].chars().count() as i32 + 1,
                None => 0,
            }),
            _ => Value::Null,
        },
        Func::Replace => match (arg(0), arg(1), arg(2)) {
            (Value::Str(s), Value::Str(a), Value::Str(b)) => {
                if b.len() > a.len() {
                    let n = if a.is_empty() {
                        s.chars().count() + 1
                    } else {
                        s.matches(a.as_str()).count()
                    };
                    let len = s.len().saturating_add(n.saturating_mul(b.len() - a.len()));
                    functions::check_length("REPLACE", len);
                }
                Value::Str(s.replace(a.as_str(), &b).into())
            }
            _ => Value::Null,
        },
        Func::Abs => match arg(0) {
            Value::Int(v) => Value::Int(v.wrapping_abs()),
            Value::BigInt(v) => Value::BigInt(v.wrapping_abs()),
            Value::Double(v) => Value::Double(v.abs()),
            Value::Decimal(v) => Value::decimal(v.get().abs()),
            _ => Value::Null,
        },
        Func::SingleValue => {
            if arg(0).as_i64().is_some_and(|n| n > 1) {
                weir_runtime::fail_task(
                    "a scalar subquery gave more than one row (Flink's SINGLE_VALUE fails alike)",
                )
            }
            arg(1)
        }
        Func::Coalesce => {
            for a in args {
                let v = a.eval(row);
                if !v.is_null() {
                    return coerce(v, a.ty(), ty);
                }
            }
            Value::Null
        }
        Func::DateFormat(p) => match arg(0) {
            Value::Timestamp(ms) => Value::Str(functions::date_format(ms, p).into()),
            _ => Value::Null,
        },
        Func::ToTimestamp => match arg(0) {
            Value::Str(s) => parse_timestamp(&s).map_or(Value::Null, Value::Timestamp),
            _ => Value::Null,
        },
        Func::Extract(u) => match arg(0) {
            Value::Timestamp(ms) => Value::BigInt(functions::extract(*u, ms)),
            Value::Date(d) => Value::BigInt(functions::extract(*u, i64::from(d) * DAY_MS)),
            _ => Value::Null,
        },
        Func::CalendarFloor(unit, ceil) => match arg(0) {
            Value::Timestamp(ms) => {
                let days = functions::floor_days(ms.div_euclid(DAY_MS), *unit, *ceil);
                Value::Timestamp(days.saturating_mul(DAY_MS))
            }
            Value::Date(d) => {
                let days = functions::floor_days(i64::from(d), *unit, *ceil);
                i32::try_from(days).map_or(Value::Null, Value::Date)
            }
            _ => Value::Null,
        },
        Func::TimeFloor(unit, ceil) => match arg(0) {
            Value::Timestamp(ms) => {
                let f = ms.div_euclid(*unit) * unit;
                Value::Timestamp(if *ceil && f != ms { f + unit } else { f })
            }
            _ => Value::Null,
        },
        Func::TruncateMillis(unit) => match arg(0) {
            // (`/` truncates toward zero, as Java's long division)
            Value::Timestamp(ms) => Value::Timestamp(ms / unit * unit),
            _ => Value::Null,
        },
        Func::NumFloor(ceil) => match arg(0) {
            Value::Double(v) => Value::Double(if *ceil { v.ceil() } else { v.floor() }),
            Value::Decimal(v) => {
                let v = v.get();
                let d = 10i128.pow(u32::from(args[0].ty().scale()));
                let q = v.div_euclid(d);
                let r = if *ceil && v.rem_euclid(d) != 0 {
                    q + 1
                } else {
                    q
                };
                Value::decimal(r)
            }
            v => v,
        },
        Func::ProcTime => Value::Timestamp(now_ms()),
        _ => call_more(f, args, ty, row),
    }
}

/// `len` characters of `s` (to its end for `None`) from position `from`,
/// as Flink's runtime cuts them: 1-based; 0 is the first character too; a
/// negative position counts from the end (-2: the last two); a start
/// past either end gives ''. (A negative `len` is NULL, checked before.)
fn substring(s: &str, from: i64, len: Option<i64>) -> String {
    let n = s.chars().count() as i64;
    let start = match from {
        f if f > 0 => f - 1,
        0 => 0,
        f => n.saturating_add(f),
    };
    if start < 0 || start >= n {
        return String::new();
    }
    let take = len.map_or(n - start, |l| l.min(n - start));
    s.chars().skip(start as usize).take(take as usize).collect()
}

/// A regular-expression function's pattern (argument 2): the one
/// compiled when the query was planned, borrowed (a clone of a `Regex`
/// would start an empty cache of its own, which every search would fill
/// anew), or this row's compiled now.
fn pattern<'a>(
    compiled: &'a Option<regex::Regex>,
    args: &[Scalar],
    row: &Row,
) -> Option<std::borrow::Cow<'a, regex::Regex>> {
    match compiled {
        Some(r) => Some(std::borrow::Cow::Borrowed(r)),
        None => match args[1].eval(row) {
            Value::Str(p) => functions::java_regex(&p).ok().map(std::borrow::Cow::Owned),
            _ => None,
        },
    }
}

/// The functions added with ROUND and after: split from [`call`] to keep
/// each match readable.
fn call_more(f: &Func, args: &[Scalar], ty: DataType, row: &Row) -> Value {
    let arg = |i: usize| args[i].eval(row);
    let int = |i: usize| args[i].eval(row).as_i64();
    let num = |i: usize| args[i].eval(row).to_f64(args[i].ty().scale());
    let regex = |compiled| pattern(compiled, args, row);
    let string = |v: String| Value::Str(v.into());
    match f {
        Func::Round { digits, trunc } => {
            let d = match digits {
                Some(d) => i64::from(*d),
                None => match int(1) {
                    Some(d) => d,
                    None => return Value::Null,
                },
            };
            let d = d.clamp(-64, 64) as i32;
            match arg(0) {
                Value::Int(v) => Value::Int(functions::round_int(i64::from(v), d, *trunc) as i32),
                Value::BigInt(v) => Value::BigInt(functions::round_int(v, d, *trunc)),
                Value::Double(v) if ty == DataType::Float => {
                    Value::float(functions::round_double(v, d, *trunc) as f32)
                }
                Value::Double(v) => Value::Double(functions::round_double(v, d, *trunc)),
                Value::Decimal(v) => Value::decimal(functions::round_decimal(
                    v.get(),
                    args[0].ty().scale(),
                    d,
                    *trunc,
                )),
                _ => Value::Null,
            }
        }
        Func::Math(m) => {
            let Some(x) = num(0) else {
                return Value::Null;
            };
            let y = match args.get(1) {
                Some(_) => match num(1) {
                    Some(y) => y,
                    None => return Value::Null,
                },
                None => 0.0,
            };
            Value::Double(m.apply(x, y))
        }
        Func::Sign => match arg(0) {
            Value::Int(v) => Value::Int(v.signum()),
            Value::BigInt(v) => Value::BigInt(v.signum()),
            Value::Double(v) if v == 0.0 || v.is_nan() => Value::Double(v),
            Value::Double(v) => Value::Double(v.signum()),
            Value::Decimal(v) => {
                Value::decimal(v.get().signum() * 10i128.pow(u32::from(ty.scale())))
            }
            _ => Value::Null,
        },
        Func::Greatest(least) => {
            let mut best: Option<(Value, DataType)> = None;
            for a in args {
                let v = a.eval(row);
                if v.is_null() {
                    return Value::Null;
                }
                let v = coerce(v, a.ty(), ty);
                let better = match &best {
                    None => true,
                    Some((b, _)) => {
                        let o = v.sql_cmp(b, ty.scale(), ty.scale());
                        o == Some(if *least {
                            Ordering::Less
                        } else {
                            Ordering::Greater
                        })
                    }
                };
                if better {
                    best = Some((v, ty));
                }
            }
            best.map_or(Value::Null, |(v, _)| v)
        }
        Func::Distinct(not) => {
            let (a, b) = (arg(0), arg(1));
            let same = match (a.is_null(), b.is_null()) {
                (true, true) => true,
                (true, false) | (false, true) => false,
                _ => {
                    a.sql_cmp(&b, args[0].ty().scale(), args[1].ty().scale())
                        == Some(Ordering::Equal)
                }
            };
            Value::Bool(same == *not)
        }
        Func::Pad(left) => match (arg(0), int(1), arg(2)) {
            (Value::Str(s), Some(n), Value::Str(p)) => {
                functions::pad(&s, n, &p, *left).map_or(Value::Null, string)
            }
            _ => Value::Null,
        },
        Func::TrimChars(leading, trailing) => {
            let chars = match args.get(1) {
                Some(_) => match arg(1) {
                    Value::Str(c) => c,
                    _ => return Value::Null,
                },
                None => " ".into(),
            };
            match arg(0) {
                Value::Str(s) => {
                    Value::Str(functions::trim_chars(&s, &chars, *leading, *trailing).into())
                }
                _ => Value::Null,
            }
        }
        Func::Digest(kind) => match arg(0) {
            Value::Str(s) => string(functions::hex_digest(*kind, &s)),
            _ => Value::Null,
        },
        Func::Base64(encode) => match arg(0) {
            Value::Str(s) if *encode => string(functions::to_base64(&s)),
            Value::Str(s) => functions::from_base64(&s).map_or(Value::Null, string),
            _ => Value::Null,
        },
        Func::InitCap => match arg(0) {
            Value::Str(s) => string(functions::initcap(&s)),
            _ => Value::Null,
        },
        Func::Reverse => match arg(0) {
            Value::Str(s) => Value::Str(s.chars().rev().collect()),
            _ => Value::Null,
        },
        Func::Repeat => match (arg(0), int(1)) {
            (Value::Str(s), Some(n)) => {
                let n = usize::try_from(n).unwrap_or(0);
                functions::check_length("REPEAT", s.len().saturating_mul(n));
                Value::Str(s.repeat(n))
            }
            _ => Value::Null,
        },
        Func::LeftRight(left) => match (arg(0), int(1)) {
            (Value::Str(s), Some(n)) => {
                let n = usize::try_from(n).unwrap_or(0);
                if *left {
                    Value::Str(s.chars().take(n).collect())
                } else {
                    let len = s.chars().count();
                    Value::Str(s.chars().skip(len.saturating_sub(n)).collect())
                }
            }
            _ => Value::Null,
        },
        Func::Locate => match (arg(0), arg(1)) {
            (Value::Str(needle), Value::Str(hay)) => {
                let from = match args.get(2) {
                    Some(_) => match int(2) {
                        Some(f) => f,
                        None => return Value::Null,
                    },
                    None => 1,
                };
                Value::Int(functions::locate(&needle, &hay, from) as i32)
            }
            _ => Value::Null,
        },
        Func::Instr => match (arg(0), arg(1)) {
            (Value::Str(s), Value::Str(sub)) => {
                let mut more = [1i64, 1];
                for (i, m) in more.iter_mut().enumerate() {
                    if args.get(2 + i).is_some() {
                        match int(2 + i) {
                            Some(v) => *m = v,
                            None => return Value::Null,
                        }
                    }
                }
                functions::instr(&s, &sub, more[0], more[1])
                    .map_or(Value::Null, |p| Value::Int(p as i32))
            }
            _ => Value::Null,
        },
        Func::ConcatWs => {
            let Value::Str(sep) = arg(0) else {
                return Value::Null;
            };
            let mut out = String::new();
            let mut first = true;
            for a in &args[1..] {
                let v = a.eval(row);
                if v.is_null() {
                    continue;
                }
                if !first {
                    out.push_str(&sep);
                }
                first = false;
                match v {
                    Value::Str(s) => {
                        functions::check_length("CONCAT_WS", out.len() + s.len());
                        out.push_str(&s)
                    }
                    other => other.write_text(a.ty(), &mut out, ""),
                }
            }
            string(out)
        }
        Func::SplitIndex => {
            let sep = match arg(1) {
                Value::Str(sep) => sep,
                // A separator given by its code, 1 to 255 (Flink's other
                // SPLIT_INDEX).
                v => match v.as_i64() {
                    Some(c @ 1..=255) => char::from(c as u8).to_string().into(),
                    _ => return Value::Null,
                },
            };
            match (arg(0), int(2)) {
                (Value::Str(s), Some(i)) => functions::split_index(&s, &sep, i)
                    .map_or(Value::Null, |p| Value::Str(p.into())),
                _ => Value::Null,
            }
        }
        Func::RegexpMatch(re) => match (arg(0), arg(1)) {
            (Value::Str(s), Value::Str(p)) => {
                // Flink's: an empty or malformed pattern matches nothing.
                Value::Bool(!p.is_empty() && regex(re).is_some_and(|r| r.is_match(&s)))
            }
            _ => Value::Null,
        },
        Func::Json(value, steps) => match (arg(0), arg(1)) {
            (Value::Str(json), Value::Str(path)) => {
                let parsed;
                let steps = match steps {
                    Some(s) => s,
                    None => match json::json_path(&path) {
                        Ok(s) => {
                            parsed = s;
                            &parsed
                        }
                        // NULL (JSON_VALUE) or FALSE (JSON_EXISTS) ON ERROR.
                        Err(_) if *value => return Value::Null,
                        Err(_) => return Value::Bool(false),
                    },
                };
                if *value {
                    json::json_value(&json, steps).map_or(Value::Null, string)
                } else {
                    Value::Bool(json::json_exists(&json, steps))
                }
            }
            _ => Value::Null,
        },
        Func::IsJson(kind, negated) => Value::Bool(
            *negated
                != match arg(0) {
                    Value::Str(s) => json::is_json(&s, *kind),
                    _ => false,
                },
        ),
        Func::JsonBuild { keys, raw, absent } => {
            let mut members: Vec<(String, String)> = Vec::new();
            for (i, a) in args.iter().enumerate() {
                let v = a.eval(row);
                if v.is_null() && *absent {
                    continue;
                }
                let mut text = String::new();
                match (&v, raw[i]) {
                    (Value::Str(s), true) => text.push_str(s),
                    _ => {
                        let _ = json::json_of(&v, a.ty(), &mut text);
                    }
                }
                let key = keys.as_ref().map_or(String::new(), |k| k[i].clone());
                match members
                    .iter_mut()
                    .find(|(k, _)| keys.is_some() && *k == key)
                {
                    Some(m) => m.1 = text,
                    None => members.push((key, text)),
                }
            }
            let mut out = String::new();
            out.push(if keys.is_some() { '{' } else { '[' });
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if keys.is_some() {
                    json::json_quote(k, &mut out);
                    out.push(':');
                }
                out.push_str(v);
            }
            out.push(if keys.is_some() { '}' } else { ']' });
            Value::Str(out.into())
        }
        Func::JsonString => {
            let v = arg(0);
            if v.is_null() {
                return Value::Null;
            }
            let mut out = String::new();
            let _ = json::json_of(&v, args[0].ty(), &mut out);
            Value::Str(out.into())
        }
        Func::JsonQuery(path, wrapper, on_empty, on_error) => {
            let (Value::Str(json), Value::Str(p)) = (arg(0), arg(1)) else {
                return Value::Null;
            };
            let parsed;
            let (lax, steps) = match path {
                Some((lax, s)) => (*lax, s),
                None => match json::json_path(&p) {
                    Ok(s) => {
                        parsed = s;
                        (json::json_path_is_lax(&p), &parsed)
                    }
                    Err(e) => {
                        return match on_error {
                            json::JsonBehavior::Null => Value::Null,
                            json::JsonBehavior::EmptyArray => string("[]".into()),
                            json::JsonBehavior::EmptyObject => string("{}".into()),
                            json::JsonBehavior::Error => {
                                weir_runtime::fail_task(format!("JSON_QUERY: the path `{p}`: {e}"))
                            }
                        }
                    }
                },
            };
            match json::json_query(&json, lax, steps, *wrapper, *on_empty, *on_error) {
                Ok(Some(s)) => string(s),
                Ok(None) => Value::Null,
                Err(e) => weir_runtime::fail_task(e),
            }
        }
        Func::RegexpExtract(re) => {
            let (Value::Str(s), Value::Str(_)) = (arg(0), arg(1)) else {
                return Value::Null;
            };
            let group = match args.get(2) {
                Some(_) => match int(2) {
                    Some(g) => g,
                    None => return Value::Null,
                },
                None => 0,
            };
            let Some(r) = regex(re) else {
                return Value::Null;
            };
            let Ok(group) = usize::try_from(group) else {
                return Value::Null;
            };
            r.captures(&s)
                .and_then(|c| c.get(group))
                .map_or(Value::Null, |m| Value::Str(m.as_str().into()))
        }
        Func::RegexpReplace(re) => match (arg(0), arg(1), arg(2)) {
            (Value::Str(s), Value::Str(_), Value::Str(to)) => match regex(re) {
                // Flink quotes the replacement: `$1` is literal text.
                Some(r) => string(r.replace_all(&s, regex::NoExpand(&to)).into_owned()),
                None => Value::Null,
            },
            _ => Value::Null,
        },
        Func::HashCode => match arg(0) {
            Value::Str(s) => Value::Int(crate::strings::hash_code(&s)),
            _ => Value::Null,
        },
        Func::IsDigit | Func::IsAlpha | Func::IsDecimal => {
            let v = arg(0);
            Value::Bool(match (&v, f) {
                (Value::Null, _) => return Value::Null,
                (Value::Str(s), Func::IsDigit) => crate::strings::is_digit(s),
                (Value::Str(s), Func::IsAlpha) => crate::strings::is_alpha(s),
                (Value::Str(s), _) => crate::strings::is_decimal(s),
                // Numbers, as Flink's runtime takes them: every integer is
                // digits and every number a decimal; no number is letters.
                (_, Func::IsDigit) => matches!(v, Value::Int(_) | Value::BigInt(_)),
                (_, Func::IsAlpha) => false,
                _ => true,
            })
        }
        Func::Translate => match arg(0) {
            // Flink's: a NULL `from` leaves the text, a NULL `to` drops
            // every character of `from`.
            Value::Str(s) => match (arg(1), arg(2)) {
                (Value::Str(from), Value::Str(to)) => {
                    string(crate::strings::translate(&s, &from, &to))
                }
                (Value::Str(from), _) => string(crate::strings::translate(&s, &from, "")),
                _ => Value::Str(s),
            },
            _ => Value::Null,
        },
        Func::Elt => match int(0) {
            Some(n) if n >= 1 && (n as u64) < args.len() as u64 => {
                coerce(arg(n as usize), args[n as usize].ty(), ty)
            }
            _ => Value::Null,
        },
        Func::RegexpSubstr(re) => match (arg(0), arg(1)) {
            (Value::Str(s), Value::Str(_)) => regex(re)
                .and_then(|r| r.find(&s).map(|m| string(m.as_str().to_owned())))
                .unwrap_or(Value::Null),
            _ => Value::Null,
        },
        Func::Similar(re) => match arg(0) {
            Value::Str(s) => Value::Bool(re.is_match(&s)),
            _ => Value::Null,
        },
        Func::RegexpCount(re) => match (arg(0), arg(1)) {
            (Value::Str(s), Value::Str(_)) => regex(re)
                .map(|r| Value::Int(r.find_iter(&s).count() as i32))
                .unwrap_or(Value::Null),
            _ => Value::Null,
        },
        // The position in characters (Java's in UTF-16 units: the same
        // but for characters beyond the Basic Multilingual Plane).
        Func::RegexpInstr(re) => match (arg(0), arg(1)) {
            (Value::Str(s), Value::Str(_)) => regex(re)
                .map(|r| {
                    Value::Int(
                        r.find(&s)
                            .map_or(0, |m| s[..m.start()].chars().count() as i32 + 1),
                    )
                })
                .unwrap_or(Value::Null),
            _ => Value::Null,
        },
        Func::EndsWith(end) => match (arg(0), arg(1)) {
            (Value::Str(s), Value::Str(x)) => Value::Bool(if *end {
                s.ends_with(&*x)
            } else {
                s.starts_with(&*x)
            }),
            _ => Value::Null,
        },
        Func::Url(encode) => match arg(0) {
            Value::Str(s) if *encode => string(crate::url_codec::encode(&s)),
            Value::Str(s) => crate::url_codec::decode(&s).map_or(Value::Null, string),
            _ => Value::Null,
        },
        Func::ParseUrl => {
            let (Value::Str(url), Value::Str(part)) = (arg(0), arg(1)) else {
                return Value::Null;
            };
            let out = match args.get(2) {
                None => crate::url::parse_url(&url, &part),
                Some(_) => match arg(2) {
                    Value::Str(key) => crate::url::parse_url_key(&url, &part, &key),
                    _ => return Value::Null,
                },
            };
            out.map_or(Value::Null, string)
        }
        Func::ConvertTz => {
            let (Value::Str(s), Value::Str(from), Value::Str(to)) = (arg(0), arg(1), arg(2)) else {
                return Value::Null;
            };
            const PATTERN: &str = "yyyy-MM-dd HH:mm:ss";
            match functions::parse_with_pattern(&s, PATTERN, false) {
                Some(ms) => string(functions::date_format(
                    crate::zone::convert(ms, &from, &to),
                    PATTERN,
                )),
                None => Value::Null,
            }
        }
        Func::Overlay => {
            let (Value::Str(s), Value::Str(r), Some(from)) = (arg(0), arg(1), int(2)) else {
                return Value::Null;
            };
            let len = match args.get(3) {
                Some(_) => match int(3) {
                    Some(n) => n,
                    None => return Value::Null,
                },
                None => r.chars().count() as i64,
            };
            string(functions::overlay(&s, &r, from, len))
        }
        Func::Bin => match int(0) {
            Some(n) => string(format!("{n:b}")),
            None => Value::Null,
        },
        Func::Hex => match arg(0) {
            Value::Str(s) => string(s.bytes().map(|b| format!("{b:02X}")).collect()),
            v => match v.as_i64() {
                Some(n) => string(format!("{n:X}")),
                None => Value::Null,
            },
        },
        // Flink's: the first UTF-8 byte, as a signed Java byte (`é` is -61).
        Func::Ascii => match arg(0) {
            Value::Str(s) => Value::Int(s.as_bytes().first().map_or(0, |&b| i32::from(b as i8))),
            _ => Value::Null,
        },
        Func::Chr => match int(0) {
            Some(n) if n < 0 => Value::Str("".into()),
            Some(n) => Value::Str(char::from((n & 0xFF) as u8).to_string().into()),
            None => Value::Null,
        },
        Func::Now(kind) => {
            let ms = now_ms();
            match kind {
                NowKind::Timestamp => Value::Timestamp(ms),
                NowKind::Date => Value::Date(ms.div_euclid(DAY_MS) as i32),
                NowKind::UnixSeconds => Value::BigInt(ms.div_euclid(1000)),
            }
        }
        Func::UnixTimestamp(p) => match arg(0) {
            Value::Str(s) => Value::BigInt(
                // Java's long division: toward zero.
                functions::parse_with_pattern(&s, p, false).map_or(i64::MIN, |ms| ms / 1000),
            ),
            _ => Value::Null,
        },
        // TO_DATE(s) takes a timestamp's text too (the date before the
        // blank), as Flink's `DateTimeUtils.parseDate`.
        Func::ParseTime(p, true) if p.is_empty() => match arg(0) {
            Value::Str(s) => {
                let day = s.trim().split(' ').next().unwrap_or("");
                parse_date(day).map_or(Value::Null, Value::Date)
            }
            _ => Value::Null,
        },
        // TO_DATE(s, pattern): Java's lenient `SimpleDateFormat`, as
        // UNIX_TIMESTAMP.
        Func::ParseTime(p, true) => match arg(0) {
            Value::Str(s) => match functions::parse_with_pattern(&s, p, false) {
                Some(ms) => Value::Date(ms.div_euclid(DAY_MS) as i32),
                None => Value::Null,
            },
            _ => Value::Null,
        },
        // TO_TIMESTAMP(s, pattern): Java's strict `DateTimeFormatter`, and
        // when that fails Flink's fallback to `yyyy-M-d[ H:m:s[.f]]`.
        Func::ParseTime(p, false) => match arg(0) {
            Value::Str(s) => functions::parse_with_pattern(&s, p, true)
                .or_else(|| parse_timestamp(&s))
                .map_or(Value::Null, Value::Timestamp),
            _ => Value::Null,
        },
        Func::FromUnixtime(p) => match int(0) {
            Some(secs) => match secs.checked_mul(1000) {
                Some(ms) => string(functions::date_format(ms, p)),
                None => Value::Null,
            },
            None => Value::Null,
        },
        Func::TimestampAdd(unit) => {
            let Some(n) = int(0) else {
                return Value::Null;
            };
            let (t, date) = match arg(1) {
                Value::Timestamp(t) => (t, false),
                Value::Date(d) => (i64::from(d) * DAY_MS, true),
                _ => return Value::Null,
            };
            let out = match unit {
                CalUnit::Fixed(u) => t.saturating_add(n.saturating_mul(*u)),
                CalUnit::Months(m) => functions::add_months(t, n.saturating_mul(*m)),
            };
            if date && ty == DataType::Date {
                Value::Date(out.div_euclid(DAY_MS) as i32)
            } else {
                Value::Timestamp(out)
            }
        }
        Func::TimestampDiff(unit) => {
            let ms = |v: Value| match v {
                Value::Timestamp(t) => Some(t),
                Value::Date(d) => Some(i64::from(d) * DAY_MS),
                _ => None,
            };
            let (Some(a), Some(b)) = (ms(arg(0)), ms(arg(1))) else {
                return Value::Null;
            };
            Value::Int(match unit {
                CalUnit::Fixed(u) => (b.saturating_sub(a) / u) as i32,
                CalUnit::Months(m) => (functions::subtract_months(b, a) / m) as i32,
            })
        }
        _ => Value::Null,
    }
}

/// The common type of two numeric operands (Flink's widening).
pub fn numeric_common(a: DataType, b: DataType) -> Option<DataType> {
    use DataType::*;
    Some(match (a, b) {
        (Double, x) | (x, Double) if x.is_numeric() => Double,
        (Float, Int | BigInt | Float) | (Int | BigInt, Float) => Float,
        (Float, Decimal { .. }) | (Decimal { .. }, Float) => Double,
        (
            Decimal {
                precision: p1,
                scale: s1,
            },
            Decimal {
                precision: p2,
                scale: s2,
            },
        ) => Decimal {
            precision: p1.max(p2).min(38),
            scale: s1.max(s2),
        },
        (Decimal { precision, scale }, Int | BigInt)
        | (Int | BigInt, Decimal { precision, scale }) => Decimal {
            precision: precision.clamp(19, 38),
            scale,
        },
        (BigInt, Int | BigInt) | (Int, BigInt) => BigInt,
        (Int, Int) => Int,
        _ => return None,
    })
}

/// A number's precision and scale as a DECIMAL operand (Flink's: an INT
/// is DECIMAL(10, 0), a BIGINT DECIMAL(19, 0); weir's TINYINT and
/// SMALLINT are INTs).
fn decimal_shape(t: DataType) -> (i32, i32) {
    match t {
        DataType::Decimal { precision, scale } => (i32::from(precision), i32::from(scale)),
        DataType::BigInt => (19, 0),
        _ => (10, 0),
    }
}

/// The type of a DECIMAL quotient, as Flink's
/// `LogicalTypeMerging.findDivisionDecimalType`: scale `max(6, s1 + p2 +
/// 1)`, precision `p1 - s1 + s2 + scale`; past 38 digits the precision is
/// 38 and the scale gives way to the integer digits, down to
/// `min(scale, 6)`.
fn decimal_quotient(a: DataType, b: DataType) -> DataType {
    let ((p1, s1), (p2, s2)) = (decimal_shape(a), decimal_shape(b));
    let scale = (s1 + p2 + 1).max(6);
    bounded_decimal(p1 - s1 + s2 + scale, scale)
}

/// DECIMAL(`precision`, `scale`) within 38 digits, as Flink's
/// `LogicalTypeMerging.adjustPrecisionScale`: past 38 the scale gives way to
/// the integer digits, down to `min(scale, 6)`.
fn bounded_decimal(precision: i32, scale: i32) -> DataType {
    let (precision, scale) = if precision <= 38 {
        (precision, scale)
    } else {
        (38, (38 - (precision - scale)).max(scale.min(6)))
    };
    DataType::Decimal {
        precision: precision as u8,
        scale: scale as u8,
    }
}

/// The type of a DECIMAL product, as Flink's
/// `LogicalTypeMerging.findMultiplicationDecimalType`: precision `p1 +
/// p2 + 1`, scale `s1 + s2`; past 38 digits the precision is 38 and the
/// scale gives way to the integer digits, down to `min(scale, 6)`.
fn decimal_product(a: DataType, b: DataType) -> DataType {
    let ((p1, s1), (p2, s2)) = (decimal_shape(a), decimal_shape(b));
    bounded_decimal(p1 + p2 + 1, s1 + s2)
}

/// The type of a DECIMAL sum or difference, as Flink's
/// `LogicalTypeMerging.findAdditionDecimalType`: scale `max(s1, s2)`,
/// precision the larger integer digits plus that scale plus 1; past 38
/// digits the scale gives way as for a product (`DECIMAL(38, 10) +
/// DECIMAL(20, 0)` is `DECIMAL(38, 9)`).
fn decimal_sum(a: DataType, b: DataType) -> DataType {
    let ((p1, s1), (p2, s2)) = (decimal_shape(a), decimal_shape(b));
    let scale = s1.max(s2);
    bounded_decimal((p1 - s1).max(p2 - s2) + scale + 1, scale)
}

fn arith(op: Arith, a: &Value, ta: DataType, b: &Value, tb: DataType, ty: DataType) -> Value {
    if a.is_null() || b.is_null() {
        return Value::Null;
    }
    match ty {
        DataType::Int => {
            let (x, y) = (
                a.as_i64().unwrap_or(0) as i32,
                b.as_i64().unwrap_or(0) as i32,
            );
            match op {
                Arith::Add => Value::Int(x.wrapping_add(y)),
                Arith::Sub => Value::Int(x.wrapping_sub(y)),
                Arith::Mul => Value::Int(x.wrapping_mul(y)),
                Arith::Div if y == 0 => Value::Null,
                Arith::Div => Value::Int(x.wrapping_div(y)),
                Arith::Mod if y == 0 => Value::Null,
                Arith::Mod => Value::Int(x.wrapping_rem(y)),
            }
        }
        DataType::BigInt => {
            let (x, y) = (a.as_i64().unwrap_or(0), b.as_i64().unwrap_or(0));
            match op {
                Arith::Add => Value::BigInt(x.wrapping_add(y)),
                Arith::Sub => Value::BigInt(x.wrapping_sub(y)),
                Arith::Mul => Value::BigInt(x.wrapping_mul(y)),
                Arith::Div if y == 0 => Value::Null,
                Arith::Div => Value::BigInt(x.wrapping_div(y)),
                Arith::Mod if y == 0 => Value::Null,
                Arith::Mod => Value::BigInt(x.wrapping_rem(y)),
            }
        }
        DataType::Double => {
            let (Some(x), Some(y)) = (a.to_f64(ta.scale()), b.to_f64(tb.scale())) else {
                return Value::Null;
            };
            Value::Double(match op {
                Arith::Add => x + y,
                Arith::Sub => x - y,
                Arith::Mul => x * y,
                Arith::Div => x / y,
                Arith::Mod => x % y,
            })
        }
        // FLOAT arithmetic in `f32`, as Java's on floats.
        DataType::Float => {
            let (Some(x), Some(y)) = (a.to_f64(ta.scale()), b.to_f64(tb.scale())) else {
                return Value::Null;
            };
            let (x, y) = (x as f32, y as f32);
            Value::float(match op {
                Arith::Add => x + y,
                Arith::Sub => x - y,
                Arith::Mul => x * y,
                Arith::Div => x / y,
                Arith::Mod => x % y,
            })
        }
        DataType::Decimal { precision, scale } => {
            let r = match op {
                Arith::Add | Arith::Sub | Arith::Mod => {
                    // Exactly at the operands' larger scale, then rounded
                    // half up to the result's (smaller past 38 digits), as
                    // Flink's BigDecimal sum.
                    let exact = ta.scale().max(tb.scale()).max(scale);
                    let (Some(x), Some(y)) = (
                        a.to_scaled(ta.scale(), exact),
                        b.to_scaled(tb.scale(), exact),
                    ) else {
                        return Value::Null;
                    };
                    match op {
                        Arith::Add => x.checked_add(y),
                        Arith::Sub => x.checked_sub(y),
                        _ => x.checked_rem(y),
                    }
                    .and_then(|r| rescale(r, exact, scale))
                }
                Arith::Mul => {
                    let (Some(x), Some(y)) = (
                        a.to_scaled(ta.scale(), ta.scale()),
                        b.to_scaled(tb.scale(), tb.scale()),
                    ) else {
                        return Value::Null;
                    };
                    mul_rescale(x, y, ta.scale() + tb.scale(), scale)
                }
                Arith::Div => {
                    let (Some(x), Some(y)) = (
                        a.to_scaled(ta.scale(), ta.scale()),
                        b.to_scaled(tb.scale(), tb.scale()),
                    ) else {
                        return Value::Null;
                    };
                    if y == 0 {
                        None
                    } else {
                        // x / y at `scale`: x * 10^(scale + sb - sa) / y, rounded.
                        let shift =
                            i32::from(scale) + i32::from(tb.scale()) - i32::from(ta.scale());
                        if shift >= 0 {
                            match 10i128
                                .checked_pow(shift as u32 + 1)
                                .and_then(|t| x.checked_mul(t))
                            {
                                Some(n) => {
                                    let q = n / y;
                                    Some((q + q.signum() * 5) / 10)
                                }
                                // Past an i128 (a large dividend at a large
                                // scale): in 256 bits, as Flink's BigDecimal
                                // quotient is exact before its rounding.
                                None => div_rescale(x, y, shift as u32),
                            }
                        } else {
                            let n = x / 10i128.pow((-shift) as u32) * 10;
                            let q = n / y;
                            Some((q + q.signum() * 5) / 10)
                        }
                    }
                }
            };
            // More digits than the result type holds (past 38) is NULL, as
            // Flink's `DecimalData.fromBigDecimal` makes it.
            r.filter(|&r| fits(r, precision))
                .map_or(Value::Null, Value::decimal)
        }
        DataType::Timestamp | DataType::TimestampLtz => match (a, b) {
            (Value::Timestamp(t), Value::Interval(i))
            | (Value::Interval(i), Value::Timestamp(t)) => match op {
                Arith::Add => Value::Timestamp(t.saturating_add(*i)),
                Arith::Sub => Value::Timestamp(t.saturating_sub(*i)),
                _ => Value::Null,
            },
            _ => Value::Null,
        },
        DataType::Date => match (a, b) {
            (Value::Date(d), Value::Interval(i)) => {
                let days = i / DAY_MS;
                Value::Date(match op {
                    Arith::Add => d.saturating_add(days as i32),
                    _ => d.saturating_sub(days as i32),
                })
            }
            _ => Value::Null,
        },
        DataType::Interval => match (a.as_i64(), b.as_i64()) {
            (Some(x), Some(y)) => match op {
                Arith::Add => Value::Interval(x.saturating_add(y)),
                Arith::Sub => Value::Interval(x.saturating_sub(y)),
                Arith::Mul => Value::Interval(x.saturating_mul(y)),
                Arith::Div if y != 0 => Value::Interval(x / y),
                _ => Value::Null,
            },
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

/// `v` of type `from` as a value of type `to` where the planner widened
/// (numbers, NULL); other values unchanged.
pub fn coerce(v: Value, from: DataType, to: DataType) -> Value {
    if from == to || v.is_null() {
        return v;
    }
    cast(v, from, to)
}

/// TRY_CAST: NULL when the value does not convert. CAST differs only for
/// text that does not parse ([`strict_cast`]).
pub fn cast(v: Value, from: DataType, to: DataType) -> Value {
    use DataType as T;
    if v.is_null() {
        return Value::Null;
    }
    if let (Value::Str(s), false) = (&v, to == T::String) {
        return cast_text(s, to).unwrap_or(Value::Null);
    }
    // TRUE is 1 and FALSE 0 in every numeric type (Flink's
    // `BooleanToNumericCastRule`: DECIMAL, FLOAT and DOUBLE too).
    if let (Value::Bool(b), true) = (&v, to.is_numeric()) {
        return cast(Value::Int(i32::from(*b)), T::Int, to);
    }
    match to {
        T::String => match v {
            Value::Str(s) => Value::Str(s),
            // Flink's (since 1.15): upper case, as SQL writes the literals.
            Value::Bool(b) => Value::Str(if b { "TRUE" } else { "FALSE" }.into()),
            other => Value::Str(other.display(from).into()),
        },
        // A number is TRUE unless it is zero (Flink's
        // `NumericToBooleanCastRule`, DECIMALs and floats too).
        T::Boolean => match v {
            Value::Bool(b) => Value::Bool(b),
            Value::Double(d) => Value::Bool(d != 0.0),
            Value::Decimal(x) => Value::Bool(x.get() != 0),
            other => other.as_i64().map_or(Value::Null, |i| Value::Bool(i != 0)),
        },
        // As Java's narrowing casts, which Flink's generated code makes: an
        // integer (and a DECIMAL's integer part, `BigDecimal.longValue`)
        // keeps its low bits, wrapping around; a DOUBLE saturates at the
        // type's bounds and NaN is 0.
        T::Int | T::BigInt => {
            let i: Option<i64> = match &v {
                Value::Double(d) if to == T::Int => Some(i64::from(*d as i32)),
                Value::Double(d) => Some(*d as i64),
                Value::Decimal(x) => Some((x.get() / 10i128.pow(u32::from(from.scale()))) as i64),
                Value::Bool(b) => Some(i64::from(*b)),
                Value::Int(_) | Value::BigInt(_) => v.as_i64(),
                _ => None,
            };
            match (to, i) {
                (T::Int, Some(i)) => Value::Int(i as i32),
                (_, Some(i)) => Value::BigInt(i),
                _ => Value::Null,
            }
        }
        T::Double => v.to_f64(from.scale()).map_or(Value::Null, Value::Double),
        T::Float => v
            .to_f64(from.scale())
            .map_or(Value::Null, |d| Value::float(d as f32)),
        T::Decimal { precision, scale } => {
            let x = match &v {
                // (a FLOAT as the double it widens to, as Flink's
                // `castFrom(double ..)` takes it)
                Value::Double(d) => decimal_of_double(*d, scale),
                other => other.to_scaled(from.scale(), scale),
            };
            match x {
                Some(x) if fits(x, precision) => Value::decimal(x),
                _ => Value::Null,
            }
        }
        T::Timestamp | T::TimestampLtz => match v {
            Value::Timestamp(t) => Value::Timestamp(t),
            Value::Int(_) | Value::BigInt(_) if to == T::TimestampLtz => {
                v.as_i64().map_or(Value::Null, Value::Timestamp)
            }
            Value::Date(d) => Value::Timestamp(i64::from(d) * DAY_MS),
            _ => Value::Null,
        },
        T::Date => match v {
            Value::Date(d) => Value::Date(d),
            Value::Timestamp(t) => Value::Date(t.div_euclid(DAY_MS) as i32),
            _ => Value::Null,
        },
        T::Interval => match v {
            Value::Interval(i) => Value::Interval(i),
            _ => Value::Null,
        },
    }
}

/// CAST: as [`cast`], but text that does not parse as the target type
/// fails the task (and so the job, as the restart strategy decides), as
/// Flink's CAST does; its TRY_CAST gives NULL.
pub fn strict_cast(v: Value, from: DataType, to: DataType) -> Value {
    match &v {
        Value::Str(s) if to != DataType::String => cast_text(s, to).unwrap_or_else(|why| {
            weir_runtime::fail_task(format!(
                "CAST('{}' AS {to}) failed: {why} (TRY_CAST gives NULL instead)",
                s.replace('\'', "''")
            ))
        }),
        _ => cast(v, from, to),
    }
}

/// Text as a value of type `to` (not STRING), as Flink's casts from
/// STRING read it: surrounding white space ignored; an integer may have a
/// fraction, cut off (`'1.9'` is 1); a boolean is `true`/`t`/`yes`/`y`/`1`
/// or `false`/`f`/`no`/`n`/`0` in any case. `Err` says why text does not
/// parse; a DECIMAL too wide for its precision is NULL, as before.
fn cast_text(s: &str, to: DataType) -> Result<Value, &'static str> {
    use DataType as T;
    let t = s.trim();
    match to {
        T::Boolean => match t.to_ascii_lowercase().as_str() {
            "true" | "t" | "yes" | "y" | "1" => Ok(Value::Bool(true)),
            "false" | "f" | "no" | "n" | "0" => Ok(Value::Bool(false)),
            _ => Err("not a boolean"),
        },
        T::Int => {
            let i = parse_integer(t).ok_or("not an integer")?;
            i32::try_from(i)
                .map(Value::Int)
                .map_err(|_| "out of the range of INT")
        }
        T::BigInt => parse_integer(t)
            .map(Value::BigInt)
            .ok_or("not an integer in the range of BIGINT"),
        // As Java's Double.parseDouble / Float.parseFloat, which Flink's
        // cast calls (`1d`, `0x1p3` and `NaN` read; `inf` and `nan` not).
        T::Double => crate::strings::parse_java_double(t)
            .map(Value::Double)
            .ok_or("not a number"),
        T::Float => crate::strings::parse_java_float(t)
            .map(Value::float)
            .ok_or("not a number"),
        T::Decimal { precision, scale } => {
            let x = read_decimal(t, scale).ok_or("not a decimal number")?;
            Ok(match x {
                Some(x) if fits(x, precision) => Value::decimal(x),
                _ => Value::Null,
            })
        }
        T::Timestamp | T::TimestampLtz => parse_timestamp(s)
            .map(Value::Timestamp)
            .ok_or("not a timestamp (yyyy-MM-dd HH:mm:ss[.SSS])"),
        T::Date => crate::time::parse_date_leniently(s)
            .map(Value::Date)
            .ok_or("not a date (yyyy-MM-dd)"),
        T::String => Ok(Value::Str(s.into())),
        T::Interval => Err("no cast from STRING to INTERVAL"),
    }
}

/// An integer's text with an optional sign and an optional fraction that
/// is cut off (Flink's `BinaryStringDataUtil.toLong`); `None` for other
/// text or a value outside BIGINT.
fn parse_integer(t: &str) -> Option<i64> {
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    if !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    // `parse` takes the sign and refuses anything else: no digits, a sign
    // alone, overflow.
    int.parse::<i64>().ok()
}

/// A DOUBLE as an unscaled DECIMAL of `scale`, as Flink's cast: the
/// double's shortest decimal text that reads back as it (Java's
/// `BigDecimal.valueOf(double)`, Rust's `{}` of an `f64`), rounded half
/// up to the scale, so 0.1 is 0.1 at any scale rather than the binary
/// fraction's 0.1000000000000000055511.. . `None` for NaN, an infinity
/// and a number of more than 38 integer digits.
fn decimal_of_double(d: f64, scale: u8) -> Option<i128> {
    if !d.is_finite() {
        return None;
    }
    // Rust writes an f64 in positional notation, never with an exponent.
    let text = format!("{}", d.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let int = int.trim_start_matches('0');
    let keep = usize::from(scale);
    if int.len() + keep > 38 {
        return None;
    }
    let mut digits = String::with_capacity(int.len() + keep);
    digits.push_str(int);
    digits.extend(frac.chars().chain(std::iter::repeat('0')).take(keep));
    let mut v: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    // HALF_UP: the first digit cut off decides.
    if frac.as_bytes().get(keep).is_some_and(|&c| c >= b'5') {
        v += 1;
    }
    if v >= 10i128.pow(38) {
        return None;
    }
    Some(if d < 0.0 { -v } else { v })
}

/// Whether unscaled `x` has at most `precision` digits.
pub(crate) fn fits(x: i128, precision: u8) -> bool {
    // (10^38 is below u128's largest: DECIMAL(38)'s bound is checked too)
    precision > 38 || x.unsigned_abs() < 10u128.pow(u32::from(precision))
}

/// A decimal's text (`-12.345`, also with an exponent: `-1.5e2`, as
/// Java's `BigDecimal` and Flink's `BinaryStringDataUtil.toDecimal` read
/// it) as an unscaled value of `scale`, rounded half away from zero;
/// `None` for other text or more than 38 digits before the scale's end.
pub fn parse_decimal(s: &str, scale: u8) -> Option<i128> {
    read_decimal(s, scale).flatten()
}

/// As [`parse_decimal`], telling text that is no decimal number (`None`)
/// from a number with more than 38 digits before the scale's end
/// (`Some(None)`): Java's `BigDecimal` reads the latter, and Flink's
/// `DecimalData.fromBigDecimal` makes it NULL, in a CAST and in the CSV
/// and JSON formats alike, where the former fails.
pub fn read_decimal(s: &str, scale: u8) -> Option<Option<i128>> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(at) => (&s[..at], s[at + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let digits: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
    // The digits kept: those before the point (moved by the exponent)
    // and `scale` after it; the first one cut off rounds.
    let keep = int.len() as i64 + i64::from(exp) + i64::from(scale);
    let kept = &digits[..keep.clamp(0, digits.len() as i64) as usize];
    let kept = std::str::from_utf8(kept).ok()?.trim_start_matches('0');
    if kept.len() > 38 {
        return Some(None);
    }
    let mut v: i128 = if kept.is_empty() {
        0
    } else {
        kept.parse().ok()?
    };
    if keep > digits.len() as i64 {
        if v != 0 {
            let wider = u32::try_from(keep - digits.len() as i64)
                .ok()
                .and_then(|zeros| v.checked_mul(10i128.checked_pow(zeros)?));
            match wider {
                Some(w) => v = w,
                None => return Some(None),
            }
        }
    } else if usize::try_from(keep).is_ok_and(|k| digits.get(k).is_some_and(|&d| d >= b'5')) {
        v += 1;
    }
    Some(Some(if neg { -v } else { v }))
}

/// The error of a LIKE pattern with an escape character that is last or
/// followed by anything but `_`, `%` or itself, as Flink's (Calcite's
/// "Invalid escape sequence"); `at` is its 0-based character position.
fn bad_like_escape(pattern: &str, at: usize) -> String {
    format!(
        "LIKE: invalid escape sequence in the pattern '{}' at character {}: the ESCAPE character may only be followed by `_`, `%` or itself",
        pattern.replace('\'', "''"),
        at + 1
    )
}

/// How many milliseconds an interval literal's unit is.
pub fn unit_ms(field: &DateTimeField) -> Option<i64> {
    use DateTimeField as F;
    Some(match field {
        F::Millisecond | F::Milliseconds => 1,
        F::Second | F::Seconds => 1000,
        F::Minute | F::Minutes => 60_000,
        F::Hour | F::Hours => 3_600_000,
        F::Day | F::Days => DAY_MS,
        F::Week(_) | F::Weeks => 7 * DAY_MS,
        _ => return None,
    })
}

/// The calendar unit of FLOOR/CEIL(.. TO field), beyond a day.
fn calendar_unit(field: &DateTimeField) -> Option<functions::CalendarUnit> {
    use functions::CalendarUnit as C;
    use DateTimeField as F;
    Some(match field {
        F::Week(_) | F::Weeks => C::Week,
        F::Month | F::Months => C::Month,
        F::Quarter => C::Quarter,
        F::Year | F::Years => C::Year,
        F::Decade => C::Decade,
        F::Century => C::Century,
        F::Millenium | F::Millennium => C::Millennium,
        _ => return None,
    })
}

/// The EXTRACT unit of a field.
pub fn time_unit(field: &DateTimeField) -> Option<TimeUnit> {
    use DateTimeField as F;
    Some(match field {
        F::Year | F::Years => TimeUnit::Year,
        F::Quarter => TimeUnit::Quarter,
        F::Month | F::Months => TimeUnit::Month,
        F::Week(_) | F::Weeks => TimeUnit::Week,
        F::Day | F::Days => TimeUnit::Day,
        F::DayOfWeek | F::Dow => TimeUnit::DayOfWeek,
        F::DayOfYear | F::Doy => TimeUnit::DayOfYear,
        F::Isodow => TimeUnit::IsoDayOfWeek,
        F::Isoyear => TimeUnit::IsoYear,
        F::Decade => TimeUnit::Decade,
        F::Century => TimeUnit::Century,
        F::Millenium | F::Millennium => TimeUnit::Millennium,
        F::Hour | F::Hours => TimeUnit::Hour,
        F::Minute | F::Minutes => TimeUnit::Minute,
        F::Second | F::Seconds => TimeUnit::Second,
        F::Millisecond | F::Milliseconds => TimeUnit::Millisecond,
        F::Microsecond | F::Microseconds => TimeUnit::Microsecond,
        F::Nanosecond | F::Nanoseconds => TimeUnit::Nanosecond,
        F::Epoch => TimeUnit::Epoch,
        _ => return None,
    })
}

/// The length a CAST to `CHAR(n)` or `VARCHAR(n)` gives its text, and
/// whether it pads (CHAR): Flink's `CharVarCharTrimPadCastRule` (since
/// 1.15) cuts the text to `n` characters and pads a CHAR's with spaces.
/// `CHAR` alone is `CHAR(1)` (SQL's default, and Calcite's); `VARCHAR`
/// alone and `STRING` have no length.
fn cast_length(t: &ast::DataType) -> Option<(u64, bool)> {
    use ast::DataType as A;
    let length = |l: &Option<ast::CharacterLength>, default| match l {
        Some(ast::CharacterLength::IntegerLength { length, .. }) => Some(*length),
        Some(ast::CharacterLength::Max) => None,
        None => default,
    };
    match t {
        A::Char(l) | A::Character(l) => length(l, Some(1)).map(|n| (n, true)),
        A::Varchar(l) | A::CharVarying(l) | A::CharacterVarying(l) | A::Nvarchar(l) => {
            length(l, None).map(|n| (n, false))
        }
        _ => None,
    }
}

/// The precision a TIMESTAMP or TIMESTAMP_LTZ type names, if it does.
fn timestamp_precision(t: &ast::DataType) -> Option<u64> {
    match t {
        ast::DataType::Timestamp(p, _) | ast::DataType::Datetime(p) => *p,
        ast::DataType::Custom(name, args)
            if crate::script::object_name(name).eq_ignore_ascii_case("TIMESTAMP_LTZ") =>
        {
            args.first().and_then(|a| a.to_string().parse().ok())
        }
        _ => None,
    }
}

/// `text` cut to its first `n` characters and, with `pad`, padded with
/// spaces to `n` (see [`cast_length`]).
fn text_of_length(text: Scalar, n: u64, pad: bool) -> Scalar {
    let n = Scalar::Literal(
        Value::BigInt(i64::try_from(n).unwrap_or(i64::MAX)),
        DataType::BigInt,
    );
    if pad {
        let space = Scalar::Literal(Value::Str(" ".into()), DataType::String);
        Scalar::Call(Func::Pad(false), vec![text, n, space], DataType::String)
    } else {
        Scalar::Call(Func::LeftRight(true), vec![text, n], DataType::String)
    }
}

/// A SQL type as weir models it.
pub fn data_type(ty: &ast::DataType) -> Result<DataType> {
    use ast::DataType as A;
    Ok(match ty {
        A::Boolean | A::Bool => DataType::Boolean,
        A::TinyInt(_) | A::SmallInt(_) | A::Int(_) | A::Integer(_) => DataType::Int,
        A::BigInt(_) | A::Int64 => DataType::BigInt,
        A::Double(_) | A::Float64 | A::DoublePrecision => DataType::Double,
        A::Float(_) | A::Real | A::Float4 | A::Float32 => DataType::Float,
        A::Decimal(info) | A::Numeric(info) | A::Dec(info) => {
            let (p, s) = match info {
                ast::ExactNumberInfo::None => (10, 0),
                ast::ExactNumberInfo::Precision(p) => (*p, 0),
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, (*s).max(0) as u64),
            };
            if p == 0 || p > 38 || s > p {
                return Err(SqlError::Type(format!(
                    "DECIMAL({p}, {s}): precision must be 1..38 and scale at most the precision"
                )));
            }
            DataType::Decimal {
                precision: p as u8,
                scale: s as u8,
            }
        }
        A::String(_)
        | A::Varchar(_)
        | A::Char(_)
        | A::Text
        | A::CharVarying(_)
        | A::Character(_)
        | A::CharacterVarying(_)
        | A::Nvarchar(_) => DataType::String,
        A::Timestamp(p, tz) => {
            check_millis(*p)?;
            match tz {
                ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => DataType::TimestampLtz,
                _ => DataType::Timestamp,
            }
        }
        A::Datetime(p) => {
            check_millis(*p)?;
            DataType::Timestamp
        }
        A::Date => DataType::Date,
        A::Interval { .. } => DataType::Interval,
        A::Custom(name, args) => {
            let n = crate::script::object_name(name).to_ascii_uppercase();
            match n.as_str() {
                "TIMESTAMP_LTZ" => {
                    let p = args.first().and_then(|a| a.to_string().parse::<u64>().ok());
                    check_millis(p)?;
                    DataType::TimestampLtz
                }
                "STRING" => DataType::String,
                _ => return Err(SqlError::Type(format!("unknown type `{ty}`"))),
            }
        }
        other => return Err(SqlError::Unsupported(format!("the type `{other}`"))),
    })
}

fn check_millis(p: Option<u64>) -> Result<()> {
    match p {
        None | Some(3) => Ok(()),
        Some(p) if p < 3 => Ok(()),
        Some(p) => Err(SqlError::Unsupported(format!(
            "TIMESTAMP({p}): weir keeps milliseconds, TIMESTAMP(3)"
        ))),
    }
}

/// What a compiler consults before the ordinary rules: the aggregate
/// planner maps group keys and aggregate calls to its output's columns.
pub type Hook<'a> = &'a mut dyn FnMut(&Expr) -> Result<Option<Scalar>>;

/// Compiles `e` in `scope`.
pub fn compile(e: &Expr, scope: &Scope) -> Result<Scalar> {
    compile_with(e, scope, &mut |_| Ok(None))
}

/// How deeply expressions may nest (`a + a + .. + a` of that many terms,
/// that many nested calls): planning and evaluation recurse once per
/// level, so a deeper one is refused with an error rather than let
/// overflow a thread's stack.
pub const MAX_DEPTH: usize = 256;

std::thread_local! {
    static DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One level of [`compile_with`]'s recursion, counted while it lives.
struct Depth;

impl Depth {
    fn enter() -> Result<Self> {
        let d = DEPTH.with(|d| {
            d.set(d.get() + 1);
            d.get()
        });
        let guard = Depth;
        if d > MAX_DEPTH {
            return Err(SqlError::Unsupported(format!(
                "an expression nested more than {MAX_DEPTH} levels deep"
            )));
        }
        Ok(guard)
    }
}

impl Drop for Depth {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// Compiles `e` in `scope`, asking `hook` first at every node.
pub fn compile_with(e: &Expr, scope: &Scope, hook: Hook<'_>) -> Result<Scalar> {
    let _depth = Depth::enter()?;
    if let Some(s) = hook(e)? {
        return Ok(s);
    }
    let mut sub = |x: &Expr| compile_with(x, scope, hook);
    Ok(match e {
        Expr::Identifier(i) => {
            let c = scope.resolve(std::slice::from_ref(i))?;
            Scalar::Column(c, scope.cols[c].field.ty)
        }
        Expr::CompoundIdentifier(parts) => {
            let c = scope.resolve(parts)?;
            Scalar::Column(c, scope.cols[c].field.ty)
        }
        Expr::Nested(x) => sub(x)?,
        Expr::Value(v) => literal(&v.value)?,
        Expr::TypedString(ts) => {
            let ty = data_type(&ts.data_type)?;
            let text = ts.value.value.clone().into_string().unwrap_or_default();
            // Weir keeps milliseconds: a literal finer than that (Flink's
            // TIMESTAMP(6) or (9)) is refused rather than cut.
            if ty.is_timestamp() {
                let fraction = text.trim().rsplit_once('.').map_or("", |(_, f)| f);
                if fraction.len() > 3 && fraction[3..].bytes().any(|b| b != b'0') {
                    return Err(SqlError::Unsupported(format!(
                        "the literal {} '{text}' below milliseconds (weir's timestamps are TIMESTAMP(3))",
                        ts.data_type
                    )));
                }
            }
            let v = match ty {
                // A DATE literal is `yyyy-MM-dd` (a CAST reads text more
                // leniently).
                DataType::Date => crate::time::parse_date(&text).map_or(Value::Null, Value::Date),
                _ => cast(Value::Str(text.as_str().into()), DataType::String, ty),
            };
            if v.is_null() {
                return Err(SqlError::Type(format!(
                    "`{text}` is not a valid {ty} literal"
                )));
            }
            Scalar::Literal(v, ty)
        }
        Expr::Interval(iv) => {
            Scalar::Literal(Value::Interval(interval_ms(iv)?), DataType::Interval)
        }
        Expr::UnaryOp { op, expr } => {
            let a = sub(expr)?;
            match op {
                U::Not => {
                    expect_bool(&a, "NOT")?;
                    Scalar::Not(Box::new(a))
                }
                U::Minus => {
                    let t = a.ty();
                    if !t.is_numeric() && t != DataType::Interval {
                        return Err(SqlError::Type(format!("unary minus of {t}")));
                    }
                    Scalar::Neg(Box::new(a), t)
                }
                U::Plus => a,
                other => return Err(SqlError::Unsupported(format!("the operator `{other}`"))),
            }
        }
        Expr::BinaryOp { left, op, right } => {
            // A time ± a year-month interval: calendar months, as
            // TIMESTAMPADD(MONTH, ..) (Jan 31 + 1 month is Feb 28/29).
            let months = |x: &Expr| match x {
                Expr::Interval(iv) => year_month_interval(iv),
                _ => None,
            };
            match (op, months(left), months(right)) {
                (B::Plus | B::Minus, None, Some(m)) | (B::Plus, Some(m), None) => {
                    let t = sub(if months(right).is_some() { left } else { right })?;
                    let m = if *op == B::Minus { -m? } else { m? };
                    add_months_call(t, m)?
                }
                _ => {
                    let (a, b) = (sub(left)?, sub(right)?);
                    binary(op, a, b)?
                }
            }
        }
        Expr::IsJson {
            expr,
            kind,
            unique_keys,
            negated,
        } => {
            if let Some(u) = unique_keys {
                return Err(SqlError::Unsupported(format!("IS JSON .. {u}")));
            }
            let x = sub(expr)?;
            if x.ty() != DataType::String {
                return Err(SqlError::Type(format!(
                    "IS JSON takes a STRING, not a {}",
                    x.ty()
                )));
            }
            let kind = match kind {
                None | Some(ast::JsonPredicateType::Value) => json::JsonKind::Value,
                Some(ast::JsonPredicateType::Scalar) => json::JsonKind::Scalar,
                Some(ast::JsonPredicateType::Array) => json::JsonKind::Array,
                Some(ast::JsonPredicateType::Object) => json::JsonKind::Object,
            };
            Scalar::Call(Func::IsJson(kind, *negated), vec![x], DataType::Boolean)
        }
        Expr::IsNull(x) => Scalar::IsNull(Box::new(sub(x)?), false),
        Expr::IsNotNull(x) => Scalar::IsNull(Box::new(sub(x)?), true),
        Expr::IsTrue(x) => Scalar::IsBool(Box::new(sub(x)?), true, false),
        Expr::IsNotTrue(x) => Scalar::IsBool(Box::new(sub(x)?), true, true),
        Expr::IsFalse(x) => Scalar::IsBool(Box::new(sub(x)?), false, false),
        Expr::IsNotFalse(x) => Scalar::IsBool(Box::new(sub(x)?), false, true),
        Expr::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let x = sub(expr)?;
            let lo = binary(&B::GtEq, x.clone(), sub(low)?)?;
            let hi = binary(&B::LtEq, x, sub(high)?)?;
            let both = Scalar::And(Box::new(lo), Box::new(hi));
            if *negated {
                Scalar::Not(Box::new(both))
            } else {
                both
            }
        }
        Expr::In {
            expr,
            target: ast::InTarget::List(list),
            negated,
            ..
        } => {
            let x = sub(expr)?;
            let mut items = list.iter().map(&mut sub).collect::<Result<Vec<_>>>()?;
            // Text among the values of a number or a time is cast to its
            // type, as in a comparison (`qty IN ('1', '2')`).
            if !is_null_literal(&x) {
                let xt = x.ty();
                items = items
                    .into_iter()
                    .map(|i| text_compared_with(i, xt))
                    .collect::<Result<_>>()?;
            }
            // A NULL literal takes the type of what it is compared with.
            let ty = match items.iter().find(|i| !is_null_literal(i)) {
                Some(i) if is_null_literal(&x) => i.ty(),
                _ => x.ty(),
            };
            for i in &mut items {
                if is_null_literal(i) {
                    *i = Scalar::Literal(Value::Null, ty);
                } else if !is_null_literal(&x) {
                    comparable(x.ty(), i.ty(), "IN")?;
                }
            }
            let x = if is_null_literal(&x) {
                Scalar::Literal(Value::Null, ty)
            } else {
                x
            };
            // Dates among timestamps are compared as their midnights.
            let x = match items.iter().find(|i| i.ty().is_timestamp()) {
                Some(i) => on_time_line(x, i.ty()),
                None => x,
            };
            let xt = x.ty();
            let items = items.into_iter().map(|i| on_time_line(i, xt)).collect();
            Scalar::InList(Box::new(x), items, *negated)
        }
        Expr::Like {
            negated,
            expr,
            pattern,
            escape_char,
            any: false,
        } => {
            let (t, p) = (sub(expr)?, sub(pattern)?);
            if t.ty() != DataType::String || p.ty() != DataType::String {
                return Err(SqlError::Type(format!(
                    "LIKE needs STRING operands, got {} and {}",
                    t.ty(),
                    p.ty()
                )));
            }
            let esc = match escape_char.as_deref() {
                None => None,
                Some(Expr::Value(v)) => match &v.value {
                    ast::Value::SingleQuotedString(s) if s.chars().count() == 1 => s.chars().next(),
                    _ => return Err(SqlError::Type("LIKE's ESCAPE must be one character".into())),
                },
                Some(_) => {
                    return Err(SqlError::Type("LIKE's ESCAPE must be one character".into()))
                }
            };
            if let (Scalar::Literal(Value::Str(pat), _), Some(e)) = (&p, esc) {
                if let Some(at) = functions::like_bad_escape(pat, e) {
                    return Err(SqlError::Type(bad_like_escape(pat, at)));
                }
            }
            Scalar::Like(Box::new(t), Box::new(p), esc, *negated)
        }
        Expr::SimilarTo {
            negated,
            expr,
            pattern,
            escape_char,
        } => {
            let t = sub(expr)?;
            if t.ty() != DataType::String && !is_null_literal(&t) {
                return Err(SqlError::Type(format!(
                    "SIMILAR TO needs a STRING, got {}",
                    t.ty()
                )));
            }
            let p = match sub(pattern)? {
                Scalar::Literal(Value::Str(p), _) => p,
                _ => {
                    return Err(SqlError::Unsupported(
                        "SIMILAR TO a pattern that is not a string literal".into(),
                    ))
                }
            };
            let esc = match escape_char.as_deref() {
                None => None,
                Some(Expr::Value(v)) => match &v.value {
                    ast::Value::SingleQuotedString(s) if s.chars().count() == 1 => s.chars().next(),
                    _ => {
                        return Err(SqlError::Type(
                            "SIMILAR TO's ESCAPE must be one character".into(),
                        ))
                    }
                },
                Some(_) => {
                    return Err(SqlError::Type(
                        "SIMILAR TO's ESCAPE must be one character".into(),
                    ))
                }
            };
            let re = crate::similar::to_regex(&p, esc)
                .map_err(|e| SqlError::Unsupported(format!("SIMILAR TO: {e}")))
                .and_then(|r| {
                    regex::Regex::new(&r).map_err(|e| {
                        SqlError::Type(format!(
                            "SIMILAR TO: the pattern `{p}` does not compile: {e}"
                        ))
                    })
                })?;
            let m = Scalar::Call(Func::Similar(re), vec![t], DataType::Boolean);
            if *negated {
                Scalar::Not(Box::new(m))
            } else {
                m
            }
        }
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            let op = operand.as_deref().map(&mut sub).transpose()?;
            let mut whens = Vec::new();
            for w in conditions {
                let c = sub(&w.condition)?;
                let c = match &op {
                    Some(o) => binary(&B::Eq, o.clone(), c)?,
                    None => {
                        expect_bool(&c, "CASE WHEN")?;
                        c
                    }
                };
                whens.push((c, sub(&w.result)?));
            }
            let otherwise = else_result.as_deref().map(&mut sub).transpose()?;
            let mut ty: Option<DataType> = None;
            for r in whens.iter().map(|(_, r)| r).chain(otherwise.iter()) {
                if is_null_literal(r) {
                    continue;
                }
                ty = Some(match ty {
                    None => r.ty(),
                    Some(t) => least_common_type(t, r.ty()).ok_or_else(|| {
                        SqlError::Type(format!("CASE branches of {t} and {}", r.ty()))
                    })?,
                });
            }
            Scalar::Case(
                whens,
                otherwise.map(Box::new),
                ty.unwrap_or(DataType::String),
            )
        }
        Expr::Cast {
            kind,
            expr,
            data_type: t,
            ..
        } => {
            let a = sub(expr)?;
            let to = data_type(t)?;
            if !is_null_literal(&a) {
                crate::types::casts_explicitly(a.ty(), to).map_err(SqlError::Type)?;
            }
            let strict = match kind {
                CastKind::Cast | CastKind::DoubleColon => true,
                CastKind::TryCast => false,
                CastKind::SafeCast => {
                    return Err(SqlError::Unsupported(
                        "SAFE_CAST (BigQuery's; Flink's is TRY_CAST)".into(),
                    ))
                }
            };
            let cast = Scalar::Cast(Box::new(a), to, strict);
            if let Some(p) = timestamp_precision(t).filter(|&p| p < 3) {
                // TIMESTAMP(0..2): the value cut to that precision (its
                // type and text stay TIMESTAMP(3)'s).
                let unit = 10i64.pow(3 - p as u32);
                return Ok(Scalar::Call(Func::TruncateMillis(unit), vec![cast], to));
            }
            match cast_length(t) {
                Some((n, pad)) => text_of_length(cast, n, pad),
                None => cast,
            }
        }
        Expr::Extract { field, expr, .. } => {
            let a = sub(expr)?;
            let u = time_unit(field)
                .ok_or_else(|| SqlError::Unsupported(format!("EXTRACT({field} FROM ..)")))?;
            if !a.ty().is_timestamp() && a.ty() != DataType::Date {
                return Err(SqlError::Type(format!("EXTRACT from {}", a.ty())));
            }
            Scalar::Call(Func::Extract(u), vec![a], DataType::BigInt)
        }
        Expr::Floor { expr, field } | Expr::Ceil { expr, field } => {
            let ceil = matches!(e, Expr::Ceil { .. });
            let a = sub(expr)?;
            match field {
                ast::CeilFloorKind::DateTimeField(f)
                    if a.ty().is_timestamp() || a.ty() == DataType::Date =>
                {
                    let t = a.ty();
                    if let Some(unit) = calendar_unit(f) {
                        return Ok(Scalar::Call(Func::CalendarFloor(unit, ceil), vec![a], t));
                    }
                    if t == DataType::Date {
                        return Err(SqlError::Unsupported(format!(
                            "FLOOR/CEIL of a DATE to {f} (WEEK, MONTH, QUARTER and YEAR are)"
                        )));
                    }
                    let unit = unit_ms(f).ok_or_else(|| {
                        SqlError::Unsupported(format!(
                            "FLOOR/CEIL to {f} (DAY or finer, WEEK, MONTH, QUARTER and YEAR are)"
                        ))
                    })?;
                    Scalar::Call(Func::TimeFloor(unit, ceil), vec![a], t)
                }
                ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime)
                    if a.ty().is_numeric() =>
                {
                    let t = floor_type(a.ty());
                    Scalar::Call(Func::NumFloor(ceil), vec![a], t)
                }
                _ => return Err(SqlError::Unsupported(format!("`{e}`"))),
            }
        }
        Expr::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            let mut args = vec![sub(expr)?];
            args.push(match substring_from {
                Some(f) => sub(f)?,
                None => Scalar::Literal(Value::BigInt(1), DataType::BigInt),
            });
            if let Some(f) = substring_for {
                args.push(sub(f)?);
            }
            check_args("SUBSTRING", &args, &[Some(DataType::String), None, None])?;
            Scalar::Call(Func::Substring, args, DataType::String)
        }
        Expr::Trim {
            expr,
            trim_where: None,
            trim_what: None,
            trim_characters: None,
        } => {
            let args = vec![sub(expr)?];
            check_args("TRIM", &args, &[Some(DataType::String)])?;
            Scalar::Call(Func::Trim, args, DataType::String)
        }
        Expr::Trim {
            expr,
            trim_where,
            trim_what,
            trim_characters: None,
        } => {
            let (leading, trailing) = match trim_where {
                Some(ast::TrimWhereField::Leading) => (true, false),
                Some(ast::TrimWhereField::Trailing) => (false, true),
                _ => (true, true),
            };
            let mut args = vec![sub(expr)?];
            if let Some(w) = trim_what {
                args.push(sub(w)?);
            }
            check_args(
                "TRIM",
                &args,
                &[Some(DataType::String), Some(DataType::String)],
            )?;
            Scalar::Call(Func::TrimChars(leading, trailing), args, DataType::String)
        }
        Expr::Overlay {
            expr,
            overlay_what,
            overlay_from,
            overlay_for,
        } => {
            let mut args = vec![sub(expr)?, sub(overlay_what)?, sub(overlay_from)?];
            if let Some(n) = overlay_for {
                args.push(sub(n)?);
            }
            check_args(
                "OVERLAY",
                &args,
                &[Some(DataType::String), Some(DataType::String)],
            )?;
            want("OVERLAY", &args, 2, Want::Integer)?;
            want("OVERLAY", &args, 3, Want::Integer)?;
            Scalar::Call(Func::Overlay, args, DataType::String)
        }
        Expr::IsDistinctFrom(a, b) | Expr::IsNotDistinctFrom(a, b) => {
            let not = matches!(e, Expr::IsNotDistinctFrom(..));
            let (a, b) = (sub(a)?, sub(b)?);
            if !is_null_literal(&a) && !is_null_literal(&b) {
                comparable(a.ty(), b.ty(), "IS DISTINCT FROM")?;
            }
            Scalar::Call(Func::Distinct(not), vec![a, b], DataType::Boolean)
        }
        Expr::IsUnknown(x) | Expr::IsNotUnknown(x) => {
            let a = sub(x)?;
            expect_bool(&a, "IS UNKNOWN")?;
            Scalar::IsNull(Box::new(a), matches!(e, Expr::IsNotUnknown(_)))
        }
        Expr::RLike {
            negated,
            expr,
            pattern,
            ..
        } => {
            let args = vec![sub(expr)?, sub(pattern)?];
            let m = regexp_call("REGEXP", args, Func::RegexpMatch, DataType::Boolean)?;
            if *negated {
                Scalar::Not(Box::new(m))
            } else {
                m
            }
        }
        Expr::Position { expr, r#in } => {
            let args = vec![sub(expr)?, sub(r#in)?];
            check_args(
                "POSITION",
                &args,
                &[Some(DataType::String), Some(DataType::String)],
            )?;
            Scalar::Call(Func::Position, args, DataType::Int)
        }
        Expr::Function(f) => function(f, &mut sub)?,
        other => return Err(SqlError::Unsupported(format!("the expression `{other}`"))),
    })
}

/// FLOOR's and CEIL's type: a DECIMAL loses its scale.
fn floor_type(t: DataType) -> DataType {
    match t {
        DataType::Decimal { precision, scale } => DataType::Decimal {
            precision: (precision - scale + u8::from(scale > 0)).clamp(1, 38),
            scale: 0,
        },
        t => t,
    }
}

/// ROUND's and TRUNCATE's type for `digits` digits, as Flink's
/// (`LogicalTypeMerging.findRoundDecimalType`): a DECIMAL(p, s) becomes
/// DECIMAL(1 + p - s + d, d) when d < s (one more digit for the carry),
/// DECIMAL(1 + p - s, 0) for a negative d; other types are kept.
fn round_type(t: DataType, digits: i32) -> DataType {
    match t {
        DataType::Decimal { precision, scale } if digits < i32::from(scale) => {
            let (p, s) = (i32::from(precision), i32::from(scale));
            let (p, s) = if digits < 0 {
                (1 + p - s, 0)
            } else {
                (1 + p - s + digits, digits)
            };
            DataType::Decimal {
                precision: p.clamp(1, 38) as u8,
                scale: s as u8,
            }
        }
        t => t,
    }
}

/// A call of a regular-expression function whose pattern is argument 2:
/// a literal pattern is compiled now, and one Rust's `regex` does not
/// take is an error naming it.
fn regexp_call(
    name: &str,
    args: Vec<Scalar>,
    make: impl FnOnce(Option<regex::Regex>) -> Func,
    ty: DataType,
) -> Result<Scalar> {
    check_args(
        name,
        &args,
        &[Some(DataType::String), Some(DataType::String)],
    )?;
    let compiled = match &args[1] {
        Scalar::Literal(Value::Str(p), _) => Some(functions::java_regex(p).map_err(|e| {
            SqlError::Type(format!(
                "{name}: the pattern `{p}` is not one weir reads (Rust's `regex` has no backreferences and no look-around): {e}"
            ))
        })?),
        _ => None,
    };
    Ok(Scalar::Call(make(compiled), args, ty))
}

/// The value of an integer literal (`-2` too): `Some(None)` for NULL,
/// `None` if it is not a literal.
fn constant_int(s: &Scalar) -> Option<Option<i64>> {
    match s {
        Scalar::Literal(v, _) => Some(v.as_i64()),
        Scalar::Neg(a, _) => constant_int(a).map(|v| v.map(i64::wrapping_neg)),
        _ => None,
    }
}

/// What an argument of a function must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    /// INT, BIGINT, DOUBLE or DECIMAL.
    Number,
    /// INT or BIGINT.
    Integer,
    /// STRING.
    Text,
}

impl Want {
    fn admits(self, t: DataType) -> bool {
        match self {
            Want::Number => t.is_numeric(),
            Want::Integer => matches!(t, DataType::Int | DataType::BigInt),
            Want::Text => t == DataType::String,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Want::Number => "a number",
            Want::Integer => "an integer",
            Want::Text => "a STRING",
        }
    }
}

/// Argument `i` of `name` (if there is one) as `what` wants: an error
/// naming the function and the argument if not (a NULL literal passes).
fn want(name: &str, args: &[Scalar], i: usize, what: Want) -> Result<()> {
    match args.get(i) {
        Some(a) if !is_null_literal(a) && !what.admits(a.ty()) => Err(SqlError::Type(format!(
            "{name}: argument {} must be {}, got {}",
            i + 1,
            what.name(),
            a.ty()
        ))),
        _ => Ok(()),
    }
}

/// A string literal argument (a pattern), if it is one.
fn literal_text(name: &str, args: &[Scalar], i: usize, default: &str) -> Result<Arc<str>> {
    match args.get(i) {
        None => Ok(Arc::from(default)),
        Some(Scalar::Literal(Value::Str(p), _)) => Ok(Arc::from(p.as_str())),
        Some(_) => Err(SqlError::Unsupported(format!(
            "{name} with a pattern (argument {}) that is not a string literal",
            i + 1
        ))),
    }
}

fn is_null_literal(s: &Scalar) -> bool {
    matches!(s, Scalar::Literal(Value::Null, _))
}

fn expect_bool(s: &Scalar, what: &str) -> Result<()> {
    if s.ty() == DataType::Boolean || is_null_literal(s) {
        Ok(())
    } else {
        Err(SqlError::Type(format!(
            "{what} needs a BOOLEAN, got {}",
            s.ty()
        )))
    }
}

fn check_args(name: &str, args: &[Scalar], want: &[Option<DataType>]) -> Result<()> {
    for (i, (a, w)) in args.iter().zip(want).enumerate() {
        match w {
            Some(t) if a.ty() != *t && !is_null_literal(a) => {
                return Err(SqlError::Type(format!(
                    "{name}: argument {} must be {t}, got {}",
                    i + 1,
                    a.ty()
                )))
            }
            None if i > 0 && !a.ty().is_numeric() && !is_null_literal(a) => {
                return Err(SqlError::Type(format!(
                    "{name}: argument {} must be a number, got {}",
                    i + 1,
                    a.ty()
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The common type of `args` (GREATEST, IF's branches): NULL literals
/// fit any.
fn common_of(name: &str, args: &[Scalar]) -> Result<DataType> {
    let mut ty: Option<DataType> = None;
    for a in args.iter().filter(|a| !is_null_literal(a)) {
        ty = Some(match ty {
            None => a.ty(),
            Some(t) => least_common_type(t, a.ty())
                .ok_or_else(|| SqlError::Type(format!("{name} of {t} and {}", a.ty())))?,
        });
    }
    Ok(ty.unwrap_or(DataType::String))
}

/// A date pattern's letters: those DATE_FORMAT takes.
fn check_pattern(name: &str, p: &str) -> Result<()> {
    functions::check_pattern(p).map_err(|e| SqlError::Type(format!("{name}: {e}")))
}

/// [`check_pattern`] for a pattern that reads text.
fn check_parse_pattern(name: &str, p: &str) -> Result<()> {
    functions::check_parse_pattern(p).map_err(|e| SqlError::Type(format!("{name}: {e}")))
}

fn comparable(a: DataType, b: DataType, what: &str) -> Result<()> {
    if least_common_type(a, b).is_some()
        || (a == DataType::Date && b.is_timestamp())
        || (a.is_timestamp() && b == DataType::Date)
    {
        Ok(())
    } else {
        Err(SqlError::Type(format!("{what} of {a} and {b}")))
    }
}

/// `s` as a TIMESTAMP when it is a DATE compared with a timestamp (of
/// type `other`): its midnight, as Flink casts it; else `s` as it is.
/// (Compared as they are, a date's days would meet a timestamp's
/// milliseconds.)
fn on_time_line(s: Scalar, other: DataType) -> Scalar {
    if s.ty() == DataType::Date && other.is_timestamp() && !is_null_literal(&s) {
        Scalar::Cast(Box::new(s), DataType::Timestamp, false)
    } else {
        s
    }
}

/// `s` cast to `other` when it is text compared with a number, a date or
/// a timestamp: Calcite's implicit coercion of a comparison, which
/// Flink's planner applies (`ts > '2024-01-01 00:00:00'`, `d = '2024-01-31'`,
/// `qty = '7'`); text that does not parse fails as its CAST does. Else
/// `s` as it is.
fn text_compared_with(s: Scalar, other: DataType) -> Result<Scalar> {
    let castable = other.is_numeric() || other.is_timestamp() || other == DataType::Date;
    if s.ty() != DataType::String || !castable || is_null_literal(&s) {
        return Ok(s);
    }
    // A literal is cast now: text that does not parse is a planning error.
    if let Scalar::Literal(Value::Str(text), _) = &s {
        return cast_text(text, other)
            .map(|v| Scalar::Literal(v, other))
            .map_err(|why| SqlError::Type(format!("'{text}' compared with {other}: {why}")));
    }
    Ok(Scalar::Cast(Box::new(s), other, true))
}

pub(crate) fn binary(op: &B, a: Scalar, b: Scalar) -> Result<Scalar> {
    let cmp = |c: Cmp, a: Scalar, b: Scalar| -> Result<Scalar> {
        let (ta, tb) = (a.ty(), b.ty());
        let (a, b) = (text_compared_with(a, tb)?, text_compared_with(b, ta)?);
        if !is_null_literal(&a) && !is_null_literal(&b) {
            comparable(a.ty(), b.ty(), "comparison")?;
        }
        let (ta, tb) = (a.ty(), b.ty());
        let (a, b) = (on_time_line(a, tb), on_time_line(b, ta));
        Ok(Scalar::Cmp(c, Box::new(a), Box::new(b)))
    };
    let ar = |o: Arith, a: Scalar, b: Scalar| -> Result<Scalar> {
        let (ta, tb) = (a.ty(), b.ty());
        let ty = if ta.is_numeric() && tb.is_numeric() {
            let t = numeric_common(ta, tb).expect("numbers widen");
            match (o, t) {
                (Arith::Add | Arith::Sub, DataType::Decimal { .. }) => decimal_sum(ta, tb),
                (Arith::Mul, DataType::Decimal { .. }) => decimal_product(ta, tb),
                (Arith::Div, DataType::Decimal { .. }) => decimal_quotient(ta, tb),
                _ => t,
            }
        } else if ta.is_timestamp() && tb == DataType::Interval && o != Arith::Mul {
            ta
        } else if ta == DataType::Interval && tb.is_timestamp() && o == Arith::Add {
            tb
        } else if ta == DataType::Date && tb == DataType::Interval && o != Arith::Mul {
            DataType::Date
        } else if ta == DataType::Interval && (tb == DataType::Interval || tb.is_numeric()) {
            DataType::Interval
        } else if is_null_literal(&a) || is_null_literal(&b) {
            if is_null_literal(&a) {
                tb
            } else {
                ta
            }
        } else {
            return Err(SqlError::Type(format!("{ta} {} {tb}", arith_symbol(o))));
        };
        Ok(Scalar::Arith(o, Box::new(a), Box::new(b), ty))
    };
    Ok(match op {
        B::Plus => ar(Arith::Add, a, b)?,
        B::Minus => ar(Arith::Sub, a, b)?,
        // `n * INTERVAL ..` is `INTERVAL .. * n`, as Calcite takes both.
        B::Multiply if a.ty().is_numeric() && b.ty() == DataType::Interval => ar(Arith::Mul, b, a)?,
        B::Multiply => ar(Arith::Mul, a, b)?,
        B::Divide => ar(Arith::Div, a, b)?,
        B::Modulo => ar(Arith::Mod, a, b)?,
        B::Eq => cmp(Cmp::Eq, a, b)?,
        B::NotEq => cmp(Cmp::Ne, a, b)?,
        B::Lt => cmp(Cmp::Lt, a, b)?,
        B::LtEq => cmp(Cmp::Le, a, b)?,
        B::Gt => cmp(Cmp::Gt, a, b)?,
        B::GtEq => cmp(Cmp::Ge, a, b)?,
        B::And => {
            expect_bool(&a, "AND")?;
            expect_bool(&b, "AND")?;
            Scalar::And(Box::new(a), Box::new(b))
        }
        B::Or => {
            expect_bool(&a, "OR")?;
            expect_bool(&b, "OR")?;
            Scalar::Or(Box::new(a), Box::new(b))
        }
        B::StringConcat => {
            for s in [&a, &b] {
                if s.ty() != DataType::String && !is_null_literal(s) {
                    return Err(SqlError::Type(format!("|| of {}", s.ty())));
                }
            }
            Scalar::Call(Func::Concat, vec![a, b], DataType::String)
        }
        other => return Err(SqlError::Unsupported(format!("the operator `{other}`"))),
    })
}

fn arith_symbol(o: Arith) -> &'static str {
    match o {
        Arith::Add => "+",
        Arith::Sub => "-",
        Arith::Mul => "*",
        Arith::Div => "/",
        Arith::Mod => "%",
    }
}

fn literal(v: &ast::Value) -> Result<Scalar> {
    Ok(match v {
        ast::Value::Number(n, _) => {
            if let Ok(i) = n.parse::<i32>() {
                Scalar::Literal(Value::Int(i), DataType::Int)
            } else if let Ok(i) = n.parse::<i64>() {
                Scalar::Literal(Value::BigInt(i), DataType::BigInt)
            } else if n.contains(['e', 'E']) {
                let d: f64 = n
                    .parse()
                    .map_err(|_| SqlError::Type(format!("`{n}` is not a number")))?;
                Scalar::Literal(Value::Double(d), DataType::Double)
            } else {
                let scale = n.split_once('.').map_or(0, |(_, f)| f.len());
                let digits = n.chars().filter(char::is_ascii_digit).count();
                if digits > 38 {
                    return Err(SqlError::Type(format!("`{n}`: more than 38 digits")));
                }
                let x = parse_decimal(n, scale as u8)
                    .ok_or_else(|| SqlError::Type(format!("`{n}` is not a number")))?;
                Scalar::Literal(
                    Value::decimal(x),
                    DataType::Decimal {
                        precision: digits.max(scale).max(1) as u8,
                        scale: scale as u8,
                    },
                )
            }
        }
        ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
            Scalar::Literal(Value::Str(s.as_str().into()), DataType::String)
        }
        ast::Value::Boolean(b) => Scalar::Literal(Value::Bool(*b), DataType::Boolean),
        ast::Value::Null => Scalar::Literal(Value::Null, DataType::String),
        other => return Err(SqlError::Unsupported(format!("the literal `{other}`"))),
    })
}

/// A year-month interval literal in months (`INTERVAL '2' MONTH`,
/// `INTERVAL '1' YEAR`, `INTERVAL '1-6' YEAR TO MONTH`); `None` if `iv` is
/// a day-time interval.
fn year_month_interval(iv: &ast::Interval) -> Option<Result<i64>> {
    use DateTimeField as F;
    let year = matches!(iv.leading_field, Some(F::Year | F::Years));
    if !year && !matches!(iv.leading_field, Some(F::Month | F::Months)) {
        return None;
    }
    let text = match iv.value.as_ref() {
        Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            ast::Value::Number(n, _) => n.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    };
    let bad = || SqlError::Type(format!("`{iv}`: not a year-month interval weir reads"));
    let t = text.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r.trim()),
        None => (false, t),
    };
    let months = (|| -> Option<i64> {
        match (year, &iv.last_field) {
            (true, Some(F::Month | F::Months)) => {
                let (y, m) = t.split_once('-')?;
                let (y, m): (i64, i64) = (y.trim().parse().ok()?, m.trim().parse().ok()?);
                y.checked_mul(12)?.checked_add(m)
            }
            (true, None) => t.parse::<i64>().ok()?.checked_mul(12),
            (false, None) => t.parse().ok(),
            _ => None,
        }
    })();
    Some(months.ok_or_else(bad).map(|m| if neg { -m } else { m }))
}

/// `t + months` calendar months, `t` a TIMESTAMP or DATE.
fn add_months_call(t: Scalar, months: i64) -> Result<Scalar> {
    let ty = t.ty();
    if !ty.is_timestamp() && ty != DataType::Date {
        return Err(SqlError::Type(format!(
            "{ty} ± a year-month interval (a TIMESTAMP or DATE takes one)"
        )));
    }
    Ok(Scalar::Call(
        Func::TimestampAdd(CalUnit::Months(1)),
        vec![Scalar::Literal(Value::BigInt(months), DataType::BigInt), t],
        ty,
    ))
}

/// An interval literal in milliseconds: `INTERVAL '5' SECOND`,
/// `INTERVAL '10' MINUTES`, `INTERVAL '1 02:00:00' DAY TO SECOND`,
/// `INTERVAL '1.5' SECOND`.
pub fn interval_ms(iv: &ast::Interval) -> Result<i64> {
    let text = match iv.value.as_ref() {
        Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            ast::Value::Number(n, _) => n.clone(),
            other => return Err(SqlError::Type(format!("INTERVAL {other}"))),
        },
        Expr::UnaryOp { op: U::Minus, expr } => match expr.as_ref() {
            Expr::Value(v) => format!("-{}", v.value),
            _ => return Err(SqlError::Unsupported(format!("`{iv}`"))),
        },
        other => return Err(SqlError::Unsupported(format!("INTERVAL {other}"))),
    };
    let bad = || {
        SqlError::Type(format!(
            "`INTERVAL '{text}'`: not a day-time interval weir reads"
        ))
    };
    let t = text.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r.trim()),
        None => (false, t),
    };
    let leading = iv.leading_field.as_ref();
    let ms = match (leading, &iv.last_field) {
        (Some(f), None) => {
            if matches!(
                f,
                DateTimeField::Year
                    | DateTimeField::Years
                    | DateTimeField::Month
                    | DateTimeField::Months
            ) {
                return Err(SqlError::Unsupported(format!(
                    "the year-month interval `{iv}` (day-time intervals are)"
                )));
            }
            let unit = unit_ms(f).ok_or_else(bad)?;
            match t.split_once('.') {
                Some((i, frac)) if unit >= 1000 => {
                    let whole: i64 = i.parse().map_err(|_| bad())?;
                    let f: String = frac.chars().chain("000".chars()).take(3).collect();
                    let f: i64 = f.parse().map_err(|_| bad())?;
                    whole * unit + f * unit / 1000
                }
                _ => t
                    .parse::<i64>()
                    .map_err(|_| bad())?
                    .checked_mul(unit)
                    .ok_or_else(bad)?,
            }
        }
        (Some(leading), Some(last)) => day_time_fields(t, leading, last).ok_or_else(|| {
            SqlError::Type(format!(
                "`INTERVAL '{text}' {leading} TO {last}`: not an interval of that form (e.g. '1 12' DAY TO HOUR, '10:30' MINUTE TO SECOND, '1 02:03:04.5' DAY TO SECOND; fields after the first within their range)"
            ))
        })?,
        (None, _) => {
            // `D HH:MM:SS[.fff]` or `HH:MM:SS` forms.
            let (days, time) = match t.split_once(' ') {
                Some((d, rest)) => (d.parse::<i64>().map_err(|_| bad())?, rest),
                None if t.contains(':') => (0, t),
                None => (t.parse::<i64>().map_err(|_| bad())?, "0:0:0"),
            };
            let ts = parse_timestamp(&format!("1970-01-01 {time}")).ok_or_else(bad)?;
            days * DAY_MS + ts
        }
    };
    Ok(if neg { -ms } else { ms })
}

/// The milliseconds of a day-time interval's text with the qualifier
/// `leading TO last` (SQL's and Flink's forms): the fields from `leading`
/// to `last`, a day separated from the hours by a space and the others by
/// colons, the seconds with an optional fraction (`'1 12' DAY TO HOUR`,
/// `'10:30' MINUTE TO SECOND` is 10 minutes 30 seconds, `'1 02:03:04.5'
/// DAY TO SECOND`). The leading field takes any number; the others must be
/// within their range (hours below 24, minutes and seconds below 60).
/// `None` for any other text or qualifier.
fn day_time_fields(t: &str, leading: &DateTimeField, last: &DateTimeField) -> Option<i64> {
    use DateTimeField as F;
    // Day, hour, minute, second: rank, unit, the bound of a later field.
    let rank = |f: &DateTimeField| match f {
        F::Day | F::Days => Some(0),
        F::Hour | F::Hours => Some(1),
        F::Minute | F::Minutes => Some(2),
        F::Second | F::Seconds => Some(3),
        _ => None,
    };
    const UNIT: [i64; 4] = [DAY_MS, 3_600_000, 60_000, 1000];
    const BOUND: [i64; 4] = [i64::MAX, 24, 60, 60];
    let (first, end) = (rank(leading)?, rank(last)?);
    if first >= end {
        return None;
    }
    let mut fields: Vec<&str> = Vec::with_capacity(4);
    let time = if first == 0 {
        let (day, rest) = t.split_once(' ')?;
        fields.push(day);
        rest.trim_start()
    } else {
        t
    };
    fields.extend(time.split(':'));
    if fields.len() != end - first + 1 {
        return None;
    }
    let digits = |f: &str| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit());
    let mut ms: i64 = 0;
    for (i, field) in fields.iter().enumerate() {
        let r = first + i;
        let (whole, fraction) = match field.split_once('.') {
            Some((w, f)) if r == 3 && digits(f) => (w, Some(f)),
            Some(_) => return None,
            None => (*field, None),
        };
        if !digits(whole) {
            return None;
        }
        let v: i64 = whole.parse().ok()?;
        if i > 0 && v >= BOUND[r] {
            return None;
        }
        ms = ms.checked_add(v.checked_mul(UNIT[r])?)?;
        if let Some(f) = fraction {
            // Milliseconds: the first three digits (weir keeps milliseconds).
            let f: String = f.chars().chain("00".chars()).take(3).collect();
            ms = ms.checked_add(f.parse::<i64>().ok()?)?;
        }
    }
    Some(ms)
}

/// Whether `name` (upper case) is an aggregate function's: one the planner
/// aggregates (`plan::AggFunc`) or rewrites into one (`json_agg`).
fn is_aggregate_name(name: &str) -> bool {
    matches!(
        name,
        "COUNT"
            | "SUM"
            | "MIN"
            | "MAX"
            | "AVG"
            | "VAR_POP"
            | "VAR_SAMP"
            | "VARIANCE"
            | "STDDEV_POP"
            | "STDDEV_SAMP"
            | "STDDEV"
            | "FIRST_VALUE"
            | "LAST_VALUE"
            | "LISTAGG"
            | "JSON_ARRAYAGG"
            | "JSON_OBJECTAGG"
    )
}

fn function(f: &ast::Function, sub: &mut dyn FnMut(&Expr) -> Result<Scalar>) -> Result<Scalar> {
    let name = crate::script::object_name(&f.name).to_ascii_uppercase();
    if f.over.is_some() {
        return Err(SqlError::Unsupported(format!(
            "the window function `{name}() OVER` here (ROW_NUMBER, RANK and DENSE_RANK for Top-N and deduplication are planned in a subquery's WHERE rn <= N)"
        )));
    }
    // An aggregate compiled as a scalar: in WHERE, GROUP BY or inside
    // another aggregate (the planner reads those of SELECT and HAVING
    // before it compiles them), refused as Calcite's validator refuses it.
    if is_aggregate_name(&name) {
        return Err(SqlError::Plan(format!(
            "the aggregate {name} is not allowed here (only in SELECT and HAVING of a grouped query, and not inside another aggregate)"
        )));
    }
    if let ast::FunctionArguments::List(l) = &f.args {
        if l.duplicate_treatment.is_some() {
            return Err(SqlError::Plan(format!(
                "{name}({} ..): DISTINCT and ALL are for aggregates, {name} is none",
                l.duplicate_treatment
                    .as_ref()
                    .map_or(String::new(), |d| d.to_string())
            )));
        }
    }
    // `JSON_VALUE(j, path RETURNING t)`: the STRING's value as a `t`,
    // NULL where it is not one (Flink's default NULL ON ERROR).
    if let ast::FunctionArguments::List(l) = &f.args {
        let returning = l.clauses.iter().find_map(|c| match c {
            ast::FunctionArgumentClause::JsonReturningClause(r) => Some(r.data_type.clone()),
            _ => None,
        });
        if let Some(t) = returning {
            if name == "JSON_QUERY" {
                // Flink's JSON_QUERY returns STRING or (1.19) ARRAY<STRING>.
                if !matches!(data_type(&t), Ok(DataType::String)) {
                    return Err(SqlError::Unsupported(format!(
                        "JSON_QUERY(.. RETURNING {t}): only RETURNING STRING is supported"
                    )));
                }
            } else if name != "JSON_VALUE" {
                return Err(SqlError::Unsupported(format!("RETURNING in {name}")));
            }
            let mut plain = f.clone();
            if let ast::FunctionArguments::List(l) = &mut plain.args {
                l.clauses
                    .retain(|c| !matches!(c, ast::FunctionArgumentClause::JsonReturningClause(_)));
            }
            let to = data_type(&t)?;
            let value = function(&plain, sub)?;
            return Ok(match to {
                DataType::String => value,
                _ => Scalar::Cast(Box::new(value), to, false),
            });
        }
    }
    let raw = match &f.args {
        ast::FunctionArguments::List(l) => l.args.clone(),
        ast::FunctionArguments::None => vec![],
        ast::FunctionArguments::Subquery(_) => {
            return Err(SqlError::Unsupported(format!(
                "a subquery as the argument of {name}"
            )))
        }
    };
    let mut args = Vec::new();
    // TIMESTAMPADD's and TIMESTAMPDIFF's unit is a word, not a column.
    let mut unit: Option<String> = None;
    for (i, a) in raw.iter().enumerate() {
        match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(Expr::Identifier(w)))
                if i == 0 && matches!(name.as_str(), "TIMESTAMPADD" | "TIMESTAMPDIFF") =>
            {
                unit = Some(w.value.clone())
            }
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => match sub(x) {
                Ok(a) => args.push(a),
                // An argument that does not compile in a call of a function
                // weir does not have: the function is what to report (in a
                // GROUP BY query, `LISTAGG(name)` would otherwise say that
                // `name` is neither grouped nor aggregated).
                Err(e) => {
                    let untyped =
                        &mut |_: &Expr| Ok(Scalar::Literal(Value::Null, DataType::String));
                    return Err(match function(f, untyped) {
                        Err(unknown @ SqlError::UnknownFunction(_)) => unknown,
                        _ => e,
                    });
                }
            },
            other => {
                return Err(SqlError::Unsupported(format!(
                    "the argument `{other}` of {name}"
                )))
            }
        }
    }
    let n = raw.len();
    let arity = |want: std::ops::RangeInclusive<usize>| -> Result<()> {
        if want.contains(&n) {
            Ok(())
        } else {
            Err(SqlError::Type(format!(
                "{name} takes {} arguments, got {n}",
                if want.start() == want.end() {
                    want.start().to_string()
                } else if *want.end() == usize::MAX {
                    format!("at least {}", want.start())
                } else {
                    format!("{} to {}", want.start(), want.end())
                }
            )))
        }
    };
    let s = Some(DataType::String);
    Ok(match name.as_str() {
        "UPPER" | "LOWER" | "CHAR_LENGTH" | "CHARACTER_LENGTH" | "TRIM" => {
            arity(1..=1)?;
            check_args(&name, &args, &[s])?;
            match name.as_str() {
                "UPPER" => Scalar::Call(Func::Upper, args, DataType::String),
                "LOWER" => Scalar::Call(Func::Lower, args, DataType::String),
                "TRIM" => Scalar::Call(Func::Trim, args, DataType::String),
                _ => Scalar::Call(Func::CharLength, args, DataType::Int),
            }
        }
        "CONCAT" => {
            arity(1..=usize::MAX)?;
            Scalar::Call(Func::Concat, args, DataType::String)
        }
        "SUBSTRING" | "SUBSTR" => {
            arity(2..=3)?;
            check_args(&name, &args, &[s, None, None])?;
            Scalar::Call(Func::Substring, args, DataType::String)
        }
        "REPLACE" => {
            arity(3..=3)?;
            check_args(&name, &args, &[s, s, s])?;
            Scalar::Call(Func::Replace, args, DataType::String)
        }
        "ABS" => {
            arity(1..=1)?;
            let t = args[0].ty();
            if !t.is_numeric() {
                return Err(SqlError::Type(format!("ABS of {t}")));
            }
            Scalar::Call(Func::Abs, args, t)
        }
        "MOD" => {
            arity(2..=2)?;
            let mut it = args.into_iter();
            let (a, b) = (it.next().expect("two"), it.next().expect("two"));
            binary(&B::Modulo, a, b)?
        }
        "COALESCE" | "IFNULL" => {
            arity(1..=usize::MAX)?;
            let mut ty: Option<DataType> = None;
            for a in args.iter().filter(|a| !is_null_literal(a)) {
                ty = Some(match ty {
                    None => a.ty(),
                    Some(t) => least_common_type(t, a.ty()).ok_or_else(|| {
                        SqlError::Type(format!("{name} of {t} and {}", a.ty()))
                    })?,
                });
            }
            Scalar::Call(Func::Coalesce, args, ty.unwrap_or(DataType::String))
        }
        "DATE_FORMAT" => {
            arity(2..=2)?;
            let Scalar::Literal(Value::Str(p), _) = &args[1] else {
                return Err(SqlError::Unsupported(
                    "DATE_FORMAT with a pattern that is not a string literal".into(),
                ));
            };
            functions::check_pattern(p).map_err(SqlError::Type)?;
            let p: Arc<str> = Arc::from(p.as_str());
            let a = args.into_iter().next().expect("two");
            let a = if a.ty() == DataType::String {
                Scalar::Call(Func::ToTimestamp, vec![a], DataType::Timestamp)
            } else if a.ty().is_timestamp() {
                a
            } else if a.ty() == DataType::Date {
                // Flink's DATE_FORMAT takes any datetime: a DATE is its
                // midnight.
                Scalar::Cast(Box::new(a), DataType::Timestamp, false)
            } else {
                return Err(SqlError::Type(format!("DATE_FORMAT of {}", a.ty())));
            };
            Scalar::Call(Func::DateFormat(p), vec![a], DataType::String)
        }
        "PROCTIME" => {
            arity(0..=0)?;
            Scalar::Call(Func::ProcTime, args, DataType::TimestampLtz)
        }
        "TO_TIMESTAMP_LTZ" => {
            arity(1..=2)?;
            let precision = match args.get(1) {
                None => 3,
                Some(Scalar::Literal(Value::Int(p), _)) if *p == 0 || *p == 3 => *p,
                Some(_) => {
                    return Err(SqlError::Type(
                        "TO_TIMESTAMP_LTZ(epoch, precision): precision must be the literal 0 (seconds) or 3 (milliseconds)".into(),
                    ))
                }
            };
            let a = args.into_iter().next().expect("one");
            if !a.ty().is_numeric() {
                return Err(SqlError::Type(format!("TO_TIMESTAMP_LTZ of {}", a.ty())));
            }
            // A DOUBLE or DECIMAL, as Flink takes any number: its seconds
            // times 1000 (exactly, for a DECIMAL), then cut to whole
            // milliseconds toward zero, as Flink's `(long) (v * 1000)`.
            let ty = a.ty();
            let fractional = !matches!(ty, DataType::Int | DataType::BigInt);
            let ms = if fractional {
                let scaled = if precision == 0 {
                    let product = match ty {
                        DataType::Decimal { .. } => decimal_product(ty, DataType::Int),
                        _ => DataType::Double,
                    };
                    Scalar::Arith(
                        Arith::Mul,
                        Box::new(a),
                        Box::new(Scalar::Literal(Value::Int(1000), DataType::Int)),
                        product,
                    )
                } else {
                    a
                };
                Scalar::Cast(Box::new(scaled), DataType::BigInt, false)
            } else if precision == 0 {
                Scalar::Arith(
                    Arith::Mul,
                    Box::new(a),
                    Box::new(Scalar::Literal(Value::BigInt(1000), DataType::BigInt)),
                    DataType::BigInt,
                )
            } else {
                a
            };
            Scalar::Cast(Box::new(ms), DataType::TimestampLtz, false)
        }
        "TO_TIMESTAMP" if n == 2 => {
            check_args(&name, &args, &[s, s])?;
            let p = literal_text(&name, &args, 1, "")?;
            check_parse_pattern(&name, &p)?;
            args.truncate(1);
            Scalar::Call(Func::ParseTime(p, false), args, DataType::Timestamp)
        }
        "TO_TIMESTAMP" => {
            arity(1..=2)?;
            check_args(&name, &args, &[s])?;
            Scalar::Call(Func::ToTimestamp, args, DataType::Timestamp)
        }
        "YEAR" | "QUARTER" | "MONTH" | "WEEK" | "DAYOFMONTH" | "DAYOFYEAR" | "DAYOFWEEK"
        | "HOUR" | "MINUTE" | "SECOND" => {
            arity(1..=1)?;
            let u = match name.as_str() {
                "YEAR" => TimeUnit::Year,
                "QUARTER" => TimeUnit::Quarter,
                "MONTH" => TimeUnit::Month,
                "WEEK" => TimeUnit::Week,
                "DAYOFMONTH" => TimeUnit::Day,
                "DAYOFYEAR" => TimeUnit::DayOfYear,
                "DAYOFWEEK" => TimeUnit::DayOfWeek,
                "HOUR" => TimeUnit::Hour,
                "MINUTE" => TimeUnit::Minute,
                _ => TimeUnit::Second,
            };
            if !args[0].ty().is_timestamp() && args[0].ty() != DataType::Date {
                return Err(SqlError::Type(format!("{name} of {}", args[0].ty())));
            }
            Scalar::Call(Func::Extract(u), args, DataType::BigInt)
        }
        "ROUND" | "TRUNCATE" => {
            arity(1..=2)?;
            want(&name, &args, 0, Want::Number)?;
            want(&name, &args, 1, Want::Integer)?;
            let trunc = name == "TRUNCATE";
            let t = args[0].ty();
            match args.get(1) {
                None => {
                    let t = round_type(t, 0);
                    let f = Func::Round {
                        digits: Some(0),
                        trunc,
                    };
                    Scalar::Call(f, args, t)
                }
                Some(c) if constant_int(c).is_some() => {
                    let Some(d) = constant_int(c).flatten() else {
                        return Ok(Scalar::Literal(Value::Null, t));
                    };
                    let d = d.clamp(-64, 64) as i32;
                    let f = Func::Round {
                        digits: Some(d),
                        trunc,
                    };
                    Scalar::Call(f, args, round_type(t, d))
                }
                Some(_) if matches!(t, DataType::Decimal { .. }) => {
                    return Err(SqlError::Unsupported(format!(
                        "{name} of a DECIMAL to digits that are not a literal (its type depends on them)"
                    )))
                }
                Some(_) => Scalar::Call(
                    Func::Round {
                        digits: None,
                        trunc,
                    },
                    args,
                    t,
                ),
            }
        }
        "CEILING" => {
            arity(1..=1)?;
            want(&name, &args, 0, Want::Number)?;
            let t = floor_type(args[0].ty());
            Scalar::Call(Func::NumFloor(true), args, t)
        }
        "SQRT" | "EXP" | "LN" | "LOG10" | "LOG2" | "LOG" | "POWER" | "SIN" | "COS" | "TAN"
        | "COT" | "ASIN" | "ACOS" | "ATAN" | "ATAN2" | "SINH" | "COSH" | "TANH" | "DEGREES"
        | "RADIANS" => {
            let m = match name.as_str() {
                "SQRT" => MathFn::Sqrt,
                "EXP" => MathFn::Exp,
                "LN" => MathFn::Ln,
                "LOG10" => MathFn::Log10,
                "LOG2" => MathFn::Log2,
                "LOG" if n == 1 => MathFn::Ln,
                "LOG" => MathFn::Log,
                "POWER" => MathFn::Power,
                "SIN" => MathFn::Sin,
                "COS" => MathFn::Cos,
                "TAN" => MathFn::Tan,
                "COT" => MathFn::Cot,
                "ASIN" => MathFn::Asin,
                "ACOS" => MathFn::Acos,
                "ATAN" => MathFn::Atan,
                "ATAN2" => MathFn::Atan2,
                "SINH" => MathFn::Sinh,
                "COSH" => MathFn::Cosh,
                "TANH" => MathFn::Tanh,
                "DEGREES" => MathFn::Degrees,
                _ => MathFn::Radians,
            };
            match name.as_str() {
                "LOG" => arity(1..=2)?,
                "POWER" | "ATAN2" => arity(2..=2)?,
                _ => arity(1..=1)?,
            }
            for i in 0..n {
                want(&name, &args, i, Want::Number)?;
            }
            Scalar::Call(Func::Math(m), args, DataType::Double)
        }
        "PI" | "E" => {
            arity(0..=0)?;
            let v = if name == "PI" {
                std::f64::consts::PI
            } else {
                std::f64::consts::E
            };
            Scalar::Literal(Value::Double(v), DataType::Double)
        }
        "SIGN" => {
            arity(1..=1)?;
            want(&name, &args, 0, Want::Number)?;
            let t = args[0].ty();
            Scalar::Call(Func::Sign, args, t)
        }
        "GREATEST" | "LEAST" => {
            arity(1..=usize::MAX)?;
            let ty = common_of(&name, &args)?;
            Scalar::Call(Func::Greatest(name == "LEAST"), args, ty)
        }
        // (the planner's: a scalar subquery without an aggregate)
        SINGLE_VALUE => {
            arity(2..=2)?;
            let ty = args[1].ty();
            Scalar::Call(Func::SingleValue, args, ty)
        }
        "NULLIF" => {
            arity(2..=2)?;
            let mut it = args.into_iter();
            let (a, b) = (it.next().expect("two"), it.next().expect("two"));
            let ty = a.ty();
            let eq = binary(&B::Eq, a.clone(), b)?;
            Scalar::Case(
                vec![(eq, Scalar::Literal(Value::Null, ty))],
                Some(Box::new(a)),
                ty,
            )
        }
        "IF" => {
            arity(3..=3)?;
            expect_bool(&args[0], "IF")?;
            let ty = common_of(&name, &args[1..])?;
            let mut it = args.into_iter();
            let (c, a, b) = (
                it.next().expect("three"),
                it.next().expect("three"),
                it.next().expect("three"),
            );
            Scalar::Case(vec![(c, a)], Some(Box::new(b)), ty)
        }
        "LPAD" | "RPAD" => {
            arity(3..=3)?;
            check_args(&name, &args, &[s])?;
            want(&name, &args, 1, Want::Integer)?;
            want(&name, &args, 2, Want::Text)?;
            Scalar::Call(Func::Pad(name == "LPAD"), args, DataType::String)
        }
        "LTRIM" | "RTRIM" | "BTRIM" => {
            arity(1..=2)?;
            check_args(&name, &args, &[s, s])?;
            let f = match name.as_str() {
                "LTRIM" => Func::TrimChars(true, false),
                "RTRIM" => Func::TrimChars(false, true),
                _ => Func::TrimChars(true, true),
            };
            Scalar::Call(f, args, DataType::String)
        }
        "MD5" | "SHA1" | "SHA224" | "SHA256" | "SHA384" | "SHA512" | "TO_BASE64"
        | "FROM_BASE64" => {
            arity(1..=1)?;
            check_args(&name, &args, &[s])?;
            let f = match name.as_str() {
                "TO_BASE64" => Func::Base64(true),
                "FROM_BASE64" => Func::Base64(false),
                digest => Func::Digest(functions::Digest::named(digest).expect("listed above")),
            };
            Scalar::Call(f, args, DataType::String)
        }
        "SHA2" => {
            arity(2..=2)?;
            check_args(&name, &args, &[s])?;
            let kind = match args.get(1) {
                Some(Scalar::Literal(Value::Int(bits), _)) => {
                    functions::Digest::named(&format!("SHA{bits}"))
                        .filter(|_| matches!(bits, 224 | 256 | 384 | 512))
                }
                _ => None,
            }
            .ok_or_else(|| {
                SqlError::Type("SHA2: the hash length must be 224, 256, 384 or 512".into())
            })?;
            Scalar::Call(Func::Digest(kind), vec![args[0].clone()], DataType::String)
        }
        "INITCAP" | "REVERSE" => {
            arity(1..=1)?;
            check_args(&name, &args, &[s])?;
            let f = if name == "INITCAP" {
                Func::InitCap
            } else {
                Func::Reverse
            };
            Scalar::Call(f, args, DataType::String)
        }
        "REPEAT" | "LEFT" | "RIGHT" => {
            arity(2..=2)?;
            check_args(&name, &args, &[s])?;
            want(&name, &args, 1, Want::Integer)?;
            let f = match name.as_str() {
                "REPEAT" => Func::Repeat,
                "LEFT" => Func::LeftRight(true),
                _ => Func::LeftRight(false),
            };
            Scalar::Call(f, args, DataType::String)
        }
        "LOCATE" => {
            arity(2..=3)?;
            check_args(&name, &args, &[s, s])?;
            want(&name, &args, 2, Want::Integer)?;
            Scalar::Call(Func::Locate, args, DataType::Int)
        }
        "INSTR" => {
            arity(2..=4)?;
            check_args(&name, &args, &[s, s])?;
            want(&name, &args, 2, Want::Integer)?;
            want(&name, &args, 3, Want::Integer)?;
            Scalar::Call(Func::Instr, args, DataType::Int)
        }
        "CONCAT_WS" => {
            arity(2..=usize::MAX)?;
            check_args(&name, &args, &[s])?;
            Scalar::Call(Func::ConcatWs, args, DataType::String)
        }
        "SPLIT_INDEX" => {
            arity(3..=3)?;
            check_args(&name, &args, &[s])?;
            if !is_null_literal(&args[1])
                && !matches!(args[1].ty(), DataType::String | DataType::Int | DataType::BigInt)
            {
                return Err(SqlError::Type(format!(
                    "SPLIT_INDEX: argument 2 must be a STRING or a character code, got {}",
                    args[1].ty()
                )));
            }
            want(&name, &args, 2, Want::Integer)?;
            Scalar::Call(Func::SplitIndex, args, DataType::String)
        }
        "REGEXP" => {
            arity(2..=2)?;
            regexp_call(&name, args, Func::RegexpMatch, DataType::Boolean)?
        }
        "JSON_VALUE" | "JSON_EXISTS" => {
            arity(2..=2)?;
            check_args(&name, &args, &[s, s])?;
            let steps = match &args[1] {
                Scalar::Literal(Value::Str(p), _) => Some(json::json_path(p).map_err(|e| {
                    SqlError::Type(format!("{name}: the path `{p}`: {e}"))
                })?),
                _ => None,
            };
            let (value, ty) = if name == "JSON_VALUE" {
                (true, DataType::String)
            } else {
                (false, DataType::Boolean)
            };
            Scalar::Call(Func::Json(value, steps), args, ty)
        }
        "JSON_OBJECT" | "JSON_ARRAY" => {
            let absent = match &f.args {
                ast::FunctionArguments::List(l) => l.clauses.iter().find_map(|c| match c {
                    ast::FunctionArgumentClause::JsonNullClause(n) => {
                        Some(*n == ast::JsonNullClause::AbsentOnNull)
                    }
                    _ => None,
                }),
                _ => None,
            }
            // NULL ON NULL is JSON_OBJECT's default, ABSENT ON NULL JSON_ARRAY's.
            .unwrap_or(name == "JSON_ARRAY");
            let mut keys = None;
            let mut values = args;
            if name == "JSON_OBJECT" {
                // The dialect reads `[KEY] k VALUE v` as the pair k, v.
                let mut k = Vec::new();
                let mut v = Vec::new();
                for (i, a) in values.into_iter().enumerate() {
                    if i % 2 == 1 {
                        v.push(a);
                        continue;
                    }
                    match a {
                        Scalar::Literal(Value::Str(s), _) => k.push(s.to_string()),
                        _ => {
                            return Err(SqlError::Type(
                                "JSON_OBJECT: a key is a string literal that is not NULL".into(),
                            ))
                        }
                    }
                }
                keys = Some(k);
                values = v;
            }
            let mut raw = Vec::new();
            for v in &values {
                if v.ty() == DataType::Interval {
                    return Err(SqlError::Unsupported(format!(
                        "{name} of an INTERVAL (JSON has no form for it)"
                    )));
                }
                raw.push(matches!(v, Scalar::Call(Func::JsonBuild { .. }, _, _)));
            }
            Scalar::Call(Func::JsonBuild { keys, raw, absent }, values, DataType::String)
        }
        "JSON_STRING" => {
            arity(1..=1)?;
            if args[0].ty() == DataType::Interval {
                return Err(SqlError::Unsupported(
                    "JSON_STRING of an INTERVAL (JSON has no form for it)".into(),
                ));
            }
            Scalar::Call(Func::JsonString, args, DataType::String)
        }
        "JSON_QUERY" => {
            // The dialect adds the wrapper, ON EMPTY and ON ERROR as codes.
            arity(5..=5)?;
            let code = |i: usize| match &args[i] {
                Scalar::Literal(Value::Str(c), _) => c.to_string(),
                _ => String::new(),
            };
            let behavior = |c: String| match c.as_str() {
                "EMPTY ARRAY" => json::JsonBehavior::EmptyArray,
                "EMPTY OBJECT" => json::JsonBehavior::EmptyObject,
                "ERROR" => json::JsonBehavior::Error,
                _ => json::JsonBehavior::Null,
            };
            let wrapper = match code(2).as_str() {
                "CONDITIONAL" => json::JsonWrapper::Conditional,
                "UNCONDITIONAL" => json::JsonWrapper::Unconditional,
                _ => json::JsonWrapper::Without,
            };
            let (on_empty, on_error) = (behavior(code(3)), behavior(code(4)));
            let mut args = args;
            args.truncate(2);
            let s = Some(DataType::String);
            check_args(&name, &args, &[s, s])?;
            let path = match &args[1] {
                Scalar::Literal(Value::Str(p), _) => Some((
                    json::json_path_is_lax(p),
                    json::json_path(p).map_err(|e| {
                        SqlError::Type(format!("{name}: the path `{p}`: {e}"))
                    })?,
                )),
                _ => None,
            };
            Scalar::Call(
                Func::JsonQuery(path, wrapper, on_empty, on_error),
                args,
                DataType::String,
            )
        }
        "REGEXP_EXTRACT" => {
            arity(2..=3)?;
            want(&name, &args, 2, Want::Integer)?;
            regexp_call(&name, args, Func::RegexpExtract, DataType::String)?
        }
        "REGEXP_REPLACE" => {
            arity(3..=3)?;
            want(&name, &args, 2, Want::Text)?;
            regexp_call(&name, args, Func::RegexpReplace, DataType::String)?
        }
        "HASH_CODE" => {
            arity(1..=1)?;
            check_args(&name, &args, &[s])?;
            Scalar::Call(Func::HashCode, args, DataType::Int)
        }
        "IS_DIGIT" | "IS_ALPHA" | "IS_DECIMAL" => {
            arity(1..=1)?;
            let t = args[0].ty();
            if !is_null_literal(&args[0]) && t != DataType::String && !t.is_numeric() {
                return Err(SqlError::Type(format!(
                    "{name}: argument 1 must be a STRING or a number, got {t}"
                )));
            }
            let f = match name.as_str() {
                "IS_DIGIT" => Func::IsDigit,
                "IS_ALPHA" => Func::IsAlpha,
                _ => Func::IsDecimal,
            };
            Scalar::Call(f, args, DataType::Boolean)
        }
        "TRANSLATE" => {
            arity(3..=3)?;
            check_args(&name, &args, &[s, s, s])?;
            Scalar::Call(Func::Translate, args, DataType::String)
        }
        "ELT" => {
            arity(2..=usize::MAX)?;
            want(&name, &args, 0, Want::Integer)?;
            let ty = common_of(&name, &args[1..])?;
            Scalar::Call(Func::Elt, args, ty)
        }
        "REGEXP_SUBSTR" => {
            arity(2..=2)?;
            regexp_call(&name, args, Func::RegexpSubstr, DataType::String)?
        }
        "REGEXP_COUNT" => {
            arity(2..=2)?;
            regexp_call(&name, args, Func::RegexpCount, DataType::Int)?
        }
        "REGEXP_INSTR" => {
            arity(2..=2)?;
            regexp_call(&name, args, Func::RegexpInstr, DataType::Int)?
        }
        "STARTSWITH" | "ENDSWITH" => {
            arity(2..=2)?;
            check_args(&name, &args, &[s, s])?;
            Scalar::Call(Func::EndsWith(name == "ENDSWITH"), args, DataType::Boolean)
        }
        "URL_ENCODE" | "URL_DECODE" => {
            arity(1..=1)?;
            check_args(&name, &args, &[s])?;
            Scalar::Call(Func::Url(name == "URL_ENCODE"), args, DataType::String)
        }
        "CONVERT_TZ" => {
            arity(3..=3)?;
            check_args(&name, &args, &[s, s, s])?;
            Scalar::Call(Func::ConvertTz, args, DataType::String)
        }
        "PARSE_URL" => {
            arity(2..=3)?;
            check_args(&name, &args, &[s, s, s])?;
            Scalar::Call(Func::ParseUrl, args, DataType::String)
        }
        "BIN" => {
            arity(1..=1)?;
            want(&name, &args, 0, Want::Integer)?;
            Scalar::Call(Func::Bin, args, DataType::String)
        }
        "HEX" => {
            arity(1..=1)?;
            if !is_null_literal(&args[0])
                && !matches!(args[0].ty(), DataType::Int | DataType::BigInt | DataType::String)
            {
                return Err(SqlError::Type(format!(
                    "HEX: argument 1 must be an integer or a STRING, got {}",
                    args[0].ty()
                )));
            }
            Scalar::Call(Func::Hex, args, DataType::String)
        }
        "ASCII" => {
            arity(1..=1)?;
            check_args(&name, &args, &[s])?;
            Scalar::Call(Func::Ascii, args, DataType::Int)
        }
        "CHR" => {
            arity(1..=1)?;
            want(&name, &args, 0, Want::Integer)?;
            Scalar::Call(Func::Chr, args, DataType::String)
        }
        "CURRENT_TIMESTAMP" | "NOW" | "LOCALTIMESTAMP" | "CURRENT_DATE" | "CURRENT_ROW_TIMESTAMP" => {
            arity(0..=0)?;
            let (kind, ty) = match name.as_str() {
                "LOCALTIMESTAMP" => (NowKind::Timestamp, DataType::Timestamp),
                "CURRENT_DATE" => (NowKind::Date, DataType::Date),
                _ => (NowKind::Timestamp, DataType::TimestampLtz),
            };
            Scalar::Call(Func::Now(kind), args, ty)
        }
        "UNIX_TIMESTAMP" if n == 0 => {
            Scalar::Call(Func::Now(NowKind::UnixSeconds), args, DataType::BigInt)
        }
        "UNIX_TIMESTAMP" => {
            arity(1..=2)?;
            check_args(&name, &args, &[s, s])?;
            let p = literal_text(&name, &args, 1, "yyyy-MM-dd HH:mm:ss")?;
            check_parse_pattern(&name, &p)?;
            args.truncate(1);
            Scalar::Call(Func::UnixTimestamp(p), args, DataType::BigInt)
        }
        "TO_DATE" => {
            arity(1..=2)?;
            check_args(&name, &args, &[s, s])?;
            let p = literal_text(&name, &args, 1, "")?;
            check_parse_pattern(&name, &p)?;
            args.truncate(1);
            Scalar::Call(Func::ParseTime(p, true), args, DataType::Date)
        }
        "FROM_UNIXTIME" => {
            arity(1..=2)?;
            want(&name, &args, 0, Want::Integer)?;
            want(&name, &args, 1, Want::Text)?;
            let p = literal_text(&name, &args, 1, "yyyy-MM-dd HH:mm:ss")?;
            check_pattern(&name, &p)?;
            args.truncate(1);
            Scalar::Call(Func::FromUnixtime(p), args, DataType::String)
        }
        "TIMESTAMPADD" | "TIMESTAMPDIFF" => {
            arity(3..=3)?;
            let u = unit.as_deref().and_then(CalUnit::of).ok_or_else(|| {
                SqlError::Type(format!(
                    "{name}: argument 1 must be a unit (SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, QUARTER or YEAR)"
                ))
            })?;
            if name == "TIMESTAMPADD" {
                // args: n, t
                if !is_null_literal(&args[0]) && !matches!(args[0].ty(), DataType::Int | DataType::BigInt) {
                    return Err(SqlError::Type(format!(
                        "{name}: argument 2 must be an integer, got {}",
                        args[0].ty()
                    )));
                }
                let t = args[1].ty();
                if !t.is_timestamp() && t != DataType::Date {
                    return Err(SqlError::Type(format!(
                        "{name}: argument 3 must be a TIMESTAMP or DATE, got {t}"
                    )));
                }
                let ty = match (t, u) {
                    (DataType::Date, CalUnit::Fixed(ms)) if ms % DAY_MS != 0 => DataType::Timestamp,
                    _ => t,
                };
                Scalar::Call(Func::TimestampAdd(u), args, ty)
            } else {
                for (i, a) in args.iter().enumerate() {
                    let t = a.ty();
                    if !is_null_literal(a) && !t.is_timestamp() && t != DataType::Date {
                        return Err(SqlError::Type(format!(
                            "{name}: argument {} must be a TIMESTAMP or DATE, got {t}",
                            i + 2
                        )));
                    }
                }
                Scalar::Call(Func::TimestampDiff(u), args, DataType::Int)
            }
        }
        "RAND" | "RAND_INTEGER" | "UUID" => {
            return Err(SqlError::Unsupported(format!(
                "{name}: a random value per row would differ when rows are replayed after a restore (weir's results do not depend on the run)"
            )))
        }
        _ => return Err(SqlError::UnknownFunction(name)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::FlinkDialect;
    use sqlparser::parser::Parser;

    fn eval(sql: &str, scope: &Scope, row: &Row) -> Value {
        let e = Parser::new(&FlinkDialect::default())
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap();
        compile(&e, scope).unwrap().eval(row)
    }

    fn scope() -> (Scope, Row) {
        let schema = Schema::new(vec![
            Field::new("a", DataType::Int),
            Field::new("s", DataType::String),
            Field::new("n", DataType::Int),
            Field::new("ts", DataType::Timestamp),
        ]);
        let row = Row::of([
            Value::Int(7),
            Value::Str("Hello".into()),
            Value::Null,
            Value::Timestamp(parse_timestamp("2024-01-02 03:04:05.678").unwrap()),
        ]);
        (Scope::of(&schema, Some("t")), row)
    }

    /// TO_TIMESTAMP_LTZ takes any number, as Flink's: a DOUBLE's or a
    /// DECIMAL's seconds (or milliseconds) cut to whole milliseconds
    /// toward zero (both were refused as a type mismatch).
    #[test]
    fn to_timestamp_ltz_takes_fractional_numbers() {
        let (scope, row) = scope();
        let ms = |v: i64| Value::Timestamp(v);
        for (sql, want) in [
            ("TO_TIMESTAMP_LTZ(1.5, 0)", ms(1500)),
            (
                "TO_TIMESTAMP_LTZ(1700000000.1239, 0)",
                ms(1_700_000_000_123),
            ),
            ("TO_TIMESTAMP_LTZ(CAST(1.5 AS DOUBLE), 0)", ms(1500)),
            ("TO_TIMESTAMP_LTZ(CAST(-1.5 AS DOUBLE), 0)", ms(-1500)),
            ("TO_TIMESTAMP_LTZ(CAST(2.5 AS FLOAT), 0)", ms(2500)),
            ("TO_TIMESTAMP_LTZ(1500.9, 3)", ms(1500)),
            ("TO_TIMESTAMP_LTZ(CAST(1500.9 AS DOUBLE), 3)", ms(1500)),
            ("TO_TIMESTAMP_LTZ(7, 0)", ms(7000)),
            ("TO_TIMESTAMP_LTZ(CAST(NULL AS DOUBLE), 0)", Value::Null),
        ] {
            assert_eq!(eval(sql, &scope, &row), want, "{sql}");
        }
    }

    /// A CAST to TIMESTAMP(0), (1) or (2) cuts the milliseconds to that
    /// precision (they were kept), toward zero as Flink's
    /// `DateTimeUtils.truncate` cuts the epoch milliseconds.
    #[test]
    fn a_cast_to_a_coarser_timestamp_cuts_its_fraction() {
        let ts = |t: &str| Value::Timestamp(parse_timestamp(t).unwrap());
        for (sql, want) in [
            ("CAST(ts AS TIMESTAMP(0))", "2024-01-02 03:04:05"),
            ("CAST(ts AS TIMESTAMP(1))", "2024-01-02 03:04:05.6"),
            ("CAST(ts AS TIMESTAMP(2))", "2024-01-02 03:04:05.67"),
            ("CAST(ts AS TIMESTAMP(3))", "2024-01-02 03:04:05.678"),
            ("CAST(ts AS TIMESTAMP_LTZ(0))", "2024-01-02 03:04:05"),
            (
                "CAST('2024-01-02 03:04:05.999' AS TIMESTAMP(0))",
                "2024-01-02 03:04:05",
            ),
            (
                "CAST(TIMESTAMP '1969-12-31 23:59:58.433' AS TIMESTAMP(0))",
                "1969-12-31 23:59:59",
            ),
        ] {
            assert_eq!(str_of(sql), ts(want), "{sql}");
        }
        assert_eq!(str_of("TRY_CAST(s AS TIMESTAMP(0))"), Value::Null);
        assert_eq!(
            str_of("CAST(CAST(n AS STRING) AS TIMESTAMP(0))"),
            Value::Null
        );
    }

    /// BETWEEN SYMMETRIC takes the bounds in either order (Calcite's
    /// expansion, NULL where neither order is FALSE); ASYMMETRIC is the
    /// plain BETWEEN; both bind as BETWEEN does (a syntax error before).
    #[test]
    fn between_symmetric_takes_its_bounds_in_either_order() {
        for (sql, want) in [
            ("a BETWEEN SYMMETRIC 9 AND 7", Value::Bool(true)),
            ("a BETWEEN SYMMETRIC 7 AND 9", Value::Bool(true)),
            ("a BETWEEN SYMMETRIC 9 AND 8", Value::Bool(false)),
            ("a NOT BETWEEN SYMMETRIC 9 AND 7", Value::Bool(false)),
            ("a BETWEEN ASYMMETRIC 9 AND 7", Value::Bool(false)),
            ("a NOT BETWEEN ASYMMETRIC 9 AND 7", Value::Bool(true)),
            ("a BETWEEN SYMMETRIC n AND 8", Value::Null),
            ("a BETWEEN SYMMETRIC n AND 6", Value::Null),
            ("n NOT BETWEEN SYMMETRIC 1 AND 2", Value::Null),
            (
                "a + 1 BETWEEN SYMMETRIC 9 AND 8 AND a < 0",
                Value::Bool(false),
            ),
            ("a BETWEEN SYMMETRIC 9 AND 8 OR a = 7", Value::Bool(true)),
        ] {
            assert_eq!(str_of(sql), want, "{sql}");
        }
    }

    #[test]
    fn three_valued_logic() {
        let (s, r) = scope();
        assert_eq!(eval("n > 1 AND a > 100", &s, &r), Value::Bool(false));
        assert_eq!(eval("n > 1 AND a > 1", &s, &r), Value::Null);
        assert_eq!(eval("n > 1 OR a > 1", &s, &r), Value::Bool(true));
        assert_eq!(eval("NOT (n > 1)", &s, &r), Value::Null);
        assert_eq!(eval("n IS NULL", &s, &r), Value::Bool(true));
        assert_eq!(eval("a IN (1, n)", &s, &r), Value::Null);
        assert_eq!(eval("a IN (7, n)", &s, &r), Value::Bool(true));
        assert_eq!(eval("COALESCE(n, a, 3)", &s, &r), Value::Int(7));
    }

    #[test]
    fn arithmetic_strings_and_time() {
        let (s, r) = scope();
        assert_eq!(eval("a / 2", &s, &r), Value::Int(3));
        assert_eq!(eval("MOD(a, 4) + t.a * 2", &s, &r), Value::Int(17));
        assert_eq!(eval("a / 0", &s, &r), Value::Null);
        assert_eq!(eval("a * 1.5", &s, &r), Value::decimal(105));
        // Flink's quotient scale: max(6, s1 + p2 + 1), an INT being
        // DECIMAL(10, 0): 7.0 / 3 has scale 12, 7 / 0.5 scale 6.
        assert_eq!(
            eval("CAST(a AS DECIMAL(5, 1)) / 3", &s, &r),
            Value::decimal(2_333_333_333_333)
        );
        assert_eq!(eval("a / 0.5", &s, &r), Value::decimal(14_000_000));
        assert_eq!(eval("UPPER(s) || '!'", &s, &r), Value::Str("HELLO!".into()));
        assert_eq!(
            eval("SUBSTRING(s FROM 2 FOR 3)", &s, &r),
            Value::Str("ell".into())
        );
        assert_eq!(eval("CHAR_LENGTH(s)", &s, &r), Value::Int(5));
        assert_eq!(eval("s LIKE 'H%o'", &s, &r), Value::Bool(true));
        assert_eq!(
            eval("CASE WHEN a > 5 THEN 'big' ELSE 'small' END", &s, &r),
            Value::Str("big".into())
        );
        assert_eq!(
            eval("CASE a WHEN 1 THEN 10 WHEN 7 THEN 70 END", &s, &r),
            Value::Int(70)
        );
        assert_eq!(eval("EXTRACT(HOUR FROM ts)", &s, &r), Value::BigInt(3));
        // Below a second, of the second (Flink's: 05.678 is 678 ms).
        assert_eq!(
            eval("EXTRACT(MILLISECOND FROM ts)", &s, &r),
            Value::BigInt(678)
        );
        assert_eq!(
            eval("EXTRACT(MICROSECOND FROM ts)", &s, &r),
            Value::BigInt(678_000)
        );
        assert_eq!(
            eval("EXTRACT(NANOSECOND FROM ts)", &s, &r),
            Value::BigInt(678_000_000)
        );
        assert_eq!(
            eval("DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm')", &s, &r),
            Value::Str("2024-01-02 03:04".into())
        );
        assert_eq!(
            eval("ts + INTERVAL '1' HOUR > ts", &s, &r),
            Value::Bool(true)
        );
        assert_eq!(
            eval("CAST('12.345' AS DECIMAL(5, 2))", &s, &r),
            Value::decimal(1235)
        );
        assert_eq!(eval("CAST(a AS STRING)", &s, &r), Value::Str("7".into()));
        assert_eq!(
            eval("FLOOR(ts TO HOUR)", &s, &r),
            Value::Timestamp(parse_timestamp("2024-01-02 03:00:00").unwrap())
        );
        // Text read as a timestamp by a function, not a cast.
        assert_eq!(
            eval("TO_TIMESTAMP('2024-01-02 03:04:05')", &s, &r),
            Value::Timestamp(parse_timestamp("2024-01-02 03:04:05").unwrap())
        );
        assert_eq!(
            eval("DATE_FORMAT('2024-01-02 03:04:05', 'HH:mm')", &s, &r),
            Value::Str("03:04".into())
        );
        assert_eq!(
            eval("DATE_FORMAT(DATE '2024-02-29', 'yyyy/MM/dd HH:mm')", &s, &r),
            Value::Str("2024/02/29 00:00".into())
        );
        assert_eq!(eval("TO_TIMESTAMP('soon')", &s, &r), Value::Null);
    }

    #[test]
    fn text_compared_with_a_number_or_a_time_is_cast_to_its_type() {
        let (s, r) = scope();
        let cases = [
            (
                "TIMESTAMP '2024-01-31 10:00:00' > '2024-01-31 09:59:59.999'",
                true,
            ),
            (
                "'2024-01-31 10:00:00' = TIMESTAMP '2024-01-31 10:00:00'",
                true,
            ),
            ("DATE '2024-01-31' = '2024-01-31'", true),
            (
                "DATE '2024-01-31' BETWEEN '2024-01-01' AND '2024-01-30'",
                false,
            ),
            ("7 = '7'", true),
            ("'10' > 9", true),
            ("2.5 < ' 3 '", true),
            ("7 IN ('6', '7')", true),
            ("DATE '2024-01-31' IN ('2024-01-30', '2024-02-01')", false),
        ];
        for (sql, want) in cases {
            assert_eq!(eval(sql, &s, &r), Value::Bool(want), "{sql}");
        }
        assert_eq!(eval("'a' = 'a'", &s, &r), Value::Bool(true));
        assert_eq!(eval("7 = CAST(NULL AS STRING)", &s, &r), Value::Null);
    }

    #[test]
    fn a_cast_to_char_or_varchar_of_a_length_cuts_and_pads_as_flinks() {
        let (s, r) = scope();
        let text = |sql: &str| eval(sql, &s, &r);
        let cases = [
            ("CAST('hello' AS VARCHAR(3))", "hel"),
            ("CAST('hi' AS VARCHAR(3))", "hi"),
            ("CAST('hello' AS CHAR(3))", "hel"),
            ("CAST('hi' AS CHAR(4))", "hi  "),
            ("CAST('hello' AS CHAR)", "h"),
            ("CAST('héllo' AS VARCHAR)", "héllo"),
            ("CAST('héllo' AS STRING)", "héllo"),
            ("CAST(12345 AS VARCHAR(2))", "12"),
            ("TRY_CAST(1.5 AS CHAR(5))", "1.5  "),
            ("CAST('héllo' AS CHARACTER VARYING(2))", "hé"),
        ];
        for (sql, want) in cases {
            assert_eq!(text(sql), Value::Str(want.into()), "{sql}");
        }
        assert_eq!(text("CAST(CAST(NULL AS STRING) AS CHAR(3))"), Value::Null);
    }

    #[test]
    fn decimal_text_may_have_an_exponent_as_java_big_decimal_reads_it() {
        let cases = [
            ("-1e2", 2, Some(-10_000)),
            ("1.5E1", 0, Some(15)),
            ("1.25e-1", 2, Some(13)),
            ("-1.25e-1", 2, Some(-13)),
            ("125e-5", 2, Some(0)),
            ("5e-3", 2, Some(1)),
            ("5e-4", 2, Some(0)),
            ("0e100", 2, Some(0)),
            (".5e+1", 1, Some(50)),
            ("12.345", 2, Some(1235)),
            (
                "0.000000000000000000000000000000000000000000012",
                2,
                Some(0),
            ),
            ("1e", 2, None),
            ("e2", 2, None),
            ("1e2.5", 2, None),
            ("1e40", 0, None),
        ];
        for (text, scale, want) in cases {
            assert_eq!(parse_decimal(text, scale), want, "{text} at scale {scale}");
        }
        let (s, r) = scope();
        assert_eq!(
            eval("CAST('-1e2' AS DECIMAL(6, 2))", &s, &r),
            Value::decimal(-10_000)
        );
        // A number of more than 38 digits is a number too wide for its
        // DECIMAL, NULL (Flink's fromBigDecimal), not text that fails.
        assert_eq!(read_decimal("1e40", 0), Some(None));
        assert_eq!(read_decimal("9e99999", 2), Some(None));
        assert_eq!(read_decimal("1e2x", 0), None);
        for sql in [
            "CAST('99999999999999999999999999999999999999999' AS DECIMAL(38, 0))",
            "CAST('-9e99999' AS DECIMAL(10, 2))",
            "CAST('123456789012345678901234567890.5' AS DECIMAL(38, 10))",
        ] {
            assert_eq!(eval(sql, &s, &r), Value::Null, "{sql}");
        }
    }

    #[test]
    fn cast_fails_on_text_that_does_not_parse_and_try_cast_gives_null() {
        let (s, r) = scope();
        let failure = |sql: &str| {
            let unwound = std::panic::catch_unwind(|| eval(sql, &s, &r))
                .expect_err("a CAST of bad text fails");
            let e = unwound
                .downcast::<weir_runtime::UserError>()
                .expect("the task fails with a user error, not a panic");
            e.0
        };
        let cases = [
            ("'abc'", "INT", "CAST('abc' AS INT) failed: not an integer"),
            // Java's Double.parseDouble refuses what Rust's takes.
            ("'inf'", "DOUBLE", "not a number"),
            ("'nan'", "DOUBLE", "not a number"),
            ("'infinity'", "FLOAT", "not a number"),
            ("'3000000000'", "INT", "out of the range of INT"),
            (
                "'99999999999999999999'",
                "BIGINT",
                "not an integer in the range of BIGINT",
            ),
            ("'1,5'", "DOUBLE", "not a number"),
            ("'maybe'", "BOOLEAN", "not a boolean"),
            ("'12x'", "DECIMAL(5, 2)", "not a decimal number"),
            ("'2024-13-45'", "DATE", "not a date"),
            ("'yesterday'", "TIMESTAMP(3)", "not a timestamp"),
            ("'it''s'", "INT", "CAST('it''s' AS INT)"),
        ];
        for (text, ty, message) in cases {
            let m = failure(&format!("CAST({text} AS {ty})"));
            assert!(m.contains(message), "CAST({text} AS {ty}): {m}");
            assert!(m.contains("TRY_CAST gives NULL instead"), "{m}");
            assert_eq!(
                eval(&format!("TRY_CAST({text} AS {ty})"), &s, &r),
                Value::Null,
                "TRY_CAST({text} AS {ty})"
            );
        }
        // What parses, as Flink's casts from STRING read it.
        let both = |sql: &str, v: Value| {
            assert_eq!(eval(&format!("CAST({sql})"), &s, &r), v, "CAST({sql})");
            assert_eq!(
                eval(&format!("TRY_CAST({sql})"), &s, &r),
                v,
                "TRY_CAST({sql})"
            );
        };
        both("' 42 ' AS INT", Value::Int(42));
        both("'-1.9' AS INT", Value::Int(-1));
        both("'+7' AS BIGINT", Value::BigInt(7));
        for (t, b) in [
            ("'T'", true),
            ("'yes'", true),
            ("'1'", true),
            ("'N'", false),
            ("'false'", false),
        ] {
            both(&format!("{t} AS BOOLEAN"), Value::Bool(b));
        }
        both("'2.5e3' AS DOUBLE", Value::Double(2500.0));
        both("'1d' AS DOUBLE", Value::Double(1.0));
        both("'0x1p3' AS DOUBLE", Value::Double(8.0));
        both("' -Infinity ' AS DOUBLE", Value::Double(f64::NEG_INFINITY));
        // NULL stays NULL, and a DECIMAL too wide is NULL for both.
        both("CAST(NULL AS STRING) AS INT", Value::Null);
        both("'12345' AS DECIMAL(3, 1)", Value::Null);
    }

    #[test]
    fn errors_name_the_problem() {
        let (s, _) = scope();
        let err = |sql: &str| {
            let e = Parser::new(&FlinkDialect::default())
                .try_with_sql(sql)
                .unwrap()
                .parse_expr()
                .unwrap();
            compile(&e, &s).unwrap_err().to_string()
        };
        assert!(err("nope + 1").contains("unknown column `nope`"));
        assert!(err("FROB(a)").contains("unknown function `FROB`"));
        assert!(err("s + 1").contains("type mismatch"));
        assert!(err("UPPER(a)").contains("UPPER: argument 1 must be STRING"));
    }

    #[test]
    fn casts_flink_refuses_are_refused_when_planned() {
        // Flink's cast rules: no cast between a timestamp and a number,
        // a DATE and a number, a BOOLEAN and a time.
        assert!(err_of("CAST(ts AS BIGINT)").contains("TIMESTAMP type to NUMERIC type"));
        assert!(err_of("CAST(a AS TIMESTAMP(3))").contains("NUMERIC type to TIMESTAMP type"));
        assert!(err_of("CAST(a AS TIMESTAMP_LTZ(3))").contains("TO_TIMESTAMP_LTZ"));
        assert!(
            err_of("CAST(CAST(ts AS TIMESTAMP_LTZ(3)) AS DECIMAL(20, 0))")
                .contains("TIMESTAMP_LTZ type to NUMERIC type")
        );
        assert!(err_of("CAST(CAST(ts AS DATE) AS INT)").contains("DATE to type INT"));
        assert!(err_of("CAST(a > 1 AS DATE)").contains("BOOLEAN to type DATE"));
        // What it takes stays: NULL, text, numbers, times among themselves.
        assert_eq!(str_of("CAST(NULL AS TIMESTAMP(3))"), Value::Null);
        assert_eq!(
            str_of("CAST(CAST(ts AS DATE) AS TIMESTAMP_LTZ(3))"),
            Value::Timestamp(parse_timestamp("2024-01-02 00:00:00").unwrap())
        );
        assert!(err_of("DATE '2024-01-05 10:00'").contains("not a valid DATE literal"));
        assert!(err_of("TIMESTAMP '2024-01-05 10:00:00.1234'").contains("below milliseconds"));
        assert_eq!(
            str_of("TIMESTAMP '2024-01-05 10:00:00.123000'"),
            str_of("TIMESTAMP '2024-01-05 10:00:00.123'")
        );
        // Text to DATE as Flink's `parseDate`: a timestamp's text gives its
        // date; a missing month or day is 1.
        let date = |t: &str| Value::Date(crate::time::parse_date(t).unwrap());
        assert_eq!(
            str_of("CAST('2024-01-05 10:00:00' AS DATE)"),
            date("2024-01-05")
        );
        assert_eq!(str_of("CAST(' 2024-3 ' AS DATE)"), date("2024-03-01"));
        assert_eq!(str_of("CAST('2024' AS DATE)"), date("2024-01-01"));
        assert_eq!(str_of("TRY_CAST('2024-02-30' AS DATE)"), Value::Null);
        assert_eq!(str_of("TRY_CAST('2024-01-05T10:00' AS DATE)"), Value::Null);
        // A number that does not fit an integer type: Java's narrowing
        // casts, as Flink's (an integer wraps, a DOUBLE saturates, NaN is 0).
        assert_eq!(
            str_of("CAST(3000000000 AS INT)"),
            Value::Int(-1_294_967_296)
        );
        assert_eq!(str_of("CAST(2147483648.7 AS INT)"), Value::Int(i32::MIN));
        assert_eq!(str_of("CAST(-1E10 AS INT)"), Value::Int(i32::MIN));
        assert_eq!(str_of("CAST(1E20 AS BIGINT)"), Value::BigInt(i64::MAX));
        assert_eq!(str_of("CAST(CAST('NaN' AS DOUBLE) AS INT)"), Value::Int(0));
        assert_eq!(str_of("TRY_CAST(-2.9E0 AS INT)"), Value::Int(-2));
        // An integer is TRUE unless zero; DECIMAL and floating point do
        // not cast to BOOLEAN (Flink's rules take the integer family only).
        assert_eq!(str_of("CAST(7 AS BOOLEAN)"), Value::Bool(true));
        assert_eq!(
            str_of("CAST(CAST(0 AS BIGINT) AS BOOLEAN)"),
            Value::Bool(false)
        );
        for refused in [
            "CAST(0.5 AS BOOLEAN)",
            "CAST(-2.5E0 AS BOOLEAN)",
            "CAST(CAST(0 AS FLOAT) AS BOOLEAN)",
        ] {
            let e = compiled(refused).expect_err(refused).to_string();
            assert!(e.contains("BOOLEAN"), "{refused}: {e}");
        }
        // A BOOLEAN is 1 or 0 in every numeric type (Flink's
        // BooleanToNumericCastRule), not NULL.
        assert_eq!(str_of("CAST(TRUE AS DOUBLE)"), Value::Double(1.0));
        assert_eq!(str_of("CAST(FALSE AS FLOAT)"), Value::float(0.0));
        assert_eq!(str_of("CAST(TRUE AS DECIMAL(3, 1))"), Value::decimal(10));
        assert_eq!(str_of("CAST(FALSE AS BIGINT)"), Value::BigInt(0));
        assert_eq!(str_of("CAST(TRUE AS DECIMAL(1, 1))"), Value::Null);
    }

    /// `sql` compiled against the test scope.
    fn compiled(sql: &str) -> Result<Scalar> {
        let (s, _) = scope();
        let e = Parser::new(&FlinkDialect::default())
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap();
        compile(&e, &s)
    }

    fn err_of(sql: &str) -> String {
        compiled(sql).unwrap_err().to_string()
    }

    fn ty_of(sql: &str) -> DataType {
        compiled(sql).unwrap().ty()
    }

    fn str_of(sql: &str) -> Value {
        let (s, r) = scope();
        eval(sql, &s, &r)
    }

    fn text(v: &str) -> Value {
        Value::Str(v.into())
    }

    /// IS JSON, JSON_OBJECT, JSON_ARRAY, JSON_STRING and JSON_QUERY with
    /// the examples of Flink's "System (Built-in) Functions" page.
    #[test]
    fn json_predicates_constructors_and_queries() {
        let t = Value::Bool(true);
        let f = Value::Bool(false);
        // IS JSON [VALUE | SCALAR | ARRAY | OBJECT]; NULL is not JSON.
        for (sql, want) in [
            ("'1' IS JSON", &t),
            ("'[]' IS JSON", &t),
            ("'{}' IS JSON", &t),
            ("'\"abc\"' IS JSON", &t),
            ("'abc' IS JSON", &f),
            ("CAST(NULL AS STRING) IS JSON", &f),
            ("NULL IS JSON", &f),
            ("'1' IS JSON SCALAR", &t),
            ("'1' IS JSON ARRAY", &f),
            ("'1' IS JSON OBJECT", &f),
            ("'{}' IS JSON SCALAR", &f),
            ("'{}' IS JSON ARRAY", &f),
            ("'{}' IS JSON OBJECT", &t),
            ("'[1]' IS JSON ARRAY", &t),
            ("'null' IS JSON SCALAR", &t),
            ("'{}' IS JSON VALUE", &t),
            ("'abc' IS NOT JSON", &t),
            ("'{}' IS NOT JSON OBJECT", &f),
        ] {
            assert_eq!(&str_of(sql), want, "{sql}");
        }
        assert!(err_of("1 IS JSON").contains("IS JSON takes a STRING"));
        assert!(err_of("'{}' IS JSON WITH UNIQUE KEYS").contains("WITH UNIQUE KEYS"));
        // JSON_OBJECT: NULL ON NULL by default; nested constructors as JSON.
        for (sql, want) in [
            ("JSON_OBJECT()", "{}"),
            ("JSON_OBJECT('K1' VALUE 'V1', 'K2' VALUE 'V2')", r#"{"K1":"V1","K2":"V2"}"#),
            ("JSON_OBJECT('K' VALUE 1)", r#"{"K":1}"#),
            ("JSON_OBJECT(KEY 'K1' VALUE CAST(NULL AS STRING))", r#"{"K1":null}"#),
            ("JSON_OBJECT(KEY 'K1' VALUE CAST(NULL AS STRING) NULL ON NULL)", r#"{"K1":null}"#),
            ("JSON_OBJECT(KEY 'K1' VALUE CAST(NULL AS STRING) ABSENT ON NULL)", "{}"),
            ("JSON_OBJECT(KEY 'K1' VALUE JSON_OBJECT(KEY 'K2' VALUE 'V'))", r#"{"K1":{"K2":"V"}}"#),
            ("JSON_OBJECT('K' VALUE '{\"A\":1}')", r#"{"K":"{\"A\":1}"}"#),
            ("JSON_OBJECT('a' VALUE 1, 'b' VALUE 2, 'a' VALUE 3)", r#"{"a":3,"b":2}"#),
            (
                "JSON_OBJECT('b' VALUE TRUE, 'd' VALUE 1.50, 'x' VALUE 2.5E0, 'z' VALUE JSON_ARRAY(1))",
                r#"{"b":true,"d":1.50,"x":2.5,"z":[1]}"#,
            ),
            (
                "JSON_OBJECT('d' VALUE DATE '2024-01-02', 't' VALUE TIMESTAMP '2024-01-02 03:04:05.500')",
                r#"{"d":"2024-01-02","t":"2024-01-02T03:04:05.5"}"#,
            ),
        ] {
            assert_eq!(str_of(sql), text(want), "{sql}");
        }
        assert!(err_of("JSON_OBJECT(s VALUE 1)").contains("a key is a string literal"));
        // JSON_ARRAY: ABSENT ON NULL by default.
        for (sql, want) in [
            ("JSON_ARRAY()", "[]"),
            ("JSON_ARRAY(1, '2')", r#"[1,"2"]"#),
            ("JSON_ARRAY(CAST(NULL AS STRING))", "[]"),
            ("JSON_ARRAY(CAST(NULL AS STRING) NULL ON NULL)", "[null]"),
            ("JSON_ARRAY(CAST(NULL AS STRING) ABSENT ON NULL)", "[]"),
            ("JSON_ARRAY(JSON_ARRAY(1))", "[[1]]"),
            (
                "JSON_ARRAY(JSON_OBJECT('a' VALUE 'x\"y'))",
                r#"[{"a":"x\"y"}]"#,
            ),
        ] {
            assert_eq!(str_of(sql), text(want), "{sql}");
        }
        assert_eq!(ty_of("JSON_ARRAY(1)"), DataType::String);
        // JSON_STRING
        assert_eq!(str_of("JSON_STRING(CAST(NULL AS INT))"), Value::Null);
        assert_eq!(str_of("JSON_STRING(NULL)"), Value::Null);
        // Numbers as Jackson writes Java's doubles, floats and BigDecimals.
        assert_eq!(str_of("JSON_STRING(CAST(1e20 AS DOUBLE))"), text("1.0E20"));
        assert_eq!(str_of("JSON_STRING(CAST(0.1 AS FLOAT))"), text("0.1"));
        assert_eq!(str_of("JSON_STRING(CAST(2 AS DOUBLE))"), text("2.0"));
        assert_eq!(
            str_of("JSON_STRING(CAST(-1.25 AS DECIMAL(5, 3)))"),
            text("-1.250")
        );
        assert_eq!(
            str_of("JSON_STRING(CAST('2024-01-02 03:04:05' AS TIMESTAMP_LTZ(3)))"),
            text("\"2024-01-02T03:04:05Z\"")
        );
        assert_eq!(str_of("JSON_ARRAY(NULL, 1 NULL ON NULL)"), text("[null,1]"));
        assert_eq!(str_of("JSON_STRING(1)"), text("1"));
        assert_eq!(str_of("JSON_STRING(TRUE)"), text("true"));
        assert_eq!(
            str_of("JSON_STRING('Hello, World!')"),
            text("\"Hello, World!\"")
        );
        assert_eq!(str_of("JSON_STRING('a\nb')"), text("\"a\\nb\""));
        assert!(err_of("JSON_STRING(INTERVAL '1' SECOND)").contains("INTERVAL"));
        // JSON_QUERY: members in the order written, compact.
        for (sql, want) in [
            (
                r#"JSON_QUERY('{ "a": { "b": 1 } }', '$.a')"#,
                Some(r#"{"b":1}"#),
            ),
            ("JSON_QUERY('[1, 2]', '$')", Some("[1,2]")),
            ("JSON_QUERY(CAST(NULL AS STRING), '$')", None),
            (
                r#"JSON_QUERY('{"z":1,"a":[2]}', '$')"#,
                Some(r#"{"z":1,"a":[2]}"#),
            ),
            (
                "JSON_QUERY('{}', '$' WITH CONDITIONAL ARRAY WRAPPER)",
                Some("[{}]"),
            ),
            (
                "JSON_QUERY('[1, 2]', '$' WITH CONDITIONAL ARRAY WRAPPER)",
                Some("[1,2]"),
            ),
            (
                "JSON_QUERY('[1, 2]', '$' WITH UNCONDITIONAL ARRAY WRAPPER)",
                Some("[[1,2]]"),
            ),
            (
                "JSON_QUERY('[1, 2]', '$' WITH ARRAY WRAPPER)",
                Some("[[1,2]]"),
            ),
            (
                "JSON_QUERY('[1, 2]', '$' WITHOUT ARRAY WRAPPER)",
                Some("[1,2]"),
            ),
            ("JSON_QUERY('1', '$')", None),
            (
                "JSON_QUERY('1', '$' WITH CONDITIONAL ARRAY WRAPPER)",
                Some("[1]"),
            ),
            (
                "JSON_QUERY('{}', 'lax $.invalid' EMPTY OBJECT ON EMPTY)",
                Some("{}"),
            ),
            (
                "JSON_QUERY('{}', 'strict $.invalid' EMPTY ARRAY ON ERROR)",
                Some("[]"),
            ),
            (
                "JSON_QUERY('{}', 'strict $.invalid' EMPTY ARRAY ON EMPTY)",
                None,
            ),
            (
                "JSON_QUERY('{}', 'lax $.invalid' EMPTY ARRAY ON ERROR)",
                None,
            ),
            (
                "JSON_QUERY('{\"a\":1}', 'lax $.a' EMPTY ARRAY ON EMPTY)",
                Some("[]"),
            ),
            (
                "JSON_QUERY('{\"a\":1}', 'strict $.a' EMPTY OBJECT ON ERROR)",
                Some("{}"),
            ),
            (
                "JSON_QUERY('not json', '$' NULL ON EMPTY EMPTY ARRAY ON ERROR)",
                Some("[]"),
            ),
            ("JSON_QUERY('[1]', '$' RETURNING STRING)", Some("[1]")),
        ] {
            assert_eq!(str_of(sql), want.map_or(Value::Null, text), "{sql}");
        }
        assert!(err_of("JSON_QUERY('[1]', '$' RETURNING ARRAY<STRING>)")
            .contains("only RETURNING STRING"));
        assert!(err_of("JSON_QUERY('[1]', 'a')").contains("starts with `$`"));
        assert!(err_of("JSON_QUERY('{}', 'lax $.a[*].c')").contains("`[*]`"));
        assert!(err_of("TYPEOF(1)").contains("TYPEOF"));
        let (s, r) = scope();
        let failed = std::panic::catch_unwind(|| {
            eval("JSON_QUERY('{}', 'strict $.x' ERROR ON ERROR)", &s, &r)
        })
        .expect_err("ERROR ON ERROR fails the task");
        let e = failed.downcast::<weir_runtime::UserError>().unwrap();
        assert!(e.0.contains("no result"), "{}", e.0);
        let failed =
            std::panic::catch_unwind(|| eval("JSON_QUERY('{}', 'lax $.x' ERROR ON EMPTY)", &s, &r))
                .expect_err("ERROR ON EMPTY fails the task");
        assert!(failed.downcast::<weir_runtime::UserError>().is_ok());
    }

    /// DECIMAL sums, differences, products and quotients typed as Flink's
    /// `LogicalTypeMerging` types them, and their values computed exactly
    /// before they are rounded to that type, as Flink's BigDecimals.
    #[test]
    fn decimal_arithmetic_has_flinks_types_and_exact_values() {
        let d = |p, s| DataType::Decimal {
            precision: p,
            scale: s,
        };
        let cast = |v: &str, p, s| format!("CAST({v} AS DECIMAL({p}, {s}))");
        // DECIMAL(p1 + p2 + 1, s1 + s2), and the scale gives way past 38.
        assert_eq!(
            ty_of(&format!("{} * {}", cast("1", 10, 2), cast("1", 5, 3))),
            d(16, 5)
        );
        assert_eq!(
            ty_of(&format!("{} * {}", cast("1", 20, 10), cast("1", 18, 8))),
            d(38, 17)
        );
        // 125 * 125 as DECIMAL(38, 18)s: 10^40 units before the scale gives
        // way to DECIMAL(38, 6), past an i128, yet 15625.000000 in Flink.
        let big = format!("{} * {}", cast("125", 38, 18), cast("-125", 38, 18));
        assert_eq!(ty_of(&big), d(38, 6));
        assert_eq!(str_of(&big), Value::decimal(-15_625_000_000));
        let third = format!(
            "{} * {}",
            cast("0.3333333333333333333", 38, 19),
            cast("1.5", 38, 19)
        );
        // 0.4999999999.. rounds up.
        assert_eq!(str_of(&third), Value::decimal(500_000));
        // Past 38 digits the product is NULL, as Flink's.
        let huge = format!(
            "{} * {}",
            cast("99999999999999999999", 38, 0),
            cast("99999999999999999999", 38, 0)
        );
        assert_eq!(str_of(&huge), Value::Null);
        // Sums: max(p1 - s1, p2 - s2) + max(s1, s2) + 1 digits.
        assert_eq!(
            ty_of(&format!("{} + {}", cast("1", 10, 2), cast("1", 5, 3))),
            d(12, 3)
        );
        assert_eq!(ty_of(&format!("{} + 1", cast("1", 10, 2))), d(13, 2));
        let sum = format!("{} - {}", cast("0.0000000005", 38, 10), cast("1", 20, 0));
        assert_eq!(ty_of(&sum), d(38, 9));
        // -0.9999999995 rounded half up (away from zero) at scale 9.
        assert_eq!(str_of(&sum), Value::decimal(-1_000_000_000));
        // A sum or difference past DECIMAL(38)'s 38 digits is NULL (it
        // printed 39 digits), as Flink's; at the bound it is the value.
        let nines = "99999999999999999999999999999999999999";
        for over in [
            format!("{} + 1", cast(nines, 38, 0)),
            format!("{} - -1", cast(nines, 38, 0)),
            format!("-1 - {}", cast(nines, 38, 0)),
            format!("{} + {}", cast(nines, 38, 0), cast(nines, 38, 0)),
            format!(
                "{} * 2",
                cast("9999999999999999999999999999999999999.9", 38, 1)
            ),
        ] {
            assert_eq!(str_of(&over), Value::Null, "{over}");
        }
        assert_eq!(
            str_of(&format!("{} + 0", cast(nines, 38, 0))),
            Value::decimal(10i128.pow(38) - 1)
        );
        // A quotient whose dividend at the divisor's scale passes an i128:
        // 10^17 / 3 as DECIMAL(38, 6) (10^19 units times 10^23).
        let quotient = format!(
            "{} / {}",
            cast("100000000000000000", 20, 2),
            cast("-3", 38, 18)
        );
        assert_eq!(ty_of(&quotient), d(38, 6));
        assert_eq!(
            str_of(&quotient),
            Value::decimal(-33_333_333_333_333_333_333_333)
        );
        let two_thirds = format!(
            "{} / {}",
            cast("200000000000000000", 20, 2),
            cast("3", 38, 18)
        );
        assert_eq!(
            str_of(&two_thirds),
            Value::decimal(66_666_666_666_666_666_666_667)
        );
    }

    #[test]
    fn numeric_functions() {
        let d = |p, s| DataType::Decimal {
            precision: p,
            scale: s,
        };
        // ROUND half away from zero, typed as Flink's.
        assert_eq!(str_of("ROUND(2.5)"), Value::decimal(3));
        assert_eq!(ty_of("ROUND(2.5)"), d(2, 0));
        assert_eq!(str_of("ROUND(-2.55, 1)"), Value::decimal(-26));
        assert_eq!(ty_of("ROUND(-2.55, 1)"), d(3, 1));
        assert_eq!(str_of("ROUND(1234.5, -2)"), Value::decimal(1200));
        assert_eq!(ty_of("ROUND(1234.5, -2)"), d(5, 0));
        assert_eq!(str_of("ROUND(1.25, 5)"), Value::decimal(125));
        assert_eq!(ty_of("ROUND(1.25, 5)"), d(3, 2));
        assert_eq!(str_of("ROUND(1250, -2)"), Value::Int(1300));
        assert_eq!(str_of("ROUND(-1250, -2)"), Value::Int(-1300));
        assert_eq!(str_of("ROUND(a, 1)"), Value::Int(7));
        assert_eq!(str_of("ROUND(2.675E0, 2)"), Value::Double(2.68));
        assert_eq!(str_of("ROUND(-0.5E0)"), Value::Double(-1.0));
        assert_eq!(str_of("ROUND(n, 2)"), Value::Null);
        assert_eq!(str_of("ROUND(1.5E0, n)"), Value::Null);
        assert!(err_of("ROUND(1.5, a)").contains("not a literal"));
        assert_eq!(
            str_of("ROUND(CAST(a AS DOUBLE) / 3, a - 5)"),
            Value::Double(2.33)
        );
        assert_eq!(str_of("TRUNCATE(42.345, 2)"), Value::decimal(4234));
        assert_eq!(str_of("TRUNCATE(-42.345)"), Value::decimal(-42));
        assert_eq!(str_of("TRUNCATE(42, -1)"), Value::Int(40));
        assert_eq!(str_of("TRUNCATE(-2.999E0, 2)"), Value::Double(-2.99));
        // FLOOR/CEIL of a DECIMAL lose the scale.
        assert_eq!(str_of("FLOOR(-1.5)"), Value::decimal(-2));
        assert_eq!(ty_of("FLOOR(-1.5)"), d(2, 0));
        assert_eq!(str_of("CEILING(1.25)"), Value::decimal(2));
        assert_eq!(str_of("CEIL(a)"), Value::Int(7));
        assert_eq!(str_of("POWER(2, 10)"), Value::Double(1024.0));
        assert_eq!(str_of("SQRT(a + 9)"), Value::Double(4.0));
        assert_eq!(str_of("SQRT(n)"), Value::Null);
        assert_eq!(str_of("LN(EXP(1))"), Value::Double(1.0));
        assert_eq!(str_of("LOG10(1000)"), Value::Double(3.0));
        assert_eq!(str_of("LOG2(8)"), Value::Double(3.0));
        assert_eq!(str_of("LOG(2, 8)"), Value::Double(3.0));
        assert_eq!(str_of("LOG(1)"), Value::Double(0.0));
        assert!(matches!(str_of("LN(-1)"), Value::Double(v) if v.is_nan()));
        assert_eq!(str_of("SIGN(-3)"), Value::Int(-1));
        assert_eq!(str_of("SIGN(2.50)"), Value::decimal(100));
        assert_eq!(str_of("SIGN(0E0)"), Value::Double(0.0));
        assert_eq!(str_of("PI()"), Value::Double(std::f64::consts::PI));
        assert_eq!(str_of("DEGREES(PI())"), Value::Double(180.0));
        assert_eq!(str_of("COS(0)"), Value::Double(1.0));
        assert!(err_of("SQRT(s)").contains("SQRT: argument 1 must be a number, got STRING"));
        assert!(err_of("ROUND(1.5, 's')").contains("ROUND: argument 2 must be an integer"));
        assert!(err_of("POWER(2)").contains("POWER takes 2 arguments, got 1"));
        // (not "2 to 18446744073709551615 arguments")
        // An ESCAPE character last or before anything but `_`, `%` or
        // itself is Flink's "Invalid escape sequence" (it matched the
        // next character as it is): when planned for a literal pattern,
        // failing the job for one read per row.
        assert!(err_of(r"s LIKE 'a\b' ESCAPE '\'").contains("invalid escape sequence"));
        assert!(err_of(r"s LIKE 'a\' ESCAPE '\'").contains("at character 2"));
        assert_eq!(str_of(r"'a_\' LIKE 'a\_\\' ESCAPE '\'"), Value::Bool(true));
        assert_eq!(str_of("'a%' LIKE 'a%%' ESCAPE '%'"), Value::Bool(true));
        let unwound = std::panic::catch_unwind(|| str_of(r"s LIKE s || '!' ESCAPE '!'"))
            .expect_err("a bad escape in a pattern read per row fails the job");
        let e = unwound.downcast::<weir_runtime::UserError>().unwrap();
        assert!(
            e.0.contains("invalid escape sequence in the pattern 'Hello!'"),
            "{}",
            e.0
        );
        assert!(err_of("CONCAT_WS('-')").contains("CONCAT_WS takes at least 2 arguments, got 1"));
        assert!(err_of("RAND()").contains("RAND"));
    }

    #[test]
    fn comparison_functions() {
        assert_eq!(str_of("GREATEST(1, a, 3)"), Value::Int(7));
        assert_eq!(str_of("LEAST(1.5, a)"), Value::decimal(15));
        assert_eq!(str_of("GREATEST(1, n)"), Value::Null);
        assert_eq!(str_of("GREATEST('b', s)"), text("b"));
        assert_eq!(str_of("GREATEST(2, 2.50)"), Value::decimal(250));
        assert!(err_of("GREATEST(1, s)").contains("GREATEST of INT and STRING"));
        assert_eq!(str_of("NULLIF(a, 7)"), Value::Null);
        assert_eq!(str_of("NULLIF(a, 8)"), Value::Int(7));
        assert_eq!(str_of("NULLIF(n, 8)"), Value::Null);
        assert_eq!(str_of("IF(a > 5, 'big', 'small')"), text("big"));
        assert_eq!(str_of("IF(n > 5, 1, 2.5)"), Value::decimal(25));
        assert!(err_of("IF(a, 1, 2)").contains("IF needs a BOOLEAN"));
        assert_eq!(str_of("n IS DISTINCT FROM a"), Value::Bool(true));
        assert_eq!(str_of("n IS NOT DISTINCT FROM NULL"), Value::Bool(true));
        assert_eq!(str_of("a IS DISTINCT FROM 7.0"), Value::Bool(false));
        assert_eq!(str_of("(n > 1) IS UNKNOWN"), Value::Bool(true));
        assert_eq!(str_of("(a > 1) IS NOT UNKNOWN"), Value::Bool(true));
    }

    #[test]
    fn string_functions() {
        assert_eq!(str_of("LPAD(s, 8, 'xy')"), text("xyxHello"));
        assert_eq!(str_of("LPAD(s, 2, 'xy')"), text("He"));
        assert_eq!(str_of("RPAD(s, 7, '.')"), text("Hello.."));
        assert_eq!(str_of("RPAD(s, -1, '.')"), Value::Null);
        assert_eq!(str_of("LPAD(s, 7, '')"), Value::Null);
        assert_eq!(str_of("LPAD(s, n, '.')"), Value::Null);
        // A result over 1 GiB fails the job before it is built (LPAD
        // allocated 2 GB; REPEAT was NULL), as Flink's Java strings fail
        // past 2^31 - 1 characters.
        for (sql, name) in [
            ("LPAD('a', 2147483647, 'x')", "LPAD"),
            ("RPAD(s, 1073741824, 'é')", "RPAD"),
            ("REPEAT('ab', 1073741824)", "REPEAT"),
            (
                "REPLACE(REPEAT('a', 1000000), 'a', REPEAT('b', 2000))",
                "REPLACE",
            ),
        ] {
            let unwound = std::panic::catch_unwind(|| str_of(sql)).expect_err(sql);
            let e = unwound.downcast::<weir_runtime::UserError>().expect(sql);
            assert!(e.0.starts_with(name) && e.0.contains("1 GiB"), "{}", e.0);
        }
        assert_eq!(
            str_of("CHAR_LENGTH(RPAD(s, 1000000, 'é'))"),
            Value::Int(1_000_000)
        );
        assert_eq!(str_of("LTRIM('  a b  ')"), text("a b  "));
        assert_eq!(str_of("RTRIM('  a b  ')"), text("  a b"));
        assert_eq!(str_of("TRIM(LEADING 'x' FROM 'xxaxx')"), text("axx"));
        assert_eq!(str_of("TRIM(TRAILING 'xy' FROM 'xyaxy')"), text("xya"));
        assert_eq!(str_of("TRIM(BOTH 'x' FROM 'xxaxx')"), text("a"));
        assert_eq!(str_of("TRIM('  a  ')"), text("a"));
        // SIMILAR TO, as Calcite translates it; NULL in, NULL out.
        assert_eq!(str_of("s SIMILAR TO 'H%(o|x)'"), Value::Bool(true));
        assert_eq!(str_of("s NOT SIMILAR TO 'H_llo'"), Value::Bool(false));
        assert_eq!(
            str_of("'10%' SIMILAR TO '10!%' ESCAPE '!'"),
            Value::Bool(true)
        );
        assert_eq!(str_of("CAST(n AS STRING) SIMILAR TO '%'"), Value::Null);
        assert!(err_of("s SIMILAR TO s").contains("not a string literal"));
        // A number times an interval, either way round.
        assert_eq!(
            str_of("ts + a * INTERVAL '1' MINUTE"),
            str_of("ts + INTERVAL '1' MINUTE * a")
        );
        assert_eq!(
            str_of("2 * INTERVAL '1' SECOND + ts"),
            str_of("TIMESTAMP '2024-01-02 03:04:07.678'")
        );
        // Calcite's trims of spaces without characters named.
        assert_eq!(str_of("TRIM(LEADING FROM '  a  ')"), text("a  "));
        assert_eq!(str_of("TRIM(TRAILING FROM '  a  ')"), text("  a"));
        assert_eq!(str_of("TRIM(BOTH FROM '  a  ')"), text("a"));
        assert_eq!(str_of("TRIM(FROM s || '  ')"), text("Hello"));
        assert_eq!(
            str_of("INITCAP('hello wORLD 9lives-x')"),
            text("Hello World 9lives-X")
        );
        assert_eq!(str_of("REVERSE('café')"), text("éfac"));
        // Digests of the UTF-8 bytes, lower-case hex (the RFCs' vectors).
        assert_eq!(str_of("MD5('')"), text("d41d8cd98f00b204e9800998ecf8427e"));
        assert_eq!(
            str_of("MD5('abc')"),
            text("900150983cd24fb0d6963f7d28e17f72")
        );
        assert_eq!(
            str_of("SHA1('abc')"),
            text("a9993e364706816aba3e25717850c26c9cd0d89d")
        );
        assert_eq!(
            str_of("SHA256('abc')"),
            text("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(
            str_of("SHA2('abc', 224)"),
            text("23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7")
        );
        assert_eq!(str_of("SHA2('abc', 512)"), str_of("SHA512('abc')"));
        assert_eq!(str_of("MD5(CAST(NULL AS STRING))"), Value::Null);
        assert!(err_of("SHA2('abc', 100)").contains("224, 256, 384 or 512"));
        assert_eq!(str_of("TO_BASE64('hello wörld')"), text("aGVsbG8gd8O2cmxk"));
        assert_eq!(
            str_of("FROM_BASE64('aGVsbG8gd8O2cmxk')"),
            text("hello wörld")
        );
        assert_eq!(str_of("FROM_BASE64('not base64!')"), Value::Null);
        // Java's decoder takes text without its padding (this was NULL)
        // and does not check the last character's unused bits.
        assert_eq!(str_of("FROM_BASE64('YQ')"), text("a"));
        assert_eq!(str_of("FROM_BASE64('YR==')"), text("a"));
        assert_eq!(str_of("FROM_BASE64('YWI')"), text("ab"));
        assert_eq!(str_of("FROM_BASE64('YQ=')"), Value::Null);
        // SQL/JSON paths: members, elements, quoted names, modes; NULL (or
        // FALSE) where the path leads nowhere or the text is not JSON.
        let doc = r#"'{"a": {"b": [10, "x", null]}, "t": true, "a b": 1.5}'"#;
        let jv = |path: &str| str_of(&format!("JSON_VALUE({doc}, '{path}')"));
        assert_eq!(jv("$.a.b[1]"), text("x"));
        assert_eq!(jv("$.a.b[0]"), text("10"));
        assert_eq!(jv("lax $.t"), text("true"));
        assert_eq!(jv("strict $.\"a b\""), text("1.5"));
        assert_eq!(jv("$[''a b'']"), text("1.5"));
        for nothing in ["$.a", "$.a.b", "$.a.b[2]", "$.a.b[3]", "$.missing", "$.t.x"] {
            assert_eq!(jv(nothing), Value::Null, "{nothing}");
        }
        assert_eq!(str_of("JSON_VALUE('not json', '$.a')"), Value::Null);
        // RETURNING: the value in that type, NULL where it is not one.
        let jr =
            |path: &str, t: &str| str_of(&format!("JSON_VALUE({doc}, '{path}' RETURNING {t})"));
        assert_eq!(jr("$.a.b[0]", "INT"), Value::Int(10));
        assert_eq!(jr("$.a.b[0]", "DOUBLE"), Value::Double(10.0));
        assert_eq!(jr("lax $.t", "BOOLEAN"), Value::Bool(true));
        assert_eq!(jr("$.a.b[1]", "INT"), Value::Null);
        assert_eq!(
            ty_of("JSON_VALUE('{}', '$.a' RETURNING BIGINT)"),
            DataType::BigInt
        );
        let je = |path: &str| str_of(&format!("JSON_EXISTS({doc}, '{path}')"));
        assert_eq!(je("$.a.b[2]"), Value::Bool(true));
        assert_eq!(je("$.a.c"), Value::Bool(false));
        assert_eq!(str_of("JSON_EXISTS('{', '$')"), Value::Bool(false));
        assert!(err_of("JSON_VALUE('{}', 'a.b')").contains("starts with `$`"));
        assert!(err_of("JSON_VALUE('{}', '$[x]')").contains("neither an array index"));
        assert_eq!(str_of("REPEAT('ab', 3)"), text("ababab"));
        assert_eq!(str_of("REPEAT('ab', -1)"), text(""));
        assert_eq!(str_of("LEFT(s, 2)"), text("He"));
        assert_eq!(str_of("LEFT(s, -2)"), text(""));
        assert_eq!(str_of("RIGHT(s, 3)"), text("llo"));
        assert_eq!(str_of("RIGHT(s, 30)"), text("Hello"));
        assert_eq!(str_of("LOCATE('l', s)"), Value::Int(3));
        assert_eq!(str_of("LOCATE('l', s, 4)"), Value::Int(4));
        assert_eq!(str_of("LOCATE('l', s, 6)"), Value::Int(0));
        assert_eq!(str_of("LOCATE('x', s)"), Value::Int(0));
        assert_eq!(str_of("INSTR(s, 'llo')"), Value::Int(3));
        assert_eq!(str_of("POSITION('lo' IN s)"), Value::Int(4));
        assert_eq!(str_of("CONCAT_WS('-', s, NULL, 'x', a)"), text("Hello-x-7"));
        assert_eq!(str_of("CONCAT_WS(NULL, s)"), Value::Null);
        assert_eq!(str_of("SPLIT_INDEX('a/b//c', '/', 3)"), text("c"));
        assert_eq!(str_of("SPLIT_INDEX('a/b//c', '/', 2)"), text(""));
        assert_eq!(str_of("SPLIT_INDEX('a/b', '/', 2)"), Value::Null);
        assert_eq!(str_of("SPLIT_INDEX('a/b', '/', -1)"), Value::Null);
        assert_eq!(str_of("SPLIT_INDEX('a/b', 47, 1)"), text("b"));
        assert_eq!(str_of("SPLIT_INDEX('a/b', 300, 1)"), Value::Null);
        assert_eq!(str_of("SPLIT_INDEX('', '/', 0)"), Value::Null);
        assert_eq!(str_of("ASCII('abc')"), Value::Int(97));
        assert_eq!(str_of("ASCII('')"), Value::Int(0));
        assert_eq!(str_of("CHR(97)"), text("a"));
        assert_eq!(str_of("CHR(353)"), text("a"));
        assert_eq!(str_of("CHR(n)"), Value::Null);
        assert_eq!(
            str_of("OVERLAY('This is an old string' PLACING ' new' FROM 10 FOR 5)"),
            text("This is a new string")
        );
        assert_eq!(str_of("OVERLAY(s PLACING 'J' FROM 1)"), text("Jello"));
        // SUBSTRING as Flink's runtime cuts: 0 is the first character, a
        // negative start counts from the end, past either end is ''.
        for (call, want) in [
            ("SUBSTRING(s FROM 2 FOR 3)", "ell"),
            ("SUBSTRING(s FROM 4)", "lo"),
            ("SUBSTRING(s, 0, 2)", "He"),
            ("SUBSTRING(s, -2)", "lo"),
            ("SUBSTRING(s, -4, 2)", "el"),
            ("SUBSTRING(s, -5)", "Hello"),
            ("SUBSTRING(s, -6)", ""),
            ("SUBSTRING(s, 6)", ""),
            ("SUBSTRING(s, 2, 100)", "ello"),
            ("SUBSTRING(s, 2, 0)", ""),
            ("SUBSTR('héllo', -4, 2)", "él"),
        ] {
            assert_eq!(str_of(call), text(want), "{call}");
        }
        assert_eq!(str_of("SUBSTRING(s, 1, -1)"), Value::Null);
        assert_eq!(str_of("SUBSTRING(s, n)"), Value::Null);
        assert_eq!(str_of("OVERLAY(s PLACING '!' FROM 9)"), text("Hello"));
        assert_eq!(str_of("OVERLAY(s PLACING '!' FROM 5 FOR 3)"), text("Hell!"));
        assert_eq!(str_of("OVERLAY(s PLACING '!' FROM 2 FOR 0)"), text("H!"));
        assert_eq!(str_of("ASCII('é')"), Value::Int(-61));
        assert_eq!(str_of("INSTR('abcabc', 'bc', 1, 2)"), Value::Int(5));
        assert_eq!(str_of("INSTR('abcabc', 'bc', -1, 1)"), Value::Int(5));
        assert_eq!(str_of("INSTR('abcabc', 'bc', -1, 2)"), Value::Int(2));
        assert_eq!(str_of("INSTR('abcabc', 'bc', 0)"), Value::Int(0));
        assert_eq!(str_of("INSTR('abcabc', 'bc', 1, 0)"), Value::Null);
        assert_eq!(str_of("LOCATE('', s, 9)"), Value::Int(1));
        assert_eq!(str_of("LOCATE('H', s, -3)"), Value::Int(1));
        assert_eq!(str_of("OVERLAY(s PLACING 'x' FROM n)"), Value::Null);
        assert_eq!(str_of("BIN(12)"), text("1100"));
        assert_eq!(str_of("BIN(-1)"), text(&"1".repeat(64)));
        assert_eq!(str_of("HEX(100)"), text("64"));
        assert_eq!(str_of("HEX('hello,world')"), text("68656C6C6F2C776F726C64"));
        assert_eq!(str_of("HEX(n)"), Value::Null);
        assert!(
            err_of("LPAD(s, 's', 'x')").contains("LPAD: argument 2 must be an integer, got STRING")
        );
        assert!(err_of("REPEAT(a, 2)").contains("REPEAT: argument 1 must be STRING, got INT"));
    }

    #[test]
    fn regular_expressions() {
        let url = "'https://x.com/a/b?query=1&channel_id=42'";
        let ex = format!("REGEXP_EXTRACT({url}, '(&|^)channel_id=([^&]*)', 2)");
        assert_eq!(str_of(&ex), text("42"));
        assert_eq!(
            str_of("REGEXP_EXTRACT('foothebar', 'foo(.*?)(bar)', 2)"),
            text("bar")
        );
        assert_eq!(str_of("REGEXP_EXTRACT('foothebar', 'o+')"), text("oo"));
        assert_eq!(str_of("REGEXP_EXTRACT('x', 'y')"), Value::Null);
        assert_eq!(str_of("REGEXP_EXTRACT('ab', '(a)|(b)', 2)"), Value::Null);
        assert_eq!(str_of("REGEXP_EXTRACT('ab', '(a)', 5)"), Value::Null);
        assert_eq!(str_of("REGEXP_EXTRACT(s, s)"), text("Hello"));
        assert_eq!(str_of("REGEXP_EXTRACT(NULL, 'a')"), Value::Null);
        assert_eq!(str_of("REGEXP(s, 'l+o$')"), Value::Bool(true));
        assert_eq!(str_of("REGEXP(s, '^l')"), Value::Bool(false));
        assert_eq!(str_of("REGEXP(s, '')"), Value::Bool(false));
        assert_eq!(str_of("s REGEXP 'ell'"), Value::Bool(true));
        assert_eq!(str_of("s NOT REGEXP 'ell'"), Value::Bool(false));
        assert_eq!(
            str_of("REGEXP_REPLACE('a1b22c', '[0-9]+', '#')"),
            text("a#b#c")
        );
        assert_eq!(str_of("REGEXP_REPLACE('ab', '(a)', '$1$1')"), text("$1$1b"));
        // Java's \d and \w are ASCII.
        assert_eq!(str_of("REGEXP_REPLACE('1٣x', '\\d', '#')"), text("#٣x"));
        assert_eq!(str_of("REGEXP('é', '\\w')"), Value::Bool(false));
        assert_eq!(
            str_of("REGEXP_REPLACE(s, 'l', CAST(n AS STRING))"),
            Value::Null
        );
        assert!(err_of("REGEXP_EXTRACT(s, '(a)\\1')").contains("no backreferences"));
        assert!(err_of("REGEXP(s, '(?=a)')").contains("REGEXP: the pattern `(?=a)`"));
        assert!(err_of("REGEXP(s, 1)").contains("REGEXP: argument 2 must be STRING"));
    }

    #[test]
    fn time_functions() {
        let ts = |t: &str| Value::Timestamp(parse_timestamp(t).unwrap());
        assert_eq!(
            str_of("UNIX_TIMESTAMP('1970-01-01 00:01:40')"),
            Value::BigInt(100)
        );
        assert_eq!(
            str_of("UNIX_TIMESTAMP('1970-01-01 00:01:40.999')"),
            Value::BigInt(100)
        );
        assert_eq!(
            str_of("UNIX_TIMESTAMP('02/01/2024', 'dd/MM/yyyy')"),
            Value::BigInt(1_704_153_600)
        );
        assert_eq!(str_of("UNIX_TIMESTAMP('x')"), Value::BigInt(i64::MIN));
        assert_eq!(str_of("UNIX_TIMESTAMP(NULL)"), Value::Null);
        assert_eq!(str_of("FROM_UNIXTIME(44)"), text("1970-01-01 00:00:44"));
        assert_eq!(
            str_of("FROM_UNIXTIME(86400, 'yyyy/MM/dd')"),
            text("1970/01/02")
        );
        assert_eq!(
            str_of("TO_TIMESTAMP('2024/01/02 03', 'yyyy/MM/dd HH')"),
            ts("2024-01-02 03:00:00")
        );
        assert_eq!(
            str_of("TO_TIMESTAMP('2024/13/02', 'yyyy/MM/dd')"),
            Value::Null
        );
        // Flink falls back to the default form when the pattern fails.
        assert_eq!(
            str_of("TO_TIMESTAMP('2024-1-2 03:00:00', 'yyyy/MM/dd')"),
            ts("2024-01-02 03:00:00")
        );
        assert_eq!(
            str_of("TO_DATE('2024-02-29 10:00:00.0')"),
            Value::Date(parse_date("2024-02-29").unwrap())
        );
        assert_eq!(
            str_of("TO_DATE('2024-01-32', 'yyyy-MM-dd')"),
            Value::Date(parse_date("2024-02-01").unwrap())
        );
        assert_eq!(str_of("TO_DATE('x', 'yyyy-MM-dd')"), Value::Null);
        assert_eq!(
            str_of("TO_DATE('2024-02-29')"),
            Value::Date(parse_date("2024-02-29").unwrap())
        );
        assert_eq!(
            str_of("TO_DATE('20240229', 'yyyyMMdd')"),
            Value::Date(parse_date("2024-02-29").unwrap())
        );
        assert_eq!(str_of("TO_DATE('2023-02-29')"), Value::Null);
        assert_eq!(
            str_of("TIMESTAMPADD(HOUR, 2, ts)"),
            ts("2024-01-02 05:04:05.678")
        );
        assert_eq!(
            str_of("TIMESTAMPADD(MONTH, 1, TIMESTAMP '2024-01-31 10:00:00')"),
            ts("2024-02-29 10:00:00")
        );
        assert_eq!(
            str_of("TIMESTAMPADD(YEAR, -1, DATE '2024-02-29')"),
            Value::Date(parse_date("2023-02-28").unwrap())
        );
        assert_eq!(
            ty_of("TIMESTAMPADD(HOUR, 1, DATE '2024-02-29')"),
            DataType::Timestamp
        );
        assert_eq!(str_of("TIMESTAMPADD(DAY, n, ts)"), Value::Null);
        assert_eq!(
            str_of("TIMESTAMP '2024-01-31 10:00:00' + INTERVAL '1' MONTH"),
            ts("2024-02-29 10:00:00")
        );
        assert_eq!(
            str_of("DATE '2024-03-31' - INTERVAL '1-1' YEAR TO MONTH"),
            Value::Date(parse_date("2023-02-28").unwrap())
        );
        assert_eq!(
            str_of("INTERVAL '2' YEAR + ts"),
            ts("2026-01-02 03:04:05.678")
        );
        assert!(err_of("a + INTERVAL '1' MONTH").contains("year-month interval"));
        assert!(err_of("ts + INTERVAL 'x' MONTH").contains("not a year-month interval"));
        assert_eq!(
            str_of("TIMESTAMPDIFF(HOUR, ts, TIMESTAMP '2024-01-02 01:00:00')"),
            Value::Int(-2)
        );
        assert_eq!(
            str_of("TIMESTAMPDIFF(DAY, DATE '2024-01-01', ts)"),
            Value::Int(1)
        );
        assert_eq!(
            str_of("TIMESTAMPDIFF(MONTH, TIMESTAMP '2024-01-31 00:00:00', TIMESTAMP '2024-02-29 00:00:00')"),
            Value::Int(1)
        );
        assert_eq!(
            str_of("TIMESTAMPDIFF(MONTH, TIMESTAMP '2024-01-15 10:00:00', TIMESTAMP '2024-03-15 09:00:00')"),
            Value::Int(1)
        );
        assert_eq!(
            str_of("TIMESTAMPDIFF(YEAR, TIMESTAMP '2024-03-15 09:00:00', TIMESTAMP '2020-01-15 10:00:00')"),
            Value::Int(-4)
        );
        assert!(err_of("TIMESTAMPADD(FORTNIGHT, 1, ts)")
            .contains("TIMESTAMPADD: argument 1 must be a unit"));
        assert!(
            err_of("TIMESTAMPDIFF(DAY, s, ts)").contains("argument 2 must be a TIMESTAMP or DATE")
        );
        assert!(err_of("UNIX_TIMESTAMP(s, s)").contains("not a string literal"));
        assert!(err_of("FROM_UNIXTIME(1, 'GGG')").contains("FROM_UNIXTIME: DATE_FORMAT pattern"));
        assert_eq!(
            str_of("FROM_UNIXTIME(0, 'yyyy-MM-dd HH:mm:ss z X w')"),
            text("1970-01-01 00:00:00 UTC Z 1")
        );
        assert_eq!(
            str_of("TO_TIMESTAMP('2024-01-02T03:04:05+05:00', 'yyyy-MM-dd''T''HH:mm:ssXXX')"),
            str_of("TIMESTAMP '2024-01-02 03:04:05'")
        );
        assert_eq!(
            str_of("UNIX_TIMESTAMP('1970-01-01 01:00:00 +0100', 'yyyy-MM-dd HH:mm:ss Z')"),
            Value::BigInt(0)
        );
        // The wall clock, per row.
        assert_eq!(ty_of("CURRENT_TIMESTAMP"), DataType::TimestampLtz);
        assert_eq!(ty_of("LOCALTIMESTAMP"), DataType::Timestamp);
        assert_eq!(ty_of("CURRENT_DATE"), DataType::Date);
        let Value::BigInt(now) = str_of("UNIX_TIMESTAMP()") else {
            panic!()
        };
        assert!(now > 1_700_000_000);
        assert_eq!(
            str_of("CURRENT_DATE > DATE '2024-01-01'"),
            Value::Bool(true)
        );
        assert_eq!(str_of("NOW() > ts"), Value::Bool(true));
    }

    /// A DATE compared with a timestamp is its midnight, on either side,
    /// in BETWEEN and in IN (compared raw, its days met milliseconds).
    #[test]
    fn dates_compare_with_timestamps_as_their_midnights() {
        let b = Value::Bool;
        let ts = "TIMESTAMP '2024-01-01 10:00:00'";
        for (sql, want) in [
            (format!("DATE '2024-01-02' < {ts}"), false),
            (format!("DATE '2024-01-02' > {ts}"), true),
            (format!("{ts} < DATE '2024-01-02'"), true),
            (
                "DATE '2024-01-01' = TIMESTAMP '2024-01-01 00:00:00'".to_string(),
                true,
            ),
            (format!("DATE '2024-01-01' < {ts}"), true),
            (
                format!("{ts} BETWEEN DATE '2024-01-01' AND DATE '2024-01-02'"),
                true,
            ),
            (
                format!("DATE '2024-01-01' IN (TIMESTAMP '2024-01-01 00:00:00', {ts})"),
                true,
            ),
            (format!("{ts} IN (DATE '2024-01-01')"), false),
        ] {
            assert_eq!(str_of(&sql), b(want), "{sql}");
        }
    }

    #[test]
    fn interval_literals() {
        let iv = |sql: &str| {
            let e = Parser::new(&FlinkDialect::default())
                .try_with_sql(sql)
                .unwrap()
                .parse_expr()
                .unwrap();
            match e {
                Expr::Interval(i) => interval_ms(&i).unwrap(),
                _ => panic!(),
            }
        };
        assert_eq!(iv("INTERVAL '5' SECOND"), 5000);
        assert_eq!(iv("INTERVAL '10' MINUTES"), 600_000);
        assert_eq!(iv("INTERVAL '1.5' SECOND"), 1500);
        assert_eq!(
            iv("INTERVAL '1 02:00:00' DAY TO SECOND"),
            DAY_MS + 7_200_000
        );
        // Every qualifier reads its own fields, from its leading one.
        assert_eq!(iv("INTERVAL '10:30' MINUTE TO SECOND"), 630_000);
        assert_eq!(iv("INTERVAL '1:30' MINUTE TO SECOND"), 90_000);
        assert_eq!(iv("INTERVAL '-10:30' MINUTE TO SECOND"), -630_000);
        assert_eq!(iv("INTERVAL '100:05.25' MINUTE TO SECOND"), 6_005_250);
        assert_eq!(iv("INTERVAL '10:30' HOUR TO MINUTE"), 37_800_000);
        assert_eq!(iv("INTERVAL '2:03:04' HOUR TO SECOND"), 7_384_000);
        assert_eq!(iv("INTERVAL '1 12' DAY TO HOUR"), DAY_MS + 43_200_000);
        assert_eq!(iv("INTERVAL '1 12:30' DAY TO MINUTE"), DAY_MS + 45_000_000);
        assert_eq!(
            iv("INTERVAL '3 02:03:04.5' DAY TO SECOND"),
            3 * DAY_MS + 7_384_500
        );
        let err = |sql: &str| {
            let e = Parser::new(&FlinkDialect::default())
                .try_with_sql(sql)
                .unwrap()
                .parse_expr()
                .unwrap();
            match e {
                Expr::Interval(i) => interval_ms(&i).unwrap_err().to_string(),
                _ => panic!(),
            }
        };
        for bad in [
            "INTERVAL '10:30' MINUTE TO MINUTE",
            "INTERVAL '10:30:00' MINUTE TO SECOND",
            "INTERVAL '10:60' MINUTE TO SECOND",
            "INTERVAL '1 24' DAY TO HOUR",
            "INTERVAL '10:3x' MINUTE TO SECOND",
            "INTERVAL '10.5:30' MINUTE TO SECOND",
        ] {
            let e = err(bad);
            assert!(e.contains("not an interval of that form"), "{bad}: {e}");
        }
        assert!(err("INTERVAL '1:2' SECOND TO MINUTE").contains("INTERVAL '1:2'"));
    }

    #[test]
    fn a_null_literal_takes_the_type_of_its_context() {
        let (s, r) = scope();
        // IN: the NULL is compared as an INT; a value not found among the
        // others is then unknown, as SQL's IN.
        assert_eq!(eval("a IN (5, 7, NULL)", &s, &r), Value::Bool(true));
        assert_eq!(eval("a IN (5, NULL)", &s, &r), Value::Null);
        assert_eq!(eval("a NOT IN (5, NULL)", &s, &r), Value::Null);
        assert_eq!(eval("NULL IN (1, 2)", &s, &r), Value::Null);
        let Scalar::InList(_, items, _) = compiled("a IN (5, NULL)").unwrap() else {
            panic!("an IN list");
        };
        assert_eq!(items[1].ty(), DataType::Int);
        assert!(err_of("a IN (5, 'x')").contains("'x' compared with INT: not an integer"));
        assert!(err_of("a IN (5, TRUE)").contains("IN of INT and BOOLEAN"));
        // CASE, COALESCE, IF and NULLIF: the others' type.
        assert_eq!(ty_of("CASE WHEN a > 1 THEN NULL ELSE 1 END"), DataType::Int);
        assert_eq!(ty_of("COALESCE(NULL, a)"), DataType::Int);
        assert_eq!(
            ty_of("IF(a > 1, NULL, CAST(a AS BIGINT))"),
            DataType::BigInt
        );
        assert_eq!(eval("COALESCE(NULL, n, a)", &s, &r), Value::Int(7));
    }

    #[test]
    fn branches_widen_to_their_least_common_type() {
        let d = |precision, scale| DataType::Decimal { precision, scale };
        // An INT holds 10 integer digits: with DECIMAL(5, 2) it meets in
        // DECIMAL(12, 2), not DECIMAL(5, 2) (which would not hold it).
        assert_eq!(ty_of("CASE WHEN a > 1 THEN a ELSE 1.25 END"), d(12, 2));
        assert_eq!(
            ty_of("COALESCE(CAST(a AS DECIMAL(10, 2)), CAST(a AS DECIMAL(5, 3)))"),
            d(11, 3)
        );
        assert_eq!(ty_of("COALESCE(n, CAST(a AS BIGINT))"), DataType::BigInt);
        assert_eq!(
            ty_of("COALESCE(n, 1.5, CAST(a AS DOUBLE))"),
            DataType::Double
        );
        // 7 as DECIMAL(11, 1): 7.0
        assert_eq!(
            str_of("CASE WHEN a > 1 THEN a ELSE 0.5 END"),
            Value::decimal(70)
        );
        assert!(err_of("COALESCE(a, s)").contains("COALESCE of INT and STRING"));
        // Flink's product type: DECIMAL(p1 + p2 + 1, s1 + s2), so an IF of
        // a DECIMAL(10, 2) and INT * 1.5 (DECIMAL(13, 1)) is DECIMAL(14, 2).
        assert_eq!(ty_of("a * 1.5"), d(13, 1));
        assert_eq!(
            ty_of("IF(a > 1, CAST(a AS DECIMAL(10, 2)), a * 1.5)"),
            d(14, 2)
        );
        assert_eq!(
            ty_of("CAST(a AS DECIMAL(30, 10)) * CAST(a AS DECIMAL(20, 10))"),
            d(38, 7)
        );
    }

    #[test]
    fn boolean_as_string_is_upper_case() {
        assert_eq!(str_of("CAST(a > 1 AS STRING)"), text("TRUE"));
        assert_eq!(str_of("CAST(a < 1 AS STRING)"), text("FALSE"));
        assert_eq!(str_of("CAST(n > 1 AS STRING)"), Value::Null);
        // and back
        assert_eq!(
            str_of("CAST(CAST(a > 1 AS STRING) AS BOOLEAN)"),
            Value::Bool(true)
        );
    }

    #[test]
    fn double_to_decimal_reads_the_shortest_decimal_text() {
        let cast = |x: f64, p: u8, sc: u8| {
            cast(
                Value::Double(x),
                DataType::Double,
                DataType::Decimal {
                    precision: p,
                    scale: sc,
                },
            )
        };
        // Not the binary fraction's digits 0.1000000000000000055511..
        assert_eq!(cast(0.1, 30, 25), Value::decimal(10i128.pow(24)));
        assert_eq!(cast(1e30, 38, 0), Value::decimal(10i128.pow(30)));
        assert_eq!(
            cast(123.456, 38, 18),
            Value::decimal(123_456 * 10i128.pow(15))
        );
        assert_eq!(cast(1e-7, 10, 7), Value::decimal(1));
        assert_eq!(cast(1e-300, 38, 38), Value::decimal(0));
        assert_eq!(cast(-3.3, 5, 0), Value::decimal(-3));
        // Half up, away from zero, on the decimal text: 2.675 is 2.68
        // (its binary value is 2.67499..).
        assert_eq!(cast(2.675, 5, 2), Value::decimal(268));
        assert_eq!(cast(-2.675, 5, 2), Value::decimal(-268));
        assert_eq!(cast(0.5, 5, 0), Value::decimal(1));
        assert_eq!(cast(9.99, 3, 1), Value::decimal(100));
        // Too many digits for the precision, for 38 digits, or no number.
        assert_eq!(cast(9.99, 2, 1), Value::Null);
        assert_eq!(cast(1e30, 38, 25), Value::Null);
        assert_eq!(cast(1e38, 38, 0), Value::Null);
        assert_eq!(cast(f64::NAN, 10, 2), Value::Null);
        assert_eq!(cast(f64::INFINITY, 10, 2), Value::Null);
        assert_eq!(
            str_of("CAST(CAST('0.1' AS DOUBLE) AS DECIMAL(30, 25))"),
            Value::decimal(10i128.pow(24))
        );
    }

    /// Flink's ELT, IS_DIGIT, IS_ALPHA, IS_DECIMAL, TRANSLATE,
    /// REGEXP_SUBSTR, PARSE_URL and HASH_CODE, with their NULLs.
    #[test]
    fn elt_char_tests_translate_regexp_substr_parse_url_hash_code() {
        assert_eq!(
            str_of("ELT(2, 'scala-1', 'java-2', 'go-3')"),
            text("java-2")
        );
        assert_eq!(str_of("ELT(a, 'x', s)"), Value::Null); // 7 is past the end
        assert_eq!(str_of("ELT(0, 'x')"), Value::Null);
        assert_eq!(str_of("ELT(n, 'x')"), Value::Null);
        assert_eq!(str_of("ELT(1, 1, CAST(2 AS BIGINT))"), Value::BigInt(1));
        assert_eq!(
            ty_of("ELT(1, 1, 2.5)"),
            DataType::Decimal {
                precision: 11,
                scale: 1
            }
        );
        assert!(err_of("ELT('1', 'x')").contains("ELT: argument 1"));
        assert_eq!(str_of("IS_DIGIT('0123')"), Value::Bool(true));
        assert_eq!(str_of("IS_DIGIT('12.5')"), Value::Bool(false));
        assert_eq!(str_of("IS_DIGIT('')"), Value::Bool(false));
        assert_eq!(str_of("IS_DIGIT(a)"), Value::Bool(true));
        assert_eq!(str_of("IS_DIGIT(CAST(n AS STRING))"), Value::Null);
        assert_eq!(str_of("IS_ALPHA(s)"), Value::Bool(true));
        assert_eq!(str_of("IS_ALPHA('ab c')"), Value::Bool(false));
        assert_eq!(str_of("IS_ALPHA(a)"), Value::Bool(false));
        assert_eq!(str_of("IS_DECIMAL('-1.5e3')"), Value::Bool(true));
        assert_eq!(str_of("IS_DECIMAL(s)"), Value::Bool(false));
        assert_eq!(str_of("IS_DECIMAL(2.5)"), Value::Bool(true));
        assert!(
            err_of("IS_DIGIT(ts)").contains("IS_DIGIT: argument 1 must be a STRING or a number")
        );
        assert_eq!(str_of("TRANSLATE('AaBbCc', 'abc', '1')"), text("A1BC"));
        assert_eq!(
            str_of("TRANSLATE(s, 'l', CAST(NULL AS STRING))"),
            text("Heo")
        );
        assert_eq!(
            str_of("TRANSLATE(s, CAST(NULL AS STRING), 'x')"),
            text("Hello")
        );
        assert_eq!(
            str_of("TRANSLATE(CAST(n AS STRING), 'a', 'b')"),
            Value::Null
        );
        assert_eq!(
            str_of("REGEXP_SUBSTR('Steven Jones and Stephen Smith', 'Ste(v|ph)en')"),
            text("Steven")
        );
        assert_eq!(str_of("REGEXP_SUBSTR(s, 'x+')"), Value::Null);
        assert_eq!(str_of("REGEXP_SUBSTR(s, 'l+')"), text("ll"));
        // Flink 2's REGEXP_COUNT, REGEXP_INSTR, STARTSWITH, ENDSWITH,
        // URL_ENCODE and URL_DECODE.
        assert_eq!(
            str_of("REGEXP_COUNT('Steven Jones and Stephen Smith', 'Ste(v|ph)en')"),
            Value::Int(2)
        );
        assert_eq!(str_of("REGEXP_COUNT(s, 'x')"), Value::Int(0));
        assert_eq!(str_of("REGEXP_COUNT('ab', '')"), Value::Int(3));
        assert_eq!(str_of("REGEXP_COUNT(s, CAST(NULL AS STRING))"), Value::Null);
        assert_eq!(str_of("REGEXP_INSTR('héllo', 'l+')"), Value::Int(3));
        assert_eq!(str_of("REGEXP_INSTR(s, 'x')"), Value::Int(0));
        assert_eq!(str_of("REGEXP_INSTR(s, s || '(')"), Value::Null);
        assert_eq!(str_of("STARTSWITH(s, 'He')"), Value::Bool(true));
        assert_eq!(str_of("STARTSWITH(s, 'he')"), Value::Bool(false));
        assert_eq!(str_of("ENDSWITH(s, '')"), Value::Bool(true));
        assert_eq!(str_of("ENDSWITH(s, CAST(n AS STRING))"), Value::Null);
        assert_eq!(str_of("URL_ENCODE('a b/é')"), text("a+b%2F%C3%A9"));
        assert_eq!(str_of("URL_DECODE('a+b%2F%C3%A9')"), text("a b/é"));
        assert_eq!(str_of("URL_DECODE('50%')"), Value::Null);
        let url = "'http://facebook.com/path/p1.php?query=1&k=v#frag'";
        let part = |p: &str| str_of(&format!("PARSE_URL({url}, {p})"));
        assert_eq!(part("'HOST'"), text("facebook.com"));
        assert_eq!(part("'QUERY'"), text("query=1&k=v"));
        assert_eq!(part("'QUERY', 'k'"), text("v"));
        assert_eq!(part("'QUERY', 'nope'"), Value::Null);
        assert_eq!(part("'FILE'"), text("/path/p1.php?query=1&k=v"));
        assert_eq!(part("'USERINFO'"), Value::Null);
        assert_eq!(part("CAST(NULL AS STRING)"), Value::Null);
        assert_eq!(str_of("PARSE_URL(s, 'HOST')"), Value::Null);
        assert_eq!(str_of("HASH_CODE(s)"), Value::Int(69_609_650));
        assert_eq!(str_of("HASH_CODE(CAST(n AS STRING))"), Value::Null);
    }

    /// FLOAT and REAL are Flink's 4-byte float: values rounded to `f32`,
    /// arithmetic with integers in `f32`, with a DECIMAL or DOUBLE in
    /// DOUBLE, and printed with the float's shortest digits.
    #[test]
    fn float_is_a_four_byte_float() {
        assert_eq!(
            str_of("CAST(CAST(0.1 AS FLOAT) AS DOUBLE)"),
            Value::Double(f64::from(0.1f32))
        );
        assert_eq!(str_of("CAST(CAST(0.1 AS REAL) AS STRING)"), text("0.1"));
        assert_eq!(
            str_of("CAST(CAST(1.1 AS FLOAT) * 3 AS STRING)"),
            text("3.3000002")
        );
        assert_eq!(
            str_of("CAST(CAST('16777217' AS FLOAT) AS STRING)"),
            text("1.6777216E7")
        );
        assert_eq!(ty_of("CAST(a AS FLOAT) + a"), DataType::Float);
        assert_eq!(ty_of("CAST(a AS FLOAT) + 1.5"), DataType::Double);
        assert_eq!(
            ty_of("CAST(a AS FLOAT) + CAST(a AS DOUBLE)"),
            DataType::Double
        );
        assert_eq!(ty_of("ROUND(CAST(a AS FLOAT), 1)"), DataType::Float);
        assert_eq!(
            str_of("CAST(CAST(0.1 AS FLOAT) AS DECIMAL(10, 3))"),
            Value::decimal(100)
        );
        // Flink widens the float to a double for the cast: its digits.
        assert_eq!(
            str_of("CAST(CAST(0.1 AS FLOAT) AS DECIMAL(20, 15))"),
            Value::decimal(100_000_001_490_116)
        );
        assert_eq!(ty_of("COALESCE(CAST(a AS FLOAT), 1)"), DataType::Float);
    }

    /// CONVERT_TZ reads `yyyy-MM-dd HH:mm:ss` in one zone and writes it in
    /// another; NULL for text that does not parse.
    #[test]
    fn convert_tz_between_zones() {
        assert_eq!(
            str_of("CONVERT_TZ('2024-01-01 00:00:00', 'UTC', 'GMT+08:00')"),
            text("2024-01-01 08:00:00")
        );
        assert_eq!(
            str_of("CONVERT_TZ('2024-01-01 08:00:00.123', 'GMT+8', 'GMT-0130')"),
            text("2023-12-31 22:30:00")
        );
        assert_eq!(str_of("CONVERT_TZ('nope', 'UTC', 'UTC')"), Value::Null);
        assert_eq!(
            str_of("CONVERT_TZ(s, 'UTC', CAST(NULL AS STRING))"),
            Value::Null
        );
    }
}
