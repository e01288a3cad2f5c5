//! From resolved tables to resil-core configurations, through their builders.
//!
//! Each table of an inheritance chain is applied in turn, deepest base
//! first, onto one builder, the way Resilience4j applies a table onto
//! `Config.from(base)`: a key the table sets calls the builder's setter, so
//! the table nearest the instance wins key by key, and for the waits the
//! last setter wins (Resilience4j 2.2 throws there instead). The builder's
//! `build()` then checks every value against Resilience4j's builder rules
//! (one rule set, the builders', which accept a superset of what Spring's
//! properties accept) and each of its problems is mapped back to the key
//! that set the offending value, wherever in the chain that was.
//!
//! How the waits are chosen from the keys follows Resilience4j 2.2's Spring
//! binding:
//!
//! * circuit breaker: a table that sets `wait-duration-in-open-state` sets
//!   the open-state wait; with `enable-exponential-backoff` (of the same
//!   table) it grows by `exponential-backoff-multiplier` (default 1.5) up to
//!   `exponential-max-wait-duration-in-open-state`; with
//!   `enable-randomized-wait` it is randomized by `randomized-wait-factor`
//!   (default 0.5). Both at once is an error. Those keys in a table without
//!   `wait-duration-in-open-state` have no effect (a warning says so).
//! * retry: likewise from `wait-duration`, except that the two `enable-*`
//!   flags, the multiplier and `exponential-max-wait-duration` are inherited
//!   from the nearest table of the chain that sets them, and both flags
//!   together give an exponential random backoff.
//!
//! The plain keys (one setter call each) are set through their rows in
//! [`keys`], which also print them for the report; each aspect's
//! [`Binder::apply`] binds the rest (the waits, the cluster, the context
//! propagators), and [`bind`] the keys kept in [`Extras`].
//!
//! Where Resilience4j picks an overload by which optional keys are present
//! and so silently drops an exponential maximum given without a multiplier,
//! resil applies the maximum with the default multiplier.

use std::collections::BTreeMap;
use std::time::Duration;

use resil_core::ConfigError;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig, BulkheadConfigBuilder};
use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder,
};
use resil_core::deadline::{Deadline, DeadlineConfig, DeadlineConfigBuilder};
use resil_core::hedge::{Hedge, HedgeConfig, HedgeConfigBuilder};
use resil_core::interval::{DEFAULT_MULTIPLIER, DEFAULT_RANDOMIZATION_FACTOR, IntervalFunction};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder};
use resil_core::registry::Primitive;
use resil_core::retry::{Retry, RetryConfig, RetryConfigBuilder};
use resil_core::thread_pool_bulkhead::{
    ThreadPoolBulkhead, ThreadPoolBulkheadConfig, ThreadPoolBulkheadConfigBuilder,
};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig, TimeLimiterConfigBuilder};

use crate::aspect::Aspect;
use crate::duration;
use crate::error::{ConfigProblem, Diagnostics};
use crate::file::{self, Table};
use crate::keys::{
    self, Bind, CB_MAX, CB_WAIT, ENABLE_EXPONENTIAL, ENABLE_RANDOMIZED, FACTOR, MULTIPLIER, Notes,
    RETRY_MAX, RETRY_WAIT, Row,
};
use crate::propagators;
use crate::value::{Setting, Val};

/// A configuration built from a chain of tables, with where its values came from.
#[derive(Debug, Clone)]
pub(crate) struct Bound<C> {
    pub(crate) config: C,
    /// The tables, the instance (or config) first: `instances.a`, `configs.base`, ...
    pub(crate) chain: Vec<String>,
    /// The setting each key got its value from.
    pub(crate) provenance: BTreeMap<&'static str, Setting>,
    /// How to print values the configuration cannot print itself (interval functions).
    pub(crate) notes: BTreeMap<&'static str, String>,
    pub(crate) extras: Extras,
}

