//! The metrics snapshot of a retry.

/// A snapshot of a retry's counters (Resilience4j's `Retry.Metrics`), taken by
/// [`Retry::metrics`](super::Retry::metrics).
///
/// Every call that ends is counted in exactly one of the four call counters;
/// a call whose future is dropped before it ends is counted in none of them.
/// [`RetryMetrics::number_of_total_calls`] counts attempts, exactly
/// (Resilience4j adds one when results exhaust the attempts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetryMetrics {
    pub(crate) successful_without_retry: u64,
    pub(crate) successful_with_retry: u64,
    pub(crate) failed_without_retry: u64,
    pub(crate) failed_with_retry: u64,
    pub(crate) total_attempts: u64,
}

impl RetryMetrics {
    /// The Micrometer meter the four call counters are exported as.
    pub const CALLS_METER: &'static str = "resilience4j.retry.calls";

    /// Calls that succeeded at the first attempt.
    pub fn number_of_successful_calls_without_retry_attempt(&self) -> u64 {
        self.successful_without_retry
    }
    /// Calls that succeeded after at least one retry.
    pub fn number_of_successful_calls_with_retry_attempt(&self) -> u64 {
        self.successful_with_retry
    }
    /// Calls that failed with an error that is not retried (at any attempt),
    /// or that panicked at the first attempt.
    pub fn number_of_failed_calls_without_retry_attempt(&self) -> u64 {
        self.failed_without_retry
    }
    /// Calls that failed after using their attempts (or that panicked after a retry).
    ///
    /// As in Resilience4j, a retryable error with `max_attempts = 1` counts
    /// here, though no retry happened.
    pub fn number_of_failed_calls_with_retry_attempt(&self) -> u64 {
        self.failed_with_retry
    }
    /// Attempts made by calls that ended and by calls still retrying (or
    /// dropped) whose attempts have ended; Resilience4j's `getNumberOfTotalCalls`.
    pub fn number_of_total_calls(&self) -> u64 {
        self.total_attempts
    }

    /// The four call counters with their `kind` tag of [`RetryMetrics::CALLS_METER`]:
    /// `successful_without_retry`, `successful_with_retry`,
    /// `failed_without_retry`, `failed_with_retry`.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::retry::Retry;
    ///
    /// let retry = Retry::of_defaults("inventory-query");
    /// retry.call(|| Ok::<_, std::io::Error>(1)).unwrap();
    /// let calls = retry.metrics().calls_by_kind();
    /// assert_eq!(calls[0], ("successful_without_retry", 1));
    /// ```
    pub fn calls_by_kind(&self) -> [(&'static str, u64); 4] {
        [
            ("successful_without_retry", self.successful_without_retry),
            ("successful_with_retry", self.successful_with_retry),
            ("failed_without_retry", self.failed_without_retry),
            ("failed_with_retry", self.failed_with_retry),
        ]
    }
}
