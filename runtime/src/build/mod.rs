//! Building a stage's tasks: the context a builder gets for one subtask,
//! the builder traits, why building fails, and the builders of chained
//! links and exchanges.
//! Each operator's own builder sits beside the operator, above this layer.

pub mod boxed;
pub mod branch;
pub mod builder;
pub mod chains;
pub mod channel_rescale;
pub mod context;
pub mod demand;
pub mod error;
pub mod exchange;
pub mod stage;
pub mod two_input;

pub use builder::{ChainBuilder, TailBuilder};
pub use context::BuildContext;
pub use error::{BuildError, Restoring};
