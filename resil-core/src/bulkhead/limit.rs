//! The settings of an adaptive limit and the samples its calls give it
//! (the idea and the algorithms are taught in the
//! [module documentation](super#adaptive-limits)).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use super::{BulkheadConfig, BulkheadConfigBuilder};
use crate::chain::given_up;
use crate::error::{Dur, Error, Problems};

/// How a bulkhead sets its limit.
///
/// # Examples
///
/// ```
/// use resil_core::bulkhead::LimitAlgorithm;
///
/// let algorithm: LimitAlgorithm = "gradient2".parse()?;
/// assert_eq!(algorithm, LimitAlgorithm::Gradient2);
/// assert_eq!(algorithm.as_str(), "gradient2");
/// assert!("cubic".parse::<LimitAlgorithm>().is_err());
/// # Ok::<(), resil_core::bulkhead::UnknownLimitAlgorithm>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum LimitAlgorithm {
    /// `max_concurrent_calls`, as set (Resilience4j's bulkhead).
    #[default]
    Fixed,
    /// Additive increase, multiplicative decrease on drops.
    Aimd,
    /// Netflix's Gradient2: recent against long-term latency.
    Gradient2,
    /// TCP Vegas: the queue estimated from the no-load latency.
    Vegas,
}

impl LimitAlgorithm {
    /// Every algorithm, in the order the documentation lists them.
    pub const ALL: [LimitAlgorithm; 4] = [
        LimitAlgorithm::Fixed,
        LimitAlgorithm::Aimd,
        LimitAlgorithm::Gradient2,
        LimitAlgorithm::Vegas,
    ];

    /// The name resilience.toml gives it (`fixed`, `aimd`, `gradient2`, `vegas`).
    pub fn as_str(self) -> &'static str {
        match self {
            LimitAlgorithm::Fixed => "fixed",
            LimitAlgorithm::Aimd => "aimd",
            LimitAlgorithm::Gradient2 => "gradient2",
            LimitAlgorithm::Vegas => "vegas",
        }
    }

    /// Whether the limit moves with the samples (every algorithm but `fixed`).
    pub fn is_adaptive(self) -> bool {
        self != LimitAlgorithm::Fixed
    }
}

impl fmt::Display for LimitAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for LimitAlgorithm {
    type Err = UnknownLimitAlgorithm;

    /// Parses a name, ignoring case and surrounding spaces.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim();
        LimitAlgorithm::ALL
            .into_iter()
            .find(|a| a.as_str().eq_ignore_ascii_case(name))
            .ok_or_else(|| UnknownLimitAlgorithm(name.to_owned()))
    }
}

/// A name that is no [`LimitAlgorithm`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownLimitAlgorithm(String);

impl fmt::Display for UnknownLimitAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown limit algorithm {:?}; expected \"fixed\", \"aimd\", \"gradient2\" or \"vegas\"",
            self.0
        )
    }
}

impl std::error::Error for UnknownLimitAlgorithm {}

/// What a finished call tells an adaptive limit, given when its permit is
/// given back ([`BulkheadPermit::finish_with`](super::BulkheadPermit::finish_with)).
///
/// A permit dropped without one counts as [`Sample::Success`], or as
/// [`Sample::Dropped`] when it is dropped by a panic unwinding; a permit
/// given back with [`BulkheadPermit::release`](super::BulkheadPermit::release)
/// (the call was not made) gives no sample. A fixed bulkhead ignores samples.
///
/// # Examples
///
/// ```
/// use resil_core::bulkhead::Sample;
/// use resil_core::Error;
///
/// let ok: Result<u32, Error<std::io::Error>> = Ok(1);
/// assert_eq!(Sample::of(&ok, |_| None), Sample::Success);
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// let failed: Result<u32, _> = Err(Error::Inner(refused));
/// assert_eq!(
///     Sample::of(&failed, |_| Some("ConnectionRefused")),
///     Sample::Error { kind: Some("ConnectionRefused") },
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sample {
    /// The call answered: its latency is a sample.
    Success,
    /// The call failed with the caller's own error, of this kind (see
    /// [`Classify`](crate::Classify); `None` when it has none): a drop when
    /// `limit_drop_errors` names the kind, otherwise no sample (an error
    /// says nothing of the downstream's load, as Netflix's gRPC
    /// interceptor ignores statuses other than `UNAVAILABLE`).
    Error {
        /// The error's kind.
        kind: Option<&'static str>,
    },
    /// The downstream is overloaded: the call timed out or was refused
    /// below the bulkhead.
    Dropped,
    /// No sample: the call says nothing of the downstream (the caller
    /// cancelled it).
    Ignored,
}

