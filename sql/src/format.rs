//! The `csv` and `json` formats: a line of text to a row of the table's
//! physical columns and back, as Flink's formats of those names read and
//! write them (TIMESTAMP as `yyyy-MM-dd HH:mm:ss.SSS`).

use std::fmt::Write as _;

use compact_str::CompactString;

use weir_runtime::Decoded;

use crate::expr::read_decimal;
use crate::json::Json;
use crate::time::{parse_date, parse_timestamp};
use crate::types::{DataType, Schema};
use crate::value::{Row, Value, Values};

/// A format with its options.
#[derive(Clone, Debug)]
pub enum Format {
    /// CSV.
    Csv(CsvOptions),
    /// One JSON object per line.
    Json {
        /// Skip lines that do not parse instead of failing the job.
        ignore_parse_errors: bool,
        /// `json.fail-on-missing-field`: a field absent from an object
        /// fails the line (else it is NULL).
        fail_on_missing_field: bool,
        /// `json.timestamp-format.standard`: how timestamps are written.
        timestamps: JsonTimestamps,
        /// `json.encode.decimal-as-plain-number`: DECIMALs without
        /// scientific notation (by default as Java's `BigDecimal.toString`:
        /// `2.7E-8`).
        plain_decimals: bool,
    },
}

/// Flink's `json.timestamp-format.standard`: how a JSON format writes
/// TIMESTAMP (`2020-12-30 12:13:14.123` or `2020-12-30T12:13:14.123`) and
/// TIMESTAMP_LTZ (the same with a `Z`, in UTC). Either form is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JsonTimestamps {
    /// `SQL`, the default: a space between date and time.
    #[default]
    Sql,
    /// `ISO-8601`: a `T` between date and time.
    Iso8601,
}

impl JsonTimestamps {
    /// The standard option `value` names (case ignored).
    pub fn from_option(value: &str) -> Option<Self> {
        if value.eq_ignore_ascii_case("SQL") {
            Some(JsonTimestamps::Sql)
        } else if value.eq_ignore_ascii_case("ISO-8601") {
            Some(JsonTimestamps::Iso8601)
        } else {
            None
        }
    }
}

/// CSV options (Flink's `csv.*` keys).
#[derive(Clone, Debug)]
pub struct CsvOptions {
    /// `csv.field-delimiter` (default `,`).
    pub delimiter: char,
    /// `csv.quote-character` (default `"`); `csv.disable-quote-character`.
    pub quote: Option<char>,
    /// `csv.escape-character`: the character after it is taken as it is
    /// (a delimiter, a quote, itself) when reading; disabled by default.
    pub escape: Option<char>,
    /// `csv.null-literal`: this text reads as NULL, quoted or not (default
    /// none: an empty unquoted field of a non-string column is NULL).
    pub null_literal: Option<String>,
    /// `csv.ignore-parse-errors`: skip a line that does not parse.
    pub ignore_parse_errors: bool,
    /// `csv.allow-comments`: skip lines starting with `#`.
    pub allow_comments: bool,
    /// `csv.ignore-first-line`: skip each file's first line (the file
    /// source asks [`Format::skips_first_line`]), and any line whose
    /// fields are the column names (a header of other input).
    pub skip_header: bool,
    /// `csv.write-bigdecimal-in-scientific-notation` (default true):
    /// DECIMALs as Java's `BigDecimal.toString` writes them (`2.7E-8`);
    /// false, without scientific notation.
    pub scientific_decimals: bool,
}

impl Default for CsvOptions {
    fn default() -> Self {
        Self {
            delimiter: ',',
            quote: Some('"'),
            escape: None,
            null_literal: None,
            ignore_parse_errors: false,
            allow_comments: false,
            skip_header: false,
            scientific_decimals: true,
        }
    }
}

/// What became of one line. (A row is large but this is returned once per
/// line on the hot path: boxing it would allocate per row.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq)]
pub enum Parsed {
    /// A row.
    Row(Row),
    /// A line to skip (blank, comment, header, or bad with ignore-parse-errors).
    Skip,
    /// A line that does not parse: the reason.
    Error(String),
}

/// Why a line does not parse: the 1-based byte column where the problem
/// is (if one place is to blame) and what it is.
type LineError = (Option<usize>, String);

impl Format {
    /// Whether bad lines are skipped.
    pub fn ignores_errors(&self) -> bool {
        match self {
            Format::Csv(o) => o.ignore_parse_errors,
            Format::Json {
                ignore_parse_errors,
                ..
            } => *ignore_parse_errors,
        }
    }

    /// The option that makes this format skip bad lines.
    pub fn ignore_option(&self) -> &'static str {
        match self {
            Format::Csv(_) => "csv.ignore-parse-errors",
            Format::Json { .. } => "json.ignore-parse-errors",
        }
    }

    /// Parses one line into a row of `schema`.
    pub fn parse(&self, line: &str, schema: &Schema) -> Parsed {
        match self.decode(line, schema) {
            Decoded::Record(row) => Parsed::Row(row),
            Decoded::Skip | Decoded::Ignored(_) => Parsed::Skip,
            Decoded::Error { message, .. } => Parsed::Error(message),
        }
    }

    /// Whether the file source skips each file's first line, whatever it
    /// holds (`csv.ignore-first-line`, as Flink's CSV reader).
    pub fn skips_first_line(&self) -> bool {
        matches!(self, Format::Csv(o) if o.skip_header)
    }

    /// Parses one line into a row of `schema`, for the file source: a
    /// line that does not parse is [`Decoded::Ignored`] with
    /// `*.ignore-parse-errors`, else an error with its column.
    #[inline]
    pub fn decode(&self, line: &str, schema: &Schema) -> Decoded<Row> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim_start().is_empty() {
            return Decoded::Skip;
        }
        let r = match self {
            Format::Csv(o) => {
                if o.allow_comments && line.starts_with('#') {
                    return Decoded::Skip;
                }
                parse_csv(line, schema, o)
            }
            Format::Json {
                ignore_parse_errors,
                fail_on_missing_field,
                ..
            } => parse_json(line, schema, *ignore_parse_errors, *fail_on_missing_field),
        };
        match r {
            Ok(Some(row)) => Decoded::Record(row),
            Ok(None) => Decoded::Skip,
            Err((_, message)) if self.ignores_errors() => Decoded::Ignored(message),
            Err((column, message)) => Decoded::Error {
                column,
                message: format!(
                    "{message} (set '{}' = 'true' to skip such lines)",
                    self.ignore_option()
                ),
            },
        }
    }

    /// Appends `row`'s line (with `\n`) to `out`.
    pub fn write(&self, row: &Row, schema: &Schema, out: &mut Vec<u8>) {
        let mut s = String::new();
        match self {
            Format::Csv(o) => write_csv(row, schema, o, &mut s),
            Format::Json {
                timestamps,
                plain_decimals,
                ..
            } => write_json(row, schema, *timestamps, *plain_decimals, &mut s),
        }
        s.push('\n');
        out.extend_from_slice(s.as_bytes());
    }
}

