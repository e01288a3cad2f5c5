//! The JSON of instances and events, shaped like Resilience4j's actuator DTOs.
//!
//! Field names are those of `resilience4j-framework-common`'s
//! `CircuitBreakerDetails`, `CircuitBreakerEventDTO`, `RetryEventDTO`,
//! `BulkheadEventDTO`, `RateLimiterEventDTO` and `TimeLimiterEventDTO`;
//! values are printed as Java prints them (a `float` rate as `"50.0%"`, a
//! `ZonedDateTime` as `2024-05-01T10:15:30.123Z`); fields that Java leaves
//! `null` are left out, as Spring Boot's actuator mapper does.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use resil_config::GlobalPrimitive;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig, BulkheadEvent};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent};
use resil_core::deadline::{Deadline, DeadlineConfig};
use resil_core::event::{Event, EventKind};
use resil_core::hedge::{Hedge, HedgeConfig, HedgeEvent};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig, RateLimiterEvent};
use resil_core::retry::{Retry, RetryConfig, RetryEvent};
use resil_core::thread_pool_bulkhead::{
    ThreadPoolBulkhead, ThreadPoolBulkheadConfig, ThreadPoolBulkheadEvent,
};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig, TimeLimiterEvent};
use serde_json::{Map, Value, json};

use crate::observe::Observed;

/// A Java `float` as `Float.toString` prints it: `50.0`, `-1.0`, `33.333336`, `1.0E-4`.
pub(crate) fn java_float(v: f32) -> String {
    if v.is_nan() {
        return "NaN".to_owned();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    if (1e-3..1e7).contains(&v.abs()) {
        let s = v.to_string();
        if s.contains('.') { s } else { s + ".0" }
    } else {
        // Rust's shortest digits, in Java's computerized scientific notation
        let s = format!("{v:e}");
        let (mantissa, exponent) = s.split_once('e').unwrap_or((&s, "0"));
        let dot = if mantissa.contains('.') { "" } else { ".0" };
        format!("{mantissa}{dot}E{exponent}")
    }
}

/// A percentage as Resilience4j's actuator prints it: `java_float(v) + "%"`.
pub(crate) fn percent(v: f32) -> String {
    java_float(v) + "%"
}

/// A wall-clock time as Java's `ZonedDateTime.toString()` prints it in UTC:
/// `2024-05-01T10:15Z`, `2024-05-01T10:15:30.123Z` (seconds and fractions
/// only when not zero, fractions in groups of three digits).
pub(crate) fn creation_time(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let (secs, nanos) = (since.as_secs(), since.subsec_nanos());
    let (year, month, day) = civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let mut out = format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}");
    if s > 0 || nanos > 0 {
        let _ = write!(out, ":{s:02}");
        if nanos % 1_000_000 == 0 && nanos > 0 {
            let _ = write!(out, ".{:03}", nanos / 1_000_000);
        } else if nanos % 1000 == 0 && nanos > 0 {
            let _ = write!(out, ".{:06}", nanos / 1000);
        } else if nanos > 0 {
            let _ = write!(out, ".{nanos:09}");
        }
    }
    out.push('Z');
    out
}

