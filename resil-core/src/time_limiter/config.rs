//! [`TimeLimiterConfig`] and its builder.

use std::time::Duration;

use crate::error::{ConfigError, Problems};

/// The configuration of a time limiter: Resilience4j's settings and defaults.
///
/// | setting | default |
/// | --- | --- |
/// | `timeout_duration` | 1 s (0: time out unless the future is done at its first poll) |
/// | `cancel_running_future` | true (drop the future on timeout) |
/// | `event_consumer_buffer_size` | 100 (the recent-events buffer a registry attaches) |
///
/// `cancel_running_future = false` is honoured by the detached calls
/// ([`TimeLimiter::call_async_detached`](super::TimeLimiter::call_async_detached)),
/// which need a `Send + 'static` future to leave running; the borrowing
/// calls always cancel, since a future that borrows from its caller cannot
/// outlive the call.
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
    pub(crate) event_consumer_buffer_size: u32,
}

impl Default for TimeLimiterConfig {
    fn default() -> Self {
        TimeLimiterConfig {
            timeout_duration: Duration::from_secs(1),
            cancel_running_future: true,
            event_consumer_buffer_size: 100,
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

    /// How long a call may take.
    pub fn timeout_duration(&self) -> Duration {
        self.timeout_duration
    }
    /// Whether a timed-out future is dropped (`true`) or, in the detached
    /// calls, left running in the background (`false`).
    pub fn cancel_running_future(&self) -> bool {
        self.cancel_running_future
    }
    /// Size of the recent-events buffer that registries attach to each instance.
    pub fn event_consumer_buffer_size(&self) -> u32 {
        self.event_consumer_buffer_size
    }
}

/// Builds a [`TimeLimiterConfig`].
#[derive(Debug, Clone, Copy)]
pub struct TimeLimiterConfigBuilder {
    config: TimeLimiterConfig,
}

impl TimeLimiterConfigBuilder {
    /// How long a call may take; 0 times out every future that is not done
    /// at its first poll.
    pub fn timeout_duration(mut self, timeout: Duration) -> Self {
        self.config.timeout_duration = timeout;
        self
    }
    /// Whether a timed-out future is dropped, or left running by the detached calls.
    pub fn cancel_running_future(mut self, cancel: bool) -> Self {
        self.config.cancel_running_future = cancel;
        self
    }
    /// Size of the recent-events buffer a registry attaches (0: none).
    pub fn event_consumer_buffer_size(mut self, size: u32) -> Self {
        self.config.event_consumer_buffer_size = size;
        self
    }

    /// Builds the configuration.
    ///
    /// # Errors
    ///
    /// None today: every `Duration` is a valid timeout (Resilience4j accepts
    /// 0 and negative ones, which Rust's `Duration` cannot express). It
    /// returns a `Result` like every other builder, so that configuration
    /// layers treat the primitives alike.
    pub fn build(self) -> Result<TimeLimiterConfig, ConfigError> {
        Problems::default().finish(self.config)
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
        assert_eq!(TimeLimiterConfig::builder().build().unwrap(), c);
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
