//! The limiter's state: Resilience4j's `(activeCycle, activePermissions)`
//! folded into one counter, updated with compare-and-swap.
//!
//! # The representation
//!
//! Resilience4j keeps an immutable `State(cycle, permissions)` in an
//! `AtomicReference` and refills lazily: at cycle `c` a state stored at cycle
//! `s` holds `min(permissions + (c - s) * limit, limit)`. Reservations drive
//! `permissions` below zero and later refills pay the debt back. That pair
//! needs about 96 bits (a cycle number that may count nanoseconds, a signed
//! permit count), more than one atomic word holds, and truncating the cycle
//! is unsound: an idle limiter would misread its age.
//!
//! The refill is linear until the cap, so the pair folds into one number.
//! Let `B(c)` be the permits issued from the limiter's creation to the end of
//! cycle `c` (`limit * (c + 1)` while the limit is unchanged) and `K` the
//! permits handed out (plus those the cap discarded). Then the permits
//! available at cycle `c` are `min(B(c) - K, limit)`: `K` is the only mutable
//! state. A grant adds its permits to `K`; applying the cap ("normalizing")
//! raises `K` to `B(c) - limit` and never changes an answer, so a refusal
//! writes nothing. For every sequence of operations this gives Resilience4j's
//! answers (the `proptest` model in `tests/rate_limiter.rs` checks it against
//! a transcription of `AtomicRateLimiter`).
//!
//! # Bounds
//!
//! `B(c)` grows by `limit` per cycle. With at most one permit per nanosecond
//! (`limit <= period`, checked by the configuration) `B(c) <= t + period`,
//! where `t` is the clock's time since creation, so `B` and `K` fit in `u64`
//! for the clock's whole range (584 years). A reservation is refused if it
//! would push `K` past `u64::MAX` or the debt past `i64::MAX` (a wait beyond
//! the end of the clock, or of a 292-year timeout); arithmetic saturates
//! instead of overflowing.
//!
//! # Limit changes
//!
//! A change of `limit_for_period` must not rewrite `K` (concurrent
//! compare-and-swaps would then mix two meanings), so `B` is kept piecewise:
//! an epoch `(limit, cycle, base)` says `B(c) = base + (c - cycle) * limit`
//! for `c >= cycle`. A change in cycle `x` starts the epoch
//! `(new limit, x, B_old(x))`: `B` is continuous, the current cycle keeps its
//! count (even above a lower new limit: the cap is not applied in the epoch's
//! first cycle), and refills from the next cycle on use the new limit. The
//! epoch is three words published with a sequence lock; writers (limit
//! changes and drains) are serialized by a mutex that the acquire path never
//! touches.

use crate::rate_limiter::config::RateLimiterConfig;
use crate::sync::{AtomicU64, Mutex, Ordering, fence, lock, spin_loop};

/// How `B(c)` grows from `cycle` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Epoch {
    /// Permits per cycle for refills after `cycle`.
    pub(crate) limit: u64,
    /// The cycle the epoch started in; the cap does not apply in it.
    pub(crate) cycle: u64,
    /// `B(cycle)`.
    pub(crate) base: u64,
}

impl Epoch {
    /// `B(c)` for `c >= self.cycle`, saturating at the end of the clock.
    #[inline]
    fn base_at(&self, c: u64) -> u64 {
        self.base
            .saturating_add((c - self.cycle).saturating_mul(self.limit))
    }
}

/// The state refreshed to a cycle: what Resilience4j's `calculateNextState`
/// computes before reserving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refreshed {
    pub(crate) cycle: u64,
    /// Permits available now; negative while reservations are outstanding.
    pub(crate) available: i64,
    /// `B(cycle)`.
    pub(crate) base: u64,
    /// `K` with the cap applied.
    pub(crate) consumed: u64,
}

/// The outcome of a request for permits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Granted; the caller may proceed after `wait` nanoseconds (0: now).
    Granted { wait: u64 },
    /// Refused: the permits come only after `wait` nanoseconds, beyond the timeout.
    Refused,
}

/// The lock-free core of a rate limiter (Resilience4j's `AtomicRateLimiter` state).
pub(crate) struct Core {
    /// The clock's reading at creation: cycles are counted from here.
    start: u64,
    period: u64,
    /// `floor((2^64 - 1) / period)`, to divide by the period with a multiply.
    reciprocal: u64,
    /// The cycle of a recent clock reading: the fast path's guess, checked
    /// against the clock before use.
    cycle_hint: AtomicU64,
    /// `u64::MAX / period`: the fast path serves cycles below it.
    last_cycle: u64,
    /// `K`: permits handed out since creation, plus those the cap discarded.
    consumed: AtomicU64,
    /// The epoch's sequence lock: odd while a writer is publishing.
    seq: AtomicU64,
    limit: AtomicU64,
    epoch_cycle: AtomicU64,
    base: AtomicU64,
    /// The timeout in nanoseconds, read at the start of each acquire.
    timeout: AtomicU64,
    /// Serializes limit changes and drains; never taken by acquires.
    writer: Mutex<()>,
}

