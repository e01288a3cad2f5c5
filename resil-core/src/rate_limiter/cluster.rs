//! A rate limiter's share of a fleet-wide limit: leased permits, spent
//! locally under one short lock, refilled from the backend.
//!
//! The pool holds the permits of one backend cycle and the local time at
//! which that cycle ends at the latest (the time the request was sent plus
//! the cycle's remaining time as the backend answered, so never later than
//! the backend's own boundary). A call takes from the pool; when the pool
//! runs below half a lease, one request for the next lease goes out in the
//! background; when it is empty, the call asks for its own permits and
//! waits for the answer at most the cluster timeout (blocking its thread,
//! or, from [`RateLimiter::acquire_permission`](super::RateLimiter::acquire_permission),
//! awaiting without blocking it). Only one request is in flight at a time:
//! callers that find one under way wait for its answer and take from what it
//! brought. Answers that come after their caller gave up still fill the pool
//! (permits already counted by the backend are not thrown away while their
//! cycle lasts).
//!
//! Every answer says how long the fleet has no permit left; until then a
//! call that cannot wait that long is refused here, without a round trip,
//! and no lease is taken ahead. So once a cycle is spent, the refusals of
//! the rest of it cost the backend nothing.

use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::Inner;
use super::state::Decision;
use crate::clock::{Clock, Nanos, SystemClock, TimerHandle};
use crate::cluster::{
    ClusterFailureMode, ClusterLimiterMetrics, PermitGrant, PermitRequest, RateLimiterCluster,
};
use crate::sync::{AtomicBool, AtomicU64, Ordering};

/// Answers kept for callers that wait; more would be for callers long gone.
const MAX_ANSWERS: usize = 64;

/// The cluster part of a rate limiter.
pub(crate) struct Cluster {
    pub(crate) settings: RateLimiterCluster,
    /// The key in effect (the settings' or the default).
    pub(crate) key: Arc<str>,
    shared: Arc<Shared>,
}

struct Shared {
    pool: Mutex<Pool>,
    answered: Condvar,
    round_trips: AtomicU64,
    leased: AtomicU64,
    fallback: AtomicU64,
    /// The key's state as this limiter last published it.
    pub(crate) up: AtomicBool,
}

#[derive(Default)]
struct Pool {
    cycle: u64,
    permits: u32,
    /// Local nanoseconds at which the pool's permits expire.
    deadline: u64,
    /// Local nanoseconds before which the fleet has no permit left (the
    /// last answer's `free_in`, counted from before it was asked).
    empty_until: u64,
    in_flight: bool,
    next_id: u64,
    /// Answers to the requests that a caller waits for, by request; an
    /// answer whose caller gave up is dropped once newer ones pile up.
    answers: Vec<(u64, Answer)>,
    /// Answers received so far: a waiting caller looks again when it moves.
    received: u64,
    /// Async callers waiting for an answer.
    wakers: Vec<Waker>,
    /// Leased permits spent, and left unspent when their cycle ended
    /// (counted under the lock: the hot path takes it anyway).
    spent: u64,
    discarded: u64,
    local_refusals: u64,
}

#[derive(Debug, Clone, Copy)]
enum Answer {
    /// The request's permits went into the pool.
    Pooled,
    Reserved(Duration),
    Refused,
    Failed,
}

impl Pool {
    /// Takes `permits` from the pool if it holds them and its cycle is not over.
    #[inline]
    fn take(&mut self, now: u64, permits: u32) -> bool {
        if now >= self.deadline {
            self.discard();
            return false;
        }
        if self.permits >= permits {
            self.permits -= permits;
            self.spent += u64::from(permits);
            return true;
        }
        false
    }

    fn discard(&mut self) {
        self.discarded += u64::from(self.permits);
        self.permits = 0;
    }

    /// Whether the fleet has no permit for longer than `timeout` from `now`.
    fn empty_beyond(&self, now: u64, timeout: u64) -> bool {
        self.empty_until.saturating_sub(now) > timeout
    }
}

/// One caller's way through an acquisition.
struct Acquire {
    permits: u32,
    timeout: u64,
    /// The request this caller sent, whose answer is its own.
    mine: Option<u64>,
    /// When it stops waiting (real time), once it waits.
    give_up: Option<Nanos>,
    /// It waited for an answer until it gave up.
    late: bool,
}

