//! The bulkhead's layer of a chain: a permit taken when the call starts, or
//! a place in the queue up to the maximum wait, held until the call ends.

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use super::core::{Held, Inner, permitted};
use super::semaphore::{self, Semaphore};
use super::{Bulkhead, BulkheadFull, Sample};
use crate::chain::{Ctx, HasAttempt, Layered, Node, SyncNode, holding};
use crate::clock::{Clock, Sleep};
use crate::deadline::{self, DeadlineExceeded};
use crate::error::{Error, Rejection};
use crate::sync::Ordering;

/// The semaphore of the bulkhead that `R` holds.
pub(super) struct SemOf<R>(R);

impl<R: Deref<Target = Inner>> Deref for SemOf<R> {
    type Target = Semaphore;

    fn deref(&self) -> &Semaphore {
        &self.0.sem
    }
}

/// A caller waiting in the queue for a permit, up to the maximum wait.
pub(super) struct Queued<R: Deref<Target = Inner> + Clone> {
    inner: R,
    acquire: semaphore::Acquire<SemOf<R>>,
    /// Started only once queued, so a wait that ends at once costs no timer.
    sleep: Option<Sleep>,
    /// In milliseconds: a `Duration`'s niche would hold the attempt's stage
    /// tag, and writing it costs a stalled copy on the fast path.
    wait_millis: u64,
    /// The wait is the time left before the request's deadline, shorter
    /// than `max_wait_duration`: its end is the deadline's refusal.
    deadline: bool,
}

impl<R: Deref<Target = Inner> + Clone> Queued<R> {
    pub(super) fn new(inner: R, wait_millis: u64) -> Self {
        Queued {
            acquire: semaphore::Acquire::new(SemOf(inner.clone())),
            inner,
            sleep: None,
            wait_millis,
            deadline: false,
        }
    }

    /// Ready with the permit, or with the refusal once the wait is over.
    pub(super) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<Held<R>, BulkheadFull>> {
        let granted = ready!(self.poll_granted(cx));
        Poll::Ready(if granted || self.inner.let_through() {
            Ok(permitted(self.inner.clone()))
        } else {
            Err(self.inner.reject())
        })
    }

    /// [`Queued::poll`] for a wait the request's deadline may have cut: the
    /// end of a cut wait is the deadline's refusal, never let through.
    fn poll_in_time(&mut self, cx: &mut Context<'_>) -> Poll<Result<Held<R>, Rejection>> {
        if !self.deadline {
            return self.poll(cx).map_err(Rejection::from);
        }
        Poll::Ready(if ready!(self.poll_granted(cx)) {
            Ok(permitted(self.inner.clone()))
        } else {
            Err(DeadlineExceeded::noticed("bulkhead", &self.inner.name).into())
        })
    }

    /// Ready once the permit is granted (`true`) or the wait is over.
    fn poll_granted(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        Poll::Ready(if Pin::new(&mut self.acquire).poll(cx).is_ready() {
            true
        } else if self.wait_millis == 0 {
            self.acquire.cancel() // shadow mode's refusals without a wait
        } else {
            let (clock, wait) = (&self.inner.clock, Duration::from_millis(self.wait_millis));
            let sleep = self.sleep.get_or_insert_with(|| clock.sleep_async(wait));
            ready!(Pin::new(sleep).poll(cx));
            self.acquire.cancel()
        })
    }
}

