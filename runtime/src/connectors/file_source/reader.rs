//! The file source's read-ahead I/O thread: every blocking file system
//! call of a running file source (open, `pread`, listing the directory)
//! happens here, never on the worker's core.
//!
//! The source sends [`Command`]s: read a range from an offset, or list the
//! directory. The thread reads its ranges in order, in chunks of the read
//! buffer's size, and hands each chunk over through a bounded queue
//! ([`QUEUE`] chunks): a chunk holds whole lines only (it is cut after its
//! last newline; the partial line left is copied to the front of the next
//! buffer), is checked for UTF-8 here (`Chunk::utf8_error`), and the
//! range's last chunk ends with the last line the range owns (see
//! [`super::ranges`]). The source gives emptied buffers back, so that a
//! steady read allocates nothing. Between two chunks the thread answers a
//! listing at once, so that discovery does not wait for a big range.
//!
//! After each event it hands over, the thread rings the worker's doorbell
//! (the source's [`SourceWakeup`], when it runs in a job), so that a source
//! that went idle waiting for it is polled again at once. When the queue
//! is full the thread blocks on it (read-ahead is bounded); when the
//! source is dropped both channels close and the thread ends.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};

use crate::core::wakeup::SourceWakeup;

use super::ranges::Compression;

/// Chunks read ahead of the source, at most.
pub const QUEUE: usize = 4;

/// What the source asks of the thread.
pub enum Command {
    /// Read the lines of a range from `next` (see [`super::ranges`]).
    Read {
        /// The range's id, repeated in its chunks.
        id: u64,
        /// The file.
        path: PathBuf,
        /// Where the range ends.
        end: u64,
        /// Where reading starts: the range's start or a line start in it.
        next: u64,
    },
    /// List the directory.
    List,
}

/// Lines of a range.
pub struct Chunk {
    /// The range.
    pub id: u64,
    /// The file offset of `data[0]`.
    pub base: u64,
    /// The buffer: its first `len` bytes are lines.
    pub data: Vec<u8>,
    /// Bytes of `data` holding lines.
    pub len: usize,
    /// The index of the first byte that is not UTF-8, if any: the range's
    /// reading stopped there.
    pub utf8_error: Option<usize>,
    /// The range's last chunk.
    pub last: bool,
}

/// Why a range could not be read.
pub enum ReadFailure {
    /// Its file is gone.
    Vanished,
    /// Opening it failed.
    Open(io::Error),
    /// Reading at this offset failed.
    Read(u64, io::Error),
    /// After the lines handed over, a line longer than the limit.
    LineTooLong,
}

/// What the thread hands the source.
pub enum Event {
    /// Lines of a range.
    Chunk(Chunk),
    /// A range failed (after its chunks so far).
    Failed {
        /// The range.
        id: u64,
        /// Why.
        failure: ReadFailure,
    },
    /// The directory's input files with their lengths, or the error.
    Listed(io::Result<Vec<(OsString, u64)>>),
}

/// The source's side of a running thread.
pub struct Reader {
    /// Commands to the thread.
    pub commands: Sender<Command>,
    /// Chunks and listings from it.
    pub events: Receiver<Event>,
    /// Emptied buffers back to it.
    pub spare: Sender<Vec<u8>>,
}

impl Reader {
    /// Starts the thread of the source of `dir` (of its file `only`, if
    /// given), named after what it reads, reading in chunks of `buffer`
    /// bytes, refusing lines over `max_line` and ringing `wakeup` after
    /// each event.
    pub fn start(
        dir: PathBuf,
        only: Option<OsString>,
        buffer: usize,
        max_line: usize,
        wakeup: Option<SourceWakeup>,
    ) -> io::Result<Self> {
        let (commands, command_rx) = mpsc::channel();
        let (event_tx, events) = mpsc::sync_channel(QUEUE);
        let (spare, spare_rx) = mpsc::channel();
        let read = only.as_deref().or_else(|| dir.file_name());
        let name = format!(
            "weir-file-io:{}",
            read.map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        );
        let mut thread = Thread {
            dir,
            only,
            buffer: buffer.max(1),
            max_line,
            commands: command_rx,
            events: event_tx,
            spare: spare_rx,
            queue: VecDeque::new(),
            open: None,
            wakeup,
        };
        std::thread::Builder::new()
            .name(name)
            .spawn(move || thread.run())?;
        Ok(Self {
            commands,
            events,
            spare,
        })
    }
}

