//! The inventory service's `GET /cloud/inventory/{sku}`: the Java service's
//! `InventoryGateway` through the Spring Cloud facade, its
//! router driven in-process on paused tokio time with the repository's
//! resilience.toml.

#[allow(dead_code)] // a test binary uses only part of the example
#[path = "../examples/inventory-service/app/mod.rs"]
mod app;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use resil::actuator::metrics_exporter_prometheus::PrometheusBuilder;
use resil::circuit_breaker::State;
use resil::clock::TokioClock;
use resil::config::Resilience;
use serde_json::Value;
use tower::ServiceExt as _;

use crate::app::Inventory;
use crate::app::downstream::InventoryHttpClient;

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/resilience.toml");

async fn get(router: &Router, path: &str) -> (StatusCode, Value) {
    let response = router
        .clone()
        .oneshot(Request::get(path).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test(start_paused = true)]
async fn the_cloud_route_answers_and_degrades_as_the_java_gateway() {
    let prometheus = PrometheusBuilder::new().install_recorder().unwrap();
    let report = Resilience::builder()
        .file(CONFIG)
        .env_vars(Vec::<(String, String)>::new())
        .clock(TokioClock::new())
        .init()
        .unwrap();
    // init's report shows the facade's settings
    assert!(
        report
            .to_string()
            .contains("cloud (Spring Cloud CircuitBreaker's facade)")
    );
    assert_eq!(report.cloud().unwrap().executor_max_threads(), 32);
    let client = Arc::new(InventoryHttpClient::new());
    let actuator = app::actuator(prometheus, None);
    let router = app::service(
        Inventory::new(client.clone(), resil::registries()),
        &actuator,
    );
    let sku = "/cloud/inventory/SKU-1001";

    let (status, ok) = get(&router, &format!("{sku}?mode=success")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ok["skuId"], "SKU-1001");
    assert_eq!(ok["degraded"], false);
    assert_eq!(ok["reason"], "CONFIRMED");

    // 200 with a degraded answer: do not look at the status only
    let (status, failed) = get(&router, &format!("{sku}?mode=fail")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (&failed["status"], &failed["degraded"], &failed["reason"]),
        (
            &Value::from("UNKNOWN"),
            &Value::from(true),
            &Value::from("Unavailable")
        )
    );
    let (_, slow) = get(&router, &format!("{sku}?mode=slow")).await;
    assert_eq!(slow["reason"], "Timeout");
    // the caller's mistake degrades too (Spring Cloud's fallback takes every
    // Throwable), and the breaker ignores it (`ignore-errors`)
    let breaker = resil::registries()
        .circuit_breakers()
        .find("inventory-query")
        .unwrap();
    let failed_before = breaker.metrics().number_of_failed_calls();
    let (_, invalid) = get(&router, "/cloud/inventory/nope").await;
    assert_eq!(invalid["reason"], "InvalidSku");
    assert_eq!(breaker.metrics().number_of_failed_calls(), failed_before);

    // the id's instances: the breaker and the time limiter of inventory-query
    // (800 ms); the group's bulkhead, configs.inventory-service, semaphore
    let bulkhead = resil::registries()
        .bulkheads()
        .find("inventory-service")
        .expect("the group's bulkhead");
    assert_eq!(bulkhead.config().max_concurrent_calls(), 20);
    assert_eq!(bulkhead.tags()["group"], "inventory-service");
    let tl = resil::registries()
        .time_limiters()
        .find("inventory-query")
        .unwrap();
    assert_eq!(tl.metrics().number_of_timeout_calls(), 1);

    // the factory's instances are the actuator's like every other
    let (_, doc) = get(&router, "/actuator/resilience").await;
    let group = &doc["instances"]["bulkhead"]["inventory-service"];
    assert_eq!(group["tags"]["group"], "inventory-service", "{doc:#}");
    assert_eq!(doc["cloud"]["enable-semaphore-default-bulkhead"], "true");
    let (_, bulkheads) = get(&router, "/actuator/bulkheads").await;
    assert!(
        bulkheads.to_string().contains("inventory-service"),
        "{bulkheads}"
    );

    // failures open the shared breaker: the inventory is no longer asked
    for _ in 0..10 {
        get(&router, &format!("{sku}?mode=fail")).await;
    }
    assert_eq!(breaker.state(), State::Open);
    let attempts = client.attempts();
    let (_, open) = get(&router, &format!("{sku}?mode=success")).await;
    assert_eq!(open["reason"], "CallNotPermitted");
    assert_eq!(client.attempts(), attempts);

    // and after the open state's 10 s, the probes go through
    tokio::time::advance(Duration::from_secs(11)).await;
    let (_, probe) = get(&router, &format!("{sku}?mode=success")).await;
    assert_eq!(probe["degraded"], false);
}
