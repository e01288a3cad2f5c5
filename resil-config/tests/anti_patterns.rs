//! The seed's anti-patterns (its section 32) that the configuration alone
//! shows are start-up warnings at the instance they are about (errors in
//! strict mode), and nothing is said of a configuration without them.

use resil_config::{ConfigProblem, Resilience};

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
