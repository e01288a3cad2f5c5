//! Hot reload: re-read the configuration, check it as start-up does, and
//! apply the difference to the live instances, all or nothing (see [`reload`](crate::reload())).

use std::collections::{BTreeMap, BTreeSet};

use crate::sync::lock;

use resil_core::live::ChangeRefused;
use resil_core::registry::Primitive;

use crate::aspect::Aspect;
use crate::bind::{Binder, Extras};
use crate::change::{Change, ChangeKind, ReloadReport};
use crate::error::{ConfigProblem, InitError};
use crate::file::{self, DEFAULT_FILE};
use crate::global::{GlobalPrimitive, Registries};
use crate::init::{Resilience, ResilienceBuilder};
use crate::keyed::DEFAULT_MAX_KEYS;
use crate::keys;
use crate::reloader::{Inputs, Reloader};
use crate::report::{Effective, Report};
use crate::value::{self, Setting};

/// The message of a change to a setting that only a restart applies.
pub(crate) const RESTART_ONLY: &str = "cannot change while the service runs; restart to apply";

impl Inputs {
    fn builder(&self) -> ResilienceBuilder {
        let mut b = crate::Resilience::builder()
            .env_prefix(self.env_prefix.clone())
            .strict(self.strict)
            .clock(self.clock.clone())
            .declarations(self.declarations.iter().copied())
            .offline(self.offline);
        if let Some(vars) = &self.env {
            b = b.env_vars(vars.iter().cloned());
        }
        match (&self.contents, &self.file) {
            (Some((name, text)), _) => b.file_contents(name.clone(), text.clone()),
            (None, Some(path)) => b.file(path.clone()),
            (None, None) => b,
        }
    }
}

impl Reloader {
    /// Reloads `live` from the inputs (with `contents` instead of the
    /// file's, when given); applies nothing on a dry run.
    pub(crate) fn reload(
        &self,
        live: &Registries,
        contents: Option<(String, String)>,
        dry_run: bool,
    ) -> Result<ReloadReport, InitError> {
        let result = self.run(live, contents, dry_run);
        finish(&result, dry_run);
        result
    }

    fn run(
        &self,
        live: &Registries,
        contents: Option<(String, String)>,
        dry_run: bool,
    ) -> Result<ReloadReport, InitError> {
        let mut state = lock(&self.state);
        let mut inputs = state.inputs.clone();
        if let Some(contents) = contents {
            inputs.contents = Some(contents);
            inputs.file = None;
        }
        let loaded = inputs
            .builder()
            .running_budgets(live.retry_budgets())
            .load()?;
        let new = loaded.current_report();
        let mut plan = Plan::default();
        let old = state.current.clone();
        plan.restart_only(&old, &new);
        plan.configurations::<resil_core::circuit_breaker::CircuitBreaker>(
            live,
            loaded.registries(),
        );
        plan.configurations::<resil_core::retry::Retry>(live, loaded.registries());
        plan.configurations::<resil_core::bulkhead::Bulkhead>(live, loaded.registries());
        plan.configurations::<resil_core::thread_pool_bulkhead::ThreadPoolBulkhead>(
            live,
            loaded.registries(),
        );
        plan.configurations::<resil_core::rate_limiter::RateLimiter>(live, loaded.registries());
        plan.configurations::<resil_core::time_limiter::TimeLimiter>(live, loaded.registries());
        plan.configurations::<resil_core::hedge::Hedge>(live, loaded.registries());
        plan.configurations::<resil_core::deadline::Deadline>(live, loaded.registries());
        plan.aspect::<resil_core::circuit_breaker::CircuitBreaker>(live, &old, &new);
        plan.aspect::<resil_core::retry::Retry>(live, &old, &new);
        plan.aspect::<resil_core::bulkhead::Bulkhead>(live, &old, &new);
        plan.aspect::<resil_core::thread_pool_bulkhead::ThreadPoolBulkhead>(live, &old, &new);
        plan.aspect::<resil_core::rate_limiter::RateLimiter>(live, &old, &new);
        plan.aspect::<resil_core::time_limiter::TimeLimiter>(live, &old, &new);
        plan.aspect::<resil_core::hedge::Hedge>(live, &old, &new);
        plan.aspect::<resil_core::deadline::Deadline>(live, &old, &new);
        if !plan.problems.is_empty() {
            let mut problems = plan.problems;
            problems.sort();
            problems.dedup();
            return Err(InitError::Invalid(problems));
        }
        plan.changes
            .extend(crate::fault::changes(&old.faults, &new.faults));
        let report = ReloadReport {
            changes: plan.changes,
            warnings: new.warnings().to_vec(),
            dry_run,
        };
        if !dry_run {
            for apply in plan.actions {
                apply();
            }
            crate::fault::apply(&new.faults, &inputs.clock);
            let resolved = loaded.reloader.state_inputs();
            state.inputs = resolved;
            state.current = new;
        }
        Ok(report)
    }
}

