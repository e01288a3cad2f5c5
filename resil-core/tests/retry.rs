//! Retry, behaviour by behaviour against Resilience4j 2.2's `RetryImpl` (and
//! where resil differs on purpose, as docs/coming-from-resilience4j.md says),
//! on a `ManualClock` or paused tokio time.

mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil_core::Error;
use resil_core::chain::{Call, Ctx, Stack, SyncNode};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerClassifier};
use resil_core::clock::{Clock, ManualClock, Nanos, TokioClock};
use resil_core::event::EventKind;
use resil_core::registry::RetryRegistry;
use resil_core::retry::MaxRetriesExceeded;
use resil_core::retry::{
    Retry, RetryClassifier, RetryConfig, RetryEvent, RetryEventType, RetryMetrics,
};
use support::retry::{
    ACCEPTED, CLASSIFIED, InvError, call_async_with, call_with, counts, decorate, error_ev, manual,
    retry_ev,
};
use support::{Recorder, ms};

#[global_allocator]
static A: support::CountingAlloc = support::CountingAlloc;

/// `f` through a breaker that records every error.
fn through_breaker<T, E>(
    cb: &CircuitBreaker,
    f: impl FnMut() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    Stack::new()
        .circuit_breaker(cb.part(CircuitBreakerClassifier::new()))
        .around(Call(f))
        .call(&mut Ctx::new())
}

// ---------------------------------------------------------------- 3.8 facts

#[test]
fn three_failures_sleep_500_then_500_and_end_with_one_error_event() {
    let (retry, clock, rec) = manual(RetryConfig::default());
    retry.event_publisher().enable_buffer(10);
    let mut calls = 0;
    let r = retry.call(|| {
        calls += 1;
        Err::<u32, _>("connection refused")
    });
    assert_eq!(r, Err(Error::Inner("connection refused")));
    assert_eq!(calls, 3);
    assert_eq!(clock.now().as_duration(), ms(1000));
    assert_eq!(
        rec.take(),
        [
            retry_ev(1, 500, None),
            retry_ev(2, 500, None),
            error_ev(3, None)
        ]
    );
    // RETRY#1 before the first sleep, RETRY#2 after it, ERROR after the second.
    let at: Vec<Nanos> = retry
        .event_publisher()
        .recent_events()
        .iter()
        .map(|e| e.created_at())
        .collect();
    assert_eq!(
        at,
        [
            Nanos::ZERO,
            Nanos::from_duration(ms(500)),
            Nanos::from_duration(ms(1000))
        ]
    );
    assert_eq!(counts(retry.metrics()), [0, 0, 0, 1, 3]);
}

#[test]
fn a_first_success_publishes_nothing_and_counts_without_retry() {
    let (retry, clock, rec) = manual(RetryConfig::default());
    assert_eq!(retry.call(|| Ok::<_, InvError>(7)), Ok(7));
    assert_eq!(clock.now(), Nanos::ZERO);
    assert!(rec.take().is_empty());
    assert_eq!(counts(retry.metrics()), [1, 0, 0, 0, 1]);
}

#[test]
fn a_success_after_retries_publishes_success_with_the_last_error_kind() {
    let (retry, clock, rec) = manual(RetryConfig::default());
    let mut replies = vec![Ok(3), Err(InvError::Transient), Err(InvError::Fatal)];
    let r = call_with(&retry, &CLASSIFIED, || replies.pop().unwrap());
    assert_eq!(r, Ok(3));
    assert_eq!(clock.now().as_duration(), ms(1000));
    assert_eq!(
        rec.take(),
        [
            retry_ev(1, 500, Some("Fatal")),
            retry_ev(2, 500, Some("Transient")),
            RetryEvent::Success {
                number_of_retry_attempts: 2,
                error_kind: Some("Transient")
            }
        ]
    );
    assert_eq!(counts(retry.metrics()), [0, 1, 0, 0, 3]);
}

#[test]
fn a_non_retryable_error_after_a_retryable_one_counts_as_failed_without_retry() {
    let config = RetryConfig::builder()
        .retry_errors(["Transient"])
        .build()
        .unwrap();
    let (retry, clock, rec) = manual(config);
    let mut replies = vec![Err(InvError::Fatal), Err(InvError::Transient)];
    let r = call_with(&retry, &CLASSIFIED, || replies.pop().unwrap());
    assert_eq!(r, Err(Error::Inner(InvError::Fatal)));
    assert!(replies.is_empty());
    assert_eq!(clock.now().as_duration(), ms(500));
    assert_eq!(
        rec.take(),
        [
            retry_ev(1, 500, Some("Transient")),
            RetryEvent::IgnoredError {
                error_kind: Some("Fatal")
            }
        ]
    );
    assert_eq!(rec.take(), []);
    assert_eq!(counts(retry.metrics()), [0, 0, 1, 0, 2]);
}

