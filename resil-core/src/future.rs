//! The caller's future, seen by the layers of a chain.
//!
//! Every async call runs on the engine's
//! [`ChainFuture`](crate::chain::ChainFuture), a named future rather than
//! the anonymous future of an `async fn`: an `async fn` that takes a closure
//! owning the caller's future keeps that closure *and* the future it
//! returns, so each layer of a chain would double the size of the innermost
//! future (rust-lang/rust#62958). The chain's future is one state machine
//! that holds the caller's future exactly once, in place: a layer costs a
//! few words, whatever the size of what it wraps.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::Error;

pin_project_lite::pin_project! {
    /// A future that wraps its error in [`Error::Inner`], as a chain's
    /// [`Lift`](crate::chain::Lift) does with the caller's future: each
    /// attempt of a chain's call is one.
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
