//! Window contents with an evictor (Flink's `EvictingWindowOperator`):
//! every element with its timestamp, in keyed map state named
//! [`EVICTING_ELEMENTS_STATE`] under `(state id, index)` (value: the
//! element and its event time, if any). At a firing the elements go
//! through the evictor and the window function, and what the evictor left
//! is written back as the window's buffer (see [`evictor`](super::evictor)).
//!
//! An aggregate or reduce with an evictor folds the remaining elements at
//! each firing ([`FoldElements`]), as Flink's
//! `InternalAggregateProcessWindowFunction` does: a window whose elements
//! were all evicted emits the result of a new accumulator (a reduce emits
//! nothing, having no result of no elements).

use weir_net::Wire;
use weir_state::{StateKey, StateValue};

use crate::chain::control::Collector;
use crate::operators::side_output::SideOutputs;
use crate::operators::window::contents::{
    move_elements, ProcessWindowFunction, WindowCollector, WindowContents, WindowFunction,
};
use crate::operators::window::context::WindowContext;
use crate::operators::window::evictor::{Evictor, EvictorContext, TimestampedValue};
use crate::operators::window::fold::WindowFold;
use crate::state::key_context::KeyContext;
use crate::state::map::KeyedMapState;
use crate::state::visitor::KeyedStates;

/// State name of the elements an evicting window buffers.
pub const EVICTING_ELEMENTS_STATE: &str = "_window_evicting_elements";

/// Evicting contents: every element and its timestamp, handed through
/// `evictor` to `function` when the window fires.
pub struct Evicting<K, T, E, P>
where
    K: StateKey,
    T: StateValue,
{
    elements: KeyedMapState<K, (i64, u32), (T, Option<i64>)>,
    evictor: E,
    function: P,
    stamped: Vec<TimestampedValue<T>>,
    values: Vec<T>,
}

impl<K, T, E, P> Evicting<K, T, E, P>
where
    K: StateKey,
    T: StateValue,
{
    /// Contents buffering elements for `evictor` and `function`.
    pub fn new(evictor: E, function: P) -> Self {
        Self {
            elements: KeyedMapState::new(EVICTING_ELEMENTS_STATE),
            evictor,
            function,
            stamped: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Elements buffered on this subtask, over all keys and windows.
    pub fn buffered(&self) -> usize {
        self.elements.total_len()
    }
}

impl<K, T, E, P> WindowContents<K, T> for Evicting<K, T, E, P>
where
    K: StateKey + Wire + 'static,
    T: StateValue + Wire + 'static,
    E: Evictor<T>,
    P: ProcessWindowFunction<K, T>,
{
    type Meta = u32;
    type Out = P::Out;

    fn add(
        &mut self,
        ctx: &KeyContext<K>,
        id: i64,
        meta: Option<u32>,
        value: T,
        timestamp: Option<i64>,
    ) -> u32 {
        let n = meta.unwrap_or(0);
        self.elements.put(ctx, (id, n), (value, timestamp));
        n + 1
    }

    fn merge(
        &mut self,
        ctx: &KeyContext<K>,
        into_id: i64,
        into: Option<u32>,
        from_id: i64,
        from: u32,
    ) -> u32 {
        move_elements(&mut self.elements, ctx, into_id, into, from_id, from)
    }

    fn weight(meta: &u32) -> u64 {
        u64::from(*meta)
    }

    fn emit<C: Collector<P::Out>>(
        &mut self,
        fire: &mut WindowContext<'_, K>,
        id: i64,
        meta: &mut Option<u32>,
        out: &mut C,
    ) -> bool {
        let Some(n) = *meta else {
            return false;
        };
        let key = fire.key;
        self.stamped.clear();
        for i in 0..n {
            let (value, timestamp) = self
                .elements
                .remove(key, &(id, i))
                .expect("a window's elements are buffered");
            self.stamped.push(TimestampedValue { value, timestamp });
        }
        let window = fire.window;
        let ectx = EvictorContext {
            watermark: key.current_watermark(),
            clock: fire.clock,
        };
        self.evictor.evict_before(&mut self.stamped, &window, &ectx);
        self.values.clear();
        self.values
            .extend(self.stamped.iter().map(|e| e.value.clone()));
        let mut sink = |o| out.collect(o);
        self.function.process(
            key.key(),
            fire,
            &self.values,
            &mut WindowCollector::new(&mut sink),
        );
        self.evictor.evict_after(&mut self.stamped, &window, &ectx);
        // What is left is the window's buffer (Flink rewrites its list).
        let left = self.stamped.len() as u32;
        for (i, e) in self.stamped.drain(..).enumerate() {
            self.elements
                .put(key, (id, i as u32), (e.value, e.timestamp));
        }
        *meta = (left > 0).then_some(left);
        true
    }

    fn clear(&mut self, ctx: &KeyContext<K>, id: i64, meta: &u32) {
        for i in 0..*meta {
            self.elements.remove(ctx, &(id, i));
        }
    }

    fn clear_window(&mut self, fire: &mut WindowContext<'_, K>) {
        let key = fire.key();
        self.function.clear(key, fire);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.map(&mut self.elements);
    }

    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        self.function.side_outputs(outputs);
    }
}

/// A [`ProcessWindowFunction`] folding a window's elements with `fold` and
/// handing the result to `function`: an aggregate or reduce over the
/// elements an evictor left.
#[derive(Clone, Debug)]
pub struct FoldElements<W, F> {
    fold: W,
    function: F,
}

impl<W, F> FoldElements<W, F> {
    /// Folds with `fold`, emits through `function`.
    pub fn new(fold: W, function: F) -> Self {
        Self { fold, function }
    }
}

impl<K, W, F> ProcessWindowFunction<K, W::In> for FoldElements<W, F>
where
    K: StateKey,
    W: WindowFold,
    W::In: Clone,
    F: WindowFunction<K, W::Out>,
{
    type Out = F::Out;

    fn process(
        &mut self,
        key: &K,
        ctx: &mut WindowContext<'_, K>,
        elements: &[W::In],
        out: &mut WindowCollector<'_, F::Out>,
    ) {
        let acc = elements
            .iter()
            .fold(self.fold.empty(), |acc, e| Some(self.fold.fold_ref(acc, e)));
        if let Some(acc) = acc {
            let result = self.fold.result(&acc);
            self.function.apply(key, ctx, result, out);
        }
    }

    fn clear(&mut self, key: &K, ctx: &mut WindowContext<'_, K>) {
        self.function.clear(key, ctx);
    }

    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        self.function.side_outputs(outputs);
    }
}
