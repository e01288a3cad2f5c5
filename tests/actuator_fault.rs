//! `/actuator/faults` on a real axum router: a fault started with a bearer
//! token for a while aborts the calls of its name (the breaker counts
//! them, `resil_faults_injected_total` shows them), ends on its own when
//! its `for` is over, or at a `DELETE`; bad requests are refused naming the
//! field, an unknown name is a 404, and each change is in the audit log.
//! The registries run on a `ManualClock`: nothing sleeps.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};
use resil::Decorators;
use resil::actuator::Actuator;
use resil::clock::ManualClock;
use resil::config::{Registries, Report, Resilience};
use serde_json::Value;
use tower::ServiceExt as _;

const TOKEN: &str = "s3cr3t";

const CONFIG: &str = r#"
[circuitbreaker.instances.fault-drill]
sliding-window-size = 4
minimum-number-of-calls = 4

[circuitbreaker.instances.fault-routes]
"#;

struct Fixture {
    registries: Arc<Registries>,
    report: Report,
    clock: ManualClock,
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
}

fn fixture() -> Fixture {
    let clock = ManualClock::new();
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", CONFIG)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .clock(clock.clone())
        .load()
        .unwrap();
    let (registries, report) = loaded.into_parts();
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    Fixture {
        registries: Arc::new(registries),
        report,
        clock,
        recorder,
        handle,
    }
}

impl Fixture {
    fn router(&self) -> Router {
        Actuator::builder()
            .registries(self.registries.clone())
            .report(self.report.clone())
            .prometheus(self.handle.clone())
            .state_changes(TOKEN)
            .build()
            .router()
    }
}

async fn send(router: &Router, request: Request<Body>) -> (StatusCode, String) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn get(router: &Router, uri: &str) -> (StatusCode, Value) {
    let (status, text) = send(router, Request::get(uri).body(Body::empty()).unwrap()).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn change(
    router: &Router,
    method: &str,
    uri: &str,
    token: Option<&str>,
    body: &str,
) -> (StatusCode, Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request.body(Body::from(body.to_owned())).unwrap();
    let (status, text) = send(router, request).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The faults in force named `name`.
async fn listed(router: &Router, name: &str) -> Vec<Value> {
    let (status, body) = get(router, "/actuator/faults").await;
    assert_eq!(status, StatusCode::OK);
    body["faults"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] == name)
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_fault_started_for_ten_minutes_opens_the_breaker_and_ends_on_its_own() {
    let f = fixture();
    let _recording = metrics::set_default_local_recorder(&f.recorder);
    let router = f.router();
    assert!(listed(&router, "fault-drill").await.is_empty());

    let (status, body) = change(
        &router,
        "POST",
        "/actuator/faults/fault-drill",
        Some(TOKEN),
        r#"{"abortPercent":100,"for":"10m"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["for"], "10m");
    let faults = listed(&router, "fault-drill").await;
    assert_eq!(faults.len(), 1);
    assert_eq!(faults[0]["source"], "injected");
    assert_eq!(faults[0]["abortPercent"], 100.0);
    assert_eq!(faults[0]["remaining"], "10m");

    // Every call of the name is aborted before it runs; the breaker opens.
    let breaker = f
        .registries
        .circuit_breakers()
        .circuit_breaker("fault-drill");
    for _ in 0..4 {
        let outcome = Decorators::new()
            .with_circuit_breaker(&breaker)
            .call(|| -> Result<u32, &str> { panic!("an aborted call does not run") });
        assert!(matches!(outcome, Err(resil::Error::FaultInjected(_))));
    }
    assert_eq!(breaker.state(), resil::circuit_breaker::State::Open);

    let (_, text) = send(
        &router,
        Request::get("/actuator/prometheus")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    for line in [
        r#"resil_faults_injected_total{name="fault-drill",kind="abort"} 4"#,
        r#"resil_faults_injected_total{name="fault-drill",kind="delay"} 0"#,
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing `{line}` in\n{text}"
        );
    }

    // Ten minutes later the fault is over; calls run again.
    f.clock.advance(Duration::from_secs(600));
    assert!(listed(&router, "fault-drill").await.is_empty());
    breaker.reset();
    let outcome = Decorators::new()
        .with_circuit_breaker(&breaker)
        .call(|| Ok::<_, &str>(1));
    assert_eq!(outcome, Ok(1));

    // The change is in the audit log.
    let (status, audit) =
        change(&router, "GET", "/actuator/resilienceaudit", Some(TOKEN), "").await;
    assert_eq!(status, StatusCode::OK);
    let entry = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "/actuator/faults/fault-drill")
        .unwrap_or_else(|| panic!("no audit entry in {audit}"))
        .clone();
    assert_eq!(entry["status"], 200, "{entry}");
}

#[tokio::test]
async fn bad_requests_are_refused_naming_the_field_and_delete_ends_a_fault() {
    let f = fixture();
    let router = f.router();
    let uri = "/actuator/faults/fault-routes";
    let good = r#"{"delay":"200ms","delayPercent":10,"abortPercent":5,"for":"10m"}"#;

    let (status, _) = change(&router, "POST", uri, None, good).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = change(&router, "DELETE", uri, None, "").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = change(
        &router,
        "POST",
        "/actuator/faults/no-such-name",
        Some(TOKEN),
        good,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body["message"].as_str().unwrap().contains("no-such-name"));

    for (bad, field) in [
        (r#"{"abortPercent":5}"#, "`for`"),
        (r#"{"abortPercent":5,"for":"25h"}"#, "`for`"),
        (r#"{"abortPercent":5,"for":"0s"}"#, "`for`"),
        (r#"{"abortPercent":5,"for":600}"#, "`for`"),
        (r#"{"abortPercent":150,"for":"10m"}"#, "`abortPercent`"),
        (r#"{"delayPercent":"ten","for":"10m"}"#, "`delayPercent`"),
        (
            r#"{"delay":"soon","delayPercent":10,"for":"10m"}"#,
            "`delay`",
        ),
        (r#"{"abortPercnt":5,"for":"10m"}"#, "`abortPercnt`"),
        ("[1]", "JSON object"),
    ] {
        let (status, body) = change(&router, "POST", uri, Some(TOKEN), bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains(field), "{bad}: {message}");
    }
    assert!(
        listed(&router, "fault-routes").await.is_empty(),
        "nothing half-applied"
    );

    let (status, _) = change(&router, "POST", uri, Some(TOKEN), good).await;
    assert_eq!(status, StatusCode::OK);
    let faults = listed(&router, "fault-routes").await;
    assert_eq!(faults[0]["delay"], "200ms");
    assert_eq!(faults[0]["delayPercent"], 10.0);
    let (status, body) = change(&router, "DELETE", uri, Some(TOKEN), "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["stopped"], true);
    assert!(listed(&router, "fault-routes").await.is_empty());
    let (_, body) = change(&router, "DELETE", uri, Some(TOKEN), "").await;
    assert_eq!(body["stopped"], false);
}
