//! The `tower` layers: each layer's behaviour through `ServiceExt::oneshot`
//! and a `service_fn`, the fixed order of `named`, cancellation at every
//! await, concurrent clones counted call by call, an axum router driven
//! in-process, and the allocation-free success path.

use std::convert::Infallible;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::routing::get;
use resil::Error;
use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
use resil::clock::{Clock, ManualClock, TokioClock};
use resil::hedge::{Hedge, HedgeConfig};
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil::retry::{Retry, RetryConfig};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
use resil::tower::{
    BulkheadLayer, CircuitBreakerLayer, HedgeLayer, IntoResponseLayer, RateLimiterLayer,
    RetryLayer, TimeLimiterLayer, named,
};
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};

#[global_allocator]
static ALLOC: resil_testkit::CountingAlloc = resil_testkit::CountingAlloc;

type IoResult<T> = Result<T, std::io::Error>;

fn io_error() -> std::io::Error {
    std::io::Error::other("upstream down")
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

fn breaker(name: &str, config: CircuitBreakerConfig) -> CircuitBreaker {
    CircuitBreaker::with_clock(name, config, TokioClock::new())
}

// ---------------------------------------------------------------- breaker

#[tokio::test(start_paused = true)]
async fn breaker_records_errors_and_responses_as_classified() {
    let cb = breaker("cb-classify", CircuitBreakerConfig::default());
    let layer = CircuitBreakerLayer::new(cb.clone())
        .record_response(|status: &u16| *status >= 500)
        .ignore_error(|e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound);
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(|status: u16| async move {
            match status {
                404 => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
                0 => Err(io_error()),
                s => Ok(s),
            }
        }));
    assert_eq!(svc.clone().oneshot(200).await.unwrap(), 200);
    assert_eq!(svc.clone().oneshot(503).await.unwrap(), 503);
    assert!(matches!(svc.clone().oneshot(0).await, Err(Error::Inner(_))));
    assert!(matches!(
        svc.clone().oneshot(404).await,
        Err(Error::Inner(_))
    ));
    let m = cb.metrics();
    assert_eq!(m.number_of_successful_calls(), 1);
    assert_eq!(m.number_of_failed_calls(), 2, "the 503 and the io error");
    assert_eq!(
        m.number_of_buffered_calls(),
        3,
        "the ignored 404 is not counted"
    );
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_refuses_in_call_without_calling_the_service() {
    let cb = breaker("cb-open", CircuitBreakerConfig::default());
    cb.transition_to_open_state().unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let mut svc = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(cb.clone()))
        .service(service_fn(move |_: ()| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { IoResult::Ok(()) }
        }));
    // `poll_ready` is the inner service's: ready although the breaker is open.
    let ready = svc.ready().await.unwrap();
    let refused = ready.call(());
    assert!(matches!(refused.await, Err(Error::CallNotPermitted(_))));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(cb.metrics().number_of_not_permitted_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_breaker_times_the_call_to_its_response() {
    let config = CircuitBreakerConfig::builder()
        .slow_call_duration_threshold(Duration::from_secs(2))
        .build()
        .unwrap();
    let cb = breaker("cb-slow", config);
    let svc = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(cb.clone()))
        .service(service_fn(|secs: u64| async move {
            tokio::time::sleep(Duration::from_secs(secs)).await;
            IoResult::Ok(secs)
        }));
    svc.clone().oneshot(1).await.unwrap();
    svc.oneshot(3).await.unwrap();
    assert_eq!(cb.metrics().number_of_slow_calls(), 1);
    assert_eq!(cb.metrics().number_of_slow_successful_calls(), 1);
}

// ---------------------------------------------------------------- retry

