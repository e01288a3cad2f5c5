//! The time limiter: give up on a call that takes longer than
//! `timeout_duration`.
//!
//! A time-limited call is a future. The limiter polls it; if it is not done
//! when the timeout elapses on the limiter's clock, the caller gets
//! [`Error::Timeout`] and the future is dropped, which in Rust really stops
//! it: whatever it was awaiting is cancelled and its destructors run (a
//! socket closes, a bulkhead permit goes back). Resilience4j can only ask a
//! `Future` to cancel, and ignores `cancelRunningFuture` on its
//! `CompletionStage` path (decision Q17); here cancellation is the rule.
//! `cancel_running_future = false` asks instead to leave the work running in
//! the background while the caller moves on. A future can outlive the call
//! only if it owns everything it uses, so that is offered by the detached
//! calls ([`TimeLimiter::call_async_detached`],
//! [`TimeLimiter::decorate_async_detached`]), which take a `Send + 'static`
//! future and hand it to `tokio::spawn` on timeout; the borrowing calls
//! ([`TimeLimiter::call_async`], [`TimeLimiter::decorate_async`]) always
//! cancel, whatever the configuration says.
//!
//! Each call publishes one event, as Resilience4j does: `Success` for `Ok`
//! (unit results included, decision Q17), `Error` for `Err`, `Timeout` when
//! it timed out; [`TimeLimiter::metrics`] counts them. A panic inside the
//! future propagates to the caller and publishes nothing.
//!
//! The future is polled once before any timer exists: a call that is ready
//! at once (a cache hit, a value already computed) costs a poll and a
//! counter, and never touches the clock. The timeout is measured from the
//! end of that first poll, which could not have been interrupted anyway. A
//! zero timeout accepts exactly the futures that are done at their first poll.
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
mod error;
mod event;
mod metrics;

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;

pub use self::config::{TimeLimiterConfig, TimeLimiterConfigBuilder};
pub use self::error::Timeout;
pub use self::event::{TimeLimiterEvent, TimeLimiterEventType};
pub use self::metrics::TimeLimiterMetrics;

use crate::clock::{Clock, SharedClock, Sleep, SystemClock};
use crate::error::Error;
use crate::event::EventPublisher;
use crate::{Name, Tags};

