//! Fault injection through `Decorators` on a manual clock: an abort is a
//! failure the breaker records, a retry retries and a fallback receives; a
//! delay waits on the fault's clock, then the call runs; with no fault in
//! force a call allocates nothing.

mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resil_core::Error;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
use resil_core::clock::{Clock, ManualClock, SharedClock};
use resil_core::decorators::{Decorators, Layer};
use resil_core::fault::{FaultConfig, Faults};
use resil_core::retry::{Retry, RetryConfig};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};

#[global_allocator]
static ALLOC: support::CountingAlloc = support::CountingAlloc;

fn abort_all() -> FaultConfig {
    FaultConfig::builder().abort_percent(100.0).build().unwrap()
}

/// Each test uses names of its own: the board is the process's.
fn configure(name: &str, config: FaultConfig, clock: &ManualClock) {
    Faults::global().configure(name, Some(config), SharedClock::new(clock.clone()));
}

#[test]
fn the_breaker_opens_on_aborted_calls_that_never_ran() {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::with_clock("fault-breaker", config, clock.clone());
    configure("fault-breaker", abort_all(), &clock);
    let ran = AtomicU32::new(0);
    for _ in 0..4 {
        let outcome = Decorators::new().with_circuit_breaker(&breaker).call(|| {
            ran.fetch_add(1, Ordering::Relaxed);
            Ok::<_, &str>(1)
        });
        assert!(matches!(outcome, Err(Error::FaultInjected(ref f)) if f.name() == "fault-breaker"));
    }
    assert_eq!(
        ran.load(Ordering::Relaxed),
        0,
        "an aborted call does not run"
    );
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(breaker.metrics().number_of_failed_calls(), 4);
    assert_eq!(Faults::global().injected_total("fault-breaker"), (0, 4));

    // The drill ends: the breaker recovers as it would from a real outage.
    Faults::global().configure("fault-breaker", None, SharedClock::new(clock.clone()));
    let outcome = Decorators::new()
        .with_circuit_breaker(&breaker)
        .call(|| Ok::<_, &str>(1));
    assert!(matches!(outcome, Err(Error::CallNotPermitted(_))));
}

#[test]
fn a_retry_retries_aborts_and_a_fallback_receives_the_last() {
    let clock = ManualClock::new();
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::from_millis(100))
        .build()
        .unwrap();
    let retry = Retry::with_clock("fault-retry", config, clock.clone());
    configure("fault-retry", abort_all(), &clock);
    let outcome = Decorators::new()
        .with_retry(&retry)
        .with_fallback(Layer::Retry, |e: Error<&str>| match e {
            Error::FaultInjected(f) => Ok(format!("fallback after {}", f.name())),
            other => Err(other),
        })
        .call(|| Ok::<_, &str>("ran".to_owned()));
    assert_eq!(outcome.unwrap(), "fallback after fault-retry");
    assert_eq!(Faults::global().injected_total("fault-retry"), (0, 3));
    assert_eq!(
        clock.now().as_duration(),
        Duration::from_millis(200),
        "two waits of the retry, on the manual clock"
    );
}

