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

#[resil::circuit_breaker(name = "lazy-query")]
fn query(fail: bool) -> Result<u32, QueryError> {
    if fail {
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
        assert_eq!(query(false).unwrap(), 7);
        assert!(query(true).is_err());
        resil::metrics::refresh();
    });
    let text = handle.render();
    for line in [
        r#"resilience4j_circuitbreaker_calls_seconds_count{kind="successful",name="lazy-query"} 1"#,
        r#"resilience4j_circuitbreaker_calls_seconds_count{kind="failed",name="lazy-query"} 1"#,
        r#"resilience4j_circuitbreaker_buffered_calls{kind="failed",name="lazy-query"} 1"#,
        r#"resilience4j_circuitbreaker_state{name="lazy-query",state="closed"} 1"#,
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing `{line}` in\n{text}"
        );
    }
    assert!(!resil::config::is_initialized());
}
