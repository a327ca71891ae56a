//! Byte ranges: how the file source cuts files into splits, who reads each
//! one, and how a split is stored in a checkpoint.
//!
//! A file of `len` bytes is cut into ranges `[k·R, min((k+1)·R, len))` of
//! the range size `R`; an empty file has none. A range owns the lines that
//! *start* in it (Hadoop's and Flink's rule): its reader skips the partial
//! first line unless the range starts at offset 0 (or just after a
//! newline), and reads past the range's end to finish its last line. So
//! every line belongs to exactly one range, however the ranges fall.
//!
//! Range `k` of file `name` is read by subtask `(fnv1a(name) + k) mod P`: a
//! function of the name alone, so every subtask, listing the directory on
//! its own and at its own time, agrees on the owner of every range without
//! talking to the others, and the ranges of one big file go round the
//! subtasks.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// One stored range: `(name, start, end, next, lines)`: the file's name
/// (bytes), the range `[start, end)`, the file offset `next` where reading
/// resumes (`start`, or just after the last emitted line) and how many
/// lines of the range were read before `next`.
pub type StoredRange = (Vec<u8>, u64, u64, u64, u64);

/// One claimed range: `(name, start, file length)`.
pub type StoredClaim = (Vec<u8>, u64, u64);

/// A range of one file and how far it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range {
    /// The file's name in the directory.
    pub name: OsString,
    /// The first byte of the range.
    pub start: u64,
    /// Just after the last byte: the range owns the lines starting before.
    pub end: u64,
    /// Where reading resumes: `start`, or just after the last line read.
    pub next: u64,
    /// Lines of the range read before `next`.
    pub lines: u64,
}

impl Range {
    /// The range's stored form.
    pub fn store(&self) -> StoredRange {
        (
            self.name.as_bytes().to_vec(),
            self.start,
            self.end,
            self.next,
            self.lines,
        )
    }

    /// A range from its stored form.
    pub fn load((name, start, end, next, lines): StoredRange) -> Self {
        Self {
            name: OsStr::from_bytes(&name).to_owned(),
            start,
            end,
            next,
            lines,
        }
    }

    /// Whether `next`'s line number in the file is known: the range starts
    /// the file.
    pub fn numbers_lines(&self) -> bool {
        self.start == 0
    }
}

/// The starts of the ranges of a file of `len` bytes cut every `size`
/// bytes, with their ends.
pub fn cut(len: u64, size: u64) -> impl Iterator<Item = (u64, u64)> {
    let size = size.max(1);
    (0..len.div_ceil(size)).map(move |k| (k * size, ((k + 1) * size).min(len)))
}

/// How a file's bytes are compressed, by its name's extension, as Flink's
/// file source decompresses them (`StandardDeCompressors`): `.gz` and
/// `.gzip` (gzip, concatenated members too), `.deflate` (zlib).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain text.
    None,
    /// gzip.
    Gzip,
    /// zlib-wrapped deflate.
    Deflate,
}

impl Compression {
    /// The compression of file `name` (ASCII case ignored).
    pub fn of(name: &[u8]) -> Self {
        let ends = |ext: &[u8]| {
            name.len() > ext.len() && name[name.len() - ext.len()..].eq_ignore_ascii_case(ext)
        };
        if ends(b".gz") || ends(b".gzip") {
            Compression::Gzip
        } else if ends(b".deflate") {
            Compression::Deflate
        } else {
            Compression::None
        }
    }
}

/// The ranges of file `name`, `len` bytes long on disk: cut every `size`
/// bytes ([`cut`]), or for a compressed file, which cannot be read from
/// the middle, one range over all its text (its offsets are those of the
/// decompressed text, whose end is known only once read: `u64::MAX`).
pub fn ranges_of(name: &[u8], len: u64, size: u64) -> Vec<(u64, u64)> {
    if Compression::of(name) == Compression::None {
        cut(len, size).collect()
    } else if len == 0 {
        Vec::new()
    } else {
        vec![(0, u64::MAX)]
    }
}

/// The subtask of `parallelism` reading the range starting at `start` of
/// file `name` cut every `size` bytes.
pub fn owner(name: &[u8], start: u64, size: u64, parallelism: usize) -> usize {
    let k = start / size.max(1);
    (fnv1a(name).wrapping_add(k) % parallelism.max(1) as u64) as usize
}

/// FNV-1a, 64 bits: stable across processes and versions (a checkpoint's
/// owners must not change with the standard library's hasher).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_covers_the_file_once() {
        assert_eq!(cut(0, 4).count(), 0);
        assert_eq!(cut(3, 4).collect::<Vec<_>>(), vec![(0, 3)]);
        assert_eq!(cut(8, 4).collect::<Vec<_>>(), vec![(0, 4), (4, 8)]);
        assert_eq!(cut(9, 4).collect::<Vec<_>>(), vec![(0, 4), (4, 8), (8, 9)]);
    }

    #[test]
    fn a_compressed_file_is_one_range() {
        assert_eq!(Compression::of(b"a.csv.gz"), Compression::Gzip);
        assert_eq!(Compression::of(b"A.CSV.GZIP"), Compression::Gzip);
        assert_eq!(Compression::of(b"x.deflate"), Compression::Deflate);
        assert_eq!(Compression::of(b".gz"), Compression::None);
        assert_eq!(Compression::of(b"gz"), Compression::None);
        assert_eq!(Compression::of(b"a.csv"), Compression::None);
        assert_eq!(ranges_of(b"a.gz", 100, 4), vec![(0, u64::MAX)]);
        assert_eq!(ranges_of(b"a.gz", 0, 4), vec![]);
        assert_eq!(ranges_of(b"a.csv", 9, 4), vec![(0, 4), (4, 8), (8, 9)]);
    }

    #[test]
    fn the_ranges_of_a_file_go_round_the_subtasks() {
        let owners: Vec<usize> = cut(40, 4).map(|(s, _)| owner(b"big", s, 4, 3)).collect();
        for w in owners.windows(2) {
            assert_eq!(w[1], (w[0] + 1) % 3);
        }
        // Stable: a checkpoint's owners are the same in every process.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
