//! What a type needs to be kept in keyed state: [`StateKey`] for keys,
//! [`StateValue`] for values.
//!
//! Both are `Clone` and `Default`, as Flink's POJOs need a no-argument
//! constructor: a table's empty slots hold `Default` values (which own no
//! memory, an empty `String` included), a removed entry's slot is reset to
//! one, and a checkpoint's copy-on-write clones a chunk. Fixed-size `Copy`
//! types (integers, tuples of them) clone by a plain copy, so they cost
//! what they did before variable-size types (`String`, `Vec<u8>`, user
//! structs) were admitted; those keep their heap memory outside the arena's
//! slots, and a removal frees it.

use crate::key_group::KeyHash;

/// A type keyed state can be keyed by: cloned, compared, hashed stably
/// ([`KeyHash`]), and with an empty value for unused slots.
pub trait StateKey: Clone + Eq + KeyHash + Default {}

impl<T: Clone + Eq + KeyHash + Default> StateKey for T {}

/// A type keyed state can hold: cloned, with an empty value for unused
/// slots.
pub trait StateValue: Clone + Default {}

impl<T: Clone + Default> StateValue for T {}
