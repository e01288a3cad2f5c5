//! The Spring Cloud facade's `run_async` on a ready call against the same
//! three layers (circuit breaker, semaphore bulkhead, time limiter) composed
//! with `Decorators`, and the bare call, in one run on one current-thread
//! runtime:
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench cloud -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Both use the same instances: the ones the factory resolved for
//! `create_in_group("bench", "bench-group")` on registries of the library
//! defaults (no event buffers, as in the chain bench).

#![allow(clippy::disallowed_methods)] // a benchmark measures real time

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use resil::cloud::CircuitBreakerFactory;
use resil_config::Registries;
use resil_core::Decorators;

async fn ready(x: u64) -> Result<u64, std::io::Error> {
    Ok(x.wrapping_mul(3))
}

fn cloud(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let factory = CircuitBreakerFactory::builder()
        .registries(Arc::new(Registries::of_defaults()))
        .build();
    let breaker = factory.create_in_group("bench", "bench-group");
    let time_limiter = breaker.time_limiter().expect("a time limiter");
    let decorators = Decorators::new()
        .with_circuit_breaker(breaker.circuit_breaker())
        .with_time_limiter(time_limiter)
        .with_bulkhead(breaker.async_bulkhead());

    let mut g = c.benchmark_group("cloud_ready_async");
    g.bench_function("bare", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(ready(black_box(1)).await.ok());
                }
                start.elapsed()
            })
        })
    });
    g.bench_function("run_async", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(breaker.run_async(|| ready(black_box(1)), |_| 0).await);
                }
                start.elapsed()
            })
        })
    });
    g.bench_function("Decorators three layers", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let r = decorators.call_async(|| ready(black_box(1))).await;
                    black_box(r.unwrap_or(0));
                }
                start.elapsed()
            })
        })
    });
    g.finish();
}

criterion_group!(benches, cloud);
criterion_main!(benches);
