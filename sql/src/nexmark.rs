//! The `nexmark` connector: one of the Nexmark benchmark's three tables
//! (`person`, `auction`, `bid`) generated on the fly by weir-nexmark, as
//! RisingWave's connector of that name offers them.
//!
//! Options: `nexmark.table.type` = `person` | `auction` | `bid`
//! (required); `events.num` (events of all three kinds to generate; unset
//! = unbounded); `first-event.rate` (events per second of *event time*,
//! which spaces the timestamps: the suite's default 10,000,000);
//! `tps` (events per second of wall-clock time over all subtasks, 0 =
//! unpaced, the default); `seed`. The table's columns are any of the
//! kind's fields by name (`id`, `name`, ... for persons; `auction`,
//! `bidder`, `price`, `channel`, `url`, `date_time`, `extra` for bids), as
//! BIGINT, STRING or TIMESTAMP(3). Event `n` is the same whatever the
//! parallelism: subtask `s` of `P` generates `n = s, s + P, ...` (weir's
//! strided sequence source, which rescales), emitting its kind's events.

use weir_nexmark::{Event, EventKind, Fields, Generator, GeneratorConfig};
use weir_runtime::{Paced, SequenceSource, SubtaskInfo};

use crate::error::{Result, SqlError};
use crate::types::{DataType, Schema};
use crate::value::{Row, Value, Values};

/// A nexmark table's generator and column mapping.
#[derive(Clone)]
pub struct NexmarkTable {
    /// Which table.
    pub kind: EventKind,
    /// The generator.
    pub generator: Generator,
    /// Events of all kinds (`None`: unbounded).
    pub events: Option<u64>,
    /// Wall-clock events per second over all subtasks (0: unpaced).
    pub tps: u64,
    /// For each physical column, the field it is.
    pub fields: Vec<usize>,
    /// For each physical column, whether the job reads it (those it does
    /// not are NULL, their strings never made: [`crate::prune`]).
    pub read: Vec<bool>,
    /// The generator's fields of the columns read.
    wanted: Fields,
}

impl NexmarkTable {
    /// Checks the options and the columns of `physical`.
    pub fn new(
        table: &str,
        kind: &str,
        events: Option<u64>,
        rate: Option<u64>,
        tps: u64,
        seed: Option<u64>,
        physical: &Schema,
    ) -> Result<Self> {
        let err = |message: String| SqlError::Connector {
            table: table.to_owned(),
            message,
        };
        let kind = EventKind::ALL
            .into_iter()
            .find(|k| k.table().eq_ignore_ascii_case(kind))
            .ok_or_else(|| {
                err(format!(
                    "'nexmark.table.type' = '{kind}' (person, auction or bid)"
                ))
            })?;
        let mut config = GeneratorConfig::default();
        if let Some(r) = rate {
            config.events_per_second = r;
        }
        if let Some(s) = seed {
            config.seed = s;
        }
        config.num_events = events.unwrap_or(0);
        let generator = Generator::new(config)
            .map_err(|e| err(format!("the nexmark generator's options: {e}")))?;
        let names = kind.columns();
        let mut fields = Vec::new();
        for f in &physical.fields {
            let i = names
                .iter()
                .position(|n| n.eq_ignore_ascii_case(&f.name))
                .ok_or_else(|| {
                    err(format!(
                        "column `{}` is not a field of nexmark's {} table ({})",
                        f.name,
                        kind.table(),
                        names.join(", ")
                    ))
                })?;
            let want = field_type(kind, i);
            let fits =
                f.ty == want || (want == DataType::Timestamp && f.ty == DataType::TimestampLtz);
            if !fits {
                return Err(err(format!(
                    "column `{}` must be {want} (nexmark's {}.{})",
                    f.name,
                    kind.table(),
                    names[i]
                )));
            }
            fields.push(i);
        }
        Ok(Self {
            kind,
            generator,
            events,
            tps,
            read: vec![true; fields.len()],
            wanted: Fields::ALL,
            fields,
        })
    }

