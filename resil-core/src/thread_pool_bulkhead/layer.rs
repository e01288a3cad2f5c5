//! The thread-pool bulkhead's layer of a chain: each attempt runs as a task
//! on the pool, admitted (or refused) when it is submitted.

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use super::{Submission, ThreadPoolBulkhead};
use crate::Name;
use crate::chain::{Ctx, HasAttempt, Node, SyncNode, Wrap};
use crate::deadline::{self, At, DeadlineExceeded, Installed};
use crate::error::Error;

/// The tasks of a thread-pool bulkhead's layer: `f` makes each attempt's
/// task, a call that owns what it uses (`Send + 'static`) and fails with
/// the caller's own error.
#[derive(Clone)]
pub struct Jobs<F>(pub F);

impl<F> fmt::Debug for Jobs<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jobs").finish_non_exhaustive()
    }
}

/// Like [`Jobs`], for tasks that already fail with `resil::Error<E>` (a
/// chain of their own, run on the pool: the Spring Cloud facade's semaphore
/// bulkhead on its executor's thread).
#[derive(Clone)]
pub struct ChainJobs<F>(pub F);

impl<F> fmt::Debug for ChainJobs<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChainJobs").finish_non_exhaustive()
    }
}

/// What a thread pool's layer runs: a task per attempt, `Send + 'static`,
/// failing with `resil::Error<E>`.
pub trait Tasks {
    /// The task's value.
    type T: Send + 'static;
    /// The caller's error.
    type E: Send + 'static;

    /// The next attempt's task.
    fn next(&mut self) -> impl FnOnce() -> Result<Self::T, Error<Self::E>> + Send + 'static;
}

impl<F, J, T, E> Tasks for Jobs<F>
where
    F: FnMut() -> J,
    J: FnOnce() -> Result<T, E> + Send + 'static,
    T: Send + 'static,
    E: Send + 'static,
{
    type T = T;
    type E = E;

    #[inline]
    fn next(&mut self) -> impl FnOnce() -> Result<T, Error<E>> + Send + 'static {
        let job = (self.0)();
        move || job().map_err(Error::Inner)
    }
}

impl<F, J, T, E> Tasks for ChainJobs<F>
where
    F: FnMut() -> J,
    J: FnOnce() -> Result<T, Error<E>> + Send + 'static,
    T: Send + 'static,
    E: Send + 'static,
{
    type T = T;
    type E = E;

    #[inline]
    fn next(&mut self) -> impl FnOnce() -> Result<T, Error<E>> + Send + 'static {
        (self.0)()
    }
}

/// The thread-pool bulkhead's part in a chain: the pool, by reference or
/// owned (a clone of the handle).
///
/// Made by [`ThreadPoolBulkhead::part`] and
/// [`ThreadPoolBulkhead::shared_part`]; it wraps [`Tasks`] only ([`Jobs`],
/// [`ChainJobs`]), since what runs on the pool must be a task of its own.
#[derive(Clone)]
pub struct ThreadPoolBulkheadPart<P> {
    pool: P,
}

impl ThreadPoolBulkhead {
    /// This pool's part in a [`Stack`](crate::chain::Stack), in the
    /// bulkhead's place.
    #[inline(always)]
    pub fn part(&self) -> ThreadPoolBulkheadPart<&ThreadPoolBulkhead> {
        ThreadPoolBulkheadPart { pool: self }
    }

    /// Like [`ThreadPoolBulkhead::part`], holding a clone of the handle (for
    /// a chain that must not borrow it).
    #[inline(always)]
    pub fn shared_part(&self) -> ThreadPoolBulkheadPart<ThreadPoolBulkhead> {
        ThreadPoolBulkheadPart { pool: self.clone() }
    }
}

impl<P: Borrow<ThreadPoolBulkhead>> fmt::Debug for ThreadPoolBulkheadPart<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBulkheadPart")
            .field("pool", &self.pool.borrow().name())
            .finish()
    }
}

/// The thread-pool bulkhead's layer around the tasks that `J` makes.
pub struct ThreadPoolBulkheadNode<P, J> {
    part: ThreadPoolBulkheadPart<P>,
    jobs: J,
}

