//! The checkpoint a fixed job writes, byte for byte: one deterministic
//! bounded job whose only checkpoint is the final one, keeping every kind
//! of checkpointed state that can stay non-empty at the end (keyed value,
//! map, list, reducing and aggregating state, TTL value, map and list
//! state, pending processing-time timers, operator list and union list
//! state of a source and a process function, a keyed broadcast operator's
//! keyed state, a two-input operator's state). The checksum of its segment
//! is pinned: a change that alters how any state kind is written or
//! restored shows here.
//!
//! Determinism: 1 worker, parallelism 1; every state is written from one
//! input channel (whose record order is fixed), never from the interleaving
//! of two; TTL states use a `ManualClock` driven by the record index;
//! timers a fixed clock. Only the tasks on the numbers -> all-kinds ->
//! rule-apply -> co-join path write blocks, each after the one before it,
//! so the order of blocks in the segment is fixed too.
//!
//! The checksum was the same before the runtime's layered restructure
//! (commit a054281) and after it. A change that means to alter the format
//! updates [`SEGMENT_FNV1A`] and says so.

use std::rc::Rc;
use std::time::Duration;

use weir_runtime::{
    execute, AggregateFunction, BroadcastState, Collector, ExecutionOptions, JobGraph, KeyContext,
    KeyedAggregatingState, KeyedBroadcastProcessFunction, KeyedCoProcessFunction, KeyedListState,
    KeyedMapState, KeyedProcessFunction, KeyedReducingState, KeyedStates, KeyedTimerService,
    KeyedTtlValueState, KeyedValueState, ManualClock, OperatorListState, OperatorStates,
    ProcessContext, ProcessFunction, RestartStrategy, SequenceSource, Sink, Source, SourcePoll,
    StateTtlConfig, SubtaskInfo, TimeDomain, TimerQueues, TtlClock, UnionListState, UpdateType,
};

use crate::splitmix64;

// Records and keys of the main source; records of the co-process stage's
// side input; rule events of the broadcast source; the TTL clock's start
// (ms, +1 per record); where processing-time timers go (never due: the
// timer service's clock says 0).
const N: u64 = 200_000;
const K: u64 = 5_000;
const SIDE_N: u64 = 20_000;
const RULES: u64 = 64;
const T0: u64 = 1_000_000;
const FAR: i64 = 4_000_000_000_000;

// ----------------------------------------------------------------- source

/// Emits `(splitmix64(i) % K, i)` for `i` in `0..N`; its progress is operator
/// list state (which stays non-empty: finished ranges are kept).
struct Numbers {
    progress: OperatorListState<(u64, u64)>,
}

impl Source for Numbers {
    type Out = (u64, u64);

    fn poll_next<C: Collector<(u64, u64)>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        let (mut next, end) = self.progress.get(0).expect("progress");
        if next >= end {
            return SourcePoll::Finished;
        }
        let mut n = 0;
        while n < budget && next < end && out.is_available() {
            out.collect((splitmix64(next) % K, next));
            next += 1;
            n += 1;
        }
        self.progress.set(0, (next, end));
        SourcePoll::Emitted(n)
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        Vec::new()
    }

    fn restore_position(&mut self, _position: &[u8]) -> Result<(), String> {
        Ok(())
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        states.list(&mut self.progress);
    }
}

// ------------------------------------------------- keyed: every state kind

/// `(sum, count)` with the integer mean as result.
struct Mean;

