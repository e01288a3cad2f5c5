//! How one layer wraps the next: the engine's three traits, the caller's
//! call at the centre, and the helpers every layer shares.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::clock::Stamp;
use crate::error::Error;

/// What the layers of one call share while one poll (or one blocking call)
/// passes through them: the time they read.
///
/// Layers that run back to back, with no wait and no user code between
/// them, take one reading of the clock between them instead of one each;
/// whatever runs user code (the call itself, a fallback, an event consumer)
/// or waits makes the next layer read afresh.
#[derive(Default)]
pub struct Ctx {
    pub(crate) stamp: Stamp,
}

impl Ctx {
    /// A context with no reading yet.
    #[inline(always)]
    pub fn new() -> Self {
        Ctx::default()
    }

    /// Forgets the reading: user code ran, or time passed. A node that runs
    /// user code (a call of its own at the centre of a chain) calls it after.
    #[inline(always)]
    pub fn user_code_ran(&mut self) {
        self.stamp.clear();
    }
}

impl fmt::Debug for Ctx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx").finish_non_exhaustive()
    }
}

/// A layer and everything inside it, for async calls.
///
/// A node is what a layer is for the length of one call: its instance, how
/// it classifies, and the node inside it. An attempt is what one pass
/// through it holds (a permit, a timer, the caller's future); the node
/// starts attempts and polls them, so an attempt borrows nothing from its
/// node, and a layer that makes several attempts (retry, hedge) keeps the
/// node inside it next to them.
///
/// Admission happens in [`Node::start`], from the outside in, as
/// Resilience4j's decorated suppliers acquire when they are invoked; the
/// result leaves through each layer's completion in [`Node::poll`], from
/// the inside out.
///
/// A layer gives back what it holds (a permit, a place) at its own
/// completion, and leaves its finished inner attempt where it is: the
/// whole finished attempt is dropped once, with the chain's future. An
/// attempt given up on (a timeout) or failed and retried is dropped at
/// once, before the layer goes on. A time limiter's timeout and a request's deadline drop the
/// attempt they gave up on under a mark on the thread, which the permits
/// dropped unfinished then read, out of line: an adaptive bulkhead counts
/// the call a drop, a breaker counts the call the deadline cut short. A
/// layer has nothing to pass on for it, and the mark reaches the chains
/// inside the call (an annotated function it calls) as well.
pub trait Node: HasAttempt {
    /// What the call comes to.
    type Output;

    /// Starts an attempt: this layer's admission, then the inner node's.
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt;

    /// Polls an attempt that [`Node::start`] returned, until it is ready
    /// (a finished attempt is not polled again, only dropped).
    fn poll(
        &mut self,
        attempt: Pin<&mut Self::Attempt>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Self::Output>;
}

/// What one attempt through a node holds: a trait of its own, so that a
/// future that holds an attempt has a type (and auto traits) that depend on
/// the attempt's parts only, not on how the node classifies outcomes.
pub trait HasAttempt {
    /// What one attempt through this node holds.
    type Attempt;
}

/// A layer and everything inside it, for blocking calls: waits block the
/// calling thread.
pub trait SyncNode {
    /// What the call comes to.
    type Output;

    /// Makes one call through this node.
    fn call(&mut self, ctx: &mut Ctx) -> Self::Output;
}

/// A layer's part in a chain, wrapped around the node inside it.
///
/// Each pattern implements it for its part (an instance and what the call
/// needs of it: a classifier, a number of permits) and for `Option` of it;
/// `()` is a layer a face never has, and costs nothing.
pub trait Wrap<N> {
    /// The layer around `N`.
    type Node;

    /// Wraps `inner`.
    fn wrap(self, inner: N) -> Self::Node;
}

impl<N> Wrap<N> for () {
    type Node = N;

    #[inline(always)]
    fn wrap(self, inner: N) -> N {
        inner
    }
}

/// The caller's call, at the centre of the chain: `f` makes each attempt,
/// failing with `resil::Error<E>` (wrap a plain call in [`Lift`]).
///
/// For async chains `f` returns each attempt's future; for blocking ones,
/// its result.
#[derive(Clone)]
pub struct Call<F>(pub F);

impl<F, Fut> HasAttempt for Call<F>
where
    F: FnMut() -> Fut,
{
    type Attempt = Fut;
}

impl<F, Fut, T, E> Node for Call<F>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn start(&mut self, ctx: &mut Ctx) -> Fut {
        let future = (self.0)();
        ctx.user_code_ran();
        future
    }