#[test]
fn a_delayed_blocking_call_waits_on_the_clock_then_runs() {
    let clock = ManualClock::new();
    let breaker = CircuitBreaker::with_clock("fault-delay", Default::default(), clock.clone());
    let delay = FaultConfig::builder()
        .delay(Duration::from_millis(250))
        .delay_percent(100.0)
        .build()
        .unwrap();
    configure("fault-delay", delay, &clock);
    let outcome = Decorators::new()
        .with_circuit_breaker(&breaker)
        .call(|| Ok::<_, &str>(clock.now().as_duration()));
    assert_eq!(outcome, Ok(Duration::from_millis(250)));
    assert_eq!(Faults::global().injected_total("fault-delay"), (1, 0));
    assert_eq!(breaker.metrics().number_of_successful_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_delayed_async_call_waits_on_paused_tokio_time_then_runs() {
    let clock = resil_core::clock::TokioClock::new();
    let breaker = CircuitBreaker::with_clock("fault-async", Default::default(), clock.clone());
    let delay = FaultConfig::builder()
        .delay(Duration::from_secs(2))
        .delay_percent(100.0)
        .build()
        .unwrap();
    Faults::global().configure("fault-async", Some(delay), SharedClock::new(clock.clone()));
    let start = clock.now();
    let outcome = Decorators::new()
        .with_circuit_breaker(&breaker)
        .call_async(|| async { Ok::<_, &str>(clock.now()) })
        .await;
    assert_eq!(
        outcome.unwrap().saturating_duration_since(start),
        Duration::from_secs(2)
    );
    assert_eq!(Faults::global().injected_total("fault-async"), (1, 0));
}

#[tokio::test]
async fn an_async_abort_reaches_the_fallback() {
    let clock = ManualClock::new();
    let breaker =
        CircuitBreaker::with_clock("fault-async-abort", Default::default(), clock.clone());
    configure("fault-async-abort", abort_all(), &clock);
    let outcome = Decorators::new()
        .with_circuit_breaker(&breaker)
        .with_fallback(Layer::CircuitBreaker, |e: Error<&str>| {
            Ok(matches!(e, Error::FaultInjected(_)))
        })
        .call_async(|| async { Ok::<_, &str>(false) })
        .await;
    assert_eq!(outcome, Ok(true));
    assert_eq!(breaker.metrics().number_of_failed_calls(), 1);
}

#[test]
fn with_no_fault_in_force_a_call_allocates_nothing() {
    let faults = Faults::new();
    let breaker = CircuitBreaker::of_defaults("fault-quiet");
    let call = || {
        resil_core::chain::Stack::new()
            .circuit_breaker(
                breaker.part(&resil_core::circuit_breaker::CircuitBreakerClassifier::new()),
            )
            .fault(faults.part(["fault-quiet"]))
            .call(resil_core::chain::Lift(|| Ok::<u32, &str>(7)))
    };
    assert_eq!(call(), Ok(7));
    let (out, n) = support::allocations_during(call);
    assert_eq!(out, Ok(7));
    assert_eq!(n, 0, "no fault in force: no allocation");
    // Configured but later disabled: quiet again.
    faults.configure("fault-quiet", Some(abort_all()), SharedClock::default());
    assert!(matches!(call(), Err(Error::FaultInjected(_))));
    faults.configure("fault-quiet", None, SharedClock::default());
    let (out, n) = support::allocations_during(call);
    assert_eq!((out, n), (Ok(7), 0));
}

#[test]
fn a_primitive_called_on_its_own_answers_to_the_fault_of_its_name() {
    let clock = ManualClock::new();
    let breaker = CircuitBreaker::with_clock("fault-own", Default::default(), clock.clone());
    let retry = Retry::with_clock("fault-own", RetryConfig::default(), clock.clone());
    configure("fault-own", abort_all(), &clock);
    assert!(matches!(
        breaker.call(|| Ok::<_, &str>(1)),
        Err(Error::FaultInjected(_))
    ));
    assert!(matches!(
        retry.call(|| Ok::<_, &str>(1)),
        Err(Error::FaultInjected(_))
    ));
    assert_eq!(Faults::global().injected_total("fault-own"), (0, 4));
    Faults::global().configure("fault-own", None, SharedClock::new(clock));
    assert_eq!(breaker.call(|| Ok::<_, &str>(1)), Ok(1));
}

#[test]
fn a_thread_pool_job_is_aborted_or_delayed_on_the_pool_thread() {
    use resil_core::thread_pool_bulkhead::ThreadPoolBulkhead;
    let clock = ManualClock::new();
    let pool = ThreadPoolBulkhead::with_clock("fault-pool", Default::default(), clock.clone());
    configure("fault-pool", abort_all(), &clock);
    let ran = std::sync::Arc::new(AtomicU32::new(0));
    let r = ran.clone();
    assert!(matches!(
        pool.call(move || {
            r.fetch_add(1, Ordering::SeqCst);
            Ok::<_, &str>(1)
        }),
        Err(Error::FaultInjected(f)) if f.name() == "fault-pool"
    ));
    assert_eq!(ran.load(Ordering::SeqCst), 0, "an aborted job does not run");
    let delay = FaultConfig::builder()
        .delay(Duration::from_millis(40))
        .delay_percent(100.0)
        .build()
        .unwrap();
    configure("fault-pool", delay, &clock);
    let (c, thread) = (clock.clone(), std::thread::current().id());
    let (at, on) = pool
        .call(move || Ok::<_, &str>((c.now().as_duration(), std::thread::current().id())))
        .unwrap();
    assert_eq!(
        at,
        Duration::from_millis(40),
        "the job waited on the fault's clock"
    );
    assert_ne!(on, thread, "on the pool's thread");
    assert_eq!(Faults::global().injected_total("fault-pool"), (1, 1));
    Faults::global().configure("fault-pool", None, SharedClock::new(clock.clone()));
    let c = clock.clone();
    assert_eq!(
        pool.call(move || Ok::<_, &str>(c.now().as_duration())),
        Ok(Duration::from_millis(40))
    );
}

#[tokio::test(start_paused = true)]
async fn a_detached_call_answers_to_the_fault_inside_the_future_left_running() {
    let clock = resil_core::clock::TokioClock::new();
    let config = TimeLimiterConfig::builder()
        .timeout_duration(Duration::from_secs(1))
        .cancel_running_future(false)
        .build()
        .unwrap();
    let tl = TimeLimiter::with_clock("fault-detached", config, clock.clone());
    let ran = std::sync::Arc::new(AtomicU32::new(0));
    let set = |config| {
        Faults::global().configure("fault-detached", config, SharedClock::new(clock.clone()));
    };
    let call = || {
        let counter = ran.clone();
        tl.call_async_detached(move || async move {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok::<_, &str>(1)
        })
    };

    // An abort: the call's future is never polled.
    set(Some(abort_all()));
    let outcome = call().await;
    assert!(matches!(outcome, Err(Error::FaultInjected(_))));
    assert_eq!(ran.load(Ordering::SeqCst), 0);

    // A delay longer than the timeout: the caller times out, and the call,
    // left running, runs once the delay is over.
    set(Some(
        FaultConfig::builder()
            .delay(Duration::from_secs(3))
            .delay_percent(100.0)
            .build()
            .unwrap(),
    ));
    let outcome = call().await;
    assert!(matches!(outcome, Err(Error::Timeout(_))), "{outcome:?}");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(Faults::global().injected_total("fault-detached"), (1, 1));

    // No fault: the call runs in time.
    set(None);
    assert_eq!(call().await, Ok(1));
    assert_eq!(ran.load(Ordering::SeqCst), 2);
}

/// A delayed call through a breaker and a bulkhead (limit 1), its fault
/// delaying it 2 s on paused tokio time.
fn delayed_setup(name: &str) -> (CircuitBreaker, Bulkhead) {
    let clock = resil_core::clock::TokioClock::new();
    let breaker = CircuitBreaker::with_clock(name, Default::default(), clock.clone());
    let bulkhead = Bulkhead::new(
        name,
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .build()
            .unwrap(),
    );
    let delay = FaultConfig::builder()
        .delay(Duration::from_secs(2))
        .delay_percent(100.0)
        .build()
        .unwrap();
    Faults::global().configure(name, Some(delay), SharedClock::new(clock));
    (breaker, bulkhead)
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_during_its_delay_never_runs_and_gives_its_permit_back() {
    let (breaker, bulkhead) = delayed_setup("fault-async-dropped");
    let ran = AtomicU32::new(0);
    let decorators = Decorators::new()
        .with_circuit_breaker(&breaker)
        .with_bulkhead(&bulkhead);
    let mut call = tokio_test::task::spawn(decorators.call_async(|| {
        ran.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, &str>(1) }
    }));
    assert!(call.poll().is_pending(), "the delay is running");
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 0);
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(call.poll().is_pending(), "half the delay is over");
    drop(call);
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the call never started");
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
    assert_eq!(breaker.metrics().number_of_buffered_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_start_panics_after_its_delay_is_a_recorded_failure() {
    let (breaker, bulkhead) = delayed_setup("fault-async-panics");
    let decorators = Decorators::new()
        .with_circuit_breaker(&breaker)
        .with_bulkhead(&bulkhead);
    let mut call = tokio_test::task::spawn(decorators.call_async(
        || -> std::future::Ready<Result<u32, &str>> { panic!("the caller's closure panics") },
    ));
    assert!(call.poll().is_pending(), "the delay is running");
    tokio::time::advance(Duration::from_secs(2)).await;
    let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call.poll()));
    assert!(polled.is_err(), "the panic reaches the caller");
    drop(call);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
    assert_eq!(breaker.metrics().number_of_failed_calls(), 1);
}
