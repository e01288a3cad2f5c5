//! [`CircuitBreakerConfig`] and its builder.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::circuit_breaker::State;
use crate::cluster::CircuitBreakerCluster;
use crate::error::{ConfigError, Dur, Problems};
use crate::interval::IntervalFunction;

/// The largest sliding window (calls for a count window, seconds for a time
/// window) and half-open budget resil accepts: windows are allocated up front,
/// so an absurd size is refused at start-up instead of exhausting memory.
pub const MAX_WINDOW_SIZE: u32 = 1_000_000;

/// Whether the window counts the last N calls or the calls of the last N seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SlidingWindowType {
    /// The last `sliding_window_size` calls.
    #[default]
    CountBased,
    /// The calls of the last `sliding_window_size` seconds.
    TimeBased,
}

impl SlidingWindowType {
    /// Resilience4j's spelling: `COUNT_BASED` or `TIME_BASED`.
    pub fn as_str(self) -> &'static str {
        match self {
            SlidingWindowType::CountBased => "COUNT_BASED",
            SlidingWindowType::TimeBased => "TIME_BASED",
        }
    }
}

impl fmt::Display for SlidingWindowType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The configuration of a circuit breaker: Resilience4j's settings and defaults.
///
/// | setting | default |
/// | --- | --- |
/// | `failure_rate_threshold` | 50 (percent; opens at `>=`) |
/// | `slow_call_rate_threshold` | 100 (percent; opens at `>=`) |
/// | `slow_call_duration_threshold` | 60 s (a call is slow when it takes strictly longer) |
/// | `sliding_window_type` / `sliding_window_size` | count-based, 100 |
/// | `minimum_number_of_calls` | 100 (clamped to the window size for count windows) |
/// | `permitted_number_of_calls_in_half_open_state` | 10 |
/// | `max_wait_duration_in_half_open_state` | 0 (wait for the probes forever) |
/// | `wait_duration_in_open_state` | 60 s, constant |
/// | `automatic_transition_from_open_to_half_open_enabled` | false |
/// | `record_errors` / `ignore_errors` | empty (every error is a failure, none ignored) |
/// | `event_consumer_buffer_size` | 100 (the recent-events buffer a registry attaches) |
/// | `initial_state` | `CLOSED` (Resilience4j 2.3's `initialState`: `CLOSED`, `DISABLED`, `METRICS_ONLY` or `FORCED_OPEN`) |
///
/// # Examples
///
/// ```
/// use resil_core::circuit_breaker::{CircuitBreakerConfig, SlidingWindowType};
/// use std::time::Duration;
///
/// let config = CircuitBreakerConfig::builder()
///     .sliding_window(20, 10, SlidingWindowType::CountBased)
///     .failure_rate_threshold(50.0)
///     .slow_call_duration_threshold(Duration::from_millis(500))
///     .slow_call_rate_threshold(60.0)
///     .wait_duration_in_open_state(Duration::from_secs(10))
///     .permitted_number_of_calls_in_half_open_state(3)
///     .build()?;
/// assert_eq!(config.minimum_number_of_calls(), 10);
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct CircuitBreakerConfig {
    pub(crate) failure_rate_threshold: f32,
    pub(crate) slow_call_rate_threshold: f32,
    pub(crate) slow_call_duration_threshold: Duration,
    pub(crate) permitted_number_of_calls_in_half_open_state: u32,
    pub(crate) max_wait_duration_in_half_open_state: Duration,
    pub(crate) sliding_window_type: SlidingWindowType,
    pub(crate) sliding_window_size: u32,
    pub(crate) minimum_number_of_calls: u32,
    pub(crate) wait_interval_function_in_open_state: IntervalFunction,
    pub(crate) automatic_transition_from_open_to_half_open_enabled: bool,
    pub(crate) record_errors: Arc<[Box<str>]>,
    pub(crate) ignore_errors: Arc<[Box<str>]>,
    pub(crate) event_consumer_buffer_size: u32,
    pub(crate) initial_state: State,
    pub(crate) cluster: Option<CircuitBreakerCluster>,
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        CircuitBreakerConfig {
            failure_rate_threshold: 50.0,
            slow_call_rate_threshold: 100.0,
            slow_call_duration_threshold: Duration::from_secs(60),
            permitted_number_of_calls_in_half_open_state: 10,
            max_wait_duration_in_half_open_state: Duration::ZERO,
            sliding_window_type: SlidingWindowType::CountBased,
            sliding_window_size: 100,
            minimum_number_of_calls: 100,
            wait_interval_function_in_open_state: IntervalFunction::of(Duration::from_secs(60))
                .unwrap_or_default(),
            automatic_transition_from_open_to_half_open_enabled: false,
            record_errors: Arc::new([]),
            ignore_errors: Arc::new([]),
            event_consumer_buffer_size: 100,
            initial_state: State::Closed,
            cluster: None,
        }
    }
}

