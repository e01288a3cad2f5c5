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

mod call;
mod classifier;
mod cluster;
mod config;
mod error;
mod event;
mod metrics;
mod state;
mod window;

#[cfg(all(test, resil_loom))]
mod loom;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Weak};
use std::time::Duration;

pub use self::call::{CallGuard, CircuitBreakerFuture, OwnedCircuitBreakerFuture};
pub use self::classifier::{Classifier, TransitionCheckResult, TransitionOnResult};
pub use self::config::{
    CircuitBreakerConfig, CircuitBreakerConfigBuilder, MAX_WINDOW_SIZE, SlidingWindowType,
};
pub use self::error::{CallNotPermitted, IllegalStateTransition};
pub use self::event::{CircuitBreakerEvent, CircuitBreakerEventType};
pub use self::metrics::CircuitBreakerMetrics;
pub use self::state::State;

use self::cluster::Probe;
use self::state::{Slot, Word};
use self::window::{CountWindow, Counts, Outcome, SharedWindow, TimeWindow, Window};
use crate::clock::{Clock, Nanos, SharedClock, SystemClock, TimerHandle, saturating_nanos};
use crate::error::Error;
use crate::event::EventPublisher;
use crate::future::{AsyncCall, InnerCall, InnerErrors};
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

struct Inner {
    /// For timers, which must not keep a dropped breaker alive.
    me: Weak<Inner>,
    name: Name,
    /// The configuration and what the call path reads of it, replaced whole
    /// by `change_config`.
    settings: Live<Settings>,
    clock: SharedClock,
    tags: Tags,
    /// The packed [`Word`]: state, metrics slot, half-open permits, generation.
    word: AtomicU64,
    /// OPEN's deadline (`Nanos`), written before the OPEN word is published.
    open_until: AtomicU64,
    /// Consecutive openings, for the open-state interval function.
    attempts: AtomicU32,
    /// METRICS_ONLY publishes each rate crossing once: bit 0 failure, bit 1 slow.
    metrics_only_published: AtomicU32,
    /// The metrics of the states that record nothing (see [`Slot`]).
    empty: MetricsCell,
    /// Serializes transitions; never held on the call path.
    transition_lock: Mutex<()>,
    /// The pending auto-transition timer and the generation it belongs to.
    timer: Mutex<(u32, TimerHandle)>,
    events: EventPublisher<CircuitBreakerEvent>,
    /// The fleet's half-open probe budget, when shared.
    cluster: Option<cluster::Cluster>,
}

struct MetricsCell {
    window: SharedWindow,
    not_permitted: AtomicU64,
}

/// One version of a breaker's settings: the configuration, what the call
/// path reads of it, and the closed-style and half-open windows. A change
/// that keeps a window's type and size shares the window (and its calls)
/// with the version before.
struct Settings {
    config: CircuitBreakerConfig,
    slow_call_nanos: u64,
    closed: Arc<MetricsCell>,
    half_open: Arc<MetricsCell>,
    /// `minimum_number_of_calls` as each window applies it.
    closed_minimum: u64,
    half_open_minimum: u64,
}

impl Settings {
    /// The settings of `config`, sharing `before`'s windows where their shape is unchanged.
    fn new(config: CircuitBreakerConfig, now_sec: u64, before: Option<&Settings>) -> Self {
        let permitted = half_open_permits(&config);
        let closed = match before {
            Some(b)
                if b.config.sliding_window_type == config.sliding_window_type
                    && b.config.sliding_window_size == config.sliding_window_size =>
            {
                b.closed.clone()
            }
            _ => Arc::new(MetricsCell::new(match config.sliding_window_type {
                SlidingWindowType::CountBased => {
                    Window::Count(CountWindow::new(config.sliding_window_size))
                }
                SlidingWindowType::TimeBased => {
                    Window::Time(TimeWindow::new(config.sliding_window_size, now_sec))
                }
            })),
        };
        let half_open = match before {
            Some(b) if half_open_permits(&b.config) == permitted => b.half_open.clone(),
            _ => Arc::new(MetricsCell::new(Window::Count(CountWindow::new(permitted)))),
        };
        let closed_minimum = match config.sliding_window_type {
            SlidingWindowType::CountBased => config
                .minimum_number_of_calls
                .min(config.sliding_window_size),
            SlidingWindowType::TimeBased => config.minimum_number_of_calls,
        };
        Settings {
            slow_call_nanos: saturating_nanos(config.slow_call_duration_threshold),
            closed,
            half_open,
            closed_minimum: u64::from(closed_minimum),
            half_open_minimum: u64::from(config.minimum_number_of_calls.min(permitted)),
            config,
        }
    }
}

