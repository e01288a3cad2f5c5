//! The rate limiter against Resilience4j 2.2's `AtomicRateLimiter`: the
//! consequences of its algorithm, read from its source, events, metrics,
//! waiting and cancellation, decorators, a model of the Java algorithm, the
//! admission bound, allocation-freedom and registries.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use resil_core::Error;
use resil_core::chain::{Call, ChainFuture, Ctx, Stack, SyncNode};
use resil_core::clock::{Clock, ManualClock, TokioClock};
use resil_core::rate_limiter::{
    RateLimiter, RateLimiterConfig, RateLimiterEvent, RateLimiterEventType,
};
use resil_core::registry::RateLimiterRegistry;
use support::Recorder;
use tokio_test::{assert_pending, assert_ready, assert_ready_ok, task};

#[global_allocator]
static A: support::CountingAlloc = support::CountingAlloc;

use RateLimiterEvent::{Drained, FailedAcquire, SuccessfulAcquire};

const SEC: Duration = Duration::from_secs(1);

fn config(limit: u32, period: Duration, timeout: Duration) -> RateLimiterConfig {
    RateLimiterConfig::builder()
        .limit_for_period(limit)
        .limit_refresh_period(period)
        .timeout_duration(timeout)
        .build()
        .unwrap()
}

fn manual(limit: u32, timeout: Duration) -> (RateLimiter, ManualClock) {
    let clock = ManualClock::new();
    let limiter = RateLimiter::with_clock("rl", config(limit, SEC, timeout), clock.clone());
    (limiter, clock)
}

fn available(limiter: &RateLimiter) -> i64 {
    limiter.metrics().available_permissions()
}

// ---- the consequences of `AtomicRateLimiter`'s algorithm ----

#[test]
fn idle_time_never_accumulates_more_than_the_limit() {
    let (rl, clock) = manual(5, Duration::ZERO);
    assert_eq!(available(&rl), 5);
    clock.advance(SEC * 100);
    assert_eq!(available(&rl), 5);
    assert!(!rl.try_acquire_permission(6));
    assert!(rl.try_acquire_permission(5));
    assert!(!rl.try_acquire_permission(1));
    // A partly used cycle tops up to the limit, not beyond.
    clock.advance(SEC);
    assert!(rl.try_acquire_permission(2));
    clock.advance(SEC * 3);
    assert_eq!(available(&rl), 5);
}

#[test]
fn more_than_the_limit_is_granted_only_by_reservation_over_cycles() {
    let (rl, clock) = manual(3, SEC * 5);
    clock.advance(Duration::from_millis(250));
    // 7 permits, 3 available: 3 more at the next cycle (750 ms away) and one
    // whole cycle for the last one.
    assert_eq!(
        rl.reserve_permission(7),
        Ok(Duration::from_millis(750) + SEC)
    );
    assert_eq!(available(&rl), -4);
    clock.advance(Duration::from_millis(750));
    assert_eq!(available(&rl), -1);
    clock.advance(SEC);
    assert_eq!(available(&rl), 2);
    // A timeout shorter than the wait refuses and reserves nothing.
    rl.change_timeout_duration(Duration::from_millis(999))
        .unwrap();
    assert!(rl.reserve_permission(6).is_err());
    assert_eq!(available(&rl), 2);
}

#[test]
fn a_zero_timeout_always_refuses_more_than_the_limit() {
    let (rl, clock) = manual(3, Duration::ZERO);
    for _ in 0..5 {
        clock.advance(SEC * 10);
        assert!(!rl.try_acquire_permission(4));
        assert!(rl.reserve_permission(4).is_err());
        assert!(rl.acquire_permission_blocking(4).is_err());
        assert_eq!(available(&rl), 3);
    }
}

