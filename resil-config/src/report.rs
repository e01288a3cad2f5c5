//! What start-up found: the [`Report`] of every instance built, with its
//! effective settings and where each was written; below the global
//! registries, which keep it, and the reloads, which compare against it.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::aspect::Aspect;
use crate::bind::{Binder, Bound, Extras};
use crate::cloud::CloudSettings;
use crate::declaration::Declaration;
use crate::error::ConfigProblem;
use crate::file::DEFAULT_FILE;
use crate::value::Setting;

/// One instance as built: its aspect, name, effective settings and the
/// protected functions that use it.
#[derive(Debug, Clone)]
pub struct InstanceReport {
    pub(crate) aspect: Aspect,
    pub(crate) name: String,
    pub(crate) configured: bool,
    /// Where each setting that is not the library default was written.
    pub(crate) sources: BTreeMap<&'static str, String>,
    pub(crate) declared_at: Vec<&'static Declaration>,
    pub(crate) effective: Effective,
}

/// An effective configuration as the report keeps it: the configuration
/// itself (for a reload to apply), its settings as printed, where each was
/// written, and the keys resil-core does not hold.
#[derive(Debug, Clone)]
pub(crate) struct Effective {
    /// The aspect's configuration type, behind `Any` so that one report holds all eight.
    pub(crate) config: Arc<dyn Any + Send + Sync>,
    pub(crate) chain: Vec<String>,
    pub(crate) settings: Vec<(&'static str, String)>,
    pub(crate) provenance: BTreeMap<&'static str, Setting>,
    pub(crate) extras: Extras,
}

impl Effective {
    pub(crate) fn of<P: Binder>(b: &Bound<P::Config>) -> Self {
        Effective {
            config: Arc::new(b.config.clone()),
            chain: b.chain.clone(),
            settings: P::describe(&b.config, &b.notes),
            provenance: b.provenance.clone(),
            extras: b.extras,
        }
    }

    pub(crate) fn library<P: Binder>() -> Self {
        let c = P::library_default();
        Effective {
            settings: P::describe(&c, &BTreeMap::new()),
            config: Arc::new(c),
            chain: Vec::new(),
            provenance: BTreeMap::new(),
            extras: Extras::default(),
        }
    }

    /// The configuration, when it is `P`'s.
    pub(crate) fn config<P: Binder>(&self) -> Option<&P::Config> {
        self.config.downcast_ref::<P::Config>()
    }
}

impl InstanceReport {
    /// The aspect.
    pub fn aspect(&self) -> Aspect {
        self.aspect
    }
    /// The instance name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Whether resilience.toml (or the environment) has a table for it under `instances`.
    pub fn configured(&self) -> bool {
        self.configured
    }
    /// Where its configuration came from, nearest first: `instances.inventory-query`,
    /// `configs.inventory-base`, ...; empty for the library defaults.
    pub fn chain(&self) -> &[String] {
        &self.effective.chain
    }
    /// The effective settings, by key, as resilience.toml writes them.
    pub fn settings(&self) -> &[(&'static str, String)] {
        &self.effective.settings
    }
    /// The effective value of one key.
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.effective
            .settings
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }
    /// Where the value of `key` was written: `` `circuitbreaker.configs.base.sliding-window-size` in resilience.toml ``,
    /// or `environment variable RESIL_...`; `None` for the library default.
    pub fn source(&self, key: &str) -> Option<&str> {
        self.sources.get(key).map(String::as_str)
    }
    /// The protected functions that declare it (none: configured only).
    pub fn declared_at(&self) -> &[&'static Declaration] {
        &self.declared_at
    }
    /// The keys kept for health indicators and event subscription.
    pub fn extras(&self) -> Extras {
        self.effective.extras
    }
}

/// What [`init`](crate::init) loaded and found; `Display` prints it for a
/// start-up log.
///
/// It names the file and the environment overrides, counts the declarations
/// linked into the binary (see the linking rule in [`declared`](crate::declared)),
/// lists every instance with its effective settings and the protected
/// functions that use it, and ends with the warnings.
#[derive(Debug, Clone)]
pub struct Report {
    pub(crate) file: Option<String>,
    pub(crate) env_overrides: Vec<String>,
    pub(crate) declarations: Vec<&'static Declaration>,
    pub(crate) instances: Vec<InstanceReport>,
    pub(crate) warnings: Vec<ConfigProblem>,
    pub(crate) cloud: Option<CloudSettings>,
    /// Per aspect, what an instance that no table configures gets.
    pub(crate) defaults: BTreeMap<Aspect, Effective>,
    /// Per aspect, the registry tags as written.
    pub(crate) tags: BTreeMap<Aspect, BTreeMap<String, Setting>>,
    /// The `[cloud]` keys as written, by key (`disable-time-limiter-map.<id>` for the map's entries).
    pub(crate) cloud_written: BTreeMap<String, Setting>,
    /// `[retrybudget.instances.*]` as read, by name.
    pub(crate) budgets: crate::budget::Budgets,
    /// `[fault.instances.*]` as read, by name.
    pub(crate) faults: crate::fault::FaultTables,
    /// The worst case of each retrying name.
    pub(crate) worst_cases: Vec<crate::worst_case::WorstCase>,
    /// `[resil] reload-stagger`.
    pub(crate) reload_stagger: std::time::Duration,
    /// `[resil] record` and `record-max-bytes`.
    pub(crate) record: Option<crate::RecordSettings>,
}

impl Report {
    /// The faults that `[fault.instances.*]` enables, by name: each delays
    /// or aborts the calls of its name while this configuration is in force.
    pub fn enabled_faults(&self) -> Vec<(String, resil_core::fault::FaultConfig)> {
        crate::fault::enabled(&self.faults).into_iter().collect()
    }
    /// The `[cloud]` settings (Spring Cloud CircuitBreaker's), when the
    /// file or the environment gave them.
    pub fn cloud(&self) -> Option<&CloudSettings> {
        self.cloud.as_ref()
    }
    /// The worst case of each name with a retry, sorted by name: how long
    /// a call can take at worst, term by term ([`WorstCase`](crate::WorstCase)).
    pub fn worst_cases(&self) -> &[crate::worst_case::WorstCase] {
        &self.worst_cases
    }
    /// `[resil] reload-stagger`: `watch()` applies a changed file after a
    /// random delay below it, drawn per process (zero: at once).
    pub fn reload_stagger(&self) -> std::time::Duration {
        self.reload_stagger
    }
    /// `[resil] record` and `record-max-bytes`: where resil records the
    /// calls, when the file turns recording on.
    pub fn record(&self) -> Option<&crate::RecordSettings> {
        self.record.as_ref()
    }
    /// The file read, if any.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }
    /// The environment variables that overrode keys.
    pub fn env_overrides(&self) -> &[String] {
        &self.env_overrides
    }
    /// The declarations found, sorted.
    pub fn declarations(&self) -> &[&'static Declaration] {
        &self.declarations
    }
    /// Every instance built, by aspect and name.
    pub fn instances(&self) -> &[InstanceReport] {
        &self.instances
    }
    /// The instance `name` of `aspect`.
    pub fn instance(&self, aspect: Aspect, name: &str) -> Option<&InstanceReport> {
        self.instances
            .iter()
            .find(|i| i.aspect == aspect && i.name == name)
    }
    /// Warnings: instances configured but not declared, settings without effect.
    pub fn warnings(&self) -> &[ConfigProblem] {
        &self.warnings
    }

