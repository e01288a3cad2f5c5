//! The rate limiter's hot path (a permit available now) against the bare
//! call and governor's direct limiter, in the same run:
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench rate_limiter -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Both limiters read the TSC through quanta and never run out during the
//! run (resil: `u32::MAX` permits per hour; governor: a burst of `u32::MAX`).

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};

fn work(x: u64) -> Result<u64, ()> {
    Ok(x.wrapping_mul(3))
}

fn rate_limiter(c: &mut Criterion) {
    let config = RateLimiterConfig::builder()
        .limit_for_period(u32::MAX)
        .limit_refresh_period(Duration::from_secs(3600))
        .timeout_duration(Duration::ZERO)
        .build()
        .expect("valid config");
    let ours = RateLimiter::new("bench", config);
    let theirs = governor::RateLimiter::direct(governor::Quota::per_hour(NonZeroU32::MAX));

    let mut g = c.benchmark_group("rate_limiter");
    g.bench_function("bare call", |b| b.iter(|| work(black_box(1))));
    g.bench_function("resil try_acquire_permission(1)", |b| {
        b.iter(|| ours.try_acquire_permission(black_box(1)))
    });
    g.bench_function("governor check()", |b| b.iter(|| theirs.check().is_ok()));
    g.bench_function("resil call", |b| {
        b.iter(|| ours.call(|| work(black_box(1))))
    });
    g.finish();

    // Neither limiter may have run out: that would measure refusals.
    assert!(ours.try_acquire_permission(1), "resil ran out of permits");
    assert!(theirs.check().is_ok(), "governor ran out of permits");
}

criterion_group!(benches, rate_limiter);
criterion_main!(benches);
