//! The schema of resilience.toml and the first pass over a parsed file: every
//! key known, every value typed, every mistake collected (none stops the pass).
//!
//! The input is the tree the `config` crate merged from the file and the
//! environment ([`Node`]s, which remember whether a value came from the file
//! or from an environment variable). The output is a [`Document`]: per aspect,
//! its `configs`, `instances` and `tags`, each table a map from canonical
//! (kebab-case) key to a typed [`Setting`] that knows its full key path and
//! the value as written, for messages.
//!
//! Keys match as Spring's relaxed binding matches them: case, `-` and `_` do
//! not matter (`failure-rate-threshold`, `failureRateThreshold` and
//! `failure_rate_threshold` are one key). Names of configs, instances and
//! tags are kept exactly as written.

use std::collections::BTreeMap;

use crate::aspect::Aspect;
use crate::budget::{self, Budgets};
use crate::cloud::{self, CloudSettings};
use crate::error::{ConfigProblem, Diagnostics};
use crate::fault::{self, FaultTables};
use crate::keys::{self, KeyDef};
pub(crate) use crate::keys::{
    BASE_CONFIG, CLUSTER_FAILURE_MODE, CLUSTER_KEY, CLUSTER_LEASE, CLUSTER_PROBE_EXPIRY,
    CLUSTER_TIMEOUT, CLUSTER_URL, CONTEXT_PROPAGATORS, KEY_LABEL, MAX_KEYS,
};
use crate::resil_table::{self, ResilSettings};
use crate::value::{Ctx, Kind, Node, Setting, Val, did_you_mean, list, relaxed, segment};

/// The file [`init`](crate::init) reads when neither the builder nor
/// `RESIL_CONFIG` names one.
pub const DEFAULT_FILE: &str = "resilience.toml";

fn suggestion<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match did_you_mean(input, candidates) {
        Some(c) => format!("; did you mean `{c}`?"),
        None => String::new(),
    }
}

/// The keys of a config or instance table of `aspect`.
///
/// They are the rows of `aspect`'s table in [`crate::keys`], in its order.
pub(crate) fn keys(aspect: Aspect) -> Vec<&'static KeyDef> {
    keys::defs(aspect)
}

/// The key definition `name` (canonical, alias or any relaxed spelling) stands for.
pub(crate) fn find_key(aspect: Aspect, name: &str) -> Option<&'static KeyDef> {
    let r = relaxed(name);
    keys(aspect)
        .into_iter()
        .find(|k| relaxed(k.name) == r || k.alias.is_some_and(|a| relaxed(a) == r))
}

/// Resilience4j's other names for `instances`.
pub(crate) fn instance_aliases(aspect: Aspect) -> &'static [&'static str] {
    match aspect {
        Aspect::CircuitBreaker | Aspect::Retry | Aspect::Bulkhead | Aspect::ThreadPoolBulkhead => {
            &["backends"]
        }
        Aspect::RateLimiter => &["limiters"],
        Aspect::TimeLimiter | Aspect::Hedge | Aspect::Deadline => &[],
    }
}

/// Spring's aspect-order property of the module, if it has one.
pub(crate) fn aspect_order_key(aspect: Aspect) -> Option<&'static str> {
    match aspect {
        Aspect::CircuitBreaker => Some("circuit-breaker-aspect-order"),
        Aspect::Retry => Some("retry-aspect-order"),
        Aspect::RateLimiter => Some("rate-limiter-aspect-order"),
        Aspect::TimeLimiter => Some("time-limiter-aspect-order"),
        Aspect::Bulkhead | Aspect::ThreadPoolBulkhead | Aspect::Hedge | Aspect::Deadline => None,
    }
}

/// The aspect whose module table `key` names (relaxed).
pub(crate) fn find_aspect(key: &str) -> Option<Aspect> {
    let r = relaxed(key);
    Aspect::ALL.into_iter().find(|a| relaxed(a.as_str()) == r)
}

