//! Interval functions: how long to wait before the next attempt.
//!
//! Retry waits `apply(n)` after the `n`th failed attempt; a circuit breaker
//! stays OPEN for `apply(n)` on its `n`th consecutive opening (the attempt
//! counter survives OPEN → HALF_OPEN → OPEN and restarts at CLOSED).
//!
//! The arithmetic is Resilience4j's, in whole milliseconds: exponential
//! backoff truncates to an integer at every step (`500, 750, 1125, 1687, 2530,
//! ...` for 500 ms × 1.5), randomization draws uniformly from
//! `[x - f·x, x + f·x]` after truncation, and a cap applies after
//! randomizing. All of it saturates instead of overflowing.
//!
//! # Examples
//!
//! ```
//! use resil_core::interval::IntervalFunction;
//! use std::time::Duration;
//!
//! let f = IntervalFunction::of_exponential_backoff(Duration::from_millis(500), 1.5)?;
//! let waits: Vec<u128> = (1..=5).map(|n| f.apply(n).as_millis()).collect();
//! assert_eq!(waits, [500, 750, 1125, 1687, 2530]);
//! # Ok::<(), resil_core::ConfigError>(())
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{ConfigError, Dur};

/// Resilience4j's default initial interval: 500 ms.
pub const DEFAULT_INITIAL_INTERVAL: Duration = Duration::from_millis(500);
/// Resilience4j's default multiplier: 1.5.
pub const DEFAULT_MULTIPLIER: f64 = 1.5;
/// Resilience4j's default randomization factor: 0.5.
pub const DEFAULT_RANDOMIZATION_FACTOR: f64 = 0.5;

/// Exponential steps computed exactly (truncating each one, as Resilience4j
/// does); beyond this many the remaining growth is computed in one `powi`.
const EXACT_STEPS: u32 = 10_000;

/// A function from the attempt number (1 for the first wait) to a wait.
#[derive(Clone)]
pub struct IntervalFunction(Repr);

#[derive(Clone)]
enum Repr {
    Constant(u64),
    Backoff {
        initial: u64,
        step: Arc<dyn Fn(Duration) -> Duration + Send + Sync>,
    },
    Exponential {
        initial: u64,
        multiplier: f64,
        randomization: Option<f64>,
        max: Option<u64>,
    },
    Randomized {
        interval: u64,
        factor: f64,
    },
    Custom(Arc<dyn Fn(u32) -> Duration + Send + Sync>),
}

impl IntervalFunction {
    /// A constant 500 ms.
    pub fn of_defaults() -> Self {
        IntervalFunction(Repr::Constant(500))
    }

    /// A constant wait.
    ///
    /// # Errors
    ///
    /// When `interval` is under 1 ms.
    pub fn of(interval: Duration) -> Result<Self, ConfigError> {
        Ok(IntervalFunction(Repr::Constant(check_millis(
            "interval", interval,
        )?)))
    }

    /// `interval` for the first attempt, then `step` applied once more for each
    /// further attempt (Resilience4j's `IntervalFunction.of(interval, backoffFunction)`).
    ///
    /// # Errors
    ///
    /// When `interval` is under 1 ms.
    pub fn of_backoff<F>(interval: Duration, step: F) -> Result<Self, ConfigError>
    where
        F: Fn(Duration) -> Duration + Send + Sync + 'static,
    {
        Ok(IntervalFunction(Repr::Backoff {
            initial: check_millis("interval", interval)?,
            step: Arc::new(step),
        }))
    }

    /// `initial`, then each wait is the previous one times `multiplier`, truncated to
    /// whole milliseconds.
    ///
    /// # Errors
    ///
    /// When `initial` is under 1 ms, or `multiplier` is not a finite number above 0
    /// (Resilience4j's Spring properties reject `<= 0`; its core builder lets a
    /// multiplier below 1 decay the wait, and so does resil).
    pub fn of_exponential_backoff(initial: Duration, multiplier: f64) -> Result<Self, ConfigError> {
        Self::exponential(initial, multiplier, None, None)
    }

    /// Like [`IntervalFunction::of_exponential_backoff`], never above `max`.
    ///
    /// # Errors
    ///
    /// As [`IntervalFunction::of_exponential_backoff`], and when `max` is under 1 ms.
    pub fn of_exponential_backoff_with_max(
        initial: Duration,
        multiplier: f64,
        max: Duration,
    ) -> Result<Self, ConfigError> {
        Self::exponential(initial, multiplier, None, Some(max))
    }

