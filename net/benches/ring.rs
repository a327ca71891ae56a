//! Criterion benchmarks of the SPSC ring and the buffer pool next to
//! well-known references (rtrb's SPSC ring, crossbeam's `ArrayQueue`), so the
//! ring's cost is measured, not assumed.
//!
//! Run: `cargo bench -p weir-net --bench ring`.
// criterion_group!/criterion_main! generate undocumented functions.
#![allow(missing_docs)]

use std::sync::Arc;
use std::thread;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use crossbeam_queue::ArrayQueue;
use weir_net::{ring, BufferPool, NetworkBuffer};

const ITEMS: u64 = 1 << 20;
const CAPACITY: usize = 1024;

/// One producer thread, one consumer (the bench thread), ITEMS values.
fn cross_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("spsc_cross_thread");
    g.throughput(Throughput::Elements(ITEMS));
    g.sample_size(20);
    g.bench_function(BenchmarkId::new("weir_ring", CAPACITY), |b| {
        b.iter(|| {
            let (mut p, mut c) = ring::<u64>(CAPACITY);
            let t = thread::spawn(move || {
                for i in 0..ITEMS {
                    let mut v = i;
                    while let Err(back) = p.push(v) {
                        v = back;
                        std::hint::spin_loop();
                    }
                }
            });
            let mut sum = 0u64;
            let mut n = 0;
            while n < ITEMS {
                if let Some(v) = c.pop() {
                    sum = sum.wrapping_add(v);
                    n += 1;
                }
            }
            t.join().unwrap();
            sum
        })
    });
    g.bench_function(BenchmarkId::new("rtrb", CAPACITY), |b| {
        b.iter(|| {
            let (mut p, mut c) = rtrb::RingBuffer::<u64>::new(CAPACITY);
            let t = thread::spawn(move || {
                for i in 0..ITEMS {
                    while p.push(i).is_err() {
                        std::hint::spin_loop();
                    }
                }
            });
            let mut sum = 0u64;
            let mut n = 0;
            while n < ITEMS {
                if let Ok(v) = c.pop() {
                    sum = sum.wrapping_add(v);
                    n += 1;
                }
            }
            t.join().unwrap();
            sum
        })
    });
    g.bench_function(BenchmarkId::new("crossbeam_array_queue", CAPACITY), |b| {
        b.iter(|| {
            let q = Arc::new(ArrayQueue::<u64>::new(CAPACITY));
            let q2 = q.clone();
            let t = thread::spawn(move || {
                for i in 0..ITEMS {
                    let mut v = i;
                    while let Err(back) = q2.push(v) {
                        v = back;
                        std::hint::spin_loop();
                    }
                }
            });
            let mut sum = 0u64;
            let mut n = 0;
            while n < ITEMS {
                if let Some(v) = q.pop() {
                    sum = sum.wrapping_add(v);
                    n += 1;
                }
            }
            t.join().unwrap();
            sum
        })
    });
    g.finish();
}

/// Push then pop on one thread: the uncontended cost of one hand-over.
fn same_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("spsc_push_pop");
    g.throughput(Throughput::Elements(1));
    let (mut p, mut c1) = ring::<u64>(CAPACITY);
    g.bench_function("weir_ring", |b| {
        b.iter(|| {
            p.push(std::hint::black_box(7)).unwrap();
            c1.pop().unwrap()
        })
    });
    let (mut p, mut c2) = rtrb::RingBuffer::<u64>::new(CAPACITY);
    g.bench_function("rtrb", |b| {
        b.iter(|| {
            p.push(std::hint::black_box(7)).unwrap();
            c2.pop().unwrap()
        })
    });
    let q = ArrayQueue::<u64>::new(CAPACITY);
    g.bench_function("crossbeam_array_queue", |b| {
        b.iter(|| {
            q.push(std::hint::black_box(7)).unwrap();
            q.pop().unwrap()
        })
    });
    g.finish();
}

/// The buffer cycle of the data plane: request a buffer, fill it with 16-byte
/// records, ship it through a ring, read it in place, return it to the pool.
fn buffer_cycle(c: &mut Criterion) {
    const BUF: usize = 32 * 1024;
    let records = (BUF / 16) as u64;
    let mut g = c.benchmark_group("buffer_cycle_32k");
    g.throughput(Throughput::Elements(records));
    let (mut fwd_tx, mut fwd_rx) = ring::<NetworkBuffer>(4);
    let (mut ret_tx, ret_rx) = ring::<NetworkBuffer>(8);
    let mut pool = BufferPool::new(4, BUF);
    pool.add_return_path(ret_rx);
    g.bench_function("weir_pool_and_ring", |b| {
        b.iter(|| {
            let mut buf = pool.request().unwrap();
            let mut i = 0u64;
            while buf.try_append(&(i, i)) {
                i += 1;
            }
            fwd_tx.push(buf).unwrap();
            let buf = fwd_rx.pop().unwrap();
            let mut sum = 0u64;
            for r in buf.read_records::<(u64, u64)>() {
                let (k, v) = r.unwrap();
                sum = sum.wrapping_add(k ^ v);
            }
            ret_tx.push(buf).unwrap();
            sum
        })
    });
    // Reference: the same records through a plain Vec<(u64,u64)> allocated
    // per batch and sent through crossbeam's queue (the "easy" design).
    let q = ArrayQueue::<Vec<(u64, u64)>>::new(4);
    g.bench_function("vec_per_batch_array_queue", |b| {
        b.iter(|| {
            let mut v = Vec::with_capacity(records as usize);
            for i in 0..records {
                v.push((i, i));
            }
            q.push(v).unwrap();
            let v = q.pop().unwrap();
            let mut sum = 0u64;
            for (k, x) in v {
                sum = sum.wrapping_add(k ^ x);
            }
            sum
        })
    });
    g.finish();
}

criterion_group!(benches, cross_thread, same_thread, buffer_cycle);
criterion_main!(benches);
