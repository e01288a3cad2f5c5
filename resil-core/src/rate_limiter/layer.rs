//! The rate limiter's layer of a chain: a call's permits reserved when it
//! starts, waited for on the limiter's clock when they are due later.

use std::fmt;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::cluster::Deciding;
use super::core::Inner;
use super::state::Decision;
use super::{RateLimiter, RequestNotPermitted};
use crate::chain::{Ctx, HasAttempt, Layered, Node, SyncNode};
use crate::clock::{Clock, Nanos, Sleep};
use crate::deadline::{self, DeadlineExceeded};
use crate::error::{Error, Rejection};
use crate::sync::Ordering;

/// The rate limiter's part in a chain: the limiter (by reference, or
/// through its `Arc`) and the permits each call takes.
///
/// Made by [`RateLimiter::part`] and [`RateLimiter::shared_part`].
#[derive(Clone)]
pub struct RateLimiterPart<R> {
    inner: R,
    permits: u32,
}

impl RateLimiter {
    /// This limiter's part in a [`Stack`](crate::chain::Stack): each call
    /// takes `permits` permits (Resilience4j's `permits` of the annotation).
    #[inline(always)]
    pub fn part(&self, permits: u32) -> RateLimiterPart<&Inner> {
        RateLimiterPart {
            inner: &self.inner,
            permits,
        }
    }

    /// Like [`RateLimiter::part`], holding a clone of the limiter's `Arc`
    /// (for a chain that must not borrow it).
    #[inline(always)]
    pub fn shared_part(&self, permits: u32) -> RateLimiterPart<Arc<Inner>> {
        RateLimiterPart {
            inner: Arc::clone(&self.inner),
            permits,
        }
    }
}

impl<R: Deref<Target = Inner>> fmt::Debug for RateLimiterPart<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiterPart")
            .field("limiter", &self.inner.name)
            .field("permits", &self.permits)
            .finish()
    }
}

/// The rate limiter's layer around `N`.
pub type RateLimiterNode<R, N> = Layered<RateLimiterPart<R>, N>;

crate::chain::layer_part!("RateLimiterNode", impl<R> for RateLimiterPart<R>);

/// A reservation whose permits are due later (or whose refusal comes when
/// the timeout ends), counted as waiting while it lives.
pub(crate) struct Reserved<R: Deref<Target = Inner>> {
    decision: Decision,
    /// The timeout was the time left before the request's deadline: a
    /// refusal at its end is the deadline's.
    deadline: bool,
    until: Nanos,
    /// Started at the first poll: a clock's timer may need a runtime.
    sleep: Option<Sleep>,
    waiting: Waiting<R>,
}

impl<R: Deref<Target = Inner>> Reserved<R> {
    #[cold]
    fn new(inner: R, decision: Decision, wait: Duration, deadline: bool) -> Self {
        Reserved {
            decision,
            deadline,
            until: inner.clock.now().saturating_add(wait),
            sleep: None,
            waiting: Waiting::new(inner),
        }
    }

    /// Ready when the permits are due (or the timeout is over).
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let (clock, until) = (&self.waiting.0.clock, self.until);
        let sleep = self
            .sleep
            .get_or_insert_with(|| clock.sleep_async(until.saturating_duration_since(clock.now())));
        Pin::new(sleep).poll(cx)
    }

    /// Settles the reservation once due: no longer waiting, then granted or
    /// refused (and published).
    fn finish(self, permits: u32) -> Result<(), Rejection>
    where
        R: Clone,
    {
        let (inner, decision, deadline) = (self.waiting.0.clone(), self.decision, self.deadline);
        drop(self);
        inner
            .finish(decision, permits)
            .map_err(|refused| refusal(&inner, refused, deadline))
    }
}

/// The caller's refusal: the limiter's own, or the deadline's when the
/// deadline cut the limiter's timeout.
#[cold]
fn refusal(inner: &Inner, refused: RequestNotPermitted, deadline: bool) -> Rejection {
    if deadline {
        DeadlineExceeded::noticed("ratelimiter", &inner.name).into()
    } else {
        refused.into()
    }
}

