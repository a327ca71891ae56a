//! weir-nexmark: the event stream of the Nexmark benchmark — persons,
//! auctions and bids of an online auction house — in the proportions and
//! value distributions of the Nexmark generator that Flink's `nexmark`
//! suite, Apache Beam, Arroyo and RisingWave share.
//!
//! - [`config`]: [`GeneratorConfig`], the suite's knobs and defaults, and
//!   the two things they fix per event number: its kind and its time;
//! - [`model`]: [`Event`] and its [`Person`], [`Auction`] and [`Bid`];
//! - [`generator`]: [`Generator`], event number in, event out;
//! - [`csv`]: events as CSV rows;
//! - [`tables`]: the three CSV tables of a directory ([`CsvTables`]).
//!
//! The crate depends on nothing of weir: a source, a benchmark or another
//! engine's loader can use it alike.
//!
//! # The stream
//!
//! Event `n` (from 0) is, per round of 50 events, a person for `n % 50 ==
//! 0`, an auction for 1 to 3 and a bid for 4 to 49 (proportions 1/3/46);
//! it happens at `base_time + n / events_per_second` (rounded down to the
//! millisecond). Persons and auctions are numbered consecutively from 1000
//! in stream order. A bid is for the hot auction (the first of the latest
//! 100) with probability 1/2, else for one of the latest 100 auctions; it
//! is made by the hot bidder with probability 3/4, else by one of the
//! latest 1,000 persons; an auction's seller is likewise the hot seller
//! with probability 3/4. As in the suite, a non-hot reference may run up
//! to 10 ids ahead of the latest person or auction
//! ([`GeneratorConfig::person_id_lead`]). Prices are log-uniform from $1
//! to $1,000,000, auctions last about as long as 100 auctions take to
//! open, and every event is padded with letters (`extra`) to its kind's
//! average size (200, 500 and 100 bytes).
//!
//! ```
//! use weir_nexmark::{Event, Generator, GeneratorConfig};
//!
//! let generator = Generator::new(GeneratorConfig::default()).unwrap();
//! let Event::Person(first) = generator.event(0) else { unreachable!() };
//! assert_eq!(first.id, 1000);
//!
//! // Subtask 1 of 4 makes every fourth event; after a restore it carries
//! // on from the next number it saved, with the same events.
//! let share: Vec<Event> = generator.events((1..1000).step_by(4)).collect();
//! let resumed: Vec<Event> = generator.events((401..1000).step_by(4)).collect();
//! assert_eq!(share[100..], resumed[..]);
//! assert_eq!(share[3], generator.event(13));
//! ```
//!
//! Event `n` is a pure function of the config and `n` (its random values
//! come from a source seeded with [`GeneratorConfig::seed`] and `n`), so
//! subtasks may split the numbers any way, and a restored source that
//! saved its next number makes exactly the events it would have made.
//!
//! # The CSV tables
//!
//! `weir nexmark generate --events N --out DIR [--rate R] [--seed S]
//! [--force]` writes events `0..N` as three files, one folder per table:
//!
//! | file | columns, in order |
//! |---|---|
//! | `DIR/person/part-0.csv` | `id, name, email_address, credit_card, city, state, date_time, extra` |
//! | `DIR/auction/part-0.csv` | `id, item_name, description, initial_bid, reserve, date_time, expires, seller, category, extra` |
//! | `DIR/bid/part-0.csv` | `auction, bidder, price, channel, url, date_time, extra` |
//!
//! No header. Ids, prices and categories are decimal integers (SQL
//! `BIGINT`); `date_time` and `expires` are UTC `yyyy-MM-dd
//! HH:mm:ss.SSS` (`TIMESTAMP(3)`); the rest are strings (`VARCHAR`),
//! quoted only if they hold a comma, double quote or line break (RFC
//! 4180). Flink SQL reads a table with, e.g.:
//!
//! ```sql
//! CREATE TABLE bid (
//!     auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR,
//!     url VARCHAR, date_time TIMESTAMP(3), extra VARCHAR
//! ) WITH ('connector' = 'filesystem', 'path' = 'DIR/bid', 'format' = 'csv');
//! ```
//!
//! Without `--force` the command refuses a `DIR` that already holds any
//! of the three files (exit 2, naming it) and creates nothing; with
//! `--force` it overwrites them. `--rate` sets
//! [`GeneratorConfig::events_per_second`] (default 10,000,000: 10,000
//! events per millisecond of event time) and `--seed` the seed.
//!
//! # Where this differs from the suite
//!
//! - One timeline: event `n` has time `base_time + n × delay` however many
//!   subtasks share the work. The suite gives each of its `p` generators
//!   its own timeline of `delay × p` spacing, so its merged stream is only
//!   roughly ordered by time; the total rate is the same.
//! - Deterministic: the suite's Flink generator draws from an unseeded
//!   random source, so no two runs agree; here the stream depends on the
//!   config only, and `base_time` is fixed by default. The values follow
//!   the suite's distributions, not its exact random draws.
//! - Only the square rate shape at one rate (no `next-event.rate`, rate
//!   periods or sine shape), no out-of-order groups (the suite's default
//!   group size of 1), and no extended bid mode.
//! - The hot bidder is the second person of the latest batch of 100 but,
//!   when that person does not exist yet, no further ahead than
//!   `person_id_lead` allows (with the default lead of 10 this never
//!   binds), so a lead of 0 means every reference names an existing
//!   person or auction. The suite's Flink bid generator also adds the
//!   first person id to the bidder twice (bidders from 2000); here bidders
//!   are person ids from 1000, as in Beam and RisingWave.

#![deny(missing_docs)]

pub mod config;
pub mod csv;
pub mod generator;
pub mod model;
mod rng;
pub mod tables;

pub use config::{
    ConfigError, GeneratorConfig, DEFAULT_BASE_TIME, FIRST_AUCTION_ID, FIRST_CATEGORY_ID,
    FIRST_PERSON_ID, HOT_BATCH, NUM_CATEGORIES,
};
pub use generator::{Events, Generator};
pub use model::{Auction, Bid, Event, EventKind, Fields, Person};
pub use tables::{CsvTables, TableCounts, WriteError};
