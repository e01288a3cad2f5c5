//! The retry's named future: [`RetryFuture`], one state machine for the
//! attempts of an async call and the waits between them.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{CallState, Inner, RetryClassifier};
use crate::clock::{Clock, Sleep};
use crate::error::Error;

pin_project_lite::pin_project! {
    /// The future of an async retried call ([`Retry::call_async`](super::Retry::call_async),
    /// [`Retry::call_async_with`](super::Retry::call_async_with)): the attempts and the waits between them,
    /// one state machine that holds the call's progress, the current
    /// attempt or wait, and the closure that makes the next attempt.
    ///
    /// Dropping it cancels the attempt or the wait in progress and counts
    /// nothing. It is `Send` whenever the closure and its futures are.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct RetryFuture<'a, T, E, F, Fut> {
        call: CallState<&'a Inner>,
        classifier: &'a RetryClassifier<T, E>,
        f: F,
        #[pin]
        stage: RetryStage<Fut>,
    }
}

pin_project_lite::pin_project! {
    #[project = RetryStageProj]
    enum RetryStage<Fut> {
        /// An attempt; the last one stays here once the call is done (the
        /// call's state says so), dropped with the future.
        Attempt {
            #[pin]
            future: Fut,
        },
        Waiting {
            sleep: Sleep,
        },
    }
}

impl<'a, T, E, F, Fut> RetryFuture<'a, T, E, F, Fut> {
    /// The call `call`, whose first attempt `future` is made.
    #[inline]
    pub(super) fn new(
        call: CallState<&'a Inner>,
        classifier: &'a RetryClassifier<T, E>,
        f: F,
        future: Fut,
    ) -> Self {
        RetryFuture {
            call,
            classifier,
            f,
            stage: RetryStage::Attempt { future },
        }
    }
}

impl<T, E, F, Fut> Future for RetryFuture<'_, T, E, F, Fut>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        assert!(!this.call.done, "`RetryFuture` polled after completion");
        loop {
            match this.stage.as_mut().project() {
                RetryStageProj::Attempt { future } => {
                    let result = std::task::ready!(this.call.poll_attempt(future, cx));
                    if this.call.first_success(this.classifier, &result) {
                        return Poll::Ready(result);
                    }
                    match this.call.settle(this.classifier, result) {
                        Ok(result) => return Poll::Ready(result),
                        Err(wait) if wait.is_zero() => {
                            let future = (this.f)();
                            this.stage.set(RetryStage::Attempt { future });
                        }
                        Err(wait) => {
                            let sleep = this.call.inner.clock.sleep_async(wait);
                            this.stage.set(RetryStage::Waiting { sleep });
                        }
                    }
                }
                RetryStageProj::Waiting { sleep } => {
                    std::task::ready!(Pin::new(sleep).poll(cx));
                    let future = (this.f)();
                    this.stage.set(RetryStage::Attempt { future });
                }
            }
        }
    }
}

impl<T, E, F, Fut> fmt::Debug for RetryFuture<'_, T, E, F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryFuture")
            .field("retry", &self.call.inner.name)
            .field("attempts", &self.call.attempts)
            .finish_non_exhaustive()
    }
}