impl Sample {
    /// How a call's result counts: `Ok` is [`Sample::Success`]; a timeout
    /// or a refusal of a layer below the bulkhead (`Timeout`,
    /// `BulkheadFull`, `RequestNotPermitted`, `CallNotPermitted`) is
    /// [`Sample::Dropped`]; the caller's own error is [`Sample::Error`] with
    /// the kind `kind_of` gives it; anything else is [`Sample::Ignored`].
    #[inline]
    pub fn of<T, E>(
        result: &Result<T, Error<E>>,
        kind_of: impl FnOnce(&E) -> Option<&'static str>,
    ) -> Sample {
        match result {
            Ok(_) => Sample::Success,
            Err(Error::Inner(e)) => Sample::Error { kind: kind_of(e) },
            Err(
                Error::Timeout(_)
                | Error::BulkheadFull(_)
                | Error::RequestNotPermitted(_)
                | Error::CallNotPermitted(_),
            ) => Sample::Dropped,
            Err(_) => Sample::Ignored,
        }
    }

    /// What a permit dropped without a sample gives: a drop while a panic
    /// unwinds or when a time limiter's timeout or a request's deadline
    /// gave up on the call that held it (see [`given_up`]). Otherwise a
    /// permit of the user's own ([`BulkheadPermit`](super::BulkheadPermit))
    /// ended its call, a success; a chain's permit (`in_chain`) was
    /// dropped with a call its caller cancelled (a hedge's loser, a
    /// `select!`'s other branch), whose time says nothing of the
    /// downstream: no sample, as Netflix concurrency-limits' client side
    /// ignores a cancelled call.
    #[inline]
    pub(crate) fn on_drop(in_chain: bool) -> Sample {
        if std::thread::panicking() || given_up().is_some() {
            Sample::Dropped
        } else if in_chain {
            Sample::Ignored
        } else {
            Sample::Success
        }
    }
}

/// The adaptive part of a [`BulkheadConfig`].
#[derive(Clone, Debug)]
pub(crate) struct LimitSettings {
    pub(crate) algorithm: LimitAlgorithm,
    pub(crate) min: u32,
    /// `None`: start at `max_concurrent_calls`.
    pub(crate) initial: Option<u32>,
    pub(crate) drop_errors: Arc<[Box<str>]>,
    pub(crate) backoff_ratio: f64,
    pub(crate) drop_timeout: Duration,
    pub(crate) rtt_tolerance: f64,
    /// `None`: the algorithm's own default (Gradient2 0.2, Vegas 1.0).
    pub(crate) smoothing: Option<f64>,
    pub(crate) long_window: u32,
    /// `None`: √limit.
    pub(crate) queue_size: Option<u32>,
    /// `None`: Netflix's functions of the limit.
    pub(crate) alpha: Option<u32>,
    pub(crate) beta: Option<u32>,
    pub(crate) threshold: Option<u32>,
    pub(crate) probe_multiplier: u32,
    pub(crate) min_window_time: Duration,
    pub(crate) max_window_time: Duration,
    pub(crate) window_size: u32,
    pub(crate) min_rtt_threshold: Duration,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            algorithm: LimitAlgorithm::Fixed,
            min: 1,
            initial: None,
            drop_errors: Arc::new([]),
            backoff_ratio: 0.9,
            drop_timeout: Duration::from_secs(5),
            rtt_tolerance: 1.5,
            smoothing: None,
            long_window: 600,
            queue_size: None,
            alpha: None,
            beta: None,
            threshold: None,
            probe_multiplier: 30,
            min_window_time: Duration::from_secs(1),
            max_window_time: Duration::from_secs(1),
            window_size: 10,
            min_rtt_threshold: Duration::from_micros(100),
        }
    }
}