impl Core {
    /// A full limiter at cycle 0 (Resilience4j's `State(config, 0, limit, 0)`),
    /// created when the clock read `start`.
    pub(crate) fn new(config: &RateLimiterConfig, start: u64) -> Self {
        let limit = u64::from(config.limit_for_period);
        let period = config.period_nanos();
        Core {
            start,
            period,
            reciprocal: u64::MAX / period,
            cycle_hint: AtomicU64::new(0),
            last_cycle: u64::MAX / period,
            consumed: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            limit: AtomicU64::new(limit),
            epoch_cycle: AtomicU64::new(0),
            base: AtomicU64::new(limit),
            timeout: AtomicU64::new(config.timeout_duration.as_nanos() as u64),
            writer: Mutex::new(()),
        }
    }

    /// The refresh period in nanoseconds.
    pub(crate) fn period(&self) -> u64 {
        self.period
    }

    /// The time since creation of the clock reading `now`.
    #[inline]
    pub(crate) fn elapsed(&self, now: u64) -> u64 {
        now.saturating_sub(self.start)
    }

    /// The current timeout in nanoseconds.
    #[inline]
    pub(crate) fn timeout(&self) -> u64 {
        self.timeout.load(Ordering::Relaxed)
    }

    /// Sets the timeout for acquires that start from now on.
    pub(crate) fn set_timeout(&self, nanos: u64) {
        let _serial = lock(&self.writer);
        self.timeout.store(nanos, Ordering::Relaxed);
    }

