//! What the circuit breaker tests share: a breaker on a manual clock with
//! its events recorded, count-based windows, calls that succeed or fail,
//! the transition event, and a breaker brought to HALF_OPEN.

use std::time::Duration;

use resil_core::Error;
use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent as Ev, State,
};
use resil_core::clock::ManualClock;

use super::Recorder;

pub const MS: Duration = Duration::from_millis(1);
pub const SEC: Duration = Duration::from_secs(1);

pub fn breaker(config: CircuitBreakerConfig) -> (CircuitBreaker, ManualClock, Recorder<Ev>) {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::with_clock("inventory-query", config, clock.clone());
    let rec = Recorder::attach(cb.event_publisher());
    (cb, clock, rec)
}

pub fn count(size: u32, min: u32) -> resil_core::circuit_breaker::CircuitBreakerConfigBuilder {
    CircuitBreakerConfig::builder()
        .sliding_window_size(size)
        .minimum_number_of_calls(min)
}

pub fn ok(cb: &CircuitBreaker) -> Result<u32, Error<&'static str>> {
    cb.call(|| Ok(1))
}

pub fn fail(cb: &CircuitBreaker) -> Result<u32, Error<&'static str>> {
    cb.call(|| Err("boom"))
}

pub fn transition(from: State, to: State) -> Ev {
    Ev::StateTransition { from, to }
}

pub fn half_open(config: CircuitBreakerConfig) -> (CircuitBreaker, ManualClock, Recorder<Ev>) {
    let (cb, clock, rec) = breaker(config);
    cb.transition_to_open_state().unwrap();
    clock.advance(61 * SEC);
    assert!(cb.try_acquire_permission());
    cb.release_permission();
    assert_eq!(cb.state(), State::HalfOpen);
    rec.take();
    (cb, clock, rec)
}
