//! The global registries are observed from `init` on, without any `bind`,
//! and the actuator shows them (with `init`'s report) by default.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use metrics_exporter_prometheus::PrometheusBuilder;
use resil::actuator::Actuator;
use serde_json::{Value, json};
use tower::ServiceExt as _;

#[derive(Debug)]
enum QueryError {
    Refused,
    Rejected,
}

impl From<resil::Rejection> for QueryError {
    fn from(_: resil::Rejection) -> Self {
        QueryError::Rejected
    }
}

#[resil::circuit_breaker(name = "global-query")]
fn query(fail: bool) -> Result<u32, QueryError> {
    if fail {
        Err(QueryError::Refused)
    } else {
        Ok(7)
    }
}

#[tokio::test]
async fn init_observes_the_global_registries() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let _recording = metrics::set_default_local_recorder(&recorder);
    resil::config::Resilience::builder()
        .file_contents(
            "resilience.toml",
            "[circuitbreaker.instances.global-query]\nregister-health-indicator = true\n",
        )
        .env_vars(Vec::<(String, String)>::new())
        .init()
        .unwrap();
    // the actuator is built after init: it finds the global registries and report
    let router = Actuator::builder().prometheus(handle).build().router();
    for _ in 0..3 {
        query(false).unwrap();
    }
    assert!(query(true).is_err());

    let get = |uri: &'static str| {
        let router = router.clone();
        async move {
            let response = router
                .oneshot(Request::get(uri).body(Body::empty()).unwrap())
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap()
        }
    };
    let text = String::from_utf8(get("/actuator/prometheus").await.to_vec()).unwrap();
    for line in [
        r#"resilience4j_circuitbreaker_calls_seconds_count{kind="successful",name="global-query"} 3"#,
        r#"resilience4j_circuitbreaker_calls_seconds_count{kind="failed",name="global-query"} 1"#,
        r#"resilience4j_circuitbreaker_state{name="global-query",state="closed"} 1"#,
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing `{line}` in\n{text}"
        );
    }

    let health: Value = serde_json::from_slice(&get("/actuator/health").await).unwrap();
    assert_eq!(
        health["components"]["circuitBreakers"]["details"]["global-query"]["status"],
        json!("UP")
    );
    let doc: Value = serde_json::from_slice(&get("/actuator/resilience").await).unwrap();
    let layer = &doc["callSites"][0]["stack"][0];
    assert_eq!(layer["name"], "global-query");
    assert_eq!(layer["configured"], true);
    assert_eq!(layer["chain"], json!(["instances.global-query"]));
    assert_eq!(layer["state"]["bufferedCalls"], 4);
    assert_eq!(doc["callSites"][0]["function"], "actuator_global::query");
}
