//! Inheritance as Resilience4j's Spring binding resolves it:
//! `base-config`, the double role of `configs.default`, key-by-key override,
//! cycles, and the later setter winning where 2.2 threw (the deliberate
//! differences of docs/coming-from-resilience4j.md).

use std::time::Duration;

use resil_config::{Aspect, Declaration, InitError, Resilience};

fn load(text: &str) -> Result<Resilience, InitError> {
    Resilience::builder()
        .file_contents("resilience.toml", text)
        .env_vars(Vec::<(String, String)>::new())
        .declarations(DECLARED.iter())
        .load()
}

fn ok(text: &str) -> Resilience {
    load(text).unwrap_or_else(|e| panic!("{e}"))
}

/// A name that appears only in code.
static DECLARED: [Declaration; 1] = [Declaration {
    aspect: Aspect::CircuitBreaker,
    name: "only-in-code",
    module: "shop",
    function: "f",
    file: "src/lib.rs",
    line: 1,
    fallback: None,
    error_type: "E",
    error_kinds: &[],
    detachable: false,
}];

#[test]
fn a_chain_resolves_key_by_key_nearest_first() {
    let loaded = ok(r#"
[circuitbreaker.configs.default]
sliding-window-size = 50
failure-rate-threshold = 40
slow-call-rate-threshold = 90

[circuitbreaker.configs.shared]
base-config = "default"
failure-rate-threshold = 60
minimum-number-of-calls = 5

[circuitbreaker.instances.a]
base-config = "shared"
minimum-number-of-calls = 7
"#);
    let cb = loaded.registries().circuit_breakers().find("a").unwrap();
    let c = cb.config();
    assert_eq!(c.sliding_window_size(), 50, "from configs.default");
    assert_eq!(c.slow_call_rate_threshold(), 90.0, "from configs.default");
    assert_eq!(
        c.failure_rate_threshold(),
        60.0,
        "configs.shared wins over default"
    );
    assert_eq!(
        c.minimum_number_of_calls(),
        7,
        "the instance wins over shared"
    );
    assert_eq!(
        c.permitted_number_of_calls_in_half_open_state(),
        10,
        "library default"
    );
    let report = loaded
        .report()
        .instance(Aspect::CircuitBreaker, "a")
        .unwrap();
    assert_eq!(
        report.chain(),
        ["instances.a", "configs.shared", "configs.default"]
    );
}

#[test]
fn configs_default_is_the_implicit_base_of_every_table() {
    let loaded = ok(r#"
[circuitbreaker.configs.default]
sliding-window-size = 50

[circuitbreaker.configs.other]
minimum-number-of-calls = 5

[circuitbreaker.instances.a]
base-config = "other"

[circuitbreaker.instances.b]
failure-rate-threshold = 70
"#);
    let r = loaded.registries().circuit_breakers();
    // `other` has no base-config, so it starts from configs.default
    assert_eq!(r.find("a").unwrap().config().sliding_window_size(), 50);
    assert_eq!(r.find("b").unwrap().config().sliding_window_size(), 50);
    assert_eq!(r.configuration("other").unwrap().sliding_window_size(), 50);
}

#[test]
fn configs_default_is_also_the_config_of_names_only_in_code() {
    let loaded = ok("[circuitbreaker.configs.default]\nsliding-window-size = 50\n");
    let r = loaded.registries().circuit_breakers();
    assert_eq!(
        r.find("only-in-code")
            .unwrap()
            .config()
            .sliding_window_size(),
        50
    );
    assert_eq!(r.default_config().sliding_window_size(), 50);
    // and any name asked for later
    assert_eq!(
        r.circuit_breaker("made-up-later")
            .config()
            .sliding_window_size(),
        50
    );
    let i = loaded
        .report()
        .instance(Aspect::CircuitBreaker, "only-in-code")
        .unwrap();
    assert!(!i.configured());
    assert_eq!(i.chain(), ["configs.default"]);
    assert!(
        loaded
            .report()
            .to_string()
            .contains("circuitbreaker `only-in-code` (not configured, runs on configs.default)")
    );
}

#[test]
fn without_configs_default_the_library_defaults_apply() {
    let loaded = ok("[circuitbreaker.instances.a]\nminimum-number-of-calls = 5\n");
    let r = loaded.registries().circuit_breakers();
    assert_eq!(r.find("a").unwrap().config().sliding_window_size(), 100);
    assert_eq!(
        r.find("only-in-code")
            .unwrap()
            .config()
            .minimum_number_of_calls(),
        100
    );
    let i = loaded
        .report()
        .instance(Aspect::CircuitBreaker, "only-in-code")
        .unwrap();
    assert!(i.chain().is_empty());
    assert!(
        loaded
            .report()
            .to_string()
            .contains("circuitbreaker `only-in-code` (library defaults)")
    );
}

#[test]
fn a_table_named_default_does_not_inherit_configs_default() {
    // Resilience4j's rule is by name: `create("default", ..)` has no implicit base
    let loaded = ok(r#"
[bulkhead.configs.default]
max-concurrent-calls = 5
[bulkhead.instances.default]
max-wait-duration = "1s"
"#);
    let bh = loaded.registries().bulkheads().find("default").unwrap();
    assert_eq!(bh.config().max_concurrent_calls(), 25);
    assert_eq!(bh.config().max_wait_duration(), Duration::from_secs(1));
}

#[test]
fn an_error_kind_list_replaces_the_inherited_one() {
    // (no declarations here: `only-in-code`'s error type has no kinds to check against)
    let loaded = Resilience::builder()
        .declarations([])
        .env_vars(Vec::<(String, String)>::new())
        .file_contents(
            "resilience.toml",
            r#"
[circuitbreaker.configs.default]
record-errors = ["A", "B"]
ignore-errors = ["C"]
[circuitbreaker.instances.x]
record-exceptions = ["com.example.D"]
"#,
        )
        .load()
        .unwrap();
    let cb = loaded.registries().circuit_breakers().find("x").unwrap();
    assert_eq!(cb.config().record_errors(), [Box::<str>::from("D")]);
    assert_eq!(cb.config().ignore_errors(), [Box::<str>::from("C")]);
}

#[test]
fn an_instance_wait_replaces_the_bases_without_error() {
    // 2.2 throws when a base's open wait and the instance's are both set on one
    // builder; resil lets the later one win
    let loaded = ok(r#"
[circuitbreaker.configs.default]
wait-duration-in-open-state = "10s"
[circuitbreaker.instances.exp]
wait-duration-in-open-state = "1s"
enable-exponential-backoff = true
exponential-backoff-multiplier = 2
exponential-max-wait-duration-in-open-state = "5s"
[circuitbreaker.instances.rand]
wait-duration-in-open-state = "2s"
enable-randomized-wait = true
randomized-wait-factor = 0.0
[circuitbreaker.instances.plain]
failure-rate-threshold = 20
"#);
    let r = loaded.registries().circuit_breakers();
    let exp = r.find("exp").unwrap();
    let waits: Vec<u128> = (1..=5)
        .map(|n| {
            exp.config()
                .wait_interval_function_in_open_state()
                .apply(n)
                .as_millis()
        })
        .collect();
    assert_eq!(waits, [1000, 2000, 4000, 5000, 5000]);
    let rand = r.find("rand").unwrap();
    assert_eq!(
        rand.config()
            .wait_interval_function_in_open_state()
            .apply(3),
        Duration::from_secs(2)
    );
    let plain = r.find("plain").unwrap();
    assert_eq!(
        plain
            .config()
            .wait_interval_function_in_open_state()
            .as_constant(),
        Some(Duration::from_secs(10))
    );
    let report = loaded.report();
    assert_eq!(
        report
            .instance(Aspect::CircuitBreaker, "exp")
            .unwrap()
            .setting("wait-duration-in-open-state"),
        Some("exponential from 1s × 2, at most 5s")
    );
}

#[test]
fn open_wait_keys_without_a_wait_in_the_same_table_are_warned_about() {
    // Resilience4j reads these keys only in the table that sets the wait
    let loaded = ok(r#"
[circuitbreaker.configs.default]
wait-duration-in-open-state = "10s"
[circuitbreaker.instances.a]
enable-exponential-backoff = true
[circuitbreaker.instances.b]
wait-duration-in-open-state = "1s"
exponential-backoff-multiplier = 3
"#);
    let r = loaded.registries().circuit_breakers();
    let a = r.find("a").unwrap();
    assert_eq!(
        a.config()
            .wait_interval_function_in_open_state()
            .as_constant(),
        Some(Duration::from_secs(10))
    );
    let b = r.find("b").unwrap();
    assert_eq!(
        b.config()
            .wait_interval_function_in_open_state()
            .as_constant(),
        Some(Duration::from_secs(1))
    );
    let warnings: Vec<String> = loaded
        .report()
        .warnings()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(warnings.iter().any(|w| w.contains(
        "circuitbreaker.instances.a.enable-exponential-backoff = true: has no effect: only a table that sets `wait-duration-in-open-state`"
    )), "{warnings:#?}");
    assert!(warnings.iter().any(|w| w.contains(
        "circuitbreaker.instances.b.exponential-backoff-multiplier = 3: has no effect without `enable-exponential-backoff = true`"
    )), "{warnings:#?}");
    // strict mode makes them errors
    let strict = Resilience::builder()
        .file_contents(
            "resilience.toml",
            "[circuitbreaker.instances.only-in-code]\nrandomized-wait-factor = 0.2\n",
        )
        .env_vars(Vec::<(String, String)>::new())
        .declarations(DECLARED.iter())
        .strict(true)
        .load()
        .unwrap_err();
    assert_eq!(strict.problems().len(), 1, "{strict}");
}

#[test]
fn a_cycle_is_reported_once_however_many_tables_reach_it() {
    let err = load(
        r#"
[circuitbreaker.configs.b]
base-config = "c"
[circuitbreaker.configs.c]
base-config = "b"
[circuitbreaker.instances.x]
base-config = "b"
[circuitbreaker.instances.y]
base-config = "c"
"#,
    )
    .unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    let p = &err.problems()[0];
    assert_eq!(p.key(), "circuitbreaker.configs.b.base-config");
    assert_eq!(p.value(), Some("\"c\""));
    assert_eq!(
        p.message(),
        "base-config cycle: configs.b → configs.c → configs.b"
    );
}

#[test]
fn a_longer_cycle_through_default_names_every_table() {
    let err = load(
        r#"
[retry.configs.default]
base-config = "a"
[retry.configs.a]
base-config = "b"
[retry.configs.b]
max-attempts = 2
"#,
    )
    .unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    assert!(
        err.problems()[0].message().starts_with(
            "base-config cycle: configs.a → configs.b → configs.default (implicitly) → configs.a"
        ),
        "{err}"
    );
}

#[test]
fn an_empty_base_config_means_none_as_in_resilience4j() {
    let loaded = ok(r#"
[bulkhead.configs.default]
max-concurrent-calls = 5
[bulkhead.instances.a]
base-config = ""
"#);
    assert_eq!(
        loaded
            .registries()
            .bulkheads()
            .find("a")
            .unwrap()
            .config()
            .max_concurrent_calls(),
        5
    );
}

#[test]
fn a_combination_an_instance_breaks_is_reported_at_its_key() {
    let err = load(
        r#"
[thread-pool-bulkhead.configs.small]
core-thread-pool-size = 4
max-thread-pool-size = 8
[thread-pool-bulkhead.instances.a]
base-config = "small"
max-thread-pool-size = 2
[thread-pool-bulkhead.instances.b]
base-config = "small"
max-thread-pool-size = 3
"#,
    )
    .unwrap_err();
    // the combination is wrong in each instance, at the key each one sets
    let keys: Vec<&str> = err.problems().iter().map(|p| p.key()).collect();
    assert_eq!(
        keys,
        [
            "thread-pool-bulkhead.instances.a.max-thread-pool-size",
            "thread-pool-bulkhead.instances.b.max-thread-pool-size",
        ],
        "{err}"
    );
    assert!(
        err.problems()[0].message().contains(
            "core-thread-pool-size is 4 at thread-pool-bulkhead.configs.small.core-thread-pool-size"
        ),
        "{err}"
    );
}

#[test]
fn registry_tags_reach_every_instance() {
    let loaded = ok(r#"
[bulkhead.tags]
team = "inventory"
tier = 1
[bulkhead.instances.a]
"#);
    let bh = loaded.registries().bulkheads().find("a").unwrap();
    assert_eq!(bh.tags().get("team").map(String::as_str), Some("inventory"));
    assert_eq!(bh.tags().get("tier").map(String::as_str), Some("1"));
}

#[test]
fn a_default_that_breaks_a_rule_is_named_as_such() {
    // more core threads than the library's maximum (the CPU count) on any machine
    let err = load("[thread-pool-bulkhead.configs.default]\ncore-thread-pool-size = 10000\n")
        .unwrap_err();
    let p = &err.problems()[0];
    assert_eq!(
        p.key(),
        "thread-pool-bulkhead.configs.default.max-thread-pool-size",
        "{err}"
    );
    assert!(
        p.message()
            .ends_with("(this key is not set, so the library default applies)"),
        "{err}"
    );
}

#[test]
fn a_retry_wait_on_top_of_an_inherited_default_builds() {
    // 2.2 throws here (EDGE-22); the later setter wins
    let loaded = ok(r#"
[retry.configs.default]
max-attempts = 5
[retry.instances.a]
wait-duration = "100ms"
[retry.instances.b]
wait-duration = 0
"#);
    let r = loaded.registries().retries();
    let a = r.find("a").unwrap();
    assert_eq!(a.config().max_attempts(), 5);
    assert_eq!(
        a.config().interval_bi_function().as_constant(),
        Some(Duration::from_millis(100))
    );
    let b = r.find("b").unwrap();
    assert_eq!(
        b.config().interval_bi_function().as_constant(),
        Some(Duration::ZERO),
        "a zero retry wait is legal"
    );
}

#[test]
fn retry_interval_flags_are_inherited_from_the_nearest_table() {
    let loaded = ok(r#"
[retry.configs.default]
enable-exponential-backoff = true
exponential-backoff-multiplier = 2
exponential-max-wait-duration = "1s"
[retry.configs.slow]
wait-duration = "500ms"
[retry.instances.a]
wait-duration = "100ms"
[retry.instances.b]
base-config = "slow"
[retry.instances.c]
wait-duration = "100ms"
exponential-backoff-multiplier = 3
[retry.instances.d]
wait-duration = "100ms"
enable-randomized-wait = true
randomized-wait-factor = 0.0
"#);
    let r = loaded.registries().retries();
    let waits = |name: &str| -> Vec<u128> {
        let f = r
            .find(name)
            .unwrap()
            .config()
            .interval_function()
            .cloned()
            .unwrap();
        (1..=5).map(|n| f.apply(n).as_millis()).collect()
    };
    // the instance's own wait, grown by the default's flags
    assert_eq!(waits("a"), [100, 200, 400, 800, 1000]);
    // the base's wait, built in the base with the same flags
    assert_eq!(waits("b"), [500, 1000, 1000, 1000, 1000]);
    // a nearer multiplier wins
    assert_eq!(waits("c"), [100, 300, 900, 1000, 1000]);
    // both flags: exponential random backoff (factor 0 keeps it exact)
    assert_eq!(waits("d"), [100, 200, 400, 800, 1000]);
    let report = loaded.report();
    assert_eq!(
        report
            .instance(Aspect::Retry, "d")
            .unwrap()
            .setting("wait-duration"),
        Some("exponential from 100ms × 2, randomized ± 0, at most 1s")
    );
}

#[test]
fn retry_interval_keys_of_an_instance_without_a_wait_are_warned_about() {
    let loaded = ok(r#"
[retry.configs.default]
wait-duration = "200ms"
[retry.instances.a]
enable-exponential-backoff = true
"#);
    let a = loaded.registries().retries().find("a").unwrap();
    assert_eq!(
        a.config().interval_bi_function().as_constant(),
        Some(Duration::from_millis(200))
    );
    let w = &loaded.report().warnings()[1];
    assert_eq!(
        w.key(),
        "retry.instances.a.enable-exponential-backoff",
        "{:?}",
        loaded.report().warnings()
    );
    assert!(
        w.message()
            .starts_with("has no effect: only a table that sets `wait-duration`"),
        "{w}"
    );
}
