//! The `[fault]` table: injected delays and failures, by the name of the
//! call sites they apply to, for drills.
//!
//! ```toml
//! [fault.instances.inventory-query]
//! enabled = true          # default false: the table is there, not in force
//! delay = "200ms"         # how long a delayed call waits before it runs
//! delay-percent = 10      # the share of calls delayed, 0 to 100
//! abort-percent = 5       # the share of calls aborted, 0 to 100
//! ```
//!
//! A fault applies to every call site of its name (no attribute of its
//! own): an attribute's, a `Decorators` chain's instances', a named `tower`
//! layer's, innermost. An aborted call does not run and fails with
//! `FaultInjected`; a delayed one waits on resil's clock, then runs. Each
//! fault in force is a `WARN` at `init()` and at every reload, and a reload
//! applies a changed table (or refuses a bad one, keeping the faults in
//! force).
//!
//! # Examples
//!
//! ```
//! use resil_config::Resilience;
//!
//! let toml = r#"
//! [fault.instances.inventory-query]
//! enabled = true
//! abort-percent = 5
//! "#;
//! let loaded = Resilience::builder()
//!     .file_contents("resilience.toml", toml)
//!     .env_vars(Vec::<(String, String)>::new())
//!     .load()?;
//! let faults = loaded.report().enabled_faults();
//! assert_eq!(faults.len(), 1);
//! assert_eq!(faults[0].0, "inventory-query");
//! assert_eq!(faults[0].1.abort_percent(), 5.0);
//! # Ok::<(), resil_config::InitError>(())
//! ```

use std::collections::BTreeMap;

use resil_core::clock::SharedClock;
use resil_core::fault::{FaultConfig, Faults};

use crate::change::Change;
use crate::error::Diagnostics;
use crate::keys::Ty;
use crate::value::{Ctx, Node, Val};

/// The table's name in resilience.toml.
pub(crate) const TABLE: &str = "fault";

/// The keys of a fault's table, with their types.
const KEYS: &[(&str, Ty)] = &[
    ("enabled", Ty::Bool),
    ("delay", Ty::Duration),
    ("delay-percent", Ty::Percent),
    ("abort-percent", Ty::Percent),
];

/// Every key of a fault's table, canonical (kebab-case).
pub(crate) fn key_names() -> impl Iterator<Item = &'static str> {
    KEYS.iter().map(|(k, _)| *k)
}

/// One `[fault.instances.<name>]`, read and checked.
#[derive(Debug, Clone)]
pub(crate) struct FaultTable {
    /// `enabled = true`.
    pub(crate) enabled: bool,
    /// Its settings; `None` when one of them broke a rule (reported).
    pub(crate) config: Option<FaultConfig>,
}

/// What the table is of, in messages.
const OF: crate::instances_only::Of = crate::instances_only::Of {
    one: "fault",
    settings: "fault settings",
    one_setting: "fault",
};

/// The faults of the file, by name.
pub(crate) type FaultTables = BTreeMap<String, FaultTable>;

/// Reads the `[fault]` table (written `key` in the file), reporting every
/// mistake in `d`.
pub(crate) fn read(key: &str, node: &Node, ctx: &Ctx, d: &mut Diagnostics, out: &mut FaultTables) {
    crate::instances_only::each(key, node, ctx, d, &OF, |name, at, _, settings, d| {
        let (enabled, config) = read_fault(at, settings, ctx, d);
        out.insert(name.to_owned(), FaultTable { enabled, config });
    });
}

/// Checks a fault's table: whether it is enabled, and its settings (`None`
/// once a problem is reported).
fn read_fault(
    at: &[&str],
    table: &BTreeMap<String, Node>,
    ctx: &Ctx,
    d: &mut Diagnostics,
) -> (bool, Option<FaultConfig>) {
    let read = crate::instances_only::settings(at, table, KEYS, ctx, d, &OF);
    let mut builder = FaultConfig::builder();
    let mut enabled = false;
    for (name, val) in &read.values {
        match (*name, val) {
            (_, Val::Bool(b)) => enabled = *b,
            (_, Val::Duration(delay)) => builder = builder.delay(*delay),
            ("delay-percent", Val::Float(p)) => builder = builder.delay_percent(*p),
            (_, Val::Float(p)) => builder = builder.abort_percent(*p),
            _ => {}
        }
    }
    match builder.build() {
        Ok(config) if read.ok => (enabled, Some(config)),
        Ok(_) => (enabled, None),
        Err(e) => {
            read.report(&e, at, ctx, d);
            (enabled, None)
        }
    }
}

/// The faults enabled by `tables`, by name.
pub(crate) fn enabled(tables: &FaultTables) -> BTreeMap<String, FaultConfig> {
    tables
        .iter()
        .filter(|(_, t)| t.enabled)
        .filter_map(|(name, t)| Some((name.clone(), t.config?)))
        .collect()
}

/// Puts the faults enabled by `tables` in force on the process's board
/// (and ends those no longer enabled), with a `WARN` of target
/// `resil::fault` naming each.
pub(crate) fn apply(tables: &FaultTables, clock: &SharedClock) {
    let enabled = enabled(tables);
    Faults::global().configure_all(&enabled, clock);
    for (name, config) in &enabled {
        tracing::warn!(
            target: "resil::fault",
            fault = name.as_str(),
            "resil: fault injection is enabled for `{name}`: {config} (fault.instances.{})",
            crate::value::segment(name)
        );
    }
}

/// What a reload changes in the faults: one change per setting of each
/// fault whose table differs.
pub(crate) fn changes(old: &FaultTables, new: &FaultTables) -> Vec<Change> {
    let mut out = Vec::new();
    let names: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for name in names {
        let before = old.get(name).map(view);
        let after = new.get(name).map(view);
        let unset = || [(); 4].map(|()| "unset".to_owned());
        let (b, a) = (before.unwrap_or_else(unset), after.unwrap_or_else(unset));
        for (i, key) in KEYS.iter().map(|(k, _)| *k).enumerate() {
            if b[i] != a[i] {
                out.push(Change::fault(TABLE, name, key, b[i].clone(), a[i].clone()));
            }
        }
    }
    out
}

/// A table's four settings as resilience.toml writes them.
fn view(t: &FaultTable) -> [String; 4] {
    let c = t
        .config
        .unwrap_or_else(|| FaultConfig::builder().build().expect("no fault is valid"));
    [
        t.enabled.to_string(),
        resil_core::clock::format_duration(c.delay()),
        c.delay_percent().to_string(),
        c.abort_percent().to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's `fault` section lists every key of a fault, and no other.
    #[test]
    fn the_reference_lists_every_fault_key() {
        let reference = include_str!("../../docs/configuration.md");
        let heading = "## `fault`";
        let start = reference
            .find(heading)
            .expect("docs/configuration.md has a section ## `fault`");
        let section = &reference[start + heading.len()..];
        let section = &section[..section.find("\n## ").unwrap_or(section.len())];
        for key in key_names() {
            assert!(
                section.contains(&format!("| `{key}` |")),
                "docs/configuration.md: `{key}` of {heading} is missing"
            );
        }
        for row in section.lines().filter(|l| l.starts_with("| `")) {
            let key = row[3..].split('`').next().unwrap();
            assert!(
                key_names().any(|k| k == key),
                "docs/configuration.md lists `{key}` under {heading}, which the loader does not know"
            );
        }
    }
}
