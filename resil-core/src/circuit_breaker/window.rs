//! Sliding windows with subtract-on-evict (Resilience4j's
//! `FixedSizeSlidingWindowMetrics` and `SlidingTimeWindowMetrics`).
//!
//! Both keep a running total next to their buckets: recording adds to the
//! total and subtracts whatever it evicts, so a snapshot is O(1) and memory is
//! set by the window size alone (one byte per call for a count window, one
//! bucket per second for a time window), never by the call rate.

use crate::clock::Nanos;

/// How one call ended, as far as the window cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Outcome {
    Success = 0,
    Error = 1,
    SlowSuccess = 2,
    SlowError = 3,
}

impl Outcome {
    pub(crate) fn new(failed: bool, slow: bool) -> Self {
        match (failed, slow) {
            (false, false) => Outcome::Success,
            (true, false) => Outcome::Error,
            (false, true) => Outcome::SlowSuccess,
            (true, true) => Outcome::SlowError,
        }
    }

    #[inline]
    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Outcome::Success),
            1 => Some(Outcome::Error),
            2 => Some(Outcome::SlowSuccess),
            3 => Some(Outcome::SlowError),
            _ => None,
        }
    }
}

/// Aggregated counts of a window or bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) calls: u64,
    pub(crate) failed: u64,
    pub(crate) slow: u64,
    pub(crate) slow_failed: u64,
}

impl Counts {
    /// Adds one call; the outcome's code is `failed | slow << 1`, so this is branchless.
    #[inline]
    fn add(&mut self, o: Outcome) {
        let code = u64::from(o.code());
        self.calls += 1;
        self.failed += code & 1;
        self.slow += code >> 1;
        self.slow_failed += code & (code >> 1);
    }

    fn subtract(&mut self, other: &Counts) {
        self.calls -= other.calls;
        self.failed -= other.failed;
        self.slow -= other.slow;
        self.slow_failed -= other.slow_failed;
    }

    #[inline]
    fn subtract_one(&mut self, o: Outcome) {
        let code = u64::from(o.code());
        self.calls -= 1;
        self.failed -= code & 1;
        self.slow -= code >> 1;
        self.slow_failed -= code & (code >> 1);
    }
}

/// The window of one metrics object.
#[derive(Debug)]
pub(crate) enum Window {
    /// Records nothing (FORCED_OPEN and DISABLED metrics).
    Empty,
    Count(CountWindow),
    Time(TimeWindow),
}

impl Window {
    /// Records one call ending at `now` (a time window buckets it by whole
    /// seconds of the breaker's clock) and returns the totals.
    #[inline]
    pub(crate) fn record(&mut self, now: Nanos, o: Outcome) -> Counts {
        match self {
            Window::Empty => Counts::default(),
            Window::Count(w) => w.record(o),
            Window::Time(w) => w.record(now.as_secs(), o),
        }
    }

    /// The totals at `now`.
    pub(crate) fn snapshot(&mut self, now: Nanos) -> Counts {
        match self {
            Window::Empty => Counts::default(),
            Window::Count(w) => w.total,
            Window::Time(w) => {
                w.move_to_now(now.as_secs());
                w.total
            }
        }
    }

    /// Empties the window, as a fresh one created at `now` would be.
    pub(crate) fn reset(&mut self, now: Nanos) {
        match self {
            Window::Empty => {}
            Window::Count(w) => w.reset(),
            Window::Time(w) => w.reset(now.as_secs()),
        }
    }
}

const EMPTY_SLOT: u8 = u8::MAX;

/// The ring index after `i`: a compare, not a `%` (a division costs more than
/// the rest of a record).
#[inline]
fn next(i: usize, len: usize) -> usize {
    if i + 1 == len { 0 } else { i + 1 }
}

/// The last `size` calls.
#[derive(Debug)]
pub(crate) struct CountWindow {
    slots: Box<[u8]>,
    head: usize,
    total: Counts,
}

impl CountWindow {
    pub(crate) fn new(size: u32) -> Self {
        let size = (size as usize).max(1);
        CountWindow {
            slots: vec![EMPTY_SLOT; size].into_boxed_slice(),
            head: 0,
            total: Counts::default(),
        }
    }

    #[inline]
    fn record(&mut self, o: Outcome) -> Counts {
        // Move the head first, then evict what it points at (so the first
        // call lands in slot 1, as in Resilience4j; only the counts matter).
        self.head = next(self.head, self.slots.len());
        if let Some(old) = Outcome::from_code(self.slots[self.head]) {
            self.total.subtract_one(old);
        }
        self.slots[self.head] = o.code();
        self.total.add(o);
        self.total
    }

    fn reset(&mut self) {
        self.slots.fill(EMPTY_SLOT);
        self.head = 0;
        self.total = Counts::default();
    }
}

/// The calls of the last `size` whole seconds of the breaker's clock.
#[derive(Debug)]
pub(crate) struct TimeWindow {
    buckets: Box<[Bucket]>,
    head: usize,
    total: Counts,
}

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    epoch_sec: u64,
    counts: Counts,
}

