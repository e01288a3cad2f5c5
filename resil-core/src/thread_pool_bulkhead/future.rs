//! The thread-pool bulkhead's named future: [`Submission`], the caller's
//! side of a submitted task.

use std::fmt;
use std::future::Future;
use std::panic;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

use super::task::{Outcome, Slot, Waiter};
use crate::bulkhead::BulkheadFull;
use crate::clock::{Clock, Nanos, SystemClock};
use crate::sync::std_lock::lock;

/// The result of a task submitted to a [`ThreadPoolBulkhead`](super::ThreadPoolBulkhead):
/// a future, or [`Submission::wait`] for a blocking caller.
///
/// Admission was decided when the task was submitted; a refused submission
/// resolves at once with [`BulkheadFull`]. An admitted one resolves with the
/// task's value once it has run, and resumes the task's panic, if it
/// panicked, in the caller.
///
/// Dropping a submission does not cancel its task: the task still runs and
/// its value is dropped (Resilience4j cannot interrupt its threads either).
/// It is `Send` and `Sync` whatever `T` is, since it only holds a shared slot.
#[must_use = "the task runs anyway; its result and its panic are lost unless awaited"]
pub struct Submission<T> {
    state: State<T>,
}

enum State<T> {
    Rejected(BulkheadFull),
    Pending {
        outcome: Arc<dyn Outcome<T>>,
        full: BulkheadFull,
    },
    Finished,
}

impl<T> Submission<T> {
    /// A submission admitted to the pool, whose outcome `outcome` will hold.
    pub(super) fn pending(outcome: Arc<dyn Outcome<T>>, full: BulkheadFull) -> Self {
        Submission {
            state: State::Pending { outcome, full },
        }
    }

    pub(super) fn rejected(full: BulkheadFull) -> Self {
        Submission {
            state: State::Rejected(full),
        }
    }

    /// The caller gives up on the task: one that has not started is not
    /// run (its place in the queue is freed when a worker reaches it, at no
    /// cost); one that is running runs on, and its value is dropped.
    pub fn abandon(self) {
        if let State::Pending { outcome, .. } = &self.state {
            outcome.give_up();
        }
    }

    /// Returns `true` when the submission was refused (it resolves at once
    /// with `BulkheadFull`).
    pub fn is_rejected(&self) -> bool {
        matches!(self.state, State::Rejected(_))
    }

    /// Blocks the current thread until the task has run, and returns its value.
    ///
    /// Do not call it on an async runtime's thread (await the submission
    /// instead), nor from a task of the same pool when every other thread may
    /// be waiting too.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] when the submission was refused, or when the pool was
    /// shut down before the task could start.
    ///
    /// # Panics
    ///
    /// Resumes the task's panic; panics if the submission already completed
    /// as a future.
    pub fn wait(mut self) -> Result<T, BulkheadFull> {
        match self.park(None) {
            Some(result) => result,
            None => unreachable!("a wait without a deadline ends with the outcome"),
        }
    }

    /// Blocks the current thread until the task has run or `timeout` has
    /// passed (on the monotonic system time: a parked thread waits for real
    /// time, whatever clock the pool has). `None` when the time is up: the
    /// task goes on, and the submission can be waited on again or dropped.
    ///
    /// The same cautions as [`wait`](Submission::wait) hold.
    ///
    /// # Errors
    ///
    /// As [`wait`](Submission::wait).
    ///
    /// # Panics
    ///
    /// Resumes the task's panic; panics if the submission already completed.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::thread_pool_bulkhead::ThreadPoolBulkhead;
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    ///
    /// let pool = ThreadPoolBulkhead::of_defaults("report");
    /// let (release, gate) = mpsc::channel::<()>();
    /// let mut busy = pool.submit(move || gate.recv().is_ok());
    /// assert!(busy.wait_timeout(Duration::from_millis(5)).is_none());
    /// release.send(()).unwrap();
    /// assert_eq!(busy.wait_timeout(Duration::from_secs(60)).unwrap()?, true);
    /// # Ok::<(), resil_core::bulkhead::BulkheadFull>(())
    /// ```
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Result<T, BulkheadFull>> {
        let clock = SystemClock::new();
        let deadline = clock.now().saturating_add(timeout);
        self.park(Some((&clock, deadline)))
    }

