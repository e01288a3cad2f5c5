//! Keyed instances (`key = expr` on an attribute) as a user
//! writes them: one instance per key under the attribute's name, bounded by
//! `max-keys`, seen by the meters and the actuator. Every test uses its own
//! instance names (tests share the process and its global registries, which
//! `init` builds once from the file below).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use metrics_exporter_prometheus::PrometheusBuilder;
use resil::Rejection;
use resil::bulkhead::Bulkhead;
use resil::circuit_breaker::{CircuitBreaker, State};
use resil::config::Resilience;
use resil::config::keyed::Keyed;
use resil::rate_limiter::RateLimiter;
use resil::retry::Retry;
use resil::time_limiter::TimeLimiter;
use resil_config::GlobalPrimitive;
use serde_json::Value;
use tower::ServiceExt as _;

#[global_allocator]
static ALLOC: resil_testkit::CountingAlloc = resil_testkit::CountingAlloc;

const FILE: &str = r#"
[circuitbreaker.configs.default]
sliding-window-size = 2
minimum-number-of-calls = 2
wait-duration-in-open-state = "1h"

[circuitbreaker.instances.keyed-pay]
[circuitbreaker.instances.keyed-many]
max-keys = 50
[circuitbreaker.instances.keyed-guard]
max-keys = 2
[circuitbreaker.instances.keyed-fresh]
max-keys = 1
[circuitbreaker.instances.keyed-label]
key-label = true
[circuitbreaker.instances.keyed-sum]
[circuitbreaker.instances.keyed-shown]
max-keys = 3
[circuitbreaker.instances.keyed-pinned]
max-keys = 10
[circuitbreaker.instances.keyed-health]
register-health-indicator = true
[circuitbreaker.instances.keyed-listed-bound]
max-keys = 4
[circuitbreaker.instances.keyed-scale]
max-keys = 100
key-label = true

[retry.instances.keyed-retry]
max-attempts = 3
wait-duration = "10ms"

[bulkhead.instances.keyed-bulkhead]
max-concurrent-calls = 1
max-wait-duration = "0ms"

[ratelimiter.instances.keyed-limit]
limit-for-period = 1
limit-refresh-period = "1h"
timeout-duration = "0ms"

[timelimiter.instances.keyed-timeout]
timeout-duration = "50ms"

[retry.instances.keyed-listed]
max-attempts = 1
[bulkhead.instances.keyed-listed]
max-concurrent-calls = 1
[ratelimiter.instances.keyed-listed]
limit-for-period = 2
limit-refresh-period = "1h"
timeout-duration = "0ms"
register-health-indicator = true
[timelimiter.instances.keyed-listed]
timeout-duration = "1s"
"#;

/// Builds the global registries from [`FILE`], once per process.
/// Tests that read every keyed table (renders, the actuator's lists) hold
/// its instances for a moment while they read; a key in use is not evicted,
/// so a test that counts one table's keys exactly runs apart from them.
static TABLES: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

async fn reading_every_table() -> tokio::sync::RwLockReadGuard<'static, ()> {
    TABLES.read().await
}

fn reading_every_table_blocking() -> tokio::sync::RwLockReadGuard<'static, ()> {
    TABLES.blocking_read()
}

fn counting_one_table() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    TABLES.blocking_write()
}

fn init() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        Resilience::builder()
            .file_contents("resilience.toml", FILE)
            .env_vars(Vec::<(String, String)>::new())
            .init()
            .unwrap();
    });
}

fn table<P: GlobalPrimitive>(name: &str) -> Arc<Keyed<P>> {
    resil::registries()
        .keyed::<P>()
        .table(name)
        .unwrap_or_else(|| panic!("no keyed table `{name}`"))
}

#[derive(Debug, PartialEq)]
enum PayError {
    Declined,
    Rejected(String),
}

impl From<Rejection> for PayError {
    fn from(r: Rejection) -> Self {
        PayError::Rejected(r.to_string())
    }
}

fn outcome(fail: bool) -> Result<u32, PayError> {
    if fail { Err(PayError::Declined) } else { Ok(7) }
}

