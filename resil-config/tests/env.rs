//! Environment overrides, through the builder's injected variables (so tests
//! run in parallel without touching the process environment).

use resil_config::{Aspect, Declaration, InitError, Resilience};

fn load(file: &str, text: &str, vars: &[(&str, &str)]) -> Result<Resilience, InitError> {
    Resilience::builder()
        .file_contents(file, text)
        .env_vars(vars.iter().copied())
        .declarations(DECLARED.iter())
        .load()
}

fn ok(file: &str, text: &str, vars: &[(&str, &str)]) -> Resilience {
    load(file, text, vars).unwrap_or_else(|e| panic!("{e}"))
}

static DECLARED: [Declaration; 2] = [
    Declaration {
        aspect: Aspect::CircuitBreaker,
        name: "payment-v2",
        module: "shop::payment",
        function: "charge",
        file: "src/payment.rs",
        line: 7,
        fallback: None,
        error_type: "PaymentError",
        error_kinds: &[],
        detachable: false,
    },
    Declaration {
        aspect: Aspect::Bulkhead,
        name: "InventoryCommand",
        module: "shop::inventory",
        function: "reserve",
        file: "src/inventory.rs",
        line: 30,
        fallback: None,
        error_type: "InventoryError",
        error_kinds: &[],
        detachable: false,
    },
];

const FILE: &str = r#"
[circuitbreaker.instances.inventory-query]
failure-rate-threshold = 50
sliding-window-size = 20

[circuitbreaker.instances.InventoryCommand]
sliding-window-size = 30
"#;

#[test]
fn an_upper_case_variable_overrides_a_dashed_key_of_a_dashed_name() {
    let var = "RESIL_CIRCUITBREAKER__INSTANCES__INVENTORY_QUERY__FAILURE_RATE_THRESHOLD";
    let loaded = ok("resilience.toml", FILE, &[(var, "70")]);
    let cb = loaded
        .registries()
        .circuit_breakers()
        .find("inventory-query")
        .unwrap();
    assert_eq!(cb.config().failure_rate_threshold(), 70.0);
    assert_eq!(
        cb.config().sliding_window_size(),
        20,
        "the file's other keys stay"
    );
    assert_eq!(loaded.report().env_overrides(), [var.to_owned()]);
    assert!(loaded.report().to_string().contains(var));
}

#[test]
fn a_variable_may_spell_names_and_keys_with_dashes_and_lower_case() {
    let loaded = ok(
        "resilience.toml",
        FILE,
        &[(
            "RESIL_circuitbreaker__instances__inventory-query__failure-rate-threshold",
            "65",
        )],
    );
    let cb = loaded
        .registries()
        .circuit_breakers()
        .find("inventory-query")
        .unwrap();
    assert_eq!(cb.config().failure_rate_threshold(), 65.0);
}

#[test]
fn names_with_capitals_are_reached_upper_case_or_exactly() {
    let loaded = ok(
        "resilience.toml",
        FILE,
        &[(
            "RESIL_CIRCUITBREAKER__INSTANCES__INVENTORYCOMMAND__SLIDING_WINDOW_SIZE",
            "10",
        )],
    );
    let cb = loaded
        .registries()
        .circuit_breakers()
        .find("InventoryCommand")
        .unwrap();
    assert_eq!(cb.config().sliding_window_size(), 10);
    assert!(
        loaded
            .registries()
            .circuit_breakers()
            .find("inventorycommand")
            .is_none()
    );

    let loaded = ok(
        "resilience.toml",
        FILE,
        &[(
            "RESIL_CIRCUITBREAKER__INSTANCES__InventoryCommand__SLIDING_WINDOW_SIZE",
            "11",
        )],
    );
    let cb = loaded
        .registries()
        .circuit_breakers()
        .find("InventoryCommand")
        .unwrap();
    assert_eq!(cb.config().sliding_window_size(), 11);
}

