//! Retry: call again when an attempt fails, waiting a while between attempts.
//!
//! A retry makes up to `max_attempts` attempts per call, the first one
//! included (the default 3 is one call and two retries). After each failed
//! attempt it asks whether the failure is worth another attempt:
//!
//! - an **error** is retried when it is *retryable*: its kind is listed in
//!   `retry_errors` or the classifier's `retry_on` predicate accepts it (or
//!   neither is set: then every error is), and its kind is not listed in
//!   `ignore_errors` (ignore always wins). An error that is not retryable ends
//!   the call at once, counted as *failed without retry* whatever attempt it
//!   came at (Resilience4j does the same);
//! - a **result** is retried when the classifier's `retry_on_result`
//!   predicate rejects it (a `202 Accepted` that is not ready yet, say). When
//!   the last attempt's result is still rejected, the call returns it, or,
//!   with `fail_after_max_attempts`, fails with
//!   [`Error::MaxRetriesExceeded`].
//!
//! Between attempts it waits `interval(n)` after the `n`th failure: constant
//! (500 ms by default), exponential, randomized or capped
//! ([`IntervalFunction`]), or a function of the failure itself
//! ([`IntervalBiFunction`]), which can honour a `Retry-After` exactly.
//! Synchronous calls block in the clock's [`sleep`](Clock::sleep); async calls
//! await its [`sleep_async`](Clock::sleep_async), so a
//! [`ManualClock`](crate::clock::ManualClock) or paused tokio time runs
//! backoffs instantly in tests.
//!
//! Retries compose outermost in a decorator chain
//! (`Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(call)))))`): the
//! [`decorate`](Retry::decorate) forms take a call that already returns
//! [`Error`], and rejections of the inner layers are classified by their kind
//! names (`"CallNotPermitted"`, `"BulkheadFull"`, `"RequestNotPermitted"`,
//! `"Timeout"`, `"MaxRetriesExceeded"`). Like every other error in
//! Resilience4j they are retried by default; list them in `ignore_errors`
//! (or list only what you want in `retry_errors`) to fail fast instead. The
//! `retry_on` predicate sees only the caller's own error `E`.
//!
//! A retry keeps no per-call state on the heap: the attempt counter lives in
//! the call's stack frame (or in its future), and a call that succeeds at
//! once costs one increment of a per-thread counter cell (no locked
//! instruction, no allocation). A panic in an attempt is not retried: the
//! call is counted as failed (kind `"panic"`) and the panic resumes. An async
//! call dropped while it waits or while an attempt runs stops there; its
//! finished attempts stay counted in [`RetryMetrics::number_of_total_calls`]
//! and the call itself is counted in none of the four call counters.
//!
//! # Differences from Resilience4j 2.2
//!
//! - Results that exhaust the attempts with `fail_after_max_attempts` fail
//!   once, with one ERROR event and one failed call (2.2's sync
//!   decorators count them twice).
//! - `number_of_total_calls` counts the attempts made, exactly (2.2 adds
//!   one when results exhaust the attempts).
//! - `consume_result_before_retry` runs before each retry and never for the
//!   last result, in sync and async calls alike (2.2's async path ran it on the last
//!   attempt only). It takes the result by
//!   value, so it runs after the interval function has seen it.
//! - The last interval setter wins, also on a builder made from a base
//!   configuration (2.2 throws there, which breaks Spring's inheritance).
//! - Waits are [`Duration`]s: no negative interval can stop the retries,
//!   and `wait_duration` keeps sub-millisecond precision. A zero wait retries
//!   without sleeping.
//! - Creating a future cannot throw, so 2.2's lost synchronous throw from the
//!   supplier has no counterpart; panics are counted as failed calls (2.2 lets
//!   `java.lang.Error` pass uncounted).
//!
//! # Examples
//!
//! ```
//! use resil_core::clock::{Clock, ManualClock};
//! use resil_core::retry::{Retry, RetryConfig};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let retry = Retry::with_clock("inventory-query", RetryConfig::default(), clock.clone());
//!
//! let mut calls = 0;
//! let stock = retry.call(|| {
//!     calls += 1;
//!     if calls < 3 { Err("connection refused") } else { Ok(42) }
//! });
//! assert_eq!(stock, Ok(42));
//! assert_eq!(clock.now().as_duration(), Duration::from_millis(1000)); // 500 ms + 500 ms
//! assert_eq!(retry.metrics().number_of_successful_calls_with_retry_attempt(), 1);
//! ```
//!
//! Classify per call site with a `const` [`RetryClassifier`]:
//!
//! ```
//! use resil_core::retry::{Retry, RetryClassifier, RetryConfig};
//! use resil_core::Error;
//!
//! #[derive(Debug, PartialEq)]
//! enum DbError { Deadlock, NotFound }
//!
//! const RETRY_DEADLOCKS: RetryClassifier<u32, DbError> =
//!     RetryClassifier::new().retry_on(|e| matches!(e, DbError::Deadlock));
//!
//! let retry = Retry::new("db", RetryConfig::builder().wait_duration(std::time::Duration::ZERO).build()?);
//! let mut replies = vec![Err(DbError::NotFound), Err(DbError::Deadlock)];
//! let r = retry.call_with(&RETRY_DEADLOCKS, || replies.pop().unwrap());
//! assert_eq!(r, Err(Error::Inner(DbError::NotFound))); // the deadlock was retried, not this
//! assert_eq!(retry.metrics().number_of_failed_calls_without_retry_attempt(), 1);
//! # Ok::<(), resil_core::ConfigError>(())
//! ```