impl AggregateFunction for Mean {
    type In = u64;
    type Acc = (u64, u64);
    type Out = u64;
    fn create_accumulator(&self) -> (u64, u64) {
        (0, 0)
    }
    fn add(&self, v: u64, (s, n): (u64, u64)) -> (u64, u64) {
        (s + v, n + 1)
    }
    fn get_result(&self, &(s, n): &(u64, u64)) -> u64 {
        s / n.max(1)
    }
    fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

struct AllKinds {
    clock: ManualClock,
    count_sum: KeyedValueState<u64, (u64, u64)>,
    buckets: KeyedMapState<u64, u64, u64>,
    samples: KeyedListState<u64, u64>,
    max: KeyedReducingState<u64, u64, fn(u64, u64) -> u64>,
    mean: KeyedAggregatingState<u64, Mean>,
    last: KeyedTtlValueState<u64, u64>,
    ttl_map: KeyedMapState<u64, u64, u64>,
    ttl_list: KeyedListState<u64, u64>,
    timers: KeyedTimerService<u64>,
}

impl AllKinds {
    fn new() -> Self {
        let clock = ManualClock::new(T0);
        let c: Rc<dyn TtlClock> = Rc::new(clock.clone());
        // Without background cleanup: its tick runs on wall-clock time, so
        // how much of an expired table it had swept (and shrunk) by the
        // final checkpoint would vary from run to run. The snapshot leaves
        // expired entries out either way; the bytes pinned here are those
        // of the tables as the records left them.
        let hour = StateTtlConfig::new(Duration::from_secs(3600)).disable_cleanup_in_background();
        // 100 s of the clock = 100_000 records: the older half of the TTL
        // list has expired at the final checkpoint (deterministically).
        let short = StateTtlConfig::new(Duration::from_secs(100)).disable_cleanup_in_background();
        Self {
            count_sum: KeyedValueState::new("count_sum"),
            buckets: KeyedMapState::new("buckets"),
            samples: KeyedListState::new("samples"),
            max: KeyedReducingState::new("max", u64::max as fn(u64, u64) -> u64)
                .with_ttl_clock(hour, c.clone()),
            mean: KeyedAggregatingState::new("mean", Mean),
            last: KeyedTtlValueState::new("last_ttl", hour)
                .with_ttl_clock(hour.with_update_type(UpdateType::OnReadAndWrite), c.clone()),
            ttl_map: KeyedMapState::new("ttl_map").with_ttl_clock(hour, c.clone()),
            ttl_list: KeyedListState::new("ttl_list").with_ttl_clock(short, c),
            timers: KeyedTimerService::with_clock(|| 0),
            clock,
        }
    }
}

impl KeyedProcessFunction for AllKinds {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, u64);

    fn process<C: Collector<(u64, u64)>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (k, i): (u64, u64),
        out: &mut C,
    ) {
        self.clock.set(T0 + i);
        let (c, s) = self.count_sum.value(ctx).unwrap_or((0, 0));
        self.count_sum.update(ctx, (c + 1, s + i));
        let b = self.buckets.get(ctx, &(i % 7)).unwrap_or(0);
        self.buckets.put(ctx, i % 7, b + 1);
        if i % 13 == 0 {
            self.samples.add(ctx, i);
        }
        self.max.add(ctx, i);
        self.mean.add(ctx, i);
        let prev = self.last.value(ctx).unwrap_or(0);
        self.last.update(ctx, prev.wrapping_mul(31).wrapping_add(i));
        self.ttl_map.put(ctx, i % 5, i);
        if i % 3 == 0 {
            self.ttl_list.add(ctx, i);
        }
        if i % 50 == 0 {
            // Fires at the end of the input (final watermark).
            self.timers.register_event_time_timer(ctx, i as i64);
        }
        if i % 4 == 0 {
            // Never due: pending in the final checkpoint.
            self.timers
                .register_processing_time_timer(ctx, FAR + (i % 97) as i64);
        }
        out.collect((k, i));
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.count_sum);
        states.map(&mut self.buckets);
        states.list(&mut self.samples);
        states.reducing(&mut self.max);
        states.aggregating(&mut self.mean);
        states.ttl_value(&mut self.last);
        states.map(&mut self.ttl_map);
        states.list(&mut self.ttl_list);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<u64>> {
        Some(&mut self.timers)
    }

    fn on_timer<C: Collector<(u64, u64)>>(
        &mut self,
        ts: i64,
        ctx: &KeyContext<u64>,
        domain: TimeDomain,
        out: &mut C,
    ) {
        if domain == TimeDomain::EventTime {
            // A processing-time timer registered at the end: also pending.
            self.timers
                .register_processing_time_timer(ctx, FAR + 1_000 + ts % 1_000);
            out.collect((*ctx.key(), ts as u64));
        }
    }
}

