//! The connectors a `CREATE TABLE ... WITH ('connector' = ..)` names,
//! with Flink's option names, checked when the table is created: an
//! unknown connector or option, a missing required one or a bad value is
//! an error naming the table and the option.
//!
//! - `filesystem`: `path` (a directory, or one file; a `file:` URI names
//!   its local path, [`local_path`]), `format` = `csv` |
//!   `json` with their `csv.*` / `json.*` options. As a source it reads
//!   what is there and ends, or with `source.monitor-interval` keeps
//!   watching the directory for new files (weir's replayable, rescalable
//!   [`weir_runtime::FileSource`]); as a sink it is weir's exactly-once
//!   [`weir_runtime::TransactionalFileSink`] (committed `part-*` files).
//! - `datagen`: `number-of-rows`, `rows-per-second` (default 10000, 0 for
//!   unpaced), `fields.<col>.kind` = `random` | `sequence`,
//!   `fields.<col>.min`/`max` (random numbers), `.start`/`.end`
//!   (sequences), `.length` (random strings, default 100), `.null-rate`.
//! - `nexmark`: a Nexmark table, generated ([`crate::nexmark`]).
//! - `print` (`print-identifier`, `standard-error`), `blackhole`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use weir_runtime::{Paced, SequenceSource, Sink, SubtaskInfo};

use crate::error::{Result, SqlError};
use crate::format::{CsvOptions, Format, JsonTimestamps};
use crate::types::{DataType, Field, Schema};
use crate::value::{Row, Value, Values};

/// A table's connector with its checked options.
#[derive(Clone, Debug)]
pub enum Connector {
    /// Files in a directory (or one file).
    Filesystem {
        /// `path`.
        path: PathBuf,
        /// `format` and its options.
        format: Format,
        /// `source.monitor-interval`: as a source, keep listing the
        /// directory this often for new files (never ending); `None`: read
        /// what is there and end.
        monitor_interval: Option<Duration>,
    },
    /// Generated rows.
    Datagen(Datagen),
    /// Rows printed to stdout (or stderr).
    Print {
        /// `print-identifier`: a prefix of every line.
        identifier: Option<String>,
        /// `standard-error`: print to stderr.
        stderr: bool,
    },
    /// Rows dropped.
    Blackhole,
    /// A Nexmark table, generated.
    Nexmark(crate::nexmark::NexmarkTable),
    /// A Kafka topic (`kafka`, or `upsert-kafka` as a sink).
    Kafka(Box<crate::kafka::KafkaTable>),
}

/// The `datagen` connector's options.
#[derive(Clone, Debug)]
pub struct Datagen {
    /// Rows in all (`None`: unbounded).
    pub rows: Option<u64>,
    /// Rows per second over all subtasks (0: as fast as possible).
    pub rows_per_second: u64,
    /// One generator per physical column.
    pub fields: Vec<FieldGen>,
    /// Which physical columns the job reads (`None`: all); the others
    /// are NULL, not generated ([`crate::prune`]). Each column's values
    /// depend on the row and the column alone, so the columns read are
    /// the same either way.
    pub read: Option<Vec<bool>>,
}

/// How one column is generated.
#[derive(Clone, Debug)]
pub enum FieldGen {
    /// `start + i` for row `i` (numbers; strings are its text).
    Sequence {
        /// The first value.
        start: i64,
        /// The last value.
        end: i64,
    },
    /// Uniform over `min..=max` (numbers), `length` characters (strings),
    /// up to `max_past` ms before the job started (timestamps); NULL with
    /// probability `null_rate`.
    Random {
        /// Smallest number.
        min: i64,
        /// Largest number.
        max: i64,
        /// A DOUBLE's bounds (fractions allowed).
        real: (f64, f64),
        /// A DECIMAL's bounds as unscaled values of its scale (fractions
        /// allowed).
        unscaled: (i128, i128),
        /// String length.
        length: usize,
        /// Probability of NULL.
        null_rate: f64,
    },
}

