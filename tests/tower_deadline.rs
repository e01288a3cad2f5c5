//! The `tower` deadline layer: the layer's timeout, an incoming
//! `grpc-timeout` header (shorter wins, malformed ignored and counted), the
//! header written on outgoing requests, and an axum route answering 504.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use resil::Error;
use resil::clock::{ManualClock, TokioClock};
use resil::tower::{DeadlineLayer, IntoResponseLayer};
use tower::{ServiceBuilder, ServiceExt, service_fn};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn request(grpc_timeout: Option<&str>) -> Request<()> {
    let mut builder = Request::builder();
    if let Some(value) = grpc_timeout {
        builder = builder.header("grpc-timeout", value);
    }
    builder.body(()).unwrap()
}

/// A service that answers with the time left before its deadline.
fn time_left() -> impl tower::Service<
    Request<()>,
    Response = Option<Duration>,
    Error = std::io::Error,
    Future = impl Future<Output = Result<Option<Duration>, std::io::Error>>,
> + Clone {
    service_fn(|_: Request<()>| async { Ok(resil::deadline::remaining()) })
}

#[tokio::test]
async fn the_smaller_of_the_layers_timeout_and_the_header_wins() {
    let layer = DeadlineLayer::with_clock(ms(800), ManualClock::new()).grpc_timeout_header();
    let svc = ServiceBuilder::new()
        .layer(layer.clone())
        .service(time_left());
    let cases = [
        (None, ms(800)),
        (Some("200m"), ms(200)),
        (Some("5S"), ms(800)),
        (Some("1500u"), Duration::from_micros(1500)),
    ];
    for (header, left) in cases {
        let seen = svc.clone().oneshot(request(header)).await.unwrap();
        assert_eq!(seen, Some(left), "{header:?}");
    }
    assert_eq!(layer.malformed_grpc_timeouts(), 0);

    // Without `grpc_timeout_header` the header is not read.
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::with_clock(ms(800), ManualClock::new()))
        .service(time_left());
    assert_eq!(
        svc.oneshot(request(Some("200m"))).await.unwrap(),
        Some(ms(800))
    );
}

#[tokio::test]
async fn a_malformed_header_is_ignored_and_counted() {
    let layer = DeadlineLayer::with_clock(ms(800), ManualClock::new()).grpc_timeout_header();
    let svc = ServiceBuilder::new()
        .layer(layer.clone())
        .service(time_left());
    for bad in ["", "soon", "123456789m", "5s", "-1S", "1.5S"] {
        let seen = svc.clone().oneshot(request(Some(bad))).await;
        assert_eq!(seen.unwrap(), Some(ms(800)), "{bad:?}: the layer's timeout");
    }
    assert_eq!(layer.malformed_grpc_timeouts(), 6);
}

#[tokio::test]
async fn a_request_with_no_time_left_is_refused_without_calling_the_service() {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::with_clock(ms(800), ManualClock::new()).grpc_timeout_header())
        .service(service_fn(move |_: Request<()>| {
            counted.fetch_add(1, Ordering::Relaxed);
            async { Ok::<_, std::io::Error>(()) }
        }));
    let out = svc.oneshot(request(Some("0n"))).await;
    assert!(matches!(out, Err(Error::DeadlineExceeded(e)) if e.kind() == "deadline"));
    assert_eq!(calls.load(Ordering::Relaxed), 0);
}

#[tokio::test(start_paused = true)]
async fn a_slow_route_answers_504_at_the_callers_deadline() {
    let clock = TokioClock::new();
    let app = Router::new()
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .route_layer((
            IntoResponseLayer,
            DeadlineLayer::with_clock(ms(800), clock.clone()).grpc_timeout_header(),
        ));
    let request = Request::builder()
        .uri("/slow")
        .header("grpc-timeout", "100m")
        .body(Body::empty())
        .unwrap();
    let before = resil::clock::Clock::now(&clock);
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    let took = resil::clock::Clock::now(&clock).saturating_duration_since(before);
    assert_eq!(took, ms(100));
}

#[tokio::test]
async fn the_time_left_is_written_on_outgoing_requests() {
    let clock = ManualClock::new();
    let client = ServiceBuilder::new()
        .layer(DeadlineLayer::with_clock(ms(800), clock.clone()).set_grpc_timeout_header())
        .service(service_fn(|request: Request<()>| async move {
            let header = request.headers().get("grpc-timeout").cloned();
            Ok::<_, std::io::Error>(header.map(|v| v.to_str().unwrap().to_owned()))
        }));
    let alone = client.clone().oneshot(request(None)).await.unwrap();
    assert_eq!(alone.as_deref(), Some("800000u"));
    // Inside an earlier deadline, what is left of it.
    let inside = resil::deadline::scope_on(clock.clone(), ms(300), async {
        client.oneshot(request(None)).await
    })
    .await
    .unwrap();
    assert_eq!(inside.as_deref(), Some("300000u"));
}

/// The deadline layer over a breaker's layer: a call the deadline cuts
/// short is no failure of the breaker, and a slow call past its threshold.
#[tokio::test(start_paused = true)]
async fn a_call_the_deadline_cuts_short_is_a_slow_call_of_the_breaker_beneath() {
    use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
    use resil::tower::CircuitBreakerLayer;
    let clock = TokioClock::new();
    let config = CircuitBreakerConfig::builder()
        .slow_call_duration_threshold(ms(400))
        .build()
        .unwrap();
    let breaker = CircuitBreaker::with_clock("inventory", config, clock.clone());
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::with_clock(ms(500), clock.clone()))
        .layer(CircuitBreakerLayer::new(breaker.clone()))
        .service(service_fn(|_: Request<()>| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok::<_, std::io::Error>(())
        }));
    let out = svc.oneshot(request(None)).await;
    assert!(matches!(out, Err(Error::DeadlineExceeded(e)) if e.kind() == "deadline"));
    let m = breaker.metrics();
    assert_eq!(m.number_of_failed_calls(), 0);
    assert_eq!(m.number_of_slow_successful_calls(), 1);
}
