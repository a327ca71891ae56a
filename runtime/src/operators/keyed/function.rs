//! The user's logic of a keyed process operator (Flink's
//! `KeyedProcessFunction`).

use crate::operators::side_output::SideOutputs;
use weir_state::KeyHash;

use crate::chain::control::Collector;
use crate::core::timestamp::{current_record_timestamp, set_record_timestamp};
use crate::state::key_context::KeyContext;
use crate::state::key_selector::KeySelector;
use crate::state::timers::{TimeDomain, TimerQueues};
use crate::state::visitor::KeyedStates;

/// User logic of a keyed process operator.
pub trait KeyedProcessFunction: 'static {
    /// The key type of the key_by before it.
    /// Any `Eq + KeyHash` type; keyed `ValueState` needs fixed-size
    /// (`Copy`) keys.
    type Key: Eq + KeyHash + 'static;
    /// Records in.
    type In;
    /// Records out.
    type Out;

    /// Processes one record of key `ctx.key()`.
    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<Self::Key>,
        value: Self::In,
        out: &mut C,
    );

    /// Processes records of `records` while `out` is available, at most
    /// `limit`, each with the context of its key (`key_of`) at operator
    /// watermark `watermark`; returns how many it took. The default calls
    /// [`process`](Self::process) for each. A function overrides it to
    /// run through several records in one loop (the event-time window
    /// folds a run of records of one window into its table); the result
    /// must be the same.
    #[inline]
    fn process_many<I, KF, C>(
        &mut self,
        records: &mut I,
        key_of: &KF,
        watermark: i64,
        limit: usize,
        out: &mut C,
    ) -> usize
    where
        I: Iterator<Item = Self::In>,
        KF: KeySelector<Self::In, Key = Self::Key>,
        C: Collector<Self::Out>,
    {
        if self.prefetch_pays() {
            return process_ahead(self, records, key_of, watermark, limit, out);
        }
        process_plain(self, records, key_of, watermark, (0, limit), out)
    }

    /// Whether [`prefetch`](Self::prefetch) is worth calling for the next
    /// records: true makes the default
    /// [`process_many`](Self::process_many) take records
    /// [`PREFETCH_AHEAD`] ahead of the one it processes and prefetch the
    /// state of each as it is taken, so that the cache misses of several
    /// random keys overlap instead of stalling one after another. Asked
    /// once per batch of records. Default: false. A function whose keyed
    /// state can outgrow the caches answers its state's
    /// [`KeyedValueState::prefetch_pays`](crate::KeyedValueState::prefetch_pays):
    ///
    /// ```text
    /// fn prefetch_pays(&self) -> bool {
    ///     self.totals.prefetch_pays()
    /// }
    ///
    /// fn prefetch(&self, hash: u64) {
    ///     self.totals.prefetch(hash);
    /// }
    /// ```
    #[inline]
    fn prefetch_pays(&self) -> bool {
        false
    }

    /// Starts loading what [`process`](Self::process) will read for the key
    /// whose hash is `hash` (its [`KeyContext::hash`]): a hint that must
    /// not change any state. Called only while
    /// [`prefetch_pays`](Self::prefetch_pays) is true. Default: nothing.
    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        let _ = hash;
    }

    /// The operator's event time advanced to `watermark` (ms; `i64::MAX`
    /// once every input ended), before the watermark is passed on: the
    /// place for event-time logic (timers, windows) to emit what is due.
    /// Called only when it advances.
    fn on_watermark<C: Collector<Self::Out>>(&mut self, watermark: i64, out: &mut C) {
        let _ = (watermark, out);
    }

    /// How far (ms, at least 0) the watermark the operator passes on
    /// stays behind its own: a function whose output may carry event
    /// times up to this much behind the operator's watermark (weir SQL's
    /// interval join, as Flink's `KeyedCoProcessOperatorWithWatermarkDelay`)
    /// holds it back so that its records are not late downstream. The
    /// end of input (`i64::MAX`) passes unchanged. Default: 0.
    fn watermark_delay(&self) -> i64 {
        0
    }

    /// The input ended (bounded sources): emit any final results.
    fn on_end_of_input<C: Collector<Self::Out>>(&mut self, out: &mut C) {
        let _ = out;
    }

    /// Hands every keyed state of this function to `states`, the same way
    /// for snapshots and restores:
    ///
    /// ```text
    /// fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
    ///     states.value(&mut self.totals);
    /// }
    /// ```
    ///
    /// A function with keyed state must list all of it: with checkpointing
    /// on, a state created but not visited fails the job at start (it would
    /// be lost on restore).
    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        let _ = states;
    }

    /// Lists the side outputs this function emits to, so that each is
    /// connected to the streams the job took for its tag
    /// ([`Stream::get_side_output`](crate::api::stream::Stream::get_side_output)):
    ///
    /// ```text
    /// fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
    ///     outputs.connect(&self.rejected);
    /// }
    /// ```
    ///
    /// A handle not listed stays unconnected: what it emits is dropped.
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        let _ = outputs;
    }

    /// The function's timer service, if it uses timers: a
    /// [`KeyedTimerService`](crate::state::timers::KeyedTimerService) field it registers
    /// timers in. The operator fires them (calling
    /// [`on_timer`](Self::on_timer)), checkpoints and restores them.
    ///
    /// ```text
    /// fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<u64>> {
    ///     Some(&mut self.timers)
    /// }
    /// ```
    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<Self::Key>> {
        None
    }

    /// Timer `timestamp` of domain `domain` fired for key `ctx.key()`
    /// (event-time timers in timestamp order, before the watermark that
    /// fired them is passed on).
    fn on_timer<C: Collector<Self::Out>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<Self::Key>,
        domain: TimeDomain,
        out: &mut C,
    ) {
        let _ = (timestamp, ctx, domain, out);
    }
}

