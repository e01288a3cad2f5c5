//! The semaphore bulkhead: limit how many calls run at once, so that one slow
//! dependency cannot take every thread or task of the service with it.
//!
//! A bulkhead holds `max_concurrent_calls` permits. A call takes one before it
//! starts and gives it back when it ends, however it ends: the permit is an
//! RAII guard, released exactly once when dropped, so a call that fails,
//! panics or whose future is dropped mid-way gives it back too. When no permit
//! is free, a call either fails at once with [`BulkheadFull`]
//! (`max_wait_duration` of zero, the default) or waits up to
//! `max_wait_duration` for one. Waiting callers are served in arrival order
//! when `fair_call_handling_enabled` is set (the default): a caller that
//! arrives while others wait never overtakes them. Unfair handling lets a
//! caller that finds a permit free take it even while others wait, which
//! trades order for throughput.
//!
//! This is Resilience4j 2.2's `SemaphoreBulkhead` with its defaults, events
//! and metrics, and these differences:
//!
//! * [`Bulkhead::try_acquire_permission`] never waits; waiting is
//!   [`Bulkhead::acquire_permission`] (async, on the clock's timer) or
//!   [`Bulkhead::acquire_permission_blocking`] (the current thread), and the
//!   decorators wait as Resilience4j's do.
//! * A permit cannot be released twice (Resilience4j's `onComplete` can
//!   over-release).
//! * [`Bulkhead::change_config`] never blocks: a lower limit takes effect as
//!   calls in flight finish (Resilience4j blocks the caller until they do), and
//!   a changed `fair_call_handling_enabled` applies too (Resilience4j keeps the
//!   fairness its semaphore was created with).
//!
//! Taking and giving back a permit when nobody waits is one compare-and-swap
//! and one `fetch_add` on an atomic word, with no lock and no allocation;
//! waiters queue behind a mutex.
//!
//! # Adaptive limits
//!
//! A fixed `max_concurrent_calls` is a guess that ages: the right number is
//! the downstream's throughput times its latency (Little's law), and both
//! move when the downstream scales, deploys or degrades. With a
//! [`LimitAlgorithm`] other than `Fixed` the bulkhead measures instead, as
//! TCP's congestion control does. Every call that finishes is a [`Sample`]:
//! its latency, the calls in flight, and whether it was a *drop* (a
//! timeout, a refusal of a layer below the bulkhead, or an error whose
//! kind `limit_drop_errors` names); an algorithm turns the samples into
//! the limit, between `min_concurrent_calls` and the ceiling
//! `max_concurrent_calls`, starting at `initial_concurrent_calls`:
//!
//! * [`LimitAlgorithm::Aimd`], loss based: the limit grows by one a window
//!   while at least half of it is in use and nothing drops, and is
//!   multiplied by `backoff_ratio` (0.9) after a window with a drop or whose
//!   latency passes `drop_timeout` (5 s).
//! * [`LimitAlgorithm::Gradient2`], latency based: it compares the recent
//!   latency with a long-term average of it (`long_window`, 600 windows).
//!   While the recent one stays under `rtt_tolerance` (1.5) times the
//!   long-term one the limit grows by `queue_size` (√limit); above it, the
//!   limit shrinks in proportion (at most by half); both moves are smoothed
//!   by `smoothing` (0.2). It follows *changes*: a latency that rises
//!   slowly, or stays high for long, moves the long-term average with it,
//!   and the limit creeps up meanwhile.
//! * [`LimitAlgorithm::Vegas`], latency based (TCP Vegas): it estimates the
//!   downstream's queue as `limit × (1 − no-load latency / latency)`, grows
//!   fast while the queue is under `threshold` (log10 limit), by log10 limit
//!   while it is under `alpha` (3·log10 limit), shrinks past `beta` (6·log10
//!   limit) or on a drop, and measures the no-load latency afresh about
//!   every `probe_multiplier` (30) × limit windows.
//!
//! As in Netflix's `WindowedLimit`, calls are folded into sampling windows
//! (twice the window's fastest call, clamped to [`min_window_time`,
//! `max_window_time`], 1 s by default) and the algorithm sees one sample per
//! window of at least `window_size` (10) calls: their average latency, the
//! most calls in flight, and whether any dropped. Calls faster than
//! `min_rtt_threshold` (100 µs) do not count towards the latency (a drop
//! among them still counts: Netflix drops them whole).
//!
//! The algorithms and their defaults are those of Netflix's
//! concurrency-limits (`AIMDLimit`, `Gradient2Limit`, `VegasLimit`,
//! `WindowedLimit`), learned from its source and written anew. A change of
//! the limit moves the semaphore as [`Bulkhead::change_config`] does (permits
//! in use are never lost; a lower limit retires them as they come back),
//! shows in [`BulkheadMetrics::max_allowed_concurrent_calls`], and is published as
//! [`BulkheadEvent::LimitChanged`]. An adaptive permit reads the bulkhead's
//! clock when it is taken and when it is given back (readings a decorator
//! chain shares with its other layers) and folds its call into the window
//! under a lock held for a few instructions; a fixed one reads no clock.
//!
//! A permit gives its sample when it is given back: dropped, it counts as
//! a drop when a panic unwinds through it or when a chain's time limiter
//! or a request's deadline gave up on the call that held it (dropping it,
//! with what the call holds: the permits of the chains inside it too);
//! otherwise a [`BulkheadPermit`] dropped counts as a success (its holder
//! is done with it), and a chain's permit gives no sample (the chain's
//! call was cancelled by its caller: a hedge's loser, a `select!`'s other
//! branch; Netflix concurrency-limits' client side ignores such a call).
//! [`BulkheadPermit::finish_with`] gives the call's own ([`Sample::of`] a
//! result); [`BulkheadPermit::release`] gives none. [`Bulkhead::call`],
//! [`Bulkhead::call_async`] and every chain give their result's.
//!
//! ```
//! use resil_core::bulkhead::{Bulkhead, BulkheadConfig, LimitAlgorithm, Sample};
//! use resil_core::clock::ManualClock;
//! use std::time::Duration;
//!
//! let config = BulkheadConfig::builder()
//!     .limit_algorithm(LimitAlgorithm::Aimd)
//!     .initial_concurrent_calls(20)
//!     .max_concurrent_calls(200)
//!     .build()?;
//! let clock = ManualClock::new();
//! let bulkhead = Bulkhead::with_clock("inventory-query", config, clock.clone());
//! // Windows of a second: 20 calls a window, each timing out.
//! for _ in 0..3 {
//!     for _ in 0..20 {
//!         let permit = bulkhead.try_acquire_permission()?;
//!         clock.advance(Duration::from_millis(50));
//!         permit.finish_with(Sample::Dropped);
//!     }
//! }
//! // The first call closed the empty first window; each later window
//! // multiplied the limit by 0.9.
//! assert_eq!(bulkhead.metrics().max_allowed_concurrent_calls(), 16);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Examples
//!
//! ```
//! use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
//! use resil_core::Error;
//!
//! let config = BulkheadConfig::builder().max_concurrent_calls(1).build()?;
//! let bulkhead = Bulkhead::new("inventory-query", config);
//!
//! let held = bulkhead.try_acquire_permission()?; // a call in flight
//! let refused = bulkhead.call(|| Ok::<_, std::io::Error>(42));
//! assert!(matches!(refused, Err(Error::BulkheadFull(_))));
//!
//! drop(held);
//! assert_eq!(bulkhead.call(|| Ok::<_, std::io::Error>(42)).unwrap(), 42);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod adaptive;
mod algorithm;
mod config;
mod core;
mod event;
mod layer;
mod limit;
mod metrics;
mod semaphore;

