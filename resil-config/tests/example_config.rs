//! The example inventory service's configuration loads and yields exactly
//! the values it states, from resilience.toml and from the Spring
//! `application.yml` it was translated from, copied unchanged.

use std::time::Duration;

use resil_config::{Aspect, Declaration, Registries, Report, Resilience};
use resil_core::circuit_breaker::SlidingWindowType;

const KINDS: &[&str] = &["InventoryConnectionException", "InventoryBusinessException"];

macro_rules! query {
    ($aspect:ident) => {
        Declaration {
            aspect: Aspect::$aspect,
            name: "inventory-query",
            module: "inventory_service::inventory",
            function: "query",
            file: "src/inventory.rs",
            line: 42,
            fallback: None,
            error_type: "InventoryError",
            error_kinds: KINDS,
            detachable: false,
        }
    };
}

/// What the inventory service declares: `query` under four attributes.
static DECLARED: [Declaration; 4] = [
    query!(Retry),
    query!(CircuitBreaker),
    query!(Bulkhead),
    query!(TimeLimiter),
];

fn load(path: &str) -> (Registries, Report) {
    // the application.yml's `management:` block is Spring Boot's: the one
    // warning it gets (checked below), which strict mode would refuse
    let strict = !path.ends_with(".yml");
    let loaded = Resilience::builder()
        .file(path)
        .env_vars(Vec::<(String, String)>::new())
        .declarations(DECLARED.iter())
        .strict(strict)
        .load();
    match loaded {
        Ok(l) => l.into_parts(),
        Err(e) => panic!("{e}"),
    }
}

fn assert_inventory_values(r: &Registries) {
    let ms = Duration::from_millis;

    let cb = r
        .circuit_breakers()
        .find("inventory-query")
        .expect("created eagerly");
    let c = cb.config();
    assert_eq!(c.sliding_window_type(), SlidingWindowType::CountBased);
    assert_eq!(c.sliding_window_size(), 20);
    assert_eq!(c.minimum_number_of_calls(), 10);
    assert_eq!(c.failure_rate_threshold(), 50.0);
    assert_eq!(c.slow_call_duration_threshold(), ms(500));
    assert_eq!(c.slow_call_rate_threshold(), 60.0);
    assert_eq!(
        c.wait_interval_function_in_open_state().as_constant(),
        Some(Duration::from_secs(10))
    );
    assert_eq!(c.permitted_number_of_calls_in_half_open_state(), 3);
    assert_eq!(
        c.max_wait_duration_in_half_open_state(),
        Duration::from_secs(3)
    );
    assert!(!c.automatic_transition_from_open_to_half_open_enabled());
    // what the file leaves unset keeps Resilience4j's defaults
    assert!(c.record_errors().is_empty());
    assert_eq!(c.event_consumer_buffer_size(), 100);
    // the named config is registered too
    let base = r
        .circuit_breakers()
        .configuration("inventory-base")
        .expect("configs are registered");
    assert_eq!(base.sliding_window_size(), 20);

    let bh = r
        .bulkheads()
        .find("inventory-query")
        .expect("created eagerly");
    assert_eq!(bh.config().max_concurrent_calls(), 20);
    assert_eq!(bh.config().max_wait_duration(), Duration::ZERO);

    let tl = r
        .time_limiters()
        .find("inventory-query")
        .expect("created eagerly");
    assert_eq!(tl.config().timeout_duration(), ms(800));
    assert!(tl.config().cancel_running_future());

    let retry = r
        .retries()
        .find("inventory-query")
        .expect("created eagerly");
    let c = retry.config();
    assert_eq!(c.max_attempts(), 2);
    assert_eq!(c.interval_bi_function().as_constant(), Some(ms(100)));
    assert_eq!(
        c.retry_errors(),
        [Box::<str>::from("InventoryConnectionException")]
    );
    assert_eq!(
        c.ignore_errors(),
        [Box::<str>::from("InventoryBusinessException")]
    );
}

fn assert_report(report: &Report) {
    let yaml = report.file().is_some_and(|f| f.ends_with(".yml"));
    let warned: Vec<&str> = report.warnings().iter().map(|w| w.key()).collect();
    let expected: &[&str] = if yaml { &["management"] } else { &[] };
    assert_eq!(warned, expected, "{:?}", report.warnings());
    let names: Vec<(Aspect, &str)> = report
        .instances()
        .iter()
        .map(|i| (i.aspect(), i.name()))
        .collect();
    assert_eq!(
        names,
        [
            (Aspect::CircuitBreaker, "inventory-query"),
            (Aspect::Retry, "inventory-query"),
            (Aspect::Bulkhead, "inventory-query"),
            (Aspect::TimeLimiter, "inventory-query"),
        ]
    );
    let cb = report
        .instance(Aspect::CircuitBreaker, "inventory-query")
        .unwrap();
    assert_eq!(
        cb.chain(),
        ["instances.inventory-query", "configs.inventory-base"]
    );
    assert_eq!(cb.setting("slow-call-duration-threshold"), Some("500ms"));
    assert_eq!(cb.setting("wait-duration-in-open-state"), Some("10s"));
    assert_eq!(cb.declared_at().len(), 1);
    let shown = report.to_string();
    assert!(
        shown.contains("4 protected function declarations"),
        "{shown}"
    );
    assert!(
        shown.contains("used by inventory_service::inventory::query at src/inventory.rs:42"),
        "{shown}"
    );
}

#[test]
fn the_inventory_config_in_toml() {
    let (registries, report) = load("tests/data/inventory.toml");
    assert_inventory_values(&registries);
    assert_report(&report);
    assert_eq!(report.file(), Some("tests/data/inventory.toml"));
}

#[test]
fn the_inventory_config_in_spring_yaml_copied_unchanged() {
    let (registries, report) = load("tests/data/application.yml");
    assert_inventory_values(&registries);
    assert_report(&report);
}

#[test]
fn both_forms_print_the_same_settings() {
    let (_, toml) = load("tests/data/inventory.toml");
    let (_, yaml) = load("tests/data/application.yml");
    for (a, b) in toml.instances().iter().zip(yaml.instances()) {
        assert_eq!(a.settings(), b.settings(), "{} `{}`", a.aspect(), a.name());
    }
}
