//! The workloads of `shared/bench/WORKLOADS.md` and weir's benchmark
//! harness.
//!
//! [`jobs`] builds the W1 and W3 jobs with the public job API, [`workload`]
//! holds their sources, keyed operator and sinks exactly as WORKLOADS.md
//! defines them, [`reference`](mod@reference) computes the expected results independently,
//! single-threaded, and [`harness`] runs a workload from a configuration and
//! reports the figures. `weir bench w1|w3` is the command-line front end.
#![deny(missing_docs)]

pub mod disk;
pub mod harness;
pub mod jobs;
pub mod output;
pub mod quickstart;
pub mod reference;
pub mod w5;
pub mod workload;

pub use harness::{run, BenchOptions, BenchReport, Latency, Workload};