impl CircuitBreakerConfig {
    /// A builder with Resilience4j's defaults.
    pub fn builder() -> CircuitBreakerConfigBuilder {
        CircuitBreakerConfigBuilder::from_config(CircuitBreakerConfig::default())
    }

    /// A builder that starts from this configuration (Resilience4j's
    /// `CircuitBreakerConfig.from(base)`; setting the open wait again replaces it).
    pub fn to_builder(&self) -> CircuitBreakerConfigBuilder {
        CircuitBreakerConfigBuilder::from_config(self.clone())
    }

    crate::config_kit::getters! {
        /// Failure rate, in percent, at or above which the breaker opens.
        failure_rate_threshold: f32;
        /// Slow-call rate, in percent, at or above which the breaker opens.
        slow_call_rate_threshold: f32;
        /// A call taking strictly longer than this is slow.
        slow_call_duration_threshold: Duration;
        /// Probes admitted in HALF_OPEN (also the size of its window).
        permitted_number_of_calls_in_half_open_state: u32;
        /// How long HALF_OPEN waits for its probes before opening again; zero = forever.
        max_wait_duration_in_half_open_state: Duration;
        /// Count- or time-based window.
        sliding_window_type: SlidingWindowType;
        /// Calls (count-based) or seconds (time-based).
        sliding_window_size: u32;
        /// Calls needed before rates are computed, as configured (a count window
        /// uses at most its size at run time).
        minimum_number_of_calls: u32;
    }

    /// The wait in OPEN as a function of the attempt (consecutive openings).
    pub fn wait_interval_function_in_open_state(&self) -> &IntervalFunction {
        &self.wait_interval_function_in_open_state
    }
    crate::config_kit::getters! {
        /// Whether a timer moves OPEN to HALF_OPEN when the wait is over.
        automatic_transition_from_open_to_half_open_enabled: bool;
    }

    /// Error kinds recorded as failures (empty: every error not ignored).
    pub fn record_errors(&self) -> &[Box<str>] {
        &self.record_errors
    }
    /// Error kinds that count neither as success nor as failure.
    pub fn ignore_errors(&self) -> &[Box<str>] {
        &self.ignore_errors
    }
    crate::config_kit::getters! {
        @buffer;
        /// The state a new breaker starts in (Resilience4j 2.3's `initialState`);
        /// `METRICS_ONLY` is the breaker's shadow mode: it records and publishes
        /// every rate crossing, and never opens.
        initial_state: State;
    }

    /// The fleet's half-open episode's settings, when HALF_OPEN is shared
    /// with other processes.
    pub fn cluster(&self) -> Option<&CircuitBreakerCluster> {
        self.cluster.as_ref()
    }
}

