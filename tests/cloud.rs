//! The Spring Cloud CircuitBreaker facade: the configuration lookup of
//! `Resilience4JCircuitBreakerFactory` and its bulkhead provider, the order
//! TimeLimiter inside Bulkhead inside CircuitBreaker, the bounded executor,
//! and `[cloud]` / `spring.cloud.circuitbreaker.resilience4j` validation.
//!
//! Blocking timeouts wait for real time (a parked thread cannot wait on a
//! virtual clock): they are 20–50 ms, and the suppliers that "hang" block on
//! a channel, released at the end of each test.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil::Error;
use resil::circuit_breaker::{CircuitBreakerClassifier, CircuitBreakerConfig, State};
use resil::clock::TokioClock;
use resil::cloud::{BlockingBulkhead, BreakerConfig, CircuitBreakerFactory};
use resil::time_limiter::TimeLimiterConfig;
use resil_config::{Registries, Resilience};

fn load(
    name: &str,
    text: &str,
    env: &[(&str, &str)],
) -> Result<Registries, resil::config::InitError> {
    let vars: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Resilience::builder()
        .file_contents(name, text)
        .env_vars(vars)
        .offline(true)
        .load()
        .map(|r| r.into_parts().0)
}

fn registries(toml: &str) -> Arc<Registries> {
    Arc::new(load("resilience.toml", toml, &[]).expect("a valid file"))
}

fn factory(toml: &str) -> CircuitBreakerFactory {
    CircuitBreakerFactory::builder()
        .registries(registries(toml))
        .build()
}

fn window(b: &resil::cloud::CloudCircuitBreaker) -> u32 {
    b.circuit_breaker().config().sliding_window_size()
}

fn timeout(b: &resil::cloud::CloudCircuitBreaker) -> Duration {
    b.time_limiter().unwrap().config().timeout_duration()
}

/// Every row of Spring Cloud's lookup for the breaker and the time limiter.
#[test]
fn settings_come_from_the_id_then_the_group_then_the_default() {
    let f = factory(
        r#"
        [circuitbreaker.configs.default]
        sliding-window-size = 11
        [circuitbreaker.configs.by-config]
        sliding-window-size = 5
        [circuitbreaker.configs.shop]
        sliding-window-size = 9
        [circuitbreaker.instances.by-instance]
        sliding-window-size = 3
        [circuitbreaker.instances.both]
        sliding-window-size = 4
        [circuitbreaker.configs.both]
        sliding-window-size = 6

        [timelimiter.configs.default]
        timeout-duration = "11s"
        [timelimiter.configs.by-config]
        timeout-duration = "5s"
        [timelimiter.configs.shop]
        timeout-duration = "9s"
        [timelimiter.instances.by-instance]
        timeout-duration = "3s"
        [timelimiter.instances.tl-group]
        timeout-duration = "7s"
        "#,
    );
    // an instance of the id: used as it is, without the group's tag
    let b = f.create_in_group("by-instance", "shop");
    assert_eq!(window(&b), 3);
    assert_eq!(timeout(&b), Duration::from_secs(3));
    assert_eq!(b.circuit_breaker().tags().get("group"), None);
    // an instance and a config of the id: the instance exists, it wins
    let b = f.create_in_group("both", "shop");
    assert_eq!(window(&b), 4);
    // a config of the id, before the group's
    let b = f.create_in_group("by-config", "shop");
    assert_eq!(window(&b), 5);
    assert_eq!(timeout(&b), Duration::from_secs(5));
    assert_eq!(b.circuit_breaker().tags()["group"], "shop");
    assert_eq!(b.time_limiter().unwrap().tags()["group"], "shop");
    // the group's config
    let b = f.create_in_group("group-only", "shop");
    assert_eq!(window(&b), 9);
    assert_eq!(timeout(&b), Duration::from_secs(9));
    // neither: the default
    let b = f.create_in_group("neither", "elsewhere");
    assert_eq!(window(&b), 11);
    assert_eq!(timeout(&b), Duration::from_secs(11));
    // the time limiter alone: an instance named after the group is used
    let b = f.create_in_group("neither-2", "tl-group");
    assert_eq!(b.time_limiter().unwrap().name(), "tl-group");
    assert_eq!(timeout(&b), Duration::from_secs(7));
    // create(id) is create_in_group(id, id)
    let b = f.create("shop");
    assert_eq!((b.id(), b.group()), ("shop", "shop"));
    assert_eq!(window(&b), 9);
}

