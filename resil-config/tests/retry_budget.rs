//! `[retrybudget.instances.*]` and `budget = ".."` on retries: shared
//! budgets on the builder's clock, every mistake at its key path with its
//! value, the environment's overrides, and reloads that keep a budget's
//! balance and refuse to change its settings.

use std::time::Duration;

use resil_config::{InitError, Resilience};
use resil_core::chain::{Lift, Stack};
use resil_core::clock::ManualClock;
use resil_core::retry::RetryClassifier;

fn builder(text: &str) -> resil_config::ResilienceBuilder {
    Resilience::builder()
        .file_contents("resilience.toml", text)
        .env_vars(Vec::<(String, String)>::new())
        .offline(true)
}

fn load(text: &str) -> Resilience {
    builder(text).load().unwrap_or_else(|e| panic!("{e}"))
}

/// `(key path, value, message)` of each problem.
fn problems(e: &InitError) -> Vec<(String, Option<String>, String)> {
    match e {
        InitError::Invalid(problems) => problems
            .iter()
            .map(|p| {
                (
                    p.key().to_owned(),
                    p.value().map(str::to_owned),
                    p.message().to_owned(),
                )
            })
            .collect(),
        other => panic!("not a problem of the file: {other}"),
    }
}

const SHARED: &str = r#"
[retrybudget.instances.inventory]
ratio = 0.5
min-retries-per-second = 0
ttl = "10s"

[retry.configs.default]
wait-duration = 0

[retry.instances.inventory-query]
max-attempts = 3
budget = "inventory"

[retry.instances.inventory-reserve]
max-attempts = 3
budget = "inventory"
"#;

#[test]
fn retries_that_name_one_budget_share_its_balance() {
    let clock = ManualClock::new();
    let loaded = builder(SHARED)
        .clock(clock.clone())
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let retries = loaded.registries().retries();
    let query = retries.retry("inventory-query");
    let reserve = retries.retry("inventory-reserve");
    let budget = query.config().budget().unwrap().clone();
    assert_eq!(budget.config().ratio(), 0.5);
    assert_eq!(budget.config().ttl(), Duration::from_secs(10));
    let rc = RetryClassifier::new();
    // Four successful calls through one retry pay for two retries of the other.
    for _ in 0..4 {
        Stack::new()
            .retry(query.part(&rc))
            .call(Lift(|| Ok::<_, &str>(())))
            .unwrap();
    }
    assert_eq!(budget.balance(), 2);
    let mut attempts = 0;
    let r = Stack::new().retry(reserve.part(&rc)).call(Lift(|| {
        attempts += 1;
        Err::<(), _>("unavailable")
    }));
    assert!(r.is_err());
    assert_eq!(attempts, 3, "two retries, paid by the other retry's calls");
    let mut attempts = 0;
    let _ = Stack::new().retry(reserve.part(&rc)).call(Lift(|| {
        attempts += 1;
        Err::<(), _>("unavailable")
    }));
    assert_eq!(attempts, 2, "six first attempts paid for three retries");
    assert_eq!(budget.metrics().denied(), 1);
    // The window passes on the builder's clock.
    clock.advance(Duration::from_secs(11));
    assert_eq!(budget.balance(), 0);
    let names: Vec<String> = loaded
        .registries()
        .retry_budgets()
        .iter()
        .map(|b| b.name().to_owned())
        .collect();
    assert_eq!(names, ["inventory"]);
    let report = loaded.report().to_string();
    assert!(report.contains("budget = inventory"), "{report}");
}

#[test]
fn a_budget_in_a_config_is_inherited() {
    let loaded = load(
        r#"
[retrybudget.instances.shared]

[retry.configs.default]
budget = "shared"

[retry.instances.a]
max-attempts = 2
"#,
    );
    let a = loaded.registries().retries().retry("a");
    let b = loaded.registries().retries().retry("never-configured");
    let (ba, bb) = (a.config().budget().unwrap(), b.config().budget().unwrap());
    assert_eq!(ba.name(), "shared");
    assert_eq!(ba.config().min_retries_per_second(), 10, "the defaults");
    ba.deposit();
    ba.deposit();
    ba.deposit();
    ba.deposit();
    ba.deposit();
    assert_eq!(bb.balance(), 101, "one budget: 10 × 10 s + 0.2 × 5");
}

#[test]
fn every_mistake_is_named_at_its_key_with_its_value() {
    let err = builder(
        r#"
[retrybudget.instances.inventory]
ratio = -0.5
ttl = "0s"
min-retries-per-secnd = 3

[retrybudget.instances.bad-ttl]
ttl = "soon"

[retrybudget.configs.base]
ratio = 0.1

[retry.instances.inventory-query]
budget = "inventroy"

[retry.instances.orders]
budget = "orders"
"#,
    )
    .load()
    .unwrap_err();
    let found = problems(&err);
    let at = |key: &str| {
        found
            .iter()
            .find(|(k, _, _)| k == key)
            .unwrap_or_else(|| panic!("no problem at {key}: {found:#?}"))
    };
    let ratio = at("retrybudget.instances.inventory.ratio");
    assert_eq!(ratio.1.as_deref(), Some("-0.5"));
    assert!(ratio.2.contains("from 0 to 1000"), "{ratio:?}");
    let ttl = at("retrybudget.instances.inventory.ttl");
    assert_eq!(ttl.1.as_deref(), Some("\"0s\""));
    assert!(ttl.2.contains("more than zero"), "{ttl:?}");
    let typo = at("retrybudget.instances.inventory.min-retries-per-secnd");
    assert!(
        typo.2.contains("did you mean `min-retries-per-second`"),
        "{typo:?}"
    );
    assert_eq!(
        at("retrybudget.instances.bad-ttl.ttl").1.as_deref(),
        Some("\"soon\"")
    );
    assert!(at("retrybudget.configs").2.contains("expected `instances`"));
    let named = at("retry.instances.inventory-query.budget");
    assert_eq!(named.1.as_deref(), Some("\"inventroy\""));
    assert!(named.2.contains("did you mean `inventory`"), "{named:?}");
    let orders = at("retry.instances.orders.budget");
    assert!(
        orders.2.contains("names no retry budget `orders`"),
        "{orders:?}"
    );
    assert_eq!(found.len(), 7, "{found:#?}");
}

