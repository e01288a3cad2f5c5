//! A submitted task: the call, the contexts it carries and the slot its
//! outcome comes back through, in one allocation shared by the queued
//! [`Job`] and the caller's [`Submission`].

use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::thread::{self, Thread};

use super::Submission;
use super::context::{CapturedContext, Entered};
use super::event::ThreadPoolBulkheadEvent;
use crate::bulkhead::BulkheadFull;
use crate::clock::Nanos;
use crate::event::EventPublisher;

/// The type-erased side of a task that the worker sees.
pub(super) trait Runnable: Send + Sync {
    /// Runs the call (once) and keeps its outcome staged.
    fn run(&self, events: &EventPublisher<ThreadPoolBulkheadEvent>);
    /// Hands the staged outcome to the caller and wakes it.
    fn deliver(&self);
    /// The task will never run: the caller gets `BulkheadFull`.
    fn abandon(&self);
}

/// The side of a task that the caller's [`Submission`] sees.
pub(super) trait Outcome<T>: Send + Sync {
    fn slot(&self) -> &Mutex<Slot<T>>;
    /// The caller gave up: a task that has not started never will (its
    /// job stays queued and does nothing when its turn comes).
    fn give_up(&self);
}

struct Task<F, T> {
    work: Mutex<Option<Work<F>>>,
    slot: Mutex<Slot<T>>,
}

struct Work<F> {
    f: F,
    contexts: Vec<CapturedContext>,
}

pub(super) enum Slot<T> {
    /// Not delivered yet. The outcome is staged by the worker first and
    /// delivered only after the worker's own bookkeeping, so a caller that
    /// sees its result also sees the thread back in the pool.
    Pending {
        waiter: Waiter,
        staged: Option<thread::Result<T>>,
    },
    Done(thread::Result<T>),
    Abandoned,
    Taken,
}

#[derive(Default)]
pub(super) enum Waiter {
    #[default]
    Nobody,
    Task(Waker),
    Thread(Thread),
}

impl Waiter {
    pub(super) fn wake(self) {
        match self {
            Waiter::Nobody => {}
            Waiter::Task(waker) => waker.wake(),
            Waiter::Thread(thread) => thread.unpark(),
        }
    }
}

use crate::sync::std_lock::lock;

/// Creates a task, submitted at `submitted` on the pool's clock: the job
/// for the pool and the submission for the caller.
pub(super) fn new<F, T>(
    f: F,
    contexts: Vec<CapturedContext>,
    full: BulkheadFull,
    submitted: Nanos,
) -> (Job, Submission<T>)
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let task = Arc::new(Task {
        work: Mutex::new(Some(Work { f, contexts })),
        slot: Mutex::new(Slot::Pending {
            waiter: Waiter::Nobody,
            staged: None,
        }),
    });
    let job = Job {
        task: Some(task.clone()),
        submitted,
    };
    let submission = Submission::pending(task, full);
    (job, submission)
}

impl<F, T> Runnable for Task<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn run(&self, events: &EventPublisher<ThreadPoolBulkheadEvent>) {
        let Some(Work { f, contexts }) = lock(&self.work).take() else {
            return;
        };
        // The contexts are entered and left inside the unwind boundary, so a
        // propagator that panics is reported to the caller like the task's
        // own panic, and never takes the worker down.
        let outcome = panic::catch_unwind(AssertUnwindSafe(move || {
            let _entered = Entered::enter(contexts);
            events.publish(|| ThreadPoolBulkheadEvent::CallPermitted);
            f()
        }));
        events.publish(|| ThreadPoolBulkheadEvent::CallFinished);
        if let Slot::Pending { staged, .. } = &mut *lock(&self.slot) {
            *staged = Some(outcome);
        }
    }

    fn deliver(&self) {
        let mut slot = lock(&self.slot);
        if let Slot::Pending { waiter, staged } = &mut *slot
            && let Some(outcome) = staged.take()
        {
            let waiter = std::mem::take(waiter);
            *slot = Slot::Done(outcome);
            drop(slot);
            waiter.wake();
        }
    }

    fn abandon(&self) {
        let work = lock(&self.work).take();
        let mut slot = lock(&self.slot);
        if let Slot::Pending { waiter, .. } = &mut *slot {
            let waiter = std::mem::take(waiter);
            *slot = Slot::Abandoned;
            drop(slot);
            waiter.wake();
        }
        // The caller's closure is dropped here, outside both locks.
        drop(work);
    }
}

impl<F, T> Outcome<T> for Task<F, T>
where
    F: Send,
    T: Send,
{
    fn slot(&self) -> &Mutex<Slot<T>> {
        &self.slot
    }

    fn give_up(&self) {
        // The caller's closure is dropped here, with no lock held.
        let work = lock(&self.work).take();
        drop(work);
    }
}

/// A task in the queue. Dropped without running (a failed thread start, a
/// shutdown that gave up waiting), it resolves its submission with
/// `BulkheadFull`.
pub(super) struct Job {
    task: Option<Arc<dyn Runnable>>,
    submitted: Nanos,
}

impl Job {
    /// Runs the task on this thread; the outcome reaches the caller when the
    /// returned [`Ran`] is delivered (or dropped).
    pub(super) fn run(mut self, events: &EventPublisher<ThreadPoolBulkheadEvent>) -> Ran {
        let task = self.task.take().expect("a job runs once");
        task.run(events);
        Ran(task)
    }

    /// When it was submitted, on the pool's clock.
    pub(super) fn submitted(&self) -> Nanos {
        self.submitted
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abandon();
        }
    }
}

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Job")
    }
}

/// A task that has run and whose outcome is staged.
pub(super) struct Ran(Arc<dyn Runnable>);

impl Ran {
    /// Hands the outcome to the caller.
    pub(super) fn deliver(self) {
        drop(self);
    }
}

impl Drop for Ran {
    fn drop(&mut self) {
        self.0.deliver();
    }
}