/// Splits a CSV line into fields with the byte offset each starts at
/// (quotes honoured; `""` in quotes is a quote). `None` for an
/// unterminated quote.
fn split_csv(line: &str, o: &CsvOptions) -> Option<Vec<(String, bool, usize)>> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    let mut start = 0;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if Some(c) == o.escape {
            // The next character as it is (a trailing escape is itself).
            match chars.next() {
                Some((_, next)) => cur.push(next),
                None => cur.push(c),
            }
        } else if quoted {
            if Some(c) == o.quote {
                if chars.peek().map(|p| p.1) == o.quote {
                    cur.push(c);
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == o.delimiter {
            fields.push((std::mem::take(&mut cur), was_quoted, start));
            was_quoted = false;
            start = i + c.len_utf8();
        } else if Some(c) == o.quote && cur.is_empty() {
            quoted = true;
            was_quoted = true;
        } else {
            cur.push(c);
        }
    }
    if quoted {
        return None;
    }
    fields.push((cur, was_quoted, start));
    Some(fields)
}

/// A CSV line as a row: lines without a quote character (the common case)
/// are cut in place, field by field, without allocating but for strings
/// too long to store inline; the others go through [`split_csv`].
fn parse_csv(line: &str, schema: &Schema, o: &CsvOptions) -> Result<Option<Row>, LineError> {
    let absent = |c: Option<char>| match c {
        None => true,
        Some(c) if c.is_ascii() => memchr::memchr(c as u8, line.as_bytes()).is_none(),
        Some(_) => false,
    };
    let plain = o.delimiter.is_ascii() && absent(o.quote) && absent(o.escape);
    if o.skip_header && is_header(line, schema, o) {
        return Ok(None);
    }
    if plain {
        return parse_plain_csv(line, schema, o, o.delimiter as u8);
    }
    let fields = split_csv(line, o).ok_or((None, "an unterminated quote".to_owned()))?;
    if fields.len() > schema.len() || (fields.len() < schema.len() && !o.ignore_parse_errors) {
        return Err((None, field_count(fields.len(), schema)));
    }
    let mut values = Values::with_capacity(schema.len());
    for ((text, quoted, start), f) in fields.iter().zip(&schema.fields) {
        values.push(field_or_null(
            csv_value(text, *quoted, f, o),
            o.ignore_parse_errors,
            || bad_field(text, *start, f),
        )?);
    }
    // Fewer fields than columns, read ignoring parse errors: the missing
    // ones are NULL and the row is kept, as Flink's CSV converter reads
    // the object Jackson made of the line (its arity checked only when
    // errors are not ignored).
    values.resize(schema.len(), Value::Null);
    Ok(Some(Row::new(values)))
}

/// A field's value; one that does not parse is NULL when the format
/// ignores parse errors (Flink's `*.ignore-parse-errors`: "fields are set
/// to null in case of errors", the row kept), else the line's error.
#[inline]
fn field_or_null(
    value: Option<Value>,
    ignore: bool,
    error: impl FnOnce() -> LineError,
) -> Result<Value, LineError> {
    match value {
        Some(v) => Ok(v),
        None if ignore => Ok(Value::Null),
        None => Err(error()),
    }
}

fn field_count(found: usize, schema: &Schema) -> String {
    format!("{found} fields, the table has {} columns", schema.len())
}

fn bad_field(text: &str, start: usize, f: &crate::types::Field) -> LineError {
    (
        Some(start + 1),
        format!("column `{}`: `{text}` is not a valid {}", f.name, f.ty),
    )
}

/// A line without quotes, cut at each delimiter byte.
#[inline]
fn parse_plain_csv(
    line: &str,
    schema: &Schema,
    o: &CsvOptions,
    delimiter: u8,
) -> Result<Option<Row>, LineError> {
    let bytes = line.as_bytes();
    let n = schema.len();
    let mut values = Values::with_capacity(n);
    let mut start = 0;
    for (i, f) in schema.fields.iter().enumerate() {
        if start > bytes.len() {
            // Past the line's last field, ignoring parse errors: NULL (see
            // `parse_csv`).
            values.push(Value::Null);
            continue;
        }
        let end = match memchr::memchr(delimiter, &bytes[start..]) {
            Some(j) if i + 1 < n => start + j,
            None if i + 1 == n || o.ignore_parse_errors => bytes.len(),
            _ => {
                let found = 1 + memchr::memchr_iter(delimiter, bytes).count();
                return Err((None, field_count(found, schema)));
            }
        };
        // The delimiter is ASCII: both ends are character boundaries.
        let text = &line[start..end];
        values.push(field_or_null(
            csv_value(text, false, f, o),
            o.ignore_parse_errors,
            || bad_field(text, start, f),
        )?);
        start = end + 1;
    }
    Ok(Some(Row::new(values)))
}

/// Whether `line` is a header: its fields are the column names.
fn is_header(line: &str, schema: &Schema, o: &CsvOptions) -> bool {
    let Some(fields) = split_csv(line, o) else {
        return false;
    };
    fields.len() == schema.len()
        && fields
            .iter()
            .zip(&schema.fields)
            .all(|((v, _, _), f)| v.trim().eq_ignore_ascii_case(&f.name))
}

/// One CSV field's value (`None`: it is not of the column's type). The
/// null literal is NULL quoted or not (`"NULL"` too), as Flink's Jackson
/// parser compares a field's text with it after taking the quotes off.
#[inline]
fn csv_value(text: &str, quoted: bool, f: &crate::types::Field, o: &CsvOptions) -> Option<Value> {
    let is_null = match &o.null_literal {
        Some(n) => text == n,
        None => !quoted && text.is_empty() && f.ty != DataType::String,
    };
    if is_null {
        return Some(Value::Null);
    }
    parse_text(text, f.ty)
}

/// `text` without surrounding whitespace: itself, without a scan, when
/// it starts and ends with a visible ASCII character (a number, a time).
#[inline]
fn trim(text: &str) -> &str {
    let b = text.as_bytes();
    let visible = |c: Option<&u8>| c.is_some_and(|&c| c.is_ascii_graphic());
    if visible(b.first()) && visible(b.last()) {
        text
    } else {
        text.trim()
    }
}

/// A value of type `ty` from its text form.
#[inline]
pub fn parse_text(text: &str, ty: DataType) -> Option<Value> {
    if ty == DataType::String {
        return Some(Value::Str(CompactString::from(text)));
    }
    let t = trim(text);
    Some(match ty {
        DataType::String => Value::Str(CompactString::from(text)),
        // Flink's CSV and JSON formats read a boolean's text with Java's
        // `Boolean.parseBoolean(text.trim())`: `true` in any case is TRUE
        // and any other text FALSE (`yes`, `1`, `maybe`), never an error.
        DataType::Boolean => Value::Bool(t.eq_ignore_ascii_case("true")),
        DataType::Int => Value::Int(t.parse().ok()?),
        DataType::BigInt => Value::BigInt(t.parse().ok()?),
        // Java's parsers, as Flink's formats read a number's text.
        DataType::Double => Value::Double(crate::strings::parse_java_double(t)?),
        DataType::Float => Value::float(crate::strings::parse_java_float(t)?),
        DataType::Decimal { precision, scale } => {
            // Too wide for the column (or for any DECIMAL): NULL, as Flink's
            // CSV and JSON decoders' DecimalData.fromBigDecimal gives.
            match read_decimal(t, scale)? {
                Some(v) if crate::expr::fits(v, precision) => Value::decimal(v),
                _ => Value::Null,
            }
        }
        DataType::Timestamp | DataType::TimestampLtz => Value::Timestamp(parse_timestamp(t)?),
        DataType::Date => Value::Date(parse_date(t)?),
        DataType::Interval => return None,
    })
}

fn parse_json(
    line: &str,
    schema: &Schema,
    ignore: bool,
    fail_on_missing: bool,
) -> Result<Option<Row>, LineError> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| (Some(e.column()), format!("not JSON: {e}")))?;
    let serde_json::Value::Object(map) = v else {
        return Err((Some(1), "not a JSON object".into()));
    };
    // A DECIMAL column's number is read from its text, as Flink's format
    // reads it into a BigDecimal (Jackson's USE_BIG_DECIMAL_FOR_FLOATS):
    // serde_json's Value holds it as an f64, which keeps 17 digits
    // (`12345678901234567.89` would be 12345678901234568.00).
    let raw: Option<std::collections::HashMap<String, &serde_json::value::RawValue>> = schema
        .fields
        .iter()
        .any(|f| matches!(f.ty, DataType::Decimal { .. }))
        .then(|| serde_json::from_str(line).ok())
        .flatten();
    // The line's members in the order written, read when a STRING column
    // takes an object or an array.
    let mut ordered: Option<Vec<(String, Json)>> = None;
    let mut values = Values::with_capacity(schema.len());
    for f in &schema.fields {
        // (by its exact name, as Jackson's `JsonNode.get` in Flink's
        // format: `{"ID": 1}` has no field `id`)
        let j = map.get(&f.name);
        if j.is_none() && fail_on_missing {
            return Err((None, format!("field `{}` is missing", f.name)));
        }
        let bad =
            |j: &serde_json::Value| format!("field `{}`: {j} is not a valid {}", f.name, f.ty);
        let read = |j: &serde_json::Value| -> Result<Value, LineError> {
            Ok(match (f.ty, j) {
                (DataType::String, serde_json::Value::String(s)) => Value::Str(s.as_str().into()),
                (DataType::String, other) => Value::Str(other.to_string().into()),
                (DataType::Boolean, serde_json::Value::Bool(b)) => Value::Bool(*b),
                // A number's text is not `true` (Flink's parseBoolean).
                (DataType::Boolean, serde_json::Value::Number(_)) => Value::Bool(false),
                (DataType::Int, serde_json::Value::Number(n)) => Value::Int(
                    n.as_i64()
                        .and_then(|i| i32::try_from(i).ok())
                        .or_else(|| {
                            json_fraction_cut(n, i32::MIN.into(), i32::MAX.into()).map(|i| i as i32)
                        })
                        .ok_or_else(|| (None, bad(j)))?,
                ),
                (DataType::BigInt, serde_json::Value::Number(n)) => Value::BigInt(
                    n.as_i64()
                        .or_else(|| json_fraction_cut(n, i64::MIN as f64, i64::MAX as f64))
                        .ok_or_else(|| (None, bad(j)))?,
                ),
                (DataType::Double, serde_json::Value::Number(n)) => {
                    Value::Double(n.as_f64().ok_or_else(|| (None, bad(j)))?)
                }
                (DataType::Float, serde_json::Value::Number(n)) => {
                    parse_text(&n.to_string(), f.ty).ok_or_else(|| (None, bad(j)))?
                }
                (DataType::Decimal { .. }, serde_json::Value::Number(n)) => {
                    let text = raw
                        .as_ref()
                        .and_then(|r| r.get(&f.name))
                        .map_or_else(|| n.to_string(), |t| t.get().to_string());
                    parse_text(&text, f.ty).ok_or_else(|| (None, bad(j)))?
                }
                (_, serde_json::Value::String(s)) => {
                    parse_text(s, f.ty).ok_or_else(|| (None, bad(j)))?
                }
                _ => return Err((None, bad(j))),
            })
        };
        let value = match j {
            None | Some(serde_json::Value::Null) => Value::Null,
            // An object or array into a STRING column: its JSON text with
            // the members in the order written, as Jackson's `toString` of
            // the node gives it to Flink (serde_json's `Value` sorts them).
            Some(c @ (serde_json::Value::Object(_) | serde_json::Value::Array(_)))
                if f.ty == DataType::String =>
            {
                let members = ordered.get_or_insert_with(|| match Json::parse(line) {
                    Some(Json::Obj(m)) => m,
                    _ => Vec::new(),
                });
                match members.iter().find(|(k, _)| *k == f.name) {
                    Some((_, v)) => Value::Str(v.text().into()),
                    None => read(c)?,
                }
            }
            Some(j) => field_or_null(read(j).ok(), ignore, || (None, bad(j)))?,
        };
        values.push(value);
    }
    Ok(Some(Row::new(values)))
}

