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
}

impl BlockKind {
    /// The kind with number `v`, if it is one.
    pub const fn from_u16(v: u16) -> Option<Self> {
        match v {
            1 => Some(Self::KeyedState),
            2 => Some(Self::OperatorState),
            3 => Some(Self::ChannelState),
            4 => Some(Self::Opaque),
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
        assert_eq!(BlockKind::from_u16(5), None);
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
