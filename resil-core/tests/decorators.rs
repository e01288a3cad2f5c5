//! The decorator chain: the fixed order, per-layer fallbacks, sync and async,
//! cancellation, what a chain drops and when, and allocation.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use resil_core::Error;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig, BulkheadEvent};
use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerClassifier, CircuitBreakerConfig, CircuitBreakerEvent, State,
};
use resil_core::clock::{Clock, ManualClock, TokioClock};
use resil_core::decorators::{AsyncOnly, Decorators, Layer};
use resil_core::hedge::{Hedge, HedgeConfig};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil_core::retry::{Retry, RetryConfig, RetryEvent};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
use support::Recorder;

#[global_allocator]
static ALLOC: support::CountingAlloc = support::CountingAlloc;

struct Chain {
    retry: Retry,
    cb: CircuitBreaker,
    rl: RateLimiter,
    tl: TimeLimiter,
    bh: Bulkhead,
}

fn chain(clock: impl resil_core::clock::Clock + Clone) -> Chain {
    Chain {
        retry: Retry::with_clock(
            "c",
            RetryConfig::builder()
                .max_attempts(3)
                .wait_duration(Duration::from_millis(10))
                .build()
                .unwrap(),
            clock.clone(),
        ),
        cb: CircuitBreaker::with_clock(
            "c",
            CircuitBreakerConfig::builder()
                .sliding_window_size(4)
                .minimum_number_of_calls(4)
                .build()
                .unwrap(),
            clock.clone(),
        ),
        rl: RateLimiter::with_clock(
            "c",
            RateLimiterConfig::builder()
                .limit_for_period(1000)
                .limit_refresh_period(Duration::from_secs(1))
                .timeout_duration(Duration::ZERO)
                .build()
                .unwrap(),
            clock.clone(),
        ),
        tl: TimeLimiter::with_clock(
            "c",
            TimeLimiterConfig::builder()
                .timeout_duration(Duration::from_millis(800))
                .build()
                .unwrap(),
            clock.clone(),
        ),
        bh: Bulkhead::with_clock(
            "c",
            BulkheadConfig::builder()
                .max_concurrent_calls(2)
                .build()
                .unwrap(),
            clock,
        ),
    }
}

impl Chain {
    /// The five layers, in the builder's usual order.
    fn all_five<T, E>(&self) -> Decorators<'_, T, E, AsyncOnly> {
        Decorators::new()
            .with_retry(&self.retry)
            .with_circuit_breaker(&self.cb)
            .with_rate_limiter(&self.rl)
            .with_time_limiter(&self.tl)
            .with_bulkhead(&self.bh)
    }
}

#[test]
fn every_attempt_passes_the_breaker_whatever_the_builder_order() {
    let c = chain(ManualClock::new());
    let retries = Recorder::attach(c.retry.event_publisher());
    let breaker = Recorder::attach(c.cb.event_publisher());
    let bulkhead = Recorder::attach(c.bh.event_publisher());
    let calls = AtomicU32::new(0);
    // Builder calls in reverse order: the chain is still Retry(CB(RL(BH(call)))).
    let result = Decorators::new()
        .with_bulkhead(&c.bh)
        .with_rate_limiter(&c.rl)
        .with_circuit_breaker(&c.cb)
        .with_retry(&c.retry)
        .call(|| {
            calls.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>("connection refused")
        });
    assert_eq!(result, Err(Error::Inner("connection refused")));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        c.cb.metrics().number_of_failed_calls(),
        3,
        "the breaker saw each attempt"
    );
    assert_eq!(
        bulkhead
            .take()
            .into_iter()
            .filter(|e| matches!(e, BulkheadEvent::CallPermitted))
            .count(),
        3
    );
    let retry_events = retries.take();
    assert!(matches!(
        retry_events.as_slice(),
        [
            RetryEvent::Retry { .. },
            RetryEvent::Retry { .. },
            RetryEvent::Error { .. }
        ]
    ));
    assert_eq!(
        breaker
            .take()
            .into_iter()
            .filter(|e| matches!(e, CircuitBreakerEvent::Error { .. }))
            .count(),
        3
    );
}