    /// The current epoch, read consistently.
    #[inline]
    pub(crate) fn epoch(&self) -> Epoch {
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 == 0 {
                let epoch = Epoch {
                    limit: self.limit.load(Ordering::Relaxed),
                    cycle: self.epoch_cycle.load(Ordering::Relaxed),
                    base: self.base.load(Ordering::Relaxed),
                };
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == s1 {
                    return epoch;
                }
            }
            spin_loop();
        }
    }

    /// Publishes a new epoch; the caller holds `writer`.
    fn publish(&self, epoch: Epoch) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        self.limit.store(epoch.limit, Ordering::Relaxed);
        self.epoch_cycle.store(epoch.cycle, Ordering::Relaxed);
        self.base.store(epoch.base, Ordering::Relaxed);
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// The state at `t` nanoseconds after creation, without changing it.
    #[inline]
    pub(crate) fn refreshed(&self, t: u64) -> (Epoch, Refreshed) {
        // The epoch first: its sequence lock orders this load after the
        // normalization a limit change makes before publishing an epoch.
        let epoch = self.epoch();
        let k = self.consumed.load(Ordering::Acquire);
        (epoch, refresh(&epoch, self.cycle_of(t, &epoch), k))
    }

    /// The cycle of `t`, and a hint for the fast path of [`Core::acquire`].
    #[inline]
    fn cycle_of(&self, t: u64, epoch: &Epoch) -> u64 {
        let c = divide(t, self.period, self.reciprocal);
        // Any value is a safe hint (the fast path checks it against the
        // clock), so a plain store, and only when it changes.
        if self.cycle_hint.load(Ordering::Relaxed) != c {
            self.cycle_hint.store(c, Ordering::Relaxed);
        }
        // A clock read on another core may lag the one that started the epoch.
        c.max(epoch.cycle)
    }

    /// Resilience4j's `updateStateWithBackOff`: refresh, compute the wait for
    /// `permits`, reserve them if the wait is within `timeout`, and publish
    /// with a compare-and-swap, retrying on contention. `now` reads the clock
    /// and is read again on every try, as Resilience4j does.
    ///
    /// The common case (the permits are there, in a cycle some caller has
    /// already seen) is inlined and leaves almost nothing between the clock
    /// read and the compare-and-swap: the epoch, the cycle hint, `B(hint)`
    /// and the count are read and checked first (Resilience4j too reads its
    /// state before the time), and the clock only has to confirm the hinted
    /// cycle, with a subtraction and a comparison instead of a division. Everything else (a new cycle, a count the cap must trim, a
    /// wait, a refusal, contention) takes the general loop, which gives the
    /// same answers.
    #[inline(always)]
    pub(crate) fn acquire(&self, now: impl Fn() -> u64, permits: u32, timeout: u64) -> Decision {
        self.acquire_or(now, permits, timeout, || Decision::Refused)
    }

    /// [`Core::acquire`], with `refused` deciding a refusal (shadow mode
    /// grants it instead); only the general loop calls it.
    #[inline(always)]
    pub(crate) fn acquire_or(
        &self,
        now: impl Fn() -> u64,
        permits: u32,
        timeout: u64,
        refused: impl FnOnce() -> Decision,
    ) -> Decision {
        let epoch = self.epoch();
        let hint = self.cycle_hint.load(Ordering::Relaxed);
        // Below `last_cycle`, `B(hint) <= (hint + 1) * period` fits in `u64`
        // (each cycle adds at most `period` permits), so plain arithmetic is exact.
        let usable = hint >= epoch.cycle && hint < self.last_cycle;
        // The hinted cycle's start on the clock.
        let hint_start = self.start.wrapping_add(hint.wrapping_mul(self.period));
        let base = epoch
            .base
            .wrapping_add(hint.wrapping_sub(epoch.cycle).wrapping_mul(epoch.limit));
        // The count a cycle may hold without the cap: the limit, or anything
        // in the epoch's first cycle. Debts wrap to at least `2^63` and fail
        // both bounds.
        let cap = if hint == epoch.cycle {
            i64::MAX as u64
        } else {
            epoch.limit
        };
        let permits_u64 = u64::from(permits);
        // Like Resilience4j, which reads its state before the time.
        let k = self.consumed.load(Ordering::Acquire);
        let available = base.wrapping_sub(k);
        let fits = usable && available >= permits_u64 && available <= cap;
        let now_abs = now();
        if fits
            && now_abs.wrapping_sub(hint_start) < self.period
            && self
                .consumed
                .compare_exchange_weak(k, k + permits_u64, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            return Decision::Granted { wait: 0 };
        }
        self.acquire_slow(now, now_abs, permits, timeout, refused)
    }

    /// The general loop of [`Core::acquire`], starting with the clock reading
    /// `now_abs` already taken.
    #[cold]
    #[inline(never)]
    fn acquire_slow(
        &self,
        now: impl Fn() -> u64,
        mut now_abs: u64,
        permits: u32,
        timeout: u64,
        refused: impl FnOnce() -> Decision,
    ) -> Decision {
        loop {
            let t = self.elapsed(now_abs);
            let epoch = self.epoch();
            let c = self.cycle_of(t, &epoch);
            let k = self.consumed.load(Ordering::Acquire);
            let r = refresh(&epoch, c, k);
            let wait = nanos_to_wait(permits, r.available, t, c, epoch.limit, self.period);
            if wait > timeout {
                // Nothing to write: a refusal reserves nothing and the
                // refresh alone never changes an answer.
                return refused();
            }
            let Some(next) = reserve(&r, permits) else {
                return refused();
            };
            match self
                .consumed
                .compare_exchange_weak(k, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Decision::Granted { wait },
                // Resilience4j parks for a nanosecond between tries (which
                // the JVM rounds up to tens of microseconds); a spin hint
                // gives the winner the cache line without a syscall.
                Err(_) => spin_loop(),
            }
            now_abs = now();
        }
    }

    /// Empties the current cycle: its available permits become exactly 0,
    /// forgiving outstanding reservations as Resilience4j does within a cycle
    /// (after a boundary too, the refreshed count is drained, not the stale
    /// one Resilience4j 2.2.0 subtracts). Returns the refreshed count before the drain.
    pub(crate) fn drain(&self, now: impl Fn() -> u64) -> i64 {
        let _serial = lock(&self.writer);
        loop {
            let epoch = self.epoch();
            let c = self.cycle_of(self.elapsed(now()), &epoch);
            let k = self.consumed.load(Ordering::Acquire);
            let r = refresh(&epoch, c, k);
            // `K = B(c)` leaves exactly 0 in cycle `c`.
            if self
                .consumed
                .compare_exchange_weak(k, r.base, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return r.available;
            }
            spin_loop();
        }
    }

    /// Changes the limit from the next refill on (see the module docs).
    pub(crate) fn set_limit(&self, now: impl Fn() -> u64, limit: u64) {
        let _serial = lock(&self.writer);
        let epoch = self.epoch();
        let c = self.cycle_of(self.elapsed(now()), &epoch);
        // Apply the old epoch's cap at `c` first: the new epoch does not cap
        // its first cycle, so `K` must already bound that cycle's count.
        loop {
            let k = self.consumed.load(Ordering::Acquire);
            let r = refresh(&epoch, c, k);
            if r.consumed == k
                || self
                    .consumed
                    .compare_exchange_weak(k, r.consumed, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            {
                break;
            }
            spin_loop();
        }
        self.publish(Epoch {
            limit,
            cycle: c,
            base: epoch.base_at(c),
        });
    }
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("period", &self.period)
            .field("consumed", &self.consumed.load(Ordering::Relaxed))
            .field("epoch", &self.epoch())
            .finish()
    }
}

