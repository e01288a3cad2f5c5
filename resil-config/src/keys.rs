//! The keys of resilience.toml's config and instance tables: one table per
//! aspect, one row per key.
//!
//! A row holds everything the crate knows of its key: its name (and
//! Resilience4j's alias, if it has one) and type, which the validation of
//! the file and of the environment reads (`file::keys`, `file::find_key`:
//! the rows' order is the order of the did-you-mean candidates and of the
//! "(x is v)" hints in builder errors); how binding sets it ([`Bind`]: for a
//! plain key, a call of the builder's setter, which `bind` makes for every
//! table of a chain that sets it); and how the report prints it from a
//! configuration (its [`Printer`], which `Binder::describe` calls).
//!
//! Keys whose binding is more than one setter call are bound by their
//! aspect's code in `bind` (or by `inherit`) and say so with [`Bind::Own`]:
//! the waits and the keys of their interval function (circuit breaker,
//! retry), the cluster keys (circuit breaker, rate limiter),
//! `context-propagators` (thread-pool bulkhead), the keys kept in `Extras`
//! (`max-keys`, `key-label`, the health-indicator flags,
//! `subscribe-for-events`, `shared`, `pool-size`) and `base-config`. Their rows still give their
//! name and type, and the printer of those the report prints.
//!
//! The report prints the keys in the rows' order, except for the circuit
//! breaker, the retry and the rate limiter, whose report keeps the order it
//! had before the keys were one table (the window before the waits, the
//! cluster keys last): their `*_DESCRIBED` lists give it, each printed key
//! once.
//!
//! Tests hold the tables to the rest: `bind`'s, that every row is read by
//! validation, that a plain key has a setter and a printer and that setting
//! it alone changes what the report prints, that a key bound by the
//! aspect's code is one its test names, and that the `*_DESCRIBED` lists
//! name exactly the printed keys; `file`'s, that `docs/configuration.md`
//! lists every key and no other.

use std::collections::BTreeMap;
use std::time::Duration;

use resil_core::bulkhead::{BulkheadConfig, BulkheadConfigBuilder, LimitAlgorithm};
use resil_core::circuit_breaker::{CircuitBreakerConfig, CircuitBreakerConfigBuilder};
use resil_core::interval::IntervalFunction;
use resil_core::rate_limiter::{RateLimiterConfig, RateLimiterConfigBuilder};
use resil_core::retry::{RetryConfig, RetryConfigBuilder};
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkheadConfig, ThreadPoolBulkheadConfigBuilder};

use crate::aspect::Aspect;
use crate::duration;
use crate::value::Val;

/// The type of a key's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    /// A percentage (`f32` in the builders).
    Percent,
    /// Any number (`f64`).
    Float,
    /// A whole number from 0 to `u32::MAX`.
    Count,
    Duration,
    Bool,
    WindowType,
    /// A list of error kind names (Java class names reduced to their simple name).
    Kinds,
    BaseConfig,
    /// A Java class name standing for code: refused with this advice.
    Code(&'static str),
    /// A list of names of context propagators registered with
    /// `resil::context_propagator!` (checked when bound).
    Propagators,
    /// Accepted for compatibility (a bool) and without effect in Rust.
    NoEffect,
    /// The URL of a cluster backend (`redis://...`; needs the `redis` feature).
    ClusterUrl,
    /// A non-empty string (a cluster key).
    Text,
    /// `local`, `allow` or `deny`.
    FailureMode,
    /// A circuit breaker's `initial-state`: `CLOSED`, `DISABLED`,
    /// `METRICS_ONLY` or `FORCED_OPEN`.
    InitialState,
    /// A bulkhead's `limit-algorithm`: `fixed`, `aimd`, `gradient2` or `vegas`.
    LimitAlgorithm,
}

/// A key of a config or instance table: what validation knows of it.
#[derive(Debug)]
pub(crate) struct KeyDef {
    pub(crate) name: &'static str,
    pub(crate) alias: Option<&'static str>,
    pub(crate) ty: Ty,
}

/// How binding prints values a configuration cannot print itself (interval
/// functions), by key.
pub(crate) type Notes = BTreeMap<&'static str, String>;