/// Keys that resil-core's configurations do not hold, kept for the actuator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extras {
    /// `register-health-indicator` (circuit breaker, rate limiter).
    pub register_health_indicator: Option<bool>,
    /// `allow-health-indicator-to-fail` (circuit breaker, rate limiter).
    pub allow_health_indicator_to_fail: Option<bool>,
    /// `subscribe-for-events` (rate limiter).
    pub subscribe_for_events: Option<bool>,
    /// `max-keys` (every aspect): the keys a keyed name keeps.
    pub max_keys: Option<u32>,
    /// `key-label` (every aspect): whether keyed instances carry a `key` tag.
    pub key_label: Option<bool>,
    /// `shared` (circuit breaker): the functions that declare the name call
    /// one downstream on purpose, so no start-up warning says otherwise.
    pub shared: Option<bool>,
    /// `pool-size` (bulkhead): the connection pool its calls use; a
    /// `max-concurrent-calls` above it is a start-up warning.
    pub pool_size: Option<u32>,
}

/// How one aspect's tables become its configuration.
pub(crate) trait Binder: Primitive {
    /// Its aspect.
    const ASPECT: Aspect;
    /// The configuration's builder.
    type Builder;
    /// Its keys, one row each ([`keys`]).
    const KEYS: &'static [Row<Self::Builder, Self::Config>];
    /// The order [`describe`](Self::describe) prints the keys in, where it
    /// is not the rows' (see [`keys`]).
    const DESCRIBED: Option<&'static [&'static str]> = None;
    /// A builder with the library defaults.
    fn builder() -> Self::Builder;
    /// Applies what the rows do not of one table onto the state (the keys
    /// bound by the aspect's own code, [`Bind::Own`]); `last` for the table
    /// the chain ends at.
    fn apply<'a>(_state: &mut State<'a, Self>, _table: &'a Table, _last: bool) {}
    /// Checks and builds.
    fn build(builder: Self::Builder) -> Result<Self::Config, ConfigError>;
    /// The settings of a configuration as resilience.toml writes them: the
    /// rows' printers.
    fn describe(config: &Self::Config, notes: &Notes) -> Vec<(&'static str, String)> {
        keys::describe(Self::KEYS, Self::DESCRIBED, config, notes)
    }
    /// The error-kind lists of a configuration, by key.
    fn kinds(config: &Self::Config) -> Vec<(&'static str, Vec<String>)>;
    /// The configuration of an instance that no table configures: the
    /// library's defaults, plus what is registered to apply by default.
    fn library_default() -> Self::Config {
        Self::Config::default()
    }
    /// Settings that the attributes cannot honour, by key, with the reason
    /// (reported for instances that protected functions declare).
    fn unhonoured_by_attributes(_config: &Self::Config) -> Vec<(&'static str, &'static str)> {
        Vec::new()
    }
}

/// The builder and what has been applied so far.
pub(crate) struct State<'a, P: Binder> {
    builder: P::Builder,
    provenance: BTreeMap<&'static str, &'a Setting>,
    notes: BTreeMap<&'static str, String>,
    problems: Vec<ConfigProblem>,
    warnings: Vec<ConfigProblem>,
    /// Values a chain passes down (retry's interval flags), the nearest table's.
    inherited: BTreeMap<&'static str, &'a Setting>,
    /// The retry budgets a retry may name.
    budgets: &'a crate::budget::Built,
}

impl<'a, P: Binder> State<'a, P> {
    fn map(&mut self, f: impl FnOnce(P::Builder) -> P::Builder) {
        let b = std::mem::replace(&mut self.builder, P::builder());
        self.builder = f(b);
    }

