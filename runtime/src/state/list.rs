//! Flink's keyed `ListState`: elements in a table keyed by `(key, index)`,
//! lengths in another.

use std::rc::Rc;

use weir_net::{DecodeError, Wire};
use weir_state::{KeyHash, StateKey, StateValue, SweepStep, ValueState};

use crate::checkpoint::keyed_restore::RestoreSink;
use crate::core::wire::append_wire;
use crate::state::codec::FrozenTable;
use crate::state::key_context::KeyContext;
use crate::state::registry::{register_state, StateKind};
use crate::state::ttl::{ttl_for, StateTtlConfig, Ttl, TtlClock};
use crate::state::ttl_cleanup::{run_pass, CleanupPass, TtlTables};

// ---------------------------------------------------------------- list

/// Flink's keyed `ListState<T>`: a list per key, scoped to the current key
/// of a [`KeyContext`]. With TTL each element expires on its own.
pub struct KeyedListState<K, T>
where
    K: StateKey,
    T: StateValue,
{
    elements: ValueState<(K, u32), (T, u64)>,
    lens: ValueState<K, u32>,
    ttl: Ttl,
    /// Set by a restore: the number of elements restored per key, to find
    /// the lists whose expired elements a snapshot left out.
    restored: Option<ValueState<K, u32>>,
    /// Expired elements a cleanup step found (kept to reuse its memory).
    dead: Vec<(K, u32)>,
}

impl<K, T> KeyedListState<K, T>
where
    K: StateKey,
    T: StateValue,
{
    /// An empty list state named `name` (unique within its operator).
    pub fn new(name: &str) -> Self {
        register_state(StateKind::Keyed, name);
        Self {
            elements: ValueState::new(name),
            lens: ValueState::new(name),
            ttl: Ttl::default(),
            restored: None,
            dead: Vec::new(),
        }
    }

    /// The same state with time-to-live `config`, on processing time.
    pub fn with_ttl(self, config: StateTtlConfig) -> Self {
        Self {
            ttl: ttl_for(config, None),
            ..self
        }
    }

    /// The same state with time-to-live `config` measured by `clock`.
    pub fn with_ttl_clock(self, config: StateTtlConfig, clock: Rc<dyn TtlClock>) -> Self {
        Self {
            ttl: ttl_for(config, Some(clock)),
            ..self
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        self.elements.name()
    }

    /// Elements of all keys on this subtask (expired ones not cleaned up
    /// yet included).
    pub fn total_len(&self) -> usize {
        self.elements.len()
    }

    /// The current key's elements, in the order they were added (expired
    /// ones are removed first).
    pub fn get(&mut self, ctx: &KeyContext<K>) -> impl Iterator<Item = T> + '_ {
        self.iter(ctx).cloned()
    }

    /// The current key's elements by reference, in the order they were
    /// added (expired ones are removed first): each is found by the key's
    /// hash and its index, without a copy of the key or of the element.
    pub fn iter(&mut self, ctx: &KeyContext<K>) -> impl Iterator<Item = &T> + '_ {
        let key = ctx.key().clone();
        if self.ttl.enabled() {
            let now = self.ttl.now();
            self.compact(&key, Some(now));
            if self.ttl.renew_on_read() {
                let len = self.lens.get(&key).copied().unwrap_or(0);
                for i in 0..len {
                    self.elements
                        .get_mut(&(key.clone(), i))
                        .expect("element of a list")
                        .1 = now;
                }
            }
            self.cleanup_on_access(now);
        }
        let len = self.lens.get(&key).copied().unwrap_or(0);
        let elements = &self.elements;
        let key_hash = ctx.hash();
        (0..len).map(move |i| {
            let hash = weir_state::pair_hash(key_hash, i.key_hash());
            &elements
                .get_hashed_by(hash, |(k, at)| *at == i && k.key_eq(&key))
                .expect("element of a list")
                .0
        })
    }

    /// Appends `value` to the current key's list.
    pub fn add(&mut self, ctx: &KeyContext<K>, value: T) {
        let stamp = self.ttl.now();
        let key = ctx.key();
        let len = self
            .lens
            .get_or_insert_with_hashed_ref(key, ctx.hash(), || 0);
        let at = *len;
        *len += 1;
        self.elements.put((key.clone(), at), (value, stamp));
        if self.ttl.enabled() {
            self.cleanup_on_access(stamp);
        }
    }

    /// Appends every value of `values` to the current key's list.
    pub fn add_all(&mut self, ctx: &KeyContext<K>, values: impl IntoIterator<Item = T>) {
        for v in values {
            self.add(ctx, v);
        }
    }

    /// Replaces the current key's list with `values`.
    pub fn update(&mut self, ctx: &KeyContext<K>, values: impl IntoIterator<Item = T>) {
        self.clear(ctx);
        self.add_all(ctx, values);
    }

    /// Removes the current key's list.
    pub fn clear(&mut self, ctx: &KeyContext<K>) {
        let key = ctx.key();
        if let Some(len) = self.lens.remove(key) {
            for i in 0..len {
                self.elements.remove(&(key.clone(), i));
            }
        }
        if self.ttl.enabled() {
            self.cleanup_on_access(self.ttl.now());
        }
    }

    /// Bytes of the state's tables (expired elements not cleaned up yet
    /// included).
    pub fn memory_bytes(&self) -> usize {
        self.elements.memory_bytes() + self.lens.memory_bytes()
    }

    /// Runs a TTL cleanup pass (see [`crate::state::ttl_cleanup`]).
    pub(crate) fn run_cleanup(&mut self, pass: &mut CleanupPass) {
        run_pass(self, pass);
    }

    /// Closes up the gaps in `key`'s list: elements that are missing (left
    /// out by a snapshot) or, with `now`, expired are dropped and the rest
    /// keep their order.
    fn compact(&mut self, key: &K, now: Option<u64>) {
        let Some(len) = self.lens.get(key).copied() else {
            return;
        };
        let mut kept = 0;
        for i in 0..len {
            let at = (key.clone(), i);
            let Some(&(_, stamp)) = self.elements.get(&at) else {
                continue;
            };
            if now.is_some_and(|now| self.ttl.expired(stamp, now)) {
                self.elements.remove(&at);
                continue;
            }
            if kept != i {
                let element = self.elements.remove(&at).expect("just read");
                self.elements.put((key.clone(), kept), element);
            }
            kept += 1;
        }
        if kept == 0 {
            self.lens.remove(key);
        } else if kept != len {
            self.lens.put(key.clone(), kept);
        }
    }
}

