//! `weir bench ttl`: does state TTL give memory back?
//!
//! A source writes `job.keys` distinct keys once each (default 10 M), as
//! fast as the job takes them, into a keyed operator that stores each in a
//! `KeyedTtlValueState` with a processing-time TTL of `job.ttl` (default
//! 10 s), then stops: no record arrives afterwards, so only the cleanup
//! that runs while the input is idle can free anything. After `job.wait`
//! (default 60 s) from the last key, a sampler thread takes the final
//! measurement while the job is still running, then the sources end. The
//! final state bytes are those every subtask published *after* the wait
//! (a subtask that stopped publishing is reported, not read stale).
//!
//! The report gives the state's bytes (the tables' own accounting, summed
//! over subtasks: each subtask publishes its state's size when it changes
//! while processing and from a 100 ms processing-time timer) at their peak
//! and at the end, and the process's resident memory (`VmRSS` of
//! `/proc/self/status`) before the job, at the state's peak, at the end,
//! and its high-water mark (`VmHWM`). It passes if the final state bytes
//! are at most 10% of the peak.
//!
//! TTL runs on processing time, the system clock, as Flink's does: a step
//! of that clock during the run (a time daemon correcting it) moves every
//! expiry with it. The report gives the step, `clock_step_ms`: the wall
//! clock's time over the run less the monotonic clock's.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use weir_runtime::{
    execute_with_progress, Collector, Config, ExecutionOptions, JobError, JobGraph, KeyContext,
    KeyedProcessFunction, KeyedStates, KeyedTimerService, KeyedTtlValueState, Progress, Sink,
    Source, SourcePoll, StateTtlConfig, SubtaskInfo, TimeDomain, TimerQueues,
};

use crate::params::JobParams;

/// Default number of keys.
pub const DEFAULT_KEYS: u64 = 10_000_000;

/// How often each subtask publishes its state's size while idle.
const PUBLISH_EVERY_MS: i64 = 100;

/// How often the sampler reads the state's size and the RSS.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// The final state may hold at most this share of the peak.
pub const MAX_FINAL_SHARE: f64 = 0.10;

/// Longest the sampler waits, after `job.wait`, for every subtask to
/// publish its state's size again.
const REPUBLISH_WITHIN: Duration = Duration::from_secs(10);

/// What the job's subtasks and the sampler share.
struct Shared {
    /// Per operator subtask: its state's bytes now.
    state_bytes: Vec<AtomicU64>,
    /// Per operator subtask: how many times it published (on its timer,
    /// changed or not).
    publications: Vec<AtomicU64>,
    /// Per operator subtask: the entries its state holds (expired ones not
    /// removed yet included), published from its timer.
    entries: Vec<AtomicU64>,
    /// Source subtasks that emitted their last key.
    sources_done: AtomicUsize,
    /// Set by the sampler once it took the final measurement: the sources
    /// may end.
    measured: AtomicBool,
}

/// Emits keys `index, index + P, ...` below `keys`, then idles until the
/// final measurement is taken.
struct KeysOnce {
    next: u64,
    step: u64,
    keys: u64,
    shared: Arc<Shared>,
    done: bool,
}

impl Source for KeysOnce {
    type Out = u64;

    fn poll_next<C: Collector<u64>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        let mut emitted = 0;
        while emitted < budget && self.next < self.keys && out.is_available() {
            out.collect(self.next);
            self.next += self.step;
            emitted += 1;
        }
        if self.next < self.keys {
            return SourcePoll::Emitted(emitted);
        }
        if !self.done {
            self.done = true;
            self.shared.sources_done.fetch_add(1, Ordering::AcqRel);
        }
        if emitted > 0 {
            return SourcePoll::Emitted(emitted);
        }
        if self.shared.measured.load(Ordering::Acquire) {
            SourcePoll::Finished
        } else {
            SourcePoll::Idle {
                until: Some(Instant::now() + Duration::from_millis(10)),
            }
        }
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        self.next.to_le_bytes().to_vec()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        let bytes: [u8; 8] = position.try_into().map_err(|_| {
            format!(
                "expected an 8-byte position, found {} bytes",
                position.len()
            )
        })?;
        self.next = u64::from_le_bytes(bytes);
        Ok(())
    }
}

