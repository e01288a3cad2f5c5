//! Retry, behaviour by behaviour against Resilience4j 2.2's `RetryImpl` (and
//! where resil differs on purpose, as docs/coming-from-resilience4j.md says),
//! on a `ManualClock` or paused tokio time.

mod support;

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use resil_core::chain::{Call, ChainFuture, Ctx, Lift, Stack, SyncNode};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerClassifier};
use resil_core::clock::{Clock, ManualClock, Nanos, TokioClock};
use resil_core::event::EventKind;
use resil_core::registry::RetryRegistry;
use resil_core::retry::MaxRetriesExceeded;
use resil_core::retry::{
    IntervalBiFunction, IntervalFunction, Retry, RetryClassifier, RetryConfig, RetryEvent,
    RetryEventType, RetryMetrics,
};
use resil_core::{Classify, Error};
use support::Recorder;

#[global_allocator]
static A: support::CountingAlloc = support::CountingAlloc;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn retry_ev(n: u32, wait: u64, kind: Option<&'static str>) -> RetryEvent {
    RetryEvent::Retry {
        number_of_retry_attempts: n,
        wait_interval: ms(wait),
        error_kind: kind,
    }
}

fn error_ev(n: u32, kind: Option<&'static str>) -> RetryEvent {
    RetryEvent::Error {
        number_of_retry_attempts: n,
        error_kind: kind,
    }
}

/// `[successful without, successful with, failed without, failed with, total attempts]`.
fn counts(m: RetryMetrics) -> [u64; 5] {
    [
        m.number_of_successful_calls_without_retry_attempt(),
        m.number_of_successful_calls_with_retry_attempt(),
        m.number_of_failed_calls_without_retry_attempt(),
        m.number_of_failed_calls_with_retry_attempt(),
        m.number_of_total_calls(),
    ]
}

/// `f` through the retry alone, classified by `c`.
fn call_with<T, E>(
    retry: &Retry,
    c: &RetryClassifier<T, E>,
    f: impl FnMut() -> Result<T, E>,
) -> Result<T, Error<E>> {
    Stack::new()
        .retry(retry.part(c))
        .around(Lift(f))
        .call(&mut Ctx::new())
}

/// `f`, which fails with `resil::Error` (an inner layer's), through the
/// retry alone.
fn decorate<T, E>(
    retry: &Retry,
    c: &RetryClassifier<T, E>,
    f: impl FnMut() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    Stack::new()
        .retry(retry.part(c))
        .around(Call(f))
        .call(&mut Ctx::new())
}

/// The futures that `f` returns through the retry alone; the first attempt
/// starts now.
fn call_async_with<'a, T, E, F, Fut>(
    retry: &'a Retry,
    c: &'a RetryClassifier<T, E>,
    f: F,
) -> impl Future<Output = Result<T, Error<E>>> + use<'a, T, E, F, Fut>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    ChainFuture::new(Stack::new().retry(retry.part(c)).around(Lift(f)))
}

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

fn manual(config: RetryConfig) -> (Retry, ManualClock, Recorder<RetryEvent>) {
    let clock = ManualClock::new();
    let retry = Retry::with_clock("inventory-query", config, clock.clone());
    let rec = Recorder::attach(retry.event_publisher());
    (retry, clock, rec)
}

#[derive(Debug, Clone, PartialEq)]
enum InvError {
    Transient,
    Fatal,
    OutOfStock,
    Throttled { retry_after: Duration },
}

impl Classify for InvError {
    const KINDS: &'static [&'static str] = &["Transient", "Fatal", "OutOfStock", "Throttled"];
    fn kind(&self) -> &'static str {
        match self {
            InvError::Transient => "Transient",
            InvError::Fatal => "Fatal",
            InvError::OutOfStock => "OutOfStock",
            InvError::Throttled { .. } => "Throttled",
        }
    }
}

const CLASSIFIED: RetryClassifier<u32, InvError> = RetryClassifier::classified();

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

const ACCEPTED: RetryClassifier<u32, InvError> =
    RetryClassifier::classified().retry_on_result(|status| *status == 202);

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

