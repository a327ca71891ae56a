//! A replayable, rescalable source reading a directory (or one file) of
//! newline-delimited records, in byte ranges, off the worker's core;
//! bounded, or watching the directory for new files.
//!
//! # What it reads
//!
//! [`FileSource`] reads the regular files of a directory and of its
//! subdirectories, as Flink's recursive enumerator does, skipping every
//! file or directory whose name starts with `.` or `_` (Flink's default
//! filter: hidden files, `_SUCCESS`, `_temporary`); symbolic links to
//! regular files count, links to directories are not followed; a file
//! being written should be written under a hidden name and renamed in.
//! A file's name is its path relative to the directory. Given a
//! file instead, it reads that file alone, as the one input of the
//! directory holding it (whatever its name). Each line
//! (its text without the `\n`; a `\r` before it is kept) goes through the
//! source's [`LineDecoder`]: [`Lines`], the default, emits it as a
//! `String`; SQL's formats parse it into a row in place. A last line
//! without a trailing newline is still a line; an empty file has none.
//!
//! # Compressed files
//!
//! A file whose name ends in `.gz`/`.gzip` (gzip, concatenated members
//! too) or `.deflate` (zlib) is read decompressed, as Flink's file source
//! reads it ([`ranges::Compression`]). It cannot be read from its middle,
//! so it is one range, over the decompressed text (its end unknown until
//! read: `u64::MAX`); every offset of it (positions, errors) is one of that
//! text, and a range resumed from a checkpoint decompresses the file again
//! up to its position.
//!
//! # Byte ranges and who reads them
//!
//! Every file is cut into byte ranges of the range size (64 MiB by
//! default, [`FileSource::with_range_size`]); a range owns the lines that
//! start in it, and range `k` of file `f` is read by subtask
//! `(fnv1a(f) + k) mod P` (see [`ranges`]), so several subtasks read one
//! big file and each line is read once. A subtask reads its ranges in
//! (name, offset) order.
//!
//! **Bounded** (the default): the directory is listed once, when the source
//! is created; the source finishes when its ranges are read. **Continuous**
//! ([`FileSource::with_monitor_interval`], SQL's `source.monitor-interval`):
//! the source lists the directory again every interval and reads the ranges
//! it owns of files it has not seen; it never finishes. As in Flink, files
//! are expected to be immutable once they appear: a file's ranges are cut
//! at the length it had when first listed, and what it grows by afterwards
//! is never read (nor is a rewritten file read again).
//!
//! # Checkpoints and rescaling
//!
//! A subtask's position is its unfinished ranges `(name, start, end, next,
//! lines)` (`next` is just after the last emitted line), in operator list
//! state `file-ranges`: on a restore at another parallelism the old
//! subtasks' ranges are concatenated and dealt out in contiguous parts
//! (even split), so every unfinished range is read by one new subtask from
//! where it stopped. The ranges already claimed are also kept, as `(name,
//! start, file length)` in union list state `file-claims` (each claim
//! stored by the subtask that owns it at the current parallelism): after a
//! restore in continuous mode every subtask relists the directory and
//! claims only the ranges nobody claimed, cut at the recorded lengths, so
//! no file is read twice or skipped. That set grows with every file seen,
//! as Flink's enumerator's set of processed paths does. A bounded source
//! keeps its claims too, so that its checkpoint restored in continuous mode
//! (SQL: a script given `source.monitor-interval`) reads only the files it
//! did not list; a bounded checkpoint of older weir holds none, and such a
//! restore is refused while it has ranges left
//! ([`ConnectorError::BoundedWithoutClaims`]; with none left, it cannot be
//! told from a watching one of an empty directory, and reads every file). `snapshot_position` returns no bytes. The range size must not
//! change across a restore in continuous mode. A checkpoint of the source
//! before ranges restores its unfinished files `(name, offset)` (list
//! state `file-splits`, still visited and always left empty) as ranges
//! from the offset to the file's end; one from before splits (a position
//! of bytes) does not restore.
//!
//! # Reading off the core
//!
//! A running source never makes a blocking file system call on its worker:
//! a read-ahead I/O thread per source subtask ([`reader`]) opens the files,
//! `pread`s its ranges in chunks of the read buffer (2 MiB by default),
//! cuts them after their last newline, checks them for UTF-8 and hands them
//! over through a bounded queue of 4 chunks, also listing the directory
//! for continuous mode. When no chunk is ready the source returns
//! [`SourcePoll::Idle`] without a deadline, so the worker spins or parks
//! instead of blocking, and the thread rings the worker's doorbell (the
//! [`SourceWakeup`] of [`Source::open`]) after each chunk it hands over;
//! the thread starts when the task opens the source, so reading ahead
//! begins before the first poll. (Driven outside a job, without a
//! wakeup, the source starts it at its first poll and asks to be polled
//! again 200 µs later.) The
//! thread is started by the worker and inherits its pinning: it shares
//! the worker's core (and its cache, where the worker reads the chunks it
//! wrote), blocking only itself. The cost:
//! one thread and up to 6 read buffers (about 12 MiB) per source subtask,
//! one copy of each line's tail across a chunk boundary, and a doorbell
//! ring per chunk (a fence and a load while the worker is busy). (Only
//! creating the source lists
//! the directory on the calling thread.) glommio's own file API was not
//! used: its `O_DIRECT` reads fail with `EOPNOTSUPP` on some file systems,
//! and its buffered reads run on the same ring as the worker's network.
//!
//! # Malformed input
//!
//! Every error names the file and the line: its number in the file when
//! its range starts the file (else its number within the range and the
//! range's start) and its byte offset. A line that is not UTF-8, or longer
//! than the limit (16 MiB by default, [`FileSource::with_max_line_length`]),
//! fails the job. A line the decoder refuses fails the job with the
//! decoder's message and column ([`Decoded::Error`]), or, when the format
//! ignores parse errors ([`Decoded::Ignored`]), is skipped and counted: a
//! warning per range names the file, how many lines were skipped and the
//! first one's reason, and [`FileSource::ignored_lines`] counts them. A
//! file deleted before one of its ranges is opened fails the job
//! ([`ConnectorError::InputVanished`], in both modes, as Flink's reader
//! fails on a missing file); a range already open reads on (the open file
//! stays readable). Errors are kept for [`Source::check`]: the source goes
//! idle and its task fails, no panic.

