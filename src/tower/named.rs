//! The stack of the global instances of one name.

use std::fmt;
use std::task::{Context, Poll};

use resil_core::Error;
use tower_layer::{Identity, Layer};
use tower_service::Service;

use super::{
    BulkheadLayer, CircuitBreakerLayer, Flat, Lifted, RateLimiterLayer, RetryLayer,
    TimeLimiterLayer, Unclassified, Wrap,
};

/// Starts the stack of the global instances named `name` (see [`Named`]).
///
/// The instances come from [`resil::registries()`](crate::registries) when
/// each builder method is called: call [`resil::init`](crate::init) first,
/// so that `resilience.toml` configures them.
///
/// # Examples
///
/// ```
/// use resil::tower::named;
/// use tower::{ServiceBuilder, ServiceExt, service_fn};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let layer = named("inventory-query").time_limiter().circuit_breaker().build();
/// let svc = ServiceBuilder::new()
///     .layer(layer)
///     .service(service_fn(|sku: &'static str| async move { Ok::<_, std::io::Error>(sku.len()) }));
/// assert_eq!(svc.oneshot("SKU-1").await.unwrap(), 5);
/// let cb = resil::registries().circuit_breakers().circuit_breaker("inventory-query");
/// assert_eq!(cb.metrics().number_of_successful_calls(), 1);
/// # }
/// ```
pub fn named(name: &str) -> Named {
    Named {
        name: name.to_owned(),
        retry: Identity::new(),
        circuit_breaker: Identity::new(),
        rate_limiter: Identity::new(),
        time_limiter: Identity::new(),
        bulkhead: Identity::new(),
    }
}

/// A builder of the stack of one name's global instances, always composed in
/// Resilience4j's order
/// `Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(service)))))`
/// whatever the order of the calls; an aspect not asked for is left out.
///
/// The stack fails with one `resil::Error<E>` for the inner service's error
/// `E`: each layer passes the inner layers' errors on (a `Timeout` reaches
/// the breaker as a rejection to record, and the retry as one to retry or
/// not), instead of nesting them.
pub struct Named<R = Identity, C = Identity, L = Identity, T = Identity, B = Identity> {
    name: String,
    retry: R,
    circuit_breaker: C,
    rate_limiter: L,
    time_limiter: T,
    bulkhead: B,
}

impl<R, C, L, T, B> Named<R, C, L, T, B> {
    /// Adds the global retry of this name, outermost.
    pub fn retry(self) -> Named<RetryLayer<Unclassified, Flat>, C, L, T, B> {
        self.retry_with(|layer| layer)
    }

    /// Adds the global retry of this name, classified by `classify`
    /// ([`RetryLayer::retry_on`], [`RetryLayer::retry_on_response`]).
    pub fn retry_with<P>(
        self,
        classify: impl FnOnce(RetryLayer<Unclassified, Flat>) -> RetryLayer<P, Flat>,
    ) -> Named<RetryLayer<P, Flat>, C, L, T, B> {
        let retry = crate::registries().retries().retry(&self.name);
        Named {
            retry: classify(RetryLayer::with_mode((*retry).clone(), Flat)),
            name: self.name,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
        }
    }

    /// Adds the global circuit breaker of this name, inside the retry.
    pub fn circuit_breaker(self) -> Named<R, CircuitBreakerLayer<Unclassified, Flat>, L, T, B> {
        self.circuit_breaker_with(|layer| layer)
    }

    /// Adds the global circuit breaker of this name, classified by
    /// `classify` ([`CircuitBreakerLayer::record_error`],
    /// [`CircuitBreakerLayer::ignore_error`],
    /// [`CircuitBreakerLayer::record_response`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use axum::{Router, http::StatusCode, response::Response, routing::get};
    /// use resil::tower::{IntoResponseLayer, named};
    /// use tower::ServiceBuilder;
    ///
    /// // The route's 5xx answers are the breaker's failures.
    /// let app: Router = Router::new()
    ///     .route("/stock", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
    ///     .route_layer(
    ///         ServiceBuilder::new().layer(IntoResponseLayer).layer(
    ///             named("stock")
    ///                 .circuit_breaker_with(|cb| {
    ///                     cb.record_response(|r: &Response| r.status().is_server_error())
    ///                 })
    ///                 .build(),
    ///         ),
    ///     );
    /// # let _ = app;
    /// ```
    pub fn circuit_breaker_with<P>(
        self,
        classify: impl FnOnce(CircuitBreakerLayer<Unclassified, Flat>) -> CircuitBreakerLayer<P, Flat>,
    ) -> Named<R, CircuitBreakerLayer<P, Flat>, L, T, B> {
        let cb = crate::registries()
            .circuit_breakers()
            .circuit_breaker(&self.name);
        Named {
            circuit_breaker: classify(CircuitBreakerLayer::with_mode((*cb).clone(), Flat)),
            name: self.name,
            retry: self.retry,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
        }
    }