/// The metrics a breaker created in `state` records into.
fn initial_slot(state: State) -> Slot {
    match state {
        State::Closed | State::MetricsOnly => Slot::Closed,
        State::HalfOpen => Slot::HalfOpen,
        State::Open | State::ForcedOpen | State::Disabled => Slot::Empty,
    }
}

/// The probes of a half-open episode.
fn half_open_permits(config: &CircuitBreakerConfig) -> u32 {
    config
        .permitted_number_of_calls_in_half_open_state
        .clamp(1, state::MAX_PERMITS)
}

/// Two settings are one version when their configurations are.
fn same_config(a: &Settings, b: &Settings) -> bool {
    same_printed(&a.config, &b.config)
}

/// How a finished call counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Success,
    Failure(Option<&'static str>),
    Ignored(Option<&'static str>),
}

/// What a probe holds: nothing in the states that admit everything, a
/// HALF_OPEN permit tagged with the generation that issued it otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Permit {
    Free,
    Probe(u32),
}

#[derive(Debug, Clone, Copy)]
enum Target {
    Closed,
    Open,
    OpenFor(Duration),
    OpenUntil(Nanos),
    HalfOpen,
    ForcedOpen,
    /// FORCED_OPEN, back to CLOSED after this long (unless another
    /// transition comes first).
    ForcedOpenFor(Duration),
    Disabled,
    MetricsOnly,
    Reset,
    /// METRICS_ONLY to CLOSED, keeping the window they share (a reload).
    ClosedKeepingWindow,
    /// CLOSED to METRICS_ONLY, keeping the window they share (a reload).
    MetricsOnlyKeepingWindow,
}

impl Target {
    fn state(self) -> State {
        match self {
            Target::Closed | Target::Reset | Target::ClosedKeepingWindow => State::Closed,
            Target::Open | Target::OpenFor(_) | Target::OpenUntil(_) => State::Open,
            Target::HalfOpen => State::HalfOpen,
            Target::ForcedOpen | Target::ForcedOpenFor(_) => State::ForcedOpen,
            Target::Disabled => State::Disabled,
            Target::MetricsOnly | Target::MetricsOnlyKeepingWindow => State::MetricsOnly,
        }
    }
}

struct Transitioned {
    from: State,
    word: Word,
    open_wait: Duration,
    // The panic of a user's open-state interval function: the transition
    // completed with the default wait, and the panic is resumed once the
    // transition is published and its timer armed.
    panic: Option<Box<dyn std::any::Any + Send>>,
}

/// The open-state wait when the user's interval function panics:
/// Resilience4j's default `wait-duration-in-open-state`.
const WAIT_WHEN_INTERVAL_PANICS: Duration = Duration::from_secs(60);

