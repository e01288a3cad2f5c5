//! `#[retry]`: the outermost layer, a fresh copy of the owned arguments for
//! each attempt, its fallback, and its place around the circuit breaker.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil::event::EventKind;
use resil::retry::{Retry, RetryConfig, RetryEventType};
use resil::{Error, Rejection};

#[derive(Debug, Clone, PartialEq, resil::Classify)]
enum ApiError {
    Unavailable,
    BadRequest,
    Rejected(String),
}

impl From<Rejection> for ApiError {
    fn from(r: Rejection) -> Self {
        ApiError::Rejected(r.to_string())
    }
}

/// A retry of three attempts that does not wait (tests never sleep).
fn retry(name: &str) -> Arc<Retry> {
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::ZERO)
        .build()
        .unwrap();
    resil_config::registries()
        .retries()
        .retry_with(name, config)
}

fn breaker(name: &str) -> Arc<CircuitBreaker> {
    resil_config::registries()
        .circuit_breakers()
        .circuit_breaker_with(name, CircuitBreakerConfig::default())
}

fn retry_events(r: &Retry) -> Arc<Mutex<Vec<RetryEventType>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    r.event_publisher()
        .on_event(move |e| sink.lock().unwrap().push(e.kind().event_type()));
    seen
}

static FLAKY_CALLS: AtomicU32 = AtomicU32::new(0);

// Written breaker first: the retry is still the outer layer, so the
// breaker sees every attempt.
#[resil::circuit_breaker(name = "retry-order-cb")]
#[resil::retry(name = "retry-order")]
fn flaky(fail_times: u32) -> Result<u32, ApiError> {
    let n = FLAKY_CALLS.fetch_add(1, Ordering::SeqCst) + 1;
    if n <= fail_times {
        return Err(ApiError::Unavailable);
    }
    Ok(n)
}

#[test]
fn the_retry_wraps_the_breaker_whatever_the_source_order() {
    let r = retry("retry-order");
    let cb = breaker("retry-order-cb");
    let seen = retry_events(&r);
    assert_eq!(flaky(2), Ok(3));
    assert_eq!(FLAKY_CALLS.load(Ordering::SeqCst), 3);
    assert_eq!(cb.metrics().number_of_failed_calls(), 2);
    assert_eq!(cb.metrics().number_of_successful_calls(), 1);
    use RetryEventType::*;
    assert_eq!(*seen.lock().unwrap(), [Retry, Retry, Success]);
}

static HIDDEN_CALLS: AtomicU32 = AtomicU32::new(0);

fn cached(_sku: u32) -> Result<u32, ApiError> {
    Ok(0)
}

#[resil::retry(name = "retry-hidden")]
#[resil::circuit_breaker(name = "retry-hidden-cb", fallback = cached)]
fn hidden(sku: u32) -> Result<u32, ApiError> {
    HIDDEN_CALLS.fetch_add(1, Ordering::SeqCst);
    Err(ApiError::Unavailable).map(|()| sku)
}

#[test]
fn a_breaker_fallback_that_answers_ends_the_retries() {
    let r = retry("retry-hidden");
    let cb = breaker("retry-hidden-cb");
    let seen = retry_events(&r);
    assert_eq!(hidden(1), Ok(0));
    assert_eq!(HIDDEN_CALLS.load(Ordering::SeqCst), 1);
    // The breaker recorded the failure; the retry saw a success.
    assert_eq!(cb.metrics().number_of_failed_calls(), 1);
    assert!(seen.lock().unwrap().is_empty());
}

fn gave_up(sku: String, _fail: bool, error: Error<ApiError>) -> Result<u32, ApiError> {
    // The original arguments, whatever the attempts did with their copies.
    assert!(sku == "abc" || sku == "bad", "{sku}");
    match error {
        Error::Inner(ApiError::Unavailable) => Ok(404),
        Error::Inner(other) => Err(other),
        other => panic!("unexpected {other:?}"),
    }
}

fn is_unavailable(e: &ApiError) -> bool {
    matches!(e, ApiError::Unavailable)
}