    fn get(&mut self, t: &'a Table, key: &'static str) -> Option<&'a Val> {
        let s = t.get(key)?;
        self.provenance.insert(key, s);
        Some(&s.val)
    }

    /// The value of `key` nearest to this table in the chain (this table's own
    /// first), for the keys Resilience4j merges into a table before building it.
    fn inherited(&mut self, t: &'a Table, key: &'static str) -> Option<&'a Setting> {
        if let Some(s) = t.get(key) {
            self.inherited.insert(key, s);
        }
        self.inherited.get(key).copied()
    }

    /// Calls the setter of each plain key (a [`Bind::Set`] row) that `t` sets.
    fn apply_plain(&mut self, t: &'a Table) {
        for row in P::KEYS {
            if let Bind::Set(set) = row.bind
                && let Some(v) = self.get(t, row.def.name)
            {
                self.map(|b| set(b, v));
            }
        }
    }

    fn warn(&mut self, s: &Setting, message: impl Into<String>) {
        self.warnings.push(s.problem(message));
    }

    /// Sets the wait `w` asks for through `set_constant` or `set_function`,
    /// mapping the interval function's problems onto the keys that fed it.
    fn wait(
        &mut self,
        w: &Wait<'a>,
        random_exponential: bool,
        set_constant: impl FnOnce(P::Builder, Duration) -> P::Builder,
        set_function: impl FnOnce(P::Builder, IntervalFunction) -> P::Builder,
    ) {
        let used = [
            (ENABLE_EXPONENTIAL, w.exponential),
            (ENABLE_RANDOMIZED, w.randomized),
            (MULTIPLIER, w.multiplier.map(|m| m.1)),
            (w.max_key, w.max.map(|m| m.1)),
            (FACTOR, w.factor.map(|f| f.1)),
        ];
        for (key, setting) in used {
            if let Some(setting) = setting {
                self.provenance.insert(key, setting);
            }
        }
        if w.exponential.is_none() && w.randomized.is_none() {
            self.notes.remove(w.key);
            let base = w.base.0;
            self.map(|b| set_constant(b, base));
            return;
        }
        let (f, note) = w.build(random_exponential);
        match f {
            Ok(f) => {
                self.notes.insert(w.key, note);
                self.map(|b| set_function(b, f));
            }
            Err(e) => {
                for p in e.problems() {
                    let setting = match p.field() {
                        "multiplier" => w.multiplier.map(|m| m.1),
                        "max_interval" => w.max.map(|m| m.1),
                        "randomization_factor" => w.factor.map(|f| f.1),
                        _ => None,
                    }
                    .unwrap_or(w.base.1);
                    self.problems.push(setting.problem(p.rule().to_owned()));
                }
            }
        }
    }
}

/// Applies `layers` (deepest base first) onto `P`'s builder and builds.
pub(crate) fn bind<'a, P: Binder>(
    layers: &[&'a Table],
    budgets: &'a crate::budget::Built,
    d: &mut Diagnostics,
) -> Option<Bound<P::Config>> {
    let mut state = State::<P> {
        budgets,
        builder: P::builder(),
        provenance: BTreeMap::new(),
        notes: BTreeMap::new(),
        problems: Vec::new(),
        warnings: Vec::new(),
        inherited: BTreeMap::new(),
    };
    let mut extras = Extras::default();
    for (i, t) in layers.iter().enumerate() {
        state.apply_plain(t);
        P::apply(&mut state, t, i + 1 == layers.len());
        let flag = |key| match t.get(key).map(|s| &s.val) {
            Some(Val::Bool(b)) => Some(*b),
            _ => None,
        };
        extras.register_health_indicator =
            flag(keys::REGISTER_HEALTH_INDICATOR).or(extras.register_health_indicator);
        extras.allow_health_indicator_to_fail =
            flag(keys::ALLOW_HEALTH_INDICATOR_TO_FAIL).or(extras.allow_health_indicator_to_fail);
        extras.subscribe_for_events =
            flag(keys::SUBSCRIBE_FOR_EVENTS).or(extras.subscribe_for_events);
        extras.key_label = flag(file::KEY_LABEL).or(extras.key_label);
        extras.shared = flag(keys::SHARED).or(extras.shared);
        // counts of at least 1: the value, or the problem
        let mut positive = |key: &str, what: &str| match t.get(key).map(|s| (s, &s.val)) {
            Some((s, Val::Count(0))) => {
                state
                    .problems
                    .push(s.problem(format!("`{key}` must be at least 1: {what}")));
                None
            }
            Some((_, Val::Count(n))) => Some(*n),
            _ => None,
        };
        extras.max_keys = positive(file::MAX_KEYS, "the keys a keyed name keeps (default 100)")
            .or(extras.max_keys);
        extras.pool_size = positive(
            keys::POOL_SIZE,
            "the connections of the pool the bulkhead's calls use",
        )
        .or(extras.pool_size);
    }
    for w in state.warnings.drain(..) {
        d.warn(w);
    }
    if !state.problems.is_empty() {
        for p in state.problems.drain(..) {
            d.error(p);
        }
        return None;
    }
    let provenance: BTreeMap<&'static str, Setting> = state
        .provenance
        .iter()
        .map(|(k, s)| (*k, (*s).clone()))
        .collect();
    match P::build(state.builder) {
        Ok(config) => Some(Bound {
            config,
            chain: layers.iter().rev().map(|t| t.label()).collect(),
            provenance,
            notes: state.notes,
            extras,
        }),
        Err(e) => {
            for p in e.problems() {
                d.error(builder_problem::<P>(p, &provenance, layers.last().copied()));
            }
            None
        }
    }
}

