//! The signals beyond Resilience4j's meters (`resil_*`), as the example's
//! `/actuator/prometheus` would show them: physical retry attempts,
//! rejections per kind, fallbacks by layer, cause and outcome, the thread-pool
//! queue's oldest task, and nested retries (with their once-per-pair
//! warning). One process, one recorder, one set of global registries on a
//! `ManualClock`.

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use resil::actuator::metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use resil::clock::ManualClock;
use resil::config::Resilience;
use resil::{Error, Rejection};

#[derive(Debug, Clone, PartialEq, resil::Classify)]
enum ApiError {
    Unavailable,
    Rejected(String),
}

impl From<Rejection> for ApiError {
    fn from(r: Rejection) -> Self {
        ApiError::Rejected(r.to_string())
    }
}

const CONFIG: &str = r#"
[retry.instances.sig-retry]
max-attempts = 3
wait-duration = "100ms"
[retry.instances.sig-outer]
max-attempts = 2
wait-duration = 0
[retry.instances.sig-inner]
max-attempts = 2
wait-duration = 0
[bulkhead.instances.sig-bulkhead]
max-concurrent-calls = 0
[bulkhead.instances.sig-fallback]
max-concurrent-calls = 0
[ratelimiter.instances.sig-limiter]
limit-for-period = 1
limit-refresh-period = "1h"
timeout-duration = 0
[circuitbreaker.instances.sig-breaker]
minimum-number-of-calls = 1
sliding-window-size = 1
[thread-pool-bulkhead.instances.sig-pool]
core-thread-pool-size = 1
max-thread-pool-size = 1
queue-capacity = 1
"#;

/// The log lines written through `tracing`.
static LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct Log;
impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn setup() -> (&'static PrometheusHandle, &'static ManualClock) {
    static SETUP: OnceLock<(PrometheusHandle, ManualClock)> = OnceLock::new();
    let (handle, clock) = SETUP.get_or_init(|| {
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(|| Log)
            .init();
        let handle = PrometheusBuilder::new().install_recorder().unwrap();
        let clock = ManualClock::new();
        Resilience::builder()
            .file_contents("resilience.toml", CONFIG)
            .env_vars(Vec::<(String, String)>::new())
            .clock(clock.clone())
            .init()
            .unwrap();
        (handle, clock)
    });
    (handle, clock)
}

/// The value of one series, after a refresh.
fn value(handle: &PrometheusHandle, series: &str) -> f64 {
    resil::metrics::refresh();
    let text = handle.render();
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no series {series} in:\n{text}"))
        .parse()
        .unwrap()
}

static FLAKY: AtomicU32 = AtomicU32::new(0);

#[resil::retry(name = "sig-retry")]
fn flaky() -> Result<u32, ApiError> {
    if FLAKY.fetch_add(1, Ordering::SeqCst) < 2 {
        Err(ApiError::Unavailable)
    } else {
        Ok(7)
    }
}

