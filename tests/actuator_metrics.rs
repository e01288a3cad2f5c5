//! The actuator's meters: the Prometheus text in Resilience4j's names,
//! `/actuator/metrics` in Spring Boot's shape, meters recorded before the
//! recorder, and no Prometheus route without a handle. Each test records
//! into its own Prometheus recorder.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use resil::actuator::Actuator;
use serde_json::{Value, json};

mod support_actuator;

use support_actuator::{InventoryError, fixture, get, send};

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