/// A JSON number with a fraction or an exponent (`3.7`, `1e3`) read into
/// an integer column as Flink's JSON format reads it: Jackson's
/// `canConvertToInt`/`canConvertToLong` take a double within the type's
/// range and `asInt`/`asLong` cut its fraction off (`3.7` is 3, `-3.7`
/// is -3); one outside the range is not of the type. `None` for an
/// integer (read exactly by the caller).
fn json_fraction_cut(n: &serde_json::Number, min: f64, max: f64) -> Option<i64> {
    if !n.is_f64() {
        return None;
    }
    let d = n.as_f64()?;
    // (Java's saturating cast, as Rust's `as`: within [min, max] it cuts.)
    (d >= min && d <= max).then_some(d as i64)
}

fn write_csv(row: &Row, schema: &Schema, o: &CsvOptions, s: &mut String) {
    for (i, v) in row.values.iter().enumerate() {
        if i > 0 {
            s.push(o.delimiter);
        }
        if v.is_null() {
            if let Some(n) = &o.null_literal {
                s.push_str(n);
            }
            continue;
        }
        let ty = schema.fields.get(i).map_or(DataType::String, |f| f.ty);
        let text = match v {
            // As Java's `BigDecimal.toString` unless asked for plain text.
            Value::Decimal(d) if o.scientific_decimals => {
                crate::value::format_decimal_java(d.get(), ty.scale())
            }
            _ => v.display(ty),
        };
        // With `csv.escape-character` the reader takes the character after
        // it as it is, so the writer escapes the escape character itself
        // (`a\\b` for `a\b`; written bare it read back as `ab`), and,
        // without quotes, the delimiter. (An escape that is the quote
        // character is left to the quote's doubling.)
        let escape = o.escape.filter(|&e| Some(e) != o.quote);
        let needs_quote = o.quote.is_some()
            && (text.contains(o.delimiter)
                || o.quote.is_some_and(|q| text.contains(q))
                || escape.is_some_and(|e| text.contains(e))
                || text.contains('\n')
                || text.contains('\r')
                || (ty == DataType::String && text.is_empty()));
        match (needs_quote, o.quote) {
            (true, Some(q)) => {
                s.push(q);
                for c in text.chars() {
                    if c == q {
                        s.push(q);
                    } else if Some(c) == escape {
                        s.push(c);
                    }
                    s.push(c);
                }
                s.push(q);
            }
            (_, None) => match escape {
                Some(e) => {
                    for c in text.chars() {
                        if c == e || c == o.delimiter {
                            s.push(e);
                        }
                        s.push(c);
                    }
                }
                None => s.push_str(&text),
            },
            (false, Some(_)) => s.push_str(&text),
        }
    }
}

