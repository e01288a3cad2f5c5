//! Configuration for [resil](https://docs.rs/resil) from `resilience.toml`,
//! the link-time registry of protected functions, and start-up.
//!
//! `resilience.toml` is Resilience4j's Spring Boot property tree without the
//! `resilience4j.` prefix: a table per module (`circuitbreaker`, `retry`,
//! `bulkhead`, `thread-pool-bulkhead`, `ratelimiter`, `timelimiter`), each
//! with named `configs`, `instances` (Resilience4j's aliases `backends` and
//! `limiters` work too) and registry `tags`. Every key of Resilience4j 2.2 is
//! accepted in kebab-case (and, as Spring's relaxed binding allows, in
//! camelCase or snake_case). A Spring `application.yml` loads unchanged: its
//! `resilience4j:` tree is used and everything else in it is ignored.
//!
//! ```
//! use resil_config::{Aspect, Resilience};
//! use std::time::Duration;
//!
//! let toml = r#"
//! [circuitbreaker.configs.default]
//! sliding-window-size = 50
//!
//! [circuitbreaker.configs.inventory-base]
//! sliding-window-type = "COUNT_BASED"
//! sliding-window-size = 20
//! minimum-number-of-calls = 10
//! failure-rate-threshold = 50
//! slow-call-duration-threshold = "500ms"
//! wait-duration-in-open-state = "10s"
//!
//! [circuitbreaker.instances.inventory-query]
//! base-config = "inventory-base"
//!
//! [retry.instances.inventory-query]
//! max-attempts = 2
//! wait-duration = "100ms"
//! "#;
//! let loaded = Resilience::builder()
//!     .file_contents("resilience.toml", toml)
//!     .env_vars(Vec::<(String, String)>::new())
//!     .load()?;
//! let cb = loaded.registries().circuit_breakers().circuit_breaker("inventory-query");
//! assert_eq!(cb.config().sliding_window_size(), 20);
//! assert_eq!(cb.config().slow_call_duration_threshold(), Duration::from_millis(500));
//! let report = loaded.report();
//! let instance = report.instance(Aspect::CircuitBreaker, "inventory-query").unwrap();
//! // configs.default is the implicit base of configs.inventory-base
//! assert_eq!(
//!     instance.chain(),
//!     ["instances.inventory-query", "configs.inventory-base", "configs.default"]
//! );
//! # Ok::<(), resil_config::InitError>(())
//! ```
//!
//! # The file
//!
//! | topic | rule |
//! | --- | --- |
//! | durations | `500` (milliseconds, Spring's unit), `"500ms"`, `"10s"`, `"1m 30s"`, ISO `"PT0.5S"`; see [`duration`] |
//! | inheritance | `base-config`, the double role of `configs.default`, key-by-key override, cycles refused; see [`inherit`](crate#inheritance) |
//! | error kinds | `record-errors`, `ignore-errors` (circuit breaker), `retry-errors`, `ignore-errors` (retry) name error kinds |
//! | validation | every value against Resilience4j's builder rules; every problem at once, each with file, key path and value |
//! | environment | `RESIL_<MODULE>__<SECTION>__<NAME>__<KEY>=value`; see [`env`](crate#environment-overrides) |
//!
//! ## Keys
//!
//! | table | keys |
//! | --- | --- |
//! | `circuitbreaker` | `failure-rate-threshold`, `slow-call-rate-threshold`, `slow-call-duration-threshold`, `sliding-window-type`, `sliding-window-size`, `minimum-number-of-calls`, `permitted-number-of-calls-in-half-open-state`, `wait-duration-in-open-state`, `max-wait-duration-in-half-open-state`, `automatic-transition-from-open-to-half-open-enabled`, `initial-state`, `record-errors`, `ignore-errors`, `enable-exponential-backoff`, `exponential-backoff-multiplier`, `exponential-max-wait-duration-in-open-state`, `enable-randomized-wait`, `randomized-wait-factor`, `register-health-indicator`, `allow-health-indicator-to-fail` |
//! | `retry` | `max-attempts`, `wait-duration`, `retry-errors`, `ignore-errors`, `fail-after-max-attempts`, `shadow`, `enable-exponential-backoff`, `exponential-backoff-multiplier`, `exponential-max-wait-duration`, `enable-randomized-wait`, `randomized-wait-factor`, `budget` (the name of a `retrybudget` instance) |
//! | `bulkhead` | `max-concurrent-calls`, `max-wait-duration`, `fair-call-handling-enabled`, `shadow` (`fair-call-handling-enabled` is resil's addition: Resilience4j's builder has it, its properties do not) |
//! | `thread-pool-bulkhead` | `max-thread-pool-size`, `core-thread-pool-size`, `queue-capacity`, `keep-alive-duration`, `shadow`, `context-propagators` (names registered with `resil::context_propagator!`; unlisted: the defaults, `tracing`'s span with that feature; `[]`: none) |
//! | `ratelimiter` | `limit-for-period`, `limit-refresh-period`, `timeout-duration`, `shadow`, `subscribe-for-events`, `register-health-indicator`, `allow-health-indicator-to-fail` |
//! | `timelimiter` | `timeout-duration`, `cancel-running-future`, `shadow` |
//! | `deadline` | `timeout`: the whole call's budget of time, outermost (`base-config` only besides; no events, so no buffer) |
//! | `retrybudget` (`instances` only) | `ratio`, `min-retries-per-second`, `ttl`: a budget that retries share (Finagle's) |
//! | `fault` (`instances` only) | `enabled`, `delay`, `delay-percent`, `abort-percent`: injected delays and failures for the call sites of the name, for drills |
//! | every table | `base-config`, `event-consumer-buffer-size` |
//!
//! `writable-stack-trace-enabled` is accepted and has no effect (Rust errors
//! carry no stack trace). Keys that name Java code (`record-failure-predicate`,
//! `ignore-exception-predicate`, `record-result-predicate`,
//! `retry-exception-predicate`, `result-predicate`,
//! `consume-result-before-retry-attempt`, `interval-bi-function`, a Java class
//! in `context-propagators`) are errors whose message names the Rust attribute or
//! builder method that does the same. Spring-only settings (the modules'
//! `*-aspect-order` and `metrics`, the `scheduled` and `micrometer` tables)
//! load with a warning that they have no effect. Values are checked with
//! Resilience4j's builder rules, which accept a little more than its Spring
//! properties (a failure rate of `0.5`, a bulkhead of 0 calls): one rule
//! set for every source.
//!
//! ## Error kinds
//!
//! `#[derive(resil::Classify)]` gives each variant of an error enum a kind
//! name, its own name unless `#[classify(kind = "...")]` says otherwise. The
//! kind lists of resilience.toml name those kinds, or the rejections' kinds
//! (`CallNotPermitted`, `BulkheadFull`, `RequestNotPermitted`, `Timeout`,
//! `MaxRetriesExceeded`). Resilience4j's spellings `record-exceptions`,
//! `ignore-exceptions` and `retry-exceptions` are the same keys, and a Java
//! class name in them stands for its simple name:
//! `com.example.order.InventoryConnectionException` names the kind
//! `InventoryConnectionException` (an inner class `Outer$Inner` names
//! `Inner`). At start-up, a kind that none of the declared error types of
//! the instance has is an error. Keys that name Java code (predicates,
//! `interval-bi-function`) are errors that say which
//! Rust attribute or builder does the same.
//!
//! ## Inheritance
//!
//! Exactly as Resilience4j 2.2's Spring binding:
//! a table with `base-config = "x"` starts from `configs.x`; a table without
//! one starts from `configs.default` if it exists (unless the table is itself
//! named `default`), else from the library defaults; `configs.default` is
//! also the configuration of every name that appears only in code. The
//! nearest table wins key by key, chains of any length work, and a cycle is
//! an error naming every table in it. Where Resilience4j 2.2 throws because a
//! base and an instance set the wait two different ways, the instance's setting
//! wins.
//!
//! ## Environment overrides
//!
//! `RESIL_CIRCUITBREAKER__INSTANCES__INVENTORY_QUERY__FAILURE_RATE_THRESHOLD=70`
//! sets `circuitbreaker.instances.inventory-query.failure-rate-threshold`.
//! Segments are separated by `__`; module, section and key ignore case, `-`
//! and `_`; an upper-case name matches the configured or declared name that
//! equals it ignoring case, `-` and `_` (digits kept: `QUERY2` is
//! `query2`), and a name with a lower-case letter or a dash is taken as
//! written. Lists are comma-separated. `RESIL_CONFIG` names the file. Every
//! other `RESIL_` variable must map to a key. The prefix is set with
//! [`ResilienceBuilder::env_prefix`], and tests pass their own variables with
//! [`ResilienceBuilder::env_vars`].
//!
//! # Start-up
//!
//! [`init`] reads `./resilience.toml` (or the file named by `RESIL_CONFIG`),
//! applies the overrides, validates, builds the eight registries eagerly (every
//! configured instance, and every declared one), checks the file against the
//! [`Declaration`]s of protected functions and returns a [`Report`] to log.
//! A declared name without configuration runs on `configs.default` (the
//! report says so); a configured instance that no code declares is a warning
//! (a likely typo, or a crate that is not linked: see [`declared`]); an
//! error kind the declared error types do not have is an error.
//! [`ResilienceBuilder::strict`] makes the warnings errors.
//!
//! Without `init`, the first protected call builds the registries on the
//! library defaults and says so once through `tracing`; `init` after that
//! fails, as does a second `init` ([`global`] explains why).
//!
//! # Reload
//!
//! [`reload`] reads the same source again, checks it as `init` does, and
//! applies the difference to the running instances in place, all or
//! nothing, keeping their identity and state; [`reload_dry_run`] only
//! reports it ([`ReloadReport`], one line per changed setting).
//! [`Resilience::reload`] does the same for registries of the builder, and,
//! with the feature `watch`, [`watch`](crate::watch()) reloads when the
//! file changes. Some settings only a restart applies (the `cluster-*` keys,
//! registry `tags`, `[cloud]`): see [`reload`].
//!
//! Minimum supported Rust version: 1.95 (the toolchain the repository pins).
#![doc(test(attr(deny(warnings))))]

