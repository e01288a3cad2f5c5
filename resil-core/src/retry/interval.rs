//! [`IntervalBiFunction`]: the wait as a function of the attempt and of what it produced.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::interval::IntervalFunction;

/// What a failed attempt produced, as an [`IntervalBiFunction`] sees it:
/// an error (with its kind name when known) or a result that the result
/// predicate rejected.
///
/// The value itself is shared as `&dyn Any` when it can be: a rejection of an
/// inner layer ([`CallNotPermitted`](crate::circuit_breaker::CallNotPermitted),
/// [`BulkheadFull`](crate::bulkhead::BulkheadFull), ...) always is; the caller's
/// error `E` and result `T` are when the call's
/// [`RetryClassifier`](super::RetryClassifier) was made
/// [`downcastable`](super::RetryClassifier::downcastable) (which needs
/// `'static` types). Otherwise the downcasts return `None` and the kind name is
/// what there is to go on.
///
/// # Examples
///
/// ```
/// use resil_core::retry::RetryOutcome;
///
/// #[derive(Debug)]
/// struct Throttled { retry_after_ms: u64 }
///
/// let err = Throttled { retry_after_ms: 1200 };
/// let outcome = RetryOutcome::of_error(Some("Throttled"), Some(&err));
/// assert!(outcome.is_error());
/// assert_eq!(outcome.error_kind(), Some("Throttled"));
/// assert_eq!(outcome.downcast_error::<Throttled>().map(|t| t.retry_after_ms), Some(1200));
/// assert!(outcome.downcast_result::<u32>().is_none());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RetryOutcome<'a> {
    error: bool,
    kind: Option<&'static str>,
    value: Option<&'a dyn Any>,
}

impl<'a> RetryOutcome<'a> {
    /// An attempt that failed with an error of kind `kind`, shared as `error` when possible.
    pub fn of_error(kind: Option<&'static str>, error: Option<&'a dyn Any>) -> Self {
        RetryOutcome {
            error: true,
            kind,
            value: error,
        }
    }

    /// An attempt whose result the result predicate rejected, shared as `value` when possible.
    pub fn of_result(value: Option<&'a dyn Any>) -> Self {
        RetryOutcome {
            error: false,
            kind: None,
            value,
        }
    }

    /// Returns `true` if the attempt failed with an error (`false`: a rejected result).
    pub fn is_error(&self) -> bool {
        self.error
    }

    /// The error's kind name when known (a `Classify` kind or a rejection's name).
    pub fn error_kind(&self) -> Option<&'static str> {
        self.kind
    }

    /// The error, if the attempt failed with one of type `X` and it was shared.
    pub fn downcast_error<X: Any>(&self) -> Option<&'a X> {
        if self.error {
            self.value?.downcast_ref()
        } else {
            None
        }
    }

    /// The rejected result, if it is of type `X` and it was shared.
    pub fn downcast_result<X: Any>(&self) -> Option<&'a X> {
        if self.error {
            None
        } else {
            self.value?.downcast_ref()
        }
    }
}

