//! The layers over one primitive each, and the slots they fill in a stack.

use std::fmt;
use std::sync::Arc;

use resil_core::bulkhead::{self, Bulkhead, BulkheadPart};
use resil_core::chain::Stack;
use resil_core::circuit_breaker::{
    self, CircuitBreaker, CircuitBreakerClassifier, CircuitBreakerPart,
};
use resil_core::deadline::{self, Deadline, DeadlinePart};
use resil_core::hedge::{self, Hedge, HedgePart};
use resil_core::rate_limiter::{self, RateLimiter, RateLimiterPart};
use resil_core::retry::{self, Retry, RetryClassifier, RetryPart};
use resil_core::time_limiter::{self, TimeLimiter, TimeLimiterPart};
use tower_layer::Layer;

use super::{Attempts, Cloned, Guarded, Slot, Unclassified};

/// The classification of one call, for the response type `Res` and the
/// caller's error type `E`: [`Unclassified`] or a classifier.
pub trait Policy<C> {
    /// The classifier this call is recorded with.
    fn classifier(&self) -> C;
}

impl<Res, E> Policy<CircuitBreakerClassifier<Res, E>> for Unclassified {
    #[inline(always)]
    fn classifier(&self) -> CircuitBreakerClassifier<Res, E> {
        CircuitBreakerClassifier::new()
    }
}

impl<Res, E> Policy<CircuitBreakerClassifier<Res, E>> for CircuitBreakerClassifier<Res, E> {
    #[inline(always)]
    fn classifier(&self) -> CircuitBreakerClassifier<Res, E> {
        *self
    }
}

impl<Res, E> Policy<RetryClassifier<Res, E>> for Unclassified {
    #[inline(always)]
    fn classifier(&self) -> RetryClassifier<Res, E> {
        RetryClassifier::new()
    }
}

impl<Res, E> Policy<RetryClassifier<Res, E>> for RetryClassifier<Res, E> {
    #[inline(always)]
    fn classifier(&self) -> RetryClassifier<Res, E> {
        *self
    }
}

/// The breaker's place: the breaker (owned, or a pinned global instance)
/// and how it classifies.
#[derive(Clone)]
pub struct BreakerSlot<H, P> {
    pub(super) breaker: H,
    pub(super) policy: P,
}

/// The retry's place: the retry and what it retries.
#[derive(Clone)]
pub struct RetrySlot<H, P> {
    pub(super) retry: H,
    pub(super) policy: P,
}

/// The rate limiter's place.
#[derive(Clone)]
pub struct LimiterSlot<H> {
    pub(super) limiter: H,
}

/// The time limiter's place.
#[derive(Clone)]
pub struct TimerSlot<H> {
    pub(super) time_limiter: H,
}

/// The bulkhead's place.
#[derive(Clone)]
pub struct BulkheadSlot<H> {
    pub(super) bulkhead: H,
}

/// The hedge's place.
#[derive(Clone)]
pub struct HedgeSlot<H> {
    pub(super) hedge: H,
}

/// The deadline's place, outermost.
#[derive(Clone)]
pub struct DeadlineSlot<H> {
    pub(super) deadline: H,
}

impl<H, P> Attempts for RetrySlot<H, P> {
    type Requests = Cloned;
}

impl<H> Attempts for HedgeSlot<H> {
    type Requests = Cloned;
}

/// The slots' parts: an owned instance's part holds a clone of its `Arc`
/// (a reference count per call), a pinned global instance's a reference.
macro_rules! slots {
    ($($slot:ident<$($g:ident),*> => $field:ident: $prim:ident, $inner:ident $(, $policy:ident<$cls:ident>)? => |$s:ident| $owned:expr, $pinned:expr;)*) => {$(
        impl<Res, E $(, $g)*> Slot<Res, E> for $slot<$prim $(, $g)*>
        where
            $($g: Policy<$cls<Res, E>>,)*
        {
            type Part = slots!(@part $slot, Arc<$inner::Inner> $(, $cls<Res, E>)?);

            #[inline(always)]
            fn part(&self) -> Self::Part {
                let $s = self;
                $owned
            }
        }

        impl<Res, E $(, $g)*> Slot<Res, E> for $slot<&'static $prim $(, $g)*>
        where
            $($g: Policy<$cls<Res, E>>,)*
        {
            type Part = slots!(@part $slot, &'static $inner::Inner $(, $cls<Res, E>)?);

            #[inline(always)]
            fn part(&self) -> Self::Part {
                let $s = self;
                $pinned
            }
        }

        impl<H: std::borrow::Borrow<$prim> $(, $g)*> fmt::Debug for $slot<H $(, $g)*> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($slot))
                    .field("name", &self.$field.borrow().name())
                    .finish_non_exhaustive()
            }
        }
    )*};
    (@part BreakerSlot, $r:ty, $c:ty) => { CircuitBreakerPart<$r, $c> };
    (@part RetrySlot, $r:ty, $c:ty) => { RetryPart<$r, $c> };
    (@part LimiterSlot, $r:ty) => { RateLimiterPart<$r> };
    (@part TimerSlot, $r:ty) => { TimeLimiterPart<$r> };
    (@part BulkheadSlot, $r:ty) => { BulkheadPart<$r> };
    (@part HedgeSlot, $r:ty) => { HedgePart<$r> };
    (@part DeadlineSlot, $r:ty) => { DeadlinePart<$r> };
}