impl fmt::Debug for CircuitBreakerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerConfig")
            .field("failure_rate_threshold", &self.failure_rate_threshold)
            .field("slow_call_rate_threshold", &self.slow_call_rate_threshold)
            .field(
                "slow_call_duration_threshold",
                &self.slow_call_duration_threshold,
            )
            .field(
                "permitted_number_of_calls_in_half_open_state",
                &self.permitted_number_of_calls_in_half_open_state,
            )
            .field(
                "max_wait_duration_in_half_open_state",
                &self.max_wait_duration_in_half_open_state,
            )
            .field("sliding_window_type", &self.sliding_window_type)
            .field("sliding_window_size", &self.sliding_window_size)
            .field("minimum_number_of_calls", &self.minimum_number_of_calls)
            .field(
                "wait_interval_function_in_open_state",
                &self.wait_interval_function_in_open_state,
            )
            .field(
                "automatic_transition_from_open_to_half_open_enabled",
                &self.automatic_transition_from_open_to_half_open_enabled,
            )
            .field("record_errors", &self.record_errors)
            .field("ignore_errors", &self.ignore_errors)
            .field(
                "event_consumer_buffer_size",
                &self.event_consumer_buffer_size,
            )
            .field("initial_state", &self.initial_state)
            .field("cluster", &self.cluster)
            .finish()
    }
}

/// The open-state wait as last set: a constant duration (validated at
/// `build()`) or a function. The last setter wins (Resilience4j 2.2
/// throws when the wait is set twice).
#[derive(Clone, Debug)]
enum OpenWait {
    Unchanged,
    Constant(Duration),
    Function(IntervalFunction),
}

/// Builds a [`CircuitBreakerConfig`]; `build()` checks every value and reports all problems.
#[derive(Clone, Debug)]
pub struct CircuitBreakerConfigBuilder {
    config: CircuitBreakerConfig,
    open_wait: OpenWait,
}

impl CircuitBreakerConfigBuilder {
    fn from_config(config: CircuitBreakerConfig) -> Self {
        CircuitBreakerConfigBuilder {
            config,
            open_wait: OpenWait::Unchanged,
        }
    }

    crate::config_kit::setters! {
        /// Percent of failed calls at or above which the breaker opens: `(0, 100]`.
        failure_rate_threshold: f32;
        /// Percent of slow calls at or above which the breaker opens: `(0, 100]`.
        slow_call_rate_threshold: f32;
        /// A call that takes strictly longer is slow; at least 1 ns.
        slow_call_duration_threshold: Duration;
        /// Probes admitted in HALF_OPEN; at least 1.
        permitted_number_of_calls_in_half_open_state: u32;
        /// How long HALF_OPEN waits for its probes before opening again (under 1 ms: forever).
        max_wait_duration_in_half_open_state: Duration;
        /// Count- or time-based window.
        sliding_window_type: SlidingWindowType;
        /// Calls (count-based) or seconds (time-based); at least 1.
        sliding_window_size: u32;
        /// Calls needed before rates are computed; at least 1.
        minimum_number_of_calls: u32;
    }

