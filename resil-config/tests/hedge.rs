//! The hedge's keys: bound with their defaults and their base
//! configurations, printed by the report, checked at start-up (key path and
//! value), set from the environment, and reloaded: a reload changes the
//! delay in place, and a refused reload keeps the settings in force.

use std::time::Duration;

use resil_config::{Aspect, InitError, Resilience};
use resil_core::clock::ManualClock;

fn try_load(text: &str) -> Result<Resilience, InitError> {
    Resilience::builder()
        .file_contents("resilience.toml", text)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .clock(ManualClock::new())
        .load()
}

fn load(text: &str) -> Resilience {
    try_load(text).unwrap_or_else(|e| panic!("{e}"))
}

fn problems(text: &str) -> Vec<String> {
    match try_load(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.problems().iter().map(|p| p.to_string()).collect(),
    }
}

const HEDGES: &str = r#"
[retrybudget.instances.fleet]
ratio = 0.5

[hedge.configs.default]
delay = "40ms"

[hedge.configs.reads]
delay-percentile = 95
max-hedged-attempts = 2

[hedge.instances.inventory-read]
base-config = "reads"
delay = "250ms"
budget = "fleet"

[hedge.instances.price-read]
"#;

#[test]
fn every_key_is_bound_and_the_report_prints_it() {
    let loaded = load(HEDGES);
    let hedges = loaded.registries().hedges();

    let read = hedges.hedge("inventory-read");
    let c = read.config();
    assert_eq!(c.delay(), Duration::from_millis(250));
    assert_eq!(c.delay_percentile(), Some(95.0));
    assert_eq!(c.max_hedged_attempts(), 2);
    assert_eq!(c.budget().map(|b| b.name()), Some("fleet"));
    assert_eq!(c.budget().unwrap().config().ratio(), 0.5);
    // no latencies seen yet: the fixed delay stands in for the percentile
    assert_eq!(read.current_delay(), Duration::from_millis(250));

    let price = hedges.hedge("price-read").config().clone();
    assert_eq!(
        price.delay(),
        Duration::from_millis(40),
        "the default config"
    );
    assert_eq!(price.delay_percentile(), None);
    assert_eq!(price.max_hedged_attempts(), 1);
    assert_eq!(price.budget(), None);

    let report = loaded.report();
    let setting = |name, key| {
        report
            .instance(Aspect::Hedge, name)
            .unwrap_or_else(|| panic!("no report of {name}"))
            .setting(key)
            .map(str::to_owned)
    };
    assert_eq!(setting("inventory-read", "delay").as_deref(), Some("250ms"));
    assert_eq!(
        setting("inventory-read", "delay-percentile").as_deref(),
        Some("95")
    );
    assert_eq!(
        setting("inventory-read", "max-hedged-attempts").as_deref(),
        Some("2")
    );
    assert_eq!(
        setting("inventory-read", "budget").as_deref(),
        Some("fleet")
    );
    assert_eq!(setting("price-read", "delay").as_deref(), Some("40ms"));
    assert_eq!(setting("price-read", "delay-percentile"), None);
    assert_eq!(setting("price-read", "budget"), None);
}

#[test]
fn mistakes_are_start_up_errors_with_the_key_path_and_the_value() {
    assert_eq!(
        problems("[hedge.instances.a]\ndelay-percentile = 100\n"),
        [
            "resilience.toml: hedge.instances.a.delay-percentile = 100: must be above 0 and below 100"
        ]
    );
    assert_eq!(
        problems("[hedge.instances.a]\ndelay-percentile = 0\n"),
        ["resilience.toml: hedge.instances.a.delay-percentile = 0: must be above 0 and below 100"]
    );
    assert_eq!(
        problems("[hedge.instances.a]\ndelay = \"0s\"\nmax-hedged-attempts = 11\n"),
        [
            "resilience.toml: hedge.instances.a.delay = \"0s\": must be above zero",
            "resilience.toml: hedge.instances.a.max-hedged-attempts = 11: must be from 1 to 10",
        ]
    );
    assert_eq!(
        problems("[retrybudget.instances.fleet]\n[hedge.instances.a]\nbudget = \"flet\"\n"),
        [
            "resilience.toml: hedge.instances.a.budget = \"flet\": names no retry budget `flet`; did you mean `fleet`?"
        ]
    );
    let unknown = problems("[hedge.instances.a]\ndelay-percentil = 95\n");
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert!(
        unknown[0].starts_with("resilience.toml: hedge.instances.a.delay-percentil")
            && unknown[0].contains("delay-percentile"),
        "{unknown:?}"
    );
}

#[test]
fn the_environment_sets_the_hedge() {
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", "[hedge.instances.inventory-read]\n")
        .env_vars([
            (
                "RESIL_HEDGE__INSTANCES__INVENTORY_READ__DELAY_PERCENTILE",
                "99",
            ),
            (
                "RESIL_HEDGE__INSTANCES__INVENTORY_READ__MAX_HEDGED_ATTEMPTS",
                "3",
            ),
        ])
        .declarations([])
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let c = loaded
        .registries()
        .hedges()
        .hedge("inventory-read")
        .config()
        .clone();
    assert_eq!(
        (c.delay_percentile(), c.max_hedged_attempts()),
        (Some(99.0), 3)
    );
}

const ONE: &str = "[hedge.instances.a]\ndelay = \"100ms\"\n";

#[test]
fn a_reload_changes_the_hedge_in_place_and_a_refused_one_keeps_it() {
    let loaded = load(ONE);
    let hedge = loaded.registries().hedges().hedge("a");

    let report = loaded
        .reload_from_contents(
            "resilience.toml",
            "[hedge.instances.a]\ndelay = \"30ms\"\nmax-hedged-attempts = 2\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<String> = report.to_string().lines().map(str::to_owned).collect();
    assert!(
        lines.contains(&"hedge a: delay 100ms -> 30ms".to_owned()),
        "{lines:?}"
    );
    assert_eq!(hedge.config().delay(), Duration::from_millis(30));
    assert_eq!(hedge.config().max_hedged_attempts(), 2);
    assert_eq!(hedge.current_delay(), Duration::from_millis(30));

    let err = loaded
        .reload_from_contents(
            "resilience.toml",
            "[hedge.instances.a]\ndelay = \"30ms\"\ndelay-percentile = 120\n",
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("hedge.instances.a.delay-percentile = 120: must be above 0 and below 100"),
        "{err}"
    );
    assert_eq!(hedge.config().delay_percentile(), None);
    assert_eq!(hedge.config().max_hedged_attempts(), 2);
    assert!(
        loaded
            .registries()
            .hedges()
            .hedge("a")
            .config()
            .delay_percentile()
            .is_none()
    );
}

#[test]
fn a_hedge_and_a_retry_that_name_one_budget_share_its_balance() {
    let loaded = load(
        r#"
[retrybudget.instances.reads]
ratio = 0.5

[retry.instances.inventory-query]
budget = "reads"

[hedge.instances.inventory-read]
budget = "reads"
"#,
    );
    let registries = loaded.registries();
    let hedge = registries.hedges().hedge("inventory-read");
    let retry = registries.retries().retry("inventory-query");
    assert_eq!(
        hedge.config().budget(),
        retry.config().budget(),
        "one budget, not two with equal settings"
    );
}
