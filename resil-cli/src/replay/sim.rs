//! One instance of the candidate configuration, run over the recorded
//! lines of its kind and name on its own manual clock.
//!
//! Each instance is the real resil-core primitive that
//! `resil::init()` would build from the file (through
//! `Resilience::builder()`), on a `ManualClock` moved to each line's time:
//! the algorithms are the library's, not copies. A time limiter's recorded
//! durations are held against its configured timeout (its rule is that
//! comparison; its timers wait on no manual clock).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil_config::Resilience;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig, BulkheadPermit};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerEvent, State};
use resil_core::clock::{Clock, ManualClock};
use resil_core::rate_limiter::RateLimiter;
use resil_core::retry::{Retry, RetryEvent};
use resil_core::time_limiter::TimeLimiter;

use super::input::{Kind, Line, Outcome};

/// A configuration file, read once, loaded again for each instance (each
/// on a clock of its own).
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) file: String,
    text: String,
}

impl Config {
    /// Reads and checks `path`: the problems `resil check` reports, or why
    /// it cannot be read.
    pub(crate) fn read(path: &std::path::Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let config = Config {
            file: path.display().to_string(),
            text,
        };
        config.load(ManualClock::new())?;
        Ok(config)
    }

    fn load(&self, clock: ManualClock) -> Result<Resilience, String> {
        Resilience::builder()
            .offline(true)
            .env_vars(Vec::<(String, String)>::new())
            .clock(clock)
            .file_contents(self.file.clone(), self.text.clone())
            .load()
            .map_err(|e| e.to_string())
    }
}

/// What one run of an instance counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    pub(crate) calls: u64,
    pub(crate) refusals: u64,
    /// When the breaker went to OPEN, from the recording's first line.
    pub(crate) opens: Vec<Duration>,
    pub(crate) retries: u64,
    /// A time limiter's calls that ran past its timeout.
    pub(crate) timeouts: u64,
    /// Calls (or attempts) the recording has no outcome for, given the
    /// nearest one of the same instance.
    pub(crate) inferred: u64,
}

/// The candidate's instance of one kind and name.
pub(crate) struct Sim {
    clock: ManualClock,
    /// Keeps the instance's registries (and its retry budget) alive.
    _loaded: Resilience,
    stats: Arc<Mutex<Stats>>,
    part: Part,
}

enum Part {
    Breaker(Breaker),
    Retry(RetrySim),
    Limiter(Arc<RateLimiter>),
    Bulkhead(BulkheadSim),
    TimeLimiter(Arc<TimeLimiter>),
}

impl Sim {
    /// The instance `name` of `kind` as `config` builds it.
    pub(crate) fn new(config: &Config, kind: Kind, name: &str) -> Result<Sim, String> {
        let clock = ManualClock::new();
        let loaded = config.load(clock.clone())?;
        let stats = Arc::new(Mutex::new(Stats::default()));
        let registries = loaded.registries();
        let part = match kind {
            Kind::CircuitBreaker => {
                let cb = registries.circuit_breakers().circuit_breaker(name);
                let (seen, at) = (stats.clone(), clock.clone());
                cb.event_publisher().on_event(move |e| {
                    if let CircuitBreakerEvent::StateTransition {
                        to: State::Open, ..
                    } = e.kind()
                    {
                        lock(&seen).opens.push(at.now().as_duration());
                    }
                });
                Part::Breaker(Breaker {
                    cb,
                    pending: VecDeque::new(),
                    last: None,
                })
            }
            Kind::Retry => {
                let retry = registries.retries().retry(name);
                let seen = stats.clone();
                retry.event_publisher().on_event(move |e| match e.kind() {
                    RetryEvent::Retry { .. } => lock(&seen).retries += 1,
                    RetryEvent::BudgetExhausted { .. } => lock(&seen).refusals += 1,
                    _ => {}
                });
                Part::Retry(RetrySim {
                    retry,
                    last_succeeded: false,
                })
            }
            Kind::RateLimiter => Part::Limiter(registries.rate_limiters().rate_limiter(name)),
            Kind::Bulkhead => {
                // the permits borrow the bulkhead: it lives as long as the replay
                let bulkhead: &'static Bulkhead =
                    Box::leak(Box::new(registries.bulkheads().bulkhead(name)));
                Part::Bulkhead(BulkheadSim::new(bulkhead))
            }
            Kind::ThreadPoolBulkhead => {
                // A pool admits a task while fewer than its threads and its
                // queue can hold are running or queued (a thread pool
                // executor's rule: a queue first, then threads up to the
                // maximum, then refusal): a bulkhead of that many permits,
                // which never waits, admits the same tasks. The pool starts
                // its threads for its first tasks: this one runs none.
                let pool = registries
                    .thread_pool_bulkheads()
                    .thread_pool_bulkhead(name);
                let config = BulkheadConfig::builder()
                    .max_concurrent_calls(pool.config().capacity())
                    .max_wait_duration(Duration::ZERO)
                    .build()
                    .map_err(|e| format!("thread-pool-bulkhead `{name}`: {e}"))?;
                let bulkhead: &'static Bulkhead =
                    Box::leak(Box::new(Bulkhead::with_clock(name, config, clock.clone())));
                Part::Bulkhead(BulkheadSim::new(bulkhead))
            }
            Kind::TimeLimiter => Part::TimeLimiter(registries.time_limiters().time_limiter(name)),
        };
        Ok(Sim {
            clock,
            _loaded: loaded,
            stats,
            part,
        })
    }

