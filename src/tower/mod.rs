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
//! | [`DeadlineLayer`] | [`DeadlineService`] | a request's deadline, from its `grpc-timeout` header |
//! | [`HedgeLayer`] | [`HedgeService`] | [`Hedge`] (`Clone` requests) |
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
//! Every layer runs on resil's one engine ([`resil::chain`](crate::chain)),
//! as the attributes and `Decorators` do: the same layers, in the same
//! order, with the same events. The service made ready is moved into the
//! response future and a clone takes its place (tower's documented
//! pattern), so the inner service must be `Clone` (a reference count for
//! axum's `Router`, a copy for `service_fn`): a call that waits for its
//! permit, or a retry's next attempt, calls it later. Before each attempt
//! after the first, the retry makes it ready again.
//!
//! # A stack of the global instances
//!
//! [`named`] builds the stack of the global instances of one name, always in
//! Resilience4j's order `Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(call)))))`
//! (with a hedge, if asked for, between the retry and the breaker)
//! whatever the order of the builder's calls, as one service with one error
//! type, on the instances themselves (no reference count per call):
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
//! `RequestNotPermitted`, 504 for `Timeout` and `DeadlineExceeded`. `IntoResponseLayer` turns a
//! layered route's errors into those responses, so that axum, which wants
//! services that do not fail, takes the route as it is.
//!
//! [`CircuitBreaker`]: crate::circuit_breaker::CircuitBreaker
//! [`Retry`]: crate::retry::Retry
//! [`Bulkhead`]: crate::bulkhead::Bulkhead
//! [`RateLimiter`]: crate::rate_limiter::RateLimiter
//! [`TimeLimiter`]: crate::time_limiter::TimeLimiter
//! [`Hedge`]: crate::hedge::Hedge
//! [`Error::Inner`]: crate::Error::Inner

mod deadline;
mod layers;
mod named;
#[cfg(feature = "actuator")]
mod response;

use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use resil_core::Error;
use resil_core::chain::{Around, ChainFuture, Ctx, HasAttempt, Node, Stack};
use tower_service::Service;

pub use self::deadline::{DeadlineFuture, DeadlineLayer, DeadlineService, GRPC_TIMEOUT};
pub use self::layers::{
    BreakerSlot, BulkheadLayer, BulkheadService, BulkheadSlot, CircuitBreakerLayer,
    CircuitBreakerService, DeadlineSlot, HedgeLayer, HedgeService, HedgeSlot, LimiterSlot,
    RateLimiterLayer, RateLimiterService, RetryLayer, RetryService, RetrySlot, TimeLimiterLayer,
    TimeLimiterService, TimerSlot,
};
pub use self::named::{FaultSlot, Named, NamedLayer, named};
#[cfg(feature = "actuator")]
pub use self::response::{IntoResponseFuture, IntoResponseLayer, IntoResponseService};

/// The default classification: every `Err` is a failure, every response a
/// success (the breaker's and the retry's defaults, with the instance's
/// `record-errors` / `retry-errors` settings applied to rejections).
#[derive(Debug, Clone, Copy, Default)]
pub struct Unclassified;

/// One place of a tower stack: its part of the engine's
/// [`Stack`] for a call whose response is `Res` and whose
/// error is `E`. `()` is a place left empty.
pub trait Slot<Res, E> {
    /// The engine's part.
    type Part;

    /// This call's part.
    fn part(&self) -> Self::Part;
}

impl<Res, E> Slot<Res, E> for () {
    type Part = ();

    #[inline(always)]
    fn part(&self) {}
}

/// How the retry's and the hedge's places hand the request to each
/// attempt: a stack with a retry or a hedge clones it (the request must be
/// `Clone`), one without moves it.
pub trait Attempts {
    /// [`Once`] or [`Cloned`].
    type Requests;
}

impl Attempts for () {
    type Requests = Once;
}

/// The request is moved into the one attempt.
#[derive(Debug, Clone, Copy, Default)]
pub struct Once;

/// Each attempt gets a clone of the request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cloned;

/// [`Cloned`] when either of two places makes several attempts.
pub trait Either<B> {
    /// [`Once`] or [`Cloned`].
    type Requests;
}

impl<B> Either<B> for Once {
    type Requests = B;
}

impl<B> Either<B> for Cloned {
    type Requests = Cloned;
}

