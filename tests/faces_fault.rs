//! A fault applies to every call site of its name, through every face:
//! the attributes (blocking, async, and inside a time limiter that may
//! leave its future running), a named `tower` stack and the Spring Cloud
//! breaker. An aborted call does not run; the breaker records it, a retry
//! retries it, a fallback receives it; a delayed call waits on the fault's
//! clock (a `ManualClock` here, or paused tokio time), then runs.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resil::circuit_breaker::{CircuitBreakerConfig, State};
use resil::clock::{Clock as _, ManualClock, SharedClock, TokioClock};
use resil::fault::{FaultConfig, Faults};
use resil::retry::RetryConfig;
use resil::{Error, Rejection};
use tower::{ServiceBuilder, ServiceExt as _, service_fn};

#[derive(Debug, Clone, PartialEq)]
enum ApiError {
    Rejected(String),
}

impl From<Rejection> for ApiError {
    fn from(r: Rejection) -> Self {
        ApiError::Rejected(r.to_string())
    }
}

fn abort_all() -> FaultConfig {
    FaultConfig::builder().abort_percent(100.0).build().unwrap()
}

fn abort(name: &str) {
    Faults::global().configure(name, Some(abort_all()), SharedClock::default());
}

fn end(name: &str) {
    Faults::global().configure(name, None, SharedClock::default());
}

static BREAKER_RAN: AtomicU32 = AtomicU32::new(0);

#[resil::circuit_breaker(name = "faces-fault-breaker")]
fn guarded() -> Result<u32, ApiError> {
    BREAKER_RAN.fetch_add(1, Ordering::SeqCst);
    Ok(1)
}

#[test]
fn an_attribute_breaker_opens_on_aborted_calls() {
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .build()
        .unwrap();
    let cb = resil::registries()
        .circuit_breakers()
        .circuit_breaker_with("faces-fault-breaker", config);
    abort("faces-fault-breaker");
    for _ in 0..4 {
        let err = guarded().unwrap_err();
        assert!(
            matches!(&err, ApiError::Rejected(m) if m.contains("fault `faces-fault-breaker`")),
            "{err:?}"
        );
    }
    assert_eq!(BREAKER_RAN.load(Ordering::SeqCst), 0);
    assert_eq!(cb.state(), State::Open);
    end("faces-fault-breaker");
}

static RETRY_RAN: AtomicU32 = AtomicU32::new(0);

async fn after_the_fault(error: Error<ApiError>) -> Result<String, ApiError> {
    match error {
        Error::FaultInjected(f) => Ok(format!("fallback: {}", f.name())),
        other => Err(other.into_error()),
    }
}

#[resil::retry(name = "faces-fault-retry", fallback = after_the_fault)]
async fn retried() -> Result<String, ApiError> {
    RETRY_RAN.fetch_add(1, Ordering::SeqCst);
    Ok("ran".to_owned())
}

#[tokio::test]
async fn an_attribute_retry_retries_aborts_and_the_fallback_receives_the_last() {
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::ZERO)
        .build()
        .unwrap();
    resil::registries()
        .retries()
        .retry_with("faces-fault-retry", config);
    abort("faces-fault-retry");
    assert_eq!(retried().await.unwrap(), "fallback: faces-fault-retry");
    assert_eq!(RETRY_RAN.load(Ordering::SeqCst), 0);
    assert_eq!(Faults::global().injected_total("faces-fault-retry"), (0, 3));
    end("faces-fault-retry");
    assert_eq!(retried().await.unwrap(), "ran");
}

#[resil::time_limiter(name = "faces-fault-detached")]
async fn detached(n: u32) -> Result<u32, ApiError> {
    Ok(n)
}

#[tokio::test]
async fn a_time_limiter_that_may_detach_its_future_has_the_fault_inside() {
    abort("faces-fault-detached");
    assert!(
        matches!(detached(3).await, Err(ApiError::Rejected(m)) if m.contains("faces-fault-detached"))
    );
    end("faces-fault-detached");
    assert_eq!(detached(3).await, Ok(3));
}

