//! The breaker's healthy path: a success on a full count window of
//! successes is recorded with loads only, and calls on the system clock
//! are timed with a coarse reading where the threshold allows it. Neither
//! may change what the breaker decides: these tests hold every decision
//! against a model of the window (the last N calls, in order), across a
//! million successes, on several threads, and for calls near the slow-call
//! threshold.

mod support;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use resil_core::Error;
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
use resil_core::clock::{Clock, ManualClock, SharedClock, SystemClock};

#[global_allocator]
static ALLOC: support::CountingAlloc = support::CountingAlloc;

const WINDOW: usize = 100;

fn config(threshold: f32, slow: Duration) -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .sliding_window_size(WINDOW as u32)
        .minimum_number_of_calls(WINDOW as u32)
        .failure_rate_threshold(threshold)
        .slow_call_rate_threshold(threshold)
        .slow_call_duration_threshold(slow)
        .build()
        .unwrap()
}

/// Resilience4j's count window, written plainly: the last `WINDOW` calls
/// as (failed, slow), and whether a rate reached `threshold` percent.
struct Model {
    calls: VecDeque<(bool, bool)>,
    threshold: f32,
}

impl Model {
    fn new(threshold: f32) -> Self {
        Model {
            calls: VecDeque::new(),
            threshold,
        }
    }

    /// Records a call; returns whether the breaker opens on it.
    fn record(&mut self, failed: bool, slow: bool) -> bool {
        if self.calls.len() == WINDOW {
            self.calls.pop_front();
        }
        self.calls.push_back((failed, slow));
        if self.calls.len() < WINDOW {
            return false;
        }
        let n = self.calls.len() as f32;
        let failed = self.calls.iter().filter(|c| c.0).count() as f32;
        let slow = self.calls.iter().filter(|c| c.1).count() as f32;
        failed * 100.0 / n >= self.threshold || slow * 100.0 / n >= self.threshold
    }
}

/// One call of the given kind, on `clock` (a slow one takes `slow` and a
/// millisecond more of it).
fn call(cb: &CircuitBreaker, clock: &ManualClock, failed: bool, slow: Option<Duration>) {
    let _ = cb.call(|| {
        if let Some(d) = slow {
            clock.advance(d + Duration::from_millis(1));
        }
        if failed { Err("boom") } else { Ok(()) }
    });
}

/// A million successes, then failures and slow calls at random among more
/// successes: after every call the breaker is OPEN exactly when the model
/// of the window says so. Then it closes (an empty window) and the same
/// again, from a few thousand successes, with other random draws.
#[test]
fn a_failure_among_a_million_successes_opens_exactly_when_the_window_says() {
    let slow = Duration::from_secs(2);
    let threshold = 3.0;
    let clock = ManualClock::new();
    let cb = CircuitBreaker::with_clock("healthy", config(threshold, slow), clock.clone());
    let mut rng = fastrand::Rng::with_seed(7);
    let mut successes = 1_000_000;
    for round in 0..8 {
        for _ in 0..successes {
            call(&cb, &clock, false, None);
        }
        assert_eq!(cb.state(), State::Closed);
        assert_eq!(cb.metrics().number_of_buffered_calls(), WINDOW as u64);
        let mut model = Model::new(threshold);
        for _ in 0..WINDOW {
            model.record(false, false);
        }
        let mut calls = 0;
        loop {
            calls += 1;
            assert!(calls < 100_000, "round {round}: never opened");
            // mostly successes; now and then a failure or a slow call, so
            // rare that most leave the window before the third comes
            let (failed, is_slow) = match rng.u32(0..240) {
                0 => (true, false),
                1 => (false, true),
                2 => (true, true),
                _ => (false, false),
            };
            call(&cb, &clock, failed, is_slow.then_some(slow));
            let opens = model.record(failed, is_slow);
            let state = cb.state();
            assert_eq!(
                state == State::Open,
                opens,
                "round {round}, call {calls} after {successes} successes: the window says {opens}, the breaker is {state}"
            );
            if opens {
                let m = cb.metrics();
                let failed = model.calls.iter().filter(|c| c.0).count() as u64;
                let slow = model.calls.iter().filter(|c| c.1).count() as u64;
                assert_eq!(
                    (m.number_of_failed_calls(), m.number_of_slow_calls()),
                    (failed, slow)
                );
                break;
            }
        }
        cb.transition_to_closed_state().unwrap();
        successes = rng.usize(WINDOW..5 * WINDOW);
    }
}

