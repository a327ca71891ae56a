//! A source whose position is its splits (operator list state) rescales:
//! a job reading a `NumberSequenceSource` with 2 subtasks fails after a
//! checkpoint and is restored with 3 (and another with 3 restored with 2);
//! the keyed counts downstream equal the workload's, so no record was lost
//! or read twice. So does `SequenceSource`, whose strided splits are union
//! list state (2 -> 3, 3 -> 2, 3 -> 1). A source with a per-subtask
//! position still refuses.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use weir_runtime::exec::restart::{ExponentialDelay, RestartStrategy};
use weir_runtime::{
    BuildError, Collector, ExecutionOptions, JobError, JobGraph, KeyContext, KeyedProcessFunction,
    KeyedStates, KeyedValueState, NumberSequenceSource, OperatorStates, ProcessContext,
    ProcessFunction, RestoreFrom, SequenceSource, Sink, Source, SourcePoll, SubtaskInfo,
    TaskFailure,
};

use crate::{options, run_job, run_ok, splitmix64, temp_dir};

/// Keys of the workload.
pub(crate) const KEYS: u64 = 300;

/// Emits at most `per_poll` records of `inner` per millisecond (so that
/// the job lives long enough for checkpoints); its state is the inner
/// source's.
pub(crate) struct Paced<S> {
    pub(crate) inner: S,
    pub(crate) per_poll: usize,
    pub(crate) resume_at: Option<Instant>,
}

impl<S: Source> Source for Paced<S> {
    type Out = S::Out;

    fn poll_next<C: Collector<S::Out>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        let now = Instant::now();
        if let Some(at) = self.resume_at.filter(|&at| at > now) {
            return SourcePoll::Idle { until: Some(at) };
        }
        self.resume_at = Some(now + Duration::from_millis(1));
        self.inner.poll_next(out, budget.min(self.per_poll))
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        self.inner.snapshot_position()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        self.inner.restore_position(position)
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        self.inner.visit_state(states);
    }

    fn initialize_restored_state(&mut self) -> Result<(), String> {
        self.inner.initialize_restored_state()
    }
}

/// A source whose position is per subtask (the next index, as bytes):
/// it cannot rescale.
struct Positioned {
    next: u64,
    step: u64,
    end: u64,
}

impl Source for Positioned {
    type Out = (u64, u64);

    fn poll_next<C: Collector<(u64, u64)>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        let mut n = 0;
        while n < budget && self.next < self.end && out.is_available() {
            out.collect((self.next % 7, self.next));
            self.next += self.step;
            n += 1;
        }
        if n == 0 && self.next >= self.end {
            SourcePoll::Finished
        } else {
            SourcePoll::Emitted(n)
        }
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        self.next.to_le_bytes().to_vec()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        self.next = u64::from_le_bytes(position.try_into().map_err(|_| "8 bytes".to_string())?);
        Ok(())
    }
}

/// Passes records on; once a checkpoint completed after it saw 1,000
/// records, panics at its next one (once per job: `armed`).
pub(crate) struct FailAfterCheckpoint {
    pub(crate) seen: u64,
    pub(crate) checkpointed: bool,
    pub(crate) armed: Arc<AtomicBool>,
}

impl ProcessFunction for FailAfterCheckpoint {
    type In = (u64, u64);
    type Out = (u64, u64);

    fn process<C: Collector<(u64, u64)>>(
        &mut self,
        _: &ProcessContext,
        r: (u64, u64),
        out: &mut C,
    ) {
        if self.checkpointed && self.armed.swap(false, Ordering::SeqCst) {
            panic!("injected failure at record {}", r.1);
        }
        self.seen += 1;
        out.collect(r);
    }

    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) {
        self.checkpointed |= self.seen >= 1_000;
    }
}

/// Keyed `count += 1`, emitting `(key, count)`.
pub(crate) struct Count(pub(crate) KeyedValueState<u64, u64>);

impl KeyedProcessFunction for Count {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, u64);

    fn process<C: Collector<(u64, u64)>>(
        &mut self,
        ctx: &KeyContext<u64>,
        _: (u64, u64),
        out: &mut C,
    ) {
        let n = self.0.value_mut_or_insert_with(ctx, || 0);
        *n += 1;
        out.collect((*ctx.key(), *n));
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.0);
    }
}

/// The largest count seen per key (a replay re-emits smaller ones): the
/// final counts, with no state of its own.
pub(crate) struct Latest(pub(crate) Arc<Mutex<HashMap<u64, u64>>>);

impl Sink for Latest {
    type In = (u64, u64);

    fn invoke(&mut self, (key, n): (u64, u64)) {
        let mut m = self.0.lock().unwrap();
        let e = m.entry(key).or_insert(0);
        *e = (*e).max(n);
    }
}

fn key_and_index(i: u64) -> (u64, u64) {
    (splitmix64(i) % KEYS, i)
}

/// Either sequence source.
enum Numbers {
    Splits(NumberSequenceSource<fn(u64) -> (u64, u64)>),
    Strided(SequenceSource<fn(u64) -> (u64, u64)>),
}

impl Source for Numbers {
    type Out = (u64, u64);

    fn poll_next<C: Collector<(u64, u64)>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        match self {
            Self::Splits(s) => s.poll_next(out, budget),
            Self::Strided(s) => s.poll_next(out, budget),
        }
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        match self {
            Self::Splits(s) => s.snapshot_position(),
            Self::Strided(s) => s.snapshot_position(),
        }
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        match self {
            Self::Splits(s) => s.restore_position(position),
            Self::Strided(s) => s.restore_position(position),
        }
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        match self {
            Self::Splits(s) => s.visit_state(states),
            Self::Strided(s) => s.visit_state(states),
        }
    }

    fn initialize_restored_state(&mut self) -> Result<(), String> {
        match self {
            Self::Splits(s) => s.initialize_restored_state(),
            Self::Strided(s) => s.initialize_restored_state(),
        }
    }
}

