//! The `[cloud]` table: Spring Cloud CircuitBreaker's
//! `spring.cloud.circuitbreaker.resilience4j.*` properties, for resil's
//! `resil::cloud` facade.
//!
//! In resilience.toml they are a top-level table:
//!
//! ```toml
//! [cloud]
//! disable-thread-pool = false
//! disable-time-limiter = false
//! enable-semaphore-default-bulkhead = false
//! executor-max-threads = 64
//!
//! [cloud.disable-time-limiter-map]
//! inventory-reserve = true
//! ```
//!
//! In an `application.yml` they are where Spring Cloud reads them,
//! `spring.cloud.circuitbreaker.resilience4j`, beside the `resilience4j:`
//! tree. Keys bind as every other key does (case, `-` and `_` do not
//! matter), every value is checked, and `RESIL_CLOUD__<KEY>` overrides one
//! (`RESIL_CLOUD__DISABLE_TIME_LIMITER_MAP__<ID>` for the map).
//!
//! # Examples
//!
//! ```
//! use resil_config::Resilience;
//!
//! let loaded = Resilience::builder()
//!     .file_contents("resilience.toml", "[cloud]\nexecutor-max-threads = 8\n")
//!     .env_vars(Vec::<(String, String)>::new())
//!     .load()?;
//! let cloud = loaded.registries().cloud();
//! assert_eq!(cloud.executor_max_threads(), 8);
//! assert!(!cloud.disable_thread_pool());
//! # Ok::<(), resil_config::InitError>(())
//! ```

use std::collections::BTreeMap;

use crate::error::{ConfigProblem, Diagnostics};
use crate::value::{
    CloudPrefix, Ctx, Kind, Node, Origin, Setting, Val, boolean, count, did_you_mean, list,
    relaxed, segment,
};

/// The table's name in resilience.toml.
pub(crate) const TABLE: &str = "cloud";

/// Where Spring Cloud reads the same keys in an `application.yml`.
pub(crate) const SPRING_PATH: [&str; 4] = ["spring", "cloud", "circuitbreaker", "resilience4j"];

/// The tag that names a facade instance's group, as Spring Cloud names it.
pub const GROUP_TAG: &str = "group";

/// The default of `executor-max-threads`.
pub const DEFAULT_EXECUTOR_MAX_THREADS: u32 = 64;

/// Spring Cloud CircuitBreaker's Resilience4j properties, as the facade
/// `resil::cloud` reads them; every field has Spring Cloud 3.3's default,
/// except the executor, which is bounded (Spring Cloud's is an unbounded
/// cached thread pool).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudSettings {
    pub(crate) disable_thread_pool: bool,
    pub(crate) disable_time_limiter: bool,
    pub(crate) disable_time_limiter_map: BTreeMap<String, bool>,
    pub(crate) enable_semaphore_default_bulkhead: bool,
    pub(crate) enable_group_meter_filter: bool,
    pub(crate) default_group_tag: String,
    pub(crate) executor_max_threads: u32,
    pub(crate) executor_queue_capacity: u32,
}

impl Default for CloudSettings {
    fn default() -> Self {
        CloudSettings {
            disable_thread_pool: false,
            disable_time_limiter: false,
            disable_time_limiter_map: BTreeMap::new(),
            enable_semaphore_default_bulkhead: false,
            enable_group_meter_filter: false,
            default_group_tag: "none".to_owned(),
            executor_max_threads: DEFAULT_EXECUTOR_MAX_THREADS,
            executor_queue_capacity: 0,
        }
    }
}

impl CloudSettings {
    /// `disable-thread-pool`: the blocking `run` calls the supplier on the
    /// caller's thread, without a time limiter (default `false`).
    pub fn disable_thread_pool(&self) -> bool {
        self.disable_thread_pool
    }

    /// `disable-time-limiter`: no time limiter for any id or group unless
    /// `disable-time-limiter-map` says otherwise (default `false`).
    pub fn disable_time_limiter(&self) -> bool {
        self.disable_time_limiter
    }

    /// `disable-time-limiter-map`: per id or group, whether the time limiter is off.
    pub fn disable_time_limiter_map(&self) -> &BTreeMap<String, bool> {
        &self.disable_time_limiter_map
    }