/// No permit free: a place in the queue, or the refusal when the bulkhead
/// does not wait (`max_wait_duration` zero, not in shadow mode). The wait
/// is cut to the time left before the request's deadline.
#[cold]
fn queue_or_refuse<R: Deref<Target = Inner> + Clone>(inner: R) -> Result<Queued<R>, BulkheadFull> {
    let wait_millis = inner.max_wait_millis.load(Ordering::Relaxed);
    if wait_millis == 0 {
        return if inner.shadow.load(Ordering::Relaxed) {
            Ok(Queued::new(inner, 0))
        } else {
            Err(inner.reject())
        };
    }
    let (wait, deadline) = deadline::cut(Duration::from_millis(wait_millis));
    if !deadline {
        return Ok(Queued::new(inner, wait_millis));
    }
    let mut queued = Queued::new(inner, u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
    queued.deadline = true;
    Ok(queued)
}

/// The bulkhead's part in a chain: the bulkhead, by reference or through its
/// `Arc`, and how it names the caller's errors for an adaptive limit's
/// `limit-drop-errors` (`()`: it does not).
///
/// Made by [`Bulkhead::part`] and [`Bulkhead::shared_part`].
#[derive(Clone)]
pub struct BulkheadPart<R, K = ()> {
    inner: R,
    kinds: K,
}

impl Bulkhead {
    /// This bulkhead's part in a [`Stack`](crate::chain::Stack).
    #[inline(always)]
    pub fn part(&self) -> BulkheadPart<&Inner> {
        BulkheadPart {
            inner: &self.inner,
            kinds: (),
        }
    }

    /// Like [`Bulkhead::part`], holding a clone of the bulkhead's `Arc`
    /// (for a chain that must not borrow it).
    #[inline(always)]
    pub fn shared_part(&self) -> BulkheadPart<Arc<Inner>> {
        BulkheadPart {
            inner: Arc::clone(&self.inner),
            kinds: (),
        }
    }
}

impl<R> BulkheadPart<R> {
    /// Names the caller's errors by their kinds (a
    /// [`Classify`](crate::Classify) type's `kind`), so that an adaptive
    /// limit counts those that `limit-drop-errors` lists as drops.
    #[inline(always)]
    pub fn kinds<E>(self, kind: Option<fn(&E) -> &'static str>) -> BulkheadPart<R, Kinds<E>> {
        BulkheadPart {
            inner: self.inner,
            kinds: Kinds(kind),
        }
    }
}

/// The kinds of the caller's errors `E` (see [`BulkheadPart::kinds`]).
pub struct Kinds<E>(Option<fn(&E) -> &'static str>);

impl<E> Clone for Kinds<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for Kinds<E> {}

impl<E> fmt::Debug for Kinds<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Kinds").field(&self.0.is_some()).finish()
    }
}

/// How a bulkhead's part names the caller's errors `E`.
pub trait ErrorKinds<E> {
    /// `error`'s kind, if errors have kinds.
    fn kind(&self, error: &E) -> Option<&'static str>;
}

impl<E> ErrorKinds<E> for () {
    #[inline(always)]
    fn kind(&self, _: &E) -> Option<&'static str> {
        None
    }
}

impl<E> ErrorKinds<E> for Kinds<E> {
    #[inline(always)]
    fn kind(&self, error: &E) -> Option<&'static str> {
        self.0.map(|kind| kind(error))
    }
}

impl<R: Deref<Target = Inner>, K> fmt::Debug for BulkheadPart<R, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadPart")
            .field("bulkhead", &self.inner.name)
            .finish()
    }
}

/// The bulkhead's layer around `N`.
pub type BulkheadNode<R, K, N> = Layered<BulkheadPart<R, K>, N>;

crate::chain::layer_part!("BulkheadNode", impl<R, K> for BulkheadPart<R, K>);

pin_project_lite::pin_project! {
    /// An attempt through the bulkhead's layer: waiting in the queue, then
    /// the inner attempt with its permit.
    pub struct BulkheadAttempt<R, A>
    where
        R: Deref<Target = Inner>,
        R: Clone,
    {
        #[pin]
        stage: Stage<R, A>,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProj]
    enum Stage<R, A>
    where
        R: Deref<Target = Inner>,
        R: Clone,
    {
        Through {
            #[pin]
            inner: A,
        },
        // Boxed, as the wait's timer is: a call admitted at once moves one
        // word for it.
        Queued {
            queued: Box<Queued<R>>,
        },
        Running {
            #[pin]
            inner: A,
            // `None` only once a panic while polling gave the permit back.
            // Dropped before the call ended, the permit goes back as a
            // dropped permit does (`Sample::on_drop`: a drop when a time
            // limiter or a request's deadline gave up on the call, in this
            // chain or in one the call runs inside, or during a panic; no
            // sample otherwise, the caller cancelled the call).
            permit: Option<Held<R>>,
        },
        Refused {
            error: Option<Rejection>,
        },
        Done,
    }
}

impl<R: Deref<Target = Inner> + Clone, K> BulkheadPart<R, K> {
    /// A permit taken now, `CallPermitted` published at `ctx`'s time.
    #[inline(always)]
    fn try_acquire(&self, ctx: &mut Ctx) -> Option<Held<R>> {
        if self.inner.sem.try_acquire() {
            Some(Held::stamped(self.inner.clone(), &mut ctx.stamp))
        } else {
            None
        }
    }
}

