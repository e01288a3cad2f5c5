//! How a finished call counts: the classifier's predicates and the result
//! transitions.

use std::fmt;
use std::time::Duration;

use super::CircuitBreakerConfig;
use super::core::Verdict;
use crate::classify::{self, Classify};
use crate::clock::Nanos;
use crate::error::Error;

/// Decides whether a finished call is a success, a recorded failure or ignored.
///
/// Errors are classified first by the breaker's configuration lists
/// (`ignore_errors`, then `record_errors`, by kind name) and by the
/// predicates here: an error is ignored when its kind is listed in
/// `ignore_errors` or the `ignore` predicate accepts it; otherwise it is a
/// failure when nothing restricts recording (no `record_errors`, no `record`
/// predicate), when its kind is listed in `record_errors`, or when the
/// `record` predicate accepts it; otherwise it counts as a success. A
/// successful value is a failure when `record_result` accepts it.
///
/// Predicates see the caller's error `E`; rejections from inner layers of a
/// chain (`Timeout`, `BulkheadFull`, ...) are classified by their kind names
/// only. Everything is a plain `fn` pointer, so a classifier is `Copy` and can
/// be a `const`.
///
/// # Examples
///
/// ```
/// use resil_core::Decorators;
/// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerClassifier};
///
/// #[derive(Debug)]
/// enum DbError { NotFound, Unavailable }
///
/// const CLASSIFIER: CircuitBreakerClassifier<u32, DbError> =
///     CircuitBreakerClassifier::new().ignore(|e| matches!(e, DbError::NotFound));
///
/// let cb = CircuitBreaker::of_defaults("db");
/// let classified = Decorators::new().with_circuit_breaker_classified(&cb, CLASSIFIER);
/// let _ = classified.call(|| Err::<u32, _>(DbError::NotFound));
/// let _ = classified.call(|| Err::<u32, _>(DbError::Unavailable));
/// assert_eq!(cb.metrics().number_of_buffered_calls(), 1);
/// ```
pub struct CircuitBreakerClassifier<T, E> {
    pub(super) record: Option<fn(&E) -> bool>,
    pub(super) ignore: Option<fn(&E) -> bool>,
    pub(super) record_result: Option<fn(&T) -> bool>,
    pub(super) kind: Option<fn(&E) -> &'static str>,
    pub(super) transition_on_result: Option<TransitionOnResult<T, E>>,
}

/// Resilience4j's `transitionOnResult`, as a plain function.
pub type TransitionOnResult<T, E> = fn(Result<&T, &Error<E>>) -> TransitionCheckResult;

impl<T, E> CircuitBreakerClassifier<T, E> {
    /// Every error is a failure, every value a success.
    pub const fn new() -> Self {
        CircuitBreakerClassifier {
            record: None,
            ignore: None,
            record_result: None,
            kind: None,
            transition_on_result: None,
        }
    }

    /// Records only errors that `predicate` accepts (or that `record_errors` names).
    pub const fn record(mut self, predicate: fn(&E) -> bool) -> Self {
        self.record = Some(predicate);
        self
    }

    /// Ignores errors that `predicate` accepts.
    pub const fn ignore(mut self, predicate: fn(&E) -> bool) -> Self {
        self.ignore = Some(predicate);
        self
    }

    /// Records successful values that `predicate` accepts as failures.
    pub const fn record_result(mut self, predicate: fn(&T) -> bool) -> Self {
        self.record_result = Some(predicate);
        self
    }

    /// Names the kind of each error, for `record_errors` / `ignore_errors`.
    pub const fn kind_of(mut self, kind: fn(&E) -> &'static str) -> Self {
        self.kind = Some(kind);
        self
    }

    /// Lets a result move CLOSED to OPEN directly (Resilience4j's
    /// `transitionOnResult`); evaluated after every recorded or successful
    /// call (Resilience4j 2.2 skips it for plain successes and for results
    /// recorded as failures).
    pub const fn transition_on_result(mut self, f: TransitionOnResult<T, E>) -> Self {
        self.transition_on_result = Some(f);
        self
    }

    /// The verdict on `result`: a value inline (the healthy path), an error
    /// out of line.
    #[inline]
    pub(super) fn classify(
        &self,
        config: &CircuitBreakerConfig,
        result: &Result<T, Error<E>>,
    ) -> Verdict {
        match result {
            Ok(value) => match self.record_result {
                Some(p) if p(value) => Verdict::Failure(Some("RecordedResult")),
                _ => Verdict::Success,
            },
            Err(error) => self.classify_error(config, error),
        }
    }

    #[inline(never)]
    fn classify_error(&self, config: &CircuitBreakerConfig, error: &Error<E>) -> Verdict {
        let inner = error.inner();
        let kind = match (inner, self.kind) {
            (Some(e), Some(k)) => Some(k(e)),
            (Some(_), None) => None,
            (None, _) => error.rejection_kind(),
        };
        let ignored = classify::listed(&config.ignore_errors, kind)
            || matches!((inner, self.ignore), (Some(e), Some(p)) if p(e));
        if ignored {
            return Verdict::Ignored(kind);
        }
        let restricted = !config.record_errors.is_empty() || self.record.is_some();
        let recorded = !restricted
            || classify::listed(&config.record_errors, kind)
            || matches!((inner, self.record), (Some(e), Some(p)) if p(e))
            || (inner.is_none() && config.record_errors.is_empty());
        if recorded {
            Verdict::Failure(kind)
        } else {
            Verdict::Success
        }
    }
}

impl<T, E: Classify> CircuitBreakerClassifier<T, E> {
    /// A classifier that names errors with their [`Classify`] kinds.
    pub const fn classified() -> Self {
        Self::new().kind_of(E::kind)
    }
}

impl<T, E> Default for CircuitBreakerClassifier<T, E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, E> Clone for CircuitBreakerClassifier<T, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, E> Copy for CircuitBreakerClassifier<T, E> {}

impl<T, E> fmt::Debug for CircuitBreakerClassifier<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerClassifier")
            .field("record", &self.record.is_some())
            .field("ignore", &self.ignore.is_some())
            .field("record_result", &self.record_result.is_some())
            .field("kind", &self.kind.is_some())
            .field("transition_on_result", &self.transition_on_result.is_some())
            .finish()
    }
}

/// What a result asks of a CLOSED breaker (Resilience4j's `TransitionCheckResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransitionCheckResult {
    /// Nothing.
    #[default]
    NoTransition,
    /// Open with the next wait of the open-state interval function (Resilience4j
    /// 2.2 throws here, after which the breaker never trips again).
    TransitionToOpen,
    /// Open for exactly this long.
    TransitionToOpenFor(Duration),
    /// Open until this point of the breaker's clock.
    TransitionToOpenUntil(Nanos),
}
