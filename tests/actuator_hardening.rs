//! What the actuator shows and accepts from strangers: no body read before
//! the token is checked, bounded bodies, a bounded number of event streams,
//! and no source paths unless asked for.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, Request, StatusCode};
use resil::actuator::Actuator;
use resil::config::{Aspect, Registries, Report, Resilience};
use resil_config::Declaration;
use serde_json::Value;
use tower::ServiceExt as _;

const CONFIG: &str = "[circuitbreaker.instances.inventory-query]\n";

const QUERY_BREAKER: Declaration = Declaration {
    aspect: Aspect::CircuitBreaker,
    name: "inventory-query",
    module: "inventory",
    function: "query",
    file: "src/inventory.rs",
    line: 11,
    fallback: None,
    error_type: "InventoryError",
    error_kinds: &["ConnectionRefused"],
    detachable: false,
};

fn loaded() -> (Arc<Registries>, Report) {
    let (registries, report) = Resilience::builder()
        .file_contents("/etc/secret-dir/resilience.toml", CONFIG)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([&QUERY_BREAKER])
        .load()
        .unwrap()
        .into_parts();
    (Arc::new(registries), report)
}

fn builder() -> resil::actuator::ActuatorBuilder {
    let (registries, report) = loaded();
    Actuator::builder()
        .registries(registries)
        .report(report)
        .state_changes("s3cr3t")
}

/// A body of `chunks` chunks of 16 KiB, without a declared length, that
/// counts how many chunks were read.
fn counted(chunks: usize) -> (Body, Arc<AtomicUsize>) {
    use tokio_stream::StreamExt as _;

    let polled = Arc::new(AtomicUsize::new(0));
    let counter = polled.clone();
    let stream = tokio_stream::iter(0..chunks).map(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok::<_, std::io::Error>(Bytes::from(vec![b' '; 16 * 1024]))
    });
    (Body::from_stream(stream), polled)
}

fn post(token: Option<&str>, body: Body) -> Request<Body> {
    let mut r = Request::builder()
        .method(Method::POST)
        .uri("/actuator/circuitbreakers/inventory-query");
    if let Some(t) = token {
        r = r.header("authorization", format!("Bearer {t}"));
    }
    r.body(body).unwrap()
}

#[tokio::test]
async fn a_strangers_body_is_never_read() {
    let router: Router = builder()
        .build()
        .router()
        .layer(DefaultBodyLimit::disable());
    let (body, polled) = counted(1_000_000);
    let response = router.clone().oneshot(post(None, body)).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(polled.load(Ordering::SeqCst), 0);

    let (body, polled) = counted(1_000_000);
    let response = router.oneshot(post(Some("wrong"), body)).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(polled.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_state_changes_body_is_bounded_even_without_the_routers_limit() {
    let router: Router = builder()
        .build()
        .router()
        .layer(DefaultBodyLimit::disable());
    // a stream without a length: read up to the limit, then a 413
    let (body, polled) = counted(1_000_000);
    let response = router
        .clone()
        .oneshot(post(Some("s3cr3t"), body))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(polled.load(Ordering::SeqCst) <= 6, "read past the limit");

    // a declared length past the limit: refused without reading
    let big = Body::from(vec![b' '; 64 * 1024 + 1]);
    let response = router
        .clone()
        .oneshot(post(Some("s3cr3t"), big))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

    // a small body still works
    let ok = Body::from(r#"{"updateState":"FORCE_OPEN"}"#);
    let response = router.oneshot(post(Some("s3cr3t"), ok)).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

fn stream_request() -> Request<Body> {
    Request::get("/actuator/streamcircuitbreakerevents")
        .body(Body::empty())
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn event_streams_are_capped_and_free_their_place_when_closed() {
    let router = builder()
        .max_stream_clients(2)
        .operator_stream_clients(0)
        .build()
        .router();
    let first = router.clone().oneshot(stream_request()).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    // another kind's stream counts too
    let second = router
        .clone()
        .oneshot(
            Request::get("/actuator/streamretryevents/x")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(second.status(), StatusCode::OK);

    let refused = router.clone().oneshot(stream_request()).await.unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);

    drop(first);
    let third = router.clone().oneshot(stream_request()).await.unwrap();
    assert_eq!(third.status(), StatusCode::OK);
    drop((second, third));
}

#[tokio::test(start_paused = true)]
async fn the_default_cap_is_sixteen_streams_four_of_them_the_operators() {
    let router = builder().build().router();
    let mut open = Vec::new();
    for _ in 0..12 {
        let r = router.clone().oneshot(stream_request()).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        open.push(r);
    }
    let refused = router.clone().oneshot(stream_request()).await.unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    let operator = || {
        Request::get("/actuator/streamcircuitbreakerevents")
            .header("authorization", "Bearer s3cr3t")
            .body(Body::empty())
            .unwrap()
    };
    for _ in 0..4 {
        let r = router.clone().oneshot(operator()).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        open.push(r);
    }
    let refused = router.clone().oneshot(operator()).await.unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    // without state changes there is no token: all sixteen are anyone's
    let (registries, report) = loaded();
    let router = Actuator::builder()
        .registries(registries)
        .report(report)
        .build()
        .router();
    let mut open = Vec::new();
    for _ in 0..16 {
        let r = router.clone().oneshot(stream_request()).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        open.push(r);
    }
    let refused = router.clone().oneshot(stream_request()).await.unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
}

async fn resilience(router: Router) -> Value {
    let r = router
        .oneshot(
            Request::get("/actuator/resilience")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(r.into_body(), usize::MAX)
        .await
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn resilience_leaves_out_sources_unless_asked() {
    let doc = resilience(builder().build().router()).await;
    let text = doc.to_string();
    assert!(!text.contains("secret-dir"), "{text}");
    assert!(!text.contains("src/inventory.rs"), "{text}");
    let site = &doc["callSites"][0];
    assert_eq!(site["function"], "inventory::query");
    assert!(site.get("file").is_none() && site.get("line").is_none());
    assert!(site["stack"][0].get("line").is_none());
    assert!(doc["source"].get("file").is_none());

    let doc = resilience(builder().expose_sources(true).build().router()).await;
    assert_eq!(doc["source"]["file"], "/etc/secret-dir/resilience.toml");
    let site = &doc["callSites"][0];
    assert_eq!(site["file"], "src/inventory.rs");
    assert_eq!(site["line"], 11);
    assert_eq!(site["stack"][0]["line"], 11);
}
