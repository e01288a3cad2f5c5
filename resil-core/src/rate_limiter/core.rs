//! The rate limiter's core: the instance's state (its cycle counter, the
//! fleet's lease, the callers waiting) and the decision of each request.

use std::time::Duration;

use super::cluster;
use super::state::{Core, Decision, nanos_to_wait};
use super::{RateLimiterEvent, RequestNotPermitted};
use crate::clock::{Clock, SharedClock, Stamp};
use crate::event::EventPublisher;
use crate::sync::{AtomicBool, AtomicU32, Ordering};
use crate::{Name, Tags};

#[doc(hidden)]
pub struct Inner {
    pub(super) name: Name,
    pub(super) clock: SharedClock,
    pub(super) tags: Tags,
    pub(super) core: Core,
    pub(super) waiting: AtomicU32,
    pub(super) event_consumer_buffer_size: AtomicU32,
    /// Shadow mode, read only when a call would be refused.
    pub(super) shadow: AtomicBool,
    pub(super) events: EventPublisher<RateLimiterEvent>,
    pub(super) cluster: Option<cluster::Cluster>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Decision {
    /// How long an acquire waits: until its reservation, or the whole
    /// timeout before a refusal; `None` for no wait.
    #[inline]
    pub(super) fn wait(self, timeout: u64) -> Option<Duration> {
        let nanos = match self {
            Decision::Granted { wait } => wait,
            Decision::Refused => timeout,
        };
        (nanos > 0).then(|| Duration::from_nanos(nanos))
    }
}

impl Inner {
    /// The clock's reading, in nanoseconds.
    #[inline]
    pub(super) fn now(&self) -> u64 {
        self.clock.now().as_u64()
    }

    #[inline]
    pub(super) fn decide(&self, permits: u32, timeout: u64) -> Decision {
        self.decide_with(permits, timeout, || self.now())
    }

    /// [`Inner::decide`], the local limiter deciding at the time `now` gives.
    #[inline(always)]
    pub(super) fn decide_with(
        &self,
        permits: u32,
        timeout: u64,
        now: impl Fn() -> u64,
    ) -> Decision {
        match &self.cluster {
            None => self
                .core
                .acquire_or(now, permits, timeout, || self.refused(permits)),
            Some(c) => match c.acquire(self, permits, timeout) {
                Decision::Refused => self.refused(permits),
                granted => granted,
            },
        }
    }

    /// [`Inner::decide`] for an async caller: a cluster limiter awaits the
    /// backend's answer instead of blocking the thread (the futures of the
    /// decorator chain decide synchronously, with [`Inner::decide_with`]).
    pub(super) async fn decide_async(&self, permits: u32, timeout: u64) -> Decision {
        match &self.cluster {
            None => self.decide(permits, timeout),
            Some(c) => match c.acquire_async(self, permits, timeout).await {
                Decision::Refused => self.refused(permits),
                granted => granted,
            },
        }
    }

    /// A fleet's decision as the caller sees it: a refusal stays one unless
    /// shadow mode lets the call through.
    #[inline(always)]
    pub(super) fn shadowed(&self, decision: Decision, permits: u32) -> Decision {
        match decision {
            Decision::Refused => self.refused(permits),
            granted => granted,
        }
    }

    /// A refusal, or in shadow mode a grant that reserves nothing, with the
    /// refusal published.
    #[cold]
    #[inline(never)]
    pub(super) fn refused(&self, permits: u32) -> Decision {
        if !self.shadow.load(Ordering::Relaxed) {
            return Decision::Refused;
        }
        self.events
            .publish(|| RateLimiterEvent::ShadowRefusal { permits });
        Decision::Granted { wait: 0 }
    }

    #[inline]
    pub(super) fn publish(&self, decision: Decision, permits: u32) {
        // Checked here so that the hot path inlines a load and a branch, not
        // the publisher.
        if self.events.is_active() {
            self.publish_acquire(decision, permits);
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn publish_acquire(&self, decision: Decision, permits: u32) {
        self.events.publish(|| acquire_event(decision, permits));
    }

    /// [`Inner::publish_acquire`] at `stamp`'s time.
    #[inline]
    pub(super) fn publish_acquire_stamped(
        &self,
        decision: Decision,
        permits: u32,
        stamp: &mut Stamp,
    ) {
        self.events
            .publish_stamped(stamp, || acquire_event(decision, permits));
    }

    #[inline]
    pub(super) fn finish(
        &self,
        decision: Decision,
        permits: u32,
    ) -> Result<(), RequestNotPermitted> {
        self.publish(decision, permits);
        self.outcome(decision)
    }

    /// What a published decision comes to for the caller.
    #[inline(always)]
    pub(super) fn outcome(&self, decision: Decision) -> Result<(), RequestNotPermitted> {
        match decision {
            Decision::Granted { .. } => Ok(()),
            Decision::Refused => Err(self.refusal()),
        }
    }

    #[cold]
    pub(super) fn refusal(&self) -> RequestNotPermitted {
        let (wait, _, _) = self.next_permit();
        RequestNotPermitted::new(self.name.clone()).with_retry_after(Duration::from_nanos(wait))
    }

    /// Nanoseconds until one permit is free, the permits available and the
    /// cycle, as of now.
    pub(super) fn next_permit(&self) -> (u64, i64, u64) {
        let t = self.core.elapsed(self.now());
        let (epoch, r) = self.core.refreshed(t);
        let wait = nanos_to_wait(1, r.available, t, r.cycle, epoch.limit, self.core.period());
        (wait, r.available, r.cycle)
    }
}

/// The event of a decision on `permits`.
#[inline]
fn acquire_event(decision: Decision, permits: u32) -> RateLimiterEvent {
    match decision {
        Decision::Granted { .. } => RateLimiterEvent::SuccessfulAcquire { permits },
        Decision::Refused => RateLimiterEvent::FailedAcquire { permits },
    }
}
