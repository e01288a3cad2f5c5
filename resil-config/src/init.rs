//! Start-up: load, override, validate, build the registries, check the declarations.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use config::Map;
use resil_core::Tags;
use resil_core::clock::{Clock, SharedClock};
use resil_core::registry::Registry;

use crate::anti_patterns::{self, Built};
use crate::aspect::Aspect;
use crate::bind::{self, Binder, Bound};
use crate::budget;
use crate::cloud;
use crate::declared::{self, Declaration};
use crate::env;
use crate::error::{ConfigProblem, Diagnostics, InitError};
use crate::file::{self, DEFAULT_FILE, Document};
use crate::global::{self, Registries};
use crate::inherit;
use crate::reloader::{Inputs, Reloader};
use crate::report::{Effective, InstanceReport, Report};
use crate::source::{layer, parse, read};
use crate::value::{self, CloudPrefix, Ctx, Setting, Val, did_you_mean};
use crate::worst_case;

/// The default prefix of environment overrides.
pub const DEFAULT_ENV_PREFIX: &str = "RESIL";

/// The kinds of the rejections, which every error-kind list may name.
pub use resil_core::error::REJECTION_KINDS;

/// Loads the configuration and builds the global registries: [`Resilience::builder()`]`.init()`.
///
/// Reads `./resilience.toml` (or the file `RESIL_CONFIG` names; a missing
/// named file is an error, a missing `./resilience.toml` means defaults),
/// applies `RESIL_*` environment overrides, validates everything, builds the
/// eight registries with every configured and every declared instance, and
/// checks the configuration against the declarations of protected functions.
/// Call it once, at the start of `main`, before any protected call; inside or
/// outside a tokio runtime.
///
/// # Errors
///
/// [`InitError::Invalid`] with every problem found; [`InitError::AlreadyInitialized`]
/// on a second call; [`InitError::AfterFirstCall`] when a protected call
/// already built the registries on the defaults.
///
/// # Examples
///
/// ```no_run
/// fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let report = resil_config::init()?;
///     println!("{report}");
///     Ok(())
/// }
/// ```
pub fn init() -> Result<Report, InitError> {
    Resilience::builder().init()
}

/// The loaded configuration: the registries and the [`Report`].
///
/// [`ResilienceBuilder::load`] makes one without touching the global
/// registries (for tests and tools); [`ResilienceBuilder::init`] installs its
/// registries as the global ones.
///
/// # Examples
///
/// ```
/// use resil_config::Resilience;
///
/// let toml = r#"
/// [circuitbreaker.configs.default]
/// sliding-window-size = 50
///
/// [circuitbreaker.instances.inventory-query]
/// failure-rate-threshold = 60
/// "#;
/// let loaded = Resilience::builder()
///     .file_contents("resilience.toml", toml)
///     .env_vars([("RESIL_CIRCUITBREAKER__INSTANCES__INVENTORY_QUERY__MINIMUM_NUMBER_OF_CALLS", "10")])
///     .load()?;
/// let cb = loaded.registries().circuit_breakers().circuit_breaker("inventory-query");
/// assert_eq!(cb.config().sliding_window_size(), 50);
/// assert_eq!(cb.config().failure_rate_threshold(), 60.0);
/// assert_eq!(cb.config().minimum_number_of_calls(), 10);
/// # Ok::<(), resil_config::InitError>(())
/// ```
#[derive(Debug)]
pub struct Resilience {
    registries: Registries,
    report: Report,
    /// What [`Resilience::reload`] re-reads, and the report now in force.
    pub(crate) reloader: Reloader,
}

impl Resilience {
    /// A builder: which file, which environment, strict or not, which clock.
    pub fn builder() -> ResilienceBuilder {
        ResilienceBuilder {
            file: None,
            contents: None,
            env_prefix: DEFAULT_ENV_PREFIX.to_owned(),
            env: None,
            strict: false,
            clock: None,
            declarations: None,
            offline: false,
            budgets: BTreeMap::new(),
        }
    }

    /// The registries, with every configured and declared instance.
    pub fn registries(&self) -> &Registries {
        &self.registries
    }