slots! {
    BreakerSlot<P> => breaker: CircuitBreaker, circuit_breaker, P<CircuitBreakerClassifier>
        => |s| s.breaker.shared_part(s.policy.classifier()), s.breaker.part(s.policy.classifier());
    RetrySlot<P> => retry: Retry, retry, P<RetryClassifier>
        => |s| s.retry.shared_part(s.policy.classifier()), s.retry.part(s.policy.classifier());
    LimiterSlot<> => limiter: RateLimiter, rate_limiter
        => |s| s.limiter.shared_part(1), s.limiter.part(1);
    TimerSlot<> => time_limiter: TimeLimiter, time_limiter
        => |s| s.time_limiter.shared_part(), s.time_limiter.part();
    BulkheadSlot<> => bulkhead: Bulkhead, bulkhead
        => |s| s.bulkhead.shared_part(), s.bulkhead.part();
    HedgeSlot<> => hedge: Hedge, hedge
        => |s| s.hedge.shared_part(), s.hedge.part();
    DeadlineSlot<> => deadline: Deadline, deadline
        => |s| s.deadline.shared_part(), s.deadline.part();
}

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
pub struct CircuitBreakerLayer<P = Unclassified, H = CircuitBreaker> {
    pub(super) slot: BreakerSlot<H, P>,
}

/// The service of a [`CircuitBreakerLayer`].
pub type CircuitBreakerService<S, P = Unclassified, H = CircuitBreaker> =
    Guarded<S, Stack<(), (), (), BreakerSlot<H, P>>>;

impl CircuitBreakerLayer {
    /// A layer over `breaker` (from a registry or built by hand) with the
    /// default classification.
    pub fn new(breaker: CircuitBreaker) -> Self {
        CircuitBreakerLayer {
            slot: BreakerSlot {
                breaker,
                policy: Unclassified,
            },
        }
    }
}

impl<H> CircuitBreakerLayer<Unclassified, H> {
    pub(super) fn of(breaker: H) -> Self {
        CircuitBreakerLayer {
            slot: BreakerSlot {
                breaker,
                policy: Unclassified,
            },
        }
    }

    /// Records as failures only the errors `predicate` accepts (and the
    /// rejections that `record-errors` names); the others count as
    /// successes (Resilience4j's `recordException`).
    pub fn record_error<Res, E>(
        self,
        predicate: fn(&E) -> bool,
    ) -> CircuitBreakerLayer<CircuitBreakerClassifier<Res, E>, H> {
        self.classified().record_error(predicate)
    }

    /// Ignores the errors `predicate` accepts: they count neither way and
    /// give the permit back (Resilience4j's `ignoreException`).
    pub fn ignore_error<Res, E>(
        self,
        predicate: fn(&E) -> bool,
    ) -> CircuitBreakerLayer<CircuitBreakerClassifier<Res, E>, H> {
        self.classified().ignore_error(predicate)
    }

    /// Records the responses `predicate` accepts as failures, such as an
    /// HTTP 5xx that is not an `Err` (Resilience4j's `recordResult`).
    pub fn record_response<Res, E>(
        self,
        predicate: fn(&Res) -> bool,
    ) -> CircuitBreakerLayer<CircuitBreakerClassifier<Res, E>, H> {
        self.classified().record_response(predicate)
    }

