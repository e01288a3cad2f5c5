//! Without `init`, the first protected call builds the global registries on
//! the defaults, and they are observed from that moment.

use metrics_exporter_prometheus::PrometheusBuilder;

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

#[resil::retry(name = "lazy-query")]
fn query(attempt: &std::sync::atomic::AtomicU32) -> Result<u32, QueryError> {
    if attempt.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0 {
        Err(QueryError::Refused)
    } else {
        Ok(7)
    }
}

#[test]
fn the_first_call_observes_the_global_registries() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        let attempts = std::sync::atomic::AtomicU32::new(0);
        assert_eq!(query(&attempts).unwrap(), 7);
        resil::metrics::refresh();
    });
    let text = handle.render();
    let line =
        r#"resilience4j_retry_calls_total{kind="successful_with_retry",name="lazy-query"} 1"#;
    assert!(
        text.lines().any(|l| l == line),
        "missing `{line}` in\n{text}"
    );
    assert!(resil::registries().retries().find("lazy-query").is_some());
}
