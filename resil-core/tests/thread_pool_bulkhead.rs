//! The thread-pool bulkhead against Resilience4j 2.2's rules: admission,
//! hand-off, thread names, keep-alive, events, panics, shutdown, context
//! propagation (in `thread_pool_bulkhead_propagation.rs`) and registries.
//!
//! No test sleeps or measures time. Tasks block on a [`Gate`] that the test
//! opens; "the task has started" is a message the task sends. Waits on other
//! threads carry a 30 s guard ([`SAFETY`]) so that a bug fails the test
//! instead of hanging it; no assertion depends on how fast anything runs.
//! Keep-alive is driven by a `ManualClock`: paused tokio time does not cover
//! the pool's own threads, but the pool arms its keep-alive timers on the
//! injected clock, and arms them before a task's result reaches the caller.

mod support;

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use resil_core::Error;
use resil_core::Tags;
use resil_core::chain::{ChainFuture, Ctx, Stack, SyncNode};
use resil_core::clock::{ManualClock, SystemClock};
use resil_core::registry::ThreadPoolBulkheadRegistry;
use resil_core::thread_pool_bulkhead::{
    BulkheadFull, Jobs, ThreadPoolBulkhead,
    ThreadPoolBulkheadEvent::{self, CallFinished, CallPermitted, CallRejected},
};
use support::Recorder;
use support::thread_pool_bulkhead::{config, thread_name};
use tokio_test::{assert_ready, task};

#[global_allocator]
static A: support::CountingAlloc = support::CountingAlloc;

/// Guards every wait on another thread: a bug fails the test instead of hanging it.
const SAFETY: Duration = Duration::from_secs(30);

/// A latch that tasks block on until the test opens it.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn open(&self) {
        *self.0.0.lock().unwrap() = true;
        self.0.1.notify_all();
    }

    fn wait(&self) {
        let open = self.0.0.lock().unwrap();
        let (open, _) = self.0.1.wait_timeout_while(open, SAFETY, |o| !*o).unwrap();
        assert!(*open, "the gate was never opened");
    }
}

fn pool(name: &str, core: u32, max: u32, queue: u32) -> (ThreadPoolBulkhead, ManualClock) {
    let clock = ManualClock::new();
    let bh = ThreadPoolBulkhead::with_clock(name, config(core, max, queue), clock.clone());
    (bh, clock)
}

/// A task that reports its thread when it starts, then waits for the gate.
fn blocked(gate: &Gate, started: &Sender<String>) -> impl FnOnce() -> String + Send + 'static {
    let (gate, started) = (gate.clone(), started.clone());
    move || {
        let name = thread_name();
        started.send(name.clone()).unwrap();
        gate.wait();
        name
    }
}

fn recv<T>(rx: &Receiver<T>) -> T {
    rx.recv_timeout(SAFETY).expect("nothing arrived")
}

thread_local! {
    /// Set by a task; dropped, and so reporting, when its worker thread ends.
    static ON_EXIT: RefCell<Option<ExitSignal>> = const { RefCell::new(None) };
}

struct ExitSignal(Sender<String>, String);

impl Drop for ExitSignal {
    fn drop(&mut self) {
        let _ = self.0.send(self.1.clone());
    }
}

/// Makes the current worker report its end on `tx` (once per thread).
fn report_exit(tx: &Sender<String>) {
    ON_EXIT.with(|s| {
        s.borrow_mut()
            .get_or_insert_with(|| ExitSignal(tx.clone(), thread_name()));
    });
}