    /// Adds the global rate limiter of this name, inside the breaker.
    pub fn rate_limiter(self) -> Named<R, C, RateLimiterLayer<Flat>, T, B> {
        let limiter = crate::registries().rate_limiters().rate_limiter(&self.name);
        Named {
            rate_limiter: RateLimiterLayer::with_mode((*limiter).clone()),
            name: self.name,
            retry: self.retry,
            circuit_breaker: self.circuit_breaker,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
        }
    }

    /// Adds the global time limiter of this name, inside the rate limiter.
    pub fn time_limiter(self) -> Named<R, C, L, TimeLimiterLayer<Flat>, B> {
        let tl = crate::registries().time_limiters().time_limiter(&self.name);
        Named {
            time_limiter: TimeLimiterLayer::with_mode((*tl).clone()),
            name: self.name,
            retry: self.retry,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            bulkhead: self.bulkhead,
        }
    }

    /// Adds the global (semaphore) bulkhead of this name, innermost.
    pub fn bulkhead(self) -> Named<R, C, L, T, BulkheadLayer<Flat>> {
        let bulkhead = crate::registries().bulkheads().bulkhead(&self.name);
        Named {
            bulkhead: BulkheadLayer::with_mode((*bulkhead).clone()),
            name: self.name,
            retry: self.retry,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
        }
    }

    /// The layer of the stack.
    pub fn build(self) -> NamedLayer<R, C, L, T, B> {
        NamedLayer {
            name: self.name,
            retry: self.retry,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
        }
    }
}

impl<R, C, L, T, B> fmt::Debug for Named<R, C, L, T, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Named")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The layer that [`Named::build`] returns: the stack
/// `Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(Lift(service))))))`
/// of the aspects asked for.
#[derive(Clone)]
pub struct NamedLayer<R, C, L, T, B> {
    name: String,
    retry: R,
    circuit_breaker: C,
    rate_limiter: L,
    time_limiter: T,
    bulkhead: B,
}

impl<R, C, L, T, B> NamedLayer<R, C, L, T, B> {
    /// The instances' name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<S, R, C, L, T, B> Layer<S> for NamedLayer<R, C, L, T, B>
where
    B: Layer<Lift<S>>,
    T: Layer<B::Service>,
    L: Layer<T::Service>,
    C: Layer<L::Service>,
    R: Layer<C::Service>,
{
    type Service = R::Service;

    fn layer(&self, inner: S) -> Self::Service {
        let service = self.bulkhead.layer(LiftLayer.layer(inner));
        let service = self.time_limiter.layer(service);
        let service = self.rate_limiter.layer(service);
        let service = self.circuit_breaker.layer(service);
        self.retry.layer(service)
    }
}

impl<R, C, L, T, B> fmt::Debug for NamedLayer<R, C, L, T, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedLayer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A layer that makes a service fail with `resil::Error<E>`
/// ([`Error::Inner`]), the innermost layer of a
/// [`NamedLayer`].
#[derive(Debug, Clone, Copy, Default)]
pub struct LiftLayer;

impl<S> Layer<S> for LiftLayer {
    type Service = Lift<S>;

    fn layer(&self, inner: S) -> Lift<S> {
        Lift { inner }
    }
}

/// The service of a [`LiftLayer`]: the inner service, failing with
/// `resil::Error<S::Error>`.
#[derive(Debug, Clone)]
pub struct Lift<S> {
    inner: S,
}

impl<S: Service<Req>, Req> Service<Req> for Lift<S> {
    type Response = S::Response;
    type Error = Error<S::Error>;
    type Future = Lifted<S::Future, Wrap>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Error::Inner)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        Lifted::new(self.inner.call(request))
    }
}
