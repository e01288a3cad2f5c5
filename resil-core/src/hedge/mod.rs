//! The hedge: when an attempt is slow, start a sibling and take whichever
//! answers first.
//!
//! A hedged call starts its primary attempt. If it has not answered after
//! the delay, a hedged attempt starts beside it, and so on up to
//! `max_hedged_attempts` beside the primary; an attempt that fails starts
//! the next one at once. The first success wins and the attempts still
//! running are dropped, which cancels them: each gives back what it held
//! below the hedge (a bulkhead's permit, a breaker's probe, its place in a
//! rate limiter's queue). When every attempt fails, the caller gets the
//! last error, as with Polly's hedging.
//!
//! The delay is fixed (`delay`), or a percentile of the instance's recent
//! successful latencies (`delay_percentile`: p95 hedges about one call in
//! twenty), which falls back to `delay` until enough latencies are seen
//! (see [`min_samples`]). The latencies live in a fixed histogram over a
//! rolling window of ten to twenty seconds ([`PERIOD`]): bounded memory,
//! no allocation and no lock per call.
//!
//! Hedging calls the operation again, so it is for calls that can run
//! twice at once (reads, idempotent writes). In a chain the hedge sits
//! inside the retry and outside the breaker: each attempt passes the
//! breaker, rate limiter, time limiter and bulkhead below it.
//!
//! # Cost
//!
//! The primary attempt runs in place. A call whose primary answers at its
//! first poll costs a configuration load and a counter; one that is
//! pending arms the delay's timer, as a time limiter arms its timeout. A
//! hedged attempt is boxed when it starts (one allocation per hedged
//! attempt, beside the timer's), since it lives next to the primary.
//!
//! Only async calls can be hedged: a blocking call has nothing to run
//! beside it. A hedge's node implements no `SyncNode`, so a blocking chain
//! with a hedge does not compile.
//!
//! # Clocks
//!
//! The delay is a timer of the hedge's clock (`Clock::sleep_async`): with
//! a [`TokioClock`](crate::clock::TokioClock) and paused tokio time a test
//! sees exactly which calls are hedged. On a
//! [`ManualClock`](crate::clock::ManualClock) a timer is done at once, so
//! every primary not done at its first poll is hedged.
//!
//! # Examples
//!
//! ```
//! use resil_core::clock::TokioClock;
//! use resil_core::hedge::{Hedge, HedgeConfig};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), resil_core::ConfigError> {
//! let config = HedgeConfig::builder().delay(Duration::from_millis(50)).build()?;
//! let hedge = Hedge::with_clock("inventory-query", config, TokioClock::new());
//!
//! let mut attempt = 0;
//! let stock = hedge
//!     .call_async(|| {
//!         attempt += 1;
//!         // the primary hangs; the hedged attempt answers in 10 ms
//!         let latency = if attempt == 1 { 10_000 } else { 10 };
//!         async move {
//!             tokio::time::sleep(Duration::from_millis(latency)).await;
//!             Ok::<_, std::io::Error>(attempt)
//!         }
//!     })
//!     .await;
//! assert_eq!(stock.unwrap(), 2);
//! assert_eq!(hedge.metrics().number_of_hedge_wins(), 1);
//! # Ok(())
//! # }
//! ```

mod config;
mod event;
mod layer;
mod percentile;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub use self::config::{HedgeConfig, HedgeConfigBuilder, MAX_HEDGED_ATTEMPTS};
pub use self::event::{HedgeEvent, HedgeEventType};
pub use self::layer::{HedgeAttempt, HedgeNode, HedgePart};
pub use self::percentile::{PERIOD, min_samples};

use self::percentile::Latencies;
use crate::chain::{Lift, Stack};
use crate::clock::{Clock, Nanos, SharedClock, SystemClock};
use crate::error::Error;
use crate::event::EventPublisher;
use crate::fault::FaultPart;
use crate::live::{ChangeRefused, Live};
use crate::{Name, Tags};

/// A hedge. Cheap to clone: clones share one hedge.
///
/// See the [module documentation](self).
#[derive(Clone)]
pub struct Hedge {
    inner: Arc<Inner>,
}

#[doc(hidden)]
pub struct Inner {
    pub(crate) name: Name,
    pub(crate) config: Live<HedgeConfig>,
    pub(crate) clock: SharedClock,
    pub(crate) tags: Tags,
    latencies: Latencies,
    primary_wins: AtomicU64,
    hedge_wins: AtomicU64,
    failed: AtomicU64,
    hedged_attempts: AtomicU64,
    pub(crate) events: EventPublisher<HedgeEvent>,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inner")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Inner {
    /// The delay before the next hedged attempt, at `now`.
    pub(crate) fn delay(&self, now: impl FnOnce() -> Nanos) -> Duration {
        let config = self.config.load();
        match config.delay_percentile {
            None => config.delay,
            Some(p) => self.latencies.percentile(now(), p).unwrap_or(config.delay),
        }
    }

    /// Counts a successful latency for the percentile.
    #[inline]
    pub(crate) fn record_latency(&self, now: Nanos, latency: Duration) {
        self.latencies.record(now, latency);
    }

    #[inline]
    pub(crate) fn primary_won(&self) {
        self.primary_wins.fetch_add(1, Ordering::Relaxed);
    }

    #[cold]
    pub(crate) fn hedged(&self, attempt: u32, delay: Option<Duration>) {
        self.hedged_attempts.fetch_add(1, Ordering::Relaxed);
        self.events
            .publish(|| HedgeEvent::Hedged { attempt, delay });
    }

