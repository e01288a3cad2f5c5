//! The breaker's layer of a chain: a call's permission, held until its
//! outcome is recorded ([`CallGuard`]), and the node that asks for it.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::core::{Inner, Permit, Verdict};
use super::{CircuitBreaker, CircuitBreakerClassifier};
use crate::chain::{
    Ctx, GivenUp, HasAttempt, Layered, Node, OutOfLine, SyncNode, given_up, holding,
};
use crate::circuit_breaker::CallNotPermitted;
use crate::clock::{Clock, Nanos};
use crate::error::Error;

/// A call in progress, holding its permission (see [`CircuitBreaker::start_call`]).
#[must_use = "a guard dropped unfinished records nothing"]
pub struct CallGuard<'a>(Guard<&'a Inner>);

impl<'a> CallGuard<'a> {
    /// Asks `inner` for permission (see [`CircuitBreaker::start_call`]).
    #[inline(always)]
    pub(super) fn start(inner: &'a Inner) -> Result<Self, CallNotPermitted> {
        Guard::start_at(inner, |inner| inner.clock.now()).map(CallGuard)
    }

    /// Records `result`, classified by `classifier` and the breaker's
    /// `record_errors` / `ignore_errors`.
    #[inline]
    pub fn record<T, E>(
        self,
        classifier: &CircuitBreakerClassifier<T, E>,
        result: &Result<T, Error<E>>,
    ) {
        let end = self.0.inner.clock.now();
        self.0.record_at(classifier, result, end);
    }

    /// Records a success.
    pub fn on_success(self) {
        self.0.finish(Verdict::Success);
    }

    /// Records a failure of the given kind.
    pub fn on_error(self, kind: Option<&'static str>) {
        self.0.finish(Verdict::Failure(kind));
    }

    /// Records an ignored error: the permit goes back, nothing is counted.
    pub fn on_ignored_error(self, kind: Option<&'static str>) {
        self.0.finish(Verdict::Ignored(kind));
    }

    /// The time the call started, on the breaker's clock.
    pub fn started_at(&self) -> Nanos {
        self.0.start
    }
}

impl fmt::Debug for CallGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallGuard")
            .field("breaker", &self.0.inner.name)
            .field("start", &self.0.start)
            .finish_non_exhaustive()
    }
}

/// A call's permission, holding the breaker by reference or through its
/// `Arc`.
pub(crate) struct Guard<R: Deref<Target = Inner>> {
    inner: R,
    start: Nanos,
    permit: Permit,
    /// The breaker's settings when the call started, which it finishes under.
    version: usize,
    done: bool,
    // Whether an unwind that drops this guard is the protected call's own
    // (recorded as a failure) rather than some other code's (permit returned).
    in_call: bool,
}

impl<R: Deref<Target = Inner>> Guard<R> {
    /// Asks for permission, the call starting at the time `now` gives.
    #[inline(always)]
    fn start_at(inner: R, now: impl FnOnce(&R) -> Nanos) -> Result<Self, CallNotPermitted> {
        let permit = inner.try_acquire()?;
        Ok(Guard {
            start: now(&inner),
            version: inner.settings.version(),
            inner,
            permit,
            done: false,
            in_call: true,
        })
    }

    /// Records `result` of the call that ended at `end`.
    #[inline]
    fn record_at<T, E>(
        mut self,
        classifier: &CircuitBreakerClassifier<T, E>,
        result: &Result<T, Error<E>>,
        end: Nanos,
    ) {
        let elapsed = end.as_u64().saturating_sub(self.start.as_u64());
        // The user's predicates run while the guard is still unfinished: a
        // panic in one drops the guard while unwinding, which records the
        // call as a failure (kind "panic") and frees its permit.
        self.in_call = true;
        let settings = self.inner.settings.get(self.version);
        let verdict = classifier.classify(&settings.config, result);
        self.done = true;
        self.inner
            .finish(settings, end, elapsed, verdict, Some(self.permit));
        if let Some(f) = classifier.transition_on_result
            && !matches!(verdict, Verdict::Ignored(_) | Verdict::CutShort)
        {
            self.inner.transition_on_result(f(result.as_ref()));
        }
    }

