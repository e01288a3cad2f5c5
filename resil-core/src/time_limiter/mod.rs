//! PLACEHOLDER: filled in by the issue "Retry, bulkheads, rate limiter, time limiter".
#![allow(missing_docs, unreachable_pub, dead_code)]

mod error;
pub use self::error::Timeout;

use std::sync::Arc;

use crate::clock::SharedClock;
use crate::event::{EventKind, EventPublisher};
use crate::{Name, Tags};

#[derive(Debug, Clone)]
pub struct TimeLimiterConfig {
    event_consumer_buffer_size: u32,
}

impl Default for TimeLimiterConfig {
    fn default() -> Self {
        TimeLimiterConfig {
            event_consumer_buffer_size: 100,
        }
    }
}

impl TimeLimiterConfig {
    pub fn event_consumer_buffer_size(&self) -> u32 {
        self.event_consumer_buffer_size
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum TimeLimiterEvent {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeLimiterEventType {}

impl EventKind for TimeLimiterEvent {
    type Type = TimeLimiterEventType;
    fn event_type(&self) -> TimeLimiterEventType {
        match *self {}
    }
}

#[derive(Clone)]
pub struct TimeLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    name: Name,
    config: TimeLimiterConfig,
    tags: Tags,
    events: EventPublisher<TimeLimiterEvent>,
}

impl std::fmt::Debug for TimeLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimeLimiter")
            .field("name", &self.inner.name)
            .finish()
    }
}

impl TimeLimiter {
    pub(crate) fn with_parts(
        name: Name,
        config: TimeLimiterConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        TimeLimiter {
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
    pub fn config(&self) -> &TimeLimiterConfig {
        &self.inner.config
    }
    pub fn tags(&self) -> &Tags {
        &self.inner.tags
    }
    pub fn event_publisher(&self) -> &EventPublisher<TimeLimiterEvent> {
        &self.inner.events
    }
}
