//! The events of a time limiter (Resilience4j's `TimeLimiterEvent` types).

use std::time::Duration;

use crate::event::EventKind;

/// What happened to a time-limited call.
///
/// `elapsed` is the time the limiter measured: from the call's first poll
/// that was not ready (when its timeout starts) to its end; zero for a call
/// done at its first poll, which never reads the clock. Resilience4j's
/// events carry no duration; resil's recording (and `resil replay`, which
/// holds it against a candidate's timeout) needs one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeLimiterEvent {
    /// The call finished in time with `Ok` (also for `Ok(())`, for which
    /// Resilience4j 2.2's `CompletionStage` path publishes nothing).
    Success {
        /// How long the call took.
        elapsed: Duration,
    },
    /// The call finished in time with `Err`, or the request's deadline,
    /// nearer than the timeout, passed first (`error_kind`
    /// `"DeadlineExceeded"`, `elapsed` the time that was left).
    Error {
        /// The rejection's kind name when an inner layer of a chain rejected
        /// the call (`"BulkheadFull"`, ...); `None` for the caller's own error.
        error_kind: Option<&'static str>,
        /// How long the call took.
        elapsed: Duration,
    },
    /// The call did not finish in time and was dropped (or detached).
    Timeout {
        /// The timeout that passed: the call took at least this long.
        elapsed: Duration,
    },
    /// In shadow mode: the timeout passed; the call is left to finish.
    ShadowRefusal,
}

/// The kinds of [`TimeLimiterEvent`], to subscribe to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimeLimiterEventType {
    /// [`TimeLimiterEvent::Success`]
    Success,
    /// [`TimeLimiterEvent::Error`]
    Error,
    /// [`TimeLimiterEvent::Timeout`]
    Timeout,
    /// [`TimeLimiterEvent::ShadowRefusal`]
    ShadowRefusal,
}

impl TimeLimiterEventType {
    /// Resilience4j's name: `SUCCESS`, `ERROR`, `TIMEOUT`.
    pub fn as_str(self) -> &'static str {
        match self {
            TimeLimiterEventType::Success => "SUCCESS",
            TimeLimiterEventType::Error => "ERROR",
            TimeLimiterEventType::Timeout => "TIMEOUT",
            TimeLimiterEventType::ShadowRefusal => "SHADOW_REFUSAL",
        }
    }
}

impl TimeLimiterEvent {
    /// How long the call took (see the type's notes); `None` for a shadow
    /// refusal, which ends no call.
    pub fn elapsed(&self) -> Option<Duration> {
        match self {
            TimeLimiterEvent::Success { elapsed }
            | TimeLimiterEvent::Error { elapsed, .. }
            | TimeLimiterEvent::Timeout { elapsed } => Some(*elapsed),
            TimeLimiterEvent::ShadowRefusal => None,
        }
    }
}

impl EventKind for TimeLimiterEvent {
    type Type = TimeLimiterEventType;

    fn event_type(&self) -> TimeLimiterEventType {
        match self {
            TimeLimiterEvent::Success { .. } => TimeLimiterEventType::Success,
            TimeLimiterEvent::Error { .. } => TimeLimiterEventType::Error,
            TimeLimiterEvent::Timeout { .. } => TimeLimiterEventType::Timeout,
            TimeLimiterEvent::ShadowRefusal => TimeLimiterEventType::ShadowRefusal,
        }
    }
}
