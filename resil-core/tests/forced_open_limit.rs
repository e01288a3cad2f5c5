//! FORCED_OPEN with a time limit: refuses until the limit, then HALF_OPEN
//! with its transition event, so that probes decide as after any OPEN; a
//! transition before the limit keeps its own state; a limit outside 1 ms ..=
//! 365 days is refused and changes nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent, MAX_FORCED_OPEN_LIMIT,
    MIN_FORCED_OPEN_LIMIT, State,
};
use resil_core::clock::ManualClock;

fn config() -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .permitted_number_of_calls_in_half_open_state(2)
        .build()
        .unwrap()
}

fn breaker(clock: &ManualClock) -> CircuitBreaker {
    CircuitBreaker::with_clock("forced", config(), clock.clone())
}

/// The breaker's transitions from now on.
fn transitions(cb: &CircuitBreaker) -> impl Fn() -> Vec<(State, State)> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    cb.event_publisher().on_event(move |e| {
        if let CircuitBreakerEvent::StateTransition { from, to } = e.kind() {
            sink.lock().unwrap().push((*from, *to));
        }
    });
    move || seen.lock().unwrap().clone()
}

#[test]
fn a_limited_forced_open_refuses_then_goes_half_open_and_the_probes_decide() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let seen = transitions(&cb);
    cb.transition_to_forced_open_state_for(Duration::from_secs(600))
        .unwrap();
    clock.advance(Duration::from_secs(599));
    assert_eq!(cb.state(), State::ForcedOpen);
    assert!(
        cb.call(|| Ok::<_, ()>(())).is_err(),
        "refused while forced open"
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        cb.state(),
        State::HalfOpen,
        "the end of the limit is not CLOSED: the probes decide"
    );
    // two probes, then every call waits for their verdict
    let a = cb.start_call().unwrap();
    let b = cb.start_call().unwrap();
    assert!(cb.start_call().is_err(), "only the probes go through");
    a.on_error(None);
    b.on_error(None);
    assert_eq!(cb.state(), State::Open, "the downstream is still down");
    assert_eq!(
        seen(),
        [
            (State::Closed, State::ForcedOpen),
            (State::ForcedOpen, State::HalfOpen),
            (State::HalfOpen, State::Open),
        ]
    );
}

#[test]
fn after_the_limit_healthy_probes_close_it() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    cb.transition_to_forced_open_state_for(Duration::from_millis(1))
        .unwrap();
    clock.advance(Duration::from_millis(1));
    assert_eq!(cb.state(), State::HalfOpen);
    cb.call(|| Ok::<_, ()>(())).unwrap();
    cb.call(|| Ok::<_, ()>(())).unwrap();
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn a_later_transition_is_not_undone_by_the_limit() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    cb.transition_to_forced_open_state_for(Duration::from_secs(60))
        .unwrap();
    // The operator makes it permanent before the limit.
    cb.transition_to_forced_open_state().unwrap();
    clock.advance(Duration::from_secs(120));
    assert_eq!(cb.state(), State::ForcedOpen);

    cb.transition_to_forced_open_state_for(Duration::from_secs(60))
        .unwrap();
    cb.transition_to_disabled_state().unwrap();
    clock.advance(Duration::from_secs(120));
    assert_eq!(cb.state(), State::Disabled);

    // a second limit replaces the first
    cb.transition_to_forced_open_state_for(Duration::from_secs(60))
        .unwrap();
    cb.transition_to_forced_open_state_for(Duration::from_secs(600))
        .unwrap();
    clock.advance(Duration::from_secs(120));
    assert_eq!(cb.state(), State::ForcedOpen);
    clock.advance(Duration::from_secs(480));
    assert_eq!(cb.state(), State::HalfOpen);
}

#[test]
fn a_limit_out_of_range_is_refused_and_changes_nothing() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let seen = transitions(&cb);
    let years = Duration::from_secs(100_000_000_000 * 365 * 24 * 3600);
    for limit in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_micros(999),
        MAX_FORCED_OPEN_LIMIT + Duration::from_nanos(1),
        years,
    ] {
        let e = cb.transition_to_forced_open_state_for(limit).unwrap_err();
        assert_eq!(e.limit(), limit);
        assert_eq!(e.name(), "forced");
        let text = e.to_string();
        assert!(
            text.starts_with(
                "circuit breaker `forced`: a forced open's time limit must be from 1ms to 365 days, got "
            ),
            "{text}"
        );
        assert_eq!(cb.state(), State::Closed, "{limit:?} changed the state");
    }
    assert!(seen().is_empty());
    // the bounds themselves are accepted
    cb.transition_to_forced_open_state_for(MIN_FORCED_OPEN_LIMIT)
        .unwrap();
    cb.transition_to_forced_open_state_for(MAX_FORCED_OPEN_LIMIT)
        .unwrap();
    assert_eq!(cb.state(), State::ForcedOpen);
}
