//! Kafka connectors for weir, over librdkafka (the `rdkafka` crate): a
//! replayable, rescalable [`KafkaSource`] and a [`KafkaSink`] with
//! Flink's three delivery guarantees.
//!
//! Layers, each importing only those below it:
//!
//! - [`admin`]: blocking helpers to create topics, produce and read them
//!   (tools, tests, benchmarks).
//! - [`client`]: the options both sides share (bootstrap servers,
//!   `properties.*`) and the errors that name them.
//! - [`record`]: what a source hands its deserializer (a borrowed view of
//!   one Kafka record) and the batches its fetcher thread fills.
//! - [`split`]: a partition as a split of the source (topic, partition,
//!   next offset, stopping offset) and which subtask owns it.
//! - [`fetcher`] and [`source`]: the source's I/O thread and its worker
//!   side.
//! - [`committer`] and [`sink`]: the sink's I/O thread and its worker side.
//!
//! **No client I/O on a worker's core.** librdkafka does its network I/O on
//! threads of its own; every call that waits for a broker (metadata,
//! offsets, flush, transactions) runs on one I/O thread per source or sink
//! subtask. Records reach a source's worker in batches through weir's
//! lock-free SPSC ring, and the I/O thread rings the worker's doorbell; a
//! sink's worker only enqueues (`produce` never waits) or buffers. See
//! `docs/ARCHITECTURE.md`, "Kafka".

pub mod admin;
pub mod client;
pub mod committer;
pub mod fetcher;
pub mod record;
pub mod sink;
pub mod source;
pub mod split;

pub use client::{KafkaClientOptions, KafkaError};
pub use record::KafkaRecord;
pub use sink::{DeliveryGuarantee, KafkaSink, KafkaSinkBuilder, Partitioner, Serialized};
pub use source::{BoundedMode, KafkaSource, KafkaSourceBuilder, StartingOffsets};
