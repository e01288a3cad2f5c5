//! The rate limiter's named futures: a call that waits for its permits, then runs.

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use super::{Decision, Inner, RateLimiter, RequestNotPermitted};
use crate::clock::{Clock, Nanos, SharedClock, Sleep, Stamp};
use crate::error::Error;
use crate::future::AsyncCall;
use crate::sync::Ordering;

pin_project_lite::pin_project! {
    /// The future of a rate limiter's async call: the caller's future, held
    /// in place, once its permits are due.
    ///
    /// It is created by [`RateLimiter::call_async`](super::RateLimiter::call_async),
    /// [`RateLimiter::decorate_async`](super::RateLimiter::decorate_async) and
    /// [`RateLimiter::decorate_async_with_permits`](super::RateLimiter::decorate_async_with_permits),
    /// which reserve the permits right away (as Resilience4j's decorated `CompletionStage`
    /// supplier does when invoked). Due now, the closure is called at once;
    /// due later within the timeout, the future keeps the closure `F`, sleeps
    /// on the limiter's clock until then and calls it after the wait; beyond
    /// the timeout, it waits the whole timeout and fails, as in Resilience4j. The
    /// event is published after the wait. Dropping it while it waits keeps
    /// the reservation (see the [module documentation](super)).
    ///
    /// It is `Send` whenever `F` and `Fut` are, and takes a few words more than
    /// the larger of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::{Clock, TokioClock};
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), resil_core::ConfigError> {
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(1)
    ///     .limit_refresh_period(Duration::from_secs(1))
    ///     .build()?;
    /// let limiter = RateLimiter::with_clock("mail", config, TokioClock::new());
    /// limiter.try_acquire_permission(1); // this cycle's permit
    /// let called = AtomicBool::new(false);
    /// let send = limiter.call_async(|| {
    ///     called.store(true, Ordering::SeqCst);
    ///     async { Ok::<_, std::io::Error>(()) }
    /// });
    /// assert!(!called.load(Ordering::SeqCst)); // reserved for the next cycle, not called yet
    /// send.await.unwrap();
    /// assert!(called.load(Ordering::SeqCst));
    /// assert_eq!(limiter.clock().now().as_duration(), Duration::from_secs(1));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct RateLimiterFuture<'a, F, Fut> {
        #[pin]
        pub(super) call: Call<&'a Inner, F, Fut>,
    }
}

pin_project_lite::pin_project! {
    /// [`RateLimiterFuture`] for a future that must not borrow the limiter:
    /// it holds a clone of the limiter.
    ///
    /// It is created by [`RateLimiter::call_async_owned`](super::RateLimiter::call_async_owned),
    /// [`RateLimiter::decorate_async_owned`](super::RateLimiter::decorate_async_owned) and
    /// [`RateLimiter::decorate_async_owned_with_permits`](super::RateLimiter::decorate_async_owned_with_permits),
    /// and behaves exactly as [`RateLimiterFuture`] does; it is `'static` and `Send`
    /// whenever `F` and `Fut` are.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct OwnedRateLimiterFuture<F, Fut> {
        #[pin]
        pub(super) call: Call<Arc<Inner>, F, Fut>,
    }
}

pin_project_lite::pin_project! {
    /// A call through the limiter that `R` holds (by reference or by `Arc`):
    /// only a call that waits holds it, so one that goes at once costs no
    /// reference count.
    pub(super) struct Call<R, F, Fut>
    where
        R: Deref<Target = Inner>,
    {
        #[pin]
        stage: Stage<R, F, Fut>,
        permits: u32,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProj]
    #[project_replace = StageReplace]
    enum Stage<R, F, Fut>
    where
        R: Deref<Target = Inner>,
    {
        Waiting {
            f: F,
            decision: Decision,
            // When the permits are due (or the timeout ends, for a refusal).
            until: Nanos,
            // Started at the first poll: a clock's timer may need a runtime.
            sleep: Option<Sleep>,
            // The limiter, counting this caller as waiting.
            waiting: Waiting<R>,
        },
        Running {
            #[pin]
            future: Fut,
        },
        Refused {
            error: Option<RequestNotPermitted>,
        },
        Done,
    }
}