/// The factory's own defaults come after the file's configs, as in Spring Cloud.
#[test]
fn the_factory_default_and_configure_come_after_the_configs() {
    let config = |size, secs| {
        BreakerConfig::new(
            CircuitBreakerConfig::builder()
                .sliding_window_size(size)
                .build()
                .unwrap(),
            TimeLimiterConfig::builder()
                .timeout_duration(Duration::from_secs(secs))
                .build()
                .unwrap(),
        )
    };
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let f = CircuitBreakerFactory::builder()
        .registries(registries(
            "[circuitbreaker.configs.shop]\nsliding-window-size = 9\n",
        ))
        .configure(config(21, 21), &["configured", "configured-in-shop"])
        .configure_default(move |id| {
            seen.lock().unwrap().push(id.to_owned());
            config(13, 13)
        })
        .build();
    let plain = f.create_in_group("plain", "elsewhere");
    assert_eq!(window(&plain), 13);
    assert_eq!(timeout(&plain), Duration::from_secs(13));
    let b = f.create_in_group("configured", "elsewhere");
    assert_eq!(window(&b), 21);
    // configs.<group> wins over configure(), which only replaces the default
    let b = f.create_in_group("configured-in-shop", "shop");
    assert_eq!(window(&b), 9);
    assert_eq!(timeout(&b), Duration::from_secs(21));
    // the default function ran for the one id it had to answer for
    assert_eq!(*asked.lock().unwrap(), ["plain"]);
    // a second create is the same breaker, the registry's, not a second lookup
    let again = f.create_in_group("plain", "elsewhere");
    assert!(std::ptr::eq(
        again.circuit_breaker(),
        plain.circuit_breaker()
    ));
    let registered = f.registries().circuit_breakers().find("plain").unwrap();
    assert!(std::ptr::eq(plain.circuit_breaker(), &*registered));
    assert_eq!(asked.lock().unwrap().len(), 1);
}

/// The bulkhead provider: one bulkhead per group, of the kind Spring Cloud picks.
#[test]
fn the_bulkhead_is_the_groups_and_of_the_kind_spring_cloud_picks() {
    let f = factory(
        r#"
        [bulkhead.instances.semaphore-group]
        max-concurrent-calls = 3
        [thread-pool-bulkhead.configs.pool-group]
        max-thread-pool-size = 3
        core-thread-pool-size = 1
        "#,
    );
    // nothing of that name: a thread-pool bulkhead, from configs.<group>
    match f.create_in_group("a", "pool-group").bulkhead() {
        BlockingBulkhead::ThreadPool(b) => {
            assert_eq!(b.name(), "pool-group");
            assert_eq!(b.config().max_thread_pool_size(), 3);
            assert_eq!(b.tags()["group"], "pool-group");
        }
        other => panic!("expected a thread-pool bulkhead, got {other:?}"),
    }
    // a semaphore bulkhead of that name exists: that one
    match f.create_in_group("b", "semaphore-group").bulkhead() {
        BlockingBulkhead::Semaphore(b) => {
            assert_eq!(b.name(), "semaphore-group");
            assert_eq!(b.config().max_concurrent_calls(), 3);
        }
        other => panic!("expected a semaphore bulkhead, got {other:?}"),
    }
    // two ids of one group share it
    let (x, y) = (
        f.create_in_group("x", "semaphore-group"),
        f.create_in_group("y", "semaphore-group"),
    );
    assert!(std::ptr::eq(x.async_bulkhead(), y.async_bulkhead()));

    let f = factory(
        r#"
        [cloud]
        enable-semaphore-default-bulkhead = true
        [thread-pool-bulkhead.instances.pool-group]
        max-thread-pool-size = 2
        core-thread-pool-size = 1
        "#,
    );
    assert!(matches!(
        f.create_in_group("a", "any-group").bulkhead(),
        BlockingBulkhead::Semaphore(b) if b.name() == "any-group"
    ));
    // a thread-pool bulkhead of that name wins over the semaphore default
    assert!(matches!(
        f.create_in_group("b", "pool-group").bulkhead(),
        BlockingBulkhead::ThreadPool(b) if b.name() == "pool-group"
    ));
}

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