    pub(crate) fn summary(&self) -> String {
        let source = match &self.file {
            Some(f) => format!("configuration from {f}"),
            None => format!("no {DEFAULT_FILE}: library defaults"),
        };
        let overrides = match self.env_overrides.len() {
            0 => String::new(),
            n => format!(
                ", {n} environment override{}",
                if n == 1 { "" } else { "s" }
            ),
        };
        let n = self.declarations.len();
        format!(
            "resil: {source}{overrides}; {n} protected function declaration{} linked into this binary, {} instance{}",
            if n == 1 { "" } else { "s" },
            self.instances.len(),
            if self.instances.len() == 1 { "" } else { "s" },
        )
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.summary())?;
        if !self.env_overrides.is_empty() {
            writeln!(f, "  overrides: {}", self.env_overrides.join(", "))?;
        }
        if self.declarations.is_empty() {
            writeln!(
                f,
                "  (a crate whose protected functions the binary never names is not linked, so its declarations are not counted; name it with `use that_crate as _;`)"
            )?;
        }
        for i in &self.instances {
            let from = match (i.chain(), i.configured) {
                ([], _) => "library defaults".to_owned(),
                (chain, true) => chain.join(" <- "),
                (chain, false) => format!("not configured, runs on {}", chain.join(" <- ")),
            };
            writeln!(f, "{} `{}` ({from})", i.aspect, i.name)?;
            // settings wrapped at about 100 columns
            let mut line = String::from("   ");
            let settings = i.settings();
            for (n, (k, v)) in settings.iter().enumerate() {
                let comma = if n + 1 < settings.len() { "," } else { "" };
                let item = format!(" {k} = {v}{comma}");
                if line.len() + item.len() > 100 && line.len() > 3 {
                    writeln!(f, "{line}")?;
                    line = String::from("   ");
                }
                line.push_str(&item);
            }
            writeln!(f, "{line}")?;
            if i.declared_at.is_empty() {
                writeln!(f, "    not used by any protected function in this binary")?;
            }
            for x in &i.declared_at {
                write!(f, "    used by {} at {}:{}", x.path(), x.file, x.line)?;
                if let Some(fallback) = x.fallback {
                    write!(f, ", fallback {fallback}")?;
                }
                writeln!(f)?;
            }
        }
        if let Some(cloud) = &self.cloud {
            writeln!(f, "cloud (Spring Cloud CircuitBreaker's facade)")?;
            let settings: Vec<String> = cloud
                .settings()
                .into_iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect();
            writeln!(f, "    {}", settings.join(", "))?;
        }
        for (name, config) in self.enabled_faults() {
            writeln!(f, "fault `{name}` enabled: {config}")?;
        }
        if !self.warnings.is_empty() {
            writeln!(f, "warnings:")?;
            for w in &self.warnings {
                writeln!(f, "  {w}")?;
            }
        }
        Ok(())
    }
}