#[tokio::test(start_paused = true)]
async fn retry_calls_the_service_again_for_errors_it_retries() {
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::from_millis(100))
        .build()
        .unwrap();
    let retry = Retry::with_clock("retry-errors", config, TokioClock::new());
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let svc = ServiceBuilder::new()
        .layer(
            RetryLayer::new(retry.clone())
                .retry_on(|e: &std::io::Error| e.kind() != std::io::ErrorKind::InvalidInput),
        )
        .service(service_fn(move |fail_first: u32| {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                match fail_first {
                    u32::MAX => Err(std::io::Error::from(std::io::ErrorKind::InvalidInput)),
                    k if n < k => Err(io_error()),
                    _ => Ok(n),
                }
            }
        }));
    let started = retry.clock().now();
    assert_eq!(svc.clone().oneshot(2).await.unwrap(), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let elapsed = retry.clock().now().saturating_duration_since(started);
    assert_eq!(elapsed, Duration::from_millis(200), "two waits");

    calls.store(0, Ordering::SeqCst);
    assert!(matches!(
        svc.clone().oneshot(u32::MAX).await,
        Err(Error::Inner(_))
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried");

    calls.store(0, Ordering::SeqCst);
    assert!(matches!(svc.oneshot(10).await, Err(Error::Inner(_))));
    assert_eq!(calls.load(Ordering::SeqCst), 3, "max attempts");

    let m = retry.metrics();
    assert_eq!(m.number_of_successful_calls_with_retry_attempt(), 1);
    assert_eq!(m.number_of_failed_calls_without_retry_attempt(), 1);
    assert_eq!(m.number_of_failed_calls_with_retry_attempt(), 1);
}

#[tokio::test(start_paused = true)]
async fn retry_on_response_returns_the_last_response_or_fails_after_max_attempts() {
    for fail in [false, true] {
        let config = RetryConfig::builder()
            .max_attempts(2)
            .fail_after_max_attempts(fail)
            .build()
            .unwrap();
        let retry = Retry::with_clock("retry-responses", config, TokioClock::new());
        let svc = ServiceBuilder::new()
            .layer(RetryLayer::new(retry).retry_on_response(|s: &u16| *s == 503))
            .service(service_fn(|_: ()| async { IoResult::Ok(503u16) }));
        let result = svc.oneshot(()).await;
        if fail {
            assert!(matches!(result, Err(Error::MaxRetriesExceeded(_))));
        } else {
            assert_eq!(result.unwrap(), 503);
        }
    }
}

/// A service that is not ready on every other `poll_ready` and counts its
/// calls: the retry readies it again before each attempt.
#[derive(Clone)]
struct Flaky {
    polls: Arc<AtomicU32>,
    calls: Arc<AtomicU32>,
}

impl Service<u32> for Flaky {
    type Response = u32;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = IoResult<u32>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<IoResult<()>> {
        if self.polls.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
            cx.waker().wake_by_ref();
            Poll::Pending
        } else {
            Poll::Ready(Ok(()))
        }
    }

    fn call(&mut self, req: u32) -> Self::Future {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { if n < 2 { Err(io_error()) } else { Ok(req) } })
    }
}

#[tokio::test(start_paused = true)]
async fn retry_readies_the_service_before_each_attempt() {
    let retry = Retry::with_clock("retry-ready", RetryConfig::default(), TokioClock::new());
    let flaky = Flaky {
        polls: Arc::new(AtomicU32::new(0)),
        calls: Arc::new(AtomicU32::new(0)),
    };
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(retry))
        .service(flaky.clone());
    assert_eq!(svc.oneshot(7).await.unwrap(), 7);
    assert_eq!(flaky.calls.load(Ordering::SeqCst), 3);
    // Two polls (pending, ready) before each of the three calls.
    assert_eq!(flaky.polls.load(Ordering::SeqCst), 6);
}

// ---------------------------------------------------------------- bulkhead

#[tokio::test(start_paused = true)]
async fn a_full_bulkhead_refuses_and_a_waiting_call_gets_the_permit_in_time() {
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(1)
        .max_wait_duration(Duration::from_secs(1))
        .build()
        .unwrap();
    let bulkhead = Bulkhead::with_clock("bh-wait", config, TokioClock::new());
    let mut svc = ServiceBuilder::new()
        .layer(BulkheadLayer::new(bulkhead.clone()))
        .service(service_fn(|ms: u64| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            IoResult::Ok(ms)
        }));
    let first = tokio::spawn(svc.ready().await.unwrap().call(500));
    tokio::task::yield_now().await;
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 0);
    // Waits 500 ms of its 1 s for the permit.
    let second = svc.ready().await.unwrap().call(10);
    assert_eq!(second.await.unwrap(), 10);
    assert_eq!(first.await.unwrap().unwrap(), 500);

    let holder = tokio::spawn(svc.ready().await.unwrap().call(5_000));
    tokio::task::yield_now().await;
    let refused = svc.ready().await.unwrap().call(10);
    assert!(matches!(refused.await, Err(Error::BulkheadFull(_))));
    holder.await.unwrap().unwrap();
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
}

