//! What the drills share: the service's configuration on paused tokio
//! time, one drill at a time on the process-wide instances, injected
//! faults that end with the drill, requests through the service's router,
//! its Prometheus scrape and its log lines.

use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use resil::actuator::metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerEvent, State};
use resil::clock::{Clock as _, TokioClock};
use resil::config::{Registries, Resilience};
use resil::event::SubscriptionId;
use resil::fault::{FaultConfig, FaultConfigBuilder, Faults};
use serde_json::Value;
use tower::ServiceExt as _;

use crate::app;
use crate::app::Inventory;
use crate::app::domain::{InventoryStatus, InventoryView, Mode};
use crate::app::downstream::InventoryHttpClient;

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/resilience.toml");
pub(crate) const SKU: &str = "SKU-1001";
/// `wait-duration-in-open-state`.
pub(crate) const OPEN_WAIT: Duration = Duration::from_secs(10);
/// The smallest step that takes the clock past a deadline: a breaker leaves
/// OPEN strictly after its wait, as Resilience4j's `isAfter` does.
pub(crate) const PAST: Duration = Duration::from_millis(1);

/// One drill at a time: they share the global `inventory-query` instances.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
static INIT: Once = Once::new();
static PROMETHEUS: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process's Prometheus recorder, installed before `init` so that the
/// meters see every event.
pub(crate) fn prometheus() -> PrometheusHandle {
    PROMETHEUS
        .get_or_init(|| PrometheusBuilder::new().install_recorder().unwrap())
        .clone()
}

/// The service's configuration, read from the repository's resilience.toml, on
/// a clock that follows paused tokio time (and no environment overrides).
fn service_config() -> resil::config::ResilienceBuilder {
    Resilience::builder()
        .file(CONFIG)
        .clock(TokioClock::new())
        .env_vars(Vec::<(String, String)>::new())
}

/// Registries of their own, for the hand-composed gateway.
pub(crate) fn local_registries() -> Registries {
    let (registries, _) = service_config().load().unwrap().into_parts();
    registries
}

pub(crate) struct Drill {
    pub client: Arc<InventoryHttpClient>,
    pub inventory: Inventory,
    pub breaker: Arc<CircuitBreaker>,
    pub events: Arc<Mutex<Vec<CircuitBreakerEvent>>>,
    subscription: SubscriptionId,
    _serial: tokio::sync::MutexGuard<'static, ()>,
}

impl Drill {
    /// Waits for its turn, then starts from a CLOSED breaker and an inventory
    /// whose every answer takes `latency`.
    pub(crate) async fn start(latency: Duration) -> Drill {
        let serial = SERIAL.lock().await;
        INIT.call_once(|| {
            prometheus();
            service_config().init().unwrap();
        });
        // The global instances share one `TokioClock`, whose origin is the
        // paused time of the runtime that ran `init`. Each test has its own
        // runtime, and one made a moment earlier would read times before
        // that origin (which saturate to zero). An hour ahead, every
        // runtime is past it.
        tokio::time::advance(Duration::from_secs(3600)).await;
        let registries = resil::registries();
        let breaker = registries
            .circuit_breakers()
            .circuit_breaker("inventory-query");
        breaker.reset();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let subscription = breaker
            .event_publisher()
            .on_event(move |e| sink.lock().unwrap().push(e.kind().clone()));
        let client = Arc::new(InventoryHttpClient::with_latency(latency));
        Drill {
            inventory: Inventory::new(client.clone(), registries),
            client,
            breaker,
            events,
            subscription,
            _serial: serial,
        }
    }

    pub(crate) async fn query(&self, mode: Mode) -> InventoryView {
        self.inventory.gateway.query(SKU, mode).await.unwrap()
    }

    /// Ten failures, the minimum number of calls, all failed: a fault that
    /// aborts every call of `inventory-query` while they are made (the
    /// inventory itself is not called), ended once the breaker is OPEN.
    pub(crate) async fn open(&self) {
        let _ends = self.inject(FaultConfig::builder().abort_percent(100.0));
        for _ in 0..10 {
            assert_eq!(self.query(Mode::Success).await, unknown("FaultInjected"));
        }
        assert_eq!(self.breaker.state(), State::Open);
    }

