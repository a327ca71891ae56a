//! Flink's keyed `ValueState`, stored in the worker's own arena
//! ([`weir_state::ValueState`]), one entry per key, no allocation per entry.

use weir_state::{StateKey, StateValue, ValueState};

use crate::state::key_context::KeyContext;
use crate::state::registry::{register_state, StateKind};

/// Flink's keyed `ValueState<V>`: one value per key, scoped to the current
/// key of a [`KeyContext`].
pub struct KeyedValueState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    inner: ValueState<K, V>,
}

impl<K: StateKey, V: StateValue> KeyedValueState<K, V> {
    /// An empty state named `name` (the name identifies it in snapshots;
    /// unique within its operator).
    pub fn new(name: &str) -> Self {
        register_state(StateKind::Keyed, name);
        Self {
            inner: ValueState::new(name),
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The table behind it.
    pub fn inner(&self) -> &ValueState<K, V> {
        &self.inner
    }

    /// The table behind it, for restores.
    pub fn inner_mut(&mut self) -> &mut ValueState<K, V> {
        &mut self.inner
    }

    /// The current key's value, if any (a copy, as Flink's `value()`
    /// returns the stored object; [`value_ref`](Self::value_ref) borrows).
    #[inline]
    pub fn value(&self, ctx: &KeyContext<K>) -> Option<V> {
        self.inner.get_hashed(&ctx.key, ctx.hash).cloned()
    }

    /// The current key's value, borrowed (no clone of a `String`).
    #[inline]
    pub fn value_ref(&self, ctx: &KeyContext<K>) -> Option<&V> {
        self.inner.get_hashed(&ctx.key, ctx.hash)
    }

    /// Sets the current key's value.
    #[inline]
    pub fn update(&mut self, ctx: &KeyContext<K>, value: V) {
        self.inner.put_hashed_ref(&ctx.key, ctx.hash, value);
    }

    /// Removes the current key's value.
    #[inline]
    pub fn clear(&mut self, ctx: &KeyContext<K>) {
        self.inner.remove_hashed(&ctx.key, ctx.hash);
    }

    /// The current key's value for in-place update, created with `init` if
    /// absent (one lookup: the hot path of a keyed aggregate).
    #[inline]
    pub fn value_mut_or_insert_with(
        &mut self,
        ctx: &KeyContext<K>,
        init: impl FnOnce() -> V,
    ) -> &mut V {
        self.inner
            .get_or_insert_with_hashed_ref(&ctx.key, ctx.hash, init)
    }

    /// Starts loading the table position of the key whose hash is `hash`
    /// (a hint, no effect on the state): for
    /// [`KeyedProcessFunction::prefetch`](crate::KeyedProcessFunction::prefetch).
    #[inline(always)]
    pub fn prefetch(&self, hash: u64) {
        self.inner.prefetch_hashed(hash);
    }

    /// Whether the table is large enough for prefetching to pay (see
    /// [`ValueState::prefetch_pays`]): for
    /// [`KeyedProcessFunction::prefetch_pays`](crate::KeyedProcessFunction::prefetch_pays).
    #[inline]
    pub fn prefetch_pays(&self) -> bool {
        self.inner.prefetch_pays()
    }

    /// Keys with a value on this subtask.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// True if no key has a value.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// All entries of this subtask (for inspection and tests).
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.inner.iter()
    }
}