/// A request that the attempts of a call can be given: any request for
/// one attempt, a `Clone` one for a retry's or a hedge's.
#[diagnostic::on_unimplemented(
    message = "a retried or hedged request is sent again for each attempt, so `{Self}` must be `Clone`",
    label = "`{Self}` is not `Clone`",
    note = "derive or implement `Clone` for the request type"
)]
pub trait Resend<A> {}

impl<Req> Resend<Once> for Req {}
impl<Req: Clone> Resend<Cloned> for Req {}

/// How an attempt gets its request.
pub trait Requests<Req> {
    /// The next attempt's request.
    fn next(request: &mut Option<Req>) -> Req;
}

impl<Req> Requests<Req> for Once {
    #[inline(always)]
    fn next(request: &mut Option<Req>) -> Req {
        request
            .take()
            .expect("a call without a retry makes one attempt")
    }
}

impl<Req: Clone> Requests<Req> for Cloned {
    #[inline(always)]
    fn next(request: &mut Option<Req>) -> Req {
        request
            .as_ref()
            .expect("the request is kept for every attempt")
            .clone()
    }
}

/// The places of a tower stack that says how its attempts get the
/// request: with a retry or a hedge, each one gets a clone.
pub trait Retries {
    /// [`Once`] or [`Cloned`].
    type Requests;
}

impl<D, R: Attempts, H: Attempts, C, L, T, B, F> Retries for Stack<D, R, H, C, L, T, B, F>
where
    R::Requests: Either<H::Requests>,
{
    type Requests = <R::Requests as Either<H::Requests>>::Requests;
}

/// The places of a tower stack (the engine's [`Stack`] of [`Slot`]s) for
/// calls of the service `S` with requests `Req`: the node of one call.
pub trait Slots<S: Service<Req>, Req>: Retries {
    /// The engine's node of one call.
    type Node: Node<Output = Result<S::Response, Error<S::Error>>>;

    /// This call's node, around `call`.
    fn node(&self, call: ServiceCall<S, Req, Self::Requests>) -> Self::Node;
}

/// The engine's stack of parts that a stack of slots makes.
type Parts<S, Req, D, R, H, C, L, T, B, F> = Stack<
    <D as Slot<<S as Service<Req>>::Response, <S as Service<Req>>::Error>>::Part,
    <R as Slot<<S as Service<Req>>::Response, <S as Service<Req>>::Error>>::Part,
    <H as Slot<<S as Service<Req>>::Response, <S as Service<Req>>::Error>>::Part,
    <C as Slot<<S as Service<Req>>::Response, <S as Service<Req>>::Error>>::Part,
    <L as Slot<<S as Service<Req>>::Response, <S as Service<Req>>::Error>>::Part,
    <T as Slot<<S as Service<Req>>::Response, <S as Service<Req>>::Error>>::Part,
    <B as Slot<<S as Service<Req>>::Response, <S as Service<Req>>::Error>>::Part,
    <F as Slot<<S as Service<Req>>::Response, <S as Service<Req>>::Error>>::Part,
>;

impl<S, Req, D, R, H, C, L, T, B, F> Slots<S, Req> for Stack<D, R, H, C, L, T, B, F>
where
    S: Service<Req>,
    D: Slot<S::Response, S::Error>,
    R: Slot<S::Response, S::Error> + Attempts,
    H: Slot<S::Response, S::Error> + Attempts,
    R::Requests: Either<H::Requests>,
    <R::Requests as Either<H::Requests>>::Requests: Requests<Req>,
    C: Slot<S::Response, S::Error>,
    L: Slot<S::Response, S::Error>,
    T: Slot<S::Response, S::Error>,
    B: Slot<S::Response, S::Error>,
    F: Slot<S::Response, S::Error>,
    Parts<S, Req, D, R, H, C, L, T, B, F>:
        Around<ServiceCall<S, Req, <R::Requests as Either<H::Requests>>::Requests>>,
    <Parts<S, Req, D, R, H, C, L, T, B, F> as Around<
        ServiceCall<S, Req, <R::Requests as Either<H::Requests>>::Requests>,
    >>::Node: Node<Output = Result<S::Response, Error<S::Error>>>,
{
    type Node = <Parts<S, Req, D, R, H, C, L, T, B, F> as Around<
        ServiceCall<S, Req, <R::Requests as Either<H::Requests>>::Requests>,
    >>::Node;

    #[inline(always)]
    fn node(
        &self,
        call: ServiceCall<S, Req, <R::Requests as Either<H::Requests>>::Requests>,
    ) -> Self::Node {
        let (d, r, h, c, l, t, b, f) = self.parts();
        Stack::new()
            .deadline(d.part())
            .retry(r.part())
            .hedge(h.part())
            .circuit_breaker(c.part())
            .rate_limiter(l.part())
            .time_limiter(t.part())
            .bulkhead(b.part())
            .fault(f.part())
            .around(call)
    }
}

