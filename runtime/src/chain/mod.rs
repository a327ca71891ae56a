//! Operator chains: the control calls and record collection that travel
//! down a chain, the stateless chained operators, the tasks whose heads
//! drive chains, and the error that fails a running task.

pub mod branch;
pub mod control;
pub mod error;
pub mod ops;
pub mod task;

pub use control::{ChainControl, Collector, FlushOutcome};
pub use error::TaskError;
pub use ops::{FilterOp, FlatMapOp, MapOp};
pub use task::{ChainHead, InputStep, Task, TaskPoll};

#[cfg(any(test, feature = "testing"))]
pub mod testing;