// ------------------------------------------------------------ interval waits

#[test]
fn exponential_waits_are_observed_on_the_clock() {
    let config = RetryConfig::builder()
        .max_attempts(6)
        .interval_function(IntervalFunction::of_exponential_backoff(ms(500), 1.5).unwrap())
        .build()
        .unwrap();
    let (retry, clock, rec) = manual(config);
    let _ = retry.call(|| Err::<(), _>(()));
    let waits: Vec<_> = rec
        .take()
        .into_iter()
        .filter_map(|e| match e {
            RetryEvent::Retry { wait_interval, .. } => Some(wait_interval.as_millis()),
            _ => None,
        })
        .collect();
    assert_eq!(waits, [500, 750, 1125, 1687, 2530]);
    assert_eq!(
        clock.now().as_duration(),
        ms(500 + 750 + 1125 + 1687 + 2530)
    );
}

#[test]
fn capped_exponential_waits_stop_at_the_cap() {
    let config = RetryConfig::builder()
        .max_attempts(5)
        .interval_function(
            IntervalFunction::of_exponential_backoff_with_max(ms(100), 10.0, ms(5000)).unwrap(),
        )
        .build()
        .unwrap();
    let (retry, clock, _) = manual(config);
    let _ = retry.call(|| Err::<(), _>(()));
    assert_eq!(clock.now().as_duration(), ms(100 + 1000 + 5000 + 5000));
}

#[test]
fn randomized_waits_stay_within_the_factor() {
    let config = RetryConfig::builder()
        .max_attempts(2)
        .interval_function(IntervalFunction::of_randomized(ms(1000), 0.5).unwrap())
        .build()
        .unwrap();
    let (retry, clock, _) = manual(config);
    let (mut lo, mut hi) = (u128::MAX, 0);
    for _ in 0..2000 {
        let before = clock.now();
        let _ = retry.call(|| Err::<(), _>(()));
        let waited = clock.now().saturating_duration_since(before).as_millis();
        lo = lo.min(waited);
        hi = hi.max(waited);
    }
    assert!((500..=1500).contains(&lo) && (500..=1500).contains(&hi));
    assert!(hi - lo > 500, "2000 draws should spread: {lo}..{hi}");
}

fn throttled_waits(
    retry: &Retry,
    clock: &ManualClock,
    rec: &Recorder<RetryEvent>,
    classifier: &RetryClassifier<u32, InvError>,
) -> Vec<u128> {
    let mut replies = vec![
        Ok(1),
        Err(InvError::Transient),
        Err(InvError::Throttled {
            retry_after: ms(1234),
        }),
    ];
    let before = clock.now();
    assert_eq!(
        call_with(retry, classifier, || replies.pop().unwrap()),
        Ok(1)
    );
    let waits: Vec<u128> = rec
        .take()
        .into_iter()
        .filter_map(|e| match e {
            RetryEvent::Retry { wait_interval, .. } => Some(wait_interval.as_millis()),
            _ => None,
        })
        .collect();
    assert_eq!(
        clock.now().saturating_duration_since(before).as_millis(),
        waits.iter().sum::<u128>()
    );
    waits
}

#[test]
fn a_config_bi_function_honours_retry_after_exactly_and_jitters_the_rest() {
    let jitter = IntervalFunction::of_exponential_random_backoff(ms(1000), 2.0, 0.5).unwrap();
    let config = RetryConfig::builder()
        .interval_bi_function(IntervalBiFunction::new(
            move |attempt, outcome| match outcome.downcast_error::<InvError>() {
                Some(InvError::Throttled { retry_after }) => *retry_after,
                _ => jitter.apply(attempt),
            },
        ))
        .build()
        .unwrap();
    let clock = ManualClock::new();
    let retry = Retry::with_clock("api", config, clock.clone());
    let rec = Recorder::attach(retry.event_publisher());
    const SHARED: RetryClassifier<u32, InvError> = RetryClassifier::classified().downcastable();
    for _ in 0..200 {
        let waits = throttled_waits(&retry, &clock, &rec, &SHARED);
        assert_eq!(waits[0], 1234, "never jittered");
        assert!((1000..=3000).contains(&waits[1]), "{waits:?}"); // 2000 ± 50 %
    }
    // Without `downcastable` the function sees only the kind, so it falls back.
    let waits = throttled_waits(&retry, &clock, &rec, &CLASSIFIED);
    assert!((500..=1500).contains(&waits[0]), "{waits:?}");
}

