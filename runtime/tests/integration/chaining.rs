//! Chained operators (`map`, `filter`, `flat_map`) before a key_by and after
//! a keyed operator: the sinks see exactly the multiset that applying the
//! same functions one after the other produces; so they do with the
//! stream boxed after every operator (`Stream::boxed`).

use std::collections::HashMap;

use weir_runtime::{
    BoxedStream, Collector, JobGraph, JobResult, KeyContext, KeyedProcessFunction, KeyedValueState,
    SequenceSource, SubtaskInfo,
};

use crate::{collect_into, options, run_ok, sorted, splitmix64, Collected};

const KEYS: u64 = 97;

fn pre_map(i: u64) -> (u64, u64) {
    (splitmix64(i) % KEYS, i)
}

fn pre_filter(r: &(u64, u64)) -> bool {
    r.1 % 7 != 3
}

fn pre_flat_map((key, v): (u64, u64)) -> Vec<(u64, u64)> {
    // 0 to 3 records per input: some records vanish here, some multiply.
    (0..v % 4).map(|j| (key, v * 10 + j)).collect()
}

fn post_map((key, v, seen): (u64, u64, u64)) -> String {
    format!("{key}:{v}:{seen}")
}

fn post_filter(s: &str) -> bool {
    !s.ends_with('5')
}

fn post_flat_map(s: String) -> Vec<String> {
    if s.len().is_multiple_of(2) {
        vec![s.to_uppercase(), s]
    } else {
        vec![s]
    }
}

/// Keeps each key's smallest value in keyed state and, when the input ends,
/// emits `(key, value, the key's smallest value)` for every record it got:
/// keyed state and end-of-input output, independent of arrival order.
struct AddKeyedMinimum {
    minimum: KeyedValueState<u64, u64>,
    buffered: Vec<(u64, u64)>,
}

impl KeyedProcessFunction for AddKeyedMinimum {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, u64, u64);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (key, v): (u64, u64),
        _out: &mut C,
    ) {
        let min = self.minimum.value_mut_or_insert_with(ctx, || u64::MAX);
        *min = (*min).min(v);
        self.buffered.push((key, v));
    }

    fn on_end_of_input<C: Collector<Self::Out>>(&mut self, out: &mut C) {
        let mut minimum: HashMap<u64, u64> = HashMap::new();
        for (key, min) in self.minimum.iter() {
            minimum.insert(*key, *min);
        }
        for (key, v) in self.buffered.drain(..) {
            out.collect((key, v, minimum[&key]));
        }
    }
}

/// What `map_filter_flat_map_around_a_keyed_operator`'s job gives for
/// records `0..n`: the same functions applied in sequence, with the keyed
/// step done by a HashMap.
fn around_a_keyed_operator(n: u64) -> Vec<String> {
    let keyed_input: Vec<(u64, u64)> = (0..n)
        .map(pre_map)
        .filter(pre_filter)
        .flat_map(pre_flat_map)
        .collect();
    let mut minimum: HashMap<u64, u64> = HashMap::new();
    for &(key, v) in &keyed_input {
        let m = minimum.entry(key).or_insert(u64::MAX);
        *m = (*m).min(v);
    }
    let want: Vec<String> = keyed_input
        .iter()
        .map(|&(key, v)| (key, v, minimum[&key]))
        .map(post_map)
        .filter(|s| post_filter(s))
        .flat_map(post_flat_map)
        .collect();
    assert!(want.len() > n as usize / 2, "test setup: a sizeable output");
    want
}

/// The sink's records (`got`) and the metrics' count equal the
/// sequential reference `want`, as multisets.
fn assert_matches_reference(
    result: &JobResult,
    got: Vec<String>,
    want: Vec<String>,
    workers: usize,
) {
    assert_eq!(
        result.metrics.total_sink_records(),
        want.len() as u64,
        "sink records in the metrics ({workers} workers)"
    );
    assert!(
        sorted(got) == sorted(want),
        "sink records differ from the sequential reference ({workers} workers)"
    );
}

/// Each sink subtask got its source subtask's `0..n` (every `workers`-th
/// number) through square, keep the odd ones, and `[x, x + 1]`, in order.
fn assert_each_subtask_in_order(got: &Collected<u64>, n: u64, workers: usize) {
    let parts = got.take_parts();
    assert_eq!(parts.len(), workers);
    for (info, records) in parts {
        let want: Vec<u64> = (info.index as u64..n)
            .step_by(workers)
            .map(|i| i * i)
            .filter(|x| x % 2 == 1)
            .flat_map(|x| [x, x + 1])
            .collect();
        assert_eq!(records, want, "sink subtask {}", info.index);
    }
}

