//! The rejections: what a primitive answers instead of running a call.
//!
//! A leaf module: [`crate::error`] and the primitives both use it, and it
//! uses neither (only the circuit breaker's [`State`], itself a leaf). Each
//! type's public path is in its primitive's module
//! (`resil_core::bulkhead::BulkheadFull`, ...).

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use crate::Name;
use crate::circuit_breaker::State;
use crate::clock::format_duration;

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

/// The bulkhead is full and did not permit the call (Resilience4j's
/// `BulkheadFullException`); also returned by the thread-pool bulkhead when
/// its threads and queue are taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkheadFull {
    name: Name,
    capacity: u32,
}

impl BulkheadFull {
    /// A rejection by the bulkhead `name`, whose capacity is `capacity` calls.
    pub fn new(name: Name, capacity: u32) -> Self {
        BulkheadFull { name, capacity }
    }

    /// The bulkhead's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many calls it admits at once: `max_concurrent_calls` for a semaphore
    /// bulkhead, `max_thread_pool_size + queue_capacity` for a thread-pool bulkhead.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }
}

impl fmt::Display for BulkheadFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bulkhead `{}` is full and does not permit further calls",
            self.name
        )
    }
}

impl StdError for BulkheadFull {}

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
            format_duration(self.timeout)
        )
    }
}

impl StdError for Timeout {}

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

/// A fault injected for a drill aborted the call before it ran (see
/// [`crate::fault`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultInjected {
    name: Name,
}

impl FaultInjected {
    /// An abort injected by the fault `name`.
    pub fn new(name: Name) -> Self {
        FaultInjected { name }
    }

    /// The fault's name: the name of the call sites it applies to.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for FaultInjected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fault `{}` aborted the call (an injected failure)",
            self.name
        )
    }
}

impl StdError for FaultInjected {}
