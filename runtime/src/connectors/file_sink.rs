//! An exactly-once file sink: two-phase commit of one file per checkpoint
//! and subtask, as Flink's `TwoPhaseCommitSinkFunction` does it.
//!
//! Every subtask of a [`TransactionalFileSink`] writes into the same
//! directory. The records a subtask receives between two checkpoint barriers
//! form one *transaction*, named by the id of the checkpoint whose barrier
//! closes it.
//!
//! # Files
//!
//! For subtask `s` (written `{s:04}`, more digits when `s > 9999`) and
//! transaction `n` (written `{n:010}`):
//!
//! | name | meaning |
//! |------|---------|
//! | `.inprogress-{s:04}-{attempt}` | records since the last barrier, still being written; `{attempt}` is unique to one sink instance (process id, clock, counter) |
//! | `.pending-{s:04}-{n:010}` | transaction `n`, pre-committed: complete and durable, waiting for checkpoint `n` to complete |
//! | `part-{s:04}-{n:010}` | transaction `n`, committed: final output, never rewritten |
//!
//! **What a reader of the directory sees:** only `part-*` files are
//! committed output; every name starting with `.` is work in progress (or
//! the leftover of a failed attempt, removed by the next restart) and must
//! be skipped. A `part-*` file appears complete, in one atomic rename, and
//! is never modified. The one exception to "never removed": when a restart
//! restores a checkpoint *older* than one whose transactions were already
//! committed (the newest checkpoint was found corrupt), those newer `part-*`
//! files are deleted, one stderr line each, because the replay from the
//! older checkpoint writes their records again. A reader that wants a
//! stable view reads after the job has ended.
//!
//! # Protocol
//!
//! - [`Sink::invoke`] formats the record into a 256 KiB buffer, written to
//!   the in-progress file when full (no syscall per record). The file is
//!   created with the first bytes of a transaction, so an empty transaction
//!   creates no file.
//! - [`Sink::snapshot_state`]`(n)` (barrier `n`, *pre-commit*): write the
//!   buffer, close the in-progress file and rename it to `.pending-{s}-{n}`.
//!   The pending file and the directory are then handed to the runtime
//!   ([`Sink::take_files_to_sync`]), which fsyncs both through io_uring in
//!   the checkpoint's asynchronous part and acknowledges the checkpoint only
//!   after that, so the synchronous part does not wait for the disk and a
//!   complete checkpoint never names a pending file that is not durable
//!   (used on its own, the caller must fsync them). The returned state lists the
//!   pending transactions of this subtask (those not yet committed,
//!   including `n` unless it was empty): a version byte `1`, the count as an
//!   unsigned LEB128 varint, then the ids as varints, the first in full and
//!   each next one as its (positive) difference from the previous.
//! - [`Sink::notify_checkpoint_complete`]`(n)` (*commit*): every pending
//!   transaction with id `<= n` is renamed to `part-{s}-{id}`, then the
//!   directory is fsynced. Commit is idempotent: a transaction whose pending
//!   file is gone and whose part file exists is already committed. A pending
//!   file whose part file already exists is an error naming both (committed
//!   output is never overwritten).
//! - [`Sink::initialize_state`]`(Some((n, state)))` (restart from complete
//!   checkpoint `n`): *recover-and-commit* every transaction the state lists
//!   (they belong to a complete checkpoint), then *abort* the rest: delete
//!   this subtask's in-progress and remaining pending files, and delete its
//!   `part-*` files with an id `> n` (see above). `initialize_state(None)`
//!   (nothing restored: all of the input is replayed) deletes all of this
//!   subtask's hidden files and all of its `part-*` files, so a job run
//!   again into the same directory starts from a clean slate.
//!
//! Checkpoint ids must strictly increase within a sink instance and exceed
//! the restored checkpoint's id, which also guarantees that no pending name
//! is ever reused. At most one live instance may write a given subtask's
//! files (the runtime never runs two attempts at once). Errors are the
//! message of a [`ConnectorError`] naming the file or directory (the
//! [`Sink`] trait's error is a `String`); an I/O error inside
//! [`Sink::invoke`], which cannot return one, panics with that message,
//! which fails the job.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::connectors::error::{ConnectorError, Result, SinkStateDefect, SinkStateField};
use crate::core::subtask::SubtaskInfo;
use crate::operators::sink::Sink;

/// Version byte of the state returned by `snapshot_state`.
const STATE_VERSION: u8 = 1;

/// Buffered bytes at which `invoke` writes them to the in-progress file.
const WRITE_AT: usize = 256 * 1024;

/// Distinguishes sink instances created by one process at the same instant.
static INSTANCES: AtomicU64 = AtomicU64::new(0);

