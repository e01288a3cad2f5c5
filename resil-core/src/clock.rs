//! Time: one injectable, monotonic clock.
//!
//! Every primitive reads time, sleeps and schedules timers through a [`Clock`],
//! and nothing else in resil reads the system's clocks (clippy's
//! `disallowed-methods` enforces it). Three clocks come with the crate:
//!
//! | clock | reads | sleeps and timers | for |
//! | --- | --- | --- | --- |
//! | [`SystemClock`] (the default) | the TSC through `quanta` (about 10 ns), else `CLOCK_MONOTONIC` | real time | production |
//! | [`TokioClock`] | `tokio::time::Instant` | tokio timers | tests under `#[tokio::test(start_paused = true)]`, where tokio's paused time drives breakers and timers together |
//! | [`ManualClock`] | a shared counter | [`ManualClock::advance`] | deterministic tests: sleeping advances the clock, timers fire when it passes their deadline |
//!
//! A breaker measures the duration of every call, so reading the default
//! clock is on the hot path: that is why it is not `std::time::Instant` (about
//! twice the cost of a TSC read on the machines we measured).
//!
//! # Examples
//!
//! ```
//! use resil_core::clock::{Clock, ManualClock};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let shared = clock.clone();
//! clock.advance(Duration::from_millis(1500));
//! assert_eq!(shared.now().as_duration(), Duration::from_millis(1500));
//! ```
#![allow(clippy::disallowed_methods)] // the one module allowed to read the system's clocks

use std::fmt;
use std::num::NonZeroUsize;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point on a clock's monotonic timeline: nanoseconds since the clock's origin.
///
/// `Nanos` fits one `AtomicU64`, so primitives keep "open until" or "cycle
/// start" in atomics without locks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(u64);

impl Nanos {
    /// The clock's origin.
    pub const ZERO: Nanos = Nanos(0);
    /// The largest representable point (about 584 years after the origin).
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// Creates a point `nanos` nanoseconds after the origin.
    #[inline]
    pub const fn new(nanos: u64) -> Self {
        Nanos(nanos)
    }

    /// Returns the nanoseconds since the origin.
    #[inline]
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// Returns the time since the origin as a [`Duration`].
    #[inline]
    pub const fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// Converts a duration since the origin, saturating at [`Nanos::MAX`].
    #[inline]
    pub fn from_duration(duration: Duration) -> Self {
        Nanos(saturating_nanos(duration))
    }

    /// Returns the time elapsed from `earlier` to `self`, or zero if `earlier` is later.
    #[inline]
    pub const fn saturating_duration_since(self, earlier: Nanos) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// Returns the point `duration` after `self`, saturating at [`Nanos::MAX`].
    #[inline]
    pub fn saturating_add(self, duration: Duration) -> Nanos {
        Nanos(self.0.saturating_add(saturating_nanos(duration)))
    }

    /// Returns the whole seconds since the origin.
    #[inline]
    pub const fn as_secs(self) -> u64 {
        self.0 / 1_000_000_000
    }
}

/// Converts a duration to nanoseconds, saturating at `u64::MAX` (584 years).
#[inline]
pub(crate) fn saturating_nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// A task run by a clock's timer.
pub type Task = Box<dyn FnOnce() + Send + 'static>;