/// How many records [`process_ahead`] takes ahead of the one it processes:
/// enough misses in flight to cover a memory access at W1's rate per
/// record, few enough that the taken records stay in registers and L1.
pub const PREFETCH_AHEAD: usize = 8;

/// The default [`KeyedProcessFunction::process_many`] with prefetching:
/// each record is taken, its key hashed and its state prefetched
/// [`PREFETCH_AHEAD`] records before it is processed, in order. A record
/// taken keeps its event timestamp (a timestamped input sets it as it
/// decodes the next one). A record taken cannot be given back, so records
/// are taken ahead only while `out` can surely take the ones in flight and
/// the next ([`ChainControl::is_available_for`](crate::chain::control::ChainControl::is_available_for));
/// once it cannot, the ones taken are processed and the rest go one at a
/// time while `out` is available, as without the look-ahead. An exchange's
/// output is thus never overdrawn by the look-ahead.
#[inline]
fn process_ahead<F, I, KF, C>(
    f: &mut F,
    records: &mut I,
    key_of: &KF,
    watermark: i64,
    limit: usize,
    out: &mut C,
) -> usize
where
    F: KeyedProcessFunction + ?Sized,
    I: Iterator<Item = F::In>,
    KF: KeySelector<F::In, Key = F::Key>,
    C: Collector<F::Out>,
{
    type Taken<F> = (
        KeyContext<<F as KeyedProcessFunction>::Key>,
        i64,
        <F as KeyedProcessFunction>::In,
    );
    let mut ring: [Option<Taken<F>>; PREFETCH_AHEAD] = std::array::from_fn(|_| None);
    let (mut taken, mut done) = (0, 0);
    // Owed to `out` once this record is taken: the ones in the ring and it.
    while taken < limit && out.is_available_for(taken - done + 1) {
        let Some(record) = records.next() else {
            break;
        };
        let ctx = KeyContext::with_watermark(key_of.key(&record), watermark);
        f.prefetch(ctx.hash());
        let at = &mut ring[taken % PREFETCH_AHEAD];
        if let Some((ctx, timestamp, record)) =
            at.replace((ctx, current_record_timestamp(), record))
        {
            set_record_timestamp(timestamp);
            f.process(&ctx, record, out);
            done += 1;
        }
        taken += 1;
    }
    while done < taken {
        if let Some((ctx, timestamp, record)) = ring[done % PREFETCH_AHEAD].take() {
            set_record_timestamp(timestamp);
            f.process(&ctx, record, out);
        }
        done += 1;
    }
    process_plain(f, records, key_of, watermark, (taken, limit), out)
}