    /// The same table generating only the physical columns `read` marks
    /// (the others NULL).
    pub fn reading(mut self, read: &[bool]) -> Self {
        assert_eq!(read.len(), self.fields.len(), "a flag per physical column");
        self.read = read.to_vec();
        self.wanted = self
            .fields
            .iter()
            .zip(read)
            .filter(|(_, &r)| r)
            .fold(Fields::NONE, |f, (&i, _)| f.with(i));
        self
    }

    /// Whether event `n` is of this table's kind.
    #[inline(always)]
    pub fn is_mine(&self, n: u64) -> bool {
        self.generator.config().kind(n) == self.kind
    }

    /// The row of event `n`, of this table's kind ([`is_mine`](Self::is_mine)).
    pub fn row(&self, n: u64) -> Row {
        let mut e = self.generator.event_fields(n, self.wanted);
        let mut v = Values::with_capacity(self.fields.len());
        for (&i, &read) in self.fields.iter().zip(&self.read) {
            v.push(if read { field(&mut e, i) } else { Value::Null });
        }
        Row::new(v)
    }

    /// Subtask `info`'s source: the numbers of its events, of every kind
    /// (a table keeps 2% of them (persons) to 92% (bids)). The job keeps
    /// this table's with [`is_mine`](Self::is_mine) in a chained filter and
    /// makes their rows with [`row`](Self::row): a dropped event is a test
    /// on a number in the filter's loop, not a call returning an empty
    /// row (~50 instructions per event and table in q8).
    pub fn source(
        &self,
        info: &SubtaskInfo,
    ) -> Paced<SequenceSource<impl FnMut(u64) -> u64 + use<>>> {
        Paced::share(
            SequenceSource::new(info, self.events.unwrap_or(u64::MAX), |n| n),
            self.tps,
            info,
        )
    }
}

impl std::fmt::Debug for NexmarkTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NexmarkTable")
            .field("kind", &self.kind)
            .field("events", &self.events)
            .field("tps", &self.tps)
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

fn field_type(kind: EventKind, i: usize) -> DataType {
    let name = kind.columns()[i];
    match name {
        "date_time" | "expires" => DataType::Timestamp,
        "id" | "initial_bid" | "reserve" | "seller" | "category" | "auction" | "bidder"
        | "price" => DataType::BigInt,
        _ => DataType::String,
    }
}

/// A text field taken out of its event: a `CompactString` keeps the
/// `String`'s allocation (a long padding is not copied), and the event
/// is dropped right after its row is made. Each column names a field
/// once (the table's column names are distinct), so nothing is taken
/// twice.
fn s(text: &mut String) -> Value {
    Value::Str(std::mem::take(text).into())
}

/// Field `i` of `e`, its text taken out of the event.
fn field(e: &mut Event, i: usize) -> Value {
    match e {
        Event::Person(p) => match i {
            0 => Value::BigInt(p.id),
            1 => s(&mut p.name),
            2 => s(&mut p.email_address),
            3 => s(&mut p.credit_card),
            4 => s(&mut p.city),
            5 => s(&mut p.state),
            6 => Value::Timestamp(p.date_time),
            _ => s(&mut p.extra),
        },
        Event::Auction(a) => match i {
            0 => Value::BigInt(a.id),
            1 => s(&mut a.item_name),
            2 => s(&mut a.description),
            3 => Value::BigInt(a.initial_bid),
            4 => Value::BigInt(a.reserve),
            5 => Value::Timestamp(a.date_time),
            6 => Value::Timestamp(a.expires),
            7 => Value::BigInt(a.seller),
            8 => Value::BigInt(a.category),
            _ => s(&mut a.extra),
        },
        Event::Bid(b) => match i {
            0 => Value::BigInt(b.auction),
            1 => Value::BigInt(b.bidder),
            2 => Value::BigInt(b.price),
            3 => s(&mut b.channel),
            4 => s(&mut b.url),
            5 => Value::Timestamp(b.date_time),
            _ => s(&mut b.extra),
        },
    }
}
