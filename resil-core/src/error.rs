//! The errors of guarded calls, configuration and registries.
//!
//! A guarded call returns `Result<T, Error<E>>`: [`Error::Inner`] keeps the
//! caller's own error `E` typed, and every other variant is a rejection by a
//! primitive, a small struct naming the instance. [`Rejection`] is the enum of
//! the rejections alone; an error type that implements
//! `From<Rejection>` gets rejections folded into it by [`Error::into_error`]
//! (that is what the attribute macros do when there is no fallback).

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;

// The rejections' leaf module; each type's public path is in its
// primitive's module.
use crate::deadline::DeadlineExceeded;
use crate::rejection::{
    BulkheadFull, CallNotPermitted, FaultInjected, MaxRetriesExceeded, RequestNotPermitted, Timeout,
};

/// The kind names of the rejections, in [`Error`]'s order: what
/// [`Error::rejection_kind`] returns, and what `record-errors` and the other
/// kind lists of resilience.toml may name besides the caller's own kinds.
pub const REJECTION_KINDS: [&str; 7] = [
    "CallNotPermitted",
    "BulkheadFull",
    "RequestNotPermitted",
    "Timeout",
    "MaxRetriesExceeded",
    "DeadlineExceeded",
    "FaultInjected",
];

/// The error returned by a guarded call.
///
/// # Examples
///
/// ```
/// use resil_core::circuit_breaker::CircuitBreaker;
/// use resil_core::Error;
///
/// let cb = CircuitBreaker::of_defaults("inventory-query");
/// cb.transition_to_forced_open_state().unwrap();
/// match cb.call(|| Ok::<_, std::io::Error>(42)) {
///     Err(Error::CallNotPermitted(e)) => assert_eq!(e.name(), "inventory-query"),
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error<E> {
    /// The call ran and failed; this is the caller's own error.
    Inner(E),
    /// The circuit breaker is open and did not permit the call.
    CallNotPermitted(CallNotPermitted),
    /// The bulkhead (semaphore or thread pool) is full and did not permit the call.
    BulkheadFull(BulkheadFull),
    /// The rate limiter did not permit the call within its timeout.
    RequestNotPermitted(RequestNotPermitted),
    /// The time limiter gave up waiting for the call.
    Timeout(Timeout),
    /// Retry exhausted its attempts on results that its result predicate rejected
    /// (only with `fail_after_max_attempts`).
    MaxRetriesExceeded(MaxRetriesExceeded),
    /// The request's deadline left no time for the call, or ran out while
    /// a pattern waited for it (see [`crate::deadline`]).
    DeadlineExceeded(DeadlineExceeded),
    /// A fault injected for a drill aborted the call before it ran (see
    /// [`crate::fault`]); the breaker records it, a retry retries it.
    FaultInjected(FaultInjected),
}

impl<E> Error<E> {
    /// Returns the caller's error, if this is one.
    pub fn inner(&self) -> Option<&E> {
        match self {
            Error::Inner(e) => Some(e),
            _ => None,
        }
    }

    /// Returns the caller's error, if this is one.
    pub fn into_inner(self) -> Option<E> {
        match self {
            Error::Inner(e) => Some(e),
            _ => None,
        }
    }

    /// Returns `true` if a primitive rejected the call (it is not the caller's error).
    pub fn is_rejection(&self) -> bool {
        !matches!(self, Error::Inner(_))
    }

    /// Returns the rejection, if this is one.
    pub fn rejection(&self) -> Option<Rejection> {
        match self {
            Error::Inner(_) => None,
            Error::CallNotPermitted(r) => Some(Rejection::CallNotPermitted(r.clone())),
            Error::BulkheadFull(r) => Some(Rejection::BulkheadFull(r.clone())),
            Error::RequestNotPermitted(r) => Some(Rejection::RequestNotPermitted(r.clone())),
            Error::Timeout(r) => Some(Rejection::Timeout(r.clone())),
            Error::MaxRetriesExceeded(r) => Some(Rejection::MaxRetriesExceeded(r.clone())),
            Error::DeadlineExceeded(r) => Some(Rejection::DeadlineExceeded(r.clone())),
            Error::FaultInjected(r) => Some(Rejection::FaultInjected(r.clone())),
        }
    }

