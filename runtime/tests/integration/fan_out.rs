//! Streams used more than once, side outputs as streams, unions and
//! partitionings, end to end.
//!
//! - One source feeding five queries (tumbling, sliding and session
//!   windows, a filter, a keyed count) in one job gives exactly what five
//!   jobs, each reading the source again, give.
//! - Side outputs of a process function and a keyed process function are
//!   streams: keyed, counted in keyed state, sunk; a tag read twice feeds
//!   both readers; a fan-out job restored after a failure from a
//!   checkpoint counts every record once in each branch.
//! - A union of three sources of different parallelism sees every record
//!   of each once; so does every partitioning, each to the subtasks it
//!   promises; a forward edge between different parallelisms is refused.

use std::collections::BTreeMap;
use std::time::Duration;

use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::{
    AggregateFunction, Collector, EventTimeSessionWindows, JobGraph, KeyContext,
    KeyedProcessFunction, KeyedStates, KeyedValueState, OutputTag, ProcessContext, ProcessFunction,
    SequenceSource, SideOutput, SideOutputs, SlidingEventTimeWindows, SubtaskInfo, TimeWindow,
    TumblingEventTimeWindows, WatermarkStrategy,
};

use crate::{
    collect_into, options, run_job, run_ok, temp_dir, Collected, DigestSink, Digests,
    InjectedFailure,
};

/// Records in all.
const N: u64 = 30_000;
/// Keys.
const KEYS: u64 = 17;

type Rec = (u64, i64, u64);

/// Record `i`: key `i % KEYS`, a timestamp up to 20 ms out of order
/// (`i / 10` minus a jitter below 20), value `i`.
fn record(i: u64) -> Rec {
    let jitter = (crate::splitmix64(i) % 20) as i64;
    (i % KEYS, (i / 10) as i64 - jitter + 20, i)
}

/// Watermarks 25 ms behind the largest timestamp: no record is late.
fn strategy() -> WatermarkStrategy<impl Fn(&Rec) -> i64 + Clone + Send + Sync> {
    WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(25))
        .with_timestamp_assigner(|r: &Rec| r.1)
}

/// Count and sum of the values.
#[derive(Clone)]
struct CountSum;

impl AggregateFunction for CountSum {
    type In = Rec;
    type Acc = (u64, u64);
    type Out = (u64, u64);
    fn create_accumulator(&self) -> (u64, u64) {
        (0, 0)
    }
    fn add(&self, r: Rec, (c, s): (u64, u64)) -> (u64, u64) {
        (c + 1, s + r.2)
    }
    fn get_result(&self, acc: &(u64, u64)) -> (u64, u64) {
        *acc
    }
    fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

/// Keeps a count per key in keyed state and emits `(key, count)`.
#[derive(Default)]
struct Count(Option<KeyedValueState<u64, u64>>);

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
        let state = self.0.get_or_insert_with(|| KeyedValueState::new("count"));
        let n = state.value_mut_or_insert_with(ctx, || 0);
        *n += 1;
        out.collect((*ctx.key(), *n));
    }
    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(self.0.get_or_insert_with(|| KeyedValueState::new("count")));
    }
}

/// The largest count per key of a keyed count's output.
fn final_counts(records: Vec<(u64, u64)>) -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for (k, n) in records {
        let e = m.entry(k).or_insert(0);
        *e = n.max(*e);
    }
    m
}

/// A window's `(key, start, (count, sum))`.
type Fired = (u64, TimeWindow, (u64, u64));

/// The five queries' outputs, sorted.
#[derive(Debug, PartialEq)]
struct Five {
    tumbling: Vec<Fired>,
    sliding: Vec<Fired>,
    sessions: Vec<Fired>,
    multiples: Vec<Rec>,
    counts: BTreeMap<u64, u64>,
}

/// Where the five queries' sinks collect.
struct Sinks {
    tumbling: std::sync::Arc<Collected<Fired>>,
    sliding: std::sync::Arc<Collected<Fired>>,
    sessions: std::sync::Arc<Collected<Fired>>,
    multiples: std::sync::Arc<Collected<Rec>>,
    counts: std::sync::Arc<Collected<(u64, u64)>>,
}

