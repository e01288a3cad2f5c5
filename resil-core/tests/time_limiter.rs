//! The time limiter in paused tokio time: cancellation by drop, zero
//! timeouts, events and counters, detached futures, `Send`, allocation on
//! the ready path, clocks and registries.

mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resil_core::Error;
use resil_core::bulkhead::BulkheadFull;
use resil_core::chain::{Call, ChainFuture, Stack};
use resil_core::clock::{Clock, ManualClock, SystemClock, TokioClock};
use resil_core::rate_limiter::RequestNotPermitted;
use resil_core::registry::TimeLimiterRegistry;
use resil_core::thread_pool_bulkhead::ThreadPoolBulkhead;
use resil_core::time_limiter::{
    TimeLimiter, TimeLimiterConfig, TimeLimiterEvent, TimeLimiterEventType,
};
use support::Recorder;
use tokio::time::sleep;
use tokio_test::{assert_pending, assert_ready, task};

#[global_allocator]
static A: support::CountingAlloc = support::CountingAlloc;

use TimeLimiterEvent::{Success, Timeout};

const ZERO: Duration = Duration::ZERO;

const SEC: Duration = Duration::from_secs(1);

fn config(timeout: Duration, cancel: bool) -> TimeLimiterConfig {
    TimeLimiterConfig::builder()
        .timeout_duration(timeout)
        .cancel_running_future(cancel)
        .build()
        .unwrap()
}

fn limiter(timeout: Duration) -> TimeLimiter {
    TimeLimiter::with_clock("tl", config(timeout, true), TokioClock::new())
}

