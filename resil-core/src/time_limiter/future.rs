//! The time limiter's named futures: the caller's future raced against the
//! timeout ([`TimeLimiterFuture`], [`OwnedTimeLimiterFuture`]) and the
//! detached calls' ([`DetachedTimeLimiterFuture`]), with the timer they share.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use super::{Inner, TimeLimiter};
use crate::clock::{Clock, Sleep, Stamp};
use crate::error::Error;

pin_project_lite::pin_project! {
    /// The future of a time limiter's async call: the caller's future, held
    /// in place, raced against the timeout.
    ///
    /// It is created by [`TimeLimiter::call_async`](super::TimeLimiter::call_async) and
    /// [`TimeLimiter::decorate_async`](super::TimeLimiter::decorate_async), which call their closure right away.
    /// Each poll polls the caller's future first; the timer is started only
    /// after a first poll that is not ready, so a call that completes at once
    /// costs no timer. On timeout the caller's future is dropped.
    ///
    /// It is `Send` whenever `Fut` is, and takes a few words more than `Fut`.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::TokioClock;
    /// use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig, TimeLimiterFuture};
    /// use resil_core::future::InnerErrors;
    /// use resil_core::Error;
    /// use std::future::Pending;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let tl = TimeLimiter::with_clock("quote", TimeLimiterConfig::default(), TokioClock::new());
    /// let hangs: TimeLimiterFuture<'_, InnerErrors<Pending<Result<u32, std::io::Error>>>> =
    ///     tl.call_async(std::future::pending);
    /// assert!(matches!(hangs.await, Err(Error::Timeout(_))));
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct TimeLimiterFuture<'a, Fut> {
        #[pin]
        timed: Timed<&'a Inner, Fut>,
    }
}

pin_project_lite::pin_project! {
    /// [`TimeLimiterFuture`] for a future that must not borrow the time
    /// limiter: it holds a clone of it.
    ///
    /// It is created by [`TimeLimiter::call_async_owned`](super::TimeLimiter::call_async_owned) and
    /// [`TimeLimiter::decorate_async_owned`](super::TimeLimiter::decorate_async_owned), and behaves exactly as
    /// [`TimeLimiterFuture`] does (the caller's future is dropped on
    /// timeout); it is `'static` and `Send` whenever `Fut` is.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct OwnedTimeLimiterFuture<Fut> {
        #[pin]
        timed: Timed<Arc<Inner>, Fut>,
    }
}

pin_project_lite::pin_project! {
    /// A future raced against the timeout of the time limiter `R` holds.
    struct Timed<R, Fut>
    where
        R: Deref<Target = Inner>,
    {
        #[pin]
        stage: Stage<Fut>,
        inner: R,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProj]
    enum Stage<Fut> {
        Running {
            timer: Timer,
            #[pin]
            future: Fut,
        },
        Done,
    }
}

/// The timeout of one call, from its first poll that is not ready.
#[derive(Debug)]
enum Timer {
    /// The future has not yet been pending.
    Unarmed,
    /// Timing, with the settings of the call's start (`sleep` is `None`
    /// for a zero timeout).
    Armed {
        sleep: Option<Sleep>,
        timeout: Duration,
        shadow: bool,
    },
    /// Passed in shadow mode: the future is left to finish.
    Passed,
}

/// One call's timeout, for a future that polls the call itself (the
/// decorator chain's): armed when the call is first not ready.
pub(crate) struct Deadline<'a> {
    inner: &'a Inner,
    timer: Timer,
}

impl TimeLimiter {
    /// The timeout of a call that starts now, as [`TimeLimiter::decorate_async`] times it.
    #[inline]
    pub(crate) fn deadline(&self) -> Deadline<'_> {
        Deadline {
            inner: &self.inner,
            timer: Timer::Unarmed,
        }
    }
}

impl<'a> Deadline<'a> {
    /// Polled after a poll of the call that was not ready: ready with the
    /// timeout once it has passed (never, when shadow mode let it pass).
    #[cold]
    pub(crate) fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Duration> {
        self.inner
            .poll_timer::<Infallible>(&mut self.timer, cx)
            .map(|expired| match expired {
                Ok(never) => match never {},
                Err(timeout) => timeout,
            })
    }

