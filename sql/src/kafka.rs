//! The `kafka` and `upsert-kafka` connectors: Flink's option names over
//! weir's [`weir_kafka`] source and sink.
//!
//! - `topic` (one, or several separated by `;`) or `topic-pattern`;
//!   `properties.bootstrap.servers` (required), `properties.group.id`, any
//!   other `properties.*` passed to the client.
//! - `scan.startup.mode` = `earliest-offset` | `latest-offset` |
//!   `group-offsets` | `timestamp` (`scan.startup.timestamp-millis`) |
//!   `specific-offsets` (`scan.startup.specific-offsets` =
//!   `partition:0,offset:42;partition:1,offset:300`); Flink's default is
//!   `group-offsets`, weir's too.
//! - `scan.bounded.mode` = `unbounded` | `latest-offset`;
//!   `scan.topic-partition-discovery.interval`.
//! - `format` (or `value.format`) = `json` | `csv` | `raw` with their
//!   options; `key.format` and `key.fields` (`a;b`) for a key;
//!   `value.fields-include` = `ALL` | `EXCEPT_KEY`.
//! - `sink.delivery-guarantee` = `none` | `at-least-once` |
//!   `exactly-once`, `sink.transactional-id-prefix`, `sink.partitioner` =
//!   `default` | `fixed` | `round-robin`.
//!
//! `kafka` is append-only, as Flink's: an updating query is refused.
//! `upsert-kafka` (a sink here) takes a changelog: the PRIMARY KEY's columns
//! are the record key, an insert or update-after is written as the row,
//! a delete or update-before as a tombstone (no value), as Flink's; the
//! planner leaves update-befores out where nothing needs them
//! ([`crate::changelog::upsert_writes_update_before`]).

use std::collections::BTreeMap;
use std::time::Duration;

use compact_str::CompactString;
use weir_kafka::{
    BoundedMode, DeliveryGuarantee, KafkaClientOptions, KafkaRecord, KafkaSink, KafkaSource,
    Partitioner, Serialized, StartingOffsets,
};

use crate::connectors::Options;
use crate::error::{Result, SqlError};
use crate::format::{CsvOptions, Format, Parsed};
use crate::types::{DataType, Schema};
use crate::value::{Row, RowKind, Value, Values};

/// How a key or value is written.
#[derive(Clone, Debug)]
pub enum KafkaFormat {
    /// `csv` or `json` (one record per Kafka record, no newline).
    Text(Format),
    /// `raw`: the bytes are the one STRING column (UTF-8).
    Raw,
}

/// Which topics a table reads.
#[derive(Clone, Debug)]
pub enum Topics {
    /// `topic`.
    Names(Vec<String>),
    /// `topic-pattern`.
    Pattern(String),
}

/// A `kafka` / `upsert-kafka` table's checked options.
#[derive(Clone, Debug)]
pub struct KafkaTable {
    /// `upsert-kafka`.
    pub upsert: bool,
    client: KafkaClientOptions,
    topics: Topics,
    group_id: Option<String>,
    starting: StartingOffsets,
    bounded: BoundedMode,
    discovery: Option<Duration>,
    value_format: KafkaFormat,
    /// The value's columns (physical indices) and their schema.
    value_columns: Vec<usize>,
    value_schema: Schema,
    /// The key's format, columns and schema.
    key: Option<(KafkaFormat, Vec<usize>, Schema)>,
    guarantee: DeliveryGuarantee,
    prefix: Option<String>,
    partitioner: Partitioner,
    physical: Schema,
}