#[test]
fn drain_within_a_cycle_empties_it_and_forgives_reservations() {
    let (rl, clock) = manual(10, SEC * 5);
    let rec = Recorder::attach(rl.event_publisher());
    assert!(rl.try_acquire_permission(3));
    rl.drain_permissions();
    assert_eq!(available(&rl), 0);
    assert!(!rl.try_acquire_permission(1));
    clock.advance(SEC);
    assert_eq!(available(&rl), 10);
    // -3 becomes 0, as in Resilience4j: the waiter still proceeds.
    assert_eq!(rl.reserve_permission(13), Ok(SEC));
    assert_eq!(available(&rl), -3);
    rl.drain_permissions();
    assert_eq!(available(&rl), 0);
    clock.advance(SEC);
    assert_eq!(available(&rl), 10);
    assert_eq!(
        rec.take(),
        [
            SuccessfulAcquire { permits: 3 },
            Drained { permits: 7 },
            FailedAcquire { permits: 1 },
            SuccessfulAcquire { permits: 13 },
            Drained { permits: -3 },
        ]
    );
}

/// A deliberate difference: Resilience4j 2.2.0 drains the stale count of the
/// last cycle it saw: with 2 permits left in cycle 0, a drain in cycle 1
/// takes 2 of the 10 refilled and leaves 8, and its DRAINED event says
/// `min(2, 0) = 0`. resil drains the refreshed cycle: 0 left, and the event
/// says 10.
#[test]
fn drain_after_a_boundary_differs_from_2_2_0() {
    let (rl, clock) = manual(10, Duration::ZERO);
    let rec = Recorder::attach(rl.event_publisher());
    assert!(rl.try_acquire_permission(8));
    clock.advance(SEC);
    rl.drain_permissions();
    let resilience4j_2_2_0_available = 10 - 2;
    assert_ne!(available(&rl), resilience4j_2_2_0_available);
    assert_eq!(available(&rl), 0);
    assert_eq!(
        rec.take(),
        [SuccessfulAcquire { permits: 8 }, Drained { permits: 10 }]
    );
}

#[test]
fn a_limit_change_takes_effect_at_the_next_refill() {
    let (rl, clock) = manual(10, Duration::ZERO);
    assert!(rl.try_acquire_permission(3));
    rl.change_limit_for_period(5).unwrap();
    assert_eq!(rl.config().limit_for_period(), 5);
    assert_eq!(available(&rl), 7, "the current cycle keeps its count");
    assert!(rl.try_acquire_permission(7));
    clock.advance(SEC);
    assert_eq!(available(&rl), 5);
    clock.advance(SEC * 10);
    assert_eq!(available(&rl), 5);

    rl.change_limit_for_period(20).unwrap();
    assert_eq!(available(&rl), 5);
    assert!(rl.try_acquire_permission(5));
    clock.advance(SEC);
    assert_eq!(available(&rl), 20);
    // Reservations count whole cycles at the new limit.
    rl.change_timeout_duration(SEC * 10).unwrap();
    assert_eq!(rl.reserve_permission(45), Ok(SEC * 2));
    assert_eq!(available(&rl), -25);
}

#[test]
fn a_timeout_change_applies_to_the_next_acquire() {
    let (rl, _clock) = manual(1, Duration::ZERO);
    assert!(rl.try_acquire_permission(1));
    assert!(rl.reserve_permission(1).is_err());
    rl.change_timeout_duration(SEC).unwrap();
    assert_eq!(rl.config().timeout_duration(), SEC);
    assert_eq!(rl.reserve_permission(1), Ok(SEC));
}

#[test]
fn invalid_changes_are_errors_and_change_nothing() {
    let (rl, _clock) = manual(10, SEC);
    let err = rl.change_limit_for_period(0).unwrap_err();
    assert_eq!(err.to_string(), "limit_for_period = 0: must be at least 1");
    let err = rl.change_limit_for_period(2_000_000_000).unwrap_err();
    assert_eq!(err.problems()[0].field(), "limit_for_period");
    let err = rl.change_timeout_duration(Duration::MAX).unwrap_err();
    assert_eq!(err.problems()[0].field(), "timeout_duration");
    assert_eq!(rl.config(), config(10, SEC, SEC));
}

#[test]
fn cycles_are_counted_from_the_limiters_creation() {
    let clock = ManualClock::new();
    clock.advance(Duration::from_millis(700));
    let rl = RateLimiter::with_clock("rl", config(1, SEC, Duration::ZERO), clock.clone());
    assert!(rl.try_acquire_permission(1));
    clock.advance(Duration::from_millis(400)); // 1.1 s on the clock, 0.4 s for the limiter
    assert!(!rl.try_acquire_permission(1));
    assert_eq!(rl.metrics().nanos_to_wait(), Duration::from_millis(600));
    clock.advance(Duration::from_millis(600));
    assert_eq!(rl.metrics().cycle(), 1);
    assert!(rl.try_acquire_permission(1));
}

