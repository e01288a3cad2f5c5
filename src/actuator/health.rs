//! `/actuator/health`: Spring Boot's health document with Resilience4j's
//! two health indicators (the rules are in the [module documentation](super#health)).

use axum::extract::Path;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use resil_config::{Aspect, Extras, Registries, Report};
use resil_core::circuit_breaker::{CircuitBreaker, State};
use resil_core::rate_limiter::RateLimiter;
use serde_json::{Map, Value, json};

use super::instances::keys;
use super::json::circuit_breaker_details;
use super::response::{St, error, json_response};
use super::shared::Shared;

/// Spring Boot's default status order.
const ORDER: [&str; 4] = ["DOWN", "OUT_OF_SERVICE", "UP", "UNKNOWN"];

/// `SimpleStatusAggregator::getAggregateStatus`.
pub(crate) fn aggregate<'a>(statuses: impl IntoIterator<Item = &'a str>) -> &'static str {
    statuses
        .into_iter()
        .filter_map(|s| ORDER.iter().position(|o| *o == s))
        .min()
        .map_or("UNKNOWN", |i| ORDER[i])
}

/// Whether the status makes the endpoint answer 503.
pub(crate) fn is_failure(status: &str) -> bool {
    matches!(status, "DOWN" | "OUT_OF_SERVICE")
}

/// `{"status": .., "details": {..}}`, without `details` when there are none.
fn health(status: &str, details: Map<String, Value>) -> Value {
    let mut m = Map::new();
    m.insert("status".to_owned(), json!(status));
    if !details.is_empty() {
        m.insert("details".to_owned(), Value::Object(details));
    }
    Value::Object(m)
}

fn extras(report: Option<&Report>, aspect: Aspect, name: &str) -> Extras {
    report
        .and_then(|r| r.instance(aspect, name))
        .map(|i| i.extras())
        .unwrap_or_default()
}

/// A breaker's status in the health document.
fn breaker_status(cb: &CircuitBreaker, extras: Extras) -> &'static str {
    match cb.state() {
        State::Closed => "UP",
        State::Open if extras.allow_health_indicator_to_fail.unwrap_or(false) => "DOWN",
        State::Open => "CIRCUIT_OPEN",
        State::HalfOpen => "CIRCUIT_HALF_OPEN",
        _ => "UNKNOWN",
    }
}

/// The `circuitBreakers` component. A keyed name's keys (`key = expr`) are
/// listed in its details, each with its own status, the refusing first;
/// they do not count in the name's status, which stays the unkeyed
/// instance's (one tenant's open breaker is not the service's health).
pub(crate) fn circuit_breakers(registries: &Registries, report: Option<&Report>) -> Value {
    let keyed = registries.keyed::<CircuitBreaker>();
    let mut details = Map::new();
    for cb in registries.circuit_breakers().all() {
        let extras = extras(report, Aspect::CircuitBreaker, cb.name());
        if !extras.register_health_indicator.unwrap_or(false) {
            continue;
        }
        let Value::Object(mut d) = circuit_breaker_details(&cb) else {
            continue;
        };
        if let Some(table) = keyed.table(cb.name()) {
            let keys = keys(&table, |key: &CircuitBreaker, m| {
                m.insert("status".to_owned(), json!(breaker_status(key, extras)));
            });
            d.insert("keys".to_owned(), keys);
        }
        details.insert(cb.name().to_owned(), health(breaker_status(&cb, extras), d));
    }
    component(details)
}

/// A rate limiter's status and details in the health document.
fn limiter_health(rl: &RateLimiter, extras: Extras) -> (&'static str, Map<String, Value>) {
    let m = rl.metrics();
    let (available, waiting) = (m.available_permissions(), m.number_of_waiting_threads());
    let status = if available > 0 || waiting == 0 {
        "UP"
    } else if m.nanos_to_wait() > rl.config().timeout_duration() {
        if extras.allow_health_indicator_to_fail.unwrap_or(false) {
            "DOWN"
        } else {
            "RATE_LIMITED"
        }
    } else {
        "UNKNOWN"
    };
    let mut d = Map::new();
    d.insert("availablePermissions".to_owned(), json!(available));
    d.insert("numberOfWaitingThreads".to_owned(), json!(waiting));
    (status, d)
}

/// The `rateLimiters` component, with each keyed name's keys as for the breakers.
pub(crate) fn rate_limiters(registries: &Registries, report: Option<&Report>) -> Value {
    let keyed = registries.keyed::<RateLimiter>();
    let mut details = Map::new();
    for rl in registries.rate_limiters().all() {
        let extras = extras(report, Aspect::RateLimiter, rl.name());
        if !extras.register_health_indicator.unwrap_or(false) {
            continue;
        }
        let (status, mut d) = limiter_health(&rl, extras);
        if let Some(table) = keyed.table(rl.name()) {
            let keys = keys(&table, |key: &RateLimiter, m| {
                m.insert("status".to_owned(), json!(limiter_health(key, extras).0));
            });
            d.insert("keys".to_owned(), keys);
        }
        details.insert(rl.name().to_owned(), health(status, d));
    }
    component(details)
}

/// A composite indicator: its status aggregates its members'.
fn component(details: Map<String, Value>) -> Value {
    let status = aggregate(
        details
            .values()
            .filter_map(|h| h.get("status").and_then(Value::as_str)),
    );
    health(status, details)
}

/// The whole health document: `{"status": .., "components": {..}}`.
pub(crate) fn document(components: Map<String, Value>) -> Value {
    let status = aggregate(
        components
            .values()
            .filter_map(|h| h.get("status").and_then(Value::as_str)),
    );
    json!({ "status": status, "components": components })
}

// ---------------------------------------------------------------- handlers

/// `/actuator/health`: every component, 503 when the aggregate is a failure.
pub(super) async fn health_all(axum::extract::State(s): St) -> Response {
    let doc = document(components(&s));
    by_status(&doc)
}

/// `/actuator/health/{component}`: one component, 404 for an unknown one.
pub(super) async fn health_one(
    axum::extract::State(s): St,
    Path(component): Path<String>,
    uri: Uri,
) -> Response {
    let Some(doc) = components(&s).remove(&component) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("no health component `{component}`"),
            &uri,
        );
    };
    by_status(&doc)
}

/// `doc` with 503 when its status is a failure, 200 otherwise.
fn by_status(doc: &Value) -> Response {
    let status = doc
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("UNKNOWN");
    let code = if is_failure(status) {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    json_response(code, doc)
}

/// The components of the health document of `s`'s registries.
fn components(s: &Shared) -> Map<String, Value> {
    let registries = s.registries();
    let report = s.report();
    let report = report.as_deref();
    let mut c = Map::new();
    c.insert(
        "circuitBreakers".to_owned(),
        circuit_breakers(registries, report),
    );
    c.insert("rateLimiters".to_owned(), rate_limiters(registries, report));
    c.insert("ping".to_owned(), json!({ "status": "UP" }));
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_as_spring_boot_does() {
        assert_eq!(aggregate(["UP", "DOWN"]), "DOWN");
        assert_eq!(aggregate(["UP", "CIRCUIT_OPEN"]), "UP");
        assert_eq!(aggregate(["CIRCUIT_OPEN"]), "UNKNOWN");
        assert_eq!(aggregate([]), "UNKNOWN");
        assert_eq!(aggregate(["UNKNOWN", "UP"]), "UP");
        assert_eq!(aggregate(["OUT_OF_SERVICE", "UP"]), "OUT_OF_SERVICE");
    }
}