#[cfg(all(test, resil_loom))]
mod loom;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

pub use self::config::{BulkheadConfig, BulkheadConfigBuilder, MAX_CONCURRENT_CALLS};
#[doc(hidden)]
pub use self::core::Inner;
pub use self::event::{BulkheadEvent, BulkheadEventType};
pub use self::layer::{BulkheadAttempt, BulkheadNode, BulkheadPart, ErrorKinds, Kinds};
pub use self::limit::{LimitAlgorithm, Sample, UnknownLimitAlgorithm};
pub use self::metrics::BulkheadMetrics;
pub use crate::rejection::BulkheadFull;

use self::adaptive::Limiter;
use self::core::Held;
use self::layer::Queued;
use self::semaphore::Semaphore;
use crate::chain::{Lift, Stack, once};
use crate::clock::{Clock, SharedClock, SystemClock};
use crate::error::Error;
use crate::event::EventPublisher;
use crate::fault::FaultPart;
use crate::live::ChangeRefused;
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Mutex, Ordering, ShortMutex, lock};
use crate::{Name, Tags};

/// A semaphore bulkhead. Cheap to clone: clones share one bulkhead.
///
/// See the [module documentation](self).
#[derive(Clone)]
pub struct Bulkhead {
    inner: Arc<Inner>,
}