static ATTEMPT_LENGTHS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

#[resil::retry(name = "retry-copies", fallback = gave_up, retry_on = is_unavailable)]
fn copies(mut sku: String, fail: bool) -> Result<u32, ApiError> {
    // Each attempt gets its own copy: the push of the last one is not seen.
    sku.push('!');
    ATTEMPT_LENGTHS.lock().unwrap().push(sku.len());
    if sku == "bad!" {
        return Err(ApiError::BadRequest);
    }
    if fail {
        return Err(ApiError::Unavailable);
    }
    Ok(sku.len() as u32)
}

#[test]
fn each_attempt_gets_the_arguments_again() {
    retry("retry-copies");
    assert_eq!(copies("abc".into(), true), Ok(404));
    assert_eq!(*ATTEMPT_LENGTHS.lock().unwrap(), [4, 4, 4]);
    // `retry_on` refuses `BadRequest`: one attempt, then the fallback (which
    // sees every error, as in Resilience4j) hands it back.
    ATTEMPT_LENGTHS.lock().unwrap().clear();
    assert_eq!(
        copies("bad".into(), false).unwrap_err(),
        ApiError::BadRequest
    );
    assert_eq!(*ATTEMPT_LENGTHS.lock().unwrap(), [4]);
}

#[derive(Debug)]
struct Counted(Arc<AtomicU32>);

impl Clone for Counted {
    fn clone(&self) -> Self {
        self.0.fetch_add(1, Ordering::SeqCst);
        Counted(self.0.clone())
    }
}

struct Client {
    attempts: AtomicU32,
}

impl Client {
    #[resil::retry(name = "retry-async-ref")]
    async fn send(&self, body: Counted, path: &str) -> Result<u32, ApiError> {
        let n = self.attempts.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::task::yield_now().await;
        drop(body);
        if n < 3 {
            return Err(ApiError::Unavailable);
        }
        Ok(path.len() as u32)
    }

    #[resil::retry(name = "retry-async-arc")]
    async fn shared(self: Arc<Self>, fail: bool) -> Result<u32, ApiError> {
        let n = self.attempts.fetch_add(1, Ordering::SeqCst) + 1;
        // The body may move its receiver: each attempt owns a clone.
        let me: Arc<Self> = self;
        if fail {
            return Err(ApiError::Unavailable);
        }
        assert_eq!(me.attempts.load(Ordering::SeqCst), n);
        Ok(n)
    }

    #[resil::retry(name = "retry-sync-mut")]
    fn bump(&mut self, by: &mut u32) -> Result<u32, ApiError> {
        *by += 1;
        let n = self.attempts.get_mut();
        *n += 1;
        if *n < 2 {
            return Err(ApiError::Unavailable);
        }
        Ok(*by)
    }
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[tokio::test]
async fn async_methods_retry_with_fresh_arguments() {
    retry("retry-async-ref");
    retry("retry-async-arc");
    let clones = Arc::new(AtomicU32::new(0));
    let client = Client {
        attempts: AtomicU32::new(0),
    };
    let out = assert_send(client.send(Counted(clones.clone()), "/stock")).await;
    assert_eq!(out, Ok(6));
    assert_eq!(clones.load(Ordering::SeqCst), 3, "one clone per attempt");

    let client = Arc::new(Client {
        attempts: AtomicU32::new(0),
    });
    assert_eq!(
        client.clone().shared(true).await,
        Err(ApiError::Unavailable)
    );
    assert_eq!(client.attempts.load(Ordering::SeqCst), 3);
    assert_eq!(assert_send(client.clone().shared(false)).await, Ok(4));
    assert_eq!(
        Arc::strong_count(&client),
        1,
        "every attempt's copy is dropped"
    );
}

#[test]
fn sync_methods_reborrow_mutable_arguments() {
    retry("retry-sync-mut");
    let mut client = Client {
        attempts: AtomicU32::new(0),
    };
    let mut counter = 0;
    assert_eq!(client.bump(&mut counter), Ok(2));
    assert_eq!(counter, 2);
}
