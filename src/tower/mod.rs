//! `tower` layers over the primitives (feature `tower`): a route, an HTTP
//! client or any `tower::Service` protected with Resilience4j's semantics,
//! the same instances the attributes use.
//!
//! | layer | service | over |
//! |---|---|---|
//! | [`CircuitBreakerLayer`] | [`CircuitBreakerService`] | [`CircuitBreaker`] |
//! | [`RetryLayer`] | [`RetryService`] | [`Retry`] |
//! | [`BulkheadLayer`] | [`BulkheadService`] | [`Bulkhead`] |
//! | [`RateLimiterLayer`] | [`RateLimiterService`] | [`RateLimiter`] |
//! | [`TimeLimiterLayer`] | [`TimeLimiterService`] | [`TimeLimiter`] |
//!
//! Each service answers with the inner service's response, fails with
//! [`resil::Error<S::Error>`](crate::Error) (the inner error as
//! [`Error::Inner`], a rejection as its own variant), and returns a named
//! future that holds the primitive's own async call: the layers add no
//! second implementation, and a call that succeeds allocates nothing.
//!
//! # Permits are taken in `call`
//!
//! `poll_ready` is the inner service's. The permit (the breaker's, the
//! bulkhead's, the limiter's) is asked for in `call`, so a refusal is an
//! immediate error, as in Resilience4j, and the caller decides what a
//! refusal means (a fallback, a 503). tower's own `ConcurrencyLimit` and
//! `RateLimit` wait in `poll_ready` instead: a caller that is refused there
//! is not refused but parked, with no deadline, which is back-pressure and
//! not fast-fail. A [`Bulkhead`] with `max-wait-duration` and a
//! [`RateLimiter`] with `timeout-duration` wait too, but in the response
//! future and up to their configured bound, and the wait ends in
//! `BulkheadFull` / `RequestNotPermitted`.
//!
//! So that a service that waits for its permit can still be called once it
//! is given, [`BulkheadService`], [`RateLimiterService`] and
//! [`RetryService`] need a `Clone` inner service: the service made ready is
//! moved into the response future and a clone takes its place (tower's
//! documented pattern). The bulkhead and the limiter clone only for a call
//! that must wait (a permit free at once calls the service in `call`); the
//! retry, which calls it again for each attempt, clones on every call (a
//! reference count for axum's `Router`, a copy for `service_fn`).
//!
//! # A stack of the global instances
//!
//! [`named`] builds the stack of the global instances of one name, always in
//! Resilience4j's order `Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(call)))))`
//! whatever the order of the builder's calls, with one flat error type:
//!
//! ```
//! use resil::tower::named;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let svc = ServiceBuilder::new()
//!     .layer(named("quote").bulkhead().circuit_breaker().retry().build())
//!     .service(service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n * 2) }));
//! let answer: Result<u32, resil::Error<std::io::Error>> = svc.oneshot(21).await;
//! assert_eq!(answer.unwrap(), 42);
//! # }
//! ```
//!
//! Its instances come from [`resil::registries()`](crate::registries), so
//! `resilience.toml` configures them as it does the attributes' (call
//! [`resil::init`](crate::init) first).
//!
//! # Axum
//!
//! With the `actuator` feature a [`Rejection`](crate::Rejection) and a
//! `resil::Error<E>` (for `E: IntoResponse`) are axum responses: 503 for
//! `CallNotPermitted` and `BulkheadFull`, 429 with `Retry-After` for
//! `RequestNotPermitted`, 504 for `Timeout`. `IntoResponseLayer` turns a
//! layered route's errors into those responses, so that axum, which wants
//! services that do not fail, takes the route as it is.
//!
//! [`CircuitBreaker`]: crate::circuit_breaker::CircuitBreaker
//! [`Retry`]: crate::retry::Retry
//! [`Bulkhead`]: crate::bulkhead::Bulkhead
//! [`RateLimiter`]: crate::rate_limiter::RateLimiter
//! [`TimeLimiter`]: crate::time_limiter::TimeLimiter
//! [`Error::Inner`]: crate::Error::Inner

mod circuit_breaker;
mod limits;
mod named;
#[cfg(feature = "actuator")]
mod response;
mod retry;

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use resil_core::Error;
use resil_core::future::AsyncCall;
use tower_service::Service;