#[test]
fn map_filter_flat_map_around_a_keyed_operator() {
    let n = 60_000u64;
    for workers in [1, 3] {
        let got = Collected::new();
        let job = JobGraph::new("chained");
        job.source("numbers", move |info: &SubtaskInfo| {
            SequenceSource::new(info, n, |i| i)
        })
        .map("pre-map", pre_map)
        .filter("pre-filter", pre_filter)
        .flat_map("pre-flat-map", pre_flat_map)
        .key_by(|r: &(u64, u64)| r.0)
        .process("keyed-minimum", |_: &SubtaskInfo| AddKeyedMinimum {
            minimum: KeyedValueState::new("minimum"),
            buffered: Vec::new(),
        })
        .map("post-map", post_map)
        .filter("post-filter", |s: &String| post_filter(s))
        .flat_map("post-flat-map", post_flat_map)
        .sink("collect", collect_into(&got));
        let result = run_ok(job, &options(workers));
        let want = around_a_keyed_operator(n);

        assert_matches_reference(&result, got.take_all(), want, workers);
    }
}

#[test]
fn chain_without_key_by_keeps_each_subtasks_order() {
    // source -> map -> filter -> flat_map -> sink is one stage: each sink
    // subtask sees its source subtask's records in order.
    let n = 10_000u64;
    let workers = 2;
    let got = Collected::new();
    let job = JobGraph::new("forward-only");
    job.source("numbers", move |info: &SubtaskInfo| {
        SequenceSource::new(info, n, |i| i)
    })
    .map("square", |i: u64| i * i)
    .filter("odd", |x: &u64| x % 2 == 1)
    .flat_map("twice", |x: u64| [x, x + 1])
    .sink("collect", collect_into(&got));
    run_ok(job, &options(workers));

    assert_each_subtask_in_order(&got, n, workers);
}

/// The job of `map_filter_flat_map_around_a_keyed_operator` with the
/// stream boxed after every operator (as the SQL planner builds its jobs):
/// the same records, in as many stages (a boxed stream goes on in its
/// chain), whether runs of records or single ones cross the boxes.
#[test]
fn streams_boxed_after_every_operator_give_what_the_unboxed_give() {
    let n = 60_000u64;
    for workers in [1, 3] {
        let got = Collected::new();
        let job = JobGraph::new("boxed");
        let numbers: BoxedStream<'_, u64> = job
            .source("numbers", move |info: &SubtaskInfo| {
                SequenceSource::new(info, n, |i| i)
            })
            .boxed();
        numbers
            .map("pre-map", pre_map)
            .boxed()
            .filter("pre-filter", pre_filter)
            .boxed()
            .flat_map("pre-flat-map", pre_flat_map)
            .boxed()
            .key_by(|r: &(u64, u64)| r.0)
            .process("keyed-minimum", |_: &SubtaskInfo| AddKeyedMinimum {
                minimum: KeyedValueState::new("minimum"),
                buffered: Vec::new(),
            })
            .boxed()
            .map("post-map", post_map)
            .boxed()
            .filter("post-filter", |s: &String| post_filter(s))
            .boxed()
            .boxed()
            .flat_map("post-flat-map", post_flat_map)
            .boxed()
            .sink("collect", collect_into(&got));
        assert_eq!(job.stage_count(), 2, "a boxed stream starts no stage");
        let result = run_ok(job, &options(workers));
        let want = around_a_keyed_operator(n);
        assert_matches_reference(&result, got.take_all(), want, workers);
    }
}

#[test]
fn a_boxed_chain_without_key_by_keeps_each_subtasks_order() {
    let n = 10_000u64;
    let workers = 2;
    let got = Collected::new();
    let job = JobGraph::new("forward-only-boxed");
    job.source("numbers", move |info: &SubtaskInfo| {
        SequenceSource::new(info, n, |i| i)
    })
    .boxed()
    .map("square", |i: u64| i * i)
    .boxed()
    .filter("odd", |x: &u64| x % 2 == 1)
    .boxed()
    .flat_map("twice", |x: u64| [x, x + 1])
    .boxed()
    .sink("collect", collect_into(&got));
    assert_eq!(job.stage_count(), 1);
    run_ok(job, &options(workers));

    assert_each_subtask_in_order(&got, n, workers);
}
