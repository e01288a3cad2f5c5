//! loom models of the breaker's gates: every interleaving of two or three
//! threads (`RUSTFLAGS="--cfg resil_loom" cargo test -p resil-core --lib --release loom`).

use std::time::Duration;

use super::{CircuitBreaker, CircuitBreakerConfig, State};
use crate::clock::ManualClock;

fn breaker(window: u32, permitted: u32) -> (CircuitBreaker, ManualClock) {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(window)
        .minimum_number_of_calls(window)
        .permitted_number_of_calls_in_half_open_state(permitted)
        .build()
        .unwrap();
    (
        CircuitBreaker::with_clock("loom", config, clock.clone()),
        clock,
    )
}

/// Two concurrent failures that both see the threshold crossed open the
/// breaker exactly once: one generation step, attempts 1.
#[test]
fn concurrent_failures_open_exactly_once() {
    loom::model(|| {
        let (cb, _) = breaker(2, 1);
        cb.on_error(Duration::ZERO); // both next failures see 2 of 2 failed
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let cb = cb.clone();
                loom::thread::spawn(move || cb.on_error(Duration::ZERO))
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(cb.state(), State::Open);
        assert_eq!(cb.generation(), 1, "one transition");
    });
}

/// HALF_OPEN with two probes and three callers (one gives its probe back):
/// never more than two probes out at once, and none lost.
#[test]
fn half_open_never_admits_more_than_permitted() {
    loom::model(|| {
        let (cb, clock) = breaker(10, 2);
        cb.transition_to_open_state().unwrap();
        clock.advance(Duration::from_secs(61));
        assert!(cb.try_acquire_permission()); // moves OPEN -> HALF_OPEN
        cb.release_permission();
        let in_flight = std::sync::Arc::new(loom::sync::atomic::AtomicU32::new(0));
        let threads: Vec<_> = (0..3)
            .map(|i| {
                let (cb, in_flight) = (cb.clone(), in_flight.clone());
                loom::thread::spawn(move || {
                    if let Ok(guard) = cb.start_call() {
                        let now = in_flight.fetch_add(1, loom::sync::atomic::Ordering::SeqCst) + 1;
                        assert!(now <= 2, "{now} probes at once");
                        in_flight.fetch_sub(1, loom::sync::atomic::Ordering::SeqCst);
                        if i == 0 {
                            drop(guard); // not made: the permit goes back
                        } else {
                            std::mem::forget(guard); // still in flight at the end
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(cb.state(), State::HalfOpen);
        // Two threads kept probes (if admitted); thread 0 returned its own.
        assert!(cb.probes_left() <= 2);
    });
}

/// A probe released by a guard of an old generation never raises the budget of
/// a newer HALF_OPEN, whatever the interleaving with the transitions.
#[test]
fn a_stale_release_never_inflates_a_newer_budget() {
    loom::model(|| {
        let (cb, clock) = breaker(10, 1);
        cb.transition_to_open_state().unwrap();
        clock.advance(Duration::from_secs(61));
        let guard_cb = cb.clone();
        let t = loom::thread::spawn(move || {
            if let Ok(g) = guard_cb.start_call() {
                drop(g);
            }
        });
        cb.transition_to_open_state().unwrap();
        cb.transition_to_half_open_state().unwrap();
        let mine = cb.start_call();
        t.join().unwrap();
        if mine.is_ok() {
            assert_eq!(cb.probes_left(), 0, "a stale guard refilled the new budget");
        }
        drop(mine);
    });
}

/// The packed count window: two recorders and a reader. Every snapshot the
/// reader sees is a state the window really passed through, and the final
/// totals account for every call exactly once.
#[test]
fn packed_window_records_exactly_and_reads_consistently() {
    use super::window::{Counts, Outcome, PackedCountWindow};
    loom::model(|| {
        let w = std::sync::Arc::new(PackedCountWindow::new(2));
        w.record(Outcome::Error);
        let recorders: Vec<_> = [Outcome::SlowError, Outcome::Success]
            .into_iter()
            .map(|o| {
                let w = w.clone();
                loom::thread::spawn(move || {
                    w.record(o);
                })
            })
            .collect();
        let seen = w.snapshot();
        let possible = [
            (1, 1, 0, 0), // nothing recorded yet
            (2, 2, 1, 1), // Error, SlowError
            (2, 1, 0, 0), // Error, Success
            (2, 1, 1, 1), // both: Error evicted
        ];
        let t = (seen.calls, seen.failed, seen.slow, seen.slow_failed);
        assert!(possible.contains(&t), "impossible snapshot {t:?}");
        for r in recorders {
            r.join().unwrap();
        }
        // The window holds the last two of three calls: Error is always gone.
        let end = w.snapshot();
        assert_eq!(end.calls, 2);
        assert_eq!(
            end,
            Counts {
                calls: 2,
                failed: 1,
                slow: 1,
                slow_failed: 1
            }
        );
    });
}

/// The healthy path: a success that finds the window full of successes
/// records nothing, beside a failure that another thread records. Whatever
/// the interleaving, the failure counts and opens the breaker (1 of 2 is
/// the 50 % threshold), and the window holds two calls.
#[test]
fn a_read_only_success_never_hides_a_concurrent_failure() {
    loom::model(|| {
        let (cb, _) = breaker(2, 1);
        cb.on_success(Duration::ZERO);
        cb.on_success(Duration::ZERO); // full of successes: the next success writes nothing
        let guard_cb = cb.clone();
        let success = loom::thread::spawn(move || {
            if let Ok(g) = guard_cb.start_call() {
                g.on_success();
            }
        });
        cb.on_error(Duration::ZERO);
        success.join().unwrap();
        assert_eq!(cb.state(), State::Open);
        let m = cb.metrics();
        assert_eq!(m.number_of_buffered_calls(), 2);
        assert_eq!(m.number_of_failed_calls(), 1);
    });
}

/// The packed window's read-only check against a concurrent record: a
/// success skipped because the window held only successes is ordered
/// before the failure, so the window ends with the failure and a success.
#[test]
fn skipping_a_success_is_a_record_that_changes_nothing() {
    use super::window::{Outcome, PackedCountWindow};
    loom::model(|| {
        let w = std::sync::Arc::new(PackedCountWindow::new(2));
        w.record(Outcome::Success);
        w.record(Outcome::Success);
        let skipper = {
            let w = w.clone();
            loom::thread::spawn(move || {
                if !w.holds_only_successes() {
                    w.record(Outcome::Success);
                }
            })
        };
        w.record(Outcome::Error);
        skipper.join().unwrap();
        let end = w.snapshot();
        assert_eq!((end.calls, end.failed), (2, 1));
        assert!(!w.holds_only_successes());
    });
}

/// A transition that arms a timer (OPEN, automatic) racing one that cancels
/// it (DISABLED): whatever the order, the timer left armed is the newer
/// state's. Scheduling happens outside the timer slot's lock, so the slower
/// transition must drop its own handle rather than replace the newer one.
#[test]
fn the_newer_transition_keeps_its_timer() {
    loom::model(|| {
        let clock = ManualClock::new();
        let config = CircuitBreakerConfig::builder()
            .automatic_transition_from_open_to_half_open_enabled(true)
            .wait_duration_in_open_state(Duration::from_secs(10))
            .build()
            .unwrap();
        let cb = CircuitBreaker::with_clock("loom", config, clock.clone());
        let opener = {
            let cb = cb.clone();
            loom::thread::spawn(move || {
                let _ = cb.transition_to_open_state();
            })
        };
        let _ = cb.transition_to_disabled_state();
        opener.join().unwrap();
        let last = cb.state();
        clock.advance(Duration::from_secs(11));
        match last {
            // OPEN last: its timer survived and half-opened the breaker.
            State::Open => assert_eq!(cb.state(), State::HalfOpen),
            // DISABLED last: OPEN's timer (if any) was cancelled.
            State::Disabled => assert_eq!(cb.state(), State::Disabled),
            other => panic!("unexpected {other:?}"),
        }
    });
}
