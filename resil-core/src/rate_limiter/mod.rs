//! PLACEHOLDER: filled in by the issue "Retry, bulkheads, rate limiter, time limiter".
#![allow(missing_docs, unreachable_pub, dead_code)]

mod error;
pub use self::error::RequestNotPermitted;

use std::sync::Arc;

use crate::clock::SharedClock;
use crate::event::{EventKind, EventPublisher};
use crate::{Name, Tags};

#[derive(Debug, Clone)]
pub struct RateLimiterConfig {
    event_consumer_buffer_size: u32,
}

impl Default for RateLimiterConfig {
    fn default() -> Self {
        RateLimiterConfig {
            event_consumer_buffer_size: 100,
        }
    }
}

impl RateLimiterConfig {
    pub fn event_consumer_buffer_size(&self) -> u32 {
        self.event_consumer_buffer_size
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum RateLimiterEvent {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateLimiterEventType {}

impl EventKind for RateLimiterEvent {
    type Type = RateLimiterEventType;
    fn event_type(&self) -> RateLimiterEventType {
        match *self {}
    }
}

#[derive(Clone)]
pub struct RateLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    name: Name,
    config: RateLimiterConfig,
    tags: Tags,
    events: EventPublisher<RateLimiterEvent>,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("name", &self.inner.name)
            .finish()
    }
}

impl RateLimiter {
    pub(crate) fn with_parts(
        name: Name,
        config: RateLimiterConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        RateLimiter {
            inner: Arc::new(Inner {
                events: EventPublisher::new(name.clone(), clock),
                name,
                config,
                tags,
            }),
        }
    }
    pub fn name(&self) -> &str {
        &self.inner.name
    }
    pub fn config(&self) -> &RateLimiterConfig {
        &self.inner.config
    }
    pub fn tags(&self) -> &Tags {
        &self.inner.tags
    }
    pub fn event_publisher(&self) -> &EventPublisher<RateLimiterEvent> {
        &self.inner.events
    }
}
