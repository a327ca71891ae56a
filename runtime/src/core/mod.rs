//! Shared vocabulary: the small types and helpers every layer speaks, kept
//! at the bottom so that no heavy module is imported for a small type.
//! Imports nothing else of the crate.

pub mod barrier;
pub mod completion;
pub mod derive;
pub mod duration;
pub mod failpoint;
pub mod fault;
pub mod log;
pub mod paths;
pub mod snapshot;
pub mod subtask;
pub mod time;
pub mod timestamp;
pub mod units;
pub mod user_error;
pub mod wakeup;
pub mod wire;

pub use barrier::BarrierMode;
pub use duration::Offset;
pub use fault::Fault;
pub use snapshot::{
    FrozenKeyedState, FrozenOperatorList, OperatorState, Redistribution, SnapshotTiming,
    TaskSnapshot,
};
pub use subtask::SubtaskInfo;
pub use user_error::{fail_task, UserError};
