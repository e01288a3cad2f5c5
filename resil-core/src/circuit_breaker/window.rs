//! Sliding windows with subtract-on-evict (Resilience4j's
//! `FixedSizeSlidingWindowMetrics` and `SlidingTimeWindowMetrics`).
//!
//! Both keep a running total next to their buckets: recording adds to the
//! total and subtracts whatever it evicts, so a snapshot is O(1) and memory is
//! set by the window size alone (one byte per call for a count window, one
//! bucket per second for a time window), never by the call rate.

use crate::clock::Nanos;
use crate::sync::{AtomicU8, AtomicU64, Ordering, ShortMutex, relax, short_lock};

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

/// The largest count window kept in one packed word; larger ones use a mutex.
pub(crate) const PACKED_MAX: u32 = (1 << 15) - 1;

/// A breaker's window as the call path sees it: the common count window of up
/// to 32767 calls in one packed word (one compare-and-swap and one plain store
/// per call, snapshots with a single load), anything else behind a mutex.
#[derive(Debug)]
pub(crate) enum SharedWindow {
    /// Records nothing (the metrics of FORCED_OPEN and DISABLED).
    Empty,
    Packed(PackedCountWindow),
    /// Boxed: a time window is larger than the packed one, and rarer.
    Locked(Box<ShortMutex<Window>>),
}

impl SharedWindow {
    pub(crate) fn new(window: Window) -> Self {
        match window {
            Window::Count(w) if w.slots.len() <= PACKED_MAX as usize => {
                SharedWindow::Packed(PackedCountWindow::new(w.slots.len()))
            }
            Window::Empty => SharedWindow::Empty,
            other => SharedWindow::Locked(Box::new(ShortMutex::new(other))),
        }
    }

    #[inline]
    pub(crate) fn record(&self, now: Nanos, o: Outcome) -> Counts {
        match self {
            SharedWindow::Empty => Counts::default(),
            SharedWindow::Packed(w) => w.record(o),
            SharedWindow::Locked(w) => short_lock(w).record(now, o),
        }
    }

    /// Whether the window holds only successes, none slow, and is full, so
    /// that recording another success would change none of its counts
    /// (only which success is the oldest, and they are all alike).
    #[inline]
    pub(crate) fn holds_only_successes(&self) -> bool {
        match self {
            SharedWindow::Packed(w) => w.holds_only_successes(),
            SharedWindow::Empty | SharedWindow::Locked(_) => false,
        }
    }

    pub(crate) fn snapshot(&self, now: Nanos) -> Counts {
        match self {
            SharedWindow::Empty => Counts::default(),
            SharedWindow::Packed(w) => w.snapshot(),
            SharedWindow::Locked(w) => short_lock(w).snapshot(now),
        }
    }

    pub(crate) fn reset(&self, now: Nanos) {
        match self {
            SharedWindow::Empty => {}
            SharedWindow::Packed(w) => w.reset(),
            SharedWindow::Locked(w) => short_lock(w).reset(now),
        }
    }
}

/// The last `size` calls (`size` ≤ 32767), with the running totals, the head
/// and a lock bit packed in one word:
///
/// ```text
/// bit  0       lock: set while one thread records
/// bits 1..16   head: the slot the next call is written to
/// bit  16      full: the ring has wrapped, so the head slot holds the oldest call
/// bits 17..32  failed    bits 32..47  slow    bits 47..62  slow and failed
/// ```
///
/// A recorder sets the lock bit with a compare-and-swap, evicts the head slot
/// (if full), writes its outcome there, and publishes the new totals and head
/// with a plain release store that also clears the bit: one locked instruction
/// per call instead of a mutex's two. Readers never take the bit: the word
/// always holds the totals of the last complete record. The calls in the
/// window are `size` once full, else `head`.
#[derive(Debug)]
pub(crate) struct PackedCountWindow {
    word: AtomicU64,
    slots: Box<[AtomicU8]>,
}

