//! [`SegmentFile`]: appends snapshot blocks to one segment file through
//! glommio's io_uring, with `O_DIRECT` where the file system allows it,
//! keeping several writes in flight while the caller serializes the next
//! block.
//!
//! The bytes are those of `weir_state::snapshot` (every block is encoded by
//! [`seal_block`]), so a segment written here is identical, byte for byte,
//! to one written by [`SegmentWriter`](weir_state::snapshot::SegmentWriter)
//! with the same blocks, and is read with
//! [`SegmentReader`](weir_state::snapshot::SegmentReader).
//!
//! # How blocks reach the file
//!
//! Blocks are encoded in place into I/O buffers: aligned [`DmaBuffer`]s
//! for `O_DIRECT`, plain vectors for buffered I/O. Blocks smaller than
//! [`BATCH_LEN`] are packed into a shared buffer of that size, written
//! when the next block does not fit (or on [`SegmentFile::sync`]); larger
//! blocks get a buffer of their own. Each buffer is written by a task of
//! its own (write-behind): up to [`MAX_IN_FLIGHT_WRITES`] writes and
//! [`MAX_IN_FLIGHT_BYTES`] bytes are in flight before an append waits for
//! the oldest. io_uring submits the writes whenever the appending task
//! waits (for the oldest write, or for anything else), so the device works
//! on earlier blocks while later ones are serialized. The DMA buffers of
//! finished writes are kept (up to the in-flight limits) and reused for
//! blocks of the same size: fresh memory costs a page fault per page.
//! Buffers from the executor's `io_memory` pool are registered with
//! io_uring and faster still, so a worker that checkpoints much state
//! wants a pool that holds the write-behind window.
//!
//! # `O_DIRECT` and its fallback
//!
//! [`IoMode::Auto`] tries `O_DIRECT` and falls back to buffered io_uring
//! writes when the file system or device refuses it: `EINVAL` or
//! `EOPNOTSUPP` on open, a file system glommio opens without `O_DIRECT`
//! (tmpfs), a device needing more than 4096-byte alignment, or `EINVAL` /
//! `EOPNOTSUPP` from the first write (which is therefore awaited before
//! any other write is issued; its bytes are then written again, buffered).
//! [`SegmentFile::fallback`] says why. [`IoMode::Direct`] fails instead
//! (and may leave the new, empty file behind when the open was refused).

use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use glommio::io::{BufferedFile, DmaBuffer, DmaFile, OpenOptions};
use glommio::{GlommioError, Task};
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use weir_state::snapshot::{
    padded_block_len, seal_block, BlockKind, Extent, Result, SnapshotError, BLOCK_ALIGN,
    BLOCK_HEADER_LEN, MAX_PAYLOAD_LEN, MAX_STATE_NAME_LEN,
};
use weir_state::KeyGroupRange;

/// Size of the buffers small blocks are packed into; blocks of this size
/// or more are written from a buffer of their own.
pub const BATCH_LEN: usize = 1 << 20;

/// Largest block (padding included) a [`SegmentFile`] writes: a block is
/// one write, and Linux writes at most just under 2 GiB per call. Larger
/// state must be split into several blocks.
pub const MAX_BLOCK_LEN: u64 = 1 << 30;

/// Most writes in flight at once.
pub const MAX_IN_FLIGHT_WRITES: usize = 8;

/// Most bytes in flight at once (a single larger block is still written).
pub const MAX_IN_FLIGHT_BYTES: usize = 64 << 20;

/// How a [`SegmentFile`] writes to its file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IoMode {
    /// `O_DIRECT` through glommio's [`DmaFile`]; fails if the file system
    /// or device refuses it.
    Direct,
    /// Buffered (page cache) io_uring writes through glommio's
    /// [`BufferedFile`].
    Buffered,
    /// `O_DIRECT` if the file system and device take it, else buffered.
    #[default]
    Auto,
}

