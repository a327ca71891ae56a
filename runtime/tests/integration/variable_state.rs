//! Variable-size keys and values in every keyed state kind, through a
//! failure and through restores at other parallelisms.
//!
//! The job keys by a user struct around a `String` (`#[derive(Wire,
//! KeyHash)]`, no hand-written codec) and keeps, per user, a profile
//! struct holding a `String` and a `Vec<u8>` (value state), counts per page
//! name (map state keyed by `String`), the names of sampled pages (list
//! state), the greatest page name (reducing state) and the longest page
//! name with a count (aggregating state with a `(String, u64)`
//! accumulator). As in `state_kinds`, only order-independent state is kept,
//! and each user reports once its record count reaches the model's total;
//! the reports must equal the model exactly, whether the job ran through,
//! failed and restored at the same parallelism, or was restored at 1 or 3
//! subtasks from a checkpoint written by 2. Event-time window panes keyed
//! by the same struct (selected by reference, `key_by_ref`), with a
//! `String` in the accumulator, go through a failure and a rescale too.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::exec::RestoreFrom;
use weir_runtime::{
    AggregateFunction, Collector, ExecutionOptions, JobError, JobGraph, KeyContext, KeyHash,
    KeySelector, KeyedAggregatingState, KeyedListState, KeyedMapState, KeyedProcessFunction,
    KeyedReducingState, KeyedStates, KeyedStream, KeyedValueState, Sink, SubtaskInfo, TimeWindow,
    TumblingEventTimeWindows, WatermarkStrategy, Wire,
};

use crate::checkpoint::PacedSource;
use crate::{ms, options, run_job, run_ok, splitmix64, temp_dir, InjectedFailure};

/// A user id: a string, as most real keys are.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Wire, KeyHash)]
struct UserId(String);

/// Per-user profile kept in value state.
#[derive(Clone, Debug, Default, PartialEq, Wire)]
struct Profile {
    /// The user's display name, rewritten on every record.
    display: String,
    /// One byte per record (its value mod 251), sorted before reporting.
    trail: Vec<u8>,
    visits: u64,
}

/// The longest page name seen (ties: the greater) and the record count.
struct Longest;

impl AggregateFunction for Longest {
    type In = String;
    type Acc = (String, u64);
    type Out = (String, u64);

    fn create_accumulator(&self) -> (String, u64) {
        (String::new(), 0)
    }

    fn add(&self, page: String, (best, n): (String, u64)) -> (String, u64) {
        (longer(best, page), n + 1)
    }

    fn get_result(&self, acc: &(String, u64)) -> (String, u64) {
        acc.clone()
    }

    fn merge(&self, a: (String, u64), b: (String, u64)) -> (String, u64) {
        (longer(a.0, b.0), a.1 + b.1)
    }
}

fn longer(a: String, b: String) -> String {
    if (b.len(), &b) > (a.len(), &a) {
        b
    } else {
        a
    }
}

fn max_string(a: String, b: String) -> String {
    a.max(b)
}

/// User of record `i` out of `users`: lengths vary, some non-ASCII, one
/// empty.
fn user(key: u64) -> UserId {
    UserId(match key % 5 {
        0 if key == 0 => String::new(),
        0 => format!("ü-{key}"),
        1 => format!("user-{key}-{}", "x".repeat((key % 37) as usize)),
        _ => format!("{key}"),
    })
}

