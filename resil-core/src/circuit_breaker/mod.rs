//! The circuit breaker: stop calling a dependency that keeps failing, and probe
//! it before trusting it again.
//!
//! A breaker records the outcome of every call in a sliding window (the last N
//! calls, or the calls of the last N seconds). Once the window holds
//! `minimum_number_of_calls`, it computes two rates: failed calls and slow
//! calls (strictly longer than `slow_call_duration_threshold`), in percent.
//! When either rate reaches its threshold (`>=`), CLOSED moves to OPEN and
//! refuses calls for the wait in OPEN; the next request after that wait
//! (strictly after), or a timer when
//! `automatic_transition_from_open_to_half_open_enabled` is set, moves it to
//! HALF_OPEN, which admits `permitted_number_of_calls_in_half_open_state`
//! probes and decides after `min(minimum_number_of_calls, permitted)` of them:
//! back to CLOSED when both rates are below their thresholds, else OPEN again
//! with a wait from the open-state interval function, whose attempt counter
//! grows on each consecutive opening.
//!
//! FORCED_OPEN, DISABLED and METRICS_ONLY are manual states: refuse
//! everything, admit everything without recording, or admit and record
//! without ever opening.
//!
//! This is Resilience4j 2.2's state machine, with its defaults, its
//! transition table and its event order. Each state has its own one-shot gate
//! (a compare-and-swap on the state word's generation), so concurrent callers
//! open a breaker exactly once and HALF_OPEN never admits more probes than
//! permitted.
//!
//! A call's outcome is recorded in the state current when it completes, as in
//! Resilience4j: a probe admitted by an older HALF_OPEN (the breaker has since
//! opened and half-opened again) counts in the newer HALF_OPEN's window and
//! may decide it. Only its permit is tied to the state that issued it: it is
//! never given to a newer HALF_OPEN's budget.
//!
//! # Panics in user code
//!
//! A panic in the guarded call, or in a user's predicate while its outcome is
//! classified, is recorded as one failure (kind `"panic"`), frees the call's
//! permit and is resumed. A panicking open-state interval function does not
//! stop the transition: the breaker opens for Resilience4j's default wait
//! (60 s), arms its timer, and the panic is resumed (dropped instead when the
//! thread is already unwinding, so a second panic never aborts the process).
//! An async call's future dropped by an unwind that is not its own (another
//! value's destructor, a panic beside it) gives its permit back and records
//! nothing.
//!
//! # Examples
//!
//! ```
//! use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
//! use resil_core::clock::ManualClock;
//! use resil_core::Error;
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let config = CircuitBreakerConfig::builder()
//!     .sliding_window_size(4)
//!     .minimum_number_of_calls(4)
//!     .wait_duration_in_open_state(Duration::from_secs(10))
//!     .permitted_number_of_calls_in_half_open_state(2)
//!     .build()?;
//! let cb = CircuitBreaker::with_clock("inventory-query", config, clock.clone());
//!
//! for _ in 0..4 {
//!     let _ = cb.call(|| Err::<(), _>("connection refused"));
//! }
//! assert_eq!(cb.state(), State::Open);
//! assert!(matches!(cb.call(|| Ok::<_, &str>(1)), Err(Error::CallNotPermitted(_))));
//!
//! clock.advance(Duration::from_secs(11));
//! assert_eq!(cb.call(|| Ok::<_, &str>(1)), Ok(1)); // the first probe
//! assert_eq!(cb.call(|| Ok::<_, &str>(2)), Ok(2)); // the second decides
//! assert_eq!(cb.state(), State::Closed);
//! # Ok::<(), resil_core::ConfigError>(())
//! ```

mod classifier;
mod cluster;
mod config;
mod core;
mod error;
mod event;
mod layer;
mod metrics;
mod state;
mod timing;
mod window;

