//! The `tower` layers in an axum router driven in-process: each rejection
//! answered with its status, a handler's own error response kept, a service
//! that cannot get ready, and `Retry::call_async` in a handler.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::routing::get;
use resil::Error;
use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil::clock::TokioClock;
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil::retry::{Retry, RetryConfig};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
use resil::tower::{
    BulkheadLayer, CircuitBreakerLayer, IntoResponseLayer, RateLimiterLayer, TimeLimiterLayer,
    named,
};
use tower::{Service, ServiceBuilder, ServiceExt};

fn breaker(name: &str, config: CircuitBreakerConfig) -> CircuitBreaker {
    CircuitBreaker::with_clock(name, config, TokioClock::new())
}

async fn status_of(app: &Router, uri: &str) -> (StatusCode, Option<String>) {
    let response = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let retry_after = response
        .headers()
        .get(header::RETRY_AFTER)
        .map(|v| v.to_str().unwrap().to_owned());
    (response.status(), retry_after)
}

#[tokio::test(start_paused = true)]
async fn an_axum_router_answers_each_rejection_with_its_status() {
    let cb = breaker("axum-cb", CircuitBreakerConfig::default());
    let rl = RateLimiter::with_clock(
        "axum-rl",
        RateLimiterConfig::builder()
            .limit_for_period(1)
            .limit_refresh_period(Duration::from_millis(2_500))
            .timeout_duration(Duration::ZERO)
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let tl = TimeLimiter::with_clock(
        "axum-tl",
        TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_secs(1))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let bh = Bulkhead::new(
        "axum-bh",
        BulkheadConfig::builder()
            .max_concurrent_calls(0)
            .build()
            .unwrap(),
    );
    let app = Router::new()
        .route("/breaker", get(|| async { "ok" }))
        .route_layer((IntoResponseLayer, CircuitBreakerLayer::new(cb.clone())))
        .merge(
            Router::new()
                .route("/limited", get(|| async { "ok" }))
                .route_layer((IntoResponseLayer, RateLimiterLayer::new(rl))),
        )
        .merge(
            Router::new()
                .route(
                    "/slow",
                    get(|| async {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        "late"
                    }),
                )
                .route_layer((IntoResponseLayer, TimeLimiterLayer::new(tl))),
        )
        .merge(
            Router::new()
                .route("/full", get(|| async { "ok" }))
                .route_layer((IntoResponseLayer, BulkheadLayer::new(bh))),
        );
    assert_eq!(status_of(&app, "/breaker").await, (StatusCode::OK, None));
    cb.transition_to_open_state().unwrap();
    assert_eq!(
        status_of(&app, "/breaker").await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(status_of(&app, "/limited").await.0, StatusCode::OK);
    assert_eq!(
        status_of(&app, "/limited").await,
        (StatusCode::TOO_MANY_REQUESTS, Some("3".to_owned())),
        "2.5 s to the next permit, rounded up"
    );
    assert_eq!(
        status_of(&app, "/slow").await.0,
        StatusCode::GATEWAY_TIMEOUT
    );
    assert_eq!(
        status_of(&app, "/full").await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(status_of(&app, "/missing").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_route_behind_named_serves_and_a_handler_error_keeps_its_own_response() {
    async fn failing() -> Result<&'static str, Error<(StatusCode, &'static str)>> {
        Err(Error::Inner((StatusCode::IM_A_TEAPOT, "teapot")))
    }
    let app = Router::new()
        .route("/stock", get(|| async { "12" }))
        .route("/teapot", get(failing))
        .route_layer(
            ServiceBuilder::new().layer(IntoResponseLayer).layer(
                named("tower-axum-named")
                    .circuit_breaker()
                    .bulkhead()
                    .build(),
            ),
        );
    assert_eq!(status_of(&app, "/stock").await.0, StatusCode::OK);
    assert_eq!(status_of(&app, "/teapot").await.0, StatusCode::IM_A_TEAPOT);
}

/// A service that never gets ready: its `poll_ready` fails.
#[derive(Clone)]
struct NeverReady;

impl Service<()> for NeverReady {
    type Response = &'static str;
    type Error = Error<StatusCode>;
    type Future = std::future::Ready<Result<&'static str, Error<StatusCode>>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Err(Error::Inner(StatusCode::IM_A_TEAPOT)))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        panic!("called although it was not ready")
    }
}

#[tokio::test]
async fn a_service_that_cannot_get_ready_answers_with_its_error_and_is_not_called() {
    let svc = tower::Layer::layer(&IntoResponseLayer, NeverReady);
    let response = svc.oneshot(()).await.unwrap();
    assert_eq!(response.status(), StatusCode::IM_A_TEAPOT);
}

/// `Retry::call_async`'s named future in an axum handler: `Send` for the
/// handler's own arguments, which the attempts borrow.
#[tokio::test]
async fn retry_call_async_serves_an_axum_handler_that_borrows_its_arguments() {
    async fn stock(
        axum::extract::State(retry): axum::extract::State<Arc<Retry>>,
        axum::extract::Path(sku): axum::extract::Path<String>,
    ) -> String {
        let sku = &sku;
        let attempts = AtomicU32::new(0);
        let answer = retry
            .call_async(|| async {
                if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err("refused")
                } else {
                    Ok(sku.len())
                }
            })
            .await;
        format!("{answer:?} after {}", attempts.load(Ordering::SeqCst))
    }
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::ZERO)
        .build()
        .unwrap();
    let router = Router::new()
        .route("/stock/{sku}", get(stock))
        .with_state(Arc::new(Retry::new("handler-retry", config)));
    let response = router
        .oneshot(Request::get("/stock/SKU-1").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let body = axum::body::to_bytes(response.into_body(), 1024)
        .await
        .unwrap();
    assert_eq!(&body[..], b"Ok(5) after 2");
}
