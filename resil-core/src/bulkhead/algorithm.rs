//! The limit algorithms and their sampling window: pure arithmetic on the
//! samples, with no clock and no atomics, so that each step can be checked
//! number by number.
//!
//! Learned from Netflix's concurrency-limits (`AIMDLimit`, `Gradient2Limit`,
//! `VegasLimit`, `WindowedLimit`, `ExpAvgMeasurement`,
//! `Log10RootIntFunction`, `SquareRootFunction`; Apache-2.0) and written
//! anew. The arithmetic follows theirs, including Java's truncating casts
//! from `double` to `int`; where we differ, the comment says so.

use super::limit::{LimitAlgorithm, LimitSettings};

/// One closed window, as the algorithm sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct WindowSample {
    /// The average latency of the window's calls, in nanoseconds.
    pub(super) rtt: u64,
    /// The most calls in flight that one of its calls saw.
    pub(super) inflight: u32,
    /// Whether any of its calls dropped.
    pub(super) dropped: bool,
}

/// A window's settings in nanoseconds, converted once rather than at every
/// call.
#[derive(Clone, Copy, Debug)]
pub(super) struct WindowSettings {
    min_rtt_threshold: u64,
    min_window_time: u64,
    max_window_time: u64,
    window_size: u32,
}

impl WindowSettings {
    pub(super) fn of(s: &LimitSettings) -> Self {
        WindowSettings {
            min_rtt_threshold: nanos(s.min_rtt_threshold),
            min_window_time: nanos(s.min_window_time),
            max_window_time: nanos(s.max_window_time),
            window_size: s.window_size,
        }
    }
}

/// The calls of the current sampling window (Netflix's `WindowedLimit`
/// with its `AverageSampleWindow`).
#[derive(Debug)]
pub(super) struct Window {
    min_rtt: u64,
    sum: u64,
    max_inflight: u32,
    count: u32,
    dropped: bool,
    /// When the window closes: the first call that ends after it closes it.
    next_update: u64,
}

impl Window {
    pub(super) const fn new() -> Self {
        Window {
            min_rtt: u64::MAX,
            sum: 0,
            max_inflight: 0,
            count: 0,
            dropped: false,
            next_update: 0,
        }
    }

    /// Adds a call that ended at `end` (nanoseconds on the bulkhead's
    /// clock) after `rtt`, with `inflight` calls in flight, and returns the
    /// window's sample when this call closes a window of enough calls.
    ///
    /// Netflix discards a call faster than `min_rtt_threshold` whole; we
    /// keep its drop, so that a refusal below the bulkhead (which comes back
    /// at once) still counts as one.
    #[inline]
    pub(super) fn add(
        &mut self,
        end: u64,
        rtt: u64,
        inflight: u32,
        dropped: bool,
        s: &WindowSettings,
    ) -> Option<WindowSample> {
        if rtt >= s.min_rtt_threshold {
            self.min_rtt = self.min_rtt.min(rtt);
            self.sum = self.sum.saturating_add(rtt);
            self.max_inflight = self.max_inflight.max(inflight);
            self.count = self.count.saturating_add(1);
        } else if !dropped {
            return None;
        }
        self.dropped |= dropped;
        if end <= self.next_update {
            return None;
        }
        self.close(end, s)
    }

    #[cold]
    fn close(&mut self, end: u64, s: &WindowSettings) -> Option<WindowSample> {
        let closed = std::mem::replace(self, Window::new());
        let length = closed
            .min_rtt
            .saturating_mul(2)
            .max(s.min_window_time)
            .min(s.max_window_time);
        self.next_update = end.saturating_add(length);
        (closed.count >= s.window_size && closed.min_rtt != u64::MAX).then(|| WindowSample {
            rtt: closed.sum / u64::from(closed.count),
            inflight: closed.max_inflight,
            dropped: closed.dropped,
        })
    }
}

#[cfg(test)]
impl Window {
    /// The calls the window holds, for the tests that count samples.
    #[cfg_attr(resil_loom, allow(dead_code))] // those tests do not run under loom
    pub(super) fn count(&self) -> u32 {
        self.count
    }
}

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// An adaptive limit's algorithm and what it has learned.
#[derive(Debug)]
pub(super) enum Algorithm {
    Fixed,
    Aimd(Aimd),
    Gradient2(Gradient2),
    Vegas(Vegas),
}

