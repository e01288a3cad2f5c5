//! resil: Resilience4j for Rust, declared with attributes.
//!
//! Annotate a function, keep every threshold in `resilience.toml`, call
//! [`init`] at start-up, and get Resilience4j 2.2's semantics: the circuit
//! breaker's six states and sliding windows, retry with backoff, semaphore and
//! thread-pool bulkheads, the cycle-based rate limiter and the time limiter,
//! stacked in Resilience4j's order
//! `Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(fn)))))` whatever
//! the order of the attributes in the source. Beyond Resilience4j, a hedge
//! ([`hedge`](macro@hedge)) starts a slow call again beside itself, inside
//! the retry and outside the breaker, and a deadline
//! ([`deadline`](macro@deadline)) gives the whole call one budget of time,
//! outermost, which every layer beneath it spends.
//!
//! ```
//! #[derive(Debug, resil::Classify)]
//! enum InventoryError {
//!     ConnectionRefused,
//!     OutOfStock,
//!     Unavailable(resil::Rejection),
//! }
//!
//! impl From<resil::Rejection> for InventoryError {
//!     fn from(r: resil::Rejection) -> Self {
//!         InventoryError::Unavailable(r)
//!     }
//! }
//!
//! fn is_transient(e: &InventoryError) -> bool {
//!     matches!(e, InventoryError::ConnectionRefused)
//! }
//!
//! #[resil::retry(name = "inventory-query", retry_on = is_transient)]
//! #[resil::circuit_breaker(name = "inventory-query")]
//! fn stock(sku: &str) -> Result<u32, InventoryError> {
//!     if sku.is_empty() { Err(InventoryError::OutOfStock) } else { Ok(7) }
//! }
//!
//! fn main() {
//! #   // run where no resilience.toml is: the repository's belongs to its example
//! #   let dir = std::env::temp_dir().join(format!("resil-doc-{}", std::process::id()));
//! #   std::fs::create_dir_all(&dir).unwrap();
//! #   std::env::set_current_dir(&dir).unwrap();
//!     // reads ./resilience.toml (or $RESIL_CONFIG) when there is one
//!     let report = resil::init().expect("a valid resilience.toml");
//!     println!("{report}");
//!     assert_eq!(stock("SKU-1").unwrap(), 7);
//!     assert!(matches!(stock(""), Err(InventoryError::OutOfStock)));
//! #   let _ = InventoryError::ConnectionRefused;
//! #   if let InventoryError::Unavailable(r) = InventoryError::from(resil::Rejection::from(
//! #       resil::rate_limiter::RequestNotPermitted::new("x".into()))) { let _ = r.name(); }
//! #   std::fs::remove_dir(&dir).unwrap();
//! }
//! ```
//!
//! | module or item | what |
//! | --- | --- |
//! | the attributes ([`circuit_breaker`](macro@circuit_breaker), [`retry`](macro@retry), ...) | protect a function |
//! | [`init`], [`Resilience`](config::Resilience) | load `resilience.toml`, build the registries, check the declarations |
//! | [`reload`], [`reload_dry_run`], [`ReloadReport`](config::ReloadReport) | apply an edited `resilience.toml` to the running instances, all or nothing, keeping their state |
//! | [`watch`], [`Watcher`](config::Watcher) (feature `watch`) | reload when `resilience.toml` changes |
//! | [`circuit_breaker`](mod@circuit_breaker), [`retry`](mod@retry), ... | the primitives, for code that composes them by hand |
//! | [`Decorators`] | the same chain, by hand |
//! | [`registries`] | the process-wide registries the attributes use |
//! | [`metrics`](mod@metrics) (feature `metrics`) | Resilience4j's Micrometer meters through the `metrics` facade |
//! | [`actuator`] (feature `actuator`) | Spring Boot's actuator endpoints as an axum router |
//! | [`cloud`] (feature `cloud`) | Spring Cloud CircuitBreaker's `CircuitBreakerFactory` and `run(supplier, fallback)` |
//! | [`cluster`](mod@cluster), `redis` (feature `redis`) | rate limits and half-open probes shared by a fleet, on Redis |
//! | [`testing`] (feature `testing`) | test scopes: annotated functions tested in parallel, each test with its own settings, state and clock |
//! | [`record`] | every call outcome as a JSON line (`[resil] record`), for `resil replay` to try a candidate configuration over |
//!
//! # Features
//!
//! | feature | what |
//! | --- | --- |
//! | `metrics` | every meter of Resilience4j's Micrometer binders, with its names and tags, through the [`metrics`](https://docs.rs/metrics) facade ([`metrics`](mod@metrics)) |
//! | `tracing` | `tracing` events for state transitions, rejections, retries and timeouts (targets `resil::circuit_breaker`, `resil::retry`, ...; field `name`); the fields `resil.name`, `resil.circuit_breaker.state`, `resil.retry.attempts`, `resil.rejected` of the caller's span, where it declares them |
//! | `actuator` | an axum 0.8 router with `/actuator/health`, `/actuator/circuitbreakers`, ..., `/actuator/prometheus`, event streams and `/actuator/resilience` ([`actuator`]); implies `metrics` |
//! | `tower` | each primitive as a `tower::Layer`, and `resil::tower::named` ([`tower`](mod@tower)) |
//! | `cloud` | Spring Cloud CircuitBreaker's facade, `factory().create_in_group(id, group).run(..)` ([`cloud`]) |
//! | `redis` | `cluster-url` on rate limiters and circuit breakers: a limit, and a half-open episode (its probes and its verdict), shared by every process through Redis (the [`redis`](https://docs.rs/redis) crate on tokio; [`cluster`](mod@cluster)) |
//! | `watch` | [`watch`]: reload when `resilience.toml` changes (the [`notify`](https://docs.rs/notify) crate) |
//! | `testing` | [`testing`]: test scopes, for your tests (`[dev-dependencies]`); without it a call site pays nothing for them |
//! | `full` | all of them |
//!
//! The global registries are observed (for these features and for
//! [`record`]) from the moment
//! they are built (by [`init`] or by the first protected call); registries
//! built with [`Resilience::builder()`](config::Resilience::builder)`.load()` are
//! observed with [`observe`].
//!
//! Minimum supported Rust version: 1.95 (the toolchain the repository pins).
#![doc(test(attr(deny(warnings))))]