fn write_json(
    row: &Row,
    schema: &Schema,
    timestamps: JsonTimestamps,
    plain_decimals: bool,
    s: &mut String,
) {
    s.push('{');
    for (i, (v, f)) in row.values.iter().zip(&schema.fields).enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{}:", serde_json::Value::String(f.name.clone()));
        match v {
            Value::Null => s.push_str("null"),
            // A DECIMAL as Java's `BigDecimal.toString` (Jackson's default,
            // `2.7E-8`) unless `json.encode.decimal-as-plain-number`.
            Value::Decimal(d) if !plain_decimals => {
                s.push_str(&crate::value::format_decimal_java(d.get(), f.ty.scale()))
            }
            Value::Bool(_) | Value::Int(_) | Value::BigInt(_) | Value::Decimal(_) => {
                s.push_str(&v.display(f.ty))
            }
            Value::Double(d) if d.is_finite() => s.push_str(&v.display(f.ty)),
            Value::Timestamp(_) => {
                // `yyyy-MM-dd HH:mm:ss.SSS`, `T` for ISO-8601, and an
                // instant (TIMESTAMP_LTZ) in UTC with `Z`, as Flink's JSON
                // format writes them.
                let mut text = v.display(f.ty);
                if timestamps == JsonTimestamps::Iso8601 && text.get(10..11) == Some(" ") {
                    text.replace_range(10..11, "T");
                }
                if f.ty == DataType::TimestampLtz {
                    text.push('Z');
                }
                let _ = write!(s, "{}", serde_json::Value::String(text));
            }
            other => {
                let _ = write!(s, "{}", serde_json::Value::String(other.display(f.ty)));
            }
        }
    }
    s.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Field;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("id", DataType::BigInt),
            Field::new("name", DataType::String),
            Field::new("ts", DataType::Timestamp),
            Field::new(
                "price",
                DataType::Decimal {
                    precision: 10,
                    scale: 2,
                },
            ),
        ])
    }

    #[test]
    fn csv_reads_and_writes_flink_text() {
        let f = Format::Csv(CsvOptions::default());
        let s = schema();
        let Parsed::Row(r) = f.parse("7,\"a, \"\"b\"\"\",2024-01-01 00:00:01.5,3.10", &s) else {
            panic!()
        };
        assert_eq!(r.values[1], Value::Str("a, \"b\"".into()));
        let mut out = Vec::new();
        f.write(&r, &s, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "7,\"a, \"\"b\"\"\",2024-01-01 00:00:01.500,3.10\n"
        );
        assert_eq!(
            f.parse(",x,,", &s),
            Parsed::Row(Row::of([
                Value::Null,
                Value::Str("x".into()),
                Value::Null,
                Value::Null
            ]))
        );
        assert!(matches!(f.parse("1,x,nope,1", &s), Parsed::Error(e) if e.contains("`ts`")));
        // A DECIMAL with an exponent, rounded half up to the scale; one
        // too wide for DECIMAL(10, 2) is NULL (Flink's fromBigDecimal).
        let price = |text: &str| match f.parse(&format!("1,x,,{text}"), &s) {
            Parsed::Row(r) => r.values[3].clone(),
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(price("-1.5e2"), Value::decimal(-15_000));
        assert_eq!(price("10.555"), Value::decimal(1_056));
        assert_eq!(price("123456789.1"), Value::Null);
        // More digits than any DECIMAL holds: NULL too, not a bad line.
        assert_eq!(
            price("99999999999999999999999999999999999999999"),
            Value::Null
        );
        assert_eq!(price("1e99999"), Value::Null);
        assert!(matches!(f.parse("1,x", &s), Parsed::Error(e) if e.contains("2 fields")));
        let lenient = Format::Csv(CsvOptions {
            ignore_parse_errors: true,
            skip_header: true,
            ..CsvOptions::default()
        });
        assert_eq!(lenient.parse("id,name,ts,price", &s), Parsed::Skip);
    }

    /// With `csv.escape-character` what the sink writes reads back as it
    /// was: the escape character is escaped (it was written bare, and a
    /// backslash vanished on reading), and without quotes the delimiter
    /// is too.
    #[test]
    fn csv_with_an_escape_character_reads_back_what_it_wrote() {
        let s = Schema::new(vec![
            Field::new("id", DataType::BigInt),
            Field::new("s", DataType::String),
        ]);
        let texts = [
            "back\\slash",
            "end\\",
            "\\\\",
            "quo\"te",
            "a,b",
            "\\,\\\"",
            "",
            "plain",
        ];
        let quoted = CsvOptions {
            escape: Some('\\'),
            ..CsvOptions::default()
        };
        let bare = CsvOptions {
            quote: None,
            escape: Some('\\'),
            ..CsvOptions::default()
        };
        for o in [quoted, bare] {
            let f = Format::Csv(o.clone());
            for (i, text) in texts.iter().enumerate() {
                let row = Row::of([Value::BigInt(i as i64), Value::Str((*text).into())]);
                let mut out = Vec::new();
                f.write(&row, &s, &mut out);
                let line = String::from_utf8(out).unwrap();
                assert_eq!(
                    f.parse(line.trim_end_matches('\n'), &s),
                    Parsed::Row(row),
                    "{o:?}: {text:?} written as {line:?}"
                );
            }
        }
        let f = Format::Csv(CsvOptions {
            escape: Some('\\'),
            ..CsvOptions::default()
        });
        let mut out = Vec::new();
        let row = Row::of([Value::BigInt(1), Value::Str("a\\b".into())]);
        f.write(&row, &s, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), "1,\"a\\\\b\"\n");
    }

    /// `csv.null-literal` is NULL whether the field is quoted or not, as
    /// Flink's Jackson parser compares the text without its quotes with
    /// the null value; without the option a quoted empty field is an empty
    /// string and an unquoted one of a STRING column too.
    #[test]
    fn the_null_literal_is_null_quoted_or_not() {
        let s = Schema::new(vec![
            Field::new("id", DataType::Int),
            Field::new("name", DataType::String),
        ]);
        let with = |n: &str| {
            Format::Csv(CsvOptions {
                null_literal: Some(n.into()),
                ..CsvOptions::default()
            })
        };
        let name = |f: &Format, line: &str| match f.parse(line, &s) {
            Parsed::Row(r) => r.values[1].clone(),
            other => panic!("{line}: {other:?}"),
        };
        let f = with("NULL");
        assert_eq!(name(&f, "1,NULL"), Value::Null);
        assert_eq!(name(&f, "1,\"NULL\""), Value::Null);
        assert_eq!(name(&f, "1,\"NULL \""), Value::Str("NULL ".into()));
        assert_eq!(name(&f, "1,null"), Value::Str("null".into()));
        let f = with("");
        assert_eq!(name(&f, "1,"), Value::Null);
        assert_eq!(name(&f, "1,\"\""), Value::Null);
        let f = Format::Csv(CsvOptions::default());
        assert_eq!(name(&f, "1,"), Value::Str("".into()));
        assert_eq!(name(&f, "1,\"\""), Value::Str("".into()));
    }

    /// With `csv.ignore-parse-errors`, a line of fewer fields than the
    /// table has columns is a row whose missing columns are NULL, as
    /// Flink's CSV converter reads the object Jackson made of the line (it
    /// checks the arity only when errors are not ignored); a line of more
    /// fields is still skipped, and without the option both fail.
    #[test]
    fn short_csv_lines_ignoring_errors_keep_their_rows() {
        let s = schema();
        let lenient = Format::Csv(CsvOptions {
            ignore_parse_errors: true,
            ..CsvOptions::default()
        });
        let strict = Format::Csv(CsvOptions::default());
        let padded = |vals: Vec<Value>| {
            let mut v = vals;
            v.resize(4, Value::Null);
            Parsed::Row(Row::of(v))
        };
        for (line, want) in [
            (
                "1,x",
                padded(vec![Value::BigInt(1), Value::Str("x".into())]),
            ),
            (
                "1,\"x,y\"",
                padded(vec![Value::BigInt(1), Value::Str("x,y".into())]),
            ),
            ("7", padded(vec![Value::BigInt(7)])),
            ("nope", padded(vec![Value::Null])),
            (
                "1,x,",
                padded(vec![Value::BigInt(1), Value::Str("x".into()), Value::Null]),
            ),
        ] {
            assert_eq!(lenient.parse(line, &s), want, "{line}");
            assert!(
                matches!(strict.parse(line, &s), Parsed::Error(e) if e.contains("fields, the table has 4 columns")),
                "{line}"
            );
        }
        for long in [
            "1,x,2024-01-01 00:00:00,1,9",
            "1,\"x\",2024-01-01 00:00:00,1,9",
        ] {
            assert!(
                matches!(lenient.decode(long, &s), Decoded::Ignored(m) if m.contains("5 fields")),
                "{long}"
            );
        }
    }

    /// An object or array read into a STRING column is its compact JSON
    /// text with the members in the order written, as Jackson's
    /// `JsonNode.toString` gives it to Flink's format (serde_json's own
    /// `Value` would sort them); a member written twice keeps its first
    /// place and its last value, as Jackson's object node does.
    #[test]
    fn json_objects_into_string_columns_keep_their_members_order() {
        let s = Schema::new(vec![
            Field::new("id", DataType::Int),
            Field::new("doc", DataType::String),
        ]);
        let json = Format::Json {
            ignore_parse_errors: false,
            fail_on_missing_field: false,
            timestamps: JsonTimestamps::Sql,
            plain_decimals: false,
        };
        let doc = |line: &str| match json.parse(line, &s) {
            Parsed::Row(r) => r.values[1].clone(),
            other => panic!("{line}: {other:?}"),
        };
        assert_eq!(
            doc(r#"{"id": 1, "doc": {"z": 1, "a": [true, {"y": null, "b": "x"}], "m": 2.5}}"#),
            Value::Str(r#"{"z":1,"a":[true,{"y":null,"b":"x"}],"m":2.5}"#.into())
        );
        assert_eq!(
            doc(r#"{"doc": [3, 1, 2], "id": 2}"#),
            Value::Str("[3,1,2]".into())
        );
        assert_eq!(
            doc(r#"{"id": 3, "doc": {"b": 1, "a": 2, "b": 3}}"#),
            Value::Str(r#"{"b":3,"a":2}"#.into())
        );
        assert_eq!(
            doc(r#"{"id": 4, "doc": "text"}"#),
            Value::Str("text".into())
        );
        assert_eq!(doc(r#"{"id": 5, "doc": 12}"#), Value::Str("12".into()));
    }

    /// A BOOLEAN field as Flink's formats read it (Java's
    /// `Boolean.parseBoolean` of the trimmed text): `true` in any case is
    /// TRUE, any other text FALSE, none an error; an empty field NULL.
    #[test]
    fn booleans_read_as_javas_parse_boolean() {
        let s = Schema::new(vec![
            Field::new("id", DataType::Int),
            Field::new("b", DataType::Boolean),
        ]);
        let csv = Format::Csv(CsvOptions::default());
        let json = Format::Json {
            ignore_parse_errors: false,
            fail_on_missing_field: false,
            timestamps: JsonTimestamps::Sql,
            plain_decimals: false,
        };
        let read = |f: &Format, line: &str| match f.parse(line, &s) {
            Parsed::Row(r) => r.values[1].clone(),
            other => panic!("{line}: {other:?}"),
        };
        for (text, want) in [
            ("true", true),
            ("TRUE", true),
            (" True ", true),
            ("false", false),
            ("FALSE", false),
            ("yes", false),
            ("1", false),
            ("t", false),
            ("maybe", false),
        ] {
            assert_eq!(
                read(&csv, &format!("1,{text}")),
                Value::Bool(want),
                "{text}"
            );
            let line = format!("{{\"id\": 1, \"b\": \"{text}\"}}");
            assert_eq!(read(&json, &line), Value::Bool(want), "{line}");
        }
        assert_eq!(read(&csv, "1,"), Value::Null);
        assert_eq!(read(&json, r#"{"id": 1, "b": true}"#), Value::Bool(true));
        assert_eq!(read(&json, r#"{"id": 1, "b": 1}"#), Value::Bool(false));
        assert_eq!(read(&json, r#"{"id": 1, "b": null}"#), Value::Null);
    }

    /// For the file source: errors carry the column of the bad field and
    /// the option that would skip them; skipped lines are `Ignored`.
    #[test]
    fn decode_names_the_column_and_counts_ignored_lines() {
        let s = schema();
        let strict = Format::Csv(CsvOptions::default());
        let Decoded::Error { column, message } = strict.decode("1,x,nope,1", &s) else {
            panic!()
        };
        assert_eq!(column, Some(5));
        assert!(
            message.contains("`ts`") && message.contains("csv.ignore-parse-errors"),
            "{message}"
        );
        let Decoded::Error { column, .. } = strict.decode("1,\"a,b\",nope,1", &s) else {
            panic!()
        };
        assert_eq!(column, Some(9), "quoted lines too");
        let lenient = Format::Csv(CsvOptions {
            ignore_parse_errors: true,
            ..CsvOptions::default()
        });
        // A field that does not parse is NULL (Flink: "fields are set to
        // null in case of errors"); a line of more fields than columns is
        // skipped, one of fewer is read with the missing ones NULL (see
        // `short_csv_lines_ignoring_errors_keep_their_rows`).
        assert_eq!(
            lenient.decode("1,x,nope,1", &s),
            Decoded::Record(Row::of([
                Value::BigInt(1),
                Value::Str("x".into()),
                Value::Null,
                Value::decimal(100)
            ]))
        );
        assert!(
            matches!(lenient.decode("1,x,nope,1,9", &s), Decoded::Ignored(m) if m.contains("5 fields"))
        );
        assert_eq!(strict.decode("  \r", &s), Decoded::Skip);
        let json = Format::Json {
            ignore_parse_errors: false,
            fail_on_missing_field: false,
            timestamps: JsonTimestamps::Sql,
            plain_decimals: false,
        };
        assert!(matches!(
            json.decode("{\"id\": 1,, }", &s),
            Decoded::Error {
                column: Some(10),
                ..
            }
        ));
    }

    /// Lines without quotes are cut in place: the same rows and errors as
    /// the general path's.
    #[test]
    fn plain_lines_read_as_quoted_ones_do() {
        let s = schema();
        let f = Format::Csv(CsvOptions::default());
        for (plain, quoted) in [
            (
                "7,abc,2024-01-01 00:00:01.5,3.10",
                "7,\"abc\",2024-01-01 00:00:01.5,\"3.10\"",
            ),
            (",,,", ",\"\",,"),
            ("-1, x ,1970-01-01, 2", "-1,\" x \",1970-01-01, 2"),
        ] {
            let (a, b) = (f.parse(plain, &s), f.parse(quoted, &s));
            assert!(matches!(a, Parsed::Row(_)), "{plain}: {a:?}");
            assert_eq!(a, b, "{plain}");
        }
        for bad in [
            "1,x,2024-01-01 00:00:00,1,9",
            "1,x,2024-01-01 00:00:00",
            "1",
        ] {
            let Parsed::Error(e) = f.parse(bad, &s) else {
                panic!("{bad}")
            };
            assert!(e.contains("fields, the table has 4 columns"), "{bad}: {e}");
        }
        let semi = Format::Csv(CsvOptions {
            delimiter: ';',
            quote: None,
            ..CsvOptions::default()
        });
        assert!(
            matches!(semi.parse("1;a,b;2024-01-01 00:00:00;1", &s), Parsed::Row(r) if r.values[1] == Value::Str("a,b".into()))
        );
    }

    /// `csv.escape-character`: the character after it is taken as it is
    /// (a delimiter, a quote, the escape itself), inside quotes too; a
    /// line without it is cut as before.
    #[test]
    fn csv_escape_character_takes_the_next_character_as_it_is() {
        let s = Schema::new(vec![
            Field::new("a", DataType::String),
            Field::new("b", DataType::String),
            Field::new("n", DataType::Int),
        ]);
        let f = Format::Csv(CsvOptions {
            escape: Some('\\'),
            ..CsvOptions::default()
        });
        let row = |line: &str| match f.parse(line, &s) {
            Parsed::Row(r) => r
                .values
                .iter()
                .map(|v| v.display(DataType::String))
                .collect::<Vec<_>>(),
            _ => panic!("{line}"),
        };
        assert_eq!(row(r"a\,b,c,1"), ["a,b", "c", "1"]);
        assert_eq!(row(r#""x\"y",z\\,2"#), [r#"x"y"#, r"z\", "2"]);
        assert_eq!(row("plain,line,3"), ["plain", "line", "3"]);
        // Without the option a backslash is text.
        let plain = Format::Csv(CsvOptions::default());
        assert!(matches!(plain.parse(r"a\,b,c,1", &s), Parsed::Error(_)));
    }

    #[test]
    fn json_reads_and_writes() {
        let f = Format::Json {
            ignore_parse_errors: false,
            fail_on_missing_field: false,
            timestamps: JsonTimestamps::Sql,
            plain_decimals: false,
        };
        let s = schema();
        let Parsed::Row(r) = f.parse(
            r#"{"id": 1, "name": "n", "ts": "2024-01-01 00:00:00", "price": 2.5}"#,
            &s,
        ) else {
            panic!()
        };
        assert_eq!(r.values[3], Value::decimal(250));
        let mut out = Vec::new();
        f.write(&r, &s, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"id\":1,\"name\":\"n\",\"ts\":\"2024-01-01 00:00:00.000\",\"price\":2.50}\n"
        );
        assert!(matches!(f.parse("[1]", &s), Parsed::Error(_)));
        assert!(matches!(f.parse(r#"{"id": "x"}"#, &s), Parsed::Error(e) if e.contains("`id`")));
    }

    /// DECIMALs are written as Flink's CSV and JSON formats write them by
    /// default, Java's `BigDecimal.toString` (`2.7E-8` for 0.000000027),
    /// and plain with `json.encode.decimal-as-plain-number` /
    /// `'csv.write-bigdecimal-in-scientific-notation' = 'false'`; they
    /// were always plain.
    #[test]
    fn decimals_are_written_as_javas_big_decimal_to_string() {
        let dec = |precision, scale| DataType::Decimal { precision, scale };
        let s = Schema::new(vec![
            Field::new("a", dec(12, 9)),
            Field::new("b", dec(10, 2)),
        ]);
        let row = Row::new(
            [Value::decimal(27), Value::decimal(-5)]
                .into_iter()
                .collect(),
        );
        let zero = Row::new([Value::decimal(0), Value::decimal(0)].into_iter().collect());
        let line = |f: &Format, r: &Row| {
            let mut out = Vec::new();
            f.write(r, &s, &mut out);
            String::from_utf8(out).unwrap().trim_end().to_owned()
        };
        let csv = Format::Csv(CsvOptions::default());
        assert_eq!(line(&csv, &row), "2.7E-8,-0.05");
        assert_eq!(line(&csv, &zero), "0E-9,0.00");
        assert_eq!(csv.parse("2.7E-8,-0.05", &s), Parsed::Row(row.clone()));
        let plain_csv = Format::Csv(CsvOptions {
            scientific_decimals: false,
            ..CsvOptions::default()
        });
        assert_eq!(line(&plain_csv, &row), "0.000000027,-0.05");
        for (plain, want) in [
            (false, r#"{"a":2.7E-8,"b":-0.05}"#),
            (true, r#"{"a":0.000000027,"b":-0.05}"#),
        ] {
            let json = Format::Json {
                ignore_parse_errors: false,
                fail_on_missing_field: false,
                timestamps: JsonTimestamps::Sql,
                plain_decimals: plain,
            };
            assert_eq!(line(&json, &row), want);
            assert_eq!(json.parse(want, &s), Parsed::Row(row.clone()));
        }
    }

    /// A DECIMAL column's JSON number keeps every digit, as Flink reads
    /// it into a BigDecimal: it went through an f64, which keeps 17
    /// (`12345678901234567.89` was read as 12345678901234568.00).
    #[test]
    fn json_decimals_keep_all_their_digits() {
        let f = Format::Json {
            ignore_parse_errors: false,
            fail_on_missing_field: false,
            timestamps: JsonTimestamps::Sql,
            plain_decimals: false,
        };
        let dec = |precision, scale| DataType::Decimal { precision, scale };
        let s = Schema::new(vec![
            Field::new("d", dec(20, 2)),
            Field::new("e", dec(20, 19)),
            Field::new("f", dec(30, 0)),
            Field::new("g", dec(38, 0)),
        ]);
        let line = r#"{"d": 12345678901234567.89, "e":0.1234567890123456789,
                       "f": 123456789012345678901234, "g": 1e40, "d": 12345678901234567.85}"#;
        let Parsed::Row(r) = f.parse(&line.replace('\n', " "), &s) else {
            panic!()
        };
        assert_eq!(
            r.values.to_vec(),
            vec![
                Value::decimal(1_234_567_890_123_456_785),
                Value::decimal(1_234_567_890_123_456_789),
                Value::decimal(123_456_789_012_345_678_901_234),
                Value::Null,
            ]
        );
    }

    /// Fields are found by their exact names, as Jackson's `JsonNode.get`
    /// in Flink's JSON format (`ID` was read into `id`), and with
    /// `json.fail-on-missing-field` a missing one fails the line (it was
    /// NULL whatever the option said); a JSON null is NULL either way.
    #[test]
    fn json_fields_by_exact_name_and_missing_ones_fail_when_asked() {
        let s = schema();
        let read = |fail_on_missing_field: bool, line: &str| {
            Format::Json {
                ignore_parse_errors: false,
                fail_on_missing_field,
                timestamps: JsonTimestamps::Sql,
                plain_decimals: false,
            }
            .parse(line, &s)
        };
        let line = r#"{"ID": 1, "name": "n", "ts": null, "price": 2.5}"#;
        let Parsed::Row(r) = read(false, line) else {
            panic!()
        };
        assert_eq!(r.values[0], Value::Null);
        assert_eq!(r.values[2], Value::Null);
        assert!(
            matches!(read(true, line), Parsed::Error(e) if e.contains("field `id` is missing"))
        );
        let full = r#"{"id": 1, "name": "n", "ts": null, "price": 2.5}"#;
        assert!(matches!(read(true, full), Parsed::Row(r) if r.values[0] == Value::BigInt(1)));
    }

    /// A JSON number with a fraction or exponent goes into an integer
    /// column as Jackson's `asInt`/`asLong` take it, as Flink's JSON
    /// format reads it: the fraction cut off; outside the type's range (or
    /// as text, `"3.7"`, which `parseInt` refuses) it is not of the type.
    #[test]
    fn json_numbers_with_a_fraction_are_cut_into_integer_columns() {
        let f = Format::Json {
            ignore_parse_errors: false,
            fail_on_missing_field: false,
            timestamps: JsonTimestamps::Sql,
            plain_decimals: false,
        };
        let s = Schema::new(vec![
            Field::new("i", DataType::Int),
            Field::new("b", DataType::BigInt),
        ]);
        let row = |line: &str| match f.parse(line, &s) {
            Parsed::Row(r) => r.values.to_vec(),
            _ => panic!("{line}"),
        };
        assert_eq!(
            row(r#"{"i": 3.7, "b": -3.7}"#),
            [Value::Int(3), Value::BigInt(-3)]
        );
        assert_eq!(
            row(r#"{"i": 1e3, "b": 2147483648.5}"#),
            [Value::Int(1000), Value::BigInt(2_147_483_648)]
        );
        for bad in [
            r#"{"i": 2147483648.0}"#,
            r#"{"b": 1e19}"#,
            r#"{"i": "3.7"}"#,
            r#"{"i": 2147483648}"#,
        ] {
            assert!(matches!(f.parse(bad, &s), Parsed::Error(_)), "{bad}");
        }
    }

    /// Flink's `json.timestamp-format.standard`: TIMESTAMP with a space
    /// (`SQL`) or a `T` (`ISO-8601`), TIMESTAMP_LTZ the same with a `Z`;
    /// what one writes, either reads back.
    #[test]
    fn json_timestamps_follow_the_standard_option() {
        let s = Schema::new(vec![
            Field::new("t", DataType::Timestamp),
            Field::new("l", DataType::TimestampLtz),
        ]);
        let ms = 1_609_330_394_123; // 2020-12-30 12:13:14.123
        let row = Row::new(
            [Value::Timestamp(ms), Value::Timestamp(ms)]
                .into_iter()
                .collect(),
        );
        for (standard, want) in [
            (
                JsonTimestamps::Sql,
                r#"{"t":"2020-12-30 12:13:14.123","l":"2020-12-30 12:13:14.123Z"}"#,
            ),
            (
                JsonTimestamps::Iso8601,
                r#"{"t":"2020-12-30T12:13:14.123","l":"2020-12-30T12:13:14.123Z"}"#,
            ),
        ] {
            let f = Format::Json {
                ignore_parse_errors: false,
                fail_on_missing_field: false,
                timestamps: standard,
                plain_decimals: false,
            };
            let mut out = Vec::new();
            f.write(&row, &s, &mut out);
            let line = String::from_utf8(out).unwrap();
            assert_eq!(line.trim_end(), want);
            for reader in [JsonTimestamps::Sql, JsonTimestamps::Iso8601] {
                let r = Format::Json {
                    ignore_parse_errors: false,
                    fail_on_missing_field: false,
                    timestamps: reader,
                    plain_decimals: false,
                };
                let Parsed::Row(back) = r.parse(line.trim_end(), &s) else {
                    panic!("{line}")
                };
                assert_eq!(back, row, "{standard:?} read as {reader:?}");
            }
        }
        assert_eq!(
            JsonTimestamps::from_option("iso-8601"),
            Some(JsonTimestamps::Iso8601)
        );
        assert_eq!(JsonTimestamps::from_option("RFC"), None);
    }
}
