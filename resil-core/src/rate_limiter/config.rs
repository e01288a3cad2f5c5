//! [`RateLimiterConfig`] and its builder.

use std::fmt;
use std::time::Duration;

use crate::cluster::RateLimiterCluster;
use crate::error::{ConfigError, Dur, Problems};

/// The longest `limit_refresh_period` and `timeout_duration`: `i64::MAX`
/// nanoseconds (about 292 years), the range of Java's `Duration.toNanos()`
/// that Resilience4j rejects beyond ("too large").
pub const MAX_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);

/// The configuration of a rate limiter: Resilience4j's settings and defaults.
///
/// | setting | default |
/// | --- | --- |
/// | `limit_for_period` | 50 permits per cycle |
/// | `limit_refresh_period` | 500 ns (the cycle) |
/// | `timeout_duration` | 5 s (how long a caller may wait for a permit) |
/// | `event_consumer_buffer_size` | 100 (the recent-events buffer a registry attaches) |
/// | `shadow` | `false` (decide, never refuse: would-be refusals become events) |
///
/// Besides Resilience4j's rules (a limit of at least 1, a period of at least
/// 1 ns, durations that fit in `i64` nanoseconds), resil requires at most one
/// permit per nanosecond on average: `limit_for_period` may not exceed
/// `limit_refresh_period` in nanoseconds. That bound is what lets the whole
/// limiter state live in one 64-bit atomic word for the clock's whole range
/// (see the [module documentation](super)); the default (50 per 500 ns) is
/// ten times below it, and so is any limit a service would use (a billion
/// permits per second).
///
/// # Examples
///
/// ```
/// use resil_core::rate_limiter::RateLimiterConfig;
/// use std::time::Duration;
///
/// let config = RateLimiterConfig::builder()
///     .limit_for_period(10)
///     .limit_refresh_period(Duration::from_secs(1))
///     .timeout_duration(Duration::from_millis(100))
///     .build()?;
/// assert_eq!(config.limit_for_period(), 10);
///
/// let err = RateLimiterConfig::builder().limit_for_period(0).build().unwrap_err();
/// assert_eq!(err.to_string(), "limit_for_period = 0: must be at least 1");
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RateLimiterConfig {
    pub(crate) limit_for_period: u32,
    pub(crate) limit_refresh_period: Duration,
    pub(crate) timeout_duration: Duration,
    pub(crate) event_consumer_buffer_size: u32,
    pub(crate) shadow: bool,
    pub(crate) cluster: Option<RateLimiterCluster>,
}

impl Default for RateLimiterConfig {
    fn default() -> Self {
        RateLimiterConfig {
            limit_for_period: 50,
            limit_refresh_period: Duration::from_nanos(500),
            timeout_duration: Duration::from_secs(5),
            event_consumer_buffer_size: 100,
            shadow: false,
            cluster: None,
        }
    }
}

impl RateLimiterConfig {
    /// A builder with Resilience4j's defaults.
    pub fn builder() -> RateLimiterConfigBuilder {
        RateLimiterConfigBuilder {
            config: RateLimiterConfig::default(),
        }
    }

    /// A builder that starts from this configuration (Resilience4j's `RateLimiterConfig.from`).
    pub fn to_builder(&self) -> RateLimiterConfigBuilder {
        RateLimiterConfigBuilder {
            config: self.clone(),
        }
    }

    crate::config_kit::getters! {
        /// Permits available in each cycle.
        limit_for_period: u32;
        /// The length of a cycle; cycles are counted from the limiter's creation.
        limit_refresh_period: Duration;
        /// How long a caller may wait for a permit before it is refused.
        timeout_duration: Duration;
        @buffer;
        @shadow;
    }

    /// The fleet-wide settings, when the limit is shared with other processes.
    pub fn cluster(&self) -> Option<&RateLimiterCluster> {
        self.cluster.as_ref()
    }

    /// The period in nanoseconds; valid configurations keep it in `1..=i64::MAX`.
    pub(crate) fn period_nanos(&self) -> u64 {
        self.limit_refresh_period.as_nanos() as u64
    }
}

impl fmt::Debug for RateLimiterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiterConfig")
            .field("limit_for_period", &self.limit_for_period)
            .field("limit_refresh_period", &self.limit_refresh_period)
            .field("timeout_duration", &self.timeout_duration)
            .field(
                "event_consumer_buffer_size",
                &self.event_consumer_buffer_size,
            )
            .field("shadow", &self.shadow)
            .field("cluster", &self.cluster)
            .finish()
    }
}

/// Builds a [`RateLimiterConfig`]; `build()` checks every value and reports all problems.
#[derive(Clone, Debug)]
pub struct RateLimiterConfigBuilder {
    config: RateLimiterConfig,
}

impl RateLimiterConfigBuilder {
    crate::config_kit::setters! {
        /// Permits available in each cycle; at least 1, and at most
        /// `limit_refresh_period` in nanoseconds.
        limit_for_period: u32;
        /// The length of a cycle; at least 1 ns, at most [`MAX_DURATION`].
        limit_refresh_period: Duration;
        /// How long a caller may wait for a permit (0: never wait); at most [`MAX_DURATION`].
        timeout_duration: Duration;
        @buffer;
        @shadow;
        /// Shares the limit with every process using the same backend and key
        /// (see [`crate::cluster`]); `None` (the default) keeps it local.
        cluster: Option<RateLimiterCluster>;
    }