/// The source went away: stop.
struct Closed;

struct Thread {
    dir: PathBuf,
    /// The one file of `dir` the source reads, if it reads one.
    only: Option<OsString>,
    buffer: usize,
    max_line: usize,
    commands: Receiver<Command>,
    events: SyncSender<Event>,
    spare: Receiver<Vec<u8>>,
    /// Ranges to read, in order: `(id, path, end, next)`.
    queue: VecDeque<(u64, PathBuf, u64, u64)>,
    /// The file last opened, kept for its next range.
    open: Option<(PathBuf, Input)>,
    /// Rings the worker.
    wakeup: Option<SourceWakeup>,
}

impl Thread {
    fn run(&mut self) {
        loop {
            if self.queue.is_empty() {
                let Ok(command) = self.commands.recv() else {
                    return;
                };
                if self.take(command).is_err() {
                    return;
                }
            }
            if self.drain_commands().is_err() {
                return;
            }
            if let Some((id, path, end, next)) = self.queue.pop_front() {
                if self.read_range(id, &path, end, next).is_err() {
                    return;
                }
            }
        }
    }

    fn send(&self, event: Event) -> Result<(), Closed> {
        self.events.send(event).map_err(|_| Closed)?;
        if let Some(wakeup) = &self.wakeup {
            wakeup.wake();
        }
        Ok(())
    }

    fn take(&mut self, command: Command) -> Result<(), Closed> {
        match command {
            Command::Read {
                id,
                path,
                end,
                next,
            } => {
                self.queue.push_back((id, path, end, next));
                Ok(())
            }
            Command::List => {
                let listing = list_inputs(&self.dir, self.only.as_deref());
                self.send(Event::Listed(listing))
            }
        }
    }

    /// Takes the commands waiting, without blocking: a listing is answered
    /// at once.
    fn drain_commands(&mut self) -> Result<(), Closed> {
        loop {
            match self.commands.try_recv() {
                Ok(command) => self.take(command)?,
                Err(TryRecvError::Empty) => return Ok(()),
                Err(TryRecvError::Disconnected) => return Err(Closed),
            }
        }
    }

    /// A buffer of at least `min` bytes: a spare one, or a new one.
    fn buffer(&self, min: usize) -> Vec<u8> {
        let mut buf = self.spare.try_recv().unwrap_or_default();
        let want = self.buffer.max(min);
        if buf.len() < want {
            buf.resize(want, 0);
        }
        buf
    }

    fn file(&mut self, path: &Path) -> Result<&mut Input, ReadFailure> {
        if self.open.as_ref().is_none_or(|(p, _)| p != path) {
            self.open = None;
            let input = Input::open(path)?;
            self.open = Some((path.to_owned(), input));
        }
        Ok(&mut self.open.as_mut().expect("opened above").1)
    }

    fn read_range(&mut self, id: u64, path: &Path, end: u64, next: u64) -> Result<(), Closed> {
        match self.read_lines(id, path, end, next) {
            Ok(r) => r,
            Err(failure) => {
                self.open = None;
                self.send(Event::Failed { id, failure })
            }
        }
    }