#[test]
fn a_breaker_refusal_is_retried_and_the_retry_fallback_sees_it() {
    let c = chain(ManualClock::new());
    c.cb.transition_to_forced_open_state().unwrap();
    let calls = AtomicU32::new(0);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let result = Decorators::new()
        .with_retry(&c.retry)
        .with_circuit_breaker(&c.cb)
        .with_fallback(Layer::Retry, move |e: Error<&str>| {
            sink.lock().unwrap().push(e.rejection_kind());
            Ok(7)
        })
        .call(|| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<u32, &str>(1)
        });
    assert_eq!(result, Ok(7));
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the call never ran");
    assert_eq!(
        c.retry
            .metrics()
            .number_of_failed_calls_with_retry_attempt(),
        1
    );
    assert_eq!(*seen.lock().unwrap(), [Some("CallNotPermitted")]);
}

#[test]
fn an_inner_fallback_hides_the_failure_from_the_outer_layers() {
    let c = chain(ManualClock::new());
    let calls = AtomicU32::new(0);
    let result = Decorators::new()
        .with_retry(&c.retry)
        .with_circuit_breaker(&c.cb)
        .with_bulkhead(&c.bh)
        .with_fallback(Layer::Bulkhead, |_e: Error<&str>| Ok(0))
        .call(|| {
            calls.fetch_add(1, Ordering::SeqCst);
            Err::<u32, _>("boom")
        });
    assert_eq!(result, Ok(0));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "no retry: the fallback answered"
    );
    assert_eq!(
        c.cb.metrics().number_of_successful_calls(),
        1,
        "the breaker saw a success"
    );
}

