//! The building blocks of the WORKLOADS.md jobs: the record generator, the
//! paced source, the keyed count and the checksum/latency sink.
//!
//! Everything here follows `shared/bench/WORKLOADS.md` to the letter, so that
//! another engine can run the very same work: record `i` has
//! `key = splitmix64(i) % K` and `value = i`; source subtask `s` of `P` emits
//! `i = s, s + P, s + 2P, ...`; the keyed op keeps `count` and `sum` per key
//! and emits `(key, count, sum)`; the sink folds
//! `checksum += key * M + count` (wrapping).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use weir_runtime::{
    Collector, KeyContext, KeyedProcessFunction, KeyedStates, KeyedValueState, OperatorStates,
    Sink, Source, SourcePoll, StridedSplits, SubtaskInfo, Wire,
};

/// The multiplier of the sink checksum.
pub const M: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64 as WORKLOADS.md defines it (all arithmetic wrapping).
#[inline(always)]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `x % d` for a divisor fixed at run time, without a division instruction
/// (Lemire, Kaser & Kurz, "Faster remainder by direct computation", 2019):
/// exact for every `x` and every `d >= 1`. The W1 source computes
/// `splitmix64(i) % K` per record, and the 64-bit `div` was its most
/// expensive instruction.
#[derive(Clone, Copy, Debug)]
pub struct FastMod {
    m: u128,
    d: u64,
}

impl FastMod {
    /// Precomputes for divisor `d` (`d >= 1`).
    pub fn new(d: u64) -> Self {
        assert!(d >= 1, "modulus must be at least 1");
        Self {
            m: (u128::MAX / u128::from(d)).wrapping_add(1),
            d,
        }
    }

    /// `x % d`.
    #[inline(always)]
    pub fn rem(&self, x: u64) -> u64 {
        let low = self.m.wrapping_mul(u128::from(x));
        let d = u128::from(self.d);
        let bottom = ((low & u128::from(u64::MAX)) * d) >> 64;
        let top = (low >> 64) * d;
        ((bottom + top) >> 64) as u64
    }
}

/// Nanoseconds on the process's monotonic clock (W3's `ts_ns`).
#[inline]
pub fn clock_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// A record of the keyed-count workloads.
pub trait CountRecord: Wire + Copy {
    /// What the keyed count emits for it.
    type Out: CountOutput;
    /// The record's key.
    fn key(&self) -> u64;
    /// The record's value.
    fn value(&self) -> u64;
    /// The output after this record: the key's new count and sum.
    fn output(&self, count: u64, sum: u64) -> Self::Out;
}

/// An output of the keyed count, as the sink sees it.
pub trait CountOutput: Copy + 'static {
    /// The key.
    fn key(&self) -> u64;
    /// The key's count after the record.
    fn count(&self) -> u64;
    /// When the source emitted the record (W3), if carried.
    fn ts_ns(&self) -> Option<u64>;
}

/// W1's record: `(key, value)`.
impl CountRecord for (u64, u64) {
    type Out = (u64, u64, u64);
    #[inline(always)]
    fn key(&self) -> u64 {
        self.0
    }
    #[inline(always)]
    fn value(&self) -> u64 {
        self.1
    }
    #[inline(always)]
    fn output(&self, count: u64, sum: u64) -> Self::Out {
        (self.0, count, sum)
    }
}

/// W1's output: `(key, count, sum)`.
impl CountOutput for (u64, u64, u64) {
    #[inline(always)]
    fn key(&self) -> u64 {
        self.0
    }
    #[inline(always)]
    fn count(&self) -> u64 {
        self.1
    }
    #[inline(always)]
    fn ts_ns(&self) -> Option<u64> {
        None
    }
}

/// W3's record: `(key, value, ts_ns)`.
impl CountRecord for (u64, u64, u64) {
    type Out = (u64, u64, u64, u64);
    #[inline(always)]
    fn key(&self) -> u64 {
        self.0
    }
    #[inline(always)]
    fn value(&self) -> u64 {
        self.1
    }
    #[inline(always)]
    fn output(&self, count: u64, sum: u64) -> Self::Out {
        (self.0, count, sum, self.2)
    }
}

