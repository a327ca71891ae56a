//! Runnable weir jobs to start from, one binary each (`src/bin/<name>.rs`):
//!
//! | binary | what it shows |
//! |---|---|
//! | `word_count` | the file source, `flat_map`, `key_by`, keyed state, a timer at the end of the input, the exactly-once file sink |
//!
//! Run one with `cargo run -p weir-examples --bin <name> -- --help`;
//! `tests/examples.rs` runs each on small input and checks it, so
//! `cargo test --workspace` runs them all. The user guide,
//! `docs/GUIDE.md`, walks through them.
