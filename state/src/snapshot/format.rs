//! The block format of segment files: constants, [`BlockKind`], the
//! [`Extent`] that locates a block, and header encoding and parsing.
//!
//! The layout is documented in the [parent module](super).

use std::fmt;

use crate::key_group::KeyGroupRange;

/// Magic number opening every block: the bytes `b"WRSB"`, read as a
/// little-endian `u32`.
pub const BLOCK_MAGIC: u32 = u32::from_le_bytes(*b"WRSB");

/// Version of the block format this crate writes and reads.
pub const BLOCK_VERSION: u16 = 1;

/// Bytes of a block header.
pub const BLOCK_HEADER_LEN: usize = 28;

/// Blocks start at, and are padded to, multiples of this many bytes.
pub const BLOCK_ALIGN: u64 = 4096;

/// Largest payload a block can hold: its padded length must fit a `u32`
/// length field and stay representable, so `u32::MAX` rounded down to the
/// alignment, less the header.
pub const MAX_PAYLOAD_LEN: u32 =
    (u32::MAX as u64 / BLOCK_ALIGN * BLOCK_ALIGN) as u32 - BLOCK_HEADER_LEN as u32;

/// Longest state name, in bytes, an [`Extent`] (or an inline state of a
/// manifest) may carry.
pub const MAX_STATE_NAME_LEN: usize = 255;

/// Bytes a block with `payload_len` payload bytes occupies in its segment:
/// header plus payload, rounded up to a multiple of [`BLOCK_ALIGN`].
#[inline]
pub const fn padded_block_len(payload_len: u32) -> u64 {
    (BLOCK_HEADER_LEN as u64 + payload_len as u64).div_ceil(BLOCK_ALIGN) * BLOCK_ALIGN
}

/// What a block holds. The numeric values are part of the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum BlockKind {
    /// Keyed state of one key-group range of one named state.
    KeyedState = 1,
    /// Operator (non-keyed) state.
    OperatorState = 2,
    /// In-flight channel data (unaligned checkpoints).
    ChannelState = 3,
    /// Any other payload (e.g. source positions or timers), opaque here.
    Opaque = 4,
    /// Keyed state of one key-group range written in the order of its
    /// hash table's slots, with the slots' occupancy, so that a restore
    /// into a table of the same size puts every entry back where it was
    /// without probing (the runtime's `table_block` format).
    KeyedTable = 5,
    /// The slots of a hash table written or emptied since the checkpoint
    /// an incremental checkpoint follows (the runtime's `table_delta`
    /// format), applied over the `KeyedTable` blocks it references.
    KeyedTableDelta = 6,
}

impl BlockKind {
    /// The kind with number `v`, if it is one.
    pub const fn from_u16(v: u16) -> Option<Self> {
        match v {
            1 => Some(Self::KeyedState),
            2 => Some(Self::OperatorState),
            3 => Some(Self::ChannelState),
            4 => Some(Self::Opaque),
            5 => Some(Self::KeyedTable),
            6 => Some(Self::KeyedTableDelta),
            _ => None,
        }
    }

    /// The kind's number on disk.
    #[inline]
    pub const fn as_u16(self) -> u16 {
        self as u16
    }
}

impl fmt::Display for BlockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::KeyedState => "keyed state",
            Self::OperatorState => "operator state",
            Self::ChannelState => "channel state",
            Self::Opaque => "opaque",
            Self::KeyedTable => "keyed table",
            Self::KeyedTableDelta => "keyed table delta",
        };
        f.write_str(name)
    }
}

/// Where a block lives and what it must contain: what a manifest records
/// per block, and what [`SegmentReader::read_block`](super::SegmentReader::read_block)
/// checks the block against.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Extent {
    /// File name of the segment (no directory).
    pub segment: String,
    /// Offset of the block in the segment (a multiple of [`BLOCK_ALIGN`]).
    pub offset: u64,
    /// Bytes the block occupies, padding included
    /// ([`padded_block_len`] of its payload length).
    pub length: u64,
    /// The key groups the block holds.
    pub key_groups: KeyGroupRange,
    /// What the block holds.
    pub kind: BlockKind,
    /// CRC-32C of the payload.
    pub payload_crc32c: u32,
    /// Name of the state the block holds (at most [`MAX_STATE_NAME_LEN`]
    /// bytes), `""` if none. Only the manifest records it: blocks do not
    /// carry it, so [`SegmentReader::read_block`](super::SegmentReader::read_block)
    /// cannot check it and [`SegmentReader::scan`](super::SegmentReader::scan)
    /// reports `""`.
    pub state: String,
}

