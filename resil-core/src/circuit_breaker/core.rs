//! The breaker's core: the state machine, its packed word, and the recording of calls.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::cluster::{self, Probe};
use super::state::{self, Slot, Word};
use super::timing::{self, CallClock};
use super::window::{CountWindow, Counts, Outcome, SharedWindow, TimeWindow, Window};
use super::{
    CallNotPermitted, CircuitBreakerConfig, CircuitBreakerEvent, CircuitBreakerMetrics,
    IllegalStateTransition, SlidingWindowType, State, TransitionCheckResult,
};
use crate::clock::{Clock, Nanos, TimerHandle, saturating_nanos};
use crate::event::EventPublisher;
use crate::live::{Live, same_printed};
use crate::sync::{AtomicU32, AtomicU64, Mutex, Ordering, lock};
use crate::{Name, Tags};

#[doc(hidden)]
pub struct Inner {
    /// For timers, which must not keep a dropped breaker alive.
    pub(super) me: Weak<Inner>,
    pub(super) name: Name,
    /// The configuration and what the call path reads of it, replaced whole
    /// by `change_config`.
    pub(super) settings: Live<Settings>,
    /// The clock, and the reading that times calls (see [`timing`]).
    pub(super) clock: CallClock,
    pub(super) tags: Tags,
    /// The packed [`Word`]: state, metrics slot, half-open permits, generation.
    pub(super) word: AtomicU64,
    /// OPEN's deadline (`Nanos`), written before the OPEN word is published.
    pub(super) open_until: AtomicU64,
    /// Consecutive openings, for the open-state interval function.
    pub(super) attempts: AtomicU32,
    /// METRICS_ONLY publishes each rate crossing once: bit 0 failure, bit 1 slow.
    pub(super) metrics_only_published: AtomicU32,
    /// The metrics of the states that record nothing (see [`Slot`]).
    pub(super) empty: MetricsCell,
    /// Serializes transitions; never held on the call path.
    pub(super) transition_lock: Mutex<()>,
    /// The pending auto-transition timer and the generation it belongs to.
    pub(super) timer: Mutex<(u32, TimerHandle)>,
    pub(super) events: EventPublisher<CircuitBreakerEvent>,
    /// The fleet's half-open episode, when shared.
    /// Boxed: most breakers have none, and the call path never reads it in CLOSED.
    pub(super) cluster: Option<Box<cluster::Cluster>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

pub(super) struct MetricsCell {
    pub(super) window: SharedWindow,
    pub(super) not_permitted: AtomicU64,
}

/// One version of a breaker's settings: the configuration, what the call
/// path reads of it, and the closed-style and half-open windows. A change
/// that keeps a window's type and size shares the window (and its calls)
/// with the version before.
pub(super) struct Settings {
    pub(super) config: CircuitBreakerConfig,
    pub(super) slow_call_nanos: u64,
    pub(super) closed: Arc<MetricsCell>,
    pub(super) half_open: Arc<MetricsCell>,
    /// `minimum_number_of_calls` as each window applies it.
    pub(super) closed_minimum: u32,
    pub(super) half_open_minimum: u32,
}

impl Settings {
    /// The settings of `config`, sharing `before`'s windows where their shape is unchanged.
    pub(super) fn new(
        config: CircuitBreakerConfig,
        now_sec: u64,
        before: Option<&Settings>,
    ) -> Self {
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
            closed_minimum,
            half_open_minimum: config.minimum_number_of_calls.min(permitted),
            config,
        }
    }
}

impl Settings {
    /// Whether these settings allow timing calls coarsely (see [`timing`]).
    pub(super) fn coarse_eligible(&self) -> bool {
        timing::coarse_eligible(
            self.config.sliding_window_type == SlidingWindowType::CountBased,
            self.slow_call_nanos,
        )
    }
}

/// The metrics a breaker created in `state` records into.
pub(super) fn initial_slot(state: State) -> Slot {
    match state {
        State::Closed | State::MetricsOnly => Slot::Closed,
        State::HalfOpen => Slot::HalfOpen,
        State::Open | State::ForcedOpen | State::Disabled => Slot::Empty,
    }
}

