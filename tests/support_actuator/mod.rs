//! What the actuator router tests share: registries loaded from one
//! configuration on a `ManualClock` (wall time starts at
//! 1970-01-01T00:00Z), a Prometheus recorder of each test's own, a breaker
//! to trip, requests through the router, and a breaker's details.
#![allow(dead_code)] // each test binary uses a part

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};
use resil::actuator::Actuator;
use resil::circuit_breaker::CircuitBreakerClassifier;
use resil::clock::ManualClock;
use resil::config::{Aspect, Registries, Report, Resilience};
use resil_config::Declaration;
use serde_json::{Value, json};
use tower::ServiceExt as _;

#[derive(Debug, resil::Classify)]
pub(crate) enum InventoryError {
    ConnectionRefused,
}

const CONFIG: &str = r#"
[circuitbreaker.tags]
env = "test"

[circuitbreaker.instances.inventory-query]
sliding-window-size = 2
minimum-number-of-calls = 2
failure-rate-threshold = 50
register-health-indicator = true

[circuitbreaker.instances.payment]
sliding-window-size = 2
minimum-number-of-calls = 2
register-health-indicator = true
allow-health-indicator-to-fail = true

[circuitbreaker.instances.unlisted]

[retry.instances.inventory-query]
max-attempts = 3
wait-duration = "100ms"

[bulkhead.instances.inventory-query]
max-concurrent-calls = 2

[thread-pool-bulkhead.instances.report-export]
max-thread-pool-size = 2
core-thread-pool-size = 1
queue-capacity = 5

[ratelimiter.instances.inventory-query]
limit-for-period = 2
limit-refresh-period = "1s"
timeout-duration = "0ms"
register-health-indicator = true

[timelimiter.instances.inventory-query]
timeout-duration = "800ms"
"#;

const QUERY_RETRY: Declaration = Declaration {
    aspect: Aspect::Retry,
    name: "inventory-query",
    module: "inventory",
    function: "query",
    file: "src/inventory.rs",
    line: 10,
    fallback: None,
    error_type: "InventoryError",
    error_kinds: &["ConnectionRefused"],
    detachable: false,
};
const QUERY_BREAKER: Declaration = Declaration {
    aspect: Aspect::CircuitBreaker,
    line: 11,
    fallback: Some("Self::unknown"),
    ..QUERY_RETRY
};

pub(crate) struct Fixture {
    pub(crate) clock: ManualClock,
    pub(crate) registries: Arc<Registries>,
    report: Report,
    pub(crate) recorder: PrometheusRecorder,
    handle: PrometheusHandle,
}

pub(crate) fn fixture() -> Fixture {
    let clock = ManualClock::new();
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", CONFIG)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([&QUERY_RETRY, &QUERY_BREAKER])
        .clock(clock.clone())
        .load()
        .unwrap();
    let (registries, report) = loaded.into_parts();
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    Fixture {
        clock,
        registries: Arc::new(registries),
        report,
        recorder,
        handle,
    }
}

impl Fixture {
    pub(crate) fn actuator(&self) -> resil::actuator::ActuatorBuilder {
        Actuator::builder()
            .registries(self.registries.clone())
            .report(self.report.clone())
            .prometheus(self.handle.clone())
    }

    pub(crate) fn router(&self) -> Router {
        self.actuator().build().router()
    }

    /// Two recorded failures: the breaker opens.
    pub(crate) fn trip(&self, name: &str) {
        let cb = self.registries.circuit_breakers().circuit_breaker(name);
        let classifier = CircuitBreakerClassifier::<(), InventoryError>::classified();
        self.clock.advance(Duration::from_millis(1500));
        for took in [12, 30] {
            let _ = resil::Decorators::new()
                .with_circuit_breaker_classified(&cb, classifier)
                .call(|| {
                    self.clock.advance(Duration::from_millis(took));
                    Err(InventoryError::ConnectionRefused)
                });
        }
    }
}

pub(crate) async fn send(
    router: &Router,
    request: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let response = router.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    (parts.status, parts.headers, bytes.to_vec())
}

pub(crate) async fn get(router: &Router, uri: &str) -> (StatusCode, Value) {
    let request = Request::get(uri).body(Body::empty()).unwrap();
    let (status, headers, body) = send(router, request).await;
    assert_eq!(headers["content-type"], "application/json", "{uri}");
    (status, serde_json::from_slice(&body).unwrap())
}

pub(crate) async fn post(
    router: &Router,
    uri: &str,
    token: Option<&str>,
    body: Value,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(Method::POST).uri(uri);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request.body(Body::from(body.to_string())).unwrap();
    let (status, _, body) = send(router, request).await;
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap()
    };
    (status, body)
}

pub(crate) fn closed_details(threshold: &str) -> Value {
    json!({
        "failureRate": "-1.0%",
        "failureRateThreshold": threshold,
        "slowCallRate": "-1.0%",
        "slowCallRateThreshold": "100.0%",
        "bufferedCalls": 0,
        "failedCalls": 0,
        "slowCalls": 0,
        "slowFailedCalls": 0,
        "notPermittedCalls": 0,
        "state": "CLOSED",
    })
}

pub(crate) fn open_details() -> Value {
    json!({
        "failureRate": "100.0%",
        "failureRateThreshold": "50.0%",
        "slowCallRate": "0.0%",
        "slowCallRateThreshold": "100.0%",
        "bufferedCalls": 2,
        "failedCalls": 2,
        "slowCalls": 0,
        "slowFailedCalls": 0,
        "notPermittedCalls": 0,
        "state": "OPEN",
    })
}