#[test]
fn names_that_only_code_declares_are_reached_with_digits_kept() {
    let loaded = ok(
        "resilience.toml",
        "",
        &[
            (
                "RESIL_CIRCUITBREAKER__INSTANCES__PAYMENT_V2__MINIMUM_NUMBER_OF_CALLS",
                "5",
            ),
            (
                "RESIL_BULKHEAD__INSTANCES__INVENTORY_COMMAND__MAX_CONCURRENT_CALLS",
                "3",
            ),
        ],
    );
    let r = loaded.registries();
    assert_eq!(
        r.circuit_breakers()
            .find("payment-v2")
            .unwrap()
            .config()
            .minimum_number_of_calls(),
        5
    );
    assert_eq!(
        r.bulkheads()
            .find("InventoryCommand")
            .unwrap()
            .config()
            .max_concurrent_calls(),
        3
    );
    assert!(
        loaded.report().warnings().is_empty(),
        "{:?}",
        loaded.report().warnings()
    );
}

#[test]
fn a_new_upper_case_name_is_created_in_kebab_case() {
    let loaded = ok(
        "resilience.toml",
        "",
        &[(
            "RESIL_BULKHEAD__INSTANCES__ORDER_QUERY2__MAX_CONCURRENT_CALLS",
            "4",
        )],
    );
    let bh = loaded
        .registries()
        .bulkheads()
        .find("order-query2")
        .unwrap();
    assert_eq!(bh.config().max_concurrent_calls(), 4);
    // nothing declares it: a likely typo, reported with its source
    let w = &loaded.report().warnings()[0];
    assert_eq!(
        w.source(),
        "env RESIL_BULKHEAD__INSTANCES__ORDER_QUERY2__MAX_CONCURRENT_CALLS"
    );
    assert_eq!(w.key(), "bulkhead.instances.order-query2");
}

#[test]
fn an_override_replaces_the_files_own_spelling_of_the_key() {
    let file = r#"
[circuitbreaker.instances.a]
failureRateThreshold = 50
record-exceptions = ["com.example.A"]
"#;
    let loaded = ok(
        "resilience.toml",
        file,
        &[
            (
                "RESIL_CIRCUITBREAKER__INSTANCES__A__FAILURE_RATE_THRESHOLD",
                "80",
            ),
            (
                "RESIL_CIRCUITBREAKER__INSTANCES__A__RECORD_ERRORS",
                "B, Timeout",
            ),
        ],
    );
    let cb = loaded.registries().circuit_breakers().find("a").unwrap();
    assert_eq!(cb.config().failure_rate_threshold(), 80.0);
    assert_eq!(
        cb.config().record_errors(),
        [Box::<str>::from("B"), Box::<str>::from("Timeout")]
    );
}

#[test]
fn overrides_reach_a_spring_yaml_tree_and_its_aliases() {
    let yaml = "resilience4j:\n  bulkhead:\n    backends:\n      inventory-query:\n        maxConcurrentCalls: 20\n";
    let loaded = ok(
        "application.yml",
        yaml,
        &[(
            "RESIL_BULKHEAD__INSTANCES__INVENTORY_QUERY__MAX_CONCURRENT_CALLS",
            "7",
        )],
    );
    let bh = loaded
        .registries()
        .bulkheads()
        .find("inventory-query")
        .unwrap();
    assert_eq!(bh.config().max_concurrent_calls(), 7);
}

#[test]
fn overrides_create_configs_default_and_tags() {
    let loaded = ok(
        "resilience.toml",
        FILE,
        &[
            (
                "RESIL_CIRCUITBREAKER__CONFIGS__DEFAULT__MINIMUM_NUMBER_OF_CALLS",
                "3",
            ),
            ("RESIL_CIRCUITBREAKER__TAGS__TEAM", "inventory"),
        ],
    );
    let r = loaded.registries().circuit_breakers();
    assert_eq!(
        r.find("inventory-query")
            .unwrap()
            .config()
            .minimum_number_of_calls(),
        3
    );
    assert_eq!(
        r.find("payment-v2")
            .unwrap()
            .config()
            .minimum_number_of_calls(),
        3
    );
    assert_eq!(r.tags().get("team").map(String::as_str), Some("inventory"));
    assert_eq!(
        r.find("inventory-query")
            .unwrap()
            .tags()
            .get("team")
            .map(String::as_str),
        Some("inventory")
    );
}

