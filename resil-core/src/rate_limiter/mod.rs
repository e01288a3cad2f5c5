//! The rate limiter: at most `limit_for_period` permits per
//! `limit_refresh_period`, with callers waiting up to a timeout for theirs.
//!
//! Time is cut into cycles of `limit_refresh_period`, counted from the
//! limiter's creation on its clock (not aligned to wall-clock seconds). Each
//! cycle brings `limit_for_period` fresh permits; unused permits do not carry
//! over beyond one cycle's worth, so an idle limiter never holds more than
//! the limit. A caller that asks for more permits than are left is not simply
//! refused: the limiter computes when enough permits will have accumulated
//! and, if that is within `timeout_duration`, *reserves* them at once (the
//! count goes negative, and later cycles pay the debt back) and tells the
//! caller how long to wait. So a request for more than the limit is granted
//! across several cycles if the timeout allows it, and never with a zero
//! timeout. A refused acquire still waits out its whole timeout before it
//! fails, as Resilience4j's does, which paces retrying callers.
//!
//! This is Resilience4j 2.2's `AtomicRateLimiter`: the same cycles, refill
//! cap, wait computation, reservations and events. Its state is updated with
//! a compare-and-swap on one 64-bit word, so a permit that is available costs
//! a clock read, a few loads and one compare-and-swap: no lock, no
//! allocation. How Resilience4j's `(cycle, permissions)` pair fits in one
//! word, and the bound that makes it fit for the clock's whole range (at most
//! one permit per nanosecond), is explained in `state.rs`.
//!
//! Where resil differs from Resilience4j 2.2.0, deliberately:
//!
//! - [`RateLimiter::drain_permissions`] empties the *current* cycle after its
//!   refill and reports what it took; 2.2.0 subtracts the stale
//!   count of the last cycle it saw and reports `min(stale, 0)`.
//! - [`RateLimiter::change_limit_for_period`] applies from the next refill:
//!   the current cycle keeps its count, and cycles that have already begun
//!   are refilled with the old limit. 2.2.0 refills lazily, so cycles that
//!   passed unobserved before a change are refilled with the new limit.
//! - An acquire that runs concurrently with a limit change may use either
//!   limit.
//! - A dropped async acquire (cancelled while it waits) keeps its reservation,
//!   exactly as Resilience4j's (whose reservation outlives an interrupted
//!   thread): the permits were carved out of future cycles and callers behind
//!   it were scheduled after them, so handing them back would let a newcomer
//!   overtake waiters that arrived earlier. The waiting count is decremented.
//! - Resilience4j parks a thread for 1 ns between failed compare-and-swaps;
//!   resil uses a spin hint.
//! - `drainPermissionsOnResult` (a predicate on results) is not a
//!   configuration setting: call [`RateLimiter::drain_permissions`] where the
//!   result calls for it.
//!
//! With cluster settings ([`RateLimiterConfigBuilder::cluster`], see
//! [`crate::cluster`]) the limit is the fleet's: permits come from the
//! backend in leases, cycles are the backend's (aligned to its clock, not
//! to the limiter's creation), and the limiter's own state serves only the
//! `local` failure mode. `metrics().available_permissions()` then counts
//! the leased permits this process may still spend, and
//! [`RateLimiter::drain_permissions`] discards them (the fleet's cycle goes
//! on for the other processes). A call that must wait for a round trip
//! waits at most the cluster timeout: [`RateLimiter::acquire_permission`]
//! awaits the answer without blocking its thread, the other methods block
//! it; the common call, served from the lease, waits for nothing, and once
//! the fleet's cycle is spent a call is refused without a round trip.
//!
//! # Examples
//!
//! ```
//! use resil_core::clock::ManualClock;
//! use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let config = RateLimiterConfig::builder()
//!     .limit_for_period(2)
//!     .limit_refresh_period(Duration::from_secs(1))
//!     .timeout_duration(Duration::from_millis(1500))
//!     .build()?;
//! let limiter = RateLimiter::with_clock("inventory-query", config, clock.clone());
//!
//! assert!(limiter.try_acquire_permission(2));
//! assert!(!limiter.try_acquire_permission(1)); // never waits
//! // A reservation on the next cycle, one second away:
//! assert_eq!(limiter.reserve_permission(1), Ok(Duration::from_secs(1)));
//! assert_eq!(limiter.metrics().available_permissions(), -1);
//!
//! clock.advance(Duration::from_secs(1));
//! assert_eq!(limiter.metrics().available_permissions(), 1);
//! # Ok::<(), resil_core::ConfigError>(())
//! ```