/// W3's output: `(key, count, sum, ts_ns)`.
impl CountOutput for (u64, u64, u64, u64) {
    #[inline(always)]
    fn key(&self) -> u64 {
        self.0
    }
    #[inline(always)]
    fn count(&self) -> u64 {
        self.1
    }
    #[inline(always)]
    fn ts_ns(&self) -> Option<u64> {
        Some(self.3)
    }
}

/// The shared start of a timed run: set by the first source poll, read by
/// sinks to tell warm-up from the recorded window.
#[derive(Debug, Default)]
pub struct RunClock {
    start_ns: AtomicU64,
}

impl RunClock {
    /// Marks the start (first caller wins) and returns it.
    pub fn start(&self) -> u64 {
        let now = clock_ns().max(1);
        match self
            .start_ns
            .compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => now,
            Err(earlier) => earlier,
        }
    }

    /// The start, if it happened.
    pub fn started_at(&self) -> Option<u64> {
        match self.start_ns.load(Ordering::Acquire) {
            0 => None,
            t => Some(t),
        }
    }
}

/// How a [`WorkloadSource`] is paced and bounded.
#[derive(Clone, Copy, Debug)]
pub struct SourcePlan {
    /// Records over all subtasks: the source emits `i < records`.
    pub records: u64,
    /// Total records/s over all subtasks (`None`: as fast as allowed).
    pub rate: Option<u64>,
    /// Stop after this long even if records remain (timed runs).
    pub run_for: Option<Duration>,
}

/// The WORKLOADS.md source: subtask `s` emits `make(i)` for
/// `i = s, s + P, ...`, optionally paced to its share of the rate. Its
/// position is strided splits in union list state, so a restore at
/// another parallelism hands the records not yet emitted to the new
/// subtasks, each once (see [`StridedSplits`]).
pub struct WorkloadSource<F> {
    splits: StridedSplits,
    plan: SourcePlan,
    per_second: f64,
    start: Option<Instant>,
    emitted: u64,
    clock: Arc<RunClock>,
    counts: Option<Arc<SourceCounts>>,
    index: usize,
    make: F,
}

/// How many records each source subtask emitted, reported when it finishes
/// (timed runs end by the clock, so the reference needs these).
#[derive(Debug)]
pub struct SourceCounts {
    slots: Vec<AtomicU64>,
}

impl SourceCounts {
    /// Slots for `parallelism` source subtasks.
    pub fn new(parallelism: usize) -> Arc<Self> {
        Arc::new(Self {
            slots: (0..parallelism).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Records emitted per subtask.
    pub fn get(&self) -> Vec<u64> {
        self.slots
            .iter()
            .map(|s| s.load(Ordering::Acquire))
            .collect()
    }
}

impl<F> WorkloadSource<F> {
    /// The source of subtask `info`.
    pub fn new(info: &SubtaskInfo, plan: SourcePlan, clock: Arc<RunClock>, make: F) -> Self {
        let per_second = plan
            .rate
            .map_or(0.0, |r| r as f64 / info.parallelism as f64);
        Self {
            splits: StridedSplits::new(info, plan.records),
            plan,
            per_second,
            start: None,
            emitted: 0,
            clock,
            counts: None,
            index: info.index,
            make,
        }
    }

    /// Reports the emitted count into `counts` when the source finishes.
    pub fn reporting_to(mut self, counts: Arc<SourceCounts>) -> Self {
        self.counts = Some(counts);
        self
    }

    fn finished(&self) -> SourcePoll {
        if let Some(c) = &self.counts {
            c.slots[self.index].store(self.emitted, Ordering::Release);
        }
        SourcePoll::Finished
    }
}

impl<T, F: FnMut(u64) -> T + 'static> Source for WorkloadSource<F> {
    type Out = T;

    #[inline]
    fn poll_next<C: Collector<T>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        let start = *self.start.get_or_insert_with(|| {
            self.clock.start();
            Instant::now()
        });
        let mut allowed = budget as u64;
        if self.plan.rate.is_some() || self.plan.run_for.is_some() {
            let elapsed = start.elapsed();
            if self.plan.run_for.is_some_and(|d| elapsed >= d) {
                return self.finished();
            }
            if self.plan.rate.is_some() {
                let due = (elapsed.as_secs_f64() * self.per_second) as u64;
                if due <= self.emitted {
                    let next_at = (self.emitted + 1) as f64 / self.per_second;
                    return SourcePoll::Idle {
                        until: Some(start + Duration::from_secs_f64(next_at)),
                    };
                }
                allowed = allowed.min(due - self.emitted);
            }
        }
        let Some(next) = self.splits.next_record() else {
            return self.finished();
        };
        weir_runtime::core::failpoint::panic_once("source-panic", next);
        weir_runtime::core::failpoint::panic_always("source-panic-always", next);
        // This subtask's records, made as the chain takes them.
        let limit = usize::try_from(allowed).unwrap_or(usize::MAX);
        let n = self.splits.emit(&mut self.make, out, limit);
        self.emitted += n as u64;
        SourcePoll::Emitted(n)
    }

    /// The position is the splits: no bytes.
    fn snapshot_position(&mut self) -> Vec<u8> {
        Vec::new()
    }

    /// An empty position (the splits hold it), or one of the format before
    /// splits (a record index, at the same parallelism).
    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        self.splits.restore_position(position)
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        self.splits.visit(states);
    }

