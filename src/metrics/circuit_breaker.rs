//! The circuit breaker's meters: its timers and refusal counters from its
//! events, its state and window gauges from its snapshot.

use std::sync::atomic::AtomicBool;

use resil_core::Tags;
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerEvent, SlidingWindowType, State};
use resil_core::event::Event;

use super::*;

pub(crate) struct Handles {
    successful: ::metrics::Histogram,
    failed: ::metrics::Histogram,
    ignored: ::metrics::Histogram,
    not_permitted: ::metrics::Counter,
    /// Resilience4j 1.x's name for the same count (its older dashboards plot it).
    calls_not_permitted: ::metrics::Counter,
    rejected: ::metrics::Counter,
    shadow: ::metrics::Counter,
}

pub(crate) struct Meters {
    handles: Cached<Handles>,
    /// In METRICS_ONLY, the breaker's shadow mode: its rate crossings
    /// are the calls it would have opened on.
    metrics_only: AtomicBool,
}

pub(crate) fn meters(cb: &CircuitBreaker) -> Meters {
    Meters {
        metrics_only: AtomicBool::new(cb.state() == State::MetricsOnly),
        handles: Cached::new(cb.name(), cb.tags(), |name, tags| {
            let calls = |kind| {
                ::metrics::histogram!(
                    CIRCUIT_BREAKER_CALLS,
                    labels(name, Some(("kind", kind)), tags)
                )
            };
            Handles {
                successful: calls("successful"),
                failed: calls("failed"),
                ignored: calls("ignored"),
                not_permitted: ::metrics::counter!(
                    CIRCUIT_BREAKER_NOT_PERMITTED_CALLS,
                    labels(name, Some(("kind", "not_permitted")), tags)
                ),
                calls_not_permitted: ::metrics::counter!(
                    CIRCUIT_BREAKER_CALLS_TOTAL,
                    labels(name, Some(("kind", "not_permitted")), tags)
                ),
                rejected: ::metrics::counter!(
                    REJECTIONS,
                    labels(name, Some(("kind", "circuit_breaker")), tags)
                ),
                shadow: ::metrics::counter!(
                    SHADOW_REFUSALS,
                    labels(name, Some(("kind", "circuitbreaker")), tags)
                ),
            }
        }),
    }
}

pub(crate) fn record(meters: &Meters, event: &Event<CircuitBreakerEvent>) {
    match *event.kind() {
        CircuitBreakerEvent::Success { elapsed } => {
            meters
                .handles
                .with(|h| h.successful.record(elapsed.as_secs_f64()));
        }
        CircuitBreakerEvent::Error { elapsed, .. } => {
            meters
                .handles
                .with(|h| h.failed.record(elapsed.as_secs_f64()));
        }
        CircuitBreakerEvent::IgnoredError { elapsed, .. } => {
            meters
                .handles
                .with(|h| h.ignored.record(elapsed.as_secs_f64()));
        }
        CircuitBreakerEvent::CallNotPermitted => {
            meters.handles.with(|h| {
                h.not_permitted.increment(1);
                h.calls_not_permitted.increment(1);
                h.rejected.increment(1);
            });
        }
        CircuitBreakerEvent::StateTransition { to, .. } => {
            meters
                .metrics_only
                .store(to == State::MetricsOnly, Ordering::Relaxed);
            states(&meters.handles.name, &meters.handles.tags, to);
        }
        CircuitBreakerEvent::FailureRateExceeded { .. }
        | CircuitBreakerEvent::SlowCallRateExceeded { .. }
            if meters.metrics_only.load(Ordering::Relaxed) =>
        {
            meters.handles.with(|h| h.shadow.increment(1));
        }
        _ => {}
    }
}

fn states(name: &str, tags: &Tags, current: State) {
    for state in State::ALL {
        let value = if state == current { 1.0 } else { 0.0 };
        gauge(
            CIRCUIT_BREAKER_STATE,
            name,
            Some(("state", state.metric_tag())),
            tags,
            value,
        );
    }
}

pub(crate) fn refresh(cb: &CircuitBreaker) {
    let (name, tags) = (cb.name(), cb.tags());
    let m = cb.metrics();
    states(name, tags, m.state());
    if let Some(up) = cb.cluster_backend_up() {
        gauge(
            CLUSTER_BACKEND_UP,
            name,
            Some(("kind", "circuitbreaker")),
            tags,
            f64::from(u8::from(up)),
        );
    }
    let kind = |k| Some(("kind", k));
    gauge(
        CIRCUIT_BREAKER_BUFFERED_CALLS,
        name,
        kind("failed"),
        tags,
        m.number_of_failed_calls() as f64,
    );
    gauge(
        CIRCUIT_BREAKER_BUFFERED_CALLS,
        name,
        kind("successful"),
        tags,
        m.number_of_successful_calls() as f64,
    );
    gauge(
        CIRCUIT_BREAKER_SLOW_CALLS,
        name,
        kind("successful"),
        tags,
        m.number_of_slow_successful_calls() as f64,
    );
    gauge(
        CIRCUIT_BREAKER_SLOW_CALLS,
        name,
        kind("failed"),
        tags,
        m.number_of_slow_failed_calls() as f64,
    );
    // the calls a window can hold: a count-based window's size; a
    // time-based window holds any number, which no number says (NaN)
    let config = cb.config();
    let max_buffered = match config.sliding_window_type() {
        SlidingWindowType::CountBased => f64::from(config.sliding_window_size()),
        SlidingWindowType::TimeBased => f64::NAN,
    };
    gauge(
        CIRCUIT_BREAKER_MAX_BUFFERED_CALLS,
        name,
        None,
        tags,
        max_buffered,
    );
    gauge(
        CIRCUIT_BREAKER_FAILURE_RATE_THRESHOLD,
        name,
        None,
        tags,
        f64::from(config.failure_rate_threshold()),
    );
    gauge(
        CIRCUIT_BREAKER_SLOW_CALL_RATE_THRESHOLD,
        name,
        None,
        tags,
        f64::from(config.slow_call_rate_threshold()),
    );
    gauge(
        CIRCUIT_BREAKER_FAILURE_RATE,
        name,
        None,
        tags,
        f64::from(m.failure_rate()),
    );
    gauge(
        CIRCUIT_BREAKER_SLOW_CALL_RATE,
        name,
        None,
        tags,
        f64::from(m.slow_call_rate()),
    );
}
