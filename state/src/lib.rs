//! weir-state: what weir workers remember.
//!
//! This crate owns keyed state with Apache Flink's semantics:
//!
//! - [`key_group`]: the stable [`KeyHash`], key → key group → subtask
//!   routing ([`KeyGroupRange`], [`KeyGroupAssigner`]);
//! - [`arena`]: the chunked [`SlotArena`] keyed state lives in, whose
//!   chunks are shared copy-on-write with [`FrozenArena`] views;
//! - [`bounds`]: what keys and values of keyed state must be
//!   ([`StateKey`], [`StateValue`]): fixed-size or variable-size;
//! - [`value_state`]: the arena-backed keyed [`ValueState`], and the
//!   [`FrozenValueState`] view a checkpoint serializes;
//! - [`snapshot`]: the on-disk snapshot format: checksummed blocks in
//!   log-structured segment files, and the rkyv checkpoint manifest.
//!
//! Checkpoints are asynchronous. Their synchronous part only freezes each
//! state ([`ValueState::freeze`]): no entry is copied, the view shares the
//! live state's memory. The worker then keeps processing while another task
//! on the same thread serializes the frozen views; a write into memory that
//! a view still shares copies that chunk first, once per freeze
//! ([`ValueState::cow_stats`] counts it). State and views are `!Send`: they
//! stay on their worker's thread.
//!
//! The runtime (`weir-runtime`) writes the frozen views into snapshot
//! segments, a plain value state as table blocks in slot order and every
//! other kind per key group, and restores them by key group at any
//! parallelism, building on the stable hash, the views' iteration, the bulk
//! loads of [`ValueState`] and the [`snapshot`] format.

#![deny(missing_docs)]

pub mod arena;
pub mod bounds;
mod compact_repr;
pub mod key_group;
pub mod prefetch;
mod short_bytes;
pub mod snapshot;
pub mod value_state;

pub use arena::{FreezeIds, FrozenArena, SlotArena};
pub use bounds::{StateKey, StateValue};
pub use key_group::{
    assign_to_key_group, key_group_for_hash, pair_hash, subtask_for_key_group, KeyGroupAssigner,
    KeyGroupRange, KeyHash, MaskedAssigner, DEFAULT_MAX_PARALLELISM, UPPER_BOUND_MAX_PARALLELISM,
};
pub use value_state::{CowStats, FrozenValueState, SweepStep, ValueState};