/// `disable-time-limiter` and its map, per id and per group.
#[test]
fn the_time_limiter_is_disabled_per_id_then_group_then_globally() {
    let f = factory(
        r#"
        [cloud]
        disable-time-limiter = true
        [cloud.disable-time-limiter-map]
        kept = false
        kept-group = false
        dropped = true
        "#,
    );
    assert!(f.create_in_group("kept", "any").time_limiter().is_some());
    assert!(
        f.create_in_group("other", "kept-group")
            .time_limiter()
            .is_some()
    );
    assert!(
        f.create_in_group("dropped", "kept-group")
            .time_limiter()
            .is_none()
    );
    assert!(f.create_in_group("plain", "any").time_limiter().is_none());
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

/// A customizer runs once per breaker, when the factory first creates it.
#[test]
fn a_customizer_runs_once_per_breaker() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let f = CircuitBreakerFactory::builder()
        .registries(registries(""))
        .add_circuit_breaker_customizer(
            move |cb| {
                assert_eq!(cb.name(), "customized");
                counted.fetch_add(1, Ordering::SeqCst);
            },
            &["customized"],
        )
        .build();
    for _ in 0..3 {
        let b = f.create("customized");
        let _ = b.run(|| Ok::<_, ()>(1), |_| 0);
    }
    let _ = f.create("other");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// Spring Cloud's group meter filter: instances without a group get the default tag.
#[test]
fn the_group_meter_filter_tags_every_instance() {
    let f = factory(
        r#"
        [cloud]
        enable-group-meter-filter = true
        default-group-tag = "ungrouped"
        [circuitbreaker.instances.configured]
        sliding-window-size = 10
        "#,
    );
    let b = f.create_in_group("configured", "shop");
    assert_eq!(b.circuit_breaker().tags()["group"], "ungrouped");
    let b = f.create_in_group("fresh", "shop");
    assert_eq!(b.circuit_breaker().tags()["group"], "shop");
    let plain = f.registries().retries().retry("plain-retry");
    assert_eq!(plain.tags()["group"], "ungrouped");
    // off by default
    let f = factory("[circuitbreaker.instances.configured]\nsliding-window-size = 10\n");
    let cb = f
        .registries()
        .circuit_breakers()
        .find("configured")
        .unwrap();
    assert_eq!(cb.tags().get("group"), None);
}

/// The settings load from an application.yml where Spring Cloud reads them.
#[test]
fn application_yml_is_read_where_spring_cloud_reads_it() {
    let yml = r#"
spring:
  application:
    name: order-service
  cloud:
    circuitbreaker:
      resilience4j:
        enableSemaphoreDefaultBulkhead: true
        disableTimeLimiterMap:
          inventory-reserve: true
resilience4j:
  circuitbreaker:
    configs:
      inventory-service:
        slidingWindowSize: 9
"#;
    let r = load("application.yml", yml, &[]).unwrap();
    let cloud = r.cloud();
    assert!(cloud.enable_semaphore_default_bulkhead());
    assert!(cloud.is_time_limiter_disabled("inventory-reserve", "inventory-service"));
    let f = CircuitBreakerFactory::builder()
        .registries(Arc::new(r))
        .build();
    let b = f.create_in_group("inventory-query", "inventory-service");
    assert_eq!(window(&b), 9);
    assert!(matches!(b.bulkhead(), BlockingBulkhead::Semaphore(_)));

    // with only Spring Cloud's settings and no resilience4j tree
    let only = "spring:\n  cloud:\n    circuitbreaker:\n      resilience4j:\n        executorMaxThreads: 4\n";
    assert_eq!(
        load("application.yml", only, &[])
            .unwrap()
            .cloud()
            .executor_max_threads(),
        4
    );
}

/// `RESIL_CLOUD__...` overrides, validated as the file is.
#[test]
fn environment_overrides_reach_cloud() {
    let r = load(
        "resilience.toml",
        "[cloud]\nexecutor-max-threads = 8\n",
        &[
            ("RESIL_CLOUD__EXECUTOR_MAX_THREADS", "3"),
            (
                "RESIL_CLOUD__DISABLE_TIME_LIMITER_MAP__INVENTORY_RESERVE",
                "true",
            ),
        ],
    )
    .unwrap();
    assert_eq!(r.cloud().executor_max_threads(), 3);
    assert!(r.cloud().is_time_limiter_disabled("inventory-reserve", "g"));

    let err = load(
        "resilience.toml",
        "",
        &[("RESIL_CLOUD__EXECUTOR_MAX_THREAD", "3")],
    )
    .unwrap_err();
    let p = &err.problems()[0];
    assert_eq!(p.source(), "env RESIL_CLOUD__EXECUTOR_MAX_THREAD");
    assert!(
        p.message().contains("did you mean `executor-max-threads`"),
        "{p}"
    );
    let err = load(
        "resilience.toml",
        "",
        &[("RESIL_CLOUD__EXECUTOR_MAX_THREADS", "many")],
    )
    .unwrap_err();
    let p = &err.problems()[0];
    assert_eq!(
        (p.source(), p.key()),
        (
            "env RESIL_CLOUD__EXECUTOR_MAX_THREADS",
            "cloud.executor-max-threads"
        )
    );
    assert_eq!(p.value(), Some("\"many\""));
}

/// Every mistake in `[cloud]`, at once, each with file, key path and value.
#[test]
fn bad_cloud_keys_are_rejected_with_file_key_path_and_value() {
    let err = load(
        "resilience.toml",
        r#"
        [cloud]
        disable-thread-pol = true
        disable-time-limiter = "sometimes"
        executor-max-threads = 0
        executor-queue-capacity = -1
        default-group-tag = ""
        [cloud.disable-time-limiter-map]
        inventory-reserve = 1
        "#,
        &[],
    )
    .unwrap_err();
    let problems: Vec<(String, String, Option<String>, String)> = err
        .problems()
        .iter()
        .map(|p| {
            (
                p.source().to_owned(),
                p.key().to_owned(),
                p.value().map(str::to_owned),
                p.message().to_owned(),
            )
        })
        .collect();
    let find = |key: &str| {
        problems
            .iter()
            .find(|p| p.1 == key)
            .unwrap_or_else(|| panic!("no problem at {key}: {problems:#?}"))
    };
    assert!(problems.iter().all(|p| p.0 == "resilience.toml"));
    assert!(
        find("cloud.disable-thread-pol")
            .3
            .contains("did you mean `disable-thread-pool`")
    );
    let p = find("cloud.disable-time-limiter");
    assert_eq!(
        (p.2.as_deref(), p.3.as_str()),
        (Some("\"sometimes\""), "expected true or false")
    );
    let p = find("cloud.executor-max-threads");
    assert_eq!(p.2.as_deref(), Some("0"));
    assert!(p.3.contains("from 1 to 10000"), "{}", p.3);
    assert_eq!(
        find("cloud.executor-queue-capacity").2.as_deref(),
        Some("-1")
    );
    assert!(
        find("cloud.default-group-tag")
            .3
            .contains("must not be empty")
    );
    assert_eq!(
        find("cloud.disable-time-limiter-map.inventory-reserve")
            .2
            .as_deref(),
        Some("1")
    );
    assert_eq!(problems.len(), 6, "{problems:#?}");

    // in an application.yml, the path is Spring Cloud's
    let yml = "spring:\n  cloud:\n    circuitbreaker:\n      resilience4j:\n        disableThreadPool: maybe\n";
    let err = load("application.yml", yml, &[]).unwrap_err();
    let p = &err.problems()[0];
    assert_eq!(
        (p.source(), p.key(), p.value()),
        (
            "application.yml",
            "spring.cloud.circuitbreaker.resilience4j.disableThreadPool",
            Some("\"maybe\"")
        )
    );
}

/// A refused file leaves nothing half-applied: `init`-style loading fails whole.
#[test]
fn a_bad_cloud_key_fails_the_whole_load() {
    let err = load(
        "resilience.toml",
        "[cloud]\nexecutor-max-threads = 0\n[circuitbreaker.configs.default]\nsliding-window-size = 0\n",
        &[],
    )
    .unwrap_err();
    let keys: Vec<&str> = err.problems().iter().map(|p| p.key()).collect();
    assert!(keys.contains(&"cloud.executor-max-threads"), "{keys:?}");
    assert!(
        keys.iter()
            .any(|k| k.starts_with("circuitbreaker.configs.default")),
        "{keys:?}"
    );
}

/// The global factory: on the global registries, installable only before use.
#[test]
fn the_global_factory_is_on_the_global_registries() {
    let b = resil::cloud::factory().create_in_group("global-cloud", "global-group");
    let found = resil::registries()
        .circuit_breakers()
        .find("global-cloud")
        .expect("created in the global registry");
    assert!(std::ptr::eq(b.circuit_breaker(), &*found));
    assert_eq!(
        CircuitBreakerFactory::builder().install().unwrap_err(),
        resil::cloud::AlreadyInstalled
    );
}

/// A panicking supplier, on the executor or on the caller's thread: the
/// panic reaches the caller, the breaker counts a failure, and every permit
/// goes back.
#[test]
fn a_panicking_supplier_is_resumed_and_every_permit_goes_back() {
    // A timeout no loaded machine reaches before the task panics: the test
    // is about the panic, not the time limiter.
    for toml in [
        "[cloud]\nenable-semaphore-default-bulkhead = true\n",
        "[cloud]\nenable-semaphore-default-bulkhead = true\ndisable-thread-pool = true\n",
    ] {
        let f = factory(&format!(
            "{toml}[timelimiter.configs.default]\ntimeout-duration = \"60s\"\n"
        ));
        let breaker = f.create_in_group("panicky", "panicky-group");
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            breaker.run(|| -> Result<u32, ()> { panic!("supplier bug") }, |_| 0)
        }));
        let message = caught.unwrap_err();
        assert_eq!(
            message.downcast_ref::<&str>(),
            Some(&"supplier bug"),
            "{toml}"
        );
        assert_eq!(
            breaker.circuit_breaker().metrics().number_of_failed_calls(),
            1
        );
        let BlockingBulkhead::Semaphore(bulkhead) = breaker.bulkhead() else {
            panic!("a semaphore bulkhead");
        };
        assert_eq!(
            bulkhead.metrics().available_concurrent_calls(),
            bulkhead.config().max_concurrent_calls()
        );
        // and the next call goes through
        assert_eq!(breaker.run(|| Ok::<_, ()>(5), |_| 0), 5);
    }
}

