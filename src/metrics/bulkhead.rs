//! The bulkhead's meters: its refusals from its events, its permits from
//! its snapshot.

use resil_core::bulkhead::{Bulkhead, BulkheadEvent};
use resil_core::event::Event;

use super::*;

pub(crate) type Meters = Refusals;

pub(crate) fn meters(bulkhead: &Bulkhead) -> Meters {
    Refusals::new(bulkhead.name(), bulkhead.tags(), "bulkhead", "bulkhead")
}

pub(crate) fn record(meters: &Meters, event: &Event<BulkheadEvent>) {
    match event.kind() {
        BulkheadEvent::CallRejected => meters.rejected(),
        BulkheadEvent::ShadowRefusal => meters.shadow(),
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
    gauge(
        BULKHEAD_MAX_ALLOWED_CONCURRENT_CALLS,
        name,
        None,
        tags,
        f64::from(m.max_allowed_concurrent_calls()),
    );
}
