//! Cancellation and panics in the semaphore bulkhead: a waiter or a call
//! dropped at any point leaves no trace and passes its permit on, and a panic
//! in a call, sync or async, gives the permit back.

mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU32, Ordering};

use resil_core::Error;
use resil_core::bulkhead::{Bulkhead, BulkheadEvent};
use resil_core::chain::{Call, ChainFuture, Stack};
use resil_core::clock::{ManualClock, TokioClock};
use tokio_test::{assert_pending, assert_ready_ok, task};

use BulkheadEvent::{CallFinished, CallPermitted};
use support::bulkhead::{available, config, waiting};
use support::{Recorder, ms};

#[tokio::test(start_paused = true)]
async fn a_queued_waiter_dropped_leaves_no_trace() {
    let b = Bulkhead::with_clock("b", config(1, ms(10_000), true), TokioClock::new());
    let rec = Recorder::attach(b.event_publisher());
    let held = b.try_acquire_permission().unwrap();
    let mut first = task::spawn(b.acquire_permission());
    let mut second = task::spawn(b.acquire_permission());
    assert_pending!(first.poll());
    assert_pending!(second.poll());
    drop(first);
    assert_eq!(waiting(&b), 1);
    drop(held);
    assert!(second.is_woken());
    let p = assert_ready_ok!(second.poll());
    assert_eq!((available(&b), waiting(&b)), (0, 0));
    drop(p);
    assert_eq!(available(&b), 1);
    assert_eq!(
        rec.take(),
        [CallPermitted, CallFinished, CallPermitted, CallFinished]
    );
}

#[tokio::test(start_paused = true)]
async fn a_waiter_dropped_after_being_granted_passes_the_permit_on() {
    let b = Bulkhead::with_clock("b", config(1, ms(10_000), true), TokioClock::new());
    let rec = Recorder::attach(b.event_publisher());
    let held = b.try_acquire_permission().unwrap();
    let mut first = task::spawn(b.acquire_permission());
    let mut second = task::spawn(b.acquire_permission());
    assert_pending!(first.poll());
    assert_pending!(second.poll());
    drop(held); // granted to `first`, which is dropped before it looks
    drop(first);
    assert!(second.is_woken());
    drop(assert_ready_ok!(second.poll()));
    assert_eq!((available(&b), waiting(&b)), (1, 0));
    // The dropped waiter never had a call: no event of its own.
    assert_eq!(
        rec.take(),
        [CallPermitted, CallFinished, CallPermitted, CallFinished]
    );
}

#[tokio::test(start_paused = true)]
async fn a_permit_held_across_an_await_comes_back_when_the_call_is_dropped() {
    let b = Bulkhead::with_clock("b", config(2, ms(0), true), TokioClock::new());
    let rec = Recorder::attach(b.event_publisher());
    let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
    let mut call = task::spawn(b.call_async(|| async move { rx.await.map_err(|_| "closed") }));
    assert_pending!(call.poll());
    assert_eq!(available(&b), 1);
    drop(call); // cancelled mid-way, at the user's await point
    assert_eq!(available(&b), 2);
    drop(tx);
    assert_eq!(rec.take(), [CallPermitted, CallFinished]);
}

#[tokio::test(start_paused = true)]
async fn a_call_cancelled_while_waiting_for_its_permit_takes_nothing() {
    let b = Bulkhead::with_clock("b", config(1, ms(10_000), true), TokioClock::new());
    let held = b.try_acquire_permission().unwrap();
    let ran = AtomicU32::new(0);
    let mut call = task::spawn(ChainFuture::new(Stack::new().bulkhead(b.part()).around(
        Call(|| async {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error<()>>(())
        }),
    )));
    assert_pending!(call.poll());
    tokio::time::advance(ms(50)).await;
    assert_pending!(call.poll());
    assert_eq!(waiting(&b), 1);
    drop(call);
    assert_eq!(waiting(&b), 0);
    drop(held);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!((available(&b), waiting(&b)), (1, 0));
}

#[test]
fn a_panic_in_the_call_gives_the_permit_back_and_resumes() {
    let b = Bulkhead::with_clock("b", config(1, ms(0), true), ManualClock::new());
    let rec = Recorder::attach(b.event_publisher());
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        let _ = b.call(|| -> Result<(), ()> { panic!("inventory exploded") });
    }));
    let payload = panicked.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"inventory exploded"));
    assert_eq!(available(&b), 1);
    assert_eq!(rec.take(), [CallPermitted, CallFinished]);
    assert_eq!(b.call(|| Ok::<_, ()>(7)), Ok(7));
}

#[test]
fn a_panic_while_polling_an_async_call_gives_the_permit_back() {
    let b = Bulkhead::with_clock("b", config(1, ms(0), true), ManualClock::new());
    let mut call = task::spawn(b.call_async(|| async {
        tokio::task::yield_now().await;
        if true {
            panic!("inventory exploded");
        }
        Ok::<_, ()>(())
    }));
    assert_pending!(call.poll());
    assert_eq!(available(&b), 0);
    let panicked = catch_unwind(AssertUnwindSafe(|| call.poll()));
    assert!(panicked.is_err());
    // Unwinding out of the future dropped the permit it held.
    assert_eq!(available(&b), 1);
    drop(call);
    assert_eq!(available(&b), 1);
}
