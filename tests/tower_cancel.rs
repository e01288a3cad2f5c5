//! Cancellation through the `tower` layers: a response future dropped at
//! any of its awaits gives every permit back, leaves no waiter, and counts
//! no call; one a time limiter's layer gives up on counts as a drop for an
//! adaptive bulkhead's layer beneath it.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
use resil::clock::TokioClock;
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil::retry::{Retry, RetryConfig};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
use resil::tower::{
    BulkheadLayer, CircuitBreakerLayer, RateLimiterLayer, RetryLayer, TimeLimiterLayer,
};
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};

type IoResult<T> = Result<T, std::io::Error>;

fn io_error() -> std::io::Error {
    std::io::Error::other("upstream down")
}

fn breaker(name: &str, config: CircuitBreakerConfig) -> CircuitBreaker {
    CircuitBreaker::with_clock(name, config, TokioClock::new())
}

/// Pending once, then ready: one await point.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

fn yield_once() -> YieldOnce {
    YieldOnce(false)
}

/// Polls `future` `polls` times (with a waker that does nothing), then drops it.
fn poll_then_drop<F: Future>(future: F, polls: usize) -> bool {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..polls {
        if future.as_mut().poll(&mut cx).is_ready() {
            return true;
        }
    }
    false
}

#[tokio::test(start_paused = true)]
async fn dropping_the_response_future_at_every_await_returns_every_permit() {
    const AWAITS: usize = 4;
    let mut k = 0;
    loop {
        // A breaker HALF_OPEN with one probe, a bulkhead of one, a retry and
        // a time limiter around a service with `AWAITS` awaits.
        let cb = breaker(
            "cancel-cb",
            CircuitBreakerConfig::builder()
                .permitted_number_of_calls_in_half_open_state(1)
                .build()
                .unwrap(),
        );
        cb.transition_to_open_state().unwrap();
        cb.transition_to_half_open_state().unwrap();
        let bh = Bulkhead::with_clock(
            "cancel-bh",
            BulkheadConfig::builder()
                .max_concurrent_calls(1)
                .build()
                .unwrap(),
            TokioClock::new(),
        );
        let tl =
            TimeLimiter::with_clock("cancel-tl", TimeLimiterConfig::default(), TokioClock::new());
        let retry = Retry::with_clock("cancel-retry", RetryConfig::default(), TokioClock::new());
        let mut svc = ServiceBuilder::new()
            .layer(RetryLayer::new(retry.clone()))
            .layer(CircuitBreakerLayer::new(cb.clone()))
            .layer(TimeLimiterLayer::new(tl))
            .layer(BulkheadLayer::new(bh.clone()))
            .service(service_fn(|n: u32| async move {
                for _ in 0..AWAITS {
                    yield_once().await;
                }
                IoResult::Ok(n)
            }));
        let future = svc.ready().await.unwrap().call(k as u32);
        let finished = poll_then_drop(future, k);
        assert_eq!(
            bh.metrics().available_concurrent_calls(),
            1,
            "bulkhead permit after {k} polls"
        );
        if finished {
            assert_eq!(cb.state(), State::Closed);
            break;
        }
        assert_eq!(cb.state(), State::HalfOpen);
        assert_eq!(
            retry.metrics().number_of_total_calls(),
            0,
            "a cancelled call counts nothing"
        );
        // The probe permit came back: the next call is permitted.
        let probe = svc.ready().await.unwrap().call(0).await;
        assert_eq!(probe.unwrap(), 0, "probe permit after {k} polls");
        k += 1;
    }
    assert!(k > AWAITS, "every await was a drop point ({k} polls)");
}