#[test]
fn admits_exactly_max_plus_queue_while_every_thread_is_blocked() {
    for (core, max, queue) in [(1, 1, 0), (1, 1, 1), (2, 4, 3), (1, 3, 0), (3, 3, 5)] {
        let (bh, _clock) = pool("inventory-query", core, max, queue);
        let (gate, (tx, _rx)) = (Gate::default(), mpsc::channel());
        let capacity = (max + queue) as usize;
        let outcomes: Vec<_> = (0..capacity + 3)
            .map(|_| bh.try_submit(blocked(&gate, &tx)))
            .collect();
        // The first `max + queue` are admitted, every later one refused.
        let admitted: Vec<bool> = outcomes.iter().map(Result::is_ok).collect();
        let expected: Vec<bool> = (0..capacity + 3).map(|i| i < capacity).collect();
        assert_eq!(admitted, expected, "core {core}, max {max}, queue {queue}");
        let (admitted, refused): (Vec<_>, Vec<_>) = outcomes.into_iter().partition(Result::is_ok);
        for full in refused.into_iter().map(Result::unwrap_err) {
            assert_eq!(full.name(), "inventory-query");
            assert_eq!(full.capacity(), max + queue);
        }
        let m = bh.metrics();
        assert_eq!(m.thread_pool_size(), max);
        assert_eq!(m.active_thread_count(), max);
        assert_eq!(m.available_thread_count(), 0);
        assert_eq!(m.queue_depth(), queue);
        assert_eq!(m.remaining_queue_capacity(), 0);
        // A refused `submit` is ready at its first poll.
        let mut refused = task::spawn(bh.submit(|| 0));
        assert!(assert_ready!(refused.poll()).is_err());

        gate.open();
        for s in admitted {
            assert!(
                s.unwrap()
                    .wait()
                    .unwrap()
                    .starts_with("bulkhead-inventory-query-")
            );
        }
        let m = bh.metrics();
        assert_eq!((m.active_thread_count(), m.queue_depth()), (0, 0));
        assert_eq!(m.available_thread_count(), max);
        assert!(bh.shutdown());
    }
}

#[test]
fn queue_capacity_zero_hands_off_to_waiting_threads_only() {
    let (bh, _clock) = pool("handoff", 1, 2, 0);
    let (gate, (tx, rx)) = (Gate::default(), mpsc::channel());
    let a = bh.try_submit(blocked(&gate, &tx)).unwrap();
    let b = bh.try_submit(blocked(&gate, &tx)).unwrap(); // no queue: a second thread
    assert!(bh.try_submit(|| ()).is_err());
    assert_eq!(bh.metrics().thread_pool_size(), 2);
    assert_eq!(bh.metrics().queue_depth(), 0);
    let first: BTreeSet<_> = [recv(&rx), recv(&rx)].into();
    gate.open();
    a.wait().unwrap();
    b.wait().unwrap();

    // Both threads are idle now (the clock stands still, so neither retires):
    // exactly two tasks can be handed to them, and no thread is started.
    let (gate, (tx, rx)) = (Gate::default(), mpsc::channel());
    let d = bh.try_submit(blocked(&gate, &tx)).unwrap();
    let e = bh.try_submit(blocked(&gate, &tx)).unwrap();
    assert!(bh.try_submit(|| ()).is_err());
    assert_eq!(bh.metrics().thread_pool_size(), 2);
    assert_eq!(
        bh.metrics().queue_depth(),
        0,
        "a hand-off is not queue depth"
    );
    let second: BTreeSet<_> = [recv(&rx), recv(&rx)].into();
    assert_eq!(first, second);
    gate.open();
    d.wait().unwrap();
    e.wait().unwrap();
}

#[test]
fn threads_are_named_bulkhead_name_n_from_one() {
    let (bh, _clock) = pool("inventory-query", 2, 3, 1);
    let (gate, (tx, rx)) = (Gate::default(), mpsc::channel());
    let subs: Vec<_> = (0..4)
        .map(|_| bh.try_submit(blocked(&gate, &tx)).unwrap())
        .collect();
    // Two core threads, the third task queued, the fourth on a third thread.
    let names: BTreeSet<_> = (0..3).map(|_| recv(&rx)).collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "bulkhead-inventory-query-1".to_owned(),
            "bulkhead-inventory-query-2".to_owned(),
            "bulkhead-inventory-query-3".to_owned(),
        ])
    );
    gate.open();
    assert!(
        names.contains(&recv(&rx)),
        "the queued task runs on one of them"
    );
    for s in subs {
        assert!(names.contains(&s.wait().unwrap()));
    }
}