    /// Whether the breaker `id` of `group` runs without a time limiter, as
    /// Spring Cloud decides it: the map's entry for the id, else for the
    /// group, else `disable-time-limiter`.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_config::Resilience;
    ///
    /// let toml = "[cloud]\ndisable-time-limiter = true\n[cloud.disable-time-limiter-map]\nreserve = false\n";
    /// let loaded = Resilience::builder()
    ///     .file_contents("resilience.toml", toml)
    ///     .env_vars(Vec::<(String, String)>::new())
    ///     .load()?;
    /// let cloud = loaded.registries().cloud();
    /// assert!(!cloud.is_time_limiter_disabled("reserve", "inventory"));
    /// assert!(cloud.is_time_limiter_disabled("query", "inventory"));
    /// # Ok::<(), resil_config::InitError>(())
    /// ```
    pub fn is_time_limiter_disabled(&self, id: &str, group: &str) -> bool {
        self.disable_time_limiter_map
            .get(id)
            .or_else(|| self.disable_time_limiter_map.get(group))
            .copied()
            .unwrap_or(self.disable_time_limiter)
    }

    /// `enable-semaphore-default-bulkhead`: a group without a thread-pool
    /// bulkhead instance gets a semaphore bulkhead instead of a thread-pool
    /// one (default `false`).
    pub fn enable_semaphore_default_bulkhead(&self) -> bool {
        self.enable_semaphore_default_bulkhead
    }

    /// `enable-group-meter-filter`: every instance without a `group` tag
    /// gets `group = default-group-tag`, so that every meter has the tag
    /// (default `false`; Spring Cloud's is `true`, because Micrometer's
    /// Prometheus registry refuses meters of one name with different tag
    /// keys, which resil's exporter does not).
    pub fn enable_group_meter_filter(&self) -> bool {
        self.enable_group_meter_filter
    }

    /// `default-group-tag` (default `none`).
    pub fn default_group_tag(&self) -> &str {
        &self.default_group_tag
    }

    /// `executor-max-threads`: the most threads the executor of the blocking
    /// `run` starts, per group (default [`DEFAULT_EXECUTOR_MAX_THREADS`]).
    pub fn executor_max_threads(&self) -> u32 {
        self.executor_max_threads
    }

    /// `executor-queue-capacity`: suppliers that wait for an executor thread
    /// (default 0: when every thread is busy, the call is refused at once).
    pub fn executor_queue_capacity(&self) -> u32 {
        self.executor_queue_capacity
    }

    /// The settings by key, as resilience.toml writes them.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("disable-thread-pool", self.disable_thread_pool.to_string()),
            (
                "disable-time-limiter",
                self.disable_time_limiter.to_string(),
            ),
            (
                "enable-semaphore-default-bulkhead",
                self.enable_semaphore_default_bulkhead.to_string(),
            ),
            (
                "enable-group-meter-filter",
                self.enable_group_meter_filter.to_string(),
            ),
            ("default-group-tag", self.default_group_tag.clone()),
            (
                "executor-max-threads",
                self.executor_max_threads.to_string(),
            ),
            (
                "executor-queue-capacity",
                self.executor_queue_capacity.to_string(),
            ),
        ];
        if !self.disable_time_limiter_map.is_empty() {
            let map: Vec<String> = self
                .disable_time_limiter_map
                .iter()
                .map(|(k, v)| format!("{} = {v}", segment(k)))
                .collect();
            out.push((
                "disable-time-limiter-map",
                format!("{{ {} }}", map.join(", ")),
            ));
        }
        out
    }

    /// Sets `disable-thread-pool`.
    pub fn set_disable_thread_pool(&mut self, on: bool) -> &mut Self {
        self.disable_thread_pool = on;
        self
    }

    /// Sets `disable-time-limiter`.
    pub fn set_disable_time_limiter(&mut self, on: bool) -> &mut Self {
        self.disable_time_limiter = on;
        self
    }

    /// Sets the `disable-time-limiter-map` entry of an id or group.
    pub fn set_time_limiter_disabled_for(&mut self, id_or_group: &str, on: bool) -> &mut Self {
        self.disable_time_limiter_map
            .insert(id_or_group.to_owned(), on);
        self
    }

    /// Sets `enable-semaphore-default-bulkhead`.
    pub fn set_enable_semaphore_default_bulkhead(&mut self, on: bool) -> &mut Self {
        self.enable_semaphore_default_bulkhead = on;
        self
    }

    /// Sets `enable-group-meter-filter`.
    pub fn set_enable_group_meter_filter(&mut self, on: bool) -> &mut Self {
        self.enable_group_meter_filter = on;
        self
    }

    /// Sets `default-group-tag`.
    pub fn set_default_group_tag(&mut self, tag: impl Into<String>) -> &mut Self {
        self.default_group_tag = tag.into();
        self
    }

    /// Sets `executor-max-threads`, from 1 to 10000.
    ///
    /// # Errors
    ///
    /// A message naming the rule when `threads` is out of range.
    pub fn set_executor_max_threads(&mut self, threads: u32) -> Result<&mut Self, String> {
        if !(1..=10_000).contains(&threads) {
            return Err(EXECUTOR_MAX_THREADS_RULE.to_owned());
        }
        self.executor_max_threads = threads;
        Ok(self)
    }

    /// Sets `executor-queue-capacity`, at most 1000000.
    ///
    /// # Errors
    ///
    /// A message naming the rule when `capacity` is out of range.
    pub fn set_executor_queue_capacity(&mut self, capacity: u32) -> Result<&mut Self, String> {
        if capacity > 1_000_000 {
            return Err(EXECUTOR_QUEUE_RULE.to_owned());
        }
        self.executor_queue_capacity = capacity;
        Ok(self)
    }
}

