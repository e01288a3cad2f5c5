//! What a clock hands out: the handle of a scheduled timer and the future
//! of a sleep.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Weak;
use std::task::{Context, Poll};
use std::time::Duration;

use super::ManualInner;
use super::timer::global_timer;
use crate::sync::std_lock::lock;

/// A pending timer. Dropping it (or calling [`TimerHandle::cancel`]) cancels the task
/// if it has not started.
#[must_use = "dropping a TimerHandle cancels its timer"]
pub struct TimerHandle(pub(super) TimerRepr);

pub(super) enum TimerRepr {
    None,
    Global(u64),
    Tokio(tokio::task::AbortHandle),
    Manual(Weak<ManualInner>, u64),
}

impl TimerHandle {
    /// A handle that refers to no timer.
    pub const fn none() -> Self {
        TimerHandle(TimerRepr::None)
    }

    /// Cancels the timer.
    pub fn cancel(mut self) {
        self.cancel_in_place();
    }

    fn cancel_in_place(&mut self) {
        match std::mem::replace(&mut self.0, TimerRepr::None) {
            TimerRepr::None => {}
            TimerRepr::Global(id) => global_timer().cancel(id),
            TimerRepr::Tokio(abort) => abort.abort(),
            TimerRepr::Manual(inner, id) => {
                if let Some(inner) = inner.upgrade() {
                    lock(&inner.timers).cancel(id);
                }
            }
        }
    }
}

impl Drop for TimerHandle {
    fn drop(&mut self) {
        self.cancel_in_place();
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.0 {
            TimerRepr::None => "none",
            TimerRepr::Global(_) => "thread",
            TimerRepr::Tokio(_) => "tokio",
            TimerRepr::Manual(..) => "manual",
        };
        f.debug_tuple("TimerHandle").field(&kind).finish()
    }
}

/// The future returned by [`Clock::sleep_async`](super::Clock::sleep_async).
pub struct Sleep(pub(super) SleepRepr);

pub(super) enum SleepRepr {
    Ready { done: bool },
    Tokio(Pin<Box<tokio::time::Sleep>>),
    Boxed(Pin<Box<dyn Future<Output = ()> + Send>>),
}

impl Sleep {
    /// A tokio timer of `duration`.
    pub fn tokio(duration: Duration) -> Self {
        Sleep(SleepRepr::Tokio(Box::pin(tokio::time::sleep(duration))))
    }

    /// A sleep that is already over.
    pub fn ready() -> Self {
        Sleep(SleepRepr::Ready { done: false })
    }

    /// Any future, for clocks of your own.
    pub fn from_future(future: impl Future<Output = ()> + Send + 'static) -> Self {
        Sleep(SleepRepr::Boxed(Box::pin(future)))
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.0 {
            SleepRepr::Ready { done } => {
                *done = true;
                Poll::Ready(())
            }
            SleepRepr::Tokio(sleep) => sleep.as_mut().poll(cx),
            SleepRepr::Boxed(fut) => fut.as_mut().poll(cx),
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.0 {
            SleepRepr::Ready { .. } => "ready",
            SleepRepr::Tokio(_) => "tokio",
            SleepRepr::Boxed(_) => "boxed",
        };
        f.debug_tuple("Sleep").field(&kind).finish()
    }
}
