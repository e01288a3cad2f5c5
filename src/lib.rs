//! resil: Resilience4j for Rust, declared with attributes.
#![doc(test(attr(deny(warnings))))]

pub use resil_core::*;

pub use resil_macros::{
    Classify, bulkhead, circuit_breaker, rate_limiter, retry, thread_pool_bulkhead, time_limiter,
};

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
