//! The compact binary form of records inside network buffers.
//!
//! A record type implements [`Wire`]: it says how many bytes it needs, writes
//! itself into a slice of exactly that size, and reads itself back from the
//! front of a slice. Integers are little-endian; byte strings carry a `u32`
//! length prefix. Records are read in place from the buffer they arrived in:
//! nothing is copied into an intermediate allocation.

use std::fmt;

/// A record that cannot be decoded: the buffer ended early or held bytes
/// that are not a valid value. Buffers are written by weir itself, so this
/// points at a bug or at corruption, never at a user mistake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// What was being decoded.
    pub what: &'static str,
    /// Bytes needed.
    pub needed: usize,
    /// Bytes available.
    pub available: usize,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed record: decoding {} needs {} bytes, {} left in the buffer",
            self.what, self.needed, self.available
        )
    }
}

impl std::error::Error for DecodeError {}

/// A value that can travel through a network buffer.
pub trait Wire: Sized + Send + 'static {
    /// Bytes [`Wire::write`] produces for this value.
    fn encoded_len(&self) -> usize;
    /// Writes the value into `out`, whose length is exactly `encoded_len()`.
    fn write(&self, out: &mut [u8]);
    /// Reads a value from the front of `input`; returns it and the bytes used.
    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError>;
    /// The encoded length of every value, for types whose values all
    /// encode to the same number of bytes (integers, `bool`, tuples of
    /// such); `None` (the default) for the others. A tuple of fixed-length
    /// fields checks its input's length once instead of once per field.
    const FIXED_LEN: Option<usize> = None;
}

#[inline(always)]
fn need(what: &'static str, input: &[u8], n: usize) -> Result<(), DecodeError> {
    if input.len() < n {
        Err(DecodeError {
            what,
            needed: n,
            available: input.len(),
        })
    } else {
        Ok(())
    }
}

macro_rules! wire_int {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            const FIXED_LEN: Option<usize> = Some(std::mem::size_of::<$t>());
            #[inline(always)]
            fn encoded_len(&self) -> usize {
                std::mem::size_of::<$t>()
            }
            #[inline(always)]
            fn write(&self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            #[inline(always)]
            fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
                const N: usize = std::mem::size_of::<$t>();
                need(stringify!($t), input, N)?;
                let mut bytes = [0u8; N];
                bytes.copy_from_slice(&input[..N]);
                Ok((<$t>::from_le_bytes(bytes), N))
            }
        }
    )*};
}
wire_int!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64);

impl Wire for bool {
    const FIXED_LEN: Option<usize> = Some(1);
    #[inline(always)]
    fn encoded_len(&self) -> usize {
        1
    }
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        out[0] = u8::from(*self);
    }
    #[inline(always)]
    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        need("bool", input, 1)?;
        match input[0] {
            0 => Ok((false, 1)),
            1 => Ok((true, 1)),
            _ => Err(DecodeError {
                what: "bool (byte is neither 0 nor 1)",
                needed: 1,
                available: input.len(),
            }),
        }
    }
}

/// Writes `bytes` after their `u32` length into `out` (exactly
/// `4 + bytes.len()` long): a byte string's encoding.
#[inline(always)]
fn write_byte_string(bytes: &[u8], out: &mut [u8]) {
    let len = u32::try_from(bytes.len()).expect("byte string longer than 4 GiB");
    out[..4].copy_from_slice(&len.to_le_bytes());
    copy_short(bytes, &mut out[4..]);
}

/// `out.copy_from_slice(src)`, by moves of a fixed width for up to 32
/// bytes: a string key's length varies from record to record, and a copy
/// of a run-time length is a `memcpy` call that costs more than the rest
/// of the record's encoding.
#[inline(always)]
fn copy_short(src: &[u8], out: &mut [u8]) {
    let n = src.len();
    assert_eq!(n, out.len(), "copy between slices of different lengths");
    if n > 32 {
        return out.copy_from_slice(src);
    }
    // SAFETY: `src` and `out` are `n` (at most 32) bytes long (asserted
    // above), distinct borrows, so they do not overlap.
    unsafe { copy_short_raw(src.as_ptr(), out.as_mut_ptr(), n) }
}

