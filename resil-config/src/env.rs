//! Environment overrides: `RESIL_` variables as a `config` source.
//!
//! A variable names a key by its path, segments separated by a double
//! underscore, after the prefix (`RESIL` by default) and one underscore:
//!
//! ```text
//! RESIL_CIRCUITBREAKER__INSTANCES__INVENTORY_QUERY__FAILURE_RATE_THRESHOLD=70
//!       module         section    name            key
//! RESIL_RETRY__CONFIGS__DEFAULT__MAX_ATTEMPTS=5
//! RESIL_THREAD_POOL_BULKHEAD__TAGS__TEAM=inventory
//! ```
//!
//! * Module, section and key match as Spring's relaxed binding does: case,
//!   `-` and `_` are ignored, so `FAILURE_RATE_THRESHOLD` is
//!   `failure-rate-threshold` and `RECORD_EXCEPTIONS` is `record-errors`.
//!   If the file spells the key differently (`failureRateThreshold`), the
//!   variable overrides that spelling.
//! * A name (of a config, an instance or a tag) written in upper case
//!   (`INVENTORY_QUERY2`) matches the existing name that equals it when case,
//!   `-` and `_` are ignored: the names in the file, and for instances also
//!   the names that protected functions declare (`inventory-query2`,
//!   `InventoryQuery2`). Digits are kept as they are. If several names match,
//!   that is an error; if none does, the variable creates the name in lower
//!   case with `-` for `_` (`inventory-query2`).
//! * A name that contains a lower-case letter or a `-` is taken exactly as
//!   written: `RESIL_CIRCUITBREAKER__INSTANCES__InventoryCommand__SLIDING_WINDOW_SIZE=10`
//!   (`env` and container runtimes can set such names; POSIX shells cannot
//!   `export` them).
//! * Values are strings, typed like the file's: `70`, `true`, `500ms`; a list
//!   (`record-errors`) is comma-separated: `ConnectionRefused,Timeout`.
//! * `RESIL_CONFIG` names the file and is not an override. Every other
//!   variable under the prefix must map to a key; one that does not is an
//!   error, so a typo cannot go unnoticed.

use std::collections::BTreeSet;

use config::{Map, Source, Value, ValueKind};

use crate::aspect::Aspect;
use crate::budget;
use crate::cloud;
use crate::error::{ConfigProblem, Diagnostics};
use crate::file::{self, Section, find_aspect, find_key, find_section};
use crate::resil_table;
use crate::value::{self, ENV_ORIGIN, did_you_mean, relaxed};

/// The variable, after the prefix, that names the file rather than a key.
pub(crate) const CONFIG_VAR: &str = "CONFIG";

/// The overrides of the environment as a `config` source: a tree of string
/// values whose origin is `env NAME`.
#[derive(Debug, Clone, Default)]
pub(crate) struct EnvSource {
    tree: Map<String, Value>,
    applied: Vec<String>,
}

impl EnvSource {
    /// The variables that became overrides, in name order.
    pub(crate) fn applied(&self) -> &[String] {
        &self.applied
    }
}

impl Source for EnvSource {
    fn clone_into_box(&self) -> Box<dyn Source + Send + Sync> {
        Box::new(self.clone())
    }

    fn collect(&self) -> Result<Map<String, Value>, config::ConfigError> {
        Ok(self.tree.clone())
    }
}

/// Maps the variables under `prefix` onto the keys of `file` (the file's
/// tree, whose spellings the overrides reuse) and the declared instance
/// names; every variable that does not map is reported in `d`.
pub(crate) fn map(
    prefix: &str,
    vars: &[(String, String)],
    file: &Map<String, Value>,
    declared: &[(Aspect, &str)],
    d: &mut Diagnostics,
) -> EnvSource {
    let mut out = EnvSource::default();
    let head = format!("{prefix}_");
    let mut vars: Vec<_> = vars
        .iter()
        .filter(|(k, _)| k.starts_with(&head) && k[head.len()..] != *CONFIG_VAR)
        .collect();
    vars.sort();
    for (var, value) in vars {
        let segments: Vec<&str> = var[head.len()..].split("__").collect();
        if let Some(path) = map_one(var, value, &segments, file, declared, d) {
            let origin = format!("{ENV_ORIGIN}{var}");
            insert(
                &mut out.tree,
                &path,
                Value::new(Some(&origin), ValueKind::String(value.clone())),
                &origin,
            );
            out.applied.push(var.clone());
        }
    }
    out
}

