//! Deadlines: how scopes nest, the deadline's layer, and how every pattern
//! spends from the deadline, sync and async, across the thread-pool hop.

mod support;

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resil_core::Error;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig, BulkheadEvent};
use resil_core::chain::{Call, Lift, Stack, once};
use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerClassifier, CircuitBreakerConfig, CircuitBreakerEvent,
    CircuitBreakerEventType,
};
use resil_core::clock::{Clock, ManualClock, TokioClock};
use resil_core::deadline::{self, Deadline, DeadlineConfig, DeadlineExceeded};
use resil_core::event::EventKind;
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil_core::retry::{Retry, RetryClassifier, RetryConfig};
use resil_core::thread_pool_bulkhead::{Jobs, ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
use support::Recorder;

#[global_allocator]
static ALLOC: support::CountingAlloc = support::CountingAlloc;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn checkout(timeout: Duration, clock: impl Clock) -> Deadline {
    let config = DeadlineConfig::builder().timeout(timeout).build().unwrap();
    Deadline::with_clock("checkout", config, clock)
}

/// The pattern and instance that noticed the deadline, if that is the error.
fn noticed<T, E>(result: &Result<T, Error<E>>) -> Option<(&'static str, String)> {
    match result {
        Err(Error::DeadlineExceeded(e)) => Some((e.kind(), e.name().to_owned())),
        _ => None,
    }
}

fn noticed_by(kind: &'static str, name: &str) -> Option<(&'static str, String)> {
    Some((kind, name.to_owned()))
}

#[test]
fn enter_nests_and_an_inner_deadline_only_shortens() {
    let clock = ManualClock::new();
    assert_eq!(deadline::remaining(), None);
    {
        let _outer = deadline::enter_on(clock.clone(), ms(800));
        assert_eq!(deadline::remaining(), Some(ms(800)));
        {
            let _longer = deadline::enter_on(clock.clone(), ms(5000));
            assert_eq!(deadline::remaining(), Some(ms(800)));
            let _shorter = deadline::enter_on(clock.clone(), ms(300));
            assert_eq!(deadline::remaining(), Some(ms(300)));
            assert_eq!(deadline::grpc_timeout().as_deref(), Some("300000u"));
        }
        assert_eq!(deadline::remaining(), Some(ms(800)));
        clock.advance(ms(500));
        assert_eq!(deadline::remaining(), Some(ms(300)));
        clock.advance(ms(1000));
        assert_eq!(deadline::remaining(), Some(Duration::ZERO));
    }
    assert_eq!(deadline::remaining(), None);
    assert_eq!(deadline::grpc_timeout(), None);
}

#[tokio::test(start_paused = true)]
async fn a_scope_follows_its_future_across_awaits_and_stays_in_it() {
    let clock = TokioClock::new();
    let inner_clock = clock.clone();
    let seen = deadline::scope_on(clock.clone(), ms(800), async move {
        tokio::time::sleep(ms(300)).await;
        let after_sleep = deadline::remaining();
        let longer = deadline::scope_on(inner_clock.clone(), ms(5000), async {
            tokio::task::yield_now().await;
            deadline::remaining()
        })
        .await;
        let shorter = deadline::scope_on(inner_clock, ms(100), async {
            tokio::task::yield_now().await;
            deadline::remaining()
        })
        .await;
        // Another task on this thread runs between the scope's polls: it
        // does not see the scope's deadline.
        let other = tokio::spawn(async { deadline::remaining() }).await.unwrap();
        (after_sleep, longer, shorter, other)
    })
    .await;
    assert_eq!(seen, (Some(ms(500)), Some(ms(500)), Some(ms(100)), None));
    assert_eq!(deadline::remaining(), None);
}

#[test]
fn the_deadline_layer_sets_the_deadline_and_refuses_a_call_with_no_time_left() {
    let clock = ManualClock::new();
    let checkout = checkout(ms(800), clock.clone());
    let seen = Stack::new()
        .deadline(checkout.part())
        .call(Lift(once(|| Ok::<_, ()>(deadline::remaining()))));
    assert_eq!(seen, Ok(Some(ms(800))));
    assert_eq!(
        deadline::remaining(),
        None,
        "the layer's deadline ends with the call"
    );

    let _outer = deadline::enter_on(clock.clone(), ms(100));
    let seen = Stack::new()
        .deadline(checkout.part())
        .call(Lift(once(|| Ok::<_, ()>(deadline::remaining()))));
    assert_eq!(
        seen,
        Ok(Some(ms(100))),
        "an enclosing deadline that is earlier wins"
    );

    clock.advance(ms(100));
    let ran = AtomicBool::new(false);
    let refused = Stack::new().deadline(checkout.part()).call(Lift(once(|| {
        ran.store(true, Ordering::Relaxed);
        Ok::<_, ()>(())
    })));
    assert_eq!(noticed(&refused), noticed_by("deadline", "checkout"));
    assert!(
        !ran.load(Ordering::Relaxed),
        "a call with no time left does not run"
    );
    assert_eq!(
        refused.unwrap_err().rejection_kind(),
        Some("DeadlineExceeded")
    );
}

#[test]
fn retry_starts_no_wait_that_would_end_past_the_deadline() {
    let clock = ManualClock::new();
    let config = RetryConfig::builder()
        .max_attempts(10)
        .wait_duration(ms(300))
        .build()
        .unwrap();
    let retry = Retry::with_clock("payments", config, clock.clone());
    let checkout = checkout(ms(1000), clock.clone());
    let rc = RetryClassifier::new();
    let mut attempts = 0;
    let out: Result<(), Error<&str>> = Stack::new()
        .deadline(checkout.part())
        .retry(retry.part(&rc))
        .call(Lift(|| {
            attempts += 1;
            clock.advance(ms(100));
            Err("connection refused")
        }));
    // 0-100 first attempt, wait to 400, 400-500 second, wait to 800,
    // 800-900 third: 100 ms left, less than the wait, so no fourth.
    assert_eq!(attempts, 3);
    assert!(matches!(out, Err(Error::Inner("connection refused"))));
    assert_eq!(clock.now().as_duration(), ms(900));
    let metrics = retry.metrics();
    assert_eq!(metrics.number_of_failed_calls_with_retry_attempt(), 1);
    assert!(
        deadline::exceeded_totals().contains(&("retry", "payments".to_owned(), 1)),
        "{:?}",
        deadline::exceeded_totals()
    );
}

#[tokio::test(start_paused = true)]
async fn retry_waits_async_only_while_time_is_left() {
    let clock = TokioClock::new();
    let config = RetryConfig::builder()
        .max_attempts(10)
        .wait_duration(ms(300))
        .build()
        .unwrap();
    let retry = Retry::with_clock("payments-async", config, clock.clone());
    let rc = RetryClassifier::new();
    let attempts = AtomicU32::new(0);
    let start = clock.now();
    let out: Result<(), Error<&str>> = deadline::scope_on(clock.clone(), ms(1000), async {
        Stack::new()
            .retry(retry.part(&rc))
            .call_async(Lift(|| {
                attempts.fetch_add(1, Ordering::Relaxed);
                async {
                    tokio::time::sleep(ms(100)).await;
                    Err("connection refused")
                }
            }))
            .await
    })
    .await;
    assert_eq!(attempts.load(Ordering::Relaxed), 3);
    assert!(matches!(out, Err(Error::Inner("connection refused"))));
    assert_eq!(clock.now().saturating_duration_since(start), ms(900));
}

#[tokio::test(start_paused = true)]
async fn the_time_limiter_waits_at_most_the_time_left_and_the_breaker_does_not_count_it() {
    let clock = TokioClock::new();
    let config = TimeLimiterConfig::builder()
        .timeout_duration(ms(5000))
        .build()
        .unwrap();
    let tl = TimeLimiter::with_clock("inventory-tl", config, clock.clone());
    let breaker = |slow: u64| {
        let config = CircuitBreakerConfig::builder()
            .slow_call_duration_threshold(ms(slow))
            .record_errors(["DeadlineExceeded", "Timeout"])
            .minimum_number_of_calls(1)
            .build()
            .unwrap();
        CircuitBreaker::with_clock("inventory-cb", config, clock.clone())
    };
    let cc = CircuitBreakerClassifier::new();
    for (slow, recorded_slow) in [(500, 1), (60_000, 0)] {
        let cb = breaker(slow);
        let start = clock.now();
        let out: Result<(), Error<()>> = deadline::scope_on(clock.clone(), ms(1000), async {
            Stack::new()
                .circuit_breaker(cb.part(&cc))
                .time_limiter(tl.part())
                .call_async(Lift(|| async {
                    tokio::time::sleep(ms(10_000)).await;
                    Ok(())
                }))
                .await
        })
        .await;
        assert_eq!(noticed(&out), noticed_by("timelimiter", "inventory-tl"));
        assert_eq!(clock.now().saturating_duration_since(start), ms(1000));
        let m = cb.metrics();
        assert_eq!(
            m.number_of_failed_calls(),
            0,
            "the caller's budget, not a failure"
        );
        assert_eq!(m.number_of_slow_calls(), recorded_slow);
        assert_eq!(m.number_of_buffered_calls(), recorded_slow);
    }
    assert_eq!(tl.metrics().number_of_timeout_calls(), 0);
    assert_eq!(tl.metrics().number_of_failed_calls(), 2);

    // Without a deadline, the limiter's own timeout is a failure as before.
    let cb = breaker(60_000);
    let out: Result<(), Error<()>> = Stack::new()
        .circuit_breaker(cb.part(&cc))
        .time_limiter(tl.part())
        .call_async(Lift(|| async {
            tokio::time::sleep(ms(10_000)).await;
            Ok(())
        }))
        .await;
    assert!(matches!(out, Err(Error::Timeout(_))));
    assert_eq!(cb.metrics().number_of_failed_calls(), 1);
}

#[test]
fn a_call_cut_short_by_the_deadline_is_never_a_breaker_failure() {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .slow_call_duration_threshold(ms(500))
        .record_errors(["DeadlineExceeded"])
        .minimum_number_of_calls(1)
        .build()
        .unwrap();
    let cb = CircuitBreaker::with_clock("inventory", config, clock.clone());
    let cc = CircuitBreakerClassifier::new();
    let cut_short =
        || Err::<(), Error<()>>(DeadlineExceeded::new("timelimiter", "tl".into()).into());
    let out = Stack::new()
        .circuit_breaker(cb.part(&cc))
        .call(Call(once(cut_short)));
    assert_eq!(noticed(&out), noticed_by("timelimiter", "tl"));
    assert_eq!(cb.metrics().number_of_buffered_calls(), 0, "quick: ignored");
    let out = Stack::new()
        .circuit_breaker(cb.part(&cc))
        .call(Call(once(|| {
            clock.advance(ms(600));
            cut_short()
        })));
    assert!(noticed(&out).is_some());
    let m = cb.metrics();
    assert_eq!(m.number_of_buffered_calls(), 1);
    assert_eq!(m.number_of_failed_calls(), 0);
    assert_eq!(
        m.number_of_slow_successful_calls(),
        1,
        "slow: counted as slow"
    );
}

/// The breaker counted one call cut short by the deadline: a slow call
/// (its `SUCCESS` event), or, when `quick`, an ignored one (`IGNORED_ERROR`)
/// that stays out of its window; never a failure.
fn assert_cut_short(cb: &CircuitBreaker, events: &Recorder<CircuitBreakerEvent>, quick: bool) {
    let m = cb.metrics();
    assert_eq!(m.number_of_failed_calls(), 0, "the caller's budget");
    let (slow, kind) = if quick {
        (0, CircuitBreakerEventType::IgnoredError)
    } else {
        (1, CircuitBreakerEventType::Success)
    };
    assert_eq!(m.number_of_slow_calls(), slow);
    assert_eq!(m.number_of_buffered_calls(), slow);
    let kinds: Vec<_> = events.take().iter().map(|e| e.event_type()).collect();
    assert_eq!(kinds, [kind]);
}

/// With no time limiter inside to notice it, the deadline itself gives up
/// on the call it cuts short and drops it, through the retry and the rate
/// limiter; the breaker's permit, dropped unfinished then, counts the call
/// as cut short (slow past its threshold, ignored otherwise), as when a
/// time limiter notices the deadline. The retry makes no second attempt.
#[tokio::test]
async fn a_call_the_deadline_gives_up_on_is_cut_short_for_the_breaker() {
    let clock = ManualClock::new();
    let dl = checkout(ms(1000), clock.clone());
    let retry = Retry::with_clock("pay", RetryConfig::default(), clock.clone());
    let rl = RateLimiter::with_clock("pay", RateLimiterConfig::default(), clock.clone());
    let (rc, cc) = (RetryClassifier::new(), CircuitBreakerClassifier::new());
    for slow in [500, 60_000] {
        let config = CircuitBreakerConfig::builder()
            .slow_call_duration_threshold(ms(slow))
            .record_errors(["DeadlineExceeded"])
            .build()
            .unwrap();
        let cb = CircuitBreaker::with_clock("pay", config, clock.clone());
        let events = Recorder::attach(cb.event_publisher());
        let attempts = AtomicU32::new(0);
        // The manual clock's sleep passes at once: the deadline runs out
        // while the call is pending.
        let out: Result<(), Error<()>> = Stack::new()
            .deadline(dl.part())
            .retry(retry.part(&rc))
            .circuit_breaker(cb.part(&cc))
            .rate_limiter(rl.part(1))
            .call_async(Lift(|| {
                attempts.fetch_add(1, Ordering::Relaxed);
                std::future::pending()
            }))
            .await;
        assert_eq!(noticed(&out), noticed_by("deadline", "checkout"));
        assert_eq!(attempts.load(Ordering::Relaxed), 1);
        assert_cut_short(&cb, &events, slow > 1000);
    }
}

/// A deadline that runs out on a call whose future holds a chain of its
/// own (an annotated function called under an annotated function's
/// deadline): that chain's breaker, dropped unfinished as the deadline
/// gives up, counts the call as cut short too, not as cancelled.
#[tokio::test]
async fn a_chain_inside_a_call_the_deadline_gives_up_on_counts_it_as_cut_short() {
    let clock = ManualClock::new();
    let dl = checkout(ms(1000), clock.clone());
    let cc = CircuitBreakerClassifier::new();
    for slow in [500, 60_000] {
        let config = CircuitBreakerConfig::builder()
            .slow_call_duration_threshold(ms(slow))
            .build()
            .unwrap();
        let cb = CircuitBreaker::with_clock("inventory", config, clock.clone());
        let events = Recorder::attach(cb.event_publisher());
        let inner = || {
            Stack::new()
                .circuit_breaker(cb.part(&cc))
                .call_async(Lift(once(std::future::pending::<Result<(), ()>>)))
        };
        let out = Stack::new()
            .deadline(dl.part())
            .call_async(Call(once(inner)))
            .await;
        assert_eq!(noticed(&out), noticed_by("deadline", "checkout"));
        assert_cut_short(&cb, &events, slow > 1000);
    }
    // Dropped by its caller with time left, the inner call is cancelled:
    // nothing is counted.
    let cb = CircuitBreaker::with_clock("inventory", Default::default(), clock.clone());
    let events = Recorder::attach(cb.event_publisher());
    {
        let _deadline = deadline::enter_on(clock.clone(), ms(1000));
        let mut call = pin!(
            Stack::new()
                .circuit_breaker(cb.part(&cc))
                .call_async(Lift(once(std::future::pending::<Result<(), ()>>)))
        );
        let polled = call.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        assert!(polled.is_pending());
    }
    assert_eq!(cb.metrics().number_of_buffered_calls(), 0);
    assert!(
        events.take().is_empty(),
        "a cancelled call publishes nothing"
    );
}

#[test]
fn the_rate_limiter_waits_no_longer_than_the_deadline() {
    let clock = ManualClock::new();
    let config = RateLimiterConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(ms(10_000))
        .timeout_duration(ms(5000))
        .build()
        .unwrap();
    let rl = RateLimiter::with_clock("quota", config, clock.clone());
    let call = || {
        Stack::new()
            .rate_limiter(rl.part(1))
            .call(Lift(once(|| Ok::<_, ()>(()))))
    };
    assert_eq!(call(), Ok(()));
    {
        let _deadline = deadline::enter_on(clock.clone(), ms(1000));
        let out = call();
        assert_eq!(noticed(&out), noticed_by("ratelimiter", "quota"));
        assert_eq!(
            clock.now().as_duration(),
            ms(1000),
            "waited the time left, no more"
        );
    }
    // Without the deadline the limiter's own timeout applies.
    let out = call();
    assert!(matches!(out, Err(Error::RequestNotPermitted(_))), "{out:?}");
}

#[tokio::test(start_paused = true)]
async fn the_bulkhead_queues_no_longer_than_the_deadline() {
    let clock = TokioClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(1)
        .max_wait_duration(ms(5000))
        .build()
        .unwrap();
    let bh = Bulkhead::with_clock("db", config, clock.clone());
    let events = Recorder::attach(bh.event_publisher());
    let held = bh.try_acquire_permission().unwrap();
    let start = clock.now();
    let out: Result<(), Error<()>> = deadline::scope_on(clock.clone(), ms(100), async {
        Stack::new()
            .bulkhead(bh.part())
            .call_async(Lift(|| async { Ok(()) }))
            .await
    })
    .await;
    assert_eq!(noticed(&out), noticed_by("bulkhead", "db"));
    assert_eq!(clock.now().saturating_duration_since(start), ms(100));
    assert!(
        !events.take().contains(&BulkheadEvent::CallRejected),
        "the deadline refused, not the bulkhead"
    );
    drop(held);
    assert_eq!(bh.metrics().available_concurrent_calls(), 1);
}

#[test]
fn a_blocking_call_with_no_time_left_does_not_queue_in_the_bulkhead() {
    let clock = ManualClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(1)
        .max_wait_duration(ms(5000))
        .build()
        .unwrap();
    let bh = Bulkhead::with_clock("db-sync", config, clock.clone());
    let held = bh.try_acquire_permission().unwrap();
    let _deadline = deadline::enter_on(clock.clone(), ms(10));
    clock.advance(ms(10));
    let out = Stack::new()
        .bulkhead(bh.part())
        .call(Lift(once(|| Ok::<_, ()>(()))));
    assert_eq!(noticed(&out), noticed_by("bulkhead", "db-sync"));
    assert_eq!(clock.now().as_duration(), ms(10), "no wait");
    drop(held);
}

fn pool(name: &str, clock: &ManualClock) -> ThreadPoolBulkhead {
    let config = ThreadPoolBulkheadConfig::builder()
        .core_thread_pool_size(1)
        .max_thread_pool_size(1)
        .queue_capacity(1)
        .build()
        .unwrap();
    ThreadPoolBulkhead::with_clock(name, config, clock.clone())
}

#[test]
fn the_deadline_crosses_the_thread_pool_hop() {
    let clock = ManualClock::new();
    let pool = pool("render", &clock);
    let _deadline = deadline::enter_on(clock.clone(), ms(800));
    let seen = Stack::new()
        .bulkhead(pool.part())
        .call(Jobs(|| || Ok::<_, ()>(deadline::remaining())));
    assert_eq!(seen, Ok(Some(ms(800))));
}

#[tokio::test]
async fn the_deadline_crosses_the_thread_pool_hop_async() {
    let clock = ManualClock::new();
    let pool = pool("render-async", &clock);
    let seen = deadline::scope_on(clock.clone(), ms(800), async {
        Stack::new()
            .bulkhead(pool.part())
            .call_async(Jobs(|| || Ok::<_, ()>(deadline::remaining())))
            .await
    })
    .await;
    assert_eq!(seen, Ok(Some(ms(800))));
}

#[test]
fn a_task_whose_deadline_passed_in_the_queue_is_not_run() {
    let clock = ManualClock::new();
    let pool = pool("render-queue", &clock);
    let (release, gate) = mpsc::channel::<()>();
    let busy = pool.submit(move || gate.recv().ok());
    let ran = Arc::new(AtomicBool::new(false));
    let caller = {
        let (pool, clock, ran) = (pool.clone(), clock.clone(), ran.clone());
        std::thread::spawn(move || {
            let _deadline = deadline::enter_on(clock, ms(100));
            Stack::new().bulkhead(pool.part()).call(Jobs(move || {
                let ran = ran.clone();
                move || {
                    ran.store(true, Ordering::Relaxed);
                    Ok::<_, ()>(())
                }
            }))
        })
    };
    while pool.metrics().queue_depth() == 0 {
        std::thread::yield_now();
    }
    clock.advance(ms(200));
    release.send(()).unwrap();
    assert_eq!(busy.wait().unwrap(), Some(()));
    let out = caller.join().unwrap();
    assert_eq!(
        noticed(&out),
        noticed_by("thread-pool-bulkhead", "render-queue")
    );
    assert!(!ran.load(Ordering::Relaxed));
}

#[tokio::test(start_paused = true)]
async fn an_async_call_running_past_the_deadline_is_dropped_with_its_permits() {
    let clock = TokioClock::new();
    let checkout = checkout(ms(800), clock.clone());
    let bh = Bulkhead::with_clock(
        "db-async",
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .build()
            .unwrap(),
        clock.clone(),
    );
    let cb = CircuitBreaker::with_clock("db-async", CircuitBreakerConfig::default(), clock.clone());
    let cc = CircuitBreakerClassifier::new();
    let start = clock.now();
    let out: Result<(), Error<()>> = Stack::new()
        .deadline(checkout.part())
        .circuit_breaker(cb.part(&cc))
        .bulkhead(bh.part())
        .call_async(Lift(|| async {
            tokio::time::sleep(ms(10_000)).await;
            Ok(())
        }))
        .await;
    assert_eq!(noticed(&out), noticed_by("deadline", "checkout"));
    assert_eq!(clock.now().saturating_duration_since(start), ms(800));
    assert_eq!(bh.metrics().available_concurrent_calls(), 1);
    assert_eq!(cb.metrics().number_of_buffered_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_call_at_each_await_gives_everything_back() {
    let clock = TokioClock::new();
    let checkout = checkout(ms(800), clock.clone());
    let bh = Bulkhead::with_clock(
        "db-cancel",
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .max_wait_duration(ms(5000))
            .build()
            .unwrap(),
        clock.clone(),
    );
    let mut cx = Context::from_waker(Waker::noop());
    // Dropped while queued in the bulkhead, then while the call runs.
    for hold in [true, false] {
        let held = hold.then(|| bh.try_acquire_permission().unwrap());
        {
            let mut call = pin!(
                Stack::new()
                    .deadline(checkout.part())
                    .bulkhead(bh.part())
                    .call_async(Lift(|| async {
                        tokio::time::sleep(ms(10_000)).await;
                        Ok::<_, ()>(())
                    }))
            );
            assert!(matches!(call.as_mut().poll(&mut cx), Poll::Pending));
            assert_eq!(deadline::remaining(), None, "set only while polled");
        }
        drop(held);
        assert_eq!(bh.metrics().available_concurrent_calls(), 1);
    }
}

#[test]
fn the_deadline_layer_allocates_nothing() {
    let clock = ManualClock::new();
    let checkout = checkout(ms(800), clock.clone());
    let cb = CircuitBreaker::with_clock("alloc", CircuitBreakerConfig::default(), clock.clone());
    let cc = CircuitBreakerClassifier::new();
    let call = || {
        Stack::new()
            .deadline(checkout.part())
            .circuit_breaker(cb.part(&cc))
            .call(Lift(once(|| Ok::<_, ()>(1))))
    };
    call().unwrap();
    let (_, n) = support::allocations_during(|| {
        for _ in 0..100 {
            call().unwrap();
        }
    });
    assert_eq!(n, 0, "a call through a deadline");
    let mut cx = Context::from_waker(Waker::noop());
    let (_, n) = support::allocations_during(|| {
        for _ in 0..100 {
            let fut = pin!(
                Stack::new()
                    .deadline(checkout.part())
                    .circuit_breaker(cb.part(&cc))
                    .call_async(Lift(|| async { Ok::<_, ()>(1) }))
            );
            assert!(fut.poll(&mut cx).is_ready());
        }
    });
    assert_eq!(n, 0, "a ready async call through a deadline");
}

#[test]
fn decorators_put_the_deadline_outermost() {
    use resil_core::Decorators;
    let clock = ManualClock::new();
    let checkout = checkout(ms(1000), clock.clone());
    let config = RetryConfig::builder()
        .max_attempts(10)
        .wait_duration(ms(300))
        .build()
        .unwrap();
    let retry = Retry::with_clock("decorated", config, clock.clone());
    // Written inside out: the deadline is still outermost, so the retry
    // spends from it.
    let chain = Decorators::new()
        .with_retry(&retry)
        .with_deadline(&checkout);
    let mut attempts = 0;
    let out = chain.call(|| {
        attempts += 1;
        clock.advance(ms(100));
        Err::<(), _>("connection refused")
    });
    assert!(matches!(out, Err(Error::Inner("connection refused"))));
    assert_eq!(attempts, 3);
    assert!(format!("{chain:?}").contains("Deadline(checkout)"));
    let (_, n) = support::allocations_during(|| {
        for _ in 0..100 {
            chain.call(|| Ok::<(), &str>(())).unwrap();
        }
    });
    assert_eq!(n, 0, "a call through Decorators with a deadline");
}

#[test]
fn a_fallback_on_the_deadline_layer_answers_a_call_with_no_time_left() {
    use resil_core::Decorators;
    use resil_core::chain::Layer;

    let clock = ManualClock::new();
    let checkout = checkout(ms(800), clock.clone());
    let _outer = deadline::enter_on(clock.clone(), ms(50));
    clock.advance(ms(50));
    let ran = AtomicBool::new(false);
    let answered = Decorators::<u32, ()>::new()
        .with_deadline(&checkout)
        .with_fallback(Layer::Deadline, |e| match e {
            Error::DeadlineExceeded(_) => Ok(0),
            other => Err(other),
        })
        .call(|| {
            ran.store(true, Ordering::Relaxed);
            Ok(7)
        });
    assert_eq!(answered, Ok(0));
    assert!(!ran.load(Ordering::Relaxed));
    assert_eq!(Layer::ORDER[0], Layer::Deadline, "outermost");
}