/// A monotonic time source that can also sleep and run timers.
///
/// Implement it to drive resil from your own notion of time; most code uses
/// [`SystemClock`], [`TokioClock`] or [`ManualClock`]. Primitives take a clock
/// by value (`CircuitBreaker::with_clock(name, config, clock)`), and clones of
/// the built-in clocks share their time.
#[diagnostic::on_unimplemented(
    note = "resil's clocks are `SystemClock`, `TokioClock` and `ManualClock`; a clock of your own implements `resil::clock::Clock`"
)]
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Returns the time elapsed since this clock's fixed origin.
    fn now(&self) -> Nanos;

    /// Blocks the current thread for `duration` of this clock's time.
    ///
    /// The default sleeps the thread for real.
    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }

    /// Returns a future that completes after `duration` of this clock's time.
    ///
    /// The default is a tokio timer, so it must be polled inside a tokio
    /// runtime with the time driver enabled.
    fn sleep_async(&self, duration: Duration) -> Sleep {
        Sleep::tokio(duration)
    }

    /// Runs `task` once `delay` of this clock's time has passed, unless the
    /// returned handle is cancelled or dropped first.
    ///
    /// The default runs it on resil's timer thread after `delay` of real time
    /// (on a runner thread of that timer, so a slow task delays no other).
    ///
    /// An implementation may run a task that is already due inline, inside
    /// `schedule` (as [`ManualClock`] does for a zero delay): resil never
    /// calls `schedule` while holding a lock that a task takes, so such a
    /// clock cannot deadlock it.
    fn schedule(&self, delay: Duration, task: Task) -> TimerHandle {
        global_timer().schedule(delay, task)
    }

    /// Maps a point of this clock to wall-clock time, for display in events.
    ///
    /// The default treats the origin as the Unix epoch.
    fn system_time(&self, at: Nanos) -> SystemTime {
        UNIX_EPOCH + at.as_duration()
    }

    /// Wraps this clock so that primitives can share it.
    #[doc(hidden)]
    fn into_shared(self) -> SharedClock
    where
        Self: Sized,
    {
        SharedClock::of(Repr::Custom(Arc::new(self)))
    }
}

/// The clock that primitives hold: a cheap-to-clone handle on any [`Clock`].
///
/// The built-in clocks are stored inline so that reading them is a direct call,
/// not a virtual one.
#[derive(Clone)]
pub struct SharedClock {
    repr: Repr,
    /// Which time it reads, kept beside it: comparing two clocks' times is
    /// comparing two words.
    key: ClockKey,
}

#[derive(Clone)]
enum Repr {
    /// Every system clock is the one.
    System(&'static SystemClock),
    Tokio(TokioClock),
    Manual(ManualClock),
    Custom(Arc<dyn Clock>),
}

impl SharedClock {
    #[inline]
    fn of(repr: Repr) -> Self {
        let key = match &repr {
            Repr::System(_) => ClockKey::SYSTEM,
            Repr::Tokio(c) => c.key,
            Repr::Manual(c) => ClockKey::of_shared(&c.inner),
            Repr::Custom(c) => ClockKey::of_shared(c),
        };
        SharedClock { repr, key }
    }

    /// Wraps any clock.
    pub fn new(clock: impl Clock) -> Self {
        clock.into_shared()
    }
}

/// Which time a clock reads: two clocks with the same key read the same time
/// (two handles on one clock, or two system clocks, which share the
/// process-wide origin).
///
/// One word, never zero: 1 for the system clock, an odd number of its own
/// for each tokio clock (and its clones), the address of a shared clock's
/// state (a `ManualClock`'s, a custom clock's), which is even.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClockKey(NonZeroUsize);

impl ClockKey {
    const SYSTEM: ClockKey = ClockKey(NonZeroUsize::MIN);

    /// A tokio clock's key: odd, from 3 on (odd numbers, added 2 at a
    /// time, are never 0).
    fn next_tokio() -> ClockKey {
        static NEXT: AtomicUsize = AtomicUsize::new(3);
        let key = NEXT.fetch_add(2, Ordering::Relaxed);
        ClockKey(NonZeroUsize::new(key).unwrap_or(NonZeroUsize::MIN))
    }

    /// A shared clock's key: the address of its state, which an `Arc`
    /// aligns at least as its counts (even).
    fn of_shared<T: ?Sized>(state: &Arc<T>) -> ClockKey {
        ClockKey(NonNull::from(&**state).cast::<()>().addr())
    }
}

impl SharedClock {
    /// Whether this is the [`SystemClock`].
    pub(crate) fn is_system(&self) -> bool {
        matches!(self.repr, Repr::System(_))
    }

