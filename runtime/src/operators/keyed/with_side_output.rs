//! A keyed process function with one more side output, which its logic
//! reaches through a clone of the handle (a window operator's late data,
//! [`crate::api::window::WindowedStream::side_output_late_data`]).

use crate::chain::control::Collector;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::side_output::{SideOutput, SideOutputs};
use crate::state::key_context::KeyContext;
use crate::state::key_selector::KeySelector;
use crate::state::timers::{TimeDomain, TimerQueues};
use crate::state::visitor::KeyedStates;

/// A keyed process function with one more side output its logic emits to
/// through a clone of `output` (a window operator's late data): lists it
/// besides the function's own. Everything else is the function's.
pub(crate) struct KeyedWithSideOutput<F, X> {
    pub(crate) func: F,
    pub(crate) output: Option<SideOutput<X>>,
}

impl<F: KeyedProcessFunction, X: Clone + 'static> KeyedProcessFunction
    for KeyedWithSideOutput<F, X>
{
    type Key = F::Key;
    type In = F::In;
    type Out = F::Out;

    #[inline]
    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<Self::Key>,
        value: Self::In,
        out: &mut C,
    ) {
        self.func.process(ctx, value, out)
    }

    #[inline]
    fn process_many<I, KF, C>(
        &mut self,
        records: &mut I,
        key_of: &KF,
        watermark: i64,
        limit: usize,
        out: &mut C,
    ) -> usize
    where
        I: Iterator<Item = Self::In>,
        KF: KeySelector<Self::In, Key = Self::Key>,
        C: Collector<Self::Out>,
    {
        self.func
            .process_many(records, key_of, watermark, limit, out)
    }

    fn prefetch_pays(&self) -> bool {
        self.func.prefetch_pays()
    }

    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        self.func.prefetch(hash)
    }

    fn on_watermark<C: Collector<Self::Out>>(&mut self, watermark: i64, out: &mut C) {
        self.func.on_watermark(watermark, out)
    }

    fn on_end_of_input<C: Collector<Self::Out>>(&mut self, out: &mut C) {
        self.func.on_end_of_input(out)
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        self.func.visit_state(states)
    }

    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        self.func.side_outputs(outputs);
        if let Some(o) = &self.output {
            outputs.connect(o);
        }
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<Self::Key>> {
        self.func.timer_service()
    }

    fn on_timer<C: Collector<Self::Out>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<Self::Key>,
        domain: TimeDomain,
        out: &mut C,
    ) {
        self.func.on_timer(timestamp, ctx, domain, out)
    }
}
