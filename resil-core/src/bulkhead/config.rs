//! [`BulkheadConfig`] and its builder.

use std::time::Duration;

use super::limit::LimitSettings;
use super::semaphore;
use crate::error::{ConfigError, Problems};

/// The largest `max_concurrent_calls` (Java's `int` range, as in Resilience4j).
pub const MAX_CONCURRENT_CALLS: u32 = semaphore::MAX_PERMITS;

/// The configuration of a semaphore bulkhead: Resilience4j's settings and defaults.
///
/// | setting | default |
/// | --- | --- |
/// | `max_concurrent_calls` | 25 (0 is allowed and rejects every call) |
/// | `max_wait_duration` | 0 (fail fast: never wait for a permit) |
/// | `fair_call_handling_enabled` | true (waiters are served first come, first served) |
/// | `event_consumer_buffer_size` | 100 (the recent-events buffer a registry attaches) |
/// | `shadow` | `false` (decide, never refuse: would-be refusals become events) |
/// | `limit_algorithm` | `Fixed` (`max_concurrent_calls` as set; see [adaptive limits](super#adaptive-limits) for the others and their settings) |
///
/// As in Resilience4j, the wait is applied in whole milliseconds: a
/// `max_wait_duration` under 1 ms fails fast.
///
/// # Examples
///
/// ```
/// use resil_core::bulkhead::BulkheadConfig;
/// use std::time::Duration;
///
/// let config = BulkheadConfig::builder()
///     .max_concurrent_calls(20)
///     .max_wait_duration(Duration::from_millis(50))
///     .build()?;
/// assert_eq!(config.max_concurrent_calls(), 20);
/// assert!(config.fair_call_handling_enabled());
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BulkheadConfig {
    pub(crate) max_concurrent_calls: u32,
    pub(crate) max_wait_duration: Duration,
    pub(crate) fair_call_handling_enabled: bool,
    pub(crate) event_consumer_buffer_size: u32,
    pub(crate) shadow: bool,
    pub(crate) limit: LimitSettings,
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        BulkheadConfig {
            max_concurrent_calls: 25,
            max_wait_duration: Duration::ZERO,
            fair_call_handling_enabled: true,
            event_consumer_buffer_size: 100,
            shadow: false,
            limit: LimitSettings::default(),
        }
    }
}

impl BulkheadConfig {
    /// A builder with Resilience4j's defaults.
    pub fn builder() -> BulkheadConfigBuilder {
        BulkheadConfigBuilder {
            config: BulkheadConfig::default(),
        }
    }

    /// A builder that starts from this configuration (Resilience4j's `BulkheadConfig.from(base)`).
    pub fn to_builder(&self) -> BulkheadConfigBuilder {
        BulkheadConfigBuilder {
            config: self.clone(),
        }
    }

    crate::config_kit::getters! {
        /// Calls admitted at once; the ceiling of an adaptive limit.
        max_concurrent_calls: u32;
        /// How long a caller waits for a permit when the bulkhead is full; zero = fail fast.
        max_wait_duration: Duration;
        /// Whether waiting callers are served in arrival order and newcomers never
        /// overtake them.
        fair_call_handling_enabled: bool;
        @buffer;
        @shadow;
    }

    /// The wait as applied: whole milliseconds, like Resilience4j's
    /// `semaphore.tryAcquire(maxWaitDuration.toMillis(), MILLISECONDS)`.
    pub(crate) fn effective_wait_millis(&self) -> u64 {
        u64::try_from(self.max_wait_duration.as_millis()).unwrap_or(u64::MAX)
    }
}

/// Builds a [`BulkheadConfig`]; `build()` checks every value and reports all problems.
#[derive(Clone, Debug)]
pub struct BulkheadConfigBuilder {
    pub(super) config: BulkheadConfig,
}

impl BulkheadConfigBuilder {
    crate::config_kit::setters! {
        /// Calls admitted at once: `0..=2147483647` (0 rejects every call); the
        /// ceiling of an adaptive limit.
        max_concurrent_calls: u32;
        /// How long a caller waits for a permit when the bulkhead is full
        /// (applied in whole milliseconds; zero = fail fast).
        max_wait_duration: Duration;
        /// Serve waiting callers in arrival order (true), or let a caller that
        /// finds a free permit take it even while others wait (false).
        fair_call_handling_enabled: bool;
        @buffer;
        @shadow;
    }

    /// Checks every value (Resilience4j's builder rules) and builds the configuration.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] listing every value out of range.
    pub fn build(self) -> Result<BulkheadConfig, ConfigError> {
        let c = self.config;
        let mut p = Problems::default();
        p.check(
            c.max_concurrent_calls <= MAX_CONCURRENT_CALLS,
            "max_concurrent_calls",
            c.max_concurrent_calls,
            "must be at most 2147483647",
        );
        c.limit.check(c.max_concurrent_calls, &mut p);
        crate::event::check_buffer_size(&mut p, c.event_consumer_buffer_size);
        p.finish(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_resilience4j_defaults() {
        let c = BulkheadConfig::default();
        assert_eq!(c.max_concurrent_calls(), 25);
        assert_eq!(c.max_wait_duration(), Duration::ZERO);
        assert!(c.fair_call_handling_enabled());
        assert_eq!(c.event_consumer_buffer_size(), 100);
        assert_eq!(BulkheadConfig::builder().build().unwrap(), c);
    }

    #[test]
    fn zero_calls_is_allowed_and_too_many_is_named() {
        assert!(
            BulkheadConfig::builder()
                .max_concurrent_calls(0)
                .build()
                .is_ok()
        );
        let err = BulkheadConfig::builder()
            .max_concurrent_calls(u32::MAX)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "max_concurrent_calls = 4294967295: must be at most 2147483647"
        );
    }

    #[test]
    fn the_wait_is_applied_in_whole_milliseconds() {
        let c = BulkheadConfig::builder()
            .max_wait_duration(Duration::from_micros(1999))
            .build()
            .unwrap();
        assert_eq!(c.max_wait_duration(), Duration::from_micros(1999));
        assert_eq!(c.effective_wait_millis(), 1);
        let c = c
            .to_builder()
            .max_wait_duration(Duration::from_micros(999))
            .build()
            .unwrap();
        assert_eq!(c.effective_wait_millis(), 0);
        assert_eq!(
            BulkheadConfig::builder()
                .max_wait_duration(Duration::MAX)
                .build()
                .unwrap()
                .effective_wait_millis(),
            u64::MAX
        );
    }
}
