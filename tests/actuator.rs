//! The actuator router end to end: every route's JSON compared whole, the
//! Prometheus text, the event streams, and the state changes with their
//! token. Each test loads its own registries on a `ManualClock` (wall time
//! starts at 1970-01-01T00:00Z) and records into its own Prometheus recorder.

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
use resil::retry::RetryClassifier;
use resil_config::Declaration;
use serde_json::{Value, json};
use tower::ServiceExt as _;

#[derive(Debug, resil::Classify)]
enum InventoryError {
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

struct Fixture {
    clock: ManualClock,
    registries: Arc<Registries>,
    report: Report,
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
}

fn fixture() -> Fixture {
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
    fn actuator(&self) -> resil::actuator::ActuatorBuilder {
        Actuator::builder()
            .registries(self.registries.clone())
            .report(self.report.clone())
            .prometheus(self.handle.clone())
    }

    fn router(&self) -> Router {
        self.actuator().build().router()
    }

    /// Two recorded failures: the breaker opens.
    fn trip(&self, name: &str) {
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

async fn send(
    router: &Router,
    request: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let response = router.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    (parts.status, parts.headers, bytes.to_vec())
}

async fn get(router: &Router, uri: &str) -> (StatusCode, Value) {
    let request = Request::get(uri).body(Body::empty()).unwrap();
    let (status, headers, body) = send(router, request).await;
    assert_eq!(headers["content-type"], "application/json", "{uri}");
    (status, serde_json::from_slice(&body).unwrap())
}

async fn post(router: &Router, uri: &str, token: Option<&str>, body: Value) -> (StatusCode, Value) {
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

fn closed_details(threshold: &str) -> Value {
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

fn open_details() -> Value {
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

#[tokio::test]
async fn circuitbreakers_lists_details_by_name() {
    let f = fixture();
    f.trip("inventory-query");
    let (status, body) = get(&f.router(), "/actuator/circuitbreakers").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"circuitBreakers": {
            "inventory-query": open_details(),
            "payment": closed_details("50.0%"),
            "unlisted": closed_details("50.0%"),
        }})
    );
}

#[tokio::test]
async fn circuitbreakerevents_are_resilience4j_dtos() {
    let f = fixture();
    let router = f.router();
    f.trip("inventory-query");
    let cb = f
        .registries
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    let _ = cb.call(|| Ok::<_, InventoryError>(()));
    let at = |t: &str| format!("1970-01-01T00:00:01.{t}Z");
    let expected = json!({"circuitBreakerEvents": [
        {"circuitBreakerName": "inventory-query", "type": "ERROR", "creationTime": at("512"),
         "errorMessage": "ConnectionRefused", "durationInMs": 12},
        {"circuitBreakerName": "inventory-query", "type": "ERROR", "creationTime": at("542"),
         "errorMessage": "ConnectionRefused", "durationInMs": 30},
        {"circuitBreakerName": "inventory-query", "type": "FAILURE_RATE_EXCEEDED", "creationTime": at("542")},
        {"circuitBreakerName": "inventory-query", "type": "STATE_TRANSITION", "creationTime": at("542"),
         "stateTransition": "CLOSED_TO_OPEN"},
        {"circuitBreakerName": "inventory-query", "type": "NOT_PERMITTED", "creationTime": at("542")},
    ]});
    assert_eq!(
        get(&router, "/actuator/circuitbreakerevents").await,
        (StatusCode::OK, expected.clone())
    );
    assert_eq!(
        get(&router, "/actuator/circuitbreakerevents/inventory-query").await,
        (StatusCode::OK, expected.clone())
    );
    let transitions =
        json!({"circuitBreakerEvents": [expected["circuitBreakerEvents"][3].clone()]});
    assert_eq!(
        get(
            &router,
            "/actuator/circuitbreakerevents/inventory-query/state_transition"
        )
        .await,
        (StatusCode::OK, transitions)
    );
    assert_eq!(
        get(&router, "/actuator/circuitbreakerevents/payment").await,
        (StatusCode::OK, json!({"circuitBreakerEvents": []}))
    );
    assert_eq!(
        get(&router, "/actuator/circuitbreakerevents/nobody").await,
        (StatusCode::OK, json!({"circuitBreakerEvents": []}))
    );
    let (status, body) = get(
        &router,
        "/actuator/circuitbreakerevents/inventory-query/OPENED",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["status"], 400);
    assert_eq!(
        body["path"],
        "/actuator/circuitbreakerevents/inventory-query/OPENED"
    );
}

#[tokio::test]
async fn events_of_every_kind_are_sorted_by_creation_time() {
    let f = fixture();
    let router = f.router();
    let r = &f.registries;
    let retry = r.retries().retry("inventory-query");
    let mut failures = 2;
    let classifier = RetryClassifier::<(), InventoryError>::classified();
    let ok = resil::Decorators::new()
        .with_retry_classified(&retry, classifier)
        .call(|| {
            if failures > 0 {
                failures -= 1;
                return Err(InventoryError::ConnectionRefused);
            }
            Ok(())
        });
    assert!(ok.is_ok());
    let at = |ms: u32| {
        if ms == 0 {
            "1970-01-01T00:00Z".to_owned()
        } else {
            format!("1970-01-01T00:00:00.{ms:03}Z")
        }
    };
    assert_eq!(
        get(&router, "/actuator/retryevents").await.1,
        json!({"retryEvents": [
            {"retryName": "inventory-query", "type": "RETRY", "creationTime": at(0),
             "errorMessage": "ConnectionRefused", "numberOfAttempts": 1},
            {"retryName": "inventory-query", "type": "RETRY", "creationTime": at(100),
             "errorMessage": "ConnectionRefused", "numberOfAttempts": 2},
            {"retryName": "inventory-query", "type": "SUCCESS", "creationTime": at(200),
             "errorMessage": "ConnectionRefused", "numberOfAttempts": 2},
        ]})
    );

    let bulkhead = r.bulkheads().bulkhead("inventory-query");
    let (a, b) = (
        bulkhead.try_acquire_permission().unwrap(),
        bulkhead.try_acquire_permission().unwrap(),
    );
    assert!(bulkhead.call(|| Ok::<_, InventoryError>(())).is_err());
    drop((a, b));
    let pool = r
        .thread_pool_bulkheads()
        .thread_pool_bulkhead("report-export");
    assert_eq!(pool.call(|| Ok::<_, InventoryError>(7)).unwrap(), 7);
    let bulkhead_event =
        |name: &str, ty: &str| json!({"bulkheadName": name, "type": ty, "creationTime": at(200)});
    let semaphore = [
        bulkhead_event("inventory-query", "CALL_PERMITTED"),
        bulkhead_event("inventory-query", "CALL_PERMITTED"),
        bulkhead_event("inventory-query", "CALL_REJECTED"),
        bulkhead_event("inventory-query", "CALL_FINISHED"),
        bulkhead_event("inventory-query", "CALL_FINISHED"),
    ];
    let threads = [
        bulkhead_event("report-export", "CALL_PERMITTED"),
        bulkhead_event("report-export", "CALL_FINISHED"),
    ];
    let mut both = semaphore.to_vec();
    both.extend(threads.clone());
    assert_eq!(
        get(&router, "/actuator/bulkheadevents").await.1,
        json!({ "bulkheadEvents": both })
    );
    assert_eq!(
        get(&router, "/actuator/bulkheadevents/report-export")
            .await
            .1,
        json!({ "bulkheadEvents": threads })
    );
    assert_eq!(
        get(
            &router,
            "/actuator/bulkheadevents/inventory-query/call_rejected"
        )
        .await
        .1,
        json!({ "bulkheadEvents": [semaphore[2]] })
    );
    assert_eq!(
        get(&router, "/actuator/threadpoolbulkheadevents").await.1,
        json!({ "threadPoolBulkheadEvents": threads })
    );

    let limiter = r.rate_limiters().rate_limiter("inventory-query");
    for _ in 0..3 {
        let _ = limiter.call(|| Ok::<_, InventoryError>(()));
    }
    let limiter_event = |ty: &str| json!({"rateLimiterName": "inventory-query", "type": ty, "creationTime": at(200)});
    assert_eq!(
        get(&router, "/actuator/ratelimiterevents").await.1,
        json!({"rateLimiterEvents": [
            limiter_event("SUCCESSFUL_ACQUIRE"),
            limiter_event("SUCCESSFUL_ACQUIRE"),
            limiter_event("FAILED_ACQUIRE"),
        ]})
    );

    let limiter = r.time_limiters().time_limiter("inventory-query");
    let _ = limiter
        .call_async(|| async { Ok::<_, InventoryError>(()) })
        .await;
    let _ = limiter
        .call_async(std::future::pending::<Result<(), InventoryError>>)
        .await;
    assert_eq!(
        get(&router, "/actuator/timelimiterevents/inventory-query")
            .await
            .1,
        json!({"timeLimiterEvents": [
            {"timeLimiterName": "inventory-query", "type": "SUCCESS", "creationTime": at(200)},
            {"timeLimiterName": "inventory-query", "type": "TIMEOUT", "creationTime": "1970-01-01T00:00:01Z"},
        ]})
    );
}

#[tokio::test]
async fn name_lists_follow_resilience4j() {
    let f = fixture();
    let router = f.router();
    assert_eq!(
        get(&router, "/actuator/retries").await,
        (StatusCode::OK, json!({"retries": ["inventory-query"]}))
    );
    assert_eq!(
        get(&router, "/actuator/bulkheads").await.1,
        json!({"bulkheads": ["inventory-query", "report-export"]})
    );
    assert_eq!(
        get(&router, "/actuator/threadpoolbulkheads").await.1,
        json!({"threadPoolBulkheads": ["report-export"]})
    );
    assert_eq!(
        get(&router, "/actuator/ratelimiters").await.1,
        json!({"rateLimiters": ["inventory-query"]})
    );
    assert_eq!(
        get(&router, "/actuator/timelimiters").await.1,
        json!({"timeLimiters": ["inventory-query"]})
    );
}

#[tokio::test]
async fn health_maps_states_as_resilience4j_indicators_do() {
    let f = fixture();
    let router = f.router();
    let limiter_up = json!({"status": "UP", "details": {
        "availablePermissions": 2, "numberOfWaitingThreads": 0}});
    // `unlisted` does not register a health indicator
    assert_eq!(
        get(&router, "/actuator/health").await,
        (
            StatusCode::OK,
            json!({"status": "UP", "components": {
                "circuitBreakers": {"status": "UP", "details": {
                    "inventory-query": {"status": "UP", "details": closed_details("50.0%")},
                    "payment": {"status": "UP", "details": closed_details("50.0%")},
                }},
                "rateLimiters": {"status": "UP", "details": {"inventory-query": limiter_up}},
                "ping": {"status": "UP"},
            }})
        )
    );

    // OPEN without allow-health-indicator-to-fail: CIRCUIT_OPEN, ignored by the aggregate
    f.trip("inventory-query");
    let (status, body) = get(&router, "/actuator/health/circuitBreakers").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"status": "UP", "details": {
            "inventory-query": {"status": "CIRCUIT_OPEN", "details": open_details()},
            "payment": {"status": "UP", "details": closed_details("50.0%")},
        }})
    );