pub mod decode;
pub mod ranges;
pub mod reader;

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::TryRecvError;
use std::time::{Duration, Instant};

pub use decode::{DecodeWith, Decoded, LineDecoder, Lines};
pub use ranges::Range;

use crate::chain::control::Collector;
use crate::connectors::error::{ConnectorError, LineAt, Result};
use crate::core::subtask::SubtaskInfo;
use crate::core::wakeup::SourceWakeup;
use crate::operators::source::function::{Source, SourcePoll};
use crate::state::operator::list::{OperatorListState, UnionListState};
use crate::state::visitor::OperatorStates;
use ranges::{owner, ranges_of, StoredClaim, StoredRange};
use reader::{Chunk, Command, Event, ReadFailure, Reader};

/// Name of the list state holding a file source's unfinished ranges.
pub const FILE_RANGES_STATE: &str = "file-ranges";

/// Name of the list state of the source before byte ranges: unfinished
/// whole files `(name, offset)`. Still restored (see the module doc); a
/// snapshot leaves it empty.
pub const FILE_SPLITS_STATE: &str = "file-splits";

/// Name of the union list state holding a continuous file source's
/// claimed ranges.
pub const FILE_CLAIMS_STATE: &str = "file-claims";

/// Default range size: 64 MiB.
pub const DEFAULT_RANGE_SIZE: u64 = 64 << 20;

/// Default read buffer (chunk) size: 2 MiB.
pub const DEFAULT_READ_BUFFER: usize = 2 << 20;

/// Default line length limit: 16 MiB.
pub const DEFAULT_MAX_LINE: usize = 16 << 20;

/// How long a source driven outside a job (no wakeup) waits for the I/O
/// thread before polling again.
const WAIT_FOR_READER: Duration = Duration::from_micros(200);