mod classifier;
mod config;
mod core;
mod counter;
mod error;
mod event;
mod future;
mod interval;
mod metrics;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

pub use self::classifier::RetryClassifier;
pub use self::config::{RetryConfig, RetryConfigBuilder};
pub use self::error::MaxRetriesExceeded;
pub use self::event::{RetryEvent, RetryEventType};
pub use self::future::RetryFuture;
pub use self::interval::{IntervalBiFunction, RetryOutcome};
pub use self::metrics::RetryMetrics;
pub use crate::interval::IntervalFunction;

pub(crate) use self::core::{CallState, Inner};
use self::core::{Counters, FirstAttempt, Next};
use crate::clock::{Clock, SharedClock, Sleep, SystemClock};
use crate::error::Error;
use crate::event::EventPublisher;
use crate::future::InnerErrors;
use crate::live::{ChangeRefused, Live, same_printed};
use crate::sync::{AtomicU64, Ordering};
use crate::{Name, Tags};

/// A retry. Cheap to clone: clones share one retry (its configuration,
/// counters and events).
///
/// See the [module documentation](self) for how attempts are decided.
#[derive(Clone)]
pub struct Retry {
    inner: Arc<Inner>,
}

impl Retry {
    /// A retry with Resilience4j's defaults on the system clock.
    pub fn of_defaults(name: impl Into<Name>) -> Self {
        Self::new(name, RetryConfig::default())
    }

    /// A retry on the system clock.
    pub fn new(name: impl Into<Name>, config: RetryConfig) -> Self {
        Self::with_clock(name, config, SystemClock::new())
    }

    /// A retry on `clock` ([`ManualClock`](crate::clock::ManualClock) in tests,
    /// [`TokioClock`](crate::clock::TokioClock) under paused tokio time).
    pub fn with_clock(name: impl Into<Name>, config: RetryConfig, clock: impl Clock) -> Self {
        Self::with_parts(name.into(), config, clock.into_shared(), Tags::default())
    }

    pub(crate) fn with_parts(
        name: Name,
        config: RetryConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        Retry {
            inner: Arc::new(Inner {
                events: EventPublisher::new(name.clone(), clock.clone()),
                name,
                config: Live::new(config),
                clock,
                tags,
                counters: Counters::new(),
            }),
        }
    }

    /// The retry's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The retry's configuration.
    pub fn config(&self) -> &RetryConfig {
        self.inner.config.load()
    }