/// The probes of a half-open episode.
pub(super) fn half_open_permits(config: &CircuitBreakerConfig) -> u32 {
    config
        .permitted_number_of_calls_in_half_open_state
        .clamp(1, state::MAX_PERMITS)
}

/// Two settings are one version when their configurations are.
pub(super) fn same_config(a: &Settings, b: &Settings) -> bool {
    same_printed(&a.config, &b.config)
}

/// How a finished call counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Success,
    Failure(Option<&'static str>),
    Ignored(Option<&'static str>),
    /// Cut short by the request's deadline: a slow success past the
    /// slow-call threshold, ignored otherwise.
    CutShort,
}

/// What a probe holds: nothing in the states that admit everything, a
/// HALF_OPEN permit tagged with the generation that issued it otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Permit {
    Free,
    Probe(u32),
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Target {
    Closed,
    Open,
    OpenFor(Duration),
    OpenUntil(Nanos),
    HalfOpen,
    ForcedOpen,
    /// FORCED_OPEN, then HALF_OPEN after this long (unless another
    /// transition comes first), so that probes decide as after any OPEN.
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
    pub(super) fn state(self) -> State {
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

pub(super) struct Transitioned {
    pub(super) from: State,
    pub(super) word: Word,
    pub(super) open_wait: Duration,
    // The panic of a user's open-state interval function: the transition
    // completed with the default wait, and the panic is resumed once the
    // transition is published and its timer armed.
    pub(super) panic: Option<Box<dyn std::any::Any + Send>>,
}

/// The open-state wait when the user's interval function panics:
/// Resilience4j's default `wait-duration-in-open-state`.
pub(super) const WAIT_WHEN_INTERVAL_PANICS: Duration = Duration::from_secs(60);

/// The result of evaluating the window after a call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Check {
    BelowMinimum,
    Below,
    Exceeded {
        failure: Option<f32>,
        slow: Option<f32>,
    },
}

impl MetricsCell {
    pub(super) fn new(window: Window) -> Self {
        MetricsCell {
            window: SharedWindow::new(window),
            not_permitted: AtomicU64::new(0),
        }
    }
}

impl Inner {
    #[inline]
    pub(super) fn load(&self) -> Word {
        Word(self.word.load(Ordering::Acquire))
    }

    /// The current settings' metrics of `slot`.
    pub(super) fn cell(&self, slot: Slot) -> &MetricsCell {
        self.cell_in(self.settings.load(), slot).0
    }

    /// `settings`' metrics of `slot`, with the minimum of calls it applies.
    #[inline]
    pub(super) fn cell_in<'a>(
        &'a self,
        settings: &'a Settings,
        slot: Slot,
    ) -> (&'a MetricsCell, u64) {
        match slot {
            Slot::Closed => (&settings.closed, u64::from(settings.closed_minimum)),
            Slot::HalfOpen => (&settings.half_open, u64::from(settings.half_open_minimum)),
            Slot::Empty => (&self.empty, u64::MAX),
        }
    }

    /// Takes permission, counting and publishing a refusal.
    #[inline]
    pub(super) fn try_acquire(&self) -> Result<Permit, CallNotPermitted> {
        let w = self.load();
        if w.admits_all() {
            return Ok(Permit::Free);
        }
        self.try_acquire_slow(w)
    }

    #[cold]
    pub(super) fn try_acquire_slow(&self, mut w: Word) -> Result<Permit, CallNotPermitted> {
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
                                let probe =
                                    self.cluster.as_deref().map(|c| c.take(self.clock.now()));
                                match probe {
                                    None | Some(Probe::Taken | Probe::Local) => {
                                        return Ok(permit);
                                    }
                                    // the fleet has probed enough: not this call
                                    Some(Probe::Refused) => self.release(Some(permit)),
                                    // the fleet decided: follow, and ask the new state
                                    // (if none came of it, this call is refused)
                                    Some(Probe::Decided(verdict)) => {
                                        self.release(Some(permit));
                                        self.follow_fleet(verdict);
                                        let now = self.load();
                                        if now.generation() != w.generation() {
                                            w = now;
                                            continue;
                                        }
                                    }
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
                    let now = self.clock.precise();
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
    pub(super) fn release(&self, permit: Option<Permit>) {
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
    pub(super) fn give_back(&self, permit: Option<Permit>) {
        self.release(permit);
        if let Some(c) = &self.cluster
            && !matches!(permit, Some(Permit::Free))
            && self.load().state() == State::HalfOpen
        {
            c.release_one();
        }
    }

    /// Records a call its guard timed (see [`timing`]) into the current
    /// state's metrics and lets the state react (Resilience4j records into
    /// the state current at completion).
    ///
    /// The healthy path writes nothing to the window: in CLOSED and
    /// METRICS_ONLY, a success that is not slow, on a full count window of
    /// successes, changes no count (it evicts a success) and decides
    /// nothing (both rates are 0), so it is recorded by seeing that with
    /// loads only, and by publishing its event where events are consumed.
    /// Anything else takes the exact path.
    #[inline]
    pub(super) fn finish(
        &self,
        settings: &Settings,
        end: Nanos,
        elapsed_nanos: u64,
        verdict: Verdict,
        permit: Option<Permit>,
    ) {
        if elapsed_nanos > settings.slow_call_nanos / 2 {
            return self.finish_retimed(settings, end, elapsed_nanos, verdict, permit);
        }
        if matches!(verdict, Verdict::Success) {
            if !self.events.is_active() {
                if self.success_changes_nothing(settings, false) {
                    return;
                }
            } else if self.success_published(settings, end, elapsed_nanos) {
                return;
            }
        }
        self.record(settings, end, elapsed_nanos, verdict, permit);
    }

    /// Whether recording a success (not slow) now would change nothing:
    /// see [`Inner::finish`]. `consumed`: whether its event is.
    #[inline]
    fn success_changes_nothing(&self, settings: &Settings, consumed: bool) -> bool {
        self.clock.observe_events(consumed);
        self.load().records_closed() && settings.closed.window.holds_only_successes()
    }

    /// With events consumed: publishes a success that changes nothing in
    /// the window, and says whether it did (else the exact path records
    /// it). Out of line, so that the path with no event consumed stays
    /// what it was.
    #[inline(never)]
    fn success_published(&self, settings: &Settings, end: Nanos, elapsed_nanos: u64) -> bool {
        if !self.success_changes_nothing(settings, true) {
            return false;
        }
        self.publish_success(end, elapsed_nanos);
        true
    }

    /// A success's event, as the exact path publishes it.
    #[inline]
    fn publish_success(&self, end: Nanos, elapsed_nanos: u64) {
        self.events.publish_at(
            end,
            CircuitBreakerEvent::Success {
                elapsed: Duration::from_nanos(elapsed_nanos),
            },
        );
    }

    /// A call past half its slow-call threshold: its end is read again on
    /// the clock itself, so that a coarse reading (which trails the clock)
    /// never hides a slow call.
    #[cold]
    #[inline(never)]
    fn finish_retimed(
        &self,
        settings: &Settings,
        end: Nanos,
        elapsed_nanos: u64,
        verdict: Verdict,
        permit: Option<Permit>,
    ) {
        let now = self.clock.precise();
        let late = now.as_u64().saturating_sub(end.as_u64());
        self.record(
            settings,
            Nanos::new(end.as_u64() + late),
            elapsed_nanos.saturating_add(late),
            verdict,
            permit,
        );
    }

    /// Records a finished call (its duration measured or given) into the
    /// current state's metrics and lets the state react.
    pub(super) fn record(
        &self,
        settings: &Settings,
        end: Nanos,
        elapsed_nanos: u64,
        verdict: Verdict,
        permit: Option<Permit>,
    ) {
        // cut short by the request's deadline: the caller's budget, not
        // the downstream's health (a slow call if it ran past the threshold)
        let verdict = match verdict {
            Verdict::CutShort if elapsed_nanos > settings.slow_call_nanos => Verdict::Success,
            Verdict::CutShort => Verdict::Ignored(Some("DeadlineExceeded")),
            other => other,
        };
        let failed = match verdict {
            Verdict::Success | Verdict::CutShort => false,
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
            self.clock.observe_events(true);
            match verdict {
                Verdict::Failure(kind) => self.events.publish_at(
                    end,
                    CircuitBreakerEvent::Error {
                        elapsed: Duration::from_nanos(elapsed_nanos),
                        error_kind: kind,
                    },
                ),
                _ => self.publish_success(end, elapsed_nanos),
            }
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
                // a probe of this HALF_OPEN state (not one that outlived an
                // earlier one) reports to the fleet, whose verdict decides
                let this_state = match permit {
                    None => true,
                    Some(Permit::Probe(g)) => g == w.generation(),
                    Some(Permit::Free) => false,
                };
                if this_state && self.report_to_fleet(settings, w.generation(), failed, slow) {
                    return;
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
    pub(super) fn trip(&self, generation: u32, failure: Option<f32>, slow: Option<f32>) {
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
    pub(super) fn publish_exceeded_once(&self, at: Nanos, failure: Option<f32>, slow: Option<f32>) {
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
    pub(super) fn transition_on_result(&self, check: TransitionCheckResult) {
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

    pub(super) fn metrics(&self) -> CircuitBreakerMetrics {
        let w = self.load();
        let (cell, minimum_calls) = self.cell_in(self.settings.load(), w.slot());
        let c = cell.window.snapshot(self.clock.precise());
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

    pub(super) fn manual(&self, target: Target) -> Result<(), IllegalStateTransition> {
        let t = self.transition(None, target)?;
        if let Some(t) = t {
            self.after_transition(t, target.state(), matches!(target, Target::Reset));
        }
        Ok(())
    }

    /// Transitions (if the gate is still this generation) and publishes.
    pub(super) fn transition_and_publish(&self, generation: Option<u32>, target: Target) {
        if let Ok(Some(t)) = self.transition(generation, target) {
            self.after_transition(t, target.state(), false);
        }
    }

    /// The one place the state word changes state. Under `transition_lock`:
    /// check the gate (`expect`: the generation the caller saw) and the
    /// transition table, prepare the new state's data, then publish the word.
    pub(super) fn transition(
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
        let now = self.clock.precise();
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
                // The limit (at least 1 ms, checked by the caller) rides in
                // `open_wait` to the timer (`arm_timer`).
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

    pub(super) fn open_until(&self, until: Nanos) {
        self.open_until.store(until.as_u64(), Ordering::Release);
    }

    pub(super) fn reset_cell(&self, slot: Slot, now: Nanos) {
        let cell = self.cell(slot);
        cell.window.reset(now);
        cell.not_permitted.store(0, Ordering::Relaxed);
    }

    /// Publishes the transition and arms (or cancels) the timer of the new state.
    pub(super) fn after_transition(&self, mut t: Transitioned, to: State, reset: bool) {
        if t.from == State::HalfOpen {
            // This process left its part in the fleet's half-open episode
            // (on the fleet's verdict, or on its own: timed out, moved by
            // hand): the probes it holds go back, so that a process still
            // HALF_OPEN can take them; the episode goes on.
            self.end_episode();
        }
        if let Some(c) = &self.cluster
            && matches!(to, State::Open | State::ForcedOpen)
        {
            c.opened(self.clock.now());
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

    pub(super) fn arm_timer(&self, t: &Transitioned, to: State) {
        let generation = t.word.generation();
        let config = &self.settings.load().config;
        let scheduled = match to {
            State::Open if config.automatic_transition_from_open_to_half_open_enabled => {
                Some((t.open_wait, Target::HalfOpen))
            }
            // A forced open with a limit (only it carries a wait) ends in
            // HALF_OPEN: the probes decide, as after any OPEN.
            State::ForcedOpen if !t.open_wait.is_zero() => Some((t.open_wait, Target::HalfOpen)),
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

    pub(super) fn weak_self(&self) -> Weak<Inner> {
        self.me.clone()
    }
}

/// Computes both rates, Resilience4j's `CircuitBreakerMetrics.checkIfThresholdsExceeded`.
#[inline]
pub(super) fn check(config: &CircuitBreakerConfig, c: Counts, minimum_calls: u64) -> Check {
    if c.calls == 0 || c.calls < minimum_calls {
        return Check::BelowMinimum;
    }
    if c.failed == 0 && c.slow == 0 {
        // Both rates are 0, below any threshold (a configuration's are in
        // (0, 100]): the window of a healthy service, without two divisions.
        return Check::Below;
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

pub(super) fn rates(c: Counts) -> (f32, f32) {
    let n = c.calls as f32;
    (c.failed as f32 * 100.0 / n, c.slow as f32 * 100.0 / n)
}