/// Encodes one block holding `payload` into `block`, which must be exactly
/// [`padded_block_len`]`(payload.len())` bytes long: header, payload and
/// zero padding, the bytes a segment holds for it. Returns the payload's
/// CRC-32C, as the block's [`Extent`] records it. Every writer of segments
/// goes through this (or [`seal_block`]), so all produce the same bytes.
///
/// # Panics
///
/// If `payload` is longer than [`MAX_PAYLOAD_LEN`] or `block` has the
/// wrong length.
pub fn encode_block(
    block: &mut [u8],
    kind: BlockKind,
    key_groups: KeyGroupRange,
    payload: &[u8],
) -> u32 {
    let payload_len = checked_payload_len(payload.len());
    check_block_len(block, payload_len);
    block[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + payload.len()].copy_from_slice(payload);
    seal_block(block, kind, key_groups, payload_len)
}

/// Completes a block whose payload the caller already wrote in place, at
/// `block[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + payload_len]`: writes the
/// header in front of it and zeroes the padding after it, so `block` holds
/// exactly what [`encode_block`] would have written. `block` must be
/// exactly [`padded_block_len`]`(payload_len)` bytes long. This lets a
/// serializer write straight into an aligned I/O buffer. Returns the
/// payload's CRC-32C.
///
/// # Panics
///
/// If `payload_len` exceeds [`MAX_PAYLOAD_LEN`] or `block` has the wrong
/// length.
pub fn seal_block(
    block: &mut [u8],
    kind: BlockKind,
    key_groups: KeyGroupRange,
    payload_len: u32,
) -> u32 {
    let payload_len = checked_payload_len(payload_len as usize);
    check_block_len(block, payload_len);
    let payload_end = BLOCK_HEADER_LEN + payload_len as usize;
    let payload_crc32c = crc32c::crc32c(&block[BLOCK_HEADER_LEN..payload_end]);
    let header = BlockHeader {
        kind,
        key_groups,
        payload_len,
        payload_crc32c,
    };
    block[..BLOCK_HEADER_LEN].copy_from_slice(&header.encode());
    block[payload_end..].fill(0);
    payload_crc32c
}

/// `len` as a payload length, or a panic saying it is too long.
fn checked_payload_len(len: usize) -> u32 {
    match u32::try_from(len) {
        Ok(n) if n <= MAX_PAYLOAD_LEN => n,
        _ => panic!("block payload of {len} bytes exceeds the maximum {MAX_PAYLOAD_LEN}"),
    }
}

/// Panics unless `block` is as long as a block of `payload_len` bytes.
fn check_block_len(block: &[u8], payload_len: u32) {
    let expected = padded_block_len(payload_len);
    assert!(
        block.len() as u64 == expected,
        "block buffer of {} bytes for a payload of {payload_len} bytes: expected {expected}",
        block.len()
    );
}

/// A decoded, self-consistent block header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockHeader {
    pub kind: BlockKind,
    pub key_groups: KeyGroupRange,
    pub payload_len: u32,
    pub payload_crc32c: u32,
}

impl BlockHeader {
    /// Bytes the block occupies, padding included.
    #[inline]
    pub fn padded_len(&self) -> u64 {
        padded_block_len(self.payload_len)
    }

    /// The header's bytes, checksum included.
    pub fn encode(&self) -> [u8; BLOCK_HEADER_LEN] {
        let mut h = [0u8; BLOCK_HEADER_LEN];
        h[0..4].copy_from_slice(&BLOCK_MAGIC.to_le_bytes());
        h[4..6].copy_from_slice(&BLOCK_VERSION.to_le_bytes());
        h[6..8].copy_from_slice(&self.kind.as_u16().to_le_bytes());
        h[8..12].copy_from_slice(&self.key_groups.start().to_le_bytes());
        h[12..16].copy_from_slice(&self.key_groups.end().to_le_bytes());
        h[16..20].copy_from_slice(&self.payload_len.to_le_bytes());
        h[20..24].copy_from_slice(&self.payload_crc32c.to_le_bytes());
        let crc = crc32c::crc32c(&h[..24]);
        h[24..28].copy_from_slice(&crc.to_le_bytes());
        h
    }

