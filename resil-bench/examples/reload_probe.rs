//! Instruction counts of the call paths that reload touches, for callgrind
//! (deterministic where wall-clock benchmarks on a shared machine are not):
//!
//! ```text
//! cargo build --release -p resil-bench --features bench --example reload_probe
//! for m in bare breaker breaker-changed bulkhead rate-limiter; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg-$m.out target/release/examples/reload_probe $m
//! done
//! ```
//!
//! Each mode makes 200 000 calls: `bare` calls the query, `breaker` through
//! `CircuitBreaker::call` (defaults), `breaker-changed` the same after one
//! `change_config` (its settings then come from the second version),
//! `bulkhead` `try_acquire_permission` and drop, `rate-limiter`
//! `try_acquire_permission(1)` with permits to spare. The difference of two
//! totals divided by 200 000 is what one call adds. The file builds against
//! the tree before the reload work too, without `breaker-changed`.

use std::hint::black_box;
use std::time::Duration;

use resil_core::bulkhead::Bulkhead;
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};

#[inline(never)]
fn query(x: u64) -> Result<u64, ()> {
    Ok(black_box(x).wrapping_add(1))
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let cb = CircuitBreaker::of_defaults("probe");
    if mode == "breaker-changed" {
        let config = CircuitBreakerConfig::builder()
            .failure_rate_threshold(40.0)
            .build()
            .expect("a configuration");
        change(&cb, config);
    }
    let bulkhead = Bulkhead::of_defaults("probe");
    let limiter = RateLimiter::new(
        "probe",
        RateLimiterConfig::builder()
            .limit_for_period(1_000_000)
            .limit_refresh_period(Duration::from_secs(3600))
            .build()
            .expect("a configuration"),
    );
    match mode.as_str() {
        "bare" => repeat(|| query(black_box(1)).ok()),
        "breaker" | "breaker-changed" => repeat(|| cb.call(|| query(black_box(1))).ok()),
        "bulkhead" => repeat(|| {
            let permit = bulkhead.try_acquire_permission();
            let out = query(black_box(1)).ok();
            drop(black_box(permit));
            out
        }),
        "rate-limiter" => repeat(|| {
            black_box(limiter.try_acquire_permission(1));
            query(black_box(1)).ok()
        }),
        other => panic!("unknown mode `{other}`"),
    }
}

/// 200 000 calls of `f`, one loop per mode so that choosing the mode costs
/// nothing per call.
#[inline(never)]
fn repeat(mut f: impl FnMut() -> Option<u64>) {
    for _ in 0..200_000 {
        black_box(f());
    }
}

fn change(cb: &CircuitBreaker, config: CircuitBreakerConfig) {
    cb.change_config(config)
        .expect("a first change is accepted");
}