/// A problem of `build()`, at the key whose value broke the rule.
fn builder_problem<P: Binder>(
    p: &resil_core::error::Problem,
    provenance: &BTreeMap<&'static str, Setting>,
    entity: Option<&Table>,
) -> ConfigProblem {
    let key = p.field().replace('_', "-");
    let mut rule = p.rule().to_owned();
    // name the other keys a rule mentions as the file does, with their values
    for def in P::KEYS.iter().map(|r| &r.def) {
        let snake = def.name.replace('-', "_");
        if def.name != key && rule.contains(&snake) {
            rule = rule.replace(&snake, def.name);
            let value = match provenance.get(def.name) {
                Some(s) => format!("{} at {}", s.raw, s.path),
                None => describe_default::<P>(def.name),
            };
            rule.push_str(&format!(" ({} is {value})", def.name));
        }
    }
    match (provenance.get(key.as_str()), entity) {
        (Some(s), _) => s.problem(rule),
        (None, Some(t)) => ConfigProblem::new(
            t.source.clone(),
            format!("{}.{key}", t.path),
            Some(p.value().to_owned()),
            format!("{rule} (this key is not set, so the library default applies)"),
        ),
        (None, None) => ConfigProblem::new("resil", key, Some(p.value().to_owned()), rule),
    }
}

fn describe_default<P: Binder>(key: &str) -> String {
    P::describe(&P::Config::default(), &BTreeMap::new())
        .into_iter()
        .find(|(k, _)| *k == key)
        .map_or_else(
            || "unset".to_owned(),
            |(_, v)| format!("{v}, the library default"),
        )
}

fn owned(kinds: &[Box<str>]) -> Vec<String> {
    kinds.iter().map(|k| k.to_string()).collect()
}