    /// Window size, minimum calls and type at once. For a count window the
    /// stored minimum is clamped to the size (as Resilience4j's `slidingWindow` does).
    pub fn sliding_window(
        mut self,
        size: u32,
        minimum_number_of_calls: u32,
        window_type: SlidingWindowType,
    ) -> Self {
        self.config.sliding_window_size = size;
        self.config.minimum_number_of_calls = match window_type {
            SlidingWindowType::CountBased => minimum_number_of_calls.min(size),
            SlidingWindowType::TimeBased => minimum_number_of_calls,
        };
        self.config.sliding_window_type = window_type;
        self
    }
    /// A constant wait in OPEN; at least 1 ms.
    pub fn wait_duration_in_open_state(mut self, wait: Duration) -> Self {
        self.open_wait = OpenWait::Constant(wait);
        self
    }
    /// The wait in OPEN as a function of consecutive openings (exponential, randomized, ...).
    pub fn wait_interval_function_in_open_state(mut self, f: IntervalFunction) -> Self {
        self.open_wait = OpenWait::Function(f);
        self
    }
    /// Whether a timer moves OPEN to HALF_OPEN when the wait is over.
    pub fn automatic_transition_from_open_to_half_open_enabled(mut self, enabled: bool) -> Self {
        self.config
            .automatic_transition_from_open_to_half_open_enabled = enabled;
        self
    }
    /// Error kinds (see `Classify`) recorded as failures; others count as successes.
    pub fn record_errors<I, S>(mut self, kinds: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Box<str>>,
    {
        self.config.record_errors = kinds.into_iter().map(Into::into).collect();
        self
    }
    /// Error kinds that count neither as success nor as failure (ignore wins over record).
    pub fn ignore_errors<I, S>(mut self, kinds: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Box<str>>,
    {
        self.config.ignore_errors = kinds.into_iter().map(Into::into).collect();
        self
    }
    crate::config_kit::setters! {
        @buffer;
        /// The state a new breaker starts in (default `CLOSED`): `CLOSED`,
        /// `DISABLED`, `METRICS_ONLY` (shadow: record, publish, never open) or
        /// `FORCED_OPEN`, as Resilience4j 2.3's `initialState`.
        initial_state: State;
        /// Shares HALF_OPEN with every process using the same backend and key:
        /// one episode, its probes and its verdict (see
        /// [`CircuitBreakerCluster`]); `None` (the default) keeps it local.
        cluster: Option<CircuitBreakerCluster>;
    }

    /// Checks every value (Resilience4j's builder rules) and builds the configuration.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] listing every value out of range.
    pub fn build(self) -> Result<CircuitBreakerConfig, ConfigError> {
        let mut c = self.config;
        let mut p = Problems::default();
        let pct = |v: f32| v > 0.0 && v <= 100.0;
        p.check(
            pct(c.failure_rate_threshold),
            "failure_rate_threshold",
            c.failure_rate_threshold,
            "must be in (0, 100]",
        );
        p.check(
            pct(c.slow_call_rate_threshold),
            "slow_call_rate_threshold",
            c.slow_call_rate_threshold,
            "must be in (0, 100]",
        );
        p.check(
            !c.slow_call_duration_threshold.is_zero(),
            "slow_call_duration_threshold",
            Dur(c.slow_call_duration_threshold),
            "must be at least 1ns",
        );
        p.check(
            c.permitted_number_of_calls_in_half_open_state >= 1,
            "permitted_number_of_calls_in_half_open_state",
            c.permitted_number_of_calls_in_half_open_state,
            "must be at least 1",
        );
        p.check(
            c.permitted_number_of_calls_in_half_open_state <= MAX_WINDOW_SIZE,
            "permitted_number_of_calls_in_half_open_state",
            c.permitted_number_of_calls_in_half_open_state,
            "must be at most 1000000",
        );
        p.check(
            c.sliding_window_size >= 1,
            "sliding_window_size",
            c.sliding_window_size,
            "must be at least 1",
        );
        p.check(
            c.sliding_window_size <= MAX_WINDOW_SIZE,
            "sliding_window_size",
            c.sliding_window_size,
            "must be at most 1000000",
        );
        p.check(
            c.minimum_number_of_calls >= 1,
            "minimum_number_of_calls",
            c.minimum_number_of_calls,
            "must be at least 1",
        );
        match self.open_wait {
            OpenWait::Unchanged => {}
            OpenWait::Constant(d) => match IntervalFunction::of(d) {
                Ok(f) => c.wait_interval_function_in_open_state = f,
                Err(_) => p.push(
                    "wait_duration_in_open_state",
                    Dur(d),
                    "must be at least 1ms",
                ),
            },
            OpenWait::Function(f) => c.wait_interval_function_in_open_state = f,
        }
        crate::event::check_buffer_size(&mut p, c.event_consumer_buffer_size);
        p.check(
            !matches!(c.initial_state, State::Open | State::HalfOpen),
            "initial_state",
            c.initial_state,
            "must be CLOSED, DISABLED, METRICS_ONLY or FORCED_OPEN",
        );
        if let Some(cluster) = &c.cluster {
            p.check(
                cluster.timeout >= Duration::from_micros(1)
                    && cluster.timeout <= Duration::from_secs(60),
                "cluster_timeout",
                Dur(cluster.timeout),
                "must be in 1us..=60s",
            );
            p.check(
                cluster.probe_expiry >= Duration::from_millis(1),
                "cluster_probe_expiry",
                Dur(cluster.probe_expiry),
                "must be at least 1ms",
            );
        }
        p.finish(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_resilience4j_defaults() {
        let c = CircuitBreakerConfig::default();
        assert_eq!(c.failure_rate_threshold(), 50.0);
        assert_eq!(c.slow_call_rate_threshold(), 100.0);
        assert_eq!(c.slow_call_duration_threshold(), Duration::from_secs(60));
        assert_eq!(c.permitted_number_of_calls_in_half_open_state(), 10);
        assert_eq!(c.max_wait_duration_in_half_open_state(), Duration::ZERO);
        assert_eq!(c.sliding_window_type(), SlidingWindowType::CountBased);
        assert_eq!(c.sliding_window_size(), 100);
        assert_eq!(c.minimum_number_of_calls(), 100);
        assert_eq!(
            c.wait_interval_function_in_open_state().apply(1),
            Duration::from_secs(60)
        );
        assert!(!c.automatic_transition_from_open_to_half_open_enabled());
        assert_eq!(c.event_consumer_buffer_size(), 100);
    }

    #[test]
    fn every_rule_is_reported_at_once() {
        let err = CircuitBreakerConfig::builder()
            .failure_rate_threshold(0.0)
            .slow_call_rate_threshold(100.5)
            .slow_call_duration_threshold(Duration::ZERO)
            .permitted_number_of_calls_in_half_open_state(0)
            .sliding_window_size(0)
            .minimum_number_of_calls(0)
            .wait_duration_in_open_state(Duration::from_nanos(999_999))
            .build()
            .unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field()).collect();
        assert_eq!(
            fields,
            [
                "failure_rate_threshold",
                "slow_call_rate_threshold",
                "slow_call_duration_threshold",
                "permitted_number_of_calls_in_half_open_state",
                "sliding_window_size",
                "minimum_number_of_calls",
                "wait_duration_in_open_state"
            ]
        );
        assert!(
            err.to_string()
                .contains("wait_duration_in_open_state = 999999ns: must be at least 1ms")
        );
    }

    #[test]
    fn a_tiny_positive_failure_rate_is_accepted_nan_is_not() {
        assert!(
            CircuitBreakerConfig::builder()
                .failure_rate_threshold(0.001)
                .build()
                .is_ok()
        );
        assert!(
            CircuitBreakerConfig::builder()
                .failure_rate_threshold(f32::NAN)
                .build()
                .is_err()
        );
    }

    #[test]
    fn the_last_open_wait_setter_wins() {
        let f = IntervalFunction::of_exponential_backoff(Duration::from_secs(1), 2.0).unwrap();
        let c = CircuitBreakerConfig::builder()
            .wait_duration_in_open_state(Duration::from_secs(5))
            .wait_interval_function_in_open_state(f)
            .build()
            .unwrap();
        assert_eq!(
            c.wait_interval_function_in_open_state().apply(2),
            Duration::from_secs(2)
        );
        let c = c
            .to_builder()
            .wait_duration_in_open_state(Duration::from_secs(5))
            .build()
            .unwrap();
        assert_eq!(
            c.wait_interval_function_in_open_state().apply(2),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn sliding_window_clamps_the_minimum_for_count_windows() {
        let c = CircuitBreakerConfig::builder()
            .sliding_window(5, 100, SlidingWindowType::CountBased)
            .build()
            .unwrap();
        assert_eq!(c.minimum_number_of_calls(), 5);
        let c = CircuitBreakerConfig::builder()
            .sliding_window(5, 100, SlidingWindowType::TimeBased)
            .build()
            .unwrap();
        assert_eq!(c.minimum_number_of_calls(), 100);
    }
}
