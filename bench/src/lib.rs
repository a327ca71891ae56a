//! The workloads of `shared/bench/WORKLOADS.md` and weir's benchmark
//! harness.
//!
//! [`jobs`] builds the W1, W2, W3 and W4 jobs with the public job API, [`workload`]
//! holds their sources, keyed operator and sinks exactly as WORKLOADS.md
//! defines them, [`reference`](mod@reference) computes the expected results independently,
//! single-threaded, [`harness`] runs a workload from a configuration and
//! reports the figures, [`w4`] does the same for W4's checkpoint modes and
//! [`w5`] drives W5's crash and recovery; [`w2`] holds W2's window
//! aggregate and sink; [`ttl`](mod@ttl) measures whether state TTL gives
//! memory back; [`report`] runs them all as child processes and writes
//! the report with plots (`weir bench report`). `weir bench
//! w1|w2|w3|w4|w5|ttl|report` is the command-line front end.
#![deny(missing_docs)]

pub mod disk;
pub mod harness;
pub mod jobs;
pub mod output;
pub mod params;
pub mod quickstart;
pub mod reference;
pub mod report;
pub mod ttl;
pub mod w2;
pub mod w4;
pub mod w5;
pub mod workload;

pub use harness::{run, BenchOptions, BenchReport, Latency, Workload};
