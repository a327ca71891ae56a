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
