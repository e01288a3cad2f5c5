//! What the Prometheus export costs a call: a breaker's successful call
//! allocates the same with the call-duration buckets as without, and its
//! refusals count into every counter without allocating.

use resil::actuator::metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use resil::config::Resilience;

#[global_allocator]
static ALLOC: resil_testkit::CountingAlloc = resil_testkit::CountingAlloc;

/// Buckets are the exporter's choice when it renders: a breaker's
/// successful call allocates the same with them as without them (its
/// duration goes into the exporter's sample blocks either way), and
/// nothing of its own per call.
#[test]
fn buckets_cost_a_successful_call_nothing() {
    const CALLS: u64 = 2_000;
    let allocations = |builder: PrometheusBuilder| -> u64 {
        let recorder = builder.build_recorder();
        metrics::with_local_recorder(&recorder, || {
            let loaded = Resilience::builder()
                .file_contents("resilience.toml", "[circuitbreaker.instances.timed]\n")
                .env_vars(Vec::<(String, String)>::new())
                .load()
                .unwrap();
            resil::metrics::bind(loaded.registries());
            let cb = loaded
                .registries()
                .circuit_breakers()
                .circuit_breaker("timed");
            let calls = || {
                for _ in 0..CALLS {
                    cb.call(|| Ok::<_, ()>(1)).unwrap();
                }
            };
            calls(); // the handles taken, the first blocks filled
            resil_testkit::allocations_during(calls).1
        })
    };
    let without = allocations(PrometheusBuilder::new());
    let with = allocations(
        PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full(resil::metrics::CIRCUIT_BREAKER_CALLS.to_owned()),
                resil::metrics::CALL_DURATION_BUCKETS,
            )
            .unwrap(),
    );
    eprintln!("allocations in {CALLS} calls: {without} without buckets, {with} with");
    assert_eq!(with, without, "the buckets cost allocations");
    assert!(
        with < CALLS / 16,
        "{with} allocations in {CALLS} calls: not the exporter's blocks alone"
    );
}

/// An open breaker's refusals count into both not-permitted counters (and
/// the rejections) without allocating.
#[test]
fn refusals_count_in_every_counter_without_allocating() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        let loaded = Resilience::builder()
            .file_contents("resilience.toml", "[circuitbreaker.instances.refusing]\n")
            .env_vars(Vec::<(String, String)>::new())
            .load()
            .unwrap();
        resil::metrics::bind(loaded.registries());
        let cb = loaded
            .registries()
            .circuit_breakers()
            .circuit_breaker("refusing");
        cb.transition_to_open_state().unwrap();
        assert!(cb.call(|| Ok::<_, ()>(1)).is_err()); // the handles taken
        let ((), n) = resil_testkit::allocations_during(|| {
            for _ in 0..999 {
                assert!(cb.call(|| Ok::<_, ()>(1)).is_err());
            }
        });
        assert_eq!(n, 0, "allocations in 999 refusals");
    });
    let text = handle.render();
    for line in [
        r#"resilience4j_circuitbreaker_not_permitted_calls_total{kind="not_permitted",name="refusing"} 1000"#,
        r#"resilience4j_circuitbreaker_calls_total{kind="not_permitted",name="refusing"} 1000"#,
        r#"resil_rejections_total{kind="circuit_breaker",name="refusing"} 1000"#,
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
    }
}
