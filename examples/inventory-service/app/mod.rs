//! The ported inventory service, in Rust: its domain, the
//! simulated inventory, the protected gateways and the HTTP routes.
//!
//! | route | what |
//! | --- | --- |
//! | `GET /inventory/{sku}?mode=success\|fail\|connect\|slow\|sluggish` | the stock, through the attributes |
//! | `GET /native/inventory/{sku}?mode=...` | the same, through Retry and CircuitBreaker composed by hand |
//! | `GET /layered/inventory/{sku}?mode=...` | the same, the route behind `resil::tower::named("inventory-query")` |
//! | `GET /cloud/inventory/{sku}?mode=...` | the same, through the Spring Cloud facade, as the Java `InventoryGateway` |
//! | `GET /hedged/inventory/{sku}?mode=...` | the same, hedged: a slow query gets a second one beside it |
//! | `GET /inventory/attempts` | the physical attempts that reached the inventory |
//! | `POST /inventory/{sku}/reservations?mode=...` | reserve, with an `Idempotency-Key` header and `{"quantity": n}` |
//! | `GET /reservations/{key}` | what the inventory knows of a reservation |
//! | `/actuator/...` | resil's actuator: `circuitbreakers`, `circuitbreakerevents`, `prometheus`, `health`, `resilience`, `faults`, ... |

pub(crate) mod domain;
pub(crate) mod downstream;
pub(crate) mod gateway;

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use resil::actuator::Actuator;
use resil::actuator::metrics_exporter_prometheus::PrometheusHandle;
use resil::tower::{IntoResponseLayer, named};
use serde::{Deserialize, Serialize};
use tower::ServiceBuilder;

use self::domain::{InventoryError, InventoryView, Mode, ReservationStatus, ReserveBody};
use self::downstream::InventoryHttpClient;
use self::gateway::{
    CloudInventoryGateway, InventoryGateway, NativeInventoryGateway, ReservationGateway,
};

/// The header that names a write, so that repeating it cannot apply it twice.
pub(crate) const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Everything the routes use.
#[derive(Debug, Clone)]
pub(crate) struct Inventory {
    pub(crate) client: Arc<InventoryHttpClient>,
    pub(crate) gateway: InventoryGateway,
    pub(crate) native: NativeInventoryGateway,
    pub(crate) cloud: CloudInventoryGateway,
    pub(crate) reservations: ReservationGateway,
}

impl Inventory {
    /// The gateways over `client`; the hand-composed one and the facade take
    /// their instances from `registries`.
    pub(crate) fn new(
        client: Arc<InventoryHttpClient>,
        registries: &'static resil::config::Registries,
    ) -> Self {
        Inventory {
            gateway: InventoryGateway::new(client.clone()),
            native: NativeInventoryGateway::new(registries, client.clone()),
            cloud: CloudInventoryGateway::new(registries, client.clone()),
            reservations: ReservationGateway::new(client.clone()),
            client,
        }
    }
}

/// The actuator of the service: `/actuator/prometheus` from `prometheus`,
/// and the state changes (`POST /actuator/circuitbreakers/{name}`) only with
/// a bearer token.
pub(crate) fn actuator(prometheus: PrometheusHandle, token: Option<String>) -> Actuator {
    let builder = Actuator::builder().prometheus(prometheus);
    match token {
        Some(token) => builder.state_changes(token),
        None => builder,
    }
    .build()
}

/// Serves the whole service on `listener` until it fails, handing each
/// connection's peer address to the router (`ConnectInfo`): the actuator's
/// audit log records who changed a state (`"peer":"127.0.0.1:53210"`), not
/// `"unknown"`.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    inventory: Inventory,
    actuator: &Actuator,
) -> std::io::Result<()> {
    let app = service(inventory, actuator);
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .await
}

/// The whole service: the inventory's routes and the actuator's.
pub(crate) fn service(inventory: Inventory, actuator: &Actuator) -> Router {
    app(inventory).merge(actuator.router())
}

/// The inventory's routes.
pub(crate) fn app(inventory: Inventory) -> Router {
    layered(inventory.clone()).merge(attributed(inventory))
}

/// The routes whose calls the attributes (or a hand-made composition) protect.
fn attributed(inventory: Inventory) -> Router {
    Router::new()
        .route("/inventory/attempts", get(attempts))
        .route("/inventory/{sku}", get(query))
        .route("/native/inventory/{sku}", get(native_query))
        .route("/cloud/inventory/{sku}", get(cloud_query))
        .route("/hedged/inventory/{sku}", get(hedged_query))
        .route(
            "/inventory/{sku}/reservations",
            axum::routing::post(reserve),
        )
        .route("/reservations/{key}", get(reservation))
        .with_state(inventory)
}

/// The layer form beside the attribute form: the whole route behind the
/// global `inventory-query` instances (the same breaker, time limiter and
/// bulkhead as `GET /inventory/{sku}`, configured by the same file), its 5xx
/// answers recorded as the breaker's failures, and each rejection answered
/// with its status (503 open or full, 504 too slow).
fn layered(inventory: Inventory) -> Router {
    let resilience = named("inventory-query")
        .circuit_breaker_with(|cb| cb.record_response(|r: &Response| r.status().is_server_error()))
        .time_limiter()
        .bulkhead()
        .build();
    Router::new()
        .route("/layered/inventory/{sku}", get(unprotected_query))
        .route_layer(
            ServiceBuilder::new()
                .layer(IntoResponseLayer)
                .layer(resilience),
        )
        .with_state(inventory)
}