    /// Sends the chunks of the lines starting in `[next, end)` (`next` is
    /// the range's start or a line start).
    fn read_lines(
        &mut self,
        id: u64,
        path: &Path,
        end: u64,
        next: u64,
    ) -> Result<Result<(), Closed>, ReadFailure> {
        let max_line = self.max_line;
        let mut buf = self.buffer(0);
        // The file offset of buf[0]; from the byte before `next` when
        // aligning: a range owns its first line only if a newline (or the
        // file's start) precedes it.
        let mut base = next.saturating_sub(1);
        let mut aligning = next > 0;
        let mut filled = 0;
        loop {
            let file = self.file(path)?;
            if filled == buf.len() {
                buf.resize(buf.len() * 2, 0);
            }
            let n = file.read_at(&mut buf[filled..], base + filled as u64)?;
            filled += n;
            let eof = n == 0;
            if aligning {
                match memchr::memchr(b'\n', &buf[..filled]) {
                    Some(i) => {
                        buf.copy_within(i + 1..filled, 0);
                        base += i as u64 + 1;
                        filled -= i + 1;
                        aligning = false;
                    }
                    None if eof => return Ok(self.send_last(id, base, buf, 0)),
                    None => {
                        base += filled as u64;
                        filled = 0;
                        continue;
                    }
                }
                if base >= end {
                    return Ok(self.send_last(id, base, buf, 0));
                }
            }
            if filled == 0 && !eof {
                continue;
            }
            // The last line the range owns ends at the first newline at or
            // after `end - 1`.
            if base + filled as u64 >= end {
                let from = (end - 1 - base) as usize;
                if let Some(i) = memchr::memchr(b'\n', &buf[from..filled]) {
                    return Ok(self.send_last(id, base, buf, from + i + 1));
                }
            }
            if eof {
                return Ok(self.send_last(id, base, buf, filled));
            }
            match memchr::memrchr(b'\n', &buf[..filled]) {
                Some(i) => {
                    let cut = i + 1;
                    let carry = filled - cut;
                    let mut next_buf = self.buffer(carry + 1);
                    next_buf[..carry].copy_from_slice(&buf[cut..filled]);
                    let chunk = self.chunk(id, base, buf, cut, false);
                    let stop = chunk.utf8_error.is_some();
                    if let Err(closed) = self.send(Event::Chunk(chunk)) {
                        return Ok(Err(closed));
                    }
                    if stop {
                        return Ok(Ok(()));
                    }
                    if let Err(closed) = self.drain_commands() {
                        return Ok(Err(closed));
                    }
                    buf = next_buf;
                    base += cut as u64;
                    filled = carry;
                }
                None if filled > max_line => {
                    // Hand over nothing of it: the source names the line.
                    return Err(ReadFailure::LineTooLong);
                }
                None => {}
            }
        }
    }

    fn chunk(&self, id: u64, base: u64, data: Vec<u8>, len: usize, last: bool) -> Chunk {
        let utf8_error = std::str::from_utf8(&data[..len])
            .err()
            .map(|e| e.valid_up_to());
        Chunk {
            id,
            base,
            data,
            len,
            utf8_error,
            last,
        }
    }

    fn send_last(&self, id: u64, base: u64, buf: Vec<u8>, len: usize) -> Result<(), Closed> {
        let chunk = self.chunk(id, base, buf, len, true);
        self.send(Event::Chunk(chunk))
    }
}

/// An open input file: plain, read where asked, or compressed
/// ([`Compression`]), decompressed as a stream whose offsets are those of
/// the text.
enum Input {
    Plain(File),
    Compressed(Decompressed),
}

/// A compressed file's text, read forwards from where the last read
/// ended (a read further back starts again from the file's start).
struct Decompressed {
    path: PathBuf,
    compression: Compression,
    text: Box<dyn Read + Send>,
    /// The text offset `text` reads next.
    at: u64,
}

/// Bytes of compressed file read at a time.
const COMPRESSED_READ: usize = 256 << 10;