fn map_one(
    var: &str,
    value: &str,
    segments: &[&str],
    file: &Map<String, Value>,
    declared: &[(Aspect, &str)],
    d: &mut Diagnostics,
) -> Option<Vec<String>> {
    let fail = |d: &mut Diagnostics, path: &[String], message: String| {
        d.error(ConfigProblem::new(
            format!("{ENV_ORIGIN}{var}"),
            path.join("."),
            Some(format!("{value:?}")),
            message,
        ));
        None
    };
    let mut path: Vec<String> = Vec::new();
    if segments.iter().any(|s| s.is_empty()) {
        return fail(
            d,
            &[var.to_owned()],
            "segments are separated by exactly two underscores (`__`), none may be empty"
                .to_owned(),
        );
    }
    if relaxed(segments[0]) == cloud::TABLE {
        return map_cloud(segments, file, |path, message| fail(d, path, message));
    }
    if relaxed(segments[0]) == relaxed(budget::TABLE) {
        let t = InstancesTable {
            table: budget::TABLE,
            form: "`RETRYBUDGET__INSTANCES__<name>__<key>`",
            keys: budget::key_names().collect(),
            what: "retry budget",
        };
        return map_instances(&t, segments, file, |path, message| fail(d, path, message));
    }
    if relaxed(segments[0]) == crate::fault::TABLE {
        let t = InstancesTable {
            table: crate::fault::TABLE,
            form: "`FAULT__INSTANCES__<name>__<key>`",
            keys: crate::fault::key_names().collect(),
            what: "fault",
        };
        return map_instances(&t, segments, file, |path, message| fail(d, path, message));
    }
    if relaxed(segments[0]) == resil_table::TABLE {
        return map_resil(segments, file, |path, message| fail(d, path, message));
    }
    let Some(aspect) = find_aspect(segments[0]) else {
        let modules = Aspect::ALL.map(Aspect::as_str);
        return fail(
            d,
            &[segments[0].to_owned()],
            if segments.len() == 1 {
                "names no key: segments are separated by two underscores, as in `RESIL_RETRY__INSTANCES__<name>__MAX_ATTEMPTS`".to_owned()
            } else {
                format!(
                    "unknown table{}",
                    hint(segments[0], modules, |m| format!(
                        "; expected one of {}",
                        value::list(&m)
                    ))
                )
            },
        );
    };
    // the file's spelling of the module, so the override merges into it
    let (module_key, module) = file
        .iter()
        .find(|(k, _)| find_aspect(k) == Some(aspect))
        .map(|(k, v)| (k.clone(), table(v)))
        .unwrap_or_else(|| (aspect.as_str().to_owned(), None));
    path.push(module_key);
    let Some(section_seg) = segments.get(1) else {
        return fail(
            d,
            &path,
            "names a table, not a key; add `__INSTANCES__<name>__<key>`, `__CONFIGS__<name>__<key>` or `__TAGS__<tag>`".to_owned(),
        );
    };
    let Some(section) = find_section(aspect, section_seg) else {
        path.push((*section_seg).to_owned());
        return fail(
            d,
            &path,
            format!(
                "unknown key{}",
                hint(section_seg, ["configs", "instances", "tags"], |_| {
                    "; expected `CONFIGS`, `INSTANCES` or `TAGS`".to_owned()
                })
            ),
        );
    };
    let sections: Vec<(&String, Option<&Map<String, Value>>)> = module
        .map(|m| {
            m.iter()
                .filter(|(k, _)| find_section(aspect, k) == Some(section))
                .map(|(k, v)| (k, table(v)))
                .collect()
        })
        .unwrap_or_default();
    let want = match section {
        Section::AspectOrder => 2,
        Section::Tags => 3,
        Section::Configs | Section::Instances => 4,
    };
    if segments.len() != want {
        path.push(relaxed_section(section, section_seg));
        let form = match section {
            Section::AspectOrder => "`<module>__<aspect-order key>`",
            Section::Tags => "`<module>__TAGS__<tag>`",
            _ => "`<module>__INSTANCES__<name>__<key>` or `<module>__CONFIGS__<name>__<key>`",
        };
        return fail(
            d,
            &path,
            format!("expected {want} segments after the prefix: {form}"),
        );
    }
    if section == Section::AspectOrder {
        path.push(
            sections
                .first()
                .map(|(k, _)| (*k).clone())
                .unwrap_or_else(|| {
                    file::aspect_order_key(aspect)
                        .unwrap_or_default()
                        .to_owned()
                }),
        );
        return Some(path);
    }
    // names present under this section, each with the spelling of its section table
    let mut names: Vec<(&str, &String)> = Vec::new();
    for (section_key, entries) in &sections {
        for name in entries.iter().flat_map(|e| e.keys()) {
            names.push((name.as_str(), section_key));
        }
    }
    let default_section = match section {
        Section::Configs => "configs",
        Section::Instances => "instances",
        _ => "tags",
    };
    let section_key = |name: &str| -> String {
        names
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| (*s).clone())
            .or_else(|| sections.first().map(|(k, _)| (*k).clone()))
            .unwrap_or_else(|| default_section.to_owned())
    };
    let mut candidates: BTreeSet<&str> = names.iter().map(|(n, _)| *n).collect();
    if section == Section::Instances {
        candidates.extend(
            declared
                .iter()
                .filter(|(a, _)| *a == aspect)
                .map(|(_, n)| *n),
        );
    }
    let name_seg = segments[2];
    let name = if name_seg.chars().any(|c| c.is_lowercase() || c == '-') {
        name_seg.to_owned()
    } else {
        let r = relaxed(name_seg);
        let matching: Vec<&str> = candidates
            .iter()
            .copied()
            .filter(|c| relaxed(c) == r)
            .collect();
        match matching.as_slice() {
            [] => name_seg.to_lowercase().replace('_', "-"),
            [one] => (*one).to_owned(),
            several => {
                path.push(section_key(""));
                path.push(name_seg.to_owned());
                return fail(
                    d,
                    &path,
                    format!(
                        "matches several names ({}); write the name exactly as in the file, e.g. `..__{}__..`",
                        value::list(several),
                        several[0]
                    ),
                );
            }
        }
    };
    path.push(section_key(&name));
    path.push(name.clone());
    if section == Section::Tags {
        return Some(path);
    }
    let key_seg = segments[3];
    let Some(def) = find_key(aspect, key_seg) else {
        path.push(key_seg.to_owned());
        let names = file::keys(aspect).into_iter().map(|k| k.name);
        return fail(
            d,
            &path,
            format!(
                "unknown {} setting{}",
                aspect.attribute(),
                match did_you_mean(key_seg, names) {
                    Some(k) => format!("; did you mean `{k}`?"),
                    None => String::new(),
                }
            ),
        );
    };
    // reuse the file's spelling of the key (say `record-exceptions`), so the
    // override replaces it instead of sitting beside it
    let existing = sections
        .iter()
        .filter_map(|(_, entries)| entries.and_then(|e| e.get(&name)))
        .filter_map(table)
        .flat_map(|t| t.keys())
        .find(|k| find_key(aspect, k).is_some_and(|other| other.name == def.name));
    path.push(existing.cloned().unwrap_or_else(|| def.name.to_owned()));
    Some(path)
}

