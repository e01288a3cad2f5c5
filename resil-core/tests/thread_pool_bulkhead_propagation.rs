//! The thread-pool bulkhead's context propagators, against Resilience4j
//! 2.2's `ContextPropagator`: what they carry onto the worker, in which
//! order they enter and leave, and a propagator's panic.

mod support;

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use resil_core::clock::ManualClock;
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadEventType};
use support::thread_pool_bulkhead::{config, thread_name};

thread_local! {
    static REQUEST_ID: RefCell<Option<String>> = const { RefCell::new(None) };
    static LOG: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

struct RestoreId(Option<String>);

impl Drop for RestoreId {
    fn drop(&mut self) {
        REQUEST_ID.with(|id| *id.borrow_mut() = self.0.take());
    }
}

fn current_id() -> Option<String> {
    REQUEST_ID.with(|id| id.borrow().clone())
}

fn set_id(id: Option<&str>) {
    REQUEST_ID.with(|cell| *cell.borrow_mut() = id.map(String::from));
}

#[test]
fn a_propagator_carries_a_thread_local_onto_the_worker() {
    let config = config(1, 1, 5)
        .to_builder()
        .context_propagator(|| {
            let captured = current_id();
            move || RestoreId(REQUEST_ID.with(|id| id.replace(captured)))
        })
        .build()
        .unwrap();
    let bh = ThreadPoolBulkhead::with_clock("context", config, ManualClock::new());
    // The CallPermitted consumer runs on the worker, inside the context.
    let seen_by_event = Arc::new(Mutex::new(Vec::new()));
    let sink = seen_by_event.clone();
    bh.event_publisher()
        .on(ThreadPoolBulkheadEventType::CallPermitted, move |_| {
            sink.lock().unwrap().push(current_id());
        });

    set_id(Some("req-1"));
    assert_eq!(
        bh.submit(current_id).wait().unwrap().as_deref(),
        Some("req-1")
    );
    set_id(Some("req-2"));
    assert_eq!(
        bh.submit(current_id).wait().unwrap().as_deref(),
        Some("req-2")
    );
    set_id(None);
    assert_eq!(bh.submit(current_id).wait().unwrap(), None);
    assert_eq!(
        *seen_by_event.lock().unwrap(),
        [Some("req-1".to_owned()), Some("req-2".to_owned()), None]
    );
}

struct Leave(&'static str);

impl Drop for Leave {
    fn drop(&mut self) {
        LOG.with(|l| l.borrow_mut().push(format!("leave {}", self.0)));
    }
}

fn enter(name: &'static str) -> Leave {
    LOG.with(|l| l.borrow_mut().push(format!("enter {name}")));
    Leave(name)
}

#[test]
fn propagators_enter_in_order_and_leave_in_reverse_even_on_panic() {
    let config = config(1, 1, 0)
        .to_builder()
        .context_propagator(|| || enter("a"))
        .context_propagator(|| || enter("b"))
        .build()
        .unwrap();
    // One thread: every task sees the log its predecessors left on it.
    let bh = ThreadPoolBulkhead::with_clock("nested", config, ManualClock::new());
    let take_log = || LOG.with(|l| std::mem::take(&mut *l.borrow_mut()));
    bh.submit(|| ()).wait().unwrap();
    assert_eq!(
        bh.submit(take_log).wait().unwrap(),
        [
            "enter a", "enter b", "leave b", "leave a", "enter a", "enter b"
        ]
    );
    let panicked = bh.submit(|| -> u8 { panic!("in the task") });
    assert!(panic::catch_unwind(AssertUnwindSafe(|| panicked.wait())).is_err());
    assert_eq!(
        bh.submit(take_log).wait().unwrap(),
        [
            "leave b", "leave a", // after the previous read
            "enter a", "enter b", "leave b", "leave a", // around the panicking task
            "enter a", "enter b",
        ]
    );
}

#[test]
fn a_panicking_propagator_is_the_callers_panic_and_the_thread_survives() {
    let config = config(1, 1, 0)
        .to_builder()
        .context_propagator(|| {
            let fail = current_id().as_deref() == Some("fail");
            move || {
                assert!(!fail, "cannot enter the context");
            }
        })
        .build()
        .unwrap();
    let bh = ThreadPoolBulkhead::with_clock("bad-context", config, ManualClock::new());
    set_id(Some("fail"));
    let s = bh.submit(|| 1);
    assert!(panic::catch_unwind(AssertUnwindSafe(|| s.wait())).is_err());
    set_id(None);
    assert_eq!(
        bh.submit(thread_name).wait().unwrap(),
        "bulkhead-bad-context-1"
    );
}