/// Stores every key with a TTL and publishes the state's size.
struct TtlKeys {
    seen: KeyedTtlValueState<u64, u64>,
    timers: KeyedTimerService<u64>,
    index: usize,
    shared: Arc<Shared>,
    published: usize,
    timer_set: bool,
}

impl TtlKeys {
    fn publish(&mut self) {
        let bytes = self.seen.memory_bytes();
        if bytes != self.published {
            self.published = bytes;
            self.shared.state_bytes[self.index].store(bytes as u64, Ordering::Release);
        }
    }

    /// Publishes the size and counts a publication (the sampler's proof
    /// that the size is current).
    fn publish_counted(&mut self) {
        self.publish();
        let entries = self.seen.total_len() as u64;
        self.shared.entries[self.index].store(entries, Ordering::Release);
        self.shared.publications[self.index].fetch_add(1, Ordering::AcqRel);
    }
}

impl KeyedProcessFunction for TtlKeys {
    type Key = u64;
    type In = u64;
    type Out = ();

    #[inline]
    fn process<C: Collector<()>>(&mut self, ctx: &KeyContext<u64>, key: u64, _out: &mut C) {
        self.seen.update(ctx, key);
        self.publish();
        if !self.timer_set {
            // One timer chain per subtask: it keeps the size published
            // while no record arrives.
            self.timer_set = true;
            let at = self.timers.current_processing_time() + PUBLISH_EVERY_MS;
            self.timers.register_processing_time_timer(ctx, at);
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.ttl_value(&mut self.seen);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<u64>> {
        Some(&mut self.timers)
    }

    fn on_timer<C: Collector<()>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<u64>,
        _domain: TimeDomain,
        _out: &mut C,
    ) {
        self.publish_counted();
        self.timers
            .register_processing_time_timer(ctx, timestamp + PUBLISH_EVERY_MS);
    }
}

/// Records nothing: the job's output is its memory.
struct Discard;

impl Sink for Discard {
    type In = ();

    fn invoke(&mut self, _record: ()) {}
}

/// The job's figures.
#[derive(Clone, Debug)]
pub struct TtlReport {
    /// Keys written.
    pub keys: u64,
    /// The state's TTL.
    pub ttl: Duration,
    /// Wait after the last key before the final measurement.
    pub wait: Duration,
    /// Workers.
    pub workers: usize,
    /// Seconds from the start to the last key emitted.
    pub ingest_seconds: f64,
    /// State bytes at their peak and at the end.
    pub state_bytes_peak: u64,
    /// State bytes at the end.
    pub state_bytes_final: u64,
    /// RSS before the job, at the state's peak, at the end; VmHWM.
    pub rss_start: u64,
    /// RSS when the state bytes peaked.
    pub rss_at_state_peak: u64,
    /// RSS at the end.
    pub rss_final: u64,
    /// The process's RSS high-water mark at the end.
    pub rss_hwm: u64,
    /// Operator subtasks that did not publish their state's size within
    /// `REPUBLISH_WITHIN` after the wait: their final bytes are stale.
    pub stale_subtasks: Vec<usize>,
    /// The system clock's time over the run less the monotonic clock's
    /// (non-zero if the system clock was stepped: TTL moved with it).
    pub clock_step_ms: i64,
    /// Per operator subtask at the end: (state bytes, entries), so that a
    /// state left large says whether it still holds entries.
    pub subtasks_final: Vec<(u64, u64)>,
}

impl TtlReport {
    /// Final state bytes as a share of the peak.
    pub fn final_share(&self) -> f64 {
        self.state_bytes_final as f64 / (self.state_bytes_peak.max(1)) as f64
    }

    /// Whether the state gave back what it should.
    pub fn verified(&self) -> bool {
        self.state_bytes_peak > 0
            && self.stale_subtasks.is_empty()
            && self.final_share() <= MAX_FINAL_SHARE
    }

