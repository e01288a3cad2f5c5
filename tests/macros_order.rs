//! Stacked attributes apply in Resilience4j's order whatever the source
//! order, and each fallback wraps only its own layer. Every test counts what
//! each layer saw through its events. (The retry's place is in
//! `macros_retry.rs`.)

use std::sync::{Arc, Mutex};

use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent};
use resil::event::EventKind;
use resil::rate_limiter::RateLimiterConfig;
use resil::{Error, Rejection};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
enum DbError {
    Down,
    Rejected(String),
}

impl From<Rejection> for DbError {
    fn from(r: Rejection) -> Self {
        DbError::Rejected(r.to_string())
    }
}

fn breaker(name: &str) -> Arc<CircuitBreaker> {
    resil_config::registries()
        .circuit_breakers()
        .circuit_breaker_with(name, CircuitBreakerConfig::default())
}

fn one_permit(name: &str) -> Arc<Bulkhead> {
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(1)
        .build()
        .unwrap();
    resil_config::registries()
        .bulkheads()
        .bulkhead_with(name, config)
}

fn record(cb: &CircuitBreaker) -> Arc<Mutex<Vec<CircuitBreakerEvent>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    cb.event_publisher()
        .on_event(move |e| sink.lock().unwrap().push(e.kind().clone()));
    seen
}

fn breaker_fallback(_n: u32, error: Error<DbError>) -> Result<u32, DbError> {
    match error {
        Error::BulkheadFull(full) => {
            assert_eq!(full.name(), "order-bh");
            Ok(1)
        }
        Error::Inner(e) => Err(e),
        other => panic!("unexpected {other:?}"),
    }
}

// The bulkhead is written first, yet the breaker is the outer layer.
#[resil::bulkhead(name = "order-bh")]
#[resil::circuit_breaker(name = "order-cb", fallback = breaker_fallback)]
fn bulkhead_written_first(n: u32) -> Result<u32, DbError> {
    if n == 0 {
        return Err(DbError::Down);
    }
    Ok(n)
}

#[test]
fn the_breaker_wraps_the_bulkhead_whatever_the_source_order() {
    let cb = breaker("order-cb");
    let bh = one_permit("order-bh");
    let seen = record(&cb);
    assert_eq!(bulkhead_written_first(5), Ok(5));
    {
        let _held = bh.try_acquire_permission().unwrap();
        // The bulkhead refuses; the breaker outside it records the rejection,
        // then its fallback answers.
        assert_eq!(bulkhead_written_first(5), Ok(1));
    }
    assert_eq!(bulkhead_written_first(0), Err(DbError::Down));
    let seen = seen.lock().unwrap();
    assert!(matches!(seen[0], CircuitBreakerEvent::Success { .. }));
    assert!(matches!(
        seen[1],
        CircuitBreakerEvent::Error {
            error_kind: Some("BulkheadFull"),
            ..
        }
    ));
    assert!(matches!(
        seen[2],
        CircuitBreakerEvent::Error {
            error_kind: None,
            ..
        }
    ));
    assert_eq!(seen.len(), 3);
}

// The rate limiter is written first, yet the breaker is the outer layer.
#[resil::rate_limiter(name = "order-rl")]
#[resil::circuit_breaker(name = "order-rl-cb")]
fn limiter_written_first(n: u32) -> Result<u32, DbError> {
    Ok(n)
}

#[test]
fn the_breaker_wraps_the_rate_limiter_whatever_the_source_order() {
    let cb = breaker("order-rl-cb");
    let config = RateLimiterConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(Duration::from_secs(3600))
        .timeout_duration(Duration::ZERO)
        .build()
        .unwrap();
    resil_config::registries()
        .rate_limiters()
        .rate_limiter_with("order-rl", config);
    let seen = record(&cb);
    assert_eq!(limiter_written_first(1), Ok(1));
    // The limiter refuses inside the breaker, which records the refusal.
    assert!(matches!(
        limiter_written_first(2),
        Err(DbError::Rejected(_))
    ));
    let seen = seen.lock().unwrap();
    assert!(matches!(seen[0], CircuitBreakerEvent::Success { .. }));
    assert!(matches!(
        seen[1],
        CircuitBreakerEvent::Error {
            error_kind: Some("RequestNotPermitted"),
            ..
        }
    ));
    assert_eq!(seen.len(), 2);
}

