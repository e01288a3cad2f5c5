//! `[deadline.*]`: the timeout bound with its default and base
//! configurations, printed by the report, checked at start-up (key path and
//! value), set from the environment, and reloaded: a reload changes the
//! timeout in place, and a refused reload keeps the one in force.

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

const DEADLINES: &str = r#"
[deadline.configs.default]
timeout = "2s"

[deadline.configs.requests]
timeout = "500ms"

[deadline.instances.checkout]
timeout = "800ms"

[deadline.instances.search]
base-config = "requests"

[deadline.instances.report]
"#;

#[test]
fn the_timeout_is_bound_and_the_report_prints_it() {
    let loaded = load(DEADLINES);
    let deadlines = loaded.registries().deadlines();
    let timeout = |name| deadlines.deadline(name).config().timeout();
    assert_eq!(timeout("checkout"), Duration::from_millis(800));
    assert_eq!(timeout("search"), Duration::from_millis(500));
    assert_eq!(
        timeout("report"),
        Duration::from_secs(2),
        "the default config"
    );

    let setting = |name| {
        loaded
            .report()
            .instance(Aspect::Deadline, name)
            .unwrap_or_else(|| panic!("no report of {name}"))
            .setting("timeout")
            .map(str::to_owned)
    };
    assert_eq!(setting("checkout").as_deref(), Some("800ms"));
    assert_eq!(setting("search").as_deref(), Some("500ms"));
    assert!(
        loaded
            .report()
            .to_string()
            .contains("deadline.instances.checkout"),
        "{}",
        loaded.report()
    );
}

#[test]
fn without_a_timeout_a_deadline_has_one_second() {
    let loaded = load("[deadline.instances.checkout]\n");
    let checkout = loaded.registries().deadlines().deadline("checkout");
    assert_eq!(checkout.config().timeout(), Duration::from_secs(1));
}

#[test]
fn mistakes_are_start_up_errors_with_the_key_path_and_the_value() {
    assert_eq!(
        problems("[deadline.instances.checkout]\ntimeout = \"0ms\"\n"),
        ["resilience.toml: deadline.instances.checkout.timeout = \"0ms\": must be more than zero"]
    );
    assert_eq!(
        problems("[deadline.instances.checkout]\ntimeout = 0\n"),
        ["resilience.toml: deadline.instances.checkout.timeout = 0: must be more than zero"]
    );
    let unparsable = problems("[deadline.instances.checkout]\ntimeout = \"soon\"\n");
    assert_eq!(unparsable.len(), 1, "{unparsable:?}");
    assert!(
        unparsable[0]
            .starts_with("resilience.toml: deadline.instances.checkout.timeout = \"soon\""),
        "{unparsable:?}"
    );
    let unknown = problems("[deadline.instances.checkout]\ntimeuot = \"1s\"\n");
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert!(
        unknown[0].starts_with("resilience.toml: deadline.instances.checkout.timeuot")
            && unknown[0].contains("did you mean `timeout`"),
        "{unknown:?}"
    );
}

#[test]
fn the_environment_sets_the_timeout() {
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", "[deadline.instances.checkout]\n")
        .env_vars([("RESIL_DEADLINE__INSTANCES__CHECKOUT__TIMEOUT", "250ms")])
        .declarations([])
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let checkout = loaded.registries().deadlines().deadline("checkout");
    assert_eq!(checkout.config().timeout(), Duration::from_millis(250));
}

#[test]
fn a_reload_changes_the_timeout_in_place_and_a_refused_one_keeps_it() {
    let loaded = load("[deadline.instances.checkout]\ntimeout = \"800ms\"\n");
    let checkout = loaded.registries().deadlines().deadline("checkout");

    let report = loaded
        .reload_from_contents(
            "resilience.toml",
            "[deadline.instances.checkout]\ntimeout = \"300ms\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<String> = report.to_string().lines().map(str::to_owned).collect();
    assert!(
        lines.contains(&"deadline checkout: timeout 800ms -> 300ms".to_owned()),
        "{lines:?}"
    );
    assert_eq!(checkout.config().timeout(), Duration::from_millis(300));

    for bad in [
        "timeout = \"0s\"\n",
        "timeout = \"later\"\n",
        "timeout-duration = \"1s\"\n",
    ] {
        let text = format!("[deadline.instances.checkout]\n{bad}");
        let err = loaded
            .reload_from_contents("resilience.toml", &text)
            .expect_err(bad);
        assert!(
            err.to_string()
                .contains("deadline.instances.checkout.timeout"),
            "{bad}: {err}"
        );
        assert_eq!(
            checkout.config().timeout(),
            Duration::from_millis(300),
            "{bad}: the timeout in force stays"
        );
    }
}