/// A replayable source of the lines of a directory's files (see the module
/// doc).
pub struct FileSource<D = Lines> {
    /// The directory read, or the one holding the file read.
    dir: PathBuf,
    /// The file of `dir` read alone, when the source was given a file.
    only: Option<OsString>,
    subtask: usize,
    parallelism: usize,
    decoder: D,
    range_size: u64,
    read_buffer: usize,
    max_line: usize,
    /// Continuous mode: list the directory this often.
    monitor: Option<Duration>,
    /// The listing made at creation, not claimed from yet.
    listing: Option<Vec<(OsString, u64)>>,
    /// This subtask's unfinished ranges, in reading order; the first is
    /// being read. Every one was sent to the reader (once it runs), the
    /// first with id `first_id`, the next with `first_id + 1`, ...
    ranges: VecDeque<Range>,
    first_id: u64,
    /// The chunk being emitted and the index of its next line.
    chunk: Option<(Chunk, usize)>,
    reader: Option<Reader>,
    /// Rings the worker (from the I/O thread), once the job opened the
    /// source.
    wakeup: Option<SourceWakeup>,
    /// Files this subtask has claimed its ranges of (continuous mode).
    considered: HashSet<OsString>,
    /// Restored claims: ranges `(name, start)` claimed by any subtask.
    claimed: HashSet<(Vec<u8>, u64)>,
    /// Restored claims: the length each file was cut at.
    claimed_len: HashMap<OsString, u64>,
    /// The claims this subtask stores (continuous mode).
    own_claims: Vec<StoredClaim>,
    ranges_state: OperatorListState<StoredRange>,
    claims_state: UnionListState<StoredClaim>,
    /// The splits of a checkpoint taken before byte ranges.
    old_splits: OperatorListState<(Vec<u8>, u64)>,
    /// When to list next (continuous mode), and whether a listing is
    /// under way.
    list_due: Option<Instant>,
    listing_pending: bool,
    /// Lines skipped as unparseable: in all, and in the current range
    /// with the first one's line and reason.
    ignored: u64,
    range_ignored: u64,
    first_ignored: Option<(LineAt, String)>,
    /// The error reading met, kept for [`Source::check`].
    error: Option<ConnectorError>,
    /// Whether the last error may pass on a restart.
    retryable: bool,
}

impl FileSource<Lines> {
    /// The source of subtask `info.index` over the files of directory
    /// `path`, listed now, or over `path` alone if it is a file, emitting
    /// lines as `String`s. The error names the directory or the file that
    /// could not be inspected.
    pub fn new(path: impl Into<PathBuf>, info: &SubtaskInfo) -> Result<Self> {
        let path = path.into();
        // A file is read as the one input of the directory holding it
        // (its ranges and checkpointed positions name it in there).
        let (dir, only) = match (std::fs::metadata(&path), path.file_name()) {
            (Ok(meta), Some(name)) if meta.is_file() => {
                let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
                let dir = parent.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
                (dir, Some(name.to_owned()))
            }
            _ => (path, None),
        };
        if info.index >= info.parallelism {
            return Err(ConnectorError::SubtaskOutOfRange {
                dir,
                index: info.index,
                parallelism: info.parallelism,
            });
        }
        let listing = reader::list_inputs(&dir, only.as_deref())
            .map_err(|e| ConnectorError::io("list input directory", &dir, e))?;
        Ok(Self {
            dir,
            only,
            subtask: info.index,
            parallelism: info.parallelism,
            decoder: Lines,
            range_size: DEFAULT_RANGE_SIZE,
            read_buffer: DEFAULT_READ_BUFFER,
            max_line: DEFAULT_MAX_LINE,
            monitor: None,
            listing: Some(listing),
            ranges: VecDeque::new(),
            first_id: 0,
            chunk: None,
            reader: None,
            wakeup: None,
            considered: HashSet::new(),
            claimed: HashSet::new(),
            claimed_len: HashMap::new(),
            own_claims: Vec::new(),
            ranges_state: OperatorListState::new(FILE_RANGES_STATE),
            claims_state: UnionListState::new(FILE_CLAIMS_STATE),
            old_splits: OperatorListState::new(FILE_SPLITS_STATE),
            list_due: None,
            listing_pending: false,
            ignored: 0,
            range_ignored: 0,
            first_ignored: None,
            error: None,
            retryable: true,
        })
    }
}

