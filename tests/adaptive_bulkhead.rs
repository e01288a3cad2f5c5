//! The adaptive limits find the capacity of a downstream they know nothing
//! of: a simulated downstream on a virtual clock (`examples/adaptive`)
//! serves `C` calls at once at 10 ms each and slows past `C` in flight;
//! callers arrive at random at twice the largest `C` of the run. Each
//! algorithm starts at half of `C`, with its published defaults and
//! sampling windows of 100 ms, and runs 10 s (100 windows) at each of `C`,
//! `C`/2, `C` again and 2·`C`. Over the second half of each phase its
//! limit averages within [0.8 C, 1.5 C] of that phase's `C`: it settles,
//! falls when `C` halves, and rises when `C` doubles.
//!
//! Gradient2 is shown from below the capacity: it takes the latency it
//! first sees for the downstream's normal one, so a limit that starts in
//! congestion stays there (see the bulkhead's documentation).

#[path = "../examples/adaptive/downstream.rs"]
#[allow(dead_code)]
mod downstream;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use downstream::{Downstream, Load};
use metrics_exporter_prometheus::PrometheusBuilder;
use resil::actuator::Actuator;
use resil::bulkhead::{Bulkhead, BulkheadConfig, BulkheadConfigBuilder, LimitAlgorithm};
use resil::clock::ManualClock;
use resil::config::Resilience;
use tower::ServiceExt as _;

const BASE: Duration = Duration::from_millis(10);
const C: u32 = 40;
const PHASE: Duration = Duration::from_secs(10);
const EVERY: Duration = Duration::from_millis(10);

/// The limit's mean over the second half of each phase, the calls
/// admitted, and the whole trace.
fn run(
    algorithm: LimitAlgorithm,
    tune: impl FnOnce(BulkheadConfigBuilder) -> BulkheadConfigBuilder,
) -> (Vec<(u32, f64)>, u64, Vec<u32>) {
    let config = tune(
        BulkheadConfig::builder()
            .limit_algorithm(algorithm)
            .max_concurrent_calls(10 * C)
            .initial_concurrent_calls(C / 2)
            .min_window_time(Duration::from_millis(100))
            .max_window_time(Duration::from_millis(100)),
    )
    .build()
    .unwrap();
    let clock = ManualClock::new();
    let bulkhead = Bulkhead::with_clock("downstream", config, clock.clone());
    // twice the largest capacity, in calls a second
    let rate = 2.0 * f64::from(2 * C) / BASE.as_secs_f64();
    let mut load = Load::new(&bulkhead, clock, rate, 42);
    let mut means = Vec::new();
    let mut trace = Vec::new();
    for capacity in [C, C / 2, C, 2 * C] {
        let downstream = Downstream {
            capacity,
            base: BASE,
        };
        let mut settled = Vec::new();
        let mut at = 0;
        load.run(&downstream, PHASE, EVERY, |_, limit| {
            at += 1;
            trace.push(limit);
            if at > PHASE.as_millis() / EVERY.as_millis() / 2 {
                settled.push(f64::from(limit));
            }
        });
        means.push((capacity, settled.iter().sum::<f64>() / settled.len() as f64));
    }
    (means, load.admitted, trace)
}

fn assert_converges(algorithm: LimitAlgorithm, means: &[(u32, f64)], admitted: u64) {
    println!("{algorithm}: {means:?} ({admitted} calls admitted)");
    assert!(admitted > 50_000, "{algorithm}: {admitted} calls");
    for &(capacity, mean) in means {
        let c = f64::from(capacity);
        assert!(
            (0.8 * c..=1.5 * c).contains(&mean),
            "{algorithm}: the limit averaged {mean:.1} against a capacity of {capacity}: {means:?}"
        );
    }
    let [a, b, c, d] = [means[0].1, means[1].1, means[2].1, means[3].1];
    assert!(
        b < a,
        "{algorithm}: the limit did not fall when C halved: {means:?}"
    );
    assert!(
        c > b && d > c,
        "{algorithm}: the limit did not rise when C doubled: {means:?}"
    );
}