/// An exactly-once sink writing each checkpoint's records of a subtask to
/// one file, committed when the checkpoint completes (see the module doc
/// for the protocol and the file names).
///
/// `format` appends one record's bytes to the buffer it is given (for
/// example a line `key,count,sum\n`).
pub struct TransactionalFileSink<T, F> {
    dir: PathBuf,
    subtask: usize,
    /// This instance's in-progress file (reused for every transaction).
    in_progress: PathBuf,
    /// The in-progress file, once the current transaction wrote to it.
    file: Option<File>,
    /// Formatted records not yet written to `file`.
    buf: Vec<u8>,
    format: F,
    /// Pre-committed, not yet committed transaction ids, increasing.
    pending: Vec<u64>,
    /// The last snapshot's id, or the restored checkpoint's id.
    last_id: Option<u64>,
    initialized: bool,
    /// Pre-committed files and the directory, to be fsynced by the runtime
    /// before the checkpoint is acknowledged.
    to_sync: Vec<PathBuf>,
    _records: PhantomData<fn(&T)>,
}

impl<T, F: FnMut(&T, &mut Vec<u8>)> TransactionalFileSink<T, F> {
    /// A sink for subtask `info.index` writing into `dir` (created by
    /// [`Sink::initialize_state`] if missing).
    ///
    /// ```
    /// use std::io::Write;
    /// use weir_runtime::{Sink, SubtaskInfo, TransactionalFileSink};
    ///
    /// let dir = std::env::temp_dir().join(format!("weir-sink-doc-{}", std::process::id()));
    /// let info = SubtaskInfo { index: 3, parallelism: 4, worker: 0, max_parallelism: 128 };
    /// let mut sink = TransactionalFileSink::new(&dir, &info, |r: &(u64, u64, u64), out| {
    ///     writeln!(out, "{},{},{}", r.0, r.1, r.2).unwrap();
    /// });
    /// sink.initialize_state(None)?;
    /// sink.invoke((7, 2, 10));
    /// sink.snapshot_state(1)?; // barrier 1: pre-commit
    /// sink.notify_checkpoint_complete(1)?; // checkpoint 1 complete: commit
    /// let part = std::fs::read_to_string(dir.join("part-0003-0000000001")).unwrap();
    /// assert_eq!(part, "7,2,10\n");
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), String>(())
    /// ```
    pub fn new(dir: impl Into<PathBuf>, info: &SubtaskInfo, format: F) -> Self {
        let dir = dir.into();
        let subtask = info.index;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let instance = INSTANCES.fetch_add(1, Ordering::Relaxed);
        let in_progress = dir.join(format!(
            ".inprogress-{subtask:04}-{:x}-{nanos:x}-{instance}",
            std::process::id()
        ));
        Self {
            dir,
            subtask,
            in_progress,
            file: None,
            buf: Vec::with_capacity(WRITE_AT + WRITE_AT / 8),
            format,
            pending: Vec::new(),
            last_id: None,
            initialized: false,
            to_sync: Vec::new(),
            _records: PhantomData,
        }
    }

    /// The directory this sink writes into.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The committed (visible) file of transaction `id` of this subtask.
    pub fn part_path(&self, id: u64) -> PathBuf {
        self.dir.join(format!("part-{:04}-{id:010}", self.subtask))
    }

    /// The pre-committed (hidden) file of transaction `id` of this subtask.
    fn pending_path(&self, id: u64) -> PathBuf {
        self.dir
            .join(format!(".pending-{:04}-{id:010}", self.subtask))
    }

    /// Writes the buffer to the in-progress file, creating it if needed.
    fn write_buffer(&mut self) -> Result<()> {
        let file = match &mut self.file {
            Some(file) => file,
            None => {
                let file = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&self.in_progress)
                    .map_err(|e| {
                        ConnectorError::io("create in-progress file", &self.in_progress, e)
                    })?;
                self.file.insert(file)
            }
        };
        file.write_all(&self.buf)
            .map_err(|e| ConnectorError::io("write in-progress file", &self.in_progress, e))?;
        self.buf.clear();
        Ok(())
    }

    /// Commits transaction `id`: returns whether a rename happened (the
    /// directory then needs an fsync).
    fn commit(&self, id: u64) -> Result<bool> {
        let pending = self.pending_path(id);
        let part = self.part_path(id);
        match (exists(&pending)?, exists(&part)?) {
            (true, false) => match fs::rename(&pending, &part) {
                Ok(()) => Ok(true),
                Err(source) => Err(ConnectorError::Rename {
                    op: "commit",
                    from: pending,
                    to: part,
                    source,
                }),
            },
            (false, true) => Ok(false),
            (true, true) => Err(ConnectorError::CommitConflict {
                id,
                subtask: self.subtask,
                pending,
                part,
            }),
            (false, false) => Err(ConnectorError::CommitLost {
                id,
                subtask: self.subtask,
                pending,
                part,
            }),
        }
    }

    /// Deletes this subtask's in-progress and pending files, and its part
    /// files with an id above `restored` (all of them if `None`). Returns
    /// whether anything was deleted.
    fn abort_rest(&self, restored: Option<u64>) -> Result<bool> {
        let names = Names::new(self.subtask);
        let op = "list sink directory";
        let entries = fs::read_dir(&self.dir).map_err(|e| ConnectorError::io(op, &self.dir, e))?;
        let mut deleted = false;
        for entry in entries {
            let entry = entry.map_err(|e| ConnectorError::io(op, &self.dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                continue; // not a name this sink writes
            };
            let path = entry.path();
            match names.classify(name) {
                None => continue,
                Some(Kind::InProgress | Kind::Pending(_)) => {}
                Some(Kind::Part(id)) => {
                    if restored.is_some_and(|n| id <= n) {
                        continue;
                    }
                    let why = match restored {
                        Some(n) => format!("newer than the restored checkpoint {n}"),
                        None => "no checkpoint was restored".to_string(),
                    };
                    tracing::info!(
                        target: crate::core::log::SINK,
                        transaction = id,
                        "weir: file sink: removing committed file {} (transaction {id}: {why}; \
                         the replay writes its records again)",
                        path.display()
                    );
                }
            }
            fs::remove_file(&path).map_err(|e| ConnectorError::io("delete", &path, e))?;
            deleted = true;
        }
        Ok(deleted)
    }

    fn check_initialized(&self, call: &'static str) -> Result<()> {
        if self.initialized {
            Ok(())
        } else {
            Err(ConnectorError::NotInitialized {
                dir: self.dir.clone(),
                subtask: self.subtask,
                call,
            })
        }
    }

    /// [`Sink::initialize_state`]: recover-and-commit, then abort the rest.
    fn initialize(&mut self, restored: Option<(u64, &[u8])>) -> Result<()> {
        if self.initialized {
            return Err(ConnectorError::InitializedTwice {
                dir: self.dir.clone(),
                subtask: self.subtask,
            });
        }
        if self.file.is_some() || !self.buf.is_empty() {
            return Err(ConnectorError::RecordsBeforeInitialize {
                dir: self.dir.clone(),
                subtask: self.subtask,
            });
        }
        fs::create_dir_all(&self.dir)
            .map_err(|e| ConnectorError::io("create sink directory", &self.dir, e))?;
        let (restored_id, listed) = match restored {
            None => (None, Vec::new()),
            Some((n, bytes)) => {
                let ids = decode_state(bytes, n).map_err(|defect| {
                    ConnectorError::MalformedSinkState {
                        dir: self.dir.clone(),
                        subtask: self.subtask,
                        checkpoint: n,
                        defect,
                    }
                })?;
                (Some(n), ids)
            }
        };
        let mut changed = false;
        for &id in &listed {
            changed |= self.commit(id)?;
        }
        changed |= self.abort_rest(restored_id)?;
        if changed {
            sync_dir(&self.dir)?;
        }
        self.last_id = restored_id;
        self.initialized = true;
        Ok(())
    }

    /// [`Sink::snapshot_state`]: pre-commit the transaction of checkpoint
    /// `checkpoint_id`.
    fn pre_commit(&mut self, checkpoint_id: u64) -> Result<Vec<u8>> {
        self.check_initialized("snapshot_state")?;
        if let Some(last) = self.last_id {
            if checkpoint_id <= last {
                return Err(ConnectorError::CheckpointIdNotIncreasing {
                    dir: self.dir.clone(),
                    subtask: self.subtask,
                    id: checkpoint_id,
                    last,
                });
            }
        }
        if self.file.is_some() || !self.buf.is_empty() {
            self.write_buffer()?;
            // Closed, not synced: the runtime fsyncs the pending file and
            // the directory in the checkpoint's asynchronous part, before
            // acknowledging it (see `take_files_to_sync`). Until then the
            // checkpoint is not complete, so a crash aborts this file.
            drop(self.file.take());
            let pending = self.pending_path(checkpoint_id);
            if exists(&pending)? {
                return Err(ConnectorError::PendingExists {
                    in_progress: self.in_progress.clone(),
                    pending,
                });
            }
            if let Err(source) = fs::rename(&self.in_progress, &pending) {
                return Err(ConnectorError::Rename {
                    op: "pre-commit",
                    from: self.in_progress.clone(),
                    to: pending,
                    source,
                });
            }
            self.to_sync.push(pending);
            self.to_sync.push(self.dir.clone());
            self.pending.push(checkpoint_id);
        }
        self.last_id = Some(checkpoint_id);
        Ok(encode_state(&self.pending))
    }

    /// [`Sink::notify_checkpoint_complete`]: commit every pending
    /// transaction up to `checkpoint_id`.
    fn commit_through(&mut self, checkpoint_id: u64) -> Result<()> {
        self.check_initialized("notify_checkpoint_complete")?;
        let due = self.pending.partition_point(|&id| id <= checkpoint_id);
        let mut renamed = false;
        let mut result = Ok(());
        let mut done = 0;
        while done < due {
            match self.commit(self.pending[done]) {
                Ok(r) => renamed |= r,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
            done += 1;
        }
        self.pending.drain(..done);
        if renamed {
            sync_dir(&self.dir)?;
        }
        result
    }
}

impl<T: 'static, F: FnMut(&T, &mut Vec<u8>) + 'static> Sink for TransactionalFileSink<T, F> {
    type In = T;

    #[inline]
    fn invoke(&mut self, record: T) {
        (self.format)(&record, &mut self.buf);
        if self.buf.len() >= WRITE_AT {
            if let Err(e) = self.write_buffer() {
                panic!("{e}");
            }
        }
    }

    fn initialize_state(
        &mut self,
        restored: Option<(u64, &[u8])>,
    ) -> std::result::Result<(), String> {
        self.initialize(restored).map_err(|e| e.to_string())
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> std::result::Result<Vec<u8>, String> {
        self.pre_commit(checkpoint_id).map_err(|e| e.to_string())
    }

    fn take_files_to_sync(&mut self) -> Vec<PathBuf> {
        std::mem::take(&mut self.to_sync)
    }

    fn notify_checkpoint_complete(
        &mut self,
        checkpoint_id: u64,
    ) -> std::result::Result<(), String> {
        self.commit_through(checkpoint_id)
            .map_err(|e| e.to_string())
    }
}

/// The kinds of file names this sink writes.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    InProgress,
    Pending(u64),
    Part(u64),
}

/// Recognizes the file names of one subtask.
struct Names {
    in_progress: String,
    pending: String,
    part: String,
}

impl Names {
    fn new(subtask: usize) -> Self {
        Self {
            in_progress: format!(".inprogress-{subtask:04}-"),
            pending: format!(".pending-{subtask:04}-"),
            part: format!("part-{subtask:04}-"),
        }
    }

    /// The kind of `name` if this subtask's sink wrote it.
    fn classify(&self, name: &str) -> Option<Kind> {
        if name.starts_with(&self.in_progress) {
            return Some(Kind::InProgress);
        }
        if let Some(id) = name.strip_prefix(&self.pending).and_then(parse_id) {
            return Some(Kind::Pending(id));
        }
        name.strip_prefix(&self.part)
            .and_then(parse_id)
            .map(Kind::Part)
    }
}

/// A transaction id written with ASCII digits only.
fn parse_id(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn exists(path: &Path) -> Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ConnectorError::io("inspect", path, e)),
    }
}

