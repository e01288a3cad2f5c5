//! [`TimeLimiterConfig`] and its builder.

use std::time::Duration;

use crate::error::{ConfigError, Problems};

/// The configuration of a time limiter: Resilience4j's settings and defaults.
///
/// | setting | default |
/// | --- | --- |
/// | `timeout_duration` | 1 s (0: time out unless the future is done at its first poll) |
/// | `cancel_running_future` | true (drop the future on timeout) |
/// | `max_detached_futures` | 1000 (timed-out futures left running at once; must be at least 1) |
/// | `event_consumer_buffer_size` | 100 (the recent-events buffer a registry attaches) |
/// | `shadow` | `false` (decide, never refuse: would-be refusals become events) |
///
/// `cancel_running_future = false` is honoured by the detached calls
/// ([`TimeLimiter::call_async_detached`](super::TimeLimiter::call_async_detached)),
/// which need a `Send + 'static` future to leave running; the borrowing
/// calls always cancel, since a future that borrows from its caller cannot
/// outlive the call.
///
/// Futures left running are bounded by `max_detached_futures`: a dependency
/// that hangs would otherwise pile up one background task per call, without
/// limit. While that many are still running, a call that times out is
/// cancelled instead (its future is dropped) and the caller gets the timeout
/// as usual. [`TimeLimiter::detached_futures`](super::TimeLimiter::detached_futures)
/// reads how many are running now.
///
/// # Examples
///
/// ```
/// use resil_core::time_limiter::TimeLimiterConfig;
/// use std::time::Duration;
///
/// let config = TimeLimiterConfig::builder()
///     .timeout_duration(Duration::from_millis(800))
///     .cancel_running_future(false)
///     .build()?;
/// assert_eq!(config.timeout_duration(), Duration::from_millis(800));
/// assert!(!config.cancel_running_future());
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeLimiterConfig {
    pub(crate) timeout_duration: Duration,
    pub(crate) cancel_running_future: bool,
    pub(crate) max_detached_futures: u32,
    pub(crate) event_consumer_buffer_size: u32,
    pub(crate) shadow: bool,
}

/// The default `max_detached_futures`.
pub const DEFAULT_MAX_DETACHED_FUTURES: u32 = 1000;

impl Default for TimeLimiterConfig {
    fn default() -> Self {
        TimeLimiterConfig {
            timeout_duration: Duration::from_secs(1),
            cancel_running_future: true,
            max_detached_futures: DEFAULT_MAX_DETACHED_FUTURES,
            event_consumer_buffer_size: 100,
            shadow: false,
        }
    }
}

impl TimeLimiterConfig {
    /// A builder with Resilience4j's defaults.
    pub fn builder() -> TimeLimiterConfigBuilder {
        TimeLimiterConfigBuilder {
            config: TimeLimiterConfig::default(),
        }
    }

    /// A builder that starts from this configuration (Resilience4j's `TimeLimiterConfig.from`).
    pub fn to_builder(&self) -> TimeLimiterConfigBuilder {
        TimeLimiterConfigBuilder { config: *self }
    }

    crate::config_kit::getters! {
        /// How long a call may take.
        timeout_duration: Duration;
        /// Whether a timed-out future is dropped (`true`) or, in the detached
        /// calls, left running in the background (`false`).
        cancel_running_future: bool;
        /// The most timed-out futures the detached calls leave running at once;
        /// past it a timed-out future is dropped.
        max_detached_futures: u32;
        @buffer;
        @shadow;
    }
}

/// Builds a [`TimeLimiterConfig`].
#[derive(Debug, Clone, Copy)]
pub struct TimeLimiterConfigBuilder {
    config: TimeLimiterConfig,
}

impl TimeLimiterConfigBuilder {
    crate::config_kit::setters! {
        /// How long a call may take; 0 times out every future that is not done
        /// at its first poll.
        timeout_duration: Duration;
        /// Whether a timed-out future is dropped, or left running by the detached calls.
        cancel_running_future: bool;
        /// The most timed-out futures the detached calls leave running at once
        /// (at least 1); past it a timed-out future is dropped, as with
        /// `cancel_running_future = true`.
        max_detached_futures: u32;
        @buffer;
        @shadow;
    }

    /// Builds the configuration.
    ///
    /// Every `Duration` is a valid timeout (Resilience4j accepts 0 and
    /// negative ones, which Rust's `Duration` cannot express).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] when `max_detached_futures` is 0.
    pub fn build(self) -> Result<TimeLimiterConfig, ConfigError> {
        let c = self.config;
        let mut p = Problems::default();
        p.check(
            c.max_detached_futures >= 1,
            "max_detached_futures",
            c.max_detached_futures,
            "must be at least 1",
        );
        crate::event::check_buffer_size(&mut p, c.event_consumer_buffer_size);
        p.finish(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_resilience4j_defaults() {
        let c = TimeLimiterConfig::default();
        assert_eq!(c.timeout_duration(), Duration::from_secs(1));
        assert!(c.cancel_running_future());
        assert_eq!(c.event_consumer_buffer_size(), 100);
        assert_eq!(c.max_detached_futures(), 1000);
        assert_eq!(TimeLimiterConfig::builder().build().unwrap(), c);
    }

    #[test]
    fn max_detached_futures_must_be_at_least_one() {
        let err = TimeLimiterConfig::builder()
            .max_detached_futures(0)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "max_detached_futures = 0: must be at least 1"
        );
        let ok = TimeLimiterConfig::builder()
            .max_detached_futures(1)
            .build()
            .unwrap();
        assert_eq!(ok.max_detached_futures(), 1);
    }

    #[test]
    fn to_builder_starts_from_the_config() {
        let c = TimeLimiterConfig::builder()
            .timeout_duration(Duration::ZERO)
            .build()
            .unwrap();
        let d = c
            .to_builder()
            .cancel_running_future(false)
            .event_consumer_buffer_size(3)
            .build()
            .unwrap();
        assert_eq!(d.timeout_duration(), Duration::ZERO);
        assert!(!d.cancel_running_future());
        assert_eq!(d.event_consumer_buffer_size(), 3);
    }
}
