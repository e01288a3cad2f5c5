//! [`Deadline`]: a named deadline and its [`DeadlineConfig`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, SharedClock, SystemClock};
use crate::error::{ConfigError, Dur, Problems};
use crate::live::{ChangeRefused, Live};
use crate::{Name, Tags};

/// The configuration of a deadline.
///
/// | setting | default |
/// | --- | --- |
/// | `timeout` | 1 s (must be more than zero) |
///
/// # Examples
///
/// ```
/// use resil_core::deadline::DeadlineConfig;
/// use std::time::Duration;
///
/// let config = DeadlineConfig::builder().timeout(Duration::from_millis(800)).build()?;
/// assert_eq!(config.timeout(), Duration::from_millis(800));
/// assert!(DeadlineConfig::builder().timeout(Duration::ZERO).build().is_err());
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineConfig {
    pub(crate) timeout: Duration,
}

impl Default for DeadlineConfig {
    fn default() -> Self {
        DeadlineConfig {
            timeout: Duration::from_secs(1),
        }
    }
}

impl DeadlineConfig {
    /// A builder with the defaults.
    pub fn builder() -> DeadlineConfigBuilder {
        DeadlineConfigBuilder {
            config: DeadlineConfig::default(),
        }
    }

    /// A builder that starts from this configuration.
    pub fn to_builder(&self) -> DeadlineConfigBuilder {
        DeadlineConfigBuilder { config: *self }
    }

    /// How long a request may take, every call beneath it included.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// Builds a [`DeadlineConfig`].
#[derive(Debug, Clone, Copy)]
pub struct DeadlineConfigBuilder {
    config: DeadlineConfig,
}

impl DeadlineConfigBuilder {
    /// How long a request may take (more than zero).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.config.timeout = timeout;
        self
    }

    /// Checks the settings.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] for a zero `timeout`.
    pub fn build(self) -> Result<DeadlineConfig, ConfigError> {
        let mut problems = Problems::default();
        problems.check(
            !self.config.timeout.is_zero(),
            "timeout",
            Dur(self.config.timeout),
            "must be more than zero",
        );
        problems.finish(self.config)
    }
}

/// A named deadline: a request that passes it has at most its `timeout`,
/// or less when an enclosing deadline ends earlier. Cheap to clone: clones
/// share one instance.
///
/// See the [module documentation](super).
#[derive(Clone)]
pub struct Deadline {
    pub(crate) inner: Arc<Inner>,
}

#[doc(hidden)]
pub struct Inner {
    pub(crate) name: Name,
    pub(crate) clock: SharedClock,
    pub(crate) config: Live<DeadlineConfig>,
    pub(crate) tags: Tags,
}

impl Deadline {
    /// A deadline of 1 s on the system clock.
    pub fn of_defaults(name: impl Into<Name>) -> Self {
        Self::new(name, DeadlineConfig::default())
    }

    /// A deadline on the system clock.
    pub fn new(name: impl Into<Name>, config: DeadlineConfig) -> Self {
        Self::with_clock(name, config, SystemClock::new())
    }

    /// A deadline on `clock`.
    pub fn with_clock(name: impl Into<Name>, config: DeadlineConfig, clock: impl Clock) -> Self {
        Self::with_parts(name.into(), config, clock.into_shared(), Tags::new())
    }

    /// A deadline of a registry: its clock and tags.
    pub(crate) fn with_parts(
        name: Name,
        config: DeadlineConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        Deadline {
            inner: Arc::new(Inner {
                name,
                clock,
                config: Live::new(config),
                tags,
            }),
        }
    }

    /// The deadline's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Its tags (a registry's overlaid by its own; none outside a registry).
    pub fn tags(&self) -> &Tags {
        &self.inner.tags
    }

    /// The clock the deadline is read on.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// The current settings.
    pub fn config(&self) -> &DeadlineConfig {
        self.inner.config.load()
    }

    /// Replaces the settings; calls that started keep the deadline they
    /// were given.
    ///
    /// # Errors
    ///
    /// [`ChangeRefused`] when the instance keeps as many versions of its
    /// settings as it can (see [`crate::live`]).
    pub fn change_config(&self, config: DeadlineConfig) -> Result<(), ChangeRefused> {
        self.inner.config.store(config, |a, b| a == b).map(|_| ())
    }

    /// Whether [`Deadline::change_config`] would accept `config`.
    ///
    /// # Errors
    ///
    /// As [`Deadline::change_config`].
    pub fn can_change_config(&self, config: &DeadlineConfig) -> Result<(), ChangeRefused> {
        self.inner.config.fits(|c| c == config)
    }
}

impl fmt::Debug for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadline")
            .field("name", &self.inner.name)
            .field("config", self.config())
            .finish()
    }
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inner")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
