//! The bulkhead, rate limiter and time limiter layers.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use resil_core::Error;
use resil_core::bulkhead::{Bulkhead, OwnedBulkheadFuture};
use resil_core::rate_limiter::{OwnedRateLimiterFuture, RateLimiter};
use resil_core::time_limiter::{OwnedTimeLimiterFuture, TimeLimiter};
use tower_layer::Layer;
use tower_service::Service;

use super::{Deferred, ErrorMode, Lifted, Wrap};

/// Declares a layer over one primitive, its service and its response future.
macro_rules! layer {
    (
        $(#[$layer_doc:meta])*
        $layer:ident, $service:ident, $future:ident, $primitive:ident, $field:ident, $getter:ident
    ) => {
        $(#[$layer_doc])*
        #[derive(Clone)]
        pub struct $layer<M = Wrap> {
            $field: $primitive,
            mode: PhantomData<fn() -> M>,
        }

        impl $layer {
            #[doc = concat!("A layer over `", stringify!($field), "` (from a registry or built by hand).")]
            pub fn new($field: $primitive) -> Self {
                $layer { $field, mode: PhantomData }
            }
        }

        impl<M> $layer<M> {
            pub(super) fn with_mode($field: $primitive) -> Self {
                $layer { $field, mode: PhantomData }
            }

            #[doc = concat!("The ", stringify!($field), ".")]
            pub fn $getter(&self) -> &$primitive {
                &self.$field
            }
        }

        impl<S, M> Layer<S> for $layer<M> {
            type Service = $service<S, M>;

            fn layer(&self, inner: S) -> Self::Service {
                $service {
                    inner,
                    $field: self.$field.clone(),
                    mode: PhantomData,
                }
            }
        }

        impl<M> fmt::Debug for $layer<M> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($layer))
                    .field(stringify!($field), &self.$field.name())
                    .finish_non_exhaustive()
            }
        }

        #[doc = concat!("The service of a [`", stringify!($layer), "`].")]
        #[derive(Clone)]
        pub struct $service<S, M = Wrap> {
            inner: S,
            $field: $primitive,
            mode: PhantomData<fn() -> M>,
        }

        impl<S, M> $service<S, M> {
            /// The inner service.
            pub fn get_ref(&self) -> &S {
                &self.inner
            }

            #[doc = concat!("The ", stringify!($field), ".")]
            pub fn $getter(&self) -> &$primitive {
                &self.$field
            }
        }

        impl<S, M> fmt::Debug for $service<S, M> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($service))
                    .field(stringify!($field), &self.$field.name())
                    .finish_non_exhaustive()
            }
        }
    };
}

/// Declares the response future of a layer: the primitive's own owned
/// future, named.
macro_rules! response_future {
    ($(#[$doc:meta])* $future:ident<$($p:ident),*> => $held:ty) => {
        pin_project_lite::pin_project! {
            $(#[$doc])*
            #[must_use = "futures do nothing unless you `.await` or poll them"]
            pub struct $future<$($p),*>
            where
                S: Service<Req>,
            {
                #[pin]
                call: $held,
            }
        }

        impl<$($p),*> Future for $future<$($p),*>
        where
            S: Service<Req>,
            M: ErrorMode<S::Error>,
        {
            type Output = Result<S::Response, Error<M::Error>>;

            #[inline]
            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
                self.project().call.poll(cx)
            }
        }

        impl<$($p),*> fmt::Debug for $future<$($p),*>
        where
            S: Service<Req>,
        {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($future))
                    .field("call", &self.call)
                    .finish()
            }
        }
    };
}

layer! {
    /// A [`tower::Layer`](tower_layer::Layer) that runs a service's calls
    /// in a semaphore [`Bulkhead`]: a call is refused with
    /// `Error::BulkheadFull` when the bulkhead is full (at once, or after
    /// `max-wait-duration` in the response future), and its permit is given
    /// back when the response future completes or is dropped.
    ///
    /// The inner service must be `Clone` (see the [module documentation](super)).
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
    /// # async fn main() -> Result<(), resil::ConfigError> {
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
    BulkheadLayer, BulkheadService, BulkheadFuture, Bulkhead, bulkhead, bulkhead
}

layer! {
    /// A [`tower::Layer`](tower_layer::Layer) that limits a service's calls
    /// with a [`RateLimiter`]: each call takes one permit; a call whose
    /// permit is due within `timeout-duration` waits for it in the response
    /// future, any other is refused with `Error::RequestNotPermitted`.
    ///
    /// The inner service must be `Clone` (see the [module documentation](super)).
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
    /// # async fn main() -> Result<(), resil::ConfigError> {
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
    RateLimiterLayer, RateLimiterService, RateLimiterFuture, RateLimiter, limiter, rate_limiter
}

layer! {
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
    /// # async fn main() -> Result<(), resil::ConfigError> {
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
    TimeLimiterLayer, TimeLimiterService, TimeLimiterFuture, TimeLimiter, time_limiter, time_limiter
}

impl<S, M, Req> Service<Req> for BulkheadService<S, M>
where
    S: Service<Req> + Clone,
    M: ErrorMode<S::Error>,
{
    type Response = S::Response;
    type Error = Error<M::Error>;
    type Future = BulkheadFuture<S, Req, M>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(M::lift)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        BulkheadFuture {
            call: self.bulkhead.decorate_async_owned_or_defer(
                (&mut self.inner, request),
                |(inner, request)| Lifted::new(inner.call(request)),
                |(inner, request)| Deferred::take(inner, request),
            ),
        }
    }
}

impl<S, M, Req> Service<Req> for RateLimiterService<S, M>
where
    S: Service<Req> + Clone,
    M: ErrorMode<S::Error>,
{
    type Response = S::Response;
    type Error = Error<M::Error>;
    type Future = RateLimiterFuture<S, Req, M>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(M::lift)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        RateLimiterFuture {
            call: self.limiter.decorate_async_owned_or_defer(
                (&mut self.inner, request),
                |(inner, request)| Lifted::new(inner.call(request)),
                |(inner, request)| Deferred::take(inner, request),
            ),
        }
    }
}

impl<S, M, Req> Service<Req> for TimeLimiterService<S, M>
where
    S: Service<Req>,
    M: ErrorMode<S::Error>,
{
    type Response = S::Response;
    type Error = Error<M::Error>;
    type Future = TimeLimiterFuture<S, Req, M>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(M::lift)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        let inner = &mut self.inner;
        TimeLimiterFuture {
            call: self
                .time_limiter
                .decorate_async_owned(|| Lifted::new(inner.call(request))),
        }
    }
}

response_future! {
    /// The response future of a [`BulkheadService`]: the bulkhead's own
    /// async call, holding the permit until it completes or is dropped.
    BulkheadFuture<S, Req, M> => OwnedBulkheadFuture<Deferred<S, Req, M>, Lifted<S::Future, M>>
}

response_future! {
    /// The response future of a [`RateLimiterService`]: the limiter's own
    /// async call, waiting for its permit when it is due later.
    RateLimiterFuture<S, Req, M> => OwnedRateLimiterFuture<Deferred<S, Req, M>, Lifted<S::Future, M>>
}

response_future! {
    /// The response future of a [`TimeLimiterService`]: the inner future
    /// raced against the timeout, and dropped when the timeout wins.
    TimeLimiterFuture<S, Req, M> => OwnedTimeLimiterFuture<Lifted<S::Future, M>>
}