impl LimitSettings {
    /// Gradient2's and Vegas's `smoothing` when it is not set.
    pub(crate) fn smoothing_for(&self, algorithm: LimitAlgorithm) -> f64 {
        self.smoothing.unwrap_or(match algorithm {
            LimitAlgorithm::Vegas => 1.0,
            _ => 0.2,
        })
    }

    /// Whether `other` runs the same algorithm with the same parameters, so
    /// that what it learned carries over (the bounds, the windows and the
    /// drop errors may differ).
    pub(crate) fn same_algorithm(&self, other: &LimitSettings) -> bool {
        let bits = |x: f64| x.to_bits();
        self.algorithm == other.algorithm
            && bits(self.backoff_ratio) == bits(other.backoff_ratio)
            && self.drop_timeout == other.drop_timeout
            && bits(self.rtt_tolerance) == bits(other.rtt_tolerance)
            && self.smoothing.map(bits) == other.smoothing.map(bits)
            && self.long_window == other.long_window
            && self.queue_size == other.queue_size
            && self.alpha == other.alpha
            && self.beta == other.beta
            && self.threshold == other.threshold
            && self.probe_multiplier == other.probe_multiplier
    }

    /// Checks every value; the bounds only for an adaptive algorithm (a
    /// fixed bulkhead does not read them).
    pub(crate) fn check(&self, max: u32, p: &mut Problems) {
        if self.algorithm.is_adaptive() {
            p.check(
                self.min >= 1,
                "min_concurrent_calls",
                self.min,
                "must be at least 1 with an adaptive limit_algorithm (a limit of 0 admits no call, so nothing could raise it)",
            );
            p.check(
                self.min <= max,
                "min_concurrent_calls",
                self.min,
                "must be at most max_concurrent_calls, the ceiling of the limit",
            );
            if let Some(initial) = self.initial {
                p.check(
                    (self.min..=max).contains(&initial),
                    "initial_concurrent_calls",
                    initial,
                    "must be between min_concurrent_calls and max_concurrent_calls",
                );
            }
        }
        p.check(
            self.backoff_ratio.is_finite() && (0.5..1.0).contains(&self.backoff_ratio),
            "backoff_ratio",
            self.backoff_ratio,
            "must be at least 0.5 and below 1",
        );
        p.check(
            !self.drop_timeout.is_zero(),
            "drop_timeout",
            Dur(self.drop_timeout),
            "must be more than zero",
        );
        p.check(
            self.rtt_tolerance.is_finite() && self.rtt_tolerance >= 1.0,
            "rtt_tolerance",
            self.rtt_tolerance,
            "must be at least 1 (how many times the long-term latency is still no queue)",
        );
        if let Some(s) = self.smoothing {
            p.check(
                s.is_finite() && s > 0.0 && s <= 1.0,
                "smoothing",
                s,
                "must be above 0 and at most 1",
            );
        }
        p.check(
            self.long_window >= 1,
            "long_window",
            self.long_window,
            "must be at least 1",
        );
        if let Some(q) = self.queue_size {
            p.check(
                q >= 1,
                "queue_size",
                q,
                "must be at least 1 (with 0 the limit could only fall)",
            );
        }
        if let (Some(alpha), Some(beta)) = (self.alpha, self.beta) {
            p.check(
                alpha <= beta,
                "alpha",
                alpha,
                "must be at most beta (Vegas grows below alpha and shrinks above beta)",
            );
        }
        p.check(
            self.probe_multiplier >= 1,
            "probe_multiplier",
            self.probe_multiplier,
            "must be at least 1",
        );
        let at_least_100ms = |d: Duration| d >= Duration::from_millis(100);
        p.check(
            at_least_100ms(self.min_window_time),
            "min_window_time",
            Dur(self.min_window_time),
            "must be at least 100ms",
        );
        p.check(
            at_least_100ms(self.max_window_time) && self.max_window_time >= self.min_window_time,
            "max_window_time",
            Dur(self.max_window_time),
            "must be at least 100ms and at least min_window_time",
        );
        p.check(
            self.window_size >= 10,
            "window_size",
            self.window_size,
            "must be at least 10",
        );
        p.check(
            !self.drop_errors.iter().any(|k| k.trim().is_empty()),
            "limit_drop_errors",
            format_args!("{:?}", self.drop_errors),
            "kind names must not be empty",
        );
    }
}

