//! The events of a retry (Resilience4j's `RetryEvent` types).

use std::time::Duration;

use crate::event::EventKind;

/// What happened to a retried call.
///
/// A call that fails twice and then succeeds publishes `Retry` (attempt 1),
/// `Retry` (attempt 2), `Success` (2). A call that succeeds at once publishes
/// nothing. Every call that ends publishes at most one of `Error`, `Success`
/// and `IgnoredError`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RetryEvent {
    /// An attempt failed (or its result was rejected) and the retry will try
    /// again after `wait_interval`.
    Retry {
        /// The failed attempts so far: 1 before the first retry.
        number_of_retry_attempts: u32,
        /// How long the retry waits before the next attempt.
        wait_interval: Duration,
        /// The error's kind name when known (`None` for a rejected result).
        error_kind: Option<&'static str>,
    },
    /// The call failed for good: the last allowed attempt failed, or its
    /// result was still rejected after `max_attempts`.
    Error {
        /// The attempts made.
        number_of_retry_attempts: u32,
        /// The error's kind name when known; `"MaxRetriesExceeded"` when
        /// results exhausted the attempts, `"panic"` when an attempt panicked.
        error_kind: Option<&'static str>,
    },
    /// The call succeeded after at least one retry.
    Success {
        /// The failed attempts before the success.
        number_of_retry_attempts: u32,
        /// The kind of the last error that was retried, when known.
        error_kind: Option<&'static str>,
    },
    /// An attempt failed with an error that is not retried; the call failed
    /// without a further attempt.
    IgnoredError {
        /// The error's kind name when known.
        error_kind: Option<&'static str>,
    },
    /// The retry's budget denied the retry the failed attempt asked for:
    /// the call ended with that attempt's outcome.
    BudgetExhausted {
        /// The failed attempts so far.
        number_of_retry_attempts: u32,
        /// The error's kind name when known (`None` for a rejected result).
        error_kind: Option<&'static str>,
    },
    /// In shadow mode: an error the retry would have retried, returned after the first attempt.
    ShadowRefusal {
        /// Attempts made before this one's failure.
        number_of_retry_attempts: u32,
        /// The error's kind.
        error_kind: Option<&'static str>,
    },
}

impl RetryEvent {
    /// The event's attempt count, as Resilience4j's `getNumberOfRetryAttempts`
    /// (always 0 for `IgnoredError`).
    pub fn number_of_retry_attempts(&self) -> u32 {
        match *self {
            RetryEvent::Retry {
                number_of_retry_attempts,
                ..
            }
            | RetryEvent::Error {
                number_of_retry_attempts,
                ..
            }
            | RetryEvent::Success {
                number_of_retry_attempts,
                ..
            }
            | RetryEvent::ShadowRefusal {
                number_of_retry_attempts,
                ..
            }
            | RetryEvent::BudgetExhausted {
                number_of_retry_attempts,
                ..
            } => number_of_retry_attempts,
            RetryEvent::IgnoredError { .. } => 0,
        }
    }

    /// The kind name of the error the event refers to, when known.
    pub fn error_kind(&self) -> Option<&'static str> {
        match *self {
            RetryEvent::Retry { error_kind, .. }
            | RetryEvent::Error { error_kind, .. }
            | RetryEvent::Success { error_kind, .. }
            | RetryEvent::ShadowRefusal { error_kind, .. }
            | RetryEvent::BudgetExhausted { error_kind, .. }
            | RetryEvent::IgnoredError { error_kind } => error_kind,
        }
    }
}

/// The kinds of [`RetryEvent`], to subscribe to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetryEventType {
    /// [`RetryEvent::Retry`]
    Retry,
    /// [`RetryEvent::Error`]
    Error,
    /// [`RetryEvent::Success`]
    Success,
    /// [`RetryEvent::IgnoredError`]
    IgnoredError,
    /// [`RetryEvent::ShadowRefusal`]
    ShadowRefusal,
    /// [`RetryEvent::BudgetExhausted`]
    BudgetExhausted,
}

impl RetryEventType {
    /// Resilience4j's name (`RETRY`, `ERROR`, `SUCCESS`, `IGNORED_ERROR`).
    pub fn as_str(self) -> &'static str {
        match self {
            RetryEventType::Retry => "RETRY",
            RetryEventType::Error => "ERROR",
            RetryEventType::Success => "SUCCESS",
            RetryEventType::IgnoredError => "IGNORED_ERROR",
            RetryEventType::ShadowRefusal => "SHADOW_REFUSAL",
            RetryEventType::BudgetExhausted => "BUDGET_EXHAUSTED",
        }
    }
}

impl EventKind for RetryEvent {
    type Type = RetryEventType;

    fn event_type(&self) -> RetryEventType {
        match self {
            RetryEvent::Retry { .. } => RetryEventType::Retry,
            RetryEvent::Error { .. } => RetryEventType::Error,
            RetryEvent::Success { .. } => RetryEventType::Success,
            RetryEvent::IgnoredError { .. } => RetryEventType::IgnoredError,
            RetryEvent::ShadowRefusal { .. } => RetryEventType::ShadowRefusal,
            RetryEvent::BudgetExhausted { .. } => RetryEventType::BudgetExhausted,
        }
    }
}