// ---- waiting, refusal and cancellation ----

/// A refused acquire waits out its whole timeout before failing.
#[test]
fn a_refused_blocking_acquire_waits_the_whole_timeout() {
    let (rl, clock) = manual(1, Duration::from_millis(300));
    let rec = Recorder::attach(rl.event_publisher());
    assert!(rl.try_acquire_permission(1));
    let err = rl.acquire_permission_blocking(1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "rate limiter `rl` does not permit further calls"
    );
    assert_eq!(clock.now().as_duration(), Duration::from_millis(300));
    assert_eq!(
        rec.take(),
        [
            SuccessfulAcquire { permits: 1 },
            FailedAcquire { permits: 1 }
        ]
    );
}

#[test]
fn a_blocking_acquire_waits_for_its_reservation_on_the_clock() {
    let (rl, clock) = manual(2, SEC * 5);
    clock.advance(Duration::from_millis(100));
    assert!(rl.try_acquire_permission(2));
    rl.acquire_permission_blocking(3).unwrap();
    // 900 ms to cycle 1 (2 permits), one more cycle for the third.
    assert_eq!(clock.now().as_duration(), Duration::from_millis(2000));
    assert_eq!(available(&rl), 1);
}

#[tokio::test(start_paused = true)]
async fn a_waiting_caller_is_counted_and_its_event_follows_the_wait() {
    let rl = RateLimiter::with_clock("rl", config(1, SEC, SEC * 5), TokioClock::new());
    let rec = Recorder::attach(rl.event_publisher());
    assert!(rl.try_acquire_permission(1));
    let mut waiter = task::spawn(rl.acquire_permission(1));
    assert_pending!(waiter.poll());
    assert_eq!(rl.metrics().number_of_waiting_threads(), 1);
    assert_eq!(available(&rl), -1);
    assert_eq!(rec.take(), [SuccessfulAcquire { permits: 1 }]);

    tokio::time::advance(Duration::from_millis(999)).await;
    assert_pending!(waiter.poll());
    tokio::time::advance(Duration::from_millis(1)).await;
    assert!(waiter.is_woken());
    assert_ready_ok!(waiter.poll());
    assert_eq!(rl.metrics().number_of_waiting_threads(), 0);
    assert_eq!(rec.take(), [SuccessfulAcquire { permits: 1 }]);
}

#[tokio::test(start_paused = true)]
async fn a_refused_async_acquire_waits_the_whole_timeout() {
    let rl = RateLimiter::with_clock(
        "rl",
        config(1, SEC * 60, Duration::from_millis(250)),
        TokioClock::new(),
    );
    assert!(rl.try_acquire_permission(1));
    let start = rl.clock().now();
    let mut waiter = task::spawn(rl.acquire_permission(1));
    assert_pending!(waiter.poll());
    assert_eq!(rl.metrics().number_of_waiting_threads(), 1);
    tokio::time::advance(Duration::from_millis(250)).await;
    assert!(assert_ready!(waiter.poll()).is_err());
    assert_eq!(
        rl.clock().now().saturating_duration_since(start),
        Duration::from_millis(250)
    );
    assert_eq!(rl.metrics().number_of_waiting_threads(), 0);
    assert_eq!(available(&rl), 0, "a refusal reserves nothing");
}

/// The chosen cancellation semantics (Resilience4j's): a waiter dropped while
/// it waits keeps its reservation; the waiting count goes back.
#[tokio::test(start_paused = true)]
async fn a_dropped_waiter_keeps_its_reservation() {
    let rl = RateLimiter::with_clock("rl", config(2, SEC, SEC * 5), TokioClock::new());
    assert!(rl.try_acquire_permission(2));
    let mut waiter = task::spawn(rl.call_async(|| async { Ok::<_, ()>(()) }));
    assert_pending!(waiter.poll());
    assert_eq!(rl.metrics().number_of_waiting_threads(), 1);
    assert_eq!(available(&rl), -1);
    drop(waiter);
    assert_eq!(rl.metrics().number_of_waiting_threads(), 0);
    assert_eq!(available(&rl), -1, "the reservation is not handed back");
    tokio::time::advance(SEC).await;
    assert_eq!(available(&rl), 1);
}