    /// Injects `fault` into the calls of `inventory-query` until the guard
    /// is dropped, as the actuator's `POST /actuator/faults/inventory-query`
    /// does, on the primitives' clock.
    pub(crate) fn inject(&self, fault: FaultConfigBuilder) -> EndFault {
        Faults::global()
            .inject(
                "inventory-query",
                fault.build().unwrap(),
                Duration::from_secs(600),
                self.breaker.clock(),
            )
            .unwrap();
        EndFault("inventory-query")
    }

    /// The state transitions so far, in order.
    pub(crate) fn transitions(&self) -> Vec<(State, State)> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                CircuitBreakerEvent::StateTransition { from, to } => Some((*from, *to)),
                _ => None,
            })
            .collect()
    }

    /// The time on the primitives' clock (paused tokio time).
    pub(crate) fn now(&self) -> Duration {
        self.breaker.clock().now().as_duration()
    }

    pub(crate) fn router(&self) -> Router {
        app::app(self.inventory.clone())
    }
}

impl Drop for Drill {
    fn drop(&mut self) {
        self.breaker
            .event_publisher()
            .unsubscribe(self.subscription);
    }
}

pub(crate) fn unknown(reason: &str) -> InventoryView {
    InventoryView::unknown(SKU, reason)
}

pub(crate) fn available() -> InventoryView {
    InventoryView::confirmed(SKU, InventoryStatus::Available)
}

/// Lets the spawned tasks run until `done` holds (time does not move).
pub(crate) async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..10_000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("never happened: {what}");
}

/// Sends one request to the service's router; the answer's status and JSON.
pub(crate) async fn send(
    router: &Router,
    method: &str,
    uri: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    exchange(router, request, body).await
}

/// The actuator's bearer token in the drills that change state.
pub(crate) const DRILL_TOKEN: &str = "drill-token";

/// [`send`] with the actuator's bearer token.
pub(crate) async fn send_authorized(
    router: &Router,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {DRILL_TOKEN}"));
    exchange(router, request, body).await
}

/// `request` with `body` as JSON, through the router.
async fn exchange(
    router: &Router,
    mut request: axum::http::request::Builder,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let body = match body {
        Some(json) => {
            request = request.header("content-type", "application/json");
            Body::from(json.to_string())
        }
        None => Body::empty(),
    };
    let response = router
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap())
}

/// Ends the fault of a name when a drill ends, passed or not, so that the
/// next drill starts without it.
pub(crate) struct EndFault(pub &'static str);

impl Drop for EndFault {
    fn drop(&mut self) {
        Faults::global().stop(self.0);
    }
}

pub(crate) const STATE_OPEN: &str =
    r#"resilience4j_circuitbreaker_state{name="inventory-query",state="open"}"#;
pub(crate) const STATE_CLOSED: &str =
    r#"resilience4j_circuitbreaker_state{name="inventory-query",state="closed"}"#;
pub(crate) const FAILURE_RATE: &str =
    r#"resilience4j_circuitbreaker_failure_rate{name="inventory-query"}"#;
pub(crate) const NOT_PERMITTED: &str = r#"resilience4j_circuitbreaker_not_permitted_calls_total{kind="not_permitted",name="inventory-query"}"#;
pub(crate) const FAILED_CALLS: &str =
    r#"resilience4j_circuitbreaker_calls_seconds_count{kind="failed",name="inventory-query"}"#;
pub(crate) const SUCCESSFUL_CALLS: &str =
    r#"resilience4j_circuitbreaker_calls_seconds_count{kind="successful",name="inventory-query"}"#;

/// The value of one series in a Prometheus scrape; 0 for a series not
/// there yet (a counter no event has moved).
pub(crate) fn metric(scrape: &str, series: &str) -> f64 {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

pub(crate) async fn send_text(router: &Router, uri: &str) -> String {
    let request = Request::get(uri).body(Body::empty()).unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// The log lines of this thread at INFO and above, without their time and fields.
#[derive(Clone, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    pub(crate) fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        let sink = self.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .without_time()
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .finish()
    }

    pub(crate) fn lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            // the message, without the structured fields that follow it
            .map(|l| l.split(" name=").next().unwrap().trim_end().to_owned())
            .collect()
    }
}

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
