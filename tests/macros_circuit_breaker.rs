//! `#[circuit_breaker]` end to end: the instance a function uses, what its
//! fallback receives, classification, self-invocation, and the shapes it
//! supports. Every test uses its own instance names (tests share the process
//! and its global registries).

use std::sync::{Arc, Mutex};

use resil::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent, CircuitBreakerEventType, State,
};
use resil::{Error, Rejection};

#[derive(Debug, Clone, PartialEq, resil::Classify)]
enum DbError {
    ConnectionRefused,
    NotFound,
    Rejected(String),
}

impl From<Rejection> for DbError {
    fn from(r: Rejection) -> Self {
        DbError::Rejected(r.to_string())
    }
}

/// The instance of `name` in the global registry, created with `config`
/// before any protected call looks it up.
fn breaker(name: &str, config: CircuitBreakerConfig) -> Arc<CircuitBreaker> {
    resil_config::registries()
        .circuit_breakers()
        .circuit_breaker_with(name, config)
}

fn small_window() -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .sliding_window_size(2)
        .minimum_number_of_calls(2)
        .build()
        .unwrap()
}

/// Every event of `cb`, as its type.
fn recorder(cb: &CircuitBreaker) -> Arc<Mutex<Vec<CircuitBreakerEvent>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    cb.event_publisher()
        .on_event(move |e| sink.lock().unwrap().push(e.kind().clone()));
    seen
}

fn types(seen: &Mutex<Vec<CircuitBreakerEvent>>) -> Vec<CircuitBreakerEventType> {
    use resil::event::EventKind;
    seen.lock()
        .unwrap()
        .iter()
        .map(|e| e.event_type())
        .collect()
}

#[resil::circuit_breaker(name = "cb-records")]
fn lookup(sku: u32) -> Result<u32, DbError> {
    match sku {
        0 => Err(DbError::ConnectionRefused),
        _ => Ok(sku * 10),
    }
}

#[test]
fn the_function_runs_through_its_breaker() {
    let cb = breaker("cb-records", small_window());
    let seen = recorder(&cb);
    assert_eq!(lookup(1), Ok(10));
    assert_eq!(lookup(0), Err(DbError::ConnectionRefused));
    assert_eq!(cb.state(), State::Open);
    // Open: the body does not run, and the rejection reaches the caller
    // through `From<Rejection>`.
    assert_eq!(
        lookup(1),
        Err(DbError::Rejected(
            "circuit breaker `cb-records` is OPEN and does not permit further calls".into()
        ))
    );
    use CircuitBreakerEventType::*;
    assert_eq!(
        types(&seen),
        [
            Success,
            Error,
            FailureRateExceeded,
            StateTransition,
            CallNotPermitted
        ]
    );
    // The error kind comes from `#[derive(Classify)]`.
    assert!(matches!(
        seen.lock().unwrap()[1],
        CircuitBreakerEvent::Error {
            error_kind: Some("ConnectionRefused"),
            ..
        }
    ));
}

