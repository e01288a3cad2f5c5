//! How a breaker times its calls: the clock it was given, or a coarse
//! reading of the system clock where that cannot hide a slow call.
//!
//! A breaker times every call, from its permission to its end, to tell slow
//! calls (strictly longer than `slow_call_duration_threshold`). Reading the
//! system clock (the TSC through quanta) costs about 13 ns on the benchmark
//! machine, twice a call: more than the rest of a healthy call. So where
//! nothing needs a finer duration, a call is timed with a coarse reading
//! instead: one load of a time that a ticker thread refreshes every
//! millisecond ([`TICK`]). That is the case when
//!
//! - the breaker runs on the [`SystemClock`](crate::clock::SystemClock)
//!   (a test clock is always read: it moves only when told to),
//! - its window counts calls (a time window buckets each call by the
//!   second it ends in, which a coarse end could put one bucket early),
//! - its slow-call threshold is at least [`COARSE_FLOOR`] (1 s, a thousand
//!   ticks; Resilience4j's default is 60 s),
//! - and no event is consumed (no subscriber, no recent-events buffer): an
//!   event carries the call's duration, which the metrics' timers record,
//!   so with a consumer every call is timed with the clock itself.
//!
//! A coarse reading lags the clock by at most a tick (more only while the
//! ticker thread is kept off every CPU), so a coarse duration is within a
//! tick of the call's. It cannot hide a slow call: a call whose coarse
//! duration passes half its threshold is timed again at its end with the
//! clock itself (see `Inner::finish`), so a slow
//! call would go unseen only if the ticker were kept from running for half
//! the threshold (30 s by default). A call within a tick below the threshold
//! may count as slow.
//!
//! The ticker is one process-wide thread, started by the first coarse
//! reading; after a second without one it stores 0 (no reading) and sleeps
//! until a call finds it so and wakes it.

use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, SystemTime};

use crate::clock::{Clock, Nanos, SharedClock, Sleep, Stamp, SystemClock, Task, TimerHandle};
use crate::sync::std_lock::lock;

/// How often the ticker refreshes its reading.
pub(crate) const TICK: Duration = Duration::from_millis(1);

/// The smallest slow-call threshold timed with the coarse reading: a
/// thousand ticks.
pub(crate) const COARSE_FLOOR: Duration = Duration::from_secs(1);

/// Whether settings with this window type (`count`: a count window) and
/// slow-call threshold allow timing calls coarsely, on the system clock.
pub(crate) fn coarse_eligible(count: bool, slow_call_nanos: u64) -> bool {
    count && u128::from(slow_call_nanos) >= COARSE_FLOOR.as_nanos()
}

/// The ticker checks for readers every this many ticks, and sleeps after
/// [`IDLE_CHECKS`] checks in a row found none.
const CHECK_EVERY: u32 = 100;
const IDLE_CHECKS: u32 = 10;

/// The coarse reading and what the ticker and the readers share, on one
/// cache line (the ticker writes it once a tick; readers only load it).
#[repr(align(64))]
struct Ticker {
    /// The system clock's time at the last tick, or 0 while the ticker sleeps.
    recent: AtomicU64,
    /// Set by a reader since the ticker's last check.
    used: AtomicBool,
    /// Set once the thread could not be spawned: every call reads the clock.
    failed: AtomicBool,
    /// Whether the ticker runs (or was asked to), under the lock its
    /// thread sleeps on.
    running: Mutex<Option<bool>>,
    wake: Condvar,
}

static TICKER: Ticker = Ticker {
    recent: AtomicU64::new(0),
    used: AtomicBool::new(false),
    failed: AtomicBool::new(false),
    running: Mutex::new(None),
    wake: Condvar::new(),
};

/// The coarse reading, or `None` while the ticker sleeps (the caller then
/// reads the clock and calls [`wake`]).
#[inline(always)]
fn recent() -> Option<Nanos> {
    let t = TICKER.recent.load(Ordering::Relaxed);
    if t == 0 {
        return None;
    }
    if !TICKER.used.load(Ordering::Relaxed) {
        TICKER.used.store(true, Ordering::Relaxed);
    }
    Some(Nanos::new(t))
}