/// Where an acquisition is: decided, or waiting for an answer.
enum Step {
    Decided(Decision),
    /// Until the count of answers moves from `seen`, or `until` (real time).
    Wait {
        seen: u64,
        until: Nanos,
    },
}

impl Cluster {
    pub(crate) fn new(settings: RateLimiterCluster, name: &str) -> Self {
        let key: Arc<str> = settings
            .key
            .clone()
            .unwrap_or_else(|| crate::cluster::default_key("ratelimiter", name).into());
        let up = settings.backend.is_up(&key);
        Cluster {
            settings,
            key,
            shared: Arc::new(Shared {
                pool: Mutex::new(Pool::default()),
                answered: Condvar::new(),
                round_trips: AtomicU64::new(0),
                leased: AtomicU64::new(0),
                fallback: AtomicU64::new(0),
                up: AtomicBool::new(up),
            }),
        }
    }

    /// Records a change of the key's state; `true` when it is one.
    pub(crate) fn observe(&self, up: bool) -> bool {
        self.shared.up.swap(up, Ordering::AcqRel) != up
    }

    fn up(&self) -> bool {
        self.settings.backend.is_up(&self.key)
    }

    pub(crate) fn metrics(&self) -> ClusterLimiterMetrics {
        let s = &*self.shared;
        let (spent, discarded, local_refusals) = {
            let pool = s.pool.lock();
            (pool.spent, pool.discarded, pool.local_refusals)
        };
        ClusterLimiterMetrics {
            round_trips: s.round_trips.load(Ordering::Relaxed),
            leased: s.leased.load(Ordering::Relaxed),
            spent,
            discarded,
            fallback_calls: s.fallback.load(Ordering::Relaxed),
            local_refusals,
            up: self.up(),
        }
    }

    /// Leased permits that calls may still spend now.
    pub(crate) fn leased_now(&self, now: u64) -> i64 {
        let pool = self.shared.pool.lock();
        if now < pool.deadline {
            i64::from(pool.permits)
        } else {
            0
        }
    }

    /// Discards the leased permits (counted as discarded); returns how many.
    pub(crate) fn drain(&self, now: u64) -> i64 {
        let mut pool = self.shared.pool.lock();
        let n = if now < pool.deadline { pool.permits } else { 0 };
        pool.discard();
        i64::from(n)
    }

    /// The decision for `permits`, reserving up to `timeout` nanoseconds
    /// ahead; a wait for the backend blocks the thread.
    pub(crate) fn acquire(&self, inner: &Inner, permits: u32, timeout: u64) -> Decision {
        let mut a = Acquire::new(permits, timeout);
        loop {
            match self.step(inner, &mut a) {
                Step::Decided(decision) => return decision,
                Step::Wait { seen, until } => {
                    let real = SystemClock::new();
                    let mut pool = self.shared.pool.lock();
                    if pool.received == seen {
                        let left = until.saturating_duration_since(real.now());
                        a.late = left.is_zero()
                            || self.shared.answered.wait_for(&mut pool, left).timed_out()
                                && pool.received == seen;
                    }
                }
            }
        }
    }

    /// [`Cluster::acquire`], awaiting the backend's answer instead of
    /// blocking the thread.
    pub(crate) async fn acquire_async(
        &self,
        inner: &Inner,
        permits: u32,
        timeout: u64,
    ) -> Decision {
        match self.start_deciding(inner, permits, timeout) {
            Ok(decision) => decision,
            Err(mut deciding) => {
                std::future::poll_fn(|cx| self.poll_deciding(inner, &mut deciding, cx)).await
            }
        }
    }

    /// An async caller's acquisition: decided at once (from the lease, or a
    /// failure mode), or in progress, waiting for the backend's answer.
    pub(crate) fn start_deciding(
        &self,
        inner: &Inner,
        permits: u32,
        timeout: u64,
    ) -> Result<Decision, Deciding> {
        let mut acquire = Acquire::new(permits, timeout);
        match self.step(inner, &mut acquire) {
            Step::Decided(decision) => Ok(decision),
            Step::Wait { seen, until } => Err(Deciding {
                acquire,
                waiting: Some(Answered::new(seen, until)),
            }),
        }
    }

