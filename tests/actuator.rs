//! The actuator's Resilience4j routes end to end: the name lists, the
//! breakers' details, the events of every kind, the health indicators, all
//! compared whole, and the event streams. Each test loads its own
//! registries on a `ManualClock` (wall time starts at 1970-01-01T00:00Z).

use axum::body::Body;
use axum::http::{Request, StatusCode};
use resil::retry::RetryClassifier;
use serde_json::json;
use tower::ServiceExt as _;

mod support_actuator;

use support_actuator::{InventoryError, closed_details, fixture, get, open_details, send};

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