/// Page of record `i`: 40 names of varied length.
fn page(i: u64) -> String {
    let p = splitmix64(i ^ 0x5EED) % 40;
    format!("/p{p}/{}", "seg/".repeat((p % 9) as usize))
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Report {
    profile: Profile,
    pages: Vec<(String, u64)>,
    sampled: Vec<String>,
    greatest: String,
    longest: (String, u64),
}

struct PerUser {
    profile: KeyedValueState<UserId, Profile>,
    pages: KeyedMapState<UserId, String, u64>,
    sampled: KeyedListState<UserId, String>,
    greatest: KeyedReducingState<UserId, String, fn(String, String) -> String>,
    longest: KeyedAggregatingState<UserId, Longest>,
    totals: Arc<HashMap<UserId, u64>>,
    fail: InjectedFailure,
}

impl KeyedProcessFunction for PerUser {
    type Key = UserId;
    type In = (UserId, u64);
    type Out = (UserId, Report);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<UserId>,
        (user, i): (UserId, u64),
        out: &mut C,
    ) {
        assert_eq!(ctx.key(), &user);
        if self.fail.hits(i) {
            panic!("injected failure at record {i}");
        }
        let page = page(i);
        let p = self.profile.value_mut_or_insert_with(ctx, Profile::default);
        p.display = format!("{}#{}", user.0, p.visits % 3);
        p.trail.push((i % 251) as u8);
        p.visits += 1;
        let visits = p.visits;
        let count = self.pages.get(ctx, &page).unwrap_or(0);
        self.pages.put(ctx, page.clone(), count + 1);
        if i % 7 == 0 {
            self.sampled.add(ctx, page.clone());
        }
        self.greatest.add(ctx, page.clone());
        self.longest.add(ctx, page);
        if visits == self.totals[&user] {
            let mut profile = self.profile.value(ctx).expect("a profile");
            profile.trail.sort_unstable();
            let mut pages: Vec<(String, u64)> = self.pages.entries(ctx).collect();
            pages.sort();
            let mut sampled: Vec<String> = self.sampled.get(ctx).collect();
            sampled.sort();
            let report = Report {
                profile,
                pages,
                sampled,
                greatest: self.greatest.get(ctx).expect("a page"),
                longest: self.longest.get(ctx).expect("a page"),
            };
            out.collect((user, report));
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.profile);
        states.map(&mut self.pages);
        states.list(&mut self.sampled);
        states.reducing(&mut self.greatest);
        states.aggregating(&mut self.longest);
    }
}

type Reports = Arc<Mutex<BTreeMap<UserId, Report>>>;

/// Keeps every user's latest report (a replay after a restore reports the
/// same final state again).
struct ReportSink(Reports);

impl Sink for ReportSink {
    type In = (UserId, Report);

    fn invoke(&mut self, (user, report): (UserId, Report)) {
        self.0.lock().unwrap().insert(user, report);
    }
}

/// The model: every user's final report over records `(user(splitmix64(i)
/// % users), i)`, and its record count.
fn model(n: u64, users: u64) -> (BTreeMap<UserId, Report>, HashMap<UserId, u64>) {
    let mut reports: BTreeMap<UserId, Report> = BTreeMap::new();
    let mut pages: HashMap<UserId, BTreeMap<String, u64>> = HashMap::new();
    for i in 0..n {
        let u = user(splitmix64(i) % users);
        let r = reports.entry(u.clone()).or_default();
        r.profile.display = format!("{}#{}", u.0, r.profile.visits % 3);
        r.profile.trail.push((i % 251) as u8);
        r.profile.visits += 1;
        let pg = page(i);
        *pages.entry(u).or_default().entry(pg.clone()).or_default() += 1;
        if i % 7 == 0 {
            r.sampled.push(pg.clone());
        }
        r.greatest = max_string(std::mem::take(&mut r.greatest), pg.clone());
        r.longest = (
            longer(std::mem::take(&mut r.longest.0), pg),
            r.longest.1 + 1,
        );
    }
    let mut totals = HashMap::new();
    for (u, r) in reports.iter_mut() {
        totals.insert(u.clone(), r.profile.visits);
        r.profile.trail.sort_unstable();
        r.sampled.sort();
        r.pages = pages.remove(u).unwrap().into_iter().collect();
    }
    (reports, totals)
}

/// How the job selects its key.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Keying {
    /// `key_by` of the key's clone.
    Clone,
    /// `key_by_ref`: the sender hashes the key in place.
    ByRef,
}

/// The job: a paced source at 2 subtasks, keyed by user, `per-user` at
/// `parallelism`, failing once where `fail` says.
fn job(
    n: u64,
    users: u64,
    parallelism: usize,
    fail: InjectedFailure,
    totals: &Arc<HashMap<UserId, u64>>,
    reports: &Reports,
) -> JobGraph {
    job_keyed(n, users, parallelism, fail, totals, reports, Keying::Clone)
}