#[resil::circuit_breaker(name = "faces-fault-delay")]
fn clocked(clock: &ManualClock) -> Result<Duration, ApiError> {
    Ok(clock.now().as_duration())
}

#[test]
fn a_delayed_attribute_call_waits_on_the_fault_clock_then_runs() {
    let clock = ManualClock::new();
    let delay = FaultConfig::builder()
        .delay(Duration::from_millis(300))
        .delay_percent(100.0)
        .build()
        .unwrap();
    Faults::global().configure(
        "faces-fault-delay",
        Some(delay),
        SharedClock::new(clock.clone()),
    );
    assert_eq!(clocked(&clock), Ok(Duration::from_millis(300)));
    assert_eq!(clocked(&clock), Ok(Duration::from_millis(600)));
    end("faces-fault-delay");
    assert_eq!(clocked(&clock), Ok(Duration::from_millis(600)));
}

#[tokio::test(start_paused = true)]
async fn a_named_tower_stack_is_delayed_on_paused_time_and_aborted() {
    let clock = TokioClock::new();
    let started_on = clock.clone();
    let layer = resil::tower::named("faces-fault-tower")
        .circuit_breaker()
        .build();
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(move |n: u32| {
            let clock = clock.clone();
            async move { Ok::<_, std::io::Error>((n, clock.now())) }
        }));
    let delay = FaultConfig::builder()
        .delay(Duration::from_secs(5))
        .delay_percent(100.0)
        .build()
        .unwrap();
    Faults::global().configure(
        "faces-fault-tower",
        Some(delay),
        SharedClock::new(TokioClock::new()),
    );
    let start = started_on.now();
    let (n, at) = svc.clone().oneshot(1).await.unwrap();
    assert_eq!(
        (n, at.saturating_duration_since(start)),
        (1, Duration::from_secs(5))
    );

    abort("faces-fault-tower");
    let err = svc.clone().oneshot(2).await.unwrap_err();
    assert!(matches!(err, Error::FaultInjected(_)), "{err:?}");
    end("faces-fault-tower");
    assert_eq!(svc.oneshot(3).await.unwrap().0, 3);
}

#[tokio::test]
async fn the_cloud_breaker_falls_back_on_an_aborted_call() {
    let breaker = resil::cloud::factory().create_in_group("faces-fault-cloud", "faces-fault-group");
    abort("faces-fault-group");
    let stock = breaker
        .run_async(
            || async { Ok::<u32, std::io::Error>(7) },
            |e| {
                if matches!(e, Error::FaultInjected(_)) {
                    0
                } else {
                    1
                }
            },
        )
        .await;
    assert_eq!(stock, 0, "the group's fault applies to its breakers");
    end("faces-fault-group");
    let stock = breaker
        .run_async(|| async { Ok::<u32, std::io::Error>(7) }, |_| 1)
        .await;
    assert_eq!(stock, 7);
}

static POOL_RAN: AtomicU32 = AtomicU32::new(0);

#[resil::circuit_breaker(name = "faces-fault-pool")]
#[resil::thread_pool_bulkhead(name = "faces-fault-pool")]
fn pooled(clock: ManualClock) -> Result<Duration, ApiError> {
    POOL_RAN.fetch_add(1, Ordering::SeqCst);
    Ok(clock.now().as_duration())
}