impl<D> FileSource<D> {
    /// Decodes lines with `decoder` instead.
    pub fn with_decoder<E: LineDecoder>(self, decoder: E) -> FileSource<E> {
        FileSource {
            dir: self.dir,
            only: self.only,
            subtask: self.subtask,
            parallelism: self.parallelism,
            decoder,
            range_size: self.range_size,
            read_buffer: self.read_buffer,
            max_line: self.max_line,
            monitor: self.monitor,
            listing: self.listing,
            ranges: self.ranges,
            first_id: self.first_id,
            chunk: self.chunk,
            reader: self.reader,
            wakeup: self.wakeup,
            considered: self.considered,
            claimed: self.claimed,
            claimed_len: self.claimed_len,
            own_claims: self.own_claims,
            ranges_state: self.ranges_state,
            claims_state: self.claims_state,
            old_splits: self.old_splits,
            list_due: self.list_due,
            listing_pending: self.listing_pending,
            ignored: self.ignored,
            range_ignored: self.range_ignored,
            first_ignored: self.first_ignored,
            error: self.error,
            retryable: self.retryable,
        }
    }

    /// Reads in chunks of `bytes` (at least 1) instead of 2 MiB; a line
    /// longer than a chunk grows it.
    pub fn with_read_buffer(mut self, bytes: usize) -> Self {
        self.read_buffer = bytes.max(1);
        self
    }

    /// Cuts files into ranges of `bytes` (at least 1) instead of 64 MiB.
    pub fn with_range_size(mut self, bytes: u64) -> Self {
        self.range_size = bytes.max(1);
        self
    }

    /// Fails on a line longer than `bytes` instead of 16 MiB.
    pub fn with_max_line_length(mut self, bytes: usize) -> Self {
        self.max_line = bytes;
        self
    }

    /// Continuous mode: lists the directory every `interval` and reads the
    /// files it has not seen; never finishes.
    pub fn with_monitor_interval(mut self, interval: Duration) -> Self {
        self.monitor = Some(interval);
        self
    }

    /// This subtask's unfinished ranges, in reading order (claiming them
    /// from the listing made at creation if not done yet).
    pub fn ranges(&mut self) -> Vec<Range> {
        self.claim_listing();
        self.ranges.iter().cloned().collect()
    }

    /// The files this subtask still reads (some of), in order.
    pub fn files(&mut self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for r in self.ranges() {
            let path = self.dir.join(&r.name);
            if out.last() != Some(&path) {
                out.push(path);
            }
        }
        out
    }

    /// Lines skipped so far because they did not parse (see the module
    /// doc).
    pub fn ignored_lines(&self) -> u64 {
        self.ignored
    }

    /// Claims from the listing made at creation, once.
    fn claim_listing(&mut self) {
        if let Some(listing) = self.listing.take() {
            self.discover(listing);
            if let Some(interval) = self.monitor {
                self.list_due
                    .get_or_insert_with(|| Instant::now() + interval);
            }
        }
    }

    /// Claims this subtask's ranges of the listed files it has not
    /// considered yet, and queues them.
    fn discover(&mut self, listing: Vec<(OsString, u64)>) {
        let continuous = self.monitor.is_some();
        for (name, len) in listing {
            if continuous && !self.considered.insert(name.clone()) {
                continue;
            }
            let len = self.claimed_len.get(&name).copied().unwrap_or(len);
            let bytes = name.as_bytes();
            let size = self.range_size;
            let mine = |start: u64| owner(bytes, start, size, self.parallelism) == self.subtask;
            if len == 0 {
                // Claimed too, so that a restore does not read it if it
                // grows.
                if mine(0) && !self.claimed.contains(&(bytes.to_vec(), 0)) {
                    self.own_claims.push((bytes.to_vec(), 0, 0));
                }
                continue;
            }
            let mut new = Vec::new();
            for (start, end) in ranges_of(bytes, len, size) {
                if !mine(start) || self.claimed.contains(&(bytes.to_vec(), start)) {
                    continue;
                }
                // Claimed in both modes: a bounded run's checkpoint,
                // restored watching, reads only the files it did not list.
                self.own_claims.push((bytes.to_vec(), start, len));
                new.push(Range {
                    name: name.clone(),
                    start,
                    end,
                    next: start,
                    lines: 0,
                });
            }
            for range in new {
                self.push_range(range);
            }
        }
    }