#[tokio::test(start_paused = true)]
async fn a_second_caller_waits_for_the_next_cycle() {
    let rl = RateLimiter::with_clock("rl", config(1, SEC, SEC * 5), TokioClock::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let call = || {
        let calls = calls.clone();
        rl.call_async(move || async move {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ()>(())
        })
    };
    let mut first = task::spawn(call());
    let mut second = task::spawn(call());
    assert_ready_ok!(first.poll());
    assert_pending!(second.poll());
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the second call has not run"
    );
    tokio::time::advance(SEC).await;
    assert_ready_ok!(second.poll());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

// ---- decorators ----

#[test]
fn call_and_a_chain_take_one_permit_each() {
    let (rl, _clock) = manual(2, Duration::ZERO);
    assert_eq!(rl.call(|| Ok::<_, &str>(1)), Ok(1));
    assert_eq!(rl.call(|| Err::<u32, _>("boom")), Err(Error::Inner("boom")));
    match rl.call(|| Ok::<_, &str>(3)) {
        Err(Error::RequestNotPermitted(e)) => assert_eq!(e.name(), "rl"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(available(&rl), 0);
    let inner: Result<u32, Error<&str>> = Stack::new()
        .rate_limiter(rl.part(1))
        .around(Call(|| Ok(4)))
        .call(&mut Ctx::new());
    assert!(matches!(inner, Err(Error::RequestNotPermitted(_))));
}

#[test]
fn a_part_with_permits_takes_that_many() {
    let (rl, _clock) = manual(5, Duration::ZERO);
    let with_permits = |permits| {
        Stack::new()
            .rate_limiter(rl.part(permits))
            .around(Call(|| Ok::<_, Error<()>>(1)))
            .call(&mut Ctx::new())
    };
    assert_eq!(with_permits(4), Ok(1));
    assert_eq!(available(&rl), 1);
    assert!(with_permits(2).is_err());
}

#[test]
fn a_panicking_call_has_used_its_permit() {
    let (rl, _clock) = manual(2, Duration::ZERO);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rl.call(|| -> Result<(), ()> { panic!("bug") })
    }));
    assert!(panicked.is_err());
    assert_eq!(available(&rl), 1);
}

#[tokio::test(start_paused = true)]
async fn async_decorators_wait_and_map_errors() {
    let rl = RateLimiter::with_clock("rl", config(1, SEC, Duration::ZERO), TokioClock::new());
    assert_eq!(
        rl.call_async(|| async { Err::<(), _>(7) }).await,
        Err(Error::Inner(7))
    );
    let refused = rl.call_async(|| async { Ok::<_, ()>(()) }).await;
    assert!(matches!(refused, Err(Error::RequestNotPermitted(_))));
    tokio::time::advance(SEC).await;
    let chained: Result<u8, Error<()>> =
        ChainFuture::new(Stack::new().rate_limiter(rl.part(1)).around(Call(|| async {
            Err(Error::Timeout(resil_core::time_limiter::Timeout::new(
                "tl".into(),
                SEC,
            )))
        })))
        .await;
    assert!(matches!(chained, Err(Error::Timeout(_))));
    tokio::time::advance(SEC).await;
    assert_eq!(
        ChainFuture::new(
            Stack::new()
                .rate_limiter(rl.part(1))
                .around(Call(|| async { Ok::<_, Error<()>>(2) }))
        )
        .await,
        Ok(2)
    );
}

#[test]
fn decorated_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let rl = RateLimiter::of_defaults("rl");
    let fut = rl.call_async(|| async { Ok::<_, std::io::Error>(1) });
    assert_send(&fut);
    let fut = ChainFuture::new(
        Stack::new()
            .rate_limiter(rl.part(1))
            .around(Call(|| async { Ok::<_, Error<std::io::Error>>(1) })),
    );
    assert_send(&fut);
    assert_send(&rl.acquire_permission(1));
}

// ---- events, metrics, allocation ----