#[resil::circuit_breaker(name = "keyed-pay", key = tenant)]
fn pay(tenant: &str, fail: bool) -> Result<u32, PayError> {
    outcome(fail)
}

#[test]
fn keyed_breakers_open_independently() {
    init();
    assert_eq!(pay("acme", true), Err(PayError::Declined));
    assert_eq!(pay("acme", true), Err(PayError::Declined));
    // acme's breaker is open; globex has its own, closed
    assert!(matches!(pay("acme", false), Err(PayError::Rejected(_))));
    for _ in 0..3 {
        assert_eq!(pay("globex", false), Ok(7));
    }

    let t = table::<CircuitBreaker>("keyed-pay");
    assert_eq!(t.keys(), ["acme", "globex"]);
    assert_eq!(t.find("acme").unwrap().state(), State::Open);
    assert_eq!(t.find("globex").unwrap().state(), State::Closed);
    // the unkeyed instance of the name carries the settings and saw no call
    let named = resil_config::registries()
        .circuit_breakers()
        .find("keyed-pay")
        .unwrap();
    assert_eq!(named.metrics().number_of_buffered_calls(), 0);
}

#[resil::circuit_breaker(name = "keyed-many", key = id)]
fn many(id: u32) -> Result<u32, PayError> {
    Ok(id)
}

#[test]
fn the_bound_holds_under_ten_thousand_keys_and_memory_stays_flat() {
    let _apart = counting_one_table();
    init();
    for id in 0..1_000 {
        assert_eq!(many(id), Ok(id));
    }
    let t = table::<CircuitBreaker>("keyed-many");
    assert_eq!(t.len(), 50);
    // 9 000 more distinct keys leave nothing behind on this thread
    let ((), kept) = resil_testkit::bytes_during(|| {
        for id in 1_000..10_000 {
            assert_eq!(many(id), Ok(id));
        }
    });
    assert_eq!(t.len(), 50);
    assert_eq!(t.evictions(), 10_000 - 50);
    assert!(
        kept.abs() < 16 * 1024,
        "9 000 new keys left {kept} bytes allocated"
    );
    // the most recent keys are the ones kept
    assert_eq!(t.keys().first().map(String::as_str), Some("9950"));
}

#[resil::circuit_breaker(name = "keyed-guard", key = tenant)]
fn guarded(tenant: &str, fail: bool) -> Result<u32, PayError> {
    outcome(fail)
}

#[test]
fn eviction_never_drops_an_open_key_while_a_closed_one_exists() {
    let _apart = counting_one_table();
    init();
    let _ = guarded("down", true);
    let _ = guarded("down", true);
    for tenant in ["a", "b", "c", "d", "e"] {
        assert_eq!(guarded(tenant, false), Ok(7));
    }
    let t = table::<CircuitBreaker>("keyed-guard");
    // "down" is the least recently used, but it is open
    assert_eq!(t.keys(), ["down", "e"]);
    assert_eq!(t.find("down").unwrap().state(), State::Open);
    assert!(matches!(guarded("down", false), Err(PayError::Rejected(_))));
}

static PINNED_CALLS: AtomicU32 = AtomicU32::new(0);

#[resil::circuit_breaker(name = "keyed-pinned", key = tenant)]
fn pinned(tenant: &str) -> Result<u32, PayError> {
    PINNED_CALLS.fetch_add(1, Ordering::Relaxed);
    let _ = tenant;
    Err(PayError::Declined)
}