    /// Queues `range` (and asks the reader for it, if it runs).
    fn push_range(&mut self, range: Range) {
        if let Some(reader) = &self.reader {
            let id = self.first_id + self.ranges.len() as u64;
            let _ = reader.commands.send(read_command(&self.dir, id, &range));
        }
        self.ranges.push_back(range);
    }

    fn start_reader(&mut self) -> Result<()> {
        let reader = Reader::start(
            self.dir.clone(),
            self.only.clone(),
            self.read_buffer,
            self.max_line,
            self.wakeup.clone(),
        )
        .map_err(|e| ConnectorError::Reader {
            dir: self.dir.clone(),
            what: format!("could not start: {e}"),
        })?;
        for (i, range) in self.ranges.iter().enumerate() {
            let id = self.first_id + i as u64;
            let _ = reader.commands.send(read_command(&self.dir, id, range));
        }
        self.reader = Some(reader);
        Ok(())
    }

    /// Claims the ranges of the listing made at creation (unless restored)
    /// and starts the I/O thread, unless there is nothing to read ever
    /// (bounded, no range).
    fn start(&mut self) -> Result<()> {
        self.claim_listing();
        if self.ranges.is_empty() && self.monitor.is_none() {
            return Ok(());
        }
        self.start_reader()
    }

    /// How long to wait for the I/O thread: until it rings the worker, or
    /// (driven outside a job) a moment.
    fn wait_for_reader(&self, now: Instant) -> Option<Instant> {
        match self.wakeup {
            Some(_) => None,
            None => Some(now + WAIT_FOR_READER),
        }
    }

    /// Keeps `e` for [`Source::check`] and stops: the task asks when the
    /// source goes idle, and fails.
    fn fail(&mut self, e: ConnectorError) -> SourcePoll {
        self.retryable = e.retryable();
        self.error = Some(e);
        SourcePoll::Idle { until: None }
    }

    fn path_of_first(&self) -> PathBuf {
        self.ranges
            .front()
            .map_or_else(|| self.dir.clone(), |r| self.dir.join(&r.name))
    }

    /// Where the next line of the first range is.
    fn next_line_at(&self, offset: u64) -> LineAt {
        let r = self.ranges.front().expect("a range is being read");
        LineAt {
            line: r.lines + 1,
            range_start: r.start,
            offset,
        }
    }

    /// The first range is read: on to the next.
    fn finish_range(&mut self) {
        let range = self.ranges.pop_front().expect("a range is being read");
        self.first_id += 1;
        if self.range_ignored > 0 {
            let (at, reason) = self.first_ignored.take().expect("kept with the count");
            tracing::warn!(
                target: crate::core::log::SOURCE,
                file = %self.dir.join(&range.name).display(),
                skipped = self.range_ignored,
                "the file source skipped {} line{} of {} (bytes {}..{}) that did not parse; the first, {at}: {reason}",
                self.range_ignored,
                if self.range_ignored == 1 { "" } else { "s" },
                self.dir.join(&range.name).display(),
                range.start,
                range.end,
            );
        }
        self.range_ignored = 0;
    }

