//! The quickstart job: what `weir run --config configs/quickstart.toml` runs.
//!
//! A stream of generated network events `(user, bytes)` is filtered (runt
//! packets under 64 bytes are dropped), keyed by user, and a keyed process
//! operator keeps each user's event count and byte total in keyed
//! `ValueState`. The sink keeps the latest totals per user; at the end the
//! job prints the heaviest users and checks every user's totals against a
//! single-threaded computation of the same data.
//!
//! User ids are integers by default; `job.key-type = "string"` makes them
//! `String`s (`user-<n>`), allocated per event, hashed by their bytes and
//! kept as variable-size keys in the keyed state and its checkpoints: the
//! same job and results over the key type most real jobs have.
//!
//! `job.rate` paces the generator (events per second over all source
//! subtasks), so the job's latency can be measured at a chosen load as
//! W1's and W3's are: with `metrics.latency.interval` its latency markers
//! reach the sinks, and `weir run` reports their percentiles in its JSON.

use std::sync::{Arc, Mutex};

use weir_runtime::{
    Collector, JobGraph, KeyContext, KeyedProcessFunction, KeyedStates, KeyedValueState, Paced,
    SequenceSource, Sink, StateKey, SubtaskInfo, Wire,
};

use compact_str::CompactString;

use crate::params::KeyType;
use crate::workload::splitmix64;

/// Default number of events.
pub const DEFAULT_EVENTS: u64 = 100_000_000;
/// Default number of users.
pub const DEFAULT_USERS: u64 = 10_000;
/// The uid of the job's source (what `job.rate` paces).
pub const SOURCE_UID: &str = "events";
/// Events smaller than this are dropped by the filter.
pub const RUNT_BYTES: u64 = 64;

/// Event `i`: `(user, bytes)`.
#[inline(always)]
pub fn event(i: u64, users: u64) -> (u64, u64) {
    let user = splitmix64(i) % users;
    let bytes = splitmix64(i ^ 0x5EED) % 1500 + 40;
    (user, bytes)
}

/// The type of the quickstart's user ids: `u64`, or `String` (`user-<n>`).
pub trait UserId: StateKey + Wire + Send + Sync + std::fmt::Debug + 'static {
    /// The type as `job.key-type` names it.
    const KEY_TYPE: KeyType;
    /// The id of user number `user`.
    fn from_number(user: u64) -> Self;
    /// The user's number; `None` if the id is none this job makes.
    fn number(&self) -> Option<u64>;
    /// What a source subtask makes once to pick ids from ([`UserId::pick`]).
    fn table(users: u64) -> Vec<Self>;
    /// The id of user number `user`, from `table`.
    fn pick(table: &[Self], user: u64) -> Self;
}

impl UserId for u64 {
    const KEY_TYPE: KeyType = KeyType::Integer;
    #[inline(always)]
    fn from_number(user: u64) -> Self {
        user
    }
    #[inline(always)]
    fn number(&self) -> Option<u64> {
        Some(*self)
    }
    /// No table: the ids are the numbers.
    fn table(_: u64) -> Vec<Self> {
        Vec::new()
    }
    #[inline(always)]
    fn pick(_: &[Self], user: u64) -> Self {
        user
    }
}

/// String ids are `user-` and the number in decimal.
const USER_PREFIX: &str = "user-";

/// The number of id `user-<n>`; `None` for any other text. By hand: the
/// sink calls it per record, and `str::parse` or `strip_prefix` cost more
/// than the rest of the sink.
#[inline]
fn number_of(id: &str) -> Option<u64> {
    let bytes = id.as_bytes();
    let prefix = USER_PREFIX.len();
    // One to 19 digits: 19 nines still fit a `u64`.
    if !(prefix + 1..=prefix + 19).contains(&bytes.len())
        || bytes[..prefix] != *USER_PREFIX.as_bytes()
    {
        return None;
    }
    let mut n = 0u64;
    for &d in &bytes[prefix..] {
        let digit = d.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        n = n * 10 + u64::from(digit);
    }
    Some(n)
}

impl UserId for String {
    const KEY_TYPE: KeyType = KeyType::String;
    #[inline]
    fn from_number(user: u64) -> Self {
        format!("{USER_PREFIX}{user}")
    }
    #[inline]
    fn number(&self) -> Option<u64> {
        number_of(self)
    }
    /// Every id, made once: a generator picks among known ids, as a real
    /// stream's users repeat.
    fn table(users: u64) -> Vec<Self> {
        (0..users).map(Self::from_number).collect()
    }
    #[inline(always)]
    fn pick(table: &[Self], user: u64) -> Self {
        table[user as usize].clone()
    }
}

