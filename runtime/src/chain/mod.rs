//! Operator chains: the control calls and record collection that travel
//! down a chain, the stateless chained operators, and the tasks whose
//! heads drive chains.

pub mod control;
pub mod ops;
pub mod task;

pub use control::{ChainControl, Collector, FlushOutcome};
pub use ops::{FilterOp, FlatMapOp, MapOp};
pub use task::{ChainHead, InputStep, Task, TaskPoll};

#[cfg(test)]
pub(crate) mod testing;
