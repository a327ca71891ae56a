//! The file sink's checkpointed state: the pending transactions of a
//! subtask and the writer name their files carry.
//!
//! Version 1 (older weir, and a sink without a writer): a version byte `1`,
//! the count as an unsigned LEB128 varint, then the ids as varints, the
//! first in full and each next one as its (positive) difference from the
//! previous. Version 2 (a sink with a writer): a version byte `2`, the
//! writer name's length as a varint and its UTF-8 bytes, then the count
//! and the ids as in version 1. A version 1 state names its files without
//! a writer, so a checkpoint of older weir restores its pending files.

use crate::connectors::error::{SinkStateDefect, SinkStateField};

/// Version byte of a state without a writer name.
const WITHOUT_WRITER: u8 = 1;

/// Version byte of a state with a writer name.
const WITH_WRITER: u8 = 2;

/// What a restored state lists: the pending transactions of one subtask and
/// the writer their files are named after.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Transactions {
    /// `None` for a version 1 state: names without a writer.
    pub(super) writer: Option<String>,
    /// Increasing transaction ids.
    pub(super) ids: Vec<u64>,
}

/// Whether `bytes` is a state written without a writer name (older weir).
pub(super) fn without_writer(bytes: &[u8]) -> bool {
    bytes.first() == Some(&WITHOUT_WRITER)
}

/// Encodes increasing transaction ids of `writer`'s files (see the module
/// doc).
pub(super) fn encode_state(writer: Option<&str>, ids: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + writer.map_or(0, |w| 2 + w.len()) + ids.len() * 2);
    match writer {
        None => out.push(WITHOUT_WRITER),
        Some(w) => {
            out.push(WITH_WRITER);
            put_varint(&mut out, w.len() as u64);
            out.extend_from_slice(w.as_bytes());
        }
    }
    put_varint(&mut out, ids.len() as u64);
    let mut prev = 0;
    for (i, &id) in ids.iter().enumerate() {
        put_varint(&mut out, if i == 0 { id } else { id - prev });
        prev = id;
    }
    out
}

/// Decodes a state of checkpoint `checkpoint_id`; the error says what is
/// wrong.
pub(super) fn decode_state(
    bytes: &[u8],
    checkpoint_id: u64,
) -> Result<Transactions, SinkStateDefect> {
    let (&version, mut rest) = bytes.split_first().ok_or(SinkStateDefect::Empty)?;
    let writer = match version {
        WITHOUT_WRITER => None,
        WITH_WRITER => {
            let len = get_varint(&mut rest, SinkStateField::WriterLength)?;
            if len == 0 || len > rest.len() as u64 {
                return Err(SinkStateDefect::WriterLength {
                    len,
                    left: rest.len(),
                });
            }
            let (name, after) = rest.split_at(len as usize);
            let name = std::str::from_utf8(name).map_err(|_| SinkStateDefect::WriterName)?;
            if name.contains(['/', '\0']) {
                return Err(SinkStateDefect::WriterName);
            }
            rest = after;
            Some(name.to_owned())
        }
        found => {
            return Err(SinkStateDefect::Version {
                found,
                expected: WITH_WRITER,
            })
        }
    };
    let count = get_varint(&mut rest, SinkStateField::Count)?;
    if count > rest.len() as u64 {
        return Err(SinkStateDefect::Count {
            count,
            left: rest.len(),
        });
    }
    let mut ids = Vec::with_capacity(count as usize);
    for i in 0..count {
        let v = get_varint(&mut rest, SinkStateField::Transaction(i))?;
        let id = match ids.last() {
            None => v,
            Some(&prev) if v == 0 => return Err(SinkStateDefect::NotIncreasing(prev)),
            Some(&prev) => {
                u64::checked_add(prev, v).ok_or(SinkStateDefect::Overflow { prev, delta: v })?
            }
        };
        if id > checkpoint_id {
            return Err(SinkStateDefect::NewerThanCheckpoint(id));
        }
        ids.push(id);
    }
    if !rest.is_empty() {
        return Err(SinkStateDefect::TrailingBytes(rest.len()));
    }
    Ok(Transactions { writer, ids })
}

/// Appends `v` as an unsigned LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads an unsigned LEB128 varint from the front of `bytes`.
fn get_varint(bytes: &mut &[u8], what: SinkStateField) -> Result<u64, SinkStateDefect> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate() {
        let shift = 7 * i as u32;
        if shift > 63 || (shift == 63 && b & 0x7f > 1) {
            return Err(SinkStateDefect::TooLong(what));
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Ok(v);
        }
    }
    Err(SinkStateDefect::Truncated(what))
}
