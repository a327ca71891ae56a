//! What a window holds and the functions that emit it: the contents of
//! the general window operator ([`WindowContents`]: an accumulator,
//! [`Accumulated`], or the window's elements, [`Buffered`]) and the user's
//! window functions ([`WindowFunction`] for a pre-aggregated result,
//! Flink's `aggregate(aggFn, windowFn)`; [`ProcessWindowFunction`] for all
//! the elements, Flink's `process`), which emit through a
//! [`WindowCollector`].
//!
//! Buffered elements live in a [`KeyedMapState`] named
//! [`WINDOW_ELEMENTS_STATE`] under `(state id, index)`, `0..count` per
//! window in the order they were added: adding is one insert, firing one
//! lookup per element, merging a session moves the smaller parts' elements
//! behind the largest's.

use std::marker::PhantomData;

use weir_net::Wire;
use weir_state::{StateKey, StateValue};

use crate::chain::control::Collector;
use crate::operators::window::fold::{AggregateFold, ReduceFold, WindowFold};
use crate::operators::window::spec::TimeWindow;
use crate::state::aggregating::AggregateFunction;
use crate::state::key_context::KeyContext;
use crate::state::map::KeyedMapState;
use crate::state::visitor::KeyedStates;

/// State name of the elements buffered for full-window functions.
pub const WINDOW_ELEMENTS_STATE: &str = "_window_elements";

/// A [`WindowFold`] whose accumulators merge (what session windows need).
pub trait MergeFold: WindowFold + Clone + Send + Sync {
    /// The accumulator of the records of `a` and of `b`.
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
}

impl<A: AggregateFunction + Clone + Send + Sync> MergeFold for AggregateFold<A> {
    fn merge(&self, a: A::Acc, b: A::Acc) -> A::Acc {
        self.0.merge(a, b)
    }
}

impl<T, F> MergeFold for ReduceFold<T, F>
where
    T: StateValue + 'static,
    F: Fn(T, T) -> T + Clone + Send + Sync + 'static,
{
    fn merge(&self, a: T, b: T) -> T {
        self.fold(Some(a), b)
    }
}

/// Where a window function emits: Flink's `Collector` for window
/// functions.
pub struct WindowCollector<'a, O> {
    out: &'a mut dyn FnMut(O),
}

impl<'a, O> WindowCollector<'a, O> {
    /// A collector handing what it collects to `out`.
    pub fn new(out: &'a mut dyn FnMut(O)) -> Self {
        Self { out }
    }

    /// Emits `value` downstream.
    #[inline]
    pub fn collect(&mut self, value: O) {
        (self.out)(value)
    }
}

/// What turns a window's pre-aggregated result into output records (the
/// window function of Flink's `aggregate(aggFn, windowFn)` and
/// `reduce(reduceFn, windowFn)`).
pub trait WindowFunction<K, R>: 'static {
    /// Records out.
    type Out;

    /// Window `window` of `key` fired with `result`.
    fn apply(
        &mut self,
        key: &K,
        window: &TimeWindow,
        result: R,
        out: &mut WindowCollector<'_, Self::Out>,
    );
}

/// The window function of plain `aggregate` / `reduce`: emits `(key,
/// window_start, result)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyStartResult;

impl<K: Clone + 'static, R: 'static> WindowFunction<K, R> for KeyStartResult {
    type Out = (K, i64, R);

    #[inline]
    fn apply(
        &mut self,
        key: &K,
        window: &TimeWindow,
        result: R,
        out: &mut WindowCollector<'_, (K, i64, R)>,
    ) {
        out.collect((key.clone(), window.start, result));
    }
}

/// A closure as a [`WindowFunction`].
pub struct FnWindowFunction<F, O> {
    f: F,
    _out: PhantomData<fn() -> O>,
}

impl<F: Clone, O> Clone for FnWindowFunction<F, O> {
    fn clone(&self) -> Self {
        Self::new(self.f.clone())
    }
}

