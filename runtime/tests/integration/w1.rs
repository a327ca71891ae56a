//! W1 keyed-count end to end at several worker counts, built with the public
//! API and checked against a closed-form reference.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use weir_runtime::build::ChainBuilder;
use weir_runtime::{
    Collector, ExecutionOptions, JobGraph, KeyContext, KeyedProcessFunction, KeyedValueState,
    SequenceSource, Sink, Stream, SubtaskInfo,
};

use crate::{options, run_ok, splitmix64, M};

/// The independent reference of W1 over records `(splitmix64(i) % k, i)`,
/// `i` in `0..n`.
pub struct Reference {
    /// Per key: (count, wrapping sum of the values).
    pub totals: HashMap<u64, (u64, u64)>,
    /// `Σ_keys c·key·M + c(c+1)/2`, wrapping: the closed form of the sinks'
    /// fold `Σ_records key·M + count`.
    pub checksum: u64,
}

fn compute_reference(n: u64, k: u64) -> Reference {
    let mut totals: HashMap<u64, (u64, u64)> = HashMap::new();
    for i in 0..n {
        let t = totals.entry(splitmix64(i) % k).or_default();
        t.0 += 1;
        t.1 = t.1.wrapping_add(i);
    }
    let checksum = totals.iter().fold(0u64, |acc, (&key, &(c, _))| {
        acc.wrapping_add(c.wrapping_mul(key).wrapping_mul(M))
            .wrapping_add(c.wrapping_mul(c + 1) / 2)
    });
    Reference { totals, checksum }
}

/// References already computed, by `(n, k)`.
type ReferenceCache = Mutex<HashMap<(u64, u64), Arc<Reference>>>;

/// The reference for `(n, k)`, computed once per test binary.
pub fn reference(n: u64, k: u64) -> Arc<Reference> {
    static CACHE: OnceLock<ReferenceCache> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache
        .entry((n, k))
        .or_insert_with(|| Arc::new(compute_reference(n, k)))
        .clone()
}

/// W1's keyed operator: per key `count += 1; sum += value`, emitting
/// `(key, count, sum)` on every record.
pub struct CountAndSum {
    totals: KeyedValueState<u64, (u64, u64)>,
}

impl CountAndSum {
    pub fn new() -> Self {
        Self {
            totals: KeyedValueState::new("count-and-sum"),
        }
    }
}

impl KeyedProcessFunction for CountAndSum {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, u64, u64);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (key, value): (u64, u64),
        out: &mut C,
    ) {
        assert_eq!(*ctx.key(), key, "the key context holds the record's key");
        let (count, sum) = self.totals.value(ctx).unwrap_or((0, 0));
        let next = (count + 1, sum.wrapping_add(value));
        self.totals.update(ctx, next);
        out.collect((key, next.0, next.1));
    }
}

/// What one checksum sink subtask saw.
pub struct SinkSummary {
    pub records: u64,
    pub checksum: u64,
    /// Last `(count, sum)` received per key.
    pub last: HashMap<u64, (u64, u64)>,
}

/// Folds `checksum += key·M + count` and keeps each key's last totals;
/// optionally busy-spins per record to be a slow consumer.
pub struct ChecksumSink {
    summary: SinkSummary,
    spin: Duration,
    into: Arc<Mutex<Vec<SinkSummary>>>,
}

impl Sink for ChecksumSink {
    type In = (u64, u64, u64);

