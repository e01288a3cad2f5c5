//! The semaphore bulkhead through its public API: Resilience4j's behaviours,
//! events, runtime re-configuration, waiting (async and blocking), fairness,
//! allocation and the registry.

mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resil_core::Error;
use resil_core::bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadEvent, BulkheadEventType, BulkheadFull,
};
use resil_core::chain::{Call, ChainFuture, Stack};
use resil_core::clock::{Clock, ManualClock, TokioClock};
use resil_core::registry::BulkheadRegistry;
use tokio_test::{assert_pending, assert_ready, assert_ready_err, assert_ready_ok, task};

use BulkheadEvent::{CallFinished, CallPermitted, CallRejected};
use support::bulkhead::{available, config, waiting};
use support::{Recorder, ms};

#[global_allocator]
static A: support::CountingAlloc = support::CountingAlloc;

/// Spins (yielding the thread, never sleeping) until `cond` holds.
fn until(cond: impl Fn() -> bool) {
    while !cond() {
        std::thread::yield_now();
    }
}

// ---------------------------------------------------------------------------
// Resilience4j's behaviours

#[test]
fn zero_max_concurrent_calls_rejects_everything() {
    let b = Bulkhead::with_clock(
        "inventory-query",
        config(0, ms(0), true),
        ManualClock::new(),
    );
    let rec = Recorder::attach(b.event_publisher());
    let err = b.try_acquire_permission().unwrap_err();
    assert_eq!(err, BulkheadFull::new("inventory-query".into(), 0));
    assert!(matches!(
        b.call(|| Ok::<_, ()>(1)),
        Err(Error::BulkheadFull(e)) if e.capacity() == 0
    ));
    assert_eq!(b.metrics().max_allowed_concurrent_calls(), 0);
    assert_eq!(available(&b), 0);
    assert_eq!(rec.take(), [CallRejected, CallRejected]);
}

#[tokio::test(start_paused = true)]
async fn zero_max_concurrent_calls_with_a_wait_waits_then_rejects() {
    let clock = TokioClock::new();
    let b = Bulkhead::with_clock("b", config(0, ms(100), true), clock.clone());
    let mut a = task::spawn(b.acquire_permission());
    assert_pending!(a.poll());
    tokio::time::advance(ms(100)).await;
    assert!(a.is_woken());
    assert_ready_err!(a.poll());
    assert_eq!(clock.now().as_duration(), ms(100));
}

