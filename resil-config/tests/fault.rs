//! `[fault.instances.*]`: strict validation naming the key path and the
//! value, a reload that applies a changed table (and refuses a bad one,
//! keeping the faults in force), and the faults on the process's board.

use std::time::Duration;

use resil_config::{InitError, Resilience};
use resil_core::clock::ManualClock;
use resil_core::fault::{FaultSource, Faults};

fn load(toml: &str) -> Result<Resilience, InitError> {
    Resilience::builder()
        .file_contents("resilience.toml", toml)
        .clock(ManualClock::new())
        .env_vars(Vec::<(String, String)>::new())
        .load()
}

fn problems(toml: &str) -> Vec<String> {
    match load(toml) {
        Err(InitError::Invalid(problems)) => problems.iter().map(|p| p.to_string()).collect(),
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("accepted:\n{toml}"),
    }
}

#[test]
fn a_percent_outside_0_to_100_is_an_error_naming_the_key_and_the_value() {
    let p = problems(
        "[fault.instances.inventory-query]\nenabled = true\nabort-percent = 150\ndelay-percent = -1\n",
    );
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(
        p.iter().any(
            |m| m.contains("fault.instances.inventory-query.abort-percent")
                && m.contains("150")
                && m.contains("from 0 to 100")
        ),
        "{p:#?}"
    );
    assert!(
        p.iter().any(
            |m| m.contains("fault.instances.inventory-query.delay-percent") && m.contains("-1")
        ),
        "{p:#?}"
    );
}

#[test]
fn an_unknown_key_gets_a_did_you_mean() {
    let p = problems("[fault.instances.a]\nabort-percnt = 5\n");
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].contains("fault.instances.a.abort-percnt"), "{p:#?}");
    assert!(p[0].contains("did you mean `abort-percent`?"), "{p:#?}");
    let p = problems("[fault.configs.default]\nenabled = true\n");
    assert!(p[0].contains("expected `instances`"), "{p:#?}");
    let p = problems("[fault.instances.a]\nenabled = \"yes\"\ndelay = \"soon\"\n");
    assert_eq!(p.len(), 2, "{p:#?}");
    let p = problems("[faults.instances.a]\nenabled = true\n");
    assert!(p[0].contains("did you mean `fault`?"), "{p:#?}");
}

#[test]
fn only_enabled_faults_are_in_force_and_the_report_lists_them() {
    let loaded = load(
        "[fault.instances.on]\nenabled = true\ndelay = \"200ms\"\ndelay-percent = 10\n\
         [fault.instances.off]\nabort-percent = 100\n",
    )
    .unwrap();
    let enabled = loaded.report().enabled_faults();
    assert_eq!(enabled.len(), 1);
    assert_eq!(enabled[0].0, "on");
    assert_eq!(enabled[0].1.delay(), Duration::from_millis(200));
    assert_eq!(enabled[0].1.delay_percent(), 10.0);
}

/// The reloads of this test file act on the process's board: one test.
#[test]
fn a_reload_applies_a_changed_fault_and_refuses_a_bad_one_keeping_the_old() {
    let loaded = load("").unwrap();
    let in_force = |name: &str| {
        Faults::global()
            .list()
            .into_iter()
            .find(|f| f.name == name)
            .map(|f| (f.config.abort_percent(), f.source))
    };
    let report = loaded
        .reload_from_contents(
            "resilience.toml",
            "[fault.instances.reload-me]\nenabled = true\nabort-percent = 5\n",
        )
        .unwrap();
    let lines: Vec<String> = report.changes().iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "fault reload-me: enabled unset -> true",
            "fault reload-me: delay unset -> 0ms",
            "fault reload-me: delay-percent unset -> 0",
            "fault reload-me: abort-percent unset -> 5",
        ]
    );
    assert_eq!(
        report.changes()[3].path(),
        "fault.instances.reload-me.abort-percent"
    );
    assert_eq!(in_force("reload-me"), Some((5.0, FaultSource::Configured)));

    // A bad table is refused; the fault in force stays.
    let err = loaded
        .reload_from_contents(
            "resilience.toml",
            "[fault.instances.reload-me]\nenabled = true\nabort-percent = 101\n",
        )
        .unwrap_err();
    assert!(err.to_string().contains("abort-percent"), "{err}");
    assert_eq!(in_force("reload-me"), Some((5.0, FaultSource::Configured)));

    // A dry run applies nothing.
    let dry = loaded
        .reload_from_contents_dry_run(
            "resilience.toml",
            "[fault.instances.reload-me]\nenabled = true\nabort-percent = 50\n",
        )
        .unwrap();
    assert_eq!(dry.changes().len(), 1);
    assert_eq!(in_force("reload-me"), Some((5.0, FaultSource::Configured)));

    // Disabled: no longer in force.
    let report = loaded
        .reload_from_contents(
            "resilience.toml",
            "[fault.instances.reload-me]\nenabled = false\nabort-percent = 5\n",
        )
        .unwrap();
    assert_eq!(
        report.changes()[0].to_string(),
        "fault reload-me: enabled true -> false"
    );
    assert_eq!(in_force("reload-me"), None);
}

#[test]
fn an_environment_variable_enables_a_fault_of_the_file() {
    let loaded = Resilience::builder()
        .file_contents(
            "resilience.toml",
            "[fault.instances.inventory-query]\nabort-percent = 5\n",
        )
        .env_vars([("RESIL_FAULT__INSTANCES__INVENTORY_QUERY__ENABLED", "true")])
        .load()
        .unwrap();
    let enabled = loaded.report().enabled_faults();
    assert_eq!(enabled.len(), 1);
    assert_eq!(enabled[0].0, "inventory-query");
    let err = Resilience::builder()
        .file_contents("resilience.toml", "")
        .env_vars([("RESIL_FAULT__INSTANCES__X__ABORT_PERCNT", "5")])
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("unknown fault setting"), "{err}");
    assert!(
        err.to_string().contains("did you mean `abort-percent`?"),
        "{err}"
    );
}