#[test]
fn open_keys_nobody_calls_cannot_stop_a_failing_tenants_breaker_from_opening() {
    let _apart = counting_one_table();
    init();
    // 9 of the 10 keys are open junk tenants that nobody calls again
    for junk in 0..9 {
        let tenant = format!("junk-{junk}");
        let _ = pinned(&tenant);
        let _ = pinned(&tenant);
    }
    let _ = pinned("quiet"); // one failure: still closed
    let t = table::<CircuitBreaker>("keyed-pinned");
    assert_eq!(t.len(), 10);
    // two real tenants keep failing
    PINNED_CALLS.store(0, Ordering::Relaxed);
    let mut refused = 0;
    for call in 0..1_000 {
        let tenant = if call % 2 == 0 { "real-a" } else { "real-b" };
        if matches!(pinned(tenant), Err(PayError::Rejected(_))) {
            refused += 1;
        }
    }
    assert_eq!(
        PINNED_CALLS.load(Ordering::Relaxed),
        4,
        "each tenant's breaker opens after its two failures"
    );
    assert_eq!(refused, 996);
    assert_eq!(t.find("real-a").unwrap().state(), State::Open);
    assert_eq!(t.find("real-b").unwrap().state(), State::Open);
    assert!(t.len() <= 10);
}

#[resil::circuit_breaker(name = "keyed-fresh", key = tenant)]
fn fresh(tenant: &str, fail: bool) -> Result<u32, PayError> {
    outcome(fail)
}

#[test]
fn an_evicted_key_starts_afresh() {
    let _apart = counting_one_table();
    init();
    let _ = fresh("a", true);
    let _ = fresh("a", true);
    assert!(matches!(fresh("a", false), Err(PayError::Rejected(_))));
    // max-keys = 1 and no closed key: the open one goes
    assert_eq!(fresh("b", false), Ok(7));
    assert_eq!(table::<CircuitBreaker>("keyed-fresh").keys(), ["b"]);
    // its state was dropped: a new, closed breaker
    assert_eq!(fresh("a", false), Ok(7));
}

#[resil::circuit_breaker(name = "keyed-label", key = tenant)]
fn labelled(tenant: &str) -> Result<u32, PayError> {
    outcome(false)
}

#[resil::circuit_breaker(name = "keyed-sum", key = tenant)]
fn summed(tenant: &str) -> Result<u32, PayError> {
    outcome(false)
}