// ---------------------------------------------------------------- rate limiter

#[tokio::test(start_paused = true)]
async fn the_limiter_refuses_at_once_or_waits_for_a_permit_due_in_time() {
    let config = RateLimiterConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .build()
        .unwrap();
    let limiter = RateLimiter::with_clock("rl-refuse", config, TokioClock::new());
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let svc = ServiceBuilder::new()
        .layer(RateLimiterLayer::new(limiter))
        .service(service_fn(move |_: ()| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { IoResult::Ok(()) }
        }));
    svc.clone().oneshot(()).await.unwrap();
    let Err(Error::RequestNotPermitted(refused)) = svc.clone().oneshot(()).await else {
        panic!("the second call in the cycle is refused");
    };
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(refused.retry_after(), Some(Duration::from_secs(1)));

    let config = RateLimiterConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::from_secs(5))
        .build()
        .unwrap();
    let limiter = RateLimiter::with_clock("rl-wait", config, TokioClock::new());
    let clock = TokioClock::new();
    let svc = ServiceBuilder::new()
        .layer(RateLimiterLayer::new(limiter))
        .service(service_fn(move |_: ()| {
            let now = clock.now();
            async move { IoResult::Ok(now) }
        }));
    let first = svc.clone().oneshot(()).await.unwrap();
    let second = svc.oneshot(()).await.unwrap();
    assert_eq!(
        second.saturating_duration_since(first),
        Duration::from_secs(1),
        "called once its permit was due"
    );
}

// ---------------------------------------------------------------- time limiter

#[tokio::test(start_paused = true)]
async fn the_time_limiter_drops_the_inner_future_on_timeout() {
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let config = TimeLimiterConfig::builder()
        .timeout_duration(Duration::from_secs(1))
        .build()
        .unwrap();
    let tl = TimeLimiter::with_clock("tl-drop", config, TokioClock::new());
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let svc = ServiceBuilder::new()
        .layer(TimeLimiterLayer::new(tl.clone()))
        .service(service_fn(move |_: ()| {
            let guard = SetOnDrop(flag.clone());
            async move {
                let _guard = guard;
                std::future::pending::<IoResult<()>>().await
            }
        }));
    let start = tl.clock().now();
    assert!(matches!(svc.oneshot(()).await, Err(Error::Timeout(_))));
    let elapsed = tl.clock().now().saturating_duration_since(start);
    assert_eq!(elapsed, Duration::from_secs(1));
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(tl.metrics().number_of_timeout_calls(), 1);
}

// ---------------------------------------------------------------- hedge

#[tokio::test(start_paused = true)]
async fn the_hedge_sends_a_clone_of_a_slow_request_and_drops_the_loser() {
    let hedge = Hedge::with_clock(
        "tower-hedge",
        HedgeConfig::builder()
            .delay(Duration::from_millis(40))
            .max_hedged_attempts(2)
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let bh = Bulkhead::with_clock("tower-hedge", BulkheadConfig::default(), TokioClock::new());
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let svc = ServiceBuilder::new()
        .layer(HedgeLayer::new(hedge.clone()))
        .layer(BulkheadLayer::new(bh.clone()))
        .service(service_fn(move |sku: String| {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                // the first two attempts hang, the third answers at once
                if n < 2 {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                IoResult::Ok(format!("{sku}#{n}"))
            }
        }));
    let started = hedge.clock().now();
    assert_eq!(svc.oneshot("SKU-1".to_owned()).await.unwrap(), "SKU-1#2");
    assert_eq!(
        hedge.clock().now().saturating_duration_since(started),
        Duration::from_millis(80)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let m = hedge.metrics();
    assert_eq!(
        (m.number_of_hedge_wins(), m.number_of_hedged_attempts()),
        (1, 2)
    );
    // the two hanging attempts were dropped with their permits
    assert_eq!(
        bh.metrics().available_concurrent_calls(),
        bh.metrics().max_allowed_concurrent_calls()
    );
}

#[tokio::test(start_paused = true)]
async fn named_puts_the_hedge_inside_the_retry_and_outside_the_breaker() {
    let name = "tower-named-hedge";
    let registries = resil::registries();
    let hedge = registries.hedges().hedge_with(
        name,
        HedgeConfig::builder()
            .delay(Duration::from_millis(25))
            .build()
            .unwrap(),
    );
    let retry = registries.retries().retry_with(
        name,
        RetryConfig::builder()
            .max_attempts(2)
            .wait_duration(Duration::from_millis(1))
            .build()
            .unwrap(),
    );
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let svc = ServiceBuilder::new()
        .layer(named(name).circuit_breaker().hedge().retry().build())
        .service(service_fn(move |_: ()| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>(io_error()) }
        }));
    let result: Result<(), Error<std::io::Error>> = svc.oneshot(()).await;
    assert!(matches!(result, Err(Error::Inner(_))));
    // two retry attempts, each a hedged call of two failed attempts
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(hedge.metrics().number_of_failed_calls(), 2);
    let cb = registries.circuit_breakers().circuit_breaker(name);
    assert_eq!(cb.metrics().number_of_failed_calls(), 4);
    assert_eq!(
        retry.metrics().number_of_failed_calls_with_retry_attempt(),
        1
    );
}

