//! The time limiter's meters: its call counters from its snapshot, its
//! shadow refusals from its events.

use resil_core::event::Event;
use resil_core::time_limiter::{TimeLimiter, TimeLimiterEvent};

use super::*;

pub(crate) type Meters = Cached<::metrics::Counter>;

pub(crate) fn meters(limiter: &TimeLimiter) -> Meters {
    shadow_refusals(limiter.name(), limiter.tags(), "timelimiter")
}

pub(crate) fn record(meters: &Meters, event: &Event<TimeLimiterEvent>) {
    if let TimeLimiterEvent::ShadowRefusal = event.kind() {
        meters.with(|c| c.increment(1));
    }
}

pub(crate) fn refresh(limiter: &TimeLimiter) {
    let m = limiter.metrics();
    let (name, tags) = (limiter.name(), limiter.tags());
    absolute(
        TIME_LIMITER_CALLS,
        name,
        Some(("kind", "successful")),
        tags,
        m.number_of_successful_calls(),
    );
    absolute(
        TIME_LIMITER_CALLS,
        name,
        Some(("kind", "failed")),
        tags,
        m.number_of_failed_calls(),
    );
    absolute(
        TIME_LIMITER_CALLS,
        name,
        Some(("kind", "timeout")),
        tags,
        m.number_of_timeout_calls(),
    );
}
