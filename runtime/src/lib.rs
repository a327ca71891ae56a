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
//!
//! The crate logs through `tracing` (targets in [`core::log`]) and prints
//! nothing itself: a program that wants its messages installs a
//! subscriber, as the `weir` command line does.
//!
//! # Layers
//!
//! Each folder owns one idea and imports only from the folders below it
//! (`tests/layers.rs` checks it):
//!
//! ```text
//! config       Config, its keys, and the options built from it
//! exec         options, execute, attempts, wiring, workers, progress, restarts
//! api          the user's job API: graph, streams, one file per feature
//! connectors   file source and transactional file sink
//! operators    keyed process, process, sources, sinks, two-input,
//!              broadcast, interval join, windows (each with its builder)
//! build        BuildContext, builder traits, builders of links and exchanges
//! exchange     output side, input gate and alignment, decoders,
//!              debloating, watermark valve, input task
//! chain        ChainControl, Collector, chained map/filter/flat_map, tasks
//! state        key context, state kinds, TTL, timers, operator state,
//!              registry, visitor, codecs
//! checkpoint   coordinator, signals, stats, storage, segment files,
//!              table blocks, restore plumbing, the writer
//! metrics      hot-path counters, subtask time accounting, reports
//! core         shared vocabulary: SubtaskInfo, snapshot hand-off types,
//!              BarrierMode, durations, time, units, failpoints, log targets,
//!              a user function's error
//! ```
//!
//! Above them all, behind the cargo feature `testing`, [`testing`] is the
//! public test harness: collecting sinks, options and a time limit for
//! test jobs, and operator test harnesses (Flink's
//! `KeyedOneInputStreamOperatorTestHarness`).
#![deny(missing_docs)]

pub mod api;
pub mod build;
pub mod chain;
pub mod checkpoint;
pub mod config;
pub mod connectors;
pub mod core;
pub mod exchange;
pub mod exec;
pub mod metrics;
pub mod operators;
pub mod state;
#[cfg(feature = "testing")]
pub mod testing;

pub use crate::api::{
    BoxedStream, BranchStream, BroadcastStream, ConnectedKeyedStreams, DetachedKeyedStream,
    IntervalJoin, IntervalJoined, JobGraph, KeyedStream, PartitionedStream, SharedStream, Stream,
    WindowedStream,
};
pub use crate::build::{BuildError, Restoring};
pub use crate::chain::{ChainControl, Collector, FlushOutcome, TaskError};
pub use crate::checkpoint::{CheckpointRecord, CheckpointSummary};
pub use crate::config::{CheckpointingMode, Config, ConfigError};
pub use crate::connectors::file_source::{DecodeWith, Decoded, LineDecoder, Lines};
pub use crate::connectors::{FileSource, TransactionalFileSink};
pub use crate::core::timestamp::{record_timestamp, NO_TIMESTAMP};
pub use crate::core::{fail_task, Offset, Redistribution, SubtaskInfo, UserError};
pub use crate::exchange::{
    BufferDebloater, BufferTimeout, CoInput, DebloatOptions, DebloatTarget, WatermarkValve,
};
pub use crate::exec::{
    available_cores, execute, execute_with_progress, CheckpointingOptions, ExecutionOptions,
    JobError, JobHandle, JobResult, JobState, JobView, Progress, RestartDecision, RestartStrategy,
    RestartStrategyConfig, RestartStrategyType, RestartTracker, RestoreFrom, RestoreInfo, Result,
    SavepointStatus, StopRequest, Stopped, TaskFailure,
};
pub use crate::metrics::{
    BackpressureLevel, GaugeSummary, IoRates, SubtaskId, SubtaskSummary, TimeShares,
};
pub use crate::operators::broadcast::{
    BroadcastProcessFunction, BroadcastState, KeyedBroadcastProcessFunction,
};
pub use crate::operators::interval_join::{
    IntervalJoinOperator, JoinBounds, JoinContext, ProcessJoinFunction,
};
pub use crate::operators::keyed::KeyedProcessFunction;
pub use crate::operators::process::{InitializationContext, ProcessContext, ProcessFunction};
pub use crate::operators::side_output::{OutputTag, SideOutput, SideOutputs};
pub use crate::operators::sink::{rescaled_share, Sink};
pub use crate::operators::source::{
    NumberSequenceSource, Paced, SequenceSource, Source, SourcePoll, SourceWakeup, StridedSplits,
};
pub use crate::operators::timestamps::{
    BoundedOutOfOrderness, WatermarkAlignment, WatermarkGenerator, WatermarkGeneratorSupplier,
    WatermarkOutput, WatermarkStrategy, WatermarksWithIdleness, DEFAULT_ALIGNMENT_UPDATE_INTERVAL,
};
pub use crate::operators::two_input::KeyedCoProcessFunction;
pub use crate::operators::window::{
    AttachedEventTimeWindows, ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger,
    CountEvictor, CountTrigger, CumulativeEventTimeWindows, DeltaEvictor,
    DynamicEventTimeSessionWindows, DynamicProcessingTimeSessionWindows, EventTimeSessionWindows,
    EventTimeTrigger, Evictor, EvictorContext, GeneralWindowOperator, NeverTrigger, NoState,
    OnMergeContext, ProcessWindowFunction, ProcessingTimeSessionWindows, ProcessingTimeTrigger,
    PurgingTrigger, SlidingEventTimeWindows, SlidingProcessingTimeWindows, StateStore, TimeEvictor,
    TimeWindow, TimestampedValue, Trigger, TriggerContext, TriggerResult, TumblingEventTimeWindows,
    TumblingProcessingTimeWindows, ValueStateDescriptor, WindowAssigner, WindowCollector,
    WindowContext, WindowFold, WindowFunction, WindowOperator, Windowing,
};
pub use crate::state::{
    AggregateFunction, KeyByRef, KeyContext, KeySelector, KeyedAggregatingState, KeyedListState,
    KeyedMapState, KeyedReducingState, KeyedStates, KeyedTimerService, KeyedTtlValueState,
    KeyedValueState, ManualClock, OperatorListState, OperatorStates, ProcessingTimeClock,
    StateTtlConfig, TimeDomain, TimerQueues, TtlClock, UnionListState, UpdateType,
};
pub use compact_str::CompactString;
pub use weir_derive::{KeyHash, Wire};
pub use weir_net::{DecodeError, WatermarkStatus, Wire};
pub use weir_state::{KeyHash, StateKey, StateValue};

// `#[derive(Wire, KeyHash)]` names `::weir_runtime::__derive`, inside this
// crate too.
extern crate self as weir_runtime;

#[doc(hidden)]
pub use crate::core::derive as __derive;
