//! `CompactString` keys compared by the 24 bytes of the value itself
//! before their text: a probe that finds its key compares three words
//! instead of finding both strings' text and length first (`as_bytes`:
//! a compare, two conditional moves and a clamp, on both sides).
//!
//!
//! An inline key is hashed from the same words too, masked to its length
//! ([`hash`]): reading its bytes at offsets that depend on the length
//! loads a word across two of the stores that had just copied the key,
//! which stalls the load until the stores retire.

use compact_str::CompactString;

/// Bytes of a `CompactString`: three words, whatever it holds.
const REPR_LEN: usize = 24;
const _: () = assert!(std::mem::size_of::<CompactString>() == REPR_LEN);

/// The three words a `CompactString` value is made of.
#[inline(always)]
fn words(s: &CompactString) -> [u64; 3] {
    // SAFETY: `s` is a valid reference to a `CompactString` of exactly
    // `REPR_LEN` bytes (asserted above), so the read stays inside it;
    // `read_unaligned` asks nothing of the alignment. Every byte of a
    // `CompactString` is initialised in each of its representations: an
    // inline one is a 24-byte array (the text, zeros, the length mark),
    // a heap one a pointer, a length and a capacity word, a `&'static
    // str` one a pointer, a length and an 8-byte tag. The words are only
    // compared, or hashed as the text of an inline value; never used as a
    // pointer.
    unsafe { std::ptr::read_unaligned((s as *const CompactString).cast::<[u64; 3]>()) }
}

/// `a == b`. Equal values hold the same text (the same inline bytes, or
/// the same pointer and length), so they are equal without reading it;
/// values that differ may still hold the same text (an inline string that
/// was shortened keeps bytes past its end, two heap strings may hold
/// copies), and those are compared by text.
#[inline(always)]
pub(crate) fn eq(a: &CompactString, b: &CompactString) -> bool {
    let (x, y) = (words(a), words(b));
    if (x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) == 0 {
        return true;
    }
    differ_or_eq(a, b)
}

/// The last byte of an inline value of fewer than 24 bytes: `0xC0 | len`
/// (`compact_str`'s inline length mark). A 24-byte inline text ends in
/// its own last byte, below 0xC0 (no UTF-8 text ends in a lead byte); a
/// heap or `&'static str` value ends in a tag above `0xC0 | 23`.
const INLINE_MARK: u8 = 0xC0;
/// Bytes of text an inline value holds at most.
const INLINE_MAX: usize = REPR_LEN;

/// [`KeyHash::key_hash`](crate::KeyHash::key_hash) of `s`: the hash of its
/// bytes, from its words when it is inline.
#[inline(always)]
pub(crate) fn hash(s: &CompactString) -> u64 {
    let w = words(s);
    let last = (u64::from_le(w[2]) >> 56) as u8;
    let len = if last < INLINE_MARK {
        INLINE_MAX
    } else if usize::from(last - INLINE_MARK) < INLINE_MAX {
        usize::from(last - INLINE_MARK)
    } else {
        // SAFETY: `w` are the words of `s`, live for this call, and its
        // last byte marks a heap or static text.
        return unsafe { hash_outside(w) };
    };
    crate::key_group::hash_words(w.map(u64::from_le), len)
}

/// [`hash`] of a value whose text is on the heap or static, from the
/// value's words: the text's pointer and its length, as `compact_str`'s
/// `as_slice` reads them when the last byte is a heap or static mark.
/// Words, not a reference: a reference handed to a call the compiler
/// cannot see into made it keep the key where it was and copy it into a
/// `KeyContext` afterwards, with a 16-byte load across the 8-byte stores
/// that had just written it.
///
/// # Safety
///
/// `w` must be the words of a `CompactString` whose text is on the heap or
/// static (last byte at least `0xC0 | 24`), alive for the call.
#[inline(never)]
unsafe fn hash_outside(w: [u64; 3]) -> u64 {
    let (ptr, len) = (w[0] as usize as *const u8, w[1] as usize);
    // SAFETY: per this function's contract, the first word of such a value
    // is the pointer to its text and the second its length in bytes (the
    // layout of `compact_str`'s heap buffer and static string, which its
    // `as_slice` relies on); the value, and so the text, is alive.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    crate::key_group::hash_bytes(bytes)
}

/// `a == b` by text, for values whose bytes differ (a probe's other key,
/// mostly).
#[inline(never)]
fn differ_or_eq(a: &CompactString, b: &CompactString) -> bool {
    crate::short_bytes::eq(a.as_bytes(), b.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_are_equal_whatever_their_bytes() {
        let short = CompactString::new("user-42");
        assert!(eq(&short, &short.clone()));
        let mut shortened = CompactString::new("user-42xyz");
        shortened.truncate(7);
        assert_ne!(words(&shortened), words(&short), "bytes past the end stay");
        assert!(eq(&shortened, &short) && eq(&short, &shortened));
        let long = "a text longer than twenty-four bytes";
        let (a, b) = (CompactString::new(long), CompactString::new(long));
        assert!(a.is_heap_allocated() && eq(&a, &b));
        assert!(eq(&CompactString::const_new("user-42"), &short));
        for (x, y) in [("user-42", "user-43"), ("user-4", "user-42"), ("", "a")] {
            assert!(
                !eq(&CompactString::new(x), &CompactString::new(y)),
                "{x} {y}"
            );
        }
        assert!(!eq(&a, &CompactString::new(&long[1..])));
    }
}