/// The moves of [`copy_short`]: two that overlap in the middle cover every
/// length of a range, unaligned reads and writes.
///
/// # Safety
///
/// `n` is at most 32, `src` is valid for reading `n` bytes and `dst` for
/// writing `n` bytes, and the two ranges do not overlap. Every byte of
/// `dst[..n]` is written.
#[inline(always)]
unsafe fn copy_short_raw(src: *const u8, dst: *mut u8, n: usize) {
    debug_assert!(n <= 32);
    // SAFETY: every offset and width below lies within `0..n` for each `n`
    // of its arm's range, which the caller's ranges cover.
    unsafe {
        match n {
            0 => {}
            1..=3 => {
                *dst = *src;
                *dst.add(n / 2) = *src.add(n / 2);
                *dst.add(n - 1) = *src.add(n - 1);
            }
            4..=7 => {
                let (a, b) = (src.cast::<u32>(), src.add(n - 4).cast::<u32>());
                let (a, b) = (a.read_unaligned(), b.read_unaligned());
                dst.cast::<u32>().write_unaligned(a);
                dst.add(n - 4).cast::<u32>().write_unaligned(b);
            }
            8..=16 => {
                let (a, b) = (src.cast::<u64>(), src.add(n - 8).cast::<u64>());
                let (a, b) = (a.read_unaligned(), b.read_unaligned());
                dst.cast::<u64>().write_unaligned(a);
                dst.add(n - 8).cast::<u64>().write_unaligned(b);
            }
            _ => {
                let (a, b) = (src.cast::<u128>(), src.add(n - 16).cast::<u128>());
                let (a, b) = (a.read_unaligned(), b.read_unaligned());
                dst.cast::<u128>().write_unaligned(a);
                dst.add(n - 16).cast::<u128>().write_unaligned(b);
            }
        }
    }
}

impl Wire for Vec<u8> {
    fn encoded_len(&self) -> usize {
        4 + self.len()
    }
    fn write(&self, out: &mut [u8]) {
        write_byte_string(self, out);
    }
    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        let (len, _) = u32::read(input)?;
        let total = 4 + len as usize;
        need("byte string", input, total)?;
        Ok((input[4..total].to_vec(), total))
    }
}

/// The text of a length-prefixed string's bytes, or the error naming it.
#[inline]
fn decode_str(bytes: &[u8], total: usize, available: usize) -> Result<&str, DecodeError> {
    // Most keys are short and ASCII: one word-wise check instead of the
    // general UTF-8 validation (measured: a third of a `String`'s decode).
    if bytes.is_ascii() {
        // SAFETY: ASCII bytes are valid UTF-8.
        return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes).map_err(|_| DecodeError {
        what: "string (not UTF-8)",
        needed: total,
        available,
    })
}

/// Inlined, as the `CompactString`'s: a string key is encoded and decoded
/// once per record on each side of an exchange, and the calls (which the
/// compiler had left) cost as much as the short key's bytes.
impl Wire for String {
    #[inline(always)]
    fn encoded_len(&self) -> usize {
        4 + self.len()
    }
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        write_byte_string(self.as_bytes(), out);
    }
    #[inline(always)]
    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        let (len, _) = u32::read(input)?;
        let total = 4 + len as usize;
        need("string", input, total)?;
        let text = decode_str(&input[4..total], total, input.len())?;
        Ok((owned_text(text), total))
    }
}

/// `text.to_owned()`, a text of up to 32 bytes copied by `copy_short`'s
/// moves: `to_owned` copies with a `memcpy` call of the run-time length,
/// which for a short key costs more than the allocation it fills.
#[inline(always)]
fn owned_text(text: &str) -> String {
    let n = text.len();
    if n > 32 {
        return text.to_owned();
    }
    let mut bytes = Vec::<u8>::with_capacity(n);
    // SAFETY: the text is `n` (at most 32) readable bytes and the fresh
    // allocation has room for `n` (none for `n == 0`, where nothing is
    // moved); they do not overlap. `copy_short_raw` writes every byte of
    // `0..n`, so `set_len(n)` exposes initialised bytes only, a copy of a
    // `str`, hence UTF-8.
    unsafe {
        copy_short_raw(text.as_ptr(), bytes.as_mut_ptr(), n);
        bytes.set_len(n);
        String::from_utf8_unchecked(bytes)
    }
}

