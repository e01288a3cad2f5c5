//! The metrics snapshot of a bulkhead.

/// A snapshot of a bulkhead's permits (Resilience4j's `Bulkhead.Metrics`),
/// taken by [`Bulkhead::metrics`](super::Bulkhead::metrics).
///
/// The two Resilience4j gauges are `resilience4j.bulkhead.available.concurrent.calls`
/// and `resilience4j.bulkhead.max.allowed.concurrent.calls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkheadMetrics {
    pub(crate) available: u32,
    pub(crate) max_allowed: u32,
    pub(crate) waiting: u32,
}

impl BulkheadMetrics {
    /// Permits free now. Zero while the calls in flight exceed a limit that
    /// was just lowered (the excess permits are retired as those calls finish).
    pub fn available_concurrent_calls(&self) -> u32 {
        self.available
    }

    /// The current limit, `max_concurrent_calls`.
    pub fn max_allowed_concurrent_calls(&self) -> u32 {
        self.max_allowed
    }

    /// Callers waiting for a permit (a resil addition; Resilience4j's semaphore
    /// bulkhead does not expose it).
    pub fn number_of_waiting_calls(&self) -> u32 {
        self.waiting
    }
}