impl UserId for CompactString {
    const KEY_TYPE: KeyType = KeyType::CompactString;
    #[inline]
    fn from_number(user: u64) -> Self {
        compact_str::format_compact!("{USER_PREFIX}{user}")
    }
    #[inline]
    fn number(&self) -> Option<u64> {
        number_of(self)
    }
    fn table(users: u64) -> Vec<Self> {
        (0..users).map(Self::from_number).collect()
    }
    #[inline(always)]
    fn pick(table: &[Self], user: u64) -> Self {
        table[user as usize].clone()
    }
}

/// Per user: events and bytes, emitted on every event.
pub struct UserTotals<U: UserId> {
    totals: KeyedValueState<U, (u64, u64)>,
}

impl<U: UserId> Default for UserTotals<U> {
    fn default() -> Self {
        Self {
            totals: KeyedValueState::new("user-totals"),
        }
    }
}

impl<U: UserId> KeyedProcessFunction for UserTotals<U> {
    type Key = U;
    type In = (U, u64);
    type Out = (U, u64, u64);

    // Always inlined into the operator's input loop (the compiler had left
    // it a call): the record and its key stay in registers instead of
    // being passed, and moved again, through memory (-8% instructions per
    // record with integer ids, -1.4% with string ids).
    #[inline(always)]
    fn process<C: Collector<Self::Out>>(&mut self, ctx: &KeyContext<U>, e: (U, u64), out: &mut C) {
        let t = self.totals.value_mut_or_insert_with(ctx, || (0, 0));
        t.0 += 1;
        t.1 += e.1;
        out.collect((e.0, t.0, t.1));
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.totals);
    }
}

/// `(user, events, bytes)` of the users one sink subtask saw.
type Totals = Vec<(u64, u64, u64)>;

/// Final per-user totals of all sink subtasks.
pub struct QuickstartResults {
    slots: Vec<Mutex<Option<Totals>>>,
}

struct LatestTotals<U> {
    index: usize,
    /// The sink's subtask: a rescaled restore keeps the users of its key
    /// groups.
    info: SubtaskInfo,
    latest: Vec<(u64, u64)>,
    results: Arc<QuickstartResults>,
    ids: std::marker::PhantomData<U>,
}

impl<U: UserId> Sink for LatestTotals<U> {
    type In = (U, u64, u64);

    // Always inlined, as `UserTotals::process`.
    #[inline(always)]
    fn invoke(&mut self, (user, count, bytes): (U, u64, u64)) {
        // Every id comes from `UserId::from_number` below `users`.
        let slot = user
            .number()
            .and_then(|u| self.latest.get_mut(usize::try_from(u).ok()?))
            .unwrap_or_else(|| panic!("the quickstart made no user id {user:?}"));
        *slot = (count, bytes);
    }

    fn finish(&mut self) {
        let totals = self
            .latest
            .iter()
            .enumerate()
            .filter(|(_, t)| t.0 > 0)
            .map(|(u, t)| (u as u64, t.0, t.1))
            .collect();
        *self.results.slots[self.index]
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(totals);
    }