#[test]
fn events_are_published_per_request_with_their_permits() {
    let (rl, _clock) = manual(3, SEC);
    let failures = Arc::new(AtomicUsize::new(0));
    let f = failures.clone();
    rl.event_publisher()
        .on(RateLimiterEventType::FailedAcquire, move |e| {
            assert_eq!(e.name(), "rl");
            f.fetch_add(1, Ordering::SeqCst);
        });
    let rec = Recorder::attach(rl.event_publisher());
    assert!(rl.try_acquire_permission(2));
    assert!(!rl.try_acquire_permission(2));
    assert_eq!(rl.reserve_permission(2), Ok(SEC));
    assert!(rl.reserve_permission(5).is_err());
    assert_eq!(
        rec.take(),
        [
            SuccessfulAcquire { permits: 2 },
            FailedAcquire { permits: 2 },
            SuccessfulAcquire { permits: 2 },
            FailedAcquire { permits: 5 },
        ]
    );
    assert_eq!(failures.load(Ordering::SeqCst), 2);
    assert_eq!(RateLimiterEventType::Drained.as_str(), "DRAINED");
    assert_eq!(
        RateLimiterEventType::SuccessfulAcquire.as_str(),
        "SUCCESSFUL_ACQUIRE"
    );
    assert_eq!(
        RateLimiterEventType::FailedAcquire.as_str(),
        "FAILED_ACQUIRE"
    );
}

#[test]
fn try_acquire_allocates_nothing() {
    let (rl, _clock) = manual(1_000, Duration::ZERO);
    let system = RateLimiter::new("sys", config(1_000_000, SEC * 3600, Duration::ZERO));
    assert!(rl.try_acquire_permission(1)); // warm up lazily initialized state
    assert!(system.try_acquire_permission(1));
    let (granted, allocations) = support::allocations_during(|| {
        (0..100).all(|_| rl.try_acquire_permission(1) && system.try_acquire_permission(1))
    });
    assert!(granted);
    assert_eq!(allocations, 0);
    let (result, allocations) = support::allocations_during(|| rl.call(|| Ok::<_, ()>(1)));
    assert_eq!((result, allocations), (Ok(1), 0));
}

#[test]
fn concurrent_callers_get_exactly_the_limit() {
    let (rl, _clock) = manual(1_000, Duration::ZERO);
    let granted = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..500 {
                    if rl.try_acquire_permission(1) {
                        granted.fetch_add(1, Ordering::Relaxed);
                    } else {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(granted.load(Ordering::Relaxed), 1_000);
    assert_eq!(refused.load(Ordering::Relaxed), 1_000);
    assert_eq!(available(&rl), 0);
}

#[test]
fn concurrent_reservations_are_all_accounted_for() {
    let (rl, _clock) = manual(10, SEC * 1000);
    let waits = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..25 {
                    let w = rl.reserve_permission(1).unwrap();
                    waits.lock().unwrap().push(w);
                }
            });
        }
    });
    let mut waits = waits.into_inner().unwrap();
    waits.sort();
    // 100 permits at 10 per second: ten of each wait 0 s, 1 s, ..., 9 s.
    let expected: Vec<_> = (0..100u32).map(|i| SEC * (i / 10)).collect();
    assert_eq!(waits, expected);
    assert_eq!(available(&rl), -90);
}

// ---- a model of Resilience4j's algorithm ----

/// A direct transcription of `AtomicRateLimiter` (its `State(cycle,
/// permissions)` and `calculateNextState`) in exact integer arithmetic, with
/// resil's two documented differences: a drain empties the refreshed cycle,
/// and a limit change refreshes the state with the old limit first.
#[derive(Debug)]
struct Model {
    period: i128,
    limit: i128,
    timeout: i128,
    cycle: i128,
    permissions: i128,
}

impl Model {
    fn refresh(&mut self, t: i128) {
        let c = t / self.period;
        if c != self.cycle {
            self.permissions = (self.permissions + (c - self.cycle) * self.limit).min(self.limit);
            self.cycle = c;
        }
    }

    fn nanos_to_wait(&self, permits: i128, t: i128) -> i128 {
        if self.permissions >= permits {
            return 0;
        }
        let to_next = (self.cycle + 1) * self.period - t;
        let at_next = self.permissions + self.limit;
        let full_cycles = (permits - at_next + self.limit - 1).div_euclid(self.limit);
        full_cycles * self.period + to_next
    }

