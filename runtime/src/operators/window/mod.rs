//! Windows: assigners, triggers, evictors, incremental folds and
//! full-window functions with their context, and the two window operators
//! (panes for event-time tumbling and sliding windows with the default
//! trigger, the general one for everything else).
//!
//! Which operator runs: `aggregate` / `reduce` on event-time tumbling or
//! sliding windows without a trigger or evictor of the job's run on the
//! pane operator ([`WindowOperator`]: one table per window, no timer per
//! `(key, window)`); everything else on [`GeneralWindowOperator`], Flink's
//! `WindowOperator` with any [`Trigger`] (and, with an [`Evictor`], its
//! `EvictingWindowOperator`). Both emit what Flink emits, in Flink's order
//! per key; plain `aggregate` / `reduce` emit `(key, window, result)`, so
//! every output names its window's start and end.

pub mod assign;
pub mod attached;
pub mod contents;
pub mod context;
pub mod event_time;
pub mod evicting;
pub mod evictor;
pub mod fold;
pub mod general;
pub mod operator;
pub mod panes;
pub mod plan;
pub mod processing_time;
pub mod slices;
pub mod spec;
pub mod timers;
pub mod trigger;
pub mod triggers;

pub use assign::{
    CumulativeEventTimeWindows, DynamicEventTimeSessionWindows, EventTimeSessionWindows, Windowing,
};
pub use attached::AttachedEventTimeWindows;
pub use contents::{
    Accumulated, Buffered, FnProcessWindowFunction, FnWindowFunction, KeyWindowResult, MergeFold,
    ProcessResult, ProcessWindowFunction, WindowCollector, WindowContents, WindowFunction,
    WINDOW_ELEMENTS_STATE,
};
pub use context::{StateStore, ValueStateDescriptor, WindowContext, WINDOW_FUNCTION_STATE};
pub use event_time::{SlidingEventTimeWindows, TumblingEventTimeWindows, WindowAssigner};
pub use evicting::{Evicting, FoldElements, EVICTING_ELEMENTS_STATE};
pub use evictor::{
    CountEvictor, DeltaEvictor, Evictor, EvictorContext, TimeEvictor, TimestampedValue,
};
pub use fold::{AggregateFold, ReduceFold, WindowFold};
pub use general::{GeneralWindowOperator, WINDOWS_STATE};
pub use operator::WindowOperator;
pub use plan::{DefaultTrigger, EvictorSlot, NoEvictor, TriggerSlot, WithEvictor, WithTrigger};
pub use processing_time::{
    DynamicProcessingTimeSessionWindows, ProcessingTimeSessionWindows,
    SlidingProcessingTimeWindows, TumblingProcessingTimeWindows,
};
pub use spec::{ProcessingClock, TimeWindow, WindowSpec};
pub use trigger::{NoState, OnMergeContext, Trigger, TriggerContext, TriggerResult};
pub use triggers::{
    ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, CountTrigger, EventTimeTrigger,
    NeverTrigger, ProcessingTimeTrigger, PurgingTrigger,
};

#[cfg(test)]
mod tests;
