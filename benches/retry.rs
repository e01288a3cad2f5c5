//! Retry against the bare call and backon 1.6, in one run.
//!
//! - `retry_success`: a call that succeeds at once, the path almost every call
//!   takes: resil's `Retry::call` (default config: 3 attempts, 500 ms) and
//!   backon's blocking retry (constant 500 ms, 2 retries).
//! - `retry_one_failure`: a call that fails once and then succeeds, with the
//!   sleeps taken off both (resil on a clock whose `sleep` returns at once,
//!   backon with a no-op sleeper), so that it measures the bookkeeping of one
//!   retry.
//!
//! - `retry_success_async`: the success at once of an async call, resil's
//!   `Retry::call_async` against backon's `Retryable` (with a sleeper that
//!   returns at once, never used), each loop inside one `block_on`.
//!
//! Run: `cargo bench -p resil-bench --features bench --bench retry -- --warm-up-time 1 --measurement-time 3`

#![allow(clippy::disallowed_methods)] // a benchmark measures real time

use std::hint::black_box;
use std::time::Duration;

use std::time::Instant;

use backon::{BlockingRetryable, ConstantBuilder, Retryable};
use criterion::{Criterion, criterion_group, criterion_main};
use resil_core::clock::{Clock, ManualClock, Nanos};
use resil_core::retry::{Retry, RetryConfig};

#[derive(Debug)]
struct Refused;

#[inline(never)]
fn query(x: u64) -> Result<u64, Refused> {
    Ok(black_box(x).wrapping_add(1))
}

/// A clock that never moves and never sleeps, the counterpart of backon's no-op sleeper.
#[derive(Debug)]
struct NoSleep;

impl Clock for NoSleep {
    fn now(&self) -> Nanos {
        Nanos::ZERO
    }
    fn sleep(&self, _: Duration) {}
}

fn backoff() -> ConstantBuilder {
    ConstantBuilder::new()
        .with_delay(Duration::from_millis(500))
        .with_max_times(2)
}

fn success(c: &mut Criterion) {
    let mut g = c.benchmark_group("retry_success");
    g.bench_function("bare", |b| b.iter(|| query(black_box(1))));

    let retry = Retry::with_clock("bench", RetryConfig::default(), ManualClock::new());
    g.bench_function("resil", |b| {
        b.iter(|| retry.call(|| query(black_box(1))));
    });

    let builder = backoff();
    g.bench_function("backon", |b| {
        b.iter(|| (|| query(black_box(1))).retry(builder).call());
    });
    g.finish();
}

async fn query_async(x: u64) -> Result<u64, Refused> {
    query(x)
}

fn success_async(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let mut g = c.benchmark_group("retry_success_async");
    macro_rules! looped {
        ($name:literal, $call:expr) => {
            g.bench_function($name, |b| {
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
    let retry = Retry::with_clock("bench", RetryConfig::default(), ManualClock::new());
    let builder = backoff();
    looped!("bare", query_async(black_box(1)));
    looped!("resil", retry.call_async(|| query_async(black_box(1))));
    looped!(
        "backon",
        (|| query_async(black_box(1)))
            .retry(builder)
            .sleep(|_: Duration| std::future::ready(()))
    );
    g.finish();
}

fn one_failure(c: &mut Criterion) {
    let mut g = c.benchmark_group("retry_one_failure");

    let retry = Retry::with_clock("bench", RetryConfig::default(), NoSleep);
    g.bench_function("resil", |b| {
        b.iter(|| {
            let mut attempt = 0;
            retry.call(|| {
                attempt += 1;
                if attempt == 1 {
                    Err(Refused)
                } else {
                    query(black_box(1))
                }
            })
        });
    });

    let builder = backoff();
    g.bench_function("backon", |b| {
        b.iter(|| {
            let mut attempt = 0;
            (|| {
                attempt += 1;
                if attempt == 1 {
                    Err(Refused)
                } else {
                    query(black_box(1))
                }
            })
            .retry(builder)
            .sleep(|d: Duration| {
                black_box(d);
            })
            .call()
        });
    });
    g.finish();
}

criterion_group!(benches, success, success_async, one_failure);
criterion_main!(benches);
