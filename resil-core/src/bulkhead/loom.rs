//! loom models of the bulkhead's permits: two or three threads never hold more
//! permits than the limit and never lose one, also while the limit shrinks or
//! grows (a new configuration's, or an adaptive limit's as calls finish) and
//! while waiters queue, are granted permits, or leave; no wakeup is lost; and
//! in fair mode no newcomer overtakes a queued waiter.
//!
//! Run: `RUSTFLAGS="--cfg resil_loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p resil-core --lib --release loom`

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use loom::thread;

use super::{Bulkhead, BulkheadConfig, LimitAlgorithm, Sample};
use crate::clock::ManualClock;
use crate::sync::{AtomicU32, Ordering};

/// Wakes a loom thread parked in [`block_on`]. The flag carries the wakeup
/// when the thread is blocked on a mutex at that moment: loom 0.7 then drops
/// the unpark instead of keeping it for the next `park` as std does.
struct Unpark {
    thread: thread::Thread,
    woken: crate::sync::AtomicBool,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// Polls `future` on this loom thread, parking between polls: a lost wakeup
/// leaves the thread parked forever, which loom reports as a deadlock.
fn block_on<F: Future>(future: F) -> F::Output {
    let unpark = Arc::new(Unpark {
        thread: thread::current(),
        woken: crate::sync::AtomicBool::new(false),
    });
    let waker = Waker::from(unpark.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        if !unpark.woken.swap(false, Ordering::SeqCst) {
            thread::park();
        }
    }
}

fn bulkhead(max: u32, fair: bool) -> Bulkhead {
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(max)
        .fair_call_handling_enabled(fair)
        .build()
        .unwrap();
    Bulkhead::with_clock("loom", config, ManualClock::new())
}

/// Counts the calls in flight and checks them against `limit` while a permit is held.
struct InFlight {
    now: AtomicU32,
    limit: u32,
}

impl InFlight {
    fn new(limit: u32) -> Arc<Self> {
        Arc::new(InFlight {
            now: AtomicU32::new(0),
            limit,
        })
    }

    fn run(&self) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        assert!(n <= self.limit, "{n} calls in flight, limit {}", self.limit);
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

fn try_call(b: &Bulkhead, in_flight: &InFlight) {
    if let Ok(permit) = b.try_acquire_permission() {
        in_flight.run();
        drop(permit);
    }
}

#[test]
fn loom_three_callers_never_exceed_one_permit() {
    loom::model(|| {
        let b = bulkhead(1, true);
        let in_flight = InFlight::new(1);
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (b, in_flight) = (b.clone(), in_flight.clone());
                thread::spawn(move || try_call(&b, &in_flight))
            })
            .collect();
        try_call(&b, &in_flight);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(b.metrics().available_concurrent_calls(), 1);
    });
}

#[test]
fn loom_a_shrink_during_calls_loses_no_permit() {
    loom::model(|| {
        let b = bulkhead(2, true);
        let in_flight = InFlight::new(2);
        let caller = {
            let (b, in_flight) = (b.clone(), in_flight.clone());
            thread::spawn(move || try_call(&b, &in_flight))
        };
        let shrinker = {
            let b = b.clone();
            thread::spawn(move || {
                b.change_config(
                    BulkheadConfig::builder()
                        .max_concurrent_calls(1)
                        .build()
                        .unwrap(),
                );
                // After the shrink this thread's own call sees the new limit
                // minus any call still in flight.
                if let Ok(permit) = b.try_acquire_permission() {
                    assert_eq!(b.inner.sem.available(), 0);
                    drop(permit);
                }
            })
        };
        try_call(&b, &in_flight);
        caller.join().unwrap();
        shrinker.join().unwrap();
        let m = b.metrics();
        assert_eq!(
            (
                m.available_concurrent_calls(),
                m.max_allowed_concurrent_calls()
            ),
            (1, 1)
        );
        assert_eq!(b.inner.sem.available(), 1);
    });
}

#[test]
fn loom_a_grow_wakes_a_waiter() {
    loom::model(|| {
        let b = bulkhead(0, true);
        let waiter = {
            let b = b.clone();
            thread::spawn(move || {
                block_on(b.inner.sem.acquire());
                b.inner.sem.release();
            })
        };
        b.change_config(
            BulkheadConfig::builder()
                .max_concurrent_calls(1)
                .build()
                .unwrap(),
        );
        waiter.join().unwrap();
        assert_eq!(b.inner.sem.available(), 1);
        assert_eq!(b.inner.sem.waiting(), 0);
    });
}

fn waiter_is_served(fair: bool) {
    loom::model(move || {
        let b = bulkhead(1, fair);
        let in_flight = InFlight::new(1);
        let held = b.try_acquire_permission().unwrap();
        let waiter = {
            let (b, in_flight) = (b.clone(), in_flight.clone());
            thread::spawn(move || {
                block_on(b.inner.sem.acquire());
                in_flight.run();
                b.inner.sem.release();
            })
        };
        let newcomer = {
            let (b, in_flight) = (b.clone(), in_flight.clone());
            thread::spawn(move || try_call(&b, &in_flight))
        };
        in_flight.run(); // the call `held` stands for
        drop(held);
        waiter.join().unwrap();
        newcomer.join().unwrap();
        assert_eq!(b.inner.sem.available(), 1);
        assert_eq!(b.inner.sem.waiting(), 0);
    });
}

#[test]
fn loom_fair_waiter_is_served_and_newcomers_stay_within_the_limit() {
    waiter_is_served(true);
}

