//! The rate limiter's rejection.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use crate::Name;

/// The rate limiter did not permit the call within its timeout (Resilience4j's
/// `RequestNotPermitted`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestNotPermitted {
    name: Name,
    retry_after: Option<Duration>,
}

impl RequestNotPermitted {
    /// A rejection by the rate limiter `name`.
    pub fn new(name: Name) -> Self {
        RequestNotPermitted {
            name,
            retry_after: None,
        }
    }

    /// The same rejection, saying when one permit is next free.
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// The rate limiter's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How long from the refusal until one permit is free (the limiter's
    /// `nanos_to_wait` then), for an HTTP `Retry-After`; `None` when the
    /// rejection was not made by a limiter.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
}

impl fmt::Display for RequestNotPermitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate limiter `{}` does not permit further calls",
            self.name
        )
    }
}

impl StdError for RequestNotPermitted {}
