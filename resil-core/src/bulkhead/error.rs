//! The bulkhead's rejection.

use std::error::Error as StdError;
use std::fmt;

use crate::Name;

/// The bulkhead is full and did not permit the call (Resilience4j's
/// `BulkheadFullException`); also returned by the thread-pool bulkhead when
/// its threads and queue are taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkheadFull {
    name: Name,
    capacity: u32,
}

impl BulkheadFull {
    /// A rejection by the bulkhead `name`, whose capacity is `capacity` calls.
    pub fn new(name: Name, capacity: u32) -> Self {
        BulkheadFull { name, capacity }
    }

    /// The bulkhead's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many calls it admits at once: `max_concurrent_calls` for a semaphore
    /// bulkhead, `max_thread_pool_size + queue_capacity` for a thread-pool bulkhead.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }
}

impl fmt::Display for BulkheadFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bulkhead `{}` is full and does not permit further calls",
            self.name
        )
    }
}

impl StdError for BulkheadFull {}
