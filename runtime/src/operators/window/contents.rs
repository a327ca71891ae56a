//! What a window holds and the functions that emit it: the contents of
//! the general window operator ([`WindowContents`]: an accumulator,
//! [`Accumulated`], or the window's elements, [`Buffered`], or with an
//! evictor [`Evicting`](super::Evicting)) and the user's window functions
//! ([`WindowFunction`] for a pre-aggregated result, Flink's
//! `aggregate(aggFn, windowFn)`; [`ProcessWindowFunction`] for all the
//! elements, Flink's `process`), which emit through a [`WindowCollector`]
//! and see the firing through a [`WindowContext`].
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
use crate::operators::side_output::SideOutputs;
use crate::operators::window::context::WindowContext;
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
/// `reduce(reduceFn, windowFn)`), with the firing's context.
pub trait WindowFunction<K: StateKey, R>: 'static {
    /// Records out.
    type Out;

    /// The window `ctx.window()` of `key` fired with `result`.
    fn apply(
        &mut self,
        key: &K,
        ctx: &mut WindowContext<'_, K>,
        result: R,
        out: &mut WindowCollector<'_, Self::Out>,
    );

    /// The window is cleaned up (Flink's `ProcessWindowFunction.clear`).
    fn clear(&mut self, key: &K, ctx: &mut WindowContext<'_, K>) {
        let _ = (key, ctx);
    }

    /// Lists the side outputs the function emits to (see
    /// [`KeyedProcessFunction::side_outputs`](crate::operators::keyed::function::KeyedProcessFunction::side_outputs)).
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        let _ = outputs;
    }
}

/// The window function of plain `aggregate` / `reduce`: emits `(key,
/// window, result)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyWindowResult;

impl<K: StateKey + 'static, R: 'static> WindowFunction<K, R> for KeyWindowResult {
    type Out = (K, TimeWindow, R);

    #[inline]
    fn apply(
        &mut self,
        key: &K,
        ctx: &mut WindowContext<'_, K>,
        result: R,
        out: &mut WindowCollector<'_, (K, TimeWindow, R)>,
    ) {
        out.collect((key.clone(), *ctx.window(), result));
    }
}

/// A closure `f(key, window, result, out)` as a [`WindowFunction`].
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
    K: StateKey,
    O: 'static,
    F: FnMut(&K, &TimeWindow, R, &mut WindowCollector<'_, O>) + 'static,
{
    type Out = O;

    fn apply(
        &mut self,
        key: &K,
        ctx: &mut WindowContext<'_, K>,
        result: R,
        out: &mut WindowCollector<'_, O>,
    ) {
        (self.f)(key, ctx.window(), result, out)
    }
}

/// Flink's `ProcessWindowFunction`: gets all the elements of a window when
/// it fires, with a [`WindowContext`] (the window, the time, whether the
/// firing is late, per-window and global state, side outputs).
///
/// ```
/// use weir_runtime::{ProcessWindowFunction, ValueStateDescriptor, WindowCollector, WindowContext};
///
/// /// Each firing of a window with its firing number and whether it is late.
/// #[derive(Clone)]
/// struct Firings {
///     fired: ValueStateDescriptor<u32>,
/// }
///
/// impl ProcessWindowFunction<u64, (u64, i64)> for Firings {
///     type Out = (u64, i64, u32, bool, usize);
///
///     fn process(
///         &mut self,
///         key: &u64,
///         ctx: &mut WindowContext<'_, u64>,
///         elements: &[(u64, i64)],
///         out: &mut WindowCollector<'_, Self::Out>,
///     ) {
///         let n = ctx.window_state().value(&self.fired).unwrap_or(0) + 1;
///         ctx.window_state().update(&self.fired, n);
///         out.collect((*key, ctx.window().end, n, ctx.is_late(), elements.len()));
///     }
/// }
/// ```
pub trait ProcessWindowFunction<K: StateKey, T>: 'static {
    /// Records out.
    type Out;

    /// The window `ctx.window()` of `key` fired holding `elements` (in the
    /// order they were added; a merged session's are its parts' one after
    /// the other).
    fn process(
        &mut self,
        key: &K,
        ctx: &mut WindowContext<'_, K>,
        elements: &[T],
        out: &mut WindowCollector<'_, Self::Out>,
    );

    /// The window is cleaned up: its end plus the allowed lateness passed
    /// (Flink's `clear(Context)`). Its per-window state is dropped after.
    fn clear(&mut self, key: &K, ctx: &mut WindowContext<'_, K>) {
        let _ = (key, ctx);
    }

    /// Lists the side outputs the function emits to (with
    /// [`WindowContext::output`] or the handle's `emit`), as
    /// [`KeyedProcessFunction::side_outputs`](crate::operators::keyed::function::KeyedProcessFunction::side_outputs)
    /// does.
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        let _ = outputs;
    }
}