    /// What [`ResilienceBuilder::load`] loaded and found; after a
    /// [`reload`](Resilience::reload), [`current_report`](Resilience::current_report)
    /// describes the settings in force.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// The report of the settings in force: the one of
    /// [`load`](ResilienceBuilder::load), or of the last reload that applied.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_config::{Aspect, Resilience};
    ///
    /// let loaded = Resilience::builder()
    ///     .file_contents("resilience.toml", "[bulkhead.instances.a]\nmax-concurrent-calls = 5\n")
    ///     .env_vars(Vec::<(String, String)>::new())
    ///     .load()?;
    /// loaded.reload_from_contents("resilience.toml", "[bulkhead.instances.a]\nmax-concurrent-calls = 6\n")?;
    /// let now = loaded.current_report();
    /// assert_eq!(now.instance(Aspect::Bulkhead, "a").unwrap().setting("max-concurrent-calls"), Some("6"));
    /// assert_eq!(loaded.report().instance(Aspect::Bulkhead, "a").unwrap().setting("max-concurrent-calls"), Some("5"));
    /// # Ok::<(), resil_config::InitError>(())
    /// ```
    pub fn current_report(&self) -> Arc<Report> {
        self.reloader.current()
    }

    /// The registries and the report of the settings in force (after a
    /// reload, the reload's); nothing reloads them afterwards.
    pub fn into_parts(self) -> (Registries, Report) {
        let current = Arc::unwrap_or_clone(self.reloader.current());
        (self.registries, current)
    }
}

/// Chooses the file, the environment, strictness and the clock; see [`Resilience`].
#[derive(Debug)]
pub struct ResilienceBuilder {
    file: Option<PathBuf>,
    contents: Option<(String, String)>,
    env_prefix: String,
    env: Option<Vec<(String, String)>>,
    strict: bool,
    clock: Option<SharedClock>,
    declarations: Option<Vec<&'static Declaration>>,
    offline: bool,
    /// Running retry budgets a reload keeps where their settings stay.
    budgets: BTreeMap<String, resil_core::retry::RetryBudget>,
}

impl ResilienceBuilder {
    /// Keeps these running budgets where the file gives one of the same
    /// name the same settings (a reload).
    pub(crate) fn running_budgets(mut self, budgets: Vec<resil_core::retry::RetryBudget>) -> Self {
        self.budgets = budgets
            .into_iter()
            .map(|b| (b.name().to_owned(), b))
            .collect();
        self
    }

