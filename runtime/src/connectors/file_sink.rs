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
//! For writer `w` (the sink operator's uid, [`Sink::bind_uid`]), subtask
//! `s` (written `{s:04}`, more digits when `s > 9999`) and transaction `n`
//! (written `{n:010}`):
//!
//! | name | meaning |
//! |------|---------|
//! | `.inprogress-{w}-{s:04}-{attempt}` | records since the last barrier, still being written; `{attempt}` is unique to one sink instance (process id, clock, counter) |
//! | `.pending-{w}-{s:04}-{n:010}` | transaction `n`, pre-committed: complete and durable, waiting for checkpoint `n` to complete |
//! | `part-{w}-{s:04}-{n:010}` | transaction `n`, committed: final output, never rewritten |
//!
//! Several sinks may write one directory (two SQL INSERTs into one table):
//! each owns the names of its writer only, commits and cleans up no other
//! writer's files, as each of Flink's FileSink writers does. The writer is
//! the uid when it is made of ASCII letters, digits, `_`, `.` and `-`,
//! else its safe characters and a hash of it (`names`). A sink used
//! without an operator, and older weir, name files without `{w}-`; a
//! checkpoint of older weir restores those names (see the state below).
//!
//! **What a reader of the directory sees:** only `part-*` files are
//! committed output; every name starting with `.` is work in progress (or
//! the leftover of a failed attempt, removed by the next restart) and must
//! be skipped. A `part-*` file appears complete, in one atomic rename, and
//! is never modified or deleted. When a run restores a checkpoint *older*
//! than one whose transactions were already committed (an explicit restore
//! of an older checkpoint, or the newest found corrupt), those newer
//! `part-*` files are moved to `.abandoned/<time>-<pid>/`, one log line
//! each, because the replay from the older checkpoint writes their records
//! again; a fresh start of the same job moves all of them. A reader that
//! wants a stable view reads after the job has ended.
//!
//! **Declare the directory** with [`JobGraph::output_directory`]: the run
//! then owns it (a second process is refused), it is part of the job's
//! fingerprint (a checkpoint of a job writing elsewhere is refused), and a
//! fresh start refuses it while it holds another job's committed output.
//!
//! [`JobGraph::output_directory`]: crate::api::graph::JobGraph::output_directory
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
//!   (used on its own, the caller must fsync them). The returned state
//!   names the writer and lists the pending transactions of this subtask
//!   (those not yet committed, including `n` unless it was empty); its
//!   encoding is `state`'s.
//! - [`Sink::notify_checkpoint_complete`]`(n)` (*commit*): every pending
//!   transaction with id `<= n` is renamed to `part-{s}-{id}`, then the
//!   directory is fsynced. Commit is idempotent: a transaction whose pending
//!   file is gone and whose part file exists is already committed. A pending
//!   file whose part file already exists is an error naming both (committed
//!   output is never overwritten).
//! - [`Sink::initialize_state`]`(Some((n, state)))` (restart from complete
//!   checkpoint `n`): *recover-and-commit* every transaction the state lists
//!   (they belong to a complete checkpoint, under the writer the state
//!   names), then *abort* the rest: delete the in-progress and remaining
//!   pending files of this writer and this subtask's indices (see
//!   rescaling below), and move their `part-*` files with an id `> n`
//!   aside (see above). Restoring a state of older weir, whose names have
//!   no writer, cleans up those names too.
//!   `initialize_state(None)` (nothing restored: all of the input is
//!   replayed) deletes all of this writer's hidden files of this subtask's
//!   indices and moves all of their `part-*` files aside, so a job run
//!   again into the same directory starts from a clean slate. Older
//!   weir's names without a writer go the same way when the whole job
//!   starts fresh ([`Sink::job_starts_fresh`]); a sink only new to a
//!   restored job leaves them (another writer may be restoring them).
//! - **Rescaling** ([`Sink::initialize_rescaled_state`], a checkpoint taken
//!   at another parallelism `P_old`, restored at `P`): like Flink's
//!   committables, old subtask `k`'s pending transactions go to exactly
//!   one new subtask, `k % P`, which commits them under their old names
//!   (`part-{w}-{k}-{n}`). Cleaning up, subtask `j` handles the files of every
//!   index `i` with `i % P == j` found in the directory (its own, and
//!   those of subtasks a smaller parallelism no longer has, whatever run
//!   wrote them), so every leftover is aborted or moved aside by exactly
//!   one subtask, and no two subtasks touch the same name.
//!
//! Checkpoint ids must strictly increase within a sink instance and exceed
//! the restored checkpoint's id, which also guarantees that no pending name
//! is ever reused. At most one live instance may write a given writer's
//! subtask's files (the runtime never runs two attempts at once, and uids
//! are unique in a job). Errors are the
//! message of a [`ConnectorError`] naming the file or directory (the
//! [`Sink`] trait's error is a `String`; [`Sink::is_retryable`] says what
//! [`ConnectorError::retryable`] says of it). An I/O error inside
//! [`Sink::invoke`], which cannot return one, is remembered: the sink drops
//! the transaction's records from then on, [`Sink::check`] returns the
//! error (the runtime asks at every poll, which fails the job) and so does
//! the next [`Sink::snapshot_state`], so the broken file is never
//! pre-committed.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::connectors::error::{ConnectorError, Result};
use crate::core::subtask::SubtaskInfo;
use crate::operators::sink::{rescaled_share, Sink};

