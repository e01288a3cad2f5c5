//! [`RetryConfig`] and its builder.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::RetryBudget;
use super::interval::IntervalBiFunction;
use crate::error::{ConfigError, Problems};
use crate::interval::IntervalFunction;

/// The configuration of a retry: Resilience4j's settings and defaults.
///
/// | setting | default |
/// | --- | --- |
/// | `max_attempts` | 3 (counts the first call: 1 call + 2 retries) |
/// | wait (`wait_duration` / `interval_function` / `interval_bi_function`) | 500 ms, constant |
/// | `fail_after_max_attempts` | false (results that exhaust the attempts are returned) |
/// | `retry_errors` / `ignore_errors` | empty (every error is retried, none ignored) |
/// | `event_consumer_buffer_size` | 100 (the recent-events buffer a registry attaches) |
/// | `shadow` | `false` (decide, never refuse: would-be refusals become events) |
///
/// Which errors and results are retried is decided per call site by a
/// [`RetryClassifier`](super::RetryClassifier) (typed predicates) together
/// with the kind-name lists here, which resilience.toml can set.
///
/// # Examples
///
/// ```
/// use resil_core::retry::{IntervalFunction, RetryConfig};
/// use std::time::Duration;
///
/// let config = RetryConfig::builder()
///     .max_attempts(5)
///     .interval_function(IntervalFunction::of_exponential_backoff(Duration::from_millis(100), 2.0)?)
///     .retry_errors(["ConnectionRefused", "Timeout"])
///     .ignore_errors(["OutOfStock"])
///     .build()?;
/// assert_eq!(config.max_attempts(), 5);
/// assert_eq!(config.interval_bi_function().as_constant(), None);
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct RetryConfig {
    pub(crate) max_attempts: u32,
    pub(crate) interval: IntervalBiFunction,
    pub(crate) fail_after_max_attempts: bool,
    pub(crate) retry_errors: Arc<[Box<str>]>,
    pub(crate) ignore_errors: Arc<[Box<str>]>,
    pub(crate) event_consumer_buffer_size: u32,
    pub(crate) shadow: bool,
    pub(crate) budget: Option<RetryBudget>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 3,
            interval: IntervalBiFunction::of_defaults(),
            fail_after_max_attempts: false,
            retry_errors: Arc::new([]),
            ignore_errors: Arc::new([]),
            event_consumer_buffer_size: 100,
            shadow: false,
            budget: None,
        }
    }
}

impl RetryConfig {
    /// A builder with Resilience4j's defaults.
    pub fn builder() -> RetryConfigBuilder {
        RetryConfigBuilder::from_config(RetryConfig::default())
    }

    /// A builder that starts from this configuration (Resilience4j's
    /// `RetryConfig.from(base)`); any interval setter replaces the base's wait
    /// (the last interval setter wins; 2.2 throws there).
    pub fn to_builder(&self) -> RetryConfigBuilder {
        RetryConfigBuilder::from_config(self.clone())
    }

    crate::config_kit::getters! {
        /// Attempts per call, the first call included.
        max_attempts: u32;
    }

    /// The wait before each retry, as a function of the attempt and its outcome.
    pub fn interval_bi_function(&self) -> &IntervalBiFunction {
        &self.interval
    }
    /// The interval function, when the wait was set from one (or left at the default).
    pub fn interval_function(&self) -> Option<&IntervalFunction> {
        self.interval.as_interval_function()
    }
    crate::config_kit::getters! {
        /// Whether results that exhaust the attempts fail the call with
        /// [`MaxRetriesExceeded`](super::MaxRetriesExceeded) instead of being returned.
        fail_after_max_attempts: bool;
    }

    /// Error kinds that are retried (empty: every error that is not ignored).
    pub fn retry_errors(&self) -> &[Box<str>] {
        &self.retry_errors
    }
    /// Error kinds that are never retried (ignore wins over retry).
    pub fn ignore_errors(&self) -> &[Box<str>] {
        &self.ignore_errors
    }
    crate::config_kit::getters! {
        @buffer;
        @shadow;
    }

    /// The budget that pays for the retries, if any.
    pub fn budget(&self) -> Option<&RetryBudget> {
        self.budget.as_ref()
    }
}

impl fmt::Debug for RetryConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryConfig")
            .field("max_attempts", &self.max_attempts)
            .field("interval_bi_function", &self.interval)
            .field("fail_after_max_attempts", &self.fail_after_max_attempts)
            .field("retry_errors", &self.retry_errors)
            .field("ignore_errors", &self.ignore_errors)
            .field(
                "event_consumer_buffer_size",
                &self.event_consumer_buffer_size,
            )
            .field("shadow", &self.shadow)
            .field("budget", &self.budget)
            .finish()
    }
}

/// Builds a [`RetryConfig`]; `build()` checks every value and reports all problems.
#[derive(Clone, Debug)]
pub struct RetryConfigBuilder {
    config: RetryConfig,
}

impl RetryConfigBuilder {
    fn from_config(config: RetryConfig) -> Self {
        RetryConfigBuilder { config }
    }

    crate::config_kit::setters! {
        /// Attempts per call, the first call included; at least 1 (1: no retry).
        max_attempts: u32;
    }

