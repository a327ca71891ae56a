//! Broadcast state (Flink's broadcast state pattern): the state, the
//! user's functions, the operators and their builders.
//!
//! The map lives in an arena-backed table ([`weir_state::ValueState`]),
//! fixed-size (`Copy`) keys and values like all state in weir. It is
//! checkpointed per subtask as inline state and restored by each subtask;
//! at another parallelism every new subtask gets a copy of an old
//! subtask's (Flink's behaviour). The non-broadcast side of a non-keyed
//! connection is rebalanced (round-robin) to the operator's subtasks.

pub mod chain;
pub mod function;
pub mod op;
pub mod state;

pub use chain::{BroadcastChain, KeyedBroadcastChain};
pub use function::{BroadcastProcessFunction, KeyedBroadcastProcessFunction};
pub use op::{BroadcastProcessOp, KeyedBroadcastProcessOp};
pub use state::BroadcastState;

#[cfg(test)]
mod tests;
