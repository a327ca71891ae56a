//! Runnable weir jobs to start from, one binary each (`src/bin/<name>.rs`),
//! each commented for a newcomer, each checking its own result against a
//! reference computed without weir (exit 0 and a `verified: ...` line, or
//! exit 1 and an `error: ...` line):
//!
//! | binary | what it shows |
//! |---|---|
//! | `word_count` | the file source, `flat_map`, `key_by`, keyed state, a timer at the end of the input, the exactly-once file sink |
//! | `fraud_detection` | a keyed process function with state and event-time timers (Flink's fraud-detection walkthrough), a user type with `#[derive(Wire)]`, a sink of your own, unit tests with the operator test harness |
//! | `sensor_windows` | a source of your own, event time and watermarks, tumbling windows with an aggregate function, allowed lateness and the late-data side output |
//! | `checkpointed_totals` | checkpoints through weir's config keys, the exactly-once file sink, `--restore`, SIGTERM stopping with a savepoint, a source wrapper |
//!
//! Run one with `cargo run -p weir-examples --bin <name> -- --help`.
//! `tests/examples.rs` runs each on small input (the checkpointed one
//! also killed, stopped and restored), so `cargo test --workspace` runs
//! them all. The user guide, `docs/GUIDE.md`, walks through them.

/// The user guide's Rust blocks, compiled and run as doctests of this
/// crate (its excerpts of the examples, marked `rust,ignore`, are checked
/// verbatim by `tests/guide.rs`).
#[cfg(doctest)]
#[doc = include_str!("../../docs/GUIDE.md")]
pub struct Guide;
