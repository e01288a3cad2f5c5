//! Retry budgets: Finagle's bound over the window of `ttl`, the reserve,
//! the retry that a denied budget does not make, sync and async.

mod support;

use std::cell::RefCell;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resil_core::Error;
use resil_core::chain::{Lift, Stack};
use resil_core::clock::{Clock, ManualClock};
use resil_core::event::EventKind;
use resil_core::retry::{
    Retry, RetryBudget, RetryBudgetConfig, RetryClassifier, RetryConfig, RetryEvent, RetryEventType,
};
use support::Recorder;

#[global_allocator]
static ALLOC: support::CountingAlloc = support::CountingAlloc;

fn budget(ratio: f64, min: u32, ttl: Duration, clock: &ManualClock) -> RetryBudget {
    let config = RetryBudgetConfig::builder()
        .ratio(ratio)
        .min_retries_per_second(min)
        .ttl(ttl)
        .build()
        .unwrap();
    RetryBudget::with_clock("downstream", config, clock.clone())
}

#[test]
fn deposits_pay_for_retries_until_they_expire() {
    let clock = ManualClock::new();
    let b = budget(0.5, 0, Duration::from_secs(10), &clock);
    assert_eq!(b.balance(), 0);
    assert!(
        !b.try_withdraw(),
        "no traffic, no reserve: nothing to spend"
    );
    for _ in 0..10 {
        b.deposit();
    }
    assert_eq!(b.balance(), 5);
    assert!(b.try_withdraw());
    assert_eq!(b.balance(), 4);
    clock.advance(Duration::from_secs(5));
    assert_eq!(b.balance(), 4, "within the window");
    clock.advance(Duration::from_secs(5));
    assert_eq!(
        b.balance(),
        0,
        "the deposits expired, the withdrawal counts a while longer"
    );
    assert_eq!(b.metrics().denied(), 1);
}

#[test]
fn the_reserve_is_min_retries_per_second_times_ttl() {
    let clock = ManualClock::new();
    let b = budget(0.2, 10, Duration::from_secs(10), &clock);
    assert_eq!(b.balance(), 100);
    for _ in 0..100 {
        assert!(b.try_withdraw());
    }
    assert!(!b.try_withdraw());
    clock.advance(Duration::from_secs(10));
    assert_eq!(b.balance(), 0, "a retry counts for at least ttl");
    clock.advance(Duration::from_secs(1));
    assert_eq!(b.balance(), 100, "the withdrawals left the window");
    // Five first attempts pay for one retry at 0.2.
    for _ in 0..5 {
        b.deposit();
    }
    assert_eq!(b.balance(), 101);
}

#[test]
fn bad_settings_are_refused_with_their_values() {
    let err = RetryBudgetConfig::builder()
        .ratio(-0.1)
        .ttl(Duration::ZERO)
        .build()
        .unwrap_err();
    let fields: Vec<_> = err
        .problems()
        .iter()
        .map(|p| (p.field(), p.value().to_owned()))
        .collect();
    assert_eq!(
        fields,
        [("ratio", "-0.1".to_owned()), ("ttl", "0ms".to_owned())]
    );
    assert!(
        RetryBudgetConfig::builder()
            .ratio(f64::NAN)
            .build()
            .is_err()
    );
    assert!(RetryBudgetConfig::builder().ratio(1000.5).build().is_err());
    for ttl in [Duration::from_micros(999), Duration::from_secs(3601)] {
        assert!(
            RetryBudgetConfig::builder().ttl(ttl).build().is_err(),
            "{ttl:?}"
        );
    }
    for ttl in [Duration::from_millis(1), Duration::from_secs(3600)] {
        assert!(
            RetryBudgetConfig::builder().ttl(ttl).build().is_ok(),
            "{ttl:?}"
        );
    }
}

#[test]
fn a_retry_the_budget_denies_is_not_made() {
    let clock = ManualClock::new();
    let shared = budget(0.0, 1, Duration::from_secs(1), &clock);
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::ZERO)
        .budget(shared.clone())
        .build()
        .unwrap();
    let retry = Retry::with_clock("payments", config, clock.clone());
    let events = Recorder::attach(retry.event_publisher());
    let rc = RetryClassifier::new();
    let attempts = std::cell::Cell::new(0);
    let call = || {
        Stack::new().retry(retry.part(&rc)).call(Lift(|| {
            attempts.set(attempts.get() + 1);
            Err::<(), _>("unavailable")
        }))
    };
    // The reserve pays for one retry in the second: the second is denied.
    assert!(matches!(call(), Err(Error::Inner("unavailable"))));
    assert_eq!(attempts.get(), 2);
    assert!(matches!(call(), Err(Error::Inner("unavailable"))));
    assert_eq!(attempts.get(), 3, "denied at once: one attempt");
    let seen = events.take();
    assert!(
        matches!(
            seen.as_slice(),
            [
                RetryEvent::Retry { .. },
                RetryEvent::BudgetExhausted {
                    number_of_retry_attempts: 2,
                    ..
                },
                RetryEvent::BudgetExhausted {
                    number_of_retry_attempts: 1,
                    ..
                },
            ]
        ),
        "{seen:?}"
    );
    assert_eq!(seen[1].event_type(), RetryEventType::BudgetExhausted);
    assert_eq!(RetryEventType::BudgetExhausted.as_str(), "BUDGET_EXHAUSTED");
    let m = retry.metrics();
    assert_eq!(m.number_of_failed_calls_with_retry_attempt(), 1);
    assert_eq!(m.number_of_failed_calls_without_retry_attempt(), 1);
    assert_eq!(shared.metrics().denied(), 2);
}

