//! `[cloud]` and `spring.cloud.circuitbreaker.resilience4j`: read from an
//! application.yml where Spring Cloud reads them, overridden from the
//! environment, and every mistake refused with its file, key path and value.

use std::sync::Arc;

use resil::cloud::{BlockingBulkhead, CircuitBreakerFactory};

mod support_cloud;

use support_cloud::{load, window};

/// The settings load from an application.yml where Spring Cloud reads them.
#[test]
fn application_yml_is_read_where_spring_cloud_reads_it() {
    let yml = r#"
spring:
  application:
    name: order-service
  cloud:
    circuitbreaker:
      resilience4j:
        enableSemaphoreDefaultBulkhead: true
        disableTimeLimiterMap:
          inventory-reserve: true
resilience4j:
  circuitbreaker:
    configs:
      inventory-service:
        slidingWindowSize: 9
"#;
    let r = load("application.yml", yml, &[]).unwrap();
    let cloud = r.cloud();
    assert!(cloud.enable_semaphore_default_bulkhead());
    assert!(cloud.is_time_limiter_disabled("inventory-reserve", "inventory-service"));
    let f = CircuitBreakerFactory::builder()
        .registries(Arc::new(r))
        .build();
    let b = f.create_in_group("inventory-query", "inventory-service");
    assert_eq!(window(&b), 9);
    assert!(matches!(b.bulkhead(), BlockingBulkhead::Semaphore(_)));

    // with only Spring Cloud's settings and no resilience4j tree
    let only = "spring:\n  cloud:\n    circuitbreaker:\n      resilience4j:\n        executorMaxThreads: 4\n";
    assert_eq!(
        load("application.yml", only, &[])
            .unwrap()
            .cloud()
            .executor_max_threads(),
        4
    );
}

/// `RESIL_CLOUD__...` overrides, validated as the file is.
#[test]
fn environment_overrides_reach_cloud() {
    let r = load(
        "resilience.toml",
        "[cloud]\nexecutor-max-threads = 8\n",
        &[
            ("RESIL_CLOUD__EXECUTOR_MAX_THREADS", "3"),
            (
                "RESIL_CLOUD__DISABLE_TIME_LIMITER_MAP__INVENTORY_RESERVE",
                "true",
            ),
        ],
    )
    .unwrap();
    assert_eq!(r.cloud().executor_max_threads(), 3);
    assert!(r.cloud().is_time_limiter_disabled("inventory-reserve", "g"));

    let err = load(
        "resilience.toml",
        "",
        &[("RESIL_CLOUD__EXECUTOR_MAX_THREAD", "3")],
    )
    .unwrap_err();
    let p = &err.problems()[0];
    assert_eq!(p.source(), "env RESIL_CLOUD__EXECUTOR_MAX_THREAD");
    assert!(
        p.message().contains("did you mean `executor-max-threads`"),
        "{p}"
    );
    let err = load(
        "resilience.toml",
        "",
        &[("RESIL_CLOUD__EXECUTOR_MAX_THREADS", "many")],
    )
    .unwrap_err();
    let p = &err.problems()[0];
    assert_eq!(
        (p.source(), p.key()),
        (
            "env RESIL_CLOUD__EXECUTOR_MAX_THREADS",
            "cloud.executor-max-threads"
        )
    );
    assert_eq!(p.value(), Some("\"many\""));
}

/// Every mistake in `[cloud]`, at once, each with file, key path and value.
#[test]
fn bad_cloud_keys_are_rejected_with_file_key_path_and_value() {
    let err = load(
        "resilience.toml",
        r#"
        [cloud]
        disable-thread-pol = true
        disable-time-limiter = "sometimes"
        executor-max-threads = 0
        executor-queue-capacity = -1
        default-group-tag = ""
        [cloud.disable-time-limiter-map]
        inventory-reserve = 1
        "#,
        &[],
    )
    .unwrap_err();
    let problems: Vec<(String, String, Option<String>, String)> = err
        .problems()
        .iter()
        .map(|p| {
            (
                p.source().to_owned(),
                p.key().to_owned(),
                p.value().map(str::to_owned),
                p.message().to_owned(),
            )
        })
        .collect();
    let find = |key: &str| {
        problems
            .iter()
            .find(|p| p.1 == key)
            .unwrap_or_else(|| panic!("no problem at {key}: {problems:#?}"))
    };
    assert!(problems.iter().all(|p| p.0 == "resilience.toml"));
    assert!(
        find("cloud.disable-thread-pol")
            .3
            .contains("did you mean `disable-thread-pool`")
    );
    let p = find("cloud.disable-time-limiter");
    assert_eq!(
        (p.2.as_deref(), p.3.as_str()),
        (Some("\"sometimes\""), "expected true or false")
    );
    let p = find("cloud.executor-max-threads");
    assert_eq!(p.2.as_deref(), Some("0"));
    assert!(p.3.contains("from 1 to 10000"), "{}", p.3);
    assert_eq!(
        find("cloud.executor-queue-capacity").2.as_deref(),
        Some("-1")
    );
    assert!(
        find("cloud.default-group-tag")
            .3
            .contains("must not be empty")
    );
    assert_eq!(
        find("cloud.disable-time-limiter-map.inventory-reserve")
            .2
            .as_deref(),
        Some("1")
    );
    assert_eq!(problems.len(), 6, "{problems:#?}");

    // in an application.yml, the path is Spring Cloud's
    let yml = "spring:\n  cloud:\n    circuitbreaker:\n      resilience4j:\n        disableThreadPool: maybe\n";
    let err = load("application.yml", yml, &[]).unwrap_err();
    let p = &err.problems()[0];
    assert_eq!(
        (p.source(), p.key(), p.value()),
        (
            "application.yml",
            "spring.cloud.circuitbreaker.resilience4j.disableThreadPool",
            Some("\"maybe\"")
        )
    );
}

/// A refused file leaves nothing half-applied: `init`-style loading fails whole.
#[test]
fn a_bad_cloud_key_fails_the_whole_load() {
    let err = load(
        "resilience.toml",
        "[cloud]\nexecutor-max-threads = 0\n[circuitbreaker.configs.default]\nsliding-window-size = 0\n",
        &[],
    )
    .unwrap_err();
    let keys: Vec<&str> = err.problems().iter().map(|p| p.key()).collect();
    assert!(keys.contains(&"cloud.executor-max-threads"), "{keys:?}");
    assert!(
        keys.iter()
            .any(|k| k.starts_with("circuitbreaker.configs.default")),
        "{keys:?}"
    );
}