mod names;
mod state;

use names::{in_progress_path, transaction_path, writer_name, Kind, Names};
use state::{decode_state, encode_state, without_writer};

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
    /// The name in this sink's file names, made from its operator's uid
    /// ([`Sink::bind_uid`]); `None` (a sink used without an operator)
    /// writes older weir's names.
    writer: Option<String>,
    subtask: usize,
    /// The sink's parallelism: this subtask cleans up the files of every
    /// subtask index `i` with `i % parallelism == subtask` (see
    /// [`Sink::initialize_rescaled_state`]).
    parallelism: usize,
    /// What makes this instance's in-progress file name unique: process
    /// id, clock, counter.
    attempt: (u32, u128, u64),
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
    /// The error `invoke` met writing the in-progress file.
    write_failed: Option<ConnectorError>,
    /// Whether the last error returned may pass on a restart.
    retryable: bool,
    /// The whole job starts fresh ([`Sink::job_starts_fresh`]): older
    /// weir's part files (names without a writer) are this sink's to move
    /// aside too, as its own are.
    fresh_job: bool,
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
        let attempt = (std::process::id(), nanos, instance);
        let in_progress = in_progress_path(&dir, None, subtask, attempt);
        Self {
            dir,
            writer: None,
            subtask,
            parallelism: info.parallelism.max(1),
            attempt,
            in_progress,
            file: None,
            buf: Vec::with_capacity(WRITE_AT + WRITE_AT / 8),
            format,
            pending: Vec::new(),
            last_id: None,
            initialized: false,
            to_sync: Vec::new(),
            write_failed: None,
            retryable: true,
            fresh_job: false,
            _records: PhantomData,
        }
    }

    /// The directory this sink writes into.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The committed (visible) file of transaction `id` of this subtask.
    pub fn part_path(&self, id: u64) -> PathBuf {
        transaction_path(&self.dir, "part-", self.writer.as_deref(), self.subtask, id)
    }

    /// The pre-committed (hidden) file of transaction `id` of this
    /// subtask.
    fn pending_path(&self, id: u64) -> PathBuf {
        transaction_path(
            &self.dir,
            ".pending-",
            self.writer.as_deref(),
            self.subtask,
            id,
        )
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

    /// `invoke`'s write of a full buffer. An error is remembered for
    /// [`Sink::check`]; the transaction's records are dropped from then on.
    fn write_from_invoke(&mut self) {
        if self.write_failed.is_none() {
            if let Err(e) = self.write_buffer() {
                self.write_failed = Some(e);
            }
        }
        if self.write_failed.is_some() {
            self.buf.clear();
        }
    }

    /// `e`'s message for the [`Sink`] trait, remembering whether it may
    /// pass on a restart ([`Sink::is_retryable`]).
    fn report(&mut self, e: &ConnectorError) -> String {
        self.retryable = e.retryable();
        e.to_string()
    }

    /// Commits transaction `id` of subtask `subtask` (this one's, or at a
    /// rescale an old subtask's of this one's share), whose files name
    /// `writer`: returns whether a rename happened (the directory then
    /// needs an fsync).
    ///
    /// When `recovering` (committing a restored checkpoint's
    /// transactions), one with neither its pending nor its part file is
    /// taken as committed before and its part moved away since (a
    /// downstream process that takes the committed files, or a user who
    /// cleared the directory before restoring an older snapshot), with a
    /// warning, as Flink's committers do on recovery; it cannot be written
    /// again either way. At a live commit (the file was pre-committed by
    /// this very attempt) it stays an error.
    fn commit(
        &self,
        writer: Option<&str>,
        subtask: usize,
        id: u64,
        recovering: bool,
    ) -> Result<bool> {
        let pending = transaction_path(&self.dir, ".pending-", writer, subtask, id);
        let part = transaction_path(&self.dir, "part-", writer, subtask, id);
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
                subtask,
                pending,
                part,
            }),
            (false, false) if recovering => {
                tracing::warn!(
                    target: crate::core::log::SINK,
                    transaction = id,
                    "weir: file sink: neither {} nor {} exists: transaction {id} of subtask \
                     {subtask} is taken as committed before and moved away since; its records \
                     are not written again",
                    pending.display(),
                    part.display()
                );
                Ok(false)
            }
            (false, false) => Err(ConnectorError::CommitLost {
                id,
                subtask,
                pending,
                part,
            }),
        }
    }

    /// Deletes the in-progress and pending files of this sink's writer
    /// (and, with `legacy`, of older weir's names without one) of the
    /// subtask indices this subtask cleans up (`i % parallelism ==
    /// subtask`: its own, and those of old subtasks no new subtask has,
    /// whatever parallelism wrote them), and moves their part files with
    /// an id above `restored` (all of them if `None`) to
    /// [`abandoned_dir`]: committed output is never deleted. Files of other
    /// writers in the directory are left alone. Returns whether anything
    /// changed.
    fn abort_rest(&self, restored: Option<u64>, legacy: bool) -> Result<bool> {
        let names = Names {
            writer: self.writer.as_deref(),
            legacy,
            subtask: self.subtask,
            parallelism: self.parallelism,
        };
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
                    let aside = abandoned_dir(&self.dir);
                    fs::create_dir_all(&aside)
                        .map_err(|e| ConnectorError::io("create directory", &aside, e))?;
                    let to = aside.join(name);
                    tracing::info!(
                        target: crate::core::log::SINK,
                        transaction = id,
                        "weir: file sink: moving committed file {} to {} (transaction {id}: {why}; \
                         the replay writes its records again)",
                        path.display(),
                        aside.display()
                    );
                    match fs::rename(&path, &to) {
                        Ok(()) => {}
                        // Older weir's names may be cleaned up by every
                        // writer restoring their state at once.
                        Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                        Err(source) => {
                            return Err(ConnectorError::Rename {
                                op: "move aside",
                                from: path.clone(),
                                to: to.clone(),
                                source,
                            })
                        }
                    }
                    sync_dir(&aside)?;
                    deleted = true;
                    continue;
                }
            }
            match fs::remove_file(&path) {
                Ok(()) => deleted = true,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(ConnectorError::io("delete", &path, e)),
            }
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

    /// [`Sink::initialize_state`] and
    /// [`Sink::initialize_rescaled_state`]: recover-and-commit the
    /// transactions of `share` (the states of old subtasks, by index,
    /// this subtask handles), then abort the rest; `legacy`: the
    /// checkpoint was written by older weir, whose names had no writer.
    fn initialize(
        &mut self,
        restored: Option<u64>,
        share: &[(usize, &[u8])],
        legacy: bool,
    ) -> Result<()> {
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
        let mut listed = Vec::new();
        if let Some(n) = restored {
            for &(subtask, bytes) in share {
                let state = decode_state(bytes, n).map_err(|defect| {
                    ConnectorError::MalformedSinkState {
                        dir: self.dir.clone(),
                        subtask,
                        checkpoint: n,
                        defect,
                    }
                })?;
                listed.push((state.writer, subtask, state.ids));
            }
        }
        let restored_id = restored;
        let mut changed = false;
        for (writer, subtask, ids) in &listed {
            for &id in ids {
                changed |= self.commit(writer.as_deref(), *subtask, id, true)?;
            }
        }
        changed |= self.abort_rest(restored_id, legacy)?;
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
        Ok(encode_state(self.writer.as_deref(), &self.pending))
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
            match self.commit(
                self.writer.as_deref(),
                self.subtask,
                self.pending[done],
                false,
            ) {
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
            self.write_from_invoke();
        }
    }

    fn check(&mut self) -> std::result::Result<(), String> {
        match self.write_failed.take() {
            None => Ok(()),
            Some(e) => {
                let message = self.report(&e);
                self.write_failed = Some(e);
                Err(message)
            }
        }
    }

    fn is_retryable(&self, _error: &str) -> bool {
        self.retryable
    }

    /// Names this sink's files after its operator's `uid` (see the module
    /// doc), so sinks writing one directory never share a name. A sink
    /// already initialized keeps its names.
    fn bind_uid(&mut self, uid: &str) {
        if self.initialized || self.file.is_some() {
            return;
        }
        let writer = writer_name(uid);
        self.in_progress = in_progress_path(&self.dir, Some(&writer), self.subtask, self.attempt);
        self.writer = Some(writer);
    }

    fn job_starts_fresh(&mut self) {
        self.fresh_job = true;
    }

    fn initialize_state(
        &mut self,
        restored: Option<(u64, &[u8])>,
    ) -> std::result::Result<(), String> {
        let result = match restored {
            // A fresh job replays everything: older weir's parts in the
            // directory would be duplicated beside this run's. (A sink new
            // to a restored job leaves them: another sink may restore them.)
            None => self.initialize(None, &[], self.fresh_job && self.writer.is_some()),
            Some((n, state)) => {
                self.initialize(Some(n), &[(self.subtask, state)], without_writer(state))
            }
        };
        result.map_err(|e| self.report(&e))
    }

    /// Old subtask `k`'s transactions go to new subtask `k % P`
    /// ([`rescaled_share`]), which commits them under their old names
    /// (`part-{w}-{k}-{n}`: a committed name never changes) and cleans up
    /// every name index congruent to its own.
    fn initialize_rescaled_state(
        &mut self,
        checkpoint_id: u64,
        states: &[&[u8]],
    ) -> Option<std::result::Result<(), String>> {
        let info = SubtaskInfo {
            index: self.subtask,
            parallelism: self.parallelism,
            worker: 0,
            max_parallelism: 0,
        };
        let share: Vec<(usize, &[u8])> = rescaled_share(&info, states.len())
            .map(|k| (k, states[k]))
            .collect();
        // Older weir's names are the sink's own if any old subtask wrote
        // them, whether or not that subtask's state is this one's share.
        let legacy = states.iter().any(|s| without_writer(s));
        Some(
            self.initialize(Some(checkpoint_id), &share, legacy)
                .map_err(|e| self.report(&e)),
        )
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> std::result::Result<Vec<u8>, String> {
        self.check()?;
        self.pre_commit(checkpoint_id).map_err(|e| self.report(&e))
    }

    fn take_files_to_sync(&mut self) -> Vec<PathBuf> {
        std::mem::take(&mut self.to_sync)
    }

    fn notify_checkpoint_complete(
        &mut self,
        checkpoint_id: u64,
    ) -> std::result::Result<(), String> {
        self.commit_through(checkpoint_id)
            .map_err(|e| self.report(&e))
    }
}

/// Where this process moves the committed files a rollback takes back:
/// `<dir>/.abandoned/<unix ms>-<pid>/` (hidden, so never committed output),
/// one directory per process whatever its subtasks and attempts.
pub fn abandoned_dir(dir: &Path) -> PathBuf {
    static STAMP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let stamp = STAMP.get_or_init(|| {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        format!("{ms}-{}", std::process::id())
    });
    dir.join(ABANDONED_DIR).join(stamp)
}

/// Name of the directory rolled-back committed files are moved to.
pub const ABANDONED_DIR: &str = ".abandoned";

/// How many committed (`part-*`) files of any subtask `dir` holds; 0 if
/// it does not exist.
pub fn committed_parts(dir: &Path) -> io::Result<usize> {
    match fs::read_dir(dir) {
        Ok(entries) => {
            let mut parts = 0;
            for entry in entries {
                if entry?.file_name().to_string_lossy().starts_with("part-") {
                    parts += 1;
                }
            }
            Ok(parts)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e),
    }
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

#[cfg(test)]
mod tests;
