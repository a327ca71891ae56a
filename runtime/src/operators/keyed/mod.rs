//! The keyed process operator: the user's function, the operator in a
//! chain and its builder.

pub mod chain;
pub mod function;
pub mod op;

pub use function::KeyedProcessFunction;
pub use op::KeyedProcessOp;

#[cfg(test)]
mod tests;
