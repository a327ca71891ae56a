//! End-to-end tests of weir-runtime: whole jobs built with the public API,
//! run on real glommio workers, checked against references computed here,
//! in the tests, independently of the engine and of weir-bench.
//!
//! Every job runs through [`run_job`], which fails the test instead of
//! hanging when the engine does not finish a bounded job in time.

mod backpressure;
mod broadcast;
mod chaining;
mod checkpoint;
mod debloat;
mod event_time;
mod failure;
mod fan_out;
mod files;
mod golden;
mod interval_join;
mod lifecycle;
mod metrics;
mod operator_state;
mod processing_time;
mod rescale;
mod routing;
mod sessions;
mod split_source;
mod state_kinds;
mod strings;
mod timers;
mod triggers;
mod two_input;
mod two_input_rescale;
mod variable_state;
mod w1;
mod windows;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir_runtime::{execute, ExecutionOptions, JobError, JobGraph, JobResult, Sink, SubtaskInfo};

/// The longest a test job may take before the test calls it a hang.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(30);

/// The checksum multiplier of WORKLOADS.md (also splitmix64's increment).
pub const M: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64 as WORKLOADS.md defines it, written out here on purpose (not
/// imported from weir-bench) so that the tests do not share code with the
/// benchmark they check.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Options for `workers` workers, unpinned (so that tests running in
/// parallel do not fight over pinned cores), without progress output.
pub fn options(workers: usize) -> ExecutionOptions {
    let mut options = ExecutionOptions::with_workers(workers);
    options.pin_cores = false;
    options
}

/// Per sink subtask at its end: its index and its [`DigestSink`] digest.
pub type Digests = Arc<Mutex<Vec<(usize, [u64; 3])>>>;

/// Folds each record's hash into an order-independent digest (count,
/// wrapping sum, xor) that is its checkpointed state, so a job restored
/// after a failure still digests its whole output exactly once; at the end
/// it stores the digest in `into` under its subtask index.
pub struct DigestSink<T> {
    index: usize,
    hash: fn(&T) -> u64,
    state: [u64; 3],
    into: Digests,
}

impl<T> DigestSink<T> {
    /// The sink of subtask `info` hashing records with `hash`.
    pub fn new(info: &weir_runtime::SubtaskInfo, hash: fn(&T) -> u64, into: &Digests) -> Self {
        Self {
            index: info.index,
            hash,
            state: [0; 3],
            into: into.clone(),
        }
    }
}

impl<T: 'static> weir_runtime::Sink for DigestSink<T> {
    type In = T;

    fn invoke(&mut self, record: T) {
        let h = (self.hash)(&record);
        self.state[0] += 1;
        self.state[1] = self.state[1].wrapping_add(h);
        self.state[2] ^= h;
    }

    fn finish(&mut self) {
        let mut into = self.into.lock().unwrap();
        into.retain(|(i, _)| *i != self.index);
        into.push((self.index, self.state));
    }

    fn initialize_state(&mut self, restored: Option<(u64, &[u8])>) -> Result<(), String> {
        if let Some((_, bytes)) = restored {
            if bytes.len() != 24 {
                return Err(format!(
                    "digest-sink state has {} bytes, not 24",
                    bytes.len()
                ));
            }
            for (slot, chunk) in self.state.iter_mut().zip(bytes.chunks_exact(8)) {
                *slot = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            }
        }
        Ok(())
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Vec<u8>, String> {
        Ok(self.state.iter().flat_map(|v| v.to_le_bytes()).collect())
    }
}

/// True once `dir` holds a complete checkpoint (a `chk-<id>` with its
/// `_metadata`).
pub fn has_completed_checkpoint(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name().to_string_lossy().starts_with("chk-")
                && e.path().join("_metadata").exists()
        })
    })
}

/// A failure a test injects once: at the first record numbered `at` or
/// later that arrives after `dir` holds a complete checkpoint, so that the
/// restore that follows has a checkpoint however slow the machine is.
#[derive(Clone)]
pub struct InjectedFailure {
    at: u64,
    armed: Arc<std::sync::atomic::AtomicBool>,
    dir: Option<std::path::PathBuf>,
}

impl InjectedFailure {
    /// A failure that never happens.
    pub fn never() -> Self {
        Self {
            at: u64::MAX,
            armed: Arc::default(),
            dir: None,
        }
    }

    /// Fails at record `at` or the first one after it that comes once a
    /// checkpoint of `dir` is complete.
    pub fn at(at: u64, dir: &std::path::Path) -> Self {
        Self {
            at,
            armed: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            dir: Some(dir.to_owned()),
        }
    }

    /// Fails at record `at` exactly, checkpoint or not.
    pub fn exactly(at: u64) -> Self {
        Self {
            at,
            armed: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            dir: None,
        }
    }

    /// True, once, for the record numbered `i` that is to fail.
    pub fn hits(&self, i: u64) -> bool {
        let due = match &self.dir {
            Some(dir) => {
                i >= self.at && self.armed.load(Ordering::Relaxed) && has_completed_checkpoint(dir)
            }
            None => i == self.at,
        };
        due && self.armed.swap(false, Ordering::SeqCst)
    }
}