    /// `interval` randomized uniformly within `± factor · interval`.
    ///
    /// # Errors
    ///
    /// When `interval` is under 1 ms or `factor` is outside `[0, 1)`.
    pub fn of_randomized(interval: Duration, factor: f64) -> Result<Self, ConfigError> {
        let interval = check_millis("interval", interval)?;
        let factor = check_factor(factor)?;
        Ok(IntervalFunction(Repr::Randomized { interval, factor }))
    }

    /// Exponential backoff, each wait then randomized within `± factor`.
    ///
    /// # Errors
    ///
    /// As [`IntervalFunction::of_exponential_backoff`] and [`IntervalFunction::of_randomized`].
    pub fn of_exponential_random_backoff(
        initial: Duration,
        multiplier: f64,
        factor: f64,
    ) -> Result<Self, ConfigError> {
        Self::exponential(initial, multiplier, Some(factor), None)
    }

    /// Exponential random backoff, capped at `max` after randomizing.
    ///
    /// # Errors
    ///
    /// As [`IntervalFunction::of_exponential_random_backoff`], and when `max` is under 1 ms.
    pub fn of_exponential_random_backoff_with_max(
        initial: Duration,
        multiplier: f64,
        factor: f64,
        max: Duration,
    ) -> Result<Self, ConfigError> {
        Self::exponential(initial, multiplier, Some(factor), Some(max))
    }

    /// Any function of the attempt number.
    pub fn from_fn<F>(f: F) -> Self
    where
        F: Fn(u32) -> Duration + Send + Sync + 'static,
    {
        IntervalFunction(Repr::Custom(Arc::new(f)))
    }

    fn exponential(
        initial: Duration,
        multiplier: f64,
        randomization: Option<f64>,
        max: Option<Duration>,
    ) -> Result<Self, ConfigError> {
        let mut problems = crate::error::Problems::default();
        let initial_ms = check_millis("initial_interval", initial)
            .map_err(|e| problems.extend(e))
            .unwrap_or(1);
        problems.check(
            multiplier.is_finite() && multiplier > 0.0,
            "multiplier",
            multiplier,
            "must be a finite number above 0",
        );
        let randomization = match randomization {
            Some(f) => match check_factor(f) {
                Ok(f) => Some(f),
                Err(e) => {
                    problems.extend(e);
                    None
                }
            },
            None => None,
        };
        let max = match max {
            Some(m) => match check_millis("max_interval", m) {
                Ok(m) => Some(m),
                Err(e) => {
                    problems.extend(e);
                    None
                }
            },
            None => None,
        };
        problems.finish(IntervalFunction(Repr::Exponential {
            initial: initial_ms,
            multiplier,
            randomization,
            max,
        }))
    }

    /// The wait before attempt `attempt + 1`, i.e. after the `attempt`th failure.
    ///
    /// `attempt` counts from 1; 0 is read as 1 (Resilience4j throws).
    pub fn apply(&self, attempt: u32) -> Duration {
        let attempt = attempt.max(1);
        match &self.0 {
            Repr::Constant(ms) => Duration::from_millis(*ms),
            Repr::Backoff { initial, step } => {
                let mut d = Duration::from_millis(*initial);
                for _ in 1..attempt.min(EXACT_STEPS) {
                    d = step(d);
                }
                d
            }
            Repr::Exponential {
                initial,
                multiplier,
                randomization,
                max,
            } => {
                let mut ms = exponential(*initial, *multiplier, attempt);
                if let Some(f) = randomization {
                    ms = randomize(ms, *f);
                }
                if let Some(max) = max {
                    ms = ms.min(*max);
                }
                Duration::from_millis(ms)
            }
            Repr::Randomized { interval, factor } => {
                Duration::from_millis(randomize(*interval, *factor))
            }
            Repr::Custom(f) => f(attempt),
        }
    }

    /// The constant wait, if this function is one.
    pub fn as_constant(&self) -> Option<Duration> {
        match self.0 {
            Repr::Constant(ms) => Some(Duration::from_millis(ms)),
            _ => None,
        }
    }