/// A service guarded by the places of `K` (a [`Stack`] of [`Slot`]s), whose
/// calls run on resil's engine: the service of every layer of this module.
#[derive(Clone)]
pub struct Guarded<S, K> {
    inner: S,
    slots: K,
}

impl<S, K> Guarded<S, K> {
    pub(crate) fn new(inner: S, slots: K) -> Self {
        Guarded { inner, slots }
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, K: fmt::Debug> fmt::Debug for Guarded<S, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guarded")
            .field("slots", &self.slots)
            .finish_non_exhaustive()
    }
}

/// The response future of a [`Guarded`] service: the engine's future of
/// the call.
pub type GuardedFuture<S, K, Req> = ChainFuture<<K as Slots<S, Req>>::Node>;

impl<S, K, Req> Service<Req> for Guarded<S, K>
where
    S: Service<Req> + Clone,
    K: Retries,
    Req: Resend<K::Requests>,
    K: Slots<S, Req>,
{
    type Response = S::Response;
    type Error = Error<S::Error>;
    type Future = GuardedFuture<S, K, Req>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Error::Inner)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        // The service made ready goes with the call; a clone takes its place.
        let clone = self.inner.clone();
        let service = std::mem::replace(&mut self.inner, clone);
        ChainFuture::new(self.slots.node(ServiceCall {
            service,
            request: Some(request),
            ready: true,
            requests: PhantomData,
        }))
    }
}

/// The call at the centre of a [`Guarded`] service's chain: the inner
/// service, made ready by the caller for the first attempt and by the
/// attempt itself for the next ones.
pub struct ServiceCall<S, Req, A> {
    service: S,
    request: Option<Req>,
    /// The caller made `service` ready, for the first attempt.
    ready: bool,
    requests: PhantomData<fn() -> A>,
}

impl<S, Req, A> fmt::Debug for ServiceCall<S, Req, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceCall")
            .field("ready", &self.ready)
            .finish_non_exhaustive()
    }
}

pin_project_lite::pin_project! {
    /// One attempt of a [`ServiceCall`]: making the service ready, then
    /// its response future.
    pub struct ServiceAttempt<F, Req> {
        #[pin]
        stage: CallStage<F, Req>,
    }
}

pin_project_lite::pin_project! {
    #[project = CallStageProj]
    enum CallStage<F, Req> {
        Readying { request: Option<Req> },
        Calling { #[pin] future: F },
    }
}

impl<F, Req> fmt::Debug for ServiceAttempt<F, Req> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.stage {
            CallStage::Readying { .. } => "readying",
            CallStage::Calling { .. } => "calling",
        };
        f.debug_struct("ServiceAttempt")
            .field("stage", &stage)
            .finish()
    }
}

impl<S: Service<Req>, Req, A> HasAttempt for ServiceCall<S, Req, A> {
    type Attempt = ServiceAttempt<S::Future, Req>;
}

impl<S, Req, A> Node for ServiceCall<S, Req, A>
where
    S: Service<Req>,
    A: Requests<Req>,
{
    type Output = Result<S::Response, Error<S::Error>>;

    #[inline]
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        let request = A::next(&mut self.request);
        let stage = if std::mem::take(&mut self.ready) {
            let future = self.service.call(request);
            ctx.user_code_ran();
            CallStage::Calling { future }
        } else {
            CallStage::Readying {
                request: Some(request),
            }
        };
        ServiceAttempt { stage }
    }

    #[inline]
    fn poll(
        &mut self,
        attempt: Pin<&mut Self::Attempt>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Self::Output> {
        let mut stage = attempt.project().stage;
        loop {
            match stage.as_mut().project() {
                CallStageProj::Readying { request } => {
                    let ready = self.service.poll_ready(cx);
                    ctx.user_code_ran();
                    if let Err(e) = ready!(ready) {
                        return Poll::Ready(Err(Error::Inner(e)));
                    }
                    let request = request.take().expect("an attempt is called once");
                    let future = self.service.call(request);
                    stage.set(CallStage::Calling { future });
                }
                CallStageProj::Calling { future } => {
                    let out = future.poll(cx);
                    ctx.user_code_ran();
                    return out.map_err(Error::Inner);
                }
            }
        }
    }
}