/// A wait a table asks for, Resilience4j's way: a base duration, optionally
/// exponential and/or randomized.
pub(crate) struct Wait<'a> {
    /// The key of the base wait (`wait-duration`, `wait-duration-in-open-state`).
    key: &'static str,
    /// The key of the exponential maximum.
    max_key: &'static str,
    base: (Duration, &'a Setting),
    exponential: Option<&'a Setting>,
    randomized: Option<&'a Setting>,
    multiplier: Option<(f64, &'a Setting)>,
    max: Option<(Duration, &'a Setting)>,
    factor: Option<(f64, &'a Setting)>,
}

impl Wait<'_> {
    /// The function and how to print it.
    fn build(&self, random_exponential: bool) -> (Result<IntervalFunction, ConfigError>, String) {
        let base = self.base.0;
        let multiplier = self.multiplier.map_or(DEFAULT_MULTIPLIER, |m| m.0);
        let factor = self.factor.map_or(DEFAULT_RANDOMIZATION_FACTOR, |f| f.0);
        let from = duration::format(base);
        let cap = self
            .max
            .map(|(m, _)| format!(", at most {}", duration::format(m)))
            .unwrap_or_default();
        match (self.exponential.is_some(), self.randomized.is_some()) {
            (true, true) if random_exponential => (
                match self.max {
                    Some((max, _)) => IntervalFunction::of_exponential_random_backoff_with_max(
                        base, multiplier, factor, max,
                    ),
                    None => {
                        IntervalFunction::of_exponential_random_backoff(base, multiplier, factor)
                    }
                },
                format!("exponential from {from} × {multiplier}, randomized ± {factor}{cap}"),
            ),
            (true, _) => (
                match self.max {
                    Some((max, _)) => {
                        IntervalFunction::of_exponential_backoff_with_max(base, multiplier, max)
                    }
                    None => IntervalFunction::of_exponential_backoff(base, multiplier),
                },
                format!("exponential from {from} × {multiplier}{cap}"),
            ),
            (false, true) => (
                IntervalFunction::of_randomized(base, factor),
                format!("{from} randomized ± {factor}"),
            ),
            (false, false) => (IntervalFunction::of(base), from),
        }
    }
}

fn on(s: Option<&Setting>) -> Option<&Setting> {
    s.filter(|s| s.val == Val::Bool(true))
}

fn float_of(s: Option<&Setting>) -> Option<(f64, &Setting)> {
    match s {
        Some(
            s @ Setting {
                val: Val::Float(f), ..
            },
        ) => Some((*f, s)),
        _ => None,
    }
}

fn duration_of(s: Option<&Setting>) -> Option<(Duration, &Setting)> {
    match s {
        Some(
            s @ Setting {
                val: Val::Duration(d),
                ..
            },
        ) => Some((*d, s)),
        _ => None,
    }
}

impl Binder for CircuitBreaker {
    const ASPECT: Aspect = Aspect::CircuitBreaker;
    type Builder = CircuitBreakerConfigBuilder;
    const KEYS: &'static [Row<Self::Builder, Self::Config>] = keys::CIRCUIT_BREAKER_KEYS;
    const DESCRIBED: Option<&'static [&'static str]> = Some(keys::CIRCUIT_BREAKER_DESCRIBED);

    fn builder() -> Self::Builder {
        CircuitBreakerConfig::builder()
    }

    fn apply<'a>(s: &mut State<'a, Self>, t: &'a Table, last: bool) {
        apply_breaker_cluster(s, t, last);
        // The open-state wait: only this table's own keys count (Resilience4j
        // merges none of them from the base).
        let exponential = on(t.get(ENABLE_EXPONENTIAL));
        let randomized = on(t.get(ENABLE_RANDOMIZED));
        if let (Some(_), Some(r)) = (exponential, randomized) {
            s.problems.push(r.problem(format!(
                "cannot be true together with `{ENABLE_EXPONENTIAL} = true`: a circuit breaker's open-state wait is exponential or randomized, not both"
            )));
            return;
        }
        let Some(base) = t.get(CB_WAIT) else {
            for key in [
                ENABLE_EXPONENTIAL,
                ENABLE_RANDOMIZED,
                MULTIPLIER,
                CB_MAX,
                FACTOR,
            ] {
                if let Some(setting) = t.get(key) {
                    s.warn(
                        setting,
                        format!("has no effect: only a table that sets `{CB_WAIT}` chooses how the open-state wait grows"),
                    );
                }
            }
            check_inert_ranges(s, t);
            return;
        };
        let Some((base_wait, _)) = duration_of(Some(base)) else {
            return;
        };
        s.provenance.insert(CB_WAIT, base);
        warn_unused(s, t, exponential, randomized, CB_MAX);
        let wait = Wait {
            key: CB_WAIT,
            max_key: CB_MAX,
            base: (base_wait, base),
            exponential,
            randomized,
            multiplier: float_of(t.get(MULTIPLIER)),
            max: duration_of(t.get(CB_MAX)),
            factor: float_of(t.get(FACTOR)),
        };
        s.wait(
            &wait,
            false,
            |b, d| b.wait_duration_in_open_state(d),
            |b, f| b.wait_interval_function_in_open_state(f),
        );
    }

    fn build(b: Self::Builder) -> Result<CircuitBreakerConfig, ConfigError> {
        b.build()
    }

    fn kinds(c: &CircuitBreakerConfig) -> Vec<(&'static str, Vec<String>)> {
        vec![
            ("record-errors", owned(c.record_errors())),
            ("ignore-errors", owned(c.ignore_errors())),
        ]
    }
}

