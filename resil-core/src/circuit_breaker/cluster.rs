//! A breaker's part in the fleet's half-open episode.
//!
//! A call that gets one of the process's own HALF_OPEN permits also takes a
//! probe from the fleet's episode (one round trip, at most the cluster
//! timeout). Refused there, it gives its local permit back and is not
//! permitted. The process keeps the tokens of the probes it holds; a probe
//! that records a result reports it to the episode, one that is released
//! or ignored gives its token back to the budget. Tokens are
//! interchangeable within a process, so the low-level protocol
//! (`try_acquire_permission`, `on_success`, ...) needs no handle per call.
//!
//! The fleet decides, not the process: the outcomes of every process's
//! probes are counted together on the backend, and the report that brings
//! them to `min(minimum_number_of_calls, permitted)` takes the verdict with
//! the breaker's thresholds. The reporting process follows it when the
//! answer comes; the others learn it from the answer to their next probe
//! request or report, and follow it too, as does a process that reaches
//! HALF_OPEN after the verdict if the verdict came after it opened (it is
//! about the same outage; an older one is not, and the process starts a new
//! episode). So no spread of the probes leaves the fleet without a
//! decision, and a process that got no probe follows the others.
//!
//! A process that leaves HALF_OPEN on its own (its
//! `max-wait-duration-in-half-open-state`, or by hand) gives back the
//! probes it holds; the episode goes on for the others. A probe whose
//! process died comes back to the budget when its lease expires.
//!
//! While the backend is down, or slower than the timeout, a probe goes by
//! the process's own budget and its own half-open window decides, as
//! without a fleet.

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::State;
use super::core::{Check, Inner, Settings, Target, check};
use super::state::Slot as MetricsSlot;
use crate::clock::{Clock, Nanos, SystemClock};
use crate::cluster::{
    BackendError, CircuitBreakerCluster, EpisodeVerdict, FleetVerdict, ProbeGrant, ProbeReport,
    ProbeRequest,
};

pub(crate) struct Cluster {
    pub(crate) settings: CircuitBreakerCluster,
    pub(crate) key: Arc<str>,
    budget: u32,
    episode: Mutex<Episode>,
    /// The key's state as this breaker last published it.
    up: std::sync::atomic::AtomicBool,
    /// When the breaker last opened, on its clock (nanoseconds).
    opened_at: std::sync::atomic::AtomicU64,
}

/// This process's part in the fleet's episode.
#[derive(Default)]
struct Episode {
    /// The episode its current HALF_OPEN state takes part in, once an
    /// answer named it.
    joined: Option<u64>,
    /// The probes it holds: token and episode.
    held: Vec<(u64, u64)>,
}

/// What a probe request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The episode had a probe left: the call is one.
    Taken,
    /// The episode's probes are all out or spent, and it has not decided.
    Refused,
    /// The episode has decided: the process follows, and asks again.
    Decided(EpisodeVerdict),
    /// No answer (down, failed or late): the process's own budget decides.
    Local,
}

/// The probe counts that open: the breaker's thresholds for `minimum` outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decisive {
    pub(crate) minimum: u32,
    pub(crate) failures: u32,
    pub(crate) slow_calls: u32,
}

#[derive(Default)]
struct Slot {
    answer: Option<Option<ProbeGrant>>,
    abandoned: bool,
}