    fn classified<Res, E>(self) -> CircuitBreakerLayer<CircuitBreakerClassifier<Res, E>, H> {
        CircuitBreakerLayer {
            slot: BreakerSlot {
                breaker: self.slot.breaker,
                policy: CircuitBreakerClassifier::new(),
            },
        }
    }
}

impl<Res, E, H> CircuitBreakerLayer<CircuitBreakerClassifier<Res, E>, H> {
    /// Sets the error predicate, as on a layer not yet classified.
    pub fn record_error(mut self, predicate: fn(&E) -> bool) -> Self {
        self.slot.policy = self.slot.policy.record(predicate);
        self
    }

    /// Sets the ignore predicate, as on a layer not yet classified.
    pub fn ignore_error(mut self, predicate: fn(&E) -> bool) -> Self {
        self.slot.policy = self.slot.policy.ignore(predicate);
        self
    }

    /// Sets the response predicate, as on a layer not yet classified.
    pub fn record_response(mut self, predicate: fn(&Res) -> bool) -> Self {
        self.slot.policy = self.slot.policy.record_result(predicate);
        self
    }
}

impl<S, P: Clone, H: Clone> Layer<S> for CircuitBreakerLayer<P, H> {
    type Service = CircuitBreakerService<S, P, H>;

    fn layer(&self, inner: S) -> Self::Service {
        Guarded::new(inner, Stack::new().circuit_breaker(self.slot.clone()))
    }
}

impl<P, H: std::borrow::Borrow<CircuitBreaker>> fmt::Debug for CircuitBreakerLayer<P, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerLayer")
            .field("breaker", &self.slot.breaker.borrow().name())
            .finish_non_exhaustive()
    }
}

/// A [`tower::Layer`](tower_layer::Layer) that calls a service again with a
/// clone of the request while [`Retry`] says so: up to `max-attempts`
/// attempts, waiting the retry's interval on its clock in between. Before
/// each attempt after the first the service is made ready again.
///
/// By default every `Err` is retried (with the retry's `retry-errors` /
/// `ignore-errors` applied to rejections) and every response returned;
/// [`retry_on`](Self::retry_on) and [`retry_on_response`](Self::retry_on_response)
/// change that. The request must be `Clone` (it is sent again for each
/// attempt; a request that is not is a compile error that names the missing
/// `Clone`).
///
/// # Examples
///
/// ```
/// use resil::retry::{Retry, RetryConfig};
/// use resil::tower::RetryLayer;
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use tower::{ServiceBuilder, ServiceExt, service_fn};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), resil::config::ConfigError> {
/// static CALLS: AtomicU32 = AtomicU32::new(0);
/// let retry = Retry::new("quote", RetryConfig::builder().max_attempts(3).build()?);
/// let svc = ServiceBuilder::new()
///     .layer(RetryLayer::new(retry).retry_on_response(|status: &u16| *status == 503))
///     .service(service_fn(|_: ()| async {
///         let n = CALLS.fetch_add(1, Ordering::SeqCst);
///         Ok::<u16, std::io::Error>(if n < 2 { 503 } else { 200 })
///     }));
/// assert_eq!(svc.oneshot(()).await.unwrap(), 200);
/// assert_eq!(CALLS.load(Ordering::SeqCst), 3);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RetryLayer<P = Unclassified, H = Retry> {
    pub(super) slot: RetrySlot<H, P>,
}

/// The service of a [`RetryLayer`].
pub type RetryService<S, P = Unclassified, H = Retry> = Guarded<S, Stack<(), RetrySlot<H, P>>>;

impl RetryLayer {
    /// A layer over `retry` (from a registry or built by hand) with the
    /// default classification.
    pub fn new(retry: Retry) -> Self {
        RetryLayer::of(retry)
    }
}

impl<H> RetryLayer<Unclassified, H> {
    pub(super) fn of(retry: H) -> Self {
        RetryLayer {
            slot: RetrySlot {
                retry,
                policy: Unclassified,
            },
        }
    }

    /// Retries only the errors `predicate` accepts (Resilience4j's
    /// `retryOnException`); the others end the call.
    pub fn retry_on<Res, E>(
        self,
        predicate: fn(&E) -> bool,
    ) -> RetryLayer<RetryClassifier<Res, E>, H> {
        self.classified().retry_on(predicate)
    }