    fn invoke(&mut self, (key, count, sum): (u64, u64, u64)) {
        if !self.spin.is_zero() {
            let until = Instant::now() + self.spin;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        let s = &mut self.summary;
        s.records += 1;
        s.checksum = s
            .checksum
            .wrapping_add(key.wrapping_mul(M))
            .wrapping_add(count);
        s.last.insert(key, (count, sum));
    }

    fn finish(&mut self) {
        let summary = std::mem::replace(
            &mut self.summary,
            SinkSummary {
                records: 0,
                checksum: 0,
                last: HashMap::new(),
            },
        );
        self.into.lock().unwrap().push(summary);
    }
}

/// One W1 run: what to run and how.
pub struct W1Case {
    /// Records N.
    pub n: u64,
    /// Keys K.
    pub k: u64,
    pub options: ExecutionOptions,
    /// Busy-spin per record in the sink.
    pub sink_spin: Duration,
    /// 1: the source emits the records; otherwise the source emits
    /// `n / fan_out` seeds and a flat_map turns each into `fan_out` records.
    pub fan_out: u64,
}

impl W1Case {
    pub fn new(n: u64, k: u64, options: ExecutionOptions) -> Self {
        Self {
            n,
            k,
            options,
            sink_spin: Duration::ZERO,
            fan_out: 1,
        }
    }
}

fn keyed_count_into_sink<B: ChainBuilder<(u64, u64)>>(
    stream: Stream<'_, (u64, u64), B>,
    spin: Duration,
    into: Arc<Mutex<Vec<SinkSummary>>>,
) {
    stream
        .key_by(|r: &(u64, u64)| r.0)
        .process("count-and-sum", |_: &SubtaskInfo| CountAndSum::new())
        .sink("checksum", move |_: &SubtaskInfo| ChecksumSink {
            summary: SinkSummary {
                records: 0,
                checksum: 0,
                last: HashMap::new(),
            },
            spin,
            into: into.clone(),
        });
}

/// Builds and runs the case and checks everything against the reference.
pub fn check_w1(case: W1Case) {
    let (n, k) = (case.n, case.k);
    assert_eq!(n % case.fan_out, 0, "test setup: n divisible by fan_out");
    let summaries = Arc::new(Mutex::new(Vec::new()));
    let job = JobGraph::new("w1");
    if case.fan_out == 1 {
        let source = job.source("w1-source", move |info: &SubtaskInfo| {
            SequenceSource::new(info, n, move |i| (splitmix64(i) % k, i))
        });
        keyed_count_into_sink(source, case.sink_spin, summaries.clone());
    } else {
        let fan_out = case.fan_out;
        let fanned = job
            .source("seeds", move |info: &SubtaskInfo| {
                SequenceSource::new(info, n / fan_out, |i| i)
            })
            .flat_map("fan-out", move |seed: u64| {
                (seed * fan_out..(seed + 1) * fan_out).map(move |i| (splitmix64(i) % k, i))
            });
        keyed_count_into_sink(fanned, case.sink_spin, summaries.clone());
    }

    let result = run_ok(job, &case.options);
    let expected = reference(n, k);

    let summaries = std::mem::take(&mut *summaries.lock().unwrap());
    let sink_parallelism = case.options.workers;
    assert_eq!(
        summaries.len(),
        sink_parallelism,
        "every sink subtask finishes exactly once"
    );
    let records: u64 = summaries.iter().map(|s| s.records).sum();
    assert_eq!(records, n, "records into the sinks");
    assert_eq!(
        result.metrics.total_sink_records(),
        n,
        "sink records reported in the job's metrics"
    );
    let checksum = summaries
        .iter()
        .fold(0u64, |acc, s| acc.wrapping_add(s.checksum));
    assert_eq!(
        checksum, expected.checksum,
        "W1 checksum (n={n}, k={k}, workers={})",
        case.options.workers
    );

    let mut last: HashMap<u64, (u64, u64)> = HashMap::new();
    for s in &summaries {
        for (&key, &totals) in &s.last {
            assert!(
                last.insert(key, totals).is_none(),
                "key {key} reached more than one sink subtask"
            );
        }
    }
    assert_eq!(last.len(), expected.totals.len(), "distinct keys");
    for (key, want) in &expected.totals {
        assert_eq!(last.get(key), Some(want), "final (count, sum) of key {key}");
    }
}

#[test]
fn w1_one_worker() {
    check_w1(W1Case::new(1_000_000, 1_000, options(1)));
}

#[test]
fn w1_two_workers_pinned_to_cores() {
    let mut options = options(2);
    options.pin_cores = true;
    check_w1(W1Case::new(1_000_000, 1_000, options));
}

#[test]
fn w1_three_workers() {
    check_w1(W1Case::new(1_000_000, 1_000, options(3)));
}

#[test]
fn w1_four_workers_share_two_cores() {
    check_w1(W1Case::new(1_000_000, 1_000, options(4)));
}

#[test]
fn w1_many_keys_one_worker() {
    check_w1(W1Case::new(200_000, 100_000, options(1)));
}

#[test]
fn w1_many_keys_three_workers() {
    check_w1(W1Case::new(200_000, 100_000, options(3)));
}

#[test]
fn w1_reference_closed_form_agrees_with_a_direct_fold_on_a_small_case() {
    // Guards the test's own reference: for a small, fully ordered run the
    // sinks' fold over (key, running count) equals the closed form.
    let (n, k) = (5_000, 37);
    let mut counts: HashMap<u64, u64> = HashMap::new();
    let mut fold = 0u64;
    for i in 0..n {
        let key = splitmix64(i) % k;
        let c = counts.entry(key).or_default();
        *c += 1;
        fold = fold.wrapping_add(key.wrapping_mul(M)).wrapping_add(*c);
    }
    assert_eq!(compute_reference(n, k).checksum, fold);
}