    /// Takes a chunk from the reader as the first range's.
    fn take_chunk(&mut self, chunk: Chunk) -> Result<()> {
        let Some(range) = self.ranges.front() else {
            return Err(ConnectorError::Reader {
                dir: self.dir.clone(),
                what: "sent lines of no range".into(),
            });
        };
        if chunk.id != self.first_id {
            return Err(ConnectorError::Reader {
                dir: self.dir.clone(),
                what: format!(
                    "sent lines of range {} while range {} is read",
                    chunk.id, self.first_id
                ),
            });
        }
        // A range resumed after a line must resume just after it.
        if range.next != range.start && chunk.base != range.next {
            return Err(ConnectorError::NotAtLineStart {
                path: self.dir.join(&range.name),
                offset: range.next,
            });
        }
        self.chunk = Some((chunk, 0));
        Ok(())
    }

    /// The error of a range that failed.
    fn read_failure(&self, failure: ReadFailure) -> ConnectorError {
        let path = self.path_of_first();
        match failure {
            ReadFailure::Vanished => ConnectorError::InputVanished { path },
            ReadFailure::Open(e) => ConnectorError::io("open input file", path, e),
            ReadFailure::Read(offset, source) => ConnectorError::IoAt {
                op: "read input file",
                path,
                offset,
                source,
            },
            ReadFailure::LineTooLong => {
                let next = self.ranges.front().map_or(0, |r| r.next);
                ConnectorError::LineTooLong {
                    path,
                    at: self.next_line_at(next),
                    limit: self.max_line,
                }
            }
        }
    }

    /// Writes the ranges (and claims) into their states.
    fn store(&mut self) {
        self.ranges_state.clear();
        for r in &self.ranges {
            self.ranges_state.add(r.store());
        }
        self.claims_state.clear();
        for c in &self.own_claims {
            self.claims_state.add(c.clone());
        }
        self.old_splits.clear();
    }

    /// A restore filled the states: takes the restored ranges as this
    /// subtask's, and (continuous mode) the claims, keeping those this
    /// subtask owns now.
    fn restore_states(&mut self) {
        self.ranges = self.ranges_state.iter().map(Range::load).collect();
        // A checkpoint from before byte ranges: each unfinished file from
        // its offset to its end, as a range starting there.
        for (name, offset) in self.old_splits.iter() {
            self.ranges.push_back(Range {
                name: std::ffi::OsStr::from_bytes(&name).to_owned(),
                start: offset,
                end: u64::MAX,
                next: offset,
                lines: 0,
            });
        }
        self.first_id = 0;
        self.chunk = None;
        self.considered.clear();
        self.own_claims.clear();
        self.claimed.clear();
        self.claimed_len.clear();
        // Bounded: the restored ranges are all that is left. Continuous:
        // list again at once, and claim what nobody claimed. Both keep
        // the claims (those this subtask owns now), for a later restore
        // in continuous mode.
        self.listing = None;
        if self.monitor.is_some() {
            self.list_due = Some(Instant::now());
        }
        for (name, start, len) in self.claims_state.iter() {
            let mine = owner(&name, start, self.range_size, self.parallelism) == self.subtask;
            let os = std::ffi::OsStr::from_bytes(&name).to_owned();
            let at = self.claimed_len.entry(os).or_insert(len);
            *at = (*at).max(len);
            if self.claimed.insert((name.clone(), start)) && mine {
                self.own_claims.push((name, start, len));
            }
        }
        self.store();
    }
}

fn read_command(dir: &Path, id: u64, range: &Range) -> Command {
    Command::Read {
        id,
        path: dir.join(&range.name),
        end: range.end,
        next: range.next,
    }
}