#[test]
fn a_circuit_breaker_fallback_sees_rejections_of_layers_inside_it() {
    let c = chain(ManualClock::new());
    let full = Bulkhead::of_defaults("full");
    full.change_config(
        BulkheadConfig::builder()
            .max_concurrent_calls(0)
            .build()
            .unwrap(),
    );
    let kinds = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = kinds.clone();
    let result = Decorators::new()
        .with_circuit_breaker_classified(&c.cb, CircuitBreakerClassifier::new())
        .with_bulkhead(&full)
        .with_fallback(Layer::CircuitBreaker, move |e: Error<&str>| {
            sink.lock().unwrap().push(e.rejection_kind());
            Err(e)
        })
        .call(|| Ok::<u32, &str>(1));
    assert!(matches!(result, Err(Error::BulkheadFull(_))));
    assert_eq!(*kinds.lock().unwrap(), [Some("BulkheadFull")]);
    assert_eq!(
        c.cb.metrics().number_of_failed_calls(),
        1,
        "recorded before the fallback"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn async_chain_times_out_inside_the_breaker_and_retries() {
    let c = chain(TokioClock::new());
    let attempts = AtomicU32::new(0);
    let result = Decorators::new()
        .with_retry(&c.retry)
        .with_circuit_breaker(&c.cb)
        .with_rate_limiter(&c.rl)
        .with_time_limiter(&c.tl)
        .with_bulkhead(&c.bh)
        .call_async(|| {
            attempts.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(Duration::from_millis(1200)).await;
                Ok::<u32, &str>(1)
            }
        })
        .await;
    assert!(matches!(result, Err(Error::Timeout(_))));
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    assert_eq!(
        c.cb.metrics().number_of_failed_calls(),
        3,
        "each timeout is a failure"
    );
    assert_eq!(c.tl.metrics().number_of_timeout_calls(), 3);
    assert_eq!(
        c.bh.metrics().available_concurrent_calls(),
        2,
        "permits came back"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn async_fallbacks_await() {
    let c = chain(TokioClock::new());
    let result = Decorators::new()
        .with_circuit_breaker(&c.cb)
        .with_async_fallback(Layer::CircuitBreaker, |_e: Error<&str>| async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(42)
        })
        .call_async(|| async { Err::<u32, _>("boom") })
        .await;
    assert_eq!(result, Ok(42));
}

#[tokio::test(flavor = "current_thread")]
async fn dropping_the_chain_future_releases_every_permit() {
    let c = chain(TokioClock::new());
    c.cb.transition_to_open_state().unwrap();
    c.cb.transition_to_half_open_state().unwrap();
    let never = tokio::sync::Notify::new();
    let d = Decorators::new()
        .with_circuit_breaker(&c.cb)
        .with_bulkhead(&c.bh);
    let mut call = tokio_test::task::spawn(d.call_async(|| async {
        never.notified().await;
        Ok::<u32, &str>(1)
    }));
    tokio_test::assert_pending!(call.poll());
    assert_eq!(c.bh.metrics().available_concurrent_calls(), 1);
    drop(call);
    assert_eq!(c.bh.metrics().available_concurrent_calls(), 2);
    assert_eq!(c.cb.metrics().number_of_buffered_calls(), 0);
    assert_eq!(c.cb.state(), State::HalfOpen);
    // the probe came back: all 10 default probes are available again
    let probes: Vec<_> = (0..10).map(|_| c.cb.start_call().unwrap()).collect();
    assert!(c.cb.start_call().is_err());
    drop(probes);
}

/// A future that panics when polled.
struct PanicsOnPoll;

impl std::future::Future for PanicsOnPoll {
    type Output = Result<u32, &'static str>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        panic!("the call panics")
    }
}

#[test]
fn a_panic_in_the_call_releases_every_permit_at_once_and_the_breaker_records_it() {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    let c = chain(ManualClock::new());
    let d = c.all_five();
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    // Kept alive after the panic: the permits must not wait for its drop,
    // as each layer of a nested chain gives its own back while unwinding.
    let mut call = Box::pin(d.call_async(|| PanicsOnPoll));
    let panicked = catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(&mut cx)));
    assert!(panicked.is_err(), "the panic is resumed");
    assert_eq!(c.bh.metrics().available_concurrent_calls(), 2);
    assert_eq!(
        c.cb.metrics().number_of_failed_calls(),
        1,
        "recorded as a failure"
    );
    assert_eq!(c.cb.metrics().number_of_buffered_calls(), 1);
    drop(call);
    assert_eq!(c.bh.metrics().available_concurrent_calls(), 2);
    assert_eq!(c.cb.metrics().number_of_buffered_calls(), 1, "counted once");

    // A panic in `f` itself, before its future exists: the same.
    let mut call = Box::pin(d.call_async(|| -> PanicsOnPoll { panic!("f panics") }));
    let panicked = catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(&mut cx)));
    assert!(panicked.is_err());
    assert_eq!(c.bh.metrics().available_concurrent_calls(), 2);
    assert_eq!(c.cb.metrics().number_of_failed_calls(), 2);
    drop(call);

    // A panic in an inner layer's fallback runs inside the breaker: recorded.
    let d = Decorators::new()
        .with_circuit_breaker(&c.cb)
        .with_bulkhead(&c.bh)
        .with_fallback(
            Layer::Bulkhead,
            |_e: Error<&str>| -> Result<u32, Error<&str>> { panic!("fallback") },
        );
    let mut call = Box::pin(d.call_async(|| async { Err::<u32, _>("down") }));
    let panicked = catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(&mut cx)));
    assert!(panicked.is_err());
    assert_eq!(c.bh.metrics().available_concurrent_calls(), 2);
    assert_eq!(c.cb.metrics().number_of_failed_calls(), 3);
}

#[test]
fn a_panic_elsewhere_while_the_chain_waits_gives_the_permits_back_and_records_nothing() {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    let c = chain(ManualClock::new());
    let d = Decorators::new()
        .with_circuit_breaker(&c.cb)
        .with_bulkhead(&c.bh);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        let mut call = Box::pin(d.call_async(std::future::pending::<Result<u32, &str>>));
        assert!(call.as_mut().poll(&mut cx).is_pending());
        assert_eq!(c.bh.metrics().available_concurrent_calls(), 1);
        panic!("the caller's own code panics while the call is pending");
    }));
    assert!(unwound.is_err());
    assert_eq!(c.bh.metrics().available_concurrent_calls(), 2);
    assert_eq!(
        c.cb.metrics().number_of_buffered_calls(),
        0,
        "not the call's panic"
    );
}