impl PartialEq for LimitSettings {
    fn eq(&self, other: &Self) -> bool {
        self.same_algorithm(other)
            && self.min == other.min
            && self.initial == other.initial
            && self.drop_errors == other.drop_errors
            && self.min_window_time == other.min_window_time
            && self.max_window_time == other.max_window_time
            && self.window_size == other.window_size
            && self.min_rtt_threshold == other.min_rtt_threshold
    }
}

// The floats compare by their bits, which is an equivalence.
impl Eq for LimitSettings {}

/// The adaptive settings.
impl BulkheadConfig {
    /// How the limit is set (default [`LimitAlgorithm::Fixed`]).
    pub fn limit_algorithm(&self) -> LimitAlgorithm {
        self.limit.algorithm
    }

    /// The lowest an adaptive limit goes (default 1).
    pub fn min_concurrent_calls(&self) -> u32 {
        self.limit.min
    }

    /// Where an adaptive limit starts (default `max_concurrent_calls`).
    pub fn initial_concurrent_calls(&self) -> u32 {
        self.limit.initial.unwrap_or(self.max_concurrent_calls)
    }

    /// Error kinds that count as drops (default none).
    pub fn limit_drop_errors(&self) -> &[Box<str>] {
        &self.limit.drop_errors
    }

    /// AIMD: what a drop multiplies the limit by (default 0.9).
    pub fn backoff_ratio(&self) -> f64 {
        self.limit.backoff_ratio
    }

    /// AIMD: a window whose latency passes this counts as a drop (default 5 s;
    /// Netflix's `timeout`).
    pub fn drop_timeout(&self) -> Duration {
        self.limit.drop_timeout
    }

    /// Gradient2: how many times the long-term latency is still no queue
    /// (default 1.5).
    pub fn rtt_tolerance(&self) -> f64 {
        self.limit.rtt_tolerance
    }

    /// Gradient2 and Vegas: how much of a new estimate each window takes
    /// (default 0.2 for Gradient2, 1.0 for Vegas).
    pub fn smoothing(&self) -> f64 {
        self.limit.smoothing_for(self.limit.algorithm)
    }

    /// Gradient2: the windows the long-term latency averages (default 600).
    pub fn long_window(&self) -> u32 {
        self.limit.long_window
    }

    /// Gradient2: how much the limit may grow past the calls it sees in a
    /// window while latency stays low; `None` (the default) for √limit.
    pub fn queue_size(&self) -> Option<u32> {
        self.limit.queue_size
    }

    /// Vegas: the queue under which the limit grows; `None` (the default)
    /// for 3·log10(limit).
    pub fn alpha(&self) -> Option<u32> {
        self.limit.alpha
    }

    /// Vegas: the queue over which the limit shrinks; `None` (the default)
    /// for 6·log10(limit).
    pub fn beta(&self) -> Option<u32> {
        self.limit.beta
    }

    /// Vegas: the queue under which the limit grows by `beta` at once;
    /// `None` (the default) for log10(limit).
    pub fn threshold(&self) -> Option<u32> {
        self.limit.threshold
    }

    /// Vegas: the no-load latency is measured afresh about every
    /// `probe_multiplier` × limit windows (default 30).
    pub fn probe_multiplier(&self) -> u32 {
        self.limit.probe_multiplier
    }

    /// The shortest sampling window (default 1 s).
    pub fn min_window_time(&self) -> Duration {
        self.limit.min_window_time
    }

    /// The longest sampling window (default 1 s).
    pub fn max_window_time(&self) -> Duration {
        self.limit.max_window_time
    }

    /// The calls a window needs to count (default 10).
    pub fn window_size(&self) -> u32 {
        self.limit.window_size
    }

    /// Calls faster than this do not count towards latency (default 100 µs).
    pub fn min_rtt_threshold(&self) -> Duration {
        self.limit.min_rtt_threshold
    }
}

