//! A replayable source reading a directory of newline-delimited records.
//!
//! [`FileSource`] lists the regular files of a directory whose names do not
//! start with `.` (symbolic links to regular files count), sorted by name
//! (byte order), when it is created. Subtask `s` of `P` reads the files at
//! positions `i` of that list with `i % P == s`, one after the other, and
//! emits each line as a `String` without its `\n` (a `\r` before it is
//! kept). A last line without a trailing newline is still a record; an
//! empty file has none. A position means something only for its
//! directory: declare it with `JobGraph::parameter("input", dir)` so that
//! a checkpoint of a job reading another directory is refused.
//!
//! # Position: file splits
//!
//! A subtask's position is its unfinished files, each a *split*
//! `(name, offset)`: the file being read with the byte offset just after
//! its last emitted line, then the files it has not started. They are
//! operator list state `file-splits` (Flink's `FileSource` keeps its
//! readers' splits in operator state likewise), written at every
//! checkpoint; `snapshot_position` returns no bytes. A restore at the
//! same parallelism gives each subtask its own splits back; at another,
//! the old subtasks' splits are concatenated and dealt out in contiguous
//! parts (even split), so every unfinished file is read by exactly one
//! new subtask from where it stopped. A subtask reads its splits in
//! order; restoring one opens its file and checks the offset as below.
//!
//! The position of checkpoints written before splits, still restored at
//! the same parallelism ([`FileSource::position`] encodes it), is the name
//! of the file being read and the byte offset just after the last emitted
//! line (at the end of a file the source moves on to the next file at
//! offset 0; after the last file it stays at that file's end). It is
//! encoded as a version byte `1`,
//! the name's length (`u32`, little-endian), the name's bytes and the offset
//! (`u64`, little-endian); a subtask without files has an empty name.
//! Restoring a position opens that file and seeks to the offset; a file that
//! is missing, shorter than the offset, not this subtask's, or whose offset
//! is not just after a newline (or at its end) fails the restore with an
//! error naming the file.
//!
//! # Failures
//!
//! An I/O error or a line that is not UTF-8 while reading fails the job
//! (the source panics, as sources do; [`crate::operators::source::function::Source::poll_next`] cannot
//! return an error) with a message naming the file and the byte offset.
//!
//! Reads go through a 1 MiB buffer (grown for a longer line) with blocking
//! `read` calls: a worker waits for the disk while it reads, which suits
//! local files and the page cache.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::chain::control::Collector;
use crate::connectors::error::{ConnectorError, PositionDefect, Result};
use crate::core::subtask::SubtaskInfo;
use crate::operators::source::function::{Source, SourcePoll};
use crate::state::operator::list::OperatorListState;
use crate::state::visitor::OperatorStates;

/// Name of the list state holding a file source's splits.
pub const FILE_SPLITS_STATE: &str = "file-splits";

/// Version byte of an encoded position.
const POSITION_VERSION: u8 = 1;

/// Default size of the read buffer.
const READ_BUFFER: usize = 1 << 20;

/// A bounded, replayable source of the lines of a directory's files (see
/// the module doc).
pub struct FileSource {
    dir: PathBuf,
    subtask: usize,
    parallelism: usize,
    /// Every input file of the directory, sorted (all subtasks').
    listing: Vec<OsString>,
    /// This subtask's files, in reading order.
    files: Vec<OsString>,
    /// Where reading each of `files` starts (0 but for a file restored
    /// from a split read in part).
    starts: Vec<u64>,
    /// The unfinished files as splits `(name, offset)`, written at each
    /// checkpoint (see the module doc).
    splits: OperatorListState<(Vec<u8>, u64)>,
    /// Index in `files` of the file being read (or to be opened).
    cur: usize,
    /// The open file `files[cur]`.
    file: Option<File>,
    /// The file offset of `buf[start]`: just after the last emitted line.
    offset: u64,
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// `buf[start..scanned]` holds no newline.
    scanned: usize,
    /// The current file returned end-of-file.
    eof: bool,
    /// Every file is done.
    finished: bool,
    /// The error reading met, kept for [`Source::check`].
    error: Option<ConnectorError>,
    /// Whether the last error (of `restore_position`, or of reading) may
    /// pass on a restart.
    retryable: bool,
}