    /// This clock's [`ClockKey`].
    #[inline(always)]
    pub(crate) fn key(&self) -> ClockKey {
        self.key
    }
}

/// One reading of the time, shared by the layers of a chain that run one
/// after the other with no wait and no user code between them (a call's
/// admission through every layer, or its completion): each layer asks for
/// the time on its own clock, and a layer on a clock of the same time as the
/// one last read gets that reading instead of reading again. Reading the
/// system clock costs about 13 ns on the benchmark machine (BENCHMARKS.md,
/// the `clock` group), more than most layers.
///
/// Whoever runs user code between two layers (the call itself, a fallback,
/// an event consumer) or waits calls [`Stamp::clear`]: the next layer reads
/// afresh, as it would have on its own.
#[derive(Default)]
pub(crate) struct Stamp {
    /// The key of the clock last read, if one was.
    key: Option<ClockKey>,
    at: Nanos,
}

impl Stamp {
    /// The time on `clock`: the last reading if it was of the same time.
    #[inline(always)]
    pub(crate) fn now(&mut self, clock: &SharedClock) -> Nanos {
        if self.key == Some(clock.key) {
            return self.at;
        }
        self.read(clock)
    }

    #[inline]
    fn read(&mut self, clock: &SharedClock) -> Nanos {
        let at = clock.now();
        (self.key, self.at) = (Some(clock.key), at);
        at
    }

    /// Forgets the reading: the next [`Stamp::now`] reads the clock.
    #[inline(always)]
    pub(crate) fn clear(&mut self) {
        self.key = None;
    }
}

impl Default for SharedClock {
    fn default() -> Self {
        SharedClock::of(Repr::System(SystemClock::global()))
    }
}

impl fmt::Debug for SharedClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::System(c) => c.fmt(f),
            Repr::Tokio(c) => c.fmt(f),
            Repr::Manual(c) => c.fmt(f),
            Repr::Custom(c) => c.fmt(f),
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match &$self.repr {
            Repr::System($c) => $e,
            Repr::Tokio($c) => $e,
            Repr::Manual($c) => $e,
            Repr::Custom($c) => $e,
        }
    };
}

impl SharedClock {
    #[inline(never)]
    fn now_other(&self) -> Nanos {
        dispatch!(self, c => c.now())
    }
}

impl Clock for SharedClock {
    /// The system clock after one test, inline; the test clocks (and yours)
    /// out of line.
    #[inline]
    fn now(&self) -> Nanos {
        match &self.repr {
            Repr::System(c) => c.now(),
            _ => self.now_other(),
        }
    }
    fn sleep(&self, duration: Duration) {
        dispatch!(self, c => c.sleep(duration))
    }
    fn sleep_async(&self, duration: Duration) -> Sleep {
        dispatch!(self, c => c.sleep_async(duration))
    }
    fn schedule(&self, delay: Duration, task: Task) -> TimerHandle {
        dispatch!(self, c => c.schedule(delay, task))
    }
    fn system_time(&self, at: Nanos) -> SystemTime {
        dispatch!(self, c => c.system_time(at))
    }
    fn into_shared(self) -> SharedClock {
        self
    }
}

/// The default clock: the CPU's time-stamp counter through `quanta` where it
/// is invariant, else the OS monotonic clock. Real sleeps, real timers.
#[derive(Clone)]
pub struct SystemClock {
    clock: quanta::Clock,
    origin: u64,
    wall_anchor: SystemTime,
}

impl SystemClock {
    /// Returns the process-wide system clock (calibrated once, on first use).
    pub fn new() -> Self {
        Self::global().clone()
    }

    /// The one system clock: every [`SystemClock`] is a copy of it, and a
    /// [`SharedClock`] on it holds only a reference.
    fn global() -> &'static SystemClock {
        static GLOBAL: OnceLock<SystemClock> = OnceLock::new();
        GLOBAL.get_or_init(|| {
            let clock = quanta::Clock::new();
            let origin = clock.raw();
            SystemClock {
                clock,
                origin,
                wall_anchor: SystemTime::now(),
            }
        })
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SystemClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SystemClock")
            .field("now", &self.now())
            .finish()
    }
}

