//! The attribute arguments that reach the rest of the core:
//! `#[retry(retry_after = .., consume_result = ..)]`,
//! `#[circuit_breaker(transition_on_result = ..)]` and
//! `#[rate_limiter(permits = N)]`, as a user writes them.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil::circuit_breaker::{CircuitBreakerConfig, State, TransitionCheckResult};
use resil::rate_limiter::RateLimiterConfig;
use resil::retry::{RetryConfig, RetryEvent};
use resil::{Error, Rejection};

#[derive(Debug, Clone, PartialEq, resil::Classify)]
enum ApiError {
    Throttled { retry_after_secs: u64 },
    Unavailable,
    Rejected(String),
}

impl From<Rejection> for ApiError {
    fn from(r: Rejection) -> Self {
        ApiError::Rejected(r.to_string())
    }
}

/// The server's `Retry-After`, when it sent one.
fn retry_after(e: &ApiError) -> Option<Duration> {
    match e {
        ApiError::Throttled { retry_after_secs } => Some(Duration::from_secs(*retry_after_secs)),
        _ => None,
    }
}

fn waits_of(name: &str) -> Arc<Mutex<Vec<Duration>>> {
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::from_millis(500))
        .build()
        .unwrap();
    let retry = resil::registries().retries().retry_with(name, config);
    let waits = Arc::new(Mutex::new(Vec::new()));
    let sink = waits.clone();
    retry.event_publisher().on_event(move |e| {
        if let RetryEvent::Retry { wait_interval, .. } = e.kind() {
            sink.lock().unwrap().push(*wait_interval);
        }
    });
    waits
}

static THROTTLED_CALLS: AtomicU32 = AtomicU32::new(0);

#[resil::retry(name = "args-retry-after", retry_after = retry_after)]
async fn throttled_then_down_then_ok() -> Result<u32, ApiError> {
    match THROTTLED_CALLS.fetch_add(1, Ordering::SeqCst) {
        0 => Err(ApiError::Throttled {
            retry_after_secs: 3,
        }),
        1 => Err(ApiError::Unavailable),
        n => Ok(n),
    }
}

#[tokio::test(start_paused = true)]
async fn retry_after_waits_what_the_error_says_else_the_interval() {
    let waits = waits_of("args-retry-after");
    assert_eq!(throttled_then_down_then_ok().await, Ok(2));
    assert_eq!(
        *waits.lock().unwrap(),
        [Duration::from_secs(3), Duration::from_millis(500)],
        "the server's 3 s, then the configured 500 ms"
    );
}

static RELEASED: Mutex<Vec<(u32, u32)>> = Mutex::new(Vec::new());
static PENDING_CALLS: AtomicU32 = AtomicU32::new(0);

fn is_pending(n: &u32) -> bool {
    *n < 10
}

/// Gives back what a result that is retried holds (a connection, a lease).
fn release(attempt: u32, n: &u32) {
    RELEASED.lock().unwrap().push((attempt, *n));
}

#[resil::retry(name = "args-consume", retry_on_result = is_pending, consume_result = release)]
fn pending_twice() -> Result<u32, ApiError> {
    let n = PENDING_CALLS.fetch_add(1, Ordering::SeqCst);
    Ok(if n < 2 { n } else { 10 })
}

#[test]
fn consume_result_gets_each_retried_result_but_not_the_returned_one() {
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::ZERO)
        .build()
        .unwrap();
    resil::registries()
        .retries()
        .retry_with("args-consume", config);
    assert_eq!(pending_twice(), Ok(10));
    assert_eq!(*RELEASED.lock().unwrap(), [(1, 0), (2, 1)]);
}

/// A maintenance answer opens the breaker at once, whatever the rate.
fn open_on_maintenance(result: Result<&&'static str, &Error<ApiError>>) -> TransitionCheckResult {
    match result {
        Ok(&"maintenance") => TransitionCheckResult::TransitionToOpenFor(Duration::from_secs(60)),
        _ => TransitionCheckResult::NoTransition,
    }
}

#[resil::circuit_breaker(name = "args-transition", transition_on_result = open_on_maintenance)]
fn status(answer: &'static str) -> Result<&'static str, ApiError> {
    Ok(answer)
}

#[test]
fn transition_on_result_opens_the_breaker_on_the_result_it_names() {
    let cb = resil::registries()
        .circuit_breakers()
        .circuit_breaker_with("args-transition", CircuitBreakerConfig::default());
    assert_eq!(status("ok"), Ok("ok"));
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(status("maintenance"), Ok("maintenance"));
    assert_eq!(cb.state(), State::Open);
    assert!(matches!(status("ok"), Err(ApiError::Rejected(_))));
}

#[resil::rate_limiter(name = "args-permits", permits = 3)]
fn bulk_export() -> Result<(), ApiError> {
    Ok(())
}

#[resil::rate_limiter(name = "args-permits-async", permits = 2)]
async fn bulk_export_async() -> Result<(), ApiError> {
    Ok(())
}

#[tokio::test]
async fn permits_takes_that_many_permits_per_call() {
    let config = || {
        RateLimiterConfig::builder()
            .limit_for_period(5)
            .limit_refresh_period(Duration::from_secs(3600))
            .timeout_duration(Duration::ZERO)
            .build()
            .unwrap()
    };
    let rl = resil::registries()
        .rate_limiters()
        .rate_limiter_with("args-permits", config());
    assert_eq!(bulk_export(), Ok(()));
    assert_eq!(rl.metrics().available_permissions(), 2);
    assert!(
        matches!(bulk_export(), Err(ApiError::Rejected(_))),
        "3 more than the 2 left"
    );

    let rl = resil::registries()
        .rate_limiters()
        .rate_limiter_with("args-permits-async", config());
    assert_eq!(bulk_export_async().await, Ok(()));
    assert_eq!(rl.metrics().available_permissions(), 3);
}
