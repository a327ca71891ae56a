//! Unaligned channel state at another parallelism: a job whose keyed
//! operator is slow (so the barriers of unaligned checkpoints overtake
//! records in its input channels) runs on 2 workers until a checkpoint
//! holding channel state is complete, fails, and that checkpoint is
//! restored on 3 workers and on 1. The in-flight records follow their key
//! groups to the new subtasks and are replayed there once: the final
//! per-key counts equal the workload's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use weir_runtime::exec::restart::RestartStrategy;
use weir_runtime::{
    Collector, JobError, JobGraph, KeyContext, KeyedProcessFunction, KeyedStates, KeyedValueState,
    RestoreFrom, SequenceSource, Sink, Source, SourcePoll, SubtaskInfo,
};
use weir_state::snapshot::{BlockKind, Manifest};

use crate::{options, run_job, run_ok, splitmix64, temp_dir};

const KEYS: u64 = 200;
const N: u64 = 30_000;

/// At most `per_ms` records of `inner` per millisecond.
pub struct Paced<S> {
    pub inner: S,
    pub per_ms: usize,
    pub next_at: Option<Instant>,
}

impl<S: Source> Source for Paced<S> {
    type Out = S::Out;

    fn poll_next<C: Collector<S::Out>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        let now = Instant::now();
        if let Some(at) = self.next_at.filter(|&at| at > now) {
            return SourcePoll::Idle { until: Some(at) };
        }
        self.next_at = Some(now + Duration::from_millis(1));
        self.inner.poll_next(out, budget.min(self.per_ms))
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        self.inner.snapshot_position()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        self.inner.restore_position(position)
    }

    fn visit_state(&mut self, states: &mut weir_runtime::OperatorStates<'_>) {
        self.inner.visit_state(states);
    }

    fn initialize_restored_state(&mut self) -> Result<(), String> {
        self.inner.initialize_restored_state()
    }
}

/// The complete checkpoints of `dir` whose manifest holds channel state.
pub fn with_channel_state(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            Manifest::read(p.join("_metadata")).is_ok_and(|m| {
                m.operators
                    .iter()
                    .flat_map(|o| &o.subtasks)
                    .flat_map(|s| &s.extents)
                    .any(|e| e.kind == BlockKind::ChannelState && e.length > 0)
            })
        })
        .collect();
    found.sort();
    found
}

/// Keyed `count += 1` spinning `slow` per record, emitting `(key, count)`;
/// with `fail_in`, panics once a checkpoint of that directory holds
/// channel state.
struct SlowCount {
    counts: KeyedValueState<u64, u64>,
    slow: Duration,
    fail_in: Option<PathBuf>,
    seen: u64,
}

impl KeyedProcessFunction for SlowCount {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, u64);

    fn process<C: Collector<(u64, u64)>>(
        &mut self,
        ctx: &KeyContext<u64>,
        _: (u64, u64),
        out: &mut C,
    ) {
        self.seen += 1;
        if let Some(dir) = &self.fail_in {
            if self.seen.is_multiple_of(64) && !with_channel_state(dir).is_empty() {
                panic!("injected failure after a checkpoint with channel state");
            }
        }
        let until = Instant::now() + self.slow;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        let n = self.counts.value_mut_or_insert_with(ctx, || 0);
        *n += 1;
        out.collect((*ctx.key(), *n));
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.counts);
    }
}

/// The largest count seen per key: the final counts (a replay re-emits
/// smaller ones, never larger).
struct Largest(Arc<Mutex<HashMap<u64, u64>>>);

impl Sink for Largest {
    type In = (u64, u64);

    fn invoke(&mut self, (key, n): (u64, u64)) {
        let mut m = self.0.lock().unwrap();
        let e = m.entry(key).or_insert(0);
        *e = (*e).max(n);
    }
}

fn job(fail_in: Option<PathBuf>, counts: &Arc<Mutex<HashMap<u64, u64>>>) -> JobGraph {
    let into = counts.clone();
    let job = JobGraph::new("unaligned-rescale");
    job.source("numbers", |info: &SubtaskInfo| Paced {
        inner: SequenceSource::new(info, N, |i| (splitmix64(i) % KEYS, i)),
        per_ms: 20,
        next_at: None,
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("count", move |_: &SubtaskInfo| SlowCount {
        counts: KeyedValueState::new("count"),
        // Slow only in the run that fails, so that barriers overtake
        // records; the restored run just replays and finishes.
        slow: match fail_in {
            Some(_) => Duration::from_micros(60),
            None => Duration::ZERO,
        },
        fail_in: fail_in.clone(),
        seen: 0,
    })
    .sink("largest", move |_: &SubtaskInfo| Largest(into.clone()));
    job
}

pub fn unaligned(workers: usize, dir: &Path) -> weir_runtime::ExecutionOptions {
    let mut o = options(workers).with_checkpointing(Duration::from_millis(20), dir);
    let c = o.checkpointing.as_mut().unwrap();
    c.unaligned = true;
    c.coordinator.num_retained = 100;
    // Small buffers: the source is held back, the channels stay full.
    o.segment_size = 1024;
    o.restart = RestartStrategy::None;
    o
}

/// The failed run's checkpoint with channel state, restored on `after`
/// workers, ends with the workload's counts.
fn restore_at(after: usize) {
    let dir = temp_dir(&format!("unaligned-rescale-{after}"));
    let counts = Arc::new(Mutex::new(HashMap::new()));
    match run_job(job(Some(dir.clone()), &counts), &unaligned(2, &dir)) {
        Err(e @ JobError::TaskFailed { .. }) => {
            assert!(e.to_string().contains("injected failure"), "{e}")
        }
        other => panic!("expected the injected failure, got {other:?}"),
    }
    let checkpoint = with_channel_state(&dir)
        .into_iter()
        .next()
        .expect("a checkpoint with channel state");
    let mut o = unaligned(after, &dir);
    o.restore = RestoreFrom::Path(checkpoint.clone());
    let result = run_ok(job(None, &counts), &o);
    assert!(
        result.restored.is_some(),
        "restored {}",
        checkpoint.display()
    );
    let mut want: HashMap<u64, u64> = HashMap::new();
    for i in 0..N {
        *want.entry(splitmix64(i) % KEYS).or_insert(0) += 1;
    }
    assert_eq!(
        *counts.lock().unwrap(),
        want,
        "every record counted once after restoring {} (2 workers) on {after}",
        checkpoint.display()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn in_flight_records_of_an_unaligned_checkpoint_follow_their_keys_to_more_subtasks() {
    restore_at(3);
}

#[test]
fn in_flight_records_of_an_unaligned_checkpoint_follow_their_keys_to_fewer_subtasks() {
    restore_at(1);
}
