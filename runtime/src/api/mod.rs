//! The user's job API: the graph, streams, keyed and windowed streams, and
//! one file per feature with its stream extension (two inputs, the
//! interval join, broadcast).
//!
//! The job API: building a dataflow of sources, chained operators, key_by
//! exchanges, keyed process operators and sinks.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//! use weir_runtime::*;
//!
//! /// Counts records per key in keyed ValueState.
//! struct Count(KeyedValueState<u64, u64>);
//!
//! impl KeyedProcessFunction for Count {
//!     type Key = u64;
//!     type In = (u64, u64);
//!     type Out = (u64, u64);
//!     fn process<C: Collector<(u64, u64)>>(
//!         &mut self,
//!         ctx: &KeyContext<u64>,
//!         _record: (u64, u64),
//!         out: &mut C,
//!     ) {
//!         let n = self.0.value_mut_or_insert_with(ctx, || 0);
//!         *n += 1;
//!         out.collect((*ctx.key(), *n));
//!     }
//! }
//!
//! /// Remembers the largest count it saw.
//! struct MaxCount(Arc<AtomicU64>);
//!
//! impl Sink for MaxCount {
//!     type In = (u64, u64);
//!     fn invoke(&mut self, (_key, n): (u64, u64)) {
//!         self.0.fetch_max(n, Ordering::Relaxed);
//!     }
//! }
//!
//! let max = Arc::new(AtomicU64::new(0));
//! let seen = max.clone();
//! let mut job = JobGraph::new("keyed-count");
//! job.source("numbers", |info: &SubtaskInfo| {
//!     SequenceSource::new(info, 1_000, |i| (i % 10, i))
//! })
//! .key_by(|r: &(u64, u64)| r.0)
//! .process("count", |_: &SubtaskInfo| Count(KeyedValueState::new("count")))
//! .sink("max", move |_: &SubtaskInfo| MaxCount(seen.clone()));
//!
//! let mut options = ExecutionOptions::with_workers(2);
//! options.pin_cores = false;
//! execute(job, &options).unwrap();
//! assert_eq!(max.load(Ordering::Relaxed), 100); // 1,000 records over 10 keys
//! ```
//!
//! Every operator has a `uid` (stable across versions of a job; it will
//! name the operator's state in snapshots) and belongs to a *stage*: a chain
//! of operators joined by forward edges, which runs as one task per subtask
//! with direct calls between operators. A `key_by` ends a stage with an
//! exchange and starts the next. A stage's parallelism defaults to the number
//! of workers; subtask `i` runs on worker `i % workers`.

pub mod boxed;
pub mod broadcast;
pub mod fan_out;
pub mod graph;
pub mod interval_join;
pub mod keyed;
pub mod partition;
pub mod stream;
pub mod two_input;
pub mod window;

pub use boxed::BoxedStream;
pub use broadcast::{BroadcastConnectedStream, BroadcastStream, KeyedBroadcastConnectedStream};
pub use fan_out::{BranchStream, SharedStream};
pub use graph::JobGraph;
pub use interval_join::{IntervalJoin, IntervalJoined};
pub use keyed::KeyedStream;
pub use partition::PartitionedStream;
pub use stream::Stream;
pub use two_input::{ConnectedKeyedStreams, DetachedKeyedStream};
pub use window::WindowedStream;