#[test]
fn threads_above_core_exit_after_the_keep_alive_on_the_clock() {
    let clock = ManualClock::new();
    let config = config(1, 3, 1)
        .to_builder()
        .keep_alive_duration(Duration::from_millis(20))
        .build()
        .unwrap();
    let bh = ThreadPoolBulkhead::with_clock("keep-alive", config, clock.clone());
    let (gate, (tx, rx)) = (Gate::default(), mpsc::channel());
    let subs: Vec<_> = (0..4)
        .map(|_| bh.try_submit(blocked(&gate, &tx)).unwrap())
        .collect();
    assert_eq!(bh.metrics().thread_pool_size(), 3);
    gate.open();
    for s in subs {
        s.wait().unwrap();
    }
    (0..4).for_each(|_| drop(recv(&rx)));
    // Each thread armed its keep-alive before its result was delivered, so
    // all three timers are pending now, due at 20 ms on the manual clock.
    clock.advance(Duration::from_millis(19));
    assert_eq!(bh.metrics().thread_pool_size(), 3);
    clock.advance(Duration::from_millis(1));
    assert_eq!(bh.metrics().thread_pool_size(), 1, "down to the core size");
    clock.advance(Duration::from_secs(3600));
    assert_eq!(
        bh.metrics().thread_pool_size(),
        1,
        "core threads never time out"
    );

    // The pool grows again, and new threads get new numbers.
    let (gate, (tx, rx)) = (Gate::default(), mpsc::channel());
    let subs: Vec<_> = (0..3)
        .map(|_| bh.try_submit(blocked(&gate, &tx)).unwrap())
        .collect();
    let started = [recv(&rx), recv(&rx)];
    assert!(
        started.contains(&"bulkhead-keep-alive-4".to_owned()),
        "{started:?}"
    );
    assert_eq!(bh.metrics().thread_pool_size(), 2);
    gate.open();
    for s in subs {
        s.wait().unwrap();
    }
}

#[test]
fn with_the_system_clock_idle_threads_above_core_end() {
    // Keep-alive zero on the real clock: the timers run on resil's timer
    // thread. The test waits for the threads' own exit signals.
    let config = config(1, 3, 0)
        .to_builder()
        .keep_alive_duration(Duration::ZERO)
        .build()
        .unwrap();
    let bh = ThreadPoolBulkhead::with_clock("real-time", config, SystemClock::new());
    let (gate, (exits, exited)) = (Gate::default(), mpsc::channel());
    let subs: Vec<_> = (0..3)
        .map(|_| {
            let (gate, exits) = (gate.clone(), exits.clone());
            bh.try_submit(move || {
                report_exit(&exits);
                gate.wait();
            })
            .unwrap()
        })
        .collect();
    gate.open();
    for s in subs {
        s.wait().unwrap();
    }
    let gone: BTreeSet<_> = [recv(&exited), recv(&exited)].into();
    assert_eq!(gone.len(), 2);
    assert_eq!(bh.metrics().thread_pool_size(), 1);
    assert!(bh.shutdown());
    let last = recv(&exited);
    assert!(!gone.contains(&last));
}

#[test]
fn events_are_published_in_order_permitted_when_the_task_starts() {
    let (bh, _clock) = pool("events", 1, 1, 0);
    let rec = Recorder::attach(bh.event_publisher());
    let (gate, (tx, rx)) = (Gate::default(), mpsc::channel());
    let a = bh.submit(blocked(&gate, &tx));
    recv(&rx); // CallPermitted is published before the task body runs
    assert_eq!(rec.take(), [CallPermitted]);
    assert!(bh.try_submit(String::new).is_err());
    gate.open();
    a.wait().unwrap();
    assert_eq!(rec.take(), [CallRejected, CallFinished]);

    let types: Vec<_> = [CallPermitted, CallRejected, CallFinished]
        .iter()
        .map(|e| resil_core::event::EventKind::event_type(e).as_str())
        .collect();
    assert_eq!(types, ["CALL_PERMITTED", "CALL_REJECTED", "CALL_FINISHED"]);
}