// The root names what a service author writes daily; the rest is in the
// modules (`config` for the loaded configuration and its reports).
pub use resil_core::{
    Classify, Decorators, Error, Rejection, bulkhead, chain, circuit_breaker, clock, cluster,
    deadline, error, event, fault, hedge, rate_limiter, registry, retry, thread_pool_bulkhead,
    time_limiter,
};

/// The README's snippets, compiled (and run, unless marked `no_run`) as doc
/// tests so that they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(feature = "watch")]
pub use resil_config::watch;
pub use resil_config::{init, registries, reload, reload_dry_run};

/// The configuration resil loaded: what `init()` and `reload()` report,
/// the registries they fill, the call sites' declarations, the building of
/// a configuration by hand ([`Resilience`](config::Resilience)), and keyed
/// instances.
pub mod config {
    #[cfg(feature = "watch")]
    pub use resil_config::Watcher;
    /// Keyed instances (`key = expr` on an attribute): the tables of each name's keys.
    pub use resil_config::keyed;
    pub use resil_config::{
        Aspect, Change, ChangeKind, ConfigProblem, InitError, InstanceReport,
        NamedContextPropagator, Registries, ReloadReport, Report, Resilience, ResilienceBuilder,
        context_propagators, declarations, is_initialized,
    };
    pub use resil_core::error::ConfigError;
    pub use resil_core::{Name, Tags};
}

pub use resil_macros::{
    Classify, bulkhead, circuit_breaker, deadline, hedge, rate_limiter, retry,
    thread_pool_bulkhead, time_limiter,
};

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

/// Registers a thread-pool bulkhead context propagator under a name, so
/// that resilience.toml can give it to a thread-pool bulkhead:
/// `context-propagators = ["tenant"]`. An unknown name there is a start-up
/// error that names it.
///
/// The propagator is any [`ContextPropagator`](crate::thread_pool_bulkhead::ContextPropagator):
/// a closure that captures on the calling thread and returns the closure that
/// re-enters on the worker (its guard leaves). With the `tracing` feature,
/// one named `tracing` (the caller's span) is registered and given to every
/// thread-pool bulkhead that lists none; listing propagators replaces it, so
/// add `"tracing"` to keep it, and `[]` turns it off.
///
/// # Examples
///
/// ```
/// use std::cell::RefCell;
///
/// thread_local! {
///     static TENANT: RefCell<Option<String>> = const { RefCell::new(None) };
/// }
///
/// /// Puts the worker's previous tenant back after the task.
/// struct Restore(Option<String>);
/// impl Drop for Restore {
///     fn drop(&mut self) {
///         TENANT.with(|t| *t.borrow_mut() = self.0.take());
///     }
/// }
///
/// resil::context_propagator!("tenant", || {
///     let tenant = TENANT.with(|t| t.borrow().clone());
///     move || Restore(TENANT.with(|t| t.replace(tenant)))
/// });
///
/// # fn main() {
/// assert!(resil::config::context_propagators().iter().any(|p| p.name() == "tenant"));
/// # }
/// ```
#[macro_export]
macro_rules! context_propagator {
    ($name:literal, $propagator:expr $(,)?) => {
        $crate::__private::inventory::submit! {
            $crate::config::NamedContextPropagator {
                name: $name,
                make: || ::std::sync::Arc::new($propagator),
                default: false,
            }
        }
    };
}

#[cfg(feature = "actuator")]
pub mod actuator;
#[cfg(feature = "cloud")]
pub mod cloud;
#[cfg(feature = "metrics")]
pub mod metrics;
mod observe;
pub mod record;
mod sync;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "tower")]
pub mod tower;

/// The Redis backend of the fleet ([`cluster`](mod@cluster)): [`RedisBackend`](redis::RedisBackend).
#[cfg(feature = "redis")]
pub mod redis {
    pub use resil_redis::*;
}
#[cfg(feature = "tracing")]
mod trace;

pub use crate::observe::observe;