const EXECUTOR_MAX_THREADS_RULE: &str =
    "must be from 1 to 10000: the executor is bounded, as a thread-pool bulkhead is";
const EXECUTOR_QUEUE_RULE: &str = "must be at most 1000000, as a thread-pool bulkhead's queue";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CloudTy {
    Bool,
    /// The executor's queue.
    Count,
    /// The executor's threads.
    Positive,
    Text,
    BoolMap,
}

/// The keys of `[cloud]`, with their types.
const KEYS: &[(&str, CloudTy)] = &[
    ("disable-thread-pool", CloudTy::Bool),
    ("disable-time-limiter", CloudTy::Bool),
    ("disable-time-limiter-map", CloudTy::BoolMap),
    ("enable-semaphore-default-bulkhead", CloudTy::Bool),
    ("enable-group-meter-filter", CloudTy::Bool),
    ("default-group-tag", CloudTy::Text),
    ("executor-max-threads", CloudTy::Positive),
    ("executor-queue-capacity", CloudTy::Count),
];

/// Every key of `[cloud]`, canonical (kebab-case).
pub(crate) fn key_names() -> impl Iterator<Item = &'static str> {
    KEYS.iter().map(|(k, _)| *k)
}

fn find(key: &str) -> Option<(&'static str, CloudTy)> {
    let r = relaxed(key);
    KEYS.iter().copied().find(|(k, _)| relaxed(k) == r)
}

/// Whether `key` (relaxed) names the map, whose entries are ids.
pub(crate) fn is_map_key(key: &str) -> bool {
    find(key).is_some_and(|(_, ty)| ty == CloudTy::BoolMap)
}

/// Whether `key` (relaxed) is a key of `[cloud]`.
pub(crate) fn is_key(key: &str) -> bool {
    find(key).is_some()
}

impl CloudPrefix {
    fn path(self, origin: &Origin, rest: &[&str]) -> String {
        let mut segments: Vec<String> = match (origin, self) {
            (Origin::File, CloudPrefix::Spring) => {
                SPRING_PATH.iter().map(|s| (*s).to_owned()).collect()
            }
            _ => vec![TABLE.to_owned()],
        };
        segments.extend(rest.iter().map(|s| segment(s)));
        segments.join(".")
    }
}