/// The value of the first series of `render` that starts with `prefix`.
fn series(render: &str, prefix: &str) -> Option<f64> {
    render
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn key_label_adds_a_key_tag_and_without_it_keys_add_into_the_name() {
    let _reading = reading_every_table_blocking();
    init();
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        for tenant in ["acme", "acme", "globex"] {
            labelled(tenant).unwrap();
            summed(tenant).unwrap();
        }
    });
    // the `key`-tagged series are resil's own, merged into the recorder's text
    let render = resil::metrics::with_keyed_series(&handle.render());
    let calls = "resilience4j_circuitbreaker_calls_seconds_count";
    assert_eq!(
        series(
            &render,
            &format!(r#"{calls}{{key="acme",kind="successful",name="keyed-label"}} "#)
        ),
        Some(2.0),
        "{render}"
    );
    assert_eq!(
        series(
            &render,
            &format!(r#"{calls}{{key="globex",kind="successful",name="keyed-label"}} "#)
        ),
        Some(1.0),
        "{render}"
    );
    assert_eq!(
        series(
            &render,
            &format!(r#"{calls}{{kind="successful",name="keyed-sum"}} "#)
        ),
        Some(3.0),
        "{render}"
    );
    assert!(!render.contains(r#"name="keyed-sum",key"#));
    assert!(
        !render
            .lines()
            .any(|l| l.contains("keyed-sum") && l.contains("key=")),
        "{render}"
    );
}

#[resil::circuit_breaker(name = "keyed-scale", key = tenant)]
fn scaled(tenant: u32) -> Result<u32, PayError> {
    outcome(tenant.is_multiple_of(7))
}

/// The distinct `key` values of the series of `name` in `text`, and the
/// number of those series.
fn keys_in(text: &str, name: &str) -> (std::collections::BTreeSet<String>, usize) {
    let mut keys = std::collections::BTreeSet::new();
    let mut series = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if !line.contains(&format!("name=\"{name}\"")) {
            continue;
        }
        if let Some((_, rest)) = line.split_once("key=\"") {
            series += 1;
            keys.insert(rest.split('"').next().unwrap().to_owned());
        }
    }
    (keys, series)
}

#[tokio::test]
async fn key_label_series_of_evicted_keys_go_with_them() {
    let _reading = reading_every_table().await;
    init();
    let recorder = PrometheusBuilder::new().build_recorder();
    let router = resil::actuator::Actuator::builder()
        .prometheus(recorder.handle())
        .build()
        .router();
    let scrape = || async {
        let (status, body) = get_from(&router, "/actuator/prometheus").await;
        assert_eq!(status, StatusCode::OK);
        String::from_utf8(body).unwrap()
    };
    // the calls record through the actuator's recorder, as through an
    // installed one
    metrics::with_local_recorder(&recorder, || {
        for tenant in 0..1_000 {
            let _ = scaled(tenant);
        }
    });
    let (keys, per_100) = keys_in(&scrape().await, "keyed-scale");
    assert_eq!(keys.len(), 100, "{keys:?}");
    // 10 000 more tenants: the exposition keeps the live keys only, and
    // nothing stays allocated for the evicted ones
    let ((), kept) = resil_testkit::bytes_during(|| {
        metrics::with_local_recorder(&recorder, || {
            for tenant in 1_000..11_000 {
                let _ = scaled(tenant);
            }
        });
    });
    let text = scrape().await;
    let (keys, series) = keys_in(&text, "keyed-scale");
    let live: std::collections::BTreeSet<String> = table::<CircuitBreaker>("keyed-scale")
        .keys()
        .into_iter()
        .collect();
    assert_eq!(
        keys.len(),
        100,
        "at most max-keys key values: not live {:?}",
        keys.difference(&live).collect::<Vec<_>>()
    );
    assert_eq!(series, per_100, "as many series as for the first 100 keys");
    assert_eq!(keys, live, "the series are the live keys'");
    // (negative: the 100 keys live before were evicted and freed)
    assert!(kept < 64 * 1024, "10 000 keys left {kept} bytes allocated");
    // the calls of a live key are counted under its key
    let failed = |key: u32| {
        text.lines()
            .find_map(|l| {
                l.strip_prefix(&format!(
                    "resilience4j_circuitbreaker_calls_seconds_count{{key=\"{key}\",kind=\"failed\",name=\"keyed-scale\"}} "
                ))
            })
            .map(|v| v.trim().to_owned())
    };
    assert_eq!(failed(10_997).as_deref(), Some("1"), "{text}");
    assert_eq!(failed(10), None, "an evicted key has no series");
    // a family's lines stay together, each family typed once
    let types: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE ")).collect();
    let distinct: std::collections::BTreeSet<&&str> = types.iter().collect();
    assert_eq!(types.len(), distinct.len(), "{text}");
    parses_as_prometheus_text(&text);
}

/// Prometheus's own parser accepts `text` (`promtool check metrics`; its
/// lint findings, such as a family without `# HELP`, are not parse errors).
fn parses_as_prometheus_text(text: &str) {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "skipped: promtool is not installed ({e}); the text was not parsed by Prometheus"
            );
            return;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !said.contains("parsing error") && out.status.code() != Some(1),
        "promtool refused the exposition: {said}"
    );
}

#[resil::circuit_breaker(name = "keyed-shown", key = tenant)]
fn shown(tenant: &str, fail: bool) -> Result<u32, PayError> {
    outcome(fail)
}

#[tokio::test]
async fn the_actuator_lists_the_live_keys() {
    let _reading = reading_every_table().await;
    init();
    let _ = shown("acme", true);
    let _ = shown("acme", true);
    shown("globex", false).unwrap();
    let (status, doc) = actuator_json("/actuator/resilience").await;
    assert_eq!(status, StatusCode::OK);
    let keyed = &doc["instances"]["circuitbreaker"]["keyed-shown"]["keyed"];
    assert_eq!(keyed["maxKeys"], 3, "{doc:#}");
    assert_eq!(keyed["keyLabel"], false);
    assert_eq!(keyed["keys"]["acme"]["state"], "OPEN", "{keyed:#}");
    assert_eq!(keyed["keys"]["globex"]["state"], "CLOSED", "{keyed:#}");

    let (status, doc) = actuator_json("/actuator/circuitbreakers").await;
    assert_eq!(status, StatusCode::OK);
    let shown = &doc["circuitBreakers"]["keyed-shown"];
    assert_eq!(shown["state"], "CLOSED", "{shown:#}");
    let keys: Vec<(&str, &str)> = shown["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["key"].as_str().unwrap(), k["state"].as_str().unwrap()))
        .collect();
    assert_eq!(keys, [("acme", "OPEN"), ("globex", "CLOSED")], "{shown:#}");
}

#[resil::circuit_breaker(name = "keyed-health", key = tenant)]
fn health_pay(tenant: &str, fail: bool) -> Result<u32, PayError> {
    outcome(fail)
}

#[resil::retry(name = "keyed-listed", key = key)]
fn listed_retry(key: &str) -> Result<u32, OpError> {
    Ok(key.len() as u32)
}

#[resil::bulkhead(name = "keyed-listed", key = key)]
fn listed_bulkhead(key: &str) -> Result<u32, OpError> {
    Ok(key.len() as u32)
}

#[resil::rate_limiter(name = "keyed-listed", key = key)]
fn listed_limit(key: &str) -> Result<u32, OpError> {
    Ok(key.len() as u32)
}

#[resil::time_limiter(name = "keyed-listed", key = key)]
async fn listed_timeout(key: String) -> Result<u32, OpError> {
    Ok(key.len() as u32)
}

/// `GET uri` from `router`: the status and the body.
async fn get_from(router: &axum::Router, uri: &str) -> (StatusCode, Vec<u8>) {
    let response = router
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, body.to_vec())
}

/// `uri`'s JSON from the actuator of the global registries.
async fn actuator_json(uri: &str) -> (StatusCode, Value) {
    let router = resil::actuator::Actuator::builder().build().router();
    let (status, body) = get_from(&router, uri).await;
    (status, serde_json::from_slice(&body).unwrap())
}

/// The `key`s of a list of keys, in order.
fn key_order(keys: &Value) -> Vec<&str> {
    keys.as_array()
        .unwrap_or_else(|| panic!("not a list of keys: {keys}"))
        .iter()
        .map(|k| k["key"].as_str().unwrap())
        .collect()
}

/// The entry of `name` in a list's `keyed`.
fn keyed_entry<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["keyed"]
        .as_array()
        .unwrap_or_else(|| panic!("no `keyed` in {doc}"))
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no keyed `{name}` in {doc}"))
}

