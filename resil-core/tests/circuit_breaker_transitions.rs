//! The circuit breaker's transitions that recorded calls do not make: the
//! timer from OPEN to HALF_OPEN, manual, illegal and same-state transitions,
//! FORCED_OPEN, DISABLED and METRICS_ONLY, reset, and opening for or until a
//! time, on a `ManualClock`.

mod support;

use resil_core::Error;
use resil_core::circuit_breaker::{CircuitBreakerConfig, CircuitBreakerEvent as Ev, State};
use resil_core::clock::{Clock, Nanos};
use resil_core::interval::IntervalFunction;
use support::circuit_breaker::{MS, SEC, breaker, count, fail, ok, transition};

#[test]
fn automatic_transition_fires_at_the_wait_and_is_cancelled_by_transitions() {
    let config = count(2, 2)
        .wait_duration_in_open_state(10 * SEC)
        .automatic_transition_from_open_to_half_open_enabled(true)
        .build()
        .unwrap();
    let (cb, clock, rec) = breaker(config);
    cb.transition_to_open_state().unwrap();
    clock.advance(10 * SEC - MS);
    assert_eq!(cb.state(), State::Open);
    clock.advance(MS);
    assert_eq!(cb.state(), State::HalfOpen, "no request needed");
    assert_eq!(
        rec.take(),
        [
            transition(State::Closed, State::Open),
            transition(State::Open, State::HalfOpen)
        ]
    );

    // reset cancels the pending timer; a later OPEN is not cut short by it.
    cb.transition_to_open_state().unwrap(); // timer for t+10s
    clock.advance(6 * SEC);
    cb.reset();
    cb.transition_to_open_state().unwrap(); // new timer for t+16s
    clock.advance(5 * SEC); // the stale timer's deadline passes
    assert_eq!(cb.state(), State::Open);
    clock.advance(5 * SEC);
    assert_eq!(cb.state(), State::HalfOpen);
}