type BiFn = dyn Fn(u32, &RetryOutcome<'_>) -> Duration + Send + Sync;

/// The wait before the next attempt as a function of the failed attempt's
/// number (1 for the first wait) and of its [`RetryOutcome`]
/// (Resilience4j's `IntervalBiFunction`).
///
/// Whatever it returns is waited exactly: a `Retry-After` carried by an
/// error is not shortened by jitter (randomize in the function if you want
/// jitter on the other branches). A `Duration` cannot be negative, so there is
/// no equivalent of Resilience4j's "a negative interval stops retrying";
/// stop retrying by classifying the error as not retryable.
///
/// # Examples
///
/// ```
/// use resil_core::retry::{IntervalBiFunction, IntervalFunction, RetryOutcome};
/// use std::time::Duration;
///
/// #[derive(Debug)]
/// enum ApiError { Throttled { retry_after: Duration }, Unavailable }
///
/// let backoff = IntervalFunction::of_exponential_random_backoff(Duration::from_millis(100), 2.0, 0.5)?;
/// let wait = IntervalBiFunction::new(move |attempt, outcome| {
///     match outcome.downcast_error::<ApiError>() {
///         Some(ApiError::Throttled { retry_after }) => *retry_after,
///         _ => backoff.apply(attempt),
///     }
/// });
/// let throttled = ApiError::Throttled { retry_after: Duration::from_millis(1234) };
/// assert_eq!(wait.apply(3, &RetryOutcome::of_error(None, Some(&throttled))), Duration::from_millis(1234));
/// let first = wait.apply(1, &RetryOutcome::of_error(None, Some(&ApiError::Unavailable)));
/// assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(150));
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct IntervalBiFunction(Repr);

#[derive(Clone)]
enum Repr {
    Fixed(Duration),
    Function(IntervalFunction),
    Custom(Arc<BiFn>),
}

impl IntervalBiFunction {
    /// Resilience4j's default: a constant 500 ms.
    pub fn of_defaults() -> Self {
        IntervalBiFunction(Repr::Function(IntervalFunction::of_defaults()))
    }

    /// The same wait after every attempt; zero retries at once. Unlike
    /// [`IntervalFunction::of`], any duration is accepted, and it is kept to
    /// the nanosecond (Resilience4j truncates `waitDuration` to milliseconds).
    pub fn of_duration(wait: Duration) -> Self {
        IntervalBiFunction(Repr::Fixed(wait))
    }

    /// A function of the attempt alone (Resilience4j's `ofIntervalFunction`).
    pub fn of_interval_function(f: IntervalFunction) -> Self {
        IntervalBiFunction(Repr::Function(f))
    }

    /// Any function of the attempt and its outcome.
    pub fn new<F>(f: F) -> Self
    where
        F: Fn(u32, &RetryOutcome<'_>) -> Duration + Send + Sync + 'static,
    {
        IntervalBiFunction(Repr::Custom(Arc::new(f)))
    }

    /// The wait after the `attempt`th failed attempt (counting from 1) that produced `outcome`.
    pub fn apply(&self, attempt: u32, outcome: &RetryOutcome<'_>) -> Duration {
        match &self.0 {
            Repr::Fixed(d) => *d,
            Repr::Function(f) => f.apply(attempt),
            Repr::Custom(f) => f(attempt, outcome),
        }
    }

    /// The interval function this was made from, if any.
    pub fn as_interval_function(&self) -> Option<&IntervalFunction> {
        match &self.0 {
            Repr::Function(f) => Some(f),
            _ => None,
        }
    }

    /// The constant wait, if this function is one.
    pub fn as_constant(&self) -> Option<Duration> {
        match &self.0 {
            Repr::Fixed(d) => Some(*d),
            Repr::Function(f) => f.as_constant(),
            Repr::Custom(_) => None,
        }
    }

    /// The longest wait [`apply`](Self::apply) can return for `attempt`
    /// ([`IntervalFunction::largest`]); `None` for a function of the
    /// outcome or a custom one, which nothing bounds.
    pub fn largest(&self, attempt: u32) -> Option<Duration> {
        match &self.0 {
            Repr::Fixed(d) => Some(*d),
            Repr::Function(f) => f.largest(attempt),
            Repr::Custom(_) => None,
        }
    }

    /// Whether [`IntervalBiFunction::apply`] looks at the outcome (only a
    /// function made with [`IntervalBiFunction::new`] does).
    pub(crate) fn reads_outcome(&self) -> bool {
        matches!(self.0, Repr::Custom(_))
    }
}

impl Default for IntervalBiFunction {
    fn default() -> Self {
        Self::of_defaults()
    }
}

impl From<IntervalFunction> for IntervalBiFunction {
    fn from(f: IntervalFunction) -> Self {
        Self::of_interval_function(f)
    }
}

impl fmt::Debug for IntervalBiFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Fixed(d) => write!(f, "Fixed({d:?})"),
            Repr::Function(func) => func.fmt(f),
            Repr::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}
