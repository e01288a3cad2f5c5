//! The five-layer chain on a ready async call, against the bare call and
//! tower's three-layer `ConcurrencyLimit + RateLimit + Timeout` stack, in one
//! run on one current-thread runtime:
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench chain -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Group `fault_place`: the engine's breaker place with and without the
//! fault's place (no fault in force), async and blocking.
//!
//! resil's chain is Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(call)))))
//! with limits that never refuse, on the default clock: the breaker measures
//! the call's duration and the rate limiter reads the clock on every call.

#![allow(clippy::disallowed_methods)] // a benchmark measures real time

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use resil_core::Decorators;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
use resil_core::chain::{Lift, Stack};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerClassifier};
use resil_core::fault::FaultPart;
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil_core::retry::Retry;
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
use tower::{Service, ServiceBuilder, ServiceExt};

async fn ready(x: u64) -> Result<u64, std::io::Error> {
    Ok(x.wrapping_mul(3))
}

fn chain(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");

    let retry = Retry::of_defaults("bench");
    let breaker = CircuitBreaker::of_defaults("bench");
    let limiter = RateLimiter::new(
        "bench",
        RateLimiterConfig::builder()
            .limit_for_period(1_000_000_000)
            .limit_refresh_period(Duration::from_secs(1))
            .build()
            .expect("valid config"),
    );
    let timeout = TimeLimiter::new(
        "bench",
        TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_secs(1))
            .build()
            .expect("valid config"),
    );
    let bulkhead = Bulkhead::new(
        "bench",
        BulkheadConfig::builder()
            .max_concurrent_calls(1000)
            .build()
            .expect("valid config"),
    );
    let decorators = Decorators::new()
        .with_retry(&retry)
        .with_circuit_breaker(&breaker)
        .with_rate_limiter(&limiter)
        .with_time_limiter(&timeout)
        .with_bulkhead(&bulkhead);

    // Each benchmark runs its loop inside one `block_on`, so the three pay the
    // same executor cost per iteration (none).
    let mut g = c.benchmark_group("chain_ready_async");
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
    g.bench_function("resil five layers", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(decorators.call_async(|| ready(black_box(1))).await.ok());
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
                    .service(tower::service_fn(ready));
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

    // Each layer alone, through its primitive's own async call, to show what
    // the chain adds over the sum of its layers.
    let mut g = c.benchmark_group("layer_ready_async");
    // `$g`'s benchmark `$name`: the awaited `$call`, in a loop in one
    // `block_on`.
    macro_rules! layer {
        ($g:ident, $name:literal, $call:expr) => {
            $g.bench_function($name, |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let start = Instant::now();
                        for _ in 0..iters {
                            black_box($call.await.ok());
                        }
                        start.elapsed()
                    })
                })
            });
        };
    }
    layer!(g, "retry", retry.call_async(|| ready(black_box(1))));
    layer!(
        g,
        "circuit breaker",
        breaker.call_async(|| ready(black_box(1)))
    );
    layer!(
        g,
        "rate limiter",
        limiter.call_async(|| ready(black_box(1)))
    );
    layer!(
        g,
        "time limiter",
        timeout.call_async(|| ready(black_box(1)))
    );
    layer!(g, "bulkhead", bulkhead.call_async(|| ready(black_box(1))));
    // The chain's own cost: `Decorators` with no primitive at all.
    let empty = Decorators::new();
    layer!(
        g,
        "Decorators without layers",
        empty.call_async(|| ready(black_box(1)))
    );
    g.finish();

    // The fault's place with no fault in force: the engine's breaker place
    // alone, and with the fault's place innermost (what every face has),
    // async and blocking.
    let mut g = c.benchmark_group("fault_place");
    let classifier = CircuitBreakerClassifier::new();
    layer!(
        g,
        "breaker place, async",
        Stack::new()
            .circuit_breaker(breaker.part(&classifier))
            .call_async(Lift(|| ready(black_box(1))))
    );
    layer!(
        g,
        "breaker and fault places, async",
        Stack::new()
            .circuit_breaker(breaker.part(&classifier))
            .fault(FaultPart::global("bench"))
            .call_async(Lift(|| ready(black_box(1))))
    );
    let sync_classifier = CircuitBreakerClassifier::<u64, std::io::Error>::new();
    g.bench_function("breaker place, blocking", |b| {
        b.iter(|| {
            Stack::new()
                .circuit_breaker(breaker.part(&sync_classifier))
                .call(Lift(|| Ok::<_, std::io::Error>(black_box(1u64))))
        })
    });
    g.bench_function("breaker and fault places, blocking", |b| {
        b.iter(|| {
            Stack::new()
                .circuit_breaker(breaker.part(&sync_classifier))
                .fault(FaultPart::global("bench"))
                .call(Lift(|| Ok::<_, std::io::Error>(black_box(1u64))))
        })
    });
    g.finish();
}

criterion_group!(benches, chain);
criterion_main!(benches);
