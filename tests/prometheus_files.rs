//! The dashboard, the alert rules and the runbook checked as files and
//! against each other: the dashboard's variables and data source, each
//! rule's `for`, severity and runbook section, each incident's alerts,
//! panels and routes, and the rules' own unit tests under `promtool test
//! rules`.
//!
//! Without `promtool` (Debian's `prometheus` package) the test that needs it
//! prints that it was skipped; with `CI` set it fails instead.

use std::collections::BTreeSet;

use resil_testkit::promtool_or_skip;
use serde_json::Value;

mod support_prometheus;

use support_prometheus::{
    ALERTS, DASHBOARD, NOT_YET_EXPORTED, dashboard_queries, meters_named, rules,
};

const RUNBOOK: &str = include_str!("../RUNBOOK.md");

/// GitHub's anchor of a Markdown heading.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn the_dashboard_has_a_datasource_and_instance_and_name_variables() {
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("dashboards/resil.json is JSON");
    assert!(
        dashboard["schemaVersion"].as_u64().unwrap() >= 39,
        "Grafana's current schema"
    );
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let variable = |name: &str| {
        variables
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no variable `{name}`"))
    };
    assert_eq!(variable("datasource")["type"], "datasource");
    assert_eq!(variable("datasource")["query"], "prometheus");
    for name in ["instance", "name"] {
        assert_eq!(variable(name)["type"], "query");
        assert_eq!(variable(name)["datasource"]["uid"], "${datasource}");
        assert_eq!(variable(name)["includeAll"], true);
    }
    let queries = dashboard_queries(&dashboard);
    assert!(queries.len() >= 25, "{} queries", queries.len());
    for (title, expr) in &queries {
        assert!(
            expr.contains("$instance"),
            "panel `{title}` does not follow the instance variable: {expr}"
        );
    }
    // every panel queries the data source the variable picks
    let mut stack: Vec<&Value> = dashboard["panels"].as_array().unwrap().iter().collect();
    let mut ids = BTreeSet::new();
    while let Some(panel) = stack.pop() {
        assert!(
            ids.insert(panel["id"].as_u64().unwrap()),
            "panel ids are unique"
        );
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(
            panel["datasource"]["uid"], "${datasource}",
            "panel `{}`",
            panel["title"]
        );
    }
    // the meters the specification fixes ahead of resil have their panels
    let named = meters_named(DASHBOARD);
    for meter in NOT_YET_EXPORTED {
        assert!(named.contains(*meter), "no panel shows `{meter}`");
    }
}

#[test]
fn every_rule_waits_and_links_its_runbook_section() {
    let anchors: BTreeSet<String> = RUNBOOK
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|h| anchor(h.trim_start_matches('#')))
        .collect();
    let rules = rules();
    assert!(rules.len() >= 10, "{} rules", rules.len());
    let mut names = BTreeSet::new();
    for rule in &rules {
        let alert = rule["alert"].as_str().expect("every rule is an alert");
        assert!(names.insert(alert), "`{alert}` twice");
        assert!(rule["expr"].as_str().is_some(), "{alert}: no expr");
        assert!(rule["for"].as_str().is_some(), "{alert}: no `for`");
        assert!(
            rule["labels"]["severity"].as_str().is_some(),
            "{alert}: no severity"
        );
        let url = rule["annotations"]["runbook_url"]
            .as_str()
            .unwrap_or_else(|| panic!("{alert}: no runbook_url"));
        let (page, section) = url.split_once('#').expect("a section anchor");
        assert!(page.ends_with("/RUNBOOK.md"), "{alert}: {url}");
        assert!(
            anchors.contains(section),
            "{alert}: RUNBOOK.md has no section `#{section}` (its anchors: {anchors:?})"
        );
    }
    // the signals of the runbook's incidents each have a rule
    for meter in [
        "resilience4j_circuitbreaker_state",
        "resilience4j_circuitbreaker_not_permitted_calls_total",
        "resil_rejections_total",
        "resilience4j_bulkhead_available_concurrent_calls",
        "resilience4j_timelimiter_calls_total",
        "resil_retry_attempts_total",
        "resil_fallback_calls_total",
        "resil_retry_budget_denied_total",
        "resil_faults_injected_total",
    ] {
        assert!(
            rules
                .iter()
                .any(|r| r["expr"].as_str().is_some_and(|e| e.contains(meter))),
            "no rule on `{meter}`"
        );
    }
}

