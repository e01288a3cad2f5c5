//! Fault injection: a drill's slow or failing downstream, without a code
//! change.
//!
//! A fault has the name of the call sites it applies to (an attribute's
//! `name`, a [`Decorators`](crate::Decorators) chain's instances' names, a
//! named `tower` layer's). It sits innermost, around the call itself: a
//! delayed call waits on the fault's clock and then runs; an aborted call
//! does not run and returns [`Error::FaultInjected`](crate::Error::FaultInjected),
//! which the breaker records as a failure, a retry retries and a fallback
//! receives.
//!
//! The faults live on a board ([`Faults`]); every face consults the
//! process-wide one, [`Faults::global`]. A fault comes from configuration
//! ([`Faults::configure`], what resilience.toml's `[fault.instances.*]`
//! sets) or is injected for a while ([`Faults::inject`], what the actuator's
//! `POST /actuator/faults/{name}` does), and ends when that while is over,
//! giving the configured state back. With no fault in force a call pays one
//! atomic load.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use resil_core::chain::{Lift, Stack};
//! use resil_core::clock::{ManualClock, SharedClock};
//! use resil_core::fault::{FaultConfig, Faults};
//! use resil_core::Error;
//!
//! let faults = Faults::new();
//! let config = FaultConfig::builder().abort_percent(100.0).build()?;
//! faults.configure("inventory-query", Some(config), SharedClock::new(ManualClock::new()));
//!
//! let mut ran = false;
//! let outcome: Result<u32, Error<std::io::Error>> = Stack::new()
//!     .fault(faults.part(["inventory-query"]))
//!     .call(Lift(|| {
//!         ran = true;
//!         Ok(42)
//!     }));
//! assert!(matches!(outcome, Err(Error::FaultInjected(f)) if f.name() == "inventory-query"));
//! assert!(!ran);
//! assert_eq!(faults.injected_total("inventory-query"), (0, 1));
//! # Ok::<(), resil_core::ConfigError>(())
//! ```

mod board;
mod layer;

use std::fmt;
use std::time::Duration;

use crate::error::{ConfigError, Dur, Problems};

pub use self::board::{FaultSource, FaultView, Faults, static_name};
pub use self::layer::{FaultAttempt, FaultNode, FaultPart, FaultSites};
pub use crate::rejection::FaultInjected;

/// The longest delay a fault may add to a call.
pub const MAX_DELAY: Duration = Duration::from_secs(3600);

/// The longest a fault injected at run time stays in force.
pub const MAX_INJECTED_FOR: Duration = Duration::from_secs(24 * 3600);

/// What a fault does to the calls of its name: delays `delay_percent` of
/// them by `delay`, aborts `abort_percent` of them.
///
/// Each call draws for the abort first, then for the delay: an aborted call
/// is not delayed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultConfig {
    delay: Duration,
    delay_percent: f64,
    abort_percent: f64,
}

impl FaultConfig {
    /// A builder with no delay and no abort.
    pub fn builder() -> FaultConfigBuilder {
        FaultConfigBuilder {
            config: FaultConfig {
                delay: Duration::ZERO,
                delay_percent: 0.0,
                abort_percent: 0.0,
            },
        }
    }

    /// How long a delayed call waits before it runs.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The share of calls delayed, in percent.
    pub fn delay_percent(&self) -> f64 {
        self.delay_percent
    }

    /// The share of calls aborted, in percent.
    pub fn abort_percent(&self) -> f64 {
        self.abort_percent
    }
}

impl fmt::Display for FaultConfig {
    /// `delay 200ms for 10% of calls, abort 5% of calls`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "delay {} for {}% of calls, abort {}% of calls",
            Dur(self.delay),
            self.delay_percent,
            self.abort_percent
        )
    }
}

/// Builds a [`FaultConfig`], checking each value.
#[derive(Debug, Clone)]
pub struct FaultConfigBuilder {
    config: FaultConfig,
}

impl FaultConfigBuilder {
    /// How long a delayed call waits before it runs (at most 1 h).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.config.delay = delay;
        self
    }

    /// The share of calls delayed, from 0 to 100.
    pub fn delay_percent(mut self, percent: f64) -> Self {
        self.config.delay_percent = percent;
        self
    }

    /// The share of calls aborted, from 0 to 100.
    pub fn abort_percent(mut self, percent: f64) -> Self {
        self.config.abort_percent = percent;
        self
    }

    /// Checks the settings.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming each setting out of range.
    pub fn build(self) -> Result<FaultConfig, ConfigError> {
        let c = self.config;
        let mut p = Problems::default();
        p.check(
            c.delay <= MAX_DELAY,
            "delay",
            Dur(c.delay),
            "must be at most 1h",
        );
        for (field, value) in [
            ("delay_percent", c.delay_percent),
            ("abort_percent", c.abort_percent),
        ] {
            p.check(
                value.is_finite() && (0.0..=100.0).contains(&value),
                field,
                value,
                "must be a percentage from 0 to 100",
            );
        }
        p.finish(c)
    }
}

/// What a fault does to one call.
#[derive(Debug, Clone)]
pub(crate) enum Decision {
    /// The call waits this long on this clock, then runs.
    Delay(Duration, crate::clock::SharedClock),
    /// The call does not run.
    Abort(FaultInjected),
}

#[cfg(test)]
mod tests;
