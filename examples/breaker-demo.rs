//! A circuit breaker opens, refuses, probes and recovers, in real time.
//!
//! ```text
//! cargo run --example breaker-demo
//! ```
//!
//! A flaky "inventory" dependency fails for a while; the breaker opens after
//! five calls at 60 % failures, refuses calls for one second without touching
//! the dependency, lets three probes through once the wait is over, and closes
//! again when they succeed. Every event is printed as it happens.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent};
use resil::{Error, event::Event};

#[derive(Debug)]
struct Unavailable;

/// The dependency: fails while `down` is set, and counts the calls it receives.
struct Inventory {
    down: AtomicBool,
    calls: AtomicU32,
}

impl Inventory {
    fn stock(&self, sku: &str) -> Result<u32, Unavailable> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.down.load(Ordering::Relaxed) {
            Err(Unavailable)
        } else {
            Ok(sku.len() as u32 * 7)
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(5)
        .minimum_number_of_calls(5)
        .failure_rate_threshold(60.0)
        .wait_duration_in_open_state(Duration::from_secs(1))
        .permitted_number_of_calls_in_half_open_state(3)
        .build()?;
    let breaker = CircuitBreaker::new("inventory-query", config);
    breaker
        .event_publisher()
        .on_event(|e: &Event<CircuitBreakerEvent>| match e.kind() {
            CircuitBreakerEvent::Success { .. } | CircuitBreakerEvent::Error { .. } => {}
            other => println!("    event: {other:?}"),
        });

    let inventory = Arc::new(Inventory {
        down: AtomicBool::new(true),
        calls: AtomicU32::new(0),
    });

    let ask = |label: &str| {
        let before = inventory.calls.load(Ordering::Relaxed);
        let answer = match breaker.call(|| inventory.stock("SKU-1")) {
            Ok(n) => format!("{n} in stock"),
            Err(Error::Inner(Unavailable)) => "inventory unavailable (recorded failure)".to_owned(),
            Err(Error::CallNotPermitted(e)) => format!("refused: {e}"),
            Err(other) => format!("{other:?}"),
        };
        let reached = inventory.calls.load(Ordering::Relaxed) > before;
        println!(
            "{label:<10} state={:<9} reached dependency={reached:<5} -> {answer}",
            breaker.state().as_str()
        );
    };

    println!("1. the dependency is down: the breaker opens after 5 calls at 60 % failures");
    for i in 1..=5 {
        ask(&format!("call {i}"));
    }
    println!("\n2. OPEN: calls are refused without reaching the dependency");
    for i in 6..=8 {
        ask(&format!("call {i}"));
    }
    let m = breaker.metrics();
    println!(
        "   metrics: failure rate {}%, buffered {}, not permitted {}",
        m.failure_rate(),
        m.number_of_buffered_calls(),
        m.number_of_not_permitted_calls()
    );

    println!("\n3. the dependency recovers; after the 1 s wait, 3 probes decide");
    inventory.down.store(false, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(1100));
    for i in 9..=11 {
        ask(&format!("probe {}", i - 8));
    }
    println!("\n4. CLOSED again: calls flow");
    ask("call 12");
    println!(
        "\nthe dependency received {} calls out of 12 asked",
        inventory.calls.load(Ordering::Relaxed)
    );
    Ok(())
}
