//! Faults found by review: a panicking user callback, a consumer that
//! re-enters its publisher, a clock that runs timers inline, an unwind that is
//! not the call's own. Each test failed (or hung, or aborted) before its fix.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerClassifier, CircuitBreakerConfig, State,
};
use resil_core::clock::ManualClock;
use resil_core::interval::IntervalFunction;
use resil_core::retry::{Retry, RetryConfig};
use resil_core::{Decorators, Error};

/// Generous bound for "this did not hang": only reached when a test fails.
const HANG: Duration = Duration::from_secs(20);

fn half_open(config: CircuitBreakerConfig) -> CircuitBreaker {
    let cb = CircuitBreaker::with_clock("inventory-query", config, ManualClock::new());
    cb.transition_to_open_state().unwrap();
    cb.transition_to_half_open_state().unwrap();
    cb
}

fn one_probe() -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .permitted_number_of_calls_in_half_open_state(1)
        .build()
        .unwrap()
}

/// Waits 1 s on the first opening (the test's own) and panics on the next.
fn panics_on_reopening() -> IntervalFunction {
    IntervalFunction::from_fn(|attempt| {
        assert!(attempt < 2, "interval");
        Duration::from_secs(1)
    })
}

/// Runs `f` on its own thread and fails the test if it does not finish.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(HANG)
        .unwrap_or_else(|_| panic!("{what}: deadlocked"))
}

#[test]
fn a_panicking_record_predicate_is_a_failure_and_frees_the_probe() {
    let cb = half_open(one_probe());
    const PANICS: CircuitBreakerClassifier<u32, &str> =
        CircuitBreakerClassifier::new().record(|_| panic!("predicate"));
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        Decorators::new()
            .with_circuit_breaker_classified(&cb, PANICS)
            .call(|| Err::<u32, _>("down"))
    }));
    assert!(outcome.is_err(), "the predicate's panic is resumed");
    // The probe was recorded as a failure: one of one failed, so OPEN, not a
    // HALF_OPEN with no permit left for ever.
    assert_eq!(cb.state(), State::Open);
    assert_eq!(cb.metrics().number_of_failed_calls(), 1, "recorded once");
}

#[test]
fn a_panicking_result_predicate_is_recorded_once() {
    let config = CircuitBreakerConfig::builder()
        .permitted_number_of_calls_in_half_open_state(2)
        .build()
        .unwrap();
    let cb = half_open(config);
    const PANICS: CircuitBreakerClassifier<u32, &str> =
        CircuitBreakerClassifier::new().record_result(|_| panic!("result"));
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        Decorators::new()
            .with_circuit_breaker_classified(&cb, PANICS)
            .call(|| Ok(1))
    }));
    assert!(outcome.is_err());
    assert_eq!(cb.state(), State::HalfOpen);
    let m = cb.metrics();
    assert_eq!(m.number_of_buffered_calls(), 1, "recorded once");
    assert_eq!(m.number_of_failed_calls(), 1, "as a failure");
    assert!(
        cb.try_acquire_permission(),
        "the second probe is still free"
    );
}

#[test]
fn a_panicking_interval_function_still_opens_and_resumes() {
    let config = CircuitBreakerConfig::builder()
        .permitted_number_of_calls_in_half_open_state(1)
        .wait_interval_function_in_open_state(panics_on_reopening())
        .build()
        .unwrap();
    let cb = half_open(config);
    let outcome = catch_unwind(AssertUnwindSafe(|| cb.call(|| Err::<u32, _>("down"))));
    let payload = outcome.expect_err("the interval function's panic is resumed");
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"interval"),
        "{payload:?}"
    );
    assert_eq!(cb.state(), State::Open, "the transition completed");
    assert!(!cb.try_acquire_permission(), "OPEN for the default wait");
}

