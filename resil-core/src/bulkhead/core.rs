//! The bulkhead's core: the instance's state (its semaphore, limits and
//! events) and the permit a call holds.
//!
//! A permit of an adaptive bulkhead carries the time its call started and
//! gives the limiter a sample when it is given back (see `adaptive.rs`); a
//! fixed bulkhead's permit reads no clock, and its only cost for the
//! adaptive part is one relaxed load when it is taken and one comparison
//! when it is given back.

use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use super::adaptive::Limiter;
use super::limit::Sample;
use super::semaphore::Semaphore;
use super::{BulkheadConfig, BulkheadEvent, BulkheadFull, BulkheadPermit, Queued};
use crate::clock::{Clock, SharedClock, Stamp};
use crate::deadline::{self, DeadlineExceeded};
use crate::error::Rejection;
use crate::event::EventPublisher;
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Mutex, Ordering, ShortMutex};
use crate::{Name, Tags};

#[doc(hidden)]
pub struct Inner {
    pub(super) name: Name,
    pub(super) tags: Tags,
    pub(super) clock: SharedClock,
    pub(super) sem: Semaphore,
    /// The current limit, for rejections and metrics (the limiter's lock
    /// orders its changes).
    pub(super) max_calls: AtomicU32,
    /// The current wait, in whole milliseconds.
    pub(super) max_wait_millis: AtomicU64,
    /// Shadow mode, read only when a call would be refused.
    pub(super) shadow: AtomicBool,
    /// The current configuration; its lock also serializes `change_config`.
    pub(super) config: Mutex<BulkheadConfig>,
    pub(super) events: EventPublisher<BulkheadEvent>,
    /// Whether the limit adapts: its permits then time their calls.
    pub(super) adaptive: AtomicBool,
    /// The adaptive limit; its lock orders every change of the limit.
    pub(super) limiter: ShortMutex<Limiter>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The start of a permit whose call is not timed (a fixed limit): zero, so
/// that a fixed permit's test is a test of a register against itself.
pub(super) const UNTIMED: u64 = 0;
/// The start of a permit already given back.
const FINISHED: u64 = u64::MAX;
/// Set in the start of a chain's timed permit: dropped before its call
/// ended, the permit was cancelled with the call by the call's caller
/// (no sample), where a permit of the user's own that is dropped has ended
/// its call (see [`Sample::on_drop`](super::Sample)).
const CHAIN: u64 = 1 << 63;

/// A start time as a permit keeps it: one past the clock's reading, clear
/// of the markers, with [`CHAIN`] or not ([`started_at`] reads it back).
#[inline]
fn timed(at: crate::clock::Nanos) -> u64 {
    at.as_u64().saturating_add(1).min(CHAIN - 2)
}

/// The clock's reading that [`timed`] kept.
#[inline]
pub(super) fn started_at(start: u64) -> u64 {
    (start & !CHAIN) - 1
}

/// Publishes `CallPermitted` for a permit just taken from `inner`'s
/// semaphore, and holds it.
#[inline]
pub(super) fn permitted<R: Deref<Target = Inner>>(inner: R) -> Held<R> {
    let start = if inner.adaptive.load(Ordering::Relaxed) {
        inner.timed_start()
    } else {
        if inner.events.is_active() {
            inner.publish(BulkheadEvent::CallPermitted);
        }
        UNTIMED
    };
    Held { inner, start }
}

impl Inner {
    #[inline]
    pub(super) fn permitted(&self) -> BulkheadPermit<'_> {
        BulkheadPermit(permitted(self))
    }

    /// An adaptive permit's start: one reading of the clock, which
    /// `CallPermitted` shares.
    #[inline(never)]
    fn timed_start(&self) -> u64 {
        let now = self.clock.now();
        if self.events.is_active() {
            self.events.publish_at(now, BulkheadEvent::CallPermitted);
        }
        timed(now)
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
        if !wait.is_zero() && self.wait_for_permit(wait) || self.let_through() {
            Ok(self.permitted())
        } else {
            Err(self.reject())
        }
    }

