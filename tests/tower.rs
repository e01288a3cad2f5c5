//! The `tower` layers one by one, through `ServiceExt::oneshot` and a
//! `service_fn`: what each records, refuses, waits for or drops, concurrent
//! clones counted call by call, and the allocation-free success path.

use std::convert::Infallible;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resil::Error;
use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil::clock::{Clock, ManualClock, TokioClock};
use resil::hedge::{Hedge, HedgeConfig};
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil::retry::{Retry, RetryConfig};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
use resil::tower::{
    BulkheadLayer, CircuitBreakerLayer, HedgeLayer, RateLimiterLayer, RetryLayer, TimeLimiterLayer,
    named,
};
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};

#[global_allocator]
static ALLOC: resil_testkit::CountingAlloc = resil_testkit::CountingAlloc;

type IoResult<T> = Result<T, std::io::Error>;

fn io_error() -> std::io::Error {
    std::io::Error::other("upstream down")
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