mod cluster;
mod config;
mod core;
mod event;
mod layer;
mod metrics;
mod state;

#[cfg(all(test, resil_loom))]
mod loom;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use self::config::{MAX_DURATION, RateLimiterConfig, RateLimiterConfigBuilder};
#[doc(hidden)]
pub use self::core::Inner;
pub use self::event::{RateLimiterEvent, RateLimiterEventType};
pub use self::layer::{RateLimiterAttempt, RateLimiterNode, RateLimiterPart};
pub use self::metrics::RateLimiterMetrics;
pub use crate::rejection::RequestNotPermitted;

use self::layer::Waiting;
use self::state::{Core, Decision};
use crate::chain::{Lift, Stack, once};
use crate::clock::{Clock, SharedClock, SystemClock};
use crate::cluster::ClusterLimiterMetrics;
use crate::error::{ConfigError, Error, Problems};
use crate::event::EventPublisher;
use crate::fault::FaultPart;
use crate::live::ChangeRefused;
use crate::sync::{AtomicBool, AtomicU32, Ordering};
use crate::{Name, Tags};

/// A rate limiter. Cheap to clone: clones share one limiter.
///
/// See the [module documentation](self) for the algorithm.
#[derive(Clone)]
pub struct RateLimiter {
    inner: Arc<Inner>,
}

impl RateLimiter {
    /// A limiter with Resilience4j's defaults (50 permits per 500 ns, 5 s
    /// timeout) on the system clock.
    pub fn of_defaults(name: impl Into<Name>) -> Self {
        Self::new(name, RateLimiterConfig::default())
    }

    /// A limiter on the system clock.
    pub fn new(name: impl Into<Name>, config: RateLimiterConfig) -> Self {
        Self::with_clock(name, config, SystemClock::new())
    }

    /// A limiter on `clock` ([`ManualClock`](crate::clock::ManualClock) in tests,
    /// [`TokioClock`](crate::clock::TokioClock) under paused tokio time).
    pub fn with_clock(name: impl Into<Name>, config: RateLimiterConfig, clock: impl Clock) -> Self {
        Self::with_parts(name.into(), config, clock.into_shared(), Tags::default())
    }

    pub(crate) fn with_parts(
        name: Name,
        config: RateLimiterConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        let cluster = config
            .cluster
            .clone()
            .map(|c| cluster::Cluster::new(c, &name));
        let inner = Arc::new(Inner {
            events: EventPublisher::new(name.clone(), clock.clone()),
            core: Core::new(&config, clock.now().as_u64()),
            name,
            clock,
            tags,
            waiting: AtomicU32::new(0),
            event_consumer_buffer_size: AtomicU32::new(config.event_consumer_buffer_size),
            shadow: AtomicBool::new(config.shadow),
            cluster,
        });
        if let Some(c) = &inner.cluster {
            let weak = Arc::downgrade(&inner);
            let key = std::sync::Arc::clone(&c.key);
            c.settings.backend.watch(
                &key,
                Box::new(move |up| {
                    if let Some(inner) = weak.upgrade()
                        && let Some(c) = &inner.cluster
                        && c.observe(up)
                    {
                        inner
                            .events
                            .publish(|| RateLimiterEvent::ClusterBackendChanged { up });
                    }
                }),
            );
        }
        RateLimiter { inner }
    }

