//! The visitor a function hands each of its states to, for snapshots and
//! restores alike: keyed states ([`KeyedStates`]) and operator states
//! ([`OperatorStates`]).

use weir_net::Wire;
use weir_state::{StateKey, StateValue};

use crate::checkpoint::error::RestoreError;
use crate::checkpoint::keyed_restore::restore_entries;
use crate::checkpoint::restore::RestoreScope;
use crate::core::snapshot::{FrozenKeyedState, FrozenOperatorList, Redistribution};
use crate::state::aggregating::{AggregateFunction, KeyedAggregatingState, KeyedReducingState};
use crate::state::codec::{restore_value_state, ValueSink};
use crate::state::list::KeyedListState;
use crate::state::map::KeyedMapState;
use crate::state::operator::list::{restore_list, ArenaList, OperatorListState, UnionListState};
use crate::state::ttl_cleanup::CleanupPass;
use crate::state::ttl_value::KeyedTtlValueState;
use crate::state::value::KeyedValueState;

enum Mode<'a, F: ?Sized> {
    /// Collect frozen views.
    Snapshot(&'a mut Vec<(String, Box<F>)>),
    /// Fill states from a checkpoint.
    Restore(&'a RestoreScope<'a>),
    /// List state names (to check that every state is visited).
    Names(&'a mut Vec<String>),
    /// Run a TTL cleanup pass over the states that have TTL.
    Cleanup(&'a mut CleanupPass),
}

/// A visitor a function hands each of its states to, for snapshots and
/// restores alike: collecting frozen views `F`, restoring, or listing
/// names. Keyed states ([`KeyedStates`]) and operator states
/// ([`OperatorStates`]) are its two kinds.
pub struct StateVisitor<'a, F: ?Sized> {
    mode: Mode<'a, F>,
    error: Option<RestoreError>,
}

/// The visitor a [`KeyedProcessFunction`](crate::operators::keyed::function::KeyedProcessFunction)
/// hands each of its keyed states to, for snapshots and restores alike.
pub type KeyedStates<'a> = StateVisitor<'a, dyn FrozenKeyedState + 'static>;

impl<'a, F: ?Sized> StateVisitor<'a, F> {
    pub(crate) fn snapshot(out: &'a mut Vec<(String, Box<F>)>) -> Self {
        Self {
            mode: Mode::Snapshot(out),
            error: None,
        }
    }

    pub(crate) fn restore(scope: &'a RestoreScope<'a>) -> Self {
        Self {
            mode: Mode::Restore(scope),
            error: None,
        }
    }

    pub(crate) fn names(out: &'a mut Vec<String>) -> Self {
        Self {
            mode: Mode::Names(out),
            error: None,
        }
    }

    pub(crate) fn cleanup(pass: &'a mut CleanupPass) -> Self {
        Self {
            mode: Mode::Cleanup(pass),
            error: None,
        }
    }

    /// The cleanup pass, when visiting for one (checked before anything
    /// else, so a cleanup visit allocates nothing).
    #[inline]
    fn cleanup_pass(&mut self) -> Option<&mut CleanupPass> {
        match &mut self.mode {
            Mode::Cleanup(pass) => Some(pass),
            _ => None,
        }
    }

    /// The first error a restore met.
    pub(crate) fn into_error(self) -> Option<RestoreError> {
        self.error
    }

    /// Records the name of `state`, or snapshots it with `freeze`, or
    /// restores it with `restore` (after an error, restores nothing more):
    /// what every state kind's visit does.
    pub(crate) fn visit<S>(
        &mut self,
        name: &str,
        state: &mut S,
        freeze: impl FnOnce(&S) -> Box<F>,
        restore: impl FnOnce(&RestoreScope<'_>, &mut S) -> Result<(), RestoreError>,
    ) {
        match &mut self.mode {
            Mode::Snapshot(out) => out.push((name.to_owned(), freeze(state))),
            Mode::Names(out) => out.push(name.to_owned()),
            Mode::Cleanup(_) => {}
            Mode::Restore(scope) => {
                if self.error.is_none() {
                    if let Err(e) = restore(scope, state) {
                        self.error = Some(e);
                    }
                }
            }
        }
    }
}

impl KeyedStates<'_> {
    /// Visits a keyed `ValueState`.
    pub fn value<K, V>(&mut self, state: &mut KeyedValueState<K, V>)
    where
        K: StateKey + Wire,
        V: StateValue + Wire,
    {
        if self.cleanup_pass().is_some() {
            return;
        }
        let name = state.name().to_owned();
        self.visit(
            &name,
            state,
            |s| Box::new(s.inner().freeze()),
            restore_value_state,
        );
    }

    /// Visits a keyed `MapState`.
    pub fn map<K, UK, UV>(&mut self, state: &mut KeyedMapState<K, UK, UV>)
    where
        K: StateKey + Wire,
        UK: StateKey + Wire,
        UV: StateValue + Wire,
    {
        if let Some(pass) = self.cleanup_pass() {
            state.run_cleanup(pass);
            return;
        }
        let name = state.name().to_owned();
        self.visit(
            &name,
            state,
            |s| Box::new(s.freeze()),
            |scope, s| restore_entries(scope, &name, s),
        );
    }

    /// Visits a keyed `ListState`.
    pub fn list<K, T>(&mut self, state: &mut KeyedListState<K, T>)
    where
        K: StateKey + Wire,
        T: StateValue + Wire,
    {
        if let Some(pass) = self.cleanup_pass() {
            state.run_cleanup(pass);
            return;
        }
        let name = state.name().to_owned();
        self.visit(
            &name,
            state,
            |s| Box::new(s.freeze()),
            |scope, s| restore_entries(scope, &name, s),
        );
    }

    /// Visits a keyed `ReducingState`.
    pub fn reducing<K, V, F>(&mut self, state: &mut KeyedReducingState<K, V, F>)
    where
        K: StateKey + Wire,
        V: StateValue + Wire,
        F: Fn(V, V) -> V,
    {
        if let Some(pass) = self.cleanup_pass() {
            state.run_cleanup(pass);
            return;
        }
        let name = state.name().to_owned();
        self.visit(
            &name,
            state,
            |s| Box::new(s.freeze()),
            |scope, s| restore_entries(scope, &name, &mut ValueSink(s.table_mut())),
        );
    }

    /// Visits a keyed `ValueState` with a time-to-live.
    pub fn ttl_value<K, V>(&mut self, state: &mut KeyedTtlValueState<K, V>)
    where
        K: StateKey + Wire,
        V: StateValue + Wire,
    {
        if let Some(pass) = self.cleanup_pass() {
            state.run_cleanup(pass);
            return;
        }
        let name = state.name().to_owned();
        self.visit(
            &name,
            state,
            |s| Box::new(s.freeze()),
            |scope, s| restore_entries(scope, &name, &mut ValueSink(s.table_mut())),
        );
    }

    /// Visits a keyed `AggregatingState`.
    pub fn aggregating<K, A>(&mut self, state: &mut KeyedAggregatingState<K, A>)
    where
        K: StateKey + Wire,
        A: AggregateFunction,
        A::Acc: Wire,
    {
        if let Some(pass) = self.cleanup_pass() {
            state.run_cleanup(pass);
            return;
        }
        let name = state.name().to_owned();
        self.visit(
            &name,
            state,
            |s| Box::new(s.freeze()),
            |scope, s| restore_entries(scope, &name, &mut ValueSink(s.table_mut())),
        );
    }
}

/// The visitor a [`ProcessFunction`](crate::operators::process::ProcessFunction) hands each of
/// its operator states to, for snapshots and restores alike:
///
/// ```text
/// fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
///     states.list(&mut self.buffer);
///     states.union_list(&mut self.seen);
/// }
/// ```
pub type OperatorStates<'a> = StateVisitor<'a, dyn FrozenOperatorList + 'static>;

impl OperatorStates<'_> {
    /// Visits a list state with even-split redistribution.
    pub fn list<T: StateValue + Wire>(&mut self, state: &mut OperatorListState<T>) {
        self.list_of(&mut state.0, Redistribution::EvenSplit);
    }

    /// Visits a list state with union redistribution.
    pub fn union_list<T: StateValue + Wire>(&mut self, state: &mut UnionListState<T>) {
        self.list_of(&mut state.0, Redistribution::Union);
    }

    fn list_of<T: StateValue + Wire>(&mut self, list: &mut ArenaList<T>, mode: Redistribution) {
        let name = list.name.clone();
        self.visit(
            &name,
            list,
            |l| Box::new(l.frozen(mode)),
            |scope, l| restore_list(scope, l, mode),
        );
    }
}