fn assert_send<T: Send>(_: &T) {}

#[test]
fn the_async_chain_is_send() {
    let c = chain(ManualClock::new());
    let d = Decorators::new()
        .with_retry(&c.retry)
        .with_circuit_breaker(&c.cb)
        .with_rate_limiter(&c.rl)
        .with_time_limiter(&c.tl)
        .with_bulkhead(&c.bh)
        .with_fallback(Layer::Retry, |_e: Error<std::io::Error>| Ok(0u32));
    let fut = d.call_async(|| async { Ok::<u32, std::io::Error>(1) });
    assert_send(&fut);
}

#[test]
fn a_chain_without_fallbacks_allocates_nothing() {
    let c = chain(ManualClock::new());
    let d = Decorators::new()
        .with_retry(&c.retry)
        .with_circuit_breaker(&c.cb)
        .with_rate_limiter(&c.rl)
        .with_bulkhead(&c.bh);
    for _ in 0..10 {
        d.call(|| Ok::<u32, ()>(1)).unwrap();
    }
    let (_, n) = support::allocations_during(|| {
        for _ in 0..100 {
            d.call(|| Ok::<u32, ()>(1)).unwrap();
        }
    });
    assert_eq!(n, 0);
    let (_, n) = support::allocations_during(|| {
        let d = c.all_five();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        for _ in 0..100 {
            let fut = std::pin::pin!(d.call_async(|| async { Ok::<u32, ()>(1) }));
            assert!(fut.poll(&mut cx).is_ready());
        }
    });
    assert_eq!(n, 0, "a ready async call through all five layers");
}

/// A ready future of `SIZE` bytes (plus its value).
struct Padded<const SIZE: usize> {
    _pad: [u8; SIZE],
    value: u32,
}

impl<const SIZE: usize> std::future::Future for Padded<SIZE> {
    type Output = Result<u32, std::io::Error>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::task::Poll::Ready(Ok(self.value))
    }
}

fn padded<const SIZE: usize>() -> Padded<SIZE> {
    Padded {
        _pad: [0; SIZE],
        value: 1,
    }
}

#[test]
fn the_async_chain_holds_the_callers_future_once() {
    // An unoptimized build keeps several copies of the 4 KiB future on the
    // stack in each of the chain's eight nested layers while it builds and
    // polls them, past a test thread's 2 MiB; optimized builds do not (the
    // sizes asserted below are those of the future itself).
    std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(holds_the_callers_future_once)
        .expect("a test thread")
        .join()
        .expect("no assertion failed");
}

fn holds_the_callers_future_once() {
    let c = chain(ManualClock::new());
    let d = c.all_five();
    // Each layer keeps a few words: its permit or guard, a timer or a queue
    // slot while it waits, a tag, and the tags of its optional fallback. The
    // retry's loop is the largest (about 200 bytes, with its backoff timer).
    // All five came to about 400 bytes on x86-64 when this test was written;
    // 1 KiB leaves room for other targets and compilers. A chain that held
    // its inner future twice per layer took 12 KiB here, and 750 KiB around
    // a 4 KiB future.
    let small = d.call_async(padded::<8>);
    let chain_size = std::mem::size_of_val(&small);
    assert!(
        chain_size <= 1024,
        "five layers around a ready future take {chain_size} bytes"
    );
    drop(small);

    let big = d.call_async(padded::<4096>);
    let growth = std::mem::size_of_val(&big) - std::mem::size_of::<Padded<4096>>();
    assert!(
        growth < 1024,
        "five layers add {growth} bytes to a 4 KiB future"
    );
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let big = std::pin::pin!(big);
    assert!(matches!(big.poll(&mut cx), std::task::Poll::Ready(Ok(1))));

    // Each primitive alone holds it once too: a few words around it (on
    // x86-64 the breaker's guard and stage, the largest, with the fault's
    // place, its tag and its box's word, come to 132 bytes; the others to
    // 60–68), where a second copy would add 4 KiB.
    let inner = std::mem::size_of::<Padded<4096>>();
    let grew = |size: usize| size - inner;
    assert!(grew(std::mem::size_of_val(&c.cb.call_async(padded::<4096>))) < 192);
    assert!(grew(std::mem::size_of_val(&c.rl.call_async(padded::<4096>))) < 128);
    assert!(grew(std::mem::size_of_val(&c.tl.call_async(padded::<4096>))) < 128);
    assert!(grew(std::mem::size_of_val(&c.bh.call_async(padded::<4096>))) < 128);
    assert!(grew(std::mem::size_of_val(&c.retry.call_async(padded::<4096>))) < 512);
    // Also when the closure owns the future it returns: the caller's future
    // is still held once, but the call's node keeps the closure (its
    // captures, here that same future before it is moved out) beside the
    // attempt that holds the future, so the captures come on top.
    let owned = padded::<4096>();
    let make = move || owned;
    let captures = std::mem::size_of_val(&make);
    assert!(grew(std::mem::size_of_val(&c.bh.call_async(make))) < 128 + captures);
}