#[test]
fn ignore_wins_over_the_retry_list_and_the_predicate() {
    const ALWAYS: RetryClassifier<u32, InvError> = RetryClassifier::classified().retry_on(|_| true);
    let config = RetryConfig::builder()
        .retry_errors(["OutOfStock", "Transient"])
        .ignore_errors(["OutOfStock"])
        .build()
        .unwrap();
    let (retry, _, rec) = manual(config);
    let mut calls = 0;
    let r = call_with(&retry, &ALWAYS, || {
        calls += 1;
        Err(InvError::OutOfStock)
    });
    assert_eq!((r, calls), (Err(Error::Inner(InvError::OutOfStock)), 1));
    let events = rec.take();
    assert_eq!(
        events,
        [RetryEvent::IgnoredError {
            error_kind: Some("OutOfStock")
        }]
    );
    assert_eq!(events[0].number_of_retry_attempts(), 0);
    assert_eq!(counts(retry.metrics()), [0, 0, 1, 0, 1]);
}

#[test]
fn the_retry_list_and_the_predicate_are_alternatives() {
    const FATAL_TOO: RetryClassifier<u32, InvError> =
        RetryClassifier::classified().retry_on(|e| matches!(e, InvError::Fatal));
    let config = RetryConfig::builder()
        .wait_duration(Duration::ZERO)
        .retry_errors(["Transient"])
        .build()
        .unwrap();
    let (retry, _, _) = manual(config);
    let attempts = |error: InvError| {
        let mut calls = 0;
        let _ = call_with(&retry, &FATAL_TOO, || {
            calls += 1;
            Err(error.clone())
        });
        calls
    };
    assert_eq!(attempts(InvError::Transient), 3); // listed
    assert_eq!(attempts(InvError::Fatal), 3); // the predicate
    assert_eq!(attempts(InvError::OutOfStock), 1); // neither

    // A predicate alone restricts retries to what it accepts.
    const ONLY_FATAL: RetryClassifier<u32, InvError> =
        RetryClassifier::new().retry_on(|e| matches!(e, InvError::Fatal));
    let retry = Retry::with_clock(
        "p",
        RetryConfig::builder()
            .wait_duration(Duration::ZERO)
            .build()
            .unwrap(),
        ManualClock::new(),
    );
    let mut calls = 0;
    let _ = call_with(&retry, &ONLY_FATAL, || {
        calls += 1;
        Err(InvError::Transient)
    });
    assert_eq!(calls, 1);
}

#[test]
fn max_attempts_one_never_retries_and_counts_like_resilience4j() {
    let config = RetryConfig::builder().max_attempts(1).build().unwrap();
    let (retry, clock, rec) = manual(config);
    let _ = retry.call(|| Err::<(), _>("boom"));
    assert_eq!(clock.now(), Nanos::ZERO);
    assert_eq!(rec.take(), [error_ev(1, None)]);
    // Resilience4j counts a retryable error at the last attempt as "failed with retry".
    assert_eq!(counts(retry.metrics()), [0, 0, 0, 1, 1]);
}

#[test]
fn a_zero_wait_retries_at_once() {
    let config = RetryConfig::builder()
        .wait_duration(Duration::ZERO)
        .max_attempts(4)
        .build()
        .unwrap();
    let (retry, clock, rec) = manual(config);
    let mut calls = 0;
    let _ = retry.call(|| {
        calls += 1;
        Err::<(), _>(())
    });
    assert_eq!((calls, clock.now()), (4, Nanos::ZERO));
    assert_eq!(
        rec.take(),
        [
            retry_ev(1, 0, None),
            retry_ev(2, 0, None),
            retry_ev(3, 0, None),
            error_ev(4, None)
        ]
    );
}

// ------------------------------------------------ rejections of inner layers

