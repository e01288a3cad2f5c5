//! [`HedgeConfig`] and its builder.

use std::time::Duration;

use crate::error::{ConfigError, Problems};
use crate::retry::RetryBudget;

/// The most hedged attempts a call may make beside its primary (Polly's
/// upper bound for `MaxHedgedAttempts`).
pub const MAX_HEDGED_ATTEMPTS: u32 = 10;

/// The configuration of a hedge.
///
/// | setting | default |
/// | --- | --- |
/// | `delay` | 100 ms (must be above zero): how long an attempt runs before it gets a sibling |
/// | `delay_percentile` | none; `Some(p)`, 0 < p < 100: the delay is that percentile of the recent successful latencies, `delay` until enough are seen |
/// | `max_hedged_attempts` | 1 (1 to 10): attempts made beside the primary |
/// | `budget` | none: a [`RetryBudget`] that pays for the hedged attempts |
/// | `event_consumer_buffer_size` | 100 (the recent-events buffer a registry attaches) |
///
/// With a `budget`, each call deposits into it as it starts (as a retry's
/// first attempt does) and each hedged attempt withdraws one retry; an
/// attempt the budget denies is not made, the call goes on with the attempts
/// it has, and the hedge publishes
/// [`BudgetExhausted`](super::HedgeEvent::BudgetExhausted). A hedge and a
/// retry may share one budget: hedged attempts and retries are both extra
/// load on the downstream.
///
/// # Examples
///
/// ```
/// use resil_core::hedge::HedgeConfig;
/// use std::time::Duration;
///
/// let config = HedgeConfig::builder()
///     .delay(Duration::from_millis(50))
///     .delay_percentile(95.0)
///     .max_hedged_attempts(2)
///     .build()?;
/// assert_eq!(config.delay(), Duration::from_millis(50));
/// assert_eq!(config.delay_percentile(), Some(95.0));
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HedgeConfig {
    pub(crate) delay: Duration,
    pub(crate) delay_percentile: Option<f64>,
    pub(crate) max_hedged_attempts: u32,
    pub(crate) budget: Option<RetryBudget>,
    pub(crate) event_consumer_buffer_size: u32,
}

impl Default for HedgeConfig {
    fn default() -> Self {
        HedgeConfig {
            delay: Duration::from_millis(100),
            delay_percentile: None,
            max_hedged_attempts: 1,
            budget: None,
            event_consumer_buffer_size: 100,
        }
    }
}

impl HedgeConfig {
    /// A builder with the defaults.
    pub fn builder() -> HedgeConfigBuilder {
        HedgeConfigBuilder {
            config: HedgeConfig::default(),
        }
    }

    /// A builder that starts from this configuration.
    pub fn to_builder(&self) -> HedgeConfigBuilder {
        HedgeConfigBuilder {
            config: self.clone(),
        }
    }

    crate::config_kit::getters! {
        /// The fixed delay, and the delay of a percentile hedge until it has
        /// seen enough successful latencies.
        delay: Duration;
        /// The percentile of recent successful latencies used as the delay, if
        /// any.
        delay_percentile: Option<f64>;
        /// The most attempts made beside the primary.
        max_hedged_attempts: u32;
    }

    /// The retry budget that pays for hedged attempts, if any (see the
    /// type's documentation).
    pub fn budget(&self) -> Option<&RetryBudget> {
        self.budget.as_ref()
    }
    crate::config_kit::getters! {
        @buffer;
    }
}

/// Builds a [`HedgeConfig`].
#[derive(Debug, Clone)]
pub struct HedgeConfigBuilder {
    config: HedgeConfig,
}

impl HedgeConfigBuilder {
    crate::config_kit::setters! {
        /// The fixed delay (above zero), and the fallback of a percentile delay.
        delay: Duration;
    }

    /// The delay as the `percentile` (0 < p < 100) of recent successful
    /// latencies.
    pub fn delay_percentile(mut self, percentile: f64) -> Self {
        self.config.delay_percentile = Some(percentile);
        self
    }
    /// A fixed delay again (no percentile).
    pub fn fixed_delay(mut self) -> Self {
        self.config.delay_percentile = None;
        self
    }
    crate::config_kit::setters! {
        /// The most attempts made beside the primary (1 to 10).
        max_hedged_attempts: u32;
    }

    /// The retry budget that pays for hedged attempts (default none; see
    /// [`HedgeConfig`]).
    pub fn budget(mut self, budget: impl Into<Option<RetryBudget>>) -> Self {
        self.config.budget = budget.into();
        self
    }
    crate::config_kit::setters! {
        @buffer;
    }

    /// Builds the configuration.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming each setting out of range: a zero `delay`,
    /// a `delay_percentile` outside (0, 100), `max_hedged_attempts` outside
    /// 1 to 10.
    pub fn build(self) -> Result<HedgeConfig, ConfigError> {
        let c = self.config;
        let mut p = Problems::default();
        p.check(
            !c.delay.is_zero(),
            "delay",
            crate::clock::format_duration(c.delay),
            "must be above zero",
        );
        if let Some(percentile) = c.delay_percentile {
            p.check(
                percentile > 0.0 && percentile < 100.0,
                "delay_percentile",
                percentile,
                "must be above 0 and below 100",
            );
        }
        p.check(
            (1..=MAX_HEDGED_ATTEMPTS).contains(&c.max_hedged_attempts),
            "max_hedged_attempts",
            c.max_hedged_attempts,
            "must be from 1 to 10",
        );
        crate::event::check_buffer_size(&mut p, c.event_consumer_buffer_size);
        p.finish(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let c = HedgeConfig::default();
        assert_eq!(c.delay(), Duration::from_millis(100));
        assert_eq!(c.delay_percentile(), None);
        assert_eq!(c.max_hedged_attempts(), 1);
        assert_eq!(c.budget(), None);
        assert_eq!(HedgeConfig::builder().build().unwrap(), c);
    }

    #[test]
    fn out_of_range_settings_are_named_with_their_values() {
        for (p, ok) in [
            (0.0, false),
            (100.0, false),
            (-1.0, false),
            (f64::NAN, false),
            (0.5, true),
            (99.9, true),
        ] {
            let r = HedgeConfig::builder().delay_percentile(p).build();
            assert_eq!(r.is_ok(), ok, "{p}");
            if let Err(e) = r {
                assert_eq!(
                    e.to_string(),
                    format!("delay_percentile = {p}: must be above 0 and below 100")
                );
            }
        }
        let e = HedgeConfig::builder()
            .delay(Duration::ZERO)
            .max_hedged_attempts(0)
            .build()
            .unwrap_err();
        let fields: Vec<_> = e
            .problems()
            .iter()
            .map(|p| (p.field(), p.value()))
            .collect();
        assert_eq!(fields, [("delay", "0ms"), ("max_hedged_attempts", "0")]);
        assert!(
            HedgeConfig::builder()
                .max_hedged_attempts(11)
                .build()
                .is_err()
        );
        assert!(
            HedgeConfig::builder()
                .max_hedged_attempts(10)
                .build()
                .is_ok()
        );
        let fleet = RetryBudget::of_defaults("fleet");
        let c = HedgeConfig::builder()
            .budget(fleet.clone())
            .build()
            .unwrap();
        assert_eq!(c.budget(), Some(&fleet));
        assert_ne!(
            c,
            HedgeConfig::builder()
                .budget(RetryBudget::of_defaults("fleet"))
                .build()
                .unwrap(),
            "equal settings, another balance"
        );
    }
}
