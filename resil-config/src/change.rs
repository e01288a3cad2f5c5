//! What a reload changed: the report, one change per setting.

use std::collections::BTreeSet;
use std::fmt;

use crate::aspect::Aspect;
use crate::error::ConfigProblem;
use crate::value;

/// What a reload changed (or, for a dry run, would change): one
/// [`Change`] per setting of each instance, in the order of the aspects and
/// then of the names.
///
/// `Display` prints one line per change,
/// `circuitbreaker inventory-query: failure-rate-threshold 50 -> 30`, or
/// `no changes`.
#[derive(Debug, Clone, Default)]
pub struct ReloadReport {
    pub(crate) changes: Vec<Change>,
    pub(crate) warnings: Vec<ConfigProblem>,
    pub(crate) dry_run: bool,
}

impl ReloadReport {
    /// Every change, in order.
    pub fn changes(&self) -> &[Change] {
        &self.changes
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Whether this is the report of a dry run (nothing was applied).
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    /// The new configuration's warnings, as [`Report::warnings`](crate::Report::warnings) lists them.
    pub fn warnings(&self) -> &[ConfigProblem] {
        &self.warnings
    }

    /// The key paths of the changes, each once, in order:
    /// `circuitbreaker.instances.inventory-query.failure-rate-threshold`, or
    /// `bulkhead.instances.inventory-query` for an instance created or back
    /// to the defaults (what the actuator's `POST /actuator/refresh` answers).
    pub fn changed_keys(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.changes
            .iter()
            .map(Change::path)
            .filter(|p| seen.insert(p.clone()))
            .collect()
    }
}

impl fmt::Display for ReloadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.changes.is_empty() {
            return f.write_str("no changes");
        }
        for (i, c) in self.changes.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// What a change is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChangeKind {
    /// One setting of an instance changed ([`Change::key`], [`Change::old`], [`Change::new`]).
    Setting,
    /// The instance's table is gone from the file: it runs on the defaults
    /// again (the new `configs.default`, else the library defaults); the
    /// settings that this changes follow as [`ChangeKind::Setting`]s.
    BackToDefaults,
    /// A new instance, created with its settings.
    Added,
}

/// One change of a reload; `Display` prints its line.
///
/// # Examples
///
/// ```
/// use resil_config::{ChangeKind, Resilience};
///
/// let loaded = Resilience::builder()
///     .file_contents("resilience.toml", "[bulkhead.instances.inventory-query]\nmax-concurrent-calls = 5\n")
///     .env_vars(Vec::<(String, String)>::new())
///     .load()?;
/// let report = loaded.reload_from_contents("resilience.toml", "")?;
/// let lines: Vec<String> = report.changes().iter().map(|c| c.to_string()).collect();
/// assert_eq!(lines, [
///     "bulkhead inventory-query: back to the defaults",
///     "bulkhead inventory-query: max-concurrent-calls 5 -> 25",
/// ]);
/// let c = &report.changes()[1];
/// assert_eq!(
///     (c.kind(), c.aspect(), c.instance(), c.key(), c.old(), c.new()),
///     (ChangeKind::Setting, "bulkhead", "inventory-query", "max-concurrent-calls", "5", "25")
/// );
/// # Ok::<(), resil_config::InitError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub(crate) kind: ChangeKind,
    /// `None` for a fault's setting (`[fault.instances.*]`).
    pub(crate) aspect: Option<Aspect>,
    /// The table, as resilience.toml names it.
    pub(crate) table: &'static str,
    pub(crate) instance: String,
    pub(crate) key: &'static str,
    pub(crate) old: String,
    pub(crate) new: String,
}

impl Change {
    pub(crate) fn setting(
        aspect: Aspect,
        instance: &str,
        key: &'static str,
        old: String,
        new: String,
    ) -> Self {
        Change {
            kind: ChangeKind::Setting,
            aspect: Some(aspect),
            table: aspect.as_str(),
            instance: instance.to_owned(),
            key,
            old,
            new,
        }
    }

    /// A setting of the fault `name` (`[<table>.instances.<name>]`, the
    /// `fault` table's).
    pub(crate) fn fault(
        table: &'static str,
        name: &str,
        key: &'static str,
        old: String,
        new: String,
    ) -> Self {
        Change {
            kind: ChangeKind::Setting,
            aspect: None,
            table,
            instance: name.to_owned(),
            key,
            old,
            new,
        }
    }

    pub(crate) fn whole(aspect: Aspect, instance: &str, kind: ChangeKind) -> Self {
        Change {
            kind,
            aspect: Some(aspect),
            table: aspect.as_str(),
            instance: instance.to_owned(),
            key: "",
            old: String::new(),
            new: String::new(),
        }
    }

    /// What the change is about.
    pub fn kind(&self) -> ChangeKind {
        self.kind
    }

    /// The table, as resilience.toml names it: `circuitbreaker`,
    /// `thread-pool-bulkhead`, ..., or `fault` for a fault's setting.
    pub fn aspect(&self) -> &'static str {
        self.table
    }

    /// The aspect, typed; `None` for a fault's setting.
    pub fn aspect_kind(&self) -> Option<Aspect> {
        self.aspect
    }

    /// The instance name.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The key, in kebab-case (`failure-rate-threshold`); empty for an
    /// instance [added](ChangeKind::Added) or [back to the defaults](ChangeKind::BackToDefaults).
    pub fn key(&self) -> &str {
        self.key
    }

    /// The value before, as resilience.toml writes it (`unset` for a key
    /// that had none); empty when [`key`](Change::key) is.
    pub fn old(&self) -> &str {
        &self.old
    }

    /// The value after, as resilience.toml writes it; empty when [`key`](Change::key) is.
    // `old()` and `new()` are the names users and tests know
    #[allow(clippy::new_ret_no_self)]
    pub fn new(&self) -> &str {
        &self.new
    }

    /// The full key path: `circuitbreaker.instances.inventory-query.failure-rate-threshold`
    /// (`circuitbreaker.instances.inventory-query` without a key).
    pub fn path(&self) -> String {
        let table = format!(
            "{}.instances.{}",
            self.aspect(),
            value::segment(&self.instance)
        );
        if self.key.is_empty() {
            table
        } else {
            format!("{table}.{}", self.key)
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: ", self.aspect(), self.instance)?;
        match self.kind {
            ChangeKind::Setting => write!(f, "{} {} -> {}", self.key, self.old, self.new),
            ChangeKind::BackToDefaults => f.write_str("back to the defaults"),
            ChangeKind::Added => f.write_str("new instance"),
        }
    }
}