/// What a key of a module table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    Configs,
    /// `instances`, or one of its aliases.
    Instances,
    Tags,
    AspectOrder,
}

pub(crate) fn find_section(aspect: Aspect, key: &str) -> Option<Section> {
    let r = relaxed(key);
    if r == "configs" {
        Some(Section::Configs)
    } else if r == "instances" || instance_aliases(aspect).iter().any(|a| relaxed(a) == r) {
        Some(Section::Instances)
    } else if r == "tags" {
        Some(Section::Tags)
    } else if aspect_order_key(aspect).is_some_and(|k| relaxed(k) == r) {
        Some(Section::AspectOrder)
    } else {
        None
    }
}

fn section_names(aspect: Aspect) -> Vec<&'static str> {
    let mut names = vec!["configs", "instances"];
    names.extend(instance_aliases(aspect));
    names.push("tags");
    names.extend(aspect_order_key(aspect));
    names
}

/// A config or instance table.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    /// Its name under `configs` or `instances`.
    pub(crate) name: String,
    /// `configs` or `instances`, for labels like `configs.inventory-base`.
    pub(crate) section: &'static str,
    pub(crate) path: String,
    pub(crate) source: String,
    pub(crate) settings: BTreeMap<&'static str, Setting>,
}

impl Table {
    pub(crate) fn get(&self, key: &str) -> Option<&Setting> {
        self.settings.get(key)
    }

    /// `configs.inventory-base` or `instances.inventory-query`.
    pub(crate) fn label(&self) -> String {
        format!("{}.{}", self.section, segment(&self.name))
    }

    /// The `base-config` this table names, if any.
    pub(crate) fn base_config(&self) -> Option<(&str, &Setting)> {
        let s = self.get(BASE_CONFIG)?;
        match &s.val {
            Val::Name(Some(n)) => Some((n, s)),
            _ => None,
        }
    }

    /// A problem with the table itself.
    pub(crate) fn problem(&self, message: impl Into<String>) -> ConfigProblem {
        ConfigProblem::new(self.source.clone(), self.path.clone(), None, message)
    }
}

/// One aspect's part of the file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Module {
    pub(crate) configs: BTreeMap<String, Table>,
    pub(crate) instances: BTreeMap<String, Table>,
    pub(crate) tags: BTreeMap<String, String>,
    /// The tags as written, for messages (a reload cannot change them).
    pub(crate) tag_settings: BTreeMap<String, Setting>,
}

/// The whole file, typed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Document {
    pub(crate) modules: [Module; 8],
    /// `[cloud]` (Spring Cloud CircuitBreaker's properties), when given.
    pub(crate) cloud: Option<CloudSettings>,
    /// Its keys as written, for messages (a reload cannot change them).
    pub(crate) cloud_written: BTreeMap<String, Setting>,
    /// `[retrybudget.instances.*]`, by name.
    pub(crate) budgets: Budgets,
    /// `[fault.instances.*]`, by name.
    pub(crate) faults: FaultTables,
    /// `[resil]`: resil's own settings.
    pub(crate) resil: ResilSettings,
}

impl Document {
    pub(crate) fn module(&self, aspect: Aspect) -> &Module {
        &self.modules[aspect.index()]
    }
}

/// Why a top-level table of Resilience4j's Spring Boot properties that is not
/// a module has no effect here, if `key` is one.
fn spring_only(key: &str) -> Option<&'static str> {
    match relaxed(key).as_str() {
        "scheduled" => {
            Some("retries and time limits wait on resil's clock, not on a scheduled executor")
        }
        "micrometer" => Some("resil has no `@Timer` aspect"),
        _ => None,
    }
}

