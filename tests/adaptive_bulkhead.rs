//! The adaptive limits find the capacity of a downstream they know nothing
//! of: a simulated downstream on a virtual clock (`examples/adaptive`)
//! serves `C` calls at once at 10 ms each and slows past `C` in flight;
//! callers arrive at random at twice the largest `C` of the run. Each
//! algorithm starts at half of `C`, with its published defaults and
//! sampling windows of 100 ms, and runs 10 s (100 windows) at each of `C`,
//! `C`/2, `C` again and 2·`C`. Over the second half of each phase its
//! limit averages within [0.8 C, 1.5 C] of that phase's `C`: it settles,
//! falls when `C` halves, and rises when `C` doubles.
//!
//! Gradient2 is shown from below the capacity: it takes the latency it
//! first sees for the downstream's normal one, so a limit that starts in
//! congestion stays there (see the bulkhead's documentation).

#[path = "../examples/adaptive/downstream.rs"]
#[allow(dead_code, unreachable_pub)]
mod downstream;

use std::time::Duration;

use downstream::{Downstream, Load};
use resil::bulkhead::{Bulkhead, BulkheadConfig, BulkheadConfigBuilder, LimitAlgorithm};
use resil::clock::ManualClock;

const BASE: Duration = Duration::from_millis(10);
const C: u32 = 40;
const PHASE: Duration = Duration::from_secs(10);
const EVERY: Duration = Duration::from_millis(10);

/// The limit's mean over the second half of each phase, the calls
/// admitted, and the whole trace.
fn run(algorithm: LimitAlgorithm, tune: impl FnOnce(BulkheadConfigBuilder) -> BulkheadConfigBuilder) -> (Vec<(u32, f64)>, u64, Vec<u32>) {
    let config = tune(
        BulkheadConfig::builder()
            .limit_algorithm(algorithm)
            .max_concurrent_calls(10 * C)
            .initial_concurrent_calls(C / 2)
            .min_window_time(Duration::from_millis(100))
            .max_window_time(Duration::from_millis(100)),
    )
    .build()
    .unwrap();
    let clock = ManualClock::new();
    let bulkhead = Bulkhead::with_clock("downstream", config, clock.clone());
    // twice the largest capacity, in calls a second
    let rate = 2.0 * f64::from(2 * C) / BASE.as_secs_f64();
    let mut load = Load::new(&bulkhead, clock, rate, 42);
    let mut means = Vec::new();
    let mut trace = Vec::new();
    for capacity in [C, C / 2, C, 2 * C] {
        let downstream = Downstream {
            capacity,
            base: BASE,
        };
        let mut settled = Vec::new();
        let mut at = 0;
        load.run(&downstream, PHASE, EVERY, |_, limit| {
            at += 1;
            trace.push(limit);
            if at > PHASE.as_millis() / EVERY.as_millis() / 2 {
                settled.push(f64::from(limit));
            }
        });
        means.push((capacity, settled.iter().sum::<f64>() / settled.len() as f64));
    }
    (means, load.admitted, trace)
}

fn assert_converges(algorithm: LimitAlgorithm, means: &[(u32, f64)], admitted: u64) {
    println!("{algorithm}: {means:?} ({admitted} calls admitted)");
    assert!(admitted > 50_000, "{algorithm}: {admitted} calls");
    for &(capacity, mean) in means {
        let c = f64::from(capacity);
        assert!(
            (0.8 * c..=1.5 * c).contains(&mean),
            "{algorithm}: the limit averaged {mean:.1} against a capacity of {capacity}: {means:?}"
        );
    }
    let [a, b, c, d] = [means[0].1, means[1].1, means[2].1, means[3].1];
    assert!(b < a, "{algorithm}: the limit did not fall when C halved: {means:?}");
    assert!(c > b && d > c, "{algorithm}: the limit did not rise when C doubled: {means:?}");
}

#[test]
fn aimd_settles_falls_and_rises() {
    // A window slower than 1.5 × the normal latency is a drop.
    let (means, admitted, _) = run(LimitAlgorithm::Aimd, |b| {
        b.drop_timeout(BASE.mul_f64(1.5))
    });
    assert_converges(LimitAlgorithm::Aimd, &means, admitted);
}

#[test]
fn gradient2_settles_falls_and_rises() {
    let (means, admitted, _) = run(LimitAlgorithm::Gradient2, |b| b);
    assert_converges(LimitAlgorithm::Gradient2, &means, admitted);
}

#[test]
fn vegas_settles_falls_and_rises() {
    let (means, admitted, _) = run(LimitAlgorithm::Vegas, |b| b);
    assert_converges(LimitAlgorithm::Vegas, &means, admitted);
}

#[test]
fn a_fixed_limit_stays_where_it_is_set() {
    let (means, _, trace) = run(LimitAlgorithm::Fixed, |b| b.max_concurrent_calls(C));
    assert!(trace.iter().all(|&l| l == C), "{means:?}");
}

#[test]
fn the_simulation_replays_exactly() {
    let tune = |b: BulkheadConfigBuilder| b;
    let (_, admitted, first) = run(LimitAlgorithm::Vegas, tune);
    let (_, again, second) = run(LimitAlgorithm::Vegas, tune);
    assert_eq!((admitted, &first), (again, &second));
}