/// The stock from the inventory itself: the layers around the route protect it.
async fn unprotected_query(
    State(inventory): State<Inventory>,
    Path(sku): Path<String>,
    Query(ModeParam { mode }): Query<ModeParam>,
) -> Response {
    match inventory.client.query(&sku, mode).await {
        Ok(view) => Json(view).into_response(),
        Err(e) => failure(&e),
    }
}

#[derive(Debug, Default, Deserialize)]
struct ModeParam {
    #[serde(default)]
    mode: Mode,
}

async fn query(
    State(inventory): State<Inventory>,
    Path(sku): Path<String>,
    Query(ModeParam { mode }): Query<ModeParam>,
) -> Response {
    match inventory.gateway.query(&sku, mode).await {
        Ok(view) => Json(view).into_response(),
        Err(e) => failure(&e),
    }
}

async fn hedged_query(
    State(inventory): State<Inventory>,
    Path(sku): Path<String>,
    Query(ModeParam { mode }): Query<ModeParam>,
) -> Response {
    match inventory.gateway.read(&sku, mode).await {
        Ok(view) => Json(view).into_response(),
        Err(e) => failure(&e),
    }
}

async fn native_query(
    State(inventory): State<Inventory>,
    Path(sku): Path<String>,
    Query(ModeParam { mode }): Query<ModeParam>,
) -> Response {
    match inventory.native.query(&sku, mode).await {
        Ok(view) => Json(view).into_response(),
        Err(e) => failure(&e),
    }
}

/// The Java service's controller over its `InventoryGateway`: always an answer,
/// degraded when the inventory could not give one.
async fn cloud_query(
    State(inventory): State<Inventory>,
    Path(sku): Path<String>,
    Query(ModeParam { mode }): Query<ModeParam>,
) -> Json<InventoryView> {
    Json(inventory.cloud.query(&sku, mode).await)
}

async fn attempts(State(inventory): State<Inventory>) -> Json<u32> {
    Json(inventory.client.attempts())
}

/// The answer to a write whose outcome the service does not know.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UnknownReservation {
    pub(crate) key: String,
    pub(crate) sku_id: String,
    /// Always `UNKNOWN`: the reservation may or may not exist.
    pub(crate) status: String,
    pub(crate) degraded: bool,
    pub(crate) reason: String,
    /// Where to learn the fact.
    pub(crate) fact: String,
}

async fn reserve(
    State(inventory): State<Inventory>,
    Path(sku): Path<String>,
    Query(ModeParam { mode }): Query<ModeParam>,
    headers: HeaderMap,
    Json(body): Json<ReserveBody>,
) -> Response {
    let Some(key) = headers
        .get(IDEMPOTENCY_KEY)
        .and_then(|v| v.to_str().ok())
        .filter(|k| !k.is_empty() && k.len() <= 128)
    else {
        return problem(
            StatusCode::BAD_REQUEST,
            "a reservation needs an `Idempotency-Key` header (1 to 128 visible characters), so that repeating it cannot reserve twice",
        );
    };
    if body.quantity == 0 {
        return problem(StatusCode::BAD_REQUEST, "`quantity` must be at least 1");
    }
    match inventory
        .reservations
        .reserve(key, &sku, body.quantity, mode)
        .await
    {
        Ok(reservation) => {
            let status = match reservation.status {
                ReservationStatus::Confirmed => StatusCode::OK,
                ReservationStatus::Pending => StatusCode::ACCEPTED,
                ReservationStatus::OutOfStock => StatusCode::CONFLICT,
            };
            (status, Json(reservation)).into_response()
        }
        Err(e @ (InventoryError::InvalidSku | InventoryError::KeyReused)) => failure(&e),
        Err(e) => {
            let status = match &e {
                InventoryError::Rejected(resil::Rejection::Timeout(_)) => {
                    StatusCode::GATEWAY_TIMEOUT
                }
                _ => StatusCode::SERVICE_UNAVAILABLE,
            };
            let answer = UnknownReservation {
                key: key.to_owned(),
                sku_id: sku,
                status: "UNKNOWN".to_owned(),
                degraded: true,
                reason: e.reason().to_owned(),
                fact: format!("/reservations/{key}"),
            };
            (status, Json(answer)).into_response()
        }
    }
}

async fn reservation(State(inventory): State<Inventory>, Path(key): Path<String>) -> Response {
    match inventory.reservations.fact(&key) {
        Some(reservation) => Json(reservation).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({ "key": key, "status": "NOT_FOUND" })),
        )
            .into_response(),
    }
}

/// The answer to an error the gateways do not degrade: the caller's mistakes.
fn failure(e: &InventoryError) -> Response {
    match e {
        InventoryError::InvalidSku => problem(
            StatusCode::BAD_REQUEST,
            "not a SKU: expected `SKU-` followed by digits",
        ),
        InventoryError::KeyReused => problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            "this Idempotency-Key was used for another reservation",
        ),
        other => problem(StatusCode::SERVICE_UNAVAILABLE, other.reason()),
    }
}

fn problem(status: StatusCode, message: &str) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}
