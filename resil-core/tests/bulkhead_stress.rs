//! The semaphore bulkhead under contention: threads and tasks, failing fast
//! or waiting, fair or not, and resized under load, never exceed the limit
//! and count every outcome and event.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use resil_core::Error;
use resil_core::bulkhead::{Bulkhead, BulkheadEvent};

use BulkheadEvent::{CallFinished, CallPermitted, CallRejected};
use support::bulkhead::{available, config, waiting};
use support::ms;

/// Counts calls in flight and remembers the most seen at once.
#[derive(Default)]
struct InFlight {
    now: AtomicU32,
    peak: AtomicU32,
}

impl InFlight {
    fn enter(&self, limit: u32) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        assert!(n <= limit, "{n} calls in flight, limit {limit}");
        self.peak.fetch_max(n, Ordering::SeqCst);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts events by type.
fn count_events(b: &Bulkhead) -> Arc<[AtomicU64; 3]> {
    let counts: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    let sink = counts.clone();
    b.event_publisher().on_event(move |e| {
        let i = match e.kind() {
            CallPermitted => 0,
            CallRejected => 1,
            CallFinished => 2,
            _ => unreachable!(),
        };
        sink[i].fetch_add(1, Ordering::Relaxed);
    });
    counts
}

#[test]
fn stress_fail_fast_counts_every_outcome() {
    const THREADS: u64 = 8;
    const CALLS: u64 = 2_000;
    const LIMIT: u32 = 3;
    for fair in [true, false] {
        let b = Bulkhead::new("stress", config(LIMIT, ms(0), fair));
        let events = count_events(&b);
        let in_flight = InFlight::default();
        let (permitted, rejected) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..CALLS {
                        let outcome = b.call(|| {
                            in_flight.enter(LIMIT);
                            for _ in 0..50 {
                                std::hint::spin_loop();
                            }
                            in_flight.leave();
                            Ok::<_, ()>(())
                        });
                        match outcome {
                            Ok(()) => permitted.fetch_add(1, Ordering::Relaxed),
                            Err(Error::BulkheadFull(_)) => rejected.fetch_add(1, Ordering::Relaxed),
                            Err(e) => panic!("unexpected {e:?}"),
                        };
                    }
                });
            }
        });
        let (p, r) = (permitted.into_inner(), rejected.into_inner());
        assert_eq!(p + r, THREADS * CALLS);
        assert!(p > 0);
        let [ev_permitted, ev_rejected, ev_finished] = &*events;
        assert_eq!(ev_permitted.load(Ordering::Relaxed), p);
        assert_eq!(ev_finished.load(Ordering::Relaxed), p);
        assert_eq!(ev_rejected.load(Ordering::Relaxed), r);
        assert_eq!((available(&b), waiting(&b)), (LIMIT, 0));
    }
}

#[test]
fn stress_waiting_threads_and_tasks_are_all_served_within_the_limit() {
    const THREADS: u64 = 4;
    const CALLS: u64 = 500;
    const TASKS: u64 = 64;
    const LIMIT: u32 = 2;
    for fair in [true, false] {
        // A long wait: every caller must get a permit, none may time out.
        let b = Bulkhead::new("stress", config(LIMIT, Duration::from_secs(60), fair));
        let events = count_events(&b);
        let in_flight = Arc::new(InFlight::default());
        let permitted = Arc::new(AtomicU64::new(0));
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..CALLS {
                        b.call(|| {
                            in_flight.enter(LIMIT);
                            std::thread::yield_now();
                            in_flight.leave();
                            Ok::<_, ()>(())
                        })
                        .unwrap();
                        permitted.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            s.spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let mut set = tokio::task::JoinSet::new();
                    for _ in 0..TASKS {
                        let (b, in_flight, permitted) =
                            (b.clone(), in_flight.clone(), permitted.clone());
                        set.spawn(async move {
                            for _ in 0..CALLS / 10 {
                                b.call_async(|| async {
                                    in_flight.enter(LIMIT);
                                    tokio::task::yield_now().await;
                                    in_flight.leave();
                                    Ok::<_, ()>(())
                                })
                                .await
                                .unwrap();
                                permitted.fetch_add(1, Ordering::Relaxed);
                            }
                        });
                    }
                    while let Some(done) = set.join_next().await {
                        done.unwrap();
                    }
                });
            });
        });
        let total = THREADS * CALLS + TASKS * (CALLS / 10);
        assert_eq!(permitted.load(Ordering::Relaxed), total);
        let [ev_permitted, ev_rejected, ev_finished] = &*events;
        assert_eq!(ev_permitted.load(Ordering::Relaxed), total);
        assert_eq!(ev_finished.load(Ordering::Relaxed), total);
        assert_eq!(ev_rejected.load(Ordering::Relaxed), 0);
        assert_eq!(in_flight.peak.load(Ordering::SeqCst), LIMIT);
        assert_eq!((available(&b), waiting(&b)), (LIMIT, 0));
    }
}

#[test]
fn stress_resizing_under_load_keeps_the_count_exact() {
    const THREADS: u64 = 4;
    const CALLS: u64 = 2_000;
    let b = Bulkhead::new("stress", config(4, ms(0), true));
    let in_flight = InFlight::default();
    let done = AtomicU32::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..CALLS {
                    let _ = b.call(|| {
                        in_flight.enter(8); // the largest limit it is resized to
                        in_flight.leave();
                        Ok::<_, ()>(())
                    });
                }
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        s.spawn(|| {
            let mut limit = 1;
            while done.load(Ordering::SeqCst) < THREADS as u32 {
                b.change_config(config(limit, ms(0), true));
                limit = limit % 8 + 1;
            }
        });
    });
    let limit = b.metrics().max_allowed_concurrent_calls();
    assert_eq!(available(&b), limit);
}
