//! The events of a bulkhead (Resilience4j's `BulkheadEvent` types).

use crate::event::EventKind;

/// What happened to a bulkhead.
///
/// Every permitted call publishes `CallPermitted` when it gets its permit and
/// `CallFinished` when the permit is dropped (the call returned, failed,
/// panicked or was cancelled); a refused call publishes `CallRejected`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BulkheadEvent {
    /// A call got a permit.
    CallPermitted,
    /// A call was refused: the bulkhead was full (after waiting up to
    /// `max_wait_duration`).
    CallRejected,
    /// A permitted call finished and gave its permit back.
    CallFinished,
}

/// The kinds of [`BulkheadEvent`], to subscribe to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BulkheadEventType {
    /// [`BulkheadEvent::CallPermitted`]
    CallPermitted,
    /// [`BulkheadEvent::CallRejected`]
    CallRejected,
    /// [`BulkheadEvent::CallFinished`]
    CallFinished,
}

impl BulkheadEventType {
    /// Resilience4j's name (`CALL_PERMITTED`, `CALL_REJECTED`, `CALL_FINISHED`).
    pub fn as_str(self) -> &'static str {
        match self {
            BulkheadEventType::CallPermitted => "CALL_PERMITTED",
            BulkheadEventType::CallRejected => "CALL_REJECTED",
            BulkheadEventType::CallFinished => "CALL_FINISHED",
        }
    }
}

impl EventKind for BulkheadEvent {
    type Type = BulkheadEventType;

    fn event_type(&self) -> BulkheadEventType {
        match self {
            BulkheadEvent::CallPermitted => BulkheadEventType::CallPermitted,
            BulkheadEvent::CallRejected => BulkheadEventType::CallRejected,
            BulkheadEvent::CallFinished => BulkheadEventType::CallFinished,
        }
    }
}
