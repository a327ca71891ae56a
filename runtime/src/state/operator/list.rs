//! The operator list states, [`OperatorListState`] (Flink's even-split
//! redistribution) and [`UnionListState`] (union redistribution), over one
//! growable list of elements in arena chunks ([`ArenaList`]),
//! and how a list restores itself from every old subtask's blocks.
//!
//! Elements are `StateValue + Wire` values stored in a `SlotArena`'s chunks, so
//! adding one never allocates (the list grows by doubling) and a
//! checkpoint freezes a list in O(chunks): the frozen view shares the
//! chunks copy-on-write while the function keeps writing.

use weir_net::Wire;
use weir_state::arena::CHUNK_LEN;
use weir_state::{SlotArena, StateValue};

use crate::checkpoint::error::RestoreError;
use crate::checkpoint::restore::RestoreScope;
use crate::core::snapshot::Redistribution;
use crate::state::operator::blocks::{decode_block, FrozenList};
use crate::state::operator::redistribute::assigned_to;
use crate::state::registry::{register_state, StateKind};

/// A growable list of fixed-size elements in arena chunks: the storage of
/// [`OperatorListState`] and [`UnionListState`] (both dereference to it).
/// Flink's `ListState` operations: [`get`](Self::get) /
/// [`iter`](Self::iter), [`add`](Self::add), [`add_all`](Self::add_all),
/// [`update`](Self::update), [`clear`](Self::clear).
pub struct ArenaList<T: StateValue> {
    pub(crate) name: String,
    slots: SlotArena<T>,
    len: usize,
}

impl<T: StateValue> ArenaList<T> {
    fn new(name: &str) -> Self {
        register_state(StateKind::Operator, name);
        Self {
            name: name.to_owned(),
            slots: SlotArena::empty(),
            len: 0,
        }
    }

    /// The state's name (unique within its operator; names it in
    /// checkpoints).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the list holds no element.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element `i`, if `i < len()`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<T> {
        (i < self.len).then(|| self.slots.get(i).clone())
    }

    /// The elements, in order.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.slots.iter().take(self.len).cloned()
    }

    /// The elements as a `Vec` (for inspection and tests).
    pub fn to_vec(&self) -> Vec<T> {
        self.iter().collect()
    }

    /// Appends `value`. Grows the arena by doubling when it is full (one
    /// move of the elements), never allocating per element.
    #[inline]
    pub fn add(&mut self, value: T) {
        if self.len == self.slots.len() {
            self.grow();
        }
        *self.slots.get_mut(self.len) = value;
        self.len += 1;
    }

    #[cold]
    fn grow(&mut self) {
        let capacity = (self.slots.len() * 2).max(CHUNK_LEN);
        let mut bigger = SlotArena::new(capacity, T::default());
        for (i, v) in self.slots.iter().take(self.len).enumerate() {
            *bigger.get_mut(i) = v.clone();
        }
        self.slots = bigger;
    }

    /// Appends every element of `values`.
    pub fn add_all(&mut self, values: impl IntoIterator<Item = T>) {
        for v in values {
            self.add(v);
        }
    }

    /// Replaces the elements by `values`.
    pub fn update(&mut self, values: impl IntoIterator<Item = T>) {
        self.clear();
        self.add_all(values);
    }

    /// Removes every element (keeps the arena for the next ones; elements
    /// that own memory are dropped).
    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Replaces element `i` (a split's progress, say).
    ///
    /// # Panics
    ///
    /// If `i >= len()`.
    #[inline]
    pub fn set(&mut self, i: usize, value: T) {
        assert!(i < self.len, "element {i} of a list of {}", self.len);
        *self.slots.get_mut(i) = value;
    }

    /// Keeps the first `len` elements (all if there are fewer).
    pub fn truncate(&mut self, len: usize) {
        let len = self.len.min(len);
        if std::mem::needs_drop::<T>() {
            for i in len..self.len {
                *self.slots.get_mut(i) = T::default();
            }
        }
        self.len = len;
    }

    /// Removes element `i` and returns it; the last element takes its
    /// place (O(1), order not kept).
    ///
    /// # Panics
    ///
    /// If `i >= len()`.
    pub fn swap_remove(&mut self, i: usize) -> T {
        assert!(i < self.len, "element {i} of a list of {}", self.len);
        let last = std::mem::take(self.slots.get_mut(self.len - 1));
        self.len -= 1;
        if i < self.len {
            std::mem::replace(self.slots.get_mut(i), last)
        } else {
            last
        }
    }

    /// Removes element `i` and returns it; the elements after it move up
    /// one place (O(len), order kept).
    ///
    /// # Panics
    ///
    /// If `i >= len()`.
    pub fn remove(&mut self, i: usize) -> T {
        assert!(i < self.len, "element {i} of a list of {}", self.len);
        let out = std::mem::take(self.slots.get_mut(i));
        for j in i..self.len - 1 {
            let next = std::mem::take(self.slots.get_mut(j + 1));
            *self.slots.get_mut(j) = next;
        }
        self.len -= 1;
        out
    }

    pub(crate) fn frozen(&self, mode: Redistribution) -> FrozenList<T> {
        FrozenList {
            slots: self.slots.freeze(),
            len: self.len,
            mode,
        }
    }
}