/// Reads the merged tree into a [`Document`], reporting every mistake in `d`.
pub(crate) fn read(root: &BTreeMap<String, Node>, ctx: &Ctx, d: &mut Diagnostics) -> Document {
    let mut doc = Document::default();
    let mut seen: [Option<&str>; 8] = [None; 8];
    let mut cloud_seen: Option<&str> = None;
    let mut budget_seen: Option<&str> = None;
    let mut fault_seen: Option<&str> = None;
    let mut resil_seen: Option<&str> = None;
    for (key, node) in root {
        if relaxed(key) == budget::TABLE {
            if let Some(other) = budget_seen.replace(key) {
                d.error(ctx.problem(
                    node,
                    &[key],
                    format!("`{}` is given twice (also as `{other}`)", budget::TABLE),
                ));
                continue;
            }
            budget::read(key, node, ctx, d, &mut doc.budgets);
            continue;
        }
        if relaxed(key) == fault::TABLE {
            if let Some(other) = fault_seen.replace(key) {
                d.error(ctx.problem(
                    node,
                    &[key],
                    format!("`{}` is given twice (also as `{other}`)", fault::TABLE),
                ));
                continue;
            }
            fault::read(key, node, ctx, d, &mut doc.faults);
            continue;
        }
        if relaxed(key) == resil_table::TABLE {
            if let Some(other) = resil_seen.replace(key) {
                d.error(ctx.problem(
                    node,
                    &[key],
                    format!("`resil` is given twice (also as `{other}`)"),
                ));
                continue;
            }
            doc.resil = resil_table::read(key, node, ctx, ctx.writable, d);
            continue;
        }
        if relaxed(key) == cloud::TABLE {
            if let Some(other) = cloud_seen.replace(key) {
                d.error(ctx.problem(
                    node,
                    &[key],
                    format!("`cloud` is given twice (also as `{other}`)"),
                ));
                continue;
            }
            doc.cloud = Some(cloud::read(node, ctx.cloud, ctx, d, &mut doc.cloud_written));
            continue;
        }
        if let Some(why) = spring_only(key) {
            d.warn(ctx.problem(node, &[key], format!("has no effect in resil: {why}")));
            continue;
        }
        let Some(aspect) = find_aspect(key) else {
            let mut modules = Aspect::ALL.map(Aspect::as_str).to_vec();
            modules.extend([
                budget::TABLE,
                fault::TABLE,
                cloud::TABLE,
                resil_table::TABLE,
            ]);
            d.error(ctx.problem(
                node,
                &[key],
                format!(
                    "unknown table{}",
                    match did_you_mean(key, modules.iter().copied()) {
                        Some(m) => format!("; did you mean `{m}`?"),
                        None => format!("; expected one of {}", list(&modules)),
                    }
                ),
            ));
            continue;
        };
        if let Some(other) = seen[aspect.index()].replace(key) {
            d.error(ctx.problem(
                node,
                &[key],
                format!("`{aspect}` is given twice (also as `{other}`)"),
            ));
            continue;
        }
        let Kind::Table(t) = &node.kind else {
            d.error(ctx.problem(
                node,
                &[key],
                "expected a table of `configs`, `instances` and `tags`",
            ));
            continue;
        };
        read_module(aspect, key, t, ctx, d, &mut doc.modules[aspect.index()]);
    }
    doc
}

