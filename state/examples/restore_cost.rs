//! What building the table of a 5 M-key restore costs, split into the
//! arena's allocation (the first insert creates it) and the inserts (and
//! what dropping it costs), in
//! random key order or, with `SORTED=1`, in table order (what a restore's
//! lockstep reading approaches). Used for the W5 figures in
//! `bench/RESULTS.md`:
//!
//! ```text
//! cargo run --release -p weir-state --example restore_cost
//! SORTED=1 cargo run --release -p weir-state --example restore_cost
//! ```
//!
//! Each of the three rounds builds a new table; the first one runs on
//! memory the process has never touched, as a restore does.

use std::time::Instant;

use weir_state::{KeyHash, ValueState};

fn main() {
    let n: u64 = 5_000_000;
    let mut keys: Vec<(u64, u64)> = (0..n)
        .map(|i| {
            let k = i * 2 + 1;
            (k, k.key_hash())
        })
        .collect();
    if std::env::var_os("SORTED").is_some() {
        // The table's home position is the hash's top bits.
        keys.sort_by_key(|&(_, h)| h);
    }
    for round in 1..=3 {
        let started = Instant::now();
        let mut table: ValueState<u64, (u64, u64)> = ValueState::with_capacity("t", n as usize);
        table.load_hashed(keys[0].0, keys[0].1, (1, 1));
        let allocated = started.elapsed();
        for &(k, h) in &keys[1..] {
            table.load_hashed(k, h, (1, k));
        }
        let total = started.elapsed();
        let (keys, mb) = (table.len(), table.memory_bytes() >> 20);
        let dropping = Instant::now();
        drop(table);
        println!(
            "round {round}: allocation and first insert {allocated:?}, the other inserts {:?}, total {total:?} ({keys} keys, {mb} MB of slots); dropped in {:?}",
            total - allocated,
            dropping.elapsed()
        );
    }
}