    /// Counts and publishes the call's outcome (`Err` with the timeout when
    /// it passed), as the time limiter's own future does.
    #[inline]
    pub(crate) fn record<T, E>(
        self,
        outcome: Result<Result<T, Error<E>>, Duration>,
    ) -> Result<T, Error<E>> {
        self.inner.record(outcome)
    }

    /// [`Deadline::record`], the outcome published at `stamp`'s time.
    #[inline]
    pub(crate) fn record_stamped<T, E>(
        self,
        outcome: Result<Result<T, Error<E>>, Duration>,
        stamp: &mut Stamp<'a>,
    ) -> Result<T, Error<E>> {
        self.inner.record_stamped(outcome, stamp)
    }
}

impl<'a, Fut> TimeLimiterFuture<'a, Fut> {
    #[inline]
    pub(super) fn new(inner: &'a Inner, future: Fut) -> Self {
        TimeLimiterFuture {
            timed: Timed::new(inner, future),
        }
    }
}

impl<Fut> OwnedTimeLimiterFuture<Fut> {
    #[inline]
    pub(super) fn new(inner: Arc<Inner>, future: Fut) -> Self {
        OwnedTimeLimiterFuture {
            timed: Timed::new(inner, future),
        }
    }
}

impl<R: Deref<Target = Inner>, Fut> Timed<R, Fut> {
    #[inline]
    fn new(inner: R, future: Fut) -> Self {
        Timed {
            stage: Stage::Running {
                timer: Timer::Unarmed,
                future,
            },
            inner,
        }
    }

    fn debug(&self, f: &mut fmt::Formatter<'_>, type_name: &str) -> fmt::Result {
        f.debug_struct(type_name)
            .field("time_limiter", &self.inner.name)
            .field("done", &matches!(self.stage, Stage::Done))
            .finish_non_exhaustive()
    }
}

impl<R, Fut, T, E> Future for Timed<R, Fut>
where
    R: Deref<Target = Inner>,
    Fut: Future<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut stage = this.stage;
        let outcome = match stage.as_mut().project() {
            StageProj::Running { timer, future } => {
                ready!(this.inner.poll_timed(future, timer, cx))
            }
            StageProj::Done => panic!("`TimeLimiterFuture` polled after completion"),
        };
        // The caller's future is dropped before the outcome is published.
        stage.set(Stage::Done);
        Poll::Ready(this.inner.record(outcome))
    }
}

crate::future::delegate_future!(
    impl<Fut, T, E> TimeLimiterFuture<'_, Fut> => timed.poll
    where Fut: Future<Output = Result<T, Error<E>>>
);

crate::future::delegate_future!(
    impl<Fut, T, E> OwnedTimeLimiterFuture<Fut> => timed.poll
    where Fut: Future<Output = Result<T, Error<E>>>
);

impl<Fut> fmt::Debug for TimeLimiterFuture<'_, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.timed.debug(f, "TimeLimiterFuture")
    }
}

impl<Fut> fmt::Debug for OwnedTimeLimiterFuture<Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.timed.debug(f, "OwnedTimeLimiterFuture")
    }
}

pin_project_lite::pin_project! {
    /// The future of a time limiter's detached call: like
    /// [`TimeLimiterFuture`], but with `cancel_running_future = false` a
    /// timed-out future is left running on the tokio runtime.
    ///
    /// It is created by [`TimeLimiter::call_async_detached`](super::TimeLimiter::call_async_detached) and
    /// [`TimeLimiter::decorate_async_detached`](super::TimeLimiter::decorate_async_detached), which call their closure
    /// right away; with `cancel_running_future = false` they box the future
    /// then (one allocation per call), so that, once polled, it can still
    /// move into a task.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::TokioClock;
    /// use resil_core::time_limiter::{DetachedTimeLimiterFuture, TimeLimiter, TimeLimiterConfig};
    /// use resil_core::future::InnerErrors;
    /// use std::future::Ready;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let tl = TimeLimiter::with_clock("report", TimeLimiterConfig::default(), TokioClock::new());
    /// let report: DetachedTimeLimiterFuture<'_, InnerErrors<Ready<Result<u32, std::io::Error>>>> =
    ///     tl.call_async_detached(|| std::future::ready(Ok(3)));
    /// assert_eq!(report.await.unwrap(), 3);
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct DetachedTimeLimiterFuture<'a, Fut> {
        #[pin]
        stage: DetachedStage<Fut>,
        inner: &'a Inner,
    }
}