    /// Applies `config` in place. A call takes the retry's settings at its
    /// first failed attempt, when they start to matter: calls already
    /// retrying finish under the settings they had, and every other call
    /// follows the new ones. The counters are kept.
    ///
    /// # Errors
    ///
    /// [`ChangeRefused`] when the retry already holds [`MAX_VERSIONS`](crate::live::MAX_VERSIONS)
    /// distinct configurations; it is unchanged then.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::retry::{Retry, RetryConfig};
    ///
    /// let retry = Retry::of_defaults("inventory-query");
    /// let copy = retry.clone();
    /// retry.change_config(RetryConfig::builder().max_attempts(5).build()?)?;
    /// assert_eq!(copy.config().max_attempts(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn change_config(&self, config: RetryConfig) -> Result<(), ChangeRefused> {
        self.inner.config.store(config, same_printed).map(|_| ())
    }

    /// Whether [`Retry::change_config`] would accept `config`.
    pub fn can_change_config(&self, config: &RetryConfig) -> Result<(), ChangeRefused> {
        self.inner.config.fits(|v| same_printed(v, config))
    }

    /// The retry's tags (registry tags overlaid by instance tags).
    pub fn tags(&self) -> &BTreeMap<String, String> {
        &self.inner.tags
    }

    /// The clock the retry sleeps on.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// Subscriptions and the recent-events buffer.
    pub fn event_publisher(&self) -> &EventPublisher<RetryEvent> {
        &self.inner.events
    }

    /// A snapshot of the counters.
    pub fn metrics(&self) -> RetryMetrics {
        let c = &self.inner.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let successful_without_retry = c.successful_without_retry.sum();
        let successful_with_retry = load(&c.successful_with_retry);
        let failed_without_retry = load(&c.failed_without_retry);
        let failed_with_retry = load(&c.failed_with_retry);
        RetryMetrics {
            successful_without_retry,
            successful_with_retry,
            failed_without_retry,
            failed_with_retry,
            total_attempts: [
                successful_with_retry,
                failed_without_retry,
                failed_with_retry,
                load(&c.retries),
            ]
            .into_iter()
            .fold(successful_without_retry, u64::saturating_add),
        }
    }

    /// Runs `f` until it succeeds, fails with an error that is not retried, or
    /// has made `max_attempts` attempts, sleeping on the clock in between.
    /// Every `Err` is retryable unless `retry_errors` / `ignore_errors` say
    /// otherwise (they need kind names: classify with [`Retry::call_with`]).
    ///
    /// A panic in `f` is counted as a failed call and resumed, not retried.
    ///
    /// # Errors
    ///
    /// [`Error::Inner`] with the last attempt's error.
    #[inline]
    pub fn call<T, E, F>(&self, mut f: F) -> Result<T, Error<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        self.decorate(&RetryClassifier::new(), || f().map_err(Error::Inner))
    }

    /// Like [`Retry::call`], deciding what is retried with `classifier`.
    ///
    /// # Errors
    ///
    /// [`Error::Inner`] with the last attempt's error, or
    /// [`Error::MaxRetriesExceeded`] when results exhausted the attempts and
    /// `fail_after_max_attempts` is set.
    #[inline]
    pub fn call_with<T, E, F>(
        &self,
        classifier: &RetryClassifier<T, E>,
        mut f: F,
    ) -> Result<T, Error<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        self.decorate(classifier, || f().map_err(Error::Inner))
    }

    /// Retries a call that already returns `resil::Error` (the inner layers
    /// of a decorator chain); rejections are classified by their kind names.
    ///
    /// # Errors
    ///
    /// The last attempt's error, or [`Error::MaxRetriesExceeded`] (see
    /// [`Retry::call_with`]).
    #[inline]
    pub fn decorate<T, E, F>(
        &self,
        classifier: &RetryClassifier<T, E>,
        mut f: F,
    ) -> Result<T, Error<E>>
    where
        F: FnMut() -> Result<T, Error<E>>,
    {
        // The first attempt runs without the call state, which the retry
        // loop keeps in memory; a panic in it is still counted, by the guard.
        let guard = FirstAttempt(&self.inner);
        let first = f();
        guard.disarm();
        match first {
            Ok(value) if classifier.retry_on_result.is_none_or(|p| !p(&value)) => {
                self.inner.counters.successful_without_retry.increment();
                Ok(value)
            }
            first => self.retry_after_first(classifier, first, f),
        }
    }

    /// The rest of [`Retry::decorate`] after a first attempt that failed (or
    /// whose result was rejected).
    #[inline(never)]
    fn retry_after_first<T, E, F>(
        &self,
        classifier: &RetryClassifier<T, E>,
        first: Result<T, Error<E>>,
        mut f: F,
    ) -> Result<T, Error<E>>
    where
        F: FnMut() -> Result<T, Error<E>>,
    {
        let mut call = CallState::new(&*self.inner);
        let mut result = first;
        let mut next = call.after_failure(classifier, &result);
        loop {
            match next {
                Next::Return => return result,
                Next::Exhausted(max) => return Err(self.inner.exhausted(max)),
                Next::Retry { attempt, wait } => {
                    // Without a consumer the result is dropped where it lies,
                    // when the next attempt's result replaces it.
                    if let Some(consume) = classifier.consume_result_before_retry
                        && let Ok(value) = result
                    {
                        consume(attempt, value);
                    }
                    if !wait.is_zero() {
                        self.inner.clock.sleep(wait);
                    }
                }
            }
            result = f();
            next = call.next(classifier, &result);
        }
    }

    /// Runs the future that `f` returns until it succeeds, fails with an error
    /// that is not retried, or has made `max_attempts` attempts, awaiting the
    /// clock's `sleep_async` in between.
    ///
    /// Each attempt calls `f` again for a fresh future. Dropping the returned
    /// future drops the attempt or the wait in progress; nothing else is held.
    /// Its future is `Send` whenever `f` and the futures it returns are.
    ///
    /// # Errors
    ///
    /// As [`Retry::call`].
    pub fn call_async<T, E, F, Fut>(
        &self,
        mut f: F,
    ) -> RetryFuture<'_, T, E, impl FnMut() -> InnerErrors<Fut>, InnerErrors<Fut>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.retry_future(const { &RetryClassifier::new() }, move || {
            InnerErrors::new(f())
        })
    }

    /// Like [`Retry::call_async`], deciding what is retried with `classifier`.
    ///
    /// # Errors
    ///
    /// As [`Retry::call_with`].
    pub fn call_async_with<'a, T, E, F, Fut>(
        &'a self,
        classifier: &'a RetryClassifier<T, E>,
        mut f: F,
    ) -> RetryFuture<'a, T, E, impl FnMut() -> InnerErrors<Fut>, InnerErrors<Fut>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.retry_future(classifier, move || InnerErrors::new(f()))
    }

    /// The async form of [`Retry::decorate`].
    ///
    /// Creating the future cannot fail in Rust, so Resilience4j's quirk of a
    /// synchronous throw escaping the first attempt has no equivalent; a
    /// panic in `f` is a panic in an attempt.
    ///
    /// # Errors
    ///
    /// As [`Retry::decorate`].
    pub async fn decorate_async<T, E, F, Fut>(
        &self,
        classifier: &RetryClassifier<T, E>,
        mut f: F,
    ) -> Result<T, Error<E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Error<E>>>,
    {
        let mut call = self.start_async_call();
        loop {
            let attempt = call.attempt(f()).await;
            let wait = match call.settle(classifier, attempt) {
                Ok(result) => return result,
                Err(wait) => wait,
            };
            call.wait(wait).await;
        }
    }

    /// The state machine of [`Retry::call_async`]: `f` is called for the
    /// first attempt's future now (as the breaker's and the bulkhead's async
    /// calls do); the attempt runs when the future is polled.
    fn retry_future<'a, T, E, F, Fut>(
        &'a self,
        classifier: &'a RetryClassifier<T, E>,
        mut f: F,
    ) -> RetryFuture<'a, T, E, F, Fut>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Error<E>>>,
    {
        let future = f();
        RetryFuture::new(self.start_async_call(), classifier, f, future)
    }

    /// The state of one async call, for loops that make their own attempts
    /// (the decorator chain, whose attempts borrow what a closure could not
    /// lend): after each attempt, [`CallState::settle`].
    #[inline]
    pub(crate) fn start_async_call(&self) -> CallState<&Inner> {
        Self::async_state(&*self.inner)
    }

    /// Starts one async call whose attempts the caller makes itself: a
    /// future that must not borrow the retry, and cannot call a closure
    /// for each attempt (a `tower` service's response future readies and
    /// calls its service again for each one). See [`RetryCall`].
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::retry::{Retry, RetryClassifier};
    /// use resil_core::Error;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let retry = Retry::of_defaults("quote");
    /// let classifier = RetryClassifier::new();
    /// let mut call = retry.start_async_call_owned();
    /// let mut attempts = 0;
    /// let result = loop {
    ///     attempts += 1;
    ///     let mut attempt = std::pin::pin!(async move {
    ///         if attempts < 3 { Err(Error::Inner("busy")) } else { Ok(attempts) }
    ///     });
    ///     let outcome = std::future::poll_fn(|cx| call.poll_attempt(attempt.as_mut(), cx)).await;
    ///     match call.settle(&classifier, outcome) {
    ///         Ok(result) => break result,
    ///         Err(wait) => call.sleep(wait).await,
    ///     }
    /// };
    /// assert_eq!(result, Ok(3));
    /// assert_eq!(retry.metrics().number_of_successful_calls_with_retry_attempt(), 1);
    /// # }
    /// ```
    pub fn start_async_call_owned(&self) -> RetryCall {
        RetryCall {
            state: Self::async_state(Arc::clone(&self.inner)),
        }
    }

    fn async_state<R: Deref<Target = Inner>>(inner: R) -> CallState<R> {
        let call = CallState::new(inner);
        // Async: an unwind counts as the call's panic only while an attempt
        // is being polled (see `CallState::attempt`).
        call.in_attempt
            .store(false, std::sync::atomic::Ordering::Relaxed);
        call
    }
}