    /// Splits into the caller's error or the rejection.
    pub fn into_result(self) -> Result<Rejection, E> {
        match self {
            Error::Inner(e) => Err(e),
            Error::CallNotPermitted(r) => Ok(Rejection::CallNotPermitted(r)),
            Error::BulkheadFull(r) => Ok(Rejection::BulkheadFull(r)),
            Error::RequestNotPermitted(r) => Ok(Rejection::RequestNotPermitted(r)),
            Error::Timeout(r) => Ok(Rejection::Timeout(r)),
            Error::MaxRetriesExceeded(r) => Ok(Rejection::MaxRetriesExceeded(r)),
            Error::DeadlineExceeded(r) => Ok(Rejection::DeadlineExceeded(r)),
            Error::FaultInjected(r) => Ok(Rejection::FaultInjected(r)),
        }
    }

    /// Maps the caller's error, keeping rejections.
    pub fn map_inner<F, O>(self, f: O) -> Error<F>
    where
        O: FnOnce(E) -> F,
    {
        match self.into_result() {
            Err(e) => Error::Inner(f(e)),
            Ok(r) => r.into(),
        }
    }

    /// Folds rejections into the caller's error type through `From<Rejection>`.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::Rejection;
    ///
    /// #[derive(Debug)]
    /// enum InventoryError { Unavailable(String), Db }
    /// impl From<Rejection> for InventoryError {
    ///     fn from(r: Rejection) -> Self { InventoryError::Unavailable(r.to_string()) }
    /// }
    ///
    /// let cb = resil_core::circuit_breaker::CircuitBreaker::of_defaults("inventory-query");
    /// cb.transition_to_forced_open_state().unwrap();
    /// let err = cb.call(|| Err::<(), _>(InventoryError::Db)).unwrap_err().into_error();
    /// match err {
    ///     InventoryError::Unavailable(why) => assert!(why.contains("FORCED_OPEN")),
    ///     InventoryError::Db => unreachable!(),
    /// }
    /// ```
    pub fn into_error(self) -> E
    where
        E: From<Rejection>,
    {
        match self.into_result() {
            Err(e) => e,
            Ok(r) => E::from(r),
        }
    }

    /// The kind name of a rejection (`"CallNotPermitted"`, `"BulkheadFull"`,
    /// `"RequestNotPermitted"`, `"Timeout"`, `"MaxRetriesExceeded"`,
    /// `"DeadlineExceeded"`, `"FaultInjected"`), which
    /// `record-errors` and friends in resilience.toml can name; `None` for the
    /// caller's error.
    pub fn rejection_kind(&self) -> Option<&'static str> {
        match self {
            Error::Inner(_) => None,
            Error::CallNotPermitted(_) => Some(REJECTION_KINDS[0]),
            Error::BulkheadFull(_) => Some(REJECTION_KINDS[1]),
            Error::RequestNotPermitted(_) => Some(REJECTION_KINDS[2]),
            Error::Timeout(_) => Some(REJECTION_KINDS[3]),
            Error::MaxRetriesExceeded(_) => Some(REJECTION_KINDS[4]),
            Error::DeadlineExceeded(_) => Some(REJECTION_KINDS[5]),
            Error::FaultInjected(_) => Some(REJECTION_KINDS[6]),
        }
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Inner(e) => e.fmt(f),
            Error::CallNotPermitted(r) => r.fmt(f),
            Error::BulkheadFull(r) => r.fmt(f),
            Error::RequestNotPermitted(r) => r.fmt(f),
            Error::Timeout(r) => r.fmt(f),
            Error::MaxRetriesExceeded(r) => r.fmt(f),
            Error::DeadlineExceeded(r) => r.fmt(f),
            Error::FaultInjected(r) => r.fmt(f),
        }
    }
}

