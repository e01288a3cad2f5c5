//! A breaker's share of the fleet's half-open probe budget.
//!
//! A call that gets one of the process's own HALF_OPEN permits also takes a
//! probe from the fleet's budget (one round trip, at most the cluster
//! timeout). Refused there, it gives its local permit back and is not
//! permitted. The process keeps the tokens of the probes it holds; a probe
//! that records a result spends its token (it stays counted for the
//! episode), one that is released or ignored gives it back. A process that
//! leaves HALF_OPEN (on its probes' results, on
//! `max-wait-duration-in-half-open-state`, or by hand) ends the episode for
//! the fleet, and processes still HALF_OPEN probe a new one. Tokens are
//! interchangeable within a process, so the low-level protocol
//! (`try_acquire_permission`, `on_success`, ...) needs no handle per call.
//!
//! Each process decides on its own probes, after
//! `min(minimum_number_of_calls, permitted)` of them. When the fleet's
//! probes are spread so thinly that no process gets that many, none
//! decides: `max_wait_duration_in_half_open_state` (set it with a shared
//! budget) sends them back to OPEN, which ends the episode; without it, the
//! episode's key expires twice the probe expiry after its last probe.
//!
//! While the backend is down, or slower than the timeout, a probe goes by
//! the process's own budget alone.

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::clock::{Clock, SystemClock};
use crate::cluster::{CircuitBreakerCluster, ProbeRequest};

pub(crate) struct Cluster {
    pub(crate) settings: CircuitBreakerCluster,
    key: Arc<str>,
    budget: u32,
    /// Tokens of the probes this process holds.
    held: Mutex<Vec<u64>>,
    /// The backend's state as this breaker last published it.
    up: std::sync::atomic::AtomicBool,
}

/// What a probe request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The fleet's budget had room: the call is a probe.
    Taken,
    /// The fleet has used its budget for this episode.
    Refused,
    /// No answer (down, failed or late): the process's own budget decides.
    Local,
}

#[derive(Default)]
struct Slot {
    answer: Option<Option<bool>>,
    abandoned: bool,
}

impl Cluster {
    pub(crate) fn new(settings: CircuitBreakerCluster, name: &str, budget: u32) -> Self {
        let key = settings
            .key
            .clone()
            .unwrap_or_else(|| format!("resil:circuitbreaker:{name}").into());
        let up = settings.backend.is_up();
        Cluster {
            settings,
            key,
            budget,
            held: Mutex::new(Vec::new()),
            up: std::sync::atomic::AtomicBool::new(up),
        }
    }

    /// Records a change of the backend's state; `true` when it is one.
    pub(crate) fn observe(&self, up: bool) -> bool {
        self.up.swap(up, std::sync::atomic::Ordering::AcqRel) != up
    }

    /// Takes one probe of the fleet's budget, waiting at most the timeout.
    pub(crate) fn take(&self) -> Probe {
        let backend = &self.settings.backend;
        if !backend.is_up() {
            return Probe::Local;
        }
        let token = fastrand::u64(..);
        let slot = Arc::new((Mutex::new(Slot::default()), Condvar::new()));
        let answer = Arc::clone(&slot);
        let late_backend = Arc::clone(backend);
        let key = Arc::clone(&self.key);
        backend.take_probe(
            ProbeRequest {
                key: Arc::clone(&self.key),
                budget: self.budget,
                expiry: self.settings.probe_expiry,
                token,
            },
            Box::new(move |result| {
                let (lock, cv) = &*answer;
                let mut s = lock.lock();
                let taken = result.ok();
                if s.abandoned {
                    // the caller went by its own budget: give the probe back
                    if taken == Some(true) {
                        late_backend.finish_probe(key, token, false);
                    }
                    return;
                }
                s.answer = Some(taken);
                cv.notify_all();
            }),
        );
        let real = SystemClock::new();
        let give_up = real.now().saturating_add(self.settings.timeout);
        let (lock, cv) = &*slot;
        let mut s = lock.lock();
        loop {
            match s.answer {
                Some(Some(true)) => {
                    self.held.lock().push(token);
                    return Probe::Taken;
                }
                Some(Some(false)) => return Probe::Refused,
                Some(None) => return Probe::Local,
                None => {}
            }
            let left = give_up.saturating_duration_since(real.now());
            if left.is_zero() || cv.wait_for(&mut s, left).timed_out() && s.answer.is_none() {
                s.abandoned = true;
                drop(s);
                backend.report_late();
                return Probe::Local;
            }
        }
    }

    /// Ends one of this process's probes: `recorded` spends it.
    pub(crate) fn finish(&self, recorded: bool) {
        let token = self.held.lock().pop();
        if let Some(token) = token {
            self.settings
                .backend
                .finish_probe(Arc::clone(&self.key), token, recorded);
        }
    }

    /// This process left its half-open episode: the fleet starts afresh.
    pub(crate) fn end_episode(&self) {
        self.held.lock().clear();
        self.settings.backend.end_probes(Arc::clone(&self.key));
    }

    /// The backend's state.
    pub(crate) fn backend_up(&self) -> bool {
        self.settings.backend.is_up()
    }
}