#[test]
fn a_budget_no_retry_spends_is_a_warning_and_an_error_under_strict() {
    let text = "[retrybudget.instances.orphan]\nratio = 0.1\n";
    let loaded = load(text);
    let warnings: Vec<String> = loaded
        .report()
        .warnings()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("retrybudget.instances.orphan")
                && w.contains("no retry spends budget `orphan`")),
        "{warnings:?}"
    );
    let err = builder(text).strict(true).load().unwrap_err();
    assert_eq!(problems(&err)[0].0, "retrybudget.instances.orphan");
}

#[test]
fn the_environment_overrides_a_budget_key() {
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", SHARED)
        .env_vars([
            ("RESIL_RETRYBUDGET__INSTANCES__INVENTORY__RATIO", "0.25"),
            (
                "RESIL_RETRYBUDGET__INSTANCES__INVENTORY__MIN_RETRIES_PER_SECOND",
                "4",
            ),
        ])
        .offline(true)
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let retry = loaded.registries().retries().retry("inventory-query");
    let config = retry.config().budget().unwrap().config().clone();
    assert_eq!(config.ratio(), 0.25);
    assert_eq!(config.min_retries_per_second(), 4);
    let err = Resilience::builder()
        .file_contents("resilience.toml", SHARED)
        .env_vars([("RESIL_RETRYBUDGET__INSTANCES__INVENTORY__RATOI", "0.25")])
        .offline(true)
        .load()
        .unwrap_err();
    let found = problems(&err);
    assert_eq!(found[0].0, "retrybudget.instances.inventory.RATOI");
    assert!(found[0].2.contains("did you mean `ratio`"), "{found:?}");
}

#[test]
fn a_reload_keeps_the_budget_and_refuses_to_change_its_settings() {
    let loaded = load(SHARED);
    let retries = loaded.registries().retries();
    let before = retries
        .retry("inventory-query")
        .config()
        .budget()
        .unwrap()
        .clone();
    for _ in 0..6 {
        before.deposit();
    }
    // Another retry setting changes: the budget, and its balance, stay.
    let edited = SHARED.replacen("max-attempts = 3", "max-attempts = 4", 1);
    loaded
        .reload_from_contents("resilience.toml", edited.clone())
        .unwrap_or_else(|e| panic!("{e}"));
    let query = retries.retry("inventory-query");
    assert_eq!(query.config().max_attempts(), 4);
    let after = query.config().budget().unwrap().clone();
    assert_eq!(after.balance(), 3);
    after.deposit();
    assert_eq!(
        retries
            .retry("inventory-reserve")
            .config()
            .budget()
            .unwrap()
            .metrics()
            .balance(),
        3,
        "still one budget (seven deposits at 0.5)"
    );
    // The budget's own settings: refused, nothing changes.
    let err = loaded
        .reload_from_contents(
            "resilience.toml",
            edited.replace("ratio = 0.5", "ratio = 0.9"),
        )
        .unwrap_err();
    let found = problems(&err);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "retrybudget.instances.inventory.ratio");
    assert_eq!(found[0].1.as_deref(), Some("0.9"));
    assert!(found[0].2.contains("restart"), "{found:?}");
    assert_eq!(retries.retry("inventory-query").config().max_attempts(), 4);
    // A bad budget is refused as start-up refuses it.
    let err = loaded
        .reload_from_contents(
            "resilience.toml",
            edited.replace("ttl = \"10s\"", "ttl = 0"),
        )
        .unwrap_err();
    assert_eq!(problems(&err)[0].0, "retrybudget.instances.inventory.ttl");
    // A new budget, named by one retry, reloads.
    let moved = format!(
        "{}\n[retrybudget.instances.reserve]\nratio = 0.1\n",
        edited.replacen("budget = \"inventory\"\n\n[retry.instances.inventory-reserve]\nmax-attempts = 3\nbudget = \"inventory\"", "budget = \"inventory\"\n\n[retry.instances.inventory-reserve]\nmax-attempts = 3\nbudget = \"reserve\"", 1)
    );
    loaded
        .reload_from_contents("resilience.toml", moved)
        .unwrap_or_else(|e| panic!("{e}"));
    let reserve = retries.retry("inventory-reserve");
    assert_eq!(reserve.config().budget().unwrap().name(), "reserve");
    assert_eq!(
        retries
            .retry("inventory-query")
            .config()
            .budget()
            .unwrap()
            .balance(),
        3
    );
}
