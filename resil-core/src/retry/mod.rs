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
//! Retries compose outermost in a chain
//! (`Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(call)))))`, see
//! [`chain`](crate::chain)): the layers inside it fail with [`Error`], and
//! rejections of the inner layers are classified by their kind
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
//! - Waits are [`Duration`](std::time::Duration)s: no negative interval can stop the retries,
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
//! Classify per call site with a `const` [`RetryClassifier`], given to the
//! retry's layer ([`Decorators`](crate::Decorators), the attributes, a
//! [`chain::Stack`](crate::chain::Stack)):
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
//! let r = resil_core::Decorators::new()
//!     .with_retry_classified(&retry, RETRY_DEADLOCKS)
//!     .call(|| replies.pop().unwrap());
//! assert_eq!(r, Err(Error::Inner(DbError::NotFound))); // the deadlock was retried, not this
//! assert_eq!(retry.metrics().number_of_failed_calls_without_retry_attempt(), 1);
//! # Ok::<(), resil_core::ConfigError>(())
//! ```

mod budget;
mod classifier;
mod config;
mod core;
mod counter;
mod event;
mod fleet;
mod interval;
mod layer;
mod metrics;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

pub use self::budget::{
    RetryBudget, RetryBudgetConfig, RetryBudgetConfigBuilder, RetryBudgetMetrics,
};
pub use self::classifier::RetryClassifier;
pub use self::config::{RetryConfig, RetryConfigBuilder};
pub use self::event::{RetryEvent, RetryEventType};
pub use self::layer::{RetryAttempt, RetryNode, RetryPart};
pub use crate::rejection::MaxRetriesExceeded;

pub use self::interval::{IntervalBiFunction, RetryOutcome};
pub use self::metrics::RetryMetrics;
use crate::chain::{Lift, Stack};
use crate::fault::FaultPart;
pub use crate::interval::IntervalFunction;

use self::core::Counters;
#[doc(hidden)]
pub use self::core::Inner;
use crate::clock::{Clock, SharedClock, SystemClock};
use crate::error::Error;
use crate::event::EventPublisher;
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
                quiet: std::sync::OnceLock::new(),
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

    /// Shows `watcher` each call that succeeds at its first attempt, with
    /// its time on the retry's clock, while `gate` is set.
    ///
    /// Those calls publish no event (as Resilience4j's retry publishes
    /// none), yet a record of every call needs them: resil's recorder is
    /// such a watcher, its gate whether a recording is on. A retry has at
    /// most one watcher, for as long as it lives: `false` (and `watcher`
    /// dropped) when it has one already. With none, or its gate cleared,
    /// such a call pays one load more; a watcher's panic is caught.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use resil_core::retry::Retry;
    ///
    /// static WATCHING: AtomicBool = AtomicBool::new(true);
    /// let retry = Retry::of_defaults("inventory-query");
    /// let seen = Arc::new(AtomicU32::new(0));
    /// let count = seen.clone();
    /// assert!(retry.watch_quiet_successes(&WATCHING, move |_at| {
    ///     count.fetch_add(1, Ordering::Relaxed);
    /// }));
    /// retry.call(|| Ok::<_, std::io::Error>(1))?;
    /// WATCHING.store(false, Ordering::Relaxed);
    /// retry.call(|| Ok::<_, std::io::Error>(2))?;
    /// assert_eq!(seen.load(Ordering::Relaxed), 1);
    /// # Ok::<(), resil_core::Error<std::io::Error>>(())
    /// ```
    pub fn watch_quiet_successes(
        &self,
        gate: &'static std::sync::atomic::AtomicBool,
        watcher: impl Fn(std::time::SystemTime) + Send + Sync + 'static,
    ) -> bool {
        self.inner
            .quiet
            .set(self::core::Quiet {
                gate,
                watcher: Box::new(watcher),
            })
            .is_ok()
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
    /// otherwise (they need kind names: classify with
    /// [`Decorators::with_retry_classified`](crate::Decorators::with_retry_classified)).
    ///
    /// A panic in `f` is counted as a failed call and resumed, not retried.
    ///
    /// # Errors
    ///
    /// [`Error::Inner`] with the last attempt's error.
    #[inline]
    pub fn call<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        Stack::new()
            .retry(self.part(RetryClassifier::new()))
            .fault(FaultPart::global(self.name()))
            .call(Lift(f))
    }

    /// Runs the future that `f` returns until it succeeds, fails with an error
    /// that is not retried, or has made `max_attempts` attempts, awaiting the
    /// clock's `sleep_async` in between.
    ///
    /// `f` is called for the first attempt's future now (as the breaker's
    /// and the bulkhead's async calls do), and again for each attempt after
    /// it. Dropping the returned future drops the attempt or the wait in
    /// progress and counts nothing; a panic in an attempt is counted as the
    /// call's failure and resumed. The future is `Send` whenever `f` and the
    /// futures it returns are.
    ///
    /// # Errors
    ///
    /// As [`Retry::call`].
    #[inline]
    pub fn call_async<T, E, F, Fut>(
        &self,
        f: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F, Fut>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        Stack::new()
            .retry(self.part(RetryClassifier::new()))
            .fault(FaultPart::global(self.name()))
            .call_async(Lift(f))
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
