//! Joins, as Flink SQL has them: what the planner makes of a join's
//! condition ([`condition`]: the equi-join keys of each side, an interval
//! join's event-time bounds, the rest), and the operators the lowering
//! puts in the job.
//!
//! - A **regular join** (`a [INNER | LEFT | RIGHT | FULL] JOIN b ON a.k =
//!   b.k [AND ..]`, or `FROM a, b WHERE a.k = b.k`) keys both inputs by
//!   their join keys and meets them in a [`regular::RegularJoin`], a
//!   keyed two-input function (Flink's `StreamingJoinOperator`) that keeps
//!   each side's rows in keyed map state and emits a changelog.
//! - An **interval join** (a join whose condition also bounds one side's
//!   event-time attribute by the other's, `a.ts BETWEEN b.ts - INTERVAL
//!   '4' HOUR AND b.ts`) meets both inputs in an
//!   [`interval::IntervalJoin`] (Flink's `RowTimeIntervalJoin`), which
//!   emits the pairs in bounds and, for LEFT, RIGHT and FULL joins, the
//!   rows of an outer side that found no match, padded, once they cannot
//!   find one: append-only, its state freed as the watermark passes.

pub mod condition;
pub mod interval;
pub mod regular;
pub mod temporal;
pub mod window;

pub use condition::{JoinKind, JoinOn, TimeBounds};

#[cfg(test)]
mod tests;
