//! The `[resil]` table: settings of resil itself in this process, not of an
//! instance.
//!
//! ```toml
//! [resil]
//! reload-stagger = "30s"
//! ```
//!
//! `reload-stagger`: `watch()` applies a changed file after
//! a random delay in `[0, reload-stagger)`, drawn per process, so that a
//! fleet reading one file does not change at the same second (default `0s`:
//! at once). `reload()` and the actuator's refresh stay
//! immediate. `RESIL_RESIL__RELOAD_STAGGER` overrides it, so a canary can
//! run with `0s` while the others wait.

use std::time::Duration;

use crate::duration;
use crate::error::Diagnostics;
use crate::value::{Ctx, Kind, Node, did_you_mean, list, relaxed};

/// The table's name in resilience.toml.
pub(crate) const TABLE: &str = "resil";

/// `reload-stagger`.
pub(crate) const RELOAD_STAGGER: &str = "reload-stagger";

/// Every key of `[resil]`.
pub(crate) const KEYS: &[&str] = &[RELOAD_STAGGER];

/// The longest `reload-stagger`: a change that waits longer is one nobody
/// is waiting for.
pub(crate) const MAX_STAGGER: Duration = Duration::from_secs(24 * 60 * 60);

/// The `[resil]` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResilSettings {
    pub(crate) reload_stagger: Duration,
}

/// The canonical name of a key of `[resil]`, written in any case.
pub(crate) fn find(key: &str) -> Option<&'static str> {
    let r = relaxed(key);
    KEYS.iter().copied().find(|k| relaxed(k) == r)
}

/// Reads the `[resil]` table written as `table_key`, reporting every
/// mistake in `d`.
pub(crate) fn read(table_key: &str, node: &Node, ctx: &Ctx, d: &mut Diagnostics) -> ResilSettings {
    let mut out = ResilSettings::default();
    let Kind::Table(table) = &node.kind else {
        d.error(ctx.problem(
            node,
            &[table_key],
            format!("expected a table of resil's own settings ({})", list(KEYS)),
        ));
        return out;
    };
    for (key, value) in table {
        let here = [table_key, key.as_str()];
        let Some(name) = find(key) else {
            d.error(ctx.problem(
                value,
                &here,
                format!(
                    "unknown resil setting{}",
                    match did_you_mean(key, KEYS.iter().copied()) {
                        Some(m) => format!("; did you mean `{m}`?"),
                        None => format!("; expected one of {}", list(KEYS)),
                    }
                ),
            ));
            continue;
        };
        debug_assert_eq!(name, RELOAD_STAGGER);
        let parsed = match &value.kind {
            Kind::Int(ms) => duration::from_millis(*ms).map_err(|e| e.to_string()),
            Kind::Str(s) => duration::parse(s).map_err(|e| e.to_string()),
            _ => Err(duration::EXPECTED.to_owned()),
        };
        match parsed {
            Ok(d_) if d_ > MAX_STAGGER => d.error(ctx.problem(
                value,
                &here,
                "must be at most 24h: the delay of a change in each process is drawn from [0, reload-stagger)",
            )),
            Ok(stagger) => out.reload_stagger = stagger,
            Err(m) => d.error(ctx.problem(value, &here, m)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's `resil` section lists every key of `[resil]`, and no other.
    #[test]
    fn the_reference_lists_every_resil_key() {
        let reference = include_str!("../../docs/configuration.md");
        let heading = "## `resil`";
        let start = reference
            .find(heading)
            .expect("docs/configuration.md has a section ## `resil`")
            + heading.len();
        let section = &reference[start..];
        let section = &section[..section.find("\n## ").unwrap_or(section.len())];
        let listed: Vec<&str> = section
            .lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| l[3..].split('`').next().unwrap())
            .collect();
        assert_eq!(listed, KEYS);
    }
}
