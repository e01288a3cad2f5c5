//! The adaptive bulkhead through its public API: samples from every way a
//! call ends (success, listed error, refusal below, timeout, panic,
//! cancellation, a permit released unused), the live limit in the metrics
//! and the events, a new configuration switching algorithm and bounds
//! while permits are in use, and no allocation per call.
//!
//! Windows are 100 ms of the manual clock and need 10 calls; the first
//! call of a bulkhead closes the empty first window. The convergence on a
//! simulated downstream is `tests/adaptive_bulkhead.rs` of the root package.

mod support;

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resil_core::Error;
use resil_core::bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadConfigBuilder, BulkheadEvent, LimitAlgorithm, Sample,
};
use resil_core::chain::{Call, Stack};
use resil_core::clock::ManualClock;
use resil_core::time_limiter::Timeout;
use support::Recorder;

#[global_allocator]
static A: support::CountingAlloc = support::CountingAlloc;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn aimd(initial: u32) -> BulkheadConfigBuilder {
    BulkheadConfig::builder()
        .limit_algorithm(LimitAlgorithm::Aimd)
        .initial_concurrent_calls(initial)
        .max_concurrent_calls(100)
        .min_window_time(ms(100))
        .max_window_time(ms(100))
}

fn bulkhead(config: BulkheadConfigBuilder) -> (Bulkhead, ManualClock) {
    let clock = ManualClock::new();
    let b = Bulkhead::with_clock("adaptive", config.build().unwrap(), clock.clone());
    (b, clock)
}

fn limit(b: &Bulkhead) -> u32 {
    b.metrics().max_allowed_concurrent_calls()
}

/// One call of `latency` that ends with `sample`.
fn call(b: &Bulkhead, clock: &ManualClock, latency: Duration, sample: Sample) {
    let permit = b.try_acquire_permission().unwrap();
    clock.advance(latency);
    permit.finish_with(sample);
}

/// Closes the first window, then makes nine 10 ms calls of a new one that
/// the next call ending 20 ms later closes: that call decides, with one
/// call in flight each time, what the window was.
fn nine_successes(b: &Bulkhead, clock: &ManualClock) {
    call(b, clock, ms(10), Sample::Success);
    for _ in 0..9 {
        call(b, clock, ms(10), Sample::Success);
    }
    clock.advance(ms(10));
}

#[test]
fn the_tenth_call_decides_the_window() {
    // One call in flight is half a limit of 2: a successful window grows it.
    let (b, clock) = bulkhead(aimd(2));
    nine_successes(&b, &clock);
    call(&b, &clock, ms(10), Sample::Success);
    assert_eq!(limit(&b), 3);
    let (b, clock) = bulkhead(aimd(2));
    nine_successes(&b, &clock);
    call(&b, &clock, ms(10), Sample::Dropped);
    assert_eq!(limit(&b), 1, "⌊2 × 0.9⌋, within the minimum of 1");
}

#[test]
fn timeouts_and_refusals_below_are_drops_and_errors_drop_only_when_listed() {
    let timeout = || Error::<()>::Timeout(Timeout::new("below".into(), ms(5)));
    assert_eq!(
        Sample::of::<(), ()>(&Err(timeout()), |_| None),
        Sample::Dropped
    );
    let (b, clock) = bulkhead(aimd(2).limit_drop_errors(["Overloaded"]));
    nine_successes(&b, &clock);
    // A layer below the bulkhead timed out: its chain fails with the
    // rejection.
    let r = Stack::new()
        .bulkhead(b.part())
        .call(Call(|| -> Result<(), Error<()>> {
            clock.advance(ms(10));
            Err(timeout())
        }));
    assert!(r.is_err());
    assert_eq!(limit(&b), 1, "a timeout below the bulkhead");

    let (b, clock) = bulkhead(aimd(2).limit_drop_errors(["Overloaded"]));
    nine_successes(&b, &clock);
    // an error of another kind, or of no kind, is no sample at all: the
    // window is still open after them
    call(
        &b,
        &clock,
        ms(10),
        Sample::Error {
            kind: Some("NotFound"),
        },
    );
    let r = b.call(|| -> Result<(), &str> {
        clock.advance(ms(10));
        Err("unclassified")
    });
    assert!(r.is_err());
    assert_eq!(limit(&b), 2);
    call(
        &b,
        &clock,
        ms(10),
        Sample::Error {
            kind: Some("Overloaded"),
        },
    );
    assert_eq!(limit(&b), 1, "a listed error kind");
}