    /// Moves an acquisition in progress on: its decision once an answer
    /// came (or the wait for one ran out: the failure mode's).
    pub(crate) fn poll_deciding(
        &self,
        inner: &Inner,
        deciding: &mut Deciding,
        cx: &mut Context<'_>,
    ) -> Poll<Decision> {
        loop {
            if let Some(waiting) = deciding.waiting.as_mut() {
                let came = std::task::ready!(waiting.poll(&self.shared, cx));
                deciding.acquire.late = !came;
                deciding.waiting = None;
            }
            match self.step(inner, &mut deciding.acquire) {
                Step::Decided(decision) => return Poll::Ready(decision),
                Step::Wait { seen, until } => deciding.waiting = Some(Answered::new(seen, until)),
            }
        }
    }

    /// Moves an acquisition on as far as it goes without waiting.
    fn step(&self, inner: &Inner, a: &mut Acquire) -> Step {
        let shared = &*self.shared;
        let lease = self.settings.lease;
        loop {
            let (id, need) = {
                let mut pool = shared.pool.lock();
                let now = inner.now();
                if let Some(m) = a.mine
                    && let Some(at) = pool.answers.iter().position(|(id, _)| *id == m)
                {
                    let (_, answer) = pool.answers.swap_remove(at);
                    a.mine = None;
                    match answer {
                        Answer::Reserved(wait) => {
                            return Step::Decided(Decision::Granted {
                                wait: wait.as_nanos() as u64,
                            });
                        }
                        Answer::Refused => return Step::Decided(Decision::Refused),
                        Answer::Failed => {
                            drop(pool);
                            return Step::Decided(self.fallback(inner, a.permits, a.timeout));
                        }
                        // taken below if still there
                        Answer::Pooled => {}
                    }
                }
                if pool.take(now, a.permits) {
                    let low = pool.permits.saturating_mul(2) < lease;
                    let ahead =
                        low && lease > 1 && !pool.in_flight && now >= pool.empty_until && self.up();
                    if !ahead {
                        return Step::Decided(Decision::Granted { wait: 0 });
                    }
                    // a lease taken ahead: this call has its permits already
                    pool.in_flight = true;
                    pool.next_id += 1;
                    (pool.next_id, 0)
                } else if a.late || !self.up() {
                    drop(pool);
                    if a.late {
                        self.settings.backend.report_late(&self.key);
                    }
                    return Step::Decided(self.fallback(inner, a.permits, a.timeout));
                } else if a.mine.is_none() && pool.empty_beyond(now, a.timeout) {
                    // the fleet has nothing for longer than this call may wait
                    pool.local_refusals += 1;
                    return Step::Decided(Decision::Refused);
                } else if a.mine.is_none() && !pool.in_flight {
                    pool.in_flight = true;
                    pool.next_id += 1;
                    a.mine = Some(pool.next_id);
                    (pool.next_id, a.permits)
                } else {
                    let until = *a.give_up.get_or_insert_with(|| {
                        SystemClock::new()
                            .now()
                            .saturating_add(self.settings.timeout)
                    });
                    return Step::Wait {
                        seen: pool.received,
                        until,
                    };
                }
            };
            self.send(inner, id, need, a.timeout);
            if need == 0 {
                return Step::Decided(Decision::Granted { wait: 0 });
            }
        }
    }

