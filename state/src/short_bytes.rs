//! Short byte strings a word at a time: the zero-padded last word of
//! [`crate::key_group::hash_bytes`] and the equality of string keys.
//!
//! A string key is usually shorter than a cache line and its length
//! varies from key to key. A byte loop mispredicts its exit per key, and a
//! copy or compare of a run-time length is a call into `memcpy` or
//! `memcmp`, which costs more than the rest of a short key's hash or
//! probe. Loads of a fixed width that overlap in the middle cover every
//! length from 1 to 16 with two loads and no loop.

/// `bytes[at..at + 8]` as a little-endian word.
#[inline(always)]
pub(crate) fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]))
}

/// `bytes[at..at + 4]` as a little-endian half word.
#[inline(always)]
fn half(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]))
}

/// The last `rest` (1 to 7) bytes of `bytes` as a little-endian word
/// padded with zeros.
#[inline(always)]
pub(crate) fn last_word(bytes: &[u8], rest: usize) -> u64 {
    let n = bytes.len();
    debug_assert!((1..8).contains(&rest) && rest <= n);
    if n >= 8 {
        // The slice's last 8 bytes end in the `rest` wanted: shift out
        // the others (the word before, already folded in).
        return word(bytes, n - 8) >> (8 * (8 - rest));
    }
    // A key shorter than a word (`rest == n`): two loads that overlap in
    // the middle cover 4 to 7 bytes, three single bytes cover 1 to 3 (the
    // bytes both loads see are the same, so `|` keeps them as they are).
    if n >= 4 {
        return u64::from(half(bytes, 0)) | u64::from(half(bytes, n - 4)) << (8 * (n - 4));
    }
    u64::from(bytes[0])
        | u64::from(bytes[n / 2]) << (8 * (n / 2))
        | u64::from(bytes[n - 1]) << (8 * (n - 1))
}

/// `a == b`, without a `memcmp` call for up to 16 bytes.
#[inline(always)]
pub(crate) fn eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pair of slices of up to 20 bytes drawn from a short alphabet
    /// (so equal and nearly equal pairs are common) compares as `==` does.
    #[test]
    fn eq_is_slice_equality() {
        let text = b"abababbaabbbaababbbbaaab";
        let mut slices = Vec::new();
        for len in 0..=20 {
            for start in 0..=text.len() - len {
                slices.push(&text[start..start + len]);
            }
        }
        for a in &slices {
            for b in &slices {
                assert_eq!(eq(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn last_word_is_the_zero_padded_tail() {
        let text: Vec<u8> = (1u8..=24).collect();
        for n in 1..=text.len() {
            let bytes = &text[..n];
            let rest = n % 8;
            if rest == 0 {
                continue;
            }
            let mut padded = [0u8; 8];
            padded[..rest].copy_from_slice(&bytes[n - rest..]);
            assert_eq!(last_word(bytes, rest), u64::from_le_bytes(padded), "{n}");
        }
    }
}