#[test]
fn a_panicking_call_gives_its_permit_back_once_and_counts_as_a_drop() {
    let (b, clock) = bulkhead(aimd(2));
    nine_successes(&b, &clock);
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        b.call(|| -> Result<(), ()> {
            clock.advance(ms(10));
            panic!("the downstream's client panicked")
        })
    }));
    assert!(panicked.is_err());
    // Recorded (the window closed) as a drop (it fell), given back once.
    assert_eq!(limit(&b), 1);
    assert_eq!(b.metrics().available_concurrent_calls(), 1);

    // A permit dropped by a panic elsewhere in the caller's code, too.
    let (b, clock) = bulkhead(aimd(2));
    nine_successes(&b, &clock);
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        let _permit = b.try_acquire_permission().unwrap();
        clock.advance(ms(10));
        panic!("the caller panicked");
    }));
    assert!(panicked.is_err());
    assert_eq!(
        (limit(&b), b.metrics().available_concurrent_calls()),
        (1, 1)
    );
}

/// A call its caller cancels (a hedge's loser, a `select!`'s other branch)
/// gives its permit back and no sample: the time it ran says nothing of the
/// downstream. A permit of the user's own, dropped, has ended its call: a
/// success.
#[test]
fn a_cancelled_call_gives_its_permit_back_and_no_sample() {
    let (b, clock) = bulkhead(aimd(2));
    nine_successes(&b, &clock);
    {
        let mut call = pin!(b.call_async(std::future::pending::<Result<(), ()>>));
        let cx = &mut Context::from_waker(Waker::noop());
        assert!(call.as_mut().poll(cx).is_pending());
        assert_eq!(b.metrics().available_concurrent_calls(), 1);
        clock.advance(ms(10));
    }
    // Dropped mid-way: no sample, the window stays open for the next call.
    assert_eq!(limit(&b), 2);
    assert_eq!(b.metrics().available_concurrent_calls(), 2);
    call(&b, &clock, ms(10), Sample::Success);
    assert_eq!(limit(&b), 3, "the next call decided the window");

    // The user's own permit, dropped: a success, which decides the window.
    let (b, clock) = bulkhead(aimd(2));
    nine_successes(&b, &clock);
    {
        let _permit = b.try_acquire_permission().unwrap();
        clock.advance(ms(10));
    }
    assert_eq!(limit(&b), 3);
    assert_eq!(b.metrics().available_concurrent_calls(), 3);

    // A call that was not made after all gives no sample.
    let (b, clock) = bulkhead(aimd(2));
    nine_successes(&b, &clock);
    b.try_acquire_permission().unwrap().release();
    assert_eq!(limit(&b), 2);
    call(&b, &clock, ms(10), Sample::Ignored);
    assert_eq!(limit(&b), 2, "an ignored call is no sample either");
    call(&b, &clock, ms(10), Sample::Success);
    assert_eq!(limit(&b), 3);
}