impl Input {
    fn open(path: &Path) -> Result<Self, ReadFailure> {
        let file = File::open(path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ReadFailure::Vanished,
            _ => ReadFailure::Open(e),
        })?;
        let name = path.file_name().map_or(&[][..], OsStr::as_bytes);
        Ok(match Compression::of(name) {
            Compression::None => Input::Plain(file),
            compression => Input::Compressed(Decompressed {
                path: path.to_owned(),
                compression,
                text: decompressor(compression, file),
                at: 0,
            }),
        })
    }

    /// Reads into `buf` at text offset `offset`; 0 at the end.
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> Result<usize, ReadFailure> {
        loop {
            let read = match self {
                Input::Plain(file) => file.read_at(buf, offset),
                Input::Compressed(d) => d.read_at(buf, offset),
            };
            match read {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ReadFailure::Read(offset, e)),
            }
        }
    }
}

/// A stream of `file`'s decompressed text.
fn decompressor(compression: Compression, file: File) -> Box<dyn Read + Send> {
    let file = io::BufReader::with_capacity(COMPRESSED_READ, file);
    match compression {
        // Concatenated gzip members read as one text, as `gzip -d` does.
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(file)),
        Compression::Deflate => Box::new(flate2::read::ZlibDecoder::new(file)),
        Compression::None => Box::new(file),
    }
}

impl Decompressed {
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        if offset < self.at {
            // Back (a range resumed before where this one was left):
            // decompress again from the start.
            let file = File::open(&self.path)?;
            self.text = decompressor(self.compression, file);
            self.at = 0;
        }
        // Forwards to `offset` (a range restored from a checkpoint),
        // discarding the text before it.
        let mut skip = [0u8; 8192];
        while self.at < offset {
            let want = (offset - self.at).min(skip.len() as u64) as usize;
            let n = self.text.read(&mut skip[..want])?;
            if n == 0 {
                return Ok(0);
            }
            self.at += n as u64;
        }
        let n = self.text.read(buf)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// The regular files under `dir`, in its subdirectories too, with their
/// lengths, named by their paths relative to `dir` and sorted by name
/// (bytes), as Flink's file source enumerates a directory (recursively,
/// its default filter skipping every file or directory whose name starts
/// with `.` or `_`: hidden files, `_SUCCESS` markers, `_temporary`
/// directories). Symbolic links to regular files count; a symbolic link to
/// a directory is not followed (no cycles). With `only`, the file of that
/// name in `dir` alone, hidden or not (none once it is gone: a file
/// deleted is not an input).
pub fn list_inputs(dir: &Path, only: Option<&OsStr>) -> io::Result<Vec<(OsString, u64)>> {
    if let Some(name) = only {
        return match fs::metadata(dir.join(name)) {
            Ok(meta) if meta.is_file() => Ok(vec![(name.to_owned(), meta.len())]),
            Ok(_) => Ok(Vec::new()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        };
    }
    let mut names = Vec::new();
    list_under(dir, Path::new(""), &mut names)?;
    names.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Ok(names)
}

/// Adds the input files of `dir`'s subdirectory `rel` (`""`: `dir`
/// itself) to `names`, and those of its subdirectories.
fn list_under(dir: &Path, rel: &Path, names: &mut Vec<(OsString, u64)>) -> io::Result<()> {
    let entries = match fs::read_dir(dir.join(rel)) {
        Ok(entries) => entries,
        // A subdirectory removed since its parent was listed holds nothing.
        Err(e) if e.kind() == io::ErrorKind::NotFound && !rel.as_os_str().is_empty() => {
            return Ok(())
        }
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        if name.as_bytes().starts_with(b".") || name.as_bytes().starts_with(b"_") {
            continue;
        }
        // A file deleted between the listing and this look is not an
        // input.
        let meta = match fs::metadata(entry.path()) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let path = rel.join(&name);
        if meta.is_file() {
            names.push((path.into_os_string(), meta.len()));
        } else if meta.is_dir() && !entry.file_type()?.is_symlink() {
            list_under(dir, &path, names)?;
        }
    }
    Ok(())
}
