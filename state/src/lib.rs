//! weir-state: what weir workers remember.
//!
//! This crate owns keyed state with Apache Flink's semantics:
//!
//! - [`key_group`]: the stable [`KeyHash`], key → key group → subtask
//!   routing ([`KeyGroupRange`], [`KeyGroupAssigner`]);
//! - [`arena`]: the chunked [`SlotArena`] keyed state lives in, the base
//!   for copy-on-write snapshots;
//! - [`value_state`]: the arena-backed keyed [`ValueState`].
//!
//! Snapshots and restore of this state, per key group, come later and will
//! build on the stable hash and the arena's chunks.

#![deny(missing_docs)]

pub mod arena;
pub mod key_group;
pub mod value_state;

pub use arena::SlotArena;
pub use key_group::{
    assign_to_key_group, key_group_for_hash, subtask_for_key_group, KeyGroupAssigner,
    KeyGroupRange, KeyHash, DEFAULT_MAX_PARALLELISM, UPPER_BOUND_MAX_PARALLELISM,
};
pub use value_state::ValueState;