#[cfg(all(test, resil_loom))]
mod loom;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use self::classifier::{CircuitBreakerClassifier, TransitionCheckResult, TransitionOnResult};
pub use self::config::{
    CircuitBreakerConfig, CircuitBreakerConfigBuilder, MAX_WINDOW_SIZE, SlidingWindowType,
};
#[doc(hidden)]
pub use self::core::Inner;
pub use self::error::{
    ForcedOpenLimitOutOfRange, IllegalStateTransition, MAX_FORCED_OPEN_LIMIT, MIN_FORCED_OPEN_LIMIT,
};
pub use self::event::{CircuitBreakerEvent, CircuitBreakerEventType};
pub use self::layer::{CallGuard, CircuitBreakerAttempt, CircuitBreakerNode, CircuitBreakerPart};
pub use self::metrics::CircuitBreakerMetrics;
pub use self::state::State;
pub use crate::rejection::CallNotPermitted;

use self::state::Word;
use self::timing::CallClock;
use self::window::Window;
use crate::chain::{Lift, Stack, once};
use crate::clock::{Clock, Nanos, SharedClock, SystemClock, TimerHandle, saturating_nanos};
use crate::error::Error;
use crate::event::EventPublisher;
use crate::fault::FaultPart;
use crate::live::{ChangeRefused, Live, same_printed};
use crate::sync::{AtomicU32, AtomicU64, Mutex, Ordering, lock};
use crate::{Name, Tags};

/// A circuit breaker. Cheap to clone: clones share one breaker.
///
/// See the [module documentation](self) for the state machine.
#[derive(Clone)]
pub struct CircuitBreaker {
    inner: Arc<Inner>,
}

use self::core::{
    MetricsCell, Settings, Target, Verdict, half_open_permits, initial_slot, same_config,
};
impl CircuitBreaker {
    /// A breaker with Resilience4j's defaults on the system clock.
    pub fn of_defaults(name: impl Into<Name>) -> Self {
        Self::new(name, CircuitBreakerConfig::default())
    }

    /// A breaker on the system clock.
    pub fn new(name: impl Into<Name>, config: CircuitBreakerConfig) -> Self {
        Self::with_clock(name, config, SystemClock::new())
    }

    /// A breaker on `clock` ([`ManualClock`](crate::clock::ManualClock) in tests,
    /// [`TokioClock`](crate::clock::TokioClock) under paused tokio time).
    pub fn with_clock(
        name: impl Into<Name>,
        config: CircuitBreakerConfig,
        clock: impl Clock,
    ) -> Self {
        Self::with_parts(name.into(), config, clock.into_shared(), Tags::default())
    }

    pub(crate) fn with_parts(
        name: Name,
        config: CircuitBreakerConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        let now_sec = clock.now().as_secs();
        let permitted = half_open_permits(&config);
        let initial_state = config.initial_state;
        let events = EventPublisher::new(name.clone(), clock.clone());
        let cluster = config
            .cluster
            .clone()
            .map(|c| Box::new(cluster::Cluster::new(c, &name, permitted)));
        let inner = Arc::new_cyclic(|me| Inner {
            cluster,
            me: me.clone(),
            name,
            settings: Live::new(Settings::new(config, now_sec, None)),
            clock: CallClock::new(clock),
            tags,
            // Resilience4j 2.3's `initialState`: set, not transitioned to
            word: AtomicU64::new(Word::new(initial_state, initial_slot(initial_state), 0, 0).0),
            open_until: AtomicU64::new(0),
            attempts: AtomicU32::new(u32::from(initial_state == State::ForcedOpen)),
            metrics_only_published: AtomicU32::new(0),
            empty: MetricsCell::new(Window::Empty),
            transition_lock: Mutex::new(()),
            timer: Mutex::new((0, TimerHandle::none())),
            events,
        });
        inner
            .clock
            .set_coarse(inner.settings.load().coarse_eligible());
        if let Some(c) = &inner.cluster {
            let weak = Arc::downgrade(&inner);
            let key = Arc::clone(&c.key);
            c.settings.backend().watch(
                &key,
                Box::new(move |up| {
                    if let Some(inner) = weak.upgrade()
                        && let Some(c) = &inner.cluster
                        && c.observe(up)
                    {
                        inner
                            .events
                            .publish(|| CircuitBreakerEvent::ClusterBackendChanged { up });
                    }
                }),
            );
        }
        CircuitBreaker { inner }
    }