/// Warns about a multiplier, maximum or factor whose flag is off.
fn warn_unused<P: Binder>(
    s: &mut State<'_, P>,
    t: &Table,
    exponential: Option<&Setting>,
    randomized: Option<&Setting>,
    max_key: &'static str,
) {
    for (key, needs, flag) in [
        (MULTIPLIER, ENABLE_EXPONENTIAL, exponential),
        (max_key, ENABLE_EXPONENTIAL, exponential),
        (FACTOR, ENABLE_RANDOMIZED, randomized),
    ] {
        if let (Some(setting), None) = (t.get(key), flag) {
            s.warn(setting, format!("has no effect without `{needs} = true`"));
            if key != max_key {
                check_range(s, key, setting);
            }
        }
    }
}

/// Holds a multiplier and a randomization factor that take no effect to the
/// same rules as one that does, so that a file which starts today does not
/// fail the day someone sets the wait or the flag that makes them count.
fn check_inert_ranges<P: Binder>(s: &mut State<'_, P>, t: &Table) {
    for key in [MULTIPLIER, FACTOR] {
        if let Some(setting) = t.get(key) {
            check_range(s, key, setting);
        }
    }
}

/// The interval function's own rule for a multiplier or a factor (the core's
/// check, not a copy of it), as a problem on `setting`.
fn check_range<P: Binder>(s: &mut State<'_, P>, key: &str, setting: &Setting) {
    let Some((value, _)) = float_of(Some(setting)) else {
        return; // a value of the wrong type is reported where it is read
    };
    let one = std::time::Duration::from_millis(1);
    let checked = if key == MULTIPLIER {
        IntervalFunction::of_exponential_backoff(one, value).map(drop)
    } else {
        IntervalFunction::of_randomized(one, value).map(drop)
    };
    if let Err(e) = checked {
        for p in e.problems() {
            s.problems.push(setting.problem(p.rule().to_owned()));
        }
    }
}

impl Binder for ThreadPoolBulkhead {
    const ASPECT: Aspect = Aspect::ThreadPoolBulkhead;
    type Builder = ThreadPoolBulkheadConfigBuilder;
    const KEYS: &'static [Row<Self::Builder, Self::Config>] = keys::THREAD_POOL_BULKHEAD_KEYS;

    fn builder() -> Self::Builder {
        ThreadPoolBulkheadConfig::builder()
    }

    fn apply<'a>(s: &mut State<'a, Self>, t: &'a Table, last: bool) {
        // A listed `context-propagators` replaces what a base table listed
        // (or the defaults); no table listing any gives the defaults.
        let nearest = s.inherited(t, file::CONTEXT_PROPAGATORS);
        if let Some(setting) = t.get(file::CONTEXT_PROPAGATORS)
            && let Val::Names(names) = &setting.val
        {
            s.provenance.insert(file::CONTEXT_PROPAGATORS, setting);
            let mut found = Vec::new();
            for name in names {
                match propagators::find(name) {
                    Some(p) => found.push(p),
                    None if name.contains('.') => s.problems.push(setting.problem(format!(
                        "`{name}` names a Java class, which resil cannot load; register a Rust propagator with `resil::context_propagator!(\"name\", ..)` and list its name"
                    ))),
                    None => {
                        let registered: Vec<&str> = propagators::context_propagators()
                            .iter()
                            .map(|p| p.name())
                            .collect();
                        let registered = if registered.is_empty() {
                            "none is".to_owned()
                        } else {
                            format!("registered: `{}`", registered.join("`, `"))
                        };
                        s.problems.push(setting.problem(format!(
                            "no context propagator is registered as `{name}` ({registered}); register one with `resil::context_propagator!(\"{name}\", ..)`"
                        )));
                    }
                }
            }
            s.map(|b| {
                found.iter().fold(b.clear_context_propagators(), |b, p| {
                    b.shared_context_propagator(p.propagator())
                })
            });
        }
        if last && nearest.is_none() {
            s.map(|b| {
                propagators::defaults().fold(b.clear_context_propagators(), |b, p| {
                    b.shared_context_propagator(p.propagator())
                })
            });
        }
    }

    fn build(b: Self::Builder) -> Result<ThreadPoolBulkheadConfig, ConfigError> {
        b.build()
    }

    fn kinds(_: &ThreadPoolBulkheadConfig) -> Vec<(&'static str, Vec<String>)> {
        Vec::new()
    }

    /// With the propagators registered as defaults (the `tracing` span's,
    /// with `resil`'s `tracing` feature).
    fn library_default() -> ThreadPoolBulkheadConfig {
        propagators::defaults()
            .fold(ThreadPoolBulkheadConfig::builder(), |b, p| {
                b.shared_context_propagator(p.propagator())
            })
            .build()
            .expect("the default configuration with propagators is valid")
    }
}