impl Clock for SystemClock {
    #[inline]
    fn now(&self) -> Nanos {
        Nanos(self.clock.delta_as_nanos(self.origin, self.clock.raw()))
    }
    fn sleep_async(&self, duration: Duration) -> Sleep {
        Sleep::tokio(duration)
    }
    fn system_time(&self, at: Nanos) -> SystemTime {
        self.wall_anchor + at.as_duration()
    }
    fn into_shared(self) -> SharedClock {
        SharedClock::of(Repr::System(SystemClock::global()))
    }
}

/// A clock on `tokio::time::Instant`: under `#[tokio::test(start_paused = true)]`
/// tokio's paused time drives breakers, limiters, retries and timeouts together.
///
/// Timers run as tokio tasks when scheduled inside a runtime, else on resil's
/// timer thread in real time.
///
/// # Examples
///
/// ```
/// use resil_core::clock::{Clock, TokioClock};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let clock = TokioClock::new();
/// clock.sleep_async(Duration::from_secs(3600)).await; // returns at once: time is paused
/// assert_eq!(clock.now().as_duration(), Duration::from_secs(3600));
/// # }
/// ```
#[derive(Clone)]
pub struct TokioClock {
    origin: tokio::time::Instant,
    wall_anchor: SystemTime,
    /// Its clones' too: they share its origin.
    key: ClockKey,
}

impl TokioClock {
    /// Creates a clock whose origin is now.
    pub fn new() -> Self {
        TokioClock {
            origin: tokio::time::Instant::now(),
            wall_anchor: SystemTime::now(),
            key: ClockKey::next_tokio(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for TokioClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokioClock")
            .field("now", &self.now())
            .finish()
    }
}

impl Clock for TokioClock {
    #[inline]
    fn now(&self) -> Nanos {
        Nanos(saturating_nanos(
            tokio::time::Instant::now().saturating_duration_since(self.origin),
        ))
    }
    fn sleep_async(&self, duration: Duration) -> Sleep {
        Sleep::tokio(duration)
    }
    fn schedule(&self, delay: Duration, task: Task) -> TimerHandle {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let join = handle.spawn(async move {
                    tokio::time::sleep(delay).await;
                    task();
                });
                TimerHandle(TimerRepr::Tokio(join.abort_handle()))
            }
            Err(_) => global_timer().schedule(delay, task),
        }
    }
    fn system_time(&self, at: Nanos) -> SystemTime {
        self.wall_anchor + at.as_duration()
    }
    fn into_shared(self) -> SharedClock {
        SharedClock::of(Repr::Tokio(self))
    }
}

/// A clock that moves only when told to. Clones share the same time.
///
/// It starts at zero. [`Clock::sleep`] and [`Clock::sleep_async`] advance it by
/// the requested duration instead of waiting, so a retry with backoff runs
/// instantly and the clock shows the time it would have taken; timers run
/// (on the advancing thread) as soon as [`ManualClock::advance`] passes their
/// deadline.
///
/// # Examples
///
/// ```
/// use resil_core::clock::{Clock, ManualClock};
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let fired = Arc::new(AtomicBool::new(false));
/// let flag = fired.clone();
/// let _timer = clock.schedule(Duration::from_secs(5), Box::new(move || flag.store(true, Ordering::SeqCst)));
/// clock.advance(Duration::from_secs(4));
/// assert!(!fired.load(Ordering::SeqCst));
/// clock.advance(Duration::from_secs(1));
/// assert!(fired.load(Ordering::SeqCst));
/// ```
#[derive(Clone, Default)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

#[derive(Default)]
struct ManualInner {
    now: AtomicU64,
    timers: Mutex<TimerQueue>,
}

