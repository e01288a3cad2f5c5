//! The events of a thread-pool bulkhead (Resilience4j's `BulkheadEvent` types).

use crate::event::EventKind;

/// What happened to a thread-pool bulkhead.
///
/// An admitted task publishes `CallPermitted` on its worker thread when it
/// starts (not when it is submitted: a queued task is permitted only once a
/// thread takes it), then `CallFinished` on the same thread when it returns or
/// panics, before its result reaches the caller. A refused submission
/// publishes `CallRejected` on the submitting thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ThreadPoolBulkheadEvent {
    /// A task started on a worker thread.
    CallPermitted,
    /// A submission was refused: threads and queue were taken, or the pool is shut down.
    CallRejected,
    /// A task finished (returned or panicked).
    CallFinished,
    /// In shadow mode: a task the full pool would have refused, queued beyond the capacity.
    ShadowRefusal,
}

/// The kinds of [`ThreadPoolBulkheadEvent`], to subscribe to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ThreadPoolBulkheadEventType {
    /// [`ThreadPoolBulkheadEvent::CallPermitted`]
    CallPermitted,
    /// [`ThreadPoolBulkheadEvent::CallRejected`]
    CallRejected,
    /// [`ThreadPoolBulkheadEvent::CallFinished`]
    CallFinished,
    /// [`ThreadPoolBulkheadEvent::ShadowRefusal`]
    ShadowRefusal,
}

impl ThreadPoolBulkheadEventType {
    /// Resilience4j's name: `CALL_PERMITTED`, `CALL_REJECTED` or `CALL_FINISHED`.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::thread_pool_bulkhead::ThreadPoolBulkheadEventType;
    ///
    /// assert_eq!(ThreadPoolBulkheadEventType::CallPermitted.as_str(), "CALL_PERMITTED");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadPoolBulkheadEventType::CallPermitted => "CALL_PERMITTED",
            ThreadPoolBulkheadEventType::CallRejected => "CALL_REJECTED",
            ThreadPoolBulkheadEventType::CallFinished => "CALL_FINISHED",
            ThreadPoolBulkheadEventType::ShadowRefusal => "SHADOW_REFUSAL",
        }
    }
}

impl EventKind for ThreadPoolBulkheadEvent {
    type Type = ThreadPoolBulkheadEventType;

    fn event_type(&self) -> ThreadPoolBulkheadEventType {
        match self {
            ThreadPoolBulkheadEvent::CallPermitted => ThreadPoolBulkheadEventType::CallPermitted,
            ThreadPoolBulkheadEvent::CallRejected => ThreadPoolBulkheadEventType::CallRejected,
            ThreadPoolBulkheadEvent::CallFinished => ThreadPoolBulkheadEventType::CallFinished,
            ThreadPoolBulkheadEvent::ShadowRefusal => ThreadPoolBulkheadEventType::ShadowRefusal,
        }
    }
}