/// What a reload would do, computed before anything is done.
#[derive(Default)]
struct Plan<'a> {
    changes: Vec<Change>,
    problems: Vec<ConfigProblem>,
    actions: Vec<Box<dyn FnOnce() + 'a>>,
}

impl<'a> Plan<'a> {
    /// The settings only a restart applies: registry tags and `[cloud]`
    /// (the `cluster-*` keys are compared per instance).
    fn restart_only(&mut self, old: &Report, new: &Report) {
        let file = new.file().unwrap_or(DEFAULT_FILE).to_owned();
        for aspect in Aspect::ALL {
            let empty = BTreeMap::new();
            let before = old.tags.get(&aspect).unwrap_or(&empty);
            let after = new.tags.get(&aspect).unwrap_or(&empty);
            let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
            for tag in names {
                let (b, a) = (before.get(tag), after.get(tag));
                if b.map(|s| &s.val) == a.map(|s| &s.val) {
                    continue;
                }
                self.problems.push(match (a, b) {
                    (Some(a), _) => a.problem(RESTART_ONLY),
                    (None, Some(b)) => removed(b),
                    (None, None) => ConfigProblem::new(
                        file.clone(),
                        format!("{aspect}.tags.{}", value::segment(tag)),
                        None,
                        RESTART_ONLY,
                    ),
                });
            }
        }
        // a budget's settings: retries that share it would part otherwise
        for (name, after) in &new.budgets {
            let Some(before) = old.budgets.get(name) else {
                continue;
            };
            if before.config == after.config {
                continue;
            }
            let keys: BTreeSet<&&str> = before
                .settings
                .keys()
                .chain(after.settings.keys())
                .collect();
            for key in keys {
                let (b, a) = (before.settings.get(*key), after.settings.get(*key));
                if b.map(|s| &s.val) == a.map(|s| &s.val) {
                    continue;
                }
                self.problems.push(match (a, b) {
                    (Some(a), _) => a.problem(RESTART_ONLY),
                    (None, Some(b)) => removed(b),
                    (None, None) => after.problem(RESTART_ONLY),
                });
            }
        }
        let before = old.cloud().cloned().unwrap_or_default().settings();
        let after = new.cloud().cloned().unwrap_or_default().settings();
        let find = |report: &'_ Report, key: &str| -> Option<Setting> {
            report
                .cloud_written
                .iter()
                .find(|(k, _)| *k == key || k.starts_with(&format!("{key}.")))
                .map(|(_, s)| s.clone())
        };
        let keys: BTreeSet<&str> = before.iter().chain(&after).map(|(k, _)| *k).collect();
        for key in keys {
            let value = |all: &[(&str, String)]| {
                all.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone())
            };
            let (b, a) = (value(&before), value(&after));
            if b == a {
                continue;
            }
            self.problems.push(match (find(new, key), find(old, key)) {
                (Some(s), _) => s.problem(RESTART_ONLY),
                (None, Some(s)) => removed(&s),
                (None, None) => {
                    ConfigProblem::new(file.clone(), format!("cloud.{key}"), a, RESTART_ONLY)
                }
            });
        }
    }

    /// The named configurations and `default` of the new registry, swapped
    /// into the live one.
    fn configurations<P: Binder + GlobalPrimitive>(
        &mut self,
        live: &'a Registries,
        new: &Registries,
    ) {
        let registry = P::registry(new);
        let configs: Vec<(String, P::Config)> = registry
            .configuration_names()
            .into_iter()
            .filter_map(|name| {
                let config = registry.configuration(&name)?;
                Some((name, config))
            })
            .collect();
        let target = P::registry(live);
        self.actions
            .push(Box::new(move || target.set_configurations(configs)));
    }

    /// The differences of one aspect's instances, and how to apply them.
    fn aspect<P: Binder + GlobalPrimitive>(
        &mut self,
        live: &'a Registries,
        old: &Report,
        new: &Report,
    ) {
        let aspect = <P as GlobalPrimitive>::ASPECT;
        let registry = P::registry(live);
        let names: BTreeSet<&str> = old
            .instances()
            .iter()
            .chain(new.instances())
            .filter(|i| i.aspect() == aspect)
            .map(|i| i.name())
            .collect();
        let Some(default) = new.defaults.get(&aspect) else {
            return;
        };
        for name in names {
            let running = registry.find(name);
            let before: Option<Seen<'_>> = match (old.instance(aspect, name), &running) {
                (Some(i), _) => Some(Seen {
                    settings: i.settings().to_vec(),
                    provenance: Some(&i.effective.provenance),
                    extras: i.extras(),
                    configured: i.configured(),
                }),
                // created at run time by code, now configured: compared
                // with what it runs on
                (None, Some(p)) => Some(Seen {
                    settings: P::settings(&p.configuration(), None),
                    provenance: None,
                    extras: Extras::default(),
                    configured: false,
                }),
                (None, None) => None,
            };
            let (after, configured) = match new.instance(aspect, name) {
                Some(i) => (&i.effective, i.configured()),
                None => (default, false),
            };
            let Some(config) = after.config::<P>().cloned() else {
                continue;
            };
            let Some(before) = before else {
                self.changes
                    .push(Change::whole(aspect, name, ChangeKind::Added));
                let name = name.to_owned();
                self.actions.push(Box::new(move || {
                    registry.get_or_create(&name, || config);
                }));
                continue;
            };
            let mut changes = Vec::new();
            let mut cluster = Vec::new();
            let mut settings_changed = false;
            for (key, was, now) in differences(&before.settings, &after.settings) {
                if key.starts_with("cluster-") {
                    cluster.push(key);
                    continue;
                }
                settings_changed = true;
                changes.push(Change::setting(aspect, name, key, was, now));
            }
            if cluster.is_empty() && hidden_change(&before, after) {
                cluster.push(file::CLUSTER_URL);
            }
            let (mut max_keys, mut key_label) = (None, None);
            for (key, was, now) in extras(before.extras, after.extras) {
                if key == file::MAX_KEYS {
                    max_keys = now.parse::<u32>().ok();
                }
                if key == file::KEY_LABEL {
                    key_label = now.parse::<bool>().ok();
                }
                changes.push(Change::setting(aspect, name, key, was, now));
            }
            if !cluster.is_empty() {
                self.cluster_problems(aspect, name, &cluster, &before, after, new);
                continue;
            }
            if before.configured && !configured {
                changes.insert(0, Change::whole(aspect, name, ChangeKind::BackToDefaults));
            }
            if changes.is_empty() {
                continue;
            }
            let keyed = P::keyed(live).table(name);
            if settings_changed {
                // what the instances themselves cannot take while they run
                let mut refused: Vec<ChangeRefused> = Vec::new();
                if let Some(p) = &running {
                    refused.extend(p.can_change_config(&config).err());
                }
                if let Some(table) = &keyed {
                    refused.extend(table.can_change_config(&config).err());
                }
                if !refused.is_empty() {
                    self.refused(aspect, name, &refused, &before, after, new);
                    continue;
                }
            }
            self.changes.extend(changes);
            // an instance removed at run time is created again only if the
            // new file configures it (or code declares it), as init would
            let create = new
                .instance(aspect, name)
                .is_some()
                .then(|| name.to_owned());
            self.actions.push(Box::new(move || {
                if settings_changed {
                    match (&running, create) {
                        (Some(p), _) => {
                            // checked just before: refused only if another
                            // change came between, which then stays
                            if let Err(e) = Primitive::change_config(&**p, config.clone()) {
                                tracing::warn!(
                                    target: "resil::reload",
                                    "resil: {aspect} `{}` kept its settings: {e}",
                                    p.instance_name()
                                );
                            }
                        }
                        (None, Some(name)) => {
                            registry.get_or_create(&name, || config.clone());
                        }
                        (None, None) => {}
                    }
                    if let Some(table) = &keyed {
                        table.change_config(&config);
                    }
                }
                if let Some(table) = &keyed {
                    if let Some(n) = max_keys {
                        table.set_max_keys(n);
                    }
                    if let Some(label) = key_label {
                        table.set_key_label(label);
                    }
                }
            }));
        }
    }

    /// Changes the instance refuses ([`Primitive::can_change_config`]): at
    /// the key to blame when it is known, else at the instance's table.
    fn refused(
        &mut self,
        aspect: Aspect,
        name: &str,
        refused: &[ChangeRefused],
        before: &Seen<'_>,
        after: &Effective,
        new: &Report,
    ) {
        for r in refused {
            let key = r.setting().map(|s| s.replace('_', "-"));
            let written = key.as_deref().and_then(|k| {
                let k = file::find_key(aspect, k)?.name;
                Some((
                    after.provenance.get(k),
                    before.provenance.and_then(|p| p.get(k)),
                ))
            });
            self.problems.push(match written {
                Some((Some(s), _)) => s.problem(RESTART_ONLY),
                Some((None, Some(s))) => removed(s),
                _ => ConfigProblem::new(
                    new.file().unwrap_or(DEFAULT_FILE),
                    format!("{aspect}.instances.{}", value::segment(name)),
                    None,
                    match &key {
                        Some(k) => format!("`{k}`: {RESTART_ONLY}"),
                        None => format!("cannot take this change: {}", r.reason()),
                    },
                ),
            });
        }
    }

    /// A `cluster-*` key of a running instance changed: one problem per key
    /// whose place is known, else one at the instance's table.
    fn cluster_problems(
        &mut self,
        aspect: Aspect,
        name: &str,
        keys: &[&'static str],
        before: &Seen<'_>,
        after: &Effective,
        new: &Report,
    ) {
        let mut found = false;
        for key in keys {
            let problem = match (
                after.provenance.get(key),
                before.provenance.and_then(|p| p.get(key)),
            ) {
                (Some(s), _) => s.problem(RESTART_ONLY),
                (None, Some(s)) => removed(s),
                (None, None) => continue,
            };
            found = true;
            self.problems.push(problem);
        }
        if !found {
            self.problems.push(ConfigProblem::new(
                new.file().unwrap_or(DEFAULT_FILE),
                format!("{aspect}.instances.{}", value::segment(name)),
                None,
                format!("its {} {RESTART_ONLY}", value::list(keys)),
            ));
        }
    }
}