/// `t / period`, given `reciprocal = floor((2^64 - 1) / period)`, without a
/// division instruction (tens of cycles, the largest cost of the hot path
/// after the clock).
///
/// With `2^64 - 1 = reciprocal * period + s` (`0 <= s < period`), the estimate
/// `q = floor(t * reciprocal / 2^64)` undershoots `t / period` by
/// `t * (s + 1) / (period * 2^64) <= t / 2^64 < 1`, so `q` is the quotient or
/// one less, and one comparison of the remainder corrects it. `q * period <=
/// t`, so nothing overflows.
#[inline]
pub(crate) fn divide(t: u64, period: u64, reciprocal: u64) -> u64 {
    let q = ((u128::from(t) * u128::from(reciprocal)) >> 64) as u64;
    if t - q * period >= period { q + 1 } else { q }
}

/// Refreshes `K` to cycle `c` (Resilience4j's refill, capped at the limit
/// except in the epoch's first cycle).
#[inline]
pub(crate) fn refresh(epoch: &Epoch, c: u64, k: u64) -> Refreshed {
    let base = epoch.base_at(c);
    let (available, consumed) = if base >= k {
        let surplus = base - k;
        if c != epoch.cycle && surplus > epoch.limit {
            (epoch.limit as i64, base - epoch.limit)
        } else {
            (i64::try_from(surplus).unwrap_or(i64::MAX), k)
        }
    } else {
        let debt = k - base;
        (-i64::try_from(debt).unwrap_or(i64::MAX), k)
    };
    Refreshed {
        cycle: c,
        available,
        base,
        consumed,
    }
}

/// Resilience4j's `nanosToWaitForPermission`: 0 when `available` covers
/// `permits`, else the time to the next cycle plus the whole cycles needed
/// after it. Saturates at `u64::MAX`.
#[inline]
pub(crate) fn nanos_to_wait(
    permits: u32,
    available: i64,
    t: u64,
    c: u64,
    limit: u64,
    period: u64,
) -> u64 {
    if available >= i64::from(permits) {
        return 0;
    }
    nanos_to_wait_slow(permits, available, t, c, limit, period)
}

#[cold]
fn nanos_to_wait_slow(
    permits: u32,
    available: i64,
    t: u64,
    c: u64,
    limit: u64,
    period: u64,
) -> u64 {
    let (limit, period) = (i128::from(limit), i128::from(period));
    let to_next = (i128::from(c) + 1) * period - i128::from(t);
    let at_next = i128::from(available) + limit;
    // `permits - at_next > -limit` here, so this is `divCeil` on a value the
    // Java code also keeps non-negative.
    let missing = i128::from(permits) - at_next;
    let full_cycles = if missing <= 0 {
        0
    } else {
        (missing + limit - 1) / limit
    };
    full_cycles
        .checked_mul(period)
        .and_then(|w| w.checked_add(to_next))
        .and_then(|w| u64::try_from(w).ok())
        .unwrap_or(u64::MAX)
}

/// `K` after granting `permits` from `r`, or `None` past the representable
/// range (a debt beyond `i64::MAX` or a counter beyond `u64::MAX`).
#[inline]
fn reserve(r: &Refreshed, permits: u32) -> Option<u64> {
    let next = r.consumed.checked_add(u64::from(permits))?;
    if next > r.base && next - r.base > i64::MAX as u64 {
        return None;
    }
    Some(next)
}