#[tokio::test(start_paused = true)]
async fn fail_fast_rejects_at_once_and_never_queues() {
    let b = Bulkhead::with_clock("b", config(1, ms(0), true), TokioClock::new());
    let rec = Recorder::attach(b.event_publisher());
    let held = b.try_acquire_permission().unwrap();
    let mut a = task::spawn(b.acquire_permission());
    let err = assert_ready_err!(a.poll());
    assert_eq!(
        err.to_string(),
        "bulkhead `b` is full and does not permit further calls"
    );
    assert_eq!(waiting(&b), 0);
    let b2 = b.clone();
    let blocked = std::thread::spawn(move || b2.acquire_permission_blocking().is_err());
    assert!(blocked.join().unwrap());
    assert!(matches!(
        b.call(|| Ok::<_, ()>(())),
        Err(Error::BulkheadFull(_))
    ));
    drop(held);
    assert_eq!(
        rec.take(),
        [
            CallPermitted,
            CallRejected,
            CallRejected,
            CallRejected,
            CallFinished
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_wait_under_one_millisecond_fails_fast_as_in_resilience4j() {
    let b = Bulkhead::with_clock(
        "b",
        config(1, Duration::from_micros(999), true),
        TokioClock::new(),
    );
    let _held = b.try_acquire_permission().unwrap();
    let mut a = task::spawn(b.acquire_permission());
    assert_ready_err!(a.poll());
    assert_eq!(waiting(&b), 0);
}

#[tokio::test(start_paused = true)]
async fn a_waiter_gives_up_after_max_wait() {
    let clock = TokioClock::new();
    let b = Bulkhead::with_clock("b", config(1, ms(100), true), clock.clone());
    let rec = Recorder::attach(b.event_publisher());
    let _held = b.try_acquire_permission().unwrap();
    let mut a = task::spawn(b.acquire_permission());
    assert_pending!(a.poll());
    assert_eq!(waiting(&b), 1);
    tokio::time::advance(ms(99)).await;
    assert!(!a.is_woken());
    assert_pending!(a.poll());
    tokio::time::advance(ms(1)).await;
    assert!(a.is_woken());
    let err = assert_ready_err!(a.poll());
    assert_eq!(err.capacity(), 1);
    assert_eq!(waiting(&b), 0);
    assert_eq!(clock.now().as_duration(), ms(100));
    assert_eq!(rec.take(), [CallPermitted, CallRejected]);
}

#[tokio::test(start_paused = true)]
async fn a_waiter_gets_a_permit_released_within_max_wait() {
    let b = Bulkhead::with_clock("b", config(1, ms(100), true), TokioClock::new());
    let rec = Recorder::attach(b.event_publisher());
    let held = b.try_acquire_permission().unwrap();
    let mut a = task::spawn(b.call_async(|| async { Ok::<_, ()>("done") }));
    assert_pending!(a.poll());
    tokio::time::advance(ms(60)).await;
    assert!(!a.is_woken());
    drop(held);
    assert!(a.is_woken());
    assert_eq!(assert_ready_ok!(a.poll()), "done");
    assert_eq!(available(&b), 1);
    assert_eq!(
        rec.take(),
        [CallPermitted, CallFinished, CallPermitted, CallFinished]
    );
}

#[tokio::test(start_paused = true)]
async fn a_queued_call_runs_its_closure_only_once_it_has_a_permit() {
    let b = Bulkhead::with_clock("b", config(1, ms(100), true), TokioClock::new());
    let held = b.try_acquire_permission().unwrap();
    let called = AtomicBool::new(false);
    let mut a = task::spawn(b.call_async(|| {
        called.store(true, SeqCst);
        async { Ok::<_, ()>("done") }
    }));
    assert!(!called.load(SeqCst), "no permit yet");
    assert_pending!(a.poll());
    assert_eq!(waiting(&b), 1);
    assert!(!called.load(SeqCst));
    drop(held);
    assert_eq!(assert_ready_ok!(a.poll()), "done");
    assert!(called.load(SeqCst));
    assert_eq!(available(&b), 1);

    // Refused after the wait: never called.
    let _held = b.try_acquire_permission().unwrap();
    called.store(false, SeqCst);
    let mut a = task::spawn(b.call_async(|| {
        called.store(true, SeqCst);
        async { Ok::<_, ()>("done") }
    }));
    assert_pending!(a.poll());
    tokio::time::advance(ms(100)).await;
    assert!(matches!(
        assert_ready!(a.poll()),
        Err(Error::BulkheadFull(_))
    ));
    assert!(!called.load(SeqCst));
    assert_eq!(waiting(&b), 0);
}

#[test]
fn with_a_manual_clock_an_async_waiter_advances_the_clock_and_gives_up() {
    // `ManualClock::sleep_async` advances time instead of waiting.
    let clock = ManualClock::new();
    let b = Bulkhead::with_clock("b", config(1, ms(250), true), clock.clone());
    let _held = b.try_acquire_permission().unwrap();
    let mut a = task::spawn(b.acquire_permission());
    assert_ready_err!(a.poll());
    assert_eq!(clock.now().as_duration(), ms(250));
    assert_eq!(waiting(&b), 0);
}

// ---------------------------------------------------------------------------
// Fairness

#[tokio::test(start_paused = true)]
async fn fair_waiters_are_served_in_arrival_order_and_newcomers_do_not_barge() {
    let b = Bulkhead::with_clock("b", config(1, ms(10_000), true), TokioClock::new());
    let held = b.try_acquire_permission().unwrap();
    let mut first = task::spawn(b.acquire_permission());
    let mut second = task::spawn(b.acquire_permission());
    let mut third = task::spawn(b.acquire_permission());
    assert_pending!(first.poll());
    assert_pending!(second.poll());
    assert_pending!(third.poll());
    assert_eq!(waiting(&b), 3);

    drop(held);
    // The permit went to `first`, not back to the pool.
    assert!(first.is_woken() && !second.is_woken() && !third.is_woken());
    assert_eq!(available(&b), 0);
    assert!(b.try_acquire_permission().is_err());
    assert_pending!(third.poll());
    assert_pending!(second.poll());
    let p1 = assert_ready_ok!(first.poll());

    drop(p1);
    assert!(second.is_woken() && !third.is_woken());
    let p2 = assert_ready_ok!(second.poll());
    drop(p2);
    let p3 = assert_ready_ok!(third.poll());
    assert_eq!(waiting(&b), 0);
    drop(p3);
    assert_eq!(available(&b), 1);
}

#[tokio::test(start_paused = true)]
async fn fair_newcomer_with_a_permit_free_still_queues_behind_waiters() {
    let b = Bulkhead::with_clock("b", config(2, ms(10_000), true), TokioClock::new());
    let p1 = b.try_acquire_permission().unwrap();
    let p2 = b.try_acquire_permission().unwrap();
    let mut first = task::spawn(b.acquire_permission());
    assert_pending!(first.poll());
    drop(p1); // granted to `first`
    let mut newcomer = task::spawn(b.acquire_permission());
    assert_pending!(newcomer.poll());
    let _f = assert_ready_ok!(first.poll());
    drop(p2);
    let _n = assert_ready_ok!(newcomer.poll());
    assert_eq!(available(&b), 0);
}

#[tokio::test(start_paused = true)]
async fn unfair_newcomer_takes_a_freed_permit_before_the_woken_waiter() {
    let b = Bulkhead::with_clock("b", config(1, ms(10_000), false), TokioClock::new());
    let held = b.try_acquire_permission().unwrap();
    let mut waiter = task::spawn(b.acquire_permission());
    assert_pending!(waiter.poll());

    drop(held);
    // Unfair: the permit is back in the pool and the waiter is only woken.
    assert!(waiter.is_woken());
    assert_eq!(available(&b), 1);
    let barger = b.try_acquire_permission().expect("a newcomer may barge");
    assert_pending!(waiter.poll()); // lost the race, still queued
    assert_eq!(waiting(&b), 1);

    drop(barger);
    assert!(waiter.is_woken());
    let _p = assert_ready_ok!(waiter.poll());
    assert_eq!((available(&b), waiting(&b)), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn sync_and_async_waiters_share_one_fair_queue() {
    let b = Bulkhead::with_clock("b", config(1, ms(60_000), true), TokioClock::new());
    let held = b.try_acquire_permission().unwrap();
    let mut task_waiter = task::spawn(b.acquire_permission());
    assert_pending!(task_waiter.poll());
    std::thread::scope(|s| {
        let thread_waiter = s.spawn(|| {
            let permit = b.acquire_permission_blocking().unwrap();
            drop(permit);
        });
        until(|| waiting(&b) == 2);
        drop(held);
        // The task came first: it gets the permit, the thread keeps waiting.
        assert!(task_waiter.is_woken());
        assert_eq!(waiting(&b), 1);
        let p = assert_ready_ok!(task_waiter.poll());
        assert!(!thread_waiter.is_finished());
        drop(p);
        thread_waiter.join().unwrap();
    });
    assert_eq!((available(&b), waiting(&b)), (1, 0));
}

// ---------------------------------------------------------------------------
// Blocking waits driven by a manual clock

#[test]
fn a_blocked_thread_gets_the_permit_another_thread_releases() {
    let clock = ManualClock::new();
    let b = Bulkhead::with_clock("b", config(1, ms(100), true), clock.clone());
    let rec = Recorder::attach(b.event_publisher());
    let held = b.try_acquire_permission().unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| b.call(|| Ok::<_, ()>("ran")));
        until(|| waiting(&b) == 1);
        drop(held);
        assert_eq!(waiter.join().unwrap(), Ok("ran"));
    });
    assert_eq!(clock.now().as_duration(), Duration::ZERO);
    assert_eq!(
        rec.take(),
        [CallPermitted, CallFinished, CallPermitted, CallFinished]
    );
}

#[test]
fn a_blocked_thread_gives_up_when_the_manual_clock_passes_max_wait() {
    let clock = ManualClock::new();
    let b = Bulkhead::with_clock("b", config(1, ms(100), true), clock.clone());
    let rec = Recorder::attach(b.event_publisher());
    let _held = b.try_acquire_permission().unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| b.acquire_permission_blocking().map(drop));
        until(|| waiting(&b) == 1);
        clock.advance(ms(99));
        assert_eq!(waiting(&b), 1);
        clock.advance(ms(1)); // the deadline's timer runs here and wakes the thread
        let err = waiter.join().unwrap().unwrap_err();
        assert_eq!(err.name(), "b");
    });
    assert_eq!((available(&b), waiting(&b)), (0, 0));
    assert_eq!(rec.take(), [CallPermitted, CallRejected]);
}

