//! What a window function sees when its window fires (Flink's
//! `ProcessWindowFunction.Context`): the window, the time, whether the
//! firing is late, per-window and per-key state, and side outputs.
//!
//! **State.** A window function keeps value state by name, through
//! [`ValueStateDescriptor`]s (a `Vec` or a map as the value holds more),
//! in two scopes:
//!
//! - [`window_state`](WindowContext::window_state): per `(key, window)`,
//!   e.g. how often the window fired. It lives until the window is cleaned
//!   up (its end plus the allowed lateness; a purge does not clear it), and
//!   is then dropped after the function's `clear` hook ran. Flink leaves
//!   that to the user's `clear`; dropping it is the same for every output
//!   (a window is never seen again after its cleanup) and leaks nothing.
//!   Not available on merging (session) windows, as in Flink.
//! - [`global_state`](WindowContext::global_state): per key, across its
//!   windows.
//!
//! Both live in one keyed map state of the operator
//! ([`WINDOW_FUNCTION_STATE`]), user key `(window start, window end, name
//! hash)` (global state under the window `(i64::MIN, i64::MIN)`, which no
//! window is), value the [`Wire`] bytes of the value: checkpointed,
//! restored and rescaled with the key like the window contents. Reads and
//! writes happen at firings, not per record.

use std::marker::PhantomData;

use weir_net::Wire;
use weir_state::{KeyHash, StateKey};

use crate::operators::side_output::SideOutput;
use crate::operators::window::spec::TimeWindow;
use crate::state::key_context::KeyContext;
use crate::state::map::KeyedMapState;

/// State name of window functions' per-window and global state.
pub const WINDOW_FUNCTION_STATE: &str = "_window_function_state";

/// The window under which global state is kept (no window is empty).
const GLOBAL: (i64, i64) = (i64::MIN, i64::MIN);

/// A window function's value state of type `V`, by name (Flink's
/// `ValueStateDescriptor`): the handle to read and write it through
/// [`WindowContext::window_state`] or [`WindowContext::global_state`].
pub struct ValueStateDescriptor<V> {
    name: String,
    id: u64,
    _value: PhantomData<fn(V) -> V>,
}

impl<V> ValueStateDescriptor<V> {
    /// The state named `name` (unique among the function's states).
    pub fn new(name: impl Into<String>) -> Self {
        let name = name.into();
        let id = name.as_str().key_hash();
        Self {
            name,
            id,
            _value: PhantomData,
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<V> Clone for ValueStateDescriptor<V> {
    fn clone(&self) -> Self {
        Self::new(self.name.clone())
    }
}

impl<V> std::fmt::Debug for ValueStateDescriptor<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ValueStateDescriptor({})", self.name)
    }
}

/// The window functions' states of a window operator (see the
/// [module docs](self)).
pub struct FunctionStates<K>
where
    K: StateKey,
{
    pub(crate) map: KeyedMapState<K, (i64, i64, u64), Vec<u8>>,
}

impl<K: StateKey> FunctionStates<K> {
    /// No state; registers [`WINDOW_FUNCTION_STATE`].
    pub fn new() -> Self {
        Self {
            map: KeyedMapState::new(WINDOW_FUNCTION_STATE),
        }
    }

    /// Drops the current key's per-window state of `window`.
    pub fn clear_window(&mut self, key: &KeyContext<K>, window: &TimeWindow) {
        if self.map.total_len() == 0 {
            return;
        }
        let gone: Vec<_> = self
            .map
            .keys(key)
            .filter(|&(s, e, _)| (s, e) == (window.start, window.end))
            .collect();
        for k in gone {
            self.map.remove(key, &k);
        }
    }

    /// Entries over all keys and scopes (tests).
    pub fn len(&self) -> usize {
        self.map.total_len()
    }

