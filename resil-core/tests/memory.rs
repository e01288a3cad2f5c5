//! What an instance weighs: the heap bytes a breaker with Resilience4j's
//! default 100-call window keeps, and that a reload adds, measured with the
//! counting allocator so that they cannot grow unnoticed.

mod support;

use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil_testkit::bytes_during;

#[global_allocator]
static A: support::CountingAlloc = support::CountingAlloc;

/// The goal is 1 KiB: a default breaker keeps 990 bytes on x86-64 (its
/// configuration, 208 bytes, is kept inline as the first of its versions,
/// its event publisher takes 168, each window sits in its own allocation so
/// that a reload can share it, and what most breakers never use, a fleet's
/// probe budget or a time window, is boxed). It kept 1270 before those two
/// were boxed.
#[test]
fn a_breaker_with_a_100_call_window_keeps_its_size() {
    let (cb, bytes) = bytes_during(|| CircuitBreaker::of_defaults("inventory-query"));
    println!("CircuitBreaker::of_defaults: {bytes} bytes");
    assert!(bytes <= 1024, "a default breaker keeps {bytes} bytes");
    // a change that keeps the window shares it: only the new version
    let config = CircuitBreakerConfig::builder()
        .failure_rate_threshold(30.0)
        .build()
        .unwrap();
    let ((), changed) = bytes_during(|| cb.change_config(config).unwrap());
    println!("first change: {changed} bytes");
    assert!(changed <= 1024, "a first change keeps {changed} bytes");
    let again = CircuitBreakerConfig::builder()
        .failure_rate_threshold(40.0)
        .build()
        .unwrap();
    let ((), next) = bytes_during(|| cb.change_config(again).unwrap());
    println!("second change: {next} bytes");
    assert!(next <= 512, "a later change keeps {next} bytes");
}
