//! The current request's deadline: a thread-local that [`scope`] sets while
//! its future is polled and [`enter`] while its guard lives.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::clock::{Clock, Nanos, SharedClock, SystemClock};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once any deadline has been set in the process: until then reading
/// the deadline is this one load, and no thread-local is touched.
static USED: AtomicBool = AtomicBool::new(false);

thread_local! {
    static CURRENT: RefCell<Option<At>> = const { RefCell::new(None) };
}

/// When a request's time runs out: a point on a clock.
#[derive(Clone)]
pub(crate) struct At {
    clock: SharedClock,
    at: Nanos,
}

impl At {
    /// `timeout` after `now` on `clock`.
    pub(crate) fn after(clock: SharedClock, now: Nanos, timeout: Duration) -> At {
        At {
            clock,
            at: now.saturating_add(timeout),
        }
    }

    /// The time left, zero once passed.
    pub(crate) fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(self.clock.now())
    }

    /// The clock it is on.
    pub(crate) fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// The earlier of this point and `other`: an inner deadline can only
    /// shorten an outer one.
    pub(crate) fn earlier(self, other: Option<&At>) -> At {
        let Some(other) = other else { return self };
        let other_first = if other.clock.key() == self.clock.key() {
            other.at < self.at
        } else {
            other.remaining() < self.remaining()
        };
        if other_first { other.clone() } else { self }
    }
}

impl fmt::Debug for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("At")
            .field("remaining", &self.remaining())
            .finish()
    }
}

/// The current deadline, if any.
#[inline(always)]
pub(crate) fn current() -> Option<At> {
    if !USED.load(Ordering::Relaxed) {
        return None;
    }
    current_set()
}

#[inline(never)]
fn current_set() -> Option<At> {
    CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
}

/// The time left before the current request's deadline: `None` when no
/// deadline is set, zero once it has passed.
///
/// The deadline is set by [`scope`] (for a future, across its `.await`s),
/// [`enter`] (for blocking code on this thread), a `#[resil::deadline]`
/// function or the deadline layer of a chain; it travels with a call onto a
/// thread-pool bulkhead's worker.
///
/// # Examples
///
/// ```
/// use resil_core::deadline;
/// use std::time::Duration;
///
/// assert_eq!(deadline::remaining(), None);
/// let _guard = deadline::enter(Duration::from_secs(5));
/// assert!(deadline::remaining().unwrap() <= Duration::from_secs(5));
/// ```
#[inline(always)]
pub fn remaining() -> Option<Duration> {
    if !USED.load(Ordering::Relaxed) {
        return None;
    }
    current_set().map(|at| at.remaining())
}

/// `own`, or the time left before the deadline if that is shorter: `true`
/// when the deadline cut it.
#[inline(always)]
pub(crate) fn cut(own: Duration) -> (Duration, bool) {
    match remaining() {
        Some(left) if left < own => (left, true),
        _ => (own, false),
    }
}

/// A deadline set on this thread until dropped, restoring the one before.
pub(crate) struct Installed {
    previous: Option<At>,
    // The thread-local is this thread's: the guard must drop here.
    _thread: PhantomData<*const ()>,
}

impl Installed {
    /// Sets `at` (or the current deadline, if earlier) on this thread.
    pub(crate) fn new(at: At) -> Installed {
        if !USED.load(Ordering::Relaxed) {
            USED.store(true, Ordering::Relaxed);
        }
        let at = at.earlier(current().as_ref());
        let previous = CURRENT.with(|c| c.replace(Some(at)));
        Installed {
            previous,
            _thread: PhantomData,
        }
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.previous.take();
        let _ = CURRENT.try_with(|c| c.replace(previous));
    }
}

/// The deadline [`enter`] set on this thread, until dropped (then the one
/// before it is back).
#[must_use = "the deadline lasts while the guard lives"]
pub struct DeadlineGuard {
    _installed: Installed,
}

impl fmt::Debug for DeadlineGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlineGuard")
            .field("remaining", &remaining())
            .finish()
    }
}

/// Sets a deadline of now + `timeout` for blocking code on this thread, or
/// keeps the enclosing one if that is earlier, until the guard is dropped.
///
/// # Examples
///
/// ```
/// use resil_core::deadline;
/// use std::time::Duration;
///
/// let outer = deadline::enter(Duration::from_millis(800));
/// {
///     // An inner deadline can only shorten the outer one.
///     let _inner = deadline::enter(Duration::from_secs(60));
///     assert!(deadline::remaining().unwrap() <= Duration::from_millis(800));
/// }
/// drop(outer);
/// assert_eq!(deadline::remaining(), None);
/// ```
pub fn enter(timeout: Duration) -> DeadlineGuard {
    enter_on(SystemClock::new(), timeout)
}

/// [`enter`] on `clock` (a `ManualClock` in tests).
pub fn enter_on(clock: impl Clock, timeout: Duration) -> DeadlineGuard {
    let clock = clock.into_shared();
    let now = clock.now();
    DeadlineGuard {
        _installed: Installed::new(At::after(clock, now, timeout)),
    }
}

pin_project_lite::pin_project! {
    /// A future run with a deadline: see [`scope`].
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Scope<F> {
        at: At,
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for Scope<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _installed = Installed::new(this.at.clone());
        this.future.poll(cx)
    }
}

impl<F> fmt::Debug for Scope<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("remaining", &self.at.remaining())
            .finish_non_exhaustive()
    }
}

