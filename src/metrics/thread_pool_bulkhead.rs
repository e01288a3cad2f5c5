//! The thread-pool bulkhead's meters: its refusals from its events, its
//! pool and queue from its snapshot.

use resil_core::event::Event;
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadEvent};

use super::*;

pub(crate) type Meters = Refusals;

pub(crate) fn meters(bulkhead: &ThreadPoolBulkhead) -> Meters {
    Refusals::new(
        bulkhead.name(),
        bulkhead.tags(),
        "thread_pool_bulkhead",
        "thread-pool-bulkhead",
    )
}

pub(crate) fn record(meters: &Meters, event: &Event<ThreadPoolBulkheadEvent>) {
    match event.kind() {
        ThreadPoolBulkheadEvent::CallRejected => meters.rejected(),
        ThreadPoolBulkheadEvent::ShadowRefusal => meters.shadow(),
        _ => {}
    }
}

pub(crate) fn refresh(bulkhead: &ThreadPoolBulkhead) {
    let m = bulkhead.metrics();
    let (name, tags) = (bulkhead.name(), bulkhead.tags());
    for (meter, value) in [
        (THREAD_POOL_BULKHEAD_QUEUE_DEPTH, m.queue_depth()),
        (THREAD_POOL_BULKHEAD_QUEUE_CAPACITY, m.queue_capacity()),
        (THREAD_POOL_BULKHEAD_THREAD_POOL_SIZE, m.thread_pool_size()),
        (
            THREAD_POOL_BULKHEAD_MAX_THREAD_POOL_SIZE,
            m.maximum_thread_pool_size(),
        ),
        (
            THREAD_POOL_BULKHEAD_CORE_THREAD_POOL_SIZE,
            m.core_thread_pool_size(),
        ),
        (
            THREAD_POOL_BULKHEAD_ACTIVE_THREAD_COUNT,
            m.active_thread_count(),
        ),
        (
            THREAD_POOL_BULKHEAD_AVAILABLE_THREAD_COUNT,
            m.available_thread_count(),
        ),
    ] {
        gauge(meter, name, None, tags, f64::from(value));
    }
    let age = bulkhead.oldest_queued_task_age().unwrap_or_default();
    gauge(
        THREAD_POOL_BULKHEAD_QUEUE_OLDEST_AGE,
        name,
        None,
        tags,
        age.as_secs_f64(),
    );
}
