//! Tables of named instances only (`[retrybudget.instances.<name>]`,
//! `[fault.instances.<name>]`): their shape, checked once for both.

use std::collections::BTreeMap;

use resil_core::error::ConfigError;

use crate::error::{ConfigProblem, Diagnostics};
use crate::keys::Ty;
use crate::typed::typed;
use crate::value::{Ctx, Kind, Node, Val, did_you_mean, list, relaxed};

/// Their one section.
pub(crate) const INSTANCES: &str = "instances";

/// What such a table is of: `fault`, `fault settings` and `fault`
/// (setting), say.
pub(crate) struct Of {
    pub(crate) one: &'static str,
    pub(crate) settings: &'static str,
    pub(crate) one_setting: &'static str,
}

/// Walks the table written `key`, reporting every mistake of its shape in
/// `d` (a section other than `instances`, an entry that is not a table, a
/// name given twice), and calls `each` with each entry's name, key path,
/// node and settings.
pub(crate) fn each<'n>(
    key: &str,
    node: &'n Node,
    ctx: &Ctx,
    d: &mut Diagnostics,
    of: &Of,
    mut each: impl FnMut(&str, &[&str], &'n Node, &'n BTreeMap<String, Node>, &mut Diagnostics),
) {
    let Kind::Table(sections) = &node.kind else {
        d.error(ctx.problem(node, &[key], "expected a table of `instances`"));
        return;
    };
    let mut seen: BTreeMap<&str, String> = BTreeMap::new();
    for (section, entries) in sections {
        let here = [key, section.as_str()];
        if relaxed(section) != INSTANCES {
            d.error(ctx.problem(
                entries,
                &here,
                format!(
                    "unknown key; expected `instances` (a {} has no `configs` to inherit from)",
                    of.one
                ),
            ));
            continue;
        }
        let Kind::Table(entries) = &entries.kind else {
            d.error(ctx.problem(
                entries,
                &here,
                format!("expected a table of named {}s", of.one),
            ));
            continue;
        };
        for (name, entry) in entries {
            let at = [key, section.as_str(), name.as_str()];
            let Kind::Table(settings) = &entry.kind else {
                d.error(ctx.problem(entry, &at, format!("expected a table of {}", of.settings)));
                continue;
            };
            if let Some(previous) = seen.get(name.as_str()) {
                d.error(ctx.problem(entry, &at, format!("is given twice (also as {previous})")));
                continue;
            }
            seen.insert(name, ctx.path(&entry.origin, &at));
            each(name, &at, entry, settings, d);
        }
    }
}

/// One entry's settings, read against its table's `keys`.
pub(crate) struct Settings<'n> {
    /// Each key given, canonical, with its value, in the file's order.
    pub(crate) values: Vec<(&'static str, Val)>,
    /// Where each key was written, for the builder's problems.
    pub(crate) nodes: BTreeMap<&'static str, (&'n Node, Vec<&'n str>)>,
    /// No problem was reported.
    pub(crate) ok: bool,
}

/// Reads an entry's `table` at key path `at` against `keys`, reporting in
/// `d` a key it does not know (with a did-you-mean), one given twice in two
/// spellings, and a value of the wrong type; `of.settings` names them.
pub(crate) fn settings<'n>(
    at: &[&'n str],
    table: &'n BTreeMap<String, Node>,
    keys: &[(&'static str, Ty)],
    ctx: &Ctx,
    d: &mut Diagnostics,
    of: &Of,
) -> Settings<'n> {
    let mut out = Settings {
        values: Vec::new(),
        nodes: BTreeMap::new(),
        ok: true,
    };
    let mut spelled: BTreeMap<&'static str, &str> = BTreeMap::new();
    for (key, node) in table {
        let mut segments = at.to_vec();
        segments.push(key);
        let r = relaxed(key);
        let Some((name, ty)) = keys.iter().copied().find(|(k, _)| relaxed(k) == r) else {
            let names: Vec<&str> = keys.iter().map(|(k, _)| *k).collect();
            d.error(ctx.problem(
                node,
                &segments,
                format!(
                    "unknown {} setting{}",
                    of.one_setting,
                    match did_you_mean(key, names.iter().copied()) {
                        Some(m) => format!("; did you mean `{m}`?"),
                        None => format!("; expected one of {}", list(&names)),
                    }
                ),
            ));
            out.ok = false;
            continue;
        };
        if let Some(other) = spelled.insert(name, key) {
            d.error(ctx.problem(
                node,
                &segments,
                format!("is the same key as `{other}` in this table; give it once"),
            ));
            out.ok = false;
            continue;
        }
        match typed(ty, node) {
            Ok(val) => out.values.push((name, val)),
            Err(message) => {
                d.error(ctx.problem(node, &segments, message));
                out.ok = false;
                continue;
            }
        }
        out.nodes.insert(name, (node, segments));
    }
    out
}

impl Settings<'_> {
    /// Reports each problem of a builder's `error` at the key that fed it
    /// (`some_field` is the key `some-field`), or at the entry's key path
    /// `at` when the table does not write that key.
    pub(crate) fn report(&self, error: &ConfigError, at: &[&str], ctx: &Ctx, d: &mut Diagnostics) {
        for p in error.problems() {
            let key = p.field().replace('_', "-");
            match self.nodes.get(key.as_str()) {
                Some((node, segments)) => {
                    d.error(ctx.problem(node, segments, p.rule().to_owned()));
                }
                None => {
                    let mut segments = at.to_vec();
                    segments.push(&key);
                    d.error(ConfigProblem::new(
                        ctx.file.clone(),
                        ctx.path(&crate::value::Origin::File, &segments),
                        Some(p.value().to_owned()),
                        p.rule().to_owned(),
                    ));
                }
            }
        }
    }
}
