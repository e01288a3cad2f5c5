//! The primitives of [resil](https://docs.rs/resil): Resilience4j 2.2's circuit
//! breaker, retry, semaphore and thread-pool bulkheads, rate limiter and time
//! limiter, with their registries, events and metrics snapshots, on one
//! injectable clock.
//!
//! Most users depend on the `resil` facade and its attributes; this crate is
//! what they expand into, and what code that composes primitives by hand uses.
//!
//! ```
//! use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
//!
//! let cb = CircuitBreaker::new("inventory-query", CircuitBreakerConfig::default());
//! let stock: Result<u32, resil_core::Error<std::io::Error>> = cb.call(|| Ok(42));
//! assert_eq!(stock.unwrap(), 42);
//! ```
//!
//! | module | Resilience4j |
//! | --- | --- |
//! | [`circuit_breaker`] | `CircuitBreaker` |
//! | [`retry`] | `Retry` |
//! | [`bulkhead`] | `Bulkhead` (semaphore) |
//! | [`thread_pool_bulkhead`] | `ThreadPoolBulkhead` |
//! | [`rate_limiter`] | `RateLimiter` (`AtomicRateLimiter`) |
//! | [`time_limiter`] | `TimeLimiter` |
//! | [`hedge`] | (Polly's hedging) |
//! | [`registry`] | `*Registry` |
//! | [`decorators`] | `Decorators` (in the fixed aspect order) |
//! | [`deadline`] | (resil's own: one budget of time for a whole request) |
//! | [`fault`] | (resil's own: injected delays and failures, for drills) |
//! | [`cluster`] | (resil's own: limits and half-open episodes shared by a fleet) |
//!
//! Minimum supported Rust version: 1.95 (the toolchain the repository pins).
#![doc(test(attr(deny(warnings))))]

pub mod bulkhead;
pub mod chain;
pub mod circuit_breaker;
mod classify;
pub mod clock;
pub mod cluster;
pub(crate) mod config_kit;
pub mod deadline;
pub mod decorators;
pub mod error;
pub mod event;
pub mod fault;
pub mod future;
pub mod hedge;
pub mod interval;
pub mod live;
pub mod rate_limiter;
pub mod redact;
pub mod registry;
mod rejection;
#[cfg(feature = "axum")]
mod response;
pub mod retry;
mod sync;
pub mod thread_pool_bulkhead;
pub mod time_limiter;

pub use crate::classify::Classify;
pub use crate::decorators::Decorators;
pub use crate::error::{ConfigError, Error, Rejection};
/// The name of an instance: shared, cheap to clone.
pub type Name = std::sync::Arc<str>;

/// Tags of an instance: registry tags overlaid by its own.
pub type Tags = std::collections::BTreeMap<String, String>;