/// `RESIL__<KEY>`: the path in the file's spelling of the table and key
/// when it has them.
fn map_resil(
    segments: &[&str],
    file: &Map<String, Value>,
    fail: impl FnOnce(&[String], String) -> Option<Vec<String>>,
) -> Option<Vec<String>> {
    let (table_key, written) = written_table(file, resil_table::TABLE);
    let mut path = vec![table_key];
    let [_, key_seg] = segments else {
        if let Some(key) = segments.get(1) {
            path.push((*key).to_owned());
        }
        return fail(
            &path,
            "expected one key after the table: `RESIL__<key>`, as in `RESIL_RESIL__RELOAD_STAGGER`"
                .to_owned(),
        );
    };
    let Some(name) = resil_table::find(key_seg) else {
        path.push((*key_seg).to_owned());
        return fail(
            &path,
            format!(
                "unknown resil setting; expected one of {}",
                value::list(resil_table::KEYS)
            ),
        );
    };
    path.push(spelled(written, name).unwrap_or_else(|| name.to_owned()));
    Some(path)
}

/// A top-level table as the file spells its name (else `name`), and its
/// keys when it has the table.
fn written_table<'a>(
    file: &'a Map<String, Value>,
    name: &str,
) -> (String, Option<&'a Map<String, Value>>) {
    file.iter()
        .find(|(k, _)| relaxed(k) == name)
        .map(|(k, v)| (k.clone(), table(v)))
        .unwrap_or_else(|| (name.to_owned(), None))
}

