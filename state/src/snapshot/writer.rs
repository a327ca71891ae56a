//! [`SegmentWriter`]: appends checksummed, 4096-byte-aligned blocks to a
//! new segment file through a buffered `std::fs::File`.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::error::{Result, SnapshotError};
use super::format::{
    padded_block_len, BlockHeader, BlockKind, Extent, BLOCK_ALIGN, BLOCK_HEADER_LEN,
    MAX_PAYLOAD_LEN,
};
use crate::key_group::KeyGroupRange;

/// Write buffer: large enough that small blocks coalesce into few writes;
/// larger payloads pass straight through to the file without a copy.
const BUFFER_LEN: usize = 256 * 1024;

/// Zero bytes to pad blocks from.
static ZEROS: [u8; BLOCK_ALIGN as usize] = [0; BLOCK_ALIGN as usize];

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

    /// Appends one block holding `payload` for `key_groups`, and returns
    /// its extent. The payload is checksummed and written in place, never
    /// copied whole (unless it is small enough to go through the buffer).
    pub fn append_block(
        &mut self,
        kind: BlockKind,
        key_groups: KeyGroupRange,
        payload: &[u8],
    ) -> Result<Extent> {
        self.check_usable("append block to")?;
        let payload_len = u32::try_from(payload.len())
            .ok()
            .filter(|&n| n <= MAX_PAYLOAD_LEN)
            .ok_or_else(|| {
                let e = io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "block payload of {} bytes exceeds the maximum {MAX_PAYLOAD_LEN}",
                        payload.len()
                    ),
                );
                SnapshotError::io("append block to", &self.path, e)
            })?;
        let header = BlockHeader {
            kind,
            key_groups,
            payload_len,
            payload_crc32c: crc32c::crc32c(payload),
        };
        let length = padded_block_len(payload_len);
        let pad = (length - BLOCK_HEADER_LEN as u64 - u64::from(payload_len)) as usize;
        let written = self
            .out
            .write_all(&header.encode())
            .and_then(|()| self.out.write_all(payload))
            .and_then(|()| self.out.write_all(&ZEROS[..pad]));
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
            payload_crc32c: header.payload_crc32c,
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