#[test]
fn a_timer_for_a_closed_breaker_does_nothing() {
    let config = count(2, 2)
        .automatic_transition_from_open_to_half_open_enabled(true)
        .build()
        .unwrap();
    let (cb, clock, _) = breaker(config);
    cb.transition_to_open_state().unwrap();
    cb.transition_to_closed_state().unwrap();
    clock.advance(120 * SEC);
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn illegal_transitions_fail_and_leave_the_state() {
    let (cb, _, rec) = breaker(CircuitBreakerConfig::default());
    let err = cb.transition_to_half_open_state().unwrap_err();
    assert_eq!(
        err.to_string(),
        "circuit breaker `inventory-query` tried an illegal state transition from CLOSED to HALF_OPEN"
    );
    cb.transition_to_metrics_only_state().unwrap();
    assert!(cb.transition_to_open_state().is_err());
    assert!(cb.transition_to_half_open_state().is_err());
    assert_eq!(cb.state(), State::MetricsOnly);
    assert_eq!(rec.take(), [transition(State::Closed, State::MetricsOnly)]);
}

#[test]
fn same_state_transitions_publish_nothing_but_reset_data() {
    let (cb, clock, rec) = breaker(
        count(10, 10)
            .wait_duration_in_open_state(10 * SEC)
            .build()
            .unwrap(),
    );
    fail(&cb).unwrap_err();
    cb.transition_to_closed_state().unwrap();
    assert_eq!(
        cb.metrics().number_of_buffered_calls(),
        0,
        "window discarded"
    );
    cb.transition_to_open_state().unwrap();
    clock.advance(5 * SEC);
    cb.transition_to_open_state().unwrap(); // OPEN -> OPEN restarts the wait
    clock.advance(6 * SEC);
    assert!(!cb.try_acquire_permission());
    assert_eq!(
        rec.take()[1..],
        [transition(State::Closed, State::Open), Ev::CallNotPermitted]
    );
}

#[test]
fn forced_open_refuses_counts_but_publishes_no_refusal() {
    let (cb, _, rec) = breaker(CircuitBreakerConfig::default());
    cb.transition_to_forced_open_state().unwrap();
    assert!(matches!(ok(&cb), Err(Error::CallNotPermitted(e)) if e.state() == State::ForcedOpen));
    assert!(!cb.try_acquire_permission());
    let m = cb.metrics();
    assert_eq!(
        (m.number_of_not_permitted_calls(), m.failure_rate()),
        (2, -1.0)
    );
    assert_eq!(rec.take(), [transition(State::Closed, State::ForcedOpen)]);
}

#[test]
fn disabled_admits_everything_and_records_nothing() {
    let (cb, _, rec) = breaker(count(2, 2).build().unwrap());
    cb.transition_to_disabled_state().unwrap();
    for _ in 0..10 {
        fail(&cb).unwrap_err();
    }
    let m = cb.metrics();
    assert_eq!((m.number_of_buffered_calls(), m.failure_rate()), (0, -1.0));
    assert_eq!(cb.state(), State::Disabled);
    assert_eq!(rec.take(), [transition(State::Closed, State::Disabled)]);
}

#[test]
fn metrics_only_records_never_opens_and_publishes_each_crossing_once() {
    let config = count(2, 2)
        .slow_call_duration_threshold(MS)
        .slow_call_rate_threshold(50.0)
        .build()
        .unwrap();
    let (cb, clock, rec) = breaker(config);
    cb.transition_to_metrics_only_state().unwrap();
    rec.take();
    for _ in 0..3 {
        let _ = cb.call(|| {
            clock.advance(2 * MS);
            Err::<(), _>("boom")
        });
    }
    assert_eq!(cb.state(), State::MetricsOnly);
    assert_eq!(cb.metrics().failure_rate(), 100.0);
    let exceeded: Vec<_> = rec
        .take()
        .into_iter()
        .filter(|e| !matches!(e, Ev::Error { .. }))
        .collect();
    assert_eq!(
        exceeded,
        [
            Ev::FailureRateExceeded {
                failure_rate: 100.0
            },
            Ev::SlowCallRateExceeded {
                slow_call_rate: 100.0
            }
        ]
    );
}

#[test]
fn reset_publishes_the_transition_then_reset() {
    let (cb, _, rec) = breaker(CircuitBreakerConfig::default());
    cb.reset();
    assert_eq!(rec.take(), [Ev::Reset]);
    cb.transition_to_forced_open_state().unwrap();
    cb.reset();
    assert_eq!(
        rec.take(),
        [
            transition(State::Closed, State::ForcedOpen),
            transition(State::ForcedOpen, State::Closed),
            Ev::Reset
        ]
    );
}

#[test]
fn manual_open_for_and_until_keep_the_attempt_counter() {
    let f = IntervalFunction::of_exponential_backoff(SEC, 3.0).unwrap();
    let config = CircuitBreakerConfig::builder()
        .wait_interval_function_in_open_state(f)
        .build()
        .unwrap();
    let (cb, clock, _) = breaker(config);
    cb.transition_to_open_state_for(2 * SEC).unwrap(); // attempts stay 0
    clock.advance(2 * SEC + MS);
    assert!(cb.try_acquire_permission());
    cb.transition_to_open_state().unwrap(); // attempts 1: 1 s
    clock.advance(SEC + MS);
    assert!(cb.try_acquire_permission());
    let until = Nanos::new(clock.now().as_u64() + 500_000_000);
    cb.transition_to_open_state_until(until).unwrap();
    clock.advance(500 * MS);
    assert!(!cb.try_acquire_permission());
    clock.advance(MS);
    assert!(cb.try_acquire_permission());
    cb.transition_to_open_state().unwrap(); // attempts 2: 3 s
    clock.advance(3 * SEC);
    assert!(!cb.try_acquire_permission());
}
