//! The Spring Cloud facade's calls: the order TimeLimiter inside Bulkhead
//! inside CircuitBreaker, blocking and async, with a classifier, on the
//! bounded executor, a group's thread pool or the caller's thread.
//!
//! Blocking timeouts wait for real time (a parked thread cannot wait on a
//! virtual clock): they are 20–50 ms, and the suppliers that "hang" block on
//! a channel, released at the end of each test.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil::Error;
use resil::circuit_breaker::{CircuitBreakerClassifier, State};
use resil::clock::TokioClock;
use resil::cloud::{BlockingBulkhead, CircuitBreakerFactory};
use resil_config::Resilience;

mod support_cloud;

use support_cloud::factory;

/// A timeout is a failure of the breaker: enough of them open it, and then
/// the supplier is not called at all.
#[test]
fn timeouts_open_the_breaker_and_then_nothing_reaches_the_supplier() {
    let f = factory(
        r#"
        [circuitbreaker.configs.default]
        sliding-window-size = 2
        minimum-number-of-calls = 2
        [timelimiter.configs.default]
        timeout-duration = "20ms"
        [cloud]
        enable-semaphore-default-bulkhead = true
        "#,
    );
    let breaker = f.create_in_group("slow-query", "inventory");
    let calls = Arc::new(AtomicUsize::new(0));
    let (release, gate) = mpsc::channel::<()>();
    let gate = Arc::new(Mutex::new(gate));
    for _ in 0..2 {
        let (calls, gate) = (calls.clone(), gate.clone());
        let outcome = breaker.run(
            move || {
                calls.fetch_add(1, Ordering::SeqCst);
                let _ = gate.lock().unwrap().recv();
                Ok::<_, ()>("late")
            },
            |e| match e {
                Error::Timeout(t) => {
                    assert_eq!(t.timeout(), Duration::from_millis(20));
                    "timeout"
                }
                other => panic!("expected a timeout, got {other:?}"),
            },
        );
        assert_eq!(outcome, "timeout");
    }
    assert_eq!(breaker.circuit_breaker().state(), State::Open);
    assert_eq!(
        breaker.circuit_breaker().metrics().number_of_failed_calls(),
        2
    );
    // its own counter: whether the timed-out suppliers ever started is the
    // pool's business (one whose caller gave up before it started is not run)
    let reached = Arc::new(AtomicUsize::new(0));
    let counted = reached.clone();
    let outcome = breaker.run(
        move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ()>("reached")
        },
        |e| match e {
            Error::CallNotPermitted(_) => "open",
            other => panic!("expected the open breaker, got {other:?}"),
        },
    );
    assert_eq!(outcome, "open");
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "the open breaker called the supplier"
    );
    assert!(calls.load(Ordering::SeqCst) <= 2);
    assert_eq!(
        breaker
            .time_limiter()
            .unwrap()
            .metrics()
            .number_of_timeout_calls(),
        2
    );
    drop(release);
}

/// A full bulkhead is a fallback, not a downstream call; the downstream's
/// own error is told apart from it.
#[test]
fn a_full_bulkhead_is_a_fallback_not_a_downstream_call() {
    let f = factory(
        r#"
        [bulkhead.configs.inventory]
        max-concurrent-calls = 1
        [timelimiter.configs.default]
        timeout-duration = "10s"
        [cloud]
        enable-semaphore-default-bulkhead = true
        "#,
    );
    let breaker = f.create_in_group("reserve", "inventory");
    let calls = Arc::new(AtomicUsize::new(0));
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (release, gate) = mpsc::channel::<()>();
    let holder = {
        let (breaker, calls) = (breaker.clone(), calls.clone());
        std::thread::spawn(move || {
            breaker.run(
                move || {
                    calls.fetch_add(1, Ordering::SeqCst);
                    entered_tx.send(()).unwrap();
                    let _ = gate.recv();
                    Ok::<_, String>("held")
                },
                |e| panic!("the first call failed: {e:?}"),
            )
        })
    };
    entered.recv().unwrap();
    let counted = calls.clone();
    let outcome = breaker.run(
        move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>("reached")
        },
        |e| match e {
            Error::BulkheadFull(full) => {
                assert_eq!(full.name(), "inventory");
                "full"
            }
            other => panic!("expected a full bulkhead, got {other:?}"),
        },
    );
    assert_eq!(outcome, "full");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    release.send(()).unwrap();
    assert_eq!(holder.join().unwrap(), "held");
    // the downstream's own error reaches the fallback as itself
    let outcome = breaker.run(
        || Err::<&str, _>("connection refused".to_owned()),
        |e| match e {
            Error::Inner(msg) => {
                assert_eq!(msg, "connection refused");
                "downstream"
            }
            other => panic!("expected the call's error, got {other:?}"),
        },
    );
    assert_eq!(outcome, "downstream");
    // the full bulkhead and the error are the breaker's failures
    assert_eq!(
        breaker.circuit_breaker().metrics().number_of_failed_calls(),
        2
    );
}

