//! How a windowed stream's trigger and evictor choose its operator, at
//! compile time: with neither set ([`DefaultTrigger`], [`NoEvictor`])
//! `aggregate` / `reduce` run the assigner's own operator (the pane
//! operator for event-time tumbling and sliding windows: the code of a job
//! without triggers is what it was before triggers existed); a trigger
//! the job set ([`WithTrigger`]) or an evictor ([`WithEvictor`]) moves
//! them to the general operator with that trigger and, with an evictor,
//! evicting contents. Every choice is a type: nothing is decided per
//! record.

use std::time::Duration;

use weir_net::Wire;
use weir_state::{StateKey, StateValue};

use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::late_data::LateOutput;
use crate::operators::window::assign::{general_incremental, Windowing};
use crate::operators::window::contents::{
    Accumulated, Buffered, KeyWindowResult, MergeFold, ProcessWindowFunction, WindowContents,
    WindowFunction,
};
use crate::operators::window::evicting::{Evicting, FoldElements};
use crate::operators::window::evictor::Evictor;
use crate::operators::window::general::GeneralWindowOperator;
use crate::operators::window::spec::TimeWindow;
use crate::operators::window::trigger::Trigger;

/// A windowed stream's trigger when the job sets none: the assigner's
/// default ([`Windowing::DefaultTrigger`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultTrigger;

/// A trigger the job set with
/// [`WindowedStream::trigger`](crate::api::window::WindowedStream::trigger).
#[derive(Clone, Debug)]
pub struct WithTrigger<Tr>(pub Tr);

/// A windowed stream without an evictor.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoEvictor;

/// An evictor the job set with
/// [`WindowedStream::evictor`](crate::api::window::WindowedStream::evictor).
#[derive(Clone, Debug)]
pub struct WithEvictor<E>(pub E);

/// The trigger of a windowed stream of assigner `A`: [`DefaultTrigger`] or
/// [`WithTrigger`].
pub trait TriggerSlot<T, A: Windowing<T>>: Clone + Send + Sync + 'static {
    /// The trigger the general operator runs.
    type Trigger: Trigger<T>;

    /// The operator of `aggregate` / `reduce` without an evictor.
    type Incremental<K, W>: KeyedProcessFunction<Key = K, In = T, Out = (K, TimeWindow, W::Out)>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire;

    /// The trigger of a subtask's operator.
    fn trigger(&self, assigner: &A) -> Self::Trigger;

    /// A subtask's `aggregate` / `reduce` operator without an evictor.
    fn incremental<K, W>(
        &self,
        assigner: &A,
        fold: W,
        lateness: Duration,
        late: Option<LateOutput<T>>,
    ) -> Self::Incremental<K, W>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire;
}

impl<T, A> TriggerSlot<T, A> for DefaultTrigger
where
    T: Clone + 'static,
    A: Windowing<T>,
{
    type Trigger = A::DefaultTrigger;

    type Incremental<K, W>
        = A::Incremental<K, W>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire;

    fn trigger(&self, assigner: &A) -> A::DefaultTrigger {
        assigner.default_trigger()
    }

    fn incremental<K, W>(
        &self,
        assigner: &A,
        fold: W,
        lateness: Duration,
        late: Option<LateOutput<T>>,
    ) -> Self::Incremental<K, W>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
    {
        assigner.incremental(fold, lateness, late)
    }
}

impl<T, A, Tr> TriggerSlot<T, A> for WithTrigger<Tr>
where
    T: Clone + 'static,
    A: Windowing<T>,
    Tr: Trigger<T>,
{
    type Trigger = Tr;

    type Incremental<K, W>
        = GeneralWindowOperator<K, T, Tr, Accumulated<W, KeyWindowResult>>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire;

    fn trigger(&self, _: &A) -> Tr {
        self.0.clone()
    }

    fn incremental<K, W>(
        &self,
        assigner: &A,
        fold: W,
        lateness: Duration,
        late: Option<LateOutput<T>>,
    ) -> Self::Incremental<K, W>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
    {
        general_incremental(assigner.spec(), self.0.clone(), fold, lateness, late)
    }
}

