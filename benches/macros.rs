//! A macro-protected function against the same chain written by hand with
//! `resil::Decorators`, in one run: the attributes should add nothing
//! measurable (ratio at most 1.05).
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench macros
//! ```
//!
//! The group `five_layers_async_in_runtime` runs the async pair inside one
//! `block_on`, as the `chain` bench does, next to tower's
//! `ConcurrencyLimit + RateLimit + Timeout`.
//!
//! Both sides use instances of the global registries on the default
//! configuration (so both publish the same events to the same recent-events
//! buffers); the macro finds its instances through its per-call-site caches,
//! the hand-written chain holds them. Sync: Retry(CircuitBreaker(RateLimiter(
//! Bulkhead(fn)))); async: the same with a TimeLimiter inside the RateLimiter.

#![allow(clippy::disallowed_methods)] // a benchmark measures real time

use std::hint::black_box;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use resil::bulkhead::Bulkhead;
use resil::circuit_breaker::CircuitBreaker;
use resil::rate_limiter::RateLimiter;
use resil::retry::Retry;
use resil::time_limiter::TimeLimiter;
use resil::{Decorators, Error, Rejection};
use tower::{Service, ServiceBuilder, ServiceExt};

#[derive(Debug)]
enum DbError {
    Rejected,
}

impl From<Rejection> for DbError {
    fn from(_: Rejection) -> Self {
        DbError::Rejected
    }
}

fn work(x: u64) -> Result<u64, DbError> {
    Ok(black_box(x))
}

#[resil::retry(name = "bench-sync")]
#[resil::circuit_breaker(name = "bench-sync")]
#[resil::rate_limiter(name = "bench-sync")]
#[resil::bulkhead(name = "bench-sync")]
fn macro_chain(x: u64) -> Result<u64, DbError> {
    work(x)
}

#[resil::retry(name = "bench-async")]
#[resil::circuit_breaker(name = "bench-async")]
#[resil::rate_limiter(name = "bench-async")]
#[resil::time_limiter(name = "bench-async")]
#[resil::bulkhead(name = "bench-async")]
async fn macro_chain_async(x: u64) -> Result<u64, DbError> {
    work(x)
}

/// Polls a future that completes without waiting.
fn poll_ready<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

struct Instances {
    retry: Arc<Retry>,
    cb: Arc<CircuitBreaker>,
    rl: Arc<RateLimiter>,
    tl: Arc<TimeLimiter>,
    bh: Arc<Bulkhead>,
}

/// The instances the attributes of `name` use (the rate limiter's default
/// 50 permits per 500 ns never runs out at these call rates).
fn instances(name: &str) -> Instances {
    let r = resil::registries();
    Instances {
        retry: r.retries().retry(name),
        cb: r.circuit_breakers().circuit_breaker(name),
        rl: r.rate_limiters().rate_limiter(name),
        tl: r.time_limiters().time_limiter(name),
        bh: r.bulkheads().bulkhead(name),
    }
}

fn benches(c: &mut Criterion) {
    let s = instances("bench-sync");
    let sync_chain = Decorators::new()
        .with_retry(&s.retry)
        .with_circuit_breaker(&s.cb)
        .with_rate_limiter(&s.rl)
        .with_bulkhead(&s.bh);
    let mut g = c.benchmark_group("four_layers_sync");
    g.bench_function("bare", |b| b.iter(|| work(black_box(1))));
    g.bench_function("Decorators", |b| {
        b.iter(|| {
            sync_chain
                .call(|| work(black_box(1)))
                .map_err(Error::into_error)
        })
    });
    g.bench_function("macro", |b| b.iter(|| macro_chain(black_box(1))));
    g.finish();

    let a = instances("bench-async");
    let async_chain = Decorators::new()
        .with_retry(&a.retry)
        .with_circuit_breaker(&a.cb)
        .with_rate_limiter(&a.rl)
        .with_time_limiter(&a.tl)
        .with_bulkhead(&a.bh);
    let mut g = c.benchmark_group("five_layers_async");
    g.bench_function("bare", |b| {
        b.iter(|| poll_ready(async { work(black_box(1)) }))
    });
    g.bench_function("Decorators", |b| {
        b.iter(|| {
            poll_ready(async {
                async_chain
                    .call_async(|| async { work(black_box(1)) })
                    .await
                    .map_err(Error::into_error)
            })
        })
    });
    g.bench_function("macro", |b| {
        b.iter(|| poll_ready(macro_chain_async(black_box(1))))
    });
    g.finish();

    // The same two in one `block_on` of a current-thread runtime, as the
    // `chain` bench runs them, against tower's three layers there (its
    // `Timeout` needs the runtime's timer).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let mut g = c.benchmark_group("five_layers_async_in_runtime");
    g.bench_function("Decorators", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let r = async_chain
                        .call_async(|| async { work(black_box(1)) })
                        .await;
                    black_box(r.map_err(Error::into_error).ok());
                }
                start.elapsed()
            })
        })
    });
    g.bench_function("macro", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(macro_chain_async(black_box(1)).await.ok());
                }
                start.elapsed()
            })
        })
    });
    g.bench_function("tower three layers", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut svc = ServiceBuilder::new()
                    .concurrency_limit(1000)
                    .rate_limit(1_000_000_000, Duration::from_secs(1))
                    .timeout(Duration::from_secs(1))
                    .service(tower::service_fn(|x: u64| async move {
                        Ok::<u64, std::io::Error>(black_box(x))
                    }));
                let start = Instant::now();
                for _ in 0..iters {
                    let r = svc.ready().await.expect("ready").call(black_box(1)).await;
                    black_box(r.ok());
                }
                start.elapsed()
            })
        })
    });
    g.finish();
}

criterion_group!(macros, benches);
criterion_main!(macros);