impl Algorithm {
    /// `s`'s algorithm, starting at `limit`; `seed` seeds Vegas's probe jitter.
    pub(super) fn new(s: &LimitSettings, limit: u32, seed: u64) -> Self {
        let estimated = f64::from(limit);
        match s.algorithm {
            LimitAlgorithm::Fixed => Algorithm::Fixed,
            LimitAlgorithm::Aimd => Algorithm::Aimd(Aimd {
                backoff_ratio: s.backoff_ratio,
                timeout: nanos(s.drop_timeout),
            }),
            LimitAlgorithm::Gradient2 => Algorithm::Gradient2(Gradient2 {
                estimated,
                long_rtt: ExpAvg::new(s.long_window),
                tolerance: s.rtt_tolerance,
                smoothing: s.smoothing_for(LimitAlgorithm::Gradient2),
                queue_size: s.queue_size,
            }),
            LimitAlgorithm::Vegas => {
                let mut rng = fastrand::Rng::with_seed(seed);
                Algorithm::Vegas(Vegas {
                    estimated,
                    rtt_noload: 0,
                    probe_count: 0,
                    probe_jitter: jitter(&mut rng),
                    rng,
                    smoothing: s.smoothing_for(LimitAlgorithm::Vegas),
                    alpha: s.alpha,
                    beta: s.beta,
                    threshold: s.threshold,
                    probe_multiplier: s.probe_multiplier,
                })
            }
        }
    }

    /// The limit after one window's sample; `limit` is the current one and
    /// the result stays within `[min, max]`.
    pub(super) fn update(&mut self, limit: u32, w: WindowSample, min: u32, max: u32) -> u32 {
        match self {
            Algorithm::Fixed => limit,
            Algorithm::Aimd(a) => a.update(limit, w, min, max),
            Algorithm::Gradient2(g) => g.update(w, min, max),
            Algorithm::Vegas(v) => v.update(w, min, max),
        }
    }

    /// Continues from `limit` (the limit a reload clamped to new bounds).
    pub(super) fn rebase(&mut self, limit: u32) {
        match self {
            Algorithm::Fixed | Algorithm::Aimd(_) => {}
            Algorithm::Gradient2(g) => g.estimated = f64::from(limit),
            Algorithm::Vegas(v) => v.estimated = f64::from(limit),
        }
    }
}

/// `x` within `[min, max]`, as Netflix writes it (`min(max, max(min, x))`),
/// which never panics.
fn bound(x: f64, min: u32, max: u32) -> f64 {
    x.max(f64::from(min)).min(f64::from(max))
}

/// Java's `(int) x` for the non-negative values the algorithms produce.
fn truncate(x: f64) -> u32 {
    // `as` saturates and maps NaN to 0, as Java's cast does.
    x as u32
}

/// Additive increase, multiplicative decrease (Netflix's `AIMDLimit`).
#[derive(Debug)]
pub(super) struct Aimd {
    backoff_ratio: f64,
    timeout: u64,
}

impl Aimd {
    fn update(&self, limit: u32, w: WindowSample, min: u32, max: u32) -> u32 {
        let next = if w.dropped || w.rtt > self.timeout {
            truncate(f64::from(limit) * self.backoff_ratio)
        } else if u64::from(w.inflight) * 2 >= u64::from(limit) {
            limit.saturating_add(1)
        } else {
            limit
        };
        next.max(min).min(max)
    }
}

/// An exponential moving average over `window` samples, the plain average
/// of the first ten (Netflix's `ExpAvgMeasurement(window, 10)`).
#[derive(Debug)]
struct ExpAvg {
    value: f64,
    sum: f64,
    count: u32,
    window: u32,
}

impl ExpAvg {
    const WARMUP: u32 = 10;

    fn new(window: u32) -> Self {
        ExpAvg {
            value: 0.0,
            sum: 0.0,
            count: 0,
            window,
        }
    }