impl<F, O> FnWindowFunction<F, O> {
    /// The window function calling `f(key, window, result, out)`.
    pub fn new(f: F) -> Self {
        Self {
            f,
            _out: PhantomData,
        }
    }
}

impl<K, R, O, F> WindowFunction<K, R> for FnWindowFunction<F, O>
where
    O: 'static,
    F: FnMut(&K, &TimeWindow, R, &mut WindowCollector<'_, O>) + 'static,
{
    type Out = O;

    fn apply(&mut self, key: &K, window: &TimeWindow, result: R, out: &mut WindowCollector<'_, O>) {
        (self.f)(key, window, result, out)
    }
}

/// Flink's `ProcessWindowFunction`: gets all the elements of a window when
/// it fires.
pub trait ProcessWindowFunction<K, T>: 'static {
    /// Records out.
    type Out;

    /// Window `window` of `key` fired holding `elements` (in the order
    /// they were added; a merged session's are its parts' one after the
    /// other).
    fn process(
        &mut self,
        key: &K,
        window: &TimeWindow,
        elements: &[T],
        out: &mut WindowCollector<'_, Self::Out>,
    );
}

/// A closure as a [`ProcessWindowFunction`].
pub struct FnProcessWindowFunction<F, O> {
    f: F,
    _out: PhantomData<fn() -> O>,
}

impl<F: Clone, O> Clone for FnProcessWindowFunction<F, O> {
    fn clone(&self) -> Self {
        Self::new(self.f.clone())
    }
}

impl<F, O> FnProcessWindowFunction<F, O> {
    /// The process function calling `f(key, window, elements, out)`.
    pub fn new(f: F) -> Self {
        Self {
            f,
            _out: PhantomData,
        }
    }
}

impl<K, T, O, F> ProcessWindowFunction<K, T> for FnProcessWindowFunction<F, O>
where
    O: 'static,
    F: FnMut(&K, &TimeWindow, &[T], &mut WindowCollector<'_, O>) + 'static,
{
    type Out = O;

    fn process(
        &mut self,
        key: &K,
        window: &TimeWindow,
        elements: &[T],
        out: &mut WindowCollector<'_, O>,
    ) {
        (self.f)(key, window, elements, out)
    }
}

/// What a window holds and how it is emitted: an accumulator
/// ([`Accumulated`]) or its elements ([`Buffered`]).
pub trait WindowContents<K, T>: 'static {
    /// Stored with the window in the window set: the accumulator, or the
    /// element count.
    type Meta: StateValue + Wire;
    /// Records out.
    type Out;

    /// Adds `value` to the window whose contents are `id` and `meta`
    /// (none for a new window); returns the new `meta`.
    fn add(
        &mut self,
        ctx: &KeyContext<K>,
        id: i64,
        meta: Option<Self::Meta>,
        value: T,
    ) -> Self::Meta;

    /// Merges the contents `from` (id `from_id`) into `into` (id
    /// `into_id`); returns the merged `meta` (kept under `into_id`).
    fn merge(
        &mut self,
        ctx: &KeyContext<K>,
        into_id: i64,
        into: Self::Meta,
        from_id: i64,
        from: Self::Meta,
    ) -> Self::Meta;

    /// How much there is to move when merging (the largest part of a merge
    /// keeps its contents in place).
    fn weight(meta: &Self::Meta) -> u64;

    /// Emits window `window` of the current key.
    fn emit<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        window: &TimeWindow,
        id: i64,
        meta: &Self::Meta,
        out: &mut C,
    );

    /// Drops the contents.
    fn clear(&mut self, ctx: &KeyContext<K>, id: i64, meta: &Self::Meta);

    /// Visits the contents' own keyed states.
    fn visit_state(&mut self, states: &mut KeyedStates<'_>);
}

/// Incremental aggregation: one accumulator per window, folded by `fold`,
/// its result handed to `function` when the window fires.
pub struct Accumulated<W, F> {
    fold: W,
    function: F,
}

