//! The Spring Cloud CircuitBreaker facade's lookup: the configuration of
//! `Resilience4JCircuitBreakerFactory` (the id's, the group's, then the
//! default) and its bulkhead provider, `disable-time-limiter`, customizers,
//! the group meter filter and the global factory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil::circuit_breaker::CircuitBreakerConfig;
use resil::cloud::{BlockingBulkhead, BreakerConfig, CircuitBreakerFactory};
use resil::time_limiter::TimeLimiterConfig;

mod support_cloud;

use support_cloud::{factory, registries, timeout, window};

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