#[test]
fn each_change_of_the_limit_is_published_and_shows_in_the_metrics() {
    let (b, clock) = bulkhead(aimd(10));
    let rec = Recorder::attach(b.event_publisher());
    for _ in 0..8 {
        // as many calls in flight as the limit, 60 ms each, all timing out
        let permits: Vec<_> = (0..limit(&b))
            .map(|_| b.try_acquire_permission().unwrap())
            .collect();
        assert!(b.try_acquire_permission().is_err());
        clock.advance(ms(60));
        for p in permits {
            p.finish_with(Sample::Dropped);
        }
    }
    let changes: Vec<(u32, u32)> = rec
        .take()
        .into_iter()
        .filter_map(|e| match e {
            BulkheadEvent::LimitChanged { from, to } => Some((from, to)),
            _ => None,
        })
        .collect();
    assert_eq!(changes.first(), Some(&(10, 9)), "{changes:?}");
    assert!(changes.len() >= 3, "{changes:?}");
    assert!(
        changes
            .windows(2)
            .all(|w| w[0].1 == w[1].0 && w[1].1 < w[1].0)
    );
    assert_eq!(changes.last().map(|c| c.1), Some(limit(&b)));
    assert_eq!(b.metrics().available_concurrent_calls(), limit(&b));
    let ty = resil_core::bulkhead::BulkheadEventType::LimitChanged;
    assert_eq!(ty.as_str(), "LIMIT_CHANGED");
}

#[test]
fn a_new_configuration_switches_algorithm_and_bounds_keeping_permits_in_use() {
    let (b, clock) = bulkhead(BulkheadConfig::builder().max_concurrent_calls(10));
    let rec = Recorder::attach(b.event_publisher());
    let held: Vec<_> = (0..6)
        .map(|_| b.try_acquire_permission().unwrap())
        .collect();

    // fixed → adaptive: starts at the initial limit, below the calls in flight
    b.change_config(aimd(3).max_concurrent_calls(4).build().unwrap());
    assert_eq!(limit(&b), 3);
    assert_eq!(b.metrics().available_concurrent_calls(), 0);
    assert!(b.try_acquire_permission().is_err());

    // another algorithm continues from the limit reached...
    let gradient2 = aimd(3)
        .limit_algorithm(LimitAlgorithm::Gradient2)
        .max_concurrent_calls(4)
        .build()
        .unwrap();
    b.change_config(gradient2.clone());
    assert_eq!(limit(&b), 3);
    // ...and new bounds clamp it (a new initial limit is for a start only)
    let bounds = gradient2
        .to_builder()
        .min_concurrent_calls(5)
        .initial_concurrent_calls(8)
        .max_concurrent_calls(8)
        .build()
        .unwrap();
    b.change_config(bounds);
    assert_eq!(limit(&b), 5);

    // the permits of the calls in flight come back, none lost, none extra
    clock.advance(ms(10));
    drop(held);
    assert_eq!(b.metrics().available_concurrent_calls(), 5);

    // adaptive → fixed
    b.change_config(
        BulkheadConfig::builder()
            .max_concurrent_calls(10)
            .build()
            .unwrap(),
    );
    assert_eq!(
        (limit(&b), b.metrics().available_concurrent_calls()),
        (10, 10)
    );
    let changes: Vec<_> = rec
        .take()
        .into_iter()
        .filter(|e| matches!(e, BulkheadEvent::LimitChanged { .. }))
        .collect();
    assert_eq!(
        changes,
        [
            BulkheadEvent::LimitChanged { from: 10, to: 3 },
            BulkheadEvent::LimitChanged { from: 3, to: 5 },
            BulkheadEvent::LimitChanged { from: 5, to: 10 },
        ]
    );
}

#[test]
fn the_same_algorithm_keeps_what_it_learned_across_a_change() {
    let (b, clock) = bulkhead(aimd(2));
    nine_successes(&b, &clock);
    call(&b, &clock, ms(10), Sample::Success);
    assert_eq!(limit(&b), 3);
    // a new ceiling above the limit: nothing moves
    b.change_config(aimd(2).max_concurrent_calls(50).build().unwrap());
    assert_eq!(limit(&b), 3);
    // switching adaptation off and on again starts afresh
    b.change_config(
        BulkheadConfig::builder()
            .max_concurrent_calls(7)
            .build()
            .unwrap(),
    );
    b.change_config(aimd(2).build().unwrap());
    assert_eq!(limit(&b), 2);
}

