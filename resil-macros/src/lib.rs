//! The attribute macros of [resil](https://docs.rs/resil); use them through
//! the `resil` crate (`#[resil::circuit_breaker(...)]`), which re-exports them
//! with the runtime they expand into.
//!
//! The logic is a pipeline, as in serde_derive's `internals/`, on
//! `proc_macro2` so that it is unit-tested: `symbol.rs` and `ctxt.rs` (the
//! keys, the error collector) at the bottom, `attr.rs` (the attributes'
//! arguments as plain data) and `ast.rs` (the function or enum they are on)
//! above them, `validate.rs` (rules between them), and on top `expand.rs`
//! and `classify.rs` (the generated code). This file holds the shims and the
//! documentation.
#![doc(test(attr(deny(warnings))))]

mod ast;
mod attr;
mod classify;
mod ctxt;
mod expand;
mod fallback;
mod layers;
mod symbol;
mod validate;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

use crate::attr::Aspect;

#[doc = include_str!("../docs/circuit_breaker.md")]
#[proc_macro_attribute]
pub fn circuit_breaker(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::aspect(Aspect::CircuitBreaker, args.into(), item.into()).into()
}

#[doc = include_str!("../docs/deadline.md")]
#[proc_macro_attribute]
pub fn deadline(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::aspect(Aspect::Deadline, args.into(), item.into()).into()
}

#[doc = include_str!("../docs/retry.md")]
#[proc_macro_attribute]
pub fn retry(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::aspect(Aspect::Retry, args.into(), item.into()).into()
}

#[doc = include_str!("../docs/hedge.md")]
#[proc_macro_attribute]
pub fn hedge(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::aspect(Aspect::Hedge, args.into(), item.into()).into()
}

#[doc = include_str!("../docs/rate_limiter.md")]
#[proc_macro_attribute]
pub fn rate_limiter(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::aspect(Aspect::RateLimiter, args.into(), item.into()).into()
}

#[doc = include_str!("../docs/time_limiter.md")]
#[proc_macro_attribute]
pub fn time_limiter(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::aspect(Aspect::TimeLimiter, args.into(), item.into()).into()
}

#[doc = include_str!("../docs/bulkhead.md")]
#[proc_macro_attribute]
pub fn bulkhead(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::aspect(Aspect::Bulkhead, args.into(), item.into()).into()
}

#[doc = include_str!("../docs/thread_pool_bulkhead.md")]
#[proc_macro_attribute]
pub fn thread_pool_bulkhead(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::aspect(Aspect::ThreadPoolBulkhead, args.into(), item.into()).into()
}

#[doc = include_str!("../docs/classify.md")]
#[proc_macro_derive(Classify, attributes(classify))]
pub fn derive_classify(input: TokenStream) -> TokenStream {
    classify::derive(input.into()).into()
}