/// The adaptive settings (see the [module documentation](super#adaptive-limits)).
impl BulkheadConfigBuilder {
    /// How the limit is set (default [`LimitAlgorithm::Fixed`]).
    pub fn limit_algorithm(mut self, algorithm: LimitAlgorithm) -> Self {
        self.config.limit.algorithm = algorithm;
        self
    }

    /// The lowest an adaptive limit goes: `1..=max_concurrent_calls` (default 1).
    pub fn min_concurrent_calls(mut self, calls: u32) -> Self {
        self.config.limit.min = calls;
        self
    }

    /// Where an adaptive limit starts: `min..=max_concurrent_calls`
    /// (default `max_concurrent_calls`).
    pub fn initial_concurrent_calls(mut self, calls: u32) -> Self {
        self.config.limit.initial = Some(calls);
        self
    }

    /// Error kinds (see `Classify`) that count as drops.
    pub fn limit_drop_errors<I, S>(mut self, kinds: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Box<str>>,
    {
        self.config.limit.drop_errors = kinds.into_iter().map(Into::into).collect();
        self
    }

    /// AIMD: what a drop multiplies the limit by, in `[0.5, 1)` (default 0.9).
    pub fn backoff_ratio(mut self, ratio: f64) -> Self {
        self.config.limit.backoff_ratio = ratio;
        self
    }

    /// AIMD: a window whose average latency passes this counts as a drop
    /// (default 5 s).
    pub fn drop_timeout(mut self, timeout: Duration) -> Self {
        self.config.limit.drop_timeout = timeout;
        self
    }

    /// Gradient2: at least 1 (default 1.5).
    pub fn rtt_tolerance(mut self, tolerance: f64) -> Self {
        self.config.limit.rtt_tolerance = tolerance;
        self
    }

    /// Gradient2 and Vegas: in `(0, 1]` (default 0.2 for Gradient2, 1.0 for Vegas).
    pub fn smoothing(mut self, smoothing: f64) -> Self {
        self.config.limit.smoothing = Some(smoothing);
        self
    }

    /// Gradient2: at least 1 (default 600).
    pub fn long_window(mut self, windows: u32) -> Self {
        self.config.limit.long_window = windows;
        self
    }

    /// Gradient2: a fixed growth in place of √limit.
    pub fn queue_size(mut self, calls: u32) -> Self {
        self.config.limit.queue_size = Some(calls);
        self
    }

    /// Vegas: a fixed `alpha` in place of 3·log10(limit).
    pub fn alpha(mut self, calls: u32) -> Self {
        self.config.limit.alpha = Some(calls);
        self
    }

    /// Vegas: a fixed `beta` in place of 6·log10(limit).
    pub fn beta(mut self, calls: u32) -> Self {
        self.config.limit.beta = Some(calls);
        self
    }

    /// Vegas: a fixed `threshold` in place of log10(limit).
    pub fn threshold(mut self, calls: u32) -> Self {
        self.config.limit.threshold = Some(calls);
        self
    }

    /// Vegas: at least 1 (default 30).
    pub fn probe_multiplier(mut self, multiplier: u32) -> Self {
        self.config.limit.probe_multiplier = multiplier;
        self
    }

    /// The shortest sampling window, at least 100 ms (default 1 s).
    pub fn min_window_time(mut self, time: Duration) -> Self {
        self.config.limit.min_window_time = time;
        self
    }

    /// The longest sampling window, at least `min_window_time` (default 1 s).
    pub fn max_window_time(mut self, time: Duration) -> Self {
        self.config.limit.max_window_time = time;
        self
    }

    /// The calls a window needs to count, at least 10 (default 10).
    pub fn window_size(mut self, calls: u32) -> Self {
        self.config.limit.window_size = calls;
        self
    }

    /// Calls faster than this do not count towards latency (default 100 µs).
    pub fn min_rtt_threshold(mut self, threshold: Duration) -> Self {
        self.config.limit.min_rtt_threshold = threshold;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_known_ones() {
        for a in LimitAlgorithm::ALL {
            assert_eq!(a.as_str().parse::<LimitAlgorithm>(), Ok(a));
            assert_eq!(a.as_str().to_uppercase().parse::<LimitAlgorithm>(), Ok(a));
        }
        assert_eq!(
            "cubic".parse::<LimitAlgorithm>().unwrap_err().to_string(),
            "unknown limit algorithm \"cubic\"; expected \"fixed\", \"aimd\", \"gradient2\" or \"vegas\""
        );
    }

    #[test]
    fn defaults_are_netflix_defaults() {
        let c = BulkheadConfig::default();
        assert_eq!(c.limit_algorithm(), LimitAlgorithm::Fixed);
        assert_eq!(c.min_concurrent_calls(), 1);
        assert_eq!(c.initial_concurrent_calls(), c.max_concurrent_calls());
        assert_eq!(c.backoff_ratio(), 0.9);
        assert_eq!(c.drop_timeout(), Duration::from_secs(5));
        assert_eq!(c.rtt_tolerance(), 1.5);
        assert_eq!(c.smoothing(), 0.2);
        assert_eq!(c.long_window(), 600);
        assert_eq!(c.probe_multiplier(), 30);
        assert_eq!(
            (c.min_window_time(), c.max_window_time()),
            (Duration::from_secs(1), Duration::from_secs(1))
        );
        assert_eq!(c.window_size(), 10);
        assert_eq!(c.min_rtt_threshold(), Duration::from_micros(100));
        let vegas = BulkheadConfig::builder()
            .limit_algorithm(LimitAlgorithm::Vegas)
            .build()
            .unwrap();
        assert_eq!(vegas.smoothing(), 1.0);
    }

    #[test]
    fn bounds_are_checked_for_adaptive_limits_only() {
        let fixed = BulkheadConfig::builder()
            .max_concurrent_calls(10)
            .min_concurrent_calls(20)
            .build();
        assert!(fixed.is_ok());
        let err = BulkheadConfig::builder()
            .limit_algorithm(LimitAlgorithm::Aimd)
            .max_concurrent_calls(10)
            .min_concurrent_calls(20)
            .initial_concurrent_calls(30)
            .build()
            .unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field()).collect();
        assert_eq!(fields, ["min_concurrent_calls", "initial_concurrent_calls"]);
        assert_eq!(
            err.problems()[0].to_string(),
            "min_concurrent_calls = 20: must be at most max_concurrent_calls, the ceiling of the limit"
        );
    }

    #[test]
    fn every_parameter_out_of_range_is_named() {
        let err = BulkheadConfig::builder()
            .backoff_ratio(1.0)
            .drop_timeout(Duration::ZERO)
            .rtt_tolerance(0.5)
            .smoothing(0.0)
            .long_window(0)
            .queue_size(0)
            .alpha(7)
            .beta(3)
            .probe_multiplier(0)
            .min_window_time(Duration::from_millis(10))
            .max_window_time(Duration::from_millis(5))
            .window_size(9)
            .limit_drop_errors([" "])
            .build()
            .unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field()).collect();
        assert_eq!(
            fields,
            [
                "backoff_ratio",
                "drop_timeout",
                "rtt_tolerance",
                "smoothing",
                "long_window",
                "queue_size",
                "alpha",
                "probe_multiplier",
                "min_window_time",
                "max_window_time",
                "window_size",
                "limit_drop_errors"
            ]
        );
        assert!(
            BulkheadConfig::builder()
                .smoothing(f64::NAN)
                .build()
                .is_err()
        );
    }

    #[test]
    fn the_algorithm_carries_over_only_with_the_same_parameters() {
        let a = BulkheadConfig::builder()
            .limit_algorithm(LimitAlgorithm::Gradient2)
            .build()
            .unwrap();
        let bounds = a
            .to_builder()
            .max_concurrent_calls(50)
            .min_concurrent_calls(3)
            .build()
            .unwrap();
        assert!(a.limit.same_algorithm(&bounds.limit));
        let tolerance = a.to_builder().rtt_tolerance(2.0).build().unwrap();
        assert!(!a.limit.same_algorithm(&tolerance.limit));
        let vegas = a
            .to_builder()
            .limit_algorithm(LimitAlgorithm::Vegas)
            .build()
            .unwrap();
        assert!(!a.limit.same_algorithm(&vegas.limit));
    }
}