#[test]
fn a_queued_task_is_permitted_only_when_a_thread_takes_it() {
    let (bh, _clock) = pool("queued-events", 1, 1, 1);
    let rec = Recorder::attach(bh.event_publisher());
    let (gate, (tx, rx)) = (Gate::default(), mpsc::channel());
    let a = bh.submit(blocked(&gate, &tx));
    let b = bh.submit(thread_name);
    recv(&rx);
    assert_eq!(
        rec.take(),
        [CallPermitted],
        "b waits in the queue, not permitted yet"
    );
    gate.open();
    a.wait().unwrap();
    b.wait().unwrap();
    assert_eq!(rec.take(), [CallFinished, CallPermitted, CallFinished]);
}

#[test]
fn a_panic_is_resumed_in_the_caller_and_the_thread_survives() {
    let (bh, _clock) = pool("panics", 1, 1, 1);
    let rec = Recorder::attach(bh.event_publisher());
    let boom = bh.submit(|| -> u32 { panic!("boom") });
    let payload = panic::catch_unwind(AssertUnwindSafe(|| boom.wait())).unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    assert_eq!(rec.take(), [CallPermitted, CallFinished]);

    let m = bh.metrics();
    assert_eq!((m.thread_pool_size(), m.active_thread_count()), (1, 0));
    assert_eq!(bh.submit(thread_name).wait().unwrap(), "bulkhead-panics-1");
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        bh.call(|| -> Result<(), std::io::Error> { panic!("again") })
    }));
    assert!(caught.is_err());
    assert_eq!(bh.call(|| Ok::<_, std::io::Error>(7)).unwrap(), 7);
    assert_eq!(bh.metrics().thread_pool_size(), 1);
}

#[tokio::test]
async fn an_awaited_panic_is_resumed_in_the_awaiting_task() {
    let (bh, _clock) = pool("async-panics", 1, 1, 0);
    let err = tokio::spawn(bh.submit(|| -> u32 { panic!("boom") }))
        .await
        .unwrap_err();
    assert!(err.is_panic());
    assert_eq!(err.into_panic().downcast_ref::<&str>(), Some(&"boom"));
    assert_eq!(bh.submit(|| 5).await.unwrap(), 5);
}

#[test]
fn begin_shutdown_refuses_new_tasks_and_finishes_queued_ones() {
    let (bh, _clock) = pool("shutdown", 1, 1, 2);
    let rec = Recorder::attach(bh.event_publisher());
    let (gate, (tx, rx)) = (Gate::default(), mpsc::channel());
    let a = bh.submit(blocked(&gate, &tx));
    let b = bh.submit(|| 2);
    let c = bh.submit(|| 3);
    recv(&rx);
    bh.begin_shutdown();
    assert!(bh.is_shutdown());
    let refused = bh.try_submit(|| 4).unwrap_err();
    assert_eq!(refused.capacity(), 3);
    assert!(matches!(
        bh.call(|| Ok::<_, std::io::Error>(5)),
        Err(Error::BulkheadFull(_))
    ));
    gate.open();
    assert!(bh.shutdown(), "queued tasks finish and the thread ends");
    assert_eq!((b.wait(), c.wait()), (Ok(2), Ok(3)));
    a.wait().unwrap();
    assert_eq!(bh.metrics().thread_pool_size(), 0);
    assert_eq!(
        rec.take(),
        [
            CallPermitted,
            CallRejected,
            CallRejected,
            CallFinished,
            CallPermitted,
            CallFinished,
            CallPermitted,
            CallFinished
        ]
    );
}

#[test]
fn a_shutdown_that_times_out_drops_the_queued_tasks() {
    let (bh, _clock) = pool("shutdown-now", 1, 1, 1);
    let (gate, (tx, rx)) = (Gate::default(), mpsc::channel());
    let a = bh.submit(blocked(&gate, &tx));
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let b = bh.submit(move || flag.store(true, Ordering::SeqCst));
    recv(&rx);
    assert!(!bh.shutdown_timeout(Duration::ZERO));
    let full = b.wait().unwrap_err();
    assert_eq!(full.name(), "shutdown-now");
    // The running task cannot be interrupted: it finishes in the background.
    gate.open();
    assert_eq!(a.wait().unwrap(), "bulkhead-shutdown-now-1");
    assert!(bh.await_termination(SAFETY));
    assert!(!ran.load(Ordering::SeqCst));
}

