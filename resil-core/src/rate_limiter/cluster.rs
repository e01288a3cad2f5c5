//! A rate limiter's share of a fleet-wide limit: leased permits, spent
//! locally under one short lock, refilled from the backend.
//!
//! The pool holds the permits of one backend cycle and the local time at
//! which that cycle ends at the latest (the time the request was sent plus
//! the cycle's remaining time as the backend answered, so never later than
//! the backend's own boundary). A call takes from the pool; when the pool
//! runs below half a lease, one request for the next lease goes out in the
//! background; when it is empty, the call asks for its own permits and
//! waits for the answer at most the cluster timeout. Only one request is in
//! flight at a time: callers that find one under way wait for its answer
//! and take from what it brought. Answers that come after their caller gave
//! up still fill the pool (permits already counted by the backend are not
//! thrown away while their cycle lasts).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::Inner;
use super::state::Decision;
use crate::clock::{Clock, SystemClock};
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
    key: Arc<str>,
    shared: Arc<Shared>,
}

struct Shared {
    pool: Mutex<Pool>,
    answered: Condvar,
    round_trips: AtomicU64,
    leased: AtomicU64,
    fallback: AtomicU64,
    /// The backend's state as this limiter last published it.
    pub(crate) up: AtomicBool,
}

#[derive(Default)]
struct Pool {
    cycle: u64,
    permits: u32,
    /// Local nanoseconds at which the pool's permits expire.
    deadline: u64,
    in_flight: bool,
    next_id: u64,
    /// Answers to the requests that a caller waits for, by request; an
    /// answer whose caller gave up is dropped once newer ones pile up.
    answers: Vec<(u64, Answer)>,
    /// Leased permits spent, and left unspent when their cycle ended
    /// (counted under the lock: the hot path takes it anyway).
    spent: u64,
    discarded: u64,
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
}

impl Cluster {
    pub(crate) fn new(settings: RateLimiterCluster, name: &str) -> Self {
        let up = settings.backend.is_up();
        let key = settings
            .key
            .clone()
            .unwrap_or_else(|| format!("resil:ratelimiter:{name}").into());
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

    /// Records a change of the backend's state; `true` when it is one.
    pub(crate) fn observe(&self, up: bool) -> bool {
        self.shared.up.swap(up, Ordering::AcqRel) != up
    }

    pub(crate) fn metrics(&self) -> ClusterLimiterMetrics {
        let s = &*self.shared;
        let (spent, discarded) = {
            let pool = s.pool.lock();
            (pool.spent, pool.discarded)
        };
        ClusterLimiterMetrics {
            round_trips: s.round_trips.load(Ordering::Relaxed),
            leased: s.leased.load(Ordering::Relaxed),
            spent,
            discarded,
            fallback_calls: s.fallback.load(Ordering::Relaxed),
            up: self.settings.backend.is_up(),
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

    /// The decision for `permits`, reserving up to `timeout` nanoseconds ahead.
    pub(crate) fn acquire(&self, inner: &Inner, permits: u32, timeout: u64) -> Decision {
        let shared = &*self.shared;
        let lease = self.settings.lease;
        let backend = &self.settings.backend;
        // The wait on the backend is bounded in real time, whatever clock
        // the limiter reads (a manual clock in a test does not stop it);
        // read only by calls that wait.
        let real = SystemClock::new();
        let mut give_up = None;
        let mut late = false;
        let mut mine: Option<u64> = None;
        loop {
            let (id, need) = {
                let mut pool = shared.pool.lock();
                let now = inner.now();
                if let Some(m) = mine
                    && let Some(at) = pool.answers.iter().position(|(id, _)| *id == m)
                {
                    let (_, answer) = pool.answers.swap_remove(at);
                    mine = None;
                    match answer {
                        Answer::Reserved(wait) => {
                            return Decision::Granted {
                                wait: wait.as_nanos() as u64,
                            };
                        }
                        Answer::Refused => return Decision::Refused,
                        Answer::Failed => {
                            drop(pool);
                            return self.fallback(inner, permits, timeout);
                        }
                        // taken below if still there
                        Answer::Pooled => {}
                    }
                }
                if pool.take(now, permits) {
                    let low = pool.permits.saturating_mul(2) < lease;
                    if !(low && lease > 1 && !pool.in_flight && backend.is_up()) {
                        return Decision::Granted { wait: 0 };
                    }
                    // a lease taken ahead: this call has its permits already
                    pool.in_flight = true;
                    pool.next_id += 1;
                    (pool.next_id, 0)
                } else if late || !backend.is_up() {
                    drop(pool);
                    if late {
                        backend.report_late();
                    }
                    return self.fallback(inner, permits, timeout);
                } else if mine.is_none() && !pool.in_flight {
                    pool.in_flight = true;
                    pool.next_id += 1;
                    mine = Some(pool.next_id);
                    (pool.next_id, permits)
                } else {
                    let give_up = *give_up
                        .get_or_insert_with(|| real.now().saturating_add(self.settings.timeout));
                    let left = give_up.saturating_duration_since(real.now());
                    late = left.is_zero() || shared.answered.wait_for(&mut pool, left).timed_out();
                    continue;
                }
            };
            self.send(inner, id, need, timeout);
            if need == 0 {
                return Decision::Granted { wait: 0 };
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
                let answer = match result {
                    Ok(PermitGrant::Leased {
                        cycle,
                        permits,
                        cycle_left,
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
                    Ok(PermitGrant::Reserved { wait }) => Answer::Reserved(wait),
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
                drop(pool);
                shared.answered.notify_all();
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