    /// `None`: refused; `Some(wait)`: reserved.
    fn acquire(&mut self, t: i128, permits: i128, timeout: i128) -> Option<i128> {
        self.refresh(t);
        let wait = self.nanos_to_wait(permits, t);
        (timeout >= wait).then(|| {
            self.permissions -= permits;
            wait
        })
    }
}

#[derive(Debug, Clone)]
enum Op {
    Advance(u64),
    Try(u32),
    Reserve(u32),
    Blocking(u32),
    Drain,
    ChangeLimit(u32),
    ChangeTimeout(u64),
}

fn op(period: u64, limit: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..3 * period).prop_map(Op::Advance),
        3 => (0..=2 * limit).prop_map(Op::Try),
        3 => (0..=3 * limit).prop_map(Op::Reserve),
        2 => (0..=3 * limit).prop_map(Op::Blocking),
        1 => Just(Op::Drain),
        1 => (1..=limit.min(period as u32)).prop_map(Op::ChangeLimit),
        1 => (0..4 * period).prop_map(Op::ChangeTimeout),
    ]
}

fn scenario() -> impl Strategy<Value = (u64, u32, u64, Vec<Op>)> {
    (1u64..=1_000)
        .prop_flat_map(|period| (Just(period), 1..=period.min(20) as u32, 0..4 * period))
        .prop_flat_map(|(period, limit, timeout)| {
            (
                Just(period),
                Just(limit),
                Just(timeout),
                prop::collection::vec(op(period, limit), 1..60),
            )
        })
}

fn nanos(d: Duration) -> i128 {
    d.as_nanos() as i128
}

proptest! {
    /// Every answer, wait, count and event equals the model's.
    #[test]
    fn matches_the_java_algorithm((period, limit, timeout, ops) in scenario()) {
        let clock = ManualClock::new();
        let rl = RateLimiter::with_clock(
            "rl",
            config(limit, Duration::from_nanos(period), Duration::from_nanos(timeout)),
            clock.clone(),
        );
        let rec = Recorder::attach(rl.event_publisher());
        let mut m = Model {
            period: period.into(),
            limit: limit.into(),
            timeout: timeout.into(),
            cycle: 0,
            permissions: limit.into(),
        };
        for op in ops {
            let t = nanos(clock.now().as_duration());
            let expected_event = match op {
                Op::Advance(d) => {
                    clock.advance(Duration::from_nanos(d));
                    None
                }
                Op::Try(n) => {
                    let expected = m.acquire(t, n.into(), 0).is_some();
                    prop_assert_eq!(rl.try_acquire_permission(n), expected);
                    Some(if expected { SuccessfulAcquire { permits: n } } else { FailedAcquire { permits: n } })
                }
                Op::Reserve(n) => {
                    let expected = m.acquire(t, n.into(), m.timeout);
                    let got = rl.reserve_permission(n).ok().map(nanos);
                    prop_assert_eq!(got, expected);
                    Some(if expected.is_some() { SuccessfulAcquire { permits: n } } else { FailedAcquire { permits: n } })
                }
                Op::Blocking(n) => {
                    let expected = m.acquire(t, n.into(), m.timeout);
                    prop_assert_eq!(rl.acquire_permission_blocking(n).is_ok(), expected.is_some());
                    let waited = expected.unwrap_or(m.timeout);
                    prop_assert_eq!(nanos(clock.now().as_duration()), t + waited);
                    Some(if expected.is_some() { SuccessfulAcquire { permits: n } } else { FailedAcquire { permits: n } })
                }
                Op::Drain => {
                    m.refresh(t);
                    let drained = m.permissions;
                    m.permissions = 0;
                    rl.drain_permissions();
                    Some(Drained { permits: drained as i64 })
                }
                Op::ChangeLimit(l) => {
                    m.refresh(t);
                    m.limit = l.into();
                    rl.change_limit_for_period(l).unwrap();
                    None
                }
                Op::ChangeTimeout(d) => {
                    m.timeout = d.into();
                    rl.change_timeout_duration(Duration::from_nanos(d)).unwrap();
                    None
                }
            };
            prop_assert_eq!(rec.take(), expected_event.into_iter().collect::<Vec<_>>());
            let t = nanos(clock.now().as_duration());
            m.refresh(t);
            let metrics = rl.metrics();
            prop_assert_eq!(i128::from(metrics.available_permissions()), m.permissions);
            prop_assert_eq!(nanos(metrics.nanos_to_wait()), m.nanos_to_wait(1, t));
            prop_assert_eq!(i128::from(metrics.cycle()), m.cycle);
        }
    }

    /// The rate guarantee: permits usable by the end of cycle `c` (granted
    /// now, or reserved for a time within cycle `c`) never exceed
    /// `limit * (c + 1)`, however callers ask.
    #[test]
    fn never_admits_more_than_the_limit_per_cycle_plus_reservations(
        (period, limit, timeout, ops) in scenario()
    ) {
        let clock = ManualClock::new();
        let rl = RateLimiter::with_clock(
            "rl",
            config(limit, Duration::from_nanos(period), Duration::from_nanos(timeout)),
            clock.clone(),
        );
        // (the cycle the permits may be used in, how many)
        let mut admitted: Vec<(u64, u64)> = Vec::new();
        for op in ops {
            let t = clock.now().as_u64();
            match op {
                Op::Advance(d) => clock.advance(Duration::from_nanos(d)),
                Op::Try(n) => {
                    if rl.try_acquire_permission(n) {
                        admitted.push((t / period, n.into()));
                    }
                }
                Op::Reserve(n) | Op::Blocking(n) => {
                    if let Ok(wait) = rl.reserve_permission(n) {
                        admitted.push(((t + wait.as_nanos() as u64) / period, n.into()));
                    }
                }
                Op::Drain | Op::ChangeLimit(_) | Op::ChangeTimeout(_) => {}
            }
        }
        admitted.sort_unstable();
        let mut usable = 0u64;
        for (cycle, n) in admitted {
            usable += n;
            prop_assert!(
                usable <= u64::from(limit) * (cycle + 1),
                "{} permits usable by cycle {} at {} per cycle", usable, cycle, limit
            );
        }
    }
}