/// The thread-pool bulkhead of a group survives a panicking supplier too.
#[test]
fn a_panicking_supplier_through_the_thread_pool_bulkhead() {
    // A timeout no loaded machine reaches before the task panics.
    let f = factory("[timelimiter.configs.default]\ntimeout-duration = \"60s\"\n");
    let breaker = f.create_in_group("panicky", "pool");
    assert!(matches!(
        breaker.bulkhead(),
        BlockingBulkhead::ThreadPool(_)
    ));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        breaker.run(|| -> Result<u32, ()> { panic!("supplier bug") }, |_| 0)
    }));
    assert!(caught.is_err());
    assert_eq!(breaker.run(|| Ok::<_, ()>(5), |_| 0), 5);
    let BlockingBulkhead::ThreadPool(pool) = breaker.bulkhead() else {
        unreachable!()
    };
    assert_eq!(pool.metrics().queue_depth(), 0);
}

/// A panicking fallback propagates; the breaker had recorded the error first.
#[test]
fn a_panicking_fallback_propagates_after_the_error_was_recorded() {
    let f = factory("[cloud]\nenable-semaphore-default-bulkhead = true\n");
    let breaker = f.create("fallback-bug");
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        breaker.run(|| Err::<u32, _>("down"), |_| panic!("fallback bug"))
    }));
    assert!(caught.is_err());
    assert_eq!(
        breaker.circuit_breaker().metrics().number_of_failed_calls(),
        1
    );
    assert_eq!(breaker.run(|| Ok::<_, &str>(5), |_| 0), 5);
}