impl Sinks {
    fn new() -> Self {
        Self {
            tumbling: Collected::new(),
            sliding: Collected::new(),
            sessions: Collected::new(),
            multiples: Collected::new(),
            counts: Collected::new(),
        }
    }

    fn take(&self) -> Five {
        use crate::sorted;
        Five {
            tumbling: sorted(self.tumbling.take_all()),
            sliding: sorted(self.sliding.take_all()),
            sessions: sorted(self.sessions.take_all()),
            multiples: sorted(self.multiples.take_all()),
            counts: final_counts(self.counts.take_all()),
        }
    }
}

/// Query `q` (0..5) of a stream of the records with event time.
macro_rules! query {
    ($q:expr, $stream:expr, $sinks:expr) => {
        match $q {
            0 => $stream
                .key_by(|r: &Rec| r.0)
                .window(TumblingEventTimeWindows::of(
                    Duration::from_millis(50),
                    |r: &Rec| r.1,
                ))
                .aggregate("tumbling", CountSum)
                .sink("tumbling-sink", collect_into(&$sinks.tumbling)),
            1 => $stream
                .key_by(|r: &Rec| r.0)
                .window(SlidingEventTimeWindows::of(
                    Duration::from_millis(100),
                    Duration::from_millis(50),
                    |r: &Rec| r.1,
                ))
                .aggregate("sliding", CountSum)
                .sink("sliding-sink", collect_into(&$sinks.sliding)),
            2 => $stream
                // Sparse keys so that sessions end: key 3 only every 40th
                // record... a gap of 3 ms splits them at the jitter.
                .filter("sparse", |r: &Rec| r.2 % 7 == 0)
                .key_by(|r: &Rec| r.0)
                .window(EventTimeSessionWindows::with_gap(
                    Duration::from_millis(3),
                    |r: &Rec| r.1,
                ))
                .aggregate("sessions", CountSum)
                .sink("sessions-sink", collect_into(&$sinks.sessions)),
            3 => $stream
                .filter("multiples", |r: &Rec| r.2 % 3 == 0)
                .sink("multiples-sink", collect_into(&$sinks.multiples)),
            _ => $stream
                .map("pairs", |r: Rec| (r.0, r.2))
                .key_by(|p: &(u64, u64)| p.0)
                .process("count", |_: &SubtaskInfo| Count::default())
                .sink("count-sink", collect_into(&$sinks.counts)),
        }
    };
}

#[test]
fn one_job_with_fan_out_gives_what_five_jobs_give() {
    // Five jobs, each reading the source again.
    let separate = Sinks::new();
    for q in 0..5 {
        let job = JobGraph::new(format!("query-{q}"));
        let events = job
            .source("events", |info: &SubtaskInfo| {
                SequenceSource::new(info, N, record)
            })
            .assign_timestamps_and_watermarks(strategy());
        query!(q, events, separate);
        run_ok(job, &options(2));
    }
    let want = separate.take();
    assert!(want.tumbling.len() > 100 && want.sessions.len() > 100);
    assert_eq!(want.counts.values().sum::<u64>(), N);

    // One job: the source read once, shared by the five.
    let shared = Sinks::new();
    let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let reads = read.clone();
    let job = JobGraph::new("five-queries");
    let events = job
        .source("events", move |info: &SubtaskInfo| {
            let reads = reads.clone();
            SequenceSource::new(info, N, move |i| {
                reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                record(i)
            })
        })
        .assign_timestamps_and_watermarks(strategy())
        .share();
    for q in 0..5 {
        query!(q, events.branch(), shared);
    }
    run_ok(job, &options(2));
    assert_eq!(shared.take(), want);
    assert_eq!(
        read.load(std::sync::atomic::Ordering::Relaxed),
        N,
        "the source made each record once for the five queries"
    );
}

/// Splits the records: even values to the main output, odd ones to the
/// `odd` side output as `(key, value)`.
struct Split {
    odd: SideOutput<(u64, u64)>,
}

impl ProcessFunction for Split {
    type In = Rec;
    type Out = Rec;
    fn process<C: Collector<Rec>>(&mut self, _: &ProcessContext, r: Rec, out: &mut C) {
        if r.2.is_multiple_of(2) {
            out.collect(r);
        } else {
            self.odd.emit((r.0, r.2));
        }
    }
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        outputs.connect(&self.odd);
    }
}

