//! FORCED_OPEN with a time limit: refuses until the limit, then CLOSED with
//! its transition event; a transition before the limit keeps its own state.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent, State,
};
use resil_core::clock::ManualClock;

fn breaker(clock: &ManualClock) -> CircuitBreaker {
    CircuitBreaker::with_clock("forced", CircuitBreakerConfig::default(), clock.clone())
}

#[test]
fn a_limited_forced_open_refuses_then_closes_with_an_event() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    cb.event_publisher()
        .on_event(move |e| sink.lock().unwrap().push(e.kind().clone()));
    cb.transition_to_forced_open_state_for(Duration::from_secs(600))
        .unwrap();
    clock.advance(Duration::from_secs(599));
    assert_eq!(cb.state(), State::ForcedOpen);
    assert!(
        cb.call(|| Ok::<_, ()>(())).is_err(),
        "refused while forced open"
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(cb.state(), State::Closed);
    assert!(cb.call(|| Ok::<_, ()>(())).is_ok());
    let transitions: Vec<(State, State)> = seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            CircuitBreakerEvent::StateTransition { from, to } => Some((*from, *to)),
            _ => None,
        })
        .collect();
    assert_eq!(
        transitions,
        [
            (State::Closed, State::ForcedOpen),
            (State::ForcedOpen, State::Closed)
        ]
    );
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
}

#[test]
fn a_zero_limit_closes_at_once() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    cb.transition_to_forced_open_state_for(Duration::ZERO)
        .unwrap();
    clock.advance(Duration::from_millis(1));
    assert_eq!(cb.state(), State::Closed);
}