    /// The fleet-wide counters and the backend's state, for a limiter whose
    /// limit is shared with other processes (see [`crate::cluster`]).
    pub fn cluster_metrics(&self) -> Option<ClusterLimiterMetrics> {
        self.inner.cluster.as_ref().map(cluster::Cluster::metrics)
    }

    /// The limiter's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The limiter's configuration as it is now (limit and timeout included,
    /// after any change).
    pub fn config(&self) -> RateLimiterConfig {
        let core = &self.inner.core;
        RateLimiterConfig {
            limit_for_period: core.epoch().limit as u32,
            limit_refresh_period: Duration::from_nanos(core.period()),
            timeout_duration: Duration::from_nanos(core.timeout()),
            event_consumer_buffer_size: self
                .inner
                .event_consumer_buffer_size
                .load(Ordering::Relaxed),
            shadow: self.inner.shadow.load(Ordering::Relaxed),
            cluster: self.inner.cluster.as_ref().map(|c| c.settings.clone()),
        }
    }

    /// Applies `config` in place, keeping the current cycle and its count:
    /// a new `limit_for_period` applies from the next cycle (as
    /// [`RateLimiter::change_limit_for_period`]), a new timeout to acquires
    /// that start from now on, shadow mode to the next decision.
    ///
    /// # Errors
    ///
    /// [`ChangeRefused`] for a new `limit_refresh_period` (the cycles are
    /// counted in it since the limiter was created) or new cluster settings,
    /// which take a restart, and for a new limit on a limiter shared by a
    /// fleet; the limiter is unchanged then.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::ManualClock;
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(10)
    ///     .limit_refresh_period(Duration::from_secs(1))
    ///     .build()?;
    /// let limiter = RateLimiter::with_clock("search", config.clone(), clock.clone());
    /// assert!(limiter.try_acquire_permission(4));
    /// limiter.change_config(config.to_builder().limit_for_period(2).build()?)?;
    /// assert_eq!(limiter.metrics().available_permissions(), 6); // this cycle keeps its count
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(limiter.metrics().available_permissions(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn change_config(&self, config: RateLimiterConfig) -> Result<(), ChangeRefused> {
        self.can_change_config(&config)?;
        let inner = &*self.inner;
        inner.shadow.store(config.shadow, Ordering::Relaxed);
        inner
            .event_consumer_buffer_size
            .store(config.event_consumer_buffer_size, Ordering::Relaxed);
        let timeout = config.timeout_duration.as_nanos() as u64;
        if inner.core.timeout() != timeout {
            inner.core.set_timeout(timeout);
        }
        let limit = u64::from(config.limit_for_period);
        if inner.core.epoch().limit != limit {
            inner.core.set_limit(|| inner.now(), limit);
        }
        Ok(())
    }

    /// Whether [`RateLimiter::change_config`] would accept `config`.
    ///
    /// # Errors
    ///
    /// The [`ChangeRefused`] that `change_config` would return.
    pub fn can_change_config(&self, config: &RateLimiterConfig) -> Result<(), ChangeRefused> {
        let inner = &*self.inner;
        if config.period_nanos() != inner.core.period() {
            return Err(ChangeRefused::fixed("limit_refresh_period"));
        }
        let cluster = inner.cluster.as_ref().map(|c| &c.settings);
        if cluster != config.cluster.as_ref() {
            return Err(ChangeRefused::fixed("cluster"));
        }
        if cluster.is_some() && inner.core.epoch().limit != u64::from(config.limit_for_period) {
            return Err(ChangeRefused::fixed("limit_for_period"));
        }
        Ok(())
    }

    /// The limiter's tags (registry tags overlaid by instance tags).
    pub fn tags(&self) -> &Tags {
        &self.inner.tags
    }

    /// The clock the limiter reads and waits on.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// Subscriptions and the recent-events buffer.
    pub fn event_publisher(&self) -> &EventPublisher<RateLimiterEvent> {
        &self.inner.events
    }

    /// A snapshot of the limiter's counts, refreshed to now.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::ManualClock;
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(5)
    ///     .limit_refresh_period(Duration::from_secs(1))
    ///     .build()?;
    /// let limiter = RateLimiter::with_clock("search", config, clock.clone());
    /// assert!(limiter.try_acquire_permission(5));
    /// clock.advance(Duration::from_millis(400));
    /// let m = limiter.metrics();
    /// assert_eq!(m.available_permissions(), 0);
    /// assert_eq!(m.nanos_to_wait(), Duration::from_millis(600));
    /// assert_eq!(m.number_of_waiting_threads(), 0);
    /// # Ok::<(), resil_core::ConfigError>(())
    /// ```
    pub fn metrics(&self) -> RateLimiterMetrics {
        let (nanos_to_wait, mut available, cycle) = self.inner.next_permit();
        if let Some(c) = &self.inner.cluster
            && c.settings.backend.is_up(&c.key)
        {
            // the permits this process holds of the fleet's cycle
            available = c.leased_now(self.inner.now());
        }
        RateLimiterMetrics {
            available_permissions: available,
            waiting_threads: self.inner.waiting.load(Ordering::Relaxed),
            nanos_to_wait,
            cycle,
        }
    }

    /// Reserves `permits` and returns how long the caller must wait before
    /// using them: zero when they are available now. Publishes
    /// `SuccessfulAcquire` or `FailedAcquire` at once.
    ///
    /// The caller waits itself (or not); the reservation stands either way.
    ///
    /// # Errors
    ///
    /// [`RequestNotPermitted`] when the permits would come later than the
    /// timeout; nothing is reserved then.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::ManualClock;
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    /// use std::time::Duration;
    ///
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(10)
    ///     .limit_refresh_period(Duration::from_millis(100))
    ///     .timeout_duration(Duration::from_millis(250))
    ///     .build()?;
    /// let limiter = RateLimiter::with_clock("export", config, ManualClock::new());
    /// assert_eq!(limiter.reserve_permission(10), Ok(Duration::ZERO));
    /// assert_eq!(limiter.reserve_permission(15), Ok(Duration::from_millis(200)));
    /// assert!(limiter.reserve_permission(10).is_err()); // 300 ms away
    /// # Ok::<(), resil_core::ConfigError>(())
    /// ```
    pub fn reserve_permission(&self, permits: u32) -> Result<Duration, RequestNotPermitted> {
        let inner = &*self.inner;
        let decision = inner.decide(permits, inner.core.timeout());
        inner.publish(decision, permits);
        match decision {
            Decision::Granted { wait } => Ok(Duration::from_nanos(wait)),
            Decision::Refused => Err(inner.refusal()),
        }
    }

    /// Takes `permits` if they are available now; never waits and never
    /// reserves. Publishes `SuccessfulAcquire` or `FailedAcquire`.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    /// use std::time::Duration;
    ///
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(3)
    ///     .limit_refresh_period(Duration::from_secs(60))
    ///     .build()?;
    /// let limiter = RateLimiter::new("login", config);
    /// assert!(limiter.try_acquire_permission(2));
    /// assert!(!limiter.try_acquire_permission(2)); // only 1 left
    /// assert!(limiter.try_acquire_permission(1));
    /// # Ok::<(), resil_core::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_permission(&self, permits: u32) -> bool {
        let inner = &*self.inner;
        let decision = inner.decide(permits, 0);
        inner.publish(decision, permits);
        matches!(decision, Decision::Granted { .. })
    }

    /// Takes `permits`, waiting on the clock (`Clock::sleep_async`) until
    /// their cycle if that is within the timeout. A refusal also waits, for
    /// the whole timeout, as in Resilience4j. The event is published after the wait.
    ///
    /// A fleet-wide limiter (with cluster settings) that must ask its
    /// backend awaits the answer, for at most the cluster timeout, without
    /// blocking the thread: on a stalled backend, the runtime's other tasks
    /// keep running.
    ///
    /// Dropping the future while it waits keeps the reservation (see the
    /// [module documentation](self)).
    ///
    /// # Errors
    ///
    /// [`RequestNotPermitted`] when the permits would come later than the timeout.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::{Clock, TokioClock};
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(10)
    ///     .limit_refresh_period(Duration::from_secs(1))
    ///     .timeout_duration(Duration::from_secs(2))
    ///     .build()?;
    /// let limiter = RateLimiter::with_clock("batch", config, TokioClock::new());
    /// limiter.acquire_permission(10).await?; // at once
    /// limiter.acquire_permission(15).await?; // waits two cycles
    /// assert_eq!(limiter.clock().now().as_duration(), Duration::from_secs(2));
    /// assert!(limiter.acquire_permission(30).await.is_err()); // too far away
    /// # Ok(())
    /// # }
    /// ```
    pub async fn acquire_permission(&self, permits: u32) -> Result<(), RequestNotPermitted> {
        let inner = &*self.inner;
        let timeout = inner.core.timeout();
        let decision = inner.decide_async(permits, timeout).await;
        if let Some(wait) = decision.wait(timeout) {
            let _waiting = Waiting::new(inner);
            inner.clock.sleep_async(wait).await;
        }
        inner.finish(decision, permits)
    }

    /// Like [`RateLimiter::acquire_permission`], blocking the thread on the
    /// clock (`Clock::sleep`) while it waits.
    ///
    /// # Errors
    ///
    /// [`RequestNotPermitted`] when the permits would come later than the timeout.
    #[inline]
    pub fn acquire_permission_blocking(&self, permits: u32) -> Result<(), RequestNotPermitted> {
        let inner = &*self.inner;
        let timeout = inner.core.timeout();
        let decision = inner.decide(permits, timeout);
        if let Some(wait) = decision.wait(timeout) {
            let _waiting = Waiting::new(inner);
            inner.clock.sleep(wait);
        }
        inner.finish(decision, permits)
    }

    /// Empties the current cycle: its available permits become 0 (forgiving
    /// outstanding reservations, whose callers still proceed) until the next
    /// refill. Publishes `Drained` with the count it took away.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::ManualClock;
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(10)
    ///     .limit_refresh_period(Duration::from_secs(1))
    ///     .build()?;
    /// let limiter = RateLimiter::with_clock("partner-api", config, clock.clone());
    /// // The partner answered "429 Too Many Requests": stop for this cycle.
    /// limiter.drain_permissions();
    /// assert!(!limiter.try_acquire_permission(1));
    /// clock.advance(Duration::from_secs(1));
    /// assert!(limiter.try_acquire_permission(1));
    /// # Ok::<(), resil_core::ConfigError>(())
    /// ```
    pub fn drain_permissions(&self) {
        let inner = &*self.inner;
        let mut drained = inner.core.drain(|| inner.now());
        if let Some(c) = &inner.cluster {
            // a fleet-wide limiter drains the permits it leased (the fleet's
            // cycle goes on for the other processes)
            drained = c.drain(inner.now());
        }
        inner
            .events
            .publish(|| RateLimiterEvent::Drained { permits: drained });
    }

    /// Changes the permits per cycle from the next refill on; the current
    /// cycle keeps its count.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] for a limit below 1 or above one permit per
    /// nanosecond of the refresh period; the limiter is unchanged then.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::ManualClock;
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(10)
    ///     .limit_refresh_period(Duration::from_secs(1))
    ///     .build()?;
    /// let limiter = RateLimiter::with_clock("search", config, clock.clone());
    /// assert!(limiter.try_acquire_permission(4));
    /// limiter.change_limit_for_period(2)?;
    /// assert_eq!(limiter.metrics().available_permissions(), 6); // this cycle keeps its count
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(limiter.metrics().available_permissions(), 2);
    /// assert!(limiter.change_limit_for_period(0).is_err());
    /// # Ok::<(), resil_core::ConfigError>(())
    /// ```
    pub fn change_limit_for_period(&self, limit: u32) -> Result<(), ConfigError> {
        let inner = &*self.inner;
        let mut p = Problems::default();
        config::check_limit(&mut p, limit, Duration::from_nanos(inner.core.period()));
        p.finish(())?;
        inner.core.set_limit(|| inner.now(), u64::from(limit));
        Ok(())
    }

    /// Changes the timeout for acquires that start from now on (waits in
    /// progress keep theirs, as in Resilience4j).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] for a timeout beyond [`MAX_DURATION`]; the limiter
    /// is unchanged then.
    pub fn change_timeout_duration(&self, timeout: Duration) -> Result<(), ConfigError> {
        let mut p = Problems::default();
        config::check_timeout(&mut p, timeout);
        p.finish(())?;
        self.inner.core.set_timeout(timeout.as_nanos() as u64);
        Ok(())
    }

    /// Runs `f` once a permit is acquired (blocking while it waits, up to
    /// the timeout).
    ///
    /// # Errors
    ///
    /// [`Error::RequestNotPermitted`] when refused, [`Error::Inner`] with `f`'s error.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    /// use resil_core::Error;
    /// use std::time::Duration;
    ///
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(1)
    ///     .limit_refresh_period(Duration::from_secs(60))
    ///     .timeout_duration(Duration::ZERO)
    ///     .build()?;
    /// let limiter = RateLimiter::new("sms", config);
    /// assert_eq!(limiter.call(|| Ok::<_, std::io::Error>("sent")).unwrap(), "sent");
    /// assert!(matches!(limiter.call(|| Ok::<_, std::io::Error>("sent")), Err(Error::RequestNotPermitted(_))));
    /// # Ok::<(), resil_core::ConfigError>(())
    /// ```
    #[inline]
    pub fn call<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E>,
    {
        Stack::new()
            .rate_limiter(self.part(1))
            .fault(FaultPart::global(self.name()))
            .call(Lift(once(f)))
    }

    /// Runs the future that `f` returns once a permit is acquired (waiting
    /// asynchronously, up to the timeout).
    ///
    /// The permit is reserved when this method is called, and `f` called
    /// then if no wait is needed (as Resilience4j's decorated
    /// `CompletionStage` supplier does when invoked); otherwise the returned
    /// future sleeps on the limiter's clock until the permit is due and
    /// calls `f` after the wait; beyond the timeout, it waits the whole
    /// timeout and fails, as in Resilience4j. Dropping it while it waits
    /// keeps the reservation (see the [module documentation](self)).
    ///
    /// # Errors
    ///
    /// [`Error::RequestNotPermitted`] when refused, [`Error::Inner`] with the future's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::{Clock, TokioClock};
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), resil_core::ConfigError> {
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(1)
    ///     .limit_refresh_period(Duration::from_secs(1))
    ///     .build()?;
    /// let limiter = RateLimiter::with_clock("mail", config, TokioClock::new());
    /// for _ in 0..3 {
    ///     limiter.call_async(|| async { Ok::<_, std::io::Error>(()) }).await.unwrap();
    /// }
    /// // The first call went at once, the 2nd and 3rd each waited for a new cycle.
    /// assert_eq!(limiter.clock().now().as_duration(), Duration::from_secs(2));
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
            .rate_limiter(self.part(1))
            .fault(FaultPart::global(self.name()))
            .call_async(Lift(once(f)))
    }
}

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter")
            .field("name", &self.inner.name)
            .field("config", &self.config())
            .finish_non_exhaustive()
    }
}
