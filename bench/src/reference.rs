//! Independent single-threaded reference results of the workloads, used to
//! verify every benchmark run (the engine's answer must match exactly).

use crate::workload::{splitmix64, M};

/// The W1 sink checksum and record count for the records `i` of each
/// source subtask `s` of `counts.len()`: `i = s + k * P` for `k < counts[s]`.
/// For a bounded run of N records use [`w1_checksum`].
pub fn checksum_of_partitions(counts: &[u64], keys: u64) -> (u64, u64) {
    let p = counts.len() as u64;
    let mut seen = vec![0u64; keys as usize];
    let mut checksum = 0u64;
    let mut records = 0u64;
    for (s, &c) in counts.iter().enumerate() {
        for k in 0..c {
            let i = s as u64 + k * p;
            let key = splitmix64(i) % keys;
            seen[key as usize] += 1;
            checksum = checksum
                .wrapping_add(key.wrapping_mul(M))
                .wrapping_add(seen[key as usize]);
            records += 1;
        }
    }
    (checksum, records)
}

/// The W1 checksum of records `0..n` over `keys` keys (independent of the
/// number of workers: the sink's fold does not depend on arrival order).
pub fn w1_checksum(n: u64, keys: u64) -> u64 {
    let mut seen = vec![0u64; keys as usize];
    let mut checksum = 0u64;
    for i in 0..n {
        let key = splitmix64(i) % keys;
        seen[key as usize] += 1;
        checksum = checksum
            .wrapping_add(key.wrapping_mul(M))
            .wrapping_add(seen[key as usize]);
    }
    checksum
}

/// The W2 reference for records `0..n` over `keys` keys: `(windows fired,
/// checksum)`. Single-threaded and without the engine: records are taken
/// in order, one event-time window of `R_ev * size` records at a time,
/// with a count and sum per key; when a window's records are done every
/// key seen in it adds `key*M + window_start + count*31 + sum` (wrapping).
pub fn w2_windows_and_checksum(n: u64, keys: u64) -> (u64, u64) {
    use crate::w2::{W2_RECORDS_PER_MS, W2_WINDOW_MS};
    let per_window = W2_RECORDS_PER_MS * W2_WINDOW_MS;
    let mut counts = vec![0u64; keys as usize];
    let mut sums = vec![0u64; keys as usize];
    let (mut windows, mut checksum) = (0u64, 0u64);
    let mut first = 0;
    while first < n {
        let end = n.min(first + per_window);
        for i in first..end {
            let key = (splitmix64(i) % keys) as usize;
            counts[key] += 1;
            sums[key] = sums[key].wrapping_add(i);
        }
        let window_start = first / W2_RECORDS_PER_MS;
        for key in 0..keys as usize {
            if counts[key] > 0 {
                windows += 1;
                checksum = checksum
                    .wrapping_add((key as u64).wrapping_mul(M))
                    .wrapping_add(window_start)
                    .wrapping_add(counts[key].wrapping_mul(31))
                    .wrapping_add(sums[key]);
                counts[key] = 0;
                sums[key] = 0;
            }
        }
        first = end;
    }
    (windows, checksum)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// W2 by brute force: every `(key, window)` in a map.
    fn w2_brute_force(n: u64, keys: u64) -> (u64, u64) {
        let mut windows: HashMap<(u64, u64), (u64, u64)> = HashMap::new();
        for i in 0..n {
            let ts = i / 1000;
            let w = windows
                .entry((splitmix64(i) % keys, ts / 1000 * 1000))
                .or_default();
            w.0 += 1;
            w.1 = w.1.wrapping_add(i);
        }
        let checksum = windows.iter().fold(0u64, |a, (&(k, s), &(c, sum))| {
            a.wrapping_add(k.wrapping_mul(M))
                .wrapping_add(s)
                .wrapping_add(c * 31)
                .wrapping_add(sum)
        });
        (windows.len() as u64, checksum)
    }

    #[test]
    fn w2_reference_matches_brute_force_with_partial_windows_and_missing_keys() {
        for (n, keys) in [
            (0, 10),
            (1, 10),
            (999_999, 7),
            (1_000_001, 50),
            (2_345_678, 5_000),
        ] {
            assert_eq!(
                w2_windows_and_checksum(n, keys),
                w2_brute_force(n, keys),
                "n {n}, keys {keys}"
            );
        }
    }

    /// The figure the W2 issue states for N = 50,000,000, K = 10,000.
    #[test]
    fn w2_reference_gives_the_published_checksum_at_the_default_size() {
        assert_eq!(
            w2_windows_and_checksum(50_000_000, 10_000),
            (500_000, 6_965_811_721_024_471_792)
        );
    }
}