impl<E: StdError + 'static> StdError for Error<E> {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Error::Inner(e) => Some(e),
            _ => None,
        }
    }
}

/// A rejection by one of the primitives: the call was not run, or not waited for.
///
/// Implement `From<Rejection>` for your error type to receive rejections as
/// your own error (see [`Error::into_error`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejection {
    /// See [`Error::CallNotPermitted`].
    CallNotPermitted(CallNotPermitted),
    /// See [`Error::BulkheadFull`].
    BulkheadFull(BulkheadFull),
    /// See [`Error::RequestNotPermitted`].
    RequestNotPermitted(RequestNotPermitted),
    /// See [`Error::Timeout`].
    Timeout(Timeout),
    /// See [`Error::MaxRetriesExceeded`].
    MaxRetriesExceeded(MaxRetriesExceeded),
    /// See [`Error::DeadlineExceeded`].
    DeadlineExceeded(DeadlineExceeded),
    /// See [`Error::FaultInjected`].
    FaultInjected(FaultInjected),
}

impl Rejection {
    /// The name of the instance that rejected the call.
    pub fn name(&self) -> &str {
        match self {
            Rejection::CallNotPermitted(r) => r.name(),
            Rejection::BulkheadFull(r) => r.name(),
            Rejection::RequestNotPermitted(r) => r.name(),
            Rejection::Timeout(r) => r.name(),
            Rejection::MaxRetriesExceeded(r) => r.name(),
            Rejection::DeadlineExceeded(r) => r.name(),
            Rejection::FaultInjected(r) => r.name(),
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::CallNotPermitted(r) => r.fmt(f),
            Rejection::BulkheadFull(r) => r.fmt(f),
            Rejection::RequestNotPermitted(r) => r.fmt(f),
            Rejection::Timeout(r) => r.fmt(f),
            Rejection::MaxRetriesExceeded(r) => r.fmt(f),
            Rejection::DeadlineExceeded(r) => r.fmt(f),
            Rejection::FaultInjected(r) => r.fmt(f),
        }
    }
}

impl StdError for Rejection {}

impl<E> From<Rejection> for Error<E> {
    fn from(r: Rejection) -> Self {
        match r {
            Rejection::CallNotPermitted(r) => Error::CallNotPermitted(r),
            Rejection::BulkheadFull(r) => Error::BulkheadFull(r),
            Rejection::RequestNotPermitted(r) => Error::RequestNotPermitted(r),
            Rejection::Timeout(r) => Error::Timeout(r),
            Rejection::MaxRetriesExceeded(r) => Error::MaxRetriesExceeded(r),
            Rejection::DeadlineExceeded(r) => Error::DeadlineExceeded(r),
            Rejection::FaultInjected(r) => Error::FaultInjected(r),
        }
    }
}

macro_rules! rejection_from {
    ($($ty:ident),*) => {$(
        impl<E> From<$ty> for Error<E> {
            fn from(r: $ty) -> Self {
                Error::$ty(r)
            }
        }
        impl From<$ty> for Rejection {
            fn from(r: $ty) -> Self {
                Rejection::$ty(r)
            }
        }
    )*};
}
rejection_from!(
    CallNotPermitted,
    BulkheadFull,
    RequestNotPermitted,
    Timeout,
    MaxRetriesExceeded,
    DeadlineExceeded,
    FaultInjected
);

