//! The `[retrybudget]` table: named retry budgets, which retries spend with
//! `budget = "<name>"`.
//!
//! ```toml
//! [retrybudget.instances.inventory]
//! ratio = 0.1                   # retries per first attempt (default 0.2)
//! min-retries-per-second = 5    # whatever the traffic (default 10)
//! ttl = "10s"                   # the window (default 10s)
//!
//! [retry.instances.inventory-query]
//! max-attempts = 3
//! budget = "inventory"
//! ```
//!
//! Several retries may name one budget: they share its balance. Keys bind
//! as every other key does (case, `-` and `_` do not matter), every value is
//! checked with the core's rules (`RetryBudgetConfig::builder`), and
//! `RESIL_RETRYBUDGET__INSTANCES__<NAME>__<KEY>` overrides one. A budget's
//! settings only a restart changes: a reload that changes them is refused
//! (adding a budget, or pointing a retry at another, reloads).
//!
//! # Examples
//!
//! ```
//! use resil_config::Resilience;
//!
//! let toml = r#"
//! [retrybudget.instances.inventory]
//! ratio = 0.1
//!
//! [retry.instances.inventory-query]
//! budget = "inventory"
//! "#;
//! let loaded = Resilience::builder()
//!     .file_contents("resilience.toml", toml)
//!     .env_vars(Vec::<(String, String)>::new())
//!     .load()?;
//! let retry = loaded.registries().retries().retry("inventory-query");
//! let budget = retry.config().budget().expect("the retry spends a budget");
//! assert_eq!(budget.name(), "inventory");
//! assert_eq!(budget.config().ratio(), 0.1);
//! assert_eq!(loaded.registries().retry_budgets()[0].name(), "inventory");
//! # Ok::<(), resil_config::InitError>(())
//! ```

use std::collections::BTreeMap;

use resil_core::clock::SharedClock;
use resil_core::cluster::{ClusterFailureMode, RetryBudgetCluster};
use resil_core::registry::RetryRegistry;
use resil_core::retry::{RetryBudget, RetryBudgetConfig};

use crate::error::{ConfigProblem, Diagnostics};
use crate::value::{Ctx, Node, Setting, Val, relaxed};

use crate::keys::Ty;
use crate::typed::typed;

/// The table's name in resilience.toml.
pub(crate) const TABLE: &str = "retrybudget";
/// Its one section.
pub(crate) use crate::instances_only::INSTANCES;

/// The keys of a budget's table, with their types.
pub(crate) const KEYS: &[(&str, Ty)] = &[
    ("ratio", Ty::Float),
    ("min-retries-per-second", Ty::Count),
    ("ttl", Ty::Duration),
    (CLUSTER_URL, Ty::ClusterUrl),
    (CLUSTER_KEY, Ty::Text),
    (CLUSTER_LEASE, Ty::Count),
    (CLUSTER_FAILURE_MODE, Ty::FailureMode),
];

const CLUSTER_URL: &str = crate::keys::CLUSTER_URL;
const CLUSTER_KEY: &str = crate::keys::CLUSTER_KEY;
const CLUSTER_LEASE: &str = crate::keys::CLUSTER_LEASE;
const CLUSTER_FAILURE_MODE: &str = crate::keys::CLUSTER_FAILURE_MODE;

fn find(key: &str) -> Option<(&'static str, Ty)> {
    let r = relaxed(key);
    KEYS.iter().copied().find(|(k, _)| relaxed(k) == r)
}

/// Every key of a budget's table, canonical (kebab-case).
pub(crate) fn key_names() -> impl Iterator<Item = &'static str> {
    KEYS.iter().map(|(k, _)| *k)
}

/// One `[retrybudget.instances.<name>]`, read and checked.
#[derive(Debug, Clone)]
pub(crate) struct BudgetTable {
    /// Its settings; `None` when one of them broke a rule (reported).
    pub(crate) config: Option<RetryBudgetConfig>,
    pub(crate) source: String,
    /// `retrybudget.instances.<name>`.
    pub(crate) path: String,
    /// The keys as written, for messages.
    pub(crate) settings: BTreeMap<&'static str, Setting>,
}

impl BudgetTable {
    /// A problem with the table itself.
    pub(crate) fn problem(&self, message: impl Into<String>) -> ConfigProblem {
        ConfigProblem::new(self.source.clone(), self.path.clone(), None, message)
    }
}

/// What the table is of, in messages.
const OF: crate::instances_only::Of = crate::instances_only::Of {
    one: "budget",
    settings: "retry budget settings",
    one_setting: "retry budget",
};

/// The budgets of the file, by name.
pub(crate) type Budgets = BTreeMap<String, BudgetTable>;

/// Reads the `[retrybudget]` table (written `key` in the file), reporting
/// every mistake in `d`.
pub(crate) fn read(key: &str, node: &Node, ctx: &Ctx, d: &mut Diagnostics, out: &mut Budgets) {
    crate::instances_only::each(key, node, ctx, d, &OF, |name, at, entry, settings, d| {
        let table = read_budget(at, settings, ctx, d);
        out.insert(
            name.to_owned(),
            BudgetTable {
                config: table.ok(),
                source: ctx.source(&entry.origin),
                path: ctx.path(&entry.origin, at),
                settings: written(at, settings, ctx),
            },
        );
    });
}

/// The settings of a budget's table as written.
fn written(
    at: &[&str],
    table: &BTreeMap<String, Node>,
    ctx: &Ctx,
) -> BTreeMap<&'static str, Setting> {
    let mut out = BTreeMap::new();
    for (key, node) in table {
        let Some((name, ty)) = find(key) else {
            continue;
        };
        let Ok(val) = typed(ty, node) else {
            continue;
        };
        let mut segments = at.to_vec();
        segments.push(key);
        out.insert(
            name,
            Setting {
                val,
                source: ctx.source(&node.origin),
                path: ctx.path(&node.origin, &segments),
                raw: node.render(),
            },
        );
    }
    out
}

