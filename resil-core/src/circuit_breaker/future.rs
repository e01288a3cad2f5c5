//! The breaker's call guards and async futures: a call's permission, held
//! until its outcome is recorded, by reference or through an `Arc`.

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use super::Classifier;
use super::core::{Inner, Permit, Verdict};
use crate::circuit_breaker::CallNotPermitted;
use crate::clock::{Clock, Nanos, Stamp};
use crate::error::Error;
use crate::future::{self, AsyncCall};

/// A call in progress, holding its permission (see [`CircuitBreaker::start_call`](super::CircuitBreaker::start_call)).
#[must_use = "a guard dropped unfinished records nothing"]
pub struct CallGuard<'a>(Guard<&'a Inner>);

impl<'a> CallGuard<'a> {
    /// Asks `inner` for permission (see [`CircuitBreaker::start_call`](super::CircuitBreaker::start_call)).
    #[inline(always)]
    pub(super) fn start(inner: &'a Inner) -> Result<Self, CallNotPermitted> {
        Guard::start(inner).map(CallGuard)
    }

    /// [`CallGuard::start`] at `stamp`'s time (the decorator chain's).
    #[inline(always)]
    pub(super) fn start_stamped(
        inner: &'a Inner,
        stamp: &mut Stamp<'a>,
    ) -> Result<Self, CallNotPermitted> {
        Guard::start_at(inner, |_| stamp.now(&inner.clock)).map(CallGuard)
    }

    /// Records `result`, classified by `classifier` and the breaker's
    /// `record_errors` / `ignore_errors`.
    #[inline]
    pub fn record<T, E>(self, classifier: &Classifier<T, E>, result: &Result<T, Error<E>>) {
        self.0.record(classifier, result);
    }