/// Makes renames and deletions in `dir` durable.
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| ConnectorError::io("fsync sink directory", dir, e))
}

/// Encodes increasing transaction ids (see the module doc).
fn encode_state(ids: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + ids.len() * 2);
    out.push(STATE_VERSION);
    put_varint(&mut out, ids.len() as u64);
    let mut prev = 0;
    for (i, &id) in ids.iter().enumerate() {
        put_varint(&mut out, if i == 0 { id } else { id - prev });
        prev = id;
    }
    out
}

/// Decodes a state of checkpoint `checkpoint_id`; the error says what is
/// wrong.
fn decode_state(bytes: &[u8], checkpoint_id: u64) -> Result<Vec<u64>, SinkStateDefect> {
    let (&version, mut rest) = bytes.split_first().ok_or(SinkStateDefect::Empty)?;
    if version != STATE_VERSION {
        return Err(SinkStateDefect::Version {
            found: version,
            expected: STATE_VERSION,
        });
    }
    let count = get_varint(&mut rest, SinkStateField::Count)?;
    if count > rest.len() as u64 {
        return Err(SinkStateDefect::Count {
            count,
            left: rest.len(),
        });
    }
    let mut ids = Vec::with_capacity(count as usize);
    for i in 0..count {
        let v = get_varint(&mut rest, SinkStateField::Transaction(i))?;
        let id = match ids.last() {
            None => v,
            Some(&prev) if v == 0 => return Err(SinkStateDefect::NotIncreasing(prev)),
            Some(&prev) => {
                u64::checked_add(prev, v).ok_or(SinkStateDefect::Overflow { prev, delta: v })?
            }
        };
        if id > checkpoint_id {
            return Err(SinkStateDefect::NewerThanCheckpoint(id));
        }
        ids.push(id);
    }
    if !rest.is_empty() {
        return Err(SinkStateDefect::TrailingBytes(rest.len()));
    }
    Ok(ids)
}