    /// The latest totals are the sink's state (a restored run reports
    /// users whose last event came before the checkpoint too).
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Vec<u8>, String> {
        let mut state = Vec::new();
        for (user, t) in self.latest.iter().enumerate() {
            if t.0 > 0 {
                for v in [user as u64, t.0, t.1] {
                    state.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
        Ok(state)
    }

    fn initialize_state(&mut self, restored: Option<(u64, &[u8])>) -> Result<(), String> {
        let Some((checkpoint, state)) = restored else {
            return Ok(());
        };
        self.restore_totals(checkpoint, state, |_| true)
    }

    /// The sink follows `key_by(user)` by a forward edge, so it sees the
    /// users of its key groups: at another parallelism it keeps, of every
    /// old subtask's totals, those of its users (each user's are in one
    /// old state, and go to the one new subtask that now sees the user).
    fn initialize_rescaled_state(
        &mut self,
        checkpoint_id: u64,
        states: &[&[u8]],
    ) -> Option<Result<(), String>> {
        let info = self.info;
        let mine = |user: u64| {
            let max = info.max_parallelism;
            // The key group of the id the job keys by, not of its number.
            let group = weir_state::assign_to_key_group(&U::from_number(user), max);
            weir_state::subtask_for_key_group(max, info.parallelism as u32, group) as usize
                == info.index
        };
        for state in states {
            if let Err(e) = self.restore_totals(checkpoint_id, state, mine) {
                return Some(Err(e));
            }
        }
        Some(Ok(()))
    }
}

impl<U: UserId> LatestTotals<U> {
    /// Takes the totals of the users `keep` accepts from a state of
    /// checkpoint `checkpoint`.
    fn restore_totals(
        &mut self,
        checkpoint: u64,
        state: &[u8],
        keep: impl Fn(u64) -> bool,
    ) -> Result<(), String> {
        if !state.len().is_multiple_of(24) {
            return Err(format!(
                "latest-totals state of checkpoint {checkpoint} has {} bytes, not a multiple of 24",
                state.len()
            ));
        }
        for entry in state.chunks_exact(24) {
            let v = |i: usize| u64::from_le_bytes(entry[i * 8..i * 8 + 8].try_into().expect("8"));
            if !keep(v(0)) {
                continue;
            }
            let user = v(0) as usize;
            let slot = self.latest.get_mut(user).ok_or_else(|| {
                format!("latest-totals state of checkpoint {checkpoint} names unknown user {user}")
            })?;
            *slot = (v(1), v(2));
        }
        Ok(())
    }
}

/// Builds the quickstart job for `workers` sink subtasks, with user ids of
/// type `U`, its events generated as fast as the job takes them or paced
/// to `rate` events/s over all source subtasks (`job.rate`).
pub fn job_with<U: UserId>(
    events: u64,
    users: u64,
    workers: usize,
    rate: Option<u64>,
) -> (JobGraph, Arc<QuickstartResults>) {
    let results = Arc::new(QuickstartResults {
        slots: (0..workers).map(|_| Mutex::new(None)).collect(),
    });
    let sink_results = results.clone();
    let mut job = JobGraph::new("quickstart");
    job.parameter("events", events).parameter("users", users);
    if U::KEY_TYPE != KeyType::Integer {
        // Its state cannot be read as the other's: part of the fingerprint
        // (only when not the default, so integer checkpoints still match).
        job.parameter("key-type", U::KEY_TYPE);
    }
    job.source(SOURCE_UID, move |info: &SubtaskInfo| {
        let ids = U::table(users);
        let events = SequenceSource::new(info, events, move |i| {
            let (user, bytes) = event(i, users);
            (U::pick(&ids, user), bytes)
        });
        Paced::share(events, rate.unwrap_or(0), info)
    })
    .filter("drop-runts", |e: &(U, u64)| e.1 >= RUNT_BYTES)
    // By reference: the sender hashes the id in place, not a clone of it.
    .key_by_ref(|e: &(U, u64)| &e.0)
    .process("user-totals", |_| UserTotals::<U>::default())
    .sink(
        "latest-totals",
        move |info: &SubtaskInfo| LatestTotals::<U> {
            index: info.index,
            info: *info,
            latest: vec![(0, 0); users as usize],
            results: sink_results.clone(),
            ids: std::marker::PhantomData,
        },
    );
    (job, results)
}

impl QuickstartResults {
    /// `(user, events, bytes)` for every user seen, sorted by user.
    pub fn totals(&self) -> Vec<(u64, u64, u64)> {
        let mut all: Vec<_> = self
            .slots
            .iter()
            .filter_map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .flatten()
            .collect();
        all.sort_unstable();
        all
    }
}

/// The same totals computed on one thread without the engine.
pub fn reference_totals(events: u64, users: u64) -> Vec<(u64, u64, u64)> {
    let mut t = vec![(0u64, 0u64); users as usize];
    for i in 0..events {
        let (u, b) = event(i, users);
        if b >= RUNT_BYTES {
            t[u as usize].0 += 1;
            t[u as usize].1 += b;
        }
    }
    t.iter()
        .enumerate()
        .filter(|(_, x)| x.0 > 0)
        .map(|(u, x)| (u as u64, x.0, x.1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_ids_name_their_number_and_nothing_else() {
        for n in [0, 7, 9_999, u64::from(u32::MAX), 1_000_000_000_000_000_000] {
            assert_eq!(String::from_number(n).number(), Some(n));
            assert_eq!(CompactString::from_number(n).number(), Some(n));
        }
        assert_eq!(String::from_number(42), "user-42");
        for bad in [
            "",
            "user-",
            "user-x",
            "user-1a",
            "usr-1",
            "user--1",
            "user-99999999999999999999",
        ] {
            assert_eq!(number_of(bad), None, "{bad:?}");
        }
    }
}