    /// True without entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: StateKey> Default for FunctionStates<K> {
    fn default() -> Self {
        Self::new()
    }
}

/// A window function's state in one scope (a window, or the key): what
/// [`WindowContext::window_state`] and [`WindowContext::global_state`]
/// return (Flink's `KeyedStateStore`).
pub struct StateStore<'a, K>
where
    K: StateKey,
{
    map: &'a mut KeyedMapState<K, (i64, i64, u64), Vec<u8>>,
    key: &'a KeyContext<K>,
    scope: (i64, i64),
}

impl<K: StateKey> StateStore<'_, K> {
    /// The state's value, if set.
    ///
    /// # Panics
    ///
    /// If the stored bytes are not a `V` (two descriptors of one name and
    /// different types).
    pub fn value<V: Wire>(&mut self, state: &ValueStateDescriptor<V>) -> Option<V> {
        let bytes = self
            .map
            .get(self.key, &(self.scope.0, self.scope.1, state.id))?;
        match V::read(&bytes) {
            Ok((v, n)) if n == bytes.len() => Some(v),
            _ => panic!(
                "window function state '{}' holds a value of another type",
                state.name
            ),
        }
    }

    /// Sets the state's value.
    pub fn update<V: Wire>(&mut self, state: &ValueStateDescriptor<V>, value: V) {
        let mut bytes = vec![0; value.encoded_len()];
        value.write(&mut bytes);
        self.map
            .put(self.key, (self.scope.0, self.scope.1, state.id), bytes);
    }

    /// Removes the state's value.
    pub fn clear<V>(&mut self, state: &ValueStateDescriptor<V>) {
        self.map
            .remove(self.key, &(self.scope.0, self.scope.1, state.id));
    }
}

/// What a window function sees when its window fires, and in its `clear`
/// hook (Flink's `ProcessWindowFunction.Context`; see the
/// [module docs](self)).
pub struct WindowContext<'a, K>
where
    K: StateKey,
{
    pub(crate) key: &'a KeyContext<K>,
    pub(crate) window: TimeWindow,
    pub(crate) clock: &'a dyn Fn() -> i64,
    pub(crate) late: bool,
    pub(crate) merging: bool,
    pub(crate) states: &'a mut FunctionStates<K>,
}

impl<'a, K: StateKey> WindowContext<'a, K> {
    /// The current key.
    pub fn key(&self) -> &'a K {
        self.key.key()
    }

    /// The window that fires.
    pub fn window(&self) -> &TimeWindow {
        &self.window
    }

    /// The operator's current watermark: at an on-time firing (the
    /// watermark passing the window's end) the new watermark, so at least
    /// [`TimeWindow::max_timestamp`].
    pub fn current_watermark(&self) -> i64 {
        self.key.current_watermark()
    }

    /// The current processing time (ms since the epoch, by the operator's
    /// clock).
    pub fn current_processing_time(&self) -> i64 {
        (self.clock)()
    }

    /// Whether this is a late firing: the window's end had passed in event
    /// time before what fired it happened, i.e. an element arrived when
    /// the watermark was at or past the window's
    /// [`max_timestamp`](TimeWindow::max_timestamp) (within the allowed
    /// lateness), or a timer after `max_timestamp` fired it. The firing of
    /// the watermark reaching the window's end, and early firings (a
    /// continuous or count trigger before it), are not late. Always false
    /// on processing-time windows, which have no lateness.
    pub fn is_late(&self) -> bool {
        self.late
    }

    /// The state of the current key and window (Flink's `windowState()`).
    ///
    /// # Panics
    ///
    /// On merging (session) windows, as Flink: "Per-window state is not
    /// allowed when using merging windows."
    pub fn window_state(&mut self) -> StateStore<'_, K> {
        assert!(
            !self.merging,
            "Per-window state is not allowed when using merging windows."
        );
        StateStore {
            map: &mut self.states.map,
            key: self.key,
            scope: (self.window.start, self.window.end),
        }
    }

    /// The state of the current key, across its windows (Flink's
    /// `globalState()`).
    pub fn global_state(&mut self) -> StateStore<'_, K> {
        StateStore {
            map: &mut self.states.map,
            key: self.key,
            scope: GLOBAL,
        }
    }

    /// Emits `value` to a side output (Flink's `output(tag, value)`): the
    /// handle must be listed in the function's `side_outputs` hook.
    pub fn output<X>(&self, side: &SideOutput<X>, value: X) {
        side.emit(value);
    }
}