/// Suppliers that never return never grow the executor past its bound:
/// the next call is refused at once, by the executor.
#[test]
fn blocked_suppliers_never_grow_the_executor() {
    let f = factory(
        r#"
        [circuitbreaker.configs.default]
        minimum-number-of-calls = 100
        [timelimiter.configs.default]
        timeout-duration = "20ms"
        [cloud]
        enable-semaphore-default-bulkhead = true
        executor-max-threads = 2
        "#,
    );
    let breaker = f.create_in_group("hanging", "downstream");
    let (release, gate) = mpsc::channel::<()>();
    let gate = Arc::new(Mutex::new(gate));
    let mut outcomes = Vec::new();
    for _ in 0..6 {
        let gate = gate.clone();
        outcomes.push(breaker.run(
            move || {
                let _ = gate.lock().unwrap().recv();
                Ok::<_, ()>("late".to_owned())
            },
            |e| match e {
                Error::Timeout(_) => "timeout".to_owned(),
                Error::BulkheadFull(full) => format!("refused by {}", full.name()),
                other => panic!("unexpected {other:?}"),
            },
        ));
        let executor = breaker.executor().unwrap();
        assert!(executor.metrics().thread_pool_size() <= 2);
    }
    assert_eq!(&outcomes[..2], ["timeout", "timeout"]);
    assert!(
        outcomes[2..]
            .iter()
            .all(|o| o == "refused by cloud-executor-downstream"),
        "{outcomes:?}"
    );
    assert_eq!(breaker.executor().unwrap().metrics().thread_pool_size(), 2);
    drop(release);
}

/// `disable-thread-pool`: the supplier runs on the caller's thread, and no
/// time limiter sees it.
#[test]
fn without_the_thread_pool_the_supplier_runs_on_the_callers_thread() {
    let f = factory(
        r#"
        [cloud]
        disable-thread-pool = true
        enable-semaphore-default-bulkhead = true
        "#,
    );
    let breaker = f.create_in_group("local", "inline");
    assert!(breaker.executor().is_none());
    let caller = std::thread::current().id();
    let ran_on = breaker.run(
        || Ok::<_, ()>(std::thread::current().id()),
        |e| panic!("{e:?}"),
    );
    assert_eq!(ran_on, caller);
    let tl = breaker
        .time_limiter()
        .expect("async calls keep their time limiter");
    assert_eq!(tl.metrics().number_of_successful_calls(), 0);
    assert_eq!(
        breaker
            .circuit_breaker()
            .metrics()
            .number_of_successful_calls(),
        1
    );
}

/// With the thread pool, the supplier runs on the executor.
#[test]
fn with_the_thread_pool_the_supplier_runs_on_the_executor() {
    let f = factory("[cloud]\nenable-semaphore-default-bulkhead = true\n");
    let breaker = f.create("pooled");
    let name = breaker.run(
        || Ok::<_, ()>(std::thread::current().name().map(str::to_owned)),
        |e| panic!("{e:?}"),
    );
    assert!(
        name.as_deref()
            .is_some_and(|n| n.contains("cloud-executor")),
        "ran on {name:?}"
    );
    assert_eq!(
        breaker
            .time_limiter()
            .unwrap()
            .metrics()
            .number_of_successful_calls(),
        1
    );
}

/// The async form: the same order, on paused tokio time.
#[tokio::test(start_paused = true)]
async fn run_async_times_out_opens_the_breaker_and_tells_errors_apart() {
    let loaded = Resilience::builder()
        .file_contents(
            "resilience.toml",
            r#"
            [circuitbreaker.configs.default]
            sliding-window-size = 2
            minimum-number-of-calls = 2
            [timelimiter.configs.default]
            timeout-duration = "800ms"
            [bulkhead.configs.inventory]
            max-concurrent-calls = 1
            "#,
        )
        .env_vars(Vec::<(String, String)>::new())
        .clock(TokioClock::new())
        .load()
        .unwrap();
    let f = CircuitBreakerFactory::builder()
        .registries(Arc::new(loaded.into_parts().0))
        .build();
    let breaker = f.create_in_group("query", "inventory");
    assert_eq!(breaker.async_bulkhead().name(), "inventory");

    let ok = breaker
        .run_async(|| async { Ok::<_, String>(7) }, |_| 0)
        .await;
    assert_eq!(ok, 7);
    let slow = breaker
        .run_async(
            || async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok::<_, String>(7)
            },
            |e| match e {
                Error::Timeout(_) => -1,
                other => panic!("expected a timeout, got {other:?}"),
            },
        )
        .await;
    assert_eq!(slow, -1);
    assert_eq!(breaker.circuit_breaker().state(), State::Open);
    let calls = AtomicUsize::new(0);
    let open = breaker
        .run_async(
            || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(7)
            },
            |e| match e {
                Error::CallNotPermitted(_) => -2,
                other => panic!("expected the open breaker, got {other:?}"),
            },
        )
        .await;
    assert_eq!(open, -2);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