impl<P, J: Tasks> Wrap<J> for ThreadPoolBulkheadPart<P> {
    type Node = ThreadPoolBulkheadNode<P, J>;

    #[inline(always)]
    fn wrap(self, jobs: J) -> Self::Node {
        ThreadPoolBulkheadNode { part: self, jobs }
    }
}

impl<P: Borrow<ThreadPoolBulkhead>, J> fmt::Debug for ThreadPoolBulkheadNode<P, J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBulkheadNode")
            .field("part", &self.part)
            .finish_non_exhaustive()
    }
}

impl<P, J> ThreadPoolBulkheadNode<P, J>
where
    P: Borrow<ThreadPoolBulkhead>,
    J: Tasks,
{
    /// Submits the next attempt's task; admission is decided now. The
    /// request's deadline travels with the task: the worker runs it under
    /// that deadline, and not at all once the deadline passed in the queue.
    #[inline]
    pub(crate) fn submit(&mut self) -> Submission<Result<J::T, Error<J::E>>> {
        let task = self.jobs.next();
        let pool = self.part.pool.borrow();
        let carried = deadline::current().map(|at| (at, pool.name_shared()));
        pool.submit(move || match carried {
            None => task(),
            Some((at, name)) => in_time(at, &name, task),
        })
    }
}

/// Runs `task` on the worker under the deadline `at`, unless it passed.
#[inline(never)]
fn in_time<T, E>(
    at: At,
    name: &Name,
    task: impl FnOnce() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    if at.remaining().is_zero() {
        return Err(Error::DeadlineExceeded(DeadlineExceeded::noticed(
            "thread-pool-bulkhead",
            name,
        )));
    }
    let _installed = Installed::new(at);
    task()
}

/// An attempt through the thread-pool bulkhead's layer: its submitted task.
///
/// Dropped before the task has run (its caller gave up: a time limiter's
/// timeout, a cancelled future), a task that has not started is not run.
pub struct ThreadPoolBulkheadAttempt<T> {
    submission: Option<Submission<T>>,
}

impl<T> Unpin for ThreadPoolBulkheadAttempt<T> {}

impl<T> Drop for ThreadPoolBulkheadAttempt<T> {
    fn drop(&mut self) {
        if let Some(submission) = self.submission.take() {
            submission.abandon();
        }
    }
}

impl<T> fmt::Debug for ThreadPoolBulkheadAttempt<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBulkheadAttempt")
            .field("submission", &self.submission)
            .finish()
    }
}

impl<P, J: Tasks> HasAttempt for ThreadPoolBulkheadNode<P, J> {
    type Attempt = ThreadPoolBulkheadAttempt<Result<J::T, Error<J::E>>>;
}

impl<P, J> Node for ThreadPoolBulkheadNode<P, J>
where
    P: Borrow<ThreadPoolBulkhead>,
    J: Tasks,
{
    type Output = Result<J::T, Error<J::E>>;

    #[inline]
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        let submission = self.submit();
        ctx.user_code_ran();
        ThreadPoolBulkheadAttempt {
            submission: Some(submission),
        }
    }

    fn poll(
        &mut self,
        mut attempt: Pin<&mut Self::Attempt>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Self::Output> {
        let submission = attempt
            .submission
            .as_mut()
            .expect("a pool's attempt polled after completion");
        let outcome = ready!(Pin::new(submission).poll(cx));
        attempt.submission = None;
        ctx.user_code_ran();
        Poll::Ready(match outcome {
            Ok(result) => result,
            Err(full) => Err(Error::BulkheadFull(full)),
        })
    }
}

impl<P, J> SyncNode for ThreadPoolBulkheadNode<P, J>
where
    P: Borrow<ThreadPoolBulkhead>,
    J: Tasks,
{
    type Output = Result<J::T, Error<J::E>>;

    /// Runs the task on the pool and blocks until it is done; its panic is
    /// resumed here.
    fn call(&mut self, ctx: &mut Ctx) -> Self::Output {
        let outcome = self.submit().wait();
        ctx.user_code_ran();
        match outcome {
            Ok(result) => result,
            Err(full) => Err(Error::BulkheadFull(full)),
        }
    }
}