// ---------------------------------------------------------------------------
// Events

#[test]
fn events_are_published_in_order() {
    let b = Bulkhead::with_clock("b", config(1, ms(0), true), ManualClock::new());
    let rec = Recorder::attach(b.event_publisher());
    let p = b.try_acquire_permission().unwrap();
    let _ = b.try_acquire_permission().unwrap_err();
    drop(p);
    let _ = b.call(|| Err::<(), _>("inner failure"));
    let _ = b.call(|| Ok::<_, ()>(()));
    b.try_acquire_permission().unwrap().release(); // not made: no CALL_FINISHED
    assert_eq!(
        rec.take(),
        [
            CallPermitted,
            CallRejected,
            CallFinished,
            CallPermitted,
            CallFinished,
            CallPermitted,
            CallFinished,
            CallPermitted,
        ]
    );
    let names: Vec<_> = [CallPermitted, CallRejected, CallFinished]
        .iter()
        .map(|e| resil_core::event::EventKind::event_type(e).as_str())
        .collect();
    assert_eq!(names, ["CALL_PERMITTED", "CALL_REJECTED", "CALL_FINISHED"]);
}

#[test]
fn subscribing_to_one_event_type() {
    let b = Bulkhead::with_clock("b", config(1, ms(0), true), ManualClock::new());
    let rejected = Arc::new(AtomicU32::new(0));
    let seen = rejected.clone();
    b.event_publisher()
        .on(BulkheadEventType::CallRejected, move |e| {
            assert_eq!(e.name(), "b");
            seen.fetch_add(1, Ordering::SeqCst);
        });
    let _p = b.try_acquire_permission().unwrap();
    for _ in 0..3 {
        let _ = b.call(|| Ok::<_, ()>(()));
    }
    assert_eq!(rejected.load(Ordering::SeqCst), 3);
}