/// The async bulkhead is full while a call holds it: a fallback, and the
/// future is never created.
#[tokio::test(start_paused = true)]
async fn run_async_full_bulkhead_is_a_fallback() {
    let f = factory("[bulkhead.configs.inventory]\nmax-concurrent-calls = 1\n");
    let breaker = f.create_in_group("reserve", "inventory");
    let (release, gate) = tokio::sync::oneshot::channel::<()>();
    let holder = {
        let breaker = breaker.clone();
        tokio::spawn(async move {
            breaker
                .run_async(
                    || async {
                        let _ = gate.await;
                        Ok::<_, String>("held")
                    },
                    |e| panic!("{e:?}"),
                )
                .await
        })
    };
    tokio::task::yield_now().await;
    let calls = AtomicUsize::new(0);
    let outcome = breaker
        .run_async(
            || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>("reached")
            },
            |e| match e {
                Error::BulkheadFull(_) => "full",
                other => panic!("expected a full bulkhead, got {other:?}"),
            },
        )
        .await;
    assert_eq!(outcome, "full");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    release.send(()).unwrap();
    assert_eq!(holder.await.unwrap(), "held");
}

/// A classifier decides what the breaker counts, as the attributes' do.
#[test]
fn run_with_classifies_with_the_given_classifier() {
    let f =
        factory("[cloud]\ndisable-thread-pool = true\nenable-semaphore-default-bulkhead = true\n");
    let breaker = f.create("classified");
    const IGNORE_NOT_FOUND: CircuitBreakerClassifier<u32, &str> =
        CircuitBreakerClassifier::new().ignore(|e| *e == "not found");
    let v = breaker.run_with(&IGNORE_NOT_FOUND, || Err("not found"), |_| 0);
    assert_eq!(v, 0);
    let m = breaker.circuit_breaker().metrics();
    assert_eq!(
        (m.number_of_failed_calls(), m.number_of_buffered_calls()),
        (0, 0)
    );
}

/// Eight callers at once on a group's thread pool of two threads, with slow
/// suppliers and a time limiter: every caller answers at its own timeout
/// (the time limiter is around the pool, so the wait in its queue counts),
/// the pool is the only executor (a call holds one thread), and the
/// suppliers of the callers that gave up while queued never run.
#[test]
fn every_caller_answers_at_its_timeout_and_queued_suppliers_of_gone_callers_do_not_run() {
    let f = factory(
        r#"
        [timelimiter.configs.default]
        timeout-duration = "200ms"
        [thread-pool-bulkhead.configs.slow-group]
        core-thread-pool-size = 2
        max-thread-pool-size = 2
        queue-capacity = 8
        "#,
    );
    let breaker = f.create_in_group("slow-supplier", "slow-group");
    let BlockingBulkhead::ThreadPool(pool) = breaker.bulkhead() else {
        panic!("a thread-pool bulkhead");
    };
    let pool = pool.clone();
    let started = Arc::new(AtomicUsize::new(0));
    let (release, gate) = mpsc::channel::<()>();
    let gate = Arc::new(Mutex::new(gate));
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let (breaker, started, gate) = (breaker.clone(), started.clone(), gate.clone());
            std::thread::spawn(move || {
                breaker.run(
                    move || {
                        started.fetch_add(1, Ordering::SeqCst);
                        // Blocks until the test lets it go.
                        let _ = gate.lock().unwrap().recv();
                        Ok::<_, ()>(1)
                    },
                    |error| match error {
                        resil::Error::Timeout(_) => 0,
                        other => panic!("expected a timeout, got {other:?}"),
                    },
                )
            })
        })
        .collect();
    // Every caller answers while every supplier that started is still
    // blocked: none waited for a supplier, nor for another caller's.
    let answers: Vec<u32> = callers.into_iter().map(|c| c.join().unwrap()).collect();
    assert_eq!(answers, vec![0; 8]);
    assert!(
        started.load(Ordering::SeqCst) <= 2,
        "only the pool's two threads ran a supplier"
    );
    // No second executor: the factory's own is idle, the pool holds the calls.
    if let Some(executor) = breaker.executor() {
        assert_eq!(executor.metrics().active_thread_count(), 0);
    }
    // Let the two running suppliers finish; the queued ones, whose callers
    // are gone, are skipped.
    drop(release);
    while pool.metrics().queue_depth() > 0 || pool.metrics().active_thread_count() > 0 {
        std::thread::yield_now();
    }
    // (Two, unless a caller gave up even before a thread took its task.)
    assert!(
        started.load(Ordering::SeqCst) <= 2,
        "a supplier of a gone caller ran"
    );
    assert_eq!(
        breaker.circuit_breaker().metrics().number_of_failed_calls(),
        8
    );
}
