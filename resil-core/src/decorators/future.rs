//! The chain's future: every layer of one async call in one state machine.
//!
//! A chain of the primitives' own futures nests one state machine per layer,
//! and each one passes its result up to the next through memory: resumed,
//! tested, returned, dropped, five times per call. [`ChainFuture`] holds
//! what each layer keeps during an attempt (the breaker's guard, the rate
//! limiter's reservation, the time limiter's timer, the bulkhead's permit
//! or place in its queue) side by side, next to the caller's future, and
//! steps through them in one `poll`: each layer does exactly what its own
//! future does (see [`crate::future`]), in the same order, with the same
//! events, and the result goes through each layer's completion and fallback
//! on the way out with no copy between layers.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{Fallback, Layer, Layers, Recovering};
use crate::Error;
use crate::bulkhead::{self, BulkheadPermit};
use crate::circuit_breaker::CallGuard;
use crate::clock::{Sleep, Stamp};
use crate::future::InnerErrors;
use crate::rate_limiter;
use crate::retry::{self, CallState, RetryClassifier};
use crate::time_limiter::Deadline;

/// Where a call stands.
#[derive(Clone, Copy)]
enum Step {
    /// An attempt is about to enter the layers.
    Start,
    /// Waiting for the rate limiter's permit.
    RateLimiter,
    /// Waiting in the bulkhead's queue.
    Bulkhead,
    /// The caller's future runs.
    Running,
    /// A layer's async fallback runs; what it returns is that layer's result.
    Recovering(Layer),
    /// The retry waits before the next attempt.
    Backoff,
    Done,
}

/// What the layers hold during one attempt, in the order a chain of nested
/// futures drops it: the bulkhead's permit or place in the queue, the time
/// limiter's timer, the rate limiter's reservation, the breaker's guard.
struct Attempt<'a> {
    permit: Option<BulkheadPermit<'a>>,
    queued: Option<bulkhead::Queued<&'a bulkhead::Inner>>,
    deadline: Option<Deadline<'a>>,
    reserved: Option<rate_limiter::Reserved<'a>>,
    guard: Option<CallGuard<'a>>,
}

/// Drops what an attempt holds if a panic unwinds through the chain's
/// `poll`, as each layer of a nested chain does while the panic passes
/// through it: the bulkhead's permit goes back at once and the breaker
/// records the panic, whether or not the future is dropped after.
struct OnUnwind<'p, 'a>(&'p mut Attempt<'a>);

impl Drop for OnUnwind<'_, '_> {
    fn drop(&mut self) {
        // Reached only while unwinding: `poll` forgets it otherwise.
        drop(self.0.permit.take());
        drop(self.0.guard.take());
    }
}

/// Everything of the call but the caller's future and the attempt's permits.
struct State<'s, 'a, T, E, F> {
    layers: Layers<'s, 'a, T, E>,
    retry: Option<(CallState<&'a retry::Inner>, &'s RetryClassifier<T, E>)>,
    f: F,
    step: Step,
    recovering: Option<Recovering<'a, T, E>>,
    backoff: Option<Sleep>,
}

pin_project_lite::pin_project! {
    /// The future of [`Decorators::call_async`](super::Decorators::call_async).
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub(super) struct ChainFuture<'s, 'a, T, E, F, Fut> {
        // Fields drop in order: the caller's future first, then the layers'
        // permits from the inside out, as nested futures drop.
        #[pin]
        call: Option<InnerErrors<Fut>>,
        attempt: Attempt<'a>,
        state: State<'s, 'a, T, E, F>,
    }
}

impl<'s, 'a, T, E, F, Fut> ChainFuture<'s, 'a, T, E, F, Fut> {
    #[inline]
    pub(super) fn new(
        layers: Layers<'s, 'a, T, E>,
        retry: Option<(CallState<&'a retry::Inner>, &'s RetryClassifier<T, E>)>,
        f: F,
    ) -> Self {
        ChainFuture {
            call: None,
            attempt: Attempt {
                permit: None,
                queued: None,
                deadline: None,
                reserved: None,
                guard: None,
            },
            state: State {
                layers,
                retry,
                f,
                step: Step::Start,
                recovering: None,
                backoff: None,
            },
        }
    }
}

