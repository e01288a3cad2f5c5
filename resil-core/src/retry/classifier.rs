//! The retry's classifier: which errors and results a call site retries,
//! how it names them, and how long it waits.

use std::any::Any;
use std::fmt;
use std::time::Duration;

use super::RetryConfig;
use crate::classify::{self, Classify};
use crate::error::Error;

/// Decides, per call site, which errors and results are retried, and how
/// they are named and waited for.
///
/// An error is retried when it is *retryable*: (its kind is in the
/// configuration's `retry_errors`, or `retry_on` accepts it, or neither is
/// set) and its kind is not in `ignore_errors`. Kinds come from `kind_of` for
/// the caller's errors and from [`Error::rejection_kind`] for rejections of
/// inner layers, which `retry_on` never sees: a rejection is retried unless
/// `ignore_errors` lists it or a non-empty `retry_errors` leaves it out.
///
/// A successful value is retried when `retry_on_result` accepts it; before
/// the retry, `consume_result_before_retry` receives it (by value) with the
/// attempt number, on every attempt but the last, sync and async alike.
///
/// The wait is `interval`'s answer when it gives one (a typed interval
/// bi-function: see [`RetryClassifier::interval`]), else the configuration's
/// [`IntervalBiFunction`](super::IntervalBiFunction).
///
/// Everything is a plain `fn` pointer, so a classifier is `Copy` and can be a
/// `const`.
///
/// # Examples
///
/// ```
/// use resil_core::retry::{Retry, RetryClassifier, RetryConfig};
/// use resil_core::clock::{Clock, ManualClock};
/// use resil_core::{Decorators, Error};
/// use std::time::Duration;
///
/// #[derive(Debug)]
/// enum ApiError { Throttled { retry_after: Duration }, BadRequest }
///
/// const API: RetryClassifier<u16, ApiError> = RetryClassifier::new()
///     .retry_on(|e| matches!(e, ApiError::Throttled { .. }))
///     .retry_on_result(|status| *status == 202)
///     .interval(|_, outcome| match outcome {
///         Err(Error::Inner(ApiError::Throttled { retry_after })) => Some(*retry_after),
///         _ => None,
///     });
///
/// let clock = ManualClock::new();
/// let retry = Retry::with_clock("api", RetryConfig::default(), clock.clone());
/// let mut replies = vec![
///     Ok(200),
///     Ok(202),
///     Err(ApiError::Throttled { retry_after: Duration::from_millis(1500) }),
/// ];
/// let api = Decorators::new().with_retry_classified(&retry, API);
/// let status = api.call(|| replies.pop().unwrap());
/// assert_eq!(status.unwrap(), 200);
/// assert_eq!(clock.now().as_duration(), Duration::from_millis(2000)); // 1500 + 500
///
/// let refused = api.call(|| Err(ApiError::BadRequest));
/// assert!(matches!(refused, Err(Error::Inner(ApiError::BadRequest)))); // not retried
/// ```
pub struct RetryClassifier<T, E> {
    pub(super) retry_on: Option<fn(&E) -> bool>,
    pub(super) retry_on_result: Option<fn(&T) -> bool>,
    pub(super) kind_of: Option<fn(&E) -> &'static str>,
    pub(super) consume_result_before_retry: Option<fn(u32, T)>,
    pub(super) interval: Option<IntervalFn<T, E>>,
    pub(super) share_error: Option<fn(&E) -> &dyn Any>,
    pub(super) share_result: Option<fn(&T) -> &dyn Any>,
}

/// A typed interval bi-function: `None` defers to the configuration.
type IntervalFn<T, E> = fn(u32, Result<&T, &Error<E>>) -> Option<Duration>;

fn share<X: Any>(x: &X) -> &dyn Any {
    x
}

impl<T, E> RetryClassifier<T, E> {
    /// Every error is retryable (subject to the configuration's lists), no
    /// result is retried.
    pub const fn new() -> Self {
        RetryClassifier {
            retry_on: None,
            retry_on_result: None,
            kind_of: None,
            consume_result_before_retry: None,
            interval: None,
            share_error: None,
            share_result: None,
        }
    }

    /// Retries only errors that `predicate` accepts (or that `retry_errors` names).
    pub const fn retry_on(mut self, predicate: fn(&E) -> bool) -> Self {
        self.retry_on = Some(predicate);
        self
    }

    /// Retries successful values that `predicate` accepts.
    pub const fn retry_on_result(mut self, predicate: fn(&T) -> bool) -> Self {
        self.retry_on_result = Some(predicate);
        self
    }

    /// Names the kind of each error, for `retry_errors` / `ignore_errors` and events.
    pub const fn kind_of(mut self, kind: fn(&E) -> &'static str) -> Self {
        self.kind_of = Some(kind);
        self
    }