fn read_module(
    aspect: Aspect,
    module_key: &str,
    table: &BTreeMap<String, Node>,
    ctx: &Ctx,
    d: &mut Diagnostics,
    out: &mut Module,
) {
    for (key, node) in table {
        let here = [module_key, key.as_str()];
        if relaxed(key) == "metrics" {
            d.warn(ctx.problem(
                node,
                &here,
                "has no effect in resil: metrics are published through the `metrics` cargo feature, not switched per module",
            ));
            continue;
        }
        let Some(section) = find_section(aspect, key) else {
            let names = section_names(aspect);
            d.error(ctx.problem(
                node,
                &here,
                format!(
                    "unknown key{}",
                    match did_you_mean(key, names.iter().copied()) {
                        Some(m) => format!("; did you mean `{m}`?"),
                        None => format!("; expected one of {}", list(&names)),
                    }
                ),
            ));
            continue;
        };
        match section {
            Section::AspectOrder => match &node.kind {
                Kind::Int(_) => d.warn(ctx.problem(
                    node,
                    &here,
                    "has no effect: resil applies the aspects in one fixed order, Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(call)))))",
                )),
                _ => d.error(ctx.problem(node, &here, "expected a whole number")),
            },
            Section::Tags => {
                let Kind::Table(tags) = &node.kind else {
                    d.error(ctx.problem(node, &here, "expected a table of tag names and values"));
                    continue;
                };
                for (tag, v) in tags {
                    let value = match &v.kind {
                        Kind::Str(s) => s.clone(),
                        Kind::Int(i) => i.to_string(),
                        Kind::Float(f) => f.to_string(),
                        Kind::Bool(b) => b.to_string(),
                        _ => {
                            d.error(ctx.problem(
                                v,
                                &[module_key, key, tag],
                                "a tag's value must be a string",
                            ));
                            continue;
                        }
                    };
                    out.tag_settings.insert(
                        tag.clone(),
                        Setting {
                            val: Val::Text(value.clone()),
                            source: ctx.source(&v.origin),
                            path: ctx.path(&v.origin, &[module_key, key, tag]),
                            raw: v.render(),
                        },
                    );
                    out.tags.insert(tag.clone(), value);
                }
            }
            Section::Configs | Section::Instances => {
                let Kind::Table(entries) = &node.kind else {
                    d.error(ctx.problem(node, &here, "expected a table of named tables"));
                    continue;
                };
                let (map, section_name) = match section {
                    Section::Configs => (&mut out.configs, "configs"),
                    _ => (&mut out.instances, "instances"),
                };
                for (name, entry) in entries {
                    let segments = [module_key, key.as_str(), name.as_str()];
                    let Kind::Table(settings) = &entry.kind else {
                        d.error(ctx.problem(
                            entry,
                            &segments,
                            format!("expected a table of {} settings", aspect.attribute()),
                        ));
                        continue;
                    };
                    if let Some(previous) = map.get(name) {
                        d.error(ctx.problem(
                            entry,
                            &segments,
                            format!("is given twice (also as {})", previous.path),
                        ));
                        continue;
                    }
                    let table = Table {
                        name: name.clone(),
                        section: section_name,
                        path: ctx.path(&entry.origin, &segments),
                        source: ctx.source(&entry.origin),
                        settings: read_settings(aspect, &segments, settings, ctx, d),
                    };
                    map.insert(name.clone(), table);
                }
            }
        }
    }
}