/// Sleeps on `clock` until `until`; the timer starts at the first poll (a
/// clock's timer may need a runtime).
fn poll_until(
    clock: &SharedClock,
    until: Nanos,
    sleep: &mut Option<Sleep>,
    cx: &mut Context<'_>,
) -> Poll<()> {
    let sleep = sleep
        .get_or_insert_with(|| clock.sleep_async(until.saturating_duration_since(clock.now())));
    Pin::new(sleep).poll(cx)
}

/// A call's admission, for a future that runs the call itself (the
/// decorator chain's): one permit now, a refusal, or a reservation due later.
pub(crate) enum Admission<'a> {
    Now,
    Refused(RequestNotPermitted),
    Later(Reserved<'a>),
}

/// A reservation whose permit is due later (or whose refusal comes when the
/// timeout ends), counted as waiting while it lives.
pub(crate) struct Reserved<'a> {
    decision: Decision,
    until: Nanos,
    sleep: Option<Sleep>,
    waiting: Waiting<&'a Inner>,
}

impl RateLimiter {
    /// Reserves one permit as [`RateLimiter::decorate_async`] does when it
    /// is created, at `stamp`'s time: the decision and its event take the
    /// decorator chain's reading of the clock. (As `Call::new_or_defer`
    /// decides, written out: an enum of the three outcomes passed between
    /// them cost its future 9 instructions. A cluster limiter reads its own
    /// clock for its lease; the chain's reading still serves the layers
    /// after it.)
    #[inline]
    pub(crate) fn admit<'a>(&'a self, stamp: &mut Stamp<'a>) -> Admission<'a> {
        let inner = &*self.inner;
        let timeout = inner.core.timeout();
        let now = stamp.now(&inner.clock).as_u64();
        let decision = inner.decide_with(1, timeout, || now);
        match decision.wait(timeout) {
            None => {
                if inner.events.is_active() {
                    inner.publish_acquire_stamped(decision, 1, stamp);
                }
                match inner.outcome(decision) {
                    Ok(()) => Admission::Now,
                    Err(refused) => Admission::Refused(refused),
                }
            }
            Some(wait) => Admission::Later(Reserved::new(inner, decision, wait)),
        }
    }
}

impl<'a> Reserved<'a> {
    #[cold]
    fn new(inner: &'a Inner, decision: Decision, wait: Duration) -> Self {
        Reserved {
            decision,
            until: inner.clock.now().saturating_add(wait),
            sleep: None,
            waiting: Waiting::new(inner),
        }
    }

    /// Ready when the permit is due (or the timeout over).
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        poll_until(&self.waiting.0.clock, self.until, &mut self.sleep, cx)
    }

    /// Settles the reservation once due: no longer waiting, then granted or refused.
    pub(crate) fn finish(self) -> Result<(), RequestNotPermitted> {
        let (inner, decision) = (self.waiting.0, self.decision);
        drop(self);
        inner.finish(decision, 1)
    }
}

impl<R, F, Fut> Call<R, F, Fut>
where
    R: Deref<Target = Inner>,
    F: AsyncCall<Future = Fut>,
{
    #[inline]
    pub(super) fn new(inner: &Inner, holder: impl FnOnce() -> R, permits: u32, f: F) -> Self {
        Self::new_or_defer(inner, holder, permits, f, F::start, |f| f)
    }

    /// `now(call)` when the permits are due now, else `later(call)` to wait
    /// for them, holding the limiter through `holder()`.
    #[inline]
    pub(super) fn new_or_defer<C>(
        inner: &Inner,
        holder: impl FnOnce() -> R,
        permits: u32,
        call: C,
        now: impl FnOnce(C) -> Fut,
        later: impl FnOnce(C) -> F,
    ) -> Self {
        let timeout = inner.core.timeout();
        let decision = inner.decide(permits, timeout);
        let stage = match decision.wait(timeout) {
            None => match inner.finish(decision, permits) {
                Ok(()) => Stage::Running { future: now(call) },
                Err(refused) => Stage::Refused {
                    error: Some(refused),
                },
            },
            Some(wait) => Self::wait_for(holder(), later(call), decision, wait),
        };
        Call { stage, permits }
    }

    #[cold]
    fn wait_for(inner: R, f: F, decision: Decision, wait: Duration) -> Stage<R, F, Fut> {
        Stage::Waiting {
            f,
            decision,
            until: inner.clock.now().saturating_add(wait),
            sleep: None,
            waiting: Waiting::new(inner),
        }
    }
}

