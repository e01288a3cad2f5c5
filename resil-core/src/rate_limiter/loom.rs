//! loom models of the limiter's compare-and-swap and of its epoch's sequence lock.
//!
//! Run: `RUSTFLAGS="--cfg resil_loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p resil-core --lib --release loom`

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;

use super::state::{Core, Decision, Epoch};
use super::{RateLimiter, RateLimiterConfig};
use crate::clock::ManualClock;

fn config(limit: u32, timeout: Duration) -> RateLimiterConfig {
    RateLimiterConfig::builder()
        .limit_for_period(limit)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(timeout)
        .build()
        .unwrap()
}

/// Three callers race for two permits: exactly two win, and the count ends at 0.
#[test]
fn loom_no_over_admission() {
    loom::model(|| {
        let limiter = RateLimiter::with_clock("rl", config(2, Duration::ZERO), ManualClock::new());
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let l = limiter.clone();
                thread::spawn(move || l.try_acquire_permission(1))
            })
            .collect();
        let granted = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|ok| *ok)
            .count();
        assert_eq!(granted, 2);
        assert_eq!(limiter.metrics().available_permissions(), 0);
    });
}

/// Two reservations of 2 on a limit of 2: one is free now, the other waits
/// one cycle; whatever the interleaving, the debt is exactly 2.
#[test]
fn loom_reservations_are_counted_exactly() {
    loom::model(|| {
        let core = Arc::new(Core::new(&config(2, Duration::from_secs(5)), 0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let c = core.clone();
                thread::spawn(move || c.acquire(|| 0, 2, u64::MAX))
            })
            .collect();
        let mut waits: Vec<u64> = handles
            .into_iter()
            .map(|h| match h.join().unwrap() {
                Decision::Granted { wait } => wait,
                Decision::Refused => panic!("both fit in the timeout"),
            })
            .collect();
        waits.sort_unstable();
        assert_eq!(waits, [0, 1_000_000_000]);
        assert_eq!(core.refreshed(0).1.available, -2);
    });
}

/// Callers in two cycles race while the cycle hint moves: the fast path
/// (hint confirmed by the clock) and the general loop (division, hint
/// update) interleave. Cycle 0 grants its one permit at most once, cycle 1
/// always grants its own, and the count ends at 0.
#[test]
fn loom_cycle_hint_races() {
    loom::model(|| {
        let core = Arc::new(Core::new(&config(1, Duration::ZERO), 0));
        let in_cycle_0: Vec<_> = (0..2)
            .map(|_| {
                let c = core.clone();
                thread::spawn(move || matches!(c.acquire(|| 5, 1, 0), Decision::Granted { .. }))
            })
            .collect();
        let granted_1 = matches!(core.acquire(|| SECOND + 5, 1, 0), Decision::Granted { .. });
        let granted_0 = in_cycle_0
            .into_iter()
            .filter_map(|h| h.join().unwrap().then_some(()))
            .count();
        assert!(granted_1, "cycle 1 has its own permit");
        assert!(granted_0 <= 1, "cycle 0 granted {granted_0}");
        assert_eq!(core.refreshed(SECOND + 5).1.available, 0);
    });
}

/// A drain races an acquire: either the acquire went first (granted, then
/// drained from 1) or the drain did (refused after draining 2). Never both
/// granted and a count above 0.
#[test]
fn loom_drain_and_acquire() {
    loom::model(|| {
        let core = Arc::new(Core::new(&config(2, Duration::ZERO), 0));
        let c = core.clone();
        let acquirer = thread::spawn(move || c.acquire(|| 0, 1, 0));
        let drained = core.drain(|| 0);
        let granted = matches!(acquirer.join().unwrap(), Decision::Granted { .. });
        match (granted, drained) {
            (true, 1) | (false, 2) => {}
            other => panic!("impossible outcome {other:?}"),
        }
        assert_eq!(core.refreshed(0).1.available, 0);
    });
}

/// A limit change publishes its epoch while a caller reads it: every read is
/// one whole epoch (never the new limit with the old base), and the cycle the
/// change happens in keeps its refill of 3 whichever epoch the caller used.
#[test]
fn loom_limit_change_is_read_whole() {
    // A reader that finds the sequence lock taken retries; each retry is a
    // branch for loom, so the model needs more than the default budget.
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 100_000;
    builder.check(|| {
        let core = Arc::new(Core::new(&config(3, Duration::ZERO), 0));
        let c = core.clone();
        let reader = thread::spawn(move || {
            let e = c.epoch();
            let old = Epoch {
                limit: 3,
                cycle: 0,
                base: 3,
            };
            let new = Epoch {
                limit: 1,
                cycle: 1,
                base: 6,
            };
            assert!(e == old || e == new, "torn epoch {e:?}");
            c.acquire(|| SECOND, 2, 0)
        });
        core.set_limit(|| SECOND, 1);
        assert_eq!(reader.join().unwrap(), Decision::Granted { wait: 0 });
        assert_eq!(core.refreshed(SECOND).1.available, 1);
        // From cycle 2 on, the new limit.
        assert_eq!(core.refreshed(2 * SECOND).1.available, 1);
    });
}

const SECOND: u64 = 1_000_000_000;