#[test]
fn a_panicking_interval_function_during_an_unwind_does_not_abort() {
    // The call's own panic is recorded while unwinding; the failure trips the
    // breaker and the interval function panics too. Before the fix the second
    // panic escaped a destructor during unwinding and aborted the process.
    let config = CircuitBreakerConfig::builder()
        .permitted_number_of_calls_in_half_open_state(1)
        .wait_interval_function_in_open_state(panics_on_reopening())
        .build()
        .unwrap();
    let cb = half_open(config);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        cb.call(|| -> Result<u32, &str> { panic!("call") })
    }));
    let payload = outcome.expect_err("the call's panic");
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"call"),
        "the first panic wins"
    );
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn a_breaker_future_dropped_by_an_unrelated_unwind_records_nothing() {
    let cb = half_open(one_probe());
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let _pending = cb.call_async(std::future::pending::<Result<u32, &str>>);
        panic!("elsewhere");
    }));
    assert!(outcome.is_err());
    assert_eq!(cb.state(), State::HalfOpen, "no failure reopened it");
    assert_eq!(cb.metrics().number_of_buffered_calls(), 0);
    assert!(cb.try_acquire_permission(), "the probe's permit came back");
}

#[test]
fn a_panic_while_polling_the_breaker_future_is_still_a_failure() {
    let cb = half_open(one_probe());
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let fut = cb.call_async(|| async { panic!("poll") as Result<u32, &str> });
        let mut fut = pin!(fut);
        let _ = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    }));
    assert!(outcome.is_err());
    assert_eq!(cb.state(), State::Open, "the panicking probe failed");
}

/// Resilience4j's default retry on a manual clock.
fn retry() -> Retry {
    Retry::with_clock(
        "inventory-query",
        RetryConfig::builder().build().unwrap(),
        ManualClock::new(),
    )
}

/// A future that is pending on its first poll and ready on the next.
struct PendingOnce(bool);

impl Future for PendingOnce {
    type Output = Result<u32, &'static str>;
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.0 {
            Poll::Ready(Ok(1))
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[test]
fn a_retry_future_dropped_by_an_unrelated_unwind_records_nothing() {
    let retry = retry();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let fut = retry.call_async(|| PendingOnce(false));
        let mut fut = pin!(fut);
        assert!(
            fut.as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending()
        );
        panic!("elsewhere");
    }));
    assert!(outcome.is_err());
    let m = retry.metrics();
    assert_eq!(m.number_of_failed_calls_without_retry_attempt(), 0);
    assert_eq!(m.number_of_failed_calls_with_retry_attempt(), 0);
}

#[test]
fn a_panic_in_a_retried_async_attempt_is_still_counted() {
    let retry = retry();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let fut = retry.call_async(|| async { panic!("attempt") as Result<u32, &str> });
        let mut fut = pin!(fut);
        let _ = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    }));
    assert!(outcome.is_err());
    assert_eq!(
        retry
            .metrics()
            .number_of_failed_calls_without_retry_attempt(),
        1
    );
}

#[test]
fn a_consumer_may_subscribe_and_unsubscribe_on_its_own_publisher() {
    let cb = CircuitBreaker::with_clock(
        "inventory-query",
        CircuitBreakerConfig::default(),
        ManualClock::new(),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (inner, sink) = (cb.clone(), seen.clone());
    let id = Arc::new(Mutex::new(None));
    let own = id.clone();
    let first = cb.event_publisher().on_event(move |e| {
        sink.lock().unwrap().push(format!("{:?}", e.kind()));
        let sink = sink.clone();
        // Re-entering the publisher from a consumer: subscribe, then remove
        // ourselves. Both deadlocked while the read lock was held.
        inner
            .event_publisher()
            .on_event(move |_| sink.lock().unwrap().push("late".into()));
        if let Some(me) = own.lock().unwrap().take() {
            assert!(inner.event_publisher().unsubscribe(me));
        }
    });
    *id.lock().unwrap() = Some(first);
    let cb2 = cb.clone();
    within("re-entrant consumer", move || {
        cb2.transition_to_open_state().unwrap();
        cb2.transition_to_half_open_state().unwrap();
    });
    let seen = seen.lock().unwrap();
    // The first consumer saw only the first event; the one it added saw the next.
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[0].contains("StateTransition"), "{seen:?}");
    assert_eq!(seen[1], "late");
}

