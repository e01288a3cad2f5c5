//! The dashboard and the alert rules, checked on a real Prometheus: the
//! example service (with a few more instances, so that every kind has
//! one) is driven through each failure mode while a `prometheus` process
//! scrapes its `/actuator/prometheus` every second; then every query of
//! `dashboards/resil.json`, every query of Resilience4j's official Grafana
//! board and every expression of `alerts/resil-rules.yml` must answer with
//! at least one series. Hard input keeps the exposition valid (`promtool
//! check metrics`) and every scrape parsing: a keyed tenant whose `key`
//! label holds quotes, a backslash and a newline, its eviction while the
//! panels query it, and reloads while the exposition is served.
//!
//! Without `prometheus` and `promtool` (Debian's `prometheus` package) the
//! tests that need them print that they were skipped; with `CI` set they
//! fail instead.

#[allow(dead_code)] // a test binary uses only part of the example
#[path = "../examples/inventory-service/app/mod.rs"]
mod app;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use resil::actuator::metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use resil::config::Resilience;
use resil_testkit::{PrometheusServer, encode, promtool_with_input};
use serde_json::Value;
use tower::ServiceExt as _;

use crate::app::Inventory;
use crate::app::downstream::InventoryHttpClient;

mod support_prometheus;

use support_prometheus::{
    ALERTS, DASHBOARD, NOT_YET_EXPORTED, dashboard_queries, meters_named, rules,
};

const CONFIG: &str = include_str!("../resilience.toml");

/// The queries of Resilience4j's official Grafana board
/// (`grafana_dashboard.json` in its repository, the version with the
/// call-duration percentiles; the current one has 13 of them).
const RESILIENCE4J_BOARD: &[&str] = &[
    r#"sum(resilience4j_circuitbreaker_state{state="closed"})"#,
    r#"sum(resilience4j_circuitbreaker_state{state=~"open|forced_open"})"#,
    r#"resilience4j_circuitbreaker_state{instance=~"$instance"}"#,
    r#"sum(resilience4j_circuitbreaker_state{state="half_open"})"#,
    r#"resilience4j_circuitbreaker_failure_rate{instance=~"$instance",name=~"$circuitbreaker_name"}"#,
    r#"rate(resilience4j_circuitbreaker_calls_seconds_count{instance=~"$instance",name=~"$circuitbreaker_name"}[1m])"#,
    r#"rate(resilience4j_circuitbreaker_calls_total{instance=~"$instance",name=~"$circuitbreaker_name"}[1m])"#,
    r#"resilience4j_circuitbreaker_buffered_calls{instance=~"$instance",name=~"$circuitbreaker_name"}"#,
    r#"resilience4j_circuitbreaker_max_buffered_calls{instance=~"$instance",name=~"$circuitbreaker_name"}"#,
    r#"histogram_quantile(0.9, sum(rate(resilience4j_circuitbreaker_calls_seconds_bucket{application=~"$application", instance=~"$instance", name=~"$circuitbreaker_name"}[1m])) by (le))"#,
    r#"histogram_quantile(0.95, sum(rate(resilience4j_circuitbreaker_calls_seconds_bucket{application=~"$application", instance=~"$instance", name=~"$circuitbreaker_name"}[1m])) by (le))"#,
    r#"histogram_quantile(0.98, sum(rate(resilience4j_circuitbreaker_calls_seconds_bucket{application=~"$application", instance=~"$instance", name=~"$circuitbreaker_name"}[1m])) by (le))"#,
    r#"histogram_quantile(0.50, sum(rate(resilience4j_circuitbreaker_calls_seconds_bucket{application=~"$application", instance=~"$instance", name=~"$circuitbreaker_name"}[1m])) by (le))"#,
    r#"increase(resilience4j_circuitbreaker_calls_seconds_sum{instance=~"$instance",name=~"$circuitbreaker_name"}[1m]) / increase(resilience4j_circuitbreaker_calls_seconds_count{instance=~"$instance",name=~"$circuitbreaker_name"}[1m])"#,
    r#"sum(increase(resilience4j_circuitbreaker_calls_seconds_sum{instance=~"$instance",name=~"$circuitbreaker_name"}[1m])) / sum(increase(resilience4j_circuitbreaker_calls_seconds_count{instance=~"$instance",name=~"$circuitbreaker_name"}[1m]))"#,
    r#"rate(resilience4j_retry_calls_total{application=~"$application",name=~"$retry_name",}[1m])"#,
    r#"resilience4j_bulkhead_available_concurrent_calls{application=~"$application",name=~"$bulkhead_name"}"#,
    r#"resilience4j_bulkhead_max_allowed_concurrent_calls{application=~"$application",name=~"$bulkhead_name"}"#,
];