    /// Retries the responses `predicate` accepts, such as an HTTP 503
    /// (Resilience4j's `retryOnResult`).
    pub fn retry_on_response<Res, E>(
        self,
        predicate: fn(&Res) -> bool,
    ) -> RetryLayer<RetryClassifier<Res, E>, H> {
        self.classified().retry_on_response(predicate)
    }

    fn classified<Res, E>(self) -> RetryLayer<RetryClassifier<Res, E>, H> {
        RetryLayer {
            slot: RetrySlot {
                retry: self.slot.retry,
                policy: RetryClassifier::new(),
            },
        }
    }
}

impl<Res, E, H> RetryLayer<RetryClassifier<Res, E>, H> {
    /// Sets the error predicate, as on a layer not yet classified.
    pub fn retry_on(mut self, predicate: fn(&E) -> bool) -> Self {
        self.slot.policy = self.slot.policy.retry_on(predicate);
        self
    }

    /// Sets the response predicate, as on a layer not yet classified.
    pub fn retry_on_response(mut self, predicate: fn(&Res) -> bool) -> Self {
        self.slot.policy = self.slot.policy.retry_on_result(predicate);
        self
    }
}

impl<S, P: Clone, H: Clone> Layer<S> for RetryLayer<P, H> {
    type Service = RetryService<S, P, H>;

    fn layer(&self, inner: S) -> Self::Service {
        Guarded::new(inner, Stack::new().retry(self.slot.clone()))
    }
}

impl<P, H: std::borrow::Borrow<Retry>> fmt::Debug for RetryLayer<P, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryLayer")
            .field("retry", &self.slot.retry.borrow().name())
            .finish_non_exhaustive()
    }
}

/// Declares the layer over one of the primitives with no classification.
macro_rules! plain_layer {
    ($(#[$doc:meta])* $layer:ident, $service:ident, $slot:ident { $field:ident: $prim:ident }, $place:ident) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $layer<H = $prim> {
            pub(super) slot: $slot<H>,
        }

        #[doc = concat!("The service of a [`", stringify!($layer), "`].")]
        pub type $service<S, H = $prim> = Guarded<S, slot_stack!($place, $slot<H>)>;

        impl $layer {
            #[doc = concat!("A layer over `", stringify!($field), "` (from a registry or built by hand).")]
            pub fn new($field: $prim) -> Self {
                $layer::of($field)
            }
        }

        impl<H> $layer<H> {
            pub(super) fn of($field: H) -> Self {
                $layer { slot: $slot { $field } }
            }
        }

        impl<S, H: Clone> Layer<S> for $layer<H> {
            type Service = $service<S, H>;

            fn layer(&self, inner: S) -> Self::Service {
                Guarded::new(inner, Stack::new().$place(self.slot.clone()))
            }
        }

        impl<H: std::borrow::Borrow<$prim>> fmt::Debug for $layer<H> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($layer))
                    .field(stringify!($field), &self.slot.$field.borrow().name())
                    .finish()
            }
        }
    };
}

/// The stack with one place filled.
macro_rules! slot_stack {
    (hedge, $t:ty) => { Stack<(), (), $t> };
    (rate_limiter, $t:ty) => { Stack<(), (), (), (), $t> };
    (time_limiter, $t:ty) => { Stack<(), (), (), (), (), $t> };
    (bulkhead, $t:ty) => { Stack<(), (), (), (), (), (), $t> };
}

plain_layer! {
    /// A [`tower::Layer`](tower_layer::Layer) that runs a service's calls
    /// in a semaphore [`Bulkhead`]: a call is refused with
    /// `Error::BulkheadFull` when the bulkhead is full (at once, or after
    /// `max-wait-duration` in the response future), and its permit is given
    /// back when the response future completes or is dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil::bulkhead::{Bulkhead, BulkheadConfig};
    /// use resil::tower::BulkheadLayer;
    /// use resil::Error;
    /// use tower::{Service, ServiceBuilder, ServiceExt, service_fn};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), resil::config::ConfigError> {
    /// let bulkhead = Bulkhead::new("report", BulkheadConfig::builder().max_concurrent_calls(1).build()?);
    /// let mut svc = ServiceBuilder::new()
    ///     .layer(BulkheadLayer::new(bulkhead))
    ///     .service(service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n) }));
    /// let first = svc.ready().await.unwrap().call(1); // holds the only permit
    /// let second = svc.ready().await.unwrap().call(2);
    /// assert!(matches!(second.await, Err(Error::BulkheadFull(_))));
    /// assert_eq!(first.await.unwrap(), 1);
    /// # Ok(())
    /// # }
    /// ```
    BulkheadLayer, BulkheadService, BulkheadSlot { bulkhead: Bulkhead }, bulkhead
}