/// Year, month and day of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// The fields every event DTO starts with: the instance name under the
/// DTO's own key, `type` and `creationTime`.
fn base<K: EventKind>(name_key: &str, event: &Event<K>, ty: &'static str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(name_key.to_owned(), json!(event.name()));
    m.insert("type".to_owned(), json!(ty));
    m.insert(
        "creationTime".to_owned(),
        json!(creation_time(event.wall_time())),
    );
    m
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `CircuitBreakerEventDTO`.
pub(crate) fn circuit_breaker_event(event: &Event<CircuitBreakerEvent>) -> (&'static str, Value) {
    let ty = event.kind().event_type().as_str();
    let mut m = base("circuitBreakerName", event, ty);
    match *event.kind() {
        CircuitBreakerEvent::Success { elapsed } => {
            m.insert("durationInMs".to_owned(), json!(millis(elapsed)));
        }
        CircuitBreakerEvent::Error {
            elapsed,
            error_kind,
        }
        | CircuitBreakerEvent::IgnoredError {
            elapsed,
            error_kind,
        } => {
            if let Some(kind) = error_kind {
                m.insert("errorMessage".to_owned(), json!(kind));
            }
            m.insert("durationInMs".to_owned(), json!(millis(elapsed)));
        }
        CircuitBreakerEvent::StateTransition { from, to } => {
            m.insert(
                "stateTransition".to_owned(),
                json!(format!("{}_TO_{}", from.as_str(), to.as_str())),
            );
        }
        CircuitBreakerEvent::ClusterBackendChanged { up } => {
            // resil's own event: whether the fleet's backend is up now
            m.insert("up".to_owned(), json!(up));
        }
        _ => {}
    }
    (ty, Value::Object(m))
}

/// `RetryEventDTO` (`numberOfAttempts` is a Java `int`: always there).
pub(crate) fn retry_event(event: &Event<RetryEvent>) -> (&'static str, Value) {
    let ty = event.kind().event_type().as_str();
    let mut m = base("retryName", event, ty);
    if let Some(kind) = event.kind().error_kind() {
        m.insert("errorMessage".to_owned(), json!(kind));
    }
    m.insert(
        "numberOfAttempts".to_owned(),
        json!(event.kind().number_of_retry_attempts()),
    );
    (ty, Value::Object(m))
}

/// `BulkheadEventDTO`; a `LIMIT_CHANGED` event adds `previousLimit` and
/// `limit`.
pub(crate) fn bulkhead_event(event: &Event<BulkheadEvent>) -> (&'static str, Value) {
    let ty = event.kind().event_type().as_str();
    let mut m = base("bulkheadName", event, ty);
    if let BulkheadEvent::LimitChanged { from, to } = event.kind() {
        m.insert("previousLimit".to_owned(), json!(from));
        m.insert("limit".to_owned(), json!(to));
    }
    (ty, Value::Object(m))
}

/// `BulkheadEventDTO`: Resilience4j's thread-pool bulkheads publish bulkhead events.
pub(crate) fn thread_pool_bulkhead_event(
    event: &Event<ThreadPoolBulkheadEvent>,
) -> (&'static str, Value) {
    let ty = event.kind().event_type().as_str();
    (ty, Value::Object(base("bulkheadName", event, ty)))
}

/// `RateLimiterEventDTO`.
pub(crate) fn rate_limiter_event(event: &Event<RateLimiterEvent>) -> (&'static str, Value) {
    let ty = event.kind().event_type().as_str();
    let mut m = base("rateLimiterName", event, ty);
    match *event.kind() {
        RateLimiterEvent::ClusterBackendChanged { up } => {
            // resil's own event: whether the fleet's backend is up now
            m.insert("up".to_owned(), json!(up));
        }
        RateLimiterEvent::ShadowRefusal { permits } => {
            // resil's own event: the permits granted in shadow mode
            m.insert("numberOfPermits".to_owned(), json!(permits));
        }
        _ => {}
    }
    (ty, Value::Object(m))
}

/// `TimeLimiterEventDTO`.
pub(crate) fn time_limiter_event(event: &Event<TimeLimiterEvent>) -> (&'static str, Value) {
    let ty = event.kind().event_type().as_str();
    (ty, Value::Object(base("timeLimiterName", event, ty)))
}

/// A hedge's event (resil's own): its type, and the attempt, winner or
/// attempts it names.
pub(crate) fn hedge_event(event: &Event<HedgeEvent>) -> (&'static str, Value) {
    let ty = event.kind().event_type().as_str();
    let mut m = base("hedgeName", event, ty);
    match *event.kind() {
        HedgeEvent::Hedged { attempt, delay } => {
            m.insert("attempt".to_owned(), json!(attempt));
            if let Some(delay) = delay {
                m.insert(
                    "delay".to_owned(),
                    json!(resil_core::clock::format_duration(delay)),
                );
            }
        }
        HedgeEvent::BudgetExhausted { attempt } => {
            m.insert("attempt".to_owned(), json!(attempt));
        }
        HedgeEvent::Success { winner, attempts } => {
            m.insert("winner".to_owned(), json!(winner));
            m.insert("numberOfAttempts".to_owned(), json!(attempts));
        }
        HedgeEvent::Error {
            attempts,
            error_kind,
        } => {
            m.insert("numberOfAttempts".to_owned(), json!(attempts));
            if let Some(kind) = error_kind {
                m.insert("errorKind".to_owned(), json!(kind));
            }
        }
        _ => {}
    }
    (ty, Value::Object(m))
}

/// A primitive whose events have Resilience4j's JSON (the event-stream
/// sink's and the buffered events' shape).
pub(crate) trait EventJson: Observed {
    /// The event's type name (`STATE_TRANSITION`) and its actuator JSON.
    fn event_json(event: &Event<Self::Kind>) -> (&'static str, Value);
}

macro_rules! event_json {
    ($($ty:ty => $f:ident;)*) => {$(
        impl EventJson for $ty {
            fn event_json(event: &Event<Self::Kind>) -> (&'static str, Value) {
                $f(event)
            }
        }
    )*};
}

event_json! {
    CircuitBreaker => circuit_breaker_event;
    Retry => retry_event;
    Bulkhead => bulkhead_event;
    ThreadPoolBulkhead => thread_pool_bulkhead_event;
    RateLimiter => rate_limiter_event;
    TimeLimiter => time_limiter_event;
    Hedge => hedge_event;
}

/// What the actuator shows of one kind of primitive.
pub(crate) trait Listed: GlobalPrimitive {
    /// The key of its list in the endpoints' JSON (`circuitBreakers`).
    const LIST_KEY: &'static str;

    /// Its live state.
    fn state(&self) -> Value;
    /// How much it refuses now, for the order of a keyed name's keys: 0
    /// refuses every call (an OPEN or FORCED_OPEN breaker, a full bulkhead,
    /// a rate limiter without permits), 1 some (a HALF_OPEN breaker), 2 none.
    fn refusal_rank(&self) -> u8 {
        2
    }
    /// Its current configuration.
    fn current_config(&self) -> Self::Config;
}

/// What the actuator shows of a kind of primitive that publishes events.
pub(crate) trait Shown: Listed + EventJson {
    /// The key of its events list (`circuitBreakerEvents`).
    const EVENTS_KEY: &'static str;
    /// Every event type name Resilience4j's enum has (`valueOf` accepts them).
    const EVENT_TYPES: &'static [&'static str];

    /// Its buffered events, oldest first, with their time for sorting.
    fn events(&self) -> Vec<(resil_core::clock::Nanos, Value)>;
}

macro_rules! events {
    ($self:ident) => {
        $self
            .event_publisher()
            .recent_events()
            .iter()
            .map(|e| (e.created_at(), <Self as EventJson>::event_json(e).1))
            .collect()
    };
}

/// `CircuitBreakerDetails`.
pub(crate) fn circuit_breaker_details(cb: &CircuitBreaker) -> Value {
    let m = cb.metrics();
    let c = cb.config();
    json!({
        "failureRate": percent(m.failure_rate()),
        "failureRateThreshold": percent(c.failure_rate_threshold()),
        "slowCallRate": percent(m.slow_call_rate()),
        "slowCallRateThreshold": percent(c.slow_call_rate_threshold()),
        "bufferedCalls": m.number_of_buffered_calls(),
        "failedCalls": m.number_of_failed_calls(),
        "slowCalls": m.number_of_slow_calls(),
        "slowFailedCalls": m.number_of_slow_failed_calls(),
        "notPermittedCalls": m.number_of_not_permitted_calls(),
        "state": m.state().as_str(),
    })
}

impl Listed for CircuitBreaker {
    const LIST_KEY: &'static str = "circuitBreakers";
    fn state(&self) -> Value {
        circuit_breaker_details(self)
    }
    fn refusal_rank(&self) -> u8 {
        use resil_core::circuit_breaker::State;
        match CircuitBreaker::state(self) {
            State::Open | State::ForcedOpen => 0,
            State::HalfOpen => 1,
            _ => 2,
        }
    }
    fn current_config(&self) -> CircuitBreakerConfig {
        self.config().clone()
    }
}

impl Shown for CircuitBreaker {
    const EVENTS_KEY: &'static str = "circuitBreakerEvents";
    const EVENT_TYPES: &'static [&'static str] = &[
        "ERROR",
        "IGNORED_ERROR",
        "SUCCESS",
        "NOT_PERMITTED",
        "STATE_TRANSITION",
        "RESET",
        "FORCED_OPEN",
        "DISABLED",
        "FAILURE_RATE_EXCEEDED",
        "SLOW_CALL_RATE_EXCEEDED",
        "CLUSTER_BACKEND_CHANGED",
    ];
    fn events(&self) -> Vec<(resil_core::clock::Nanos, Value)> {
        events!(self)
    }
}