/// Appends `v` as an unsigned LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads an unsigned LEB128 varint from the front of `bytes`.
fn get_varint(bytes: &mut &[u8], what: SinkStateField) -> Result<u64, SinkStateDefect> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate() {
        let shift = 7 * i as u32;
        if shift > 63 || (shift == 63 && b & 0x7f > 1) {
            return Err(SinkStateDefect::TooLong(what));
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Ok(v);
        }
    }
    Err(SinkStateDefect::Truncated(what))
}

#[cfg(test)]
mod tests {
    use super::*;

    static DIRS: AtomicU64 = AtomicU64::new(0);

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(test: &str) -> Self {
            let n = DIRS.fetch_add(1, Ordering::Relaxed);
            let p = std::env::temp_dir()
                .join(format!("weir-file-sink-{}-{test}-{n}", std::process::id()));
            let _ = fs::remove_dir_all(&p);
            Self(p)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn info(index: usize, parallelism: usize) -> SubtaskInfo {
        SubtaskInfo {
            index,
            parallelism,
            worker: 0,
            max_parallelism: 128,
        }
    }

    type LineSink = TransactionalFileSink<u64, fn(&u64, &mut Vec<u8>)>;

    /// Record `r` is the line `r,1,r*3` (the shape W1 writes).
    fn format_line(r: &u64, out: &mut Vec<u8>) {
        writeln!(out, "{r},1,{}", r * 3).unwrap();
    }

    fn line(r: u64) -> String {
        format!("{r},1,{}", r * 3)
    }

    fn sink(dir: &Path, subtask: usize) -> LineSink {
        TransactionalFileSink::new(
            dir,
            &info(subtask, 2),
            format_line as fn(&u64, &mut Vec<u8>),
        )
    }

    fn feed(sink: &mut LineSink, records: std::ops::Range<u64>) {
        for r in records {
            sink.invoke(r);
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    fn hidden(dir: &Path) -> Vec<String> {
        names(dir)
            .into_iter()
            .filter(|n| n.starts_with('.'))
            .collect()
    }

    /// The lines of every committed file, sorted.
    fn committed_lines(dir: &Path) -> Vec<String> {
        let mut lines = Vec::new();
        for name in names(dir) {
            if name.starts_with("part-") {
                let text = fs::read_to_string(dir.join(&name)).unwrap();
                assert!(text.is_empty() || text.ends_with('\n'), "{name}");
                lines.extend(text.lines().map(str::to_string));
            }
        }
        lines.sort();
        lines
    }

    fn expected(records: impl IntoIterator<Item = u64>) -> Vec<String> {
        let mut v: Vec<String> = records.into_iter().map(line).collect();
        v.sort();
        v
    }

    #[test]
    fn commit_makes_output_visible_only_after_notify() {
        let d = TempDir::new("commit");
        let mut s = sink(&d.0, 1);
        s.initialize_state(None).unwrap();
        feed(&mut s, 0..100);
        assert_eq!(committed_lines(&d.0), Vec::<String>::new());
        let state = s.snapshot_state(1).unwrap();
        assert_eq!(decode_state(&state, 1).unwrap(), vec![1]);
        assert_eq!(names(&d.0), vec![".pending-0001-0000000001".to_string()]);
        assert_eq!(committed_lines(&d.0), Vec::<String>::new());
        s.notify_checkpoint_complete(1).unwrap();
        assert_eq!(names(&d.0), vec!["part-0001-0000000001".to_string()]);
        assert_eq!(committed_lines(&d.0), expected(0..100));
        // A repeated notification changes nothing.
        s.notify_checkpoint_complete(1).unwrap();
        assert_eq!(committed_lines(&d.0), expected(0..100));
    }

    #[test]
    fn large_transactions_spill_to_a_hidden_file_before_the_barrier() {
        let d = TempDir::new("spill");
        let mut s = sink(&d.0, 0);
        s.initialize_state(None).unwrap();
        let n = 50_000; // about 650 KB of lines: several buffer writes
        feed(&mut s, 0..n);
        let hidden_now = hidden(&d.0);
        assert_eq!(hidden_now.len(), 1, "{hidden_now:?}");
        assert!(hidden_now[0].starts_with(".inprogress-0000-"));
        assert!(fs::metadata(d.0.join(&hidden_now[0])).unwrap().len() >= WRITE_AT as u64);
        assert_eq!(committed_lines(&d.0), Vec::<String>::new());
        s.snapshot_state(7).unwrap();
        s.notify_checkpoint_complete(7).unwrap();
        assert_eq!(committed_lines(&d.0), expected(0..n));
        assert!(hidden(&d.0).is_empty());
    }

    #[test]
    fn empty_transactions_create_no_file() {
        let d = TempDir::new("empty");
        let mut s = sink(&d.0, 0);
        s.initialize_state(None).unwrap();
        let state = s.snapshot_state(1).unwrap();
        assert_eq!(decode_state(&state, 1).unwrap(), Vec::<u64>::new());
        assert!(names(&d.0).is_empty());
        s.notify_checkpoint_complete(1).unwrap();
        feed(&mut s, 0..3);
        s.snapshot_state(2).unwrap();
        let state = s.snapshot_state(3).unwrap(); // empty, 2 still pending
        assert_eq!(decode_state(&state, 3).unwrap(), vec![2]);
        s.notify_checkpoint_complete(3).unwrap();
        assert_eq!(names(&d.0), vec!["part-0000-0000000002".to_string()]);
        assert_eq!(committed_lines(&d.0), expected(0..3));
    }

    #[test]
    fn one_notification_commits_every_earlier_pending_transaction() {
        let d = TempDir::new("several");
        let mut s = sink(&d.0, 0);
        s.initialize_state(None).unwrap();
        feed(&mut s, 0..10);
        s.snapshot_state(1).unwrap();
        feed(&mut s, 10..20);
        s.snapshot_state(2).unwrap();
        feed(&mut s, 20..30);
        let state = s.snapshot_state(4).unwrap();
        assert_eq!(decode_state(&state, 4).unwrap(), vec![1, 2, 4]);
        feed(&mut s, 30..40);
        s.snapshot_state(5).unwrap();
        // Checkpoint 4 completes after barrier 5 was taken.
        s.notify_checkpoint_complete(4).unwrap();
        assert_eq!(committed_lines(&d.0), expected(0..30));
        assert_eq!(hidden(&d.0), vec![".pending-0000-0000000005".to_string()]);
        s.finish();
        let state = s.snapshot_state(6).unwrap();
        assert_eq!(decode_state(&state, 6).unwrap(), vec![5]);
        s.notify_checkpoint_complete(6).unwrap();
        assert_eq!(committed_lines(&d.0), expected(0..40));
        assert!(hidden(&d.0).is_empty());
    }

    #[test]
    fn checkpointing_off_commits_everything_as_transaction_zero() {
        let d = TempDir::new("off");
        for run in 0..2 {
            // Running the job twice into the same directory replaces the
            // output of the first run.
            let mut s = sink(&d.0, 0);
            s.initialize_state(None).unwrap();
            feed(&mut s, 0..25);
            s.finish();
            s.snapshot_state(0).unwrap();
            s.notify_checkpoint_complete(0).unwrap();
            assert_eq!(
                names(&d.0),
                vec!["part-0000-0000000000".to_string()],
                "run {run}"
            );
            assert_eq!(committed_lines(&d.0), expected(0..25));
        }
    }

    #[test]
    fn subtasks_share_the_directory_without_touching_each_other() {
        let d = TempDir::new("subtasks");
        let mut a = sink(&d.0, 0);
        let mut b = sink(&d.0, 1);
        a.initialize_state(None).unwrap();
        b.initialize_state(None).unwrap();
        feed(&mut a, 0..10);
        feed(&mut b, 10..20);
        let sa = a.snapshot_state(1).unwrap();
        b.snapshot_state(1).unwrap();
        a.notify_checkpoint_complete(1).unwrap();
        b.notify_checkpoint_complete(1).unwrap();
        feed(&mut b, 20..30);
        b.snapshot_state(2).unwrap();
        b.notify_checkpoint_complete(2).unwrap();
        // Subtask 0 restarts from checkpoint 1: subtask 1's part of 2 stays.
        let mut a2 = sink(&d.0, 0);
        a2.initialize_state(Some((1, &sa))).unwrap();
        assert_eq!(committed_lines(&d.0), expected(0..30));
    }

    /// (a) Barrier 2 taken but checkpoint 2 never completes; restart from 1.
    #[test]
    fn restart_from_an_older_checkpoint_aborts_newer_transactions() {
        let d = TempDir::new("restart-a");
        let mut s = sink(&d.0, 0);
        s.initialize_state(None).unwrap();
        feed(&mut s, 0..10);
        let state1 = s.snapshot_state(1).unwrap();
        feed(&mut s, 10..20);
        s.snapshot_state(2).unwrap();
        s.notify_checkpoint_complete(1).unwrap(); // late, after barrier 2
                                                  // In progress when the crash comes, partly written to disk.
        feed(&mut s, 20..30_000);
        drop(s);
        let before = hidden(&d.0);
        assert_eq!(before.len(), 2, "{before:?}");
        assert!(before[0].starts_with(".inprogress-0000-"), "{before:?}");
        assert_eq!(before[1], ".pending-0000-0000000002");

        let mut s = sink(&d.0, 0);
        s.initialize_state(Some((1, &state1))).unwrap();
        assert_eq!(names(&d.0), vec!["part-0000-0000000001".to_string()]);
        // The replay starts after checkpoint 1.
        feed(&mut s, 10..30_000);
        s.finish();
        s.snapshot_state(3).unwrap();
        s.notify_checkpoint_complete(3).unwrap();
        assert_eq!(committed_lines(&d.0), expected(0..30_000));
        assert!(hidden(&d.0).is_empty());
    }

    /// (b) Crash after checkpoint 2 was committed; restart from 2.
    #[test]
    fn restart_after_commit_recommits_nothing() {
        let d = TempDir::new("restart-b");
        let mut s = sink(&d.0, 0);
        s.initialize_state(None).unwrap();
        feed(&mut s, 0..10);
        s.snapshot_state(1).unwrap();
        s.notify_checkpoint_complete(1).unwrap();
        feed(&mut s, 10..20);
        let state2 = s.snapshot_state(2).unwrap();
        s.notify_checkpoint_complete(2).unwrap();
        feed(&mut s, 20..23);
        s.snapshot_state(3).unwrap(); // never completes
        drop(s);

        let mut s = sink(&d.0, 0);
        s.initialize_state(Some((2, &state2))).unwrap();
        assert_eq!(
            names(&d.0),
            vec![
                "part-0000-0000000001".to_string(),
                "part-0000-0000000002".to_string()
            ]
        );
        feed(&mut s, 20..30);
        s.snapshot_state(4).unwrap();
        s.notify_checkpoint_complete(4).unwrap();
        assert_eq!(committed_lines(&d.0), expected(0..30));
        assert!(hidden(&d.0).is_empty());
    }

    /// (c) Crash between pre-commit and commit of checkpoint 2, which is
    /// complete; restart from 2 commits it.
    #[test]
    fn restart_commits_the_pending_transactions_of_the_restored_checkpoint() {
        let d = TempDir::new("restart-c");
        let mut s = sink(&d.0, 0);
        s.initialize_state(None).unwrap();
        feed(&mut s, 0..10);
        s.snapshot_state(1).unwrap();
        feed(&mut s, 10..20);
        let state2 = s.snapshot_state(2).unwrap();
        assert_eq!(decode_state(&state2, 2).unwrap(), vec![1, 2]);
        feed(&mut s, 20..24);
        drop(s);
        assert_eq!(committed_lines(&d.0), Vec::<String>::new());

        let mut s = sink(&d.0, 0);
        s.initialize_state(Some((2, &state2))).unwrap();
        assert_eq!(committed_lines(&d.0), expected(0..20));
        assert!(hidden(&d.0).is_empty());
        feed(&mut s, 20..30);
        s.snapshot_state(3).unwrap();
        s.notify_checkpoint_complete(3).unwrap();
        assert_eq!(committed_lines(&d.0), expected(0..30));
    }

    /// (d) Checkpoint 2 was committed but is found corrupt; restart from 1
    /// removes its part file, and the replay writes its records again.
    #[test]
    fn restart_from_before_a_committed_checkpoint_removes_its_output() {
        let d = TempDir::new("restart-d");
        let mut s = sink(&d.0, 0);
        s.initialize_state(None).unwrap();
        feed(&mut s, 0..10);
        let state1 = s.snapshot_state(1).unwrap();
        s.notify_checkpoint_complete(1).unwrap();
        feed(&mut s, 10..20);
        s.snapshot_state(2).unwrap();
        s.notify_checkpoint_complete(2).unwrap();
        drop(s);

        let mut s = sink(&d.0, 0);
        s.initialize_state(Some((1, &state1))).unwrap();
        assert_eq!(names(&d.0), vec!["part-0000-0000000001".to_string()]);
        feed(&mut s, 10..30);
        s.snapshot_state(3).unwrap();
        s.notify_checkpoint_complete(3).unwrap();
        assert_eq!(committed_lines(&d.0), expected(0..30));
    }

    #[test]
    fn a_fresh_start_removes_all_earlier_output_of_the_subtask() {
        let d = TempDir::new("fresh");
        let mut s = sink(&d.0, 0);
        s.initialize_state(None).unwrap();
        feed(&mut s, 0..10);
        s.snapshot_state(1).unwrap();
        s.notify_checkpoint_complete(1).unwrap();
        feed(&mut s, 10..15);
        s.snapshot_state(2).unwrap();
        drop(s);
        // Nothing restorable: the whole input is replayed.
        let mut s = sink(&d.0, 0);
        s.initialize_state(None).unwrap();
        assert!(names(&d.0).is_empty());
        feed(&mut s, 0..15);
        s.snapshot_state(3).unwrap();
        s.notify_checkpoint_complete(3).unwrap();
        assert_eq!(committed_lines(&d.0), expected(0..15));
    }

    #[test]
    fn committed_output_is_never_overwritten() {
        let d = TempDir::new("both");
        let mut s = sink(&d.0, 0);
        s.initialize_state(None).unwrap();
        feed(&mut s, 0..5);
        s.snapshot_state(1).unwrap();
        let part = s.part_path(1);
        fs::write(&part, "someone else's\n").unwrap();
        let err = s.notify_checkpoint_complete(1).unwrap_err();
        assert!(err.contains(".pending-0000-0000000001"), "{err}");
        assert!(err.contains(&part.display().to_string()), "{err}");
        assert_eq!(fs::read_to_string(&part).unwrap(), "someone else's\n");
    }

    #[test]
    fn a_lost_pending_file_is_an_error() {
        let d = TempDir::new("lost");
        let mut s = sink(&d.0, 0);
        s.initialize_state(None).unwrap();
        feed(&mut s, 0..5);
        let state = s.snapshot_state(1).unwrap();
        drop(s);
        fs::remove_file(d.0.join(".pending-0000-0000000001")).unwrap();
        let mut s = sink(&d.0, 0);
        let err = s.initialize_state(Some((1, &state))).unwrap_err();
        assert!(err.contains(".pending-0000-0000000001"), "{err}");
        assert!(err.contains("part-0000-0000000001"), "{err}");
    }

    #[test]
    fn malformed_states_are_rejected_with_the_reason() {
        let d = TempDir::new("malformed");
        let dir = d.0.display().to_string();
        let cases: [(&[u8], &str); 7] = [
            (&[], "empty"),
            (&[2, 0], "version 2"),
            (&[1], "count is truncated"),
            (&[1, 3, 1], "3 transactions"),
            (&[1, 2, 1, 0], "not increasing"),
            (&[1, 1, 9], "transaction 9, newer"),
            (&[1, 1, 1, 0], "1 unexpected bytes"),
        ];
        for (bytes, why) in cases {
            let mut s = sink(&d.0, 0);
            let err = s.initialize_state(Some((5, bytes))).unwrap_err();
            assert!(err.contains(&dir) && err.contains(why), "{bytes:?}: {err}");
        }
        let mut s = sink(&d.0, 0);
        let too_big = [
            1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ];
        let err = s.initialize_state(Some((5, &too_big))).unwrap_err();
        assert!(err.contains("64 bits"), "{err}");
    }

    #[test]
    fn state_encoding_round_trips_and_is_compact() {
        for ids in [
            vec![],
            vec![0],
            vec![1, 2, 3],
            vec![7, 300, 1 << 40, u64::MAX],
        ] {
            let bytes = encode_state(&ids);
            assert_eq!(decode_state(&bytes, u64::MAX).unwrap(), ids);
        }
        assert_eq!(encode_state(&[1000, 1001]), vec![1, 2, 0xe8, 0x07, 1]);
    }

    #[test]
    fn checkpoint_ids_must_increase() {
        let d = TempDir::new("ids");
        let mut s = sink(&d.0, 0);
        let err = s.snapshot_state(1).unwrap_err();
        assert!(err.contains("before initialize_state"), "{err}");
        s.initialize_state(Some((4, &[1, 0]))).unwrap();
        let err = s.snapshot_state(4).unwrap_err();
        assert!(
            err.contains("checkpoint id 4 is not above the previous one, 4"),
            "{err}"
        );
        s.snapshot_state(5).unwrap();
        assert!(s.snapshot_state(5).is_err());
        assert!(s.initialize_state(None).unwrap_err().contains("twice"));
    }

    #[test]
    fn only_this_sinks_names_are_recognized() {
        let n = Names::new(3);
        assert_eq!(
            n.classify(".inprogress-0003-1a-2b-0"),
            Some(Kind::InProgress)
        );
        assert_eq!(
            n.classify(".pending-0003-0000000042"),
            Some(Kind::Pending(42))
        );
        assert_eq!(n.classify("part-0003-0000000042"), Some(Kind::Part(42)));
        assert_eq!(n.classify("part-0013-0000000042"), None);
        assert_eq!(n.classify("part-00031-0000000042"), None);
        assert_eq!(n.classify("part-0003-00042.txt"), None);
        assert_eq!(n.classify("part-0003-"), None);
        assert_eq!(n.classify("part-0003--1"), None);
        assert_eq!(
            Names::new(12345).classify("part-12345-7"),
            Some(Kind::Part(7))
        );
    }
}