impl<K, T> TtlTables for KeyedListState<K, T>
where
    K: StateKey,
    T: StateValue,
{
    fn ttl(&self) -> &Ttl {
        &self.ttl
    }

    fn stored_entries(&self) -> usize {
        self.elements.len()
    }

    fn slots(&self) -> usize {
        self.elements.capacity()
    }

    fn purge(&mut self, budget: usize, now: u64) -> SweepStep {
        // Collected first, then each list closed up: the elements after an
        // expired one move down an index.
        let mut dead = std::mem::take(&mut self.dead);
        let ttl = &self.ttl;
        let step =
            self.elements
                .sweep_step(budget, |_, (_, stamp)| ttl.expired(*stamp, now), &mut dead);
        for at in dead.drain(..) {
            // Not yet closed up by an earlier element of the same list
            // (which would have removed it or moved a live one here).
            if self
                .elements
                .get(&at)
                .is_some_and(|(_, stamp)| self.ttl.expired(*stamp, now))
            {
                self.compact(&at.0, Some(now));
            }
        }
        self.dead = dead;
        self.elements.shrink_if_sparse();
        self.lens.shrink_if_sparse();
        step
    }
}

impl<K, T> KeyedListState<K, T>
where
    K: StateKey + Wire,
    T: StateValue + Wire,
{
    /// A frozen view for a checkpoint (see the module doc for the format).
    pub(crate) fn freeze(&self) -> FrozenTable<(K, u32), (T, u64)> {
        FrozenTable::new(
            self.elements.freeze(),
            |(k, _)| k.key_hash(),
            |buf, (k, i), (v, stamp)| {
                append_wire(buf, k);
                append_wire(buf, i);
                append_wire(buf, v);
                append_wire(buf, stamp);
            },
            |(_, stamp)| *stamp,
            self.ttl.snapshot_cutoff(self.elements.len()),
        )
    }
}

impl<K, T> RestoreSink for KeyedListState<K, T>
where
    K: StateKey + Wire,
    T: StateValue + Wire,
{
    type Entry = (K, u32, T, u64);

    fn decode(bytes: &[u8]) -> Result<(Self::Entry, usize), DecodeError> {
        <(K, u32, T, u64)>::read(bytes)
    }

    fn group_hash(entry: &Self::Entry) -> u64 {
        entry.0.key_hash()
    }

    fn reserve(&mut self, entries: usize) {
        self.elements.reserve(entries);
    }

    fn insert(&mut self, (k, i, v, stamp): Self::Entry, hash: u64) {
        let at = (k, i);
        if self.elements.get(&at).is_none() {
            *self
                .restored
                .get_or_insert_with(|| ValueState::new("restored"))
                .get_or_insert_with_hashed_ref(&at.0, hash, || 0) += 1;
        }
        let len = self.lens.get_or_insert_with_hashed_ref(&at.0, hash, || 0);
        *len = (*len).max(i + 1);
        self.elements.put(at, (v, stamp));
    }

    fn finish(&mut self) {
        // Lists with fewer elements than their highest index had elements
        // left out by the snapshot's TTL cleanup: close them up.
        let Some(restored) = self.restored.take() else {
            return;
        };
        let gappy: Vec<K> = restored
            .iter()
            .filter(|&(k, n)| self.lens.get(k) != Some(n))
            .map(|(k, _)| k.clone())
            .collect();
        for k in gappy {
            self.compact(&k, None);
        }
    }

    fn entry_count(&self) -> usize {
        self.elements.len()
    }
}
