//! The circuit breaker, behaviour by behaviour against Resilience4j 2.2's
//! `CircuitBreakerStateMachine` (and where resil differs on purpose, as
//! docs/coming-from-resilience4j.md says), on a `ManualClock`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use resil_core::chain::{Call, Ctx, Lift, Stack, SyncNode};
use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerClassifier, CircuitBreakerConfig, CircuitBreakerEvent as Ev,
    SlidingWindowType, State, TransitionCheckResult,
};
use resil_core::clock::ManualClock;
use resil_core::interval::IntervalFunction;
use resil_core::registry::{CircuitBreakerRegistry, RegistryEvent};
use resil_core::{Classify, Error};
use support::Recorder;
use support::circuit_breaker::{MS, SEC, breaker, count, fail, half_open, ok, transition};

#[global_allocator]
static ALLOC: support::CountingAlloc = support::CountingAlloc;

/// A call that takes `d` of the breaker's (manual) clock.
fn slow_ok(cb: &CircuitBreaker, clock: &ManualClock, d: Duration) {
    let _ = cb.call(|| {
        clock.advance(d);
        Ok::<_, &str>(())
    });
}

/// `f` through the breaker alone, classified by `c`.
fn call_with<T, E>(
    cb: &CircuitBreaker,
    c: &CircuitBreakerClassifier<T, E>,
    f: impl FnMut() -> Result<T, E>,
) -> Result<T, Error<E>> {
    Stack::new()
        .circuit_breaker(cb.part(c))
        .around(Lift(f))
        .call(&mut Ctx::new())
}

#[test]
fn defaults_are_closed_with_rates_below_minimum() {
    let cb = CircuitBreaker::of_defaults("a");
    assert_eq!(cb.state(), State::Closed);
    let m = cb.metrics();
    assert_eq!((m.failure_rate(), m.slow_call_rate()), (-1.0, -1.0));
    assert_eq!(m.number_of_buffered_calls(), 0);
}

#[test]
fn opens_exactly_at_the_threshold_after_the_minimum_with_events_in_order() {
    let (cb, _, rec) = breaker(count(4, 4).build().unwrap());
    ok(&cb).unwrap();
    fail(&cb).unwrap_err();
    ok(&cb).unwrap();
    assert_eq!(cb.metrics().failure_rate(), -1.0, "below the minimum");
    assert_eq!(cb.state(), State::Closed);
    fail(&cb).unwrap_err(); // 2 of 4 = 50% >= 50
    assert_eq!(cb.state(), State::Open);
    let kinds: Vec<_> = rec.take();
    assert_eq!(
        kinds[3..],
        [
            Ev::Error {
                elapsed: Duration::ZERO,
                error_kind: None
            },
            Ev::FailureRateExceeded { failure_rate: 50.0 },
            transition(State::Closed, State::Open),
        ]
    );
    let m = cb.metrics();
    assert_eq!(
        (
            m.failure_rate(),
            m.number_of_failed_calls(),
            m.number_of_successful_calls()
        ),
        (50.0, 2, 2)
    );
}

#[test]
fn a_consumed_success_on_a_window_of_successes_is_published_and_the_window_stays_exact() {
    // the recorder consumes the events: each success is published, the
    // ones that find the window full of successes without writing to it
    let (cb, clock, rec) = breaker(count(2, 2).build().unwrap());
    for ms in [3, 5, 7] {
        slow_ok(&cb, &clock, MS * ms);
    }
    let m = cb.metrics();
    assert_eq!(
        (m.number_of_successful_calls(), m.number_of_buffered_calls()),
        (2, 2)
    );
    fail(&cb).unwrap_err(); // 1 of the last 2 = 50% >= 50
    assert_eq!(cb.state(), State::Open);
    let success = |ms| Ev::Success { elapsed: MS * ms };
    assert_eq!(
        rec.take(),
        [
            success(3),
            success(5),
            success(7),
            Ev::Error {
                elapsed: Duration::ZERO,
                error_kind: None
            },
            Ev::FailureRateExceeded { failure_rate: 50.0 },
            transition(State::Closed, State::Open),
        ]
    );
}