#[test]
fn dropping_the_last_handle_shuts_down_without_waiting() {
    let (bh, _clock) = pool("dropped", 1, 1, 1);
    let (gate, (exits, exited)) = (Gate::default(), mpsc::channel());
    let exits2 = exits.clone();
    let g = gate.clone();
    let a = bh.submit(move || {
        report_exit(&exits2);
        g.wait();
        1
    });
    let b = bh.submit(|| 2);
    let clone = bh.clone();
    drop(bh);
    assert!(!clone.is_shutdown(), "a clone still holds the pool");
    // Dropping the last handle returns at once, though a task is blocked.
    drop(clone);
    gate.open();
    assert_eq!((a.wait(), b.wait()), (Ok(1), Ok(2)));
    assert_eq!(recv(&exited), "bulkhead-dropped-1");
}

#[test]
fn dropping_a_submission_does_not_cancel_its_task() {
    let (bh, _clock) = pool("detached", 1, 1, 0);
    let (gate, (tx, rx)) = (Gate::default(), mpsc::channel());
    let g = gate.clone();
    drop(bh.submit(move || {
        g.wait();
        tx.send("ran").unwrap();
    }));
    gate.open();
    assert_eq!(recv(&rx), "ran");
}

fn assert_send_static<T: Send + 'static>(_: &T) {}

#[test]
fn result_futures_are_send_even_for_results_that_are_not_sync() {
    let (bh, _clock) = pool("send", 1, 1, 1);
    let s = bh.submit(|| Cell::new(1));
    assert_send_static(&s);
    let c = bh.call_async(|| Ok::<_, std::io::Error>(Cell::new(2)));
    assert_send_static(&c);
    let d = ChainFuture::new(
        Stack::new()
            .bulkhead(bh.shared_part())
            .around(Jobs(|| || Ok::<_, std::io::Error>(3))),
    );
    assert_send_static(&d);
    assert_eq!(s.wait().unwrap().get(), 1);
    drop((c, d));
}

#[tokio::test]
async fn call_forms_map_outcomes_and_decide_admission_at_the_call() {
    let (bh, _clock) = pool("calls", 1, 1, 0);
    let rec = Recorder::attach(bh.event_publisher());
    let (gate, (tx, rx)) = (Gate::default(), mpsc::channel());
    let busy = bh.submit(blocked(&gate, &tx));
    recv(&rx);
    rec.take();
    // Refused when called, before the future is polled.
    let refused = bh.call_async(|| Ok::<_, std::io::Error>(1));
    assert_eq!(rec.take(), [CallRejected]);
    assert!(matches!(refused.await, Err(Error::BulkheadFull(_))));
    assert!(matches!(
        ChainFuture::new(
            Stack::new()
                .bulkhead(bh.part())
                .around(Jobs(|| || Ok::<_, std::io::Error>(1)))
        )
        .await,
        Err(Error::BulkheadFull(f)) if f.capacity() == 1
    ));
    gate.open();
    busy.await.unwrap();

    assert_eq!(bh.call_async(|| Ok::<_, &str>(1)).await, Ok(1));
    assert_eq!(
        bh.call_async(|| Err::<u32, _>("io")).await,
        Err(Error::Inner("io"))
    );
    assert_eq!(bh.call(|| Err::<u32, _>("io")), Err(Error::Inner("io")));
    let full = BulkheadFull::new("inner".into(), 3);
    let inner = full.clone();
    // A task failing with an inner layer's rejection: the pool hands it
    // back as the task's own error, unchanged.
    assert_eq!(
        Stack::new()
            .bulkhead(bh.part())
            .around(Jobs(|| {
                let inner = inner.clone();
                move || Err::<u32, Error<&str>>(Error::BulkheadFull(inner))
            }))
            .call(&mut Ctx::new()),
        Err(Error::Inner(Error::BulkheadFull(full)))
    );
    assert_eq!(
        ChainFuture::new(
            Stack::new()
                .bulkhead(bh.part())
                .around(Jobs(|| || Ok::<_, &str>(9)))
        )
        .await,
        Ok(9)
    );
}