#[test]
fn a_typed_classifier_interval_overrides_the_config_for_what_it_answers() {
    const TYPED: RetryClassifier<u32, InvError> =
        RetryClassifier::classified().interval(|_, outcome| match outcome {
            Err(Error::Inner(InvError::Throttled { retry_after })) => Some(*retry_after),
            _ => None,
        });
    let config = RetryConfig::builder()
        .interval_function(IntervalFunction::of_randomized(ms(300), 0.9).unwrap())
        .build()
        .unwrap();
    let clock = ManualClock::new();
    let retry = Retry::with_clock("api", config, clock.clone());
    let rec = Recorder::attach(retry.event_publisher());
    for _ in 0..200 {
        let waits = throttled_waits(&retry, &clock, &rec, &TYPED);
        assert_eq!(waits[0], 1234);
        assert!((30..=570).contains(&waits[1]), "{waits:?}");
    }
}

#[test]
fn a_bi_function_sees_rejected_results_and_rejections() {
    const SHARED: RetryClassifier<u32, InvError> = RetryClassifier::classified()
        .retry_on_result(|v| *v == 202)
        .downcastable();
    let config = RetryConfig::builder()
        .max_attempts(4)
        .interval_bi_function(IntervalBiFunction::new(|attempt, outcome| {
            if let Some(v) = outcome.downcast_result::<u32>() {
                ms(u64::from(*v))
            } else if outcome
                .downcast_error::<resil_core::retry::MaxRetriesExceeded>()
                .is_some()
            {
                ms(7)
            } else {
                ms(u64::from(attempt))
            }
        }))
        .build()
        .unwrap();
    let (retry, clock, rec) = manual(config);
    let mut replies = vec![
        Ok(1),
        Err(Error::Inner(InvError::Transient)),
        Err(Error::MaxRetriesExceeded(MaxRetriesExceeded::new(
            "inner".into(),
            1,
        ))),
        Ok(202),
    ];
    assert_eq!(decorate(&retry, &SHARED, || replies.pop().unwrap()), Ok(1));
    assert_eq!(
        rec.take()[..3],
        [
            retry_ev(1, 202, None),
            retry_ev(2, 7, Some("MaxRetriesExceeded")),
            retry_ev(3, 3, Some("Transient"))
        ]
    );
    assert_eq!(clock.now().as_duration(), ms(212));
}

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

// ------------------------------------------------------------- proptest

fn exact_ms(f: &IntervalFunction, n: u32) -> u64 {
    u64::try_from(f.apply(n).as_millis()).unwrap()
}

/// The randomization bounds Resilience4j draws from: `[x - f·x, x + f·x]`,
/// truncated to whole milliseconds.
fn jitter_bounds(x: u64, factor: f64) -> (u64, u64) {
    let delta = factor * x as f64;
    ((x as f64 - delta) as u64, (x as f64 + delta) as u64)
}

fn attempts() -> impl Strategy<Value = u32> {
    prop_oneof![1u32..64, Just(u32::MAX), Just(u32::MAX - 1), any::<u32>()]
}

fn initial_ms() -> impl Strategy<Value = u64> {
    prop_oneof![1u64..10_000, Just(u64::MAX), Just(u64::MAX / 2), 1u64..]
}

