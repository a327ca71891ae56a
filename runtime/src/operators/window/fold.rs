//! How a window folds its records incrementally: an `AggregateFunction` or a
//! reduce function.

use std::marker::PhantomData;

use weir_state::StateValue;

use crate::state::aggregating::AggregateFunction;

/// How a window's accumulator takes a record and yields its result: the
/// common part of `aggregate` and `reduce`.
pub trait WindowFold: 'static {
    /// Records in.
    type In;
    /// The accumulator stored per `(key, window)`.
    type Acc: StateValue;
    /// The window's result.
    type Out;

    /// `acc` (none for the window's first record) with `value` folded in.
    fn fold(&self, acc: Option<Self::Acc>, value: Self::In) -> Self::Acc;

    /// [`fold`](Self::fold) of a borrowed record, for a record that
    /// belongs to several windows (sliding, cumulating): the default clones
    /// it; an aggregate that only reads its records folds it without the
    /// clone ([`AggregateFunction::add_ref`]).
    #[inline]
    fn fold_ref(&self, acc: Option<Self::Acc>, value: &Self::In) -> Self::Acc
    where
        Self::In: Clone,
    {
        self.fold(acc, value.clone())
    }

    /// The result of a window whose accumulator is `acc`.
    fn result(&self, acc: &Self::Acc) -> Self::Out;

    /// The accumulator of no records, if there is one (an aggregate's new
    /// accumulator; a reduce has none): what a window whose elements were
    /// all evicted folds to.
    fn empty(&self) -> Option<Self::Acc> {
        None
    }

    /// Whether [`merge_slices`](Self::merge_slices) merges two
    /// accumulators into exactly the one of all their records, whatever
    /// order they came in ([`AggregateFunction::merges_exactly`]): sliding
    /// windows then fold each record into one slice (`window::slices`).
    /// By default not: each record folds into every window holding it.
    fn merges_exactly(&self) -> bool {
        false
    }

    /// The accumulator of the records of `a` and of `b`; only called when
    /// [`merges_exactly`](Self::merges_exactly).
    ///
    /// # Panics
    ///
    /// By default, always: a fold that merges says so and merges.
    fn merge_slices(&self, a: Self::Acc, b: &Self::Acc) -> Self::Acc {
        let _ = (a, b);
        unreachable!("merge_slices of a fold that does not merge exactly")
    }
}

/// [`WindowFold`] by an [`AggregateFunction`] (Flink's
/// `WindowedStream::aggregate`).
#[derive(Clone, Debug)]
pub struct AggregateFold<A>(pub A);

impl<A: AggregateFunction> WindowFold for AggregateFold<A> {
    type In = A::In;
    type Acc = A::Acc;
    type Out = A::Out;

    #[inline]
    fn fold(&self, acc: Option<A::Acc>, value: A::In) -> A::Acc {
        let acc = acc.unwrap_or_else(|| self.0.create_accumulator());
        self.0.add(value, acc)
    }

    #[inline]
    fn fold_ref(&self, acc: Option<A::Acc>, value: &A::In) -> A::Acc
    where
        A::In: Clone,
    {
        let acc = acc.unwrap_or_else(|| self.0.create_accumulator());
        self.0.add_ref(value, acc)
    }

    fn result(&self, acc: &A::Acc) -> A::Out {
        self.0.get_result(acc)
    }

    fn empty(&self) -> Option<A::Acc> {
        Some(self.0.create_accumulator())
    }

    fn merges_exactly(&self) -> bool {
        self.0.merges_exactly()
    }

    #[inline]
    fn merge_slices(&self, a: A::Acc, b: &A::Acc) -> A::Acc {
        self.0.merge_ref(a, b)
    }
}

/// [`WindowFold`] by a reduce function (Flink's `WindowedStream::reduce`):
/// the window's result is its records combined pairwise.
pub struct ReduceFold<T, F> {
    reduce: F,
    _record: PhantomData<fn(T) -> T>,
}

impl<T, F: Clone> Clone for ReduceFold<T, F> {
    fn clone(&self) -> Self {
        Self::new(self.reduce.clone())
    }
}

impl<T, F> ReduceFold<T, F> {
    /// The fold combining records with `reduce`.
    pub fn new(reduce: F) -> Self {
        Self {
            reduce,
            _record: PhantomData,
        }
    }
}

impl<T, F> WindowFold for ReduceFold<T, F>
where
    T: StateValue + 'static,
    F: Fn(T, T) -> T + 'static,
{
    type In = T;
    type Acc = T;
    type Out = T;

    #[inline]
    fn fold(&self, acc: Option<T>, value: T) -> T {
        match acc {
            Some(a) => (self.reduce)(a, value),
            None => value,
        }
    }

    fn result(&self, acc: &T) -> T {
        acc.clone()
    }
}