/// A setting that is gone from the file, at the place it was written.
fn removed(was: &Setting) -> ConfigProblem {
    ConfigProblem::new(
        was.source.clone(),
        was.path.clone(),
        None,
        format!("was {} and is removed: {RESTART_ONLY}", was.raw),
    )
}

/// What an instance ran on before the reload.
struct Seen<'r> {
    settings: Vec<(&'static str, String)>,
    provenance: Option<&'r BTreeMap<&'static str, Setting>>,
    extras: Extras,
    configured: bool,
}

/// Whether the `cluster-url` changed where it is printed as `***`: its
/// password (a new password is a new backend, which only a restart brings).
fn hidden_change(before: &Seen<'_>, after: &Effective) -> bool {
    let url = |p: Option<&BTreeMap<&'static str, Setting>>| {
        p.and_then(|p| p.get(file::CLUSTER_URL))
            .map(|s| s.val.clone())
    };
    let was = url(before.provenance);
    was.is_some() && was != url(Some(&after.provenance))
}

/// `(key, old, new)` for each key whose printed value differs, in the new
/// settings' order, then the keys that are gone (`unset` on the missing side).
fn differences(
    before: &[(&'static str, String)],
    after: &[(&'static str, String)],
) -> Vec<(&'static str, String, String)> {
    let get = |all: &[(&'static str, String)], key: &str| {
        all.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone())
    };
    let mut out = Vec::new();
    for (key, now) in after {
        match get(before, key) {
            Some(was) if was == *now => {}
            was => out.push((*key, was.unwrap_or_else(unset), now.clone())),
        }
    }
    for (key, was) in before {
        if get(after, key).is_none() {
            out.push((*key, was.clone(), unset()));
        }
    }
    out
}

fn unset() -> String {
    "unset".to_owned()
}

/// The keys resil-core's configurations do not hold, with their defaults.
fn extras(before: Extras, after: Extras) -> Vec<(&'static str, String, String)> {
    let flag = |v: Option<bool>| v.unwrap_or(false).to_string();
    let all = [
        (
            file::MAX_KEYS,
            before.max_keys.unwrap_or(DEFAULT_MAX_KEYS).to_string(),
            after.max_keys.unwrap_or(DEFAULT_MAX_KEYS).to_string(),
        ),
        (
            file::KEY_LABEL,
            flag(before.key_label),
            flag(after.key_label),
        ),
        (
            keys::REGISTER_HEALTH_INDICATOR,
            flag(before.register_health_indicator),
            flag(after.register_health_indicator),
        ),
        (
            keys::ALLOW_HEALTH_INDICATOR_TO_FAIL,
            flag(before.allow_health_indicator_to_fail),
            flag(after.allow_health_indicator_to_fail),
        ),
        (
            keys::SUBSCRIBE_FOR_EVENTS,
            flag(before.subscribe_for_events),
            flag(after.subscribe_for_events),
        ),
        (keys::SHARED, flag(before.shared), flag(after.shared)),
        (
            keys::POOL_SIZE,
            before.pool_size.map_or_else(unset, |n| n.to_string()),
            after.pool_size.map_or_else(unset, |n| n.to_string()),
        ),
    ];
    all.into_iter().filter(|(_, b, a)| b != a).collect()
}

/// A function told of every reload that is not a dry run, once it applied
/// (`Ok`) or was refused (`Err`), submitted with [`inventory::submit!`]:
/// resil's `metrics` feature counts them in `resil_config_reloads_total`.
///
/// # Examples
///
/// ```
/// use resil_config::{InitError, ReloadHook, ReloadReport};
///
/// fn log(outcome: Result<&ReloadReport, &InitError>) {
///     if let Err(e) = outcome {
///         eprintln!("{e}");
///     }
/// }
///
/// resil_config::inventory::submit! {
///     ReloadHook(log)
/// }
/// # fn main() {}
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ReloadHook(pub fn(Result<&ReloadReport, &InitError>));

inventory::collect!(ReloadHook);

/// Says what a reload did: a `tracing` event of target `resil::reload`,
/// and the [`ReloadHook`]s (not for dry runs).
fn finish(result: &Result<ReloadReport, InitError>, dry_run: bool) {
    const T: &str = "resil::reload";
    match (result, dry_run) {
        (Ok(r), false) => {
            tracing::info!(target: T, outcome = "applied", changes = r.changes.len(), "resil: configuration reloaded: {r}");
        }
        (Ok(r), true) => {
            tracing::info!(target: T, outcome = "dry-run", changes = r.changes.len(), "resil: configuration checked, nothing applied (dry run): {r}");
        }
        (Err(e), false) => {
            tracing::warn!(target: T, outcome = "rejected", "resil: configuration reload rejected, the settings in force are kept: {e}");
        }
        (Err(e), true) => {
            tracing::info!(target: T, outcome = "dry-run", "resil: configuration checked (dry run), it would be rejected: {e}");
        }
    }
    if !dry_run {
        for hook in inventory::iter::<ReloadHook> {
            (hook.0)(result.as_ref());
        }
    }
}

/// Re-reads the configuration [`init`](crate::init) read and applies the
/// difference to the global registries, all or nothing.
///
/// This function (for the global registries) and [`Resilience::reload`]
/// (for registries of [`Resilience::builder()`]) read the same source that [`init`](crate::init) or
/// [`load`](crate::ResilienceBuilder::load) read: the same file (or the
/// contents given, or new contents with [`Resilience::reload_from_contents`]),
/// the same environment overrides (read again from the process environment,
/// unless the builder was given its variables), the same declarations,
/// strictness and clock. The new configuration goes through
/// [`ResilienceBuilder::load`](crate::ResilienceBuilder::load), so a file
/// that `init` refuses, a reload refuses with the same problems; a deleted
/// file is a refused reload. Then, before anything changes, the settings that
/// cannot change while the service runs are compared:
///
/// | setting | why it stays |
/// | --- | --- |
/// | `cluster-*` (a rate limiter's or circuit breaker's fleet backend) | the backend, its key and its lease belong to the fleet; processes on different settings would not share one limit |
/// | `<module>.tags` | every meter and event of an instance carries them from its creation |
/// | `[cloud]` | the facade's executors and group filter are built once |
/// | a rate limiter's `limit-refresh-period` | its cycles are counted in it since it started |
/// | `limit-for-period` of a rate limiter, `permitted-number-of-calls-in-half-open-state` of a breaker, with a `cluster-url` | the fleet shares them |
/// | any setting of an instance that already had 32 distinct configurations | each instance keeps the versions it had, for calls in flight |
///
/// Changing one of them is a problem of its own ("cannot change while the
/// service runs; restart to apply"), with the file, key path and value, and
/// the reload changes nothing (every instance is asked with
/// [`Primitive::can_change_config`] before any changes).
///
/// # What changes
///
/// The difference is computed from the printed settings of each instance
/// (those of [`InstanceReport::settings`](crate::InstanceReport::settings), and `max-keys`, `key-label` and
/// the health-indicator keys), over the instances of the report in force and
/// those of the new one; instances that code created at run time and that
/// neither report knows are left alone. For each instance whose settings
/// differ, the new configuration is applied in place with
/// [`Primitive::change_config`]: the `Arc` stays the same, so every call
/// site, clone and registry handle sees it on its next call, and each
/// primitive keeps its state as its `change_config` documents. An instance
/// removed from the file goes back to the defaults (what a new instance of
/// that name would get now: the new `configs.default`, else the library
/// defaults), and the report says so. A new instance in the file is
/// created. The registries' named configurations and `default` are replaced
/// by the new ones, and the keyed instances (`key = expr`) of a changed name
/// get the change too: a new `max-keys` bounds the keys from the next new
/// one on, a new `key-label` tags the keys added afterwards (a live key
/// keeps the tags its meters were made with).
///
/// # Examples
///
/// At start-up and after an edit:
///
/// ```no_run
/// println!("{}", resil_config::init()?);
/// // ... resilience.toml edited ...
/// let changes = resil_config::reload()?;
/// println!("{changes}");
/// # Ok::<(), resil_config::InitError>(())
/// ```
///
/// The same on registries of the builder, from new contents:
///
/// ```
/// use resil_config::Resilience;
///
/// let loaded = Resilience::builder()
///     .file_contents("resilience.toml", "[circuitbreaker.instances.inventory-query]\nfailure-rate-threshold = 50\n")
///     .env_vars(Vec::<(String, String)>::new())
///     .load()?;
/// let cb = loaded.registries().circuit_breakers().circuit_breaker("inventory-query");
/// let report = loaded.reload_from_contents(
///     "resilience.toml",
///     "[circuitbreaker.instances.inventory-query]\nfailure-rate-threshold = 30\n",
/// )?;
/// assert_eq!(report.to_string(), "circuitbreaker inventory-query: failure-rate-threshold 50 -> 30");
/// assert_eq!(cb.config().failure_rate_threshold(), 30.0); // the same instance
/// # Ok::<(), resil_config::InitError>(())
/// ```
///
/// # Errors
///
/// [`InitError::Invalid`] with every problem, as `init` reports them (and
/// the settings that cannot change while the service runs), and nothing
/// changes; [`InitError::NotInitialized`] when `init` did not build the
/// global registries.
pub fn reload() -> Result<ReloadReport, InitError> {
    global_reload(false)
}

/// What [`reload`](crate::reload()) would change, checked the same way,
/// without applying anything.
///
/// # Errors
///
/// As [`reload`](crate::reload()).
///
/// # Examples
///
/// ```
/// // without init: nothing to reload
/// assert!(matches!(resil_config::reload_dry_run(), Err(resil_config::InitError::NotInitialized)));
/// ```
pub fn reload_dry_run() -> Result<ReloadReport, InitError> {
    global_reload(true)
}

fn global_reload(dry_run: bool) -> Result<ReloadReport, InitError> {
    match crate::global::reloader() {
        Some((registries, reloader)) => reloader.reload(registries, None, dry_run),
        None => {
            let result = Err(InitError::NotInitialized);
            finish(&result, dry_run);
            result
        }
    }
}

impl Resilience {
    /// Re-reads this configuration's source and applies the difference to
    /// these registries, all or nothing (see [`reload`](crate::reload())).
    ///
    /// # Errors
    ///
    /// [`InitError::Invalid`] with every problem; nothing changes.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_config::Resilience;
    ///
    /// let loaded = Resilience::builder()
    ///     .file_contents("resilience.toml", "[retry.instances.a]\nmax-attempts = 2\n")
    ///     .env_vars(Vec::<(String, String)>::new())
    ///     .load()?;
    /// assert_eq!(loaded.reload()?.to_string(), "no changes");
    /// # Ok::<(), resil_config::InitError>(())
    /// ```
    pub fn reload(&self) -> Result<ReloadReport, InitError> {
        self.reloader.reload(self.registries(), None, false)
    }

    /// What [`Resilience::reload`] would change, without applying anything.
    ///
    /// # Errors
    ///
    /// As [`Resilience::reload`].
    pub fn reload_dry_run(&self) -> Result<ReloadReport, InitError> {
        self.reloader.reload(self.registries(), None, true)
    }

    /// Reloads from `text` as the file named `name` (as
    /// [`ResilienceBuilder::file_contents`] reads it); once applied, later
    /// reloads read these contents.
    ///
    /// # Errors
    ///
    /// As [`Resilience::reload`]; a refused text is not kept.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_config::Resilience;
    ///
    /// let loaded = Resilience::builder()
    ///     .file_contents("resilience.toml", "[retry.instances.a]\nmax-attempts = 2\n")
    ///     .env_vars(Vec::<(String, String)>::new())
    ///     .load()?;
    /// let err = loaded
    ///     .reload_from_contents("resilience.toml", "[retry.instances.a]\nmax-attempts = 0\n")
    ///     .unwrap_err();
    /// assert_eq!(err.problems()[0].key(), "retry.instances.a.max-attempts");
    /// let retry = loaded.registries().retries().retry("a");
    /// assert_eq!(retry.config().max_attempts(), 2); // nothing changed
    /// # Ok::<(), resil_config::InitError>(())
    /// ```
    pub fn reload_from_contents(
        &self,
        name: impl Into<String>,
        text: impl Into<String>,
    ) -> Result<ReloadReport, InitError> {
        self.reloader
            .reload(self.registries(), Some((name.into(), text.into())), false)
    }

    /// What [`Resilience::reload_from_contents`] would change, without
    /// applying nor keeping anything.
    ///
    /// # Errors
    ///
    /// As [`Resilience::reload`].
    pub fn reload_from_contents_dry_run(
        &self,
        name: impl Into<String>,
        text: impl Into<String>,
    ) -> Result<ReloadReport, InitError> {
        self.reloader
            .reload(self.registries(), Some((name.into(), text.into())), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_keep_the_new_order_and_name_missing_keys() {
        let before = [
            ("a", "1".to_owned()),
            ("b", "2".to_owned()),
            ("gone", "x".to_owned()),
        ];
        let after = [
            ("b", "3".to_owned()),
            ("a", "1".to_owned()),
            ("new", "y".to_owned()),
        ];
        assert_eq!(
            differences(&before, &after),
            [
                ("b", "2".to_owned(), "3".to_owned()),
                ("new", "unset".to_owned(), "y".to_owned()),
                ("gone", "x".to_owned(), "unset".to_owned()),
            ]
        );
    }
}