#[cfg(all(test, not(resil_loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    fn core(limit: u32, period: u64) -> Core {
        Core::new(
            &RateLimiterConfig::builder()
                .limit_for_period(limit)
                .limit_refresh_period(Duration::from_nanos(period))
                .build()
                .unwrap(),
            0,
        )
    }

    fn available(core: &Core, t: u64) -> i64 {
        core.refreshed(t).1.available
    }

    proptest::proptest! {
        #[test]
        fn divide_by_reciprocal_is_exact(t: u64, period in 1u64..) {
            proptest::prop_assert_eq!(divide(t, period, u64::MAX / period), t / period);
        }

        #[test]
        fn divide_is_exact_for_small_periods(t: u64, period in 1u64..=100_000) {
            proptest::prop_assert_eq!(divide(t, period, u64::MAX / period), t / period);
        }
    }

    #[test]
    fn divide_is_exact_at_the_edges() {
        for period in [
            1,
            2,
            3,
            7,
            500,
            1_000_000_007,
            u64::MAX / 3,
            i64::MAX as u64,
            u64::MAX,
        ] {
            for t in [
                0,
                1,
                period - 1,
                period,
                period.wrapping_add(1),
                u64::MAX - 1,
                u64::MAX,
            ] {
                assert_eq!(
                    divide(t, period, u64::MAX / period),
                    t / period,
                    "{t} / {period}"
                );
            }
        }
    }

    #[test]
    fn refill_is_capped_and_reservations_are_debt() {
        let c = core(10, 100);
        assert_eq!(c.acquire(|| 0, 10, 0), Decision::Granted { wait: 0 });
        assert_eq!(c.acquire(|| 0, 1, 0), Decision::Refused);
        // 25 permits at t = 10: 10 from cycle 1 (90 ns away) covers 10,
        // two more cycles cover 20: wait 90 + 200.
        assert_eq!(c.acquire(|| 10, 25, 1000), Decision::Granted { wait: 290 });
        assert_eq!(available(&c, 10), -25);
        assert_eq!(available(&c, 100), -15);
        assert_eq!(available(&c, 300), 5);
        assert_eq!(available(&c, 10_000), 10);
    }

    #[test]
    fn the_wait_matches_resilience4j_for_more_than_the_limit() {
        // limit 3 per 10 ns, 2 available at t = 4: 7 permits need 5 more,
        // 3 at the next cycle (6 ns away), then 1 full cycle for the last 2.
        let c = core(3, 10);
        assert_eq!(c.acquire(|| 4, 1, 0), Decision::Granted { wait: 0 });
        assert_eq!(nanos_to_wait(7, 2, 4, 0, 3, 10), 16);
        assert_eq!(c.acquire(|| 4, 7, 15), Decision::Refused);
        assert_eq!(c.acquire(|| 4, 7, 16), Decision::Granted { wait: 16 });
        assert_eq!(available(&c, 4), -5);
    }

    #[test]
    fn a_lower_limit_keeps_the_current_cycle_and_caps_the_next() {
        let c = core(10, 100);
        assert_eq!(c.acquire(|| 5, 3, 0), Decision::Granted { wait: 0 });
        c.set_limit(|| 5, 4);
        assert_eq!(available(&c, 50), 7, "the current cycle keeps its count");
        assert_eq!(c.acquire(|| 50, 6, 0), Decision::Granted { wait: 0 });
        assert_eq!(available(&c, 50), 1);
        assert_eq!(available(&c, 150), 4, "refilled with the new limit, capped");
        assert_eq!(available(&c, 1_000_000), 4);
    }

    #[test]
    fn a_higher_limit_refills_more_from_the_next_cycle() {
        let c = core(10, 100);
        assert_eq!(c.acquire(|| 0, 10, 0), Decision::Granted { wait: 0 });
        c.set_limit(|| 0, 30);
        assert_eq!(available(&c, 99), 0);
        assert_eq!(available(&c, 100), 30);
        assert_eq!(c.acquire(|| 100, 30, 0), Decision::Granted { wait: 0 });
        assert_eq!(available(&c, 250), 30);
    }

    #[test]
    fn drain_empties_the_refreshed_cycle() {
        let c = core(10, 100);
        assert_eq!(c.acquire(|| 0, 8, 0), Decision::Granted { wait: 0 });
        assert_eq!(c.drain(|| 150), 10, "refreshed count, not the stale 2");
        assert_eq!(available(&c, 150), 0);
        assert_eq!(available(&c, 200), 10);
        assert_eq!(c.acquire(|| 200, 13, 1000), Decision::Granted { wait: 100 });
        assert_eq!(c.drain(|| 210), -3, "debt is forgiven");
        assert_eq!(available(&c, 210), 0);
    }

    #[test]
    fn saturates_at_the_end_of_the_clock() {
        let c = core(1, 1);
        let end = u64::MAX;
        assert_eq!(c.acquire(|| end, 1, 0), Decision::Granted { wait: 0 });
        // More permits than the clock has left: refused, no overflow.
        assert_eq!(c.acquire(|| end, u32::MAX, u64::MAX), Decision::Refused);
        assert_eq!(
            nanos_to_wait(u32::MAX, i64::MIN, 0, 0, 1, u64::MAX),
            u64::MAX
        );
    }
}
