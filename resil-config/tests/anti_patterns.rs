//! The anti-patterns that the configuration alone
//! shows are start-up warnings at the instance they are about (errors in
//! strict mode), and nothing is said of a configuration without them.

use resil_config::{Aspect, ConfigProblem, Declaration, Resilience};

fn warnings(toml: &str) -> Vec<ConfigProblem> {
    Resilience::builder()
        .file_contents("resilience.toml", toml)
        .env_vars(Vec::<(String, String)>::new())
        .offline(true)
        .load()
        .unwrap_or_else(|e| panic!("{e}"))
        .report()
        .warnings()
        .to_vec()
}

#[test]
fn a_retry_that_retries_the_refusals_inside_it() {
    let w = warnings(
        "[retry.instances.orders]\nmax-attempts = 3\n[circuitbreaker.instances.orders]\n[ratelimiter.instances.orders]\n",
    );
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].key(), "retry.instances.orders");
    assert!(
        w[0].message().starts_with(
            "retries every error, the refusals of the circuit breaker and rate limiter `orders` inside it included (CallNotPermitted, RequestNotPermitted)"
        ),
        "{}",
        w[0]
    );
    // the remedies, and the cases with nothing to say
    for quiet in [
        "[retry.instances.orders]\nretry-errors = [\"ConnectionRefused\"]\n[circuitbreaker.instances.orders]\n",
        "[retry.instances.orders]\nignore-errors = [\"CallNotPermitted\"]\n[circuitbreaker.instances.orders]\n",
        "[retry.instances.orders]\nmax-attempts = 1\n[circuitbreaker.instances.orders]\n",
        "[retry.instances.orders]\n[circuitbreaker.instances.payments]\n",
    ] {
        assert!(warnings(quiet).is_empty(), "{quiet}: {:?}", warnings(quiet));
    }
    // only the refusals not ignored are named
    let w = warnings(
        "[retry.instances.orders]\nignore-errors = [\"BulkheadFull\"]\n[bulkhead.instances.orders]\n[circuitbreaker.instances.orders]\n",
    );
    assert!(w[0].message().contains("(CallNotPermitted)"), "{}", w[0]);
}

#[test]
fn a_thread_pool_queue_that_cannot_drain_within_the_timeout() {
    let w = warnings(
        r#"
[thread-pool-bulkhead.instances.report]
core-thread-pool-size = 1
max-thread-pool-size = 2
queue-capacity = 10
[timelimiter.instances.report]
timeout-duration = "2s"
"#,
    );
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].key(), "thread-pool-bulkhead.instances.report");
    assert!(
        w[0].message()
            .starts_with("a full queue of 10 tasks on 2 threads drains in 5 rounds; when the tasks take as long as time limiter `report` allows (2s)"),
        "{}",
        w[0]
    );
    for quiet in [
        "[thread-pool-bulkhead.instances.report]\ncore-thread-pool-size = 1\nmax-thread-pool-size = 2\nqueue-capacity = 2\n[timelimiter.instances.report]\n",
        "[thread-pool-bulkhead.instances.report]\ncore-thread-pool-size = 1\nmax-thread-pool-size = 2\nqueue-capacity = 10\n",
    ] {
        assert!(warnings(quiet).is_empty(), "{quiet}: {:?}", warnings(quiet));
    }
}

#[test]
fn strict_mode_makes_them_errors() {
    let err = Resilience::builder()
        .file_contents(
            "resilience.toml",
            "[retry.instances.orders]\n[circuitbreaker.instances.orders]\n",
        )
        .env_vars(Vec::<(String, String)>::new())
        .offline(true)
        .strict(true)
        .load()
        .unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    assert_eq!(err.problems()[0].key(), "retry.instances.orders");
}