/// Bytes a `CompactString` holds inline (without allocating).
const COMPACT_INLINE: usize = std::mem::size_of::<compact_str::CompactString>();

/// The same bytes as a `String`'s (either reads what the other wrote); a
/// string of up to 24 bytes lives inline, so decoding, cloning and
/// dropping it allocate nothing.
impl Wire for compact_str::CompactString {
    #[inline(always)]
    fn encoded_len(&self) -> usize {
        4 + self.len()
    }
    /// An inline string is written from the three words it is made of,
    /// not from its bytes: a record's key is a fresh copy (a 16-byte and
    /// an 8-byte store), and `copy_short`'s load of its last eight bytes
    /// starts inside the 16-byte store, which the processor does not
    /// forward: the load waited for the copy to retire (perf: a third to a
    /// half of the quickstart source's samples with compact-string ids).
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        let w = compact_words(self);
        match inline_len(w[2]) {
            Some(n) => {
                let len = u32::try_from(n).unwrap_or(0);
                out[..4].copy_from_slice(&len.to_le_bytes());
                write_words(w, &mut out[4..4 + n]);
            }
            None => write_byte_string(self.as_bytes(), out),
        }
    }
    #[inline(always)]
    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        // The words cross the `Option` as plain integers and become the
        // string only here: an `Option<CompactString>` is moved in a
        // 23-byte piece and its tag byte (the niche in the string's last
        // byte), whose loads straddle the three word stores that built
        // it and wait for them (measured: the receiver 38% slower).
        match inline_ascii_words(input) {
            // SAFETY: `inline_ascii_words` returns the words of an inline
            // string of `len` ASCII bytes as `compact_from_words` asks.
            Some((words, len)) => Ok((unsafe { compact_from_words(words) }, 4 + len)),
            None => read_compact(input),
        }
    }
}

/// [`compact_str::CompactString::read`] of any input: a string at a
/// buffer's end, of 24 bytes or more, not ASCII, or malformed. Out of line,
/// so the common case's loop stays small.
#[inline(never)]
fn read_compact(input: &[u8]) -> Result<(compact_str::CompactString, usize), DecodeError> {
    let (len, _) = u32::read(input)?;
    let total = 4 + len as usize;
    need("string", input, total)?;
    let text = decode_str(&input[4..total], total, input.len())?;
    if text.len() > COMPACT_INLINE {
        return Ok((compact_str::CompactString::new(text), total));
    }
    // SAFETY: `inline_words` lays out a text of at most 24 bytes as
    // `compact_from_words` asks.
    Ok((
        unsafe { compact_from_words(inline_words(text.as_bytes())) },
        total,
    ))
}

/// `0xFF` for each of a string's bytes and `0` after them: the three words
/// at `INLINE_MASK[COMPACT_INLINE - len..]` keep the first `len` bytes of
/// a 24-byte window.
static INLINE_MASK: [u8; 2 * COMPACT_INLINE] = {
    let mut m = [0u8; 2 * COMPACT_INLINE];
    let mut i = 0;
    while i < COMPACT_INLINE {
        m[i] = 0xFF;
        i += 1;
    }
    m
};