    /// Reads this file (`.yml`/`.yaml`: YAML, anything else: TOML); a missing
    /// file is an error. Takes precedence over `RESIL_CONFIG`.
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.file = Some(path.into());
        self.contents = None;
        self
    }

    /// Uses `text` as the file named `name` (its extension picks the format,
    /// and messages name it), without reading the disk.
    pub fn file_contents(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.contents = Some((name.into(), text.into()));
        self.file = None;
        self
    }

    /// The prefix of environment overrides and of the variable naming the
    /// file (`<PREFIX>_CONFIG`); `RESIL` by default.
    pub fn env_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.env_prefix = prefix.into();
        self
    }

    /// Reads overrides (and `<PREFIX>_CONFIG`) from these variables instead of
    /// the process environment; an empty list turns overrides off.
    pub fn env_vars<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.env = Some(
            vars.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        );
        self
    }

    /// In strict mode, the warnings of the report are errors too: instances
    /// configured but not declared, settings without effect.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// The clock the instances use (a `ManualClock` in tests).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(SharedClock::new(clock));
        self
    }

    /// Checks the file on its own, as `resil check` does: no protected
    /// function is linked in, so an instance that none declares is not a
    /// warning (everything else is checked as `init` checks it).
    pub fn offline(mut self, offline: bool) -> Self {
        self.offline = offline;
        self
    }

    /// Checks against these declarations instead of those linked into the binary.
    pub fn declarations<I>(mut self, declarations: I) -> Self
    where
        I: IntoIterator<Item = &'static Declaration>,
    {
        let mut all: Vec<_> = declarations.into_iter().collect();
        all.sort();
        self.declarations = Some(all);
        self
    }

    /// Loads, validates and builds the registries, and installs them as the
    /// global registries that protected functions use.
    ///
    /// # Errors
    ///
    /// As [`init`](crate::init).
    pub fn init(self) -> Result<Report, InitError> {
        let clock = self.clock.clone().unwrap_or_default();
        let loaded = self.load()?;
        let report = loaded.report.clone();
        global::install(loaded.registries, report.clone(), loaded.reloader)?;
        tracing::info!(target: "resil", "{}", report.summary());
        for w in &report.warnings {
            tracing::warn!(target: "resil", "{w}");
        }
        crate::fault::apply(&report.faults, &clock);
        Ok(report)
    }

    /// Loads, validates and builds the registries without installing them.
    ///
    /// # Errors
    ///
    /// [`InitError::Invalid`] with every problem found.
    pub fn load(self) -> Result<Resilience, InitError> {
        let declarations = self.declarations.unwrap_or_else(declared::declarations);
        // what a reload re-reads: the same variables (or the process's
        // environment again), the file read now, the same checks
        let mut inputs = Inputs {
            file: self.file.clone(),
            contents: self.contents.clone(),
            env_prefix: self.env_prefix.clone(),
            env: self.env.clone(),
            strict: self.strict,
            clock: self.clock.clone().unwrap_or_default(),
            declarations: declarations.clone(),
            offline: self.offline,
        };
        let mut d = Diagnostics::default();
        let vars = match self.env {
            Some(vars) => vars,
            None => {
                // A variable of ours that is not UTF-8 cannot be read: an
                // error naming it, never a silent start on other settings.
                let ours = format!("{}_", self.env_prefix);
                let mut vars = Vec::new();
                for (key, value) in std::env::vars_os() {
                    match (key.into_string(), value.into_string()) {
                        (Ok(key), Ok(value)) => vars.push((key, value)),
                        (key, value) => {
                            let key = key.unwrap_or_else(|k| k.to_string_lossy().into_owned());
                            if key.starts_with(&ours) {
                                let raw =
                                    value.unwrap_or_else(|v| v.to_string_lossy().into_owned());
                                d.error(ConfigProblem::new(
                                    format!("environment variable {key}"),
                                    "",
                                    Some(raw),
                                    "is not UTF-8 text; resil reads its variables as UTF-8"
                                        .to_owned(),
                                ));
                            }
                        }
                    }
                }
                vars
            }
        };
        let config_var = format!("{}_{}", self.env_prefix, env::CONFIG_VAR);
        let input = match (self.contents, self.file) {
            (Some((name, text)), _) => Some((name, text)),
            (None, Some(path)) => read(&path, true, &mut d),
            (None, None) => {
                let (path, required) = match vars.iter().find(|(k, _)| *k == config_var) {
                    Some((_, path)) => (PathBuf::from(path), true),
                    None => (PathBuf::from(DEFAULT_FILE), false),
                };
                let input = read(&path, required, &mut d);
                // a file that was read is the one reloads read, and must
                // stay: deleting it is a rejected reload, not a return to
                // the defaults
                if input.is_some() {
                    inputs.file = Some(path);
                }
                input
            }
        };
        let file_name = input
            .as_ref()
            .map_or_else(|| DEFAULT_FILE.to_owned(), |(name, _)| name.clone());
        let (tree, prefix, cloud) = match &input {
            Some((name, text)) => parse(name, text, &mut d),
            None => (Map::new(), None, CloudPrefix::Toml),
        };
        let declared: Vec<(Aspect, &str)> =
            declarations.iter().map(|x| (x.aspect, x.name)).collect();
        let overrides = env::map(&self.env_prefix, &vars, &tree, &declared, &mut d);
        let root = layer(tree, overrides.clone(), &file_name, &mut d);
        let ctx = Ctx {
            file: file_name,
            prefix,
            cloud,
            writable: !self.offline,
        };
        let doc = file::read(&root, &ctx, &mut d);
        let clock = inputs.clock.clone();
        let budgets = budget::build(&doc.budgets, &clock, &self.budgets);
        let mut parts = Parts {
            doc: &doc,
            budgets: &budgets,
            declarations: &declarations,
            offline: self.offline,
            clock,
            d,
            instances: Vec::new(),
            defaults: BTreeMap::new(),
            cluster_keys: BTreeMap::new(),
        };
        let circuit_breakers = parts.aspect::<resil_core::circuit_breaker::CircuitBreaker>();
        let retries = parts.aspect::<resil_core::retry::Retry>();
        let bulkheads = parts.aspect::<resil_core::bulkhead::Bulkhead>();
        let thread_pool_bulkheads =
            parts.aspect::<resil_core::thread_pool_bulkhead::ThreadPoolBulkhead>();
        let rate_limiters = parts.aspect::<resil_core::rate_limiter::RateLimiter>();
        let time_limiters = parts.aspect::<resil_core::time_limiter::TimeLimiter>();
        let hedges = parts.aspect::<resil_core::hedge::Hedge>();
        let deadlines = parts.aspect::<resil_core::deadline::Deadline>();
        let mut d = parts.d;
        if d.errors.is_empty() {
            budget::check_spent(&doc.budgets, &retries, &mut d);
        }
        let mut worst_cases = Vec::new();
        if d.errors.is_empty() {
            let built = Built {
                circuit_breakers: &circuit_breakers,
                retries: &retries,
                bulkheads: &bulkheads,
                thread_pool_bulkheads: &thread_pool_bulkheads,
                rate_limiters: &rate_limiters,
                time_limiters: &time_limiters,
            };
            anti_patterns::check(&built, &parts.instances, &doc, &ctx, &mut d);
            let at = |aspect: Aspect, name: &str, message: String| {
                anti_patterns::instance_problem(&doc, &ctx, aspect, name, message)
            };
            let layers = worst_case::Layers {
                retries: &retries,
                bulkheads: &bulkheads,
                rate_limiters: &rate_limiters,
                time_limiters: &time_limiters,
                deadlines: &deadlines,
            };
            worst_cases = worst_case::compute(&layers, &at, &mut d);
        }
        d.errors.sort();
        d.warnings.sort();
        if !d.errors.is_empty() || (self.strict && !d.warnings.is_empty()) {
            let mut all = d.errors;
            if self.strict {
                all.extend(d.warnings);
            }
            return Err(InitError::Invalid(all));
        }
        let registries = Registries::from_parts(
            circuit_breakers,
            retries,
            bulkheads,
            thread_pool_bulkheads,
            rate_limiters,
            time_limiters,
            doc.cloud.clone().unwrap_or_default(),
        )
        .with_hedges(hedges)
        .with_deadlines(deadlines);
        let defaults = parts.defaults;
        let mut instances = parts.instances;
        instances.sort_by(|a, b| (a.aspect, &a.name).cmp(&(b.aspect, &b.name)));
        let report = Report {
            file: input.map(|(name, _)| name),
            env_overrides: overrides.applied().to_vec(),
            declarations,
            instances,
            warnings: d.warnings,
            cloud: doc.cloud.clone(),
            defaults,
            tags: Aspect::ALL
                .into_iter()
                .map(|a| (a, doc.module(a).tag_settings.clone()))
                .collect(),
            cloud_written: doc.cloud_written.clone(),
            budgets: doc.budgets.clone(),
            faults: doc.faults.clone(),
            worst_cases,
            reload_stagger: doc.resil.reload_stagger,
            record: doc.resil.record.clone(),
        };
        let reloader = Reloader::new(inputs, report.clone());
        Ok(Resilience {
            registries,
            report,
            reloader,
        })
    }
}