#[test]
fn aimd_settles_falls_and_rises() {
    // A window slower than 1.5 × the normal latency is a drop.
    let (means, admitted, _) = run(LimitAlgorithm::Aimd, |b| b.drop_timeout(BASE.mul_f64(1.5)));
    assert_converges(LimitAlgorithm::Aimd, &means, admitted);
}

#[test]
fn gradient2_settles_falls_and_rises() {
    let (means, admitted, _) = run(LimitAlgorithm::Gradient2, |b| b);
    assert_converges(LimitAlgorithm::Gradient2, &means, admitted);
}

#[test]
fn vegas_settles_falls_and_rises() {
    let (means, admitted, _) = run(LimitAlgorithm::Vegas, |b| b);
    assert_converges(LimitAlgorithm::Vegas, &means, admitted);
}

#[test]
fn a_fixed_limit_stays_where_it_is_set() {
    let (means, _, trace) = run(LimitAlgorithm::Fixed, |b| b.max_concurrent_calls(C));
    assert!(trace.iter().all(|&l| l == C), "{means:?}");
}

#[test]
fn the_simulation_replays_exactly() {
    let tune = |b: BulkheadConfigBuilder| b;
    let (_, admitted, first) = run(LimitAlgorithm::Vegas, tune);
    let (_, again, second) = run(LimitAlgorithm::Vegas, tune);
    assert_eq!((admitted, &first), (again, &second));
}

/// The live limit in the meters, between refreshes too, and its changes in
/// the actuator's events.
#[tokio::test(flavor = "current_thread")]
async fn the_limit_shows_in_the_meters_and_the_actuator_events() {
    let clock = ManualClock::new();
    let text = r#"
[bulkhead.instances.inventory-query]
limit-algorithm = "aimd"
initial-concurrent-calls = 20
max-concurrent-calls = 40
min-window-time = "100ms"
max-window-time = "100ms"
drop-timeout = "15ms"
event-consumer-buffer-size = 20000
"#;
    let (registries, report) = Resilience::builder()
        .file_contents("resilience.toml", text)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .clock(clock.clone())
        .load()
        .unwrap()
        .into_parts();
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let _recording = metrics::set_default_local_recorder(&recorder);
    resil::metrics::bind(&registries);
    let bulkhead = registries.bulkheads().bulkhead("inventory-query");
    let downstream = Downstream {
        capacity: 10,
        base: BASE,
    };
    let mut load = Load::new(&bulkhead, clock.clone(), 4.0 * 10.0 / BASE.as_secs_f64(), 7);
    load.run(
        &downstream,
        Duration::from_secs(3),
        Duration::from_secs(1),
        |_, _| {},
    );
    let live = bulkhead.metrics().max_allowed_concurrent_calls();
    assert!(live < 20, "the limit fell to the capacity: {live}");

    // set at each LIMIT_CHANGED event: no refresh needed
    let rendered = handle.render();
    for line in [
        format!(r#"resil_bulkhead_limit{{name="inventory-query"}} {live}"#),
        format!(
            r#"resilience4j_bulkhead_max_allowed_concurrent_calls{{name="inventory-query"}} {live}"#
        ),
    ] {
        assert!(
            rendered.lines().any(|l| l == line),
            "missing `{line}` in\n{rendered}"
        );
    }

    drop(load);
    let router = Actuator::builder()
        .registries(Arc::new(registries))
        .report(report)
        .prometheus(handle)
        .build()
        .router();
    let request = Request::get("/actuator/bulkheadevents/inventory-query/limit_changed")
        .body(Body::empty())
        .unwrap();
    let response = router.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let events = json["bulkheadEvents"].as_array().unwrap();
    assert!(!events.is_empty(), "{json}");
    assert_eq!(events[0]["previousLimit"], 20, "{json}");
    for e in events {
        assert_eq!(e["type"], "LIMIT_CHANGED");
        assert_eq!(e["bulkheadName"], "inventory-query");
    }
    let last = events.last().unwrap();
    assert_eq!(last["limit"], live, "{json}");
}