/// Reads `n` numbers in 12 splits (or strided, with `SequenceSource`)
/// with the source at `parallelism`.
fn job(
    n: u64,
    parallelism: usize,
    fail: bool,
    counts: &Arc<Mutex<HashMap<u64, u64>>>,
    strided: bool,
) -> JobGraph {
    let armed = Arc::new(AtomicBool::new(fail));
    let into = counts.clone();
    let job = JobGraph::new("split-source");
    let numbers = job.source("sequence", move |info: &SubtaskInfo| Paced {
        inner: if strided {
            Numbers::Strided(SequenceSource::new(info, n, key_and_index))
        } else {
            Numbers::Splits(NumberSequenceSource::new(info, n, 12, key_and_index))
        },
        per_poll: 40,
        resume_at: None,
    });
    numbers
        .process("fail", move |_: &SubtaskInfo| FailAfterCheckpoint {
            seen: 0,
            checkpointed: false,
            armed: armed.clone(),
        })
        .parallelism(parallelism)
        .key_by(|r: &(u64, u64)| r.0)
        .process("count", |_: &SubtaskInfo| {
            Count(KeyedValueState::new("count"))
        })
        .parallelism(2)
        .sink("latest", move |_: &SubtaskInfo| Latest(into.clone()));
    job
}

pub(crate) fn checkpointed(dir: &std::path::Path) -> ExecutionOptions {
    let mut o = options(2).with_checkpointing(Duration::from_millis(15), dir);
    o.checkpointing.as_mut().unwrap().coordinator.num_retained = 2;
    o.restart = RestartStrategy::None;
    o
}

/// Runs the job at `before` until its injected failure, then restores it
/// at `after`; the final counts are the workload's.
fn rescale(before: usize, after: usize) {
    rescale_source(before, after, false);
}

/// [`rescale`] of a `SequenceSource` (strided splits in union list state).
fn rescale_strided(before: usize, after: usize) {
    rescale_source(before, after, true);
}

fn rescale_source(before: usize, after: usize, strided: bool) {
    let n = 60_000;
    let dir = temp_dir(&format!("split-source-{before}-{after}-{strided}"));
    let counts = Arc::new(Mutex::new(HashMap::new()));
    let mut o = checkpointed(&dir);
    match run_job(job(n, before, true, &counts, strided), &o) {
        Err(e @ JobError::TaskFailed { .. }) => {
            assert!(e.to_string().contains("injected failure"), "{e}")
        }
        other => panic!("expected the injected failure, got {other:?}"),
    }
    o.restore = RestoreFrom::Latest;
    let result = run_ok(job(n, after, false, &counts, strided), &o);
    let restored = result
        .restored
        .expect("restored the failed run's checkpoint");
    let mut want: HashMap<u64, u64> = HashMap::new();
    for i in 0..n {
        *want.entry(splitmix64(i) % KEYS).or_insert(0) += 1;
    }
    assert_eq!(
        *counts.lock().unwrap(),
        want,
        "every number counted once after restoring checkpoint {} at parallelism {after}",
        restored.checkpoint_id
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_split_source_scales_up_from_its_checkpoint() {
    rescale(2, 3);
}

#[test]
fn a_split_source_scales_down_from_its_checkpoint() {
    rescale(3, 2);
}

#[test]
fn a_strided_source_scales_up_from_its_checkpoint() {
    rescale_strided(2, 3);
}

#[test]
fn a_strided_source_scales_down_from_its_checkpoint() {
    rescale_strided(3, 2);
    rescale_strided(3, 1);
}

/// A source with a per-subtask position cannot change parallelism: the
/// restore fails and names the source, at once, without the restart
/// strategy (a restart would restore the same checkpoint).
#[test]
fn a_source_with_a_position_still_refuses_to_rescale() {
    let dir = temp_dir("position-source-rescale");
    let build = |parallelism: usize| {
        let job = JobGraph::new("position-source");
        job.source("numbers", |info: &SubtaskInfo| Positioned {
            next: info.index as u64,
            step: info.parallelism as u64,
            end: 1_000,
        })
        .parallelism(parallelism)
        .key_by(|r: &(u64, u64)| r.0)
        .process("count", |_: &SubtaskInfo| {
            Count(KeyedValueState::new("count"))
        })
        .sink("latest", |_: &SubtaskInfo| Latest(Arc::default()));
        job
    };
    let mut o = checkpointed(&dir);
    run_ok(build(2), &o);
    o.restore = RestoreFrom::Latest;
    // Were the refusal retried, this strategy would give up after one
    // restart (`RestartsExhausted`).
    o.restart = RestartStrategy::ExponentialDelay(ExponentialDelay {
        initial_backoff: Duration::from_millis(5),
        attempts_before_reset_backoff: Some(1),
        ..ExponentialDelay::default()
    });
    match run_job(build(3), &o) {
        Err(e @ JobError::TaskFailed { .. })
            if matches!(&e, JobError::TaskFailed { cause: TaskFailure::Build(b), .. }
                if matches!(**b, BuildError::Restore { .. })) =>
        {
            assert!(!e.retryable(), "{e}");
            assert!(
                e.to_string().contains("source `numbers`")
                    && e.to_string().contains("had parallelism 2 in checkpoint")
                    && e.to_string().contains("cannot be redistributed"),
                "{e}"
            )
        }
        other => panic!("expected the restore to be refused at once, got {other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
