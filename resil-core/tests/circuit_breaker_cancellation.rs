//! The circuit breaker when a call does not just return: a panic, sync or
//! async, recorded as a failure, a dropped future giving its HALF_OPEN probe
//! back (and a stale guard none to a newer HALF_OPEN), and async calls that
//! ask for permission when created and are `Send`.

mod support;

use std::time::Duration;

use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerEvent as Ev, State};
use support::circuit_breaker::{SEC, count, half_open, transition};

#[test]
fn a_panic_is_recorded_as_a_failure_and_resumed() {
    let (cb, _, rec) = half_open(
        count(10, 1)
            .permitted_number_of_calls_in_half_open_state(1)
            .build()
            .unwrap(),
    );
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = cb.call(|| -> Result<(), &str> { panic!("bug in the call") });
    }));
    assert!(caught.is_err(), "the panic reaches the caller");
    assert_eq!(cb.state(), State::Open, "the probe failed");
    assert_eq!(
        rec.take(),
        [
            Ev::Error {
                elapsed: Duration::ZERO,
                error_kind: Some("panic")
            },
            transition(State::HalfOpen, State::Open)
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_dropped_future_gives_back_its_probe_and_records_nothing() {
    let (cb, _, rec) = half_open(
        count(10, 1)
            .permitted_number_of_calls_in_half_open_state(1)
            .build()
            .unwrap(),
    );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let mut call = tokio_test::task::spawn(cb.call_async(|| async {
        rx.await.unwrap();
        Ok::<_, &str>(())
    }));
    tokio_test::assert_pending!(call.poll());
    assert!(!cb.try_acquire_permission(), "the only probe is taken");
    drop(call);
    drop(tx);
    assert_eq!(cb.metrics().number_of_buffered_calls(), 0);
    assert!(cb.try_acquire_permission(), "the probe came back");
    assert_eq!(rec.take(), [Ev::CallNotPermitted]);
}

#[test]
fn a_panic_while_polling_an_async_call_is_recorded_as_a_failure() {
    let (cb, _, rec) = half_open(
        count(10, 1)
            .permitted_number_of_calls_in_half_open_state(1)
            .build()
            .unwrap(),
    );
    let mut call = tokio_test::task::spawn(cb.call_async(|| async {
        tokio::task::yield_now().await;
        if true {
            panic!("bug in the call");
        }
        Ok::<_, &str>(())
    }));
    tokio_test::assert_pending!(call.poll());
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call.poll()));
    assert!(caught.is_err(), "the panic reaches the caller");
    // Recorded while unwinding, not when the future is dropped later.
    assert_eq!(cb.state(), State::Open, "the probe failed");
    assert_eq!(
        rec.take(),
        [
            Ev::Error {
                elapsed: Duration::ZERO,
                error_kind: Some("panic")
            },
            transition(State::HalfOpen, State::Open)
        ]
    );
    drop(call);
    assert_eq!(rec.take(), []);
}

#[test]
fn an_async_call_asks_for_permission_when_created() {
    let (cb, _, rec) = half_open(
        count(10, 1)
            .permitted_number_of_calls_in_half_open_state(1)
            .build()
            .unwrap(),
    );
    let called = std::cell::Cell::new(false);
    let first = cb.call_async(|| {
        called.set(true);
        async { Ok::<_, &str>(()) }
    });
    assert!(called.get(), "admitted, so the closure ran");
    let second = cb.call_async(|| async { Ok::<_, &str>(()) });
    assert_eq!(
        rec.take(),
        [Ev::CallNotPermitted],
        "the only probe is taken"
    );
    drop(second);
    drop(first); // never polled: the probe comes back, nothing is recorded
    assert!(cb.try_acquire_permission(), "the probe came back");
    assert_eq!(cb.metrics().number_of_buffered_calls(), 0);
}

#[test]
fn a_stale_guard_does_not_release_into_a_newer_half_open() {
    let (cb, clock, _) = half_open(
        count(10, 10)
            .permitted_number_of_calls_in_half_open_state(1)
            .build()
            .unwrap(),
    );
    let stale = cb.start_call().unwrap();
    cb.transition_to_open_state().unwrap();
    clock.advance(120 * SEC);
    let fresh = cb.start_call().unwrap(); // the one probe of the new HALF_OPEN
    drop(stale); // belongs to the previous generation
    assert!(cb.start_call().is_err(), "no extra probe appeared");
    drop(fresh);
}

fn assert_send<T: Send>(_: &T) {}

#[test]
fn async_calls_are_send() {
    let cb = CircuitBreaker::of_defaults("a");
    let fut = cb.call_async(|| async { Ok::<_, std::io::Error>(1) });
    assert_send(&fut);
}
