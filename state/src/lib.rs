//! weir-state: what weir workers remember.
//!
//! This crate owns keyed state with Apache Flink's semantics:
//!
//! - [`key_group`]: the stable [`KeyHash`], key → key group → subtask
//!   routing ([`KeyGroupRange`], [`KeyGroupAssigner`]);
//! - [`arena`]: the chunked [`SlotArena`] keyed state lives in, the base
//!   for copy-on-write snapshots;
//! - [`value_state`]: the arena-backed keyed [`ValueState`];
//! - [`snapshot`]: the on-disk snapshot format: checksummed blocks in
//!   log-structured segment files, and the rkyv checkpoint manifest.
//!
//! Writing this state into snapshots and restoring it, per key group, come
//! later and will build on the stable hash, the arena's chunks and
//! [`snapshot`].

#![deny(missing_docs)]

pub mod arena;
pub mod key_group;
pub mod snapshot;
pub mod value_state;

pub use arena::SlotArena;
pub use key_group::{
    assign_to_key_group, key_group_for_hash, subtask_for_key_group, KeyGroupAssigner,
    KeyGroupRange, KeyHash, DEFAULT_MAX_PARALLELISM, UPPER_BOUND_MAX_PARALLELISM,
};
pub use value_state::ValueState;