/// The result of evaluating the window after a call.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Check {
    BelowMinimum,
    Below,
    Exceeded {
        failure: Option<f32>,
        slow: Option<f32>,
    },
}

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
            .map(|c| cluster::Cluster::new(c, &name, permitted));
        let inner = Arc::new_cyclic(|me| Inner {
            cluster,
            me: me.clone(),
            name,
            settings: Live::new(Settings::new(config, now_sec, None)),
            clock,
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
        if let Some(c) = &inner.cluster {
            let weak = Arc::downgrade(&inner);
            c.settings.backend().watch(Box::new(move |up| {
                if let Some(inner) = weak.upgrade()
                    && let Some(c) = &inner.cluster
                    && c.observe(up)
                {
                    inner
                        .events
                        .publish(|| CircuitBreakerEvent::ClusterBackendChanged { up });
                }
            }));
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
            let now = inner.clock.now();
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
        if !same_printed(&current.cluster, &config.cluster) {
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
        &self.inner.events
    }

    /// A snapshot of the current metrics object.
    pub fn metrics(&self) -> CircuitBreakerMetrics {
        self.inner.metrics()
    }

    /// The current time on the breaker's clock (Resilience4j's `getCurrentTimestamp`).
    pub fn current_timestamp(&self) -> Nanos {
        self.inner.clock.now()
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

    /// Whether the backend that holds the fleet's half-open probe budget is
    /// up (`None` for a breaker whose HALF_OPEN is its own).
    pub fn cluster_backend_up(&self) -> Option<bool> {
        self.inner
            .cluster
            .as_ref()
            .map(cluster::Cluster::backend_up)
    }

    /// Records a successful call that took `elapsed`.
    pub fn on_success(&self, elapsed: Duration) {
        self.inner.finish(
            self.inner.settings.load(),
            self.inner.clock.now(),
            saturating_nanos(elapsed),
            Verdict::Success,
            None,
        );
    }

    /// Records a failed call that took `elapsed`.
    pub fn on_error(&self, elapsed: Duration) {
        self.inner.finish(
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
        self.inner.finish(
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

    /// Refuses every call for `limit`, then returns to CLOSED on its own
    /// (publishing the FORCED_OPEN → CLOSED transition), unless another
    /// transition comes first: the seed's "forced open with a time limit",
    /// so that an operator's emergency stop cannot be forgotten.
    ///
    /// # Errors
    ///
    /// None in practice: every state may move to FORCED_OPEN.
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
    /// assert_eq!(cb.state(), State::Closed);
    /// ```
    pub fn transition_to_forced_open_state_for(
        &self,
        limit: Duration,
    ) -> Result<(), IllegalStateTransition> {
        self.inner.manual(Target::ForcedOpenFor(limit))
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
    /// recorded as a failure (kind `"panic"`). A guard held by a
    /// [`CircuitBreakerFuture`] counts a panic only while the caller's future
    /// is being created or polled: the future dropped during some other
    /// unwind gives its permit back and records nothing.
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
    /// `Err` a failure (classify with [`CircuitBreaker::call_with`]).
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
        self.decorate(&Classifier::new(), || f().map_err(Error::Inner))
    }

    /// Like [`CircuitBreaker::call`], classifying outcomes with `classifier`.
    ///
    /// # Errors
    ///
    /// As [`CircuitBreaker::call`].
    #[inline]
    pub fn call_with<T, E, F>(&self, classifier: &Classifier<T, E>, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E>,
    {
        self.decorate(classifier, || f().map_err(Error::Inner))
    }

    /// Runs a call that already returns `resil::Error` (an inner layer of a
    /// decorator chain) and records it; rejections of inner layers are failures
    /// unless `ignore_errors` or `record_errors` name them otherwise.
    ///
    /// # Errors
    ///
    /// [`Error::CallNotPermitted`] when refused, else `f`'s error.
    #[inline]
    pub fn decorate<T, E, F>(&self, classifier: &Classifier<T, E>, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, Error<E>>,
    {
        let guard = self.start_call()?;
        let result = f();
        guard.record(classifier, &result);
        result
    }

    /// Runs the future that `f` returns, if permitted, and records its outcome.
    ///
    /// Permission is asked for, and `f` called, when this method is called
    /// (see [`CircuitBreakerFuture`]). Dropping the returned future before it
    /// completes gives the permit back and records nothing; a panic while
    /// polling is recorded as a failure.
    ///
    /// # Errors
    ///
    /// As [`CircuitBreaker::call`].
    #[inline]
    pub fn call_async<T, E, F, Fut>(&self, f: F) -> CircuitBreakerFuture<'_, InnerErrors<Fut>, T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.start_async(None, InnerCall::new(f))
    }

    /// Like [`CircuitBreaker::call_async`], classifying outcomes with `classifier`.
    ///
    /// # Errors
    ///
    /// As [`CircuitBreaker::call`].
    #[inline]
    pub fn call_async_with<'a, T, E, F, Fut>(
        &'a self,
        classifier: &'a Classifier<T, E>,
        f: F,
    ) -> CircuitBreakerFuture<'a, InnerErrors<Fut>, T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.start_async(Some(classifier), InnerCall::new(f))
    }

    /// The async form of [`CircuitBreaker::decorate`].
    ///
    /// # Errors
    ///
    /// As [`CircuitBreaker::decorate`].
    #[inline]
    pub fn decorate_async<'a, T, E, F, Fut>(
        &'a self,
        classifier: &'a Classifier<T, E>,
        f: F,
    ) -> CircuitBreakerFuture<'a, Fut, T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, Error<E>>>,
    {
        self.start_async(Some(classifier), f)
    }

    #[inline]
    fn start_async<'a, T, E, F>(
        &'a self,
        classifier: Option<&'a Classifier<T, E>>,
        f: F,
    ) -> CircuitBreakerFuture<'a, F::Future, T, E>
    where
        F: AsyncCall,
    {
        CircuitBreakerFuture::new(&self.inner, f, classifier)
    }

    /// Like [`CircuitBreaker::call_async_with`], for a future that must not
    /// borrow the breaker (a `tower` service's response future, a spawned
    /// task): the future holds a clone of the breaker and its own copy of
    /// `classifier`.
    ///
    /// # Errors
    ///
    /// As [`CircuitBreaker::call`].
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::circuit_breaker::{CircuitBreaker, Classifier};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cb = CircuitBreaker::of_defaults("inventory-query");
    /// let call = cb.call_async_owned(Classifier::new(), || async { Ok::<_, std::io::Error>(7) });
    /// drop(cb); // the call keeps the breaker alive
    /// assert_eq!(tokio::spawn(call).await.unwrap().unwrap(), 7);
    /// # }
    /// ```
    #[inline]
    pub fn call_async_owned<T, E, F, Fut>(
        &self,
        classifier: Classifier<T, E>,
        f: F,
    ) -> OwnedCircuitBreakerFuture<InnerErrors<Fut>, T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        OwnedCircuitBreakerFuture::new(Arc::clone(&self.inner), InnerCall::new(f), classifier)
    }

    /// Like [`CircuitBreaker::decorate_async`], holding a clone of the breaker
    /// (see [`CircuitBreaker::call_async_owned`]).
    ///
    /// # Errors
    ///
    /// As [`CircuitBreaker::decorate`].
    #[inline]
    pub fn decorate_async_owned<T, E, F, Fut>(
        &self,
        classifier: Classifier<T, E>,
        f: F,
    ) -> OwnedCircuitBreakerFuture<Fut, T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, Error<E>>>,
    {
        OwnedCircuitBreakerFuture::new(Arc::clone(&self.inner), f, classifier)
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

impl MetricsCell {
    fn new(window: Window) -> Self {
        MetricsCell {
            window: SharedWindow::new(window),
            not_permitted: AtomicU64::new(0),
        }
    }
}

impl Inner {
    #[inline]
    fn load(&self) -> Word {
        Word(self.word.load(Ordering::Acquire))
    }

    /// The current settings' metrics of `slot`.
    fn cell(&self, slot: Slot) -> &MetricsCell {
        self.cell_in(self.settings.load(), slot).0
    }

    /// `settings`' metrics of `slot`, with the minimum of calls it applies.
    #[inline]
    fn cell_in<'a>(&'a self, settings: &'a Settings, slot: Slot) -> (&'a MetricsCell, u64) {
        match slot {
            Slot::Closed => (&settings.closed, settings.closed_minimum),
            Slot::HalfOpen => (&settings.half_open, settings.half_open_minimum),
            Slot::Empty => (&self.empty, u64::MAX),
        }
    }

    /// Takes permission, counting and publishing a refusal.
    #[inline]
    fn try_acquire(&self) -> Result<Permit, CallNotPermitted> {
        let w = self.load();
        if w.admits_all() {
            return Ok(Permit::Free);
        }
        self.try_acquire_slow(w)
    }

    #[cold]
    fn try_acquire_slow(&self, mut w: Word) -> Result<Permit, CallNotPermitted> {
        loop {
            let refused = match w.state() {
                State::Closed | State::Disabled | State::MetricsOnly => return Ok(Permit::Free),
                State::HalfOpen => {
                    let left = w.permits();
                    if left > 0 {
                        match self.word.compare_exchange_weak(
                            w.0,
                            w.with_permits(left - 1).0,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        ) {
                            Ok(_) => {
                                let permit = Permit::Probe(w.generation());
                                match self.cluster.as_ref().map(cluster::Cluster::take) {
                                    None | Some(Probe::Taken | Probe::Local) => {
                                        return Ok(permit);
                                    }
                                    // the fleet has probed enough: not this call
                                    Some(Probe::Refused) => self.release(Some(permit)),
                                }
                            }
                            Err(actual) => {
                                w = Word(actual);
                                continue;
                            }
                        }
                    }
                    State::HalfOpen
                }
                State::Open => {
                    let now = self.clock.now();
                    // Strictly after the deadline, as Resilience4j's `isAfter`.
                    if now.as_u64() > self.open_until.load(Ordering::Acquire) {
                        self.transition_and_publish(Some(w.generation()), Target::HalfOpen);
                        w = self.load();
                        continue;
                    }
                    State::Open
                }
                State::ForcedOpen => State::ForcedOpen,
            };
            self.cell(w.slot())
                .not_permitted
                .fetch_add(1, Ordering::Relaxed);
            if refused.allows_publish() {
                self.events
                    .publish(|| CircuitBreakerEvent::CallNotPermitted);
            }
            return Err(CallNotPermitted::new(self.name.clone(), refused));
        }
    }

    /// Gives back a probe permit: a guard's only to the generation that issued
    /// it, a raw `release_permission` to the current HALF_OPEN state.
    fn release(&self, permit: Option<Permit>) {
        let generation = match permit {
            Some(Permit::Free) => return,
            Some(Permit::Probe(generation)) => Some(generation),
            None => None,
        };
        let permitted = half_open_permits(&self.settings.load().config);
        let mut w = self.load();
        loop {
            if w.state() != State::HalfOpen
                || generation.is_some_and(|g| g != w.generation())
                || w.permits() >= permitted
            {
                return;
            }
            match self.word.compare_exchange_weak(
                w.0,
                w.with_permits(w.permits() + 1).0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(actual) => w = Word(actual),
            }
        }
    }

    /// Gives back a probe permit, to the process's budget and (for a probe
    /// taken in HALF_OPEN) to the fleet's.
    fn give_back(&self, permit: Option<Permit>) {
        self.release(permit);
        if let Some(c) = &self.cluster
            && !matches!(permit, Some(Permit::Free))
            && self.load().state() == State::HalfOpen
        {
            c.finish(false);
        }
    }

    /// This process left HALF_OPEN: the fleet's episode ends.
    fn end_episode(&self) {
        if let Some(c) = &self.cluster {
            c.end_episode();
        }
    }

    /// Records a finished call into the current state's metrics and lets the
    /// state react (Resilience4j records into the state current at completion).
    #[inline]
    fn finish(
        &self,
        settings: &Settings,
        end: Nanos,
        elapsed_nanos: u64,
        verdict: Verdict,
        permit: Option<Permit>,
    ) {
        let failed = match verdict {
            Verdict::Success => false,
            Verdict::Failure(_) => true,
            Verdict::Ignored(kind) => {
                self.give_back(permit);
                if self.load().state().allows_publish() && self.events.is_active() {
                    self.events.publish_at(
                        end,
                        CircuitBreakerEvent::IgnoredError {
                            elapsed: Duration::from_nanos(elapsed_nanos),
                            error_kind: kind,
                        },
                    );
                }
                return;
            }
        };
        let w = self.load();
        let state = w.state();
        if !state.allows_publish() {
            return; // DISABLED and FORCED_OPEN record nothing
        }
        if self.events.is_active() {
            let event = match verdict {
                Verdict::Failure(kind) => CircuitBreakerEvent::Error {
                    elapsed: Duration::from_nanos(elapsed_nanos),
                    error_kind: kind,
                },
                _ => CircuitBreakerEvent::Success {
                    elapsed: Duration::from_nanos(elapsed_nanos),
                },
            };
            self.events.publish_at(end, event);
        }
        let slow = elapsed_nanos > settings.slow_call_nanos;
        let (cell, minimum_calls) = self.cell_in(settings, w.slot());
        let counts = cell.window.record(end, Outcome::new(failed, slow));
        let config = &settings.config;
        match state {
            State::Closed => {
                if let Check::Exceeded { failure, slow } = check(config, counts, minimum_calls) {
                    self.trip(w.generation(), failure, slow);
                }
            }
            State::HalfOpen => {
                if let Some(c) = &self.cluster
                    && !matches!(permit, Some(Permit::Free))
                {
                    c.finish(true);
                }
                match check(config, counts, minimum_calls) {
                    Check::BelowMinimum => {}
                    Check::Below => {
                        self.transition_and_publish(Some(w.generation()), Target::Closed);
                    }
                    Check::Exceeded { .. } => {
                        self.transition_and_publish(Some(w.generation()), Target::Open);
                    }
                }
            }
            State::MetricsOnly => {
                if let Check::Exceeded { failure, slow } = check(config, counts, minimum_calls) {
                    self.publish_exceeded_once(end, failure, slow);
                }
            }
            State::Open | State::Disabled | State::ForcedOpen => {}
        }
    }

    /// CLOSED's gate: only the caller that moves this generation publishes the
    /// rate events and the transition.
    #[cold]
    fn trip(&self, generation: u32, failure: Option<f32>, slow: Option<f32>) {
        if let Ok(Some(t)) = self.transition(Some(generation), Target::Open) {
            if let Some(rate) = failure {
                self.events
                    .publish(|| CircuitBreakerEvent::FailureRateExceeded { failure_rate: rate });
            }
            if let Some(rate) = slow {
                self.events
                    .publish(|| CircuitBreakerEvent::SlowCallRateExceeded {
                        slow_call_rate: rate,
                    });
            }
            self.after_transition(t, State::Open, false);
        }
    }

    #[cold]
    fn publish_exceeded_once(&self, at: Nanos, failure: Option<f32>, slow: Option<f32>) {
        if let Some(rate) = failure
            && self.metrics_only_published.fetch_or(1, Ordering::AcqRel) & 1 == 0
        {
            self.events.publish_at(
                at,
                CircuitBreakerEvent::FailureRateExceeded { failure_rate: rate },
            );
        }
        if let Some(rate) = slow
            && self.metrics_only_published.fetch_or(2, Ordering::AcqRel) & 2 == 0
        {
            self.events.publish_at(
                at,
                CircuitBreakerEvent::SlowCallRateExceeded {
                    slow_call_rate: rate,
                },
            );
        }
    }

    #[cold]
    fn transition_on_result(&self, check: TransitionCheckResult) {
        let w = self.load();
        if w.state() != State::Closed {
            return;
        }
        let target = match check {
            TransitionCheckResult::NoTransition => return,
            TransitionCheckResult::TransitionToOpen => Target::Open,
            TransitionCheckResult::TransitionToOpenFor(d) => Target::OpenFor(d),
            TransitionCheckResult::TransitionToOpenUntil(t) => Target::OpenUntil(t),
        };
        self.transition_and_publish(Some(w.generation()), target);
    }

    fn metrics(&self) -> CircuitBreakerMetrics {
        let w = self.load();
        let (cell, minimum_calls) = self.cell_in(self.settings.load(), w.slot());
        let c = cell.window.snapshot(self.clock.now());
        let (failure_rate, slow_call_rate) = if c.calls == 0 || c.calls < minimum_calls {
            (-1.0, -1.0)
        } else {
            rates(c)
        };
        CircuitBreakerMetrics {
            state: w.state(),
            failure_rate,
            slow_call_rate,
            buffered: c.calls,
            failed: c.failed,
            slow: c.slow,
            slow_failed: c.slow_failed,
            not_permitted: cell.not_permitted.load(Ordering::Relaxed),
        }
    }

    fn manual(&self, target: Target) -> Result<(), IllegalStateTransition> {
        let t = self.transition(None, target)?;
        if let Some(t) = t {
            self.after_transition(t, target.state(), matches!(target, Target::Reset));
        }
        Ok(())
    }

    /// Transitions (if the gate is still this generation) and publishes.
    fn transition_and_publish(&self, generation: Option<u32>, target: Target) {
        if let Ok(Some(t)) = self.transition(generation, target) {
            self.after_transition(t, target.state(), false);
        }
    }

    /// The one place the state word changes state. Under `transition_lock`:
    /// check the gate (`expect`: the generation the caller saw) and the
    /// transition table, prepare the new state's data, then publish the word.
    fn transition(
        &self,
        expect: Option<u32>,
        target: Target,
    ) -> Result<Option<Transitioned>, IllegalStateTransition> {
        let _serial = lock(&self.transition_lock);
        let cur = self.load();
        if expect.is_some_and(|g| g != cur.generation()) {
            return Ok(None); // another caller moved this state first
        }
        let from = cur.state();
        let to = target.state();
        if !matches!(target, Target::Reset) && !from.can_transition_to(to) {
            return Err(IllegalStateTransition::new(self.name.clone(), from, to));
        }
        let now = self.clock.now();
        let attempts = match from {
            State::Closed | State::Disabled | State::MetricsOnly => 0,
            _ => self.attempts.load(Ordering::Acquire),
        };
        let mut open_wait = Duration::ZERO;
        let mut panic = None;
        let (slot, attempts, permits) = match target {
            Target::Closed | Target::Reset => {
                self.reset_cell(Slot::Closed, now);
                (Slot::Closed, 0, 0)
            }
            Target::Open => {
                let attempts = attempts.saturating_add(1);
                let interval = &self
                    .settings
                    .load()
                    .config
                    .wait_interval_function_in_open_state;
                // A user's interval function runs under the transition lock:
                // should it panic, the transition still completes (with the
                // default wait) and the panic is resumed after it.
                open_wait =
                    match std::panic::catch_unwind(AssertUnwindSafe(|| interval.apply(attempts))) {
                        Ok(wait) => wait,
                        Err(payload) => {
                            panic = Some(payload);
                            WAIT_WHEN_INTERVAL_PANICS
                        }
                    };
                self.open_until(now.saturating_add(open_wait));
                (cur.slot(), attempts, 0)
            }
            Target::OpenFor(wait) => {
                open_wait = wait;
                self.open_until(now.saturating_add(wait));
                (cur.slot(), attempts, 0)
            }
            Target::OpenUntil(until) => {
                open_wait = until.saturating_duration_since(now);
                self.open_until(until);
                (cur.slot(), attempts, 0)
            }
            Target::HalfOpen => {
                self.reset_cell(Slot::HalfOpen, now);
                let permitted = half_open_permits(&self.settings.load().config);
                (Slot::HalfOpen, attempts, permitted)
            }
            Target::ForcedOpen => {
                self.reset_cell(Slot::Empty, now);
                (Slot::Empty, attempts.saturating_add(1), 0)
            }
            Target::ForcedOpenFor(limit) => {
                // The limit rides in `open_wait` to the timer (`arm_timer`);
                // a zero limit closes at once, not never.
                open_wait = limit.max(Duration::from_nanos(1));
                self.reset_cell(Slot::Empty, now);
                (Slot::Empty, attempts.saturating_add(1), 0)
            }
            Target::Disabled => {
                self.reset_cell(Slot::Empty, now);
                (Slot::Empty, 0, 0)
            }
            Target::MetricsOnly => {
                self.reset_cell(Slot::Closed, now);
                self.metrics_only_published.store(0, Ordering::Release);
                (Slot::Closed, 0, 0)
            }
            Target::ClosedKeepingWindow => (Slot::Closed, 0, 0),
            Target::MetricsOnlyKeepingWindow => {
                self.metrics_only_published.store(0, Ordering::Release);
                (Slot::Closed, 0, 0)
            }
        };
        self.attempts.store(attempts, Ordering::Release);
        // Publish with a compare-and-swap, not a store: probes may be taking or
        // returning HALF_OPEN permits concurrently (same generation, other
        // permit count), and the new word must follow the latest one.
        let mut cur = cur;
        let word = loop {
            let word = Word::new(to, slot, permits, cur.generation().wrapping_add(1));
            match self
                .word
                .compare_exchange(cur.0, word.0, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break word,
                Err(actual) => cur = Word(actual),
            }
        };
        Ok(Some(Transitioned {
            from,
            word,
            open_wait,
            panic,
        }))
    }

    fn open_until(&self, until: Nanos) {
        self.open_until.store(until.as_u64(), Ordering::Release);
    }

    fn reset_cell(&self, slot: Slot, now: Nanos) {
        let cell = self.cell(slot);
        cell.window.reset(now);
        cell.not_permitted.store(0, Ordering::Relaxed);
    }

    /// Publishes the transition and arms (or cancels) the timer of the new state.
    fn after_transition(&self, mut t: Transitioned, to: State, reset: bool) {
        if t.from == State::HalfOpen {
            // This process left its half-open episode (decided, timed out or
            // moved by hand): the fleet's episode ends with it, so that a
            // process still HALF_OPEN is not left without probes.
            self.end_episode();
        }
        if t.from != to {
            self.events
                .publish(|| CircuitBreakerEvent::StateTransition { from: t.from, to });
        }
        if reset {
            self.events.publish(|| CircuitBreakerEvent::Reset);
        }
        self.arm_timer(&t, to);
        if let Some(payload) = t.panic.take() {
            // Resumed only when it is not a second panic: an interval function
            // that panics while a panicking call is being recorded must not
            // abort the process.
            if !std::thread::panicking() {
                std::panic::resume_unwind(payload);
            }
        }
    }

    fn arm_timer(&self, t: &Transitioned, to: State) {
        let generation = t.word.generation();
        let config = &self.settings.load().config;
        let scheduled = match to {
            State::Open if config.automatic_transition_from_open_to_half_open_enabled => {
                Some((t.open_wait, Target::HalfOpen))
            }
            // A forced open with a limit (only it carries a wait) ends in CLOSED.
            State::ForcedOpen if !t.open_wait.is_zero() => Some((t.open_wait, Target::Closed)),
            State::HalfOpen
                if config.max_wait_duration_in_half_open_state >= Duration::from_millis(1) =>
            {
                Some((config.max_wait_duration_in_half_open_state, Target::Open))
            }
            _ => None,
        };
        // Scheduled before the timer slot is locked: a clock may run a due
        // task inline (the manual clock does for a zero delay), and that task
        // transitions and arms a timer of its own.
        let handle = match scheduled {
            Some((delay, target)) => {
                let weak = self.weak_self();
                self.clock.schedule(
                    delay,
                    Box::new(move || {
                        if let Some(inner) = weak.upgrade() {
                            inner.transition_and_publish(Some(generation), target);
                        }
                    }),
                )
            }
            None => TimerHandle::none(),
        };
        let mut timer = lock(&self.timer);
        // A slower transition must not replace the timer of a newer one: its
        // own handle is dropped (cancelled) instead.
        let replaced = if (generation.wrapping_sub(timer.0) as i32) < 0 {
            handle
        } else {
            std::mem::replace(&mut *timer, (generation, handle)).1
        };
        drop(timer);
        drop(replaced); // cancelled outside the lock: a clock may lock in cancel
    }

    fn weak_self(&self) -> Weak<Inner> {
        self.me.clone()
    }
}

/// Computes both rates, Resilience4j's `CircuitBreakerMetrics.checkIfThresholdsExceeded`.
#[inline]
fn check(config: &CircuitBreakerConfig, c: Counts, minimum_calls: u64) -> Check {
    if c.calls == 0 || c.calls < minimum_calls {
        return Check::BelowMinimum;
    }
    let (failure_rate, slow_rate) = rates(c);
    let failure = (failure_rate >= config.failure_rate_threshold).then_some(failure_rate);
    let slow = (slow_rate >= config.slow_call_rate_threshold).then_some(slow_rate);
    if failure.is_none() && slow.is_none() {
        Check::Below
    } else {
        Check::Exceeded { failure, slow }
    }
}

fn rates(c: Counts) -> (f32, f32) {
    let n = c.calls as f32;
    (c.failed as f32 * 100.0 / n, c.slow as f32 * 100.0 / n)
}
