//! What the futures of the primitives' async calls share.
//!
//! `call_async` and `decorate_async` return a named future of the
//! primitive's module, such as
//! [`CircuitBreakerFuture`](crate::circuit_breaker::CircuitBreakerFuture),
//! rather than the anonymous future of an `async fn`. An `async fn` that takes
//! a closure owning the caller's future keeps that closure *and* the future it
//! returns, so each layer of a chain would double the size of the innermost
//! future (rust-lang/rust#62958). A named future is a small state machine that
//! holds the caller's future exactly once, in place: a layer costs a few
//! words, whatever the size of what it wraps.
//!
//! Admission happens when the future is created, as Resilience4j's decorated
//! `CompletionStage` suppliers acquire when they are invoked: the breaker and
//! the bulkhead take their permit, the rate limiter its reservation. Dropping
//! the future gives back what it holds, polled or not.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::Error;

pin_project_lite::pin_project! {
    /// A future that wraps its error in [`Error::Inner`], as the `call_async`
    /// forms of the primitives do with the caller's future.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::circuit_breaker::CircuitBreaker;
    /// use resil_core::circuit_breaker::CircuitBreakerFuture;
    /// use resil_core::future::InnerErrors;
    /// use std::future::Ready;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cb = CircuitBreaker::of_defaults("inventory-query");
    /// let call: CircuitBreakerFuture<'_, InnerErrors<Ready<Result<u32, std::io::Error>>>, u32, std::io::Error> =
    ///     cb.call_async(|| std::future::ready(Ok(7)));
    /// assert_eq!(call.await.unwrap(), 7);
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct InnerErrors<Fut> {
        #[pin]
        future: Fut,
    }
}

impl<Fut> InnerErrors<Fut> {
    #[inline]
    pub(crate) fn new(future: Fut) -> Self {
        InnerErrors { future }
    }
}

impl<Fut, T, E> Future for InnerErrors<Fut>
where
    Fut: Future<Output = Result<T, E>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().future.poll(cx).map_err(Error::Inner)
    }
}

impl<Fut> fmt::Debug for InnerErrors<Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InnerErrors").finish_non_exhaustive()
    }
}

/// Starts the future of a guarded call: a closure `FnOnce() -> impl Future`,
/// or an [`InnerCall`].
///
/// The futures of the rate limiter and the bulkhead keep it while they wait
/// for permission, and call it only once they have it. Implement it for a
/// named type when the future that holds it must be named too (the `tower`
/// layers do, for a service and its request).
pub trait AsyncCall {
    /// The future the call runs.
    type Future: Future;

    /// Calls the closure.
    fn start(self) -> Self::Future;
}

impl<F, Fut> AsyncCall for F
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    type Future = Fut;

    #[inline]
    fn start(self) -> Fut {
        self()
    }
}

/// The closure of a `call_async`: its future fails with the caller's own
/// error, which becomes [`Error::Inner`] (see [`InnerErrors`]).
pub struct InnerCall<F>(F);

impl<F> InnerCall<F> {
    #[inline]
    pub(crate) fn new(f: F) -> Self {
        InnerCall(f)
    }
}

impl<F, Fut, T, E> AsyncCall for InnerCall<F>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    type Future = InnerErrors<Fut>;

    #[inline]
    fn start(self) -> InnerErrors<Fut> {
        InnerErrors::new((self.0)())
    }
}

impl<F> fmt::Debug for InnerCall<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InnerCall").finish_non_exhaustive()
    }
}

/// Polls `future`; if polling it panics, drops what `held` holds during the
/// unwinding, as an `async fn` drops its locals (a circuit breaker's guard
/// then records the panic, a bulkhead permit goes back at once).
#[inline]
pub(crate) fn poll_holding<Fut: Future, H>(
    future: Pin<&mut Fut>,
    held: &mut Option<H>,
    cx: &mut Context<'_>,
) -> Poll<Fut::Output> {
    struct DropOnUnwind<'h, H>(&'h mut Option<H>);

    impl<H> Drop for DropOnUnwind<'_, H> {
        fn drop(&mut self) {
            // Reached only while unwinding: the normal path forgets it.
            drop(self.0.take());
        }
    }

    let on_unwind = DropOnUnwind(held);
    let poll = future.poll(cx);
    std::mem::forget(on_unwind);
    poll
}

/// Implements `Future` for a named future that is its pinned `field`'s
/// state machine (the borrowing and the owned form of each primitive's
/// future), with `Output = Result<T, Error<E>>` for the impl's `T` and `E`.
macro_rules! delegate_future {
    (impl<$($g:tt),*> $ty:ty => $field:ident.$method:ident where $($bounds:tt)*) => {
        impl<$($g),*> ::std::future::Future for $ty
        where
            $($bounds)*
        {
            type Output = ::std::result::Result<T, $crate::error::Error<E>>;

            #[inline]
            fn poll(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<Self::Output> {
                self.project().$field.$method(cx)
            }
        }
    };
}
pub(crate) use delegate_future;