/// The instances the example does not have, so that every kind the
/// dashboard shows has one: a rate limiter, a thread-pool bulkhead, a
/// small semaphore bulkhead, a retry of its own and a breaker to force open.
const MORE_INSTANCES: &str = r#"
[ratelimiter.instances.partner-api]
limit-for-period = 5
limit-refresh-period = "1h"
timeout-duration = "0ms"

[retry.instances.partner-api]
max-attempts = 3
wait-duration = "1ms"

# A retry whose budget pays for none: each of its retries is denied.
[retry.instances.partner-search]
max-attempts = 2
wait-duration = "1ms"
budget = "partner-search"

[retrybudget.instances.partner-search]
ratio = 0
min-retries-per-second = 0

[circuitbreaker.instances.partner-api]

[bulkhead.instances.inventory-audit]
max-concurrent-calls = 2
max-wait-duration = "0ms"

[thread-pool-bulkhead.instances.inventory-export]
core-thread-pool-size = 1
max-thread-pool-size = 1
queue-capacity = 1

[circuitbreaker.instances.partner-tenant]
key-label = true
max-keys = 1

# A drill: every call of `partner-drill` aborted by fault injection.
[circuitbreaker.instances.partner-drill]

[fault.instances.partner-drill]
enabled = true
abort-percent = 100
"#;

/// A tenant key with what a label value must escape: quotes, a backslash
/// and a newline.
const ODD_TENANT: &str = "acme \"east\"\\\nline 2";

#[derive(Debug)]
struct TenantError(#[allow(dead_code)] String);

impl From<resil::Rejection> for TenantError {
    fn from(r: resil::Rejection) -> Self {
        TenantError(r.to_string())
    }
}

/// A breaker per tenant, its series tagged with the tenant (`key`); one
/// key at a time (`max-keys = 1`), so the next tenant evicts the last.
#[resil::circuit_breaker(name = "partner-tenant", key = tenant)]
fn tenant_call(tenant: &str) -> Result<u32, TenantError> {
    let _ = tenant;
    Ok(1)
}

/// Checks that `exposition` is valid Prometheus text with `promtool check
/// metrics`: it parses (exit 1 otherwise), and its only lint problems are
/// in Resilience4j's own names, which dashboards depend on
/// (`resilience4j_bulkhead_active_thread_count` is a gauge with a `_count`
/// suffix in Micrometer's export too).
fn assert_valid_exposition(exposition: &str) {
    let out = promtool_with_input(&["check", "metrics"], exposition)
        .expect("promtool runs where prometheus does");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "promtool check metrics: {:?} {text}",
        out.status
    );
    for problem in text.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            problem.starts_with("resilience4j_"),
            "promtool check metrics: {problem}"
        );
    }
}

/// A query with Grafana's variables replaced by what "All" selects.
fn substitute(query: &str) -> String {
    let mut out = String::with_capacity(query.len());
    let mut rest = query;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (braced, body) = match after.strip_prefix('{') {
            Some(b) => (true, b),
            None => (false, after),
        };
        let len = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(body.len());
        let variable = &body[..len];
        out.push_str(if variable.starts_with("__") {
            "1m" // $__rate_interval, $__interval: a range that holds scrapes
        } else {
            ".*"
        });
        rest = &body[len + usize::from(braced)..];
    }
    out.push_str(rest);
    out
}

/// The series a query returns now (its `data.result`).
fn series(prometheus: &PrometheusServer, query: &str) -> Vec<Value> {
    let answer = prometheus
        .query(query)
        .unwrap_or_else(|e| panic!("Prometheus refused `{query}`: {e}"));
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["status"], "success", "{query}: {answer}");
    match &answer["data"]["result"] {
        Value::Array(result) => result.clone(),
        _ => Vec::new(),
    }
}

/// The first value of a query's first series, when it has one.
fn value(prometheus: &PrometheusServer, query: &str) -> Option<f64> {
    series(prometheus, query)
        .first()
        .and_then(|s| s["value"][1].as_str().and_then(|v| v.parse().ok()))
}