#[test]
fn a_slow_consumer_does_not_stall_a_concurrent_subscribe() {
    let cb = CircuitBreaker::with_clock(
        "inventory-query",
        CircuitBreakerConfig::default(),
        ManualClock::new(),
    );
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let entered_tx = Mutex::new(entered_tx);
    cb.event_publisher().on_event(move |_| {
        let _ = entered_tx.lock().unwrap().send(());
        let _ = released.lock().unwrap().recv_timeout(HANG);
    });
    let slow = cb.clone();
    let publisher = std::thread::spawn(move || slow.transition_to_open_state().unwrap());
    entered.recv_timeout(HANG).expect("the consumer runs");
    // While the slow consumer runs, another thread subscribes and calls.
    let other = cb.clone();
    within("subscribe beside a slow consumer", move || {
        other.event_publisher().on_event(|_| {});
        other.state()
    });
    release.send(()).unwrap();
    publisher.join().unwrap();
}

#[test]
fn a_zero_delay_timer_on_the_manual_clock_runs_inline_without_deadlock() {
    // OPEN for zero with automatic transitions: the manual clock runs the
    // OPEN -> HALF_OPEN timer inside `schedule`, which arms the next timer.
    let cb = CircuitBreaker::with_clock(
        "inventory-query",
        CircuitBreakerConfig::builder()
            .automatic_transition_from_open_to_half_open_enabled(true)
            .max_wait_duration_in_half_open_state(Duration::from_secs(5))
            .build()
            .unwrap(),
        ManualClock::new(),
    );
    let state = within("inline timer", move || {
        cb.transition_to_open_state_for(Duration::ZERO).unwrap();
        cb.state()
    });
    assert_eq!(state, State::HalfOpen);
}

#[test]
fn a_refused_call_is_not_an_error_of_the_caller() {
    // Sanity for the tests above: a forced-open breaker refuses, records nothing.
    let cb = CircuitBreaker::of_defaults("inventory-query");
    cb.transition_to_forced_open_state().unwrap();
    assert!(matches!(
        cb.call(|| Ok::<u32, &str>(1)),
        Err(Error::CallNotPermitted(_))
    ));
}

#[test]
fn a_panicking_retry_predicate_in_an_async_call_is_counted_once() {
    use resil_core::retry::RetryClassifier;
    let retry = retry();
    const PANICS: RetryClassifier<u32, &str> = RetryClassifier::new().retry_on(|_| panic!("p"));
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let chain = Decorators::new().with_retry_classified(&retry, PANICS);
        let fut = chain.call_async(|| async { Err::<u32, _>("down") });
        let mut fut = pin!(fut);
        let _ = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    }));
    assert!(outcome.is_err());
    let m = retry.metrics();
    assert_eq!(m.number_of_failed_calls_without_retry_attempt(), 1);
    assert_eq!(m.number_of_total_calls(), 1);
}

/// Every published event reaches a consumer subscribed throughout, exactly
/// once, while other threads subscribe and unsubscribe in a loop.
#[test]
fn stress_every_event_reaches_a_steady_consumer_exactly_once() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    const THREADS: u64 = 4;
    const CALLS: u64 = 5_000;
    let cb = CircuitBreaker::with_clock(
        "inventory-query",
        CircuitBreakerConfig::default(),
        ManualClock::new(),
    );
    let steady = Arc::new(AtomicU64::new(0));
    let counter = steady.clone();
    cb.event_publisher().on_event(move |_| {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (cb, stop) = (cb.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut churned = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let id = cb.event_publisher().on_event(|_| {});
                assert!(cb.event_publisher().unsubscribe(id));
                churned += 1;
            }
            churned
        })
    };
    let callers: Vec<_> = (0..THREADS)
        .map(|_| {
            let cb = cb.clone();
            std::thread::spawn(move || {
                let mut ok = 0u64;
                for _ in 0..CALLS {
                    if cb.call(|| Ok::<u32, &str>(1)).is_ok() {
                        ok += 1;
                    }
                }
                ok
            })
        })
        .collect();
    let ok: u64 = callers.into_iter().map(|t| t.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    let churned = churn.join().unwrap();
    assert_eq!(ok, THREADS * CALLS, "every call admitted");
    assert_eq!(
        steady.load(Ordering::Relaxed),
        THREADS * CALLS,
        "one Success event per call"
    );
    assert!(churned > 0);
    assert_eq!(
        cb.metrics().number_of_buffered_calls(),
        100,
        "the default window is full"
    );
}