/// Appends blocks to one new segment file, inside a glommio executor.
///
/// The file is created new (an existing file is never overwritten).
/// Appends return the block's [`Extent`] at once; the bytes reach the file
/// in the background and are durable only once [`sync`](Self::sync) or
/// [`close`](Self::close) returned. After a failed write, or an append or
/// sync whose future was dropped before it finished, every later call
/// fails, since the file's contents are then unknown. Dropping a
/// `SegmentFile` lets its writes in flight finish in the background, but
/// does not sync.
#[derive(Debug)]
pub struct SegmentFile {
    path: PathBuf,
    name: String,
    /// The mode asked for.
    mode: IoMode,
    backend: Backend,
    /// Why an [`IoMode::Auto`] file writes buffered.
    fallback: Option<String>,
    /// Whether the next write is the first one through `O_DIRECT`, which
    /// is awaited alone (see the module doc).
    probing: bool,
    /// Bytes appended so far: the offset of the next block.
    len: u64,
    /// The buffer small blocks are being packed into.
    batch: Option<Batch>,
    /// Writes in flight, oldest first.
    in_flight: VecDeque<InFlight>,
    /// Bytes of the writes in flight.
    in_flight_bytes: usize,
    /// DMA buffers whose writes completed, for reuse: fresh memory costs a
    /// page fault per page, which measurably slows writing.
    spare: VecDeque<DmaBuffer>,
    /// Set when a write failed.
    failed: bool,
    /// Set while an append or sync runs: still set at the next call if
    /// that one was dropped before it finished, leaving unknown state.
    in_progress: bool,
    /// Test hook: the first `O_DIRECT` write fails with this errno instead
    /// of being issued, as a file system refusing `O_DIRECT` writes would.
    #[cfg(test)]
    refuse_first_direct_write: Option<i32>,
}

/// The open file.
#[derive(Debug)]
enum Backend {
    Direct(Rc<DmaFile>),
    Buffered(Rc<BufferedFile>),
}

/// An I/O buffer of whole blocks.
#[derive(Debug)]
enum IoBuf {
    /// Aligned, for `O_DIRECT`; its contents start unspecified.
    Dma(DmaBuffer),
    /// For buffered writes; grows zero-filled.
    Heap(Vec<u8>),
}

impl IoBuf {
    fn len(&self) -> usize {
        match self {
            Self::Dma(b) => b.len(),
            Self::Heap(v) => v.len(),
        }
    }

    /// The `n` bytes at `at`, growing a vector to hold them.
    fn block_mut(&mut self, at: usize, n: usize) -> &mut [u8] {
        match self {
            Self::Dma(b) => &mut b.as_bytes_mut()[at..at + n],
            Self::Heap(v) => {
                v.resize(at + n, 0);
                &mut v[at..]
            }
        }
    }

    /// The buffer as a DMA buffer for `file`, copied if it is a vector.
    fn into_dma(self, file: &DmaFile) -> DmaBuffer {
        match self {
            Self::Dma(b) => b,
            Self::Heap(v) => {
                let mut b = file.alloc_dma_buffer(v.len());
                b.as_bytes_mut().copy_from_slice(&v);
                b
            }
        }
    }

    /// The buffer as a vector, copied if it is a DMA buffer (which only
    /// happens after a fallback from `O_DIRECT`).
    fn into_vec(self) -> Vec<u8> {
        match self {
            Self::Dma(b) => b.as_bytes().to_vec(),
            Self::Heap(v) => v,
        }
    }
}

/// Small blocks packed together, written from `start` once full.
#[derive(Debug)]
struct Batch {
    buf: IoBuf,
    start: u64,
    filled: usize,
}

/// A write in flight.
#[derive(Debug)]
struct InFlight {
    task: Task<Written>,
    len: usize,
}

/// A finished write, and its buffer if it can be reused.
#[derive(Debug)]
struct Written {
    result: io::Result<()>,
    buf: Option<DmaBuffer>,
}

