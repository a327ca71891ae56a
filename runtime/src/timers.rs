//! Keyed timers: Flink's `TimerService` for keyed process functions.
//!
//! A [`KeyedProcessFunction`](crate::KeyedProcessFunction) that uses timers
//! owns a [`KeyedTimerService`] (a field, like its keyed states) and hands
//! it to its operator through
//! [`timer_service`](crate::KeyedProcessFunction::timer_service). In
//! `process` and `on_timer` it registers and deletes timers for the current
//! key of a [`KeyContext`]:
//!
//! - **Event-time** timers fire when the operator's watermark reaches them
//!   (`watermark >= timestamp`), in timestamp order, before the watermark
//!   is passed on. At the end of the input every remaining event-time timer
//!   fires, as Flink's final `i64::MAX` watermark makes it (also in jobs
//!   without a watermark strategy).
//! - **Processing-time** timers fire when the service's clock (wall-clock
//!   milliseconds since the epoch; injectable for tests) reaches them. The
//!   operator checks them at every flush (every task poll) and reports the
//!   next one as a flush deadline, so a parked worker wakes for it. After
//!   the end of the input they no longer fire (as in Flink, whose finished
//!   tasks quiesce their processing-time service).
//!
//! Timers are per `(key, timestamp)` and deduplicated: registering one
//! that exists does nothing. A timer registered from `on_timer` for a time
//! already passed fires in the same advance. Each firing calls
//! `on_timer(timestamp, ctx, domain, out)` with the timer's key in `ctx`.
//!
//! **Storage and cost.** Per domain, one binary min-heap of
//! `(timestamp, key hash, key)` ordered by time, and a hash set of the live
//! `(timestamp, key)` pairs (hashed by the key's stable hash), both sized
//! by doubling: no allocation per record or per timer in the steady state.
//! Registering is O(log n) (a set probe, a heap push); deleting is a set
//! removal, O(1): the heap entry is dropped lazily when it reaches the top
//! (the heap is rebuilt from the set if stale entries outnumber live ones).
//! Firing is O(log n) per timer. Functions without timers pay nothing: the
//! operator's per-record path does not look at timers at all, and its
//! per-poll and per-watermark checks are a `None` the compiler sees.
//!
//! **Checkpoints.** Timers are keyed state: at a barrier the live timers are
//! copied (O(timers), in the synchronous part) and written per key group
//! like any keyed state, under the state names [`EVENT_TIMERS_STATE`] and
//! [`PROCESSING_TIMERS_STATE`] (entries `key, timestamp`). A restore takes
//! the entries of the subtask's key groups, from whatever subtask wrote
//! them, so timers follow their keys when the parallelism changes.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashSet};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use weir_net::Wire;
use weir_state::{KeyGroupAssigner, KeyGroupRange, KeyHash};

use crate::checkpoint::restore::RestoreScope;
use crate::checkpoint::snapshot::FrozenKeyedState;
use crate::keyed::KeyContext;

/// State name of the event-time timers in checkpoints.
pub const EVENT_TIMERS_STATE: &str = "_timers_event";

/// State name of the processing-time timers in checkpoints.
pub const PROCESSING_TIMERS_STATE: &str = "_timers_processing";

/// Which clock a timer follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeDomain {
    /// The operator's watermark.
    EventTime,
    /// The wall clock (the service's processing-time clock).
    ProcessingTime,
}

/// One timer: a key and a timestamp (the hash is the key's, kept so that
/// neither the heap nor the set rehashes the key).
#[derive(Clone, Copy, Debug)]
struct Timer<K> {
    ts: i64,
    hash: u64,
    key: K,
}

impl<K: Eq> PartialEq for Timer<K> {
    fn eq(&self, other: &Self) -> bool {
        self.ts == other.ts && self.key == other.key
    }
}

impl<K: Eq> Eq for Timer<K> {}

impl<K> Hash for Timer<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash ^ (self.ts as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    }
}

/// A heap entry: ordered by time, then by key hash (so that timers of one
/// timestamp fire in a deterministic order).
struct ByTime<K>(Timer<K>);

