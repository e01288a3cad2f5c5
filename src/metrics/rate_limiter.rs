//! The rate limiter's meters: its refusals from its events, its permits
//! and waiting callers from its snapshot.

use resil_core::event::Event;
use resil_core::rate_limiter::{RateLimiter, RateLimiterEvent};

use super::*;

pub(crate) type Meters = Refusals;

pub(crate) fn meters(limiter: &RateLimiter) -> Meters {
    Refusals::new(
        limiter.name(),
        limiter.tags(),
        "rate_limiter",
        "ratelimiter",
    )
}

pub(crate) fn record(meters: &Meters, event: &Event<RateLimiterEvent>) {
    match event.kind() {
        RateLimiterEvent::FailedAcquire { .. } => meters.rejected(),
        RateLimiterEvent::ShadowRefusal { .. } => meters.shadow(),
        _ => {}
    }
}

pub(crate) fn refresh(limiter: &RateLimiter) {
    let m = limiter.metrics();
    let (name, tags) = (limiter.name(), limiter.tags());
    if let Some(c) = limiter.cluster_metrics() {
        gauge(
            CLUSTER_BACKEND_UP,
            name,
            Some(("kind", "ratelimiter")),
            tags,
            f64::from(u8::from(c.backend_up())),
        );
    }
    gauge(
        RATE_LIMITER_AVAILABLE_PERMISSIONS,
        name,
        None,
        tags,
        m.available_permissions() as f64,
    );
    gauge(
        RATE_LIMITER_WAITING_THREADS,
        name,
        None,
        tags,
        f64::from(m.number_of_waiting_threads()),
    );
}