impl Cluster {
    pub(crate) fn new(settings: CircuitBreakerCluster, name: &str, budget: u32) -> Self {
        let key: Arc<str> = settings
            .key
            .clone()
            .unwrap_or_else(|| crate::cluster::default_key("circuitbreaker", name).into());
        let up = settings.backend.is_up(&key);
        Cluster {
            settings,
            key,
            budget,
            episode: Mutex::new(Episode::default()),
            up: std::sync::atomic::AtomicBool::new(up),
            opened_at: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Records a change of the key's state; `true` when it is one.
    pub(crate) fn observe(&self, up: bool) -> bool {
        self.up.swap(up, std::sync::atomic::Ordering::AcqRel) != up
    }

    /// The breaker opened at `at`: a verdict the fleet reaches from now on
    /// is about this outage.
    pub(crate) fn opened(&self, at: Nanos) {
        self.opened_at
            .store(at.as_u64(), std::sync::atomic::Ordering::Release);
    }

    /// Asks the fleet's episode for a probe at `now`, waiting at most the timeout.
    pub(crate) fn take(&self, now: Nanos) -> Probe {
        let backend = &self.settings.backend;
        if !backend.is_up(&self.key) {
            return Probe::Local;
        }
        let token = fastrand::u64(..);
        let slot = Arc::new((Mutex::new(Slot::default()), Condvar::new()));
        let answer = Arc::clone(&slot);
        let late_backend = Arc::clone(backend);
        let key = Arc::clone(&self.key);
        let joined = self.episode.lock().joined;
        backend.take_probe(
            ProbeRequest {
                key: Arc::clone(&self.key),
                budget: self.budget,
                expiry: self.settings.probe_expiry,
                token,
                episode: joined,
                opened_ago: now.saturating_duration_since(Nanos::new(
                    self.opened_at.load(std::sync::atomic::Ordering::Acquire),
                )),
            },
            Box::new(move |result| {
                let (lock, cv) = &*answer;
                let mut s = lock.lock();
                let grant = result.ok();
                if s.abandoned {
                    // the caller went by its own budget: give the probe back
                    if let Some(ProbeGrant::Taken { episode }) = grant {
                        late_backend.release_probe(key, episode, token);
                    }
                    return;
                }
                s.answer = Some(grant);
                cv.notify_all();
            }),
        );
        let real = SystemClock::new();
        let give_up = real.now().saturating_add(self.settings.timeout);
        let (lock, cv) = &*slot;
        let mut s = lock.lock();
        loop {
            match s.answer {
                Some(Some(grant)) => {
                    drop(s);
                    return self.answered(grant, token);
                }
                Some(None) => return Probe::Local,
                None => {}
            }
            let left = give_up.saturating_duration_since(real.now());
            if left.is_zero() || cv.wait_for(&mut s, left).timed_out() && s.answer.is_none() {
                s.abandoned = true;
                drop(s);
                backend.report_late(&self.key);
                return Probe::Local;
            }
        }
    }

    fn answered(&self, grant: ProbeGrant, token: u64) -> Probe {
        let mut e = self.episode.lock();
        match grant {
            ProbeGrant::Taken { episode } => {
                e.joined = Some(episode);
                e.held.push((token, episode));
                Probe::Taken
            }
            ProbeGrant::Refused { episode } => {
                e.joined = Some(episode);
                Probe::Refused
            }
            ProbeGrant::Decided(verdict) => {
                // a process that had joined none follows a verdict reached
                // since it opened, as if it had taken part
                e.joined.get_or_insert(verdict.episode);
                Probe::Decided(verdict)
            }
        }
    }

    /// Reports the outcome of one of this process's probes of the episode
    /// it takes part in; `answer` gets the episode's verdict once it has
    /// one. `false` when it holds none (the call was its own probe).
    pub(crate) fn report(
        &self,
        failed: bool,
        slow: bool,
        decisive: Decisive,
        answer: impl FnOnce(Result<Option<EpisodeVerdict>, BackendError>) + Send + 'static,
    ) -> bool {
        let (token, episode) = {
            let mut e = self.episode.lock();
            let Some(joined) = e.joined else {
                return false;
            };
            let Some(at) = e.held.iter().rposition(|(_, ep)| *ep == joined) else {
                return false;
            };
            e.held.swap_remove(at)
        };
        self.settings.backend.report_probe(
            ProbeReport {
                key: Arc::clone(&self.key),
                episode,
                token,
                failed,
                slow,
                minimum: decisive.minimum,
                failures_to_open: decisive.failures,
                slow_calls_to_open: decisive.slow_calls,
                expiry: self.settings.probe_expiry,
            },
            Box::new(answer),
        );
        true
    }

    /// Gives one of this process's probes back to the budget (a call not
    /// made, or whose error is ignored).
    pub(crate) fn release_one(&self) {
        let held = self.episode.lock().held.pop();
        if let Some((token, episode)) = held {
            self.settings
                .backend
                .release_probe(Arc::clone(&self.key), episode, token);
        }
    }

    /// Whether this process takes part in `episode`, which decided: then it
    /// leaves it (its probes are spent) and follows the verdict.
    pub(crate) fn follow(&self, episode: u64) -> bool {
        let mut e = self.episode.lock();
        if e.joined != Some(episode) {
            return false;
        }
        e.joined = None;
        e.held.clear();
        true
    }

    /// This process left HALF_OPEN on its own: the probes it holds go back
    /// to the budget, and its next HALF_OPEN joins afresh.
    pub(crate) fn leave(&self) {
        let held = {
            let mut e = self.episode.lock();
            e.joined = None;
            std::mem::take(&mut e.held)
        };
        for (token, episode) in held {
            self.settings
                .backend
                .release_probe(Arc::clone(&self.key), episode, token);
        }
    }

    /// The key's state.
    pub(crate) fn backend_up(&self) -> bool {
        self.settings.backend.is_up(&self.key)
    }
}

/// The breaker's side of the episode.
impl Inner {
    /// This process left HALF_OPEN: it gives its fleet probes back (after a
    /// verdict of the fleet it holds none).
    pub(super) fn end_episode(&self) {
        if let Some(c) = &self.cluster {
            c.leave();
        }
    }

    /// The fleet's episode decided: a process still HALF_OPEN in it follows.
    pub(super) fn follow_fleet(&self, verdict: EpisodeVerdict) {
        let Some(c) = &self.cluster else { return };
        let w = self.load();
        if w.state() != State::HalfOpen || !c.follow(verdict.episode) {
            return;
        }
        let target = match verdict.verdict {
            FleetVerdict::Closed => Target::Closed,
            FleetVerdict::Open => Target::Open,
        };
        self.transition_and_publish(Some(w.generation()), target);
    }

    /// Reports a HALF_OPEN outcome to the fleet's episode; `false` when the
    /// call was not one of the fleet's probes (the process decides on it).
    pub(super) fn report_to_fleet(
        &self,
        settings: &Settings,
        generation: u32,
        failed: bool,
        slow: bool,
    ) -> bool {
        let Some(c) = &self.cluster else {
            return false;
        };
        let config = &settings.config;
        let minimum = settings.half_open_minimum;
        let decisive = Decisive {
            minimum,
            failures: count_to_reach(config.failure_rate_threshold, u64::from(minimum)),
            slow_calls: count_to_reach(config.slow_call_rate_threshold, u64::from(minimum)),
        };
        let weak = self.weak_self();
        c.report(failed, slow, decisive, move |answer| {
            let Some(inner) = weak.upgrade() else { return };
            match answer {
                Ok(Some(verdict)) => inner.follow_fleet(verdict),
                Ok(None) => {}
                // the fleet cannot count it: the process decides on its own
                // window, which holds it
                Err(_) => inner.decide_half_open_locally(generation),
            }
        })
    }

    /// HALF_OPEN `generation` decides on its own window, if it can.
    pub(super) fn decide_half_open_locally(&self, generation: u32) {
        let w = self.load();
        if w.state() != State::HalfOpen || w.generation() != generation {
            return;
        }
        let settings = self.settings.load();
        let (cell, minimum_calls) = self.cell_in(settings, MetricsSlot::HalfOpen);
        let counts = cell.window.snapshot(self.clock.now());
        match check(&settings.config, counts, minimum_calls) {
            Check::BelowMinimum => {}
            Check::Below => self.transition_and_publish(Some(generation), Target::Closed),
            Check::Exceeded { .. } => self.transition_and_publish(Some(generation), Target::Open),
        }
    }
}

/// The fewest of `minimum` calls (failed, or slow) whose rate reaches
/// `threshold`, with [`rates`]' arithmetic; `minimum + 1` when none does.
/// What the fleet's episode compares its counts with, so that it decides
/// exactly as [`check`] would on the same calls.
pub(super) fn count_to_reach(threshold: f32, minimum: u64) -> u32 {
    let n = minimum as f32;
    let reaches = |k: u64| k as f32 * 100.0 / n >= threshold;
    let mut k = ((f64::from(threshold) * minimum as f64 / 100.0).ceil() as u64).min(minimum + 1);
    while k > 1 && reaches(k - 1) {
        k -= 1;
    }
    while k <= minimum && (k == 0 || !reaches(k)) {
        k += 1;
    }
    u32::try_from(k).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuit_breaker::CircuitBreakerConfig;
    use crate::circuit_breaker::window::Counts;

    /// The counts the fleet's episode opens at are exactly where [`check`]
    /// opens, with its `f32` arithmetic, for every threshold and size.
    #[test]
    fn the_fleets_counts_decide_as_the_window_does() {
        let thresholds = [
            0.001, 1.0, 10.0, 25.0, 33.333332, 33.333336, 50.0, 66.66667, 75.0, 99.99, 100.0,
        ];
        for threshold in thresholds {
            let config = CircuitBreakerConfig::builder()
                .failure_rate_threshold(threshold)
                .build()
                .unwrap();
            for minimum in 1..=40u64 {
                let k = u64::from(count_to_reach(threshold, minimum));
                for failed in 0..=minimum {
                    let counts = Counts {
                        calls: minimum,
                        failed,
                        slow: 0,
                        slow_failed: 0,
                    };
                    let opens = matches!(check(&config, counts, minimum), Check::Exceeded { .. });
                    assert_eq!(
                        opens,
                        failed >= k,
                        "{threshold}% of {minimum}: {failed} failed"
                    );
                }
            }
        }
    }
}
