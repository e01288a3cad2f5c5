//! The events of a rate limiter (Resilience4j's `RateLimiterEvent` types).

use crate::event::EventKind;

/// What happened to a rate limiter.
///
/// `SuccessfulAcquire` and `FailedAcquire` are published once per request:
/// by [`reserve_permission`](super::RateLimiter::reserve_permission) and
/// [`try_acquire_permission`](super::RateLimiter::try_acquire_permission) at
/// once, by the waiting acquires after their wait (as Resilience4j does).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RateLimiterEvent {
    /// Permits were granted (now, or reserved for a caller that waits for them).
    SuccessfulAcquire {
        /// The permits asked for.
        permits: u32,
    },
    /// Permits were refused: not available within the timeout.
    FailedAcquire {
        /// The permits asked for.
        permits: u32,
    },
    /// [`drain_permissions`](super::RateLimiter::drain_permissions) emptied the current cycle.
    Drained {
        /// The permits the current cycle had before the drain, after its
        /// refill: what the drain took away. Negative when the cycle was in
        /// debt from reservations, which the drain forgave (Resilience4j
        /// 2.2.0 reports `min(stale count, 0)` here).
        permits: i64,
    },
    /// The backend key of a fleet-wide limiter went down (its scripts fail
    /// or are late) or came back
    /// (see [`crate::cluster`]).
    ClusterBackendChanged {
        /// Whether the backend is up now.
        up: bool,
    },
    /// In shadow mode: permits the limiter would have refused, granted.
    ShadowRefusal {
        /// The permits asked for.
        permits: u32,
    },
}

/// The kinds of [`RateLimiterEvent`], to subscribe to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RateLimiterEventType {
    /// [`RateLimiterEvent::SuccessfulAcquire`]
    SuccessfulAcquire,
    /// [`RateLimiterEvent::FailedAcquire`]
    FailedAcquire,
    /// [`RateLimiterEvent::Drained`]
    Drained,
    /// [`RateLimiterEvent::ClusterBackendChanged`]
    ClusterBackendChanged,
    /// [`RateLimiterEvent::ShadowRefusal`]
    ShadowRefusal,
}

impl RateLimiterEventType {
    /// Resilience4j's name: `SUCCESSFUL_ACQUIRE`, `FAILED_ACQUIRE`, `DRAINED`
    /// (and resil's `CLUSTER_BACKEND_CHANGED`).
    pub fn as_str(self) -> &'static str {
        match self {
            RateLimiterEventType::SuccessfulAcquire => "SUCCESSFUL_ACQUIRE",
            RateLimiterEventType::FailedAcquire => "FAILED_ACQUIRE",
            RateLimiterEventType::Drained => "DRAINED",
            RateLimiterEventType::ClusterBackendChanged => "CLUSTER_BACKEND_CHANGED",
            RateLimiterEventType::ShadowRefusal => "SHADOW_REFUSAL",
        }
    }
}

impl EventKind for RateLimiterEvent {
    type Type = RateLimiterEventType;

    fn event_type(&self) -> RateLimiterEventType {
        match self {
            RateLimiterEvent::SuccessfulAcquire { .. } => RateLimiterEventType::SuccessfulAcquire,
            RateLimiterEvent::FailedAcquire { .. } => RateLimiterEventType::FailedAcquire,
            RateLimiterEvent::Drained { .. } => RateLimiterEventType::Drained,
            RateLimiterEvent::ClusterBackendChanged { .. } => {
                RateLimiterEventType::ClusterBackendChanged
            }
            RateLimiterEvent::ShadowRefusal { .. } => RateLimiterEventType::ShadowRefusal,
        }
    }
}