#[test]
fn adaptive_calls_allocate_nothing() {
    for buffered in [false, true] {
        let (b, clock) = bulkhead(aimd(10));
        if buffered {
            b.event_publisher().enable_buffer(100);
        }
        let before = limit(&b);
        let ((), n) = support::allocations_during(|| {
            for i in 0..300 {
                let permit = b.try_acquire_permission().unwrap();
                clock.advance(ms(10));
                permit.finish_with(if i % 2 == 0 {
                    Sample::Success
                } else {
                    Sample::Dropped
                });
                assert_eq!(b.call(|| Ok::<_, ()>(i)), Ok(i));
                drop(b.try_acquire_permission().unwrap());
                let fut = pin!(b.call_async(|| async move { Ok::<_, ()>(i) }));
                let polled = fut.poll(&mut Context::from_waker(Waker::noop()));
                assert_eq!(polled, Poll::Ready(Ok(i)));
            }
        });
        assert_ne!(limit(&b), before, "the windows closed and moved the limit");
        assert_eq!(n, 0, "adaptive calls, buffered: {buffered}");
    }
}

/// The request's deadline that gives up on a call (no time limiter inside
/// notices it first) makes the call a drop too, through the retry, the
/// breaker and the rate limiter above the bulkhead.
#[tokio::test]
async fn a_deadline_that_gives_up_on_the_call_makes_it_a_drop() {
    let (b, clock) = bulkhead(aimd(2));
    let deadline = checkout(&clock);
    let retry = resil_core::retry::Retry::with_clock("outside", Default::default(), clock.clone());
    let cb = resil_core::circuit_breaker::CircuitBreaker::with_clock(
        "outside",
        Default::default(),
        clock.clone(),
    );
    let rl = resil_core::rate_limiter::RateLimiter::with_clock(
        "outside",
        Default::default(),
        clock.clone(),
    );
    nine_successes(&b, &clock);
    // The manual clock's sleep passes at once: the deadline gives up.
    let given_up = resil_core::Decorators::new()
        .with_deadline(&deadline)
        .with_retry(&retry)
        .with_circuit_breaker(&cb)
        .with_rate_limiter(&rl)
        .with_bulkhead(&b)
        .call_async(std::future::pending::<Result<(), ()>>)
        .await;
    assert!(
        matches!(&given_up, Err(Error::DeadlineExceeded(e)) if e.kind() == "deadline"),
        "{given_up:?}"
    );
    assert_eq!(limit(&b), 1, "⌊2 × 0.9⌋: the call given up on was a drop");
    assert_eq!(b.metrics().available_concurrent_calls(), 1);
}

/// A request's deadline that runs out on a call holding a chain of its own
/// (an annotated function's, called under an annotated function's
/// deadline) makes the call a drop for that chain's bulkhead too.
#[tokio::test]
async fn a_deadline_that_runs_out_outside_the_chain_makes_the_call_a_drop() {
    let (b, clock) = bulkhead(aimd(2));
    let deadline = checkout(&clock);
    nine_successes(&b, &clock);
    let given_up = resil_core::Decorators::new()
        .with_deadline(&deadline)
        .call_async(|| async { hung_chain(&b).await.map_err(|_| ()) })
        .await;
    assert!(
        matches!(&given_up, Err(Error::DeadlineExceeded(e)) if e.kind() == "deadline"),
        "{given_up:?}"
    );
    assert_eq!(
        limit(&b),
        1,
        "⌊2 × 0.9⌋: the call the deadline ran out on was a drop"
    );
    assert_eq!(b.metrics().available_concurrent_calls(), 1);
}

/// A call that never ends through a chain of its own with `b`'s place (an
/// annotated client function's, called from an annotated handler).
async fn hung_chain(b: &Bulkhead) -> Result<(), Error<()>> {
    Stack::new()
        .bulkhead(b.part())
        .call_async(resil_core::chain::Lift(resil_core::chain::once(
            std::future::pending::<Result<(), ()>>,
        )))
        .await
}

