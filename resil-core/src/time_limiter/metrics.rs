//! The metrics snapshot of a time limiter.

/// Call counts of a time limiter since its creation, taken by
/// [`TimeLimiter::metrics`](super::TimeLimiter::metrics): the
/// `resilience4j.timelimiter.calls` counters (`kind` = `successful`,
/// `failed`, `timeout`), one per published event, and the gauge of
/// timed-out futures still running in the background.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeLimiterMetrics {
    pub(crate) successful: u64,
    pub(crate) failed: u64,
    pub(crate) timeout: u64,
    pub(crate) detached: usize,
}

impl TimeLimiterMetrics {
    /// Calls that finished in time with `Ok`.
    pub fn number_of_successful_calls(&self) -> u64 {
        self.successful
    }
    /// Calls that finished in time with `Err`.
    pub fn number_of_failed_calls(&self) -> u64 {
        self.failed
    }
    /// Calls that timed out.
    pub fn number_of_timeout_calls(&self) -> u64 {
        self.timeout
    }
    /// Timed-out futures the detached calls left running that have not
    /// finished yet (at most `max_detached_futures`).
    pub fn number_of_detached_futures(&self) -> usize {
        self.detached
    }
}
