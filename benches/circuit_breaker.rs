//! The circuit breaker against the bare call and its peers, in one run:
//! failsafe 1.3, recloser 1.4 and tower-resilience's circuit breaker 0.14.
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench circuit_breaker
//! ```
//!
//! The `success_threads` group shares one breaker between 1, 2, 4, 8 and 16
//! threads; `resil-bench/scripts/scaling.sh` runs it alone.
//!
//! Every breaker uses its default clock: resil's `SystemClock` (TSC) measures
//! each call's duration for slow-call detection; failsafe and recloser measure
//! nothing on the success path.

#![allow(clippy::disallowed_methods)] // a benchmark measures real time

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use failsafe::CircuitBreaker as _;
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, SlidingWindowType};
use resil_core::clock::{Clock, SystemClock};
use tower::{Service, ServiceExt};

fn work(x: u64) -> Result<u64, u64> {
    Ok(black_box(x))
}

fn fail(x: u64) -> Result<u64, u64> {
    Err(black_box(x))
}

/// The default breaker (a count window of 100 calls, like recloser's default
/// ring of 100): successes never open it.
fn resil_default() -> CircuitBreaker {
    CircuitBreaker::of_defaults("bench")
}

/// A breaker that never opens, even on failures: a time window whose minimum
/// is never reached (a count window clamps its minimum to its size).
fn resil_never_opens() -> CircuitBreaker {
    CircuitBreaker::new(
        "bench",
        CircuitBreakerConfig::builder()
            .sliding_window(100, u32::MAX, SlidingWindowType::TimeBased)
            .build()
            .unwrap(),
    )
}

fn recloser_never_opens() -> recloser::Recloser {
    recloser::Recloser::custom().error_rate(1.1).build()
}

fn failsafe_never_opens() -> impl failsafe::CircuitBreaker + Clone + Send + Sync + 'static {
    let policy = failsafe::failure_policy::consecutive_failures(
        u32::MAX,
        failsafe::backoff::constant(Duration::from_secs(60)),
    );
    failsafe::Config::new().failure_policy(policy).build()
}

/// Polls a future that completes without waiting (every service here is ready).
fn poll_ready_future<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

type TowerCb = tower_resilience_circuitbreaker::CircuitBreaker<
    tower::util::ServiceFn<fn(u64) -> std::future::Ready<Result<u64, u64>>>,
    tower_resilience_circuitbreaker::DefaultClassifier,
>;

fn tower_breaker(open: bool) -> TowerCb {
    fn svc(x: u64) -> std::future::Ready<Result<u64, u64>> {
        std::future::ready(Ok(black_box(x)))
    }
    let layer = tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
        .failure_rate_threshold(0.5)
        .sliding_window_size(100)
        .minimum_number_of_calls(if open { 1 } else { usize::MAX })
        .wait_duration_in_open(Duration::from_secs(600))
        .build()
        .unwrap();
    let cb = layer.layer_fn(tower::service_fn(svc as fn(u64) -> _));
    if open {
        poll_ready_future(cb.force_open());
    }
    cb
}

fn tower_call(cb: &mut TowerCb, x: u64) -> bool {
    poll_ready_future(async {
        let svc = cb.ready().await;
        match svc {
            Ok(svc) => svc.call(x).await.is_ok(),
            Err(_) => false,
        }
    })
}

fn single_thread(c: &mut Criterion) {
    // What measuring a call costs here: the breaker reads its clock twice.
    let mut g = c.benchmark_group("clock");
    let clock = SystemClock::new();
    g.bench_function("resil SystemClock::now", |b| b.iter(|| clock.now()));
    g.bench_function("std Instant::now", |b| b.iter(Instant::now));
    g.finish();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _enter = rt.enter();

    let mut g = c.benchmark_group("success");
    g.bench_function("bare", |b| b.iter(|| work(black_box(1))));
    let cb = resil_default();
    g.bench_function("resil count window", |b| {
        b.iter(|| cb.call(|| work(black_box(1))))
    });
    let cb = resil_never_opens();
    g.bench_function("resil time window", |b| {
        b.iter(|| cb.call(|| work(black_box(1))))
    });
    let rc = recloser_never_opens();
    g.bench_function("recloser", |b| b.iter(|| rc.call(|| work(black_box(1)))));
    let fs = failsafe_never_opens();
    g.bench_function("failsafe", |b| b.iter(|| fs.call(|| work(black_box(1)))));
    let mut tc = tower_breaker(false);
    g.bench_function("tower-resilience", |b| {
        b.iter(|| tower_call(&mut tc, black_box(1)))
    });
    g.finish();

    let mut g = c.benchmark_group("failure");
    g.bench_function("bare", |b| b.iter(|| fail(black_box(1))));
    let cb = resil_never_opens();
    g.bench_function("resil time window", |b| {
        b.iter(|| cb.call(|| fail(black_box(1))))
    });
    let rc = recloser_never_opens();
    g.bench_function("recloser", |b| b.iter(|| rc.call(|| fail(black_box(1)))));
    let fs = failsafe_never_opens();
    g.bench_function("failsafe", |b| b.iter(|| fs.call(|| fail(black_box(1)))));
    g.finish();

    let mut g = c.benchmark_group("rejection_while_open");
    let cb = CircuitBreaker::of_defaults("bench");
    cb.transition_to_open_state().unwrap(); // 60 s wait
    g.bench_function("resil", |b| b.iter(|| cb.call(|| work(black_box(1)))));
    let rc = recloser::Recloser::custom()
        .closed_len(1)
        .open_wait(Duration::from_secs(600))
        .build();
    let _ = rc.call(|| fail(1));
    let _ = rc.call(|| fail(1));
    assert!(matches!(
        rc.call(|| work(1)),
        Err(recloser::Error::Rejected)
    ));
    g.bench_function("recloser", |b| b.iter(|| rc.call(|| work(black_box(1)))));
    let fs = failsafe::Config::new()
        .failure_policy(failsafe::failure_policy::consecutive_failures(
            1,
            failsafe::backoff::constant(Duration::from_secs(600)),
        ))
        .build();
    let _ = fs.call(|| fail(1));
    assert!(fs.call(|| work(1)).is_err());
    g.bench_function("failsafe", |b| b.iter(|| fs.call(|| work(black_box(1)))));
    let mut tc = tower_breaker(true);
    assert!(!tower_call(&mut tc, 1));
    g.bench_function("tower-resilience", |b| {
        b.iter(|| tower_call(&mut tc, black_box(1)))
    });
    g.finish();
}