fn format_options(o: &mut Options<'_>, name: &str, prefix: &str) -> Result<KafkaFormat> {
    let key = |k: &str| format!("{prefix}{k}");
    Ok(match name.to_ascii_lowercase().as_str() {
        "raw" => KafkaFormat::Raw,
        "json" => {
            let ignore = o.boolean(&key("json.ignore-parse-errors"))?;
            let fail_on_missing_field = o.boolean(&key("json.fail-on-missing-field"))?;
            if ignore && fail_on_missing_field {
                return Err(o.err(format!(
                    "'{}' and '{}' cannot both be true (as in Flink)",
                    key("json.fail-on-missing-field"),
                    key("json.ignore-parse-errors")
                )));
            }
            KafkaFormat::Text(Format::Json {
                ignore_parse_errors: ignore,
                fail_on_missing_field,
                timestamps: crate::connectors::json_timestamps(
                    o,
                    &key("json.timestamp-format.standard"),
                )?,
                plain_decimals: o.boolean(&key("json.encode.decimal-as-plain-number"))?,
            })
        }
        "csv" => {
            let mut c = CsvOptions::default();
            if let Some(d) = o.char(&key("csv.field-delimiter"))? {
                c.delimiter = d;
            }
            if let Some(q) = o.char(&key("csv.quote-character"))? {
                c.quote = Some(q);
            }
            if o.boolean(&key("csv.disable-quote-character"))? {
                c.quote = None;
            }
            c.escape = o.char(&key("csv.escape-character"))?;
            c.null_literal = o.get(&key("csv.null-literal")).map(str::to_owned);
            c.ignore_parse_errors = o.boolean(&key("csv.ignore-parse-errors"))?;
            c.allow_comments = o.boolean(&key("csv.allow-comments"))?;
            c.scientific_decimals =
                o.boolean_or(&key("csv.write-bigdecimal-in-scientific-notation"), true)?;
            KafkaFormat::Text(Format::Csv(c))
        }
        other => {
            return Err(o.err(format!(
                "'{prefix}format' = '{other}' is not supported (json, csv and raw are)"
            )))
        }
    })
}

fn sub_schema(physical: &Schema, cols: &[usize]) -> Schema {
    Schema::new(cols.iter().map(|&i| physical.fields[i].clone()).collect())
}

fn check_raw(o: &Options<'_>, f: &KafkaFormat, schema: &Schema, what: &str) -> Result<()> {
    if matches!(f, KafkaFormat::Raw)
        && (schema.len() != 1 || schema.fields[0].ty != DataType::String)
    {
        return Err(o.err(format!(
            "the 'raw' format needs the {what} to be one STRING column, not {schema}"
        )));
    }
    Ok(())
}