/// The common case of [`compact_str::CompactString::read`]: an ASCII
/// string shorter than 24 bytes whose length prefix and a whole 24-byte
/// window after it lie in `input` (every record but those at a buffer's
/// end). The window is read as three words and the bytes past the string
/// masked off, so no load depends on the length's range, and a string of
/// any length is checked for ASCII with one test. Returns the words of the
/// inline string (its length mark in the last byte) and its length; `None`
/// for any other input, which the general path reads (and rejects if it is
/// malformed).
#[inline(always)]
fn inline_ascii_words(input: &[u8]) -> Option<([u64; 3], usize)> {
    let window = input.get(..4 + COMPACT_INLINE)?;
    let len = u32::from_le_bytes(window[..4].try_into().unwrap_or([0; 4])) as usize;
    if len >= COMPACT_INLINE {
        return None;
    }
    let word = |bytes: &[u8], at: usize| {
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]))
    };
    let mask = &INLINE_MASK[COMPACT_INLINE - len..];
    let mut words = [
        word(window, 4) & word(mask, 0),
        word(window, 12) & word(mask, 8),
        word(window, 20) & word(mask, 16),
    ];
    if (words[0] | words[1] | words[2]) & 0x8080_8080_8080_8080 != 0 {
        return None;
    }
    // The bytes past the string are zero (masked) up to the last one,
    // which takes the inline length mark.
    words[2] |= u64::from(inline_length_byte(len)) << 56;
    Some((words, len))
}

