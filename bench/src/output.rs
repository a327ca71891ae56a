//! W1's exactly-once file output (`weir bench w1 --output DIR`) and its
//! verification.
//!
//! The sink writes each record `(key, count, sum)` as the line
//! `key,count,sum` through the transactional file sink, so only records of
//! completed checkpoints become visible, in `part-*` files. It also keeps
//! the checksum of the plain W1 sink, in the same checkpointed state.
//!
//! [`verify_output`] checks the committed files against the workload
//! itself: for every key `k` seen `c` times among records `0..N`, the lines
//! of `k` must carry exactly the counts `1..=c` (checked through their
//! number, maximum, sum and sum of squares) and the line with count `c`
//! must carry the key's total sum. A lost, duplicated or extra line fails
//! it.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use weir_runtime::connectors::TransactionalFileSink;
use weir_runtime::{Sink, SubtaskInfo};

use crate::workload::{splitmix64, ChecksumSink, SinkResults};

/// Appends `key,count,sum\n`.
pub fn format_line(r: &(u64, u64, u64), out: &mut Vec<u8>) {
    let mut buf = itoa_buf();
    for (i, v) in [r.0, r.1, r.2].into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(format_u64(v, &mut buf));
    }
    out.push(b'\n');
}

fn itoa_buf() -> [u8; 20] {
    [0; 20]
}

