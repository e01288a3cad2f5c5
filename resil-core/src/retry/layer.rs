//! The retry's layer of a chain: the attempts through the layers inside it
//! and the waits between them, in one state machine.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use super::core::{CallState, FirstAttempt, Inner, Next};
use super::{Retry, RetryClassifier};
use crate::chain::{Ctx, HasAttempt, Layered, Node, SyncNode, holding};
use crate::clock::{Clock, Sleep};
use crate::error::Error;

/// The retry's part in a chain: the retry (by reference, or through its
/// `Arc`) and what it retries (a [`RetryClassifier`], or a reference to
/// one).
///
/// Made by [`Retry::part`] and [`Retry::shared_part`].
#[derive(Clone)]
pub struct RetryPart<R, C> {
    inner: R,
    classifier: C,
}

impl Retry {
    /// This retry's part in a [`Stack`](crate::chain::Stack), deciding what
    /// is retried with `classifier`.
    #[inline(always)]
    pub fn part<C>(&self, classifier: C) -> RetryPart<&Inner, C> {
        RetryPart {
            inner: &self.inner,
            classifier,
        }
    }

    /// Like [`Retry::part`], holding a clone of the retry's `Arc` (for a
    /// chain that must not borrow it).
    #[inline(always)]
    pub fn shared_part<C>(&self, classifier: C) -> RetryPart<Arc<Inner>, C> {
        RetryPart {
            inner: Arc::clone(&self.inner),
            classifier,
        }
    }
}

impl<R: Deref<Target = Inner>, C> fmt::Debug for RetryPart<R, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPart")
            .field("retry", &self.inner.name)
            .finish_non_exhaustive()
    }
}

/// The retry's layer around `N`.
pub type RetryNode<R, C, N> = Layered<RetryPart<R, C>, N>;

crate::chain::layer_part!("RetryNode", impl<R, C> for RetryPart<R, C>);

pin_project_lite::pin_project! {
    /// A call through the retry's layer: its progress, and the attempt or
    /// the wait in progress.
    pub struct RetryAttempt<R, A>
    where
        R: Deref<Target = Inner>,
    {
        // `None` without a retry, and once a panic in an attempt counted
        // the call.
        call: Option<CallState<R>>,
        #[pin]
        stage: Stage<A>,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProj]
    enum Stage<A> {
        Attempt {
            #[pin]
            inner: A,
        },
        Backoff {
            sleep: Sleep,
        },
        Done,
    }
}

impl<R: Deref<Target = Inner>, C, N: HasAttempt> HasAttempt for RetryNode<R, C, N> {
    type Attempt = RetryAttempt<R, N::Attempt>;
}

