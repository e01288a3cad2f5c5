//! The fleet-wide rate limiter on a local `redis-server` (started by the
//! bench, on a free loopback port; skipped with a message where none is
//! installed):
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench cluster_rate_limiter -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! For `cluster-lease` 1, 10 and 100: the time per call (criterion) and,
//! from one timed run of 20 000 calls, calls per second and round trips per
//! 1000 calls. Then the per-call cost of a leased permit (a lease so large
//! that round trips vanish from the mean) against the process-local
//! limiter, in the same run, with an interleaved comparison (alternating
//! rounds, minimum and median per call) as `rate_limiter` prints.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resil_core::cluster::{ClusterBackend, ClusterFailureMode, RateLimiterCluster};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil_redis::RedisBackend;
use resil_testkit::RedisServer;

/// Permits per second, for the fleet: never the bottleneck here.
const LIMIT: u32 = 1_000_000_000;

fn local() -> RateLimiter {
    let config = RateLimiterConfig::builder()
        .limit_for_period(LIMIT)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .build()
        .expect("valid config");
    RateLimiter::new("bench-local", config)
}

fn cluster(url: &str, lease: u32) -> (RateLimiter, Arc<dyn ClusterBackend>) {
    let backend = RedisBackend::connect(url).expect("a valid url");
    let config = RateLimiterConfig::builder()
        .limit_for_period(LIMIT)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .cluster(Some(
            RateLimiterCluster::new(Arc::clone(&backend))
                .key(format!("resil:ratelimiter:bench-{lease}"))
                .lease(lease)
                .failure_mode(ClusterFailureMode::Deny),
        ))
        .build()
        .expect("valid config");
    (RateLimiter::new(format!("bench-{lease}"), config), backend)
}

#[inline(never)]
fn once(limiter: &RateLimiter) -> bool {
    limiter.try_acquire_permission(black_box(1))
}

fn server() -> Option<RedisServer> {
    RedisServer::start_or_skip("cluster_rate_limiter bench")
}

#[allow(clippy::disallowed_methods)] // the harness times itself, no limiter reads this
fn leases(c: &mut Criterion) {
    let Some(redis) = server() else { return };
    let mut g = c.benchmark_group("cluster_rate_limiter");
    for lease in [1, 10, 100] {
        let (limiter, backend) = cluster(&redis.url(), lease);
        assert!(limiter.try_acquire_permission(1), "Redis answers");
        g.bench_function(format!("lease {lease}: try_acquire_permission(1)"), |b| {
            b.iter(|| assert!(once(&limiter)))
        });
        const CALLS: u32 = 20_000;
        let trips = backend.round_trips();
        let start = std::time::Instant::now();
        for _ in 0..CALLS {
            assert!(once(&limiter));
        }
        let elapsed = start.elapsed().as_secs_f64();
        let trips = backend.round_trips() - trips;
        println!(
            "cluster_rate_limiter/lease {lease}: {:.0} calls/s, {:.1} round trips per 1000 calls",
            f64::from(CALLS) / elapsed,
            trips as f64 * 1000.0 / f64::from(CALLS)
        );
        let m = limiter.cluster_metrics().expect("a cluster limiter");
        assert_eq!(m.fallback_calls(), 0, "Redis was down during the bench");
    }
    g.finish();
}

#[allow(clippy::disallowed_methods)] // the harness times itself, no limiter reads this
fn leased_against_local(c: &mut Criterion) {
    let Some(redis) = server() else { return };
    let local = local();
    // a quarter of the limit: never spent within a cycle, so the only round
    // trips are one per second, at the start of each cycle
    let (leased, _) = cluster(&redis.url(), LIMIT / 4);
    assert!(leased.try_acquire_permission(1), "Redis answers");
    let mut g = c.benchmark_group("cluster_rate_limiter");
    g.bench_function("local try_acquire_permission(1)", |b| {
        b.iter(|| assert!(once(&local)))
    });
    g.bench_function("leased permit try_acquire_permission(1)", |b| {
        b.iter(|| assert!(once(&leased)))
    });
    g.finish();
    resil_bench::interleaved(
        "cluster_rate_limiter",
        ("leased", &|| once(black_box(&leased))),
        ("local", &|| once(black_box(&local))),
        41,
        200_000,
    );
}

criterion_group!(benches, leases, leased_against_local);
criterion_main!(benches);
