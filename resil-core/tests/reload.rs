//! Every primitive changed in place (`change_config`, what a reload applies):
//! identity and state kept, calls in flight under the settings they started
//! with, shadow mode (decide, never refuse, publish), the version bound, and
//! a reload racing calls never seen half-applied.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use resil_core::Error;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig, BulkheadEvent};
use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent, SlidingWindowType, State,
};
use resil_core::clock::{Clock, ManualClock, SystemClock, TokioClock};
use resil_core::live::MAX_VERSIONS;
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig, RateLimiterEvent};
use resil_core::registry::{CircuitBreakerRegistry, Primitive};
use resil_core::retry::{Retry, RetryConfig, RetryEvent};
use resil_core::thread_pool_bulkhead::{
    ThreadPoolBulkhead, ThreadPoolBulkheadConfig, ThreadPoolBulkheadEvent,
};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig, TimeLimiterEvent};
use support::Recorder;

fn breaker(size: u32, threshold: f32) -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .sliding_window_size(size)
        .minimum_number_of_calls(size)
        .failure_rate_threshold(threshold)
        .build()
        .unwrap()
}

fn fail(cb: &CircuitBreaker) {
    let _ = cb.call(|| Err::<(), _>("down"));
}

fn succeed(cb: &CircuitBreaker) {
    let _ = cb.call(|| Ok::<_, &str>(()));
}

// ---------------------------------------------------------------- breaker

#[test]
fn a_new_threshold_keeps_the_window_and_its_calls() {
    let cb = CircuitBreaker::with_clock("cb", breaker(4, 50.0), ManualClock::new());
    fail(&cb);
    succeed(&cb);
    cb.change_config(breaker(4, 80.0)).unwrap();
    assert_eq!(cb.metrics().number_of_buffered_calls(), 2);
    succeed(&cb);
    fail(&cb); // 2 of 4 failed: 50 %, below the new 80 %
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(cb.metrics().number_of_buffered_calls(), 4);
}