impl<W, F> Accumulated<W, F> {
    /// Contents folding with `fold`, emitted through `function`.
    pub fn new(fold: W, function: F) -> Self {
        Self { fold, function }
    }
}

impl<K, W, F> WindowContents<K, W::In> for Accumulated<W, F>
where
    K: 'static,
    W: MergeFold,
    W::Acc: Wire,
    F: WindowFunction<K, W::Out>,
{
    type Meta = W::Acc;
    type Out = F::Out;

    #[inline]
    fn add(&mut self, _: &KeyContext<K>, _: i64, meta: Option<W::Acc>, value: W::In) -> W::Acc {
        self.fold.fold(meta, value)
    }

    fn merge(&mut self, _: &KeyContext<K>, _: i64, into: W::Acc, _: i64, from: W::Acc) -> W::Acc {
        self.fold.merge(into, from)
    }

    fn weight(_: &W::Acc) -> u64 {
        0
    }

    fn emit<C: Collector<F::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        window: &TimeWindow,
        _: i64,
        meta: &W::Acc,
        out: &mut C,
    ) {
        let result = self.fold.result(meta);
        let mut sink = |o| out.collect(o);
        self.function.apply(
            ctx.key(),
            window,
            result,
            &mut WindowCollector::new(&mut sink),
        );
    }

    fn clear(&mut self, _: &KeyContext<K>, _: i64, _: &W::Acc) {}

    fn visit_state(&mut self, _: &mut KeyedStates<'_>) {}
}

/// Full-window contents: every element, kept in keyed map state under
/// `(state id, index)`, handed to `function` when the window fires.
pub struct Buffered<K, T, P>
where
    K: StateKey,
    T: StateValue,
{
    elements: KeyedMapState<K, (i64, u32), T>,
    function: P,
    scratch: Vec<T>,
}

impl<K, T, P> Buffered<K, T, P>
where
    K: StateKey,
    T: StateValue,
{
    /// Contents buffering elements for `function`.
    pub fn new(function: P) -> Self {
        Self {
            elements: KeyedMapState::new(WINDOW_ELEMENTS_STATE),
            function,
            scratch: Vec::new(),
        }
    }

    /// Elements buffered on this subtask, over all keys and windows.
    pub fn buffered(&self) -> usize {
        self.elements.total_len()
    }
}

impl<K, T, P> WindowContents<K, T> for Buffered<K, T, P>
where
    K: StateKey + Wire + 'static,
    T: StateValue + Wire + 'static,
    P: ProcessWindowFunction<K, T>,
{
    type Meta = u32;
    type Out = P::Out;

    #[inline]
    fn add(&mut self, ctx: &KeyContext<K>, id: i64, meta: Option<u32>, value: T) -> u32 {
        let n = meta.unwrap_or(0);
        self.elements.put(ctx, (id, n), value);
        n + 1
    }

    fn merge(
        &mut self,
        ctx: &KeyContext<K>,
        into_id: i64,
        into: u32,
        from_id: i64,
        from: u32,
    ) -> u32 {
        for i in 0..from {
            let v = self
                .elements
                .remove(ctx, &(from_id, i))
                .expect("a window's elements are buffered");
            self.elements.put(ctx, (into_id, into + i), v);
        }
        into + from
    }

    fn weight(meta: &u32) -> u64 {
        u64::from(*meta)
    }

    fn emit<C: Collector<P::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        window: &TimeWindow,
        id: i64,
        meta: &u32,
        out: &mut C,
    ) {
        self.scratch.clear();
        for i in 0..*meta {
            let v = self
                .elements
                .get(ctx, &(id, i))
                .expect("a window's elements are buffered");
            self.scratch.push(v);
        }
        let mut sink = |o| out.collect(o);
        self.function.process(
            ctx.key(),
            window,
            &self.scratch,
            &mut WindowCollector::new(&mut sink),
        );
    }

    fn clear(&mut self, ctx: &KeyContext<K>, id: i64, meta: &u32) {
        for i in 0..*meta {
            self.elements.remove(ctx, &(id, i));
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.map(&mut self.elements);
    }
}