/// Reads the `[cloud]` table, reporting every mistake in `d`, and each key
/// as written in `written` (`disable-time-limiter-map.<id>` for the map's
/// entries).
pub(crate) fn read(
    node: &Node,
    prefix: CloudPrefix,
    ctx: &Ctx,
    d: &mut Diagnostics,
    written: &mut BTreeMap<String, Setting>,
) -> CloudSettings {
    let mut out = CloudSettings::default();
    let mut write = |node: &Node, key: String, rest: &[&str]| {
        written.insert(
            key,
            Setting {
                val: Val::Nothing,
                source: ctx.source(&node.origin),
                path: prefix.path(&node.origin, rest),
                raw: node.render(),
            },
        );
    };
    let problem = |node: &Node, rest: &[&str], message: String| {
        ConfigProblem::new(
            ctx.source(&node.origin),
            prefix.path(&node.origin, rest),
            Some(node.render()),
            message,
        )
    };
    let Kind::Table(table) = &node.kind else {
        d.error(problem(
            node,
            &[],
            "expected a table of Spring Cloud CircuitBreaker settings".to_owned(),
        ));
        return out;
    };
    let mut spelled: BTreeMap<&'static str, &str> = BTreeMap::new();
    for (key, value) in table {
        let Some((name, ty)) = find(key) else {
            let names: Vec<&str> = key_names().collect();
            d.error(problem(
                value,
                &[key],
                format!(
                    "unknown cloud setting{}",
                    match did_you_mean(key, names.iter().copied()) {
                        Some(m) => format!("; did you mean `{m}`?"),
                        None => format!("; expected one of {}", list(&names)),
                    }
                ),
            ));
            continue;
        };
        if let Some(other) = spelled.insert(name, key) {
            d.error(problem(
                value,
                &[key],
                format!("is the same key as `{other}` in this table; give it once"),
            ));
            continue;
        }
        if ty != CloudTy::BoolMap {
            write(value, name.to_owned(), &[key]);
        }
        match ty {
            CloudTy::BoolMap => {
                let Kind::Table(entries) = &value.kind else {
                    d.error(problem(
                        value,
                        &[key],
                        "expected a table of ids or groups and true or false".to_owned(),
                    ));
                    continue;
                };
                for (id, v) in entries {
                    write(v, format!("{name}.{id}"), &[key, id]);
                    match boolean(v) {
                        Ok(b) => {
                            out.disable_time_limiter_map.insert(id.clone(), b);
                        }
                        Err(m) => d.error(problem(v, &[key, id], m)),
                    }
                }
            }
            CloudTy::Bool => match boolean(value) {
                Ok(b) => match name {
                    "disable-thread-pool" => out.disable_thread_pool = b,
                    "disable-time-limiter" => out.disable_time_limiter = b,
                    "enable-semaphore-default-bulkhead" => {
                        out.enable_semaphore_default_bulkhead = b;
                    }
                    _ => out.enable_group_meter_filter = b,
                },
                Err(m) => d.error(problem(value, &[key], m)),
            },
            CloudTy::Count => match count(value) {
                Ok(n) => {
                    if let Err(m) = out.set_executor_queue_capacity(n) {
                        d.error(problem(value, &[key], m));
                    }
                }
                Err(m) => d.error(problem(value, &[key], m)),
            },
            CloudTy::Positive => match count(value) {
                Ok(n) => {
                    if let Err(m) = out.set_executor_max_threads(n) {
                        d.error(problem(value, &[key], m));
                    }
                }
                Err(m) => d.error(problem(value, &[key], m)),
            },
            CloudTy::Text => match &value.kind {
                Kind::Str(s) if !s.trim().is_empty() => out.default_group_tag = s.clone(),
                Kind::Str(_) => d.error(problem(
                    value,
                    &[key],
                    "must not be empty: it is a tag's value".to_owned(),
                )),
                _ => d.error(problem(value, &[key], "expected a string".to_owned())),
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's `cloud` section lists every key of `[cloud]`, and no other.
    #[test]
    fn the_reference_lists_every_cloud_key() {
        let reference = include_str!("../../docs/configuration.md");
        let heading = "## `cloud`";
        let start = reference
            .find(heading)
            .expect("docs/configuration.md has a section ## `cloud`");
        let section = &reference[start + heading.len()..];
        let section = &section[..section.find("\n## ").unwrap_or(section.len())];
        for key in key_names() {
            assert!(
                section.contains(&format!("| `{key}` |")),
                "docs/configuration.md: `{key}` of {heading} is missing"
            );
        }
        for row in section.lines().filter(|l| l.starts_with("| `")) {
            let key = row[3..].split('`').next().unwrap();
            assert!(
                is_key(key),
                "docs/configuration.md lists `{key}` under {heading}, which the loader does not know"
            );
        }
    }
}