impl KafkaTable {
    /// Reads the options of a table of `physical` columns.
    pub(crate) fn from_options(
        o: &mut Options<'_>,
        upsert: bool,
        physical: &Schema,
    ) -> Result<Self> {
        let mut props = o.prefixed("properties.");
        let bootstrap = props
            .remove("bootstrap.servers")
            .ok_or_else(|| o.err("the option 'properties.bootstrap.servers' is required".into()))?;
        let group_id = props.remove("group.id");
        let client = KafkaClientOptions {
            bootstrap_servers: bootstrap,
            properties: props,
        };
        let topics = match (o.get("topic"), o.get("topic-pattern")) {
            (Some(t), None) => Topics::Names(
                t.split(';')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ),
            (None, Some(p)) => Topics::Pattern(p.to_owned()),
            (Some(_), Some(_)) => {
                return Err(o.err("set one of 'topic' and 'topic-pattern', not both".into()))
            }
            (None, None) => return Err(o.err("the option 'topic' is required".into())),
        };
        let starting = match o
            .get("scan.startup.mode")
            .map(|m| m.to_ascii_lowercase())
            .as_deref()
            .unwrap_or("group-offsets")
        {
            "earliest-offset" => StartingOffsets::Earliest,
            "latest-offset" => StartingOffsets::Latest,
            "group-offsets" => StartingOffsets::GroupOffsets,
            "timestamp" => StartingOffsets::Timestamp(
                o.parse::<i64>("scan.startup.timestamp-millis")?.ok_or_else(|| {
                    o.err("'scan.startup.mode' = 'timestamp' needs 'scan.startup.timestamp-millis'".into())
                })?,
            ),
            "specific-offsets" => {
                let spec = o.required("scan.startup.specific-offsets")?;
                let Topics::Names(names) = &topics else {
                    return Err(o.err("'specific-offsets' needs 'topic', not 'topic-pattern'".into()));
                };
                let mut map = BTreeMap::new();
                for part in spec.split(';').map(str::trim).filter(|p| !p.is_empty()) {
                    let mut partition = None;
                    let mut offset = None;
                    for kv in part.split(',') {
                        match kv.split_once(':').map(|(k, v)| (k.trim(), v.trim())) {
                            Some(("partition", v)) => partition = v.parse::<i32>().ok(),
                            Some(("offset", v)) => offset = v.parse::<i64>().ok(),
                            _ => partition = None,
                        }
                    }
                    let (Some(p), Some(off)) = (partition, offset) else {
                        return Err(o.err(format!(
                            "'scan.startup.specific-offsets': `{part}` is not `partition:<n>,offset:<n>`"
                        )));
                    };
                    for t in names {
                        map.insert((t.clone(), p), off);
                    }
                }
                StartingOffsets::Specific(map)
            }
            other => {
                return Err(o.err(format!(
                    "'scan.startup.mode' = '{other}' (earliest-offset, latest-offset, group-offsets, timestamp or specific-offsets)"
                )))
            }
        };
        let bounded = match o
            .get("scan.bounded.mode")
            .map(|m| m.to_ascii_lowercase())
            .as_deref()
            .unwrap_or("unbounded")
        {
            "unbounded" => BoundedMode::Unbounded,
            "latest-offset" => BoundedMode::Latest,
            other => {
                return Err(o.err(format!(
                    "'scan.bounded.mode' = '{other}' (unbounded or latest-offset)"
                )))
            }
        };
        let discovery = match o.get("scan.topic-partition-discovery.interval") {
            None => None,
            Some(v) => {
                let d = weir_runtime::core::units::parse_duration(v).ok_or_else(|| {
                    o.err(format!(
                        "'scan.topic-partition-discovery.interval' = '{v}' is not a duration"
                    ))
                })?;
                (!d.is_zero()).then_some(d)
            }
        };
        let value_name = match (o.get("format"), o.get("value.format")) {
            (Some(f), None) => (f, ""),
            (None, Some(f)) => (f, "value."),
            (Some(_), Some(_)) => {
                return Err(o.err("set one of 'format' and 'value.format', not both".into()))
            }
            (None, None) => return Err(o.err("the option 'format' is required".into())),
        };
        let value_format = format_options(o, value_name.0, value_name.1)?;
        // The key: `key.fields` (kafka) or the primary key (upsert-kafka,
        // given by the catalog through `key.fields` as well).
        let key_fields: Vec<usize> = match o.get("key.fields") {
            None => Vec::new(),
            Some(list) => list
                .split(';')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .map(|f| {
                    physical.index_of(f).ok_or_else(|| {
                        o.err(format!("'key.fields': the table has no column `{f}`"))
                    })
                })
                .collect::<Result<_>>()?,
        };
        let key = match o.get("key.format") {
            Some(name) => {
                if key_fields.is_empty() {
                    return Err(o.err("'key.format' needs 'key.fields'".into()));
                }
                let f = format_options(o, name, "key.")?;
                let schema = sub_schema(physical, &key_fields);
                check_raw(o, &f, &schema, "key")?;
                Some((f, key_fields.clone(), schema))
            }
            None if !key_fields.is_empty() => {
                return Err(o.err("'key.fields' needs 'key.format'".into()))
            }
            None => None,
        };
        let value_columns: Vec<usize> = match o
            .get("value.fields-include")
            .map(|v| v.to_ascii_uppercase())
            .as_deref()
            .unwrap_or("ALL")
        {
            "ALL" => (0..physical.len()).collect(),
            "EXCEPT_KEY" => (0..physical.len())
                .filter(|i| !key_fields.contains(i))
                .collect(),
            other => {
                return Err(o.err(format!(
                    "'value.fields-include' = '{other}' (ALL or EXCEPT_KEY)"
                )))
            }
        };
        let value_schema = sub_schema(physical, &value_columns);
        check_raw(o, &value_format, &value_schema, "value")?;
        let guarantee = match o
            .get("sink.delivery-guarantee")
            .map(|m| m.to_ascii_lowercase())
            .as_deref()
            .unwrap_or("at-least-once")
        {
            "none" => DeliveryGuarantee::None,
            "at-least-once" => DeliveryGuarantee::AtLeastOnce,
            "exactly-once" => DeliveryGuarantee::ExactlyOnce,
            other => {
                return Err(o.err(format!(
                    "'sink.delivery-guarantee' = '{other}' (none, at-least-once or exactly-once)"
                )))
            }
        };
        let prefix = o.get("sink.transactional-id-prefix").map(str::to_owned);
        if guarantee == DeliveryGuarantee::ExactlyOnce && prefix.is_none() {
            return Err(o.err(
                "'sink.delivery-guarantee' = 'exactly-once' needs 'sink.transactional-id-prefix'"
                    .into(),
            ));
        }
        let partitioner = match o
            .get("sink.partitioner")
            .map(|m| m.to_ascii_lowercase())
            .as_deref()
            .unwrap_or("default")
        {
            "default" => Partitioner::Default,
            "fixed" => Partitioner::Fixed,
            "round-robin" => Partitioner::RoundRobin,
            other => {
                return Err(o.err(format!(
                    "'sink.partitioner' = '{other}' (default, fixed or round-robin)"
                )))
            }
        };
        if upsert && key.is_none() {
            return Err(o.err(
                "'upsert-kafka' needs 'key.format' and the key's columns ('key.fields', or the PRIMARY KEY)".into(),
            ));
        }
        Ok(Self {
            upsert,
            client,
            topics,
            group_id,
            starting,
            bounded,
            discovery,
            value_format,
            value_columns,
            value_schema,
            key,
            guarantee,
            prefix,
            partitioner,
            physical: physical.clone(),
        })
    }