impl Binder for Bulkhead {
    const ASPECT: Aspect = Aspect::Bulkhead;
    type Builder = BulkheadConfigBuilder;
    const KEYS: &'static [Row<Self::Builder, Self::Config>] = keys::BULKHEAD_KEYS;

    fn builder() -> Self::Builder {
        BulkheadConfig::builder()
    }

    fn build(b: Self::Builder) -> Result<BulkheadConfig, ConfigError> {
        b.build()
    }

    fn kinds(c: &BulkheadConfig) -> Vec<(&'static str, Vec<String>)> {
        vec![("limit-drop-errors", owned(c.limit_drop_errors()))]
    }
}

impl Binder for Retry {
    const ASPECT: Aspect = Aspect::Retry;
    type Builder = RetryConfigBuilder;
    const KEYS: &'static [Row<Self::Builder, Self::Config>] = keys::RETRY_KEYS;
    const DESCRIBED: Option<&'static [&'static str]> = Some(keys::RETRY_DESCRIBED);

    fn builder() -> Self::Builder {
        RetryConfig::builder()
    }

    fn apply<'a>(s: &mut State<'a, Self>, t: &'a Table, last: bool) {
        let budget = s.inherited(t, keys::BUDGET);
        if last && let Some(setting) = budget {
            apply_budget(s, setting, |b, budget| b.budget(budget));
        }
        // Resilience4j merges these four from the nearest table that sets
        // them before choosing the wait; the randomization factor it does not
        let exponential = on(s.inherited(t, ENABLE_EXPONENTIAL));
        let randomized = on(s.inherited(t, ENABLE_RANDOMIZED));
        let multiplier = float_of(s.inherited(t, MULTIPLIER));
        let max = duration_of(s.inherited(t, RETRY_MAX));
        let Some(base) = t.get(RETRY_WAIT) else {
            check_inert_ranges(s, t);
            if last && t.section == "instances" {
                for key in [
                    ENABLE_EXPONENTIAL,
                    ENABLE_RANDOMIZED,
                    MULTIPLIER,
                    RETRY_MAX,
                    FACTOR,
                ] {
                    if let Some(setting) = t.get(key) {
                        s.warn(
                            setting,
                            format!("has no effect: only a table that sets `{RETRY_WAIT}` chooses how the wait grows"),
                        );
                    }
                }
            }
            return;
        };
        let Some((base_wait, _)) = duration_of(Some(base)) else {
            return;
        };
        s.provenance.insert(RETRY_WAIT, base);
        warn_unused(s, t, exponential, randomized, RETRY_MAX);
        let wait = Wait {
            key: RETRY_WAIT,
            max_key: RETRY_MAX,
            base: (base_wait, base),
            exponential,
            randomized,
            multiplier,
            max,
            factor: float_of(t.get(FACTOR)),
        };
        s.wait(
            &wait,
            true,
            |b, d| b.wait_duration(d),
            |b, f| b.interval_function(f),
        );
    }

    fn build(b: Self::Builder) -> Result<RetryConfig, ConfigError> {
        b.build()
    }

    fn kinds(c: &RetryConfig) -> Vec<(&'static str, Vec<String>)> {
        vec![
            ("retry-errors", owned(c.retry_errors())),
            ("ignore-errors", owned(c.ignore_errors())),
        ]
    }
}