/// A plain key's setter: the builder with the value set (a value of another
/// type, which validation never lets through, leaves it as it is).
pub(crate) type Setter<B> = fn(B, &Val) -> B;

/// A key's printer: its value in a configuration as resilience.toml writes
/// it, `None` where the configuration has none to print (no cluster).
pub(crate) type Printer<C> = fn(&C, &Notes) -> Option<String>;

/// How binding sets a key.
pub(crate) enum Bind<B> {
    /// A plain key: `bind` calls the setter with the value of each table
    /// that sets it, deepest base first.
    Set(Setter<B>),
    /// Bound by its aspect's own code in `bind` (or by `inherit`).
    Own,
    /// Never bound: a key refused when read (Java code) or accepted without effect.
    Never,
}

/// One key of an aspect's table, with builder `B` and configuration `C`.
pub(crate) struct Row<B, C> {
    pub(crate) def: KeyDef,
    pub(crate) bind: Bind<B>,
    /// How the report prints it; `None` for a key it does not print.
    pub(crate) print: Option<Printer<C>>,
}

/// A plain key: set by `set`, printed by `print`.
const fn plain<B, C>(name: &'static str, ty: Ty, set: Setter<B>, print: Printer<C>) -> Row<B, C> {
    Row {
        def: KeyDef {
            name,
            alias: None,
            ty,
        },
        bind: Bind::Set(set),
        print: Some(print),
    }
}

/// A plain key with Resilience4j's other name.
const fn plain_aliased<B, C>(
    name: &'static str,
    alias: &'static str,
    ty: Ty,
    set: Setter<B>,
    print: Printer<C>,
) -> Row<B, C> {
    Row {
        def: KeyDef {
            name,
            alias: Some(alias),
            ty,
        },
        bind: Bind::Set(set),
        print: Some(print),
    }
}

/// A key its aspect's code binds, not printed.
const fn own<B, C>(name: &'static str, ty: Ty) -> Row<B, C> {
    Row {
        def: KeyDef {
            name,
            alias: None,
            ty,
        },
        bind: Bind::Own,
        print: None,
    }
}

/// A key its aspect's code binds, printed by `print`.
const fn own_printed<B, C>(name: &'static str, ty: Ty, print: Printer<C>) -> Row<B, C> {
    Row {
        def: KeyDef {
            name,
            alias: None,
            ty,
        },
        bind: Bind::Own,
        print: Some(print),
    }
}

/// A key that is never bound (Java code, or no effect).
const fn never<B, C>(name: &'static str, ty: Ty) -> Row<B, C> {
    Row {
        def: KeyDef {
            name,
            alias: None,
            ty,
        },
        bind: Bind::Never,
        print: None,
    }
}

/// A setter of a value of type `Val::$variant`, passed on by `$setter` (as
/// `$conv` makes it, or copied).
macro_rules! set {
    ($variant:ident, $setter:ident) => {
        |b, v| match v {
            Val::$variant(x) => b.$setter(*x),
            _ => b,
        }
    };
    ($variant:ident, $setter:ident, |$x:ident| $conv:expr) => {
        |b, v| match v {
            Val::$variant($x) => b.$setter($conv),
            _ => b,
        }
    };
}

/// A printer of what `$get` reads from the configuration `$c`.
macro_rules! show {
    (|$c:ident| $get:expr) => {
        |$c, _| Some($get)
    };
}

mod deadline;
mod hedge;
mod time_limiter;
pub(crate) use self::deadline::DEADLINE_KEYS;
pub(crate) use self::hedge::HEDGE_KEYS;
pub(crate) use self::time_limiter::TIME_LIMITER_KEYS;

/// A list of error kinds as resilience.toml writes it.
pub(crate) fn list(kinds: &[Box<str>]) -> String {
    let items: Vec<String> = kinds.iter().map(|k| format!("{:?}", &**k)).collect();
    format!("[{}]", items.join(", "))
}

/// A wait: its duration when constant, else how binding noted it.
pub(crate) fn describe_interval(f: &IntervalFunction, notes: &Notes, key: &'static str) -> String {
    match f.as_constant() {
        Some(d) => duration::format(d),
        None => notes.get(key).cloned().unwrap_or_else(|| format!("{f:?}")),
    }
}