/// Sets its flag when dropped: observes that a future was really dropped.
struct DropGuard(Arc<AtomicBool>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn a_timeout_drops_the_future() {
    let tl = limiter(Duration::from_millis(800));
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let (d, f) = (dropped.clone(), finished.clone());
    let start = tl.clock().now();
    let result = tl
        .call_async(|| async move {
            let _guard = DropGuard(d);
            sleep(SEC * 5).await;
            f.store(true, Ordering::SeqCst);
            Ok::<_, std::io::Error>(())
        })
        .await;
    match result {
        Err(Error::Timeout(t)) => {
            assert_eq!(t.name(), "tl");
            assert_eq!(t.timeout(), Duration::from_millis(800));
            assert_eq!(t.to_string(), "time limiter `tl` timed out after 800ms");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        tl.clock().now().saturating_duration_since(start),
        Duration::from_millis(800)
    );
    assert!(
        dropped.load(Ordering::SeqCst),
        "the future was dropped at the timeout"
    );
    sleep(SEC * 10).await;
    assert!(!finished.load(Ordering::SeqCst), "and never resumed");
}

#[tokio::test(start_paused = true)]
async fn the_caller_waits_until_the_timeout_and_no_longer() {
    let tl = limiter(SEC);
    let mut call = task::spawn(tl.call_async(|| async {
        sleep(SEC * 3).await;
        Ok::<_, ()>(1)
    }));
    assert_pending!(call.poll());
    tokio::time::advance(Duration::from_millis(999)).await;
    assert_pending!(call.poll());
    tokio::time::advance(Duration::from_millis(1)).await;
    assert!(matches!(assert_ready!(call.poll()), Err(Error::Timeout(_))));
}

#[tokio::test(start_paused = true)]
async fn a_future_done_in_time_succeeds_after_waiting() {
    let tl = limiter(SEC);
    let start = tl.clock().now();
    let v = tl
        .call_async(|| async {
            sleep(Duration::from_millis(600)).await;
            Ok::<_, ()>(5)
        })
        .await;
    assert_eq!(v, Ok(5));
    assert_eq!(
        tl.clock().now().saturating_duration_since(start),
        Duration::from_millis(600)
    );
    // A future due at the same instant as the timer wins: it is polled first.
    let v = tl
        .call_async(|| async {
            sleep(SEC).await;
            Ok::<_, ()>(6)
        })
        .await;
    assert_eq!(v, Ok(6));
}

#[tokio::test(start_paused = true)]
async fn a_zero_timeout_accepts_only_futures_done_at_once() {
    let tl = limiter(Duration::ZERO);
    assert_eq!(tl.call_async(|| async { Ok::<_, ()>(1) }).await, Ok(1));
    let start = tl.clock().now();
    let dropped = Arc::new(AtomicBool::new(false));
    let d = dropped.clone();
    let r = tl
        .call_async(|| async move {
            let _guard = DropGuard(d);
            tokio::task::yield_now().await;
            Ok::<_, ()>(2)
        })
        .await;
    assert!(matches!(r, Err(Error::Timeout(_))));
    assert_eq!(
        tl.clock().now().saturating_duration_since(start),
        Duration::ZERO
    );
    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn events_and_counters_follow_each_outcome() {
    let tl = limiter(SEC);
    let rec = Recorder::attach(tl.event_publisher());
    let timeouts = Arc::new(AtomicUsize::new(0));
    let t = timeouts.clone();
    tl.event_publisher()
        .on(TimeLimiterEventType::Timeout, move |e| {
            assert_eq!(e.name(), "tl");
            t.fetch_add(1, Ordering::SeqCst);
        });

    // a unit result is a success.
    assert_eq!(tl.call_async(|| async { Ok::<_, &str>(()) }).await, Ok(()));
    assert_eq!(
        tl.call_async(|| async { Err::<(), _>("db down") }).await,
        Err(Error::Inner("db down"))
    );
    let _ = tl
        .call_async(|| async {
            sleep(SEC * 2).await;
            Ok::<_, &str>(())
        })
        .await;
    let rejected: Result<(), Error<&str>> =
        ChainFuture::new(Stack::new().time_limiter(tl.part()).around(Call(|| async {
            Err(Error::RequestNotPermitted(RequestNotPermitted::new(
                "rl".into(),
            )))
        })))
        .await;
    assert!(matches!(rejected, Err(Error::RequestNotPermitted(_))));
    let passed: Result<u8, Error<&str>> = ChainFuture::new(
        Stack::new()
            .time_limiter(tl.part())
            .around(Call(|| async { Ok(3) })),
    )
    .await;
    assert_eq!(passed, Ok(3));

    assert_eq!(
        rec.take(),
        [
            Success { elapsed: ZERO },
            TimeLimiterEvent::Error {
                error_kind: None,
                elapsed: ZERO
            },
            Timeout { elapsed: SEC },
            TimeLimiterEvent::Error {
                error_kind: Some("RequestNotPermitted"),
                elapsed: ZERO
            },
            Success { elapsed: ZERO },
        ]
    );
    let m = tl.metrics();
    assert_eq!(
        (
            m.number_of_successful_calls(),
            m.number_of_failed_calls(),
            m.number_of_timeout_calls()
        ),
        (2, 2, 1)
    );
    assert_eq!(timeouts.load(Ordering::SeqCst), 1);
    assert_eq!(TimeLimiterEventType::Success.as_str(), "SUCCESS");
    assert_eq!(TimeLimiterEventType::Error.as_str(), "ERROR");
    assert_eq!(TimeLimiterEventType::Timeout.as_str(), "TIMEOUT");
}

#[tokio::test(start_paused = true)]
async fn a_detached_future_keeps_running_after_the_caller_timed_out() {
    let tl = TimeLimiter::with_clock("tl", config(SEC, false), TokioClock::new());
    let rec = Recorder::attach(tl.event_publisher());
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let (d, f) = (dropped.clone(), finished.clone());
    let start = tl.clock().now();
    let result = tl
        .call_async_detached(|| async move {
            let _guard = DropGuard(d);
            sleep(SEC * 3).await;
            f.store(true, Ordering::SeqCst);
            Ok::<_, std::io::Error>(42)
        })
        .await;
    assert!(matches!(result, Err(Error::Timeout(_))));
    assert_eq!(
        tl.clock().now().saturating_duration_since(start),
        SEC,
        "the caller got the timeout at once"
    );
    assert!(!dropped.load(Ordering::SeqCst));
    assert!(!finished.load(Ordering::SeqCst));
    sleep(SEC * 2).await;
    tokio::task::yield_now().await;
    assert!(
        finished.load(Ordering::SeqCst),
        "the work completed in the background"
    );
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(rec.take(), [Timeout { elapsed: SEC }]);

    // In time, a detached call is an ordinary one.
    let r = ChainFuture::new(Stack::new().time_limiter(tl.detaching_part()).around(Call(
        || async {
            sleep(Duration::from_millis(10)).await;
            Ok::<_, Error<()>>(1)
        },
    )))
    .await;
    assert_eq!(r, Ok(1));
    assert_eq!(
        rec.take(),
        [Success {
            elapsed: Duration::from_millis(10)
        }],
        "timed from its first poll that was not ready"
    );
}

#[tokio::test(start_paused = true)]
async fn a_detached_call_cancels_when_the_config_says_so() {
    let tl = limiter(SEC);
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let (d, f) = (dropped.clone(), finished.clone());
    let result = tl
        .call_async_detached(|| async move {
            let _guard = DropGuard(d);
            sleep(SEC * 3).await;
            f.store(true, Ordering::SeqCst);
            Ok::<_, ()>(())
        })
        .await;
    assert!(matches!(result, Err(Error::Timeout(_))));
    assert!(dropped.load(Ordering::SeqCst));
    sleep(SEC * 5).await;
    assert!(!finished.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn a_borrowing_call_cancels_even_when_the_config_says_not_to() {
    let tl = TimeLimiter::with_clock("tl", config(SEC, false), TokioClock::new());
    let dropped = Arc::new(AtomicBool::new(false));
    let d = dropped.clone();
    let local = String::from("borrowed");
    let result = tl
        .call_async(|| async {
            let _guard = DropGuard(d);
            sleep(SEC * 3).await;
            Ok::<_, ()>(local.len())
        })
        .await;
    assert!(matches!(result, Err(Error::Timeout(_))));
    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_the_future_propagates_and_publishes_nothing() {
    let tl = limiter(SEC);
    let rec = Recorder::attach(tl.event_publisher());
    let tl2 = tl.clone();
    let joined = tokio::spawn(async move {
        tl2.call_async(|| async {
            sleep(Duration::from_millis(5)).await;
            if true {
                panic!("bug");
            }
            Ok::<_, ()>(())
        })
        .await
    })
    .await;
    assert!(joined.unwrap_err().is_panic());
    assert!(rec.take().is_empty());
    assert_eq!(tl.metrics(), Default::default());
}

#[test]
fn on_a_manual_clock_a_pending_future_times_out_and_the_clock_moves() {
    let clock = ManualClock::new();
    let tl = TimeLimiter::with_clock(
        "tl",
        config(Duration::from_millis(300), true),
        clock.clone(),
    );
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);

    let mut ready = pin!(tl.call_async(|| async { Ok::<_, ()>(1) }));
    assert_eq!(ready.as_mut().poll(&mut cx), Poll::Ready(Ok(1)));
    assert_eq!(
        clock.now().as_duration(),
        Duration::ZERO,
        "no timer was created"
    );

    let mut pending = pin!(tl.call_async(|| async {
        std::future::pending::<()>().await;
        Ok::<_, ()>(2)
    }));
    assert!(matches!(
        pending.as_mut().poll(&mut cx),
        Poll::Ready(Err(Error::Timeout(_)))
    ));
    assert_eq!(clock.now().as_duration(), Duration::from_millis(300));
}

#[test]
fn the_ready_path_allocates_nothing() {
    let tl = TimeLimiter::new("tl", TimeLimiterConfig::default());
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    let (outcome, allocations) = support::allocations_during(|| {
        let mut call = pin!(tl.call_async(|| async { Ok::<_, ()>(1) }));
        let a = call.as_mut().poll(&mut cx);
        let mut call = pin!(ChainFuture::new(
            Stack::new()
                .time_limiter(tl.part())
                .around(Call(|| async { Err::<u8, _>(Error::<()>::Inner(())) }))
        ));
        let b = call.as_mut().poll(&mut cx);
        let mut call = pin!(tl.call_async_detached(|| async { Ok::<_, ()>(3) }));
        let c = call.as_mut().poll(&mut cx);
        (a, b, c)
    });
    assert_eq!(
        outcome,
        (
            Poll::Ready(Ok(1)),
            Poll::Ready(Err(Error::Inner(()))),
            Poll::Ready(Ok(3))
        )
    );
    assert_eq!(allocations, 0);
}

#[test]
fn time_limited_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let tl = TimeLimiter::of_defaults("tl");
    assert_send(&tl.call_async(|| async { Ok::<_, std::io::Error>(1) }));
    assert_send(&ChainFuture::new(
        Stack::new()
            .time_limiter(tl.part())
            .around(Call(|| async { Ok::<_, Error<std::io::Error>>(1) })),
    ));
    assert_send(&tl.call_async_detached(|| async { Ok::<_, std::io::Error>(1) }));
    assert_send(&ChainFuture::new(
        Stack::new()
            .time_limiter(tl.detaching_part())
            .around(Call(|| async {
                Err::<(), _>(Error::<()>::BulkheadFull(BulkheadFull::new("bh".into(), 1)))
            })),
    ));
}

#[test]
fn the_registry_shares_instances_and_applies_configs() {
    let registry = TimeLimiterRegistry::builder()
        .clock(ManualClock::new())
        .tags([("team".to_owned(), "inventory".to_owned())].into())
        .build();
    let strict = config(Duration::from_millis(800), false);
    registry.add_configuration("strict", strict).unwrap();
    let a = registry
        .time_limiter_with_config("sku-query", "strict")
        .unwrap();
    let b = registry.time_limiter("sku-query");
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(*b.config(), strict);
    assert_eq!(b.tags()["team"], "inventory");
    assert_eq!(b.event_publisher().buffer_capacity(), 100);

    let defaults = registry.time_limiter("other");
    assert_eq!(*defaults.config(), TimeLimiterConfig::default());
    assert!(registry.time_limiter_with_config("x", "missing").is_err());
    assert!(registry.add_configuration("default", strict).is_err());
    assert_eq!(registry.all().len(), 2);

    // The registry's clock and buffer: a pending future on the manual clock
    // times out, and the buffer keeps the event.
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    let mut call = pin!(b.call_async(std::future::pending::<Result<(), ()>>));
    assert!(matches!(
        call.as_mut().poll(&mut cx),
        Poll::Ready(Err(Error::Timeout(_)))
    ));
    assert_eq!(b.clock().now().as_duration(), Duration::from_millis(800));
    let kinds: Vec<_> = b
        .event_publisher()
        .recent_events()
        .into_iter()
        .map(|e| e.into_kind())
        .collect();
    assert_eq!(
        kinds,
        [Timeout {
            elapsed: Duration::from_millis(800)
        }]
    );
}

fn detaching(max: u32) -> TimeLimiter {
    let config = TimeLimiterConfig::builder()
        .timeout_duration(SEC)
        .cancel_running_future(false)
        .max_detached_futures(max)
        .build()
        .unwrap();
    TimeLimiter::with_clock("tl", config, TokioClock::new())
}

#[tokio::test(start_paused = true)]
async fn issue_8_detached_futures_are_counted_and_bounded() {
    let tl = detaching(2);
    let finished = Arc::new(AtomicUsize::new(0));
    let mut dropped = Vec::new();
    for _ in 0..3 {
        let d = Arc::new(AtomicBool::new(false));
        let (guard, f) = (DropGuard(d.clone()), finished.clone());
        dropped.push(d);
        let result = tl
            .call_async_detached(|| async move {
                let _guard = guard;
                sleep(SEC * 3).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::io::Error>(())
            })
            .await;
        assert!(
            matches!(result, Err(Error::Timeout(_))),
            "always the timeout"
        );
    }
    assert_eq!(tl.detached_futures(), 2);
    assert_eq!(tl.metrics().number_of_detached_futures(), 2);
    assert_eq!(tl.metrics().number_of_timeout_calls(), 3);
    let flags: Vec<_> = dropped.iter().map(|d| d.load(Ordering::SeqCst)).collect();
    assert_eq!(flags, [false, false, true], "past the bound, cancelled");

    sleep(SEC * 3).await;
    tokio::task::yield_now().await;
    assert_eq!(finished.load(Ordering::SeqCst), 2);
    assert_eq!(tl.detached_futures(), 0, "finished futures are counted out");

    // Room again: the next timed-out future is left running.
    let _ = tl
        .call_async_detached(|| async {
            sleep(SEC * 3).await;
            Ok::<_, ()>(())
        })
        .await;
    assert_eq!(tl.detached_futures(), 1);
}

#[tokio::test(start_paused = true)]
async fn issue_8_a_detached_future_that_panics_is_counted_out() {
    let tl = detaching(1);
    let result = tl
        .call_async_detached(|| async {
            sleep(SEC * 2).await;
            panic!("the background work failed");
            #[allow(unreachable_code)]
            Ok::<(), ()>(())
        })
        .await;
    assert!(matches!(result, Err(Error::Timeout(_))));
    assert_eq!(tl.detached_futures(), 1);
    sleep(SEC * 2).await;
    tokio::task::yield_now().await;
    assert_eq!(tl.detached_futures(), 0);
}

#[test]
fn issue_8_a_detached_future_dropped_with_its_runtime_is_counted_out() {
    let tl = detaching(1);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let result = rt.block_on(tl.call_async_detached(|| async {
        std::future::pending::<()>().await;
        Ok::<(), ()>(())
    }));
    assert!(matches!(result, Err(Error::Timeout(_))));
    assert_eq!(tl.detached_futures(), 1);
    drop(rt);
    assert_eq!(tl.detached_futures(), 0);
}

#[test]
fn issue_8_max_detached_futures_must_be_positive() {
    let err = TimeLimiterConfig::builder()
        .max_detached_futures(0)
        .build()
        .unwrap_err();
    assert_eq!(err.problems()[0].field(), "max_detached_futures");
    assert_eq!(TimeLimiterConfig::default().max_detached_futures(), 1000);
}

#[test]
fn a_blocking_wait_is_timed_in_real_time_whatever_the_limiters_clock() {
    let clock = ManualClock::new();
    let tl = TimeLimiter::with_clock("tl", config(SEC * 5, true), clock.clone());
    let rec = Recorder::attach(tl.event_publisher());
    let pool = ThreadPoolBulkhead::of_defaults("pool");
    let real = SystemClock::new();
    let before = real.now();
    let out = tl.wait_submission(pool.submit(move || {
        clock.advance(SEC * 3600);
        Ok::<_, Error<()>>(1)
    }));
    let took = real.now().saturating_duration_since(before);
    assert_eq!(out, Ok(1));
    let [Success { elapsed }] = rec.take()[..] else {
        panic!("one success")
    };
    assert!(
        elapsed <= took,
        "{elapsed:?} within the {took:?} the wait took, not the manual clock's hour"
    );
}