impl Bulkhead {
    /// A bulkhead with Resilience4j's defaults on the system clock.
    pub fn of_defaults(name: impl Into<Name>) -> Self {
        Self::new(name, BulkheadConfig::default())
    }

    /// A bulkhead on the system clock.
    pub fn new(name: impl Into<Name>, config: BulkheadConfig) -> Self {
        Self::with_clock(name, config, SystemClock::new())
    }

    /// A bulkhead on `clock`, which times the waits for a permit
    /// ([`TokioClock`](crate::clock::TokioClock) under paused tokio time,
    /// [`ManualClock`](crate::clock::ManualClock) in tests).
    pub fn with_clock(name: impl Into<Name>, config: BulkheadConfig, clock: impl Clock) -> Self {
        Self::with_parts(name.into(), config, clock.into_shared(), Tags::default())
    }

    pub(crate) fn with_parts(
        name: Name,
        config: BulkheadConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        let events = EventPublisher::new(name.clone(), clock.clone());
        let limiter = Limiter::new(&config, &name);
        let limit = limiter.limit();
        Bulkhead {
            inner: Arc::new(Inner {
                sem: Semaphore::new(limit, config.fair_call_handling_enabled),
                max_calls: AtomicU32::new(limit),
                max_wait_millis: AtomicU64::new(config.effective_wait_millis()),
                shadow: AtomicBool::new(config.shadow),
                adaptive: AtomicBool::new(config.limit_algorithm().is_adaptive()),
                limiter: ShortMutex::new(limiter),
                config: Mutex::new(config),
                name,
                tags,
                clock,
                events,
            }),
        }
    }

    /// The bulkhead's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The bulkhead's current configuration (the last one given to
    /// [`Bulkhead::change_config`], if any).
    pub fn config(&self) -> BulkheadConfig {
        lock(&self.inner.config).clone()
    }

    /// The bulkhead's tags (registry tags overlaid by instance tags).
    pub fn tags(&self) -> &Tags {
        &self.inner.tags
    }

    /// The clock that times the waits.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// Subscriptions and the recent-events buffer.
    pub fn event_publisher(&self) -> &EventPublisher<BulkheadEvent> {
        &self.inner.events
    }

    /// A snapshot of the permits.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::bulkhead::Bulkhead;
    ///
    /// let bulkhead = Bulkhead::of_defaults("inventory-query");
    /// let _permit = bulkhead.try_acquire_permission()?;
    /// let metrics = bulkhead.metrics();
    /// assert_eq!(metrics.available_concurrent_calls(), 24);
    /// assert_eq!(metrics.max_allowed_concurrent_calls(), 25);
    /// # Ok::<(), resil_core::bulkhead::BulkheadFull>(())
    /// ```
    pub fn metrics(&self) -> BulkheadMetrics {
        BulkheadMetrics {
            available: u32::try_from(self.inner.sem.available().max(0)).unwrap_or(u32::MAX),
            max_allowed: self.inner.max_calls.load(Ordering::Relaxed),
            waiting: self.inner.sem.waiting(),
        }
    }

