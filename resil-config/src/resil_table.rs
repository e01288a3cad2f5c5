//! The `[resil]` table: settings of resil itself in this process, not of an
//! instance.
//!
//! ```toml
//! [resil]
//! reload-stagger = "30s"
//! record = "calls.jsonl"
//! record-max-bytes = 67108864
//! ```
//!
//! `reload-stagger`: `watch()` applies a changed file after
//! a random delay in `[0, reload-stagger)`, drawn per process, so that a
//! fleet reading one file does not change at the same second (default `0s`:
//! at once). `reload()` and the actuator's refresh stay
//! immediate. `RESIL_RESIL__RELOAD_STAGGER` overrides it, so a canary can
//! run with `0s` while the others wait.
//!
//! `record`: the file where resil writes one JSON line per call outcome
//! below each pattern, for `resil replay` (default: none, recording off).
//! `record-max-bytes`: its size bound (default 64 MiB); a file that reaches
//! it is renamed with the suffix `.1` (replacing the previous one) and a new
//! one is started.

use std::time::Duration;

use crate::duration;
use crate::error::Diagnostics;
use crate::value::{Ctx, Kind, Node, did_you_mean, list, relaxed};

/// The table's name in resilience.toml.
pub(crate) const TABLE: &str = "resil";

/// `reload-stagger`.
pub(crate) const RELOAD_STAGGER: &str = "reload-stagger";

/// `record`.
pub(crate) const RECORD: &str = "record";

/// `record-max-bytes`.
pub(crate) const RECORD_MAX_BYTES: &str = "record-max-bytes";

/// Every key of `[resil]`.
pub(crate) const KEYS: &[&str] = &[RELOAD_STAGGER, RECORD, RECORD_MAX_BYTES];

/// The default `record-max-bytes`: 64 MiB.
pub const DEFAULT_RECORD_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The smallest `record-max-bytes`: room for a few lines.
const MIN_RECORD_MAX_BYTES: i128 = 4096;

/// The longest `reload-stagger`: a change that waits longer is one nobody
/// is waiting for.
pub(crate) const MAX_STAGGER: Duration = Duration::from_secs(24 * 60 * 60);

/// The `[resil]` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResilSettings {
    pub(crate) reload_stagger: Duration,
    pub(crate) record: Option<RecordSettings>,
}

/// `[resil] record` and `record-max-bytes`: where the calls are recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSettings {
    pub(crate) path: std::path::PathBuf,
    pub(crate) max_bytes: u64,
}

impl RecordSettings {
    /// The file the calls are written to (`record`).
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Its size bound (`record-max-bytes`): past it the file is renamed with
    /// the suffix `.1` and a new one is started.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }
}

/// The canonical name of a key of `[resil]`, written in any case.
pub(crate) fn find(key: &str) -> Option<&'static str> {
    let r = relaxed(key);
    KEYS.iter().copied().find(|k| relaxed(k) == r)
}

/// Reads the `[resil]` table written as `table_key`, reporting every
/// mistake in `d`.
///
/// With `writable`, the `record` file is opened for appending (and created
/// when missing), so that a path resil cannot write is a problem now rather
/// than a silent loss later.
pub(crate) fn read(
    table_key: &str,
    node: &Node,
    ctx: &Ctx,
    writable: bool,
    d: &mut Diagnostics,
) -> ResilSettings {
    let mut out = ResilSettings::default();
    let mut record_path = None;
    let mut max_bytes = None;
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
        match name {
            RECORD => match &value.kind {
                Kind::Str(path) if !path.trim().is_empty() => {
                    record_path = Some((std::path::PathBuf::from(path), value))
                }
                _ => d.error(ctx.problem(
                    value,
                    &here,
                    "expected the path of the file to record the calls to, as in \"calls.jsonl\"",
                )),
            },
            RECORD_MAX_BYTES => match &value.kind {
                Kind::Int(n) if (MIN_RECORD_MAX_BYTES..=i128::from(u64::MAX)).contains(n) => {
                    max_bytes = u64::try_from(*n).ok()
                }
                // an environment override arrives as text
                Kind::Str(s)
                    if s.trim().parse::<u64>().is_ok_and(|n| i128::from(n) >= MIN_RECORD_MAX_BYTES) =>
                {
                    max_bytes = s.trim().parse().ok()
                }
                _ => d.error(ctx.problem(
                    value,
                    &here,
                    format!(
                        "expected a number of bytes of at least {MIN_RECORD_MAX_BYTES} (default {DEFAULT_RECORD_MAX_BYTES}: 64 MiB)"
                    ),
                )),
            },
            _ => {
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
        }
    }
    if let Some((path, node)) = record_path {
        if writable && let Err(e) = check_writable(&path) {
            d.error(ctx.problem(
                node,
                &[table_key, RECORD],
                format!("cannot write the recording to {}: {e}", path.display()),
            ));
        }
        out.record = Some(RecordSettings {
            path,
            max_bytes: max_bytes.unwrap_or(DEFAULT_RECORD_MAX_BYTES),
        });
    }
    out
}

/// Opens `path` for appending, creating it when missing.
fn check_writable(path: &std::path::Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map(drop)
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