    fn initialize_restored_state(&mut self) -> Result<(), String> {
        self.splits.restored()
    }

    /// A position or splits that do not decode stay so: a restart
    /// restores the same bytes.
    fn is_retryable(&self, _error: &str) -> bool {
        false
    }
}

/// The keyed op of W1/W3: `count += 1; sum += value`, emit the new totals.
pub struct KeyedCount<R: CountRecord> {
    totals: KeyedValueState<u64, (u64, u64)>,
    _record: std::marker::PhantomData<fn(R)>,
}

impl<R: CountRecord> Default for KeyedCount<R> {
    fn default() -> Self {
        Self {
            totals: KeyedValueState::new("totals"),
            _record: std::marker::PhantomData,
        }
    }
}

impl<R: CountRecord> KeyedProcessFunction for KeyedCount<R> {
    type Key = u64;
    type In = R;
    type Out = R::Out;

    #[inline(always)]
    fn process<C: Collector<R::Out>>(&mut self, ctx: &KeyContext<u64>, value: R, out: &mut C) {
        let t = self.totals.value_mut_or_insert_with(ctx, || (0, 0));
        t.0 += 1;
        t.1 = t.1.wrapping_add(value.value());
        out.collect(value.output(t.0, t.1));
    }

    /// From about 10^6 keys the table outgrows the caches (8 MiB per
    /// worker): a record's slot is then prefetched a few records before
    /// its turn.
    #[inline]
    fn prefetch_pays(&self) -> bool {
        self.totals.prefetch_pays()
    }

    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        self.totals.prefetch(hash);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.totals);
    }
}

/// What one sink subtask saw.
#[derive(Clone, Debug)]
pub struct SinkResult {
    /// Records received.
    pub records: u64,
    /// `sum(key * M + count)`, wrapping.
    pub checksum: u64,
    /// Records whose `ts_ns` fell in the recorded window (W3).
    pub recorded: u64,
    /// Latency of the recorded records, in nanoseconds (W3).
    pub latency_ns: Option<Histogram<u64>>,
}

/// Where sink subtasks leave their results, one slot per subtask (the
/// last attempt's, after in-process restarts).
#[derive(Debug)]
pub struct SinkResults {
    slots: Vec<Mutex<Option<SinkResult>>>,
}

impl SinkResults {
    /// Slots for `parallelism` sink subtasks.
    pub fn new(parallelism: usize) -> Arc<Self> {
        Arc::new(Self {
            slots: (0..parallelism).map(|_| Mutex::new(None)).collect(),
        })
    }

    /// Every subtask's result (missing ones, e.g. after a failure, skipped).
    pub fn collected(&self) -> Vec<SinkResult> {
        self.slots
            .iter()
            .filter_map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect()
    }

    fn set(&self, index: usize, result: SinkResult) {
        *self.slots[index].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    }
}

/// The checksum sink; with a latency window it also records W3 latency.
pub struct ChecksumSink<O> {
    index: usize,
    /// The sink's subtask: a rescaled restore takes its share by it.
    info: SubtaskInfo,
    results: Arc<SinkResults>,
    records: u64,
    checksum: u64,
    recorded: u64,
    latency: Option<LatencyWindow>,
    /// `finish` published the results (the input ended).
    finished: bool,
    _out: std::marker::PhantomData<fn(O)>,
}

