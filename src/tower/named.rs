//! The stack of the global instances of one name.

use std::fmt;

use resil_core::bulkhead::Bulkhead;
use resil_core::chain::Stack;
use resil_core::circuit_breaker::CircuitBreaker;
use resil_core::deadline::Deadline;
use resil_core::fault::FaultPart;
use resil_core::hedge::Hedge;
use resil_core::rate_limiter::RateLimiter;
use resil_core::retry::Retry;
use resil_core::time_limiter::TimeLimiter;
use tower_layer::Layer;

use super::layers::{
    BreakerSlot, BulkheadSlot, DeadlineSlot, HedgeSlot, LimiterSlot, RetrySlot, TimerSlot,
};
use super::{CircuitBreakerLayer, Guarded, RetryLayer, Unclassified};

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
        slots: Stack::new().fault(FaultSlot {
            name: resil_core::fault::static_name(name),
        }),
    }
}

/// The fault's place of a named stack, innermost: a fault of the name
/// ([`resil::fault`](crate::fault)) delays or aborts its calls.
#[derive(Debug, Clone, Copy)]
pub struct FaultSlot {
    name: &'static str,
}

impl<Res, E> super::Slot<Res, E> for FaultSlot {
    type Part = FaultPart<'static, &'static str>;

    #[inline(always)]
    fn part(&self) -> Self::Part {
        FaultPart::global(self.name)
    }
}

/// A builder of the stack of one name's global instances, always composed in
/// Resilience4j's order
/// `Retry(Hedge(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(service))))))`,
/// under the name's `Deadline`, whatever the order of the calls; an aspect
/// not asked for is left out. Innermost, a fault of the name
/// (`[fault.instances.<name>]`, or one the actuator started) delays or
/// aborts the calls.
///
/// The stack is one service on resil's engine, failing with one
/// `resil::Error<E>` for the inner service's error `E` (a `Timeout` reaches
/// the breaker as a rejection to record, and the retry as one to retry or
/// not). It holds each instance by a plain reference: the global instances
/// live as long as the process, so a call touches no reference count.
pub struct Named<R = (), C = (), L = (), T = (), B = (), H = (), D = ()> {
    name: String,
    slots: Stack<D, R, H, C, L, T, B, FaultSlot>,
}

impl<R, C, L, T, B, H, D> Named<R, C, L, T, B, H, D> {
    /// Adds the global retry of this name, outermost.
    pub fn retry(self) -> Named<RetrySlot<&'static Retry, Unclassified>, C, L, T, B, H, D> {
        self.retry_with(|layer| layer)
    }

    /// Adds the global retry of this name, classified by `classify`
    /// ([`RetryLayer::retry_on`], [`RetryLayer::retry_on_response`]).
    pub fn retry_with<P>(
        self,
        classify: impl FnOnce(RetryLayer<Unclassified, &'static Retry>) -> RetryLayer<P, &'static Retry>,
    ) -> Named<RetrySlot<&'static Retry, P>, C, L, T, B, H, D> {
        let retry = resil_config::global::pinned::<Retry>(&self.name);
        Named {
            slots: self.slots.retry(classify(RetryLayer::of(retry)).slot),
            name: self.name,
        }
    }

    /// Adds the global circuit breaker of this name, inside the retry.
    pub fn circuit_breaker(
        self,
    ) -> Named<R, BreakerSlot<&'static CircuitBreaker, Unclassified>, L, T, B, H, D> {
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
        classify: impl FnOnce(
            CircuitBreakerLayer<Unclassified, &'static CircuitBreaker>,
        ) -> CircuitBreakerLayer<P, &'static CircuitBreaker>,
    ) -> Named<R, BreakerSlot<&'static CircuitBreaker, P>, L, T, B, H, D> {
        let cb = resil_config::global::pinned::<CircuitBreaker>(&self.name);
        Named {
            slots: self
                .slots
                .circuit_breaker(classify(CircuitBreakerLayer::of(cb)).slot),
            name: self.name,
        }
    }

    /// Adds the global rate limiter of this name, inside the breaker.
    pub fn rate_limiter(self) -> Named<R, C, LimiterSlot<&'static RateLimiter>, T, B, H, D> {
        let limiter = resil_config::global::pinned::<RateLimiter>(&self.name);
        Named {
            slots: self.slots.rate_limiter(LimiterSlot { limiter }),
            name: self.name,
        }
    }

    /// Adds the global time limiter of this name, inside the rate limiter.
    pub fn time_limiter(self) -> Named<R, C, L, TimerSlot<&'static TimeLimiter>, B, H, D> {
        let time_limiter = resil_config::global::pinned::<TimeLimiter>(&self.name);
        Named {
            slots: self.slots.time_limiter(TimerSlot { time_limiter }),
            name: self.name,
        }
    }

    /// Adds the global (semaphore) bulkhead of this name, innermost.
    pub fn bulkhead(self) -> Named<R, C, L, T, BulkheadSlot<&'static Bulkhead>, H, D> {
        let bulkhead = resil_config::global::pinned::<Bulkhead>(&self.name);
        Named {
            slots: self.slots.bulkhead(BulkheadSlot { bulkhead }),
            name: self.name,
        }
    }

    /// Adds the global hedge of this name, inside the retry and outside
    /// the breaker: each hedged attempt passes the breaker and the layers
    /// inside it. The request must be `Clone`.
    pub fn hedge(self) -> Named<R, C, L, T, B, HedgeSlot<&'static Hedge>, D> {
        let hedge = resil_config::global::pinned::<Hedge>(&self.name);
        Named {
            slots: self.slots.hedge(HedgeSlot { hedge }),
            name: self.name,
        }
    }

    /// Adds the global deadline of this name (`[deadline.instances.<name>]`),
    /// outermost: every layer inside spends it, and a request that finds no
    /// time left is refused with `Error::DeadlineExceeded`. An enclosing
    /// deadline that ends earlier (a [`DeadlineLayer`](super::DeadlineLayer)
    /// outside, reading `grpc-timeout`) wins.
    pub fn deadline(self) -> Named<R, C, L, T, B, H, DeadlineSlot<&'static Deadline>> {
        let deadline = resil_config::global::pinned::<Deadline>(&self.name);
        Named {
            slots: self.slots.deadline(DeadlineSlot { deadline }),
            name: self.name,
        }
    }

    /// The layer of the stack.
    pub fn build(self) -> NamedLayer<R, C, L, T, B, H, D> {
        NamedLayer {
            name: self.name,
            slots: self.slots,
        }
    }
}

impl<R, C, L, T, B, H, D> fmt::Debug for Named<R, C, L, T, B, H, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Named")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The layer that [`Named::build`] returns: the stack
/// `Retry(Hedge(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(service))))))`
/// of the aspects asked for, as one service.
#[derive(Clone)]
pub struct NamedLayer<R, C, L, T, B, H = (), D = ()> {
    name: String,
    slots: Stack<D, R, H, C, L, T, B, FaultSlot>,
}

impl<R, C, L, T, B, H, D> NamedLayer<R, C, L, T, B, H, D> {
    /// The instances' name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<S, R, C, L, T, B, H, D> Layer<S> for NamedLayer<R, C, L, T, B, H, D>
where
    Stack<D, R, H, C, L, T, B, FaultSlot>: Clone,
{
    type Service = Guarded<S, Stack<D, R, H, C, L, T, B, FaultSlot>>;

    fn layer(&self, inner: S) -> Self::Service {
        Guarded::new(inner, self.slots.clone())
    }
}

impl<R, C, L, T, B, H, D> fmt::Debug for NamedLayer<R, C, L, T, B, H, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedLayer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
