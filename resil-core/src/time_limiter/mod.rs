//! The time limiter: give up on a call that takes longer than
//! `timeout_duration`.
//!
//! A time-limited call is a future. The limiter polls it; if it is not done
//! when the timeout elapses on the limiter's clock, the caller gets
//! [`Error::Timeout`] and the future is dropped, which in Rust really stops
//! it: whatever it was awaiting is cancelled and its destructors run (a
//! socket closes, a bulkhead permit goes back). Resilience4j can only ask a
//! `Future` to cancel, and ignores `cancelRunningFuture` on its
//! `CompletionStage` path; here cancellation is the rule.
//! `cancel_running_future = false` asks instead to leave the work running in
//! the background while the caller moves on. A future can outlive the call
//! only if it owns everything it uses, so that is offered by the detached
//! forms ([`TimeLimiter::call_async_detached`], and
//! [`TimeLimiter::detaching_part`] in a chain), which take a `Send +
//! 'static` future and hand it to `tokio::spawn` on timeout; the others
//! ([`TimeLimiter::call_async`], [`TimeLimiter::part`]) always cancel,
//! whatever the configuration says. At most `max_detached_futures`
//! are left running at once ([`TimeLimiter::detached_futures`] counts them);
//! past that a timed-out call is cancelled like any other, so a dependency
//! that hangs cannot pile up background tasks without limit.
//!
//! Each call publishes one event, as Resilience4j does: `Success` for `Ok`
//! (unit results included), `Error` for `Err`, `Timeout` when
//! it timed out; [`TimeLimiter::metrics`] counts them. A panic inside the
//! future propagates to the caller and publishes nothing.
//!
//! The future is polled once before any timer exists: a call that is ready
//! at once (a cache hit, a value already computed) costs a poll and a
//! counter, and never touches the clock. The timeout is measured from the
//! end of that first poll, which could not have been interrupted anyway. A
//! zero timeout accepts exactly the futures that are done at their first poll.
//! A call that is not done then arms its timer: a reading of the clock and
//! one allocation (the timer's state, which the healthy path carries as one
//! word). Its event says how long it took from then
//! ([`TimeLimiterEvent`]'s `elapsed`; zero for a call done at its first
//! poll).
//!
//! There is no blocking form: a timeout cannot stop a thread that is busy in
//! a synchronous call. Run such a call on a
//! [thread-pool bulkhead](crate::thread_pool_bulkhead) and time-limit the
//! future that `submit` returns (the work then finishes in the pool, as
//! Resilience4j's does).
//!
//! # Clocks
//!
//! Timers come from the limiter's clock (`Clock::sleep_async`). With the
//! default [`SystemClock`] and with [`TokioClock`](crate::clock::TokioClock)
//! they are tokio timers, so a time limiter runs inside a tokio runtime, and
//! `#[tokio::test(start_paused = true)]` with a `TokioClock` tests it in
//! virtual time. A [`ManualClock`](crate::clock::ManualClock) has no
//! timers that wait: its `sleep_async` advances the clock by the timeout and
//! is done at once. On a `ManualClock` a call therefore times out exactly
//! when its future is not done at the first poll, and the clock then reads
//! the timeout later; use it to test what happens after a timeout, and paused
//! tokio time to test which calls time out.
//!
//! # Examples
//!
//! ```
//! use resil_core::clock::TokioClock;
//! use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
//! use resil_core::Error;
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), resil_core::ConfigError> {
//! let config = TimeLimiterConfig::builder()
//!     .timeout_duration(Duration::from_millis(800))
//!     .build()?;
//! let tl = TimeLimiter::with_clock("inventory-query", config, TokioClock::new());
//!
//! let fast = tl.call_async(|| async { Ok::<_, std::io::Error>(7) }).await;
//! assert_eq!(fast.unwrap(), 7);
//!
//! let slow = tl
//!     .call_async(|| async {
//!         tokio::time::sleep(Duration::from_secs(5)).await;
//!         Ok::<_, std::io::Error>(7)
//!     })
//!     .await;
//! assert!(matches!(slow, Err(Error::Timeout(t)) if t.timeout() == Duration::from_millis(800)));
//! assert_eq!(tl.metrics().number_of_timeout_calls(), 1);
//! # Ok(())
//! # }
//! ```

mod config;
mod core;
mod event;
mod layer;
mod metrics;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

pub use self::config::{DEFAULT_MAX_DETACHED_FUTURES, TimeLimiterConfig, TimeLimiterConfigBuilder};
#[doc(hidden)]
pub use self::core::Inner;
pub use self::event::{TimeLimiterEvent, TimeLimiterEventType};
pub use self::layer::{
    DetachingAttempt, DetachingNode, DetachingPart, TimeLimiterAttempt, TimeLimiterNode,
    TimeLimiterPart,
};
pub use self::metrics::TimeLimiterMetrics;
pub use crate::rejection::Timeout;

use crate::chain::{Call, Lift, Stack, once};
use crate::clock::{Clock, SharedClock, SystemClock};
use crate::error::Error;
use crate::event::EventPublisher;
use crate::fault::FaultPart;
use crate::live::{ChangeRefused, Live};
use crate::thread_pool_bulkhead::Submission;
use crate::{Name, Tags};

/// A time limiter. Cheap to clone: clones share one limiter.
///
/// See the [module documentation](self).
#[derive(Clone)]
pub struct TimeLimiter {
    inner: Arc<Inner>,
}

impl TimeLimiter {
    /// A time limiter with Resilience4j's defaults (1 s) on the system clock.
    pub fn of_defaults(name: impl Into<Name>) -> Self {
        Self::new(name, TimeLimiterConfig::default())
    }

    /// A time limiter on the system clock (tokio timers).
    pub fn new(name: impl Into<Name>, config: TimeLimiterConfig) -> Self {
        Self::with_clock(name, config, SystemClock::new())
    }

    /// A time limiter on `clock` (see the module's notes on clocks).
    pub fn with_clock(name: impl Into<Name>, config: TimeLimiterConfig, clock: impl Clock) -> Self {
        Self::with_parts(name.into(), config, clock.into_shared(), Tags::default())
    }

    pub(crate) fn with_parts(
        name: Name,
        config: TimeLimiterConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        TimeLimiter {
            inner: Arc::new(Inner {
                events: EventPublisher::new(name.clone(), clock.clone()),
                name,
                config: Live::new(config),
                clock,
                tags,
                successful: AtomicU64::new(0),
                failed: AtomicU64::new(0),
                timeout: AtomicU64::new(0),
                detached: Arc::new(AtomicUsize::new(0)),
            }),
        }
    }

    /// The time limiter's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The time limiter's configuration.
    pub fn config(&self) -> &TimeLimiterConfig {
        self.inner.config.load()
    }

    /// Applies `config` in place, for calls that start their timer from now
    /// on: a call whose future is already waiting keeps the timeout and the
    /// shadow setting it started with. The counts are kept.
    ///
    /// # Errors
    ///
    /// [`ChangeRefused`] when the limiter already holds [`MAX_VERSIONS`](crate::live::MAX_VERSIONS)
    /// distinct configurations; it is unchanged then.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
    /// use std::time::Duration;
    ///
    /// let tl = TimeLimiter::new("report", TimeLimiterConfig::default());
    /// tl.change_config(TimeLimiterConfig::builder().timeout_duration(Duration::from_millis(250)).build()?)?;
    /// assert_eq!(tl.config().timeout_duration(), Duration::from_millis(250));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn change_config(&self, config: TimeLimiterConfig) -> Result<(), ChangeRefused> {
        self.inner.config.store(config, |a, b| a == b).map(|_| ())
    }

    /// Whether [`TimeLimiter::change_config`] would accept `config`.
    pub fn can_change_config(&self, config: &TimeLimiterConfig) -> Result<(), ChangeRefused> {
        self.inner.config.fits(|v| v == config)
    }

    /// The time limiter's tags (registry tags overlaid by instance tags).
    pub fn tags(&self) -> &Tags {
        &self.inner.tags
    }

    /// The clock whose timers the limiter uses.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// Subscriptions and the recent-events buffer.
    pub fn event_publisher(&self) -> &EventPublisher<TimeLimiterEvent> {
        &self.inner.events
    }

    /// The call counts so far.
    pub fn metrics(&self) -> TimeLimiterMetrics {
        TimeLimiterMetrics {
            successful: self.inner.successful.load(Ordering::Relaxed),
            failed: self.inner.failed.load(Ordering::Relaxed),
            timeout: self.inner.timeout.load(Ordering::Relaxed),
            detached: self.detached_futures(),
        }
    }

    /// Timed-out futures that the detached calls left running and that have
    /// not finished (or been dropped) yet; at most `max_detached_futures`.
    pub fn detached_futures(&self) -> usize {
        self.inner.detached.load(Ordering::Relaxed)
    }

    /// Runs the future that `f` returns, dropping it if it takes longer than
    /// the timeout. Always cancels on timeout (for
    /// `cancel_running_future = false` use [`TimeLimiter::call_async_detached`]).
    ///
    /// `f` is called when this method is called. Each poll polls the
    /// caller's future first; the timer is started only after a first poll
    /// that is not ready, so a call that completes at once costs no timer.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when the timeout elapsed first, [`Error::Inner`]
    /// with the future's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::TokioClock;
    /// use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
    /// use resil_core::Error;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let tl = TimeLimiter::with_clock("quote", TimeLimiterConfig::default(), TokioClock::new());
    /// let hangs = tl.call_async(std::future::pending::<Result<u32, std::io::Error>>);
    /// assert!(matches!(hangs.await, Err(Error::Timeout(_))));
    /// # }
    /// ```
    #[inline]
    pub fn call_async<T, E, F, Fut>(
        &self,
        f: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F, Fut>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        Stack::new()
            .time_limiter(self.part())
            .fault(FaultPart::global(self.name()))
            .call_async(Lift(once(f)))
    }

    /// Like [`TimeLimiter::call_async`] for a future that owns its data: with
    /// `cancel_running_future = false` a timed-out future is left running on
    /// the tokio runtime (its result is discarded) while the caller gets the
    /// timeout; with `true` it is dropped like in `call_async`. While
    /// `max_detached_futures` are still running, a timed-out future is dropped
    /// too (the caller gets the same timeout).
    ///
    /// The future still runs on the caller's task until the timeout (so one
    /// that finishes in time costs no spawn); leaving it running costs one
    /// allocation per call.
    ///
    /// The fault of the limiter's name ([`crate::fault`]) is inside the
    /// future that may be left running, as in `call_async`: a delay counts
    /// against the timeout (and the call, left running, runs once the delay
    /// is over), an abort returns [`Error::FaultInjected`] without polling
    /// the caller's future.
    ///
    /// # Errors
    ///
    /// As [`TimeLimiter::call_async`].
    ///
    /// # Panics
    ///
    /// When a timed-out future must be left running outside a tokio runtime
    /// (there is nothing to run it on).
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::TokioClock;
    /// use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), resil_core::ConfigError> {
    /// let config = TimeLimiterConfig::builder()
    ///     .timeout_duration(Duration::from_secs(1))
    ///     .cancel_running_future(false)
    ///     .build()?;
    /// let tl = TimeLimiter::with_clock("report", config, TokioClock::new());
    /// let written = Arc::new(AtomicBool::new(false));
    /// let flag = written.clone();
    /// let result = tl
    ///     .call_async_detached(|| async move {
    ///         tokio::time::sleep(Duration::from_secs(3)).await;
    ///         flag.store(true, Ordering::SeqCst);
    ///         Ok::<_, std::io::Error>(())
    ///     })
    ///     .await;
    /// assert!(result.is_err()); // the caller gave up after 1 s...
    /// tokio::time::sleep(Duration::from_secs(5)).await;
    /// assert!(written.load(Ordering::SeqCst)); // ...the work finished anyway
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn call_async_detached<T, E, F, Fut>(
        &self,
        f: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F, Fut>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
    {
        // The fault of the limiter's name is inside the future that may be
        // left running: a delay is part of what times out, an abort ends it.
        // `f` runs when the attempt starts, as in `call_async`; only its
        // future moves into the one that may be left running.
        let name = Name::clone(&self.inner.name);
        Stack::new()
            .time_limiter(self.detaching_part())
            .call_async(Call(once(move || {
                let future = f();
                async move {
                    Stack::new()
                        .fault(FaultPart::global(name))
                        .call_async(Lift(once(move || future)))
                        .await
                }
            })))
    }

    /// Blocks the calling thread until the task of `submission` (a
    /// [thread-pool bulkhead](crate::thread_pool_bulkhead)'s, or any pool
    /// built on one) is done or the timeout has passed: Resilience4j's
    /// `executeFutureSupplier`, `future.get(timeout)`.
    ///
    /// The outcome is counted and published as for the async calls. A
    /// refused submission returns its [`Error::BulkheadFull`] and counts
    /// nothing (Resilience4j's `submit` throws before the limiter sees a
    /// future). On timeout the task runs on in its pool, since a thread
    /// cannot be stopped from outside, unless it has not started: a task
    /// whose caller gave up is not run. Its value is dropped. The wait is
    /// real time on the monotonic system clock, whatever the limiter's
    /// clock: a parked thread cannot wait on a `ManualClock`.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when the time is up, [`Error::BulkheadFull`] when
    /// the pool refused the task, else the task's error.
    ///
    /// # Panics
    ///
    /// Resumes the task's panic (counting nothing).
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::thread_pool_bulkhead::ThreadPoolBulkhead;
    /// use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
    /// use resil_core::Error;
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    ///
    /// let pool = ThreadPoolBulkhead::of_defaults("report");
    /// let config = TimeLimiterConfig::builder()
    ///     .timeout_duration(Duration::from_millis(10))
    ///     .build()?;
    /// let tl = TimeLimiter::new("report", config);
    ///
    /// let fast = tl.wait_submission(pool.submit(|| Ok::<_, Error<std::io::Error>>(7)));
    /// assert_eq!(fast.unwrap(), 7);
    ///
    /// let (release, gate) = mpsc::channel::<()>();
    /// let slow = tl.wait_submission(pool.submit(move || {
    ///     let _ = gate.recv();
    ///     Ok::<_, Error<std::io::Error>>(8)
    /// }));
    /// assert!(matches!(slow, Err(Error::Timeout(_))));
    /// release.send(()).unwrap();
    /// assert_eq!(tl.metrics().number_of_timeout_calls(), 1);
    /// # Ok::<(), resil_core::ConfigError>(())
    /// ```
    pub fn wait_submission<T, E>(
        &self,
        submission: Submission<Result<T, Error<E>>>,
    ) -> Result<T, Error<E>> {
        self.inner.wait_submission(submission)
    }
}

impl fmt::Debug for TimeLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeLimiter")
            .field("name", &self.inner.name)
            .field("config", self.inner.config.load())
            .finish_non_exhaustive()
    }
}