    /// The longest wait [`apply`](Self::apply) can return for `attempt`
    /// (randomization at its largest); `None` for a function made with
    /// [`IntervalFunction::from_fn`], which nothing bounds.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::interval::IntervalFunction;
    /// use std::time::Duration;
    ///
    /// let f = IntervalFunction::of_exponential_random_backoff(Duration::from_millis(100), 2.0, 0.5)?;
    /// assert_eq!(f.largest(3), Some(Duration::from_millis(600))); // 400 ms + 50 %
    /// assert!(f.apply(3) <= Duration::from_millis(600));
    /// # Ok::<(), resil_core::ConfigError>(())
    /// ```
    pub fn largest(&self, attempt: u32) -> Option<Duration> {
        let attempt = attempt.max(1);
        let upper = |x: u64, factor: f64| (x as f64 + factor * x as f64) as u64;
        Some(match &self.0 {
            Repr::Constant(_) | Repr::Backoff { .. } => self.apply(attempt),
            Repr::Exponential {
                initial,
                multiplier,
                randomization,
                max,
            } => {
                let mut ms = exponential(*initial, *multiplier, attempt);
                if let Some(f) = randomization {
                    ms = upper(ms, *f);
                }
                if let Some(max) = max {
                    ms = ms.min(*max);
                }
                Duration::from_millis(ms)
            }
            Repr::Randomized { interval, factor } => {
                Duration::from_millis(upper(*interval, *factor))
            }
            Repr::Custom(_) => return None,
        })
    }
}

impl Default for IntervalFunction {
    fn default() -> Self {
        Self::of_defaults()
    }
}

impl fmt::Debug for IntervalFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Constant(ms) => write!(f, "Constant({ms}ms)"),
            Repr::Backoff { initial, .. } => write!(f, "Backoff({initial}ms, ..)"),
            Repr::Exponential {
                initial,
                multiplier,
                randomization,
                max,
            } => f
                .debug_struct("Exponential")
                .field("initial_ms", initial)
                .field("multiplier", multiplier)
                .field("randomization_factor", randomization)
                .field("max_ms", max)
                .finish(),
            Repr::Randomized { interval, factor } => {
                write!(f, "Randomized({interval}ms ± {factor})")
            }
            Repr::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