/// Builds the registries aspect by aspect, collecting problems and the report.
struct Parts<'a> {
    doc: &'a Document,
    /// The retry budgets, built.
    budgets: &'a budget::Built,
    declarations: &'a [&'static Declaration],
    /// No declarations to check the instances against (`resil check`).
    offline: bool,
    clock: SharedClock,
    d: Diagnostics,
    instances: Vec<InstanceReport>,
    /// What an instance of each aspect that no table configures gets.
    defaults: BTreeMap<Aspect, Effective>,
    /// Each fleet-wide key an instance with a `cluster-url` uses, and the
    /// first such instance.
    cluster_keys: BTreeMap<String, KeyUser>,
}

/// The first instance found to use a fleet-wide key.
struct KeyUser {
    aspect: Aspect,
    name: String,
    url: Setting,
}

/// Whether `url` names a Redis Cluster rather than one server.
fn names_a_cluster(url: &Setting) -> bool {
    matches!(&url.val, Val::Text(t) if t.trim_start().starts_with("redis+cluster://"))
}

/// How a message names what a URL connects to.
fn backend_kind(url: &Setting) -> &'static str {
    if names_a_cluster(url) {
        "a Redis Cluster"
    } else {
        "a single server"
    }
}

impl Parts<'_> {
    /// Refuses a fleet-wide key that one instance keeps on a Redis Cluster
    /// and another on a single server: they would not share it, and each
    /// would count alone while the file reads as if they counted together.
    fn check_cluster_keys<C>(&mut self, aspect: Aspect, instances: &BTreeMap<&str, Bound<C>>) {
        for (name, bound) in instances {
            let Some(url) = bound.provenance.get(file::CLUSTER_URL) else {
                continue;
            };
            let key = match bound.provenance.get(file::CLUSTER_KEY).map(|s| &s.val) {
                Some(Val::Text(k)) => k.clone(),
                _ => resil_core::cluster::default_key(aspect.as_str(), name),
            };
            let Some(first) = self.cluster_keys.get(&key) else {
                self.cluster_keys.insert(
                    key,
                    KeyUser {
                        aspect,
                        name: (*name).to_owned(),
                        url: url.clone(),
                    },
                );
                continue;
            };
            if names_a_cluster(&first.url) == names_a_cluster(url) {
                continue;
            }
            self.d.error(url.problem(format!(
                "puts the key `{key}` of {aspect} `{name}` on {}, but {} `{}` keeps that key on {} (`{}`): instances that share a key must name one Redis; give them the same `cluster-url`, or each its own `cluster-key`",
                backend_kind(url),
                first.aspect,
                first.name,
                backend_kind(&first.url),
                first.url.path,
            )));
        }
    }

    fn aspect<P: Binder>(&mut self) -> Registry<P> {
        let aspect = P::ASPECT;
        let module = self.doc.module(aspect);
        let d = &mut self.d;
        if aspect == Aspect::ThreadPoolBulkhead {
            // The core's own rule for a pool's name, reported at its table.
            for (name, table) in &module.instances {
                if let Err(e) =
                    resil_core::thread_pool_bulkhead::ThreadPoolBulkhead::check_name(name)
                {
                    for p in e.problems() {
                        d.error(
                            table.problem(format!(
                                "cannot name a thread-pool bulkhead: {}",
                                p.rule()
                            )),
                        );
                    }
                }
            }
        }
        let mut bound = |table| {
            let chain = inherit::chain(aspect, module, table, d)?;
            bind::bind::<P>(&chain, self.budgets, d)
        };
        let configs: BTreeMap<&str, Bound<P::Config>> = module
            .configs
            .iter()
            .filter_map(|(name, t)| Some((name.as_str(), bound(t)?)))
            .collect();
        let instances: BTreeMap<&str, Bound<P::Config>> = module
            .instances
            .iter()
            .filter_map(|(name, t)| Some((name.as_str(), bound(t)?)))
            .collect();
        self.check_cluster_keys(aspect, &instances);
        let mut declared: BTreeMap<&str, Vec<&'static Declaration>> = BTreeMap::new();
        for x in self.declarations.iter().filter(|x| x.aspect == aspect) {
            declared.entry(x.name).or_default().push(x);
        }
        let default = configs.get(inherit::DEFAULT);
        // configured but not declared: likely a typo
        for (name, table) in &module.instances {
            if self.offline || declared.contains_key(name.as_str()) {
                continue;
            }
            let close = did_you_mean(name, declared.keys().copied())
                .map(|n| format!("; did you mean `{n}`?"))
                .unwrap_or_default();
            self.d.warn(table.problem(format!(
                "no protected function in this binary declares {aspect} `{name}`{close} (a crate that the binary never names is not linked: add `use that_crate as _;`)"
            )));
        }
        // what the file says of each declared instance: the error kinds it
        // names must exist in the declared error types, and its settings must
        // be ones the attributes can honour
        for (name, sites) in &declared {
            let Some(effective) = instances.get(name).or(default) else {
                continue;
            };
            check_kinds::<P>(aspect, name, sites, effective, &mut self.d);
            check_honoured::<P>(aspect, name, sites, effective, &mut self.d);
        }
        // the registry, with every configured and declared instance
        let mut tags: Tags = module
            .tags
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // Spring Cloud's group meter filter: every instance has a `group`
        // (the facade's own instances overwrite it with theirs)
        if let Some(cloud) = self
            .doc
            .cloud
            .as_ref()
            .filter(|c| c.enable_group_meter_filter())
        {
            tags.entry(cloud::GROUP_TAG.to_owned())
                .or_insert_with(|| cloud.default_group_tag().to_owned());
        }
        let mut builder = Registry::<P>::builder()
            .clock(self.clock.clone())
            .tags(tags);
        builder = builder.default_config(P::library_default());
        for (name, b) in &configs {
            builder = builder.configuration(*name, b.config.clone());
        }
        let registry = builder.build();
        if !self.d.errors.is_empty() {
            return registry;
        }
        let effective = match default {
            Some(b) => Effective::of::<P>(b),
            None => Effective::library::<P>(),
        };
        self.defaults.insert(aspect, effective);
        let names: BTreeSet<&str> = instances.keys().chain(declared.keys()).copied().collect();
        for name in names {
            let effective = match (instances.get(name), default) {
                (Some(b), _) | (None, Some(b)) => Effective::of::<P>(b),
                (None, None) => Effective::library::<P>(),
            };
            let config = effective
                .config::<P>()
                .cloned()
                .unwrap_or_else(P::library_default);
            registry.get_or_create(name, || config);
            self.instances.push(InstanceReport {
                aspect,
                name: name.to_owned(),
                configured: instances.contains_key(name),
                sources: effective
                    .provenance
                    .iter()
                    .map(|(k, s)| (*k, source_of(s)))
                    .collect(),
                declared_at: declared.get(name).cloned().unwrap_or_default(),
                effective,
            });
        }
        registry
    }
}

