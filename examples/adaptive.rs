//! Adaptive bulkhead limits finding a downstream's capacity, on a virtual
//! clock: a few seconds of wall time for a minute of traffic.
//!
//! ```sh
//! cargo run --example adaptive
//! ```
//!
//! A simulated downstream serves `capacity` calls at once at 10 ms each and
//! slows down past that (see `adaptive/downstream.rs`); callers arrive at
//! random at twice its largest capacity. Three bulkheads, one per adaptive
//! algorithm, each start at 10 with Netflix's default settings (and
//! sampling windows of 100 ms), and know nothing of the capacity: each
//! second the table prints their limits next to it, while the capacity
//! halves, comes back, and doubles. In resilience.toml the same bulkhead is
//!
//! ```toml
//! [bulkhead.instances.inventory-query]
//! limit-algorithm = "gradient2"
//! initial-concurrent-calls = 10
//! max-concurrent-calls = 200
//! ```

#[path = "adaptive/downstream.rs"]
mod downstream;

use std::time::Duration;

use downstream::{Downstream, Load};
use resil::bulkhead::{Bulkhead, BulkheadConfig, LimitAlgorithm};
use resil::clock::ManualClock;

const BASE: Duration = Duration::from_millis(10);
const PHASES: [(u32, &str); 4] = [
    (20, "capacity 20"),
    (10, "capacity halves"),
    (20, "capacity back to 20"),
    (40, "capacity doubles"),
];
const PHASE_SECONDS: u32 = 15;

fn main() {
    let algorithms = [
        LimitAlgorithm::Aimd,
        LimitAlgorithm::Gradient2,
        LimitAlgorithm::Vegas,
    ];
    let clocks: Vec<ManualClock> = algorithms.iter().map(|_| ManualClock::new()).collect();
    let bulkheads: Vec<Bulkhead> = algorithms
        .iter()
        .zip(&clocks)
        .map(|(&algorithm, clock)| {
            let config = BulkheadConfig::builder()
                .limit_algorithm(algorithm)
                .initial_concurrent_calls(10)
                .max_concurrent_calls(200)
                .min_window_time(Duration::from_millis(100))
                .max_window_time(Duration::from_millis(100))
                // AIMD learns from drops: a window 1.5 times slower than
                // normal counts as one.
                .drop_timeout(BASE.mul_f64(1.5))
                .build()
                .expect("a valid configuration");
            Bulkhead::with_clock(algorithm.as_str(), config, clock.clone())
        })
        .collect();
    let largest = PHASES.iter().map(|p| p.0).max().unwrap_or(1);
    let rate = 2.0 * f64::from(largest) / BASE.as_secs_f64();
    let mut loads: Vec<Load<'_>> = bulkheads
        .iter()
        .zip(&clocks)
        .map(|(b, clock)| Load::new(b, clock.clone(), rate, 42))
        .collect();

    println!(
        "Callers arrive at {rate:.0}/s; a call takes {} ms within the capacity and slows past it.",
        BASE.as_millis()
    );
    println!("Each limit starts at 10 and learns the capacity from latencies and drops.\n");
    println!("  time  capacity   aimd  gradient2  vegas");
    let mut second = 0;
    for (capacity, what) in PHASES {
        let downstream = Downstream {
            capacity,
            base: BASE,
        };
        for s in 0..PHASE_SECONDS {
            second += 1;
            let mut limits = Vec::new();
            for load in &mut loads {
                let mut last = 0;
                load.run(
                    &downstream,
                    Duration::from_secs(1),
                    Duration::from_secs(1),
                    |_, limit| last = limit,
                );
                limits.push(last);
            }
            let note = if s == 0 {
                format!("  <- {what}")
            } else {
                String::new()
            };
            println!(
                "{second:5}s {capacity:9} {:6} {:10} {:6}{note}",
                limits[0], limits[1], limits[2]
            );
        }
    }
    println!();
    for (algorithm, load) in algorithms.iter().zip(&loads) {
        println!(
            "{algorithm:>9}: {} calls admitted, {} refused",
            load.admitted, load.refused
        );
    }
}
