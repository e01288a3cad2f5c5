//! The circuit breaker's illegal-transition error and the refusal of a
//! forced open's time limit (its rejection,
//! [`CallNotPermitted`](super::CallNotPermitted), is in `crate::rejection`).

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use super::State;
use crate::Name;

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

/// The shortest time limit a forced open accepts
/// ([`CircuitBreaker::transition_to_forced_open_state_for`](super::CircuitBreaker::transition_to_forced_open_state_for)):
/// a shorter one would end before anyone saw it.
pub const MIN_FORCED_OPEN_LIMIT: Duration = Duration::from_millis(1);

/// The longest time limit a forced open accepts: 365 days. A longer one is
/// a typo or a forced open without an end, which is
/// [`CircuitBreaker::transition_to_forced_open_state`](super::CircuitBreaker::transition_to_forced_open_state).
pub const MAX_FORCED_OPEN_LIMIT: Duration = Duration::from_secs(365 * 24 * 3600);

/// A forced open's time limit outside [`MIN_FORCED_OPEN_LIMIT`] ..=
/// [`MAX_FORCED_OPEN_LIMIT`]. The state is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForcedOpenLimitOutOfRange {
    name: Name,
    limit: Duration,
}

impl ForcedOpenLimitOutOfRange {
    pub(crate) fn new(name: Name, limit: Duration) -> Self {
        ForcedOpenLimitOutOfRange { name, limit }
    }
    /// The breaker's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The limit that was refused.
    pub fn limit(&self) -> Duration {
        self.limit
    }
}

impl fmt::Display for ForcedOpenLimitOutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "circuit breaker `{}`: a forced open's time limit must be from 1ms to 365 days, got {}",
            self.name,
            crate::clock::format_duration(self.limit)
        )
    }
}

impl StdError for ForcedOpenLimitOutOfRange {}