    #[inline(always)]
    fn poll(
        &mut self,
        attempt: Pin<&mut Fut>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Self::Output> {
        let poll = attempt.poll(cx);
        ctx.user_code_ran();
        poll
    }
}

impl<F, T, E> SyncNode for Call<F>
where
    F: FnMut() -> Result<T, Error<E>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn call(&mut self, ctx: &mut Ctx) -> Self::Output {
        let result = (self.0)();
        ctx.user_code_ran();
        result
    }
}

impl<F> fmt::Debug for Call<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call").finish_non_exhaustive()
    }
}

/// The caller's own call, failing with its own error `E`, which the chain
/// sees as [`Error::Inner`].
#[derive(Clone)]
pub struct Lift<F>(pub F);

impl<F, Fut> HasAttempt for Lift<F>
where
    F: FnMut() -> Fut,
{
    type Attempt = crate::future::InnerErrors<Fut>;
}

impl<F, Fut, T, E> Node for Lift<F>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        let future = crate::future::InnerErrors::new((self.0)());
        ctx.user_code_ran();
        future
    }

    #[inline(always)]
    fn poll(
        &mut self,
        attempt: Pin<&mut Self::Attempt>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Self::Output> {
        let poll = attempt.poll(cx);
        ctx.user_code_ran();
        poll
    }
}

impl<F, T, E> SyncNode for Lift<F>
where
    F: FnMut() -> Result<T, E>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn call(&mut self, ctx: &mut Ctx) -> Self::Output {
        let result = (self.0)().map_err(Error::Inner);
        ctx.user_code_ran();
        result
    }
}

impl<F> fmt::Debug for Lift<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lift").finish_non_exhaustive()
    }
}

/// Runs `f`; should it unwind, drops what `held` holds while unwinding, as
/// an `async fn` drops its locals (a breaker's guard then records the
/// panic, a bulkhead's permit goes back at once).
#[inline(always)]
pub(crate) fn holding<H, R>(held: &mut Option<H>, f: impl FnOnce() -> R) -> R {
    struct DropOnUnwind<'h, H>(&'h mut Option<H>);

    impl<H> Drop for DropOnUnwind<'_, H> {
        fn drop(&mut self) {
            // Reached only while unwinding: the normal path forgets it.
            drop(self.0.take());
        }
    }

    let on_unwind = DropOnUnwind(held);
    let out = f();
    std::mem::forget(on_unwind);
    out
}

/// What an attempt holds only off the healthy path (a breaker's refusal,
/// a time limiter's armed timer): dropped out of line, so that dropping an
/// attempt that holds none is one test, and the code around it smaller.
pub(crate) struct OutOfLine<T>(Option<T>);

impl<T> OutOfLine<T> {
    /// Holds `value`.
    #[inline(always)]
    pub(crate) fn new(value: T) -> Self {
        OutOfLine(Some(value))
    }

    /// Holds nothing yet.
    #[inline(always)]
    pub(crate) fn none() -> Self {
        OutOfLine(None)
    }

    /// The value, taken out (once).
    #[inline(always)]
    pub(crate) fn take(&mut self) -> Option<T> {
        self.0.take()
    }

    /// The value, if held.
    #[inline(always)]
    pub(crate) fn as_ref(&self) -> Option<&T> {
        self.0.as_ref()
    }

    /// The value, if held, to change.
    #[inline(always)]
    pub(crate) fn as_mut(&mut self) -> Option<&mut T> {
        self.0.as_mut()
    }

    /// The value, made by `f` unless held.
    #[inline(always)]
    pub(crate) fn get_or_insert_with(&mut self, f: impl FnOnce() -> T) -> &mut T {
        self.0.get_or_insert_with(f)
    }
}

impl<T> Drop for OutOfLine<T> {
    #[inline]
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            drop_out_of_line(value);
        }
    }
}

#[cold]
#[inline(never)]
fn drop_out_of_line<T>(value: T) {
    drop(value);
}

/// `f` as a call made once, for a chain with no layer that calls again (no
/// retry): [`Lift`] and [`Call`] take a function they can call for each
/// attempt.
///
/// # Panics
///
/// When called a second time.
#[inline(always)]
pub fn once<F: FnOnce() -> R, R>(f: F) -> impl FnMut() -> R {
    let mut f = Some(f);
    move || (f.take().expect("a call made once is called once"))()
}