pin_project_lite::pin_project! {
    #[project = DetachedStageProj]
    #[project_replace = DetachedStageReplace]
    enum DetachedStage<Fut> {
        Inline {
            timer: Timer,
            #[pin]
            future: Fut,
        },
        Boxed {
            timer: Timer,
            future: Pin<Box<Fut>>,
        },
        Done,
    }
}

impl<'a, Fut> DetachedTimeLimiterFuture<'a, Fut> {
    #[inline]
    pub(super) fn new(inner: &'a Inner, future: Fut) -> Self {
        let stage = if inner.config.load().cancel_running_future {
            DetachedStage::Inline {
                timer: Timer::Unarmed,
                future,
            }
        } else {
            DetachedStage::Boxed {
                timer: Timer::Unarmed,
                future: Box::pin(future),
            }
        };
        DetachedTimeLimiterFuture { stage, inner }
    }
}

impl<Fut, T, E> Future for DetachedTimeLimiterFuture<'_, Fut>
where
    Fut: Future<Output = Result<T, Error<E>>> + Send + 'static,
    T: Send + 'static,
    E: Send + 'static,
{
    type Output = Result<T, Error<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut stage = this.stage;
        let outcome = match stage.as_mut().project() {
            DetachedStageProj::Inline { timer, future } => {
                ready!(this.inner.poll_timed(future, timer, cx))
            }
            DetachedStageProj::Boxed { timer, future } => {
                ready!(this.inner.poll_timed(future.as_mut(), timer, cx))
            }
            DetachedStageProj::Done => {
                panic!("`DetachedTimeLimiterFuture` polled after completion")
            }
        };
        if let DetachedStageReplace::Boxed { future, .. } =
            stage.as_mut().project_replace(DetachedStage::Done)
            && outcome.is_err()
        {
            this.inner.detach(future);
        }
        Poll::Ready(this.inner.record(outcome))
    }
}

impl<Fut> fmt::Debug for DetachedTimeLimiterFuture<'_, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.stage {
            DetachedStage::Inline { .. } => "inline",
            DetachedStage::Boxed { .. } => "boxed",
            DetachedStage::Done => "done",
        };
        f.debug_struct("DetachedTimeLimiterFuture")
            .field("time_limiter", &self.inner.name)
            .field("stage", &stage)
            .finish_non_exhaustive()
    }
}

impl Inner {
    /// Polls `future` until it is done (`Ok`) or the timeout elapses
    /// (`Err` with the timeout). The timer is created only after a first
    /// poll that is not ready, with the settings current then: that is when
    /// the call's timing starts. In shadow mode a passed timeout is
    /// published and the future is polled on to its end.
    #[inline]
    fn poll_timed<Fut: Future>(
        &self,
        future: Pin<&mut Fut>,
        timer: &mut Timer,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Fut::Output, Duration>> {
        if let Poll::Ready(out) = future.poll(cx) {
            return Poll::Ready(Ok(out));
        }
        self.poll_timer(timer, cx)
    }

    #[cold]
    fn poll_timer<O>(&self, timer: &mut Timer, cx: &mut Context<'_>) -> Poll<Result<O, Duration>> {
        loop {
            match timer {
                Timer::Passed => return Poll::Pending,
                Timer::Unarmed => {
                    let config = self.config.load();
                    let timeout = config.timeout_duration;
                    *timer = Timer::Armed {
                        sleep: (!timeout.is_zero()).then(|| self.clock.sleep_async(timeout)),
                        timeout,
                        shadow: config.shadow,
                    };
                }
                Timer::Armed {
                    sleep,
                    timeout,
                    shadow,
                } => {
                    if let Some(sleep) = sleep {
                        ready!(Pin::new(sleep).poll(cx));
                    }
                    if !*shadow {
                        return Poll::Ready(Err(*timeout));
                    }
                    *timer = Timer::Passed;
                    self.shadow_refusal();
                }
            }
        }
    }
}