#[test]
fn rejections_of_inner_layers_are_retried_by_default_and_named() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::with_clock("db", Default::default(), clock.clone());
    cb.transition_to_forced_open_state().unwrap();
    let retry = Retry::with_clock("db", RetryConfig::default(), clock.clone());
    let rec = Recorder::attach(retry.event_publisher());
    let mut calls = 0;
    let r = decorate(&retry, &CLASSIFIED, || {
        through_breaker(&cb, || {
            calls += 1;
            Ok(1)
        })
    });
    assert!(matches!(r, Err(Error::CallNotPermitted(_))));
    assert_eq!(calls, 0);
    assert_eq!(
        rec.take(),
        [
            retry_ev(1, 500, Some("CallNotPermitted")),
            retry_ev(2, 500, Some("CallNotPermitted")),
            error_ev(3, Some("CallNotPermitted"))
        ]
    );
    assert_eq!(cb.metrics().number_of_not_permitted_calls(), 3);
}

#[test]
fn rejections_follow_the_kind_lists() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::with_clock("db", Default::default(), clock.clone());
    cb.transition_to_forced_open_state().unwrap();
    let through_cb =
        |retry: &Retry| decorate(retry, &CLASSIFIED, || through_breaker(&cb, || Ok(1)));

    let ignoring = RetryConfig::builder()
        .ignore_errors(["CallNotPermitted"])
        .build()
        .unwrap();
    let retry = Retry::with_clock("ignoring", ignoring, clock.clone());
    let rec = Recorder::attach(retry.event_publisher());
    assert!(matches!(
        through_cb(&retry),
        Err(Error::CallNotPermitted(_))
    ));
    assert_eq!(
        rec.take(),
        [RetryEvent::IgnoredError {
            error_kind: Some("CallNotPermitted")
        }]
    );

    // A retry list that leaves rejections out fails them fast.
    let listing = RetryConfig::builder()
        .retry_errors(["Transient"])
        .build()
        .unwrap();
    let retry = Retry::with_clock("listing", listing, clock.clone());
    let _ = through_cb(&retry);
    assert_eq!(counts(retry.metrics()), [0, 0, 1, 0, 1]);

    // ... and a predicate alone does not apply to them: they stay retried.
    const PREDICATE: RetryClassifier<u32, InvError> = RetryClassifier::new().retry_on(|_| false);
    let retry = Retry::with_clock("predicate", RetryConfig::default(), clock.clone());
    let r = decorate(&retry, &PREDICATE, || {
        Err(Error::MaxRetriesExceeded(MaxRetriesExceeded::new(
            "inner".into(),
            2,
        )))
    });
    assert!(matches!(r, Err(Error::MaxRetriesExceeded(_))));
    assert_eq!(counts(retry.metrics()), [0, 0, 0, 1, 3]);
}

// ------------------------------------------------------- result predicates

#[test]
fn results_that_exhaust_the_attempts_are_returned_and_attempts_counted_exactly() {
    let (retry, clock, rec) = manual(RetryConfig::default());
    let mut calls = 0;
    let r = call_with(&retry, &ACCEPTED, || {
        calls += 1;
        Ok(202)
    });
    assert_eq!((r, calls), (Ok(202), 3));
    assert_eq!(clock.now().as_duration(), ms(1000));
    assert_eq!(
        rec.take(),
        [
            retry_ev(1, 500, None),
            retry_ev(2, 500, None),
            error_ev(3, Some("MaxRetriesExceeded"))
        ]
    );
    // Resilience4j counts 4 attempts here; resil counts the 3 made.
    assert_eq!(counts(retry.metrics()), [0, 0, 0, 1, 3]);
}

