//! The retry's core: the instance's state and counters, and one call's
//! progress from attempt to attempt (Resilience4j's `Retry.Context`).

use std::ops::Deref;
use std::time::Duration;

use super::counter::StripedCounter;
use super::{MaxRetriesExceeded, RetryClassifier, RetryConfig, RetryEvent, RetryOutcome};
use crate::clock::{Clock, SharedClock, Sleep};
use crate::deadline;
use crate::error::Error;
use crate::event::EventPublisher;
use crate::live::Live;
use crate::sync::{AtomicU64, Ordering};
use crate::{Name, Tags};

#[doc(hidden)]
pub struct Inner {
    pub(super) name: Name,
    pub(super) config: Live<RetryConfig>,
    pub(super) clock: SharedClock,
    pub(super) tags: Tags,
    pub(super) counters: Counters,
    pub(super) events: EventPublisher<RetryEvent>,
    /// Who sees the calls that succeed at their first attempt, which
    /// publish no event: see [`Retry::watch_quiet_successes`](super::Retry::watch_quiet_successes).
    pub(super) quiet: std::sync::OnceLock<Quiet>,
}

/// A watcher of the calls that succeed at their first attempt, and the gate
/// that says when it watches.
pub(super) struct Quiet {
    pub(super) gate: &'static std::sync::atomic::AtomicBool,
    pub(super) watcher: Box<dyn Fn(std::time::SystemTime) + Send + Sync>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The call counters. Attempts are not counted on their own: every attempt
/// either ends a call (one of the four call counters) or is followed by a
/// wait (`retries`), so the total is their sum, and the success path pays one
/// increment instead of two, on a per-thread cell without a locked instruction.
pub(super) struct Counters {
    pub(super) successful_without_retry: StripedCounter,
    pub(super) successful_with_retry: AtomicU64,
    pub(super) failed_without_retry: AtomicU64,
    pub(super) failed_with_retry: AtomicU64,
    pub(super) retries: AtomicU64,
}

impl Counters {
    pub(super) fn new() -> Self {
        Counters {
            successful_without_retry: StripedCounter::new(),
            successful_with_retry: AtomicU64::new(0),
            failed_without_retry: AtomicU64::new(0),
            failed_with_retry: AtomicU64::new(0),
            retries: AtomicU64::new(0),
        }
    }

    #[inline]
    pub(super) fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Counts a panic in the first attempt of a sync call (see [`Retry::decorate`](super::Retry::decorate)).
pub(super) struct FirstAttempt<'r>(pub(super) &'r Inner);

impl FirstAttempt<'_> {
    #[inline]
    pub(super) fn disarm(self) {
        std::mem::forget(self);
    }
}

impl Drop for FirstAttempt<'_> {
    fn drop(&mut self) {
        // Only reached while unwinding: a call state with no attempt behind
        // it records the panic as the first attempt's.
        drop(CallState::new(self.0));
    }
}

/// What to do after an attempt. It holds no `T` or `E`: the caller keeps the
/// attempt's result where it is and returns it or drops it as told.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Next {
    /// End the call with the attempt's own outcome.
    Return,
    /// End the call with `MaxRetriesExceeded`: results exhausted the
    /// attempts (the call's `max_attempts`).
    Exhausted(u32),
    /// Wait, then try again; `attempt` is the number of the failed attempt.
    Retry { attempt: u32, wait: Duration },
}

impl Inner {
    /// A call succeeded at its first attempt: counted, and shown to the
    /// watcher of such calls while its gate is open (one load more when
    /// there is none).
    #[inline(always)]
    pub(super) fn success_without_retry(&self) {
        self.counters.successful_without_retry.increment();
        if let Some(quiet) = self.quiet.get()
            && quiet.gate.load(std::sync::atomic::Ordering::Relaxed)
        {
            self.show_quiet(quiet);
        }
    }