    /// Takes a permit if one is free now; never waits.
    ///
    /// In fair mode a permit is not taken while other callers wait for one.
    /// Publishes `CallPermitted` or `CallRejected`; the permit publishes
    /// `CallFinished` when dropped.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] when no permit is free (or, in fair mode, others wait).
    #[inline]
    pub fn try_acquire_permission(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        if self.inner.sem.try_acquire() || self.inner.let_through() {
            Ok(self.inner.permitted())
        } else {
            Err(self.inner.reject())
        }
    }

    /// Takes a permit, waiting up to `max_wait_duration` on the bulkhead's
    /// clock (`Clock::sleep_async`) when none is free.
    ///
    /// Dropping the future while it waits leaves the queue; a permit granted
    /// meanwhile goes to the next waiter.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] when no permit came within the wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
    /// use resil_core::clock::TokioClock;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = BulkheadConfig::builder()
    ///     .max_concurrent_calls(1)
    ///     .max_wait_duration(Duration::from_millis(100))
    ///     .build()?;
    /// let bulkhead = Bulkhead::with_clock("inventory-query", config, TokioClock::new());
    /// let held = bulkhead.acquire_permission().await?;
    /// // Full: the second caller waits 100 ms (of paused time) and gives up.
    /// assert!(bulkhead.acquire_permission().await.is_err());
    /// drop(held);
    /// assert!(bulkhead.acquire_permission().await.is_ok());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn acquire_permission(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        if self.inner.sem.try_acquire() {
            return Ok(self.inner.permitted());
        }
        self.inner.acquire_slow().await
    }

    /// Takes a permit, blocking the current thread up to `max_wait_duration`
    /// when none is free.
    ///
    /// The deadline is a timer of the bulkhead's clock (`Clock::schedule`), so
    /// with a [`ManualClock`](crate::clock::ManualClock) the wait ends when
    /// another thread advances the clock past it or releases a permit. Do not
    /// call it on an async runtime's thread: use
    /// [`Bulkhead::acquire_permission`] there.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] when no permit came within the wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
    /// use std::time::Duration;
    ///
    /// let config = BulkheadConfig::builder()
    ///     .max_concurrent_calls(1)
    ///     .max_wait_duration(Duration::from_secs(1))
    ///     .build()?;
    /// let bulkhead = Bulkhead::new("inventory-query", config);
    /// let held = bulkhead.try_acquire_permission()?;
    /// std::thread::scope(|s| {
    ///     let waiter = s.spawn(|| bulkhead.acquire_permission_blocking().is_ok());
    ///     while bulkhead.metrics().number_of_waiting_calls() == 0 {
    ///         std::thread::yield_now();
    ///     }
    ///     drop(held); // the waiting thread gets this permit
    ///     assert!(waiter.join().unwrap());
    /// });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn acquire_permission_blocking(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        if self.inner.sem.try_acquire() {
            Ok(self.inner.permitted())
        } else {
            self.inner.acquire_blocking_slow()
        }
    }

    /// Applies a new configuration without blocking.
    ///
    /// A larger limit adds permits at once (waiters get them first); a
    /// smaller one removes free permits at once and retires the permits of
    /// calls in flight beyond the new limit as they finish. The new
    /// `max_wait_duration` and fairness apply to callers that arrive later.
    ///
    /// The limit is `max_concurrent_calls` for a fixed bulkhead. Switching
    /// to an adaptive algorithm starts it at `initial_concurrent_calls`; an
    /// adaptive bulkhead that stays adaptive keeps the limit it reached,
    /// within the new bounds, and an unchanged algorithm with unchanged
    /// parameters keeps what it learned (a changed one starts afresh from
    /// that limit). A changed limit publishes
    /// [`BulkheadEvent::LimitChanged`].
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
    ///
    /// let bulkhead = Bulkhead::new("inventory-query", BulkheadConfig::builder().max_concurrent_calls(2).build()?);
    /// let a = bulkhead.try_acquire_permission()?;
    /// let b = bulkhead.try_acquire_permission()?;
    /// bulkhead.change_config(BulkheadConfig::builder().max_concurrent_calls(1).build()?);
    /// drop(a); // retired: one call is still in flight, the limit is one
    /// assert_eq!(bulkhead.metrics().available_concurrent_calls(), 0);
    /// drop(b);
    /// assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn change_config(&self, config: BulkheadConfig) {
        self.change(config);
    }

    /// Whether [`Bulkhead::change_config`] would accept `config`: always, a
    /// bulkhead keeps no versions.
    ///
    /// # Errors
    ///
    /// None: every configuration can be applied.
    pub fn can_change_config(&self, _config: &BulkheadConfig) -> Result<(), ChangeRefused> {
        Ok(())
    }

    fn change(&self, config: BulkheadConfig) {
        let inner = &*self.inner;
        let mut current = lock(&inner.config);
        inner
            .max_wait_millis
            .store(config.effective_wait_millis(), Ordering::Relaxed);
        inner.shadow.store(config.shadow, Ordering::Relaxed);
        if config.fair_call_handling_enabled != current.fair_call_handling_enabled {
            inner.sem.set_fair(config.fair_call_handling_enabled);
        }
        let (from, to) = inner.reconfigure(&config);
        *current = config;
        drop(current);
        inner.limit_moved(from, to);
    }

    /// Runs `f` with a permit, waiting for one as
    /// [`Bulkhead::acquire_permission_blocking`] does.
    ///
    /// A panic in `f` gives the permit back and is resumed. For an adaptive
    /// limit the call is a sample: `Ok` a success, an error none (its kind
    /// is unknown here: see [`Sample`]), a panic a drop.
    ///
    /// # Errors
    ///
    /// [`Error::BulkheadFull`] when refused, [`Error::Inner`] with `f`'s error.
    #[inline]
    pub fn call<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E>,
    {
        Stack::new()
            .bulkhead(self.part())
            .fault(FaultPart::global(self.name()))
            .call(Lift(once(f)))
    }

    /// Runs the future that `f` returns with a permit, waiting for one as
    /// [`Bulkhead::acquire_permission`] does.
    ///
    /// A free permit is taken, and `f` called, when this method is called
    /// (as Resilience4j's decorated `CompletionStage` supplier does when
    /// invoked); otherwise the returned future waits in the queue up to
    /// `max_wait_duration` (the timer starts at the first poll) and calls
    /// `f` once it has a permit. Dropping the returned future at any point
    /// gives the permit back or leaves the queue; a panic while polling the
    /// caller's future gives the permit back at once and is resumed.
    ///
    /// # Errors
    ///
    /// [`Error::BulkheadFull`] when refused, [`Error::Inner`] with the future's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
    /// use resil_core::Error;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let bulkhead = Bulkhead::new("inventory-query", BulkheadConfig::builder().max_concurrent_calls(1).build()?);
    /// let first = bulkhead.call_async(|| async { Ok::<_, std::io::Error>(1) });
    /// // The permit was taken when `first` was created: no wait is configured,
    /// // so the second call is refused.
    /// let second = bulkhead.call_async(|| async { Ok::<_, std::io::Error>(2) });
    /// assert!(matches!(second.await, Err(Error::BulkheadFull(_))));
    /// assert_eq!(first.await?, 1);
    /// # Ok(())
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
            .bulkhead(self.part())
            .fault(FaultPart::global(self.name()))
            .call_async(Lift(once(f)))
    }
}