    /// [`CallGuard::record`], the call ending at `stamp`'s time (the
    /// decorator chain's).
    #[inline]
    pub(crate) fn record_stamped<T, E>(
        self,
        classifier: &Classifier<T, E>,
        result: &Result<T, Error<E>>,
        stamp: &mut Stamp<'a>,
    ) {
        let inner: &'a Inner = self.0.inner;
        let end = stamp.now(&inner.clock);
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

    /// Marks an unwind that drops this guard as the call's own (recorded as
    /// a failure) or not (the permit goes back), for a future that polls
    /// the call itself (the decorator chain's): set while it is polled.
    #[inline(always)]
    pub(crate) fn set_in_call(&mut self, in_call: bool) {
        self.0.in_call = in_call;
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

/// A call's permission, holding the breaker by reference (`&Inner`, for
/// [`CallGuard`] and [`CircuitBreakerFuture`]) or by a clone of its `Arc`
/// (for [`OwnedCircuitBreakerFuture`]).
struct Guard<R: Deref<Target = Inner>> {
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
    #[inline(always)]
    fn start(inner: R) -> Result<Self, CallNotPermitted> {
        Self::start_at(inner, |inner| inner.clock.now())
    }

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

    #[inline]
    fn record<T, E>(self, classifier: &Classifier<T, E>, result: &Result<T, Error<E>>) {
        let end = self.inner.clock.now();
        self.record_at(classifier, result, end);
    }

    /// Records `result` of the call that ended at `end`.
    #[inline]
    fn record_at<T, E>(
        mut self,
        classifier: &Classifier<T, E>,
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
            && !matches!(verdict, Verdict::Ignored(_))
        {
            self.inner.transition_on_result(f(result.as_ref()));
        }
    }

    fn finish(mut self, verdict: Verdict) {
        self.done = true;
        let end = self.inner.clock.now();
        self.inner.finish(
            self.inner.settings.get(self.version),
            end,
            end.as_u64().saturating_sub(self.start.as_u64()),
            verdict,
            Some(self.permit),
        );
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

impl<R: Deref<Target = Inner>> Guard<R> {
    /// Dropped before a result: a panic in the call, or a call not made.
    #[cold]
    #[inline(never)]
    fn abandoned(&mut self) {
        if self.in_call && std::thread::panicking() {
            let end = self.inner.clock.now();
            self.inner.finish(
                self.inner.settings.get(self.version),
                end,
                end.as_u64().saturating_sub(self.start.as_u64()),
                Verdict::Failure(Some("panic")),
                Some(self.permit),
            );
        } else {
            self.inner.give_back(Some(self.permit));
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of a circuit breaker's async call: the caller's future,
    /// held in place, with the permission the breaker gave it.
    ///
    /// It is created by [`CircuitBreaker::call_async`],
    /// [`CircuitBreaker::call_async_with`] and [`CircuitBreaker::decorate_async`],
    /// which ask for permission and call their closure right away (as
    /// Resilience4j's decorated `CompletionStage` supplier does when invoked);
    /// a refused future holds only the rejection. When the call completes,
    /// its outcome is recorded. Dropped before that, it gives the permit back
    /// and records nothing; a panic while polling the caller's future is
    /// recorded as a failure (kind `"panic"`) and resumed.
    ///
    /// It is `Send` whenever `Fut` is, and takes a few words more than `Fut`.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerFuture};
    /// use resil_core::future::InnerErrors;
    /// use resil_core::Error;
    /// use std::future::Ready;
    ///
    /// type Lookup<'a> = CircuitBreakerFuture<'a, InnerErrors<Ready<Result<u32, String>>>, u32, String>;
    ///
    /// fn lookup(cb: &CircuitBreaker) -> Lookup<'_> {
    ///     cb.call_async(|| std::future::ready(Ok(42)))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cb = CircuitBreaker::of_defaults("inventory-query");
    /// cb.transition_to_forced_open_state().unwrap();
    /// let refused = lookup(&cb); // refused here, on creation
    /// assert!(matches!(refused.await, Err(Error::CallNotPermitted(_))));
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct CircuitBreakerFuture<'a, Fut, T, E> {
        #[pin]
        stage: Stage<&'a Inner, Fut>,
        // `None`: the default classifier (of `call_async`).
        classifier: Option<&'a Classifier<T, E>>,
    }
}

pin_project_lite::pin_project! {
    /// [`CircuitBreakerFuture`] for a future that must not borrow the
    /// breaker: it holds a clone of the breaker and its own classifier.
    ///
    /// It is created by [`CircuitBreaker::call_async_owned`] and
    /// [`CircuitBreaker::decorate_async_owned`], and behaves exactly as
    /// [`CircuitBreakerFuture`] does; it is `'static` and `Send` whenever
    /// `Fut` is.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct OwnedCircuitBreakerFuture<Fut, T, E> {
        #[pin]
        stage: Stage<Arc<Inner>, Fut>,
        classifier: Classifier<T, E>,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProj]
    enum Stage<R, Fut>
    where
        R: Deref<Target = Inner>,
    {
        Running {
            #[pin]
            future: Fut,
            // `None` only once a panic while polling recorded the call.
            guard: Option<Guard<R>>,
        },
        Refused {
            error: Option<CallNotPermitted>,
        },
        Done,
    }
}

impl<R: Deref<Target = Inner>, Fut> Stage<R, Fut> {
    /// Asks for permission and, when given, starts the call.
    #[inline(always)]
    fn start<F: AsyncCall<Future = Fut>>(inner: R, f: F) -> Self {
        match Guard::start(inner) {
            // Should `f` panic, the guard is dropped while unwinding and
            // records the panic, as in `decorate`.
            Ok(mut guard) => {
                let future = f.start();
                // From here on, an unwind that drops the future is not the
                // call's own unless it comes from polling it (see `poll`).
                guard.in_call = false;
                Stage::Running {
                    future,
                    guard: Some(guard),
                }
            }
            Err(refused) => Stage::Refused {
                error: Some(refused),
            },
        }
    }

    #[inline]
    fn poll_call<T, E>(
        mut self: Pin<&mut Self>,
        classifier: Option<&Classifier<T, E>>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<T, Error<E>>>
    where
        Fut: Future<Output = Result<T, Error<E>>>,
    {
        match self.as_mut().project() {
            StageProj::Running { future, guard } => {
                if let Some(g) = guard.as_mut() {
                    g.in_call = true;
                }
                let poll = future::poll_holding(future, guard, cx);
                if let Some(g) = guard.as_mut() {
                    g.in_call = false;
                }
                let result = ready!(poll);
                let guard = guard.take();
                // The caller's future is dropped before the outcome is
                // recorded, as at the end of an `.await`.
                self.set(Stage::Done);
                if let Some(guard) = guard {
                    let default = Classifier::new();
                    guard.record(classifier.unwrap_or(&default), &result);
                }
                Poll::Ready(result)
            }
            StageProj::Refused { error } => {
                let error = error.take();
                self.set(Stage::Done);
                Poll::Ready(Err(Error::CallNotPermitted(
                    error.expect("a refused stage holds its error"),
                )))
            }
            StageProj::Done => panic!("`CircuitBreakerFuture` polled after completion"),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Stage::Running { .. } => "running",
            Stage::Refused { .. } => "refused",
            Stage::Done => "done",
        }
    }
}

impl<Fut, T, E> Future for CircuitBreakerFuture<'_, Fut, T, E>
where
    Fut: Future<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        this.stage.poll_call(*this.classifier, cx)
    }
}

impl<Fut, T, E> Future for OwnedCircuitBreakerFuture<Fut, T, E>
where
    Fut: Future<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        this.stage.poll_call(Some(this.classifier), cx)
    }
}

impl<Fut, T, E> fmt::Debug for CircuitBreakerFuture<'_, Fut, T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerFuture")
            .field("stage", &self.stage.name())
            .finish_non_exhaustive()
    }
}

impl<Fut, T, E> fmt::Debug for OwnedCircuitBreakerFuture<Fut, T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedCircuitBreakerFuture")
            .field("stage", &self.stage.name())
            .finish_non_exhaustive()
    }
}

impl<'a, Fut, T, E> CircuitBreakerFuture<'a, Fut, T, E> {
    /// Asks `inner` for permission and, when given, starts `f`.
    #[inline(always)]
    pub(super) fn new<F: AsyncCall<Future = Fut>>(
        inner: &'a Inner,
        f: F,
        classifier: Option<&'a Classifier<T, E>>,
    ) -> Self {
        CircuitBreakerFuture {
            stage: Stage::start(inner, f),
            classifier,
        }
    }
}

impl<Fut, T, E> OwnedCircuitBreakerFuture<Fut, T, E> {
    /// As [`CircuitBreakerFuture::new`], holding the breaker's `Arc`.
    #[inline(always)]
    pub(super) fn new<F: AsyncCall<Future = Fut>>(
        inner: Arc<Inner>,
        f: F,
        classifier: Classifier<T, E>,
    ) -> Self {
        OwnedCircuitBreakerFuture {
            stage: Stage::start(inner, f),
            classifier,
        }
    }
}
