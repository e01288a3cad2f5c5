//! The deadline's layer of a chain, outermost: it fixes the call's deadline,
//! refuses a call with no time left, sets the deadline for every layer
//! inside while they run, and gives up on an async call when it passes.

use std::fmt;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use super::DeadlineExceeded;
use super::ambient::{At, Installed, current};
use super::instance::{Deadline, Inner};
use crate::chain::{Ctx, GivenUp, HasAttempt, Layered, Node, SyncNode, drop_given_up};
use crate::clock::{Clock, Sleep};
use crate::error::Error;

/// The deadline's part in a chain: the deadline, by reference or through
/// its `Arc`.
///
/// Made by [`Deadline::part`] and [`Deadline::shared_part`].
#[derive(Clone)]
pub struct DeadlinePart<R> {
    inner: R,
    /// This call's timeout instead of the configured one.
    timeout: Option<Duration>,
}

impl Deadline {
    /// This deadline's part in a [`Stack`](crate::chain::Stack), outermost.
    #[inline(always)]
    pub fn part(&self) -> DeadlinePart<&Inner> {
        DeadlinePart {
            inner: &self.inner,
            timeout: None,
        }
    }

    /// Like [`Deadline::part`], holding a clone of the deadline's `Arc`
    /// (for a chain that must not borrow it).
    #[inline(always)]
    pub fn shared_part(&self) -> DeadlinePart<Arc<Inner>> {
        DeadlinePart {
            inner: Arc::clone(&self.inner),
            timeout: None,
        }
    }
}

impl<R> DeadlinePart<R> {
    /// This call's timeout instead of the configured one (an incoming
    /// request's own deadline, as the `tower` layer reads it from a
    /// `grpc-timeout` header); zero refuses the call.
    #[inline(always)]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

impl<R: Deref<Target = Inner>> DeadlinePart<R> {
    /// The call's deadline, starting now: the instance's timeout, or the
    /// enclosing deadline if earlier; the refusal when no time is left.
    #[inline]
    fn fix(&self, ctx: &mut Ctx) -> Result<At, DeadlineExceeded> {
        let inner = &*self.inner;
        let timeout = match self.timeout {
            Some(timeout) => timeout,
            None => inner.config.load().timeout,
        };
        let own = At::after(inner.clock.clone(), ctx.stamp.now(&inner.clock), timeout);
        match current() {
            // A configured timeout is more than zero: time is left.
            None if !timeout.is_zero() => Ok(own),
            None => Err(DeadlineExceeded::noticed("deadline", &inner.name)),
            Some(outer) => {
                let at = own.earlier(Some(&outer));
                if at.remaining().is_zero() {
                    Err(DeadlineExceeded::noticed("deadline", &inner.name))
                } else {
                    Ok(at)
                }
            }
        }
    }
}

impl<R: Deref<Target = Inner>> fmt::Debug for DeadlinePart<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlinePart")
            .field("deadline", &self.inner.name)
            .finish()
    }
}

/// The deadline's layer around `N`.
pub type DeadlineNode<R, N> = Layered<DeadlinePart<R>, N>;

crate::chain::layer_part!("DeadlineNode", impl<R> for DeadlinePart<R>);

pin_project_lite::pin_project! {
    /// A call through the deadline's layer: its deadline, the attempt
    /// inside, and the timer armed once the attempt is pending.
    pub struct DeadlineAttempt<A> {
        #[pin]
        stage: Stage<A>,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProj]
    enum Stage<A> {
        Through {
            #[pin]
            inner: A,
        },
        Running {
            at: At,
            sleep: Option<Sleep>,
            #[pin]
            inner: A,
        },
        Refused {
            error: Option<DeadlineExceeded>,
        },
        Done,
    }
}

impl<R, N: HasAttempt> HasAttempt for DeadlineNode<R, N> {
    type Attempt = DeadlineAttempt<N::Attempt>;
}

impl<R, N, T, E> Node for DeadlineNode<R, N>
where
    R: Deref<Target = Inner>,
    N: Node<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        let Some(part) = &self.part else {
            return DeadlineAttempt {
                stage: Stage::Through {
                    inner: self.next.start(ctx),
                },
            };
        };
        let stage = match part.fix(ctx) {
            Err(error) => Stage::Refused { error: Some(error) },
            Ok(at) => {
                let installed = Installed::new(at.clone());
                let inner = self.next.start(ctx);
                drop(installed);
                Stage::Running {
                    at,
                    sleep: None,
                    inner,
                }
            }
        };
        DeadlineAttempt { stage }
    }

    #[inline(always)]
    fn poll(
        &mut self,
        attempt: Pin<&mut Self::Attempt>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Self::Output> {
        let mut stage = attempt.project().stage;
        let out = match stage.as_mut().project() {
            StageProj::Through { inner } => return self.next.poll(inner, cx, ctx),
            StageProj::Running {
                at,
                sleep,
                mut inner,
            } => {
                let installed = Installed::new(at.clone());
                let poll = self.next.poll(inner.as_mut(), cx, ctx);
                drop(installed);
                match poll {
                    Poll::Ready(out) => out,
                    Poll::Pending => {
                        // Out of time: the attempt is dropped (giving back
                        // what it holds) before the refusal is returned,
                        // under the mark that the deadline gave up on it: a
                        // breaker's permit or an adaptive bulkhead's dropped
                        // then, in this chain or in one inside the call (an
                        // annotated function it calls), counts the call as
                        // cut short.
                        let sleep =
                            sleep.get_or_insert_with(|| at.clock().sleep_async(at.remaining()));
                        ready!(Pin::new(sleep).poll(cx));
                        drop_given_up(GivenUp::Deadline, || stage.set(Stage::Done));
                        let part = self.part.as_ref().expect("a timed call has its deadline");
                        Err(Error::DeadlineExceeded(DeadlineExceeded::noticed(
                            "deadline",
                            &part.inner.name,
                        )))
                    }
                }
            }
            StageProj::Refused { error } => Err(Error::DeadlineExceeded(
                error.take().expect("a refusal holds its error"),
            )),
            StageProj::Done => panic!("a deadline's attempt polled after completion"),
        };
        // A finished attempt stays where it is, for the chain's future to
        // drop with itself, as every layer inside leaves its own.
        Poll::Ready(out)
    }
}

impl<R, N, T, E> SyncNode for DeadlineNode<R, N>
where
    R: Deref<Target = Inner>,
    N: SyncNode<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    /// A blocking call cannot be stopped from outside: the deadline bounds
    /// the waits inside it and the retry's attempts, and a call that finds
    /// no time left does not run.
    #[inline]
    fn call(&mut self, ctx: &mut Ctx) -> Self::Output {
        let Some(part) = &self.part else {
            return self.next.call(ctx);
        };
        let at = part.fix(ctx).map_err(Error::DeadlineExceeded)?;
        let _installed = Installed::new(at);
        self.next.call(ctx)
    }
}

impl<A> fmt::Debug for DeadlineAttempt<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.stage {
            Stage::Through { .. } => "through",
            Stage::Running { .. } => "running",
            Stage::Refused { .. } => "refused",
            Stage::Done => "done",
        };
        f.debug_struct("DeadlineAttempt")
            .field("stage", &stage)
            .finish_non_exhaustive()
    }
}