// ---------------------------------------------------------------- named

#[tokio::test(start_paused = true)]
async fn named_stacks_the_global_instances_in_the_fixed_order() {
    let name = "tower-named-order";
    // Written in reverse: the stack is the same.
    let layer = named(name)
        .bulkhead()
        .time_limiter()
        .rate_limiter()
        .circuit_breaker()
        .retry()
        .build();
    let registries = resil::registries();
    let rl = registries.rate_limiters().rate_limiter(name);
    rl.event_publisher().enable_buffer(100);
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(move |_: ()| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>(io_error()) }
        }));
    // One flat error type for five layers.
    let result: Result<(), Error<std::io::Error>> = svc.oneshot(()).await;
    assert!(matches!(result, Err(Error::Inner(_))));
    let retry = registries.retries().retry(name);
    let attempts = u64::from(retry.config().max_attempts());
    assert_eq!(u64::from(calls.load(Ordering::SeqCst)), attempts);
    // Retry outside the breaker: the breaker saw every attempt.
    let cb = registries.circuit_breakers().circuit_breaker(name);
    assert_eq!(cb.metrics().number_of_failed_calls(), attempts);
    // The limiter inside the breaker and the retry: one permit per attempt.
    let acquired = rl.event_publisher().recent_events().len();
    assert_eq!(acquired as u64, attempts);
    // The bulkhead innermost: every permit back.
    let bh = registries.bulkheads().bulkhead(name);
    assert_eq!(
        bh.metrics().available_concurrent_calls(),
        bh.metrics().max_allowed_concurrent_calls()
    );
    assert_eq!(
        retry.metrics().number_of_failed_calls_with_retry_attempt(),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn named_passes_inner_rejections_through_flat() {
    let name = "tower-named-flat";
    let cb = resil::registries().circuit_breakers().circuit_breaker(name);
    cb.transition_to_open_state().unwrap();
    let svc = ServiceBuilder::new()
        .layer(named(name).circuit_breaker().bulkhead().build())
        .service(service_fn(|_: ()| async { IoResult::Ok(()) }));
    assert!(matches!(
        svc.oneshot(()).await,
        Err(Error::CallNotPermitted(_))
    ));
}

// ---------------------------------------------------------------- cancellation

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

// ---------------------------------------------------------------- concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_clones_count_every_outcome_exactly() {
    const CALLS: u32 = 400;
    let cb = CircuitBreaker::new(
        "concurrent-cb",
        CircuitBreakerConfig::builder()
            .sliding_window_size(1_000)
            .minimum_number_of_calls(1_000)
            .build()
            .unwrap(),
    );
    let bh = Bulkhead::new(
        "concurrent-bh",
        BulkheadConfig::builder()
            .max_concurrent_calls(8)
            .build()
            .unwrap(),
    );
    let svc = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(cb.clone()))
        .layer(BulkheadLayer::new(bh.clone()))
        .service(service_fn(|n: u32| async move {
            tokio::task::yield_now().await;
            if n.is_multiple_of(5) {
                Err(io_error())
            } else {
                Ok(n)
            }
        }));
    let tasks: Vec<_> = (0..CALLS)
        .map(|n| tokio::spawn(svc.clone().oneshot(n)))
        .collect();
    let (mut ok, mut failed, mut full) = (0u64, 0u64, 0u64);
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => ok += 1,
            Err(Error::Inner(Error::Inner(_))) => failed += 1,
            Err(Error::Inner(Error::BulkheadFull(_))) => full += 1,
            Err(other) => panic!("unexpected outcome: {other:?}"),
        }
    }
    assert_eq!(ok + failed + full, u64::from(CALLS));
    let m = cb.metrics();
    assert_eq!(m.number_of_successful_calls(), ok);
    // A `BulkheadFull` inside the breaker is recorded as a failure too.
    assert_eq!(m.number_of_failed_calls(), failed + full);
    assert_eq!(bh.metrics().available_concurrent_calls(), 8);
}