fn format_u64(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

type LineFormat = fn(&(u64, u64, u64), &mut Vec<u8>);

/// W1's sink with `--output`: the checksum sink and the transactional file
/// sink, checkpointed together.
pub struct W1OutputSink {
    checksum: ChecksumSink<(u64, u64, u64)>,
    file: TransactionalFileSink<(u64, u64, u64), LineFormat>,
    /// The restored state could not be split or read by the checksum sink:
    /// its error stays, whatever a restart does.
    state_malformed: bool,
}

impl W1OutputSink {
    /// The sink of subtask `info`, writing into `dir`.
    pub fn new(info: &SubtaskInfo, results: Arc<SinkResults>, dir: &Path) -> Self {
        Self {
            checksum: ChecksumSink::new(info, results),
            file: TransactionalFileSink::new(dir, info, format_line as LineFormat),
            state_malformed: false,
        }
    }
}

impl Sink for W1OutputSink {
    type In = (u64, u64, u64);

    #[inline]
    fn invoke(&mut self, record: (u64, u64, u64)) {
        self.checksum.invoke(record);
        self.file.invoke(record);
    }

    fn finish(&mut self) {
        self.checksum.finish();
        self.file.finish();
    }

    fn check(&mut self) -> Result<(), String> {
        self.file.check()
    }

    /// A malformed restored state stays so; the file sink says of its own
    /// errors.
    fn is_retryable(&self, error: &str) -> bool {
        !self.state_malformed && self.file.is_retryable(error)
    }

    /// The file sink names its files after the uid.
    fn bind_uid(&mut self, uid: &str) {
        self.file.bind_uid(uid);
    }

    fn job_starts_fresh(&mut self) {
        self.file.job_starts_fresh();
    }

    fn initialize_state(&mut self, restored: Option<(u64, &[u8])>) -> Result<(), String> {
        self.state_malformed = true;
        match restored {
            None => {
                self.checksum.initialize_state(None)?;
                self.state_malformed = false;
                self.file.initialize_state(None)
            }
            Some((id, state)) => {
                let (checksum, file) = split_state(state).ok_or_else(|| {
                    format!("W1 output sink state of checkpoint {id} is truncated")
                })?;
                self.checksum.initialize_state(Some((id, checksum)))?;
                self.state_malformed = false;
                self.file.initialize_state(Some((id, file)))
            }
        }
    }

    /// Both parts rescale: the checksums add up, the file sink commits
    /// its share of the old subtasks' transactions.
    fn initialize_rescaled_state(
        &mut self,
        checkpoint_id: u64,
        states: &[&[u8]],
    ) -> Option<Result<(), String>> {
        self.state_malformed = true;
        let mut checksums = Vec::with_capacity(states.len());
        let mut files = Vec::with_capacity(states.len());
        for (k, state) in states.iter().enumerate() {
            let Some((checksum, file)) = split_state(state) else {
                return Some(Err(format!(
                    "W1 output sink state of checkpoint {checkpoint_id}, old subtask {k}, is \
                     truncated"
                )));
            };
            checksums.push(checksum);
            files.push(file);
        }
        if let Some(Err(e)) = self
            .checksum
            .initialize_rescaled_state(checkpoint_id, &checksums)
        {
            return Some(Err(e));
        }
        self.state_malformed = false;
        self.file.initialize_rescaled_state(checkpoint_id, &files)
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<Vec<u8>, String> {
        let checksum = self.checksum.snapshot_state(checkpoint_id)?;
        let file = self.file.snapshot_state(checkpoint_id)?;
        let mut state = Vec::with_capacity(4 + checksum.len() + file.len());
        state.extend_from_slice(&(checksum.len() as u32).to_le_bytes());
        state.extend_from_slice(&checksum);
        state.extend_from_slice(&file);
        Ok(state)
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), String> {
        self.file.notify_checkpoint_complete(checkpoint_id)
    }

    fn take_files_to_sync(&mut self) -> Vec<std::path::PathBuf> {
        self.file.take_files_to_sync()
    }
}

fn split_state(state: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(state.get(..4)?.try_into().ok()?) as usize;
    let rest = state.get(4..)?;
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// What [`verify_output`] found.
#[derive(Clone, Debug, Default)]
pub struct OutputCheck {
    /// Committed `part-*` files.
    pub files: usize,
    /// Lines in them.
    pub lines: u64,
    /// The first problems found (empty if the output is exactly right).
    pub problems: Vec<String>,
}

impl OutputCheck {
    /// True if every expected line is there exactly once and nothing else.
    pub fn exactly_once(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, p: String) {
        if self.problems.len() < 10 {
            self.problems.push(p);
        }
    }
}

#[derive(Clone, Copy, Default)]
struct KeyLines {
    lines: u64,
    count_sum: u64,
    count_squares: u64,
    max_count: u64,
    sum_at_max: u64,
}

/// Checks the committed output of W1 with `records` records and `keys`
/// keys in `dir`.
pub fn verify_output(dir: &Path, records: u64, keys: u64) -> Result<OutputCheck, String> {
    let mut check = OutputCheck::default();
    let mut seen = vec![KeyLines::default(); keys as usize];
    let mut names: Vec<_> = fs::read_dir(dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("part-"))
        })
        .collect();
    names.sort();
    for path in &names {
        check.files += 1;
        let file =
            fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        for (n, line) in BufReader::with_capacity(1 << 20, file).lines().enumerate() {
            let line = line.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            check.lines += 1;
            let fields: Vec<Option<u64>> = line.split(',').map(|f| f.parse().ok()).collect();
            let [Some(key), Some(count), Some(sum)] = fields[..] else {
                check.problem(format!(
                    "{}:{}: malformed line `{line}`",
                    path.display(),
                    n + 1
                ));
                continue;
            };
            let Some(k) = seen.get_mut(key as usize) else {
                check.problem(format!(
                    "{}:{}: key {key} is not below K = {keys}",
                    path.display(),
                    n + 1
                ));
                continue;
            };
            k.lines += 1;
            k.count_sum = k.count_sum.wrapping_add(count);
            k.count_squares = k.count_squares.wrapping_add(count.wrapping_mul(count));
            if count >= k.max_count {
                k.max_count = count;
                k.sum_at_max = sum;
            }
        }
    }
    // The workload itself: per key, how many records and their total value.
    let mut expected = vec![(0u64, 0u64); keys as usize];
    for i in 0..records {
        let e = &mut expected[(splitmix64(i) % keys) as usize];
        e.0 += 1;
        e.1 = e.1.wrapping_add(i);
    }
    let mut lines_expected = 0u64;
    for (key, (&(c, total), got)) in expected.iter().zip(&seen).enumerate() {
        lines_expected += c;
        let c128 = c as u128;
        let sum = (c128 * (c128 + 1) / 2) as u64;
        let squares = (c128 * (c128 + 1) * (2 * c128 + 1) / 6) as u64;
        let ok = got.lines == c
            && got.max_count == c
            && got.count_sum == sum
            && got.count_squares == squares
            && (c == 0 || got.sum_at_max == total);
        if !ok {
            check.problem(format!(
                "key {key}: expected counts 1..={c} once each (last sum {total}), found {} lines \
                 with counts summing to {} (max {}, its sum {})",
                got.lines, got.count_sum, got.max_count, got.sum_at_max
            ));
        }
    }
    if check.lines != lines_expected {
        check.problem(format!(
            "{} lines in {} part files, expected {lines_expected}",
            check.lines, check.files
        ));
    }
    Ok(check)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_lines() {
        let mut out = Vec::new();
        format_line(&(0, 17, u64::MAX), &mut out);
        format_line(&(42, 1, 9), &mut out);
        assert_eq!(out, b"0,17,18446744073709551615\n42,1,9\n");
    }

    #[test]
    fn verification_catches_lost_duplicated_and_wrong_lines() {
        let dir = std::env::temp_dir().join(format!("weir-verify-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let (n, k) = (2_000u64, 7u64);
        // The right answer, built the way the engine would emit it.
        let mut state = vec![(0u64, 0u64); k as usize];
        let mut right = Vec::new();
        for i in 0..n {
            let key = splitmix64(i) % k;
            let s = &mut state[key as usize];
            s.0 += 1;
            s.1 = s.1.wrapping_add(i);
            format_line(&(key, s.0, s.1), &mut right);
        }
        let write = |content: &[u8]| {
            for e in fs::read_dir(&dir).unwrap() {
                fs::remove_file(e.unwrap().path()).unwrap();
            }
            let half = content.len() / 2;
            let cut = half + content[half..].iter().position(|&b| b == b'\n').unwrap() + 1;
            fs::write(dir.join("part-0000-0000000001"), &content[..cut]).unwrap();
            fs::write(dir.join("part-0001-0000000001"), &content[cut..]).unwrap();
            fs::write(dir.join(".pending-ignored"), b"1,1,1\n").unwrap();
        };
        write(&right);
        let check = verify_output(&dir, n, k).unwrap();
        assert!(check.exactly_once(), "{:?}", check.problems);
        assert_eq!((check.files, check.lines), (2, n));

        let text = String::from_utf8(right.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut dup = right.clone();
        dup.extend_from_slice(format!("{}\n", lines[10]).as_bytes());
        write(&dup);
        assert!(!verify_output(&dir, n, k).unwrap().exactly_once());

        let lost = lines[1..].join("\n") + "\n";
        write(lost.as_bytes());
        assert!(!verify_output(&dir, n, k).unwrap().exactly_once());

        let garbage = format!("{text}x,y\n");
        write(garbage.as_bytes());
        assert!(!verify_output(&dir, n, k).unwrap().exactly_once());
        fs::remove_dir_all(&dir).unwrap();
    }
}