pub use self::circuit_breaker::{
    CircuitBreakerFuture, CircuitBreakerLayer, CircuitBreakerService, ClassifierFor,
};
pub use self::limits::{
    BulkheadFuture, BulkheadLayer, BulkheadService, RateLimiterFuture, RateLimiterLayer,
    RateLimiterService, TimeLimiterFuture, TimeLimiterLayer, TimeLimiterService,
};
pub use self::named::{Lift, LiftLayer, Named, NamedLayer, named};
#[cfg(feature = "actuator")]
pub use self::response::{IntoResponseFuture, IntoResponseLayer, IntoResponseService};
pub use self::retry::{RetryClassifierFor, RetryFuture, RetryLayer, RetryService};

mod sealed {
    pub trait Sealed {}
}

/// How a layer's service turns its inner service's error into a
/// `resil::Error`: [`Wrap`] (the default) makes it
/// [`Error::Inner`]; [`Flat`], for a service that
/// already fails with `resil::Error<E>` (an inner resil layer), passes it
/// on, so a stack has one error type and not `Error<Error<E>>`.
pub trait ErrorMode<E>: sealed::Sealed {
    /// The caller's own error type, `E` of `resil::Error<E>`.
    type Error;

    /// The inner service's error as a `resil::Error`.
    fn lift(error: E) -> Error<Self::Error>;
}

/// The inner service's error is the caller's own: [`Error::Inner`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Wrap;

/// The inner service already fails with `resil::Error<E>` (it is a resil
/// layer's): its errors pass through, rejections included.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flat;

impl sealed::Sealed for Wrap {}
impl sealed::Sealed for Flat {}

impl<E> ErrorMode<E> for Wrap {
    type Error = E;

    #[inline(always)]
    fn lift(error: E) -> Error<E> {
        Error::Inner(error)
    }
}

impl<E> ErrorMode<Error<E>> for Flat {
    type Error = E;

    #[inline(always)]
    fn lift(error: Error<E>) -> Error<E> {
        error
    }
}

/// The default classification: every `Err` is a failure, every response a
/// success (the breaker's and the retry's defaults, with the instance's
/// `record-errors` / `retry-errors` settings applied to rejections).
#[derive(Debug, Clone, Copy, Default)]
pub struct Unclassified;

pin_project_lite::pin_project! {
    /// The inner service's future with its error lifted by the mode `M`.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Lifted<Fut, M> {
        #[pin]
        future: Fut,
        mode: PhantomData<fn() -> M>,
    }
}

impl<Fut, M> Lifted<Fut, M> {
    #[inline(always)]
    fn new(future: Fut) -> Self {
        Lifted {
            future,
            mode: PhantomData,
        }
    }
}

impl<Fut, T, E, M> Future for Lifted<Fut, M>
where
    Fut: Future<Output = Result<T, E>>,
    M: ErrorMode<E>,
{
    type Output = Result<T, Error<M::Error>>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().future.poll(cx).map_err(M::lift)
    }
}

impl<Fut, M> fmt::Debug for Lifted<Fut, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lifted").finish_non_exhaustive()
    }
}

/// A service made ready and its request, called once the permit is given
/// (the bulkhead's and the rate limiter's waits).
pub struct Deferred<S, Req, M> {
    service: S,
    request: Req,
    mode: PhantomData<fn() -> M>,
}

impl<S, Req, M> Deferred<S, Req, M> {
    /// Moves the service made ready out of `slot`, leaving a clone.
    #[inline]
    fn take(slot: &mut S, request: Req) -> Self
    where
        S: Clone,
    {
        let clone = slot.clone();
        Deferred {
            service: std::mem::replace(slot, clone),
            request,
            mode: PhantomData,
        }
    }
}

impl<S, Req, M> AsyncCall for Deferred<S, Req, M>
where
    S: Service<Req>,
    M: ErrorMode<S::Error>,
{
    type Future = Lifted<S::Future, M>;

    #[inline]
    fn start(mut self) -> Self::Future {
        Lifted::new(self.service.call(self.request))
    }
}

impl<S, Req, M> fmt::Debug for Deferred<S, Req, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deferred").finish_non_exhaustive()
    }
}