// ---------------------------------------------------------------------------
// Runtime re-configuration

#[test]
fn change_config_shrinks_without_blocking_as_calls_finish() {
    let b = Bulkhead::with_clock("b", config(3, ms(0), true), ManualClock::new());
    let p1 = b.try_acquire_permission().unwrap();
    let p2 = b.try_acquire_permission().unwrap();
    let p3 = b.try_acquire_permission().unwrap();
    assert_eq!(available(&b), 0);

    // Three calls in flight, limit one: returns at once (Resilience4j blocks here).
    b.change_config(config(1, ms(0), true));
    assert_eq!(b.metrics().max_allowed_concurrent_calls(), 1);
    assert_eq!(b.config().max_concurrent_calls(), 1);
    assert_eq!(available(&b), 0);
    assert!(b.try_acquire_permission().is_err());
    drop(p1); // retired
    assert_eq!(available(&b), 0);
    assert!(b.try_acquire_permission().is_err());
    drop(p2); // retired
    assert_eq!(available(&b), 0);
    drop(p3); // back within the limit
    assert_eq!(available(&b), 1);
    let p = b.try_acquire_permission().unwrap();
    assert!(b.try_acquire_permission().is_err());
    drop(p);
    assert_eq!(available(&b), 1);
}

#[test]
fn change_config_grows_at_once_with_calls_in_flight() {
    let b = Bulkhead::with_clock("b", config(2, ms(0), true), ManualClock::new());
    let p1 = b.try_acquire_permission().unwrap();
    let p2 = b.try_acquire_permission().unwrap();
    b.change_config(config(5, ms(0), true));
    assert_eq!(available(&b), 3);
    let more: Vec<_> = (0..3)
        .map(|_| b.try_acquire_permission().unwrap())
        .collect();
    assert_eq!(available(&b), 0);
    assert!(b.try_acquire_permission().is_err());
    drop((p1, p2));
    assert_eq!(available(&b), 2);
    drop(more);
    assert_eq!(available(&b), 5);
    // Shrink to zero and back.
    b.change_config(config(0, ms(0), true));
    assert_eq!(available(&b), 0);
    assert!(b.try_acquire_permission().is_err());
    b.change_config(config(1, ms(0), true));
    assert_eq!(available(&b), 1);
}

