//! The actuator's state changes: absent unless enabled, refused without
//! the bearer token, a forced open with a time limit, and the audit log of
//! every request with its peer address.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};

mod support_actuator;

use support_actuator::{fixture, get, post, send};

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
