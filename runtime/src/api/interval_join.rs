//! The interval join of two keyed streams (Flink's
//! `KeyedStream::intervalJoin`).

use weir_net::Wire;
use weir_state::{StateKey, StateValue};

use crate::api::keyed::KeyedStream;
use crate::api::stream::Stream;
use crate::api::two_input::{ConnectedKeyedStreams, DetachedKeyedStream};
use crate::build::builder::ChainBuilder;
use crate::core::duration::Offset;
use crate::core::subtask::SubtaskInfo;
use crate::operators::interval_join::{IntervalJoinOperator, JoinBounds, ProcessJoinFunction};
use crate::operators::side_output::{OutputTag, SideOutput};

/// A keyed stream interval-joined with another, waiting for its bounds
/// (Flink's `KeyedStream.IntervalJoin`).
pub struct IntervalJoin<'j, L, R, K, KL, KR, TL, TR> {
    connected: ConnectedKeyedStreams<'j, L, R, K, KL, KR>,
    left_ts: TL,
    right_ts: TR,
}

/// An interval join with its bounds, waiting for its join function
/// (Flink's `KeyedStream.IntervalJoined`).
pub struct IntervalJoined<'j, L, R, K, KL, KR, TL, TR> {
    join: IntervalJoin<'j, L, R, K, KL, KR, TL, TR>,
    /// The bounds in signed ms, checked when `between` was called.
    lower: i64,
    upper: i64,
    lower_exclusive: bool,
    upper_exclusive: bool,
    late_left: Option<OutputTag<L>>,
    late_right: Option<OutputTag<R>>,
}

impl<'j, L, K, KL> KeyedStream<'j, L, K, KL>
where
    L: StateValue + Wire,
    K: StateKey + Wire,
    KL: Fn(&L) -> K + Clone + Send + Sync + 'static,
{
    /// Joins this keyed stream (the left side) with `other` (the right
    /// side, built earlier and [`detach`](KeyedStream::detach)ed) by key
    /// and event time (Flink's `intervalJoin`); `left_ts` and `right_ts`
    /// give each side's record timestamp (ms). Continue with
    /// [`between`](IntervalJoin::between).
    pub fn interval_join<R, KR, TL, TR>(
        self,
        other: DetachedKeyedStream<R, K, KR>,
        left_ts: TL,
        right_ts: TR,
    ) -> IntervalJoin<'j, L, R, K, KL, KR, TL, TR>
    where
        R: StateValue + Wire,
        KR: Fn(&R) -> K + Clone + Send + Sync + 'static,
        TL: Fn(&L) -> i64 + Clone + Send + Sync + 'static,
        TR: Fn(&R) -> i64 + Clone + Send + Sync + 'static,
    {
        IntervalJoin {
            connected: self.connect(other),
            left_ts,
            right_ts,
        }
    }
}

impl<'j, L, R, K, KL, KR, TL, TR> IntervalJoin<'j, L, R, K, KL, KR, TL, TR> {
    /// Joins a left record at `tL` with the right records at `tR` with
    /// `tL + lower <= tR <= tL + upper` (both inclusive; see
    /// [`IntervalJoined::lower_bound_exclusive`]). A bound before `tL` is
    /// an [`Offset::before`], one after a plain `Duration`: Flink's
    /// `between(Duration.ofMillis(-5), Duration.ofMillis(5))` is
    /// `between(Offset::before(Duration::from_millis(5)), Duration::from_millis(5))`.
    ///
    /// # Panics
    ///
    /// If a bound is not a whole number of milliseconds.
    pub fn between(
        self,
        lower: impl Into<Offset>,
        upper: impl Into<Offset>,
    ) -> IntervalJoined<'j, L, R, K, KL, KR, TL, TR> {
        IntervalJoined {
            join: self,
            lower: lower.into().millis("interval join: lower bound"),
            upper: upper.into().millis("interval join: upper bound"),
            lower_exclusive: false,
            upper_exclusive: false,
            late_left: None,
            late_right: None,
        }
    }
}

impl<'j, L, R, K, KL, KR, TL, TR> IntervalJoined<'j, L, R, K, KL, KR, TL, TR>
where
    L: StateValue + Wire,
    R: StateValue + Wire,
    K: StateKey + Wire,
    KL: Fn(&L) -> K + Clone + Send + Sync + 'static,
    KR: Fn(&R) -> K + Clone + Send + Sync + 'static,
    TL: Fn(&L) -> i64 + Clone + Send + Sync + 'static,
    TR: Fn(&R) -> i64 + Clone + Send + Sync + 'static,
{
    /// Excludes the lower bound: `tL + lower < tR`.
    pub fn lower_bound_exclusive(mut self) -> Self {
        self.lower_exclusive = true;
        self
    }

    /// Excludes the upper bound: `tR < tL + upper`.
    pub fn upper_bound_exclusive(mut self) -> Self {
        self.upper_exclusive = true;
        self
    }

    /// Emits the left records dropped as late to `tag`'s side output
    /// (Flink's `sideOutputLeftLateData`): take it from the joined stream
    /// with [`get_side_output`](crate::api::stream::Stream::get_side_output).
    pub fn side_output_left_late_data(mut self, tag: &OutputTag<L>) -> Self {
        self.late_left = Some(tag.clone());
        self
    }

    /// Emits the right records dropped as late to `tag`'s side output
    /// (Flink's `sideOutputRightLateData`).
    pub fn side_output_right_late_data(mut self, tag: &OutputTag<R>) -> Self {
        self.late_right = Some(tag.clone());
        self
    }

    /// Hands every joined pair to the function `factory` makes for each
    /// subtask (Flink's `IntervalJoined.process`). Bounds that leave no
    /// interval fail the job at start, naming the operator.
    pub fn process<F, FF>(
        self,
        uid: &str,
        factory: FF,
    ) -> Stream<'j, F::Out, impl ChainBuilder<F::Out>>
    where
        F: ProcessJoinFunction<L, R>,
        F::Out: 'static,
        FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    {
        let IntervalJoin {
            connected,
            left_ts,
            right_ts,
        } = self.join;
        let bounds = match JoinBounds::from_millis(
            self.lower,
            self.upper,
            self.lower_exclusive,
            self.upper_exclusive,
        ) {
            Ok(b) => b,
            Err(e) => {
                connected.job_error(format!("interval join `{uid}`: {e}"));
                JoinBounds { lower: 0, upper: 0 }
            }
        };
        let (late_left, late_right) = (self.late_left, self.late_right);
        connected.process(uid, move |info: &SubtaskInfo| {
            IntervalJoinOperator::new(bounds, left_ts.clone(), right_ts.clone(), factory(info))
                .with_late_side_outputs(
                    late_left.as_ref().map(SideOutput::new),
                    late_right.as_ref().map(SideOutput::new),
                )
        })
    }
}
