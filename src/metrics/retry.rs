//! The retry's meters: its call counters and attempts from its snapshot,
//! its shadow refusals from its events.

use resil_core::event::Event;
use resil_core::retry::{Retry, RetryEvent};

use super::*;

pub(crate) type Meters = Cached<::metrics::Counter>;

pub(crate) fn meters(retry: &Retry) -> Meters {
    shadow_refusals(retry.name(), retry.tags(), "retry")
}

pub(crate) fn record(meters: &Meters, event: &Event<RetryEvent>) {
    if let RetryEvent::ShadowRefusal { .. } = event.kind() {
        meters.with(|c| c.increment(1));
    }
}

pub(crate) fn refresh(retry: &Retry) {
    for (kind, value) in retry.metrics().calls_by_kind() {
        absolute(
            RETRY_CALLS,
            retry.name(),
            Some(("kind", kind)),
            retry.tags(),
            value,
        );
    }
    absolute(
        RETRY_ATTEMPTS,
        retry.name(),
        None,
        retry.tags(),
        retry.metrics().number_of_total_calls(),
    );
}
