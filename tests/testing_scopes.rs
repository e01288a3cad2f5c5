//! Test scopes: the same annotated functions, tested in parallel in this
//! one binary, each test with its own thresholds, state and clock; none
//! sleeps for real. A scope that leaked into another test, or a call site
//! that used the global instance in a scope, fails these.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resil::Rejection;
use resil::circuit_breaker::State;
use resil::config::Aspect;
use resil::testing::TestScope;

#[derive(Debug, Clone, PartialEq)]
enum ApiError {
    Down,
    Rejected(&'static str),
}

impl From<Rejection> for ApiError {
    fn from(r: Rejection) -> Self {
        ApiError::Rejected(match r {
            Rejection::CallNotPermitted(_) => "CallNotPermitted",
            Rejection::RequestNotPermitted(_) => "RequestNotPermitted",
            Rejection::Timeout(_) => "Timeout",
            Rejection::MaxRetriesExceeded(_) => "MaxRetriesExceeded",
            Rejection::FaultInjected(_) => "FaultInjected",
            _ => "other",
        })
    }
}

/// A query that fails while `up` is false: one breaker for every test.
#[resil::circuit_breaker(name = "inventory-query")]
fn query(up: bool) -> Result<u32, ApiError> {
    if up { Ok(7) } else { Err(ApiError::Down) }
}

/// The same, async, under a retry and a time limiter.
#[resil::retry(name = "inventory-read")]
#[resil::time_limiter(name = "inventory-read")]
async fn read(calls: &AtomicU32, latency: Duration, up: bool) -> Result<u32, ApiError> {
    calls.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(latency).await;
    if up { Ok(9) } else { Err(ApiError::Down) }
}

#[resil::rate_limiter(name = "partner-api")]
fn partner() -> Result<u32, ApiError> {
    Ok(1)
}

#[resil::circuit_breaker(name = "tenant-query", key = tenant)]
fn tenant_query(tenant: &str, up: bool) -> Result<u32, ApiError> {
    let _ = tenant;
    if up { Ok(3) } else { Err(ApiError::Down) }
}

/// A breaker of `window` calls that opens at half of them failing.
fn breaker_scope(window: u32) -> TestScope {
    resil::testing::scope(&format!(
        r#"
[circuitbreaker.instances.inventory-query]
sliding-window-size = {window}
minimum-number-of-calls = {window}
failure-rate-threshold = 50
wait-duration-in-open-state = "30s"
"#
    ))
    .unwrap()
}

/// Failures until the breaker refuses: how many calls it let through.
fn calls_until_open() -> u32 {
    let mut n = 0;
    while query(false) == Err(ApiError::Down) {
        n += 1;
        assert!(n < 1000, "never opened");
    }
    n
}

#[test]
fn a_breaker_of_two_calls_opens_after_two() {
    let scope = breaker_scope(2);
    let _s = scope.enter();
    assert_eq!(calls_until_open(), 2);
    assert_eq!(query(true), Err(ApiError::Rejected("CallNotPermitted")));
}

#[test]
fn a_breaker_of_ten_calls_opens_after_ten() {
    let scope = breaker_scope(10);
    let _s = scope.enter();
    assert_eq!(calls_until_open(), 10);
}

#[test]
fn a_breaker_of_five_hundred_calls_opens_after_five_hundred() {
    let scope = breaker_scope(500);
    let _s = scope.enter();
    assert_eq!(calls_until_open(), 500);
}

#[test]
fn the_wait_in_open_passes_on_the_scopes_clock_alone() {
    let scope = breaker_scope(4);
    let _s = scope.enter();
    calls_until_open();
    let breaker = scope
        .registries()
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    assert_eq!(breaker.state(), State::Open);
    scope.advance(Duration::from_secs(29));
    assert_eq!(query(true), Err(ApiError::Rejected("CallNotPermitted")));
    scope.advance(Duration::from_secs(2));
    assert_eq!(
        query(true),
        Ok(7),
        "half open after 30 s of the scope's clock"
    );
    assert_eq!(breaker.state(), State::HalfOpen);
    let transitions: Vec<String> = scope
        .events()
        .into_iter()
        .filter(|e| e.event_type() == "StateTransition")
        .map(|e| format!("{:?}@{:?}", e.aspect(), e.at()))
        .collect();
    assert_eq!(
        transitions,
        ["CircuitBreaker@0ns", "CircuitBreaker@31s"],
        "CLOSED→OPEN at 0, OPEN→HALF_OPEN at 31 s"
    );
}

#[test]
fn a_name_the_scope_does_not_configure_gets_its_defaults_there() {
    let scope = resil::testing::scope("").unwrap();
    let _s = scope.enter();
    // the library default: a window of 100 calls, 100 before it decides
    assert_eq!(calls_until_open(), 100);
    assert!(
        resil::registries()
            .circuit_breakers()
            .find("inventory-query")
            .is_none_or(|b| b.metrics().number_of_failed_calls() == 0),
        "the global breaker saw none of the scope's calls"
    );
}

#[test]
fn outside_any_scope_the_global_instance_is_used() {
    // this thread enters no scope, while the others do
    for _ in 0..3 {
        assert_eq!(query(true), Ok(7));
    }
    let global = resil::registries()
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    assert!(global.metrics().number_of_successful_calls() >= 3);
    assert_eq!(global.metrics().number_of_failed_calls(), 0);
}

#[test]
fn a_rate_limiter_of_three_permits_a_cycle() {
    let scope = resil::testing::scope(
        r#"
[ratelimiter.instances.partner-api]
limit-for-period = 3
limit-refresh-period = "1s"
timeout-duration = 0
"#,
    )
    .unwrap();
    let _s = scope.enter();
    let admitted = (0..10).filter(|_| partner().is_ok()).count();
    assert_eq!(admitted, 3);
    scope.advance(Duration::from_secs(1));
    assert_eq!((0..10).filter(|_| partner().is_ok()).count(), 3);
}

#[test]
fn a_rate_limiter_of_seven_permits_a_cycle() {
    let scope = resil::testing::scope(
        r#"
[ratelimiter.instances.partner-api]
limit-for-period = 7
limit-refresh-period = "1s"
timeout-duration = 0
"#,
    )
    .unwrap();
    let _s = scope.enter();
    assert_eq!((0..10).filter(|_| partner().is_ok()).count(), 7);
}

#[test]
fn keyed_instances_belong_to_the_scope() {
    let scope = resil::testing::scope(
        r#"
[circuitbreaker.instances.tenant-query]
sliding-window-size = 2
minimum-number-of-calls = 2
"#,
    )
    .unwrap();
    let _s = scope.enter();
    assert!(tenant_query("acme", false).is_err());
    assert!(tenant_query("acme", false).is_err());
    assert_eq!(
        tenant_query("acme", true),
        Err(ApiError::Rejected("CallNotPermitted"))
    );
    assert_eq!(tenant_query("globex", true), Ok(3), "another key, closed");
}

#[test]
fn faults_of_the_scope_apply_to_its_call_sites_only() {
    let scope = resil::testing::scope(
        r#"
[fault.instances.inventory-query]
enabled = true
abort-percent = 100
"#,
    )
    .unwrap();
    {
        let _s = scope.enter();
        assert_eq!(query(true), Err(ApiError::Rejected("FaultInjected")));
    }
    assert_eq!(query(true), Ok(7), "no fault outside the scope");
}

#[tokio::test(start_paused = true)]
async fn a_time_limiter_and_retry_on_tokios_paused_clock() {
    let scope = resil::testing::scope(
        r#"
[timelimiter.instances.inventory-read]
timeout-duration = "100ms"

[retry.instances.inventory-read]
max-attempts = 3
wait-duration = "1s"
"#,
    )
    .unwrap()
    .tokio_time();
    let calls = AtomicU32::new(0);
    let started = scope.now();
    let out = scope
        .run(read(&calls, Duration::from_millis(500), true))
        .await;
    assert_eq!(
        out,
        Err(ApiError::Rejected("Timeout")),
        "the last attempt's error"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // three timeouts of 100 ms and two waits of a second, on paused time
    assert_eq!(scope.now() - started, Duration::from_millis(2300));
    let retries = scope
        .events()
        .iter()
        .filter(|e| e.aspect() == Aspect::Retry && e.event_type() == "Retry")
        .count();
    assert_eq!(retries, 2);
}

#[tokio::test(start_paused = true)]
async fn the_same_function_with_one_attempt_in_another_scope() {
    let scope = resil::testing::scope(
        r#"
[timelimiter.instances.inventory-read]
timeout-duration = "1s"

[retry.instances.inventory-read]
max-attempts = 1
"#,
    )
    .unwrap()
    .tokio_time();
    let calls = AtomicU32::new(0);
    let out = scope
        .run(read(&calls, Duration::from_millis(500), false))
        .await;
    assert_eq!(out, Err(ApiError::Down));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// A write that never ends, its time limiter around its bulkhead.
#[resil::time_limiter(name = "hung-write")]
#[resil::bulkhead(name = "hung-write")]
async fn hung_write() -> Result<u32, ApiError> {
    std::future::pending().await
}

/// The time limiter of an annotated function (one that could leave its
/// body running, here configured to cancel it) gives the call up: for the
/// adaptive bulkhead inside, that is a drop, which lowers its limit.
#[tokio::test(start_paused = true)]
async fn a_timeout_is_a_drop_for_the_adaptive_bulkhead_inside() {
    use resil::bulkhead::Sample;
    let scope = resil::testing::scope(
        r#"
[timelimiter.instances.hung-write]
timeout-duration = "20ms"

[bulkhead.instances.hung-write]
limit-algorithm = "aimd"
initial-concurrent-calls = 2
max-concurrent-calls = 100
min-window-time = "100ms"
max-window-time = "100ms"
"#,
    )
    .unwrap()
    .tokio_time();
    let bulkhead = scope.registries().bulkheads().bulkhead("hung-write");
    // A first window closed, then nine 10 ms calls of the next, one in
    // flight at a time: the next call to end, 20 ms on, closes it.
    for _ in 0..10 {
        let permit = bulkhead.try_acquire_permission().unwrap();
        tokio::time::advance(Duration::from_millis(10)).await;
        permit.finish_with(Sample::Success);
    }
    tokio::time::advance(Duration::from_millis(10)).await;
    let out = scope.run(hung_write()).await;
    assert_eq!(out, Err(ApiError::Rejected("Timeout")));
    assert_eq!(
        bulkhead.metrics().max_allowed_concurrent_calls(),
        1,
        "⌊2 × 0.9⌋: the call the time limiter gave up on was a drop"
    );
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
}
