//! The events of a circuit breaker (Resilience4j's `CircuitBreakerEvent` types).

use std::time::Duration;

use super::State;
use crate::event::EventKind;

/// What happened to a circuit breaker.
///
/// Published in this order for a call that trips the breaker: `Error`,
/// `FailureRateExceeded`, `StateTransition`. In DISABLED and FORCED_OPEN only
/// `StateTransition` and `Reset` are published (refusals in FORCED_OPEN are
/// counted in the metrics but not published, as in Resilience4j).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CircuitBreakerEvent {
    /// A call succeeded (or failed with an error that is not recorded).
    Success {
        /// How long the call took.
        elapsed: Duration,
    },
    /// A call failed and the failure was recorded.
    Error {
        /// How long the call took.
        elapsed: Duration,
        /// The error's kind name when known (a `Classify` kind, a rejection, or `"panic"`).
        error_kind: Option<&'static str>,
    },
    /// A call failed with an ignored error: neither success nor failure.
    IgnoredError {
        /// How long the call took.
        elapsed: Duration,
        /// The error's kind name when known.
        error_kind: Option<&'static str>,
    },
    /// A call was refused.
    CallNotPermitted,
    /// The state changed.
    StateTransition {
        /// The state before.
        from: State,
        /// The state after.
        to: State,
    },
    /// The breaker was reset to a fresh CLOSED state.
    Reset,
    /// The failure rate crossed the threshold (in CLOSED, or once per METRICS_ONLY period).
    FailureRateExceeded {
        /// The failure rate, in percent.
        failure_rate: f32,
    },
    /// The slow-call rate crossed the threshold.
    SlowCallRateExceeded {
        /// The slow-call rate, in percent.
        slow_call_rate: f32,
    },
    /// The backend key that holds the fleet's half-open episode went down
    /// (its scripts fail or are late) or came back (see [`crate::cluster`]).
    ClusterBackendChanged {
        /// Whether the backend is up now.
        up: bool,
    },
}

/// The kinds of [`CircuitBreakerEvent`], to subscribe to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CircuitBreakerEventType {
    /// [`CircuitBreakerEvent::Success`]
    Success,
    /// [`CircuitBreakerEvent::Error`]
    Error,
    /// [`CircuitBreakerEvent::IgnoredError`]
    IgnoredError,
    /// [`CircuitBreakerEvent::CallNotPermitted`]
    CallNotPermitted,
    /// [`CircuitBreakerEvent::StateTransition`]
    StateTransition,
    /// [`CircuitBreakerEvent::Reset`]
    Reset,
    /// [`CircuitBreakerEvent::FailureRateExceeded`]
    FailureRateExceeded,
    /// [`CircuitBreakerEvent::SlowCallRateExceeded`]
    SlowCallRateExceeded,
    /// [`CircuitBreakerEvent::ClusterBackendChanged`]
    ClusterBackendChanged,
}

impl CircuitBreakerEventType {
    /// Resilience4j's name (`SUCCESS`, `ERROR`, `IGNORED_ERROR`, `NOT_PERMITTED`,
    /// `STATE_TRANSITION`, `RESET`, `FAILURE_RATE_EXCEEDED`, `SLOW_CALL_RATE_EXCEEDED`;
    /// and resil's `CLUSTER_BACKEND_CHANGED`).
    pub fn as_str(self) -> &'static str {
        match self {
            CircuitBreakerEventType::Success => "SUCCESS",
            CircuitBreakerEventType::Error => "ERROR",
            CircuitBreakerEventType::IgnoredError => "IGNORED_ERROR",
            CircuitBreakerEventType::CallNotPermitted => "NOT_PERMITTED",
            CircuitBreakerEventType::StateTransition => "STATE_TRANSITION",
            CircuitBreakerEventType::Reset => "RESET",
            CircuitBreakerEventType::FailureRateExceeded => "FAILURE_RATE_EXCEEDED",
            CircuitBreakerEventType::SlowCallRateExceeded => "SLOW_CALL_RATE_EXCEEDED",
            CircuitBreakerEventType::ClusterBackendChanged => "CLUSTER_BACKEND_CHANGED",
        }
    }
}

impl EventKind for CircuitBreakerEvent {
    type Type = CircuitBreakerEventType;

    fn event_type(&self) -> CircuitBreakerEventType {
        match self {
            CircuitBreakerEvent::Success { .. } => CircuitBreakerEventType::Success,
            CircuitBreakerEvent::Error { .. } => CircuitBreakerEventType::Error,
            CircuitBreakerEvent::IgnoredError { .. } => CircuitBreakerEventType::IgnoredError,
            CircuitBreakerEvent::CallNotPermitted => CircuitBreakerEventType::CallNotPermitted,
            CircuitBreakerEvent::StateTransition { .. } => CircuitBreakerEventType::StateTransition,
            CircuitBreakerEvent::Reset => CircuitBreakerEventType::Reset,
            CircuitBreakerEvent::FailureRateExceeded { .. } => {
                CircuitBreakerEventType::FailureRateExceeded
            }
            CircuitBreakerEvent::SlowCallRateExceeded { .. } => {
                CircuitBreakerEventType::SlowCallRateExceeded
            }
            CircuitBreakerEvent::ClusterBackendChanged { .. } => {
                CircuitBreakerEventType::ClusterBackendChanged
            }
        }
    }
}