impl Listed for Retry {
    const LIST_KEY: &'static str = "retries";
    /// Resilience4j's `Retry.Metrics`, and the retry budget it spends, if any
    /// (`retryBudget`: its name, the retries its balance pays for, the
    /// retries it denied).
    fn state(&self) -> Value {
        let m = self.metrics();
        let mut state = json!({
            "numberOfSuccessfulCallsWithoutRetryAttempt": m.number_of_successful_calls_without_retry_attempt(),
            "numberOfSuccessfulCallsWithRetryAttempt": m.number_of_successful_calls_with_retry_attempt(),
            "numberOfFailedCallsWithoutRetryAttempt": m.number_of_failed_calls_without_retry_attempt(),
            "numberOfFailedCallsWithRetryAttempt": m.number_of_failed_calls_with_retry_attempt(),
            "numberOfTotalCalls": m.number_of_total_calls(),
        });
        if let Some(budget) = self.config().budget() {
            state["retryBudget"] = retry_budget(budget);
        }
        state
    }
    fn current_config(&self) -> RetryConfig {
        self.config().clone()
    }
}

impl Shown for Retry {
    const EVENTS_KEY: &'static str = "retryEvents";
    const EVENT_TYPES: &'static [&'static str] = &[
        "RETRY",
        "ERROR",
        "SUCCESS",
        "IGNORED_ERROR",
        "SHADOW_REFUSAL",
        "BUDGET_EXHAUSTED",
    ];
    fn events(&self) -> Vec<(resil_core::clock::Nanos, Value)> {
        events!(self)
    }
}