/// The warnings of `file` (named `name`), loaded against `declarations`.
fn warnings_of(
    name: &str,
    file: &str,
    declarations: &[&'static Declaration],
) -> Vec<ConfigProblem> {
    Resilience::builder()
        .file_contents(name, file)
        .env_vars(Vec::<(String, String)>::new())
        .declarations(declarations.iter().copied())
        // with no declarations, nothing is said of undeclared instances
        .offline(declarations.is_empty())
        .load()
        .unwrap_or_else(|e| panic!("{e}"))
        .report()
        .warnings()
        .to_vec()
}

/// The first line of the error `file` gets.
fn error_of(file: &str) -> String {
    Resilience::builder()
        .file_contents("resilience.toml", file)
        .env_vars(Vec::<(String, String)>::new())
        .offline(true)
        .load()
        .map(|_| ())
        .unwrap_err()
        .to_string()
}

const SPRING: &str = r#"
resilience4j:
  circuitbreaker:
    instances:
      inventory-query:
        failure-rate-threshold: 50
management:
  endpoints:
    web:
      exposure:
        include: health,metrics,prometheus,circuitbreakers
server:
  port: 8081
"#;

#[test]
fn an_application_yml_management_block_and_other_ignored_keys_are_warnings() {
    let w = warnings_of("application.yml", SPRING, &[]);
    let keys: Vec<&str> = w.iter().map(|w| w.key()).collect();
    assert_eq!(keys, ["management", "server"], "{w:?}");
    assert_eq!(w[0].source(), "application.yml");
    assert!(
        w[0].message().starts_with(
            "is not read by resil: the actuator's routes are chosen in code (`resil::actuator::Actuator::builder()`"
        ) && w[0]
            .message()
            .contains("not by Spring Boot's `management.endpoints.web.exposure.include`"),
        "{}",
        w[0]
    );
    assert_eq!(
        w[1].message(),
        "is not read by resil, which reads only `resilience4j` and `spring.cloud.circuitbreaker.resilience4j`: this key has no effect"
    );
    // the Spring Cloud settings are read: no word of `spring`; the rest of
    // `spring:` alone is not
    let cloud = "resilience4j:\n  retry:\n    instances:\n      a: {}\nspring:\n  cloud:\n    circuitbreaker:\n      resilience4j:\n        disable-time-limiter: true\n";
    assert!(warnings_of("application.yml", cloud, &[]).is_empty());
    let app = "resilience4j:\n  retry:\n    instances:\n      a: {}\nspring:\n  application:\n    name: orders\n";
    let w = warnings_of("application.yml", app, &[]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].key(), "spring");
    // a TOML file under `resilience4j` says the same of its other tables
    let toml = "[resilience4j.retry.instances.a]\n[management.endpoints]\nx = 1\n";
    let w = warnings_of("resilience.toml", toml, &[]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].key(), "management");
    // strict mode refuses them, naming the key
    let err = Resilience::builder()
        .file_contents("application.yml", SPRING)
        .env_vars(Vec::<(String, String)>::new())
        .offline(true)
        .strict(true)
        .load()
        .unwrap_err();
    assert_eq!(err.problems().len(), 2, "{err}");
}

const SEARCH: Declaration = Declaration {
    aspect: Aspect::CircuitBreaker,
    name: "backend",
    module: "shop::search",
    function: "search",
    file: "src/search.rs",
    line: 12,
    fallback: None,
    error_type: "ShopError",
    error_kinds: &[],
    detachable: false,
};
const PAY: Declaration = Declaration {
    module: "shop::payments",
    function: "charge",
    file: "src/payments.rs",
    line: 40,
    ..SEARCH
};
const SEARCH_RETRY: Declaration = Declaration {
    aspect: Aspect::Retry,
    name: "lookup",
    line: 11,
    ..SEARCH
};
const PAY_RETRY: Declaration = Declaration {
    aspect: Aspect::Retry,
    name: "lookup",
    line: 39,
    ..PAY
};