impl<K> PartialEq for ByTime<K> {
    fn eq(&self, other: &Self) -> bool {
        (self.0.ts, self.0.hash) == (other.0.ts, other.0.hash)
    }
}

impl<K> Eq for ByTime<K> {}

impl<K> PartialOrd for ByTime<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for ByTime<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.0.ts, self.0.hash).cmp(&(other.0.ts, other.0.hash))
    }
}

/// The set's hasher: the value written is already a good hash (the key's
/// stable hash mixed with the timestamp); one multiply spreads it.
#[derive(Default)]
struct TimerHasher(u64);

impl Hasher for TimerHasher {
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0xFF51_AFD7_ED55_8CCD).rotate_left(29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

/// The timers of one domain.
struct TimerQueue<K> {
    heap: BinaryHeap<Reverse<ByTime<K>>>,
    live: HashSet<Timer<K>, BuildHasherDefault<TimerHasher>>,
}

impl<K> Default for TimerQueue<K> {
    fn default() -> Self {
        Self {
            heap: BinaryHeap::new(),
            live: HashSet::default(),
        }
    }
}

impl<K: Copy + Eq> TimerQueue<K> {
    fn register(&mut self, timer: Timer<K>) {
        if self.live.insert(timer) {
            self.heap.push(Reverse(ByTime(timer)));
        }
    }

    fn delete(&mut self, timer: &Timer<K>) {
        if self.live.remove(timer) && self.heap.len() > 2 * self.live.len() + 1024 {
            // Stale entries outnumber the live ones: rebuild (O(n), at most
            // once per n deletions).
            self.heap = self.live.iter().map(|&t| Reverse(ByTime(t))).collect();
        }
    }

    /// Drops deleted (or already fired) entries from the top of the heap.
    fn skip_stale(&mut self) {
        while let Some(Reverse(ByTime(top))) = self.heap.peek() {
            if self.live.contains(top) {
                return;
            }
            self.heap.pop();
        }
    }

    fn next(&mut self) -> Option<i64> {
        self.skip_stale();
        self.heap.peek().map(|Reverse(ByTime(t))| t.ts)
    }

    /// The earliest timer at or before `time`, removed.
    fn pop_due(&mut self, time: i64) -> Option<Timer<K>> {
        self.skip_stale();
        match self.heap.peek() {
            Some(Reverse(ByTime(t))) if t.ts <= time => {
                let Reverse(ByTime(t)) = self.heap.pop().expect("peeked");
                self.live.remove(&t);
                Some(t)
            }
            _ => None,
        }
    }

    fn len(&self) -> usize {
        self.live.len()
    }
}

/// Flink's keyed `TimerService`: event-time and processing-time timers per
/// key, owned by a keyed process function (see the [module docs](self)).
pub struct KeyedTimerService<K> {
    event: TimerQueue<K>,
    processing: TimerQueue<K>,
    watermark: i64,
    clock: Box<dyn Fn() -> i64>,
}

impl<K: Copy + Eq + KeyHash> Default for KeyedTimerService<K> {
    fn default() -> Self {
        Self::new()
    }
}

/// Milliseconds since the Unix epoch, by the system clock.
pub fn system_time_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl<K: Copy + Eq + KeyHash> KeyedTimerService<K> {
    /// A service without timers whose processing time is the system clock.
    pub fn new() -> Self {
        Self::with_clock(system_time_ms)
    }

    /// A service whose processing time (ms) is what `clock` returns (tests
    /// inject a manual clock).
    pub fn with_clock(clock: impl Fn() -> i64 + 'static) -> Self {
        Self {
            event: TimerQueue::default(),
            processing: TimerQueue::default(),
            watermark: i64::MIN,
            clock: Box::new(clock),
        }
    }

    fn timer(ctx: &KeyContext<K>, ts: i64) -> Timer<K> {
        Timer {
            ts,
            hash: ctx.hash(),
            key: *ctx.key(),
        }
    }

    /// Registers an event-time timer at `timestamp` for the current key of
    /// `ctx` (nothing if it exists). It fires once the watermark reaches
    /// `timestamp`: at the next watermark advance if it already has.
    pub fn register_event_time_timer(&mut self, ctx: &KeyContext<K>, timestamp: i64) {
        self.event.register(Self::timer(ctx, timestamp));
    }

    /// Deletes the current key's event-time timer at `timestamp`, if any.
    pub fn delete_event_time_timer(&mut self, ctx: &KeyContext<K>, timestamp: i64) {
        self.event.delete(&Self::timer(ctx, timestamp));
    }

    /// Registers a processing-time timer at `timestamp` (ms since the
    /// epoch) for the current key of `ctx` (nothing if it exists).
    pub fn register_processing_time_timer(&mut self, ctx: &KeyContext<K>, timestamp: i64) {
        self.processing.register(Self::timer(ctx, timestamp));
    }

    /// Deletes the current key's processing-time timer at `timestamp`, if
    /// any.
    pub fn delete_processing_time_timer(&mut self, ctx: &KeyContext<K>, timestamp: i64) {
        self.processing.delete(&Self::timer(ctx, timestamp));
    }

    /// The current processing time (ms since the epoch, by the service's
    /// clock).
    pub fn current_processing_time(&self) -> i64 {
        (self.clock)()
    }

    /// The operator's current watermark (`i64::MIN` before the first).
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// Registered event-time timers (all keys).
    pub fn event_time_timers(&self) -> usize {
        self.event.len()
    }

    /// Registered processing-time timers (all keys).
    pub fn processing_time_timers(&self) -> usize {
        self.processing.len()
    }

    /// The earliest registered timer of `domain`, if any.
    pub fn next_timer(&mut self, domain: TimeDomain) -> Option<i64> {
        self.queue(domain).next()
    }

    fn queue(&mut self, domain: TimeDomain) -> &mut TimerQueue<K> {
        match domain {
            TimeDomain::EventTime => &mut self.event,
            TimeDomain::ProcessingTime => &mut self.processing,
        }
    }
}

/// What the keyed process operator drives in a function's timer service:
/// object-safe, so that [`KeyedProcessFunction`](crate::KeyedProcessFunction)
/// needs no extra bounds on its key. Implemented by [`KeyedTimerService`].
pub trait TimerQueues<K> {
    /// The operator's watermark advanced to `watermark`.
    fn advance_watermark(&mut self, watermark: i64);

    /// Removes and returns the earliest timer of `domain` at or before
    /// `time`, as `(timestamp, key)`.
    fn pop_due(&mut self, domain: TimeDomain, time: i64) -> Option<(i64, K)>;

    /// The earliest processing-time timer, if any.
    fn next_processing_timer(&mut self) -> Option<i64>;

    /// The current processing time (ms).
    fn processing_time(&self) -> i64;

    /// Adds frozen copies of the timers (one per domain) to a snapshot's
    /// keyed states.
    fn snapshot(&self, out: &mut Vec<(String, Box<dyn FrozenKeyedState>)>);

    /// Registers the timers of the subtask's key groups from a checkpoint.
    fn restore(&mut self, scope: &RestoreScope<'_>) -> Result<(), String>;
}

impl<K> TimerQueues<K> for KeyedTimerService<K>
where
    K: Copy + Eq + KeyHash + Wire + 'static,
{
    fn advance_watermark(&mut self, watermark: i64) {
        self.watermark = self.watermark.max(watermark);
    }

    fn pop_due(&mut self, domain: TimeDomain, time: i64) -> Option<(i64, K)> {
        self.queue(domain).pop_due(time).map(|t| (t.ts, t.key))
    }

    fn next_processing_timer(&mut self) -> Option<i64> {
        self.processing.next()
    }

    fn processing_time(&self) -> i64 {
        self.current_processing_time()
    }

    fn snapshot(&self, out: &mut Vec<(String, Box<dyn FrozenKeyedState>)>) {
        for (name, queue) in [
            (EVENT_TIMERS_STATE, &self.event),
            (PROCESSING_TIMERS_STATE, &self.processing),
        ] {
            let entries: Vec<(K, i64)> = queue.live.iter().map(|t| (t.key, t.ts)).collect();
            out.push((name.to_owned(), Box::new(FrozenTimers { entries })));
        }
    }

    fn restore(&mut self, scope: &RestoreScope<'_>) -> Result<(), String> {
        restore_queue(scope, EVENT_TIMERS_STATE, &mut self.event)?;
        restore_queue(scope, PROCESSING_TIMERS_STATE, &mut self.processing)
    }
}

/// Timers copied at a barrier.
struct FrozenTimers<K> {
    entries: Vec<(K, i64)>,
}

/// Entries per serialization part.
const TIMER_CHUNK: usize = 1 << 16;

impl<K: Copy + KeyHash + Wire> FrozenKeyedState for FrozenTimers<K> {
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn chunk_count(&self) -> usize {
        self.entries.len().div_ceil(TIMER_CHUNK)
    }

    fn estimated_bytes(&self) -> usize {
        self.entries
            .first()
            .map_or(0, |(k, ts)| k.encoded_len() + ts.encoded_len())
            * self.entries.len()
    }

    fn serialize_part(
        &self,
        max_parallelism: u32,
        range: KeyGroupRange,
        chunks: std::ops::Range<usize>,
        out: &mut Vec<Vec<u8>>,
    ) {
        out.resize_with(range.len() as usize, Vec::new);
        out.iter_mut().for_each(Vec::clear);
        let groups = KeyGroupAssigner::new(max_parallelism, 1);
        let from = (chunks.start * TIMER_CHUNK).min(self.entries.len());
        let to = (chunks.end * TIMER_CHUNK).min(self.entries.len());
        for (k, ts) in &self.entries[from..to] {
            let kg = groups.key_group(k.key_hash());
            debug_assert!(range.contains(kg), "a timer outside the subtask's range");
            let buf = &mut out[(kg - range.start()) as usize];
            append(buf, k);
            append(buf, ts);
        }
    }
}

/// Appends `value`'s encoding to `buf`.
fn append<T: Wire>(buf: &mut Vec<u8>, value: &T) {
    let at = buf.len();
    buf.resize(at + value.encoded_len(), 0);
    value.write(&mut buf[at..]);
}

/// Registers the timers of state `name` that belong to the subtask's key
/// groups; a block's entries count only once its checksum matched.
fn restore_queue<K>(
    scope: &RestoreScope<'_>,
    name: &str,
    queue: &mut TimerQueue<K>,
) -> Result<(), String>
where
    K: Copy + Eq + KeyHash + Wire,
{
    let mine = scope.key_groups();
    let groups = KeyGroupAssigner::new(scope.max_parallelism(), 1);
    let mut found: Vec<Timer<K>> = Vec::new();
    for extent in scope.keyed_extents(name) {
        let mut block = scope.open_block(extent)?;
        let bytes = block.payload;
        let mut at = 0;
        found.clear();
        while at < bytes.len() {
            let (key, n) = K::read(&bytes[at..])
                .map_err(|e| scope.mark_corrupt(block.describe(name, at, &e)))?;
            let (ts, m) = i64::read(&bytes[at + n..])
                .map_err(|e| scope.mark_corrupt(block.describe(name, at + n, &e)))?;
            let hash = key.key_hash();
            let kg = groups.key_group(hash);
            if !block.key_groups.contains(kg) {
                return Err(scope.mark_corrupt(format!(
                    "state `{name}`: a timer of key group {kg} is stored in the block of key \
                     groups {:?} ({})",
                    block.key_groups, block.segment
                )));
            }
            if mine.contains(kg) {
                found.push(Timer { ts, hash, key });
            }
            at += n + m;
        }
        block.check.update(bytes);
        block
            .check
            .finish()
            .map_err(|e| scope.mark_corrupt(format!("state `{name}`: {e}")))?;
        for &t in &found {
            queue.register(t);
        }
    }
    Ok(())
}

/// The instant at which processing time `ts` (ms) is reached, given that
/// it is `now_ms` at `now` (`None` if beyond what an `Instant` holds).
pub(crate) fn processing_deadline(now: Instant, now_ms: i64, ts: i64) -> Option<Instant> {
    let wait = u64::try_from(ts.saturating_sub(now_ms)).unwrap_or(0);
    now.checked_add(Duration::from_millis(wait))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::*;
    use crate::keyed::{KeyedProcessFunction, KeyedProcessOp};
    use crate::operator::tests::VecTail;
    use crate::operator::{ChainControl, Collector};
    use crate::source::SubtaskInfo;

    /// Per record `(key, event ts, processing ts, delete)`: registers (or
    /// deletes) the timers; emits `(key, ts, domain)` per firing. A firing
    /// of an event-time timer at an odd timestamp registers one at `ts - 1`
    /// (already passed: must fire in the same advance).
    struct Fn1 {
        timers: KeyedTimerService<u64>,
    }

    impl KeyedProcessFunction for Fn1 {
        type Key = u64;
        type In = (u64, Option<i64>, Option<i64>, bool);
        type Out = (u64, i64, TimeDomain);

        fn process<C: Collector<Self::Out>>(
            &mut self,
            ctx: &KeyContext<u64>,
            (_, event, processing, delete): Self::In,
            _out: &mut C,
        ) {
            if let Some(ts) = event {
                if delete {
                    self.timers.delete_event_time_timer(ctx, ts);
                } else {
                    self.timers.register_event_time_timer(ctx, ts);
                }
            }
            if let Some(ts) = processing {
                if delete {
                    self.timers.delete_processing_time_timer(ctx, ts);
                } else {
                    self.timers.register_processing_time_timer(ctx, ts);
                }
            }
        }

        fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<u64>> {
            Some(&mut self.timers)
        }

        fn on_timer<C: Collector<Self::Out>>(
            &mut self,
            ts: i64,
            ctx: &KeyContext<u64>,
            domain: TimeDomain,
            out: &mut C,
        ) {
            if domain == TimeDomain::EventTime {
                assert!(ctx.current_watermark() >= ts, "fired before its time");
                assert_eq!(self.timers.current_watermark(), ctx.current_watermark());
                if ts % 2 == 1 {
                    self.timers.register_event_time_timer(ctx, ts - 1);
                }
            }
            out.collect((*ctx.key(), ts, domain));
        }
    }

    type Op = KeyedProcessOp<
        Fn1,
        fn(&(u64, Option<i64>, Option<i64>, bool)) -> u64,
        VecTail<(u64, i64, TimeDomain)>,
    >;

    fn op(clock: Rc<Cell<i64>>) -> Op {
        let info = SubtaskInfo {
            index: 0,
            parallelism: 1,
            worker: 0,
            max_parallelism: 128,
        };
        KeyedProcessOp::new(
            Fn1 {
                timers: KeyedTimerService::with_clock(move || clock.get()),
            },
            |r: &(u64, Option<i64>, Option<i64>, bool)| r.0,
            VecTail {
                items: Vec::new(),
                finished: false,
                watermarks: Vec::new(),
                statuses: Vec::new(),
            },
            "timers",
            &info,
            false,
        )
    }

    fn fired(op: &mut Op) -> Vec<(u64, i64, TimeDomain)> {
        std::mem::take(&mut op_tail(op).items)
    }

    fn op_tail(op: &mut Op) -> &mut VecTail<(u64, i64, TimeDomain)> {
        op.output_mut()
    }

    const E: TimeDomain = TimeDomain::EventTime;
    const P: TimeDomain = TimeDomain::ProcessingTime;

    #[test]
    fn event_timers_fire_in_time_order_once_the_watermark_passes_them() {
        let mut op = op(Rc::new(Cell::new(0)));
        for (key, ts) in [(1, 30), (2, 10), (3, 20), (1, 10), (2, 40)] {
            op.collect((key, Some(ts), None, false));
        }
        op.on_watermark(9);
        assert!(fired(&mut op).is_empty(), "nothing is due at 9");
        op.on_watermark(20);
        let got = fired(&mut op);
        let times: Vec<i64> = got.iter().map(|f| f.1).collect();
        assert_eq!(times, vec![10, 10, 20]);
        let mut keys_at_10: Vec<u64> = got.iter().filter(|f| f.1 == 10).map(|f| f.0).collect();
        keys_at_10.sort();
        assert_eq!(keys_at_10, vec![1, 2]);
        assert_eq!(got[2], (3, 20, E));
        // The watermark is passed on after the timers it fired.
        assert_eq!(op_tail(&mut op).watermarks, vec![9, 20]);
        op.on_watermark(100);
        assert_eq!(fired(&mut op), vec![(1, 30, E), (2, 40, E)]);
    }

    #[test]
    fn timers_are_deduplicated_per_key_and_timestamp_and_can_be_deleted() {
        let mut op = op(Rc::new(Cell::new(0)));
        for _ in 0..3 {
            op.collect((7, Some(50), None, false));
        }
        op.collect((8, Some(50), None, false));
        op.collect((9, Some(60), None, false));
        op.collect((9, Some(60), None, true));
        // Delete, register again, delete again: gone.
        op.collect((9, Some(70), None, false));
        op.collect((9, Some(70), None, true));
        op.collect((9, Some(70), None, false));
        op.collect((9, Some(70), None, true));
        // Delete then register again: fires once.
        op.collect((8, Some(80), None, false));
        op.collect((8, Some(80), None, true));
        op.collect((8, Some(80), None, false));
        op.on_watermark(1_000);
        let mut got = fired(&mut op);
        got.sort_by_key(|f| (f.1, f.0));
        assert_eq!(got, vec![(7, 50, E), (8, 50, E), (8, 80, E)]);
    }

    #[test]
    fn timers_registered_in_on_timer_for_passed_times_fire_in_the_same_advance() {
        let mut op = op(Rc::new(Cell::new(0)));
        op.collect((4, Some(11), None, false));
        op.on_watermark(15);
        // 11 fired and registered 10 (passed), which fired right after.
        assert_eq!(fired(&mut op), vec![(4, 11, E), (4, 10, E)]);
        assert_eq!(op_tail(&mut op).watermarks, vec![15]);
    }

    #[test]
    fn a_timer_registered_for_a_passed_time_fires_at_the_next_advance() {
        let mut op = op(Rc::new(Cell::new(0)));
        op.on_watermark(100);
        op.collect((5, Some(40), None, false));
        assert!(fired(&mut op).is_empty());
        op.on_watermark(101);
        assert_eq!(fired(&mut op), vec![(5, 40, E)]);
    }

    #[test]
    fn end_of_input_fires_every_event_timer_without_a_watermark() {
        let mut op = op(Rc::new(Cell::new(0)));
        op.collect((1, Some(i64::MAX - 1), None, false));
        op.collect((2, Some(6), None, false));
        op.collect((3, None, Some(1_000), false));
        op.end_input();
        assert_eq!(fired(&mut op), vec![(2, 6, E), (1, i64::MAX - 1, E)]);
        // No watermark was made up for downstream.
        assert!(op_tail(&mut op).watermarks.is_empty());
        // Processing-time timers no longer fire or wake the task.
        let flushed = op.flush(Instant::now());
        assert!(fired(&mut op).is_empty());
        assert_eq!(flushed.next_deadline, None);
    }

    #[test]
    fn processing_timers_fire_by_the_clock_and_report_the_next_as_a_deadline() {
        let clock = Rc::new(Cell::new(1_000));
        let mut op = op(clock.clone());
        op.collect((1, None, Some(1_050), false));
        op.collect((2, None, Some(1_020), false));
        op.collect((2, None, Some(1_020), false));
        op.collect((3, None, Some(1_500), false));
        op.collect((3, None, Some(1_500), true));
        let now = Instant::now();
        let flushed = op.flush(now);
        assert!(!flushed.progressed);
        assert_eq!(flushed.next_deadline, Some(now + Duration::from_millis(20)));
        clock.set(1_030);
        let flushed = op.flush(now);
        assert!(flushed.progressed);
        assert_eq!(fired(&mut op), vec![(2, 1_020, P)]);
        assert_eq!(flushed.next_deadline, Some(now + Duration::from_millis(20)));
        // Event time does not fire processing timers.
        op.on_watermark(i64::MAX);
        assert!(fired(&mut op).is_empty());
        clock.set(2_000);
        let flushed = op.flush(now);
        assert_eq!(fired(&mut op), vec![(1, 1_050, P)]);
        assert_eq!(flushed.next_deadline, None);
    }

    #[test]
    fn the_service_reports_its_timers_and_clock() {
        let mut s: KeyedTimerService<u64> = KeyedTimerService::with_clock(|| 42);
        let a = KeyContext::new(1u64);
        let b = KeyContext::new(2u64);
        s.register_event_time_timer(&a, 5);
        s.register_event_time_timer(&a, 5);
        s.register_event_time_timer(&b, 3);
        s.register_processing_time_timer(&b, 9);
        assert_eq!(s.event_time_timers(), 2);
        assert_eq!(s.processing_time_timers(), 1);
        assert_eq!(s.next_timer(TimeDomain::EventTime), Some(3));
        s.delete_event_time_timer(&b, 3);
        assert_eq!(s.next_timer(TimeDomain::EventTime), Some(5));
        assert_eq!(s.current_processing_time(), 42);
        assert_eq!(s.current_watermark(), i64::MIN);
        assert_eq!(s.pop_due(TimeDomain::ProcessingTime, 8), None);
        assert_eq!(s.pop_due(TimeDomain::ProcessingTime, 9), Some((9, 2)));
    }

    #[test]
    fn many_deletes_do_not_grow_the_heap_without_bound() {
        let mut s: KeyedTimerService<u64> = KeyedTimerService::with_clock(|| 0);
        for i in 0..10_000u64 {
            let ctx = KeyContext::new(i);
            s.register_event_time_timer(&ctx, i as i64);
            s.delete_event_time_timer(&ctx, i as i64);
        }
        assert_eq!(s.event_time_timers(), 0);
        assert!(
            s.event.heap.len() <= 1024 + 1,
            "heap kept {}",
            s.event.heap.len()
        );
        assert_eq!(s.next_timer(TimeDomain::EventTime), None);
    }

    #[test]
    fn a_snapshot_serializes_each_timer_in_its_key_group() {
        let mut s: KeyedTimerService<u64> = KeyedTimerService::with_clock(|| 0);
        for k in 0..100u64 {
            s.register_event_time_timer(&KeyContext::new(k), k as i64 * 10);
        }
        s.register_processing_time_timer(&KeyContext::new(3u64), 77);
        let mut states = Vec::new();
        s.snapshot(&mut states);
        let names: Vec<&str> = states.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, vec![EVENT_TIMERS_STATE, PROCESSING_TIMERS_STATE]);
        let range = KeyGroupRange::new(0, 128);
        let mut out = Vec::new();
        let event = &states[0].1;
        assert_eq!(event.len(), 100);
        event.serialize_part(128, range, 0..event.chunk_count(), &mut out);
        let groups = KeyGroupAssigner::new(128, 1);
        let mut seen = Vec::new();
        for (kg, buf) in out.iter().enumerate() {
            let mut at = 0;
            while at < buf.len() {
                let (k, n) = u64::read(&buf[at..]).unwrap();
                let (ts, m) = i64::read(&buf[at + n..]).unwrap();
                assert_eq!(groups.key_group(k.key_hash()) as usize, kg);
                seen.push((k, ts));
                at += n + m;
            }
        }
        seen.sort();
        let expected: Vec<(u64, i64)> = (0..100u64).map(|k| (k, k as i64 * 10)).collect();
        assert_eq!(seen, expected);
    }
}
