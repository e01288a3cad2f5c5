//! The metrics snapshot of a rate limiter.

use std::time::Duration;

/// A snapshot of a rate limiter (Resilience4j's `AtomicRateLimiterMetrics`),
/// taken by [`RateLimiter::metrics`](super::RateLimiter::metrics).
///
/// The counts are refreshed to the snapshot's cycle without changing the
/// limiter, as Resilience4j computes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimiterMetrics {
    pub(crate) available_permissions: i64,
    pub(crate) waiting_threads: u32,
    pub(crate) nanos_to_wait: u64,
    pub(crate) cycle: u64,
}

impl RateLimiterMetrics {
    /// Permits available in the current cycle; negative while callers hold
    /// reservations on the next cycles (the
    /// `resilience4j.ratelimiter.available.permissions` gauge).
    pub fn available_permissions(&self) -> i64 {
        self.available_permissions
    }

    /// Callers waiting for their reservation, or for their timeout before a
    /// refusal (the `resilience4j.ratelimiter.waiting_threads` gauge). Async
    /// waiters count too.
    pub fn number_of_waiting_threads(&self) -> u32 {
        self.waiting_threads
    }

    /// How long one permit would have to wait now (zero when one is available).
    pub fn nanos_to_wait(&self) -> Duration {
        Duration::from_nanos(self.nanos_to_wait)
    }

    /// The current cycle, counted from the limiter's creation.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }
}
