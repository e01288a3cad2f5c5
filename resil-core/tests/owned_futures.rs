//! Owned async calls: chains built from the primitives' `shared_part`s
//! (each holding its primitive's `Arc`) are `'static` and `Send` futures
//! that keep their primitive alive and behave as the borrowing ones do.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resil_core::Error;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
use resil_core::chain::{ChainFuture, Lift, Stack};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerClassifier};
use resil_core::clock::TokioClock;
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil_core::retry::{Retry, RetryClassifier, RetryConfig};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
use tokio_test::{assert_pending, task};

fn spawnable<F: Future + Send + 'static>(future: F) -> F {
    future
}

#[tokio::test(start_paused = true)]
async fn owned_calls_outlive_their_primitive_and_run_on_other_tasks() {
    let cb = CircuitBreaker::of_defaults("owned-cb");
    let call = spawnable(ChainFuture::new(
        Stack::new()
            .circuit_breaker(cb.shared_part(CircuitBreakerClassifier::new()))
            .around(Lift(|| async { Err::<(), _>("down") })),
    ));
    let metrics_of = cb.clone();
    drop(cb);
    assert_eq!(tokio::spawn(call).await.unwrap(), Err(Error::Inner("down")));
    assert_eq!(metrics_of.metrics().number_of_failed_calls(), 1);

    let config = BulkheadConfig::builder()
        .max_concurrent_calls(1)
        .build()
        .unwrap();
    let bh = Bulkhead::with_clock("owned-bh", config, TokioClock::new());
    let held = spawnable(ChainFuture::new(
        Stack::new()
            .bulkhead(bh.shared_part())
            .around(Lift(|| async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok::<_, &str>(1)
            })),
    ));
    let refused = ChainFuture::new(
        Stack::new()
            .bulkhead(bh.shared_part())
            .around(Lift(|| async { Ok::<_, &str>(2) })),
    );
    assert!(matches!(refused.await, Err(Error::BulkheadFull(_))));
    drop(held);
    assert_eq!(
        bh.metrics().available_concurrent_calls(),
        1,
        "dropped: permit back"
    );

    let config = RateLimiterConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(Duration::from_secs(1))
        .build()
        .unwrap();
    let rl = RateLimiter::with_clock("owned-rl", config, TokioClock::new());
    rl.try_acquire_permission(1);
    let waits = spawnable(ChainFuture::new(
        Stack::new()
            .rate_limiter(rl.shared_part(1))
            .around(Lift(|| async { Ok::<_, &str>(3) })),
    ));
    assert_eq!(rl.metrics().number_of_waiting_threads(), 1);
    assert_eq!(tokio::spawn(waits).await.unwrap(), Ok(3));
    assert_eq!(rl.metrics().number_of_waiting_threads(), 0);

    let config = TimeLimiterConfig::builder()
        .timeout_duration(Duration::from_secs(1))
        .build()
        .unwrap();
    let tl = TimeLimiter::with_clock("owned-tl", config, TokioClock::new());
    let hangs = spawnable(ChainFuture::new(
        Stack::new()
            .time_limiter(tl.shared_part())
            .around(Lift(std::future::pending::<Result<(), &str>>)),
    ));
    assert!(matches!(
        tokio::spawn(hangs).await.unwrap(),
        Err(Error::Timeout(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_retry_call_counts_its_attempts_like_call_async() {
    let config = RetryConfig::builder().max_attempts(3).build().unwrap();
    let retry = Retry::with_clock("owned-retry", config, TokioClock::new());
    let attempts = Arc::new(AtomicU32::new(0));
    let counted = attempts.clone();
    let call = spawnable(ChainFuture::new(
        Stack::new()
            .retry(retry.shared_part(RetryClassifier::new()))
            .around(Lift(move || {
                counted.fetch_add(1, Ordering::Relaxed);
                async { Err::<(), _>("busy") }
            })),
    ));
    let result = tokio::spawn(call).await.unwrap();
    assert_eq!(
        (attempts.load(Ordering::Relaxed), result),
        (3, Err(Error::Inner("busy")))
    );
    assert_eq!(
        retry.metrics().number_of_failed_calls_with_retry_attempt(),
        1
    );

    // Dropped between attempts (in the backoff after the first): cancelled,
    // nothing counted.
    let attempts = AtomicU32::new(0);
    let mut call = task::spawn(ChainFuture::new(
        Stack::new()
            .retry(retry.shared_part(RetryClassifier::new()))
            .around(Lift(|| {
                attempts.fetch_add(1, Ordering::Relaxed);
                async { Err::<(), _>("busy") }
            })),
    ));
    assert_pending!(call.poll());
    assert_eq!(attempts.load(Ordering::Relaxed), 1, "waiting to retry");
    drop(call);
    let m = retry.metrics();
    let ended = m.number_of_successful_calls_without_retry_attempt()
        + m.number_of_successful_calls_with_retry_attempt()
        + m.number_of_failed_calls_without_retry_attempt()
        + m.number_of_failed_calls_with_retry_attempt();
    assert_eq!(ended, 1, "only the first call ended");
    assert_eq!(
        m.number_of_total_calls(),
        4,
        "Resilience4j counts every attempt made"
    );
}