/// Dropping `run_async` at its await gives every permit back and records nothing.
#[tokio::test(start_paused = true)]
async fn dropping_run_async_gives_every_permit_back() {
    let f = factory("[bulkhead.configs.dropped]\nmax-concurrent-calls = 1\n");
    let breaker = f.create_in_group("dropped-call", "dropped");
    let call = breaker.run_async(std::future::pending::<Result<u32, ()>>, |e| {
        panic!("no outcome expected, got {e:?}")
    });
    let mut call = Box::pin(call);
    // polled once: the permits are taken and the future is waiting
    assert!(futures_poll_once(call.as_mut()).await.is_none());
    assert_eq!(
        breaker
            .async_bulkhead()
            .metrics()
            .available_concurrent_calls(),
        0
    );
    drop(call);
    assert_eq!(
        breaker
            .async_bulkhead()
            .metrics()
            .available_concurrent_calls(),
        1
    );
    let m = breaker.circuit_breaker().metrics();
    assert_eq!(m.number_of_buffered_calls(), 0);
    assert_eq!(
        breaker
            .time_limiter()
            .unwrap()
            .metrics()
            .number_of_timeout_calls(),
        0
    );
    // and a panicking future resumes its panic with the permit back
    let caught = tokio::spawn({
        let breaker = breaker.clone();
        async move {
            breaker
                .run_async(
                    || async {
                        if true {
                            panic!("future bug");
                        }
                        Ok::<u32, ()>(1)
                    },
                    |_| 0,
                )
                .await
        }
    })
    .await;
    assert!(caught.unwrap_err().is_panic());
    assert_eq!(
        breaker
            .async_bulkhead()
            .metrics()
            .available_concurrent_calls(),
        1
    );
    assert_eq!(
        breaker.circuit_breaker().metrics().number_of_failed_calls(),
        1
    );
}

/// Polls `f` once.
async fn futures_poll_once<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
    let mut f = f;
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut f).poll(cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        })
    })
    .await
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