/// `key` as `written` spells it, if it has it.
fn spelled(written: Option<&Map<String, Value>>, key: &str) -> Option<String> {
    written
        .into_iter()
        .flat_map(|t| t.keys())
        .find(|k| relaxed(k) == relaxed(key))
        .cloned()
}

/// `CLOUD__<KEY>` and `CLOUD__DISABLE_TIME_LIMITER_MAP__<ID>`: the path in
/// the file's spelling of the table and key when it has them.
fn map_cloud(
    segments: &[&str],
    file: &Map<String, Value>,
    fail: impl FnOnce(&[String], String) -> Option<Vec<String>>,
) -> Option<Vec<String>> {
    let (table_key, written) = written_table(file, cloud::TABLE);
    let mut path = vec![table_key];
    let Some(key_seg) = segments.get(1) else {
        return fail(
            &path,
            "names a table, not a key; add `__<key>`, as in `RESIL_CLOUD__DISABLE_THREAD_POOL`"
                .to_owned(),
        );
    };
    if !cloud::is_key(key_seg) {
        path.push((*key_seg).to_owned());
        let names: Vec<&str> = cloud::key_names().collect();
        return fail(
            &path,
            format!(
                "unknown cloud setting{}",
                match did_you_mean(key_seg, names.iter().copied()) {
                    Some(k) => format!("; did you mean `{k}`?"),
                    None => format!("; expected one of {}", value::list(&names)),
                }
            ),
        );
    }
    let existing = spelled(written, key_seg);
    let key = existing.unwrap_or_else(|| key_seg.to_lowercase().replace('_', "-"));
    path.push(key);
    let want = if cloud::is_map_key(key_seg) { 3 } else { 2 };
    if segments.len() != want {
        let form = if want == 3 {
            "`CLOUD__DISABLE_TIME_LIMITER_MAP__<id or group>`"
        } else {
            "`CLOUD__<key>`"
        };
        return fail(
            &path,
            format!("expected {want} segments after the prefix: {form}"),
        );
    }
    if let Some(id) = segments.get(2) {
        // an id in upper case is the id in lower case with `-` for `_`, as
        // instance names are; an id with a lower-case letter or `-` is exact
        let id = if id.chars().any(|c| c.is_lowercase() || c == '-') {
            (*id).to_owned()
        } else {
            id.to_lowercase().replace('_', "-")
        };
        path.push(id);
    }
    Some(path)
}

/// A table of named instances only (`retrybudget`, `fault`).
struct InstancesTable {
    table: &'static str,
    /// How a variable of it is formed, for messages.
    form: &'static str,
    keys: Vec<&'static str>,
    /// What one instance is, for messages.
    what: &'static str,
}