    /// Parks until the outcome, or until `deadline` on `clock`.
    fn park(&mut self, deadline: Option<(&SystemClock, Nanos)>) -> Option<Result<T, BulkheadFull>> {
        let (outcome, full) = match std::mem::replace(&mut self.state, State::Finished) {
            State::Rejected(full) => return Some(Err(full)),
            State::Pending { outcome, full } => (outcome, full),
            State::Finished => panic!("`Submission::wait` after the submission completed"),
        };
        let mut slot = lock(outcome.slot());
        loop {
            match &mut *slot {
                Slot::Pending { waiter, .. } => {
                    let left = match deadline {
                        Some((clock, at)) => match at.saturating_duration_since(clock.now()) {
                            left if !left.is_zero() => Some(left),
                            _ => {
                                // time is up: nobody waits any more
                                *waiter = Waiter::Nobody;
                                drop(slot);
                                self.state = State::Pending { outcome, full };
                                return None;
                            }
                        },
                        None => None,
                    };
                    *waiter = Waiter::Thread(thread::current());
                    drop(slot);
                    match left {
                        Some(left) => thread::park_timeout(left),
                        None => thread::park(),
                    }
                    slot = lock(outcome.slot());
                }
                Slot::Done(_) => {
                    let outcome = take(&mut slot);
                    drop(slot);
                    return Some(value_or_resume(outcome));
                }
                Slot::Abandoned => return Some(Err(full)),
                Slot::Taken => unreachable!("only the submission takes the outcome"),
            }
        }
    }
}

/// Takes the outcome of a done slot.
fn take<T>(slot: &mut Slot<T>) -> thread::Result<T> {
    match std::mem::replace(slot, Slot::Taken) {
        Slot::Done(outcome) => outcome,
        _ => unreachable!("take is called on a done slot"),
    }
}

/// The task's value, or its panic resumed here (called with no lock held).
fn value_or_resume<T>(outcome: thread::Result<T>) -> Result<T, BulkheadFull> {
    match outcome {
        Ok(value) => Ok(value),
        Err(panic) => panic::resume_unwind(panic),
    }
}

impl<T> Future for Submission<T> {
    type Output = Result<T, BulkheadFull>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (outcome, full) = match std::mem::replace(&mut self.state, State::Finished) {
            State::Rejected(full) => return Poll::Ready(Err(full)),
            State::Pending { outcome, full } => (outcome, full),
            State::Finished => panic!("`Submission` polled after completion"),
        };
        let mut slot = lock(outcome.slot());
        match &mut *slot {
            Slot::Pending { waiter, .. } => {
                match waiter {
                    Waiter::Task(w) if w.will_wake(cx.waker()) => {}
                    _ => *waiter = Waiter::Task(cx.waker().clone()),
                }
                drop(slot);
                self.state = State::Pending { outcome, full };
                Poll::Pending
            }
            Slot::Done(_) => {
                let outcome = take(&mut slot);
                drop(slot);
                Poll::Ready(value_or_resume(outcome))
            }
            Slot::Abandoned => Poll::Ready(Err(full)),
            Slot::Taken => unreachable!("only the submission takes the outcome"),
        }
    }
}

impl<T> fmt::Debug for Submission<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Rejected(_) => "rejected",
            State::Pending { outcome, .. } => match &*lock(outcome.slot()) {
                Slot::Pending { .. } => "pending",
                Slot::Done(_) => "done",
                Slot::Abandoned => "abandoned",
                Slot::Taken => "taken",
            },
            State::Finished => "finished",
        };
        f.debug_struct("Submission").field("state", &state).finish()
    }
}
