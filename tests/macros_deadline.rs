//! `#[deadline]`: one budget of time for the whole call, outermost. It
//! bounds a retry's attempts and waits, a call that runs out of it reaches
//! the caller as `Error::DeadlineExceeded` (through `From<Rejection>` or the
//! fallback), and a call it cuts short is not a failure for the breaker
//! (a slow call past the breaker's threshold).
//! Both forms: `name` (resilience.toml's `[deadline.instances.*]`) and
//! `timeout` (fixed by the attribute), sync and async, across the thread-pool
//! hop and through tower's `named`.
//!
//! Tokio's time is paused and the registries run on a `TokioClock`: the
//! times below are exact and nothing sleeps for real.

use std::sync::Once;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resil::clock::{Clock, TokioClock};
use resil::config::Resilience;
use resil::{Error, Rejection};

#[derive(Debug, Clone, PartialEq)]
enum CheckoutError {
    Down,
    Rejected(Rejection),
}

impl From<Rejection> for CheckoutError {
    fn from(r: Rejection) -> Self {
        CheckoutError::Rejected(r)
    }
}

const CONFIG: &str = r#"
[deadline.instances.checkout]
timeout = "1s"

[deadline.instances.pay]
timeout = "500ms"

[deadline.instances.quote-route]
timeout = "300ms"

[retry.instances.checkout]
max-attempts = 10
wait-duration = "300ms"

[circuitbreaker.instances.pay]
minimum-number-of-calls = 2
sliding-window-size = 2

[circuitbreaker.instances.settle]
slow-call-duration-threshold = "400ms"

[circuitbreaker.instances.ledger]
slow-call-duration-threshold = "400ms"
"#;

static INIT: Once = Once::new();

/// The registries on a `TokioClock`, once per binary; each test's runtime
/// starts an hour on, past the clock's origin.
async fn init() {
    INIT.call_once(|| {
        Resilience::builder()
            .file_contents("resilience.toml", CONFIG)
            .env_vars(Vec::<(String, String)>::new())
            .clock(TokioClock::new())
            .init()
            .unwrap_or_else(|e| panic!("{e}"));
    });
    tokio::time::advance(Duration::from_secs(3600)).await;
}

static CHECKOUT_ATTEMPTS: AtomicU32 = AtomicU32::new(0);

/// Always down: only the deadline stops the retry of ten attempts.
#[resil::deadline(name = "checkout")]
#[resil::retry(name = "checkout")]
async fn checkout() -> Result<u32, CheckoutError> {
    CHECKOUT_ATTEMPTS.fetch_add(1, Ordering::SeqCst);
    Err(CheckoutError::Down)
}

#[tokio::test(start_paused = true)]
async fn the_deadline_bounds_the_retry_and_its_waits() {
    init().await;
    let clock = TokioClock::new();
    let started = clock.now();
    let outcome = checkout().await;
    let took = clock.now().saturating_duration_since(started);
    // attempts at 0, 300, 600 and 900 ms; a fifth wait would end at 1.2 s,
    // past the deadline of 1 s, so it is not started: the call ends with
    // the outcome it has
    assert_eq!(CHECKOUT_ATTEMPTS.load(Ordering::SeqCst), 4);
    assert_eq!(outcome, Err(CheckoutError::Down));
    assert_eq!(took, Duration::from_millis(900));
}

static PAY_CALLS: AtomicU32 = AtomicU32::new(0);

/// Takes a minute: the deadline of 500 ms cuts it short.
#[resil::deadline(name = "pay")]
#[resil::circuit_breaker(name = "pay")]
async fn pay() -> Result<u32, CheckoutError> {
    PAY_CALLS.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(60)).await;
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn a_call_cut_short_reaches_the_caller_and_is_no_failure_of_the_breaker() {
    init().await;
    let clock = TokioClock::new();
    for _ in 0..3 {
        let started = clock.now();
        match pay().await {
            Err(CheckoutError::Rejected(Rejection::DeadlineExceeded(e))) => {
                assert_eq!(e.name(), "pay");
            }
            other => panic!("expected DeadlineExceeded, got {other:?}"),
        }
        assert_eq!(
            clock.now().saturating_duration_since(started),
            Duration::from_millis(500)
        );
    }
    assert_eq!(PAY_CALLS.load(Ordering::SeqCst), 3);
    let breaker = resil::registries()
        .circuit_breakers()
        .circuit_breaker("pay");
    // three calls of a window of two: a failure each would have opened it
    assert_eq!(breaker.metrics().number_of_failed_calls(), 0);
    assert_eq!(breaker.state(), resil::circuit_breaker::State::Closed);
}