/// [`job`], keyed as `keying` says.
fn job_keyed(
    n: u64,
    users: u64,
    parallelism: usize,
    fail: InjectedFailure,
    totals: &Arc<HashMap<UserId, u64>>,
    reports: &Reports,
    keying: Keying,
) -> JobGraph {
    let job = JobGraph::new("variable-state");
    let users = job
        .source("paced", move |info: &SubtaskInfo| {
            PacedSource::new(info, n, users, 200)
        })
        .parallelism(2)
        .map("to-user", |(k, i): (u64, u64)| (user(k), i));
    match keying {
        Keying::Clone => per_user(
            users.key_by(|r: &(UserId, u64)| r.0.clone()),
            parallelism,
            fail,
            totals,
            reports,
        ),
        Keying::ByRef => per_user(
            users.key_by_ref(|r: &(UserId, u64)| &r.0),
            parallelism,
            fail,
            totals,
            reports,
        ),
    }
    job
}

/// The keyed part of [`job`]: `per-user` and the sink.
fn per_user<KF>(
    keyed: KeyedStream<'_, (UserId, u64), UserId, KF>,
    parallelism: usize,
    fail: InjectedFailure,
    totals: &Arc<HashMap<UserId, u64>>,
    reports: &Reports,
) where
    KF: KeySelector<(UserId, u64), Key = UserId>,
{
    let (totals, into) = (totals.clone(), reports.clone());
    keyed
        .process("per-user", move |_: &SubtaskInfo| PerUser {
            profile: KeyedValueState::new("profile"),
            pages: KeyedMapState::new("pages"),
            sampled: KeyedListState::new("sampled"),
            greatest: KeyedReducingState::new(
                "greatest",
                max_string as fn(String, String) -> String,
            ),
            longest: KeyedAggregatingState::new("longest", Longest),
            totals: totals.clone(),
            fail: fail.clone(),
        })
        .parallelism(parallelism)
        .sink("reports", move |_: &SubtaskInfo| ReportSink(into.clone()));
}

fn checkpointed(dir: &Path) -> ExecutionOptions {
    let mut o = options(2).with_checkpointing(Duration::from_millis(15), dir);
    o.checkpointing.as_mut().unwrap().coordinator.num_retained = 1;
    o
}

fn assert_reports(got: &Reports, want: &BTreeMap<UserId, Report>) {
    let got = got.lock().unwrap();
    assert_eq!(got.len(), want.len(), "every user reported");
    for (u, r) in want {
        assert_eq!(got.get(u), Some(r), "user {u:?}");
    }
}