impl ManualClock {
    /// Creates a clock that reads zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves time forward by `by` (saturating) and runs every timer that is now due,
    /// in deadline order.
    pub fn advance(&self, by: Duration) {
        let by = saturating_nanos(by);
        let _ = self
            .inner
            .now
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_add(by))
            });
        self.run_due();
    }

    fn run_due(&self) {
        loop {
            let now = Nanos(self.inner.now.load(Ordering::Acquire));
            let task = lock(&self.inner.timers).pop_due(now);
            match task {
                Some(task) => task(),
                None => break,
            }
        }
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("now", &self.now())
            .finish()
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now(&self) -> Nanos {
        Nanos(self.inner.now.load(Ordering::Acquire))
    }
    fn sleep(&self, duration: Duration) {
        self.advance(duration);
    }
    fn sleep_async(&self, duration: Duration) -> Sleep {
        self.advance(duration);
        Sleep(SleepRepr::Ready { done: false })
    }
    fn schedule(&self, delay: Duration, task: Task) -> TimerHandle {
        let deadline = self.now().saturating_add(delay);
        let id = lock(&self.inner.timers).push(deadline, task);
        if delay.is_zero() {
            self.run_due();
        }
        TimerHandle(TimerRepr::Manual(Arc::downgrade(&self.inner), id))
    }
    fn system_time(&self, at: Nanos) -> SystemTime {
        UNIX_EPOCH + at.as_duration()
    }
    fn into_shared(self) -> SharedClock {
        SharedClock::of(Repr::Manual(self))
    }
}

use crate::sync::std_lock::lock;

mod handles;
mod timer;
pub use self::handles::{Sleep, TimerHandle};
use self::handles::{SleepRepr, TimerRepr};
use self::timer::{TimerQueue, global_timer};