#[tokio::test(start_paused = true)]
async fn change_config_grow_serves_waiters_first_and_shrink_holds_them() {
    let b = Bulkhead::with_clock("b", config(2, ms(10_000), true), TokioClock::new());
    let p1 = b.try_acquire_permission().unwrap();
    let p2 = b.try_acquire_permission().unwrap();
    let mut a = task::spawn(b.acquire_permission());
    assert_pending!(a.poll());

    // Shrink below the calls in flight: the first release is retired, not
    // handed to the waiter.
    b.change_config(config(1, ms(10_000), true));
    drop(p1);
    assert!(!a.is_woken());
    assert_pending!(a.poll());
    assert_eq!((available(&b), waiting(&b)), (0, 1));

    // Grow: the new permit goes to the waiter before any newcomer.
    b.change_config(config(2, ms(10_000), true));
    assert!(a.is_woken());
    assert!(b.try_acquire_permission().is_err());
    let pa = assert_ready_ok!(a.poll());
    assert_eq!(available(&b), 0);
    drop((p2, pa));
    assert_eq!((available(&b), waiting(&b)), (2, 0));
}

#[tokio::test(start_paused = true)]
async fn a_new_max_wait_applies_to_later_callers() {
    let b = Bulkhead::with_clock("b", config(1, ms(100), true), TokioClock::new());
    let _held = b.try_acquire_permission().unwrap();
    let mut early = task::spawn(b.acquire_permission());
    assert_pending!(early.poll());
    b.change_config(config(1, ms(1000), true));
    let mut late = task::spawn(b.acquire_permission());
    assert_pending!(late.poll());
    tokio::time::advance(ms(100)).await;
    assert_ready_err!(early.poll());
    assert_pending!(late.poll());
    tokio::time::advance(ms(900)).await;
    assert_ready_err!(late.poll());
    b.change_config(config(1, ms(0), true));
    assert_ready_err!(task::spawn(b.acquire_permission()).poll());
}

// ---------------------------------------------------------------------------
// Send and allocation

fn assert_send<T: Send>(_: &T) {}