/// The retry budget a retry or a hedge spends: its name, the retries its
/// balance pays for, the retries it denied (every spender's).
fn retry_budget(budget: &resil_core::retry::RetryBudget) -> Value {
    let b = budget.metrics();
    json!({
        "name": budget.name(),
        "balance": b.balance(),
        "denied": b.denied(),
    })
}

const BULKHEAD_EVENT_TYPES: &[&str] = &[
    "CALL_PERMITTED",
    "CALL_REJECTED",
    "CALL_FINISHED",
    "SHADOW_REFUSAL",
];

impl Listed for Bulkhead {
    const LIST_KEY: &'static str = "bulkheads";
    /// Resilience4j's `Bulkhead.Metrics` (the limit is the live one, which
    /// an adaptive bulkhead moves).
    fn state(&self) -> Value {
        let m = self.metrics();
        json!({
            "availableConcurrentCalls": m.available_concurrent_calls(),
            "maxAllowedConcurrentCalls": m.max_allowed_concurrent_calls(),
        })
    }
    fn refusal_rank(&self) -> u8 {
        if self.metrics().available_concurrent_calls() == 0 {
            0
        } else {
            2
        }
    }
    fn current_config(&self) -> BulkheadConfig {
        self.config()
    }
}

impl Shown for Bulkhead {
    const EVENTS_KEY: &'static str = "bulkheadEvents";
    const EVENT_TYPES: &'static [&'static str] = &[
        "CALL_PERMITTED",
        "CALL_REJECTED",
        "CALL_FINISHED",
        "SHADOW_REFUSAL",
        "LIMIT_CHANGED",
    ];
    fn events(&self) -> Vec<(resil_core::clock::Nanos, Value)> {
        events!(self)
    }
}