    /// [`Inner::acquire_blocking_slow`] with the wait cut to the time left
    /// before the request's deadline; the end of a cut wait is the
    /// deadline's refusal, never let through.
    #[cold]
    pub(super) fn acquire_blocking_in_time(&self) -> Result<BulkheadPermit<'_>, Rejection> {
        let own = self.max_wait();
        let (wait, deadline) = deadline::cut(own);
        if own.is_zero() || !deadline {
            return self.acquire_blocking_slow().map_err(Rejection::from);
        }
        if !wait.is_zero() && self.wait_for_permit(wait) {
            Ok(self.permitted())
        } else {
            Err(DeadlineExceeded::noticed("bulkhead", &self.name).into())
        }
    }

    /// Blocks in the queue until a permit is granted (`true`) or `wait`
    /// has passed on the bulkhead's clock.
    fn wait_for_permit(&self, wait: Duration) -> bool {
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
        granted
    }
}

/// One permit of `R`'s bulkhead, given back (exactly once) when dropped or
/// finished.
pub(super) struct Held<R: Deref<Target = Inner>> {
    pub(super) inner: R,
    /// When the call started on the bulkhead's clock (an adaptive limit's
    /// sample; see [`timed`]), [`UNTIMED`] for a fixed limit, `FINISHED`
    /// once given back.
    pub(super) start: u64,
}

impl<R: Deref<Target = Inner>> Held<R> {
    /// Gives the permit back with `sample` for an adaptive limit (a fixed
    /// one ignores it), `CallFinished` published now. Dropping the permit
    /// instead gives [`Sample::on_drop`].
    #[inline]
    pub(super) fn finish(mut self, sample: Sample) {
        if self.start != UNTIMED {
            self.inner.finish_timed(self.start, None, sample, true);
            self.start = FINISHED;
        }
    }

    /// Gives the permit back without a sample or `CallFinished`, for a call
    /// that was not made after all.
    #[inline]
    pub(super) fn release(mut self) {
        self.inner.sem.release();
        self.start = FINISHED;
    }
}

impl<R: Deref<Target = Inner>> Held<R> {
    /// A permit just taken from `inner`'s semaphore, `CallPermitted`
    /// published at `stamp`'s time (a chain's), which also starts an
    /// adaptive permit's call.
    #[inline(always)]
    pub(super) fn stamped(inner: R, stamp: &mut Stamp) -> Self {
        let start = if inner.adaptive.load(Ordering::Relaxed) {
            timed(stamp.now(&inner.clock)) | CHAIN
        } else {
            UNTIMED
        };
        inner
            .events
            .publish_stamped(stamp, || BulkheadEvent::CallPermitted);
        Held { inner, start }
    }

    /// [`Held::finish`], `CallFinished` published and the call's end read
    /// at `stamp`'s time (a chain's); the sample is made only for an
    /// adaptive limit, which takes it.
    #[inline(always)]
    pub(super) fn finish_stamped(mut self, stamp: &mut Stamp, sample: impl FnOnce() -> Sample) {
        let inner = &*self.inner;
        if self.start == UNTIMED {
            inner
                .events
                .publish_stamped(stamp, || BulkheadEvent::CallFinished);
            inner.sem.release();
        } else {
            let end = stamp.now(&inner.clock);
            inner
                .events
                .publish_stamped(stamp, || BulkheadEvent::CallFinished);
            inner.finish_timed(self.start, Some(end), sample(), false);
        }
        // Given back: the drop does nothing more.
        self.start = FINISHED;
    }
}

impl<R: Deref<Target = Inner>> Drop for Held<R> {
    #[inline]
    fn drop(&mut self) {
        match self.start {
            // Given back already (the healthy path's end): nothing more, and
            // no call.
            FINISHED => {}
            UNTIMED => {
                // Publish before releasing, so that a call's CALL_FINISHED
                // always comes before the CALL_PERMITTED of the call that
                // takes its permit (Resilience4j releases first, and its
                // events can then cross).
                if self.inner.events.is_active() {
                    self.inner.publish(BulkheadEvent::CallFinished);
                }
                self.inner.sem.release();
            }
            start => self.inner.drop_timed(start),
        }
    }
}

impl Inner {
    /// A timed permit dropped without a sample: out of line, so that a
    /// fixed bulkhead's drop stays two tests and a release.
    #[cold]
    #[inline(never)]
    fn drop_timed(&self, start: u64) {
        let sample = Sample::on_drop(start & CHAIN != 0);
        self.finish_timed(start, None, sample, true);
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
