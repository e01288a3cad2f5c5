//! The hedge at the actuator: its name list, its events, its state and
//! settings in `/actuator/resilience`, and its meters in the Prometheus
//! text. The registries run on a `ManualClock`, on which a hedge's timer is
//! due at once: a primary that is still pending at its first poll is
//! hedged, so the calls below are exact without sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};
use resil::actuator::Actuator;
use resil::clock::ManualClock;
use resil::config::{Registries, Report, Resilience};
use serde_json::{Value, json};
use tower::ServiceExt as _;

const CONFIG: &str = r#"
[hedge.instances.inventory-read]
delay = "40ms"
max-hedged-attempts = 2

[hedge.instances.price-read]
delay-percentile = 90
"#;

struct Fixture {
    registries: Arc<Registries>,
    report: Report,
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
}

fn fixture() -> Fixture {
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", CONFIG)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .clock(ManualClock::new())
        .load()
        .unwrap();
    let (registries, report) = loaded.into_parts();
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    Fixture {
        registries: Arc::new(registries),
        report,
        recorder,
        handle,
    }
}

impl Fixture {
    fn router(&self) -> Router {
        Actuator::builder()
            .registries(self.registries.clone())
            .report(self.report.clone())
            .prometheus(self.handle.clone())
            .build()
            .router()
    }
}

async fn get_text(router: &Router, uri: &str) -> (StatusCode, String) {
    let request = Request::get(uri).body(Body::empty()).unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn get(router: &Router, uri: &str) -> (StatusCode, Value) {
    let (status, text) = get_text(router, uri).await;
    (status, serde_json::from_str(&text).unwrap())
}

/// A future that is pending at its first poll and ready at its second.
async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await
}

/// Three calls: one whose primary answers at once (no events), one whose
/// primary is pending (hedged once; the primary wins, having been polled
/// first), and one whose attempts all fail (the second and third hedged at
/// once after the failures).
async fn three_calls(f: &Fixture) {
    let hedge = f.registries.hedges().hedge("inventory-read");
    let ready = hedge
        .call_async(|| async { Ok::<_, std::io::Error>(1) })
        .await;
    assert_eq!(ready.unwrap(), 1);
    let slow = hedge
        .call_async(|| async {
            yield_once().await;
            Ok::<_, std::io::Error>(2)
        })
        .await;
    assert_eq!(slow.unwrap(), 2);
    let attempts = AtomicU32::new(0);
    let failed = hedge
        .call_async(|| {
            attempts.fetch_add(1, Ordering::SeqCst);
            async { Err::<u32, _>(std::io::Error::other("down")) }
        })
        .await;
    assert!(failed.is_err());
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn names_events_and_state_of_the_hedges() {
    let f = fixture();
    let router = f.router();
    assert_eq!(
        get(&router, "/actuator/hedges").await,
        (
            StatusCode::OK,
            json!({"hedges": ["inventory-read", "price-read"]})
        )
    );

    three_calls(&f).await;
    let (status, body) = get(&router, "/actuator/hedgeevents/inventory-read").await;
    assert_eq!(status, StatusCode::OK);
    let types: Vec<&str> = body["hedgeEvents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["hedgeName"], "inventory-read");
            e["type"].as_str().unwrap()
        })
        .collect();
    assert_eq!(types, ["HEDGED", "SUCCESS", "HEDGED", "HEDGED", "ERROR"]);
    let events = body["hedgeEvents"].as_array().unwrap();
    assert_eq!(events[0]["attempt"], 1);
    assert_eq!(events[0]["delay"], "40ms");
    assert_eq!(events[1]["winner"], 0);
    assert_eq!(events[1]["numberOfAttempts"], 2);
    // started by a failure: no delay
    assert_eq!(events[2]["delay"], Value::Null);
    assert_eq!(events[4]["numberOfAttempts"], 3);

    let (_, body) = get(&router, "/actuator/resilience").await;
    let read = &body["instances"]["hedge"]["inventory-read"];
    assert_eq!(
        read["state"],
        json!({
            "numberOfPrimaryWins": 2,
            "numberOfHedgeWins": 0,
            "numberOfFailedCalls": 1,
            "numberOfHedgedAttempts": 3,
            "currentDelay": "40ms",
        })
    );
    assert_eq!(read["settings"]["delay"], "40ms");
    assert_eq!(read["settings"]["max-hedged-attempts"], "2");
    let price = &body["instances"]["hedge"]["price-read"];
    assert_eq!(price["settings"]["delay-percentile"], "90");
    assert_eq!(
        price["state"]["currentDelay"], "100ms",
        "the default delay until enough latencies"
    );
}

#[tokio::test]
async fn prometheus_shows_the_hedge_meters() {
    let f = fixture();
    let _recording = metrics::set_default_local_recorder(&f.recorder);
    let router = f.router();
    three_calls(&f).await;
    let (status, text) = get_text(&router, "/actuator/prometheus").await;
    assert_eq!(status, StatusCode::OK);
    for line in [
        r#"resil_hedge_calls_total{name="inventory-read",winner="primary"} 2"#,
        r#"resil_hedge_calls_total{name="inventory-read",winner="hedge"} 0"#,
        r#"resil_hedge_calls_total{name="inventory-read",winner="none"} 1"#,
        r#"resil_hedge_attempts_total{name="inventory-read"} 3"#,
        r#"resil_hedge_attempts_total{name="price-read"} 0"#,
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing `{line}` in\n{text}"
        );
    }
}

/// A hedge that spends a retry budget shows it in its state, and its
/// denials among its events.
#[tokio::test]
async fn a_hedge_shows_the_budget_it_spends_and_its_denials() {
    let loaded = Resilience::builder()
        .file_contents(
            "resilience.toml",
            r#"
[retrybudget.instances.reads]
ratio = 0
min-retries-per-second = 0

[hedge.instances.inventory-read]
delay = "40ms"
budget = "reads"
"#,
        )
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .clock(ManualClock::new())
        .load()
        .unwrap();
    let (registries, report) = loaded.into_parts();
    let registries = Arc::new(registries);
    let router = Actuator::builder()
        .registries(registries.clone())
        .report(report)
        .build()
        .router();
    let hedge = registries.hedges().hedge("inventory-read");
    // pending at its first poll: the hedge would start a second attempt,
    // and the empty budget denies it; the primary answers
    let answer = hedge
        .call_async(|| async {
            yield_once().await;
            Ok::<_, std::io::Error>(7)
        })
        .await;
    assert_eq!(answer.unwrap(), 7);

    let (_, body) = get(&router, "/actuator/hedgeevents/inventory-read").await;
    let events = body["hedgeEvents"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{body}");
    assert_eq!(events[0]["type"], "BUDGET_EXHAUSTED");
    assert_eq!(events[0]["attempt"], 1);

    let (_, body) = get(&router, "/actuator/resilience").await;
    let state = &body["instances"]["hedge"]["inventory-read"]["state"];
    assert_eq!(
        state["retryBudget"],
        json!({"name": "reads", "balance": 0, "denied": 1}),
        "{body}"
    );
    assert_eq!(state["numberOfPrimaryWins"], 1);
    assert_eq!(state["numberOfHedgedAttempts"], 0);
}
