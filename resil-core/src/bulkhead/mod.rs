//! PLACEHOLDER: filled in by the issue "Retry, bulkheads, rate limiter, time limiter".
#![allow(missing_docs, unreachable_pub, dead_code)]

mod error;
pub use self::error::BulkheadFull;

use std::sync::Arc;

use crate::clock::SharedClock;
use crate::event::{EventKind, EventPublisher};
use crate::{Name, Tags};

#[derive(Debug, Clone)]
pub struct BulkheadConfig {
    event_consumer_buffer_size: u32,
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        BulkheadConfig {
            event_consumer_buffer_size: 100,
        }
    }
}

impl BulkheadConfig {
    pub fn event_consumer_buffer_size(&self) -> u32 {
        self.event_consumer_buffer_size
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum BulkheadEvent {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkheadEventType {}

impl EventKind for BulkheadEvent {
    type Type = BulkheadEventType;
    fn event_type(&self) -> BulkheadEventType {
        match *self {}
    }
}

#[derive(Clone)]
pub struct Bulkhead {
    inner: Arc<Inner>,
}

struct Inner {
    name: Name,
    config: BulkheadConfig,
    tags: Tags,
    events: EventPublisher<BulkheadEvent>,
}

impl std::fmt::Debug for Bulkhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bulkhead")
            .field("name", &self.inner.name)
            .finish()
    }
}

impl Bulkhead {
    pub(crate) fn with_parts(
        name: Name,
        config: BulkheadConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        Bulkhead {
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
    pub fn config(&self) -> &BulkheadConfig {
        &self.inner.config
    }
    pub fn tags(&self) -> &Tags {
        &self.inner.tags
    }
    pub fn event_publisher(&self) -> &EventPublisher<BulkheadEvent> {
        &self.inner.events
    }
}