    /// Shows the watcher a call that succeeded at its first attempt, at the
    /// retry's clock's time; a watcher's panic is caught, as an event
    /// consumer's is.
    #[cold]
    #[inline(never)]
    fn show_quiet(&self, quiet: &Quiet) {
        let wall = self.clock.system_time(self.clock.now());
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (quiet.watcher)(wall)));
    }

    /// A call's first attempt: the budget's deposit, when there is one
    /// (without one, a load and a branch).
    #[inline(always)]
    pub(super) fn first_attempt(&self) {
        if let Some(budget) = &self.config.load().budget {
            budget.deposit();
        }
    }

    #[cold]
    pub(super) fn exhausted<E>(&self, max_attempts: u32) -> Error<E> {
        Error::MaxRetriesExceeded(MaxRetriesExceeded::new(self.name.clone(), max_attempts))
    }
}

/// [`CallState::version`] before the call's first failure.
pub(super) const UNSET: usize = usize::MAX;

/// One call's progress (Resilience4j's `Retry.Context`), on the caller's stack.
pub(crate) struct CallState<R: Deref<Target = Inner>> {
    pub(super) inner: R,
    /// Failed attempts so far (Resilience4j's `numOfAttempts`).
    pub(super) attempts: u32,
    /// The kind of the last retried error, for the SUCCESS event.
    pub(super) last_kind: Option<&'static str>,
    /// The call's outcome is counted; until then a drop means cancellation or panic.
    pub(super) done: bool,
    /// The settings' version, taken at the first failure ([`UNSET`] until then).
    pub(super) version: usize,
    /// Whether an unwind that drops this state is the call's own panic (an
    /// attempt's) rather than some other code's, which records nothing.
    pub(super) in_attempt: std::sync::atomic::AtomicBool,
}

impl<R: Deref<Target = Inner>> CallState<R> {
    #[inline]
    pub(super) fn new(inner: R) -> Self {
        CallState {
            inner,
            attempts: 0,
            last_kind: None,
            done: false,
            version: UNSET,
            in_attempt: std::sync::atomic::AtomicBool::new(true),
        }
    }

    /// Counts an async attempt's outcome: the call's result, or the wait
    /// before the next attempt (for [`CallState::wait`]).
    ///
    /// The result is consumed here, so a caller that binds the wait with
    /// `let` before awaiting never holds a `T` or `E` across the wait (one
    /// that is not `Send` would make its future so).
    #[inline]
    pub(crate) fn settle<T, E>(
        &mut self,
        classifier: &RetryClassifier<T, E>,
        result: Result<T, Error<E>>,
    ) -> Result<Result<T, Error<E>>, Duration> {
        if self.first_success(classifier, &result) {
            return Ok(result);
        }
        // The user's predicates and result consumer run here: a panic in one
        // is the call's own.
        self.mark_attempt(true);
        let settled = match self.next(classifier, &result) {
            Next::Return => Ok(result),
            Next::Exhausted(max) => Ok(Err(self.inner.exhausted(max))),
            Next::Retry { attempt, wait } => {
                if let (Some(consume), Ok(value)) = (classifier.consume_result_before_retry, result)
                {
                    consume(attempt, value);
                }
                Err(wait)
            }
        };
        self.mark_attempt(false);
        settled
    }

    /// The path almost every call takes, counted: the first attempt
    /// succeeded and no result predicate can say otherwise (nothing
    /// user-written runs). `false` for every other outcome, counted by
    /// [`CallState::settle`].
    #[inline(always)]
    pub(crate) fn first_success<T, E>(
        &mut self,
        classifier: &RetryClassifier<T, E>,
        result: &Result<T, Error<E>>,
    ) -> bool {
        if self.attempts == 0 && classifier.retry_on_result.is_none() && result.is_ok() {
            self.done = true;
            self.inner.success_without_retry();
            true
        } else {
            false
        }
    }

    /// Marks an attempt as the call's own while it is polled, for a future
    /// that polls its attempts itself (the decorator chain's), as
    /// [`CallState::attempt`] does.
    #[inline(always)]
    pub(crate) fn mark_attempt(&self, in_attempt: bool) {
        self.in_attempt
            .store(in_attempt, std::sync::atomic::Ordering::Relaxed);
    }

