//! The recent successful latencies of a hedge, for `delay_percentile`: a
//! log-linear histogram of fixed buckets over a rolling window, updated
//! with atomics (no lock, no allocation after creation).
//!
//! Latencies are kept in microseconds, in buckets of 8 per power of two
//! (exact below 16 µs, then at most 12.5 % wide), up to 2³² µs (about 71
//! minutes; longer ones count in the last bucket). A percentile reads as
//! the upper bound of its bucket, so the delay errs on the late side by at
//! most one bucket.
//!
//! Time is cut in periods of [`PERIOD`]; two histograms alternate, one per
//! period, and a reading covers the current period and the one before (so
//! between one and two periods of history). The first record of a new
//! period clears the histogram it takes over. Records racing that clear
//! may be lost or counted in the period they leave: the reading is an
//! estimate over thousands of calls, and neither race can make it wrong by
//! more than the few samples involved.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::Nanos;

/// The length of one period of the rolling window: a reading covers
/// between one and two of them.
pub const PERIOD: Duration = Duration::from_secs(10);

/// Sub-buckets per power of two (2³).
const SUB_BITS: u32 = 3;
const SUB: u64 = 1 << SUB_BITS;
/// The largest power of two kept apart (2³¹ µs and above share the top).
const TOP_EXP: u32 = 31;
/// Exact buckets for 0..16 µs, then 8 per power of two from 2⁴ to 2³¹.
pub(super) const BUCKETS: usize = (2 * SUB + (TOP_EXP as u64 - SUB_BITS as u64) * SUB) as usize;

/// The bucket of `micros`.
#[inline]
pub(super) fn bucket(micros: u64) -> usize {
    if micros < 2 * SUB {
        return micros as usize;
    }
    let exp = (63 - micros.leading_zeros()).min(TOP_EXP);
    if exp == TOP_EXP && micros >= 1 << (TOP_EXP + 1) {
        return BUCKETS - 1;
    }
    let sub = (micros >> (exp - SUB_BITS)) & (SUB - 1);
    (2 * SUB + u64::from(exp - SUB_BITS - 1) * SUB + sub) as usize
}

/// The largest latency (µs) that falls in bucket `index`.
pub(super) fn upper_bound(index: usize) -> u64 {
    let index = index as u64;
    if index < 2 * SUB {
        return index;
    }
    let exp = (index - 2 * SUB) / SUB + u64::from(SUB_BITS) + 1;
    let sub = (index - 2 * SUB) % SUB;
    ((SUB + sub + 1) << (exp - u64::from(SUB_BITS))) - 1
}

/// The samples a percentile needs before it replaces the fixed delay:
/// at least 20, and enough that some sample lies above the percentile
/// (100 / (100 − p), so 100 for p99).
pub fn min_samples(percentile: f64) -> u64 {
    // (less a hair, so that 99.9's rounding gives 1000, not 1001)
    let above = (100.0 / (100.0 - percentile) - 1e-6).ceil();
    if above.is_finite() && above > 20.0 {
        above as u64
    } else {
        20
    }
}

struct Histogram {
    /// The period these counts belong to.
    period: AtomicU64,
    total: AtomicU32,
    counts: [AtomicU32; BUCKETS],
}

impl Histogram {
    fn new() -> Self {
        Histogram {
            period: AtomicU64::new(0),
            total: AtomicU32::new(0),
            counts: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }

    /// This histogram, made the one of `period` (cleared) if it held an
    /// older period's counts.
    #[inline]
    fn take_over(&self, period: u64) {
        let held = self.period.load(Ordering::Acquire);
        if held != period
            && held < period
            && self
                .period
                .compare_exchange(held, period, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            self.clear();
        }
    }

    #[cold]
    fn clear(&self) {
        for c in &self.counts {
            c.store(0, Ordering::Relaxed);
        }
        self.total.store(0, Ordering::Release);
    }

    /// The total when the counts are of `period` or the one before.
    fn total_for(&self, period: u64) -> u32 {
        let held = self.period.load(Ordering::Acquire);
        if held == period || held + 1 == period {
            self.total.load(Ordering::Acquire)
        } else {
            0
        }
    }
}

/// Recent successful latencies of one hedge.
pub(super) struct Latencies {
    histograms: [Histogram; 2],
}

impl std::fmt::Debug for Latencies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Latencies").finish_non_exhaustive()
    }
}

fn period_of(now: Nanos) -> u64 {
    // Periods start at 1, so that the histograms' initial 0 is no period.
    now.as_u64() / crate::clock::saturating_nanos(PERIOD) + 1
}

