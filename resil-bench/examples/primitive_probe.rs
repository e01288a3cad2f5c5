//! Instruction counts of the primitives' own call paths beside their peers',
//! for callgrind (deterministic where wall-clock benchmarks on a shared
//! machine are not):
//!
//! ```text
//! cargo build --release -p resil-bench --features bench --example primitive_probe
//! for m in bare breaker breaker-time breaker-buffered recloser failsafe rate-limiter governor unkeyed keyed-str keyed-u64; do
//!   valgrind --tool=callgrind --toggle-collect='primitive_probe::repeat*' \
//!     --callgrind-out-file=/tmp/cg-$m.out target/release/examples/primitive_probe $m
//! done
//! ```
//!
//! Only what runs inside `repeat` is counted (its 200 000 calls, and
//! whatever other thread runs meanwhile): the instances are created before.
//! `bare` calls the query; `breaker` through `CircuitBreaker::call` on
//! `of_defaults` (a count window of 100 calls, no events consumer, the
//! system clock), `breaker-time` on a time window of 100 s, `breaker-buffered`
//! on the default breaker with a 100-event buffer; `recloser` and `failsafe`
//! through the peers' `call` with policies that never open;
//! `rate-limiter` is `RateLimiter::try_acquire_permission(1)` with permits to
//! spare, `governor` its direct limiter's `check()`; `unkeyed`, `keyed-str`
//! and `keyed-u64` the `#[circuit_breaker]` attribute on the global
//! registry's instances (one `&str` or `u64` key already in the table).
//! A mode's total minus `bare`'s, divided by 200 000, is what one call adds.
//! A second argument sets the number of calls: with 20 000 000, the CPU
//! time `perf stat -e task-clock` reports is per call in nanoseconds ÷ 20,
//! and, unlike wall-clock time, it does not count the time other work on a
//! shared machine takes the CPU away.
//! callgrind counts a TSC read as one instruction: the clock's real cost
//! (about 13 ns on the benchmark machine) is in the criterion groups.

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

use failsafe::CircuitBreaker as _;
use resil_config::Resilience;
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, SlidingWindowType};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};

use std::sync::atomic::{AtomicUsize, Ordering};

/// Calls per mode: 200 000, or the second argument.
static CALLS: AtomicUsize = AtomicUsize::new(200_000);

#[inline(never)]
fn query(x: u64) -> Result<u64, u64> {
    Ok(black_box(x).wrapping_add(1))
}

#[derive(Debug)]
struct Refused;

impl From<resil::Rejection> for Refused {
    fn from(_: resil::Rejection) -> Self {
        Refused
    }
}

#[resil::circuit_breaker(name = "probe-plain")]
fn plain(x: u64) -> Result<u64, Refused> {
    query(x).map_err(|_| Refused)
}

#[resil::circuit_breaker(name = "probe-keyed", key = tenant)]
fn keyed(tenant: &str, x: u64) -> Result<u64, Refused> {
    query(x).map_err(|_| Refused)
}

#[resil::circuit_breaker(name = "probe-keyed-id", key = id)]
fn keyed_id(id: u64, x: u64) -> Result<u64, Refused> {
    query(x).map_err(|_| Refused)
}

/// `CALLS` calls of `f`; the only function callgrind counts.
#[inline(never)]
fn repeat<T>(mut f: impl FnMut() -> T) {
    for _ in 0..CALLS.load(Ordering::Relaxed) {
        black_box(f());
    }
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if let Some(calls) = std::env::args().nth(2) {
        CALLS.store(calls.parse().expect("a number of calls"), Ordering::Relaxed);
    }
    match mode.as_str() {
        "bare" => repeat(|| query(black_box(1)).ok()),
        "breaker" => {
            let cb = CircuitBreaker::of_defaults("probe");
            repeat(|| cb.call(|| query(black_box(1))).ok());
        }
        "breaker-time" => {
            let config = CircuitBreakerConfig::builder()
                .sliding_window(100, u32::MAX, SlidingWindowType::TimeBased)
                .build()
                .expect("a configuration");
            let cb = CircuitBreaker::new("probe", config);
            repeat(|| cb.call(|| query(black_box(1))).ok());
        }
        "breaker-buffered" => {
            let cb = CircuitBreaker::of_defaults("probe");
            cb.event_publisher().enable_buffer(100);
            repeat(|| cb.call(|| query(black_box(1))).ok());
        }
        "recloser" => {
            let rc = recloser::Recloser::custom().error_rate(1.1).build();
            repeat(|| rc.call(|| query(black_box(1))).ok());
        }
        "failsafe" => {
            let policy = failsafe::failure_policy::consecutive_failures(
                u32::MAX,
                failsafe::backoff::constant(Duration::from_secs(60)),
            );
            let fs = failsafe::Config::new().failure_policy(policy).build();
            repeat(|| fs.call(|| query(black_box(1))).ok());
        }
        "rate-limiter" => {
            let limiter = RateLimiter::new(
                "probe",
                RateLimiterConfig::builder()
                    .limit_for_period(u32::MAX)
                    .limit_refresh_period(Duration::from_secs(3600))
                    .timeout_duration(Duration::ZERO)
                    .build()
                    .expect("a configuration"),
            );
            repeat(|| limiter.try_acquire_permission(black_box(1)));
        }
        "governor" => {
            let limiter = governor::RateLimiter::direct(governor::Quota::per_hour(NonZeroU32::MAX));
            repeat(|| limiter.check().is_ok());
        }
        "unkeyed" | "keyed-str" | "keyed-u64" => {
            let toml = "[circuitbreaker.instances.probe-plain]\n\
                        [circuitbreaker.instances.probe-keyed]\n\
                        [circuitbreaker.instances.probe-keyed-id]\n";
            Resilience::builder()
                .file_contents("resilience.toml", toml)
                .env_vars(Vec::<(String, String)>::new())
                .init()
                .expect("a valid configuration");
            // the instances and the keys exist before counting starts
            plain(0).expect("closed");
            keyed("tenant-7", 0).expect("closed");
            keyed_id(7, 0).expect("closed");
            match mode.as_str() {
                "unkeyed" => repeat(|| plain(black_box(1)).ok()),
                "keyed-str" => repeat(|| keyed(black_box("tenant-7"), black_box(1)).ok()),
                _ => repeat(|| keyed_id(black_box(7), black_box(1)).ok()),
            }
        }
        other => panic!("unknown mode `{other}`"),
    }
}