/// Runs `job` on its own thread and returns what `execute` returned; fails
/// the test if the job has not finished after [`JOB_TIMEOUT`].
pub fn run_job(job: JobGraph, options: &ExecutionOptions) -> Result<JobResult, JobError> {
    let name = job.name().to_owned();
    let options = options.clone();
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name(format!("run-{name}"))
        .spawn(move || {
            let _ = tx.send(execute(job, &options));
        })
        .expect("spawn the job's control thread");
    match rx.recv_timeout(JOB_TIMEOUT) {
        Ok(result) => result,
        Err(RecvTimeoutError::Timeout) => panic!(
            "job `{name}` did not finish within {JOB_TIMEOUT:?}: the engine hangs on a bounded job"
        ),
        Err(RecvTimeoutError::Disconnected) => {
            panic!("execute() panicked while running job `{name}` instead of returning")
        }
    }
}

/// Runs `job` and expects success.
pub fn run_ok(job: JobGraph, options: &ExecutionOptions) -> JobResult {
    match run_job(job, options) {
        Ok(result) => result,
        Err(e) => panic!("the job failed: {e}"),
    }
}

/// What every subtask of a [`CollectSink`] received, handed over at
/// `finish`.
pub struct Collected<T> {
    parts: Mutex<Vec<(SubtaskInfo, Vec<T>)>>,
    finishes: AtomicUsize,
}

impl<T> Collected<T> {
    /// Empty.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            parts: Mutex::new(Vec::new()),
            finishes: AtomicUsize::new(0),
        })
    }

    /// Times any subtask's `finish` was called.
    pub fn finishes(&self) -> usize {
        self.finishes.load(Ordering::SeqCst)
    }

    /// Each finished subtask with the records it received, in order.
    pub fn take_parts(&self) -> Vec<(SubtaskInfo, Vec<T>)> {
        std::mem::take(&mut *self.parts.lock().unwrap())
    }

    /// Every record of every finished subtask.
    pub fn take_all(&self) -> Vec<T> {
        self.take_parts()
            .into_iter()
            .flat_map(|(_, records)| records)
            .collect()
    }
}

/// A sink that keeps every record and hands them to a [`Collected`] when
/// its input ends.
pub struct CollectSink<T> {
    info: SubtaskInfo,
    records: Vec<T>,
    into: Arc<Collected<T>>,
}

impl<T: 'static> Sink for CollectSink<T> {
    type In = T;

    fn invoke(&mut self, record: T) {
        self.records.push(record);
    }

    fn finish(&mut self) {
        self.into.finishes.fetch_add(1, Ordering::SeqCst);
        let records = std::mem::take(&mut self.records);
        self.into.parts.lock().unwrap().push((self.info, records));
    }
}

/// A sink factory collecting into `into`.
pub fn collect_into<T: Send + 'static>(
    into: &Arc<Collected<T>>,
) -> impl Fn(&SubtaskInfo) -> CollectSink<T> + Send + Sync + 'static {
    let into = into.clone();
    move |info: &SubtaskInfo| CollectSink {
        info: *info,
        records: Vec::new(),
        into: into.clone(),
    }
}

/// A fresh (removed if it existed, not created) directory for test `tag`
/// of this process, under the system's temp directory.
pub fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-it-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A one-subtask source for lateness tests: emits `early`, waits `pause`
/// (long enough for the watermark to fire what those records opened),
/// then emits `late`, each in order.
pub struct EarlyThenLate<T> {
    early: std::collections::VecDeque<T>,
    pause: Duration,
    resume: Option<std::time::Instant>,
    late: std::collections::VecDeque<T>,
}

impl<T> EarlyThenLate<T> {
    /// Emits `early`, pauses for `pause`, then emits `late`.
    pub fn new(early: Vec<T>, pause: Duration, late: Vec<T>) -> Self {
        Self {
            early: early.into(),
            pause,
            resume: None,
            late: late.into(),
        }
    }
}

impl<T: 'static> weir_runtime::Source for EarlyThenLate<T> {
    type Out = T;

    fn poll_next<C: weir_runtime::Collector<T>>(
        &mut self,
        out: &mut C,
        _budget: usize,
    ) -> weir_runtime::SourcePoll {
        use weir_runtime::SourcePoll;
        if !out.is_available() {
            return SourcePoll::Emitted(0);
        }
        if let Some(r) = self.early.pop_front() {
            out.collect(r);
            return SourcePoll::Emitted(1);
        }
        let pause = self.pause;
        let resume = *self
            .resume
            .get_or_insert_with(|| std::time::Instant::now() + pause);
        if std::time::Instant::now() < resume {
            return SourcePoll::Idle {
                until: Some(resume),
            };
        }
        match self.late.pop_front() {
            Some(r) => {
                out.collect(r);
                SourcePoll::Emitted(1)
            }
            None => SourcePoll::Finished,
        }
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        Vec::new()
    }

    fn restore_position(&mut self, _position: &[u8]) -> Result<(), String> {
        Ok(())
    }
}

/// Sorts a multiset so two of them compare with `==`.
pub fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort_unstable();
    v
}

#[test]
fn splitmix64_matches_the_published_test_vector() {
    // The first outputs of splitmix64 seeded with 0 (Vigna's reference
    // implementation): state x = k * 0x9E37..., output = mix(x). Our
    // function takes the pre-increment state, so outputs are f(k * M).
    assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
    assert_eq!(splitmix64(M), 0x6E78_9E6A_A1B9_65F4);
    assert_eq!(splitmix64(M.wrapping_mul(2)), 0x06C4_5D18_8009_454F);
}
