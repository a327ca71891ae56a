//! Keyed timers: Flink's `TimerService` for keyed process functions.
//!
//! A [`KeyedProcessFunction`](crate::operators::keyed::function::KeyedProcessFunction) that uses timers
//! owns a [`KeyedTimerService`] (a field, like its keyed states) and hands
//! it to its operator through
//! [`timer_service`](crate::operators::keyed::function::KeyedProcessFunction::timer_service). In
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

use weir_net::Wire;
use weir_state::{KeyGroupAssigner, KeyGroupRange, StateKey};

use crate::checkpoint::error::RestoreError;
use crate::checkpoint::restore::RestoreScope;
use crate::core::snapshot::FrozenKeyedState;
use crate::core::time::system_time_ms;
use crate::state::key_context::KeyContext;

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
#[derive(Clone, Debug)]
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

impl<K: StateKey> TimerQueue<K> {
    fn register(&mut self, timer: Timer<K>) {
        if !self.live.contains(&timer) {
            self.live.insert(timer.clone());
            self.heap.push(Reverse(ByTime(timer)));
        }
    }

    fn delete(&mut self, timer: &Timer<K>) {
        if self.live.remove(timer) && self.heap.len() > 2 * self.live.len() + 1024 {
            // Stale entries outnumber the live ones: rebuild (O(n), at most
            // once per n deletions).
            self.heap = self
                .live
                .iter()
                .map(|t| Reverse(ByTime(t.clone())))
                .collect();
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

impl<K: StateKey> Default for KeyedTimerService<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: StateKey> KeyedTimerService<K> {
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
            key: ctx.key().clone(),
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
/// object-safe, so that [`KeyedProcessFunction`](crate::operators::keyed::function::KeyedProcessFunction)
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
    fn restore(&mut self, scope: &RestoreScope<'_>) -> Result<(), RestoreError>;

    /// The registered timers of `domain` as `(timestamp, key)`, in the
    /// order they fire (for tests and the operator test harness).
    fn registered(&self, domain: TimeDomain) -> Vec<(i64, K)>;

    /// Replaces the processing-time clock (ms): the operator test harness
    /// drives it by hand, whatever clock the function built its service
    /// with, as Flink's test harnesses drive the processing-time service.
    fn set_processing_time_clock(&mut self, clock: Box<dyn Fn() -> i64>);
}

impl<K> TimerQueues<K> for KeyedTimerService<K>
where
    K: StateKey + Wire + 'static,
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
            let entries: Vec<(K, i64)> = queue.live.iter().map(|t| (t.key.clone(), t.ts)).collect();
            out.push((name.to_owned(), Box::new(FrozenTimers { entries })));
        }
    }

    fn restore(&mut self, scope: &RestoreScope<'_>) -> Result<(), RestoreError> {
        restore_queue(scope, EVENT_TIMERS_STATE, &mut self.event)?;
        restore_queue(scope, PROCESSING_TIMERS_STATE, &mut self.processing)
    }

    fn registered(&self, domain: TimeDomain) -> Vec<(i64, K)> {
        let queue = match domain {
            TimeDomain::EventTime => &self.event,
            TimeDomain::ProcessingTime => &self.processing,
        };
        let mut timers: Vec<&Timer<K>> = queue.live.iter().collect();
        timers.sort_by_key(|t| (t.ts, t.hash));
        timers.into_iter().map(|t| (t.ts, t.key.clone())).collect()
    }

    fn set_processing_time_clock(&mut self, clock: Box<dyn Fn() -> i64>) {
        self.clock = clock;
    }
}

/// Timers copied at a barrier.
struct FrozenTimers<K> {
    entries: Vec<(K, i64)>,
}

/// Entries per serialization part.
const TIMER_CHUNK: usize = 1 << 16;

impl<K: StateKey + Wire> FrozenKeyedState for FrozenTimers<K> {
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
) -> Result<(), RestoreError>
where
    K: StateKey + Wire,
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
            let (key, n) =
                K::read(&bytes[at..]).map_err(|e| scope.reject(block.malformed(name, at, e)))?;
            let (ts, m) = i64::read(&bytes[at + n..])
                .map_err(|e| scope.reject(block.malformed(name, at + n, e)))?;
            let hash = key.key_hash();
            let kg = groups.key_group(hash);
            if !block.key_groups.contains(kg) {
                return Err(scope.reject(block.misplaced(name, "timer", kg)));
            }
            if mine.contains(kg) {
                found.push(Timer { ts, hash, key });
            }
            at += n + m;
        }
        block.check.update(bytes);
        scope.finish_check(name, block.check)?;
        for t in found.drain(..) {
            queue.register(t);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
