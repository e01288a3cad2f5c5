//! The `tower` layers on a ready service, each against its tower (and
//! tower-resilience) counterpart, and stacks of three and five layers
//! against tower's three-layer stack, in one run on one current-thread
//! runtime:
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench tower -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Every call is `svc.ready().await?.call(x).await` on a `service_fn` whose
//! future is ready at once, with limits that never refuse.

#![allow(clippy::disallowed_methods)] // a benchmark measures real time

use std::future::Ready;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::CircuitBreaker;
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil::retry::Retry;
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
use resil::tower::{
    BulkheadLayer, CircuitBreakerLayer, RateLimiterLayer, RetryLayer, TimeLimiterLayer, named,
};
use tower::util::ServiceFn;
use tower::{Layer, Service, ServiceBuilder, ServiceExt};

type Inner = ServiceFn<fn(u64) -> Ready<Result<u64, std::io::Error>>>;

fn inner() -> Inner {
    fn ready(x: u64) -> Ready<Result<u64, std::io::Error>> {
        std::future::ready(Ok(x.wrapping_mul(3)))
    }
    tower::service_fn(ready as fn(u64) -> _)
}

fn no_limit() -> RateLimiterConfig {
    RateLimiterConfig::builder()
        .limit_for_period(1_000_000_000)
        .limit_refresh_period(Duration::from_secs(1))
        .build()
        .expect("a valid config")
}

fn wide_bulkhead() -> BulkheadConfig {
    BulkheadConfig::builder()
        .max_concurrent_calls(1_000)
        .build()
        .expect("a valid config")
}

fn one_second() -> TimeLimiterConfig {
    TimeLimiterConfig::builder()
        .timeout_duration(Duration::from_secs(1))
        .build()
        .expect("a valid config")
}

/// Benchmarks `svc` called `iters` times inside one `block_on`.
macro_rules! bench_service {
    ($g:expr, $rt:expr, $name:expr, $make:expr) => {
        $g.bench_function($name, |b| {
            b.iter_custom(|iters| {
                $rt.block_on(async {
                    let mut svc = $make;
                    let start = Instant::now();
                    for _ in 0..iters {
                        let r = svc.ready().await.expect("ready").call(black_box(1)).await;
                        black_box(r.is_ok());
                    }
                    start.elapsed()
                })
            })
        });
    };
}

fn layers(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");

    let mut g = c.benchmark_group("tower_circuit_breaker");
    bench_service!(g, rt, "bare", inner());
    let cb = CircuitBreaker::of_defaults("bench");
    bench_service!(
        g,
        rt,
        "resil",
        CircuitBreakerLayer::new(cb.clone()).layer(inner())
    );
    bench_service!(g, rt, "tower-resilience", {
        tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
            .failure_rate_threshold(0.5)
            .sliding_window_size(100)
            .build()
            .expect("a valid breaker")
            .layer_fn(inner())
    });
    g.finish();

    let mut g = c.benchmark_group("tower_bulkhead");
    let bh = Bulkhead::new("bench", wide_bulkhead());
    bench_service!(
        g,
        rt,
        "resil",
        BulkheadLayer::new(bh.clone()).layer(inner())
    );
    bench_service!(
        g,
        rt,
        "tower ConcurrencyLimit",
        tower::limit::ConcurrencyLimitLayer::new(1_000).layer(inner())
    );
    g.finish();

    let mut g = c.benchmark_group("tower_rate_limiter");
    let rl = RateLimiter::new("bench", no_limit());
    bench_service!(
        g,
        rt,
        "resil",
        RateLimiterLayer::new(rl.clone()).layer(inner())
    );
    bench_service!(
        g,
        rt,
        "tower RateLimit",
        tower::limit::RateLimitLayer::new(1_000_000_000, Duration::from_secs(1)).layer(inner())
    );
    g.finish();

    let mut g = c.benchmark_group("tower_time_limiter");
    let tl = TimeLimiter::new("bench", one_second());
    bench_service!(
        g,
        rt,
        "resil",
        TimeLimiterLayer::new(tl.clone()).layer(inner())
    );
    bench_service!(
        g,
        rt,
        "tower Timeout",
        tower::timeout::TimeoutLayer::new(Duration::from_secs(1)).layer(inner())
    );
    g.finish();

    let mut g = c.benchmark_group("tower_retry");
    let retry = Retry::of_defaults("bench");
    bench_service!(
        g,
        rt,
        "resil",
        RetryLayer::new(retry.clone()).layer(inner())
    );
    g.finish();

    // The global instances of `bench-stack` for `named`, with the same
    // limits as the hand-built ones.
    let registries = resil::registries();
    registries
        .rate_limiters()
        .replace("bench-stack", no_limit());
    registries
        .bulkheads()
        .replace("bench-stack", wide_bulkhead());
    registries
        .time_limiters()
        .replace("bench-stack", one_second());

    let mut g = c.benchmark_group("tower_stack");
    bench_service!(
        g,
        rt,
        "tower three layers",
        ServiceBuilder::new()
            .concurrency_limit(1_000)
            .rate_limit(1_000_000_000, Duration::from_secs(1))
            .timeout(Duration::from_secs(1))
            .service(inner())
    );
    bench_service!(
        g,
        rt,
        "resil three layers",
        ServiceBuilder::new()
            .layer(BulkheadLayer::new(bh.clone()))
            .layer(RateLimiterLayer::new(rl.clone()))
            .layer(TimeLimiterLayer::new(tl.clone()))
            .service(inner())
    );
    bench_service!(
        g,
        rt,
        "resil five layers (named)",
        ServiceBuilder::new()
            .layer(
                named("bench-stack")
                    .retry()
                    .circuit_breaker()
                    .rate_limiter()
                    .time_limiter()
                    .bulkhead()
                    .build()
            )
            .service(inner())
    );
    g.finish();
}

criterion_group!(benches, layers);
criterion_main!(benches);