impl TimeWindow {
    pub(crate) fn new(size_secs: u32, now_sec: u64) -> Self {
        let size = (size_secs as usize).max(1);
        let mut w = TimeWindow {
            buckets: vec![Bucket::default(); size].into_boxed_slice(),
            head: 0,
            total: Counts::default(),
        };
        w.reset(now_sec);
        w
    }

    fn reset(&mut self, now_sec: u64) {
        for (i, b) in self.buckets.iter_mut().enumerate() {
            *b = Bucket {
                epoch_sec: now_sec + i as u64,
                counts: Counts::default(),
            };
        }
        self.head = 0;
        self.total = Counts::default();
    }

    fn record(&mut self, now_sec: u64, o: Outcome) -> Counts {
        self.move_to_now(now_sec);
        self.total.add(o);
        self.buckets[self.head].counts.add(o);
        self.total
    }

    /// Advances the head bucket to `now_sec`, evicting every bucket it passes:
    /// a call recorded in second `s` is gone once the window reaches `s + size`.
    fn move_to_now(&mut self, now_sec: u64) {
        let latest = self.buckets[self.head].epoch_sec;
        // Our clocks are monotonic, so `now_sec < latest` only happens right after a
        // reset stamped buckets ahead; there is nothing to evict then.
        let Some(diff) = now_sec.checked_sub(latest).filter(|d| *d > 0) else {
            return;
        };
        let size = self.buckets.len() as u64;
        let mut k = diff.min(size);
        while k > 0 {
            k -= 1;
            self.head = next(self.head, self.buckets.len());
            let b = &mut self.buckets[self.head];
            self.total.subtract(&b.counts);
            *b = Bucket {
                epoch_sec: now_sec - k,
                counts: Counts::default(),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Nanos;
    use proptest::prelude::*;

    fn outcome(code: u8) -> Outcome {
        Outcome::from_code(code % 4).unwrap()
    }

    fn naive(calls: &[(u64, Outcome)], upto: usize, keep: impl Fn(usize, u64) -> bool) -> Counts {
        let mut c = Counts::default();
        for (i, (t, o)) in calls[..upto].iter().enumerate() {
            if keep(i, *t) {
                c.add(*o);
            }
        }
        c
    }

    #[test]
    fn count_window_evicts_the_oldest() {
        let mut w = CountWindow::new(3);
        w.record(Outcome::Error);
        w.record(Outcome::Success);
        let t = w.record(Outcome::SlowError);
        assert_eq!((t.calls, t.failed, t.slow, t.slow_failed), (3, 2, 1, 1));
        let t = w.record(Outcome::Success); // evicts the first Error
        assert_eq!((t.calls, t.failed, t.slow, t.slow_failed), (3, 1, 1, 1));
        w.reset();
        assert_eq!(w.total, Counts::default());
    }

    #[test]
    fn time_window_evicts_at_s_plus_size() {
        let mut w = TimeWindow::new(5, 100);
        w.record(100, Outcome::Error);
        w.record(102, Outcome::Success);
        assert_eq!(w.record(104, Outcome::Success).calls, 3);
        let mut win = Window::Time(w);
        let at = |s: u64| Nanos::new(s * 1_000_000_000 + 999_999_999);
        assert_eq!(win.snapshot(at(104)).failed, 1);
        assert_eq!(win.snapshot(at(105)).failed, 0); // second 100 evicted at 105
        assert_eq!(win.snapshot(at(105)).calls, 2);
        assert_eq!(win.snapshot(at(1_000)).calls, 0); // a long idle gap empties it
    }

    proptest! {
        #[test]
        fn count_window_matches_a_naive_model(size in 1u32..20, codes in proptest::collection::vec(0u8..4, 0..200)) {
            let mut w = CountWindow::new(size);
            let calls: Vec<_> = codes.iter().map(|c| (0, outcome(*c))).collect();
            for (i, (_, o)) in calls.iter().enumerate() {
                let got = w.record(*o);
                let n = i + 1;
                let want = naive(&calls, n, |j, _| j + size as usize >= n);
                prop_assert_eq!(got, want);
            }
        }

        #[test]
        fn time_window_matches_a_naive_model(size in 1u32..8, steps in proptest::collection::vec((0u64..4, 0u8..4), 0..150)) {
            let mut now = 50u64;
            let mut w = Window::Time(TimeWindow::new(size, now));
            let mut calls = Vec::new();
            for (gap, code) in steps {
                now += gap;
                calls.push((now, outcome(code)));
                let got = w.record(Nanos::new(now * 1_000_000_000), outcome(code));
                let want = naive(&calls, calls.len(), |_, t| t + u64::from(size) > now);
                prop_assert_eq!(got, want);
                let later = now + 3;
                let want = naive(&calls, calls.len(), |_, t| t + u64::from(size) > later);
                let mut probe = Window::Time(match &w { Window::Time(t) => TimeWindow { buckets: t.buckets.clone(), head: t.head, total: t.total }, _ => unreachable!() });
                prop_assert_eq!(probe.snapshot(Nanos::new(later * 1_000_000_000 + 5)), want);
            }
        }
    }
}