#[tokio::test]
async fn every_list_and_the_health_show_the_keys_refusing_first() {
    let _reading = reading_every_table().await;
    init();
    health_pay("b-ok", false).unwrap();
    let _ = health_pay("z-down", true);
    let _ = health_pay("z-down", true);
    listed_retry("r1").unwrap();
    listed_bulkhead("b1").unwrap();
    listed_limit("aa").unwrap();
    listed_limit("zz").unwrap();
    listed_limit("zz").unwrap();
    assert_eq!(listed_limit("zz"), Err(OpError::Rejected));
    listed_timeout("t1".to_owned()).await.unwrap();

    // the breakers' list and the health: OPEN first, whatever the key's name
    let (_, doc) = actuator_json("/actuator/circuitbreakers").await;
    let keys = &doc["circuitBreakers"]["keyed-health"]["keys"];
    assert_eq!(key_order(keys), ["z-down", "b-ok"], "{doc:#}");
    assert_eq!(keys[0]["state"], "OPEN");
    assert_eq!(keys[0]["failedCalls"], 2);
    let (status, doc) = actuator_json("/actuator/health").await;
    assert_eq!(status, StatusCode::OK, "{doc:#}");
    let pay = &doc["components"]["circuitBreakers"]["details"]["keyed-health"];
    assert_eq!(pay["status"], "UP", "the name's own instance: {pay:#}");
    let keys = &pay["details"]["keys"];
    assert_eq!(key_order(keys), ["z-down", "b-ok"], "{pay:#}");
    assert_eq!(keys[0]["status"], "CIRCUIT_OPEN");
    assert_eq!(keys[1]["status"], "UP");
    let limiter = &doc["components"]["rateLimiters"]["details"]["keyed-listed"];
    let keys = &limiter["details"]["keys"];
    assert_eq!(
        key_order(keys),
        ["zz", "aa"],
        "no permit left first: {limiter:#}"
    );
    assert_eq!(keys[0]["availablePermissions"], 0);

    // every other list: its names, and its keyed names' keys
    let (_, doc) = actuator_json("/actuator/ratelimiters").await;
    assert!(
        doc["rateLimiters"]
            .as_array()
            .unwrap()
            .contains(&Value::from("keyed-listed"))
    );
    let limits = keyed_entry(&doc, "keyed-listed");
    assert_eq!(key_order(&limits["keys"]), ["zz", "aa"], "{doc:#}");
    assert_eq!(limits["maxKeys"], 100);
    let (_, doc) = actuator_json("/actuator/retries").await;
    let retries = keyed_entry(&doc, "keyed-listed");
    assert_eq!(key_order(&retries["keys"]), ["r1"], "{doc:#}");
    assert_eq!(
        retries["keys"][0]["numberOfSuccessfulCallsWithoutRetryAttempt"],
        1
    );
    let (_, doc) = actuator_json("/actuator/bulkheads").await;
    let bulkheads = keyed_entry(&doc, "keyed-listed");
    assert_eq!(key_order(&bulkheads["keys"]), ["b1"], "{doc:#}");
    assert_eq!(bulkheads["keys"][0]["availableConcurrentCalls"], 1);
    let (_, doc) = actuator_json("/actuator/timelimiters").await;
    let timeouts = keyed_entry(&doc, "keyed-listed");
    assert_eq!(key_order(&timeouts["keys"]), ["t1"], "{doc:#}");
    assert_eq!(timeouts["keys"][0]["numberOfSuccessfulCalls"], 1);
}