/// Why `O_DIRECT` could not be used, or another failure.
enum DirectOpenError {
    Refused(String),
    Failed(io::Error),
}

impl SegmentFile {
    /// Creates the segment file at `path` (whose file name, which extents
    /// name it by, must be UTF-8), writing it as `mode` says. Must run
    /// inside a glommio executor.
    pub async fn create(path: &Path, mode: IoMode) -> Result<SegmentFile> {
        let op = "create segment";
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| {
                let e = io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "segment path needs a UTF-8 file name",
                );
                io_error(op, path, e)
            })?
            .to_owned();
        let (backend, fallback) = match mode {
            IoMode::Buffered => {
                let file = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .buffered_open(path)
                    .await
                    .map_err(|e| io_error(op, path, into_io(e)))?;
                (Backend::Buffered(Rc::new(file)), None)
            }
            IoMode::Direct => match open_direct(path).await {
                Ok(file) => (Backend::Direct(Rc::new(file)), None),
                Err(DirectOpenError::Failed(e)) => return Err(io_error(op, path, e)),
                Err(DirectOpenError::Refused(why)) => {
                    let e = io::Error::new(io::ErrorKind::Unsupported, why);
                    return Err(io_error(op, path, e));
                }
            },
            IoMode::Auto => match open_direct(path).await {
                Ok(file) => (Backend::Direct(Rc::new(file)), None),
                Err(DirectOpenError::Failed(e)) => return Err(io_error(op, path, e)),
                Err(DirectOpenError::Refused(why)) => {
                    let file = open_buffered_after_refusal(path).await?;
                    (Backend::Buffered(Rc::new(file)), Some(why))
                }
            },
        };
        Ok(SegmentFile {
            path: path.to_owned(),
            name,
            mode,
            probing: matches!(backend, Backend::Direct(_)),
            backend,
            fallback,
            len: 0,
            batch: None,
            in_flight: VecDeque::new(),
            in_flight_bytes: 0,
            spare: VecDeque::new(),
            failed: false,
            in_progress: false,
            #[cfg(test)]
            refuse_first_direct_write: None,
        })
    }

    /// The segment's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The segment's file name, as extents name it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The mode the file was created with.
    pub fn mode(&self) -> IoMode {
        self.mode
    }

    /// Whether the file is written with `O_DIRECT`. For [`IoMode::Auto`]
    /// this can turn false at the first write (see [`fallback`](Self::fallback)).
    pub fn is_direct(&self) -> bool {
        matches!(self.backend, Backend::Direct(_))
    }

    /// Why an [`IoMode::Auto`] file is written buffered, if it fell back.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// Bytes appended so far (the offset of the next block), whether
    /// written yet or not.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no block was appended yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends one block holding a copy of `payload` for `key_groups` of
    /// the state named `state` (at most [`MAX_STATE_NAME_LEN`] bytes, `""`
    /// if none), and returns its extent.
    pub async fn append_block(
        &mut self,
        kind: BlockKind,
        key_groups: KeyGroupRange,
        state: &str,
        payload: &[u8],
    ) -> Result<Extent> {
        self.append(kind, key_groups, state, payload.len(), false, |p| {
            p.copy_from_slice(payload)
        })
        .await
    }

    /// Like [`append_block_with`](Self::append_block_with), for a `fill`
    /// that writes every one of the `payload_len` bytes: they are not
    /// zeroed first, so `fill` gets whatever the reused I/O buffer held.
    pub async fn append_block_filled(
        &mut self,
        kind: BlockKind,
        key_groups: KeyGroupRange,
        state: &str,
        payload_len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<Extent> {
        self.append(kind, key_groups, state, payload_len, false, fill)
            .await
    }

    /// Appends one block of `payload_len` payload bytes that `fill` writes
    /// in place, straight into the I/O buffer (no copy); otherwise like
    /// [`append_block`](Self::append_block). `fill` gets exactly
    /// `payload_len` zeroed bytes.
    pub async fn append_block_with(
        &mut self,
        kind: BlockKind,
        key_groups: KeyGroupRange,
        state: &str,
        payload_len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<Extent> {
        self.append(kind, key_groups, state, payload_len, true, fill)
            .await
    }

    /// Waits for every block appended so far to be written, then makes
    /// them durable (`fdatasync`).
    pub async fn sync(&mut self) -> Result<()> {
        self.begin("sync")?;
        let synced = self.sync_inner().await;
        self.in_progress = false;
        synced
    }

    /// [`sync`](Self::sync), once it is known to be allowed.
    async fn sync_inner(&mut self) -> Result<()> {
        self.submit_batch().await?;
        while !self.in_flight.is_empty() {
            self.wait_oldest().await?;
        }
        let synced = match &self.backend {
            Backend::Direct(f) => f.fdatasync().await,
            Backend::Buffered(f) => f.fdatasync().await,
        };
        synced.map_err(|e| {
            self.failed = true;
            io_error("fdatasync", &self.path, into_io(e))
        })
    }

    /// Syncs and closes the segment; returns its length in bytes.
    pub async fn close(mut self) -> Result<u64> {
        self.sync().await?;
        let (len, path) = (self.len, self.path.clone());
        let backend = match &self.backend {
            Backend::Direct(f) => Backend::Direct(f.clone()),
            Backend::Buffered(f) => Backend::Buffered(f.clone()),
        };
        // Nothing is in flight after the sync, so this is the last handle.
        drop(self);
        let closed = match backend {
            Backend::Direct(f) => match Rc::try_unwrap(f) {
                Ok(f) => f.close().await,
                Err(_) => Ok(()),
            },
            Backend::Buffered(f) => match Rc::try_unwrap(f) {
                Ok(f) => f.close().await,
                Err(_) => Ok(()),
            },
        };
        closed.map_err(|e| io_error("close", &path, into_io(e)))?;
        Ok(len)
    }

    /// Appends a block whose payload `fill` writes; `zero` asks for the
    /// payload bytes to be zeroed first.
    async fn append(
        &mut self,
        kind: BlockKind,
        key_groups: KeyGroupRange,
        state: &str,
        payload_len: usize,
        zero: bool,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<Extent> {
        self.begin("append block to")?;
        let appended = self
            .append_inner(kind, key_groups, state, payload_len, zero, fill)
            .await;
        self.in_progress = false;
        appended
    }

    /// [`append`](Self::append), once it is known to be allowed.
    async fn append_inner(
        &mut self,
        kind: BlockKind,
        key_groups: KeyGroupRange,
        state: &str,
        payload_len: usize,
        zero: bool,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<Extent> {
        let op = "append block to";
        let invalid = |what: String| {
            let e = io::Error::new(io::ErrorKind::InvalidInput, what);
            io_error(op, &self.path, e)
        };
        let len32 = u32::try_from(payload_len)
            .ok()
            .filter(|&n| n <= MAX_PAYLOAD_LEN && padded_block_len(n) <= MAX_BLOCK_LEN)
            .ok_or_else(|| {
                invalid(format!(
                    "block payload of {payload_len} bytes exceeds the maximum {}",
                    MAX_BLOCK_LEN - BLOCK_HEADER_LEN as u64
                ))
            })?;
        if state.len() > MAX_STATE_NAME_LEN {
            return Err(invalid(format!(
                "state name {state:?} is {} bytes long, more than {MAX_STATE_NAME_LEN}",
                state.len()
            )));
        }
        let length = padded_block_len(len32);
        let n = length as usize;
        let offset = self.len;
        let encode = |block: &mut [u8], is_dma: bool| {
            let payload = &mut block[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + payload_len];
            // Vectors grow zero-filled; DMA buffers hold whatever they held.
            if zero && is_dma {
                payload.fill(0);
            }
            fill(payload);
            seal_block(block, kind, key_groups, len32)
        };
        let payload_crc32c = if n < BATCH_LEN {
            if self
                .batch
                .as_ref()
                .is_some_and(|b| b.filled + n > BATCH_LEN)
            {
                self.submit_batch().await?;
            }
            if self.batch.is_none() {
                self.batch = Some(Batch {
                    buf: self.alloc(BATCH_LEN),
                    start: offset,
                    filled: 0,
                });
            }
            let batch = self.batch.as_mut().expect("a batch was just made");
            let is_dma = matches!(batch.buf, IoBuf::Dma(_));
            let crc = encode(batch.buf.block_mut(batch.filled, n), is_dma);
            batch.filled += n;
            self.len += length;
            if batch.filled == BATCH_LEN {
                self.submit_batch().await?;
            }
            crc
        } else {
            self.submit_batch().await?;
            let mut buf = self.alloc(n);
            let is_dma = matches!(buf, IoBuf::Dma(_));
            let crc = encode(buf.block_mut(0, n), is_dma);
            self.len += length;
            self.submit(buf, offset).await?;
            crc
        };
        Ok(Extent {
            segment: self.name.clone(),
            offset,
            length,
            key_groups,
            kind,
            payload_crc32c,
            state: state.to_owned(),
        })
    }

    /// A buffer of `n` bytes (a multiple of [`BLOCK_ALIGN`]) for the
    /// current backend; a vector starts empty, to grow as blocks fill it.
    fn alloc(&mut self, n: usize) -> IoBuf {
        debug_assert!((n as u64).is_multiple_of(BLOCK_ALIGN));
        match &self.backend {
            Backend::Direct(f) => {
                let spare = self.spare.iter().position(|b| b.len() == n);
                match spare.and_then(|i| self.spare.remove(i)) {
                    Some(b) => IoBuf::Dma(b),
                    None => IoBuf::Dma(f.alloc_dma_buffer(n)),
                }
            }
            Backend::Buffered(_) => IoBuf::Heap(Vec::with_capacity(n)),
        }
    }

    /// Writes the batch's filled part, if there is a batch.
    async fn submit_batch(&mut self) -> Result<()> {
        let Some(Batch {
            mut buf,
            start,
            filled,
        }) = self.batch.take()
        else {
            return Ok(());
        };
        if let IoBuf::Dma(b) = &mut buf {
            b.trim_to_size(filled);
        }
        self.submit(buf, start).await
    }

    /// Starts writing `buf` at `pos`, first waiting for the oldest writes
    /// if too many are in flight. The first `O_DIRECT` write is awaited
    /// alone, to fall back to buffered writes if it is refused.
    async fn submit(&mut self, buf: IoBuf, pos: u64) -> Result<()> {
        if self.probing {
            self.probing = false;
            if let Backend::Direct(file) = &self.backend {
                let file = file.clone();
                return self.probe(file, buf, pos).await;
            }
        }
        let len = buf.len();
        while !self.in_flight.is_empty()
            && (self.in_flight.len() >= MAX_IN_FLIGHT_WRITES
                || self.in_flight_bytes + len > MAX_IN_FLIGHT_BYTES)
        {
            self.wait_oldest().await?;
        }
        let task = match &self.backend {
            Backend::Direct(f) => {
                glommio::spawn_local(write_direct(f.clone(), buf.into_dma(f), pos))
            }
            Backend::Buffered(f) => {
                glommio::spawn_local(write_buffered(f.clone(), buf.into_vec(), pos))
            }
        };
        self.in_flight.push_back(InFlight { task, len });
        self.in_flight_bytes += len;
        Ok(())
    }

    /// Writes the first `O_DIRECT` buffer and waits for it; if it is
    /// refused, switches to buffered writes (in [`IoMode::Auto`], that is
    /// when `fallback` may be set) and writes it again.
    async fn probe(&mut self, file: Rc<DmaFile>, buf: IoBuf, pos: u64) -> Result<()> {
        let buf = buf.into_dma(&file);
        let len = buf.len();
        let buf = Rc::new(buf);
        #[cfg(test)]
        let refused = self
            .refuse_first_direct_write
            .take()
            .map(io::Error::from_raw_os_error);
        #[cfg(not(test))]
        let refused: Option<io::Error> = None;
        let written = match refused {
            Some(e) => Err(e),
            None => file
                .write_rc_at(buf.clone(), pos)
                .await
                .map_err(into_io)
                .and_then(|n| check_full(n, len)),
        };
        let e = match written {
            Ok(()) => {
                if let Ok(b) = Rc::try_unwrap(buf) {
                    self.spare.push_back(b);
                }
                return Ok(());
            }
            Err(e) => e,
        };
        if !refuses_direct(&e) || self.mode == IoMode::Direct {
            self.failed = true;
            return Err(write_error(&self.path, pos, len, e));
        }
        drop(file);
        let file = open_buffered_existing(&self.path).await?;
        let file = Rc::new(file);
        let old = std::mem::replace(&mut self.backend, Backend::Buffered(file.clone()));
        if let Backend::Direct(old) = old {
            // Nothing else was written through it; its close error would
            // say nothing about the data.
            let _ = old.close_rc().await;
        }
        self.fallback = Some(format!("the first O_DIRECT write was refused: {e}"));
        let v = buf.as_bytes().to_vec();
        drop(buf);
        write_buffered(file, v, pos).await.result.map_err(|e| {
            self.failed = true;
            io_error("write", &self.path, e)
        })
    }

    /// Waits for the oldest write in flight.
    async fn wait_oldest(&mut self) -> Result<()> {
        let Some(w) = self.in_flight.pop_front() else {
            return Ok(());
        };
        self.in_flight_bytes -= w.len;
        let Written { result, buf } = w.task.await;
        if let Some(buf) = buf {
            // Keep as many as can be in flight; the oldest go first.
            self.spare.push_back(buf);
            let mut bytes: usize = self.spare.iter().map(DmaBuffer::len).sum();
            while self.spare.len() > MAX_IN_FLIGHT_WRITES || bytes > MAX_IN_FLIGHT_BYTES {
                bytes -= self.spare.pop_front().map_or(0, |b| b.len());
            }
        }
        result.map_err(|e| {
            self.failed = true;
            io_error("write", &self.path, e)
        })
    }

    /// Starts an append or sync (`op`): fails if an earlier write failed
    /// or an earlier call was dropped unfinished.
    fn begin(&mut self, op: &'static str) -> Result<()> {
        let why = if self.failed {
            "an earlier write to this segment failed"
        } else if self.in_progress {
            "an earlier append or sync was dropped before it finished"
        } else {
            self.in_progress = true;
            return Ok(());
        };
        Err(io_error(op, &self.path, io::Error::other(why)))
    }
}

impl Drop for SegmentFile {
    fn drop(&mut self) {
        // Let the writes finish rather than cancel them mid-flight.
        for w in self.in_flight.drain(..) {
            // Dropping the handle detaches the task; it is not cancelled.
            drop(w.task.detach());
        }
    }
}

/// Creates `path` for `O_DIRECT` writes, or says why it cannot be.
async fn open_direct(path: &Path) -> Result<DmaFile, DirectOpenError> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .dma_open(path)
        .await
        .map_err(|e| {
            let e = into_io(e);
            if refuses_direct(&e) {
                DirectOpenError::Refused(format!("opening with O_DIRECT failed: {e}"))
            } else {
                DirectOpenError::Failed(e)
            }
        })?;
    let flags = fcntl(file.as_raw_fd(), FcntlArg::F_GETFL)
        .map_err(|e| DirectOpenError::Failed(io::Error::from(e)))?;
    let why = if !OFlag::from_bits_truncate(flags).contains(OFlag::O_DIRECT) {
        "the file system does not do O_DIRECT (glommio opens files on tmpfs without it)".to_owned()
    } else if file.alignment() > BLOCK_ALIGN {
        format!(
            "the device needs {}-byte alignment for O_DIRECT, blocks are aligned to {BLOCK_ALIGN}",
            file.alignment()
        )
    } else {
        return Ok(file);
    };
    // The file is ours (created new) and empty: keep it for the caller to
    // reopen or remove.
    let _ = file.close().await;
    Err(DirectOpenError::Refused(why))
}

/// Opens for buffered writes the file an `O_DIRECT` open was refused for,
/// which that attempt may or may not have created; it must be empty.
async fn open_buffered_after_refusal(path: &Path) -> Result<BufferedFile> {
    let op = "create segment";
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .buffered_open(path)
        .await
        .map_err(|e| io_error(op, path, into_io(e)))?;
    check_empty(op, path, &file).await?;
    Ok(file)
}

/// Reopens for buffered writes the file an `O_DIRECT` write was refused
/// for; nothing was written to it yet.
async fn open_buffered_existing(path: &Path) -> Result<BufferedFile> {
    let op = "reopen segment for buffered writes";
    let file = OpenOptions::new()
        .write(true)
        .buffered_open(path)
        .await
        .map_err(|e| io_error(op, path, into_io(e)))?;
    check_empty(op, path, &file).await?;
    Ok(file)
}

/// Fails unless `file` is empty (so it is the file this process created).
async fn check_empty(op: &'static str, path: &Path, file: &BufferedFile) -> Result<()> {
    let size = file
        .file_size()
        .await
        .map_err(|e| io_error(op, path, into_io(e)))?;
    if size != 0 {
        let e = io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("the file exists and holds {size} bytes"),
        );
        return Err(io_error(op, path, e));
    }
    Ok(())
}

/// Writes `buf` at `pos` through `O_DIRECT`; hands the buffer back.
async fn write_direct(file: Rc<DmaFile>, buf: DmaBuffer, pos: u64) -> Written {
    let len = buf.len();
    let buf = Rc::new(buf);
    let result = file
        .write_rc_at(buf.clone(), pos)
        .await
        .map_err(into_io)
        .and_then(|n| check_full(n, len))
        .map_err(|e| at(pos, len, e));
    Written {
        result,
        buf: Rc::try_unwrap(buf).ok(),
    }
}

/// Writes `buf` at `pos` through the page cache.
async fn write_buffered(file: Rc<BufferedFile>, buf: Vec<u8>, pos: u64) -> Written {
    let len = buf.len();
    let result = file
        .write_at(buf, pos)
        .await
        .map_err(into_io)
        .and_then(|n| check_full(n, len))
        .map_err(|e| at(pos, len, e));
    Written { result, buf: None }
}

/// An error unless all `len` bytes were written.
fn check_full(n: usize, len: usize) -> io::Result<()> {
    if n == len {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("short write of {n} bytes"),
        ))
    }
}

/// `e`, saying which write it came from.
fn at(pos: u64, len: usize, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{len} bytes at offset {pos}: {e}"))
}

/// A failed write of `len` bytes at `pos` to `path`.
fn write_error(path: &Path, pos: u64, len: usize, e: io::Error) -> SnapshotError {
    io_error("write", path, at(pos, len, e))
}

/// Whether `e` is the file system or device refusing `O_DIRECT`.
fn refuses_direct(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error().map(Errno::from_i32),
        Some(Errno::EINVAL | Errno::EOPNOTSUPP)
    )
}

/// The `std::io::Error` inside a glommio error, keeping its OS error code
/// (glommio's own conversion keeps only the kind).
pub(crate) fn into_io<T>(e: GlommioError<T>) -> io::Error {
    match e {
        GlommioError::IoError(e) | GlommioError::EnhancedIoError { source: e, .. } => e,
        other => io::Error::from(other),
    }
}

/// A [`SnapshotError::Io`].
fn io_error(op: &'static str, path: &Path, source: io::Error) -> SnapshotError {
    SnapshotError::Io {
        op,
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests;
