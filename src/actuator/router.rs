//! The routes of an [`Actuator`]: which exist (the Prometheus ones with a
//! handle, the state changes with a token) and which handler answers each.

use super::faults::{faults, start_fault, stop_fault};
use super::health::{health_all, health_one};
use super::instances::{bulkheads, circuit_breakers, names};
use super::prometheus::prometheus;
use super::resilience::resilience_document;
#[allow(clippy::wildcard_imports)]
use super::*;

/// The routes of `s`, as [`Actuator::router`] serves them.
pub(super) fn routes(s: &Arc<Shared>) -> Router {
    let mut r = Router::new()
        .route("/actuator/health", get(health_all))
        .route("/actuator/health/{component}", get(health_one))
        .route("/actuator/circuitbreakers", get(circuit_breakers))
        .route("/actuator/retries", get(names::<Retry>))
        .route("/actuator/bulkheads", get(bulkheads))
        .route(
            "/actuator/threadpoolbulkheads",
            get(names::<ThreadPoolBulkhead>),
        )
        .route("/actuator/ratelimiters", get(names::<RateLimiter>))
        .route("/actuator/timelimiters", get(names::<TimeLimiter>))
        .route("/actuator/hedges", get(names::<Hedge>))
        .route("/actuator/deadlines", get(names::<Deadline>))
        .route("/actuator/faults", get(faults))
        .route("/actuator/resilience", get(resilience_document));
    r = events_routes::<CircuitBreaker>(r, "circuitbreaker", &[Aspect::CircuitBreaker]);
    r = events_routes::<Retry>(r, "retry", &[Aspect::Retry]);
    r = events_routes::<Bulkhead>(
        r,
        "bulkhead",
        &[Aspect::Bulkhead, Aspect::ThreadPoolBulkhead],
    );
    r = events_routes::<ThreadPoolBulkhead>(r, "threadpoolbulkhead", &[Aspect::ThreadPoolBulkhead]);
    r = events_routes::<RateLimiter>(r, "ratelimiter", &[Aspect::RateLimiter]);
    r = events_routes::<TimeLimiter>(r, "timelimiter", &[Aspect::TimeLimiter]);
    r = events_routes::<Hedge>(r, "hedge", &[Aspect::Hedge]);
    if s.prometheus.is_some() {
        r = r
            .route("/actuator/prometheus", get(prometheus))
            .route("/actuator/metrics", get(metrics_json::metric_names))
            .route("/actuator/metrics/{name}", get(metrics_json::metric));
    }
    if s.token.is_some() {
        r = r
            .route(
                "/actuator/circuitbreakers/{name}",
                post(update_circuit_breaker),
            )
            .route("/actuator/ratelimiters/{name}", post(update_rate_limiter))
            .route(
                "/actuator/faults/{name}",
                post(start_fault).delete(stop_fault),
            )
            .route("/actuator/refresh", post(refresh))
            .route("/actuator/resilienceaudit", get(audit_log));
    }
    r.with_state(s.clone())
}
