//! The fleet through `resilience.toml`: `cluster-url` on a rate limiter and
//! a circuit breaker, against a real `redis-server` and a real Redis Cluster
//! (skipped with a message where none is installed and `CI` is unset), and
//! the `resil_cluster_backend_up` gauge as Prometheus scrapes it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use metrics_exporter_prometheus::PrometheusBuilder;
use resil::actuator::Actuator;
use resil::config::Resilience;
use resil::rate_limiter::RateLimiterEvent;
use resil_testkit::{RedisCluster, RedisServer};
use tower::ServiceExt as _;

async fn scrape(router: &axum::Router) -> String {
    let request = Request::get("/actuator/prometheus")
        .body(Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[allow(clippy::disallowed_methods)] // Redis's health checks run in real time
#[tokio::test]
async fn a_configured_fleet_shows_its_backend_in_the_gauge() {
    let Some(mut redis) =
        RedisServer::start_or_skip("a_configured_fleet_shows_its_backend_in_the_gauge")
    else {
        return;
    };
    let url = redis.url();
    let file = format!(
        r#"
[ratelimiter.instances.fleet]
limit-for-period = 10
limit-refresh-period = "100ms"
timeout-duration = "0ms"
cluster-url = "{url}"
cluster-lease = 2
cluster-failure-mode = "deny"

[circuitbreaker.instances.fleet]
cluster-url = "{url}"
"#
    );
    let (registries, report) = Resilience::builder()
        .file_contents("resilience.toml", file)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
        .unwrap_or_else(|e| panic!("{e}"))
        .into_parts();
    let registries = Arc::new(registries);
    let recorder = PrometheusBuilder::new().build_recorder();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let router = Actuator::builder()
        .registries(registries.clone())
        .report(report)
        .prometheus(recorder.handle())
        .build()
        .router();
    let limiter = registries.rate_limiters().rate_limiter("fleet");
    let changes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&changes);
    limiter.event_publisher().on_event(move |e| {
        if let RateLimiterEvent::ClusterBackendChanged { up } = e.kind() {
            seen.lock().unwrap().push(*up);
        }
    });
    let _breaker = registries.circuit_breakers().circuit_breaker("fleet");
    assert!(limiter.try_acquire_permission(1));
    let text = scrape(&router).await;
    for line in [
        r#"resil_cluster_backend_up{kind="ratelimiter",name="fleet"} 1"#,
        r#"resil_cluster_backend_up{kind="circuitbreaker",name="fleet"} 1"#,
    ] {
        assert!(text.contains(line), "no `{line}` in\n{text}");
    }

    redis.kill();
    // spend the lease, then a round trip fails: down, and `deny` refuses
    let until = Instant::now() + Duration::from_secs(2);
    while limiter.cluster_metrics().unwrap().backend_up() {
        assert!(Instant::now() < until, "the backend never went down");
        limiter.try_acquire_permission(1);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!limiter.try_acquire_permission(1));
    let text = scrape(&router).await;
    assert!(
        text.contains(r#"resil_cluster_backend_up{kind="ratelimiter",name="fleet"} 0"#),
        "{text}"
    );
    assert_eq!(*changes.lock().unwrap(), [false]);
}

/// The same through a `redis+cluster://` URL on a real Redis Cluster: the
/// master holding the limiter's key is killed, the gauge goes to 0 and, once
/// the replica is promoted, back to 1, with nothing changed in the file.
#[allow(clippy::disallowed_methods)] // Redis's failover runs in real time
#[tokio::test]
async fn a_cluster_failover_shows_in_the_gauge() {
    let Some(mut cluster) = RedisCluster::start_or_skip("a_cluster_failover_shows_in_the_gauge")
    else {
        return;
    };
    let url = cluster.url();
    let file = format!(
        r#"
[ratelimiter.instances.fleet]
limit-for-period = 10
limit-refresh-period = "100ms"
timeout-duration = "0ms"
cluster-url = "{url}"
cluster-lease = 2
"#
    );
    let (registries, report) = Resilience::builder()
        .file_contents("resilience.toml", file)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
        .unwrap_or_else(|e| panic!("{e}"))
        .into_parts();
    let registries = Arc::new(registries);
    let recorder = PrometheusBuilder::new().build_recorder();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let router = Actuator::builder()
        .registries(registries.clone())
        .report(report)
        .prometheus(recorder.handle())
        .build()
        .router();
    let limiter = registries.rate_limiters().rate_limiter("fleet");
    let gauge =
        |v: u8| format!(r#"resil_cluster_backend_up{{kind="ratelimiter",name="fleet"}} {v}"#);
    let until = Instant::now() + Duration::from_secs(5);
    while !(limiter.try_acquire_permission(1) && limiter.cluster_metrics().unwrap().backend_up()) {
        assert!(Instant::now() < until, "the cluster never answered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = scrape(&router).await;
    assert!(text.contains(&gauge(1)), "{text}");

    let key = "resil:{fleet}:ratelimiter";
    let master = cluster.master_of(key).unwrap();
    cluster.kill(master);
    let until = Instant::now() + Duration::from_secs(5);
    while limiter.cluster_metrics().unwrap().backend_up() {
        assert!(Instant::now() < until, "the backend never went down");
        let t = Instant::now();
        limiter.try_acquire_permission(1);
        assert!(
            t.elapsed() < Duration::from_millis(250),
            "a call waited {:?}",
            t.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let text = scrape(&router).await;
    assert!(text.contains(&gauge(0)), "{text}");

    let _cluster = tokio::task::spawn_blocking(move || {
        cluster.wait_for_master_other_than(key, master).unwrap();
        cluster
    })
    .await
    .unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    while !limiter.cluster_metrics().unwrap().backend_up() {
        assert!(Instant::now() < until, "the backend never came back");
        limiter.try_acquire_permission(1);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = scrape(&router).await;
    assert!(text.contains(&gauge(1)), "{text}");
}