/// W3: which records count (by their source timestamp) and their latencies.
struct LatencyWindow {
    clock: Arc<RunClock>,
    warmup_ns: u64,
    duration_ns: u64,
    from_ns: u64,
    to_ns: u64,
    histogram: Histogram<u64>,
}

impl<O> ChecksumSink<O> {
    /// A plain checksum sink for subtask `info`.
    pub fn new(info: &SubtaskInfo, results: Arc<SinkResults>) -> Self {
        Self {
            index: info.index,
            info: *info,
            results,
            records: 0,
            checksum: 0,
            recorded: 0,
            latency: None,
            finished: false,
            _out: std::marker::PhantomData,
        }
    }

    /// A sink that also records the latency of records emitted after
    /// `warmup` and within `duration` of the run's start.
    pub fn with_latency(
        info: &SubtaskInfo,
        results: Arc<SinkResults>,
        clock: Arc<RunClock>,
        warmup: Duration,
        duration: Duration,
    ) -> Self {
        let mut sink = Self::new(info, results);
        sink.latency = Some(LatencyWindow {
            clock,
            warmup_ns: warmup.as_nanos() as u64,
            duration_ns: duration.as_nanos() as u64,
            from_ns: u64::MAX,
            to_ns: u64::MAX,
            // 1 us .. 60 s with 3 significant digits, in nanoseconds.
            histogram: Histogram::new_with_bounds(1_000, 60_000_000_000, 3)
                .expect("valid histogram bounds"),
        });
        sink
    }
}

impl<O> ChecksumSink<O> {
    /// Leaves what the sink saw so far in its slot.
    fn publish(&self) {
        self.results.set(
            self.index,
            SinkResult {
                records: self.records,
                checksum: self.checksum,
                recorded: self.recorded,
                latency_ns: self.latency.as_ref().map(|w| w.histogram.clone()),
            },
        );
    }
}

/// A sink whose input never ended (the job was stopped with a savepoint:
/// operators see no end of input, so `finish` is never called) leaves what
/// it saw when its task is dropped, so a stopped bench reports the records
/// processed before the stop instead of none. A later attempt's sink of the
/// same subtask overwrites it.
impl<O> Drop for ChecksumSink<O> {
    fn drop(&mut self) {
        if !self.finished {
            self.publish();
        }
    }
}

impl<O: CountOutput> Sink for ChecksumSink<O> {
    type In = O;

    #[inline(always)]
    fn invoke(&mut self, record: O) {
        self.records += 1;
        self.checksum = self
            .checksum
            .wrapping_add(record.key().wrapping_mul(M))
            .wrapping_add(record.count());
        if let (Some(w), Some(ts)) = (self.latency.as_mut(), record.ts_ns()) {
            if w.from_ns == u64::MAX {
                if let Some(start) = w.clock.started_at() {
                    w.from_ns = start + w.warmup_ns;
                    w.to_ns = w.from_ns + w.duration_ns;
                }
            }
            if ts >= w.from_ns && ts < w.to_ns {
                let latency = clock_ns().saturating_sub(ts);
                w.histogram.saturating_record(latency.max(1_000));
                self.recorded += 1;
            }
        }
    }

    fn finish(&mut self) {
        self.publish();
        self.finished = true;
    }

    /// The running count and checksum are the sink's state: restored, they
    /// let a run that resumed from a checkpoint verify the whole output.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Vec<u8>, String> {
        let mut state = Vec::with_capacity(16);
        state.extend_from_slice(&self.records.to_le_bytes());
        state.extend_from_slice(&self.checksum.to_le_bytes());
        Ok(state)
    }

    fn initialize_state(&mut self, restored: Option<(u64, &[u8])>) -> Result<(), String> {
        let Some((checkpoint, state)) = restored else {
            return Ok(());
        };
        (self.records, self.checksum) = decode_checksum_state(checkpoint, state)?;
        Ok(())
    }

    /// Count and checksum are sums: the new subtasks add up their shares
    /// of the old subtasks' (each old one's goes to one new subtask), so
    /// the totals over all subtasks stay the whole output's.
    fn initialize_rescaled_state(
        &mut self,
        checkpoint_id: u64,
        states: &[&[u8]],
    ) -> Option<Result<(), String>> {
        let mut sum = (0u64, 0u64);
        for k in weir_runtime::rescaled_share(&self.info, states.len()) {
            match decode_checksum_state(checkpoint_id, states[k]) {
                Ok((records, checksum)) => {
                    sum = (sum.0 + records, sum.1.wrapping_add(checksum));
                }
                Err(e) => return Some(Err(e)),
            }
        }
        (self.records, self.checksum) = sum;
        Some(Ok(()))
    }
}