/// `threads` threads sharing one breaker, each making `iters` calls: the
/// time per call per thread (the slowest thread's).
fn on_threads<F>(threads: usize, iters: u64, call: F) -> Duration
where
    F: Fn() + Send + Sync + 'static,
{
    let call = Arc::new(call);
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (call, barrier) = (call.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let start = Instant::now();
                for _ in 0..iters {
                    call();
                }
                start.elapsed()
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .max()
        .unwrap()
}

/// The thread counts of the `success_threads` group. On a machine with
/// fewer cores, run only the counts it has: `-- 'success_threads/.*/(1|2)$'`.
const THREADS: [usize; 5] = [1, 2, 4, 8, 16];

/// One breaker shared by 1 to 16 threads, successes only: the time per
/// call per thread, which stays flat when the success path writes nothing
/// shared. `resil-bench/scripts/scaling.sh` runs this group alone.
fn contended(c: &mut Criterion) {
    println!(
        "success_threads: {} cores available",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let mut g = c.benchmark_group("success_threads");
    for n in THREADS {
        g.bench_with_input(BenchmarkId::new("bare", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                on_threads(n, iters, || {
                    let _ = black_box(work(black_box(1)));
                })
            })
        });
        for (label, cb) in [
            ("resil count window", resil_default()),
            ("resil time window", resil_never_opens()),
        ] {
            g.bench_with_input(BenchmarkId::new(label, n), &n, |b, &n| {
                b.iter_custom(|iters| {
                    let cb = cb.clone();
                    on_threads(n, iters, move || {
                        let _ = black_box(cb.call(|| work(black_box(1))));
                    })
                })
            });
        }
        let rc = Arc::new(recloser_never_opens());
        g.bench_with_input(BenchmarkId::new("recloser", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let rc = rc.clone();
                on_threads(n, iters, move || {
                    let _ = black_box(rc.call(|| work(black_box(1))));
                })
            })
        });
        let fs = failsafe_never_opens();
        g.bench_with_input(BenchmarkId::new("failsafe", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let fs = fs.clone();
                on_threads(n, iters, move || {
                    let _ = black_box(fs.call(|| work(black_box(1))));
                })
            })
        });
    }
    g.finish();
}

/// Alternating rounds of resil's default breaker and its peers, each
/// through one `#[inline(never)]` call, a million calls a round (on two
/// threads, half a million each): the minimum and median per call and the
/// ratios, which a machine shared with other work skews less than
/// criterion's separate groups.
fn interleaved(_: &mut Criterion) {
    #[inline(never)]
    fn resil_once(cb: &CircuitBreaker) -> bool {
        cb.call(|| work(black_box(1))).is_ok()
    }
    #[inline(never)]
    fn recloser_once(rc: &recloser::Recloser) -> bool {
        rc.call(|| work(black_box(1))).is_ok()
    }
    #[inline(never)]
    fn failsafe_once(fs: &(impl failsafe::CircuitBreaker + ?Sized)) -> bool {
        fs.call(|| work(black_box(1))).is_ok()
    }
    const ROUNDS: usize = 21;
    const CALLS: u64 = 1_000_000;
    let cb = resil_default();
    let rc = Arc::new(recloser_never_opens());
    let fs = failsafe_never_opens();
    let time = |threads: usize, f: Arc<dyn Fn() -> bool + Send + Sync>| {
        let d = on_threads(threads, CALLS / threads as u64, move || {
            black_box(f());
        });
        d.as_secs_f64() * 1e9 / (CALLS / threads as u64) as f64
    };
    for threads in [1, 2] {
        let mut rounds: [Vec<f64>; 3] = Default::default();
        for _ in 0..ROUNDS {
            let cb = cb.clone();
            rounds[0].push(time(threads, Arc::new(move || resil_once(black_box(&cb)))));
            let rc = rc.clone();
            rounds[1].push(time(
                threads,
                Arc::new(move || recloser_once(black_box(&rc))),
            ));
            let fs = fs.clone();
            rounds[2].push(time(
                threads,
                Arc::new(move || failsafe_once(black_box(&fs))),
            ));
        }
        for r in &mut rounds {
            r.sort_by(f64::total_cmp);
        }
        let (min, mid) = (0, ROUNDS / 2);
        println!(
            "success/interleaved, {threads} thread(s), ns per call per thread (min / median): \
             resil {:.2} / {:.2}; recloser {:.2} / {:.2}; failsafe {:.2} / {:.2}; \
             resil/recloser {:.3} / {:.3}; resil/failsafe {:.3} / {:.3}",
            rounds[0][min],
            rounds[0][mid],
            rounds[1][min],
            rounds[1][mid],
            rounds[2][min],
            rounds[2][mid],
            rounds[0][min] / rounds[1][min],
            rounds[0][mid] / rounds[1][mid],
            rounds[0][min] / rounds[2][min],
            rounds[0][mid] / rounds[2][mid],
        );
    }
}

criterion_group!(benches, single_thread, contended, interleaved);
criterion_main!(benches);