/// The call timed out, and the limit of `b` (2, a window of nine successes
/// open) fell for it as for a drop; its permit is back.
fn assert_timed_out_as_a_drop<T: std::fmt::Debug, E: std::fmt::Debug>(
    timed_out: &Result<T, Error<E>>,
    b: &Bulkhead,
) {
    assert!(matches!(timed_out, Err(Error::Timeout(_))), "{timed_out:?}");
    assert_eq!(
        limit(b),
        1,
        "⌊2 × 0.9⌋: the call the time limiter gave up on was a drop"
    );
    assert_eq!(b.metrics().available_concurrent_calls(), 1);
}

/// A time limiter of 20 ms on `clock`.
fn time_limiter(name: &str, clock: &ManualClock) -> resil_core::time_limiter::TimeLimiter {
    let config = resil_core::time_limiter::TimeLimiterConfig::builder()
        .timeout_duration(ms(20))
        .build()
        .unwrap();
    resil_core::time_limiter::TimeLimiter::with_clock(name, config, clock.clone())
}

/// A deadline of 20 ms on `clock`.
fn checkout(clock: &ManualClock) -> resil_core::deadline::Deadline {
    let config = resil_core::deadline::DeadlineConfig::builder()
        .timeout(ms(20))
        .build()
        .unwrap();
    resil_core::deadline::Deadline::with_clock("checkout", config, clock.clone())
}

fn assert_send<T: Send>(_: &T) {}

#[test]
fn adaptive_permits_and_futures_are_send() {
    let (b, _) = bulkhead(aimd(2));
    assert_send(&b.try_acquire_permission().unwrap());
    assert_send(&b.call_async(|| async { Ok::<_, ()>(1) }));
}

/// A time limiter outside the bulkhead that gives up on a call (the chain's
/// order: the time limiter covers the bulkhead) makes the call a drop, as
/// a timeout below the bulkhead is; a call dropped by its caller is not.
#[tokio::test]
async fn a_time_limiters_timeout_outside_the_bulkhead_is_a_drop() {
    let (b, clock) = bulkhead(aimd(2));
    let tl = time_limiter("outside", &clock);
    nine_successes(&b, &clock);
    // The manual clock's timer passes at once: the time limiter gives up.
    let timed_out = resil_core::Decorators::new()
        .with_time_limiter(&tl)
        .with_bulkhead(&b)
        .call_async(std::future::pending::<Result<(), ()>>)
        .await;
    assert!(matches!(timed_out, Err(Error::Timeout(_))));
    assert_eq!(limit(&b), 1, "⌊2 × 0.9⌋: the timeout was a drop");
    assert_eq!(b.metrics().available_concurrent_calls(), 1);
}

/// A time limiter's timeout reaches the bulkheads of the chains inside the
/// call it gives up on (a client function's, called from a handler with a
/// time limiter): their permits, dropped then, count the call as a drop.
#[tokio::test]
async fn a_time_limiters_timeout_outside_the_chain_makes_the_call_a_drop() {
    let (b, clock) = bulkhead(aimd(2));
    let tl = time_limiter("handler", &clock);
    nine_successes(&b, &clock);
    let timed_out = resil_core::Decorators::new()
        .with_time_limiter(&tl)
        .call_async(|| async { hung_chain(&b).await.map_err(|_| ()) })
        .await;
    assert_timed_out_as_a_drop(&timed_out, &b);
}

/// The same through a time limiter that may leave its call running (the
/// attributes' time limiter, around a function whose body has a bulkhead):
/// with `cancel_running_future` on, its timeout drops the call as the
/// other time limiter's does.
#[tokio::test]
async fn a_detaching_time_limiters_timeout_makes_the_call_a_drop() {
    let (b, clock) = bulkhead(aimd(2));
    let tl = time_limiter("handler", &clock);
    nine_successes(&b, &clock);
    let inner = b.clone();
    let timed_out = Stack::new()
        .time_limiter(tl.detaching_part())
        .call_async(Call(move || {
            let b = inner.clone();
            async move { hung_chain(&b).await.map_err(|_| Error::Inner(())) }
        }))
        .await;
    assert_timed_out_as_a_drop(&timed_out, &b);
}
