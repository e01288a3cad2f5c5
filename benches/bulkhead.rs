//! The semaphore bulkhead's uncontended acquire + release, in one run against:
//! the bare call; the floor, a bare compare-and-swap permit (an `AtomicU32`
//! CAS to acquire, a `fetch_add` to release); `tokio::sync::Semaphore`; and
//! tower's `ConcurrencyLimit` around a ready service, polled to completion.
//! The `resil_adaptive_*` rows are an AIMD bulkhead that folds every call
//! into its window (`min_rtt_threshold` zero: on a clock that does not
//! move, a call would otherwise be too fast to count), on the manual clock
//! and on the system clock.
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench bulkhead -- --warm-up-time 1 --measurement-time 3
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};

use criterion::{Criterion, criterion_group, criterion_main};
use std::time::Duration;

use resil_core::bulkhead::{Bulkhead, BulkheadConfig, LimitAlgorithm};
use resil_core::clock::{ManualClock, SystemClock};
use tower::Service;
use tower::limit::ConcurrencyLimit;

const LIMIT: u32 = 25;

/// The floor: a permit that is nothing but a counter.
struct CasPermits(AtomicU32);

impl CasPermits {
    #[inline]
    fn try_acquire(&self) -> bool {
        let mut n = self.0.load(Ordering::Relaxed);
        loop {
            if n == 0 {
                return false;
            }
            match self
                .0
                .compare_exchange_weak(n, n - 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => n = actual,
            }
        }
    }

    #[inline]
    fn release(&self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

#[inline]
fn work(x: u64) -> Result<u64, Infallible> {
    Ok(black_box(x))
}

fn acquire_release(c: &mut Criterion) {
    let mut g = c.benchmark_group("bulkhead");

    g.bench_function("bare_call", |b| b.iter(|| work(black_box(1))));

    let cas = CasPermits(AtomicU32::new(LIMIT));
    g.bench_function("bare_cas_permit", |b| {
        b.iter(|| {
            assert!(cas.try_acquire());
            let r = work(black_box(1));
            cas.release();
            r
        })
    });

    let config = BulkheadConfig::builder()
        .max_concurrent_calls(LIMIT)
        .build()
        .unwrap();
    let bulkhead = Bulkhead::with_clock("bench", config, ManualClock::new());
    g.bench_function("resil_try_acquire_drop", |b| {
        b.iter(|| {
            let permit = bulkhead.try_acquire_permission().unwrap();
            let r = work(black_box(1));
            drop(permit);
            r
        })
    });
    g.bench_function("resil_call", |b| {
        b.iter(|| bulkhead.call(|| work(black_box(1))))
    });
    g.bench_function("resil_call_async", |b| {
        let mut cx = Context::from_waker(Waker::noop());
        b.iter(|| {
            let fut = pin!(bulkhead.call_async(|| async { work(black_box(1)) }));
            match fut.poll(&mut cx) {
                Poll::Ready(r) => r,
                Poll::Pending => unreachable!("a free permit and a ready future"),
            }
        })
    });

    let adaptive = BulkheadConfig::builder()
        .max_concurrent_calls(LIMIT)
        .limit_algorithm(LimitAlgorithm::Aimd)
        .min_rtt_threshold(Duration::ZERO)
        .build()
        .unwrap();
    for (label, bulkhead) in [
        (
            "",
            Bulkhead::with_clock("bench", adaptive.clone(), ManualClock::new()),
        ),
        (
            "_system_clock",
            Bulkhead::with_clock("bench", adaptive.clone(), SystemClock::new()),
        ),
    ] {
        g.bench_function(format!("resil_adaptive_try_acquire_drop{label}"), |b| {
            b.iter(|| {
                let permit = bulkhead.try_acquire_permission().unwrap();
                let r = work(black_box(1));
                drop(permit);
                r
            })
        });
        g.bench_function(format!("resil_adaptive_call{label}"), |b| {
            b.iter(|| bulkhead.call(|| work(black_box(1))))
        });
    }

    let semaphore = tokio::sync::Semaphore::new(LIMIT as usize);
    g.bench_function("tokio_semaphore_try_acquire_drop", |b| {
        b.iter(|| {
            let permit = semaphore.try_acquire().unwrap();
            let r = work(black_box(1));
            drop(permit);
            r
        })
    });

    let mut limited = ConcurrencyLimit::new(
        tower::service_fn(|x: u64| std::future::ready(work(x))),
        LIMIT as usize,
    );
    g.bench_function("tower_concurrency_limit", |b| {
        let mut cx = Context::from_waker(Waker::noop());
        b.iter(|| {
            match limited.poll_ready(&mut cx) {
                Poll::Ready(Ok(())) => {}
                _ => unreachable!("a free permit"),
            }
            let fut = pin!(limited.call(black_box(1)));
            match fut.poll(&mut cx) {
                Poll::Ready(r) => r,
                Poll::Pending => unreachable!("a ready service"),
            }
        })
    });

    g.finish();
}

criterion_group!(benches, acquire_release);
criterion_main!(benches);