#[test]
fn async_calls_are_send() {
    let b = Bulkhead::of_defaults("b");
    assert_send(&b.acquire_permission());
    assert_send(&b.call_async(|| async { Ok::<_, ()>(1) }));
    assert_send(&ChainFuture::new(
        Stack::new()
            .bulkhead(b.part())
            .around(Call(|| async { Ok::<_, Error<()>>(1) })),
    ));
    assert_send(&b.try_acquire_permission().unwrap());
}

#[test]
fn acquire_release_and_calls_allocate_nothing() {
    let b = Bulkhead::of_defaults("b");
    let ((), n) = support::allocations_during(|| {
        for _ in 0..100 {
            drop(b.try_acquire_permission().unwrap());
        }
    });
    assert_eq!(n, 0, "try_acquire_permission + drop");
    let ((), n) = support::allocations_during(|| {
        for i in 0..100 {
            assert_eq!(b.call(|| Ok::<_, ()>(i)), Ok(i));
        }
    });
    assert_eq!(n, 0, "call");
    let ((), n) = support::allocations_during(|| {
        for i in 0..100 {
            let fut = pin!(b.call_async(|| async move { Ok::<_, ()>(i) }));
            let polled = fut.poll(&mut Context::from_waker(Waker::noop()));
            assert_eq!(polled, Poll::Ready(Ok(i)));
        }
    });
    assert_eq!(n, 0, "call_async");
}

// ---------------------------------------------------------------------------
// Registry

#[test]
fn registry_shares_instances_and_applies_named_configs() {
    let clock = ManualClock::new();
    let registry = BulkheadRegistry::builder()
        .default_config(config(10, ms(0), true))
        .configuration("small", config(2, ms(0), false))
        .tags([("team".to_owned(), "inventory".to_owned())].into())
        .clock(clock.clone())
        .build();
    let a = registry.bulkhead("inventory-query");
    let again = registry.bulkhead("inventory-query");
    assert!(Arc::ptr_eq(&a, &again));
    assert_eq!(a.config().max_concurrent_calls(), 10);
    assert_eq!(a.tags().get("team").map(String::as_str), Some("inventory"));

    let small = registry.bulkhead_with_config("payments", "small").unwrap();
    assert_eq!(small.metrics().max_allowed_concurrent_calls(), 2);
    assert!(!small.config().fair_call_handling_enabled());
    assert_eq!(
        registry
            .bulkhead_with_config("orders", "missing")
            .unwrap_err()
            .name(),
        "missing"
    );
    assert!(
        registry
            .add_configuration("default", BulkheadConfig::default())
            .is_err()
    );
    let custom = registry.bulkhead_with("custom", config(1, ms(0), true));
    assert_eq!(custom.config().max_concurrent_calls(), 1);

    let names: Vec<_> = registry.all().iter().map(|b| b.name().to_owned()).collect();
    assert_eq!(names, ["custom", "inventory-query", "payments"]);
    assert!(registry.remove("payments").is_some());
    assert!(registry.find("payments").is_none());
}

#[test]
fn registry_instances_buffer_their_recent_events() {
    let registry = BulkheadRegistry::of_defaults();
    registry
        .add_configuration(
            "tiny",
            BulkheadConfig::builder()
                .max_concurrent_calls(1)
                .event_consumer_buffer_size(2)
                .build()
                .unwrap(),
        )
        .unwrap();
    let b = registry
        .bulkhead_with_config("inventory-query", "tiny")
        .unwrap();
    assert_eq!(b.event_publisher().buffer_capacity(), 2);
    let p = b.try_acquire_permission().unwrap();
    let _ = b.try_acquire_permission().unwrap_err();
    drop(p);
    let recent: Vec<_> = b
        .event_publisher()
        .recent_events()
        .into_iter()
        .map(|e| e.into_kind())
        .collect();
    assert_eq!(recent, [CallRejected, CallFinished]);
}
