//! `/actuator/resilience`: every call site with its stack, every instance
//! with its configuration, current settings and state, the file's
//! warnings, and the retry budget a retry spends.

use std::sync::Arc;

use axum::http::StatusCode;
use resil::actuator::Actuator;
use resil::clock::ManualClock;
use resil::config::Resilience;
use serde_json::{Value, json};

mod support_actuator;

use support_actuator::{closed_details, fixture, get, open_details};

/// The settings of a circuit breaker of this file's configuration.
fn breaker_settings(window: &str) -> Value {
    json!({
        "automatic-transition-from-open-to-half-open-enabled": "false",
        "event-consumer-buffer-size": "100",
        "initial-state": "CLOSED",
        "failure-rate-threshold": "50",
        "ignore-errors": "[]",
        "max-wait-duration-in-half-open-state": "0ms",
        "minimum-number-of-calls": window,
        "permitted-number-of-calls-in-half-open-state": "10",
        "record-errors": "[]",
        "sliding-window-size": window,
        "sliding-window-type": "COUNT_BASED",
        "slow-call-duration-threshold": "1m",
        "slow-call-rate-threshold": "100",
        "wait-duration-in-open-state": "1m",
    })
}

/// An instance as `/actuator/resilience` lists it, configured in this file.
fn instance(name: &str, settings: Value, tags: Value, state: Value, used_by: &[&str]) -> Value {
    json!({
        "chain": [format!("instances.{name}")],
        "configured": true,
        "settings": settings,
        "state": state,
        "tags": tags,
        "usedBy": used_by,
    })
}