    fn add(&mut self, x: f64) -> f64 {
        if self.count < Self::WARMUP {
            self.count += 1;
            self.sum += x;
            self.value = self.sum / f64::from(self.count);
        } else {
            let factor = 2.0 / (f64::from(self.window) + 1.0);
            self.value = self.value * (1.0 - factor) + x * factor;
        }
        self.value
    }
}

/// Netflix's `Gradient2Limit`: the window's latency against a long-term
/// average of them.
#[derive(Debug)]
pub(super) struct Gradient2 {
    estimated: f64,
    long_rtt: ExpAvg,
    tolerance: f64,
    smoothing: f64,
    /// `None`: √limit (Netflix's `Gradient2Limit` defaults to 4, its older
    /// `GradientLimit` to max(4, √limit); the √limit is our specification's).
    queue_size: Option<u32>,
}

impl Gradient2 {
    fn update(&mut self, w: WindowSample, min: u32, max: u32) -> u32 {
        let estimated = self.estimated;
        let queue = f64::from(
            self.queue_size
                .unwrap_or_else(|| square_root(truncate(estimated))),
        );
        // A zero latency (a clock that did not move) would divide by zero.
        let short = w.rtt.max(1) as f64;
        let long = self.long_rtt.add(short);
        // After a long overload the long-term average lags far above the
        // current latency: pull it down faster than the average would.
        if long / short > 2.0 {
            self.long_rtt.value *= 0.95;
        }
        // The caller is not using the limit: nothing to learn about it.
        if f64::from(w.inflight) < estimated / 2.0 {
            return truncate(estimated);
        }
        // Above 1 the latency is under the tolerance (no queue): grow by
        // the queue size. Below, shrink in proportion, at most by half.
        let gradient = (self.tolerance * long / short).clamp(0.5, 1.0);
        let target = estimated * gradient + queue;
        let next = bound(
            estimated * (1.0 - self.smoothing) + target * self.smoothing,
            min,
            max,
        );
        self.estimated = next;
        truncate(next)
    }
}

/// TCP Vegas (Netflix's `VegasLimit`).
#[derive(Debug)]
pub(super) struct Vegas {
    estimated: f64,
    rtt_noload: u64,
    probe_count: u64,
    probe_jitter: f64,
    rng: fastrand::Rng,
    smoothing: f64,
    alpha: Option<u32>,
    beta: Option<u32>,
    threshold: Option<u32>,
    probe_multiplier: u32,
}

impl Vegas {
    fn update(&mut self, w: WindowSample, min: u32, max: u32) -> u32 {
        let estimated = self.estimated;
        // Netflix refuses a latency of zero; we skip it.
        if w.rtt == 0 {
            return truncate(estimated);
        }
        // Measure the no-load latency afresh now and then: it may have
        // risen for good (a slower downstream), which the minimum never shows.
        self.probe_count += 1;
        if self.probe_jitter * f64::from(self.probe_multiplier) * estimated
            <= self.probe_count as f64
        {
            self.probe_jitter = jitter(&mut self.rng);
            self.probe_count = 0;
            self.rtt_noload = w.rtt;
            return truncate(estimated);
        }
        if self.rtt_noload == 0 || w.rtt < self.rtt_noload {
            self.rtt_noload = w.rtt;
            return truncate(estimated);
        }
        let queue = (estimated * (1.0 - self.rtt_noload as f64 / w.rtt as f64)).ceil();
        let log = f64::from(log10_root(truncate(estimated)));
        let next = if w.dropped {
            estimated - log
        } else if f64::from(w.inflight) * 2.0 < estimated {
            // Not using the limit: do not let it drift up.
            return truncate(estimated);
        } else {
            let alpha = self.alpha.map_or(3.0 * log, f64::from);
            let beta = self.beta.map_or(6.0 * log, f64::from);
            let threshold = self.threshold.map_or(log, f64::from);
            if queue <= threshold {
                estimated + beta
            } else if queue < alpha {
                estimated + log
            } else if queue > beta {
                estimated - log
            } else {
                return truncate(estimated);
            }
        };
        // Netflix bounds by 1 and the maximum; we bound by the minimum.
        let next = bound(next, min, max);
        let next = (1.0 - self.smoothing) * estimated + self.smoothing * next;
        self.estimated = next;
        truncate(next)
    }
}

