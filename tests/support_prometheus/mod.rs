//! What the dashboard and alert-rule tests share: the dashboard, the rules
//! and where they are, the dashboard's queries, and the meter names in a text.

use std::collections::BTreeSet;

use serde_json::Value;
use yaml_rust2::{Yaml, YamlLoader};

pub(crate) const DASHBOARD: &str = include_str!("../../dashboards/resil.json");

const RULES: &str = include_str!("../../alerts/resil-rules.yml");

pub(crate) const ALERTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/alerts");

/// Meters that the dashboard and the rules name with the names the
/// specification fixes, before resil exports them: a query naming one is
/// not asked while the example does not export it, and must answer once it
/// does.
pub(crate) const NOT_YET_EXPORTED: &[&str] = &[
    "resil_retry_budget_denied_total",
    "resil_retry_budget_balance",
    "resil_deadline_exceeded_total",
];

/// Every PromQL query of the dashboard's panels (`expr` of each target).
pub(crate) fn dashboard_queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack: Vec<&Value> = dashboard["panels"].as_array().unwrap().iter().collect();
    while let Some(panel) = stack.pop() {
        if let Some(inner) = panel["panels"].as_array() {
            stack.extend(inner);
        }
        for target in panel["targets"].as_array().into_iter().flatten() {
            let title = panel["title"].as_str().unwrap_or("?").to_owned();
            let expr = target["expr"]
                .as_str()
                .unwrap_or_else(|| panic!("panel `{title}` has a target without `expr`"));
            out.push((title, expr.to_owned()));
        }
    }
    out
}

/// The rules of `alerts/resil-rules.yml`.
pub(crate) fn rules() -> Vec<Yaml> {
    let docs = YamlLoader::load_from_str(RULES).expect("alerts/resil-rules.yml is YAML");
    let mut out = Vec::new();
    for group in docs[0]["groups"].as_vec().expect("`groups`") {
        out.extend(group["rules"].as_vec().expect("`rules`").iter().cloned());
    }
    out
}

/// The `resilience4j_*` and `resil_*` meter names in `text`.
pub(crate) fn meters_named(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for prefix in ["resilience4j_", "resil_"] {
        let mut rest = text;
        while let Some(at) = rest.find(prefix) {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            // a histogram's or summary's series name its family
            names.insert(name);
        }
    }
    names
}