#[test]
fn an_async_retry_spends_the_same_budget() {
    let clock = ManualClock::new();
    let shared = budget(0.0, 1, Duration::from_secs(1), &clock);
    let config = RetryConfig::builder()
        .max_attempts(5)
        .wait_duration(Duration::ZERO)
        .budget(shared.clone())
        .build()
        .unwrap();
    let retry = Retry::with_clock("payments-async", config, clock.clone());
    let rc = RetryClassifier::new();
    let attempts = RefCell::new(0);
    let fut = std::pin::pin!(Stack::new().retry(retry.part(&rc)).call_async(Lift(|| {
        *attempts.borrow_mut() += 1;
        async { Err::<(), _>("unavailable") }
    })));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(matches!(
        fut.poll(&mut cx),
        Poll::Ready(Err(Error::Inner("unavailable")))
    ));
    assert_eq!(*attempts.borrow(), 2);
}

/// A small deterministic generator (xorshift), so that the run is the same
/// every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn ten_thousand_calls_with_random_failures_stay_within_the_bound() {
    let clock = ManualClock::new();
    let ttl = Duration::from_secs(10);
    let (ratio, min) = (0.2, 10);
    let shared = budget(ratio, min, ttl, &clock);
    let config = RetryConfig::builder()
        .max_attempts(4)
        .wait_duration(Duration::ZERO)
        .budget(shared.clone())
        .build()
        .unwrap();
    let retry = Retry::with_clock("bounded", config, clock.clone());
    let rc = RetryClassifier::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut firsts, mut retries) = (Vec::new(), Vec::new());
    for _ in 0..10_000 {
        clock.advance(Duration::from_micros(rng.next() % 5_000));
        let mut attempt = 0;
        let _ = Stack::new().retry(retry.part(&rc)).call(Lift(|| {
            let now = clock.now().as_u64();
            if attempt == 0 {
                firsts.push(now)
            } else {
                retries.push(now)
            }
            attempt += 1;
            // Half the attempts fail.
            if rng.next().is_multiple_of(2) {
                Err("unavailable")
            } else {
                Ok(())
            }
        }));
    }
    assert!(shared.metrics().denied() > 100, "the bound was reached");
    assert!(retries.len() > 1000, "and retries were made");
    // Every window of ttl that ends at a retry: (t - ttl, t].
    let ttl = ttl.as_nanos() as u64;
    let count = |times: &[u64], from: u64, to: u64| {
        times.iter().filter(|&&t| t > from && t <= to).count() as f64
    };
    let mut tightest = f64::MAX;
    for &t in &retries {
        let from = t.saturating_sub(ttl);
        let allowed = f64::from(min) * 10.0 + ratio * count(&firsts, from, t);
        let made = count(&retries, from, t);
        assert!(made <= allowed, "at {t}: {made} retries > {allowed}");
        tightest = tightest.min(allowed - made);
    }
    assert!(
        tightest < 2.0,
        "the bound was reached, not just respected: {tightest}"
    );
}

#[test]
fn a_call_through_a_budgeted_retry_allocates_nothing() {
    let clock = ManualClock::new();
    let config = RetryConfig::builder()
        .budget(budget(0.2, 10, Duration::from_secs(10), &clock))
        .build()
        .unwrap();
    let retry = Retry::with_clock("alloc", config, clock.clone());
    let rc = RetryClassifier::new();
    let call = || {
        Stack::new()
            .retry(retry.part(&rc))
            .call(Lift(|| Ok::<_, ()>(1)))
    };
    call().unwrap();
    let (_, n) = support::allocations_during(|| {
        for _ in 0..100 {
            call().unwrap();
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn counts_from_long_ago_never_come_back() {
    let clock = ManualClock::new();
    let b = budget(1.0, 0, Duration::from_secs(10), &clock);
    for _ in 0..7 {
        b.deposit();
    }
    assert_eq!(b.balance(), 7);
    // 2^32 slices of a second later, the slices' numbers have wrapped
    // round to the same place.
    clock.advance(Duration::from_secs(1 << 32));
    assert_eq!(b.balance(), 0);
    assert!(!b.try_withdraw());
}

#[test]
fn threads_sharing_a_budget_spend_no_more_than_it_holds() {
    let clock = ManualClock::new();
    let b = budget(0.2, 1, Duration::from_secs(10), &clock);
    let made: usize = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    (0..1000)
                        .filter(|_| {
                            b.deposit();
                            b.try_withdraw()
                        })
                        .count()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    // 10 from the reserve, 0.2 × 4000 from the first attempts.
    assert_eq!(made, 810);
    assert_eq!(b.balance(), 0);
    assert_eq!(b.metrics().denied(), 4000 - 810);
}