    /// Sends one request; its answer fills the pool or answers request `id`.
    fn send(&self, inner: &Inner, id: u64, need: u32, timeout: u64) {
        let shared = Arc::clone(&self.shared);
        let limit = inner.core.epoch().limit as u32;
        let request = PermitRequest {
            key: Arc::clone(&self.key),
            limit,
            period: Duration::from_nanos(inner.core.period()),
            need,
            lease: self.settings.lease.max(need),
            timeout: Duration::from_nanos(timeout),
        };
        let sent_at = inner.now();
        let clock = inner.clock.clone();
        shared.round_trips.fetch_add(1, Ordering::Relaxed);
        self.settings.backend.take_permits(
            request,
            Box::new(move |result| {
                let mut pool = shared.pool.lock();
                pool.in_flight = false;
                if let Ok(grant) = &result {
                    pool.empty_until = sent_at.saturating_add(grant.free_in().as_nanos() as u64);
                }
                let answer = match result {
                    Ok(PermitGrant::Leased {
                        cycle,
                        permits,
                        cycle_left,
                        ..
                    }) => {
                        let deadline = sent_at.saturating_add(cycle_left.as_nanos() as u64);
                        let now = clock.now().as_u64();
                        shared
                            .leased
                            .fetch_add(u64::from(permits), Ordering::Relaxed);
                        if pool.cycle == cycle && now < pool.deadline {
                            pool.permits = pool.permits.saturating_add(permits);
                        } else {
                            pool.discard();
                            pool.cycle = cycle;
                            pool.permits = permits;
                            pool.deadline = deadline;
                        }
                        if now >= pool.deadline {
                            // the cycle ended while the answer travelled
                            pool.discard();
                        }
                        Answer::Pooled
                    }
                    Ok(PermitGrant::Reserved { wait, .. }) => Answer::Reserved(wait),
                    Ok(PermitGrant::Refused { .. }) => Answer::Refused,
                    Err(_) => Answer::Failed,
                };
                if need > 0 {
                    if pool.answers.len() >= MAX_ANSWERS {
                        // the oldest: its caller stopped waiting long ago
                        pool.answers.remove(0);
                    }
                    pool.answers.push((id, answer));
                }
                pool.received += 1;
                let wakers = std::mem::take(&mut pool.wakers);
                drop(pool);
                shared.answered.notify_all();
                for waker in wakers {
                    waker.wake();
                }
            }),
        );
    }

    /// The failure mode's decision while the backend is down.
    fn fallback(&self, inner: &Inner, permits: u32, timeout: u64) -> Decision {
        self.shared.fallback.fetch_add(1, Ordering::Relaxed);
        match self.settings.failure_mode {
            ClusterFailureMode::Local => inner.core.acquire(|| inner.now(), permits, timeout),
            ClusterFailureMode::Allow => Decision::Granted { wait: 0 },
            ClusterFailureMode::Deny => Decision::Refused,
        }
    }
}

impl Acquire {
    fn new(permits: u32, timeout: u64) -> Self {
        Acquire {
            permits,
            timeout,
            mine: None,
            give_up: None,
            late: false,
        }
    }
}

/// An async caller's acquisition in progress (see [`Cluster::start_deciding`]).
pub(crate) struct Deciding {
    acquire: Acquire,
    waiting: Option<Answered>,
}

/// The wait of an async caller for the next answer: `true` when one came,
/// `false` when `until` (real time, on resil's timer thread, whatever
/// clock the limiter reads) came first.
struct Answered {
    seen: u64,
    until: Nanos,
    timer: Option<(TimerHandle, Arc<Deadline>)>,
}

/// The real-time deadline's side: whether it passed, and whom to wake.
#[derive(Default)]
struct Deadline {
    // std's: resil's timer thread sets it, outside any loom model
    passed: std::sync::atomic::AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Answered {
    fn new(seen: u64, until: Nanos) -> Self {
        Answered {
            seen,
            until,
            timer: None,
        }
    }

    fn poll(&mut self, shared: &Shared, cx: &mut Context<'_>) -> Poll<bool> {
        {
            let mut pool = shared.pool.lock();
            if pool.received != self.seen {
                return Poll::Ready(true);
            }
            if !pool.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                pool.wakers.push(cx.waker().clone());
            }
        }
        let now = SystemClock::new().now();
        if now >= self.until {
            return Poll::Ready(false);
        }
        let until = self.until;
        let (_, deadline) = self.timer.get_or_insert_with(|| {
            let deadline = Arc::new(Deadline::default());
            let fired = Arc::clone(&deadline);
            let handle = SystemClock::new().schedule(
                until.saturating_duration_since(now),
                Box::new(move || {
                    fired.passed.store(true, Ordering::Release);
                    if let Some(waker) = fired.waker.lock().take() {
                        waker.wake();
                    }
                }),
            );
            (handle, deadline)
        });
        *deadline.waker.lock() = Some(cx.waker().clone());
        if deadline.passed.load(Ordering::Acquire) {
            return Poll::Ready(false);
        }
        Poll::Pending
    }
}