/// Polls until `done` holds, 4 times a second for 30 s at most (plus the
/// queries' own time); `false` then.
fn poll(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..120 {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    done()
}

/// The example's `/actuator/prometheus`, as text.
async fn scrape(service: &axum::Router) -> String {
    let request = Request::get("/actuator/prometheus")
        .body(Body::empty())
        .unwrap();
    let response = service.clone().oneshot(request).await.unwrap();
    let body = axum::body::to_bytes(response.into_body(), 1 << 22)
        .await
        .unwrap();
    String::from_utf8(body.to_vec()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_the_official_board_and_the_rules_answer_on_a_real_prometheus() {
    const TEST: &str = "the_dashboard_the_official_board_and_the_rules_answer_on_a_real_prometheus";
    let dir = std::env::temp_dir().join(format!("resil-prometheus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("resilience.toml");
    let good = format!("{CONFIG}\n{MORE_INSTANCES}");
    std::fs::write(&config, &good).unwrap();

    // The example's recorder, with the call-duration buckets.
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(resil::metrics::CIRCUIT_BREAKER_CALLS.to_owned()),
            resil::metrics::CALL_DURATION_BUCKETS,
        )
        .unwrap()
        .install_recorder()
        .unwrap();
    Resilience::builder()
        .file(&config)
        .env_vars(Vec::<(String, String)>::new())
        .init()
        .unwrap();
    let registries = resil::registries();
    let inventory = Inventory::new(Arc::new(InventoryHttpClient::new()), registries);
    let actuator = app::actuator(handle, None);
    let service = app::service(inventory.clone(), &actuator);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move { app::serve(listener, inventory, &actuator).await });

    let rule_file = Path::new(ALERTS).join("resil-rules.yml");
    let Some(prometheus) = tokio::task::block_in_place(|| {
        PrometheusServer::start_or_skip(TEST, target, "/actuator/prometheus", &[&rule_file])
    }) else {
        serving.abort();
        return;
    };

    let call = |request: Request<Body>| {
        let service = service.clone();
        async move { service.oneshot(request).await.unwrap().status().as_u16() }
    };
    let get = |uri: &str| Request::get(uri).body(Body::empty()).unwrap();
    let reserve = |key: &str| {
        Request::post("/inventory/SKU-1001/reservations?mode=slow")
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(Body::from(r#"{"quantity":1}"#))
            .unwrap()
    };
    let breaker = registries
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    let limiter = registries.rate_limiters().rate_limiter("partner-api");
    let retry = registries.retries().retry("partner-api");
    let budgeted = registries.retries().retry("partner-search");
    let audit = registries.bulkheads().bulkhead("inventory-audit");
    let export = registries
        .thread_pool_bulkheads()
        .thread_pool_bulkhead("inventory-export");

    // 1. Every failure mode once, so that every series exists before the
    // bursts: a success, timeouts (the breaker's failures), refused
    // connections (retried) until the breaker opens, a refusal and its
    // fallback; a slow write timing out; the extra instances' refusals, a
    // retried call, a retry its budget denies, a forced-open breaker, a full bulkhead and a full pool
    // whose queued task ages; a refused reload and an applied one.
    assert_eq!(call(get("/inventory/SKU-1001?mode=success")).await, 200);
    let (a, b) = tokio::join!(
        call(get("/inventory/SKU-1001?mode=slow")),
        call(get("/layered/inventory/SKU-1001?mode=slow")),
    );
    assert_eq!(
        (a, b),
        (200, 504),
        "a degraded answer, then the layer's timeout"
    );
    for _ in 0..10 {
        if breaker.state() == resil::circuit_breaker::State::Open {
            break;
        }
        call(get("/inventory/SKU-1001?mode=connect")).await;
    }
    assert_eq!(breaker.state(), resil::circuit_breaker::State::Open);
    call(get("/inventory/SKU-1001?mode=success")).await;
    assert!(call(reserve("slow-1")).await >= 500);
    assert!(limiter.try_acquire_permission(1));
    for _ in 0..10 {
        limiter.try_acquire_permission(1);
    }
    assert!(retry.call(|| Err::<(), _>("refused")).is_err());
    assert!(budgeted.call(|| Err::<(), _>("refused")).is_err());
    let drilled = registries
        .circuit_breakers()
        .circuit_breaker("partner-drill");
    assert!(matches!(
        drilled.call(|| Ok::<_, &str>(())),
        Err(resil::Error::FaultInjected(_))
    ));
    registries
        .circuit_breakers()
        .circuit_breaker("partner-api")
        .transition_to_forced_open_state()
        .unwrap();
    let held = (
        audit.try_acquire_permission().unwrap(),
        audit.try_acquire_permission().unwrap(),
    );
    assert!(audit.try_acquire_permission().is_err());
    let (gate, gated) = std::sync::mpsc::channel::<()>();
    let running = export.try_submit(move || gated.recv()).unwrap();
    let queued = export.try_submit(|| ()).unwrap();
    assert!(export.try_submit(|| ()).is_err());
    std::fs::write(&config, format!("{good}\n[retry.instances.partner-api]\n")).unwrap();
    assert!(resil::reload().is_err(), "a table twice: refused");
    std::fs::write(&config, &good).unwrap();
    resil::reload().unwrap();

    // Prometheus has scraped them all
    let first = [
        r#"resilience4j_circuitbreaker_not_permitted_calls_total{name="inventory-query"}"#,
        r#"resil_fallback_calls_total{name="inventory-query"}"#,
        r#"resil_rejections_total{kind="rate_limiter"}"#,
        r#"resil_rejections_total{kind="bulkhead"}"#,
        r#"resil_rejections_total{kind="thread_pool_bulkhead"}"#,
        r#"resil_retry_attempts_total{name="partner-api"}"#,
        r#"resil_config_reloads_total{outcome="rejected"}"#,
        r#"resilience4j_timelimiter_calls_total{kind="timeout",name="inventory-reserve"}"#,
        r#"resil_faults_injected_total{name="partner-drill",kind="abort"}"#,
    ];
    let scraped = tokio::task::block_in_place(|| {
        poll(|| {
            first
                .iter()
                .all(|q| value(&prometheus, q).is_some_and(|v| v > 0.0))
        })
    });
    let missing: Vec<&&str> = first
        .iter()
        .filter(|q| value(&prometheus, q).is_none())
        .collect();
    assert!(scraped, "not scraped within 30 s: {missing:?}");

    // 2. The bursts, over what a 5-minute rate needs to pass the rules'
    // thresholds: 600 refusals of each kind, fallbacks, retried calls,
    // timeouts of writes and another refused reload.
    const BURST: usize = 600;
    // OPEN until the end: a slow machine may have let its wait pass, and
    // failing probes send it back
    if breaker.state() != resil::circuit_breaker::State::Open {
        breaker.transition_to_open_state().unwrap();
    }
    for _ in 0..BURST {
        call(get("/inventory/SKU-1001?mode=fail")).await;
        limiter.try_acquire_permission(1);
        assert!(audit.try_acquire_permission().is_err());
        assert!(export.try_submit(|| ()).is_err());
    }
    for _ in 0..BURST {
        assert!(drilled.call(|| Ok::<_, &str>(())).is_err());
    }
    for _ in 0..3 {
        assert!(retry.call(|| Err::<(), _>("refused")).is_err());
        assert!(budgeted.call(|| Err::<(), _>("refused")).is_err());
    }
    let (a, b) = tokio::join!(call(reserve("slow-2")), call(reserve("slow-3")));
    assert!(a >= 500 && b >= 500);
    std::fs::write(&config, format!("{good}\n[retry.instances.partner-api]\n")).unwrap();
    assert!(resil::reload().is_err());
    std::fs::write(&config, &good).unwrap();

    let exposition = scrape(&service).await;
    let exported = meters_named(&exposition);
    let waiting = |query: &str| -> Vec<String> {
        meters_named(query)
            .into_iter()
            .filter(|m| NOT_YET_EXPORTED.contains(&m.as_str()))
            .filter(|m| !exported.iter().any(|e| e.starts_with(m.as_str())))
            .collect()
    };

    let dashboard: Value = serde_json::from_str(DASHBOARD).unwrap();
    let mut queries: Vec<(String, String)> = dashboard_queries(&dashboard)
        .into_iter()
        .map(|(title, expr)| (format!("dashboard panel `{title}`"), substitute(&expr)))
        .collect();
    queries.extend(
        RESILIENCE4J_BOARD
            .iter()
            .map(|q| ("Resilience4j's board".to_owned(), substitute(q))),
    );
    queries.extend(rules().iter().map(|r| {
        (
            format!("rule {}", r["alert"].as_str().unwrap()),
            r["expr"].as_str().unwrap().to_owned(),
        )
    }));
    let mut asked = Vec::new();
    for (what, query) in queries {
        let not_yet = waiting(&query);
        if not_yet.is_empty() {
            asked.push((what, query));
        } else {
            eprintln!("{TEST}: not asked yet, resil does not export {not_yet:?}: {what}");
        }
    }
    // Every query answers once the bursts are scraped: poll, as a scrape
    // and a rule evaluation come every second.
    let silent = tokio::task::block_in_place(|| {
        let silent = |asked: &[(String, String)]| -> Vec<(String, String)> {
            asked
                .iter()
                .filter(|(_, q)| series(&prometheus, q).is_empty())
                .cloned()
                .collect()
        };
        let mut last = Vec::new();
        poll(|| {
            last = silent(&asked);
            last.is_empty()
        });
        last
    });
    assert!(
        silent.is_empty(),
        "queries without a series after the traffic:\n{}",
        silent
            .iter()
            .map(|(what, q)| format!("  {what}: {q}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(asked.len() >= 40, "{} queries asked", asked.len());

    // The rules loaded into Prometheus are healthy, and the dashboard's
    // variables list this service and its instances.
    tokio::task::block_in_place(|| {
        let loaded: Value =
            serde_json::from_str(&prometheus.api("/api/v1/rules").unwrap()).unwrap();
        let groups = loaded["data"]["groups"].as_array().unwrap();
        let loaded_rules: Vec<&Value> = groups
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap())
            .collect();
        assert_eq!(loaded_rules.len(), rules().len());
        for rule in loaded_rules {
            assert_eq!(rule["health"], "ok", "{rule}");
        }
        let values = |label: &str, matcher: &str| -> Vec<String> {
            let answer = prometheus
                .api(&format!(
                    "/api/v1/label/{label}/values?match[]={}",
                    encode(matcher)
                ))
                .unwrap();
            let answer: Value = serde_json::from_str(&answer).unwrap();
            answer["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        };
        let variables = dashboard["templating"]["list"].as_array().unwrap();
        let selector = |name: &str| -> String {
            let query = variables.iter().find(|v| v["name"] == name).unwrap()["query"]["query"]
                .as_str()
                .unwrap();
            let inner = query
                .strip_prefix("label_values(")
                .and_then(|q| q.rsplit_once(','))
                .unwrap()
                .0;
            substitute(inner)
        };
        assert_eq!(
            values("instance", &selector("instance")),
            [target.to_string()]
        );
        let names = values("name", &selector("name"));
        for name in [
            "inventory-query",
            "inventory-reserve",
            "partner-api",
            "inventory-audit",
            "inventory-export",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
    });

    assert_valid_exposition(&exposition);

    // 3. Hard input while Prometheus scrapes: a tenant key that a label
    // value must escape, then another tenant that evicts it (its series go
    // while the panels query them), then reloads while the exposition is
    // served. Every scrape parses (`up` stays 1), and every exposition
    // served meanwhile is valid.
    let tenants = |prometheus: &PrometheusServer| -> BTreeSet<String> {
        series(
            prometheus,
            r#"resilience4j_circuitbreaker_state{name="partner-tenant",state="closed"}"#,
        )
        .iter()
        .filter_map(|s| s["metric"]["key"].as_str().map(str::to_owned))
        .collect()
    };
    tenant_call(ODD_TENANT).unwrap();
    let odd = BTreeSet::from([ODD_TENANT.to_owned()]);
    assert!(
        tokio::task::block_in_place(|| poll(|| tenants(&prometheus) == odd)),
        "the odd tenant's series, its key as it was: {:?}",
        tenants(&prometheus)
    );
    assert_valid_exposition(&scrape(&service).await);
    tenant_call("globex").unwrap();
    let globex = BTreeSet::from(["globex".to_owned()]);
    assert!(
        tokio::task::block_in_place(|| poll(|| tenants(&prometheus) == globex)),
        "the evicted tenant's series gone: {:?}",
        tenants(&prometheus)
    );
    let variant = good.replace("limit-for-period = 5", "limit-for-period = 6");
    assert_ne!(variant, good);
    let reloading = {
        let (config, good, variant) = (config.clone(), good.clone(), variant.clone());
        std::thread::spawn(move || {
            for i in 0..40 {
                let text = if i % 2 == 0 { &variant } else { &good };
                std::fs::write(&config, text).unwrap();
                resil::reload().unwrap();
            }
        })
    };
    for _ in 0..10 {
        assert_valid_exposition(&scrape(&service).await);
    }
    reloading.join().unwrap();
    let scrapes = |prometheus: &PrometheusServer| {
        value(prometheus, "count_over_time(up[10m])").unwrap_or(0.0)
    };
    tokio::task::block_in_place(|| {
        let before = scrapes(&prometheus);
        assert!(
            poll(|| scrapes(&prometheus) >= before + 2.0),
            "two more scrapes"
        );
        assert_eq!(
            value(&prometheus, "min_over_time(up[10m])"),
            Some(1.0),
            "every scrape parsed"
        );
        // and the panels still answer, the evicted tenant's gone
        let silent: Vec<&(String, String)> = asked
            .iter()
            .filter(|(_, q)| series(&prometheus, q).is_empty())
            .collect();
        assert!(silent.is_empty(), "silent after the eviction: {silent:?}");
    });

    drop(held);
    drop(gate);
    drop((running, queued));
    serving.abort();
    let _ = std::fs::remove_dir_all(&dir);
}
