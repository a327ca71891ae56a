//! [`SegmentReader`]: maps a segment file and reads its blocks, checking
//! every byte against the format and against the extent that named it.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::error::{Result, SnapshotError};
use super::format::{BlockHeader, Extent, BLOCK_ALIGN, BLOCK_HEADER_LEN};

/// Maps `file` read-only.
fn map_file(file: &File) -> std::io::Result<Mmap> {
    // SAFETY: `Mmap::map` is unsafe because the mapped file could be
    // changed (or truncated) by someone else while we hold `&[u8]`s into
    // it. Snapshot segments are immutable once complete: workers only ever
    // append to segments they are writing, and restore and inspection only
    // map segments named by a complete checkpoint, whose referenced bytes
    // nobody rewrites (appends past the mapped length do not touch the
    // mapped bytes). The mapping is read-only, and every byte read
    // through it is validated (bounds, magic, version, checksums, padding)
    // before it is trusted, so corrupt contents yield errors, never panics.
    let map = unsafe { Mmap::map(file) }?;
    // A segment is read front to back, once: ask the kernel to read ahead
    // aggressively and to start now (both are hints; failures are
    // harmless).
    let _ = map.advise(memmap2::Advice::Sequential);
    let _ = map.advise(memmap2::Advice::WillNeed);
    Ok(map)
}

/// The index of the first byte of `bytes` that is not zero: eight bytes
/// at a time (a block's padding is up to 4 KiB; a restore of a chain of
/// small delta blocks checks a few MB of it).
fn first_nonzero(bytes: &[u8]) -> Option<usize> {
    let words = bytes.chunks_exact(8);
    let tail = words.remainder();
    let word = words
        .into_iter()
        .position(|w| u64::from_ne_bytes(w.try_into().expect("eight bytes")) != 0);
    let (at, rest) = match word {
        Some(w) => (w * 8, &bytes[w * 8..w * 8 + 8]),
        None => (bytes.len() - tail.len(), tail),
    };
    rest.iter().position(|&b| b != 0).map(|i| at + i)
}

/// A segment file, mapped for reading.
#[derive(Debug)]
pub struct SegmentReader {
    path: PathBuf,
    name: String,
    /// `None` for an empty file (which cannot be mapped).
    map: Option<Mmap>,
}

