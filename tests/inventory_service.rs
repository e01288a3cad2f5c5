//! The inventory service end to end: started as its `main` starts it, on an
//! ephemeral loopback port, with the repository's resilience.toml, driven
//! over HTTP/1.1 by a plain TCP client.

#[allow(dead_code)] // a test binary uses only part of the example
#[path = "../examples/inventory-service/app/mod.rs"]
mod app;

use std::net::SocketAddr;
use std::sync::Arc;

use resil::actuator::metrics_exporter_prometheus::PrometheusBuilder;
use resil::config::Resilience;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::app::Inventory;
use crate::app::downstream::InventoryHttpClient;

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/resilience.toml");

/// One answer: the status code, the headers (lower-case names) and the body.
#[derive(Debug)]
struct Answer {
    /// The client's own address (the server's peer).
    client: SocketAddr,
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one request with `Connection: close` and reads the whole answer.
async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Answer {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    let body = body.unwrap_or("");
    if !body.is_empty() {
        request.push_str("Content-Type: application/json\r\n");
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    parse(
        stream.local_addr().unwrap(),
        &String::from_utf8(raw).unwrap(),
    )
}

fn parse(client: SocketAddr, raw: &str) -> Answer {
    let (head, body) = raw.split_once("\r\n\r\n").expect("a complete answer");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_ascii_lowercase(), v.trim().to_owned())
        })
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Answer {
        client,
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return body;
        }
        body.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

async fn get(addr: SocketAddr, path: &str) -> Answer {
    http(addr, "GET", path, &[], None).await
}

const TOKEN: &str = "e2e-operator-token";