    /// Whether the source ends.
    pub fn is_bounded(&self) -> bool {
        self.bounded != BoundedMode::Unbounded
    }

    /// The source of table `table`: rows of its physical columns.
    pub fn source(&self, table: &str) -> Result<KafkaSource<Row>> {
        let err = |e: weir_kafka::KafkaError| SqlError::Connector {
            table: table.to_owned(),
            message: e.to_string(),
        };
        let mut b = KafkaSource::<Row>::builder()
            .bootstrap_servers(&self.client.bootstrap_servers)
            .starting_offsets(self.starting.clone())
            .bounded(self.bounded);
        for (k, v) in &self.client.properties {
            b = b.property(k, v);
        }
        b = match &self.topics {
            Topics::Names(n) => b.topics(n),
            Topics::Pattern(p) => b.topic_pattern(p),
        };
        if let Some(g) = &self.group_id {
            b = b.group_id(g);
        }
        if let Some(d) = self.discovery {
            b = b.partition_discovery(d);
        }
        let t = self.clone();
        let name = table.to_owned();
        b.deserializer(move |r: &KafkaRecord<'_>| t.deserialize(&name, r))
            .build()
            .map_err(err)
    }

    fn deserialize(
        &self,
        table: &str,
        r: &KafkaRecord<'_>,
    ) -> std::result::Result<Option<Row>, String> {
        let mut values: Values = (0..self.physical.len()).map(|_| Value::Null).collect();
        let Some(bytes) = r.value else {
            // A tombstone: nothing to append.
            return Ok(None);
        };
        match decode(&self.value_format, bytes, &self.value_schema, "value")? {
            Some(v) => {
                for (i, x) in self.value_columns.iter().zip(v) {
                    values[*i] = x;
                }
            }
            None => return Ok(None),
        }
        if let (Some((f, cols, schema)), Some(k)) = (&self.key, r.key) {
            match decode(f, k, schema, "key")? {
                Some(v) => {
                    for (i, x) in cols.iter().zip(v) {
                        values[*i] = x;
                    }
                }
                None => return Ok(None),
            }
        }
        let _ = table;
        Ok(Some(Row::new(values)))
    }

    /// The sink of table `table`.
    pub fn sink(&self, table: &str) -> Result<KafkaSink<Row>> {
        let Topics::Names(names) = &self.topics else {
            return Err(SqlError::Connector {
                table: table.to_owned(),
                message: "a Kafka sink needs 'topic', not 'topic-pattern'".into(),
            });
        };
        if names.len() != 1 {
            return Err(SqlError::Connector {
                table: table.to_owned(),
                message: "a Kafka sink writes one 'topic'".into(),
            });
        }
        let mut b = KafkaSink::<Row>::builder()
            .bootstrap_servers(&self.client.bootstrap_servers)
            .topic(&names[0])
            .delivery_guarantee(self.guarantee)
            .partitioner(self.partitioner);
        if let Some(p) = &self.prefix {
            b = b.transactional_id_prefix(p);
        }
        for (k, v) in &self.client.properties {
            b = b.property(k, v);
        }
        let t = self.clone();
        b.serializer(move |row: &Row, key: &mut Vec<u8>, value: &mut Vec<u8>| {
            t.serialize(row, key, value)
        })
        .build()
        .map_err(|e| SqlError::Connector {
            table: table.to_owned(),
            message: e.to_string(),
        })
    }

    /// Writes `row`'s key and value; a delete or update-before of an
    /// upsert table is a tombstone (no value), as Flink's.
    fn serialize(
        &self,
        row: &Row,
        key: &mut Vec<u8>,
        value: &mut Vec<u8>,
    ) -> std::result::Result<Serialized, String> {
        let has_key = match &self.key {
            Some((f, cols, schema)) => {
                let k = Row::new(cols.iter().map(|&i| row.values[i].clone()).collect());
                encode(f, &k, schema, key);
                true
            }
            None => false,
        };
        if self.upsert && matches!(row.kind, RowKind::Delete | RowKind::UpdateBefore) {
            return Ok(Serialized {
                key: has_key,
                value: false,
            });
        }
        let v = Row::new(
            self.value_columns
                .iter()
                .map(|&i| row.values[i].clone())
                .collect(),
        );
        encode(&self.value_format, &v, &self.value_schema, value);
        Ok(Serialized::value(has_key))
    }

    /// The value's schema (for messages).
    pub fn value_schema(&self) -> &Schema {
        &self.value_schema
    }
}

fn decode(
    f: &KafkaFormat,
    bytes: &[u8],
    schema: &Schema,
    what: &str,
) -> std::result::Result<Option<Values>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("the {what} is not UTF-8: {e}"))?;
    match f {
        KafkaFormat::Raw => {
            let mut v = Values::new();
            v.push(Value::Str(CompactString::from(text)));
            Ok(Some(v))
        }
        KafkaFormat::Text(fmt) => match fmt.parse(text, schema) {
            Parsed::Row(r) => Ok(Some(r.values)),
            Parsed::Skip => Ok(None),
            Parsed::Error(e) => Err(format!(
                "the {what} does not parse as {} ({e}): `{}` (set '{}' = 'true' to skip such records)",
                match fmt {
                    Format::Csv(_) => "csv",
                    Format::Json { .. } => "json",
                },
                text.chars().take(200).collect::<String>(),
                match fmt {
                    Format::Csv(_) => "csv.ignore-parse-errors",
                    Format::Json { .. } => "json.ignore-parse-errors",
                }
            )),
        },
    }
}

