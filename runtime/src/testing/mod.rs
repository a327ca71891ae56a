//! The public test harness (cargo feature `testing`): what a user needs
//! to test a weir job or one of its functions without writing the helpers
//! again.
//!
//! - **Whole jobs**: [`CollectSink`] / [`Collected`] gather what every
//!   sink subtask received ([`collect_into`] makes the sink factory);
//!   [`test_options`] runs a job on a given number of unpinned workers
//!   without progress output ([`small_buffers`] adds small network
//!   buffers, so backpressure shows with little data); [`run_job`] /
//!   [`run_ok`] run it with a time limit, so a test fails instead of
//!   hanging.
//! - **One operator**, as Flink's `KeyedOneInputStreamOperatorTestHarness`
//!   and `OneInputStreamOperatorTestHarness`: [`KeyedOperatorHarness`]
//!   drives a [`KeyedProcessFunction`](crate::KeyedProcessFunction) (the
//!   window operators are keyed process functions too) and
//!   [`ProcessOperatorHarness`] a [`ProcessFunction`](crate::ProcessFunction)
//!   with records, watermarks and, for keyed ones, a manual
//!   processing-time clock; a test reads their output, the watermarks
//!   they passed on, their timers and their state, takes an
//!   [`OperatorSnapshot`] and restores it into a new harness, also at
//!   another parallelism ([`OperatorSnapshot::merge`]).
//!
//! ```
//! use weir_runtime::testing::KeyedOperatorHarness;
//! use weir_runtime::*;
//!
//! /// Counts records per key.
//! struct Count(KeyedValueState<u64, u64>);
//!
//! impl KeyedProcessFunction for Count {
//!     type Key = u64;
//!     type In = u64;
//!     type Out = (u64, u64);
//!     fn process<C: Collector<(u64, u64)>>(&mut self, ctx: &KeyContext<u64>, _: u64, out: &mut C) {
//!         let n = self.0.value_mut_or_insert_with(ctx, || 0);
//!         *n += 1;
//!         out.collect((*ctx.key(), *n));
//!     }
//!     fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
//!         states.value(&mut self.0);
//!     }
//! }
//!
//! let new = |_: &SubtaskInfo| Count(KeyedValueState::new("count"));
//! let mut harness = KeyedOperatorHarness::new(new, |r: &u64| r % 3)?;
//! harness.process_elements([1, 4, 2]);
//! assert_eq!(harness.take_output(), vec![(1, 1), (1, 2), (2, 1)]);
//!
//! // Snapshot, restore into a new instance, go on where it was.
//! let snapshot = harness.snapshot()?;
//! let mut restored = KeyedOperatorHarness::restore(new, |r: &u64| r % 3, &snapshot)?;
//! restored.process_element(7);
//! assert_eq!(restored.take_output(), vec![(1, 3)]);
//! # Ok::<(), weir_runtime::testing::HarnessError>(())
//! ```
//!
//! # Why a feature and not a crate
//!
//! The harnesses run the real operators: the keyed process operator with
//! its key context, timers and TTL ticks, the process operator with its
//! operator state, the checkpoint writer's blocks and the restore path
//! with its checks and redistribution. They reach them through
//! crate-internal hooks (the `FunctionSite` functions are made at, the
//! `VecTail` an operator writes into, the writer's one-snapshot entry),
//! which a separate crate could only use if they became weir's public
//! API. As a feature the harness stays inside the crate, at the top of
//! its layers (`tests/layers.rs`: it may use every module, none uses it),
//! and costs a production build nothing: without the feature it is not
//! compiled. Enable it for tests only:
//!
//! ```toml
//! [dev-dependencies]
//! weir-runtime = { path = "../runtime", features = ["testing"] }
//! ```

mod collect;
mod error;
mod hang;
mod keyed;
mod process;
mod run;
mod setup;
mod snapshot;

pub use collect::{collect_into, CollectSink, Collected};
pub use error::HarnessError;
pub use hang::thread_stacks;
pub use keyed::KeyedOperatorHarness;
pub use process::ProcessOperatorHarness;
pub use run::{run_job, run_job_within, run_ok, small_buffers, test_options, JOB_TIMEOUT};
pub use setup::HarnessSetup;
pub use snapshot::OperatorSnapshot;

#[cfg(test)]
mod tests;