#[test]
fn loom_unfair_waiter_is_served_and_newcomers_stay_within_the_limit() {
    waiter_is_served(false);
}

fn waiter_that_leaves_steals_nothing(fair: bool) {
    loom::model(move || {
        let b = bulkhead(1, fair);
        let held = b.try_acquire_permission().unwrap();
        let leaver = {
            let b = b.clone();
            thread::spawn(move || {
                let mut acquire = b.inner.sem.acquire();
                let mut cx = Context::from_waker(Waker::noop());
                if Pin::new(&mut acquire).poll(&mut cx).is_ready() {
                    b.inner.sem.release();
                }
                drop(acquire); // leaves the queue, or passes on a permit granted meanwhile
            })
        };
        drop(held);
        leaver.join().unwrap();
        assert_eq!(b.inner.sem.available(), 1);
        assert_eq!(b.inner.sem.waiting(), 0);
        assert!(b.try_acquire_permission().is_ok());
    });
}

#[test]
fn loom_fair_waiter_that_leaves_steals_nothing() {
    waiter_that_leaves_steals_nothing(true);
}

#[test]
fn loom_unfair_waiter_that_leaves_steals_nothing() {
    waiter_that_leaves_steals_nothing(false);
}

#[test]
fn loom_fair_newcomer_never_overtakes_a_queued_waiter() {
    loom::model(|| {
        let b = bulkhead(1, true);
        let held = b.try_acquire_permission().unwrap();
        let served = Arc::new(crate::sync::AtomicBool::new(false));
        let waiter = {
            let (b, served) = (b.clone(), served.clone());
            thread::spawn(move || {
                block_on(b.inner.sem.acquire());
                served.store(true, Ordering::SeqCst);
                b.inner.sem.release();
            })
        };
        let newcomer = {
            let (b, served) = (b.clone(), served.clone());
            thread::spawn(move || {
                while b.inner.sem.waiting() == 0 && !served.load(Ordering::SeqCst) {
                    thread::yield_now();
                }
                // Arrived after the waiter queued: it may only get a permit
                // once the waiter has had its own, even in the instant between
                // a release and the hand-over.
                if let Ok(permit) = b.try_acquire_permission() {
                    assert!(
                        served.load(Ordering::SeqCst),
                        "a newcomer overtook a waiter"
                    );
                    drop(permit);
                }
            })
        };
        drop(held);
        waiter.join().unwrap();
        newcomer.join().unwrap();
        assert_eq!(b.inner.sem.available(), 1);
    });
}

/// An AIMD bulkhead between 1 and `max` calls, starting at `max`, whose
/// limit moves at every call that ends after the last one.
fn adaptive(max: u32, clock: &ManualClock) -> Bulkhead {
    let config = BulkheadConfig::builder()
        .limit_algorithm(LimitAlgorithm::Aimd)
        .max_concurrent_calls(max)
        .build()
        .unwrap();
    let b = Bulkhead::with_clock("loom", config, clock.clone());
    crate::sync::short_lock(&b.inner.limiter).sample_every_call();
    b
}

/// A call through `b` that takes a nanosecond and ends with `sample`.
fn timed_call(b: &Bulkhead, clock: &ManualClock, in_flight: &InFlight, sample: Sample) {
    if let Ok(permit) = b.try_acquire_permission() {
        in_flight.run();
        clock.advance(std::time::Duration::from_nanos(1));
        permit.finish_with(sample);
    }
}

/// The semaphore holds exactly the limit once every call is back, and the
/// limit the metrics show is the limiter's.
fn assert_settled(b: &Bulkhead, min: u32, max: u32) {
    let limit = crate::sync::short_lock(&b.inner.limiter).limit();
    assert!((min..=max).contains(&limit), "limit {limit}");
    assert_eq!(b.metrics().max_allowed_concurrent_calls(), limit);
    assert_eq!(b.inner.sem.available(), i64::from(limit));
}

#[test]
fn loom_an_adaptive_limit_moves_as_calls_finish_and_loses_no_permit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let b = adaptive(2, &clock);
        let in_flight = InFlight::new(2);
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (b, clock, in_flight) = (b.clone(), clock.clone(), in_flight.clone());
                thread::spawn(move || timed_call(&b, &clock, &in_flight, Sample::Dropped))
            })
            .collect();
        timed_call(&b, &clock, &in_flight, Sample::Success);
        for t in threads {
            t.join().unwrap();
        }
        assert_settled(&b, 1, 2);
    });
}

#[test]
fn loom_a_new_configuration_while_an_adaptive_limit_moves_loses_no_permit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let b = adaptive(2, &clock);
        let in_flight = InFlight::new(3);
        let caller = {
            let (b, clock, in_flight) = (b.clone(), clock.clone(), in_flight.clone());
            thread::spawn(move || timed_call(&b, &clock, &in_flight, Sample::Dropped))
        };
        let reload = {
            let b = b.clone();
            thread::spawn(move || {
                b.change_config(
                    BulkheadConfig::builder()
                        .limit_algorithm(LimitAlgorithm::Gradient2)
                        .max_concurrent_calls(3)
                        .build()
                        .unwrap(),
                );
            })
        };
        timed_call(&b, &clock, &in_flight, Sample::Dropped);
        caller.join().unwrap();
        reload.join().unwrap();
        // Gradient2 continues from the limit AIMD reached; it has seen no
        // window of its own, or the one a call closed after the change.
        assert_settled(&b, 1, 3);
    });
}