fn encode(f: &KafkaFormat, row: &Row, schema: &Schema, out: &mut Vec<u8>) {
    match f {
        KafkaFormat::Raw => {
            if let Some(Value::Str(s)) = row.values.first() {
                out.extend_from_slice(s.as_bytes());
            }
        }
        KafkaFormat::Text(fmt) => {
            fmt.write(row, schema, out);
            if out.last() == Some(&b'\n') {
                out.pop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::connectors::Connector;
    use crate::types::Field;

    /// An `upsert-kafka` table writes an update-before as a tombstone of
    /// its key, as Flink's does: the planner sends one only where the
    /// key's `+U` may not follow (a filter dropped it). It was dropped,
    /// leaving the key's old row in the topic.
    #[test]
    fn an_upsert_table_writes_deletes_and_update_befores_as_tombstones() {
        let schema = Schema::new(vec![
            Field::new("k", DataType::String),
            Field::new("n", DataType::BigInt),
        ]);
        let options: BTreeMap<String, String> = [
            ("connector", "upsert-kafka"),
            ("topic", "o"),
            ("properties.bootstrap.servers", "localhost:9092"),
            ("key.format", "json"),
            ("key.fields", "k"),
            ("value.format", "json"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let Connector::Kafka(t) = Connector::from_options("o", &options, &schema).unwrap() else {
            panic!("a kafka table")
        };
        for (kind, value) in [
            (RowKind::Insert, true),
            (RowKind::UpdateBefore, false),
            (RowKind::UpdateAfter, true),
            (RowKind::Delete, false),
        ] {
            let mut row = Row::new(
                [Value::Str("a".into()), Value::BigInt(3)]
                    .into_iter()
                    .collect(),
            );
            row.kind = kind;
            let (mut key, mut val) = (Vec::new(), Vec::new());
            let written = t.serialize(&row, &mut key, &mut val).unwrap();
            assert!(written.key, "{kind:?}");
            assert_eq!(written.value, value, "{kind:?}");
            assert_eq!(String::from_utf8_lossy(&key), r#"{"k":"a"}"#);
        }
    }
}