/// `RETRYBUDGET__INSTANCES__<NAME>__<KEY>` (or `FAULT__...`): the path in
/// the file's spelling of the table, section, name and key where it has
/// them (an upper-case name is the instance's whose name equals it ignoring
/// case, `-` and `_`, else the name in lower case with `-` for `_`).
fn map_instances(
    t: &InstancesTable,
    segments: &[&str],
    file: &Map<String, Value>,
    fail: impl FnOnce(&[String], String) -> Option<Vec<String>>,
) -> Option<Vec<String>> {
    let (table_key, written) = file
        .iter()
        .find(|(k, _)| relaxed(k) == relaxed(t.table))
        .map(|(k, v)| (k.clone(), table(v)))
        .unwrap_or_else(|| (t.table.to_owned(), None));
    let mut path = vec![table_key];
    let form = t.form;
    if segments.len() != 4 || relaxed(segments[1]) != budget::INSTANCES {
        if let Some(section) = segments.get(1) {
            path.push((*section).to_owned());
        }
        return fail(
            &path,
            format!("expected 4 segments after the prefix: {form}"),
        );
    }
    let (section_key, instances) = written
        .into_iter()
        .flat_map(|t| t.iter())
        .find(|(k, _)| relaxed(k) == budget::INSTANCES)
        .map(|(k, v)| (k.clone(), table(v)))
        .unwrap_or_else(|| (budget::INSTANCES.to_owned(), None));
    path.push(section_key);
    let name_seg = segments[2];
    let name = if name_seg.chars().any(|c| c.is_lowercase() || c == '-') {
        name_seg.to_owned()
    } else {
        instances
            .into_iter()
            .flat_map(|t| t.keys())
            .find(|n| relaxed(n) == relaxed(name_seg))
            .cloned()
            .unwrap_or_else(|| name_seg.to_lowercase().replace('_', "-"))
    };
    let key_seg = segments[3];
    if !t.keys.iter().any(|k| relaxed(k) == relaxed(key_seg)) {
        path.push(name);
        path.push(key_seg.to_owned());
        let names = &t.keys;
        return fail(
            &path,
            format!(
                "unknown {} setting{}",
                t.what,
                match did_you_mean(key_seg, names.iter().copied()) {
                    Some(k) => format!("; did you mean `{k}`?"),
                    None => format!("; expected one of {}", value::list(names)),
                }
            ),
        );
    }
    let existing = instances
        .and_then(|t| t.get(&name))
        .and_then(table)
        .into_iter()
        .flat_map(|t| t.keys())
        .find(|k| relaxed(k) == relaxed(key_seg))
        .cloned();
    path.push(name);
    path.push(existing.unwrap_or_else(|| key_seg.to_lowercase().replace('_', "-")));
    Some(path)
}

fn relaxed_section(section: Section, written: &str) -> String {
    match section {
        Section::Configs => "configs".to_owned(),
        Section::Instances => "instances".to_owned(),
        Section::Tags => "tags".to_owned(),
        Section::AspectOrder => written.to_lowercase().replace('_', "-"),
    }
}

