//! A layer's fallback, as a node around that layer: it turns the layer's
//! error into the result the layers outside it see.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use super::BoxFuture;
use crate::Error;
use crate::chain::{Ctx, HasAttempt, Node, SyncNode, Wrap};

type SyncFallback<'a, T, E> = dyn Fn(Error<E>) -> Result<T, Error<E>> + Send + Sync + 'a;
type AsyncFallback<'a, T, E> =
    dyn Fn(Error<E>) -> BoxFuture<'a, Result<T, Error<E>>> + Send + Sync + 'a;

/// A fallback of one layer: turns that layer's error into a result.
pub(super) enum Fallback<'a, T, E> {
    Sync(Box<SyncFallback<'a, T, E>>),
    Async(Box<AsyncFallback<'a, T, E>>),
}

/// A layer's part with the layer's fallback, if it has one.
pub(super) struct WithFallback<'f, 'a, P, T, E> {
    pub(super) part: P,
    pub(super) fallback: Option<&'f Fallback<'a, T, E>>,
}

impl<'f, 'a, P: Wrap<N>, N, T, E> Wrap<N> for WithFallback<'f, 'a, P, T, E> {
    type Node = Recover<'f, 'a, P::Node, T, E>;

    #[inline(always)]
    fn wrap(self, inner: N) -> Self::Node {
        Recover {
            fallback: self.fallback,
            next: self.part.wrap(inner),
        }
    }
}

/// A layer and its fallback.
pub struct Recover<'f, 'a, N, T, E> {
    fallback: Option<&'f Fallback<'a, T, E>>,
    next: N,
}

impl<N, T, E> fmt::Debug for Recover<'_, '_, N, T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recover")
            .field("fallback", &self.fallback.is_some())
            .finish_non_exhaustive()
    }
}

pin_project_lite::pin_project! {
    /// An attempt through a layer with a fallback: the layer's attempt, then
    /// the fallback's future when an async fallback recovers.
    pub struct RecoverAttempt<'a, A, T, E> {
        #[pin]
        inner: A,
        recovering: Option<BoxFuture<'a, Result<T, Error<E>>>>,
    }
}

impl<A, T, E> fmt::Debug for RecoverAttempt<'_, A, T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecoverAttempt")
            .field("recovering", &self.recovering.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a, N: HasAttempt, T, E> HasAttempt for Recover<'_, 'a, N, T, E> {
    type Attempt = RecoverAttempt<'a, N::Attempt, T, E>;
}

impl<'a, N, T, E> Node for Recover<'_, 'a, N, T, E>
where
    N: Node<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        RecoverAttempt {
            inner: self.next.start(ctx),
            recovering: None,
        }
    }

    #[inline]
    fn poll(
        &mut self,
        attempt: Pin<&mut Self::Attempt>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Self::Output> {
        let this = attempt.project();
        if let Some(recovering) = this.recovering.as_mut() {
            let out = ready!(recovering.as_mut().poll(cx));
            *this.recovering = None;
            ctx.user_code_ran();
            return Poll::Ready(out);
        }
        let result = ready!(self.next.poll(this.inner, cx, ctx));
        match (self.fallback, result) {
            (Some(Fallback::Sync(f)), Err(e)) => {
                let out = f(e);
                ctx.user_code_ran();
                Poll::Ready(out)
            }
            (Some(Fallback::Async(f)), Err(e)) => {
                let mut recovering = f(e);
                ctx.user_code_ran();
                match recovering.as_mut().poll(cx) {
                    Poll::Ready(out) => Poll::Ready(out),
                    Poll::Pending => {
                        *this.recovering = Some(recovering);
                        Poll::Pending
                    }
                }
            }
            (_, result) => Poll::Ready(result),
        }
    }
}

impl<N, T, E> SyncNode for Recover<'_, '_, N, T, E>
where
    N: SyncNode<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn call(&mut self, ctx: &mut Ctx) -> Self::Output {
        match (self.fallback, self.next.call(ctx)) {
            (Some(Fallback::Sync(f)), Err(e)) => {
                let out = f(e);
                ctx.user_code_ran();
                out
            }
            // An async fallback cannot run in a blocking call; `Decorators`
            // has no blocking call once it has one.
            (_, result) => result,
        }
    }
}