    /// The breaker's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The breaker's configuration.
    pub fn config(&self) -> &CircuitBreakerConfig {
        &self.inner.settings.load().config
    }

    /// Applies `config` in place, keeping the state.
    ///
    /// - The window is kept, with its calls, while its type and size are
    ///   unchanged; a new type or size starts an empty window (the state is
    ///   kept: a CLOSED breaker stays CLOSED until the new window trips it).
    ///   The same holds for the half-open window and
    ///   `permitted_number_of_calls_in_half_open_state`; a half-open episode
    ///   in progress keeps its remaining probes.
    /// - Thresholds, the slow-call duration and the error lists apply to
    ///   calls that start from now on: a call in flight is classified and
    ///   recorded under the settings it started with.
    /// - The open-state wait, automatic transition and half-open wait apply
    ///   from the next transition.
    /// - A new `initial_state` moves the breaker to it (publishing the
    ///   transition), so a reload can switch `METRICS_ONLY`, the breaker's
    ///   shadow mode, on and off; from METRICS_ONLY to CLOSED and back the
    ///   window is kept, as the two states share it.
    ///
    /// # Errors
    ///
    /// [`ChangeRefused`] for new cluster settings, a new half-open budget on
    /// a breaker shared by a fleet, or past [`MAX_VERSIONS`](crate::live::MAX_VERSIONS)
    /// distinct configurations; the breaker is unchanged then.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
    ///
    /// let config = CircuitBreakerConfig::builder()
    ///     .sliding_window_size(4)
    ///     .minimum_number_of_calls(4)
    ///     .build()?;
    /// let cb = CircuitBreaker::new("inventory-query", config.clone());
    /// let handle = cb.clone();
    /// for _ in 0..2 {
    ///     let _ = cb.call(|| Err::<(), _>("down"));
    /// }
    /// // the same window, a lower threshold: two failures of four calls open it
    /// cb.change_config(config.to_builder().failure_rate_threshold(40.0).build()?)?;
    /// for _ in 0..2 {
    ///     let _ = cb.call(|| Ok::<_, &str>(()));
    /// }
    /// assert_eq!(handle.state(), State::Open);
    /// assert_eq!(handle.config().failure_rate_threshold(), 40.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn change_config(&self, config: CircuitBreakerConfig) -> Result<(), ChangeRefused> {
        self.can_change_config(&config)?;
        let inner = &*self.inner;
        let to = config.initial_state;
        let from = {
            // Serialized with transitions, so that a window swapped in is
            // not reset by a transition that read the one before.
            let _serial = lock(&inner.transition_lock);
            let now = inner.clock.precise();
            let before = inner.settings.load();
            let from = before.config.initial_state;
            let next = Settings::new(config, now.as_secs(), Some(before));
            inner
                .settings
                .store_prepared(next, same_config, |next, current| {
                    // an earlier version's window (reused) holds old calls
                    for (n, c) in [
                        (&next.closed, &current.closed),
                        (&next.half_open, &current.half_open),
                    ] {
                        if !Arc::ptr_eq(n, c) {
                            n.window.reset(now);
                            n.not_permitted.store(0, Ordering::Relaxed);
                        }
                    }
                })?;
            inner
                .clock
                .set_coarse(inner.settings.load().coarse_eligible());
            from
        };
        if to != from && self.state() != to {
            let target = match (self.state(), to) {
                (State::MetricsOnly, State::Closed) => Target::ClosedKeepingWindow,
                (State::Closed, State::MetricsOnly) => Target::MetricsOnlyKeepingWindow,
                (_, State::Closed) => Target::Closed,
                (_, State::MetricsOnly) => Target::MetricsOnly,
                (_, State::Disabled) => Target::Disabled,
                _ => Target::ForcedOpen,
            };
            // A state that cannot move there (none today) keeps its own.
            let _ = inner.manual(target);
        }
        Ok(())
    }

    /// Whether [`CircuitBreaker::change_config`] would accept `config`.
    ///
    /// # Errors
    ///
    /// The [`ChangeRefused`] that `change_config` would return.
    pub fn can_change_config(&self, config: &CircuitBreakerConfig) -> Result<(), ChangeRefused> {
        let settings = self.inner.settings.load();
        let current = &settings.config;
        // compared by backend, not as printed: the printed URL hides its password
        if current.cluster != config.cluster {
            return Err(ChangeRefused::fixed("cluster"));
        }
        if current.cluster.is_some() && half_open_permits(current) != half_open_permits(config) {
            return Err(ChangeRefused::fixed(
                "permitted_number_of_calls_in_half_open_state",
            ));
        }
        self.inner
            .settings
            .fits(|v| same_printed(&v.config, config))
    }

    /// The breaker's tags (registry tags overlaid by instance tags).
    pub fn tags(&self) -> &BTreeMap<String, String> {
        &self.inner.tags
    }

    /// The clock the breaker reads.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// Returns the current state.
    pub fn state(&self) -> State {
        self.inner.load().state()
    }

    /// Subscriptions and the recent-events buffer.
    pub fn event_publisher(&self) -> &EventPublisher<CircuitBreakerEvent> {
        // Whoever takes the publisher may subscribe: time calls with the
        // clock itself until a call finds no event consumed.
        self.inner.clock.expect_events();
        &self.inner.events
    }

    /// A snapshot of the current metrics object.
    pub fn metrics(&self) -> CircuitBreakerMetrics {
        self.inner.metrics()
    }

    /// The current time on the breaker's clock (Resilience4j's `getCurrentTimestamp`).
    pub fn current_timestamp(&self) -> Nanos {
        self.inner.clock.precise()
    }

    /// Asks for permission to call; a refusal is counted and published.
    ///
    /// In HALF_OPEN this takes one of the probe permits: give it back with
    /// [`CircuitBreaker::release_permission`] if the call is not made, or
    /// record its outcome with `on_success` / `on_error`.
    pub fn try_acquire_permission(&self) -> bool {
        self.inner.try_acquire().is_ok()
    }

    /// Like [`CircuitBreaker::try_acquire_permission`], with the refusal as an error.
    ///
    /// # Errors
    ///
    /// [`CallNotPermitted`] when the state refuses the call.
    pub fn acquire_permission(&self) -> Result<(), CallNotPermitted> {
        self.inner.try_acquire().map(|_| ())
    }

    /// Gives back a HALF_OPEN probe permit taken by `try_acquire_permission`
    /// for a call that was not made. Has no effect in other states, and never
    /// raises the budget above `permitted_number_of_calls_in_half_open_state`
    /// (Resilience4j does not bound it).
    pub fn release_permission(&self) {
        self.inner.give_back(None);
    }

    /// Whether the scripts on the backend key that holds the fleet's
    /// half-open episode succeed (`None` for a breaker whose HALF_OPEN is
    /// its own).
    pub fn cluster_backend_up(&self) -> Option<bool> {
        self.inner
            .cluster
            .as_deref()
            .map(cluster::Cluster::backend_up)
    }

    /// Records a successful call that took `elapsed`.
    pub fn on_success(&self, elapsed: Duration) {
        self.inner.record(
            self.inner.settings.load(),
            self.inner.clock.now(),
            saturating_nanos(elapsed),
            Verdict::Success,
            None,
        );
    }

    /// Records a failed call that took `elapsed`.
    pub fn on_error(&self, elapsed: Duration) {
        self.inner.record(
            self.inner.settings.load(),
            self.inner.clock.now(),
            saturating_nanos(elapsed),
            Verdict::Failure(None),
            None,
        );
    }

    /// Records a call that failed with an ignored error: its permit is given
    /// back and it counts neither as success nor as failure.
    pub fn on_ignored_error(&self, elapsed: Duration) {
        self.inner.record(
            self.inner.settings.load(),
            self.inner.clock.now(),
            saturating_nanos(elapsed),
            Verdict::Ignored(None),
            None,
        );
    }

    /// Moves to a fresh CLOSED state.
    ///
    /// # Errors
    ///
    /// None in practice: every state may move to CLOSED.
    pub fn transition_to_closed_state(&self) -> Result<(), IllegalStateTransition> {
        self.inner.manual(Target::Closed)
    }

    /// Moves to OPEN with the next wait of the open-state interval function
    /// (the attempt counter grows by one, also from OPEN).
    ///
    /// # Errors
    ///
    /// [`IllegalStateTransition`] from METRICS_ONLY.
    pub fn transition_to_open_state(&self) -> Result<(), IllegalStateTransition> {
        self.inner.manual(Target::Open)
    }

    /// Moves to OPEN for exactly `wait`; the attempt counter is unchanged.
    ///
    /// # Errors
    ///
    /// [`IllegalStateTransition`] from METRICS_ONLY.
    pub fn transition_to_open_state_for(
        &self,
        wait: Duration,
    ) -> Result<(), IllegalStateTransition> {
        self.inner.manual(Target::OpenFor(wait))
    }

    /// Moves to OPEN until `until` on the breaker's clock; the attempt counter is unchanged.
    ///
    /// # Errors
    ///
    /// [`IllegalStateTransition`] from METRICS_ONLY.
    pub fn transition_to_open_state_until(
        &self,
        until: Nanos,
    ) -> Result<(), IllegalStateTransition> {
        self.inner.manual(Target::OpenUntil(until))
    }

    /// Moves to HALF_OPEN with a fresh probe budget.
    ///
    /// # Errors
    ///
    /// [`IllegalStateTransition`] from CLOSED and METRICS_ONLY.
    pub fn transition_to_half_open_state(&self) -> Result<(), IllegalStateTransition> {
        self.inner.manual(Target::HalfOpen)
    }

    /// Refuses every call until another manual transition.
    ///
    /// # Errors
    ///
    /// None in practice: every state may move to FORCED_OPEN.
    pub fn transition_to_forced_open_state(&self) -> Result<(), IllegalStateTransition> {
        self.inner.manual(Target::ForcedOpen)
    }

    /// Refuses every call for `limit`, then moves to HALF_OPEN on its own
    /// (publishing the FORCED_OPEN → HALF_OPEN transition), unless another
    /// transition comes first: a forced open with a time limit, so
    /// that an operator's emergency stop cannot be forgotten. As after
    /// any OPEN, the half-open probes decide whether the downstream takes
    /// the load again (CLOSED) or not (OPEN): the end of the limit does not
    /// send the whole load to a dependency that may still be down.
    ///
    /// # Errors
    ///
    /// [`ForcedOpenLimitOutOfRange`] for a limit shorter than
    /// [`MIN_FORCED_OPEN_LIMIT`] (1 ms) or longer than
    /// [`MAX_FORCED_OPEN_LIMIT`] (365 days); the state is unchanged. Every
    /// state may move to FORCED_OPEN.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
    /// use resil_core::clock::ManualClock;
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let cb = CircuitBreaker::with_clock("payments", CircuitBreakerConfig::default(), clock.clone());
    /// cb.transition_to_forced_open_state_for(Duration::from_secs(600)).unwrap();
    /// assert_eq!(cb.state(), State::ForcedOpen);
    /// clock.advance(Duration::from_secs(600));
    /// assert_eq!(cb.state(), State::HalfOpen); // the probes decide
    /// assert!(cb.transition_to_forced_open_state_for(Duration::ZERO).is_err());
    /// ```
    pub fn transition_to_forced_open_state_for(
        &self,
        limit: Duration,
    ) -> Result<(), ForcedOpenLimitOutOfRange> {
        if !(MIN_FORCED_OPEN_LIMIT..=MAX_FORCED_OPEN_LIMIT).contains(&limit) {
            return Err(ForcedOpenLimitOutOfRange::new(
                self.inner.name.clone(),
                limit,
            ));
        }
        // every state may move to FORCED_OPEN
        let _ = self.inner.manual(Target::ForcedOpenFor(limit));
        Ok(())
    }

    /// Admits every call and records nothing.
    ///
    /// # Errors
    ///
    /// None in practice: every state may move to DISABLED.
    pub fn transition_to_disabled_state(&self) -> Result<(), IllegalStateTransition> {
        self.inner.manual(Target::Disabled)
    }

    /// Admits every call and records it, without ever opening.
    ///
    /// # Errors
    ///
    /// None in practice: every state may move to METRICS_ONLY.
    pub fn transition_to_metrics_only_state(&self) -> Result<(), IllegalStateTransition> {
        self.inner.manual(Target::MetricsOnly)
    }

    /// Resets to a fresh CLOSED state and cancels any pending timer. Publishes
    /// `StateTransition` (unless it was CLOSED) and then `Reset`.
    pub fn reset(&self) {
        let _ = self.inner.manual(Target::Reset);
    }

    /// Starts a guarded call: asks for permission and starts the clock.
    ///
    /// Finish it with [`CallGuard::record`] (or `on_success` / `on_error` /
    /// `on_ignored_error`). A guard dropped unfinished gives its permit back
    /// and records nothing, unless the thread is panicking: then the call is
    /// recorded as a failure (kind `"panic"`). The breaker's layer of a
    /// chain counts a panic only while the caller's future is being created
    /// or polled: a chain's future dropped during some other unwind gives
    /// its permit back and records nothing.
    ///
    /// # Errors
    ///
    /// [`CallNotPermitted`] when the state refuses the call.
    // Always inlined: returned through memory, the guard is then copied into
    // the caller's future with stalled loads, which cost the async call more
    // than the call itself.
    #[inline(always)]
    pub fn start_call(&self) -> Result<CallGuard<'_>, CallNotPermitted> {
        CallGuard::start(&self.inner)
    }

    /// Runs `f` if permitted and records its outcome: `Ok` is a success, every
    /// `Err` a failure (to classify outcomes, compose the breaker with
    /// [`Decorators::with_circuit_breaker_classified`](crate::Decorators::with_circuit_breaker_classified)).
    ///
    /// A panic in `f` is recorded as a failure and resumed.
    ///
    /// # Errors
    ///
    /// [`Error::CallNotPermitted`] when refused, [`Error::Inner`] with `f`'s error.
    #[inline]
    pub fn call<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E>,
    {
        Stack::new()
            .circuit_breaker(self.part(CircuitBreakerClassifier::new()))
            .fault(FaultPart::global(self.name()))
            .call(Lift(once(f)))
    }

    /// Runs the future that `f` returns, if permitted, and records its outcome.
    ///
    /// Permission is asked for, and `f` called, when this method is called
    /// (as Resilience4j's decorated `CompletionStage` supplier does when
    /// invoked); a refused call's future holds only the rejection. Dropping
    /// the returned future before it completes gives the permit back and
    /// records nothing; a panic while polling is recorded as a failure.
    ///
    /// # Errors
    ///
    /// As [`CircuitBreaker::call`].
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
            .circuit_breaker(self.part(CircuitBreakerClassifier::new()))
            .fault(FaultPart::global(self.name()))
            .call_async(Lift(once(f)))
    }

    #[cfg(all(test, resil_loom))]
    pub(crate) fn probes_left(&self) -> u32 {
        self.inner.load().permits()
    }

    #[cfg(all(test, resil_loom))]
    pub(crate) fn generation(&self) -> u32 {
        self.inner.load().generation()
    }
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("name", &self.inner.name)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}
