//! The rate limiter's hot path (a permit available now) against the bare
//! call and governor's direct limiter, in the same run:
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench rate_limiter -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Both limiters read the TSC through quanta and never run out during the
//! run (resil: `u32::MAX` permits per hour; governor: a burst of `u32::MAX`).
//! On a shared virtual machine criterion's means for the two limiters drift
//! by tens of percent from run to run, so the bench also prints an
//! interleaved comparison (rounds of each, alternating, through one
//! `#[inline(never)]` call each): the minimum and the median per call.

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};

type Governor = governor::DefaultDirectRateLimiter;

fn work(x: u64) -> Result<u64, ()> {
    Ok(x.wrapping_mul(3))
}

#[inline(never)]
fn ours_once(limiter: &RateLimiter) -> bool {
    limiter.try_acquire_permission(black_box(1))
}

#[inline(never)]
fn theirs_once(limiter: &Governor) -> bool {
    limiter.check().is_ok()
}

fn limiters() -> (RateLimiter, Governor) {
    let config = RateLimiterConfig::builder()
        .limit_for_period(u32::MAX)
        .limit_refresh_period(Duration::from_secs(3600))
        .timeout_duration(Duration::ZERO)
        .build()
        .expect("valid config");
    (
        RateLimiter::new("bench", config),
        governor::RateLimiter::direct(governor::Quota::per_hour(NonZeroU32::MAX)),
    )
}

fn rate_limiter(c: &mut Criterion) {
    let (ours, theirs) = limiters();
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

/// Alternating rounds of each limiter; prints per-call minimum and median.
fn interleaved(_: &mut Criterion) {
    let (ours, theirs) = limiters();
    resil_bench::interleaved(
        "rate_limiter",
        ("resil", &|| ours_once(black_box(&ours))),
        ("governor", &|| theirs_once(black_box(&theirs))),
        41,
        1_000_000,
    );
}

criterion_group!(benches, rate_limiter, interleaved);
criterion_main!(benches);