fn multipliers() -> impl Strategy<Value = f64> {
    prop_oneof![
        1.0f64..3.0,
        Just(1.0),
        Just(f64::MAX),
        1e-300f64..1.0,
        Just(f64::MIN_POSITIVE),
        1.0f64..1e300
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn constant_intervals_are_constant(ms_ in initial_ms(), n in attempts()) {
        let f = IntervalFunction::of(Duration::from_millis(ms_)).unwrap();
        prop_assert_eq!(exact_ms(&f, n), ms_);
    }

    #[test]
    fn exponential_intervals_are_monotone_and_never_overflow(
        initial in initial_ms(), m in multipliers(), n in attempts()
    ) {
        let f = IntervalFunction::of_exponential_backoff(Duration::from_millis(initial), m).unwrap();
        let v = exact_ms(&f, n);
        // Compared as f64: like Resilience4j's `(long) (x * m)`, each step
        // rounds `x` to a double first, so an initial wait above 2^53 ms
        // (285 000 years) may move by its rounding error.
        if m >= 1.0 {
            prop_assert!(v as f64 >= initial as f64);
            if n < u32::MAX {
                prop_assert!(exact_ms(&f, n + 1) as f64 >= v as f64);
            }
        } else {
            prop_assert!(v as f64 <= initial as f64);
        }
        if n == 1 {
            prop_assert_eq!(v, initial);
        }
    }

    #[test]
    fn capped_exponential_intervals_never_exceed_the_cap(
        initial in initial_ms(), m in multipliers(), max in initial_ms(), n in attempts()
    ) {
        let uncapped = IntervalFunction::of_exponential_backoff(Duration::from_millis(initial), m).unwrap();
        let f = IntervalFunction::of_exponential_backoff_with_max(
            Duration::from_millis(initial), m, Duration::from_millis(max),
        ).unwrap();
        prop_assert_eq!(exact_ms(&f, n), exact_ms(&uncapped, n).min(max));
    }

    #[test]
    fn randomized_intervals_stay_within_their_factor(
        x in initial_ms(), factor in 0.0f64..1.0, n in attempts()
    ) {
        let f = IntervalFunction::of_randomized(Duration::from_millis(x), factor).unwrap();
        let (lo, hi) = jitter_bounds(x, factor);
        let v = exact_ms(&f, n);
        prop_assert!(lo <= v && v <= hi, "{} not in [{}, {}]", v, lo, hi);
    }

    #[test]
    fn exponential_random_intervals_stay_within_bounds_and_caps(
        initial in initial_ms(), m in multipliers(), factor in 0.0f64..1.0,
        max in initial_ms(), n in attempts()
    ) {
        let base = exact_ms(
            &IntervalFunction::of_exponential_backoff(Duration::from_millis(initial), m).unwrap(),
            n,
        );
        let (lo, hi) = jitter_bounds(base, factor);
        let f = IntervalFunction::of_exponential_random_backoff(Duration::from_millis(initial), m, factor).unwrap();
        let v = exact_ms(&f, n);
        prop_assert!(lo <= v && v <= hi, "{} not in [{}, {}]", v, lo, hi);
        let capped = IntervalFunction::of_exponential_random_backoff_with_max(
            Duration::from_millis(initial), m, factor, Duration::from_millis(max),
        ).unwrap();
        let v = exact_ms(&capped, n);
        prop_assert!(lo.min(max) <= v && v <= hi.min(max), "{} not in [{}, {}]", v, lo.min(max), hi.min(max));
    }

    #[test]
    fn retry_waits_follow_the_configured_function(
        initial in 1u64..1000, m in 1.0f64..3.0, max_attempts in 1u32..8
    ) {
        let f = IntervalFunction::of_exponential_backoff(Duration::from_millis(initial), m).unwrap();
        let expected: Duration = (1..max_attempts).map(|n| f.apply(n)).sum();
        let config = RetryConfig::builder().max_attempts(max_attempts).interval_function(f).build().unwrap();
        let clock = ManualClock::new();
        let retry = Retry::with_clock("p", config, clock.clone());
        let mut calls = 0;
        let _ = retry.call(|| { calls += 1; Err::<(), _>(()) });
        prop_assert_eq!(calls, max_attempts);
        prop_assert_eq!(clock.now().as_duration(), expected);
        prop_assert_eq!(retry.metrics().number_of_total_calls(), u64::from(max_attempts));
    }
}
