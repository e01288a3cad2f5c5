//! RUNBOOK.md names only meters that exist: the example service, driven
//! in-process through each incident's traffic, exports every
//! `resilience4j_*` meter the runbook names at `/actuator/prometheus`.

#[allow(dead_code)] // a test binary uses only part of the example
#[path = "../examples/inventory-service/app/mod.rs"]
mod app;

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use resil::actuator::metrics_exporter_prometheus::PrometheusBuilder;
use resil::config::Resilience;
use tower::ServiceExt;

use crate::app::Inventory;
use crate::app::downstream::InventoryHttpClient;

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/resilience.toml");
const RUNBOOK: &str = include_str!("../RUNBOOK.md");

/// The `resilience4j_*` and `resil_*` meter names the runbook writes.
fn named_meters() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for prefix in ["resilience4j_", "resil_"] {
        let mut rest = RUNBOOK;
        while let Some(at) = rest.find(prefix) {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            names.insert(name);
        }
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_meter_the_runbook_names_is_exported_after_traffic() {
    let prometheus = PrometheusBuilder::new().install_recorder().unwrap();
    Resilience::builder()
        .file(CONFIG)
        .env_vars(Vec::<(String, String)>::new())
        .init()
        .unwrap();
    // `resil_config_reload_pending` is shown from the start of a watch
    let _watcher = resil::watch().unwrap();
    let inventory = Inventory::new(Arc::new(InventoryHttpClient::new()), resil::registries());
    let actuator = app::actuator(prometheus, None);
    let service = app::service(inventory, &actuator);
    let get = |uri: String| {
        let service = service.clone();
        async move {
            service
                .oneshot(Request::get(uri).body(Body::empty()).unwrap())
                .await
                .unwrap()
        }
    };
    // Each incident's traffic: successes, a refused connection (retried), a
    // timeout, failures until the breaker opens, a refusal, a deadline.
    for mode in ["success", "connect", "slow"] {
        get(format!("/inventory/SKU-1001?mode={mode}")).await;
    }
    // a slow query under a caller's deadline of 5 ms, which the query's
    // `#[deadline]` cuts short (before the breaker opens)
    resil::deadline::scope(
        std::time::Duration::from_millis(5),
        get("/inventory/SKU-1001?mode=slow".to_owned()),
    )
    .await;
    for _ in 0..10 {
        get("/inventory/SKU-1001?mode=fail".to_owned()).await;
    }
    get("/inventory/SKU-1001?mode=success".to_owned()).await;
    // A drill's fault, for the time of one call.
    let abort = resil::fault::FaultConfig::builder()
        .abort_percent(100.0)
        .build()
        .unwrap();
    let faults = resil::fault::Faults::global();
    faults
        .inject(
            "inventory-reserve",
            abort,
            std::time::Duration::from_secs(60),
            &resil::clock::SharedClock::default(),
        )
        .unwrap();
    let reserve = Request::post("/inventory/SKU-1001/reservations")
        .header("content-type", "application/json")
        .header("idempotency-key", "runbook-drill")
        .body(Body::from(r#"{"quantity":1}"#))
        .unwrap();
    service.clone().oneshot(reserve).await.unwrap();
    faults.stop("inventory-reserve");
    assert_eq!(faults.injected_total("inventory-reserve"), (0, 1));

    let response = get("/actuator/prometheus".to_owned()).await;
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let exported: BTreeSet<String> = String::from_utf8(body.to_vec())
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next().map(str::to_owned))
        .collect();
    let named = named_meters();
    assert!(named.len() >= 10, "the runbook names {named:?}");
    for ours in [
        "resil_rejections_total",
        "resil_retry_attempts_total",
        "resil_fallback_calls_total",
    ] {
        assert!(named.contains(ours), "the runbook names {named:?}");
    }
    let missing: Vec<&String> = named.iter().filter(|n| !exported.contains(*n)).collect();
    assert!(
        missing.is_empty(),
        "RUNBOOK.md names meters the example does not export: {missing:?}\nexported: {exported:?}"
    );
}