#[test]
fn registry_shares_instances_and_applies_named_configs() {
    let mut tags = Tags::new();
    tags.insert("team".into(), "inventory".into());
    let registry = ThreadPoolBulkheadRegistry::builder()
        .tags(tags)
        .clock(ManualClock::new())
        .build();
    registry
        .add_configuration(
            "blocking-io",
            config(1, 2, 3)
                .to_builder()
                .event_consumer_buffer_size(2)
                .build()
                .unwrap(),
        )
        .unwrap();
    assert!(
        registry
            .add_configuration("default", config(1, 1, 1))
            .is_err()
    );

    let a = registry
        .thread_pool_bulkhead_with_config("reports", "blocking-io")
        .unwrap();
    let b = registry.thread_pool_bulkhead("reports");
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(a.config().max_thread_pool_size(), 2);
    assert_eq!(a.config().queue_capacity(), 3);
    assert_eq!(a.tags().get("team").map(String::as_str), Some("inventory"));
    let missing = registry
        .thread_pool_bulkhead_with_config("other", "missing")
        .unwrap_err();
    assert_eq!(missing.name(), "missing");

    let d = registry.thread_pool_bulkhead("defaults");
    assert_eq!(d.config().queue_capacity(), 100);
    assert_eq!(
        registry
            .all()
            .iter()
            .map(|p| p.name().to_owned())
            .collect::<Vec<_>>(),
        ["defaults", "reports"]
    );

    // Registry instances keep their recent events (event_consumer_buffer_size).
    assert_eq!(a.event_publisher().buffer_capacity(), 2);
    assert_eq!(a.submit(thread_name).wait().unwrap(), "bulkhead-reports-1");
    let kinds: Vec<ThreadPoolBulkheadEvent> = a
        .event_publisher()
        .recent_events()
        .into_iter()
        .map(|e| e.into_kind())
        .collect();
    assert_eq!(kinds, [CallPermitted, CallFinished]);

    let removed = registry.remove("reports").unwrap();
    assert!(Arc::ptr_eq(&removed, &a));
    assert!(registry.find("reports").is_none());
    let fresh = registry.thread_pool_bulkhead_with("reports", config(1, 1, 0));
    assert!(!Arc::ptr_eq(&fresh, &a));
    assert_eq!(
        fresh.submit(thread_name).wait().unwrap(),
        "bulkhead-reports-1"
    );
}

#[test]
fn many_submitters_never_exceed_the_bounds_and_every_task_ends_once() {
    // Keep-alive zero on the real clock: threads above the core size come and
    // go while submitters race, so admission, retirement and wake-ups interleave.
    let config = config(2, 4, 4)
        .to_builder()
        .keep_alive_duration(Duration::ZERO)
        .build()
        .unwrap();
    let bh = ThreadPoolBulkhead::with_clock("stress", config, SystemClock::new());
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    const SUBMITTERS: usize = 6;
    const EACH: usize = 400;
    let handles: Vec<_> = (0..SUBMITTERS)
        .map(|s| {
            let (bh, running, peak, ran) = (bh.clone(), running.clone(), peak.clone(), ran.clone());
            thread::spawn(move || {
                let (mut admitted, mut refused) = (Vec::new(), 0usize);
                for i in 0..EACH {
                    let id = s * EACH + i;
                    let (running, peak, ran) = (running.clone(), peak.clone(), ran.clone());
                    let task = move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        std::hint::black_box((0..200u64).sum::<u64>());
                        running.fetch_sub(1, Ordering::SeqCst);
                        ran.fetch_add(1, Ordering::SeqCst);
                        id
                    };
                    match bh.try_submit(task) {
                        Ok(sub) => admitted.push((id, sub)),
                        Err(full) => {
                            assert_eq!(full.capacity(), 8);
                            refused += 1;
                        }
                    }
                    let m = bh.metrics();
                    assert!(m.thread_pool_size() <= 4);
                    assert!(m.active_thread_count() <= m.thread_pool_size());
                    assert!(m.queue_depth() <= 4);
                }
                let mut done = 0;
                for (id, sub) in admitted {
                    assert_eq!(sub.wait().unwrap(), id);
                    done += 1;
                }
                (done, refused)
            })
        })
        .collect();
    let (mut done, mut refused) = (0, 0);
    for h in handles {
        let (d, r) = h.join().unwrap();
        done += d;
        refused += r;
    }
    assert_eq!(done + refused, SUBMITTERS * EACH);
    assert_eq!(
        ran.load(Ordering::SeqCst),
        done,
        "each admitted task ran exactly once"
    );
    assert!(peak.load(Ordering::SeqCst) <= 4);
    assert!(bh.shutdown());
    assert_eq!(bh.metrics().thread_pool_size(), 0);
}