/// The items of a runbook section's `- **<label>**...: a, b` bullet (its
/// lines joined), split at the commas.
fn bullet(section: &str, label: &str) -> Vec<String> {
    let start = format!("- **{label}**");
    let mut lines = section.lines().skip_while(|l| !l.starts_with(&start));
    let Some(first) = lines.next() else {
        return Vec::new();
    };
    let mut text = first.split_once(": ").map_or("", |(_, t)| t).to_owned();
    for line in lines.take_while(|l| l.starts_with("  ")) {
        text.push(' ');
        text.push_str(line.trim());
    }
    text.split(", ").map(|i| i.trim().to_owned()).collect()
}

#[test]
fn every_runbook_incident_names_its_alerts_panels_and_routes() {
    let dashboard: Value = serde_json::from_str(DASHBOARD).unwrap();
    let mut titles = BTreeSet::new();
    let mut stack: Vec<&Value> = dashboard["panels"].as_array().unwrap().iter().collect();
    while let Some(panel) = stack.pop() {
        stack.extend(panel["panels"].as_array().into_iter().flatten());
        if panel["type"] != "row" {
            titles.insert(panel["title"].as_str().unwrap().to_owned());
        }
    }
    let rules = rules();
    let linked_from = |section: &str| -> BTreeSet<String> {
        rules
            .iter()
            .filter(|r| {
                r["annotations"]["runbook_url"]
                    .as_str()
                    .and_then(|u| u.split_once('#'))
                    .is_some_and(|(_, a)| a == section)
            })
            .map(|r| r["alert"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut incidents = 0;
    for section in RUNBOOK.split("\n## ").skip(1) {
        let heading = section.lines().next().unwrap();
        if !(heading.starts_with(|c: char| c.is_ascii_digit()) || heading == "Tools") {
            continue;
        }
        incidents += 1;
        let alerts: BTreeSet<String> = bullet(section, "Alert")
            .iter()
            .map(|a| {
                let name = a
                    .strip_prefix("[`")
                    .and_then(|a| a.strip_suffix("`](alerts/resil-rules.yml)"))
                    .unwrap_or_else(|| panic!("`{heading}`: `{a}` is not a rule's link"));
                assert!(
                    rules.iter().any(|r| r["alert"].as_str() == Some(name)),
                    "`{heading}` names `{name}`, which alerts/resil-rules.yml has not"
                );
                name.to_owned()
            })
            .collect();
        assert!(!alerts.is_empty(), "`{heading}` names no alert rule");
        assert_eq!(
            alerts,
            linked_from(&anchor(heading)),
            "`{heading}` names the rules whose runbook_url is its section"
        );
        let panels = bullet(section, "Dashboard");
        assert!(!panels.is_empty(), "`{heading}` names no panel");
        for panel in &panels {
            let title = panel
                .strip_prefix('*')
                .and_then(|p| p.strip_suffix('*'))
                .unwrap_or_else(|| panic!("`{heading}`: `{panel}` is not *a title*"));
            assert!(
                titles.contains(title),
                "`{heading}` names the panel `{title}`, which the dashboard has not: {titles:?}"
            );
        }
        let routes = bullet(section, "Actuator");
        assert!(!routes.is_empty(), "`{heading}` names no actuator route");
        for route in &routes {
            assert!(
                route.starts_with("`/actuator/") && route.ends_with('`'),
                "`{heading}`: `{route}` is not an actuator route"
            );
        }
    }
    assert_eq!(incidents, 7, "six incidents and the tools");
}

#[test]
fn promtool_checks_the_rules_and_runs_their_unit_tests() {
    const TEST: &str = "promtool_checks_the_rules_and_runs_their_unit_tests";
    let Some(check) = promtool_or_skip(TEST, ALERTS, &["check", "rules", "resil-rules.yml"]) else {
        return;
    };
    let text = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    assert!(
        check.status.success(),
        "promtool check rules:\n{}",
        text(&check)
    );
    let tests = promtool_or_skip(TEST, ALERTS, &["test", "rules", "resil-rules.test.yml"]).unwrap();
    assert!(
        tests.status.success(),
        "promtool test rules:\n{}",
        text(&tests)
    );
    assert!(text(&tests).contains("SUCCESS"), "{}", text(&tests));
}
