//! The random source of one event, and the random values the events are
//! made of: words, padding, prices.
//!
//! Each event gets its own source, seeded from the config's seed and the
//! event's number, so event `n` is the same whoever makes it and whatever
//! was made before (the Beam generator seeded `java.util.Random` with the
//! event id for the same reason). The source is SplitMix64: a counter
//! stepped by the golden ratio and a 64-bit mix, fast and statistically
//! sound for this use, and written here to keep the crate free of
//! dependencies whose output could change between versions.

/// SplitMix64's finaliser: a bijective mix of 64 bits.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// Which use a source serves, so that event `n` and channel `n` (or hot
/// URL `n`) never share a sequence.
#[derive(Clone, Copy)]
pub(crate) enum Stream {
    Event = 1,
    Channel = 2,
    HotUrl = 3,
}

/// Every pair of lowercase letters: entry `26 × i + j` is letters `i`, `j`.
const LETTER_PAIRS: [[u8; 2]; 676] = {
    let mut pairs = [[0u8; 2]; 676];
    let mut i = 0;
    while i < 676 {
        pairs[i] = [b'a' + (i / 26) as u8, b'a' + (i % 26) as u8];
        i += 1;
    }
    pairs
};

/// A SplitMix64 sequence for one event (or one channel).
pub(crate) struct EventRng(u64);

impl EventRng {
    /// The source of item `n` of `stream` under `seed`.
    pub(crate) fn new(seed: u64, stream: Stream, n: u64) -> Self {
        let key = mix64(seed ^ (stream as u64).wrapping_mul(GOLDEN));
        Self(mix64(key ^ mix64(n.wrapping_add(GOLDEN))))
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix64(self.0)
    }

    /// A value in `0..n` (`n > 0`), by multiply-and-shift (Lemire); the
    /// bias is below `n / 2^64`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `1 - 1/ratio`: the suite's "hot" draw
    /// (`nextInt(ratio) > 0`).
    pub(crate) fn hot(&mut self, ratio: u64) -> bool {
        self.below(ratio) > 0
    }

    /// A uniform value in `[0, 1)` with 53 random bits.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Picks one of `items` uniformly.
    pub(crate) fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }

    /// `len` lowercase letters; one 64-bit draw yields 13 of them
    /// (26^13 < 2^64), each taken from the top of a running product.
    /// Two letters are taken at once, by multiplying by 26^2 and looking
    /// the pair up in [`LETTER_PAIRS`]: the top of `x × 676` is the two
    /// tops of `x × 26` taken one after the other (first × 26 plus
    /// second), and its low word what is left after both, so the letters
    /// are the same as one at a time, at half the multiplications (the
    /// padding is most of a bid's generation).
    pub(crate) fn letters(&mut self, len: usize) -> String {
        let mut bytes = vec![0u8; len];
        // Whole draws copied as 13 bytes (a copy of a fixed length), the
        // last part draw as what is left of it.
        let mut chunks = bytes.chunks_exact_mut(13);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&self.thirteen_letters()[..13]);
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let n = rest.len();
            rest.copy_from_slice(&self.thirteen_letters()[..n]);
        }
        // Not `String::from_utf8`: checking a bid's padding is UTF-8 took
        // 96 of the ~2,000 instructions Nexmark q0 spends per event.
        debug_assert!(bytes.iter().all(u8::is_ascii_lowercase));
        // SAFETY: every byte is `b'a' + k` with `k < 26` (the entries of
        // `LETTER_PAIRS`, zeros overwritten by `copy_from_slice` of the
        // whole chunk), ASCII and so UTF-8.
        unsafe { String::from_utf8_unchecked(bytes) }
    }

    /// One draw's 13 letters, and a 14th that is not one: seven pairs,
    /// the seventh pair's first letter the 13th (the top of x × 676
    /// divided by 26 is the top of x × 26).
    #[inline(always)]
    fn thirteen_letters(&mut self) -> [u8; 14] {
        let mut bits = self.next_u64();
        let mut drawn = [0u8; 14];
        for pair in drawn.chunks_exact_mut(2) {
            let wide = u128::from(bits) * 676;
            pair.copy_from_slice(&LETTER_PAIRS[(wide >> 64) as usize]);
            bits = wide as u64;
        }
        drawn
    }

    /// A word of 3 to `max_len - 1` characters (`max_len > 3`): letters,
    /// and in one place of 13 on average `blank` instead; blank spaces at
    /// either end are trimmed, as the suite trims its strings.
    pub(crate) fn word(&mut self, max_len: u64, blank: char) -> String {
        let len = 3 + self.below(max_len - 3);
        let mut s = String::with_capacity(len as usize);
        for _ in 0..len {
            // One draw decides both the blank (1 in 13) and the letter.
            let wide = u128::from(self.next_u64()) * 13;
            if (wide >> 64) == 0 {
                s.push(blank);
            } else {
                let letter = (u128::from(wide as u64) * 26) >> 64;
                s.push(char::from(b'a' + letter as u8));
            }
        }
        if blank == ' ' {
            let trimmed = s.trim_matches(' ');
            if trimmed.len() != s.len() {
                return trimmed.to_owned();
            }
        }
        s
    }

    /// The draws of [`word`](Self::word) with the same `max_len`, without
    /// making the word: what follows it is drawn as if it were made.
    pub(crate) fn skip_word(&mut self, max_len: u64) {
        let len = 3 + self.below(max_len - 3);
        for _ in 0..len {
            self.next_u64();
        }
    }

    /// Padding letters so that `current + padding` bytes average `average`:
    /// the suite's rule, a length uniform within ±20% of the shortfall
    /// (none when `current` already exceeds `average`).
    pub(crate) fn extra(&mut self, current: u64, average: u64) -> String {
        if current > average {
            return String::new();
        }
        let short = average - current;
        let delta = (short + 2) / 5; // round(short × 0.2)
        let len = short - delta + if delta == 0 { 0 } else { self.below(2 * delta) };
        self.letters(len as usize)
    }

    /// A price in cents, log-uniform between $1 and $1,000,000:
    /// `round(10^(6u) × 100)`, with `10^x` as `e^(x ln 10)` (`exp` took 51
    /// instructions per bid where `pow` took 115; the two differ by a few
    /// units in the last place, which moves a rounded price only when it
    /// lies within about 1e-13 of a half cent).
    pub(crate) fn price(&mut self) -> i64 {
        ((self.unit() * (6.0 * std::f64::consts::LN_10)).exp() * 100.0).round() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::{EventRng, Stream};

    /// The letters one at a time, as the suite's rule draws them: what
    /// [`EventRng::letters`] must equal.
    fn letters_one_by_one(rng: &mut EventRng, len: usize) -> String {
        let mut s = String::new();
        while s.len() < len {
            let mut bits = rng.next_u64();
            for _ in 0..13.min(len - s.len()) {
                let wide = u128::from(bits) * 26;
                s.push(char::from(b'a' + (wide >> 64) as u8));
                bits = wide as u64;
            }
        }
        s
    }

    #[test]
    fn letters_in_pairs_are_the_letters_one_at_a_time() {
        for n in 0..200 {
            for len in [0, 1, 2, 12, 13, 14, 25, 26, 27, 100, 131] {
                let mut pairs = EventRng::new(7, Stream::Event, n);
                let mut single = EventRng::new(7, Stream::Event, n);
                assert_eq!(
                    pairs.letters(len),
                    letters_one_by_one(&mut single, len),
                    "event {n}, {len} letters"
                );
                // And the draws that follow are the same.
                assert_eq!(pairs.next_u64(), single.next_u64());
            }
        }
    }
}