#[test]
fn a_submission_allocates_once() {
    let (bh, _clock) = pool("alloc", 1, 1, 4);
    // Warm up: start the thread, and let the queue allocate its buffer.
    bh.submit(|| 0u64).wait().unwrap();
    bh.submit(|| 0u64).wait().unwrap();
    let (s, n) = support::allocations_during(|| bh.try_submit(|| 7u64));
    assert_eq!(n, 1, "the task and its result slot share one allocation");
    assert_eq!(s.unwrap().wait().unwrap(), 7);
}

/// Waits for a submission on a helper thread, so that a task nobody runs
/// fails the test instead of hanging it.
fn wait_bounded<T: Send + 'static>(
    sub: resil_core::thread_pool_bulkhead::Submission<T>,
) -> Result<T, resil_core::bulkhead::BulkheadFull> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(sub.wait()).unwrap());
    recv(&rx)
}

/// A value whose `Drop` panics.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("PanicsOnDrop dropped");
    }
}

#[test]
fn a_result_whose_drop_panics_on_the_worker_keeps_the_pool_whole() {
    let (bh, _clock) = pool("drop-panics", 1, 1, 1);
    let gate = Gate::default();
    let g = gate.clone();
    let (started, rx) = mpsc::channel();
    let sub = bh.submit(move || {
        started.send(()).unwrap();
        g.wait();
        PanicsOnDrop
    });
    recv(&rx);
    // The receiver is gone: the worker drops the value, and its panic.
    drop(sub);
    gate.open();
    assert_eq!(
        wait_bounded(bh.submit(|| 7)),
        Ok(7),
        "a later task still runs"
    );
    assert_eq!(bh.metrics().thread_pool_size(), 1);
    assert!(bh.shutdown_timeout(SAFETY), "shutdown completes");
}

#[test]
fn a_waker_that_panics_keeps_the_pool_whole() {
    struct Panics;
    impl std::task::Wake for Panics {
        fn wake(self: Arc<Self>) {
            panic!("the waker panics");
        }
    }
    let (bh, _clock) = pool("waker-panics", 1, 1, 1);
    let gate = Gate::default();
    let g = gate.clone();
    let mut sub = bh.submit(move || {
        g.wait();
        1
    });
    let waker = std::task::Waker::from(Arc::new(Panics));
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(std::future::Future::poll(std::pin::Pin::new(&mut sub), &mut cx).is_pending());
    gate.open();
    assert_eq!(
        wait_bounded(bh.submit(|| 2)),
        Ok(2),
        "a later task still runs"
    );
    assert!(bh.shutdown_timeout(SAFETY), "shutdown completes");
    drop(sub);
}

#[test]
fn a_name_no_thread_can_take_is_refused_not_panicked() {
    let err = ThreadPoolBulkhead::try_new("bad\0name", config(1, 1, 1)).unwrap_err();
    assert_eq!(err.problems()[0].field(), "name");
    assert!(ThreadPoolBulkhead::try_new("good-name", config(1, 1, 1)).is_ok());

    // The infallible constructor takes it; no thread can start, so every
    // task is refused and no slot stays counted.
    let bh = ThreadPoolBulkhead::new("bad\0name", config(1, 1, 1));
    for _ in 0..3 {
        assert!(bh.try_submit(|| 1).is_err());
    }
    let m = bh.metrics();
    assert_eq!(
        (
            m.thread_pool_size(),
            m.active_thread_count(),
            m.queue_depth()
        ),
        (0, 0, 0)
    );
    assert!(bh.shutdown_timeout(SAFETY), "shutdown completes");
}