/// The inline `CompactString` whose 24 bytes are `words`.
///
/// Written as the three words it is made of: each store is a whole word
/// that a later load of the string (the key's clone, the record's moves)
/// reads back in one piece. Bytes written piecemeal (a zeroed buffer, two
/// overlapping copies of the text, a length byte) are read back across
/// stores of other widths, which the processor cannot forward and waits
/// for.
///
/// # Safety
///
/// `words` (little-endian) must hold a valid UTF-8 text of `len` bytes
/// (at most 24) in its first `len` bytes, zeros after it, and, for a text
/// shorter than 24 bytes, in the last byte the length as `compact_str`
/// marks an inline length (`0xC0 | len`). [`inline_words`] builds such
/// words from any text of at most 24 bytes.
#[inline(always)]
unsafe fn compact_from_words(words: [u64; 3]) -> compact_str::CompactString {
    let mut s = compact_str::CompactString::with_capacity(0);
    // SAFETY: an empty `CompactString` made with capacity 0 is inline, so
    // its buffer is the `COMPACT_INLINE` bytes of the value itself. The
    // caller hands over the bytes of an inline string of this version of
    // `compact_str` (a text of exactly 24 bytes ends in its own last byte,
    // which as the end of a UTF-8 text is below 0xC0). The tests compare
    // every length with `CompactString::new`.
    unsafe {
        let buf = s.as_mut_bytes();
        for (i, w) in words.iter().enumerate() {
            buf[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
    }
    s
}

/// The three little-endian words a `CompactString` value is made of.
#[inline(always)]
fn compact_words(s: &compact_str::CompactString) -> [u64; 3] {
    const _: () = assert!(COMPACT_INLINE == 24);
    let p = (s as *const compact_str::CompactString).cast::<u64>();
    // Three word loads, not one of the array: the compiler moved an array
    // as a 16-byte and an 8-byte piece, and the 16-byte load straddled two
    // of the word stores that had just copied the key, which the processor
    // does not forward either.
    [0, 1, 2].map(|i| {
        // SAFETY: `s` refers to a live `CompactString` of exactly 24 bytes
        // (asserted above), so word `i < 3` lies inside it, and
        // `read_unaligned` asks nothing of the alignment. Every byte of
        // each of its representations is initialised (an inline one is the
        // text, zeros and the length mark; a heap one a pointer, a length
        // and a capacity word; a static one a pointer, a length and a tag).
        // The words are only taken apart as an inline value's text, never
        // used as a pointer.
        u64::from_le(unsafe { std::ptr::read_unaligned(p.add(i)) })
    })
}

/// The length of the inline value whose last word is `last`, or `None`
/// for a heap or static one: the last byte is `0xC0 | len` below 24
/// bytes; a 24-byte inline text ends in its own last byte, below 0xC0 (no
/// UTF-8 text ends in a lead byte); other values end in a tag above
/// `0xC0 | 23`.
#[inline(always)]
fn inline_len(last: u64) -> Option<usize> {
    let mark = (last >> 56) as u8;
    if mark < inline_length_byte(0) {
        return Some(COMPACT_INLINE);
    }
    let n = usize::from(mark - inline_length_byte(0));
    (n < COMPACT_INLINE).then_some(n)
}

/// Writes the first `out.len()` (at most 24) bytes of the little-endian
/// `words` into `out`, by stores of a fixed width made from the words in
/// registers (two that overlap in the middle cover every length of a
/// range, as in `copy_short`), never loading the bytes from memory.
#[inline(always)]
fn write_words(w: [u64; 3], out: &mut [u8]) {
    let n = out.len();
    debug_assert!(n <= COMPACT_INLINE);
    // The eight bytes from byte `at` (0 to 16) of the 24.
    let at = |at: usize| -> u64 {
        let (i, k) = (at / 8, (at % 8) as u32 * 8);
        if k == 0 {
            w[i]
        } else {
            (w[i] >> k) | (w[i + 1] << (64 - k))
        }
    };
    match n {
        0 => {}
        1..=3 => {
            out[0] = w[0] as u8;
            out[n / 2] = (w[0] >> (8 * (n / 2))) as u8;
            out[n - 1] = (w[0] >> (8 * (n - 1))) as u8;
        }
        4..=7 => {
            out[..4].copy_from_slice(&(w[0] as u32).to_le_bytes());
            out[n - 4..].copy_from_slice(&((w[0] >> (8 * (n - 4))) as u32).to_le_bytes());
        }
        8..=16 => {
            out[..8].copy_from_slice(&w[0].to_le_bytes());
            out[n - 8..].copy_from_slice(&at(n - 8).to_le_bytes());
        }
        _ => {
            out[..8].copy_from_slice(&w[0].to_le_bytes());
            out[8..16].copy_from_slice(&w[1].to_le_bytes());
            out[n - 8..].copy_from_slice(&at(n - 8).to_le_bytes());
        }
    }
}

/// The last byte of an inline `CompactString` of `len` (below 24) bytes.
const fn inline_length_byte(len: usize) -> u8 {
    0xC0 | len as u8
}

/// The 24 bytes of an inline `CompactString` holding `bytes` (at most 24),
/// as three little-endian words, built from loads of a fixed width.
#[inline(always)]
fn inline_words(bytes: &[u8]) -> [u64; 3] {
    let n = bytes.len();
    debug_assert!(n <= COMPACT_INLINE);
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
    let mut w = [0u64; 3];
    match n {
        0 => {}
        1..=3 => {
            w[0] = u64::from(bytes[0])
                | u64::from(bytes[n / 2]) << (8 * (n / 2))
                | u64::from(bytes[n - 1]) << (8 * (n - 1));
        }
        4..=7 => {
            let half =
                |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
            w[0] = u64::from(half(0)) | u64::from(half(n - 4)) << (8 * (n - 4));
        }
        8 => w[0] = word(0),
        9..=16 => {
            w[0] = word(0);
            // The last eight bytes, without the first word's share.
            w[1] = word(n - 8) >> (8 * (16 - n));
        }
        _ => {
            w[0] = word(0);
            w[1] = word(8);
            w[2] = word(n - 8) >> (8 * (24 - n));
        }
    }
    if n < COMPACT_INLINE {
        w[2] |= u64::from(inline_length_byte(n)) << 56;
    }
    w
}

/// `None` is one byte 0; `Some(v)` is a byte 1 and then `v`.
impl<T: Wire> Wire for Option<T> {
    fn encoded_len(&self) -> usize {
        1 + self.as_ref().map_or(0, Wire::encoded_len)
    }
    fn write(&self, out: &mut [u8]) {
        match self {
            None => out[0] = 0,
            Some(v) => {
                out[0] = 1;
                v.write(&mut out[1..]);
            }
        }
    }
    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        need("option", input, 1)?;
        match input[0] {
            0 => Ok((None, 1)),
            1 => {
                let (v, n) = T::read(&input[1..])?;
                Ok((Some(v), 1 + n))
            }
            _ => Err(DecodeError {
                what: "option (tag is neither 0 nor 1)",
                needed: 1,
                available: input.len(),
            }),
        }
    }
}

macro_rules! wire_tuple {
    ($($name:ident : $idx:tt),+) => {
        impl<$($name: Wire),+> Wire for ($($name,)+) {
            const FIXED_LEN: Option<usize> = {
                let total = Some(0);
                $(
                    let total = match (total, $name::FIXED_LEN) {
                        (Some(t), Some(n)) => Some(t + n),
                        _ => None,
                    };
                )+
                total
            };
            #[inline(always)]
            fn encoded_len(&self) -> usize {
                match Self::FIXED_LEN {
                    Some(n) => n,
                    None => 0 $(+ self.$idx.encoded_len())+,
                }
            }
            #[inline(always)]
            fn write(&self, out: &mut [u8]) {
                let mut at = 0;
                $(
                    let n = self.$idx.encoded_len();
                    self.$idx.write(&mut out[at..at + n]);
                    at += n;
                )+
                debug_assert_eq!(at, out.len());
            }
            #[inline(always)]
            fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
                if let Some(n) = Self::FIXED_LEN {
                    // One check for every field: the fields' own checks
                    // below then always pass, and the compiler drops them.
                    need("tuple", input, n)?;
                }
                let mut at = 0;
                Ok((($(
                    {
                        let (v, n) = $name::read(&input[at..])?;
                        at += n;
                        v
                    },
                )+), at))
            }
        }
    };
}
wire_tuple!(A: 0);
wire_tuple!(A: 0, B: 1);
wire_tuple!(A: 0, B: 1, C: 2);
wire_tuple!(A: 0, B: 1, C: 2, D: 3);
wire_tuple!(A: 0, B: 1, C: 2, D: 3, E: 4);

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Wire + PartialEq + fmt::Debug>(v: T) {
        let mut buf = vec![0u8; v.encoded_len()];
        v.write(&mut buf);
        let (back, n) = T::read(&buf).unwrap();
        assert_eq!(n, buf.len());
        assert_eq!(back, v);
    }

    #[test]
    fn values_round_trip() {
        round_trip(7u64);
        round_trip(-3i32);
        round_trip(true);
        round_trip((1u64, 2u64, 3u64));
        round_trip(("sensor-7".to_string(), 21.5f64));
        round_trip(vec![1u8, 2, 3]);
        round_trip(Some("x".to_string()));
        round_trip("Zürich, ünïcødé".to_string());
        round_trip(String::new());
        round_trip(compact_str::CompactString::new("user-42"));
        round_trip(compact_str::CompactString::new(
            "a string longer than twenty-four bytes, ü",
        ));
        round_trip(None::<u64>);
        round_trip((Some(3u32), None::<String>));
    }

    /// Every length from 0 to 40 (each width of `copy_short`'s moves
    /// and the copy past them): the bytes written are the string's.
    #[test]
    fn byte_strings_of_every_length_round_trip() {
        let text: Vec<u8> = (0u8..40).map(|i| b'a' + i % 26).collect();
        for n in 0..=text.len() {
            let bytes = text[..n].to_vec();
            let mut buf = vec![0xAAu8; bytes.encoded_len()];
            bytes.write(&mut buf);
            assert_eq!(buf[..4], (n as u32).to_le_bytes());
            assert_eq!(buf[4..], text[..n]);
            round_trip(bytes);
            round_trip(String::from_utf8(text[..n].to_vec()).unwrap());
            // Inline up to 24 bytes, on the heap past that; written from
            // its words or its bytes, the same bytes as the `Vec`'s.
            let compact = compact_str::CompactString::from_utf8(&text[..n]).unwrap();
            let mut out = vec![0x55u8; compact.encoded_len()];
            compact.write(&mut out);
            assert_eq!(out, buf, "{n} bytes");
            round_trip(compact);
        }
    }

    /// A shortened inline string keeps bytes past its end in its words;
    /// only its text is written, whatever its last character's width.
    #[test]
    fn compact_strings_write_only_their_text() {
        for last in ["a", "é", "€", "𝄞"] {
            for n in last.len()..=COMPACT_INLINE {
                let text = "x".repeat(n - last.len()) + last;
                // 24 bytes inline, then shortened to the text.
                let full = format!("{text}{}", "y".repeat(COMPACT_INLINE - n));
                let mut shortened = compact_str::CompactString::new(full);
                shortened.truncate(n);
                assert!(!shortened.is_heap_allocated());
                for v in [shortened, compact_str::CompactString::new(&text)] {
                    let mut out = vec![0u8; v.encoded_len()];
                    v.write(&mut out);
                    assert_eq!(out[..4], (text.len() as u32).to_le_bytes());
                    assert_eq!(&out[4..], text.as_bytes(), "{text:?}");
                }
            }
        }
    }

    /// The word-built inline decode makes the very value `compact_str`
    /// makes: every inline length, ending in one- to four-byte characters,
    /// is equal, as long, inline, and grows as the library's own does.
    #[test]
    fn compact_strings_decode_as_the_library_builds_them() {
        for last in ["a", "é", "€", "𝄞"] {
            for n in last.len()..=COMPACT_INLINE {
                let text = "x".repeat(n - last.len()) + last;
                let expected = compact_str::CompactString::new(&text);
                let mut buf = vec![0u8; expected.encoded_len() + 3];
                expected.write(&mut buf[..expected.encoded_len()]);
                let (mut got, used) = compact_str::CompactString::read(&buf).unwrap();
                assert_eq!(used, 4 + n);
                assert_eq!(got, expected, "{text:?}");
                assert_eq!((got.len(), got.as_str()), (n, text.as_str()));
                assert!(!got.is_heap_allocated(), "{text:?}");
                assert_eq!(got.capacity(), COMPACT_INLINE);
                got.push_str("!");
                assert_eq!(got, text.clone() + "!");
            }
        }
    }

    /// The masked 24-byte window reads the same strings whatever follows
    /// them in the buffer (the next record), and leaves text that is not
    /// ASCII, or too long to be inline, to the general path.
    #[test]
    fn compact_strings_read_alike_whatever_follows_them() {
        for text in [
            "",
            "a",
            "user-7",
            "user-9999",
            "ü",
            "x€y",
            "exactly-twenty-three-by",
        ] {
            for next in [0u8, b'z', 0xFF] {
                for n in [text.len(), COMPACT_INLINE + 4] {
                    let s = compact_str::CompactString::new(text);
                    let mut buf = vec![next; s.encoded_len() + n];
                    s.write(&mut buf[..s.encoded_len()]);
                    let (got, used) = compact_str::CompactString::read(&buf).unwrap();
                    assert_eq!((got.as_str(), used), (text, s.encoded_len()));
                    assert_eq!(got, s);
                    assert!(!got.is_heap_allocated());
                    assert_eq!(
                        inline_ascii_words(&buf).is_some(),
                        text.is_ascii() && buf.len() >= 4 + COMPACT_INLINE,
                        "{text:?} before {n} bytes of {next}"
                    );
                }
            }
        }
        // A 24-byte string is never read as an inline one shorter.
        let long = compact_str::CompactString::new("twenty-four bytes of txt");
        let mut buf = vec![b'a'; long.encoded_len() + 8];
        long.write(&mut buf[..long.encoded_len()]);
        assert!(inline_ascii_words(&buf).is_none());
        assert_eq!(compact_str::CompactString::read(&buf).unwrap().0, long);
    }

    #[test]
    fn a_string_and_a_compact_string_read_each_others_bytes() {
        for text in [
            "",
            "user-7",
            "Zürich ünïcødé, and more than twenty-four bytes",
        ] {
            let s = text.to_string();
            let mut buf = vec![0u8; s.encoded_len()];
            s.write(&mut buf);
            let (c, n) = compact_str::CompactString::read(&buf).unwrap();
            assert_eq!((c.as_str(), n), (text, buf.len()));
            let mut back = vec![0u8; c.encoded_len()];
            c.write(&mut back);
            assert_eq!(back, buf);
        }
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        let v = ("hello".to_string(), 5u64);
        let mut buf = vec![0u8; v.encoded_len()];
        v.write(&mut buf);
        for cut in 0..buf.len() {
            assert!(<(String, u64)>::read(&buf[..cut]).is_err(), "cut at {cut}");
        }
        assert!(bool::read(&[2]).is_err());
        assert!(String::read(&[2, 0, 0, 0, 0xff, 0xfe]).is_err());
        assert!(compact_str::CompactString::read(&[2, 0, 0, 0, 0xff, 0xfe]).is_err());
    }

    #[test]
    fn fixed_lengths_are_known_for_fixed_types_only() {
        assert_eq!(u64::FIXED_LEN, Some(8));
        assert_eq!(bool::FIXED_LEN, Some(1));
        assert_eq!(<(u64, u64)>::FIXED_LEN, Some(16));
        assert_eq!(<(u8, (i32, bool), f64)>::FIXED_LEN, Some(14));
        assert_eq!(String::FIXED_LEN, None);
        assert_eq!(<(u64, String)>::FIXED_LEN, None);
        assert_eq!(<(Vec<u8>, u64, u64)>::FIXED_LEN, None);
        assert_eq!((1u8, (2i32, true), 3.0f64).encoded_len(), 14);
        assert_eq!((1u64, "ab".to_string()).encoded_len(), 14);
    }

    #[test]
    fn a_truncated_fixed_tuple_is_one_error_for_the_whole_tuple() {
        let v = (7u64, (9u32, true));
        let mut buf = vec![0u8; v.encoded_len()];
        v.write(&mut buf);
        for cut in 0..buf.len() {
            let e = <(u64, (u32, bool))>::read(&buf[..cut]).unwrap_err();
            assert_eq!((e.what, e.needed, e.available), ("tuple", 13, cut));
        }
        assert_eq!(<(u64, (u32, bool))>::read(&buf).unwrap(), (v, 13));
        // The fields' own checks still apply: a bad bool is still refused.
        buf[12] = 2;
        assert!(<(u64, (u32, bool))>::read(&buf).is_err());
    }

    /// Decodes `bytes` as a `T`; on success checks the length it claims and
    /// that the value encodes to exactly the bytes it was read from.
    fn canonical<T: Wire + PartialEq + fmt::Debug>(bytes: &[u8]) -> Option<(T, usize)> {
        let (v, n) = T::read(bytes).ok()?;
        assert!(n <= bytes.len(), "read {n} of {} bytes", bytes.len());
        assert_eq!(v.encoded_len(), n, "{v:?}");
        let mut again = vec![0u8; n];
        v.write(&mut again);
        assert_eq!(again, bytes[..n], "{v:?} re-encoded");
        Some((v, n))
    }

    /// Byte strings whose length prefix is mostly small enough to fit what
    /// follows (random prefixes almost never do).
    fn framed() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        (
            0u32..40,
            prop::collection::vec(any::<u8>(), 0..64),
            any::<bool>(),
        )
            .prop_map(|(len, mut rest, ascii)| {
                if ascii {
                    rest.iter_mut().for_each(|b| *b &= 0x7F);
                }
                let mut bytes = len.to_le_bytes().to_vec();
                bytes.append(&mut rest);
                bytes
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(5_000))]

        /// The decoders of the variable-size types (strings read through
        /// `unsafe` fast paths among them) on any bytes: a value or an
        /// error, never a panic; a `String` and a `CompactString` read the
        /// same text from the same bytes, or both refuse them.
        #[test]
        fn any_bytes_decode_or_are_refused(bytes in proptest::prop_oneof![
            framed(),
            proptest::collection::vec(proptest::arbitrary::any::<u8>(), 0..64),
        ]) {
            let s = canonical::<String>(&bytes);
            let c = canonical::<compact_str::CompactString>(&bytes);
            proptest::prop_assert_eq!(
                s.as_ref().map(|(s, n)| (s.as_str(), *n)),
                c.as_ref().map(|(c, n)| (c.as_str(), *n))
            );
            canonical::<Vec<u8>>(&bytes);
            canonical::<bool>(&bytes);
            canonical::<Option<compact_str::CompactString>>(&bytes);
            canonical::<(u64, String)>(&bytes);
            canonical::<(compact_str::CompactString, u64, Option<u32>)>(&bytes);
        }
    }
}