#[resil::circuit_breaker(name = "keyed-listed-bound", key = tenant)]
fn bounded(tenant: u32) -> Result<u32, PayError> {
    outcome(true)
}

#[tokio::test]
async fn the_keys_listed_are_bounded_by_max_keys() {
    let _reading = reading_every_table().await;
    init();
    for tenant in 0..50 {
        let _ = bounded(tenant);
    }
    let (_, doc) = actuator_json("/actuator/circuitbreakers").await;
    let keys = &doc["circuitBreakers"]["keyed-listed-bound"]["keys"];
    assert_eq!(keys.as_array().unwrap().len(), 4, "{doc:#}");
}

#[derive(Debug, PartialEq)]
enum OpError {
    Failed,
    Rejected,
}

impl From<Rejection> for OpError {
    fn from(_: Rejection) -> Self {
        OpError::Rejected
    }
}

static ATTEMPTS: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[resil::retry(name = "keyed-retry", key = host)]
async fn fetch(host: String) -> Result<u32, OpError> {
    ATTEMPTS.lock().unwrap().push(host.clone());
    if host == "down" {
        Err(OpError::Failed)
    } else {
        Ok(1)
    }
}

#[tokio::test(start_paused = true)]
async fn keyed_retries_retry_each_key_with_the_names_settings() {
    init();
    assert_eq!(fetch("down".to_owned()).await, Err(OpError::Failed));
    assert_eq!(fetch("up".to_owned()).await, Ok(1));
    assert_eq!(*ATTEMPTS.lock().unwrap(), ["down", "down", "down", "up"]);
    let t = table::<Retry>("keyed-retry");
    assert_eq!(t.keys(), ["down", "up"]);
    let down = t.find("down").unwrap().metrics();
    assert_eq!(down.number_of_failed_calls_with_retry_attempt(), 1);
    let up = t.find("up").unwrap().metrics();
    assert_eq!(up.number_of_successful_calls_without_retry_attempt(), 1);
    assert_eq!(up.number_of_failed_calls_with_retry_attempt(), 0);
}

#[resil::bulkhead(name = "keyed-bulkhead", key = shard)]
fn on_shard(shard: u32, then: Option<u32>) -> Result<u32, OpError> {
    match then {
        Some(next) => on_shard(next, None),
        None => Ok(shard),
    }
}

