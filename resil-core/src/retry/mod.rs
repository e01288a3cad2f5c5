//! PLACEHOLDER: filled in by the issue "Retry, bulkheads, rate limiter, time limiter".
#![allow(missing_docs, unreachable_pub, dead_code)]

mod error;
pub use self::error::MaxRetriesExceeded;
pub use crate::interval::IntervalFunction;

use std::sync::Arc;

use crate::clock::SharedClock;
use crate::event::{EventKind, EventPublisher};
use crate::{Name, Tags};

#[derive(Debug, Clone)]
pub struct RetryConfig {
    event_consumer_buffer_size: u32,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            event_consumer_buffer_size: 100,
        }
    }
}

impl RetryConfig {
    pub fn event_consumer_buffer_size(&self) -> u32 {
        self.event_consumer_buffer_size
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum RetryEvent {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryEventType {}

impl EventKind for RetryEvent {
    type Type = RetryEventType;
    fn event_type(&self) -> RetryEventType {
        match *self {}
    }
}

#[derive(Clone)]
pub struct Retry {
    inner: Arc<Inner>,
}

struct Inner {
    name: Name,
    config: RetryConfig,
    tags: Tags,
    events: EventPublisher<RetryEvent>,
}

impl std::fmt::Debug for Retry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retry")
            .field("name", &self.inner.name)
            .finish()
    }
}

impl Retry {
    pub(crate) fn with_parts(
        name: Name,
        config: RetryConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        Retry {
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
    pub fn config(&self) -> &RetryConfig {
        &self.inner.config
    }
    pub fn tags(&self) -> &Tags {
        &self.inner.tags
    }
    pub fn event_publisher(&self) -> &EventPublisher<RetryEvent> {
        &self.inner.events
    }
}
