//! The time limiter's layer of a chain: the attempt inside it raced against
//! the timeout, which starts when the attempt is first not ready.

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use super::TimeLimiter;
use super::core::{Expired, Inner, Stamping};
use crate::chain::{
    Ctx, GivenUp, HasAttempt, Layered, Node, OutOfLine, SyncNode, Wrap, drop_given_up,
};
use crate::clock::{Clock, Nanos, Sleep, SystemClock};
use crate::deadline;
use crate::error::Error;
use std::borrow::Borrow;

use crate::thread_pool_bulkhead::{Submission, Tasks, ThreadPoolBulkhead, ThreadPoolBulkheadNode};

/// The timeout of one attempt, from its first poll that is not ready:
/// none until then, then armed. Boxed: an attempt that is never pending
/// (the healthy path) carries one word for its timer, and drops it with
/// one test (an armed timer is dropped out of line).
type Timer = OutOfLine<Box<Armed>>;

/// A timer's state once the attempt was pending: since when, with the
/// settings of then.
#[derive(Debug)]
struct Armed {
    /// `None` for a zero timeout.
    sleep: Option<Sleep>,
    expired: Expired,
    shadow: bool,
    /// Passed in shadow mode: the attempt is left to finish.
    passed: bool,
    since: Nanos,
}

/// When the attempt of `timer` was first pending, if it was.
#[inline(always)]
fn since(timer: &Timer) -> Option<Nanos> {
    timer.as_ref().map(|armed| armed.since)
}

/// How long an attempt first pending at `since` took, ending at `now`
/// (zero when it was never pending).
#[inline(always)]
fn elapsed(since: Option<Nanos>, now: Nanos) -> Duration {
    since.map_or(Duration::ZERO, |since| now.saturating_duration_since(since))
}

impl Inner {
    /// Polled after a poll of the attempt that was not ready: ready with the
    /// timeout once it has passed (never, when shadow mode let it pass).
    /// The timer is made at the first such poll, with the settings current
    /// then: that is when the attempt's timing starts.
    #[cold]
    fn poll_timer(&self, timer: &mut Timer, cx: &mut Context<'_>) -> Poll<Expired> {
        let armed = timer.get_or_insert_with(|| {
            let config = self.config.load();
            // The request's deadline, if nearer, cuts the wait.
            let (timeout, deadline) = deadline::cut(config.timeout_duration);
            Box::new(Armed {
                since: self.clock.now(),
                sleep: (!timeout.is_zero()).then(|| self.clock.sleep_async(timeout)),
                expired: Expired { timeout, deadline },
                shadow: config.shadow,
                passed: false,
            })
        });
        if armed.passed {
            return Poll::Pending;
        }
        if let Some(sleep) = &mut armed.sleep {
            ready!(Pin::new(sleep).poll(cx));
        }
        // Shadow mode lets its own timeout pass, not the deadline.
        if !armed.shadow || armed.expired.deadline {
            return Poll::Ready(armed.expired);
        }
        armed.passed = true;
        self.shadow_refusal();
        Poll::Pending
    }
}

/// The time limiter's part in a chain: the limiter, by reference or through
/// its `Arc`.
///
/// Made by [`TimeLimiter::part`] and [`TimeLimiter::shared_part`].
#[derive(Clone)]
pub struct TimeLimiterPart<R> {
    inner: R,
}

impl TimeLimiter {
    /// This limiter's part in a [`Stack`](crate::chain::Stack). A timed-out
    /// attempt is dropped, whatever `cancel_running_future` says (see
    /// [`TimeLimiter::detaching_part`]).
    #[inline(always)]
    pub fn part(&self) -> TimeLimiterPart<&Inner> {
        TimeLimiterPart { inner: &self.inner }
    }

    /// Like [`TimeLimiter::part`], holding a clone of the limiter's `Arc`
    /// (for a chain that must not borrow it).
    #[inline(always)]
    pub fn shared_part(&self) -> TimeLimiterPart<Arc<Inner>> {
        TimeLimiterPart {
            inner: Arc::clone(&self.inner),
        }
    }

    /// This limiter's part around a call whose futures are `Send +
    /// 'static`: with `cancel_running_future = false` a timed-out future is
    /// left running on the tokio runtime (its result discarded) while the
    /// caller gets the timeout; with `true` it is dropped. While
    /// `max_detached_futures` are still running, a timed-out future is
    /// dropped too. A future that may be left running is boxed when it
    /// starts (one allocation per attempt), so that it can move into a task.
    ///
    /// It wraps the caller's call only ([`Lift`](crate::chain::Lift) or
    /// [`Call`](crate::chain::Call)): what runs inside the time limiter must
    /// be one future of its own.
    #[inline(always)]
    pub fn detaching_part(&self) -> DetachingPart<'_> {
        DetachingPart { inner: &self.inner }
    }
}

impl<R: Deref<Target = Inner>> fmt::Debug for TimeLimiterPart<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeLimiterPart")
            .field("time_limiter", &self.inner.name)
            .finish()
    }
}