/// Counts per key; every 100th count per key is also an alert on the
/// `alerts` side output, as text.
struct CountWithAlerts {
    counts: KeyedValueState<u64, u64>,
    alerts: SideOutput<String>,
}

impl KeyedProcessFunction for CountWithAlerts {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, u64);
    fn process<C: Collector<(u64, u64)>>(
        &mut self,
        ctx: &KeyContext<u64>,
        _: (u64, u64),
        out: &mut C,
    ) {
        let n = self.counts.value_mut_or_insert_with(ctx, || 0);
        *n += 1;
        if n.is_multiple_of(100) {
            self.alerts.emit(format!("key {} reached {}", ctx.key(), n));
        }
        out.collect((*ctx.key(), *n));
    }
    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.counts);
    }
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        outputs.connect(&self.alerts);
    }
}

/// The side-output job: its sinks and the failure it injects.
struct SideJob {
    /// Digests of the even records (checkpointed sinks: exactly once
    /// across a restore).
    evens: Digests,
    odd_counts: std::sync::Arc<Collected<(u64, u64)>>,
    /// Digests of the odd records of the tag's second reader.
    odd_copy: Digests,
    alerts: std::sync::Arc<Collected<String>>,
}

fn side_job(fail: InjectedFailure, per_ms: u64) -> (JobGraph, SideJob) {
    let sinks = SideJob {
        evens: Digests::default(),
        odd_counts: Collected::new(),
        odd_copy: Digests::default(),
        alerts: Collected::new(),
    };
    let odd = OutputTag::<(u64, u64)>::new("odd");
    let alerts = OutputTag::<String>::new("alerts");
    let job = JobGraph::new("side-outputs");
    let split = job
        .source("events", move |info: &SubtaskInfo| {
            crate::checkpoint::PacedSource::new(info, N, KEYS, per_ms)
        })
        .map("records", move |(_, i): (u64, u64)| {
            if fail.hits(i) {
                panic!("injected failure at record {i}");
            }
            record(i)
        })
        .process("split", |_: &SubtaskInfo| Split {
            odd: SideOutput::new(&OutputTag::new("odd")),
        });
    // The odd values: keyed and counted in keyed state, with alerts as a
    // side output of their own.
    let counted = split
        .get_side_output(&odd)
        .key_by(|p: &(u64, u64)| p.0)
        .process("odd-count", |_: &SubtaskInfo| CountWithAlerts {
            counts: KeyedValueState::new("counts"),
            alerts: SideOutput::new(&OutputTag::new("alerts")),
        });
    counted
        .get_side_output(&alerts)
        .sink("alerts-sink", collect_into(&sinks.alerts));
    counted.sink("odd-count-sink", collect_into(&sinks.odd_counts));
    // A second reader of the same tag gets every record too.
    split.get_side_output(&odd).sink("odd-copy-sink", {
        let into = sinks.odd_copy.clone();
        move |info: &SubtaskInfo| {
            DigestSink::new(info, |p: &(u64, u64)| crate::splitmix64(p.1), &into)
        }
    });
    split.sink("evens-sink", {
        let into = sinks.evens.clone();
        move |info: &SubtaskInfo| DigestSink::new(info, |r: &Rec| crate::splitmix64(r.2), &into)
    });
    (job, sinks)
}

/// The digest a [`DigestSink`] makes of the records numbered `values`.
fn digest_of(values: impl Iterator<Item = u64>) -> [u64; 3] {
    let mut d = [0u64; 3];
    for v in values {
        let h = crate::splitmix64(v);
        d[0] += 1;
        d[1] = d[1].wrapping_add(h);
        d[2] ^= h;
    }
    d
}

/// The digests of all sink subtasks folded into one.
fn total(digests: &Digests) -> [u64; 3] {
    let mut d = [0u64; 3];
    for (_, s) in digests.lock().unwrap().iter() {
        d[0] += s[0];
        d[1] = d[1].wrapping_add(s[1]);
        d[2] ^= s[2];
    }
    d
}