/// Starts the service as `main` does, on an ephemeral loopback port.
async fn start() -> SocketAddr {
    let prometheus = PrometheusBuilder::new().install_recorder().unwrap();
    Resilience::builder()
        .file(CONFIG)
        .env_vars(Vec::<(String, String)>::new())
        .init()
        .unwrap();
    let inventory = Inventory::new(Arc::new(InventoryHttpClient::new()), resil::registries());
    let actuator = app::actuator(prometheus, Some(TOKEN.to_owned()));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { app::serve(listener, inventory, &actuator).await.unwrap() });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_degrade_open_the_breaker_and_the_actuator_shows_it() {
    let addr = start().await;

    let ok = get(addr, "/inventory/SKU-1001?mode=success").await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.header("content-type"), Some("application/json"));
    assert_eq!(
        ok.json(),
        json!({ "skuId": "SKU-1001", "status": "AVAILABLE", "degraded": false, "reason": "CONFIRMED" })
    );

    // 1 success and 9 failures: the 10th call completes the minimum and opens
    for _ in 0..9 {
        let failed = get(addr, "/inventory/SKU-1001?mode=fail").await;
        assert_eq!(failed.status, 200, "a degraded answer is still an answer");
        assert_eq!(
            failed.json(),
            json!({ "skuId": "SKU-1001", "status": "UNKNOWN", "degraded": true, "reason": "Unavailable" })
        );
    }
    let refused = get(addr, "/inventory/SKU-1001?mode=success").await;
    assert_eq!(
        refused.json(),
        json!({ "skuId": "SKU-1001", "status": "UNKNOWN", "degraded": true, "reason": "CallNotPermitted" })
    );
    // the refused call never reached the inventory
    assert_eq!(get(addr, "/inventory/attempts").await.json(), json!(10));

    let breakers = get(addr, "/actuator/circuitbreakers").await;
    assert_eq!(breakers.status, 200);
    assert_eq!(
        breakers.json(),
        json!({ "circuitBreakers": { "inventory-query": {
            "bufferedCalls": 10, "failedCalls": 9, "failureRate": "90.0%",
            "failureRateThreshold": "50.0%", "notPermittedCalls": 1,
            "slowCallRate": "0.0%", "slowCallRateThreshold": "60.0%",
            "slowCalls": 0, "slowFailedCalls": 0, "state": "OPEN"
        } } })
    );
    let prometheus = get(addr, "/actuator/prometheus").await;
    assert_eq!(prometheus.status, 200);
    let line = |l: &str| prometheus.body.lines().any(|x| x == l);
    assert!(
        line(r#"resilience4j_circuitbreaker_state{name="inventory-query",state="open"} 1"#),
        "{}",
        prometheus.body
    );
    assert!(line(
        r#"resilience4j_circuitbreaker_state{name="inventory-query",state="closed"} 0"#
    ));
    assert!(line(
        r#"resilience4j_circuitbreaker_not_permitted_calls_total{kind="not_permitted",name="inventory-query"} 1"#
    ));
    // Resilience4j 1.x's names, which its official Grafana board queries
    assert!(line(
        r#"resilience4j_circuitbreaker_calls_total{kind="not_permitted",name="inventory-query"} 1"#
    ));
    assert!(line(
        r#"resilience4j_circuitbreaker_max_buffered_calls{name="inventory-query"} 20"#
    ));
    // the thresholds, to plot the rates against
    assert!(line(
        r#"resil_circuitbreaker_failure_rate_threshold{name="inventory-query"} 50"#
    ));
    assert!(line(
        r#"resil_circuitbreaker_slow_call_rate_threshold{name="inventory-query"} 60"#
    ));
    let events = get(addr, "/actuator/circuitbreakerevents/inventory-query")
        .await
        .json();
    let transitions: Vec<&Value> = events["circuitBreakerEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.get("stateTransition"))
        .collect();
    assert_eq!(transitions, [&json!("CLOSED_TO_OPEN")]);

    // state changes: refused without the operator's token, done with it
    let close = r#"{"updateState":"CLOSE"}"#;
    let path = "/actuator/circuitbreakers/inventory-query";
    let anonymous = http(addr, "POST", path, &[], Some(close)).await;
    assert_eq!(anonymous.status, 401);
    let wrong = http(
        addr,
        "POST",
        path,
        &[("Authorization", "Bearer guess")],
        Some(close),
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert_eq!(
        get(addr, "/actuator/circuitbreakers").await.json()["circuitBreakers"]["inventory-query"]["state"],
        json!("OPEN")
    );
    let bearer = format!("Bearer {TOKEN}");
    let operator = http(
        addr,
        "POST",
        path,
        &[("Authorization", &bearer)],
        Some(close),
    )
    .await;
    assert_eq!(operator.status, 200);
    assert_eq!(operator.json()["currentState"], json!("CLOSED"));
    // the audit log names the operator's address: the service is served
    // with each connection's peer address
    let audit = http(
        addr,
        "GET",
        "/actuator/resilienceaudit",
        &[("Authorization", &bearer)],
        None,
    )
    .await;
    assert_eq!(audit.status, 200, "{}", audit.body);
    let log = audit.json();
    let close_entry = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|e| e["path"] == path && e["status"] == 200)
        .unwrap_or_else(|| panic!("no audit entry of the close: {log}"));
    assert_eq!(
        close_entry["peer"],
        json!(operator.client.to_string()),
        "{log}"
    );
    assert_eq!(
        get(addr, "/inventory/SKU-1001?mode=success").await.json()["status"],
        json!("AVAILABLE")
    );

    // a write without its idempotency key is refused, and nothing is reserved
    let keyless = http(
        addr,
        "POST",
        "/inventory/SKU-1001/reservations",
        &[],
        Some(r#"{"quantity":1}"#),
    )
    .await;
    assert_eq!(keyless.status, 400);
    let reserved = http(
        addr,
        "POST",
        "/inventory/SKU-1001/reservations",
        &[("Idempotency-Key", "e2e-1")],
        Some(r#"{"quantity":1}"#),
    )
    .await;
    assert_eq!(reserved.status, 200);
    assert_eq!(
        reserved.json(),
        json!({ "key": "e2e-1", "skuId": "SKU-1001", "quantity": 1, "status": "CONFIRMED", "requests": 1 })
    );
    assert_eq!(
        get(addr, "/reservations/e2e-1").await.json(),
        reserved.json()
    );

    // the layer form: the same instances around the whole route
    let layered = get(addr, "/layered/inventory/SKU-1001?mode=success").await;
    assert_eq!(layered.status, 200);
    assert_eq!(layered.json(), ok.json());
    let breaker = |answer: Value| answer["circuitBreakers"]["inventory-query"].clone();
    let before = breaker(get(addr, "/actuator/circuitbreakers").await.json());
    // a 5xx answer is the breaker's failure, a late one its timeout (504)
    let failed = get(addr, "/layered/inventory/SKU-1001?mode=fail").await;
    assert_eq!(failed.status, 503);
    let late = get(addr, "/layered/inventory/SKU-1001?mode=slow").await;
    assert_eq!(late.status, 504);
    assert!(late.body.contains("inventory-query"), "{}", late.body);
    let after = breaker(get(addr, "/actuator/circuitbreakers").await.json());
    assert_eq!(
        after["failedCalls"].as_u64().unwrap(),
        before["failedCalls"].as_u64().unwrap() + 2,
        "{before} then {after}"
    );

    // the hedged read: a fast answer goes out once; a sluggish one (600 ms,
    // past the 150 ms delay) gets a second query beside it
    let attempts = get(addr, "/inventory/attempts").await.json();
    let hedged = get(addr, "/hedged/inventory/SKU-1001?mode=success").await;
    assert_eq!(hedged.json(), ok.json());
    let sluggish = get(addr, "/hedged/inventory/SKU-1001?mode=sluggish").await;
    assert_eq!(sluggish.json()["status"], json!("AVAILABLE"));
    assert_eq!(
        get(addr, "/inventory/attempts").await.json(),
        json!(attempts.as_u64().unwrap() + 3)
    );
    assert_eq!(
        get(addr, "/actuator/hedges").await.json(),
        json!({"hedges": ["inventory-read"]})
    );
    let doc = get(addr, "/actuator/resilience").await.json();
    let read = &doc["instances"]["hedge"]["inventory-read"];
    assert_eq!(
        read["usedBy"],
        json!(["inventory_service::app::gateway::read"]),
        "{read}"
    );
    assert_eq!(read["settings"]["delay-percentile"], json!("90"));
    // the query's deadline, outermost in its stack
    let deadline = &doc["instances"]["deadline"]["inventory-query"];
    assert_eq!(deadline["settings"]["timeout"], json!("2s"), "{deadline}");
    assert_eq!(deadline["state"]["timeout"], json!("2s"), "{deadline}");
    assert_eq!(
        deadline["usedBy"],
        json!(["inventory_service::app::gateway::query"]),
        "{deadline}"
    );
    let query = doc["callSites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["function"] == json!("inventory_service::app::gateway::query"))
        .expect("the query's call site");
    assert_eq!(query["stack"][0]["aspect"], json!("deadline"), "{query}");
    assert_eq!(
        get(addr, "/actuator/deadlines").await.json(),
        json!({"deadlines": ["inventory-query"]})
    );
    assert_eq!(read["state"]["numberOfPrimaryWins"], json!(2), "{read}");
    assert_eq!(read["state"]["numberOfHedgedAttempts"], json!(1), "{read}");
}