/// A closure `f(key, window, elements, out)` as a [`ProcessWindowFunction`].
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
    K: StateKey,
    O: 'static,
    F: FnMut(&K, &TimeWindow, &[T], &mut WindowCollector<'_, O>) + 'static,
{
    type Out = O;

    fn process(
        &mut self,
        key: &K,
        ctx: &mut WindowContext<'_, K>,
        elements: &[T],
        out: &mut WindowCollector<'_, O>,
    ) {
        (self.f)(key, ctx.window(), elements, out)
    }
}

/// A [`ProcessWindowFunction`] of a pre-aggregated result, as the window
/// function of `aggregate` / `reduce` (Flink's `aggregate(aggFn,
/// processWindowFunction)`): it gets the one result as its elements.
#[derive(Clone, Debug)]
pub struct ProcessResult<P>(pub P);

impl<K, R, P> WindowFunction<K, R> for ProcessResult<P>
where
    K: StateKey,
    P: ProcessWindowFunction<K, R>,
{
    type Out = P::Out;

    fn apply(
        &mut self,
        key: &K,
        ctx: &mut WindowContext<'_, K>,
        result: R,
        out: &mut WindowCollector<'_, P::Out>,
    ) {
        self.0.process(key, ctx, std::slice::from_ref(&result), out)
    }

    fn clear(&mut self, key: &K, ctx: &mut WindowContext<'_, K>) {
        self.0.clear(key, ctx)
    }

    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        self.0.side_outputs(outputs)
    }
}