#[tokio::test]
async fn resilience_shows_call_sites_with_configuration_and_state() {
    let f = fixture();
    f.trip("payment");
    let router = f.actuator().expose_sources(true).build().router();
    let (status, body) = get(&router, "/actuator/resilience").await;
    assert_eq!(status, StatusCode::OK);
    let retry_settings = json!({
        "event-consumer-buffer-size": "100",
        "shadow": "false",
        "fail-after-max-attempts": "false",
        "ignore-errors": "[]",
        "max-attempts": "3",
        "retry-errors": "[]",
        "wait-duration": "100ms",
    });
    let retry_state = json!({
        "numberOfFailedCallsWithRetryAttempt": 0,
        "numberOfFailedCallsWithoutRetryAttempt": 0,
        "numberOfSuccessfulCallsWithRetryAttempt": 0,
        "numberOfSuccessfulCallsWithoutRetryAttempt": 0,
        "numberOfTotalCalls": 0,
    });
    let env = json!({"env": "test"});
    let query = ["inventory::query"];
    let unused = |table: &str, name: &str| {
        format!(
            "resilience.toml: {table}.instances.{name}: no protected function in this binary declares {table} `{name}` (a crate that the binary never names is not linked: add `use that_crate as _;`)"
        )
    };
    let expected = json!({
        "callSites": [{
            "errorType": "InventoryError",
            "file": "src/inventory.rs",
            "function": "inventory::query",
            "line": 10,
            "stack": [
                {"aspect": "retry", "name": "inventory-query", "line": 10,
                 "chain": ["instances.inventory-query"], "configured": true,
                 "settings": retry_settings, "state": retry_state, "tags": {}},
                {"aspect": "circuitbreaker", "name": "inventory-query", "line": 11,
                 "fallback": "Self::unknown",
                 "chain": ["instances.inventory-query"], "configured": true,
                 "settings": breaker_settings("2"), "state": closed_details("50.0%"), "tags": env},
            ],
        }],
        "instances": {
            "circuitbreaker": {
                "inventory-query": instance("inventory-query", breaker_settings("2"), env.clone(), closed_details("50.0%"), &query),
                "payment": instance("payment", breaker_settings("2"), env.clone(), open_details(), &[]),
                "unlisted": instance("unlisted", breaker_settings("100"), env.clone(), closed_details("50.0%"), &[]),
            },
            "retry": {
                "inventory-query": instance("inventory-query", retry_settings, json!({}), retry_state, &query),
            },
            "bulkhead": {
                "inventory-query": instance(
                    "inventory-query",
                    json!({
                        "event-consumer-buffer-size": "100",
                        "shadow": "false",
                        "fair-call-handling-enabled": "true",
                        "limit-algorithm": "fixed",
                        "max-concurrent-calls": "2",
                        "max-wait-duration": "0ms",
                    }),
                    json!({}),
                    json!({"availableConcurrentCalls": 2, "maxAllowedConcurrentCalls": 2}),
                    &[],
                ),
            },
            "thread-pool-bulkhead": {
                "report-export": instance(
                    "report-export",
                    json!({
                        "core-thread-pool-size": "1",
                        "event-consumer-buffer-size": "100",
                        "shadow": "false",
                        "keep-alive-duration": "20ms",
                        "max-thread-pool-size": "2",
                        "queue-capacity": "5",
                    }),
                    json!({}),
                    json!({
                        "activeThreadCount": 0, "availableThreadCount": 2,
                        "coreThreadPoolSize": 1, "maximumThreadPoolSize": 2,
                        "queueCapacity": 5, "queueDepth": 0,
                        "remainingQueueCapacity": 5, "threadPoolSize": 0,
                    }),
                    &[],
                ),
            },
            "ratelimiter": {
                "inventory-query": instance(
                    "inventory-query",
                    json!({
                        "event-consumer-buffer-size": "100",
                        "shadow": "false",
                        "limit-for-period": "2",
                        "limit-refresh-period": "1s",
                        "timeout-duration": "0ms",
                    }),
                    json!({}),
                    json!({"availablePermissions": 2, "numberOfWaitingThreads": 0}),
                    &[],
                ),
            },
            "timelimiter": {
                "inventory-query": instance(
                    "inventory-query",
                    json!({
                        "cancel-running-future": "true",
                        "event-consumer-buffer-size": "100",
                        "shadow": "false",
                        "timeout-duration": "800ms",
                    }),
                    json!({}),
                    json!({"numberOfFailedCalls": 0, "numberOfSuccessfulCalls": 0, "numberOfTimeoutCalls": 0}),
                    &[],
                ),
            },
            "hedge": {},
            "deadline": {},
        },
        "cloud": {
            "default-group-tag": "none",
            "disable-thread-pool": "false",
            "disable-time-limiter": "false",
            "enable-group-meter-filter": "false",
            "enable-semaphore-default-bulkhead": "false",
            "executor-max-threads": "64",
            "executor-queue-capacity": "0",
        },
        "source": {
            "declarations": 2,
            "envOverrides": [],
            "file": "resilience.toml",
            "warnings": [
                unused("bulkhead", "inventory-query"),
                unused("circuitbreaker", "payment"),
                unused("circuitbreaker", "unlisted"),
                unused("ratelimiter", "inventory-query"),
                "resilience.toml: retry.instances.inventory-query: retries every error, the refusals of the circuit breaker, bulkhead and rate limiter `inventory-query` inside it included (CallNotPermitted, BulkheadFull, RequestNotPermitted): retrying a refusal adds load exactly when the downstream needs less (the anti-pattern 'retry every exception'); name the errors worth retrying in `retry-errors`, or list the refusals in `ignore-errors`".to_owned(),
                unused("thread-pool-bulkhead", "report-export"),
                unused("timelimiter", "inventory-query"),
            ],
        },
    });
    assert_eq!(body, expected);

    // a live change shows: the settings are the instance's current ones
    let limiter = f.registries.rate_limiters().rate_limiter("inventory-query");
    limiter.change_limit_for_period(7).unwrap();
    let (_, body) = get(&f.router(), "/actuator/resilience").await;
    assert_eq!(
        body["instances"]["ratelimiter"]["inventory-query"]["settings"]["limit-for-period"],
        "7"
    );
}

#[tokio::test]
async fn a_retry_shows_the_budget_it_spends() {
    let clock = ManualClock::new();
    let loaded = Resilience::builder()
        .file_contents(
            "resilience.toml",
            "[retrybudget.instances.downstream]\nratio = 0.5\nmin-retries-per-second = 0\n[retry.instances.lookup]\nmax-attempts = 3\nwait-duration = 0\nbudget = \"downstream\"\n[timelimiter.instances.lookup]\n",
        )
        .env_vars(Vec::<(String, String)>::new())
        .offline(true)
        .clock(clock)
        .load()
        .unwrap();
    let (registries, report) = loaded.into_parts();
    let retry = registries.retries().retry("lookup");
    // half a retry earned: the first retry is denied
    let _ = retry.call(|| Err::<(), _>("unavailable"));
    let router = Actuator::builder()
        .registries(Arc::new(registries))
        .report(report)
        .build()
        .router();
    let (status, body) = get(&router, "/actuator/resilience").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["instances"]["retry"]["lookup"]["state"]["retryBudget"],
        json!({"name": "downstream", "balance": 0, "denied": 1}),
        "{body:#}"
    );
    assert_eq!(
        body["instances"]["retry"]["lookup"]["settings"]["budget"],
        json!("downstream")
    );
}
