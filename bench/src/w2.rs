//! W2's building blocks (WORKLOADS.md "W2 event-time tumbling window"):
//! the record timestamp, the count-and-sum window aggregate and the sink
//! that counts fired windows and folds their checksum.
//!
//! Record `i` is `(key, i)` as in W1, with event time `i / R_ev` ms
//! ([`W2_RECORDS_PER_MS`] records per event-time millisecond). The sink
//! folds `checksum += key*M + window_start_ms + count*31 + sum` (wrapping)
//! over the fired windows `(key, window, (count, sum))` (by the window's start); the sum of
//! the windows' counts is the number of records that went through.

use std::sync::{Arc, Mutex};

use weir_runtime::{AggregateFunction, Sink, SubtaskInfo, TimeWindow};

use crate::workload::M;

/// R_ev: records per event-time millisecond.
pub const W2_RECORDS_PER_MS: u64 = 1000;
/// The window size (ms of event time).
pub const W2_WINDOW_MS: u64 = 1000;
/// W2's default N.
pub const W2_DEFAULT_RECORDS: u64 = 50_000_000;
/// W2's default K.
pub const W2_DEFAULT_KEYS: u64 = 10_000;

/// Event time (ms) of a W2 record `(key, i)`: `i / R_ev`.
#[inline(always)]
pub fn w2_timestamp(record: &(u64, u64)) -> i64 {
    (record.1 / W2_RECORDS_PER_MS) as i64
}

/// One fired window's contribution to the W2 checksum.
#[inline(always)]
pub fn w2_window_checksum(key: u64, window_start_ms: i64, count: u64, sum: u64) -> u64 {
    key.wrapping_mul(M)
        .wrapping_add(window_start_ms as u64)
        .wrapping_add(count.wrapping_mul(31))
        .wrapping_add(sum)
}

/// The window aggregate: count and (wrapping) sum of the values.
#[derive(Clone, Copy, Debug, Default)]
pub struct CountAndSum;

impl AggregateFunction for CountAndSum {
    type In = (u64, u64);
    type Acc = (u64, u64);
    type Out = (u64, u64);

    #[inline(always)]
    fn create_accumulator(&self) -> (u64, u64) {
        (0, 0)
    }

    #[inline(always)]
    fn add(&self, (_, value): (u64, u64), (count, sum): (u64, u64)) -> (u64, u64) {
        (count + 1, sum.wrapping_add(value))
    }

    fn get_result(&self, acc: &(u64, u64)) -> (u64, u64) {
        *acc
    }

    fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1.wrapping_add(b.1))
    }
}

/// What one W2 sink subtask saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowTotals {
    /// Windows fired.
    pub windows: u64,
    /// Records in them (sum of the windows' counts).
    pub records: u64,
    /// The checksum of WORKLOADS.md W2 (wrapping).
    pub checksum: u64,
}

/// Where W2 sink subtasks leave their totals, one slot per subtask (the
/// last attempt's, after in-process restarts).
#[derive(Debug)]
pub struct WindowResults {
    slots: Vec<Mutex<Option<WindowTotals>>>,
}

impl WindowResults {
    /// Slots for `parallelism` sink subtasks.
    pub fn new(parallelism: usize) -> Arc<Self> {
        Arc::new(Self {
            slots: (0..parallelism).map(|_| Mutex::new(None)).collect(),
        })
    }

    /// The totals of every finished subtask, combined.
    pub fn total(&self) -> WindowTotals {
        self.slots
            .iter()
            .filter_map(|s| *s.lock().unwrap_or_else(|e| e.into_inner()))
            .fold(WindowTotals::default(), |a, t| WindowTotals {
                windows: a.windows + t.windows,
                records: a.records + t.records,
                checksum: a.checksum.wrapping_add(t.checksum),
            })
    }
}

/// The W2 sink: counts windows and records, folds the checksum. Its totals
/// are its checkpointed state, so a resumed run verifies the whole output.
pub struct WindowChecksumSink {
    index: usize,
    /// The sink's subtask: a rescaled restore takes its share by it.
    info: SubtaskInfo,
    results: Arc<WindowResults>,
    totals: WindowTotals,
    /// `finish` published the totals (the input ended).
    finished: bool,
}

impl WindowChecksumSink {
    /// The sink of subtask `info`.
    pub fn new(info: &SubtaskInfo, results: Arc<WindowResults>) -> Self {
        Self {
            index: info.index,
            info: *info,
            results,
            totals: WindowTotals::default(),
            finished: false,
        }
    }
}

impl WindowChecksumSink {
    /// Leaves the totals so far in the sink's slot.
    fn publish(&self) {
        *self.results.slots[self.index]
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(self.totals);
    }
}

/// A stopped job's sink never sees its input end: it leaves its totals
/// when its task is dropped (see `ChecksumSink`'s `Drop`).
impl Drop for WindowChecksumSink {
    fn drop(&mut self) {
        if !self.finished {
            self.publish();
        }
    }
}

impl Sink for WindowChecksumSink {
    type In = (u64, TimeWindow, (u64, u64));

    #[inline(always)]
    fn invoke(&mut self, (key, window, (count, sum)): (u64, TimeWindow, (u64, u64))) {
        let start = window.start;
        self.totals.windows += 1;
        self.totals.records += count;
        self.totals.checksum = self
            .totals
            .checksum
            .wrapping_add(w2_window_checksum(key, start, count, sum));
    }

    fn finish(&mut self) {
        self.publish();
        self.finished = true;
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Vec<u8>, String> {
        let t = self.totals;
        Ok([t.windows, t.records, t.checksum]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect())
    }

    fn initialize_state(&mut self, restored: Option<(u64, &[u8])>) -> Result<(), String> {
        let Some((checkpoint, state)) = restored else {
            return Ok(());
        };
        self.totals = decode_window_totals(checkpoint, state)?;
        Ok(())
    }

    /// The totals are sums: each new subtask adds up its share of the old
    /// subtasks' (each old one's goes to one new subtask).
    fn initialize_rescaled_state(
        &mut self,
        checkpoint_id: u64,
        states: &[&[u8]],
    ) -> Option<Result<(), String>> {
        let mut sum = WindowTotals::default();
        for k in weir_runtime::rescaled_share(&self.info, states.len()) {
            match decode_window_totals(checkpoint_id, states[k]) {
                Ok(t) => {
                    sum = WindowTotals {
                        windows: sum.windows + t.windows,
                        records: sum.records + t.records,
                        checksum: sum.checksum.wrapping_add(t.checksum),
                    }
                }
                Err(e) => return Some(Err(e)),
            }
        }
        self.totals = sum;
        Some(Ok(()))
    }
}

/// A W2 sink's state: its totals.
fn decode_window_totals(checkpoint: u64, state: &[u8]) -> Result<WindowTotals, String> {
    if state.len() != 24 {
        return Err(format!(
            "W2 window sink state of checkpoint {checkpoint} has {} bytes, expected 24",
            state.len()
        ));
    }
    let word = |i: usize| u64::from_le_bytes(state[i * 8..i * 8 + 8].try_into().expect("8"));
    Ok(WindowTotals {
        windows: word(0),
        records: word(1),
        checksum: word(2),
    })
}
