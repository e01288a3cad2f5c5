//! The bulkhead's named futures: a call waiting in the queue for a permit, then running with it.

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use super::semaphore::{self, Semaphore};
use super::{Bulkhead, BulkheadFull, BulkheadPermit, Held, Inner, permitted};
use crate::clock::{Clock, Sleep, Stamp};
use crate::error::Error;
use crate::future::{self, AsyncCall};
use crate::sync::Ordering;

/// The semaphore of the bulkhead that `R` holds.
struct SemOf<R>(R);

impl<R: Deref<Target = Inner>> Deref for SemOf<R> {
    type Target = Semaphore;

    fn deref(&self) -> &Semaphore {
        &self.0.sem
    }
}

/// A caller waiting in the queue for a permit, up to the maximum wait.
pub(crate) struct Queued<R: Deref<Target = Inner> + Clone> {
    inner: R,
    acquire: semaphore::Acquire<SemOf<R>>,
    /// Started only once queued, so a wait that ends at once costs no timer.
    sleep: Option<Sleep>,
    /// In milliseconds: a `Duration`'s niche would hold the future's stage
    /// tag, and writing it costs a stalled copy on the fast path.
    wait_millis: u64,
}

impl<R: Deref<Target = Inner> + Clone> Queued<R> {
    pub(super) fn new(inner: R, wait_millis: u64) -> Self {
        Queued {
            acquire: semaphore::Acquire::new(SemOf(inner.clone())),
            inner,
            sleep: None,
            wait_millis,
        }
    }

    pub(super) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<Held<R>, BulkheadFull>> {
        let granted = if Pin::new(&mut self.acquire).poll(cx).is_ready() {
            true
        } else if self.wait_millis == 0 {
            self.acquire.cancel() // shadow mode's refusals without a wait
        } else {
            let (clock, wait) = (&self.inner.clock, Duration::from_millis(self.wait_millis));
            let sleep = self.sleep.get_or_insert_with(|| clock.sleep_async(wait));
            ready!(Pin::new(sleep).poll(cx));
            self.acquire.cancel()
        };
        Poll::Ready(if granted || self.inner.let_through() {
            Ok(permitted(self.inner.clone()))
        } else {
            Err(self.inner.reject())
        })
    }
}

/// No permit free: a place in the queue, or the refusal when the bulkhead
/// does not wait (`max_wait_duration` zero, not in shadow mode).
#[cold]
fn queue_or_refuse<R: Deref<Target = Inner> + Clone>(inner: R) -> Result<Queued<R>, BulkheadFull> {
    let wait_millis = inner.max_wait_millis.load(Ordering::Relaxed);
    if wait_millis == 0 && !inner.shadow.load(Ordering::Relaxed) {
        Err(inner.reject())
    } else {
        Ok(Queued::new(inner, wait_millis))
    }
}

/// A call's admission, for a future that holds the permit itself (the
/// decorator chain's): the permit now, a refusal, or a place in the queue.
pub(crate) enum Admission<'a> {
    Now(BulkheadPermit<'a>),
    Refused(BulkheadFull),
    Later(Queued<&'a Inner>),
}

impl Bulkhead {
    /// Asks for a permit as [`Bulkhead::decorate_async`] does when it is
    /// created, a permit taken at once published at `stamp`'s time.
    #[inline]
    pub(crate) fn admit<'a>(&'a self, stamp: &mut Stamp<'a>) -> Admission<'a> {
        let inner = &*self.inner;
        if inner.sem.try_acquire() {
            Admission::Now(inner.permitted_stamped(stamp))
        } else {
            match queue_or_refuse(inner) {
                Ok(queued) => Admission::Later(queued),
                Err(full) => Admission::Refused(full),
            }
        }
    }
}

impl<'a> Queued<&'a Inner> {
    /// Waits in the queue: the permit, or the refusal once the wait is over.
    pub(crate) fn poll_permit(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<BulkheadPermit<'a>, BulkheadFull>> {
        self.poll(cx).map(|granted| granted.map(BulkheadPermit))
    }
}

pin_project_lite::pin_project! {
    /// The future of a bulkhead's async call: the caller's future, held in
    /// place, with its permit.
    ///
    /// It is created by [`Bulkhead::call_async`] and [`Bulkhead::decorate_async`].
    /// When a permit is free they take it and call their closure right away
    /// (as Resilience4j's decorated `CompletionStage` supplier does when
    /// invoked); otherwise the future keeps the closure `F`, waits in the
    /// queue up to `max_wait_duration` (the timer starts at the first poll),
    /// and calls it once it has a permit. Dropping it gives the permit back
    /// or leaves the queue; a panic while polling the caller's future gives
    /// the permit back at once and is resumed.
    ///
    /// It is `Send` whenever `F` and `Fut` are, and takes a few words more than
    /// the larger of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
    /// use resil_core::Error;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let bulkhead = Bulkhead::new("inventory-query", BulkheadConfig::builder().max_concurrent_calls(1).build()?);
    /// let first = bulkhead.call_async(|| async { Ok::<_, std::io::Error>(1) });
    /// // The permit was taken when `first` was created: no wait is configured,
    /// // so the second call is refused.
    /// let second = bulkhead.call_async(|| async { Ok::<_, std::io::Error>(2) });
    /// assert!(matches!(second.await, Err(Error::BulkheadFull(_))));
    /// assert_eq!(first.await?, 1);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct BulkheadFuture<'a, F, Fut> {
        #[pin]
        pub(super) stage: Stage<&'a Inner, F, Fut>,
    }
}