impl<R: Deref<Target = Inner> + Clone, K, N: HasAttempt> HasAttempt for BulkheadNode<R, K, N> {
    type Attempt = BulkheadAttempt<R, N::Attempt>;
}

impl<R, K, N, T, E> Node for BulkheadNode<R, K, N>
where
    R: Deref<Target = Inner> + Clone,
    K: ErrorKinds<E>,
    N: Node<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        let stage = match &self.part {
            None => Stage::Through {
                inner: self.next.start(ctx),
            },
            // Should the inner start panic, the permit is given back while
            // unwinding.
            Some(part) => match part.try_acquire(ctx) {
                Some(permit) => Stage::Running {
                    inner: self.next.start(ctx),
                    permit: Some(permit),
                },
                None => match queue_or_refuse(part.inner.clone()) {
                    Ok(queued) => Stage::Queued {
                        queued: Box::new(queued),
                    },
                    Err(full) => Stage::Refused {
                        error: Some(full.into()),
                    },
                },
            },
        };
        BulkheadAttempt { stage }
    }

    #[inline(always)]
    fn poll(
        &mut self,
        attempt: Pin<&mut Self::Attempt>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Self::Output> {
        let mut stage = attempt.project().stage;
        loop {
            match stage.as_mut().project() {
                StageProj::Through { inner } => return self.next.poll(inner, cx, ctx),
                StageProj::Running { inner, permit } => {
                    let next = &mut self.next;
                    let poll = holding(permit, || next.poll(inner, cx, ctx));
                    // The result is handed on in its `Poll`, not taken out
                    // and wrapped again (a copy each way).
                    if let Poll::Ready(result) = &poll
                        && let (Some(permit), Some(part)) = (permit.take(), &self.part)
                    {
                        permit.finish_stamped(&mut ctx.stamp, || {
                            Sample::of(result, |e| part.kinds.kind(e))
                        });
                    }
                    return poll;
                }
                StageProj::Queued { queued } => match ready!(queued.poll_in_time(cx)) {
                    Ok(permit) => {
                        // Out of the queue: the place goes, the permit stays.
                        stage.set(Stage::Done);
                        ctx.user_code_ran();
                        let mut permit = Some(permit);
                        let next = &mut self.next;
                        let inner = holding(&mut permit, || next.start(ctx));
                        stage.set(Stage::Running { inner, permit });
                    }
                    Err(refused) => {
                        stage.set(Stage::Done);
                        return Poll::Ready(Err(refused.into()));
                    }
                },
                StageProj::Refused { error } => {
                    let error = error.take().expect("a refused attempt holds its error");
                    stage.set(Stage::Done);
                    return Poll::Ready(Err(error.into()));
                }
                StageProj::Done => panic!("a bulkhead's attempt polled after completion"),
            }
        }
    }
}

impl<R, K, N, T, E> SyncNode for BulkheadNode<R, K, N>
where
    R: Deref<Target = Inner> + Clone,
    K: ErrorKinds<E>,
    N: SyncNode<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn call(&mut self, ctx: &mut Ctx) -> Self::Output {
        let Some(part) = &self.part else {
            return self.next.call(ctx);
        };
        // A panic in the call gives the permit back while unwinding.
        let inner: &Inner = &part.inner;
        let permit = if inner.sem.try_acquire() {
            Held::stamped(inner, &mut ctx.stamp)
        } else {
            let permit = inner.acquire_blocking_in_time()?;
            ctx.user_code_ran();
            permit.0
        };
        let result = self.next.call(ctx);
        permit.finish_stamped(&mut ctx.stamp, || {
            Sample::of(&result, |e| part.kinds.kind(e))
        });
        result
    }
}

impl<R: Deref<Target = Inner>, A> fmt::Debug for BulkheadAttempt<R, A>
where
    R: Clone,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.stage {
            Stage::Through { .. } => "through",
            Stage::Queued { .. } => "queued",
            Stage::Running { .. } => "running",
            Stage::Refused { .. } => "refused",
            Stage::Done => "done",
        };
        f.debug_struct("BulkheadAttempt")
            .field("stage", &stage)
            .finish_non_exhaustive()
    }
}
