//! resil: Resilience4j for Rust, declared with attributes.
#![doc(test(attr(deny(warnings))))]

pub use resil_core::*;