// ------------------------------------------- operator list + union state

/// Buffers records in list state, emitting 100 at a time; at the end it
/// emits the rest but KEEPS them (non-empty at the final checkpoint).
/// Counters go to union list state at every snapshot.
struct Batcher {
    index: u64,
    buffer: OperatorListState<(u64, u64)>,
    counts: UnionListState<(u64, u64)>,
    seen: u64,
}

impl ProcessFunction for Batcher {
    type In = (u64, u64);
    type Out = (u64, u64);

    fn process<C: Collector<(u64, u64)>>(
        &mut self,
        _: &ProcessContext,
        r: (u64, u64),
        out: &mut C,
    ) {
        self.seen += 1;
        self.buffer.add(r);
        if self.buffer.len() >= 100 + (self.seen % 7) as usize {
            for v in self.buffer.iter() {
                out.collect(v);
            }
            self.buffer.clear();
        }
    }

    fn on_end_of_input<C: Collector<(u64, u64)>>(&mut self, out: &mut C) {
        for v in self.buffer.iter() {
            out.collect(v);
        }
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        states.list(&mut self.buffer);
        states.union_list(&mut self.counts);
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) {
        self.counts.update([
            (self.index, self.seen),
            (u64::MAX, self.buffer.len() as u64),
        ]);
    }
}

// ---------------------------------------------------- broadcast state

/// Rules `(id, weight)` into broadcast state (inline in the manifest); the
/// keyed side counts its records per key, never reading the rules (so its
/// state does not depend on how the two inputs interleave).
struct RuleApply {
    hits: KeyedValueState<u64, u64>,
    firsts: KeyedMapState<u64, u64, u64>,
}

impl KeyedBroadcastProcessFunction for RuleApply {
    type Key = u64;
    type In = (u64, u64);
    type Broadcast = (u64, u64);
    type Out = (u64, u64);
    type StateKey = u64;
    type StateValue = u64;

    fn process_element<C: Collector<(u64, u64)>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (k, i): (u64, u64),
        _rules: &BroadcastState<u64, u64>,
        out: &mut C,
    ) {
        let h = self.hits.value(ctx).unwrap_or(0);
        self.hits.update(ctx, h + 1);
        if h < 3 {
            self.firsts.put(ctx, h, i);
        }
        out.collect((k, i));
    }

    fn process_broadcast_element<C: Collector<(u64, u64)>>(
        &mut self,
        (id, w): (u64, u64),
        rules: &mut BroadcastState<u64, u64>,
        _out: &mut C,
    ) {
        if id % 10 == 9 {
            rules.remove(&(id - 1));
        } else {
            rules.put(id, w);
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.hits);
        states.map(&mut self.firsts);
    }
}

// ------------------------------------------------ two keyed inputs

/// Input 1 and input 2 write disjoint states (each in its own, fixed order).
struct CoJoin {
    latest: KeyedValueState<u64, (u64, u64)>,
    side: KeyedListState<u64, u64>,
}

impl KeyedCoProcessFunction for CoJoin {
    type Key = u64;
    type In1 = (u64, u64);
    type In2 = (u64, u64);
    type Out = u64;

    fn process_element1<C: Collector<u64>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (_, i): (u64, u64),
        out: &mut C,
    ) {
        let (n, _) = self.latest.value(ctx).unwrap_or((0, 0));
        self.latest.update(ctx, (n + 1, i));
        out.collect(i);
    }

    fn process_element2<C: Collector<u64>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (_, i): (u64, u64),
        out: &mut C,
    ) {
        self.side.add(ctx, i);
        out.collect(u64::MAX - i);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.latest);
        states.list(&mut self.side);
    }
}

// ------------------------------------------------------------------ sink