/// Vegas's probe jitter, in `[0.5, 1)`.
fn jitter(rng: &mut fastrand::Rng) -> f64 {
    0.5 + 0.5 * rng.f64()
}

/// `max(1, ⌊log10 n⌋)` (Netflix's `Log10RootIntFunction`).
fn log10_root(n: u32) -> u32 {
    n.checked_ilog10().unwrap_or(0).max(1)
}

/// `max(1, ⌊√n⌋)` (Netflix's `SquareRootFunction`).
fn square_root(n: u32) -> u32 {
    n.isqrt().max(1)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const MS: u64 = 1_000_000;

    fn settings(algorithm: LimitAlgorithm) -> LimitSettings {
        LimitSettings {
            algorithm,
            ..LimitSettings::default()
        }
    }

    fn sample(rtt: u64, inflight: u32, dropped: bool) -> WindowSample {
        WindowSample {
            rtt,
            inflight,
            dropped,
        }
    }

    #[test]
    fn netflix_functions_of_the_limit() {
        let logs: Vec<u32> = [0, 1, 9, 10, 99, 100, 999, 1000, 12_345]
            .map(log10_root)
            .to_vec();
        assert_eq!(logs, [1, 1, 1, 1, 1, 2, 2, 3, 4]);
        let roots: Vec<u32> = [0, 1, 3, 4, 15, 16, 999, 1000].map(square_root).to_vec();
        assert_eq!(roots, [1, 1, 1, 2, 3, 4, 31, 31]);
    }

    #[test]
    fn aimd_grows_by_one_while_half_used_and_backs_off_on_a_drop() {
        let mut a = Algorithm::new(&settings(LimitAlgorithm::Aimd), 10, 1);
        assert_eq!(a.update(10, sample(MS, 5, false), 1, 20), 11);
        assert_eq!(
            a.update(10, sample(MS, 4, false), 1, 20),
            10,
            "under half used"
        );
        assert_eq!(a.update(10, sample(MS, 10, true), 1, 20), 9);
        assert_eq!(a.update(9, sample(MS, 9, true), 1, 20), 8, "⌊9 × 0.9⌋");
        assert_eq!(
            a.update(10, sample(6_000 * MS, 10, false), 1, 20),
            9,
            "slower than the drop timeout"
        );
        assert_eq!(
            a.update(20, sample(MS, 20, false), 1, 20),
            20,
            "the ceiling"
        );
        assert_eq!(a.update(1, sample(MS, 1, true), 1, 20), 1, "the floor");
    }

    #[test]
    fn gradient2_follows_netflix_step_by_step() {
        let mut g = Algorithm::new(&settings(LimitAlgorithm::Gradient2), 16, 1);
        // Warm-up: the long-term average is the plain average of the first
        // ten. Same latency: gradient 1, grow by √16 = 4 smoothed by 0.2.
        assert_eq!(g.update(16, sample(10 * MS, 16, false), 1, 100), 16);
        let Algorithm::Gradient2(inner) = &g else {
            unreachable!()
        };
        assert!((inner.estimated - 16.8).abs() < 1e-9);
        // Twice the latency: gradient 1.5 × avg(10, 20) / 20 = 1.125 → 1:
        // the tolerance absorbs it.
        g.update(16, sample(20 * MS, 16, false), 1, 100);
        let Algorithm::Gradient2(inner) = &g else {
            unreachable!()
        };
        assert!((inner.estimated - (16.8 + 0.2 * 4.0)).abs() < 1e-9);
        // Six times: 1.5 × avg(10, 20, 60) / 60 = 0.75.
        let before = inner.estimated;
        g.update(17, sample(60 * MS, 17, false), 1, 100);
        let Algorithm::Gradient2(inner) = &g else {
            unreachable!()
        };
        let expected = before * 0.8 + (before * 0.75 + 4.0) * 0.2;
        assert!((inner.estimated - expected).abs() < 1e-9);
        // Not using the limit: no change.
        let before = inner.estimated;
        assert_eq!(
            g.update(16, sample(60 * MS, 2, false), 1, 100),
            truncate(before)
        );
    }

    #[test]
    fn gradient2_pulls_a_stale_long_average_down() {
        let mut g = Gradient2 {
            estimated: 20.0,
            long_rtt: ExpAvg::new(600),
            tolerance: 1.5,
            smoothing: 0.2,
            queue_size: None,
        };
        for _ in 0..10 {
            g.update(sample(100 * MS, 20, false), 1, 100);
        }
        let long = g.long_rtt.value;
        g.update(sample(10 * MS, 20, false), 1, 100);
        let factor = 2.0 / 601.0;
        let averaged = long * (1.0 - factor) + 10.0 * MS as f64 * factor;
        assert!((g.long_rtt.value - averaged * 0.95).abs() < 1e-3);
    }

    #[test]
    fn vegas_learns_the_no_load_latency_then_reads_the_queue() {
        let mut v = Algorithm::new(&settings(LimitAlgorithm::Vegas), 20, 1);
        // The first sample only sets the no-load latency.
        assert_eq!(v.update(20, sample(10 * MS, 20, false), 1, 1000), 20);
        // No queue (≤ threshold 1): grow by beta = 6·log10(20) = 6.
        assert_eq!(v.update(20, sample(10 * MS, 20, false), 1, 1000), 26);
        // queue = ⌈26 × (1 − 10/12)⌉ = 5: between alpha 3 and beta 6, hold.
        assert_eq!(v.update(26, sample(12 * MS, 26, false), 1, 1000), 26);
        // queue = ⌈26 × (1 − 10/20)⌉ = 13 > beta: shrink by log10 = 1.
        assert_eq!(v.update(26, sample(20 * MS, 26, false), 1, 1000), 25);
        // A drop shrinks whatever the latency.
        assert_eq!(v.update(25, sample(10 * MS, 25, true), 1, 1000), 24);
        // Not using the limit: hold.
        assert_eq!(v.update(24, sample(10 * MS, 3, false), 1, 1000), 24);
    }

    #[test]
    fn vegas_probes_the_no_load_latency_afresh() {
        let s = LimitSettings {
            probe_multiplier: 1,
            ..settings(LimitAlgorithm::Vegas)
        };
        let mut v = Algorithm::new(&s, 10, 7);
        v.update(10, sample(10 * MS, 10, false), 1, 10);
        // After at most multiplier × limit = 10 windows a slower latency
        // becomes the no-load one.
        for _ in 0..10 {
            v.update(10, sample(30 * MS, 10, false), 1, 10);
        }
        let Algorithm::Vegas(inner) = &v else {
            unreachable!()
        };
        assert_eq!(inner.rtt_noload, 30 * MS);
    }

    #[test]
    fn a_window_closes_after_its_time_and_counts_with_enough_calls() {
        let s = LimitSettings {
            min_window_time: Duration::from_millis(100),
            max_window_time: Duration::from_millis(100),
            ..settings(LimitAlgorithm::Aimd)
        };
        let s = WindowSettings::of(&s);
        let mut w = Window::new();
        // The first call closes the empty first window, too small to count.
        assert_eq!(w.add(MS, MS, 1, false, &s), None);
        for i in 0..10 {
            assert_eq!(
                w.add(50 * MS + i, (i + 1) * MS, 3 + i as u32 % 2, false, &s),
                None
            );
        }
        // Faster than the threshold: not counted, a drop kept.
        assert_eq!(w.add(60 * MS, 10_000, 1, true, &s), None);
        assert_eq!(w.add(60 * MS, 10_000, 1, false, &s), None);
        assert_eq!(
            w.add(102 * MS, 12 * MS, 2, false, &s),
            Some(sample((55 + 12) * MS / 11, 4, true))
        );
        // The next window closes 100 ms after that call.
        assert_eq!(w.add(202 * MS, MS, 1, false, &s), None);
        assert_eq!(w.add(203 * MS, MS, 1, false, &s), None, "one call: too few");
    }
}