/// The time limiter's layer around `N`.
pub type TimeLimiterNode<R, N> = Layered<TimeLimiterPart<R>, N>;

crate::chain::layer_part!("TimeLimiterNode", impl<R> for TimeLimiterPart<R>);

pin_project_lite::pin_project! {
    /// An attempt through the time limiter's layer: the inner attempt and
    /// its timer.
    pub struct TimeLimiterAttempt<A> {
        #[pin]
        stage: Stage<A>,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProj]
    enum Stage<A> {
        Through {
            #[pin]
            inner: A,
        },
        Running {
            timer: Timer,
            #[pin]
            inner: A,
        },
        Done,
    }
}

impl<R, N: HasAttempt> HasAttempt for TimeLimiterNode<R, N> {
    type Attempt = TimeLimiterAttempt<N::Attempt>;
}

impl<R, N, T, E> Node for TimeLimiterNode<R, N>
where
    R: Deref<Target = Inner>,
    N: Node<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        let inner = self.next.start(ctx);
        let stage = match self.part {
            None => Stage::Through { inner },
            Some(_) => Stage::Running {
                timer: Timer::none(),
                inner,
            },
        };
        TimeLimiterAttempt { stage }
    }

    #[inline(always)]
    fn poll(
        &mut self,
        attempt: Pin<&mut Self::Attempt>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Self::Output> {
        let mut stage = attempt.project().stage;
        match stage.as_mut().project() {
            StageProj::Through { inner } => self.next.poll(inner, cx, ctx),
            StageProj::Running { timer, mut inner } => {
                let part = self.part.as_ref().expect("a timed attempt has its limiter");
                let poll = self.next.poll(inner.as_mut(), cx, ctx);
                match poll {
                    // Recorded where it lies and handed on in its `Poll`,
                    // not taken out and wrapped again.
                    Poll::Ready(ref out) => {
                        let since = since(timer);
                        part.inner.record_finished(
                            out,
                            |now| elapsed(since, now),
                            Stamping::Stamped(&mut ctx.stamp),
                        );
                        poll
                    }
                    Poll::Pending => {
                        // Out of time: the attempt is given up on and dropped
                        // below, giving back what it holds (a bulkhead's permit,
                        // its place in the bulkhead's queue) before the timeout
                        // is published, under the mark that the time limiter
                        // gave up on it: an adaptive bulkhead's permit dropped
                        // then, here or in a chain inside the call, counts a
                        // drop.
                        let timeout = ready!(part.inner.poll_timer(timer, cx));
                        drop_given_up(GivenUp::Timeout, || stage.set(Stage::Done));
                        Poll::Ready(Err(part.inner.timed_out(timeout)))
                    }
                }
            }
            StageProj::Done => panic!("a time limiter's attempt polled after completion"),
        }
    }
}

/// A time limiter around a thread pool's task, for a blocking call: the
/// caller waits for the task at most the timeout (Resilience4j's
/// `executeFutureSupplier`, `future.get(timeout)`), while the task runs on
/// in its pool, since a thread cannot be stopped from outside.
impl<R, P, J> SyncNode for TimeLimiterNode<R, ThreadPoolBulkheadNode<P, J>>
where
    R: Deref<Target = Inner>,
    P: Borrow<ThreadPoolBulkhead>,
    J: Tasks,
{
    type Output = Result<J::T, Error<J::E>>;

    fn call(&mut self, ctx: &mut Ctx) -> Self::Output {
        let Some(part) = &self.part else {
            return self.next.call(ctx);
        };
        let submission = self.next.submit();
        let result = part.inner.wait_submission(submission);
        ctx.user_code_ran();
        result
    }
}

impl Inner {
    /// Blocks until the task of `submission` is done or the timeout has
    /// passed; see [`TimeLimiter::wait_submission`].
    pub(super) fn wait_submission<T, E>(
        &self,
        mut submission: Submission<Result<T, Error<E>>>,
    ) -> Result<T, Error<E>> {
        if submission.is_rejected() {
            return match submission.wait() {
                Ok(result) => result,
                Err(full) => Err(Error::BulkheadFull(full)),
            };
        }
        let config = *self.config.load();
        let (timeout, deadline) = deadline::cut(config.timeout_duration);
        // The wait is real time, whatever the limiter's clock (see
        // `TimeLimiter::wait_submission`): so is the call's duration.
        let real = SystemClock::new();
        let started = real.now();
        let outcome = match submission.wait_timeout(timeout) {
            Some(Ok(result)) => Ok(result),
            Some(Err(full)) => Ok(Err(Error::BulkheadFull(full))),
            None if config.shadow && !deadline => {
                // shadow: the timeout passed, the caller waits for the task
                self.shadow_refusal();
                match submission.wait() {
                    Ok(result) => Ok(result),
                    Err(full) => Ok(Err(Error::BulkheadFull(full))),
                }
            }
            None => {
                // The caller gives up: a task still queued is not run.
                submission.abandon();
                Err(Expired { timeout, deadline })
            }
        };
        let elapsed = |_| real.now().saturating_duration_since(started);
        self.record(outcome, elapsed, Stamping::Now)
    }
}