/// A table's `WITH` options, each marked when a connector reads it, so
/// that an option nobody read is reported.
pub(crate) struct Options<'a> {
    table: &'a str,
    map: &'a BTreeMap<String, String>,
    used: Vec<String>,
}

impl<'a> Options<'a> {
    pub(crate) fn err(&self, message: String) -> SqlError {
        SqlError::Connector {
            table: self.table.to_owned(),
            message,
        }
    }

    pub(crate) fn get(&mut self, key: &str) -> Option<&'a str> {
        let v = self.map.get(key).map(String::as_str);
        if v.is_some() {
            self.used.push(key.to_owned());
        }
        v
    }

    pub(crate) fn required(&mut self, key: &str) -> Result<&'a str> {
        self.get(key)
            .ok_or_else(|| self.err(format!("the option '{key}' is required")))
    }

    pub(crate) fn parse<T: std::str::FromStr>(&mut self, key: &str) -> Result<Option<T>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => {
                v.trim().parse().map(Some).map_err(|_| {
                    self.err(format!("the option '{key}' = '{v}' is not a valid value"))
                })
            }
        }
    }

    pub(crate) fn boolean(&mut self, key: &str) -> Result<bool> {
        self.boolean_or(key, false)
    }

    /// As [`Self::boolean`], `default` when the option is not given.
    pub(crate) fn boolean_or(&mut self, key: &str, default: bool) -> Result<bool> {
        match self.get(key).map(|v| v.trim().to_ascii_lowercase()) {
            None => Ok(default),
            Some(v) if v == "true" => Ok(true),
            Some(v) if v == "false" => Ok(false),
            Some(v) => Err(self.err(format!("the option '{key}' = '{v}' is not true or false"))),
        }
    }

    pub(crate) fn char(&mut self, key: &str) -> Result<Option<char>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => {
                let v = match v {
                    "\\t" => "\t",
                    other => other,
                };
                let mut cs = v.chars();
                match (cs.next(), cs.next()) {
                    (Some(c), None) => Ok(Some(c)),
                    _ => Err(self.err(format!("the option '{key}' = '{v}' must be one character"))),
                }
            }
        }
    }

    /// Every option whose key starts with `prefix`, marked used, with the
    /// prefix cut off.
    pub(crate) fn prefixed(&mut self, prefix: &str) -> BTreeMap<String, String> {
        let found: BTreeMap<String, String> = self
            .map
            .iter()
            .filter_map(|(k, v)| k.strip_prefix(prefix).map(|s| (s.to_owned(), v.clone())))
            .collect();
        self.used
            .extend(found.keys().map(|k| format!("{prefix}{k}")));
        found
    }

    /// Every option given was used: an unknown one is an error listing it.
    pub(crate) fn finish(self, connector: &str) -> Result<()> {
        let unknown: Vec<&String> = self
            .map
            .keys()
            .filter(|k| !self.used.contains(k) && k.as_str() != "connector")
            .collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(self.err(format!(
                "unsupported options for connector '{connector}': {}",
                unknown
                    .iter()
                    .map(|k| format!("'{k}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    }
}

/// Flink's filesystem sink options of its rolling policy that are
/// durations.
pub const ROLLING_POLICY_DURATIONS: [&str; 3] = [
    "sink.rolling-policy.rollover-interval",
    "sink.rolling-policy.check-interval",
    "sink.rolling-policy.inactivity-interval",
];

/// The local path `path` names: itself, or the path of a `file:` URI as
/// Flink's docs write them (`file:///data/in`, `file:/data/in`, `%20` for
/// a space). Any other scheme (`s3://`, `hdfs://`) or a `file:` URI of
/// another host is an error: weir reads and writes the local file system
/// only. (Taken as a relative path, `file:///data/out` was a directory
/// `./file:/data/out` the sink wrote into.)
pub fn local_path(path: &str) -> std::result::Result<PathBuf, String> {
    let scheme = path.split_once(':').map(|(s, _)| s).filter(|s| {
        s.len() > 1
            && s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    let Some(scheme) = scheme else {
        return Ok(PathBuf::from(path));
    };
    let rest = &path[scheme.len() + 1..];
    if !scheme.eq_ignore_ascii_case("file") {
        if rest.starts_with("//") {
            return Err(format!(
                "'path' = '{path}': the '{scheme}' file system is not supported; weir reads and \
                 writes local paths ('/data/in' or 'file:///data/in')"
            ));
        }
        // `name:with-colon/...`: a relative path.
        return Ok(PathBuf::from(path));
    }
    let local = match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let (host, local) = match authority_and_path.find('/') {
                Some(i) => authority_and_path.split_at(i),
                None => (authority_and_path, ""),
            };
            if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
                return Err(format!(
                    "'path' = '{path}' names host '{host}': weir reads and writes this \
                     machine's files ('file:///data/in')"
                ));
            }
            local
        }
        None => rest,
    };
    if !local.starts_with('/') {
        return Err(format!(
            "'path' = '{path}' is a file URI without an absolute path ('file:///data/in')"
        ));
    }
    percent_decoded(local)
        .map(PathBuf::from)
        .ok_or_else(|| format!("'path' = '{path}' has a '%' not followed by two hex digits"))
}

/// `text` with its `%XX` escapes decoded, as a URI's path is (`None`: a
/// `%` without two hex digits, or bytes that are not UTF-8).
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `json.timestamp-format.standard` (under `key`): `SQL` (the default) or
/// `ISO-8601`.
pub(crate) fn json_timestamps(o: &mut Options<'_>, key: &str) -> Result<JsonTimestamps> {
    match o.get(key) {
        None => Ok(JsonTimestamps::default()),
        Some(v) => JsonTimestamps::from_option(v).ok_or_else(|| {
            o.err(format!(
                "the option '{key}' = '{v}' is not 'SQL' or 'ISO-8601'"
            ))
        }),
    }
}

/// Flink's options setting one source's or sink's parallelism.
pub const PARALLELISM_OPTIONS: [&str; 2] = ["scan.parallelism", "sink.parallelism"];

/// Flink's filesystem sink option of its rolling policy's part size.
pub const ROLLING_POLICY_FILE_SIZE: &str = "sink.rolling-policy.file-size";

impl Connector {
    /// The connector `options` describe for a table of `physical` columns.
    pub fn from_options(
        table: &str,
        options: &BTreeMap<String, String>,
        physical: &Schema,
    ) -> Result<Connector> {
        let mut o = Options {
            table,
            map: options,
            used: Vec::new(),
        };
        let name = o.required("connector")?.to_ascii_lowercase();
        // Flink's per-connector parallelism: checked, taken (every
        // operator runs at the job's parallelism; the session notes it).
        for key in PARALLELISM_OPTIONS {
            if let Some(v) = o.get(key) {
                if !v.trim().parse::<u32>().is_ok_and(|n| n > 0) {
                    return Err(o.err(format!(
                        "the option '{key}' = '{v}' is not a positive integer"
                    )));
                }
            }
        }
        let c = match name.as_str() {
            "filesystem" => {
                let path = local_path(o.required("path")?).map_err(|m| o.err(m))?;
                let monitor_interval = match o.get("source.monitor-interval") {
                    None => None,
                    Some(v) => {
                        let d = weir_runtime::core::units::parse_duration(v)
                            .filter(|d| !d.is_zero())
                            .ok_or_else(|| {
                                o.err(format!(
                                    "the option 'source.monitor-interval' = '{v}' is not a positive duration (e.g. '1 s', '500 ms')"
                                ))
                            })?;
                        Some(d)
                    }
                };
                // Flink's row-format rolling policy: checked, taken; weir's
                // sink commits one part file per subtask and checkpoint
                // (the session notes it).
                for key in ROLLING_POLICY_DURATIONS {
                    if let Some(v) = o.get(key) {
                        if weir_runtime::core::units::parse_duration(v).is_none_or(|d| d.is_zero()) {
                            return Err(o.err(format!(
                                "the option '{key}' = '{v}' is not a positive duration (e.g. '30 min', '1 s')"
                            )));
                        }
                    }
                }
                if let Some(v) = o.get(ROLLING_POLICY_FILE_SIZE) {
                    if weir_runtime::core::units::parse_memory_size(v).is_none_or(|n| n == 0) {
                        return Err(o.err(format!(
                            "the option '{ROLLING_POLICY_FILE_SIZE}' = '{v}' is not a positive size (e.g. '128 mb')"
                        )));
                    }
                }
                let format = match o.required("format")?.to_ascii_lowercase().as_str() {
                    "csv" => {
                        let mut c = CsvOptions::default();
                        if let Some(d) = o.char("csv.field-delimiter")? {
                            c.delimiter = d;
                        }
                        if let Some(q) = o.char("csv.quote-character")? {
                            c.quote = Some(q);
                        }
                        if o.boolean("csv.disable-quote-character")? {
                            c.quote = None;
                        }
                        c.escape = o.char("csv.escape-character")?;
                        c.null_literal = o.get("csv.null-literal").map(str::to_owned);
                        c.ignore_parse_errors = o.boolean("csv.ignore-parse-errors")?;
                        c.allow_comments = o.boolean("csv.allow-comments")?;
                        c.skip_header = o.boolean("csv.ignore-first-line")?;
                        c.scientific_decimals =
                            o.boolean_or("csv.write-bigdecimal-in-scientific-notation", true)?;
                        Format::Csv(c)
                    }
                    "json" => {
                        let ignore = o.boolean("json.ignore-parse-errors")?;
                        let fail_on_missing_field = o.boolean("json.fail-on-missing-field")?;
                        if ignore && fail_on_missing_field {
                            return Err(o.err(
                                "'json.fail-on-missing-field' and 'json.ignore-parse-errors' cannot both be true (as in Flink)".into(),
                            ));
                        }
                        Format::Json {
                            ignore_parse_errors: ignore,
                            fail_on_missing_field,
                            timestamps: json_timestamps(&mut o, "json.timestamp-format.standard")?,
                            plain_decimals: o.boolean("json.encode.decimal-as-plain-number")?,
                        }
                    }
                    other => {
                        return Err(o.err(format!(
                            "'format' = '{other}' is not supported (csv and json are)"
                        )))
                    }
                };
                Connector::Filesystem {
                    path,
                    format,
                    monitor_interval,
                }
            }
            "datagen" => {
                let rows = o.parse::<u64>("number-of-rows")?;
                let rows_per_second = o.parse::<u64>("rows-per-second")?.unwrap_or(10_000);
                let mut fields = Vec::new();
                for f in &physical.fields {
                    let p = |k: &str| format!("fields.{}.{k}", f.name);
                    let kind = o.get(&p("kind")).unwrap_or("random").to_ascii_lowercase();
                    let null_rate = o.parse::<f64>(&p("null-rate"))?.unwrap_or(0.0);
                    let g = match kind.as_str() {
                        "sequence" => {
                            if !matches!(f.ty, DataType::Int | DataType::BigInt | DataType::String | DataType::Decimal { .. } | DataType::Double | DataType::Float) {
                                return Err(o.err(format!("column `{}`: a sequence of {} is not supported", f.name, f.ty)));
                            }
                            let start = o.parse::<i64>(&p("start"))?.ok_or_else(|| {
                                o.err(format!("the option '{}' is required for a sequence", p("start")))
                            })?;
                            let end = o.parse::<i64>(&p("end"))?.ok_or_else(|| {
                                o.err(format!("the option '{}' is required for a sequence", p("end")))
                            })?;
                            if end < start {
                                return Err(o.err(format!("column `{}`: sequence end {end} before start {start}", f.name)));
                            }
                            check_range(f, start, end, "sequence").map_err(|m| o.err(m))?;
                            FieldGen::Sequence { start, end }
                        }
                        "random" => {
                            // By default the type's whole range.
                            let (dmin, dmax) = match f.ty {
                                DataType::Int => (i64::from(i32::MIN), i64::from(i32::MAX)),
                                DataType::Timestamp | DataType::TimestampLtz | DataType::Date => (0, 0),
                                DataType::Decimal { precision, scale } => {
                                    let limit = decimal_integer_limit(precision, scale);
                                    (-limit, limit)
                                }
                                _ => (i64::MIN, i64::MAX),
                            };
                            // DOUBLE and DECIMAL bounds may have fractions
                            // (`'fields.price.min' = '0.5'`), as Flink reads
                            // them; the other numbers' are integers.
                            let (mut real, mut unscaled) = ((0.0, 0.0), (0, 0));
                            let (min, max) = match f.ty {
                                DataType::Double | DataType::Float => {
                                    real = (
                                        o.parse::<f64>(&p("min"))?.unwrap_or(dmin as f64),
                                        o.parse::<f64>(&p("max"))?.unwrap_or(dmax as f64),
                                    );
                                    if !(real.0.is_finite() && real.1.is_finite()) || real.1 < real.0 {
                                        return Err(o.err(format!(
                                            "column `{}`: max {} below min {} (or not finite)",
                                            f.name, real.1, real.0
                                        )));
                                    }
                                    (0, 0)
                                }
                                DataType::Decimal { precision, scale } => {
                                    let unit = 10i128.pow(u32::from(scale));
                                    let mut bound = |key: String, default: i64| -> Result<i128> {
                                        match o.get(&key) {
                                            None => Ok(i128::from(default) * unit),
                                            Some(v) => crate::expr::parse_decimal(v.trim(), scale)
                                                .filter(|&u| crate::expr::fits(u, precision))
                                                .ok_or_else(|| {
                                                    o.err(format!(
                                                        "the option '{key}' = '{v}' is not a {}",
                                                        f.ty
                                                    ))
                                                }),
                                        }
                                    };
                                    unscaled = (bound(p("min"), dmin)?, bound(p("max"), dmax)?);
                                    if unscaled.1 < unscaled.0 {
                                        return Err(o.err(format!(
                                            "column `{}`: max below min",
                                            f.name
                                        )));
                                    }
                                    (0, 0)
                                }
                                _ => (
                                    o.parse::<i64>(&p("min"))?.unwrap_or(dmin),
                                    o.parse::<i64>(&p("max"))?.unwrap_or(dmax),
                                ),
                            };
                            let max_past = match o.get(&p("max-past")) {
                                None => 0,
                                Some(v) => {
                                    let d = weir_runtime::core::units::parse_duration(v).ok_or_else(|| {
                                        o.err(format!("the option '{}' = '{v}' is not a duration", p("max-past")))
                                    })?;
                                    d.as_millis() as i64
                                }
                            };
                            if max < min {
                                return Err(o.err(format!("column `{}`: max {max} below min {min}", f.name)));
                            }
                            check_range(f, min, max, "random").map_err(|m| o.err(m))?;
                            let length = o.parse::<usize>(&p("length"))?.unwrap_or(100);
                            // Times (and dates) up to `max-past` before the start.
                            let (min, max) = if f.ty.is_timestamp() || f.ty == DataType::Date {
                                (-max_past, 0)
                            } else {
                                (min, max)
                            };
                            FieldGen::Random {
                                min,
                                max,
                                real,
                                unscaled,
                                length,
                                null_rate,
                            }
                        }
                        other => {
                            return Err(o.err(format!(
                                "'{}' = '{other}' (random or sequence)",
                                p("kind")
                            )))
                        }
                    };
                    fields.push(g);
                }
                Connector::Datagen(Datagen {
                    rows,
                    rows_per_second,
                    fields,
                    read: None,
                })
            }
            "print" => Connector::Print {
                identifier: o.get("print-identifier").map(str::to_owned),
                stderr: o.boolean("standard-error")?,
            },
            "blackhole" => Connector::Blackhole,
            "nexmark" => {
                let kind = o.required("nexmark.table.type")?;
                let events = o.parse::<u64>("events.num")?;
                let rate = o.parse::<u64>("first-event.rate")?;
                let tps = o.parse::<u64>("tps")?.unwrap_or(0);
                let seed = o.parse::<u64>("seed")?;
                Connector::Nexmark(crate::nexmark::NexmarkTable::new(
                    table, kind, events, rate, tps, seed, physical,
                )?)
            }
            "kafka" | "upsert-kafka" => Connector::Kafka(Box::new(crate::kafka::KafkaTable::from_options(
                &mut o,
                name == "upsert-kafka",
                physical,
            )?)),
            other => {
                return Err(o.err(format!(
                    "unknown connector '{other}' (filesystem, datagen, nexmark, kafka, upsert-kafka, print and blackhole are available)"
                )))
            }
        };
        o.finish(&name)?;
        Ok(c)
    }

    /// The connector's name, as `'connector'` says it.
    pub fn name(&self) -> &'static str {
        match self {
            Connector::Filesystem { .. } => "filesystem",
            Connector::Datagen(_) => "datagen",
            Connector::Print { .. } => "print",
            Connector::Blackhole => "blackhole",
            Connector::Nexmark(_) => "nexmark",
            Connector::Kafka(k) if k.upsert => "upsert-kafka",
            Connector::Kafka(_) => "kafka",
        }
    }

    /// Whether it can be read.
    pub fn is_source(&self) -> bool {
        matches!(
            self,
            Connector::Filesystem { .. } | Connector::Datagen(_) | Connector::Nexmark(_)
        ) || matches!(self, Connector::Kafka(k) if !k.upsert)
    }

    /// Whether, as a sink, it writes update-before rows. A blackhole and
    /// an upsert-kafka table leave them out of their changelog, as
    /// Flink's do, so an aggregation feeding only them need not make
    /// them ([`crate::changelog`]).
    pub fn takes_update_before(&self) -> bool {
        !matches!(self, Connector::Blackhole) && !matches!(self, Connector::Kafka(k) if k.upsert)
    }

    /// Whether it can be written.
    pub fn is_sink(&self) -> bool {
        !matches!(self, Connector::Datagen(_) | Connector::Nexmark(_))
    }
}

impl Datagen {
    /// The number of rows: `number-of-rows`, or the shortest sequence.
    pub fn count(&self) -> Option<u64> {
        let seq = self
            .fields
            .iter()
            .filter_map(|f| match f {
                // (in 128 bits: the whole BIGINT range is 2^64 values)
                FieldGen::Sequence { start, end } => Some(
                    u64::try_from(i128::from(*end) - i128::from(*start) + 1).unwrap_or(u64::MAX),
                ),
                _ => None,
            })
            .min();
        match (self.rows, seq) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Row `i` of the table: each column's value from `(seed, i, column)`
    /// alone, so a restored source makes the same rows again. The
    /// reference of [`RowGen`](crate::datagen::RowGen), which the source
    /// runs: the same rows, its columns' generators picked once.
    pub fn row(&self, i: u64, types: &[DataType], base_ms: i64) -> Row {
        let mut values = Values::with_capacity(self.fields.len());
        for (c, (g, ty)) in self.fields.iter().zip(types).enumerate() {
            if self.read.as_ref().is_some_and(|r| !r[c]) {
                values.push(Value::Null);
                continue;
            }
            values.push(g.value(c, i, *ty, base_ms));
        }
        Row::new(values)
    }
}

impl FieldGen {
    /// The value of column `c` (of type `ty`) in row `i`.
    pub fn value(&self, c: usize, i: u64, ty: DataType, base_ms: i64) -> Value {
        let mut h = splitmix64(
            i.wrapping_mul(0x9E37_79B9)
                .wrapping_add(c as u64 * 0x1234_5677),
        );
        match self {
            FieldGen::Sequence { start, .. } => {
                let n = start.saturating_add(i as i64);
                match ty {
                    DataType::Int => Value::Int(n as i32),
                    DataType::String => Value::Str(n.to_string().into()),
                    DataType::Double => Value::Double(n as f64),
                    DataType::Float => Value::float(n as f32),
                    DataType::Decimal { scale, .. } => {
                        Value::decimal(i128::from(n) * 10i128.pow(u32::from(scale)))
                    }
                    _ => Value::BigInt(n),
                }
            }
            FieldGen::Random {
                min,
                max,
                real,
                unscaled,
                length,
                null_rate,
            } => {
                if *null_rate > 0.0 && (h >> 11) as f64 / (1u64 << 53) as f64 <= *null_rate {
                    return Value::Null;
                }
                h = splitmix64(h);
                let span = (*max as i128 - *min as i128 + 1) as u128;
                // (a 64-bit remainder where the span fits, the same
                // value as the 128-bit one without its library call)
                let offset = match u64::try_from(span) {
                    Ok(span) => u128::from(h % span),
                    Err(_) => u128::from(h), // the whole i64 range
                };
                let n = (*min as i128 + offset as i128) as i64;
                match ty {
                    DataType::Boolean => Value::Bool(h & 1 == 1),
                    DataType::Int => Value::Int(n as i32),
                    DataType::BigInt => Value::BigInt(n),
                    DataType::Double => Value::Double(
                        real.0 + (h >> 11) as f64 / (1u64 << 53) as f64 * (real.1 - real.0),
                    ),
                    DataType::Float => Value::float(
                        (real.0 + (h >> 11) as f64 / (1u64 << 53) as f64 * (real.1 - real.0))
                            as f32,
                    ),
                    // Uniform over the unscaled values of `min..=max`,
                    // fractions included.
                    DataType::Decimal { .. } => {
                        let (lo, hi) = *unscaled;
                        let span = (hi - lo + 1) as u128;
                        Value::decimal(lo + (u128::from(h) % span) as i128)
                    }
                    DataType::String => {
                        const ALPHA: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
                        let mut s = compact_str::CompactString::default();
                        let mut x = h;
                        for _ in 0..*length {
                            x = splitmix64(x);
                            s.push(ALPHA[(x % ALPHA.len() as u64) as usize] as char);
                        }
                        Value::Str(s)
                    }
                    DataType::Timestamp | DataType::TimestampLtz => Value::Timestamp(base_ms + n),
                    DataType::Date => {
                        Value::Date((base_ms + n).div_euclid(crate::time::DAY_MS) as i32)
                    }
                    DataType::Interval => Value::Interval(n),
                }
            }
        }
    }
}

/// The largest integer part a `DECIMAL(precision, scale)` holds
/// (`10^(precision - scale) - 1`), or `i64::MAX` if that is larger.
fn decimal_integer_limit(precision: u8, scale: u8) -> i64 {
    10i64
        .checked_pow(u32::from(precision.saturating_sub(scale)))
        .map_or(i64::MAX, |p| p - 1)
}

/// Refuses a datagen range (`kind` `sequence` or `random`) whose numbers
/// the column's type cannot hold, rather than wrapping them (an INT) or
/// making values over its precision (a DECIMAL).
fn check_range(f: &Field, lo: i64, hi: i64, kind: &str) -> std::result::Result<(), String> {
    let (min, max) = match f.ty {
        DataType::Int => (i64::from(i32::MIN), i64::from(i32::MAX)),
        DataType::Decimal { precision, scale } => {
            let limit = decimal_integer_limit(precision, scale);
            (-limit, limit)
        }
        _ => return Ok(()),
    };
    if lo < min || hi > max {
        return Err(format!(
            "column `{}`: the {kind} {lo}..{hi} does not fit {} ({min}..{max})",
            f.name, f.ty
        ));
    }
    Ok(())
}

/// SplitMix64: a fast, well-mixed hash of a counter.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The datagen source of one subtask: rows `s, s + P, ...` of `0..count`
/// (weir's strided sequence source: it rescales, and a subtask's row
/// numbers ascend), paced.
pub fn datagen_source(
    gen: &Datagen,
    types: &[DataType],
    base_ms: i64,
    info: &SubtaskInfo,
) -> Paced<SequenceSource<impl FnMut(u64) -> Row + use<>>> {
    let count = gen.count().unwrap_or(u64::MAX);
    let g = crate::datagen::RowGen::new(gen, types, base_ms);
    Paced::share(
        SequenceSource::new(info, count, move |i| g.row(i)),
        gen.rows_per_second,
        info,
    )
}

/// The `print` sink: each row as Flink prints it (`+I[a, b]`), prefixed
/// with the identifier and, at parallelism above 1, the subtask (`2> `).
pub struct PrintSink {
    prefix: String,
    types: Vec<DataType>,
    stderr: bool,
}

impl PrintSink {
    /// Subtask `info`'s print sink.
    pub fn new(
        identifier: Option<&str>,
        stderr: bool,
        types: Vec<DataType>,
        info: &SubtaskInfo,
    ) -> Self {
        let prefix = match (identifier, info.parallelism > 1) {
            (Some(id), true) => format!("{id}:{}> ", info.index + 1),
            (Some(id), false) => format!("{id}> "),
            (None, true) => format!("{}> ", info.index + 1),
            (None, false) => String::new(),
        };
        Self {
            prefix,
            types,
            stderr,
        }
    }
}

impl Sink for PrintSink {
    type In = Row;

    fn invoke(&mut self, row: Row) {
        use std::io::Write;
        let line = format!("{}{}\n", self.prefix, row.display(&self.types));
        if self.stderr {
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        } else {
            let _ = std::io::stdout().lock().write_all(line.as_bytes());
        }
    }
}

/// The `blackhole` sink: drops every row.
pub struct BlackholeSink;

impl Sink for BlackholeSink {
    type In = Row;

    #[inline]
    fn invoke(&mut self, _row: Row) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_uri_is_its_local_path_and_other_file_systems_are_refused() {
        let ok = |p: &str| local_path(p).unwrap();
        assert_eq!(ok("/data/in"), PathBuf::from("/data/in"));
        assert_eq!(ok("data/in"), PathBuf::from("data/in"));
        assert_eq!(ok("file:///data/in"), PathBuf::from("/data/in"));
        assert_eq!(ok("FILE:///data/in/"), PathBuf::from("/data/in/"));
        assert_eq!(ok("file:/data/in"), PathBuf::from("/data/in"));
        assert_eq!(ok("file://localhost/data/in"), PathBuf::from("/data/in"));
        assert_eq!(ok("file:///data/my%20in"), PathBuf::from("/data/my in"));
        // A relative path with a colon is no URI.
        assert_eq!(ok("a:b/c"), PathBuf::from("a:b/c"));
        assert_eq!(ok("C:/x"), PathBuf::from("C:/x"));
        let err = |p: &str| local_path(p).unwrap_err();
        assert!(err("s3://bucket/in").contains("the 's3' file system is not supported"));
        assert!(err("hdfs://nn:8020/in").contains("'hdfs'"));
        assert!(err("file://server/data").contains("names host 'server'"));
        assert!(err("file:data/in").contains("without an absolute path"));
        assert!(err("file:///data/%zz").contains("'%'"));
    }
}