/// Runs `future` with a deadline of now + `timeout`, or the enclosing one
/// if that is earlier (an inner scope can only shorten): every pattern the
/// future calls through spends from it, across its `.await`s.
///
/// The deadline is fixed when `scope` is called; it is in force while the
/// future is polled (also when it is polled inside an earlier deadline,
/// which then wins).
///
/// # Examples
///
/// ```
/// use resil_core::deadline;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let left = deadline::scope(Duration::from_millis(800), async {
///     tokio::task::yield_now().await;
///     deadline::remaining()
/// })
/// .await;
/// assert!(left.unwrap() <= Duration::from_millis(800));
/// # }
/// ```
pub fn scope<F: Future>(timeout: Duration, future: F) -> Scope<F> {
    scope_on(SystemClock::new(), timeout, future)
}

/// [`scope`] on `clock` (a `TokioClock` under paused time, or a
/// `ManualClock`, in tests).
pub fn scope_on<F: Future>(clock: impl Clock, timeout: Duration, future: F) -> Scope<F> {
    let clock = clock.into_shared();
    let now = clock.now();
    Scope {
        at: At::after(clock, now, timeout).earlier(current().as_ref()),
        future,
    }
}

/// The time left before the current deadline formatted as a gRPC
/// `grpc-timeout` header value (at most 8 digits and a unit: `H`, `M`, `S`,
/// `m`, `u`, `n`), for an outgoing call; `None` without a deadline.
///
/// # Examples
///
/// ```
/// use resil_core::deadline;
/// use std::time::Duration;
///
/// assert_eq!(deadline::grpc_timeout(), None);
/// let _guard = deadline::enter_on(resil_core::clock::ManualClock::new(), Duration::from_millis(250));
/// assert_eq!(deadline::grpc_timeout().as_deref(), Some("250000u"));
/// ```
pub fn grpc_timeout() -> Option<String> {
    remaining().map(format_grpc_timeout)
}

/// The units of `grpc-timeout`, finest first, with their length in nanoseconds.
const GRPC_UNITS: [(u128, char); 6] = [
    (1, 'n'),
    (1_000, 'u'),
    (1_000_000, 'm'),
    (1_000_000_000, 'S'),
    (60_000_000_000, 'M'),
    (3_600_000_000_000, 'H'),
];

/// The most a `grpc-timeout` value holds: 8 digits.
const GRPC_MAX: u128 = 99_999_999;

/// Formats `timeout` as a `grpc-timeout` value: the finest unit whose value
/// fits 8 digits, rounded down (the callee gets no more time than is left).
pub fn format_grpc_timeout(timeout: Duration) -> String {
    let nanos = timeout.as_nanos();
    for (per, unit) in GRPC_UNITS {
        let value = nanos / per;
        if value <= GRPC_MAX {
            return format!("{value}{unit}");
        }
    }
    format!("{GRPC_MAX}H")
}

/// Parses a `grpc-timeout` value (1 to 8 ASCII digits and a unit); `None`
/// when malformed.
///
/// # Examples
///
/// ```
/// use resil_core::deadline::parse_grpc_timeout;
/// use std::time::Duration;
///
/// assert_eq!(parse_grpc_timeout("250m"), Some(Duration::from_millis(250)));
/// assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
/// assert_eq!(parse_grpc_timeout("123456789n"), None); // 9 digits
/// assert_eq!(parse_grpc_timeout("5s"), None); // seconds are `S`
/// ```
pub fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    let (digits, unit) = value.split_at_checked(value.len().checked_sub(1)?)?;
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let per = GRPC_UNITS
        .iter()
        .find(|(_, u)| unit.len() == 1 && unit.starts_with(*u))?
        .0;
    let value: u128 = digits.parse().ok()?;
    let nanos = u64::try_from(value * per).ok()?;
    Some(Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_round_trip_within_a_unit() {
        assert_eq!(format_grpc_timeout(Duration::ZERO), "0n");
        assert_eq!(
            format_grpc_timeout(Duration::from_nanos(99_999_999)),
            "99999999n"
        );
        assert_eq!(format_grpc_timeout(Duration::from_millis(100)), "100000u");
        assert_eq!(format_grpc_timeout(Duration::from_secs(5)), "5000000u");
        assert_eq!(format_grpc_timeout(Duration::from_secs(500)), "500000m");
        assert_eq!(format_grpc_timeout(Duration::from_secs(400_000)), "400000S");
        assert_eq!(format_grpc_timeout(Duration::MAX), "99999999H");
        for d in [1u64, 999, 1_000_001, 12_345_678_901, 7_200_000_000_000] {
            let d = Duration::from_nanos(d);
            let back = parse_grpc_timeout(&format_grpc_timeout(d)).unwrap();
            assert!(back <= d && d - back < d / 10_000_000 + Duration::from_nanos(1));
        }
    }

    #[test]
    fn malformed_grpc_timeouts_are_none() {
        for bad in [
            "",
            "m",
            "10",
            "10x",
            "-1S",
            "1.5S",
            "123456789u",
            " 1S",
            "1S ",
            "1é",
        ] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad:?}");
        }
        assert_eq!(parse_grpc_timeout("0n"), Some(Duration::ZERO));
        assert_eq!(parse_grpc_timeout("2M"), Some(Duration::from_secs(120)));
    }
}
