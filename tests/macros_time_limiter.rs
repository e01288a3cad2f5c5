//! `#[time_limiter]` and `cancel-running-future`: an async function whose
//! future owns what it uses (owned arguments, no fallback that needs them
//! afterwards) runs on after the caller's timeout when the configuration
//! says `cancel-running-future = false`; one whose future borrows is
//! cancelled, and `init` says so at start-up.

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use resil::Rejection;
use resil::clock::TokioClock;
use resil::config::{Aspect, Resilience};

#[derive(Debug, Clone, PartialEq)]
enum WriteError {
    Rejected(String),
}

impl From<Rejection> for WriteError {
    fn from(r: Rejection) -> Self {
        WriteError::Rejected(r.to_string())
    }
}

const CONFIG: &str = r#"
[timelimiter.instances.detached-write]
timeout-duration = "1s"
cancel-running-future = false

[timelimiter.instances.cancelled-write]
timeout-duration = "1s"
cancel-running-future = true

[timelimiter.instances.borrowed-write]
timeout-duration = "1s"
cancel-running-future = false

[timelimiter.instances.local-write]
timeout-duration = "1s"
cancel-running-future = false
"#;

/// Owned arguments, no fallback: the future can run on.
#[resil::time_limiter(name = "detached-write")]
async fn detached_write(key: String, done: Arc<AtomicBool>) -> Result<usize, WriteError> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    done.store(true, Ordering::SeqCst);
    Ok(key.len())
}

#[resil::time_limiter(name = "cancelled-write")]
async fn cancelled_write(done: Arc<AtomicBool>) -> Result<(), WriteError> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    done.store(true, Ordering::SeqCst);
    Ok(())
}

/// A borrowed argument: the future cannot outlive the call.
#[resil::time_limiter(name = "borrowed-write")]
async fn borrowed_write(key: &str, done: Arc<AtomicBool>) -> Result<usize, WriteError> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    done.store(true, Ordering::SeqCst);
    Ok(key.len())
}

/// Owned arguments, but the future is not `Send` (an `Rc` across an await).
#[resil::time_limiter(name = "local-write")]
async fn local_write(done: Arc<AtomicBool>) -> Result<(), WriteError> {
    let local = Rc::new(1);
    tokio::time::sleep(Duration::from_secs(5)).await;
    done.store(*local == 1, Ordering::SeqCst);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_body_runs_on_after_a_timeout_only_where_it_can() {
    let report = Resilience::builder()
        .file_contents("resilience.toml", CONFIG)
        .env_vars(Vec::<(String, String)>::new())
        .clock(TokioClock::new())
        .init()
        .unwrap();
    // start-up: only the limiter whose future borrows is said to cancel
    let said: Vec<&str> = report
        .warnings()
        .iter()
        .filter(|w| w.key().ends_with("cancel-running-future"))
        .map(|w| w.key())
        .collect();
    assert_eq!(
        said,
        ["timelimiter.instances.borrowed-write.cancel-running-future"]
    );
    let declared = |name: &str| {
        resil::config::declarations()
            .into_iter()
            .find(|d| d.aspect() == Aspect::TimeLimiter && d.name() == name)
            .unwrap()
            .detachable()
    };
    assert!(declared("detached-write"));
    assert!(!declared("borrowed-write"));

    let done = Arc::new(AtomicBool::new(false));
    let outcome = detached_write("k-1".to_owned(), done.clone()).await;
    assert!(
        matches!(outcome, Err(WriteError::Rejected(_))),
        "{outcome:?}"
    );
    let limiter = resil::registries()
        .time_limiters()
        .find("detached-write")
        .unwrap();
    assert_eq!(limiter.detached_futures(), 1);
    assert!(!done.load(Ordering::SeqCst));
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        done.load(Ordering::SeqCst),
        "the body finished after the timeout"
    );
    assert_eq!(limiter.detached_futures(), 0);

    for (name, done) in [
        ("cancelled-write", {
            let done = Arc::new(AtomicBool::new(false));
            assert!(cancelled_write(done.clone()).await.is_err());
            done
        }),
        ("borrowed-write", {
            let done = Arc::new(AtomicBool::new(false));
            let key = String::from("k-2");
            assert!(borrowed_write(&key, done.clone()).await.is_err());
            done
        }),
        ("local-write", {
            let done = Arc::new(AtomicBool::new(false));
            assert!(local_write(done.clone()).await.is_err());
            done
        }),
    ] {
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(!done.load(Ordering::SeqCst), "{name}: the body ran on");
        let limiter = resil::registries().time_limiters().find(name).unwrap();
        assert_eq!(limiter.metrics().number_of_timeout_calls(), 1, "{name}");
        assert_eq!(limiter.detached_futures(), 0, "{name}");
    }

    // inside a retry (each attempt its own copy of the key), and within the
    // timeout, the value comes back as usual
    assert_eq!(retried_write("k-3".to_owned()).await, Ok(3));

    // under a breaker, without a retry: the chain runs on after a timeout
    // where the limiter says so (the nested chain) and is cancelled where
    // it does not (the flat chain); the breaker records both timeouts
    let done = Arc::new(AtomicBool::new(false));
    assert!(
        guarded_detached_write("k-4".to_owned(), done.clone())
            .await
            .is_err()
    );
    assert_eq!(limiter.detached_futures(), 1);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(done.load(Ordering::SeqCst), "the guarded body ran on");
    assert_eq!(limiter.detached_futures(), 0);

    let done = Arc::new(AtomicBool::new(false));
    assert!(guarded_cancelled_write(done.clone()).await.is_err());
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        !done.load(Ordering::SeqCst),
        "the guarded body was cancelled"
    );

    for name in ["guarded-detached", "guarded-cancelled"] {
        let breaker = resil::registries().circuit_breakers().find(name).unwrap();
        let metrics = breaker.metrics();
        assert_eq!(metrics.number_of_failed_calls(), 1, "{name}");
        assert_eq!(metrics.number_of_buffered_calls(), 1, "{name}");
    }
}

#[resil::circuit_breaker(name = "guarded-detached")]
#[resil::time_limiter(name = "detached-write")]
async fn guarded_detached_write(key: String, done: Arc<AtomicBool>) -> Result<usize, WriteError> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    done.store(true, Ordering::SeqCst);
    Ok(key.len())
}

#[resil::circuit_breaker(name = "guarded-cancelled")]
#[resil::time_limiter(name = "cancelled-write")]
async fn guarded_cancelled_write(done: Arc<AtomicBool>) -> Result<(), WriteError> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    done.store(true, Ordering::SeqCst);
    Ok(())
}

#[resil::retry(name = "detached-retry")]
#[resil::time_limiter(name = "detached-write")]
async fn retried_write(key: String) -> Result<usize, WriteError> {
    Ok(key.len())
}