/// A time limiter. Cheap to clone: clones share one limiter.
///
/// See the [module documentation](self).
#[derive(Clone)]
pub struct TimeLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    name: Name,
    config: TimeLimiterConfig,
    clock: SharedClock,
    tags: Tags,
    successful: AtomicU64,
    failed: AtomicU64,
    timeout: AtomicU64,
    events: EventPublisher<TimeLimiterEvent>,
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
                config,
                clock,
                tags,
                successful: AtomicU64::new(0),
                failed: AtomicU64::new(0),
                timeout: AtomicU64::new(0),
            }),
        }
    }

    /// The time limiter's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The time limiter's configuration.
    pub fn config(&self) -> &TimeLimiterConfig {
        &self.inner.config
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
        }
    }

    /// Runs the future that `f` returns, dropping it if it takes longer than
    /// the timeout. Always cancels on timeout (for
    /// `cancel_running_future = false` use [`TimeLimiter::call_async_detached`]).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when the timeout elapsed first, [`Error::Inner`]
    /// with the future's error.
    pub async fn call_async<T, E, F, Fut>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let outcome = self.timed(pin!(f())).await;
        self.inner.record(outcome, |_| None, Error::Inner)
    }

    /// Runs a future that already returns `resil::Error` (an inner layer of a
    /// decorator chain), dropping it if it takes longer than the timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when the timeout elapsed first, else the future's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::TokioClock;
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    /// use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig, TimeLimiterEvent};
    /// use resil_core::Error;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), resil_core::ConfigError> {
    /// let rl = RateLimiter::with_clock(
    ///     "quote",
    ///     RateLimiterConfig::builder().limit_for_period(1).timeout_duration(Duration::ZERO).build()?,
    ///     TokioClock::new(),
    /// );
    /// let tl = TimeLimiter::with_clock("quote", TimeLimiterConfig::default(), TokioClock::new());
    /// tl.event_publisher().enable_buffer(10);
    /// // RateLimiter(TimeLimiter(call)) by hand: the inner layer's errors pass through.
    /// for _ in 0..2 {
    ///     let _ = rl
    ///         .decorate_async(|| tl.decorate_async(|| async { Ok::<_, Error<std::io::Error>>(()) }))
    ///         .await;
    /// }
    /// assert_eq!(tl.metrics().number_of_successful_calls(), 1); // the second never got a permit
    /// assert_eq!(tl.event_publisher().recent_events()[0].kind(), &TimeLimiterEvent::Success);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn decorate_async<T, E, F, Fut>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, Error<E>>>,
    {
        let outcome = self.timed(pin!(f())).await;
        self.inner.record(outcome, Error::rejection_kind, |e| e)
    }

    /// Like [`TimeLimiter::call_async`] for a future that owns its data: with
    /// `cancel_running_future = false` a timed-out future is left running on
    /// the tokio runtime (its result is discarded) while the caller gets the
    /// timeout; with `true` it is dropped like in `call_async`.
    ///
    /// The future still runs on the caller's task until the timeout (so one
    /// that finishes in time costs no spawn); leaving it running costs one
    /// allocation per call.
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
    pub async fn call_async_detached<T, E, F, Fut>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
    {
        let outcome = self.timed_detached(f()).await;
        self.inner.record(outcome, |_| None, Error::Inner)
    }

    /// The detached form of [`TimeLimiter::decorate_async`]; see
    /// [`TimeLimiter::call_async_detached`].
    ///
    /// # Errors
    ///
    /// As [`TimeLimiter::decorate_async`].
    ///
    /// # Panics
    ///
    /// As [`TimeLimiter::call_async_detached`].
    pub async fn decorate_async_detached<T, E, F, Fut>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, Error<E>>> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
    {
        let outcome = self.timed_detached(f()).await;
        self.inner.record(outcome, Error::rejection_kind, |e| e)
    }

    /// Polls `fut` until it is done (`Some`) or the timeout elapses (`None`).
    /// The timer is created only after a first poll that is not ready.
    fn timed<'a, Fut: Future>(
        &'a self,
        mut fut: Pin<&'a mut Fut>,
    ) -> impl Future<Output = Option<Fut::Output>> + 'a {
        let inner = &*self.inner;
        let mut timer: Option<Sleep> = None;
        poll_fn(move |cx| {
            if let Poll::Ready(out) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(out));
            }
            let timeout = inner.config.timeout_duration;
            if timeout.is_zero() {
                return Poll::Ready(None);
            }
            let timer = timer.get_or_insert_with(|| inner.clock.sleep_async(timeout));
            Pin::new(timer).poll(cx).map(|()| None)
        })
    }

    async fn timed_detached<Fut>(&self, fut: Fut) -> Option<Fut::Output>
    where
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        if self.inner.config.cancel_running_future {
            return self.timed(pin!(fut)).await;
        }
        // Boxed so that, once polled, it can still move into a task.
        let mut fut = Box::pin(fut);
        let outcome = self.timed(fut.as_mut()).await;
        if outcome.is_none() {
            self.inner.detach(fut);
        }
        outcome
    }
}

impl fmt::Debug for TimeLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeLimiter")
            .field("name", &self.inner.name)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Inner {
    /// Counts and publishes the outcome, and shapes the caller's result.
    #[inline]
    fn record<T, X, E>(
        &self,
        outcome: Option<Result<T, X>>,
        kind: impl FnOnce(&X) -> Option<&'static str>,
        wrap: impl FnOnce(X) -> Error<E>,
    ) -> Result<T, Error<E>> {
        match outcome {
            Some(Ok(value)) => {
                self.successful.fetch_add(1, Ordering::Relaxed);
                self.events.publish(|| TimeLimiterEvent::Success);
                Ok(value)
            }
            Some(Err(e)) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                self.events.publish(|| TimeLimiterEvent::Error {
                    error_kind: kind(&e),
                });
                Err(wrap(e))
            }
            None => Err(self.timed_out()),
        }
    }

    #[cold]
    fn timed_out<E>(&self) -> Error<E> {
        self.timeout.fetch_add(1, Ordering::Relaxed);
        self.events.publish(|| TimeLimiterEvent::Timeout);
        Error::Timeout(Timeout::new(
            self.name.clone(),
            self.config.timeout_duration,
        ))
    }

    #[cold]
    fn detach<Fut>(&self, fut: Pin<Box<Fut>>)
    where
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        match tokio::runtime::Handle::try_current() {
            // Dropping the join handle detaches the task.
            Ok(runtime) => drop(runtime.spawn(fut)),
            Err(_) => panic!(
                "time limiter `{}` must leave a timed-out future running (cancel_running_future = false), \
                 which needs a tokio runtime",
                self.name
            ),
        }
    }
}