// The modules read top down, no import circle among them (tests/layers.rs
// holds it). Bottom to top, each naming only modules before it:
// error, duration, sync, aspect, propagators, cluster: the ground;
// value, declaration: what reading and declaring share;
// cloud, budget, file, env, inherit: reading resilience.toml and the
// environment;
// bind: tables to resil-core configurations;
// report, keyed_table, reloader: what start-up found, the keyed tables and
// what a reload reads again;
// global: the process-wide registries;
// declared, keyed: the call sites;
// init, reload, watch: start-up, reloading and watching the file.
mod anti_patterns;
mod aspect;
mod bind;
mod budget;
mod change;
pub mod cloud;
mod cluster;
mod declaration;
pub mod declared;
pub mod duration;
mod env;
mod error;
mod fault;
mod file;
pub mod global;
mod inherit;
mod init;
mod instances_only;
pub mod keyed;
mod keyed_table;
mod keys;
pub mod propagators;
mod reload;
mod reloader;
mod report;
mod resil_table;
#[cfg(feature = "testing")]
pub mod scoped;
mod source;
mod sync;
mod typed;
mod value;
#[cfg(feature = "watch")]
mod watch;
mod worst_case;

pub use crate::aspect::Aspect;
pub use crate::bind::Extras;
pub use crate::change::{Change, ChangeKind, ReloadReport};
pub use crate::cloud::CloudSettings;
pub use crate::declared::{CallSite, Declaration, declarations};
pub use crate::error::{ConfigProblem, InitError};
pub use crate::file::DEFAULT_FILE;
pub use crate::global::{GlobalHook, GlobalPrimitive, Registries, is_initialized, registries};
pub use crate::init::{DEFAULT_ENV_PREFIX, REJECTION_KINDS, Resilience, ResilienceBuilder, init};
pub use crate::keyed::{Keyed, KeyedCallSite, KeyedRegistry};
pub use crate::propagators::{NamedContextPropagator, context_propagators};
pub use crate::reload::{ReloadHook, reload, reload_dry_run};
pub use crate::report::{InstanceReport, Report};
pub use crate::resil_table::{DEFAULT_RECORD_MAX_BYTES, RecordSettings};
#[cfg(feature = "watch")]
pub use crate::watch::{DEFAULT_DEBOUNCE, PendingHook, Watcher, watch};
pub use crate::worst_case::WorstCase;

/// Re-exported for the expansions of resil's attribute macros.
#[doc(hidden)]
pub use inventory;