/// What the side-output job must give, from the records alone.
fn check_side_job(sinks: &SideJob) {
    assert_eq!(
        total(&sinks.evens),
        digest_of((0..N).filter(|i| i % 2 == 0)),
        "evens"
    );
    assert_eq!(
        total(&sinks.odd_copy),
        digest_of((0..N).filter(|i| i % 2 == 1)),
        "odd copy"
    );
    let mut per_key = BTreeMap::new();
    for i in (0..N).filter(|i| i % 2 == 1) {
        *per_key.entry(record(i).0).or_insert(0u64) += 1;
    }
    assert_eq!(final_counts(sinks.odd_counts.take_all()), per_key);
    let mut alerts = sinks.alerts.take_all();
    alerts.sort();
    let mut want_alerts: Vec<String> = per_key
        .iter()
        .flat_map(|(k, n)| (1..=n / 100).map(move |m| format!("key {k} reached {}", m * 100)))
        .collect();
    want_alerts.sort();
    assert_eq!(alerts, want_alerts);
}

#[test]
fn side_outputs_are_streams_that_are_keyed_counted_and_sunk() {
    let (job, sinks) = side_job(InjectedFailure::never(), 1_000_000);
    run_ok(job, &options(2));
    check_side_job(&sinks);
}

#[test]
fn a_fan_out_job_restored_from_a_checkpoint_counts_every_record_once_per_branch() {
    let dir = temp_dir("fan-out-failover");
    let (job, sinks) = side_job(InjectedFailure::at(N / 4, &dir), 20);
    let mut o = options(2).with_checkpointing(Duration::from_millis(30), &dir);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(job, &o);
    assert_eq!(
        result.restarts, 1,
        "the injected failure restarted the job; checkpoints: {:?}, elapsed {:?}",
        result.checkpoints, result.elapsed
    );
    assert!(result.restored.is_some());
    // The digest sinks of the main output and of the side output's
    // second reader are checkpointed: each record once.
    assert_eq!(
        total(&sinks.evens),
        digest_of((0..N).filter(|i| i % 2 == 0)),
        "evens"
    );
    assert_eq!(
        total(&sinks.odd_copy),
        digest_of((0..N).filter(|i| i % 2 == 1)),
        "odd copy"
    );
    // The collecting sinks keep what they received since the restore
    // (their own state is not checkpointed): the keyed counts (state in a
    // side branch) say each odd record was counted once.
    let counts = final_counts(sinks.odd_counts.take_all());
    let mut per_key = BTreeMap::new();
    for i in (0..N).filter(|i| i % 2 == 1) {
        *per_key.entry(record(i).0).or_insert(0u64) += 1;
    }
    assert_eq!(counts, per_key, "each odd record counted once");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_union_of_three_sources_of_different_parallelism_sees_every_record_once() {
    let counts = Collected::new();
    let job = JobGraph::new("union");
    let a = job
        .source("a", |info: &SubtaskInfo| {
            SequenceSource::new(info, 1_000, |i| (i % 5, i))
        })
        .parallelism(1);
    let b = job.source("b", |info: &SubtaskInfo| {
        SequenceSource::new(info, 2_000, |i| (i % 5, 10_000 + i))
    });
    let c = job
        .source("c", |info: &SubtaskInfo| {
            SequenceSource::new(info, 3_000, |i| (i % 5, 20_000 + i))
        })
        .parallelism(3);
    a.union(b)
        .union(c)
        .filter("all", |_: &(u64, u64)| true)
        .parallelism(2)
        .key_by(|p: &(u64, u64)| p.0)
        .process("count", |_: &SubtaskInfo| Count::default())
        .sink("counts", collect_into(&counts));
    run_ok(job, &options(2));
    let got = final_counts(counts.take_all());
    assert_eq!(got, (0..5).map(|k| (k, 1_200)).collect());
}

#[test]
fn every_partitioning_delivers_each_record_where_it_says() {
    const M: u64 = 10_000;
    // (name, receivers, check of (receiver, record))
    type Check = fn(usize, u64) -> bool;
    let cases: [(&str, usize, Check); 5] = [
        ("rebalance", 3, |_, _| true),
        ("shuffle", 3, |_, _| true),
        // 2 senders (record i from sender i % 2) to 4 receivers: sender 0
        // feeds 0 and 1, sender 1 feeds 2 and 3.
        ("rescale", 4, |r, i| r / 2 == (i % 2) as usize),
        ("forward", 2, |r, i| r == (i % 2) as usize),
        ("custom", 3, |r, i| r == (i % 7 % 3) as usize),
    ];
    for (name, receivers, check) in cases {
        let got = Collected::new();
        let job = JobGraph::new(format!("partition-{name}"));
        let numbers = job
            .source("numbers", |info: &SubtaskInfo| {
                SequenceSource::new(info, M, |i| i)
            })
            .parallelism(2);
        let partitioned = match name {
            "rebalance" => numbers.rebalance(),
            "shuffle" => numbers.shuffle(),
            "rescale" => numbers.rescale(),
            "forward" => numbers.forward(),
            _ => numbers.partition_custom(|k: &u64, n| (*k as usize) % n, |i: &u64| i % 7),
        };
        partitioned
            .parallelism(receivers)
            .sink("collect", collect_into(&got));
        run_ok(job, &options(2));
        let mut all = Vec::new();
        let mut per_receiver = vec![0u64; receivers];
        for (info, records) in got.take_parts() {
            for i in records {
                assert!(
                    check(info.index, i),
                    "{name}: record {i} reached subtask {}",
                    info.index
                );
                per_receiver[info.index] += 1;
                all.push(i);
            }
        }
        all.sort_unstable();
        assert_eq!(all, (0..M).collect::<Vec<_>>(), "{name}: every record once");
        if name == "rebalance" || name == "shuffle" {
            for n in per_receiver {
                assert!(n > M / 3 - M / 10, "{name}: uneven share {n}");
            }
        }
    }

    // Broadcast: every record at every subtask.
    let got = Collected::new();
    let job = JobGraph::new("partition-broadcast");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, M, |i| i)
    })
    .broadcast_all()
    .parallelism(3)
    .sink("collect", collect_into(&got));
    run_ok(job, &options(2));
    let parts = got.take_parts();
    assert_eq!(parts.len(), 3);
    for (_, mut records) in parts {
        records.sort_unstable();
        assert_eq!(records, (0..M).collect::<Vec<_>>());
    }
}