const LOCK: u64 = 1;
const HEAD_SHIFT: u32 = 1;
const FULL: u64 = 1 << 16;
const FAILED_SHIFT: u32 = 17;
const SLOW_SHIFT: u32 = 32;
const SLOW_FAILED_SHIFT: u32 = 47;
const FIELD: u64 = (1 << 15) - 1;

impl PackedCountWindow {
    pub(crate) fn new(size: usize) -> Self {
        debug_assert!((1..=PACKED_MAX as usize).contains(&size));
        PackedCountWindow {
            word: AtomicU64::new(0),
            slots: (0..size.max(1)).map(|_| AtomicU8::new(0)).collect(),
        }
    }

    /// Waits for the lock bit and sets it; returns the word as it was.
    #[inline]
    fn lock(&self) -> u64 {
        let mut spins = 0;
        let mut w = self.word.load(Ordering::Relaxed);
        loop {
            if w & LOCK == 0 {
                match self.word.compare_exchange_weak(
                    w,
                    w | LOCK,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return w,
                    Err(actual) => w = actual,
                }
            } else {
                relax(&mut spins);
                w = self.word.load(Ordering::Relaxed);
            }
        }
    }

    #[inline]
    pub(crate) fn record(&self, o: Outcome) -> Counts {
        let w = self.lock();
        let head = ((w >> HEAD_SHIFT) & FIELD) as usize;
        let full = w & FULL != 0;
        let mut failed = (w >> FAILED_SHIFT) & FIELD;
        let mut slow = (w >> SLOW_SHIFT) & FIELD;
        let mut slow_failed = (w >> SLOW_FAILED_SHIFT) & FIELD;
        let slot = &self.slots[head];
        if full {
            let old = u64::from(slot.load(Ordering::Relaxed));
            failed -= old & 1;
            slow -= old >> 1;
            slow_failed -= old & (old >> 1);
        }
        let code = o.code();
        slot.store(code, Ordering::Relaxed);
        let code = u64::from(code);
        failed += code & 1;
        slow += code >> 1;
        slow_failed += code & (code >> 1);
        let next_head = next(head, self.slots.len());
        let full = full || next_head == 0;
        let next = ((next_head as u64) << HEAD_SHIFT)
            | if full { FULL } else { 0 }
            | failed << FAILED_SHIFT
            | slow << SLOW_SHIFT
            | slow_failed << SLOW_FAILED_SHIFT;
        self.word.store(next, Ordering::Release);
        self.unpack(next)
    }

    pub(crate) fn snapshot(&self) -> Counts {
        self.unpack(self.word.load(Ordering::Acquire))
    }

    /// Full, no failed or slow call, and no record under way (the lock bit
    /// clear): a success recorded now would evict a success and leave every
    /// count as it is. A caller that sees this may skip the record, as if
    /// it had happened just before whatever record comes next.
    #[inline]
    pub(crate) fn holds_only_successes(&self) -> bool {
        self.word.load(Ordering::Acquire) & !(FIELD << HEAD_SHIFT) == FULL
    }

    fn reset(&self) {
        self.lock();
        // `full` cleared: slots are written before they are read again.
        self.word.store(0, Ordering::Release);
    }

    #[inline]
    fn unpack(&self, w: u64) -> Counts {
        let calls = if w & FULL != 0 {
            self.slots.len() as u64
        } else {
            (w >> HEAD_SHIFT) & FIELD
        };
        Counts {
            calls,
            failed: (w >> FAILED_SHIFT) & FIELD,
            slow: (w >> SLOW_SHIFT) & FIELD,
            slow_failed: (w >> SLOW_FAILED_SHIFT) & FIELD,
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
        fn packed_count_window_matches_the_locked_one(size in 1u32..40, codes in proptest::collection::vec(0u8..4, 0..300)) {
            let packed = PackedCountWindow::new(size as usize);
            let mut plain = CountWindow::new(size);
            for (i, c) in codes.iter().enumerate() {
                prop_assert_eq!(packed.record(outcome(*c)), plain.record(outcome(*c)));
                if i % 37 == 36 {
                    packed.reset();
                    plain.reset();
                    prop_assert_eq!(packed.snapshot(), Counts::default());
                }
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
