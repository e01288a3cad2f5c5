//! The events of a bulkhead (Resilience4j's `BulkheadEvent` types).

use crate::event::EventKind;

/// What happened to a bulkhead.
///
/// Every permitted call publishes `CallPermitted` when it gets its permit and
/// `CallFinished` when the permit is dropped (the call returned, failed,
/// panicked or was cancelled); a refused call publishes `CallRejected`.
/// Every change of the limit (an adaptive algorithm's, or a new
/// configuration's) publishes `LimitChanged`.
///
/// # Examples
///
/// ```
/// use resil_core::bulkhead::{Bulkhead, BulkheadConfig, BulkheadEventType};
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::sync::Arc;
///
/// let config = BulkheadConfig::builder().max_concurrent_calls(0).build()?;
/// let bulkhead = Bulkhead::new("inventory-query", config);
/// let rejected = Arc::new(AtomicU32::new(0));
/// let count = rejected.clone();
/// bulkhead.event_publisher().on(BulkheadEventType::CallRejected, move |e| {
///     assert_eq!(e.name(), "inventory-query");
///     count.fetch_add(1, Ordering::Relaxed);
/// });
/// let _ = bulkhead.call(|| Ok::<_, std::io::Error>(()));
/// assert_eq!(rejected.load(Ordering::Relaxed), 1);
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
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
    /// In shadow mode: a call the bulkhead would have refused, let through.
    ShadowRefusal,
    /// The limit changed (a resil addition, `LIMIT_CHANGED`).
    LimitChanged {
        /// The limit before.
        from: u32,
        /// The limit now.
        to: u32,
    },
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
    /// [`BulkheadEvent::ShadowRefusal`]
    ShadowRefusal,
    /// [`BulkheadEvent::LimitChanged`]
    LimitChanged,
}

impl BulkheadEventType {
    /// Resilience4j's name (`CALL_PERMITTED`, `CALL_REJECTED`, `CALL_FINISHED`;
    /// resil's `SHADOW_REFUSAL` and `LIMIT_CHANGED`).
    pub fn as_str(self) -> &'static str {
        match self {
            BulkheadEventType::CallPermitted => "CALL_PERMITTED",
            BulkheadEventType::CallRejected => "CALL_REJECTED",
            BulkheadEventType::CallFinished => "CALL_FINISHED",
            BulkheadEventType::ShadowRefusal => "SHADOW_REFUSAL",
            BulkheadEventType::LimitChanged => "LIMIT_CHANGED",
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
            BulkheadEvent::ShadowRefusal => BulkheadEventType::ShadowRefusal,
            BulkheadEvent::LimitChanged { .. } => BulkheadEventType::LimitChanged,
        }
    }
}