/// A checksum sink's state: `(records, checksum)`.
fn decode_checksum_state(checkpoint: u64, state: &[u8]) -> Result<(u64, u64), String> {
    let state: [u8; 16] = state.try_into().map_err(|_| {
        format!(
            "checksum sink state of checkpoint {checkpoint} has {} bytes, expected 16",
            state.len()
        )
    })?;
    Ok((
        u64::from_le_bytes(state[..8].try_into().expect("8 bytes")),
        u64::from_le_bytes(state[8..].try_into().expect("8 bytes")),
    ))
}

/// Waits `d` by spinning on the monotonic clock (no sleep: the core stays
/// busy, as a costly operator would keep it); returns the time it ended.
#[inline]
pub fn spin_for(d: Duration) -> Instant {
    let until = Instant::now() + d;
    loop {
        let now = Instant::now();
        if now >= until {
            return now;
        }
        std::hint::spin_loop();
    }
}

/// W4's slow sink: spins `spin` per record (WORKLOADS.md: 10 us), then
/// folds the record into the checksum sink's count and checksum (and its
/// checkpointed state). It also counts, as its `recorded` result, the
/// records it finished within `window` of the run's start: the sink's
/// rate while the source was running, without the drain after it.
pub struct SlowSink {
    sink: ChecksumSink<(u64, u64, u64)>,
    spin: Duration,
    clock: Arc<RunClock>,
    window_ns: u64,
    /// End of the window on [`clock_ns`]'s scale, once the run has started.
    until_ns: Option<u64>,
}

impl SlowSink {
    /// The sink of subtask `info`.
    pub fn new(
        info: &SubtaskInfo,
        results: Arc<SinkResults>,
        clock: Arc<RunClock>,
        spin: Duration,
        window: Duration,
    ) -> Self {
        Self {
            sink: ChecksumSink::new(info, results),
            spin,
            clock,
            window_ns: window.as_nanos() as u64,
            until_ns: None,
        }
    }
}

impl Sink for SlowSink {
    type In = (u64, u64, u64);

    #[inline]
    fn invoke(&mut self, record: (u64, u64, u64)) {
        spin_for(self.spin);
        self.sink.invoke(record);
        if self.until_ns.is_none() {
            self.until_ns = self.clock.started_at().map(|t| t + self.window_ns);
        }
        if self.until_ns.is_some_and(|until| clock_ns() < until) {
            self.sink.recorded += 1;
        }
    }

    fn finish(&mut self) {
        self.sink.finish();
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<Vec<u8>, String> {
        self.sink.snapshot_state(checkpoint_id)
    }

    fn initialize_state(&mut self, restored: Option<(u64, &[u8])>) -> Result<(), String> {
        self.sink.initialize_state(restored)
    }

    fn initialize_rescaled_state(
        &mut self,
        checkpoint_id: u64,
        states: &[&[u8]],
    ) -> Option<Result<(), String>> {
        self.sink.initialize_rescaled_state(checkpoint_id, states)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_waits_at_least_as_long_as_asked() {
        let start = Instant::now();
        let mut last = start;
        for _ in 0..100 {
            let ended = spin_for(Duration::from_micros(10));
            assert!(ended >= last + Duration::from_micros(10));
            last = ended;
        }
        assert!(start.elapsed() >= Duration::from_millis(1));
    }

    #[test]
    fn fast_mod_equals_the_remainder() {
        let divisors = [
            1u64,
            2,
            3,
            7,
            1000,
            100_000,
            10_000_000,
            1 << 40,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut x = 0x1234_5678_9abc_def0u64;
        for &d in &divisors {
            let f = FastMod::new(d);
            for i in 0..20_000u64 {
                x = splitmix64(x ^ i);
                assert_eq!(f.rem(x), x % d, "{x} % {d}");
                assert_eq!(f.rem(i), i % d);
            }
            assert_eq!(f.rem(u64::MAX), u64::MAX % d);
            assert_eq!(f.rem(0), 0);
        }
    }
}