impl fmt::Debug for Retry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry")
            .field("name", &self.inner.name)
            .field("max_attempts", &self.inner.config.load().max_attempts)
            .finish_non_exhaustive()
    }
}

/// One async call of a [`Retry`] whose attempts the caller makes itself
/// (see [`Retry::start_async_call_owned`]): Resilience4j's `Retry.Context`,
/// holding a clone of the retry.
///
/// Poll each attempt with [`RetryCall::poll_attempt`] (so that a panic in it
/// counts as the call's), then pass its outcome to [`RetryCall::settle`]:
/// it returns the call's result, or the wait before the next attempt.
/// Dropped before a result, the call is cancelled and counts nothing (or, while
/// an attempt panics, one failure).
pub struct RetryCall {
    state: CallState<Arc<Inner>>,
}

impl RetryCall {
    /// Polls an attempt, marked as the call's own while it is polled.
    #[inline]
    pub fn poll_attempt<F: Future>(
        &self,
        attempt: Pin<&mut F>,
        cx: &mut Context<'_>,
    ) -> Poll<F::Output> {
        self.state.poll_attempt(attempt, cx)
    }

    /// Counts an attempt's outcome: `Ok` with the call's result (retried or
    /// not, the events and metrics are published), or `Err` with the wait
    /// before the next attempt.
    ///
    /// # Errors
    ///
    /// `Err(wait)` when the call must be tried again after `wait`.
    #[inline]
    pub fn settle<T, E>(
        &mut self,
        classifier: &RetryClassifier<T, E>,
        result: Result<T, Error<E>>,
    ) -> Result<Result<T, Error<E>>, Duration> {
        self.state.settle(classifier, result)
    }

    /// A sleep of `wait` on the retry's clock, for the wait before the next
    /// attempt.
    pub fn sleep(&self, wait: Duration) -> Sleep {
        self.state.inner.clock.sleep_async(wait)
    }

    /// The failed attempts so far.
    pub fn attempts(&self) -> u32 {
        self.state.attempts
    }
}

impl fmt::Debug for RetryCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryCall")
            .field("retry", &self.state.inner.name)
            .field("attempts", &self.state.attempts)
            .finish_non_exhaustive()
    }
}