fn answer_from_cache(sku: u32, error: Error<DbError>) -> Result<u32, DbError> {
    match error {
        Error::Inner(DbError::NotFound) => Ok(0),
        Error::Inner(e) => Err(e),
        Error::CallNotPermitted(e) => {
            assert_eq!(e.name(), "cb-fallback");
            Ok(sku + 1000)
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[resil::circuit_breaker(name = "cb-fallback", fallback = answer_from_cache)]
fn cached(sku: u32) -> Result<u32, DbError> {
    if sku == 7 {
        return Err(DbError::NotFound);
    }
    Err(DbError::ConnectionRefused)
}

#[test]
fn the_fallback_receives_the_arguments_and_the_error() {
    let cb = breaker("cb-fallback", small_window());
    assert_eq!(cached(7), Ok(0));
    assert_eq!(cached(1), Err(DbError::ConnectionRefused));
    // The breaker recorded both failures: the fallback runs outside of it.
    assert_eq!(cb.state(), State::Open);
    assert_eq!(cached(1), Ok(1001));
}

fn is_refused(e: &DbError) -> bool {
    matches!(e, DbError::ConnectionRefused)
}

fn is_not_found(e: &DbError) -> bool {
    matches!(e, DbError::NotFound)
}

#[allow(clippy::ptr_arg)] // `record_result` takes `fn(&T) -> bool`, and `T` is `Vec<u32>`
fn is_empty(v: &Vec<u32>) -> bool {
    v.is_empty()
}

#[resil::circuit_breaker(name = "cb-classified", record = is_refused, ignore = is_not_found, record_result = is_empty)]
fn scan(outcome: Result<Vec<u32>, DbError>) -> Result<Vec<u32>, DbError> {
    outcome
}

#[test]
fn predicates_classify_outcomes() {
    let cb = breaker("cb-classified", CircuitBreakerConfig::default());
    let seen = recorder(&cb);
    let _ = scan(Err(DbError::NotFound));
    let _ = scan(Ok(vec![1]));
    let _ = scan(Ok(vec![]));
    let _ = scan(Err(DbError::Rejected("x".into())));
    use CircuitBreakerEventType::*;
    assert_eq!(types(&seen), [IgnoredError, Success, Error, Success]);
}

/// A service whose methods call each other.
struct Inventory {
    db_calls: Mutex<u32>,
}

impl Inventory {
    #[resil::circuit_breaker(name = "cb-self-outer")]
    fn report(&self) -> Result<u32, DbError> {
        // A call from inside the type: protected as well (no proxy to bypass).
        let a = self.stock(1)?;
        let b = self.stock(2)?;
        Ok(a + b)
    }

    #[resil::circuit_breaker(name = "cb-self-inner", fallback = Self::no_stock)]
    fn stock(&self, sku: u32) -> Result<u32, DbError> {
        *self.db_calls.lock().unwrap() += 1;
        Err(DbError::ConnectionRefused).map(|()| sku)
    }

    fn no_stock(&self, _sku: u32, error: Error<DbError>) -> Result<u32, DbError> {
        assert!(matches!(
            error,
            Error::Inner(_) | Error::CallNotPermitted(_)
        ));
        Ok(0)
    }
}

#[test]
fn self_invocation_is_protected() {
    let inner = breaker("cb-self-inner", small_window());
    let outer = breaker("cb-self-outer", small_window());
    let svc = Inventory {
        db_calls: Mutex::new(0),
    };
    assert_eq!(svc.report(), Ok(0));
    assert_eq!(inner.metrics().number_of_failed_calls(), 2);
    assert_eq!(inner.state(), State::Open);
    // The inner breaker is open: the next report does not reach the database.
    assert_eq!(svc.report(), Ok(0));
    assert_eq!(*svc.db_calls.lock().unwrap(), 2);
    assert_eq!(inner.metrics().number_of_not_permitted_calls(), 2);
    assert_eq!(outer.metrics().number_of_successful_calls(), 2);
}

struct Counter {
    hits: u32,
}

impl Counter {
    #[resil::circuit_breaker(name = "cb-mut")]
    fn hit(&mut self, by: u32) -> Result<u32, DbError> {
        self.hits += by;
        Ok(self.hits)
    }

    #[resil::circuit_breaker(name = "cb-arc", fallback = Self::arc_fallback)]
    async fn shared(self: Arc<Self>, fail: bool) -> Result<u32, DbError> {
        if fail {
            return Err(DbError::NotFound);
        }
        Ok(self.hits)
    }

    async fn arc_fallback(self: Arc<Self>, _fail: bool) -> Result<u32, DbError> {
        Ok(self.hits + 100)
    }

    #[resil::circuit_breaker(name = "cb-async-mut", fallback = Self::mut_fallback)]
    async fn bump(&mut self, sku: String) -> Result<u32, DbError> {
        self.hits += 1;
        if sku.is_empty() {
            return Err(DbError::NotFound);
        }
        Ok(self.hits)
    }

    async fn mut_fallback(&mut self, sku: String, error: Error<DbError>) -> Result<u32, DbError> {
        assert_eq!(error.inner(), Some(&DbError::NotFound));
        self.hits += 10;
        Ok(self.hits + sku.len() as u32)
    }
}

#[resil::circuit_breaker(name = "cb-generic")]
fn total<T>(items: &[T], weight: impl Fn(&T) -> u32) -> Result<u32, DbError>
where
    T: std::fmt::Debug,
{
    Ok(items.iter().map(weight).sum())
}

#[tokio::test]
async fn methods_and_generics_work() {
    let mut c = Counter { hits: 0 };
    assert_eq!(c.hit(2), Ok(2));
    assert_eq!(c.bump("x".into()).await, Ok(3));
    assert_eq!(c.bump(String::new()).await, Ok(14));
    let c = Arc::new(c);
    assert_eq!(c.clone().shared(false).await, Ok(14));
    assert_eq!(c.shared(true).await, Ok(114));
    assert_eq!(total(&["a", "bc"], |s| s.len() as u32), Ok(3));
    assert_eq!(total::<u32>(&[], |n| *n), Ok(0));
}

#[resil::circuit_breaker(name = "cb-send")]
async fn send_future(sku: String) -> Result<usize, DbError> {
    tokio::task::yield_now().await;
    Ok(sku.len())
}

#[resil::circuit_breaker(name = "cb-not-send")]
async fn not_send_future(sku: std::rc::Rc<String>) -> Result<usize, DbError> {
    tokio::task::yield_now().await;
    Ok(sku.len())
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[tokio::test]
async fn a_send_future_stays_send() {
    assert_eq!(assert_send(send_future("ab".into())).await, Ok(2));
    assert_eq!(
        assert_send(Counter { hits: 0 }.bump("x".into())).await,
        Ok(1)
    );
    // Not `Send` when the body is not: nothing is added that would make it so.
    assert_eq!(not_send_future(std::rc::Rc::new("abc".into())).await, Ok(3));
    assert_eq!(
        tokio::spawn(send_future("abc".into())).await.unwrap(),
        Ok(3)
    );
}

#[test]
fn declarations_describe_each_call_site() {
    let decls = resil_config::declarations();
    let d = decls
        .iter()
        .find(|d| d.name() == "cb-fallback")
        .expect("declared");
    assert_eq!(d.aspect(), resil_config::Aspect::CircuitBreaker);
    assert_eq!(d.function(), "cached");
    assert_eq!(d.module(), "macros_circuit_breaker");
    assert_eq!(d.fallback(), Some("answer_from_cache"));
    assert_eq!(d.error_type(), "DbError");
    assert_eq!(
        d.error_kinds(),
        ["ConnectionRefused", "NotFound", "Rejected"]
    );
    assert!(d.file().ends_with("macros_circuit_breaker.rs"));
    let generic = decls.iter().find(|d| d.name() == "cb-self-inner").unwrap();
    assert_eq!(generic.fallback(), Some("Self::no_stock"));
}