/// Threads record successes on one breaker while another records a failure
/// now and then, each failure alone in the window (a threshold of 1 %): the
/// breaker is CLOSED until the failure and OPEN as soon as its record
/// returns, however the successes interleave with it.
#[test]
fn concurrent_successes_never_hide_a_failure() {
    for clock in [
        SharedClock::new(ManualClock::new()),
        SharedClock::new(SystemClock::new()),
    ] {
        for round in 0..20 {
            let cb = CircuitBreaker::with_clock(
                "healthy",
                config(1.0, Duration::from_secs(60)),
                clock.clone(),
            );
            for _ in 0..WINDOW {
                cb.call(|| Ok::<_, &str>(())).unwrap();
            }
            let threads = 3;
            let stop = Arc::new(AtomicBool::new(false));
            let start = Arc::new(Barrier::new(threads + 1));
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (cb, stop, start) = (cb.clone(), stop.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        let mut admitted = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            match cb.call(|| Ok::<_, &str>(())) {
                                Ok(()) => admitted += 1,
                                Err(Error::CallNotPermitted(_)) => break,
                                Err(e) => panic!("{e}"),
                            }
                        }
                        admitted
                    })
                })
                .collect();
            start.wait();
            for _ in 0..1000 {
                std::hint::spin_loop();
            }
            assert_eq!(cb.state(), State::Closed, "round {round}: opened early");
            let _ = cb.call(|| Err::<(), _>("boom"));
            assert_eq!(
                cb.state(),
                State::Open,
                "round {round}: the failure was missed"
            );
            stop.store(true, Ordering::Relaxed);
            let admitted: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
            let m = cb.metrics();
            assert_eq!(
                (m.number_of_buffered_calls(), m.number_of_failed_calls()),
                (WINDOW as u64, 1),
                "round {round}, {admitted} successes beside the failure"
            );
        }
    }
}

/// On the system clock with a threshold of a second, a call of a little
/// more than the threshold counts as slow, and one well under it does not,
/// whether the coarse reading times them or not.
#[test]
fn a_slow_call_on_the_system_clock_is_never_hidden() {
    let threshold = Duration::from_secs(1);
    let cb = CircuitBreaker::new(
        "healthy",
        CircuitBreakerConfig::builder()
            .sliding_window_size(10)
            .minimum_number_of_calls(10)
            .slow_call_duration_threshold(threshold)
            .build()
            .unwrap(),
    );
    for _ in 0..10 {
        cb.call(|| Ok::<_, &str>(())).unwrap();
    }
    let clock = SystemClock::new();
    let started = clock.now();
    cb.call(|| {
        // waits on the clock itself, so that the call lasts past the
        // threshold by the clock the breaker measures against
        while clock.now().saturating_duration_since(started) <= threshold + Duration::from_millis(2)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok::<_, &str>(())
    })
    .unwrap();
    assert_eq!(cb.metrics().number_of_slow_calls(), 1);
    cb.call(|| {
        std::thread::sleep(Duration::from_millis(30));
        Ok::<_, &str>(())
    })
    .unwrap();
    assert_eq!(cb.metrics().number_of_slow_calls(), 1);
}

/// With an events consumer, every call is timed with the clock itself: the
/// durations in the events are not rounded to the coarse reading's tick.
#[test]
fn events_carry_the_clocks_own_durations() {
    let cb = CircuitBreaker::of_defaults("healthy");
    for _ in 0..200 {
        cb.call(|| Ok::<_, &str>(())).unwrap(); // the coarse reading times these
    }
    cb.event_publisher().enable_buffer(10);
    let clock = SystemClock::new();
    for _ in 0..10 {
        cb.call(|| {
            let t = clock.now();
            while clock.now().saturating_duration_since(t) < Duration::from_micros(50) {}
            Ok::<_, &str>(())
        })
        .unwrap();
    }
    for e in cb.event_publisher().recent_events() {
        let resil_core::circuit_breaker::CircuitBreakerEvent::Success { elapsed } = e.kind() else {
            panic!("{e:?}");
        };
        assert!(
            *elapsed >= Duration::from_micros(50) && *elapsed < Duration::from_millis(50),
            "{elapsed:?}"
        );
    }
}

/// The healthy path allocates nothing on the system clock (the coarse
/// reading) either, once its ticker runs.
#[test]
fn the_coarse_healthy_path_allocates_nothing() {
    let cb = CircuitBreaker::of_defaults("healthy");
    for _ in 0..200 {
        cb.call(|| Ok::<_, &str>(())).unwrap(); // warm up: the window fills, the ticker starts
    }
    let (_, n) = support::allocations_during(|| {
        for _ in 0..10_000 {
            cb.call(|| Ok::<_, &str>(())).unwrap();
        }
    });
    assert_eq!(n, 0);
}
