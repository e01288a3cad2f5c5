//! The time limiter's core: the instance's state (its configuration,
//! counters and events), the outcome of a call, and the futures it leaves
//! running.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use super::{TimeLimiterConfig, TimeLimiterEvent, Timeout};
use crate::clock::{Nanos, SharedClock, Stamp};
use crate::deadline::DeadlineExceeded;
use crate::error::Error;
use crate::event::EventPublisher;
use crate::live::Live;
use crate::{Name, Tags};

/// A wait that ended before the attempt did: after `timeout`, which was
/// the time left before the request's deadline when `deadline` is set.
#[derive(Debug, Clone, Copy)]
pub(super) struct Expired {
    pub(super) timeout: Duration,
    pub(super) deadline: bool,
}

#[doc(hidden)]
pub struct Inner {
    pub(super) name: Name,
    pub(super) config: Live<TimeLimiterConfig>,
    pub(super) clock: SharedClock,
    pub(super) tags: Tags,
    pub(super) successful: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) timeout: AtomicU64,
    /// Timed-out futures left running; shared with their tasks, which may
    /// outlive the limiter.
    pub(super) detached: Arc<AtomicUsize>,
    pub(super) events: EventPublisher<TimeLimiterEvent>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// How an outcome's event is stamped.
pub(super) enum Stamping<'s> {
    /// Now, on the limiter's clock.
    Now,
    /// At the chain's reading (see [`Stamp`]).
    Stamped(&'s mut Stamp),
}

impl Inner {
    /// Counts and publishes the outcome, and shapes the caller's result.
    /// `elapsed` gives the call's duration from the time its event is
    /// stamped (read only when the event is published).
    #[inline(always)]
    pub(super) fn record<T, E>(
        &self,
        outcome: Result<Result<T, Error<E>>, Expired>,
        elapsed: impl FnOnce(Nanos) -> Duration,
        stamping: Stamping<'_>,
    ) -> Result<T, Error<E>> {
        match outcome {
            Ok(result) => {
                self.record_finished(&result, elapsed, stamping);
                result
            }
            Err(expired) => Err(self.timed_out(expired)),
        }
    }

    /// Records a call that finished in time, leaving its result where it
    /// is.
    #[inline(always)]
    pub(super) fn record_finished<T, E>(
        &self,
        result: &Result<T, Error<E>>,
        elapsed: impl FnOnce(Nanos) -> Duration,
        stamping: Stamping<'_>,
    ) {
        match result {
            Ok(_) => {
                self.successful.fetch_add(1, Ordering::Relaxed);
                // Checked here so that the hot path inlines a load and a
                // branch, not the publisher.
                if self.events.is_active() {
                    self.publish_outcome(stamping, |at| TimeLimiterEvent::Success {
                        elapsed: elapsed(at),
                    });
                }
            }
            Err(e) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                if self.events.is_active() {
                    let error_kind = e.rejection_kind();
                    self.publish_outcome(stamping, |at| TimeLimiterEvent::Error {
                        error_kind,
                        elapsed: elapsed(at),
                    });
                }
            }
        }
    }

    /// Shadow mode: a timeout that passed and was let be.
    #[cold]
    pub(super) fn shadow_refusal(&self) {
        self.events.publish(|| TimeLimiterEvent::ShadowRefusal);
    }

    #[inline(always)]
    fn publish_outcome(
        &self,
        stamping: Stamping<'_>,
        kind: impl FnOnce(Nanos) -> TimeLimiterEvent,
    ) {
        match stamping {
            Stamping::Now => self.events.publish_timed(kind),
            Stamping::Stamped(stamp) => self.events.publish_stamped_timed(stamp, kind),
        }
    }

    #[cold]
    pub(super) fn timed_out<E>(&self, expired: Expired) -> Error<E> {
        let Expired { timeout, deadline } = expired;
        if deadline {
            // The request's deadline, shorter than the timeout, passed: the
            // caller's budget ran out, the limiter's timeout did not.
            self.failed.fetch_add(1, Ordering::Relaxed);
            self.events.publish(|| TimeLimiterEvent::Error {
                error_kind: Some("DeadlineExceeded"),
                elapsed: timeout,
            });
            return Error::DeadlineExceeded(DeadlineExceeded::noticed("timelimiter", &self.name));
        }
        self.timeout.fetch_add(1, Ordering::Relaxed);
        self.events
            .publish(|| TimeLimiterEvent::Timeout { elapsed: timeout });
        Error::Timeout(Timeout::new(self.name.clone(), timeout))
    }

    #[cold]
    pub(super) fn detach<Fut>(&self, fut: Pin<Box<Fut>>)
    where
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            panic!(
                "time limiter `{}` must leave a timed-out future running (cancel_running_future = false), \
                 which needs a tokio runtime",
                self.name
            )
        };
        let max = self.config.load().max_detached_futures as usize;
        let Some(slot) = DetachedSlot::acquire(&self.detached, max) else {
            // Full: cancel this one instead of leaving it running.
            drop(fut);
            return;
        };
        // Dropping the join handle detaches the task. The slot is given back
        // when the task ends: done, panicked, or dropped with its runtime.
        drop(runtime.spawn(async move {
            let _slot = slot;
            fut.await;
        }));
    }
}

/// One detached future counted in [`Inner::detached`]; given back on drop.
pub(super) struct DetachedSlot(Arc<AtomicUsize>);

impl DetachedSlot {
    pub(super) fn acquire(count: &Arc<AtomicUsize>, max: usize) -> Option<Self> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| DetachedSlot(Arc::clone(count)))
    }
}

impl Drop for DetachedSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