/// The system clock's time, never 0 (0 means "no reading").
fn tick_reading(clock: &SystemClock) -> u64 {
    clock.now().as_u64().max(1)
}

/// Starts the ticker (its thread, the first time) with a fresh reading,
/// and returns the reading now published (so that the readings a thread
/// sees never go back), or `None` if the thread could not be spawned.
#[cold]
#[inline(never)]
fn wake() -> Option<Nanos> {
    if TICKER.failed.load(Ordering::Relaxed) {
        return None;
    }
    let mut running = lock(&TICKER.running);
    // under the lock, a running ticker has a reading (it stores 0 and
    // stops under it)
    if *running == Some(true) {
        return Some(Nanos::new(TICKER.recent.load(Ordering::Relaxed)));
    }
    let first = running.is_none();
    if first
        && std::thread::Builder::new()
            .name("resil-ticker".into())
            .spawn(run)
            .is_err()
    {
        TICKER.failed.store(true, Ordering::Relaxed);
        return None;
    }
    let t = tick_reading(&SystemClock::new());
    TICKER.recent.store(t, Ordering::Relaxed);
    *running = Some(true);
    if !first {
        TICKER.wake.notify_one();
    }
    Some(Nanos::new(t))
}

/// The ticker's thread: refreshes the reading every tick while calls read
/// it, sleeps once none did for a while.
fn run() {
    let clock = SystemClock::new();
    loop {
        let mut idle = 0;
        let mut ticks = 0;
        while idle < IDLE_CHECKS {
            std::thread::sleep(TICK);
            TICKER.recent.store(tick_reading(&clock), Ordering::Relaxed);
            ticks += 1;
            if ticks == CHECK_EVERY {
                ticks = 0;
                idle = if TICKER.used.swap(false, Ordering::Relaxed) {
                    0
                } else {
                    idle + 1
                };
            }
        }
        let mut running = lock(&TICKER.running);
        TICKER.recent.store(0, Ordering::Relaxed);
        *running = Some(false);
        while *running == Some(false) {
            running = TICKER
                .wake
                .wait(running)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

/// The breaker's clock: the clock it was given (which it dereferences to,
/// for deadlines and event stamps: [`CallClock::precise`]), and its own
/// [`Clock::now`], the reading that times a call (see the [module
/// documentation](self)).
pub(crate) struct CallClock {
    clock: SharedClock,
    /// [`COARSE`] and [`EVENTS`].
    mode: AtomicU8,
}

/// The settings allow timing calls coarsely: the system clock, a count
/// window, a slow-call threshold of at least [`COARSE_FLOOR`].
const COARSE: u8 = 1;
/// Events may be consumed: calls are timed with the clock itself.
const EVENTS: u8 = 2;

impl CallClock {
    pub(crate) fn new(clock: SharedClock) -> Self {
        CallClock {
            clock,
            mode: AtomicU8::new(0),
        }
    }

    /// Calls may be timed coarsely from now on, or not: `eligible` says
    /// whether the current settings allow it ([`coarse_eligible`]).
    pub(crate) fn set_coarse(&self, eligible: bool) {
        if eligible && self.clock.is_system() {
            self.mode.fetch_or(COARSE, Ordering::Relaxed);
        } else {
            self.mode.fetch_and(!COARSE, Ordering::Relaxed);
        }
    }

    /// The reading that wakes the sleeping ticker publishes (the clock's,
    /// if its thread could not be spawned).
    #[cold]
    #[inline(never)]
    fn woken(&self) -> Nanos {
        wake().unwrap_or_else(|| self.clock.now())
    }

    /// The start or end of a call in a chain: the coarse reading where the
    /// mode allows it, else the chain's reading of the clock, shared with
    /// the layers that run back to back with the breaker.
    #[inline(always)]
    pub(crate) fn now_in(&self, stamp: &mut Stamp) -> Nanos {
        if self.mode.load(Ordering::Relaxed) == COARSE {
            return match recent() {
                Some(t) => t,
                None => self.woken(),
            };
        }
        stamp.now(&self.clock)
    }

    /// The clock's own reading.
    #[inline]
    pub(crate) fn precise(&self) -> Nanos {
        self.clock.now()
    }

    /// Events may be consumed from now on (someone holds the publisher):
    /// calls are timed with the clock until a call finds none consumed.
    #[inline]
    pub(crate) fn expect_events(&self) {
        if self.mode.load(Ordering::Relaxed) & EVENTS == 0 {
            self.mode.fetch_or(EVENTS, Ordering::Relaxed);
        }
    }

    /// Keeps the mode in step with whether events are consumed (`active`),
    /// as a finished call found it.
    #[inline]
    pub(crate) fn observe_events(&self, active: bool) {
        let seen = self.mode.load(Ordering::Relaxed) & EVENTS != 0;
        if seen != active {
            self.events_changed(active);
        }
    }

    #[cold]
    #[inline(never)]
    fn events_changed(&self, active: bool) {
        if active {
            self.mode.fetch_or(EVENTS, Ordering::Relaxed);
        } else {
            self.mode.fetch_and(!EVENTS, Ordering::Relaxed);
        }
    }
}

/// [`Clock::now`] is the start or end of a call: the coarse reading where
/// the mode allows it, else the clock's; the rest is the clock's own.
impl Clock for CallClock {
    #[inline(always)]
    fn now(&self) -> Nanos {
        if self.mode.load(Ordering::Relaxed) == COARSE {
            return match recent() {
                Some(t) => t,
                None => self.woken(),
            };
        }
        self.clock.now()
    }

    fn sleep(&self, duration: Duration) {
        self.clock.sleep(duration);
    }

    fn sleep_async(&self, duration: Duration) -> Sleep {
        self.clock.sleep_async(duration)
    }

    fn schedule(&self, delay: Duration, task: Task) -> TimerHandle {
        self.clock.schedule(delay, task)
    }

    fn system_time(&self, at: Nanos) -> SystemTime {
        self.clock.system_time(at)
    }
}

impl fmt::Debug for CallClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallClock")
            .field("clock", &self.clock)
            .field("mode", &self.mode.load(Ordering::Relaxed))
            .finish()
    }
}

impl Deref for CallClock {
    type Target = SharedClock;

    #[inline]
    fn deref(&self) -> &SharedClock {
        &self.clock
    }
}

#[cfg(all(test, not(resil_loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn a_coarse_reading_follows_the_system_clock() {
        let clock = CallClock::new(SharedClock::default());
        assert!(coarse_eligible(true, 60_000_000_000));
        assert!(!coarse_eligible(false, 60_000_000_000));
        assert!(!coarse_eligible(true, 999_999_999));
        clock.set_coarse(true);
        let before = clock.precise();
        let first = clock.now(); // wakes the ticker if it sleeps
        // the reading trails the clock by at most a tick (plus scheduling)
        let mut last = first;
        for _ in 0..50 {
            std::thread::sleep(TICK);
            let t = clock.now();
            assert!(t >= last, "the coarse reading went back");
            assert!(t <= clock.precise(), "the coarse reading is ahead");
            last = t;
        }
        assert!(last > before, "the ticker does not tick");
        // with events expected, the clock itself is read
        clock.expect_events();
        let a = clock.now();
        let b = clock.precise();
        assert!(a <= b);
        clock.observe_events(false);
        assert_eq!(clock.mode.load(Ordering::Relaxed), COARSE);
    }

    #[test]
    fn a_test_clock_is_always_read() {
        let manual = ManualClock::new();
        let clock = CallClock::new(SharedClock::new(manual.clone()));
        clock.set_coarse(true);
        assert_eq!(clock.mode.load(Ordering::Relaxed), 0);
        manual.advance(Duration::from_secs(5));
        assert_eq!(clock.now(), Nanos::new(5_000_000_000));
    }
}