/// A time limiter's part around a call whose futures are `Send + 'static`,
/// which it may leave running after a timeout (see
/// [`TimeLimiter::detaching_part`]).
#[derive(Clone, Copy)]
pub struct DetachingPart<'a> {
    inner: &'a Inner,
}

impl fmt::Debug for DetachingPart<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DetachingPart")
            .field("time_limiter", &self.inner.name)
            .finish()
    }
}

/// A detaching time limiter's layer around the caller's call.
pub struct DetachingNode<'a, N> {
    inner: &'a Inner,
    next: N,
}

impl<N> fmt::Debug for DetachingNode<'_, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DetachingNode")
            .field("time_limiter", &self.inner.name)
            .finish_non_exhaustive()
    }
}

impl<'a, N> Wrap<N> for DetachingPart<'a> {
    type Node = DetachingNode<'a, N>;

    #[inline(always)]
    fn wrap(self, next: N) -> Self::Node {
        DetachingNode {
            inner: self.inner,
            next,
        }
    }
}

pin_project_lite::pin_project! {
    /// An attempt through a detaching time limiter: the caller's future, in
    /// place or (when it may be left running) boxed, and its timer.
    pub struct DetachingAttempt<Fut> {
        #[pin]
        stage: Detaching<Fut>,
    }
}

pin_project_lite::pin_project! {
    #[project = DetachingProj]
    #[project_replace = DetachingReplace]
    enum Detaching<Fut> {
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

impl<N: HasAttempt> HasAttempt for DetachingNode<'_, N> {
    type Attempt = DetachingAttempt<N::Attempt>;
}

/// The inner node's attempts are futures of their own (the caller's call:
/// [`Lift`](crate::chain::Lift) or [`Call`](crate::chain::Call)), which can move into a task.
impl<N, T, E> Node for DetachingNode<'_, N>
where
    N: Node<Output = Result<T, Error<E>>>,
    N::Attempt: Future<Output = Result<T, Error<E>>> + Send + 'static,
    T: Send + 'static,
    E: Send + 'static,
{
    type Output = Result<T, Error<E>>;

    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        let future = self.next.start(ctx);
        let stage = if self.inner.config.load().cancel_running_future {
            Detaching::Inline {
                timer: Timer::none(),
                future,
            }
        } else {
            Detaching::Boxed {
                timer: Timer::none(),
                future: Box::pin(future),
            }
        };
        DetachingAttempt { stage }
    }

    fn poll(
        &mut self,
        attempt: Pin<&mut Self::Attempt>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Self::Output> {
        let mut stage = attempt.project().stage;
        let inner = self.inner;
        let (outcome, since) = match stage.as_mut().project() {
            DetachingProj::Inline { timer, future } => match self.next.poll(future, cx, ctx) {
                Poll::Ready(out) => (Ok(out), since(timer)),
                Poll::Pending => (Err(ready!(inner.poll_timer(timer, cx))), None),
            },
            DetachingProj::Boxed { timer, future } => {
                match self.next.poll(future.as_mut(), cx, ctx) {
                    Poll::Ready(out) => (Ok(out), since(timer)),
                    Poll::Pending => (Err(ready!(inner.poll_timer(timer, cx))), None),
                }
            }
            DetachingProj::Done => panic!("a time limiter's attempt polled after completion"),
        };
        if outcome.is_err() {
            give_up(inner, stage);
        }
        // A finished call stays where it is: the chain's future drops it.
        Poll::Ready(inner.record(
            outcome,
            |now| elapsed(since, now),
            Stamping::Stamped(&mut ctx.stamp),
        ))
    }
}

/// Out of time: the call given up on is left running in a task of its own
/// (boxed, when the limiter does not cancel it) or dropped, under the mark
/// that the time limiter gave up on it, as [`TimeLimiterNode`]'s is (an
/// adaptive bulkhead's permit dropped with it counts a drop).
#[cold]
fn give_up<Fut>(inner: &Inner, mut stage: Pin<&mut Detaching<Fut>>)
where
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    drop_given_up(GivenUp::Timeout, || {
        if let DetachingReplace::Boxed { future, .. } =
            stage.as_mut().project_replace(Detaching::Done)
        {
            inner.detach(future);
        }
    });
}

impl<Fut> fmt::Debug for DetachingAttempt<Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.stage {
            Detaching::Inline { .. } => "inline",
            Detaching::Boxed { .. } => "boxed",
            Detaching::Done => "done",
        };
        f.debug_struct("DetachingAttempt")
            .field("stage", &stage)
            .finish_non_exhaustive()
    }
}

impl<A> fmt::Debug for TimeLimiterAttempt<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.stage {
            Stage::Through { .. } => "through",
            Stage::Running { .. } => "running",
            Stage::Done => "done",
        };
        f.debug_struct("TimeLimiterAttempt")
            .field("stage", &stage)
            .finish_non_exhaustive()
    }
}