/// Each event of `publisher`'s buffer, as `(kind, ms on the clock)`.
fn stamped<K: resil_core::event::EventKind>(
    publisher: &resil_core::event::EventPublisher<K>,
) -> Vec<(String, u128)> {
    publisher
        .recent_events()
        .into_iter()
        .map(|e| {
            (
                format!("{:?}", e.kind()),
                e.created_at().as_duration().as_millis(),
            )
        })
        .collect()
}

fn owned(events: &[(&str, u128)]) -> Vec<(String, u128)> {
    events.iter().map(|&(k, t)| (k.to_owned(), t)).collect()
}

/// The async chain reads the clock once for the layers that run back to
/// back on one clock, and again after whatever may take time or run user
/// code between two of them: the caller's future, a fallback, an event
/// consumer, the retry's wait. (On a `ManualClock` each of these moves the
/// time, so a reading kept across one would show.)
#[test]
fn the_async_chain_reads_the_time_again_after_whatever_could_take_it() {
    let clock = ManualClock::new();
    let c = chain(clock.clone());
    c.cb.event_publisher().enable_buffer(100);
    c.rl.event_publisher().enable_buffer(100);
    c.tl.event_publisher().enable_buffer(100);
    c.bh.event_publisher().enable_buffer(100);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());

    // The caller's future takes 300 ms: the layers' completion is stamped
    // after it, their admission before.
    let d = Decorators::new()
        .with_circuit_breaker(&c.cb)
        .with_rate_limiter(&c.rl)
        .with_time_limiter(&c.tl)
        .with_bulkhead(&c.bh);
    let call = std::pin::pin!(d.call_async(|| {
        let clock = clock.clone();
        async move {
            clock.advance(Duration::from_millis(300));
            Ok::<u32, &str>(1)
        }
    }));
    assert!(matches!(call.poll(&mut cx), std::task::Poll::Ready(Ok(1))));
    assert_eq!(
        stamped(c.cb.event_publisher()),
        owned(&[("Success { elapsed: 300ms }", 300)])
    );
    assert_eq!(
        stamped(c.rl.event_publisher()),
        owned(&[("SuccessfulAcquire { permits: 1 }", 0)])
    );
    assert_eq!(
        stamped(c.bh.event_publisher()),
        owned(&[("CallPermitted", 0), ("CallFinished", 300)])
    );
    // The time limiter times a call from its first poll that is not ready:
    // this one never was (its 300 ms were spent in its first poll).
    assert_eq!(
        stamped(c.tl.event_publisher()),
        owned(&[("Success { elapsed: 0ns }", 300)])
    );

    // A fallback of the bulkhead takes 200 ms: the time limiter and the
    // breaker outside it finish after it, as nested layers would.
    let d = Decorators::new()
        .with_circuit_breaker(&c.cb)
        .with_time_limiter(&c.tl)
        .with_bulkhead(&c.bh)
        .with_fallback(Layer::Bulkhead, |_| {
            clock.advance(Duration::from_millis(200));
            Ok(0)
        });
    let call = std::pin::pin!(d.call_async(|| async { Err::<u32, &str>("refused") }));
    assert!(matches!(call.poll(&mut cx), std::task::Poll::Ready(Ok(0))));
    assert_eq!(
        stamped(c.cb.event_publisher())[1..],
        owned(&[("Success { elapsed: 200ms }", 500)])
    );
    assert_eq!(
        stamped(c.bh.event_publisher())[2..],
        owned(&[("CallPermitted", 300), ("CallFinished", 300)])
    );
    assert_eq!(
        stamped(c.tl.event_publisher())[1..],
        owned(&[("Success { elapsed: 0ns }", 500)])
    );

    // A consumer of the bulkhead's events takes 100 ms on each `CallFinished`.
    let consumer_clock = clock.clone();
    let id = c.bh.event_publisher().on(
        resil_core::bulkhead::BulkheadEventType::CallFinished,
        move |_| consumer_clock.advance(Duration::from_millis(100)),
    );
    let d = Decorators::new()
        .with_circuit_breaker(&c.cb)
        .with_time_limiter(&c.tl)
        .with_bulkhead(&c.bh);
    let call = std::pin::pin!(d.call_async(|| async { Ok::<u32, &str>(2) }));
    assert!(matches!(call.poll(&mut cx), std::task::Poll::Ready(Ok(2))));
    assert!(c.bh.event_publisher().unsubscribe(id));
    assert_eq!(
        stamped(c.cb.event_publisher())[2..],
        owned(&[("Success { elapsed: 100ms }", 600)])
    );
    assert_eq!(
        stamped(c.tl.event_publisher())[2..],
        owned(&[("Success { elapsed: 0ns }", 600)])
    );

    // The retry waits 10 ms (a `ManualClock` sleeps by moving its time, in
    // the same poll): the second attempt enters the layers after the wait.
    let d = Decorators::new()
        .with_retry(&c.retry)
        .with_circuit_breaker(&c.cb)
        .with_rate_limiter(&c.rl)
        .with_bulkhead(&c.bh);
    let attempts = AtomicU32::new(0);
    let call = std::pin::pin!(d.call_async(|| {
        let first = attempts.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            if first {
                Err("busy")
            } else {
                Ok::<u32, &str>(3)
            }
        }
    }));
    assert!(matches!(call.poll(&mut cx), std::task::Poll::Ready(Ok(3))));
    assert_eq!(
        stamped(c.cb.event_publisher())[3..],
        owned(&[
            ("Error { elapsed: 0ns, error_kind: None }", 600),
            ("Success { elapsed: 0ns }", 610)
        ])
    );
    assert_eq!(
        stamped(c.rl.event_publisher())[1..],
        owned(&[
            ("SuccessfulAcquire { permits: 1 }", 600),
            ("SuccessfulAcquire { permits: 1 }", 610)
        ])
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_hedge_sits_inside_the_retry_and_each_attempt_passes_the_breaker() {
    let c = chain(TokioClock::new());
    let hedge = Hedge::with_clock(
        "c",
        HedgeConfig::builder()
            .delay(Duration::from_millis(50))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let attempts = AtomicU32::new(0);
    let started = hedge.clock().now();
    // builder order aside, the chain is Retry(Hedge(CircuitBreaker(..(Bulkhead))))
    let d = Decorators::new()
        .with_bulkhead(&c.bh)
        .with_hedge(&hedge)
        .with_circuit_breaker(&c.cb)
        .with_retry(&c.retry);
    let shown = format!("{d:?}");
    assert!(
        shown.contains(r#"["Retry(c)", "Hedge(c)", "CircuitBreaker(c)", "Bulkhead(c)"]"#),
        "{shown}"
    );
    let result = d
        .call_async(|| {
            let n = attempts.fetch_add(1, Ordering::SeqCst);
            async move {
                // the first hangs, the hedged attempt answers in 10 ms
                let latency = if n == 0 { 60_000 } else { 10 };
                tokio::time::sleep(Duration::from_millis(latency)).await;
                Ok::<u32, &str>(n)
            }
        })
        .await;
    assert_eq!(result, Ok(1));
    assert_eq!(
        hedge.clock().now().saturating_duration_since(started),
        Duration::from_millis(60)
    );
    assert_eq!(hedge.metrics().number_of_hedge_wins(), 1);
    // the dropped primary was never recorded; its permit is back
    assert_eq!(c.cb.metrics().number_of_successful_calls(), 1);
    assert_eq!(c.cb.metrics().number_of_buffered_calls(), 1);
    assert_eq!(c.bh.metrics().available_concurrent_calls(), 2);

    // every hedged attempt fails: the retry starts the hedged call again
    let attempts = AtomicU32::new(0);
    let result = Decorators::new()
        .with_retry(&c.retry)
        .with_hedge(&hedge)
        .call_async(|| {
            attempts.fetch_add(1, Ordering::SeqCst);
            async { Err::<u32, &str>("down") }
        })
        .await;
    assert_eq!(result, Err(Error::Inner("down")));
    assert_eq!(attempts.load(Ordering::SeqCst), 3 * 2);
    assert_eq!(hedge.metrics().number_of_failed_calls(), 3);
}

// When a chain drops what its attempts hold: each layer gives back its own
// permit at its completion, a failed attempt goes before the next one
// starts, and the caller's finished future is dropped exactly once, with
// the chain's future.

/// A caller's future that answers at its first poll and keeps something
/// until it is dropped (as a connection or a service's permit would), which
/// it counts.
struct Holding {
    answer: Result<u32, &'static str>,
    drops: Arc<AtomicU32>,
}

impl Future for Holding {
    type Output = Result<u32, &'static str>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(self.answer)
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_finished_call_is_dropped_once_with_the_chains_future() {
    let c = chain(ManualClock::new());
    // What the bulkhead has free when the breaker records the call.
    let bulkhead = c.bh.clone();
    let free_at_record = Arc::new(AtomicU32::new(u32::MAX));
    let seen = free_at_record.clone();
    c.cb.event_publisher().on_event(move |e| {
        if let CircuitBreakerEvent::Success { .. } = e.kind() {
            seen.store(
                bulkhead.metrics().available_concurrent_calls(),
                Ordering::SeqCst,
            );
        }
    });
    let drops = Arc::new(AtomicU32::new(0));
    let d = c.all_five();
    let mut call = tokio_test::task::spawn(d.call_async(|| Holding {
        answer: Ok(7),
        drops: drops.clone(),
    }));
    assert_eq!(call.poll(), Poll::Ready(Ok(7)));
    assert_eq!(
        free_at_record.load(Ordering::SeqCst),
        2,
        "the bulkhead's permit is back when the breaker records"
    );
    // The chain's future is still alive: every layer's permit is back, and
    // the caller's finished future stays with it until it is dropped (as an
    // `.await` does at once), as a finished tower response future keeps
    // what it holds.
    assert_eq!(c.bh.metrics().available_concurrent_calls(), 2);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(call);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "dropped once, with the chain's future"
    );
    assert_eq!(c.cb.metrics().number_of_successful_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_failed_attempt_is_dropped_before_the_next_one_starts() {
    let c = chain(TokioClock::new());
    let drops = Arc::new(AtomicU32::new(0));
    let started = AtomicU32::new(0);
    let out = c
        .all_five()
        .call_async(|| {
            let n = started.fetch_add(1, Ordering::SeqCst);
            // Every earlier attempt is gone when this one starts.
            assert_eq!(drops.load(Ordering::SeqCst), n);
            Holding {
                answer: if n < 2 { Err("busy") } else { Ok(n) },
                drops: drops.clone(),
            }
        })
        .await;
    assert_eq!(out.ok(), Some(2));
    assert_eq!(started.load(Ordering::SeqCst), 3);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    assert_eq!(c.cb.metrics().number_of_failed_calls(), 2);
    assert_eq!(c.cb.metrics().number_of_successful_calls(), 1);
}
