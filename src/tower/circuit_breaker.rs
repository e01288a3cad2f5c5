//! The circuit breaker layer.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use resil_core::Error;
use resil_core::circuit_breaker::{CircuitBreaker, Classifier, OwnedCircuitBreakerFuture};
use tower_layer::Layer;
use tower_service::Service;

use super::{ErrorMode, Lifted, Unclassified, Wrap};

/// A [`tower::Layer`](tower_layer::Layer) that guards a service with a
/// [`CircuitBreaker`]: an open breaker refuses the call at once with
/// `Error::CallNotPermitted`; otherwise the call is timed to its response
/// and recorded (slow calls count) as a success, a failure or an ignored
/// error.
///
/// By default every `Err` is a failure and every response a success;
/// [`record_error`](Self::record_error), [`ignore_error`](Self::ignore_error)
/// and [`record_response`](Self::record_response) change that, with the
/// breaker's `record-errors` / `ignore-errors` settings applied as for the
/// attributes.
///
/// # Examples
///
/// ```
/// use resil::circuit_breaker::CircuitBreaker;
/// use resil::tower::CircuitBreakerLayer;
/// use tower::{ServiceBuilder, ServiceExt, service_fn};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let cb = CircuitBreaker::of_defaults("inventory-query");
/// let layer = CircuitBreakerLayer::new(cb.clone())
///     // A 5xx answer is a failure although it is not an `Err`.
///     .record_response(|status: &u16| *status >= 500);
/// let svc = ServiceBuilder::new()
///     .layer(layer)
///     .service(service_fn(|_: ()| async { Ok::<u16, std::io::Error>(503) }));
/// assert_eq!(svc.oneshot(()).await.unwrap(), 503);
/// assert_eq!(cb.metrics().number_of_failed_calls(), 1);
/// # }
/// ```
#[derive(Clone)]
pub struct CircuitBreakerLayer<P = Unclassified, M = Wrap> {
    breaker: CircuitBreaker,
    policy: P,
    mode: M,
}

impl CircuitBreakerLayer {
    /// A layer over `breaker` (from a registry or built by hand) with the
    /// default classification.
    pub fn new(breaker: CircuitBreaker) -> Self {
        CircuitBreakerLayer {
            breaker,
            policy: Unclassified,
            mode: Wrap,
        }
    }
}

impl<M> CircuitBreakerLayer<Unclassified, M> {
    pub(super) fn with_mode(breaker: CircuitBreaker, mode: M) -> Self {
        CircuitBreakerLayer {
            breaker,
            policy: Unclassified,
            mode,
        }
    }

    /// Records as failures only the errors `predicate` accepts (and the
    /// rejections that `record-errors` names); the others count as
    /// successes (Resilience4j's `recordException`).
    pub fn record_error<Res, E>(
        self,
        predicate: fn(&E) -> bool,
    ) -> CircuitBreakerLayer<Classifier<Res, E>, M> {
        self.classified().record_error(predicate)
    }

    /// Ignores the errors `predicate` accepts: they count neither way and
    /// give the permit back (Resilience4j's `ignoreException`).
    pub fn ignore_error<Res, E>(
        self,
        predicate: fn(&E) -> bool,
    ) -> CircuitBreakerLayer<Classifier<Res, E>, M> {
        self.classified().ignore_error(predicate)
    }

    /// Records the responses `predicate` accepts as failures, such as an
    /// HTTP 5xx that is not an `Err` (Resilience4j's `recordResult`).
    pub fn record_response<Res, E>(
        self,
        predicate: fn(&Res) -> bool,
    ) -> CircuitBreakerLayer<Classifier<Res, E>, M> {
        self.classified().record_response(predicate)
    }

    fn classified<Res, E>(self) -> CircuitBreakerLayer<Classifier<Res, E>, M> {
        CircuitBreakerLayer {
            breaker: self.breaker,
            policy: Classifier::new(),
            mode: self.mode,
        }
    }
}