    /// Checks every value (Resilience4j's builder rules, plus the
    /// one-permit-per-nanosecond bound) and builds the configuration.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] listing every value out of range.
    pub fn build(self) -> Result<RateLimiterConfig, ConfigError> {
        let c = self.config;
        let mut p = Problems::default();
        check_limit(&mut p, c.limit_for_period, c.limit_refresh_period);
        p.check(
            !c.limit_refresh_period.is_zero(),
            "limit_refresh_period",
            Dur(c.limit_refresh_period),
            "must be at least 1ns",
        );
        p.check(
            c.limit_refresh_period <= MAX_DURATION,
            "limit_refresh_period",
            Dur(c.limit_refresh_period),
            "must be at most 9223372036854775807ns (i64::MAX nanoseconds)",
        );
        check_timeout(&mut p, c.timeout_duration);
        crate::event::check_buffer_size(&mut p, c.event_consumer_buffer_size);
        if let Some(cluster) = &c.cluster {
            check_cluster(&mut p, cluster, c.limit_for_period, c.limit_refresh_period);
        }
        p.finish(c)
    }
}

/// `limit_for_period`: at least 1 and at most one permit per nanosecond of the period.
pub(crate) fn check_limit(p: &mut Problems, limit: u32, period: Duration) {
    p.check(limit >= 1, "limit_for_period", limit, "must be at least 1");
    let period_ok = !period.is_zero() && period <= MAX_DURATION;
    if period_ok && u128::from(limit) > period.as_nanos() {
        p.push(
            "limit_for_period",
            limit,
            format!(
                "must not exceed limit_refresh_period in nanoseconds ({}): at most one permit per nanosecond",
                period.as_nanos()
            ),
        );
    }
}

/// The cluster settings: a lease of `1..=limit`, a cycle of at least a
/// millisecond (the backend's clock counts microseconds), a timeout of at
/// least a microsecond and at most a minute.
fn check_cluster(p: &mut Problems, c: &RateLimiterCluster, limit: u32, period: Duration) {
    p.check(c.lease >= 1, "cluster_lease", c.lease, "must be at least 1");
    if c.lease > limit {
        p.push(
            "cluster_lease",
            c.lease,
            format!(
                "must not exceed limit_for_period ({limit}): a lease is part of one cycle's permits"
            ),
        );
    }
    p.check(
        period >= Duration::from_millis(1),
        "limit_refresh_period",
        Dur(period),
        "must be at least 1ms for a cluster limiter (the backend's clock counts microseconds and a round trip takes some)",
    );
    p.check(
        c.timeout >= Duration::from_micros(1) && c.timeout <= Duration::from_secs(60),
        "cluster_timeout",
        Dur(c.timeout),
        "must be in 1us..=60s",
    );
}

/// `timeout_duration`: at most `i64::MAX` nanoseconds.
pub(crate) fn check_timeout(p: &mut Problems, timeout: Duration) {
    p.check(
        timeout <= MAX_DURATION,
        "timeout_duration",
        Dur(timeout),
        "must be at most 9223372036854775807ns (i64::MAX nanoseconds)",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_resilience4j_defaults() {
        let c = RateLimiterConfig::default();
        assert_eq!(c.limit_for_period(), 50);
        assert_eq!(c.limit_refresh_period(), Duration::from_nanos(500));
        assert_eq!(c.timeout_duration(), Duration::from_secs(5));
        assert_eq!(c.event_consumer_buffer_size(), 100);
        assert_eq!(RateLimiterConfig::builder().build().unwrap(), c);
    }

    #[test]
    fn every_rule_is_reported_at_once() {
        let err = RateLimiterConfig::builder()
            .limit_for_period(0)
            .limit_refresh_period(Duration::ZERO)
            .timeout_duration(Duration::MAX)
            .build()
            .unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field()).collect();
        assert_eq!(
            fields,
            [
                "limit_for_period",
                "limit_refresh_period",
                "timeout_duration"
            ]
        );
        assert!(
            err.to_string()
                .contains("limit_refresh_period = 0ms: must be at least 1ns")
        );
    }

    #[test]
    fn durations_beyond_i64_nanos_are_errors_not_panics() {
        let err = RateLimiterConfig::builder()
            .limit_refresh_period(Duration::MAX)
            .build()
            .unwrap_err();
        assert_eq!(err.problems().len(), 1);
        assert_eq!(err.problems()[0].field(), "limit_refresh_period");
        let ok = RateLimiterConfig::builder()
            .limit_refresh_period(MAX_DURATION)
            .timeout_duration(MAX_DURATION)
            .build();
        assert!(ok.is_ok());
    }

    #[test]
    fn more_than_one_permit_per_nanosecond_is_refused() {
        let err = RateLimiterConfig::builder()
            .limit_for_period(501)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "limit_for_period = 501: must not exceed limit_refresh_period in nanoseconds (500): at most one permit per nanosecond"
        );
        let c = RateLimiterConfig::builder()
            .limit_for_period(500)
            .build()
            .unwrap();
        assert_eq!(c.limit_for_period(), 500);
        let c = RateLimiterConfig::builder()
            .limit_for_period(1)
            .limit_refresh_period(Duration::from_nanos(1))
            .build()
            .unwrap();
        assert_eq!(c.period_nanos(), 1);
    }

    #[test]
    fn to_builder_starts_from_the_config() {
        let c = RateLimiterConfig::builder()
            .limit_for_period(7)
            .build()
            .unwrap();
        let d = c
            .to_builder()
            .timeout_duration(Duration::ZERO)
            .build()
            .unwrap();
        assert_eq!(d.limit_for_period(), 7);
        assert_eq!(d.timeout_duration(), Duration::ZERO);
    }
}