/// The evictor of a windowed stream: [`NoEvictor`] or [`WithEvictor`]. It
/// decides what the windows hold.
pub trait EvictorSlot<T>: Clone + Send + Sync + 'static {
    /// The operator of `aggregate` / `reduce` with trigger `Tr`.
    type Incremental<K, W, A, Tr>: KeyedProcessFunction<
        Key = K,
        In = T,
        Out = (K, TimeWindow, W::Out),
    >
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
        A: Windowing<T>,
        Tr: TriggerSlot<T, A>;

    /// The contents of an aggregate or reduce with window function `F`.
    type Aggregated<K, W, F>: WindowContents<K, T, Out = F::Out>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
        F: WindowFunction<K, W::Out>;

    /// The contents of a process window function `P`.
    type Processed<K, P>: WindowContents<K, T, Out = P::Out>
    where
        K: StateKey + Wire + 'static,
        T: StateValue + Wire,
        P: ProcessWindowFunction<K, T>;

    /// A subtask's `aggregate` / `reduce` operator.
    fn incremental<K, W, A, Tr>(
        &self,
        trigger: &Tr,
        assigner: &A,
        fold: W,
        lateness: Duration,
        late: Option<LateOutput<T>>,
    ) -> Self::Incremental<K, W, A, Tr>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
        A: Windowing<T>,
        Tr: TriggerSlot<T, A>;

    /// A subtask's contents of an aggregate or reduce.
    fn aggregated<K, W, F>(&self, fold: W, function: F) -> Self::Aggregated<K, W, F>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
        F: WindowFunction<K, W::Out>;

    /// A subtask's contents of a process window function.
    fn processed<K, P>(&self, function: P) -> Self::Processed<K, P>
    where
        K: StateKey + Wire + 'static,
        T: StateValue + Wire,
        P: ProcessWindowFunction<K, T>;
}

impl<T: Clone + 'static> EvictorSlot<T> for NoEvictor {
    type Incremental<K, W, A, Tr>
        = Tr::Incremental<K, W>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
        A: Windowing<T>,
        Tr: TriggerSlot<T, A>;

    type Aggregated<K, W, F>
        = Accumulated<W, F>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
        F: WindowFunction<K, W::Out>;

    type Processed<K, P>
        = Buffered<K, T, P>
    where
        K: StateKey + Wire + 'static,
        T: StateValue + Wire,
        P: ProcessWindowFunction<K, T>;

    fn incremental<K, W, A, Tr>(
        &self,
        trigger: &Tr,
        assigner: &A,
        fold: W,
        lateness: Duration,
        late: Option<LateOutput<T>>,
    ) -> Self::Incremental<K, W, A, Tr>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
        A: Windowing<T>,
        Tr: TriggerSlot<T, A>,
    {
        trigger.incremental(assigner, fold, lateness, late)
    }

    fn aggregated<K, W, F>(&self, fold: W, function: F) -> Self::Aggregated<K, W, F>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
        F: WindowFunction<K, W::Out>,
    {
        Accumulated::new(fold, function)
    }

    fn processed<K, P>(&self, function: P) -> Self::Processed<K, P>
    where
        K: StateKey + Wire + 'static,
        T: StateValue + Wire,
        P: ProcessWindowFunction<K, T>,
    {
        Buffered::new(function)
    }
}

impl<T, E> EvictorSlot<T> for WithEvictor<E>
where
    T: StateValue + Wire + 'static,
    E: Evictor<T>,
{
    type Incremental<K, W, A, Tr>
        = GeneralWindowOperator<
        K,
        T,
        Tr::Trigger,
        Evicting<K, T, E, FoldElements<W, KeyWindowResult>>,
    >
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
        A: Windowing<T>,
        Tr: TriggerSlot<T, A>;

    type Aggregated<K, W, F>
        = Evicting<K, T, E, FoldElements<W, F>>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
        F: WindowFunction<K, W::Out>;

    type Processed<K, P>
        = Evicting<K, T, E, P>
    where
        K: StateKey + Wire + 'static,
        T: StateValue + Wire,
        P: ProcessWindowFunction<K, T>;

    fn incremental<K, W, A, Tr>(
        &self,
        trigger: &Tr,
        assigner: &A,
        fold: W,
        lateness: Duration,
        late: Option<LateOutput<T>>,
    ) -> Self::Incremental<K, W, A, Tr>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
        A: Windowing<T>,
        Tr: TriggerSlot<T, A>,
    {
        GeneralWindowOperator::new(
            assigner.spec(),
            trigger.trigger(assigner),
            Evicting::new(self.0.clone(), FoldElements::new(fold, KeyWindowResult)),
            lateness,
            late,
        )
    }

    fn aggregated<K, W, F>(&self, fold: W, function: F) -> Self::Aggregated<K, W, F>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
        F: WindowFunction<K, W::Out>,
    {
        Evicting::new(self.0.clone(), FoldElements::new(fold, function))
    }

    fn processed<K, P>(&self, function: P) -> Self::Processed<K, P>
    where
        K: StateKey + Wire + 'static,
        T: StateValue + Wire,
        P: ProcessWindowFunction<K, T>,
    {
        Evicting::new(self.0.clone(), function)
    }
}
