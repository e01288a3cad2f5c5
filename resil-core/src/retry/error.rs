//! Retry's exhaustion error.

use std::error::Error as StdError;
use std::fmt;

use crate::Name;

/// Retry used all its attempts on results that its result predicate rejected,
/// and `fail_after_max_attempts` is set (Resilience4j's `MaxRetriesExceededException`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaxRetriesExceeded {
    name: Name,
    attempts: u32,
}

impl MaxRetriesExceeded {
    /// Exhaustion of the retry `name` after `attempts` attempts.
    pub fn new(name: Name, attempts: u32) -> Self {
        MaxRetriesExceeded { name, attempts }
    }

    /// The retry's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The attempts made (the configured `max_attempts`).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

impl fmt::Display for MaxRetriesExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "retry `{}` has exhausted all attempts ({})",
            self.name, self.attempts
        )
    }
}

impl StdError for MaxRetriesExceeded {}