// ---- registries ----

#[test]
fn the_registry_shares_instances_and_applies_configs() {
    let registry = RateLimiterRegistry::builder()
        .clock(ManualClock::new())
        .tags([("team".to_owned(), "inventory".to_owned())].into())
        .build();
    let narrow = config(2, SEC, Duration::ZERO);
    registry
        .add_configuration("narrow", narrow.clone())
        .unwrap();
    let a = registry
        .rate_limiter_with_config("sku-query", "narrow")
        .unwrap();
    let b = registry.rate_limiter("sku-query");
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(b.config().limit_for_period(), 2);
    assert_eq!(b.tags()["team"], "inventory");
    assert!(b.try_acquire_permission(2));
    assert!(
        !a.try_acquire_permission(1),
        "one limiter behind both handles"
    );
    // The registry attaches the recent-events buffer.
    assert_eq!(b.event_publisher().buffer_capacity(), 100);
    assert_eq!(b.event_publisher().recent_events().len(), 2);

    let defaults = registry.rate_limiter("other");
    assert_eq!(defaults.config(), RateLimiterConfig::default());
    assert!(registry.rate_limiter_with_config("x", "missing").is_err());
    assert!(registry.add_configuration("default", narrow).is_err());
    assert_eq!(registry.all().len(), 2);
    assert!(registry.remove("other").is_some());
    assert!(registry.find("other").is_none());
}

#[test]
fn the_registry_uses_its_clock_and_the_configs_buffer_size() {
    let clock = ManualClock::new();
    let registry = RateLimiterRegistry::builder()
        .clock(clock.clone())
        .default_config(
            RateLimiterConfig::builder()
                .limit_for_period(1)
                .limit_refresh_period(SEC)
                .event_consumer_buffer_size(1)
                .build()
                .unwrap(),
        )
        .build();
    let rl = registry.rate_limiter("a");
    assert!(rl.try_acquire_permission(1));
    assert!(!rl.try_acquire_permission(1));
    assert_eq!(
        rl.event_publisher()
            .recent_events()
            .into_iter()
            .map(|e| e.into_kind())
            .collect::<Vec<_>>(),
        [FailedAcquire { permits: 1 }]
    );
    clock.advance(SEC);
    assert!(
        rl.try_acquire_permission(1),
        "the registry's clock drives the limiter"
    );
}