    /// The wait before the next attempt, on the retry's clock.
    pub(crate) fn sleep(&self, wait: Duration) -> Sleep {
        self.inner.clock.sleep_async(wait)
    }

    /// Counts the attempt's outcome and decides what comes next.
    #[inline]
    pub(super) fn next<T, E>(
        &mut self,
        classifier: &RetryClassifier<T, E>,
        result: &Result<T, Error<E>>,
    ) -> Next {
        match result {
            Ok(value) if classifier.retry_on_result.is_none_or(|p| !p(value)) => {
                self.done = true;
                if self.attempts == 0 {
                    self.inner.success_without_retry();
                } else {
                    self.on_success_after_retry();
                }
                Next::Return
            }
            _ => self.after_failure(classifier, result),
        }
    }

    /// Like [`CallState::next`] for an outcome already known not to be a
    /// success (the result predicate is not asked again).
    #[inline]
    pub(super) fn after_failure<T, E>(
        &mut self,
        classifier: &RetryClassifier<T, E>,
        result: &Result<T, Error<E>>,
    ) -> Next {
        match result {
            Ok(value) => self.on_rejected_result(classifier, value),
            Err(error) => self.on_error(classifier, error),
        }
    }

    #[cold]
    pub(super) fn on_success_after_retry(&self) {
        Counters::add(&self.inner.counters.successful_with_retry);
        let (attempts, kind) = (self.attempts, self.last_kind);
        self.inner.events.publish(|| RetryEvent::Success {
            number_of_retry_attempts: attempts,
            error_kind: kind,
        });
    }

    /// The call's settings: the retry's current ones at its first failure,
    /// kept for the rest of the call.
    pub(super) fn settings(&mut self) -> &RetryConfig {
        if self.version == UNSET {
            self.version = self.inner.config.version();
        }
        self.inner.config.get(self.version)
    }

    /// Shadow mode: the attempt that just failed would be retried; the call
    /// ends with its outcome, and the refusal is published.
    #[cold]
    pub(super) fn shadow_refusal(&mut self, kind: Option<&'static str>) -> Next {
        self.done = true;
        Counters::add(&self.inner.counters.failed_without_retry);
        let attempts = self.attempts.saturating_sub(1);
        self.inner.events.publish(|| RetryEvent::ShadowRefusal {
            number_of_retry_attempts: attempts,
            error_kind: kind,
        });
        Next::Return
    }

    #[inline(never)]
    pub(super) fn on_error<T, E>(
        &mut self,
        classifier: &RetryClassifier<T, E>,
        error: &Error<E>,
    ) -> Next {
        self.settings();
        let inner = &*self.inner;
        let config = inner.config.get(self.version);
        let kind = classifier.kind(error);
        if !classifier.retryable(config, error, kind) {
            self.done = true;
            Counters::add(&inner.counters.failed_without_retry);
            inner
                .events
                .publish(|| RetryEvent::IgnoredError { error_kind: kind });
            return Next::Return;
        }
        self.attempts = self.attempts.saturating_add(1);
        self.last_kind = kind;
        let n = self.attempts;
        if n >= config.max_attempts {
            self.done = true;
            Counters::add(&inner.counters.failed_with_retry);
            inner.events.publish(|| RetryEvent::Error {
                number_of_retry_attempts: n,
                error_kind: kind,
            });
            return Next::Return;
        }
        if config.shadow {
            return self.shadow_refusal(kind);
        }
        let wait = match classifier.interval.and_then(|f| f(n, Err(error))) {
            Some(wait) => wait,
            None => {
                let shared = if config.interval.reads_outcome() {
                    classifier.shared_error(error)
                } else {
                    None
                };
                config
                    .interval
                    .apply(n, &RetryOutcome::of_error(kind, shared))
            }
        };
        self.retrying_if_allowed(n, wait, kind)
    }