    /// The budget denied hedged attempt `attempt`: the call goes on with
    /// the attempts it has.
    #[cold]
    pub(crate) fn budget_exhausted(&self, attempt: u32) {
        self.events
            .publish(|| HedgeEvent::BudgetExhausted { attempt });
    }

    /// A call that hedged ended with a success of `winner`.
    #[cold]
    pub(crate) fn won(&self, winner: u32, attempts: u32) {
        if winner == 0 {
            self.primary_wins.fetch_add(1, Ordering::Relaxed);
        } else {
            self.hedge_wins.fetch_add(1, Ordering::Relaxed);
        }
        self.events
            .publish(|| HedgeEvent::Success { winner, attempts });
    }

    /// Every attempt failed.
    #[cold]
    pub(crate) fn all_failed(&self, attempts: u32, error_kind: Option<&'static str>) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        self.events.publish(|| HedgeEvent::Error {
            attempts,
            error_kind,
        });
    }
}

/// Call counts of a hedge since its creation, taken by
/// [`Hedge::metrics`]: `resil_hedge_calls_total{winner}` and
/// `resil_hedge_attempts_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HedgeMetrics {
    primary_wins: u64,
    hedge_wins: u64,
    failed: u64,
    hedged_attempts: u64,
}

impl HedgeMetrics {
    /// Calls the primary attempt won (`winner="primary"`), hedged or not.
    pub fn number_of_primary_wins(&self) -> u64 {
        self.primary_wins
    }
    /// Calls a hedged attempt won (`winner="hedge"`).
    pub fn number_of_hedge_wins(&self) -> u64 {
        self.hedge_wins
    }
    /// Calls whose every attempt failed (`winner="none"`).
    pub fn number_of_failed_calls(&self) -> u64 {
        self.failed
    }
    /// Hedged attempts started (the primaries are not counted).
    pub fn number_of_hedged_attempts(&self) -> u64 {
        self.hedged_attempts
    }
}

impl Hedge {
    /// A hedge with the defaults (100 ms, one hedged attempt) on the system
    /// clock.
    pub fn of_defaults(name: impl Into<Name>) -> Self {
        Self::new(name, HedgeConfig::default())
    }

    /// A hedge on the system clock (tokio timers).
    pub fn new(name: impl Into<Name>, config: HedgeConfig) -> Self {
        Self::with_clock(name, config, SystemClock::new())
    }

    /// A hedge on `clock` (see the module's notes on clocks).
    pub fn with_clock(name: impl Into<Name>, config: HedgeConfig, clock: impl Clock) -> Self {
        Self::with_parts(name.into(), config, clock.into_shared(), Tags::default())
    }

    pub(crate) fn with_parts(
        name: Name,
        config: HedgeConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        Hedge {
            inner: Arc::new(Inner {
                events: EventPublisher::new(name.clone(), clock.clone()),
                name,
                config: Live::new(config),
                clock,
                tags,
                latencies: Latencies::new(),
                primary_wins: AtomicU64::new(0),
                hedge_wins: AtomicU64::new(0),
                failed: AtomicU64::new(0),
                hedged_attempts: AtomicU64::new(0),
            }),
        }
    }

    /// The hedge's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The hedge's configuration.
    pub fn config(&self) -> &HedgeConfig {
        self.inner.config.load()
    }

    /// Applies `config` in place: calls that start from now on use it (a
    /// call keeps the number of attempts it started with; the delay of its
    /// next hedged attempt is read when that attempt's timer starts). The
    /// counts and the recent latencies are kept.
    ///
    /// # Errors
    ///
    /// [`ChangeRefused`] when the hedge already holds
    /// [`MAX_VERSIONS`](crate::live::MAX_VERSIONS) distinct configurations;
    /// it is unchanged then.
    pub fn change_config(&self, config: HedgeConfig) -> Result<(), ChangeRefused> {
        self.inner.config.store(config, |a, b| a == b).map(|_| ())
    }

    /// Whether [`Hedge::change_config`] would accept `config`.
    pub fn can_change_config(&self, config: &HedgeConfig) -> Result<(), ChangeRefused> {
        self.inner.config.fits(|v| v == config)
    }

    /// The hedge's tags (registry tags overlaid by instance tags).
    pub fn tags(&self) -> &Tags {
        &self.inner.tags
    }

    /// The clock whose timers the hedge uses.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// Subscriptions and the recent-events buffer.
    pub fn event_publisher(&self) -> &EventPublisher<HedgeEvent> {
        &self.inner.events
    }

    /// The call counts so far.
    pub fn metrics(&self) -> HedgeMetrics {
        let i = &self.inner;
        HedgeMetrics {
            primary_wins: i.primary_wins.load(Ordering::Relaxed),
            hedge_wins: i.hedge_wins.load(Ordering::Relaxed),
            failed: i.failed.load(Ordering::Relaxed),
            hedged_attempts: i.hedged_attempts.load(Ordering::Relaxed),
        }
    }

    /// The delay the next hedged call would wait before its first hedged
    /// attempt: `delay`, or the percentile of the recent latencies once
    /// enough are seen.
    pub fn current_delay(&self) -> Duration {
        self.inner.delay(|| self.inner.clock.now())
    }

    /// Runs the futures that `f` returns, hedged: `f` makes each attempt,
    /// so it is called once per attempt.
    ///
    /// The primary attempt is made when this method is called.
    ///
    /// # Errors
    ///
    /// [`Error::Inner`] with the last attempt's error when every attempt
    /// failed.
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
            .hedge(self.part())
            .fault(FaultPart::global(self.name()))
            .call_async(Lift(f))
    }
}

impl fmt::Debug for Hedge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hedge")
            .field("name", &self.inner.name)
            .field("config", self.inner.config.load())
            .finish_non_exhaustive()
    }
}