#[test]
fn physical_attempts_beside_logical_calls() {
    let (h, _) = setup();
    assert_eq!(flaky(), Ok(7));
    assert_eq!(
        value(h, r#"resil_retry_attempts_total{name="sig-retry"}"#),
        3.0
    );
    assert_eq!(
        value(
            h,
            r#"resilience4j_retry_calls_total{kind="successful_with_retry",name="sig-retry"}"#
        ),
        1.0
    );
}

#[resil::bulkhead(name = "sig-bulkhead", fallback = full)]
fn guarded() -> Result<u32, ApiError> {
    Ok(1)
}

fn full(error: Error<ApiError>) -> Result<u32, ApiError> {
    assert!(matches!(error, Error::BulkheadFull(_)));
    Ok(0)
}

#[resil::rate_limiter(name = "sig-limiter")]
fn limited() -> Result<u32, ApiError> {
    Ok(1)
}

#[resil::circuit_breaker(name = "sig-breaker", fallback = degraded)]
fn broken(fail: bool) -> Result<u32, ApiError> {
    if fail {
        Err(ApiError::Unavailable)
    } else {
        Ok(1)
    }
}

fn degraded(_fail: bool, _error: Error<ApiError>) -> Result<u32, ApiError> {
    Ok(0)
}

#[resil::bulkhead(name = "sig-fallback", fallback = cached)]
fn priced(_cached: bool) -> Result<u32, ApiError> {
    Ok(1)
}

/// A fallback that fails too when nothing is cached.
fn cached(cached: bool) -> Result<u32, ApiError> {
    if cached {
        Ok(0)
    } else {
        Err(ApiError::Unavailable)
    }
}

#[test]
fn rejections_per_kind_and_fallbacks_by_layer_cause_and_outcome() {
    let (h, _) = setup();
    assert_eq!(guarded(), Ok(0));
    assert_eq!(guarded(), Ok(0));
    assert_eq!(
        value(
            h,
            r#"resil_rejections_total{kind="bulkhead",name="sig-bulkhead"}"#
        ),
        2.0
    );
    assert_eq!(
        value(
            h,
            r#"resil_fallback_calls_total{cause="BulkheadFull",layer="bulkhead",name="sig-bulkhead",outcome="success"}"#
        ),
        2.0
    );

    assert_eq!(limited(), Ok(1));
    assert!(limited().is_err());
    assert_eq!(
        value(
            h,
            r#"resil_rejections_total{kind="rate_limiter",name="sig-limiter"}"#
        ),
        1.0
    );

    // a fallback that fails is counted apart
    assert_eq!(priced(true), Ok(0));
    assert_eq!(priced(false), Err(ApiError::Unavailable));
    assert_eq!(priced(false), Err(ApiError::Unavailable));
    assert_eq!(
        value(
            h,
            r#"resil_fallback_calls_total{cause="BulkheadFull",layer="bulkhead",name="sig-fallback",outcome="success"}"#
        ),
        1.0
    );
    assert_eq!(
        value(
            h,
            r#"resil_fallback_calls_total{cause="BulkheadFull",layer="bulkhead",name="sig-fallback",outcome="failed"}"#
        ),
        2.0
    );

    // the error's own kind, then the open breaker's rejection
    assert_eq!(broken(true), Ok(0));
    assert_eq!(
        value(
            h,
            r#"resil_fallback_calls_total{cause="Unavailable",layer="circuitbreaker",name="sig-breaker",outcome="success"}"#
        ),
        1.0
    );
    assert_eq!(broken(false), Ok(0));
    assert_eq!(
        value(
            h,
            r#"resil_fallback_calls_total{cause="CallNotPermitted",layer="circuitbreaker",name="sig-breaker",outcome="success"}"#
        ),
        1.0
    );
    assert_eq!(
        value(
            h,
            r#"resil_rejections_total{kind="circuit_breaker",name="sig-breaker"}"#
        ),
        1.0
    );
}

#[test]
fn the_oldest_queued_task_and_pool_rejections() {
    let (h, clock) = setup();
    let pool = resil::registries()
        .thread_pool_bulkheads()
        .find("sig-pool")
        .unwrap();
    let series = r#"resil_thread_pool_bulkhead_queue_oldest_age_seconds{name="sig-pool"}"#;
    assert_eq!(value(h, series), 0.0);
    let (release, gate) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    let busy = pool.submit(move || {
        started_tx.send(()).unwrap();
        gate.recv().is_ok()
    });
    started.recv().unwrap();
    let queued = pool.submit(|| true);
    clock.advance(Duration::from_millis(1500));
    assert_eq!(value(h, series), 1.5);
    assert!(pool.submit(|| false).is_rejected());
    assert_eq!(
        value(
            h,
            r#"resil_rejections_total{kind="thread_pool_bulkhead",name="sig-pool"}"#
        ),
        1.0
    );
    release.send(()).unwrap();
    assert!(busy.wait().unwrap() && queued.wait().unwrap());
    assert_eq!(value(h, series), 0.0);
}

#[resil::retry(name = "sig-inner")]
fn inner_call() -> Result<u32, ApiError> {
    Ok(2)
}

#[resil::retry(name = "sig-outer")]
fn outer_call() -> Result<u32, ApiError> {
    inner_call()
}

#[resil::retry(name = "sig-inner")]
async fn inner_async() -> Result<u32, ApiError> {
    tokio::task::yield_now().await;
    Ok(3)
}

#[resil::retry(name = "sig-outer")]
async fn outer_async() -> Result<u32, ApiError> {
    inner_async().await
}

#[test]
fn a_retry_inside_a_retry_is_counted_and_said_once() {
    let (h, _) = setup();
    let series = r#"resil_retry_nested_total{inner="sig-inner",outer="sig-outer"}"#;
    assert_eq!(outer_call(), Ok(2));
    assert_eq!(outer_call(), Ok(2));
    assert_eq!(value(h, series), 2.0);
    // not nested: the inner one alone, and after the outer one ended
    assert_eq!(inner_call(), Ok(2));
    assert_eq!(value(h, series), 2.0);
    // async, across an await point
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(outer_async()), Ok(3));
    assert_eq!(rt.block_on(inner_async()), Ok(3));
    assert_eq!(value(h, series), 3.0);
    let log = String::from_utf8(LOG.lock().unwrap().clone()).unwrap();
    let warnings = log
        .lines()
        .filter(|l| l.contains("retry `sig-inner` runs inside retry `sig-outer`"))
        .count();
    assert_eq!(warnings, 1, "{log}");
    assert!(log.contains("WARN resil::retry"), "{log}");
}

/// FORCED_OPEN without a limit (it outlives the incident) is said when it is made.
#[tokio::test]
async fn forcing_open_without_a_limit_is_a_warning() {
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt as _;

    setup();
    resil::registries()
        .circuit_breakers()
        .circuit_breaker("sig-forced");
    let router = resil::actuator::Actuator::builder()
        .state_changes("token")
        .build()
        .router();
    let force = |body: &'static str| {
        let router = router.clone();
        async move {
            let response = router
                .oneshot(
                    Request::post("/actuator/circuitbreakers/sig-forced")
                        .header("authorization", "Bearer token")
                        .header("content-type", "application/json")
                        .body(Body::from(body))
                        .unwrap(),
                )
                .await
                .unwrap();
            assert!(response.status().is_success(), "{}", response.status());
        }
    };
    let said = || {
        String::from_utf8(LOG.lock().unwrap().clone())
            .unwrap()
            .lines()
            .filter(|l| l.contains("circuit breaker `sig-forced` forced open with no limit"))
            .count()
    };
    force(r#"{"updateState":"FORCE_OPEN","for":"10m"}"#).await;
    assert_eq!(said(), 0);
    force(r#"{"updateState":"FORCE_OPEN"}"#).await;
    assert_eq!(said(), 1);
    force(r#"{"updateState":"CLOSE"}"#).await;
}