fn read_settings(
    aspect: Aspect,
    at: &[&str],
    table: &BTreeMap<String, Node>,
    ctx: &Ctx,
    d: &mut Diagnostics,
) -> BTreeMap<&'static str, Setting> {
    let mut out = BTreeMap::new();
    let mut spelled: BTreeMap<&'static str, &str> = BTreeMap::new();
    for (key, node) in table {
        let mut segments = at.to_vec();
        segments.push(key);
        let Some(def) = find_key(aspect, key) else {
            let names = keys(aspect).into_iter().map(|k| k.name);
            d.error(ctx.problem(
                node,
                &segments,
                format!(
                    "unknown {} setting{}",
                    aspect.attribute(),
                    suggestion(key, names)
                ),
            ));
            continue;
        };
        if let Some(other) = spelled.insert(def.name, key) {
            d.error(ctx.problem(
                node,
                &segments,
                format!("is the same key as `{other}` in this table; give it once"),
            ));
            continue;
        }
        match crate::typed::typed(def.ty, node) {
            Ok(val) => {
                out.insert(
                    def.name,
                    Setting {
                        val,
                        source: ctx.source(&node.origin),
                        path: ctx.path(&node.origin, &segments),
                        raw: node.render(),
                    },
                );
            }
            Err(message) => d.error(ctx.problem(node, &segments, message)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Origin;

    /// And the other way round: every key the reference lists in a
    /// module's table is one the loader knows there (no documented key that
    /// does not load).
    #[test]
    fn the_reference_lists_no_key_the_loader_does_not_know() {
        let reference = include_str!("../../docs/configuration.md");
        for aspect in Aspect::ALL {
            let heading = format!("## `{}`", aspect.as_str());
            let start = reference.find(&heading).expect("a section per module") + heading.len();
            let section = &reference[start..];
            let section = &section[..section.find("\n## ").unwrap_or(section.len())];
            for row in section.lines().filter(|l| l.starts_with("| `")) {
                let key = row[3..].split('`').next().unwrap();
                assert!(
                    find_key(aspect, key).is_some(),
                    "docs/configuration.md lists `{key}` under {heading}, which the loader does not know"
                );
            }
        }
    }

    /// The configuration reference lists every key of every module, in
    /// that module's section, with its Resilience4j alias when it has one:
    /// a key added here without its line there fails.
    #[test]
    fn the_reference_lists_every_key() {
        let reference = include_str!("../../docs/configuration.md");
        let common = [
            "base-config",
            "event-consumer-buffer-size",
            "max-keys",
            "key-label",
        ];
        for aspect in Aspect::ALL {
            let heading = format!("## `{}`", aspect.as_str());
            let start = reference
                .find(&heading)
                .unwrap_or_else(|| panic!("docs/configuration.md has no section {heading}"));
            let section = &reference[start + heading.len()..];
            let section = &section[..section.find("\n## ").unwrap_or(section.len())];
            for key in keys(aspect) {
                let listed = if common.contains(&key.name) {
                    reference[..reference.find("\n## ").unwrap()]
                        .contains(&format!("| `{}` |", key.name))
                } else {
                    let row = match key.alias {
                        Some(alias) => format!("| `{}` (`{alias}`) |", key.name),
                        None => format!("| `{}` |", key.name),
                    };
                    section.contains(&row)
                };
                assert!(
                    listed,
                    "docs/configuration.md: `{}` of {heading} is missing",
                    key.name
                );
            }
        }
    }

    fn node(kind: Kind) -> Node {
        Node {
            kind,
            origin: Origin::File,
        }
    }

    #[test]
    fn relaxed_names_match_spring() {
        assert_eq!(
            relaxed("failureRateThreshold"),
            relaxed("failure-rate-threshold")
        );
        assert_eq!(relaxed("FAILURE_RATE_THRESHOLD"), "failureratethreshold");
        let k = find_key(Aspect::CircuitBreaker, "recordExceptions").unwrap();
        assert_eq!(k.name, "record-errors");
        assert_eq!(
            find_aspect("thread_pool_bulkhead"),
            Some(Aspect::ThreadPoolBulkhead)
        );
        assert_eq!(find_aspect("circuit-breaker"), Some(Aspect::CircuitBreaker));
        assert_eq!(
            find_section(Aspect::RateLimiter, "limiters"),
            Some(Section::Instances)
        );
        assert_eq!(find_section(Aspect::TimeLimiter, "backends"), None);
    }

    #[test]
    fn suggestions_find_typos_only() {
        let names = keys(Aspect::CircuitBreaker).into_iter().map(|k| k.name);
        assert_eq!(
            did_you_mean("slidng-window-size", names.clone()),
            Some("sliding-window-size")
        );
        assert_eq!(did_you_mean("zzz", names), None);
        assert_eq!(
            did_you_mean("max-attemps", ["max-attempts", "wait-duration"]),
            Some("max-attempts")
        );
    }

    #[test]
    fn values_render_like_toml() {
        assert_eq!(node(Kind::Int(150)).render(), "150");
        assert_eq!(node(Kind::Float(0.5)).render(), "0.5");
        assert_eq!(node(Kind::Str("10s".into())).render(), "\"10s\"");
        let long = node(Kind::Str("x".repeat(500)));
        assert!(long.render().len() <= 83);
        assert_eq!(segment("inventory-query"), "inventory-query");
        assert_eq!(segment("a b"), "\"a b\"");
    }
}
