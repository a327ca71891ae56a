//! Keyed count (`count += 1; sum += v` per record) through
//! `ValueState::get_or_insert_with`, next to `std::collections::HashMap` on
//! the same keys as the reference.
//!
//! Keys are `splitmix64(i) % K` for K = 1,000 (fits in L1/L2) and 100,000
//! (index and entries spill into L3/DRAM). The state is warmed once, so the
//! measurement is the steady state of a running count: almost all hits.
//!
//! The `checkpoint` group prices copy-on-write: the same count with a
//! checkpoint every batch (freeze, the batch's writes copying each chunk
//! they touch once, drop the view), and the synchronous freeze alone of a
//! state of a million keys.
// criterion_group!/criterion_main! generate undocumented functions.
#![allow(missing_docs)]

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::hint::black_box;

use criterion::{criterion_main, BenchmarkId, Criterion, Throughput};
use weir_state::key_group::fmix64;
use weir_state::{KeyHash, ValueState};

/// Records per measured iteration.
const RECORDS: usize = 1 << 16;

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// std `HashMap` with weir's key hash instead of SipHash: separates the cost
/// of the table from the cost of the hash function.
#[derive(Default)]
struct FmixHasher(u64);

impl Hasher for FmixHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys are hashed in this benchmark")
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = fmix64(v);
    }
}

#[derive(Clone, Copy, Default)]
struct Agg {
    count: u64,
    sum: u64,
}

fn bench_count(c: &mut Criterion) {
    let mut group = c.benchmark_group("keyed_count");
    group.throughput(Throughput::Elements(RECORDS as u64));
    for distinct in [1_000u64, 100_000] {
        let records: Vec<(u64, u64)> = (0..RECORDS as u64)
            .map(|i| (splitmix64(i) % distinct, i))
            .collect();

        let mut state: ValueState<u64, Agg> = ValueState::new("count");
        group.bench_function(BenchmarkId::new("weir_value_state", distinct), |b| {
            b.iter(|| {
                for &(k, v) in &records {
                    let a = state.get_or_insert_with(black_box(k), Agg::default);
                    a.count += 1;
                    a.sum = a.sum.wrapping_add(v);
                }
            })
        });
        black_box(state.len());

        // The runtime already has the hash from key-group routing.
        let mut state: ValueState<u64, Agg> = ValueState::new("count");
        let hashed: Vec<(u64, u64, u64)> =
            records.iter().map(|&(k, v)| (k, k.key_hash(), v)).collect();
        group.bench_function(BenchmarkId::new("weir_value_state_hashed", distinct), |b| {
            b.iter(|| {
                for &(k, h, v) in &hashed {
                    let a = state.get_or_insert_with_hashed(black_box(k), h, Agg::default);
                    a.count += 1;
                    a.sum = a.sum.wrapping_add(v);
                }
            })
        });
        black_box(state.len());

        let mut map: HashMap<u64, Agg> = HashMap::new();
        group.bench_function(BenchmarkId::new("std_hashmap_siphash", distinct), |b| {
            b.iter(|| {
                for &(k, v) in &records {
                    let a = map.entry(black_box(k)).or_default();
                    a.count += 1;
                    a.sum = a.sum.wrapping_add(v);
                }
            })
        });
        black_box(map.len());

        let mut map: HashMap<u64, Agg, BuildHasherDefault<FmixHasher>> = HashMap::default();
        group.bench_function(BenchmarkId::new("std_hashmap_fmix64", distinct), |b| {
            b.iter(|| {
                for &(k, v) in &records {
                    let a = map.entry(black_box(k)).or_default();
                    a.count += 1;
                    a.sum = a.sum.wrapping_add(v);
                }
            })
        });
        black_box(map.len());
    }
    group.finish();
}

fn bench_checkpoint(c: &mut Criterion) {
    let mut group = c.benchmark_group("checkpoint");
    for distinct in [1_000u64, 100_000] {
        let hashed: Vec<(u64, u64, u64)> = (0..RECORDS as u64)
            .map(|i| {
                let k = splitmix64(i) % distinct;
                (k, k.key_hash(), i)
            })
            .collect();
        let mut state: ValueState<u64, Agg> = ValueState::new("count");
        group.throughput(Throughput::Elements(RECORDS as u64));
        group.bench_function(BenchmarkId::new("freeze_then_count", distinct), |b| {
            b.iter(|| {
                let view = state.freeze();
                for &(k, h, v) in &hashed {
                    let a = state.get_or_insert_with_hashed(black_box(k), h, Agg::default);
                    a.count += 1;
                    a.sum = a.sum.wrapping_add(v);
                }
                view
            })
        });
        black_box(state.cow_stats());
    }

    const KEYS: u64 = 1_000_000;
    let mut state: ValueState<u64, Agg> = ValueState::with_capacity("count", KEYS as usize);
    (0..KEYS).for_each(|k| state.put(k, Agg::default()));
    group.throughput(Throughput::Elements(1));
    group.bench_function("freeze_and_drop_1m_keys", |b| b.iter(|| state.freeze()));
    group.finish();
}

/// Private so the `pub fn` that `criterion_group!` generates needs no docs.
mod group {
    criterion::criterion_group!(benches, super::bench_count, super::bench_checkpoint);
}
criterion_main!(group::benches);
