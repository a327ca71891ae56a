//! The keyed process operator: the user's function, the operator in a
//! chain and its builder, and the core every keyed operator shares.

pub mod base;
pub mod chain;
pub mod function;
pub mod op;
pub mod with_side_output;

pub use base::{KeyedCore, INPUT_ENDED_STATE};
pub use function::KeyedProcessFunction;
pub use op::KeyedProcessOp;

#[cfg(test)]
mod tests;