impl<T, E, F, Fut> Future for ChainFuture<'_, '_, T, E, F, Fut>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let held = OnUnwind(this.attempt);
        let poll = this.state.poll(this.call, held.0, cx);
        std::mem::forget(held);
        poll
    }
}

/// What a step of the chain came to.
enum Next<T, E> {
    /// The call waits: the chain's future returns `Pending`.
    Pending,
    /// The chain moved to another step.
    Continue,
    /// A layer's result, before its fallback.
    Out(Layer, Result<T, Error<E>>),
}

impl<'a, T, E, F, Fut> State<'_, 'a, T, E, F>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    #[inline]
    fn poll(
        &mut self,
        mut call: Pin<&mut Option<InnerErrors<Fut>>>,
        a: &mut Attempt<'a>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<T, Error<E>>> {
        self.mark(a, true);
        loop {
            // The layers' one reading of the clock within a step: what a
            // step does before its first reading (poll the caller's future,
            // wait) happens before it, and whatever runs user code after
            // that (a fallback, an event consumer) clears it.
            let mut stamp = Stamp::default();
            let next = match self.step {
                Step::Start => self.enter(call.as_mut(), a, &mut stamp),
                Step::Running => Self::run(call.as_mut(), a, cx, &mut stamp),
                Step::RateLimiter => self.rate_limiter_wait(call.as_mut(), a, cx, &mut stamp),
                Step::Bulkhead => self.bulkhead_wait(call.as_mut(), a, cx),
                Step::Recovering(layer) => {
                    let recovering = self.recovering.as_mut();
                    match recovering
                        .expect("a recovering chain holds its fallback")
                        .as_mut()
                        .poll(cx)
                    {
                        // The bulkhead's fallback runs inside the time limiter.
                        Poll::Pending if layer == Layer::Bulkhead => {
                            time_limited(a, cx, |_| self.recovering = None)
                        }
                        Poll::Pending => Next::Pending,
                        Poll::Ready(result) => {
                            self.recovering = None;
                            if let Some(result) = self.outward(a, layer, result, true, &mut stamp) {
                                return Poll::Ready(result);
                            }
                            Next::Continue
                        }
                    }
                }
                Step::Backoff => {
                    let backoff = self
                        .backoff
                        .as_mut()
                        .expect("a waiting retry holds its timer");
                    if Pin::new(backoff).poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    self.backoff = None;
                    self.step = Step::Start;
                    self.mark(a, true);
                    Next::Continue
                }
                Step::Done => panic!("`Decorators::call_async`'s future polled after completion"),
            };
            match next {
                Next::Pending => {
                    self.mark(a, false);
                    return Poll::Pending;
                }
                Next::Continue => {}
                Next::Out(layer, result) => {
                    if let Some(result) = self.outward(a, layer, result, false, &mut stamp) {
                        return Poll::Ready(result);
                    }
                }
            }
        }
    }

    /// Marks the attempt in progress, if any, as polled (an unwind now is
    /// the call's own: the breaker and the retry count it) or not.
    #[inline(always)]
    fn mark(&self, a: &mut Attempt<'a>, polled: bool) {
        if matches!(
            self.step,
            Step::Backoff | Step::Done | Step::Recovering(Layer::Retry)
        ) {
            return;
        }
        if let Some(guard) = a.guard.as_mut() {
            guard.set_in_call(polled);
        }
        if let Some((call, _)) = &self.retry {
            call.mark_attempt(polled);
        }
    }

    /// Enters the layers from the outside in, as each layer's future is
    /// created when the one outside it is first polled.
    #[inline]
    fn enter(
        &mut self,
        call: Pin<&mut Option<InnerErrors<Fut>>>,
        a: &mut Attempt<'a>,
        stamp: &mut Stamp<'a>,
    ) -> Next<T, E> {
        if let Some((cb, _)) = self.layers.circuit_breaker {
            match cb.start_call_stamped(stamp) {
                Ok(guard) => a.guard = Some(guard),
                Err(e) => return Next::Out(Layer::CircuitBreaker, Err(Error::CallNotPermitted(e))),
            }
        }
        if let Some(limiter) = self.layers.rate_limiter {
            match limiter.admit(stamp) {
                rate_limiter::Admission::Now => {}
                rate_limiter::Admission::Refused(e) => {
                    return Next::Out(Layer::RateLimiter, Err(Error::RequestNotPermitted(e)));
                }
                rate_limiter::Admission::Later(reserved) => {
                    a.reserved = Some(reserved);
                    self.step = Step::RateLimiter;
                    return Next::Continue;
                }
            }
        }
        self.enter_time_limiter(call, a, stamp)
    }

    /// Enters the time limiter and the bulkhead, and calls `f`.
    #[inline]
    fn enter_time_limiter(
        &mut self,
        call: Pin<&mut Option<InnerErrors<Fut>>>,
        a: &mut Attempt<'a>,
        stamp: &mut Stamp<'a>,
    ) -> Next<T, E> {
        if let Some(limiter) = self.layers.time_limiter {
            a.deadline = Some(limiter.deadline());
        }
        if let Some(bulkhead) = self.layers.bulkhead {
            match bulkhead.admit(stamp) {
                bulkhead::Admission::Now(permit) => a.permit = Some(permit),
                bulkhead::Admission::Refused(e) => {
                    return Next::Out(Layer::Bulkhead, Err(Error::BulkheadFull(e)));
                }
                bulkhead::Admission::Later(queued) => {
                    a.queued = Some(queued);
                    self.step = Step::Bulkhead;
                    return Next::Continue;
                }
            }
        }
        self.start(call)
    }

    /// Calls `f`: the attempt runs.
    #[inline]
    fn start(&mut self, mut call: Pin<&mut Option<InnerErrors<Fut>>>) -> Next<T, E> {
        call.set(Some(InnerErrors::new((self.f)())));
        self.step = Step::Running;
        Next::Continue
    }

    /// Polls the caller's future, and the time limiter's timer while it is
    /// not ready.
    #[inline]
    fn run(
        mut call: Pin<&mut Option<InnerErrors<Fut>>>,
        a: &mut Attempt<'a>,
        cx: &mut Context<'_>,
        stamp: &mut Stamp<'a>,
    ) -> Next<T, E> {
        let running = call.as_mut().as_pin_mut();
        match running.expect("a running chain holds its call").poll(cx) {
            Poll::Ready(result) => {
                // The caller's future first, then the permit.
                call.set(None);
                if let Some(permit) = a.permit.take() {
                    permit.finish_stamped(stamp);
                }
                Next::Out(Layer::Bulkhead, result)
            }
            Poll::Pending => time_limited(a, cx, |a| {
                call.set(None);
                a.permit = None;
            }),
        }
    }

    /// The rate limiter's wait for its permit.
    #[cold]
    fn rate_limiter_wait(
        &mut self,
        call: Pin<&mut Option<InnerErrors<Fut>>>,
        a: &mut Attempt<'a>,
        cx: &mut Context<'_>,
        stamp: &mut Stamp<'a>,
    ) -> Next<T, E> {
        let reserved = a
            .reserved
            .as_mut()
            .expect("a waiting rate limiter holds its reservation");
        if reserved.poll(cx).is_pending() {
            return Next::Pending;
        }
        let reserved = a
            .reserved
            .take()
            .expect("a waiting rate limiter holds its reservation");
        match reserved.finish() {
            Ok(()) => self.enter_time_limiter(call, a, stamp),
            Err(e) => Next::Out(Layer::RateLimiter, Err(Error::RequestNotPermitted(e))),
        }
    }

    /// The bulkhead's wait in its queue, raced against the time limiter's
    /// timer (the time limiter is outside the bulkhead).
    #[cold]
    fn bulkhead_wait(
        &mut self,
        call: Pin<&mut Option<InnerErrors<Fut>>>,
        a: &mut Attempt<'a>,
        cx: &mut Context<'_>,
    ) -> Next<T, E> {
        let queued = a
            .queued
            .as_mut()
            .expect("a waiting bulkhead holds its place");
        match queued.poll_permit(cx) {
            Poll::Ready(Ok(permit)) => {
                a.queued = None;
                a.permit = Some(permit);
                self.start(call)
            }
            Poll::Ready(Err(full)) => {
                a.queued = None;
                Next::Out(Layer::Bulkhead, Err(Error::BulkheadFull(full)))
            }
            // Out of the queue before the timeout is published.
            Poll::Pending => time_limited(a, cx, |a| a.queued = None),
        }
    }

    /// `layer`'s result through its fallback (unless `recovered`: the
    /// fallback gave it), then through the layers outside it, each one's
    /// completion then its fallback: the call's result once it is known, or
    /// `None` when the chain moved to another step (an async fallback runs,
    /// the retry makes another attempt).
    ///
    /// Written out layer by layer rather than as a loop over them: a result
    /// passes each layer with one test of its own when nothing is to be done.
    #[inline]
    fn outward(
        &mut self,
        a: &mut Attempt<'a>,
        layer: Layer,
        mut result: Result<T, Error<E>>,
        recovered: bool,
        stamp: &mut Stamp<'a>,
    ) -> Option<Result<T, Error<E>>> {
        // The layer whose fallback already ran, if any.
        let ran = if recovered { Some(layer) } else { None };
        macro_rules! fall_back {
            ($layer:expr) => {
                if result.is_err()
                    && ran != Some($layer)
                    && let Some(fallback) = self.layers.fallback($layer)
                    && let Err(e) = result
                {
                    match fallback {
                        Fallback::Sync(f) => {
                            result = f(e);
                            stamp.clear();
                        }
                        Fallback::Async(f) => {
                            self.recovering = Some(f(e));
                            self.step = Step::Recovering($layer);
                            return None;
                        }
                    }
                }
            };
        }
        if layer == Layer::Bulkhead {
            fall_back!(Layer::Bulkhead);
            if let Some(deadline) = a.deadline.take() {
                result = deadline.record_stamped(Ok(result), stamp);
            }
        }
        if layer >= Layer::TimeLimiter {
            fall_back!(Layer::TimeLimiter);
        }
        if layer >= Layer::RateLimiter {
            fall_back!(Layer::RateLimiter);
            if let (Some(guard), Some((_, classifier))) =
                (a.guard.take(), self.layers.circuit_breaker)
            {
                guard.record_stamped(classifier, &result, stamp);
            }
        }
        if layer >= Layer::CircuitBreaker {
            fall_back!(Layer::CircuitBreaker);
            if let Some((call, classifier)) = &mut self.retry {
                call.mark_attempt(false);
                match call.settle(classifier, result) {
                    Ok(settled) => result = settled,
                    Err(wait) => {
                        if wait.is_zero() {
                            self.step = Step::Start;
                            call.mark_attempt(true);
                        } else {
                            self.backoff = Some(call.sleep(wait));
                            self.step = Step::Backoff;
                        }
                        return None;
                    }
                }
            }
        }
        fall_back!(Layer::Retry);
        self.step = Step::Done;
        Some(result)
    }
}

/// What runs inside the time limiter is not ready: its timer, if it has
/// one, decides. Once the timeout has passed, `give_up` drops what runs
/// inside it (as the time limiter's own future drops its inner future), and
/// the timeout is the time limiter's result.
#[inline]
fn time_limited<'a, T, E>(
    a: &mut Attempt<'a>,
    cx: &mut Context<'_>,
    give_up: impl FnOnce(&mut Attempt<'a>),
) -> Next<T, E> {
    match a.deadline.as_mut().map(|d| d.poll_expired(cx)) {
        Some(Poll::Ready(timeout)) => {
            give_up(a);
            let deadline = a
                .deadline
                .take()
                .expect("a timed-out chain holds its deadline");
            Next::Out(Layer::TimeLimiter, deadline.record(Err(timeout)))
        }
        _ => Next::Pending,
    }
}