fn hint<'a, const N: usize>(
    input: &str,
    names: [&'a str; N],
    otherwise: impl FnOnce([&'a str; N]) -> String,
) -> String {
    match did_you_mean(input, names) {
        Some(n) => format!("; did you mean `{n}`?"),
        None => otherwise(names),
    }
}

fn table(v: &Value) -> Option<&Map<String, Value>> {
    match &v.kind {
        ValueKind::Table(t) => Some(t),
        _ => None,
    }
}

/// Sets `path` in `tree` to `value`, creating tables on the way.
fn insert(tree: &mut Map<String, Value>, path: &[String], value: Value, origin: &String) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut here = tree;
    for p in parents {
        let entry = here
            .entry(p.clone())
            .or_insert_with(|| Value::new(Some(origin), ValueKind::Table(Map::new())));
        if !matches!(entry.kind, ValueKind::Table(_)) {
            *entry = Value::new(Some(origin), ValueKind::Table(Map::new()));
        }
        let ValueKind::Table(next) = &mut entry.kind else {
            return;
        };
        here = next;
    }
    here.insert(last.clone(), value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(toml: &str) -> Map<String, Value> {
        use config::Format as _;
        config::FileFormat::Toml.parse(None, toml).unwrap()
    }

    fn paths(
        prefix: &str,
        vars: &[(&str, &str)],
        f: &Map<String, Value>,
        declared: &[(Aspect, &str)],
    ) -> (Vec<String>, Diagnostics) {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut d = Diagnostics::default();
        let src = map(prefix, &vars, f, declared, &mut d);
        let mut out = Vec::new();
        fn walk(prefix: String, m: &Map<String, Value>, out: &mut Vec<String>) {
            for (k, v) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                match &v.kind {
                    ValueKind::Table(t) => walk(p, t, out),
                    _ => out.push(format!("{p}={}", v.clone().into_string().unwrap())),
                }
            }
        }
        walk(String::new(), &src.tree, &mut out);
        out.sort();
        (out, d)
    }

    #[test]
    fn maps_upper_case_to_existing_names() {
        let f = file(
            "[circuitbreaker.instances.inventory-query]\nfailureRateThreshold = 50\n[circuitbreaker.backends.InventoryCommand2]\n",
        );
        let (p, d) = paths(
            "RESIL",
            &[
                (
                    "RESIL_CIRCUITBREAKER__INSTANCES__INVENTORY_QUERY__FAILURE_RATE_THRESHOLD",
                    "70",
                ),
                (
                    "RESIL_CIRCUIT_BREAKER__INSTANCES__INVENTORYCOMMAND2__SLIDING_WINDOW_SIZE",
                    "10",
                ),
                ("RESIL_RETRY__INSTANCES__PAYMENT_V2__MAX_ATTEMPTS", "4"),
                ("RESIL_RETRY__INSTANCES__NEW_ONE__RETRY_EXCEPTIONS", "A,B"),
                ("RESIL_CONFIG", "other.toml"),
                ("OTHER_VAR", "x"),
            ],
            &f,
            &[(Aspect::Retry, "payment-v2")],
        );
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(
            p,
            [
                "circuitbreaker.backends.InventoryCommand2.sliding-window-size=10",
                "circuitbreaker.instances.inventory-query.failureRateThreshold=70",
                "retry.instances.new-one.retry-errors=A,B",
                "retry.instances.payment-v2.max-attempts=4",
            ]
        );
    }

    #[test]
    fn exact_names_and_ambiguity() {
        let f = file("[bulkhead.instances.a-b]\n[bulkhead.instances.a_b]\n");
        let (p, d) = paths(
            "APP",
            &[
                ("APP_BULKHEAD__INSTANCES__a_b__MAX_CONCURRENT_CALLS", "3"),
                ("APP_BULKHEAD__INSTANCES__A_B__MAX_CONCURRENT_CALLS", "4"),
            ],
            &f,
            &[],
        );
        assert_eq!(p, ["bulkhead.instances.a_b.max-concurrent-calls=3"]);
        assert_eq!(d.errors.len(), 1);
        assert!(
            d.errors[0].message().contains("several names"),
            "{}",
            d.errors[0]
        );
    }

    #[test]
    fn unknown_parts_are_errors() {
        let f = Map::new();
        let (p, d) = paths(
            "RESIL",
            &[
                (
                    "RESIL_CIRCUITBRAKER__INSTANCES__A__SLIDING_WINDOW_SIZE",
                    "1",
                ),
                ("RESIL_RETRY__INSTANCE__A__MAX_ATTEMPTS", "1"),
                ("RESIL_RETRY__INSTANCES__A__MAX_ATTEMPS", "1"),
                ("RESIL_RETRY__INSTANCES__A", "1"),
                ("RESIL_RETRY____A__MAX_ATTEMPTS", "1"),
                ("RESIL_RETRY__TAGS__TEAM", "payments"),
            ],
            &f,
            &[],
        );
        assert_eq!(p, ["retry.tags.team=payments"]);
        let msgs: Vec<String> = d.errors.iter().map(ToString::to_string).collect();
        assert_eq!(msgs.len(), 5, "{msgs:#?}");
        assert!(
            msgs.iter()
                .any(|m| m.contains("did you mean `circuitbreaker`"))
        );
        assert!(msgs.iter().any(|m| m.contains("did you mean `instances`")));
        assert!(
            msgs.iter()
                .any(|m| m.contains("did you mean `max-attempts`"))
        );
    }
}