/// `disable_chaining` puts the operators it builds in a stage of their
/// own (source | map | sink: three stages where chaining makes one), and
/// the records pass unchanged through it.
#[test]
fn disable_chaining_runs_the_operators_in_their_own_stage() {
    const M: u64 = 5_000;
    let got = Collected::new();
    let job = JobGraph::new("disable-chaining");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, M, |i| i)
    })
    .disable_chaining(|s| s.map("double", |i: u64| i * 2))
    .sink("collect", collect_into(&got));
    assert_eq!(job.stage_count(), 3, "source, map and sink stages");
    run_ok(job, &options(2));
    let mut all: Vec<u64> = got.take_parts().into_iter().flat_map(|(_, r)| r).collect();
    all.sort_unstable();
    assert_eq!(all, (0..M).map(|i| i * 2).collect::<Vec<_>>());

    let chained = JobGraph::new("chained");
    chained
        .source("numbers", |info: &SubtaskInfo| {
            SequenceSource::new(info, M, |i| i)
        })
        .map("double", |i: u64| i * 2)
        .sink("collect", collect_into(&Collected::new()));
    assert_eq!(chained.stage_count(), 1, "chained: one stage");
}

#[test]
fn a_forward_edge_between_different_parallelisms_is_refused() {
    let got = Collected::<u64>::new();
    let job = JobGraph::new("forward-mismatch");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| i)
    })
    .parallelism(2)
    .forward()
    .parallelism(3)
    .sink("collect", collect_into(&got));
    let e = run_job(job, &options(2)).unwrap_err().to_string();
    assert!(
        e.contains("forward edge") && e.contains("parallelism 2") && e.contains("parallelism 3"),
        "{e}"
    );
}

#[test]
fn a_side_output_taken_after_a_map_is_refused_by_name() {
    let got = Collected::<u64>::new();
    let job = JobGraph::new("no-side-output");
    let mapped = job
        .source("numbers", |info: &SubtaskInfo| {
            SequenceSource::new(info, 10, |i| i)
        })
        .map("double", |i: u64| i * 2);
    mapped
        .get_side_output(&OutputTag::<u64>::new("nothing"))
        .sink("side", collect_into(&got));
    mapped.sink("main", collect_into(&Collected::new()));
    let e = run_job(job, &options(1)).unwrap_err().to_string();
    assert!(
        e.contains("has no side outputs") && e.contains("nothing"),
        "{e}"
    );
}