// ---------------------------------------------------------------- axum

async fn status_of(app: &Router, uri: &str) -> (StatusCode, Option<String>) {
    let response = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let retry_after = response
        .headers()
        .get(header::RETRY_AFTER)
        .map(|v| v.to_str().unwrap().to_owned());
    (response.status(), retry_after)
}

#[tokio::test(start_paused = true)]
async fn an_axum_router_answers_each_rejection_with_its_status() {
    let cb = breaker("axum-cb", CircuitBreakerConfig::default());
    let rl = RateLimiter::with_clock(
        "axum-rl",
        RateLimiterConfig::builder()
            .limit_for_period(1)
            .limit_refresh_period(Duration::from_millis(2_500))
            .timeout_duration(Duration::ZERO)
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let tl = TimeLimiter::with_clock(
        "axum-tl",
        TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_secs(1))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let bh = Bulkhead::new(
        "axum-bh",
        BulkheadConfig::builder()
            .max_concurrent_calls(0)
            .build()
            .unwrap(),
    );
    let app = Router::new()
        .route("/breaker", get(|| async { "ok" }))
        .route_layer((IntoResponseLayer, CircuitBreakerLayer::new(cb.clone())))
        .merge(
            Router::new()
                .route("/limited", get(|| async { "ok" }))
                .route_layer((IntoResponseLayer, RateLimiterLayer::new(rl))),
        )
        .merge(
            Router::new()
                .route(
                    "/slow",
                    get(|| async {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        "late"
                    }),
                )
                .route_layer((IntoResponseLayer, TimeLimiterLayer::new(tl))),
        )
        .merge(
            Router::new()
                .route("/full", get(|| async { "ok" }))
                .route_layer((IntoResponseLayer, BulkheadLayer::new(bh))),
        );
    assert_eq!(status_of(&app, "/breaker").await, (StatusCode::OK, None));
    cb.transition_to_open_state().unwrap();
    assert_eq!(
        status_of(&app, "/breaker").await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(status_of(&app, "/limited").await.0, StatusCode::OK);
    assert_eq!(
        status_of(&app, "/limited").await,
        (StatusCode::TOO_MANY_REQUESTS, Some("3".to_owned())),
        "2.5 s to the next permit, rounded up"
    );
    assert_eq!(
        status_of(&app, "/slow").await.0,
        StatusCode::GATEWAY_TIMEOUT
    );
    assert_eq!(
        status_of(&app, "/full").await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(status_of(&app, "/missing").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_route_behind_named_serves_and_a_handler_error_keeps_its_own_response() {
    async fn failing() -> Result<&'static str, Error<(StatusCode, &'static str)>> {
        Err(Error::Inner((StatusCode::IM_A_TEAPOT, "teapot")))
    }
    let app = Router::new()
        .route("/stock", get(|| async { "12" }))
        .route("/teapot", get(failing))
        .route_layer(
            ServiceBuilder::new().layer(IntoResponseLayer).layer(
                named("tower-axum-named")
                    .circuit_breaker()
                    .bulkhead()
                    .build(),
            ),
        );
    assert_eq!(status_of(&app, "/stock").await.0, StatusCode::OK);
    assert_eq!(status_of(&app, "/teapot").await.0, StatusCode::IM_A_TEAPOT);
}

/// A service that never gets ready: its `poll_ready` fails.
#[derive(Clone)]
struct NeverReady;

impl Service<()> for NeverReady {
    type Response = &'static str;
    type Error = Error<StatusCode>;
    type Future = std::future::Ready<Result<&'static str, Error<StatusCode>>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Err(Error::Inner(StatusCode::IM_A_TEAPOT)))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        panic!("called although it was not ready")
    }
}

#[tokio::test]
async fn a_service_that_cannot_get_ready_answers_with_its_error_and_is_not_called() {
    let svc = tower::Layer::layer(&IntoResponseLayer, NeverReady);
    let response = svc.oneshot(()).await.unwrap();
    assert_eq!(response.status(), StatusCode::IM_A_TEAPOT);
}

// ---------------------------------------------------------------- allocations

fn run_ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the success path completes in one poll"),
    }
}

#[test]
fn the_success_path_of_every_layer_allocates_nothing() {
    let clock = ManualClock::new();
    let inner = service_fn(|n: u32| async move { Ok::<_, Infallible>(n) });
    let cb = CircuitBreakerLayer::new(CircuitBreaker::with_clock(
        "alloc-cb",
        CircuitBreakerConfig::default(),
        clock.clone(),
    ))
    .record_response(|n: &u32| *n == u32::MAX);
    let retry = RetryLayer::new(Retry::with_clock(
        "alloc-retry",
        RetryConfig::default(),
        clock.clone(),
    ));
    let bh = BulkheadLayer::new(Bulkhead::with_clock(
        "alloc-bh",
        BulkheadConfig::default(),
        clock.clone(),
    ));
    let rl = RateLimiterLayer::new(RateLimiter::with_clock(
        "alloc-rl",
        RateLimiterConfig::default(),
        clock.clone(),
    ));
    let tl = TimeLimiterLayer::new(TimeLimiter::with_clock(
        "alloc-tl",
        TimeLimiterConfig::default(),
        clock.clone(),
    ));
    let mut services = (
        tower::Layer::layer(&cb, inner),
        tower::Layer::layer(&retry, inner),
        tower::Layer::layer(&bh, inner),
        tower::Layer::layer(&rl, inner),
        tower::Layer::layer(&tl, inner),
    );
    // Warm up (lazy statics, first-use paths), then count.
    for _ in 0..2 {
        let (_, n) = resil_testkit::allocations_during(|| {
            assert_eq!(run_ready(services.0.call(1)).unwrap(), 1);
            assert_eq!(run_ready(services.1.call(2)).unwrap(), 2);
            assert_eq!(run_ready(services.2.call(3)).unwrap(), 3);
            assert_eq!(run_ready(services.3.call(4)).unwrap(), 4);
            assert_eq!(run_ready(services.4.call(5)).unwrap(), 5);
        });
        let _ = n;
    }
    let (_, n) = resil_testkit::allocations_during(|| {
        for i in 0..100 {
            run_ready(services.0.call(i)).unwrap();
            run_ready(services.1.call(i)).unwrap();
            run_ready(services.2.call(i)).unwrap();
            run_ready(services.3.call(i)).unwrap();
            run_ready(services.4.call(i)).unwrap();
        }
    });
    assert_eq!(n, 0, "allocations on the success path");

    let mut stack = ServiceBuilder::new()
        .layer(
            named("tower-alloc")
                .retry()
                .circuit_breaker()
                .rate_limiter()
                .time_limiter()
                .bulkhead()
                .build(),
        )
        .service(inner);
    run_ready(stack.call(0)).unwrap();
    let (_, n) = resil_testkit::allocations_during(|| {
        for i in 0..100 {
            run_ready(stack.call(i)).unwrap();
        }
    });
    assert_eq!(n, 0, "allocations of the five-layer stack's success path");
}

/// `Retry::call_async`'s named future in an axum handler: `Send` for the
/// handler's own arguments, which the attempts borrow.
#[tokio::test]
async fn retry_call_async_serves_an_axum_handler_that_borrows_its_arguments() {
    async fn stock(
        axum::extract::State(retry): axum::extract::State<Arc<Retry>>,
        axum::extract::Path(sku): axum::extract::Path<String>,
    ) -> String {
        let sku = &sku;
        let attempts = AtomicU32::new(0);
        let answer = retry
            .call_async(|| async {
                if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err("refused")
                } else {
                    Ok(sku.len())
                }
            })
            .await;
        format!("{answer:?} after {}", attempts.load(Ordering::SeqCst))
    }
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::ZERO)
        .build()
        .unwrap();
    let router = Router::new()
        .route("/stock/{sku}", get(stock))
        .with_state(Arc::new(Retry::new("handler-retry", config)));
    let response = router
        .oneshot(Request::get("/stock/SKU-1").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let body = axum::body::to_bytes(response.into_body(), 1024)
        .await
        .unwrap();
    assert_eq!(&body[..], b"Ok(5) after 2");
}