    /// Hands a result that will be retried to `consume` (with the attempt
    /// number, from 1) before the wait, e.g. to return a connection or log the
    /// body; never called for the last attempt's result, which is returned.
    pub const fn consume_result_before_retry(mut self, consume: fn(u32, T)) -> Self {
        self.consume_result_before_retry = Some(consume);
        self
    }

    /// A typed interval bi-function: given the number of the failed attempt
    /// (the first is 1) and its outcome (the rejected value or the error),
    /// returns the wait, or `None` to use the configuration's interval. The
    /// wait returned is waited exactly (no jitter is applied to it).
    pub const fn interval(mut self, f: IntervalFn<T, E>) -> Self {
        self.interval = Some(f);
        self
    }

    pub(super) fn kind(&self, error: &Error<E>) -> Option<&'static str> {
        match error {
            Error::Inner(e) => self.kind_of.map(|k| k(e)),
            other => other.rejection_kind(),
        }
    }

    /// Resilience4j's exception predicate: `(listed OR predicate, or always
    /// if neither) AND NOT ignored`.
    pub(super) fn retryable(
        &self,
        config: &RetryConfig,
        error: &Error<E>,
        kind: Option<&'static str>,
    ) -> bool {
        if classify::listed(&config.ignore_errors, kind) {
            return false;
        }
        let listed = config.retry_errors.is_empty() || classify::listed(&config.retry_errors, kind);
        match (error.inner(), self.retry_on) {
            (Some(e), Some(p)) => p(e) || (!config.retry_errors.is_empty() && listed),
            _ => listed,
        }
    }

    pub(super) fn shared_error<'a>(&self, error: &'a Error<E>) -> Option<&'a dyn Any> {
        match error {
            Error::Inner(e) => self.share_error.map(|s| s(e)),
            Error::CallNotPermitted(r) => Some(r),
            Error::BulkheadFull(r) => Some(r),
            Error::RequestNotPermitted(r) => Some(r),
            Error::Timeout(r) => Some(r),
            Error::MaxRetriesExceeded(r) => Some(r),
            Error::DeadlineExceeded(r) => Some(r),
            Error::FaultInjected(r) => Some(r),
        }
    }
}

impl<T: 'static, E: 'static> RetryClassifier<T, E> {
    /// Shares the caller's errors and rejected results with the
    /// configuration's [`IntervalBiFunction`](super::IntervalBiFunction), which can then read them with
    /// [`RetryOutcome::downcast_error`](super::RetryOutcome::downcast_error) / [`RetryOutcome::downcast_result`](super::RetryOutcome::downcast_result).
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::retry::{IntervalBiFunction, Retry, RetryClassifier, RetryConfig};
    /// use resil_core::clock::{Clock, ManualClock};
    /// use std::time::Duration;
    ///
    /// #[derive(Debug)]
    /// struct Throttled { retry_after: Duration }
    ///
    /// const SHARED: RetryClassifier<(), Throttled> = RetryClassifier::new().downcastable();
    ///
    /// let config = RetryConfig::builder()
    ///     .max_attempts(2)
    ///     .interval_bi_function(IntervalBiFunction::new(|_, outcome| {
    ///         outcome.downcast_error::<Throttled>().map_or(Duration::from_secs(1), |t| t.retry_after)
    ///     }))
    ///     .build()?;
    /// let clock = ManualClock::new();
    /// let retry = Retry::with_clock("api", config, clock.clone());
    /// let _ = resil_core::Decorators::new()
    ///     .with_retry_classified(&retry, SHARED)
    ///     .call(|| Err(Throttled { retry_after: Duration::from_millis(250) }));
    /// assert_eq!(clock.now().as_duration(), Duration::from_millis(250));
    /// # Ok::<(), resil_core::ConfigError>(())
    /// ```
    pub const fn downcastable(mut self) -> Self {
        self.share_error = Some(share::<E>);
        self.share_result = Some(share::<T>);
        self
    }
}

impl<T, E: Classify> RetryClassifier<T, E> {
    /// A classifier that names errors with their [`Classify`] kinds.
    pub const fn classified() -> Self {
        Self::new().kind_of(E::kind)
    }
}

impl<T, E> Default for RetryClassifier<T, E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, E> Clone for RetryClassifier<T, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, E> Copy for RetryClassifier<T, E> {}

impl<T, E> fmt::Debug for RetryClassifier<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryClassifier")
            .field("retry_on", &self.retry_on.is_some())
            .field("retry_on_result", &self.retry_on_result.is_some())
            .field("kind_of", &self.kind_of.is_some())
            .field(
                "consume_result_before_retry",
                &self.consume_result_before_retry.is_some(),
            )
            .field("interval", &self.interval.is_some())
            .field("downcastable", &self.share_error.is_some())
            .finish()
    }
}