impl FileSource {
    /// The source of subtask `info.index` over the files of `dir`, listed
    /// now. The error names the directory or the file that could not be
    /// inspected.
    pub fn new(dir: impl Into<PathBuf>, info: &SubtaskInfo) -> Result<Self> {
        let dir = dir.into();
        if info.index >= info.parallelism {
            return Err(ConnectorError::SubtaskOutOfRange {
                dir,
                index: info.index,
                parallelism: info.parallelism,
            });
        }
        let listing = list_inputs(&dir)?;
        let files: Vec<OsString> = listing
            .iter()
            .skip(info.index)
            .step_by(info.parallelism)
            .cloned()
            .collect();
        Ok(Self {
            dir,
            subtask: info.index,
            parallelism: info.parallelism,
            listing,
            finished: files.is_empty(),
            starts: vec![0; files.len()],
            splits: OperatorListState::new(FILE_SPLITS_STATE),
            files,
            cur: 0,
            file: None,
            offset: 0,
            buf: Vec::new(),
            start: 0,
            end: 0,
            scanned: 0,
            eof: false,
            error: None,
            retryable: true,
        })
    }

    /// Reads through a buffer of `bytes` (at least 1) instead of 1 MiB; a
    /// line longer than the buffer grows it.
    pub fn with_read_buffer(mut self, bytes: usize) -> Self {
        self.buf = vec![0; bytes.max(1)];
        self
    }

    /// The files this subtask reads, in order.
    pub fn files(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.files.iter().map(|name| self.dir.join(name))
    }

    fn path(&self) -> PathBuf {
        self.dir.join(&self.files[self.cur])
    }

    /// Resets the read buffer for a file opened at `self.offset`.
    fn reset_buffer(&mut self) {
        self.start = 0;
        self.end = 0;
        self.scanned = 0;
        self.eof = false;
        if self.buf.is_empty() {
            self.buf = vec![0; READ_BUFFER];
        }
    }

    /// The next line as `(start, end, next)`: its bytes are
    /// `buf[start..end]` and consuming it moves `start` to `next`. Opens and
    /// reads files as needed; `None` when every file is done.
    /// Keeps `e` for [`Source::check`] and stops: the task asks when the
    /// source goes idle, and fails.
    fn fail(&mut self, e: ConnectorError) -> SourcePoll {
        self.retryable = e.retryable();
        self.error = Some(e);
        SourcePoll::Idle { until: None }
    }

    fn peek_line(&mut self) -> Result<Option<(usize, usize, usize)>> {
        loop {
            if self.finished {
                return Ok(None);
            }
            if self.file.is_none() {
                let file = if self.offset == 0 {
                    let path = self.path();
                    File::open(&path).map_err(|e| ConnectorError::io("open input file", path, e))?
                } else {
                    self.open_at(self.offset)?
                };
                self.file = Some(file);
                self.reset_buffer();
            }
            let unscanned = &self.buf[self.scanned..self.end];
            if let Some(i) = unscanned.iter().position(|&b| b == b'\n') {
                let newline = self.scanned + i;
                return Ok(Some((self.start, newline, newline + 1)));
            }
            self.scanned = self.end;
            if self.eof {
                if self.start < self.end {
                    return Ok(Some((self.start, self.end, self.end)));
                }
                self.next_file();
                continue;
            }
            self.fill()?;
        }
    }

