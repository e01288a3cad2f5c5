//! Tables of named instances only (`[retrybudget.instances.<name>]`,
//! `[fault.instances.<name>]`): their shape, checked once for both.

use std::collections::BTreeMap;

use crate::error::Diagnostics;
use crate::value::{Ctx, Kind, Node, relaxed};

/// Their one section.
pub(crate) const INSTANCES: &str = "instances";

/// What such a table is of: `fault` and `fault settings`, say.
pub(crate) struct Of {
    pub(crate) one: &'static str,
    pub(crate) settings: &'static str,
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
