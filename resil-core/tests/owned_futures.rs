//! The owned async calls (`*_async_owned`): `'static` and `Send` futures that
//! keep their primitive alive and behave as the borrowing ones do.

use std::future::Future;
use std::time::Duration;

use resil_core::Error;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
use resil_core::circuit_breaker::{CircuitBreaker, Classifier};
use resil_core::clock::TokioClock;
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil_core::retry::{Retry, RetryClassifier, RetryConfig};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};

fn spawnable<F: Future + Send + 'static>(future: F) -> F {
    future
}

#[tokio::test(start_paused = true)]
async fn owned_calls_outlive_their_primitive_and_run_on_other_tasks() {
    let cb = CircuitBreaker::of_defaults("owned-cb");
    let call = spawnable(cb.call_async_owned(Classifier::new(), || async { Err::<(), _>("down") }));
    let metrics_of = cb.clone();
    drop(cb);
    assert_eq!(tokio::spawn(call).await.unwrap(), Err(Error::Inner("down")));
    assert_eq!(metrics_of.metrics().number_of_failed_calls(), 1);

    let config = BulkheadConfig::builder()
        .max_concurrent_calls(1)
        .build()
        .unwrap();
    let bh = Bulkhead::with_clock("owned-bh", config, TokioClock::new());
    let held = spawnable(bh.call_async_owned(|| async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok::<_, &str>(1)
    }));
    let refused = bh.call_async_owned(|| async { Ok::<_, &str>(2) });
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
    let waits = spawnable(rl.call_async_owned(|| async { Ok::<_, &str>(3) }));
    assert_eq!(rl.metrics().number_of_waiting_threads(), 1);
    assert_eq!(tokio::spawn(waits).await.unwrap(), Ok(3));
    assert_eq!(rl.metrics().number_of_waiting_threads(), 0);

    let config = TimeLimiterConfig::builder()
        .timeout_duration(Duration::from_secs(1))
        .build()
        .unwrap();
    let tl = TimeLimiter::with_clock("owned-tl", config, TokioClock::new());
    let hangs = spawnable(tl.call_async_owned(std::future::pending::<Result<(), &str>>));
    assert!(matches!(
        tokio::spawn(hangs).await.unwrap(),
        Err(Error::Timeout(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_retry_call_counts_its_attempts_like_call_async() {
    let config = RetryConfig::builder().max_attempts(3).build().unwrap();
    let retry = Retry::with_clock("owned-retry", config, TokioClock::new());
    let classifier = RetryClassifier::new();
    let mut call = retry.start_async_call_owned();
    let mut attempts = 0;
    let result: Result<(), Error<&str>> = loop {
        attempts += 1;
        let mut attempt = std::pin::pin!(async { Err(Error::Inner("busy")) });
        let outcome = std::future::poll_fn(|cx| call.poll_attempt(attempt.as_mut(), cx)).await;
        match call.settle(&classifier, outcome) {
            Ok(result) => break result,
            Err(wait) => call.sleep(wait).await,
        }
    };
    assert_eq!((attempts, result), (3, Err(Error::Inner("busy"))));
    assert_eq!(call.attempts(), 3);
    assert_eq!(
        retry.metrics().number_of_failed_calls_with_retry_attempt(),
        1
    );

    // Dropped between attempts: cancelled, nothing counted.
    let mut call = retry.start_async_call_owned();
    let mut attempt = std::pin::pin!(async { Err::<(), _>(Error::Inner("busy")) });
    let outcome = std::future::poll_fn(|cx| call.poll_attempt(attempt.as_mut(), cx)).await;
    assert!(call.settle(&RetryClassifier::new(), outcome).is_err());
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