/// Takes a minute under the deadline of `pay` (500 ms), with a breaker
/// whose slow-call threshold is 400 ms: cut short past it.
#[resil::deadline(name = "pay")]
#[resil::circuit_breaker(name = "settle")]
async fn settle() -> Result<u32, CheckoutError> {
    tokio::time::sleep(Duration::from_secs(60)).await;
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn a_call_cut_short_past_the_slow_call_threshold_is_a_slow_call() {
    init().await;
    assert!(matches!(
        settle().await,
        Err(CheckoutError::Rejected(Rejection::DeadlineExceeded(_)))
    ));
    assert_one_slow_call("settle");
}

/// The breaker `name` counted one call, a slow one and not a failure (a
/// call the deadline cut short past the slow-call threshold).
fn assert_one_slow_call(name: &str) {
    let breaker = resil::registries().circuit_breakers().circuit_breaker(name);
    let m = breaker.metrics();
    assert_eq!(m.number_of_buffered_calls(), 1);
    assert_eq!(m.number_of_slow_successful_calls(), 1);
    assert_eq!(m.number_of_failed_calls(), 0);
}

/// A client function with its own breaker and no deadline of its own.
#[resil::circuit_breaker(name = "ledger")]
async fn post_to_ledger() -> Result<u32, CheckoutError> {
    tokio::time::sleep(Duration::from_secs(60)).await;
    Ok(1)
}

/// A handler that calls it under the deadline of `pay` (500 ms).
#[resil::deadline(name = "pay")]
async fn book() -> Result<u32, CheckoutError> {
    post_to_ledger().await
}

#[tokio::test(start_paused = true)]
async fn a_callers_deadline_that_cuts_a_call_short_makes_it_a_slow_call_of_the_callee() {
    init().await;
    assert!(matches!(
        book().await,
        Err(CheckoutError::Rejected(Rejection::DeadlineExceeded(_)))
    ));
    assert_one_slow_call("ledger");
}

/// A deadline fixed by the attribute, with a fallback that sees the error.
#[resil::deadline(timeout = "250ms", fallback = late)]
async fn quote(cents: u32) -> Result<u32, CheckoutError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(cents)
}

async fn late(cents: u32, error: Error<CheckoutError>) -> Result<u32, CheckoutError> {
    assert!(
        matches!(&error, Error::DeadlineExceeded(e) if e.kind() == "deadline"),
        "{error:?}"
    );
    Ok(cents + 1)
}

#[tokio::test(start_paused = true)]
async fn a_fixed_timeout_goes_to_the_fallback() {
    init().await;
    let clock = TokioClock::new();
    let started = clock.now();
    assert_eq!(quote(41).await, Ok(42));
    assert_eq!(
        clock.now().saturating_duration_since(started),
        Duration::from_millis(250)
    );
}

/// Reads the time left, inside an enclosing deadline.
#[resil::deadline(timeout = "2s")]
fn left() -> Result<Option<Duration>, CheckoutError> {
    Ok(resil::deadline::remaining())
}

#[test]
fn an_enclosing_deadline_that_ends_earlier_wins_and_a_passed_one_refuses() {
    let clock = resil::clock::ManualClock::new();
    {
        let _outer = resil::deadline::enter_on(clock.clone(), Duration::from_millis(300));
        let remaining = left().unwrap().unwrap();
        assert!(remaining <= Duration::from_millis(300), "{remaining:?}");
        clock.advance(Duration::from_millis(300));
        assert!(matches!(
            left(),
            Err(CheckoutError::Rejected(Rejection::DeadlineExceeded(_)))
        ));
    }
    let alone = left().unwrap().unwrap();
    assert!(
        alone > Duration::from_millis(1900) && alone <= Duration::from_secs(2),
        "{alone:?}"
    );
}

/// The same named deadline through tower: `named(..).deadline()`.
#[tokio::test(start_paused = true)]
async fn tower_named_takes_the_deadline_of_its_name() {
    use tower::{Layer as _, ServiceExt as _, service_fn};

    init().await;
    let layer = resil::tower::named("quote-route").deadline().build();
    let clock = TokioClock::new();

    let left = layer
        .layer(service_fn(|()| async {
            Ok::<_, CheckoutError>(resil::deadline::remaining())
        }))
        .oneshot(())
        .await
        .unwrap();
    assert_eq!(left, Some(Duration::from_millis(300)));

    let started = clock.now();
    let slow = layer
        .layer(service_fn(|()| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<_, CheckoutError>(())
        }))
        .oneshot(())
        .await;
    assert!(
        matches!(&slow, Err(Error::DeadlineExceeded(e)) if e.name() == "quote-route"),
        "{slow:?}"
    );
    assert_eq!(
        clock.now().saturating_duration_since(started),
        Duration::from_millis(300)
    );
}

/// The time left, read on a thread-pool bulkhead's worker.
#[resil::deadline(timeout = "5s")]
#[resil::thread_pool_bulkhead(name = "deadline-pool")]
fn on_the_pool() -> Result<Option<Duration>, CheckoutError> {
    Ok(resil::deadline::remaining())
}

#[test]
fn the_deadline_crosses_the_thread_pool_hop() {
    let left = on_the_pool()
        .unwrap()
        .expect("the worker sees the deadline");
    assert!(left <= Duration::from_secs(5), "{left:?}");
    // an enclosing deadline that has passed: the task is not run
    let clock = resil::clock::ManualClock::new();
    let _outer = resil::deadline::enter_on(clock.clone(), Duration::from_millis(10));
    clock.advance(Duration::from_millis(10));
    assert!(matches!(
        on_the_pool(),
        Err(CheckoutError::Rejected(Rejection::DeadlineExceeded(_)))
    ));
}
