//! A Spring Boot inventory service guarded by Resilience4j, ported to resil.
//!
//! ```text
//! cargo run --example inventory-service
//! curl "http://127.0.0.1:8080/inventory/SKU-1001?mode=success"
//! ```
//!
//! Reads `./resilience.toml` (the Java service's `application.yml`, translated), listens
//! on `127.0.0.1:8080` or on the port in `PORT`, and serves resil's actuator
//! beside the inventory's routes; its state changes need
//! `Authorization: Bearer $ACTUATOR_TOKEN` and are off without that variable.
//! Edits of `resilience.toml` apply while it runs: on `POST /actuator/refresh`
//! (a state change), or as soon as the file is saved with `WATCH_CONFIG=1`
//! (`resil::watch()`). The README walks through the checks to run against
//! it, with the answers this service gives. `RESIL_RESIL__RECORD=calls.jsonl`
//! records its calls for `resil replay` (docs/replay.md walks a drill). A
//! drill fails the inventory without a code change, for ten minutes at
//! most, and ends it:
//!
//! ```text
//! curl -X POST -H "Authorization: Bearer $ACTUATOR_TOKEN" -H 'Content-Type: application/json' \
//!     -d '{"abortPercent":100,"for":"10m"}' localhost:8080/actuator/faults/inventory-query
//! curl -X DELETE -H "Authorization: Bearer $ACTUATOR_TOKEN" localhost:8080/actuator/faults/inventory-query
//! ```

mod app;

use std::error::Error;
use std::io::IsTerminal as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use resil::actuator::metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

use crate::app::Inventory;
use crate::app::downstream::InventoryHttpClient;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // resil logs its start-up summary and warnings with target `resil`
    tracing_subscriber::fmt()
        .with_ansi(std::io::stdout().is_terminal())
        .init();
    // the recorder first, so that the meters see every event from init on;
    // the breaker's call durations with buckets (Micrometer's
    // `percentiles-histogram`), for the dashboards' percentile panels
    let prometheus = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(resil::metrics::CIRCUIT_BREAKER_CALLS.to_owned()),
            resil::metrics::CALL_DURATION_BUCKETS,
        )?
        .install_recorder()?;
    let upkeep = prometheus.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });
    let report = resil::init()?;
    println!("{report}");
    // With WATCH_CONFIG=1, a saved edit of resilience.toml applies at once
    // (all or nothing: a refused file is logged and the settings in force
    // stay); kept until main returns, dropping it would stop the watch.
    let _watcher = match std::env::var("WATCH_CONFIG").as_deref() {
        Ok("1" | "true") => {
            let watcher = resil::watch()?;
            println!("reloading {} when it changes", watcher.file().display());
            Some(watcher)
        }
        _ => None,
    };

    let port = match std::env::var("PORT") {
        Ok(port) => port
            .parse::<u16>()
            .map_err(|e| format!("PORT must be a port number, got `{port}`: {e}"))?,
        Err(_) => 8080,
    };
    let inventory = Inventory::new(Arc::new(InventoryHttpClient::new()), resil::registries());
    // state changes (force open, close, ...) only for operators holding the token
    let token = std::env::var("ACTUATOR_TOKEN")
        .ok()
        .filter(|t| !t.is_empty());
    if token.is_none() {
        println!("ACTUATOR_TOKEN is not set: the actuator's state changes are off");
    }
    let actuator = app::actuator(prometheus, token);
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
    println!(
        "inventory-service listening on http://{}",
        listener.local_addr()?
    );
    // with each connection's peer address, for the actuator's audit log
    app::serve(listener, inventory, &actuator).await?;
    Ok(())
}
