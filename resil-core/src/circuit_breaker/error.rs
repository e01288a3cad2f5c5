//! The circuit breaker's rejection and its illegal-transition error.

use std::error::Error as StdError;
use std::fmt;

use super::State;
use crate::Name;

/// The circuit breaker did not permit the call (Resilience4j's `CallNotPermittedException`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallNotPermitted {
    name: Name,
    state: State,
}

impl CallNotPermitted {
    pub(crate) fn new(name: Name, state: State) -> Self {
        CallNotPermitted { name, state }
    }

    /// The breaker's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The state that refused the call (OPEN, HALF_OPEN without probes left, or FORCED_OPEN).
    pub fn state(&self) -> State {
        self.state
    }
}

impl fmt::Display for CallNotPermitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "circuit breaker `{}` is {} and does not permit further calls",
            self.name, self.state
        )
    }
}

impl StdError for CallNotPermitted {}

/// A manual transition that Resilience4j's table forbids (CLOSED → HALF_OPEN,
/// METRICS_ONLY → OPEN or HALF_OPEN). The state is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IllegalStateTransition {
    name: Name,
    from: State,
    to: State,
}

impl IllegalStateTransition {
    pub(crate) fn new(name: Name, from: State, to: State) -> Self {
        IllegalStateTransition { name, from, to }
    }
    /// The breaker's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The state it was in.
    pub fn from(&self) -> State {
        self.from
    }
    /// The state it was asked to move to.
    pub fn to(&self) -> State {
        self.to
    }
}

impl fmt::Display for IllegalStateTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "circuit breaker `{}` tried an illegal state transition from {} to {}",
            self.name, self.from, self.to
        )
    }
}

impl StdError for IllegalStateTransition {}