/// Flink's operator `ListState` with even-split redistribution
/// (`OperatorStateStore.getListState`): see the [module](self) docs.
pub struct OperatorListState<T: StateValue>(pub(crate) ArenaList<T>);

impl<T: StateValue> OperatorListState<T> {
    /// An empty list state named `name` (unique within its operator).
    pub fn new(name: &str) -> Self {
        Self(ArenaList::new(name))
    }
}

/// Flink's operator `ListState` with union redistribution
/// (`OperatorStateStore.getUnionListState`): see the [module](self) docs.
pub struct UnionListState<T: StateValue>(pub(crate) ArenaList<T>);

impl<T: StateValue> UnionListState<T> {
    /// An empty union list state named `name` (unique within its operator).
    pub fn new(name: &str) -> Self {
        Self(ArenaList::new(name))
    }
}

impl<T: StateValue> std::ops::Deref for OperatorListState<T> {
    type Target = ArenaList<T>;
    fn deref(&self) -> &ArenaList<T> {
        &self.0
    }
}

impl<T: StateValue> std::ops::DerefMut for OperatorListState<T> {
    fn deref_mut(&mut self) -> &mut ArenaList<T> {
        &mut self.0
    }
}

impl<T: StateValue> std::ops::Deref for UnionListState<T> {
    type Target = ArenaList<T>;
    fn deref(&self) -> &ArenaList<T> {
        &self.0
    }
}

impl<T: StateValue> std::ops::DerefMut for UnionListState<T> {
    fn deref_mut(&mut self) -> &mut ArenaList<T> {
        &mut self.0
    }
}

/// Restores `list` (redistributed by `mode`) from the blocks of every old
/// subtask in `scope`'s checkpoint: each block's checksum, tag and count
/// are checked; the list gets [`assigned_to`] this subtask. If the
/// operator is in the checkpoint, a state it has no block of (one that was
/// empty, or a new one) restores empty; if the operator is not (a new
/// operator), the list is left as the function's constructor made it: it
/// starts fresh, as in Flink.
pub(crate) fn restore_list<T: StateValue + Wire>(
    scope: &RestoreScope<'_>,
    list: &mut ArenaList<T>,
    mode: Redistribution,
) -> Result<(), RestoreError> {
    let name = list.name.clone();
    let info = scope.subtask_info();
    let Some((old_parallelism, subtasks)) = scope.operator_state_extents(&name) else {
        return Ok(());
    };
    let mut old: Vec<Vec<T>> = vec![Vec::new(); old_parallelism as usize];
    for (index, extents) in subtasks {
        let Some(elements) = old.get_mut(index as usize) else {
            return Err(scope.reject(RestoreError::UnknownSubtask {
                state: name,
                index,
                parallelism: old_parallelism,
            }));
        };
        for e in extents {
            decode_block(scope, &name, e, mode, elements)?;
        }
    }
    list.clear();
    list.add_all(assigned_to(mode, &old, info.parallelism, info.index));
    tracing::debug!(
        target: crate::core::log::CHECKPOINT,
        checkpoint = scope.checkpoint_id(),
        operator = scope.uid(),
        subtask = info.index,
        parallelism = info.parallelism,
        worker = info.worker,
        state = name.as_str(),
        %mode,
        elements = list.len(),
        of = old.iter().map(Vec::len).sum::<usize>(),
        from_parallelism = old_parallelism,
        "restored operator state"
    );
    Ok(())
}
