//! The round trip of one task through the thread-pool bulkhead (submit, run
//! on a pool thread, result back to the caller), against the bare call and
//! against `tokio::task::spawn_blocking`, the unbounded pool it replaces.
//!
//! Both pools have one warm thread; each iteration waits for its result.
//!
//! `cargo bench -p resil-bench --features bench --bench thread_pool_bulkhead -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};

fn work() -> u64 {
    black_box(42)
}

fn round_trip(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(1)
        .build()
        .expect("a tokio runtime");
    let config = ThreadPoolBulkheadConfig::builder()
        .core_thread_pool_size(1)
        .max_thread_pool_size(1)
        .queue_capacity(100)
        .build()
        .expect("a valid config");
    let bulkhead = ThreadPoolBulkhead::new("bench", config);

    let mut group = c.benchmark_group("thread_pool_bulkhead/round_trip");
    group.bench_function("bare call", |b| b.iter(work));
    group.bench_function("resil submit + wait (sync caller)", |b| {
        b.iter(|| bulkhead.submit(work).wait().expect("admitted"))
    });
    group.bench_function("resil submit + await", |b| {
        b.iter(|| rt.block_on(bulkhead.submit(work)).expect("admitted"))
    });
    group.bench_function("tokio spawn_blocking + await", |b| {
        b.iter(|| {
            rt.block_on(async { tokio::task::spawn_blocking(work).await })
                .expect("joined")
        })
    });
    group.finish();
}

criterion_group!(benches, round_trip);
criterion_main!(benches);