#[test]
fn string_keys_and_struct_values_restore_exactly_after_a_failure() {
    let dir = temp_dir("variable-state");
    let (n, users) = (120_000, 400);
    let (want, totals) = model(n, users);
    let totals = Arc::new(totals);
    let reports: Reports = Arc::default();
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(
        job(
            n,
            users,
            2,
            InjectedFailure::at(80_001, &dir),
            &totals,
            &reports,
        ),
        &o,
    );
    assert_eq!(result.restarts, 1, "the injected failure restarted the job");
    let restored = result.restored.expect("the second attempt restored");
    assert!(restored.state_bytes > 0, "{restored:?}");
    assert_reports(&reports, &want);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Written by 2 subtasks, restored by 1 and by 3: the variable-size
/// entries of every state kind move to their key group's new owner. The
/// restored job selects its key by reference (`key_by_ref`): the same key
/// groups and state as the clone the checkpoint's job keyed by.
#[test]
fn string_keys_and_struct_values_are_redistributed_at_another_parallelism() {
    let (n, users) = (120_000, 400);
    let (want, totals) = model(n, users);
    let totals = Arc::new(totals);
    for new_parallelism in [1, 3] {
        let dir = temp_dir(&format!("variable-state-rescale-{new_parallelism}"));
        let mut o = checkpointed(&dir);
        o.restart = RestartStrategy::None;
        let reports: Reports = Arc::default();
        match run_job(
            job(
                n,
                users,
                2,
                InjectedFailure::at(80_001, &dir),
                &totals,
                &reports,
            ),
            &o,
        ) {
            Err(JobError::TaskFailed { .. }) => {}
            other => panic!("expected the injected failure, got {other:?}"),
        }
        o.restore = RestoreFrom::Latest;
        let result = run_ok(
            job_keyed(
                n,
                users,
                new_parallelism,
                InjectedFailure::never(),
                &totals,
                &reports,
                Keying::ByRef,
            ),
            &o,
        );
        let restored = result.restored.expect("the run restored");
        assert!(restored.state_bytes > 0, "{restored:?}");
        assert_reports(&reports, &want);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn derived_codecs_round_trip_and_hash_like_their_fields() {
    let p = Profile {
        display: "Zoë".into(),
        trail: vec![1, 2, 250],
        visits: 9,
    };
    let mut buf = vec![0u8; p.encoded_len()];
    p.write(&mut buf);
    assert_eq!(buf.len(), (4 + 4) + (4 + 3) + 8);
    assert_eq!(Profile::read(&buf).unwrap(), (p, buf.len()));
    for cut in 0..buf.len() {
        assert!(Profile::read(&buf[..cut]).is_err(), "cut at {cut}");
    }
    // A newtype keeps its field's hash, so its key groups are the string's.
    assert_eq!(UserId("u-7".into()).key_hash(), "u-7".key_hash());
    assert_eq!(Profile::FIXED_LEN, None);
}

/// Per window: the record count and the greatest page name.
#[derive(Clone)]
struct CountGreatest;

impl AggregateFunction for CountGreatest {
    type In = (UserId, i64, String);
    type Acc = (u64, String);
    type Out = (u64, String);

    fn create_accumulator(&self) -> (u64, String) {
        (0, String::new())
    }

    fn add(&self, (_, _, page): (UserId, i64, String), (n, best): (u64, String)) -> (u64, String) {
        (n + 1, max_string(best, page))
    }

    fn get_result(&self, acc: &(u64, String)) -> (u64, String) {
        acc.clone()
    }

    fn merge(&self, a: (u64, String), b: (u64, String)) -> (u64, String) {
        (a.0 + b.0, max_string(a.1, b.1))
    }
}

/// Window size of the windowed job (ms of event time).
const WINDOW: i64 = 100;

type Windows = Arc<Mutex<BTreeMap<(UserId, i64), (u64, String)>>>;

/// Keeps every window's latest firing (a replay fires it again alike).
struct WindowSink(Windows);

impl Sink for WindowSink {
    type In = (UserId, TimeWindow, (u64, String));

    fn invoke(&mut self, (user, window, acc): (UserId, TimeWindow, (u64, String))) {
        assert_eq!(window.end - window.start, WINDOW);
        self.0.lock().unwrap().insert((user, window.start), acc);
    }
}

/// Event-time tumbling windows keyed by `UserId` with a `String` in the
/// accumulator, at `parallelism`, failing once where `fail` says; record
/// `i` has timestamp `i / 20` ms.
fn window_job(
    n: u64,
    users: u64,
    parallelism: usize,
    fail: InjectedFailure,
    into: &Windows,
) -> JobGraph {
    let into = into.clone();
    let job = JobGraph::new("variable-windows");
    job.source("paced", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, users, 200)
    })
    .parallelism(2)
    .map("to-event", move |(k, i): (u64, u64)| {
        if fail.hits(i) {
            panic!("injected failure at record {i}");
        }
        (user(k), (i / 20) as i64, page(i))
    })
    .assign_timestamps_and_watermarks(
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
            .with_timestamp_assigner(|r: &(UserId, i64, String)| r.1),
    )
    .key_by_ref(|r: &(UserId, i64, String)| &r.0)
    .window(TumblingEventTimeWindows::of(
        ms(WINDOW),
        |r: &(UserId, i64, String)| r.1,
    ))
    .aggregate("count-greatest", CountGreatest)
    .parallelism(parallelism)
    .sink("windows", move |_: &SubtaskInfo| WindowSink(into.clone()));
    job
}

/// Every `(user, window start)`'s count and greatest page.
fn window_model(n: u64, users: u64) -> BTreeMap<(UserId, i64), (u64, String)> {
    let mut want: BTreeMap<(UserId, i64), (u64, String)> = BTreeMap::new();
    for i in 0..n {
        let ts = (i / 20) as i64;
        let e = want
            .entry((user(splitmix64(i) % users), ts - ts % WINDOW))
            .or_default();
        e.0 += 1;
        e.1 = max_string(std::mem::take(&mut e.1), page(i));
    }
    want
}

/// Window panes keyed by strings with string accumulators: through a
/// failure at the same parallelism, and restored at 3 from 2.
#[test]
fn windows_keyed_by_strings_restore_and_rescale_exactly() {
    let (n, users) = (60_000, 50);
    let want = window_model(n, users);
    for new_parallelism in [2, 3] {
        let dir = temp_dir(&format!("variable-windows-{new_parallelism}"));
        let mut o = checkpointed(&dir);
        o.restart = RestartStrategy::None;
        let got: Windows = Arc::default();
        match run_job(
            window_job(n, users, 2, InjectedFailure::at(40_001, &dir), &got),
            &o,
        ) {
            Err(JobError::TaskFailed { .. }) => {}
            other => panic!("expected the injected failure, got {other:?}"),
        }
        o.restore = RestoreFrom::Latest;
        let result = run_ok(
            window_job(n, users, new_parallelism, InjectedFailure::never(), &got),
            &o,
        );
        let restored = result.restored.expect("the run restored");
        assert!(restored.state_bytes > 0, "{restored:?}");
        let got = got.lock().unwrap();
        assert_eq!(got.len(), want.len(), "every window fired");
        for (k, v) in &want {
            assert_eq!(got.get(k), Some(v), "window {k:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// An enum with unit, tuple and struct variants, and a generic struct.
#[derive(Clone, Debug, Default, PartialEq, Eq, Wire, KeyHash)]
enum Event {
    #[default]
    Idle,
    Click(u32, String),
    Move {
        x: i64,
        y: i64,
    },
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Wire, KeyHash)]
struct Tagged<T> {
    tag: u8,
    inner: T,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Wire, KeyHash)]
struct Point {
    x: u32,
    y: u32,
}

#[test]
fn derived_enums_and_generic_structs_round_trip_and_refuse_bad_input() {
    fn round_trip<T: Wire + PartialEq + std::fmt::Debug>(v: T) -> Vec<u8> {
        let mut buf = vec![0u8; v.encoded_len()];
        v.write(&mut buf);
        assert_eq!(T::read(&buf).unwrap(), (v, buf.len()));
        for cut in 0..buf.len() {
            assert!(T::read(&buf[..cut]).is_err(), "cut at {cut}");
        }
        buf
    }
    assert_eq!(round_trip(Event::Idle), vec![0]);
    round_trip(Event::Click(7, "btn-ü".into()));
    let moved = round_trip(Event::Move { x: -1, y: 2 });
    assert_eq!(moved.len(), 1 + 16);
    round_trip(Tagged {
        tag: 3,
        inner: Event::Click(1, String::new()),
    });
    round_trip(Tagged {
        tag: 0,
        inner: 9u64,
    });
    // An unknown variant tag is an error, not a panic.
    assert!(Event::read(&[3]).is_err());
    // Fixed-length fields give a fixed length, as a tuple's would.
    assert_eq!(Point::FIXED_LEN, Some(8));
    assert_eq!(<Tagged<u64>>::FIXED_LEN, Some(9));
    assert_eq!(<Tagged<String>>::FIXED_LEN, None);
    // Struct hashes fold their fields like tuples; variants differ.
    assert_eq!(Point { x: 1, y: 2 }.key_hash(), (1u32, 2u32).key_hash());
    assert_ne!(
        Event::Move { x: 1, y: 2 }.key_hash(),
        Event::Click(1, String::new()).key_hash()
    );
    assert_ne!(
        Event::Idle.key_hash(),
        Event::Move { x: 0, y: 0 }.key_hash()
    );
}
