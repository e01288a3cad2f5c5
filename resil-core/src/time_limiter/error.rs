//! The time limiter's rejection.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use crate::Name;
use crate::error::Dur;

/// The time limiter stopped waiting for the call (Resilience4j's `TimeoutException`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeout {
    name: Name,
    timeout: Duration,
}

impl Timeout {
    /// A timeout of the time limiter `name` after `timeout`.
    pub fn new(name: Name, timeout: Duration) -> Self {
        Timeout { name, timeout }
    }

    /// The time limiter's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The timeout that elapsed.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl fmt::Display for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "time limiter `{}` timed out after {}",
            self.name,
            Dur(self.timeout)
        )
    }
}

impl StdError for Timeout {}