    /// Reads more of the current file into the buffer (making room first).
    fn fill(&mut self) -> Result<()> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            self.scanned = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.scanned -= self.start;
                self.start = 0;
            } else {
                let len = self.buf.len();
                self.buf.resize(len * 2, 0);
            }
        }
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        loop {
            match file.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ConnectorError::IoAt {
                        op: "read input file",
                        path: self.path(),
                        offset: self.offset + (self.end - self.start) as u64,
                        source,
                    });
                }
            }
        }
    }

    /// The current file is done: on to the next one, or finished (staying
    /// at the end of the last file).
    fn next_file(&mut self) {
        self.file = None;
        self.start = 0;
        self.end = 0;
        self.scanned = 0;
        self.eof = false;
        if self.cur + 1 < self.files.len() {
            self.cur += 1;
            self.offset = self.starts[self.cur];
        } else {
            self.finished = true;
        }
    }

    /// Why `name` of a restored position is not one of this subtask's files.
    fn foreign_file_error(&self, name: &OsStr) -> ConnectorError {
        let path = self.dir.join(name);
        match self.listing.iter().position(|n| n == name) {
            Some(i) => ConnectorError::ForeignFile {
                path,
                owner: i % self.parallelism,
                parallelism: self.parallelism,
                subtask: self.subtask,
            },
            None if fs::symlink_metadata(&path).is_ok() => ConnectorError::NotAnInput {
                path,
                dir: self.dir.clone(),
            },
            None => ConnectorError::MissingInput { path },
        }
    }

    /// A [`ConnectorError::MalformedPosition`] of this subtask.
    fn malformed(&self, defect: PositionDefect) -> ConnectorError {
        ConnectorError::MalformedPosition {
            dir: self.dir.clone(),
            subtask: self.subtask,
            defect,
        }
    }

    /// The position in the format of checkpoints before splits (see the
    /// module doc): the file being read and the offset after the last
    /// emitted line.
    pub fn position(&self) -> Vec<u8> {
        let name: &[u8] = self.files.get(self.cur).map_or(&[], |n| n.as_bytes());
        let mut out = Vec::with_capacity(13 + name.len());
        out.push(POSITION_VERSION);
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&self.offset.to_le_bytes());
        out
    }

    /// The unfinished files `(path, offset)`, in reading order.
    pub fn splits(&self) -> Vec<(PathBuf, u64)> {
        if self.finished {
            return Vec::new();
        }
        let mut out = vec![(self.path(), self.offset)];
        for i in self.cur + 1..self.files.len() {
            out.push((self.dir.join(&self.files[i]), self.starts[i]));
        }
        out
    }

    /// Writes the unfinished files into the split state.
    fn store_splits(&mut self) {
        self.splits.clear();
        if self.finished {
            return;
        }
        self.splits
            .add((self.files[self.cur].as_bytes().to_vec(), self.offset));
        for i in self.cur + 1..self.files.len() {
            let split = (self.files[i].as_bytes().to_vec(), self.starts[i]);
            self.splits.add(split);
        }
    }

    /// Takes the restored splits as this subtask's files (see
    /// [`Source::initialize_restored_state`]) and opens the first at its
    /// offset.
    fn restore_splits(&mut self) -> Result<()> {
        let splits = self.splits.to_vec();
        self.files.clear();
        self.starts.clear();
        for (name, offset) in splits {
            let name = OsStr::from_bytes(&name).to_owned();
            if !self.listing.contains(&name) {
                let path = self.dir.join(&name);
                return Err(if fs::symlink_metadata(&path).is_ok() {
                    ConnectorError::NotAnInput {
                        path,
                        dir: self.dir.clone(),
                    }
                } else {
                    ConnectorError::MissingInput { path }
                });
            }
            self.files.push(name);
            self.starts.push(offset);
        }
        self.cur = 0;
        self.file = None;
        self.finished = self.files.is_empty();
        self.offset = self.starts.first().copied().unwrap_or(0);
        if !self.finished {
            let file = self.open_at(self.offset)?;
            self.file = Some(file);
            self.reset_buffer();
        }
        self.store_splits();
        Ok(())
    }

    /// Opens the current file at `offset`, which must be at its end or
    /// just after a newline.
    fn open_at(&self, offset: u64) -> Result<File> {
        let path = self.path();
        let mut file = File::open(&path).map_err(|source| ConnectorError::Resume {
            path: path.clone(),
            offset,
            source,
        })?;
        let len = file
            .metadata()
            .map_err(|e| ConnectorError::io("inspect input file", &path, e))?
            .len();
        if offset > len {
            return Err(ConnectorError::ShortInput { path, len, offset });
        }
        if offset > 0 && offset < len {
            let mut before = [0u8];
            file.read_exact_at(&mut before, offset - 1)
                .map_err(|source| ConnectorError::IoAt {
                    op: "read input file",
                    path: path.clone(),
                    offset: offset - 1,
                    source,
                })?;
            if before[0] != b'\n' {
                return Err(ConnectorError::NotAtLineStart { path, offset });
            }
        }
        file.seek(SeekFrom::Start(offset))
            .map_err(|source| ConnectorError::IoAt {
                op: "seek input file",
                path,
                offset,
                source,
            })?;
        Ok(file)
    }

    /// Rewinds to `position`, of the format before splits (see
    /// [`Source::restore_position`]): this subtask's files of the listing,
    /// from that file and offset.
    fn restore(&mut self, position: &[u8]) -> Result<()> {
        self.files = self
            .listing
            .iter()
            .skip(self.subtask)
            .step_by(self.parallelism)
            .cloned()
            .collect();
        self.starts = vec![0; self.files.len()];
        let (name, offset) = decode_position(position).map_err(|e| self.malformed(e))?;
        if name.is_empty() {
            if offset != 0 {
                return Err(self.malformed(PositionDefect::OffsetWithoutFile(offset)));
            }
            // Nothing was read yet.
            self.cur = 0;
            self.offset = 0;
            self.file = None;
            self.finished = self.files.is_empty();
            return Ok(());
        }
        let name = OsStr::from_bytes(name);
        let Some(cur) = self.files.iter().position(|n| n == name) else {
            return Err(self.foreign_file_error(name));
        };
        self.cur = cur;
        let file = self.open_at(offset)?;
        self.offset = offset;
        self.file = Some(file);
        self.finished = false;
        self.reset_buffer();
        Ok(())
    }
}