#[tokio::test(start_paused = true)]
async fn dropping_a_call_that_waits_leaves_no_waiter_and_no_permit() {
    let bh = Bulkhead::with_clock(
        "cancel-queued",
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .max_wait_duration(Duration::from_secs(10))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let mut svc = ServiceBuilder::new()
        .layer(BulkheadLayer::new(bh.clone()))
        .service(service_fn(|_: ()| async {
            std::future::pending::<()>().await;
            IoResult::Ok(())
        }));
    let holder = svc.ready().await.unwrap().call(());
    assert!(!poll_then_drop(svc.ready().await.unwrap().call(()), 3));
    assert_eq!(bh.metrics().number_of_waiting_calls(), 0);
    drop(holder);
    assert_eq!(bh.metrics().available_concurrent_calls(), 1);

    let rl = RateLimiter::with_clock(
        "cancel-waiting",
        RateLimiterConfig::builder()
            .limit_for_period(1)
            .timeout_duration(Duration::from_secs(10))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    rl.try_acquire_permission(1);
    let svc = ServiceBuilder::new()
        .layer(RateLimiterLayer::new(rl.clone()))
        .service(service_fn(|_: ()| async { IoResult::Ok(()) }));
    let waiting = svc.oneshot(());
    assert!(!poll_then_drop(waiting, 2));
    assert_eq!(rl.metrics().number_of_waiting_threads(), 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_retry_between_attempts_counts_no_call() {
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::from_secs(1))
        .build()
        .unwrap();
    let retry = Retry::with_clock("cancel-retry-wait", config, TokioClock::new());
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(retry.clone()))
        .service(service_fn(move |_: ()| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>(io_error()) }
        }));
    // The first attempt fails; the future then waits its second.
    assert!(!poll_then_drop(svc.oneshot(()), 3));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let m = retry.metrics();
    assert_eq!(m.number_of_failed_calls_with_retry_attempt(), 0);
    assert_eq!(m.number_of_failed_calls_without_retry_attempt(), 0);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "no attempt after the drop");
}

/// A `TimeLimiterLayer` over an adaptive `BulkheadLayer` (the bulkhead's
/// service inside the time limiter's): the call the time limiter gives up
/// on is a drop for the bulkhead, which lowers its limit, where a call its
/// caller drops is not (it gives no sample).
#[tokio::test(start_paused = true)]
async fn a_time_limiter_layers_timeout_is_a_drop_for_an_adaptive_bulkhead_beneath() {
    use resil::bulkhead::{LimitAlgorithm, Sample};
    let ms = Duration::from_millis;
    let clock = TokioClock::new();
    let config = BulkheadConfig::builder()
        .limit_algorithm(LimitAlgorithm::Aimd)
        .initial_concurrent_calls(2)
        .max_concurrent_calls(100)
        .min_window_time(ms(100))
        .max_window_time(ms(100))
        .build()
        .unwrap();
    let bulkhead = Bulkhead::with_clock("adaptive", config, clock.clone());
    let time_limiter = TimeLimiter::with_clock(
        "handler",
        TimeLimiterConfig::builder()
            .timeout_duration(ms(20))
            .build()
            .unwrap(),
        clock,
    );
    // A first window closed, then nine 10 ms calls of the next, one in
    // flight at a time: the next call to end, 20 ms on, closes it.
    for _ in 0..10 {
        let permit = bulkhead.try_acquire_permission().unwrap();
        tokio::time::advance(ms(10)).await;
        permit.finish_with(Sample::Success);
    }
    tokio::time::advance(ms(10)).await;
    let svc = ServiceBuilder::new()
        .layer(TimeLimiterLayer::new(time_limiter))
        .layer(BulkheadLayer::new(bulkhead.clone()))
        .service(service_fn(|()| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            IoResult::Ok(())
        }));
    let out = svc.oneshot(()).await;
    assert!(matches!(out, Err(resil::Error::Timeout(_))), "{out:?}");
    assert_eq!(
        bulkhead.metrics().max_allowed_concurrent_calls(),
        1,
        "⌊2 × 0.9⌋: the call the time limiter gave up on was a drop"
    );
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
}
