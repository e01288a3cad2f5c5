//! PLACEHOLDER: filled in by the issue "Retry, bulkheads, rate limiter, time limiter".
#![allow(missing_docs, unreachable_pub, dead_code)]

pub use crate::bulkhead::BulkheadFull;

use std::sync::Arc;

use crate::clock::SharedClock;
use crate::event::{EventKind, EventPublisher};
use crate::{Name, Tags};

#[derive(Debug, Clone)]
pub struct ThreadPoolBulkheadConfig {
    event_consumer_buffer_size: u32,
}

impl Default for ThreadPoolBulkheadConfig {
    fn default() -> Self {
        ThreadPoolBulkheadConfig {
            event_consumer_buffer_size: 100,
        }
    }
}

impl ThreadPoolBulkheadConfig {
    pub fn event_consumer_buffer_size(&self) -> u32 {
        self.event_consumer_buffer_size
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ThreadPoolBulkheadEvent {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadPoolBulkheadEventType {}

impl EventKind for ThreadPoolBulkheadEvent {
    type Type = ThreadPoolBulkheadEventType;
    fn event_type(&self) -> ThreadPoolBulkheadEventType {
        match *self {}
    }
}

#[derive(Clone)]
pub struct ThreadPoolBulkhead {
    inner: Arc<Inner>,
}

struct Inner {
    name: Name,
    config: ThreadPoolBulkheadConfig,
    tags: Tags,
    events: EventPublisher<ThreadPoolBulkheadEvent>,
}

impl std::fmt::Debug for ThreadPoolBulkhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPoolBulkhead")
            .field("name", &self.inner.name)
            .finish()
    }
}

impl ThreadPoolBulkhead {
    pub(crate) fn with_parts(
        name: Name,
        config: ThreadPoolBulkheadConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        ThreadPoolBulkhead {
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
    pub fn config(&self) -> &ThreadPoolBulkheadConfig {
        &self.inner.config
    }
    pub fn tags(&self) -> &Tags {
        &self.inner.tags
    }
    pub fn event_publisher(&self) -> &EventPublisher<ThreadPoolBulkheadEvent> {
        &self.inner.events
    }
}