impl Listed for ThreadPoolBulkhead {
    const LIST_KEY: &'static str = "threadPoolBulkheads";
    /// Resilience4j's `ThreadPoolBulkhead.Metrics`.
    fn state(&self) -> Value {
        let m = self.metrics();
        json!({
            "coreThreadPoolSize": m.core_thread_pool_size(),
            "threadPoolSize": m.thread_pool_size(),
            "maximumThreadPoolSize": m.maximum_thread_pool_size(),
            "queueDepth": m.queue_depth(),
            "queueCapacity": m.queue_capacity(),
            "remainingQueueCapacity": m.remaining_queue_capacity(),
            "activeThreadCount": m.active_thread_count(),
            "availableThreadCount": m.available_thread_count(),
        })
    }
    fn refusal_rank(&self) -> u8 {
        let m = self.metrics();
        if m.available_thread_count() == 0 && m.remaining_queue_capacity() == 0 {
            0
        } else {
            2
        }
    }
    fn current_config(&self) -> ThreadPoolBulkheadConfig {
        self.config().clone()
    }
}

impl Shown for ThreadPoolBulkhead {
    const EVENTS_KEY: &'static str = "threadPoolBulkheadEvents";
    const EVENT_TYPES: &'static [&'static str] = BULKHEAD_EVENT_TYPES;
    fn events(&self) -> Vec<(resil_core::clock::Nanos, Value)> {
        events!(self)
    }
}

impl Listed for RateLimiter {
    const LIST_KEY: &'static str = "rateLimiters";
    /// Resilience4j's `RateLimiter.Metrics`.
    fn state(&self) -> Value {
        let m = self.metrics();
        json!({
            "availablePermissions": m.available_permissions(),
            "numberOfWaitingThreads": m.number_of_waiting_threads(),
        })
    }
    fn refusal_rank(&self) -> u8 {
        if self.metrics().available_permissions() <= 0 {
            0
        } else {
            2
        }
    }
    fn current_config(&self) -> RateLimiterConfig {
        self.config()
    }
}

impl Shown for RateLimiter {
    const EVENTS_KEY: &'static str = "rateLimiterEvents";
    const EVENT_TYPES: &'static [&'static str] = &[
        "SUCCESSFUL_ACQUIRE",
        "FAILED_ACQUIRE",
        "DRAINED",
        "CLUSTER_BACKEND_CHANGED",
        "SHADOW_REFUSAL",
    ];
    fn events(&self) -> Vec<(resil_core::clock::Nanos, Value)> {
        events!(self)
    }
}

impl Listed for TimeLimiter {
    const LIST_KEY: &'static str = "timeLimiters";
    /// The time limiter's counts (Resilience4j's time limiter has no metrics object).
    fn state(&self) -> Value {
        let m = self.metrics();
        json!({
            "numberOfSuccessfulCalls": m.number_of_successful_calls(),
            "numberOfFailedCalls": m.number_of_failed_calls(),
            "numberOfTimeoutCalls": m.number_of_timeout_calls(),
        })
    }
    fn current_config(&self) -> TimeLimiterConfig {
        *self.config()
    }
}