impl Latencies {
    pub(super) fn new() -> Self {
        Latencies {
            histograms: [Histogram::new(), Histogram::new()],
        }
    }

    /// Counts one successful latency, ended at `now`.
    #[inline]
    pub(super) fn record(&self, now: Nanos, latency: Duration) {
        let period = period_of(now);
        let h = &self.histograms[(period % 2) as usize];
        h.take_over(period);
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        h.counts[bucket(micros)].fetch_add(1, Ordering::Relaxed);
        h.total.fetch_add(1, Ordering::Release);
    }

    /// The `percentile` of the latencies of the current period and the
    /// one before at `now`, or `None` with fewer than
    /// [`min_samples`] of them.
    pub(super) fn percentile(&self, now: Nanos, percentile: f64) -> Option<Duration> {
        let period = period_of(now);
        let [a, b] = &self.histograms;
        let (ta, tb) = (a.total_for(period), b.total_for(period));
        let total = u64::from(ta) + u64::from(tb);
        if total < min_samples(percentile) {
            return None;
        }
        // The smallest latency that at least `percentile` % of the samples
        // do not exceed (the nearest-rank method).
        let rank = ((percentile / 100.0) * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        let mut last = 0;
        for i in 0..BUCKETS {
            let n = u64::from(a.counts[i].load(Ordering::Relaxed)) * u64::from(ta > 0)
                + u64::from(b.counts[i].load(Ordering::Relaxed)) * u64::from(tb > 0);
            if n == 0 {
                continue;
            }
            last = i;
            seen += n;
            if seen >= rank {
                return Some(Duration::from_micros(upper_bound(i).max(1)));
            }
        }
        // Counts cleared under the reading: the largest one seen.
        Some(Duration::from_micros(upper_bound(last).max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_bound_their_values() {
        let mut last = 0;
        for micros in (0..100_000u64).chain([1 << 31, (1 << 32) - 1, 1 << 32, u64::MAX]) {
            let b = bucket(micros);
            assert!(b < BUCKETS, "{micros}");
            assert!(b >= last, "{micros}");
            last = b;
            if micros < 1 << 32 {
                assert!(upper_bound(b) >= micros, "{micros} in {b}");
                if b > 0 {
                    assert!(upper_bound(b - 1) < micros, "{micros} in {b}");
                }
            }
            if (16..1 << 32).contains(&micros) {
                // at most 12.5 % above
                assert!(
                    upper_bound(b) as f64 <= micros as f64 * 1.125 + 1.0,
                    "{micros}"
                );
            }
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn min_samples_grow_with_the_percentile() {
        assert_eq!(min_samples(50.0), 20);
        assert_eq!(min_samples(95.0), 20);
        assert_eq!(min_samples(99.0), 100);
        assert_eq!(min_samples(99.9), 1000);
    }

    #[test]
    fn percentile_of_a_known_distribution() {
        let l = Latencies::new();
        let now = Nanos::new(1);
        assert_eq!(l.percentile(now, 95.0), None);
        // 1..=100 ms, once each
        for ms in 1..=100 {
            l.record(now, Duration::from_millis(ms));
        }
        let p95 = l.percentile(now, 95.0).unwrap();
        assert!(
            p95 >= Duration::from_millis(95) && p95 <= Duration::from_micros(95_000 * 9 / 8 + 1),
            "{p95:?}"
        );
        let p50 = l.percentile(now, 50.0).unwrap();
        assert!(
            p50 >= Duration::from_millis(50) && p50 < Duration::from_millis(57),
            "{p50:?}"
        );
    }

    #[test]
    fn old_periods_are_forgotten() {
        let l = Latencies::new();
        let t0 = Nanos::new(0);
        for _ in 0..50 {
            l.record(t0, Duration::from_millis(200));
        }
        let t1 = t0.saturating_add(PERIOD);
        for _ in 0..50 {
            l.record(t1, Duration::from_millis(10));
        }
        // both periods: half and half
        let p90 = l.percentile(t1, 90.0).unwrap();
        assert!(p90 >= Duration::from_millis(200), "{p90:?}");
        // two periods later the slow ones are gone
        let t2 = t1.saturating_add(PERIOD);
        for _ in 0..30 {
            l.record(t2, Duration::from_millis(10));
        }
        let p90 = l.percentile(t2, 90.0).unwrap();
        assert!(p90 < Duration::from_millis(12), "{p90:?}");
        // and with no record for two periods, nothing is left
        let t4 = t2.saturating_add(PERIOD * 2);
        assert_eq!(l.percentile(t4, 90.0), None);
    }
}