#[test]
fn minimum_calls_is_clamped_to_a_count_window() {
    // minimum 100 > window 5: the runtime minimum is 5, as in Resilience4j.
    let (cb, _, _) = breaker(count(5, 100).build().unwrap());
    assert_eq!(cb.config().minimum_number_of_calls(), 100);
    for _ in 0..5 {
        fail(&cb).unwrap_err();
    }
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn rates_are_floats_like_resilience4j() {
    let (cb, _, _) = breaker(count(3, 3).failure_rate_threshold(50.0).build().unwrap());
    ok(&cb).unwrap();
    ok(&cb).unwrap();
    fail(&cb).unwrap_err();
    assert_eq!(cb.metrics().failure_rate(), 100.0f32 / 3.0);
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn a_call_is_slow_only_strictly_above_the_threshold() {
    let config = count(2, 2)
        .slow_call_duration_threshold(100 * MS)
        .slow_call_rate_threshold(50.0)
        .build()
        .unwrap();
    let (cb, clock, rec) = breaker(config);
    slow_ok(&cb, &clock, 100 * MS); // exactly at the threshold: not slow
    assert_eq!(cb.metrics().number_of_slow_calls(), 0);
    slow_ok(&cb, &clock, 100 * MS + Duration::from_nanos(1)); // 1 of 2 slow: 50% >= 50
    let m = cb.metrics();
    assert_eq!(
        (
            m.number_of_slow_calls(),
            m.number_of_slow_successful_calls()
        ),
        (1, 1)
    );
    assert_eq!(cb.state(), State::Open);
    let events = rec.take();
    assert_eq!(
        events[2..],
        [
            Ev::SlowCallRateExceeded {
                slow_call_rate: 50.0
            },
            transition(State::Closed, State::Open)
        ]
    );
}

#[test]
fn slow_failures_count_as_slow_and_failed() {
    let config = count(10, 10)
        .slow_call_duration_threshold(10 * MS)
        .build()
        .unwrap();
    let (cb, clock, _) = breaker(config);
    let _ = cb.call(|| {
        clock.advance(11 * MS);
        Err::<(), _>("slow boom")
    });
    let m = cb.metrics();
    assert_eq!(
        (
            m.number_of_slow_calls(),
            m.number_of_slow_failed_calls(),
            m.number_of_failed_calls()
        ),
        (1, 1, 1)
    );
}

#[test]
fn open_refuses_counts_and_publishes_until_strictly_after_the_wait() {
    let config = count(2, 2)
        .wait_duration_in_open_state(10 * SEC)
        .build()
        .unwrap();
    let (cb, clock, rec) = breaker(config);
    fail(&cb).unwrap_err();
    fail(&cb).unwrap_err();
    rec.take();
    let err = ok(&cb).unwrap_err();
    match &err {
        Error::CallNotPermitted(e) => {
            assert_eq!(e.state(), State::Open);
            assert_eq!(
                e.to_string(),
                "circuit breaker `inventory-query` is OPEN and does not permit further calls"
            );
        }
        other => panic!("{other:?}"),
    }
    clock.advance(10 * SEC); // exactly at the deadline: still refused (strict isAfter)
    assert!(!cb.try_acquire_permission());
    assert_eq!(cb.metrics().number_of_not_permitted_calls(), 2);
    assert_eq!(rec.take(), [Ev::CallNotPermitted, Ev::CallNotPermitted]);
    clock.advance(Duration::from_nanos(1));
    assert!(cb.try_acquire_permission());
    assert_eq!(cb.state(), State::HalfOpen);
    assert_eq!(rec.take(), [transition(State::Open, State::HalfOpen)]);
}

#[test]
fn open_keeps_the_closed_metrics_and_records_late_calls() {
    // Reference 3.1.2: 4 failures, a refused call, a late success in OPEN ->
    // buffered 4, not permitted 1, failure rate 75%.
    let (cb, _, _) = breaker(count(4, 4).build().unwrap());
    let guard = cb.start_call().unwrap(); // admitted in CLOSED, finishes late
    for _ in 0..4 {
        fail(&cb).unwrap_err();
    }
    assert_eq!(cb.state(), State::Open);
    ok(&cb).unwrap_err();
    guard.on_success();
    let m = cb.metrics();
    assert_eq!(
        (
            m.number_of_buffered_calls(),
            m.number_of_not_permitted_calls(),
            m.failure_rate()
        ),
        (4, 1, 75.0)
    );
    assert_eq!(cb.state(), State::Open, "OPEN never transitions on results");
}

#[test]
fn half_open_hands_out_exactly_the_permitted_probes() {
    let (cb, _, rec) = half_open(
        count(10, 10)
            .permitted_number_of_calls_in_half_open_state(3)
            .build()
            .unwrap(),
    );
    let probes: Vec<_> = (0..3).map(|_| cb.start_call().unwrap()).collect();
    let refused = cb.start_call().unwrap_err();
    assert_eq!(refused.state(), State::HalfOpen);
    assert_eq!(cb.metrics().number_of_not_permitted_calls(), 1);
    assert_eq!(rec.take(), [Ev::CallNotPermitted]);
    drop(probes); // unfinished probes give their permits back, record nothing
    assert_eq!(cb.metrics().number_of_buffered_calls(), 0);
    let again: Vec<_> = (0..3).map(|_| cb.start_call().unwrap()).collect();
    assert_eq!(again.len(), 3);
}

#[test]
fn half_open_decides_after_min_of_minimum_and_permitted() {
    // minimum 2, permitted 10: two successes close the breaker.
    let (cb, _, rec) = half_open(
        count(100, 2)
            .permitted_number_of_calls_in_half_open_state(10)
            .build()
            .unwrap(),
    );
    ok(&cb).unwrap();
    assert_eq!(cb.state(), State::HalfOpen);
    ok(&cb).unwrap();
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(
        rec.take()[2..],
        [transition(State::HalfOpen, State::Closed)]
    );
}

#[test]
fn half_open_failures_reopen_with_a_longer_wait() {
    let f = IntervalFunction::of_exponential_backoff(SEC, 2.0).unwrap();
    let config = count(4, 4)
        .permitted_number_of_calls_in_half_open_state(2)
        .wait_interval_function_in_open_state(f)
        .build()
        .unwrap();
    let (cb, clock, _) = breaker(config);
    for _ in 0..4 {
        fail(&cb).unwrap_err();
    }
    // attempt 1: 1 s
    clock.advance(SEC + Duration::from_nanos(1));
    ok(&cb).unwrap();
    fail(&cb).unwrap_err(); // 50% of 2 probes: open again, attempt 2: 2 s
    assert_eq!(cb.state(), State::Open);
    clock.advance(SEC + Duration::from_nanos(1));
    assert!(!cb.try_acquire_permission(), "the second wait is 2 s");
    clock.advance(SEC);
    fail(&cb).unwrap_err();
    fail(&cb).unwrap_err(); // attempt 3: 4 s
    clock.advance(4 * SEC);
    assert!(!cb.try_acquire_permission());
    clock.advance(Duration::from_nanos(1));
    ok(&cb).unwrap();
    ok(&cb).unwrap();
    assert_eq!(cb.state(), State::Closed);
    // CLOSED restarts the counter: the next opening waits 1 s again.
    cb.transition_to_open_state().unwrap();
    clock.advance(SEC + Duration::from_nanos(1));
    assert!(cb.try_acquire_permission());
}

#[test]
fn ignored_errors_release_the_probe_and_count_for_nothing() {
    const IGNORE: CircuitBreakerClassifier<(), &str> =
        CircuitBreakerClassifier::new().ignore(|e| *e == "not found");
    let (cb, _, rec) = half_open(
        count(10, 10)
            .permitted_number_of_calls_in_half_open_state(1)
            .build()
            .unwrap(),
    );
    for _ in 0..3 {
        call_with(&cb, &IGNORE, || Err("not found")).unwrap_err();
    }
    assert_eq!(cb.metrics().number_of_buffered_calls(), 0);
    assert_eq!(cb.state(), State::HalfOpen);
    assert_eq!(
        rec.take(),
        vec![
            Ev::IgnoredError {
                elapsed: Duration::ZERO,
                error_kind: None
            };
            3
        ]
    );
    cb.call(|| Ok::<_, &str>(())).unwrap();
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn max_wait_in_half_open_reopens_by_timer() {
    let (cb, clock, rec) = half_open(
        count(10, 10)
            .max_wait_duration_in_half_open_state(3 * SEC)
            .build()
            .unwrap(),
    );
    clock.advance(3 * SEC - MS);
    assert_eq!(cb.state(), State::HalfOpen);
    clock.advance(MS);
    assert_eq!(cb.state(), State::Open);
    assert_eq!(rec.take(), [transition(State::HalfOpen, State::Open)]);
}

#[test]
fn time_window_evicts_whole_seconds_of_the_clock() {
    let config = CircuitBreakerConfig::builder()
        .sliding_window(5, 10, SlidingWindowType::TimeBased)
        .build()
        .unwrap();
    let (cb, clock, _) = breaker(config);
    clock.advance(100 * SEC + 700 * MS); // second 100 of the clock
    fail(&cb).unwrap_err();
    clock.advance(4 * SEC); // 104.7: still in the window
    ok(&cb).unwrap();
    assert_eq!(cb.metrics().number_of_buffered_calls(), 2);
    clock.advance(300 * MS); // 105.0: second 100 evicted
    let m = cb.metrics();
    assert_eq!(
        (m.number_of_buffered_calls(), m.number_of_failed_calls()),
        (1, 0)
    );
    // minimum calls are not clamped for time windows: 9 more failures to reach 10
    for _ in 0..8 {
        fail(&cb).unwrap_err();
    }
    assert_eq!(cb.metrics().failure_rate(), -1.0);
    fail(&cb).unwrap_err();
    assert_eq!(cb.state(), State::Open);
}

#[derive(Debug, PartialEq)]
enum InvError {
    ConnectionRefused,
    OutOfStock,
    Timeout,
}

impl Classify for InvError {
    const KINDS: &'static [&'static str] = &["ConnectionRefused", "OutOfStock", "Timeout"];
    fn kind(&self) -> &'static str {
        match self {
            InvError::ConnectionRefused => "ConnectionRefused",
            InvError::OutOfStock => "OutOfStock",
            InvError::Timeout => "Timeout",
        }
    }
}

#[test]
fn configured_kinds_record_and_ignore_by_name() {
    let config = count(100, 100)
        .record_errors(["ConnectionRefused", "Timeout"])
        .ignore_errors(["OutOfStock"])
        .build()
        .unwrap();
    let (cb, _, rec) = breaker(config);
    let c = CircuitBreakerClassifier::<(), InvError>::classified();
    let _ = call_with(&cb, &c, || Err(InvError::ConnectionRefused));
    let _ = call_with(&cb, &c, || Err(InvError::OutOfStock));
    let _ = call_with(&cb, &c, || Err(InvError::Timeout));
    // a rejection of an inner layer is named too
    let _: Result<(), _> = Stack::new()
        .circuit_breaker(cb.part(&c))
        .around(Call(|| {
            Err(Error::Timeout(resil_core::time_limiter::Timeout::new(
                "inventory-query".into(),
                SEC,
            )))
        }))
        .call(&mut Ctx::new());
    let m = cb.metrics();
    assert_eq!(
        (m.number_of_buffered_calls(), m.number_of_failed_calls()),
        (3, 3)
    );
    let kinds: Vec<_> = rec.take();
    assert_eq!(
        kinds[1],
        Ev::IgnoredError {
            elapsed: Duration::ZERO,
            error_kind: Some("OutOfStock")
        }
    );
    // unlisted kinds count as successes once record_errors is set
    let config = count(100, 100).record_errors(["Timeout"]).build().unwrap();
    let (cb, _, _) = breaker(config);
    let _ = call_with(&cb, &c, || Err(InvError::ConnectionRefused));
    assert_eq!(cb.metrics().number_of_failed_calls(), 0);
    assert_eq!(cb.metrics().number_of_successful_calls(), 1);
}

#[test]
fn predicates_and_result_predicates_classify() {
    const C: CircuitBreakerClassifier<u32, InvError> = CircuitBreakerClassifier::new()
        .record(|e| *e != InvError::OutOfStock)
        .ignore(|e| *e == InvError::Timeout)
        .record_result(|v| *v == 0);
    let (cb, _, rec) = breaker(count(100, 100).build().unwrap());
    let _ = call_with(&cb, &C, || Err(InvError::OutOfStock)); // not recorded: success
    let _ = call_with(&cb, &C, || Err(InvError::Timeout)); // ignored (ignore wins)
    let _ = call_with(&cb, &C, || Err(InvError::ConnectionRefused)); // failure
    let _ = call_with(&cb, &C, || Ok(0)); // result recorded as failure
    let _ = call_with(&cb, &C, || Ok(7)); // success
    let m = cb.metrics();
    assert_eq!(
        (m.number_of_buffered_calls(), m.number_of_failed_calls()),
        (4, 2)
    );
    let z = Duration::ZERO;
    assert_eq!(
        rec.take(),
        [
            Ev::Success { elapsed: z },
            Ev::IgnoredError {
                elapsed: z,
                error_kind: None
            },
            Ev::Error {
                elapsed: z,
                error_kind: None
            },
            Ev::Error {
                elapsed: z,
                error_kind: Some("RecordedResult")
            },
            Ev::Success { elapsed: z },
        ]
    );
}

#[test]
fn transition_on_result_opens_with_or_without_a_duration() {
    const C: CircuitBreakerClassifier<u32, &str> = CircuitBreakerClassifier::new()
        .transition_on_result(|r| match r {
            Ok(429) => TransitionCheckResult::TransitionToOpenFor(Duration::from_secs(30)),
            Err(_) => TransitionCheckResult::TransitionToOpen,
            _ => TransitionCheckResult::NoTransition,
        });
    let (cb, clock, _) = breaker(CircuitBreakerConfig::default());
    call_with(&cb, &C, || Ok(200)).unwrap();
    assert_eq!(cb.state(), State::Closed);
    call_with(&cb, &C, || Ok(429)).unwrap();
    assert_eq!(cb.state(), State::Open);
    clock.advance(30 * SEC + MS);
    cb.transition_to_closed_state().unwrap();
    // "open" without a duration uses the interval function instead of failing.
    call_with(&cb, &C, || Err("boom")).unwrap_err();
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn success_in_closed_and_rejection_in_open_allocate_nothing() {
    let cb = CircuitBreaker::with_clock("a", count(10, 10).build().unwrap(), ManualClock::new());
    for _ in 0..20 {
        ok(&cb).unwrap(); // warm up
    }
    let (_, n) = support::allocations_during(|| {
        for _ in 0..1000 {
            ok(&cb).unwrap();
        }
    });
    assert_eq!(n, 0, "success in CLOSED");
    cb.transition_to_forced_open_state().unwrap();
    cb.transition_to_open_state().unwrap();
    let (_, n) = support::allocations_during(|| {
        for _ in 0..1000 {
            ok(&cb).unwrap_err();
        }
    });
    assert_eq!(n, 0, "rejection in OPEN");
}

#[test]
fn registry_shares_instances_and_applies_configs_tags_and_clock() {
    let clock = ManualClock::new();
    let registry = CircuitBreakerRegistry::builder()
        .default_config(count(7, 7).build().unwrap())
        .configuration("slow", count(3, 3).build().unwrap())
        .tags([("team".to_owned(), "inventory".to_owned())].into())
        .clock(clock.clone())
        .build();
    let added = Recorder::attach(registry.event_publisher());
    let a = registry.circuit_breaker("a");
    let again = registry.circuit_breaker_with("a", count(99, 99).build().unwrap());
    assert!(Arc::ptr_eq(&a, &again), "later configs are ignored");
    assert_eq!(a.config().sliding_window_size(), 7);
    assert_eq!(a.tags().get("team").map(String::as_str), Some("inventory"));
    let b = registry.circuit_breaker_with_config("b", "slow").unwrap();
    assert_eq!(b.config().sliding_window_size(), 3);
    assert_eq!(
        registry
            .circuit_breaker_with_config("c", "nope")
            .unwrap_err()
            .to_string(),
        "configuration `nope` does not exist"
    );
    assert!(
        registry
            .add_configuration("default", CircuitBreakerConfig::default())
            .is_err()
    );
    assert!(registry.remove_configuration("default").is_err());
    assert_eq!(
        registry
            .all()
            .iter()
            .map(|c| c.name().to_owned())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    // instances read the registry's clock and keep a buffer of recent events
    a.transition_to_open_state().unwrap();
    assert_eq!(a.event_publisher().recent_events().len(), 1);
    clock.advance(61 * SEC);
    assert!(a.try_acquire_permission());
    assert_eq!(a.state(), State::HalfOpen);
    let removed = registry.remove("b").unwrap();
    assert!(registry.find("b").is_none());
    let old = registry.replace("a", count(2, 2).build().unwrap()).unwrap();
    assert!(Arc::ptr_eq(&old, &a));
    let kinds: Vec<_> = added
        .take()
        .into_iter()
        .map(|e| match e {
            RegistryEvent::Added(p) => format!("added {}", p.name()),
            RegistryEvent::Removed(p) => format!("removed {}", p.name()),
            RegistryEvent::Replaced { old, new } => {
                format!(
                    "replaced {} {}",
                    old.config().sliding_window_size(),
                    new.config().sliding_window_size()
                )
            }
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(kinds, ["added a", "added b", "removed b", "replaced 7 2"]);
    assert_eq!(removed.name(), "b");
}