impl<D: LineDecoder> FileSource<D> {
    /// Emits the lines of the current chunk, up to `budget` records in
    /// all, while `out` takes them.
    fn emit<C: Collector<D::Out>>(
        &mut self,
        out: &mut C,
        budget: usize,
        n: &mut usize,
    ) -> Result<()> {
        let Some((chunk, pos)) = &mut self.chunk else {
            return Ok(());
        };
        let range = self
            .ranges
            .front_mut()
            .expect("a chunk belongs to the first range");
        let data = &chunk.data[..chunk.len];
        let base = chunk.base;
        while *n < budget && *pos < data.len() && out.is_available() {
            let (end, next) = match memchr::memchr(b'\n', &data[*pos..]) {
                Some(i) => (*pos + i, *pos + i + 1),
                None => (data.len(), data.len()),
            };
            let at = || LineAt {
                line: range.lines + 1,
                range_start: range.start,
                offset: base + *pos as u64,
            };
            let path = || self.dir.join(&range.name);
            if let Some(bad) = chunk.utf8_error {
                if bad < next {
                    return Err(ConnectorError::InvalidUtf8 {
                        path: path(),
                        at: at(),
                        offset: base + bad as u64,
                    });
                }
            }
            if end - *pos > self.max_line {
                return Err(ConnectorError::LineTooLong {
                    path: path(),
                    at: at(),
                    limit: self.max_line,
                });
            }
            // SAFETY: the reader found `data[..utf8_error]` (all of
            // `data` if none) to be UTF-8, and this line with its newline
            // lies before `utf8_error` (checked above); it starts and ends
            // at a newline or at the data's ends, which are character
            // boundaries.
            let mut line = unsafe { std::str::from_utf8_unchecked(&data[*pos..end]) };
            let first = base + *pos as u64 == 0;
            if first {
                // A UTF-8 byte order mark (files saved by spreadsheet
                // programs) marks the encoding, it is not text of the first
                // line: a header line with it would not be one.
                line = line.strip_prefix('\u{feff}').unwrap_or(line);
            }
            let decoded = if first {
                self.decoder.decode_first(line)
            } else {
                self.decoder.decode(line)
            };
            match decoded {
                Decoded::Record(r) => {
                    out.collect(r);
                    *n += 1;
                }
                Decoded::Skip => {}
                Decoded::Ignored(reason) => {
                    self.ignored += 1;
                    self.range_ignored += 1;
                    if self.first_ignored.is_none() {
                        self.first_ignored = Some((at(), reason));
                    }
                }
                Decoded::Error { column, message } => {
                    return Err(ConnectorError::BadLine {
                        path: path(),
                        at: at(),
                        column,
                        message,
                    });
                }
            }
            *pos = next;
            range.lines += 1;
            range.next = base + next as u64;
        }
        Ok(())
    }
}

impl<D: LineDecoder> Source for FileSource<D> {
    type Out = D::Out;

    fn poll_next<C: Collector<D::Out>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        if self.error.is_some() {
            return SourcePoll::Idle { until: None };
        }
        if self.reader.is_none() {
            if let Err(e) = self.start() {
                return self.fail(e);
            }
            if self.reader.is_none() {
                return SourcePoll::Finished;
            }
        }
        let mut n = 0;
        loop {
            if self.chunk.is_some() {
                if let Err(e) = self.emit(out, budget, &mut n) {
                    return self.fail(e);
                }
                let (chunk, pos) = self.chunk.as_ref().expect("checked above");
                if *pos < chunk.len {
                    // Out of budget, or backpressure.
                    return SourcePoll::Emitted(n);
                }
                let (chunk, _) = self.chunk.take().expect("checked above");
                if chunk.last {
                    self.finish_range();
                }
                if let Some(reader) = &self.reader {
                    let _ = reader.spare.send(chunk.data);
                }
                if n >= budget {
                    return SourcePoll::Emitted(n);
                }
            }
            let reader = self.reader.as_ref().expect("started above");
            match reader.events.try_recv() {
                Ok(Event::Chunk(chunk)) => {
                    if let Err(e) = self.take_chunk(chunk) {
                        return self.fail(e);
                    }
                }
                Ok(Event::Failed { id, failure }) => {
                    let e = if id == self.first_id {
                        self.read_failure(failure)
                    } else {
                        ConnectorError::Reader {
                            dir: self.dir.clone(),
                            what: format!(
                                "failed range {id} while range {} is read",
                                self.first_id
                            ),
                        }
                    };
                    return self.fail(e);
                }
                Ok(Event::Listed(listing)) => {
                    self.listing_pending = false;
                    match listing {
                        Ok(listing) => self.discover(listing),
                        Err(e) => {
                            let e = ConnectorError::io("list input directory", &self.dir, e);
                            return self.fail(e);
                        }
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    let e = ConnectorError::Reader {
                        dir: self.dir.clone(),
                        what: "ended".into(),
                    };
                    return self.fail(e);
                }
            }
        }
        // Nothing more to emit now.
        let Some(interval) = self.monitor else {
            if self.ranges.is_empty() {
                return if n == 0 {
                    SourcePoll::Finished
                } else {
                    SourcePoll::Emitted(n)
                };
            }
            return if n == 0 {
                SourcePoll::Idle {
                    until: self.wait_for_reader(Instant::now()),
                }
            } else {
                SourcePoll::Emitted(n)
            };
        };
        if n > 0 {
            return SourcePoll::Emitted(n);
        }
        let now = Instant::now();
        let due = *self.list_due.get_or_insert(now);
        if !self.listing_pending && now >= due {
            if let Some(reader) = &self.reader {
                let _ = reader.commands.send(Command::List);
            }
            self.listing_pending = true;
            self.list_due = Some(now + interval);
        }
        let due = self.list_due.unwrap_or(now + interval);
        let until = if self.listing_pending || !self.ranges.is_empty() {
            // The reader rings when it has something; the next listing
            // is due anyway.
            self.wait_for_reader(now).map_or(due, |w| w.min(due))
        } else {
            due
        };
        SourcePoll::Idle { until: Some(until) }
    }