    /// The report as one JSON object.
    pub fn to_json(&self) -> Value {
        json!({
            "workload": "ttl",
            "keys": self.keys,
            "ttl_ms": self.ttl.as_millis() as u64,
            "wait_ms": self.wait.as_millis() as u64,
            "workers": self.workers,
            "ingest_seconds": self.ingest_seconds,
            "state_bytes_peak": self.state_bytes_peak,
            "state_bytes_final": self.state_bytes_final,
            "state_final_share": self.final_share(),
            "rss_bytes_start": self.rss_start,
            "rss_bytes_at_state_peak": self.rss_at_state_peak,
            "rss_bytes_final": self.rss_final,
            "rss_bytes_hwm": self.rss_hwm,
            "stale_subtasks": self.stale_subtasks,
            "clock_step_ms": self.clock_step_ms,
            "subtasks_final": self.subtasks_final.iter().map(|(bytes, entries)| {
                json!({"state_bytes": bytes, "entries": entries})
            }).collect::<Vec<_>>(),
            "verified": self.verified(),
        })
    }

    /// Readable lines.
    pub fn summary(&self) -> String {
        let mb = |b: u64| b as f64 / (1 << 20) as f64;
        let mut notes = String::new();
        if !self.stale_subtasks.is_empty() {
            notes.push_str(&format!(
                "subtasks {:?} did not publish their state's size within {:?} after the wait: their final bytes are stale\n",
                self.stale_subtasks, REPUBLISH_WITHIN
            ));
        }
        if self.clock_step_ms.abs() >= 100 {
            notes.push_str(&format!(
                "the system clock was stepped by {} ms during the run: TTL (processing time) moved with it\n",
                self.clock_step_ms
            ));
        }
        notes + &format!(
            "weir bench ttl: {} keys once each, TTL {:?}, measured {:?} after the last key ({:.2} s to ingest)\n\
             state: {:.1} MiB at peak -> {:.1} MiB ({:.1}%)\n\
             RSS: {:.1} MiB before, {:.1} MiB at the state's peak (high-water {:.1} MiB) -> {:.1} MiB\n",
            self.keys,
            self.ttl,
            self.wait,
            self.ingest_seconds,
            mb(self.state_bytes_peak),
            mb(self.state_bytes_final),
            100.0 * self.final_share(),
            mb(self.rss_start),
            mb(self.rss_at_state_peak),
            mb(self.rss_hwm),
            mb(self.rss_final),
        )
    }
}

/// A field of `/proc/self/status` in bytes (0 where it cannot be read).
fn proc_status_bytes(field: &str) -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Runs the job as `params` (`job.keys`, `job.ttl`, `job.wait`) and
/// `config` say.
pub fn run(config: &Config, params: &JobParams, quiet: bool) -> Result<TtlReport, JobError> {
    let mut options = ExecutionOptions::from_config(config);
    if quiet {
        options.progress_interval = Duration::ZERO;
    }
    let workers = options.workers;
    let keys = params.keys.unwrap_or(DEFAULT_KEYS);
    let (ttl, wait) = (params.ttl, params.wait);
    let shared = Arc::new(Shared {
        state_bytes: (0..workers).map(|_| AtomicU64::new(0)).collect(),
        publications: (0..workers).map(|_| AtomicU64::new(0)).collect(),
        entries: (0..workers).map(|_| AtomicU64::new(0)).collect(),
        sources_done: AtomicUsize::new(0),
        measured: AtomicBool::new(false),
    });
    let mut job = JobGraph::new("ttl");
    job.parameter("keys", keys)
        .parameter("ttl_ms", ttl.as_millis() as u64);
    let source_shared = shared.clone();
    let op_shared = shared.clone();
    job.source("keys", move |info: &SubtaskInfo| KeysOnce {
        next: info.index as u64,
        step: info.parallelism as u64,
        keys,
        shared: source_shared.clone(),
        done: false,
    })
    .key_by(|k: &u64| *k)
    .process("ttl-keys", move |info: &SubtaskInfo| TtlKeys {
        seen: KeyedTtlValueState::new("seen", StateTtlConfig::new(ttl)),
        timers: KeyedTimerService::new(),
        index: info.index,
        shared: op_shared.clone(),
        published: 0,
        timer_set: false,
    })
    .sink("discard", |_: &SubtaskInfo| Discard);

    let rss_start = proc_status_bytes("VmRSS");
    let started = (Instant::now(), SystemTime::now());
    let sampler_shared = shared.clone();
    let sampler = std::thread::spawn(move || sample(&sampler_shared, workers, wait, started));
    let mut progress = |p: &Progress| {
        if !quiet {
            eprintln!("{}", p.lines());
        }
    };
    let result = execute_with_progress(job, &options, &mut progress);
    // The sampler ends by itself once the sources are done; if the job
    // failed before, tell it to stop.
    shared.measured.store(true, Ordering::Release);
    let samples = sampler.join().unwrap_or_default();
    result?;
    Ok(TtlReport {
        keys,
        ttl,
        wait,
        workers,
        ingest_seconds: samples.ingest_seconds,
        state_bytes_peak: samples.state_peak,
        state_bytes_final: samples.state_final,
        rss_start,
        rss_at_state_peak: samples.rss_at_state_peak,
        rss_final: samples.rss_final,
        rss_hwm: samples.rss_hwm,
        stale_subtasks: samples.stale_subtasks,
        clock_step_ms: samples.clock_step_ms,
        subtasks_final: samples.subtasks_final,
    })
}

/// What the sampler measured.
#[derive(Clone, Debug, Default)]
struct Samples {
    ingest_seconds: f64,
    state_peak: u64,
    rss_at_state_peak: u64,
    state_final: u64,
    rss_final: u64,
    rss_hwm: u64,
    stale_subtasks: Vec<usize>,
    clock_step_ms: i64,
    subtasks_final: Vec<(u64, u64)>,
}

/// Samples the state's bytes and the RSS until `wait` after every source
/// emitted its last key, then takes the final measurement and lets the
/// sources end. `started` is the start by the monotonic and by the system
/// clock.
fn sample(
    shared: &Shared,
    workers: usize,
    wait: Duration,
    started: (Instant, SystemTime),
) -> Samples {
    let mut s = Samples::default();
    let mut done_at: Option<Instant> = None;
    let state = || -> u64 {
        shared
            .state_bytes
            .iter()
            .map(|b| b.load(Ordering::Acquire))
            .sum()
    };
    loop {
        let bytes = state();
        if bytes > s.state_peak {
            s.state_peak = bytes;
            s.rss_at_state_peak = proc_status_bytes("VmRSS");
        }
        if shared.measured.load(Ordering::Acquire) {
            // The job ended early (it failed): nothing more to measure.
            return s;
        }
        if done_at.is_none() && shared.sources_done.load(Ordering::Acquire) >= workers {
            let now = Instant::now();
            s.ingest_seconds = now.duration_since(started.0).as_secs_f64();
            done_at = Some(now);
        }
        if done_at.is_some_and(|d| d.elapsed() >= wait) {
            s.stale_subtasks = await_publications(shared);
            s.state_final = state();
            s.subtasks_final = shared
                .state_bytes
                .iter()
                .zip(&shared.entries)
                .map(|(b, e)| (b.load(Ordering::Acquire), e.load(Ordering::Acquire)))
                .collect();
            s.clock_step_ms = clock_step_ms(started);
            s.rss_final = proc_status_bytes("VmRSS");
            s.rss_hwm = proc_status_bytes("VmHWM");
            shared.measured.store(true, Ordering::Release);
            return s;
        }
        std::thread::sleep(SAMPLE_EVERY);
    }
}

/// Waits until every operator subtask published its state's size twice
/// more (so at least once from a timer that fired after this call), for
/// at most [`REPUBLISH_WITHIN`]; returns the subtasks that did not.
fn await_publications(shared: &Shared) -> Vec<usize> {
    let count = |i: usize| shared.publications[i].load(Ordering::Acquire);
    let before: Vec<u64> = (0..shared.publications.len()).map(count).collect();
    let stale = || -> Vec<usize> {
        (0..before.len())
            .filter(|&i| count(i) < before[i] + 2)
            .collect()
    };
    let deadline = Instant::now() + REPUBLISH_WITHIN;
    loop {
        let waiting = stale();
        if waiting.is_empty() || Instant::now() >= deadline {
            return waiting;
        }
        std::thread::sleep(SAMPLE_EVERY);
    }
}

/// How far the system clock moved beyond the monotonic one since
/// `started`, in ms (a step of the system clock; 0 without one, up to the
/// few ms the two readings lie apart).
fn clock_step_ms(started: (Instant, SystemTime)) -> i64 {
    let mono = started.0.elapsed().as_millis() as i64;
    let wall = match SystemTime::now().duration_since(started.1) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    };
    wall - mono
}