/// What a window holds and how it is emitted: an accumulator
/// ([`Accumulated`]), its elements ([`Buffered`]), or its elements with
/// their timestamps for an evictor ([`Evicting`](super::Evicting)).
pub trait WindowContents<K: StateKey, T>: 'static {
    /// Stored with the window in the window set: the accumulator, or the
    /// element count.
    type Meta: StateValue + Wire;
    /// Records out.
    type Out;

    /// Adds `value` (event time `timestamp`, if any) to the window whose
    /// contents are `id` and `meta` (none for an empty window); returns
    /// the new `meta`.
    fn add(
        &mut self,
        ctx: &KeyContext<K>,
        id: i64,
        meta: Option<Self::Meta>,
        value: T,
        timestamp: Option<i64>,
    ) -> Self::Meta;

    /// Merges the contents `from` (id `from_id`) into `into` (id
    /// `into_id`, none if empty); returns the merged `meta` (kept under
    /// `into_id`).
    fn merge(
        &mut self,
        ctx: &KeyContext<K>,
        into_id: i64,
        into: Option<Self::Meta>,
        from_id: i64,
        from: Self::Meta,
    ) -> Self::Meta;

    /// How much there is to move when merging (the largest part of a merge
    /// keeps its contents in place).
    fn weight(meta: &Self::Meta) -> u64;

    /// Emits the window `fire.window()` of the current key, whose contents
    /// are `id` and `meta`; returns whether `meta` changed (an evictor
    /// removed elements; `None` once none is left).
    fn emit<C: Collector<Self::Out>>(
        &mut self,
        fire: &mut WindowContext<'_, K>,
        id: i64,
        meta: &mut Option<Self::Meta>,
        out: &mut C,
    ) -> bool;

    /// Drops the contents (a purge, or the window's cleanup).
    fn clear(&mut self, ctx: &KeyContext<K>, id: i64, meta: &Self::Meta);

    /// The window `fire.window()` is cleaned up: the window function's
    /// `clear` hook.
    fn clear_window(&mut self, fire: &mut WindowContext<'_, K>);

    /// Visits the contents' own keyed states.
    fn visit_state(&mut self, states: &mut KeyedStates<'_>);

    /// Lists the window function's side outputs.
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>);
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
    K: StateKey + 'static,
    W: MergeFold,
    W::Acc: Wire,
    F: WindowFunction<K, W::Out>,
{
    type Meta = W::Acc;
    type Out = F::Out;

    #[inline]
    fn add(
        &mut self,
        _: &KeyContext<K>,
        _: i64,
        meta: Option<W::Acc>,
        value: W::In,
        _: Option<i64>,
    ) -> W::Acc {
        self.fold.fold(meta, value)
    }

    fn merge(
        &mut self,
        _: &KeyContext<K>,
        _: i64,
        into: Option<W::Acc>,
        _: i64,
        from: W::Acc,
    ) -> W::Acc {
        match into {
            Some(into) => self.fold.merge(into, from),
            None => from,
        }
    }

    fn weight(_: &W::Acc) -> u64 {
        0
    }

    fn emit<C: Collector<F::Out>>(
        &mut self,
        fire: &mut WindowContext<'_, K>,
        _: i64,
        meta: &mut Option<W::Acc>,
        out: &mut C,
    ) -> bool {
        let Some(acc) = meta else {
            return false;
        };
        let result = self.fold.result(acc);
        let mut sink = |o| out.collect(o);
        let key = fire.key();
        self.function
            .apply(key, fire, result, &mut WindowCollector::new(&mut sink));
        false
    }

    fn clear(&mut self, _: &KeyContext<K>, _: i64, _: &W::Acc) {}

    fn clear_window(&mut self, fire: &mut WindowContext<'_, K>) {
        let key = fire.key();
        self.function.clear(key, fire);
    }

    fn visit_state(&mut self, _: &mut KeyedStates<'_>) {}

    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        self.function.side_outputs(outputs);
    }
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
    fn add(
        &mut self,
        ctx: &KeyContext<K>,
        id: i64,
        meta: Option<u32>,
        value: T,
        _: Option<i64>,
    ) -> u32 {
        let n = meta.unwrap_or(0);
        self.elements.put(ctx, (id, n), value);
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
        self.scratch.clear();
        for i in 0..n {
            let v = self
                .elements
                .get(fire.key, &(id, i))
                .expect("a window's elements are buffered");
            self.scratch.push(v);
        }
        let mut sink = |o| out.collect(o);
        let key = fire.key();
        self.function.process(
            key,
            fire,
            &self.scratch,
            &mut WindowCollector::new(&mut sink),
        );
        false
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

/// Moves the `from` elements of window contents `from_id` behind the
/// `into` ones of `into_id` (none: from index 0); returns the count.
pub(crate) fn move_elements<K, V>(
    elements: &mut KeyedMapState<K, (i64, u32), V>,
    ctx: &KeyContext<K>,
    into_id: i64,
    into: Option<u32>,
    from_id: i64,
    from: u32,
) -> u32
where
    K: StateKey,
    V: StateValue,
{
    let into = into.unwrap_or(0);
    for i in 0..from {
        let v = elements
            .remove(ctx, &(from_id, i))
            .expect("a window's elements are buffered");
        elements.put(ctx, (into_id, into + i), v);
    }
    into + from
}