/// The `cluster-*` keys of a budget's table.
#[derive(Default)]
struct ClusterKeys {
    url: Option<String>,
    key: Option<String>,
    lease: Option<u32>,
    mode: Option<ClusterFailureMode>,
}

impl ClusterKeys {
    /// The fleet's settings: `None` without a `cluster-url`; `Err` when its
    /// backend cannot be made.
    fn settings(&self) -> Result<Option<RetryBudgetCluster>, String> {
        let Some(url) = &self.url else {
            return Ok(None);
        };
        let mut c = RetryBudgetCluster::new(crate::cluster::backend(url)?);
        if let Some(key) = &self.key {
            c = c.key(key.as_str());
        }
        if let Some(lease) = self.lease {
            c = c.lease(lease);
        }
        if let Some(mode) = self.mode {
            c = c.failure_mode(mode);
        }
        Ok(Some(c))
    }
}

/// Checks a budget's table and builds its settings; `Err` once a problem
/// is reported.
fn read_budget(
    at: &[&str],
    table: &BTreeMap<String, Node>,
    ctx: &Ctx,
    d: &mut Diagnostics,
) -> Result<RetryBudgetConfig, ()> {
    let read = crate::instances_only::settings(at, table, KEYS, ctx, d, &OF);
    let mut ok = read.ok;
    let mut builder = RetryBudgetConfig::builder();
    let mut cluster = ClusterKeys::default();
    for (name, val) in &read.values {
        match (*name, val) {
            (CLUSTER_URL, Val::Text(url)) => cluster.url = Some(url.clone()),
            (CLUSTER_KEY, Val::Text(key)) => cluster.key = Some(key.clone()),
            (CLUSTER_LEASE, Val::Count(n)) => cluster.lease = Some(*n),
            (_, Val::FailureMode(mode)) => cluster.mode = Some(*mode),
            (_, Val::Float(ratio)) => builder = builder.ratio(*ratio),
            (_, Val::Count(n)) => builder = builder.min_retries_per_second(*n),
            (_, Val::Duration(ttl)) => builder = builder.ttl(*ttl),
            _ => {}
        }
    }
    match cluster.settings() {
        Ok(Some(c)) => builder = builder.cluster(Some(c)),
        Ok(None) => {
            for key in [CLUSTER_KEY, CLUSTER_LEASE, CLUSTER_FAILURE_MODE] {
                if let Some((node, segments)) = read.nodes.get(key) {
                    d.warn(ctx.problem(
                        node,
                        segments,
                        format!("has no effect without `{CLUSTER_URL}`"),
                    ));
                }
            }
        }
        Err(message) => {
            if let Some((node, segments)) = read.nodes.get(CLUSTER_URL) {
                d.error(ctx.problem(node, segments, message));
            }
            ok = false;
        }
    }
    match builder.build() {
        Ok(config) if ok => Ok(config),
        Ok(_) => Err(()),
        Err(e) => {
            read.report(&e, at, ctx, d);
            Err(())
        }
    }
}

/// The budgets built, by name; `None` for a table whose settings broke a
/// rule (reported where it was read).
pub(crate) type Built = BTreeMap<String, Option<RetryBudget>>;

/// The budgets, built on `clock`: the one in `reuse` of the same name and
/// settings where there is one (a reload keeps the running budget and its
/// balance), else a new one.
pub(crate) fn build(
    tables: &Budgets,
    clock: &SharedClock,
    reuse: &BTreeMap<String, RetryBudget>,
) -> Built {
    tables
        .iter()
        .map(|(name, t)| {
            let budget = t.config.as_ref().map(|config| match reuse.get(name) {
                Some(b) if b.config() == config => b.clone(),
                _ => RetryBudget::with_clock(name.as_str(), config.clone(), clock.clone()),
            });
            (name.clone(), budget)
        })
        .collect()
}

/// The budgets that `retries` spend, by name: those of the running
/// retries, of the named configurations and of the default one.
pub(crate) fn spent(retries: &RetryRegistry) -> BTreeMap<String, RetryBudget> {
    let mut configs: Vec<_> = retries.all().iter().map(|r| r.config().clone()).collect();
    for name in retries.configuration_names() {
        configs.extend(retries.configuration(&name));
    }
    configs.push(retries.default_config());
    let mut out = BTreeMap::new();
    for c in &configs {
        if let Some(b) = c.budget() {
            out.entry(b.name().to_owned()).or_insert_with(|| b.clone());
        }
    }
    out
}

/// Warns of each budget that no retry spends (a likely typo in a retry's
/// `budget`, or a budget left over).
pub(crate) fn check_spent(tables: &Budgets, retries: &RetryRegistry, d: &mut Diagnostics) {
    let spent = spent(retries);
    for (name, t) in tables {
        if t.config.is_some() && !spent.contains_key(name) {
            d.warn(t.problem(format!(
                "no retry spends budget `{name}`: name it with `budget = \"{name}\"` in a retry's table"
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's `retrybudget` section lists every key of a budget, and no other.
    #[test]
    fn the_reference_lists_every_budget_key() {
        let reference = include_str!("../../docs/configuration.md");
        let heading = "## `retrybudget`";
        let start = reference
            .find(heading)
            .expect("docs/configuration.md has a section ## `retrybudget`");
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
                find(key).is_some(),
                "docs/configuration.md lists `{key}` under {heading}, which the loader does not know"
            );
        }
    }
}