    fn finish(mut self, verdict: Verdict) {
        self.done = true;
        self.record_now(verdict);
    }

    /// Records the call as ending now, with `verdict`.
    fn record_now(&self, verdict: Verdict) {
        let end = self.inner.clock.now();
        self.inner.finish(
            self.inner.settings.get(self.version),
            end,
            end.as_u64().saturating_sub(self.start.as_u64()),
            verdict,
            Some(self.permit),
        );
    }

    /// Dropped before a result: a panic in the call (a failure), a call
    /// that a request's deadline ran out on (cut short: slow past the
    /// threshold, ignored otherwise), or a call not made or cancelled (the
    /// permit goes back, nothing is counted).
    #[cold]
    #[inline(never)]
    fn abandoned(&mut self) {
        if self.in_call && std::thread::panicking() {
            self.record_now(Verdict::Failure(Some("panic")));
        } else if given_up() == Some(GivenUp::Deadline) {
            self.record_now(Verdict::CutShort);
        } else {
            self.inner.give_back(Some(self.permit));
        }
    }
}

impl<R: Deref<Target = Inner>> Drop for Guard<R> {
    #[inline]
    fn drop(&mut self) {
        if !self.done {
            self.abandoned();
        }
    }
}

/// The breaker's part in a chain: the breaker (by reference, or through its
/// `Arc` for a chain that must not borrow it) and how it classifies
/// outcomes (a [`CircuitBreakerClassifier`], or a reference to one).
///
/// Made by [`CircuitBreaker::part`] and [`CircuitBreaker::shared_part`].
pub struct CircuitBreakerPart<R, C> {
    inner: R,
    classifier: C,
}

impl CircuitBreaker {
    /// This breaker's part in a [`Stack`](crate::chain::Stack), classifying
    /// with `classifier`.
    #[inline(always)]
    pub fn part<C>(&self, classifier: C) -> CircuitBreakerPart<&Inner, C> {
        CircuitBreakerPart {
            inner: &self.inner,
            classifier,
        }
    }

    /// Like [`CircuitBreaker::part`], for a chain that must not borrow the
    /// breaker (a `tower` service's response future, a spawned task): the
    /// part holds a clone of the breaker's `Arc`.
    #[inline(always)]
    pub fn shared_part<C>(&self, classifier: C) -> CircuitBreakerPart<Arc<Inner>, C> {
        CircuitBreakerPart {
            inner: Arc::clone(&self.inner),
            classifier,
        }
    }
}

impl<R: Clone, C: Clone> Clone for CircuitBreakerPart<R, C> {
    fn clone(&self) -> Self {
        CircuitBreakerPart {
            inner: self.inner.clone(),
            classifier: self.classifier.clone(),
        }
    }
}

impl<R: Deref<Target = Inner>, C> fmt::Debug for CircuitBreakerPart<R, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerPart")
            .field("breaker", &self.inner.name)
            .finish_non_exhaustive()
    }
}

/// The breaker's layer around `N`.
pub type CircuitBreakerNode<R, C, N> = Layered<CircuitBreakerPart<R, C>, N>;

crate::chain::layer_part!("CircuitBreakerNode", impl<R, C> for CircuitBreakerPart<R, C>);

pin_project_lite::pin_project! {
    /// An attempt through the breaker's layer: the inner attempt, with the
    /// permission the breaker gave it.
    pub struct CircuitBreakerAttempt<R, A>
    where
        R: Deref<Target = Inner>,
    {
        #[pin]
        stage: Stage<R, A>,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProj]
    enum Stage<R, A>
    where
        R: Deref<Target = Inner>,
    {
        // No breaker in this chain.
        Through {
            #[pin]
            inner: A,
        },
        Running {
            #[pin]
            inner: A,
            // `None` only once a panic while polling recorded the call.
            guard: Option<Guard<R>>,
        },
        Refused {
            error: OutOfLine<CallNotPermitted>,
        },
        Done,
    }
}

