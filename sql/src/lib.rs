//! Flink SQL on weir (issue: any job from the standalone binary).
//!
//! A script of `SET`, `CREATE TABLE`, `CREATE VIEW`, `INSERT INTO`,
//! `SELECT` and `EXPLAIN` statements is parsed by sqlparser with a Flink
//! dialect ([`script`]), its queries planned into a tree of relational
//! operators over typed [`value::Row`]s ([`plan`]), and lowered onto
//! weir's own DataStream operators ([`lower`]): filters and projections
//! become chained maps, GROUP BY keys `key_by`, window aggregations weir's
//! window operator, updating aggregations keyed state, joins a two-input
//! keyed stage ([`join`]: regular joins with each side's rows in keyed
//! state, interval joins on weir's interval join); sinks are weir's
//! exactly-once file sink and the print and blackhole sinks. See
//! docs/SQL.md for what is supported and where it differs from Flink.

pub mod agg;
pub mod calc;
pub mod catalog;
pub mod changelog;
pub mod collect;
pub mod connectors;
pub mod datagen;
pub mod dialect;
pub mod distinct;
pub mod error;
pub mod expr;
pub mod format;
pub mod functions;
pub mod join;
pub mod json;
pub mod json_agg;
pub mod kafka;
pub mod lower;
pub mod nexmark;
pub mod over_agg;
pub mod plan;
pub mod prune;
pub mod rank;
pub mod replicate;
pub mod reuse;
pub mod script;
pub mod session;
pub mod similar;
pub mod strings;
pub mod time;
pub mod types;
pub mod url;
pub mod url_codec;
pub mod value;
pub mod watermark;
pub mod zone;

pub use error::SqlError;
pub use session::{Script, SqlJob};
