//! When a chain drops what its attempts hold: each layer gives back its own
//! permit at its completion, a failed attempt goes before the next one
//! starts, and the caller's finished future is dropped exactly once, by the
//! time the chain's future returns the outcome.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use resil_core::Decorators;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent};
use resil_core::clock::{ManualClock, TokioClock};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil_core::retry::{Retry, RetryConfig};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};

/// A caller's future that answers at its first poll and keeps something
/// until it is dropped (as a connection or a service's permit would), which
/// it counts.
struct Holding {
    answer: Result<u32, &'static str>,
    drops: Arc<AtomicU32>,
}

impl Future for Holding {
    type Output = Result<u32, &'static str>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(self.answer)
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

struct Five {
    retry: Retry,
    cb: CircuitBreaker,
    rl: RateLimiter,
    tl: TimeLimiter,
    bh: Bulkhead,
}

fn five(clock: impl resil_core::clock::Clock + Clone) -> Five {
    Five {
        retry: Retry::with_clock(
            "finished",
            RetryConfig::builder()
                .max_attempts(3)
                .wait_duration(Duration::from_millis(10))
                .build()
                .unwrap(),
            clock.clone(),
        ),
        cb: CircuitBreaker::with_clock("finished", CircuitBreakerConfig::default(), clock.clone()),
        rl: RateLimiter::with_clock(
            "finished",
            RateLimiterConfig::builder()
                .limit_for_period(1000)
                .limit_refresh_period(Duration::from_secs(1))
                .build()
                .unwrap(),
            clock.clone(),
        ),
        tl: TimeLimiter::with_clock(
            "finished",
            TimeLimiterConfig::builder()
                .timeout_duration(Duration::from_secs(1))
                .build()
                .unwrap(),
            clock.clone(),
        ),
        bh: Bulkhead::with_clock(
            "finished",
            BulkheadConfig::builder()
                .max_concurrent_calls(2)
                .build()
                .unwrap(),
            clock,
        ),
    }
}

impl Five {
    fn decorators<T, E>(&self) -> Decorators<'_, T, E, resil_core::decorators::AsyncOnly> {
        Decorators::new()
            .with_retry(&self.retry)
            .with_circuit_breaker(&self.cb)
            .with_rate_limiter(&self.rl)
            .with_time_limiter(&self.tl)
            .with_bulkhead(&self.bh)
    }
}

#[test]
fn a_finished_call_is_dropped_once_by_the_time_its_outcome_is_returned() {
    let c = five(ManualClock::new());
    let drops = Arc::new(AtomicU32::new(0));
    let d = c.decorators();
    let mut call = tokio_test::task::spawn(d.call_async(|| Holding {
        answer: Ok(7),
        drops: drops.clone(),
    }));
    assert_eq!(call.poll(), Poll::Ready(Ok(7)));
    // The chain's future is still alive: what it held is gone already.
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(c.bh.metrics().available_concurrent_calls(), 2);
    drop(call);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped once, not twice");
    assert_eq!(c.cb.metrics().number_of_successful_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_failed_attempt_is_dropped_before_the_next_one_starts() {
    let c = five(TokioClock::new());
    let drops = Arc::new(AtomicU32::new(0));
    let started = AtomicU32::new(0);
    let out = c
        .decorators()
        .call_async(|| {
            let n = started.fetch_add(1, Ordering::SeqCst);
            // Every earlier attempt is gone when this one starts.
            assert_eq!(drops.load(Ordering::SeqCst), n);
            Holding {
                answer: if n < 2 { Err("busy") } else { Ok(n) },
                drops: drops.clone(),
            }
        })
        .await;
    assert_eq!(out.ok(), Some(2));
    assert_eq!(started.load(Ordering::SeqCst), 3);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    assert_eq!(c.cb.metrics().number_of_failed_calls(), 2);
    assert_eq!(c.cb.metrics().number_of_successful_calls(), 1);
}

#[test]
fn the_bulkheads_permit_is_back_when_the_breaker_records() {
    let c = five(ManualClock::new());
    let bulkhead = c.bh.clone();
    let seen = Arc::new(AtomicU32::new(u32::MAX));
    let seen_by_consumer = seen.clone();
    c.cb.event_publisher().on_event(move |e| {
        if let CircuitBreakerEvent::Success { .. } = e.kind() {
            seen_by_consumer.store(
                bulkhead.metrics().available_concurrent_calls(),
                Ordering::SeqCst,
            );
        }
    });
    let drops = Arc::new(AtomicU32::new(0));
    let d = c.decorators();
    let mut call = tokio_test::task::spawn(d.call_async(|| Holding {
        answer: Ok(1),
        drops: drops.clone(),
    }));
    assert_eq!(call.poll(), Poll::Ready(Ok(1)));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        2,
        "both permits free at the breaker's record"
    );
}