    /// The same wait before every retry; zero retries at once. Replaces any
    /// interval set before.
    pub fn wait_duration(mut self, wait: Duration) -> Self {
        self.config.interval = IntervalBiFunction::of_duration(wait);
        self
    }
    /// The wait as a function of the attempt (exponential, randomized, ...).
    /// Replaces any interval set before.
    pub fn interval_function(mut self, f: IntervalFunction) -> Self {
        self.config.interval = IntervalBiFunction::of_interval_function(f);
        self
    }
    /// The wait as a function of the attempt and what it produced, e.g. to
    /// honour a `Retry-After` carried by the error. Replaces any interval set before.
    pub fn interval_bi_function(mut self, f: IntervalBiFunction) -> Self {
        self.config.interval = f;
        self
    }
    crate::config_kit::setters! {
        /// Whether results that still fail the result predicate after
        /// `max_attempts` fail the call with `MaxRetriesExceeded` (default: the
        /// last result is returned).
        fail_after_max_attempts: bool;
    }

    /// Error kinds (see `Classify`) that are retried; with a list (or a
    /// `retry_on` predicate) other errors are not retried.
    pub fn retry_errors<I, S>(mut self, kinds: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Box<str>>,
    {
        self.config.retry_errors = kinds.into_iter().map(Into::into).collect();
        self
    }
    /// Error kinds that are never retried, whatever `retry_errors` and the
    /// predicates say.
    pub fn ignore_errors<I, S>(mut self, kinds: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Box<str>>,
    {
        self.config.ignore_errors = kinds.into_iter().map(Into::into).collect();
        self
    }
    crate::config_kit::setters! {
        @buffer;
        @shadow;
    }

    /// The budget that pays for this retry's retries (default none): each
    /// call's first attempt deposits, each retry withdraws, and a retry the
    /// budget denies is not made (the call ends with the outcome it has,
    /// as if attempts had run out). Several retries may share one budget.
    pub fn budget(mut self, budget: impl Into<Option<RetryBudget>>) -> Self {
        self.config.budget = budget.into();
        self
    }

    /// Checks every value (Resilience4j's builder rules) and builds the configuration.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] listing every value out of range.
    pub fn build(self) -> Result<RetryConfig, ConfigError> {
        let c = self.config;
        let mut p = Problems::default();
        p.check(
            c.max_attempts >= 1,
            "max_attempts",
            c.max_attempts,
            "must be at least 1",
        );
        let empty = |kinds: &[Box<str>]| kinds.iter().any(|k| k.trim().is_empty());
        p.check(
            !empty(&c.retry_errors),
            "retry_errors",
            format_args!("{:?}", c.retry_errors),
            "kind names must not be empty",
        );
        p.check(
            !empty(&c.ignore_errors),
            "ignore_errors",
            format_args!("{:?}", c.ignore_errors),
            "kind names must not be empty",
        );
        crate::event::check_buffer_size(&mut p, c.event_consumer_buffer_size);
        p.finish(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::RetryOutcome;

    #[test]
    fn defaults_are_resilience4j_defaults() {
        let c = RetryConfig::default();
        assert_eq!(c.max_attempts(), 3);
        assert_eq!(
            c.interval_bi_function().as_constant(),
            Some(Duration::from_millis(500))
        );
        assert!(!c.fail_after_max_attempts());
        assert!(c.retry_errors().is_empty() && c.ignore_errors().is_empty());
        assert_eq!(c.event_consumer_buffer_size(), 100);
        let built = RetryConfig::builder().build().unwrap();
        assert_eq!(built.max_attempts(), 3);
    }

    #[test]
    fn every_rule_is_reported_at_once() {
        let err = RetryConfig::builder()
            .max_attempts(0)
            .retry_errors(["Io", " "])
            .build()
            .unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field()).collect();
        assert_eq!(fields, ["max_attempts", "retry_errors"]);
        assert!(
            err.to_string()
                .starts_with("max_attempts = 0: must be at least 1; retry_errors = ")
        );
    }

    #[test]
    fn a_zero_wait_is_legal() {
        let c = RetryConfig::builder()
            .wait_duration(Duration::ZERO)
            .build()
            .unwrap();
        assert_eq!(c.interval_bi_function().as_constant(), Some(Duration::ZERO));
    }

    #[test]
    fn the_last_interval_setter_wins() {
        let exp = IntervalFunction::of_exponential_backoff(Duration::from_secs(1), 2.0).unwrap();
        let outcome = RetryOutcome::of_result(None);
        let c = RetryConfig::builder()
            .wait_duration(Duration::from_secs(5))
            .interval_function(exp)
            .build()
            .unwrap();
        assert_eq!(
            c.interval_bi_function().apply(2, &outcome),
            Duration::from_secs(2)
        );
        // Resilience4j 2.2 throws here: `from(base)` plus another setter.
        let c = c
            .to_builder()
            .wait_duration(Duration::from_millis(7))
            .build()
            .unwrap();
        assert_eq!(
            c.interval_bi_function().apply(2, &outcome),
            Duration::from_millis(7)
        );
        let c = c
            .to_builder()
            .interval_bi_function(IntervalBiFunction::new(|n, _| {
                Duration::from_millis(u64::from(n))
            }))
            .build()
            .unwrap();
        assert_eq!(
            c.interval_bi_function().apply(9, &outcome),
            Duration::from_millis(9)
        );
        assert!(c.interval_function().is_none());
    }
}