#[test]
fn a_new_window_size_starts_empty_and_keeps_the_state() {
    let cb = CircuitBreaker::with_clock("cb", breaker(4, 50.0), ManualClock::new());
    fail(&cb);
    fail(&cb);
    cb.change_config(breaker(2, 50.0)).unwrap();
    assert_eq!(cb.metrics().number_of_buffered_calls(), 0);
    assert_eq!(cb.state(), State::Closed);
    fail(&cb);
    assert_eq!(
        cb.state(),
        State::Closed,
        "one call of the new window of two"
    );
    fail(&cb);
    assert_eq!(cb.state(), State::Open);
    // OPEN is kept across a change too
    cb.change_config(breaker(10, 50.0)).unwrap();
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn a_new_window_type_starts_empty() {
    let cb = CircuitBreaker::with_clock("cb", breaker(4, 50.0), ManualClock::new());
    fail(&cb);
    let timed = breaker(4, 50.0)
        .to_builder()
        .sliding_window_type(SlidingWindowType::TimeBased)
        .build()
        .unwrap();
    cb.change_config(timed).unwrap();
    assert_eq!(cb.metrics().number_of_buffered_calls(), 0);
    assert_eq!(
        cb.config().sliding_window_type(),
        SlidingWindowType::TimeBased
    );
}

#[test]
fn going_back_to_an_earlier_configuration_does_not_bring_back_its_old_calls() {
    let cb = CircuitBreaker::with_clock("cb", breaker(4, 50.0), ManualClock::new());
    fail(&cb);
    fail(&cb);
    fail(&cb);
    cb.change_config(breaker(2, 50.0)).unwrap();
    succeed(&cb);
    cb.change_config(breaker(4, 50.0)).unwrap(); // the first version again
    assert_eq!(
        cb.metrics().number_of_buffered_calls(),
        0,
        "a changed window starts empty, also when it is an earlier one"
    );
    fail(&cb);
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn a_call_in_flight_finishes_under_the_settings_it_started_with() {
    let clock = ManualClock::new();
    let slow = |d: u64| {
        CircuitBreakerConfig::builder()
            .sliding_window_size(10)
            .slow_call_duration_threshold(Duration::from_secs(d))
            .build()
            .unwrap()
    };
    let cb = CircuitBreaker::with_clock("cb", slow(10), clock.clone());
    let guard = cb.start_call().unwrap();
    cb.change_config(slow(1)).unwrap();
    clock.advance(Duration::from_secs(5));
    guard.on_success();
    assert_eq!(
        cb.metrics().number_of_slow_calls(),
        0,
        "5 s is not slow under the 10 s it started with"
    );
    let guard = cb.start_call().unwrap();
    clock.advance(Duration::from_secs(5));
    guard.on_success();
    assert_eq!(
        cb.metrics().number_of_slow_calls(),
        1,
        "slow under the new 1 s"
    );
}

#[test]
fn initial_state_starts_the_breaker_there_without_a_transition() {
    let config = breaker(2, 50.0)
        .to_builder()
        .initial_state(State::MetricsOnly)
        .build()
        .unwrap();
    let cb = CircuitBreaker::with_clock("cb", config, ManualClock::new());
    let events = Recorder::attach(cb.event_publisher());
    assert_eq!(cb.state(), State::MetricsOnly);
    fail(&cb);
    fail(&cb);
    assert_eq!(cb.state(), State::MetricsOnly, "METRICS_ONLY never opens");
    let kinds = events.take();
    assert!(
        kinds
            .iter()
            .any(|e| matches!(e, CircuitBreakerEvent::FailureRateExceeded { .. })),
        "the would-be opening is published: {kinds:?}"
    );
    assert!(
        !kinds
            .iter()
            .any(|e| matches!(e, CircuitBreakerEvent::StateTransition { .. }))
    );
    for state in [State::Disabled, State::ForcedOpen, State::Closed] {
        let c = breaker(2, 50.0)
            .to_builder()
            .initial_state(state)
            .build()
            .unwrap();
        assert_eq!(CircuitBreaker::new("x", c).state(), state);
    }
    for state in [State::Open, State::HalfOpen] {
        let err = breaker(2, 50.0)
            .to_builder()
            .initial_state(state)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("initial_state"), "{err}");
    }
}

#[test]
fn switching_initial_state_moves_the_breaker_and_keeps_the_window() {
    let cb = CircuitBreaker::with_clock("cb", breaker(4, 50.0), ManualClock::new());
    let events = Recorder::attach(cb.event_publisher());
    fail(&cb);
    let shadow = breaker(4, 50.0)
        .to_builder()
        .initial_state(State::MetricsOnly)
        .build()
        .unwrap();
    cb.change_config(shadow).unwrap();
    assert_eq!(cb.state(), State::MetricsOnly);
    assert_eq!(cb.metrics().number_of_buffered_calls(), 1, "window kept");
    fail(&cb);
    cb.change_config(breaker(4, 50.0)).unwrap();
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(cb.metrics().number_of_buffered_calls(), 2, "window kept");
    let transitions: Vec<_> = events
        .take()
        .into_iter()
        .filter_map(|e| match e {
            CircuitBreakerEvent::StateTransition { from, to } => Some((from, to)),
            _ => None,
        })
        .collect();
    assert_eq!(
        transitions,
        [
            (State::Closed, State::MetricsOnly),
            (State::MetricsOnly, State::Closed)
        ]
    );
}

#[test]
fn past_the_bound_a_change_is_refused_and_the_breaker_unchanged() {
    let cb = CircuitBreaker::of_defaults("cb");
    for i in 1..MAX_VERSIONS {
        cb.change_config(breaker(10, i as f32)).unwrap();
    }
    let refused = cb.change_config(breaker(10, 99.0)).unwrap_err();
    assert!(refused.to_string().contains("restart"), "{refused}");
    assert!(cb.can_change_config(&breaker(10, 99.0)).is_err());
    assert_eq!(
        cb.config().failure_rate_threshold(),
        (MAX_VERSIONS - 1) as f32
    );
    // an earlier configuration is still reachable
    cb.change_config(breaker(10, 3.0)).unwrap();
    assert_eq!(cb.config().failure_rate_threshold(), 3.0);
}

#[test]
fn through_the_registry_every_handle_sees_the_change() {
    let registry = CircuitBreakerRegistry::of_defaults();
    let a = registry.circuit_breaker("inventory-query");
    let clone = (*a).clone();
    Primitive::change_config(&*a, breaker(7, 30.0)).unwrap();
    let b = registry.circuit_breaker("inventory-query");
    assert!(Arc::ptr_eq(&a, &b), "the same instance");
    for cb in [&*a, &*b, &clone] {
        assert_eq!(cb.config().sliding_window_size(), 7);
        assert_eq!(cb.config().failure_rate_threshold(), 30.0);
    }
}

#[test]
fn a_new_buffer_size_keeps_the_newest_events() {
    let registry = CircuitBreakerRegistry::of_defaults();
    let cb = registry.circuit_breaker("cb");
    for _ in 0..5 {
        succeed(&cb);
    }
    let small = CircuitBreakerConfig::builder()
        .event_consumer_buffer_size(3)
        .build()
        .unwrap();
    Primitive::change_config(&*cb, small).unwrap();
    assert_eq!(cb.event_publisher().recent_events().len(), 3);
}

/// A reload racing calls: each call sees one whole configuration, never a
/// threshold of one and a window of the other, and every call is counted.
#[test]
fn a_reload_racing_calls_is_never_seen_half_applied() {
    let a = breaker(10, 50.0);
    let b = breaker(4, 90.0);
    let cb = CircuitBreaker::of_defaults("cb");
    cb.change_config(a.clone()).unwrap();
    let calls = AtomicU64::new(0);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..3 {
            let (cb, calls, stop) = (&cb, &calls, &stop);
            s.spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let c = cb.config();
                    let seen = (c.sliding_window_size(), c.failure_rate_threshold());
                    assert!(
                        seen == (10, 50.0) || seen == (4, 90.0),
                        "half a change: {seen:?}"
                    );
                    let m = cb.metrics();
                    assert!(m.number_of_buffered_calls() <= 10);
                    let _ = cb.call(|| {
                        if (i + t).is_multiple_of(3) {
                            Err("x")
                        } else {
                            Ok(())
                        }
                    });
                    calls.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            });
        }
        for round in 0..2_000 {
            let next = if round % 2 == 0 { &b } else { &a };
            cb.change_config(next.clone()).unwrap();
            if round % 100 == 0 {
                let _ = cb.transition_to_closed_state();
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    let m = cb.metrics();
    assert!(m.number_of_buffered_calls() <= 10);
    assert!(calls.load(Ordering::Relaxed) > 0);
}

// ------------------------------------------------------------ rate limiter

fn limiter(limit: u32) -> RateLimiterConfig {
    RateLimiterConfig::builder()
        .limit_for_period(limit)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .build()
        .unwrap()
}

#[test]
fn a_new_period_is_refused_and_nothing_changes() {
    let limiter_ = RateLimiter::with_clock("rl", limiter(5), ManualClock::new());
    let other = limiter(3)
        .to_builder()
        .limit_refresh_period(Duration::from_millis(10))
        .build()
        .unwrap();
    let refused = limiter_.change_config(other).unwrap_err();
    assert_eq!(refused.setting(), Some("limit_refresh_period"));
    assert!(refused.to_string().contains("restart"), "{refused}");
    assert_eq!(limiter_.config().limit_for_period(), 5);
}

#[test]
fn a_new_limit_applies_from_the_next_cycle_in_one_piece() {
    let clock = ManualClock::new();
    let rl = RateLimiter::with_clock("rl", limiter(5), clock.clone());
    // Per cycle, four threads race a reload: the cycle grants the whole
    // limit it started with, old or new, never a mix.
    for cycle in 0..100u32 {
        let granted = AtomicU64::new(0);
        let before = rl.config().limit_for_period();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10 {
                        if rl.try_acquire_permission(1) {
                            granted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
            s.spawn(|| {
                let next = if cycle % 2 == 0 { 8 } else { 5 };
                rl.change_config(limiter(next)).unwrap();
            });
        });
        assert_eq!(granted.load(Ordering::Relaxed), u64::from(before));
        clock.advance(Duration::from_secs(1));
    }
}

#[test]
fn a_shadow_limiter_lets_everything_through_and_publishes_each_refusal() {
    let clock = ManualClock::new();
    let config = limiter(2).to_builder().shadow(true).build().unwrap();
    let rl = RateLimiter::with_clock("rl", config, clock.clone());
    let events = Recorder::attach(rl.event_publisher());
    for _ in 0..5 {
        assert!(rl.try_acquire_permission(1));
        rl.acquire_permission_blocking(1).unwrap();
    }
    let shadowed = events
        .take()
        .iter()
        .filter(|e| matches!(e, RateLimiterEvent::ShadowRefusal { permits: 1 }))
        .count();
    assert_eq!(shadowed, 8, "10 calls, 2 permits");
    // shadow off: the same limiter refuses, its cycle kept
    rl.change_config(limiter(2)).unwrap();
    assert!(!rl.try_acquire_permission(1));
    clock.advance(Duration::from_secs(1));
    assert!(rl.try_acquire_permission(2));
}

// ---------------------------------------------------------------- bulkhead

#[test]
fn a_shadow_bulkhead_lets_calls_past_the_limit_and_keeps_its_count_right() {
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(1)
        .shadow(true)
        .build()
        .unwrap();
    let bulkhead = Bulkhead::new("bh", config);
    let events = Recorder::attach(bulkhead.event_publisher());
    let a = bulkhead.try_acquire_permission().unwrap();
    let b = bulkhead
        .try_acquire_permission()
        .expect("shadow never refuses");
    let c = bulkhead.acquire_permission_blocking().unwrap();
    assert_eq!(
        events
            .take()
            .iter()
            .filter(|e| matches!(e, BulkheadEvent::ShadowRefusal))
            .count(),
        2
    );
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 0);
    drop((a, b, c));
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
    // shadow off with a call in flight: the limit holds again
    let held = bulkhead.try_acquire_permission().unwrap();
    bulkhead.change_config(
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .build()
            .unwrap(),
    );
    assert!(bulkhead.try_acquire_permission().is_err());
    drop(held);
    assert!(bulkhead.try_acquire_permission().is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_shadow_bulkhead_lets_async_calls_through_after_the_wait() {
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(1)
        .max_wait_duration(Duration::from_millis(50))
        .shadow(true)
        .build()
        .unwrap();
    let bulkhead = Bulkhead::with_clock("bh", config, TokioClock::new());
    let held = bulkhead.acquire_permission().await.unwrap();
    let start = bulkhead.clock().now();
    let out = bulkhead
        .call_async(|| async { Ok::<_, Error<()>>(7) })
        .await;
    assert_eq!(out.unwrap(), 7);
    assert_eq!(
        bulkhead.clock().now().saturating_duration_since(start),
        Duration::from_millis(50),
        "waited as usual first"
    );
    drop(held);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
}

// ----------------------------------------------------- thread-pool bulkhead

fn pool(core: u32, max: u32, queue: u32) -> ThreadPoolBulkheadConfig {
    ThreadPoolBulkheadConfig::builder()
        .core_thread_pool_size(core)
        .max_thread_pool_size(max)
        .queue_capacity(queue)
        .build()
        .unwrap()
}

#[test]
fn resizing_the_pool_keeps_every_queued_task() {
    let bulkhead = ThreadPoolBulkhead::new("tpb", pool(1, 1, 4));
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = Arc::new(std::sync::Mutex::new(gate));
    let blocked = {
        let gate = gate.clone();
        bulkhead.submit(move || gate.lock().unwrap().recv().unwrap())
    };
    while bulkhead.metrics().active_thread_count() == 0 {
        std::thread::yield_now();
    }
    let queued: Vec<_> = (0..4).map(|i| bulkhead.submit(move || i)).collect();
    assert_eq!(bulkhead.metrics().queue_depth(), 4);
    // a smaller queue keeps the four and refuses the fifth
    bulkhead.change_config(pool(1, 1, 1)).unwrap();
    assert_eq!(bulkhead.metrics().queue_depth(), 4);
    assert!(bulkhead.try_submit(|| 9).is_err());
    // a larger core starts threads for the queued tasks at once
    bulkhead.change_config(pool(3, 3, 1)).unwrap();
    let results: Vec<i32> = queued.into_iter().map(|s| s.wait().unwrap()).collect();
    assert_eq!(results, [0, 1, 2, 3]);
    release.send(()).unwrap();
    blocked.wait().unwrap();
    assert_eq!(bulkhead.metrics().maximum_thread_pool_size(), 3);
}

#[test]
fn a_lower_maximum_retires_threads_as_they_go_idle() {
    let clock = ManualClock::new();
    let bulkhead = ThreadPoolBulkhead::with_clock("tpb", pool(1, 3, 0), clock.clone());
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = Arc::new(std::sync::Mutex::new(gate));
    let running: Vec<_> = (0..3)
        .map(|_| {
            let gate = gate.clone();
            bulkhead.submit(move || gate.lock().unwrap().recv().unwrap())
        })
        .collect();
    assert_eq!(bulkhead.metrics().thread_pool_size(), 3);
    bulkhead.change_config(pool(1, 1, 0)).unwrap();
    for _ in 0..3 {
        release.send(()).unwrap();
    }
    for s in running {
        s.wait().unwrap();
    }
    let wall = SystemClock::new();
    let deadline = wall.now().as_duration() + Duration::from_secs(10);
    while bulkhead.metrics().thread_pool_size() > 1 {
        assert!(
            wall.now().as_duration() < deadline,
            "threads above the maximum stay"
        );
        std::thread::yield_now();
    }
    assert_eq!(bulkhead.metrics().thread_pool_size(), 1);
}

#[test]
fn a_shadow_pool_queues_past_its_capacity_and_publishes() {
    let config = pool(1, 1, 0).to_builder().shadow(true).build().unwrap();
    let bulkhead = ThreadPoolBulkhead::new("tpb", config);
    let events = Recorder::attach(bulkhead.event_publisher());
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let blocked = bulkhead.submit(move || gate.recv().unwrap());
    while bulkhead.metrics().active_thread_count() == 0 {
        std::thread::yield_now();
    }
    let extra = bulkhead.try_submit(|| 5).expect("shadow never refuses");
    release.send(()).unwrap();
    blocked.wait().unwrap();
    assert_eq!(extra.wait().unwrap(), 5);
    assert!(
        events
            .take()
            .iter()
            .any(|e| matches!(e, ThreadPoolBulkheadEvent::ShadowRefusal))
    );
}

// ------------------------------------------------------------- time limiter

fn timeout(ms: u64) -> TimeLimiterConfig {
    TimeLimiterConfig::builder()
        .timeout_duration(Duration::from_millis(ms))
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_new_timeout_applies_to_calls_that_start_after_it() {
    let tl = Arc::new(TimeLimiter::with_clock(
        "tl",
        timeout(100),
        TokioClock::new(),
    ));
    let sleeper = |ms| async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok::<_, Error<()>>(())
    };
    let in_flight = {
        let tl = tl.clone();
        tokio::spawn(async move { tl.call_async(|| sleeper(80)).await })
    };
    tokio::task::yield_now().await; // its timer is armed, at 100 ms
    tl.change_config(timeout(50)).unwrap();
    assert!(in_flight.await.unwrap().is_ok(), "80 ms under its 100 ms");
    assert!(matches!(
        tl.call_async(|| sleeper(80)).await,
        Err(Error::Timeout(t)) if t.timeout() == Duration::from_millis(50)
    ));
}

#[tokio::test(start_paused = true)]
async fn a_shadow_time_limiter_lets_a_slow_call_finish_and_publishes() {
    let config = timeout(10).to_builder().shadow(true).build().unwrap();
    let tl = TimeLimiter::with_clock("tl", config, TokioClock::new());
    let events = Recorder::attach(tl.event_publisher());
    let out = tl
        .call_async(|| async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            Ok::<_, Error<()>>(3)
        })
        .await;
    assert_eq!(out.unwrap(), 3);
    let kinds = events.take();
    assert_eq!(
        kinds,
        [
            TimeLimiterEvent::ShadowRefusal,
            TimeLimiterEvent::Success {
                elapsed: Duration::from_millis(30)
            }
        ]
    );
    assert_eq!(tl.metrics().number_of_timeout_calls(), 0);
}

// ------------------------------------------------------------------- retry

fn retry(attempts: u32, shadow: bool) -> RetryConfig {
    RetryConfig::builder()
        .max_attempts(attempts)
        .wait_duration(Duration::from_millis(100))
        .shadow(shadow)
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_call_already_retrying_keeps_its_attempts() {
    let r = Arc::new(Retry::with_clock("r", retry(3, false), TokioClock::new()));
    let attempts = Arc::new(AtomicU64::new(0));
    let call = {
        let (r, attempts) = (r.clone(), attempts.clone());
        tokio::spawn(async move {
            r.call_async(|| {
                attempts.fetch_add(1, Ordering::Relaxed);
                async { Err::<(), _>(Error::Inner("down")) }
            })
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await; // in its first wait
    r.change_config(retry(5, false)).unwrap();
    assert!(call.await.unwrap().is_err());
    assert_eq!(attempts.load(Ordering::Relaxed), 3, "the 3 it started with");
    attempts.store(0, Ordering::Relaxed);
    let _ = r
        .call_async(|| {
            attempts.fetch_add(1, Ordering::Relaxed);
            async { Err::<(), _>(Error::Inner("down")) }
        })
        .await;
    assert_eq!(attempts.load(Ordering::Relaxed), 5, "a new call, the new 5");
}

#[test]
fn a_shadow_retry_does_not_repeat_and_publishes_what_it_would_have_done() {
    let r = Retry::new("r", retry(3, true));
    let events = Recorder::attach(r.event_publisher());
    let mut attempts = 0;
    let out = r.call(|| {
        attempts += 1;
        Err::<(), _>("down")
    });
    assert!(matches!(out, Err(Error::Inner("down"))));
    assert_eq!(attempts, 1);
    assert!(matches!(
        events.take()[..],
        [RetryEvent::ShadowRefusal {
            number_of_retry_attempts: 0,
            ..
        }]
    ));
    assert_eq!(
        r.metrics().number_of_failed_calls_without_retry_attempt(),
        1
    );
    // shadow off: the same retry retries
    r.change_config(retry(3, false)).unwrap();
    let mut attempts = 0;
    let _ = r.call(|| {
        attempts += 1;
        Err::<(), _>("down")
    });
    assert_eq!(attempts, 3);
}
