//! The fault's layer of a chain, innermost: with no fault in force it
//! passes the call through after one load; otherwise it delays the call on
//! the fault's clock, or aborts it.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use super::{Decision, FaultInjected, Faults};
use crate::chain::{Ctx, HasAttempt, Node, OutOfLine, SyncNode, Wrap};
use crate::clock::{Clock, Sleep};
use crate::error::Error;

/// The names a call site answers to: a fault of any of them applies to its
/// calls (the first one in force, in this order).
pub trait FaultSites {
    /// The names, in order.
    fn names(&self) -> impl Iterator<Item = &str>;
}

impl<const K: usize> FaultSites for [&str; K] {
    #[inline]
    fn names(&self) -> impl Iterator<Item = &str> {
        self.iter().copied()
    }
}

impl FaultSites for &[&str] {
    #[inline]
    fn names(&self) -> impl Iterator<Item = &str> {
        self.iter().copied()
    }
}

/// A name owned by the call (a future that may outlive its caller).
impl FaultSites for crate::Name {
    #[inline]
    fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(&**self)
    }
}

impl FaultSites for &str {
    #[inline]
    fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(*self)
    }
}

/// The fault's part in a [`Stack`](crate::chain::Stack): the board it
/// consults and the call site's names.
///
/// Made by [`Faults::part`] (or [`FaultPart::global`]).
#[derive(Clone, Copy)]
pub struct FaultPart<'f, S> {
    faults: &'f Faults,
    sites: S,
}

impl Faults {
    /// This board's part for a call site of these names.
    #[inline(always)]
    pub fn part<S: FaultSites>(&self, sites: S) -> FaultPart<'_, S> {
        FaultPart {
            faults: self,
            sites,
        }
    }
}

impl<S: FaultSites> FaultPart<'static, S> {
    /// The process-wide board's part ([`Faults::global`]).
    #[inline(always)]
    pub fn global(sites: S) -> Self {
        Faults::global().part(sites)
    }
}

impl<S: FaultSites> FaultPart<'_, S> {
    /// What the fault in force does to this call, if any: one load when
    /// none is.
    #[inline(always)]
    fn decide(&self) -> Option<Decision> {
        if !self.faults.any_in_force() {
            return None;
        }
        self.faults.decide(self.sites.names())
    }
}

impl<S> fmt::Debug for FaultPart<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultPart").finish_non_exhaustive()
    }
}

/// The fault's layer around `N`.
pub struct FaultNode<'f, S, N> {
    part: FaultPart<'f, S>,
    next: N,
}

impl<'f, S, N> Wrap<N> for FaultPart<'f, S> {
    type Node = FaultNode<'f, S, N>;

    #[inline(always)]
    fn wrap(self, next: N) -> Self::Node {
        FaultNode { part: self, next }
    }
}

impl<S, N> fmt::Debug for FaultNode<'_, S, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultNode").finish_non_exhaustive()
    }
}

pin_project_lite::pin_project! {
    /// A call through the fault's layer: the call itself, or the delay
    /// before it, or the abort.
    pub struct FaultAttempt<A> {
        // The call, once started: `None` while the delay before it runs,
        // and for an aborted call. Beside the call rather than a variant
        // around it: the healthy path's attempt keeps the call's layout
        // (measured: with an enum of the two, the place cost twice as much).
        #[pin]
        inner: Option<A>,
        // What the fault does to the call, if any: boxed and dropped out of
        // line, so that a call with no fault in force carries one word for
        // it and its drop is one test.
        faulted: OutOfLine<Box<Faulted>>,
    }
}

/// A call that the fault delays (the wait before it runs) or aborts.
enum Faulted {
    Delayed(Sleep),
    Aborted(Option<FaultInjected>),
}

impl<S, N: HasAttempt> HasAttempt for FaultNode<'_, S, N> {
    type Attempt = FaultAttempt<N::Attempt>;
}

impl<S, N, T, E> Node for FaultNode<'_, S, N>
where
    S: FaultSites,
    N: Node<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        match self.part.decide() {
            None => FaultAttempt {
                inner: Some(self.next.start(ctx)),
                faulted: OutOfLine::none(),
            },
            Some(decision) => faulted(decision),
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
        let mut inner = this.inner;
        if let Some(inner) = inner.as_mut().as_pin_mut() {
            return self.next.poll(inner, cx, ctx);
        }
        self.poll_faulted(inner, this.faulted, cx, ctx)
    }
}

impl<S, N, T, E> FaultNode<'_, S, N>
where
    S: FaultSites,
    N: Node<Output = Result<T, Error<E>>>,
{
    /// Polls a delayed or aborted call: out of line, as only a call with
    /// a fault in force comes here.
    #[cold]
    #[inline(never)]
    fn poll_faulted(
        &mut self,
        mut inner: Pin<&mut Option<N::Attempt>>,
        faulted: &mut OutOfLine<Box<Faulted>>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Result<T, Error<E>>> {
        match faulted.as_mut().map(|f| &mut **f) {
            Some(Faulted::Delayed(sleep)) => {
                ready!(Pin::new(sleep).poll(cx));
                drop(faulted.take());
                ctx.user_code_ran();
                inner.set(Some(self.next.start(ctx)));
                let inner = inner.as_pin_mut().expect("started above");
                self.next.poll(inner, cx, ctx)
            }
            Some(Faulted::Aborted(error)) => {
                let error = error.take().expect("an aborted call is polled once");
                Poll::Ready(Err(Error::FaultInjected(error)))
            }
            None => unreachable!("a call not started is delayed or aborted"),
        }
    }
}

/// The attempt of a call that the fault delays or aborts.
#[cold]
fn faulted<A>(decision: Decision) -> FaultAttempt<A> {
    let faulted = match decision {
        Decision::Delay(delay, clock) => Faulted::Delayed(clock.sleep_async(delay)),
        Decision::Abort(error) => Faulted::Aborted(Some(error)),
    };
    FaultAttempt {
        inner: None,
        faulted: OutOfLine::new(Box::new(faulted)),
    }
}

impl<S, N, T, E> SyncNode for FaultNode<'_, S, N>
where
    S: FaultSites,
    N: SyncNode<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    /// A delayed call sleeps on the fault's clock (blocking the thread, as
    /// every wait of a blocking call does), then runs.
    #[inline(always)]
    fn call(&mut self, ctx: &mut Ctx) -> Self::Output {
        match self.part.decide() {
            None => self.next.call(ctx),
            Some(Decision::Abort(error)) => Err(Error::FaultInjected(error)),
            Some(Decision::Delay(delay, clock)) => {
                clock.sleep(delay);
                ctx.user_code_ran();
                self.next.call(ctx)
            }
        }
    }
}

impl<A> fmt::Debug for FaultAttempt<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match (&self.inner, self.faulted.as_ref().map(|f| &**f)) {
            (Some(_), _) => "through",
            (None, Some(Faulted::Delayed(_))) => "delayed",
            (None, Some(Faulted::Aborted(_))) => "aborted",
            // only if the call's own start panicked after its delay
            (None, None) => "not started",
        };
        f.debug_struct("FaultAttempt")
            .field("stage", &stage)
            .finish_non_exhaustive()
    }
}
