//! The circuit breaker under contention from several threads: failures open
//! it exactly once, and HALF_OPEN never admits more probes than permitted.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerEvent as Ev, State};
use resil_core::clock::ManualClock;
use support::Recorder;
use support::circuit_breaker::{SEC, count};

#[test]
fn concurrent_failures_open_exactly_once() {
    for _ in 0..20 {
        let cb = CircuitBreaker::new("a", count(8, 8).build().unwrap());
        let rec = Recorder::attach(cb.event_publisher());
        let threads = 4;
        let barrier = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (cb, barrier) = (cb.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    for _ in 0..50 {
                        let _ = cb.call(|| Err::<(), _>("boom"));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let transitions = rec
            .take()
            .into_iter()
            .filter(|e| matches!(e, Ev::StateTransition { .. }))
            .count();
        assert_eq!(transitions, 1);
        assert_eq!(cb.state(), State::Open);
    }
}

#[test]
fn half_open_never_admits_more_probes_than_permitted_under_contention() {
    let clock = ManualClock::new();
    let config = count(100, 100)
        .permitted_number_of_calls_in_half_open_state(5)
        .build()
        .unwrap();
    let cb = CircuitBreaker::with_clock("a", config, clock.clone());
    cb.transition_to_open_state().unwrap();
    clock.advance(61 * SEC);
    let admitted = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let threads = 4;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (cb, barrier) = (cb.clone(), barrier.clone());
            let (admitted, refused) = (admitted.clone(), refused.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut held = Vec::new();
                for _ in 0..10 {
                    match cb.start_call() {
                        Ok(g) => {
                            admitted.fetch_add(1, Ordering::SeqCst);
                            held.push(g);
                        }
                        Err(_) => {
                            refused.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
                barrier.wait();
                for g in held {
                    g.on_success();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(admitted.load(Ordering::SeqCst), 5);
    assert_eq!(refused.load(Ordering::SeqCst), 35);
    assert_eq!(cb.state(), State::Closed);
}
