//! Checkpointing: Flink's asynchronous barrier snapshots on weir's
//! thread-per-core workers.
//!
//! - [`signals`]: the atomics through which the coordinator triggers
//!   checkpoints and announces their completion;
//! - [`coordinator`]: triggers, collects acknowledgements, writes manifests;
//! - [`task`]: what a task needs to take part in checkpoints;
//! - [`writer`]: each worker's asynchronous snapshot writer, and
//!   [`operator_list`], the blocks of an operator list state;
//! - [`segment_file`]: segment files written through io_uring;
//! - [`table_block`]: the format of a keyed table written in slot order;
//! - [`storage`]: the checkpoint directory's layout and retention, and
//!   where savepoints go; [`deleter`], removing what retention let go of
//!   a slice at a time;
//! - [`restore`]: finding, verifying and reading a checkpoint, and
//!   [`keyed_restore`], reading a keyed state's blocks back;
//! - [`inspect`]: describing, verifying and finding snapshots without a
//!   job (the `weir checkpoints` command);
//! - [`stats`]: per-checkpoint statistics and their history;
//! - [`error`]: what goes wrong, and whose fault it is.
//!
//! What a task hands over at a barrier is in [`crate::core::snapshot`];
//! barrier injection lives in the source task, alignment in the input gate
//! ([`crate::exchange`]), the chain walk in
//! [`crate::chain::control::ChainControl::snapshot`]. The state kinds, above this
//! layer, bring their own codecs.

pub mod chain_restore;
pub mod coordinator;
pub mod deleter;
pub mod error;
pub mod incremental;
pub mod inspect;
pub mod keyed_restore;
pub mod lineage;
pub mod operator_list;
pub mod restore;
pub mod restore_sink;
pub mod segment_file;
pub mod signals;
pub mod stats;
pub mod storage;
pub mod table_block;
pub mod table_delta;
pub mod task;
pub mod writer;

pub use coordinator::{CheckpointCoordinator, CoordinatorMsg, CoordinatorOptions};
pub use error::{CheckpointError, RestoreError};
pub use restore::{find_latest, RestoredCheckpoint};
pub use signals::CheckpointSignals;
pub use stats::{CheckpointRecord, CheckpointSummary};
pub use storage::CheckpointStorage;
pub use task::TaskCheckpointing;
