//! `#[hedge]`: a slow call gets a sibling after the delay and the first
//! success answers; each attempt gets its own copy of the owned arguments;
//! the loser is dropped and gives its bulkhead permit back; every attempt
//! passes the breaker below the hedge; when all fail, the last error goes to
//! the fallback with the original arguments.
//!
//! Tokio's time is paused: the delays and latencies below are exact and
//! nothing sleeps for real.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil::clock::{Clock, TokioClock};
use resil::hedge::{Hedge, HedgeConfig};
use resil::{Error, Rejection};

#[derive(Debug, Clone, PartialEq)]
enum ReadError {
    Unavailable(u32),
    Rejected(String),
}

impl From<Rejection> for ReadError {
    fn from(r: Rejection) -> Self {
        ReadError::Rejected(r.to_string())
    }
}

fn hedge(name: &str, delay_ms: u64, max: u32) -> Arc<Hedge> {
    let config = HedgeConfig::builder()
        .delay(Duration::from_millis(delay_ms))
        .max_hedged_attempts(max)
        .build()
        .unwrap();
    resil_config::registries().hedges().hedge_with(name, config)
}

fn breaker(name: &str) -> Arc<CircuitBreaker> {
    resil_config::registries()
        .circuit_breakers()
        .circuit_breaker_with(name, CircuitBreakerConfig::default())
}

fn bulkhead(name: &str, max: u32) -> Arc<Bulkhead> {
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(max)
        .build()
        .unwrap();
    resil_config::registries()
        .bulkheads()
        .bulkhead_with(name, config)
}

static READ_CALLS: AtomicU32 = AtomicU32::new(0);
static SEEN_SKUS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The first attempt takes a second, every later one 10 ms.
#[resil::hedge(name = "hedge-read")]
#[resil::bulkhead(name = "hedge-read")]
async fn read(mut sku: String) -> Result<usize, ReadError> {
    let n = READ_CALLS.fetch_add(1, Ordering::SeqCst);
    // each attempt has its own copy: the push of one is not seen by the next
    sku.push('!');
    SEEN_SKUS.lock().unwrap().push(sku.clone());
    let latency = if n == 0 { 1_000 } else { 10 };
    tokio::time::sleep(Duration::from_millis(latency)).await;
    Ok(sku.len() + n as usize * 100)
}

#[tokio::test(start_paused = true)]
async fn a_slow_call_is_hedged_and_the_loser_gives_its_permit_back() {
    let h = hedge("hedge-read", 50, 1);
    let b = bulkhead("hedge-read", 5);
    let clock = TokioClock::new();
    let started = clock.now();
    // the hedged attempt (the second call of the body) answers
    assert_eq!(read("SKU-1".to_owned()).await, Ok(6 + 100));
    assert_eq!(
        clock.now().saturating_duration_since(started),
        Duration::from_millis(60)
    );
    assert_eq!(*SEEN_SKUS.lock().unwrap(), ["SKU-1!", "SKU-1!"]);
    let m = h.metrics();
    assert_eq!(
        (
            m.number_of_hedge_wins(),
            m.number_of_primary_wins(),
            m.number_of_hedged_attempts()
        ),
        (1, 0, 1)
    );
    // the slow primary was dropped: both permits are back
    assert_eq!(b.metrics().available_concurrent_calls(), 5);
    assert_eq!(READ_CALLS.load(Ordering::SeqCst), 2);

    // a fast primary (every call after the first is fast) is not hedged
    assert_eq!(read("SKU-2".to_owned()).await, Ok(6 + 200));
    assert_eq!(READ_CALLS.load(Ordering::SeqCst), 3);
    let m = h.metrics();
    assert_eq!(
        (m.number_of_primary_wins(), m.number_of_hedged_attempts()),
        (1, 1)
    );
}

static FAILING_CALLS: AtomicU32 = AtomicU32::new(0);

async fn stale(sku: String, error: Error<ReadError>) -> Result<usize, ReadError> {
    // the original argument, and the last attempt's error
    assert_eq!(sku, "SKU-9");
    match error {
        Error::Inner(ReadError::Unavailable(n)) => Ok(1_000 + n as usize),
        other => panic!("unexpected {other:?}"),
    }
}

/// Every attempt fails after 100 ms: the hedge started after 30 ms ends
/// last, and its error goes to the fallback.
#[resil::hedge(name = "hedge-failing", fallback = stale)]
#[resil::circuit_breaker(name = "hedge-failing")]
async fn failing(sku: String) -> Result<usize, ReadError> {
    let n = FAILING_CALLS.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(100)).await;
    Err(ReadError::Unavailable(n)).map(|()| sku.len())
}

#[tokio::test(start_paused = true)]
async fn when_every_attempt_fails_the_fallback_gets_the_last_error() {
    let h = hedge("hedge-failing", 30, 2);
    let cb = breaker("hedge-failing");
    let clock = TokioClock::new();
    let started = clock.now();
    // attempts at 0, 30 and 60 ms; they fail at 100, 130 and 160 ms
    assert_eq!(failing("SKU-9".to_owned()).await, Ok(1_002));
    assert_eq!(
        clock.now().saturating_duration_since(started),
        Duration::from_millis(160)
    );
    assert_eq!(FAILING_CALLS.load(Ordering::SeqCst), 3);
    // the breaker below the hedge counted each attempt
    assert_eq!(cb.metrics().number_of_failed_calls(), 3);
    let m = h.metrics();
    assert_eq!(
        (m.number_of_failed_calls(), m.number_of_hedged_attempts()),
        (1, 2)
    );
}

struct Catalog {
    calls: AtomicU32,
}

impl Catalog {
    /// A method: the attempts share `&self` and the borrowed `&str`.
    #[resil::hedge(name = "hedge-method")]
    async fn price(&self, sku: &str) -> Result<usize, ReadError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        // the primary hangs; the hedge answers
        let latency = if n == 0 { 60_000 } else { 5 };
        tokio::time::sleep(Duration::from_millis(latency)).await;
        Ok(sku.len())
    }
}

#[tokio::test(start_paused = true)]
async fn a_method_shares_its_borrows_with_every_attempt() {
    hedge("hedge-method", 20, 1);
    let catalog = Catalog {
        calls: AtomicU32::new(0),
    };
    let sku = String::from("SKU-77");
    let clock = TokioClock::new();
    let started = clock.now();
    assert_eq!(catalog.price(&sku).await, Ok(6));
    assert_eq!(
        clock.now().saturating_duration_since(started),
        Duration::from_millis(25)
    );
    assert_eq!(catalog.calls.load(Ordering::SeqCst), 2);
}
