//! The bulkhead's core: the instance's state (its semaphore, limits and
//! events) and the permit a call holds.

use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use super::semaphore::Semaphore;
use super::{BulkheadConfig, BulkheadEvent, BulkheadFull, BulkheadPermit, Queued};
use crate::clock::{Clock, SharedClock};
use crate::event::EventPublisher;
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Mutex, Ordering};
use crate::{Name, Tags};

#[doc(hidden)]
pub struct Inner {
    pub(super) name: Name,
    pub(super) tags: Tags,
    pub(super) clock: SharedClock,
    pub(super) sem: Semaphore,
    /// The current limit, for rejections and metrics.
    pub(super) max_calls: AtomicU32,
    /// The current wait, in whole milliseconds.
    pub(super) max_wait_millis: AtomicU64,
    /// Shadow mode, read only when a call would be refused.
    pub(super) shadow: AtomicBool,
    /// The current configuration; its lock also serializes `change_config`.
    pub(super) config: Mutex<BulkheadConfig>,
    pub(super) events: EventPublisher<BulkheadEvent>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Publishes `CallPermitted` for a permit just taken from `inner`'s
/// semaphore, and holds it.
#[inline]
pub(super) fn permitted<R: Deref<Target = Inner>>(inner: R) -> Held<R> {
    if inner.events.is_active() {
        inner.publish(BulkheadEvent::CallPermitted);
    }
    Held::new(inner)
}

impl Inner {
    #[inline]
    pub(super) fn permitted(&self) -> BulkheadPermit<'_> {
        BulkheadPermit(permitted(self))
    }

    /// Shadow mode: a call that would be refused takes a permit beyond the
    /// limit (given back as any other) and the refusal is published.
    #[cold]
    pub(super) fn let_through(&self) -> bool {
        if !self.shadow.load(Ordering::Relaxed) {
            return false;
        }
        self.sem.force_acquire();
        self.publish(BulkheadEvent::ShadowRefusal);
        true
    }

    #[cold]
    pub(super) fn reject(&self) -> BulkheadFull {
        if self.events.is_active() {
            self.publish(BulkheadEvent::CallRejected);
        }
        BulkheadFull::new(self.name.clone(), self.max_calls.load(Ordering::Relaxed))
    }

    /// Out of line, so that reading the clock does not weigh on the inlined
    /// fast paths when nobody listens.
    #[cold]
    #[inline(never)]
    pub(super) fn publish(&self, event: BulkheadEvent) {
        self.events.publish_at(self.clock.now(), event);
    }

    pub(super) fn max_wait(&self) -> Duration {
        Duration::from_millis(self.max_wait_millis.load(Ordering::Relaxed))
    }

    pub(super) async fn acquire_slow(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        let wait_millis = self.max_wait_millis.load(Ordering::Relaxed);
        if wait_millis == 0 {
            return if self.let_through() {
                Ok(self.permitted())
            } else {
                Err(self.reject())
            };
        }
        let mut queued = Queued::new(self, wait_millis);
        std::future::poll_fn(|cx| queued.poll(cx))
            .await
            .map(BulkheadPermit)
    }

    #[cold]
    pub(super) fn acquire_blocking_slow(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        let wait = self.max_wait();
        if wait.is_zero() {
            return if self.let_through() {
                Ok(self.permitted())
            } else {
                Err(self.reject())
            };
        }
        let parker = Arc::new(Parker {
            thread: std::thread::current(),
            timed_out: std::sync::atomic::AtomicBool::new(false),
        });
        let waker = Waker::from(parker.clone());
        let mut cx = Context::from_waker(&waker);
        // Armed before joining the queue: once a caller is seen waiting, its
        // deadline is fixed, so a test may advance a manual clock past it.
        let timer = {
            let parker = parker.clone();
            self.clock
                .schedule(wait, Box::new(move || parker.time_out()))
        };
        let mut acquire = self.sem.acquire();
        let granted = loop {
            if Pin::new(&mut acquire).poll(&mut cx).is_ready() {
                break true;
            }
            if parker.timed_out.load(std::sync::atomic::Ordering::Acquire) {
                break acquire.cancel();
            }
            std::thread::park();
        };
        drop(timer);
        if granted || self.let_through() {
            Ok(self.permitted())
        } else {
            Err(self.reject())
        }
    }
}

/// One permit of `R`'s bulkhead, given back (exactly once) when dropped.
pub(super) struct Held<R: Deref<Target = Inner>> {
    pub(super) inner: R,
    /// `CallFinished` is published already (at a chain's reading of the
    /// clock): the drop only gives the permit back.
    pub(super) published: bool,
}

impl<R: Deref<Target = Inner>> Held<R> {
    #[inline(always)]
    pub(super) fn new(inner: R) -> Self {
        Held {
            inner,
            published: false,
        }
    }
}

impl<R: Deref<Target = Inner>> Drop for Held<R> {
    #[inline]
    fn drop(&mut self) {
        // Publish before releasing, so that a call's CALL_FINISHED always comes
        // before the CALL_PERMITTED of the call that takes its permit
        // (Resilience4j releases first, and its events can then cross).
        if !self.published && self.inner.events.is_active() {
            self.inner.publish(BulkheadEvent::CallFinished);
        }
        self.inner.sem.release();
    }
}

/// Wakes a thread blocked in [`Bulkhead::acquire_permission_blocking`](super::Bulkhead::acquire_permission_blocking).
struct Parker {
    thread: std::thread::Thread,
    timed_out: std::sync::atomic::AtomicBool,
}

impl Parker {
    fn time_out(&self) {
        self.timed_out
            .store(true, std::sync::atomic::Ordering::Release);
        self.thread.unpark();
    }
}

impl Wake for Parker {
    fn wake(self: Arc<Self>) {
        self.thread.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.thread.unpark();
    }
}
