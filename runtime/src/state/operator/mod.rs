//! Operator (non-keyed) state: Flink's `OperatorStateStore.getListState`
//! and `getUnionListState`, for functions that are not keyed: the lists,
//! their blocks in checkpoints, and how a restore redistributes them.

pub mod blocks;
pub mod list;
pub mod redistribute;

pub use crate::state::visitor::OperatorStates;
pub use list::{ArenaList, OperatorListState, UnionListState};
pub use redistribute::{assigned_to, even_split_range, redistribute};

#[cfg(test)]
mod tests;