impl fmt::Debug for Bulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bulkhead")
            .field("name", &self.inner.name)
            .field("metrics", &self.metrics())
            .finish_non_exhaustive()
    }
}

/// A bulkhead permit: one call in flight. Dropping it gives the permit back
/// (exactly once) and publishes `CallFinished`; for an adaptive limit the
/// call is then a sample (see [`BulkheadPermit::finish_with`]).
///
/// # Examples
///
/// ```
/// use resil_core::bulkhead::Bulkhead;
///
/// let bulkhead = Bulkhead::of_defaults("inventory-query");
/// {
///     let _permit = bulkhead.try_acquire_permission()?;
///     assert_eq!(bulkhead.metrics().available_concurrent_calls(), 24);
/// }
/// assert_eq!(bulkhead.metrics().available_concurrent_calls(), 25);
/// # Ok::<(), resil_core::bulkhead::BulkheadFull>(())
/// ```
#[must_use = "the permit is given back as soon as it is dropped"]
pub struct BulkheadPermit<'a>(Held<&'a Inner>);

impl BulkheadPermit<'_> {
    /// The name of the bulkhead that issued the permit.
    pub fn bulkhead_name(&self) -> &str {
        &self.0.inner.name
    }

    /// Gives the permit back without publishing `CallFinished` and without
    /// a sample, for a call that was not made after all (Resilience4j's
    /// `releasePermission`).
    pub fn release(self) {
        self.0.release();
    }

    /// Gives the permit back, publishing `CallFinished`, with what the call
    /// tells an adaptive limit (a fixed bulkhead ignores it). Dropping the
    /// permit gives [`Sample::Success`], or [`Sample::Dropped`] while a
    /// panic unwinds.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::bulkhead::{Bulkhead, Sample};
    /// use resil_core::Error;
    ///
    /// let bulkhead = Bulkhead::of_defaults("inventory-query");
    /// let permit = bulkhead.try_acquire_permission()?;
    /// let result: Result<u32, Error<std::io::Error>> = Ok(42);
    /// permit.finish_with(Sample::of(&result, |_| None));
    /// assert_eq!(bulkhead.metrics().available_concurrent_calls(), 25);
    /// # Ok::<(), resil_core::bulkhead::BulkheadFull>(())
    /// ```
    #[inline]
    pub fn finish_with(self, sample: Sample) {
        self.0.finish(sample);
    }
}

