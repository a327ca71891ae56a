//! Sources: what a source is, the built-in ones, pacing, the task that drives a
//! source subtask and injects barriers, and its builder.

pub mod chain;
pub mod function;
pub mod paced;
pub mod sequence;
pub mod split;
pub mod strided;
pub mod task;

pub use function::{Source, SourcePoll, SourceWakeup};
pub use paced::Paced;
pub use sequence::SequenceSource;
pub use split::NumberSequenceSource;
pub use strided::StridedSplits;
pub use task::SourceTask;