    /// The position is the ranges: no bytes.
    fn snapshot_position(&mut self) -> Vec<u8> {
        Vec::new()
    }

    /// An empty position (the ranges hold it) changes nothing; one of
    /// bytes is of the format before ranges, which does not restore.
    fn restore_position(&mut self, position: &[u8]) -> std::result::Result<(), String> {
        if position.is_empty() {
            return Ok(());
        }
        self.retryable = false;
        Err(ConnectorError::OldPosition {
            dir: self.dir.clone(),
            subtask: self.subtask,
            len: position.len(),
        }
        .to_string())
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        self.claim_listing_if_fresh();
        self.store();
        states.list(&mut self.ranges_state);
        states.union_list(&mut self.claims_state);
        states.list(&mut self.old_splits);
    }

    fn initialize_restored_state(&mut self) -> std::result::Result<(), String> {
        // Restored ranges come with claims (every range is claimed before
        // it is read) unless a bounded source of older weir took the
        // checkpoint: watching from it would read its finished files again.
        let unclaimed = self.claims_state.iter().next().is_none()
            && (self.ranges_state.iter().next().is_some()
                || self.old_splits.iter().next().is_some());
        if self.monitor.is_some() && unclaimed {
            self.retryable = false;
            return Err(ConnectorError::BoundedWithoutClaims {
                dir: self.dir.clone(),
                subtask: self.subtask,
            }
            .to_string());
        }
        self.restore_states();
        Ok(())
    }

    /// Keeps the wakeup for the I/O thread, and starts it: read-ahead
    /// begins before the first poll.
    fn open(&mut self, wakeup: SourceWakeup) {
        self.wakeup = Some(wakeup);
        if self.reader.is_none() && self.error.is_none() {
            if let Err(e) = self.start() {
                let _ = self.fail(e);
            }
        }
    }

    fn check(&mut self) -> std::result::Result<(), String> {
        match &self.error {
            Some(e) => Err(e.to_string()),
            None => Ok(()),
        }
    }

    /// What [`ConnectorError::retryable`] said of the last error: an input
    /// file that could not be read may be readable later; one that
    /// changed, vanished or holds a bad line stays so.
    fn is_retryable(&self, _error: &str) -> bool {
        self.retryable
    }
}

impl<D> FileSource<D> {
    /// Before a snapshot of a source never polled, claims its ranges, so
    /// that the snapshot holds them. (Not on a restore: the states are
    /// overwritten then, and `initialize_restored_state` follows.)
    fn claim_listing_if_fresh(&mut self) {
        if self.reader.is_some() {
            return;
        }
        self.claim_listing();
    }
}

#[cfg(test)]
mod tests;
