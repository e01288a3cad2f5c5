//! [`ChainFuture`]: an async call through a chain of nodes.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::node::{Ctx, HasAttempt, Node};

pin_project_lite::pin_project! {
    /// The future of one async call through a chain: the chain's nodes and
    /// the attempt in progress, one state machine.
    ///
    /// Each layer keeps a few words of its own in the attempt (a permit, a
    /// timer, a breaker's guard) beside the caller's future, which is held
    /// once, in place: the future is a little larger than the caller's,
    /// whatever the number of layers, and allocates nothing.
    ///
    /// Made by [`ChainFuture::new`] the layers admit the call when it is
    /// created (as the primitives' own `call_async` and the `tower` layers
    /// do); made by [`ChainFuture::lazy`], when it is first polled (as
    /// [`Decorators::call_async`](crate::Decorators::call_async) does).
    /// Dropping it gives back every permit held and records nothing; a panic
    /// while the caller's future is polled is recorded by the layers it
    /// passes (a breaker's failure, a retry's attempt) and resumed. The
    /// caller's future, once finished, is dropped with this one (an `.await`
    /// drops it as it hands on the outcome).
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct ChainFuture<N: HasAttempt> {
        node: N,
        // The outcome was returned. The finished attempt stays in place
        // until the future is dropped (which an `.await` does at once):
        // dropping it as the outcome leaves would be the same drop, made
        // out of line on every call's way out.
        done: bool,
        #[pin]
        attempt: Started<N::Attempt>,
    }
}

pin_project_lite::pin_project! {
    #[project = StartedProj]
    enum Started<A> {
        NotYet,
        Running {
            #[pin]
            attempt: A,
        },
    }
}

impl<N: Node> ChainFuture<N> {
    /// Starts the call through `node` now: every layer admits it (or
    /// refuses) before this returns.
    #[inline(always)]
    pub fn new(mut node: N) -> Self {
        let attempt = node.start(&mut Ctx::new());
        ChainFuture {
            node,
            done: false,
            attempt: Started::Running { attempt },
        }
    }

    /// The call through `node`, started when the future is first polled.
    #[inline(always)]
    pub fn lazy(node: N) -> Self {
        ChainFuture {
            node,
            done: false,
            attempt: Started::NotYet,
        }
    }
}

impl<N: Node> Future for ChainFuture<N> {
    type Output = N::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<N::Output> {
        let this = self.project();
        assert!(!*this.done, "a chain's future polled after completion");
        let mut started = this.attempt;
        let mut ctx = Ctx::new();
        if let StartedProj::NotYet = started.as_mut().project() {
            let attempt = this.node.start(&mut ctx);
            started.set(Started::Running { attempt });
        }
        let out = match started.as_mut().project() {
            StartedProj::Running { attempt } => this.node.poll(attempt, cx, &mut ctx),
            StartedProj::NotYet => unreachable!("started above"),
        };
        *this.done = out.is_ready();
        out
    }
}

impl<N: HasAttempt> fmt::Debug for ChainFuture<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.attempt {
            _ if self.done => "done",
            Started::NotYet => "not started",
            Started::Running { .. } => "running",
        };
        f.debug_struct("ChainFuture")
            .field("stage", &stage)
            .finish_non_exhaustive()
    }
}
