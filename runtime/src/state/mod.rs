//! What operators remember: the key context and how a record's key is
//! selected, Flink's keyed state kinds in
//! the worker's arena, state TTL, timers, operator (non-keyed) list
//! state, the registry of the states a function creates, the visitor that
//! snapshots and restores them, their codecs, and [`StateError`].

pub mod aggregating;
pub mod codec;
pub mod error;
pub mod key_context;
pub mod key_selector;
pub mod list;
pub mod map;
pub mod operator;
pub mod registry;
pub mod timers;
pub mod ttl;
pub mod ttl_cleanup;
pub mod ttl_value;
pub mod value;
pub mod visitor;

pub use aggregating::{AggregateFunction, KeyedAggregatingState, KeyedReducingState};
pub use error::StateError;
pub use key_context::KeyContext;
pub use key_selector::{KeyByRef, KeySelector};
pub use list::KeyedListState;
pub use map::KeyedMapState;
pub use operator::{OperatorListState, OperatorStates, UnionListState};
pub use timers::{KeyedTimerService, TimeDomain, TimerQueues};
pub use ttl::{
    IncrementalCleanup, ManualClock, ProcessingTimeClock, StateTtlConfig, TtlClock, UpdateType,
    DEFAULT_CLEANUP_SIZE,
};
pub use ttl_value::KeyedTtlValueState;
pub use value::KeyedValueState;
pub use visitor::KeyedStates;

#[cfg(test)]
mod tests;