#[test]
fn a_panicking_fallback_leaks_no_permit_of_any_layer() {
    use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
    use resil_core::decorators::{Decorators, Layer};
    let cb = half_open(one_probe());
    let bulkhead = Bulkhead::new(
        "inventory-query",
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .build()
            .unwrap(),
    );
    for layer in [Layer::Bulkhead, Layer::CircuitBreaker] {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            Decorators::new()
                .with_circuit_breaker(&cb)
                .with_bulkhead(&bulkhead)
                .with_fallback(layer, |_e: Error<&str>| -> Result<u32, Error<&str>> {
                    panic!("fallback")
                })
                .call(|| Err::<u32, _>("down"))
        }));
        assert!(
            outcome.is_err(),
            "{layer:?}: the fallback's panic is resumed"
        );
        assert_eq!(
            bulkhead.metrics().available_concurrent_calls(),
            1,
            "{layer:?}: the bulkhead's permit came back"
        );
    }
    // The first call's bulkhead fallback panicked inside the breaker: one
    // failure (the panic), so the single probe decided OPEN.
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn a_panicking_context_propagator_keeps_the_pool_whole() {
    use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
    use std::sync::atomic::{AtomicU8, Ordering};
    // 0: capturing panics (on the caller); 1: entering panics (on the
    // worker); 2: neither.
    static MODE: AtomicU8 = AtomicU8::new(0);
    let config = ThreadPoolBulkheadConfig::builder()
        .core_thread_pool_size(1)
        .max_thread_pool_size(1)
        .queue_capacity(1)
        .context_propagator(|| {
            assert_ne!(MODE.load(Ordering::SeqCst), 0, "capture");
            || assert_ne!(MODE.load(Ordering::SeqCst), 1, "enter")
        })
        .build()
        .unwrap();
    let pool = ThreadPoolBulkhead::new("report-export", config);

    let captured = catch_unwind(AssertUnwindSafe(|| pool.try_submit(|| 1)));
    assert!(captured.is_err(), "the capture's panic reaches the caller");

    MODE.store(1, Ordering::SeqCst);
    let submitted = pool.try_submit(|| 1).expect("admitted");
    let entered = catch_unwind(AssertUnwindSafe(|| submitted.wait()));
    assert!(entered.is_err(), "the enter's panic is the task's");

    MODE.store(2, Ordering::SeqCst);
    assert_eq!(
        pool.try_submit(|| 7).unwrap().wait().unwrap(),
        7,
        "the worker lives"
    );
    assert!(pool.shutdown(), "and the pool shuts down");
}

/// Many threads submit to one small pool: every submission is either run
/// exactly once or refused, and the pool shuts down with nothing left.
#[test]
fn stress_every_thread_pool_submission_is_run_once_or_refused() {
    use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
    use std::sync::atomic::{AtomicU64, Ordering};
    const THREADS: u64 = 4;
    const TASKS: u64 = 500;
    let pool = ThreadPoolBulkhead::new(
        "report-export",
        ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(1)
            .max_thread_pool_size(2)
            .queue_capacity(4)
            .build()
            .unwrap(),
    );
    let ran = Arc::new(AtomicU64::new(0));
    let submitters: Vec<_> = (0..THREADS)
        .map(|_| {
            let (pool, ran) = (pool.clone(), ran.clone());
            std::thread::spawn(move || {
                let (mut done, mut refused) = (0u64, 0u64);
                let mut pending = Vec::new();
                for i in 0..TASKS {
                    let ran = ran.clone();
                    match pool.try_submit(move || {
                        ran.fetch_add(1, Ordering::SeqCst);
                        i
                    }) {
                        Ok(s) => pending.push((i, s)),
                        Err(_) => refused += 1,
                    }
                    if pending.len() >= 3 {
                        for (i, s) in pending.drain(..) {
                            assert_eq!(s.wait().unwrap(), i);
                            done += 1;
                        }
                    }
                }
                for (i, s) in pending {
                    assert_eq!(s.wait().unwrap(), i);
                    done += 1;
                }
                (done, refused)
            })
        })
        .collect();
    let (mut done, mut refused) = (0, 0);
    for t in submitters {
        let (d, r) = t.join().unwrap();
        done += d;
        refused += r;
    }
    assert_eq!(
        done + refused,
        THREADS * TASKS,
        "every submission accounted for"
    );
    assert_eq!(
        ran.load(Ordering::SeqCst),
        done,
        "each admitted task ran once"
    );
    assert!(done > 0);
    assert!(pool.shutdown(), "nothing left behind");
}