/// An invalid configuration: every rule a builder's values broke, each with
/// the setter's name and the offending value.
///
/// # Examples
///
/// ```
/// use resil_core::circuit_breaker::CircuitBreakerConfig;
///
/// let err = CircuitBreakerConfig::builder()
///     .failure_rate_threshold(150.0)
///     .sliding_window_size(0)
///     .build()
///     .unwrap_err();
/// assert_eq!(err.problems().len(), 2);
/// assert_eq!(err.problems()[0].field(), "failure_rate_threshold");
/// assert_eq!(err.to_string(), "failure_rate_threshold = 150: must be in (0, 100]; sliding_window_size = 0: must be at least 1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    problems: Vec<Problem>,
}

/// One broken rule of a [`ConfigError`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    field: &'static str,
    value: String,
    rule: Cow<'static, str>,
}

impl Problem {
    /// The builder setter (snake_case), which is the kebab-case key of resilience.toml.
    pub fn field(&self) -> &'static str {
        self.field
    }
    /// The offending value, formatted.
    pub fn value(&self) -> &str {
        &self.value
    }
    /// The rule it broke, e.g. `must be in (0, 100]`.
    pub fn rule(&self) -> &str {
        &self.rule
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: {}", self.field, self.value, self.rule)
    }
}

impl ConfigError {
    /// A single problem.
    pub fn new(
        field: &'static str,
        value: impl fmt::Display,
        rule: impl Into<Cow<'static, str>>,
    ) -> Self {
        ConfigError {
            problems: vec![Problem {
                field,
                value: value.to_string(),
                rule: rule.into(),
            }],
        }
    }

    /// Every problem found, in setter order.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            p.fmt(f)?;
        }
        Ok(())
    }
}

impl StdError for ConfigError {}

/// Collects the problems of a builder's `build()`.
#[derive(Debug, Default)]
pub(crate) struct Problems(Vec<Problem>);

impl Problems {
    pub(crate) fn check(
        &mut self,
        ok: bool,
        field: &'static str,
        value: impl fmt::Display,
        rule: &'static str,
    ) {
        if !ok {
            self.push(field, value, rule);
        }
    }

    pub(crate) fn push(
        &mut self,
        field: &'static str,
        value: impl fmt::Display,
        rule: impl Into<Cow<'static, str>>,
    ) {
        self.0.push(Problem {
            field,
            value: value.to_string(),
            rule: rule.into(),
        });
    }

    pub(crate) fn extend(&mut self, err: ConfigError) {
        self.0.extend(err.problems);
    }

    pub(crate) fn finish<T>(self, value: T) -> Result<T, ConfigError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(ConfigError { problems: self.0 })
        }
    }
}

/// Formats a duration the way resilience.toml writes it (`500ms`, `1m 30s`).
pub(crate) struct Dur(pub(crate) std::time::Duration);

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::clock::format_duration(self.0))
    }
}

/// A registry has no configuration of the requested name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigurationNotFound {
    name: String,
}

impl ConfigurationNotFound {
    pub(crate) fn new(name: &str) -> Self {
        ConfigurationNotFound {
            name: name.to_owned(),
        }
    }
    /// The configuration name that was asked for.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for ConfigurationNotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "configuration `{}` does not exist", self.name)
    }
}

impl StdError for ConfigurationNotFound {}

/// `default` is the registry's own configuration and cannot be added or removed by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultConfigReserved;

impl fmt::Display for DefaultConfigReserved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "`default` is reserved for the registry's default configuration; set it with `set_default_config`",
        )
    }
}

impl StdError for DefaultConfigReserved {}

#[cfg(test)]
mod tests {
    use super::Dur;
    use std::time::Duration;

    #[test]
    fn durations_print_like_resilience_toml() {
        assert_eq!(Dur(Duration::ZERO).to_string(), "0ms");
        assert_eq!(Dur(Duration::from_millis(500)).to_string(), "500ms");
        assert_eq!(Dur(Duration::from_secs(90)).to_string(), "1m 30s");
        assert_eq!(Dur(Duration::from_secs(3600)).to_string(), "1h");
        assert_eq!(Dur(Duration::from_nanos(1500)).to_string(), "1500ns");
    }
}