    /// Moves the clock to `at` (never back: a line written a little out of
    /// order runs at the time reached).
    fn advance_to(clock: &ManualClock, at: Duration) {
        let now = clock.now().as_duration();
        if at > now {
            clock.advance(at - now);
        }
    }

    /// Runs one recorded line, `at` from the recording's first line.
    pub(crate) fn feed(&mut self, at: Duration, line: &Line) {
        let clock = &self.clock;
        let stats = &self.stats;
        match &mut self.part {
            Part::Breaker(b) => b.feed(clock, stats, at, line),
            Part::Retry(r) => {
                Self::advance_to(clock, at);
                r.feed(stats, line);
            }
            Part::Limiter(limiter) => {
                Self::advance_to(clock, at);
                let permitted = limiter.reserve_permission(1).is_ok();
                let mut s = lock(stats);
                s.calls += 1;
                s.refusals += u64::from(!permitted);
            }
            Part::Bulkhead(b) => b.feed(clock, stats, at, line),
            Part::TimeLimiter(limiter) => time_limit(limiter, stats, line),
        }
    }

    /// Ends the run: what waits is settled, and the counts are returned.
    pub(crate) fn finish(mut self) -> Stats {
        let clock = &self.clock;
        let stats = &self.stats;
        match &mut self.part {
            Part::Breaker(b) => b.settle(clock, stats),
            Part::Bulkhead(b) => {
                b.held.clear();
                b.outstanding.clear();
            }
            Part::Retry(_) | Part::Limiter(_) | Part::TimeLimiter(_) => {}
        }
        let mut out = lock(stats).clone();
        out.opens.sort();
        out
    }
}

/// A recorded call's outcome, as the breaker is told it.
#[derive(Debug, Clone, Copy)]
struct Known {
    at: Duration,
    outcome: Outcome,
    duration: Duration,
}

/// Calls the recording refused wait here for the next outcome of the
/// instance, to take the nearer of it and the previous one; past this many
/// they take the previous one.
const MAX_PENDING: usize = 65_536;

struct Breaker {
    cb: Arc<CircuitBreaker>,
    /// Refused calls waiting for the next outcome.
    pending: VecDeque<Duration>,
    last: Option<Known>,
}

impl Breaker {
    fn feed(&mut self, clock: &ManualClock, stats: &Mutex<Stats>, at: Duration, line: &Line) {
        match line.outcome {
            Outcome::Refused => {
                if self.pending.len() >= MAX_PENDING {
                    self.settle(clock, stats);
                }
                self.pending.push_back(at);
            }
            Outcome::Success | Outcome::Error | Outcome::Ignored => {
                let known = Known {
                    at,
                    outcome: line.outcome,
                    duration: line.duration,
                };
                while let Some(p) = self.pending.pop_front() {
                    let nearer = match self.last {
                        Some(prev) if p.saturating_sub(prev.at) <= at.saturating_sub(p) => prev,
                        _ => known,
                    };
                    self.call(clock, stats, p, Some(nearer), true);
                }
                self.call(clock, stats, at, Some(known), false);
                self.last = Some(known);
            }
            _ => {}
        }
    }

    /// The refused calls still waiting take the previous outcome (none:
    /// the call is let through with no outcome, its permit given back).
    fn settle(&mut self, clock: &ManualClock, stats: &Mutex<Stats>) {
        while let Some(p) = self.pending.pop_front() {
            let last = self.last;
            self.call(clock, stats, p, last, true);
        }
    }

    fn call(
        &self,
        clock: &ManualClock,
        stats: &Mutex<Stats>,
        at: Duration,
        outcome: Option<Known>,
        inferred: bool,
    ) {
        Sim::advance_to(clock, at);
        lock(stats).calls += 1;
        if !self.cb.try_acquire_permission() {
            lock(stats).refusals += 1;
            return;
        }
        match outcome {
            Some(k) => {
                match k.outcome {
                    Outcome::Success => self.cb.on_success(k.duration),
                    Outcome::Error => self.cb.on_error(k.duration),
                    _ => self.cb.on_ignored_error(k.duration),
                }
                if inferred {
                    lock(stats).inferred += 1;
                }
            }
            None => self.cb.release_permission(),
        }
    }
}

