//! What runs in weir: the job API, pinned glommio workers, chained
//! operators, key_by exchanges, keyed state, checkpoints, configuration,
//! restart strategies and metrics.
//!
//! A job is a [`JobGraph`] of sources, chained operators (`map`, `filter`,
//! `flat_map`), `key_by` exchanges, keyed process operators and sinks.
//! [`execute()`] runs it with one glommio executor per worker, each pinned to
//! its own core; subtask `i` of every stage runs on worker `i % workers`.
//! Operators joined by forward edges call each other directly; a `key_by`
//! becomes an all-to-all exchange of one lock-free SPSC channel per
//! (sender, receiver) pair, carrying buffers by ownership (see `weir-net`).
#![deny(missing_docs)]

pub mod broadcast;
pub mod checkpoint;
pub mod config;
pub mod connectors;
pub mod debloat;
pub mod error;
pub mod exchange;
pub mod execute;
pub mod failpoint;
pub mod gate;
pub mod interval_join;
pub mod job;
pub mod keyed;
pub mod keyed_state;
pub mod metrics;
pub mod operator;
pub mod operator_state;
pub mod process;
pub mod restart;
pub mod sink;
pub mod source;
pub mod split_source;
pub mod task;
pub mod timers;
pub mod ttl;
pub mod two_input;
pub mod watermark;
pub mod window;
pub mod worker;

pub use broadcast::{
    BroadcastProcessFunction, BroadcastState, BroadcastStream, KeyedBroadcastProcessFunction,
};
pub use checkpoint::{CheckpointRecord, CheckpointSummary, KeyedStates};
pub use config::{CheckpointingMode, Config, ConfigError, JobName};
pub use connectors::{FileSource, TransactionalFileSink};
pub use debloat::{BufferDebloater, DebloatOptions, DebloatTarget};
pub use error::{JobError, Result};
pub use execute::{
    available_cores, execute, execute_with_progress, CheckpointingOptions, ExecutionOptions,
    JobResult, Progress, RestoreFrom, RestoreInfo,
};
pub use interval_join::{
    IntervalJoin, IntervalJoinOperator, IntervalJoined, JoinBounds, JoinContext,
    ProcessJoinFunction,
};
pub use job::{JobGraph, KeyedStream, Stream, WindowedStream};
pub use keyed::{KeyContext, KeyedProcessFunction, KeyedValueState};
pub use keyed_state::{
    AggregateFunction, KeyedAggregatingState, KeyedListState, KeyedMapState, KeyedReducingState,
    KeyedTtlValueState,
};
pub use metrics::{BackpressureLevel, GaugeSummary, SubtaskId, SubtaskSummary, TimeShares};
pub use operator::{ChainControl, Collector, FlushOutcome};
pub use operator_state::{OperatorListState, OperatorStates, Redistribution, UnionListState};
pub use process::{InitializationContext, ProcessContext, ProcessFunction};
pub use restart::{
    RestartDecision, RestartStrategy, RestartStrategyConfig, RestartStrategyType, RestartTracker,
};
pub use sink::Sink;
pub use source::{SequenceSource, Source, SourcePoll, SubtaskInfo};
pub use split_source::NumberSequenceSource;
pub use timers::{KeyedTimerService, TimeDomain, TimerQueues};
pub use ttl::{ManualClock, ProcessingTimeClock, StateTtlConfig, TtlClock, UpdateType};
pub use two_input::{CoInput, ConnectedKeyedStreams, DetachedKeyedStream, KeyedCoProcessFunction};
pub use watermark::{WatermarkStrategy, WatermarkValve};
pub use weir_net::{WatermarkStatus, Wire};
pub use weir_state::KeyHash;
pub use window::{
    DynamicEventTimeSessionWindows, DynamicProcessingTimeSessionWindows, EventTimeSessionWindows,
    GeneralWindowOperator, ProcessWindowFunction, ProcessingTimeSessionWindows,
    SlidingProcessingTimeWindows, TimeWindow, TumblingProcessingTimeWindows, WindowCollector,
    WindowFunction, Windowing,
};
pub use window::{
    SlidingEventTimeWindows, TumblingEventTimeWindows, WindowAssigner, WindowFold, WindowOperator,
};