plain_layer! {
    /// A [`tower::Layer`](tower_layer::Layer) that limits a service's calls
    /// with a [`RateLimiter`]: each call takes one permit; a call whose
    /// permit is due within `timeout-duration` waits for it in the response
    /// future, any other is refused with `Error::RequestNotPermitted`.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
    /// use resil::tower::RateLimiterLayer;
    /// use resil::Error;
    /// use std::time::Duration;
    /// use tower::{ServiceBuilder, ServiceExt, service_fn};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), resil::config::ConfigError> {
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(1)
    ///     .limit_refresh_period(Duration::from_secs(60))
    ///     .timeout_duration(Duration::ZERO)
    ///     .build()?;
    /// let svc = ServiceBuilder::new()
    ///     .layer(RateLimiterLayer::new(RateLimiter::new("mail", config)))
    ///     .service(service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n) }));
    /// assert_eq!(svc.clone().oneshot(1).await.unwrap(), 1);
    /// assert!(matches!(svc.oneshot(2).await, Err(Error::RequestNotPermitted(_))));
    /// # Ok(())
    /// # }
    /// ```
    RateLimiterLayer, RateLimiterService, LimiterSlot { limiter: RateLimiter }, rate_limiter
}

plain_layer! {
    /// A [`tower::Layer`](tower_layer::Layer) that gives up on a service's
    /// call after the [`TimeLimiter`]'s `timeout-duration` with
    /// `Error::Timeout`, dropping the inner service's future.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
    /// use resil::tower::TimeLimiterLayer;
    /// use resil::Error;
    /// use std::time::Duration;
    /// use tower::{ServiceBuilder, ServiceExt, service_fn};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), resil::config::ConfigError> {
    /// let config = TimeLimiterConfig::builder().timeout_duration(Duration::from_secs(1)).build()?;
    /// let svc = ServiceBuilder::new()
    ///     .layer(TimeLimiterLayer::new(TimeLimiter::new("quote", config)))
    ///     .service(service_fn(|_: ()| async {
    ///         tokio::time::sleep(Duration::from_secs(5)).await;
    ///         Ok::<_, std::io::Error>(())
    ///     }));
    /// assert!(matches!(svc.oneshot(()).await, Err(Error::Timeout(_))));
    /// # Ok(())
    /// # }
    /// ```
    TimeLimiterLayer, TimeLimiterService, TimerSlot { time_limiter: TimeLimiter }, time_limiter
}

plain_layer! {
    /// A [`tower::Layer`](tower_layer::Layer) that hedges a service's
    /// calls with a [`Hedge`]: when the response has not come after the
    /// delay, the request is sent again (a clone: the request must be
    /// `Clone`) beside the first, up to `max-hedged-attempts` times; the
    /// first success is the response and the other calls are dropped. A
    /// failed attempt starts the next at once; when all fail, the last
    /// error is the response. Each hedged attempt makes the service ready
    /// again before calling it.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil::hedge::{Hedge, HedgeConfig};
    /// use resil::tower::HedgeLayer;
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::time::Duration;
    /// use tower::{ServiceBuilder, ServiceExt, service_fn};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), resil::config::ConfigError> {
    /// static CALLS: AtomicU32 = AtomicU32::new(0);
    /// let config = HedgeConfig::builder().delay(Duration::from_millis(20)).build()?;
    /// let hedge = Hedge::new("quote", config);
    /// let svc = ServiceBuilder::new()
    ///     .layer(HedgeLayer::new(hedge.clone()))
    ///     .service(service_fn(|sku: &'static str| async move {
    ///         // the first call is slow, the second fast
    ///         let slow = CALLS.fetch_add(1, Ordering::SeqCst) == 0;
    ///         tokio::time::sleep(Duration::from_millis(if slow { 900 } else { 5 })).await;
    ///         Ok::<_, std::io::Error>(sku.len())
    ///     }));
    /// assert_eq!(svc.oneshot("SKU-1").await.unwrap(), 5);
    /// assert_eq!(hedge.metrics().number_of_hedge_wins(), 1);
    /// # Ok(())
    /// # }
    /// ```
    HedgeLayer, HedgeService, HedgeSlot { hedge: Hedge }, hedge
}
