//! The metrics snapshot of a circuit breaker.

use super::State;

/// A snapshot of a breaker's current metrics object (Resilience4j's
/// `CircuitBreaker.Metrics`), taken by [`CircuitBreaker::metrics`](super::CircuitBreaker::metrics).
///
/// Rates are `-1.0` until the window holds `minimum_number_of_calls` calls
/// (clamped to the window size for count windows, and to the probe budget in
/// HALF_OPEN). OPEN keeps the metrics of the state it came from, so its counts
/// and its not-permitted counter continue from there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CircuitBreakerMetrics {
    pub(crate) state: State,
    pub(crate) failure_rate: f32,
    pub(crate) slow_call_rate: f32,
    pub(crate) buffered: u64,
    pub(crate) failed: u64,
    pub(crate) slow: u64,
    pub(crate) slow_failed: u64,
    pub(crate) not_permitted: u64,
}

impl CircuitBreakerMetrics {
    /// The state when the snapshot was taken.
    pub fn state(&self) -> State {
        self.state
    }
    /// Failed calls in percent of buffered calls, or `-1.0` below the minimum.
    pub fn failure_rate(&self) -> f32 {
        self.failure_rate
    }
    /// Slow calls in percent of buffered calls, or `-1.0` below the minimum.
    pub fn slow_call_rate(&self) -> f32 {
        self.slow_call_rate
    }
    /// Calls in the window.
    pub fn number_of_buffered_calls(&self) -> u64 {
        self.buffered
    }
    /// Calls in the window that did not fail (slow or not).
    pub fn number_of_successful_calls(&self) -> u64 {
        self.buffered - self.failed
    }
    /// Calls in the window that failed (slow or not).
    pub fn number_of_failed_calls(&self) -> u64 {
        self.failed
    }
    /// Calls in the window slower than the slow-call threshold.
    pub fn number_of_slow_calls(&self) -> u64 {
        self.slow
    }
    /// Slow calls that succeeded.
    pub fn number_of_slow_successful_calls(&self) -> u64 {
        self.slow - self.slow_failed
    }
    /// Slow calls that failed.
    pub fn number_of_slow_failed_calls(&self) -> u64 {
        self.slow_failed
    }
    /// Calls refused by this metrics object's states.
    pub fn number_of_not_permitted_calls(&self) -> u64 {
        self.not_permitted
    }
}