/// Formats a duration the way resilience.toml writes it: `0ms`, `750ms`,
/// `1500ms`, `10s`, `1m 30s`, `2h`, or nanoseconds when it has a fraction of a
/// millisecond (`1500us` is `1500000ns`). The one printer of the crates:
/// errors, reports and the actuator print durations with it, and
/// `resil_config::duration::parse` reads each form back.
///
/// # Examples
///
/// ```
/// use resil_core::clock::format_duration;
/// use std::time::Duration;
///
/// assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
/// assert_eq!(format_duration(Duration::from_secs(90)), "1m 30s");
/// assert_eq!(format_duration(Duration::ZERO), "0ms");
/// ```
pub fn format_duration(d: Duration) -> String {
    if d.is_zero() {
        return "0ms".to_owned();
    }
    let nanos = d.subsec_nanos();
    let secs = d.as_secs();
    if !nanos.is_multiple_of(1_000_000) {
        return format!("{}ns", d.as_nanos());
    }
    let ms = u128::from(nanos / 1_000_000) + u128::from(secs) * 1000;
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let parts: Vec<String> = [(h, "h"), (m, "m"), (s, "s")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect();
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn cancelled_timers_leave_the_heap() {
        let mut queue = TimerQueue::default();
        let ids: Vec<u64> = (0..1000)
            .map(|i| queue.push(Nanos(1_000_000 + i), Box::new(|| {})))
            .collect();
        for id in &ids[10..] {
            queue.cancel(*id);
        }
        assert!(queue.heap_len() <= 2 * 10 + 16, "{}", queue.heap_len());
        let mut due = 0;
        while queue.pop_due(Nanos(u64::MAX)).is_some() {
            due += 1;
        }
        assert_eq!(due, 10, "the live timers are all still there");
    }

    #[test]
    fn a_slow_timer_task_does_not_delay_the_next_timer() {
        let clock = SystemClock::new();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (entered, has_entered) = std::sync::mpsc::channel::<()>();
        let slow = clock.schedule(
            Duration::ZERO,
            Box::new(move || {
                let _ = entered.send(());
                let _ = released.recv_timeout(Duration::from_secs(30));
            }),
        );
        has_entered
            .recv_timeout(Duration::from_secs(30))
            .expect("the slow task starts");
        let (fired, has_fired) = std::sync::mpsc::channel::<()>();
        let next = clock.schedule(
            Duration::from_millis(1),
            Box::new(move || {
                let _ = fired.send(());
            }),
        );
        // Before runners, this waited for the slow task (30 s) and failed.
        let on_time = has_fired.recv_timeout(Duration::from_secs(10));
        let _ = release.send(());
        assert!(on_time.is_ok(), "the second timer waited for the first");
        drop((slow, next));
    }

    #[test]
    fn manual_clock_clones_share_time() {
        let a = ManualClock::new();
        let b = a.clone();
        assert_eq!(a.now(), Nanos::ZERO);
        b.advance(Duration::from_millis(7));
        assert_eq!(a.now(), Nanos::new(7_000_000));
    }

    #[test]
    fn manual_timers_fire_in_order_and_cancel() {
        let clock = ManualClock::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let push = |v: u32| {
            let log = log.clone();
            Box::new(move || log.lock().unwrap().push(v)) as Task
        };
        let _a = clock.schedule(Duration::from_secs(3), push(3));
        let _b = clock.schedule(Duration::from_secs(1), push(1));
        let c = clock.schedule(Duration::from_secs(2), push(2));
        c.cancel();
        clock.advance(Duration::from_secs(10));
        assert_eq!(*log.lock().unwrap(), vec![1, 3]);
    }

    #[test]
    fn dropped_handle_cancels() {
        let clock = ManualClock::new();
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        drop(clock.schedule(
            Duration::from_secs(1),
            Box::new(move || {
                h.fetch_add(1, Ordering::SeqCst);
            }),
        ));
        clock.advance(Duration::from_secs(2));
        assert_eq!(hits.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn system_clock_is_monotonic() {
        let c = SystemClock::new();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
    }

    #[test]
    fn a_stamp_is_shared_only_by_clocks_of_the_same_time() {
        let a = ManualClock::new();
        let b = ManualClock::new();
        b.advance(Duration::from_secs(5));
        let (a1, a2, b1) = (
            a.clone().into_shared(),
            a.clone().into_shared(),
            b.into_shared(),
        );
        let (s1, s2) = (
            SystemClock::new().into_shared(),
            SystemClock::new().into_shared(),
        );
        assert!(a1.key() == a2.key() && s1.key() == s2.key());
        assert!(a1.key() != b1.key() && a1.key() != s1.key());
        // a tokio clock's clones read its time; another tokio clock has an
        // origin of its own
        let t = TokioClock::new();
        let (t1, t2, u1) = (
            t.clone().into_shared(),
            t.into_shared(),
            TokioClock::new().into_shared(),
        );
        assert!(t1.key() == t2.key());
        assert!(t1.key() != u1.key() && t1.key() != s1.key() && t1.key() != a1.key());
        // a clock of the user's: its clones share its key
        #[derive(Debug)]
        struct Fixed;
        impl Clock for Fixed {
            fn now(&self) -> Nanos {
                Nanos::ZERO
            }
        }
        let (c1, c2) = (SharedClock::new(Fixed), SharedClock::new(Fixed));
        assert!(c1.key() == c1.clone().key() && c1.key() != c2.key() && c1.key() != s1.key());

        // one clock (two handles on it): one reading, until cleared
        let mut stamp = Stamp::default();
        assert_eq!(stamp.now(&a1), Nanos::ZERO);
        a.advance(Duration::from_secs(1));
        assert_eq!(stamp.now(&a2), Nanos::ZERO);
        stamp.clear();
        assert_eq!(stamp.now(&a2), Nanos::new(1_000_000_000));

        // another clock's time is its own, and becomes the reading
        assert_eq!(stamp.now(&b1), Nanos::new(5_000_000_000));
        a.advance(Duration::from_secs(1));
        assert_eq!(stamp.now(&a1), Nanos::new(2_000_000_000));
    }

    #[test]
    fn nanos_saturate() {
        assert_eq!(
            Nanos::MAX.saturating_add(Duration::from_secs(1)),
            Nanos::MAX
        );
        assert_eq!(Nanos::from_duration(Duration::MAX), Nanos::MAX);
        assert_eq!(
            Nanos::new(5).saturating_duration_since(Nanos::new(9)),
            Duration::ZERO
        );
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_paused_time_and_timers() {
        let clock = TokioClock::new();
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let _t = clock.schedule(
            Duration::from_secs(60),
            Box::new(move || {
                h.fetch_add(1, Ordering::SeqCst);
            }),
        );
        clock.sleep_async(Duration::from_secs(61)).await;
        assert_eq!(clock.now().as_secs(), 61);
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }
}