    #[inline(never)]
    pub(super) fn on_rejected_result<T, E>(
        &mut self,
        classifier: &RetryClassifier<T, E>,
        value: &T,
    ) -> Next {
        self.settings();
        let inner = &*self.inner;
        let config = inner.config.get(self.version);
        self.attempts = self.attempts.saturating_add(1);
        let n = self.attempts;
        if n >= config.max_attempts {
            self.done = true;
            Counters::add(&inner.counters.failed_with_retry);
            let fail = config.fail_after_max_attempts;
            let kind = match self.last_kind {
                Some(kind) if !fail => Some(kind),
                _ => Some("MaxRetriesExceeded"),
            };
            inner.events.publish(|| RetryEvent::Error {
                number_of_retry_attempts: n,
                error_kind: kind,
            });
            return if fail {
                Next::Exhausted(config.max_attempts)
            } else {
                Next::Return
            };
        }
        if config.shadow {
            return self.shadow_refusal(None);
        }
        let wait = match classifier.interval.and_then(|f| f(n, Ok(value))) {
            Some(wait) => wait,
            None => {
                let shared = match classifier.share_result {
                    Some(s) if config.interval.reads_outcome() => Some(s(value)),
                    _ => None,
                };
                config.interval.apply(n, &RetryOutcome::of_result(shared))
            }
        };
        self.retrying_if_allowed(n, wait, None)
    }

    /// Retries after `wait`, unless the request's deadline ends first (at
    /// or before the wait's end: no time would be left for the attempt) or
    /// the retry's budget cannot pay for it.
    #[inline]
    pub(super) fn retrying_if_allowed(
        &mut self,
        n: u32,
        wait: Duration,
        kind: Option<&'static str>,
    ) -> Next {
        match deadline::remaining() {
            Some(left) if wait >= left => return self.out_of_time(n, kind),
            _ => {}
        }
        let budget = &self.inner.config.get(self.version).budget;
        if let Some(budget) = budget
            && !budget.try_withdraw()
        {
            return self.budget_exhausted(n, kind);
        }
        self.retrying(n, wait, kind)
    }

    /// The budget denied the retry: the call ends with the outcome it has,
    /// as when attempts run out.
    #[cold]
    fn budget_exhausted(&mut self, n: u32, kind: Option<&'static str>) -> Next {
        self.done = true;
        let counters = &self.inner.counters;
        Counters::add(if n > 1 {
            &counters.failed_with_retry
        } else {
            &counters.failed_without_retry
        });
        self.inner.events.publish(|| RetryEvent::BudgetExhausted {
            number_of_retry_attempts: n,
            error_kind: kind,
        });
        Next::Return
    }

    /// The deadline leaves no time for another attempt: the call ends with
    /// the outcome it has, as when attempts run out.
    #[cold]
    fn out_of_time(&mut self, n: u32, kind: Option<&'static str>) -> Next {
        self.done = true;
        let counters = &self.inner.counters;
        Counters::add(if n > 1 {
            &counters.failed_with_retry
        } else {
            &counters.failed_without_retry
        });
        self.inner.events.publish(|| RetryEvent::Error {
            number_of_retry_attempts: n,
            error_kind: kind,
        });
        deadline::count("retry", &self.inner.name);
        Next::Return
    }

    pub(super) fn retrying(&self, n: u32, wait: Duration, kind: Option<&'static str>) -> Next {
        Counters::add(&self.inner.counters.retries);
        self.inner.events.publish(|| RetryEvent::Retry {
            number_of_retry_attempts: n,
            wait_interval: wait,
            error_kind: kind,
        });
        Next::Retry { attempt: n, wait }
    }

    /// A call left unfinished: cancelled (nothing more to count) or panicking.
    #[cold]
    pub(super) fn abandoned(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let counters = &self.inner.counters;
        Counters::add(if self.attempts == 0 {
            &counters.failed_without_retry
        } else {
            &counters.failed_with_retry
        });
        let n = self.attempts.saturating_add(1);
        self.inner.events.publish(|| RetryEvent::Error {
            number_of_retry_attempts: n,
            error_kind: Some("panic"),
        });
    }
}

impl<R: Deref<Target = Inner>> Drop for CallState<R> {
    #[inline]
    fn drop(&mut self) {
        if !self.done && self.in_attempt.load(std::sync::atomic::Ordering::Relaxed) {
            self.abandoned();
        }
    }
}