fn bulkhead_fallback(_n: u32) -> Result<u32, DbError> {
    Ok(2)
}

fn outer_fallback(_n: u32, _error: Error<DbError>) -> Result<u32, DbError> {
    Ok(3)
}

#[resil::circuit_breaker(name = "order-own-cb", fallback = outer_fallback)]
#[resil::bulkhead(name = "order-own-bh", fallback = bulkhead_fallback)]
fn each_fallback_its_layer(n: u32) -> Result<u32, DbError> {
    Ok(n)
}

#[test]
fn an_inner_fallback_hides_the_failure_from_the_outer_layers() {
    let cb = breaker("order-own-cb");
    let bh = one_permit("order-own-bh");
    let seen = record(&cb);
    let _held = bh.try_acquire_permission().unwrap();
    // The bulkhead's fallback answers: the breaker sees a success and its own
    // fallback does not run.
    assert_eq!(each_fallback_its_layer(9), Ok(2));
    assert_eq!(cb.metrics().number_of_successful_calls(), 1);
    assert_eq!(
        seen.lock()
            .unwrap()
            .iter()
            .map(|e| e.event_type())
            .collect::<Vec<_>>(),
        [resil::circuit_breaker::CircuitBreakerEventType::Success]
    );
}

#[resil::circuit_breaker(name = "order-async-cb")]
#[resil::bulkhead(name = "order-async-bh")]
async fn async_chain(n: u32) -> Result<u32, DbError> {
    tokio::task::yield_now().await;
    Ok(n)
}

#[tokio::test]
async fn async_chains_keep_the_order_and_stay_send() {
    let cb = breaker("order-async-cb");
    let bh = one_permit("order-async-bh");
    fn send<T: Send>(t: T) -> T {
        t
    }
    assert_eq!(send(async_chain(4)).await, Ok(4));
    let held = bh.try_acquire_permission().unwrap();
    assert_eq!(
        async_chain(4).await,
        Err(DbError::Rejected(
            "bulkhead `order-async-bh` is full and does not permit further calls".into()
        ))
    );
    drop(held);
    assert_eq!(cb.metrics().number_of_failed_calls(), 1);
    assert_eq!(tokio::spawn(async_chain(6)).await.unwrap(), Ok(6));
}

struct Reports {
    prefix: String,
}

impl Reports {
    #[resil::circuit_breaker(name = "order-pool-cb")]
    #[resil::thread_pool_bulkhead(name = "order-pool", fallback = Self::later)]
    async fn export(self: Arc<Self>, id: u64) -> Result<String, DbError> {
        let thread = std::thread::current();
        Ok(format!(
            "{}-{id}-{}",
            self.prefix,
            thread.name().unwrap_or("?")
        ))
    }

    async fn later(self: Arc<Self>, id: u64, error: Error<DbError>) -> Result<String, DbError> {
        Ok(format!(
            "{}-{id}-later-{}",
            self.prefix,
            error.rejection_kind().unwrap_or("inner")
        ))
    }
}

#[tokio::test]
async fn the_thread_pool_runs_the_body_on_its_threads() {
    let reports = Arc::new(Reports { prefix: "r".into() });
    let out = reports.clone().export(7).await.unwrap();
    assert_eq!(out, "r-7-bulkhead-order-pool-1");
    let cb = breaker("order-pool-cb");
    assert_eq!(cb.metrics().number_of_successful_calls(), 1);
}
