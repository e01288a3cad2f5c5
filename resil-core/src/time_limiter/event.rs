//! The events of a time limiter (Resilience4j's `TimeLimiterEvent` types).

use crate::event::EventKind;

/// What happened to a time-limited call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeLimiterEvent {
    /// The call finished in time with `Ok` (also for `Ok(())`, for which
    /// Resilience4j 2.2's `CompletionStage` path publishes nothing).
    Success,
    /// The call finished in time with `Err`.
    Error {
        /// The rejection's kind name when an inner layer of a chain rejected
        /// the call (`"BulkheadFull"`, ...); `None` for the caller's own error.
        error_kind: Option<&'static str>,
    },
    /// The call did not finish in time and was dropped (or detached).
    Timeout,
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

impl EventKind for TimeLimiterEvent {
    type Type = TimeLimiterEventType;

    fn event_type(&self) -> TimeLimiterEventType {
        match self {
            TimeLimiterEvent::Success => TimeLimiterEventType::Success,
            TimeLimiterEvent::Error { .. } => TimeLimiterEventType::Error,
            TimeLimiterEvent::Timeout => TimeLimiterEventType::Timeout,
            TimeLimiterEvent::ShadowRefusal => TimeLimiterEventType::ShadowRefusal,
        }
    }
}