/// The default [`KeyedProcessFunction::process_many`] without prefetching:
/// each record processed as it is taken while `out` is available, counting
/// from `taken` up to `limit`; returns the new count.
#[inline]
fn process_plain<F, I, KF, C>(
    f: &mut F,
    records: &mut I,
    key_of: &KF,
    watermark: i64,
    (mut taken, limit): (usize, usize),
    out: &mut C,
) -> usize
where
    F: KeyedProcessFunction + ?Sized,
    I: Iterator<Item = F::In>,
    KF: KeySelector<F::In, Key = F::Key>,
    C: Collector<F::Out>,
{
    if KF::REUSES_KEY {
        return process_moving_key(f, records, key_of, watermark, (taken, limit), out);
    }
    while taken < limit && out.is_available() {
        let Some(record) = records.next() else {
            break;
        };
        let ctx = KeyContext::with_watermark(key_of.key(&record), watermark);
        f.process(&ctx, record, out);
        taken += 1;
    }
    taken
}

/// [`process_plain`] for a key selector that reuses the key it sets
/// ([`KeySelector::REUSES_KEY`]): one key for the run, set in place for
/// each record (a key selected by reference is cloned into the allocation
/// of the one before: for a `String` key, an allocation and a free per
/// record fewer). Selectors that replace the key keep the loop
/// above, which W1 measured cheaper for them.
#[inline]
fn process_moving_key<F, I, KF, C>(
    f: &mut F,
    records: &mut I,
    key_of: &KF,
    watermark: i64,
    (mut taken, limit): (usize, usize),
    out: &mut C,
) -> usize
where
    F: KeyedProcessFunction + ?Sized,
    I: Iterator<Item = F::In>,
    KF: KeySelector<F::In, Key = F::Key>,
    C: Collector<F::Out>,
{
    if taken >= limit || !out.is_available() {
        return taken;
    }
    let Some(mut record) = records.next() else {
        return taken;
    };
    // Each record gets a context of its own, as in the loop above; the key
    // moves from one to the next and takes each record's key in place.
    let mut key = key_of.key(&record);
    loop {
        let ctx = KeyContext::with_watermark(key, watermark);
        f.process(&ctx, record, out);
        taken += 1;
        key = ctx.into_key();
        if taken >= limit || !out.is_available() {
            break;
        }
        let Some(next) = records.next() else {
            break;
        };
        key_of.key_into(&next, &mut key);
        record = next;
    }
    taken
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use weir_state::{KeyHash, StateKey};

    use super::{KeyedProcessFunction, PREFETCH_AHEAD};
    use std::time::{Duration, Instant};

    use crate::chain::control::{ChainControl, Collector};
    use crate::chain::testing::{RoomTail, VecTail};
    use crate::core::timestamp::set_record_timestamp;
    use crate::state::key_context::KeyContext;
    use crate::state::value::KeyedValueState;

    /// W1's count per key, emitting `(key, count, record timestamp)`;
    /// with `ahead`, through the look-ahead, noting every prefetch. Checks
    /// that each record's context holds its own key and hash.
    struct Counts<K: StateKey = u64> {
        totals: KeyedValueState<K, u64>,
        ahead: bool,
        prefetched: RefCell<Vec<u64>>,
    }

    impl<K: StateKey> Counts<K> {
        fn new(ahead: bool) -> Self {
            Self {
                totals: KeyedValueState::new("counts"),
                ahead,
                prefetched: RefCell::default(),
            }
        }
    }

    impl<K: StateKey + Eq + std::fmt::Debug + 'static> KeyedProcessFunction for Counts<K> {
        type Key = K;
        type In = (K, u64);
        type Out = (K, u64, Option<i64>);

        fn process<C: Collector<Self::Out>>(
            &mut self,
            ctx: &KeyContext<K>,
            (key, _): (K, u64),
            out: &mut C,
        ) {
            assert_eq!(*ctx.key(), key);
            assert_eq!(ctx.hash(), key.key_hash());
            let n = self.totals.value_mut_or_insert_with(ctx, || 0);
            *n += 1;
            out.collect((key, *n, ctx.timestamp()));
        }

        fn prefetch_pays(&self) -> bool {
            self.ahead
        }

        fn prefetch(&self, hash: u64) {
            self.prefetched.borrow_mut().push(hash);
            self.totals.prefetch(hash);
        }
    }

    /// Records `(i % 7, i)` that set their timestamp (`10 * i`) as they are
    /// taken, as a timestamped exchange's decoder does.
    fn records(n: u64) -> impl Iterator<Item = (u64, u64)> {
        (0..n).map(|i| {
            set_record_timestamp(10 * i as i64);
            (i % 7, i)
        })
    }

    /// What [`Counts`] emits.
    type Out = (u64, u64, Option<i64>);

    /// Batches of `limit` until `n` records are taken: what came out, and
    /// how many each batch took.
    fn run(f: &mut Counts, n: u64, limit: usize) -> (Vec<Out>, Vec<usize>) {
        let mut out = VecTail::default();
        let mut input = records(n);
        let mut batches = Vec::new();
        loop {
            let taken = f.process_many(&mut input, &|r: &(u64, u64)| r.0, 0, limit, &mut out);
            if taken == 0 {
                break;
            }
            batches.push(taken);
        }
        (out.items, batches)
    }

    #[test]
    fn the_look_ahead_never_takes_more_than_the_output_has_room_for() {
        let n = 10 * PREFETCH_AHEAD as u64;
        for room in [
            0,
            1,
            PREFETCH_AHEAD - 1,
            PREFETCH_AHEAD,
            PREFETCH_AHEAD + 1,
            37,
        ] {
            let mut input = records(n);
            let mut out = RoomTail::new(room);
            let mut ahead = Counts::new(true);
            let taken = ahead.process_many(&mut input, &|r: &(u64, u64)| r.0, 0, 1000, &mut out);
            assert_eq!(
                out.overdrafts, 0,
                "room {room}: collected past the tail's room"
            );
            assert_eq!(taken, room, "room {room}: takes exactly what fits");
            assert_eq!(out.items.len(), room);
            let (plain, _) = run(&mut Counts::new(false), room as u64, 1000);
            assert_eq!(out.items, plain, "room {room}");
            // The rest of the input is still there, in order.
            assert_eq!(input.next().map(|r| r.1), Some(room as u64), "room {room}");
        }
        // With room for the look-ahead, it did prefetch.
        let mut ahead = Counts::new(true);
        let mut out = RoomTail::new(37);
        ahead.process_many(&mut records(n), &|r: &(u64, u64)| r.0, 0, 1000, &mut out);
        assert_eq!(out.overdrafts, 0, "collected past the tail's room");
        assert!(!ahead.prefetched.borrow().is_empty());
    }

    #[test]
    fn the_look_ahead_into_an_exchange_never_overdraws_its_pool() {
        use std::sync::Arc;

        use weir_net::{channel, BufferPool, ChannelEvent, Doorbell};

        use crate::exchange::output::ExchangeOutput;

        // Buffers of ~2 records, 12 of them, no overdraft allowed (the
        // pool's maximum is its size: growing it panics).
        let buffers = 12;
        let mut pool = BufferPool::new(buffers, 64);
        let (mut senders, mut receivers) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let bell = Arc::new(Doorbell::new());
            let (tx, rx, ret) = channel(2, buffers, bell.clone(), bell);
            pool.add_return_path(ret);
            senders.push(tx);
            receivers.push(rx);
        }
        let mut out = ExchangeOutput::new(
            |r: &Out| r.0,
            128,
            senders,
            pool,
            buffers,
            Duration::from_secs(60),
            crate::core::barrier::BarrierMode::Aligned,
        );
        // Records received; each buffer goes back to the pool.
        let drain = |receivers: &mut Vec<weir_net::ChannelReceiver>| {
            let mut records = 0;
            for rx in receivers {
                while let Some(event) = rx.recv() {
                    if let ChannelEvent::Buffer(b) = event {
                        records += b.records() as usize;
                        rx.recycle(b);
                    }
                }
            }
            records
        };
        let mut f = Counts::new(true);
        let n = 2000;
        let mut input = records(n);
        let (mut taken, mut received) = (0, 0);
        // The receivers drain only every few batches: the pool runs dry
        // again and again, with records of the look-ahead in flight.
        for round in 0.. {
            let got = f.process_many(&mut input, &|r: &(u64, u64)| r.0, 0, 1000, &mut out);
            taken += got;
            out.flush(Instant::now());
            if round % 3 == 2 || got == 0 {
                received += drain(&mut receivers);
            }
            if taken == n as usize {
                break;
            }
            assert!(round < 100_000, "stalled at {taken} of {n}");
        }
        out.end_input();
        while !out.finish() {
            received += drain(&mut receivers);
        }
        received += drain(&mut receivers);
        assert_eq!(received, n as usize);
        assert!(!f.prefetched.borrow().is_empty(), "it did look ahead");
    }

    #[test]
    fn the_look_ahead_processes_what_the_plain_loop_does_in_the_same_order() {
        for limit in [
            1,
            2,
            PREFETCH_AHEAD - 1,
            PREFETCH_AHEAD,
            PREFETCH_AHEAD + 1,
            100,
        ] {
            let n = 3 * PREFETCH_AHEAD as u64 + 5;
            let (plain, plain_batches) = run(&mut Counts::new(false), n, limit);
            let mut ahead = Counts::new(true);
            let (got, batches) = run(&mut ahead, n, limit);
            assert_eq!(got, plain, "limit {limit}");
            assert_eq!(batches, plain_batches, "limit {limit}");
            // Each record keeps its own timestamp, though later ones were
            // taken before it was processed.
            for (i, r) in got.iter().enumerate() {
                assert_eq!(r.2, Some(10 * i as i64), "limit {limit}, record {i}");
            }
            let want: Vec<u64> = (0..n).map(|i| (i % 7).key_hash()).collect();
            assert_eq!(*ahead.prefetched.borrow(), want, "limit {limit}");
        }
    }

    fn user(r: &(String, u64)) -> &String {
        &r.0
    }

    #[test]
    fn a_key_moved_across_records_is_each_records_key() {
        use crate::state::key_selector::KeyByRef;

        // Keys of every length from empty to longer than the ones before
        // them, so that a key cloned into the one before it both fits and
        // outgrows it.
        let key = |i: u64| "k".repeat((i * 7 % 23) as usize) + &(i % 5).to_string();
        let records = |n: u64| {
            (0..n).map(move |i| {
                set_record_timestamp(10 * i as i64);
                (key(i), i)
            })
        };
        let n = 5 * PREFETCH_AHEAD as u64 + 3;
        let want: Vec<(String, u64, Option<i64>)> = {
            let mut seen = std::collections::HashMap::new();
            (0..n)
                .map(|i| {
                    let c = seen.entry(key(i)).or_insert(0);
                    *c += 1;
                    (key(i), *c, Some(10 * i as i64))
                })
                .collect()
        };
        for ahead in [false, true] {
            for limit in [1, PREFETCH_AHEAD, 100] {
                let mut f = Counts::<String>::new(ahead);
                let (mut out, mut input) = (VecTail::default(), records(n));
                while f.process_many(&mut input, &KeyByRef(user), 0, limit, &mut out) > 0 {}
                assert_eq!(out.items, want, "ahead {ahead}, limit {limit}");
            }
        }
    }
}