#[test]
fn a_thread_pool_call_is_aborted_and_delayed_on_the_pool_thread() {
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(10)
        .minimum_number_of_calls(10)
        .build()
        .unwrap();
    let cb = resil::registries()
        .circuit_breakers()
        .circuit_breaker_with("faces-fault-pool", config);
    let clock = ManualClock::new();
    abort("faces-fault-pool");
    let err = pooled(clock.clone()).unwrap_err();
    assert!(
        matches!(&err, ApiError::Rejected(m) if m.contains("fault `faces-fault-pool`")),
        "{err:?}"
    );
    assert_eq!(
        POOL_RAN.load(Ordering::SeqCst),
        0,
        "an aborted job does not run"
    );
    assert_eq!(
        cb.metrics().number_of_failed_calls(),
        1,
        "the breaker outside counts it"
    );
    assert_eq!(Faults::global().injected_total("faces-fault-pool"), (0, 1));

    let delay = FaultConfig::builder()
        .delay(Duration::from_millis(250))
        .delay_percent(100.0)
        .build()
        .unwrap();
    Faults::global().configure(
        "faces-fault-pool",
        Some(delay),
        SharedClock::new(clock.clone()),
    );
    // the job waits on the fault's clock, then runs, on the pool's thread
    assert_eq!(pooled(clock.clone()), Ok(Duration::from_millis(250)));
    assert_eq!(POOL_RAN.load(Ordering::SeqCst), 1);
    assert_eq!(Faults::global().injected_total("faces-fault-pool"), (1, 1));
    end("faces-fault-pool");
    assert_eq!(pooled(clock.clone()), Ok(Duration::from_millis(250)));
    assert_eq!(POOL_RAN.load(Ordering::SeqCst), 2);
    assert_eq!(cb.metrics().number_of_successful_calls(), 2);
}

static POOL_RETRY_RAN: AtomicU32 = AtomicU32::new(0);

#[resil::retry(name = "faces-fault-pool-retry")]
#[resil::thread_pool_bulkhead(name = "faces-fault-pool-retry")]
fn pooled_retried() -> Result<u32, ApiError> {
    POOL_RETRY_RAN.fetch_add(1, Ordering::SeqCst);
    Ok(7)
}

#[test]
fn a_retry_retries_an_aborted_thread_pool_job() {
    resil::registries().retries().retry_with(
        "faces-fault-pool-retry",
        RetryConfig::builder()
            .max_attempts(3)
            .wait_duration(Duration::ZERO)
            .build()
            .unwrap(),
    );
    abort("faces-fault-pool-retry");
    assert!(pooled_retried().is_err());
    assert_eq!(POOL_RETRY_RAN.load(Ordering::SeqCst), 0);
    assert_eq!(
        Faults::global().injected_total("faces-fault-pool-retry"),
        (0, 3)
    );
    end("faces-fault-pool-retry");
    assert_eq!(pooled_retried(), Ok(7));
    assert_eq!(POOL_RETRY_RAN.load(Ordering::SeqCst), 1);
}

static CLOUD_POOL_RAN: AtomicU32 = AtomicU32::new(0);

#[test]
fn the_cloud_breakers_blocking_run_has_the_fault_on_its_pool_thread() {
    let breaker =
        resil::cloud::factory().create_in_group("faces-fault-cloud-pool", "faces-fault-pool-group");
    abort("faces-fault-pool-group");
    let stock = breaker.run(
        || {
            CLOUD_POOL_RAN.fetch_add(1, Ordering::SeqCst);
            Ok::<u32, std::io::Error>(7)
        },
        |e| {
            if matches!(e, Error::FaultInjected(_)) {
                0
            } else {
                1
            }
        },
    );
    assert_eq!(stock, 0, "the fallback receives the abort");
    assert_eq!(
        CLOUD_POOL_RAN.load(Ordering::SeqCst),
        0,
        "the supplier did not run"
    );
    end("faces-fault-pool-group");
    let stock = breaker.run(
        || {
            CLOUD_POOL_RAN.fetch_add(1, Ordering::SeqCst);
            Ok::<u32, std::io::Error>(7)
        },
        |_| 1,
    );
    assert_eq!(stock, 7);
    assert_eq!(CLOUD_POOL_RAN.load(Ordering::SeqCst), 1);
}