impl<R, C, N, T, E> Node for RetryNode<R, C, N>
where
    R: Deref<Target = Inner> + Clone,
    C: Borrow<RetryClassifier<T, E>>,
    N: Node<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        let call = self.part.as_ref().map(|part| {
            part.inner.first_attempt();
            let call = CallState::new(part.inner.clone());
            // Async: an unwind counts as the call's panic only while an
            // attempt is being polled.
            call.mark_attempt(false);
            call
        });
        RetryAttempt {
            call,
            stage: Stage::Attempt {
                inner: self.next.start(ctx),
            },
        }
    }

    #[inline(always)]
    fn poll(
        &mut self,
        attempt: Pin<&mut Self::Attempt>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Self::Output> {
        let this = attempt.project();
        let mut stage = this.stage;
        loop {
            match stage.as_mut().project() {
                StageProj::Attempt { inner } => {
                    let Some(part) = self.part.as_ref().filter(|_| this.call.is_some()) else {
                        return self.next.poll(inner, cx, ctx);
                    };
                    if let Some(call) = this.call.as_ref() {
                        call.mark_attempt(true);
                    }
                    let next = &mut self.next;
                    let poll = holding(this.call, || next.poll(inner, cx, ctx));
                    let Some(call) = this.call.as_mut() else {
                        unreachable!("only an unwind drops the call's state")
                    };
                    call.mark_attempt(false);
                    let classifier = part.classifier.borrow();
                    // A first success is handed on in its `Poll`, not taken
                    // out and wrapped again (a copy each way).
                    let result = match poll {
                        Poll::Ready(ref result) if call.first_success(classifier, result) => {
                            return poll;
                        }
                        Poll::Ready(result) => result,
                        Poll::Pending => return Poll::Pending,
                    };
                    // A failed attempt is dropped before the next one starts
                    // or the call ends, as at the end of an `.await`.
                    stage.set(Stage::Done);
                    match call.settle(classifier, result) {
                        Ok(result) => return Poll::Ready(result),
                        Err(wait) if wait.is_zero() => stage.set(Stage::Attempt {
                            inner: self.next.start(ctx),
                        }),
                        Err(wait) => stage.set(Stage::Backoff {
                            sleep: call.sleep(wait),
                        }),
                    }
                }
                StageProj::Backoff { sleep } => {
                    ready!(Pin::new(sleep).poll(cx));
                    ctx.user_code_ran();
                    stage.set(Stage::Attempt {
                        inner: self.next.start(ctx),
                    });
                }
                StageProj::Done => panic!("a retry's attempt polled after completion"),
            }
        }
    }
}

impl<R, C, N, T, E> SyncNode for RetryNode<R, C, N>
where
    R: Deref<Target = Inner> + Clone,
    C: Borrow<RetryClassifier<T, E>>,
    N: SyncNode<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn call(&mut self, ctx: &mut Ctx) -> Self::Output {
        let Some(part) = &self.part else {
            return self.next.call(ctx);
        };
        let classifier = part.classifier.borrow();
        // The first attempt runs without the call state, which the retry
        // loop keeps in memory; a panic in it is still counted, by the guard.
        part.inner.first_attempt();
        let guard = FirstAttempt(&part.inner);
        let first = self.next.call(ctx);
        guard.disarm();
        match first {
            Ok(value) if classifier.retry_on_result.is_none_or(|p| !p(&value)) => {
                part.inner.success_without_retry();
                Ok(value)
            }
            first => retry_after_first(&part.inner, classifier, first, &mut self.next, ctx),
        }
    }
}

/// The rest of a blocking call after a first attempt that failed (or whose
/// result was rejected).
#[inline(never)]
fn retry_after_first<T, E, N>(
    inner: &Inner,
    classifier: &RetryClassifier<T, E>,
    first: Result<T, Error<E>>,
    next_node: &mut N,
    ctx: &mut Ctx,
) -> Result<T, Error<E>>
where
    N: SyncNode<Output = Result<T, Error<E>>>,
{
    let mut call = CallState::new(inner);
    let mut result = first;
    let mut next = call.after_failure(classifier, &result);
    loop {
        match next {
            Next::Return => return result,
            Next::Exhausted(max) => return Err(inner.exhausted(max)),
            Next::Retry { attempt, wait } => {
                // Without a consumer the result is dropped where it lies,
                // when the next attempt's result replaces it.
                if let Some(consume) = classifier.consume_result_before_retry
                    && let Ok(value) = result
                {
                    consume(attempt, value);
                }
                if !wait.is_zero() {
                    inner.clock.sleep(wait);
                }
                ctx.user_code_ran();
            }
        }
        result = next_node.call(ctx);
        next = call.next(classifier, &result);
    }
}

impl<R: Deref<Target = Inner>, A> fmt::Debug for RetryAttempt<R, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.stage {
            Stage::Attempt { .. } => "attempt",
            Stage::Backoff { .. } => "backoff",
            Stage::Done => "done",
        };
        f.debug_struct("RetryAttempt")
            .field("stage", &stage)
            .field(
                "attempts",
                &self.call.as_ref().map_or(0, |call| call.attempts),
            )
            .finish_non_exhaustive()
    }
}