/// The limiter's timeout in nanoseconds, cut to the time left before the
/// request's deadline: `true` when the deadline cut it.
#[inline(always)]
fn timeout_in_time(inner: &Inner) -> (u64, bool) {
    let own = inner.core.timeout();
    let (timeout, deadline) = deadline::cut(Duration::from_nanos(own));
    if deadline {
        (crate::clock::saturating_nanos(timeout), true)
    } else {
        (own, false)
    }
}

/// Counts a caller as waiting while it lives (also when a future is dropped
/// mid-wait).
pub(super) struct Waiting<R: Deref<Target = Inner>>(R);

impl<R: Deref<Target = Inner>> Waiting<R> {
    pub(super) fn new(inner: R) -> Self {
        inner.waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(inner)
    }
}

impl<R: Deref<Target = Inner>> Drop for Waiting<R> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

pin_project_lite::pin_project! {
    /// An attempt through the rate limiter's layer: waiting for its permits,
    /// then the inner attempt.
    pub struct RateLimiterAttempt<R, A>
    where
        R: Deref<Target = Inner>,
    {
        #[pin]
        stage: Stage<R, A>,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProj]
    #[project_replace = StageReplace]
    enum Stage<R, A>
    where
        R: Deref<Target = Inner>,
    {
        Waiting {
            reserved: Reserved<R>,
        },
        // Boxed: only a fleet's limiter decides late (and asks its
        // backend); a call admitted at once moves one word for it.
        Deciding {
            deciding: Box<Deciding>,
        },
        // Admitted, or no limiter in this chain: the call passes through.
        Running {
            #[pin]
            inner: A,
        },
        Refused {
            error: Option<Rejection>,
        },
        Done,
    }
}

/// What a call's reservation comes to when it is made.
enum Admission<R: Deref<Target = Inner>> {
    Now,
    Refused(Rejection),
    Later(Reserved<R>),
    /// A fleet-wide limiter waits for its backend's answer (async calls).
    Deciding(Deciding),
}

impl<R: Deref<Target = Inner> + Clone> RateLimiterPart<R> {
    /// Reserves the permits at `ctx`'s time; the decision's event takes
    /// that reading too. (A fleet-wide limiter reads its own clock for its
    /// lease, blocking while it asks its backend; the reading still serves
    /// the layers after it.)
    #[inline(always)]
    fn admit(&self, ctx: &mut Ctx) -> Admission<R> {
        let inner = &*self.inner;
        let (timeout, deadline) = timeout_in_time(inner);
        let now = ctx.stamp.now(&inner.clock).as_u64();
        let decision = inner.decide_with(self.permits, timeout, || now);
        self.settle(decision, timeout, deadline, ctx)
    }

    /// [`RateLimiterPart::admit`] for an async call: a fleet-wide limiter
    /// that must ask its backend does not block the thread, the attempt
    /// waits for the answer.
    #[inline(always)]
    fn admit_async(&self, ctx: &mut Ctx) -> Admission<R> {
        let inner = &*self.inner;
        let Some(cluster) = &inner.cluster else {
            return self.admit(ctx);
        };
        let (timeout, deadline) = timeout_in_time(inner);
        match cluster.start_deciding(inner, self.permits, timeout) {
            Ok(decision) => self.settle(
                inner.shadowed(decision, self.permits),
                timeout,
                deadline,
                ctx,
            ),
            Err(deciding) => Admission::Deciding(deciding),
        }
    }

    /// What a decision comes to: the permits now, a refusal, or a wait.
    #[inline(always)]
    fn settle(
        &self,
        decision: Decision,
        timeout: u64,
        deadline: bool,
        ctx: &mut Ctx,
    ) -> Admission<R> {
        let inner = &*self.inner;
        match decision.wait(timeout) {
            None => {
                if inner.events.is_active() {
                    inner.publish_acquire_stamped(decision, self.permits, &mut ctx.stamp);
                }
                match inner.outcome(decision) {
                    Ok(()) => Admission::Now,
                    Err(refused) => Admission::Refused(refusal(inner, refused, deadline)),
                }
            }
            Some(wait) => {
                Admission::Later(Reserved::new(self.inner.clone(), decision, wait, deadline))
            }
        }
    }
}

