//! The semaphore bulkhead's meters: its refusals, and its gauges, the limit
//! among them, which an adaptive bulkhead moves between refreshes.

use resil_core::bulkhead::{Bulkhead, BulkheadEvent};
use resil_core::event::Event;

use super::*;

pub(crate) struct Meters {
    refusals: Refusals,
    name: String,
    tags: Tags,
}

pub(crate) fn meters(bulkhead: &Bulkhead) -> Meters {
    Meters {
        refusals: Refusals::new(bulkhead.name(), bulkhead.tags(), "bulkhead", "bulkhead"),
        name: bulkhead.name().to_owned(),
        tags: bulkhead.tags().clone(),
    }
}

pub(crate) fn record(meters: &Meters, event: &Event<BulkheadEvent>) {
    match event.kind() {
        BulkheadEvent::CallRejected => meters.refusals.rejected(),
        BulkheadEvent::ShadowRefusal => meters.refusals.shadow(),
        // The limit's gauges follow each change, not only each refresh.
        BulkheadEvent::LimitChanged { to, .. } => limit(&meters.name, &meters.tags, *to),
        _ => {}
    }
}

pub(crate) fn refresh(bulkhead: &Bulkhead) {
    let m = bulkhead.metrics();
    let (name, tags) = (bulkhead.name(), bulkhead.tags());
    gauge(
        BULKHEAD_AVAILABLE_CONCURRENT_CALLS,
        name,
        None,
        tags,
        f64::from(m.available_concurrent_calls()),
    );
    limit(name, tags, m.max_allowed_concurrent_calls());
}

/// `resilience4j_bulkhead_max_allowed_concurrent_calls` and
/// `resil_bulkhead_limit`: the live limit.
fn limit(name: &str, tags: &Tags, limit: u32) {
    gauge(
        BULKHEAD_MAX_ALLOWED_CONCURRENT_CALLS,
        name,
        None,
        tags,
        f64::from(limit),
    );
    gauge(BULKHEAD_LIMIT, name, None, tags, f64::from(limit));
}