fn check_millis(field: &'static str, d: Duration) -> Result<u64, ConfigError> {
    if d.as_millis() < 1 {
        return Err(ConfigError::new(field, Dur(d), "must be at least 1ms"));
    }
    Ok(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn check_factor(f: f64) -> Result<f64, ConfigError> {
    if (0.0..1.0).contains(&f) {
        Ok(f)
    } else {
        Err(ConfigError::new(
            "randomization_factor",
            f,
            "must be in [0, 1)",
        ))
    }
}

/// `initial` multiplied `attempt - 1` times, truncating at each step.
fn exponential(initial: u64, multiplier: f64, attempt: u32) -> u64 {
    let mut x = initial;
    let steps = attempt - 1;
    let exact = steps.min(EXACT_STEPS);
    for _ in 0..exact {
        // `as` saturates: huge products pin at u64::MAX, NaN cannot occur (validated).
        let next = (x as f64 * multiplier) as u64;
        if next == x {
            return x; // a fixed point (0, or a multiplier too small to move x)
        }
        x = next;
    }
    if steps > exact {
        let rest = i32::try_from(steps - exact).unwrap_or(i32::MAX);
        x = (x as f64 * multiplier.powi(rest)) as u64;
    }
    x
}

/// Uniform in `[x - f·x, x + f·x]`, integer milliseconds (Resilience4j's
/// `lo + random() * (hi - lo + 1)`, truncated).
fn randomize(x: u64, factor: f64) -> u64 {
    if factor == 0.0 {
        return x;
    }
    let delta = factor * x as f64;
    let lo = x as f64 - delta;
    let hi = x as f64 + delta;
    let v = lo + fastrand::f64() * (hi - lo + 1.0);
    (v as u64).min(hi as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(f: &IntervalFunction, n: u32) -> u128 {
        f.apply(n).as_millis()
    }

    #[test]
    fn no_wait_is_longer_than_the_largest() {
        let ms = Duration::from_millis;
        let functions = [
            IntervalFunction::of(ms(70)).unwrap(),
            IntervalFunction::of_randomized(ms(333), 0.7).unwrap(),
            IntervalFunction::of_exponential_backoff_with_max(ms(100), 3.0, ms(2000)).unwrap(),
            IntervalFunction::of_exponential_random_backoff(ms(101), 1.7, 0.9).unwrap(),
            IntervalFunction::of_exponential_random_backoff_with_max(ms(50), 2.0, 0.5, ms(700))
                .unwrap(),
            IntervalFunction::of_backoff(ms(10), |d| d * 2).unwrap(),
        ];
        for f in &functions {
            for attempt in 1..8 {
                let largest = f.largest(attempt).unwrap();
                let seen = (0..2000).map(|_| f.apply(attempt)).max().unwrap();
                assert!(seen <= largest, "{f:?} #{attempt}: {seen:?} > {largest:?}");
                // randomized: the largest is reached, to the millisecond
                assert!(
                    largest - seen <= ms(largest.as_millis() as u64 / 50 + 1),
                    "{f:?} #{attempt}: {seen:?} far below {largest:?}"
                );
            }
        }
        assert_eq!(
            IntervalFunction::from_fn(|_| Duration::from_millis(1)).largest(1),
            None
        );
    }

    #[test]
    fn exponential_sequences_match_resilience4j() {
        let f = IntervalFunction::of_exponential_backoff(Duration::from_millis(500), 1.5).unwrap();
        let seq: Vec<_> = (1..=8).map(|n| ms(&f, n)).collect();
        assert_eq!(seq, [500, 750, 1125, 1687, 2530, 3795, 5692, 8538]);

        let f = IntervalFunction::of_exponential_backoff_with_max(
            Duration::from_millis(100),
            2.0,
            Duration::from_millis(100_000),
        )
        .unwrap();
        assert_eq!(ms(&f, 10), 51_200);
        assert_eq!(ms(&f, 11), 100_000);
        assert_eq!(ms(&f, 12), 100_000);
    }

    #[test]
    fn a_multiplier_below_one_decays() {
        let f = IntervalFunction::of_exponential_backoff(Duration::from_millis(100), 0.5).unwrap();
        let seq: Vec<_> = (1..=9).map(|n| ms(&f, n)).collect();
        assert_eq!(seq, [100, 50, 25, 12, 6, 3, 1, 0, 0]);
    }

    #[test]
    fn randomized_stays_in_bounds() {
        let f = IntervalFunction::of_randomized(Duration::from_millis(100), 0.5).unwrap();
        let (mut lo, mut hi) = (u128::MAX, 0);
        for _ in 0..20_000 {
            let v = ms(&f, 1);
            lo = lo.min(v);
            hi = hi.max(v);
        }
        assert_eq!((lo, hi), (50, 150));
        let f = IntervalFunction::of_randomized(Duration::from_millis(100), 0.0).unwrap();
        assert_eq!(ms(&f, 3), 100);
    }

    #[test]
    fn exponential_random_with_max_caps_after_randomizing() {
        let f = IntervalFunction::of_exponential_random_backoff_with_max(
            Duration::from_millis(1000),
            2.0,
            0.5,
            Duration::from_millis(1500),
        )
        .unwrap();
        for _ in 0..2000 {
            let v = ms(&f, 2);
            assert!((1000..=1500).contains(&v), "{v}");
        }
    }

    #[test]
    fn huge_attempts_saturate_quickly() {
        let f = IntervalFunction::of_exponential_backoff(Duration::from_millis(1), 1.0001).unwrap();
        let _ = f.apply(u32::MAX);
        let f = IntervalFunction::of_exponential_backoff(Duration::from_secs(1), 10.0).unwrap();
        assert_eq!(f.apply(u32::MAX), Duration::from_millis(u64::MAX));
    }

    #[test]
    fn validation_names_the_argument() {
        let e = IntervalFunction::of(Duration::from_nanos(999_999)).unwrap_err();
        assert_eq!(e.to_string(), "interval = 999999ns: must be at least 1ms");
        let e = IntervalFunction::of_randomized(Duration::from_millis(5), 1.0).unwrap_err();
        assert_eq!(e.to_string(), "randomization_factor = 1: must be in [0, 1)");
        let e = IntervalFunction::of_exponential_backoff(Duration::ZERO, f64::NAN).unwrap_err();
        assert_eq!(e.problems().len(), 2);
    }

    #[test]
    fn backoff_applies_the_step_n_minus_one_times() {
        let f = IntervalFunction::of_backoff(Duration::from_millis(10), |d| {
            d + Duration::from_millis(5)
        })
        .unwrap();
        assert_eq!(ms(&f, 1), 10);
        assert_eq!(ms(&f, 4), 25);
    }
}