impl<Res, E, M> CircuitBreakerLayer<Classifier<Res, E>, M> {
    /// Sets the error predicate, as on a layer not yet classified.
    pub fn record_error(mut self, predicate: fn(&E) -> bool) -> Self {
        self.policy = self.policy.record(predicate);
        self
    }

    /// Sets the ignore predicate, as on a layer not yet classified.
    pub fn ignore_error(mut self, predicate: fn(&E) -> bool) -> Self {
        self.policy = self.policy.ignore(predicate);
        self
    }

    /// Sets the response predicate, as on a layer not yet classified.
    pub fn record_response(mut self, predicate: fn(&Res) -> bool) -> Self {
        self.policy = self.policy.record_result(predicate);
        self
    }
}

impl<P, M> CircuitBreakerLayer<P, M> {
    /// The breaker.
    pub fn circuit_breaker(&self) -> &CircuitBreaker {
        &self.breaker
    }
}

impl<S, P: Clone, M> Layer<S> for CircuitBreakerLayer<P, M> {
    type Service = CircuitBreakerService<S, P, M>;

    fn layer(&self, inner: S) -> Self::Service {
        CircuitBreakerService {
            inner,
            breaker: self.breaker.clone(),
            policy: self.policy.clone(),
            mode: PhantomData,
        }
    }
}

impl<P, M> fmt::Debug for CircuitBreakerLayer<P, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerLayer")
            .field("breaker", &self.breaker.name())
            .finish_non_exhaustive()
    }
}

/// The service of a [`CircuitBreakerLayer`].
#[derive(Clone)]
pub struct CircuitBreakerService<S, P = Unclassified, M = Wrap> {
    inner: S,
    breaker: CircuitBreaker,
    policy: P,
    mode: PhantomData<fn() -> M>,
}

impl<S, P, M> CircuitBreakerService<S, P, M> {
    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The breaker.
    pub fn circuit_breaker(&self) -> &CircuitBreaker {
        &self.breaker
    }
}

/// The classifier of one call, for the response type `Res` and the
/// caller's error type `E`.
pub trait ClassifierFor<Res, E> {
    /// The classifier this call is recorded with.
    fn classifier(&self) -> Classifier<Res, E>;
}

impl<Res, E> ClassifierFor<Res, E> for Unclassified {
    #[inline(always)]
    fn classifier(&self) -> Classifier<Res, E> {
        Classifier::new()
    }
}

impl<Res, E> ClassifierFor<Res, E> for Classifier<Res, E> {
    #[inline(always)]
    fn classifier(&self) -> Classifier<Res, E> {
        *self
    }
}

impl<S, P, M, Req> Service<Req> for CircuitBreakerService<S, P, M>
where
    S: Service<Req>,
    M: ErrorMode<S::Error>,
    P: ClassifierFor<S::Response, M::Error>,
{
    type Response = S::Response;
    type Error = Error<M::Error>;
    type Future = CircuitBreakerFuture<S::Future, S::Response, M::Error, M>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(M::lift)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        let inner = &mut self.inner;
        CircuitBreakerFuture {
            call: self
                .breaker
                .decorate_async_owned(self.policy.classifier(), || {
                    Lifted::new(inner.call(request))
                }),
        }
    }
}

impl<S, P, M> fmt::Debug for CircuitBreakerService<S, P, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerService")
            .field("breaker", &self.breaker.name())
            .finish_non_exhaustive()
    }
}

pin_project_lite::pin_project! {
    /// The response future of a [`CircuitBreakerService`]: the breaker's
    /// own async call around the inner service's future.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct CircuitBreakerFuture<F, Res, E, M> {
        #[pin]
        call: OwnedCircuitBreakerFuture<Lifted<F, M>, Res, E>,
    }
}

impl<F, Res, E0, E, M> Future for CircuitBreakerFuture<F, Res, E, M>
where
    F: Future<Output = Result<Res, E0>>,
    M: ErrorMode<E0, Error = E>,
{
    type Output = Result<Res, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().call.poll(cx)
    }
}

impl<F, Res, E, M> fmt::Debug for CircuitBreakerFuture<F, Res, E, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerFuture")
            .field("call", &self.call)
            .finish()
    }
}
