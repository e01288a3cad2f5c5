//! The hedge: who wins, what the losers give back, cancellation at every
//! await, panics, the percentile delay and allocation.

mod support;

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resil_core::Error;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
use resil_core::chain::{Lift, Stack};
use resil_core::clock::{Clock, ManualClock, TokioClock};
use resil_core::hedge::{Hedge, HedgeConfig, HedgeEvent};
use support::Recorder;

#[global_allocator]
static ALLOC: support::CountingAlloc = support::CountingAlloc;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn hedge(delay: u64, max: u32) -> Hedge {
    let config = HedgeConfig::builder()
        .delay(ms(delay))
        .max_hedged_attempts(max)
        .build()
        .unwrap();
    Hedge::with_clock("h", config, TokioClock::new())
}

/// Counts live attempts: one is alive from its creation to its drop.
#[derive(Clone, Default)]
struct Live(Arc<AtomicU32>);

struct Alive(Arc<AtomicU32>);

impl Live {
    fn enter(&self) -> Alive {
        self.0.fetch_add(1, Ordering::SeqCst);
        Alive(self.0.clone())
    }
    fn now(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Attempt `i` (from 0) sleeps `latencies[i]` ms, then answers `Ok(i)`, or
/// `Err(i)` when `fails[i]`.
fn attempts(
    latencies: &'static [u64],
    fails: &'static [bool],
    live: &Live,
) -> impl FnMut() -> std::pin::Pin<Box<dyn Future<Output = Result<usize, usize>> + Send>> {
    let mut n = 0;
    let live = live.clone();
    move || {
        let i = n;
        n += 1;
        let alive = live.enter();
        Box::pin(async move {
            let _alive = alive;
            tokio::time::sleep(ms(latencies[i])).await;
            if fails.get(i).copied().unwrap_or(false) {
                Err(i)
            } else {
                Ok(i)
            }
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_primary_slower_than_the_delay_is_hedged_and_the_hedge_wins() {
    let h = hedge(50, 1);
    let events = Recorder::attach(h.event_publisher());
    let live = Live::default();
    let clock = TokioClock::new();
    let start = clock.now();
    let out = h
        .call_async(attempts(&[1000, 10], &[], &live))
        .await
        .unwrap();
    assert_eq!(out, 1, "the hedged attempt won");
    assert_eq!(
        clock.now().saturating_duration_since(start),
        ms(60),
        "50 ms delay + 10 ms"
    );
    assert_eq!(live.now(), 0, "the primary was dropped");
    assert_eq!(
        events.take(),
        [
            HedgeEvent::Hedged {
                attempt: 1,
                delay: Some(ms(50))
            },
            HedgeEvent::Success {
                winner: 1,
                attempts: 2
            },
        ]
    );
    let m = h.metrics();
    assert_eq!(
        (
            m.number_of_primary_wins(),
            m.number_of_hedge_wins(),
            m.number_of_failed_calls(),
            m.number_of_hedged_attempts()
        ),
        (0, 1, 0, 1)
    );
}

#[tokio::test(start_paused = true)]
async fn a_primary_that_answers_before_the_delay_costs_no_hedge() {
    let h = hedge(50, 3);
    let events = Recorder::attach(h.event_publisher());
    let live = Live::default();
    let calls = AtomicU32::new(0);
    let mut f = attempts(&[49, 1, 1, 1], &[], &live);
    let out = h
        .call_async(|| {
            calls.fetch_add(1, Ordering::SeqCst);
            f()
        })
        .await;
    assert_eq!(out.unwrap(), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "one attempt only");
    assert_eq!(events.take(), []);
    assert_eq!(h.metrics().number_of_primary_wins(), 1);
    assert_eq!(h.metrics().number_of_hedged_attempts(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_primary_can_still_win_after_hedging() {
    let h = hedge(50, 2);
    let events = Recorder::attach(h.event_publisher());
    let live = Live::default();
    // primary 70 ms; hedges at 50 ms (1000 ms) and 100 ms (never started)
    let out = h.call_async(attempts(&[70, 1000, 1000], &[], &live)).await;
    assert_eq!(out.unwrap(), 0);
    assert_eq!(live.now(), 0);
    assert_eq!(
        events.take(),
        [
            HedgeEvent::Hedged {
                attempt: 1,
                delay: Some(ms(50))
            },
            HedgeEvent::Success {
                winner: 0,
                attempts: 2
            },
        ]
    );
    assert_eq!(h.metrics().number_of_primary_wins(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_failure_starts_the_next_attempt_at_once_and_all_failed_gives_the_last_error() {
    let h = hedge(50, 2);
    let events = Recorder::attach(h.event_publisher());
    let live = Live::default();
    let clock = TokioClock::new();
    let start = clock.now();
    // 0 fails at 5 ms -> 1 starts at once, fails at 25 ms -> 2 starts, fails at 30 ms
    let out = h
        .call_async(attempts(&[5, 20, 5], &[true, true, true], &live))
        .await;
    assert!(matches!(out, Err(Error::Inner(2))), "{out:?}");
    assert_eq!(clock.now().saturating_duration_since(start), ms(30));
    assert_eq!(
        events.take(),
        [
            HedgeEvent::Hedged {
                attempt: 1,
                delay: None
            },
            HedgeEvent::Hedged {
                attempt: 2,
                delay: None
            },
            HedgeEvent::Error {
                attempts: 3,
                error_kind: None
            },
        ]
    );
    assert_eq!(h.metrics().number_of_failed_calls(), 1);

    // the last to fail is the last error, whatever the order they started in
    let out = h
        .call_async(attempts(&[200, 10, 1000], &[true, true, false], &live))
        .await;
    // 0 runs; 1 at 50 ms fails at 60 -> 2 starts at once, hangs; 0 fails at 200
    // -> 2 is still running: it answers at 1060 ms
    assert_eq!(out.unwrap(), 2);
    let out = h
        .call_async(attempts(&[200, 10, 10], &[true, true, true], &live))
        .await;
    assert!(matches!(out, Err(Error::Inner(0))), "{out:?}");
}

#[tokio::test(start_paused = true)]
async fn the_losers_give_back_their_bulkhead_permits() {
    let h = hedge(50, 3);
    let bh = Bulkhead::with_clock(
        "b",
        BulkheadConfig::builder()
            .max_concurrent_calls(10)
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let live = Live::default();
    let bh2 = bh.clone();
    let mut seen_in_use = Vec::new();
    let mut make = attempts(&[1000, 1000, 1000, 10], &[], &live);
    let out = {
        let seen = &mut seen_in_use;
        Stack::new()
            .hedge(h.part())
            .bulkhead(bh.part())
            .call_async(Lift(|| {
                seen.push(10 - bh2.metrics().available_concurrent_calls());
                make()
            }))
            .await
    };
    assert_eq!(out.unwrap(), 3);
    // each attempt started while the ones before held their permits
    assert_eq!(seen_in_use, [1, 2, 3, 4]);
    assert_eq!(bh.metrics().available_concurrent_calls(), 10, "all back");
    assert_eq!(live.now(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_full_bulkhead_refuses_a_hedged_attempt_which_starts_the_next() {
    let h = hedge(50, 2);
    let bh = Bulkhead::with_clock(
        "b",
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let events = Recorder::attach(h.event_publisher());
    let live = Live::default();
    let out = Stack::new()
        .hedge(h.part())
        .bulkhead(bh.part())
        .call_async(Lift(attempts(&[80, 1, 1], &[], &live)))
        .await;
    // the primary holds the only permit: both hedged attempts are refused
    assert_eq!(out.unwrap(), 0);
    assert_eq!(
        events.take(),
        [
            HedgeEvent::Hedged {
                attempt: 1,
                delay: Some(ms(50))
            },
            HedgeEvent::Hedged {
                attempt: 2,
                delay: None
            },
            HedgeEvent::Success {
                winner: 0,
                attempts: 3
            },
        ]
    );
    assert_eq!(bh.metrics().available_concurrent_calls(), 1);
}

/// Drops the call after `polls` polls, `step` apart in paused time, and
/// checks that every permit and every attempt is gone.
#[tokio::test(start_paused = true)]
async fn dropping_the_call_at_each_await_gives_everything_back() {
    let h = hedge(50, 3);
    let bh = Bulkhead::with_clock(
        "b",
        BulkheadConfig::builder()
            .max_concurrent_calls(10)
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let mut drops_while_running = 0;
    for polls in 0..12 {
        let live = Live::default();
        {
            let mut fut = pin!(
                Stack::new()
                    .hedge(h.part())
                    .bulkhead(bh.part())
                    .call_async(Lift(attempts(&[500, 400, 300, 250], &[], &live)))
            );
            let mut cx = Context::from_waker(Waker::noop());
            for _ in 0..polls {
                if fut.as_mut().poll(&mut cx).is_ready() {
                    break;
                }
                tokio::time::advance(ms(30)).await;
            }
            if live.now() > 0 {
                drops_while_running += 1;
            }
        }
        assert_eq!(live.now(), 0, "after {polls} polls");
        assert_eq!(
            bh.metrics().available_concurrent_calls(),
            10,
            "after {polls} polls"
        );
    }
    assert!(drops_while_running >= 8, "{drops_while_running}");
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_an_attempt_unwinds_and_the_others_give_back_their_permits() {
    let h = hedge(50, 2);
    let bh = Bulkhead::with_clock(
        "b",
        BulkheadConfig::builder()
            .max_concurrent_calls(10)
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let live = Live::default();
    // the hedged attempt's future panics when polled
    let mut n = 0;
    let live2 = live.clone();
    let mut fut = Box::pin(
        Stack::new()
            .hedge(h.part())
            .bulkhead(bh.part())
            .call_async(Lift(move || {
                n += 1;
                let first = n == 1;
                let alive = live2.enter();
                async move {
                    let _alive = alive;
                    if !first {
                        panic!("attempt panicked");
                    }
                    tokio::time::sleep(ms(1000)).await;
                    Ok::<u32, ()>(1)
                }
            })),
    );
    let mut cx = Context::from_waker(Waker::noop());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    tokio::time::advance(ms(50)).await;
    let caught = catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx)));
    assert!(caught.is_err(), "the panic reaches the caller");
    // the hedged attempt's permit went back while unwinding; the primary's
    // goes with the future
    assert_eq!(bh.metrics().available_concurrent_calls(), 9);
    drop(fut);
    assert_eq!(bh.metrics().available_concurrent_calls(), 10);
    assert_eq!(live.now(), 0);

    // a panic in the function that makes the attempts
    let mut n = 0;
    let mut fut = Box::pin(
        Stack::new()
            .hedge(h.part())
            .bulkhead(bh.part())
            .call_async(Lift(move || {
                n += 1;
                assert!(n == 1, "second attempt refused");
                async {
                    tokio::time::sleep(ms(1000)).await;
                    Ok::<u32, ()>(1)
                }
            })),
    );
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    tokio::time::advance(ms(50)).await;
    assert!(catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx))).is_err());
    drop(fut);
    assert_eq!(bh.metrics().available_concurrent_calls(), 10);
}

#[tokio::test(start_paused = true)]
async fn the_percentile_delay_follows_the_recent_latencies() {
    let config = HedgeConfig::builder()
        .delay(ms(500))
        .delay_percentile(90.0)
        .build()
        .unwrap();
    let h = Hedge::with_clock("p", config, TokioClock::new());
    let events = Recorder::attach(h.event_publisher());
    assert_eq!(
        h.current_delay(),
        ms(500),
        "the fallback until enough samples"
    );
    let live = Live::default();
    for i in 0..19 {
        let latency: &'static [u64] = if i % 10 == 9 { &[100] } else { &[10] };
        h.call_async(attempts(latency, &[], &live)).await.unwrap();
    }
    assert_eq!(h.current_delay(), ms(500), "19 samples are not enough");
    h.call_async(attempts(&[10], &[], &live)).await.unwrap();
    // 18 of 10 ms and 2 of 100 ms: p90 is 10 ms (within one bucket)
    let d = h.current_delay();
    assert!(d >= ms(10) && d <= Duration::from_micros(10_240), "{d:?}");
    assert_eq!(events.take(), [], "nothing was hedged");
    // now a 40 ms primary is hedged after about 10 ms
    let out = h.call_async(attempts(&[40, 5], &[], &live)).await;
    assert_eq!(out.unwrap(), 1);
    assert!(matches!(
        events.take()[0],
        HedgeEvent::Hedged { attempt: 1, delay: Some(d) } if d <= ms(11)
    ));
}

#[test]
fn a_primary_ready_at_once_allocates_nothing() {
    let clock = ManualClock::new();
    let fixed = Hedge::with_clock("a", HedgeConfig::default(), clock.clone());
    let percentile = Hedge::with_clock(
        "b",
        HedgeConfig::builder()
            .delay_percentile(95.0)
            .build()
            .unwrap(),
        clock,
    );
    let mut cx = Context::from_waker(Waker::noop());
    for h in [&fixed, &percentile] {
        let mut run = || {
            for _ in 0..100 {
                let fut = pin!(h.call_async(|| async { Ok::<u32, ()>(1) }));
                assert!(matches!(fut.poll(&mut cx), Poll::Ready(Ok(1))));
            }
        };
        run();
        let ((), n) = support::allocations_during(&mut run);
        assert_eq!(n, 0, "{}", h.name());
    }
    assert_eq!(percentile.metrics().number_of_primary_wins(), 200);
}

#[test]
fn on_a_manual_clock_a_pending_primary_is_hedged_at_once() {
    let h = Hedge::with_clock(
        "m",
        HedgeConfig::builder()
            .max_hedged_attempts(2)
            .build()
            .unwrap(),
        ManualClock::new(),
    );
    let mut n = 0;
    let mut fut = pin!(h.call_async(|| {
        n += 1;
        let i = n;
        std::future::poll_fn(move |_| {
            if i == 3 {
                Poll::Ready(Ok::<u32, ()>(i))
            } else {
                Poll::Pending
            }
        })
    }));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(3))));
    assert_eq!(h.metrics().number_of_hedged_attempts(), 2);
}

/// A hedge that spends a retry budget: each call deposits, each hedged
/// attempt withdraws; a denied attempt is not made, the call goes on with
/// its primary, and `BUDGET_EXHAUSTED` says so.
#[tokio::test(start_paused = true)]
async fn a_budget_bounds_the_hedged_attempts_and_the_primary_still_answers() {
    use resil_core::retry::{RetryBudget, RetryBudgetConfig};
    // no reserve; half a retry per call, over a window longer than the test
    let budget = RetryBudget::with_clock(
        "reads",
        RetryBudgetConfig::builder()
            .ratio(0.5)
            .min_retries_per_second(0)
            .ttl(Duration::from_secs(60))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let config = HedgeConfig::builder()
        .delay(ms(50))
        .max_hedged_attempts(2)
        .budget(budget.clone())
        .build()
        .unwrap();
    let h = Hedge::with_clock("h", config, TokioClock::new());
    let events = Recorder::attach(h.event_publisher());
    let live = Live::default();
    let clock = TokioClock::new();
    let mut winners = Vec::new();
    let mut took = Vec::new();
    for _ in 0..4 {
        let start = clock.now();
        // every primary is slow: each call wants two hedged attempts
        winners.push(
            h.call_async(attempts(&[200, 10, 10], &[], &live))
                .await
                .unwrap(),
        );
        took.push(clock.now().saturating_duration_since(start));
    }
    assert_eq!(live.now(), 0, "every loser was dropped");
    // call 1 deposits 0.5: nothing to withdraw; call 2 brings the balance
    // to 1: one hedge; calls 3 and 4 the same as 1 and 2
    assert_eq!(winners, [0, 1, 0, 1]);
    assert_eq!(took, [ms(200), ms(60), ms(200), ms(60)]);
    let denied = |attempt| HedgeEvent::BudgetExhausted { attempt };
    assert_eq!(
        events.take(),
        [
            denied(1),
            HedgeEvent::Hedged {
                attempt: 1,
                delay: Some(ms(50))
            },
            HedgeEvent::Success {
                winner: 1,
                attempts: 2
            },
            denied(1),
            HedgeEvent::Hedged {
                attempt: 1,
                delay: Some(ms(50))
            },
            HedgeEvent::Success {
                winner: 1,
                attempts: 2
            },
        ]
    );
    assert_eq!(budget.metrics().denied(), 2);
    assert_eq!(budget.balance(), 0);
}