#[test]
fn fail_after_max_attempts_fails_once_with_max_retries_exceeded() {
    for config in [
        RetryConfig::builder().fail_after_max_attempts(true),
        // With a retry list Resilience4j adds an IGNORED_ERROR; resil does not.
        RetryConfig::builder()
            .fail_after_max_attempts(true)
            .retry_errors(["Transient"]),
    ] {
        let (retry, clock, rec) = manual(config.build().unwrap());
        let mut calls = 0;
        let r = call_with(&retry, &ACCEPTED, || {
            calls += 1;
            Ok(202)
        });
        match r {
            Err(Error::MaxRetriesExceeded(e)) => {
                assert_eq!((e.name(), e.attempts()), ("inventory-query", 3));
                assert_eq!(
                    e.to_string(),
                    "retry `inventory-query` has exhausted all attempts (3)"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(calls, 3);
        assert_eq!(clock.now().as_duration(), ms(1000));
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
}

#[test]
fn result_exhaustion_after_an_error_reports_that_error_unless_failing() {
    let mut replies = vec![Ok(202), Ok(202), Err(InvError::Transient)];
    let (retry, _, rec) = manual(RetryConfig::default());
    assert_eq!(
        call_with(&retry, &ACCEPTED, || replies.pop().unwrap()),
        Ok(202)
    );
    assert_eq!(
        rec.take(),
        [
            retry_ev(1, 500, Some("Transient")),
            retry_ev(2, 500, None),
            error_ev(3, Some("Transient"))
        ]
    );
}

#[test]
fn an_accepted_result_after_rejected_ones_is_a_success_with_retry() {
    let (retry, _, rec) = manual(RetryConfig::default());
    let mut replies = vec![Ok(200), Ok(202)];
    assert_eq!(
        call_with(&retry, &ACCEPTED, || replies.pop().unwrap()),
        Ok(200)
    );
    assert_eq!(
        rec.take(),
        [
            retry_ev(1, 500, None),
            RetryEvent::Success {
                number_of_retry_attempts: 1,
                error_kind: None
            }
        ]
    );
    assert_eq!(counts(retry.metrics()), [0, 1, 0, 0, 2]);
}

static CONSUMED: Mutex<Vec<(u32, u32)>> = Mutex::new(Vec::new());

fn consume(attempt: u32, value: u32) {
    CONSUMED.lock().unwrap().push((attempt, value));
}

const CONSUMING: RetryClassifier<u32, InvError> = RetryClassifier::classified()
    .retry_on_result(|v| *v >= 100)
    .consume_result_before_retry(consume);

#[tokio::test(start_paused = true)]
async fn results_are_consumed_before_each_retry_but_not_the_last_sync_and_async() {
    let retry = Retry::with_clock("c", RetryConfig::default(), ManualClock::new());
    let mut next = 100;
    let r = call_with(&retry, &CONSUMING, || {
        next += 1;
        Ok(next)
    });
    assert_eq!(r, Ok(103));
    let sync: Vec<_> = CONSUMED.lock().unwrap().drain(..).collect();
    assert_eq!(sync, [(1, 101), (2, 102)]);

    // Resilience4j 2.2 async consumes only the last result; resil matches sync.
    let retry = Retry::with_clock("c", RetryConfig::default(), TokioClock::new());
    let next = AtomicU32::new(100);
    let r = call_async_with(&retry, &CONSUMING, || {
        let v = next.fetch_add(1, Ordering::SeqCst) + 1;
        async move { Ok(v) }
    })
    .await;
    assert_eq!(r, Ok(103));
    let asynchronous: Vec<_> = CONSUMED.lock().unwrap().drain(..).collect();
    assert_eq!(asynchronous, sync);
}

// --------------------------------------------------------- concurrency

#[test]
fn concurrent_calls_count_every_outcome() {
    const PER_THREAD: u32 = 2000;
    let config = RetryConfig::builder()
        .wait_duration(Duration::ZERO)
        .retry_errors(["Transient"])
        .build()
        .unwrap();
    let retry = Retry::with_clock("stress", config, ManualClock::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            let retry = &retry;
            s.spawn(move || {
                for i in 0..PER_THREAD {
                    let mut attempt = 0;
                    let _ = call_with(retry, &CLASSIFIED, || {
                        attempt += 1;
                        match (i % 4, attempt) {
                            (0, _) => Ok(1),                    // success, 1 attempt
                            (1, 1) => Err(InvError::Transient), // success after retry, 2
                            (1, _) => Ok(1),
                            (2, _) => Err(InvError::Fatal), // not retried, 1
                            _ => Err(InvError::Transient),  // exhausted, 3
                        }
                    });
                }
            });
        }
    });
    let quarter = u64::from(PER_THREAD) / 4 * 4;
    assert_eq!(
        counts(retry.metrics()),
        [
            quarter,
            quarter,
            quarter,
            quarter,
            quarter * (1 + 2 + 1 + 3)
        ]
    );
}

// ------------------------------------------------------------- registry

#[test]
fn the_registry_shares_instances_and_applies_named_configs_clock_and_tags() {
    let clock = ManualClock::new();
    let registry = RetryRegistry::builder()
        .clock(clock.clone())
        .configuration(
            "fast",
            RetryConfig::builder()
                .max_attempts(5)
                .wait_duration(ms(10))
                .event_consumer_buffer_size(3)
                .build()
                .unwrap(),
        )
        .tags([("team".to_owned(), "inventory".to_owned())].into())
        .build();
    let a = registry.retry("inventory-query");
    assert!(Arc::ptr_eq(&a, &registry.retry("inventory-query")));
    assert_eq!(a.config().max_attempts(), 3);
    assert_eq!(a.tags()["team"], "inventory");
    assert_eq!(a.event_publisher().buffer_capacity(), 100);

    let fast = registry.retry_with_config("pricing", "fast").unwrap();
    assert_eq!(fast.config().max_attempts(), 5);
    assert_eq!(fast.event_publisher().buffer_capacity(), 3);
    let _ = fast.call(|| Err::<(), _>(()));
    // The registry's clock drives the waits: 4 waits of 10 ms.
    assert_eq!(clock.now().as_duration(), ms(40));
    let kinds: Vec<_> = fast
        .event_publisher()
        .recent_events()
        .iter()
        .map(|e| e.kind().event_type())
        .collect();
    assert_eq!(
        kinds,
        [
            RetryEventType::Retry,
            RetryEventType::Retry,
            RetryEventType::Error
        ]
    );

    let missing = registry.retry_with_config("x", "nope").unwrap_err();
    assert_eq!(missing.name(), "nope");
    let names: Vec<_> = registry.all().iter().map(|r| r.name().to_owned()).collect();
    assert_eq!(names, ["inventory-query", "pricing"]);
    assert!(registry.remove("pricing").is_some());
    assert!(registry.find("pricing").is_none());
    assert!(
        registry
            .add_configuration("default", RetryConfig::default())
            .is_err()
    );
}

// ----------------------------------------------------------- allocations

#[test]
fn the_success_path_allocates_nothing() {
    let retry = Retry::with_clock("alloc", RetryConfig::default(), ManualClock::new());
    let _ = retry.call(|| Ok::<_, ()>(0)); // warm up lazy statics
    let (r, n) = support::allocations_during(|| retry.call(|| Ok::<_, ()>(1)));
    assert_eq!((r, n), (Ok(1), 0));
    let (r, n) = support::allocations_during(|| call_with(&retry, &CLASSIFIED, || Ok(2)));
    assert_eq!((r, n), (Ok(2), 0));

    // Retrying on a ManualClock with nobody listening allocates nothing either.
    let mut calls = 0;
    let (r, n) = support::allocations_during(|| {
        retry.call(|| {
            calls += 1;
            if calls < 3 { Err(()) } else { Ok(3) }
        })
    });
    assert_eq!((r, n), (Ok(3), 0));
}

#[test]
fn the_async_success_path_allocates_nothing() {
    let retry = Retry::with_clock("alloc", RetryConfig::default(), ManualClock::new());
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let (r, n) = support::allocations_during(|| {
        let fut = std::pin::pin!(retry.call_async(|| async { Ok::<_, ()>(1) }));
        fut.poll(&mut cx)
    });
    assert_eq!((r, n), (std::task::Poll::Ready(Ok(1)), 0));
}

// ------------------------------------------------------------- events

#[test]
fn event_types_have_resilience4j_names() {
    let names: Vec<_> = [
        RetryEventType::Retry,
        RetryEventType::Error,
        RetryEventType::Success,
        RetryEventType::IgnoredError,
    ]
    .into_iter()
    .map(RetryEventType::as_str)
    .collect();
    assert_eq!(names, ["RETRY", "ERROR", "SUCCESS", "IGNORED_ERROR"]);
    assert_eq!(RetryMetrics::CALLS_METER, "resilience4j.retry.calls");
    let ignored = RetryEvent::IgnoredError {
        error_kind: Some("Fatal"),
    };
    assert_eq!(ignored.number_of_retry_attempts(), 0);
    assert_eq!(ignored.error_kind(), Some("Fatal"));
}

#[test]
fn subscribing_to_one_kind_sees_only_it() {
    let (retry, _, _) = manual(RetryConfig::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    retry.event_publisher().on(RetryEventType::Retry, move |e| {
        sink.lock()
            .unwrap()
            .push(e.kind().number_of_retry_attempts())
    });
    let _ = retry.call(|| Err::<(), _>(()));
    assert_eq!(*seen.lock().unwrap(), [1, 2]);
}
