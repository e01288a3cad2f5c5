//! The rate limiter's rejection.

use std::error::Error as StdError;
use std::fmt;

use crate::Name;

/// The rate limiter did not permit the call within its timeout (Resilience4j's
/// `RequestNotPermitted`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestNotPermitted {
    name: Name,
}

impl RequestNotPermitted {
    /// A rejection by the rate limiter `name`.
    pub fn new(name: Name) -> Self {
        RequestNotPermitted { name }
    }

    /// The rate limiter's name.
    pub fn name(&self) -> &str {
        &self.name
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