/// Order-independent digest (count, sum, xor) of what it receives, as
/// inline sink state (in the manifest, not in a segment).
#[derive(Default)]
struct Digest([u64; 3]);

impl Sink for Digest {
    type In = u64;
    fn invoke(&mut self, v: u64) {
        let h = splitmix64(v);
        self.0[0] += 1;
        self.0[1] = self.0[1].wrapping_add(h);
        self.0[2] ^= h;
    }
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Vec<u8>, String> {
        Ok(self.0.iter().flat_map(|v| v.to_le_bytes()).collect())
    }
}

// ------------------------------------------------------------------- job

fn job() -> JobGraph {
    let job = JobGraph::new("golden");
    let rules = job
        .source("rules", |info: &SubtaskInfo| {
            SequenceSource::new(info, RULES, |i| (i % 40, i * 7 + 1))
        })
        .broadcast();
    let side = job
        .source("side", |info: &SubtaskInfo| {
            SequenceSource::new(info, SIDE_N, |i| (splitmix64(i ^ 0x5EED) % K, i))
        })
        .key_by(|r: &(u64, u64)| r.0)
        .detach();
    job.source("numbers", |_: &SubtaskInfo| {
        let mut progress = OperatorListState::new("progress");
        progress.add((0, N));
        progress.add((K, N));
        Numbers { progress }
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("all-kinds", |_: &SubtaskInfo| AllKinds::new())
    .process("batcher", |info: &SubtaskInfo| Batcher {
        index: info.index as u64,
        buffer: OperatorListState::new("buffer"),
        counts: UnionListState::new("counts"),
        seen: 0,
    })
    .key_by(|r: &(u64, u64)| r.0)
    .connect(rules)
    .process("rule-apply", |_: &SubtaskInfo| RuleApply {
        hits: KeyedValueState::new("hits"),
        firsts: KeyedMapState::new("firsts"),
    })
    .key_by(|r: &(u64, u64)| r.0)
    .connect(side)
    .process("co-join", |_: &SubtaskInfo| CoJoin {
        latest: KeyedValueState::new("latest"),
        side: KeyedListState::new("side"),
    })
    .sink("digest", |_: &SubtaskInfo| Digest::default());
    job
}

/// FNV-1a (64-bit) of the final checkpoint's segment `w000.seg`. Changed
/// on purpose when value tables went from blocks of 32 arena chunks to
/// blocks of 8 (`TABLE_BLOCK_CHUNKS`; the same entries in more, smaller
/// blocks, which restores of either layout read), and when the composite
/// kinds' tables (map, list, reducing, aggregating, TTL) went from blocks
/// per key group to table blocks, so that they can be written
/// incrementally (the same entries in slot order; restores read both).
const SEGMENT_FNV1A: u64 = 0x2187_4382_307d_6c10;

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The final checkpoint of the fixed job is byte for byte the one it has
/// always been.
#[test]
fn a_fixed_job_writes_the_same_checkpoint_bytes() {
    let ck = crate::temp_dir("golden-checkpoint");
    let mut o = ExecutionOptions::with_workers(1).with_checkpointing(Duration::from_secs(600), &ck);
    o.pin_cores = false;
    o.restart = RestartStrategy::None;
    let result = execute(job(), &o).unwrap_or_else(|e| panic!("the job failed: {e}"));
    assert_eq!(result.restarts, 0);
    assert_eq!(
        result.checkpoints.len(),
        1,
        "only the final checkpoint: {:?}",
        result.checkpoints
    );
    let record = &result.checkpoints[0];
    assert!(
        record.is_final,
        "the checkpoint is the final one: {record:?}"
    );
    let segment = ck.join(format!("chk-{}", record.id)).join("w000.seg");
    let bytes = std::fs::read(&segment).expect("read the segment");
    let _ = std::fs::remove_dir_all(&ck);
    assert_eq!(
        fnv1a(&bytes),
        SEGMENT_FNV1A,
        "the final checkpoint's segment ({} bytes) changed: a state kind is written differently",
        bytes.len()
    );
}