impl fmt::Debug for BulkheadPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadPermit")
            .field("bulkhead", &self.0.inner.name)
            .finish()
    }
}

#[cfg(all(test, not(resil_loom)))]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Waker};
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;

    fn bulkhead(max: u32, wait_ms: u64, fair: bool) -> (Bulkhead, ManualClock) {
        let clock = ManualClock::new();
        let config = BulkheadConfig::builder()
            .max_concurrent_calls(max)
            .max_wait_duration(Duration::from_millis(wait_ms))
            .fair_call_handling_enabled(fair)
            .build()
            .unwrap();
        (Bulkhead::with_clock("b", config, clock.clone()), clock)
    }

    #[test]
    fn a_released_permit_cannot_publish_twice() {
        let (b, _) = bulkhead(1, 0, true);
        let finished = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let seen = finished.clone();
        b.event_publisher()
            .on(BulkheadEventType::CallFinished, move |_| {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
        b.try_acquire_permission().unwrap().release();
        assert_eq!(finished.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(b.metrics().available_concurrent_calls(), 1);
        drop(b.try_acquire_permission().unwrap());
        assert_eq!(finished.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(b.metrics().available_concurrent_calls(), 1);
    }

    #[test]
    fn switching_fairness_moves_waiters_on() {
        let (b, _) = bulkhead(1, 1000, false);
        let held = b.try_acquire_permission().unwrap();
        let mut waiter = b.inner.sem.acquire();
        let noop = &mut Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut waiter).poll(noop).is_pending());
        drop(held); // unfair: the permit stays free, the waiter is notified
        assert_eq!(b.metrics().available_concurrent_calls(), 1);
        b.change_config(
            b.config()
                .to_builder()
                .fair_call_handling_enabled(true)
                .build()
                .unwrap(),
        );
        // fair now: the free permit is handed to the waiter
        assert_eq!(b.metrics().available_concurrent_calls(), 0);
        assert!(b.try_acquire_permission().is_err());
        assert!(Pin::new(&mut waiter).poll(noop).is_ready());
    }
}
