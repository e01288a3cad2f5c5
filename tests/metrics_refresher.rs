//! Gauges move without anybody calling `resil::metrics::refresh`: the
//! background refresher sets them for whatever exporter is installed. Its
//! own binary, so that no other test's refresh can set the gauge instead.

use std::time::Duration;

use resil::actuator::metrics_exporter_prometheus::PrometheusBuilder;
use resil::bulkhead::BulkheadConfig;

#[test]
fn gauges_are_fresh_without_a_refresh_call() {
    let handle = PrometheusBuilder::new().install_recorder().unwrap();
    resil::metrics::set_refresh_interval(Some(Duration::from_millis(10)));
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(3)
        .build()
        .unwrap();
    // building the global registries starts the refresher
    let bulkhead = resil::registries()
        .bulkheads()
        .bulkhead_with("fresh", config);
    let _permit = bulkhead.try_acquire_permission().unwrap();
    let series = r#"resilience4j_bulkhead_available_concurrent_calls{name="fresh"} 2"#;
    // real time: the refresher is a thread on the system clock; at most 5 s
    let seen = (0..500).any(|_| {
        if handle.render().lines().any(|l| l == series) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
        false
    });
    assert!(seen, "{}", handle.render());

    // stopped, the gauge keeps its last value while the permit goes back
    // (a refresh already past its check finishes first: wait it out)
    resil::metrics::set_refresh_interval(None);
    std::thread::sleep(Duration::from_millis(300));
    drop(_permit);
    std::thread::sleep(Duration::from_millis(100));
    assert!(handle.render().lines().any(|l| l == series));
}
