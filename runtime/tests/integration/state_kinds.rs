//! Map, list, reducing and aggregating keyed state through checkpoints: a
//! job keeps all four per key, fails once mid-stream, restores the latest
//! checkpoint and must end with exactly the state a model computes.
//!
//! The per-key order of records depends on how the sources' subtasks
//! interleave, so the job only keeps order-independent state: counts per
//! bucket (map), a set of sampled values (list, compared sorted), the
//! maximum (reducing) and the mean (aggregating). Each key reports its
//! state once its record count reaches the model's total for it; a replay
//! after the restore reports the same final state again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::{
    AggregateFunction, Collector, JobGraph, KeyContext, KeyedAggregatingState, KeyedListState,
    KeyedMapState, KeyedProcessFunction, KeyedReducingState, KeyedStates, Sink, SubtaskInfo,
};

use crate::checkpoint::PacedSource;
use crate::{options, run_ok, splitmix64, temp_dir};

/// Buckets of the map state: `value % BUCKETS`.
const BUCKETS: u64 = 7;
/// The list state samples values divisible by this.
const SAMPLE: u64 = 13;

/// `(sum, count)` with the integer mean as result.
struct Mean;

impl AggregateFunction for Mean {
    type In = u64;
    type Acc = (u64, u64);
    type Out = u64;

    fn create_accumulator(&self) -> (u64, u64) {
        (0, 0)
    }

    fn add(&self, value: u64, (sum, n): (u64, u64)) -> (u64, u64) {
        (sum + value, n + 1)
    }

    fn get_result(&self, &(sum, n): &(u64, u64)) -> u64 {
        sum / n.max(1)
    }

    fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

/// One key's final state: bucket counts, sorted samples, max, mean.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
struct Final {
    buckets: Vec<(u64, u64)>,
    samples: Vec<u64>,
    max: u64,
    mean: u64,
}

type Finals = Arc<Mutex<HashMap<u64, Final>>>;

struct AllKinds {
    buckets: KeyedMapState<u64, u64, u64>,
    samples: KeyedListState<u64, u64>,
    max: KeyedReducingState<u64, u64, fn(u64, u64) -> u64>,
    mean: KeyedAggregatingState<u64, Mean>,
    /// The model's number of records per key.
    totals: Arc<HashMap<u64, u64>>,
    fail_at: u64,
    armed: Arc<AtomicBool>,
}

impl KeyedProcessFunction for AllKinds {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, Final);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (key, value): (u64, u64),
        out: &mut C,
    ) {
        if value == self.fail_at && self.armed.swap(false, Ordering::SeqCst) {
            panic!("injected failure at record {value}");
        }
        let bucket = value % BUCKETS;
        let count = self.buckets.get(ctx, &bucket).unwrap_or(0);
        self.buckets.put(ctx, bucket, count + 1);
        if value % SAMPLE == 0 {
            self.samples.add(ctx, value);
        }
        self.max.add(ctx, value);
        self.mean.add(ctx, value);
        let seen: u64 = self.buckets.values(ctx).sum();
        if seen == self.totals[&key] {
            let mut buckets: Vec<(u64, u64)> = self.buckets.entries(ctx).collect();
            buckets.sort_unstable();
            let mut samples: Vec<u64> = self.samples.get(ctx).collect();
            samples.sort_unstable();
            let max = self.max.get(ctx).expect("a value was added");
            let mean = self.mean.get(ctx).expect("a value was added");
            out.collect((
                key,
                Final {
                    buckets,
                    samples,
                    max,
                    mean,
                },
            ));
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.map(&mut self.buckets);
        states.list(&mut self.samples);
        states.reducing(&mut self.max);
        states.aggregating(&mut self.mean);
    }
}

/// Records every key's report as it arrives (a replay overwrites it with
/// the same report).
struct FinalSink(Finals);

impl Sink for FinalSink {
    type In = (u64, Final);

    fn invoke(&mut self, (key, report): (u64, Final)) {
        self.0.lock().unwrap().insert(key, report);
    }
}

/// The model: every key's final state over records `(splitmix64(i) % keys,
/// i)`, and its record count.
fn model(n: u64, keys: u64) -> (HashMap<u64, Final>, HashMap<u64, u64>) {
    let mut finals: HashMap<u64, (HashMap<u64, u64>, Final, u64)> = HashMap::new();
    for i in 0..n {
        let (buckets, f, sum) = finals.entry(splitmix64(i) % keys).or_default();
        *buckets.entry(i % BUCKETS).or_default() += 1;
        if i % SAMPLE == 0 {
            f.samples.push(i);
        }
        f.max = f.max.max(i);
        *sum += i;
    }
    let mut totals = HashMap::new();
    let finals = finals
        .into_iter()
        .map(|(k, (buckets, mut f, sum))| {
            let count: u64 = buckets.values().sum();
            totals.insert(k, count);
            f.buckets = buckets.into_iter().collect();
            f.buckets.sort_unstable();
            f.samples.sort_unstable();
            f.mean = sum / count;
            (k, f)
        })
        .collect();
    (finals, totals)
}

#[test]
fn map_list_reducing_and_aggregating_state_restore_exactly_after_a_failure() {
    let dir = temp_dir("state-kinds");
    let (n, keys) = (200_000, 300);
    let (want, totals) = model(n, keys);
    let totals = Arc::new(totals);
    let finals: Finals = Arc::new(Mutex::new(HashMap::new()));
    let armed = Arc::new(AtomicBool::new(true));
    let into = finals.clone();
    let job = JobGraph::new("state-kinds");
    // 200 records/ms: the failure comes ~600 ms in, so that a checkpoint
    // has completed before it even on a loaded CI machine (at 400/ms one
    // run restarted without any).
    job.source("paced", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, keys, 200)
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("all-kinds", move |_: &SubtaskInfo| AllKinds {
        buckets: KeyedMapState::new("buckets"),
        samples: KeyedListState::new("samples"),
        max: KeyedReducingState::new("max", u64::max as fn(u64, u64) -> u64),
        mean: KeyedAggregatingState::new("mean", Mean),
        totals: totals.clone(),
        fail_at: 120_001,
        armed: armed.clone(),
    })
    .sink("finals", move |_: &SubtaskInfo| FinalSink(into.clone()));
    let mut o = options(2).with_checkpointing(Duration::from_millis(15), &dir);
    o.checkpointing.as_mut().unwrap().coordinator.num_retained = 1;
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(job, &o);
    assert_eq!(result.restarts, 1, "the injected failure restarted the job");
    let restored = result.restored.expect("the second attempt restored");
    assert!(
        restored.state_bytes > 0,
        "restored a checkpoint holding state: {restored:?}"
    );
    let got = finals.lock().unwrap();
    assert_eq!(got.len(), want.len(), "every key reported its final state");
    for (k, f) in &want {
        assert_eq!(got.get(k), Some(f), "key {k}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