impl Binder for RateLimiter {
    const ASPECT: Aspect = Aspect::RateLimiter;
    type Builder = RateLimiterConfigBuilder;
    const KEYS: &'static [Row<Self::Builder, Self::Config>] = keys::RATE_LIMITER_KEYS;
    const DESCRIBED: Option<&'static [&'static str]> = Some(keys::RATE_LIMITER_DESCRIBED);

    fn builder() -> Self::Builder {
        RateLimiterConfig::builder()
    }

    fn apply<'a>(s: &mut State<'a, Self>, t: &'a Table, last: bool) {
        apply_limiter_cluster(s, t, last);
    }

    fn build(b: Self::Builder) -> Result<RateLimiterConfig, ConfigError> {
        b.build()
    }

    fn kinds(_: &RateLimiterConfig) -> Vec<(&'static str, Vec<String>)> {
        Vec::new()
    }
}

impl Binder for TimeLimiter {
    const ASPECT: Aspect = Aspect::TimeLimiter;
    type Builder = TimeLimiterConfigBuilder;
    const KEYS: &'static [Row<Self::Builder, Self::Config>] = keys::TIME_LIMITER_KEYS;

    fn builder() -> Self::Builder {
        TimeLimiterConfig::builder()
    }

    fn build(b: Self::Builder) -> Result<TimeLimiterConfig, ConfigError> {
        b.build()
    }

    fn kinds(_: &TimeLimiterConfig) -> Vec<(&'static str, Vec<String>)> {
        Vec::new()
    }

    fn unhonoured_by_attributes(c: &TimeLimiterConfig) -> Vec<(&'static str, &'static str)> {
        if c.cancel_running_future() {
            return Vec::new();
        }
        vec![(
            "cancel-running-future",
            "this `#[time_limiter]` cancels the call on timeout (its future borrows the function's arguments, or a fallback needs them afterwards, so it cannot run on in the background); an async function of owned arguments without a fallback at or outside the time limiter leaves it running, or call `TimeLimiter::call_async_detached` with a `'static` future",
        )]
    }
}

impl Binder for Hedge {
    const ASPECT: Aspect = Aspect::Hedge;
    type Builder = HedgeConfigBuilder;
    const KEYS: &'static [Row<Self::Builder, Self::Config>] = keys::HEDGE_KEYS;
    fn builder() -> Self::Builder {
        HedgeConfig::builder()
    }
    fn apply<'a>(s: &mut State<'a, Self>, t: &'a Table, last: bool) {
        let budget = s.inherited(t, keys::BUDGET);
        if last && let Some(setting) = budget {
            apply_budget(s, setting, |b, budget| b.budget(budget));
        }
    }
    fn build(b: Self::Builder) -> Result<HedgeConfig, ConfigError> {
        b.build()
    }
    fn kinds(_: &HedgeConfig) -> Vec<(&'static str, Vec<String>)> {
        Vec::new()
    }
}

impl Binder for Deadline {
    const ASPECT: Aspect = Aspect::Deadline;
    type Builder = DeadlineConfigBuilder;
    const KEYS: &'static [Row<Self::Builder, Self::Config>] = keys::DEADLINE_KEYS;
    fn builder() -> Self::Builder {
        DeadlineConfig::builder()
    }
    fn build(b: Self::Builder) -> Result<DeadlineConfig, ConfigError> {
        b.build()
    }
    fn kinds(_: &DeadlineConfig) -> Vec<(&'static str, Vec<String>)> {
        Vec::new()
    }
}

mod fleet;

use self::fleet::{apply_breaker_cluster, apply_budget, apply_limiter_cluster};

#[cfg(test)]
mod tests;