impl Source for FileSource {
    type Out = String;

    fn poll_next<C: Collector<String>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        let mut n = 0;
        while n < budget {
            let (start, end, next) = match self.peek_line() {
                Ok(Some(line)) => line,
                Ok(None) => {
                    return if n == 0 {
                        SourcePoll::Finished
                    } else {
                        SourcePoll::Emitted(n)
                    }
                }
                Err(e) => return self.fail(e),
            };
            if !out.is_available() {
                break;
            }
            let line = match std::str::from_utf8(&self.buf[start..end]) {
                Ok(line) => line.to_owned(),
                Err(e) => {
                    let offset = self.offset + e.valid_up_to() as u64;
                    let path = self.path();
                    return self.fail(ConnectorError::InvalidUtf8 { path, offset });
                }
            };
            self.offset += (next - start) as u64;
            self.start = next;
            self.scanned = next;
            out.collect(line);
            n += 1;
        }
        SourcePoll::Emitted(n)
    }

    /// The position is the splits: no bytes.
    fn snapshot_position(&mut self) -> Vec<u8> {
        Vec::new()
    }

    /// An empty position (the splits hold it) changes nothing; one of the
    /// format before splits rewinds to it.
    fn restore_position(&mut self, position: &[u8]) -> std::result::Result<(), String> {
        if position.is_empty() {
            return Ok(());
        }
        self.restore(position).map_err(|e| {
            self.retryable = e.retryable();
            e.to_string()
        })
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        self.store_splits();
        states.list(&mut self.splits);
    }

    fn initialize_restored_state(&mut self) -> std::result::Result<(), String> {
        self.restore_splits().map_err(|e| {
            self.retryable = e.retryable();
            e.to_string()
        })
    }

    fn check(&mut self) -> std::result::Result<(), String> {
        match &self.error {
            Some(e) => Err(e.to_string()),
            None => Ok(()),
        }
    }

    /// What [`ConnectorError::retryable`] said of the last error: an input
    /// file that could not be opened or read may be readable later; one
    /// that changed, belongs to another subtask or is not UTF-8 stays so.
    fn is_retryable(&self, _error: &str) -> bool {
        self.retryable
    }
}

/// The sorted names of the regular, non-hidden files of `dir`.
fn list_inputs(dir: &Path) -> Result<Vec<OsString>> {
    let op = "list input directory";
    let entries = fs::read_dir(dir).map_err(|e| ConnectorError::io(op, dir, e))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| ConnectorError::io(op, dir, e))?;
        let name = entry.file_name();
        if name.as_bytes().starts_with(b".") {
            continue;
        }
        let path = entry.path();
        let meta = fs::metadata(&path).map_err(|e| ConnectorError::io("inspect", &path, e))?;
        if meta.is_file() {
            names.push(name);
        }
    }
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    Ok(names)
}

/// Splits an encoded position into the file name and the offset.
fn decode_position(bytes: &[u8]) -> Result<(&[u8], u64), PositionDefect> {
    let (&version, rest) = bytes.split_first().ok_or(PositionDefect::Empty)?;
    if version != POSITION_VERSION {
        return Err(PositionDefect::Version {
            found: version,
            expected: POSITION_VERSION,
        });
    }
    let (len, rest) = rest
        .split_first_chunk::<4>()
        .ok_or(PositionDefect::NameLength)?;
    let len = u32::from_le_bytes(*len) as usize;
    if rest.len() != len + 8 {
        return Err(PositionDefect::Length {
            name: len,
            found: rest.len(),
        });
    }
    let (name, offset) = rest.split_at(len);
    let offset = u64::from_le_bytes(offset.try_into().expect("8 bytes, checked above"));
    Ok((name, offset))
}

#[cfg(test)]
mod tests;