impl<R, F, Fut, T, E> Future for Call<R, F, Fut>
where
    R: Deref<Target = Inner> + Clone,
    F: AsyncCall<Future = Fut>,
    Fut: Future<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut stage = this.stage;
        loop {
            match stage.as_mut().project() {
                StageProj::Running { future } => {
                    let result = ready!(future.poll(cx));
                    stage.set(Stage::Done);
                    return Poll::Ready(result);
                }
                StageProj::Waiting {
                    until,
                    sleep,
                    waiting,
                    ..
                } => {
                    let clock = &waiting.0.clock;
                    let sleep = sleep.get_or_insert_with(|| {
                        clock.sleep_async(until.saturating_duration_since(clock.now()))
                    });
                    ready!(Pin::new(sleep).poll(cx));
                    let StageReplace::Waiting {
                        f,
                        decision,
                        waiting,
                        ..
                    } = stage.as_mut().project_replace(Stage::Done)
                    else {
                        unreachable!("the stage was `Waiting`")
                    };
                    // No longer waiting when the permits are settled.
                    let inner = waiting.0.clone();
                    drop(waiting);
                    match inner.finish(decision, *this.permits) {
                        Ok(()) => stage.set(Stage::Running { future: f.start() }),
                        Err(refused) => {
                            return Poll::Ready(Err(Error::RequestNotPermitted(refused)));
                        }
                    }
                }
                StageProj::Refused { error } => {
                    let error = error.take();
                    stage.set(Stage::Done);
                    return Poll::Ready(Err(Error::RequestNotPermitted(
                        error.expect("a refused stage holds its error"),
                    )));
                }
                StageProj::Done => panic!("`RateLimiterFuture` polled after completion"),
            }
        }
    }
}

impl<R: Deref<Target = Inner>, F, Fut> Call<R, F, Fut> {
    fn debug(&self, f: &mut fmt::Formatter<'_>, type_name: &str) -> fmt::Result {
        let mut d = f.debug_struct(type_name);
        let stage = match &self.stage {
            Stage::Waiting { waiting, .. } => {
                d.field("limiter", &waiting.0.name);
                "waiting"
            }
            Stage::Running { .. } => "running",
            Stage::Refused { .. } => "refused",
            Stage::Done => "done",
        };
        d.field("stage", &stage).finish_non_exhaustive()
    }
}

crate::future::delegate_future!(
    impl<F, Fut, T, E> RateLimiterFuture<'_, F, Fut> => call.poll
    where F: AsyncCall<Future = Fut>, Fut: Future<Output = Result<T, Error<E>>>
);

crate::future::delegate_future!(
    impl<F, Fut, T, E> OwnedRateLimiterFuture<F, Fut> => call.poll
    where F: AsyncCall<Future = Fut>, Fut: Future<Output = Result<T, Error<E>>>
);

impl<F, Fut> fmt::Debug for RateLimiterFuture<'_, F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.call.debug(f, "RateLimiterFuture")
    }
}

impl<F, Fut> fmt::Debug for OwnedRateLimiterFuture<F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.call.debug(f, "OwnedRateLimiterFuture")
    }
}

/// Counts a caller as waiting while it lives (also when a future is dropped mid-wait).
pub(super) struct Waiting<R: Deref<Target = Inner>>(R);

impl<R: Deref<Target = Inner>> Waiting<R> {
    pub(super) fn new(inner: R) -> Self {
        inner.waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(inner)
    }
}

impl<R: Deref<Target = Inner>> Drop for Waiting<R> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}