pin_project_lite::pin_project! {
    /// [`BulkheadFuture`] for a future that must not borrow the bulkhead: it
    /// holds a clone of the bulkhead.
    ///
    /// It is created by [`Bulkhead::call_async_owned`] and
    /// [`Bulkhead::decorate_async_owned`], and behaves exactly as
    /// [`BulkheadFuture`] does; it is `'static` and `Send` whenever `F` and
    /// `Fut` are.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct OwnedBulkheadFuture<F, Fut> {
        #[pin]
        pub(super) stage: Stage<Arc<Inner>, F, Fut>,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProj]
    #[project_replace = StageReplace]
    pub(super) enum Stage<R, F, Fut>
    where
        R: Deref<Target = Inner>,
        R: Clone,
    {
        Queued {
            f: F,
            queued: Queued<R>,
        },
        Running {
            #[pin]
            future: Fut,
            // `None` only once a panic while polling gave the permit back.
            permit: Option<Held<R>>,
        },
        Refused {
            error: Option<BulkheadFull>,
        },
        Done,
    }
}

impl<R, F, Fut> Stage<R, F, Fut>
where
    R: Deref<Target = Inner> + Clone,
    F: AsyncCall<Future = Fut>,
{
    #[inline]
    pub(super) fn start(inner: R, f: F) -> Self {
        Self::start_or_defer(inner, f, F::start, |f| f)
    }

    /// `now(call)` when a permit is free at once, else `later(call)` to
    /// queue (or nothing, for a refusal).
    #[inline]
    pub(super) fn start_or_defer<C>(
        inner: R,
        call: C,
        now: impl FnOnce(C) -> Fut,
        later: impl FnOnce(C) -> F,
    ) -> Self {
        if inner.sem.try_acquire() {
            // Should `now` panic, the permit is given back while unwinding.
            let permit = permitted(inner);
            Stage::Running {
                future: now(call),
                permit: Some(permit),
            }
        } else {
            Self::full(inner, || later(call))
        }
    }

    #[cold]
    fn full(inner: R, f: impl FnOnce() -> F) -> Self {
        match queue_or_refuse(inner) {
            Ok(queued) => Stage::Queued { f: f(), queued },
            Err(full) => Stage::Refused { error: Some(full) },
        }
    }

    #[inline]
    fn poll_call<T, E>(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, Error<E>>>
    where
        Fut: Future<Output = Result<T, Error<E>>>,
    {
        loop {
            match self.as_mut().project() {
                StageProj::Running { future, permit } => {
                    let result = ready!(future::poll_holding(future, permit, cx));
                    // The caller's future first, then the permit.
                    self.set(Stage::Done);
                    return Poll::Ready(result);
                }
                StageProj::Queued { queued, .. } => {
                    let granted = ready!(queued.poll(cx));
                    let StageReplace::Queued { f, .. } = self.as_mut().project_replace(Stage::Done)
                    else {
                        unreachable!("the stage was `Queued`")
                    };
                    match granted {
                        Ok(permit) => self.set(Stage::Running {
                            future: f.start(),
                            permit: Some(permit),
                        }),
                        Err(full) => return Poll::Ready(Err(Error::BulkheadFull(full))),
                    }
                }
                StageProj::Refused { error } => {
                    let error = error.take();
                    self.set(Stage::Done);
                    return Poll::Ready(Err(Error::BulkheadFull(
                        error.expect("a refused stage holds its error"),
                    )));
                }
                StageProj::Done => panic!("`BulkheadFuture` polled after completion"),
            }
        }
    }
}

impl<R: Deref<Target = Inner> + Clone, F, Fut> Stage<R, F, Fut> {
    fn name(&self) -> &'static str {
        match self {
            Stage::Queued { .. } => "queued",
            Stage::Running { .. } => "running",
            Stage::Refused { .. } => "refused",
            Stage::Done => "done",
        }
    }
}

crate::future::delegate_future!(
    impl<F, Fut, T, E> BulkheadFuture<'_, F, Fut> => stage.poll_call
    where F: AsyncCall<Future = Fut>, Fut: Future<Output = Result<T, Error<E>>>
);

crate::future::delegate_future!(
    impl<F, Fut, T, E> OwnedBulkheadFuture<F, Fut> => stage.poll_call
    where F: AsyncCall<Future = Fut>, Fut: Future<Output = Result<T, Error<E>>>
);

impl<F, Fut> fmt::Debug for BulkheadFuture<'_, F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadFuture")
            .field("stage", &self.stage.name())
            .finish_non_exhaustive()
    }
}

impl<F, Fut> fmt::Debug for OwnedBulkheadFuture<F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedBulkheadFuture")
            .field("stage", &self.stage.name())
            .finish_non_exhaustive()
    }
}
