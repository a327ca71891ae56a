//! Connectors for exactly-once jobs: a replayable file source and a
//! transactional (two-phase-commit) file sink.
//!
//! [`FileSource`] reads the lines of a directory's files and can rewind to
//! any position it reported, so a restored checkpoint replays exactly the
//! records after it. [`TransactionalFileSink`] writes the records between
//! two checkpoint barriers to a hidden file, pre-commits it at the barrier
//! and makes it visible only once the checkpoint is complete; together they
//! give end-to-end exactly-once output. Their errors are a
//! [`ConnectorError`].

pub mod error;
pub mod file_sink;
pub mod file_source;

pub use error::ConnectorError;
pub use file_sink::TransactionalFileSink;
pub use file_source::FileSource;