impl Shown for TimeLimiter {
    const EVENTS_KEY: &'static str = "timeLimiterEvents";
    const EVENT_TYPES: &'static [&'static str] = &["SUCCESS", "ERROR", "TIMEOUT", "SHADOW_REFUSAL"];
    fn events(&self) -> Vec<(resil_core::clock::Nanos, Value)> {
        events!(self)
    }
}

impl Listed for Hedge {
    const LIST_KEY: &'static str = "hedges";
    /// The hedge's counts, the delay a call would wait now, and the retry
    /// budget it spends, if any (`retryBudget`, as a retry's).
    fn state(&self) -> Value {
        let m = self.metrics();
        let mut state = json!({
            "numberOfPrimaryWins": m.number_of_primary_wins(),
            "numberOfHedgeWins": m.number_of_hedge_wins(),
            "numberOfFailedCalls": m.number_of_failed_calls(),
            "numberOfHedgedAttempts": m.number_of_hedged_attempts(),
            "currentDelay": resil_core::clock::format_duration(self.current_delay()),
        });
        if let Some(budget) = self.config().budget() {
            state["retryBudget"] = retry_budget(budget);
        }
        state
    }
    fn current_config(&self) -> HedgeConfig {
        self.config().clone()
    }
}

impl Shown for Hedge {
    const EVENTS_KEY: &'static str = "hedgeEvents";
    const EVENT_TYPES: &'static [&'static str] =
        &["HEDGED", "BUDGET_EXHAUSTED", "SUCCESS", "ERROR"];
    fn events(&self) -> Vec<(resil_core::clock::Nanos, Value)> {
        events!(self)
    }
}

/// A deadline publishes no events (the pattern that notices it counts
/// `resil_deadline_exceeded_total`): it is listed, with its timeout.
impl Listed for Deadline {
    const LIST_KEY: &'static str = "deadlines";

    /// The timeout a call passing the deadline gets now.
    fn state(&self) -> Value {
        json!({
            "timeout": resil_core::clock::format_duration(self.config().timeout()),
        })
    }
    fn current_config(&self) -> DeadlineConfig {
        *self.config()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn floats_print_as_java_prints_them() {
        assert_eq!(java_float(50.0), "50.0");
        assert_eq!(java_float(-1.0), "-1.0");
        assert_eq!(java_float(100.0), "100.0");
        assert_eq!(java_float(100.0 / 3.0), "33.333332");
        assert_eq!(java_float(0.5), "0.5");
        assert_eq!(java_float(0.0), "0.0");
        assert_eq!(java_float(1e-4), "1.0E-4");
        assert_eq!(java_float(1.5e7), "1.5E7");
        assert_eq!(percent(66.666664), "66.666664%");
    }

    #[test]
    fn times_print_as_zoned_date_time_in_utc() {
        let at = |secs: u64, nanos: u32| UNIX_EPOCH + Duration::new(secs, nanos);
        assert_eq!(creation_time(at(0, 0)), "1970-01-01T00:00Z");
        assert_eq!(creation_time(at(61, 0)), "1970-01-01T00:01:01Z");
        assert_eq!(creation_time(at(0, 5_000_000)), "1970-01-01T00:00:00.005Z");
        assert_eq!(creation_time(at(0, 5_000)), "1970-01-01T00:00:00.000005Z");
        assert_eq!(creation_time(at(0, 5)), "1970-01-01T00:00:00.000000005Z");
        // 2024-02-29T12:30:15.250Z, a leap day
        assert_eq!(
            creation_time(at(1_709_209_815, 250_000_000)),
            "2024-02-29T12:30:15.250Z"
        );
        assert_eq!(creation_time(at(951_782_400, 0)), "2000-02-29T00:00Z");
    }
}