    /// Parses and checks a header; the error says what is wrong.
    pub fn decode(h: &[u8; BLOCK_HEADER_LEN]) -> Result<Self, String> {
        let u16_at = |i: usize| u16::from_le_bytes([h[i], h[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let magic = u32_at(0);
        if magic != BLOCK_MAGIC {
            return Err(format!(
                "bad block magic (expected {BLOCK_MAGIC:#010x} \"WRSB\", found {magic:#010x})"
            ));
        }
        let version = u16_at(4);
        if version != BLOCK_VERSION {
            return Err(format!(
                "unsupported block version {version} (this build reads version {BLOCK_VERSION})"
            ));
        }
        let stored = u32_at(24);
        let computed = crc32c::crc32c(&h[..24]);
        if stored != computed {
            return Err(format!(
                "header checksum mismatch (expected {stored:#010x}, found {computed:#010x})"
            ));
        }
        let raw_kind = u16_at(6);
        let kind = BlockKind::from_u16(raw_kind)
            .ok_or_else(|| format!("unknown block kind {raw_kind}"))?;
        let (start, end) = (u32_at(8), u32_at(12));
        if start > end {
            return Err(format!("bad key-group range: start {start} > end {end}"));
        }
        let payload_len = u32_at(16);
        if payload_len > MAX_PAYLOAD_LEN {
            return Err(format!(
                "payload length {payload_len} exceeds the maximum {MAX_PAYLOAD_LEN}"
            ));
        }
        Ok(Self {
            kind,
            key_groups: KeyGroupRange::new(start, end),
            payload_len,
            payload_crc32c: u32_at(20),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_is_wrsb_on_disk() {
        assert_eq!(&BLOCK_MAGIC.to_le_bytes(), b"WRSB");
    }

    #[test]
    fn padded_lengths() {
        assert_eq!(padded_block_len(0), 4096);
        assert_eq!(padded_block_len(4096 - 28), 4096);
        assert_eq!(padded_block_len(4096 - 27), 8192);
        assert_eq!(
            padded_block_len(MAX_PAYLOAD_LEN),
            u64::from(u32::MAX) + 1 - 4096
        );
    }

    #[test]
    fn kinds_round_trip() {
        for v in 0..=10u16 {
            if let Some(k) = BlockKind::from_u16(v) {
                assert_eq!(k.as_u16(), v);
            }
        }
        assert_eq!(BlockKind::from_u16(0), None);
        assert_eq!(BlockKind::from_u16(7), None);
    }

    #[test]
    fn encode_and_seal_write_the_same_bytes() {
        for len in [0usize, 1, 4068, 4069, 10_000] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let n = padded_block_len(len as u32) as usize;
            let range = KeyGroupRange::new(2, 9);
            // Dirty buffers: padding must be zeroed, not assumed zero.
            let mut encoded = vec![0xa5u8; n];
            let crc = encode_block(&mut encoded, BlockKind::KeyedState, range, &payload);
            assert_eq!(crc, crc32c::crc32c(&payload));
            let mut sealed = vec![0x5au8; n];
            sealed[BLOCK_HEADER_LEN..][..len].copy_from_slice(&payload);
            let crc2 = seal_block(&mut sealed, BlockKind::KeyedState, range, len as u32);
            assert_eq!(crc2, crc);
            assert_eq!(encoded, sealed);
            let mut raw = [0u8; BLOCK_HEADER_LEN];
            raw.copy_from_slice(&encoded[..BLOCK_HEADER_LEN]);
            let header = BlockHeader::decode(&raw).unwrap();
            assert_eq!(header.payload_len as usize, len);
            assert_eq!(header.payload_crc32c, crc);
            assert_eq!(&encoded[BLOCK_HEADER_LEN..][..len], &payload[..]);
            assert!(encoded[BLOCK_HEADER_LEN + len..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    #[should_panic(expected = "block buffer of 4095 bytes for a payload of 1 bytes: expected 4096")]
    fn encode_refuses_a_buffer_of_the_wrong_length() {
        encode_block(
            &mut [0; 4095],
            BlockKind::Opaque,
            KeyGroupRange::new(0, 0),
            &[1],
        );
    }

    #[test]
    fn header_round_trip_and_every_flip_detected() {
        let h = BlockHeader {
            kind: BlockKind::OperatorState,
            key_groups: KeyGroupRange::new(3, 17),
            payload_len: 12345,
            payload_crc32c: 0xdead_beef,
        };
        let bytes = h.encode();
        assert_eq!(BlockHeader::decode(&bytes), Ok(h));
        for i in 0..BLOCK_HEADER_LEN {
            for bit in 0..8 {
                let mut b = bytes;
                b[i] ^= 1 << bit;
                assert!(BlockHeader::decode(&b).is_err(), "byte {i} bit {bit}");
            }
        }
    }
}
