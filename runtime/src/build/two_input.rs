//! The head of a two-input stage: one gate over the channels of both
//! input exchanges.

use std::marker::PhantomData;

use weir_net::Wire;

use crate::build::builder::ChainBuilder;
use crate::build::channel_rescale::{GateRoutes, InputRoute};
use crate::build::context::BuildContext;
use crate::build::demand::{needed, TimestampDemand};
use crate::build::error::BuildError;
use crate::build::exchange::build_input_task;
use crate::chain::control::Collector;
use crate::chain::task::Task;
use crate::exchange::decoder::{CoInput, CoInputDecoder};

/// Head of a two-input stage: one gate over the channels of `first`
/// then `second`.
pub struct TwoInputChain<A, B> {
    first: usize,
    second: usize,
    /// How each exchange's in-flight records follow a rescale.
    routes: (InputRoute, InputRoute),
    /// Whether each exchange's records carry their timestamps (if read
    /// downstream).
    stamps: (Option<TimestampDemand>, Option<TimestampDemand>),
    _types: PhantomData<fn() -> (A, B)>,
}

impl<A, B> TwoInputChain<A, B> {
    /// The head reading exchanges `first` and `second`, whose channel
    /// state is redistributed by `routes` (the first's, the second's) at
    /// another parallelism.
    pub(crate) fn new(first: usize, second: usize, routes: (InputRoute, InputRoute)) -> Self {
        Self {
            first,
            second,
            routes,
            stamps: (None, None),
            _types: PhantomData,
        }
    }

    /// With each input's records carrying their timestamps as `stamps`
    /// (first, second) says.
    pub(crate) fn with_stamps(
        mut self,
        stamps: (Option<TimestampDemand>, Option<TimestampDemand>),
    ) -> Self {
        self.stamps = stamps;
        self
    }
}

impl<A: Wire, B: Wire> ChainBuilder<CoInput<A, B>> for TwoInputChain<A, B> {
    fn build<C: Collector<CoInput<A, B>> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        let (mut receivers, mut counters) = ctx.take_input(self.first);
        let split = receivers.len();
        let (r2, c2) = ctx.take_input(self.second);
        receivers.extend(r2);
        counters.extend(c2);
        let task: crate::exchange::input_task::InputTask<CoInput<A, B>, C, CoInputDecoder<A, B>> =
            build_input_task(
                ctx,
                self.first,
                receivers,
                counters,
                out,
                CoInputDecoder::new(split)
                    .with_stamps((needed(&self.stamps.0), needed(&self.stamps.1))),
                &GateRoutes::Two {
                    first: self.routes.0.clone(),
                    second: self.routes.1.clone(),
                    split,
                },
            )?;
        Ok(Box::new(task))
    }
}