impl SegmentReader {
    /// Opens and maps the segment at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self::open_as(path, name)
    }

    /// Opens and maps the segment at `path`, which extents name `name`
    /// (an incremental checkpoint names a segment of an earlier checkpoint
    /// `../chk-<id>/<segment>`, see
    /// [`referenced_segment`](super::referenced_segment)).
    pub fn open_as(path: impl AsRef<Path>, name: String) -> Result<Self> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| SnapshotError::io("open segment", path, e))?;
        let len = file
            .metadata()
            .map_err(|e| SnapshotError::io("stat segment", path, e))?
            .len();
        let map = if len == 0 {
            None
        } else {
            Some(map_file(&file).map_err(|e| SnapshotError::io("map segment", path, e))?)
        };
        Ok(Self {
            path: path.to_owned(),
            name,
            map,
        })
    }

    /// The segment's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The segment's file name, which extents must name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Asks the kernel to start reading the bytes `offset..offset + len`
    /// now (a hint: a restore calls it for its next window while it
    /// decodes the current one). The kernel reads at most one read-ahead
    /// window per call, so the range is advised in pieces of that size.
    pub fn will_need(&self, offset: u64, len: u64) {
        const PIECE: u64 = 4 << 20;
        let Some(map) = &self.map else { return };
        let end = offset.saturating_add(len).min(map.len() as u64);
        let mut at = offset;
        while at < end {
            let n = PIECE.min(end - at);
            // Offsets need not be page-aligned: memmap2 aligns them.
            let _ = map.advise_range(memmap2::Advice::WillNeed, at as usize, n as usize);
            at += n;
        }
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// The file's length.
    pub fn len(&self) -> u64 {
        self.bytes().len() as u64
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes().is_empty()
    }

    /// The payload of the block `extent` names, after checking the block
    /// against the format and against the extent (segment name, length,
    /// kind, key groups, payload checksum; not the state name, which the
    /// block does not record).
    pub fn read_block(&self, extent: &Extent) -> Result<&[u8]> {
        let corrupt = |what: String| self.corrupt(extent.offset, what);
        if extent.segment != self.name {
            return Err(corrupt(format!(
                "extent names segment {:?}, not this one",
                extent.segment
            )));
        }
        let (header, payload) = self.block_at(extent.offset)?;
        if header.padded_len() != extent.length {
            return Err(corrupt(format!(
                "block length mismatch (expected {}, found {})",
                extent.length,
                header.padded_len()
            )));
        }
        if header.kind != extent.kind {
            return Err(corrupt(format!(
                "block kind mismatch (expected {}, found {})",
                extent.kind, header.kind
            )));
        }
        if header.key_groups != extent.key_groups {
            return Err(corrupt(format!(
                "key-group range mismatch (expected {}, found {})",
                extent.key_groups, header.key_groups
            )));
        }
        if header.payload_crc32c != extent.payload_crc32c {
            return Err(corrupt(format!(
                "payload checksum mismatch with the extent (expected {:#010x}, found {:#010x})",
                extent.payload_crc32c, header.payload_crc32c
            )));
        }
        Ok(payload)
    }

    /// Like [`SegmentReader::read_block`], but the payload's checksum is
    /// left to the caller, who feeds the payload through the returned
    /// [`PayloadCheck`] (in any number of pieces, in order) and must call
    /// [`PayloadCheck::finish`] before trusting what it read: for readers
    /// that decode and checksum in one pass over the bytes. Everything
    /// else (header, lengths, padding, the extent's fields) is checked here.
    pub fn read_block_deferred(&self, extent: &Extent) -> Result<(&[u8], PayloadCheck)> {
        let corrupt = |what: String| self.corrupt(extent.offset, what);
        if extent.segment != self.name {
            return Err(corrupt(format!(
                "extent names segment {:?}, not this one",
                extent.segment
            )));
        }
        let (header, payload) = self.block_at_unchecked(extent.offset)?;
        if header.padded_len() != extent.length
            || header.kind != extent.kind
            || header.key_groups != extent.key_groups
            || header.payload_crc32c != extent.payload_crc32c
        {
            // The full check says precisely which field differs.
            return self.read_block(extent).map(|p| {
                let check = PayloadCheck::new(self, extent.offset, header.payload_crc32c);
                (p, check)
            });
        }
        Ok((
            payload,
            PayloadCheck::new(self, extent.offset, header.payload_crc32c),
        ))
    }

    /// Every block of the segment in file order, with the extent that names
    /// it (with an empty [`Extent::state`]: blocks do not record their
    /// state's name). Stops after the first error (a corrupt or truncated
    /// block).
    pub fn scan(&self) -> Scan<'_> {
        Scan {
            reader: self,
            offset: 0,
            done: false,
        }
    }

    /// The block at `offset`, checked against the format: header, bounds,
    /// payload checksum and zero padding.
    fn block_at(&self, offset: u64) -> Result<(BlockHeader, &[u8])> {
        let (header, payload) = self.block_at_unchecked(offset)?;
        let computed = crc32c::crc32c(payload);
        if computed != header.payload_crc32c {
            return Err(self.corrupt(
                offset,
                format!(
                    "payload checksum mismatch (expected {:#010x}, found {computed:#010x})",
                    header.payload_crc32c
                ),
            ));
        }
        Ok((header, payload))
    }

    /// [`Self::block_at`] without the payload checksum.
    fn block_at_unchecked(&self, offset: u64) -> Result<(BlockHeader, &[u8])> {
        let bytes = self.bytes();
        let corrupt = |what: String| self.corrupt(offset, what);
        let file_len = bytes.len() as u64;
        if !offset.is_multiple_of(BLOCK_ALIGN) {
            return Err(corrupt(format!(
                "block offset is not a multiple of {BLOCK_ALIGN}"
            )));
        }
        let header_end = offset.saturating_add(BLOCK_HEADER_LEN as u64);
        if header_end > file_len {
            return Err(corrupt(format!(
                "truncated: block header ends at {header_end}, beyond the end of the file ({file_len} bytes)"
            )));
        }
        // Both fit in usize: they are at most the length of a mapped slice.
        let start = offset as usize;
        let mut raw = [0u8; BLOCK_HEADER_LEN];
        raw.copy_from_slice(&bytes[start..start + BLOCK_HEADER_LEN]);
        let header = BlockHeader::decode(&raw).map_err(corrupt)?;
        let block_end = offset.saturating_add(header.padded_len());
        if block_end > file_len {
            return Err(corrupt(format!(
                "truncated: block of {} bytes ends at {block_end}, beyond the end of the file ({file_len} bytes)",
                header.padded_len()
            )));
        }
        let payload_start = start + BLOCK_HEADER_LEN;
        let payload_end = payload_start + header.payload_len as usize;
        let payload = &bytes[payload_start..payload_end];
        let padding = &bytes[payload_end..block_end as usize];
        if let Some(i) = first_nonzero(padding) {
            return Err(corrupt(format!(
                "non-zero padding byte at file offset {}",
                payload_end + i
            )));
        }
        Ok((header, payload))
    }

    fn corrupt(&self, offset: u64, what: String) -> SnapshotError {
        SnapshotError::Corrupt {
            path: self.path.clone(),
            offset,
            what,
        }
    }
}