#[test]
fn one_breaker_name_for_two_functions_is_a_warning_naming_both() {
    let w = warnings_of(
        "resilience.toml",
        "[circuitbreaker.instances.backend]\nfailure-rate-threshold = 40\n",
        &[&SEARCH, &PAY, &SEARCH_RETRY, &PAY_RETRY],
    );
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].key(), "circuitbreaker.instances.backend");
    assert_eq!(
        w[0].message(),
        "circuit breaker `backend` is declared by 2 different functions, `shop::payments::charge` at src/payments.rs:40 and `shop::search::search` at src/search.rs:12: they share one window, so one failing downstream opens the breaker for all of them and a healthy one hides another's failures; give each downstream its own name, or say `shared = true` on `circuitbreaker.instances.backend` if they call the same downstream"
    );
    // also for a name no table configures
    let w = warnings_of("resilience.toml", "", &[&SEARCH, &PAY]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].key(), "circuitbreaker.instances.backend");
    // said on purpose: no warning, whether on the instance or inherited
    for quiet in [
        "[circuitbreaker.instances.backend]\nshared = true\n",
        "[circuitbreaker.configs.default]\nshared = true\n",
    ] {
        let w = warnings_of("resilience.toml", quiet, &[&SEARCH, &PAY]);
        assert!(w.is_empty(), "{quiet}: {w:?}");
    }
    // one function, or a retry name shared by two: nothing to say
    assert!(warnings_of("resilience.toml", "", &[&SEARCH, &SEARCH_RETRY]).is_empty());
    assert!(warnings_of("resilience.toml", "", &[&SEARCH_RETRY, &PAY_RETRY]).is_empty());
}

#[test]
fn a_bulkhead_wider_than_its_connection_pool_is_a_warning_with_both_numbers() {
    let w = warnings("[bulkhead.instances.db]\nmax-concurrent-calls = 20\npool-size = 10\n");
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].key(), "bulkhead.instances.db.pool-size");
    assert_eq!(w[0].value(), Some("10"));
    assert!(
        w[0].message().starts_with(
            "bulkhead `db` admits 20 concurrent calls (`max-concurrent-calls`) but its connection pool holds 10 (`pool-size`): the 10 calls past the pool wait for a connection inside the bulkhead"
        ),
        "{}",
        w[0]
    );
    // inherited from a base, the warning is at the base's key
    let w = warnings(
        "[bulkhead.configs.db]\npool-size = 5\n[bulkhead.instances.orders]\nbase-config = \"db\"\nmax-concurrent-calls = 8\n",
    );
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].key(), "bulkhead.configs.db.pool-size");
    assert!(
        w[0].message().contains("admits 8 concurrent calls"),
        "{}",
        w[0]
    );
    for quiet in [
        "[bulkhead.instances.db]\nmax-concurrent-calls = 10\npool-size = 10\n",
        "[bulkhead.instances.db]\nmax-concurrent-calls = 20\n",
        // the default, 25, within the pool
        "[bulkhead.instances.db]\npool-size = 30\n",
    ] {
        assert!(warnings(quiet).is_empty(), "{quiet}: {:?}", warnings(quiet));
    }
    // the default, 25, past it
    let w = warnings("[bulkhead.instances.db]\npool-size = 16\n");
    assert!(
        w[0].message().contains("admits 25 concurrent calls"),
        "{w:?}"
    );
}

#[test]
fn shared_and_pool_size_of_the_wrong_type_are_errors_with_key_and_value() {
    for (file, key) in [
        (
            "[circuitbreaker.instances.backend]\nshared = \"yes\"\n",
            "resilience.toml: circuitbreaker.instances.backend.shared = \"yes\"",
        ),
        (
            "[circuitbreaker.configs.default]\nshared = 1\n",
            "resilience.toml: circuitbreaker.configs.default.shared = 1",
        ),
        (
            "[bulkhead.instances.db]\npool-size = \"ten\"\n",
            "resilience.toml: bulkhead.instances.db.pool-size = \"ten\"",
        ),
        (
            "[bulkhead.instances.db]\npool-size = -1\n",
            "resilience.toml: bulkhead.instances.db.pool-size = -1",
        ),
        (
            "[bulkhead.instances.db]\npool-size = 0\n",
            "resilience.toml: bulkhead.instances.db.pool-size = 0: `pool-size` must be at least 1",
        ),
        // the keys belong to their aspect only
        (
            "[bulkhead.instances.db]\nshared = true\n",
            "resilience.toml: bulkhead.instances.db.shared = true: unknown bulkhead setting",
        ),
        (
            "[circuitbreaker.instances.db]\npool-size = 10\n",
            "resilience.toml: circuitbreaker.instances.db.pool-size = 10: unknown circuit_breaker setting",
        ),
    ] {
        let e = error_of(file);
        assert!(e.contains(key), "{file}: {e}");
    }
}
