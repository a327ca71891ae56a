//! Windows: assigners, incremental folds and full-window functions, and the
//! two window operators (panes for event-time tumbling and sliding
//! windows, the general one for everything else).

pub mod assign;
pub mod contents;
pub mod event_time;
pub mod fold;
pub mod general;
pub mod operator;
pub mod panes;
pub mod processing_time;
pub mod spec;

pub use assign::{DynamicEventTimeSessionWindows, EventTimeSessionWindows, Windowing};
pub use contents::{
    Accumulated, Buffered, FnProcessWindowFunction, FnWindowFunction, KeyStartResult, MergeFold,
    ProcessWindowFunction, WindowCollector, WindowContents, WindowFunction, WINDOW_ELEMENTS_STATE,
};
pub use event_time::{SlidingEventTimeWindows, TumblingEventTimeWindows, WindowAssigner};
pub use fold::{AggregateFold, ReduceFold, WindowFold};
pub use general::{GeneralWindowOperator, WINDOWS_STATE};
pub use operator::WindowOperator;
pub use processing_time::{
    DynamicProcessingTimeSessionWindows, ProcessingTimeSessionWindows,
    SlidingProcessingTimeWindows, TumblingProcessingTimeWindows,
};
pub use spec::{ProcessingClock, TimeWindow, WindowSpec};

#[cfg(test)]
mod tests;