struct RetrySim {
    retry: Arc<Retry>,
    /// Whether the previous call ended in a success: the outcome given to
    /// attempts the recording did not make.
    last_succeeded: bool,
}

impl RetrySim {
    fn feed(&mut self, stats: &Mutex<Stats>, line: &Line) {
        // the attempts that failed, then how the call went on
        let (failed, then) = match line.outcome {
            Outcome::Success => (line.attempts, Some(true)),
            Outcome::Error | Outcome::Refused => (line.attempts, None),
            Outcome::Ignored => {
                lock(stats).calls += 1;
                return;
            }
            _ => return,
        };
        lock(stats).calls += 1;
        let mut attempt = 0;
        let mut inferred = 0;
        let last = self.last_succeeded;
        let _ = self.retry.call(|| {
            attempt += 1;
            if attempt <= failed {
                return Err(());
            }
            let ok = then.unwrap_or_else(|| {
                inferred += 1;
                last
            });
            if ok { Ok(()) } else { Err(()) }
        });
        lock(stats).inferred += inferred;
        self.last_succeeded = line.outcome == Outcome::Success;
    }
}

struct BulkheadSim {
    bulkhead: &'static Bulkhead,
    /// The calls the recording let in, oldest first, with the candidate's
    /// permit when it let them in too: a recorded `finished` ends the oldest.
    outstanding: VecDeque<(Duration, Option<BulkheadPermit<'static>>)>,
    /// Calls the recording refused and the candidate let in, by when they
    /// end (after the last recorded call's duration).
    due: BinaryHeap<Reverse<(Duration, u64)>>,
    held: BTreeMap<u64, BulkheadPermit<'static>>,
    next: u64,
    last_duration: Duration,
}

impl BulkheadSim {
    fn new(bulkhead: &'static Bulkhead) -> Self {
        BulkheadSim {
            bulkhead,
            outstanding: VecDeque::new(),
            due: BinaryHeap::new(),
            held: BTreeMap::new(),
            next: 0,
            last_duration: Duration::ZERO,
        }
    }

    fn feed(&mut self, clock: &ManualClock, stats: &Mutex<Stats>, at: Duration, line: &Line) {
        while let Some(Reverse((end, id))) = self.due.peek().copied()
            && end <= at
        {
            self.due.pop();
            Sim::advance_to(clock, end);
            self.held.remove(&id);
        }
        Sim::advance_to(clock, at);
        match line.outcome {
            Outcome::Permitted => {
                let permit = self.bulkhead.try_acquire_permission().ok();
                let mut s = lock(stats);
                s.calls += 1;
                s.refusals += u64::from(permit.is_none());
                self.outstanding.push_back((at, permit));
            }
            Outcome::Refused => {
                let permit = self.bulkhead.try_acquire_permission().ok();
                let mut s = lock(stats);
                s.calls += 1;
                match permit {
                    None => s.refusals += 1,
                    Some(p) => {
                        s.inferred += 1;
                        if !self.last_duration.is_zero() {
                            let id = self.next;
                            self.next += 1;
                            self.held.insert(id, p);
                            self.due.push(Reverse((at + self.last_duration, id)));
                        }
                    }
                }
            }
            Outcome::Finished => {
                if let Some((start, permit)) = self.outstanding.pop_front() {
                    self.last_duration = at.saturating_sub(start);
                    drop(permit);
                }
            }
            _ => {}
        }
    }
}

/// A recorded call held against the candidate's timeout: a time limiter
/// gives up on a call that is not done when its timeout has passed, so a
/// call that took longer than the timeout times out, and one that took as
/// long or less ends as recorded (the limiter polls the call before its
/// timer). A call the recording timed out ran at least that long: under a
/// timeout as long or shorter it times out again; under a longer one how
/// long it would have run is not in the recording, and it is counted a
/// timeout, inferred. A candidate in shadow mode is counted as if it
/// enforced its timeout: its timeouts are the ones shadow mode reports.
fn time_limit(limiter: &TimeLimiter, stats: &Mutex<Stats>, line: &Line) {
    let timeout = limiter.config().timeout_duration();
    let mut s = lock(stats);
    match line.outcome {
        Outcome::Success | Outcome::Error => {
            s.calls += 1;
            s.timeouts += u64::from(line.duration > timeout);
        }
        Outcome::Timeout => {
            s.calls += 1;
            s.timeouts += 1;
            s.inferred += u64::from(timeout > line.duration);
        }
        _ => {}
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
