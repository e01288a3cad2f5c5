//! Retry waits: the interval functions observed on a `ManualClock`, an
//! interval bi-function or a classifier's interval that honours a retry-after,
//! and properties of every `IntervalFunction` and the waits that follow them.

mod support;

use std::time::Duration;

use proptest::prelude::*;
use resil_core::Error;
use resil_core::clock::{Clock, ManualClock};
use resil_core::retry::MaxRetriesExceeded;
use resil_core::retry::{
    IntervalBiFunction, IntervalFunction, Retry, RetryClassifier, RetryConfig, RetryEvent,
};
use support::retry::{CLASSIFIED, InvError, call_with, decorate, manual, retry_ev};
use support::{Recorder, ms};

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