/// Iterator over the blocks of a segment: see [`SegmentReader::scan`].
#[derive(Debug)]
pub struct Scan<'a> {
    reader: &'a SegmentReader,
    offset: u64,
    done: bool,
}

impl<'a> Iterator for Scan<'a> {
    type Item = Result<(Extent, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.offset >= self.reader.len() {
            return None;
        }
        match self.reader.block_at(self.offset) {
            Ok((header, payload)) => {
                let extent = Extent {
                    segment: self.reader.name.clone(),
                    offset: self.offset,
                    length: header.padded_len(),
                    key_groups: header.key_groups,
                    kind: header.kind,
                    payload_crc32c: header.payload_crc32c,
                    // Blocks do not record it; the manifest does.
                    state: String::new(),
                };
                self.offset += header.padded_len();
                Some(Ok((extent, payload)))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for Scan<'_> {}

/// The payload checksum of a block read with
/// [`SegmentReader::read_block_deferred`], computed piece by piece.
#[derive(Debug)]
pub struct PayloadCheck {
    path: std::path::PathBuf,
    offset: u64,
    expected: u32,
    crc: u32,
}

impl PayloadCheck {
    fn new(reader: &SegmentReader, offset: u64, expected: u32) -> Self {
        Self {
            path: reader.path.clone(),
            offset,
            expected,
            crc: 0,
        }
    }

    /// Feeds the next piece of the payload.
    #[inline]
    pub fn update(&mut self, piece: &[u8]) {
        self.crc = crc32c::crc32c_append(self.crc, piece);
    }

    /// The payload fed so far must be the whole payload, with the
    /// block's checksum.
    pub fn finish(self) -> Result<()> {
        if self.crc == self.expected {
            Ok(())
        } else {
            Err(SnapshotError::Corrupt {
                path: self.path,
                offset: self.offset,
                what: format!(
                    "payload checksum mismatch (expected {:#010x}, found {:#010x})",
                    self.expected, self.crc
                ),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::first_nonzero;

    #[test]
    fn first_nonzero_finds_the_first_set_byte_at_every_position() {
        for len in 0..40 {
            assert_eq!(first_nonzero(&vec![0; len]), None, "{len} zeros");
            for at in 0..len {
                let mut bytes = vec![0u8; len];
                bytes[at] = 1 << (at % 8);
                if at + 3 < len {
                    bytes[at + 3] = 0xff;
                }
                assert_eq!(first_nonzero(&bytes), Some(at), "len {len}, at {at}");
            }
        }
    }
}
