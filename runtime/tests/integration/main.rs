//! End-to-end tests of weir-runtime: whole jobs built with the public API,
//! run on real glommio workers, checked against references computed here,
//! in the tests, independently of the engine and of weir-bench.
//!
//! Every job runs through [`run_job`] (from `weir_runtime::testing`, the
//! public test harness), which fails the test instead of hanging when the
//! engine does not finish a bounded job in time.

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
mod hang;
mod interval_join;
mod lifecycle;
mod metrics;
mod operator_state;
mod processing_time;
mod record_timestamps;
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
mod watermarks;
mod windows;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

// The collecting sink, test options and the time limit come from the
// crate's public test harness, as a user's tests would take them.
pub use weir_runtime::testing::{
    collect_into, run_job, run_ok, test_options as options, Collected, JOB_TIMEOUT,
};

/// `ms` milliseconds: a window size or gap that a test also computes with
/// as `i64`, like the timestamps it checks.
pub fn ms(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).expect("a length is not negative"))
}

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
