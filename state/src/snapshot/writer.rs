//! [`SegmentWriter`]: appends checksummed, 4096-byte-aligned blocks to a
//! new segment file through a buffered `std::fs::File`. Blocks are encoded
//! by [`encode_block`], like every other writer's.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::error::{Result, SnapshotError};
use super::format::{
    encode_block, padded_block_len, BlockKind, Extent, MAX_PAYLOAD_LEN, MAX_STATE_NAME_LEN,
};
use crate::key_group::KeyGroupRange;

/// Write buffer: large enough that small blocks coalesce into few writes;
/// larger blocks pass straight through to the file.
const BUFFER_LEN: usize = 256 * 1024;

/// Largest encoding buffer kept between blocks; a larger one, needed for
/// a large block, is freed after it.
const MAX_KEPT_SCRATCH: usize = 1 << 20;

/// Appends blocks to one segment file.
///
/// The file is created new (an existing file is never overwritten). Blocks
/// reach the file when the buffer fills, on [`sync`](Self::sync) and on
/// [`finish`](Self::finish); only after `sync` or `finish` returned are
/// the extents handed out durable. After a failed write the writer refuses
/// further blocks, since the file's end is then unknown.
#[derive(Debug)]
pub struct SegmentWriter {
    out: BufWriter<File>,
    path: PathBuf,
    name: String,
    /// Offset of the next block: bytes appended so far.
    offset: u64,
    /// Set when a write failed: the file's contents are then unknown.
    failed: bool,
    /// Where blocks are encoded before they are written.
    scratch: Vec<u8>,
}

impl SegmentWriter {
    /// Creates the segment file at `path`; its file name (which must be
    /// UTF-8) is what extents name it by.
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| {
                let e = io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "segment path needs a UTF-8 file name",
                );
                SnapshotError::io("create segment", path, e)
            })?
            .to_owned();
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| SnapshotError::io("create segment", path, e))?;
        Ok(Self {
            out: BufWriter::with_capacity(BUFFER_LEN, file),
            path: path.to_owned(),
            name,
            offset: 0,
            failed: false,
            scratch: Vec::new(),
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

    /// Bytes appended so far (the offset of the next block).
    pub fn len(&self) -> u64 {
        self.offset
    }

    /// Whether no block was appended yet.
    pub fn is_empty(&self) -> bool {
        self.offset == 0
    }

    /// Appends one block holding `payload` for `key_groups` of the state
    /// named `state` (at most [`MAX_STATE_NAME_LEN`] bytes, `""` if none),
    /// and returns its extent. The block is encoded by [`encode_block`].
    pub fn append_block(
        &mut self,
        kind: BlockKind,
        key_groups: KeyGroupRange,
        state: &str,
        payload: &[u8],
    ) -> Result<Extent> {
        self.check_usable("append block to")?;
        let invalid = |what: String| {
            let e = io::Error::new(io::ErrorKind::InvalidInput, what);
            SnapshotError::io("append block to", &self.path, e)
        };
        let payload_len = u32::try_from(payload.len())
            .ok()
            .filter(|&n| n <= MAX_PAYLOAD_LEN)
            .ok_or_else(|| {
                invalid(format!(
                    "block payload of {} bytes exceeds the maximum {MAX_PAYLOAD_LEN}",
                    payload.len()
                ))
            })?;
        if state.len() > MAX_STATE_NAME_LEN {
            return Err(invalid(format!(
                "state name {state:?} is {} bytes long, more than {MAX_STATE_NAME_LEN}",
                state.len()
            )));
        }
        let length = padded_block_len(payload_len);
        self.scratch.clear();
        self.scratch.resize(length as usize, 0);
        let payload_crc32c = encode_block(&mut self.scratch, kind, key_groups, payload);
        let written = self.out.write_all(&self.scratch);
        if self.scratch.capacity() > MAX_KEPT_SCRATCH {
            self.scratch = Vec::new();
        }
        if let Err(e) = written {
            self.failed = true;
            return Err(SnapshotError::io("append block to", &self.path, e));
        }
        let extent = Extent {
            segment: self.name.clone(),
            offset: self.offset,
            length,
            key_groups,
            kind,
            payload_crc32c,
            state: state.to_owned(),
        };
        self.offset += length;
        Ok(extent)
    }

    /// Writes out the buffer and makes the appended blocks durable
    /// (`fdatasync`).
    pub fn sync(&mut self) -> Result<()> {
        self.check_usable("sync")?;
        if let Err(e) = self.out.flush() {
            self.failed = true;
            return Err(SnapshotError::io("write", &self.path, e));
        }
        self.out
            .get_ref()
            .sync_data()
            .map_err(|e| SnapshotError::io("fdatasync", &self.path, e))
    }

    /// Syncs and closes the segment; returns its length in bytes.
    pub fn finish(mut self) -> Result<u64> {
        self.sync()?;
        Ok(self.offset)
    }

    /// Fails if an earlier write failed.
    fn check_usable(&self, op: &'static str) -> Result<()> {
        if self.failed {
            let e = io::Error::other("an earlier write to this segment failed");
            return Err(SnapshotError::io(op, &self.path, e));
        }
        Ok(())
    }
}