#[test]
fn keyed_bulkheads_limit_each_key_on_its_own() {
    init();
    // shard 1's only permit is taken by the outer call: shard 2 still has its own
    assert_eq!(on_shard(1, Some(2)), Ok(2));
    assert_eq!(on_shard(1, Some(1)), Err(OpError::Rejected));
    let t = table::<Bulkhead>("keyed-bulkhead");
    assert_eq!(t.keys(), ["1", "2"]);
    assert_eq!(
        t.find("1").unwrap().metrics().available_concurrent_calls(),
        1
    );
}

#[resil::rate_limiter(name = "keyed-limit", key = user)]
fn limited(user: &str) -> Result<u32, OpError> {
    Ok(1)
}

#[test]
fn keyed_rate_limiters_give_each_key_its_own_permits() {
    init();
    assert_eq!(limited("ann"), Ok(1));
    assert_eq!(limited("ann"), Err(OpError::Rejected));
    assert_eq!(limited("bob"), Ok(1));
    assert_eq!(limited("bob"), Err(OpError::Rejected));
    assert_eq!(table::<RateLimiter>("keyed-limit").keys(), ["ann", "bob"]);
}

#[resil::time_limiter(name = "keyed-timeout", key = region)]
async fn in_region(region: String, takes: Duration) -> Result<u32, OpError> {
    tokio::time::sleep(takes).await;
    Ok(u32::from(!region.is_empty()))
}

#[tokio::test(start_paused = true)]
async fn keyed_time_limiters_time_each_key_with_the_names_timeout() {
    init();
    assert_eq!(
        in_region("eu".to_owned(), Duration::from_secs(1)).await,
        Err(OpError::Rejected)
    );
    assert_eq!(
        in_region("us".to_owned(), Duration::from_millis(10)).await,
        Ok(1)
    );
    let t = table::<TimeLimiter>("keyed-timeout");
    assert_eq!(t.keys(), ["eu", "us"]);
    assert_eq!(
        t.find("eu").unwrap().config().timeout_duration(),
        Duration::from_millis(50)
    );
}

#[test]
fn bad_max_keys_and_key_label_values_are_rejected_with_file_key_and_value() {
    let load = |text: &str| {
        Resilience::builder()
            .file_contents("resilience.toml", text)
            .env_vars(Vec::<(String, String)>::new())
            .load()
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let zero = load("[circuitbreaker.instances.pay]\nmax-keys = 0\n");
    assert!(
        zero.contains("resilience.toml")
            && zero.contains("circuitbreaker.instances.pay.max-keys = 0")
            && zero.contains("at least 1"),
        "{zero}"
    );
    let in_config = load("[retry.configs.default]\nmax-keys = 0\n");
    assert!(
        in_config.contains("retry.configs.default.max-keys = 0"),
        "{in_config}"
    );
    let negative = load("[bulkhead.instances.pay]\nmax-keys = -3\n");
    assert!(
        negative.contains("bulkhead.instances.pay.max-keys = -3"),
        "{negative}"
    );
    let text = load("[ratelimiter.instances.pay]\nmax-keys = \"many\"\n");
    assert!(
        text.contains("ratelimiter.instances.pay.max-keys"),
        "{text}"
    );
    let label = load("[timelimiter.instances.pay]\nkey-label = \"yes\"\n");
    assert!(
        label.contains("timelimiter.instances.pay.key-label"),
        "{label}"
    );
}

#[test]
fn max_keys_and_key_label_are_inherited_and_reported() {
    let loaded = Resilience::builder()
        .file_contents(
            "resilience.toml",
            "[circuitbreaker.configs.base]\nmax-keys = 7\nkey-label = true\n\
             [circuitbreaker.instances.pay]\nbase-config = \"base\"\n",
        )
        .env_vars(Vec::<(String, String)>::new())
        .load()
        .unwrap();
    let extras = loaded
        .report()
        .instance(resil_config::Aspect::CircuitBreaker, "pay")
        .unwrap()
        .extras();
    assert_eq!(extras.max_keys, Some(7));
    assert_eq!(extras.key_label, Some(true));
}
