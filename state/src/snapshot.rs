//! The on-disk snapshot format: log-structured segment files of checksummed
//! blocks, and the rkyv manifest that names a checkpoint's blocks.
//!
//! A checkpoint is written in two steps. Each worker appends the frozen
//! state of its operators to its own **segment** files, one **block** per
//! key-group range of one named state of one operator (or any other opaque
//! payload), and reports an [`Extent`] per block. The coordinator then
//! collects every subtask's extents in a [`Manifest`] and writes it with
//! [`write_atomically`]; the checkpoint is complete once that rename is
//! durable. Restore reads the manifest with [`Manifest::from_bytes`] (or
//! [`Manifest::read`]), maps the segments with [`SegmentReader`] and reads
//! each extent with [`SegmentReader::read_block`], which checks every byte.
//!
//! # Segment files
//!
//! A segment is a sequence of blocks, each starting at a multiple of
//! [`BLOCK_ALIGN`] (4096) bytes, so blocks can later be written with
//! `O_DIRECT`. A segment is only ever appended to; once a checkpoint that
//! references it is complete, its referenced bytes never change. There is
//! no segment header or footer: the blocks a checkpoint needs are named by
//! its manifest, and [`SegmentReader::scan`] finds the others by walking.
//!
//! One block, all integers little-endian:
//!
//! | offset | size | field | meaning |
//! |---:|---:|---|---|
//! | 0 | 4 | `magic` | the bytes `b"WRSB"` ([`BLOCK_MAGIC`]) |
//! | 4 | 2 | `version` | [`BLOCK_VERSION`] = 1 |
//! | 6 | 2 | `kind` | [`BlockKind`]: 1 keyed state, 2 operator state, 3 channel state, 4 opaque, 5 keyed table |
//! | 8 | 4 | `key_group_start` | first key group of the block |
//! | 12 | 4 | `key_group_end` | one past the last key group (half-open; `start <= end`) |
//! | 16 | 4 | `payload_len` | payload bytes that follow the header |
//! | 20 | 4 | `payload_crc32c` | CRC-32C (Castagnoli) of the payload bytes |
//! | 24 | 4 | `header_crc32c` | CRC-32C of header bytes `0..24` |
//! | 28 | `payload_len` | payload | opaque to this module |
//! | `28 + payload_len` | .. | padding | zero bytes up to the next multiple of 4096 |
//!
//! A block therefore occupies [`padded_block_len`]`(payload_len)` =
//! `round_up(28 + payload_len, 4096)` bytes; an empty payload still takes
//! 4096. [`encode_block`] writes exactly these bytes into a buffer of that
//! length, and [`seal_block`] completes them around a payload the caller
//! wrote in place at offset 28; every segment writer uses one of the two,
//! so all produce identical bytes. A block does not record the name of the
//! state it holds: its [`Extent`] in the manifest does. The reader checks the magic, version, header checksum, kind,
//! key-group range, bounds, payload checksum and that the padding is zero,
//! so any single changed byte of a block is reported as a
//! [`SnapshotError::Corrupt`] naming the file and the block's offset.
//!
//! # Manifest files
//!
//! A manifest file is an rkyv 0.8 archive (little-endian, 32-bit relative
//! pointers, aligned: the crate pins these rkyv format features) of the
//! manifest, followed by a 20-byte trailer:
//!
//! | offset from the trailer | size | field | meaning |
//! |---:|---:|---|---|
//! | 0 | 4 | `magic` | the bytes `b"WRSM"` ([`MANIFEST_MAGIC`]) |
//! | 4 | 2 | `version` | [`MANIFEST_VERSION`] = 5 (the archive of version 4; an incremental checkpoint names segments of earlier checkpoints `../chk-<id>/<segment>`; version 4, version 3, without the kind, and version 2, without lineage, are read too, as checkpoints) |
//! | 6 | 2 | `reserved` | zero |
//! | 8 | 8 | `length` | archive bytes before the trailer (= file length - 20) |
//! | 16 | 4 | `crc32c` | CRC-32C of the archive bytes (from version 5 on, of the archive bytes followed by the two `version` bytes) |
//!
//! The archive holds, in this order of nesting (all strings UTF-8):
//!
//! | value | fields |
//! |---|---|
//! | manifest | `job_name`, `checkpoint_id: u64`, `timestamp_ms: u64`, `max_parallelism: u32`, operators, lineage (optional), `kind: u8` (0 a checkpoint, 1 a savepoint) |
//! | lineage | `job_id` (the run that wrote it), `parent: Option<u64>` (the checkpoint it follows), `fingerprint` (`(key, value)` pairs: what the state means) |
//! | operator | `uid`, `parallelism: u32`, subtasks |
//! | subtask | `index: u32`, key-group range, extents, inline states |
//! | extent | `segment` (a plain file name), `offset: u64`, `length: u64`, key-group range, `kind: u16`, `payload_crc32c: u32`, `state` (at most [`MAX_STATE_NAME_LEN`] = 255 bytes, `""` if none) |
//! | inline state | `name` (1 to 255 bytes, unique within its subtask), `bytes` |
//!
//! Inline states are small operator states kept in the manifest itself
//! rather than in a segment: a source's position, a sink's pending
//! transactions, a task's end-of-input flag.
//!
//! [`Manifest::from_bytes`] checks the trailer and the checksum, then
//! validates the archive with rkyv's checked access (bytecheck) and the
//! decoded values (key-group ranges, block kinds, segment and state names,
//! unique inline state names), so arbitrary bytes give an error, never a
//! panic or undefined behaviour. [`Manifest::to_bytes`] refuses to encode
//! a manifest that would not pass these checks.
//!
//! # Writers
//!
//! [`SegmentWriter`] writes through a buffered `std::fs::File`; the
//! runtime's io_uring writer (`weir_runtime::checkpoint::segment_file`)
//! writes the same bytes with `O_DIRECT` (the 4096-byte alignment is for
//! it).

mod error;
mod format;
mod manifest;
mod reader;
mod writer;

pub use error::{Result, SnapshotError};
pub use format::{
    encode_block, padded_block_len, seal_block, BlockKind, Extent, BLOCK_ALIGN, BLOCK_HEADER_LEN,
    BLOCK_MAGIC, BLOCK_VERSION, MAX_PAYLOAD_LEN, MAX_STATE_NAME_LEN,
};
pub use manifest::{
    referenced_segment, write_atomically, InlineState, Lineage, Manifest, OperatorSnapshot,
    SnapshotKind, SubtaskSnapshot, MANIFEST_MAGIC, MANIFEST_TRAILER_LEN, MANIFEST_VERSION,
    MIN_MANIFEST_VERSION,
};
pub use reader::{PayloadCheck, Scan, SegmentReader};
pub use writer::SegmentWriter;