impl<R: Deref<Target = Inner>, N: HasAttempt> HasAttempt for RateLimiterNode<R, N> {
    type Attempt = RateLimiterAttempt<R, N::Attempt>;
}

impl<R, N, T, E> Node for RateLimiterNode<R, N>
where
    R: Deref<Target = Inner> + Clone,
    N: Node<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        let stage = match &self.part {
            None => Stage::Running {
                inner: self.next.start(ctx),
            },
            Some(part) => match part.admit_async(ctx) {
                Admission::Now => Stage::Running {
                    inner: self.next.start(ctx),
                },
                Admission::Refused(error) => Stage::Refused { error: Some(error) },
                Admission::Later(reserved) => Stage::Waiting { reserved },
                Admission::Deciding(deciding) => Stage::Deciding {
                    deciding: Box::new(deciding),
                },
            },
        };
        RateLimiterAttempt { stage }
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
                StageProj::Running { inner } => return self.next.poll(inner, cx, ctx),
                StageProj::Waiting { reserved } => {
                    std::task::ready!(reserved.poll(cx));
                    let StageReplace::Waiting { reserved } =
                        stage.as_mut().project_replace(Stage::Done)
                    else {
                        unreachable!("the stage was `Waiting`")
                    };
                    let permits = self.part.as_ref().map_or(1, |p| p.permits);
                    ctx.user_code_ran();
                    match reserved.finish(permits) {
                        Ok(()) => stage.set(Stage::Running {
                            inner: self.next.start(ctx),
                        }),
                        Err(refused) => return Poll::Ready(Err(refused.into())),
                    }
                }
                StageProj::Deciding { deciding } => {
                    let part = self
                        .part
                        .as_ref()
                        .expect("a deciding attempt has its limiter");
                    let inner = &*part.inner;
                    let cluster = inner
                        .cluster
                        .as_ref()
                        .expect("only a fleet's limiter decides late");
                    let decision = std::task::ready!(cluster.poll_deciding(inner, deciding, cx));
                    ctx.user_code_ran();
                    let (timeout, deadline) = timeout_in_time(inner);
                    let decision = inner.shadowed(decision, part.permits);
                    match part.settle(decision, timeout, deadline, ctx) {
                        Admission::Now => stage.set(Stage::Running {
                            inner: self.next.start(ctx),
                        }),
                        Admission::Refused(error) => {
                            stage.set(Stage::Done);
                            return Poll::Ready(Err(error.into()));
                        }
                        Admission::Later(reserved) => stage.set(Stage::Waiting { reserved }),
                        Admission::Deciding(_) => unreachable!("a decision is settled"),
                    }
                }
                StageProj::Refused { error } => {
                    let error = error.take().expect("a refused attempt holds its error");
                    stage.set(Stage::Done);
                    return Poll::Ready(Err(error.into()));
                }
                StageProj::Done => panic!("a rate limiter's attempt polled after completion"),
            }
        }
    }
}

impl<R, N, T, E> SyncNode for RateLimiterNode<R, N>
where
    R: Deref<Target = Inner> + Clone,
    N: SyncNode<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn call(&mut self, ctx: &mut Ctx) -> Self::Output {
        let Some(part) = &self.part else {
            return self.next.call(ctx);
        };
        match part.admit(ctx) {
            Admission::Now => {}
            Admission::Deciding(_) => unreachable!("a blocking call decides at once"),
            Admission::Refused(refused) => return Err(refused.into()),
            Admission::Later(reserved) => {
                let wait = reserved
                    .until
                    .saturating_duration_since(reserved.waiting.0.clock.now());
                reserved.waiting.0.clock.sleep(wait);
                ctx.user_code_ran();
                reserved.finish(part.permits)?;
            }
        }
        self.next.call(ctx)
    }
}

impl<R: Deref<Target = Inner>, A> fmt::Debug for RateLimiterAttempt<R, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.stage {
            Stage::Waiting { .. } => "waiting",
            Stage::Deciding { .. } => "deciding",
            Stage::Running { .. } => "running",
            Stage::Refused { .. } => "refused",
            Stage::Done => "done",
        };
        f.debug_struct("RateLimiterAttempt")
            .field("stage", &stage)
            .finish_non_exhaustive()
    }
}