/// Warns of settings that the attributes of `sites` cannot honour.
fn check_honoured<P: Binder>(
    aspect: Aspect,
    name: &str,
    sites: &[&'static Declaration],
    effective: &Bound<P::Config>,
    d: &mut Diagnostics,
) {
    // a `#[time_limiter]` whose future owns what it uses honours
    // `cancel-running-future = false`: only the others are said
    let sites: Vec<&'static Declaration> = sites
        .iter()
        .copied()
        .filter(|s| !(aspect == Aspect::TimeLimiter && s.detachable()))
        .collect();
    let Some(&site) = sites.first() else {
        return;
    };
    for (key, why) in P::unhonoured_by_attributes(&effective.config) {
        if let Some(setting) = effective.provenance.get(key) {
            d.warn(setting.problem(format!(
                "has no effect on {aspect} `{name}` as `{}` at {}:{} uses it: {why}",
                site.path(),
                site.file,
                site.line
            )));
        }
    }
}

fn check_kinds<P: Binder>(
    aspect: Aspect,
    name: &str,
    sites: &[&'static Declaration],
    effective: &Bound<P::Config>,
    d: &mut Diagnostics,
) {
    let known: BTreeSet<&str> = sites
        .iter()
        .flat_map(|x| x.error_kinds.iter().copied())
        .collect();
    let types: Vec<&str> = sites
        .iter()
        .map(|x| x.error_type)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let first = sites[0];
    for (key, kinds) in P::kinds(&effective.config) {
        let Some(setting) = effective.provenance.get(key) else {
            continue;
        };
        for kind in kinds {
            if known.contains(kind.as_str()) || REJECTION_KINDS.contains(&kind.as_str()) {
                continue;
            }
            let used = format!(
                "{} (the error type of {aspect} `{name}` at {}:{})",
                value::list(&types),
                first.file,
                first.line
            );
            let message = if known.is_empty() {
                format!(
                    "`{kind}` is not an error kind: {used} has no kinds; derive `resil::Classify` for it, or name only rejections ({})",
                    value::list(&REJECTION_KINDS)
                )
            } else {
                let all: Vec<&str> = known.iter().copied().chain(REJECTION_KINDS).collect();
                let hint = match did_you_mean(&kind, all.iter().copied()) {
                    Some(k) => format!("did you mean `{k}`?"),
                    None => format!(
                        "its kinds are {}",
                        value::list(&known.iter().copied().collect::<Vec<_>>())
                    ),
                };
                format!("`{kind}` is not an error kind of {used}; {hint}")
            };
            d.error(setting.problem(message));
        }
    }
}

/// Where a setting was written, for [`InstanceReport::source`].
fn source_of(s: &Setting) -> String {
    match s.source.strip_prefix("env ") {
        Some(var) => format!("environment variable {var}"),
        None => format!("`{}` in {}", s.path, s.source),
    }
}
