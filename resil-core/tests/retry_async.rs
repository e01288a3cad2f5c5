//! Retry of async calls on paused tokio time: the waits, failing after the
//! last attempt, dropping a call during a backoff or an attempt, futures that
//! are `Send`; and panics in sync and async attempts.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use resil_core::Error;
use resil_core::chain::{Call, ChainFuture, Stack};
use resil_core::clock::{Clock, TokioClock};
use resil_core::retry::{Retry, RetryConfig};
use support::retry::{
    ACCEPTED, CLASSIFIED, InvError, call_async_with, counts, error_ev, manual, retry_ev,
};
use support::{Recorder, ms};

// ----------------------------------------------------------------- async

#[tokio::test(start_paused = true)]
async fn async_three_failures_wait_on_tokio_time() {
    let clock = TokioClock::new();
    let retry = Retry::with_clock("a", RetryConfig::default(), clock.clone());
    let rec = Recorder::attach(retry.event_publisher());
    let calls = AtomicU32::new(0);
    let r = retry
        .call_async(|| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err::<u32, _>("refused") }
        })
        .await;
    assert_eq!(r, Err(Error::Inner("refused")));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(clock.now().as_duration(), ms(1000));
    assert_eq!(
        rec.take(),
        [
            retry_ev(1, 500, None),
            retry_ev(2, 500, None),
            error_ev(3, None)
        ]
    );
    assert_eq!(counts(retry.metrics()), [0, 0, 0, 1, 3]);
}

#[tokio::test(start_paused = true)]
async fn async_fail_after_max_attempts_fails_once() {
    let config = RetryConfig::builder()
        .fail_after_max_attempts(true)
        .build()
        .unwrap();
    let retry = Retry::with_clock("a", config, TokioClock::new());
    let rec = Recorder::attach(retry.event_publisher());
    let r = call_async_with(&retry, &ACCEPTED, || async { Ok(202) }).await;
    assert!(matches!(r, Err(Error::MaxRetriesExceeded(_))));
    assert_eq!(
        rec.take(),
        [
            retry_ev(1, 500, None),
            retry_ev(2, 500, None),
            error_ev(3, Some("MaxRetriesExceeded"))
        ]
    );
    assert_eq!(counts(retry.metrics()), [0, 0, 0, 1, 3]);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_call_during_the_backoff_stops_it_and_keeps_counts_consistent() {
    let retry = Retry::with_clock("a", RetryConfig::default(), TokioClock::new());
    let rec = Recorder::attach(retry.event_publisher());
    let held = Arc::new(());
    let calls = Arc::new(AtomicU32::new(0));
    let (h, c) = (held.clone(), calls.clone());
    let mut task = tokio_test::task::spawn(retry.call_async(move || {
        c.fetch_add(1, Ordering::SeqCst);
        let h = h.clone();
        async move {
            let _h = h;
            Err::<(), _>("refused")
        }
    }));
    tokio_test::assert_pending!(task.poll()); // sleeping after the first failure
    assert_eq!(Arc::strong_count(&held), 2); // only the closure holds it now
    drop(task);
    assert_eq!(Arc::strong_count(&held), 1);
    tokio::time::advance(ms(10_000)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(rec.take(), [retry_ev(1, 500, None)]);
    // One attempt was made and seen; the call itself never ended.
    assert_eq!(counts(retry.metrics()), [0, 0, 0, 0, 1]);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_call_during_an_attempt_stops_it_and_keeps_counts_consistent() {
    let retry = Retry::with_clock("a", RetryConfig::default(), TokioClock::new());
    let rec = Recorder::attach(retry.event_publisher());
    let held = Arc::new(());
    let calls = Arc::new(AtomicU32::new(0));
    let (h, c) = (held.clone(), calls.clone());
    let mut task = tokio_test::task::spawn(retry.call_async(move || {
        let n = c.fetch_add(1, Ordering::SeqCst);
        let h = h.clone();
        async move {
            let _h = h;
            if n == 0 {
                Err("refused")
            } else {
                std::future::pending::<Result<(), &str>>().await
            }
        }
    }));
    tokio_test::assert_pending!(task.poll());
    tokio::time::advance(ms(500)).await;
    assert!(task.is_woken());
    tokio_test::assert_pending!(task.poll()); // the second attempt hangs
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(Arc::strong_count(&held), 3); // closure + the hanging attempt
    drop(task);
    assert_eq!(Arc::strong_count(&held), 1);
    assert_eq!(rec.take(), [retry_ev(1, 500, None)]);
    assert_eq!(counts(retry.metrics()), [0, 0, 0, 0, 1]);

    // The retry is unaffected for the next call.
    assert_eq!(retry.call_async(|| async { Ok::<_, ()>(5) }).await, Ok(5));
    assert_eq!(counts(retry.metrics()), [1, 0, 0, 0, 2]);
}

#[test]
fn async_futures_are_send_when_the_calls_are() {
    fn assert_send<T: Send>(_: &T) {}
    let retry = Retry::of_defaults("send");
    let f = retry.call_async(|| async { Ok::<u32, String>(1) });
    assert_send(&f);
    let f = call_async_with(&retry, &ACCEPTED, || async { Ok(1) });
    assert_send(&f);
    let f = ChainFuture::new(
        Stack::new()
            .retry(retry.part(&CLASSIFIED))
            .around(Call(|| async { Ok::<u32, Error<InvError>>(1) })),
    );
    assert_send(&f);
    // A non-Send result type does not make the future non-Send: it is never
    // held across the backoff.
    let f = retry.call_async(|| async { Ok::<std::rc::Rc<u32>, ()>(std::rc::Rc::new(1)) });
    assert_send(&f);
}

// ----------------------------------------------------------------- panics

#[test]
fn a_panic_in_an_attempt_resumes_and_counts_as_a_failure() {
    let (retry, _, rec) = manual(RetryConfig::default());
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        retry.call(|| -> Result<(), ()> { panic!("attempt bug") })
    }));
    assert!(caught.is_err());
    assert_eq!(rec.take(), [error_ev(1, Some("panic"))]);
    assert_eq!(counts(retry.metrics()), [0, 0, 1, 0, 1]);

    let mut calls = 0;
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        retry.call(|| -> Result<(), ()> {
            calls += 1;
            if calls == 1 {
                Err(())
            } else {
                panic!("second attempt bug")
            }
        })
    }));
    assert!(caught.is_err());
    assert_eq!(calls, 2);
    assert_eq!(
        rec.take(),
        [retry_ev(1, 500, None), error_ev(2, Some("panic"))]
    );
    assert_eq!(counts(retry.metrics()), [0, 0, 1, 1, 3]);
    // Still usable afterwards.
    assert_eq!(retry.call(|| Ok::<_, ()>(1)), Ok(1));
}

#[tokio::test(start_paused = true)]
async fn an_async_panic_resumes_and_counts_as_a_failure() {
    let retry = Retry::with_clock("a", RetryConfig::default(), TokioClock::new());
    async fn boom() -> Result<(), ()> {
        panic!("attempt bug")
    }
    let r = retry.clone();
    let joined = tokio::spawn(async move { r.call_async(boom).await }).await;
    assert!(joined.unwrap_err().is_panic());
    assert_eq!(counts(retry.metrics()), [0, 0, 1, 0, 1]);
}