impl<R: Deref<Target = Inner>, C, N: HasAttempt> HasAttempt for CircuitBreakerNode<R, C, N> {
    type Attempt = CircuitBreakerAttempt<R, N::Attempt>;
}

impl<R, C, N, T, E> Node for CircuitBreakerNode<R, C, N>
where
    R: Deref<Target = Inner> + Clone,
    C: Borrow<CircuitBreakerClassifier<T, E>>,
    N: Node<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        let stage = match &self.part {
            None => Stage::Through {
                inner: self.next.start(ctx),
            },
            Some(part) => {
                match Guard::start_at(part.inner.clone(), |i| i.clock.now_in(&mut ctx.stamp)) {
                    // Should the inner start panic (the caller's closure), the
                    // guard is dropped while unwinding and records the panic.
                    Ok(mut guard) => {
                        let inner = self.next.start(ctx);
                        // From here on, an unwind that drops the attempt is not
                        // the call's own unless it comes from polling it.
                        guard.in_call = false;
                        Stage::Running {
                            inner,
                            guard: Some(guard),
                        }
                    }
                    Err(refused) => Stage::Refused {
                        error: OutOfLine::new(refused),
                    },
                }
            }
        };
        CircuitBreakerAttempt { stage }
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
            StageProj::Running { inner, guard } => {
                if let Some(g) = guard.as_mut() {
                    g.in_call = true;
                }
                let next = &mut self.next;
                let poll = holding(guard, || next.poll(inner, cx, ctx));
                if let Some(g) = guard.as_mut() {
                    g.in_call = false;
                }
                // The result is recorded where it lies and handed on in its
                // `Poll`, not taken out and wrapped again (a copy each way).
                if let Poll::Ready(result) = &poll
                    && let (Some(guard), Some(part)) = (guard.take(), &self.part)
                {
                    let end = guard.inner.clock.now_in(&mut ctx.stamp);
                    guard.record_at(part.classifier.borrow(), result, end);
                }
                poll
            }
            StageProj::Refused { error } => {
                let error = error.take().expect("a refused attempt holds its error");
                stage.set(Stage::Done);
                Poll::Ready(Err(Error::CallNotPermitted(error)))
            }
            StageProj::Done => panic!("a circuit breaker's attempt polled after completion"),
        }
    }
}

impl<R, C, N, T, E> SyncNode for CircuitBreakerNode<R, C, N>
where
    R: Deref<Target = Inner> + Clone,
    C: Borrow<CircuitBreakerClassifier<T, E>>,
    N: SyncNode<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn call(&mut self, ctx: &mut Ctx) -> Self::Output {
        let Some(part) = &self.part else {
            return self.next.call(ctx);
        };
        // A panic in the call drops the guard while unwinding: recorded as
        // a failure.
        let guard = Guard::start_at(part.inner.clone(), |i| i.clock.now_in(&mut ctx.stamp))
            .map_err(Error::CallNotPermitted)?;
        let result = self.next.call(ctx);
        let end = guard.inner.clock.now_in(&mut ctx.stamp);
        guard.record_at(part.classifier.borrow(), &result, end);
        result
    }
}

impl<R: Deref<Target = Inner>, A> fmt::Debug for CircuitBreakerAttempt<R, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.stage {
            Stage::Through { .. } => "through",
            Stage::Running { .. } => "running",
            Stage::Refused { .. } => "refused",
            Stage::Done => "done",
        };
        f.debug_struct("CircuitBreakerAttempt")
            .field("stage", &stage)
            .finish_non_exhaustive()
    }
}