#[test]
fn a_bad_override_names_the_variable_the_key_and_the_value() {
    let var = "RESIL_CIRCUITBREAKER__INSTANCES__INVENTORY_QUERY__FAILURE_RATE_THRESHOLD";
    let err = load("resilience.toml", FILE, &[(var, "150")]).unwrap_err();
    let p = &err.problems()[0];
    assert_eq!(p.source(), format!("env {var}"));
    assert_eq!(
        p.key(),
        "circuitbreaker.instances.inventory-query.failure-rate-threshold"
    );
    assert_eq!(p.value(), Some("\"150\""));
    assert_eq!(p.message(), "must be in (0, 100]");
}

#[test]
fn every_variable_under_the_prefix_must_map_to_a_key() {
    let err = load(
        "resilience.toml",
        FILE,
        &[
            (
                "RESIL_CIRCUITBREAKER__INSTANCES__INVENTORY_QUERY__FAILURE_RATE",
                "70",
            ),
            (
                "RESIL_CIRCUITBREAKER_INSTANCES_INVENTORY_QUERY_FAILURE_RATE_THRESHOLD",
                "70",
            ),
            ("RESIL_CONFIG", "resilience.toml"),
        ],
    )
    .unwrap_err();
    let shown: Vec<String> = err.problems().iter().map(ToString::to_string).collect();
    assert_eq!(shown.len(), 2, "{shown:#?}");
    assert!(
        shown[0].contains("segments are separated by two underscores"),
        "{}",
        shown[0]
    );
    assert!(shown[1].contains("FAILURE_RATE = \"70\": unknown circuit_breaker setting; did you mean `failure-rate-threshold`?"), "{}", shown[1]);
}

#[test]
fn the_prefix_can_change_and_names_the_file_variable_too() {
    let loaded = Resilience::builder()
        .env_prefix("INVENTORY")
        .env_vars([
            ("INVENTORY_CONFIG", "tests/data/inventory.toml"),
            (
                "INVENTORY_BULKHEAD__INSTANCES__INVENTORY_QUERY__MAX_CONCURRENT_CALLS",
                "9",
            ),
            (
                "RESIL_BULKHEAD__INSTANCES__INVENTORY_QUERY__MAX_CONCURRENT_CALLS",
                "nonsense",
            ),
        ])
        .declarations([])
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.report().file(), Some("tests/data/inventory.toml"));
    let bh = loaded
        .registries()
        .bulkheads()
        .find("inventory-query")
        .unwrap();
    assert_eq!(bh.config().max_concurrent_calls(), 9);
}

#[test]
fn ambiguous_upper_case_names_are_an_error() {
    let err = load(
        "resilience.toml",
        "[bulkhead.instances.order-query]\n[bulkhead.instances.order_query]\n",
        &[(
            "RESIL_BULKHEAD__INSTANCES__ORDER_QUERY__MAX_CONCURRENT_CALLS",
            "1",
        )],
    )
    .unwrap_err();
    assert!(
        err.problems()[0]
            .message()
            .contains("matches several names (`order-query` or `order_query`)"),
        "{err}"
    );
}

#[test]
fn spring_only_tables_load_with_a_warning() {
    let yaml = r#"
resilience4j:
  scheduled:
    executor:
      core-pool-size: 4
  circuitbreaker:
    metrics:
      enabled: true
      legacy:
        enabled: false
    circuit-breaker-aspect-order: 1
    instances:
      payment-v2:
        registerHealthIndicator: true
"#;
    let loaded = ok("application.yml", yaml, &[]);
    let keys: Vec<&str> = loaded.report().warnings().iter().map(|w| w.key()).collect();
    assert_eq!(
        keys,
        [
            "resilience4j.circuitbreaker.circuit-breaker-aspect-order",
            "resilience4j.circuitbreaker.metrics",
            "resilience4j.scheduled",
        ]
    );
    let i = loaded
        .report()
        .instance(Aspect::CircuitBreaker, "payment-v2")
        .unwrap();
    assert_eq!(i.extras().register_health_indicator, Some(true));
}