/// The settings of configuration `c` as resilience.toml writes them: the
/// rows' printers, in `order` (key names) or else in the rows' order.
pub(crate) fn describe<B, C>(
    rows: &[Row<B, C>],
    order: Option<&[&'static str]>,
    c: &C,
    notes: &Notes,
) -> Vec<(&'static str, String)> {
    // a URL's password is never shown, whatever a backend's `location` says
    let print = |row: &Row<B, C>| {
        let value = row.print?(c, notes)?;
        Some((row.def.name, crate::error::redacted(value)))
    };
    match order {
        None => rows.iter().filter_map(print).collect(),
        Some(order) => order
            .iter()
            .filter_map(|key| rows.iter().find(|r| r.def.name == *key))
            .filter_map(print)
            .collect(),
    }
}

/// The keys of a config or instance table of `aspect`, in its table's order.
pub(crate) fn defs(aspect: Aspect) -> Vec<&'static KeyDef> {
    fn of<B, C>(rows: &'static [Row<B, C>]) -> Vec<&'static KeyDef> {
        rows.iter().map(|r| &r.def).collect()
    }
    match aspect {
        Aspect::CircuitBreaker => of(CIRCUIT_BREAKER_KEYS),
        Aspect::Retry => of(RETRY_KEYS),
        Aspect::Bulkhead => of(BULKHEAD_KEYS),
        Aspect::ThreadPoolBulkhead => of(THREAD_POOL_BULKHEAD_KEYS),
        Aspect::RateLimiter => of(RATE_LIMITER_KEYS),
        Aspect::TimeLimiter => of(TIME_LIMITER_KEYS),
        Aspect::Hedge => of(HEDGE_KEYS),
        Aspect::Deadline => of(DEADLINE_KEYS),
    }
}

pub(crate) const BASE_CONFIG: &str = "base-config";
pub(crate) const EVENT_CONSUMER_BUFFER_SIZE: &str = "event-consumer-buffer-size";
/// Keyed instances (`key = expr` on an attribute): the keys a name keeps.
pub(crate) const MAX_KEYS: &str = "max-keys";
/// Keyed instances: whether their meters carry a `key` tag.
pub(crate) const KEY_LABEL: &str = "key-label";
/// Shadow mode (rate limiter, bulkheads, time limiter, retry): decide, never refuse.
pub(crate) const SHADOW: &str = "shadow";
/// The flag of an exponential wait (circuit breaker, retry).
pub(crate) const ENABLE_EXPONENTIAL: &str = "enable-exponential-backoff";
/// The flag of a randomized wait (circuit breaker, retry).
pub(crate) const ENABLE_RANDOMIZED: &str = "enable-randomized-wait";
/// An exponential wait's multiplier (circuit breaker, retry).
pub(crate) const MULTIPLIER: &str = "exponential-backoff-multiplier";
/// A randomized wait's factor (circuit breaker, retry).
pub(crate) const FACTOR: &str = "randomized-wait-factor";
/// A circuit breaker's open-state wait.
pub(crate) const CB_WAIT: &str = "wait-duration-in-open-state";
/// A circuit breaker's exponential maximum of the open-state wait.
pub(crate) const CB_MAX: &str = "exponential-max-wait-duration-in-open-state";
/// A retry's wait.
pub(crate) const RETRY_WAIT: &str = "wait-duration";
/// A retry's exponential maximum.
pub(crate) const RETRY_MAX: &str = "exponential-max-wait-duration";
/// The retry budget a retry spends (`[retrybudget.instances.<name>]`).
pub(crate) const BUDGET: &str = "budget";

/// Kept in `Extras` (circuit breaker, rate limiter): for the actuator's health.
pub(crate) const REGISTER_HEALTH_INDICATOR: &str = "register-health-indicator";
/// Kept in `Extras` (circuit breaker, rate limiter): for the actuator's health.
pub(crate) const ALLOW_HEALTH_INDICATOR_TO_FAIL: &str = "allow-health-indicator-to-fail";
/// Kept in `Extras` (rate limiter).
pub(crate) const SUBSCRIBE_FOR_EVENTS: &str = "subscribe-for-events";
/// Kept in `Extras` (circuit breaker): functions that share the breaker's
/// name call one downstream on purpose (no start-up warning).
pub(crate) const SHARED: &str = "shared";
/// Kept in `Extras` (bulkhead): the connection pool the bulkhead's calls
/// use (a warning when `max-concurrent-calls` exceeds it).
pub(crate) const POOL_SIZE: &str = "pool-size";

/// The state a circuit breaker starts in (`METRICS_ONLY` is its shadow mode).
pub(crate) const INITIAL_STATE: &str = "initial-state";

/// The order the report prints a circuit breaker's keys in: the window's
/// before the waits, the cluster's last.
pub(crate) const CIRCUIT_BREAKER_DESCRIBED: &[&str] = &[
    "failure-rate-threshold",
    "slow-call-rate-threshold",
    "slow-call-duration-threshold",
    "sliding-window-type",
    "sliding-window-size",
    "minimum-number-of-calls",
    "permitted-number-of-calls-in-half-open-state",
    CB_WAIT,
    "max-wait-duration-in-half-open-state",
    "automatic-transition-from-open-to-half-open-enabled",
    INITIAL_STATE,
    "record-errors",
    "ignore-errors",
    EVENT_CONSUMER_BUFFER_SIZE,
    CLUSTER_URL,
    CLUSTER_KEY,
    CLUSTER_TIMEOUT,
    CLUSTER_PROBE_EXPIRY,
];

pub(crate) const CIRCUIT_BREAKER_KEYS: &[Row<CircuitBreakerConfigBuilder, CircuitBreakerConfig>] =
    &[
        plain(
            "failure-rate-threshold",
            Ty::Percent,
            set!(Float, failure_rate_threshold, |f| *f as f32),
            show!(|c| c.failure_rate_threshold().to_string()),
        ),
        plain(
            "slow-call-rate-threshold",
            Ty::Percent,
            set!(Float, slow_call_rate_threshold, |f| *f as f32),
            show!(|c| c.slow_call_rate_threshold().to_string()),
        ),
        plain(
            "slow-call-duration-threshold",
            Ty::Duration,
            set!(Duration, slow_call_duration_threshold),
            show!(|c| duration::format(c.slow_call_duration_threshold())),
        ),
        own_printed(CB_WAIT, Ty::Duration, |c, notes| {
            Some(describe_interval(
                c.wait_interval_function_in_open_state(),
                notes,
                CB_WAIT,
            ))
        }),
        plain(
            "max-wait-duration-in-half-open-state",
            Ty::Duration,
            set!(Duration, max_wait_duration_in_half_open_state),
            show!(|c| duration::format(c.max_wait_duration_in_half_open_state())),
        ),
        plain(
            "sliding-window-type",
            Ty::WindowType,
            set!(WindowType, sliding_window_type),
            show!(|c| c.sliding_window_type().to_string()),
        ),
        plain(
            "sliding-window-size",
            Ty::Count,
            set!(Count, sliding_window_size),
            show!(|c| c.sliding_window_size().to_string()),
        ),
        plain(
            "minimum-number-of-calls",
            Ty::Count,
            set!(Count, minimum_number_of_calls),
            show!(|c| c.minimum_number_of_calls().to_string()),
        ),
        plain(
            "permitted-number-of-calls-in-half-open-state",
            Ty::Count,
            set!(Count, permitted_number_of_calls_in_half_open_state),
            show!(|c| c.permitted_number_of_calls_in_half_open_state().to_string()),
        ),
        plain(
            "automatic-transition-from-open-to-half-open-enabled",
            Ty::Bool,
            set!(Bool, automatic_transition_from_open_to_half_open_enabled),
            show!(|c| c
                .automatic_transition_from_open_to_half_open_enabled()
                .to_string()),
        ),
        plain(
            INITIAL_STATE,
            Ty::InitialState,
            set!(InitialState, initial_state),
            show!(|c| c.initial_state().as_str().to_owned()),
        ),
        never("writable-stack-trace-enabled", Ty::NoEffect),
        plain_aliased(
            "record-errors",
            "record-exceptions",
            Ty::Kinds,
            set!(Kinds, record_errors, |k| k.clone()),
            show!(|c| list(c.record_errors())),
        ),
        plain_aliased(
            "ignore-errors",
            "ignore-exceptions",
            Ty::Kinds,
            set!(Kinds, ignore_errors, |k| k.clone()),
            show!(|c| list(c.ignore_errors())),
        ),
        never(
            "record-failure-predicate",
            Ty::Code("write the predicate in Rust: `#[circuit_breaker(record = path)]`"),
        ),
        never(
            "ignore-exception-predicate",
            Ty::Code("write the predicate in Rust: `#[circuit_breaker(ignore = path)]`"),
        ),
        never(
            "record-result-predicate",
            Ty::Code("write the predicate in Rust: `#[circuit_breaker(record_result = path)]`"),
        ),
        own(ENABLE_EXPONENTIAL, Ty::Bool),
        own(MULTIPLIER, Ty::Float),
        own(CB_MAX, Ty::Duration),
        own(ENABLE_RANDOMIZED, Ty::Bool),
        own(FACTOR, Ty::Float),
        own(REGISTER_HEALTH_INDICATOR, Ty::Bool),
        own(ALLOW_HEALTH_INDICATOR_TO_FAIL, Ty::Bool),
        own_printed(CLUSTER_URL, Ty::ClusterUrl, |c, _| {
            c.cluster().map(|k| k.backend().location())
        }),
        own_printed(CLUSTER_KEY, Ty::Text, |c, _| {
            c.cluster().map(|k| {
                k.key_name()
                    .unwrap_or("resil:{<name>}:circuitbreaker")
                    .to_owned()
            })
        }),
        own_printed(CLUSTER_TIMEOUT, Ty::Duration, |c, _| {
            c.cluster().map(|k| duration::format(k.timeout_duration()))
        }),
        own_printed(CLUSTER_PROBE_EXPIRY, Ty::Duration, |c, _| {
            c.cluster()
                .map(|k| duration::format(k.probe_expiry_duration()))
        }),
        plain(
            EVENT_CONSUMER_BUFFER_SIZE,
            Ty::Count,
            set!(Count, event_consumer_buffer_size),
            show!(|c| c.event_consumer_buffer_size().to_string()),
        ),
        own(MAX_KEYS, Ty::Count),
        own(KEY_LABEL, Ty::Bool),
        own(SHARED, Ty::Bool),
        own(BASE_CONFIG, Ty::BaseConfig),
    ];

/// The order the report prints a retry's keys in.
pub(crate) const RETRY_DESCRIBED: &[&str] = &[
    "max-attempts",
    RETRY_WAIT,
    "fail-after-max-attempts",
    "retry-errors",
    "ignore-errors",
    SHADOW,
    EVENT_CONSUMER_BUFFER_SIZE,
    BUDGET,
];

pub(crate) const RETRY_KEYS: &[Row<RetryConfigBuilder, RetryConfig>] = &[
    plain(
        "max-attempts",
        Ty::Count,
        set!(Count, max_attempts),
        show!(|c| c.max_attempts().to_string()),
    ),
    own_printed(RETRY_WAIT, Ty::Duration, |c, notes| {
        let f = c.interval_bi_function();
        Some(match f.as_constant() {
            Some(d) => duration::format(d),
            None => notes
                .get(RETRY_WAIT)
                .cloned()
                .unwrap_or_else(|| format!("{f:?}")),
        })
    }),
    never(
        "interval-bi-function",
        Ty::Code("write it in Rust: `RetryConfig::builder().interval_bi_function(..)`"),
    ),
    plain_aliased(
        "retry-errors",
        "retry-exceptions",
        Ty::Kinds,
        set!(Kinds, retry_errors, |k| k.clone()),
        show!(|c| list(c.retry_errors())),
    ),
    plain_aliased(
        "ignore-errors",
        "ignore-exceptions",
        Ty::Kinds,
        set!(Kinds, ignore_errors, |k| k.clone()),
        show!(|c| list(c.ignore_errors())),
    ),
    never(
        "retry-exception-predicate",
        Ty::Code("write the predicate in Rust: `#[retry(retry_on = path)]`"),
    ),
    never(
        "result-predicate",
        Ty::Code("write the predicate in Rust: `#[retry(retry_on_result = path)]`"),
    ),
    never(
        "consume-result-before-retry-attempt",
        Ty::Code("write the consumer in Rust: `#[retry(consume_result = path)]`"),
    ),
    plain(
        "fail-after-max-attempts",
        Ty::Bool,
        set!(Bool, fail_after_max_attempts),
        show!(|c| c.fail_after_max_attempts().to_string()),
    ),
    own(ENABLE_EXPONENTIAL, Ty::Bool),
    own(MULTIPLIER, Ty::Float),
    own(RETRY_MAX, Ty::Duration),
    own(ENABLE_RANDOMIZED, Ty::Bool),
    own(FACTOR, Ty::Float),
    plain(
        SHADOW,
        Ty::Bool,
        set!(Bool, shadow),
        show!(|c| c.shadow().to_string()),
    ),
    plain(
        EVENT_CONSUMER_BUFFER_SIZE,
        Ty::Count,
        set!(Count, event_consumer_buffer_size),
        show!(|c| c.event_consumer_buffer_size().to_string()),
    ),
    own_printed(BUDGET, Ty::Text, |c, _| {
        c.budget().map(|b| b.name().to_owned())
    }),
    own(MAX_KEYS, Ty::Count),
    own(KEY_LABEL, Ty::Bool),
    own(BASE_CONFIG, Ty::BaseConfig),
];

pub(crate) const BULKHEAD_KEYS: &[Row<BulkheadConfigBuilder, BulkheadConfig>] = &[
    plain(
        "max-concurrent-calls",
        Ty::Count,
        set!(Count, max_concurrent_calls),
        show!(|c| c.max_concurrent_calls().to_string()),
    ),
    plain(
        "max-wait-duration",
        Ty::Duration,
        set!(Duration, max_wait_duration),
        show!(|c| duration::format(c.max_wait_duration())),
    ),
    plain(
        "fair-call-handling-enabled",
        Ty::Bool,
        set!(Bool, fair_call_handling_enabled),
        show!(|c| c.fair_call_handling_enabled().to_string()),
    ),
    plain(
        "limit-algorithm",
        Ty::LimitAlgorithm,
        set!(LimitAlgorithm, limit_algorithm),
        show!(|c| c.limit_algorithm().to_string()),
    ),
    plain(
        "min-concurrent-calls",
        Ty::Count,
        set!(Count, min_concurrent_calls),
        |c, _| adaptive(c, c.min_concurrent_calls(), 1, |v| v.to_string()),
    ),
    plain(
        "initial-concurrent-calls",
        Ty::Count,
        set!(Count, initial_concurrent_calls),
        |c, _| {
            let initial = c.initial_concurrent_calls();
            adaptive(c, initial, c.max_concurrent_calls(), |v| v.to_string())
        },
    ),
    plain(
        "limit-drop-errors",
        Ty::Kinds,
        set!(Kinds, limit_drop_errors, |k| k.clone()),
        |c, _| {
            adaptive(c, c.limit_drop_errors().len(), 0, |_| {
                list(c.limit_drop_errors())
            })
        },
    ),
    plain(
        "backoff-ratio",
        Ty::Float,
        set!(Float, backoff_ratio),
        |c, _| adaptive(c, c.backoff_ratio(), 0.9, |v| v.to_string()),
    ),
    plain(
        "drop-timeout",
        Ty::Duration,
        set!(Duration, drop_timeout),
        |c, _| {
            adaptive(
                c,
                c.drop_timeout(),
                Duration::from_secs(5),
                duration::format,
            )
        },
    ),
    plain(
        "rtt-tolerance",
        Ty::Float,
        set!(Float, rtt_tolerance),
        |c, _| adaptive(c, c.rtt_tolerance(), 1.5, |v| v.to_string()),
    ),
    plain("smoothing", Ty::Float, set!(Float, smoothing), |c, _| {
        let default = BulkheadConfig::builder()
            .limit_algorithm(c.limit_algorithm())
            .build()
            .map_or(0.2, |d| d.smoothing());
        adaptive(c, c.smoothing(), default, |v| v.to_string())
    }),
    plain(
        "long-window",
        Ty::Count,
        set!(Count, long_window),
        |c, _| adaptive(c, c.long_window(), 600, |v| v.to_string()),
    ),
    plain("queue-size", Ty::Count, set!(Count, queue_size), |c, _| {
        adaptive(c, c.queue_size(), None, |v| function_or(v, "sqrt(limit)"))
    }),
    plain("alpha", Ty::Count, set!(Count, alpha), |c, _| {
        adaptive(c, c.alpha(), None, |v| function_or(v, "3*log10(limit)"))
    }),
    plain("beta", Ty::Count, set!(Count, beta), |c, _| {
        adaptive(c, c.beta(), None, |v| function_or(v, "6*log10(limit)"))
    }),
    plain("threshold", Ty::Count, set!(Count, threshold), |c, _| {
        adaptive(c, c.threshold(), None, |v| function_or(v, "log10(limit)"))
    }),
    plain(
        "probe-multiplier",
        Ty::Count,
        set!(Count, probe_multiplier),
        |c, _| adaptive(c, c.probe_multiplier(), 30, |v| v.to_string()),
    ),
    plain(
        "min-window-time",
        Ty::Duration,
        set!(Duration, min_window_time),
        |c, _| {
            adaptive(
                c,
                c.min_window_time(),
                Duration::from_secs(1),
                duration::format,
            )
        },
    ),
    plain(
        "max-window-time",
        Ty::Duration,
        set!(Duration, max_window_time),
        |c, _| {
            adaptive(
                c,
                c.max_window_time(),
                Duration::from_secs(1),
                duration::format,
            )
        },
    ),
    plain(
        "window-size",
        Ty::Count,
        set!(Count, window_size),
        |c, _| adaptive(c, c.window_size(), 10, |v| v.to_string()),
    ),
    plain(
        "min-rtt-threshold",
        Ty::Duration,
        set!(Duration, min_rtt_threshold),
        |c, _| {
            adaptive(
                c,
                c.min_rtt_threshold(),
                Duration::from_micros(100),
                duration::format,
            )
        },
    ),
    plain(
        SHADOW,
        Ty::Bool,
        set!(Bool, shadow),
        show!(|c| c.shadow().to_string()),
    ),
    never("writable-stack-trace-enabled", Ty::NoEffect),
    plain(
        EVENT_CONSUMER_BUFFER_SIZE,
        Ty::Count,
        set!(Count, event_consumer_buffer_size),
        show!(|c| c.event_consumer_buffer_size().to_string()),
    ),
    own(POOL_SIZE, Ty::Count),
    own(MAX_KEYS, Ty::Count),
    own(KEY_LABEL, Ty::Bool),
    own(BASE_CONFIG, Ty::BaseConfig),
];

/// A setting of a bulkhead's adaptive limit, as the report prints it: when
/// the limit adapts, or when it is set away from its `default` (a fixed
/// bulkhead ignores it, but the report shows what the file says).
fn adaptive<T: PartialEq>(
    c: &BulkheadConfig,
    value: T,
    default: T,
    print: impl FnOnce(T) -> String,
) -> Option<String> {
    (c.limit_algorithm() != LimitAlgorithm::Fixed || value != default).then(|| print(value))
}

/// A number set in place of a function of the limit, or the function.
fn function_or(value: Option<u32>, function: &str) -> String {
    value.map_or_else(|| function.to_owned(), |v| v.to_string())
}

/// The thread-pool bulkhead's list of registered context propagators.
pub(crate) const CONTEXT_PROPAGATORS: &str = "context-propagators";

pub(crate) const THREAD_POOL_BULKHEAD_KEYS: &[Row<
    ThreadPoolBulkheadConfigBuilder,
    ThreadPoolBulkheadConfig,
>] = &[
    plain(
        "max-thread-pool-size",
        Ty::Count,
        set!(Count, max_thread_pool_size),
        show!(|c| c.max_thread_pool_size().to_string()),
    ),
    plain(
        "core-thread-pool-size",
        Ty::Count,
        set!(Count, core_thread_pool_size),
        show!(|c| c.core_thread_pool_size().to_string()),
    ),
    plain(
        "queue-capacity",
        Ty::Count,
        set!(Count, queue_capacity),
        show!(|c| c.queue_capacity().to_string()),
    ),
    plain(
        "keep-alive-duration",
        Ty::Duration,
        set!(Duration, keep_alive_duration),
        show!(|c| duration::format(c.keep_alive_duration())),
    ),
    plain(
        SHADOW,
        Ty::Bool,
        set!(Bool, shadow),
        show!(|c| c.shadow().to_string()),
    ),
    never("writable-stack-trace-enabled", Ty::NoEffect),
    own(CONTEXT_PROPAGATORS, Ty::Propagators),
    plain(
        EVENT_CONSUMER_BUFFER_SIZE,
        Ty::Count,
        set!(Count, event_consumer_buffer_size),
        show!(|c| c.event_consumer_buffer_size().to_string()),
    ),
    own(MAX_KEYS, Ty::Count),
    own(KEY_LABEL, Ty::Bool),
    own(BASE_CONFIG, Ty::BaseConfig),
];

pub(crate) const CLUSTER_URL: &str = "cluster-url";
pub(crate) const CLUSTER_KEY: &str = "cluster-key";
pub(crate) const CLUSTER_LEASE: &str = "cluster-lease";
pub(crate) const CLUSTER_TIMEOUT: &str = "cluster-timeout";
pub(crate) const CLUSTER_FAILURE_MODE: &str = "cluster-failure-mode";
pub(crate) const CLUSTER_PROBE_EXPIRY: &str = "cluster-probe-expiry";

/// The order the report prints a rate limiter's keys in: the cluster's last.
pub(crate) const RATE_LIMITER_DESCRIBED: &[&str] = &[
    "limit-for-period",
    "limit-refresh-period",
    "timeout-duration",
    SHADOW,
    EVENT_CONSUMER_BUFFER_SIZE,
    CLUSTER_URL,
    CLUSTER_KEY,
    CLUSTER_LEASE,
    CLUSTER_TIMEOUT,
    CLUSTER_FAILURE_MODE,
];

pub(crate) const RATE_LIMITER_KEYS: &[Row<RateLimiterConfigBuilder, RateLimiterConfig>] = &[
    plain(
        "limit-for-period",
        Ty::Count,
        set!(Count, limit_for_period),
        show!(|c| c.limit_for_period().to_string()),
    ),
    plain(
        "limit-refresh-period",
        Ty::Duration,
        set!(Duration, limit_refresh_period),
        show!(|c| duration::format(c.limit_refresh_period())),
    ),
    plain(
        "timeout-duration",
        Ty::Duration,
        set!(Duration, timeout_duration),
        show!(|c| duration::format(c.timeout_duration())),
    ),
    plain(
        SHADOW,
        Ty::Bool,
        set!(Bool, shadow),
        show!(|c| c.shadow().to_string()),
    ),
    own_printed(CLUSTER_URL, Ty::ClusterUrl, |c, _| {
        c.cluster().map(|k| k.backend().location())
    }),
    own_printed(CLUSTER_KEY, Ty::Text, |c, _| {
        c.cluster().map(|k| {
            k.key_name()
                .unwrap_or("resil:{<name>}:ratelimiter")
                .to_owned()
        })
    }),
    own_printed(CLUSTER_LEASE, Ty::Count, |c, _| {
        c.cluster().map(|k| k.lease_size().to_string())
    }),
    own_printed(CLUSTER_TIMEOUT, Ty::Duration, |c, _| {
        c.cluster().map(|k| duration::format(k.timeout_duration()))
    }),
    own_printed(CLUSTER_FAILURE_MODE, Ty::FailureMode, |c, _| {
        c.cluster().map(|k| k.mode().to_string())
    }),
    never("writable-stack-trace-enabled", Ty::NoEffect),
    own(SUBSCRIBE_FOR_EVENTS, Ty::Bool),
    own(REGISTER_HEALTH_INDICATOR, Ty::Bool),
    own(ALLOW_HEALTH_INDICATOR_TO_FAIL, Ty::Bool),
    plain(
        EVENT_CONSUMER_BUFFER_SIZE,
        Ty::Count,
        set!(Count, event_consumer_buffer_size),
        show!(|c| c.event_consumer_buffer_size().to_string()),
    ),
    own(MAX_KEYS, Ty::Count),
    own(KEY_LABEL, Ty::Bool),
    own(BASE_CONFIG, Ty::BaseConfig),
];