    // OPEN with allow-health-indicator-to-fail: DOWN, and the endpoint answers 503
    f.trip("payment");
    let (status, body) = get(&router, "/actuator/health").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["status"], "DOWN");
    assert_eq!(body["components"]["circuitBreakers"]["status"], "DOWN");
    assert_eq!(
        body["components"]["circuitBreakers"]["details"]["payment"]["status"],
        "DOWN"
    );

    let cb = f
        .registries
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    cb.transition_to_half_open_state().unwrap();
    let (_, body) = get(&router, "/actuator/health/circuitBreakers").await;
    assert_eq!(
        body["details"]["inventory-query"]["status"],
        "CIRCUIT_HALF_OPEN"
    );
    cb.transition_to_forced_open_state().unwrap();
    let (_, body) = get(&router, "/actuator/health/circuitBreakers").await;
    assert_eq!(body["details"]["inventory-query"]["status"], "UNKNOWN");

    let (status, body) = get(&router, "/actuator/health/diskSpace").await;
    assert_eq!(
        (status, &body["status"]),
        (StatusCode::NOT_FOUND, &json!(404))
    );
}

#[tokio::test]
async fn prometheus_shows_resilience4j_meters() {
    let f = fixture();
    let _recording = metrics::set_default_local_recorder(&f.recorder);
    let router = f.router();
    f.trip("inventory-query");
    let cb = f
        .registries
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    let _ = cb.call(|| Ok::<_, InventoryError>(()));

    let request = Request::get("/actuator/prometheus")
        .body(Body::empty())
        .unwrap();
    let (status, headers, body) = send(&router, request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = String::from_utf8(body).unwrap();
    let labels = |extra: &str| format!(r#"{{env="test",{extra}name="inventory-query""#);
    for line in [
        format!(r#"resilience4j_circuitbreaker_state{},state="open"}} 1"#, labels("")),
        format!(r#"resilience4j_circuitbreaker_state{},state="closed"}} 0"#, labels("")),
        format!(r#"resilience4j_circuitbreaker_state{},state="metrics_only"}} 0"#, labels("")),
        format!(r#"resilience4j_circuitbreaker_buffered_calls{}}} 2"#, labels(r#"kind="failed","#)),
        format!(r#"resilience4j_circuitbreaker_buffered_calls{}}} 0"#, labels(r#"kind="successful","#)),
        format!(r#"resilience4j_circuitbreaker_slow_calls{}}} 0"#, labels(r#"kind="failed","#)),
        format!(r#"resilience4j_circuitbreaker_failure_rate{}}} 100"#, labels("")),
        format!(r#"resilience4j_circuitbreaker_slow_call_rate{}}} 0"#, labels("")),
        format!(r#"resilience4j_circuitbreaker_calls_seconds_count{}}} 2"#, labels(r#"kind="failed","#)),
        format!(r#"resilience4j_circuitbreaker_not_permitted_calls_total{}}} 1"#, labels(r#"kind="not_permitted","#)),
        r#"resilience4j_circuitbreaker_failure_rate{env="test",name="payment"} -1"#.to_owned(),
        r#"resilience4j_retry_calls_total{kind="successful_without_retry",name="inventory-query"} 0"#.to_owned(),
        r#"resilience4j_bulkhead_available_concurrent_calls{name="inventory-query"} 2"#.to_owned(),
        r#"resilience4j_bulkhead_max_allowed_concurrent_calls{name="inventory-query"} 2"#.to_owned(),
        r#"resilience4j_bulkhead_queue_capacity{name="report-export"} 5"#.to_owned(),
        r#"resilience4j_bulkhead_max_thread_pool_size{name="report-export"} 2"#.to_owned(),
        r#"resilience4j_bulkhead_core_thread_pool_size{name="report-export"} 1"#.to_owned(),
        r#"resilience4j_bulkhead_available_thread_count{name="report-export"} 2"#.to_owned(),
        r#"resilience4j_ratelimiter_available_permissions{name="inventory-query"} 2"#.to_owned(),
        r#"resilience4j_ratelimiter_waiting_threads{name="inventory-query"} 0"#.to_owned(),
        r#"resilience4j_timelimiter_calls_total{kind="timeout",name="inventory-query"} 0"#.to_owned(),
        "# TYPE resilience4j_circuitbreaker_calls_seconds summary".to_owned(),
        "# HELP resilience4j_circuitbreaker_state The states of the circuit breaker".to_owned(),
    ] {
        assert!(text.lines().any(|l| l == line), "missing `{line}` in\n{text}");
    }
    let sum = value(
        &text,
        &format!(
            "resilience4j_circuitbreaker_calls_seconds_sum{}}}",
            labels(r#"kind="failed","#)
        ),
    );
    assert!((sum - 0.042).abs() < 1e-9, "{sum}");
}

#[tokio::test]
async fn metrics_in_spring_boots_shape() {
    let f = fixture();
    let _recording = metrics::set_default_local_recorder(&f.recorder);
    let router = f.router();
    f.trip("inventory-query");

    let (status, names) = get(&router, "/actuator/metrics").await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = names["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for name in [
        "resilience4j.circuitbreaker.calls",
        "resilience4j.circuitbreaker.state",
        "resilience4j.circuitbreaker.not.permitted.calls",
        "resilience4j.retry.calls",
    ] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }

    let (status, calls) = get(
        &router,
        "/actuator/metrics/resilience4j.circuitbreaker.calls?tag=name:inventory-query&tag=kind%3Afailed",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{calls}");
    assert_eq!(calls["name"], "resilience4j.circuitbreaker.calls");
    assert_eq!(calls["baseUnit"], "seconds");
    assert_eq!(
        calls["measurements"][0],
        json!({"statistic": "COUNT", "value": 2.0})
    );
    assert_eq!(calls["measurements"][1]["statistic"], "TOTAL_TIME");
    let total = calls["measurements"][1]["value"].as_f64().unwrap();
    assert!((total - 0.042).abs() < 1e-9, "{total}");
    assert_eq!(
        calls["availableTags"],
        json!([{"tag": "env", "values": ["test"]}])
    );

    // Without filters, every kind and every breaker add up, and the tags list them.
    let (_, all) = get(
        &router,
        "/actuator/metrics/resilience4j.circuitbreaker.calls",
    )
    .await;
    let kinds = all["availableTags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tag"] == "kind")
        .unwrap()["values"]
        .clone();
    assert!(
        kinds.as_array().unwrap().contains(&json!("failed")),
        "{all}"
    );

    let (status, state) = get(
        &router,
        "/actuator/metrics/resilience4j.circuitbreaker.state?tag=name:inventory-query&tag=state:open",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        state["measurements"],
        json!([{"statistic": "VALUE", "value": 1.0}])
    );
    assert_eq!(state["baseUnit"], Value::Null);

    let (status, body) = get(&router, "/actuator/metrics/resilience4j.nothing").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["message"], "no meter `resilience4j.nothing`");
    let (status, _) = get(
        &router,
        "/actuator/metrics/resilience4j.circuitbreaker.state?tag=name:nobody",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = get(
        &router,
        "/actuator/metrics/resilience4j.circuitbreaker.state?tag=name",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["message"].as_str().unwrap().contains("`tag=name`"));
}

/// The value of the sample `series` in a Prometheus text.
fn value(text: &str, series: &str) -> f64 {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(series))
        .unwrap_or_else(|| panic!("no `{series}` in\n{text}"));
    line.trim().parse().unwrap()
}

#[tokio::test]
async fn meters_recorded_before_the_recorder_count_after_it() {
    let f = fixture();
    let router = f.router();
    let cb = f.registries.circuit_breakers().circuit_breaker("payment");
    let success = || {
        let _ = cb.call(|| Ok::<_, InventoryError>(()));
    };
    // no recorder yet: the handles taken now are the no-op recorder's
    success();
    let _recording = metrics::set_default_local_recorder(&f.recorder);
    success();
    success();
    let request = Request::get("/actuator/prometheus")
        .body(Body::empty())
        .unwrap();
    let text = String::from_utf8(send(&router, request).await.2).unwrap();
    let series = r#"resilience4j_circuitbreaker_calls_seconds_count{env="test",kind="successful",name="payment"}"#;
    assert_eq!(value(&text, series), 2.0);
    // the snapshot gauges see every call, recorded or not
    let series = r#"resilience4j_circuitbreaker_buffered_calls{env="test",kind="successful",name="payment"}"#;
    assert_eq!(value(&text, series), 2.0);
}

#[tokio::test]
async fn prometheus_route_exists_only_with_a_handle() {
    let f = fixture();
    let router = Actuator::builder()
        .registries(f.registries.clone())
        .build()
        .router();
    let request = Request::get("/actuator/prometheus")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&router, request).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn state_changes_do_not_exist_unless_enabled() {
    let f = fixture();
    let router = f.router();
    let body = json!({"updateState": "FORCE_OPEN"});
    for token in [None, Some("s3cr3t")] {
        let (status, _) = post(
            &router,
            "/actuator/circuitbreakers/inventory-query",
            token,
            body.clone(),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) = post(
            &router,
            "/actuator/ratelimiters/inventory-query",
            token,
            json!({"limitForPeriod": 5}),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    let cb = f
        .registries
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    assert_eq!(cb.state().as_str(), "CLOSED");
}

async fn audit(router: &Router) -> Value {
    let request = Request::get("/actuator/resilienceaudit")
        .header("authorization", "Bearer s3cr3t")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = send(router, request).await;
    assert_eq!(status, StatusCode::OK);
    serde_json::from_slice(&body).unwrap()
}

#[tokio::test]
async fn every_state_change_request_is_audited_and_the_log_is_bounded() {
    let f = fixture();
    let router = f.actuator().state_changes("s3cr3t").build().router();
    let uri = "/actuator/circuitbreakers/inventory-query";
    post(
        &router,
        uri,
        Some("s3cr3t"),
        json!({"updateState": "FORCE_OPEN", "for": "5m"}),
    )
    .await;
    post(&router, uri, Some("wrong"), json!({"updateState": "CLOSE"})).await;
    post(&router, uri, None, json!({"updateState": "CLOSE"})).await;
    post(
        &router,
        uri,
        Some("s3cr3t"),
        json!({"updateState": "HALF_OPEN"}),
    )
    .await;
    let log = audit(&router).await;
    assert_eq!(log["capacity"], 100);
    let entries = log["entries"].as_array().unwrap();
    let seen: Vec<(&str, u64, &Value)> = entries
        .iter()
        .map(|e| {
            (
                e["identity"].as_str().unwrap(),
                e["status"].as_u64().unwrap(),
                &e["request"],
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                "operator",
                200,
                &json!({"updateState": "FORCE_OPEN", "for": "5m"})
            ),
            ("operator", 400, &json!({"updateState": "HALF_OPEN"})),
        ]
    );
    // requests refused for want of the token are counted apart
    assert_eq!(log["rejected"]["count"], 2);
    let rejected: Vec<&str> = log["rejected"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["identity"].as_str().unwrap())
        .collect();
    assert_eq!(rejected, ["invalid-token", "no-token"]);
    for e in entries {
        assert_eq!(e["path"], uri);
        assert_eq!(e["peer"], "unknown", "no ConnectInfo in-process");
        assert!(e["time"].as_str().unwrap().ends_with('Z'));
    }
    // The log itself needs the token.
    let request = Request::get("/actuator/resilienceaudit")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&router, request).await.0, StatusCode::UNAUTHORIZED);
    // Bounded: the oldest entries leave.
    for _ in 0..150 {
        post(
            &router,
            uri,
            Some("s3cr3t"),
            json!({"updateState": "CLOSE"}),
        )
        .await;
    }
    let log = audit(&router).await;
    let entries = log["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 100);
    assert!(
        entries
            .iter()
            .all(|e| e["request"] == json!({"updateState": "CLOSE"}))
    );
}

#[tokio::test]
async fn the_audit_log_names_the_peer_address() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let f = fixture();
    let router = f.actuator().state_changes("s3cr3t").build().router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await
        .unwrap()
    });
    let send = |request: String| async move {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let local = stream.local_addr().unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        (local, String::from_utf8(raw).unwrap())
    };
    let body = r#"{"updateState":"DISABLE"}"#;
    let (client, answer) = send(format!(
        "POST /actuator/circuitbreakers/inventory-query HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer s3cr3t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ))
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (_, log) = send(
        "GET /actuator/resilienceaudit HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer s3cr3t\r\n\r\n"
            .to_owned(),
    )
    .await;
    assert!(log.contains(&format!("\"peer\":\"{client}\"")), "{log}");
    server.abort();
}

#[tokio::test]
async fn a_forced_open_with_a_time_limit_ends_in_half_open_and_its_limit_is_bounded() {
    let f = fixture();
    let router = f.actuator().state_changes("s3cr3t").build().router();
    let cb = f
        .registries
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    let uri = "/actuator/circuitbreakers/inventory-query";
    let (status, body) = post(
        &router,
        uri,
        Some("s3cr3t"),
        json!({"updateState": "FORCE_OPEN", "for": "10m"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["currentState"], "FORCED_OPEN");
    assert_eq!(body["forcedOpenFor"], "10m");
    assert_eq!(body["afterLimit"], "HALF_OPEN");
    let then = "FORCED_OPEN for 10m, then HALF_OPEN: the half-open probes decide whether it closes";
    assert_eq!(
        body["message"],
        format!("inventory-query state has been changed successfully: {then}")
    );
    f.clock.advance(std::time::Duration::from_secs(599));
    assert_eq!(cb.state().as_str(), "FORCED_OPEN");
    f.clock.advance(std::time::Duration::from_secs(1));
    assert_eq!(
        cb.state().as_str(),
        "HALF_OPEN",
        "after 10 minutes the probes decide, not the whole load"
    );
    // the events say so
    let (_, events) = get(&router, "/actuator/circuitbreakerevents/inventory-query").await;
    let transitions: Vec<&str> = events["circuitBreakerEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["stateTransition"].as_str())
        .collect();
    assert_eq!(
        transitions,
        ["CLOSED_TO_FORCED_OPEN", "FORCED_OPEN_TO_HALF_OPEN"]
    );
    // and so does the audit log
    let log = audit(&router).await;
    let entry = &log["entries"][0];
    assert_eq!(
        entry["request"],
        json!({"updateState": "FORCE_OPEN", "for": "10m"})
    );
    assert_eq!(
        entry["outcome"],
        format!("inventory-query state has been changed successfully: {then}")
    );
    // the probes close it when the downstream is back
    for _ in 0..2 {
        cb.call(|| Ok::<_, ()>(())).unwrap();
    }
    assert_eq!(cb.state().as_str(), "CLOSED");

    for (body, message) in [
        (
            json!({"updateState": "FORCE_OPEN", "for": "soon"}),
            "`for` = \"soon\":",
        ),
        (
            json!({"updateState": "FORCE_OPEN", "for": 600}),
            "`for` takes a duration as a string",
        ),
        (
            json!({"updateState": "DISABLE", "for": "10m"}),
            "`for` limits a FORCE_OPEN only",
        ),
    ] {
        let (status, answer) = post(&router, uri, Some("s3cr3t"), body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let text = answer["message"].as_str().unwrap();
        assert!(text.starts_with(message), "{text}");
        assert_eq!(
            cb.state().as_str(),
            "CLOSED",
            "a refused change changes nothing"
        );
    }
    // a limit out of 1ms ..= 365 days is a 400 that states the range
    for limit in ["0s", "0", "1ns", "999us", "366d", "100000000000y"] {
        let body = json!({"updateState": "FORCE_OPEN", "for": limit});
        let (status, answer) = post(&router, uri, Some("s3cr3t"), body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{limit}: {answer}");
        let text = answer["message"].as_str().unwrap();
        assert!(
            text.starts_with(&format!(
                "`for` = \"{limit}\": circuit breaker `inventory-query`: a forced open's time limit must be from 1ms to 365 days, got "
            )),
            "{text}"
        );
        assert_eq!(cb.state().as_str(), "CLOSED", "{limit} changed the state");
    }
    for limit in ["1ms", "365d"] {
        let body = json!({"updateState": "FORCE_OPEN", "for": limit});
        let (status, answer) = post(&router, uri, Some("s3cr3t"), body).await;
        assert_eq!(status, StatusCode::OK, "{limit}: {answer}");
    }
}

#[tokio::test]
async fn state_changes_need_the_bearer_token() {
    let f = fixture();
    let router = f.actuator().state_changes("s3cr3t").build().router();
    let cb = f
        .registries
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    let uri = "/actuator/circuitbreakers/inventory-query";
    let force = json!({"updateState": "FORCE_OPEN"});

    for token in [None, Some("wrong"), Some("s3cr3"), Some("")] {
        let (status, body) = post(&router, uri, token, force.clone()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?}");
        assert_eq!(body["status"], 401);
        assert_eq!(body["path"], uri);
    }
    // an unknown name is not revealed before the token is checked
    let (status, _) = post(
        &router,
        "/actuator/circuitbreakers/nobody",
        None,
        force.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(cb.state().as_str(), "CLOSED");

    let request = Request::post(uri)
        .body(Body::from(force.to_string()))
        .unwrap();
    let (_, headers, _) = send(&router, request).await;
    assert_eq!(headers["www-authenticate"], "Bearer");

    for (update, state) in [
        ("FORCE_OPEN", "FORCED_OPEN"),
        ("DISABLE", "DISABLED"),
        ("METRICS_ONLY", "METRICS_ONLY"),
        ("CLOSE", "CLOSED"),
        ("RESET", "CLOSED"),
    ] {
        let (status, body) =
            post(&router, uri, Some("s3cr3t"), json!({"updateState": update})).await;
        assert_eq!(status, StatusCode::OK, "{update}");
        assert_eq!(
            body,
            json!({
                "circuitBreakerName": "inventory-query",
                "currentState": state,
                "message": "inventory-query state has been changed successfully",
            })
        );
        assert_eq!(cb.state().as_str(), state);
    }

    let (status, body) = post(
        &router,
        uri,
        Some("s3cr3t"),
        json!({"updateState": "HALF_OPEN"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["message"],
        "`updateState` must be one of CLOSE, FORCE_OPEN, DISABLE, METRICS_ONLY, RESET; got `HALF_OPEN`"
    );
    let (status, _) = post(
        &router,
        "/actuator/circuitbreakers/nobody",
        Some("s3cr3t"),
        force,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let limiter = f.registries.rate_limiters().rate_limiter("inventory-query");
    let uri = "/actuator/ratelimiters/inventory-query";
    let (status, _) = post(&router, uri, None, json!({"limitForPeriod": 5})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(limiter.config().limit_for_period(), 2);
    let (status, body) = post(
        &router,
        uri,
        Some("s3cr3t"),
        json!({"limitForPeriod": 5, "timeoutDuration": "250ms"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({
            "rateLimiterName": "inventory-query",
            "limitForPeriod": 5,
            "timeoutDuration": "250ms",
            "message": "inventory-query limits have been changed successfully",
        })
    );
    assert_eq!(limiter.config().limit_for_period(), 5);
    assert_eq!(
        limiter.config().timeout_duration(),
        Duration::from_millis(250)
    );
    // a refused value changes nothing, not even the valid one beside it
    let (status, body) = post(
        &router,
        uri,
        Some("s3cr3t"),
        json!({"limitForPeriod": 0, "timeoutDuration": "1s"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["status"], 400);
    assert_eq!(limiter.config().limit_for_period(), 5);
    assert_eq!(
        limiter.config().timeout_duration(),
        Duration::from_millis(250)
    );
    let (status, _) = post(&router, uri, Some("s3cr3t"), json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test(start_paused = true)]
async fn streams_send_live_events_and_pings() {
    use tokio_stream::StreamExt as _;

    let f = fixture();
    let router = f.router();
    let request = Request::get("/actuator/streamcircuitbreakerevents/inventory-query")
        .body(Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut frames = response.into_body().into_data_stream();

    // another instance's events are not this stream's
    f.trip("payment");
    let cb = f
        .registries
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    cb.transition_to_forced_open_state().unwrap();
    let frame = frames.next().await.unwrap().unwrap();
    assert_eq!(
        std::str::from_utf8(&frame).unwrap(),
        concat!(
            "event: STATE_TRANSITION\n",
            r#"data: {"circuitBreakerName":"inventory-query","creationTime":"1970-01-01T00:00:01.542Z","stateTransition":"CLOSED_TO_FORCED_OPEN","type":"STATE_TRANSITION"}"#,
            "\n",
            "id: inventory-query\n\n",
        )
    );
    // nothing happens for a second: a ping
    let frame = frames.next().await.unwrap().unwrap();
    assert_eq!(std::str::from_utf8(&frame).unwrap(), "event: ping\n\n");

    // a typed stream filters by type
    let request = Request::get("/actuator/streamcircuitbreakerevents/inventory-query/reset")
        .body(Body::empty())
        .unwrap();
    let mut resets = router
        .clone()
        .oneshot(request)
        .await
        .unwrap()
        .into_body()
        .into_data_stream();
    cb.transition_to_closed_state().unwrap();
    cb.reset();
    let frame = resets.next().await.unwrap().unwrap();
    assert!(
        std::str::from_utf8(&frame)
            .unwrap()
            .starts_with("event: RESET\n")
    );

    let request = Request::get("/actuator/streamretryevents/x/OPENED")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&router, request).await.0, StatusCode::BAD_REQUEST);
}

/// The settings of a circuit breaker of this file's configuration.
fn breaker_settings(window: &str) -> Value {
    json!({
        "automatic-transition-from-open-to-half-open-enabled": "false",
        "event-consumer-buffer-size": "100",
        "initial-state": "CLOSED",
        "failure-rate-threshold": "50",
        "ignore-errors": "[]",
        "max-wait-duration-in-half-open-state": "0ms",
        "minimum-number-of-calls": window,
        "permitted-number-of-calls-in-half-open-state": "10",
        "record-errors": "[]",
        "sliding-window-size": window,
        "sliding-window-type": "COUNT_BASED",
        "slow-call-duration-threshold": "1m",
        "slow-call-rate-threshold": "100",
        "wait-duration-in-open-state": "1m",
    })
}

/// An instance as `/actuator/resilience` lists it, configured in this file.
fn instance(name: &str, settings: Value, tags: Value, state: Value, used_by: &[&str]) -> Value {
    json!({
        "chain": [format!("instances.{name}")],
        "configured": true,
        "settings": settings,
        "state": state,
        "tags": tags,
        "usedBy": used_by,
    })
}

#[tokio::test]
async fn resilience_shows_call_sites_with_configuration_and_state() {
    let f = fixture();
    f.trip("payment");
    let router = f.actuator().expose_sources(true).build().router();
    let (status, body) = get(&router, "/actuator/resilience").await;
    assert_eq!(status, StatusCode::OK);
    let retry_settings = json!({
        "event-consumer-buffer-size": "100",
        "shadow": "false",
        "fail-after-max-attempts": "false",
        "ignore-errors": "[]",
        "max-attempts": "3",
        "retry-errors": "[]",
        "wait-duration": "100ms",
    });
    let retry_state = json!({
        "numberOfFailedCallsWithRetryAttempt": 0,
        "numberOfFailedCallsWithoutRetryAttempt": 0,
        "numberOfSuccessfulCallsWithRetryAttempt": 0,
        "numberOfSuccessfulCallsWithoutRetryAttempt": 0,
        "numberOfTotalCalls": 0,
    });
    let env = json!({"env": "test"});
    let query = ["inventory::query"];
    let unused = |table: &str, name: &str| {
        format!(
            "resilience.toml: {table}.instances.{name}: no protected function in this binary declares {table} `{name}` (a crate that the binary never names is not linked: add `use that_crate as _;`)"
        )
    };
    let expected = json!({
        "callSites": [{
            "errorType": "InventoryError",
            "file": "src/inventory.rs",
            "function": "inventory::query",
            "line": 10,
            "stack": [
                {"aspect": "retry", "name": "inventory-query", "line": 10,
                 "chain": ["instances.inventory-query"], "configured": true,
                 "settings": retry_settings, "state": retry_state, "tags": {}},
                {"aspect": "circuitbreaker", "name": "inventory-query", "line": 11,
                 "fallback": "Self::unknown",
                 "chain": ["instances.inventory-query"], "configured": true,
                 "settings": breaker_settings("2"), "state": closed_details("50.0%"), "tags": env},
            ],
        }],
        "instances": {
            "circuitbreaker": {
                "inventory-query": instance("inventory-query", breaker_settings("2"), env.clone(), closed_details("50.0%"), &query),
                "payment": instance("payment", breaker_settings("2"), env.clone(), open_details(), &[]),
                "unlisted": instance("unlisted", breaker_settings("100"), env.clone(), closed_details("50.0%"), &[]),
            },
            "retry": {
                "inventory-query": instance("inventory-query", retry_settings, json!({}), retry_state, &query),
            },
            "bulkhead": {
                "inventory-query": instance(
                    "inventory-query",
                    json!({
                        "event-consumer-buffer-size": "100",
                        "shadow": "false",
                        "fair-call-handling-enabled": "true",
                        "limit-algorithm": "fixed",
                        "max-concurrent-calls": "2",
                        "max-wait-duration": "0ms",
                    }),
                    json!({}),
                    json!({"availableConcurrentCalls": 2, "maxAllowedConcurrentCalls": 2}),
                    &[],
                ),
            },
            "thread-pool-bulkhead": {
                "report-export": instance(
                    "report-export",
                    json!({
                        "core-thread-pool-size": "1",
                        "event-consumer-buffer-size": "100",
                        "shadow": "false",
                        "keep-alive-duration": "20ms",
                        "max-thread-pool-size": "2",
                        "queue-capacity": "5",
                    }),
                    json!({}),
                    json!({
                        "activeThreadCount": 0, "availableThreadCount": 2,
                        "coreThreadPoolSize": 1, "maximumThreadPoolSize": 2,
                        "queueCapacity": 5, "queueDepth": 0,
                        "remainingQueueCapacity": 5, "threadPoolSize": 0,
                    }),
                    &[],
                ),
            },
            "ratelimiter": {
                "inventory-query": instance(
                    "inventory-query",
                    json!({
                        "event-consumer-buffer-size": "100",
                        "shadow": "false",
                        "limit-for-period": "2",
                        "limit-refresh-period": "1s",
                        "timeout-duration": "0ms",
                    }),
                    json!({}),
                    json!({"availablePermissions": 2, "numberOfWaitingThreads": 0}),
                    &[],
                ),
            },
            "timelimiter": {
                "inventory-query": instance(
                    "inventory-query",
                    json!({
                        "cancel-running-future": "true",
                        "event-consumer-buffer-size": "100",
                        "shadow": "false",
                        "timeout-duration": "800ms",
                    }),
                    json!({}),
                    json!({"numberOfFailedCalls": 0, "numberOfSuccessfulCalls": 0, "numberOfTimeoutCalls": 0}),
                    &[],
                ),
            },
            "hedge": {},
            "deadline": {},
        },
        "cloud": {
            "default-group-tag": "none",
            "disable-thread-pool": "false",
            "disable-time-limiter": "false",
            "enable-group-meter-filter": "false",
            "enable-semaphore-default-bulkhead": "false",
            "executor-max-threads": "64",
            "executor-queue-capacity": "0",
        },
        "source": {
            "declarations": 2,
            "envOverrides": [],
            "file": "resilience.toml",
            "warnings": [
                unused("bulkhead", "inventory-query"),
                unused("circuitbreaker", "payment"),
                unused("circuitbreaker", "unlisted"),
                unused("ratelimiter", "inventory-query"),
                "resilience.toml: retry.instances.inventory-query: retries every error, the refusals of the circuit breaker, bulkhead and rate limiter `inventory-query` inside it included (CallNotPermitted, BulkheadFull, RequestNotPermitted): retrying a refusal adds load exactly when the downstream needs less (the anti-pattern 'retry every exception'); name the errors worth retrying in `retry-errors`, or list the refusals in `ignore-errors`".to_owned(),
                unused("thread-pool-bulkhead", "report-export"),
                unused("timelimiter", "inventory-query"),
            ],
        },
    });
    assert_eq!(body, expected);

    // a live change shows: the settings are the instance's current ones
    let limiter = f.registries.rate_limiters().rate_limiter("inventory-query");
    limiter.change_limit_for_period(7).unwrap();
    let (_, body) = get(&f.router(), "/actuator/resilience").await;
    assert_eq!(
        body["instances"]["ratelimiter"]["inventory-query"]["settings"]["limit-for-period"],
        "7"
    );
}

#[tokio::test]
async fn a_retry_shows_the_budget_it_spends() {
    let clock = ManualClock::new();
    let loaded = Resilience::builder()
        .file_contents(
            "resilience.toml",
            "[retrybudget.instances.downstream]\nratio = 0.5\nmin-retries-per-second = 0\n[retry.instances.lookup]\nmax-attempts = 3\nwait-duration = 0\nbudget = \"downstream\"\n[timelimiter.instances.lookup]\n",
        )
        .env_vars(Vec::<(String, String)>::new())
        .offline(true)
        .clock(clock)
        .load()
        .unwrap();
    let (registries, report) = loaded.into_parts();
    let retry = registries.retries().retry("lookup");
    // half a retry earned: the first retry is denied
    let _ = retry.call(|| Err::<(), _>("unavailable"));
    let router = Actuator::builder()
        .registries(Arc::new(registries))
        .report(report)
        .build()
        .router();
    let (status, body) = get(&router, "/actuator/resilience").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["instances"]["retry"]["lookup"]["state"]["retryBudget"],
        json!({"name": "downstream", "balance": 0, "denied": 1}),
        "{body:#}"
    );
    assert_eq!(
        body["instances"]["retry"]["lookup"]["settings"]["budget"],
        json!("downstream")
    );
}
